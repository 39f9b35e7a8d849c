//! IOR's write and read phases: file per process (`BASE.00000007`) or one shared file, blocks of
//! `block` bytes per task per segment moved in `transfer`-sized requests, sequential or
//! shuffled offsets, O_DIRECT, fsync at the end of writes, and `-C`'s read-back of another
//! client's data.

use super::shuffle::Permutation;
use super::stonewall::{Stonewall, WearOut};
use super::{EngineError, Progress, TaskResult, pattern};
use crate::files::{Dir, FileError};
use nix::fcntl::OFlag;
use pvfs_bench::params::{IorParams, Workload};
use pvfs_bench::phase::IorPhase;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// O_DIRECT needs buffers, offsets and lengths aligned to the device's logical block; 4 KiB
/// covers every device in practice.
const ALIGN: usize = 4096;

/// One client's share of an IOR run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IorJob {
    pub params: IorParams,
    /// The test file path (`-o`): `DIR/ior`; per-process files get `.%08d` appended.
    pub base: PathBuf,
    /// The global task numbers this client runs.
    pub tasks: std::ops::Range<u32>,
    /// Tasks across all clients.
    pub total_tasks: u32,
    /// Tasks per client: `-C` reads the data of task `t + tasks_per_client` (another client).
    pub tasks_per_client: u32,
    /// The iteration (seeds the shuffled offsets, so each repetition differs as in IOR).
    pub iteration: u32,
    /// Transfers each task makes at most (a read after a stonewalled write).
    pub stop_after: Option<u64>,
    /// A test seam: sleeps that make a straggler whose stonewall and wear-out can be watched.
    /// `None` outside tests.
    pub pace: Option<Pace>,
    /// Whether each transfer is timed (its latency): always, but for `pvfs-agent engine
    /// --untimed`, which is how `cargo xtask bench-engine` measures what the timing costs.
    pub timed: bool,
    /// The name of every task thread ([`pvfs_bench::request::PhaseRequest::job_tag`]); `None`:
    /// `task N`.
    pub thread_name: Option<String>,
}

/// A test seam's pace: every task sleeps `each` before each transfer, and task `task` sleeps
/// `first` more before its first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    pub task: u32,
    pub first: Duration,
    pub each: Duration,
}

impl Pace {
    /// `TASK,FIRST_MS,EACH_MS`, as the engine child's test seam reads it.
    pub fn parse(text: &str) -> Option<Pace> {
        let mut parts = text.split(',').map(|p| p.trim().parse::<u64>().ok());
        let (task, first, each) = (parts.next()??, parts.next()??, parts.next()??);
        Some(Pace {
            task: u32::try_from(task).ok()?,
            first: Duration::from_millis(first),
            each: Duration::from_millis(each),
        })
    }

    pub(crate) fn before(&self, task: u32, n: u64) -> Duration {
        if task == self.task && n == 0 { self.first + self.each } else { self.each }
    }
}

impl IorJob {
    /// The file task `task` uses.
    pub fn file_of(&self, task: u32) -> PathBuf {
        self.base.with_file_name(self.file_name_of(task))
    }

    /// The name of the file task `task` uses, in the run directory.
    pub fn file_name_of(&self, task: u32) -> String {
        let base = self.base.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if self.params.file_per_proc { format!("{base}.{task:08}") } else { base }
    }

    /// The run directory the test files are in.
    fn parent(&self) -> Result<&std::path::Path, EngineError> {
        self.base.parent().ok_or_else(|| EngineError::NoDirectory { path: self.base.clone() })
    }

    /// Bytes each task moves per phase (bounded by [`IorJob::check`]).
    pub fn bytes_per_task(&self) -> u64 {
        self.params.block.saturating_mul(u64::from(self.params.segments))
    }

    /// The workload's bounds for this job's size, which every offset computation below relies
    /// on: checked once per phase, so no product can wrap.
    pub fn check(&self) -> Result<(), EngineError> {
        Workload::Ior(self.params.clone()).check_run(self.total_tasks)?;
        if self.tasks.end > self.total_tasks {
            return Err(EngineError::InvalidShare {
                tasks: self.tasks.clone(),
                total_tasks: self.total_tasks,
            });
        }
        Ok(())
    }

    /// Offsets task `owner`'s data occupies in its file, in the order `task` accesses them,
    /// computed one at a time: a task of 16 TiB in 4 KiB transfers visits 2^32 offsets, which
    /// IOR (and this engine, once) allocates up front.
    pub(crate) fn offsets(&self, owner: u32, shuffle_seed: u64) -> Offsets {
        let p = &self.params;
        let per_block = p.block / p.transfer;
        let count = per_block * u64::from(p.segments);
        Offsets {
            next: 0,
            count,
            per_block,
            block: p.block,
            transfer: p.transfer,
            // IOR's layout: per-process files hold a task's segments back to back; a shared
            // file interleaves the tasks' blocks within each segment.
            segment_stride: if p.file_per_proc { 1 } else { u64::from(self.total_tasks) },
            owner: if p.file_per_proc { 0 } else { u64::from(owner) },
            order: p.random.then(|| Permutation::new(count, shuffle_seed)),
        }
    }
}

/// The offsets of one task's data, in access order, as an iterator that holds no list.
#[derive(Debug, Clone)]
pub(crate) struct Offsets {
    next: u64,
    count: u64,
    per_block: u64,
    block: u64,
    transfer: u64,
    /// Blocks between one segment's start and the next (the tasks sharing the file).
    segment_stride: u64,
    /// This task's block within each segment of a shared file.
    owner: u64,
    /// `-z`: visit the transfers in a shuffled order, each once.
    order: Option<Permutation>,
}

impl Iterator for Offsets {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.next == self.count {
            return None;
        }
        let index = self.order.as_ref().map_or(self.next, |order| order.at(self.next));
        self.next += 1;
        let (segment, within) = (index / self.per_block, index % self.per_block);
        // Bounded by `IorJob::check`: segments x tasks x block fits a file offset.
        Some((segment * self.segment_stride + self.owner) * self.block + within * self.transfer)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.count - self.next).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

impl ExactSizeIterator for Offsets {}

/// A buffer of `len` bytes at an `ALIGN`ed address, made without `unsafe`: over-allocate and
/// start at the first aligned byte.
struct Aligned {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    /// Allocated fallibly: `len` comes from the request, and a refusal here is a task error,
    /// not an abort of the process. Zeroed; writes fill it with IOR's pattern.
    fn new(len: u64) -> Result<Aligned, EngineError> {
        let cannot = |why: String| EngineError::Buffer { len, why };
        let len = usize::try_from(len).map_err(|e| cannot(e.to_string()))?;
        let total = len.checked_add(ALIGN).ok_or_else(|| cannot("too large".into()))?;
        let mut storage = Vec::new();
        storage.try_reserve_exact(total).map_err(|e| cannot(e.to_string()))?;
        storage.resize(total, 0);
        let start = (ALIGN - storage.as_ptr() as usize % ALIGN) % ALIGN;
        Ok(Aligned { storage, start, len })
    }

    fn bytes(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

/// Runs `phase` for every task of `job` on this client, one thread each; returns when all are
/// done. `progress` counts bytes and transfers as they complete.
pub fn run_ior_phase(job: &IorJob, phase: IorPhase, progress: &Progress) -> Vec<TaskResult> {
    run_ior_phase_across(job, phase, progress, None)
}

/// [`run_ior_phase`] for a share of a run whose wear-out is agreed with the other clients
/// through `across` (given this client's most, it returns the run's).
pub fn run_ior_phase_across(
    job: &IorJob,
    phase: IorPhase,
    progress: &Progress,
    across: Option<super::Across<'_>>,
) -> Vec<TaskResult> {
    // The run directory is opened once, without following symlinks; every task opens its file
    // through it. Anything wrong here is every task's error.
    let dir = job.check().and_then(|()| Ok(Dir::open(job.parent()?)?));
    // Wear-out agrees across every task of the run: this process holds them all when the run
    // has one client; otherwise `across` asks the others.
    let tasks = job.tasks.end.saturating_sub(job.tasks.start);
    let (dir, agree) = match super::stonewall::agreement(tasks, job.total_tasks, job.params.wear_out, across)
    {
        Ok(agree) => (dir, agree),
        Err(err) => (dir.and_then(|_| Err(err)), across.unwrap_or(&|most| Ok(most))),
    };
    let wear_out = WearOut::new(tasks as usize, agree);
    let wall = Stonewall {
        deadline: (job.params.deadline > 0).then(|| Duration::from_secs(job.params.deadline.into())),
        stop_after: job.stop_after,
        wear_out: job.params.wear_out.then_some(&wear_out),
    };
    super::each_task(job.tasks.clone(), job.thread_name.as_deref(), |task, ready| match &dir {
        Ok(dir) => run_task(job, dir, phase, task, progress, &wall, ready),
        Err(err) => super::failed(task, err),
    })
}

fn run_task(
    job: &IorJob,
    dir: &Dir,
    phase: IorPhase,
    task: u32,
    progress: &Progress,
    wall: &Stonewall<'_>,
    ready: &super::Ready<'_>,
) -> TaskResult {
    let p = &job.params;
    // -C: read what a task on another client wrote, so this client's cache cannot serve it.
    // (Both below 2^20 after `IorJob::check`, so the sum cannot wrap.)
    let owner = match phase {
        IorPhase::Read if p.reorder && job.total_tasks > 1 => (task + job.tasks_per_client) % job.total_tasks,
        _ => task,
    };
    let name = job.file_name_of(owner);
    let seed = u64::from(job.iteration) << 32 | u64::from(task);
    let offsets = job.offsets(owner, seed);
    let mut agreed = false;
    let mut buffer = match Aligned::new(p.transfer) {
        Ok(buffer) => buffer,
        Err(err) => {
            wall.leave(&mut agreed);
            return super::failed(task, &err);
        }
    };
    if phase == IorPhase::Write {
        // IOR's signature is -G, else the repetition's start in seconds, which rank 0
        // broadcasts; each client's clock stands in for it (the pattern is the same kind
        // either way; a run that verifies always has -G, fixed when it was planned).
        let signature = match p.signature {
            0 => SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as u32),
            fixed => fixed,
        };
        pattern::generate(buffer.bytes_mut(), p.packet, signature, task);
    }
    // The task's clock starts at its open, as IOR's open timer does: its buffer is allocated
    // and filled before (IOR fills it before the repetition's timers too), and the tasks meet
    // first, as IOR's ranks meet at the barrier before their open timers.
    ready.wait();
    let start = SystemTime::now();
    let mut done = TaskResult::begun(task, start);
    let mut check = Check { owner, mismatches: 0, first: None };
    let outcome = transfer_all(
        dir,
        &name,
        phase,
        job,
        offsets,
        &mut buffer,
        progress,
        &mut done,
        wall,
        &mut agreed,
        &mut check,
    );
    let outcome = outcome.and_then(|()| match check.first {
        Some(offset) => Err(EngineError::VerifyTransfers {
            mismatches: check.mismatches,
            transfers: done.ops,
            path: dir.path().join(&name),
            writer: owner,
            offset,
        }),
        None => Ok(()),
    });
    // A task that failed before the wear-out still says so, or the others would wait for it.
    wall.leave(&mut agreed);
    done.end = SystemTime::now();
    if let Err(err) = outcome {
        done.error = Some(err.to_string());
    }
    done
}

/// Opens a task's file through the run directory: never through a symlink, only a plain file.
/// Writes create the file and do not truncate it, as IOR's do (per-process files start empty
/// because IOR removes them after each iteration; a shared file is written in place by every
/// task).
fn open(dir: &Dir, name: &str, phase: IorPhase, p: &IorParams) -> Result<File, FileError> {
    let direct = if p.odirect { OFlag::O_DIRECT } else { OFlag::empty() };
    match phase {
        IorPhase::Write => dir.open_write(name, direct),
        IorPhase::Read => dir.open_read(name, direct),
    }
}

/// `-R`: what a task's reads are compared with (its writer's pattern), and what differed.
struct Check {
    /// The task that wrote what this one reads (itself, or its `-C` partner).
    owner: u32,
    mismatches: u64,
    /// The offset of the first transfer that differed.
    first: Option<u64>,
}

#[allow(clippy::too_many_arguments)]
fn transfer_all(
    dir: &Dir,
    name: &str,
    phase: IorPhase,
    job: &IorJob,
    offsets: Offsets,
    buffer: &mut Aligned,
    progress: &Progress,
    done: &mut TaskResult,
    wall: &Stonewall<'_>,
    agreed: &mut bool,
    check: &mut Check,
) -> Result<(), EngineError> {
    let p = &job.params;
    let verify = phase == IorPhase::Read && p.verify;
    let path = dir.path().join(name);
    let file = open(dir, name, phase, p)?;
    let rdwr_start = SystemTime::now();
    let stamp = phase == IorPhase::Write && pattern::changes_per_transfer(p.packet);
    let mut latency = crate::engine::TaskLatency::new(job.timed);
    let mut one = |offset: u64, done: &mut TaskResult| -> Result<(), EngineError> {
        progress.check()?;
        if stamp {
            pattern::update(buffer.bytes_mut(), p.packet, p.signature, offset, done.task);
        }
        // Each transfer's own time: the call alone (and the test seam's pace, which stands
        // for a slow transfer).
        let since = latency.begin();
        if let Some(pace) = job.pace {
            std::thread::sleep(pace.before(done.task, done.ops));
        }
        let moved = match phase {
            IorPhase::Write => file.write_all_at(buffer.bytes(), offset).map(|()| buffer.len),
            IorPhase::Read => file.read_exact_at(buffer.bytes_mut(), offset).map(|()| buffer.len),
        };
        latency.record(since, progress);
        moved.map_err(|source| EngineError::Transfer {
            op: if phase == IorPhase::Write { "write" } else { "read" },
            len: buffer.len,
            offset,
            path: path.clone(),
            source,
        })?;
        // IOR's READCHECK: every word compared (outside the transfer's own time, inside the
        // phase's, as in IOR).
        if verify && !pattern::verify(buffer.bytes(), p.packet, p.signature, offset, check.owner) {
            check.mismatches += 1;
            check.first.get_or_insert(offset);
        }
        done.bytes += buffer.len as u64;
        done.ops += 1;
        progress.bytes.fetch_add(buffer.len as u64, Ordering::Relaxed);
        progress.ops.fetch_add(1, Ordering::Relaxed);
        Ok(())
    };
    // IOR's loop: each transfer, then the stonewall's test (the deadline since the first
    // transfer, or the count a read was given).
    let started = std::time::Instant::now();
    let mut order = offsets.clone();
    for offset in order.by_ref() {
        one(offset, done)?;
        if wall.stop_after == Some(done.ops) || wall.deadline.is_some_and(|d| started.elapsed() > d) {
            break;
        }
    }
    if let Some(wear_out) = wall.wear_out {
        // Every task learns the most transfers any task made and goes on to as many, from
        // where it stopped, starting over at its first offset should it pass its last (IOR
        // wraps its segments the same way).
        *agreed = true;
        let target = wear_out.agree(Some(done.ops), progress)?;
        while done.ops < target {
            let offset = match order.next() {
                Some(offset) => offset,
                None => {
                    order = offsets.clone();
                    match order.next() {
                        Some(offset) => offset,
                        None => break,
                    }
                }
            };
            one(offset, done)?;
        }
    }
    done.latency = latency.finish(progress);
    if phase == IorPhase::Write && p.fsync {
        file.sync_all().map_err(|e| FileError::io("fsync", &path, e))?;
    }
    // IOR's read/write timer stops after the fsync, before the close.
    done.rdwr = Some((rdwr_start, SystemTime::now()));
    // Closing is part of the phase, as in IOR (close can flush on network file systems).
    drop(file);
    Ok(())
}

/// Removes this client's test files after the last read (IOR does unless `-k`): every task's
/// own file, or the shared file from the client that runs task 0. Names are removed in the run
/// directory opened without following symlinks (a symlink at a name is removed, not followed).
pub fn remove_files(job: &IorJob) -> Result<(), EngineError> {
    let names: Vec<String> = if job.params.file_per_proc {
        job.tasks.clone().map(|t| job.file_name_of(t)).collect()
    } else if job.tasks.contains(&0) {
        vec![job.file_name_of(0)]
    } else {
        vec![]
    };
    if names.is_empty() {
        return Ok(());
    }
    let dir = Dir::open(job.parent()?)?;
    Ok(names.iter().try_for_each(|name| dir.remove_file(name, true))?)
}
