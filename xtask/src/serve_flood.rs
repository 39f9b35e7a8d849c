//! `cargo xtask bench-serve-flood`: a real `pvfsctl serve` (loopback only) under a slowloris
//! on its `/metrics` listener while a scraper keeps scraping. No assertions: figures to report.
//!
//! Phases, each held for `--seconds`: a quiet baseline; N slowloris connections from N
//! loopback addresses (127.0.1.1, …: other hosts), each trickling a request's headers a byte a
//! second and reopened as soon as serve closes it; 200 from the scraper's own address
//! (127.0.0.1: a flood sharing its host or NAT); then a quiet tail. For each: the share of
//! scrapes (a fresh connection every 250 ms, `GET /metrics`, 10 s to answer) that got a
//! `200 OK`, their latency, serve's CPU over the phase and its RSS at the end.
//!
//! The cluster has one node nobody answers for, so `/metrics` is small and what is measured is
//! the listener, not the renderer (`cargo xtask bench-ingest` measures that).

use crate::util::{self, KillOnDrop, cargo, step};
use anyhow::{Context, bail};
use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

#[derive(clap::Args, Debug)]
pub struct ServeFloodArgs {
    /// Slowloris connections, one from each loopback address (127.0.1.1 and up).
    #[arg(long, default_value_t = 2000)]
    pub n: usize,
    /// How long each phase is held.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Use the debug build (quick to build where a fat-LTO release build takes long; CPU
    /// figures are then higher than in production).
    #[arg(long)]
    pub debug: bool,
    /// Measure this `pvfs` binary instead of building one (another branch's, to compare).
    #[arg(long)]
    pub binary: Option<std::path::PathBuf>,
}

pub fn run(args: &ServeFloodArgs) -> anyhow::Result<()> {
    if args.n == 0 || args.n > 60_000 {
        bail!("--n must be 1..=60000 (one loopback address each, 127.0.1.1 and up)");
    }
    let binary = match &args.binary {
        Some(binary) => binary.clone(),
        None if args.debug => {
            step(cargo().args(["build", "--locked", "-p", "pvfs", "--bin", "pvfs"]))?;
            util::root().join("target/debug/pvfs")
        }
        None => util::build_shipped()?,
    };
    // The flood's sockets are this process's descriptors.
    {
        use nix::sys::resource::{Resource, getrlimit, setrlimit};
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
        if hard < args.n as u64 + 512 {
            bail!("the open-file hard limit ({hard}) is too low for --n {}: raise it (ulimit -Hn)", args.n);
        }
    }
    let (dir, tls_arg) = util::bench_dir(&binary, "bench-serve-flood", &[])?;
    let cluster = dir.join("cluster.toml");
    // Port 1: nothing answers, so serve shows the node down and keeps trying once a second.
    std::fs::write(
        &cluster,
        format!(
            "[cluster]\nname = \"flood\"\nkind = \"local\"\n[local]\nmount = \"/tmp\"\n[tls]\ndir = \"{tls_arg}\"\n\
             [[node]]\nname = \"n1\"\naddress = \"127.0.0.1:1\"\nroles = [\"server\"]\n"
        ),
    )?;
    let addr: SocketAddr = format!("127.0.0.1:{}", util::free_port()?).parse()?;
    let serve = KillOnDrop::spawn(
        Command::new(&binary)
            .args(["ctl", "serve"])
            .arg(&cluster)
            .args(["--metrics-listen", &addr.to_string()]),
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(flood(args, addr, serve))
}

async fn flood(args: &ServeFloodArgs, addr: SocketAddr, serve: KillOnDrop) -> anyhow::Result<()> {
    let scraper = SocketAddr::from(([127, 0, 0, 1], 0));
    let deadline = Instant::now() + Duration::from_secs(20);
    while scrape(addr).await.is_err() {
        if Instant::now() > deadline {
            bail!("serve did not answer on {addr} within 20 s");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let pid = serve.pid();
    let hold = Duration::from_secs(args.seconds);
    println!(
        "\npvfsctl serve ({}), /metrics on loopback, slowloris of {} addresses, {} s a phase:",
        match &args.binary {
            Some(binary) => binary.display().to_string(),
            None if args.debug => "debug build".to_owned(),
            None => "as shipped: profile dist".to_owned(),
        },
        args.n,
        args.seconds
    );
    println!(
        "{:<34} {:>12} {:>20} {:>7} {:>8}",
        "phase", "scrapes ok", "latency ms med/max", "CPU %", "RSS MB"
    );
    measure("quiet (before)", pid, hold, addr).await?;

    let stop = CancellationToken::new();
    let mut flood = tokio::task::JoinSet::new();
    for i in 0..args.n {
        // 127.0.1.1 … 127.0.1.250, 127.0.2.1 …
        let from = SocketAddr::from(([127, 0, 1 + (i / 250) as u8, 1 + (i % 250) as u8], 0));
        flood.spawn(slowloris(from, addr, stop.clone()));
    }
    measure(&format!("slowloris, {} addresses", args.n), pid, hold, addr).await?;
    stop.cancel();
    while flood.join_next().await.is_some() {}

    let stop = CancellationToken::new();
    for _ in 0..200 {
        flood.spawn(slowloris(scraper, addr, stop.clone()));
    }
    measure("slowloris, 200 from 127.0.0.1", pid, hold, addr).await?;
    stop.cancel();
    while flood.join_next().await.is_some() {}

    measure("quiet (after)", pid, hold, addr).await?;
    drop(serve);
    Ok(())
}

/// Scrapes every 250 ms for `hold`, then prints the phase's row.
async fn measure(phase: &str, pid: u32, hold: Duration, to: SocketAddr) -> anyhow::Result<()> {
    let (cpu0, t0) = (cpu_ns(pid)?, Instant::now());
    let mut latencies = Vec::new();
    let mut failures = std::collections::BTreeMap::<String, usize>::new();
    while t0.elapsed() < hold {
        let started = Instant::now();
        latencies.push(match scrape(to).await {
            Ok(()) => started.elapsed().as_secs_f64() * 1000.0,
            Err(err) => {
                *failures.entry(format!("{err:#}")).or_default() += 1;
                f64::INFINITY
            }
        });
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let cpu = (cpu_ns(pid)? - cpu0) as f64 / 1e9 / t0.elapsed().as_secs_f64() * 100.0;
    let ok = latencies.iter().filter(|l| l.is_finite()).count();
    latencies.sort_by(f64::total_cmp);
    let show = |x: f64| if x.is_finite() { format!("{x:.0}") } else { "fail".into() };
    let latency =
        format!("{}/{}", show(latencies[latencies.len() / 2]), show(latencies[latencies.len() - 1]));
    println!(
        "{phase:<34} {:>12} {latency:>20} {cpu:>7.1} {:>8.1}",
        format!("{ok}/{}", latencies.len()),
        rss_mb(pid)?
    );
    for (why, count) in failures {
        println!("  {count} failed: {why}");
    }
    Ok(())
}

/// One `GET /metrics` on a fresh connection (from 127.0.0.1), answered `200 OK` within 10 s.
/// Blocking, on a thread of its own, as a scraper is a process of its own: on the flood's
/// runtime its request would wait behind the flood's tasks, and that delay would be counted
/// against serve.
async fn scrape(to: SocketAddr) -> anyhow::Result<()> {
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let limit = Duration::from_secs(10);
        let mut stream = std::net::TcpStream::connect_timeout(&to, limit)?;
        stream.set_read_timeout(Some(limit))?;
        stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: pvfs\r\nConnection: close\r\n\r\n")?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        if !answer.starts_with(b"HTTP/1.1 200 OK") {
            bail!("answered {:?}", String::from_utf8_lossy(&answer[..answer.len().min(40)]));
        }
        Ok(())
    })
    .await?
}

/// A connection from `from` trickling a request's headers (a byte a second, never the blank
/// line that ends them), reopened whenever serve closes it, until `stop`.
async fn slowloris(from: SocketAddr, to: SocketAddr, stop: CancellationToken) {
    while !stop.is_cancelled() {
        let Ok(socket) = tokio::net::TcpSocket::new_v4() else { return };
        let connected = async {
            socket.bind(from)?;
            socket.connect(to).await
        };
        let mut stream = tokio::select! {
            () = stop.cancelled() => return,
            connected = connected => match connected {
                Ok(stream) => stream,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: pvfs\r\n").await;
        let mut buf = [0u8; 256];
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                // An answer or a close: serve let go of this one.
                _ = stream.read(&mut buf) => break,
                () = tokio::time::sleep(Duration::from_secs(1)) => {
                    if stream.write_all(b"X").await.is_err() {
                        break;
                    }
                }
            }
        }
    }
}

/// CPU time of all of a process's threads, in nanoseconds.
fn cpu_ns(pid: u32) -> anyhow::Result<u64> {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let stat = std::fs::read_to_string(task?.path().join("schedstat"))?;
        total += stat.split_whitespace().next().context("empty schedstat")?.parse::<u64>()?;
    }
    Ok(total)
}

fn rss_mb(pid: u32) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .context("no VmRSS in /proc/PID/status")?;
    Ok(kb / 1024.0)
}
