//! Gates: readiness waits between nodes and validations at the end. They change nothing; they
//! probe until a condition holds or their deadline passes, backing off between probes.

use crate::gluster::{GlusterVolume, Rebalance, peers, rebalance_status};
use crate::{NodeAccess, StepError};
use pvfs_host::{Command, Runner};
use std::fmt;
use std::time::Duration;

/// A condition the run waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    pub kind: GateKind,
    /// How long to wait before failing.
    pub deadline: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateKind {
    /// Every peer is connected and "Peer in Cluster" (glusterd has finished the handshake; a
    /// volume create before that fails with "Host … is not in 'Peer in Cluster' state").
    GlusterPeersInCluster { peers: Vec<String> },
    /// Every brick process of the volume is online (`volume status`).
    GlusterBricksOnline { volume: String, bricks: Vec<String> },
    /// A rebalance or fix-layout of the volume (after `add-brick`) has finished on every
    /// server (`volume rebalance VOL status`); one that failed or was stopped fails the gate.
    /// A volume no rebalance ever ran on passes at once.
    GlusterRebalanced { volume: String },
    /// The node reaches a Lustre NID over LNet (`lctl ping`): the MGS before OSTs or clients
    /// mount.
    LnetPing { nid: String },
    /// LNet on this node has the NID the cluster file gives it (`lctl list_nids`): the address
    /// other nodes reach it at is on the interface LNet uses. Waits while LNet is not up; a
    /// node whose NIDs are all others fails at once, naming them (it would not change by
    /// waiting, and OSTs or clients would then fail to reach it with less to go on).
    LnetNid { nid: String },
    /// `lfs check servers` on a client: every MDT/OST connection active.
    LfsCheckServers,
    /// The BeeGFS management daemon answers (`beegfs-ctl --listnodes --nodetype=management
    /// --reachable --errorcodes`).
    BeegfsMgmtdReachable,
    /// `beegfs-check-servers`: every management, metadata and storage server reachable.
    BeegfsCheckServers,
    /// `beegfs-ctl --listtargets --state` for metadata and storage: at least `meta` and
    /// `storage` targets registered, and every one Online and Good. Reachable servers are not
    /// enough for a client: a target that is Offline or Needs-resync (a storage directory
    /// the daemon could not use, a buddy out of sync) fails the client's writes to it.
    BeegfsTargetsGood { meta: u32, storage: u32 },
    /// A file can be created, written, synced, read back and removed in this directory: the
    /// client's view of the file system works end to end.
    Writable { dir: String },
    /// The topmost mount on `dir` is of type `fstype`, as the kernel says
    /// (`/proc/self/mountinfo`): the write probe alone also passes on a plain directory, or
    /// on whatever was mounted there instead.
    MountedAs { dir: String, fstype: String },
    /// The running kernel's build tree is installed (`/lib/modules/RELEASE/build`, RELEASE
    /// from `/proc/sys/kernel/osrelease`): what an out-of-tree module (BeeGFS's client) is
    /// compiled against when its service starts. `kernel-devel` installs the newest kernel's
    /// headers, which are not the running kernel's on a node that has not rebooted since its
    /// last kernel update.
    KernelBuildTree,
}

impl GateKind {
    pub fn name(&self) -> &'static str {
        match self {
            GateKind::GlusterPeersInCluster { .. } => "wait-gluster-peers",
            GateKind::GlusterBricksOnline { .. } => "check-gluster-bricks",
            GateKind::GlusterRebalanced { .. } => "wait-gluster-rebalance",
            GateKind::LnetPing { .. } => "wait-lnet",
            GateKind::LnetNid { .. } => "check-lnet-nid",
            GateKind::LfsCheckServers => "check-lustre-servers",
            GateKind::BeegfsMgmtdReachable => "wait-beegfs-mgmtd",
            GateKind::BeegfsCheckServers => "check-beegfs-servers",
            GateKind::BeegfsTargetsGood { .. } => "check-beegfs-targets",
            GateKind::Writable { .. } => "check-writable",
            GateKind::MountedAs { .. } => "check-mounted",
            GateKind::KernelBuildTree => "check-kernel-headers",
        }
    }
}

/// One probe's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GateState {
    Ready(String),
    NotReady(String),
}

impl Gate {
    /// The longest an agent waits for a gate. The planner's deadlines are minutes; a caller
    /// asking for more is refused where steps are decoded, so one call cannot keep a node busy
    /// (and its Apply lock held) for longer.
    pub const MAX_DEADLINE: Duration = Duration::from_secs(3600);

    /// Probes once.
    pub(crate) async fn probe<R: Runner>(&self, host: &NodeAccess<R>) -> Result<GateState, StepError> {
        use GateState::{NotReady, Ready};
        Ok(match &self.kind {
            GateKind::GlusterPeersInCluster { peers: want } => peers_in_cluster(host, want).await?,
            GateKind::GlusterBricksOnline { volume, bricks } => bricks_online(host, volume, bricks).await?,
            GateKind::GlusterRebalanced { volume } => match rebalance_status(host, volume).await? {
                Rebalance::NeverRun => Ready(format!("no rebalance has run on {volume}")),
                Rebalance::Done(detail) => Ready(detail),
                Rebalance::Running(detail) => NotReady(detail),
                Rebalance::Failed(detail) => {
                    return Err(StepError::Command {
                        command: format!("gluster --xml volume rebalance {volume} status"),
                        code: None,
                        stderr: detail,
                        hint: Some(format!(
                            "see /var/log/glusterfs/{volume}-rebalance.log on those servers, then run `gluster volume rebalance {volume} fix-layout start` again"
                        )),
                    });
                }
            },
            GateKind::LnetPing { nid } => {
                exit_zero(host, Command::new("lctl").args(["ping", nid]), &format!("{nid} answers over LNet"))
                    .await?
            }
            GateKind::LnetNid { nid } => lnet_nid(host, nid).await?,
            GateKind::LfsCheckServers => {
                let command = Command::new("lfs").args(["check", "servers"]);
                let shown = command.to_string();
                let out = host.probe(command).await?;
                let servers = parse_check_servers(&out.stdout, &out.stderr)
                    .map_err(|err| StepError::Unexpected { command: shown, message: err.to_string() })?;
                check_servers_state(&servers, &out)
            }
            GateKind::BeegfsMgmtdReachable => {
                let cmd = Command::new("beegfs-ctl").args([
                    "--listnodes",
                    "--nodetype=management",
                    "--reachable",
                    "--errorcodes",
                ]);
                exit_zero(host, cmd, "management daemon reachable").await?
            }
            GateKind::BeegfsCheckServers => beegfs_servers(host).await?,
            GateKind::BeegfsTargetsGood { meta, storage } => beegfs_targets(host, *meta, *storage).await?,
            GateKind::MountedAs { dir, fstype } => mounted_as(host, dir, fstype)?,
            GateKind::KernelBuildTree => kernel_build_tree(host)?,
            GateKind::Writable { dir } => writable_dir(host, dir).await?,
        })
    }

    /// Probes until the condition holds (returns what the last probe saw), the deadline passes,
    /// or `keep_going` says the caller is gone: the gate then stops within
    /// [`CALLER_CHECK`], so a caller that went away does not keep the agent busy (and its
    /// Apply lock held) until a deadline that may be an hour off.
    ///
    /// `on_progress` hears what each probe saw whenever it changes (a fix-layout's scanned
    /// entries, a peer's state), so a long wait is followed live.
    pub(crate) async fn wait<R: Runner>(
        &self,
        host: &NodeAccess<R>,
        keep_going: &(dyn Fn() -> bool + Sync),
        on_progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Waited, StepError> {
        let started = tokio::time::Instant::now();
        let mut pause = Duration::from_millis(250);
        let mut shown: Option<String> = None;
        loop {
            let last = match self.probe(host).await? {
                GateState::Ready(detail) => return Ok(Waited::Ready(detail)),
                GateState::NotReady(last) => last,
            };
            if started.elapsed() + pause > self.deadline {
                return Err(StepError::Deadline { after: self.deadline, last });
            }
            // A long wait (a fix-layout over a large volume) is followed in the agent's log:
            // each new state once, at info; repeats at debug.
            if shown.as_deref() != Some(last.as_str()) {
                on_progress(&last);
                tracing::info!(gate = self.kind.name(), waited_s = started.elapsed().as_secs(), %last, "not ready yet");
                shown = Some(last.clone());
            } else {
                tracing::debug!(gate = self.kind.name(), %last, "not ready yet");
            }
            let wake = tokio::time::Instant::now() + pause;
            loop {
                if !keep_going() {
                    return Ok(Waited::Abandoned { after: started.elapsed(), last });
                }
                let now = tokio::time::Instant::now();
                if now >= wake {
                    break;
                }
                tokio::time::sleep((wake - now).min(CALLER_CHECK)).await;
            }
            pause = (pause * 2).min(Duration::from_secs(5));
        }
    }
}

/// How often a waiting gate looks whether its caller is still there.
const CALLER_CHECK: Duration = Duration::from_millis(250);

/// How a wait ended, short of an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Waited {
    /// The condition holds; what the last probe saw.
    Ready(String),
    /// The caller went away first; how long the gate waited and what it saw last.
    Abandoned { after: Duration, last: String },
}

/// Ready when `command` exits 0; otherwise not ready, with what it said.
async fn exit_zero<R: Runner>(
    host: &NodeAccess<R>,
    command: Command,
    ready: &str,
) -> Result<GateState, StepError> {
    let shown = command.to_string();
    let out = host.probe(command).await?;
    Ok(if out.success() {
        GateState::Ready(ready.to_owned())
    } else {
        let code = out.code.map_or("on a signal".to_owned(), |c| c.to_string());
        GateState::NotReady(format!("`{shown}` exited {code}: {}", crate::error_tail(&out)))
    })
}

/// [`GateKind::GlusterPeersInCluster`]: the peers of `want` not yet in the cluster, with the
/// state glusterd gives each.
async fn peers_in_cluster<R: Runner>(host: &NodeAccess<R>, want: &[String]) -> Result<GateState, StepError> {
    let known = peers(host).await?;
    let waiting: Vec<String> = want
        .iter()
        .filter_map(|p| match known.iter().find(|k| k.names.contains(p)) {
            Some(k) if k.in_cluster() => None,
            Some(k) => {
                Some(format!("{p}: {} ({})", k.state, if k.connected { "connected" } else { "disconnected" }))
            }
            None => Some(format!("{p}: not in the pool")),
        })
        .collect();
    Ok(if waiting.is_empty() {
        GateState::Ready(format!("{} peers in cluster", want.len()))
    } else {
        GateState::NotReady(waiting.join("; "))
    })
}

/// [`GateKind::GlusterBricksOnline`]: the volume's bricks whose processes are not online.
async fn bricks_online<R: Runner>(
    host: &NodeAccess<R>,
    volume: &str,
    bricks: &[String],
) -> Result<GateState, StepError> {
    let v = GlusterVolume {
        name: volume.to_owned(),
        layout: crate::GlusterLayout::Distribute,
        bricks: bricks.to_vec(),
        options: vec![],
    };
    let offline = v.offline_bricks(host).await?;
    Ok(if offline.is_empty() {
        GateState::Ready(format!("{} bricks online", bricks.len()))
    } else {
        GateState::NotReady(format!("offline: {}", offline.join(" ")))
    })
}

/// [`GateKind::LnetNid`]: waits while LNet is down or lists no NID; a node whose NIDs are all
/// others fails at once, since waiting would not change them.
async fn lnet_nid<R: Runner>(host: &NodeAccess<R>, nid: &str) -> Result<GateState, StepError> {
    let command = Command::new("lctl").arg("list_nids");
    let shown = command.to_string();
    let out = host.probe(command).await?;
    if !out.success() {
        // No /dev/lnet (modules not loaded) or the network not up yet.
        return Ok(GateState::NotReady(format!("LNet is not up: {}", crate::error_tail(&out))));
    }
    let nids = parse_list_nids(&out.stdout)
        .map_err(|err| StepError::Unexpected { command: shown.clone(), message: err.to_string() })?;
    Ok(if nids.iter().any(|have| same_nid(have, nid)) {
        GateState::Ready(format!("LNet's NID here is {nid}"))
    } else if nids.is_empty() {
        GateState::NotReady("LNet lists no NID yet".to_owned())
    } else {
        return Err(StepError::Command {
            command: shown,
            code: out.code,
            stderr: format!("this node's NIDs are {}, not {nid}", nids.join(", ")),
            hint: Some(
                "give the node `lnet_address` (its address on the interface LNet uses) in \
                 the cluster file, or pin LNet to the interface with that address \
                 (`[lustre] lnet = \"tcp(IFACE)\"`)"
                    .to_owned(),
            ),
        });
    })
}

/// [`GateKind::BeegfsCheckServers`]: every section of `beegfs-check-servers` has a server, and
/// every server listed is reachable.
async fn beegfs_servers<R: Runner>(host: &NodeAccess<R>) -> Result<GateState, StepError> {
    let out = host.probe(Command::new("beegfs-check-servers")).await?;
    if !out.success() {
        // beegfs-ctl failed (no management daemon, a wrong secret): the script
        // passes its output to stderr and exits 1.
        return Ok(GateState::NotReady(format!("beegfs-check-servers failed: {}", crate::error_tail(&out))));
    }
    let sections = parse_beegfs_check_servers(&out.stdout).map_err(|err| StepError::Unexpected {
        command: "beegfs-check-servers".into(),
        message: err.to_string(),
    })?;
    let mut waiting = Vec::new();
    let mut count = 0;
    for (section, servers) in &sections {
        if servers.is_empty() {
            waiting.push(format!("no {} server registered yet", section.to_lowercase()));
        }
        for (name, reachable) in servers {
            count += 1;
            if !reachable {
                waiting.push(format!("{section} {name} unreachable"));
            }
        }
    }
    Ok(if waiting.is_empty() {
        GateState::Ready(format!("{count} servers reachable"))
    } else {
        GateState::NotReady(waiting.join("; "))
    })
}

/// [`GateKind::BeegfsTargetsGood`]: enough metadata and storage targets registered, each
/// Online and Good; one `beegfs-ctl --listtargets` per node type.
async fn beegfs_targets<R: Runner>(
    host: &NodeAccess<R>,
    meta: u32,
    storage: u32,
) -> Result<GateState, StepError> {
    let mut waiting = Vec::new();
    let mut counted = Vec::new();
    for (nodetype, want) in [("meta", meta), ("storage", storage)] {
        let command =
            Command::new("beegfs-ctl").args(["--listtargets", &format!("--nodetype={nodetype}"), "--state"]);
        let shown = command.to_string();
        let out = host.probe(command).await?;
        if !out.success() {
            waiting.push(format!("`{shown}` failed: {}", crate::error_tail(&out)));
            continue;
        }
        let targets = parse_beegfs_targets(&out.stdout)
            .map_err(|err| StepError::Unexpected { command: shown, message: err.to_string() })?;
        let bad: Vec<String> = targets
            .iter()
            .filter(|t| t.reachability != "Online" || t.consistency != "Good")
            .map(|t| {
                format!("{nodetype} target {} on node {}: {}/{}", t.id, t.node, t.reachability, t.consistency)
            })
            .collect();
        if targets.len() < want as usize {
            waiting.push(format!("{} of {want} {nodetype} targets registered", targets.len()));
        }
        waiting.extend(bad);
        counted.push(format!("{} {nodetype}", targets.len()));
    }
    Ok(if waiting.is_empty() {
        GateState::Ready(format!("targets Online and Good: {}", counted.join(", ")))
    } else {
        GateState::NotReady(waiting.join("; "))
    })
}

/// [`GateKind::MountedAs`]: the type of the topmost mount on `dir`, from mountinfo.
fn mounted_as<R: Runner>(host: &NodeAccess<R>, dir: &str, fstype: &str) -> Result<GateState, StepError> {
    let mounts = pvfs_host::mountinfo::read(&host.root).map_err(|err| StepError::File {
        path: pvfs_host::mountinfo::PATH.into(),
        message: err.to_string(),
    })?;
    Ok(match pvfs_host::mountinfo::visible_at(&mounts, dir).map(|m| &m.fstype) {
        Some(have) if have == fstype => GateState::Ready(format!("{dir} is a {fstype} mount")),
        Some(have) => GateState::NotReady(format!("{dir} is a {have} mount, not {fstype}")),
        None => GateState::NotReady(format!("nothing is mounted on {dir}")),
    })
}

/// [`GateKind::KernelBuildTree`]: the running kernel's `/lib/modules/RELEASE/build` resolves to a
/// directory under the root.
fn kernel_build_tree<R: Runner>(host: &NodeAccess<R>) -> Result<GateState, StepError> {
    let path = "/proc/sys/kernel/osrelease";
    let release = host.read_optional(path)?.unwrap_or_default();
    let release = release.trim();
    if release.is_empty() || release.contains(['/', ' ']) {
        return Err(StepError::Unexpected {
            command: format!("cat {path}"),
            message: format!("{release:?} is not a kernel release"),
        });
    }
    let build = format!("/lib/modules/{release}/build");
    // The link the kernel package makes resolves only once the matching
    // kernel-devel is installed.
    // (an absolute link, /usr/src/kernels/RELEASE: followed under the root).
    let link = host.root.path(&build);
    let target = match std::fs::read_link(&link) {
        Ok(t) if t.is_absolute() => host.root.path(&t.to_string_lossy()),
        Ok(t) => link.parent().map_or(t.clone(), |p| p.join(&t)),
        Err(_) => link,
    };
    Ok(if target.is_dir() {
        GateState::Ready(format!("{build} is installed"))
    } else {
        GateState::NotReady(format!(
            "{build} does not exist: the headers of the running kernel {release} are not installed \
             (install kernel-devel-{release}, or boot into the kernel the installed kernel-devel is for)"
        ))
    })
}

/// [`GateKind::Writable`]: the write probe of [`writable`], bounded by [`WRITE_PROBE_LIMIT`].
async fn writable_dir<R: Runner>(host: &NodeAccess<R>, dir: &str) -> Result<GateState, StepError> {
    // On its own thread with a limit: I/O on a hung network mount blocks in the
    // kernel, and must not take one of the agent's runtime threads with it.
    let path = host.root.path(dir);
    let (shown, probe) = (dir, tokio::task::spawn_blocking(move || writable(&path)));
    Ok(match tokio::time::timeout(WRITE_PROBE_LIMIT, probe).await {
        Ok(Ok(Ok(()))) => GateState::Ready(format!("{shown} is writable")),
        Ok(Ok(Err(err))) => GateState::NotReady(format!("{shown}: {err}")),
        Ok(Err(err)) => GateState::NotReady(format!("{shown}: the probe failed: {err}")),
        Err(_) => GateState::NotReady(format!(
            "{shown}: no answer within {}s (a hung mount?)",
            WRITE_PROBE_LIMIT.as_secs()
        )),
    })
}

/// A line of a gate tool's output its parser cannot read: the gate fails, naming it, rather
/// than guess (a probe that cannot read its tool must not pass a gate).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ToolOutputError {
    #[error("{line:?} is not a NID (ADDRESS@NETWORK, e.g. 10.0.2.15@tcp)")]
    NotANid { line: String },
    #[error("line {line:?}")]
    NoServerState { line: String },
    #[error("line {line:?} (expected NAME active. or NAME inactive.)")]
    UnknownServerState { line: String },
    #[error("line {line:?} (no device name)")]
    NoDeviceName { line: String },
    #[error("{line:?} comes before any section heading")]
    BeforeAnySection { line: String },
    #[error("{line:?} is not `NAME [ID: N]: reachable at …` or `…: UNREACHABLE`")]
    NotAServerLine { line: String },
    #[error("sections {found:?}, not Management, Metadata and Storage")]
    WrongSections { found: Vec<String> },
    #[error("{what}: {line:?}")]
    TargetTable { what: String, line: String },
}

impl ToolOutputError {
    fn table(what: &str, line: &str) -> ToolOutputError {
        ToolOutputError::TargetTable { what: what.to_owned(), line: line.to_owned() }
    }
}

/// `lctl list_nids`: one NID per line, as libcfs_nid2str prints it (`10.0.2.15@tcp`,
/// `192.168.10.2@o2ib1`), the loopback NID left out (lnet/utils/portals.c,
/// jt_ptl_list_nids). Anything else is refused rather than guessed at.
pub(crate) fn parse_list_nids(stdout: &str) -> Result<Vec<String>, ToolOutputError> {
    let mut nids = Vec::new();
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let valid = line.split_once('@').is_some_and(|(address, net)| {
            !address.is_empty() && !address.contains(char::is_whitespace) && split_net(net).is_some()
        });
        if !valid {
            return Err(ToolOutputError::NotANid { line: line.to_owned() });
        }
        nids.push(line.to_owned());
    }
    Ok(nids)
}

/// A network's type and number: `tcp` → ("tcp", 0), `o2ib1` → ("o2ib", 1).
fn split_net(net: &str) -> Option<(&str, u32)> {
    let digits = net.len() - net.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (kind, number) = net.split_at(net.len() - digits);
    if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return None;
    }
    Some((kind, if number.is_empty() { 0 } else { number.parse().ok()? }))
}

/// Two NIDs name the same address on the same network: `tcp0` is `tcp` (libcfs prints
/// network number 0 without it).
fn same_nid(a: &str, b: &str) -> bool {
    match (a.split_once('@'), b.split_once('@')) {
        (Some((a_addr, a_net)), Some((b_addr, b_net))) => {
            a_addr == b_addr && split_net(a_net).is_some() && split_net(a_net) == split_net(b_net)
        }
        _ => false,
    }
}

/// One connection `lfs check servers` reports on: the client's device for a target
/// (`lustrefs-OST0001-osc-ffff88003bfbd000`) and its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerConnection {
    pub(crate) device: String,
    pub(crate) state: ConnectionState,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ConnectionState {
    /// `NAME active.`: the target answered a ping.
    Active,
    /// `NAME inactive.`: the import is deactivated (ENOTCONN), by an administrator or because the
    /// target was never reached.
    Inactive,
    /// `error: check 'NAME': MESSAGE (ERRNO)` on stderr: the ping failed (EAGAIN while the
    /// target recovers, EIO, ETIMEDOUT, …); the message as lfs printed it.
    Error(String),
}

/// Reads `lfs check servers`.
///
/// The format is liblustreapi's `do_target_check()` (lustre/utils/liblustreapi.c, the same from
/// 2.4 through 2.15): one line per mdc/osc device on stdout, `"%s active.\n"` or
/// `"%s inactive.\n"`, and for any other failure of the ping `llapi_error(..., "error: check
/// '%s'", name)` on stderr, which appends `": strerror (errno)"`. Some versions and vendor
/// builds print the name with a colon and no period (`NAME: active`), so the state is the last
/// word with a trailing period removed and the name loses a trailing colon; the state must be
/// exactly `active` or `inactive` (a suffix test would take `inactive.` for active). Any other
/// stdout line is refused: a probe that cannot read its tool must not pass a gate.
pub(crate) fn parse_check_servers(
    stdout: &str,
    stderr: &str,
) -> Result<Vec<ServerConnection>, ToolOutputError> {
    let mut servers = Vec::new();
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (device, state) = line
            .rsplit_once(char::is_whitespace)
            .ok_or_else(|| ToolOutputError::NoServerState { line: line.to_owned() })?;
        let device = device.trim_end().trim_end_matches(':');
        let state = match state.strip_suffix('.').unwrap_or(state) {
            "active" => ConnectionState::Active,
            "inactive" => ConnectionState::Inactive,
            _ => return Err(ToolOutputError::UnknownServerState { line: line.to_owned() }),
        };
        if device.is_empty() || device.contains(char::is_whitespace) {
            return Err(ToolOutputError::NoDeviceName { line: line.to_owned() });
        }
        servers.push(ServerConnection { device: device.to_owned(), state });
    }
    for line in stderr.lines() {
        // "error: check 'NAME': Resource temporarily unavailable (11)", possibly behind a
        // program-name prefix ("lfs check: ...").
        let Some((_, rest)) = line.split_once("check '") else { continue };
        let Some((device, message)) = rest.split_once('\'') else { continue };
        let message = message.trim_start_matches(':').trim();
        let state =
            ConnectionState::Error(if message.is_empty() { "error".into() } else { message.to_owned() });
        servers.push(ServerConnection { device: device.to_owned(), state });
    }
    Ok(servers)
}

/// Ready when lfs exited 0, listed at least one connection and every one is active.
fn check_servers_state(servers: &[ServerConnection], out: &pvfs_host::Output) -> GateState {
    let waiting: Vec<String> = servers
        .iter()
        .filter_map(|s| match &s.state {
            ConnectionState::Active => None,
            ConnectionState::Inactive => Some(format!("{} inactive", s.device)),
            ConnectionState::Error(message) => Some(format!("{}: {message}", s.device)),
        })
        .collect();
    if !waiting.is_empty() {
        return GateState::NotReady(waiting.join("; "));
    }
    if !out.success() {
        let code = out.code.map_or("on a signal".to_owned(), |c| c.to_string());
        return GateState::NotReady(format!("`lfs check servers` exited {code}: {}", crate::error_tail(out)));
    }
    if servers.is_empty() {
        // lfs prints nothing when the client has no mdc/osc devices: no Lustre mounted here.
        return GateState::NotReady(
            "`lfs check servers` listed no server connections (no Lustre client mounted?)".into(),
        );
    }
    GateState::Ready(format!("{} server connections active", servers.len()))
}

/// A node type's heading in `beegfs-check-servers` output, and each server under it with
/// whether it is reachable.
pub(crate) type CheckSection = (String, Vec<(String, bool)>);

/// The sections of `beegfs-check-servers` output (ThinkParQ/beegfs
/// utils/scripts/beegfs-check-servers, 7.x): `Management`, `Metadata`, `Storage`, each a
/// heading, a `==========` line and one line per registered server, `NAME [ID: N]: reachable
/// at ADDR:PORT (protocol: …)` or `NAME [ID: N]: UNREACHABLE`. Each section with its servers
/// and whether each is reachable; the three sections must all be there.
pub(crate) fn parse_beegfs_check_servers(text: &str) -> Result<Vec<CheckSection>, ToolOutputError> {
    let mut sections: Vec<CheckSection> = Vec::new();
    let mut lines = text.lines().map(str::trim_end).peekable();
    while let Some(line) = lines.next() {
        if line.is_empty() {
            continue;
        }
        if matches!(line, "Management" | "Metadata" | "Storage") && lines.peek() == Some(&"==========") {
            lines.next();
            sections.push((line.to_owned(), Vec::new()));
            continue;
        }
        let Some((_, servers)) = sections.last_mut() else {
            return Err(ToolOutputError::BeforeAnySection { line: line.to_owned() });
        };
        let server = line.split_once("]: ").and_then(|(name, state)| {
            name.contains(" [ID: ").then_some(())?;
            let reachable = if state.starts_with("reachable at ") {
                true
            } else if state == "UNREACHABLE" {
                false
            } else {
                return None;
            };
            Some((format!("{name}]"), reachable))
        });
        match server {
            Some(server) => servers.push(server),
            None => {
                return Err(ToolOutputError::NotAServerLine { line: line.to_owned() });
            }
        }
    }
    let names: Vec<&str> = sections.iter().map(|(s, _)| s.as_str()).collect();
    if names != ["Management", "Metadata", "Storage"] {
        let found = names.into_iter().map(str::to_owned).collect();
        return Err(ToolOutputError::WrongSections { found });
    }
    Ok(sections)
}

/// How long one write probe may take before the mount is called hung.
const WRITE_PROBE_LIMIT: Duration = Duration::from_secs(30);

/// Creates, writes, syncs, reads back and removes a probe file in `dir` (a host path).
///
/// The directory is a client mount other users write to, so the probe's name is random and
/// created `O_EXCL|O_NOFOLLOW`: a name planted in advance (a symlink to a root file, say) is
/// never opened, only skipped. The read-back goes through the same descriptor, never the
/// name again.
/// One row of `beegfs-ctl --listtargets --state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BeegfsTarget {
    pub id: u32,
    pub reachability: String,
    pub consistency: String,
    pub node: String,
}

/// `beegfs-ctl --listtargets --nodetype=… --state` (7.x, ModeListTargets): a heading
/// `TargetID  Reachability  Consistency  NodeID`, a rule of `=`, then one row per target, the
/// states one word each (`Online`, `Probably-offline`, `Offline`; `Good`, `Needs-resync`,
/// `Bad`) and the node last (with `--longnodes`, `beegfs-meta NAME [ID: N]`, spaces and all).
/// The columns are found by the heading, so other options' columns may come between.
pub(crate) fn parse_beegfs_targets(text: &str) -> Result<Vec<BeegfsTarget>, ToolOutputError> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let heading: Vec<&str> =
        lines.next().ok_or_else(|| ToolOutputError::table("no heading", text))?.split_whitespace().collect();
    let column = |name: &str| {
        heading
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| ToolOutputError::table(&format!("no {name} column"), text))
    };
    let (id, reach, consist, node) =
        (column("TargetID")?, column("Reachability")?, column("Consistency")?, column("NodeID")?);
    if node != heading.len() - 1 {
        return Err(ToolOutputError::table("NodeID is not the last column", text));
    }
    match lines.next() {
        Some(rule) if rule.trim().starts_with('=') => {}
        _ => return Err(ToolOutputError::table("no rule under the heading", text)),
    }
    lines
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            if words.len() < heading.len() {
                return Err(ToolOutputError::table("a row with fewer columns than the heading", line));
            }
            Ok(BeegfsTarget {
                id: words[id]
                    .parse()
                    .map_err(|_| ToolOutputError::table("a target ID that is not a number", line))?,
                reachability: words[reach].to_owned(),
                consistency: words[consist].to_owned(),
                node: words[node..].join(" "),
            })
        })
        .collect()
}

fn writable(dir: &std::path::Path) -> std::io::Result<()> {
    use std::io::{Read, Seek, Write};
    use std::os::unix::fs::OpenOptionsExt;
    let payload = b"pvfs write probe\n";
    let (path, mut f) = {
        let mut tries = 0;
        loop {
            let path = dir.join(format!(".pvfs-probe-{:016x}", fastrand::u64(..)));
            let opened = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(nix::libc::O_NOFOLLOW)
                .open(&path);
            match opened {
                Ok(f) => break (path, f),
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && tries < 16 => tries += 1,
                Err(err) => return Err(err),
            }
        }
    };
    let result = (|| -> std::io::Result<()> {
        f.write_all(payload)?;
        f.sync_all()?;
        f.rewind()?;
        let mut back = Vec::new();
        f.read_to_end(&mut back)?;
        if back != payload {
            return Err(std::io::Error::other("read back different bytes"));
        }
        Ok(())
    })();
    // The name is ours (created O_EXCL), so removing it removes only what the probe made.
    let removed = std::fs::remove_file(&path);
    result.and(removed)
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            GateKind::GlusterPeersInCluster { peers } => {
                write!(f, "wait until {} are in cluster", peers.join(", "))
            }
            GateKind::GlusterBricksOnline { volume, bricks } => {
                write!(f, "check the {} bricks of {volume} are online", bricks.len())
            }
            GateKind::GlusterRebalanced { volume } => {
                write!(f, "wait until any rebalance of {volume} has finished")
            }
            GateKind::LnetPing { nid } => write!(f, "wait until {nid} answers lctl ping"),
            GateKind::LnetNid { nid } => write!(f, "check that LNet's NID here is {nid}"),
            GateKind::LfsCheckServers => f.write_str("check lfs check servers"),
            GateKind::BeegfsMgmtdReachable => {
                f.write_str("wait until the BeeGFS management daemon is reachable")
            }
            GateKind::BeegfsCheckServers => f.write_str("check beegfs-check-servers"),
            GateKind::BeegfsTargetsGood { meta, storage } => write!(
                f,
                "wait until {meta} metadata and {storage} storage targets are Online and Good (beegfs-ctl --listtargets --state)"
            ),
            GateKind::Writable { dir } => write!(f, "check {dir} is writable"),
            GateKind::MountedAs { dir, fstype } => write!(f, "check {dir} is a {fstype} mount"),
            GateKind::KernelBuildTree => f.write_str("check the running kernel's headers are installed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outcome, Step, execute};
    use pvfs_host::{RecordedRunner, Root};

    fn host(runner: RecordedRunner) -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
        let dir = tempfile::tempdir().unwrap();
        let host = NodeAccess::new(Root::at(dir.path()), runner);
        (dir, host)
    }

    const ACCEPTED: &str = r#"<?xml version="1.0"?><cliOutput><opRet>0</opRet><opErrno>0</opErrno><opErrstr/><peerStatus><peer><uuid>a</uuid><hostname>10.254.0.2</hostname><connected>1</connected><state>5</state><stateStr>Accepted peer request</stateStr></peer></peerStatus></cliOutput>"#;
    const IN_CLUSTER: &str = r#"<?xml version="1.0"?><cliOutput><opRet>0</opRet><opErrno>0</opErrno><opErrstr/><peerStatus><peer><uuid>a</uuid><hostname>10.254.0.2</hostname><connected>1</connected><state>3</state><stateStr>Peer in Cluster</stateStr></peer></peerStatus></cliOutput>"#;

    #[tokio::test(start_paused = true)]
    async fn waits_until_peers_are_in_cluster() {
        let runner = RecordedRunner::new()
            .record("gluster --xml peer status", 0, ACCEPTED, "")
            .record("gluster --xml peer status", 0, ACCEPTED, "")
            .record("gluster --xml peer status", 0, IN_CLUSTER, "");
        let (_d, host) = host(runner.clone());
        let gate = Gate {
            kind: GateKind::GlusterPeersInCluster { peers: vec!["10.254.0.2".into()] },
            deadline: Duration::from_secs(30),
        };
        assert_eq!(
            execute(&Step::Gate(gate.clone()), &host, &crate::Unguarded, true, |_| {}).await,
            Outcome::Pending { detail: "10.254.0.2: Accepted peer request (connected)".into() }
        );
        assert_eq!(
            execute(&Step::Gate(gate), &host, &crate::Unguarded, false, |_| {}).await,
            Outcome::Ok { detail: Some("1 peers in cluster".into()) }
        );
        assert_eq!(runner.calls().len(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_names_what_was_last_seen() {
        let runner = RecordedRunner::new().record(
            "lctl ping 10.0.0.4@tcp",
            5,
            "",
            "failed to ping 10.0.0.4@tcp: Input/output error\n",
        );
        let (_d, host) = host(runner.clone());
        let gate = Gate {
            kind: GateKind::LnetPing { nid: "10.0.0.4@tcp".into() },
            deadline: Duration::from_secs(20),
        };
        let Outcome::Failed(f) = execute(&Step::Gate(gate), &host, &crate::Unguarded, false, |_| {}).await
        else {
            panic!()
        };
        assert_eq!(
            f.message,
            "not ready after 20s: `lctl ping 10.0.0.4@tcp` exited 5: failed to ping 10.0.0.4@tcp: Input/output error"
        );
        // Backing off 0.25, 0.5, 1, 2, 4, 5, 5 … seconds: a bounded number of probes.
        assert!((5..=10).contains(&runner.calls().len()), "{}", runner.calls().len());
    }

    #[tokio::test(start_paused = true)]
    async fn a_gate_stops_waiting_once_its_caller_is_gone() {
        let runner = RecordedRunner::new().record("lctl ping 10.0.0.4@tcp", 5, "", "no route\n");
        let (_d, host) = host(runner.clone());
        let gate = Gate {
            kind: GateKind::LnetPing { nid: "10.0.0.4@tcp".into() },
            deadline: Duration::from_secs(3600),
        };
        let started = tokio::time::Instant::now();
        let gone_at = started + Duration::from_secs(7);
        let keep_going = move || tokio::time::Instant::now() < gone_at;
        let Waited::Abandoned { after, last } = gate.wait(&host, &keep_going, &mut |_| {}).await.unwrap()
        else {
            panic!()
        };
        // Noticed within one check of the caller going, not at the hour's deadline.
        assert!(
            after >= Duration::from_secs(7) && after <= Duration::from_secs(7) + CALLER_CHECK,
            "{after:?}"
        );
        assert!(last.contains("no route"), "{last}");
        let probes = runner.calls().len();
        assert!((3..=6).contains(&probes), "{probes}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_unit_whose_caller_goes_fails_the_gate_and_starts_nothing_more() {
        let runner = RecordedRunner::new().record("lctl ping 10.0.0.4@tcp", 5, "", "no route\n");
        let (dir, host) = host(runner);
        let gate = Gate {
            kind: GateKind::LnetPing { nid: "10.0.0.4@tcp".into() },
            deadline: Duration::from_secs(3600),
        };
        let later = Step::Directory(crate::Directory { path: "/after".into(), mode: 0o755 });
        let gone_at = tokio::time::Instant::now() + Duration::from_secs(2);
        let mut outcomes = Vec::new();
        let summary = crate::run_unit(
            &[Step::Gate(gate), later],
            &host,
            &crate::Unguarded,
            false,
            false,
            |event| {
                if let crate::StepEvent::Done { outcome, .. } = event {
                    outcomes.push(outcome);
                }
            },
            move || tokio::time::Instant::now() < gone_at,
        )
        .await;
        assert_eq!((summary.failed, summary.skipped), (1, 1));
        let Outcome::Failed(f) = &outcomes[0] else { panic!("{outcomes:?}") };
        assert!(
            f.message.starts_with("stopped waiting after 2s: the coordinator went away"),
            "{}",
            f.message
        );
        assert!(!dir.path().join("after").exists(), "no step starts after the caller went");
    }

    use crate::without_header as fixture;

    const CHECK_2_10: &str = include_str!("../testdata/lustre/lfs-check-servers-2.10.txt");
    const NIDS_ONE: &str = include_str!("../testdata/lustre/list-nids-one.txt");
    const NIDS_TWO: &str = include_str!("../testdata/lustre/list-nids-two-nets.txt");
    const NIDS_DOWN: &str = include_str!("../testdata/lustre/list-nids-down.txt");

    async fn probe_nid(nid: &str, code: i32, stdout: &str, stderr: &str) -> Result<GateState, StepError> {
        let runner = RecordedRunner::new().record("lctl list_nids", code, stdout, stderr);
        let (_d, host) = host(runner);
        let gate = Gate { kind: GateKind::LnetNid { nid: nid.into() }, deadline: Duration::from_secs(1) };
        gate.probe(&host).await
    }

    #[tokio::test]
    async fn the_lnet_nid_gate_finds_the_node_s_nid_on_any_of_its_networks() {
        let ready = |nid: &str| GateState::Ready(format!("LNet's NID here is {nid}"));
        assert_eq!(
            probe_nid("10.0.2.15@tcp", 0, &fixture(NIDS_ONE), "").await.unwrap(),
            ready("10.0.2.15@tcp")
        );
        // tcp0 is tcp: libcfs prints network number 0 without it.
        assert_eq!(
            probe_nid("10.0.2.15@tcp0", 0, &fixture(NIDS_ONE), "").await.unwrap(),
            ready("10.0.2.15@tcp0")
        );
        assert_eq!(
            probe_nid("10.10.0.4@o2ib1", 0, &fixture(NIDS_TWO), "").await.unwrap(),
            ready("10.10.0.4@o2ib1")
        );
        // The same address on another network is another NID.
        assert!(probe_nid("10.10.0.4@o2ib", 0, &fixture(NIDS_TWO), "").await.is_err());
    }

    #[tokio::test]
    async fn lnet_not_up_is_waited_for_and_other_nids_fail_at_once_naming_them() {
        let down = probe_nid("10.0.2.15@tcp", 1, "", &fixture(NIDS_DOWN)).await.unwrap();
        assert_eq!(
            down,
            GateState::NotReady("LNet is not up: IOC_LIBCFS_GET_NI error 100: Network is down".into())
        );
        assert_eq!(
            probe_nid("10.0.2.15@tcp", 0, "", "").await.unwrap(),
            GateState::NotReady("LNet lists no NID yet".into())
        );
        // LNet came up on another interface than the one the cluster file's address is on.
        let err = probe_nid("10.0.0.4@tcp", 0, &fixture(NIDS_TWO), "").await.unwrap_err().to_string();
        assert!(
            err.contains("this node's NIDs are 192.168.10.4@tcp, 10.10.0.4@o2ib1, not 10.0.0.4@tcp"),
            "{err}"
        );
        assert!(err.contains("lnet_address"), "{err}");
    }

    #[test]
    fn list_nids_refuses_what_is_not_a_nid() {
        assert_eq!(parse_list_nids(&fixture(NIDS_TWO)).unwrap(), ["192.168.10.4@tcp", "10.10.0.4@o2ib1"]);
        for bad in
            ["10.0.2.15", "10.0.2.15@", "@tcp", "10.0.2.15@TCP", "opening /dev/lnet failed: No such device"]
        {
            assert!(parse_list_nids(bad).is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn lfs_check_servers_reads_the_real_output_as_ready() {
        let runner = RecordedRunner::new().record("lfs check servers", 0, &fixture(CHECK_2_10), "");
        let (_d, host) = host(runner);
        let gate = Gate { kind: GateKind::LfsCheckServers, deadline: Duration::from_secs(1) };
        assert_eq!(gate.probe(&host).await.unwrap(), GateState::Ready("7 server connections active".into()));
    }

    #[test]
    fn check_servers_tells_active_from_inactive_and_errors() {
        // The lines liblustreapi's do_target_check() prints (lustre/lustre-release,
        // lustre/utils/liblustreapi.c): "%s active.\n" / "%s inactive.\n" on stdout, and
        // llapi_error(…, "error: check '%s'", name) on stderr with ": strerror (errno)" appended.
        let stdout = "lustrefs-MDT0000-mdc-ffff88003bfbd000 active.\nlustrefs-OST0001-osc-ffff88003bfbd000 inactive.\n";
        let stderr =
            "error: check 'lustrefs-OST0002-osc-ffff88003bfbd000': Resource temporarily unavailable (11)\n";
        let servers = parse_check_servers(stdout, stderr).unwrap();
        assert_eq!(
            servers.iter().map(|s| (s.device.as_str(), s.state.clone())).collect::<Vec<_>>(),
            [
                ("lustrefs-MDT0000-mdc-ffff88003bfbd000", ConnectionState::Active),
                ("lustrefs-OST0001-osc-ffff88003bfbd000", ConnectionState::Inactive),
                (
                    "lustrefs-OST0002-osc-ffff88003bfbd000",
                    ConnectionState::Error("Resource temporarily unavailable (11)".into())
                ),
            ]
        );
        let out = pvfs_host::Output { code: Some(11), stdout: stdout.into(), stderr: stderr.into() };
        assert_eq!(
            check_servers_state(&servers, &out),
            GateState::NotReady(
                "lustrefs-OST0001-osc-ffff88003bfbd000 inactive; lustrefs-OST0002-osc-ffff88003bfbd000: \
                 Resource temporarily unavailable (11)"
                    .into()
            )
        );
        // The colon form some builds print reads the same; "inactive." is never active.
        let colon = parse_check_servers("pfs-OST0000-osc-ffff88003d223400: active\n", "").unwrap();
        assert_eq!(colon[0].device, "pfs-OST0000-osc-ffff88003d223400");
        assert_eq!(colon[0].state, ConnectionState::Active);
        assert_eq!(parse_check_servers("x inactive.\n", "").unwrap()[0].state, ConnectionState::Inactive);
    }

    /// The outputs of `listtargets-failover.txt`, header dropped, split at `---`.
    fn listtargets() -> Vec<String> {
        let path = format!("{}/testdata/beegfs-7/listtargets-failover.txt", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(path).unwrap();
        let body: String = text.lines().filter(|l| !l.starts_with('#')).map(|l| format!("{l}\n")).collect();
        body.split("---\n").map(str::to_owned).collect()
    }

    #[test]
    fn listtargets_reads_every_state_and_the_node_column() {
        let outputs = listtargets();
        let first = parse_beegfs_targets(&outputs[0]).unwrap();
        assert_eq!(
            first[0],
            BeegfsTarget {
                id: 201,
                reachability: "Probably-offline".into(),
                consistency: "Good".into(),
                node: "201".into()
            }
        );
        let second = parse_beegfs_targets(&outputs[1]).unwrap();
        assert_eq!(
            (second[0].reachability.as_str(), second[0].consistency.as_str()),
            ("Offline", "Needs-resync")
        );
        assert_eq!(parse_beegfs_targets(&outputs[2]).unwrap().len(), 6);
        // --longnodes: the node column holds spaces, and is still one value.
        let long = "TargetID     Reachability  Consistency   NodeID\n========     ============  ===========   ======\n\
             101           Online         Good   beegfs-storage node1 [ID: 1]\n";
        assert_eq!(parse_beegfs_targets(long).unwrap()[0].node, "beegfs-storage node1 [ID: 1]");
        // Nothing registered yet: the heading and the rule alone.
        let empty = "TargetID     Reachability  Consistency   NodeID\n========     ============  ===========   ======\n";
        assert!(parse_beegfs_targets(empty).unwrap().is_empty());
        assert!(parse_beegfs_targets("Unable to connect\n").is_err());
        assert!(
            parse_beegfs_targets("TargetID Reachability Consistency NodeID\n=====\nx Online Good 1\n")
                .is_err()
        );
    }

    #[tokio::test]
    async fn clients_wait_for_every_target_online_and_good() {
        let outputs = listtargets();
        let meta = "beegfs-ctl --listtargets --nodetype=meta --state";
        let storage = "beegfs-ctl --listtargets --nodetype=storage --state";
        let gate = |meta, storage| Gate {
            kind: GateKind::BeegfsTargetsGood { meta, storage },
            deadline: Duration::from_secs(1),
        };

        let runner =
            RecordedRunner::new().record(meta, 0, &outputs[1], "").record(storage, 0, &outputs[2], "");
        let (_d, node) = host(runner);
        let GateState::NotReady(why) = gate(2, 6).probe(&node).await.unwrap() else { panic!() };
        assert!(why.contains("meta target 201 on node 201: Offline/Needs-resync"), "{why}");
        assert!(why.contains("storage target 3012 on node 301: Online/Needs-resync"), "{why}");

        let runner =
            RecordedRunner::new().record(meta, 0, &outputs[3], "").record(storage, 0, &outputs[3], "");
        let (_d, node) = host(runner);
        let GateState::NotReady(why) = gate(2, 3).probe(&node).await.unwrap() else { panic!() };
        assert_eq!(why, "2 of 3 storage targets registered");
        let GateState::Ready(said) = gate(2, 2).probe(&node).await.unwrap() else { panic!() };
        assert_eq!(said, "targets Online and Good: 2 meta, 2 storage");

        let runner = RecordedRunner::new()
            .record(meta, 1, "", "Unable to connect to management daemon\n")
            .record(storage, 0, &outputs[3], "");
        let (_d, node) = host(runner);
        let GateState::NotReady(why) = gate(1, 2).probe(&node).await.unwrap() else { panic!() };
        assert!(why.contains("Unable to connect to management daemon"), "{why}");
    }

    #[tokio::test]
    async fn check_servers_with_nothing_listed_or_garbage_is_not_ready_or_refused() {
        let runner = RecordedRunner::new().record("lfs check servers", 0, "", "");
        let (_d, empty) = host(runner);
        let gate = Gate { kind: GateKind::LfsCheckServers, deadline: Duration::from_secs(1) };
        let GateState::NotReady(why) = gate.probe(&empty).await.unwrap() else { panic!() };
        assert!(why.contains("listed no server connections"), "{why}");

        let runner =
            RecordedRunner::new().record("lfs check servers", 0, "lustrefs-OST0001-osc-x activated\n", "");
        let (_d, odd) = host(runner);
        let err = gate.probe(&odd).await.unwrap_err();
        assert!(
            matches!(&err, StepError::Unexpected { command, .. } if command == "lfs check servers"),
            "{err}"
        );
        assert!(err.to_string().contains("activated"), "{err}");
    }

    /// beegfs-check-servers as the seed printed it, with a server down, and before the
    /// servers registered: only the first is ready.
    #[tokio::test]
    async fn check_servers_waits_for_every_kind_of_server_to_answer() {
        let probe = |out: &str| {
            let runner = RecordedRunner::new().record("beegfs-check-servers", 0, &fixture(out), "");
            let gate = Gate { kind: GateKind::BeegfsCheckServers, deadline: Duration::from_secs(1) };
            async move {
                let (_d, host) = host(runner);
                gate.probe(&host).await
            }
        };
        assert_eq!(
            probe(include_str!("../testdata/beegfs-7/check-servers-seed.txt")).await.unwrap(),
            GateState::Ready("9 servers reachable".into())
        );
        assert_eq!(
            probe(include_str!("../testdata/beegfs-7/check-servers-unreachable.txt")).await.unwrap(),
            GateState::NotReady("Storage storage1 [ID: 2] unreachable".into())
        );
        assert_eq!(
            probe(include_str!("../testdata/beegfs-7/check-servers-no-storage.txt")).await.unwrap(),
            GateState::NotReady("no metadata server registered yet; no storage server registered yet".into())
        );
        let err = probe("Management\n==========\nmgmt [ID: 1]: maybe\n").await.unwrap_err();
        assert!(matches!(err, StepError::Unexpected { .. }), "{err}");
        let err = probe("Storage\n==========\n").await.unwrap_err();
        assert!(err.to_string().contains("not Management, Metadata and Storage"), "{err}");
    }

    /// EL8 after a kernel update without a reboot: kernel-devel is the new kernel's, the
    /// running one (4.18.0-477, /proc/sys/kernel/osrelease) has no build tree.
    #[tokio::test]
    async fn the_running_kernels_headers_must_be_installed() {
        let (dir, host) = host(RecordedRunner::new());
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(dir.path().join("proc/sys/kernel/osrelease"), "4.18.0-477.10.1.el8_8.x86_64\n")
            .unwrap();
        // What the kernel-devel RPM of the newer kernel installs, and the newer kernel's link.
        std::fs::create_dir_all(dir.path().join("usr/src/kernels/4.18.0-513.5.1.el8_9.x86_64")).unwrap();
        for release in ["4.18.0-477.10.1.el8_8.x86_64", "4.18.0-513.5.1.el8_9.x86_64"] {
            let modules = dir.path().join("lib/modules").join(release);
            std::fs::create_dir_all(&modules).unwrap();
            std::os::unix::fs::symlink(format!("/usr/src/kernels/{release}"), modules.join("build")).unwrap();
        }
        let gate = Gate { kind: GateKind::KernelBuildTree, deadline: Duration::from_secs(1) };
        let GateState::NotReady(why) = gate.probe(&host).await.unwrap() else { panic!() };
        assert!(why.contains("install kernel-devel-4.18.0-477.10.1.el8_8.x86_64"), "{why}");
        std::fs::write(dir.path().join("proc/sys/kernel/osrelease"), "4.18.0-513.5.1.el8_9.x86_64\n")
            .unwrap();
        assert!(matches!(gate.probe(&host).await.unwrap(), GateState::Ready(_)));
    }

    /// A BeeGFS client's mount table (testdata/mountinfo-beegfs-client.txt, the kernel's
    /// documented format): the gate holds only where the topmost mount is beegfs.
    #[tokio::test]
    async fn the_client_mount_must_be_beegfs_by_the_kernels_word() {
        let text: String = include_str!("../testdata/mountinfo-beegfs-client.txt")
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        let (dir, host) = host(RecordedRunner::new());
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(dir.path().join("proc/self/mountinfo"), &text).unwrap();
        let gate = |d: &str| Gate {
            kind: GateKind::MountedAs { dir: d.into(), fstype: "beegfs".into() },
            deadline: Duration::from_secs(1),
        };
        let state = |d: &str| {
            let (gate, host) = (gate(d), &host);
            async move { gate.probe(host).await.unwrap() }
        };
        assert_eq!(state("/mnt/beegfs").await, GateState::Ready("/mnt/beegfs is a beegfs mount".into()));
        assert_eq!(state("/mnt/bee gfs").await, GateState::Ready("/mnt/bee gfs is a beegfs mount".into()));
        assert_eq!(
            state("/mnt/plain").await,
            GateState::NotReady("/mnt/plain is a xfs mount, not beegfs".into())
        );
        assert_eq!(
            state("/mnt/hidden").await,
            GateState::NotReady("/mnt/hidden is a tmpfs mount, not beegfs".into())
        );
        assert_eq!(state("/data").await, GateState::NotReady("nothing is mounted on /data".into()));
        std::fs::write(dir.path().join("proc/self/mountinfo"), "22 1 253:0 / / rw\n").unwrap();
        let err = gate("/mnt/beegfs").probe(&host).await.unwrap_err();
        assert!(matches!(&err, StepError::File { path, .. } if path == "/proc/self/mountinfo"), "{err}");
    }

    #[tokio::test]
    async fn writable_proves_a_round_trip() {
        let (dir, host) = host(RecordedRunner::new());
        std::fs::create_dir_all(dir.path().join("mnt")).unwrap();
        let gate = Gate { kind: GateKind::Writable { dir: "/mnt".into() }, deadline: Duration::from_secs(1) };
        assert_eq!(gate.probe(&host).await.unwrap(), GateState::Ready("/mnt is writable".into()));
        assert_eq!(std::fs::read_dir(dir.path().join("mnt")).unwrap().count(), 0, "the probe file is gone");
        let gate =
            Gate { kind: GateKind::Writable { dir: "/nope".into() }, deadline: Duration::from_secs(1) };
        assert!(matches!(gate.probe(&host).await.unwrap(), GateState::NotReady(_)));
    }

    #[tokio::test]
    async fn the_write_probe_follows_no_planted_name() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, host) = host(RecordedRunner::new());
        let mnt = dir.path().join("mnt");
        std::fs::create_dir_all(&mnt).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
        // The names the old probe used (its pid) and a few more, all links to the victim.
        for name in [format!(".pvfs-probe-{}", std::process::id()), ".pvfs-probe-0".into()] {
            std::os::unix::fs::symlink(&victim, mnt.join(name)).unwrap();
        }
        let gate = Gate { kind: GateKind::Writable { dir: "/mnt".into() }, deadline: Duration::from_secs(1) };
        assert_eq!(gate.probe(&host).await.unwrap(), GateState::Ready("/mnt is writable".into()));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert_eq!(std::fs::metadata(&victim).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(&mnt).unwrap().count(), 2, "only the planted links remain");
    }
}
