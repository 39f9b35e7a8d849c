//! The Ganglia drop-in: a gmond-compatible XML dump on TCP, so an unmodified gmetad can poll
//! the agent as a `data_source`.
//!
//! Like gmond's tcp_accept_channel, each connection gets the whole document and is closed; no
//! request is read. The layout is gmond 3.7.2's byte for byte: its DTD (so expat fills in the
//! METRIC SOURCE default, as gmetad expects), `VERSION="3.7.2"`, every attribute present, and
//! its standard metric set with gmond's names, types, units, TMAX, slopes, groups and
//! descriptions (from a real 3.7.2 dump). On top of those, each block device's iostat -x
//! columns as `disk_<device>_<column>` in group `iostat`, which stock gmond lacks.
//!
//! Plain TCP, no authentication, as gmond: off unless `--gmond-xml` is given.

use crate::history::History;
use pvfs_host::Root;
use pvfs_metrics::rates::{DiskColumn, Rates, metric_suffix};
use pvfs_metrics::ring::Stamped;
use std::fmt::Write as _;
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

/// gmond's host TMAX default: gmetad counts the host down after 4 × TMAX seconds of silence.
const HOST_TMAX: u64 = 20;
/// TMAX of the per-second iostat metrics.
const IOSTAT_TMAX: u64 = 20;

/// gmond 3.7.2's DTD (gmond/dtd.h), as its dumps carry it.
const DTD: &str = include_str!("gmond_dtd.xml");

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

/// One metric's fixed description, as gmond's modules declare it.
struct Meta<'a> {
    name: &'a str,
    kind: &'a str,
    units: &'a str,
    tmax: u64,
    slope: &'a str,
    group: &'a str,
    desc: &'a str,
    title: &'a str,
}

/// A row of the table below: one argument per column keeps the table readable.
#[allow(clippy::too_many_arguments)]
const fn meta(
    name: &'static str,
    kind: &'static str,
    units: &'static str,
    tmax: u64,
    slope: &'static str,
    group: &'static str,
    desc: &'static str,
    title: &'static str,
) -> Meta<'static> {
    Meta { name, kind, units, tmax, slope, group, desc, title }
}

/// gmond 3.7.2's default metrics (names, types, units, TMAX, slopes, groups, descriptions and
/// titles copied from a real dump). One row per metric, as in gmond's own tables.
#[rustfmt::skip]
const STANDARD: [Meta<'static>; 32] = [
    meta("mem_buffers", "float", "KB", 180, "both", "memory", "Amount of buffered memory", "Memory Buffers"),
    meta("part_max_used", "float", "%", 180, "both", "disk", "Maximum percent used for all partitions", "Maximum Disk Space Used"),
    meta("mem_cached", "float", "KB", 180, "both", "memory", "Amount of cached memory", "Cached Memory"),
    meta("cpu_wio", "float", "%", 90, "both", "cpu", "Percentage of time that the CPU or CPUs were idle during which the system had an outstanding disk I/O request", "CPU wio"),
    meta("cpu_num", "uint16", "CPUs", 1200, "zero", "cpu", "Total number of CPUs", "CPU Count"),
    meta("cpu_speed", "uint32", "MHz", 1200, "zero", "cpu", "CPU Speed in terms of MHz", "CPU Speed"),
    meta("swap_free", "float", "KB", 180, "both", "memory", "Amount of available swap memory", "Free Swap Space"),
    meta("bytes_in", "float", "bytes/sec", 300, "both", "network", "Number of bytes in per second", "Bytes Received"),
    meta("swap_total", "float", "KB", 1200, "zero", "memory", "Total amount of swap space displayed in KBs", "Swap Space Total"),
    meta("mem_free", "float", "KB", 180, "both", "memory", "Amount of available memory", "Free Memory"),
    meta("load_fifteen", "float", " ", 950, "both", "load", "Fifteen minute load average", "Fifteen Minute Load Average"),
    meta("mem_total", "float", "KB", 1200, "zero", "memory", "Total amount of memory displayed in KBs", "Memory Total"),
    meta("boottime", "uint32", "s", 1200, "zero", "system", "The last time that the system was started", "Last Boot Time"),
    meta("cpu_idle", "float", "%", 90, "both", "cpu", "Percentage of time that the CPU or CPUs were idle and the system did not have an outstanding disk I/O request", "CPU Idle"),
    meta("cpu_user", "float", "%", 90, "both", "cpu", "Percentage of CPU utilization that occurred while executing at the user level", "CPU User"),
    meta("cpu_nice", "float", "%", 90, "both", "cpu", "Percentage of CPU utilization that occurred while executing at the user level with nice priority", "CPU Nice"),
    meta("load_five", "float", " ", 325, "both", "load", "Five minute load average", "Five Minute Load Average"),
    meta("gexec", "string", "", 300, "zero", "core", "gexec available", "Gexec Status"),
    meta("cpu_system", "float", "%", 90, "both", "cpu", "Percentage of CPU utilization that occurred while executing at the system level", "CPU System"),
    meta("disk_free", "double", "GB", 180, "both", "disk", "Total free disk space", "Disk Space Available"),
    meta("disk_total", "double", "GB", 1200, "both", "disk", "Total available disk space", "Total Disk Space"),
    meta("mem_shared", "float", "KB", 180, "both", "memory", "Amount of shared memory", "Shared Memory"),
    meta("machine_type", "string", "", 1200, "zero", "system", "System architecture", "Machine Type"),
    meta("proc_total", "uint32", " ", 950, "both", "process", "Total number of processes", "Total Processes"),
    meta("pkts_in", "float", "packets/sec", 300, "both", "network", "Packets in per second", "Packets Received"),
    meta("pkts_out", "float", "packets/sec", 300, "both", "network", "Packets out per second", "Packets Sent"),
    meta("bytes_out", "float", "bytes/sec", 300, "both", "network", "Number of bytes out per second", "Bytes Sent"),
    meta("load_one", "float", " ", 70, "both", "load", "One minute load average", "One Minute Load Average"),
    meta("os_name", "string", "", 1200, "zero", "system", "Operating system name", "Operating System"),
    meta("os_release", "string", "", 1200, "zero", "system", "Operating system release date", "Operating System Release"),
    meta("cpu_aidle", "float", "%", 3800, "both", "cpu", "Percent of time since boot idle CPU", "CPU aidle"),
    meta("proc_run", "uint32", " ", 950, "both", "process", "Total number of running processes", "Total Running Processes"),
];

/// The value of a standard metric, formatted as gmond prints it; `None` before the first
/// sample for metrics that need one.
fn standard_value(name: &str, s: &Snapshot<'_>) -> Option<String> {
    let f = s.facts;
    let fixed = match name {
        "cpu_num" => Some(f.cpu_num.to_string()),
        "cpu_speed" => Some(f.cpu_mhz.to_string()),
        "boottime" => Some(f.boottime.to_string()),
        "gexec" => Some("OFF".into()),
        "machine_type" => Some(f.machine.into()),
        "os_name" => Some("Linux".into()),
        "os_release" => Some(f.os_release.clone()),
        "disk_total" => Some(format!("{:.3}", s.disk_space.0)),
        "disk_free" => Some(format!("{:.3}", s.disk_space.1)),
        "part_max_used" => Some(format!("{:.1}", s.disk_space.2)),
        // gmond reads "MemShared", which Linux dropped in 2.6: it reports 0, and so do we.
        "mem_shared" => Some("0".into()),
        _ => None,
    };
    if fixed.is_some() {
        return fixed;
    }
    let sample = &s.latest?.sample;
    let (m, l) = (&sample.mem, &sample.load);
    let value = match name {
        "mem_buffers" => format!("{}", m.buffers_kb),
        "mem_cached" => format!("{}", m.cached_kb),
        "mem_free" => format!("{}", m.free_kb),
        "mem_total" => format!("{}", m.total_kb),
        "swap_free" => format!("{}", m.swap_free_kb),
        "swap_total" => format!("{}", m.swap_total_kb),
        "load_one" => format!("{:.2}", l.one),
        "load_five" => format!("{:.2}", l.five),
        "load_fifteen" => format!("{:.2}", l.fifteen),
        "proc_run" => format!("{}", l.runnable),
        "proc_total" => format!("{}", l.tasks),
        "cpu_aidle" => {
            let c = &sample.cpu;
            // In f64: eight u64 counters can overflow a u64 sum.
            let total: f64 = [c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal]
                .into_iter()
                .map(|t| t as f64)
                .sum();
            format!("{:.1}", if total == 0.0 { 0.0 } else { c.idle as f64 / total * 100.0 })
        }
        _ => {
            let r = s.rates?;
            // gmond sums every interface but loopback, bonds and VLANs.
            let counted = r
                .nics
                .iter()
                .filter(|(n, _)| !n.starts_with("lo") && !n.starts_with("bond") && !n.contains('.'));
            match name {
                "cpu_user" => format!("{:.1}", r.cpu.usr),
                "cpu_nice" => format!("{:.1}", r.cpu.nice),
                // gmond's cpu_system includes interrupt time (libmetrics cpu_system_func).
                "cpu_system" => format!("{:.1}", r.cpu.sys + r.cpu.irq + r.cpu.soft),
                "cpu_wio" => format!("{:.1}", r.cpu.iowait),
                "cpu_idle" => format!("{:.1}", r.cpu.idle),
                "bytes_in" => format!("{:.2}", counted.map(|(_, n)| n.rxkb_s * 1024.0).sum::<f64>()),
                "bytes_out" => format!("{:.2}", counted.map(|(_, n)| n.txkb_s * 1024.0).sum::<f64>()),
                "pkts_in" => format!("{:.2}", counted.map(|(_, n)| n.rxpck_s).sum::<f64>()),
                "pkts_out" => format!("{:.2}", counted.map(|(_, n)| n.txpck_s).sum::<f64>()),
                _ => return None,
            }
        }
    };
    Some(value)
}

/// Units of each iostat column, for the Ganglia graphs' axes.
fn iostat_units(column: DiskColumn) -> &'static str {
    use DiskColumn::*;
    // Every column named, so that a new one gets its unit chosen rather than a default.
    match column {
        RrqmPct | WrqmPct | DrqmPct | Util => "%",
        RkBPerS | WkBPerS | DkBPerS => "KB/sec",
        RPerS | RrqmPerS | WPerS | WrqmPerS | DPerS | DrqmPerS | FPerS => "requests/sec",
        RAwait | WAwait | DAwait | FAwait => "ms",
        RareqSz | WareqSz | DareqSz => "KB",
        AquSz => "requests",
    }
}

/// The whole document.
pub fn render(s: &Snapshot<'_>) -> String {
    let mut out = String::with_capacity(24 * 1024);
    out.push_str(DTD);
    let reported = s.latest.map_or(s.started, |l| l.sample.time_unix_ns / 1_000_000_000);
    let tn = s.now.saturating_sub(reported);
    let _ = writeln!(out, "<GANGLIA_XML VERSION=\"3.7.2\" SOURCE=\"gmond\">");
    let _ = writeln!(
        out,
        "<CLUSTER NAME=\"{}\" LOCALTIME=\"{}\" OWNER=\"unspecified\" LATLONG=\"unspecified\" URL=\"unspecified\">",
        Esc(s.cluster),
        s.now
    );
    let _ = writeln!(
        out,
        "<HOST NAME=\"{}\" IP=\"{}\" TAGS=\"\" REPORTED=\"{reported}\" TN=\"{tn}\" TMAX=\"{HOST_TMAX}\" DMAX=\"0\" LOCATION=\"unspecified\" GMOND_STARTED=\"{}\">",
        Esc(s.host),
        Esc(&s.ip),
        s.started
    );
    for m in &STANDARD {
        if let Some(value) = standard_value(m.name, s) {
            metric(&mut out, m, &value, tn);
        }
    }
    if let (Some(rates), Some(latest)) = (s.rates, s.latest) {
        // Devices that never did any I/O are left out, as iostat leaves them out: each shown
        // device costs gmetad 22 RRD files.
        let used = |device: &str| latest.sample.disk(device).is_some_and(|d| d.total_ios() > 0);
        for (device, d) in rates.disks.iter().filter(|(device, _)| used(device)) {
            for column in DiskColumn::ALL {
                let value = d.get(column);
                let name = format!("disk_{device}_{}", metric_suffix(column.name()));
                let desc = format!("iostat -x {column} of {device} over the last second");
                let title = format!("{device} {column}");
                let m = Meta {
                    name: &name,
                    kind: "float",
                    units: iostat_units(column),
                    tmax: IOSTAT_TMAX,
                    slope: "both",
                    group: "iostat",
                    desc: &desc,
                    title: &title,
                };
                metric(&mut out, &m, &format!("{value:.2}"), tn);
            }
        }
    }
    out.push_str("</HOST>\n</CLUSTER>\n</GANGLIA_XML>\n");
    out
}

fn metric(out: &mut String, m: &Meta<'_>, value: &str, tn: u64) {
    let _ = write!(
        out,
        "<METRIC NAME=\"{}\" VAL=\"{}\" TYPE=\"{}\" UNITS=\"{}\" TN=\"{tn}\" TMAX=\"{}\" DMAX=\"0\" SLOPE=\"{}\">\n\
         <EXTRA_DATA>\n<EXTRA_ELEMENT NAME=\"GROUP\" VAL=\"{}\"/>\n<EXTRA_ELEMENT NAME=\"DESC\" VAL=\"{}\"/>\n\
         <EXTRA_ELEMENT NAME=\"TITLE\" VAL=\"{}\"/>\n</EXTRA_DATA>\n</METRIC>\n",
        Esc(m.name),
        Esc(value),
        m.kind,
        Esc(m.units),
        m.tmax,
        m.slope,
        Esc(m.group),
        Esc(m.desc),
        Esc(m.title)
    );
}

/// XML attribute escaping: one bad character would make gmetad drop the whole source.
#[cfg(test)]
fn esc(s: &str) -> String {
    Esc(s).to_string()
}

/// XML attribute escaping, written straight into the document: a dump has a few hundred metrics of nine
/// attributes each, and a string per attribute was most of a dump's allocations.
struct Esc<'a>(&'a str);

impl std::fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut plain = 0;
        for (i, c) in self.0.char_indices() {
            let replacement = match c {
                '&' => "&amp;",
                '<' => "&lt;",
                '>' => "&gt;",
                '"' => "&quot;",
                '\'' => "&apos;",
                c if (c as u32) < 0x20 => " ",
                // Not XML characters at all (XML 1.0 `Char`): a parser refuses the whole dump.
                '\u{fffe}' | '\u{ffff}' => "\u{fffd}",
                _ => continue,
            };
            f.write_str(&self.0[plain..i])?;
            f.write_str(replacement)?;
            plain = i + c.len_utf8();
        }
        f.write_str(&self.0[plain..])
    }
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
