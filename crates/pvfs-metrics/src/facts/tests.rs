//! Facts read from a recorded host tree (files copied from a Debian 12 VM) with blkid outputs
//! recorded from the real tool.

use super::*;
use expect_test::expect;
use pvfs_host::RecordedRunner;
use std::path::Path;

fn write(base: &Path, rel: &str, text: &str) {
    let path = base.join(rel.trim_start_matches('/'));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A two-CPU Debian 12 node with a system disk, an empty data disk, an XFS brick on a loop
/// device, an empty loop device, a RAM disk, a NIC with speed and a virtual one without.
fn recorded_host() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path();
    write(b, "/proc/sys/kernel/hostname", "oss00\n");
    write(b, "/proc/sys/kernel/osrelease", "6.1.0-37-amd64\n");
    write(b, "/proc/uptime", "86523.17 170012.40\n");
    write(b, "/proc/sys/kernel/random/boot_id", "3e1f2b0c-9d1a-4c57-8a0e-6b2d4f9c1a77\n");
    write(
        b,
        "/proc/meminfo",
        "MemTotal:       24598836 kB\nMemFree:        23012345 kB\nMemAvailable:   23512345 kB\n",
    );
    write(
        b,
        "/proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8272CL CPU @ 2.60GHz\n\n\
         processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8272CL CPU @ 2.60GHz\n\n",
    );
    write(
        b,
        "/etc/os-release",
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n",
    );
    for (name, sectors, rotational, model) in [
        ("sda", "62914560", "1", "Virtual Disk    "),
        ("sdc", "2147483648", "1", "Virtual Disk"),
        ("loop0", "1048576", "0", ""),
        ("loop1", "0", "0", ""),
        ("ram0", "131072", "0", ""),
    ] {
        write(b, &format!("/sys/block/{name}/size"), &format!("{sectors}\n"));
        write(b, &format!("/sys/block/{name}/queue/rotational"), &format!("{rotational}\n"));
        if !model.is_empty() {
            write(b, &format!("/sys/block/{name}/device/model"), &format!("{model}\n"));
        }
        if name != "sda" {
            write(b, &format!("/dev/{name}"), "");
        }
    }
    for (name, mac, speed, mtu, state, duplex) in [
        ("eth0", "00:0d:3a:8e:11:20", Some("40000"), "1500", "up", Some("full")),
        ("docker0", "02:42:5b:1c:aa:01", None, "1500", "down", None),
        ("lo", "00:00:00:00:00:00", None, "65536", "unknown", None),
        ("veth1", "5a:11:22:33:44:55", Some("-1"), "1500", "lowerlayerdown", Some("unknown")),
    ] {
        let dir = format!("/sys/class/net/{name}");
        write(b, &format!("{dir}/address"), &format!("{mac}\n"));
        write(b, &format!("{dir}/mtu"), &format!("{mtu}\n"));
        write(b, &format!("{dir}/operstate"), &format!("{state}\n"));
        if let Some(speed) = speed {
            write(b, &format!("{dir}/speed"), &format!("{speed}\n"));
        }
        if let Some(duplex) = duplex {
            write(b, &format!("{dir}/duplex"), &format!("{duplex}\n"));
        }
    }
    dir
}

fn recorded_blkid() -> RecordedRunner {
    RecordedRunner::new()
        // Empty disk: exit 2, nothing printed (verified on Debian 12, util-linux 2.38).
        .record("blkid -p -o export /dev/sdc", 2, "", "")
        .record(
            "blkid -p -o export /dev/loop0",
            0,
            "DEVNAME=/dev/loop0\nLABEL=brick1\nUUID=3f8e2c1a-5b7d-4e1f-9a2b-6c0d8e4f1a2b\nBLOCK_SIZE=512\nTYPE=xfs\nUSAGE=filesystem\n",
            "",
        )
}

#[tokio::test]
async fn reads_a_recorded_debian_node() {
    let host = recorded_host();
    let facts = read(&Root::at(host.path()), &recorded_blkid()).await.unwrap();
    let json = serde_json::to_string_pretty(&facts).unwrap();
    expect![[r#"
        {
          "hostname": "oss00",
          "os": {
            "id": "debian",
            "version_id": "12",
            "pretty_name": "Debian GNU/Linux 12 (bookworm)"
          },
          "kernel": "6.1.0-37-amd64",
          "cpu": {
            "logical": 2,
            "model": "Intel(R) Xeon(R) Platinum 8272CL CPU @ 2.60GHz"
          },
          "memory_bytes": 25189208064,
          "block_devices": [
            {
              "name": "loop0",
              "path": "/dev/loop0",
              "size_bytes": 536870912,
              "rotational": false,
              "model": "",
              "signature": {
                "state": "present",
                "kind": "xfs"
              }
            },
            {
              "name": "sda",
              "path": "/dev/sda",
              "size_bytes": 32212254720,
              "rotational": true,
              "model": "Virtual Disk",
              "signature": {
                "state": "unknown",
                "detail": "no device node /dev/sda here"
              }
            },
            {
              "name": "sdc",
              "path": "/dev/sdc",
              "size_bytes": 1099511627776,
              "rotational": true,
              "model": "Virtual Disk",
              "signature": {
                "state": "empty"
              }
            }
          ],
          "nics": [
            {
              "name": "docker0",
              "mac": "02:42:5b:1c:aa:01",
              "speed_mbps": null,
              "mtu": 1500,
              "operstate": "down",
              "duplex": ""
            },
            {
              "name": "eth0",
              "mac": "00:0d:3a:8e:11:20",
              "speed_mbps": 40000,
              "mtu": 1500,
              "operstate": "up",
              "duplex": "full"
            },
            {
              "name": "veth1",
              "mac": "5a:11:22:33:44:55",
              "speed_mbps": null,
              "mtu": 1500,
              "operstate": "lowerlayerdown",
              "duplex": "unknown"
            }
          ],
          "uptime_seconds": 86523,
          "boot_id": "3e1f2b0c-9d1a-4c57-8a0e-6b2d4f9c1a77",
          "ssh_host_key": "",
          "selinux": "disabled",
          "firewall": "none"
        }"#]]
    .assert_eq(&json);
}

#[tokio::test]
async fn blkid_exit_2_with_an_error_is_not_empty() {
    // blkid exits 2 when it cannot open the device too; that must not read as "empty".
    let host = recorded_host();
    let runner = RecordedRunner::new().record(
        "blkid -p -o export /dev/sdc",
        2,
        "",
        "blkid: error: /dev/sdc: Permission denied\n",
    );
    let sig = probe_signature(&Root::at(host.path()), &runner, "/dev/sdc").await;
    assert_eq!(
        sig,
        Signature::Unknown {
            detail: "`blkid -p -o export /dev/sdc` exited Some(2): blkid: error: /dev/sdc: Permission denied"
                .into()
        }
    );
}

#[tokio::test]
async fn a_missing_essential_file_is_an_error_naming_it() {
    let host = recorded_host();
    std::fs::remove_file(host.path().join("proc/meminfo")).unwrap();
    let err = read(&Root::at(host.path()), &recorded_blkid()).await.unwrap_err();
    assert!(err.to_string().starts_with("cannot read /proc/meminfo:"), "{err}");
}

/// Found by `fuzz_proc_facts_mutated_files`: a MemTotal past 16 EiB overflowed `kib * 1024`
/// (a panic in a debug build, a wrong size in a release one); it is an error naming the file.
#[tokio::test]
async fn a_memory_size_past_64_bits_is_an_error_not_a_wrapped_number() {
    let host = recorded_host();
    std::fs::write(host.path().join("proc/meminfo"), "MemTotal:       18014398509481984 kB\n").unwrap();
    let err = read(&Root::at(host.path()), &recorded_blkid()).await.unwrap_err();
    assert_eq!(err.to_string(), "cannot parse /proc/meminfo: MemTotal 18014398509481984 kB is past 16 EiB");
}

#[tokio::test]
async fn reads_this_machine() {
    // The real readers on the real host: whatever the values, the essentials are there.
    let facts = read(&Root::system(), &pvfs_host::SystemRunner).await.unwrap();
    assert!(!facts.hostname.is_empty());
    assert!(facts.cpu.logical >= 1);
    assert!(facts.memory_bytes > 0);
    assert!(facts.kernel.chars().next().is_some_and(|c| c.is_ascii_digit()), "{}", facts.kernel);
}

#[tokio::test]
async fn the_ssh_host_key_is_reported_without_its_comment_and_garbage_is_no_key() {
    let host = recorded_host();
    let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDx6n5e0mUw6Xz7m7i1f3sQ2bP4nq5R8yT0uV9wX1yZ2";
    let read_key = |text: Option<&str>| {
        let path = host.path().join("etc/ssh/ssh_host_ed25519_key.pub");
        match text {
            Some(text) => write(host.path(), SSH_HOST_KEY, text),
            None => drop(std::fs::remove_file(&path)),
        }
        async { read(&Root::at(host.path()), &recorded_blkid()).await.unwrap().ssh_host_key }
    };
    assert_eq!(read_key(Some(&format!("{key} root@client1\n"))).await, key);
    assert_eq!(read_key(None).await, "");
    assert_eq!(read_key(Some("command=\"sh\" ssh-ed25519 AAAA\n")).await, "");
    assert_eq!(read_key(Some("ssh-ed25519 not;base64;at;all;really\n")).await, "");
}

/// SELinux's mode from selinuxfs. The kernel prints `enforce` as a bare `%d` of
/// `enforcing_enabled()` (security/selinux/selinuxfs.c, `sel_read_enforce`), no newline.
#[test]
fn selinux_is_read_from_selinuxfs_and_no_selinuxfs_is_disabled() {
    let host = tempfile::tempdir().unwrap();
    let root = Root::at(host.path());
    assert_eq!(read_selinux(&root), Selinux::Disabled, "no selinuxfs: disabled");
    write(host.path(), "/sys/fs/selinux/enforce", "1");
    assert_eq!(read_selinux(&root), Selinux::Enforcing);
    write(host.path(), "/sys/fs/selinux/enforce", "0");
    assert_eq!(read_selinux(&root), Selinux::Permissive);
    write(host.path(), "/sys/fs/selinux/enforce", "maybe");
    assert_eq!(read_selinux(&root), Selinux::Unknown);
    // EL6's mount point, which libselinux still looks at (OLDSELINUXMNT).
    let old = tempfile::tempdir().unwrap();
    write(old.path(), "/selinux/enforce", "1");
    assert_eq!(read_selinux(&Root::at(old.path())), Selinux::Enforcing);
    assert_eq!(Selinux::from_word(Selinux::Permissive.as_str()), Selinux::Permissive);
}

/// ufw's configuration as its package ships it (ufw's conf/ufw.conf: ENABLED=no until
/// `ufw enable` rewrites the line).
const UFW_CONF: &str = "# /etc/ufw/ufw.conf\n#\n\n# Set to yes to start on boot. If setting this remotely, be sure to add a rule\n# to allow your remote connection before starting ufw. Eg: 'ufw allow 22/tcp'\nENABLED=no\n\n# Please use the 'ufw' command to set the loglevel. Eg: 'ufw logging medium'.\n# See 'man ufw' for details.\nLOGLEVEL=low\n";

#[tokio::test]
async fn the_host_firewall_is_firewalld_running_or_ufw_enabled() {
    let host = tempfile::tempdir().unwrap();
    let root = Root::at(host.path());
    assert_eq!(read_firewall(&root, &RecordedRunner::new()).await, HostFirewall::None);
    write(host.path(), "/etc/ufw/ufw.conf", UFW_CONF);
    assert_eq!(
        read_firewall(&root, &RecordedRunner::new()).await,
        HostFirewall::None,
        "installed, not enabled"
    );
    write(host.path(), "/etc/ufw/ufw.conf", &UFW_CONF.replace("ENABLED=no", "ENABLED=yes"));
    assert_eq!(read_firewall(&root, &RecordedRunner::new()).await, HostFirewall::Ufw);

    let el = tempfile::tempdir().unwrap();
    write(el.path(), "/usr/bin/firewall-cmd", "");
    let root = Root::at(el.path());
    // systemctl is-active: "active" exit 0, "inactive" exit 3 (systemctl(1)).
    let active = RecordedRunner::new().record("systemctl is-active firewalld", 0, "active\n", "");
    assert_eq!(read_firewall(&root, &active).await, HostFirewall::Firewalld);
    let inactive = RecordedRunner::new().record("systemctl is-active firewalld", 3, "inactive\n", "");
    assert_eq!(read_firewall(&root, &inactive).await, HostFirewall::None);
    // systemctl could not be run: not reported, rather than "none".
    assert_eq!(read_firewall(&root, &RecordedRunner::new()).await, HostFirewall::Unknown);
    assert!(HostFirewall::Firewalld.is_active() && !HostFirewall::None.is_active());
}
