//! `pvfs-agent`: run the node agent until SIGTERM or Ctrl-C, or one of its tools.

mod engine;
mod metrics;

use crate::cli::{AgentCli, AgentCommand};
use crate::{exit, logging, output};
use anyhow::Context;
use pvfs_agent::{Security, Settings};
use pvfs_host::Root;
use std::time::Duration;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// After a stop signal the agent lets in-flight requests finish for this long, then exits
/// anyway: systemd would kill it at TimeoutStopSec, and a clean exit is better than a kill.
const DRAIN_DEADLINE: Duration = Duration::from_secs(10);

pub(crate) fn run(cli: AgentCli) -> anyhow::Result<u8> {
    match cli.command {
        Some(AgentCommand::Metrics(args)) => {
            logging::init(&cli.log, "warn")?;
            return metrics::run(args);
        }
        Some(AgentCommand::Engine(args)) => {
            logging::init(&cli.log, "warn")?;
            return engine::run(args);
        }
        Some(AgentCommand::Simulate(args)) => {
            logging::init(&cli.log, "info")?;
            return simulate(args);
        }
        Some(AgentCommand::EnginePhase(args)) => {
            logging::init(&cli.log, "warn")?;
            return engine::phase(args);
        }
        // No logging set up: this process becomes another program at once.
        Some(AgentCommand::OomExec(args)) => return Ok(oom_exec(args)),
        None => {}
    }
    logging::init(&cli.log, "info")?;
    let name = match cli.name {
        Some(name) => name,
        None => Root::system()
            .read_trimmed("/proc/sys/kernel/hostname")
            .context("no --name given and the host name cannot be read")?,
    };
    let settings = Settings {
        name,
        listen: cli.listen,
        security: if cli.insecure { Security::Insecure } else { Security::MutualTls { dir: cli.tls_dir } },
        state_dir: cli.state_dir,
        root: Root::system(),
        history: cli.history,
        gmond: cli
            .gmond_xml
            .map(|listen| pvfs_agent::GmondSettings { listen, cluster: cli.gmond_cluster.clone() }),
    };
    let prepared = pvfs_agent::prepare(settings)?;
    if cli.check_config {
        let s = prepared.settings();
        let mut text = format!(
            "pvfs-agent {}: configuration ok\n  name: {}\n  listen: {}\n",
            pvfs_agent::VERSION,
            s.name,
            s.listen
        );
        match prepared.certificate() {
            Some(cert) => {
                text += &format!(
                    "  tls: mutual, certificate {:?} for {} (valid until {})\n",
                    cert.common_name,
                    cert.sans.join(", "),
                    cert.not_after.date()
                );
            }
            None => text += "  tls: none (--insecure, loopback only)\n",
        }
        text += &format!("  state dir: {}\n", s.state_dir.display());
        output::print(&text)?;
        return Ok(exit::OK);
    }

    // Two worker threads: the agent's work is light and mostly waiting on the kernel and on
    // child processes; fewer threads keep its idle footprint small.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let listener = pvfs_agent::bind(prepared.settings().listen).await?;
        let shutdown = CancellationToken::new();
        // Handlers are installed here, before `serve` reports readiness: a SIGTERM sent right
        // after READY=1 must start a clean stop, not kill the process by default action.
        let term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        let int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        tokio::spawn(stop_on_signal(term, int, shutdown.clone()));
        let serve = pvfs_agent::serve(listener, prepared, shutdown.clone());
        tokio::select! {
            result = serve => result?,
            () = async { shutdown.cancelled().await; tokio::time::sleep(DRAIN_DEADLINE).await } => {
                tracing::warn!(deadline = ?DRAIN_DEADLINE, "requests still running at the drain deadline; exiting");
            }
        }
        anyhow::Ok(exit::OK)
    })
}

/// The first SIGTERM or SIGINT starts a graceful shutdown; a second one exits at once.
async fn stop_on_signal(mut term: Signal, mut int: Signal, shutdown: CancellationToken) {
    for n in 0..2 {
        let which = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        if n == 0 {
            tracing::info!(signal = which, "stopping: draining requests");
            shutdown.cancel();
        } else {
            tracing::warn!(signal = which, "second stop signal: exiting now");
            std::process::exit(130);
        }
    }
}

/// `pvfs-agent oom-exec --score N -- PROGRAM ARGS…`: sets this process's OOM score, then
/// becomes PROGRAM (same pid, so whatever it starts inherits the score).
///
/// The agent runs with `OOMScoreAdjust=-500` (its unit) so that under memory pressure the
/// kernel does not pick it; every child inherits that, and a benchmark process must not be
/// the last one killed. The workspace forbids `unsafe`, so there is no `pre_exec` hook to set
/// the score between fork and exec; writing `/proc/PID/oom_score_adj` from the agent after
/// spawning would leave a window in which mpirun has already forked its ranks at -500. This
/// trampoline closes it: the score is set before the real program runs a single instruction.
/// Raising one's own score needs no privilege. Exit codes follow the shell's: 127 when
/// PROGRAM is not found, 126 when it cannot be run (or the score cannot be set: running it
/// protected would defeat the purpose).
fn oom_exec(args: crate::cli::OomExecArgs) -> u8 {
    use std::os::unix::process::CommandExt;
    if let Err(err) = std::fs::write("/proc/self/oom_score_adj", args.score.to_string()) {
        output::error(&anyhow::anyhow!("cannot set /proc/self/oom_score_adj to {}: {err}", args.score));
        return 126;
    }
    let Some((program, rest)) = args.command.split_first() else { return 126 };
    let mut command = std::process::Command::new(program);
    if let Some(arg0) = &args.arg0 {
        command.arg0(arg0);
    }
    let err = command.args(rest).exec();
    output::error(&anyhow::anyhow!("cannot run {}: {err}", program.to_string_lossy()));
    if err.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 }
}

/// `pvfs-agent simulate`: many agents in one process, until SIGTERM or Ctrl-C.
fn simulate(args: crate::cli::SimulateArgs) -> anyhow::Result<u8> {
    let tls = match &args.tls_dir {
        Some(dir) => Some(pvfs_tls::load(dir, &args.cert_name)?),
        None if args.listen.ip().is_loopback() => None,
        None => anyhow::bail!("simulated agents off loopback need --tls-dir"),
    };
    crate::raise_fd_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let shutdown = CancellationToken::new();
        let term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        let int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        tokio::spawn(stop_on_signal(term, int, shutdown.clone()));
        let sim = pvfs_agent::simulate::Simulation {
            agents: args.agents,
            first: args.listen,
            tls,
            name_prefix: "sim".into(),
        };
        pvfs_agent::simulate::run(sim, shutdown).await?;
        anyhow::Ok(exit::OK)
    })
}
