//! `pvfsctl bench` with the built-in engine and the agents launcher: every client runs its
//! share of the tasks, phase by phase, all clients starting each phase at the same instant,
//! with a barrier (the coordinator waits for all) between phases. No ssh and no MPI between
//! clients: the coordinator is the barrier.
//!
//! A client that fails, goes away, or says nothing for [`SILENCE_LIMIT`] ends the run with an
//! error naming it; the phases finished before are kept for the record.

use crate::dial::{Connection, Dialer, from_status};
use pvfs_bench::engine::{self, IorPhase, MdtestPhase, Phase, PhaseRequest, PhaseTotals, TaskResult};
use pvfs_bench::model::{IorIteration, IorSummary, MdtestSummary};
use pvfs_bench::params::Workload;
use pvfs_bench::summary;
use pvfs_config::Node;
use pvfs_proto::pb;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// Clients report progress every second; this long without a word is a lost client (a cut
/// network leaves the stream open but silent).
pub const SILENCE_LIMIT: Duration = Duration::from_secs(15);

/// How far ahead of "now" each phase is scheduled, so every client has the request before it
/// is due.
const START_MARGIN: Duration = Duration::from_millis(500);

/// What to run and where.
#[derive(Debug, Clone)]
pub struct BenchSpec {
    pub engine: engine::Engine,
    pub workload: Workload,
    pub clients: Vec<Node>,
    /// Tasks ("processes") per client.
    pub tasks_per_client: u32,
    /// The run's directory, the same path on every client (inside the file system's mount).
    pub dir: PathBuf,
}

/// Live events, for `--watch` and `--json`.
#[derive(Debug, Clone)]
pub enum BenchEvent {
    PhaseStarted {
        iteration: u32,
        phase: String,
        at: SystemTime,
    },
    /// A client's cumulative counters for the current phase.
    Progress {
        node: String,
        bytes: u64,
        ops: u64,
    },
    PhaseDone {
        record: PhaseRecord,
    },
}

/// One phase of one iteration, on every client.
#[derive(Debug, Clone)]
pub struct PhaseRecord {
    pub iteration: u32,
    /// "write", "read", or mdtest's row name ("File creation").
    pub label: String,
    pub totals: PhaseTotals,
    /// Every task's result, with the client it ran on.
    pub tasks: Vec<(String, TaskResult)>,
}

/// A whole run.
#[derive(Debug, Clone, Default)]
pub struct BenchOutcome {
    pub phases: Vec<PhaseRecord>,
    pub iterations: Vec<IorIteration>,
    pub ior: Vec<IorSummary>,
    pub mdtest: Vec<MdtestSummary>,
    /// Why the run stopped early, naming the client.
    pub error: Option<String>,
    pub started: Option<SystemTime>,
    pub finished: Option<SystemTime>,
}

/// The phases of one iteration, with their labels.
fn phases(workload: &Workload) -> Vec<(Phase, String)> {
    match workload {
        Workload::Ior(p) => {
            let mut out = Vec::new();
            if p.write {
                out.push((Phase::Ior(IorPhase::Write), "write".to_owned()));
            }
            if p.read {
                out.push((Phase::Ior(IorPhase::Read), "read".to_owned()));
            }
            out
        }
        Workload::Mdtest(p) => {
            MdtestPhase::sequence(p).into_iter().map(|m| (Phase::Mdtest(m), m.row().to_owned())).collect()
        }
    }
}

/// Runs `spec` on its clients.
pub async fn run(
    spec: &BenchSpec,
    dialer: &Dialer,
    events: mpsc::UnboundedSender<BenchEvent>,
) -> BenchOutcome {
    let mut outcome = BenchOutcome { started: Some(SystemTime::now()), ..Default::default() };
    let mut connections = Vec::new();
    for node in &spec.clients {
        match dialer.connect(node).await {
            Ok(conn) => connections.push((node.clone(), conn)),
            Err(err) => {
                outcome.error = Some(format!("client {} cannot be reached: {err}", node.name));
                outcome.finished = Some(SystemTime::now());
                return outcome;
            }
        }
    }
    let iterations = match &spec.workload {
        Workload::Ior(p) => p.iterations,
        Workload::Mdtest(p) => p.iterations,
    };
    let phase_list = phases(&spec.workload);
    'run: for iteration in 0..iterations {
        for (phase, label) in &phase_list {
            match run_phase(spec, &connections, dialer, iteration, *phase, label, &events).await {
                Ok(record) => {
                    let _ = events.send(BenchEvent::PhaseDone { record: record.clone() });
                    outcome.phases.push(record);
                }
                Err(err) => {
                    outcome.error = Some(format!("iteration {iteration}, {label}: {err}"));
                    break 'run;
                }
            }
        }
        // IOR removes its files after each repetition (unless -k), so the next write starts
        // from nothing again.
        if matches!(spec.workload, Workload::Ior(_))
            && let Err(err) =
                run_phase(spec, &connections, dialer, iteration, Phase::IorCleanup, "cleanup", &events).await
        {
            outcome.error = Some(format!("iteration {iteration}, removing the test files: {err}"));
            break 'run;
        }
    }
    summarize(spec, &mut outcome);
    outcome.finished = Some(SystemTime::now());
    outcome
}

/// The summary rows from the phases that finished.
fn summarize(spec: &BenchSpec, outcome: &mut BenchOutcome) {
    let tasks = spec.tasks_per_client * spec.clients.len() as u32;
    match &spec.workload {
        Workload::Ior(p) => {
            for op in ["write", "read"] {
                let totals: Vec<PhaseTotals> =
                    outcome.phases.iter().filter(|r| r.label == op).map(|r| r.totals).collect();
                for r in outcome.phases.iter().filter(|r| r.label == op) {
                    outcome.iterations.push(summary::ior_iteration(op, r.iteration.into(), &r.totals, p));
                }
                outcome.ior.extend(summary::ior_summary(op, &totals, p, tasks));
            }
            outcome.iterations.sort_by_key(|i| i.iteration);
        }
        Workload::Mdtest(p) => {
            for m in MdtestPhase::sequence(p) {
                let totals: Vec<PhaseTotals> =
                    outcome.phases.iter().filter(|r| r.label == m.row()).map(|r| r.totals).collect();
                outcome.mdtest.extend(summary::mdtest_summary(m.row(), &totals));
            }
        }
    }
}

/// One phase on every client at once; the barrier is waiting for all of them.
async fn run_phase(
    spec: &BenchSpec,
    connections: &[(Node, Connection)],
    dialer: &Dialer,
    iteration: u32,
    phase: Phase,
    label: &str,
    events: &mpsc::UnboundedSender<BenchEvent>,
) -> Result<PhaseRecord, String> {
    let at = SystemTime::now() + START_MARGIN;
    if phase != Phase::IorCleanup {
        let _ = events.send(BenchEvent::PhaseStarted { iteration, phase: label.to_owned(), at });
    }
    let total_tasks = spec.tasks_per_client * connections.len() as u32;
    let mut calls = JoinSet::new();
    for (i, (node, conn)) in connections.iter().enumerate() {
        let req = PhaseRequest {
            engine: spec.engine,
            workload: spec.workload.clone(),
            dir: spec.dir.clone(),
            first_task: i as u32 * spec.tasks_per_client,
            tasks: spec.tasks_per_client,
            total_tasks,
            tasks_per_client: spec.tasks_per_client,
            iteration,
            phase,
        };
        let wire = pvfs_proto::convert::bench::phase_request_to(&req, at);
        let (node, mut conn, events, timeout) =
            (node.clone(), conn.clone(), events.clone(), dialer.timeout());
        calls.spawn(async move {
            let result = client_phase(&node, &mut conn, wire, timeout, &events).await;
            (node.name, result)
        });
    }
    let mut tasks = Vec::new();
    let mut failures = Vec::new();
    while let Some(joined) = calls.join_next().await {
        match joined {
            Ok((node, Ok(results))) => {
                for r in results {
                    if let Some(err) = &r.error {
                        failures.push(format!("client {node}, task {}: {err}", r.task));
                    }
                    tasks.push((node.clone(), r));
                }
            }
            Ok((node, Err(err))) => failures.push(format!("client {node}: {err}")),
            Err(err) => failures.push(format!("internal error: {err}")),
        }
    }
    if !failures.is_empty() {
        failures.sort();
        return Err(failures.join("; "));
    }
    tasks.sort_by_key(|(_, r)| r.task);
    let results: Vec<TaskResult> = tasks.iter().map(|(_, r)| r.clone()).collect();
    let totals = engine::totals(&results).unwrap_or(PhaseTotals {
        bytes: 0,
        ops: 0,
        seconds: 0.0,
        bw_mib: 0.0,
        ops_per_sec: 0.0,
    });
    Ok(PhaseRecord { iteration, label: label.to_owned(), totals, tasks })
}

/// One client's part of a phase: its task results, or why it failed.
async fn client_phase(
    node: &Node,
    conn: &mut Connection,
    request: pb::BenchPhaseRequest,
    timeout: Duration,
    events: &mpsc::UnboundedSender<BenchEvent>,
) -> Result<Vec<TaskResult>, String> {
    let mut stream = conn
        .agent
        .bench_phase(request)
        .await
        .map_err(|status| from_status(&status, &node.address, timeout).to_string())?
        .into_inner();
    let started = Instant::now();
    loop {
        let next = tokio::time::timeout(SILENCE_LIMIT, stream.message()).await;
        let message = match next {
            Err(_) => {
                return Err(format!(
                    "no word from the client for {}s (after {:.0}s of the phase): network cut, or the node hung",
                    SILENCE_LIMIT.as_secs(),
                    started.elapsed().as_secs_f64()
                ));
            }
            Ok(Err(status)) => return Err(from_status(&status, &node.address, timeout).to_string()),
            Ok(Ok(None)) => return Err("the client ended the phase without a result".into()),
            Ok(Ok(Some(message))) => message,
        };
        match message.event {
            Some(pb::bench_event::Event::Progress(p)) => {
                let _ =
                    events.send(BenchEvent::Progress { node: node.name.clone(), bytes: p.bytes, ops: p.ops });
            }
            Some(pb::bench_event::Event::Done(done)) => {
                return Ok(done.tasks.into_iter().map(TaskResult::from).collect());
            }
            None => {}
        }
    }
}
