//! `pvfs-agent`: run the node agent until SIGTERM or Ctrl-C, or one of its tools.

mod engine;
mod metrics;

use crate::cli::{AgentCli, AgentCommand};
use crate::shutdown::Shutdown;
use crate::{exit, logging, output};
use anyhow::Context;
use pvfs_agent::{Security, Settings};
use pvfs_host::Root;
use std::time::Duration;

/// After a stop signal the agent lets the steps under way finish (and report) for this long,
/// then exits anyway. It agrees with the unit's `TimeoutStopSec=150`: systemd would kill the
/// agent then, and a clean exit is better than a kill. Commands that act on the node run in
/// their own process group and outlive the agent either way (`KillMode=process` leaves them to
/// finish); what the deadline bounds is how long a coordinator can wait for their results.
const DRAIN_DEADLINE: Duration = Duration::from_secs(120);

pub(crate) fn run(cli: AgentCli) -> anyhow::Result<u8> {
    // Refused before anything else, so a unit file or script still asking for plaintext
    // fails loudly instead of serving something other than what it asked for.
    if cli.insecure || insecure_in_environment() {
        anyhow::bail!("{}", crate::ctl::INSECURE_REMOVED);
    }
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
        Some(name) => {
            // The cluster file's node-name grammar: the name picks the certificate (NAME.crt)
            // and labels every metric, so the agent takes no name the cluster file could not hold.
            pvfs_config::node_name(&name).map_err(|why| anyhow::anyhow!("--name: {why}"))?;
            name
        }
        None => {
            let host = Root::system()
                .read_trimmed("/proc/sys/kernel/hostname")
                .context("no --name given and the host name cannot be read")?;
            pvfs_config::node_name(&host).map_err(|why| {
                anyhow::anyhow!("no --name given, and the host name cannot be one: {why}; pass --name NAME")
            })?;
            host
        }
    };
    // An explicit --policy must exist; the default file is used only when it does.
    let policy_file = cli.policy.clone().or_else(|| {
        let default = std::path::PathBuf::from(pvfs_agent::policy::DEFAULT_POLICY_FILE);
        default.exists().then_some(default)
    });
    let policy = match &policy_file {
        Some(path) => pvfs_agent::policy::load(path)?,
        None => pvfs_policy::Policy::default(),
    };
    let settings = Settings {
        name,
        listen: cli.listen,
        security: Security::MutualTls { dir: cli.tls_dir },
        state_dir: cli.state_dir,
        root: cli.root.map_or_else(Root::system, Root::at),
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
        let cert = prepared.certificate();
        text += &format!(
            "  tls: mutual, certificate {:?} for {} (valid until {})\n",
            cert.common_name,
            cert.sans.join(", "),
            cert.not_after.date()
        );
        let revoked = prepared.revoked();
        let listed = revoked.current().map_err(anyhow::Error::msg)?.len();
        text += &format!(
            "  revoked: {listed} serial{} ({}{})\n",
            if listed == 1 { "" } else { "s" },
            revoked.path().display(),
            if revoked.path().exists() { ", re-read when it changes" } else { " does not exist" }
        );
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
        // Handlers are installed here, before `serve` reports readiness: a SIGTERM sent right
        // after READY=1 must start a clean stop, not kill the process by default action.
        let shutdown = Shutdown::on_signals()?;
        let mut served = shutdown.spawn(pvfs_agent::serve(listener, prepared, shutdown.token()));
        tokio::select! {
            // Before any signal, `serve` ends only on an error.
            joined = &mut served => joined.context("the agent's server task")??,
            () = shutdown.cancelled() => match shutdown.drain(DRAIN_DEADLINE).await {
                // Drained: `serve` has returned, with whatever it ended on.
                Ok(()) => served.await.context("the agent's server task")??,
                Err(_) => tracing::warn!(
                    deadline = ?DRAIN_DEADLINE,
                    "steps still running at the drain deadline; exiting (commands under way keep running on their own)"
                ),
            },
        }
        anyhow::Ok(exit::OK)
    })
}

/// `PVFS_AGENT_INSECURE` set to anything clap would have read as true (not empty, `0`,
/// `false`, `no`, `off`, `n`, `f`).
fn insecure_in_environment() -> bool {
    std::env::var("PVFS_AGENT_INSECURE").is_ok_and(|value| {
        !matches!(value.trim().to_ascii_lowercase().as_str(), "" | "0" | "false" | "no" | "off" | "n" | "f")
    })
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
    let tls = pvfs_tls::load(&args.tls_dir, &args.cert_name)?;
    let revoked = pvfs_tls::RevokedWatch::new(&args.tls_dir)?;
    crate::raise_fd_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let shutdown = Shutdown::on_signals()?;
        let sim = pvfs_agent::simulate::Simulation {
            agents: args.agents,
            first: args.listen,
            tls,
            revoked,
            name_prefix: "sim".into(),
        };
        pvfs_agent::simulate::run(sim, shutdown.token()).await?;
        anyhow::Ok(exit::OK)
    })
}

#[cfg(test)]
mod tests {
    use super::DRAIN_DEADLINE;
    use std::time::Duration;

    /// systemd must not SIGKILL the agent while it is still within its own drain deadline
    /// (and leaves it some time to exit after it).
    #[test]
    fn the_drain_deadline_fits_in_the_units_stop_timeout() {
        let unit = include_str!("../../../../config/pvfs-agent.service");
        let setting = |key: &str| {
            unit.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .unwrap_or_else(|| panic!("{key}"))
        };
        let stop = Duration::from_secs(setting("TimeoutStopSec").parse().unwrap());
        assert!(DRAIN_DEADLINE + Duration::from_secs(10) <= stop, "{DRAIN_DEADLINE:?} vs {stop:?}");
        // And only the agent is stopped: what it started (FUSE clients, mkfs) is left running.
        assert_eq!(setting("KillMode"), "process");
    }
}
