//! `pvfsctl bench --fault`: a server failure during a phase, at a second of it, for a while,
//! then undone; and what it did to the phase, measured from the phase's own seconds.
//!
//! A fault is `kill-brick=NODE` (GlusterFS: the node's brick of the cluster's volume, killed as
//! a crash kills it, brought back by `gluster volume start VOL force`), `stop-service=NODE`
//! (`unit=`, glusterd by default on GlusterFS: `systemctl stop`, then `start`) or `cut-network=NODE`
//! (any node of the cluster: one of its interfaces down, `interface=` or by default the one
//! the coordinator reaches it through, brought back up by the node's agent itself when the
//! time is over, since nothing reaches the node meanwhile), with `phase=` (its label: `write`,
//! `read`; default `write`), `iteration=` (default 0), `at=` (seconds into the phase, default
//! 5) and `for=` (seconds, default 10). The node's agent does both, and only where its policy
//! file grants `faults = true`. A fault still in place when the run ends (finished, failed or
//! stopped with Ctrl-C) is undone then; a cut's undoing waits for the node to be back.
//!
//! Measured per fault, from the phase's [`BenchEvent::LatencySecond`]s (every client's
//! operations finished in each second): the rate before it (operations a second over the
//! phase's whole seconds before the fault), the seconds with no operation finished from the
//! fault on (the stall), and how long from the fault until the rate was back to 90 % of that
//! and stayed there for the rest of the phase (`None`: not within the phase).

use crate::dial::Dialer;
use pvfs_bench::phase::Phase;
use pvfs_bench::results::BenchEvent;
use pvfs_config::{Cluster, KindSpec, Node, Role};
use pvfs_proto::pb;
use std::time::Duration;
use tokio::sync::mpsc;

/// The longest a fault may be asked to last, and the latest second it may start at: a fault is
/// part of one phase, not a way to leave a server down.
const MAX_SECONDS: u64 = 3600;

/// The longest network cut the agents' policy allows (`pvfs_policy::MAX_CUT_SECONDS`, which a
/// test checks this against): refused here already rather than by every agent.
const MAX_CUT_SECONDS: u64 = 600;

/// A `--fault` that cannot be used, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--fault {spec:?}: {problem}")]
pub struct FaultSpecError {
    pub spec: String,
    pub problem: String,
}

/// What a fault does to its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// Kills the node's brick of `volume`, whose directory is `path`.
    KillBrick { volume: String, path: String },
    /// Takes `interface` down (empty: the one the coordinator reaches the node through).
    CutNetwork { interface: String },
    /// Stops the systemd unit `unit`, then starts it again.
    StopService { unit: String },
}

/// A fault, as planned for one run.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultPlan {
    /// The spec as given, to name it.
    pub spec: String,
    pub node: Node,
    pub kind: FaultKind,
    pub phase: Phase,
    pub iteration: u32,
    pub at: Duration,
    pub duration: Duration,
}

/// Reads a `--fault` against the cluster: the node must be one of it (a GlusterFS server for
/// `kill-brick`).
pub fn parse(spec: &str, cluster: &Cluster) -> Result<FaultPlan, FaultSpecError> {
    let bad = |problem: String| FaultSpecError { spec: spec.to_owned(), problem };
    let (mut node, mut phase, mut iteration, mut at, mut duration) = (None, None, 0, 5, 10);
    let (mut cut, mut interface, mut stop, mut unit) = (false, None, false, None);
    for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (key, value) = item.split_once('=').ok_or_else(|| bad(format!("{item:?} is not KEY=VALUE")))?;
        let seconds =
            |what: &str| {
                value.trim_end_matches('s').parse::<u64>().ok().filter(|s| *s <= MAX_SECONDS).ok_or_else(
                    || bad(format!("{what} must be whole seconds, at most {MAX_SECONDS}: {value:?}")),
                )
            };
        match key {
            "kill-brick" | "cut-network" | "stop-service" if node.is_some() => {
                return Err(bad("one fault per --fault: give another --fault for the next".into()));
            }
            "kill-brick" => node = Some(value.to_owned()),
            "cut-network" => {
                node = Some(value.to_owned());
                cut = true;
            }
            "stop-service" => {
                node = Some(value.to_owned());
                stop = true;
            }
            "interface" => interface = Some(value.to_owned()),
            "unit" => unit = Some(value.to_owned()),
            "phase" => {
                phase = Some(
                    serde_json::from_value::<Phase>(serde_json::Value::String(value.to_owned())).map_err(
                        |_| {
                            bad(format!("no phase is called {value:?}: use its label, such as write or read"))
                        },
                    )?,
                )
            }
            "iteration" => {
                iteration =
                    value.parse().map_err(|_| bad(format!("iteration must be a number: {value:?}")))?
            }
            "at" => at = seconds("at")?,
            "for" => duration = seconds("for")?,
            _ => {
                return Err(bad(format!(
                    "unknown key {key:?}: use kill-brick, cut-network or stop-service, interface, unit, phase, \
                     iteration, at, for"
                )));
            }
        }
    }
    let node = node.ok_or_else(|| {
        bad("say what fails: kill-brick=NODE, cut-network=NODE or stop-service=NODE".into())
    })?;
    if duration == 0 {
        return Err(bad("for=0 is no fault: give it a duration in seconds".into()));
    }
    let found = cluster
        .node(&node)
        .ok_or_else(|| bad(format!("{node} is not a node of {}", cluster.source.display())))?;
    if interface.is_some() && !cut {
        return Err(bad("interface= goes with cut-network=NODE".into()));
    }
    if unit.is_some() && !stop {
        return Err(bad("unit= goes with stop-service=NODE".into()));
    }
    let kind = if stop {
        // GlusterFS's one daemon is the default; another file system's names its unit (a
        // BeeGFS server's beegfs-storage or beegfs-meta, lnet).
        let unit = match (unit, &cluster.spec) {
            (Some(unit), _) => unit,
            (None, KindSpec::Glusterfs { .. }) => "glusterd".to_owned(),
            (None, _) => {
                return Err(bad(format!(
                    "say which service: unit=UNIT (such as beegfs-storage or lnet; {} is {})",
                    cluster.name, cluster.kind
                )));
            }
        };
        FaultKind::StopService { unit }
    } else if cut {
        if duration > MAX_CUT_SECONDS {
            return Err(bad(format!(
                "a network cut lasts at most {MAX_CUT_SECONDS} seconds (for={duration})"
            )));
        }
        FaultKind::CutNetwork { interface: interface.unwrap_or_default() }
    } else {
        let KindSpec::Glusterfs { volume, brick, .. } = &cluster.spec else {
            return Err(bad(format!(
                "kill-brick needs a GlusterFS cluster, and {} is {}",
                cluster.name, cluster.kind
            )));
        };
        if !found.has(Role::Server) {
            return Err(bad(format!("{node} has no brick: it is not a server")));
        }
        // As the plan makes it (pvfs-plan's gluster: the brick mount, then the volume).
        FaultKind::KillBrick { volume: volume.clone(), path: brick.path.join(volume).display().to_string() }
    };
    Ok(FaultPlan {
        spec: spec.to_owned(),
        node: found.clone(),
        kind,
        phase: phase.unwrap_or(Phase::Ior(pvfs_bench::phase::IorPhase::Write)),
        iteration,
        at: Duration::from_secs(at),
        duration: Duration::from_secs(duration),
    })
}

/// What one fault's agent said, as the run's events keep it: `at` is when it took effect as
/// the agent said (Unix seconds), or now.
fn fault_event(plan: &FaultPlan, action: &str, (detail, at): (String, Option<f64>)) -> BenchEvent {
    BenchEvent::Fault {
        node: plan.node.name.clone(),
        spec: plan.spec.clone(),
        action: action.to_owned(),
        at: at.unwrap_or_else(|| pvfs_bench::results::unix(std::time::SystemTime::now())),
        detail,
    }
}

/// How long a node's agent may take to answer a fault's request (a unit's start or stop).
const FAULT_REQUEST_LIMIT: Duration = Duration::from_secs(120);

/// How long the undoing of a network cut waits for its node to be reachable again: the node's
/// agent brings the interface up at the end of the fault's time by itself, and links, routes
/// and the TLS handshake take a few seconds more.
const BACK_WITHIN: Duration = Duration::from_secs(60);

/// Asks the node's agent to inject or undo `plan`'s fault: what it did, and when it took
/// effect (Unix seconds, when the agent said).
async fn ask(dialer: &Dialer, plan: &FaultPlan, undo: bool) -> Result<(String, Option<f64>), String> {
    // The agent answers once the fault is in place or undone: `systemctl start` waits for the
    // unit (systemd's start timeout is 90 s by default; glusterd took over 5 s in a loaded
    // e2e), so the request may take longer than the dialer's seconds.
    let dialer = dialer.with_request_timeout(FAULT_REQUEST_LIMIT);
    let mut request = pb::FaultRequest { undo, ..pb::FaultRequest::default() };
    match &plan.kind {
        FaultKind::KillBrick { volume, path } => {
            request.kill_brick = Some(pb::GlusterBrickFault { volume: volume.clone(), path: path.clone() });
        }
        FaultKind::CutNetwork { interface } => {
            request.cut_network = Some(pb::NetworkFault {
                interface: interface.clone(),
                seconds: u32::try_from(plan.duration.as_secs()).unwrap_or(u32::MAX),
            });
        }
        FaultKind::StopService { unit } => {
            request.stop_service = Some(pb::ServiceFault { unit: unit.clone() })
        }
    }
    // A cut node answers its undoing once it is back on the network: until then, retried.
    let patient = undo && matches!(plan.kind, FaultKind::CutNetwork { .. });
    let deadline = tokio::time::Instant::now() + BACK_WITHIN;
    let mut conn = loop {
        match dialer.connect(&plan.node).await {
            Ok(conn) => break conn,
            Err(e) if patient && tokio::time::Instant::now() < deadline => {
                tracing::debug!(node = %plan.node.name, error = %e, "waiting for the cut node to be back");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e.to_string()),
        }
    };
    match conn.agent.fault(request).await {
        Ok(answer) => {
            let answer = answer.into_inner();
            let at = (answer.at_unix_ns > 0).then(|| answer.at_unix_ns as f64 / 1e9);
            Ok((answer.done, at))
        }
        Err(status) => Err(format!("{}: {}", plan.node.name, status.message())),
    }
}

/// How often a killed brick's volume is asked how far its heal has got, once it is back.
const HEAL_POLL: Duration = Duration::from_secs(2);

/// How long a heal is followed from the brick's return; past it, the heal is told unfinished.
const HEAL_WITHIN: Duration = Duration::from_secs(300);

/// How long the end of a run waits for a heal still followed (not after Ctrl-C).
const HEAL_WAIT_AT_END: Duration = Duration::from_secs(120);

/// Follows `volume`'s heal from `back_at` (Unix seconds: the killed brick's return) until no
/// entry needs healing on any brick, every brick answering — or [`HEAL_WITHIN`]: the event
/// says how many entries were pending at most and when none were left.
async fn follow_heal(dialer: &Dialer, plan: &FaultPlan, volume: &str, back_at: f64) -> BenchEvent {
    let (mut most, mut split_most) = (0u64, 0u64);
    let deadline = tokio::time::Instant::now() + HEAL_WITHIN;
    let mut error = None;
    let healed = loop {
        match ask_heal(dialer, plan, volume).await {
            Ok(bricks) => {
                let entries: u64 = bricks.iter().filter_map(|b| b.total).sum();
                most = most.max(entries);
                split_most = split_most.max(bricks.iter().filter_map(|b| b.split_brain).sum());
                let all_answer = !bricks.is_empty() && bricks.iter().all(|b| b.status == "Connected");
                if entries == 0 && all_answer {
                    break true;
                }
            }
            // An answer that will not change (glusterd says the volume has nothing to heal
            // from — a distributed volume — or the agent refuses): not followed further.
            Err(Asked::Answered(why)) => {
                error = Some(why);
                break false;
            }
            // One that did not come (glusterd busy, the node slow) is asked again.
            Err(Asked::Unanswered(why)) => tracing::debug!(volume, "heal not told yet: {why}"),
        }
        if tokio::time::Instant::now() >= deadline {
            break false;
        }
        tokio::time::sleep(HEAL_POLL).await;
    };
    let now = pvfs_bench::results::unix(std::time::SystemTime::now());
    BenchEvent::FaultHealed {
        node: plan.node.name.clone(),
        volume: volume.to_owned(),
        at: now,
        pending_max: most,
        split_brain: split_most,
        healed_after_s: healed.then(|| (now - back_at).max(0.0)),
        error,
    }
}

/// Why a heal's question got no figures.
enum Asked {
    /// The agent answered, and its answer will not change by asking again.
    Answered(String),
    /// No answer: the node, its agent or glusterd did not answer in time.
    Unanswered(String),
}

/// Asks the node's agent how far `volume`'s heal has got.
async fn ask_heal(dialer: &Dialer, plan: &FaultPlan, volume: &str) -> Result<Vec<pb::GlusterHeal>, Asked> {
    let mut conn = dialer.connect(&plan.node).await.map_err(|e| Asked::Unanswered(e.to_string()))?;
    let request = pb::FaultRequest { heal_of: volume.to_owned(), ..pb::FaultRequest::default() };
    match conn.agent.fault(request).await {
        Ok(answer) => Ok(answer.into_inner().heal),
        Err(status) => {
            let why = format!("{}: {}", plan.node.name, status.message());
            Err(match status.code() {
                tonic::Code::FailedPrecondition
                | tonic::Code::PermissionDenied
                | tonic::Code::InvalidArgument => Asked::Answered(why),
                _ => Asked::Unanswered(why),
            })
        }
    }
}

/// A run's faults as it goes: each started at its second of its phase, undone after its time
/// (or at the end of the run), and measured when its phase is done.
pub struct Faults {
    plans: Vec<Slot>,
    dialer: Dialer,
    tx: mpsc::UnboundedSender<BenchEvent>,
}

struct Slot {
    plan: FaultPlan,
    /// Its task, once its phase has started.
    task: Option<tokio::task::JoinHandle<()>>,
    /// Unix seconds it was injected and undone, as its events said.
    injected: Option<f64>,
    undone: Option<f64>,
    /// Its phase's seconds: (start, operations finished in it).
    seconds: Vec<(f64, u64)>,
    measured: bool,
}

impl Faults {
    /// The run's faults, and where their tasks report what their agents said (each to be
    /// handed back through [`Faults::on_fault`] and kept as the run's events).
    pub fn new(plans: Vec<FaultPlan>, dialer: Dialer) -> (Faults, mpsc::UnboundedReceiver<BenchEvent>) {
        let (tx, events) = mpsc::unbounded_channel();
        let plans = plans
            .into_iter()
            .map(|plan| Slot {
                plan,
                task: None,
                injected: None,
                undone: None,
                seconds: Vec::new(),
                measured: false,
            })
            .collect();
        (Faults { plans, dialer, tx }, events)
    }

    /// Takes in one of the run's events: a phase a fault waits for starts its schedule; the
    /// phase's seconds are kept; its end measures the fault. Returns the measurements made.
    pub fn on_event(&mut self, event: &BenchEvent) -> Vec<BenchEvent> {
        let mut measured = Vec::new();
        for slot in &mut self.plans {
            let ours = |iteration: &u32, phase: &Phase| {
                *iteration == slot.plan.iteration && *phase == slot.plan.phase
            };
            match event {
                BenchEvent::PhaseStarted { iteration, phase, at }
                    if ours(iteration, phase) && slot.task.is_none() =>
                {
                    let (plan, dialer, tx) = (slot.plan.clone(), self.dialer.clone(), self.tx.clone());
                    // The phase's start is announced ahead of it (every client starts it then):
                    // the fault's second counts from that start, not from the announcement.
                    let now = pvfs_bench::results::unix(std::time::SystemTime::now());
                    let wait = Duration::from_secs_f64((at + plan.at.as_secs_f64() - now).max(0.0));
                    slot.task = Some(tokio::spawn(async move {
                        tokio::time::sleep(wait).await;
                        match ask(&dialer, &plan, false).await {
                            Ok(done) => {
                                let _ = tx.send(fault_event(&plan, "injected", done));
                            }
                            Err(why) => {
                                let _ = tx.send(fault_event(&plan, "failed", (why, None)));
                                return;
                            }
                        }
                        tokio::time::sleep(plan.duration).await;
                        let undone = match ask(&dialer, &plan, true).await {
                            Ok(done) => fault_event(&plan, "undone", done),
                            Err(why) => fault_event(&plan, "failed", (why, None)),
                        };
                        let back_at = match &undone {
                            BenchEvent::Fault { action, at, .. } if action == "undone" => Some(*at),
                            _ => None,
                        };
                        let _ = tx.send(undone);
                        // A killed brick is back: how long until its volume is whole again.
                        if let (Some(back_at), FaultKind::KillBrick { volume, .. }) = (back_at, &plan.kind) {
                            let _ = tx.send(follow_heal(&dialer, &plan, volume, back_at).await);
                        }
                    }));
                }
                BenchEvent::LatencySecond { iteration, phase, at, latency } if ours(iteration, phase) => {
                    slot.seconds.push((*at, latency.count));
                }
                BenchEvent::PhaseDone { iteration, phase, .. }
                    if ours(iteration, phase) && !slot.measured =>
                {
                    slot.measured = true;
                    if let Some(m) = measure(slot, &[], Lost::default()) {
                        measured.push(m);
                    }
                }
                _ => {}
            }
        }
        measured
    }

    /// The run stopped in `phase` of `iteration` because tasks failed (`errors`, one per failed
    /// task): a fault of that phase is measured from its seconds so far, with the clients'
    /// errors — what the fault cost the application beyond time.
    /// `lost` is what the failed tasks were to do and did not.
    pub fn on_phase_failed(
        &mut self,
        iteration: u32,
        phase: Phase,
        errors: &[String],
        lost: Lost,
    ) -> Vec<BenchEvent> {
        let mut measured = Vec::new();
        for slot in &mut self.plans {
            if slot.plan.iteration == iteration && slot.plan.phase == phase && !slot.measured {
                slot.measured = true;
                measured.extend(measure(slot, errors, lost));
            }
        }
        measured
    }

    /// Takes in one of the faults' own events (from [`Faults::events`]).
    pub fn on_fault(&mut self, fault: &BenchEvent) {
        let BenchEvent::Fault { node, spec, action, at, .. } = fault else { return };
        // Its own fault's: a node may have several (the same spec twice is taken in order).
        let ours = |s: &&mut Slot| &s.plan.node.name == node && (spec.is_empty() || &s.plan.spec == spec);
        match action.as_str() {
            "injected" => {
                if let Some(slot) = self.plans.iter_mut().filter(ours).find(|s| s.injected.is_none()) {
                    slot.injected = Some(*at);
                }
            }
            "undone" => {
                if let Some(slot) =
                    self.plans.iter_mut().filter(ours).find(|s| s.injected.is_some() && s.undone.is_none())
                {
                    slot.undone = Some(*at);
                }
            }
            _ => {}
        }
    }

    /// The run is over: every fault's task stops, and a fault still in place is undone now.
    /// A killed brick's heal still followed is waited for (up to [`HEAL_WAIT_AT_END`]) unless
    /// the run was `interrupted`, and one undone now is followed too. Returns the events of
    /// what was undone (or could not be) and healed, after those the tasks had left in
    /// `reported`.
    pub async fn finish(
        &mut self,
        reported: &mut mpsc::UnboundedReceiver<BenchEvent>,
        interrupted: bool,
    ) -> Vec<BenchEvent> {
        let mut events = Vec::new();
        // What the tasks have said so far: which faults are undone.
        while let Ok(e) = reported.try_recv() {
            self.on_fault(&e);
            events.push(e);
        }
        for slot in &mut self.plans {
            if let Some(mut task) = slot.task.take() {
                // Undone already: the task follows the heal, which is worth its wait.
                let healing = slot.undone.is_some() && !interrupted;
                if !healing || tokio::time::timeout(HEAL_WAIT_AT_END, &mut task).await.is_err() {
                    task.abort();
                    let _ = task.await;
                }
            }
        }
        // What the tasks said before they stopped.
        while let Ok(e) = reported.try_recv() {
            self.on_fault(&e);
            events.push(e);
        }
        for slot in &mut self.plans {
            if slot.injected.is_some() && slot.undone.is_none() {
                let e = match ask(&self.dialer, &slot.plan, true).await {
                    Ok((done, at)) => {
                        fault_event(&slot.plan, "undone", (format!("{done} (the run ended first)"), at))
                    }
                    Err(why) => fault_event(
                        &slot.plan,
                        "failed",
                        (format!("undoing it as the run ended: {why}"), None),
                    ),
                };
                let back_at = match &e {
                    BenchEvent::Fault { action, at, .. } if action == "undone" => Some(*at),
                    _ => None,
                };
                slot.undone = back_at.or(slot.undone);
                events.push(e);
                if let (Some(back_at), FaultKind::KillBrick { volume, .. }, false) =
                    (back_at, &slot.plan.kind, interrupted)
                {
                    let plan = slot.plan.clone();
                    let heal = follow_heal(&self.dialer, &plan, volume, back_at);
                    if let Ok(healed) = tokio::time::timeout(HEAL_WAIT_AT_END, heal).await {
                        events.push(healed);
                    }
                }
            }
        }
        events
    }
}

/// What a phase's failed tasks were to do and did not: their transfers (items) and bytes not
/// done, the failing one included; `None` where the work had no fixed size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lost {
    pub ops: Option<u64>,
    pub bytes: Option<u64>,
}

impl Lost {
    /// What the failed tasks among `failures` were to do — `planned` each, transfers (items)
    /// and bytes, from `pvfs_bench::request::planned_per_task` — and had not done when they
    /// stopped at their error.
    pub fn of(failures: &[super::ClientFailure], planned: Option<(u64, Option<u64>)>) -> Lost {
        let Some((planned_ops, planned_bytes)) = planned else { return Lost::default() };
        let mut lost = Lost { ops: Some(0), bytes: planned_bytes.map(|_| 0) };
        for f in failures {
            if let super::ClientFailure::TaskFailed { ops, bytes, .. } = f {
                lost.ops = lost.ops.map(|n| n.saturating_add(planned_ops.saturating_sub(*ops)));
                lost.bytes =
                    lost.bytes.zip(planned_bytes).map(|(n, b)| n.saturating_add(b.saturating_sub(*bytes)));
            }
        }
        lost
    }
}

/// The fault's effect on its phase, from the phase's seconds; `None` when it was never
/// injected within the phase.
fn measure(slot: &Slot, errors: &[String], lost: Lost) -> Option<BenchEvent> {
    let injected = slot.injected?;
    let seconds = &with_empty_seconds(&slot.seconds);
    // Whole seconds before the fault: the rate it is measured against.
    let before: Vec<u64> =
        seconds.iter().filter(|(start, _)| start + 1.0 <= injected).map(|(_, n)| *n).collect();
    let pre = if before.is_empty() { 0.0 } else { before.iter().sum::<u64>() as f64 / before.len() as f64 };
    let after: Vec<&(f64, u64)> = seconds.iter().filter(|(start, _)| start + 1.0 > injected).collect();
    let stall = after.iter().filter(|(_, n)| *n == 0).count() as f64;
    // Back once every later second of the phase is at 90 % of the rate before: the end of the
    // last second below it.
    let below = after.iter().rposition(|(_, n)| (*n as f64) < 0.9 * pre);
    let recovery = match below {
        None => Some(0.0),
        Some(i) if i + 1 < after.len() => Some(after[i].0 + 1.0 - injected),
        Some(_) => None,
    };
    Some(BenchEvent::FaultMeasured {
        node: slot.plan.node.name.clone(),
        iteration: slot.plan.iteration,
        phase: slot.plan.phase,
        injected_at: injected,
        undone_at: slot.undone,
        ops_per_s_before: pre,
        stall_s: stall,
        recovery_s: recovery,
        client_errors: u32::try_from(errors.len()).unwrap_or(u32::MAX),
        first_error: errors.first().cloned(),
        ops_lost: lost.ops,
        bytes_lost: lost.bytes,
    })
}

/// The phase's seconds in order, with those in which nothing finished put in: no latency
/// second is told for a second without operations (a stall's seconds), yet they are the ones
/// a fault is measured by. A second is missing where the next told one starts more than a
/// second after it (they start a whole number of seconds from the phase's start).
fn with_empty_seconds(told: &[(f64, u64)]) -> Vec<(f64, u64)> {
    let mut sorted = told.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut all: Vec<(f64, u64)> = Vec::with_capacity(sorted.len());
    for (start, count) in sorted {
        if let Some(&(last, _)) = all.last() {
            let missing = ((start - last).round() as i64 - 1).clamp(0, 3600);
            all.extend((1..=missing).map(|k| (last + k as f64, 0)));
        }
        all.push((start, count));
    }
    all
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pvfs_bench::phase::IorPhase;

    /// A cluster of `kind` (`glusterfs`: volume gv0, bricks under /bricks; else `local`): a
    /// server gfs1 and a client c1.
    pub(crate) fn cluster(kind: &str) -> Cluster {
        let body = match kind {
            "glusterfs" => {
                "[glusterfs]\nvolume = \"gv0\"\nmount = \"/mnt/gv0\"\n[glusterfs.brick]\npath = \"/bricks\"\n"
            }
            _ => "[local]\nmount = \"/tmp/pvfs-t\"\n",
        };
        let toml = format!(
            "[cluster]\nname = \"t\"\nkind = \"{kind}\"\n{body}\
             [[node]]\nname = \"gfs1\"\naddress = \"127.0.0.1:1\"\nroles = [\"server\"]\ndisks = [\"/dev/sdb\"]\n\
             [[node]]\nname = \"c1\"\naddress = \"127.0.0.1:2\"\nroles = [\"client\"]\n"
        );
        pvfs_config::parse(std::path::Path::new("/c/cluster.toml"), &toml).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_fault_is_read_against_the_cluster() {
        let c = cluster("glusterfs");
        let plan = parse("kill-brick=gfs1,phase=write,at=3,for=7s", &c).unwrap();
        assert_eq!(
            (plan.node.name.as_str(), &plan.kind),
            ("gfs1", &FaultKind::KillBrick { volume: "gv0".into(), path: "/bricks/gv0".into() })
        );
        assert_eq!(
            (plan.phase, plan.iteration, plan.at, plan.duration),
            (Phase::Ior(IorPhase::Write), 0, Duration::from_secs(3), Duration::from_secs(7))
        );
        let read = parse("kill-brick=gfs1,phase=read,iteration=1", &c).unwrap();
        assert_eq!(
            (read.phase, read.iteration, read.at, read.duration),
            (Phase::Ior(IorPhase::Read), 1, Duration::from_secs(5), Duration::from_secs(10))
        );
        for (spec, says) in [
            ("phase=write", "say what fails: kill-brick=NODE, cut-network=NODE or stop-service=NODE"),
            ("kill-brick=gfs1,interface=eth0", "interface= goes with cut-network"),
            ("kill-brick=gfs1,unit=glusterd", "unit= goes with stop-service"),
            ("cut-network=gfs1,for=601", "a network cut lasts at most 600 seconds"),
            ("cut-network=gfs1,kill-brick=gfs1", "one fault per --fault"),
            ("cut-network=c9", "c9 is not a node of /c/cluster.toml"),
            ("kill-brick=c1", "c1 has no brick: it is not a server"),
            ("kill-brick=gfs9", "gfs9 is not a node of /c/cluster.toml"),
            ("kill-brick=gfs1,phase=wrote", "no phase is called \"wrote\""),
            ("kill-brick=gfs1,for=0", "for=0 is no fault"),
            ("kill-brick=gfs1,at=99999", "at must be whole seconds, at most 3600"),
            ("kill-brick=gfs1,node=x", "unknown key \"node\""),
            ("kill-brick", "\"kill-brick\" is not KEY=VALUE"),
        ] {
            let err = parse(spec, &c).unwrap_err().to_string();
            assert!(err.starts_with(&format!("--fault {spec:?}: ")) && err.contains(says), "{spec}: {err}");
        }
        let local = parse("kill-brick=gfs1", &cluster("local")).unwrap_err().to_string();
        assert!(local.contains("kill-brick needs a GlusterFS cluster"), "{local}");
        // Any node of any cluster can be cut off, a client too.
        let cut = parse("cut-network=c1,interface=ib0,at=2,for=3", &cluster("local")).unwrap();
        assert_eq!(
            (cut.node.name.as_str(), &cut.kind, cut.at, cut.duration),
            (
                "c1",
                &FaultKind::CutNetwork { interface: "ib0".into() },
                Duration::from_secs(2),
                Duration::from_secs(3)
            )
        );
        assert_eq!(MAX_CUT_SECONDS, u64::from(pvfs_policy::MAX_CUT_SECONDS));
        let default = parse("cut-network=gfs1", &c).unwrap();
        assert_eq!(default.kind, FaultKind::CutNetwork { interface: String::new() });
        // A service: glusterd by default on GlusterFS, named elsewhere.
        assert_eq!(
            parse("stop-service=gfs1", &c).unwrap().kind,
            FaultKind::StopService { unit: "glusterd".into() }
        );
        assert_eq!(
            parse("stop-service=c1,unit=lnet", &cluster("local")).unwrap().kind,
            FaultKind::StopService { unit: "lnet".into() }
        );
        let unnamed = parse("stop-service=c1", &cluster("local")).unwrap_err().to_string();
        assert!(unnamed.contains("say which service: unit=UNIT"), "{unnamed}");
    }

    fn slot(injected: Option<f64>, seconds: &[(f64, u64)]) -> Slot {
        let c = cluster("glusterfs");
        Slot {
            plan: parse("kill-brick=gfs1", &c).unwrap(),
            task: None,
            injected,
            undone: injected.map(|t| t + 10.0),
            seconds: seconds.to_vec(),
            measured: false,
        }
    }

    /// Two faults on one node each take their own events: the second's injection does not
    /// move the first's, and an undo goes to the fault injected and not yet undone.
    #[test]
    fn two_faults_on_one_node_each_keep_their_own_times() {
        let c = cluster("glusterfs");
        let dialer = crate::dial::unused_dialer();
        let (mut faults, _events) = Faults::new(vec![], dialer);
        for spec in ["kill-brick=gfs1,at=2", "stop-service=gfs1,at=20"] {
            let plan = parse(spec, &c).unwrap();
            faults.plans.push(Slot {
                plan,
                task: None,
                injected: None,
                undone: None,
                seconds: vec![],
                measured: false,
            });
        }
        let event = |spec: &str, action: &str, at: f64| BenchEvent::Fault {
            node: "gfs1".into(),
            spec: spec.into(),
            action: action.into(),
            at,
            detail: String::new(),
        };
        faults.on_fault(&event("kill-brick=gfs1,at=2", "injected", 102.0));
        faults.on_fault(&event("kill-brick=gfs1,at=2", "undone", 105.0));
        faults.on_fault(&event("stop-service=gfs1,at=20", "injected", 120.0));
        faults.on_fault(&event("stop-service=gfs1,at=20", "undone", 123.0));
        let times: Vec<_> = faults.plans.iter().map(|s| (s.injected, s.undone)).collect();
        assert_eq!(times, [(Some(102.0), Some(105.0)), (Some(120.0), Some(123.0))]);
    }

    fn measure_all(slot: &Slot) -> Option<BenchEvent> {
        measure(slot, &[], Lost::default())
    }

    /// 100 ops a second, the fault at 103.5: a stall of two seconds, back at 90 % from the end
    /// of 106's second; a fault that slowed nothing recovers at once; one the phase never got
    /// over has no recovery; one never injected is not measured.
    #[test]
    fn a_faults_stall_and_recovery_from_its_phases_seconds() {
        let seconds = [
            (100.0, 100),
            (101.0, 100),
            (102.0, 100),
            (103.0, 60),
            (104.0, 0),
            (105.0, 0),
            (106.0, 50),
            (107.0, 95),
            (108.0, 100),
        ];
        let Some(BenchEvent::FaultMeasured {
            ops_per_s_before,
            stall_s,
            recovery_s,
            injected_at,
            undone_at,
            ..
        }) = measure_all(&slot(Some(103.5), &seconds))
        else {
            panic!("measured")
        };
        assert_eq!(
            (ops_per_s_before, stall_s, recovery_s, injected_at, undone_at),
            (100.0, 2.0, Some(3.5), 103.5, Some(113.5))
        );
        let steady = [(100.0, 100), (101.0, 100), (102.0, 98), (103.0, 101)];
        let Some(BenchEvent::FaultMeasured { stall_s, recovery_s, .. }) =
            measure_all(&slot(Some(101.2), &steady))
        else {
            panic!("measured")
        };
        assert_eq!((stall_s, recovery_s), (0.0, Some(0.0)));
        let never = [(100.0, 100), (101.0, 0), (102.0, 0)];
        let Some(BenchEvent::FaultMeasured { recovery_s, stall_s, .. }) =
            measure_all(&slot(Some(101.0), &never))
        else {
            panic!("measured")
        };
        assert_eq!((stall_s, recovery_s), (2.0, None));
        assert!(measure_all(&slot(None, &seconds)).is_none());
        // The seconds with nothing finished are not told (no latency second is): a stall of
        // two untold seconds is two seconds, as in the e2e's network cut.
        let untold =
            [(100.0, 100), (101.0, 100), (102.0, 100), (103.0, 60), (106.0, 50), (107.0, 95), (108.0, 100)];
        let Some(BenchEvent::FaultMeasured { stall_s, recovery_s, .. }) =
            measure_all(&slot(Some(103.5), &untold))
        else {
            panic!("measured")
        };
        assert_eq!((stall_s, recovery_s), (2.0, Some(3.5)));
        assert_eq!(with_empty_seconds(&[(5.0, 1), (3.0, 2)]), [(3.0, 2), (4.0, 0), (5.0, 1)]);
    }

    /// What failed tasks did not do: their planned work less what they had done, summed; the
    /// clients' other failures count nothing; no planned size, no figure.
    #[test]
    fn what_failed_tasks_did_not_do_is_lost() {
        use super::super::ClientFailure;
        let failed = |ops, bytes| ClientFailure::TaskFailed {
            node: "c1".into(),
            task: 0,
            error: "write: Transport endpoint is not connected".into(),
            ops,
            bytes,
        };
        let failures = [failed(100, 100 * 4096), failed(0, 0), ClientFailure::NoResult { node: "c2".into() }];
        let planned = Some((8192, Some(8192 * 4096)));
        assert_eq!(
            Lost::of(&failures, planned),
            Lost { ops: Some(8092 + 8192), bytes: Some((8092 + 8192) * 4096) }
        );
        assert_eq!(Lost::of(&failures, Some((1000, None))), Lost { ops: Some(900 + 1000), bytes: None });
        assert_eq!(Lost::of(&failures, None), Lost::default());
        assert_eq!(Lost::of(&[], planned), Lost { ops: Some(0), bytes: Some(0) });
    }

    /// A phase the fault made fail (tasks got I/O errors, and the run stopped there): measured
    /// from its seconds so far, with how many tasks failed and the first error; once only, and
    /// only the fault of that phase.
    #[test]
    fn a_fault_whose_phase_failed_is_measured_with_the_clients_errors() {
        let dialer = crate::dial::unused_dialer();
        let (mut faults, _events) = Faults::new(vec![], dialer);
        faults.plans.push(slot(Some(101.5), &[(100.0, 100), (101.0, 40)]));
        let write = Phase::Ior(IorPhase::Write);
        let errors = [
            "c1 task 0: write /mnt/gv0/f.00000000 at 4194304: Transport endpoint is not connected".to_owned(),
            "c2 task 1: …".to_owned(),
        ];
        let lost = Lost { ops: Some(1500), bytes: Some(1500 * 4096) };
        assert!(
            faults.on_phase_failed(0, Phase::Ior(IorPhase::Read), &errors, lost).is_empty(),
            "another phase's"
        );
        let measured = faults.on_phase_failed(0, write, &errors, lost);
        let [
            BenchEvent::FaultMeasured {
                client_errors,
                first_error,
                ops_per_s_before,
                ops_lost,
                bytes_lost,
                ..
            },
        ] = &measured[..]
        else {
            panic!("{measured:?}")
        };
        assert_eq!(
            (*client_errors, first_error.as_deref(), *ops_per_s_before),
            (2, Some(errors[0].as_str()), 100.0)
        );
        assert_eq!((*ops_lost, *bytes_lost), (Some(1500), Some(1500 * 4096)));
        assert!(faults.on_phase_failed(0, write, &errors, lost).is_empty(), "measured once");
        // Kept in events.jsonl without the new fields when there were no errors.
        let line =
            pvfs_bench::results::sorted(&measure_all(&slot(Some(101.5), &[(100.0, 100)])).unwrap()).unwrap();
        for absent in ["client_errors", "first_error", "ops_lost", "bytes_lost"] {
            assert!(line.get(absent).is_none(), "{line}");
        }
    }
}
