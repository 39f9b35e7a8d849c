//! `pvfsctl up`: a plan's units run across the cluster in dependency order, independent units
//! in parallel, every step reported as it happens.
//!
//! A unit starts when every unit it depends on has succeeded. A unit that fails (a step
//! failed, or its agent could not be reached or went away) skips everything that depends on
//! it; independent work goes on. Nothing is retried here: steps are assessed before they act,
//! so running `up` again after a fix resumes where the cluster is.
//!
//! A node that must boot into another kernel (a step said so) stops its units there, unless
//! reboots are allowed (`--allow-reboot`, or `reboot = true` on the node): then its agent
//! reboots it, `up` waits for it to come back running that kernel (`reboot`), and the unit
//! runs again from its first step.
//!
//! A dry run (`--plan`) walks the same order, but no unit waits for another's success (nothing
//! is changed, so nothing can fail to be made); a unit whose upstream would change something is
//! told so, and reports steps it cannot assess yet as pending rather than failed.

use crate::dial::{Connection, DialError, Dialer, from_status};
use crate::reboot::{self, Progress, Wait};
use crate::recap::{Counts, Recap};
use pvfs_config::Cluster;
use pvfs_plan::{Plan, Unit};
use pvfs_proto::pb;
use pvfs_steps::{Outcome, StepEvent};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How `converge` runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only assess and report (`--plan`): nothing changes, nothing reboots.
    pub plan: bool,
    /// Every node may be rebooted into a kernel it must boot (`--allow-reboot`); without it,
    /// only nodes with `reboot = true` in the cluster file are.
    pub allow_reboot: bool,
    /// How long a rebooting node has to come back.
    pub reboot_wait: Wait,
    /// Cancelled to stop early (Ctrl-C): no unit starts after that, and the units under way
    /// run to their end, so no step is left half-done by the coordinator leaving.
    pub stop: CancellationToken,
    /// On `stop`, the units under way stop too, between two steps: the coordinator leaves the
    /// unit's call, and the agent finishes the step it is running (an action is never cut
    /// short) and starts no other. For `down --wipe`, whose one unit per node may wipe many
    /// disks: a stop lets the disk being wiped finish and wipes no other.
    pub stop_between_steps: bool,
}

impl Options {
    fn may_reboot(&self, node: &pvfs_config::Node) -> bool {
        self.allow_reboot || node.reboot
    }
}

/// What happens during a run, for the live view, `--json` and the recap.
#[derive(Debug, Clone)]
pub enum UpEvent {
    UnitStarted {
        unit: usize,
        node: String,
        label: String,
        steps: usize,
    },
    /// A step event from the unit's agent, with the step it is about.
    Step {
        unit: usize,
        node: String,
        step: String,
        kind: &'static str,
        event: StepEvent,
    },
    UnitDone {
        unit: usize,
        node: String,
        label: String,
        result: Result<(), UnitFailed>,
        elapsed: Duration,
    },
    /// Stopped, neither done nor failed: a step said the node must boot into `kernel` (it
    /// runs `running`) before the rest can run.
    UnitStopped {
        unit: usize,
        node: String,
        label: String,
        kernel: String,
        running: String,
        elapsed: Duration,
    },
    /// A node rebooting into `kernel`, as a step said it must: where the reboot is.
    Reboot {
        node: String,
        kernel: String,
        progress: Progress,
    },
    /// Not run: a unit it depends on failed.
    UnitSkipped {
        unit: usize,
        node: String,
        label: String,
        reason: String,
    },
}

/// Why a unit did not succeed: each failure names the step and what went wrong, in order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.join("; "))]
pub struct UnitFailed(pub Vec<String>);

/// As its text: `up --json`'s `error` field is one string, the failures joined.
impl serde::Serialize for UnitFailed {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// How the run ended: what every cluster-wide run reports ([`Recap`]: step counts per node,
/// the failures, each naming node, unit and what went wrong), and what only converging can
/// say: the nodes that must boot into another kernel, those rebooted, whether it was stopped.
#[derive(Debug, Clone, Default)]
pub struct UpRecap {
    pub run: Recap<String>,
    /// Nodes whose units stopped because they must boot into an installed kernel first (in a
    /// dry run: also those `up` would reboot).
    pub boots: Vec<Boot>,
    /// Nodes `up` rebooted into the kernel they had to boot, and that came back running it.
    pub rebooted: Vec<Boot>,
    /// The run was stopped ([`Options::stop`]): units that had not started were skipped.
    pub interrupted: bool,
}

/// A node that must boot into `kernel` (installed) before its units can go on; it runs
/// `running`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Boot {
    pub node: String,
    pub kernel: String,
    pub running: String,
    /// Reboots are allowed for the node: `up` reboots it (a dry run says it would).
    pub allowed: bool,
}

impl Boot {
    /// The exact next step, for the operator.
    pub fn next_step(&self) -> String {
        if self.allowed {
            return format!(
                "pvfsctl up will reboot {} into {} (it runs {}) and go on",
                self.node, self.kernel, self.running
            );
        }
        format!(
            "reboot {} into {} (it runs {}), then run pvfsctl up again (or let it: reboot = true \
             on the node, or pvfsctl up --allow-reboot)",
            self.node, self.kernel, self.running
        )
    }
}

impl UpRecap {
    /// Every unit ran to its end: nothing failed, no node waits for a reboot, and the run was
    /// not stopped early.
    pub fn converged(&self) -> bool {
        self.run.failures.is_empty() && self.boots.is_empty() && !self.interrupted
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Succeeded,
    Failed,
    Skipped,
}

/// Runs `plan` on `cluster`'s agents. Events go to `events` as they happen (a closed receiver
/// is fine).
pub async fn converge(
    cluster: &Cluster,
    plan: &Plan,
    dialer: &Dialer,
    options: &Options,
    events: mpsc::UnboundedSender<UpEvent>,
) -> UpRecap {
    let started = Instant::now();
    let mut run = Schedule::new(cluster, plan, dialer, options, &events);
    let mut tasks = JoinSet::new();
    loop {
        // Stopped: nothing more starts (units only start here, after one has ended, so this is
        // checked before every start); the units under way are still joined below.
        let interrupted = options.stop.is_cancelled();
        run.start_ready(interrupted, &mut tasks);
        // (Units only depend on units before them, so one pass in order skips transitively.)
        let Some(joined) = tasks.join_next().await else { break };
        match joined {
            Ok((id, result)) => run.finish(id, result).await,
            // A panic in a unit's task is a bug; the unit then stays "running" and the run
            // ends with what finished.
            Err(err) => run.failures.push(format!("internal error: {err}")),
        }
    }
    run.recap(started)
}

/// One `converge` run under way: where each unit stands, and what the recap will say. Kept
/// apart from the loop in `converge` so that starting units, folding in the ones that ended
/// and the recap each read as one function over the same state.
struct Schedule<'a> {
    cluster: &'a Cluster,
    plan: &'a Plan,
    dialer: &'a Dialer,
    options: &'a Options,
    events: &'a mpsc::UnboundedSender<UpEvent>,
    /// `--plan`, which the wire calls a dry run.
    dry_run: bool,
    /// Sent with every unit: the agents refuse a server, peer or brick outside the cluster.
    hosts: Arc<[String]>,
    counts: BTreeMap<String, Counts>,
    failures: Vec<String>,
    boots: Vec<Boot>,
    rebooted: Vec<Boot>,
    state: Vec<State>,
    /// Dry runs: whether a unit (or anything before it) would change something.
    would_change: Vec<bool>,
    /// One connection per node for all its units: a TLS handshake per unit would be most of a
    /// no-op run's cost on a large cluster. A broken channel reconnects by itself.
    connections: Connections,
}

impl<'a> Schedule<'a> {
    fn new(
        cluster: &'a Cluster,
        plan: &'a Plan,
        dialer: &'a Dialer,
        options: &'a Options,
        events: &'a mpsc::UnboundedSender<UpEvent>,
    ) -> Schedule<'a> {
        Schedule {
            cluster,
            plan,
            dialer,
            options,
            events,
            dry_run: options.plan,
            hosts: pvfs_plan::cluster_hosts(cluster).into(),
            counts: cluster.nodes.iter().map(|n| (n.name.clone(), Counts::default())).collect(),
            failures: Vec::new(),
            boots: Vec::new(),
            rebooted: Vec::new(),
            state: vec![State::Waiting; plan.units.len()],
            would_change: vec![false; plan.units.len()],
            connections: Default::default(),
        }
    }

    /// One pass over the waiting units, in order: skips what can no longer run, starts what
    /// can.
    fn start_ready(&mut self, interrupted: bool, tasks: &mut JoinSet<(usize, UnitResult)>) {
        let plan = self.plan;
        for unit in &plan.units {
            if self.state[unit.id] != State::Waiting {
                continue;
            }
            if let Some(reason) = self.skip_reason(unit, interrupted) {
                self.state[unit.id] = State::Skipped;
                self.counts.entry(unit.node.clone()).or_default().skipped += unit.steps.len();
                let _ = self.events.send(UpEvent::UnitSkipped {
                    unit: unit.id,
                    node: unit.node.clone(),
                    label: unit.label.clone(),
                    reason,
                });
                continue;
            }
            let ready = unit.after.iter().all(|&d| {
                let s = self.state[d];
                matches!(s, State::Succeeded) || (self.dry_run && matches!(s, State::Failed | State::Skipped))
            });
            if ready {
                self.state[unit.id] = State::Running;
                self.spawn(unit, tasks);
            }
        }
    }

    /// Why a waiting unit will not run this time, if it will not.
    fn skip_reason(&self, unit: &Unit, interrupted: bool) -> Option<String> {
        if interrupted {
            return Some("interrupted before it started".to_owned());
        }
        // A node that must boot into another kernel runs nothing more this time: its
        // other units would meet the wrong kernel too.
        if let Some(boot) = self.boots.iter().find(|b| b.node == unit.node) {
            return Some(format!("{} must boot into kernel {} first", boot.node, boot.kernel));
        }
        // A dry run waits for no success: nothing was changed, so nothing failed to be made.
        if self.dry_run {
            return None;
        }
        let failed: Vec<String> = unit
            .after
            .iter()
            .filter(|&&d| matches!(self.state[d], State::Failed | State::Skipped))
            .map(|&d| format!("{} {}", self.plan.units[d].node, self.plan.units[d].label))
            .collect();
        if failed.is_empty() {
            return None;
        }
        Some(format!("depends on {}, which did not succeed", failed.join(", ")))
    }

    /// Runs `unit` on its node's agent in a task of its own; when a step needs another kernel
    /// and the node may be rebooted, the task reboots it and runs the unit again.
    fn spawn(&self, unit: &Unit, tasks: &mut JoinSet<(usize, UnitResult)>) {
        let dry_run = self.dry_run;
        let after_changes = unit.after.iter().any(|&d| self.would_change[d]);
        let node = self.cluster.node(&unit.node).cloned();
        let (unit, dialer, events) = (unit.clone(), self.dialer.clone(), self.events.clone());
        let (connections, options, hosts) =
            (self.connections.clone(), self.options.clone(), self.hosts.clone());
        tasks.spawn(async move {
            let result = match node {
                Some(node) => {
                    let conn = connect(&connections, &node, &dialer).await;
                    let stop = options.stop_between_steps.then_some(&options.stop);
                    let sent = Sent { unit: &unit, hosts: &hosts, dry_run, after_changes, stop };
                    let result = run_unit(&node, sent, conn, &dialer, &events).await;
                    if result.boot.is_some() && !dry_run && options.may_reboot(&node) {
                        let again = Again { node: &node, unit: &unit, hosts: &hosts, after_changes };
                        again.reboot(result, &connections, &dialer, options.reboot_wait, &events).await
                    } else {
                        result
                    }
                }
                None => UnitResult::unreachable(&unit, format!("no node {} in the cluster file", unit.node)),
            };
            (unit.id, result)
        });
    }

    /// Folds in a unit that ended: its counts and failures, whether it would change
    /// something, a kernel its node must boot into, and the event that says how it ended.
    async fn finish(&mut self, id: usize, mut result: UnitResult) {
        let unit = &self.plan.units[id];
        if !result.timed_out.is_empty() {
            firewall_hints(self.cluster, &unit.node, &mut result, self.dialer).await;
        }
        let c = self.counts.entry(unit.node.clone()).or_default();
        c.ok += result.counts.ok;
        c.changed += result.counts.changed;
        c.failed += result.counts.failed;
        c.skipped += result.counts.skipped;
        c.pending += result.counts.pending;
        self.would_change[id] = result.counts.changed > 0
            || result.counts.pending > 0
            || unit.after.iter().any(|&d| self.would_change[d]);
        self.state[id] = if result.failures.is_empty() && result.boot.is_none() {
            State::Succeeded
        } else {
            State::Failed
        };
        if let Some((kernel, running)) = &result.boot
            && !self.boots.iter().any(|b| b.node == unit.node)
        {
            let allowed = self.cluster.node(&unit.node).is_some_and(|n| self.options.may_reboot(n));
            self.boots.push(Boot {
                node: unit.node.clone(),
                kernel: kernel.clone(),
                running: running.clone(),
                allowed,
            });
        }
        self.rebooted.extend(result.rebooted.clone());
        self.failures.extend(result.failures.iter().map(|f| format!("{} ({}): {f}", unit.node, unit.label)));
        let done = match (&result.boot, result.failures.is_empty()) {
            (Some((kernel, running)), true) => UpEvent::UnitStopped {
                unit: id,
                node: unit.node.clone(),
                label: unit.label.clone(),
                kernel: kernel.clone(),
                running: running.clone(),
                elapsed: result.elapsed,
            },
            (_, ok) => UpEvent::UnitDone {
                unit: id,
                node: unit.node.clone(),
                label: unit.label.clone(),
                result: if ok { Ok(()) } else { Err(UnitFailed(result.failures.clone())) },
                elapsed: result.elapsed,
            },
        };
        let _ = self.events.send(done);
    }

    /// Every node's counts (in the cluster file's order), the failures and the boots.
    fn recap(self, started: Instant) -> UpRecap {
        let nodes = self
            .cluster
            .nodes
            .iter()
            .map(|n| (n.name.clone(), self.counts.get(&n.name).copied().unwrap_or_default()))
            .collect();
        let interrupted = self.options.stop.is_cancelled();
        UpRecap {
            run: Recap { nodes, failures: self.failures, elapsed: started.elapsed() },
            boots: self.boots,
            rebooted: self.rebooted,
            interrupted,
        }
    }
}

type Connections = Arc<tokio::sync::Mutex<std::collections::HashMap<String, Connection>>>;

/// The node's connection: the one already open, or a new one.
async fn connect(
    connections: &Connections,
    node: &pvfs_config::Node,
    dialer: &Dialer,
) -> Result<Connection, DialError> {
    if let Some(conn) = connections.lock().await.get(&node.name) {
        return Ok(conn.clone());
    }
    let conn = dialer.connect(node).await?;
    connections.lock().await.insert(node.name.clone(), conn.clone());
    Ok(conn)
}

/// How one unit went.
struct UnitResult {
    counts: Counts,
    failures: Vec<String>,
    /// The kernel the node must boot into (and the one it runs), when a step said so.
    boot: Option<(String, String)>,
    /// The node was rebooted into the kernel it had to boot, and the unit ran again.
    rebooted: Option<Boot>,
    elapsed: Duration,
    /// Gates that timed out, each with the index of its line in `failures`: a firewall on a
    /// node they wait for may be why (`firewall_hints`).
    timed_out: Vec<(usize, pvfs_steps::GateKind)>,
}

impl UnitResult {
    /// The agent could not be asked: nothing ran.
    fn unreachable(unit: &Unit, why: String) -> UnitResult {
        UnitResult {
            counts: Counts { failed: 1, skipped: unit.steps.len().saturating_sub(1), ..Counts::default() },
            failures: vec![why],
            boot: None,
            rebooted: None,
            elapsed: Duration::ZERO,
            timed_out: Vec::new(),
        }
    }
}

/// A unit as it is sent: its steps, the cluster's hosts, and how it is run.
#[derive(Clone, Copy)]
struct Sent<'a> {
    unit: &'a Unit,
    hosts: &'a [String],
    dry_run: bool,
    after_changes: bool,
    /// Cancelled: leave the unit after the step under way ([`Options::stop_between_steps`]).
    stop: Option<&'a CancellationToken>,
}

/// Sends one unit to its agent and follows the events until the last step is done.
async fn run_unit(
    node: &pvfs_config::Node,
    sent: Sent<'_>,
    conn: Result<Connection, DialError>,
    dialer: &Dialer,
    events: &mpsc::UnboundedSender<UpEvent>,
) -> UnitResult {
    let Sent { unit, hosts, dry_run, after_changes, stop } = sent;
    let started = Instant::now();
    let _ = events.send(UpEvent::UnitStarted {
        unit: unit.id,
        node: unit.node.clone(),
        label: unit.label.clone(),
        steps: unit.steps.len(),
    });
    let mut conn = match conn {
        Ok(conn) => conn,
        Err(err) => return UnitResult::unreachable(unit, format!("cannot reach the agent: {err}")),
    };
    let request = pb::ApplyRequest {
        steps: unit.steps.iter().map(pb::Step::from).collect(),
        dry_run,
        after_changes,
        label: unit.label.clone(),
        cluster_hosts: hosts.to_vec(),
    };
    // The connect timeout bounds the call's start; steps themselves have their own limits.
    let mut stream = match conn.agent.apply(request).await {
        Ok(response) => response.into_inner(),
        // The agent's policy refused the unit before anything ran: its message names the step,
        // the rule and what to do, which is all the operator needs.
        Err(status) if status.code() == tonic::Code::PermissionDenied => {
            return UnitResult::unreachable(
                unit,
                format!("{}; nothing ran on {}", status.message(), unit.node),
            );
        }
        Err(status) => {
            let err = from_status(&status, &node.address, dialer.timeout());
            return UnitResult::unreachable(unit, format!("the agent refused the steps: {err}"));
        }
    };
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    let mut boot = None;
    let mut timed_out = Vec::new();
    let mut done = vec![false; unit.steps.len()];
    let stopped = async {
        match stop {
            Some(stop) => stop.cancelled().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(stopped);
    loop {
        let message = tokio::select! {
            message = stream.message() => message,
            () = &mut stopped => {
                // Leaving the call ends the stream: the agent sees it before its next step.
                let at = done.iter().position(|d| !d).unwrap_or(unit.steps.len());
                failures.push(format!(
                    "interrupted during step {} of {}: the agent finishes that step (a disk's wipe is never cut \
                     short) and starts no other; run the command again to go on",
                    at + 1,
                    unit.steps.len()
                ));
                break;
            }
        };
        match message {
            Ok(Some(message)) => {
                let Some(event) = Option::<StepEvent>::from(message) else { continue };
                let index = match &event {
                    StepEvent::Started { index }
                    | StepEvent::Progress { index, .. }
                    | StepEvent::Command { index, .. }
                    | StepEvent::Done { index, .. } => *index as usize,
                };
                let Some(step) = unit.steps.get(index) else { continue };
                if let StepEvent::Done { outcome, .. } = &event {
                    done[index] = true;
                    match outcome {
                        Outcome::Ok { .. } => counts.ok += 1,
                        Outcome::Changed { .. } | Outcome::WouldChange { .. } => counts.changed += 1,
                        Outcome::Pending { .. } => counts.pending += 1,
                        Outcome::Skipped { .. } => counts.skipped += 1,
                        Outcome::MustBoot { kernel, running } => {
                            boot = Some((kernel.clone(), running.clone()));
                        }
                        Outcome::Failed(f) => {
                            counts.failed += 1;
                            let mut line = format!("step {} ({step}) failed: {}", index + 1, f.message);
                            if let (Some(cmd), false) = (&f.command, f.message.contains("exited")) {
                                line += &format!(" [command: {cmd}, exit {:?}]", f.code);
                            }
                            // `StepError::Deadline`'s words: the gate waited its whole time.
                            if let pvfs_steps::Step::Gate(gate) = step
                                && f.message.starts_with("not ready after")
                            {
                                timed_out.push((failures.len(), gate.kind.clone()));
                            }
                            failures.push(line);
                        }
                    }
                }
                let _ = events.send(UpEvent::Step {
                    unit: unit.id,
                    node: unit.node.clone(),
                    step: step.to_string(),
                    kind: step.kind(),
                    event,
                });
            }
            Ok(None) => break,
            Err(status) => {
                // The agent went away mid-unit (killed, rebooted, network cut): the step under
                // way may or may not have finished; the next run's assessment will tell.
                let err = from_status(&status, &node.address, dialer.timeout());
                let at = done.iter().position(|d| !d).unwrap_or(unit.steps.len());
                failures.push(format!(
                    "lost the agent during step {} of {} (it, its node or the network went away; \
                     run `up` again once it is back: finished steps are kept): {err}",
                    at + 1,
                    unit.steps.len()
                ));
                break;
            }
        }
    }
    let unfinished = done.iter().filter(|d| !**d).count();
    if unfinished > 0 {
        if failures.is_empty() {
            failures.push(format!("the agent ended the stream with {unfinished} steps unreported"));
        }
        counts.failed += 1;
        counts.skipped += unfinished - 1;
    }
    UnitResult { counts, failures, boot, rebooted: None, elapsed: started.elapsed(), timed_out }
}

/// Adds to each timed-out gate's failure what the firewalls of the nodes it waited for say:
/// a gate that waits on another node's port (LNet's 988, BeeGFS's 8008, glusterd's 24007)
/// times out with nothing pointing at a firewall that drops the packets. Each node involved is
/// asked for its facts (bounded by the dialer's timeout); one that cannot be asked adds
/// nothing.
async fn firewall_hints(cluster: &Cluster, node: &str, result: &mut UnitResult, dialer: &Dialer) {
    let mut asked: BTreeMap<String, pvfs_metrics::facts::HostFirewall> = BTreeMap::new();
    for (line, kind) in std::mem::take(&mut result.timed_out) {
        let mut hints = Vec::new();
        for other in pvfs_plan::gate_nodes(cluster, node, &kind) {
            let firewall = match asked.get(&other.name) {
                Some(firewall) => *firewall,
                None => {
                    let report = crate::survey::ask(other, dialer).await;
                    let firewall = report.result.map(|info| info.facts.firewall).unwrap_or_default();
                    asked.insert(other.name.clone(), firewall);
                    firewall
                }
            };
            let ports = pvfs_plan::ports_of(cluster, other);
            hints.extend(firewall_hint(&other.name, firewall, &ports, cluster.firewall));
        }
        if let (false, Some(failure)) = (hints.is_empty(), result.failures.get_mut(line)) {
            failure.push_str(". ");
            failure.push_str(&hints.join(". "));
        }
    }
}

/// What to say about `node`'s firewall when a gate waiting on it timed out, if it has one that
/// is on: the ports the node's file system role needs and how to open them.
fn firewall_hint(
    node: &str,
    firewall: pvfs_metrics::facts::HostFirewall,
    ports: &[pvfs_steps::PortRange],
    setting: pvfs_config::Firewall,
) -> Option<String> {
    use pvfs_metrics::facts::HostFirewall;
    if ports.is_empty() {
        return None;
    }
    let list: Vec<String> = ports.iter().map(ToString::to_string).collect();
    let list = list.join(" ");
    match (firewall, setting) {
        (HostFirewall::Firewalld, pvfs_config::Firewall::Leave) => {
            let adds: Vec<String> =
                ports.iter().map(|p| format!("firewall-cmd --permanent --add-port={p}")).collect();
            Some(format!(
                "firewalld is running on {node} and port {list} may be closed there: let pvfs open it (remove \
                 `firewall = \"leave\"` from [cluster]) or open it yourself (`{}`, then `firewall-cmd --reload`)",
                adds.join("`, `")
            ))
        }
        (HostFirewall::Firewalld, pvfs_config::Firewall::Open) => Some(format!(
            "firewalld is running on {node}, where pvfs opened port {list} in the default zone: if the interface \
             the cluster uses is in another zone (`firewall-cmd --get-active-zones`), open it in that zone"
        )),
        (HostFirewall::Ufw, _) => {
            let allows: Vec<String> = ports.iter().map(|p| format!("ufw allow {}", ufw_port(p))).collect();
            Some(format!(
                "ufw is enabled on {node} and port {list} may be closed there (pvfs changes only firewalld): open \
                 it with `{}`",
                allows.join("`, `")
            ))
        }
        _ => None,
    }
}

/// ufw's port form: `988/tcp`, a range with a colon (`8003:8008/udp`, ufw(8)).
fn ufw_port(p: &pvfs_steps::PortRange) -> String {
    if p.first == p.last { p.to_string() } else { format!("{}:{}/{}", p.first, p.last, p.protocol.as_str()) }
}

/// A unit to run again once its node has rebooted.
struct Again<'a> {
    node: &'a pvfs_config::Node,
    unit: &'a Unit,
    hosts: &'a [String],
    after_changes: bool,
}

impl Again<'_> {
    /// `first` stopped because the node must boot into another kernel: reboots the node into
    /// it, waits for it, and runs the unit again from its first step (what ran before the
    /// reboot assesses as done). The changes made before the reboot still count.
    async fn reboot(
        self,
        first: UnitResult,
        connections: &Connections,
        dialer: &Dialer,
        wait: Wait,
        events: &mpsc::UnboundedSender<UpEvent>,
    ) -> UnitResult {
        let Again { node, unit, hosts, after_changes } = self;
        let Some((kernel, running)) = first.boot.clone() else { return first };
        let failed = |first: UnitResult, why: String| UnitResult {
            counts: Counts { failed: first.counts.failed + 1, ..first.counts },
            failures: vec![why],
            boot: None,
            ..first
        };
        let conn = match connect(connections, node, dialer).await {
            Ok(conn) => conn,
            Err(err) => return failed(first, format!("cannot ask the agent to reboot the node: {err}")),
        };
        let report = |progress| {
            let _ =
                events.send(UpEvent::Reboot { node: node.name.clone(), kernel: kernel.clone(), progress });
        };
        let conn = match reboot::reboot_into(node, conn, dialer, &kernel, wait, report).await {
            Ok(conn) => conn,
            Err(err) => return failed(first, err.to_string()),
        };
        // The old connection went with the node's last boot.
        connections.lock().await.insert(node.name.clone(), conn.clone());
        let sent = Sent { unit, hosts, dry_run: false, after_changes, stop: None };
        let mut again = run_unit(node, sent, Ok(conn), dialer, events).await;
        again.counts.changed += first.counts.changed;
        again.elapsed += first.elapsed;
        if let Some((still, runs)) = again.boot.take() {
            again.counts.failed += 1;
            again.failures.push(format!(
                "still must boot into {still} (it runs {runs}) after rebooting into {kernel}; \
                 reboot it by hand, then run pvfsctl up again"
            ));
        }
        again.rebooted = Some(Boot { node: node.name.clone(), kernel, running, allowed: true });
        again
    }
}

#[cfg(test)]
mod tests {
    use super::UnitFailed;

    /// A timed-out gate's failure names the firewall on the node, the port and the fix, for
    /// each way the cluster file and the node can be.
    #[test]
    fn a_firewall_on_a_node_a_gate_waited_for_is_named_with_its_port() {
        use pvfs_config::Firewall;
        use pvfs_metrics::facts::HostFirewall;
        use pvfs_steps::{PortRange, Protocol};
        let lnet = [PortRange::one(988, Protocol::Tcp)];
        let hint = |fw, setting, ports: &[PortRange]| super::firewall_hint("mgs", fw, ports, setting);
        assert_eq!(
            hint(HostFirewall::Firewalld, Firewall::Leave, &lnet).unwrap(),
            "firewalld is running on mgs and port 988/tcp may be closed there: let pvfs open it (remove \
             `firewall = \"leave\"` from [cluster]) or open it yourself (`firewall-cmd --permanent \
             --add-port=988/tcp`, then `firewall-cmd --reload`)"
        );
        let opened = hint(HostFirewall::Firewalld, Firewall::Open, &lnet).unwrap();
        assert!(opened.contains("pvfs opened port 988/tcp in the default zone"), "{opened}");
        let beegfs = [PortRange::one(8008, Protocol::Tcp), PortRange::range(8003, 8008, Protocol::Udp)];
        let ufw = hint(HostFirewall::Ufw, Firewall::Open, &beegfs).unwrap();
        assert!(ufw.contains("`ufw allow 8008/tcp`, `ufw allow 8003:8008/udp`"), "{ufw}");
        // No firewall, or not known: nothing is guessed.
        assert_eq!(hint(HostFirewall::None, Firewall::Leave, &lnet), None);
        assert_eq!(hint(HostFirewall::Unknown, Firewall::Leave, &lnet), None);
        assert_eq!(hint(HostFirewall::Firewalld, Firewall::Leave, &[]), None);
    }

    /// The live view, the recap and `--json` (which serializes it as this text) show a unit's
    /// failures as one line, in the order they happened.
    #[test]
    fn a_units_failures_read_as_one_line() {
        let failed = UnitFailed(vec!["step 1 (a) failed: x".into(), "step 2 (b) failed: y".into()]);
        assert_eq!(failed.to_string(), "step 1 (a) failed: x; step 2 (b) failed: y");
    }
}
