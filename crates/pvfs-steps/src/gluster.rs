//! GlusterFS: the trusted pool and the volume, read through `gluster --xml`.
//!
//! In `--xml` mode the CLI exits 0 even when the operation failed: the answer is `<opRet>`
//! (-1 on failure) with `<opErrstr>`, so every XML answer is checked there, never by exit code.
//! Changes use `--mode=script` so no confirmation prompt (replica 2 split-brain warnings,
//! volume stop) can wait for a terminal.

use crate::{Action, Assessment, NodeAccess, StepError};
use pvfs_host::{Command, Runner};
use std::fmt;
use std::time::Duration;

/// glusterd answers in milliseconds; a volume create or start touches every brick's node.
const GLUSTER_TIMEOUT: Duration = Duration::from_secs(120);

/// What glusterd answers while another operation holds the pool's lock (any node's: a volume
/// start, a `volume status` or `profile` a monitoring tool runs). It asks to be asked again:
/// "Another transaction is in progress [for VOL]. Please try again after some time." or
/// "Another transaction could be in progress. …", also inside "Locking failed on PEER. …"
/// (glusterfs' glusterd-mgmt.c, glusterd-syncop.c, glusterd-rpc-ops.c).
pub const GLUSTERD_BUSY: &[&str] = &["Another transaction"];

/// How long a busy glusterd is asked again: its transactions take seconds; a lock held longer
/// is a stuck peer, which glusterd's own lock timer frees only after 3 minutes.
const GLUSTERD_BUSY_WITHIN: Duration = Duration::from_secs(60);

/// `gluster ARGS`, run again while glusterd says another transaction holds the pool's lock
/// ([`pvfs_host::run_while_busy`]).
pub fn gluster_command(args: &[&str]) -> Command {
    Command::new("gluster")
        .args(args.iter().copied())
        .timeout(GLUSTER_TIMEOUT)
        .again_while_busy(GLUSTERD_BUSY, GLUSTERD_BUSY_WITHIN)
}

/// The answer of `gluster --xml …`, parsed, with `opRet` checked.
pub(crate) struct CliOutput {
    text: String,
}

impl CliOutput {
    /// Runs `gluster --xml ARGS`; `Err` for a CLI that could not reach glusterd, an answer that
    /// is not XML, or (unless `allow_failure`) `opRet` != 0.
    pub(crate) async fn run<R: Runner>(
        host: &NodeAccess<R>,
        args: &[&str],
        allow_failure: bool,
    ) -> Result<(CliOutput, Option<String>), StepError> {
        let command = gluster_command(&[&["--xml"], args].concat());
        let shown = command.to_string();
        let out = host.probe(command).await?;
        if !out.stdout.trim_start().starts_with("<?xml") && !out.stdout.trim_start().starts_with("<cliOutput")
        {
            let said = crate::error_tail(&out);
            let hint = said
                .contains("Connection failed")
                .then(|| "glusterd is not running on this node: systemctl start glusterd".to_owned());
            return Err(StepError::Command { command: shown, code: out.code, stderr: said, hint });
        }
        let parsed = CliOutput { text: out.stdout };
        let (ret, errstr) = {
            let doc = parsed.doc(&shown)?;
            let root = doc.root_element();
            (child_text(root, "opRet").parse::<i32>().unwrap_or(-1), child_text(root, "opErrstr"))
        };
        if ret != 0 {
            if allow_failure {
                return Ok((parsed, Some(errstr)));
            }
            return Err(StepError::Command { command: shown, code: Some(ret), stderr: errstr, hint: None });
        }
        Ok((parsed, None))
    }

    pub(crate) fn doc(&self, command: &str) -> Result<roxmltree::Document<'_>, StepError> {
        roxmltree::Document::parse(&self.text)
            .map_err(|e| StepError::Unexpected { command: command.to_owned(), message: e.to_string() })
    }
}

/// The text of `node`'s first child element called `name` ("" if none).
pub(crate) fn child_text(node: roxmltree::Node<'_, '_>, name: &str) -> String {
    node.children()
        .find(|c| c.has_tag_name(name))
        .and_then(|c| c.text())
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// All descendants called `name`.
fn descendants<'a, 'i>(
    node: roxmltree::Node<'a, 'i>,
    name: &'a str,
) -> impl Iterator<Item = roxmltree::Node<'a, 'i>> {
    node.descendants().filter(move |n| n.has_tag_name(name))
}

/// A peer as `pool list` / `peer status` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peer {
    pub names: Vec<String>,
    pub connected: bool,
    pub state: String,
}

impl Peer {
    pub(crate) fn in_cluster(&self) -> bool {
        self.connected && self.state == "Peer in Cluster"
    }
}

/// The peers glusterd knows (without this node: `peer status` leaves it out).
pub(crate) async fn peers<R: Runner>(host: &NodeAccess<R>) -> Result<Vec<Peer>, StepError> {
    let (out, _) = CliOutput::run(host, &["peer", "status"], false).await?;
    let doc = out.doc("gluster --xml peer status")?;
    Ok(descendants(doc.root_element(), "peer")
        .map(|p| {
            let mut names = vec![child_text(p, "hostname")];
            if let Some(list) = p.children().find(|c| c.has_tag_name("hostnames")) {
                names.extend(
                    list.children().filter(|c| c.is_element()).filter_map(|c| c.text()).map(str::to_owned),
                );
            }
            names.dedup();
            Peer { names, connected: child_text(p, "connected") == "1", state: child_text(p, "stateStr") }
        })
        .collect())
}

/// The trusted pool holds these servers (probed from the node this runs on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlusterPeers {
    /// The other servers, as the bricks name them (IP or host name).
    pub peers: Vec<String>,
}

impl GlusterPeers {
    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        let known = peers(host).await?;
        for peer in &self.peers {
            if !known.iter().any(|k| k.names.contains(peer)) {
                // `peer probe` is idempotent (an existing peer answers "already in peer list"),
                // so a probe repeated after a crash does no harm.
                a.change(
                    format!("{peer} is not in the trusted pool"),
                    Action::Run(gluster_command(&["--mode=script", "peer", "probe", peer])),
                );
            }
        }
        Ok(a)
    }
}

impl fmt::Display for GlusterPeers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "trusted pool with {}", self.peers.join(", "))
    }
}

/// How a volume places files on bricks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlusterLayout {
    /// Whole files spread over bricks (the seed's choice).
    Distribute,
    /// Each file on `replica` bricks.
    Replicate { replica: u32 },
    /// Erasure-coded over `disperse` bricks, surviving `redundancy` losses.
    Disperse { disperse: u32, redundancy: u32 },
}

impl GlusterLayout {
    /// Bricks per subvolume: bricks are added in multiples of this.
    pub fn set_size(self) -> usize {
        match self {
            GlusterLayout::Distribute => 1,
            GlusterLayout::Replicate { replica } => replica as usize,
            GlusterLayout::Disperse { disperse, .. } => disperse as usize,
        }
    }

    fn create_args(self) -> Vec<String> {
        match self {
            GlusterLayout::Distribute => vec![],
            GlusterLayout::Replicate { replica } => vec!["replica".into(), replica.to_string()],
            GlusterLayout::Disperse { disperse, redundancy } => {
                vec!["disperse".into(), disperse.to_string(), "redundancy".into(), redundancy.to_string()]
            }
        }
    }

    /// Whether gluster's `typeStr` is this layout (with one or several subvolumes).
    fn matches(self, type_str: &str) -> bool {
        let base = type_str.trim_start_matches("Distributed-");
        match self {
            GlusterLayout::Distribute => type_str == "Distribute",
            GlusterLayout::Replicate { .. } => base == "Replicate",
            GlusterLayout::Disperse { .. } => base == "Disperse",
        }
    }
}

impl fmt::Display for GlusterLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GlusterLayout::Distribute => f.write_str("distribute"),
            GlusterLayout::Replicate { replica } => write!(f, "replicate {replica}"),
            GlusterLayout::Disperse { disperse, redundancy } => {
                write!(f, "disperse {disperse} redundancy {redundancy}")
            }
        }
    }
}

/// A volume exists with these bricks, in this order, and is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlusterVolume {
    pub name: String,
    pub layout: GlusterLayout,
    /// `host:/path`, in order: replica sets are consecutive bricks.
    pub bricks: Vec<String>,
    /// `gluster volume set` options.
    pub options: Vec<(String, String)>,
}

/// What `volume info` says of an existing volume.
pub(crate) struct VolumeInfo {
    type_str: String,
    status: String,
    bricks: Vec<String>,
    options: Vec<(String, String)>,
}

impl GlusterVolume {
    fn cli(&self, args: &[&str]) -> Command {
        gluster_command(&[&["--mode=script"], args].concat())
    }

    async fn info<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Option<VolumeInfo>, StepError> {
        volume_info(host, &self.name).await
    }

    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        let bricks: Vec<&str> = self.bricks.iter().map(String::as_str).collect();
        let Some(info) = self.info(host).await? else {
            let mut create = vec!["volume", "create", &self.name];
            let layout = self.layout.create_args();
            create.extend(layout.iter().map(String::as_str));
            create.extend(["transport", "tcp"]);
            create.extend(&bricks);
            a.change(format!("volume {} does not exist", self.name), Action::Run(self.cli(&create)));
            a.change(
                format!("volume {} is not started", self.name),
                Action::Run(self.cli(&["volume", "start", &self.name])),
            );
            for (key, value) in &self.options {
                a.change(
                    format!("{key} is not {value}"),
                    Action::Run(self.cli(&["volume", "set", &self.name, key, value])),
                );
            }
            return Ok(a);
        };
        if !self.layout.matches(&info.type_str) {
            return Err(StepError::Refused {
                reason: format!(
                    "volume {} exists as {}, not {}; pvfs does not convert volumes",
                    self.name, info.type_str, self.layout
                ),
            });
        }
        if info.bricks != self.bricks {
            let grows = info.bricks.len() < self.bricks.len() && self.bricks.starts_with(&info.bricks);
            let added = &bricks[info.bricks.len().min(bricks.len())..];
            if !grows || !added.len().is_multiple_of(self.layout.set_size()) {
                return Err(StepError::Refused {
                    reason: format!(
                        "volume {} has bricks {} but the cluster file lists {}; pvfs only adds bricks at the end \
                         (in whole replica/disperse sets), it never removes or reorders them",
                        self.name,
                        info.bricks.join(" "),
                        self.bricks.join(" ")
                    ),
                });
            }
            let mut add = vec!["volume", "add-brick", &self.name];
            add.extend(added);
            a.change(
                format!("volume {} lacks bricks {}", self.name, added.join(" ")),
                Action::Run(self.cli(&add)),
            );
            // New bricks get no files until the layout is fixed (the seed's step 4d).
            a.actions.push(Action::Run(self.cli(&[
                "volume",
                "rebalance",
                &self.name,
                "fix-layout",
                "start",
            ])));
        }
        if info.status != "Started" {
            a.change(
                format!("volume {} is {}", self.name, info.status),
                Action::Run(self.cli(&["volume", "start", &self.name])),
            );
        }
        for (key, value) in &self.options {
            let have = info.options.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
            if have != Some(value.as_str()) {
                a.change(
                    format!("{key} is {}, not {value}", have.unwrap_or("unset")),
                    Action::Run(self.cli(&["volume", "set", &self.name, key, value])),
                );
            }
        }
        Ok(a)
    }

    /// Brick processes of this volume that are not online, from `volume status`; empty when
    /// every brick is up.
    pub(crate) async fn offline_bricks<R: Runner>(
        &self,
        host: &NodeAccess<R>,
    ) -> Result<Vec<String>, StepError> {
        let (out, failed) = CliOutput::run(host, &["volume", "status", &self.name], true).await?;
        if let Some(errstr) = failed {
            return Ok(vec![format!("volume status: {errstr}")]);
        }
        let doc = out.doc("gluster --xml volume status")?;
        let online: Vec<String> = descendants(doc.root_element(), "node")
            .filter(|n| child_text(*n, "status") == "1")
            .map(|n| format!("{}:{}", child_text(n, "hostname"), child_text(n, "path")))
            .collect();
        Ok(self.bricks.iter().filter(|b| !online.contains(b)).cloned().collect())
    }
}

/// What `volume info NAME` says, `None` when the volume does not exist.
pub(crate) async fn volume_info<R: Runner>(
    host: &NodeAccess<R>,
    name: &str,
) -> Result<Option<VolumeInfo>, StepError> {
    let (out, failed) = CliOutput::run(host, &["volume", "info", name], true).await?;
    if let Some(errstr) = failed {
        // opRet -1, opErrno 30806: "Volume gv0 does not exist".
        if errstr.contains("does not exist") {
            return Ok(None);
        }
        return Err(StepError::Command {
            command: format!("gluster --xml volume info {name}"),
            code: Some(-1),
            stderr: errstr,
            hint: None,
        });
    }
    let doc = out.doc("gluster --xml volume info")?;
    let volume = descendants(doc.root_element(), "volume")
        .find(|v| child_text(*v, "name") == name)
        .ok_or_else(|| StepError::Unexpected {
            command: format!("gluster --xml volume info {name}"),
            message: "no <volume> of that name".into(),
        })?;
    let bricks = volume
        .children()
        .find(|c| c.has_tag_name("bricks"))
        .map(|b| b.children().filter(|c| c.has_tag_name("brick")).map(|c| child_text(c, "name")).collect())
        .unwrap_or_default();
    let options =
        descendants(volume, "option").map(|o| (child_text(o, "name"), child_text(o, "value"))).collect();
    Ok(Some(VolumeInfo {
        type_str: child_text(volume, "typeStr"),
        status: child_text(volume, "statusStr"),
        bricks,
        options,
    }))
}

impl fmt::Display for GlusterVolume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gluster volume {} ({}, {} bricks)", self.name, self.layout, self.bricks.len())
    }
}

/// Whether glusterd runs on this node. When it does not, the gluster CLI cannot answer, and
/// the teardown steps read glusterd's own store instead (`/var/lib/glusterd`), which is what
/// glusterd itself reads at start: a second `down`, after the first stopped glusterd, must
/// still be able to say that nothing is left.
async fn glusterd_running<R: Runner>(host: &NodeAccess<R>) -> Result<bool, StepError> {
    let out = host.probe(Command::new("systemctl").args(["is-active", "glusterd"])).await?;
    Ok(out.stdout.trim() == "active")
}

/// Where glusterd keeps a volume's definition (`volume delete` removes it).
const VOLS: &str = "/var/lib/glusterd/vols";
/// Where glusterd keeps its peers, a file per peer with `hostname1=…` lines (`peer detach`
/// removes it).
const PEERS: &str = "/var/lib/glusterd/peers";

/// A volume no longer exists: stopped, then deleted (`down`). Its bricks' data stays on the
/// brick file systems; only `down --wipe` destroys those.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlusterVolumeGone {
    pub name: String,
}

impl GlusterVolumeGone {
    fn cli(&self, args: &[&str]) -> Command {
        gluster_command(&[&["--mode=script"], args].concat())
    }

    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        if !glusterd_running(host).await? {
            let stored = format!("{VOLS}/{}", self.name);
            if host.root.exists(&stored) {
                return Err(StepError::Refused {
                    reason: format!(
                        "glusterd is not running on this node, but its store still defines volume {} ({stored}); \
                         start it (systemctl start glusterd) and run down again",
                        self.name
                    ),
                });
            }
            return Ok(a);
        }
        let Some(info) = volume_info(host, &self.name).await? else { return Ok(a) };
        // `--mode=script` answers volume stop's "data will be inaccessible" question; clients
        // were unmounted by the units before this one.
        if info.status == "Started" {
            a.change(
                format!("volume {} is started", self.name),
                Action::Run(self.cli(&["volume", "stop", &self.name])),
            );
        }
        a.change(
            format!("volume {} exists ({}, {} bricks)", self.name, info.type_str, info.bricks.len()),
            Action::Run(self.cli(&["volume", "delete", &self.name])),
        );
        Ok(a)
    }
}

impl fmt::Display for GlusterVolumeGone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gluster volume {} stopped and deleted", self.name)
    }
}

/// These servers are no longer in this node's trusted pool (`down`, after the volume is gone:
/// glusterd refuses to detach a peer that still holds bricks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlusterPeersDetached {
    pub peers: Vec<String>,
}

impl GlusterPeersDetached {
    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        if !glusterd_running(host).await? {
            for entry in host.root.list_dir(PEERS).unwrap_or_default() {
                let path = format!("{PEERS}/{entry}");
                let text = host.read_optional(&path)?.unwrap_or_default();
                let named = text
                    .lines()
                    .filter_map(|l| l.split_once('='))
                    .filter(|(k, _)| k.starts_with("hostname"))
                    .find(|(_, v)| self.peers.iter().any(|p| p == v.trim()));
                if let Some((_, peer)) = named {
                    return Err(StepError::Refused {
                        reason: format!(
                            "glusterd is not running on this node, but its store still has {} as a peer ({path}); \
                             start it (systemctl start glusterd) and run down again",
                            peer.trim()
                        ),
                    });
                }
            }
            return Ok(a);
        }
        let known = peers(host).await?;
        for peer in &self.peers {
            if known.iter().any(|k| k.names.contains(peer)) {
                a.change(
                    format!("{peer} is in the trusted pool"),
                    Action::Run(gluster_command(&["--mode=script", "peer", "detach", peer])),
                );
            }
        }
        Ok(a)
    }
}

impl fmt::Display for GlusterPeersDetached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} detached from the trusted pool", self.peers.join(", "))
    }
}

/// Where a volume's rebalance stands, from `gluster --xml volume rebalance VOL status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rebalance {
    /// No rebalance (or fix-layout) has run on the volume since it was created or its glusterd
    /// started: nothing to wait for.
    NeverRun,
    /// Every node has finished (or has nothing to do): what they did, in words.
    Done(String),
    /// Some node is still at it: how far, in words.
    Running(String),
    /// A node failed or was stopped: which, and where its log is.
    Failed(String),
}

/// One node's line of the rebalance status.
struct RebalanceNode {
    name: String,
    status: u32,
    status_str: String,
    lookups: u64,
    files: u64,
    runtime: f64,
}

/// Reads the rebalance status of `volume` (the `<volRebalance>` element of cli/src/cli-xml-output.c:
/// a `<node>` per server with `<nodeName>`, `<files>`, `<lookups>`, `<status>`,
/// `<statusStr>`, `<runtime>`, then an `<aggregate>`). `<status>` is glusterd's
/// `gf_defrag_status_t`: 0 not started, 1 in progress, 2 stopped, 3 completed, 4 failed,
/// 5–8 the same for fix-layout.
pub(crate) async fn rebalance_status<R: Runner>(
    host: &NodeAccess<R>,
    volume: &str,
) -> Result<Rebalance, StepError> {
    let (out, failed) = CliOutput::run(host, &["volume", "rebalance", volume, "status"], true).await?;
    let shown = format!("gluster --xml volume rebalance {volume} status");
    if let Some(errstr) = failed {
        // glusterfs 10.3: opRet -1, "Rebalance not started for volume gv0."; and for a volume
        // with no distribute subvolumes (a replica or disperse set of its own, one brick),
        // which no rebalance ever runs on: "Volume gv1 is not a distribute volume or contains
        // only 1 brick.\nNot performing rebalance".
        if errstr.contains("not started") || errstr.contains("is not a distribute volume") {
            return Ok(Rebalance::NeverRun);
        }
        return Err(StepError::Command { command: shown, code: Some(-1), stderr: errstr, hint: None });
    }
    parse_rebalance(&out, &shown)
}

fn parse_rebalance(out: &CliOutput, shown: &str) -> Result<Rebalance, StepError> {
    let doc = out.doc(shown)?;
    let unexpected = |message: String| StepError::Unexpected { command: shown.to_owned(), message };
    let task = descendants(doc.root_element(), "volRebalance")
        .next()
        .ok_or_else(|| unexpected("no <volRebalance> element".into()))?;
    let mut nodes = Vec::new();
    for node in task.children().filter(|c| c.has_tag_name("node")) {
        let number = |name: &str| child_text(node, name).parse::<u64>().unwrap_or(0);
        let status = child_text(node, "status");
        nodes.push(RebalanceNode {
            name: child_text(node, "nodeName"),
            status: status
                .parse()
                .map_err(|_| unexpected(format!("a node's <status> is {status:?}, not a number")))?,
            status_str: child_text(node, "statusStr"),
            lookups: number("lookups"),
            files: number("files"),
            runtime: child_text(node, "runtime").parse().unwrap_or(0.0),
        });
    }
    if nodes.is_empty() {
        return Err(unexpected("<volRebalance> lists no <node>".into()));
    }
    if let Some(bad) = nodes.iter().find(|n| n.status > 8) {
        return Err(unexpected(format!(
            "node {} has rebalance status {} ({})",
            bad.name, bad.status, bad.status_str
        )));
    }
    let failed: Vec<String> = nodes
        .iter()
        .filter(|n| matches!(n.status, 2 | 4 | 6 | 8))
        .map(|n| format!("{}: {}", n.name, n.status_str))
        .collect();
    if !failed.is_empty() {
        return Ok(Rebalance::Failed(failed.join("; ")));
    }
    let lookups: u64 = nodes.iter().map(|n| n.lookups).sum();
    let files: u64 = nodes.iter().map(|n| n.files).sum();
    let runtime = nodes.iter().map(|n| n.runtime).fold(0.0, f64::max);
    let running: Vec<&RebalanceNode> = nodes.iter().filter(|n| matches!(n.status, 1 | 5)).collect();
    let summary = format!("{lookups} entries scanned, {files} files moved, {runtime:.0}s");
    if running.is_empty() {
        if nodes.iter().all(|n| n.status == 0) {
            return Ok(Rebalance::NeverRun);
        }
        // Nodes without bricks of the volume may say "not started"; the others say what ran.
        let what =
            if nodes.iter().any(|n| n.status == 7) { "fix-layout completed" } else { "rebalance completed" };
        return Ok(Rebalance::Done(format!("{what} on {} nodes: {summary}", nodes.len())));
    }
    let names: Vec<&str> = running.iter().map(|n| n.name.as_str()).collect();
    Ok(Rebalance::Running(format!(
        "{} on {} of {} nodes ({}): {summary}",
        running[0].status_str,
        running.len(),
        nodes.len(),
        names.join(", ")
    )))
}

#[cfg(test)]
mod tests;
