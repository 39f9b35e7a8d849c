//! mdtest's phases over a directory tree of depth `z` and branching `b`, `I` items per
//! directory per task: tree creation, item creation, stat, read, removal, tree removal. Item
//! names are mdtest's (`file.mdtest.TASK.N`, `dir.mdtest.TASK.N`), so a tree can be inspected
//! the same way.

use super::{EngineError, Progress, TaskResult};
use crate::files::{Dir, FileError};
use pvfs_bench::params::{MdtestParams, Workload};
use pvfs_bench::phase::MdtestPhase;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

/// One client's share of an mdtest run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MdtestJob {
    pub params: MdtestParams,
    /// `-d`
    pub dir: PathBuf,
    pub tasks: std::ops::Range<u32>,
    pub iteration: u32,
}

impl MdtestJob {
    /// The per-iteration directory every tree sits in, relative to `dir`.
    fn iteration_dir(&self) -> String {
        format!("test-dir.0-{}", self.iteration)
    }

    /// The name of the tree's root for `task` in the iteration's directory: its own with `-u`,
    /// the shared one otherwise.
    fn root_name(&self, task: u32) -> String {
        if self.params.unique_dir { format!("mdtest_tree.{task}.0") } else { "mdtest_tree.0".to_owned() }
    }

    /// Whether `task` creates and removes the tree (every task with `-u`; the first otherwise).
    fn owns_tree(&self, task: u32) -> bool {
        self.params.unique_dir || task == 0
    }

    /// The workload's bounds (tree size, items per task), which the walks below rely on.
    pub fn check(&self) -> Result<(), EngineError> {
        let tasks = self.tasks.end.max(1);
        Ok(Workload::Mdtest(self.params.clone()).check_run(tasks)?)
    }
}

/// The children of a tree directory at `level` (0 is the root): `mdtest_tree.{level+1}.{i}`.
fn child_name(level: u32, i: u32) -> String {
    format!("mdtest_tree.{}.{i}", level + 1)
}

/// Runs `phase` for every task of `job` on this client, one thread each. The run directory is
/// opened once without following symlinks; every tree directory is reached from it one
/// component at a time, and every item is made, read or removed by name in its directory
/// (`mkdirat`, `O_CREAT | O_EXCL | O_NOFOLLOW`, `fstatat` without following, `unlinkat`).
pub fn run_mdtest_phase(job: &MdtestJob, phase: MdtestPhase, progress: &Progress) -> Vec<TaskResult> {
    let dir = job.check().and_then(|()| Ok(Dir::open(&job.dir)?));
    super::each_task(job.tasks.clone(), |task| match &dir {
        Ok(dir) => run_task(job, dir, phase, task, progress),
        Err(err) => super::failed(task, err),
    })
}

fn run_task(
    job: &MdtestJob,
    run_dir: &Dir,
    phase: MdtestPhase,
    task: u32,
    progress: &Progress,
) -> TaskResult {
    let start = SystemTime::now();
    let mut r = TaskResult::begun(task, start);
    let mut latency = pvfs_bench::latency::Recorder::new();
    // Each operation counted with how long it took since `since`.
    let mut count = |since: Instant| {
        r.ops += 1;
        latency.record(since.elapsed().as_nanos() as u64);
        progress.ops.fetch_add(1, Ordering::Relaxed);
    };
    let outcome = (|| -> Result<(), EngineError> {
        let tree = Tree { params: &job.params, progress };
        let root = job.root_name(task);
        match phase {
            MdtestPhase::TreeCreate if job.owns_tree(task) => {
                let parent = run_dir.create_dir(job.iteration_dir())?;
                let since = Instant::now();
                let root = parent.create_dir(&root)?;
                count(since);
                tree.create(&root, 0, &mut count)
            }
            MdtestPhase::TreeRemove if job.owns_tree(task) => {
                let parent = run_dir.open_dir(Path::new(&job.iteration_dir()))?;
                tree.remove(&parent.open_dir(Path::new(&root))?, 0, &mut count)?;
                let since = Instant::now();
                parent.remove_dir(&root)?;
                count(since);
                // The per-iteration parent, once empty (the last task's removal wins).
                let _ = run_dir.remove_dir(&job.iteration_dir());
                Ok(())
            }
            MdtestPhase::TreeCreate | MdtestPhase::TreeRemove => Ok(()),
            _ => {
                let root = run_dir.open_dir(&Path::new(&job.iteration_dir()).join(root))?;
                tree.each_item_dir(&root, 0, &mut |dir| items(job, dir, phase, task, progress, &mut count))
            }
        }
    })();
    r.end = SystemTime::now();
    r.error = outcome.err().map(|e| e.to_string());
    r.latency = latency.buckets();
    r
}

/// One phase's items in one directory.
fn items(
    job: &MdtestJob,
    dir: &Dir,
    phase: MdtestPhase,
    task: u32,
    progress: &Progress,
    count: &mut dyn FnMut(Instant),
) -> Result<(), EngineError> {
    for n in 0..job.params.items {
        progress.check()?;
        let file = format!("file.mdtest.{task}.{n}");
        let sub = format!("dir.mdtest.{task}.{n}");
        let since = Instant::now();
        match phase {
            MdtestPhase::DirCreate => dir.mkdir(&sub)?,
            MdtestPhase::DirStat => drop(dir.stat(&sub)?),
            MdtestPhase::DirRemove => dir.remove_dir(&sub)?,
            MdtestPhase::FileCreate => drop(dir.create_new(&file, 0o644)?),
            MdtestPhase::FileStat => drop(dir.stat(&file)?),
            // mdtest reads -e bytes (0 by default): open, one read, close. The files are
            // created empty; a bounded read keeps anything else found there harmless.
            MdtestPhase::FileRead => {
                let mut buf = [0u8; 4096];
                let mut opened = dir.open_read(&file, nix::fcntl::OFlag::empty())?;
                std::io::Read::read(&mut opened, &mut buf)
                    .map_err(|e| FileError::io("read", dir.path().join(&file), e))?;
            }
            _ => dir.remove_file(&file, false)?,
        }
        count(since);
    }
    Ok(())
}

/// Depth-first walks of a task's tree, each directory opened through its parent without
/// following symlinks. A walk holds one open directory per level (at most `MAX_DEPTH` + 1)
/// and no list of directories, whatever the tree's size.
struct Tree<'a> {
    params: &'a MdtestParams,
    progress: &'a Progress,
}

impl Tree<'_> {
    /// Makes the directories below `dir` (at `level`), parents first.
    fn create(&self, dir: &Dir, level: u32, count: &mut dyn FnMut(Instant)) -> Result<(), EngineError> {
        if level == self.params.depth {
            return Ok(());
        }
        for i in 0..self.params.branch {
            self.progress.check()?;
            let since = Instant::now();
            let child = dir.create_dir(child_name(level, i))?;
            count(since);
            self.create(&child, level + 1, count)?;
        }
        Ok(())
    }

    /// Removes the directories below `dir` (at `level`), children first.
    fn remove(&self, dir: &Dir, level: u32, count: &mut dyn FnMut(Instant)) -> Result<(), EngineError> {
        if level == self.params.depth {
            return Ok(());
        }
        for i in 0..self.params.branch {
            self.progress.check()?;
            let name = child_name(level, i);
            self.remove(&dir.open_dir(Path::new(&name))?, level + 1, count)?;
            let since = Instant::now();
            dir.remove_dir(&name)?;
            count(since);
        }
        Ok(())
    }

    /// Calls `visit` on every directory that holds items (the leaves with `-L`, all otherwise).
    fn each_item_dir(
        &self,
        dir: &Dir,
        level: u32,
        visit: &mut dyn FnMut(&Dir) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        if !self.params.leaf_only || level == self.params.depth {
            visit(dir)?;
        }
        if level == self.params.depth {
            return Ok(());
        }
        for i in 0..self.params.branch {
            self.each_item_dir(&dir.open_dir(Path::new(&child_name(level, i)))?, level + 1, visit)?;
        }
        Ok(())
    }
}
