//! `cargo xtask bench-bootstrap`: what one SSH connection per node saves `pvfsctl bootstrap`,
//! measured on containers of the bootstrap scenario's kind (systemd and Debian's sshd, no
//! agent), then estimated for 16 and 200 nodes.
//!
//! Measured, on the first node: one SSH command (`ssh HOST true`) with a connection of its own
//! (TCP, key exchange, host key check, authentication) and over an open master (OpenSSH's
//! ControlMaster, as bootstrap now uses it). Then bootstrap on all the nodes: a first run
//! (everything installed) and a second (nothing to do), with `--no-multiplex` (a connection per
//! command, as before) and without, the nodes reset to no agent before each first run. An
//! `ssh` first in PATH logs each command bootstrap runs and runs the real one; sshd's journal
//! counts the logins (connections).
//!
//! The estimate: bootstrap handles at most 16 nodes at once (`--parallel`'s default), so n nodes
//! take ⌈n/16⌉ waves, each taken to be as long as the run measured here (its nodes ran at once,
//! as a wave's do). That holds while the coordinator's CPU and uplink keep up with 16 uploads at
//! once; it is an estimate from these figures, not a measurement at that size.

use crate::bootstrap::{Ctx, Lab, cluster_file, recap_of};
use crate::docker;
use crate::sshlab::SshLab;
use crate::util::{self, cargo, read, step};
use anyhow::{Context, ensure};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Its own network, apart from the e2e scenarios'.
const SUBNET: &str = "10.213.252.0/24";
/// Nodes bootstrap handles at once by default (`pvfsctl bootstrap --parallel`).
const PARALLEL: usize = 16;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Containers to bootstrap at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=16))]
    pub nodes: u8,
    /// SSH commands timed each way.
    #[arg(long, default_value_t = 20)]
    pub rounds: u32,
    /// The pvfs binary (coordinator and what it installs); default: a debug build of this tree.
    #[arg(long)]
    pub binary: Option<PathBuf>,
    /// Keep the containers afterwards.
    #[arg(long)]
    pub keep: bool,
}

/// One bootstrap run's figures.
struct Run {
    wall: Duration,
    /// Per node: ssh commands run (sessions), and sshd logins (connections).
    sessions: Vec<usize>,
    logins: Vec<usize>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let binary = match &args.binary {
        Some(binary) => std::path::absolute(binary)?,
        None => {
            step(cargo().args(["build", "--locked", "-p", "pvfs", "--bin", "pvfs"]))?;
            util::root().join("target/debug/pvfs")
        }
    };
    docker::check_engine()?;
    let image = crate::image::ensure()?;
    let work = docker::work_dir(&format!("bench-bootstrap-{}", std::process::id()))?;
    let mut ssh = SshLab::new(&work.join("ssh"))?;
    let nodes: Vec<(String, String)> =
        (1..=args.nodes).map(|i| (format!("node{i}"), format!("10.213.252.{}", 10 + u32::from(i)))).collect();
    let lab = Lab::start(&image, "bench", SUBNET, nodes.clone(), &mut ssh, args.keep)?;

    // One command, each way.
    let host = &nodes[0].1;
    let fresh = time_commands(&ssh.config, host, None, args.rounds)?;
    let control = work.join("control");
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&control)?;
    }
    let socket = control.join("m");
    // The first command opens the master; the timed ones go over it.
    time_commands(&ssh.config, host, Some(&socket), 1)?;
    let shared = time_commands(&ssh.config, host, Some(&socket), args.rounds)?;
    let _ = read(
        Command::new("ssh")
            .arg("-F")
            .arg(&ssh.config)
            .arg("-o")
            .arg(format!("ControlPath={}", socket.display()))
            .args(["-O", "exit", "--", host]),
    );

    // bootstrap, through an ssh that logs each command.
    let real = which("ssh")?;
    let shim = work.join("shim");
    std::fs::create_dir_all(&shim)?;
    let log = work.join("ssh-commands.log");
    std::fs::write(
        shim.join("ssh"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(shim.join("ssh"), std::fs::Permissions::from_mode(0o755))?;
    }
    let path = std::env::join_paths(
        std::iter::once(shim.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )?;
    let tls = work.join("tls");
    read(Command::new(&binary).args(["ctl", "ca", "init", "--dir"]).arg(&tls))?;
    let cluster = cluster_file(&work, "bench-bootstrap", &tls, &nodes)?;
    let ctx = Ctx { binary: binary.clone(), cluster, config: ssh.config.clone() };
    let bootstrap = |extra: &[&str]| -> anyhow::Result<Run> {
        let logins_before: Vec<usize> =
            nodes.iter().map(|(n, _)| lab.ssh_logins(n)).collect::<Result<_, _>>()?;
        std::fs::write(&log, "")?;
        let started = Instant::now();
        let (code, events, stderr) = ctx.bootstrap_with(Command::new(&binary).env("PATH", &path), extra)?;
        let wall = started.elapsed();
        ensure!(code == Some(0), "bootstrap {extra:?} failed: {stderr}\n{events:?}");
        check_recap(&events, &nodes)?;
        let commands = std::fs::read_to_string(&log)?;
        let mut sessions = Vec::new();
        let mut logins = Vec::new();
        for ((name, ip), before) in nodes.iter().zip(logins_before) {
            let target = format!(" -- {ip} ");
            sessions.push(commands.lines().filter(|l| l.contains(&target) && !l.contains("-O exit")).count());
            logins.push(lab.ssh_logins(name)? - before);
        }
        Ok(Run { wall, sessions, logins })
    };
    let reset = || -> anyhow::Result<()> {
        for (name, _) in &nodes {
            lab.exec(name, &["sh", "-c", "systemctl disable --now pvfs-agent 2>/dev/null; rm -rf /etc/pvfs /usr/local/bin/pvfs-agent /etc/systemd/system/pvfs-agent.service /var/cache/pvfs && systemctl daemon-reload"])
                .with_context(|| format!("resetting {name}"))?;
        }
        Ok(())
    };
    let plain_first = bootstrap(&["--no-multiplex"])?;
    let plain_second = bootstrap(&["--no-multiplex"])?;
    reset()?;
    let shared_first = bootstrap(&[])?;
    let shared_second = bootstrap(&[])?;

    let size = std::fs::metadata(&binary)?.len();
    let n = nodes.len();
    println!(
        "bench-bootstrap: {n} nodes (containers: systemd, Debian's sshd), binary {:.0} MB",
        size as f64 / 1e6
    );
    println!("one ssh command (node1, mean of {}):", args.rounds);
    println!("  a connection of its own      {:>8.1} ms", ms(fresh));
    println!("  over an open master          {:>8.1} ms", ms(shared));
    println!("bootstrap of {n} nodes at once (wall time; ssh commands and sshd logins per node):");
    for (what, run) in [
        ("first run,  --no-multiplex", &plain_first),
        ("first run,  multiplexed", &shared_first),
        ("second run, --no-multiplex", &plain_second),
        ("second run, multiplexed", &shared_second),
    ] {
        println!(
            "  {what:<28} {:>7.2} s   commands {:?}   logins {:?}",
            run.wall.as_secs_f64(),
            run.sessions,
            run.logins
        );
    }
    let commands = shared_first.sessions.iter().max().copied().unwrap_or(0);
    let handshakes_before = commands as f64 * ms(fresh) / 1000.0;
    let handshakes_after = (ms(fresh) + commands.saturating_sub(1) as f64 * ms(shared)) / 1000.0;
    println!(
        "ssh alone, per node, first run: {commands} commands × {:.0} ms = {handshakes_before:.2} s before; \
         1 × {:.0} ms + {} × {:.1} ms = {handshakes_after:.2} s now",
        ms(fresh),
        ms(fresh),
        commands.saturating_sub(1),
        ms(shared)
    );
    println!(
        "estimate (bootstrap runs at most {PARALLEL} nodes at once; each wave taken as long as the {n}-node run above, \
         which holds while the coordinator's CPU and uplink keep up with {PARALLEL} uploads):"
    );
    for total in [16usize, 200] {
        let waves = total.div_ceil(PARALLEL);
        let at = |run: &Run| waves as f64 * run.wall.as_secs_f64();
        println!(
            "  {total:>3} nodes, {waves:>2} wave(s): first run {:.1} s → {:.1} s, second run {:.1} s → {:.1} s \
             (SSH handshakes alone: {:.1} s → {:.1} s)",
            at(&plain_first),
            at(&shared_first),
            at(&plain_second),
            at(&shared_second),
            waves as f64 * handshakes_before,
            waves as f64 * handshakes_after,
        );
    }
    if !args.keep {
        drop(lab);
        std::fs::remove_dir_all(&work).ok();
    }
    Ok(())
}

/// The mean time of `rounds` runs of `ssh HOST true`, each a connection of its own, or over
/// the master at `socket` (opened by the first command when there is none).
fn time_commands(config: &Path, host: &str, socket: Option<&Path>, rounds: u32) -> anyhow::Result<Duration> {
    let started = Instant::now();
    for _ in 0..rounds {
        let mut ssh = Command::new("ssh");
        ssh.arg("-F").arg(config).args(["-o", "BatchMode=yes"]);
        if let Some(socket) = socket {
            ssh.args(["-o", "ControlMaster=auto", "-o", "ControlPersist=60", "-o"])
                .arg(format!("ControlPath={}", socket.display()));
        }
        read(ssh.args(["--", host, "true"]))?;
    }
    Ok(started.elapsed() / rounds.max(1))
}

fn check_recap(events: &[Value], nodes: &[(String, String)]) -> anyhow::Result<()> {
    for (name, _) in nodes {
        let counts = recap_of(events, name)?;
        ensure!(counts["failed"] == 0, "{name}: {counts}");
    }
    Ok(())
}

fn which(program: &str) -> anyhow::Result<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .with_context(|| format!("{program} is not in PATH (apt-get install openssh-client)"))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
