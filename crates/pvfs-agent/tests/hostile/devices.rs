//! Destroying data through `mkfs` steps: a device that is not one, one in use, one holding data
//! no tool recognises, and mkfs options that reach a second device or force the format. Each
//! is refused naming the rule, every device involved is left byte for byte as it was, and the
//! agent goes on serving. The devices are real loop devices (the tests run as root).

use crate::harness::{self, Agent, Pki};
use pvfs_host::testing::{LoopDevice, Mounted, Swap};
use pvfs_proto::pb;

const SIZE: u64 = 64 << 20;

fn mkfs(device: &str, fstype: &str, options: &[&str], wipe: bool) -> pb::Step {
    harness::step(pb::step::Step::Mkfs(pb::MkfsStep {
        device: device.into(),
        fstype: fstype.into(),
        options: options.iter().map(|o| o.to_string()).collect(),
        label: Some("hostile".into()),
        wipe,
    }))
}

/// Sends one mkfs step; returns the refusal, failing the test if it was carried out.
async fn refused(agent: &Agent, step: pb::Step) -> String {
    let applied = agent.apply(vec![step]).await.expect("the unit is accepted, then refused by its step");
    applied.failure().unwrap_or_else(|| panic!("the step was carried out: {:?}", applied.events))
}

/// A regular file where a device is expected, named as devices are (under /dev), removed at
/// the end.
struct FileInDev(std::path::PathBuf);

impl Drop for FileInDev {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn a_regular_file_is_not_formatted() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let file = FileInDev(std::path::PathBuf::from(format!("/dev/pvfs-hostile-{}", std::process::id())));
    std::fs::write(&file.0, b"a database's rows, in a file\n".repeat(1000)).unwrap();
    let before = std::fs::read(&file.0).unwrap();
    for wipe in [false, true] {
        let why = refused(&agent, mkfs(&file.0.to_string_lossy(), "ext4", &[], wipe)).await;
        assert!(why.contains("is a regular file, not a block device (rule: only block devices"), "{why}");
    }
    assert_eq!(std::fs::read(&file.0).unwrap(), before, "the file is as it was");
    agent.assert_still_serving().await;
    agent.stop().await;
}

#[tokio::test]
async fn a_mounted_device_is_not_formatted_even_when_listed_for_wiping() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let disk = LoopDevice::new(SIZE);
    let mounted = Mounted::ext4(&disk.path);
    // Compared while mounted: mounting itself changes what the device reads.
    let before = disk.checksum();
    let why = refused(&agent, mkfs(&disk.path, "xfs", &[], true)).await;
    assert!(why.contains(&format!("is mounted on {}", mounted.target.display())), "{why}");
    assert!(
        why.contains("rule: a mounted device is never formatted, even when listed under `wipe`"),
        "{why}"
    );
    assert_eq!(disk.checksum(), before, "the device is as it was");
    agent.assert_still_serving().await;
    agent.stop().await;
}

#[tokio::test]
async fn active_swap_is_not_formatted_even_when_listed_for_wiping() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let disk = LoopDevice::new(SIZE);
    let _swap = Swap::on(&disk.path);
    let before = disk.checksum();
    let why = refused(&agent, mkfs(&disk.path, "ext4", &[], true)).await;
    assert!(why.contains("is active swap (rule: swap is never formatted"), "{why}");
    assert_eq!(disk.checksum(), before, "the device is as it was");
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// Issue 24, item 5: `losetup -f /dev/loop3`, then mkfs on loop3 with `wipe = true`. Loop
/// opens its backing without a claim, so holders is empty and O_EXCL succeeds; the device proof
/// reads `/sys/block/loop*/loop/backing_file` instead.
#[tokio::test]
async fn a_device_that_backs_another_loop_device_is_not_formatted_even_when_listed_for_wiping() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let watch = agent.watch().await;
    let disk = LoopDevice::new(SIZE);
    disk.write_at(4096, b"what the loop device on top shows");
    let upper = LoopDevice::over(&disk.path);
    let before = disk.checksum();
    for wipe in [false, true] {
        let why = refused(&agent, mkfs(&disk.path, "xfs", &[], wipe)).await;
        assert!(why.contains(&format!("backs loop device {}", upper.path)), "{why}");
        assert!(why.contains("rule: a device a loop device reads from is never formatted"), "{why}");
    }
    assert_eq!(disk.checksum(), before, "the device is as it was");
    watch.assert_no_gap().await;
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// The finding of issue 10: data without a signature (a raw database volume, a plain
/// dm-crypt device) was formatted.
#[tokio::test]
async fn data_without_a_signature_is_not_formatted() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let disk = LoopDevice::new(SIZE);
    disk.write_at(0, &b"rows of a database, no signature any tool knows\n".repeat(100));
    let before = disk.checksum();
    let why = refused(&agent, mkfs(&disk.path, "ext4", &[], false)).await;
    assert!(
        why.contains("holds data but no signature blkid or wipefs knows (data at byte 0 (first MiB))"),
        "{why}"
    );
    assert!(why.contains("rule: pvfs makes file systems only on devices proven empty"), "{why}");
    assert!(why.contains("add \"") && why.contains("to this node's `wipe` list"), "{why}");
    assert_eq!(disk.checksum(), before, "the device is as it was");
    agent.assert_still_serving().await;
    agent.stop().await;
}

#[tokio::test]
async fn mkfs_options_cannot_reach_a_second_device() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let (disk, other) = (LoopDevice::new(SIZE), LoopDevice::new(SIZE));
    other.write_at(4096, b"the other disk's data");
    let (before, other_before) = (disk.checksum(), other.checksum());
    let logdev = format!("logdev={},size=16m", other.path);
    let journal = format!("device={}", other.path);
    for (fstype, options) in [
        ("xfs", vec!["-l", logdev.as_str()]),
        ("ext4", vec!["-J", journal.as_str()]),
        ("xfs", vec![other.path.as_str()]),
    ] {
        let why = refused(&agent, mkfs(&disk.path, fstype, &options, true)).await;
        assert!(
            why.starts_with(&format!("refusing: mkfs options of {}: mkfs.{fstype} option ", disk.path)),
            "{why}"
        );
        assert!(why.contains("no second device") || why.contains("options only"), "{why}");
    }
    assert_eq!((disk.checksum(), other.checksum()), (before, other_before), "both devices are as they were");
    agent.assert_still_serving().await;
    agent.stop().await;
}

#[tokio::test]
async fn a_force_flag_spelled_differently_is_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    // A device holding a file system: what a smuggled force flag would destroy.
    let disk = LoopDevice::new(SIZE);
    let made =
        std::process::Command::new("mkfs.ext4").args(["-q", "-L", "precious", &disk.path]).status().unwrap();
    assert!(made.success());
    let before = disk.checksum();
    for (fstype, options) in [
        ("xfs", &["-Kf"][..]),
        ("xfs", &["-fK"]),
        ("xfs", &["-K", "-q", "-f"]),
        ("ext4", &["-F", "-F"]),
        ("ext4", &["-qF"]),
        ("ext4", &["--force"]),
    ] {
        let why = refused(&agent, mkfs(&disk.path, fstype, options, false)).await;
        assert!(why.contains(&format!("mkfs.{fstype} option ")), "{options:?}: {why}");
        assert!(
            why.contains(
                "no force flag (pvfs adds one itself, only for devices listed under the node's `wipe`)"
            ),
            "{options:?}: {why}"
        );
    }
    assert_eq!(disk.checksum(), before, "the device is as it was");
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// The rules do not get in the way of real work: a zeroed device is formatted.
#[tokio::test]
async fn an_empty_device_is_still_formatted() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let disk = LoopDevice::new(SIZE);
    let applied = agent.apply(vec![mkfs(&disk.path, "ext4", &["-q"], false)]).await.unwrap();
    assert!(applied.all_succeeded(), "{:?}", applied.failure());
    let out = std::process::Command::new("blkid").args(["-p", "-o", "export", &disk.path]).output().unwrap();
    let fields = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(fields.contains("TYPE=ext4") && fields.contains("LABEL=hostile"), "{fields}");
    agent.assert_still_serving().await;
    agent.stop().await;
}
