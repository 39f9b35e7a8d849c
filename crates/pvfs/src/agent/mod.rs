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
        None => {}
    }
    logging::init(&cli.log, "info")?;
    let name = match cli.name {
        Some(name) => name,
        None => Root::system()
            .read_trimmed("/proc/sys/kernel/hostname")
            .context("no --name given and the host name cannot be read")?,
    };
    // An explicit --policy must exist; the default file is used only when it does.
    let policy_file = cli.policy.clone().or_else(|| {
        let default = std::path::PathBuf::from(pvfs_agent::policy::DEFAULT_POLICY_FILE);
        default.exists().then_some(default)
    });
    let policy = match &policy_file {
        Some(path) => pvfs_agent::policy::load(path)?,
        None => pvfs_steps::Policy::default(),
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
        policy,
        policy_file,
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
        match &s.policy_file {
            Some(path) => text += &format!("  policy: {}\n", path.display()),
            None => text += "  policy: built-in (no policy file)\n",
        }
        for line in s.policy.describe() {
            text += &format!("    {line}\n");
        }
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
