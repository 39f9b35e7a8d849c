//! The cluster as Prometheus sees it: node_exporter's names for the raw counters, iostat's and
//! sar's rates as gauges, every series labelled by node and role.
//!
//! Rendered by hand from the latest sample and rates of each node. `prometheus-client` models
//! live instruments that code updates as it goes; here the data already exists as one snapshot
//! per node, and the two text formats (0.0.4 and OpenMetrics 1.0) are a few lines each.

use crate::stream::StreamEvent;
use pvfs_config::Cluster;
use pvfs_metrics::rates::{CpuColumn, DiskColumn, NicColumn, Rates, follows};
use pvfs_metrics::ring::Stamped;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

/// Content type of the classic text format.
pub const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// Content type of OpenMetrics 1.0.
pub const OPENMETRICS_FORMAT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What is known of one node.
#[derive(Debug, Clone, Default)]
pub struct NodeView {
    pub role: String,
    pub up: bool,
    /// The newest sample. Shared, so that a scrape copies the view in a moment under the lock
    /// and renders it after, without holding up the samples arriving meanwhile.
    pub last: Option<Arc<Stamped>>,
    /// The sample `last` directly follows (same agent process, next sequence number), kept as
    /// the baseline of the node's rates; `None` after a gap or a restart. Rates are worked out
    /// when scraped rather than on every sample: at 10,000 nodes, one rates computation per
    /// node per scrape (every 15 s or so) instead of 10,000 a second.
    pub prev: Option<Arc<Stamped>>,
}

impl NodeView {
    /// iostat's and sar's rates over the node's last interval, when it has one.
    pub fn rates(&self) -> Option<Rates> {
        Some(Rates::between(&self.prev.as_ref()?.sample, &self.last.as_ref()?.sample))
    }

    /// `stamped` becomes the newest sample; the previous newest stays as the baseline only if
    /// `stamped` follows it.
    fn push(&mut self, stamped: Stamped) {
        let last = self.last.replace(Arc::new(stamped));
        self.prev = last.filter(|prev| self.last.as_ref().is_some_and(|curr| follows(prev, curr)));
    }
}

/// Upper bounds (seconds) of the ingest-delay histogram's buckets: fine around the tens of
/// milliseconds where a healthy coordinator sits, coarse beyond.
const DELAY_BUCKETS: [f64; 20] = [
    0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0,
    2.0, 5.0, 10.0,
];

/// How late samples arrive: from the sample's wall-clock time on the agent to its arrival here.
#[derive(Debug, Clone, Default)]
pub struct DelayHistogram {
    /// Counts per bucket of DELAY_BUCKETS, plus one for larger delays.
    counts: [u64; DELAY_BUCKETS.len() + 1],
    sum: f64,
    count: u64,
}

impl DelayHistogram {
    pub fn observe(&mut self, seconds: f64) {
        let seconds = seconds.max(0.0);
        let bucket = DELAY_BUCKETS.iter().position(|&b| seconds <= b).unwrap_or(DELAY_BUCKETS.len());
        self.counts[bucket] += 1;
        self.sum += seconds;
        self.count += 1;
    }
}

/// Every node's latest state, kept current from the cluster's stream events.
#[derive(Debug, Clone, Default)]
pub struct ClusterView {
    pub nodes: BTreeMap<String, NodeView>,
    /// Delays of the samples that arrived live (not those replayed from an agent's history).
    pub delays: DelayHistogram,
}

impl ClusterView {
    pub fn new(cluster: &Cluster) -> ClusterView {
        let nodes = cluster
            .nodes
            .iter()
            .map(|n| {
                let role = n.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(",");
                (n.name.clone(), NodeView { role, ..NodeView::default() })
            })
            .collect();
        ClusterView { nodes, delays: DelayHistogram::default() }
    }

    /// Folds one event in: a sample becomes the latest (with rates when it follows the previous
    /// one of the same agent process).
    pub fn apply(&mut self, event: StreamEvent) {
        match event {
            StreamEvent::Sample { node, mut stamped, .. } => {
                let Some(view) = self.nodes.get_mut(&node) else { return };
                // A device named twice (a broken or hostile agent) would be the same series
                // twice, which scrapers refuse: the first of each name is kept.
                first_of_each_name(&mut stamped.sample.disks, |d| &d.name);
                first_of_each_name(&mut stamped.sample.nics, |n| &n.name);
                view.up = true;
                let now =
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                let delay = now.as_secs_f64() - stamped.sample.time_unix_ns as f64 / 1e9;
                // Older than a sample interval means replayed history, not live delivery.
                if delay < 1.0 {
                    self.delays.observe(delay);
                }
                view.push(*stamped);
            }
            // The baseline is kept: a node back from down resumes its stream after its cursor,
            // so its next sample may well follow the last one and give rates at once (the
            // epoch and sequence check in `push` catches gaps and restarts by itself).
            StreamEvent::Down { node, .. } => {
                if let Some(view) = self.nodes.get_mut(&node) {
                    view.up = false;
                }
            }
            StreamEvent::Gap { .. } | StreamEvent::Restarted { .. } | StreamEvent::Up { .. } => {}
        }
    }
}

/// Keeps the first item of each name. Per sample, so without allocating in the usual case of
/// no duplicates: a few devices are compared pairwise, many through a set of borrowed names.
fn first_of_each_name<T>(items: &mut Vec<T>, name: impl Fn(&T) -> &String) {
    let keep: Vec<bool> = if items.len() <= 32 {
        let unique = items.iter().enumerate().all(|(i, a)| items[..i].iter().all(|b| name(b) != name(a)));
        if unique {
            return;
        }
        (0..items.len()).map(|i| items[..i].iter().all(|b| name(b) != name(&items[i]))).collect()
    } else {
        let mut seen = std::collections::HashSet::with_capacity(items.len());
        items.iter().map(|item| seen.insert(name(item))).collect()
    };
    let mut keep = keep.into_iter();
    items.retain(|_| keep.next().unwrap_or(false));
}

/// Where the exporter's series go: the text formats ([`Text`]), or remote write's time
/// series. The families and their labels are written once, in [`visit`], for every sink.
pub trait Sink {
    /// A family begins (its samples follow, contiguous); false skips it.
    fn begin(&mut self, name: &str, kind: &str, help: &str) -> bool;
    /// One sample of the family begun. `name` differs from the family's for a histogram's
    /// `_bucket`, `_sum` and `_count`.
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64);
    /// The family's samples are all written.
    fn end(&mut self) {}

    /// A whole family: `body` writes its samples.
    fn family(&mut self, name: &str, kind: &str, help: &str, body: impl FnOnce(&mut Self))
    where
        Self: Sized,
    {
        if self.begin(name, kind, help) {
            body(self);
            self.end();
        }
    }
}

/// Every node's families of `view` into `sink`: state, node_exporter's counters and gauges,
/// and the rates (`rates`: one entry per node of `view`, in its order). Not the coordinator's
/// own families ([`render_chunks`] adds those).
pub fn visit(view: &ClusterView, rates: &[Option<Rates>], sink: &mut impl Sink) {
    write_node_state(sink, view);
    write_disk_counters(sink, view);
    write_nic_counters(sink, view);
    write_cpu_counters(sink, view);
    write_memory_and_load(sink, view);
    write_rates(sink, view, rates);
    lustre::write(sink, view);
    gluster::write(sink, view);
    beegfs::write(sink, view);
}

/// Writes the exposition of `view`; `openmetrics` picks OpenMetrics 1.0 over text 0.0.4.
pub fn render(view: &ClusterView, openmetrics: bool) -> String {
    let mut whole = String::new();
    render_chunks(view, openmetrics, usize::MAX, |text| {
        whole = text;
        true
    });
    whole
}

/// [`render`] in pieces of about `chunk` bytes or more (whole metric families), each handed to
/// `emit` as it is done; stops early when `emit` returns false (the scraper went away). At
/// 10,000 nodes the exposition is about 400 MB: written whole, it was most of the coordinator's
/// memory for as long as a scrape lasted.
pub fn render_chunks(view: &ClusterView, openmetrics: bool, chunk: usize, emit: impl FnMut(String) -> bool) {
    let mut text = Text::new(view, openmetrics, chunk, emit);
    text.cluster(view);
    text.finish();
}

/// The text formats as a [`Sink`]: what a scrape reads, written in pieces of `chunk` bytes.
pub struct Text<E> {
    out: String,
    openmetrics: bool,
    /// Hand `out` to `emit` once it holds this much.
    chunk: usize,
    emit: E,
    /// `emit` said to stop: the families left are skipped.
    stopped: bool,
}

impl<E: FnMut(String) -> bool> Text<E> {
    /// A text of `view`'s size (it is only sized by it: [`Text::cluster`] writes it).
    pub fn new(view: &ClusterView, openmetrics: bool, chunk: usize, emit: E) -> Text<E> {
        // About what it will take (a node's lines are about 80 bytes each): growing by doubling
        // copied the whole text a dozen times at 1,000 nodes, and left up to twice its size
        // allocated. Capacity never written is never resident.
        let lines: usize = view
            .nodes
            .values()
            .map(|v| v.last.as_ref().map_or(2, |s| 48 + 40 * s.sample.disks.len() + 24 * s.sample.nics.len()))
            .sum();
        let capacity = (64 * 1024 + lines * 96).min(chunk.saturating_add(1024 * 1024));
        Text { out: String::with_capacity(capacity), openmetrics, chunk, emit, stopped: false }
    }

    /// Every family of `view`, the coordinator's own included.
    pub fn cluster(&mut self, view: &ClusterView) {
        // Once per node per scrape, in the nodes' order.
        let rates: Vec<Option<Rates>> = view.nodes.values().map(NodeView::rates).collect();
        visit(view, &rates, self);
        write_ingest_delay(self, &view.delays);
    }

    /// The end of the text (OpenMetrics' `# EOF`), handed to `emit`.
    pub fn finish(mut self) {
        if self.openmetrics {
            self.out.push_str("# EOF\n");
        }
        if !self.stopped {
            (self.emit)(self.out);
        }
    }
}

/// Whether each node is up, and how fresh its newest sample is.
fn write_node_state(w: &mut impl Sink, view: &ClusterView) {
    w.family(
        "pvfs_node_up",
        "gauge",
        "1 while the node's agent is streaming samples, 0 when it is down.",
        |f| {
            for (node, v) in &view.nodes {
                f.sample("pvfs_node_up", &[("node", node), ("role", &v.role)], if v.up { 1.0 } else { 0.0 });
            }
        },
    );
    w.family("pvfs_sample_time_seconds", "gauge", "Wall-clock time of the node's newest sample.", |f| {
        for (node, v) in &view.nodes {
            if let Some(s) = &v.last {
                f.sample(
                    "pvfs_sample_time_seconds",
                    &[("node", node), ("role", &v.role)],
                    s.sample.time_unix_ns as f64 / 1e9,
                );
            }
        }
    });
}

/// node_exporter's diskstats counters (collector/diskstats_linux.go): bytes from 512-byte
/// sectors, seconds from milliseconds, discarded sectors left in sectors as it does.
fn write_disk_counters(w: &mut impl Sink, view: &ClusterView) {
    type DiskField = fn(&pvfs_metrics::sample::DiskCounters) -> f64;
    let disk_counters: [(&str, &str, DiskField); 16] = [
        ("node_disk_reads_completed_total", "Reads completed.", |d| d.rd_ios as f64),
        ("node_disk_reads_merged_total", "Reads merged.", |d| d.rd_merges as f64),
        ("node_disk_read_bytes_total", "Bytes read.", |d| d.rd_sectors as f64 * 512.0),
        ("node_disk_read_time_seconds_total", "Seconds spent reading.", |d| d.rd_ticks as f64 / 1000.0),
        ("node_disk_writes_completed_total", "Writes completed.", |d| d.wr_ios as f64),
        ("node_disk_writes_merged_total", "Writes merged.", |d| d.wr_merges as f64),
        ("node_disk_written_bytes_total", "Bytes written.", |d| d.wr_sectors as f64 * 512.0),
        ("node_disk_write_time_seconds_total", "Seconds spent writing.", |d| d.wr_ticks as f64 / 1000.0),
        ("node_disk_io_time_seconds_total", "Seconds the device had I/O in flight.", |d| {
            d.tot_ticks as f64 / 1000.0
        }),
        ("node_disk_io_time_weighted_seconds_total", "Weighted seconds of I/O (sum of latencies).", |d| {
            d.rq_ticks as f64 / 1000.0
        }),
        ("node_disk_discards_completed_total", "Discards completed.", |d| d.dc_ios as f64),
        ("node_disk_discards_merged_total", "Discards merged.", |d| d.dc_merges as f64),
        ("node_disk_discarded_sectors_total", "Sectors discarded.", |d| d.dc_sectors as f64),
        ("node_disk_discard_time_seconds_total", "Seconds spent discarding.", |d| d.dc_ticks as f64 / 1000.0),
        ("node_disk_flush_requests_total", "Flush requests completed.", |d| d.fl_ios as f64),
        ("node_disk_flush_requests_time_seconds_total", "Seconds spent flushing.", |d| {
            d.fl_ticks as f64 / 1000.0
        }),
    ];
    for (name, help, value) in disk_counters {
        w.family(name, "counter", help, |f| {
            for (node, v) in &view.nodes {
                let Some(s) = &v.last else { continue };
                for d in &s.sample.disks {
                    f.sample(name, &[("node", node), ("role", &v.role), ("device", &d.name)], value(d));
                }
            }
        });
    }
    w.family("node_disk_io_now", "gauge", "I/Os in flight.", |f| {
        for (node, v) in &view.nodes {
            let Some(s) = &v.last else { continue };
            for d in &s.sample.disks {
                f.sample(
                    "node_disk_io_now",
                    &[("node", node), ("role", &v.role), ("device", &d.name)],
                    d.ios_pgr as f64,
                );
            }
        }
    });
}

/// node_exporter's netdev counters, one family per /proc/net/dev column.
fn write_nic_counters(w: &mut impl Sink, view: &ClusterView) {
    type NicField = fn(&pvfs_metrics::sample::NicCounters) -> u64;
    let nic_counters: [(&str, NicField); 11] = [
        ("node_network_receive_bytes_total", |n| n.rx_bytes),
        ("node_network_receive_packets_total", |n| n.rx_packets),
        ("node_network_receive_errs_total", |n| n.rx_errs),
        ("node_network_receive_drop_total", |n| n.rx_drop),
        ("node_network_receive_compressed_total", |n| n.rx_compressed),
        ("node_network_receive_multicast_total", |n| n.rx_multicast),
        ("node_network_transmit_bytes_total", |n| n.tx_bytes),
        ("node_network_transmit_packets_total", |n| n.tx_packets),
        ("node_network_transmit_errs_total", |n| n.tx_errs),
        ("node_network_transmit_drop_total", |n| n.tx_drop),
        ("node_network_transmit_compressed_total", |n| n.tx_compressed),
    ];
    for (name, value) in nic_counters {
        let help = format!(
            "Network device statistic {}.",
            name.trim_start_matches("node_network_").trim_end_matches("_total")
        );
        w.family(name, "counter", &help, |f| {
            for (node, v) in &view.nodes {
                let Some(s) = &v.last else { continue };
                for n in &s.sample.nics {
                    f.sample(
                        name,
                        &[("node", node), ("role", &v.role), ("device", &n.name)],
                        value(n) as f64,
                    );
                }
            }
        });
    }
}

/// node_exporter's CPU seconds, for all CPUs together (the sample keeps no per-CPU lines).
fn write_cpu_counters(w: &mut impl Sink, view: &ClusterView) {
    // USER_HZ is 100 on every Linux architecture pvfs runs on.
    w.family("node_cpu_seconds_total", "counter", "Seconds all CPUs spent in each mode.", |f| {
        for (node, v) in &view.nodes {
            let Some(s) = &v.last else { continue };
            let c = &s.sample.cpu;
            for (mode, ticks) in [
                ("user", c.user),
                ("nice", c.nice),
                ("system", c.system),
                ("idle", c.idle),
                ("iowait", c.iowait),
                ("irq", c.irq),
                ("softirq", c.softirq),
                ("steal", c.steal),
            ] {
                f.sample(
                    "node_cpu_seconds_total",
                    &[("node", node), ("role", &v.role), ("cpu", "all"), ("mode", mode)],
                    ticks as f64 / 100.0,
                );
            }
        }
    });
}

/// node_exporter's meminfo gauges (in bytes, from meminfo's kB) and load averages.
fn write_memory_and_load(w: &mut impl Sink, view: &ClusterView) {
    type MemField = fn(&pvfs_metrics::sample::MemCounters) -> u64;
    let mem: [(&str, MemField); 12] = [
        ("node_memory_MemTotal_bytes", |m| m.total_kb),
        ("node_memory_MemFree_bytes", |m| m.free_kb),
        ("node_memory_MemAvailable_bytes", |m| m.available_kb),
        ("node_memory_Buffers_bytes", |m| m.buffers_kb),
        ("node_memory_Cached_bytes", |m| m.cached_kb),
        ("node_memory_Slab_bytes", |m| m.slab_kb),
        ("node_memory_Committed_AS_bytes", |m| m.committed_as_kb),
        ("node_memory_Active_bytes", |m| m.active_kb),
        ("node_memory_Inactive_bytes", |m| m.inactive_kb),
        ("node_memory_Dirty_bytes", |m| m.dirty_kb),
        ("node_memory_SwapTotal_bytes", |m| m.swap_total_kb),
        ("node_memory_SwapFree_bytes", |m| m.swap_free_kb),
    ];
    for (name, kb) in mem {
        let help = format!("Memory information field {}.", name.trim_start_matches("node_memory_"));
        w.family(name, "gauge", &help, |f| {
            for (node, v) in &view.nodes {
                if let Some(s) = &v.last {
                    f.sample(name, &[("node", node), ("role", &v.role)], kb(&s.sample.mem) as f64 * 1024.0);
                }
            }
        });
    }
    for (name, which) in [("node_load1", 0), ("node_load5", 1), ("node_load15", 2)] {
        w.family(name, "gauge", "Load average.", |f| {
            for (node, v) in &view.nodes {
                if let Some(s) = &v.last {
                    let l = &s.sample.load;
                    f.sample(name, &[("node", node), ("role", &v.role)], [l.one, l.five, l.fifteen][which]);
                }
            }
        });
    }
}

/// iostat -x, sar -n DEV and sar -u as gauges over the last second; `rates` is one entry per
/// node of `view`, in its order, `None` for a node without two consecutive samples.
fn write_rates(w: &mut impl Sink, view: &ClusterView, rates: &[Option<Rates>]) {
    for column in DiskColumn::ALL {
        let name = format!("pvfs_disk_{}", pvfs_metrics::rates::metric_suffix(column.name()));
        let help = format!("iostat -x {column} over the last second.");
        w.family(&name, "gauge", &help, |f| {
            for ((node, v), r) in view.nodes.iter().zip(rates) {
                let Some(r) = r else { continue };
                for (device, d) in &r.disks {
                    f.sample(&name, &[("node", node), ("role", &v.role), ("device", device)], d.get(column));
                }
            }
        });
    }
    for column in NicColumn::ALL {
        let name = format!("pvfs_network_{}", pvfs_metrics::rates::metric_suffix(column.name()));
        let help = format!("sar -n DEV {column} over the last second.");
        w.family(&name, "gauge", &help, |f| {
            for ((node, v), r) in view.nodes.iter().zip(rates) {
                let Some(r) = r else { continue };
                for (device, n) in &r.nics {
                    f.sample(&name, &[("node", node), ("role", &v.role), ("device", device)], n.get(column));
                }
            }
        });
    }
    w.family("pvfs_cpu_percent", "gauge", "sar -u ALL percentages over the last second, all CPUs.", |f| {
        for ((node, v), r) in view.nodes.iter().zip(rates) {
            let Some(r) = r else { continue };
            for column in CpuColumn::ALL {
                f.sample(
                    "pvfs_cpu_percent",
                    &[("node", node), ("role", &v.role), ("mode", column.name().trim_start_matches('%'))],
                    r.cpu.get(column),
                );
            }
        }
    });
}

/// The coordinator's own health: how late live samples arrive, as a cumulative histogram.
fn write_ingest_delay(w: &mut impl Sink, h: &DelayHistogram) {
    w.family(
        "pvfs_ingest_delay_seconds",
        "histogram",
        "From a sample's time on its agent to its arrival at this coordinator, live samples only.",
        |f| {
            let mut cumulative = 0;
            for (bound, count) in DELAY_BUCKETS.iter().zip(h.counts) {
                cumulative += count;
                f.sample(
                    "pvfs_ingest_delay_seconds_bucket",
                    &[("le", &bound.to_string())],
                    cumulative as f64,
                );
            }
            f.sample("pvfs_ingest_delay_seconds_bucket", &[("le", "+Inf")], h.count as f64);
            f.sample("pvfs_ingest_delay_seconds_sum", &[], h.sum);
            f.sample("pvfs_ingest_delay_seconds_count", &[], h.count as f64);
        },
    );
}

impl<E: FnMut(String) -> bool> Sink for Text<E> {
    fn begin(&mut self, name: &str, kind: &str, help: &str) -> bool {
        if self.stopped {
            return false;
        }
        // OpenMetrics names a counter family without its `_total` sample suffix, and a counter
        // whose samples lack it (two of lustrefs-exporter's) is not one it can read: `unknown`.
        let (family, kind) = match (self.openmetrics, kind) {
            (true, "counter") if name.ends_with("_total") => (name.trim_end_matches("_total"), kind),
            (true, "counter") => (name, "unknown"),
            _ => (name, kind),
        };
        let _ = writeln!(self.out, "# HELP {family} {}", help.replace('\\', r"\\").replace('\n', r"\n"));
        let _ = writeln!(self.out, "# TYPE {family} {kind}");
        true
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if labels.is_empty() {
            self.out.push(' ');
            self.write_value(value);
            return;
        }
        self.out.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.out.push_str(k);
            self.out.push_str("=\"");
            // Escaped as it is written: a scrape writes hundreds of thousands of labels, and
            // hardly any needs escaping.
            if v.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
                for c in v.chars() {
                    match c {
                        '\\' => self.out.push_str(r"\\"),
                        '"' => self.out.push_str("\\\""),
                        '\n' => self.out.push_str(r"\n"),
                        c => self.out.push(c),
                    }
                }
            } else {
                self.out.push_str(v);
            }
            self.out.push('"');
        }
        self.out.push_str("} ");
        self.write_value(value);
    }

    fn end(&mut self) {
        if self.out.len() >= self.chunk {
            let next = String::with_capacity(self.out.capacity());
            self.stopped = !(self.emit)(std::mem::replace(&mut self.out, next));
        }
    }
}

impl<E> Text<E> {
    fn write_value(&mut self, value: f64) {
        if value.is_nan() {
            self.out.push_str("NaN");
        } else if value.is_infinite() {
            self.out.push_str(if value > 0.0 { "+Inf" } else { "-Inf" });
        } else if value.fract() == 0.0 && value.abs() < 1e15 {
            let _ = write!(self.out, "{}", value as i64);
        } else {
            let _ = write!(self.out, "{value}");
        }
        self.out.push('\n');
    }
}

mod beegfs;
mod gluster;
mod lustre;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
