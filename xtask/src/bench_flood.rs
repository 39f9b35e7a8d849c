//! `cargo xtask bench-flood`: a real agent (release build, mutual TLS, loopback only) under
//! connection and stream floods while a coordinator follows its samples. No assertions:
//! figures to report.
//!
//! Phases, each held for `--seconds`: a quiet baseline; N idle TCP connections (a handshake
//! that never starts); N half-open TLS handshakes (a ClientHello record header, then nothing);
//! both at once (half of N each); N Metrics streams over mutual TLS (refusals counted); then a
//! quiet tail after the flood is gone. The connection floods are kept in place: each flooding
//! connection is opened again as soon as the agent closes it (evicted, or its handshake timed
//! out), as an attacker would. The flood comes from `--sources` other loopback addresses
//! (127.1.0.1, 127.1.0.2, …: the loopback /8 binds without setup), as from other hosts; the
//! coordinator and `pvfsctl nodes` from 127.0.0.1. For each phase: the agent's CPU and RSS
//! (from /proc, RSS and its anonymous part at the phase's end), `pvfsctl nodes` and `Info` latency, how many of 32
//! fresh coordinator connections opened at once each got an `Info` answered, and over the
//! whole run the samples the coordinator lost (seconds missing from its stream; the goal is 0).

use crate::util::{self, KillOnDrop, cargo, step};
use anyhow::{Context, bail};
use pvfs_coord::stream::{Start, StreamEvent};
use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct FloodArgs {
    /// Connections (or streams) in each flood.
    #[arg(long, default_value_t = 2000)]
    pub n: usize,
    /// How long each phase is held.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Loopback addresses the flood comes from (127.1.0.1 and up), at most 60,000.
    #[arg(long, default_value_t = 2000)]
    pub sources: u16,
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
    if args.sources == 0 || args.sources > 60_000 {
        bail!("--sources must be 1..=60000 (loopback addresses 127.1.0.1 and up)");
    }
    let binary = match &args.binary {
        Some(binary) => binary.clone(),
        None if args.debug => {
            step(cargo().args(["build", "--locked", "-p", "pvfs", "--bin", "pvfs"]))?;
            util::root().join("target/debug/pvfs")
        }
        None => util::build_shipped()?,
    };
    let (dir, tls_arg) = util::bench_dir(&binary, "bench-flood", &["n1"])?;
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
                    StreamEvent::Sample { stamped, .. } => {
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
                    StreamEvent::Gap { .. } => {
                        followed.gaps.fetch_add(1, Ordering::Relaxed);
                    }
                    StreamEvent::Down { .. } => {
                        followed.down.fetch_add(1, Ordering::Relaxed);
                    }
                    StreamEvent::Up { .. } | StreamEvent::Restarted { .. } => {}
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
        "{:<30} {:>7} {:>7} {:>8} {:>6} {:>22} {:>22} {:>12}",
        "phase",
        "CPU %",
        "RSS MB",
        "anon MB",
        "fds",
        "nodes ms (med/max)",
        "Info ms (med/max)",
        "32 fresh ok"
    );

    measure("quiet (before)", pid, hold, binary, cluster_path, &dialer, &node).await?;

    for (label, kind) in [
        ("idle TCP connections", Kind::Idle),
        ("half-open TLS handshakes", Kind::HalfOpen),
        ("idle + half-open", Kind::Both),
    ] {
        let flood = Flood::start(addr, args.n, args.sources, kind);
        flood.established(args.n).await;
        measure(label, pid, hold, binary, cluster_path, &dialer, &node).await?;
        let connects = flood.stop().await;
        println!(
            "  {label}: {connects} connections opened by the flood (each reopened when the agent closed it)"
        );
    }

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
    measure("quiet (after, later)", pid, hold, binary, cluster_path, &dialer, &node).await?;
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
    // Descriptors the agent holds while the flood is on (mostly sockets).
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    let (fresh, failed) = fresh_infos(dialer, node, 32).await;
    let cpu_pct = (cpu_ns(pid)? - cpu0) as f64 / 1e9 / t0.elapsed().as_secs_f64() * 100.0;
    let (rss, anon) = (rss_mb(pid, "VmRSS")?, rss_mb(pid, "RssAnon")?);
    println!(
        "{phase:<30} {cpu_pct:>7.1} {rss:>7.1} {anon:>8.1} {fds:>6} {:>22} {:>22} {:>12}",
        stats(&mut nodes),
        stats(&mut info),
        format!("{fresh}/32")
    );
    if let Some(why) = failed {
        println!("  first failure of a fresh connection: {why}");
    }
    Ok(())
}

/// `n` fresh coordinator connections opened at once, each asking `Info` (5 s each): how many
/// were answered, and the first failure. What the issue counted: 13 of 32 under a flood from
/// 2000 addresses.
async fn fresh_infos(
    dialer: &pvfs_coord::Dialer,
    node: &pvfs_config::Node,
    n: usize,
) -> (usize, Option<String>) {
    let mut asks = tokio::task::JoinSet::new();
    for _ in 0..n {
        let (dialer, node) = (dialer.clone(), node.clone());
        asks.spawn(async move {
            let answered = async {
                let mut conn = dialer.connect(&node).await.map_err(|e| format!("connect: {e:#}"))?;
                conn.agent.info(pvfs_proto::pb::InfoRequest {}).await.map_err(|e| format!("Info: {e}"))?;
                Ok::<_, String>(())
            };
            tokio::time::timeout(Duration::from_secs(5), answered)
                .await
                .unwrap_or_else(|_| Err("no answer within 5 s".to_owned()))
        });
    }
    let (mut ok, mut first) = (0, None);
    while let Some(answered) = asks.join_next().await {
        match answered {
            Ok(Ok(())) => ok += 1,
            Ok(Err(why)) => first = first.or(Some(why)),
            Err(join) => first = first.or(Some(join.to_string())),
        }
    }
    (ok, first)
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

/// The `i`th flood source: 127.1.0.1, 127.1.0.2, … (250 a /24, none of them 127.0.0.1).
fn source(i: usize, sources: u16) -> SocketAddr {
    let i = i % usize::from(sources);
    SocketAddr::from(([127, 1, (i / 250) as u8, (i % 250) as u8 + 1], 0))
}

/// What a flooding connection does once connected.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Sends nothing: a handshake that never starts.
    Idle,
    /// Sends a handshake record header announcing a ClientHello, and its type byte; the rest
    /// never comes.
    HalfOpen,
    /// Half of each.
    Both,
}

/// A connection flood kept in place: one task per connection, each reopening its connection
/// as soon as the agent closes it, until stopped.
struct Flood {
    stop: tokio_util::sync::CancellationToken,
    tasks: tokio::task::JoinSet<()>,
    /// Connections opened, and connections open now.
    connects: Arc<AtomicU64>,
    open: Arc<AtomicU64>,
}

impl Flood {
    fn start(addr: SocketAddr, n: usize, sources: u16, kind: Kind) -> Flood {
        let stop = tokio_util::sync::CancellationToken::new();
        let (connects, open) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..n {
            let half_open = match kind {
                Kind::Idle => false,
                Kind::HalfOpen => true,
                Kind::Both => i % 2 == 1,
            };
            let (stop, connects, open) = (stop.clone(), connects.clone(), open.clone());
            let from = source(i, sources);
            tasks.spawn(async move {
                while !stop.is_cancelled() {
                    if let Some(stream) = connect_from(from, addr).await {
                        connects.fetch_add(1, Ordering::Relaxed);
                        open.fetch_add(1, Ordering::Relaxed);
                        tokio::select! {
                            () = stop.cancelled() => {}
                            () = hold(stream, half_open) => {}
                        }
                        open.fetch_sub(1, Ordering::Relaxed);
                    }
                    // A pause before reconnecting, so that the flood is a standing one rather
                    // than a connect loop spinning the machine's cores.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            });
        }
        Flood { stop, tasks, connects, open }
    }

    /// Waits (at most 30 s) until `n` of its connections are open at once, or each has
    /// connected once.
    async fn established(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.open.load(Ordering::Relaxed) < n as u64
            && self.connects.load(Ordering::Relaxed) < n as u64
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops the flood, closing its connections; how many it opened in all.
    async fn stop(mut self) -> u64 {
        self.stop.cancel();
        while self.tasks.join_next().await.is_some() {}
        self.connects.load(Ordering::Relaxed)
    }
}

/// Holds a flooding connection until the agent closes it (end of file or an error).
async fn hold(mut stream: tokio::net::TcpStream, half_open: bool) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // Record type 22 (handshake), TLS 1.0 record version, 512 bytes to come; then the
    // ClientHello's type byte.
    if half_open && stream.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).await.is_err() {
        return;
    }
    let mut buf = [0u8; 512];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            return;
        }
    }
}

/// A TCP connection to `addr` from `from`, or none if the agent (or the kernel) refused it.
async fn connect_from(from: SocketAddr, addr: SocketAddr) -> Option<tokio::net::TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4().ok()?;
    socket.bind(from).ok()?;
    tokio::time::timeout(Duration::from_secs(2), socket.connect(addr)).await.ok()?.ok()
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

/// A memory figure of `/proc/PID/status` in MB: `VmRSS` (all resident pages, the binary's
/// code among them) or `RssAnon` (the heap, stacks and other private memory, what a flood can
/// make the agent hold).
fn rss_mb(pid: u32, field: &str) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .with_context(|| format!("no {field} in /proc/PID/status"))?;
    Ok(kb / 1024.0)
}
