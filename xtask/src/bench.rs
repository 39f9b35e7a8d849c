//! `cargo xtask bench-mesh`: the mesh's costs, measured (no assertions; figures to report).
//!
//! 1. An idle agent (release build, mutual TLS, on loopback): CPU time and memory over a
//!    window, read from /proc/PID/stat and /proc/PID/status.
//! 2. `pvfsctl nodes` against agent containers: wall time of the whole command, and the survey
//!    time it reports itself, over repeated runs.

use crate::util::{self, KillOnDrop, free_port, read};
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
    let binary = util::build_shipped()?;
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
pub(crate) fn cpu_ns(pid: u32) -> anyhow::Result<u64> {
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

/// Simulated agents per simulator process (see `run_ingest`).
const AGENTS_PER_SIMULATOR: u16 = 4000;

#[derive(clap::Args, Debug)]
pub struct IngestArgs {
    /// Simulated agents.
    #[arg(long, default_value_t = 1000)]
    pub agents: u16,
    /// Each round's window.
    #[arg(long, default_value_t = 30)]
    pub seconds: u64,
    /// Rounds, one after another: each prints serve's and the simulators' CPU and the load
    /// average; the figure is their median, with a bootstrap interval.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Warm-up after every agent is streaming.
    #[arg(long, default_value_t = 10)]
    pub warmup: u64,
    /// serve keeps its history (`--history`), as the web view's node, compare and heatmap
    /// views need.
    #[arg(long)]
    pub history: bool,
    /// Then open serve's web view in a headless Chromium (Debian's chromium and
    /// chromium-driver) for another window each on its tiles and its table: the page's frames
    /// and long tasks, and serve's CPU and RSS beside the window without it.
    #[arg(long)]
    pub browser: bool,
    /// serve pushes every second by remote write (`--remote-write`) to a real Prometheus
    /// (Debian's, its receiver on) started for the run: what serve sent, dropped and retried,
    /// and what Prometheus took in, beside serve's CPU.
    #[arg(long)]
    pub remote_write: bool,
    /// The build measured: `dist` (the shipped binary: fat LTO, glibc 2.17) or `release`
    /// (what the README's build makes).
    #[arg(long, value_enum, default_value = "dist")]
    pub build: crate::bench_engine::Build,
}

/// `cargo xtask bench-ingest`: `pvfsctl serve` following N simulated agents (one process
/// serving N real agent services on N ports over mTLS, each streaming this machine's samples
/// every second). Reports the coordinator's CPU per 1,000 agents and the delay from sample
/// time to arrival, from the coordinator's own `pvfs_ingest_delay_seconds` histogram.
pub fn run_ingest(args: &IngestArgs) -> anyhow::Result<()> {
    util::ensure_programs(&[("curl", "curl")])?;
    let binary = crate::bench_engine::build(args.build)?;
    eprintln!("xtask bench-ingest: {} ({} build)", binary.display(), args.build.name());
    let (dir, tls_arg) = util::bench_dir(&binary, "bench-ingest", &["sim"])?;

    let n = args.agents;
    let base = free_range(n)?;
    let mut toml =
        String::from("[cluster]\nname = \"ingest\"\nkind = \"local\"\n[local]\nmount = \"/tmp\"\n");
    for i in 0..n {
        toml += &format!(
            "[[node]]\nname = \"sim{i}\"\naddress = \"127.0.0.1:{}\"\nroles = [\"server\"]\n",
            base + i
        );
    }
    let cluster = dir.join("cluster.toml");
    std::fs::write(&cluster, toml)?;
    // Several simulator processes: each simulated agent holds a listening socket and an
    // accepted connection, and one process for 10,000 of them would need more descriptors than
    // a usual hard limit (20,000 here) allows.
    let mut simulators = Vec::new();
    for first in (0..n).step_by(usize::from(AGENTS_PER_SIMULATOR)) {
        let count = AGENTS_PER_SIMULATOR.min(n - first);
        simulators.push(KillOnDrop::spawn(Command::new(&binary).args([
            "agent",
            "simulate",
            "--agents",
            &count.to_string(),
            "--listen",
            &format!("127.0.0.1:{}", base + first),
            "--tls-dir",
            &tls_arg,
        ]))?);
    }
    let sim_cpu = || -> anyhow::Result<u64> { simulators.iter().map(|s| cpu_ns(s.pid())).sum() };
    let metrics_port = free_port()?;
    let receiver = if args.remote_write { Some(Receiver::start(&dir)?) } else { None };
    let coordinator = KillOnDrop::spawn(
        Command::new(&binary)
            .args(["ctl", "serve"])
            .arg(&cluster)
            .args(["--metrics-listen", &format!("127.0.0.1:{metrics_port}")])
            .args(receiver.iter().flat_map(|r| ["--remote-write".to_owned(), r.write_url()]))
            // Its history when asked for, in the benchmark's own directory.
            .args(
                args.history
                    .then(|| ["--history".to_owned(), dir.join("history").to_string_lossy().into_owned()])
                    .into_iter()
                    .flatten(),
            ),
    )?;
    let url = format!("http://127.0.0.1:{metrics_port}/metrics");
    // A minute: a scrape of 10,000 nodes from a coordinator still catching up took over 10 s.
    let scrape =
        || -> anyhow::Result<String> { read(Command::new("curl").args(["-sf", "--max-time", "60", &url])) };

    // Wait (bounded) for every agent to stream. Every agent costs a TLS handshake on each
    // side, on the same two cores: 10,000 of them take minutes to connect.
    let ramp = Duration::from_secs(120.max(u64::from(n) / 25));
    let deadline = Instant::now() + ramp;
    loop {
        let up = scrape()
            .map(|t| t.lines().filter(|l| l.starts_with("pvfs_node_up{") && l.ends_with(" 1")).count())
            .unwrap_or(0);
        if up == usize::from(n) {
            break;
        }
        if Instant::now() > deadline {
            bail!("only {up} of {n} simulated agents streaming after {} s", ramp.as_secs());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    std::thread::sleep(Duration::from_secs(args.warmup));
    // serve copies its view when a scrape arrives and renders it afterwards (seconds at 10,000
    // nodes): the histogram is as of each scrape's start, so arrivals are counted over the
    // time between the two starts, not over the CPU window.
    let before_at = Instant::now();
    let before_text = scrape()?;
    let before = histogram(&before_text);
    let ingested0 = receiver.as_ref().map(Receiver::ingested).transpose()?;
    // The history's one file (`--history DIR` keeps DIR/CLUSTER.redb).
    let store = dir.join("history").join("ingest.redb");
    let store_bytes = || std::fs::metadata(&store).map_or(0, |m| m.len());
    let store0 = store_bytes();
    anyhow::ensure!(args.rounds > 0, "--rounds must be at least 1");
    let t0 = Instant::now();
    // Per round: serve's and the simulators' CPU, % of one core.
    let (mut serve_cpu, mut sim_cpu_pct) = (Vec::new(), Vec::new());
    for round in 0..args.rounds {
        let load = crate::engine_vs_real::load_average();
        let (cpu0, sim0, r0) = (cpu_ns(coordinator.pid())?, sim_cpu()?, Instant::now());
        std::thread::sleep(Duration::from_secs(args.seconds));
        let (cpu1, sim1, wall) = (cpu_ns(coordinator.pid())?, sim_cpu()?, r0.elapsed().as_secs_f64());
        let (cpu, sim) =
            ((cpu1 - cpu0) as f64 / 1e9 / wall * 100.0, (sim1 - sim0) as f64 / 1e9 / wall * 100.0);
        println!(
            "  round {round} (load {load}): serve {cpu:.2} % of a core ({:.3} % per 1,000 agents), simulators {sim:.1} %",
            cpu / f64::from(n) * 1000.0
        );
        serve_cpu.push(cpu);
        sim_cpu_pct.push(sim);
    }
    let wall = t0.elapsed().as_secs_f64();
    let store1 = store_bytes();
    let counted = before_at.elapsed().as_secs_f64();
    let after_text = scrape()?;
    let after = histogram(&after_text);
    let ingested1 = receiver.as_ref().map(Receiver::ingested).transpose()?;
    let status = std::fs::read_to_string(format!("/proc/{}/status", coordinator.pid()))?;
    let mb = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    let (rss, peak) = (mb("VmRSS:"), mb("VmHWM:"));

    let window: Vec<(f64, f64)> = after.iter().zip(&before).map(|((le, a), (_, b))| (*le, a - b)).collect();
    let total = window.last().map_or(0.0, |(_, c)| *c);
    let cpu_pct = util::median(&mut serve_cpu.clone());
    let sim_pct = util::median(&mut sim_cpu_pct);
    // The median's own interval: the ratio of the rounds' median to a constant 1.
    let (lo, hi) = util::ratio_interval(&serve_cpu, &[1.0]);
    println!(
        "\ncoordinator (pvfsctl serve) following {n} agents over mTLS, {} rounds of {} s (median [95 % bootstrap interval]):",
        args.rounds, args.seconds
    );
    println!(
        "  CPU {cpu_pct:.1}% [{lo:.1}, {hi:.1}] of one core = {:.2}% per 1,000 agents; RSS {rss:.1} MB (peak {peak:.1} MB, {:.1} KB per agent)",
        cpu_pct / f64::from(n) * 1000.0,
        rss * 1024.0 / f64::from(n)
    );
    println!(
        "  samples received live: {total:.0} in {counted:.0} s ({:.0}/s); delay from sample time to arrival: p50 {:.1} ms, p99 {:.1} ms",
        total / counted,
        quantile(&window, 0.5) * 1000.0,
        quantile(&window, 0.99) * 1000.0
    );
    println!("  (the simulators, on the same 2 cores, used {sim_pct:.1}% of a core)");
    // What each simulated agent sends: this machine's devices, as its agent would.
    let per_node = after_text.lines().filter(|l| !l.starts_with('#') && l.contains("node=\"sim0\"")).count();
    println!("  each node: {per_node} series on /metrics (this machine's disks and NICs)");
    if args.history {
        let dropped = counter(&after_text, "pvfs_history_dropped_seconds_total", "")
            - counter(&before_text, "pvfs_history_dropped_seconds_total", "");
        println!(
            "  history: the store grew {:.1} MB in the window ({:.1} MB/min, {:.0} MB now); node-seconds dropped by a writer behind: {dropped:.0} ({:.1}% of those received)",
            (store1 as f64 - store0 as f64) / 1e6,
            (store1 as f64 - store0 as f64) / 1e6 / wall * 60.0,
            store1 as f64 / 1e6,
            dropped / total.max(1.0) * 100.0
        );
    }
    println!("  extrapolated: 10,000 agents ≈ {:.0}% of one core", cpu_pct / f64::from(n) * 10_000.0);
    if let (Some(i0), Some(i1)) = (ingested0, ingested1) {
        let delta =
            |name: &str, label: &str| counter(&after_text, name, label) - counter(&before_text, name, label);
        println!(
            "  remote write to Prometheus: sent {:.0} samples/s, refused {:.0}, node-seconds dropped {:.0} ({:.0}% of those received), retries {:.0}; Prometheus took in {:.0} samples/s",
            delta("pvfs_remote_write_samples_total", "result=\"sent\"") / counted,
            delta("pvfs_remote_write_samples_total", "result=\"refused\""),
            delta("pvfs_remote_write_dropped_seconds_total", ""),
            delta("pvfs_remote_write_dropped_seconds_total", "") / total.max(1.0) * 100.0,
            delta("pvfs_remote_write_retries_total", ""),
            (i1 - i0) / counted
        );
    }
    if args.browser {
        web_view(&coordinator, metrics_port, args.seconds, cpu_pct)?;
    }
    drop(coordinator);
    drop(simulators);
    Ok(())
}

/// A counter's value in an exposition (`label`: a `k="v"` its line must hold; empty: none).
fn counter(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']) && l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Debian's Prometheus with its remote-write receiver on, for `bench-ingest --remote-write`.
struct Receiver {
    port: u16,
    _process: KillOnDrop,
}

impl Receiver {
    fn start(dir: &std::path::Path) -> anyhow::Result<Receiver> {
        util::ensure_programs(&[("prometheus", "prometheus")])?;
        let port = free_port()?;
        let config = dir.join("prometheus.yml");
        std::fs::write(&config, "global:\n  scrape_interval: 15s\n")?;
        let process = KillOnDrop::spawn(
            Command::new("prometheus")
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", dir.join("prometheus").display()))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--web.enable-remote-write-receiver"),
        )?;
        let receiver = Receiver { port, _process: process };
        let deadline = Instant::now() + Duration::from_secs(30);
        while receiver.ingested().is_err() {
            anyhow::ensure!(Instant::now() < deadline, "prometheus did not start within 30 s");
            std::thread::sleep(Duration::from_millis(300));
        }
        Ok(receiver)
    }

    fn write_url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1/write", self.port)
    }

    /// Samples Prometheus has appended to its head so far (its own counter).
    fn ingested(&self) -> anyhow::Result<f64> {
        let text = read(Command::new("curl").args([
            "-sf",
            "--max-time",
            "10",
            &format!("http://127.0.0.1:{}/metrics", self.port),
        ]))?;
        Ok(counter(&text, "prometheus_tsdb_head_samples_appended_total", ""))
    }
}

/// What the page measures of itself from now on: every frame's gap (requestAnimationFrame) and
/// every long task (a PerformanceObserver; Chromium reports tasks over 50 ms).
/// Run once per window: the counters start again, the observer and the frame loop only once
/// (a second loop would count every frame twice).
const PAGE_PERF: &str = "const started = !!window.__perf;\n\
    window.__perf = {long: 0, longMs: 0, maxGap: 0, frames: 0, last: performance.now()};\n\
    if (started) return true;\n\
    new PerformanceObserver(l => { for (const e of l.getEntries()) { __perf.long++; __perf.longMs += e.duration; } }).observe({type: 'longtask'});\n\
    (function f(t) { const g = t - __perf.last; if (g > __perf.maxGap) __perf.maxGap = g; __perf.last = t; __perf.frames++; requestAnimationFrame(f); })(performance.now());\n\
    return true;";

/// serve's web view open on `port` in a headless Chromium, a window on the tiles and one on the
/// table: the browser's frames and long tasks, serve's CPU and RSS (`closed_cpu`: without it).
fn web_view(coordinator: &KillOnDrop, port: u16, seconds: u64, closed_cpu: f64) -> anyhow::Result<()> {
    let browser = crate::browser::Browser::start();
    browser.go(&format!("http://127.0.0.1:{port}/"));
    std::thread::sleep(Duration::from_secs(5));
    for view in ["tiles", "table"] {
        browser.run(&format!("document.getElementById('v-{view}').click(); return null;"));
        std::thread::sleep(Duration::from_secs(2));
        browser.run(PAGE_PERF);
        // What the view shows of the clock: the tiles' seconds, or the table's cells.
        let shown_now = if view == "tiles" {
            "return [...document.querySelectorAll('.tile[data-seq]')].map(t => t.dataset.seq).join();"
        } else {
            "return [...document.querySelectorAll('#rows tr:not(.pad)')].map(r => r.textContent).join();"
        };
        let before = browser.run(shown_now);
        let (cpu0, t0) = (cpu_ns(coordinator.pid())?, Instant::now());
        std::thread::sleep(Duration::from_secs(seconds));
        let (cpu1, wall) = (cpu_ns(coordinator.pid())?, t0.elapsed().as_secs_f64());
        let perf = browser.run("return __perf;");
        let shot = browser.screenshot(&format!("bench-ingest-{view}"));
        let shown = browser.run(
            "return {tiles: document.querySelectorAll('.tile').length, drawn: document.querySelectorAll('.tile[data-seq]').length, \
             rows: document.querySelectorAll('#rows tr:not(.pad)').length, second: document.getElementById('status').textContent};",
        );
        let rss = std::fs::read_to_string(format!("/proc/{}/status", coordinator.pid()))?
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0;
        let cpu = (cpu1 - cpu0) as f64 / 1e9 / wall * 100.0;
        let num = |k: &str| perf[k].as_f64().unwrap_or(0.0);
        println!("\nweb view open in headless Chromium, {view}, {wall:.0} s window:");
        println!("  serve CPU {cpu:.1}% of one core (closed: {closed_cpu:.1}%), RSS {rss:.1} MB");
        println!("  screenshot: {}", shot.display());
        println!(
            "  page: {:.0} frames ({:.1}/s), longest gap between frames {:.0} ms, {:.0} long tasks (≥ 50 ms) totalling {:.0} ms",
            num("frames"),
            num("frames") / wall,
            num("maxGap"),
            num("long"),
            num("longMs")
        );
        println!(
            "  {} tiles ({} drawn: those on screen), {} table rows built (those on screen); live: {}",
            shown["tiles"],
            shown["drawn"],
            shown["rows"],
            if browser.run(shown_now) != before { "updated during the window" } else { "no tile changed" }
        );
    }
    Ok(())
}

/// A run of `n` consecutive free ports on loopback.
fn free_range(n: u16) -> anyhow::Result<u16> {
    'bases: for base in (20_000..60_000u16).step_by(usize::from(n.max(1)) + 100) {
        if u32::from(base) + u32::from(n) > 65_000 {
            break;
        }
        for p in base..base + n {
            if std::net::TcpListener::bind(("127.0.0.1", p)).is_err() {
                continue 'bases;
            }
        }
        return Ok(base);
    }
    bail!("no {n} consecutive free ports on loopback")
}

/// (upper bound, cumulative count) of `pvfs_ingest_delay_seconds`.
fn histogram(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("pvfs_ingest_delay_seconds_bucket{le=\""))
        .filter_map(|rest| {
            let (le, value) = rest.split_once("\"} ")?;
            let le = if le == "+Inf" { f64::INFINITY } else { le.parse().ok()? };
            Some((le, value.trim().parse().ok()?))
        })
        .collect()
}

/// A quantile from cumulative buckets, interpolating linearly inside the bucket (as
/// Prometheus's histogram_quantile does).
fn quantile(buckets: &[(f64, f64)], q: f64) -> f64 {
    let total = buckets.last().map_or(0.0, |(_, c)| *c);
    if total <= 0.0 {
        return f64::NAN;
    }
    let rank = q * total;
    let mut prev = (0.0, 0.0);
    for &(le, count) in buckets {
        if count >= rank {
            if le.is_infinite() {
                return prev.0;
            }
            let within = if count > prev.1 { (rank - prev.1) / (count - prev.1) } else { 0.0 };
            return prev.0 + (le - prev.0) * within;
        }
        prev = (le, count);
    }
    prev.0
}

#[derive(clap::Args, Debug)]
pub struct UpArgs {
    /// Cluster sizes to measure.
    #[arg(long, value_delimiter = ',', default_value = "20,1000")]
    pub nodes: Vec<u16>,
    /// No-op runs per size (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
}

/// `cargo xtask bench-up`: the wall time of `pvfsctl up` on an already converged cluster (a
/// no-op: every step assessed, nothing changed) of N nodes, simulated by one process serving
/// N real agent services over mTLS, on a local-kind cluster.
///
/// Two shapes: servers only (the orchestration: one unit of two steps per node), and servers
/// that are also clients (each client's unit ends with the write probe in the shared mount, an
/// fsync each, all on this machine's one disk; on a real cluster each client fsyncs its own).
pub fn run_up(args: &UpArgs) -> anyhow::Result<()> {
    let binary = util::build_shipped()?;
    let mut rows = Vec::new();
    let variants = [
        ("\"server\"", "servers (1 unit, 2 steps per node)"),
        ("\"server\", \"client\"", "servers+clients (2 units, 4 steps per node)"),
    ];
    for (roles, what) in variants {
        for &n in &args.nodes {
            let (first, noop) = up_on(&binary, n, roles, args.runs)?;
            rows.push((what, n, first, noop));
        }
    }
    println!("\npvfsctl up on a converged local-kind cluster (agents simulated in one process, mTLS):");
    println!(
        "{:<44} {:>6}  {:>9}  {:>12}  {:>8}  {:>8}",
        "", "nodes", "first up", "no-op median", "min", "max"
    );
    for (what, n, first, noop) in rows {
        println!(
            "{what:<44} {n:>6}  {:>8.2}s  {:>11.2}s  {:>7.2}s  {:>7.2}s",
            first.as_secs_f64(),
            noop[noop.len() / 2].as_secs_f64(),
            noop[0].as_secs_f64(),
            noop[noop.len() - 1].as_secs_f64()
        );
    }
    Ok(())
}

/// The first `up` on `n` simulated nodes with `roles`, then `runs` no-op ones (sorted).
fn up_on(
    binary: &std::path::Path,
    n: u16,
    roles: &str,
    runs: usize,
) -> anyhow::Result<(Duration, Vec<Duration>)> {
    let dir = util::root().join("target/bench-up");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let tls = dir.join("tls");
    let tls_arg = tls.to_string_lossy().into_owned();
    read(Command::new(binary).args(["ctl", "ca", "init", "--dir", &tls_arg]))?;
    read(Command::new(binary).args(["ctl", "ca", "issue", "pvfsctl", "--dir", &tls_arg]))?;
    read(Command::new(binary).args(["ctl", "ca", "issue", "sim", "--dir", &tls_arg, "--san", "127.0.0.1"]))?;
    let base = free_range(n)?;
    let mut toml = format!(
        "[cluster]\nname = \"bench-up\"\nkind = \"local\"\n[local]\nmount = \"{0}/mnt\"\ntargets = \"{0}/targets\"\n",
        dir.display()
    );
    for i in 0..n {
        toml += &format!(
            "[[node]]\nname = \"sim{i}\"\naddress = \"127.0.0.1:{}\"\nroles = [{roles}]\n",
            base + i
        );
    }
    let cluster = dir.join("cluster.toml");
    std::fs::write(&cluster, toml)?;
    let _simulator = KillOnDrop::spawn(Command::new(binary).args([
        "agent",
        "simulate",
        "--agents",
        &n.to_string(),
        "--listen",
        &format!("127.0.0.1:{base}"),
        "--tls-dir",
        &tls_arg,
    ]))?;
    let up = || -> anyhow::Result<(Duration, serde_json::Value)> {
        let started = Instant::now();
        let out = util::capture(Command::new(binary).args(["ctl", "up"]).arg(&cluster).args([
            "--json",
            "--timeout",
            "30s",
        ]))?;
        let took = started.elapsed();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let last = stdout.lines().last().unwrap_or_default();
        if !out.status.success() {
            bail!("up on {n} nodes failed: {}\n{last}", String::from_utf8_lossy(&out.stderr));
        }
        Ok((took, serde_json::from_str(last)?))
    };
    // The simulated agents take a moment to bind; the first up converges.
    let deadline = Instant::now() + Duration::from_secs(120);
    let first = loop {
        match up() {
            Ok((took, _)) => break took,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_secs(1)),
            Err(err) => return Err(err),
        }
    };
    let mut noop = Vec::new();
    for _ in 0..runs.max(1) {
        let (took, recap) = up()?;
        let changed: u64 =
            recap["nodes"].as_array().context("no recap")?.iter().filter_map(|n| n["changed"].as_u64()).sum();
        anyhow::ensure!(changed == 0, "a no-op up on {n} nodes changed {changed} steps");
        noop.push(took);
    }
    noop.sort();
    let _ = std::fs::remove_dir_all(&dir);
    Ok((first, noop))
}
