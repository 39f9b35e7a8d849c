//! The `mpi` launcher's pieces that are not MPI itself: the hostfile mpirun reads, and the
//! built-in engine run as an MPI job (`mpirun … pvfs-agent engine --mpi`), one process per
//! rank, as IOR runs.
//!
//! A rank runs task `rank` of `size`. pvfs links no MPI library, so ranks cannot call
//! `MPI_Barrier`; they meet instead in the run's directory on the file system under test (a
//! [`Barrier`]), which every rank sees because that is what a parallel file system is for.
//! Each rank prints one JSON line per phase ([`RankLine`]), which mpirun forwards to the
//! launching client and the coordinator reads: the same task results the `agents` launcher
//! gets over gRPC, so the arithmetic (total bytes / (last end − first start)) is the same.

use crate::engine::{self, EngineError, Phase, Progress, TaskResult};
use crate::files::{Dir, FileError};
use nix::fcntl::OFlag;
use pvfs_bench::launch::Engine;
use pvfs_bench::params::Workload;
use pvfs_bench::request::PhaseRequest;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a rank waits at a barrier for the others before giving up. Long, because a slow
/// rank may still be writing its share of a large block; bounded, because a rank that died
/// without mpirun noticing must not hold the others forever.
pub const BARRIER_LIMIT: Duration = Duration::from_secs(30 * 60);

/// How long ranks wait for each other at their first meeting, before any phase. Nothing is
/// written yet, so every rank started by mpirun arrives within seconds — unless the clients
/// do not share the run's directory (a `local` cluster's directories are each client's own),
/// when the ranks of each client meet only each other and would wait [`BARRIER_LIMIT`] at the
/// first phase, silently.
pub const SHARED_LIMIT: Duration = Duration::from_secs(120);

/// What a rank prints, one JSON object per line, for the coordinator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "pvfs_rank_event", rename_all = "snake_case")]
pub enum RankLine {
    /// Rank 0, as each phase starts (after the barrier).
    Started { iteration: u32, phase: Phase, at_unix_ns: u64 },
    /// Once a second while a phase runs, and as it ends: what this rank moved in it so far,
    /// and the times of the operations it finished since its last such line. It names its
    /// phase: mpirun forwards each rank's lines in order, but not the ranks' in step with
    /// each other, so rank 0's start of the next phase may arrive before another rank's last
    /// line of this one.
    Progress {
        iteration: u32,
        phase: Phase,
        rank: u32,
        bytes: u64,
        ops: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        recent: Vec<(u64, u64)>,
    },
    /// This rank's part of a phase is over: its task's result (the task is the rank).
    Phase {
        iteration: u32,
        phase: Phase,
        #[serde(flatten)]
        result: crate::child::TaskLine,
    },
}

impl RankLine {
    /// A line of mpirun's output, if it is one of ours.
    pub fn parse(line: &str) -> Option<RankLine> {
        let line = line.trim();
        if !line.starts_with('{') || !line.contains("pvfs_rank_event") {
            return None;
        }
        serde_json::from_str(line).ok()
    }

    /// The task result a `Phase` line carries.
    pub fn task_result(&self) -> Option<TaskResult> {
        match self {
            RankLine::Phase { result, .. } => Some(result.into()),
            _ => None,
        }
    }
}

/// This process's rank and the job's size, from the environment mpirun gives its processes
/// (Open MPI, then MPICH/PMI, then PMIx).
pub fn rank_from_env() -> Option<(u32, u32)> {
    let var = |names: &[&str]| names.iter().find_map(|n| std::env::var(n).ok()?.parse::<u32>().ok());
    let rank = var(&["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"])?;
    let size = var(&["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"])?;
    (rank < size).then_some((rank, size))
}

/// Ranks meeting in a directory: each creates `DIR/NAME/RANK`, holding its host's name, and
/// waits until `size` entries are there. The directory is on the shared file system, so it is
/// opened without following symlinks and each rank's file is created with `O_EXCL |
/// O_NOFOLLOW`.
#[derive(Debug, Clone)]
pub struct Barrier {
    pub dir: PathBuf,
    pub rank: u32,
    pub size: u32,
    /// Ranks per client: mpirun fills each host's slots in hostfile order, so rank `r` runs
    /// on client `r / per_node` (what a timeout names for the ranks that never came).
    pub per_node: u32,
    pub limit: Duration,
}

/// Why ranks did not meet at a [`Barrier`].
#[derive(Debug, thiserror::Error)]
pub enum BarrierError {
    /// The barrier's directory, or this rank's file in it, could not be made or read.
    #[error("barrier: {0}")]
    File(#[source] FileError),
    /// Not every rank arrived within the limit.
    #[error("{0}")]
    TimedOut(Box<BarrierTimeout>),
}

/// Who came to a barrier and who did not, by rank, host and client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BarrierTimeout {
    /// The rank that waited.
    pub rank: u32,
    /// Ranks in the job.
    pub size: u32,
    /// Entries found in the barrier's directory at the limit.
    pub arrived: usize,
    /// The barrier's directory.
    pub path: PathBuf,
    pub limit: Duration,
    /// The ranks that came, in order, and the hosts they wrote.
    pub came: Vec<u32>,
    pub hosts: Vec<String>,
    /// The ranks that never did, and their clients by place in the hostfile (from 1).
    pub missing: Vec<u32>,
    pub clients: Vec<u32>,
    /// What to check, added to the message (empty for none).
    pub hint: String,
}

impl std::fmt::Display for BarrierTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let clients = self.clients.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        write!(
            f,
            "rank {}: only {} of {} ranks reached {} within {}s: ranks {} (on {}) came; ranks {} (on \
             client{} {clients} of the hostfile) never did{}",
            self.rank,
            self.arrived,
            self.size,
            self.path.display(),
            self.limit.as_secs(),
            ranges(&self.came),
            if self.hosts.is_empty() { "hosts unknown".to_owned() } else { self.hosts.join(", ") },
            ranges(&self.missing),
            if self.clients.len() > 1 { "s" } else { "" },
            self.hint,
        )
    }
}

/// Why a rank's run stopped.
#[derive(Debug, thiserror::Error)]
pub enum RankError {
    #[error(transparent)]
    Barrier(#[from] BarrierError),
    /// A phase could not run, or this rank's task failed ([`EngineError::TaskFailed`]).
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl Barrier {
    pub fn wait(&self, name: &str) -> Result<(), BarrierError> {
        self.wait_or(name, "")
    }

    /// [`Barrier::wait`], adding `hint` to a timeout's message.
    pub fn wait_or(&self, name: &str, hint: &str) -> Result<(), BarrierError> {
        use std::io::Write;
        let barrier = BarrierError::File;
        let (here, mine) = self.arrive(name)?;
        // Best effort: a host name only makes a timeout's message clearer.
        if let Some(mut mine) = mine {
            let _ = mine.write_all(host_name().as_bytes());
        }
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            let arrived = here.count_entries().map_err(barrier)?;
            if arrived >= self.size as usize {
                return Ok(());
            }
            if started.elapsed() > self.limit {
                return Err(BarrierError::TimedOut(Box::new(self.timed_out(&here, arrived, hint))));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(10));
        }
    }
}

impl Barrier {
    /// The most of every rank's `value`, learned at barrier `name` (IOR's Allreduce(MAX) at a
    /// stonewall): each rank writes its value to a file of its own before it arrives, so once
    /// every rank has arrived every value is there to read (close-to-open, as any shared file
    /// system keeps it).
    pub fn most(&self, name: &str, value: u64) -> Result<u64, BarrierError> {
        use std::io::{Read, Write};
        let values = Dir::create_all(&self.dir)
            .and_then(|dir| dir.create_dir(format!("{name}-values")))
            .map_err(BarrierError::File)?;
        let mut mine = values.create_new(&self.rank.to_string(), 0o644).map_err(BarrierError::File)?;
        mine.write_all(value.to_string().as_bytes()).map_err(|e| {
            BarrierError::File(FileError::io("write", values.path().join(self.rank.to_string()), e))
        })?;
        drop(mine);
        self.wait(name)?;
        let mut most = 0;
        for rank in 0..self.size {
            let name = rank.to_string();
            let mut text = String::new();
            // Bounded: a count is at most 20 digits.
            values
                .open_read(&name, OFlag::empty())
                .and_then(|f| {
                    f.take(64)
                        .read_to_string(&mut text)
                        .map_err(|e| FileError::io("read", values.path().join(&name), e))
                })
                .map_err(BarrierError::File)?;
            let value = text.trim().parse::<u64>().map_err(|_| {
                BarrierError::File(FileError::io(
                    "read",
                    values.path().join(&name),
                    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{text:?} is not a count")),
                ))
            })?;
            most = most.max(value);
        }
        Ok(most)
    }
}

/// How often a barrier's arrival is tried again after ESTALE (or ENOENT opening what mkdir
/// said exists).
const STALE_RETRIES: u32 = 5;

/// What GlusterFS's FUSE client answers when another client has just made the same new
/// directory, both seen in the e2e (two ranks on two clients meeting in a new barrier
/// directory): ESTALE, or ENOENT opening the directory that `mkdir` has just said exists (DHT
/// makes a directory on one brick after another). Looking the path up afresh, as NFS clients
/// do, finds the directory.
fn is_stale(e: &FileError) -> bool {
    use nix::errno::Errno;
    matches!(e, FileError::Io { op, source, .. }
        if source.raw_os_error() == Some(Errno::ESTALE as i32)
            || (*op == "open" && source.raw_os_error() == Some(Errno::ENOENT as i32)))
}

impl Barrier {
    /// This rank's arrival: `DIR/NAME/RANK` created, the whole path looked up again after an
    /// ESTALE. Its file, to write the host name into; none when an earlier attempt had made it.
    fn arrive(&self, name: &str) -> Result<(Dir, Option<std::fs::File>), BarrierError> {
        let mut attempt = 0;
        loop {
            let made = Dir::create_all(&self.dir).and_then(|dir| dir.create_dir(name)).and_then(|here| {
                match here.create_new(&self.rank.to_string(), 0o644) {
                    Ok(file) => Ok((here, Some(file))),
                    // Made by an attempt that then answered ESTALE.
                    Err(FileError::Io { source, .. })
                        if attempt > 0 && source.kind() == std::io::ErrorKind::AlreadyExists =>
                    {
                        Ok((here, None))
                    }
                    Err(e) => Err(e),
                }
            });
            match made {
                Err(e) if is_stale(&e) && attempt < STALE_RETRIES => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(20 * u64::from(attempt)));
                }
                other => return other.map_err(BarrierError::File),
            }
        }
    }

    /// Who came and who did not, by rank, host and client.
    fn timed_out(&self, here: &Dir, arrived: usize, hint: &str) -> BarrierTimeout {
        let names = here.entry_names().unwrap_or_default();
        let mut came: Vec<u32> = names.iter().filter_map(|n| n.parse().ok()).collect();
        came.sort_unstable();
        let mut hosts: Vec<String> = came
            .iter()
            .filter_map(|r| {
                let mut text = String::new();
                std::io::Read::read_to_string(
                    &mut here.open_read(&r.to_string(), OFlag::empty()).ok()?,
                    &mut text,
                )
                .ok()?;
                (!text.is_empty()).then_some(text)
            })
            .collect();
        hosts.sort();
        hosts.dedup();
        let missing: Vec<u32> = (0..self.size).filter(|r| came.binary_search(r).is_err()).collect();
        let per_node = self.per_node.max(1);
        let mut clients: Vec<u32> = missing.iter().map(|r| r / per_node + 1).collect();
        clients.dedup();
        BarrierTimeout {
            rank: self.rank,
            size: self.size,
            arrived,
            path: here.path().to_owned(),
            limit: self.limit,
            came,
            hosts,
            missing,
            clients,
            hint: hint.to_owned(),
        }
    }
}

/// `0-3, 7` for ranks 0, 1, 2, 3 and 7.
fn ranges(ranks: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        out.push(if i == j { ranks[i].to_string() } else { format!("{}-{}", ranks[i], ranks[j]) });
        i = j + 1;
    }
    if out.is_empty() { "none".to_owned() } else { out.join(", ") }
}

/// This machine's name, as the kernel has it (empty when it cannot be read).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_owned()).unwrap_or_default()
}

/// One rank's whole run.
#[derive(Debug, Clone)]
pub struct RankJob {
    pub workload: Workload,
    /// The run's directory (the same on every client).
    pub dir: PathBuf,
    pub rank: u32,
    pub size: u32,
    /// Ranks per client, for `-C`'s read-back from the next client.
    pub tasks_per_client: u32,
    pub barrier_limit: Duration,
}

/// Runs every iteration's phases as task `rank`, meeting the other ranks before each, and
/// hands each line to `emit`. A task error is emitted and returned: the rank exits non-zero
/// and mpirun ends the job.
pub fn run_rank(job: &RankJob, emit: &(dyn Fn(&RankLine) + Sync)) -> Result<(), RankError> {
    Dir::create_all(&job.dir).map_err(EngineError::from)?;
    let barrier = Barrier {
        dir: barrier_dir(&job.dir),
        rank: job.rank,
        size: job.size,
        per_node: job.tasks_per_client,
        limit: job.barrier_limit,
    };
    // First, proof that every rank sees this directory: a short wait, and a message that says
    // what a silent half-hour at the first phase would have meant.
    Barrier { limit: job.barrier_limit.min(SHARED_LIMIT), ..barrier.clone() }.wait_or(
        "shared",
        &format!(
            "; every client must see the run's directory {} on one shared file system (a `local` cluster's \
             directories are each client's own: run the mpi launcher on a shared file system, or use the agents \
             launcher)",
            job.dir.display()
        ),
    )?;
    let iterations = job.workload.iterations();
    let request = |iteration, phase, stop_after| PhaseRequest {
        job_tag: None,
        stop_after,
        engine: Engine::Builtin,
        workload: job.workload.clone(),
        dir: job.dir.clone(),
        first_task: job.rank,
        tasks: 1,
        total_tasks: job.size,
        tasks_per_client: job.tasks_per_client,
        iteration,
        phase,
    };
    for iteration in 0..iterations {
        // A stonewalled write's count, which this rank's read reads back (IOR carries each
        // rank's own).
        let mut stop_after = None;
        for phase in pvfs_bench::phase::iteration_phases(&job.workload) {
            let label = phase.label();
            barrier.wait(&format!("{iteration}-{}", label.replace(' ', "-")))?;
            if job.rank == 0 {
                emit(&RankLine::Started { iteration, phase, at_unix_ns: unix_ns(SystemTime::now()) });
            }
            // A wear-out's stonewall is one more barrier, at which the ranks learn the most.
            let wear_out = format!("{iteration}-{}-wear-out", label.replace(' ', "-"));
            let across = |pairs: u64| {
                barrier.most(&wear_out, pairs).map_err(|e| EngineError::WearOut { error: e.to_string() })
            };
            let results = with_progress((iteration, phase, job.rank), emit, |progress| {
                engine::run_phase_across(&request(iteration, phase, stop_after), progress, Some(&across))
            })?;
            if let Some(carried) =
                pvfs_bench::request::carried(&job.workload, phase, results.iter().map(|r| r.ops))
            {
                stop_after = carried;
            }
            for r in results {
                let error = r.error.clone();
                emit(&RankLine::Phase { iteration, phase, result: (&r).into() });
                if let Some(error) = error {
                    return Err(EngineError::TaskFailed { task: r.task, error }.into());
                }
            }
        }
        if matches!(&job.workload, Workload::Ior(p) if !p.keep) {
            // Nobody removes a file another rank may still read back (-C).
            barrier.wait(&format!("{iteration}-cleanup"))?;
            engine::run_phase(&request(iteration, Phase::IorCleanup, None), &Progress::default())?;
        }
    }
    Ok(())
}

/// Where the ranks of a run in `dir` meet. Removed by whoever started them once mpirun has
/// exited: no rank can know that every other has stopped looking at it.
pub fn barrier_dir(dir: &Path) -> PathBuf {
    dir.join(".pvfs-barrier")
}

/// Runs `phase` while a thread emits this rank's progress once a second.
fn with_progress<T>(
    (iteration, phase, rank): (u32, Phase, u32),
    emit: &(dyn Fn(&RankLine) + Sync),
    run: impl FnOnce(&Progress) -> T,
) -> T {
    let progress = Progress::default();
    let report = |p: &Progress| {
        emit(&RankLine::Progress {
            iteration,
            phase,
            rank,
            bytes: p.bytes.load(Ordering::Relaxed),
            ops: p.ops.load(Ordering::Relaxed),
            recent: p.take_recent(),
        })
    };
    let out = engine::with_progress(&progress, Duration::from_secs(1), &report, || run(&progress));
    // The last operations' times, before the phase's result line.
    report(&progress);
    out
}

pub(crate) fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos() as u64
}

/// A task's read/write span as its lines carry it (the engine child's and the ranks').
pub(crate) fn span_to_ns(span: Option<(SystemTime, SystemTime)>) -> Option<(u64, u64)> {
    span.map(|(a, b)| (unix_ns(a), unix_ns(b)))
}

/// The span back from a line.
pub(crate) fn span_from_ns(span: Option<(u64, u64)>) -> Option<(SystemTime, SystemTime)> {
    span.map(|(a, b)| (UNIX_EPOCH + Duration::from_nanos(a), UNIX_EPOCH + Duration::from_nanos(b)))
}

/// The arguments after the program for `pvfs-agent engine` as one MPI rank.
pub fn engine_args(workload: &Workload, dir: &Path, tasks_per_client: u32) -> Vec<String> {
    let tool = workload.tool();
    let mut args = vec![
        "engine".to_owned(),
        "--mpi".to_owned(),
        "--dir".to_owned(),
        dir.display().to_string(),
        "--tasks-per-node".to_owned(),
        tasks_per_client.to_string(),
        "--preset".to_owned(),
        tool.to_owned(),
    ];
    for (key, value) in workload.settings() {
        args.push("--set".to_owned());
        args.push(format!("{key}={value}"));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only ESTALE, and ENOENT opening a directory just made, are looked up again: any other
    /// failure of an arrival is said at once.
    #[test]
    fn only_a_stale_handle_is_tried_again() {
        let stale = FileError::io("mkdir", "/m/.pvfs-barrier/0-read", std::io::Error::from_raw_os_error(116));
        assert!(is_stale(&stale));
        let unseen = FileError::io("open", "/m/.pvfs-barrier/0-write", std::io::Error::from_raw_os_error(2));
        assert!(is_stale(&unseen), "a directory another client is still making");
        let no_parent =
            FileError::io("mkdir", "/m/.pvfs-barrier/0-write", std::io::Error::from_raw_os_error(2));
        assert!(!is_stale(&no_parent));
        let denied = FileError::io("mkdir", "/m/.pvfs-barrier/0-read", std::io::Error::from_raw_os_error(13));
        assert!(!is_stale(&denied));
        assert!(!is_stale(&FileError::Symlink { op: "mkdir", path: "/m".into() }));
    }
    use pvfs_bench::params::Preset;
    use std::sync::Mutex;

    #[test]
    fn rank_lines_round_trip_and_other_output_is_not_ours() {
        let line = RankLine::Phase {
            iteration: 1,
            phase: Phase::Mdtest(pvfs_bench::phase::MdtestPhase::FileCreate),
            result: crate::child::TaskLine {
                task: 3,
                start_unix_ns: 1_000_000_000,
                end_unix_ns: 3_000_000_000,
                bytes: 0,
                ops: 40,
                error: None,
                rdwr_unix_ns: Some((1_500_000_000, 2_500_000_000)),
                latency: vec![(1000, 39), (2000, 1)],
                found: 0,
            },
        };
        let text = serde_json::to_string(&line).unwrap();
        assert_eq!(RankLine::parse(&text), Some(line.clone()));
        let task = line.task_result().unwrap();
        assert_eq!(task.end.duration_since(task.start).unwrap(), Duration::from_secs(2));
        let (a, b) = task.rdwr.unwrap();
        assert_eq!(b.duration_since(a).unwrap(), Duration::from_secs(1));
        assert_eq!(RankLine::parse("[vm:01234] mca: base: component_find"), None);
        assert_eq!(RankLine::parse("{\"tests\": []}"), None);
    }

    #[test]
    fn engine_args_carry_every_parameter_back_exactly() {
        let mut w = Preset::Iops.workload();
        // Valid only as a whole: setting transfer=3k alone fails against the preset's block.
        w.set_all([("t", "3k"), ("b", "9k"), ("B", "false"), ("i", "2")]).unwrap();
        let args = engine_args(&w, Path::new("/mnt/x"), 2);
        let mut back = Preset::Throughput.workload();
        let pairs: Vec<(&str, &str)> = args
            .iter()
            .skip_while(|a| *a != "--set")
            .filter(|a| *a != "--set")
            .map(|a| a.split_once('=').unwrap())
            .collect();
        back.set_all(pairs).unwrap();
        assert_eq!(back, w);
    }

    /// Three ranks as threads in one directory: the barrier holds each phase until all arrive,
    /// -C reads what another rank wrote, the files go after each iteration, and the results
    /// add up to every rank's share.
    #[test]
    fn ranks_meet_at_barriers_and_report_every_phase() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Preset::Throughput.workload();
        w.set_all([("t", "64k"), ("b", "256k"), ("B", "false"), ("i", "2")]).unwrap();
        let lines = Mutex::new(Vec::new());
        let emit = |l: &RankLine| lines.lock().unwrap().push(l.clone());
        std::thread::scope(|scope| {
            for rank in 0..3 {
                let job = RankJob {
                    workload: w.clone(),
                    dir: dir.path().join("run"),
                    rank,
                    size: 3,
                    tasks_per_client: 1,
                    barrier_limit: Duration::from_secs(60),
                };
                let emit = &emit;
                scope.spawn(move || run_rank(&job, emit).unwrap());
            }
        });
        std::fs::remove_dir_all(barrier_dir(&dir.path().join("run"))).unwrap();
        let lines = lines.into_inner().unwrap();
        let phases: Vec<_> = lines.iter().filter_map(RankLine::task_result).collect();
        assert_eq!(phases.len(), 3 * 2 * 2, "3 ranks x 2 iterations x (write, read)");
        assert!(phases.iter().all(|t| t.bytes == 256 << 10 && t.ops == 4 && t.error.is_none()));
        let started: Vec<_> = lines
            .iter()
            .filter_map(|l| match l {
                RankLine::Started { iteration, phase, .. } => Some(format!("{iteration} {phase}")),
                _ => None,
            })
            .collect();
        assert_eq!(started, ["0 write", "0 read", "1 write", "1 read"]);
        // Every rank's read of an iteration starts after every rank's write of it ended.
        for iteration in 0..2 {
            let of = |label: &str| -> Vec<TaskResult> {
                lines
                    .iter()
                    .filter(|l| matches!(l, RankLine::Phase { iteration: i, phase, .. } if *i == iteration && phase.label() == label))
                    .filter_map(RankLine::task_result)
                    .collect()
            };
            let last_write = of("write").iter().map(|t| t.end).max().unwrap();
            let first_read = of("read").iter().map(|t| t.start).min().unwrap();
            assert!(
                first_read >= last_write,
                "iteration {iteration}: a read began before the last write ended"
            );
        }
        let left: Vec<_> =
            std::fs::read_dir(dir.path().join("run")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "test files and barriers removed, found {left:?}");
    }

    #[test]
    fn a_planted_barrier_file_is_refused_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::fs::create_dir_all(dir.path().join("0-write")).unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("0-write/0")).unwrap();
        let b = Barrier {
            dir: dir.path().to_owned(),
            rank: 0,
            size: 1,
            per_node: 1,
            limit: Duration::from_secs(1),
        };
        let err = b.wait("0-write").unwrap_err();
        assert!(matches!(err, BarrierError::File(FileError::Symlink { .. })), "{err:?}");
        let err = err.to_string();
        assert!(err.contains("0-write/0: it is a symlink"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn a_missing_rank_times_out_naming_the_barrier() {
        let dir = tempfile::tempdir().unwrap();
        let b = Barrier {
            dir: dir.path().to_owned(),
            rank: 0,
            size: 2,
            per_node: 1,
            limit: Duration::from_millis(100),
        };
        let err = b.wait("0-write").unwrap_err();
        let BarrierError::TimedOut(timeout) = &err else { panic!("{err:?}") };
        assert_eq!((timeout.arrived, &timeout.came[..], &timeout.missing[..]), (1, &[0][..], &[1][..]));
        assert_eq!(timeout.clients, [2], "the missing rank's client in the hostfile");
        let err = err.to_string();
        assert!(err.contains("only 1 of 2 ranks reached") && err.contains("0-write"), "{err}");
        assert!(err.contains("ranks 1 (on client 2 of the hostfile) never did"), "{err}");
    }

    /// Issue 25, item 7: two clients of a `local` cluster, each with its own directory, and
    /// the mpi launcher. Each client's ranks met only each other and waited, silently, at the
    /// first phase. Now they stop at the first meeting, naming who came, who did not, and why.
    #[test]
    fn clients_that_do_not_share_the_directory_stop_at_once_naming_the_missing_ranks() {
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut w = Preset::Throughput.workload();
        w.set_all([("t", "64k"), ("b", "256k"), ("B", "false"), ("i", "1")]).unwrap();
        let errors = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for rank in 0..4 {
                // Ranks 0-1 on the first client, 2-3 on the second: each client its own dir.
                let dir = if rank < 2 { one.path() } else { two.path() };
                let job = RankJob {
                    workload: w.clone(),
                    dir: dir.join("run"),
                    rank,
                    size: 4,
                    tasks_per_client: 2,
                    barrier_limit: Duration::from_secs(3),
                };
                let errors = &errors;
                scope.spawn(move || {
                    let error = run_rank(&job, &|_| {}).unwrap_err();
                    assert!(matches!(error, RankError::Barrier(BarrierError::TimedOut(_))), "{error:?}");
                    errors.lock().unwrap().push(error.to_string());
                });
            }
        });
        let errors = errors.into_inner().unwrap();
        assert_eq!(errors.len(), 4, "{errors:#?}");
        let rank0 = errors.iter().find(|e| e.starts_with("rank 0:")).unwrap();
        assert!(
            rank0.contains("only 2 of 4 ranks reached") && rank0.contains(".pvfs-barrier/shared"),
            "{rank0}"
        );
        assert!(
            rank0.contains("ranks 0-1 (on ") && rank0.contains("ranks 2-3 (on client 2 of the hostfile)"),
            "{rank0}"
        );
        assert!(rank0.contains("every client must see the run's directory"), "{rank0}");
        let rank2 = errors.iter().find(|e| e.starts_with("rank 2:")).unwrap();
        assert!(rank2.contains("ranks 0-1 (on client 1 of the hostfile) never did"), "{rank2}");
        // Nothing was written: the phases never started.
        for dir in [one.path(), two.path()] {
            let files: Vec<_> = std::fs::read_dir(dir.join("run"))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(files, [".pvfs-barrier"], "{}", dir.display());
        }
    }
}
