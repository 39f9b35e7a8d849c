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
    /// A benchmark event with the line `events.jsonl` keeps for it (keys sorted). Both variants
    /// boxed: each is hundreds of bytes, and most events are the other kind.
    Bench { event: Box<BenchEvent>, line: serde_json::Value },
    /// A node's recorded second.
    Second(Box<NodeSecond>),
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
    /// `--gluster-profile` asked, and the volume's profile could not be started.
    #[error(transparent)]
    Profile(#[from] super::profile::ProfileError),
}

/// What a run does besides its phases: faults to inject (`--fault`), and GlusterFS's profile of
/// the volume to take over each phase (`--gluster-profile`: the server asked and the volume).
#[derive(Debug, Default)]
pub struct Extras {
    pub faults: Vec<super::fault::FaultPlan>,
    pub gluster_profile: Option<(Node, String)>,
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
#[allow(clippy::too_many_arguments)]
pub async fn execute(
    Run { plan, dir: run }: &Run,
    cluster: &Cluster,
    clients: Vec<Node>,
    dialer: &Dialer,
    processes: u32,
    Extras { faults, gluster_profile }: Extras,
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
        lustre_servers: super::jobs::servers(cluster),
    };
    // GlusterFS's profile, started before the first phase: a refusal stops the run here.
    let (mut profiler, mut profile_events) = match gluster_profile {
        Some((node, volume)) => match super::profile::Profiler::start(node, volume, dialer.clone()).await {
            Ok((p, e)) => (Some(p), Some(e)),
            Err(e) => {
                shutdown.cancel();
                return Err(e.into());
            }
        },
        None => (None, None),
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let work = {
        let dialer = dialer.clone();
        tokio::spawn(async move { super::run(&spec, &dialer, tx, cancel).await })
    };
    let mut events_file = run.events()?;
    // mpirun's output, as it comes: the tool's report (IOR's, mdtest's) and any error.
    let mut raw_output = None;
    // The run's latency second by second, from the clients' recent operations.
    let mut latency = LatencyTimeline::default();
    // `--fault`: each started at its second of its phase, its agent's answers as events.
    let (mut faults, mut fault_events) = super::fault::Faults::new(faults, dialer.clone());
    // An event the coordinator makes (a latency second, a fault's), kept and told as the
    // clients' are. A macro rather than a closure: the loop below writes to the same file.
    macro_rules! keep {
        ($event:expr) => {{
            let event = $event;
            let line = results::sorted(&event)?;
            events_file.line(&line)?;
            let _ = events.send(RunEvent::Bench { event: Box::new(event), line });
        }};
    }
    loop {
        tokio::select! {
            event = rx.recv() => {
                let Some(event) = event else { break };
                if let Some(second) = latency.take(&event) {
                    for measured in faults.on_event(&second) {
                        keep!(measured);
                    }
                    keep!(second);
                }
                for measured in faults.on_event(&event) {
                    keep!(measured);
                }
                if let Some(p) = &profiler {
                    p.on_event(&event);
                }
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
                let _ = events.send(RunEvent::Bench { event: Box::new(event), line });
            }
            Some(fault) = fault_events.recv() => {
                faults.on_fault(&fault);
                keep!(fault);
            }
            Some(profiled) = async { profile_events.as_mut()?.recv().await } => {
                keep!(profiled);
            }
            Some(second) = seconds.recv() => {
                let _ = events.send(RunEvent::Second(Box::new(second)));
            }
        }
    }
    let outcome = work.await;
    // A fault whose phase failed — its tasks' I/O errors stopped the run — is measured with
    // them: what it cost the application beyond time.
    if let Ok(BenchOutcome { error: Some(super::BenchError::Phase { iteration, phase, failures }), .. }) =
        &outcome
    {
        let errors: Vec<String> = failures
            .iter()
            .filter_map(|f| match f {
                super::ClientFailure::TaskFailed { node, task, error, .. } => {
                    Some(format!("{node} task {task}: {error}"))
                }
                _ => None,
            })
            .collect();
        // What the failed tasks were to do and did not (each stopped at its first error).
        let planned = pvfs_bench::request::planned_per_task(plan.workload(), *phase);
        let lost = super::fault::Lost::of(failures, planned);
        for measured in faults.on_phase_failed(*iteration, *phase, &errors, lost) {
            keep!(measured);
        }
    }
    // A fault still in place when the run ends (done, failed, stopped, or its task lost) is
    // undone now, before anything else can end this function.
    let interrupted = outcome.as_ref().is_ok_and(|o| o.interrupted());
    for undone in faults.finish(&mut fault_events, interrupted).await {
        keep!(undone);
    }
    // The last phase's profile, then the profile stopped if this run started it.
    if let Some(p) = &mut profiler {
        if let Some(why) = p.finish().await {
            tracing::warn!("{why}");
        }
        if let Some(events) = &mut profile_events {
            while let Ok(profiled) = events.try_recv() {
                keep!(profiled);
            }
        }
    }
    let outcome = outcome?;
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

/// The run's latency on its timeline: each second of each phase, the merged percentiles of
/// the clients' operations, told as [`BenchEvent::LatencySecond`]s.
#[derive(Default)]
struct LatencyTimeline {
    phase: Option<(u32, pvfs_bench::phase::Phase, pvfs_bench::latency::Seconds)>,
}

impl LatencyTimeline {
    /// The second `event` ends, if it ends one: a later second's report ends the one being
    /// gathered, and a phase's end (or the next phase's start, after a failed one) its last.
    fn take(&mut self, event: &BenchEvent) -> Option<BenchEvent> {
        let (iteration, phase, seconds) = match event {
            BenchEvent::PhaseStarted { iteration, phase, at } => {
                let fresh = (*iteration, *phase, pvfs_bench::latency::Seconds::starting(*at));
                let (iteration, phase, mut seconds) = self.phase.replace(fresh)?;
                return second(iteration, phase, seconds.flush());
            }
            _ => self.phase.as_mut()?,
        };
        let ended = match event {
            BenchEvent::Progress { time, recent, .. } => seconds.add(*time, recent),
            BenchEvent::PhaseDone { .. } => seconds.flush(),
            _ => None,
        };
        second(*iteration, *phase, ended)
    }
}

fn second(
    iteration: u32,
    phase: pvfs_bench::phase::Phase,
    ended: Option<(f64, pvfs_bench::latency::Percentiles)>,
) -> Option<BenchEvent> {
    let (at, latency) = ended?;
    Some(BenchEvent::LatencySecond { iteration, phase, at, latency })
}

fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_bench::phase::{IorPhase, Phase};

    fn progress(time: f64, values: &[u64]) -> BenchEvent {
        let mut r = pvfs_bench::latency::Recorder::new();
        values.iter().for_each(|&v| r.record(v));
        BenchEvent::Progress { node: "c1".into(), bytes: 0, ops: 0, time, recent: r.buckets() }
    }

    /// Each phase's seconds are told as they end, in that phase's name, counted from its
    /// start; a phase's last second ends with it, and a phase that failed before its end
    /// leaves its last second to the next phase's start.
    #[test]
    fn the_timeline_tells_each_phases_seconds_as_they_end() {
        let (write, read) = (Phase::Ior(IorPhase::Write), Phase::Ior(IorPhase::Read));
        let mut t = LatencyTimeline::default();
        assert!(t.take(&progress(5.0, &[1_000])).is_none(), "no phase yet");
        assert!(t.take(&BenchEvent::PhaseStarted { iteration: 0, phase: write, at: 10.5 }).is_none());
        assert!(t.take(&progress(10.9, &[1_000, 2_000])).is_none());
        assert!(t.take(&progress(11.2, &[3_000])).is_none(), "still the first second");
        let Some(BenchEvent::LatencySecond { iteration: 0, phase, at, latency }) =
            t.take(&progress(11.6, &[9_000]))
        else {
            panic!("the first second ends")
        };
        assert_eq!((phase, at, latency.count, latency.min_ns), (write, 10.5, 3, 1_000));
        assert!(latency.max_ns.abs_diff(3_000) <= 30, "{latency:?}");
        let done = BenchEvent::PhaseDone {
            iteration: 0,
            phase: write,
            totals: Default::default(),
            latency: None,
            first_done: None,
        };
        let Some(BenchEvent::LatencySecond { at, latency, .. }) = t.take(&done) else {
            panic!("its last second")
        };
        assert_eq!((at, latency.count), (11.5, 1));
        assert!(t.take(&BenchEvent::PhaseStarted { iteration: 0, phase: read, at: 20.0 }).is_none());
        assert!(t.take(&progress(20.5, &[7])).is_none());
        let next = BenchEvent::PhaseStarted { iteration: 1, phase: write, at: 30.0 };
        let Some(BenchEvent::LatencySecond { iteration: 0, phase, at, .. }) = t.take(&next) else {
            panic!("the failed read's second")
        };
        assert_eq!((phase, at), (read, 20.0));
    }
}
