//! `pvfs-agent engine`: the built-in engine on this machine, IOR's summary out.

use crate::cli::EngineArgs;
use crate::{exit, output};
use anyhow::Context;
use pvfs_bench::mpi::{RankJob, RankLine};
use pvfs_bench::params::{Preset, Workload};
use std::io::Write;

pub(crate) fn run(args: EngineArgs) -> anyhow::Result<u8> {
    let mut workload = Preset::parse(&args.preset)?.workload();
    let mut pairs = Vec::new();
    for item in &args.set {
        let (key, value) =
            item.split_once('=').with_context(|| format!("--set {item:?}: expected KEY=VALUE"))?;
        pairs.push((key.trim(), value.trim()));
    }
    workload.set_all(pairs)?;
    if args.mpi {
        return rank(workload, &args);
    }
    anyhow::ensure!(args.tasks >= 1, "--tasks must be at least 1");
    anyhow::ensure!(args.dir.is_dir(), "{} is not a directory", args.dir.display());
    let run = match pvfs_bench::local::run(&workload, &args.dir, args.tasks) {
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
    let text = pvfs_bench::summary::tables(&run.ior, &run.mdtest);
    output::print(&text)?;
    Ok(exit::OK)
}

/// One rank of an MPI job: a JSON line per phase on standard output (which mpirun forwards to
/// the launching client), and exit 1 on the first error so mpirun ends the job.
fn rank(workload: Workload, args: &EngineArgs) -> anyhow::Result<u8> {
    let (rank, size) = pvfs_bench::mpi::rank_from_env().context(
        "--mpi: no MPI rank in the environment (OMPI_COMM_WORLD_RANK or PMI_RANK): start it with mpirun",
    )?;
    anyhow::ensure!(args.tasks_per_node >= 1, "--tasks-per-node must be at least 1");
    let job = RankJob {
        workload,
        dir: args.dir.clone(),
        rank,
        size,
        tasks_per_node: args.tasks_per_node,
        barrier_limit: pvfs_bench::mpi::BARRIER_LIMIT,
    };
    // One write per line, so mpirun never forwards half of one line glued to another rank's.
    let emit = |line: &RankLine| {
        let text = serde_json::to_string(line).unwrap_or_default() + "\n";
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    };
    match pvfs_bench::mpi::run_rank(&job, &emit) {
        Ok(()) => Ok(exit::OK),
        Err(err) => {
            output::error(&anyhow::anyhow!("rank {rank} of {size}: {err}"));
            Ok(exit::FAILURES)
        }
    }
}
