//! `pvfsctl demo`: a local cluster of real agents on loopback, each with its own certificate,
//! surveyed over mutual TLS like any other cluster.
//!
//! Each agent is this same executable run as `pvfs-agent` on its own loopback address
//! (127.0.0.11, .12, …) and a kernel-chosen port. The agents report readiness and their port
//! the way they report to systemd: over a `NOTIFY_SOCKET` the demo listens on.

use crate::cli::{ConnectArgs, DemoArgs};
use crate::shutdown::{Shutdown, StopSignal};
use crate::{exit, output};
use anyhow::{Context, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pvfs_tls::Usage;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::net::UnixDatagram;
use tokio::process::{Child, Command};

/// Agents are serving within milliseconds; this only bounds a broken start.
const READY_DEADLINE: Duration = Duration::from_secs(20);
/// Agents drain for at most 10 s themselves; after this they are killed.
const STOP_DEADLINE: Duration = Duration::from_secs(15);

struct Agent {
    name: String,
    ip: String,
    dir: PathBuf,
    child: Child,
}

pub(crate) async fn run(args: DemoArgs) -> anyhow::Result<u8> {
    let shutdown = Shutdown::on_signals()?;
    let (work, _temp) = work_dir(args.dir.as_deref())?;
    let tls = work.join("tls");
    pvfs_tls::init_ca(&tls)?;
    pvfs_tls::issue(&tls, pvfs_tls::COORDINATOR_NAME, &[], Usage::Coordinator, false)?;

    let notify_path = work.join("notify.sock");
    let notify =
        UnixDatagram::bind(&notify_path).with_context(|| format!("binding {}", notify_path.display()))?;
    let mut agents = Vec::new();
    for i in 1..=args.agents {
        let name = format!("demo{i}");
        let ip = format!("127.0.0.{}", 10 + u32::from(i));
        pvfs_tls::issue(&tls, &name, std::slice::from_ref(&ip), Usage::Agent, false)?;
        let dir = work.join("agents").join(&name);
        match spawn_agent(&name, &ip, &tls, &dir, &notify_path) {
            Ok(child) => agents.push(Agent { name, ip, dir, child }),
            Err(err) => {
                stop(&mut agents).await;
                return Err(err);
            }
        }
    }
    output::note(&format!("started {} agents on loopback; files in {}", agents.len(), work.display()));

    // Benchmark results and the report outlive the demo: in --dir, or in the current directory
    // (the temporary directory with the agents' files goes when the demo ends).
    let kept = match &args.dir {
        Some(_) => work.clone(),
        None => std::env::current_dir().context("the current directory")?,
    };

    // Everything from here on must stop the agents, whatever happens: SIGTERM (a script
    // stopping a held demo) or Ctrl-C stops them cleanly.
    let result = tokio::select! {
        result = show(&work, &kept, &notify, &mut agents, args.once, args.hold, shutdown.token()) => result,
        () = shutdown.cancelled() => {
            output::note(match shutdown.received() {
                Some(StopSignal::Term) => "terminated",
                _ => "interrupted",
            });
            Ok(exit::OK)
        }
    };
    stop(&mut agents).await;
    if args.dir.is_some() {
        output::note(&format!("kept {}", work.display()));
    }
    result
}

/// Waits for the agents, writes the cluster file, surveys it, and holds until Ctrl-C when
/// interactive.
async fn show(
    work: &Path,
    kept: &Path,
    notify: &UnixDatagram,
    agents: &mut [Agent],
    once: bool,
    hold: bool,
    stop: tokio_util::sync::CancellationToken,
) -> anyhow::Result<u8> {
    let ports = wait_ready(notify, agents).await?;
    let cluster_path = work.join("cluster.toml");
    let mut toml = format!(
        "# Written by `pvfsctl demo`: {} agents on loopback, each with its own certificate.\n\
         [cluster]\nname = \"demo\"\nkind = \"local\"\n\n[tls]\ndir = \"tls\"\n\n[local]\nmount = \"{}\"\n",
        agents.len(),
        work.join("mnt").display()
    );
    for agent in agents.iter() {
        toml += &format!(
            "\n[[node]]\nname = \"{}\"\naddress = \"{}:{}\"\nroles = [\"server\", \"client\"]\n",
            agent.name, agent.ip, ports[&agent.name]
        );
    }
    std::fs::write(&cluster_path, toml).with_context(|| format!("writing {}", cluster_path.display()))?;
    let cluster = pvfs_config::load(&cluster_path)?;

    let connect = ConnectArgs {
        tls_dir: None,
        cert_name: pvfs_tls::COORDINATOR_NAME.into(),
        insecure: false,
        timeout: Duration::from_secs(5),
    };
    let dialer = super::dialer(&cluster, &connect)?;
    output::note(&format!("$ pvfsctl nodes {}", cluster_path.display()));
    let survey = pvfs_coord::survey(&cluster, &dialer).await;
    super::nodes::show(&survey, false)?;
    let mut code = if survey.unreachable().next().is_some() { exit::FAILURES } else { exit::OK };

    // Set the cluster up (kind local: a target directory per server, the shared mount on every
    // client), then again to show that a converged cluster is left alone.
    for pass in ["", "   # again: a converged cluster is left alone"] {
        output::print(&format!("\n$ pvfsctl up {}{pass}\n", cluster_path.display()))?;
        let view = super::up::View { json: false, plan: false, verbose: false, down: false };
        let options = pvfs_coord::converge::Options::default();
        code = code.max(super::up::converge(&cluster, &dialer, options, view).await?);
    }

    // The seed's throughput run, small: every agent a client with two tasks, the built-in
    // engine, 64 MiB per task; watched live in a terminal; then the report.
    let results = kept.join("pvfs-results");
    let settings = ["t=1m", "b=64m", "i=2"];
    output::print(&format!(
        "\n$ pvfsctl bench {} --preset throughput --procs 2 {} --results {} --watch\n",
        cluster_path.display(),
        settings.iter().map(|s| format!("--set {s}")).collect::<Vec<_>>().join(" "),
        results.display()
    ))?;
    let bench = crate::cli::BenchArgs {
        cluster: Some(cluster_path.clone()),
        connect: ConnectArgs {
            tls_dir: None,
            cert_name: pvfs_tls::COORDINATOR_NAME.into(),
            insecure: false,
            timeout: Duration::from_secs(5),
        },
        preset: Some(pvfs_bench::params::Preset::Throughput),
        procs: Some(2),
        set: settings.iter().map(|s| s.to_string()).collect(),
        engine: None,
        launcher: None,
        drop_caches: None,
        dir: None,
        results: results.clone(),
        json: false,
        watch: true,
        processes: None,
        fault: Vec::new(),
        gluster_profile: false,
        sweep: None,
        sweep_point: None,
    };
    let (bench_code, run) = super::bench::run_to(bench, stop).await?;
    code = code.max(bench_code);
    let report = kept.join("pvfs-report");
    output::print(&format!("\n$ pvfsctl report {} --out {}\n", run.display(), report.display()))?;
    let written = pvfs_report::write(&[run], &report)?;
    output::print(&format!(
        "wrote {} and {} charts (SVG and PNG)\n",
        written.markdown.display(),
        written.charts.len()
    ))?;

    if hold || (!once && std::io::stdout().is_terminal()) {
        output::note(&format!(
            "\nthe agents keep running: try `pvfsctl nodes {0}` in another terminal, or \
             `pvfsctl serve {0}` and open http://127.0.0.1:9477/ in a browser; Ctrl-C stops them",
            cluster_path.display()
        ));
        std::future::pending::<()>().await;
    }
    Ok(code)
}

/// The working directory: `--dir` (created, must be empty) or a temporary one.
fn work_dir(dir: Option<&Path>) -> anyhow::Result<(PathBuf, Option<tempfile::TempDir>)> {
    match dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let mut entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
            if entries.next().is_some() {
                bail!(
                    "{} is not empty: give an empty or new directory to --dir (nothing in it was changed)",
                    dir.display()
                );
            }
            Ok((std::path::absolute(dir)?, None))
        }
        None => {
            let temp = tempfile::Builder::new()
                .prefix("pvfs-demo-")
                .tempdir()
                .context("creating a temporary directory")?;
            Ok((temp.path().to_owned(), Some(temp)))
        }
    }
}

fn spawn_agent(name: &str, ip: &str, tls: &Path, dir: &Path, notify: &Path) -> anyhow::Result<Child> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let log_path = dir.join("agent.log");
    let log = std::fs::File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let exe = std::env::current_exe().context("finding this executable")?;
    let mut command = std::process::Command::new(exe);
    command
        // argv[0] picks the agent personality, whatever this file is called.
        .arg0("pvfs-agent")
        .args(["--name", name, "--listen", &format!("{ip}:0"), "--log", "info"])
        .arg("--tls-dir")
        .arg(tls)
        .arg("--state-dir")
        .arg(dir.join("state"))
        .env("NOTIFY_SOCKET", notify)
        // Their own process group: a Ctrl-C in the terminal reaches only the demo, which then
        // stops each agent once, cleanly.
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let child = Command::from(command)
        // If the demo itself dies, take the agents with it.
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting agent {name}"))?;
    Ok(child)
}

/// Reads readiness messages until every agent has said which port it serves on.
async fn wait_ready(notify: &UnixDatagram, agents: &mut [Agent]) -> anyhow::Result<HashMap<String, u16>> {
    let mut ports = HashMap::new();
    let deadline = tokio::time::Instant::now() + READY_DEADLINE;
    let mut buf = vec![0u8; 4096];
    while ports.len() < agents.len() {
        // An agent that exits before it is ready will never send; say which and why.
        for agent in agents.iter_mut() {
            if let Some(status) = agent.child.try_wait()? {
                let log = std::fs::read_to_string(agent.dir.join("agent.log")).unwrap_or_default();
                let tail: Vec<&str> =
                    log.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
                bail!("agent {} exited ({status}) before it was ready:\n{}", agent.name, tail.join("\n"));
            }
        }
        let received = tokio::time::timeout_at(
            deadline.min(tokio::time::Instant::now() + Duration::from_millis(200)),
            notify.recv(&mut buf),
        )
        .await;
        if tokio::time::Instant::now() >= deadline {
            bail!("agents not ready after {READY_DEADLINE:?}; see their logs under agents/*/agent.log");
        }
        let Ok(n) = received else { continue };
        let message = String::from_utf8_lossy(&buf[..n?]).into_owned();
        if let Some((name, port)) = parse_ready(&message) {
            ports.insert(name, port);
        }
    }
    Ok(ports)
}

/// `X_PVFS_NAME=demo1` and `X_PVFS_LISTEN=127.0.0.11:40123` from a readiness message.
fn parse_ready(message: &str) -> Option<(String, u16)> {
    let var = |key: &str| message.lines().find_map(|l| l.strip_prefix(key)).map(str::to_owned);
    let listen: std::net::SocketAddr = var("X_PVFS_LISTEN=")?.parse().ok()?;
    Some((var("X_PVFS_NAME=")?, listen.port()))
}

/// SIGTERM to every agent, then wait for each (SIGKILL at the deadline).
async fn stop(agents: &mut [Agent]) {
    for agent in agents.iter() {
        if let Some(pid) = agent.child.id() {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
        }
    }
    for agent in agents.iter_mut() {
        match tokio::time::timeout(STOP_DEADLINE, agent.child.wait()).await {
            Ok(Ok(status)) if status.success() => {}
            Ok(Ok(status)) => output::note(&format!("agent {} exited with {status}", agent.name)),
            Ok(Err(err)) => output::note(&format!("agent {}: {err}", agent.name)),
            Err(_) => {
                output::note(&format!(
                    "agent {} did not stop within {STOP_DEADLINE:?}; killing it",
                    agent.name
                ));
                let _ = agent.child.kill().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn readiness_messages_name_the_agent_and_port() {
        let msg = "READY=1\nSTATUS=serving demo1 on 127.0.0.11:40123\nX_PVFS_LISTEN=127.0.0.11:40123\nX_PVFS_NAME=demo1";
        assert_eq!(super::parse_ready(msg), Some(("demo1".into(), 40123)));
        assert_eq!(super::parse_ready("WATCHDOG=1"), None);
    }
}
