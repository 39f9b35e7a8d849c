//! A planned run, start to finish, and everything it keeps: the results directory opened
//! before the run (an incomplete results.json from the first moment, the cluster file, the
//! equivalent commands), every node's metrics recorded alongside, every event in
//! `events.jsonl` (and mpirun's lines in `raw/mpirun.out`), and the final record once the
//! metrics have caught up with the run's last second. What the user sees is the caller's: it
//! gets each event as a [`RunEvent`], already in the line form `--json` prints.

use super::metrics::{self, MetricsError, NodeSecond};
use super::plan::BenchPlan;
use super::{BenchEvent, BenchOutcome, BenchSpec};
use crate::dial::Dialer;
use crate::stream::{Start, follow_cluster};
use pvfs_bench::results::{self, EventLine, ResultsError, RunDir, new_run_dir, unix};
use pvfs_config::{Cluster, Node};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// How long after a run ends the metrics of a node that sends nothing more are waited for.
const METRICS_GRACE: Duration = Duration::from_secs(5);

/// What a run reports while it goes.
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// A benchmark event with the line `events.jsonl` keeps for it (keys sorted).
    Bench { event: BenchEvent, line: serde_json::Value },
    /// A node's recorded second.
    Second(NodeSecond),
    /// The run is over; its metrics are being waited for, then the results written.
    Ended,
}

/// Why a run's record could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error("creating the results directory {}", .0.display())]
    CreateDir(PathBuf, #[source] std::io::Error),
    #[error("copying {} into the results", .0.display())]
    CopyCluster(PathBuf, #[source] std::io::Error),
    /// Writing one of the run's files (events, commands, mpirun's output).
    #[error(transparent)]
    Write(#[from] std::io::Error),
    #[error(transparent)]
    Line(#[from] serde_json::Error),
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
}

/// Opens the run's results directory: a name of its own (a run of the same name in the same
/// second, a sweep point or a second terminal, gets another, here and on the file system
/// under test), then an incomplete results.json, so from here on the directory always holds a
/// record `report` reads, then the metrics directory, the cluster file, and commands.txt
/// naming the run as `shown` (the cluster file as the user gave it).
pub fn open(plan: &mut BenchPlan, cluster: &Cluster, shown: &Path, base: &Path) -> Result<(), ExecuteError> {
    plan.use_run_dir(new_run_dir(base, &plan.run_id)?);
    write_record(plan, &BenchOutcome::default(), &BTreeMap::new(), false)?;
    let metrics = plan.results.join("metrics");
    std::fs::create_dir_all(&metrics).map_err(|e| ExecuteError::CreateDir(plan.results.clone(), e))?;
    std::fs::copy(&cluster.source, plan.results.join("cluster.toml"))
        .map_err(|e| ExecuteError::CopyCluster(cluster.source.clone(), e))?;
    std::fs::write(
        plan.results.join("commands.txt"),
        format!(
            "# pvfsctl bench {} (engine {}, launcher {}, {} clients x {} tasks)\n# The IOR/mdtest command it stands for:\n{}\n",
            shown.display(),
            plan.engine_name,
            plan.launcher,
            plan.clients,
            plan.tasks_per_client,
            plan.equivalent()
        ),
    )?;
    Ok(())
}

/// Runs `plan` on `clients` until it ends or `cancel` is cancelled, recording every node of
/// `cluster` from one second before it starts (with its top `processes` processes by CPU and
/// by I/O each second when `processes` > 0); each event goes to `events` (dropped when nobody
/// listens). Returns the outcome once the final record is written.
pub async fn execute(
    plan: &BenchPlan,
    cluster: &Cluster,
    clients: Vec<Node>,
    dialer: &Dialer,
    processes: u32,
    cancel: CancellationToken,
    events: mpsc::UnboundedSender<RunEvent>,
) -> Result<BenchOutcome, ExecuteError> {
    // Every node's metrics for the whole run; `shutdown` ends them once the run's last second
    // is in (not `cancel`: an interrupted run still keeps its metrics up to its end).
    let shutdown = CancellationToken::new();
    let since = unix_ns(SystemTime::now());
    let samples = follow_cluster(
        cluster,
        dialer,
        &HashMap::new(),
        Start::Since { unix_ns: since },
        processes,
        shutdown.clone(),
    );
    let (seconds_tx, mut seconds) = mpsc::unbounded_channel();
    let (latest_tx, mut latest) = watch::channel(HashMap::new());
    let recorder = tokio::spawn(metrics::record(
        samples,
        plan.results.join("metrics"),
        seconds_tx,
        latest_tx,
        shutdown.clone(),
    ));

    let spec = BenchSpec {
        engine: plan.engine,
        workload: plan.workload.clone(),
        clients,
        tasks_per_client: plan.tasks_per_client,
        dir: plan.dir.clone(),
        mpi: plan.mpi,
        mpi_ssh: cluster.bench.mpi_ssh,
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let work = {
        let dialer = dialer.clone();
        tokio::spawn(async move { super::run(&spec, &dialer, tx, cancel).await })
    };
    let mut events_file = std::fs::File::create(plan.results.join("events.jsonl"))?;
    // mpirun's output, as it comes: the tool's report (IOR's, mdtest's) and any error.
    let mut raw_output: Option<std::fs::File> = None;
    loop {
        tokio::select! {
            event = rx.recv() => {
                let Some(event) = event else { break };
                let line = results::sorted(&event_line(&event))?;
                writeln!(events_file, "{line}")?;
                match &event {
                    BenchEvent::Launched { node, command, hostfile } => {
                        let mut f = std::fs::OpenOptions::new().append(true).open(plan.results.join("commands.txt"))?;
                        let hostfile: Vec<String> = hostfile.trim_end().lines().map(|l| format!("#   {l}")).collect();
                        writeln!(f, "# Run on {node}:\n{command}\n# {}:\n{}", plan.dir.join("mpi-hostfile").display(), hostfile.join("\n"))?;
                        std::fs::create_dir_all(plan.results.join("raw"))?;
                        raw_output = Some(std::fs::File::create(plan.results.join("raw").join("mpirun.out"))?);
                    }
                    BenchEvent::Output { text, .. } => {
                        if let Some(f) = &mut raw_output {
                            writeln!(f, "{text}")?;
                        }
                    }
                    _ => {}
                }
                let _ = events.send(RunEvent::Bench { event, line });
            }
            Some(second) = seconds.recv() => {
                let _ = events.send(RunEvent::Second(second));
            }
        }
    }
    let outcome = work.await?;
    let _ = events.send(RunEvent::Ended);
    // Let the metrics catch up with the run's last second: every node has recorded a second
    // ending at or after the run's end (or is down), bounded by METRICS_GRACE.
    let nodes: Vec<String> = cluster.nodes.iter().map(|n| n.name.clone()).collect();
    metrics::catch_up(&mut latest, &nodes, outcome.finished, METRICS_GRACE).await;
    shutdown.cancel();
    let recorded = recorder.await??;
    write_record(plan, &outcome, &recorded, !outcome.interrupted())?;
    Ok(outcome)
}

/// results.json (everything) and results.csv (one row per iteration and phase), each written
/// whole or not at all. `complete` is false for the record written when the run starts and
/// for a run that was interrupted, true for the one written at the end of a run.
fn write_record(
    plan: &BenchPlan,
    outcome: &BenchOutcome,
    metrics: &BTreeMap<String, u64>,
    complete: bool,
) -> Result<(), ResultsError> {
    RunDir { path: plan.results.clone(), name: plan.run_id.clone() }
        .write_record(&plan.record(outcome, metrics, complete))
}

/// The line `events.jsonl` (and `--json`) keeps for `event`.
fn event_line(event: &BenchEvent) -> EventLine {
    match event {
        BenchEvent::PhaseStarted { iteration, phase, at } => {
            EventLine::PhaseStarted { iteration: *iteration, phase: *phase, at: unix(*at) }
        }
        BenchEvent::Progress { node, bytes, ops } => EventLine::Progress {
            node: node.clone(),
            bytes: *bytes,
            ops: *ops,
            time: unix(SystemTime::now()),
        },
        BenchEvent::Launched { node, command, hostfile } => {
            EventLine::Launched { node: node.clone(), command: command.clone(), hostfile: hostfile.clone() }
        }
        BenchEvent::Output { stderr, text } => EventLine::Output { stderr: *stderr, text: text.clone() },
        BenchEvent::PhaseDone { record } => EventLine::PhaseDone {
            iteration: record.iteration,
            phase: record.phase,
            bytes: record.totals.bytes,
            ops: record.totals.ops,
            seconds: record.totals.seconds,
            bw_mib: record.totals.bw_mib,
            ops_per_sec: record.totals.ops_per_sec,
        },
    }
}

fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos() as u64
}
