//! Block devices: RAID0 with mdadm, LVM thin pools, file systems, and queue tuning in sysfs.
//!
//! Everything destructive here goes through [`prove_empty`] when assessed and [`reprove`]
//! just before it runs: a device is formatted, made a RAID member or an LVM physical volume
//! only when it is a block device nothing uses that pvfs could claim exclusively
//! (`pvfs_host::device`), and either it is empty — its first and last MiB (and the other
//! places signatures live) read as zeros, `blkid -p` finds no signature and `wipefs --no-act`
//! lists none — or the cluster file lists it for wiping. The wipe list waives emptiness only:
//! a mounted, held, swap or busy device is refused even when listed. A device already holding
//! what the step wants is left alone, so a second run changes nothing.

use crate::{Action, Assessment, NodeAccess, StepError};
use pvfs_host::blkid::{self, Probe};
use pvfs_host::device::{self, Claim, Content, DevNum};
use pvfs_host::{Command, Runner};
use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

/// mkfs on a multi-terabyte array takes a while (ext4 more than xfs).
const MKFS_TIMEOUT: Duration = Duration::from_secs(1800);

/// What [`prove_empty`] concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Emptiness {
    /// Proven empty: no force flag needed.
    Empty,
    /// Holds something, but the cluster file allows wiping it: force flags may be used.
    Wipe(String),
}

/// A device assessment found may be destroyed, as apply must find it again: the same device
/// (`major:minor`), still unused, and still empty unless it is listed for wiping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proven {
    /// The path the step names (and the command is given).
    pub path: String,
    /// The device it named when assessed.
    pub dev: DevNum,
    /// Listed for wiping: its contents need not be proven empty again.
    pub wipe: bool,
    /// It was proven empty when assessed (so the command carries no force flag).
    pub empty: bool,
}

/// Proves `device` empty, or allowed to be wiped; refuses otherwise, naming the rule, what
/// the device holds and how to allow it. `purpose` reads "pvfs {purpose} only on …".
pub(crate) async fn prove_empty<R: Runner>(
    host: &NodeAccess<R>,
    device: &str,
    wipe: bool,
    purpose: &str,
) -> Result<(Emptiness, Proven), StepError> {
    let claim = device::claim(&host.root, device).map_err(|err| refused(device, purpose, err))?;
    let holds = examine(host, &claim, device, purpose).await?;
    let proven = Proven { path: device.to_owned(), dev: claim.identity().dev, wipe, empty: holds.is_none() };
    // The claim ends here: assessment only looks. Apply claims the device again.
    drop(claim);
    match holds {
        None => Ok((Emptiness::Empty, proven)),
        Some(what) if wipe => Ok((Emptiness::Wipe(what), proven)),
        Some(what) => Err(StepError::Refused {
            reason: format!(
                "{device} holds {what} (rule: pvfs {purpose} only on devices proven empty: no signature, and \
                 zeros in the first and last MiB). If its contents may be destroyed, add \"{device}\" to this \
                 node's `wipe` list in the cluster file"
            ),
        }),
    }
}

/// A refusal from the device rules, or a failure to examine the device.
fn refused(device: &str, purpose: &str, err: device::DeviceError) -> StepError {
    match (err.rule(), &err) {
        (Some(_), _) => StepError::Refused { reason: err.to_string() },
        // Not there (yet): an earlier step may be what makes it.
        (None, device::DeviceError::Missing { .. }) => StepError::Unproven {
            reason: format!("cannot prove {device} empty before pvfs {purpose}: {err}"),
        },
        (None, _) => {
            StepError::Refused { reason: format!("cannot prove {device} empty before pvfs {purpose}: {err}") }
        }
    }
}

/// What a claimed device holds, in words; `None` when it is empty: zeros where data and
/// signatures live, and nothing blkid or wipefs knows. The tools are asked even on zeros,
/// because a signature can live where pvfs does not read; on data they name what it is.
async fn examine<R: Runner>(
    host: &NodeAccess<R>,
    claim: &Claim,
    device: &str,
    purpose: &str,
) -> Result<Option<String>, StepError> {
    let content = claim.content().map_err(|err| refused(device, purpose, err))?;
    // blkid -p and wipefs --no-act open the device without O_EXCL: they run while the claim
    // is held (verified with util-linux 2.38).
    let probe = blkid::probe(&host.root, &host.runner, device).await;
    let signature = match &probe {
        Probe::Unknown(detail) => {
            return Err(StepError::Refused {
                reason: format!("cannot prove {device} empty before pvfs {purpose}: {detail}"),
            });
        }
        Probe::Found(_) => Some(probe.describe()),
        Probe::Empty => {
            // blkid knows most signatures; wipefs is the second opinion the operator would ask.
            // `--` before the device: wipefs takes argv[optind..] after getopt_long() (see
            // `teardown::wipe_all`).
            let out = host.probe(Command::new("wipefs").args(["--no-act", "--", device])).await?;
            if !out.success() {
                return Err(StepError::Refused {
                    reason: format!(
                        "cannot prove {device} empty before pvfs {purpose}: `wipefs --no-act -- {device}` exited {:?}: {}",
                        out.code,
                        crate::error_tail(&out)
                    ),
                });
            }
            let listed = out.stdout.trim();
            (!listed.is_empty()).then(|| format!("signatures wipefs lists: {}", listed.replace('\n', "; ")))
        }
    };
    Ok(match (signature, content) {
        (Some(what), _) => Some(what),
        (None, Content::Zeros) => None,
        (None, data @ Content::Data { .. }) => {
            Some(format!("data but no signature blkid or wipefs knows ({data})"))
        }
    })
}

/// Proves again, just before a destructive command runs, what assessment proved: each device
/// is the same one (`major:minor`), still passes every rule of `pvfs_host::device`, and, if it
/// was proven empty rather than listed for wiping, is still empty. Returns the claims.
///
/// The caller drops the claims right before it starts the command, not after: every tool run
/// on these devices (mkfs.xfs, mke2fs and so mkfs.lustre, wipefs --all, mdadm --create,
/// pvcreate) opens the device `O_EXCL` itself and fails with EBUSY while pvfs holds it
/// (verified for mkfs.ext4, mkfs.xfs, wipefs and mkswap on Linux 6.18; mdadm's Create opens
/// every member `O_RDONLY|O_EXCL`, and pvcreate reopens its device exclusively, "Can't open …
/// exclusively. Mounted filesystem?", by their source). The tool's own claim then closes
/// the window from its side: what is left is the time between our close and its open, with
/// the device unused and re-proven a moment before; the verify pass after apply reads the
/// result back from the node.
pub(crate) async fn reprove<R: Runner>(
    host: &NodeAccess<R>,
    devices: &[Proven],
) -> Result<Vec<Claim>, StepError> {
    let purpose = "acts";
    let mut claims = Vec::new();
    for proven in devices {
        let claim = device::reclaim(&host.root, &proven.path, proven.dev)
            .map_err(|err| refused(&proven.path, purpose, err))?;
        if proven.empty
            && !proven.wipe
            && let Some(what) = examine(host, &claim, &proven.path, purpose).await?
        {
            return Err(StepError::Refused {
                reason: format!(
                    "{} was proven empty when assessed but now holds {what} (rule: the device acted on is \
                     the one checked, as it was checked); nothing was done: run again to assess it anew",
                    proven.path
                ),
            });
        }
        claims.push(claim);
    }
    Ok(claims)
}

/// The kernel's name for a device (`/dev/md0` → `md0`, a `/dev/disk/by-*` link → `sdc`).
pub(crate) fn kernel_name<R: Runner>(host: &NodeAccess<R>, device: &str) -> String {
    let real = host.resolve(device);
    real.rsplit('/').next().unwrap_or(&real).to_owned()
}

/// A software RAID0 array over the node's data disks, recorded in mdadm.conf so it comes back
/// under the same name after a reboot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Raid0 {
    pub device: String,
    pub members: Vec<String>,
    /// Chunk size in KiB; mdadm's default (512) when absent.
    pub chunk_kib: Option<u32>,
    /// Members the cluster file allows to be wiped.
    pub wipe: Vec<String>,
    /// Where arrays are recorded; `None`: `/etc/mdadm/mdadm.conf` where `/etc/mdadm` exists
    /// (Debian), `/etc/mdadm.conf` otherwise (RHEL-likes).
    pub conf: Option<String>,
}

// mdadm and `--`: why no mdadm command pvfs runs has `--` before its devices, unlike every
// other tool.
//
// mdadm's option strings start with `-` (`short_opts[] = "-ABCDEFGIQhVXYWZ:…"` in mdadm's
// ReadMe.c, 4.x), so getopt_long() hands back every non-option word in order as option 1,
// and mdadm.c's main() collects devices only there (`if (opt == 1) { … devlist … }`). A
// `--` ends getopt_long()'s scan, and main() never reads argv[optind..] afterwards: the
// devices after it would be dropped silently (`--create` would see no members). So mdadm
// relies on the grammar instead: arrays are `/dev/mdN` or `/dev/md/NAME` and members are
// canonical paths under /dev — never a word that starts with `-` — and the agent's policy
// checks every word of an mdadm command against that (`pvfs_policy::Policy::check_action`).

impl Raid0 {
    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        let name = self.device.rsplit('/').next().unwrap_or(&self.device);
        let want: BTreeSet<String> = self.members.iter().map(|m| host.resolve(m)).collect();
        let level = host.read_optional(&format!("/sys/block/{name}/md/level"))?.unwrap_or_default();
        let uuid = if !level.trim().is_empty() {
            // The array is running: it must be the one described.
            let detail = Command::new("mdadm").args(["--detail", "--export", &self.device]);
            let fields = export_fields(&host.probe_ok(detail).await?);
            let have: BTreeSet<String> = fields
                .iter()
                .filter(|(k, _)| k.starts_with("MD_DEVICE_") && k.ends_with("_DEV"))
                .map(|(_, v)| v.clone())
                .collect();
            let level = fields.iter().find(|(k, _)| k == "MD_LEVEL").map_or("", |(_, v)| v.as_str());
            if level != "raid0" || have != want {
                return Err(StepError::Refused {
                    reason: format!(
                        "{} already exists as {level} over {}, not raid0 over {}; pvfs does not rebuild arrays: \
                         stop it by hand (mdadm --stop {}) or name another device",
                        self.device,
                        join(&have),
                        join(&want),
                        self.device
                    ),
                });
            }
            fields.into_iter().find(|(k, _)| k == "MD_UUID").map(|(_, v)| v)
        } else {
            self.assess_stopped(host, &want, &mut a).await?
        };
        let conf_path = self.conf.clone().unwrap_or_else(|| {
            if host.root.is_dir("/etc/mdadm") {
                "/etc/mdadm/mdadm.conf".into()
            } else {
                "/etc/mdadm.conf".into()
            }
        });
        let conf = host.read_optional(&conf_path)?.unwrap_or_default();
        let recorded = uuid.as_ref().is_some_and(|uuid| {
            conf.lines().any(|l| l.starts_with("ARRAY") && l.contains(&format!("UUID={uuid}")))
        });
        if !recorded {
            a.change(
                format!("{conf_path} does not record {}", self.device),
                Action::PersistMdadm { device: self.device.clone(), conf: conf_path },
            );
        }
        Ok(a)
    }

    /// No running array: assemble one the members already form, or create it on empty members.
    /// Returns the UUID of an existing array.
    async fn assess_stopped<R: Runner>(
        &self,
        host: &NodeAccess<R>,
        want: &BTreeSet<String>,
        a: &mut Assessment,
    ) -> Result<Option<String>, StepError> {
        let mut uuids = BTreeSet::new();
        let mut superblocks = 0;
        for member in &self.members {
            let out = host.probe(Command::new("mdadm").args(["--examine", "--export", member])).await?;
            // Exit 1 with "No md superblock detected" is a member that belongs to no array.
            if out.success() {
                let fields = export_fields(&out.stdout);
                let get = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
                if get("MD_LEVEL").as_deref() == Some("raid0")
                    && get("MD_DEVICES").and_then(|n| n.parse::<usize>().ok()) == Some(want.len())
                {
                    superblocks += 1;
                    uuids.extend(get("MD_UUID"));
                }
            }
        }
        if superblocks == self.members.len() && uuids.len() == 1 {
            // No `--` for mdadm: see "mdadm and `--`" above `impl Raid0`.
            let mut assemble = Command::new("mdadm").args(["--assemble", &self.device]);
            assemble = assemble.args(&self.members);
            a.change(
                format!("{} is not running; its members form one raid0 array", self.device),
                Action::Run(assemble),
            );
            return Ok(uuids.into_iter().next());
        }
        let mut proofs = Vec::new();
        let mut wipes = Vec::new();
        for member in &self.members {
            let allowed = self.wipe.contains(member);
            let (emptiness, proven) = prove_empty(host, member, allowed, "creates RAID arrays").await?;
            if let Emptiness::Wipe(what) = emptiness {
                wipes.push((proven.clone(), what));
            }
            proofs.push(proven);
        }
        let all_empty = wipes.is_empty();
        for (proven, what) in wipes {
            a.change(
                format!("{} holds {what} (listed under wipe)", proven.path),
                Action::Destroy { command: crate::teardown::wipe_all(&proven.path), devices: vec![proven] },
            );
        }
        // No `--` for mdadm (see "mdadm and `--`" above `impl Raid0`): the array and its members
        // are named by the device grammar, and the policy checks every word of this command.
        let mut create = Command::new("mdadm").args(["--create", &self.device]);
        // --run skips mdadm's own "appears to contain a file system / partition table"
        // question. It is passed only when every member was proven empty (then mdadm has
        // nothing to ask, and an unattended run must not stop on a question); with a member
        // that relied on the wipe list, mdadm's guard stays as a last check after wipefs
        // (with stdin closed a question is answered "no" and the create aborts).
        if all_empty {
            create = create.arg("--run");
        }
        create = create.args(["--level=0".to_owned(), format!("--raid-devices={}", self.members.len())]);
        if let Some(chunk) = self.chunk_kib {
            create = create.arg(format!("--chunk={chunk}"));
        }
        a.change(
            format!("{} does not exist", self.device),
            Action::Destroy { command: create.args(&self.members), devices: proofs },
        );
        Ok(None)
    }
}

impl fmt::Display for Raid0 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "raid0 {} over {} disks", self.device, self.members.len())
    }
}

fn join(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(",")
}

/// `KEY=value` lines (mdadm --export).
pub(crate) fn export_fields(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// mdadm.conf with `line` as the one ARRAY line for `device`.
pub(crate) fn mdadm_conf_with(old: &str, device: &str, line: &str) -> String {
    let name = device.rsplit('/').next().unwrap_or(device);
    let same = |l: &str| {
        let mut words = l.split_whitespace();
        words.next() == Some("ARRAY")
            && words.next().is_some_and(|d| d == device || d == format!("/dev/md/{name}"))
    };
    let mut lines: Vec<&str> = old.lines().filter(|l| !same(l)).collect();
    lines.push(line);
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// An LVM thin pool on one physical volume and a thin volume in it (the seed's GlusterFS
/// brick layout: `pvcreate`, `vgcreate`, `lvcreate -T`, `lvchange --zero n`, `lvcreate -V`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LvmThin {
    pub pv: String,
    pub vg: String,
    pub pool: String,
    /// `-L` of the pool, e.g. `9216g`, or `-l` when it ends in `%FREE`/`%VG`.
    pub pool_size: String,
    /// Pool chunk size (`-c`), e.g. `256K`.
    pub chunk: Option<String>,
    pub lv: String,
    /// `-V` of the thin volume.
    pub virtual_size: String,
    pub data_alignment: Option<String>,
    pub extent_size: Option<String>,
    /// Zero new pool blocks (LVM's default); the seed turns it off for speed.
    pub zero: bool,
    /// The cluster file allows wiping the PV device.
    pub wipe: bool,
}

impl LvmThin {
    /// The thin volume's device path.
    pub fn device(&self) -> String {
        format!("/dev/{}/{}", self.vg, self.lv)
    }

    /// Commands that change LVM put their positionals (names and devices from the cluster
    /// file) after `--`: the LVM tools parse with getopt_long, so nothing there is read as an
    /// option even if a name got past validation and the policy.
    fn lvm(tool: &str) -> Command {
        // Without this, every LVM tool started by a process holding other descriptors warns
        // "File descriptor N leaked" on stderr.
        Command::new(tool).env("LVM_SUPPRESS_FD_WARNINGS", "1")
    }

    /// One report from an LVM tool as JSON rows; `None` when the object does not exist (exit
    /// 5, "not found" on stderr).
    pub(crate) async fn report<R: Runner>(
        host: &NodeAccess<R>,
        command: Command,
        section: &str,
    ) -> Result<Option<Vec<serde_json::Map<String, serde_json::Value>>>, StepError> {
        let shown = command.to_string();
        let out = host.probe(command).await?;
        if out.code == Some(5) {
            return Ok(None);
        }
        if !out.success() {
            // lvm2 before 2.02.158 has no JSON reports (EL7 until 7.3, whose lvm2 is 2.02.166):
            // getopt's "unrecognized option '--reportformat'", exit 3.
            let hint = out.stderr.contains("--reportformat").then(|| {
                "pvfs reads LVM reports as JSON, which needs lvm2 2.02.158 or later (EL7.3 ships 2.02.166): \
                 update lvm2 on this node"
                    .to_owned()
            });
            return Err(StepError::Command {
                command: shown,
                code: out.code,
                stderr: crate::error_tail(&out),
                hint,
            });
        }
        let json: serde_json::Value = serde_json::from_str(&out.stdout)
            .map_err(|e| StepError::Unexpected { command: shown.clone(), message: e.to_string() })?;
        let rows = json["report"][0][section].as_array().ok_or_else(|| StepError::Unexpected {
            command: shown,
            message: format!("no report[0].{section}"),
        })?;
        Ok(Some(rows.iter().filter_map(|r| r.as_object().cloned()).collect()))
    }

    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        let field = |row: &serde_json::Map<String, serde_json::Value>, key: &str| {
            row.get(key).and_then(|v| v.as_str()).unwrap_or_default().to_owned()
        };
        let pvs = Self::lvm("pvs").args(["--reportformat", "json", "-o", "pv_name,vg_name", &self.pv]);
        match Self::report(host, pvs, "pv").await?.and_then(|rows| rows.into_iter().next()) {
            Some(row) => {
                let vg = field(&row, "vg_name");
                if !vg.is_empty() && vg != self.vg {
                    return Err(StepError::Refused {
                        reason: format!(
                            "{} is already a physical volume of volume group {vg}, not {}",
                            self.pv, self.vg
                        ),
                    });
                }
            }
            None => {
                let (force, proven) =
                    prove_empty(host, &self.pv, self.wipe, "creates LVM physical volumes").await?;
                let mut pvcreate = Self::lvm("pvcreate");
                if let Emptiness::Wipe(_) = force {
                    pvcreate = pvcreate.args(["--force", "--yes"]);
                }
                if let Some(align) = &self.data_alignment {
                    pvcreate = pvcreate.args(["--dataalignment", align]);
                }
                a.change(
                    format!("{} is not an LVM physical volume", self.pv),
                    Action::Destroy { command: pvcreate.args(["--", &self.pv]), devices: vec![proven] },
                );
            }
        }
        let vgs = Self::lvm("vgs").args(["--reportformat", "json", "-o", "vg_name", &self.vg]);
        if Self::report(host, vgs, "vg").await?.is_none_or(|rows| rows.is_empty()) {
            let mut vgcreate = Self::lvm("vgcreate");
            if let Some(size) = &self.extent_size {
                vgcreate = vgcreate.args(["--physicalextentsize", size]);
            }
            a.change(
                format!("volume group {} does not exist", self.vg),
                Action::Run(vgcreate.args(["--", &self.vg, &self.pv])),
            );
        }
        let lvs = Self::lvm("lvs").args([
            "--reportformat",
            "json",
            "--binary",
            "-o",
            "lv_name,segtype,pool_lv,zero",
            &self.vg,
        ]);
        let rows = Self::report(host, lvs, "lv").await?.unwrap_or_default();
        let find = |name: &str| rows.iter().find(|r| field(r, "lv_name") == name);
        let pool_spec = format!("{}/{}", self.vg, self.pool);
        match find(&self.pool) {
            Some(row) if field(row, "segtype") != "thin-pool" => {
                return Err(StepError::Refused {
                    reason: format!(
                        "{pool_spec} exists but is a {} volume, not a thin pool",
                        field(row, "segtype")
                    ),
                });
            }
            Some(row) => {
                if !self.zero && field(row, "zero") == "1" {
                    a.change(
                        format!("thin pool {pool_spec} zeroes new blocks"),
                        Action::Run(Self::lvm("lvchange").args(["--zero", "n", "--", &pool_spec])),
                    );
                }
            }
            None => {
                let size_flag = if self.pool_size.contains('%') { "-l" } else { "-L" };
                // `-T` (--thin) takes no value: the pool is the positional after `--`.
                let mut create = Self::lvm("lvcreate").args([size_flag, &self.pool_size, "-T"]);
                if let Some(chunk) = &self.chunk {
                    create = create.args(["-c", chunk]);
                }
                let create = create.args(["--", &pool_spec]);
                a.change(format!("thin pool {pool_spec} does not exist"), Action::Run(create));
                if !self.zero {
                    a.actions
                        .push(Action::Run(Self::lvm("lvchange").args(["--zero", "n", "--", &pool_spec])));
                }
            }
        }
        match find(&self.lv) {
            Some(row) if field(row, "segtype") != "thin" || field(row, "pool_lv") != self.pool => {
                return Err(StepError::Refused {
                    reason: format!(
                        "{}/{} exists but is not a thin volume in {}; pvfs will not replace it",
                        self.vg, self.lv, self.pool
                    ),
                });
            }
            Some(_) => {}
            None => a.change(
                format!("thin volume {}/{} does not exist", self.vg, self.lv),
                Action::Run(Self::lvm("lvcreate").args([
                    "-V",
                    &self.virtual_size,
                    "-T",
                    "-n",
                    &self.lv,
                    "--",
                    &pool_spec,
                ])),
            ),
        }
        Ok(a)
    }
}

impl fmt::Display for LvmThin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lvm thin volume {} in {}/{} on {}", self.device(), self.vg, self.pool, self.pv)
    }
}

/// A file system on a device (xfs or ext4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mkfs {
    pub device: String,
    pub fstype: String,
    /// Extra `mkfs.<fstype>` options, e.g. `-K -i size=512 -n size=8192`. Never a force flag:
    /// pvfs adds that itself, only for devices listed for wiping.
    pub options: Vec<String>,
    pub label: Option<String>,
    pub wipe: bool,
}

impl Mkfs {
    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        // The request itself first, whatever the device holds: a type pvfs does not make, or
        // an option off the tool's allow-list, is refused before anything is probed.
        if !pvfs_host::mkfs_options::FS_TYPES.contains(&self.fstype.as_str()) {
            return Err(StepError::Refused {
                reason: format!(
                    "file system type {:?} (rule: pvfs makes only {} file systems)",
                    self.fstype,
                    pvfs_host::mkfs_options::FS_TYPES.join(" and ")
                ),
            });
        }
        let bad: Vec<String> = pvfs_host::mkfs_options::check(&self.fstype, &self.options)
            .iter()
            .map(ToString::to_string)
            .collect();
        if !bad.is_empty() {
            return Err(StepError::Refused {
                reason: format!("mkfs options of {}: {}", self.device, bad.join("; ")),
            });
        }
        let probe = blkid::probe(&host.root, &host.runner, &self.device).await;
        if probe.kind() == Some(self.fstype.as_str())
            && self.label.as_deref().is_none_or(|label| probe.field("LABEL") == Some(label))
        {
            return Ok(a);
        }
        let (force, proven) = prove_empty(host, &self.device, self.wipe, "makes file systems").await?;
        let mut mkfs = Command::new(format!("mkfs.{}", self.fstype));
        let why = match &force {
            Emptiness::Empty => format!("{} has no file system", self.device),
            Emptiness::Wipe(what) => {
                mkfs = mkfs.arg(if self.fstype == "xfs" { "-f" } else { "-F" });
                format!("{} holds {what}, not {} (listed under wipe)", self.device, self.fstype)
            }
        };
        mkfs = mkfs.args(&self.options);
        if let Some(label) = &self.label {
            mkfs = mkfs.args(["-L", label]);
        }
        a.change(
            why,
            // `--`: mkfs.xfs and mke2fs parse with getopt, so the device is never an option.
            Action::Destroy {
                command: mkfs.args(["--", &self.device]).timeout(MKFS_TIMEOUT),
                devices: vec![proven],
            },
        );
        Ok(a)
    }
}

impl fmt::Display for Mkfs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {}", self.fstype, self.device)?;
        if let Some(label) = &self.label {
            write!(f, " (label {label})")?;
        }
        Ok(())
    }
}

mod queue;

pub use queue::BlockQueue;

#[cfg(test)]
mod tests;
