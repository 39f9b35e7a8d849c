//! `cargo xtask bench-mesh`: the mesh's costs, measured (no assertions; figures to report).
//!
//! 1. An idle agent (release build, mutual TLS, on loopback): CPU time and memory over a
//!    window, read from /proc/PID/stat and /proc/PID/status.
//! 2. `pvfsctl nodes` against agent containers: wall time of the whole command, and the survey
//!    time it reports itself, over repeated runs.

use crate::util::{self, cargo, read, step};
use anyhow::{Context, bail};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// How long to watch the idle agent.
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// How many times to run `pvfsctl nodes` against the containers.
    #[arg(long, default_value_t = 20)]
    pub runs: usize,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    step(cargo().args(["build", "--release", "--locked", "-p", "pvfs", "--bin", "pvfs"]))?;
    let binary = util::root().join("target/release/pvfs");
    idle_agent(&binary, args.seconds)?;
    nodes_latency(&binary, args.runs)
}

fn idle_agent(binary: &std::path::Path, seconds: u64) -> anyhow::Result<()> {
    let dir = util::root().join("target/bench-mesh");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let tls = dir.join("tls");
    let tls_arg = tls.to_string_lossy().into_owned();
    read(Command::new(binary).args(["ctl", "ca", "init", "--dir", &tls_arg]))?;
    read(Command::new(binary).args(["ctl", "ca", "issue", "idle", "--dir", &tls_arg, "--san", "127.0.0.1"]))?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = Command::new(binary)
        .args(["agent", "--name", "idle", "--listen", &format!("127.0.0.1:{port}"), "--tls-dir", &tls_arg])
        .arg("--state-dir")
        .arg(dir.join("state"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting the agent")?;
    let pid = child.id();
    // Give it a moment to finish starting, so start-up is not counted as idle.
    std::thread::sleep(Duration::from_secs(2));
    let (cpu0, t0) = (cpu_ns(pid)?, Instant::now());
    std::thread::sleep(Duration::from_secs(seconds));
    let (cpu1, wall) = (cpu_ns(pid)?, t0.elapsed().as_secs_f64());
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    let _ = child.kill();
    let _ = child.wait();
    let cpu_ms = (cpu1 - cpu0) as f64 / 1e6;
    let cpu_pct = cpu_ms / 1000.0 / wall * 100.0;
    println!(
        "idle agent over {wall:.0}s: CPU {cpu_ms:.1} ms = {cpu_pct:.4}% of one core, RSS {:.2} MB, peak RSS {:.2} MB",
        kb("VmRSS:") / 1024.0,
        kb("VmHWM:") / 1024.0
    );
    Ok(())
}

/// CPU time of all of a process's threads, in nanoseconds (schedstat has ns resolution,
/// where /proc/PID/stat counts 10 ms ticks: too coarse for an idle daemon).
fn cpu_ns(pid: u32) -> anyhow::Result<u64> {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let stat = std::fs::read_to_string(task?.path().join("schedstat"))?;
        total += stat.split_whitespace().next().context("empty schedstat")?.parse::<u64>()?;
    }
    Ok(total)
}

fn nodes_latency(binary: &std::path::Path, runs: usize) -> anyhow::Result<()> {
    if runs == 0 {
        return Ok(());
    }
    let env = crate::e2e::Env::start(binary, 3, false)?;
    let mut wall = Vec::new();
    let mut survey = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let out = env.ctl(&["nodes", &env.cluster(), "--json"])?;
        wall.push(started.elapsed().as_secs_f64() * 1000.0);
        if !out.status.success() {
            bail!("nodes failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        survey.push(v["elapsed_ms"].as_f64().unwrap_or(f64::NAN));
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let p = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        format!("min {:.1} ms, median {:.1} ms, p95 {:.1} ms", p(0.0), p(0.5), p(0.95))
    };
    println!("pvfsctl nodes, 3 container agents, {runs} runs: whole command {}", stats(&mut wall));
    println!("  of which the survey (dial + TLS + Info + health, concurrent): {}", stats(&mut survey));
    Ok(())
}
