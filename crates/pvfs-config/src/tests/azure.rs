//! `[azure]`: its values, its VMs per node, and node addresses from the state file.

use crate::azure::{NodeState, State, state_path};
use crate::{ConfigError, Loader, Provisioning};
use expect_test::expect;
use std::path::{Path, PathBuf};

const SUB: &str = "0123abcd-0000-4000-8000-00000000000f";

/// A real `ssh-keygen -t ed25519` public key (its private half was thrown away).
const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINAgQPdA2fgB2gs++YENv63NBcKieyO71BfY/pmWwXdD pvfs-test";

/// A cluster file's directory and a home directory holding `~/.ssh/id_ed25519.pub`.
struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new() -> Dir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home/.ssh")).unwrap();
        std::fs::write(dir.path().join("home/.ssh/id_ed25519.pub"), format!("{KEY}\n")).unwrap();
        Dir { dir }
    }

    fn cluster(&self) -> PathBuf {
        self.dir.path().join("az.toml")
    }

    fn loader(&self) -> Loader {
        Loader::with_home(self.dir.path().join("home"))
    }

    fn write_state(&self, nodes: &[(&str, &str)]) {
        let mut state = State::default();
        for (node, ip) in nodes {
            let vm_id = format!(
                "/subscriptions/{SUB}/resourceGroups/pvfs/providers/Microsoft.Compute/virtualMachines/{node}"
            );
            state.node.insert((*node).into(), NodeState { address: ip.parse().unwrap(), vm_id });
        }
        state.write(&state_path(&self.cluster())).unwrap();
    }

    /// `load`'s nodes and VMs, or its errors with the temp dir shown as `DIR`.
    fn load(&self, text: &str) -> String {
        std::fs::write(self.cluster(), text).unwrap();
        match self.loader().load(&self.cluster()) {
            Ok(cluster) => {
                let mut out = String::new();
                for n in &cluster.nodes {
                    out += &format!("{} {}\n", n.name, n.address);
                }
                out + &vms(cluster.azure.as_ref().unwrap())
            }
            Err(err) => self.errors(err),
        }
    }

    fn provisioning(&self, text: &str) -> Result<Provisioning, String> {
        std::fs::write(self.cluster(), text).unwrap();
        self.loader().load_provisioning(&self.cluster()).map_err(|e| self.errors(e))
    }

    fn errors(&self, err: ConfigError) -> String {
        let shown = format!("{err}\n");
        shown.replace(&self.dir.path().display().to_string(), "DIR")
    }
}

fn vms(azure: &crate::azure::Azure) -> String {
    let mut out = format!(
        "azure {} {} {} admin={} key={}\n",
        azure.subscription,
        azure.resource_group,
        azure.location,
        azure.admin_user,
        azure.ssh_public_key.split_whitespace().next().unwrap_or("-")
    );
    for vm in &azure.vms {
        let d = &vm.data_disks;
        out += &format!(
            "  {}: {} {} disks={}x{}GiB {} {} accel={} zone={} ppg={}\n",
            vm.node,
            vm.size,
            vm.image,
            d.count,
            d.size_gib,
            d.sku,
            d.caching.as_str(),
            vm.accelerated_networking,
            vm.zone.as_deref().unwrap_or("-"),
            vm.proximity_placement_group.as_deref().map_or("-", |p| p.rsplit('/').next().unwrap()),
        );
    }
    out
}

/// A lustre cluster with `[azure]`: `extra` goes at the end of [azure] (role tables), `nodes`
/// replaces the default nodes when given.
fn file(azure_extra: &str, nodes: Option<&str>) -> String {
    let default_nodes = r#"
[[node]]
name = "mgs"
roles = ["mgs", "mds"]
disks = ["/dev/disk/azure/scsi1/lun0"]

[[node]]
name = "oss00"
roles = ["oss"]
id = 0
disks = ["/dev/disk/azure/scsi1/lun0", "/dev/disk/azure/scsi1/lun1"]

[[node]]
name = "c0"
address = "10.0.0.9"
roles = ["client"]
"#;
    format!(
        r#"[cluster]
name = "az"
kind = "lustre"

[lustre]
fsname = "fs"
mount = "/mnt/lustre"

[azure]
subscription = "{SUB}"
resource_group = "pvfs"
location = "eastus"
subnet = "/subscriptions/{SUB}/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/s"
admin_user = "azureuser"
ssh_public_key_file = "~/.ssh/id_ed25519.pub"

[azure.role.mgs]
data_disks = {{ count = 1 }}

[azure.role.oss]
data_disks = {{ count = 2, size_gib = 2048, sku = "Premium_LRS", caching = "ReadOnly" }}
accelerated_networking = true
zone = "1"
proximity_placement_group = "/subscriptions/{SUB}/resourceGroups/pvfs/providers/Microsoft.Compute/proximityPlacementGroups/near"

[azure.role.client]
vm_size = "Standard_DS3_v2"
image = "almalinux:almalinux-x86_64:8-gen2:latest"
{azure_extra}
{}"#,
        nodes.unwrap_or(default_nodes)
    )
}

#[test]
fn addresses_the_file_does_not_give_come_from_the_state_file_and_each_node_gets_its_roles_vm() {
    let dir = Dir::new();
    dir.write_state(&[("mgs", "10.0.0.4"), ("oss00", "10.0.0.5"), ("c0", "10.0.0.99")]);
    // c0's address in the file wins over the state's.
    expect![[r#"
        mgs 10.0.0.4:7070
        oss00 10.0.0.5:7070
        c0 10.0.0.9:7070
        azure 0123abcd-0000-4000-8000-00000000000f pvfs eastus admin=azureuser key=ssh-ed25519
          mgs: Standard_DS14_v2 OpenLogic:CentOS:7.3:latest disks=1x1024GiB Premium_LRS None accel=false zone=- ppg=-
          oss00: Standard_DS14_v2 OpenLogic:CentOS:7.3:latest disks=2x2048GiB Premium_LRS ReadOnly accel=true zone=1 ppg=near
          c0: Standard_DS3_v2 almalinux:almalinux-x86_64:8-gen2:latest disks=0x1024GiB Premium_LRS None accel=false zone=- ppg=-
    "#]]
    .assert_eq(&dir.load(&file("", None)));
}

#[test]
fn load_names_each_node_without_an_address_and_what_to_run() {
    let dir = Dir::new();
    expect![[r#"
        DIR/az.toml:32:8: node mgs has no address: the cluster file gives none and DIR/az.state.toml has none; run `pvfsctl provision DIR/az.toml` first
        DIR/az.toml:37:8: node oss00 has no address: the cluster file gives none and DIR/az.state.toml has none; run `pvfsctl provision DIR/az.toml` first
    "#]]
    .assert_eq(&dir.load(&file("", None)));
    // A state that has some of them: only the others are named.
    dir.write_state(&[("mgs", "10.0.0.4")]);
    expect![[r#"
        DIR/az.toml:37:8: node oss00 has no address: the cluster file gives none and DIR/az.state.toml has none; run `pvfsctl provision DIR/az.toml` first
    "#]]
    .assert_eq(&dir.load(&file("", None)));
    // A state file that is not one is named, once.
    std::fs::write(state_path(&dir.cluster()), "[node.mgs]\naddress = \"nope\"\n").unwrap();
    let shown = dir.load(&file("", None));
    assert!(shown.starts_with("DIR/az.toml:32:8: node \"mgs\" has no address in the cluster file: DIR/az.state.toml is not a pvfs state file"), "{shown}");
    assert_eq!(shown.matches("DIR/az.toml:").count(), 1, "reported once: {shown}");
}

#[test]
fn provisioning_works_before_any_state_and_says_which_nodes_have_no_address_yet() {
    let dir = Dir::new();
    let p = dir.provisioning(&file("", None)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.unaddressed, ["mgs", "oss00"]);
    assert_eq!(p.address("mgs"), None);
    assert_eq!(p.address("c0").map(|a| a.to_string()).as_deref(), Some("10.0.0.9:7070"));
    assert_eq!(p.state, dir.dir.path().join("az.state.toml"));
    assert_eq!(p.source, dir.cluster());
    assert_eq!(p.cluster.azure.as_ref(), Some(&p.azure));
    assert_eq!(p.azure.vms.iter().map(|v| v.node.as_str()).collect::<Vec<_>>(), ["mgs", "oss00", "c0"]);
    assert_eq!(p.azure.ssh_public_key, KEY);
    // With a state, what it has is used.
    dir.write_state(&[("oss00", "10.0.0.5")]);
    let p = dir.provisioning(&file("", None)).unwrap();
    assert_eq!(p.unaddressed, ["mgs"]);
    assert_eq!(p.address("oss00").map(|a| a.to_string()).as_deref(), Some("10.0.0.5:7070"));
    // A file without [azure] has nothing to provision.
    let local = "[cluster]\nname = \"l\"\nkind = \"local\"\n[local]\nmount = \"/tmp/l\"\n[[node]]\nname = \"n\"\naddress = \"127.0.0.1\"\nroles = [\"server\", \"client\"]\n";
    let err = dir.provisioning(local).unwrap_err();
    assert!(err.contains("az.toml:1:1: the cluster file has no [azure] section"), "{err}");
}

#[test]
fn without_azure_an_address_is_required_as_before() {
    let dir = Dir::new();
    let text = "[cluster]\nname = \"l\"\nkind = \"local\"\n[local]\nmount = \"/tmp/l\"\n[[node]]\nname = \"n\"\nroles = [\"server\", \"client\"]\n";
    expect![[r#"
        DIR/az.toml:6:1: missing field `address`
    "#]]
    .assert_eq(&dir.load(text));
}

#[test]
fn every_bad_azure_value_is_named_at_its_position_in_one_run() {
    let dir = Dir::new();
    dir.write_state(&[("mgs", "10.0.0.4"), ("oss00", "10.0.0.5")]);
    let text = file("", None)
        .replace(SUB, "not-a-guid")
        .replace("\"pvfs\"", "\"pvfs.\"")
        .replace("\"eastus\"", "\"East US\"")
        .replace("virtualNetworks/v/subnets/s", "virtualNetworks/v")
        .replace("\"azureuser\"", "\"root\"")
        .replace("count = 1 }", "count = 65 }")
        .replace("size_gib = 2048", "size_gib = 3")
        .replace("sku = \"Premium_LRS\"", "sku = \"Premium_LSR\"")
        .replace("zone = \"1\"", "zone = \"4\"")
        .replace("proximityPlacementGroups/near", "availabilitySets/near")
        .replace("Standard_DS3_v2", "DS3v2")
        .replace("8-gen2:latest", "8-gen2");
    expect![[r#"
        DIR/az.toml:10:16: subscription "not-a-guid" is not a GUID (8-4-4-4-12 hexadecimal digits): `az account show --query id -o tsv` prints it
        DIR/az.toml:11:18: resource_group "pvfs." is not a resource group name (1 to 90 letters, digits, '_', '-', '.', '(' or ')', not ending in '.')
        DIR/az.toml:12:12: location "East US" is not a region as ARM spells it (lowercase letters and digits, e.g. "eastus"): `az account list-locations --query [].name` lists them
        DIR/az.toml:13:10: subnet "/subscriptions/not-a-guid/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v" is not an ARM resource ID of that type: give its full ARM ID, /subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/VNET/subnets/SUBNET (`az network vnet subnet show -g RG --vnet-name VNET -n SUBNET --query id -o tsv`)
        DIR/az.toml:14:14: admin_user "root" is a name Azure reserves: choose another, e.g. "azureuser"
        DIR/az.toml:18:24: [azure.role.mgs]: 65 data disks: a VM takes at most 64
        DIR/az.toml:21:38: [azure.role.oss]: a managed disk is 4 to 32767 GiB, not 3
        DIR/az.toml:21:47: [azure.role.oss]: unknown disk SKU "Premium_LSR": use one of Standard_LRS, StandardSSD_LRS, StandardSSD_ZRS, Premium_LRS, Premium_ZRS, PremiumV2_LRS, UltraSSD_LRS; did you mean "Premium_LRS"?
        DIR/az.toml:23:8: [azure.role.oss]: zone "4" is not an availability zone: use "1", "2" or "3"
        DIR/az.toml:24:29: proximity_placement_group "/subscriptions/not-a-guid/resourceGroups/pvfs/providers/Microsoft.Compute/availabilitySets/near" has "availabilitySets" where "proximityPlacementGroups" belongs: give its full ARM ID, /subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Compute/proximityPlacementGroups/NAME
        DIR/az.toml:27:11: [azure.role.client]: VM size "DS3v2" is not written as ARM names sizes, e.g. "Standard_DS14_v2" (`az vm list-sizes -l LOCATION -o table`)
        DIR/az.toml:28:9: [azure.role.client]: image "almalinux:almalinux-x86_64:8-gen2" is not an image URN publisher:offer:sku:version (letters, digits, '-', '_', '.'; the version "latest" or dotted numbers), e.g. "OpenLogic:CentOS:7.3:latest" (`az vm image list --all -p PUBLISHER -o table`)
    "#]]
    .assert_eq(&dir.load(&text));
}

#[test]
fn roles_keys_and_disks_are_checked_against_the_cluster() {
    let dir = Dir::new();
    dir.write_state(&[("mgs", "10.0.0.4"), ("oss00", "10.0.0.5"), ("oss01", "10.0.0.6")]);
    let nodes = r#"
[[node]]
name = "mgs"
roles = ["mgs", "mds"]
disks = ["/dev/disk/azure/scsi1/lun1"]

[[node]]
name = "oss00"
roles = ["oss", "client"]
id = 0

[[node]]
name = "oss01"
roles = ["oss"]
id = 1
disks = ["/dev/disk/azure/scsi1/lun0", "/dev/disk/azure/scsi1/lun2"]
"#;
    let extra = r#"
[azure.role.server]
vm_size = "Standard_D2s_v3"

[azure.role.osss]
vm_sise = "Standard_D2s_v3"
data_disks = { count = 1, cachng = "None", size_gib = 5000, caching = "ReadWrite" }
"#;
    expect![[r#"
        DIR/az.toml:31:13: [azure.role.server]: role "server" is not valid for kind lustre: use mgs, mds, oss, client
        DIR/az.toml:34:13: [azure.role.osss]: unknown role "osss": roles are mgs, mds, oss, client; did you mean "oss"?
        DIR/az.toml:35:1: unknown key `vm_sise` in [azure.role.osss]; did you mean `vm_size`?
        DIR/az.toml:36:27: unknown key `cachng` in [azure.role.osss] data_disks; did you mean `caching`?
        DIR/az.toml:36:71: [azure.role.osss]: Azure has no host caching for disks of 4 TiB and larger: use caching = "None"
        DIR/az.toml:42:10: node "mgs" lists LUN 1 but its VM has 1 data disk (LUN 0): raise data_disks' count or drop the disk
        DIR/az.toml:45:8: node "oss00" has role oss but lists no disks; its target needs at least one (`disks = ["/dev/…"]`)
        DIR/az.toml:46:9: node "oss00" is described by [azure.role.client] and [azure.role.oss]: a node is one VM, so give the settings in one of them
        DIR/az.toml:53:40: node "oss01" lists LUN 2 but its VM has 2 data disks (LUNs 0 to 1): raise data_disks' count or drop the disk
    "#]]
    .assert_eq(&dir.load(&file(extra, Some(nodes)).replace("[azure.role.client]\n", "[azure.role.client]\nzone = \"2\"\n")));
    // A node whose role has no section.
    let text = file("", None).replace("[azure.role.mgs]\ndata_disks = { count = 1 }\n", "");
    let shown = dir.load(&text);
    assert!(
        shown.contains("node \"mgs\" has role mgs and mds but [azure] has no [azure.role.mgs]: add one"),
        "{shown}"
    );
}

#[test]
fn a_node_may_override_its_roles_settings() {
    let dir = Dir::new();
    dir.write_state(&[("mgs", "10.0.0.4"), ("oss00", "10.0.0.5")]);
    let text = file("", None).replace(
        "name = \"oss00\"\n",
        "name = \"oss00\"\nazure = { vm_size = \"Standard_L16s_v3\", zone = \"3\", data_disks = { count = 2, size_gib = 512 } }\n",
    );
    let shown = dir.load(&text);
    assert!(
        shown.contains(
            "oss00: Standard_L16s_v3 OpenLogic:CentOS:7.3:latest disks=2x512GiB Premium_LRS None accel=true zone=3 ppg=near"
        ),
        "{shown}"
    );
}

#[test]
fn the_public_key_file_must_be_readable_and_a_public_key() {
    let dir = Dir::new();
    dir.write_state(&[("mgs", "10.0.0.4"), ("oss00", "10.0.0.5")]);
    let text = file("", None).replace("~/.ssh/id_ed25519.pub", "keys/none.pub");
    let shown = dir.load(&text);
    assert!(
        shown.starts_with(
            "DIR/az.toml:15:23: cannot read ssh_public_key_file DIR/keys/none.pub: No such file or directory (os error 2); make a key with `ssh-keygen -t ed25519`"
        ),
        "{shown}"
    );
    std::fs::create_dir(dir.dir.path().join("keys")).unwrap();
    std::fs::write(dir.dir.path().join("keys/id"), "-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
    let shown = dir.load(&text.replace("keys/none.pub", "keys/id"));
    assert!(shown.starts_with("DIR/az.toml:15:23: DIR/keys/id: this is a private key"), "{shown}");
    // A device that never ends is not read at all; nor is a file too large for a key.
    let shown = dir.load(&text.replace("keys/none.pub", "/dev/zero"));
    assert!(
        shown.starts_with(
            "DIR/az.toml:15:23: /dev/zero is a character device, not a regular file: pvfs reads an SSH public key file only from a regular file"
        ),
        "{shown}"
    );
    std::fs::File::create(dir.dir.path().join("keys/big.pub")).unwrap().set_len(1 << 20).unwrap();
    let shown = dir.load(&text.replace("keys/none.pub", "keys/big.pub"));
    assert!(
        shown.starts_with(
            "DIR/az.toml:15:23: DIR/keys/big.pub is 1 MiB, more than the 16 KiB that an SSH public key file may be"
        ),
        "{shown}"
    );
    let shown = dir.load(&text.replace("keys/none.pub", "~azureuser/.ssh/id.pub"));
    assert!(shown.contains("only ~/ (your home) is expanded"), "{shown}");
}

/// The shipped example is the seed's layout, and loads before any state exists (as
/// `pvfsctl validate` reads it) with a home that has the key it names.
#[test]
fn the_azure_example_is_the_seeds_layout() {
    let dir = Dir::new();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/lustre-azure.toml");
    let p = dir.loader().load_provisioning(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.unaddressed.len(), p.cluster.nodes.len(), "the example gives no addresses");
    expect![[r#"
        azure 00000000-0000-0000-0000-000000000000 pvfs-lustre eastus admin=azureuser key=ssh-ed25519
          mgsmds00: Standard_DS14_v2 OpenLogic:CentOS:7.3:latest disks=1x1024GiB Premium_LRS None accel=true zone=- ppg=-
          oss00: Standard_DS14_v2 OpenLogic:CentOS:7.3:latest disks=10x1024GiB Premium_LRS None accel=true zone=- ppg=-
          oss01: Standard_DS14_v2 OpenLogic:CentOS:7.3:latest disks=10x1024GiB Premium_LRS None accel=true zone=- ppg=-
          oss02: Standard_DS14_v2 OpenLogic:CentOS:7.3:latest disks=10x1024GiB Premium_LRS None accel=true zone=- ppg=-
          oss03: Standard_DS14_v2 OpenLogic:CentOS:7.3:latest disks=10x1024GiB Premium_LRS None accel=true zone=- ppg=-
          client00: Standard_DS14_v2 OpenLogic:CentOS:7.3:latest disks=0x1024GiB Premium_LRS None accel=true zone=- ppg=-
          client01: Standard_DS14_v2 OpenLogic:CentOS:7.3:latest disks=0x1024GiB Premium_LRS None accel=true zone=- ppg=-
    "#]]
    .assert_eq(&vms(&p.azure));
    // `load` wants the addresses `provision` writes.
    let err = dir.loader().load(&path).unwrap_err().to_string();
    assert!(err.contains("node mgsmds00 has no address") && err.contains("run `pvfsctl provision"), "{err}");
}

/// A type error in [azure] is reported alone: the nodes it leaves without a VM or an address
/// are not reported again. And `azure = {…}` on a node needs an [azure] section.
#[test]
fn a_broken_azure_section_hides_nothing_else_and_node_settings_need_one() {
    let dir = Dir::new();
    expect![[r#"
        DIR/az.toml:23:8: invalid type: integer `1`, expected a string
    "#]]
    .assert_eq(&dir.load(&file("", None).replace("zone = \"1\"", "zone = 1")));
    let local = "[cluster]\nname = \"l\"\nkind = \"local\"\n[local]\nmount = \"/tmp/l\"\n[[node]]\nname = \"n\"\naddress = \"127.0.0.1\"\nroles = [\"server\", \"client\"]\nazure = { zone = \"1\" }\n";
    expect![[r#"
        DIR/az.toml:7:8: node "n" has `azure` settings but the file has no [azure] section: add one, or drop them
    "#]]
    .assert_eq(&dir.load(local));
}

/// Ultra Disks and Premium SSD v2 attach only to a zonal VM: without a zone, validate asks for
/// one where the disks are given (ARM would refuse the VM after the plan was shown).
#[test]
fn zonal_disk_skus_need_a_zone() {
    let dir = Dir::new();
    dir.write_state(&[("mgs", "10.0.0.4"), ("oss00", "10.0.0.5")]);
    let ultra = file("", None)
        .replace("sku = \"Premium_LRS\", caching = \"ReadOnly\"", "sku = \"UltraSSD_LRS\"")
        .replace("zone = \"1\"\n", "");
    expect![[r#"
        DIR/az.toml:21:50: node "oss00": UltraSSD_LRS disks attach only to a VM in an availability zone, and its VM has none: add zone = "1" (or "2", "3": one where its size offers them) to [azure.role.oss]
    "#]]
    .assert_eq(&dir.load(&ultra));
    // The zone may come from the node, the disks from its role.
    let zoned = ultra.replace("name = \"oss00\"\n", "name = \"oss00\"\nazure = { zone = \"2\" }\n");
    assert!(dir.load(&zoned).contains("oss00: Standard_DS14_v2 OpenLogic:CentOS:7.3:latest disks=2x2048GiB UltraSSD_LRS None accel=true zone=2"));
    // A node's own Premium SSD v2 disks, on a role without a zone: named at the node's table.
    let v2 = file("", None).replace(
        "name = \"mgs\"\n",
        "name = \"mgs\"\nazure = { data_disks = { count = 1, sku = \"PremiumV2_LRS\" } }\n",
    );
    expect![[r#"
        DIR/az.toml:33:43: node "mgs": PremiumV2_LRS disks attach only to a VM in an availability zone, and its VM has none: add zone = "1" (or "2", "3": one where its size offers them) to node "mgs"'s azure
    "#]]
    .assert_eq(&dir.load(&v2));
}
