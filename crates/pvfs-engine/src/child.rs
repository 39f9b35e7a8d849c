//! The built-in engine as a child process of the agent: `pvfs-agent engine-phase …` runs one
//! phase of one client's tasks and reports on standard output, one JSON object per line, as
//! `engine --mpi` does for a rank. Its memory, its threads and its crashes are its own: the
//! agent reads its lines, and an engine killed by the OOM killer or dead of a panic ends the
//! phase with an error while the agent goes on serving.
//!
//! The request travels as arguments ([`phase_args`]), parsed back and checked again by the
//! child, so `ps` shows what a phase is doing. The child stops at its next transfer or item
//! once its standard input closes: the agent closes it when the coordinator goes away, and
//! the kernel closes it if the agent dies.

use crate::engine::{self, Progress, TaskResult};
use crate::mpi::{span_from_ns, span_to_ns, unix_ns};
use pvfs_bench::request::PhaseRequest;
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::time::{Duration, UNIX_EPOCH};

/// How often the child reports progress: twice per agent tick, so the coordinator's
/// per-second view is never more than a tick behind.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// The longest line the child prints (a task's line with its latency histogram is the
/// longest: at most 128 buckets per power of two of nanoseconds, ~20 bytes each, so under
/// 128 KiB for the whole range of a u64); the agent refuses anything longer rather than
/// buffer it.
pub const MAX_LINE: usize = 256 << 10;

/// One task's result as a line carries it: the engine child's `task` lines and the MPI ranks'
/// `phase` lines both hold one, so a task's result has one line form, read back by one
/// conversion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskLine {
    pub task: u32,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub bytes: u64,
    pub ops: u64,
    pub error: Option<String>,
    /// The read/write span, when there is one (IOR phases).
    #[serde(default)]
    pub rdwr_unix_ns: Option<(u64, u64)>,
    /// Each transfer's or operation's time, as histogram buckets (`pvfs_bench::latency`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency: Vec<(u64, u64)>,
    /// Files found (a find).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub found: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl From<&TaskResult> for TaskLine {
    /// An error is cut to half of [`MAX_LINE`], so a line is never refused for its length.
    fn from(r: &TaskResult) -> TaskLine {
        TaskLine {
            task: r.task,
            start_unix_ns: unix_ns(r.start),
            end_unix_ns: unix_ns(r.end),
            bytes: r.bytes,
            ops: r.ops,
            error: r.error.as_deref().map(|e| truncate(e, MAX_LINE / 2)),
            rdwr_unix_ns: span_to_ns(r.rdwr),
            latency: r.latency.clone(),
            found: r.found,
        }
    }
}

impl From<&TaskLine> for TaskResult {
    fn from(t: &TaskLine) -> TaskResult {
        TaskResult {
            task: t.task,
            start: UNIX_EPOCH + Duration::from_nanos(t.start_unix_ns),
            end: UNIX_EPOCH + Duration::from_nanos(t.end_unix_ns),
            bytes: t.bytes,
            ops: t.ops,
            error: t.error.clone(),
            rdwr: span_from_ns(t.rdwr_unix_ns),
            latency: t.latency.clone(),
            found: t.found,
        }
    }
}

/// What the engine child prints, one JSON object per line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "pvfs_phase_event", rename_all = "snake_case")]
pub enum PhaseLine {
    /// What this client's tasks moved so far in the phase, and the times of the operations
    /// they finished since the last such line (histogram buckets, `pvfs_bench::latency`).
    Progress {
        bytes: u64,
        ops: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        recent: Vec<(u64, u64)>,
    },
    /// One task's result.
    Task(TaskLine),
    /// The phase could not run at all (a bad request, its directory): no task lines follow.
    Failed { error: String },
    /// Every task of this client reached the stonewall; `pairs` is the most transfers any of
    /// them made. The engine then waits for a [`WearOutLine`] on its standard input.
    Stonewalled { pairs: u64 },
    /// Every task's line has been printed.
    Done,
}

impl PhaseLine {
    /// A line of the child's output, if it is one of ours.
    pub fn parse(line: &str) -> Option<PhaseLine> {
        let line = line.trim();
        if !line.starts_with('{') || !line.contains("pvfs_phase_event") {
            return None;
        }
        serde_json::from_str(line).ok()
    }

    /// The task result a `Task` line carries.
    pub fn task_result(&self) -> Option<TaskResult> {
        match self {
            PhaseLine::Task(task) => Some(task.into()),
            _ => None,
        }
    }
}

/// What the agent writes on the engine child's standard input after a
/// [`PhaseLine::Stonewalled`]: the most transfers any task of the run made, which every task
/// of this client goes on to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WearOutLine {
    pub wear_out: u64,
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// The arguments after the program for `pvfs-agent engine-phase` running `req`.
pub fn phase_args(req: &PhaseRequest) -> Vec<String> {
    let tool = req.workload.tool();
    let mut args: Vec<String> = vec!["engine-phase".into(), "--dir".into(), req.dir.display().to_string()];
    for (flag, value) in [
        ("--phase", req.phase.name().to_owned()),
        ("--iteration", req.iteration.to_string()),
        ("--first-task", req.first_task.to_string()),
        ("--tasks", req.tasks.to_string()),
        ("--total-tasks", req.total_tasks.to_string()),
        ("--tasks-per-client", req.tasks_per_client.to_string()),
        ("--preset", tool.to_owned()),
    ] {
        args.extend([flag.to_owned(), value]);
    }
    if let Some(n) = req.stop_after {
        args.extend(["--stop-after".to_owned(), n.to_string()]);
    }
    if let Some(tag) = &req.job_tag {
        args.extend(["--job-tag".to_owned(), tag.clone()]);
    }
    for (key, value) in req.workload.settings() {
        args.extend(["--set".to_owned(), format!("{key}={value}")]);
    }
    args
}

/// Runs `req` (the built-in engine's phase) and hands every line to `emit`: progress every
/// [`PROGRESS_EVERY`], then a line per task and `Done`, or `Failed`; at a wear-out's stonewall,
/// `Stonewalled`, after which `answer` waits for the run's most. Returns whether the phase ran
/// (task errors included).
pub fn run(
    req: &PhaseRequest,
    progress: &Progress,
    emit: &(dyn Fn(&PhaseLine) + Sync),
    answer: &(dyn Fn() -> Result<u64, engine::EngineError> + Sync),
) -> bool {
    run_with(req, progress, emit, answer, engine::ROOM_MARGIN_PERCENT)
}

/// [`run`], a stonewalled write stopped when less than `margin` percent of its file system is
/// free (a test asks for 100 %, which no file system has).
fn run_with(
    req: &PhaseRequest,
    progress: &Progress,
    emit: &(dyn Fn(&PhaseLine) + Sync),
    answer: &(dyn Fn() -> Result<u64, engine::EngineError> + Sync),
    margin: u64,
) -> bool {
    let guard = RoomGuard::of(req, margin);
    let report = |p: &Progress| {
        if let Some(guard) = &guard {
            guard.watch(p);
        }
        emit(&PhaseLine::Progress {
            bytes: p.bytes.load(Ordering::Relaxed),
            ops: p.ops.load(Ordering::Relaxed),
            recent: p.take_recent(),
        })
    };
    let across = |pairs: u64| {
        emit(&PhaseLine::Stonewalled { pairs });
        answer()
    };
    let outcome = engine::with_progress(progress, PROGRESS_EVERY, &report, || {
        engine::run_phase_across(req, progress, Some(&across))
    });
    match outcome {
        Ok(mut results) => {
            report(progress);
            // A task stopped for room says so, not that nobody waited.
            let full = guard
                .as_ref()
                .and_then(|g| g.stopped.lock().ok().and_then(|s| s.as_ref().map(ToString::to_string)));
            if let Some(full) = full {
                let stopped = engine::EngineError::Stopped.to_string();
                for r in results.iter_mut().filter(|r| r.error.as_deref() == Some(stopped.as_str())) {
                    r.error = Some(full.clone());
                }
            }
            results.iter().for_each(|r| emit(&PhaseLine::Task(r.into())));
            emit(&PhaseLine::Done);
            true
        }
        Err(error) => {
            // A write stopped for room says so, not that nobody waited.
            let error = match (error, guard.and_then(|g| g.stopped.into_inner().ok().flatten())) {
                (engine::EngineError::Stopped, Some(full)) => full,
                (error, _) => error,
            };
            emit(&PhaseLine::Failed { error: truncate(&error.to_string(), MAX_LINE / 2) });
            false
        }
    }
}

/// The watch over a stonewalled IOR write's file system. Such a write is sized to outlast its
/// deadline (io500's 9,920,000 MiB per task), so the agent does not refuse it up front for
/// room; instead, every progress tick, the room left is read (`statfs`, what unprivileged
/// writers may use) and the phase stopped when it falls under [`engine::ROOM_MARGIN_PERCENT`].
struct RoomGuard {
    dir: std::path::PathBuf,
    margin: u64,
    stopped: std::sync::Mutex<Option<engine::EngineError>>,
}

impl RoomGuard {
    fn of(req: &PhaseRequest, margin: u64) -> Option<RoomGuard> {
        let pvfs_bench::params::Workload::Ior(p) = &req.workload else { return None };
        let write = req.phase == engine::Phase::Ior(engine::IorPhase::Write);
        (write && p.deadline > 0).then(|| RoomGuard {
            dir: req.dir.clone(),
            margin,
            stopped: std::sync::Mutex::new(None),
        })
    }

    fn watch(&self, progress: &Progress) {
        let Ok(stat) = nix::sys::statfs::statfs(&self.dir) else { return };
        let block = u64::try_from(stat.block_size()).unwrap_or(0);
        let (free, size) =
            (stat.blocks_available().saturating_mul(block), stat.blocks().saturating_mul(block));
        if u128::from(free) * 100 < u128::from(size) * u128::from(self.margin) {
            if let Ok(mut stopped) = self.stopped.lock() {
                stopped.get_or_insert(engine::EngineError::NoRoom { dir: self.dir.clone(), free, size });
            }
            progress.cancelled.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{IorPhase, MdtestPhase, Phase};
    use pvfs_bench::launch::Engine;
    use pvfs_bench::params::Preset;
    use std::sync::Mutex;

    fn no_answer() -> Result<u64, engine::EngineError> {
        Err(engine::EngineError::Stopped)
    }

    fn request(dir: &std::path::Path, phase: Phase) -> PhaseRequest {
        let mut workload = Preset::Throughput.workload();
        workload.set_all([("t", "64k"), ("b", "256k"), ("B", "false"), ("i", "2")]).unwrap();
        PhaseRequest {
            job_tag: None,
            stop_after: None,
            engine: Engine::Builtin,
            workload,
            dir: dir.to_owned(),
            first_task: 2,
            tasks: 2,
            total_tasks: 4,
            tasks_per_client: 2,
            iteration: 1,
            phase,
        }
    }

    /// A stonewalled write is stopped when its file system runs short of room, and says so
    /// (a margin of 100 %, which no file system has, stands for a file system filling up).
    #[test]
    fn a_stonewalled_write_short_of_room_is_stopped_saying_why() {
        let tmp = tempfile::tempdir().unwrap();
        let mut req = request(&tmp.path().join("pvfs-bench/run"), Phase::Ior(IorPhase::Write));
        // Sized to outlast its deadline, as io500's are; the watch stops it first.
        req.workload.set_all([("t", "1m"), ("b", "64g"), ("D", "60"), ("i", "1")]).unwrap();
        req.tasks = 1;
        let lines = Mutex::new(Vec::new());
        let emit = |l: &PhaseLine| lines.lock().unwrap().push(serde_json::to_string(l).unwrap());
        let started = std::time::Instant::now();
        assert!(run_with(&req, &Progress::default(), &emit, &no_answer, 100));
        let lines = lines.into_inner().unwrap();
        let failed = lines.iter().find(|l| l.contains("is down to")).unwrap_or_else(|| panic!("{lines:?}"));
        assert!(
            failed.contains("is down to") && failed.contains("a stonewalled write ends at its deadline"),
            "{failed}"
        );
        assert!(started.elapsed() < Duration::from_secs(60), "stopped by the watch, not the deadline");
        // The same write with room to spare is not stopped by the watch: the deadline ends it.
        req.workload.set_all([("b", "8m"), ("D", "1")]).unwrap();
        assert!(run_with(&req, &Progress::default(), &|_| {}, &no_answer, 0));
    }

    #[test]
    fn a_phase_is_reported_as_lines_that_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let req = request(&tmp.path().join("pvfs-bench/run"), Phase::Ior(IorPhase::Write));
        let lines = Mutex::new(Vec::new());
        let emit = |l: &PhaseLine| lines.lock().unwrap().push(serde_json::to_string(l).unwrap());
        assert!(run(&req, &Progress::default(), &emit, &no_answer));
        let lines: Vec<PhaseLine> =
            lines.into_inner().unwrap().iter().map(|l| PhaseLine::parse(l).unwrap()).collect();
        assert_eq!(lines.last(), Some(&PhaseLine::Done));
        let tasks: Vec<TaskResult> = lines.iter().filter_map(PhaseLine::task_result).collect();
        assert_eq!(
            tasks.iter().map(|t| (t.task, t.bytes, t.ops)).collect::<Vec<_>>(),
            [(2, 262144, 4), (3, 262144, 4)]
        );
        assert!(tmp.path().join("pvfs-bench/run/ior.00000003").exists(), "the phase made its directory");
        assert_eq!(PhaseLine::parse("[warn] something else"), None);
    }

    /// The progress lines carry every operation's time exactly once, as the phase's task
    /// lines do: the run's per-second latency adds up to its whole.
    #[test]
    fn progress_lines_carry_every_operations_time_once() {
        let tmp = tempfile::tempdir().unwrap();
        let mut req = request(&tmp.path().join("pvfs-bench/run"), Phase::Ior(IorPhase::Write));
        req.workload.set_all([("t", "4k"), ("b", "4m")]).unwrap();
        let lines = Mutex::new(Vec::new());
        let emit = |l: &PhaseLine| lines.lock().unwrap().push(serde_json::to_string(l).unwrap());
        assert!(run(&req, &Progress::default(), &emit, &no_answer));
        let lines: Vec<PhaseLine> =
            lines.into_inner().unwrap().iter().map(|l| PhaseLine::parse(l).unwrap()).collect();
        let recent: Vec<&[(u64, u64)]> = lines
            .iter()
            .filter_map(|l| match l {
                PhaseLine::Progress { recent, .. } => Some(recent.as_slice()),
                _ => None,
            })
            .collect();
        let tasks: Vec<TaskResult> = lines.iter().filter_map(PhaseLine::task_result).collect();
        let whole = pvfs_bench::latency::merge(tasks.iter().map(|t| t.latency.as_slice()));
        let seconds = pvfs_bench::latency::merge(recent);
        assert_eq!(whole.count(), 2 * 1024, "two tasks of 1024 transfers");
        assert_eq!(seconds.buckets(), whole.buckets(), "the same operations, the same times");
    }

    #[test]
    fn a_phase_that_cannot_run_says_why_in_one_line() {
        let tmp = tempfile::tempdir().unwrap();
        let mut req = request(&tmp.path().join("run"), Phase::Mdtest(MdtestPhase::FileStat));
        let lines = Mutex::new(Vec::new());
        let emit = |l: &PhaseLine| lines.lock().unwrap().push(l.clone());
        assert!(!run(&req, &Progress::default(), &emit, &no_answer));
        let lines = lines.into_inner().unwrap();
        let [PhaseLine::Failed { error }] = &lines[..] else { panic!("{lines:?}") };
        assert!(error.contains("does not belong to this workload"), "{error}");
        req.first_task = u32::MAX;
        req.phase = Phase::Ior(IorPhase::Read);
        let failed = Mutex::new(None);
        run(&req, &Progress::default(), &|l| *failed.lock().unwrap() = Some(l.clone()), &no_answer);
        let Some(PhaseLine::Failed { error }) = failed.into_inner().unwrap() else { panic!() };
        assert!(error.contains("first_task 4294967295 and tasks 2: not a share of 4 tasks"), "{error}");
    }

    #[test]
    fn the_arguments_name_the_whole_request() {
        let req = request(std::path::Path::new("/mnt/gv0/pvfs-bench/r1"), Phase::Ior(IorPhase::Read));
        let tagged = phase_args(&PhaseRequest { job_tag: Some("pv00001r1".into()), ..req.clone() }).join(" ");
        assert!(tagged.contains(" --job-tag pv00001r1 "), "{tagged}");
        let args = phase_args(&req).join(" ");
        assert!(!args.contains("--job-tag"), "{args}");
        assert!(
            args.starts_with(
                "engine-phase --dir /mnt/gv0/pvfs-bench/r1 --phase ior-read --iteration 1 --first-task 2 --tasks 2 \
                 --total-tasks 4 --tasks-per-client 2 --preset throughput --set write=true"
            ),
            "{args}"
        );
        for phase in Phase::ALL {
            assert_eq!(Phase::from_name(phase.name()), Some(phase));
        }
    }
}
