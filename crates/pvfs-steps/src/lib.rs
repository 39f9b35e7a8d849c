//! The typed step catalogue: everything `pvfsctl up` can make a node be.
//!
//! A [`Step`] is data (a directory, a package set, a RAID0 array, a gluster volume, …), built
//! by the planner from the cluster file and carried over the wire as typed messages, never as
//! command strings. On the node, the agent runs it in three phases:
//!
//! 1. **assess** (read-only): probe the node and compare with the step. The result is an
//!    [`Assessment`]: the differences, in words, and the exact [`Action`]s that would remove
//!    them. No actions means in sync. `pvfsctl up --plan` shows exactly this, so the plan is
//!    what the run would do, not a guess.
//! 2. **apply**: carry out those actions, in order, stopping at the first that fails.
//! 3. **verify**: assess again; anything left over is a failure (this is what catches a FUSE
//!    mount that exits 0 with nothing mounted).
//!
//! Gates ([`Gate`]: readiness waits and validations) change nothing: they probe until a
//! condition holds or their deadline passes.
//!
//! Destructive actions (mkfs, `mdadm --create`, `pvcreate`, wipes) are only ever planned for
//! block devices nothing uses (not mounted, held, swap, and claimable `O_EXCL`) that are
//! proven empty — zeros in the first and last MiB, no signature `blkid -p` or `wipefs
//! --no-act` knows — or that the cluster file lists for wiping; apply proves the same again
//! just before it acts. A device holding what the step wants is never touched again.
//!
//! Nothing runs unless the agent's policy allows it: [`run_unit`] and [`execute`] ask their
//! [`Guard`] (the policy, `pvfs-policy`, which depends on this crate and not the other way
//! round) about every step before assessing it and every action before performing it.

mod beegfs;
mod block;
mod exec;
mod files;
mod firewall;
#[cfg(test)]
mod fuzz;
mod gate;
mod gluster;
mod guard;
mod lustre;
mod lustre_log;
mod lustre_tuning;
mod mount;
mod mpi_ssh;
mod packages;
mod service;
mod teardown;

pub use beegfs::{BeegfsService, BeegfsSetup};
pub use block::{BlockQueue, LvmThin, Mkfs, Proven, Raid0};
pub use exec::{CommandRecord, Failure, Outcome, StepEvent, UnitSummary, execute, run_unit};
pub use files::{ConfigKeys, Directory, File};
pub use firewall::{FIREWALL_CMD, FirewallPorts, PortRange, Protocol};
pub use gate::{Gate, GateKind};
pub use gluster::{
    GLUSTERD_BUSY, GlusterLayout, GlusterPeers, GlusterPeersDetached, GlusterVolume, GlusterVolumeGone,
    gluster_command,
};
#[cfg(test)]
pub(crate) use guard::Unguarded;
pub use guard::{Guard, MadeDevices, PolicyError, StepRefused};
pub use lustre::{LustreRole, LustreTarget};
pub use lustre_tuning::{LctlParam, LustreStripe};
pub use mount::Mount;
pub use mpi_ssh::{
    AUTHORIZED_KEYS, KnownHost, MPI_DIR, MPI_KEY, MPI_KNOWN_HOSTS, MpiSsh, MpiSshGone, ROOT_SSH_DIR,
};
pub use packages::{APT_KEYRINGS, APT_SOURCES, Package, PackageManager, Packages, Repo};
pub use service::Service;
pub use teardown::{ServiceStopped, Unmount, WipeTarget};

use pvfs_host::{Command, Root, Runner};
use std::fmt;
use std::time::Duration;

/// The node a step runs on: its files (under a root, `/` in production) and its commands.
#[derive(Debug, Clone)]
pub struct NodeAccess<R> {
    pub root: Root,
    pub runner: R,
}

impl<R: Runner> NodeAccess<R> {
    pub fn new(root: Root, runner: R) -> NodeAccess<R> {
        NodeAccess { root, runner }
    }

    /// Runs a probe: any exit code is an answer, only failing to run it is an error.
    pub(crate) async fn probe(&self, command: Command) -> Result<pvfs_host::Output, StepError> {
        // Again while its daemon says it is busy, if the command says how it would.
        pvfs_host::run_while_busy(&self.runner, &command, false)
            .await
            .map_err(|err| StepError::Run { message: err.to_string() })
    }

    /// Runs a probe that must exit 0.
    pub(crate) async fn probe_ok(&self, command: Command) -> Result<String, StepError> {
        let shown = command.to_string();
        let out = self.probe(command).await?;
        if out.success() {
            Ok(out.stdout)
        } else {
            Err(StepError::Command { command: shown, code: out.code, stderr: error_tail(&out), hint: None })
        }
    }

    /// A host path read, `None` when it does not exist.
    pub(crate) fn read_optional(&self, path: &str) -> Result<Option<String>, StepError> {
        match self.root.read_to_string(path) {
            Ok(text) => Ok(Some(text)),
            Err(err) if err.is_not_found() => Ok(None),
            Err(err) => Err(StepError::File { path: path.to_owned(), message: err.source.to_string() }),
        }
    }

    /// The real path behind a device name (`/dev/disk/azure/scsi1/lun0` → `/dev/sdc`), as the
    /// host sees it. Unresolvable paths come back unchanged.
    pub(crate) fn resolve(&self, path: &str) -> String {
        match std::fs::canonicalize(self.root.path(path)) {
            Ok(real) => match real.strip_prefix(self.root.base()) {
                Ok(rel) => format!("/{}", rel.display()),
                Err(_) => real.display().to_string(),
            },
            Err(_) => path.to_owned(),
        }
    }
}

/// One thing a node should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Packages(Packages),
    File(File),
    ConfigKeys(ConfigKeys),
    Directory(Directory),
    Service(Service),
    Raid0(Raid0),
    LvmThin(LvmThin),
    Mkfs(Mkfs),
    LustreTarget(LustreTarget),
    LustreStripe(LustreStripe),
    LctlParam(LctlParam),
    Mount(Mount),
    BlockQueue(BlockQueue),
    GlusterPeers(GlusterPeers),
    GlusterVolume(GlusterVolume),
    BeegfsSetup(BeegfsSetup),
    /// `[bench] mpi_ssh`: root SSH between the clients for mpirun.
    MpiSsh(MpiSsh),
    /// The ports the node's file system role needs, opened in firewalld.
    Firewall(FirewallPorts),
    Gate(Gate),
    // The steps of `pvfsctl down`, each the reverse of one above.
    Unmount(Unmount),
    ServiceStopped(ServiceStopped),
    GlusterVolumeGone(GlusterVolumeGone),
    GlusterPeersDetached(GlusterPeersDetached),
    WipeTarget(WipeTarget),
    MpiSshGone(MpiSshGone),
}

impl Step {
    /// A short name for the kind of step (`mkfs`, `mount`, `gluster-volume`, …), for recaps and
    /// JSON events.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::Packages(_) => "packages",
            Step::File(_) => "file",
            Step::ConfigKeys(_) => "config-keys",
            Step::Directory(_) => "directory",
            Step::Service(_) => "service",
            Step::Raid0(_) => "raid0",
            Step::LvmThin(_) => "lvm-thin",
            Step::Mkfs(_) => "mkfs",
            Step::LustreTarget(_) => "lustre-target",
            Step::LustreStripe(_) => "lustre-stripe",
            Step::LctlParam(_) => "lctl-param",
            Step::Mount(_) => "mount",
            Step::BlockQueue(_) => "block-queue",
            Step::GlusterPeers(_) => "gluster-peers",
            Step::GlusterVolume(_) => "gluster-volume",
            Step::BeegfsSetup(_) => "beegfs-setup",
            Step::Gate(gate) => gate.kind.name(),
            Step::Unmount(_) => "unmount",
            Step::ServiceStopped(_) => "service-stopped",
            Step::GlusterVolumeGone(_) => "gluster-volume-gone",
            Step::GlusterPeersDetached(_) => "gluster-peers-detached",
            Step::WipeTarget(_) => "wipe",
            Step::MpiSsh(_) => "mpi-ssh",
            Step::Firewall(_) => "firewall",
            Step::MpiSshGone(_) => "mpi-ssh-gone",
        }
    }

    /// The configuration files this step writes, which services read at start (see
    /// [`Service::configs`]): a file, a config file's keys, the config a `beegfs-setup-*`
    /// script writes.
    pub fn configures(&self) -> Vec<String> {
        match self {
            Step::File(f) => vec![f.path.clone()],
            Step::ConfigKeys(c) => vec![c.path.clone()],
            Step::BeegfsSetup(b) => vec![b.service.conf()],
            _ => vec![],
        }
    }

    /// Read-only: what differs on the node, and what apply would run about it. Gates have no
    /// assessment; see [`Gate::probe`].
    pub async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        match self {
            Step::Packages(s) => s.assess(host).await,
            Step::File(s) => s.assess(host),
            Step::ConfigKeys(s) => s.assess(host),
            Step::Directory(s) => s.assess(host),
            Step::Service(s) => s.assess(host).await,
            Step::Raid0(s) => s.assess(host).await,
            Step::LvmThin(s) => s.assess(host).await,
            Step::Mkfs(s) => s.assess(host).await,
            Step::LustreTarget(s) => s.assess(host).await,
            Step::LustreStripe(s) => s.assess(host).await,
            Step::LctlParam(s) => s.assess(host).await,
            Step::Mount(s) => s.assess(host).await,
            Step::BlockQueue(s) => s.assess(host),
            Step::GlusterPeers(s) => s.assess(host).await,
            Step::GlusterVolume(s) => s.assess(host).await,
            Step::BeegfsSetup(s) => s.assess(host),
            Step::Gate(_) => Ok(Assessment::in_sync()),
            Step::Unmount(s) => s.0.assess_gone(host).await,
            Step::ServiceStopped(s) => s.assess(host).await,
            Step::GlusterVolumeGone(s) => s.assess(host).await,
            Step::GlusterPeersDetached(s) => s.assess(host).await,
            Step::WipeTarget(s) => s.assess(host).await,
            Step::MpiSsh(s) => s.assess(host),
            Step::Firewall(s) => s.assess(host).await,
            Step::MpiSshGone(s) => s.assess(host),
        }
    }
}

impl fmt::Display for Step {
    /// What the step makes true, in a few words: `mount /dev/loop0 on /bricks/b1 (xfs)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Packages(s) => s.fmt(f),
            Step::File(s) => s.fmt(f),
            Step::ConfigKeys(s) => s.fmt(f),
            Step::Directory(s) => s.fmt(f),
            Step::Service(s) => s.fmt(f),
            Step::Raid0(s) => s.fmt(f),
            Step::LvmThin(s) => s.fmt(f),
            Step::Mkfs(s) => s.fmt(f),
            Step::LustreTarget(s) => s.fmt(f),
            Step::LustreStripe(s) => s.fmt(f),
            Step::LctlParam(s) => s.fmt(f),
            Step::Mount(s) => s.fmt(f),
            Step::BlockQueue(s) => s.fmt(f),
            Step::GlusterPeers(s) => s.fmt(f),
            Step::GlusterVolume(s) => s.fmt(f),
            Step::BeegfsSetup(s) => s.fmt(f),
            Step::Gate(s) => s.fmt(f),
            Step::Unmount(s) => s.fmt(f),
            Step::ServiceStopped(s) => s.fmt(f),
            Step::GlusterVolumeGone(s) => s.fmt(f),
            Step::GlusterPeersDetached(s) => s.fmt(f),
            Step::WipeTarget(s) => s.fmt(f),
            Step::MpiSsh(s) => s.fmt(f),
            Step::Firewall(s) => s.fmt(f),
            Step::MpiSshGone(s) => s.fmt(f),
        }
    }
}

/// What a step found and would do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assessment {
    /// How the node differs from the step, one line each (`fstab has no entry for /rhs/brick1`).
    pub diff: Vec<String>,
    /// What apply runs to remove the differences, in order. Empty: in sync.
    pub actions: Vec<Action>,
    /// In sync, and why, when that is worth saying (`firewalld is inactive: no port to
    /// open`): shown as the step's detail.
    pub note: Option<String>,
}

impl Assessment {
    pub fn in_sync() -> Assessment {
        Assessment::default()
    }

    /// In sync, for the reason given.
    pub fn noted(why: impl Into<String>) -> Assessment {
        Assessment { note: Some(why.into()), ..Assessment::default() }
    }

    pub fn is_in_sync(&self) -> bool {
        self.actions.is_empty()
    }

    pub(crate) fn change(&mut self, why: impl Into<String>, action: Action) {
        self.diff.push(why.into());
        self.actions.push(action);
    }
}

/// One thing apply does. Data, so that a plan can show it and a test can compare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Run a command; it must exit 0.
    Run(Command),
    /// Run a command that destroys what is on `devices` (mkfs, `mdadm --create`, `pvcreate`,
    /// `wipefs --all`). Apply proves the devices again first, the same devices as assessed
    /// (`block::reprove`), and refuses if anything changed.
    Destroy { command: Command, devices: Vec<Proven> },
    /// Replace a file's contents (atomically: temp file, then rename).
    Write { path: String, contents: String, mode: u32 },
    /// Create a directory and its parents.
    Mkdir { path: String, mode: u32 },
    /// Write a kernel attribute (`/sys/block/md0/queue/scheduler`).
    Attribute { path: String, value: String },
    /// Record an md array in mdadm.conf from `mdadm --detail --brief` (known only once the
    /// array exists), then rebuild the initramfs so it assembles under the same name at boot.
    PersistMdadm { device: String, conf: String },
    /// Write zeros over a device's first and last MiB and the other places an "empty" proof
    /// reads (`pvfs_host::device::zero`), after proving it unused again: the last act of
    /// `down --wipe`, so that the next `up` finds the device empty.
    Zero { device: Proven },
    /// Remove a file (not a directory); one already gone is fine. Only `mpi-ssh-gone` does.
    Remove { path: String },
}

impl fmt::Display for Action {
    /// The action as an operator would type it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Run(command) | Action::Destroy { command, .. } => command.fmt(f),
            Action::Write { path, .. } => write!(f, "write {path}"),
            Action::Mkdir { path, mode } => write!(f, "mkdir -p -m {mode:o} {path}"),
            Action::Attribute { path, value } => write!(f, "echo {value} > {path}"),
            Action::PersistMdadm { device, conf } => {
                write!(f, "mdadm --detail --brief {device} >> {conf}")?;
                // Debian's path; that is where update-initramfs exists to be run.
                if conf.starts_with("/etc/mdadm/") { f.write_str("; update-initramfs -u") } else { Ok(()) }
            }
            Action::Remove { path } => write!(f, "rm -f {path}"),
            Action::Zero { device } => {
                write!(f, "zero the first and last MiB of {} (and where other signatures live)", device.path)
            }
        }
    }
}

/// Why a step could not be assessed, applied or verified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// The agent's policy does not allow the step or one of its actions.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The step would destroy or override something the cluster file did not allow.
    #[error("refusing: {reason}")]
    Refused { reason: String },
    /// The step would act on a device that is not there, so nothing can be proven about it.
    /// A run fails on it like a refusal; a dry run after earlier changes reports it pending,
    /// as an earlier step (an array, a volume) makes the device. Unlike [`StepError::Refused`],
    /// it says nothing about what a device holds.
    #[error("refusing: {reason}")]
    Unproven { reason: String },
    /// A command exited with a failure.
    #[error("`{command}` exited {}{}{}", code.map_or("on a signal".to_owned(), |c| c.to_string()),
        if stderr.is_empty() { String::new() } else { format!(": {stderr}") },
        hint.as_ref().map_or(String::new(), |h| format!(" ({h})")))]
    Command { command: String, code: Option<i32>, stderr: String, hint: Option<String> },
    /// A command could not be run (not installed, timed out).
    #[error("{message}")]
    Run { message: String },
    /// A tool answered something pvfs cannot read.
    #[error("`{command}` answered something unexpected: {message}")]
    Unexpected { command: String, message: String },
    #[error("{path}: {message}")]
    File { path: String, message: String },
    /// Apply finished but the node still differs.
    #[error("applied, but the node still differs: {}", diff.join("; "))]
    NotConverged { diff: Vec<String> },
    /// The step's packages are in place but the node runs another kernel than the one the
    /// cluster file pins: it must boot into `kernel` (installed) before anything after this step
    /// can work. Reported as [`Outcome::MustBoot`], not as a failure.
    #[error("this node must boot into kernel {kernel} (it runs {running})")]
    MustBoot { kernel: String, running: String },
    /// A gate's condition did not hold before its deadline.
    #[error("not ready after {}s: {last}", after.as_secs())]
    Deadline { after: Duration, last: String },
}

impl StepError {
    /// A safety refusal: the policy forbids the step, or it would destroy or override what
    /// the node holds. Always reported as a refusal, never as "pending" (a disk with data must
    /// not look like one an earlier step has yet to make).
    pub fn is_refusal(&self) -> bool {
        matches!(self, StepError::Policy(_) | StepError::Refused { .. })
    }

    /// The command involved, when there was one.
    pub fn command(&self) -> Option<&str> {
        match self {
            StepError::Command { command, .. } | StepError::Unexpected { command, .. } => Some(command),
            _ => None,
        }
    }
}

/// A `testdata/` fixture as its tool printed it: without the `#` lines of its header, which
/// cite where the output comes from (no tool whose output is kept there starts a line so).
#[cfg(test)]
pub(crate) fn without_header(text: &str) -> String {
    text.lines().filter(|l| !l.starts_with('#')).map(|l| format!("{l}\n")).collect()
}

/// Lines of `text` that differ from `want`, as `-old`/`+new` for a short human diff.
pub(crate) fn line_diff(old: &str, new: &str) -> Vec<String> {
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let mut out = Vec::new();
    for line in &old_lines {
        if !new_lines.contains(line) {
            out.push(format!("-{line}"));
        }
    }
    for line in &new_lines {
        if !old_lines.contains(line) {
            out.push(format!("+{line}"));
        }
    }
    out
}

/// What a failed command said, short enough for a message: stderr, or stdout for tools that
/// report errors there; its first lines and its last, with how many were left out between.
/// Both ends, because tools put the cause at either: after their progress (yum, mkfs), or
/// first and then their usage (`lfs setstripe` without a file: "lfs setstripe setstripe: FILE
/// must be specified", then 57 lines of usage, testdata/lustre/setstripe-no-file-2.15.txt).
pub(crate) fn error_tail(out: &pvfs_host::Output) -> String {
    const FIRST: usize = 2;
    const LAST: usize = 4;
    let text = if out.stderr.trim().is_empty() { &out.stdout } else { &out.stderr };
    let lines: Vec<&str> = text.trim_end().lines().skip_while(|l| l.trim().is_empty()).collect();
    // One line left out is shown rather than counted.
    if lines.len() <= FIRST + LAST + 1 {
        return lines.join("\n");
    }
    let left_out = format!("… ({} lines left out)", lines.len() - FIRST - LAST);
    let mut kept = lines[..FIRST].to_vec();
    kept.push(&left_out);
    kept.extend(&lines[lines.len() - LAST..]);
    kept.join("\n")
}
