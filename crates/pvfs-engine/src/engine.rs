//! The built-in engine: IOR's and mdtest's semantics for the parameters the seed uses, for
//! clusters where IOR is not installed. One thread per task, plain POSIX I/O (`pread`/`pwrite`,
//! O_DIRECT with aligned buffers, `fsync`), the same file names and offsets IOR uses, so
//! results are comparable with IOR's on the same file system.
//!
//! A run is phases (write, read; or mdtest's create, stat, …) with a barrier between them
//! across all clients: the coordinator starts each phase on every client at the same instant
//! and waits for all. A client runs its share of the tasks; each task reports when it started
//! (before open), when it ended (after close) and what it moved. Bandwidth is then, as IOR
//! computes it with barriers, total bytes / (last end − first start).

mod ior;
mod mdtest;
mod pattern;
mod shuffle;
mod stonewall;

pub use ior::{IorJob, Pace, remove_files, run_ior_phase, run_ior_phase_across};
pub use mdtest::{MdtestJob, run_mdtest_phase, run_mdtest_phase_across};
// The phases and totals are plain data, defined in the pure crate beside the schedule and the
// summary arithmetic that read them; `totals` below computes totals from task results.
pub use pvfs_bench::phase::{IorPhase, MdtestPhase, Phase};
pub use pvfs_bench::summary::{PhaseTotals, TaskResult};

use pvfs_bench::request::PhaseRequest;

use crate::files::FileError;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::time::SystemTime;

/// Why a phase, or one task of it, could not run. A task's error travels as its text (the
/// `error` of its [`TaskResult`], on the wire and in the results); a phase's is returned.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The workload is beyond a bound for the run's size.
    #[error(transparent)]
    Workload(#[from] pvfs_bench::params::Violation),
    /// A request whose tasks are not a share of the run's.
    #[error(transparent)]
    NotAShare(#[from] pvfs_bench::request::NotAShare),
    /// A job whose tasks run past the run's.
    #[error("tasks {tasks:?} of {total_tasks}: not a valid share")]
    InvalidShare { tasks: std::ops::Range<u32>, total_tasks: u32 },
    /// A phase of the other tool (an mdtest phase for an IOR workload, or the reverse).
    #[error("phase {phase:?} does not belong to this workload")]
    WrongPhase { phase: Phase },
    /// The test file's path has no directory to open.
    #[error("{}: no directory", path.display())]
    NoDirectory { path: PathBuf },
    /// The phase was cancelled: nobody waits for it any more (the coordinator went away).
    #[error("stopped: nobody is waiting for this phase any more")]
    Stopped,
    /// A stonewalled write was stopped before it filled its file system (see `child::RoomGuard`).
    #[error(
        "stopped: the file system of {} is down to {} free of {} (under {ROOM_MARGIN_PERCENT} %); a stonewalled \
         write ends at its deadline, not at its size, and this one would have filled it: use a shorter stonewall \
         (D, debug.stonewall-time) or smaller sizes",
        dir.display(),
        pvfs_bench::params::format_bytes(*.free),
        pvfs_bench::params::format_bytes(*.size)
    )]
    NoRoom { dir: PathBuf, free: u64, size: u64 },
    /// The transfer buffer could not be allocated (too large for this process, or no memory).
    #[error("cannot allocate a transfer buffer of {}: {why}", pvfs_bench::params::format_size(*.len))]
    Buffer { len: u64, why: String },
    /// A read or write of one transfer failed.
    #[error("{op} {len} bytes at offset {offset} of {}: {source}", path.display())]
    Transfer {
        op: &'static str,
        len: usize,
        offset: u64,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file or directory of the run refused or failed.
    #[error(transparent)]
    File(#[from] FileError),
    /// A task's thread panicked.
    #[error("the task's thread panicked")]
    Panicked { task: u32 },
    /// A task's thread could not be started (the process is out of threads or memory).
    #[error("cannot start a thread for task {task}: {source}")]
    Thread {
        task: u32,
        #[source]
        source: std::io::Error,
    },
    /// A find asked for outside a run that scans what its phases wrote.
    #[error("a find runs as io500's find phase (pvfsctl bench --preset io500), not as a workload of its own")]
    FindAlone,
    /// The IO500 asked of one machine's engine: its phases run across a cluster's clients.
    #[error(
        "the IO500 runs through pvfsctl bench on a cluster (its agents launcher), not on one machine's engine"
    )]
    Io500Alone,
    /// A task of the phase failed, with the error it reported.
    #[error("{error}")]
    TaskFailed { task: u32, error: String },
    /// A phase that ran no task, so has no totals.
    #[error("no task ran")]
    NoTask,
    /// Wear-out asked of a share of a run with nothing to agree with the others through (the
    /// agent's engine child and the mpi ranks are given one; a caller of the library may not be).
    #[error(
        "a stonewall's wear-out (IOR's stoneWallingWearOut, mdtest's -W) needs every task of the run to agree on a count; this process runs {tasks} of {total_tasks} tasks and has no way to ask the others: run it through the agents or mpi launcher, or without it"
    )]
    WearOutAcrossClients { tasks: u32, total_tasks: u32 },
    /// Files read back (mdtest's `-X`) that are not what their writer wrote.
    #[error(
        "{mismatches} files read back differ from what task {writer} wrote in them (the first: {}); the file system returned other data than was written",
        first.display()
    )]
    Verify { mismatches: u64, writer: u32, first: PathBuf },
    /// Transfers read back (IOR's `-R`) that are not what their writer wrote.
    #[error(
        "{mismatches} of {transfers} transfers read back from {} differ from what task {writer} wrote (the first at offset {offset}); the file system returned other data than was written",
        path.display()
    )]
    VerifyTransfers { mismatches: u64, transfers: u64, path: PathBuf, writer: u32, offset: u64 },
    /// The run's most transfers could not be learned at the stonewall.
    #[error("the stonewall's wear-out could not agree on a count: {error}")]
    WearOut { error: String },
}

/// Runs `run` for every task, one thread each, and returns their results in task order. A task
/// whose thread could not be started (the process is out of threads or memory) or panicked is
/// reported as a failed task rather than taking the phase, or the process, down. Each thread is
/// named `name` (a Lustre client tags its I/O with its thread's name when `jobid_var` is
/// `procname_uid`), or `task N` without one.
///
/// No task begins before every task's thread is running and ready: each calls [`Ready::wait`]
/// once its own preparation is done (its buffer, its offsets), just before its clock starts,
/// and they meet there ([`Gate`]), as IOR's and mdtest's ranks meet at an `MPI_Barrier` right
/// before each phase's timers. Without it the first task's start, which a phase's time is
/// counted from, would be a thread start or a buffer's allocation ahead of the last task's —
/// most of a phase as short as mdtest's tree creation of one directory, or of IOR's `open(s)`.
/// A task that returns without waiting (it failed first) arrives as it ends.
fn each_task(
    tasks: std::ops::Range<u32>,
    name: Option<&str>,
    run: impl Fn(u32, &Ready<'_>) -> TaskResult + Sync,
) -> Vec<TaskResult> {
    let run = &run;
    let gate = Gate::default();
    let gate = &gate;
    std::thread::scope(|scope| {
        let handles: Vec<_> = tasks
            .clone()
            .map(|task| {
                std::thread::Builder::new()
                    .name(name.map_or_else(|| format!("task {task}"), str::to_owned))
                    .spawn_scoped(scope, move || {
                        // A task that ends without waiting, by an error or a panic, arrives as
                        // its `Ready` drops.
                        let ready = Ready { gate, arrived: std::cell::Cell::new(false) };
                        run(task, &ready)
                    })
            })
            .collect();
        // Every thread that could be started is: the tasks begin together once all are there.
        gate.open(handles.iter().filter(|h| h.is_ok()).count());
        handles
            .into_iter()
            .zip(tasks)
            .map(|(handle, task)| match handle {
                Ok(handle) => handle.join().unwrap_or_else(|_| failed(task, &EngineError::Panicked { task })),
                Err(source) => failed(task, &EngineError::Thread { task, source }),
            })
            .collect()
    })
}

/// A task's place at the start line ([`each_task`]).
pub(crate) struct Ready<'g> {
    gate: &'g Gate,
    arrived: std::cell::Cell<bool>,
}

impl Ready<'_> {
    /// Arrives at the start line and waits for every other task there; once only (later calls
    /// return at once).
    pub(crate) fn wait(&self) {
        if !self.arrived.replace(true) {
            self.gate.arrive();
            self.gate.wait();
        }
    }
}

impl Drop for Ready<'_> {
    /// A task that never waited (it failed, or panicked, before its start) arrives as it ends,
    /// without waiting: the others must not wait for it for ever.
    fn drop(&mut self) {
        if !self.arrived.replace(true) {
            self.gate.arrive();
        }
    }
}

/// The tasks' start line, a barrier: no task passes until every task's thread that could be
/// started is running and has arrived.
///
/// A task that has arrived polls for the gate to open before it sleeps, as Open MPI's
/// shared-memory `MPI_Barrier` polls: a condition variable wakes its sleepers one after another,
/// tens of microseconds apart each on a 2-core machine, and that skew between the tasks' starts
/// was in every phase's time — IOR's `open(s)` column, a read's open of 2 tasks measured at 5×
/// IOR's (`xtask bench-engine --against ior`). The polling yields the CPU between looks, so the
/// threads still being started are not held up, and gives up after [`Gate::POLL`].
#[derive(Default)]
struct Gate {
    /// Threads arrived, and how many were started (once the spawning thread knows).
    state: std::sync::Mutex<(usize, Option<usize>)>,
    changed: std::sync::Condvar,
    /// Set, under the lock, once every started thread has arrived: what the pollers look at.
    passed: std::sync::atomic::AtomicBool,
}

impl Gate {
    /// How long an arrived task polls before it sleeps: past any phase's thread starts (about
    /// 50 µs each), short beside any phase.
    const POLL: std::time::Duration = std::time::Duration::from_millis(20);

    /// One more task is here.
    fn arrive(&self) {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.0 += 1;
        self.pass_if_all_here(&state);
    }

    /// Waits for every started task to have arrived.
    fn wait(&self) {
        let until = std::time::Instant::now() + Self::POLL;
        while std::time::Instant::now() < until {
            if self.passed.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            std::thread::yield_now();
        }
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while state.1.is_none_or(|started| state.0 < started) {
            state = self.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// `started` threads were started: they pass once all have arrived.
    fn open(&self, started: usize) {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.1 = Some(started);
        self.pass_if_all_here(&state);
    }

    /// Opens the gate when every started thread is here (the lock held).
    fn pass_if_all_here(&self, state: &(usize, Option<usize>)) {
        if state.1.is_some_and(|started| state.0 >= started) {
            self.passed.store(true, std::sync::atomic::Ordering::Release);
            self.changed.notify_all();
        }
    }
}

/// A task that did nothing and why (its error as the text a task result carries).
fn failed(task: u32, error: &EngineError) -> TaskResult {
    let now = SystemTime::now();
    TaskResult { error: Some(error.to_string()), ..TaskResult::begun(task, now) }
}

/// Live counters a phase updates as it goes, read once a second for `--watch`, and the flag
/// that stops it early.
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes: AtomicU64,
    pub ops: AtomicU64,
    /// Set when nobody waits for the phase any more (the coordinator went away): every task
    /// stops at its next transfer or item instead of loading the file system for nothing.
    pub cancelled: std::sync::atomic::AtomicBool,
    /// The operations every task finished since the last report took, for the run's latency
    /// second by second; each task hands its own on every [`HAND_EVERY`] ([`TaskLatency`]).
    pub recent: std::sync::Mutex<pvfs_bench::latency::Recorder>,
}

impl Progress {
    /// The operations finished since the last call, as histogram buckets (empty when none).
    pub fn take_recent(&self) -> Vec<(u64, u64)> {
        match self.recent.lock() {
            Ok(mut recent) if recent.count() > 0 => recent.take().buckets(),
            _ => Vec::new(),
        }
    }

    /// An error once the phase is cancelled; tasks check it before each transfer or item.
    pub fn check(&self) -> Result<(), EngineError> {
        if self.cancelled.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(EngineError::Stopped);
        }
        Ok(())
    }
}

/// How often a task hands its recent operations' times to [`Progress::recent`]: a lock taken
/// ten times a second per task, not once per operation, and a report never more than this
/// behind.
pub const HAND_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// A task's operation times: the phase's whole histogram (its result's `latency`), and the
/// ones since it last handed them on for the per-second timeline.
#[derive(Debug)]
pub struct TaskLatency {
    /// False when nothing is timed (`IorJob::timed`).
    timed: bool,
    whole: pvfs_bench::latency::Recorder,
    recent: pvfs_bench::latency::Recorder,
    handed: std::time::Instant,
}

impl TaskLatency {
    pub fn new(timed: bool) -> TaskLatency {
        TaskLatency {
            timed,
            whole: pvfs_bench::latency::Recorder::new(),
            recent: pvfs_bench::latency::Recorder::new(),
            handed: std::time::Instant::now(),
        }
    }

    /// An operation begins: now, when timed.
    pub fn begin(&self) -> Option<std::time::Instant> {
        self.timed.then(std::time::Instant::now)
    }

    /// An operation, begun at `since`, ends now (nothing when untimed).
    pub fn record(&mut self, since: Option<std::time::Instant>, progress: &Progress) {
        let Some(since) = since else { return };
        // One clock read for both the operation's time and the hand-over's.
        let now = std::time::Instant::now();
        let ns = u64::try_from(now.saturating_duration_since(since).as_nanos()).unwrap_or(u64::MAX);
        self.whole.record(ns);
        self.recent.record(ns);
        if now.saturating_duration_since(self.handed) >= HAND_EVERY {
            self.hand(progress, now);
        }
    }

    fn hand(&mut self, progress: &Progress, now: std::time::Instant) {
        self.handed = now;
        if self.recent.count() == 0 {
            return;
        }
        if let Ok(mut shared) = progress.recent.lock() {
            shared.add(&self.recent);
        }
        self.recent.reset();
    }

    /// The task is over: what it has not handed on yet goes, and the whole histogram is its
    /// result's.
    pub fn finish(mut self, progress: &Progress) -> Vec<(u64, u64)> {
        self.hand(progress, std::time::Instant::now());
        self.whole.buckets()
    }
}

/// What a write must leave free of its file system, in percent of its size (the agent's up-front
/// check and the engine's watch of a stonewalled write use the same figure).
pub const ROOM_MARGIN_PERCENT: u64 = 5;

/// Runs `phase` while a thread hands `progress` to `report` every `every` (the engine's tasks
/// update it as they go). The reporting thread ends with the phase.
pub fn with_progress<T>(
    progress: &Progress,
    every: std::time::Duration,
    report: &(dyn Fn(&Progress) + Sync),
    phase: impl FnOnce() -> T,
) -> T {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut last = std::time::Instant::now();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(50));
                if last.elapsed() >= every {
                    last = std::time::Instant::now();
                    report(progress);
                }
            }
        });
        let out = phase();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        out
    })
}

/// Totals of a phase from every task's result (`None` when there are none).
///
/// mdtest's tree rows count one tree, whatever `-u` makes: its rate is `num_dirs_in_tree`
/// over the time from the barrier before to the barrier after, though with `-u` every task
/// built its own tree in that time. So a tree phase counts the first task's directories.
pub fn totals(phase: Phase, results: &[TaskResult]) -> Option<PhaseTotals> {
    let start = results.iter().map(|r| r.start).min()?;
    let end = results.iter().map(|r| r.end).max()?;
    let seconds = end.duration_since(start).unwrap_or_default().as_secs_f64().max(1e-9);
    let bytes: u64 = results.iter().map(|r| r.bytes).sum();
    let ops: u64 = match phase {
        Phase::Mdtest(MdtestPhase::TreeCreate | MdtestPhase::TreeRemove) => {
            results.iter().min_by_key(|r| r.task).map_or(0, |r| r.ops)
        }
        _ => results.iter().map(|r| r.ops).sum(),
    };
    // IOR's timers, reduced as IOR reduces them: each span from the earliest start to the
    // latest stop over the tasks. Only when every task has them (a failed task has none).
    // Per task: [open, read/write start, read/write end, close end].
    let timers: Option<Vec<[SystemTime; 4]>> =
        results.iter().map(|r| r.rdwr.map(|(a, b)| [r.start, a, b, r.end])).collect();
    let span = |from: usize, to: usize| {
        let timers = timers.as_ref()?;
        let first = timers.iter().map(|t| t[from]).min()?;
        let last = timers.iter().map(|t| t[to]).max()?;
        Some(last.duration_since(first).unwrap_or_default().as_secs_f64())
    };
    let latency_s = results.iter().min_by_key(|r| r.task).and_then(|r| {
        let (a, b) = r.rdwr?;
        (r.ops > 0).then(|| b.duration_since(a).unwrap_or_default().as_secs_f64() / r.ops as f64)
    });
    Some(PhaseTotals {
        bytes,
        ops,
        seconds,
        bw_mib: bytes as f64 / (1u64 << 20) as f64 / seconds,
        ops_per_sec: ops as f64 / seconds,
        open_s: span(0, 1),
        wrrd_s: span(1, 2),
        close_s: span(2, 3),
        latency_s,
    })
}

#[cfg(test)]
mod tests;

/// The test seam's pace for this process's IOR phases ([`IorJob::pace`]), set once by the
/// engine child of a debug build from its environment; never set in a release build.
pub static TEST_PACE: std::sync::OnceLock<Pace> = std::sync::OnceLock::new();

/// How a client's most transfers at a stonewall become the run's most: asked of whatever
/// joins this client to the others (the agent, and through it the coordinator).
pub type Across<'a> = &'a (dyn Fn(u64) -> Result<u64, EngineError> + Sync);

/// Runs one phase on this client, after checking the workload against the run's size and
/// making the run's directory (without following symlinks) when the phase starts the run. A
/// workload that does not match the phase is an error.
pub fn run_phase(req: &PhaseRequest, progress: &Progress) -> Result<Vec<TaskResult>, EngineError> {
    run_phase_across(req, progress, None)
}

/// [`run_phase`] for a client that can agree a wear-out with the others through `across`.
pub fn run_phase_across(
    req: &PhaseRequest,
    progress: &Progress,
    across: Option<Across<'_>>,
) -> Result<Vec<TaskResult>, EngineError> {
    req.workload.check_run(req.total_tasks)?;
    let tasks = req.task_range()?;
    if req.creates_dir() {
        crate::files::Dir::create_all(&req.dir)?;
    }
    match (&req.workload, req.phase) {
        (pvfs_bench::params::Workload::Ior(params), phase @ (Phase::Ior(_) | Phase::IorCleanup)) => {
            let job = IorJob {
                params: params.clone(),
                base: req.dir.join("ior"),
                tasks,
                total_tasks: req.total_tasks,
                tasks_per_client: req.tasks_per_client,
                iteration: req.iteration,
                stop_after: req.stop_after,
                pace: TEST_PACE.get().copied(),
                timed: true,
                thread_name: req.job_tag.clone(),
            };
            match phase {
                Phase::Ior(p) => Ok(run_ior_phase_across(&job, p, progress, across)),
                _ => remove_files(&job).map(|()| Vec::new()),
            }
        }
        (pvfs_bench::params::Workload::Mdtest(params), Phase::Mdtest(phase)) => {
            let job = MdtestJob {
                params: params.clone(),
                dir: req.dir.clone(),
                tasks,
                total_tasks: req.total_tasks,
                iteration: req.iteration,
                stop_after: req.stop_after,
                pace: TEST_PACE.get().copied(),
                thread_name: req.job_tag.clone(),
            };
            Ok(run_mdtest_phase_across(&job, phase, progress, across))
        }
        (pvfs_bench::params::Workload::Find(params), Phase::Find) => {
            // pfind's ranks share one scan: this client's tasks are its threads, and one result
            // stands for them all (the files it scanned as its operations).
            let start = SystemTime::now();
            // Each client scans its share of the directories (see `find::Share`).
            let per_client = req.tasks_per_client.max(1);
            let share = crate::find::Share {
                index: req.first_task / per_client,
                of: req.total_tasks.div_ceil(per_client),
            };
            let counts = crate::find::find(&req.dir, params, tasks.len(), share, progress);
            let mut result = TaskResult::begun(tasks.start, start);
            result.end = SystemTime::now();
            match counts {
                Ok(counts) => (result.ops, result.found) = (counts.total, counts.found),
                Err(err) => result.error = Some(err.to_string()),
            }
            Ok(vec![result])
        }
        (_, phase) => Err(EngineError::WrongPhase { phase }),
    }
}
