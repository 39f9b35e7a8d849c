//! The device rules, two ways.
//!
//! Recorded trees: md, device-mapper and partition tables cannot be made on the build
//! machines (no md or dm in their kernel, and no partition parsers: CONFIG_MSDOS_PARTITION and
//! CONFIG_EFI_PARTITION are off), so those cases are sysfs/procfs trees laid out as the
//! kernel documents them — Documentation/ABI/stable/sysfs-block (`/sys/block/<disk>/<part>/`
//! with `partition` and `dev`, `holders/` and `slaves/` links), Documentation/ABI/stable/
//! sysfs-devices and sysfs-dev (`/sys/dev/block/MAJ:MIN` → the device's directory),
//! Documentation/filesystems/proc.rst §3.5 (mountinfo) — with the first mountinfo lines and
//! the /proc/swaps header recorded on this machine (Linux 6.18).
//!
//! Real devices: loop devices made for each test (root, as CI runs), with real mounts, swap
//! and exclusive openers.

use super::*;
use crate::testing::{LoopDevice, Mounted, Swap};

/// Recorded on this machine; the lines for test devices are added per test.
const MOUNTINFO: &str = "22 27 0:21 / /proc rw,relatime - proc proc rw\n\
23 27 0:22 / /sys rw,relatime - sysfs sysfs rw\n\
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334432k,nr_inodes=3083608,mode=755\n\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n";
const SWAPS_HEADER: &str = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";

/// A node with a disk `sdc` (8:32) partitioned into `sdc1` (8:33) and `sdc2` (8:34), and a
/// second disk `sdd` (8:48).
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let tree = Tree { dir: tempfile::tempdir().unwrap() };
        tree.disk("sdc", "8:32", &[("sdc1", "8:33"), ("sdc2", "8:34")]);
        tree.disk("sdd", "8:48", &[]);
        tree.write("proc/self/mountinfo", MOUNTINFO);
        tree.write("proc/swaps", SWAPS_HEADER);
        tree
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn link(&self, rel: &str, target: &str) {
        let path = self.dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, path).unwrap();
    }

    /// `/sys/devices/.../block/<disk>` with its partitions, and the class and dev links.
    fn disk(&self, name: &str, dev: &str, parts: &[(&str, &str)]) {
        let base = format!("sys/devices/pci0000:00/0000:00:10.0/host0/target0:0:0/0:0:0:0/block/{name}");
        self.write(&format!("{base}/dev"), &format!("{dev}\n"));
        std::fs::create_dir_all(self.dir.path().join(format!("{base}/holders"))).unwrap();
        self.link(&format!("sys/class/block/{name}"), &format!("../../{}", &base[4..]));
        self.link(&format!("sys/dev/block/{dev}"), &format!("../../{}", &base[4..]));
        for (index, (part, pdev)) in parts.iter().enumerate() {
            self.write(&format!("{base}/{part}/partition"), &format!("{}\n", index + 1));
            self.write(&format!("{base}/{part}/dev"), &format!("{pdev}\n"));
            std::fs::create_dir_all(self.dir.path().join(format!("{base}/{part}/holders"))).unwrap();
            self.link(&format!("sys/class/block/{part}"), &format!("../../{}/{part}", &base[4..]));
            self.link(&format!("sys/dev/block/{pdev}"), &format!("../../{}/{part}", &base[4..]));
        }
    }

    /// `holder` (md0, dm-0) is built on `name`: a link in `name`'s holders directory.
    fn hold(&self, name: &str, holder: &str) {
        let dir = std::fs::canonicalize(self.dir.path().join(format!("sys/class/block/{name}"))).unwrap();
        std::os::unix::fs::symlink(
            format!("../../../../virtual/block/{holder}"),
            dir.join("holders").join(holder),
        )
        .unwrap();
    }

    fn root(&self) -> Root {
        Root::at(self.dir.path())
    }
}

fn sdc() -> Identity {
    Identity {
        path: "/dev/disk/azure/scsi1/lun0".into(),
        node: "/dev/sdc".into(),
        name: "sdc".into(),
        dev: DevNum { major: 8, minor: 32 },
    }
}

#[test]
fn an_unused_disk_passes() {
    let tree = Tree::new();
    check_unused(&tree.root(), &sdc()).unwrap();
}

#[test]
fn an_md_member_is_held() {
    let tree = Tree::new();
    tree.hold("sdc", "md0");
    let err = check_unused(&tree.root(), &sdc()).unwrap_err();
    assert_eq!(err.rule(), Some("no holders"));
    assert_eq!(
        err.to_string(),
        "/dev/disk/azure/scsi1/lun0 (sdc, 8:32) is held by md0 (rule: a device an md array or a \
         device-mapper/LVM mapping is built on is never formatted, even when listed under `wipe`); stop the \
         array or remove the mapping first, or name another disk"
    );
}

#[test]
fn a_partition_held_by_lvm_holds_the_disk() {
    let tree = Tree::new();
    tree.hold("sdc1", "dm-0");
    let err = check_unused(&tree.root(), &sdc()).unwrap_err();
    assert!(err.to_string().contains("(its partition sdc1) is held by dm-0"), "{err}");
    // The other disk is not affected.
    let sdd = Identity {
        path: "/dev/sdd".into(),
        node: "/dev/sdd".into(),
        name: "sdd".into(),
        dev: DevNum { major: 8, minor: 48 },
    };
    check_unused(&tree.root(), &sdd).unwrap();
}

#[test]
fn a_mounted_disk_or_partition_is_refused() {
    let tree = Tree::new();
    tree.write(
        "proc/self/mountinfo",
        &format!("{MOUNTINFO}98 27 8:33 / /data\\040one rw,noatime shared:40 - xfs /dev/sdc1 rw,inode64\n"),
    );
    let err = check_unused(&tree.root(), &sdc()).unwrap_err();
    assert_eq!(err.rule(), Some("not mounted"));
    assert!(err.to_string().starts_with("/dev/disk/azure/scsi1/lun0 (its partition sdc1) is mounted on /data one (rule: a mounted device is never formatted, even when listed under `wipe`)"), "{err}");

    // btrfs shows an anonymous device number; its source still names the disk.
    tree.write(
        "proc/self/mountinfo",
        &format!("{MOUNTINFO}99 27 0:45 / /srv rw - btrfs /dev/sdc rw,space_cache=v2\n"),
    );
    let err = check_unused(&tree.root(), &sdc()).unwrap_err();
    assert!(err.to_string().contains("(sdc, 8:32) is mounted on /srv"), "{err}");
}

#[test]
fn a_swap_partition_is_refused() {
    let tree = Tree::new();
    tree.write(
        "proc/swaps",
        &format!("{SWAPS_HEADER}/dev/sdc2                               partition\t8388604\t\t0\t\t-2\n"),
    );
    let err = check_unused(&tree.root(), &sdc()).unwrap_err();
    assert_eq!(err.rule(), Some("not swap"));
    assert!(
        err.to_string().starts_with("/dev/disk/azure/scsi1/lun0 (its partition sdc2) is active swap"),
        "{err}"
    );
}

#[test]
fn a_tree_without_the_files_cannot_prove_anything() {
    let tree = Tree::new();
    std::fs::remove_file(tree.dir.path().join("proc/self/mountinfo")).unwrap();
    let err = check_unused(&tree.root(), &sdc()).unwrap_err();
    assert!(matches!(err, DeviceError::Host { .. }), "{err}");
    assert_eq!(err.rule(), None);
}

// Real loop devices from here on.

const SIZE: u64 = 200 * MIB;

#[test]
fn a_zeroed_loop_device_is_claimed_and_reads_as_zeros() {
    let dev = LoopDevice::new(SIZE);
    let claim = claim(&Root::system(), &dev.path).unwrap();
    assert_eq!(claim.size(), SIZE);
    assert_eq!(format!("/dev/{}", claim.identity().name), dev.path);
    assert_eq!(claim.identity().node, dev.path);
    assert_eq!(claim.content().unwrap(), Content::Zeros);
}

#[test]
fn data_without_a_signature_is_found_where_it_lies() {
    let dev = LoopDevice::new(SIZE);
    let root = Root::system();
    for (offset, place) in [
        (512 * 1024, "first MiB"),
        (SIZE - 32, "last MiB"),
        (64 * MIB + 100, "btrfs superblock mirror"),
        (128 * MIB, "ext4 backup superblock"),
    ] {
        dev.write_at(offset, b"rows of a database, no signature");
        let found = claim(&root, &dev.path).unwrap().content().unwrap();
        assert_eq!(found, Content::Data { offset, place }, "{offset}");
        dev.write_at(offset, &[0; 32]);
    }
    assert_eq!(claim(&root, &dev.path).unwrap().content().unwrap(), Content::Zeros);
}

#[test]
fn a_link_resolves_to_the_device_it_names() {
    let dev = LoopDevice::new(SIZE);
    let links = tempfile::tempdir().unwrap();
    let lun = links.path().join("lun0");
    std::os::unix::fs::symlink(&dev.path, &lun).unwrap();
    let id = identify(&Root::system(), &lun.to_string_lossy()).unwrap();
    assert_eq!(id.node, dev.path);
    assert_eq!(id.path, lun.to_string_lossy());
}

#[test]
fn a_regular_file_is_not_a_block_device() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("disk.img");
    std::fs::write(&file, vec![7u8; 1 << 16]).unwrap();
    let err = claim(&Root::system(), &file.to_string_lossy()).unwrap_err();
    assert_eq!(err.rule(), Some("block device"));
    assert!(err.to_string().contains("is a regular file, not a block device"), "{err}");
    let err = claim(&Root::system(), "/dev/null").unwrap_err();
    assert!(err.to_string().contains("is a character device"), "{err}");
    let err = claim(&Root::system(), "/dev/pvfs-no-such-disk").unwrap_err();
    assert!(matches!(err, DeviceError::Missing { .. }), "{err}");
}

#[test]
fn a_mounted_loop_device_is_refused() {
    let dev = LoopDevice::new(SIZE);
    let mounted = Mounted::ext4(&dev.path);
    let err = claim(&Root::system(), &dev.path).unwrap_err();
    assert_eq!(err.rule(), Some("not mounted"), "{err}");
    assert!(err.to_string().contains(&format!("is mounted on {}", mounted.target.display())), "{err}");
}

#[test]
fn a_loop_device_used_as_swap_is_refused() {
    let dev = LoopDevice::new(SIZE);
    let _swap = Swap::on(&dev.path);
    let err = claim(&Root::system(), &dev.path).unwrap_err();
    assert_eq!(err.rule(), Some("not swap"), "{err}");
}

/// `losetup -f /dev/loop3`: loop opens its backing without claiming it, so the device has no
/// holders and opens O_EXCL; formatting it would rewrite what the second loop device shows.
#[test]
fn a_device_that_backs_another_loop_device_is_refused() {
    let dev = LoopDevice::new(SIZE);
    let upper = LoopDevice::over(&dev.path);
    let err = claim(&Root::system(), &dev.path).unwrap_err();
    assert_eq!(err.rule(), Some("no loop device on it"), "{err}");
    assert!(err.to_string().contains(&format!("backs loop device {}", upper.path)), "{err}");
    assert!(err.to_string().contains(&format!("losetup --detach {}", upper.path)), "{err}");
    // The loop device on top is no one's backing: it may be claimed.
    claim(&Root::system(), &upper.path).expect("nothing reads from the upper loop device");
    drop(upper);
    // `losetup --detach` of a device someone still has open (udev's probe, another test's
    // blkid) only marks it to be cleared on its last close: the backing goes within moments,
    // not at once. Bounded: 10 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match claim(&Root::system(), &dev.path) {
            Ok(_) => break,
            Err(err)
                if err.rule() == Some("no loop device on it") && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Err(err) => panic!("once detached, the device is free again: {err:?}"),
        }
    }
}

#[test]
fn a_device_another_program_holds_exclusively_is_busy() {
    let dev = LoopDevice::new(SIZE);
    let _other =
        std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_EXCL).open(&dev.path).unwrap();
    let err = claim(&Root::system(), &dev.path).unwrap_err();
    assert_eq!(err.rule(), Some("exclusive open"), "{err}");
    assert!(err.to_string().contains("cannot be opened exclusively"), "{err}");
}

/// The finding the design of the steps rests on: mkfs opens the device O_EXCL itself, so a
/// claim held through the command would make it fail. Steps release their claim just before
/// running the tool (see `pvfs_steps::block`).
#[test]
fn our_claim_keeps_mkfs_out() {
    let dev = LoopDevice::new(SIZE);
    let held = claim(&Root::system(), &dev.path).unwrap();
    let out = std::process::Command::new("mkfs.ext4").args(["-q", &dev.path]).output().unwrap();
    assert!(!out.status.success(), "mkfs.ext4 ran on a claimed device");
    assert!(String::from_utf8_lossy(&out.stderr).contains("apparently in use by the system"));
    drop(held);
    let out = std::process::Command::new("mkfs.ext4").args(["-q", &dev.path]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn reclaiming_another_device_under_the_same_name_is_refused() {
    let (one, two) = (LoopDevice::new(SIZE), LoopDevice::new(SIZE));
    let links = tempfile::tempdir().unwrap();
    let lun = links.path().join("lun0");
    let shown = lun.to_string_lossy().into_owned();
    std::os::unix::fs::symlink(&one.path, &lun).unwrap();
    let was = identify(&Root::system(), &shown).unwrap().dev;
    reclaim(&Root::system(), &shown, was).unwrap();
    // The link now names another disk (a udev rename, a hot-swap): the device assessed is
    // not the one that would be acted on.
    std::fs::remove_file(&lun).unwrap();
    std::os::unix::fs::symlink(&two.path, &lun).unwrap();
    let err = reclaim(&Root::system(), &shown, was).unwrap_err();
    assert_eq!(err.rule(), Some("same device"));
    assert!(err.to_string().contains(&format!("not {was} as when it was assessed")), "{err}");
}

/// What `down --wipe` relies on: a device with a file system and data everywhere `content`
/// looks reads as zeros after `zero`, and a mounted one is refused untouched.
#[test]
fn zero_leaves_a_device_that_proves_empty() {
    let dev = LoopDevice::new(SIZE);
    let root = Root::system();
    let out = std::process::Command::new("mkfs.ext4").args(["-q", &dev.path]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for offset in [SIZE - 32, 64 * MIB + 100] {
        dev.write_at(offset, b"rows of a database, no signature");
    }
    let was = identify(&root, &dev.path).unwrap().dev;
    {
        let _mounted = Mounted::ext4(&dev.path);
        let err = zero(&root, &dev.path, was).unwrap_err();
        assert_eq!(err.rule(), Some("not mounted"), "{err}");
    }
    assert!(matches!(claim(&root, &dev.path).unwrap().content().unwrap(), Content::Data { .. }));
    let written = zero(&root, &dev.path, was).unwrap();
    assert_eq!(written, 2 * MIB + 2 * (64 << 10), "first and last MiB, two signature places");
    assert_eq!(claim(&root, &dev.path).unwrap().content().unwrap(), Content::Zeros);
    let blkid = std::process::Command::new("blkid").args(["-p", &dev.path]).output().unwrap();
    assert_eq!(blkid.status.code(), Some(2), "blkid still finds {}", String::from_utf8_lossy(&blkid.stdout));
}

#[test]
fn zeroing_another_device_under_the_same_name_is_refused() {
    let (one, two) = (LoopDevice::new(SIZE), LoopDevice::new(SIZE));
    let was = identify(&Root::system(), &one.path).unwrap().dev;
    two.write_at(0, b"someone else's");
    let err = zero(&Root::system(), &two.path, was).unwrap_err();
    assert_eq!(err.rule(), Some("same device"), "{err}");
    assert_ne!(claim(&Root::system(), &two.path).unwrap().content().unwrap(), Content::Zeros);
}
