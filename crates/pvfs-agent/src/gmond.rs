//! The Ganglia drop-in: a gmond-compatible XML dump on TCP, so an unmodified gmetad can poll
//! the agent as a `data_source`.
//!
//! Like gmond's tcp_accept_channel, each connection gets the whole document and is closed; no
//! request is read. The layout is gmond 3.7.2's byte for byte (written by
//! `pvfs_metrics::ganglia`, which serve's gmetad interface shares): its DTD (so expat fills in
//! the METRIC SOURCE default, as gmetad expects), `VERSION="3.7.2"`, every attribute present,
//! and its standard metric set with gmond's names, types, units, TMAX, slopes, groups and
//! descriptions (from a real 3.7.2 dump). On top of those, each block device's iostat -x
//! columns as `disk_<device>_<column>` in group `iostat`, which stock gmond lacks.
//!
//! Plain TCP, no authentication, as gmond: off unless `--gmond-xml` is given.

use crate::history::History;
use pvfs_host::Root;
use pvfs_metrics::ganglia::{self, Facts, Host, Writer};
use pvfs_metrics::rates::Rates;
use pvfs_metrics::ring::Stamped;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// gmetad reads with a 10 s timeout; a client that does not take the document in this long is
/// dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Clients served at once. Each is served on its own task, so a client that does not read
/// cannot hold up the next (gmetad polls every 15 s per data source; a few of them at once is
/// the most a real site has); past this, connections are closed at once rather than queued.
const MAX_CLIENTS: usize = 16;

/// Facts read once when the listener starts (gmond collects these `collect_once` too).
#[derive(Debug, Clone)]
pub struct StaticFacts {
    pub cpu_num: u32,
    pub cpu_mhz: u32,
    pub machine: &'static str,
    pub os_release: String,
    pub boottime: u64,
}

impl StaticFacts {
    pub fn read(root: &Root) -> StaticFacts {
        let cpuinfo = root.read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_num = cpuinfo.lines().filter(|l| l.starts_with("processor")).count().max(1) as u32;
        let cpu_mhz = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("cpu MHz").and_then(|r| r.split(':').nth(1)))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map_or(0, |mhz| mhz as u32);
        let stat = root.read_to_string("/proc/stat").unwrap_or_default();
        let boottime = stat
            .lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        StaticFacts {
            cpu_num,
            cpu_mhz,
            machine: std::env::consts::ARCH,
            os_release: root.read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_default(),
            boottime,
        }
    }
}

/// What one dump is made from.
pub struct Snapshot<'a> {
    pub cluster: &'a str,
    pub host: &'a str,
    pub ip: String,
    pub started: u64,
    pub now: u64,
    pub facts: &'a StaticFacts,
    pub latest: Option<&'a Stamped>,
    pub rates: Option<&'a Rates>,
    /// (total GB, free GB, fullest partition %) of local file systems.
    pub disk_space: (f64, f64, f64),
}

/// What every client's dump is made from.
struct Feed {
    history: Arc<History>,
    cluster: String,
    host: String,
    root: Root,
    facts: StaticFacts,
    started: u64,
}

/// Serves dumps on `listener` until `shutdown`: each client on its own task, at most
/// [`MAX_CLIENTS`] at once.
pub async fn serve(
    listener: TcpListener,
    history: Arc<History>,
    cluster: String,
    host: String,
    root: Root,
    shutdown: CancellationToken,
) {
    // File reads, so on the blocking pool rather than on the runtime's threads.
    let facts = {
        let root = root.clone();
        match tokio::task::spawn_blocking(move || StaticFacts::read(&root)).await {
            Ok(facts) => facts,
            Err(err) => {
                tracing::warn!(error = %err, "gmond-xml: cannot read the node's facts; feed off");
                return;
            }
        }
    };
    let feed = Arc::new(Feed { history, cluster, host, root, facts, started: unix_now() });
    let clients = Arc::new(tokio::sync::Semaphore::new(MAX_CLIENTS));
    loop {
        let (socket, peer) = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    tracing::warn!(error = %err, "gmond-xml accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = clients.clone().try_acquire_owned() else {
            tracing::debug!(peer = %peer, limit = MAX_CLIENTS, "gmond-xml client refused: too many at once");
            continue;
        };
        let feed = feed.clone();
        tokio::spawn(async move {
            let _permit = permit;
            serve_one(socket, peer, &feed).await;
        });
    }
}

/// One client: the whole document, then close.
async fn serve_one(mut socket: TcpStream, peer: SocketAddr, feed: &Feed) {
    let ip = socket.local_addr().map(|a: SocketAddr| a.ip().to_string()).unwrap_or_default();
    // statvfs on every local file system can block (a hung NFS or a busy disk): off the runtime.
    let disk_space = {
        let root = feed.root.clone();
        tokio::task::spawn_blocking(move || disk_space(&root)).await.unwrap_or((0.0, 0.0, 0.0))
    };
    let (latest, rates) = feed.history.latest_with_rates();
    let snapshot = Snapshot {
        cluster: &feed.cluster,
        host: &feed.host,
        ip,
        started: feed.started,
        now: unix_now(),
        facts: &feed.facts,
        latest: latest.as_ref(),
        rates: rates.as_ref(),
        disk_space,
    };
    let document = render(&snapshot);
    let written = tokio::time::timeout(WRITE_TIMEOUT, async {
        socket.write_all(document.as_bytes()).await?;
        socket.shutdown().await
    })
    .await;
    if !matches!(written, Ok(Ok(()))) {
        tracing::debug!(peer = %peer, "gmond-xml client did not take the dump");
    }
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// gmond's disk module: total and free space of local file systems in GB, and the fullest
/// partition's use in %. Local means a device under /dev, as gmond counts.
fn disk_space(root: &Root) -> (f64, f64, f64) {
    let mounts = root.read_to_string("/proc/mounts").unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    let (mut total, mut free, mut max_used) = (0.0, 0.0, 0.0f64);
    for line in mounts.lines() {
        let mut fields = line.split_whitespace();
        let (Some(device), Some(mount)) = (fields.next(), fields.next()) else { continue };
        if !device.starts_with("/dev/") || !seen.insert(device.to_owned()) {
            continue;
        }
        let Ok(stat) = nix::sys::statvfs::statvfs(root.path(mount).as_path()) else { continue };
        let block = stat.fragment_size() as f64;
        let (size, avail, bfree) = (
            stat.blocks() as f64 * block,
            stat.blocks_available() as f64 * block,
            stat.blocks_free() as f64 * block,
        );
        if size <= 0.0 {
            continue;
        }
        total += size;
        free += avail;
        max_used = max_used.max((size - bfree) / (size - bfree + avail) * 100.0);
    }
    let gb = 1024.0 * 1024.0 * 1024.0;
    (total / gb, free / gb, max_used)
}

/// The whole document: one host in its cluster.
pub fn render(s: &Snapshot<'_>) -> String {
    let mut out = String::with_capacity(24 * 1024);
    ganglia::preamble(&mut out, Writer::Gmond);
    ganglia::cluster_start(&mut out, s.cluster, s.now);
    let reported = s.latest.map_or(s.started, |l| l.sample.time_unix_ns / 1_000_000_000);
    let facts = Facts {
        cpu_num: Some(s.facts.cpu_num),
        cpu_mhz: Some(s.facts.cpu_mhz),
        machine: Some(s.facts.machine.to_owned()),
        os_release: Some(s.facts.os_release.clone()),
        boottime: Some(s.facts.boottime),
        disk_space: Some(s.disk_space),
    };
    let host = Host {
        name: s.host,
        ip: &s.ip,
        reported,
        tn: s.now.saturating_sub(reported),
        started: s.started,
        facts: &facts,
        latest: s.latest,
        rates: s.rates,
    };
    ganglia::host(&mut out, &host, Writer::Gmond);
    out.push_str("</CLUSTER>\n</GANGLIA_XML>\n");
    out
}

/// XML attribute escaping (the shared writer's), for the tests.
#[cfg(test)]
fn esc(s: &str) -> String {
    ganglia::Esc(s).to_string()
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
