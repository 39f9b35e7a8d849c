//! `pvfs-agent engine`: the built-in engine on this machine, IOR's summary out; and
//! `engine-phase`, one phase of it as the agent's child process.

use crate::cli::{EngineArgs, EnginePhaseArgs};
use crate::{exit, output};
use anyhow::Context;
use pvfs_bench::params::Workload;
use pvfs_engine::mpi::{RankJob, RankLine};
use std::io::Write;

/// The preset's workload with every `--set` applied, checked as a whole.
fn workload(preset: &str, set: &[String]) -> anyhow::Result<Workload> {
    let mut workload = Workload::base(preset)?;
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
    let began = std::time::SystemTime::now();
    let run = match pvfs_engine::local::run(&workload, &dir, args.tasks, !args.untimed) {
        Ok(run) => run,
        Err(err) => {
            output::error(&anyhow::anyhow!("{err}"));
            return Ok(exit::FAILURES);
        }
    };
    if args.json {
        output::json(
            &serde_json::json!({"ior": run.ior, "iterations": run.iterations, "mdtest": run.mdtest, "latency": run.latency}),
        )?;
        return Ok(exit::OK);
    }
    // The kernel's name for the machine, as IOR's `Machine` line has it (`uname -n`).
    let machine = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let text = pvfs_bench::summary::text(&workload, tasks, tasks, &run.iterations, &run.ior, &run.mdtest);
    output::print(&format!(
        "{}{text}\n{}",
        pvfs_bench::summary::engine_header(
            &workload,
            tasks,
            &dir,
            &format!("Linux {}", machine.trim()),
            began
        ),
        pvfs_bench::summary::engine_footer(&workload, std::time::SystemTime::now())
    ))?;
    Ok(exit::OK)
}

/// One phase for the agent, which started this process (`engine-phase`): JSON lines on
/// standard output, cancelled when standard input closes. Exit 0 when the phase ran (task
/// errors are in its lines), 1 when it could not run, 2 on bad arguments.
pub(crate) fn phase(args: EnginePhaseArgs) -> anyhow::Result<u8> {
    use pvfs_bench::launch::Engine;
    use pvfs_bench::request::PhaseRequest;
    use pvfs_engine::engine::{Phase, Progress};
    use std::io::{BufRead, Read};
    crate::raise_fd_limit();
    let workload = workload(&args.preset, &args.set)?;
    let phase =
        Phase::from_name(&args.phase).with_context(|| format!("--phase {:?}: no such phase", args.phase))?;
    if let Some(tag) = args.job_tag.as_deref().filter(|t| !pvfs_bench::request::valid_job_tag(t)) {
        anyhow::bail!("--job-tag {tag:?}: a task thread's name is 1 to 15 letters, digits, '.', '_' or '-'");
    }
    let req = PhaseRequest {
        job_tag: args.job_tag,
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
    // The test seam that makes a straggler (`IorJob::pace`): debug builds only.
    #[cfg(debug_assertions)]
    if let Some(pace) =
        std::env::var("PVFS_TEST_ENGINE_PACE").ok().and_then(|p| pvfs_engine::engine::Pace::parse(&p))
    {
        let _ = pvfs_engine::engine::TEST_PACE.set(pace);
    }
    let progress = std::sync::Arc::new(Progress::default());
    // The agent holds the other end of standard input: when it closes (the coordinator went
    // away, or the agent itself died), every task stops at its next transfer or item. Before
    // that, a line on it is the run's most transfers at a stonewall (the wear-out's answer).
    // Not joined: it may be blocked in read() when the phase ends.
    let watch = progress.clone();
    let (answers, answered) = std::sync::mpsc::channel::<u64>();
    std::thread::spawn(move || {
        let mut line = String::new();
        let mut stdin = std::io::stdin().lock();
        // Bounded: a line longer than any answer is not read on.
        while matches!((&mut stdin).take(1024).read_line(&mut line), Ok(n) if n > 0) {
            if let Ok(answer) = serde_json::from_str::<pvfs_engine::child::WearOutLine>(line.trim()) {
                let _ = answers.send(answer.wear_out);
            }
            line.clear();
        }
        watch.cancelled.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let answered = std::sync::Mutex::new(answered);
    let answer = || -> Result<u64, pvfs_engine::engine::EngineError> {
        let answered = answered.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            match answered.recv_timeout(std::time::Duration::from_millis(100)) {
                Ok(most) => return Ok(most),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => progress.check()?,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(pvfs_engine::engine::EngineError::Stopped);
                }
            }
        }
    };
    let emit =
        |line: &pvfs_engine::child::PhaseLine| emit_line(&serde_json::to_string(line).unwrap_or_default());
    Ok(if pvfs_engine::child::run(&req, &progress, &emit, &answer) { exit::OK } else { exit::FAILURES })
}

/// The test seam that makes a straggler (`IorJob::pace`), from `PVFS_TEST_ENGINE_PACE`
/// (`TASK,FIRST_MS,EACH_MS`): debug builds only.
fn test_pace() {
    #[cfg(debug_assertions)]
    if let Some(pace) =
        std::env::var("PVFS_TEST_ENGINE_PACE").ok().and_then(|p| pvfs_engine::engine::Pace::parse(&p))
    {
        let _ = pvfs_engine::engine::TEST_PACE.set(pace);
    }
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
    test_pace();
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
