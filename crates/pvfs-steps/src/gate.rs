//! Gates: readiness waits between nodes and validations at the end. They change nothing; they
//! probe until a condition holds or their deadline passes, backing off between probes.

use crate::gluster::{GlusterVolume, Rebalance, peers, rebalance_status};
use crate::{Host, StepError};
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
    /// `lfs check servers` on a client: every MDT/OST connection active.
    LfsCheckServers,
    /// The BeeGFS management daemon answers (`beegfs-ctl --listnodes --nodetype=management
    /// --reachable --errorcodes`).
    BeegfsMgmtdReachable,
    /// `beegfs-check-servers`: every management, metadata and storage server reachable.
    BeegfsCheckServers,
    /// A file can be created, written, synced, read back and removed in this directory: the
    /// client's view of the file system works end to end.
    Writable { dir: String },
}

impl GateKind {
    pub fn name(&self) -> &'static str {
        match self {
            GateKind::GlusterPeersInCluster { .. } => "wait-gluster-peers",
            GateKind::GlusterBricksOnline { .. } => "check-gluster-bricks",
            GateKind::GlusterRebalanced { .. } => "wait-gluster-rebalance",
            GateKind::LnetPing { .. } => "wait-lnet",
            GateKind::LfsCheckServers => "check-lustre-servers",
            GateKind::BeegfsMgmtdReachable => "wait-beegfs-mgmtd",
            GateKind::BeegfsCheckServers => "check-beegfs-servers",
            GateKind::Writable { .. } => "check-writable",
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
    pub(crate) async fn probe<R: Runner>(&self, host: &Host<R>) -> Result<GateState, StepError> {
        use GateState::{NotReady, Ready};
        Ok(match &self.kind {
            GateKind::GlusterPeersInCluster { peers: want } => {
                let known = peers(host).await?;
                let waiting: Vec<String> = want
                    .iter()
                    .filter_map(|p| match known.iter().find(|k| k.names.contains(p)) {
                        Some(k) if k.in_cluster() => None,
                        Some(k) => Some(format!(
                            "{p}: {} ({})",
                            k.state,
                            if k.connected { "connected" } else { "disconnected" }
                        )),
                        None => Some(format!("{p}: not in the pool")),
                    })
                    .collect();
                if waiting.is_empty() {
                    Ready(format!("{} peers in cluster", want.len()))
                } else {
                    NotReady(waiting.join("; "))
                }
            }
            GateKind::GlusterBricksOnline { volume, bricks } => {
                let v = GlusterVolume {
                    name: volume.clone(),
                    layout: crate::GlusterLayout::Distribute,
                    bricks: bricks.clone(),
                    options: vec![],
                };
                let offline = v.offline_bricks(host).await?;
                if offline.is_empty() {
                    Ready(format!("{} bricks online", bricks.len()))
                } else {
                    NotReady(format!("offline: {}", offline.join(" ")))
                }
            }
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
                            "see /var/log/glusterfs/{volume}-rebalance.log on those servers, then run                              `gluster volume rebalance {volume} fix-layout start` again"
                        )),
                    });
                }
            },
            GateKind::LnetPing { nid } => {
                exit_zero(host, Command::new("lctl").args(["ping", nid]), &format!("{nid} answers over LNet"))
                    .await?
            }
            GateKind::LfsCheckServers => {
                let out = host.probe(Command::new("lfs").args(["check", "servers"])).await?;
                let inactive: Vec<&str> =
                    out.stdout.lines().filter(|l| !l.trim_end().ends_with("active")).collect();
                if out.success() && inactive.is_empty() {
                    Ready(format!("{} server connections active", out.stdout.lines().count()))
                } else {
                    NotReady(format!("{} {}", inactive.join("; "), crate::error_tail(&out)).trim().to_owned())
                }
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
            GateKind::BeegfsCheckServers => {
                let out = host.probe(Command::new("beegfs-check-servers")).await?;
                let servers = out.stdout.lines().filter(|l| l.contains("[ID:")).count();
                let unreachable: Vec<&str> = out
                    .stdout
                    .lines()
                    .filter(|l| l.contains("[ID:") && !l.contains("reachable at"))
                    .collect();
                if out.success() && servers > 0 && unreachable.is_empty() {
                    Ready(format!("{servers} servers reachable"))
                } else {
                    NotReady(
                        format!("{} {}", unreachable.join("; "), crate::error_tail(&out)).trim().to_owned(),
                    )
                }
            }
            GateKind::Writable { dir } => {
                // On its own thread with a limit: I/O on a hung network mount blocks in the
                // kernel, and must not take one of the agent's runtime threads with it.
                let path = host.root.path(dir);
                let (shown, probe) = (dir.clone(), tokio::task::spawn_blocking(move || writable(&path)));
                match tokio::time::timeout(WRITE_PROBE_LIMIT, probe).await {
                    Ok(Ok(Ok(()))) => Ready(format!("{shown} is writable")),
                    Ok(Ok(Err(err))) => NotReady(format!("{shown}: {err}")),
                    Ok(Err(err)) => NotReady(format!("{shown}: the probe failed: {err}")),
                    Err(_) => NotReady(format!(
                        "{shown}: no answer within {}s (a hung mount?)",
                        WRITE_PROBE_LIMIT.as_secs()
                    )),
                }
            }
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
        host: &Host<R>,
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
async fn exit_zero<R: Runner>(host: &Host<R>, command: Command, ready: &str) -> Result<GateState, StepError> {
    let shown = command.to_string();
    let out = host.probe(command).await?;
    Ok(if out.success() {
        GateState::Ready(ready.to_owned())
    } else {
        let code = out.code.map_or("on a signal".to_owned(), |c| c.to_string());
        GateState::NotReady(format!("`{shown}` exited {code}: {}", crate::error_tail(&out)))
    })
}

/// How long one write probe may take before the mount is called hung.
const WRITE_PROBE_LIMIT: Duration = Duration::from_secs(30);

/// Creates, writes, syncs, reads back and removes a probe file in `dir` (a host path).
///
/// The directory is a client mount other users write to, so the probe's name is random and
/// created `O_EXCL|O_NOFOLLOW`: a name planted in advance (a symlink to a root file, say) is
/// never opened, only skipped. The read-back goes through the same descriptor, never the
/// name again.
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
            GateKind::LfsCheckServers => f.write_str("check lfs check servers"),
            GateKind::BeegfsMgmtdReachable => {
                f.write_str("wait until the BeeGFS management daemon is reachable")
            }
            GateKind::BeegfsCheckServers => f.write_str("check beegfs-check-servers"),
            GateKind::Writable { dir } => write!(f, "check {dir} is writable"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outcome, Step, execute};
    use pvfs_host::{RecordedRunner, Root};

    fn host(runner: RecordedRunner) -> (tempfile::TempDir, Host<RecordedRunner>) {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::new(Root::at(dir.path()), runner);
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
            execute(&Step::Gate(gate.clone()), &host, &crate::Policy::default(), true, |_| {}).await,
            Outcome::Pending { detail: "10.254.0.2: Accepted peer request (connected)".into() }
        );
        assert_eq!(
            execute(&Step::Gate(gate), &host, &crate::Policy::default(), false, |_| {}).await,
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
        let Outcome::Failed(f) =
            execute(&Step::Gate(gate), &host, &crate::Policy::default(), false, |_| {}).await
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
            &crate::Policy::default(),
            false,
            false,
            |event| {
                if let crate::Event::Done { outcome, .. } = event {
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
