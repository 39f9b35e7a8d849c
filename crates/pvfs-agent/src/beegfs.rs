//! BeeGFS's own statistics of this node's servers, every second.
//!
//! A BeeGFS storage or metadata server keeps its figures per second (requests processed and
//! queued, busy workers, bytes to and from its targets), which only its tools read out: BeeGFS
//! 7's `beegfs-ctl --serverstats` and BeeGFS 8's `beegfs stats server`. Starting one every
//! second would cost a process start and a round trip to the management daemon each time, so
//! the agent starts one per server for good, with `--interval` (each prints the server's last
//! seconds every second), reads what it prints as it prints it, and hands the newest second to
//! each sample ([`Watch::seconds`]).
//!
//! Found from the servers' own files (`pvfs_metrics::beegfs::local_servers`, every
//! [`LOOK_EVERY`]); a tool that ends (the management daemon unreachable, the server gone) is
//! started again at the next look.
//!
//! The node's targets too ([`Watch::targets`]): their space every second from the kernel
//! (`statfs` of each target's directory, counted as the server counts it for `beegfs-df`), and
//! their state — which only the management daemon knows — from `beegfs-ctl --listtargets
//! --state` (`beegfs target list --state`) every [`LOOK_EVERY`], one short run per node type. The tools are run where their packages install them
//! (ThinkParQ/beegfs 7.4.7's `beegfs.spec` and `debian/rules`: `beegfs-utils`'
//! `/opt/beegfs/sbin/beegfs-ctl`, linked from /usr/bin on EL and /usr/sbin on Debian;
//! beegfs-go v8.4.0's `.goreleaser.yml`: `beegfs-tools`' `/opt/beegfs/sbin/beegfs`, linked from
//! /usr/sbin), or found on PATH.

use pvfs_host::Root;
use pvfs_metrics::beegfs::{LocalServer, LocalTarget, NodeType, ServerSecond, TargetSecond, TargetState};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// How often the node's servers are looked for (and an ended tool started again).
const LOOK_EVERY: Duration = Duration::from_secs(10);

/// A server's figures older than this are not told: its tool has stopped printing.
const STALE_AFTER: Duration = Duration::from_secs(5);

/// The longest line kept (a statistics row is under 200 bytes); the most lines a round holds.
const MAX_LINE: usize = 4096;
const MAX_ROUND_LINES: usize = 256;

/// BeeGFS 8's ndjson rows kept (one a second, the newest last).
const NDJSON_ROWS: usize = 8;

/// How long a target listing may take (it asks the management daemon over the network).
const LIST_TIMEOUT: Duration = Duration::from_secs(8);

/// The management daemon's word on a target older than this is not told: its listing has
/// failed (or hung) three looks running.
const STATE_STALE_AFTER: Duration = Duration::from_secs(35);

/// The most of a target listing read (a line a target, under 200 bytes each).
const MAX_LISTING: usize = 1 << 20;

/// The statistics tools this node has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tools {
    /// BeeGFS 7's `beegfs-ctl`.
    pub ctl: Option<PathBuf>,
    /// BeeGFS 8's `beegfs`.
    pub beegfs: Option<PathBuf>,
}

impl Tools {
    /// Where the packages install them, else on PATH.
    pub fn find() -> Tools {
        let find = |name: &str| {
            let packaged = Path::new("/opt/beegfs/sbin").join(name);
            if packaged.is_file() {
                return Some(packaged);
            }
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        };
        Tools { ctl: find("beegfs-ctl"), beegfs: find("beegfs") }
    }

    /// The command that prints `server`'s seconds every second, and whether it is ctl's.
    fn command(&self, server: LocalServer) -> Option<ToolRun> {
        let kind = match server.node_type {
            NodeType::Meta => "meta",
            _ => "storage",
        };
        if let Some(ctl) = &self.ctl {
            // A single server's history, the last 3 seconds each round (ModeIOStat).
            let args = ["--serverstats", &format!("--nodetype={kind}"), "--interval=1", "--history=3"]
                .iter()
                .map(|s| (*s).to_owned())
                .chain([server.num_id.to_string()])
                .collect();
            return Some((ctl.clone(), args, true));
        }
        let beegfs = self.beegfs.as_ref()?;
        let args = ["stats", "server", &format!("{kind}:{}", server.num_id)]
            .iter()
            .chain(&["--interval", "1s", "--history", "3s", "--output", "ndjson", "--raw"])
            .map(|s| (*s).to_owned())
            .collect();
        Some((beegfs.clone(), args, false))
    }

    /// The command that lists `kind`'s targets with their states, and whether it is ctl's.
    fn list_command(&self, kind: NodeType) -> Option<ToolRun> {
        let kind = match kind {
            NodeType::Meta => "meta",
            _ => "storage",
        };
        if let Some(ctl) = &self.ctl {
            let args = vec!["--listtargets".to_owned(), format!("--nodetype={kind}"), "--state".to_owned()];
            return Some((ctl.clone(), args, true));
        }
        let beegfs = self.beegfs.as_ref()?;
        let args = ["target", "list", "--node-type", kind, "--state", "--output", "ndjson", "--raw"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        Some((beegfs.clone(), args, false))
    }
}

/// A program and its arguments, and whether it is BeeGFS 7's ctl.
type ToolRun = (PathBuf, Vec<String>, bool);

/// Each target's state as the management daemon last told it, and when.
type States = Vec<(NodeType, u32, TargetState, Instant)>;

/// What a server's tool printed last: its latest whole round, and when.
#[derive(Default)]
struct Latest {
    text: String,
    at: Option<Instant>,
}

/// One server's tool, running.
struct Collector {
    server: LocalServer,
    ctl: bool,
    latest: Arc<Mutex<Latest>>,
    /// Owns the tool's process, which ends with it (`kill_on_drop`).
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// This node's BeeGFS servers and targets, watched.
pub struct Watch {
    root: Root,
    tools: Tools,
    looked: Option<Instant>,
    collectors: Vec<Collector>,
    /// The node's registered targets, as of the last look.
    targets: Vec<LocalTarget>,
    states: Arc<Mutex<States>>,
    /// The listing of the targets' states under way, if any (one at a time).
    listing: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(listing) = &self.listing {
            listing.abort();
        }
    }
}

impl Watch {
    pub fn new(root: Root) -> Watch {
        Watch::with_tools(root, Tools::find())
    }

    /// A watch that runs `tools` (tests give it stand-ins).
    pub fn with_tools(root: Root, tools: Tools) -> Watch {
        Watch {
            root,
            tools,
            looked: None,
            collectors: Vec::new(),
            targets: Vec::new(),
            states: Arc::default(),
            listing: None,
        }
    }

    /// Each of this node's servers' newest second (none on a node without BeeGFS servers, or
    /// whose tools print nothing). Looks for the servers every [`LOOK_EVERY`], starting a
    /// tool for each new one (and again for one whose tool ended); must run inside the
    /// runtime.
    pub fn seconds(&mut self) -> Vec<ServerSecond> {
        if self.looked.is_none_or(|at| at.elapsed() >= LOOK_EVERY) {
            self.looked = Some(Instant::now());
            self.look();
        }
        self.collectors
            .iter()
            .filter_map(|c| {
                let latest = c.latest.lock().unwrap_or_else(PoisonError::into_inner);
                latest.at.filter(|at| at.elapsed() < STALE_AFTER)?;
                ServerSecond::newest(c.server, &latest.text, c.ctl)
            })
            .collect()
    }

    /// Each of this node's targets now: its space (a `statfs` each), and its state as the
    /// management daemon last said (empty when it has not, or not lately). Looks for the
    /// targets every [`LOOK_EVERY`], as [`Watch::seconds`] does (whichever is asked first);
    /// must run inside the runtime.
    pub fn targets(&mut self) -> Vec<TargetSecond> {
        if self.looked.is_none_or(|at| at.elapsed() >= LOOK_EVERY) {
            self.looked = Some(Instant::now());
            self.look();
        }
        if self.targets.is_empty() {
            return Vec::new();
        }
        let states = self.states.lock().unwrap_or_else(PoisonError::into_inner).clone();
        self.targets
            .iter()
            .filter_map(|t| {
                let state = states
                    .iter()
                    .find(|(kind, id, _, at)| {
                        *kind == t.node_type && *id == t.id && at.elapsed() < STATE_STALE_AFTER
                    })
                    .map(|(_, _, state, _)| *state);
                TargetSecond::measure(&self.root, t, state)
            })
            .collect()
    }

    fn look(&mut self) {
        // Cheap where there is no BeeGFS: two configuration files that are not there.
        self.targets = pvfs_metrics::beegfs::local_targets(&self.root);
        if !self.targets.is_empty() && self.listing.as_ref().is_none_or(tokio::task::JoinHandle::is_finished)
        {
            // Each node type once, whatever order the targets are in.
            let mut kinds: Vec<NodeType> = Vec::new();
            for t in &self.targets {
                if !kinds.contains(&t.node_type) {
                    kinds.push(t.node_type);
                }
            }
            let commands: Vec<_> =
                kinds.into_iter().filter_map(|k| Some((k, self.tools.list_command(k)?))).collect();
            if !commands.is_empty() {
                self.listing =
                    Some(tokio::spawn(list_states(commands, self.targets.clone(), self.states.clone())));
            }
        }
        let servers = pvfs_metrics::beegfs::local_servers(&self.root);
        self.collectors.retain(|c| servers.contains(&c.server) && !c.task.is_finished());
        for server in servers {
            if self.collectors.iter().any(|c| c.server == server) {
                continue;
            }
            let Some((program, args, ctl)) = self.tools.command(server) else { continue };
            let latest = Arc::new(Mutex::new(Latest::default()));
            let task = tokio::spawn(collect(program, args, ctl, latest.clone()));
            self.collectors.push(Collector { server, ctl, latest, task });
        }
    }
}

/// Lists the targets of each kind with their states (`commands`: a listing per node type) and
/// keeps what the management daemon says of `targets` in `states`. A listing that fails,
/// times out or does not parse is logged (at debug: the management daemon down is not the
/// agent's trouble, and its targets' states then go stale) and changes nothing.
async fn list_states(
    commands: Vec<(NodeType, ToolRun)>,
    targets: Vec<LocalTarget>,
    states: Arc<Mutex<States>>,
) {
    for (kind, (program, args, ctl)) in commands {
        let mut command = tool(&program, &args, Stdio::null());
        let listed = async {
            let mut child = command.spawn().map_err(|e| e.to_string())?;
            let mut text = Vec::new();
            if let Some(out) = child.stdout.take() {
                out.take(MAX_LISTING as u64).read_to_end(&mut text).await.map_err(|e| e.to_string())?;
            }
            let status = child.wait().await.map_err(|e| e.to_string())?;
            if !status.success() {
                return Err(format!("exited with {status}"));
            }
            let text = String::from_utf8_lossy(&text);
            let list = if ctl {
                pvfs_metrics::beegfs::parse_ctl_listtargets(&text, kind)
            } else {
                pvfs_metrics::beegfs::parse_target_list(&text)
            };
            list.map_err(|e| e.to_string())
        };
        let list = match tokio::time::timeout(LIST_TIMEOUT, listed).await {
            Ok(Ok(list)) => list,
            Ok(Err(why)) => {
                tracing::debug!(program = %program.display(), ?args, why, "BeeGFS target states not read");
                continue;
            }
            Err(_) => {
                tracing::debug!(program = %program.display(), ?args, "BeeGFS target listing timed out");
                continue;
            }
        };
        let now = Instant::now();
        let mine: Vec<LocalTarget> = targets.iter().filter(|t| t.node_type == kind).cloned().collect();
        let told = pvfs_metrics::beegfs::states_of(&list, &mine);
        let mut states = states.lock().unwrap_or_else(PoisonError::into_inner);
        for (kind, id, state) in told {
            states.retain(|(k, i, _, _)| !(*k == kind && *i == id));
            states.push((kind, id, state, now));
        }
    }
}

/// A BeeGFS tool's process as the agent runs one: its output in English, read from a pipe, its
/// errors dropped, killed with its handle.
fn tool(program: &Path, args: &[String], stdin: Stdio) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .env("LC_ALL", "C")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    command
}

/// Runs a server's tool and keeps its latest whole round in `latest` until it ends.
async fn collect(program: PathBuf, args: Vec<String>, ctl: bool, latest: Arc<Mutex<Latest>>) {
    // ctl's `--interval` loop ends when its standard input is readable or closed (ModeIOStat's
    // `waitForInput`): an open pipe nobody writes keeps it going.
    let mut command = tool(&program, &args, Stdio::piped());
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            tracing::warn!(program = %program.display(), error = %e, "BeeGFS statistics tool not started");
            return;
        }
    };
    let _stdin = child.stdin.take();
    let Some(stdout) = child.stdout.take() else { return };
    let mut out = BufReader::new(stdout);
    let mut round: Vec<String> = Vec::new();
    let mut rows: VecDeque<String> = VecDeque::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Bounded: at most MAX_LINE bytes a line, the rest of a longer one dropped.
        match (&mut out).take(MAX_LINE as u64).read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if buf.last() != Some(&b'\n') {
            // Longer than a statistics line: skip to its end.
            let mut rest = Vec::new();
            while matches!((&mut out).take(MAX_LINE as u64).read_until(b'\n', &mut rest).await, Ok(n) if n > 0 && rest.last() != Some(&b'\n'))
            {
                rest.clear();
            }
            continue;
        }
        let line = String::from_utf8_lossy(&buf).trim_end().to_owned();
        let publish = |text: String| {
            *latest.lock().unwrap_or_else(PoisonError::into_inner) =
                Latest { text, at: Some(Instant::now()) };
        };
        if ctl {
            // ctl reprints the whole table each round, a blank line after it.
            if line.trim().is_empty() {
                if !round.is_empty() {
                    publish(round.join("\n") + "\n");
                    round.clear();
                }
            } else if round.len() < MAX_ROUND_LINES {
                round.push(line);
            }
        } else if line.starts_with('{') {
            // BeeGFS 8's ndjson: a row a line, whole in itself.
            rows.push_back(line);
            while rows.len() > NDJSON_ROWS {
                rows.pop_front();
            }
            publish(rows.iter().map(|r| format!("{r}\n")).collect());
        }
    }
    let status = child.wait().await;
    tracing::warn!(program = %program.display(), status = ?status.ok(), "BeeGFS statistics tool ended; started again at the next look");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root holding one storage server (ID 3) and the stand-in `beegfs-ctl` ([`STAND_IN_CTL`]).
    fn storage_node() -> (tempfile::TempDir, Root, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let put = |path: &str, text: &str| {
            let at = dir.path().join(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        };
        put("etc/beegfs/beegfs-storage.conf", "storeStorageDirectory = /data/beegfs/t1\n");
        put("data/beegfs/t1/nodeNumID", "3\n");
        put("data/beegfs/t1/targetNumID", "101\n");
        let ctl = dir.path().join("beegfs-ctl");
        std::fs::write(&ctl, STAND_IN_CTL).unwrap();
        std::fs::set_permissions(&ctl, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let root = Root::at(dir.path());
        (dir, root, ctl)
    }

    /// The stand-in `beegfs-ctl` both this and the CLI's BeeGFS test run (its header says how
    /// it prints).
    const STAND_IN_CTL: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../pvfs-metrics/testdata/beegfs/stand-in-beegfs-ctl.sh"
    ));

    /// The server's tool is started once found, its newest second told each time it is asked
    /// (bounded wait for its first round), and it ends with the watch.
    #[tokio::test]
    async fn a_storage_servers_seconds_come_from_its_running_tool() {
        let (_dir, root, ctl) = storage_node();
        let mut watch = Watch::with_tools(root, Tools { ctl: Some(ctl), beegfs: None });
        let mut seen = Vec::new();
        for _ in 0..50 {
            seen = watch.seconds();
            if !seen.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let [second] = seen.as_slice() else { panic!("no second within 5 s: {seen:?}") };
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
        assert_eq!(
            (second.kind.as_str(), second.num_id, second.requests, second.write_bytes, second.read_bytes),
            ("storage", 3, 880, 102_400 * 1024, 4 * 1024)
        );
        assert!((now - second.time).abs() <= 2, "the newest row: {} against {now}", second.time);
        // The tool keeps running, printing a round a second, while the watch lives.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let later = watch.seconds();
        assert!(later.first().is_some_and(|s| s.time > second.time), "{later:?} after {second:?}");
        assert!(!watch.collectors[0].task.is_finished());
    }

    /// The node's target is measured every time it is asked (its directory's `statfs`), and
    /// its state is what the management daemon's listing says of it (bounded wait for the
    /// first listing); another server's target in the listing is not told.
    #[tokio::test]
    async fn a_storage_targets_space_and_state_are_told() {
        let (dir, root, ctl) = storage_node();
        let mut watch = Watch::with_tools(root, Tools { ctl: Some(ctl), beegfs: None });
        let mut seen = Vec::new();
        for _ in 0..50 {
            seen = watch.targets();
            if seen.first().is_some_and(|t| !t.reachability.is_empty()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let [target] = seen.as_slice() else { panic!("one target: {seen:?}") };
        assert_eq!(
            (target.kind.as_str(), target.id, target.path.as_str()),
            ("storage", 101, "/data/beegfs/t1")
        );
        assert_eq!((target.reachability.as_str(), target.consistency.as_str()), ("online", "good"));
        let st = nix::sys::statfs::statfs(dir.path()).unwrap();
        assert_eq!(target.total_bytes, st.blocks() * st.block_size() as u64);
        assert!(target.free_bytes <= target.total_bytes && target.total_inodes > 0, "{target:?}");
        // The target's free space follows an override at once (read every second).
        std::fs::write(dir.path().join("data/beegfs/t1/free_space.override"), "3G\n").unwrap();
        assert_eq!(watch.targets()[0].free_bytes, 3 << 30);
    }

    /// No BeeGFS server on the node, or no tool: nothing started, nothing told.
    #[tokio::test]
    async fn a_node_without_servers_or_tools_has_none() {
        let empty = tempfile::tempdir().unwrap();
        let mut watch =
            Watch::with_tools(Root::at(empty.path()), Tools { ctl: Some("/bin/false".into()), beegfs: None });
        assert!(watch.seconds().is_empty() && watch.collectors.is_empty());
        assert!(watch.targets().is_empty() && watch.listing.is_none());
        let (_dir, root, _) = storage_node();
        let mut watch = Watch::with_tools(root, Tools::default());
        assert!(watch.seconds().is_empty() && watch.collectors.is_empty());
        // Without a tool the space is still told, the state is not.
        let targets = watch.targets();
        assert!(watch.listing.is_none());
        assert_eq!(targets.iter().map(|t| (t.id, t.reachability.as_str())).collect::<Vec<_>>(), [(101, "")]);
    }
}
