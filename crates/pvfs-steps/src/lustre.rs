//! Lustre targets (MGS, MDT, OST) made with `mkfs.lustre`, recognised with `tunefs.lustre
//! --dryrun`, with their index from the cluster file, never from VM order.
//!
//! Every reference deployment passes `--reformat` on every run (setup-anchors §1); pvfs never
//! does unless the cluster file lists the device for wiping, and a device that already holds
//! the described target is left alone.

use crate::block::{Emptiness, prove_empty};
use crate::{Action, Assessment, NodeAccess, StepError};
use pvfs_host::{Command, Runner};
use std::fmt;
use std::time::Duration;

const MKFS_TIMEOUT: Duration = Duration::from_secs(1800);

/// What the target serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LustreRole {
    /// A combined management and metadata target (the seed's MGSMDS00).
    MgsMdt,
    Mgs,
    Mdt,
    Ost,
}

impl LustreRole {
    /// `Flags:` bits in the target's disk data (lustre_disk.h: LDD_F_SV_TYPE_*).
    fn flags(self) -> u32 {
        match self {
            LustreRole::MgsMdt => 0x1 | 0x4,
            LustreRole::Mgs => 0x4,
            LustreRole::Mdt => 0x1,
            LustreRole::Ost => 0x2,
        }
    }

    fn mkfs_args(self) -> &'static [&'static str] {
        match self {
            LustreRole::MgsMdt => &["--mgs", "--mdt"],
            LustreRole::Mgs => &["--mgs"],
            LustreRole::Mdt => &["--mdt"],
            LustreRole::Ost => &["--ost"],
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LustreRole::MgsMdt => "mgs+mdt",
            LustreRole::Mgs => "mgs",
            LustreRole::Mdt => "mdt",
            LustreRole::Ost => "ost",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LustreTarget {
    pub device: String,
    pub fsname: String,
    pub role: LustreRole,
    pub index: u32,
    /// The MGS's NID(s) (`10.0.0.4@tcp`), for every target but the MGS itself.
    pub mgsnode: Option<String>,
    /// `ldiskfs` (as in the seed) or `zfs`.
    pub backfstype: String,
    pub wipe: bool,
}

/// The fields of `tunefs.lustre --dryrun` pvfs compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DiskData {
    target: String,
    index: Option<u32>,
    fsname: String,
    flags: u32,
}

/// Reads the `Permanent disk data:` block of `tunefs.lustre --dryrun` (print_ldd() in
/// lustre/utils/mkfs_lustre.c).
pub(crate) fn parse_dryrun(text: &str) -> Option<DiskData> {
    let block = text.split("Permanent disk data:").nth(1)?;
    let field = |name: &str| {
        block.lines().find_map(|l| l.trim_start().strip_prefix(name)).map(|v| v.trim().to_owned())
    };
    let flags = field("Flags:")?;
    Some(DiskData {
        target: field("Target:")?,
        index: field("Index:").and_then(|i| i.parse().ok()),
        fsname: field("Lustre FS:")?,
        flags: u32::from_str_radix(flags.trim_start_matches("0x"), 16).ok()?,
    })
}

impl LustreTarget {
    /// `fsname-OST0001`: the name the target registers under.
    pub fn svname(&self) -> String {
        let kind = match self.role {
            LustreRole::Ost => "OST",
            LustreRole::Mgs => return "MGS".into(),
            _ => "MDT",
        };
        format!("{}-{kind}{:04x}", self.fsname, self.index)
    }

    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        // `--` before the device: tunefs.lustre is mkfs_lustre.c built with TUNEFS, and its
        // parse_opts() reads options with plain getopt_long(), then takes the device from
        // argv[optind], so `--` ends the options as in any getopt tool (lustre-release
        // lustre/utils/mkfs_lustre.c, 2.10 to 2.15).
        let probe = Command::new("tunefs.lustre").args(["--dryrun", "--", &self.device]);
        let shown = probe.to_string();
        let out = host.probe(probe).await?;
        if out.success() {
            let data = parse_dryrun(&out.stdout).ok_or_else(|| StepError::Unexpected {
                command: shown,
                message: "no Permanent disk data block".into(),
            })?;
            let role_bits = data.flags & 0x7;
            // A stand-alone MGS serves every file system and has no index: its disk data may
            // say `Lustre FS:` empty and `Index: unassigned` (formatted without --fsname), so
            // only its role is compared.
            let same = role_bits == self.role.flags()
                && (self.role == LustreRole::Mgs
                    || (data.fsname == self.fsname && data.index == Some(self.index)));
            if same {
                return Ok(a);
            }
            return Err(StepError::Refused {
                reason: format!(
                    "{} already holds Lustre target {} (fs {}, index {}), not {} ({}); pvfs never reformats a \
                     Lustre target: fix the cluster file, or reformat by hand if the data may go",
                    self.device,
                    data.target,
                    if data.fsname.is_empty() { "none" } else { &data.fsname },
                    data.index.map_or("unassigned".into(), |i| i.to_string()),
                    self.svname(),
                    self.role.as_str()
                ),
            });
        }
        // Exit 19 (ENODEV): "Device … has not been formatted with mkfs.lustre".
        if !crate::error_tail(&out).contains("has not been formatted with mkfs.lustre")
            && out.code != Some(19)
        {
            return Err(StepError::Command {
                command: shown,
                code: out.code,
                stderr: crate::error_tail(&out),
                hint: None,
            });
        }
        let (force, proven) = prove_empty(host, &self.device, self.wipe, "makes Lustre targets").await?;
        let mut mkfs = Command::new("mkfs.lustre")
            .arg(format!("--fsname={}", self.fsname))
            .arg(format!("--backfstype={}", self.backfstype));
        if let Emptiness::Wipe(_) = force {
            mkfs = mkfs.arg("--reformat");
        }
        mkfs = mkfs.args(self.role.mkfs_args().iter().copied());
        if let Some(mgs) = &self.mgsnode {
            mkfs = mkfs.arg(format!("--mgsnode={mgs}"));
        }
        if self.role != LustreRole::Mgs {
            mkfs = mkfs.arg(format!("--index={}", self.index));
        }
        a.change(
            format!("{} is not a Lustre target; it becomes {}", self.device, self.svname()),
            // `--` before the device, for the reason given at tunefs.lustre above: the same
            // parse_opts(). (main() also refuses a last argument that starts with '-', but
            // only after reading it as the device; `--` makes the intent explicit.)
            Action::Destroy {
                command: mkfs.args(["--", &self.device]).timeout(MKFS_TIMEOUT),
                devices: vec![proven],
            },
        );
        Ok(a)
    }
}

impl fmt::Display for LustreTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lustre {} {} on {}", self.role.as_str(), self.svname(), self.device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_host::testing::{DeviceRoot, LoopDevice};
    use pvfs_host::{RecordedRunner, Root};

    /// print_ldd() output for an OST that has registered (setup-anchors §2b).
    const OST1: &str = "checking for existing Lustre data: found\n\n   Read previous values:\nTarget:     LustreFS-OST0001\nIndex:      1\nLustre FS:  LustreFS\nMount type: ldiskfs\nFlags:      0x2\n              (OST )\nPersistent mount opts: errors=remount-ro\nParameters: mgsnode=10.0.0.4@tcp\n\n\n   Permanent disk data:\nTarget:     LustreFS-OST0001\nIndex:      1\nLustre FS:  LustreFS\nMount type: ldiskfs\nFlags:      0x2\n              (OST )\nPersistent mount opts: errors=remount-ro\nParameters: mgsnode=10.0.0.4@tcp\n\nexiting before disk write.\n";

    fn ost(index: u32, wipe: bool) -> LustreTarget {
        LustreTarget {
            device: "/dev/md0".into(),
            fsname: "LustreFS".into(),
            role: LustreRole::Ost,
            index,
            mgsnode: Some("10.0.0.4@tcp".into()),
            backfstype: "ldiskfs".into(),
            wipe,
        }
    }

    fn host(runner: RecordedRunner) -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        std::fs::write(dir.path().join("dev/md0"), "").unwrap();
        let host = NodeAccess::new(Root::at(dir.path()), runner);
        (dir, host)
    }

    #[tokio::test]
    async fn an_existing_target_with_the_same_index_is_kept_and_another_refused() {
        let (_d, h) = host(RecordedRunner::new().record("tunefs.lustre --dryrun -- /dev/md0", 0, OST1, ""));
        assert!(ost(1, false).assess(&h).await.unwrap().is_in_sync());
        let err = ost(0, true).assess(&h).await.unwrap_err();
        assert!(
            err.to_string().contains(
                "already holds Lustre target LustreFS-OST0001 (fs LustreFS, index 1), not LustreFS-OST0000"
            ),
            "{err}"
        );
    }

    /// `/dev/md0` a link to a real, zeroed loop device (the device rules run for real).
    fn host_on_a_loop(runner: RecordedRunner) -> (DeviceRoot, LoopDevice, NodeAccess<RecordedRunner>) {
        let root = DeviceRoot::new();
        let disk = LoopDevice::new(64 << 20);
        root.link("/dev/md0", &disk.path);
        let host = NodeAccess::new(root.root(), runner);
        (root, disk, host)
    }

    const MGS_2_15: &str = include_str!("../testdata/lustre/ldd-mgs-2.15.txt");

    #[tokio::test]
    async fn a_real_2_15_mgs_block_reads_and_an_mgs_is_kept_whatever_its_fsname() {
        let text: String =
            MGS_2_15.lines().filter(|l| !l.starts_with("# ")).map(|l| format!("{l}\n")).collect();
        assert_eq!(
            parse_dryrun(&text),
            Some(DiskData { target: "MGS".into(), index: None, fsname: String::new(), flags: 0x64 })
        );
        let (_d, h) = host(RecordedRunner::new().record("tunefs.lustre --dryrun -- /dev/md0", 0, &text, ""));
        let mgs = LustreTarget { role: LustreRole::Mgs, mgsnode: None, index: 0, ..ost(0, false) };
        assert!(mgs.assess(&h).await.unwrap().is_in_sync());
        // The same disk is not an MGS+MDT, nor an OST.
        let both = LustreTarget { role: LustreRole::MgsMdt, ..mgs.clone() };
        let err = both.assess(&h).await.unwrap_err();
        assert!(
            err.to_string().contains("already holds Lustre target MGS (fs none, index unassigned)"),
            "{err}"
        );
        assert!(ost(0, true).assess(&h).await.is_err());
    }

    #[tokio::test]
    async fn an_empty_device_is_formatted_without_reformat() {
        let runner = RecordedRunner::new()
            .record(
                "tunefs.lustre --dryrun -- /dev/md0",
                19,
                "",
                "\ntunefs.lustre FATAL: Device /dev/md0 has not been formatted with mkfs.lustre\n",
            )
            .record("blkid -p -o export /dev/md0", 2, "", "")
            .record("wipefs --no-act -- /dev/md0", 0, "", "");
        let (_root, disk, h) = host_on_a_loop(runner);
        let a = ost(3, false).assess(&h).await.unwrap();
        assert_eq!(
            a.actions[0].to_string(),
            "mkfs.lustre --fsname=LustreFS --backfstype=ldiskfs --ost --mgsnode=10.0.0.4@tcp --index=3 -- /dev/md0"
        );
        assert_eq!(ost(10, false).svname(), "LustreFS-OST000a");

        // Data without a signature: --reformat only when listed for wiping.
        disk.write_at(8192, b"an old target's objects");
        let err = ost(3, false).assess(&h).await.unwrap_err();
        assert!(err.to_string().contains("/dev/md0 holds data but no signature"), "{err}");
        let a = ost(3, true).assess(&h).await.unwrap();
        assert!(a.actions[0].to_string().contains(" --reformat "), "{}", a.actions[0]);
    }
}
