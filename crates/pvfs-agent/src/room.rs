//! Room on the file system a benchmark writes to: a write phase that would leave it almost
//! full is refused before it starts.
//!
//! IOR fills whatever it is pointed at: `t=1g b=16t` is within the per-task limits and wrote
//! 12 GiB in 20 s into a root file system before anyone stopped it. So before every write
//! phase the agent asks the kernel (`statfs` on the run's directory, or the nearest directory
//! of it that exists) how much the file system has free to unprivileged writers, and refuses a
//! phase that would leave less than [`MARGIN_PERCENT`] of it, naming both numbers. On a file
//! system the clients share (Lustre, BeeGFS, GlusterFS over FUSE, NFS) every client's tasks
//! land on it, so the whole run's bytes are counted; on a local one, this client's.

use std::path::{Path, PathBuf};

/// What a write phase must leave free, in percent of the file system's size.
pub const MARGIN_PERCENT: u64 = 5;

/// `statfs(2)` `f_type`s of file systems whose space every client shares (linux/magic.h,
/// and Lustre's and BeeGFS's own).
const SHARED: &[(i64, &str)] = &[
    (0x0BD0_0BD0, "lustre"),
    (0x1983_0326, "beegfs"),
    (0x6573_5546, "fuse"),
    (0x6969, "nfs"),
    (0x00C3_6400, "ceph"),
    (0x4750_4653, "gpfs"),
];

/// Why a write phase may not start here.
#[derive(Debug, thiserror::Error)]
pub enum RoomError {
    #[error(
        "the write phase needs {need} in {dir} ({whose}), and its file system ({fs}) has {free} free of {size}: it \
         would leave less than {MARGIN_PERCENT} % ({margin}) free; use smaller sizes (--set b=…, s=…) or fewer \
         tasks, or free space first"
    )]
    Full {
        dir: PathBuf,
        whose: &'static str,
        fs: String,
        need: Bytes,
        free: Bytes,
        size: Bytes,
        margin: Bytes,
    },
    /// A running job's file system fell under the margin (engine io500, whose writes end at
    /// their stonewall, not at a size).
    #[error(
        "the file system of {dir} is down to {free} free of {size} (under {MARGIN_PERCENT} %): the run was stopped \
         before it filled it; use a shorter stonewall (debug.stonewall-time) or smaller sizes"
    )]
    Filling { dir: PathBuf, free: Bytes, size: Bytes },
    #[error("cannot tell how much room {dir} has: {source}")]
    Statfs {
        dir: PathBuf,
        #[source]
        source: nix::Error,
    },
}

/// A byte count shown as IOR shows sizes (binary units), with the exact count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bytes(pub u64);

impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
        let mut value = self.0 as f64;
        let mut unit = 0;
        while value >= 1024.0 && unit < UNITS.len() - 1 {
            value /= 1024.0;
            unit += 1;
        }
        if unit == 0 {
            write!(f, "{} B", self.0)
        } else {
            write!(f, "{value:.1} {} ({} bytes)", UNITS[unit], self.0)
        }
    }
}

/// What a phase will write: this client's tasks' bytes, and the whole run's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writes {
    pub client: u64,
    pub run: u64,
}

/// Refuses the phase when writing `writes` into `dir` would leave its file system with less
/// than [`MARGIN_PERCENT`] free.
pub fn check(dir: &Path, writes: Writes) -> Result<(), RoomError> {
    let at = existing(dir);
    let stat =
        nix::sys::statfs::statfs(at).map_err(|source| RoomError::Statfs { dir: dir.to_owned(), source })?;
    // f_bavail: what is free to writers other than root's reserve; the engine runs as root,
    // but a full disk is full for the node's services too.
    let block = u64::try_from(stat.block_size()).unwrap_or(0);
    let free = stat.blocks_available().saturating_mul(block);
    let size = stat.blocks().saturating_mul(block);
    let kind = stat.filesystem_type().0;
    let shared = SHARED.iter().find(|(magic, _)| *magic == kind).map(|(_, name)| *name);
    let (need, whose) = match shared {
        Some(_) => (writes.run, "every client's tasks, on a shared file system"),
        None => (writes.client, "this client's tasks"),
    };
    let margin = size / 100 * MARGIN_PERCENT;
    if need.saturating_add(margin) <= free {
        return Ok(());
    }
    Err(RoomError::Full {
        dir: dir.to_owned(),
        whose,
        fs: shared.map_or_else(|| format!("type {kind:#x}"), str::to_owned),
        need: Bytes(need),
        free: Bytes(free),
        size: Bytes(size),
        margin: Bytes(margin),
    })
}

/// While a job runs: an error when `dir`'s file system has fallen under [`MARGIN_PERCENT`] free
/// (a file system that cannot be asked is left to the job).
pub fn filling(dir: &Path) -> Option<RoomError> {
    let stat = nix::sys::statfs::statfs(existing(dir)).ok()?;
    let block = u64::try_from(stat.block_size()).unwrap_or(0);
    let free = stat.blocks_available().saturating_mul(block);
    let size = stat.blocks().saturating_mul(block);
    under_margin(free, size).then(|| RoomError::Filling {
        dir: dir.to_owned(),
        free: Bytes(free),
        size: Bytes(size),
    })
}

/// Whether `free` of `size` bytes is under [`MARGIN_PERCENT`].
fn under_margin(free: u64, size: u64) -> bool {
    u128::from(free) * 100 < u128::from(size) * u128::from(MARGIN_PERCENT)
}

/// `dir`, or the nearest of its ancestors that exists (the phase makes the rest).
fn existing(dir: &Path) -> &Path {
    dir.ancestors().find(|a| a.exists()).unwrap_or(Path::new("/"))
}

/// What an IOR write phase writes: `-b` × `-s` for each task.
pub fn ior_writes(params: &pvfs_bench::params::IorParams, client_tasks: u32, run_tasks: u32) -> Writes {
    let per_task = params.block.saturating_mul(u64::from(params.segments));
    Writes {
        client: per_task.saturating_mul(u64::from(client_tasks)),
        run: per_task.saturating_mul(u64::from(run_tasks)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_job_is_stopped_under_the_margin_only() {
        assert!(under_margin(4, 100) && !under_margin(5, 100) && !under_margin(50, 100));
        assert!(!under_margin(u64::MAX, u64::MAX) && under_margin(0, u64::MAX));
        // This machine's own disk is not full: nothing to stop.
        let dir = tempfile::tempdir().unwrap();
        assert!(filling(dir.path()).is_none());
    }

    #[test]
    fn a_phase_that_fits_passes_and_one_that_does_not_names_both_numbers() {
        let dir = tempfile::tempdir().unwrap();
        check(&dir.path().join("not/yet/made"), Writes { client: 4096, run: 4096 }).expect("4 KiB fits");
        let err = check(dir.path(), Writes { client: u64::MAX / 2, run: u64::MAX / 2 }).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("free of"), "{message}");
        assert!(message.contains("would leave less than 5 %"), "{message}");
        assert!(message.contains(&dir.path().display().to_string()), "{message}");
    }

    #[test]
    fn sizes_read_in_binary_units_with_the_exact_count() {
        assert_eq!(Bytes(512).to_string(), "512 B");
        assert_eq!(Bytes(12 << 30).to_string(), "12.0 GiB (12884901888 bytes)");
    }
}
