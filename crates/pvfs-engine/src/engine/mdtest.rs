//! mdtest's phases over a directory tree of depth `z` and branching `b`: tree creation, item
//! creation, stat, read, removal, tree removal. Items are numbered as mdtest numbers them
//! (directory `d` holds items `d·I … d·I + I − 1`, directories counted level by level) and
//! named as it names them (`file.mdtest.TASK.N`, `dir.mdtest.TASK.N`), so a tree can be
//! inspected the same way; with `-N` a phase works on a neighbour's items as mdtest's does.

use super::stonewall::WearOut;
use super::{EngineError, Progress, TaskResult, pattern};
use crate::files::{Dir, FileError};
use pvfs_bench::params::{DataPacket, MdtestParams, Workload};
use pvfs_bench::phase::MdtestPhase;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

/// One client's share of an mdtest run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MdtestJob {
    pub params: MdtestParams,
    /// `-d`
    pub dir: PathBuf,
    pub tasks: std::ops::Range<u32>,
    /// Tasks across all clients (whose neighbours `-N` counts among).
    pub total_tasks: u32,
    pub iteration: u32,
    /// Files each task's file phases stop at: the count agreed at the creation's stonewall
    /// (`-W`), which mdtest carries to its later phases (and io500 in its `-x` file).
    pub stop_after: Option<u64>,
    /// The test seam of [`super::IorJob::pace`], for file creation: a straggler at the
    /// stonewall.
    pub pace: Option<super::Pace>,
    /// The name of every task thread, as [`super::IorJob::thread_name`].
    pub thread_name: Option<String>,
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

    /// The task `shifts` strides of `-N` after `task`, round the run (mdtest's
    /// `(rank + k·nstride) % size`).
    fn neighbour(&self, task: u32, shifts: u32) -> u32 {
        let total = u64::from(self.total_tasks.max(1));
        ((u64::from(task) + u64::from(shifts) * u64::from(self.params.stride)) % total) as u32
    }

    /// Whose items `task` works on in `phase`, and (with `-u`) whose tree holds them: mdtest
    /// names a phase's items after the task `k` strides on (creation 0, stat 1, read 2, removal
    /// 3) and, with `-u`, looks for them in the tree `k + 1` strides on (where that task made
    /// them). Without `-N` both are the task itself.
    fn owners(&self, task: u32, phase: MdtestPhase) -> (u32, u32) {
        let k = match phase {
            MdtestPhase::FileStat | MdtestPhase::DirStat => 1,
            MdtestPhase::FileRead => 2,
            MdtestPhase::FileRemove | MdtestPhase::DirRemove => 3,
            _ => 0,
        };
        (self.neighbour(task, k), self.neighbour(task, k + 1))
    }

    /// The workload's bounds (tree size, items per task), which the walks below rely on.
    pub fn check(&self) -> Result<(), EngineError> {
        if self.tasks.end > self.total_tasks || self.tasks.is_empty() {
            return Err(EngineError::InvalidShare {
                tasks: self.tasks.clone(),
                total_tasks: self.total_tasks,
            });
        }
        Ok(Workload::Mdtest(self.params.clone()).check_run(self.total_tasks)?)
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
    run_mdtest_phase_across(job, phase, progress, None)
}

/// [`run_mdtest_phase`] for a share of a run whose stonewall (`-W`) is agreed with the other
/// clients through `across` (given this client's most files, it returns the run's).
pub fn run_mdtest_phase_across(
    job: &MdtestJob,
    phase: MdtestPhase,
    progress: &Progress,
    across: Option<super::Across<'_>>,
) -> Vec<TaskResult> {
    let tasks = job.tasks.end.saturating_sub(job.tasks.start);
    let walled = phase == MdtestPhase::FileCreate && job.params.deadline > 0;
    let agree = super::stonewall::agreement(tasks, job.total_tasks, walled, across);
    let dir = job.check().and_then(|()| Ok(Dir::open(&job.dir)?));
    let (dir, agree) = match agree {
        Ok(agree) => (dir, agree),
        Err(err) => (dir.and_then(|_| Err(err)), across.unwrap_or(&|most| Ok(most))),
    };
    // mdtest makes the iteration's directory before the barrier that starts the tree's clock,
    // and removes it after the barrier that stops it: neither is in the tree rows' time.
    let (dir, parent) = match dir {
        Ok(dir) if phase == MdtestPhase::TreeCreate => match dir.create_dir(job.iteration_dir()) {
            Ok(parent) => (Ok(dir), Some(parent)),
            Err(err) => (Err(err.into()), None),
        },
        dir => (dir, None),
    };
    let wear_out = WearOut::new(tasks as usize, agree);
    let wall = walled.then_some(&wear_out);
    let results = super::each_task(job.tasks.clone(), job.thread_name.as_deref(), |task, ready| match &dir {
        Ok(dir) => run_task(job, dir, parent.as_ref(), (phase, task), progress, wall, ready),
        Err(err) => {
            if let Some(wall) = wall {
                wall.arrive(None);
            }
            super::failed(task, err)
        }
    });
    if let (Ok(dir), MdtestPhase::TreeRemove) = (&dir, phase) {
        // Once empty: with -u on several clients, the last client's removal is the one that
        // finds it so.
        let _ = dir.remove_dir(&job.iteration_dir());
    }
    results
}

/// What a task does to the items of one directory, and what it has done.
struct Items<'a> {
    job: &'a MdtestJob,
    phase: MdtestPhase,
    /// Whose items these are (`-N`).
    owner: u32,
    /// The data each file gets (`-w`), stamped per item; the buffer reads land in (`-e`).
    write: Vec<u8>,
    read: Vec<u8>,
    /// Files read back that differ from what their writer wrote (`-X`), and the first one.
    mismatches: u64,
    first_mismatch: Option<PathBuf>,
    progress: &'a Progress,
    result: &'a mut TaskResult,
    latency: &'a mut crate::engine::TaskLatency,
}

/// One task's part of `phase`; `parent` is the iteration's directory when the phase is the
/// tree's creation (made before the tasks began).
fn run_task(
    job: &MdtestJob,
    run_dir: &Dir,
    parent: Option<&Dir>,
    (phase, task): (MdtestPhase, u32),
    progress: &Progress,
    wall: Option<&WearOut<'_>>,
    ready: &super::Ready<'_>,
) -> TaskResult {
    let mut latency = crate::engine::TaskLatency::new(true);
    let p = &job.params;
    let (owner, holder) = job.owners(task, phase);
    let mut write = Vec::new();
    if phase == MdtestPhase::FileCreate && p.write_bytes > 0 {
        // Bounded by the workload's check (at most MAX_TRANSFER).
        write = vec![0u8; p.write_bytes as usize];
        pattern::generate(&mut write, DataPacket::Timestamp, p.seed, task);
    }
    let read = match phase {
        MdtestPhase::FileRead if p.read_bytes > 0 => vec![0u8; p.read_bytes as usize],
        // Without -e mdtest opens and closes; the engine reads at most a page, so that
        // something found there is read and harmless.
        MdtestPhase::FileRead => vec![0u8; 4096],
        _ => Vec::new(),
    };
    // The directories the task works in are opened before its clock too: mdtest names them by
    // path in each call, so finding them is no part of its rows — and removing a tree of depth
    // 0 is then one rmdir in the clock, as mdtest's is (with the iteration's directory and the
    // root opened inside it, the engine's tree removal was 0.47× mdtest's on tmpfs). They are
    // closed after the clock stops.
    let (dir, open_error) = match task_dir(job, run_dir, phase, task, holder) {
        Ok(dir) => (dir, None),
        Err(err) => (None, Some(err)),
    };
    // The clock starts once every task is ready, as mdtest's phase timers start after a
    // barrier: the buffers above are made before it.
    ready.wait();
    let start = SystemTime::now();
    let mut r = TaskResult::begun(task, start);
    let mut items = Items {
        job,
        phase,
        owner,
        write,
        read,
        mismatches: 0,
        first_mismatch: None,
        progress,
        result: &mut r,
        latency: &mut latency,
    };
    let mut arrived = false;
    let outcome = (|| -> Result<(), EngineError> {
        if let Some(err) = open_error {
            return Err(err);
        }
        let tree = Tree { params: p, progress };
        match phase {
            MdtestPhase::TreeCreate if job.owns_tree(task) => {
                let Some(parent) = parent else { return Err(EngineError::NoTask) };
                let since = Instant::now();
                if p.depth == 0 {
                    // The tree is its root: made, not opened (mdtest's mkdir by path).
                    parent.mkdir(&job.root_name(task))?;
                    items.count(since, 0);
                    return Ok(());
                }
                let root = parent.create_dir(job.root_name(task))?;
                items.count(since, 0);
                tree.create(&root, 0, &mut |since| items.count(since, 0))
            }
            MdtestPhase::TreeRemove if job.owns_tree(task) => {
                let Some(parent) = &dir else { return Err(EngineError::NoTask) };
                let root = job.root_name(task);
                if p.depth > 0 {
                    tree.remove(&parent.open_dir(Path::new(&root))?, 0, &mut |since| items.count(since, 0))?;
                }
                let since = Instant::now();
                parent.remove_dir(&root)?;
                items.count(since, 0);
                Ok(())
            }
            MdtestPhase::TreeCreate | MdtestPhase::TreeRemove => Ok(()),
            _ => {
                let Some(root) = &dir else { return Err(EngineError::NoTask) };
                let per_dir = p.items_per_dir().unwrap_or(0); // bounded by the job's check
                if let Some(wall) = wall {
                    // mdtest's stonewall: one directory (depth 0, the workload's check), files
                    // made until the deadline, then as many as the most any task made.
                    let deadline = Duration::from_secs(p.deadline.into());
                    let made = items.run(root, 0..per_dir, Some(Instant::now() + deadline))?;
                    arrived = true;
                    let most = wall.agree(Some(made), progress)?;
                    items.run(root, made..most.min(per_dir), None)?;
                    return Ok(());
                }
                let stop = job.stop_after.filter(|_| is_file_phase(phase));
                let mut budget = stop.unwrap_or(u64::MAX);
                tree.each_item_dir(root, 0, 0, &mut |dir, index| {
                    let first = index * per_dir; // bounded: at most MAX_TREE_DIRS × items per dir
                    let n = per_dir.min(budget);
                    budget -= n;
                    items.run(dir, first..first + n, None).map(drop)
                })
            }
        }
    })();
    if let (Some(wall), false) = (wall, arrived) {
        // A task that failed before the stonewall still says so, or the others would wait.
        wall.arrive(None);
    }
    let outcome = outcome.and_then(|()| {
        // -Y: mdtest's phase_end, inside the phase's time.
        if p.sync && !matches!(phase, MdtestPhase::TreeCreate | MdtestPhase::TreeRemove) {
            nix::unistd::sync();
        }
        match (items.mismatches, &items.first_mismatch) {
            (0, _) => Ok(()),
            (n, first) => Err(EngineError::Verify {
                mismatches: n,
                writer: job.neighbour(task, 2),
                first: first.clone().unwrap_or_default(),
            }),
        }
    });
    r.end = SystemTime::now();
    r.error = outcome.err().map(|e| e.to_string());
    r.latency = latency.finish(progress);
    r
}

/// The directory `task` works in during `phase`, opened before its clock starts: the
/// iteration's directory for a tree's removal, the root of `holder`'s tree for the items'
/// phases; none for a tree's creation (its parent is made before the tasks begin) or for a
/// task that owns no tree.
fn task_dir(
    job: &MdtestJob,
    run_dir: &Dir,
    phase: MdtestPhase,
    task: u32,
    holder: u32,
) -> Result<Option<Dir>, EngineError> {
    let rel = match phase {
        MdtestPhase::TreeCreate => return Ok(None),
        MdtestPhase::TreeRemove if !job.owns_tree(task) => return Ok(None),
        MdtestPhase::TreeRemove => PathBuf::from(job.iteration_dir()),
        _ => Path::new(&job.iteration_dir()).join(job.root_name(holder)),
    };
    Ok(Some(run_dir.open_dir(&rel)?))
}

/// The phases of files, which a stonewalled creation's count stops.
fn is_file_phase(phase: MdtestPhase) -> bool {
    matches!(
        phase,
        MdtestPhase::FileCreate | MdtestPhase::FileStat | MdtestPhase::FileRead | MdtestPhase::FileRemove
    )
}

impl Items<'_> {
    /// One operation done, begun at `since`, that moved `bytes`.
    fn count(&mut self, since: Instant, bytes: u64) {
        self.result.ops += 1;
        self.result.bytes += bytes;
        self.latency.record(Some(since), self.progress);
        self.progress.ops.fetch_add(1, Ordering::Relaxed);
        self.progress.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The phase's operation on items `numbers` of `dir`, stopping after the item during which
    /// `deadline` passed (mdtest tests its stonewall after each item); returns the number after
    /// the last item done.
    fn run(
        &mut self,
        dir: &Dir,
        numbers: std::ops::Range<u64>,
        deadline: Option<Instant>,
    ) -> Result<u64, EngineError> {
        let p = &self.job.params;
        for n in numbers.clone() {
            self.progress.check()?;
            let file = format!("file.mdtest.{}.{n}", self.owner);
            let sub = format!("dir.mdtest.{}.{n}", self.owner);
            if let (Some(pace), MdtestPhase::FileCreate) = (self.job.pace, self.phase) {
                std::thread::sleep(pace.before(self.result.task, self.result.ops));
            }
            let since = Instant::now();
            let mut bytes = 0;
            match self.phase {
                MdtestPhase::DirCreate => dir.mkdir(&sub)?,
                // mdtest stats each item by its whole path (`Dir::stat_by_path`).
                MdtestPhase::DirStat => drop(dir.stat_by_path(&sub)?),
                MdtestPhase::DirRemove => dir.remove_dir(&sub)?,
                MdtestPhase::FileCreate => {
                    let mut created = dir.create_new(&file, 0o644)?;
                    if !self.write.is_empty() {
                        // The item's stamp (a no-op for timestamp data, mdtest's default).
                        pattern::update(&mut self.write, DataPacket::Timestamp, p.seed, n, self.owner);
                        let io = |e| FileError::io("write", dir.path().join(&file), e);
                        created.write_all(&self.write).map_err(io)?;
                        if p.fsync {
                            created
                                .sync_all()
                                .map_err(|e| FileError::io("fsync", dir.path().join(&file), e))?;
                        }
                        bytes = p.write_bytes;
                    }
                }
                MdtestPhase::FileStat => drop(dir.stat_by_path(&file)?),
                MdtestPhase::FileRead => {
                    let mut opened = dir.open_read(&file, nix::fcntl::OFlag::empty())?;
                    let io = |e| FileError::io("read", dir.path().join(&file), e);
                    if p.read_bytes == 0 {
                        opened.read(&mut self.read).map_err(io)?;
                    } else {
                        // A short file is read as far as it goes; what is missing cannot match.
                        let got = read_full(&mut opened, &mut self.read).map_err(io)?;
                        bytes = got as u64;
                        let whole = got == self.read.len();
                        // mdtest: the writer is the task two strides on, as this file's name says.
                        if p.verify
                            && !(whole
                                && pattern::verify(&self.read, DataPacket::Timestamp, p.seed, n, self.owner))
                        {
                            self.mismatches += 1;
                            self.first_mismatch.get_or_insert_with(|| dir.path().join(&file));
                        }
                    }
                }
                _ => dir.remove_file(&file, false)?,
            }
            self.count(since, bytes);
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(n + 1);
            }
        }
        Ok(numbers.end)
    }
}

/// Reads until `buf` is full or the file ends; how much was read.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
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

    /// Calls `visit` on every directory that holds items (the leaves with `-L`, all otherwise)
    /// with its mdtest number (`index`, the root's 0), parents first as mdtest walks them.
    fn each_item_dir(
        &self,
        dir: &Dir,
        level: u32,
        index: u64,
        visit: &mut dyn FnMut(&Dir, u64) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        if !self.params.leaf_only || level == self.params.depth {
            visit(dir, index)?;
        }
        if level == self.params.depth {
            return Ok(());
        }
        for i in 0..self.params.branch {
            let child = dir.open_dir(Path::new(&child_name(level, i)))?;
            self.each_item_dir(&child, level + 1, self.params.child_index(index, i), visit)?;
        }
        Ok(())
    }
}
