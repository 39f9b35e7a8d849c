//! `cargo xtask bench-flood`: a real agent (release build, mutual TLS, loopback only) under
//! connection and stream floods while a coordinator follows its samples. No assertions:
//! figures to report.
//!
//! Phases, each held for `--seconds`: a quiet baseline; N idle TCP connections (a handshake
//! that never starts); N half-open TLS handshakes (a ClientHello record header, then nothing);
//! N Metrics streams over mutual TLS (refusals counted); then a quiet tail after the flood is
//! gone. The flood comes from other loopback addresses (127.0.0.2, …), as from other hosts;
//! the coordinator and `pvfsctl nodes` from 127.0.0.1. For each phase: the agent's CPU and RSS
//! (from /proc), `pvfsctl nodes` and `Info` latency, and over the whole run the samples the
//! coordinator lost (seconds missing from its stream; the goal is 0).

use crate::util::{self, KillOnDrop, cargo, read, step};
use anyhow::{Context, bail};
use pvfs_coord::stream::{Event, Start};
use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct FloodArgs {
    /// Connections (or streams) in each flood.
    #[arg(long, default_value_t = 1000)]
    pub n: usize,
    /// How long each phase is held.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Loopback addresses the flood comes from (127.0.0.2 and up).
    #[arg(long, default_value_t = 4)]
    pub sources: u8,
    /// The agent's open-file limit (soft and hard), as a unit's LimitNOFILE= would set it.
    #[arg(long, default_value_t = 1024)]
    pub nofile: u64,
    /// Use the debug build (quick to build where a fat-LTO release build takes long; CPU
    /// figures are then higher than in production).
    #[arg(long)]
    pub debug: bool,
    /// Measure this `pvfs` binary instead of building one (another branch's, to compare).
    #[arg(long)]
    pub binary: Option<std::path::PathBuf>,
}

/// What the coordinator following the agent saw.
#[derive(Default)]
struct Followed {
    samples: AtomicU64,
    /// Seconds missing between consecutive samples (a sample the agent did not take, or one
    /// it no longer held when asked: a gap is counted by the seconds it spans).
    lost: AtomicU64,
    gaps: AtomicU64,
    down: AtomicU64,
}

pub fn run(args: &FloodArgs) -> anyhow::Result<()> {
    if args.sources == 0 || args.sources > 200 {
        bail!("--sources must be 1..=200 (loopback addresses 127.0.0.2 and up)");
    }
    let binary = match &args.binary {
        Some(binary) => binary.clone(),
        None if args.debug => {
            step(cargo().args(["build", "--locked", "-p", "pvfs", "--bin", "pvfs"]))?;
            util::root().join("target/debug/pvfs")
        }
        None => util::build_shipped()?,
    };
    let dir = util::root().join("target/bench-flood");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let tls = dir.join("tls");
    let tls_arg = tls.to_string_lossy().into_owned();
    read(Command::new(&binary).args(["ctl", "ca", "init", "--dir", &tls_arg]))?;
    read(Command::new(&binary).args(["ctl", "ca", "issue", "pvfsctl", "--dir", &tls_arg]))?;
    read(Command::new(&binary).args(["ctl", "ca", "issue", "n1", "--dir", &tls_arg, "--san", "127.0.0.1"]))?;
    let port = util::free_port()?;
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse()?;
    // The shell's ulimit sets the agent's descriptor limit (no unsafe pre_exec here either).
    let agent = KillOnDrop::spawn(
        Command::new("sh")
            .args(["-c", &format!("ulimit -n {} && exec \"$0\" \"$@\"", args.nofile)])
            .arg(&binary)
            .args(["agent", "--name", "n1", "--listen", &addr.to_string(), "--tls-dir", &tls_arg])
            .arg("--state-dir")
            .arg(dir.join("state")),
    )?;
    let cluster_path = dir.join("cluster.toml");
    std::fs::write(
        &cluster_path,
        format!(
            "[cluster]\nname = \"flood\"\nkind = \"local\"\n[local]\nmount = \"/tmp\"\n[tls]\ndir = \"{tls_arg}\"\n\
             [[node]]\nname = \"n1\"\naddress = \"{addr}\"\nroles = [\"server\"]\n"
        ),
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(flood(args, &binary, &cluster_path, addr, agent))
}

async fn flood(
    args: &FloodArgs,
    binary: &std::path::Path,
    cluster_path: &std::path::Path,
    addr: SocketAddr,
    agent: KillOnDrop,
) -> anyhow::Result<()> {
    let cluster = pvfs_config::load(cluster_path)?;
    let material = pvfs_tls::load(&cluster.tls_dir, "pvfsctl")?;
    let dialer =
        pvfs_coord::Dialer::new(pvfs_coord::ClientSecurity::MutualTls(material), Duration::from_secs(5));
    let node = cluster.nodes.first().context("the cluster file names n1")?.clone();
    // Wait (bounded) for the agent to answer.
    let deadline = Instant::now() + Duration::from_secs(20);
    while dialer.connect(&node).await.is_err() {
        if Instant::now() > deadline {
            bail!("the agent did not answer within 20 s");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The coordinator: follows the agent's samples for the whole run.
    let shutdown = tokio_util::sync::CancellationToken::new();
    let followed = Arc::new(Followed::default());
    let mut events = pvfs_coord::stream::follow_cluster(
        &cluster,
        &dialer,
        &std::collections::HashMap::new(),
        Start::Since { unix_ns: 0 },
        0,
        shutdown.clone(),
    );
    let counter = {
        let followed = followed.clone();
        tokio::spawn(async move {
            let mut last_time: Option<u64> = None;
            while let Some(event) = events.recv().await {
                match event {
                    Event::Sample { stamped, .. } => {
                        followed.samples.fetch_add(1, Ordering::Relaxed);
                        let t = stamped.sample.time_unix_ns;
                        if let Some(prev) = last_time {
                            // Samples are taken on the second: each whole second more than one
                            // between two is a sample the agent did not take.
                            let seconds = (t.saturating_sub(prev) as f64 / 1e9).round() as u64;
                            followed.lost.fetch_add(seconds.saturating_sub(1), Ordering::Relaxed);
                        }
                        last_time = Some(t);
                    }
                    Event::Gap { .. } => {
                        followed.gaps.fetch_add(1, Ordering::Relaxed);
                    }
                    Event::Down { .. } => {
                        followed.down.fetch_add(1, Ordering::Relaxed);
                    }
                    Event::Up { .. } | Event::Restarted { .. } => {}
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_secs(3)).await;

    let pid = agent.pid();
    let hold = Duration::from_secs(args.seconds);
    println!(
        "\npvfs-agent ({}, mTLS, loopback, LimitNOFILE={}), floods of {} from {} loopback addresses, {} s each:",
        match &args.binary {
            Some(binary) => binary.display().to_string(),
            None if args.debug => "debug build".to_owned(),
            None => "as shipped: profile dist".to_owned(),
        },
        args.nofile,
        args.n,
        args.sources,
        args.seconds
    );
    println!(
        "{:<28} {:>9} {:>9} {:>22} {:>22}",
        "phase", "CPU %", "RSS MB", "nodes ms (med/max)", "Info ms (med/max)"
    );

    measure("quiet (before)", pid, hold, binary, cluster_path, &dialer, &node).await?;

    let idle = idle_connections(addr, args.n, args.sources).await;
    measure("idle TCP connections", pid, hold, binary, cluster_path, &dialer, &node).await?;
    drop(idle);

    let half_open = half_open_handshakes(addr, args.n, args.sources).await;
    measure("half-open TLS handshakes", pid, hold, binary, cluster_path, &dialer, &node).await?;
    drop(half_open);

    let (streams, refused) = metrics_streams(&dialer, &node, args.n).await;
    let label = format!("Metrics streams ({} open)", streams.len());
    measure(&label, pid, hold, binary, cluster_path, &dialer, &node).await?;
    println!(
        "  Metrics streams asked {}: {} opened, {} refused (RESOURCE_EXHAUSTED)",
        args.n,
        streams.len(),
        refused
    );
    drop(streams);

    measure("quiet (after)", pid, hold, binary, cluster_path, &dialer, &node).await?;
    shutdown.cancel();
    let _ = counter.await;
    println!(
        "  coordinator following the agent: {} samples, {} lost ({} gaps reported), {} times down",
        followed.samples.load(Ordering::Relaxed),
        followed.lost.load(Ordering::Relaxed),
        followed.gaps.load(Ordering::Relaxed),
        followed.down.load(Ordering::Relaxed)
    );
    drop(agent);
    Ok(())
}

/// Holds the phase for `hold` while timing `pvfsctl nodes` and `Info` on fresh connections,
/// then prints the agent's CPU over the phase and its RSS at the end.
async fn measure(
    phase: &str,
    pid: u32,
    hold: Duration,
    binary: &std::path::Path,
    cluster: &std::path::Path,
    dialer: &pvfs_coord::Dialer,
    node: &pvfs_config::Node,
) -> anyhow::Result<()> {
    let (cpu0, t0) = (cpu_ns(pid)?, Instant::now());
    let (mut nodes, mut info) = (Vec::new(), Vec::new());
    while t0.elapsed() < hold {
        let started = Instant::now();
        let out = tokio::process::Command::new(binary)
            .args(["ctl", "nodes"])
            .arg(cluster)
            .args(["--timeout", "5s"])
            .output()
            .await?;
        nodes.push(if out.status.success() {
            started.elapsed().as_secs_f64() * 1000.0
        } else {
            f64::INFINITY
        });
        let started = Instant::now();
        let answered = match dialer.connect(node).await {
            Ok(mut conn) => {
                tokio::time::timeout(Duration::from_secs(5), conn.agent.info(pvfs_proto::pb::InfoRequest {}))
                    .await
                    .is_ok_and(|r| r.is_ok())
            }
            Err(_) => false,
        };
        info.push(if answered { started.elapsed().as_secs_f64() * 1000.0 } else { f64::INFINITY });
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let cpu_pct = (cpu_ns(pid)? - cpu0) as f64 / 1e9 / t0.elapsed().as_secs_f64() * 100.0;
    let rss = rss_mb(pid)?;
    println!("{phase:<28} {cpu_pct:>9.1} {rss:>9.1} {:>22} {:>22}", stats(&mut nodes), stats(&mut info));
    Ok(())
}

/// "median/max" in ms; a failed or timed-out attempt counts as ∞ (and shows as "fail").
fn stats(v: &mut [f64]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.sort_by(f64::total_cmp);
    let show = |x: f64| if x.is_finite() { format!("{x:.0}") } else { "fail".into() };
    let failed = v.iter().filter(|x| !x.is_finite()).count();
    let mut out = format!("{}/{}", show(v[v.len() / 2]), show(v[v.len() - 1]));
    if failed > 0 {
        out += &format!(" ({failed}/{} failed)", v.len());
    }
    out
}

/// The `i`th flood source: 127.0.0.2, 127.0.0.3, …
fn source(i: usize, sources: u8) -> SocketAddr {
    let last = 2 + (i % usize::from(sources)) as u8;
    SocketAddr::from(([127, 0, 0, last], 0))
}

/// A TCP connection to `addr` from `from`, or none if the agent (or the kernel) refused it.
async fn connect_from(from: SocketAddr, addr: SocketAddr) -> Option<tokio::net::TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4().ok()?;
    socket.bind(from).ok()?;
    tokio::time::timeout(Duration::from_secs(2), socket.connect(addr)).await.ok()?.ok()
}

/// `n` connections that never send a byte.
async fn idle_connections(addr: SocketAddr, n: usize, sources: u8) -> Vec<tokio::net::TcpStream> {
    let mut held = Vec::with_capacity(n);
    for i in 0..n {
        if let Some(stream) = connect_from(source(i, sources), addr).await {
            held.push(stream);
        }
    }
    held
}

/// `n` connections that start a TLS handshake (a handshake record header announcing a
/// ClientHello) and never finish it.
async fn half_open_handshakes(addr: SocketAddr, n: usize, sources: u8) -> Vec<tokio::net::TcpStream> {
    use tokio::io::AsyncWriteExt;
    let mut held = Vec::with_capacity(n);
    for i in 0..n {
        if let Some(mut stream) = connect_from(source(i, sources), addr).await {
            // Record type 22 (handshake), TLS 1.0 record version, 512 bytes to come; then the
            // ClientHello's type byte. The rest never comes.
            if stream.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).await.is_ok() {
                held.push(stream);
            }
        }
    }
    held
}

/// Up to `n` Metrics streams over mutual TLS, spread over connections (HTTP/2 bounds the
/// streams of one); how many opened and how many the agent refused.
async fn metrics_streams(
    dialer: &pvfs_coord::Dialer,
    node: &pvfs_config::Node,
    n: usize,
) -> (Vec<tonic::Streaming<pvfs_proto::pb::MetricsEvent>>, usize) {
    const PER_CONNECTION: usize = 16;
    let request = pvfs_proto::pb::MetricsRequest { epoch: 0, after_seq: 0, since_unix_ns: 0, processes: 0 };
    let (mut open, mut refused) = (Vec::new(), 0);
    let mut conn = None;
    for i in 0..n {
        if i % PER_CONNECTION == 0 {
            conn = dialer.connect(node).await.ok();
        }
        let Some(conn) = conn.as_mut() else {
            refused += 1;
            continue;
        };
        match tokio::time::timeout(Duration::from_secs(5), conn.agent.metrics(request)).await {
            Ok(Ok(stream)) => open.push(stream.into_inner()),
            Ok(Err(_)) | Err(_) => refused += 1,
        }
    }
    (open, refused)
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
