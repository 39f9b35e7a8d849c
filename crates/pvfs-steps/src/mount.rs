//! A file system mounted, and listed in /etc/fstab so it comes back after a reboot.
//!
//! Mounted-ness is read from `findmnt` after every mount, never from mount's exit code alone:
//! `mount -t glusterfs` can print an error, exit 0 and leave nothing mounted (no CAP_SYS_ADMIN,
//! gluster/glusterfs#871), and the verify pass (assess again) reports that as a failure.

use crate::{Action, Assessment, Host, StepError};
use pvfs_host::{Command, Runner};
use std::fmt;
use std::time::Duration;

/// A FUSE or network mount waits for its servers; a minute is a dead server.
const MOUNT_TIMEOUT: Duration = Duration::from_secs(120);

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

/// What findmnt says is mounted at a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mounted {
    pub(crate) source: String,
    pub(crate) fstype: String,
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

    /// The type findmnt reports for this mount (`glusterfs` mounts show as `fuse.glusterfs`).
    fn shown_fstype(&self) -> String {
        match self.fstype.as_str() {
            "glusterfs" => "fuse.glusterfs".into(),
            other => other.into(),
        }
    }

    pub(crate) async fn mounted<R: Runner>(&self, host: &Host<R>) -> Result<Option<Mounted>, StepError> {
        let command = Command::new("findmnt").args([
            "-J",
            "-o",
            "TARGET,SOURCE,FSTYPE,OPTIONS",
            "--mountpoint",
            &self.target,
        ]);
        let shown = command.to_string();
        let out = host.probe(command).await?;
        // findmnt exits 1 with no output when nothing is mounted there.
        if out.code == Some(1) && out.stdout.trim().is_empty() {
            return Ok(None);
        }
        if !out.success() {
            return Err(StepError::Command {
                command: shown,
                code: out.code,
                stderr: crate::error_tail(&out),
                hint: None,
            });
        }
        let json: serde_json::Value = serde_json::from_str(&out.stdout)
            .map_err(|e| StepError::Unexpected { command: shown.clone(), message: e.to_string() })?;
        // With several mounts stacked on one directory, the last is the one visible.
        let fs = json["filesystems"]
            .as_array()
            .and_then(|a| a.last())
            .ok_or_else(|| StepError::Unexpected { command: shown, message: "no filesystems[]".into() })?;
        let text = |k: &str| fs[k].as_str().unwrap_or_default().to_owned();
        Ok(Some(Mounted { source: text("source"), fstype: text("fstype") }))
    }

    /// Whether what is mounted is this mount: same type, and the same device (after
    /// resolving links: LVM volumes show as /dev/mapper/…) or the same network export.
    pub(crate) fn is_this<R: Runner>(&self, host: &Host<R>, m: &Mounted) -> bool {
        if m.fstype != self.shown_fstype() {
            return false;
        }
        if self.is_network() {
            // Any server of the volume will do (backup-volfile-servers): compare the export.
            let export = |s: &str| s.rsplit_once(':').map(|(_, e)| e.trim_start_matches('/').to_owned());
            export(&m.source) == export(&self.source)
        } else {
            host.resolve(&m.source) == host.resolve(&self.source)
        }
    }

    pub(crate) async fn assess<R: Runner>(&self, host: &Host<R>) -> Result<Assessment, StepError> {
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
        match self.mounted(host).await? {
            Some(m) if self.is_this(host, &m) => {}
            Some(m) => {
                return Err(StepError::Refused {
                    reason: format!(
                        "{} has {} ({}) mounted, not {} ({}); unmount it by hand if it should go",
                        self.target, m.source, m.fstype, self.source, self.fstype
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
                    Action::Run(
                        Command::new("mount")
                            .args(["-t", &self.fstype, "-o", &self.options, &self.source, &self.target])
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
fn first_entry<R: Runner>(host: &Host<R>, path: &str) -> Option<String> {
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
    use pvfs_host::{RecordedRunner, Root};

    const FINDMNT: &str = "findmnt -J -o TARGET,SOURCE,FSTYPE,OPTIONS --mountpoint /mnt/gv0";
    /// Recorded with glusterfs 10.3 (reference/setup-anchors.md §2c).
    const MOUNTED: &str = r#"{"filesystems":[{"target":"/mnt/gv0","source":"10.254.0.1:/gv0","fstype":"fuse.glusterfs","options":"rw,relatime,user_id=0,group_id=0,default_permissions,allow_other,max_read=131072"}]}"#;
    const MOUNT: &str = "mount -t glusterfs -o defaults,_netdev 10.254.0.1:/gv0 /mnt/gv0";

    fn client() -> Step {
        Step::Mount(Mount {
            source: "10.254.0.1:/gv0".into(),
            target: "/mnt/gv0".into(),
            fstype: "glusterfs".into(),
            options: "defaults,_netdev".into(),
            fstab: true,
        })
    }

    fn root() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::write(dir.path().join("etc/fstab"), "# UNCONFIGURED FSTAB FOR BASE SYSTEM\n").unwrap();
        let root = Root::at(dir.path());
        (dir, root)
    }

    #[tokio::test]
    async fn mounts_writes_fstab_and_then_is_in_sync() {
        let (dir, root) = root();
        let runner = RecordedRunner::new()
            .record(FINDMNT, 1, "", "")
            .record(MOUNT, 0, "", "")
            .record(FINDMNT, 0, MOUNTED, "");
        let host = Host::new(root, runner.clone());
        let Outcome::Changed { diff } =
            execute(&client(), &host, &crate::Policy::default(), false, |_| {}).await
        else {
            panic!()
        };
        assert_eq!(
            diff,
            [
                "mount point /mnt/gv0 does not exist",
                "/etc/fstab has no entry for /mnt/gv0: +10.254.0.1:/gv0 /mnt/gv0 glusterfs defaults,_netdev 0 0",
                "/mnt/gv0 is not mounted",
            ]
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("etc/fstab")).unwrap(),
            "# UNCONFIGURED FSTAB FOR BASE SYSTEM\n10.254.0.1:/gv0 /mnt/gv0 glusterfs defaults,_netdev 0 0\n"
        );
        assert_eq!(
            execute(&client(), &host, &crate::Policy::default(), false, |_| {}).await,
            Outcome::Ok { detail: None }
        );
        assert_eq!(runner.calls().iter().filter(|c| c.starts_with("mount ")).count(), 1, "mounted once");
    }

    #[tokio::test]
    async fn a_fuse_mount_that_exits_0_with_nothing_mounted_fails() {
        let (_dir, root) = root();
        // mount.glusterfs without CAP_SYS_ADMIN: an error printed, exit 0, nothing mounted.
        let runner = RecordedRunner::new().record(FINDMNT, 1, "", "").record(
            MOUNT,
            0,
            "",
            "/usr/bin/fusermount-glusterfs: mount failed: Operation not permitted\n",
        );
        let host = Host::new(root, runner);
        let Outcome::Failed(failure) =
            execute(&client(), &host, &crate::Policy::default(), false, |_| {}).await
        else {
            panic!()
        };
        assert_eq!(failure.message, "applied, but the node still differs: /mnt/gv0 is not mounted");
    }

    #[tokio::test]
    async fn something_else_mounted_there_is_refused() {
        let (dir, root) = root();
        std::fs::create_dir_all(dir.path().join("mnt/gv0")).unwrap();
        let other =
            r#"{"filesystems":[{"target":"/mnt/gv0","source":"/dev/sdz","fstype":"ext4","options":"rw"}]}"#;
        let host = Host::new(root, RecordedRunner::new().record(FINDMNT, 0, other, ""));
        let Outcome::Failed(failure) =
            execute(&client(), &host, &crate::Policy::default(), true, |_| {}).await
        else {
            panic!()
        };
        assert!(failure.message.contains("/mnt/gv0 has /dev/sdz (ext4) mounted"), "{}", failure.message);
    }

    #[tokio::test]
    async fn a_mount_onto_a_non_empty_directory_is_refused() {
        let (dir, root) = root();
        std::fs::create_dir_all(dir.path().join("mnt/gv0")).unwrap();
        std::fs::write(dir.path().join("mnt/gv0/notes.txt"), "mine").unwrap();
        let host = Host::new(root, RecordedRunner::new().record(FINDMNT, 1, "", ""));
        let Outcome::Failed(failure) =
            execute(&client(), &host, &crate::Policy::default(), false, |_| {}).await
        else {
            panic!()
        };
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
}
