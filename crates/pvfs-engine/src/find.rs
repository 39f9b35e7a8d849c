//! pfind's find, as io500's find phase runs it (VI4IO/pfind aaba722, `src/pfind.c`): every
//! directory below a root is read once, by one of the phase's threads, which share a queue of
//! directories still to read, as pfind's ranks share theirs by stealing. Each entry that is
//! no directory is a file scanned; one whose name matches is then `lstat`ed (when the search
//! asks for a time or a size) and found when its change time is not before the given one and
//! its size is the given one. io500's figure is the files scanned over the time taken.
//!
//! Directories are opened through their parent without following symlinks, and nothing is
//! ever followed: a symlink is a file scanned, as pfind counts it. A match is looked at by its
//! whole path, as pfind's `find_do_lstat` does (`Dir::stat_by_path`), so the lookups it costs
//! are in the figure.
//!
//! Across clients ([`Share`]) the directories are split by a hash of their path below the
//! root: each client scans the ones it owns, so every file is scanned once by the run. A
//! directory another client owns is read only to find its subdirectories, and not at all when
//! its link count says it has none (`st_nlink` 2: a leaf, such as mdtest's directories of
//! files), so the large directories are each read by one client only.

use crate::engine::{EngineError, Progress};
use crate::files::Dir;
use pvfs_bench::params::FindParams;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};

/// What a find counted, as pfind's result line and io500's `find.csv` name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FindCounts {
    /// Files found.
    pub found: u64,
    /// Entries that are no directory: the files scanned (io500's rate divides these).
    pub total: u64,
    /// Every entry read (directories too).
    pub checked: u64,
    /// Entries whose type `readdir` did not say (looked at with `lstat`).
    pub unknown: u64,
    /// Entries that could not be looked at (gone meanwhile, say).
    pub errors: u64,
}

/// The shared queue: directories still to read (relative to the root) and how many threads
/// are reading one, so that the last idle thread knows the walk is over.
struct Queue {
    state: Mutex<(VecDeque<PathBuf>, usize)>,
    ready: Condvar,
}

/// Which part of the scan is this client's: the directories whose path's hash falls to
/// `index` of `of` clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pub index: u32,
    pub of: u32,
}

impl Share {
    /// The whole scan.
    pub const ALL: Share = Share { index: 0, of: 1 };

    /// Whether the directory at `rel` below the root is this client's to scan. FNV-1a over the
    /// path's bytes: the same on every client, whatever its build (written out: the split must
    /// not depend on a hasher's seed or version).
    fn owns(&self, rel: &Path) -> bool {
        if self.of <= 1 {
            return true;
        }
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in rel.as_os_str().as_encoded_bytes() {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
        hash % u64::from(self.of) == u64::from(self.index)
    }
}

/// Finds `spec` below `root` with `threads` threads, scanning this client's `share`. A directory that cannot be read (or a
/// symlink where one was listed) fails the find, naming it: a scan that skipped part of the
/// tree would report a rate for work it did not do.
pub fn find(
    root: &Path,
    spec: &FindParams,
    threads: usize,
    share: Share,
    progress: &Progress,
) -> Result<FindCounts, EngineError> {
    let root = Dir::open(root)?;
    // pfind's -newer FILE: the file's change time, as the file system's clock set it.
    let since = match spec.newer_path().map_err(|why| pvfs_bench::params::Violation::new("newer", why))? {
        Some(rel) => root.open_dir(rel)?.ctime()?,
        None => spec.changed_since,
    };
    let spec = &FindParams { changed_since: since, ..spec.clone() };
    let queue = Queue { state: Mutex::new((VecDeque::from([PathBuf::new()]), 0)), ready: Condvar::new() };
    let counts = Mutex::new(FindCounts::default());
    let failed: Mutex<Option<EngineError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                let mut mine = FindCounts::default();
                while let Some(rel) = next(&queue) {
                    let outcome = progress
                        .check()
                        .and_then(|()| read(&root, &rel, spec, share, &queue, &mut mine, progress));
                    done(&queue);
                    if let Err(err) = outcome {
                        failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(err);
                        // Every thread stops: nothing more is handed out.
                        let mut state = queue.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        state.0.clear();
                        queue.ready.notify_all();
                        break;
                    }
                }
                let mut all = counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                all.found += mine.found;
                all.total += mine.total;
                all.checked += mine.checked;
                all.unknown += mine.unknown;
                all.errors += mine.errors;
            });
        }
    });
    match failed.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
        Some(err) => Err(err),
        None => Ok(counts.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)),
    }
}

/// The next directory to read, waiting while others may still add some; `None` once the
/// queue is empty and no thread is reading.
fn next(queue: &Queue) -> Option<PathBuf> {
    let mut state = queue.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    loop {
        if let Some(rel) = state.0.pop_front() {
            state.1 += 1;
            return Some(rel);
        }
        if state.1 == 0 {
            queue.ready.notify_all();
            return None;
        }
        state = queue.ready.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
    }
}

/// A thread finished reading a directory.
fn done(queue: &Queue) {
    let mut state = queue.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    state.1 -= 1;
    queue.ready.notify_all();
}

/// Reads one directory: its subdirectories onto the queue, its other entries scanned.
fn read(
    root: &Dir,
    rel: &Path,
    spec: &FindParams,
    share: Share,
    queue: &Queue,
    counts: &mut FindCounts,
    progress: &Progress,
) -> Result<(), EngineError> {
    use nix::dir::Type;
    let dir = root.open_dir(rel)?;
    let owned = share.owns(rel);
    // Another client's leaf: nothing here for this one (no subdirectory to find).
    if !owned && dir.links()? == 2 {
        return Ok(());
    }
    let needs_stat = spec.changed_since != 0 || spec.size.is_some();
    let pattern =
        spec.name_pattern().map_err(|e| pvfs_bench::params::Violation::new("name", e.to_string()))?;
    let mut found_dirs = Vec::new();
    dir.each_entry(|name, kind| -> Result<(), EngineError> {
        counts.checked += u64::from(owned);
        let name_str = || <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.to_bytes());
        let kind = match kind {
            Some(kind) => kind,
            None => {
                counts.unknown += u64::from(owned);
                match dir.lstat_at(name) {
                    Ok(st) if is_dir(st.st_mode) => Type::Directory,
                    Ok(_) => Type::File,
                    Err(_) => {
                        counts.errors += 1;
                        return Ok(());
                    }
                }
            }
        };
        if kind == Type::Directory {
            found_dirs.push(rel.join(name_str()));
            return Ok(());
        }
        if !owned {
            return Ok(());
        }
        counts.total += 1;
        progress.ops.fetch_add(1, Ordering::Relaxed);
        if pattern.as_ref().is_some_and(|p| !p.matches(name.to_bytes())) {
            return Ok(());
        }
        if needs_stat {
            // pfind looks at a match by its whole path from the root (`find_do_lstat`).
            let Ok(st) = dir.stat_by_path(name_str()) else {
                counts.errors += 1;
                return Ok(());
            };
            if (spec.changed_since != 0 && st.st_ctime < spec.changed_since)
                || spec.size.is_some_and(|size| st.st_size as u64 != size)
            {
                return Ok(());
            }
        }
        counts.found += 1;
        Ok(())
    })?;
    if !found_dirs.is_empty() {
        let mut state = queue.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.0.extend(found_dirs);
        queue.ready.notify_all();
    }
    Ok(())
}

/// Whether `st_mode` is a directory's.
fn is_dir(mode: u32) -> bool {
    use nix::sys::stat::SFlag;
    mode & SFlag::S_IFMT.bits() == SFlag::S_IFDIR.bits()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{MdtestJob, MdtestPhase, run_mdtest_phase};
    use pvfs_bench::params::MdtestParams;
    use pvfs_bench::params::NamePattern;

    fn scratch() -> tempfile::TempDir {
        let base = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/engine-tests"));
        std::fs::create_dir_all(&base).unwrap();
        tempfile::tempdir_in(base.canonicalize().unwrap()).unwrap()
    }

    #[test]
    fn names_match_as_pfinds_regular_expression_does() {
        let p = NamePattern::parse("*01*").unwrap();
        assert!(p.matches(b"file.mdtest.3.101") && p.matches(b"01") && !p.matches(b"file.mdtest.0.1"));
        let p = NamePattern::parse("a*b").unwrap();
        assert!(p.matches(b"xaxxbx") && !p.matches(b"bxa"), "unanchored, in order");
        assert!(NamePattern::parse("\"*\"").unwrap().matches(b"anything"));
        let err = NamePattern::parse("file[0-9]").unwrap_err().to_string();
        assert!(err.contains("pfind reads [ ] ^ $ \\ as a regular expression's"), "{err}");
    }

    /// io500's find over a tree made by the engine's own mdtest (io500's mdtest-easy: empty
    /// files in a tree per task; mdtest-hard: 3901-byte files in one directory), counted as
    /// GNU find counts the same tree: every file scanned, and those of 3901 bytes whose name
    /// holds `01`. A symlink is scanned as a file and not followed; a later change time
    /// than the files' finds none.
    #[test]
    fn find_counts_what_gnu_find_counts() {
        let dir = scratch();
        let made_before = nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME).unwrap().tv_sec();
        for (sub, hard) in [("mdtest-easy", false), ("mdtest-hard", true)] {
            let params = MdtestParams {
                iterations: 1,
                per_task: 150,
                stride: 1,
                unique_dir: !hard,
                leaf_only: !hard,
                files_only: true,
                write_bytes: if hard { 3901 } else { 0 },
                ..MdtestParams::default()
            };
            let run = dir.path().join(sub);
            std::fs::create_dir(&run).unwrap();
            let job = MdtestJob {
                params,
                dir: run,
                tasks: 0..3,
                total_tasks: 3,
                iteration: 0,
                stop_after: None,
                pace: None,
                thread_name: None,
            };
            for phase in [MdtestPhase::TreeCreate, MdtestPhase::FileCreate] {
                assert!(
                    run_mdtest_phase(&job, phase, &Progress::default()).iter().all(|r| r.error.is_none())
                );
            }
        }
        let outside = scratch();
        std::fs::write(outside.path().join("file.01"), vec![0u8; 3901]).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link01")).unwrap();

        let spec = FindParams {
            changed_since: made_before,
            size: Some(3901),
            name: "*01*".to_owned(),
            newer: String::new(),
        };
        let counts = find(dir.path(), &spec, 3, Share::ALL, &Progress::default()).unwrap();
        let gnu = |args: &[&str]| {
            let out = std::process::Command::new("find").arg(dir.path()).args(args).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).lines().count() as u64
        };
        assert_eq!(counts.total, gnu(&["-mindepth", "1", "!", "-type", "d"]));
        assert_eq!(counts.total, 3 * 150 * 2 + 1, "every file and the symlink");
        let found = gnu(&["-type", "f", "-size", "3901c", "-name", "*01*"]);
        assert_eq!(counts.found, found);
        assert_eq!(found, 3, "file.mdtest.T.101 of each task's mdtest-hard files");
        assert_eq!(counts.errors, 0);
        // Split across three clients, each file is scanned once: the shares add up to the whole.
        let parts: Vec<FindCounts> = (0..3)
            .map(|index| find(dir.path(), &spec, 2, Share { index, of: 3 }, &Progress::default()).unwrap())
            .collect();
        assert_eq!(parts.iter().map(|p| p.total).sum::<u64>(), counts.total);
        assert_eq!(parts.iter().map(|p| p.found).sum::<u64>(), counts.found);
        assert_eq!(parts.iter().map(|p| p.checked).sum::<u64>(), counts.checked);
        assert!(parts.iter().filter(|p| p.total > 0).count() >= 2, "the scan is shared: {parts:?}");

        // pfind's -newer FILE: a directory made before the files, by the file system's clock.
        let newer =
            FindParams { changed_since: 0, newer: "mdtest-hard/test-dir.0-0".to_owned(), ..spec.clone() };
        assert_eq!(find(dir.path(), &newer, 2, Share::ALL, &Progress::default()).unwrap().found, 3);
        let missing = FindParams { newer: "no-such-dir".to_owned(), ..newer.clone() };
        let err = find(dir.path(), &missing, 1, Share::ALL, &Progress::default()).unwrap_err().to_string();
        assert!(err.contains("no-such-dir"), "{err}");
        let climbing = FindParams { newer: "../x".to_owned(), ..newer };
        let err = find(dir.path(), &climbing, 1, Share::ALL, &Progress::default()).unwrap_err().to_string();
        assert!(err.contains("plain names"), "{err}");
        let later = FindParams { changed_since: made_before + 3600, ..spec };
        assert_eq!(find(dir.path(), &later, 2, Share::ALL, &Progress::default()).unwrap().found, 0);
        let err = find(&dir.path().join("link01"), &later, 1, Share::ALL, &Progress::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("link01") && err.contains("symlink"), "{err}");
    }
}
