//! `provision` and `deprovision` against a fake ARM on loopback HTTPS that answers with the
//! REST API specification's examples (see `tests/fixtures/README.md`): the bodies sent are
//! asserted, and so are the errors users would see.

use expect_test::expect;
use pvfs_azure::credentials::StaticToken;
use pvfs_azure::plan::{Action, Plan};
use pvfs_azure::testing::{FakeArm, Fault};
use pvfs_azure::{Arm, ArmOptions, apply, deprovision};
use pvfs_config::azure::*;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The size the tests' VMs are, offered by [`Setup::new`].
const SIZE: &str = "Standard_D4s_v3";

fn vm(node: &str) -> AzureVm {
    AzureVm {
        node: node.into(),
        size: SIZE.into(),
        image: ImageRef {
            publisher: "Canonical".into(),
            offer: "ubuntu-24_04-lts".into(),
            sku: "server".into(),
            version: "latest".into(),
        },
        data_disks: DataDisks { count: 2, size_gib: 1024, sku: "Premium_LRS".into(), caching: Caching::None },
        accelerated_networking: false,
        zone: None,
        proximity_placement_group: None,
    }
}

fn azure(vms: Vec<AzureVm>) -> Azure {
    Azure {
        subscription: pvfs_azure::testing::SUBSCRIPTION.into(),
        resource_group: "rg".into(),
        location: "westus".into(),
        subnet: "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default".into(),
        admin_user: "pvfs".into(),
        ssh_public_key: format!("{}\n", pvfs_azure::testing::SSH_KEY),
        vms,
    }
}

struct Setup {
    fake: FakeArm,
    arm: Arm,
    dir: tempfile::TempDir,
}

impl Setup {
    async fn new() -> Setup {
        let fake = FakeArm::start().await;
        // The tests' own offer (not a claim about the real size): premium storage, 8 data
        // disks, accelerated networking, Ultra Disks in zones 1 and 3.
        fake.offer_size(
            SIZE,
            "standardDSv3Family",
            4,
            "westus",
            &[("PremiumIO", "True"), ("MaxDataDiskCount", "8"), ("AcceleratedNetworkingEnabled", "True")],
            &["1", "3"],
        );
        {
            let mut world = fake.world.lock().unwrap();
            world.usages = vec![("cores".into(), 2, 100), ("standardDSv3Family".into(), 2, 40)];
            world.in_progress = 2;
        }
        let options = ArmOptions {
            endpoint: fake.url.clone(),
            extra_root_pem: Some(fake.ca_pem.clone()),
            max_wait: Duration::from_secs(120),
            default_poll: Duration::from_millis(10),
        };
        let arm = Arm::new(Arc::new(StaticToken("token".into())), options).unwrap();
        Setup { fake, arm, dir: tempfile::tempdir().unwrap() }
    }

    fn state_path(&self) -> PathBuf {
        self.dir.path().join("c.state.toml")
    }

    async fn provision(&self, azure: &Azure) -> Result<Vec<apply::Outcome>, pvfs_azure::AzureError> {
        let plan = apply::plan(&self.arm, "c", azure).await?;
        apply::provision(&self.arm, azure, &plan, &self.state_path()).await
    }

    fn count(&self, method: &str) -> usize {
        self.fake.requests().iter().filter(|r| r.method == method).count()
    }
}

#[tokio::test]
async fn provision_puts_each_vm_once_follows_the_async_operation_and_records_the_addresses() {
    let s = Setup::new().await;
    let mut oss = vm("oss00");
    oss.zone = Some("1".into());
    oss.accelerated_networking = true;
    oss.proximity_placement_group = Some(
        "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/rg/providers/Microsoft.Compute/proximityPlacementGroups/ppg"
            .into(),
    );
    let azure = azure(vec![vm("mgs00"), oss]);

    let plan = apply::plan(&s.arm, "c", &azure).await.unwrap();
    expect![[r#"
        cluster c in westus (resource group rg): 2 to create, 0 to change, 0 left, 0 refused
          create mgs00        Standard_D4s_v3    zone -    2 × 1024 GiB Premium_LRS (caching None) at LUN 0..1; image Canonical:ubuntu-24_04-lts:server:latest; accelerated networking off
          create oss00        Standard_D4s_v3    zone 1    2 × 1024 GiB Premium_LRS (caching None) at LUN 0..1; image Canonical:ubuntu-24_04-lts:server:latest; accelerated networking on; placement group ppg
    "#]]
    .assert_eq(&plan.to_string());

    let outcomes = s.provision(&azure).await.unwrap();
    let summary: Vec<String> =
        outcomes.iter().map(|o| format!("{} {} {}", o.node, o.result, o.address)).collect();
    assert_eq!(summary, ["mgs00 created 10.1.0.4", "oss00 created 10.1.0.5"]);

    // One PUT per VM (never re-sent), and each operation polled until it ended.
    let requests = s.fake.requests();
    let puts: Vec<_> = requests.iter().filter(|r| r.method == "PUT").collect();
    assert_eq!(puts.len(), 2, "{requests:#?}");
    let polls = requests.iter().filter(|r| r.target.contains("/operations/")).count();
    assert_eq!(polls, 2 * 3, "two InProgress then Succeeded, per VM");
    let oss_put = puts.iter().find(|r| r.target.contains("/virtualMachines/oss00?")).unwrap();
    assert!(oss_put.target.ends_with("?api-version=2024-07-01"), "{}", oss_put.target);
    // (`timeCreated: null` is the crate's model: it serializes that read-only field even when
    // unset; ARM ignores read-only properties in a PUT.)
    expect![[r#"
        {
          "location": "westus",
          "properties": {
            "hardwareProfile": {
              "vmSize": "Standard_D4s_v3"
            },
            "networkProfile": {
              "networkApiVersion": "2020-11-01",
              "networkInterfaceConfigurations": [
                {
                  "name": "oss00-nic",
                  "properties": {
                    "deleteOption": "Delete",
                    "enableAcceleratedNetworking": true,
                    "ipConfigurations": [
                      {
                        "name": "ipconfig1",
                        "properties": {
                          "primary": true,
                          "subnet": {
                            "id": "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default"
                          }
                        }
                      }
                    ],
                    "primary": true
                  }
                }
              ]
            },
            "osProfile": {
              "adminUsername": "pvfs",
              "computerName": "oss00",
              "linuxConfiguration": {
                "disablePasswordAuthentication": true,
                "ssh": {
                  "publicKeys": [
                    {
                      "keyData": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFd4CT7eOzNl2EaLeu/nR7gzgtAahQDYyjNE12f63sLw pvfs@test",
                      "path": "/home/pvfs/.ssh/authorized_keys"
                    }
                  ]
                }
              }
            },
            "proximityPlacementGroup": {
              "id": "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/rg/providers/Microsoft.Compute/proximityPlacementGroups/ppg"
            },
            "storageProfile": {
              "dataDisks": [
                {
                  "caching": "None",
                  "createOption": "Empty",
                  "deleteOption": "Delete",
                  "diskSizeGB": 1024,
                  "lun": 0,
                  "managedDisk": {
                    "storageAccountType": "Premium_LRS"
                  },
                  "name": "oss00-data00"
                },
                {
                  "caching": "None",
                  "createOption": "Empty",
                  "deleteOption": "Delete",
                  "diskSizeGB": 1024,
                  "lun": 1,
                  "managedDisk": {
                    "storageAccountType": "Premium_LRS"
                  },
                  "name": "oss00-data01"
                }
              ],
              "imageReference": {
                "offer": "ubuntu-24_04-lts",
                "publisher": "Canonical",
                "sku": "server",
                "version": "latest"
              },
              "osDisk": {
                "caching": "ReadWrite",
                "createOption": "FromImage",
                "deleteOption": "Delete",
                "managedDisk": {
                  "storageAccountType": "StandardSSD_LRS"
                },
                "name": "oss00-os"
              }
            },
            "timeCreated": null
          },
          "tags": {
            "pvfs-cluster": "c",
            "pvfs-node": "oss00"
          },
          "zones": [
            "1"
          ]
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(oss_put.body.as_ref().unwrap()).unwrap());

    let state = State::read(&s.state_path()).unwrap();
    assert_eq!(state.node["oss00"].address.to_string(), "10.1.0.5");
    assert_eq!(
        state.node["oss00"].vm_id,
        "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/oss00"
    );

    // Again: everything is left as it is, nothing is sent but reads, the state is not rewritten.
    let written = std::fs::metadata(s.state_path()).unwrap().modified().unwrap();
    s.fake.world.lock().unwrap().requests.clear();
    let plan = apply::plan(&s.arm, "c", &azure).await.unwrap();
    assert!(plan.items.iter().all(|i| i.action == Action::Leave), "{plan}");
    let outcomes = s.provision(&azure).await.unwrap();
    assert!(outcomes.iter().all(|o| o.result == "ok"));
    assert_eq!(s.count("PUT") + s.count("DELETE"), 0);
    assert_eq!(std::fs::metadata(s.state_path()).unwrap().modified().unwrap(), written);
}

#[tokio::test]
async fn a_throttled_put_is_sent_again_after_retry_after() {
    let s = Setup::new().await;
    s.fake.world.lock().unwrap().faults.insert("mgs00".into(), [Fault::Throttle { retry_after: 1 }].into());
    s.provision(&azure(vec![vm("mgs00")])).await.unwrap();
    let puts: Vec<_> = s.fake.requests().into_iter().filter(|r| r.method == "PUT").collect();
    assert_eq!(puts.len(), 2, "the 429, then the PUT that went through");
    assert_eq!(puts[0].body, puts[1].body);
}

#[tokio::test]
async fn a_quota_shortfall_refuses_the_whole_plan_before_anything_is_created() {
    let s = Setup::new().await;
    s.fake.world.lock().unwrap().usages =
        vec![("cores".into(), 10, 100), ("standardDSv3Family".into(), 10, 20)];
    let err = s.provision(&azure(vec![vm("a"), vm("b"), vm("c")])).await.unwrap_err().to_string();
    assert_eq!(
        err,
        "the limits of westus refuse this plan (nothing was created):\n  needs 12 vCPUs of standardDSv3Family, 10 left (limit 20, in use 10)"
    );
    assert_eq!(s.count("PUT"), 0);

    let mut zoned = vm("a");
    zoned.size = "Standard_A0".into();
    zoned.zone = Some("3".into());
    let mut big = vm("b");
    big.size = "Standard_DS14_v2".into();
    let err = s.provision(&azure(vec![zoned, big])).await.unwrap_err().to_string();
    assert!(err.contains("b: size Standard_DS14_v2 is not offered in westus"), "{err}");
    assert!(err.contains("a: size Standard_A0 is not offered in zone 3 of westus (zones: 2, 1)"), "{err}");
    assert_eq!(s.count("PUT"), 0);
}

#[tokio::test]
async fn an_operation_that_ends_failed_is_reported_with_the_vm_and_the_arm_code() {
    let s = Setup::new().await;
    s.fake.world.lock().unwrap().faults.insert(
        "oss01".into(),
        [Fault::FailOperation {
            code: "AllocationFailed".into(),
            message: "Allocation failed. We do not have sufficient capacity for the requested VM size in this region.".into(),
        }]
        .into(),
    );
    let err = s.provision(&azure(vec![vm("oss00"), vm("oss01")])).await.unwrap_err().to_string();
    assert_eq!(
        err,
        "1 of 2 VMs failed (the others are done):\n  oss01: creating or updating the virtual machine ended Failed: AllocationFailed: Allocation failed. We do not have sufficient capacity for the requested VM size in this region."
    );
    assert!(!s.state_path().exists(), "no state is written while a VM failed");
}

#[tokio::test]
async fn a_conflict_is_reported_with_the_vm_and_the_arm_code() {
    let s = Setup::new().await;
    s.fake.world.lock().unwrap().faults.insert(
        "mgs00".into(),
        [Fault::Conflict {
            code: "OperationNotAllowed".into(),
            message: "Operation 'PUT' is not allowed on VM 'mgs00' since the VM is marked for deletion."
                .into(),
        }]
        .into(),
    );
    let err = s.provision(&azure(vec![vm("mgs00")])).await.unwrap_err().to_string();
    assert_eq!(
        err,
        "1 of 1 VMs failed (the others are done):\n  mgs00: creating or updating the virtual machine: ARM answered 409 OperationNotAllowed: Operation 'PUT' is not allowed on VM 'mgs00' since the VM is marked for deletion."
    );
    assert_eq!(s.count("PUT"), 1, "a 409 is not retried");
}

#[tokio::test]
async fn a_vm_of_the_same_name_that_is_not_this_clusters_is_refused() {
    let s = Setup::new().await;
    s.fake.add_vm("mgs00", json!({ "owner": "someone" }), SIZE, 0);
    let plan: Plan = apply::plan(&s.arm, "c", &azure(vec![vm("mgs00")])).await.unwrap();
    let err = apply::provision(&s.arm, &azure(vec![vm("mgs00")]), &plan, &s.state_path())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "mgs00: a VM named mgs00 already exists in resource group rg without the tag pvfs-cluster=c"
        ),
        "{err}"
    );
    assert_eq!(s.count("PUT"), 0);
}

#[tokio::test]
async fn deprovision_deletes_only_what_carries_the_clusters_tag() {
    let s = Setup::new().await;
    s.fake.add_vm("mgs00", json!({ "pvfs-cluster": "c", "pvfs-node": "mgs00" }), SIZE, 2);
    s.fake.add_vm("oss00", json!({ "pvfs-cluster": "c", "pvfs-node": "oss00" }), SIZE, 2);
    s.fake.add_vm("other", json!({ "pvfs-cluster": "d" }), "Standard_A1", 0);
    s.fake.add_vm("untagged", json!({}), "Standard_A1", 0);
    let mut state = State::default();
    for (node, ip) in [("mgs00", "10.1.0.4"), ("oss00", "10.1.0.5")] {
        state
            .node
            .insert(node.into(), NodeState { address: ip.parse().unwrap(), vm_id: format!("/x/{node}") });
    }
    state.write(&s.state_path()).unwrap();
    let azure = azure(vec![vm("mgs00")]);

    let listed = deprovision::list(&s.arm, "c", &azure).await.unwrap();
    let names: Vec<&str> = listed.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["mgs00", "oss00"], "tagged c, whether or not the file still has them");
    deprovision::delete(&s.arm, "c", &azure, &listed, &s.state_path()).await.unwrap();

    let deletes: Vec<String> = s
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .map(|r| r.target.split('?').next().unwrap().to_string())
        .collect();
    assert_eq!(deletes.iter().map(|t| t.rsplit('/').next().unwrap()).collect::<Vec<_>>(), ["mgs00", "oss00"]);
    let left: Vec<String> = s.fake.world.lock().unwrap().vms.keys().cloned().collect();
    assert_eq!(left, ["other", "untagged"]);
    assert_eq!(State::read(&s.state_path()).unwrap(), State::default());
}

/// The PUT body of `node`, as the fake received it (the last one).
fn put_body(s: &Setup, node: &str) -> serde_json::Value {
    let target = format!("/virtualMachines/{node}?");
    s.fake
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.method == "PUT" && r.target.contains(&target))
        .and_then(|r| r.body)
        .unwrap_or_else(|| panic!("no PUT of {node}"))
}

#[tokio::test]
async fn ultra_disks_go_on_a_zonal_vm_with_ultra_ssd_enabled() {
    let s = Setup::new().await;
    let mut oss = vm("oss00");
    oss.zone = Some("3".into());
    oss.data_disks =
        DataDisks { count: 2, size_gib: 1024, sku: "UltraSSD_LRS".into(), caching: Caching::None };
    s.provision(&azure(vec![oss.clone()])).await.unwrap();
    let body = put_body(&s, "oss00");
    assert_eq!(body["zones"], json!(["3"]));
    assert_eq!(body["properties"]["additionalCapabilities"], json!({ "ultraSSDEnabled": true }));

    // The zone must be one where the size offers Ultra Disks, and there must be one.
    let mut wrong = oss.clone();
    wrong.node = "oss01".into();
    wrong.zone = Some("2".into());
    let mut none = oss;
    none.node = "oss02".into();
    none.zone = None;
    let err = s.provision(&azure(vec![wrong, none])).await.unwrap_err().to_string();
    expect![[r#"
        the limits of westus refuse this plan (nothing was created):
          oss01: size Standard_D4s_v3 offers no Ultra Disks in zone 2 of westus (UltraSSDAvailable): use zone = "1" or "3"
          oss02: Ultra Disks attach only to a VM in an availability zone: give it a zone where size Standard_D4s_v3 offers them: 1, 3"#]]
    .assert_eq(&err);
}

#[tokio::test]
async fn a_size_that_cannot_do_what_the_file_asks_is_refused_before_anything_is_created() {
    let s = Setup::new().await;
    // Standard_A1 as the SKU list example gives it: no premium storage, two data disks, no
    // accelerated networking.
    let mut small = vm("oss00");
    small.size = "Standard_A1".into();
    small.data_disks.count = 3;
    small.accelerated_networking = true;
    s.fake.world.lock().unwrap().usages.push(("standardA0_A7Family".into(), 0, 20));
    let err = s.provision(&azure(vec![small])).await.unwrap_err().to_string();
    expect![[r#"
        the limits of westus refuse this plan (nothing was created):
          oss00: size Standard_A1 cannot attach Premium_LRS disks (its PremiumIO capability is False): choose a premium-storage size (most have an "s" in their name, such as Standard_DS14_v2), or a Standard SSD sku
          oss00: 3 data disks, and size Standard_A1 takes at most 2 (its MaxDataDiskCount): choose a larger size, or fewer, larger disks
          oss00: size Standard_A1 has no accelerated networking (its AcceleratedNetworkingEnabled capability is False): set accelerated_networking = false, or choose a size that has it"#]]
    .assert_eq(&err);
    assert_eq!(s.count("PUT"), 0);
}

/// The fake checks every body against the REST specification's schema: a body ARM would refuse
/// is refused with ARM's error shape, so a test that sends one fails.
#[tokio::test]
async fn a_body_the_specification_refuses_is_answered_as_arm_answers_it() {
    let s = Setup::new().await;
    // Not a storage account type (validate refuses it in a cluster file; here the VM is made
    // directly, as a bug in pvfs would make it).
    let mut bad = vm("oss00");
    bad.data_disks.sku = "Premium_LSR".into();
    let err = s.provision(&azure(vec![bad])).await.unwrap_err().to_string();
    expect![[r#"
        1 of 1 VMs failed (the others are done):
          oss00: creating or updating the virtual machine: ARM answered 400 InvalidParameter: The value 'Premium_LSR' of parameter 'properties.storageProfile.dataDisks[0].managedDisk.storageAccountType' is not allowed. Allowed values are: Standard_LRS, Premium_LRS, StandardSSD_LRS, UltraSSD_LRS, Premium_ZRS, StandardSSD_ZRS, PremiumV2_LRS."#]]
    .assert_eq(&err);
    assert!(s.fake.world.lock().unwrap().vms.is_empty(), "nothing was made");
}

#[tokio::test]
async fn a_vm_whose_provisioning_failed_is_sent_again_and_shown_in_the_plan() {
    let s = Setup::new().await;
    s.fake.add_vm("mgs00", json!({ "pvfs-cluster": "c", "pvfs-node": "mgs00" }), SIZE, 2);
    s.fake.world.lock().unwrap().vms.get_mut("mgs00").unwrap()["properties"]["provisioningState"] =
        json!("Failed");
    let azure = azure(vec![vm("mgs00")]);
    let plan = apply::plan(&s.arm, "c", &azure).await.unwrap();
    expect![[r#"
        cluster c in westus (resource group rg): 0 to create, 1 to change, 0 left, 0 refused
          change mgs00        Standard_D4s_v3    zone -    2 × 1024 GiB Premium_LRS (caching None) at LUN 0..1; image Canonical:ubuntu-24_04-lts:server:latest; accelerated networking off
                 its provisioning state is Failed (its last operation failed): its model is sent again, and ARM retries it (if it fails again, ARM's error says why; `pvfsctl deprovision` and provision again re-create it)
    "#]]
    .assert_eq(&plan.to_string());
    let outcomes = apply::provision(&s.arm, &azure, &plan, &s.state_path()).await.unwrap();
    assert_eq!(outcomes[0].result, "changed");
    let body = put_body(&s, "mgs00");
    // Its disks are attached as they are, not created again.
    assert_eq!(body["properties"]["storageProfile"]["dataDisks"][1]["createOption"], "Attach");
    let state = s.fake.world.lock().unwrap().vms["mgs00"]["properties"]["provisioningState"].clone();
    assert_eq!(state, "Succeeded");
    // Now it is left alone.
    let plan = apply::plan(&s.arm, "c", &azure).await.unwrap();
    assert_eq!(plan.items[0].action, Action::Leave, "{plan}");
}

/// A resize after the key file changed: ARM refuses a changed OS profile (409), so the PUT
/// sends the VM's own back, and the plan says the new key is not on the VM and how to get it
/// there.
#[tokio::test]
async fn a_resize_keeps_the_vms_os_profile_and_says_when_the_key_file_differs() {
    let s = Setup::new().await;
    s.fake.add_vm("oss00", json!({ "pvfs-cluster": "c", "pvfs-node": "oss00" }), SIZE, 2);
    s.fake.offer_size(
        "Standard_D8s_v3",
        "standardDSv3Family",
        8,
        "westus",
        &[("PremiumIO", "True"), ("MaxDataDiskCount", "16"), ("AcceleratedNetworkingEnabled", "True")],
        &[],
    );
    let mut bigger = vm("oss00");
    bigger.size = "Standard_D8s_v3".into();
    let mut azure = azure(vec![bigger]);
    let new_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINAgQPdA2fgB2gs++YENv63NBcKieyO71BfY/pmWwXdD new@test";
    azure.ssh_public_key = new_key.into();
    let plan = apply::plan(&s.arm, "c", &azure).await.unwrap();
    expect![[r#"
        cluster c in westus (resource group rg): 0 to create, 1 to change, 0 left, 0 refused
          change oss00        Standard_D8s_v3    zone -    2 × 1024 GiB Premium_LRS (caching None) at LUN 0..1; image Canonical:ubuntu-24_04-lts:server:latest; accelerated networking off
                 size Standard_D4s_v3 → Standard_D8s_v3 (ARM restarts the VM)
                 note: its SSH key is not the one in ssh_public_key_file, and ARM cannot change it on an existing VM (409 PropertyChangeNotAllowed on linuxConfiguration.ssh.publicKeys): a change keeps the VM's key. To log in with the new one, add it with the VM access extension (`az vm user update -g rg -n oss00 -u pvfs --ssh-key-value FILE`), or deprovision the VM and provision it again
    "#]]
    .assert_eq(&plan.to_string());
    apply::provision(&s.arm, &azure, &plan, &s.state_path()).await.unwrap();
    let body = put_body(&s, "oss00");
    assert_eq!(body["properties"]["hardwareProfile"]["vmSize"], "Standard_D8s_v3");
    assert_eq!(
        body["properties"]["osProfile"]["linuxConfiguration"]["ssh"]["publicKeys"][0]["keyData"],
        pvfs_azure::testing::SSH_KEY,
        "the VM's key, not the file's"
    );
    assert_eq!(body["properties"]["osProfile"]["adminUsername"], "pvfs");
}
