//! Real block devices for tests: loop devices over sparse files, and mounts and swap on them,
//! each undone when its guard drops (also when the test fails).
//!
//! These need root (CI runs the workspace's tests as root) and a kernel with loop devices.
//! Nothing here skips quietly: without them a test fails, saying so.

use std::path::PathBuf;
use std::process::Command;

/// Runs a tool a test needs, panicking with its stderr when it fails.
fn run(program: &str, args: &[&str]) -> String {
    let out =
        Command::new(program).args(args).env("LC_ALL", "C").output().unwrap_or_else(|err| {
            panic!("cannot run {program}: {err} (tests of real devices need util-linux)")
        });
    assert!(
        out.status.success(),
        "`{program} {}` failed: {} (tests of real devices run as root, as CI does)",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A loop device over a sparse (all zeros) file, detached on drop.
#[derive(Debug)]
pub struct LoopDevice {
    /// `/dev/loopN`.
    pub path: String,
    /// The directory of its backing file; none when it reads from another device.
    _backing: Option<tempfile::TempDir>,
}

impl LoopDevice {
    /// A new loop device of `size` bytes reading as zeros.
    pub fn new(size: u64) -> LoopDevice {
        let backing =
            tempfile::Builder::new().prefix("pvfs-loop-").tempdir().expect("a temp dir for a loop file");
        let file = backing.path().join("disk.img");
        std::fs::File::create(&file).and_then(|f| f.set_len(size)).expect("a sparse backing file");
        // --find --show picks a free device and attaches in one step; util-linux retries when
        // another process takes the same device first (tests run in parallel).
        let path = run("losetup", &["--find", "--show", &file.to_string_lossy()]).trim().to_owned();
        LoopDevice { path, _backing: Some(backing) }
    }

    /// A loop device that reads from the block device `device` (`losetup -f /dev/loop3`).
    pub fn over(device: &str) -> LoopDevice {
        let path = run("losetup", &["--find", "--show", device]).trim().to_owned();
        LoopDevice { path, _backing: None }
    }

    /// Writes `bytes` at `offset` through the device (not the backing file: the device's own
    /// page cache must see it) and syncs.
    pub fn write_at(&self, offset: u64, bytes: &[u8]) {
        use std::os::unix::fs::FileExt;
        let file = std::fs::OpenOptions::new().write(true).open(&self.path).expect("the loop device opens");
        file.write_all_at(bytes, offset).expect("written");
        file.sync_all().expect("synced");
    }

    /// A fingerprint of every byte of the device (std's SipHash, fixed keys): equal before
    /// and after shows the device was left as it was.
    pub fn checksum(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        use std::io::Read;
        let mut file = std::fs::File::open(&self.path).expect("the loop device opens");
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buf).expect("the loop device reads");
            if n == 0 {
                break;
            }
            buf[..n].hash(&mut hasher);
        }
        hasher.finish()
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        // Not `run`: a panic in drop during a failing test would abort and hide the failure.
        let _ = Command::new("losetup").args(["--detach", &self.path]).status();
    }
}

/// A file system mounted for a test, unmounted on drop. Declare it after the device it is on,
/// so it drops first.
#[derive(Debug)]
pub struct Mounted {
    pub target: PathBuf,
    _dir: tempfile::TempDir,
}

impl Mounted {
    /// Makes an ext4 file system on `device` and mounts it, read-only, on a new temp dir.
    /// Read-only so that nothing writes to the device while it is mounted or when it is
    /// unmounted (a read-write ext4 updates its superblock and journal): tests compare the
    /// device's checksum before and after. For the kernel it is mounted all the same.
    pub fn ext4(device: &str) -> Mounted {
        run("mkfs.ext4", &["-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", device]);
        let dir = tempfile::Builder::new().prefix("pvfs-mnt-").tempdir().expect("a mount point");
        run("mount", &["-o", "ro", device, &dir.path().to_string_lossy()]);
        Mounted { target: dir.path().to_owned(), _dir: dir }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.target).status();
    }
}

/// Swap active on a device, turned off on drop.
#[derive(Debug)]
pub struct Swap {
    pub device: String,
}

impl Swap {
    /// `mkswap` and `swapon` on `device`.
    pub fn on(device: &str) -> Swap {
        run("mkswap", &[device]);
        run("swapon", &[device]);
        Swap { device: device.to_owned() }
    }
}

impl Drop for Swap {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.device).status();
    }
}

/// A test root whose `/dev/NAME`s are links to real devices, with the machine's `/proc` and,
/// of `/sys`, only what the device rules read about those devices (`/sys/dev/block/MAJ:MIN`
/// and `/sys/class/block/NAME`): step tests name devices as a cluster file would
/// (`/dev/sdc`) while every device check runs against the real kernel, and nothing else of
/// the machine's sysfs (queue settings, md state) leaks into the test.
#[derive(Debug)]
pub struct DeviceRoot {
    pub dir: tempfile::TempDir,
}

impl DeviceRoot {
    pub fn new() -> DeviceRoot {
        let dir = tempfile::tempdir().expect("a temp root");
        std::os::unix::fs::symlink("/proc", dir.path().join("proc")).expect("a link to /proc");
        for sub in ["dev", "sys/dev/block", "sys/class/block"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("the root's directories");
        }
        DeviceRoot { dir }
    }

    /// Makes `name` (e.g. `/dev/sdc`) under the root a link to the real device `real`, and
    /// shows that device's sysfs entries under the root.
    pub fn link(&self, name: &str, real: &str) {
        let path = self.dir.path().join(name.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("the link's directory");
        std::os::unix::fs::symlink(real, path).expect("a device link");
        self.show_in_sysfs(real);
    }

    /// Makes `name` under the root a device node of its own for the real device `real` (same
    /// major:minor), so the path resolves to itself: the kernel's name is `real`'s, but what
    /// the root calls it (and what steps derive from the name, e.g. `/sys/block/md0`) stays
    /// `name`'s. Needs CAP_MKNOD and a temp dir on a file system without `nodev`.
    pub fn node(&self, name: &str, real: &str) {
        use nix::sys::stat::{Mode, SFlag};
        use std::os::unix::fs::MetadataExt;
        let path = self.dir.path().join(name.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("the node's directory");
        let rdev = std::fs::metadata(real).expect("the real device").rdev();
        nix::sys::stat::mknod(&path, SFlag::S_IFBLK, Mode::from_bits_truncate(0o600), rdev).unwrap_or_else(
            |err| panic!("mknod {}: {err} (tests of real devices run as root)", path.display()),
        );
        self.show_in_sysfs(real);
    }

    fn show_in_sysfs(&self, real: &str) {
        use std::os::unix::fs::MetadataExt;
        let rdev = std::fs::metadata(real).expect("the real device").rdev();
        let dev = format!("{}:{}", nix::sys::stat::major(rdev), nix::sys::stat::minor(rdev));
        let sysfs = std::fs::canonicalize(format!("/sys/dev/block/{dev}")).expect("the device in sysfs");
        let kernel = sysfs.file_name().expect("a kernel name").to_string_lossy().into_owned();
        for (link, target) in [
            (format!("sys/dev/block/{dev}"), sysfs.clone()),
            (format!("sys/class/block/{kernel}"), PathBuf::from(format!("/sys/class/block/{kernel}"))),
        ] {
            let at = self.dir.path().join(link);
            if std::fs::symlink_metadata(&at).is_err() {
                std::os::unix::fs::symlink(target, at).expect("a sysfs link");
            }
        }
    }

    pub fn root(&self) -> crate::Root {
        crate::Root::at(self.dir.path())
    }
}

impl Default for DeviceRoot {
    fn default() -> Self {
        DeviceRoot::new()
    }
}

pub mod fuzz;
