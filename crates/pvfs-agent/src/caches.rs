//! Dropping the node's caches before a benchmark's read and stat phases, so that what is
//! measured is the file system and not this node's memory (elbencho's `--dropcache`, io500's
//! `drop-caches`). `sync(2)` first, so dirty pages are written and can be dropped, then `3`
//! into `/proc/sys/vm/drop_caches`: the page cache, dentries and inodes, as the kernel's
//! documentation (admin-guide/sysctl/vm.rst) describes. `Cached` from `/proc/meminfo` before
//! and after goes into the run's record, so it shows the drop happened and what it freed.

use pvfs_host::Root;
use std::time::Instant;

/// What a drop did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Dropped {
    /// The sync and the drop together.
    pub seconds: f64,
    pub cached_before_kib: u64,
    pub cached_after_kib: u64,
}

/// Syncs and drops the caches (blocking: run it off the async threads).
pub(crate) fn drop_caches(root: &Root) -> Result<Dropped, String> {
    let cached = || -> Result<u64, String> {
        let text = root.read_to_string("/proc/meminfo").map_err(|e| e.to_string())?;
        text.lines()
            .find_map(|l| l.strip_prefix("Cached:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .ok_or_else(|| "/proc/meminfo has no Cached line".to_owned())
    };
    let before = cached()?;
    let started = Instant::now();
    nix::unistd::sync();
    // The test seam for a node whose write-back takes a while (debug builds only): the sync
    // takes this much longer.
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("PVFS_TEST_SYNC_DELAY_MS").ok().and_then(|v| v.parse::<u64>().ok()) {
        std::thread::sleep(std::time::Duration::from_millis(ms.min(60_000)));
    }
    let path = root.path("/proc/sys/vm/drop_caches");
    std::fs::write(&path, "3\n").map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::PermissionDenied => " (the agent is not root?)",
            _ if e.raw_os_error() == Some(nix::libc::EROFS) => {
                " (a container's /proc/sys is read-only unless it is privileged)"
            }
            _ => "",
        };
        format!("cannot drop caches: {}: {e}{hint}", path.display())
    })?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(Dropped { seconds, cached_before_kib: before, cached_after_kib: cached()? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drop_writes_3_and_reads_cached_around_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/vm")).unwrap();
        std::fs::write(dir.path().join("proc/meminfo"), "MemTotal: 100 kB\nCached:   42 kB\n").unwrap();
        std::fs::write(dir.path().join("proc/sys/vm/drop_caches"), "0\n").unwrap();
        let dropped = drop_caches(&Root::at(dir.path())).unwrap();
        assert_eq!((dropped.cached_before_kib, dropped.cached_after_kib), (42, 42));
        assert_eq!(std::fs::read_to_string(dir.path().join("proc/sys/vm/drop_caches")).unwrap(), "3\n");
        std::fs::remove_dir_all(dir.path().join("proc/sys")).unwrap();
        let err = drop_caches(&Root::at(dir.path())).unwrap_err();
        assert!(err.starts_with("cannot drop caches: ") && err.contains("proc/sys/vm/drop_caches"), "{err}");
    }
}
