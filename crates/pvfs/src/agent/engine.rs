//! `pvfs-agent engine`: the built-in engine on this machine, IOR's summary out; and
//! `engine-phase`, one phase of it as the agent's child process.

use crate::cli::{EngineArgs, EnginePhaseArgs};
use crate::{exit, output};
use anyhow::Context;
use pvfs_bench::params::{Preset, Workload};
use pvfs_engine::mpi::{RankJob, RankLine};
use std::io::Write;

/// The preset's workload with every `--set` applied, checked as a whole.
fn workload(preset: &str, set: &[String]) -> anyhow::Result<Workload> {
    let mut workload = Preset::parse(preset)?.workload();
    let mut pairs = Vec::new();
    for item in set {
        let (key, value) =
            item.split_once('=').with_context(|| format!("--set {item:?}: expected KEY=VALUE"))?;
        pairs.push((key.trim(), value.trim()));
    }
    workload.set_all(pairs)?;
    Ok(workload)
}

pub(crate) fn run(args: EngineArgs) -> anyhow::Result<u8> {
    let workload = workload(&args.preset, &args.set)?;
    if args.mpi {
        return rank(workload, &args);
    }
    let tasks = pvfs_bench::params::total_tasks(args.tasks, 1).context("--tasks")?;
    workload.check_run(tasks).context("--tasks")?;
    anyhow::ensure!(args.dir.is_dir(), "{} is not a directory", args.dir.display());
    // The engine refuses symlinks on its way; here the user named the directory themselves.
    let dir = args.dir.canonicalize().with_context(|| format!("resolving {}", args.dir.display()))?;
    let run = match pvfs_engine::local::run(&workload, &dir, args.tasks) {
        Ok(run) => run,
        Err(err) => {
            output::error(&anyhow::anyhow!("{err}"));
            return Ok(exit::FAILURES);
        }
    };
    if args.json {
        output::json(
            &serde_json::json!({"ior": run.ior, "iterations": run.iterations, "mdtest": run.mdtest}),
        )?;
        return Ok(exit::OK);
    }
    let text = pvfs_bench::summary::text(&workload, tasks, tasks, &run.iterations, &run.ior, &run.mdtest);
    output::print(&text)?;
    Ok(exit::OK)
}

/// One phase for the agent, which started this process (`engine-phase`): JSON lines on
/// standard output, cancelled when standard input closes. Exit 0 when the phase ran (task
/// errors are in its lines), 1 when it could not run, 2 on bad arguments.
pub(crate) fn phase(args: EnginePhaseArgs) -> anyhow::Result<u8> {
    use pvfs_bench::launch::Engine;
    use pvfs_bench::request::PhaseRequest;
    use pvfs_engine::engine::{Phase, Progress};
    use std::io::Read;
    crate::raise_fd_limit();
    let workload = workload(&args.preset, &args.set)?;
    let phase =
        Phase::from_name(&args.phase).with_context(|| format!("--phase {:?}: no such phase", args.phase))?;
    let req = PhaseRequest {
        stop_after: args.stop_after,
        engine: Engine::Builtin,
        workload,
        dir: args.dir,
        first_task: args.first_task,
        tasks: args.tasks,
        total_tasks: args.total_tasks,
        tasks_per_client: args.tasks_per_client,
        iteration: args.iteration,
        phase,
    };
    let progress = std::sync::Arc::new(Progress::default());
    // The agent holds the other end of standard input: when it closes (the coordinator went
    // away, or the agent itself died), every task stops at its next transfer or item. Not
    // joined: it may be blocked in read() when the phase ends.
    let watch = progress.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        while matches!(std::io::stdin().read(&mut buf), Ok(n) if n > 0) {}
        watch.cancelled.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let emit =
        |line: &pvfs_engine::child::PhaseLine| emit_line(&serde_json::to_string(line).unwrap_or_default());
    Ok(if pvfs_engine::child::run(&req, &progress, &emit) { exit::OK } else { exit::FAILURES })
}

/// One write per line, so a reader never sees half of one line glued to another.
fn emit_line(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(format!("{text}\n").as_bytes());
    let _ = out.flush();
}

/// One rank of an MPI job: a JSON line per phase on standard output (which mpirun forwards to
/// the launching client), and exit 1 on the first error so mpirun ends the job.
fn rank(workload: Workload, args: &EngineArgs) -> anyhow::Result<u8> {
    let (rank, size) = pvfs_engine::mpi::rank_from_env().context(
        "--mpi: no MPI rank in the environment (OMPI_COMM_WORLD_RANK or PMI_RANK): start it with mpirun",
    )?;
    anyhow::ensure!(args.tasks_per_node >= 1, "--tasks-per-node must be at least 1");
    let job = RankJob {
        workload,
        dir: args.dir.clone(),
        rank,
        size,
        tasks_per_client: args.tasks_per_node,
        barrier_limit: pvfs_engine::mpi::BARRIER_LIMIT,
    };
    // One write per line, so mpirun never forwards half of one line glued to another rank's.
    let emit = |line: &RankLine| emit_line(&serde_json::to_string(line).unwrap_or_default());
    match pvfs_engine::mpi::run_rank(&job, &emit) {
        Ok(()) => Ok(exit::OK),
        Err(err) => {
            output::error(&anyhow::anyhow!("rank {rank} of {size}: {err}"));
            Ok(exit::FAILURES)
        }
    }
}
