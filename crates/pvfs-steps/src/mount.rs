//! A file system mounted, and listed in /etc/fstab so it comes back after a reboot.
//!
//! What is mounted is read from the kernel (`/proc/self/mountinfo`, `pvfs_host::mountinfo`),
//! never from a tool whose output changed across versions (`findmnt -J` needs util-linux 2.27;
//! EL7's 2.23 exits 1 and prints nothing, which read as "not mounted") and never from mount's
//! exit code alone: `mount -t glusterfs` can print an error, exit 0 and leave nothing mounted
//! (no CAP_SYS_ADMIN, gluster/glusterfs#871), and the verify pass (assess again) reports that
//! as a failure.

use crate::{Action, Assessment, NodeAccess, StepError};
use pvfs_host::mountinfo::{self, MountInfo};
use pvfs_host::{Command, Runner};
use std::fmt;
use std::time::Duration;

/// A FUSE or network mount waits for its servers; a minute is a dead server.
const MOUNT_TIMEOUT: Duration = Duration::from_secs(120);

/// Per-mount flags that `mount -o remount,FLAG` sets on a live mount (mount(8), the VFS
/// flags, which every file system takes on remount). A mount that lacks one its options ask
/// for is remounted, not left as it was: nosuid and nodev are what keep a client mount's
/// remote files from being root here.
const REMOUNT_FLAGS: &[&str] = &["nosuid", "nodev", "noexec"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// A device (`/dev/md0`), or a network source (`10.0.0.5:/dist-vol`, `10.0.0.4@tcp:/LustreFS`).
    pub source: String,
    pub target: String,
    /// As given to `mount -t`: xfs, ext4, lustre, glusterfs, beegfs.
    pub fstype: String,
    pub options: String,
    /// Also keep a matching /etc/fstab line.
    pub fstab: bool,
}

impl Mount {
    fn is_network(&self) -> bool {
        !self.source.starts_with('/')
    }

    /// The fstab line this mount wants.
    pub fn fstab_line(&self) -> String {
        // fsck pass 2 for local file systems, 0 for network ones (nothing to check).
        let pass = if self.is_network() || self.fstype == "lustre" { 0 } else { 2 };
        format!("{} {} {} {} 0 {pass}", self.source, self.target, self.fstype, self.options)
    }

    /// The type the kernel shows for this mount (FUSE mounts are `fuse.SUBTYPE`: `glusterfs` mounts
    /// show as `fuse.glusterfs`).
    fn shown_fstype(&self) -> String {
        match self.fstype.as_str() {
            "glusterfs" => "fuse.glusterfs".into(),
            other => other.into(),
        }
    }

    /// What the kernel shows mounted on the target, if anything (the topmost of stacked
    /// mounts: the one a process sees).
    pub(crate) fn mounted<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Option<MountInfo>, StepError> {
        let mounts = mountinfo::read(&host.root).map_err(|err| StepError::File {
            path: mountinfo::PATH.into(),
            message: format!("cannot tell whether {} is mounted: {err}", self.target),
        })?;
        // The kernel shows the path with links resolved; the target may be named through one.
        let resolved = host.resolve(&self.target);
        Ok(mountinfo::visible_at(&mounts, &self.target)
            .or_else(|| mountinfo::visible_at(&mounts, &resolved))
            .cloned())
    }

    /// Whether what is mounted is this mount: the same type, a whole file system (not a bind
    /// mount of a directory of one), and the same source — for a block device the same device
    /// number (`/dev/disk/by-*` links and LVM's /dev/VG/LV vs /dev/mapper names all resolve to
    /// one), for a network or FUSE source the same export.
    pub(crate) fn is_this<R: Runner>(&self, host: &NodeAccess<R>, m: &MountInfo) -> bool {
        if m.fstype != self.shown_fstype() || !m.is_whole() {
            return false;
        }
        if self.is_network() {
            // Any server of the volume will do (backup-volfile-servers, Lustre's failover
            // MGS NIDs): compare what follows the last ':' (`/gv0`, `/LustreFS`); a source
            // without one (`beegfs_nodev`) compares as text.
            let export = |s: &str| match s.rsplit_once(':') {
                Some((_, e)) => e.trim_start_matches('/').to_owned(),
                None => s.to_owned(),
            };
            return export(&m.source) == export(&self.source);
        }
        // A file system with a device shows its number; those without one (Lustre targets,
        // btrfs) show an anonymous 0:N and the device node as the source.
        if m.dev.major != 0
            && let Ok(id) = pvfs_host::device::identify(&host.root, &self.source)
        {
            return id.dev == m.dev;
        }
        host.resolve(&m.source) == host.resolve(&self.source)
    }

    /// How a mount that is not this one reads in a refusal.
    fn describe(m: &MountInfo) -> String {
        let bind = if m.is_whole() { String::new() } else { format!(", a bind mount of its {}", m.root) };
        let source = if m.source.is_empty() { "a source-less mount" } else { m.source.as_str() };
        format!("{source} ({}{bind})", m.fstype)
    }

    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        if !host.root.is_dir(&self.target) {
            a.change(
                format!("mount point {} does not exist", self.target),
                Action::Mkdir { path: self.target.clone(), mode: 0o755 },
            );
        }
        if self.fstab {
            let old = host.read_optional("/etc/fstab")?.unwrap_or_default();
            let (new, why) = fstab_with(&old, &self.target, &self.fstab_line());
            if let Some(why) = why {
                a.change(why, Action::Write { path: "/etc/fstab".into(), contents: new, mode: 0o644 });
            }
        }
        match self.mounted(host)? {
            Some(m) if self.is_this(host, &m) => {
                // Mounted before its options asked for these (an older pvfs, or by hand): the
                // kernel's per-mount flags change in place, without unmounting anything.
                let have: Vec<&str> = m.options.split(',').collect();
                let missing: Vec<&str> = self
                    .options
                    .split(',')
                    .filter(|o| REMOUNT_FLAGS.contains(o) && !have.contains(o))
                    .collect();
                if !missing.is_empty() {
                    let flags = missing.join(",");
                    a.change(
                        format!("{} is mounted without {flags}", self.target),
                        Action::Run(
                            Command::new("mount")
                                .args(["-o", &format!("remount,{flags}"), "--", &self.target])
                                .timeout(MOUNT_TIMEOUT),
                        ),
                    );
                }
            }
            Some(m) => {
                return Err(StepError::Refused {
                    reason: format!(
                        "{} has {} mounted, not {} ({}); unmount it by hand if it should go",
                        self.target,
                        Self::describe(&m),
                        self.source,
                        self.fstype
                    ),
                });
            }
            None => {
                // Mounting over files hides them (or, on someone's home, shadows it with
                // files another node serves): refused, whoever asks.
                if let Some(entry) = first_entry(host, &self.target) {
                    return Err(crate::PolicyError::new(
                        "mount-target",
                        &self.target,
                        format!("{} is not empty (it holds {entry:?}) and nothing is mounted on it", self.target),
                        "mount only on an empty directory: move its contents away first, or choose another mount point",
                    )
                    .into());
                }
                a.change(
                    format!("{} is not mounted", self.target),
                    // `--`: util-linux mount parses with getopt_long, so neither the source
                    // nor the mount point is read as an option.
                    Action::Run(
                        Command::new("mount")
                            .args(["-t", &self.fstype, "-o", &self.options, "--", &self.source, &self.target])
                            .timeout(MOUNT_TIMEOUT),
                    ),
                );
            }
        }
        Ok(a)
    }
}

impl fmt::Display for Mount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mount {} on {} ({})", self.source, self.target, self.fstype)
    }
}

/// The name of some entry in directory `path`, if it is a directory with anything in it.
fn first_entry<R: Runner>(host: &NodeAccess<R>, path: &str) -> Option<String> {
    let mut entries = std::fs::read_dir(host.root.path(path)).ok()?;
    entries.find_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned())
}

/// fstab with `line` as the only entry for `target`, and why it changed (`None`: unchanged).
/// Comments and other entries are kept as they are.
fn fstab_with(old: &str, target: &str, line: &str) -> (String, Option<String>) {
    let for_target = |l: &str| {
        let l = l.trim();
        !l.starts_with('#') && l.split_whitespace().nth(1) == Some(target)
    };
    let existing: Vec<&str> = old.lines().filter(|l| for_target(l)).collect();
    let same = |l: &str| l.split_whitespace().eq(line.split_whitespace());
    if existing.len() == 1 && same(existing[0]) {
        return (old.to_owned(), None);
    }
    let why = match existing.as_slice() {
        [] => format!("/etc/fstab has no entry for {target}: +{line}"),
        [one] => format!("/etc/fstab entry for {target} differs: -{one} +{line}"),
        many => format!("/etc/fstab has {} entries for {target}; keeping one: +{line}", many.len()),
    };
    let mut lines: Vec<&str> = Vec::new();
    let mut placed = false;
    for l in old.lines() {
        if for_target(l) {
            if !placed {
                lines.push(line);
                placed = true;
            }
        } else {
            lines.push(l);
        }
    }
    if !placed {
        lines.push(line);
    }
    let mut new = lines.join("\n");
    new.push('\n');
    (new, Some(why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outcome, Step, execute};
    use pvfs_host::{CommandError, Output, RecordedRunner, Root};
    use std::path::PathBuf;

    /// The first lines of a real EL7 table (CentOS 7.2, 3.10.0-327: pvfs-host's
    /// testdata/mountinfo/el7-centos7.2.txt, from netdata/netdata#563) and its root file system.
    const EL7: &str = "18 60 0:17 / /sys rw,nosuid,nodev,noexec,relatime shared:6 - sysfs sysfs rw\n\
        19 60 0:3 / /proc rw,nosuid,nodev,noexec,relatime shared:5 - proc proc rw\n\
        20 60 0:5 / /dev rw,nosuid shared:2 - devtmpfs devtmpfs rw,size=241340k,nr_inodes=60335,mode=755\n\
        60 1 253:0 / / rw,relatime shared:1 - xfs /dev/mapper/centos-root rw,seclabel,attr2,inode64,noquota\n";
    /// The gluster client mount as the kernel lists it: type and source as findmnt (which
    /// reads this file) showed them with glusterfs 10.3 (reference/setup-anchors.md §2c).
    const GV0: &str = "87 60 0:45 / /mnt/gv0 rw,nosuid,nodev,relatime shared:71 - fuse.glusterfs 10.254.0.1:/gv0 \
        rw,user_id=0,group_id=0,default_permissions,allow_other,max_read=131072\n";
    const MOUNT: &str = "mount -t glusterfs -o defaults,_netdev,nosuid,nodev -- 10.254.0.1:/gv0 /mnt/gv0";

    /// A node whose `mount` adds `line` to the kernel's table (as a real mount does), or, with
    /// `None`, exits 0 and mounts nothing (mount.glusterfs without CAP_SYS_ADMIN).
    struct Node {
        dir: PathBuf,
        recorded: RecordedRunner,
        line: Option<&'static str>,
    }

    impl Runner for Node {
        async fn run(&self, command: &Command) -> Result<Output, CommandError> {
            let out = self.recorded.run(command).await?;
            if let (Some(line), "mount") = (self.line, command.program.as_str()) {
                let path = self.dir.join("proc/self/mountinfo");
                let table = std::fs::read_to_string(&path).unwrap();
                std::fs::write(path, table + line).unwrap();
            }
            Ok(out)
        }
    }

    fn client() -> Step {
        network("10.254.0.1:/gv0", "glusterfs")
    }

    fn network(source: &str, fstype: &str) -> Step {
        Step::Mount(Mount {
            source: source.into(),
            target: "/mnt/gv0".into(),
            fstype: fstype.into(),
            options: "defaults,_netdev,nosuid,nodev".into(),
            fstab: true,
        })
    }

    fn root(table: &str) -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(dir.path().join("etc/fstab"), "# UNCONFIGURED FSTAB FOR BASE SYSTEM\n").unwrap();
        std::fs::write(dir.path().join("proc/self/mountinfo"), table).unwrap();
        let root = Root::at(dir.path());
        (dir, root)
    }

    async fn run(step: &Step, host: &NodeAccess<impl Runner>, dry_run: bool) -> Outcome {
        execute(step, host, &crate::Unguarded, dry_run, |_| {}).await
    }

    #[tokio::test]
    async fn mounts_writes_fstab_and_then_is_in_sync() {
        let (dir, root) = root(EL7);
        let recorded = RecordedRunner::new().record(MOUNT, 0, "", "");
        let node = Node { dir: dir.path().into(), recorded: recorded.clone(), line: Some(GV0) };
        let host = NodeAccess::new(root, node);
        let Outcome::Changed { diff } = run(&client(), &host, false).await else { panic!() };
        assert_eq!(
            diff,
            [
                "mount point /mnt/gv0 does not exist",
                "/etc/fstab has no entry for /mnt/gv0: +10.254.0.1:/gv0 /mnt/gv0 glusterfs defaults,_netdev,nosuid,nodev 0 0",
                "/mnt/gv0 is not mounted",
            ]
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("etc/fstab")).unwrap(),
            "# UNCONFIGURED FSTAB FOR BASE SYSTEM\n10.254.0.1:/gv0 /mnt/gv0 glusterfs defaults,_netdev,nosuid,nodev 0 0\n"
        );
        assert_eq!(run(&client(), &host, false).await, Outcome::Ok { detail: None });
        assert_eq!(recorded.calls(), [MOUNT], "mounted once, and nothing but the kernel's table probed");
    }

    #[tokio::test]
    async fn a_fuse_mount_that_exits_0_with_nothing_mounted_fails() {
        let (dir, root) = root(EL7);
        // mount.glusterfs without CAP_SYS_ADMIN: an error printed, exit 0, nothing mounted.
        let recorded = RecordedRunner::new().record(
            MOUNT,
            0,
            "",
            "/usr/bin/fusermount-glusterfs: mount failed: Operation not permitted\n",
        );
        let host = NodeAccess::new(root, Node { dir: dir.path().into(), recorded, line: None });
        let Outcome::Failed(failure) = run(&client(), &host, false).await else { panic!() };
        assert_eq!(failure.message, "applied, but the node still differs: /mnt/gv0 is not mounted");
    }

    #[tokio::test]
    async fn something_else_mounted_there_is_refused() {
        for (line, shown) in [
            ("90 60 8:112 / /mnt/gv0 rw,relatime shared:80 - ext4 /dev/sdz rw\n", "/dev/sdz (ext4)"),
            // A bind mount of a directory of the root file system.
            (
                "90 60 253:0 /srv/old /mnt/gv0 rw,relatime shared:1 - xfs /dev/mapper/centos-root rw\n",
                "/dev/mapper/centos-root (xfs, a bind mount of its /srv/old)",
            ),
            // Another volume of the same servers.
            (
                "90 60 0:46 / /mnt/gv0 rw,relatime shared:72 - fuse.glusterfs 10.254.0.1:/gv1 rw\n",
                "10.254.0.1:/gv1 (fuse.glusterfs)",
            ),
        ] {
            let (dir, root) = root(&format!("{EL7}{line}"));
            std::fs::create_dir_all(dir.path().join("mnt/gv0")).unwrap();
            let host = NodeAccess::new(root, RecordedRunner::new());
            let Outcome::Failed(failure) = run(&client(), &host, true).await else { panic!() };
            assert!(
                failure.message.contains(&format!("/mnt/gv0 has {shown} mounted")),
                "{}",
                failure.message
            );
        }
    }

    #[tokio::test]
    async fn the_mount_on_top_is_the_one_judged() {
        // The volume mounted over a local file system on the same directory: in sync. The
        // other way round (something mounted over the volume): refused.
        let under = "90 60 8:112 / /mnt/gv0 rw,relatime shared:80 - ext4 /dev/sdz rw\n";
        let over = "91 87 8:112 / /mnt/gv0 rw,relatime shared:80 - ext4 /dev/sdz rw\n";
        let top = GV0.replacen("87 60", "87 90", 1);
        let (dir, root) = root(&format!("{EL7}{under}{top}"));
        std::fs::create_dir_all(dir.path().join("mnt/gv0")).unwrap();
        std::fs::write(
            dir.path().join("etc/fstab"),
            "10.254.0.1:/gv0 /mnt/gv0 glusterfs defaults,_netdev,nosuid,nodev 0 0\n",
        )
        .unwrap();
        let host = NodeAccess::new(root, RecordedRunner::new());
        assert_eq!(run(&client(), &host, true).await, Outcome::Ok { detail: None });

        std::fs::write(dir.path().join("proc/self/mountinfo"), format!("{EL7}{GV0}{over}")).unwrap();
        let Outcome::Failed(failure) = run(&client(), &host, true).await else { panic!() };
        assert!(failure.message.contains("/mnt/gv0 has /dev/sdz (ext4) mounted"), "{}", failure.message);
    }

    #[tokio::test]
    async fn a_stale_entry_for_a_removed_directory_is_not_a_mount() {
        // The directory was removed under a mount: the kernel keeps the entry, " (deleted)"
        // appended, and /mnt/gv0 is a fresh directory with nothing mounted on it.
        let stale = GV0.replace(" /mnt/gv0 ", " /mnt/gv0\\040(deleted) ");
        let (_dir, root) = root(&format!("{EL7}{stale}"));
        let host = NodeAccess::new(root, RecordedRunner::new());
        let Outcome::WouldChange { diff, .. } = run(&client(), &host, true).await else { panic!() };
        assert!(diff.contains(&"/mnt/gv0 is not mounted".to_owned()), "{diff:?}");
    }

    #[tokio::test]
    async fn network_sources_compare_by_export_and_type() {
        // Lustre clients list every MGS NID; BeeGFS mounts have no source but `beegfs_nodev`.
        for (step, line) in [
            (
                network("10.0.0.4@tcp:10.0.0.5@tcp:/LustreFS", "lustre"),
                "90 60 0:52 / /mnt/gv0 rw,nosuid,nodev,relatime shared:80 - lustre 10.0.0.4@tcp:10.0.0.5@tcp:/LustreFS rw,flock,lazystatfs\n",
            ),
            (
                network("beegfs_nodev", "beegfs"),
                "90 60 0:52 / /mnt/gv0 rw,nosuid,nodev,relatime shared:80 - beegfs beegfs_nodev rw,cfgFile=/etc/beegfs/beegfs-client.conf\n",
            ),
            (
                // A backup volfile server answered the mount; same volume.
                client(),
                "90 60 0:52 / /mnt/gv0 rw,nosuid,nodev,relatime shared:80 - fuse.glusterfs 10.254.0.2:/gv0 rw\n",
            ),
        ] {
            let (dir, root) = root(&format!("{EL7}{line}"));
            std::fs::create_dir_all(dir.path().join("mnt/gv0")).unwrap();
            let host = NodeAccess::new(root, RecordedRunner::new());
            let Outcome::WouldChange { diff, .. } = run(&step, &host, true).await else { panic!("{step}") };
            assert_eq!(diff.len(), 1, "only the fstab line: {diff:?}");
            assert!(diff[0].starts_with("/etc/fstab has no entry"), "{diff:?}");
        }
        // A plain directory where a BeeGFS mount should be is not one.
        let (dir, root) = root(EL7);
        std::fs::create_dir_all(dir.path().join("mnt/gv0")).unwrap();
        let host = NodeAccess::new(root, RecordedRunner::new());
        let Outcome::WouldChange { diff, .. } = run(&network("beegfs_nodev", "beegfs"), &host, true).await
        else {
            panic!()
        };
        assert!(diff.contains(&"/mnt/gv0 is not mounted".to_owned()), "{diff:?}");
    }

    /// A client mount made before its options said nosuid,nodev (an older pvfs, or by hand)
    /// is remounted with them, in place: its remote files must not be setuid or devices here.
    #[tokio::test]
    async fn a_mount_without_the_flags_it_asks_for_is_remounted_with_them() {
        let old = "87 60 0:45 / /mnt/gv0 rw,relatime shared:71 - fuse.glusterfs 10.254.0.1:/gv0 rw\n";
        let (dir, root) = root(&format!("{EL7}{old}"));
        std::fs::create_dir_all(dir.path().join("mnt/gv0")).unwrap();
        let remount = "mount -o remount,nosuid,nodev -- /mnt/gv0";
        let recorded = RecordedRunner::new().record(remount, 0, "", "");
        let host = NodeAccess::new(root, recorded.clone());
        let Outcome::WouldChange { diff, .. } = run(&client(), &host, true).await else { panic!() };
        assert!(diff.contains(&"/mnt/gv0 is mounted without nosuid,nodev".to_owned()), "{diff:?}");
        // Applied: the remount runs, and nothing is unmounted or mounted anew.
        let _ = run(&client(), &host, false).await;
        assert_eq!(recorded.calls(), [remount]);
    }

    #[tokio::test]
    async fn a_lustre_target_matches_by_its_device_node() {
        // Lustre targets have no st_dev of their own (0:N); the source is the device node.
        let step = Step::Mount(Mount {
            source: "/dev/md0".into(),
            target: "/mnt/gv0".into(),
            fstype: "lustre".into(),
            options: "defaults,_netdev".into(),
            fstab: false,
        });
        let (dir, root) = root(&format!(
            "{EL7}90 60 0:52 / /mnt/gv0 ro,relatime shared:80 - lustre /dev/md0 ro,svname=LustreFS-OST0000,mgsnode=10.0.0.4@tcp,osd=osd-ldiskfs\n"
        ));
        std::fs::create_dir_all(dir.path().join("mnt/gv0")).unwrap();
        let host = NodeAccess::new(root, RecordedRunner::new());
        assert_eq!(run(&step, &host, true).await, Outcome::Ok { detail: None });
    }

    #[tokio::test]
    async fn a_block_device_matches_by_device_number_whatever_its_name() {
        // The cluster file names the disk by a stable link; the kernel lists the node it
        // resolved to (as LVM volumes named /dev/VG/LV show as /dev/mapper/VG-LV).
        use std::os::unix::fs::MetadataExt;
        let disk = pvfs_host::testing::LoopDevice::new(1 << 20);
        let node = pvfs_host::testing::DeviceRoot::new();
        node.link("/dev/disk/by-id/lun0", &disk.path);
        let rdev = std::fs::metadata(&disk.path).unwrap().rdev();
        let (major, minor) = (nix::sys::stat::major(rdev), nix::sys::stat::minor(rdev));
        let dir = node.dir.path();
        // The kernel's table of this test, not the machine's: /proc is a directory here.
        std::fs::remove_file(dir.join("proc")).unwrap();
        std::fs::create_dir_all(dir.join("proc/self")).unwrap();
        std::fs::create_dir_all(dir.join("mnt/gv0")).unwrap();
        let step = Step::Mount(Mount {
            source: "/dev/disk/by-id/lun0".into(),
            target: "/mnt/gv0".into(),
            fstype: "xfs".into(),
            options: "defaults".into(),
            fstab: false,
        });
        let host = NodeAccess::new(node.root(), RecordedRunner::new());
        for (dev, outcome_ok) in
            [(format!("{major}:{minor}"), true), (format!("{major}:{}", minor + 1), false)]
        {
            let line = format!(
                "90 60 {dev} / /mnt/gv0 rw,relatime shared:80 - xfs {} rw,attr2,inode64,noquota\n",
                disk.path
            );
            std::fs::write(dir.join("proc/self/mountinfo"), format!("{EL7}{line}")).unwrap();
            let outcome = run(&step, &host, true).await;
            if outcome_ok {
                assert_eq!(outcome, Outcome::Ok { detail: None });
            } else {
                let Outcome::Failed(failure) = outcome else { panic!("{outcome:?}") };
                assert!(failure.message.contains("/mnt/gv0 has"), "{}", failure.message);
            }
        }
    }

    #[tokio::test]
    async fn a_table_the_agent_cannot_read_is_a_failure_not_unmounted() {
        let (_dir, root) = root(&format!("{EL7}garbage\n"));
        let host = NodeAccess::new(root, RecordedRunner::new());
        let Outcome::Failed(failure) = run(&client(), &host, true).await else { panic!() };
        assert!(
            failure.message.starts_with(
                "/proc/self/mountinfo: cannot tell whether /mnt/gv0 is mounted: /proc/self/mountinfo line 5"
            ),
            "{}",
            failure.message
        );
    }

    #[tokio::test]
    async fn a_mount_onto_a_non_empty_directory_is_refused() {
        let (dir, root) = root(EL7);
        std::fs::create_dir_all(dir.path().join("mnt/gv0")).unwrap();
        std::fs::write(dir.path().join("mnt/gv0/notes.txt"), "mine").unwrap();
        let host = NodeAccess::new(root, RecordedRunner::new());
        let Outcome::Failed(failure) = run(&client(), &host, false).await else { panic!() };
        assert!(
            failure.message.starts_with(
                "refused by policy rule `mount-target`: /mnt/gv0 is not empty (it holds \"notes.txt\")"
            ),
            "{}",
            failure.message
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("etc/fstab")).unwrap(),
            "# UNCONFIGURED FSTAB FOR BASE SYSTEM\n",
            "nothing was written"
        );
    }

    /// Bug 8: in a plan, a step after one that would change used to have any failure relabeled
    /// "pending", a refusal too. A refusal is about what the node holds now: it stays one.
    #[tokio::test]
    async fn a_refusal_after_a_pending_change_stays_a_refusal_in_a_plan() {
        let other = "90 60 8:112 / /mnt/gv0 rw,relatime shared:80 - ext4 /dev/sdz rw\n";
        let (dir, root) = root(&format!("{EL7}{other}"));
        std::fs::create_dir_all(dir.path().join("mnt/gv0")).unwrap();
        let first = Step::Mount(Mount {
            source: "10.254.0.1:/gv1".into(),
            target: "/mnt/gv1".into(),
            fstype: "glusterfs".into(),
            options: "defaults,_netdev,nosuid,nodev".into(),
            fstab: false,
        });
        // A queue of a device an earlier step would make: that one may well be pending.
        let later = Step::BlockQueue(crate::BlockQueue {
            device: "/dev/md0".into(),
            members: vec![],
            scheduler: None,
            nr_requests: None,
            read_ahead_kb: Some(4096),
        });
        let host = NodeAccess::new(root, RecordedRunner::new());
        for (steps, want_refusal) in [(vec![first.clone(), client()], true), (vec![first, later], false)] {
            let mut outcomes = Vec::new();
            let summary = crate::run_unit(
                &steps,
                &host,
                &crate::Unguarded,
                true,
                false,
                |e| {
                    if let crate::StepEvent::Done { outcome, .. } = e {
                        outcomes.push(outcome);
                    }
                },
                || true,
            )
            .await;
            assert!(matches!(outcomes[0], Outcome::WouldChange { .. }), "{outcomes:?}");
            if want_refusal {
                let Outcome::Failed(failure) = &outcomes[1] else { panic!("{outcomes:?}") };
                assert!(failure.refused, "{failure:?}");
                assert!(
                    failure.message.starts_with("refusing: /mnt/gv0 has /dev/sdz (ext4) mounted"),
                    "{failure:?}"
                );
                assert_eq!((summary.failed, summary.pending), (1, 0));
            } else {
                assert!(
                    matches!(&outcomes[1], Outcome::Pending { detail } if detail.contains("no queue settings"))
                );
                assert_eq!((summary.failed, summary.pending), (0, 1));
            }
        }
    }

    #[test]
    fn fstab_entries_are_replaced_in_place_and_deduplicated() {
        let old = "# comment\n/dev/md0 /rhs/brick1 xfs defaults 0 2\nproc /proc proc defaults 0 0\n/dev/md0 /rhs/brick1 xfs rw 0 2\n";
        let line = "/dev/rhgs-data/brick1 /rhs/brick1 xfs defaults,inode64,noatime,nouuid 0 2";
        let (new, why) = fstab_with(old, "/rhs/brick1", line);
        assert_eq!(new, format!("# comment\n{line}\nproc /proc proc defaults 0 0\n"));
        assert!(why.unwrap().contains("2 entries"));
        let (again, why) = fstab_with(&new, "/rhs/brick1", line);
        assert_eq!((again, why), (new, None));
    }

    /// A node whose `mount -t lustre` logs `kernel` to its kernel log (/dev/kmsg under the
    /// root) and fails as mount.lustre does when the MGS cannot give the configuration.
    struct LustreNode {
        dir: PathBuf,
        kernel: String,
    }

    impl Runner for LustreNode {
        async fn run(&self, command: &Command) -> Result<Output, CommandError> {
            assert_eq!(command.program, "mount");
            let log = self.dir.join("dev/kmsg");
            let old = std::fs::read_to_string(&log).unwrap();
            std::fs::write(log, old + &self.kernel).unwrap();
            Ok(Output {
                code: Some(5),
                stdout: String::new(),
                stderr: "mount.lustre: mount 172.31.84.120@tcp:/jxlwlxxv at /mnt/gv0 failed: Input/output error\nIs the MGS running?\n".into(),
            })
        }
    }

    #[tokio::test]
    async fn a_failed_lustre_mount_shows_what_the_kernel_logged_during_it_and_what_it_means() {
        let (dir, root) = root(EL7);
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        std::fs::create_dir_all(dir.path().join("mnt/gv0")).unwrap();
        // An earlier failure's line is in the log already: it is not this mount's cause.
        std::fs::write(dir.path().join("dev/kmsg"), "3,900,100,-;LustreError: an earlier mount: rc = -2\n")
            .unwrap();
        let fixture = format!("{}/testdata/kmsg/al2023-client-eio.txt", env!("CARGO_MANIFEST_DIR"));
        let kernel: String = std::fs::read_to_string(fixture)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        let host = NodeAccess::new(root, LustreNode { dir: dir.path().into(), kernel });
        let step = Step::Mount(Mount {
            source: "172.31.84.120@tcp:/jxlwlxxv".into(),
            target: "/mnt/gv0".into(),
            fstype: "lustre".into(),
            options: "flock,nosuid,nodev".into(),
            fstab: false,
        });
        let Outcome::Failed(failure) = run(&step, &host, false).await else { panic!() };
        let message = failure.message;
        assert!(message.contains("Is the MGS running?"), "{message}");
        assert!(message.contains("could not be read from the MGS (-5, EIO)"), "{message}");
        assert!(message.contains("Confguration from log jxlwlxxv-client failed from MGS -5"), "{message}");
        assert!(!message.contains("an earlier mount"), "{message}");
    }
}
