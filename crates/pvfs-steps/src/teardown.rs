//! Taking a node apart again (`pvfsctl down`): mounts the cluster file made come off, the
//! services it started stop, and — only with `--wipe` — its targets are destroyed.
//!
//! Like every step, each is assessed from the node (read-only) and only what differs is acted
//! on, so a second `down` changes nothing and a `down` cut short resumes where the node is.
//! Nothing is unmounted that the cluster file did not mount: an unmount step names the mount
//! `up` made (source, type, directory), and something else mounted there is refused, not
//! unmounted.

use crate::block::{Emptiness, Proven, kernel_name, prove_empty};
use crate::{Action, Assessment, Mount, NodeAccess, StepError};
use pvfs_host::{Command, Runner};
use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

/// An unmount waits for dirty data to reach the servers (network file systems) or the disk.
const UMOUNT_TIMEOUT: Duration = Duration::from_secs(300);

/// Stopping a file system daemon flushes and closes its targets (BeeGFS storage, LNet with
/// Lustre's modules).
const STOP_TIMEOUT: Duration = Duration::from_secs(300);

impl Mount {
    /// The reverse of [`Mount::assess`]: this mount is not mounted and has no fstab line.
    pub(crate) async fn assess_gone<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        match self.mounted(host)? {
            Some(m) if self.is_this(host, &m) => {
                // No -l (lazy) and no -f: a busy mount is an error with the reason (`target is
                // busy`), never a mount that disappears from the namespace while files stay
                // open on it. `--` before the mount point: util-linux umount parses its
                // options with getopt_long() and then takes argv[optind..] as the targets
                // (sys-utils/umount.c: `argc -= optind; argv += optind;`), so `--` ends the
                // options there (checked: `umount -- /x` names /x as the mount point).
                a.change(
                    format!("{} is mounted ({} {})", self.target, m.fstype, m.source),
                    Action::Run(Command::new("umount").args(["--", &self.target]).timeout(UMOUNT_TIMEOUT)),
                );
            }
            Some(m) => {
                return Err(StepError::Refused {
                    reason: format!(
                        "{} has {} ({}) mounted, not the cluster's {} ({}); pvfs unmounts only what the \
                         cluster file mounts: unmount it by hand if it should go",
                        self.target, m.source, m.fstype, self.source, self.fstype
                    ),
                });
            }
            None => {}
        }
        if self.fstab {
            let old = host.read_optional("/etc/fstab")?.unwrap_or_default();
            if let Some((new, gone)) = fstab_without(&old, &self.target, &self.fstype) {
                a.change(
                    format!("/etc/fstab mounts {} at boot: -{}", self.target, gone.join(" -")),
                    Action::Write { path: "/etc/fstab".into(), contents: new, mode: 0o644 },
                );
            }
        }
        Ok(a)
    }
}

/// fstab without the entries `up` writes for `target` (that directory, that file system type),
/// and the lines removed; `None` when there are none. Comments and every other entry stay as
/// they are, including another type's entry for the same directory: that is not pvfs's line.
fn fstab_without(old: &str, target: &str, fstype: &str) -> Option<(String, Vec<String>)> {
    let ours = |l: &str| {
        let fields: Vec<&str> = l.split_whitespace().collect();
        !l.trim_start().starts_with('#') && fields.get(1) == Some(&target) && fields.get(2) == Some(&fstype)
    };
    let gone: Vec<String> = old.lines().filter(|l| ours(l)).map(str::to_owned).collect();
    if gone.is_empty() {
        return None;
    }
    let mut new: String = old.lines().filter(|l| !ours(l)).map(|l| format!("{l}\n")).collect();
    if new.is_empty() {
        new.push('\n');
    }
    Some((new, gone))
}

/// A mount taken down: written as the mount `up` makes, so that only that mount is undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmount(pub Mount);

impl fmt::Display for Unmount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.0;
        write!(f, "unmount {} from {} ({})", m.source, m.target, m.fstype)?;
        if m.fstab { f.write_str(", and its fstab line") } else { Ok(()) }
    }
}

/// A systemd unit stopped, and disabled so a reboot does not bring it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceStopped {
    pub unit: String,
}

impl ServiceStopped {
    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        if !host.root.is_dir("/run/systemd/system") {
            return Err(StepError::Refused {
                reason: format!(
                    "systemd is not running on this node (no /run/systemd/system), so {} cannot be stopped or \
                     disabled; pvfs manages services through systemd",
                    self.unit
                ),
            });
        }
        let mut a = Assessment::in_sync();
        let enabled = host.probe(Command::new("systemctl").args(["is-enabled", &self.unit])).await?;
        let state = enabled.stdout.trim();
        // A unit that is not installed (systemd 252: exit 1, "No such file or directory" on
        // stderr; newer ones also print `not-found`) has nothing to stop.
        if state == "not-found" || enabled.stderr.contains("No such file") {
            return Ok(a);
        }
        let active = host.probe(Command::new("systemctl").args(["is-active", &self.unit])).await?;
        let running = active.stdout.trim();
        // `is-active` prints one state word; "activating" and "reloading" are on their way up.
        if matches!(running, "active" | "activating" | "reloading") {
            a.change(
                format!("{} is {running}", self.unit),
                Action::Run(Command::new("systemctl").args(["stop", &self.unit]).timeout(STOP_TIMEOUT)),
            );
        }
        // Only units enabled by a symlink are disabled; "static" and "indirect" units start only
        // when something else pulls them in, which is what stopping the rest takes away.
        if matches!(state, "enabled" | "enabled-runtime") {
            a.change(
                format!("{} is {state}", self.unit),
                Action::Run(Command::new("systemctl").args(["disable", &self.unit])),
            );
        }
        Ok(a)
    }
}

impl fmt::Display for ServiceStopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "service {} stopped and disabled", self.unit)
    }
}

/// A target's devices destroyed (`down --wipe`), top to bottom: the LVM volume group
/// deactivated, the md array's contents cleared and the array stopped, then every disk's
/// signatures (`mdadm --zero-superblock`, `wipefs --all`) and the places an "empty" proof
/// reads zeroed, so that the next `up` finds the disks empty and builds the target anew.
///
/// Each device is proven unused (not mounted, held or swap, claimable `O_EXCL`) just before
/// anything touches it ([`Action::Destroy`], [`Action::Zero`]), and only disks the cluster
/// file lists for the target are named: the operator saw them listed and typed the
/// cluster's name before this step was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WipeTarget {
    /// The node's disks under the target, as the cluster file names them.
    pub disks: Vec<String>,
    /// The md array over them, when there are several.
    pub array: Option<String>,
    /// The volume group on the array (or disk), when the target has LVM.
    pub vg: Option<String>,
}

/// `wipefs --all -- DEVICE`. util-linux wipefs reads its options with getopt_long() and then
/// every argv[optind..] as a device (misc-utils/wipefs.c), so `--` ends the options (checked:
/// `wipefs --no-act -- /dev/null` probes /dev/null).
pub(crate) fn wipe_all(device: &str) -> Command {
    Command::new("wipefs").args(["--all", "--", device])
}

impl WipeTarget {
    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        let mut vg_active = false;
        if let Some(vg) = &self.vg
            && host.root.is_dir(&format!("/dev/{vg}"))
        {
            // Active logical volumes are device-mapper devices that hold the array (or disk):
            // nothing below can be claimed until they go.
            vg_active = true;
            a.change(
                format!("volume group {vg} is active"),
                // lvm2 parses its commands' options with getopt_long() (lvmcmdline.c), as
                // for the `--` pvcreate/vgcreate/lvcreate take in block.rs.
                Action::Run(Command::new("vgchange").args(["--activate", "n", "--", vg])),
            );
        }
        let mut array_running = false;
        if let Some(md) = &self.array {
            let name = kernel_name(host, md);
            let level = host.read_optional(&format!("/sys/block/{name}/md/level"))?.unwrap_or_default();
            if !level.trim().is_empty() {
                array_running = true;
                // The array must be the one over these disks: its members are its `slaves` in
                // sysfs, by kernel name.
                let slaves: BTreeSet<String> = host
                    .root
                    .list_dir(&format!("/sys/block/{name}/slaves"))
                    .unwrap_or_default()
                    .into_iter()
                    .collect();
                let disks: BTreeSet<String> = self.disks.iter().map(|d| kernel_name(host, d)).collect();
                if slaves != disks {
                    return Err(StepError::Refused {
                        reason: format!(
                            "{md} is an array over {}, not over the cluster file's {}; pvfs wipes only the \
                             target it built: stop the array by hand if it should go",
                            slaves.into_iter().collect::<Vec<_>>().join(","),
                            self.disks.join(",")
                        ),
                    });
                }
                // The array's own contents first, while it is assembled: an array created again
                // over the same disks with the same geometry shows them again (a file system,
                // an LVM label), and the next `up` would find the array not empty.
                let proven = self.unproven(host, md)?;
                a.change(
                    format!("{md} is assembled over {}", self.disks.join(",")),
                    Action::Destroy { command: wipe_all(md), devices: vec![proven.clone()] },
                );
                a.actions.push(Action::Zero { device: proven });
                // No `--` for mdadm (see "mdadm and `--`" in block.rs): the array
                // name passed the md-device grammar (`/dev/mdN`, `/dev/md/NAME`).
                a.actions.push(Action::Run(Command::new("mdadm").args(["--stop", md])));
            }
        }
        for disk in &self.disks {
            let (proven, what) = if array_running || (vg_active && self.array.is_none()) {
                // Held by the array or the volume group: it cannot be claimed (and so examined)
                // until the actions above have run; apply proves it unused then.
                (self.unproven(host, disk)?, "a member of the target".to_owned())
            } else {
                match prove_empty(host, disk, true, "wipes targets").await? {
                    (Emptiness::Empty, _) => continue,
                    (Emptiness::Wipe(what), proven) => (proven, what),
                }
            };
            let md_member = self.array.is_some() && (array_running || what.contains("linux_raid_member"));
            let why = format!("{disk} holds {what}");
            if md_member {
                a.change(
                    why,
                    Action::Destroy {
                        command: Command::new("mdadm").args(["--zero-superblock", disk]),
                        devices: vec![proven.clone()],
                    },
                );
                a.actions.push(Action::Destroy { command: wipe_all(disk), devices: vec![proven.clone()] });
            } else {
                a.change(why, Action::Destroy { command: wipe_all(disk), devices: vec![proven.clone()] });
            }
            a.actions.push(Action::Zero { device: proven });
        }
        Ok(a)
    }

    /// A device that cannot be claimed yet, recorded by its number so that apply acts on the
    /// same device; it is proven unused (and claimed) just before each action.
    fn unproven<R: Runner>(&self, host: &NodeAccess<R>, path: &str) -> Result<Proven, StepError> {
        let id = pvfs_host::device::identify(&host.root, path)
            .map_err(|err| StepError::Refused { reason: format!("cannot wipe {path}: {err}") })?;
        Ok(Proven { path: path.to_owned(), dev: id.dev, wipe: true, empty: false })
    }

    /// Every device the step may destroy (for the site's device list and the listing shown
    /// before the operator confirms).
    pub fn devices(&self) -> Vec<String> {
        self.array.iter().cloned().chain(self.disks.iter().cloned()).collect()
    }
}

impl fmt::Display for WipeTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "wipe {}", self.disks.join(" "))?;
        match (&self.array, &self.vg) {
            (Some(md), Some(vg)) => write!(f, " (array {md}, volume group {vg})"),
            (Some(md), None) => write!(f, " (array {md})"),
            (None, Some(vg)) => write!(f, " (volume group {vg})"),
            (None, None) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
