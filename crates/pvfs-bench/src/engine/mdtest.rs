//! mdtest's phases over a directory tree of depth `z` and branching `b`, `I` items per
//! directory per task: tree creation, item creation, stat, read, removal, tree removal. Item
//! names are mdtest's (`file.mdtest.TASK.N`, `dir.mdtest.TASK.N`), so a tree can be inspected
//! the same way.

use super::{Progress, TaskResult};
use crate::params::MdtestParams;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::SystemTime;

/// One mdtest phase; each is one row of mdtest's SUMMARY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MdtestPhase {
    TreeCreate,
    DirCreate,
    DirStat,
    DirRemove,
    FileCreate,
    FileStat,
    FileRead,
    FileRemove,
    TreeRemove,
}

impl MdtestPhase {
    /// The phases an iteration runs, in mdtest's order: the tree, directory items, file items,
    /// the tree's removal.
    pub fn sequence(p: &MdtestParams) -> Vec<MdtestPhase> {
        let (create, stat, read, remove) = p.phases();
        let mut out = Vec::new();
        if create {
            out.push(MdtestPhase::TreeCreate);
        }
        if !p.files_only {
            out.extend(create.then_some(MdtestPhase::DirCreate));
            out.extend(stat.then_some(MdtestPhase::DirStat));
            out.extend(remove.then_some(MdtestPhase::DirRemove));
        }
        out.extend(create.then_some(MdtestPhase::FileCreate));
        out.extend(stat.then_some(MdtestPhase::FileStat));
        out.extend(read.then_some(MdtestPhase::FileRead));
        out.extend(remove.then_some(MdtestPhase::FileRemove));
        if remove {
            out.push(MdtestPhase::TreeRemove);
        }
        out
    }

    /// mdtest's name for the row.
    pub fn row(self) -> &'static str {
        match self {
            MdtestPhase::TreeCreate => "Tree creation",
            MdtestPhase::DirCreate => "Directory creation",
            MdtestPhase::DirStat => "Directory stat",
            MdtestPhase::DirRemove => "Directory removal",
            MdtestPhase::FileCreate => "File creation",
            MdtestPhase::FileStat => "File stat",
            MdtestPhase::FileRead => "File read",
            MdtestPhase::FileRemove => "File removal",
            MdtestPhase::TreeRemove => "Tree removal",
        }
    }
}

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
    /// The tree's root for `task`: its own with `-u`, the shared one otherwise.
    fn root(&self, task: u32) -> PathBuf {
        let base = self.dir.join(format!("test-dir.0-{}", self.iteration));
        if self.params.unique_dir {
            base.join(format!("mdtest_tree.{task}.0"))
        } else {
            base.join("mdtest_tree.0")
        }
    }

    /// Every directory of the tree under `root`, parents first.
    fn tree(&self, root: &Path) -> Vec<PathBuf> {
        let mut all = vec![root.to_owned()];
        let mut level = vec![root.to_owned()];
        for depth in 1..=self.params.depth {
            level = level
                .iter()
                .flat_map(|p| {
                    (0..self.params.branch).map(move |i| p.join(format!("mdtest_tree.{depth}.{i}")))
                })
                .collect();
            all.extend(level.iter().cloned());
        }
        all
    }

    /// Directories that hold items: the leaves with `-L`, every directory otherwise.
    fn item_dirs(&self, root: &Path) -> Vec<PathBuf> {
        let tree = self.tree(root);
        if self.params.leaf_only {
            let leaves = u64::from(self.params.branch).pow(self.params.depth) as usize;
            tree[tree.len() - leaves..].to_vec()
        } else {
            tree
        }
    }

    /// Whether `task` creates and removes the tree (every task with `-u`; the first otherwise).
    fn owns_tree(&self, task: u32) -> bool {
        self.params.unique_dir || task == 0
    }
}

/// Runs `phase` for every task of `job` on this client, one thread each.
pub fn run_mdtest_phase(job: &MdtestJob, phase: MdtestPhase, progress: &Progress) -> Vec<TaskResult> {
    super::each_task(job.tasks.clone(), |task| run_task(job, phase, task, progress))
}

fn run_task(job: &MdtestJob, phase: MdtestPhase, task: u32, progress: &Progress) -> TaskResult {
    let start = SystemTime::now();
    let mut r = TaskResult { task, start, end: start, bytes: 0, ops: 0, error: None };
    let count = |r: &mut TaskResult| {
        r.ops += 1;
        progress.ops.fetch_add(1, Ordering::Relaxed);
    };
    let outcome = (|| -> Result<(), String> {
        let root = job.root(task);
        let io = |what: &str, path: &Path, e: std::io::Error| format!("{what} {}: {e}", path.display());
        match phase {
            MdtestPhase::TreeCreate if job.owns_tree(task) => {
                for dir in job.tree(&root) {
                    std::fs::create_dir_all(&dir).map_err(|e| io("mkdir", &dir, e))?;
                    count(&mut r);
                }
            }
            MdtestPhase::TreeRemove if job.owns_tree(task) => {
                for dir in job.tree(&root).iter().rev() {
                    std::fs::remove_dir(dir).map_err(|e| io("rmdir", dir, e))?;
                    count(&mut r);
                }
                if job.params.unique_dir || task == 0 {
                    // The per-iteration parent, once empty (the last task's removal wins).
                    let _ = root.parent().map(std::fs::remove_dir);
                }
            }
            MdtestPhase::TreeCreate | MdtestPhase::TreeRemove => {}
            _ => {
                for dir in job.item_dirs(&root) {
                    for n in 0..job.params.items {
                        progress.check()?;
                        let file = dir.join(format!("file.mdtest.{task}.{n}"));
                        let sub = dir.join(format!("dir.mdtest.{task}.{n}"));
                        match phase {
                            MdtestPhase::DirCreate => {
                                std::fs::create_dir(&sub).map_err(|e| io("mkdir", &sub, e))?
                            }
                            MdtestPhase::DirStat => {
                                std::fs::metadata(&sub).map_err(|e| io("stat", &sub, e))?;
                            }
                            MdtestPhase::DirRemove => {
                                std::fs::remove_dir(&sub).map_err(|e| io("rmdir", &sub, e))?
                            }
                            MdtestPhase::FileCreate => {
                                drop(std::fs::File::create(&file).map_err(|e| io("create", &file, e))?)
                            }
                            MdtestPhase::FileStat => {
                                std::fs::metadata(&file).map_err(|e| io("stat", &file, e))?;
                            }
                            // mdtest reads -e bytes (0 by default): open, read, close.
                            MdtestPhase::FileRead => {
                                drop(std::fs::read(&file).map_err(|e| io("read", &file, e))?)
                            }
                            _ => std::fs::remove_file(&file).map_err(|e| io("unlink", &file, e))?,
                        }
                        count(&mut r);
                    }
                }
            }
        }
        Ok(())
    })();
    r.end = SystemTime::now();
    r.error = outcome.err();
    r
}
