//! A whole run on one machine: every iteration's phases in order, with the summary IOR or
//! mdtest would print. What `pvfs-agent engine` runs, and what `cargo xtask bench-engine`
//! measures against fio.

use crate::engine::{
    self, EngineError, IorJob, IorPhase, MdtestJob, MdtestPhase, PhaseTotals, Progress, TaskResult,
};
use pvfs_bench::model::{IorIteration, IorSummary, MdtestSummary};
use pvfs_bench::params::Workload;
use pvfs_bench::phase::{self, Phase};
use pvfs_bench::summary;
use std::path::Path;

/// What a local run measured.
#[derive(Debug, Clone, Default)]
pub struct LocalRun {
    pub iterations: Vec<IorIteration>,
    pub ior: Vec<IorSummary>,
    pub mdtest: Vec<MdtestSummary>,
    /// Each phase's latency over every task, in the order they ran (none untimed).
    pub latency: Vec<PhaseLatency>,
}

/// One phase's latency in one iteration.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PhaseLatency {
    pub iteration: u32,
    /// Its row's name: `write`, `read`, `File creation`, ….
    pub phase: &'static str,
    #[serde(flatten)]
    pub latency: pvfs_bench::latency::Percentiles,
}

/// Runs `workload` with `tasks` threads in `dir`, each IOR transfer timed unless `timed` is
/// false (to measure what timing costs). The first task error stops the run and is returned
/// ([`EngineError::TaskFailed`], its text naming the file and operation).
pub fn run(workload: &Workload, dir: &Path, tasks: u32, timed: bool) -> Result<LocalRun, EngineError> {
    let progress = Progress::default();
    let latency = std::cell::RefCell::new(Vec::new());
    let check = |phase: Phase,
                 iteration: u32,
                 results: Vec<TaskResult>|
     -> Result<PhaseTotals, EngineError> {
        if let Some((task, error)) = results.iter().find_map(|r| Some((r.task, r.error.clone()?))) {
            return Err(EngineError::TaskFailed { task, error });
        }
        let merged = pvfs_bench::latency::merge(results.iter().map(|r| r.latency.as_slice()));
        if let Some(percentiles) = merged.percentiles() {
            latency.borrow_mut().push(PhaseLatency { iteration, phase: phase.label(), latency: percentiles });
        }
        engine::totals(phase, &results).ok_or(EngineError::NoTask)
    };
    let mut out = LocalRun::default();
    match workload {
        Workload::Ior(p) => {
            let phases = phase::iteration_phases(workload);
            let mut per_phase: Vec<Vec<PhaseTotals>> = vec![Vec::new(); phases.len()];
            for iteration in 0..p.iterations {
                let mut job = IorJob {
                    params: p.clone(),
                    base: dir.join("ior"),
                    tasks: 0..tasks,
                    total_tasks: tasks,
                    tasks_per_client: tasks,
                    iteration,
                    stop_after: None,
                    pace: None,
                    timed,
                    thread_name: None,
                };
                for (i, phase) in phases.iter().enumerate() {
                    // An IOR workload's schedule holds only IOR phases.
                    let Phase::Ior(ior_phase) = *phase else { continue };
                    // IOR removes the test files before it writes (unless -E), so a file left
                    // larger by an earlier run is not overwritten in place. (A coordinated run
                    // writes in a directory of its own, emptied after every iteration.)
                    if ior_phase == IorPhase::Write {
                        engine::remove_files(&job)?;
                    }
                    let results = engine::run_ior_phase(&job, ior_phase, &progress);
                    if ior_phase == IorPhase::Write {
                        // A stonewalled write's count is what the read reads back.
                        job.stop_after = pvfs_bench::request::stop_after(p, results.iter().map(|r| r.ops));
                    }
                    let t = check(*phase, iteration, results)?;
                    out.iterations.push(summary::ior_iteration(phase.label(), iteration.into(), &t, p));
                    per_phase[i].push(t);
                }
                if !p.keep {
                    engine::remove_files(&job)?;
                }
            }
            for (phase, totals) in phases.iter().zip(&per_phase) {
                out.ior.extend(summary::ior_summary(phase.label(), totals, p, tasks));
            }
        }
        Workload::Find(_) => return Err(EngineError::FindAlone),
        Workload::Io500(_) => return Err(EngineError::Io500Alone),
        Workload::Mdtest(p) => {
            let phases = MdtestPhase::sequence(p);
            let mut per_phase: Vec<Vec<PhaseTotals>> = vec![Vec::new(); phases.len()];
            for iteration in 0..p.iterations {
                let mut job = MdtestJob {
                    params: p.clone(),
                    dir: dir.to_owned(),
                    tasks: 0..tasks,
                    total_tasks: tasks,
                    iteration,
                    stop_after: None,
                    pace: None,
                    thread_name: None,
                };
                for (i, phase) in phases.iter().enumerate() {
                    let results = engine::run_mdtest_phase(&job, *phase, &progress);
                    let ops = results.iter().map(|r| r.ops);
                    if let Some(carried) = pvfs_bench::request::carried(workload, Phase::Mdtest(*phase), ops)
                    {
                        job.stop_after = carried;
                    }
                    per_phase[i].push(check(Phase::Mdtest(*phase), iteration, results)?);
                }
            }
            for (phase, totals) in phases.iter().zip(&per_phase) {
                out.mdtest.extend(summary::mdtest_summary(phase.row(), totals));
            }
        }
    }
    out.latency = latency.into_inner();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_files_are_removed_before_writing_as_ior_does() {
        let base =
            std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/engine-tests"));
        std::fs::create_dir_all(&base).unwrap();
        let dir = tempfile::tempdir_in(base.canonicalize().unwrap()).unwrap();
        // What an earlier run left at a task's file name: a symlink the engine never writes
        // through (and a plain file it would have overwritten in place).
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, b"not the benchmark's").unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("ior.00000000")).unwrap();
        std::fs::write(dir.path().join("ior.00000001"), vec![1u8; 4 << 20]).unwrap();
        let mut workload = pvfs_bench::params::Preset::Throughput.workload();
        workload.set_all([("t", "64k"), ("b", "256k"), ("i", "1"), ("B", "false")]).unwrap();
        let run = run(&workload, dir.path(), 2, true).unwrap();
        assert_eq!(run.ior.len(), 2, "write and read rows");
        assert_eq!(std::fs::read(&elsewhere).unwrap(), b"not the benchmark's");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["elsewhere"], "the run's own files are gone after it");
    }

    #[test]
    fn every_transfer_is_timed_unless_the_run_is_untimed() {
        let dir = tempfile::tempdir().unwrap();
        let mut workload = pvfs_bench::params::Preset::Throughput.workload();
        workload.set_all([("t", "64k"), ("b", "256k"), ("i", "2"), ("B", "false")]).unwrap();
        let run = run(&workload, dir.path(), 2, true).unwrap();
        // 2 tasks of 4 transfers, written and read, in each iteration.
        let timed: Vec<(u32, &str, u64)> =
            run.latency.iter().map(|l| (l.iteration, l.phase, l.latency.count)).collect();
        assert_eq!(timed, [(0, "write", 8), (0, "read", 8), (1, "write", 8), (1, "read", 8)]);
        let untimed = super::run(&workload, dir.path(), 2, false).unwrap();
        assert_eq!((untimed.ior.len(), untimed.latency.len()), (2, 0), "the same run, nothing timed");
    }
}
