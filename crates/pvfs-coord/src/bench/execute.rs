//! A planned run, start to finish, and everything it keeps: the results directory opened
//! before the run (an incomplete results.json from the first moment, the cluster file, the
//! equivalent commands), every node's metrics recorded alongside, every event in
//! `events.jsonl` (and mpirun's lines in `raw/mpirun.out`), and the final record once the
//! metrics have caught up with the run's last second. What the user sees is the caller's: it
//! gets each event as a [`RunEvent`], already in the line form `--json` prints.

use super::metrics::{self, MetricsError, NodeSecond};
use super::plan::BenchPlan;
use super::{BenchOutcome, BenchSpec};
use crate::dial::Dialer;
use crate::stream::{Start, follow_cluster};
use pvfs_bench::launch::Runner;
use pvfs_bench::params::Workload;
use pvfs_bench::request::DropCaches;
use pvfs_bench::results::{self, BenchEvent, ResultsError, RunDir};
use pvfs_config::{Cluster, Node};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
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
    /// Making the results directory, or writing one of its files.
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error(transparent)]
    Line(#[from] serde_json::Error),
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
    /// The run's directory cannot go into the real io500's ini (said before anything runs).
    #[error(transparent)]
    Io500Ini(#[from] pvfs_bench::io500::ini::IniError),
}

/// Opens the run's results directory: a name of its own (a run of the same name in the same
/// second, a sweep point or a second terminal, gets another, here and on the file system
/// under test), then an incomplete results.json, so from here on the directory always holds a
/// record `report` reads, then the metrics directory, the cluster file, and commands.txt
/// naming the run as `shown` (the cluster file as the user gave it).
pub fn open(plan: BenchPlan, cluster: &Cluster, shown: &Path) -> Result<Run, ExecuteError> {
    let run = RunDir::create(plan.results_base(), plan.name())?;
    run.write_record(&plan.record(&run, &BenchOutcome::default(), &BTreeMap::new(), false))?;
    run.make_metrics_dir()?;
    run.keep_cluster(&cluster.source, pvfs_config::CLUSTER_FILE)?;
    run.write_commands(&format!(
        "# pvfsctl bench {} (engine {}, launcher {}, {} clients x {} tasks)\n# The IOR/mdtest command it stands for:\n{}\n",
        shown.display(),
        plan.runner().engine(),
        plan.runner().launcher(),
        plan.clients(),
        plan.tasks_per_client(),
        plan.equivalent(&run)
    ))?;
    Ok(Run { plan, dir: run })
}

/// A planned run whose results directory is open: the plan, and the directory that named it.
#[derive(Debug)]
pub struct Run {
    pub plan: BenchPlan,
    pub dir: RunDir,
}

/// Runs `plan` on `clients` until it ends or `cancel` is cancelled, recording every node of
/// `cluster` from one second before it starts (with its top `processes` processes by CPU and
/// by I/O each second when `processes` > 0); each event goes to `events` (dropped when nobody
/// listens). Returns the outcome once the final record is written.
pub async fn execute(
    Run { plan, dir: run }: &Run,
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
    let recorder =
        tokio::spawn(metrics::record(samples, run.clone(), seconds_tx, latest_tx, shutdown.clone()));

    let dir = plan.client_dir(run);
    let drop_caches = match plan.drop_caches() {
        DropCaches::None => Vec::new(),
        DropCaches::Clients => clients.clone(),
        DropCaches::All => cluster.nodes.clone(),
    };
    // The real io500's ini, as the agent writes it from the same knobs, kept with the results.
    if let (Runner::MpiIo500, Workload::Io500(p)) = (plan.runner(), plan.workload()) {
        let text = pvfs_bench::io500::ini::ini(&p.options, &dir, plan.drop_caches() != DropCaches::None)?;
        run.write_raw("io500.ini", &text)?;
    }
    let spec = BenchSpec {
        runner: plan.runner(),
        workload: plan.workload().clone(),
        clients,
        tasks_per_client: plan.tasks_per_client(),
        dir: dir.clone(),
        mpi_ssh: cluster.bench.mpi_ssh,
        drop_caches,
        io500_program: plan.io500_program().map(Path::to_owned),
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let work = {
        let dialer = dialer.clone();
        tokio::spawn(async move { super::run(&spec, &dialer, tx, cancel).await })
    };
    let mut events_file = run.events()?;
    // mpirun's output, as it comes: the tool's report (IOR's, mdtest's) and any error.
    let mut raw_output = None;
    loop {
        tokio::select! {
            event = rx.recv() => {
                let Some(event) = event else { break };
                let line = results::sorted(&event)?;
                events_file.line(&line)?;
                match &event {
                    BenchEvent::Launched { node, command, hostfile } => {
                        let hostfile: Vec<String> = hostfile.trim_end().lines().map(|l| format!("#   {l}")).collect();
                        run.add_commands(&format!("# Run on {node}:\n{command}\n# {}:\n{}\n", dir.join("mpi-hostfile").display(), hostfile.join("\n")))?;
                        raw_output = Some(run.mpirun_output()?);
                    }
                    BenchEvent::Output { text, .. } => {
                        if let Some(f) = &mut raw_output {
                            f.line(text)?;
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
    run.write_record(&plan.record(run, &outcome, &recorded, !outcome.interrupted()))?;
    if let Some(io500) = &outcome.io500 {
        run.write_io500(io500)?;
    }
    Ok(outcome)
}

fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos() as u64
}
