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

pub use ior::{IorJob, IorPhase, remove_files, run_ior_phase};
pub use mdtest::{MdtestJob, MdtestPhase, run_mdtest_phase};

use std::sync::atomic::AtomicU64;
use std::time::SystemTime;

/// What one task did in one phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskResult {
    /// Global task number (0 .. tasks across all clients).
    pub task: u32,
    pub start: SystemTime,
    pub end: SystemTime,
    /// Bytes moved (IOR) or 0 (mdtest).
    pub bytes: u64,
    /// Transfers (IOR) or items (mdtest) done.
    pub ops: u64,
    /// The first error, naming the file and the operation; the task stopped there.
    pub error: Option<String>,
}

/// Live counters a phase updates as it goes, read once a second for `--watch`.
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes: AtomicU64,
    pub ops: AtomicU64,
}

/// Aggregate of a phase over every task of every client: IOR's "bw" and "IOPS" with barriers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseTotals {
    pub bytes: u64,
    pub ops: u64,
    /// Last end − first start, seconds.
    pub seconds: f64,
    pub bw_mib: f64,
    pub ops_per_sec: f64,
}

/// Totals of a phase from every task's result (`None` when there are none).
pub fn totals(results: &[TaskResult]) -> Option<PhaseTotals> {
    let start = results.iter().map(|r| r.start).min()?;
    let end = results.iter().map(|r| r.end).max()?;
    let seconds = end.duration_since(start).unwrap_or_default().as_secs_f64().max(1e-9);
    let bytes: u64 = results.iter().map(|r| r.bytes).sum();
    let ops: u64 = results.iter().map(|r| r.ops).sum();
    Some(PhaseTotals {
        bytes,
        ops,
        seconds,
        bw_mib: bytes as f64 / (1u64 << 20) as f64 / seconds,
        ops_per_sec: ops as f64 / seconds,
    })
}

#[cfg(test)]
mod tests;
