//! `pvfsctl provision` / `deprovision` / `up --provision`: with the `azure` feature, against a
//! fake ARM on loopback HTTPS (pvfs-azure's `testing`); without it, the way to get it.

use crate::util::{TestDir, text};

#[cfg(not(feature = "azure"))]
#[test]
fn without_the_azure_feature_the_commands_exist_and_say_how_to_build_it() {
    let dir = TestDir::new();
    let file = dir.write("c.toml", "[cluster]\nname = \"c\"\n");
    let file = file.to_str().unwrap();
    for args in [
        vec!["provision", file, "--plan"],
        vec!["deprovision", file, "--yes"],
        vec!["up", file, "--provision"],
    ] {
        let out = dir.ctl(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains("built without Azure support"), "{args:?}: {stderr}");
        assert!(stderr.contains("cargo build --release -p pvfs --features azure"), "{stderr}");
    }
}

#[cfg(feature = "azure")]
#[test]
fn a_cluster_file_without_an_azure_section_is_refused_before_azure_is_asked() {
    let dir = TestDir::new();
    let file = dir.write(
        "plain.toml",
        "[cluster]\nname = \"c\"\nkind = \"glusterfs\"\n[glusterfs]\nvolume = \"gv0\"\nmount = \"/mnt/gv0\"\n\
         [[node]]\nname = \"a\"\naddress = \"10.0.0.1\"\nroles = [\"server\", \"client\"]\ndisks = [\"/dev/sdb\"]\n",
    );
    let out = dir
        .command(&crate::util::pvfsctl())
        .args(["provision", file.to_str().unwrap(), "--plan"])
        // Nothing may be asked of Azure: an endpoint that does not exist.
        .env("PVFS_AZURE_ENDPOINT", "https://127.0.0.1:9")
        .env("PVFS_AZURE_TOKEN", "t")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("plain.toml:1:1: the cluster file has no [azure] section"), "{stderr}");
}

/// With `--features azure-fake` (the fake ARM in the test).
#[cfg(feature = "azure-fake")]
#[test]
fn provision_plan_prints_each_vm_and_its_disks_and_checks_the_quota() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fake = runtime.block_on(pvfs_azure::testing::FakeArm::start());
    fake.world.lock().unwrap().usages = vec![("cores".into(), 0, 100), ("standardA0_A7Family".into(), 0, 3)];
    let dir = TestDir::new();
    let ca = dir.write("arm-ca.pem", std::str::from_utf8(&fake.ca_pem).unwrap());
    dir.write(
        "id.pub",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFd4CT7eOzNl2EaLeu/nR7gzgtAahQDYyjNE12f63sLw pvfs@test\n",
    );
    let file = dir.write(
        "c.toml",
        r#"[cluster]
name = "c"
kind = "glusterfs"

[glusterfs]
volume = "gv0"
mount = "/mnt/gv0"

[azure]
subscription = "00000000-0000-0000-0000-0000000000aa"
resource_group = "rg"
location = "westus"
subnet = "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default"
admin_user = "pvfs"
ssh_public_key_file = "id.pub"

[azure.role.server]
vm_size = "Standard_A1"
data_disks = { count = 2, size_gib = 1024, sku = "StandardSSD_LRS", caching = "None" }

[azure.role.client]
vm_size = "Standard_A1"

[[node]]
name = "srv00"
roles = ["server"]
disks = ["/dev/disk/azure/scsi1/lun0"]

[[node]]
name = "srv01"
roles = ["server"]
disks = ["/dev/disk/azure/scsi1/lun0"]

[[node]]
name = "cli00"
roles = ["client"]
"#,
    );
    let run = |extra: &[&str]| {
        let mut args = vec!["provision", file.to_str().unwrap(), "--plan"];
        args.extend_from_slice(extra);
        dir.command(&crate::util::pvfsctl())
            .args(&args)
            .env("PVFS_AZURE_ENDPOINT", fake.url.as_str())
            .env("PVFS_AZURE_CA", &ca)
            .env("PVFS_AZURE_TOKEN", "t")
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    for want in [
        "cluster c in westus (resource group rg): 3 to create, 0 to change, 0 left, 0 refused",
        // Standard_A1 as the SKU list example gives it: two data disks, no premium storage.
        "create srv00        Standard_A1        zone -    2 × 1024 GiB StandardSSD_LRS (caching None) at LUN 0..1",
        "create cli00        Standard_A1        zone -    no data disks",
        "quotas and sizes of westus: enough",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in:\n{stdout}");
    }
    // Only reads: the VM list, the SKUs, the usage.
    assert!(fake.requests().iter().all(|r| r.method == "GET"));

    fake.world.lock().unwrap().usages = vec![("cores".into(), 0, 100), ("standardA0_A7Family".into(), 1, 3)];
    let out = run(&["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["plan"]["items"][0]["action"], "create");
    assert_eq!(v["limits"][0], "needs 3 vCPUs of standardA0_A7Family, 2 left (limit 3, in use 1)");
}

/// The shipped example, the seed's layout (1 MGS/MDS, 4 OSS with 10 × P30, 2 clients, all
/// DS14_v2 in eastus), planned against the fake ARM: only the subscription and resource group
/// are the fake's, and DS14_v2 is offered there as ARM lists a size.
#[cfg(feature = "azure-fake")]
#[test]
fn provision_plan_of_the_lustre_example_prints_the_seeds_vms_and_disks() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fake = runtime.block_on(pvfs_azure::testing::FakeArm::start());
    // DS14_v2 as Azure documents it: premium storage, 64 data disks, accelerated networking.
    fake.offer_size(
        "Standard_DS14_v2",
        "standardDSv2Family",
        16,
        "eastus",
        &[("PremiumIO", "True"), ("MaxDataDiskCount", "64"), ("AcceleratedNetworkingEnabled", "True")],
        &[],
    );
    fake.world.lock().unwrap().usages = vec![("cores".into(), 0, 350), ("standardDSv2Family".into(), 0, 350)];
    let dir = TestDir::new();
    let ca = dir.write("arm-ca.pem", std::str::from_utf8(&fake.ca_pem).unwrap());
    std::fs::create_dir_all(dir.path().join("home/.ssh")).unwrap();
    dir.write(
        "home/.ssh/id_ed25519.pub",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFd4CT7eOzNl2EaLeu/nR7gzgtAahQDYyjNE12f63sLw pvfs@test\n",
    );
    let example =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../config/lustre-azure.toml"))
            .unwrap()
            .replace("00000000-0000-0000-0000-000000000000", pvfs_azure::testing::SUBSCRIPTION)
            .replace("resource_group = \"pvfs-lustre\"", "resource_group = \"rg\"");
    let file = dir.write("lustre-azure.toml", &example);
    let run = |extra: &[&str]| {
        let mut args = vec!["provision", file.to_str().unwrap(), "--plan"];
        args.extend_from_slice(extra);
        dir.command(&crate::util::pvfsctl())
            .args(&args)
            .env("HOME", dir.path().join("home"))
            .env("PVFS_AZURE_ENDPOINT", fake.url.as_str())
            .env("PVFS_AZURE_CA", &ca)
            .env("PVFS_AZURE_TOKEN", "t")
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let words = |line: &str| line.split_whitespace().collect::<Vec<_>>().join(" ");
    let lines: Vec<String> = stdout.lines().map(words).collect();
    let has = |want: &str| lines.iter().any(|l| l.contains(want));
    assert!(
        has("cluster lustrefs in eastus (resource group rg): 7 to create, 0 to change, 0 left, 0 refused"),
        "{stdout}"
    );
    assert!(
        has("create mgsmds00 Standard_DS14_v2 zone - 1 × 1024 GiB Premium_LRS (caching None) at LUN 0"),
        "{stdout}"
    );
    for oss in ["oss00", "oss01", "oss02", "oss03"] {
        let want = format!(
            "create {oss} Standard_DS14_v2 zone - 10 × 1024 GiB Premium_LRS (caching None) at LUN 0..9"
        );
        assert!(has(&want), "missing {want:?} in:\n{stdout}");
    }
    for client in ["client00", "client01"] {
        assert!(has(&format!("create {client} Standard_DS14_v2 zone - no data disks")), "{stdout}");
    }
    assert!(has("quotas and sizes of eastus: enough"), "{stdout}");
    assert!(fake.requests().iter().all(|r| r.method == "GET"), "a plan only reads");

    // Seven DS14_v2 are 112 vCPUs: with 100 left the plan says so, exactly.
    fake.world.lock().unwrap().usages =
        vec![("cores".into(), 0, 350), ("standardDSv2Family".into(), 250, 350)];
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1));
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        said.contains("needs 112 vCPUs of standardDSv2Family, 100 left (limit 350, in use 250)"),
        "{said}"
    );
}
