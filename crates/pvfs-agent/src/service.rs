//! The `pvfs.v1.Agent` gRPC service: the edge where wire types meet the agent's work.

use crate::history::History;
use crate::limits::MAX_STEPS_PER_UNIT;
use crate::reboot;
use pvfs_host::{Root, Runner, SystemRunner};
use pvfs_metrics::facts::{self, NodeInfo};
use pvfs_metrics::ring::Next;
use pvfs_proto::pb;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_stream::wrappers::{ReceiverStream, UnboundedReceiverStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic::{Request, Response, Status};

/// A benchmark phase under way: the tasks' results, or why there are none.
type PhaseWork =
    std::pin::Pin<Box<dyn Future<Output = Result<Vec<pvfs_engine::engine::TaskResult>, Status>> + Send>>;

/// Why a fio phase produced no results; sent to the coordinator as is.
#[derive(Debug, thiserror::Error)]
enum FioError {
    /// The request is not one fio can run, or fio's output is not a result.
    #[error(transparent)]
    Fio(#[from] pvfs_engine::fio::FioError),
    /// A test file refused (a symlink, not a plain file) or the run's directory missing.
    #[error(transparent)]
    File(#[from] pvfs_engine::files::FileError),
    #[error(transparent)]
    OwnExecutable(#[from] crate::child::OwnExecutableError),
    #[error("fio is not installed on this client (apt-get install fio, or dnf install fio)")]
    NotInstalled,
    #[error("cannot start fio: {0}")]
    Start(#[source] std::io::Error),
    #[error("`fio {args}` exited {code:?}: {tail}")]
    Exited { args: String, code: Option<i32>, tail: String },
}

/// A phase's progress as the stream carries it: the counters so far, and the times of the
/// operations finished since the last one.
fn progress_event(progress: &pvfs_engine::engine::Progress) -> pb::BenchEvent {
    use std::sync::atomic::Ordering::Relaxed;
    let recent = progress.take_recent();
    let event = pb::bench_event::Event::Progress(pb::BenchProgress {
        bytes: progress.bytes.load(Relaxed),
        ops: progress.ops.load(Relaxed),
        recent_ns: recent.iter().map(|(ns, _)| *ns).collect(),
        recent_count: recent.iter().map(|(_, n)| *n).collect(),
    });
    pb::BenchEvent { event: Some(event) }
}

/// One IOR phase of `req` as a fio run: one fio job per task, on IOR's file names.
async fn run_fio(
    req: &pvfs_bench::request::PhaseRequest,
    phase: pvfs_engine::engine::IorPhase,
) -> Result<Vec<pvfs_engine::engine::TaskResult>, FioError> {
    let args = pvfs_engine::fio::args(req, phase)?;
    // fio opens its files by path, following symlinks. Each is made (or, to be read, checked)
    // here first, through the run directory opened without following any: a symlink planted
    // at a test file's name is refused, not followed. What remains is the instant between
    // this and fio's own open, in a directory the agent made.
    let dir = if req.creates_dir() {
        pvfs_engine::files::Dir::create_all(&req.dir)?
    } else {
        pvfs_engine::files::Dir::open(&req.dir)?
    };
    for name in pvfs_engine::fio::file_names(req, phase)? {
        match phase {
            pvfs_engine::engine::IorPhase::Write => drop(dir.open_write(&name, nix::fcntl::OFlag::empty())?),
            pvfs_engine::engine::IorPhase::Read => drop(dir.open_read(&name, nix::fcntl::OFlag::empty())?),
        }
    }
    if !crate::child::on_path("fio") {
        return Err(FioError::NotInstalled);
    }
    let mut fio = vec!["fio".to_owned()];
    fio.extend(args.iter().cloned());
    let argv = crate::child::with_oom_score(
        crate::child::TOOL_OOM_SCORE_ADJ,
        crate::child::Argv { args: fio, arg0: None },
    )?;
    // A phase takes as long as the storage needs; the coordinator watches for silence. Killed
    // if the phase's task is dropped (the agent stopping).
    let started = std::time::SystemTime::now();
    let out = argv
        .command()
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(FioError::Start)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
        return Err(FioError::Exited {
            args: args.join(" "),
            code: out.status.code(),
            tail: tail.join("\n"),
        });
    }
    Ok(pvfs_engine::fio::results(&stdout, phase, started)?)
}

/// How far ahead a benchmark phase may be scheduled.
const BENCH_START_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Samples a `Metrics` stream may have queued for the transport. Small on purpose: the ring is
/// the buffer, and a slow reader just stays further behind in it.
const STREAM_QUEUE: usize = 8;

/// Units decoded and checked at once. A coordinator sends a node one unit at a time; two
/// leave one core for everything else on a small node.
const UNIT_CHECKS: usize = 2;

/// Answers the coordinator's requests.
#[derive(Debug)]
pub struct AgentService {
    name: String,
    root: Root,
    started: Instant,
    history: Arc<History>,
    shutdown: CancellationToken,
    /// Held for the whole of an `Apply`: two coordinators converging one node at once would
    /// race each other's probes (both see "no volume", both create it).
    converging: Arc<tokio::sync::Mutex<()>>,
    /// Every `Apply`'s task, so that stopping waits for the step under way to finish.
    units: TaskTracker,
    /// Held while a benchmark phase runs: two runs on one client would measure each other.
    benching: Arc<tokio::sync::Mutex<()>>,
    /// The running phase's wear-out, waiting for `BenchWearOut` (at most one phase runs).
    wear_out: Arc<std::sync::Mutex<Option<WearSlot>>>,
    /// What `Apply` may do on this node.
    policy: Arc<pvfs_policy::Policy>,
    /// The network cuts a benchmark's faults made, each undone by the agent itself.
    cuts: Arc<crate::fault::network::Cuts>,
    /// The `Metrics` streams: at most so many at once, and how many are live.
    metrics_streams: crate::limits::StreamGauge,
    /// Units being decoded and checked on the blocking pool (see `apply`).
    checking: Arc<tokio::sync::Semaphore>,
    /// Its own executable's identity, read on the first `Info` (hashing the file takes a
    /// moment, and an agent that is never asked need not spend it).
    build: tokio::sync::OnceCell<crate::build::Build>,
    /// The revoked serials: a `Metrics` stream ends once its client's certificate is listed.
    /// (`auth` checks every request; a stream is one request that goes on.)
    revoked: Option<pvfs_tls::RevokedWatch>,
}

/// A running phase whose tasks will stop at a stonewall and wait for the run's most.
#[derive(Debug)]
struct WearSlot {
    iteration: u32,
    phase: pvfs_engine::engine::Phase,
    /// The most a task can make (its block's transfers): IOR's count never passes it.
    most: u64,
    answer: tokio::sync::oneshot::Sender<u64>,
}

impl AgentService {
    pub fn new(name: String, root: Root, history: Arc<History>, shutdown: CancellationToken) -> AgentService {
        AgentService {
            name,
            root,
            started: Instant::now(),
            build: tokio::sync::OnceCell::new(),
            history,
            shutdown,
            converging: Arc::new(tokio::sync::Mutex::new(())),
            benching: Arc::new(tokio::sync::Mutex::new(())),
            wear_out: Arc::new(std::sync::Mutex::new(None)),
            units: TaskTracker::new(),
            policy: Arc::new(pvfs_policy::Policy::default()),
            cuts: Arc::default(),
            metrics_streams: crate::limits::StreamGauge::default(),
            checking: Arc::new(tokio::sync::Semaphore::new(UNIT_CHECKS)),
            revoked: None,
        }
    }

    /// The tasks of the units being converged (the agent waits for them when it stops).
    pub(crate) fn units(&self) -> TaskTracker {
        self.units.clone()
    }

    /// The network cuts under way (the agent restores them when it stops).
    pub(crate) fn cuts(&self) -> Arc<crate::fault::network::Cuts> {
        self.cuts.clone()
    }

    /// The same service under `policy` instead of the built-in one.
    pub fn with_policy(self, policy: pvfs_policy::Policy) -> AgentService {
        AgentService { policy: Arc::new(policy), ..self }
    }

    /// The policy's `bench-dir` rule on a benchmark's directory: refused before anything runs.
    fn bench_dir(&self, dir: &std::path::Path) -> Result<(), Status> {
        let shown = dir.to_string_lossy();
        self.policy.check_bench_dir(&shown, &self.root).map_err(|refused| {
            tracing::warn!(dir = %shown, rule = refused.rule, "benchmark refused by the agent's policy");
            Status::permission_denied(format!(
                "the agent's policy refuses this benchmark on {}: {refused}",
                self.name
            ))
        })
    }

    /// A write phase its file system has room for (`room`), or `FAILED_PRECONDITION` naming
    /// the numbers.
    fn room(&self, dir: &std::path::Path, writes: crate::room::Writes) -> Result<(), Status> {
        crate::room::check(dir, writes).map_err(|err| {
            tracing::warn!(dir = %dir.display(), error = %err, "benchmark phase refused: no room");
            Status::failed_precondition(format!("{}: {err}", self.name))
        })
    }

    /// The same service ending `Metrics` streams whose client's certificate `revoked` lists.
    pub fn with_revoked(self, revoked: pvfs_tls::RevokedWatch) -> AgentService {
        AgentService { revoked: Some(revoked), ..self }
    }

    /// The same service counting its `Metrics` streams in `gauge` (and under its limit).
    pub fn with_metrics_streams(self, gauge: crate::limits::StreamGauge) -> AgentService {
        AgentService { metrics_streams: gauge, ..self }
    }
}

/// The certificate of a stream's client, checked against the revoked list as the stream goes.
struct StreamClient {
    revoked: pvfs_tls::RevokedWatch,
    /// Kept to word the refusal as `auth` does.
    leaf: Vec<u8>,
    serial: Option<pvfs_tls::Serial>,
}

impl StreamClient {
    fn new(revoked: pvfs_tls::RevokedWatch, leaf: &[u8]) -> StreamClient {
        StreamClient { revoked, leaf: leaf.to_vec(), serial: pvfs_tls::serial_of(leaf) }
    }

    /// `PERMISSION_DENIED` once the certificate is revoked, or the list cannot be read (fail
    /// closed, as `auth` does). The common case is a `stat` and a set lookup.
    fn check(&self) -> Result<(), Status> {
        let revoked = self.revoked.current().map_err(|why| {
            Status::permission_denied(format!(
                "this agent cannot read its list of revoked certificates ({why}); it refuses every request until the list is fixed"
            ))
        })?;
        if self.serial.as_ref().is_some_and(|serial| !revoked.contains(serial)) {
            return Ok(());
        }
        pvfs_tls::check_coordinator(&self.leaf, &revoked)
            .map_err(|refusal| Status::permission_denied(refusal.to_string()))
    }
}

#[tonic::async_trait]
impl pb::agent_server::Agent for AgentService {
    type MetricsStream = ReceiverStream<Result<pb::MetricsEvent, Status>>;
    type ApplyStream = UnboundedReceiverStream<Result<pb::ApplyEvent, Status>>;
    type BenchPhaseStream = ReceiverStream<Result<pb::BenchEvent, Status>>;
    type LaunchStream = ReceiverStream<Result<pb::LaunchEvent, Status>>;

    async fn launch(
        &self,
        request: Request<pb::LaunchRequest>,
    ) -> Result<Response<Self::LaunchStream>, Status> {
        let req = pvfs_proto::convert::bench::launch_request_from(request.into_inner())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        // Its room is checked once the job could start (IOR and mpirun found): `launch::run`.
        self.bench_dir(&req.dir)?;
        let guard = self.benching.clone().try_lock_owned().map_err(|_| {
            Status::aborted("another benchmark is running on this client; wait for it to finish")
        })?;
        let (tx, rx) = mpsc::channel(64);
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            let _guard = guard;
            crate::launch::run(req, tx, shutdown).await;
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn bench_phase(
        &self,
        request: Request<pb::BenchPhaseRequest>,
    ) -> Result<Response<Self::BenchPhaseStream>, Status> {
        use pvfs_bench::launch::Engine;
        use pvfs_engine::engine::Phase;
        let (req, start_at) = pvfs_proto::convert::bench::phase_request_from(request.into_inner())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        self.bench_dir(&req.dir)?;
        // The built-in engine's memory is known from the request: a phase this node cannot
        // hold is refused before anything starts.
        // (The wire conversion refused IOR and io500, which only mpirun runs: what is not fio
        // is ours.)
        let memory_max = match req.engine {
            Engine::Fio => 0,
            Engine::Builtin | Engine::Ior | Engine::Io500 => {
                crate::child::engine_memory(&req).map_err(|e| Status::failed_precondition(e.to_string()))?
            }
        };
        // A stonewalled write is sized to outlast its deadline (io500's 9.9 TB per task): the
        // engine watches its room as it goes (`pvfs_engine::child`'s guard) instead.
        if let (pvfs_bench::params::Workload::Ior(p), Phase::Ior(pvfs_engine::engine::IorPhase::Write)) =
            (&req.workload, req.phase)
            && p.deadline == 0
        {
            self.room(&req.dir, crate::room::ior_writes(p, req.tasks, req.total_tasks))?;
        }
        let guard = self.benching.clone().try_lock_owned().map_err(|_| {
            Status::aborted("another benchmark is running on this client; wait for it to finish")
        })?;
        let wait = match start_at {
            Some(at) => at.duration_since(std::time::SystemTime::now()).unwrap_or_default(),
            None => std::time::Duration::ZERO,
        };
        // Clients start a phase together at an instant the coordinator picks a moment ahead;
        // one minutes away is a clock far off or a confused caller.
        if wait > BENCH_START_LIMIT {
            return Err(Status::invalid_argument(format!(
                "asked to start in {}s; is this node's clock (or the coordinator's) off?",
                wait.as_secs()
            )));
        }
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let shutdown = self.shutdown.clone();
        let node = self.name.clone();
        // A share of a run with a wear-out: the engine says when its tasks reach the
        // stonewall, the stream tells the coordinator, and `bench_wear_out` brings the answer.
        let (said_tx, mut said) = mpsc::unbounded_channel();
        let most = pvfs_bench::request::wear_out_most(&req.workload, req.phase);
        let wear = match (most, req.engine) {
            (Some(most), Engine::Builtin) if req.tasks < req.total_tasks => {
                let (answer, answered) = tokio::sync::oneshot::channel();
                let slot = WearSlot { iteration: req.iteration, phase: req.phase, most, answer };
                *self.wear_out.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(slot);
                Some(crate::child::WearLink { said: said_tx, answer: answered })
            }
            _ => None,
        };
        let wear_slot = self.wear_out.clone();
        let job = crate::jobs::of_phase(&self.root, &req);
        tokio::spawn(async move {
            let _guard = guard;
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = shutdown.cancelled() => return,
            }
            let progress = Arc::new(pvfs_engine::engine::Progress::default());
            // Stops the built-in engine at its next transfer: the coordinator went away, or
            // the agent is stopping (a child of the shutdown token).
            let cancel = shutdown.child_token();
            let phase_name = req.phase.name();
            let mut work: PhaseWork = match (req.engine, req.phase) {
                (Engine::Fio, Phase::Ior(phase)) => Box::pin(async move {
                    run_fio(&req, phase).await.map_err(|e| Status::failed_precondition(e.to_string()))
                }),
                _ => {
                    let (progress, cancel) = (progress.clone(), cancel.clone());
                    // Its own process: its memory, threads and crashes are not the agent's.
                    let env = job.env.clone();
                    Box::pin(async move {
                        crate::child::run_engine(&node, &req, memory_max, progress, cancel, wear, env)
                            .await
                            .map_err(|e| {
                                use crate::child::EngineError;
                                match e {
                                    EngineError::Refused(why) => Status::failed_precondition(why),
                                    EngineError::OutOfMemory(why) => Status::resource_exhausted(why),
                                    EngineError::Died(why) => Status::internal(why),
                                }
                            })
                    })
                }
            };
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
            tick.tick().await;
            let done = loop {
                tokio::select! {
                    done = &mut work => break done,
                    Some(pairs) = said.recv() => {
                        let event = pb::bench_event::Event::Stonewalled(pb::BenchStonewalled { pairs });
                        let _ = tx.send(Ok(pb::BenchEvent { event: Some(event) })).await;
                    }
                    _ = tick.tick() => {
                        let _ = tx.try_send(Ok(progress_event(&progress)));
                        // The coordinator went away: the built-in engine stops at its next
                        // transfer (a write under way finishes). fio runs to its end.
                        if tx.is_closed() {
                            cancel.cancel();
                        }
                    }
                }
            };
            // The operations finished since the last tick, so the run's latency timeline has
            // every one (only when there are some: a phase's counters are in its result).
            if progress.recent.lock().is_ok_and(|r| r.count() > 0) {
                let _ = tx.send(Ok(progress_event(&progress))).await;
            }
            let message = done.map(|tasks| pb::BenchEvent {
                event: Some(pb::bench_event::Event::Done(pvfs_proto::convert::bench::phase_done_to(
                    &tasks, &job.id,
                ))),
            });
            if let Err(status) = &message {
                tracing::warn!(phase = phase_name, error = %status.message(), "benchmark phase failed");
            }
            // Whatever the phase's end, its wear-out waits for nothing any more.
            wear_slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
            let _ = tx.send(message).await;
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn bench_wear_out(
        &self,
        request: Request<pb::BenchWearOutRequest>,
    ) -> Result<Response<pb::BenchWearOutResponse>, Status> {
        let (iteration, phase, pairs) = pvfs_proto::convert::bench::wear_out_request_from(request.get_ref())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let mut slot = self.wear_out.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let waiting = match slot.as_ref() {
            Some(s) if s.iteration == iteration && s.phase == phase => s,
            _ => {
                return Err(Status::failed_precondition(format!(
                    "no {} of iteration {iteration} is waiting at a stonewall on this client",
                    phase.name()
                )));
            }
        };
        if pairs > waiting.most {
            return Err(Status::invalid_argument(format!(
                "{pairs} is more transfers or files than a task of this phase can make ({})",
                waiting.most
            )));
        }
        if let Some(waiting) = slot.take() {
            // The phase may have ended meanwhile: then nobody needs the answer.
            let _ = waiting.answer.send(pairs);
        }
        Ok(Response::new(pb::BenchWearOutResponse {}))
    }

    async fn drop_caches(
        &self,
        _request: Request<pb::DropCachesRequest>,
    ) -> Result<Response<pb::DropCachesResponse>, Status> {
        // Held for the drop: no phase starts meanwhile, and no drop disturbs one that runs
        // (nor do two drops run at once).
        let _guard = self.benching.clone().try_lock_owned().map_err(|_| {
            Status::aborted("a benchmark is running on this node; caches are dropped between phases")
        })?;
        let root = self.root.clone();
        let dropped = tokio::task::spawn_blocking(move || crate::caches::drop_caches(&root))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(Status::failed_precondition)?;
        tracing::info!(
            seconds = dropped.seconds,
            cached_before_kib = dropped.cached_before_kib,
            cached_after_kib = dropped.cached_after_kib,
            "caches dropped"
        );
        Ok(Response::new(pb::DropCachesResponse {
            seconds: dropped.seconds,
            cached_before_kib: dropped.cached_before_kib,
            cached_after_kib: dropped.cached_after_kib,
        }))
    }

    async fn apply(&self, request: Request<pb::ApplyRequest>) -> Result<Response<Self::ApplyStream>, Status> {
        let pb::ApplyRequest { steps, dry_run, after_changes, label, cluster_hosts } = request.into_inner();
        // Counted before anything is decoded: the checks below are linear, but a unit far
        // beyond any plan is a confused or hostile caller, not work.
        if steps.len() > MAX_STEPS_PER_UNIT {
            tracing::warn!(unit = %label, steps = steps.len(), limit = MAX_STEPS_PER_UNIT, "unit refused: too many steps");
            return Err(Status::invalid_argument(format!(
                "a unit of {} steps is more than this agent takes ({MAX_STEPS_PER_UNIT} steps per unit at most; \
                 pvfs's plans have tens): split the work into smaller units",
                steps.len()
            )));
        }
        // Stopping: the unit under way may finish, nothing new starts.
        if self.shutdown.is_cancelled() {
            return Err(Status::unavailable("this agent is stopping; run again once it is back"));
        }
        // Decoding and the policy (which looks at the node's paths) run on the blocking pool,
        // so that a large unit never holds one of the runtime's two worker threads (the
        // sampler's and every other caller's); at most `UNIT_CHECKS` at once, the rest waiting
        // here without a thread, so a burst of units cannot fill the blocking pool either.
        let permit = self
            .checking
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Status::unavailable("this agent is stopping; run again once it is back"))?;
        // Hosts a step names must be the cluster's own, as the request names them.
        let policy = Arc::new(self.policy.for_cluster(cluster_hosts));
        let (checker, root, unit) = (policy.clone(), self.root.clone(), label.clone());
        let checked = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let steps = pvfs_proto::convert::steps_from_wire(steps)
                .map_err(|e| Status::invalid_argument(e.to_string()))?;
            // The policy, before anything runs (dry runs too): a refused unit changes nothing,
            // and the refusal names the step, the rule and what to do. `run_unit` checks again.
            checker.check_unit_on(&steps, &root).map_err(|refused| {
                tracing::warn!(unit = %unit, step = refused.index, rule = refused.error.rule, value = %refused.error.value,
                    "unit refused by the agent's policy");
                Status::permission_denied(format!("the agent's policy refuses this unit: {refused}"))
            })?;
            Ok::<_, Status>(steps)
        })
        .await;
        let steps = match checked {
            Ok(checked) => checked?,
            Err(join) => {
                tracing::error!(unit = %label, error = %join, "checking a unit failed");
                return Err(Status::internal(format!(
                    "the agent failed while checking this unit ({join}); report it"
                )));
            }
        };
        let guard = self.converging.clone().try_lock_owned().map_err(|_| {
            Status::aborted("another `pvfsctl up` is converging this node right now; wait for it to finish, then run again")
        })?;
        // Unbounded on purpose: a unit's events are bounded by its steps and their commands
        // (a few dozen), and the steps must never wait on a slow reader mid-way.
        let (tx, rx) = mpsc::unbounded_channel();
        let host = pvfs_steps::NodeAccess::new(self.root.clone(), SystemRunner);
        let name = self.name.clone();
        let stopping = self.shutdown.clone();
        // Its own task, not the request's: if the coordinator goes away, the step under way
        // finishes (a half-made file system is worse than a finished one) and no other starts;
        // likewise when the agent is stopping, which waits for this task (tracked).
        self.units.spawn(async move {
            tracing::info!(node = %name, unit = %label, steps = steps.len(), dry_run, "converging");
            let closed = tx.clone();
            // The stream ends when its last sender goes. This one goes only after the lock
            // does, so a coordinator that sees the unit end and sends the node's next unit
            // (or a rerun) at once never finds the node still locked by this one.
            let ends_stream = tx.clone();
            let summary = pvfs_steps::run_unit(
                &steps,
                &host,
                policy.as_ref(),
                dry_run,
                after_changes,
                |event| {
                    if let pvfs_steps::StepEvent::Done {
                        index,
                        outcome: pvfs_steps::Outcome::Failed(f),
                        ..
                    } = &event
                    {
                        tracing::warn!(unit = %label, step = index, error = %f.message, "step failed");
                    }
                    let _ = tx.send(Ok(pb::ApplyEvent::from(&event)));
                },
                // The lock (`guard`) goes with this task: a gate whose caller left stops
                // waiting, so a vanished coordinator cannot keep the node locked.
                move || !closed.is_closed() && !stopping.is_cancelled(),
            )
            .await;
            tracing::info!(
                unit = %label,
                ok = summary.ok,
                changed = summary.changed,
                failed = summary.failed,
                skipped = summary.skipped,
                pending = summary.pending,
                "converged"
            );
            drop(guard);
            drop(ends_stream);
        });
        Ok(Response::new(UnboundedReceiverStream::new(rx)))
    }

    async fn metrics(
        &self,
        request: Request<pb::MetricsRequest>,
    ) -> Result<Response<Self::MetricsStream>, Status> {
        // Whose stream this is, to end it if the certificate is revoked while it runs.
        let client = match (&self.revoked, request.peer_certs()) {
            (Some(revoked), Some(certs)) => {
                certs.first().map(|leaf| StreamClient::new(revoked.clone(), leaf))
            }
            _ => None,
        };
        let pb::MetricsRequest { epoch, after_seq, since_unix_ns, processes } = request.into_inner();
        // Each stream is a task and a queue: without a limit, a client opening thousands of
        // them takes the agent's memory (HTTP/2 limits them per connection, this in all).
        let ticket = self.metrics_streams.enter().ok_or_else(|| {
            let limit = self.metrics_streams.limit();
            tracing::warn!(limit, "Metrics stream refused: the agent's stream limit is reached");
            Status::resource_exhausted(format!(
                "this agent already serves {limit} Metrics streams, its limit (each holds memory, so \
                 they are bounded); close followers that are not needed (pvfsctl serve, top) or wait \
                 for one to end"
            ))
        })?;
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let (history, shutdown) = (self.history.clone(), self.shutdown.clone());
        // Held as long as the stream: the sampler scans processes while any stream holds one.
        let processes = history.demand().ask(processes);
        // A task per stream, so the reader's pace never blocks the sampler: it reads the ring
        // by cursor and waits on the "new sample" signal when it has caught up. It ends when
        // its reader goes (the queue closes), freeing the stream's place (`ticket`) and its
        // request for processes.
        tokio::spawn(async move {
            let _ticket = ticket;
            let mut newest = history.subscribe();
            // No cursor: from the baseline for `since` (the newest sample before it), or from
            // the newest sample; the reader needs one sample before those it shows.
            let mut cursor = if epoch == 0 {
                let (epoch, last) = history.newest();
                let start = if since_unix_ns > 0 { history.seq_before(since_unix_ns) } else { last };
                (epoch, start.saturating_sub(1))
            } else {
                (epoch, after_seq)
            };
            loop {
                // Mark the current newest as seen *before* looking, so a sample pushed between
                // the look and the wait still wakes us.
                newest.borrow_and_update();
                let event = match history.next_after(cursor.0, cursor.1) {
                    Next::Sample(stamped) => {
                        cursor = (stamped.epoch, stamped.seq);
                        let mut sample = pb::Sample::from(&*stamped);
                        if let Some(fs) = history.fs(stamped.seq) {
                            pvfs_proto::convert::fs_to_wire(&fs, &mut sample);
                        }
                        if let Some(asked) = &processes
                            && let Some(held) = history.processes(stamped.seq)
                        {
                            // The sampler kept the top N of the largest N asked; this stream's
                            // own top is among them.
                            let top = pvfs_metrics::processes::top(&held, asked.n());
                            sample.processes = pvfs_proto::convert::processes_to_wire(&top);
                        }
                        pb::metrics_event::Event::Sample(sample)
                    }
                    Next::Gap { from, to } => {
                        cursor = (history.epoch(), to);
                        pb::metrics_event::Event::Gap(pb::Gap { from_seq: from, to_seq: to })
                    }
                    Next::Pending => {
                        tokio::select! {
                            () = shutdown.cancelled() => return,
                            () = tx.closed() => return,
                            changed = newest.changed() => if changed.is_err() { return },
                        }
                        continue;
                    }
                };
                // Once a second at most (a sample), one `stat` of the revoked list: a revocation
                // cuts the streams already open too, within a second.
                if let Some(client) = &client
                    && let Err(refused) = client.check()
                {
                    tracing::warn!(reason = %refused.message(), "Metrics stream ended: its certificate is no longer accepted");
                    let _ = tx.send(Err(refused)).await;
                    return;
                }
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    sent = tx.send(Ok(pb::MetricsEvent { event: Some(event) })) => if sent.is_err() { return },
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn info(&self, _request: Request<pb::InfoRequest>) -> Result<Response<pb::InfoResponse>, Status> {
        let facts = facts::read(&self.root, &SystemRunner).await.map_err(|err| {
            tracing::warn!(error = %err, "cannot read node facts");
            Status::internal(format!("cannot read node facts: {err}"))
        })?;
        let build = self
            .build
            .get_or_init(|| async {
                tokio::task::spawn_blocking(crate::build::Build::read).await.unwrap_or_else(|err| {
                    tracing::warn!(error = %err, "reading the agent's own executable failed");
                    crate::build::Build::default()
                })
            })
            .await
            .clone();
        let info = NodeInfo {
            agent_name: self.name.clone(),
            agent_version: crate::VERSION.to_owned(),
            agent_uptime_seconds: self.started.elapsed().as_secs(),
            agent_build: build.sha256,
            agent_executable: build.executable,
            facts,
        };
        Ok(Response::new(pb::InfoResponse { node: Some(info.into()) }))
    }

    async fn fault(&self, request: Request<pb::FaultRequest>) -> Result<Response<pb::FaultResponse>, Status> {
        // The address the request came in on: a cut without an interface takes that one's.
        let local = request.local_addr().map(|a| a.ip());
        let pb::FaultRequest { kill_brick, undo, cut_network, stop_service, heal_of } = request.into_inner();
        if self.shutdown.is_cancelled() {
            return Err(Status::unavailable("this agent is stopping; run again once it is back"));
        }
        if !heal_of.is_empty() {
            if kill_brick.is_some() || cut_network.is_some() || stop_service.is_some() || undo {
                return Err(Status::invalid_argument("heal_of asks a volume's heal, alone"));
            }
            return match crate::fault::heal_info(&SystemRunner, &self.policy, &heal_of).await {
                Ok((done, bricks)) => Ok(Response::new(pb::FaultResponse {
                    done,
                    at_unix_ns: crate::fault::unix_ns(std::time::SystemTime::now()),
                    heal: bricks
                        .into_iter()
                        .map(|b| pb::GlusterHeal {
                            brick: b.brick,
                            status: b.status,
                            pending: b.pending,
                            split_brain: b.split_brain,
                            possibly_healing: b.possibly_healing,
                            total: b.total,
                        })
                        .collect(),
                })),
                Err(crate::fault::FaultError::Refused(e)) => Err(Status::permission_denied(e.to_string())),
                Err(other) => Err(Status::failed_precondition(other.to_string())),
            };
        }
        let now = || crate::fault::unix_ns(std::time::SystemTime::now());
        let (what, done) = match (kill_brick, cut_network, stop_service) {
            (None, None, Some(pb::ServiceFault { unit })) => {
                let done = crate::fault::service(&self.root, &SystemRunner, &self.policy, &unit, undo).await;
                (format!("service {unit}"), done.map(|done| (done, now())))
            }
            (Some(pb::GlusterBrickFault { volume, path }), None, None) => {
                let what = format!("brick {volume}:{path}");
                let done = if undo {
                    crate::fault::restart_brick(&self.root, &SystemRunner, &self.policy, &volume, &path).await
                } else {
                    crate::fault::kill_brick(&self.root, &self.policy, &volume, &path).await
                };
                (what, done.map(|done| (done, now())))
            }
            (None, Some(pb::NetworkFault { interface, seconds }), None) => {
                let what = format!(
                    "network interface {}",
                    if interface.is_empty() { "(the request's)" } else { &interface }
                );
                let done = if undo {
                    self.cuts.restore(&self.policy, &interface, local).await.map(|r| {
                        let at = crate::fault::unix_ns(r.up_at);
                        (r.describe(), at)
                    })
                } else {
                    self.cuts
                        .cut(&self.root, &SystemRunner, &self.policy, &interface, local, seconds)
                        .map(|(interface, at)| {
                            (
                                format!(
                                    "cutting {interface} for {seconds} s; this agent brings it back up at the end of that"
                                ),
                                crate::fault::unix_ns(at),
                            )
                        })
                };
                (what, done)
            }
            _ => {
                return Err(Status::invalid_argument(
                    "a fault names one thing it does: kill_brick, cut_network or stop_service",
                ));
            }
        };
        match done {
            Ok((done, at_unix_ns)) => {
                tracing::warn!(fault = %what, undo, "{done}, as a benchmark's fault asked");
                Ok(Response::new(pb::FaultResponse { done, at_unix_ns, heal: Vec::new() }))
            }
            Err(err) => {
                tracing::warn!(fault = %what, undo, error = %err, "fault refused or failed");
                Err(match err {
                    crate::fault::FaultError::Refused(e) => Status::permission_denied(e.to_string()),
                    other => Status::failed_precondition(other.to_string()),
                })
            }
        }
    }

    async fn lustre_jobs(
        &self,
        request: Request<pb::LustreJobsRequest>,
    ) -> Result<Response<pb::LustreJobsResponse>, Status> {
        let pb::LustreJobsRequest { job_ids } = request.into_inner();
        crate::jobs::check_ids(&job_ids).map_err(Status::invalid_argument)?;
        let root = self.root.clone();
        // Reading a busy server's job_stats takes a while: off the runtime's threads.
        let (jobs, errors) = tokio::task::spawn_blocking(move || crate::jobs::on_targets(&root, &job_ids))
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        let jobs = jobs
            .into_iter()
            .map(|j| pb::LustreTargetJob {
                kind: j.kind,
                target: j.target,
                job_id: j.job_id,
                counters: j
                    .counters
                    .into_iter()
                    .map(|c| pb::LustreJobCounter {
                        name: c.name,
                        unit: c.units,
                        samples: c.samples,
                        sum: c.sum.unwrap_or_default(),
                    })
                    .collect(),
            })
            .collect();
        Ok(Response::new(pb::LustreJobsResponse { jobs, errors }))
    }

    async fn gluster_profile(
        &self,
        request: Request<pb::GlusterProfileRequest>,
    ) -> Result<Response<pb::GlusterProfileResponse>, Status> {
        use crate::profile::{Action, ProfileError};
        let pb::GlusterProfileRequest { volume, action } = request.into_inner();
        let action = match pb::gluster_profile_request::Action::try_from(action) {
            Ok(pb::gluster_profile_request::Action::Start) => Action::Start,
            Ok(pb::gluster_profile_request::Action::Info) => Action::Info,
            Ok(pb::gluster_profile_request::Action::Stop) => Action::Stop,
            _ => return Err(Status::invalid_argument("a profile request says START, INFO or STOP")),
        };
        if self.shutdown.is_cancelled() {
            return Err(Status::unavailable("this agent is stopping; run again once it is back"));
        }
        // The policy first, so a refusal names its rule wherever the agent runs.
        if let Err(refused) = self.policy.check_gluster_profile(&volume) {
            tracing::warn!(volume = %volume, rule = refused.rule, "gluster profile refused by the agent's policy");
            return Err(Status::permission_denied(refused.to_string()));
        }
        crate::fault::on_this_machine(&self.root, "profile the machine's volumes")
            .map_err(Status::failed_precondition)?;
        match crate::profile::profile(&SystemRunner, &self.policy, &volume, action).await {
            Ok(answer) => {
                if action != Action::Info {
                    tracing::info!(volume = %volume, "{}, as a benchmark with --gluster-profile asked", answer.done);
                }
                Ok(Response::new(pb::GlusterProfileResponse {
                    already_started: answer.already_started,
                    bricks: answer
                        .bricks
                        .into_iter()
                        .filter_map(|b| {
                            let s = b.interval?;
                            Some(pb::GlusterBrickProfile {
                                brick: b.brick,
                                duration_s: s.duration_s,
                                read_bytes: s.read_bytes,
                                write_bytes: s.write_bytes,
                                fops: s
                                    .fops
                                    .into_iter()
                                    .map(|f| pb::GlusterFop {
                                        name: f.name,
                                        hits: f.hits,
                                        avg_latency_ns: f.avg_latency_ns,
                                        min_latency_ns: f.min_latency_ns,
                                        max_latency_ns: f.max_latency_ns,
                                    })
                                    .collect(),
                            })
                        })
                        .collect(),
                    done: answer.done,
                }))
            }
            Err(ProfileError::Refused(e)) => {
                tracing::warn!(volume = %volume, rule = e.rule, "gluster profile refused by the agent's policy");
                Err(Status::permission_denied(e.to_string()))
            }
            Err(ProfileError::Failed(why)) => Err(Status::failed_precondition(why)),
        }
    }

    async fn reboot(
        &self,
        request: Request<pb::RebootRequest>,
    ) -> Result<Response<pb::RebootResponse>, Status> {
        let kernel = request.into_inner().kernel;
        if self.shutdown.is_cancelled() {
            return Err(Status::unavailable("this agent is stopping; run again once it is back"));
        }
        // Both locks, held until the node goes down: no unit or benchmark starts on a node
        // about to reboot, and none is cut off by it.
        let converging = self.converging.clone().try_lock_owned().map_err(|_| {
            Status::aborted("a unit is converging this node; pvfs reboots a node only between units")
        })?;
        let benching = self.benching.clone().try_lock_owned().map_err(|_| {
            Status::aborted("a benchmark is running on this node; reboot it once the run is over")
        })?;
        let prepared =
            reboot::prepare(&self.root, &SystemRunner, &self.policy, &kernel).await.map_err(|err| {
                tracing::warn!(kernel = %kernel, error = %err, "reboot refused");
                if err.is_refusal() {
                    Status::permission_denied(err.to_string())
                } else {
                    Status::failed_precondition(err.to_string())
                }
            })?;
        let boot_id = match prepared {
            reboot::Prepared::AlreadyRunning { boot_id } => {
                return Ok(Response::new(pb::RebootResponse { boot_id, already_running: true }));
            }
            reboot::Prepared::Ready { boot_id } => boot_id,
        };
        tracing::warn!(kernel = %kernel, "rebooting the node into the kernel, as the coordinator asked");
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(reboot::DELAY).await;
            let command = reboot::command();
            match SystemRunner.run_action(&command).await {
                // systemd is taking the node down and stops this agent on the way: keep the
                // node locked until then.
                Ok(output) if output.code == Some(0) => shutdown.cancelled().await,
                Ok(output) => {
                    tracing::error!(command = %command, code = ?output.code, stderr = %output.stderr.trim(),
                    "the node did not reboot; reboot it by hand")
                }
                Err(err) => {
                    tracing::error!(command = %command, error = %err, "the node did not reboot; reboot it by hand")
                }
            }
            drop((converging, benching));
        });
        Ok(Response::new(pb::RebootResponse { boot_id, already_running: false }))
    }
}
