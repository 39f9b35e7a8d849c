//! IOR's write and read phases: file per process (`BASE.00000007`) or one shared file, blocks of
//! `block` bytes per task per segment moved in `transfer`-sized requests, sequential or
//! shuffled offsets, O_DIRECT, fsync at the end of writes, and `-C`'s read-back of another
//! client's data.

use super::{Progress, TaskResult};
use crate::params::IorParams;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::SystemTime;

/// O_DIRECT needs buffers, offsets and lengths aligned to the device's logical block; 4 KiB
/// covers every device in practice.
const ALIGN: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IorPhase {
    Write,
    Read,
}

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
}

impl IorJob {
    /// The file task `task` uses.
    pub fn file_of(&self, task: u32) -> PathBuf {
        if self.params.file_per_proc {
            PathBuf::from(format!("{}.{task:08}", self.base.display()))
        } else {
            self.base.clone()
        }
    }

    /// Bytes each task moves per phase.
    pub fn bytes_per_task(&self) -> u64 {
        self.params.block * u64::from(self.params.segments)
    }

    /// Offsets task `owner`'s data occupies in its file, in the order `task` accesses them.
    pub(crate) fn offsets(&self, owner: u32, shuffle_seed: u64) -> Vec<u64> {
        let p = &self.params;
        let per_block = p.block / p.transfer;
        let mut offsets = Vec::with_capacity((per_block * u64::from(p.segments)) as usize);
        for segment in 0..u64::from(p.segments) {
            // IOR's layout: per-process files hold a task's segments back to back; a shared
            // file interleaves the tasks' blocks within each segment.
            let base = if p.file_per_proc {
                segment * p.block
            } else {
                (segment * u64::from(self.total_tasks) + u64::from(owner)) * p.block
            };
            offsets.extend((0..per_block).map(|i| base + i * p.transfer));
        }
        if p.random {
            fastrand::Rng::with_seed(shuffle_seed).shuffle(&mut offsets);
        }
        offsets
    }
}

/// A buffer of `len` bytes at an `ALIGN`ed address, made without `unsafe`: over-allocate and
/// start at the first aligned byte.
struct Aligned {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    fn new(len: usize, fill_seed: u64) -> Aligned {
        let mut storage = vec![0u8; len + ALIGN];
        let start = (ALIGN - storage.as_ptr() as usize % ALIGN) % ALIGN;
        // Incompressible data, as IOR's default packets are for a compressing file system.
        fastrand::Rng::with_seed(fill_seed).fill(&mut storage[start..start + len]);
        Aligned { storage, start, len }
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
    super::each_task(job.tasks.clone(), |task| run_task(job, phase, task, progress))
}

fn run_task(job: &IorJob, phase: IorPhase, task: u32, progress: &Progress) -> TaskResult {
    let p = &job.params;
    // -C: read what a task on another client wrote, so this client's cache cannot serve it.
    let owner = match phase {
        IorPhase::Read if p.reorder && job.total_tasks > 1 => (task + job.tasks_per_client) % job.total_tasks,
        _ => task,
    };
    let path = job.file_of(owner);
    let seed = u64::from(job.iteration) << 32 | u64::from(task);
    let offsets = job.offsets(owner, seed);
    let mut buffer = Aligned::new(p.transfer as usize, seed ^ 0x9e37_79b9_7f4a_7c15);
    let start = SystemTime::now();
    let mut done = TaskResult { task, start, end: start, bytes: 0, ops: 0, error: None };
    let outcome = transfer_all(&path, phase, p, &offsets, &mut buffer, progress, &mut done);
    done.end = SystemTime::now();
    if let Err(err) = outcome {
        done.error = Some(err);
    }
    done
}

fn open(path: &Path, phase: IorPhase, p: &IorParams) -> Result<File, String> {
    let mut options = OpenOptions::new();
    match phase {
        // Per-process files start empty (IOR removes them before writing); a shared file is
        // written in place by every task.
        IorPhase::Write => options.write(true).create(true).truncate(false),
        IorPhase::Read => options.read(true),
    };
    if p.odirect {
        options.custom_flags(nix::fcntl::OFlag::O_DIRECT.bits());
    }
    options.mode(0o644);
    options.open(path).map_err(|e| format!("open {}: {e}", path.display()))
}

fn transfer_all(
    path: &Path,
    phase: IorPhase,
    p: &IorParams,
    offsets: &[u64],
    buffer: &mut Aligned,
    progress: &Progress,
    done: &mut TaskResult,
) -> Result<(), String> {
    let file = open(path, phase, p)?;
    for &offset in offsets {
        progress.check()?;
        let moved = match phase {
            IorPhase::Write => file.write_all_at(buffer.bytes(), offset).map(|()| buffer.len),
            IorPhase::Read => file.read_exact_at(buffer.bytes_mut(), offset).map(|()| buffer.len),
        };
        moved.map_err(|e| {
            let verb = if phase == IorPhase::Write { "write" } else { "read" };
            format!("{verb} {} bytes at offset {offset} of {}: {e}", buffer.len, path.display())
        })?;
        done.bytes += buffer.len as u64;
        done.ops += 1;
        progress.bytes.fetch_add(buffer.len as u64, Ordering::Relaxed);
        progress.ops.fetch_add(1, Ordering::Relaxed);
    }
    if phase == IorPhase::Write && p.fsync {
        file.sync_all().map_err(|e| format!("fsync {}: {e}", path.display()))?;
    }
    // Closing is part of the phase, as in IOR (close can flush on network file systems).
    drop(file);
    Ok(())
}

/// Removes this client's test files after the last read (IOR does unless `-k`): every task's
/// own file, or the shared file from the client that runs task 0.
pub fn remove_files(job: &IorJob) -> Result<(), String> {
    let paths: Vec<PathBuf> = if job.params.file_per_proc {
        job.tasks.clone().map(|t| job.file_of(t)).collect()
    } else if job.tasks.contains(&0) {
        vec![job.base.clone()]
    } else {
        vec![]
    };
    for path in paths {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("remove {}: {e}", path.display()));
            }
            _ => {}
        }
    }
    Ok(())
}
