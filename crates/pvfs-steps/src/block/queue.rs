//! Block-queue tuning (the seed's Tables 11–12): set where the kernel honours it, clamped to
//! what it accepts, and kept across reboots by a udev rule.
//!
//! Where each setting goes. An md array is a bio-based device: it has no request queue, so no
//! I/O scheduler (its `queue/scheduler` reads `none` and offers nothing else) and no
//! `nr_requests` to speak of (writing it fails with EINVAL). Both belong to the array's
//! member disks, which is also where BeeGFS's tuning guide applies them ("Storage Node
//! Tuning": `scheduler`, `nr_requests`, `read_ahead_kb` on each `sdX`). Read-ahead is the
//! exception: the page cache reads ahead on the device the file system sits on, so
//! `read_ahead_kb` is set on the array as well as on its members.
//!
//! What the kernel accepts (block/blk-sysfs.c, block/blk-mq.c, block/blk-mq-sched.h):
//! - `scheduler` only names one the kernel lists in `queue/scheduler`: `[mq-deadline] kyber
//!   bfq none` on multi-queue kernels, `noop deadline [cfq]` on EL7's single-queue ones. The
//!   seed's "deadline" is `mq-deadline` on the former, and `mq-deadline` is `deadline` on the
//!   latter; pvfs writes the name the kernel lists.
//! - `nr_requests`: values under 4 become 4 (BLKDEV_MIN_RQ). Single-queue kernels take any
//!   larger value. Multi-queue kernels with a scheduler take at most MAX_SCHED_RQ = 16 × 128 =
//!   2048, and without one ("none") at most the hardware's tag depth, which is where
//!   `nr_requests` starts and which sysfs does not show otherwise; more fails with EINVAL. The
//!   seed's 4096 (set on CentOS 7's single-queue kernel) is clamped, and the plan says so.
//!   Changing the scheduler resets `nr_requests`, so the scheduler is written first.
//! - `read_ahead_kb` is kept in pages: it must be a multiple of the page size to read back
//!   as written (`pvfs-config` asks for a multiple of 4).
//!
//! Persistence: `/etc/udev/rules.d/99-pvfs-queue-NAME.rules`, written whole by this step
//! (the policy lets no other step write there, and checks every line is a plain match and
//! `ATTR{queue/…}` assignment). Each disk is matched by a stable identity: the
//! `/dev/disk/…` link the cluster file names it by (Azure's `disk/azure/scsi1/lunN` links
//! come from an earlier rule, so `99-` sorts after it), else its WWN from sysfs; arrays by
//! their md name. The values in the rule are the ones the kernel accepted here.

use crate::{Action, Assessment, NodeAccess, StepError};
use pvfs_host::Runner;
use std::fmt;

/// The most requests a multi-queue kernel allows with an I/O scheduler (MAX_SCHED_RQ).
const MAX_SCHED_RQ: u32 = 2048;
/// The kernel raises smaller values to this (BLKDEV_MIN_RQ).
const MIN_RQ: u32 = 4;

/// Block-queue settings (seed Tables 11–12: scheduler, nr_requests, read_ahead_kb) for the
/// device a target's file system is on and, when that is an md array, its member disks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockQueue {
    /// The device the file system is on: an md array over `members`, or a disk.
    pub device: String,
    /// The disks under the array, by the names the cluster file gives them; empty when
    /// `device` is itself a disk.
    pub members: Vec<String>,
    pub scheduler: Option<String>,
    pub nr_requests: Option<u32>,
    pub read_ahead_kb: Option<u32>,
}

/// One request queue the step tunes, and how the udev rule finds it again.
struct Queue {
    /// As the cluster file names it.
    shown: String,
    /// The kernel's name (`sdc`, `md10`).
    kernel: String,
    /// The udev match keys that identify it across reboots.
    matches: String,
    /// Only read-ahead (an md array: no request queue).
    bio_based: bool,
}

impl BlockQueue {
    /// The rule file this step owns.
    pub fn rule_path(&self) -> String {
        let name = self.device.strip_prefix("/dev/").unwrap_or(&self.device).replace('/', "-");
        format!("/etc/udev/rules.d/99-pvfs-queue-{name}.rules")
    }

    fn queue<R: Runner>(&self, host: &NodeAccess<R>, device: &str) -> Result<Queue, StepError> {
        let kernel = super::kernel_name(host, device);
        if !host.root.is_dir(&format!("/sys/block/{kernel}/queue")) {
            return Err(StepError::File {
                path: format!("/sys/block/{kernel}/queue"),
                message: format!(
                    "no queue settings for {device}: it is not a whole disk or array the kernel knows (a partition has none)"
                ),
            });
        }
        // md arrays and device-mapper volumes pass bios on to the disks below them.
        let is_md = host.root.exists(&format!("/sys/block/{kernel}/md"));
        let dm_name = host.read_optional(&format!("/sys/block/{kernel}/dm/name"))?;
        let bio_based = is_md || dm_name.is_some();
        let matches = if is_md {
            match device.strip_prefix("/dev/md/") {
                // mdadm's own rules (63-md-raid-arrays.rules) set MD_DEVNAME for named arrays.
                Some(name) => format!("ENV{{MD_DEVNAME}}==\"{name}\""),
                // pvfs records arrays in mdadm.conf, so /dev/mdN assembles as mdN at boot.
                None => format!("KERNEL==\"{kernel}\""),
            }
        } else if let Some(name) = dm_name.as_deref().map(str::trim).filter(|n| udev_safe(n)) {
            // device-mapper's rules (10-dm.rules) set DM_NAME from the same attribute.
            format!("ENV{{DM_NAME}}==\"{name}\"")
        } else if let Some(link) = device.strip_prefix("/dev/").filter(|d| d.starts_with("disk/")) {
            format!("ENV{{DEVTYPE}}==\"disk\", SYMLINK==\"{link}\"")
        } else {
            match host.read_optional(&format!("/sys/block/{kernel}/device/wwid"))? {
                Some(wwid) if udev_safe(wwid.trim()) => {
                    format!("ENV{{DEVTYPE}}==\"disk\", ATTRS{{wwid}}==\"{}\"", wwid.trim())
                }
                // Nothing stable to go by: the name the cluster file uses is all there is.
                _ => format!("ENV{{DEVTYPE}}==\"disk\", KERNEL==\"{kernel}\""),
            }
        };
        Ok(Queue { shown: device.to_owned(), kernel, matches, bio_based })
    }

    pub(crate) fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        let mut queues = vec![self.queue(host, &self.device)?];
        for member in &self.members {
            queues.push(self.queue(host, member)?);
        }
        let mut rules = vec![format!(
            "# Written by pvfs (block-queue of {}): the queue settings it made, applied again at boot.",
            self.device
        )];
        for q in &queues {
            let mut assign = Vec::new();
            let dir = format!("/sys/block/{}/queue", q.kernel);
            let read = |attr: &str| -> Result<String, StepError> {
                Ok(host.read_optional(&format!("{dir}/{attr}"))?.unwrap_or_default().trim().to_owned())
            };
            let label = if q.shown.ends_with(&format!("/{}", q.kernel)) {
                q.shown.clone()
            } else {
                format!("{} ({})", q.shown, q.kernel)
            };
            if !q.bio_based {
                let line = read("scheduler")?;
                let offered = Schedulers::parse(&line).ok_or_else(|| StepError::Unexpected {
                    command: format!("cat {dir}/scheduler"),
                    message: format!("{line:?} is not a list of I/O schedulers"),
                })?;
                let mut active = offered.active.clone();
                // A new scheduler brings its own nr_requests (the kernel resets it: 2 × the
                // queue depth under mq-deadline), so a value that matched before must be
                // written again after it.
                let mut scheduler_changes = false;
                if let Some(want) = &self.scheduler {
                    let name = offered.name_for(want).ok_or_else(|| StepError::Refused {
                        reason: format!(
                            "the kernel offers no {want} scheduler for {label} (it lists: {line}); load its \
                             module (modprobe mq-deadline) or set another `scheduler` in the cluster file"
                        ),
                    })?;
                    if active.as_deref() != Some(name) {
                        scheduler_changes = true;
                        a.change(
                            format!(
                                "{label} scheduler is {}, not {name}",
                                active.as_deref().unwrap_or("unknown")
                            ),
                            Action::Attribute { path: format!("{dir}/scheduler"), value: name.to_owned() },
                        );
                    }
                    assign.push(format!("ATTR{{queue/scheduler}}=\"{name}\""));
                    active = Some(name.to_owned());
                }
                if let Some(want) = self.nr_requests {
                    let have = read("nr_requests")?;
                    let have_n: Option<u32> = have.parse().ok();
                    let (value, why) = nr_requests_for(want, offered.multi_queue, active.as_deref(), have_n);
                    if have_n != Some(value) || scheduler_changes {
                        let diff = if have_n == Some(value) {
                            format!(
                                "{label} nr_requests is {value}, but the new scheduler resets it: set again"
                            )
                        } else {
                            format!("{label} nr_requests is {have}, not {value}{why}")
                        };
                        a.change(
                            diff,
                            Action::Attribute {
                                path: format!("{dir}/nr_requests"),
                                value: value.to_string(),
                            },
                        );
                    }
                    assign.push(format!("ATTR{{queue/nr_requests}}=\"{value}\""));
                }
            }
            if let Some(want) = self.read_ahead_kb {
                let have = read("read_ahead_kb")?;
                if have != want.to_string() {
                    a.change(
                        format!("{label} read_ahead_kb is {have}, not {want}"),
                        Action::Attribute { path: format!("{dir}/read_ahead_kb"), value: want.to_string() },
                    );
                }
                assign.push(format!("ATTR{{queue/read_ahead_kb}}=\"{want}\""));
            }
            if !assign.is_empty() {
                rules.push(format!(
                    "ACTION==\"add|change\", SUBSYSTEM==\"block\", {}, {}",
                    q.matches,
                    assign.join(", ")
                ));
            }
        }
        let mut contents = rules.join("\n");
        contents.push('\n');
        let path = self.rule_path();
        let old = host.read_optional(&path)?;
        if old.as_deref() != Some(contents.as_str()) {
            let why = match old {
                None => format!("{path} does not exist: the settings would not survive a reboot"),
                Some(_) => format!("{path} differs from the settings"),
            };
            a.change(why, Action::Write { path, contents, mode: 0o644 });
        }
        Ok(a)
    }
}

/// What a `queue/scheduler` file says: the schedulers offered and the active one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Schedulers {
    pub offered: Vec<String>,
    pub active: Option<String>,
    /// A multi-queue (blk-mq) device: it always offers "none", which single-queue kernels
    /// never list (their no-op scheduler is "noop").
    pub multi_queue: bool,
}

impl Schedulers {
    /// `[mq-deadline] kyber bfq none`, `noop deadline [cfq]`, or `none` alone (a queue
    /// without choice). `None` when it is not such a list.
    pub(crate) fn parse(line: &str) -> Option<Schedulers> {
        let mut offered = Vec::new();
        let mut active = None;
        for word in line.split_whitespace() {
            let name = match word.strip_prefix('[') {
                Some(rest) => {
                    let name = rest.strip_suffix(']')?;
                    if active.replace(name.to_owned()).is_some() {
                        return None;
                    }
                    name
                }
                None => word,
            };
            let ok = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
            if !ok {
                return None;
            }
            offered.push(name.to_owned());
        }
        if offered.is_empty() {
            return None;
        }
        // A queue with a single choice prints it without brackets on some kernels ("none").
        if active.is_none() && offered.len() == 1 {
            active = Some(offered[0].clone());
        }
        let multi_queue = offered.iter().any(|s| s == "none");
        Some(Schedulers { offered, active, multi_queue })
    }

    /// The name this kernel lists for `want`: itself, or its counterpart across the
    /// single-/multi-queue divide (deadline ↔ mq-deadline, noop ↔ none).
    pub(crate) fn name_for(&self, want: &str) -> Option<&str> {
        let alias = match want {
            "deadline" => "mq-deadline",
            "mq-deadline" => "deadline",
            "noop" => "none",
            "none" => "noop",
            other => other,
        };
        self.offered
            .iter()
            .map(String::as_str)
            .find(|s| *s == want)
            .or_else(|| self.offered.iter().map(String::as_str).find(|s| *s == alias))
    }
}

/// The `nr_requests` the kernel will take for `want`, and why it differs when it does.
fn nr_requests_for(
    want: u32,
    multi_queue: bool,
    scheduler: Option<&str>,
    have: Option<u32>,
) -> (u32, String) {
    if want < MIN_RQ {
        return (MIN_RQ, format!(" ({want} asked; the kernel's minimum is {MIN_RQ})"));
    }
    if !multi_queue {
        return (want, String::new());
    }
    match scheduler {
        Some("none") | None => match have {
            // Without a scheduler the limit is the hardware's tag depth, which sysfs shows
            // only as nr_requests' starting value.
            Some(have) if want > have => (
                have,
                format!(
                    " ({want} asked; without an I/O scheduler the kernel takes no more than the device's tag depth)"
                ),
            ),
            _ => (want, String::new()),
        },
        Some(s) if want > MAX_SCHED_RQ => (
            MAX_SCHED_RQ,
            format!(" ({want} asked; the kernel takes at most {MAX_SCHED_RQ} with the {s} scheduler)"),
        ),
        Some(_) => (want, String::new()),
    }
}

/// A value udev can match literally: printable, no quote, backslash or glob character.
fn udev_safe(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 128
        && value.chars().all(|c| c.is_ascii_graphic() || c == ' ')
        && !value.contains(['"', '\\', '*', '?', '[', ']', '|'])
}

impl fmt::Display for BlockQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(s) = &self.scheduler {
            parts.push(format!("scheduler={s}"));
        }
        if let Some(n) = self.nr_requests {
            parts.push(format!("nr_requests={n}"));
        }
        if let Some(r) = self.read_ahead_kb {
            parts.push(format!("read_ahead_kb={r}"));
        }
        write!(f, "queue of {}", self.device)?;
        if !self.members.is_empty() {
            write!(f, " and its {} disks", self.members.len())?;
        }
        write!(f, ": {}", parts.join(" "))
    }
}
