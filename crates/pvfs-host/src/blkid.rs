//! `blkid -p`: what is on a block device, proven rather than assumed.
//!
//! Both node facts and the destructive steps (mkfs, mdadm --create, pvcreate) ask this, so the
//! rule for "empty" lives in one place.

use crate::{Command, Root, Runner};
use std::collections::BTreeMap;
use std::time::Duration;

/// `blkid -p` reads a few superblock locations; seconds mean a sick device.
const BLKID_TIMEOUT: Duration = Duration::from_secs(10);

/// What `blkid -p -o export` found on a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// blkid exited 2 with nothing on stderr for a device node that exists: no file system,
    /// RAID member, LVM PV or partition table.
    Empty,
    /// The `KEY=value` pairs blkid printed (`TYPE`, `LABEL`, `UUID`, `PTTYPE`, …).
    Found(BTreeMap<String, String>),
    /// Not proven either way (no device node, permission denied, blkid missing); never treat
    /// this as empty.
    Unknown(String),
}

impl Probe {
    /// `TYPE` (or `PTTYPE` for a partition table), e.g. `xfs`, `linux_raid_member`, `gpt`.
    pub fn kind(&self) -> Option<&str> {
        match self {
            Probe::Found(fields) => {
                Some(fields.get("TYPE").or_else(|| fields.get("PTTYPE")).map_or("unknown", String::as_str))
            }
            _ => None,
        }
    }

    /// One field blkid printed.
    pub fn field(&self, key: &str) -> Option<&str> {
        match self {
            Probe::Found(fields) => fields.get(key).map(String::as_str),
            _ => None,
        }
    }

    /// A short description for messages: `xfs (LABEL=brick1)`.
    pub fn describe(&self) -> String {
        match self {
            Probe::Empty => "nothing (no signature)".into(),
            Probe::Found(_) => match self.field("LABEL") {
                Some(label) => format!("{} (LABEL={label})", self.kind().unwrap_or("unknown")),
                None => self.kind().unwrap_or("unknown").to_owned(),
            },
            Probe::Unknown(detail) => format!("unknown ({detail})"),
        }
    }
}

/// Asks `blkid -p` (low-level superblock probe, no cache) what is on `path`.
///
/// blkid exits 2 both for "nothing found" and for "could not open the device" (it prints the
/// reason on stderr in the second case, and nothing at all for a missing node), so only a
/// silent exit 2 on an existing device node counts as empty.
pub async fn probe(root: &Root, runner: &impl Runner, path: &str) -> Probe {
    if !root.exists(path) {
        return Probe::Unknown(format!("no device node {path} here"));
    }
    let command = Command::new("blkid").args(["-p", "-o", "export", path]).timeout(BLKID_TIMEOUT);
    let output = match runner.run(&command).await {
        Ok(output) => output,
        Err(err) => return Probe::Unknown(err.to_string()),
    };
    match output.code {
        Some(2) if output.stderr.trim().is_empty() => Probe::Empty,
        Some(0) => Probe::Found(
            output
                .stdout
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        ),
        _ => Probe::Unknown(format!("`{command}` exited {:?}: {}", output.code, output.stderr_tail(1))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RecordedRunner;

    fn root_with(dev: &str) -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        std::fs::write(dir.path().join(dev.trim_start_matches('/')), "").unwrap();
        let root = Root::at(dir.path());
        (dir, root)
    }

    #[tokio::test]
    async fn silent_exit_2_is_empty_and_anything_else_is_not() {
        let (_dir, root) = root_with("/dev/loop0");
        let runner = RecordedRunner::new().record("blkid -p -o export /dev/loop0", 2, "", "");
        assert_eq!(probe(&root, &runner, "/dev/loop0").await, Probe::Empty);

        // Recorded on this machine without read permission on the device.
        let runner = RecordedRunner::new().record(
            "blkid -p -o export /dev/loop0",
            2,
            "",
            "blkid: error: /dev/loop0: Permission denied\n",
        );
        assert!(matches!(probe(&root, &runner, "/dev/loop0").await, Probe::Unknown(_)));
        assert!(
            matches!(probe(&root, &runner, "/dev/sdz").await, Probe::Unknown(d) if d.contains("no device node"))
        );
    }

    #[tokio::test]
    async fn fields_are_kept() {
        let (_dir, root) = root_with("/dev/loop0");
        // Verified output after mkfs.xfs -L brick1 (reference/setup-anchors.md).
        let out = "DEVNAME=/dev/loop0\nLABEL=brick1\nUUID=4c1d\nBLOCK_SIZE=512\nTYPE=xfs\nUSAGE=filesystem\n";
        let runner = RecordedRunner::new().record("blkid -p -o export /dev/loop0", 0, out, "");
        let found = probe(&root, &runner, "/dev/loop0").await;
        assert_eq!(found.kind(), Some("xfs"));
        assert_eq!(found.field("LABEL"), Some("brick1"));
        assert_eq!(found.describe(), "xfs (LABEL=brick1)");
    }
}
