//! Teardown steps: unmounts against the kernel's mount table (/proc/self/mountinfo, lines as
//! the kernel writes them) and services against systemctl answers recorded with systemd 252
//! (Debian 12, the e2e image); wipes on real loop devices with
//! the real wipefs and blkid, and md/LVM state from sysfs trees shaped as the kernel's.

use super::*;
use crate::{Outcome, Step, execute};
use pvfs_host::testing::{DeviceRoot, LoopDevice};
use pvfs_host::{RecordedRunner, Root, SystemRunner};

/// The root file system, as every mount table starts (EL7, 3.10).
const ROOT_FS: &str =
    "60 1 253:0 / / rw,relatime shared:1 - xfs /dev/mapper/centos-root rw,seclabel,attr2,inode64,noquota\n";
/// A glusterfs 10.3 FUSE mount as the kernel lists it (the same line mount.rs's tests use).
const GV0: &str = "87 60 0:45 / /mnt/gv0 rw,relatime shared:71 - fuse.glusterfs 10.254.0.1:/gv0 \
    rw,user_id=0,group_id=0,default_permissions,allow_other,max_read=131072\n";

/// A node whose `umount` takes the mount off the kernel's table, as a real one does.
struct Node {
    dir: std::path::PathBuf,
    recorded: RecordedRunner,
}

impl Runner for Node {
    async fn run(&self, command: &Command) -> Result<pvfs_host::Output, pvfs_host::CommandError> {
        let out = self.recorded.run(command).await?;
        if command.program == "umount" && out.success() {
            std::fs::write(self.dir.join("proc/self/mountinfo"), ROOT_FS).unwrap();
        }
        Ok(out)
    }
}
const FSTAB: &str = "# UNCONFIGURED FSTAB FOR BASE SYSTEM\n10.254.0.1:/gv0 /mnt/gv0 glusterfs defaults,_netdev,backup-volfile-servers=10.254.0.2 0 0\n/dev/sdb1 /home ext4 defaults 0 2\n";

fn client() -> Step {
    Step::Unmount(Unmount(Mount {
        source: "10.254.0.1:/gv0".into(),
        target: "/mnt/gv0".into(),
        fstype: "glusterfs".into(),
        options: "defaults,_netdev,backup-volfile-servers=10.254.0.2".into(),
        fstab: true,
    }))
}

fn root_with_fstab(fstab: &str, mounts: &str) -> (tempfile::TempDir, Root) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("etc")).unwrap();
    std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
    std::fs::write(dir.path().join("proc/self/mountinfo"), format!("{ROOT_FS}{mounts}")).unwrap();
    std::fs::create_dir_all(dir.path().join("mnt/gv0")).unwrap();
    std::fs::write(dir.path().join("etc/fstab"), fstab).unwrap();
    let root = Root::at(dir.path());
    (dir, root)
}

#[tokio::test]
async fn a_client_mount_is_unmounted_and_its_fstab_line_goes_once() {
    let (dir, root) = root_with_fstab(FSTAB, GV0);
    let runner = RecordedRunner::new().record("umount -- /mnt/gv0", 0, "", "");
    let host = NodeAccess::new(root, Node { dir: dir.path().into(), recorded: runner.clone() });
    let Outcome::Changed { diff } = execute(&client(), &host, &crate::Unguarded, false, |_| {}).await else {
        panic!()
    };
    assert_eq!(
        diff,
        [
            "/mnt/gv0 is mounted (fuse.glusterfs 10.254.0.1:/gv0)",
            "/etc/fstab mounts /mnt/gv0 at boot: -10.254.0.1:/gv0 /mnt/gv0 glusterfs defaults,_netdev,backup-volfile-servers=10.254.0.2 0 0",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("etc/fstab")).unwrap(),
        "# UNCONFIGURED FSTAB FOR BASE SYSTEM\n/dev/sdb1 /home ext4 defaults 0 2\n",
        "only the cluster's line went"
    );
    // A second down changes nothing.
    assert_eq!(
        execute(&client(), &host, &crate::Unguarded, false, |_| {}).await,
        Outcome::Ok { detail: None }
    );
    assert_eq!(runner.calls().iter().filter(|c| c.starts_with("umount")).count(), 1);
}

#[tokio::test]
async fn a_mount_pvfs_did_not_make_is_never_unmounted() {
    let other = "88 60 8:208 / /mnt/gv0 rw,relatime shared:72 - ext4 /dev/sdz rw\n";
    let (dir, root) = root_with_fstab("/dev/sdz /mnt/gv0 ext4 defaults 0 2\n", other);
    let runner = RecordedRunner::new();
    let host = NodeAccess::new(root, Node { dir: dir.path().into(), recorded: runner.clone() });
    let Outcome::Failed(failure) = execute(&client(), &host, &crate::Unguarded, false, |_| {}).await else {
        panic!()
    };
    assert!(
        failure.message.contains("/mnt/gv0 has /dev/sdz (ext4) mounted, not the cluster's 10.254.0.1:/gv0"),
        "{}",
        failure.message
    );
    assert!(runner.calls().iter().all(|c| !c.starts_with("umount")));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("etc/fstab")).unwrap(),
        "/dev/sdz /mnt/gv0 ext4 defaults 0 2\n",
        "another file system's line for the directory is not pvfs's"
    );
}

#[test]
fn fstab_lines_of_other_types_and_comments_stay() {
    let old = "# /mnt/gv0 glusterfs\n/dev/md0 /bricks/b1 xfs defaults 0 2\n/dev/md0 /bricks/b1 xfs rw 0 2\nproc /proc proc defaults 0 0\n";
    let (new, gone) = fstab_without(old, "/bricks/b1", "xfs").unwrap();
    assert_eq!(new, "# /mnt/gv0 glusterfs\nproc /proc proc defaults 0 0\n");
    assert_eq!(gone.len(), 2);
    assert_eq!(fstab_without(&new, "/bricks/b1", "xfs"), None);
    assert_eq!(fstab_without(&new, "/mnt/gv0", "glusterfs"), None, "a comment is not an entry");
}

fn systemd_root() -> (tempfile::TempDir, Root) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("run/systemd/system")).unwrap();
    let root = Root::at(dir.path());
    (dir, root)
}

#[tokio::test]
async fn a_running_enabled_service_is_stopped_then_disabled() {
    let (_dir, root) = systemd_root();
    let runner = RecordedRunner::new().record("systemctl is-enabled glusterd", 0, "enabled\n", "").record(
        "systemctl is-active glusterd",
        0,
        "active\n",
        "",
    );
    let host = NodeAccess::new(root, runner);
    let a = ServiceStopped { unit: "glusterd".into() }.assess(&host).await.unwrap();
    assert_eq!(a.diff, ["glusterd is active", "glusterd is enabled"]);
    let shown: Vec<String> = a.actions.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["systemctl stop glusterd", "systemctl disable glusterd"]);
}

#[tokio::test]
async fn a_stopped_disabled_static_or_missing_service_is_left_alone() {
    let (_dir, root) = systemd_root();
    // Recorded with systemd 252: `is-active` of a stopped unit prints "inactive", exit 3; a
    // unit that is not installed is exit 1 with the reason on stderr.
    let runner = RecordedRunner::new()
        .record("systemctl is-enabled lnet", 1, "disabled\n", "")
        .record("systemctl is-active lnet", 3, "inactive\n", "")
        .record("systemctl is-enabled glusterfsd", 0, "static\n", "")
        .record("systemctl is-active glusterfsd", 3, "inactive\n", "")
        .record(
            "systemctl is-enabled beegfs-client",
            1,
            "",
            "Failed to get unit file state for beegfs-client.service: No such file or directory\n",
        );
    let host = NodeAccess::new(root, runner);
    for unit in ["lnet", "glusterfsd", "beegfs-client"] {
        let a = ServiceStopped { unit: unit.into() }.assess(&host).await.unwrap();
        assert!(a.is_in_sync(), "{unit}: {a:?}");
    }
}

#[tokio::test]
async fn without_systemd_nothing_is_guessed() {
    let dir = tempfile::tempdir().unwrap();
    let host = NodeAccess::new(Root::at(dir.path()), RecordedRunner::new());
    let err = ServiceStopped { unit: "glusterd".into() }.assess(&host).await.unwrap_err();
    assert!(err.to_string().contains("systemd is not running"), "{err}");
}

/// A disk under `root` named as its real loop device path, so that the real tools the step
/// runs (wipefs) act on the test's loop device and nothing else.
fn real_disk(root: &DeviceRoot, size: u64) -> LoopDevice {
    let disk = LoopDevice::new(size);
    root.link(&disk.path, &disk.path);
    disk
}

#[tokio::test]
async fn a_formatted_disk_is_wiped_to_empty_and_a_second_wipe_changes_nothing() {
    let root = DeviceRoot::new();
    let disk = real_disk(&root, 200 << 20);
    let out =
        std::process::Command::new("mkfs.ext4").args(["-q", "-L", "brick1", &disk.path]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    disk.write_at((200 << 20) - 64, b"the last file's last bytes");
    let host = NodeAccess::new(root.root(), SystemRunner);
    let step = Step::WipeTarget(WipeTarget { disks: vec![disk.path.clone()], array: None, vg: None });

    let Outcome::WouldChange { diff, would_run } =
        execute(&step, &host, &crate::Unguarded, true, |_| {}).await
    else {
        panic!()
    };
    assert_eq!(diff, [format!("{} holds ext4 (LABEL=brick1)", disk.path)]);
    assert_eq!(
        would_run,
        [
            format!("wipefs --all -- {}", disk.path),
            format!("zero the first and last MiB of {} (and where other signatures live)", disk.path),
        ]
    );
    let mut ran = Vec::new();
    let outcome = execute(&step, &host, &crate::Unguarded, false, |r| ran.push(r.command.clone())).await;
    assert!(matches!(outcome, Outcome::Changed { .. }), "{outcome:?}");
    assert_eq!(ran.len(), 2, "{ran:?}");
    // What the next `up` asks before it formats: zeros, and no signature blkid knows.
    let blkid = std::process::Command::new("blkid").args(["-p", &disk.path]).output().unwrap();
    assert_eq!(blkid.status.code(), Some(2), "{}", String::from_utf8_lossy(&blkid.stdout));
    let claim = pvfs_host::device::claim(&Root::system(), &disk.path).unwrap();
    assert_eq!(claim.content().unwrap(), pvfs_host::device::Content::Zeros);
    drop(claim);
    assert_eq!(execute(&step, &host, &crate::Unguarded, false, |_| {}).await, Outcome::Ok { detail: None });
}

#[tokio::test]
async fn a_mounted_disk_is_never_wiped() {
    let root = DeviceRoot::new();
    let disk = real_disk(&root, 200 << 20);
    let _mounted = pvfs_host::testing::Mounted::ext4(&disk.path);
    let host = NodeAccess::new(root.root(), SystemRunner);
    let step = Step::WipeTarget(WipeTarget { disks: vec![disk.path.clone()], array: None, vg: None });
    let Outcome::Failed(failure) = execute(&step, &host, &crate::Unguarded, false, |_| {}).await else {
        panic!()
    };
    assert!(failure.message.contains("is mounted on"), "{}", failure.message);
    let blkid = std::process::Command::new("blkid").args(["-p", &disk.path]).output().unwrap();
    assert_eq!(blkid.status.code(), Some(0), "the file system is still there");
}

/// An assembled array: its sysfs entries as the kernel shows them (md/level, slaves/), made
/// under a test root since md is absent from this machine's kernel; its members are real loop
/// devices, held by nothing, which apply would prove unused again.
fn array_root(members: &[&LoopDevice], slaves: &[&str]) -> DeviceRoot {
    let root = DeviceRoot::new();
    for m in members {
        root.link(&m.path, &m.path);
    }
    let md = root.dir.path().join("sys/block/md0");
    std::fs::create_dir_all(md.join("md")).unwrap();
    std::fs::write(md.join("md/level"), "raid0\n").unwrap();
    std::fs::create_dir_all(md.join("slaves")).unwrap();
    for s in slaves {
        std::fs::write(md.join("slaves").join(s), "").unwrap();
    }
    root
}

#[tokio::test]
async fn an_assembled_array_is_cleared_stopped_and_its_members_zeroed_in_that_order() {
    let (a, b) = (LoopDevice::new(64 << 20), LoopDevice::new(64 << 20));
    let name = |d: &LoopDevice| d.path.trim_start_matches("/dev/").to_owned();
    let root = array_root(&[&a, &b], &[&name(&a), &name(&b)]);
    // /dev/md0 itself: a device node for one of the loops stands in for the array's node.
    root.node("/dev/md0", &a.path);
    std::fs::create_dir_all(root.dir.path().join("dev/vg_brick")).unwrap();
    let host = NodeAccess::new(root.root(), RecordedRunner::new());
    let step = WipeTarget {
        disks: vec![a.path.clone(), b.path.clone()],
        array: Some("/dev/md0".into()),
        vg: Some("vg_brick".into()),
    };
    let assessed = step.assess(&host).await.unwrap();
    let shown: Vec<String> = assessed.actions.iter().map(ToString::to_string).collect();
    let zero = |p: &str| format!("zero the first and last MiB of {p} (and where other signatures live)");
    assert_eq!(
        shown,
        [
            "vgchange --activate n -- vg_brick".to_owned(),
            "wipefs --all -- /dev/md0".to_owned(),
            zero("/dev/md0"),
            "mdadm --stop /dev/md0".to_owned(),
            format!("mdadm --zero-superblock {}", a.path),
            format!("wipefs --all -- {}", a.path),
            zero(&a.path),
            format!("mdadm --zero-superblock {}", b.path),
            format!("wipefs --all -- {}", b.path),
            zero(&b.path),
        ]
    );
    // Every destructive action names the device it proves again first.
    for action in &assessed.actions {
        if let Action::Destroy { devices, .. } = action {
            assert_eq!(devices.len(), 1);
            assert!(devices[0].wipe && !devices[0].empty);
        }
    }
}

#[tokio::test]
async fn an_array_over_other_disks_is_refused() {
    let (a, b) = (LoopDevice::new(64 << 20), LoopDevice::new(64 << 20));
    let root = array_root(&[&a, &b], &["sdx", "sdy"]);
    let host = NodeAccess::new(root.root(), RecordedRunner::new());
    let step =
        WipeTarget { disks: vec![a.path.clone(), b.path.clone()], array: Some("/dev/md0".into()), vg: None };
    let err = step.assess(&host).await.unwrap_err();
    assert!(
        err.to_string().contains("/dev/md0 is an array over sdx,sdy, not over the cluster file's"),
        "{err}"
    );
}
