//! `pvfsctl bench` with the built-in engine and the agents launcher: every client runs its
//! share of the tasks, phase by phase, all clients starting each phase at the same instant,
//! with a barrier (the coordinator waits for all) between phases. No ssh and no MPI between
//! clients: the coordinator is the barrier.
//!
//! A client that fails, goes away, or says nothing for [`SILENCE_LIMIT`] ends the run with a
//! [`BenchError`] naming it; the phases finished before are kept for the record. So does
//! cancelling the run (Ctrl-C, [`BenchError::Interrupted`]): the phase under way is dropped,
//! which ends every client's stream, and an agent stops a phase whose caller has gone.

pub mod execute;
pub mod fault;
mod io500;
pub mod jobs;
pub mod metrics;
pub mod plan;
pub mod profile;

use crate::dial::{Connection, DialError, Dialer, from_status};
use pvfs_bench::io500::plan::Stage;
use pvfs_bench::launch::Runner;
use pvfs_bench::model::{IorIteration, IorSummary, MdtestSummary};
use pvfs_bench::params::Workload;
use pvfs_bench::phase::{Phase, iteration_phases};
use pvfs_bench::request::{DropCaches, LaunchRequest, PhaseRequest};
use pvfs_bench::results::{BenchEvent, CacheDrop, PhaseRecord, unix};
use pvfs_bench::summary;
use pvfs_config::Node;
use pvfs_config::model::Host;
use pvfs_engine::engine::{self, PhaseTotals, TaskResult};
use pvfs_engine::mpi::RankLine;
use pvfs_proto::pb;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Clients report progress every second; this long without a word is a lost client (a cut
/// network leaves the stream open but silent).
pub const SILENCE_LIMIT: Duration = Duration::from_secs(15);

/// How far ahead of "now" each phase is scheduled, so every client has the request before it
/// is due.
const START_MARGIN: Duration = Duration::from_millis(500);

/// What to run and where.
#[derive(Debug, Clone)]
pub struct BenchSpec {
    /// What runs the I/O, and what starts it.
    pub runner: Runner,
    pub workload: Workload,
    pub clients: Vec<Node>,
    /// Tasks ("processes") per client.
    pub tasks_per_client: u32,
    /// The run's directory, the same path on every client (inside the file system's mount).
    pub dir: PathBuf,
    /// `[bench] mpi_ssh`: mpirun uses the cluster's MPI key and known_hosts on the clients.
    pub mpi_ssh: bool,
    /// The nodes whose caches are dropped before read and stat phases (none: no drops).
    pub drop_caches: Vec<Node>,
    /// `--engine io500`: the io500 program on the clients (`[bench] io500`).
    pub io500_program: Option<PathBuf>,
    /// A Lustre cluster's MDSs and OSSs ([`jobs::servers`]): with the built-in engine under
    /// the agents launcher, each phase's tasks run under a job tag, and these are asked what
    /// their targets counted for it. Empty: no tags, no readings.
    pub lustre_servers: Vec<Node>,
}

/// A whole run.
#[derive(Debug, Clone, Default)]
pub struct BenchOutcome {
    pub phases: Vec<PhaseRecord>,
    pub iterations: Vec<IorIteration>,
    pub ior: Vec<IorSummary>,
    pub mdtest: Vec<MdtestSummary>,
    /// Why the run stopped early, naming the client, or [`BenchError::Interrupted`].
    pub error: Option<BenchError>,
    /// An IO500 run told as io500 tells one.
    pub io500: Option<pvfs_bench::io500::Io500Run>,
    pub started: Option<SystemTime>,
    pub finished: Option<SystemTime>,
}

impl BenchOutcome {
    /// The run was cancelled before it finished.
    pub fn interrupted(&self) -> bool {
        matches!(self.error, Some(BenchError::Interrupted { .. }))
    }
}

/// Why a run stopped before its end. The text is what `pvfsctl bench` prints after `error: the
/// run stopped: ` and what results.json keeps as the run's `error`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BenchError {
    /// A client could not be dialled before the run started.
    #[error("client {node} cannot be reached: {source}")]
    Unreachable {
        node: String,
        #[source]
        source: DialError,
    },
    /// The run was cancelled (Ctrl-C): the phase under way was dropped on every client. The
    /// agents launcher names the iteration and phase it stopped in.
    #[error("{}interrupted", .during.map(|(i, p)| format!("iteration {i}, {}: ", step(p))).unwrap_or_default())]
    Interrupted { during: Option<(u32, Phase)> },
    /// Clients failed a phase (or the removal of IOR's files after an iteration): every
    /// client's failure, in order of their text.
    #[error("iteration {iteration}, {}: {}", step(*.phase), join(.failures))]
    Phase { iteration: u32, phase: Phase, failures: Vec<ClientFailure> },
    /// The mpi launcher's job failed.
    #[error(transparent)]
    Mpi(#[from] MpiError),
    /// A node could not drop its caches before a read or stat phase.
    #[error(
        "iteration {iteration}, {}: node {node} could not drop its caches: {why} (run without --drop-caches, or fix the node)",
        step(*.phase)
    )]
    DropCaches { iteration: u32, phase: Phase, node: String, why: String },
}

/// What the errors call `phase`: its label, or what the cleanup does.
fn step(phase: Phase) -> &'static str {
    match phase {
        Phase::IorCleanup => "removing the test files",
        _ => phase.label(),
    }
}

fn join(failures: &[ClientFailure]) -> String {
    failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// Why one client's part of a phase failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientFailure {
    /// Nothing from the client for `silent` (progress comes every second): the network was
    /// cut, or the node hung.
    #[error(
        "client {node}: no word from the client for {}s (after {:.0}s of the phase): network cut, or the node hung",
        .silent.as_secs(),
        .after.as_secs_f64()
    )]
    ClientLost { node: String, silent: Duration, after: Duration },
    /// The call failed: the agent refused it, or the connection broke mid-call (`source.kind`
    /// is [`FailureKind::Lost`](crate::FailureKind::Lost)).
    #[error("client {node}: {source}")]
    Call {
        node: String,
        #[source]
        source: DialError,
    },
    /// The client's stream ended without the phase's result.
    #[error("client {node}: the client ended the phase without a result")]
    NoResult { node: String },
    /// A task on the client failed; `error` is the task's own text (from the agent); `ops`
    /// and `bytes` what it had done before (transfers or items, and bytes).
    #[error("client {node}, task {task}: {error}")]
    TaskFailed { node: String, task: u32, error: String, ops: u64, bytes: u64 },
    /// The coordinator's own task for the client failed (a panic).
    #[error("internal error: {message}")]
    Internal { message: String },
}

/// How mpirun ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    Exit(i32),
    Signal(String),
}

impl std::fmt::Display for JobEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobEnd::Exit(code) => write!(f, "exit {code}"),
            JobEnd::Signal(signal) => write!(f, "signal {signal}"),
        }
    }
}

/// Why the mpi launcher's job failed; `node` is the client that runs mpirun.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MpiError {
    #[error("no clients")]
    NoClients,
    /// The launching client could not be dialled.
    #[error("client {node}, which starts mpirun, cannot be reached: {source}")]
    Unreachable {
        node: String,
        #[source]
        source: DialError,
    },
    /// The Launch call failed: refused, or the connection broke.
    #[error("client {node}: {source}")]
    Call {
        node: String,
        #[source]
        source: DialError,
    },
    /// Nothing from the launching client for `silent` (it sends a heartbeat every second).
    #[error(
        "client {node}, which runs mpirun: no word for {}s (after {:.0}s of the run): network cut, or the node hung",
        .silent.as_secs(),
        .after.as_secs_f64()
    )]
    ClientLost { node: String, silent: Duration, after: Duration },
    /// The stream ended without mpirun's exit status.
    #[error("client {node} ended the job's stream without its exit status")]
    NoExitStatus { node: String },
    /// ssh between the clients refused mpirun; `why` says what to do.
    #[error("mpirun on {node} ended with {end}: {why}")]
    Ssh { node: String, end: JobEnd, why: String },
    /// A rank's task failed (the built-in engine); `node` is the client the rank ran on.
    #[error("client {node}, task {task}: {error}")]
    TaskFailed { node: String, task: u32, error: String },
    /// mpirun failed, or ended before every rank reported: the last lines of its stderr.
    #[error("mpirun on {node} ended with {end}: {}", .stderr_tail.join(" | "))]
    Mpirun { node: String, end: JobEnd, stderr_tail: Vec<String> },
    /// IOR or mdtest failed under mpirun: its own failure line, or mpirun's stderr.
    #[error("{tool} under mpirun on {node} ended with {end}: {failure}")]
    Tool { tool: &'static str, node: String, end: JobEnd, failure: String },
    /// IOR's or mdtest's output is not a result.
    #[error(
        "{tool} under mpirun on {node} ended with {end}, and its output is not a result ({error}): {}",
        .stderr_tail.join(" | ")
    )]
    Unparsed { tool: &'static str, node: String, end: JobEnd, error: String, stderr_tail: Vec<String> },
}

/// Runs `spec` on its clients, until it ends or `cancel` is cancelled.
pub async fn run(
    spec: &BenchSpec,
    dialer: &Dialer,
    events: mpsc::UnboundedSender<BenchEvent>,
    cancel: CancellationToken,
) -> BenchOutcome {
    if spec.runner.launcher() == pvfs_bench::launch::Launcher::Mpi {
        return run_mpi(spec, dialer, events, cancel).await;
    }
    let mut outcome = BenchOutcome { started: Some(SystemTime::now()), ..Default::default() };
    let mut connections = Vec::new();
    for node in &spec.clients {
        match dialer.connect(node).await {
            Ok(conn) => connections.push((node.clone(), conn)),
            Err(source) => {
                outcome.error = Some(BenchError::Unreachable { node: node.name.clone(), source });
                outcome.finished = Some(SystemTime::now());
                return outcome;
            }
        }
    }
    if let Workload::Io500(params) = &spec.workload {
        io500::run(spec, params, &connections, dialer, &events, &cancel, &mut outcome).await;
        outcome.finished = Some(SystemTime::now());
        return outcome;
    }
    let iterations = spec.workload.iterations();
    let phase_list = iteration_phases(&spec.workload);
    let tagged =
        !spec.lustre_servers.is_empty() && spec.runner.engine() == pvfs_bench::launch::Engine::Builtin;
    let nonce = jobs::nonce();
    'run: for iteration in 0..iterations {
        // A stonewalled write's count, which the read reads back.
        let mut stop_after = None;
        for &phase in &phase_list {
            let dropped = match drop_caches(spec, dialer, iteration, phase, &cancel).await {
                Ok(dropped) => dropped,
                Err(err) => {
                    outcome.error = Some(err);
                    break 'run;
                }
            };
            if !dropped.is_empty() {
                let _ = events.send(BenchEvent::CachesDropped { iteration, phase, nodes: dropped.clone() });
            }
            let tag = tagged.then(|| pvfs_bench::request::job_tag(nonce, iteration, phase));
            let running = run_phase(spec, &connections, dialer, iteration, phase, stop_after, tag, &events);
            // Dropping the phase drops its JoinSet, which aborts every client's call and so
            // closes its stream: the agents stop their tasks.
            let result = tokio::select! {
                result = running => result.map_err(|failures| BenchError::Phase { iteration, phase, failures }),
                () = cancel.cancelled() => Err(BenchError::Interrupted { during: Some((iteration, phase)) }),
            };
            match result {
                Ok(mut record) => {
                    record.caches_dropped = dropped;
                    let ops = record.tasks.iter().map(|t| t.ops);
                    if let Some(carried) = pvfs_bench::request::carried(&spec.workload, phase, ops) {
                        stop_after = carried;
                    }
                    let _ = events.send(phase_done(&record));
                    // What the servers counted for the phase's ids, read before the next
                    // phase adds to the targets' other counters.
                    if tagged {
                        let ids = std::mem::take(&mut record.lustre_job_ids);
                        let reading = jobs::read(dialer, &spec.lustre_servers, iteration, phase, ids);
                        tokio::select! {
                            event = reading => { let _ = events.send(event); }
                            () = cancel.cancelled() => {}
                        }
                    }
                    outcome.phases.push(record);
                }
                Err(err) => {
                    outcome.error = Some(err);
                    break 'run;
                }
            }
        }
        // IOR removes its files after each repetition (unless -k), so the next write starts
        // from nothing again.
        if matches!(&spec.workload, Workload::Ior(p) if !p.keep)
            && let Err(failures) =
                run_phase(spec, &connections, dialer, iteration, Phase::IorCleanup, None, None, &events).await
        {
            outcome.error = Some(BenchError::Phase { iteration, phase: Phase::IorCleanup, failures });
            break 'run;
        }
    }
    summarize(spec, &mut outcome);
    outcome.finished = Some(SystemTime::now());
    outcome
}

/// How long a node may take to sync and drop its caches: after a buffered write, dirty pages
/// up to `vm.dirty_ratio` of its memory go to the file system first (tens of GB on a large
/// client, at the file system's speed), where a request otherwise has the dialer's seconds.
const DROP_CACHES_LIMIT: Duration = Duration::from_secs(15 * 60);

/// Drops the caches of `spec.drop_caches` before `phase` when it is one that reads back (all
/// at once, each node's call bounded by `DROP_CACHES_LIMIT` after its connection): what each
/// drop did, or the first node that could not (the run stops: reads measured through a cache
/// that was meant to be empty would be wrong).
async fn drop_caches(
    spec: &BenchSpec,
    dialer: &Dialer,
    iteration: u32,
    phase: Phase,
    cancel: &CancellationToken,
) -> Result<Vec<CacheDrop>, BenchError> {
    if spec.drop_caches.is_empty() || !DropCaches::Clients.before(phase) {
        return Ok(Vec::new());
    }
    // The drop syncs first, which after a buffered write can take the node minutes: its
    // request gets a connection of its own, whose requests may take that long.
    let dialer = dialer.with_request_timeout(DROP_CACHES_LIMIT);
    let mut calls = JoinSet::new();
    for node in &spec.drop_caches {
        let (node, dialer) = (node.clone(), dialer.clone());
        calls.spawn(async move {
            let mut conn = dialer.connect(&node).await.map_err(|source| BenchError::DropCaches {
                iteration,
                phase,
                node: node.name.clone(),
                why: source.to_string(),
            })?;
            let answer = conn.agent.drop_caches(pb::DropCachesRequest {}).await.map_err(|status| {
                BenchError::DropCaches {
                    iteration,
                    phase,
                    node: node.name.clone(),
                    why: status.message().to_owned(),
                }
            })?;
            let answer = answer.into_inner();
            Ok(CacheDrop {
                node: node.name.clone(),
                seconds: answer.seconds,
                cached_before_kib: answer.cached_before_kib,
                cached_after_kib: answer.cached_after_kib,
            })
        });
    }
    let mut dropped = Vec::new();
    loop {
        let joined = tokio::select! {
            joined = calls.join_next() => joined,
            () = cancel.cancelled() => return Err(BenchError::Interrupted { during: Some((iteration, phase)) }),
        };
        let Some(joined) = joined else { break };
        match joined {
            Ok(Ok(drop)) => dropped.push(drop),
            Ok(Err(err)) => return Err(err),
            Err(err) => {
                return Err(BenchError::DropCaches {
                    iteration,
                    phase,
                    node: "(unknown)".into(),
                    why: err.to_string(),
                });
            }
        }
    }
    dropped.sort_by(|a, b| a.node.cmp(&b.node));
    Ok(dropped)
}

/// The event that says `record`'s phase is over (its totals, not every task's).
fn phase_done(record: &PhaseRecord) -> BenchEvent {
    BenchEvent::PhaseDone {
        iteration: record.iteration,
        phase: record.phase,
        totals: record.totals,
        latency: record.latency.as_ref().map(|l| l.all),
        first_done: record.first_done,
    }
}

/// The summary rows from the phases that finished.
fn summarize(spec: &BenchSpec, outcome: &mut BenchOutcome) {
    let tasks = spec.tasks_per_client * spec.clients.len() as u32;
    match &spec.workload {
        Workload::Ior(p) => {
            for phase in iteration_phases(&spec.workload) {
                let totals: Vec<PhaseTotals> =
                    outcome.phases.iter().filter(|r| r.phase == phase).map(|r| r.totals).collect();
                for r in outcome.phases.iter().filter(|r| r.phase == phase) {
                    outcome.iterations.push(summary::ior_iteration(
                        phase.label(),
                        r.iteration.into(),
                        &r.totals,
                        p,
                    ));
                }
                outcome.ior.extend(summary::ior_summary(phase.label(), &totals, p, tasks));
            }
            outcome.iterations.sort_by_key(|i| i.iteration);
        }
        Workload::Mdtest(_) => {
            for phase in iteration_phases(&spec.workload) {
                let totals: Vec<PhaseTotals> =
                    outcome.phases.iter().filter(|r| r.phase == phase).map(|r| r.totals).collect();
                outcome.mdtest.extend(summary::mdtest_summary(phase.label(), &totals));
            }
        }
        Workload::Find(_) | Workload::Io500(_) => {}
    }
}

/// One phase on every client at once; the barrier is waiting for all of them. Fails with
/// every client's failure, sorted by their text. With `job_tag`, the clients' tasks run under
/// it and each client's job id comes back in the record.
#[allow(clippy::too_many_arguments)]
async fn run_phase(
    spec: &BenchSpec,
    connections: &[(Node, Connection)],
    dialer: &Dialer,
    iteration: u32,
    phase: Phase,
    stop_after: Option<u64>,
    job_tag: Option<String>,
    events: &mpsc::UnboundedSender<BenchEvent>,
) -> Result<PhaseRecord, Vec<ClientFailure>> {
    let at = SystemTime::now() + START_MARGIN;
    if phase != Phase::IorCleanup {
        let _ = events.send(BenchEvent::PhaseStarted { iteration, phase, at: unix(at) });
    }
    let total_tasks = spec.tasks_per_client * connections.len() as u32;
    // IOR's wear-out across clients: each says when its tasks reached the stonewall and how
    // far they got; the most of all is then handed to every one (IOR's Allreduce(MAX)).
    let wear_out = pvfs_bench::request::wear_out_most(&spec.workload, phase).is_some()
        && connections.len() > 1
        && spec.runner.engine() == pvfs_bench::launch::Engine::Builtin;
    let (said, heard) = mpsc::unbounded_channel();
    let mut agreement = wear_out.then(|| {
        tokio::spawn(agree_wear_out(heard, connections.to_vec(), iteration, phase, dialer.timeout()))
    });
    let mut calls = JoinSet::new();
    for (i, (node, conn)) in connections.iter().enumerate() {
        let req = PhaseRequest {
            job_tag: job_tag.clone(),
            stop_after,
            engine: spec.runner.engine(),
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
        let said = wear_out.then(|| said.clone());
        calls.spawn(async move {
            let result = client_phase(&node, &mut conn, wire, timeout, &events, said).await;
            (node.name, result)
        });
    }
    drop(said);
    let mut tasks = Vec::new();
    let mut progress = Vec::new();
    let mut failures = Vec::new();
    let mut job_ids = Vec::new();
    loop {
        let joined = tokio::select! {
            joined = calls.join_next() => match joined {
                Some(joined) => joined,
                None => break,
            },
            agreed = async {
                match agreement.as_mut() {
                    Some(agreement) => agreement.await,
                    None => std::future::pending().await,
                }
            }, if agreement.is_some() => {
                agreement = None;
                match agreed {
                    Ok(Ok(())) => {}
                    Ok(Err(failure)) => failures.push(failure),
                    Err(err) => failures.push(ClientFailure::Internal { message: err.to_string() }),
                }
                // The clients that were not answered wait at the stonewall: end their calls.
                if !failures.is_empty() {
                    calls.abort_all();
                }
                continue;
            }
        };
        // A client that failed during a wear-out leaves the others waiting for its count:
        // end their calls (their agents stop the engines), the failure says why.
        let failed = !matches!(&joined, Ok((_, Ok(_))));
        if wear_out && failed {
            calls.abort_all();
        }
        match joined {
            Ok((node, Ok((results, reported, job_id)))) => {
                progress.push((node.clone(), reported));
                let (job_id, why_none) = match job_id {
                    Ok(id) => (Some(id), None),
                    Err(why) => (None, Some(why)),
                };
                job_ids.push(pvfs_bench::results::ClientJobId { node: node.clone(), job_id, why_none });
                for r in results {
                    if let Some(error) = &r.error {
                        failures.push(ClientFailure::TaskFailed {
                            node: node.clone(),
                            task: r.task,
                            error: error.clone(),
                            ops: r.ops,
                            bytes: r.bytes,
                        });
                    }
                    tasks.push((node.clone(), r));
                }
            }
            Ok((_, Err(failure))) => failures.push(failure),
            // Ended here, after another client's failure (which is the one to report).
            Err(err) if err.is_cancelled() => {}
            Err(err) => failures.push(ClientFailure::Internal { message: err.to_string() }),
        }
    }
    if let Some(agreement) = agreement {
        agreement.abort();
    }
    if !failures.is_empty() {
        failures.sort_by_cached_key(ToString::to_string);
        return Err(failures);
    }
    tasks.sort_by_key(|(_, r)| r.task);
    let results: Vec<TaskResult> = tasks.iter().map(|(_, r)| r.clone()).collect();
    let totals = engine::totals(phase, &results).unwrap_or_default();
    let mut record = PhaseRecord::new(iteration, phase, totals, &tasks);
    record.first_done = summary::first_done(&tasks, &progress);
    job_ids.sort_by_key(|c| connections.iter().position(|(n, _)| n.name == c.node));
    record.lustre_job_ids = job_ids;
    Ok(record)
}

/// IOR's wear-out across clients: waits for every client's count at the stonewall, then hands
/// the most of them to each. Ends without answering when a client's stream ended first (that
/// client's failure says why).
async fn agree_wear_out(
    mut heard: mpsc::UnboundedReceiver<u64>,
    clients: Vec<(Node, Connection)>,
    iteration: u32,
    phase: Phase,
    timeout: Duration,
) -> Result<(), ClientFailure> {
    let mut most = 0;
    for _ in 0..clients.len() {
        match heard.recv().await {
            Some(pairs) => most = most.max(pairs),
            None => return Ok(()),
        }
    }
    let mut answers = JoinSet::new();
    for (node, mut conn) in clients {
        let request = pvfs_proto::convert::bench::wear_out_request_to(iteration, phase, most);
        answers.spawn(async move {
            conn.agent.bench_wear_out(request).await.map(drop).map_err(|status| ClientFailure::Call {
                node: node.name.clone(),
                source: from_status(&status, &node.address, timeout),
            })
        });
    }
    while let Some(answered) = answers.join_next().await {
        answered.map_err(|err| ClientFailure::Internal { message: err.to_string() })??;
    }
    Ok(())
}

/// One client's part of a phase: its task results, or why it failed. With a wear-out, its
/// count at the stonewall goes to `said`.
async fn client_phase(
    node: &Node,
    conn: &mut Connection,
    request: pb::BenchPhaseRequest,
    timeout: Duration,
    events: &mpsc::UnboundedSender<BenchEvent>,
    said: Option<mpsc::UnboundedSender<u64>>,
) -> Result<(Vec<TaskResult>, summary::Progress, Result<String, String>), ClientFailure> {
    let mut reported = Vec::new();
    let call_failed = |status: tonic::Status| ClientFailure::Call {
        node: node.name.clone(),
        source: from_status(&status, &node.address, timeout),
    };
    let mut stream = conn.agent.bench_phase(request).await.map_err(call_failed)?.into_inner();
    let started = Instant::now();
    loop {
        let next = tokio::time::timeout(SILENCE_LIMIT, stream.message()).await;
        let message = match next {
            Err(_) => {
                return Err(ClientFailure::ClientLost {
                    node: node.name.clone(),
                    silent: SILENCE_LIMIT,
                    after: started.elapsed(),
                });
            }
            Ok(Err(status)) => return Err(call_failed(status)),
            Ok(Ok(None)) => return Err(ClientFailure::NoResult { node: node.name.clone() }),
            Ok(Ok(Some(message))) => message,
        };
        match message.event {
            Some(pb::bench_event::Event::Progress(p)) => {
                let time = unix(SystemTime::now());
                // Bounded: a report a second, and a phase of a day is 86,400 of them.
                if reported.len() < 1 << 17 {
                    reported.push((time, p.bytes, p.ops));
                }
                let _ = events.send(BenchEvent::Progress {
                    node: node.name.clone(),
                    bytes: p.bytes,
                    ops: p.ops,
                    time,
                    recent: p.recent_ns.into_iter().zip(p.recent_count).collect(),
                });
            }
            Some(pb::bench_event::Event::Done(done)) => {
                let (tasks, job_id) = pvfs_proto::convert::bench::phase_done_from(done);
                return Ok((tasks, reported, job_id));
            }
            Some(pb::bench_event::Event::Stonewalled(at)) => {
                if let Some(said) = &said {
                    let _ = said.send(at.pairs);
                }
            }
            None => {}
        }
    }
}

/// The mpi launcher: one MPI job started from the first client, as the seed ran IOR. With the
/// built-in engine the ranks' JSON lines give every task's result, so phases, progress and
/// the summary are the same as the agents launcher's; with IOR or mdtest the summary is
/// parsed from the tool's output when it ends.
async fn run_mpi(
    spec: &BenchSpec,
    dialer: &Dialer,
    events: mpsc::UnboundedSender<BenchEvent>,
    cancel: CancellationToken,
) -> BenchOutcome {
    let mut outcome = BenchOutcome { started: Some(SystemTime::now()), ..Default::default() };
    // As with the agents launcher: dropping the job closes the Launch stream, and the agent
    // stops mpirun.
    let result = tokio::select! {
        result = mpi_job(spec, dialer, &events, &mut outcome) => result.map_err(BenchError::from),
        () = cancel.cancelled() => Err(BenchError::Interrupted { during: None }),
    };
    // A job that failed as the run was cancelled was stopped by it: the run was interrupted.
    outcome.error = match result {
        Err(_) if cancel.is_cancelled() => Some(BenchError::Interrupted { during: None }),
        result => result.err(),
    };
    // The built-in engine's ranks report task results, summed here as the agents' are; IOR
    // and mdtest print their own summary, parsed in `mpi_job`.
    if spec.runner == Runner::MpiBuiltin {
        summarize(spec, &mut outcome);
    }
    outcome.finished = Some(SystemTime::now());
    outcome
}

async fn mpi_job(
    spec: &BenchSpec,
    dialer: &Dialer,
    events: &mpsc::UnboundedSender<BenchEvent>,
    outcome: &mut BenchOutcome,
) -> Result<(), MpiError> {
    let Some(first) = spec.clients.first() else { return Err(MpiError::NoClients) };
    let request = LaunchRequest {
        engine: spec.runner.engine(),
        workload: spec.workload.clone(),
        dir: spec.dir.clone(),
        clients: spec
            .clients
            .iter()
            .map(|n| {
                let host = match &n.address.host {
                    Host::Ip(ip) => ip.to_string(),
                    Host::Name(name) => name.clone(),
                };
                (n.name.clone(), host)
            })
            .collect(),
        tasks_per_client: spec.tasks_per_client,
        mpi_ssh: spec.mpi_ssh,
        io500_program: spec.io500_program.clone(),
        // io500 drops caches itself, on every rank (the clients) before each phase.
        drop_caches: !spec.drop_caches.is_empty(),
    };
    let owners = request.hostfile().owners;
    let launcher = &first.name;
    let mut conn = dialer
        .connect(first)
        .await
        .map_err(|source| MpiError::Unreachable { node: launcher.clone(), source })?;
    let timeout = dialer.timeout();
    let call_failed = |status: tonic::Status| MpiError::Call {
        node: launcher.clone(),
        source: from_status(&status, &first.address, timeout),
    };
    let mut stream = conn
        .agent
        .launch(pvfs_proto::convert::bench::launch_request_to(&request))
        .await
        .map_err(call_failed)?
        .into_inner();
    let mut job = MpiJob { ranks: request.ranks(), owners, ..Default::default() };
    let started = Instant::now();
    // io500 starts with its first stage; each next one starts as the one before it ends.
    if spec.runner == Runner::MpiIo500 {
        let _ = events.send(BenchEvent::Io500Stage { stage: Stage::ALL[0], at: unix(SystemTime::now()) });
    }
    let exited = loop {
        let message = match tokio::time::timeout(SILENCE_LIMIT, stream.message()).await {
            Err(_) => {
                return Err(MpiError::ClientLost {
                    node: launcher.clone(),
                    silent: SILENCE_LIMIT,
                    after: started.elapsed(),
                });
            }
            Ok(Err(status)) => return Err(call_failed(status)),
            Ok(Ok(None)) => return Err(MpiError::NoExitStatus { node: launcher.clone() }),
            Ok(Ok(Some(message))) => message,
        };
        match message.event {
            Some(pb::launch_event::Event::Started(s)) => {
                let _ = events.send(BenchEvent::Launched {
                    node: launcher.clone(),
                    command: s.command,
                    hostfile: s.hostfile,
                });
            }
            Some(pb::launch_event::Event::Line(line)) => {
                if spec.runner == Runner::MpiBuiltin
                    && let Some(rank_line) = RankLine::parse(&line.text)
                {
                    job.take(rank_line, events, outcome);
                    continue;
                }
                job.output.push_str(&line.text);
                job.output.push('\n');
                if spec.runner == Runner::MpiIo500 && !line.stderr {
                    job.io500_line(&line.text, events);
                }
                // Open MPI frames its messages in lines of dashes; they say nothing.
                let said = line.text.trim();
                if line.stderr && !said.is_empty() && !said.chars().all(|c| c == '-') {
                    job.ssh |= SshTrouble::of(said);
                    if said.starts_with("error:") && job.first_error.is_none() {
                        job.first_error = Some(said.to_owned());
                    }
                    job.stderr_tail.push(said.to_owned());
                    if job.stderr_tail.len() > 6 {
                        job.stderr_tail.remove(0);
                    }
                }
                let _ = events.send(BenchEvent::Output { stderr: line.stderr, text: line.text });
            }
            Some(pb::launch_event::Event::Alive(_)) | None => {}
            Some(pb::launch_event::Event::Exited(exited)) => break exited,
        }
    };
    let end =
        if exited.signal.is_empty() { JobEnd::Exit(exited.code) } else { JobEnd::Signal(exited.signal) };
    // ssh's refusal is the cause; Open MPI's own lines after it only say a daemon did not start.
    if exited.code != 0
        && let Some(why) = job.ssh.explain(launcher, spec.mpi_ssh)
    {
        return Err(MpiError::Ssh { node: launcher.clone(), end, why });
    }
    // The built-in engine's ranks said how each task went.
    if spec.runner == Runner::MpiBuiltin {
        if let Some(err) = job.task_errors.first() {
            return Err(err.clone());
        }
        if exited.code != 0 || !job.pending.is_empty() || !job.early.is_empty() {
            return Err(MpiError::Mpirun { node: launcher.clone(), end, stderr_tail: job.stderr_tail });
        }
        return Ok(());
    }
    if spec.runner == Runner::MpiIo500 {
        return io500_end(job, launcher, end, exited.code, request.ranks(), events, outcome);
    }
    // IOR or mdtest: its own report says.
    let tool = match spec.workload {
        Workload::Ior(_) => "IOR",
        Workload::Mdtest(_) => "mdtest",
        Workload::Find(_) => "pfind",
        Workload::Io500(_) => "io500",
    };
    match pvfs_bench::parse::parse(&job.output) {
        Ok(parsed) if parsed.failure().is_none() && exited.code == 0 => {
            outcome.ior = parsed.ior;
            outcome.iterations = parsed.iterations;
            outcome.mdtest = parsed.mdtest;
            Ok(())
        }
        Ok(parsed) => Err(MpiError::Tool {
            tool,
            node: launcher.clone(),
            end,
            failure: parsed.failure().unwrap_or_else(|| job.stderr_tail.join(" | ")),
        }),
        Err(err) => Err(MpiError::Unparsed {
            tool,
            node: launcher.clone(),
            end,
            error: err.to_string(),
            stderr_tail: job.stderr_tail,
        }),
    }
}

/// The built-in engine's ranks as their lines arrive.
#[derive(Default)]
struct MpiJob {
    ranks: u32,
    /// The client each rank runs on.
    owners: Vec<String>,
    /// Phases some ranks have finished, by (iteration, phase).
    pending: BTreeMap<(u32, Phase), Vec<(String, TaskResult)>>,
    /// This phase's progress per rank.
    progress: BTreeMap<u32, (u64, u64)>,
    /// This phase's progress per client as it arrived, for its first-done figures.
    timeline: BTreeMap<String, summary::Progress>,
    /// The phase whose start was told last, and whether its end has been told too.
    current: Option<((u32, Phase), bool)>,
    /// Lines of a later phase that arrived before every rank's end of the current one, and
    /// when: told, in order, once it ends (mpirun keeps each rank's lines in order, not the
    /// ranks' in step with each other).
    early: Vec<(RankLine, SystemTime)>,
    task_errors: Vec<MpiError>,
    /// The first `error: …` a rank printed (a barrier timed out, the directory is missing).
    first_error: Option<String>,
    /// mpirun's output that is not the ranks' lines (IOR's whole report, with IOR).
    output: String,
    stderr_tail: Vec<String>,
    /// What ssh said when mpirun started its daemons on the other clients.
    ssh: SshTrouble,
    /// The real io500: when each phase's line arrived (Unix seconds), by its name.
    io500_ended: BTreeMap<String, f64>,
}

impl MpiJob {
    /// One line of the real io500's stdout: a phase's `[RESULT]` (or `[      ]`) line is the
    /// phase's figure as it ends, and the next stage's start.
    fn io500_line(&mut self, text: &str, events: &mpsc::UnboundedSender<BenchEvent>) {
        if !text.starts_with("[RESULT]") && !text.starts_with("[      ]") {
            return;
        }
        let Some(result) =
            pvfs_bench::io500::parse_summary(text).ok().and_then(|s| s.phases.into_iter().next())
        else {
            return;
        };
        let now = unix(SystemTime::now());
        self.io500_ended.insert(result.name.clone(), now);
        let next = Stage::parse(&result.name)
            .and_then(|done| Stage::ALL.iter().position(|s| *s == done))
            .and_then(|i| Stage::ALL.get(i + 1));
        let _ = events.send(BenchEvent::Io500Result { result });
        if let Some(stage) = next {
            let _ = events.send(BenchEvent::Io500Stage { stage: *stage, at: now });
        }
    }
}

/// The real io500's end: its run read from its stdout (the figures checked against its score),
/// each phase placed in time by when its line arrived, and its score told.
fn io500_end(
    job: MpiJob,
    launcher: &str,
    end: JobEnd,
    code: i32,
    ranks: u32,
    events: &mpsc::UnboundedSender<BenchEvent>,
    outcome: &mut BenchOutcome,
) -> Result<(), MpiError> {
    if code != 0 {
        return Err(MpiError::Tool {
            tool: "io500",
            node: launcher.to_owned(),
            end,
            failure: job.first_error.clone().unwrap_or_else(|| job.stderr_tail.join(" | ")),
        });
    }
    let mut run = match pvfs_bench::io500::from_stdout(&job.output, std::path::Path::new("raw/mpirun.out")) {
        Ok(run) => run,
        Err(err) => {
            return Err(MpiError::Unparsed {
                tool: "io500",
                node: launcher.to_owned(),
                end,
                error: err.to_string(),
                stderr_tail: job.stderr_tail,
            });
        }
    };
    for phase in &mut run.phases {
        phase.ended = job.io500_ended.get(&phase.result.name).copied();
    }
    run.procs = Some(u64::from(ranks));
    if let Some(score) = run.score {
        let _ = events.send(BenchEvent::Io500Score { score, invalid_reasons: run.invalid_reasons.clone() });
    }
    outcome.io500 = Some(run);
    Ok(())
}

/// ssh's refusals among mpirun's lines: they scroll out of the tail behind Open MPI's own.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct SshTrouble {
    /// "Host key verification failed" / "REMOTE HOST IDENTIFICATION HAS CHANGED".
    host_key: bool,
    /// "Permission denied (publickey…)".
    denied: bool,
}

impl SshTrouble {
    fn of(line: &str) -> SshTrouble {
        SshTrouble {
            host_key: line.contains("Host key verification failed")
                || line.contains("REMOTE HOST IDENTIFICATION HAS CHANGED"),
            denied: line.contains("Permission denied (publickey"),
        }
    }

    /// What to tell the operator, if ssh refused.
    fn explain(self, launcher: &str, mpi_ssh: bool) -> Option<String> {
        let keys = pvfs_steps::MPI_KNOWN_HOSTS;
        match (self.host_key, self.denied, mpi_ssh) {
            (true, _, true) => Some(format!(
                "ssh from {launcher} refused another client's host key: it is not the one in {keys} (the key \
                 changed, or someone answers in that client's place). `pvfsctl up` rewrites {keys} from the keys \
                 the clients' agents report; run it, then the benchmark again"
            )),
            (true, _, false) => Some(format!(
                "ssh from {launcher} does not know another client's host key (Host key verification failed): \
                 set `mpi_ssh = true` in [bench] and run `pvfsctl up`, or add the clients' keys to root's known_hosts"
            )),
            (false, true, true) => Some(format!(
                "ssh from {launcher} was refused by another client (Permission denied): the cluster's MPI key is \
                 not in that client's /root/.ssh/authorized_keys, or its sshd refuses root logins by key \
                 (PermitRootLogin); run `pvfsctl up`, and check sshd_config"
            )),
            (false, true, false) => Some(format!(
                "ssh from {launcher} was refused by another client (Permission denied): mpirun needs root ssh \
                 between the clients; set `mpi_ssh = true` in [bench] and run `pvfsctl up`"
            )),
            (false, false, _) => None,
        }
    }
}

impl std::ops::BitOrAssign for SshTrouble {
    fn bitor_assign(&mut self, other: SshTrouble) {
        self.host_key |= other.host_key;
        self.denied |= other.denied;
    }
}

impl MpiJob {
    fn owner(&self, rank: u32) -> String {
        self.owners.get(rank as usize).cloned().unwrap_or_else(|| format!("rank {rank}"))
    }

    /// One rank's line, as it arrives.
    fn take(
        &mut self,
        line: RankLine,
        events: &mpsc::UnboundedSender<BenchEvent>,
        outcome: &mut BenchOutcome,
    ) {
        // A failed task is the run's error whether or not its phase's start has arrived.
        if let RankLine::Phase {
            result: pvfs_engine::child::TaskLine { task: rank, error: Some(error), .. },
            ..
        } = &line
        {
            let node = self.owner(*rank);
            self.task_errors.push(MpiError::TaskFailed { node, task: *rank, error: error.clone() });
        }
        self.take_at(line, SystemTime::now(), events, outcome);
    }

    /// Whether `line` must wait: a phase's start until the phase before it has ended, and a
    /// rank's line of a phase until that phase's start has been told.
    fn is_early(&self, line: &RankLine) -> bool {
        match line {
            RankLine::Started { .. } => matches!(self.current, Some((_, false))),
            RankLine::Progress { iteration, phase, .. } | RankLine::Phase { iteration, phase, .. } => {
                self.current.map(|(current, _)| current) != Some((*iteration, *phase))
            }
        }
    }

    /// The lines held back, in the order they arrived, now that a phase has started or ended:
    /// those it was waiting for are told, the rest held again.
    fn replay(&mut self, events: &mpsc::UnboundedSender<BenchEvent>, outcome: &mut BenchOutcome) {
        for (line, arrived) in std::mem::take(&mut self.early) {
            self.take_at(line, arrived, events, outcome);
        }
    }

    /// `line`, which arrived at `arrived`: told now, or held until the phase before it ends.
    fn take_at(
        &mut self,
        line: RankLine,
        arrived: SystemTime,
        events: &mpsc::UnboundedSender<BenchEvent>,
        outcome: &mut BenchOutcome,
    ) {
        if self.is_early(&line) {
            self.early.push((line, arrived));
            return;
        }
        match &line {
            RankLine::Started { iteration, phase, at_unix_ns } => {
                self.progress.clear();
                self.timeline.clear();
                self.current = Some(((*iteration, *phase), false));
                let at = unix(std::time::UNIX_EPOCH + Duration::from_nanos(*at_unix_ns));
                let _ = events.send(BenchEvent::PhaseStarted { iteration: *iteration, phase: *phase, at });
                self.replay(events, outcome);
            }
            RankLine::Progress { rank, bytes, ops, recent, .. } => {
                self.progress.insert(*rank, (*bytes, *ops));
                let node = self.owner(*rank);
                let (bytes, ops) = self
                    .progress
                    .iter()
                    .filter(|(r, _)| self.owner(**r) == node)
                    .fold((0, 0), |a, (_, b)| (a.0 + b.0, a.1 + b.1));
                let time = unix(arrived);
                self.timeline.entry(node.clone()).or_default().push((time, bytes, ops));
                let recent = recent.clone();
                let _ = events.send(BenchEvent::Progress { node, bytes, ops, time, recent });
            }
            RankLine::Phase { iteration, phase, result: pvfs_engine::child::TaskLine { task: rank, .. } } => {
                let Some(result) = line.task_result() else { return };
                let node = self.owner(*rank);
                let key = (*iteration, *phase);
                let tasks = self.pending.entry(key).or_default();
                tasks.push((node, result));
                if tasks.len() as u32 == self.ranks {
                    let mut tasks = self.pending.remove(&key).unwrap_or_default();
                    tasks.sort_by_key(|(_, r)| r.task);
                    let results: Vec<TaskResult> = tasks.iter().map(|(_, r)| r.clone()).collect();
                    if let Some(totals) = engine::totals(key.1, &results) {
                        let mut record = PhaseRecord::new(key.0, key.1, totals, &tasks);
                        let timeline: Vec<(String, summary::Progress)> =
                            std::mem::take(&mut self.timeline).into_iter().collect();
                        record.first_done = summary::first_done(&tasks, &timeline);
                        let _ = events.send(phase_done(&record));
                        outcome.phases.push(record);
                    }
                    if let Some((current, ended)) = &mut self.current
                        && *current == key
                    {
                        *ended = true;
                        self.replay(events, outcome);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FailureKind;
    use pvfs_bench::phase::IorPhase;

    /// The errors' text is what `pvfsctl bench` prints and results.json keeps: the same words
    /// as when they were strings, so scripts reading them see no change.
    #[test]
    fn a_phase_error_names_its_iteration_phase_and_every_client() {
        let lost = ClientFailure::ClientLost {
            node: "n2".into(),
            silent: SILENCE_LIMIT,
            after: Duration::from_secs_f64(41.6),
        };
        let task = ClientFailure::TaskFailed {
            node: "n1".into(),
            task: 3,
            error: "open /x: denied".into(),
            ops: 0,
            bytes: 0,
        };
        let broken = ClientFailure::Call {
            node: "n3".into(),
            source: DialError { kind: FailureKind::Lost, message: "the connection broke".into() },
        };
        let mut failures = vec![broken, lost, task];
        failures.sort_by_cached_key(ToString::to_string);
        let err = BenchError::Phase { iteration: 2, phase: Phase::Ior(IorPhase::Read), failures };
        assert_eq!(
            err.to_string(),
            "iteration 2, read: client n1, task 3: open /x: denied; client n2: no word from the client for 15s \
             (after 42s of the phase): network cut, or the node hung; client n3: the connection broke"
        );
        let BenchError::Phase { failures, .. } = &err else { unreachable!() };
        assert!(matches!(&failures[1], ClientFailure::ClientLost { node, .. } if node == "n2"));
        assert!(matches!(&failures[0], ClientFailure::TaskFailed { node, task: 3, .. } if node == "n1"));

        let cleanup = BenchError::Phase {
            iteration: 0,
            phase: Phase::IorCleanup,
            failures: vec![ClientFailure::NoResult { node: "n1".into() }],
        };
        assert_eq!(
            cleanup.to_string(),
            "iteration 0, removing the test files: client n1: the client ended the phase without a result"
        );
    }

    #[test]
    fn interruption_is_a_variant_with_the_text_it_always_had() {
        let agents = BenchError::Interrupted { during: Some((1, Phase::Ior(IorPhase::Write))) };
        assert_eq!(agents.to_string(), "iteration 1, write: interrupted");
        assert_eq!(BenchError::Interrupted { during: None }.to_string(), "interrupted");
        let outcome = BenchOutcome { error: Some(agents), ..Default::default() };
        assert!(outcome.interrupted());
        let failed = BenchOutcome {
            error: Some(MpiError::NoExitStatus { node: "n1".into() }.into()),
            ..Default::default()
        };
        assert!(!failed.interrupted() && !BenchOutcome::default().interrupted());
    }

    #[test]
    fn mpi_errors_name_the_launcher_and_how_mpirun_ended() {
        let lost =
            MpiError::ClientLost { node: "n1".into(), silent: SILENCE_LIMIT, after: Duration::from_secs(3) };
        assert_eq!(
            lost.to_string(),
            "client n1, which runs mpirun: no word for 15s (after 3s of the run): network cut, or the node hung"
        );
        let mpirun = MpiError::Mpirun {
            node: "n1".into(),
            end: JobEnd::Signal("KILL".into()),
            stderr_tail: vec!["a".into(), "b".into()],
        };
        assert_eq!(mpirun.to_string(), "mpirun on n1 ended with signal KILL: a | b");
        let tool =
            MpiError::Tool { tool: "IOR", node: "n1".into(), end: JobEnd::Exit(1), failure: "ERROR".into() };
        assert_eq!(tool.to_string(), "IOR under mpirun on n1 ended with exit 1: ERROR");
    }

    /// mpirun keeps each rank's lines in order but not the ranks' in step: rank 0's start of
    /// the read (and its first read progress) arriving before rank 1's last write lines must
    /// not put rank 1's last writes into the read. The read's lines wait for the write's end.
    #[test]
    fn a_phases_lines_that_arrive_before_the_last_phases_end_wait_for_it() {
        let mut job = MpiJob { ranks: 2, owners: vec!["n1".into(), "n2".into()], ..Default::default() };
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut outcome = BenchOutcome::default();
        let (write, read) = (Phase::Ior(IorPhase::Write), Phase::Ior(IorPhase::Read));
        let progress = |phase, rank, bytes| RankLine::Progress {
            iteration: 0,
            phase,
            rank,
            bytes,
            ops: bytes / 1024,
            recent: vec![(1000, bytes / 1024)],
        };
        let done = |phase, task| RankLine::Phase {
            iteration: 0,
            phase,
            result: pvfs_engine::child::TaskLine {
                task,
                start_unix_ns: 1_000_000_000,
                end_unix_ns: 2_000_000_000,
                bytes: 8192,
                ops: 8,
                error: None,
                rdwr_unix_ns: None,
                latency: vec![],
                found: 0,
            },
        };
        let started = |phase| RankLine::Started { iteration: 0, phase, at_unix_ns: 1_000_000_000 };
        for line in [
            progress(write, 1, 1024), // before the write's start: waits for it
            started(write),
            progress(write, 0, 8192),
            done(write, 0),
            started(read),
            progress(read, 0, 4096),
            progress(write, 1, 8192),
            done(write, 1),
            progress(read, 1, 2048),
        ] {
            job.take(line, &tx, &mut outcome);
        }
        drop(tx);
        let mut told = Vec::new();
        while let Ok(event) = rx.try_recv() {
            told.push(match event {
                BenchEvent::PhaseStarted { phase, .. } => format!("start {}", phase.label()),
                BenchEvent::Progress { node, bytes, .. } => format!("{node} {bytes}"),
                BenchEvent::PhaseDone { phase, totals, .. } => {
                    format!("done {} {}", phase.label(), totals.bytes)
                }
                other => format!("{other:?}"),
            });
        }
        assert_eq!(
            told,
            [
                "start write",
                "n2 1024",
                "n1 8192",
                "n2 8192",
                "done write 16384",
                "start read",
                "n1 4096",
                "n2 2048"
            ]
        );
        assert!(job.early.is_empty() && job.pending.is_empty());
        assert_eq!(outcome.phases.len(), 1);
    }

    /// A rank's failed task, from its line, is `TaskFailed` naming the client it ran on.
    #[test]
    fn a_ranks_failed_task_names_its_client() {
        let mut job = MpiJob { ranks: 2, owners: vec!["n1".into(), "n2".into()], ..Default::default() };
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut outcome = BenchOutcome::default();
        let line = RankLine::Phase {
            iteration: 0,
            phase: Phase::Ior(IorPhase::Write),
            result: pvfs_engine::child::TaskLine {
                task: 1,
                start_unix_ns: 1,
                end_unix_ns: 2,
                bytes: 0,
                ops: 0,
                error: Some("write 65536 bytes at offset 0 of /x: No space left on device".into()),
                rdwr_unix_ns: None,
                latency: vec![],
                found: 0,
            },
        };
        job.take(line, &tx, &mut outcome);
        let [MpiError::TaskFailed { node, task: 1, error }] = &job.task_errors[..] else {
            panic!("{:?}", job.task_errors)
        };
        assert_eq!(node, "n2");
        assert!(error.ends_with("No space left on device"));
        assert_eq!(
            job.task_errors[0].to_string(),
            "client n2, task 1: write 65536 bytes at offset 0 of /x: No space left on device"
        );
    }
}
