//! Ganglia's XML, as gmond 3.7.2 and gmetad 3.7.2 write it: one host's element with gmond's
//! standard metrics and each block device's iostat -x columns, the document's preamble, and
//! the figures gmetad's summaries are made of.
//!
//! Shared by the agent's gmond drop-in (one host, `SOURCE="gmond"`) and `pvfsctl serve`'s
//! gmetad interface (every node of a cluster in a `GRID`), so that the two say the same thing
//! about the same second.

use crate::rates::{DiskColumn, Rates, metric_suffix};
use crate::ring::Stamped;
use std::fmt::Write as _;

/// gmond's host TMAX default: gmetad counts the host down after 4 × TMAX seconds of silence.
pub const HOST_TMAX: u64 = 20;
/// TMAX of the per-second iostat metrics.
const IOSTAT_TMAX: u64 = 20;

/// gmond 3.7.2's DTD (gmond/dtd.h), as its dumps and gmetad's carry it.
pub const DTD: &str = include_str!("ganglia_dtd.xml");

/// What a host's fixed metrics are made of, where known. gmond reads them once at start
/// (`collect_once`); serve has them from each agent's `Info`. An unknown one is left out of
/// the host, as gmond leaves out a metric its module cannot read.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub cpu_num: Option<u32>,
    pub cpu_mhz: Option<u32>,
    pub machine: Option<String>,
    pub os_release: Option<String>,
    pub boottime: Option<u64>,
    /// (total GB, free GB, fullest partition %) of local file systems.
    pub disk_space: Option<(f64, f64, f64)>,
}

/// One host's element: who it is and its newest second.
pub struct Host<'a> {
    pub name: &'a str,
    pub ip: &'a str,
    /// Unix seconds: the host's newest report (its sample's time).
    pub reported: u64,
    /// Seconds since that report.
    pub tn: u64,
    /// Unix seconds the reporting daemon started.
    pub started: u64,
    pub facts: &'a Facts,
    pub latest: Option<&'a Stamped>,
    pub rates: Option<&'a Rates>,
}

/// Who writes the document: gmond (one host, as its dump) or gmetad (hosts relayed, each
/// metric marked with the source it came from, attributes in gmetad's order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    Gmond,
    Gmetad,
}

/// The DTD and the document's opening element.
pub fn preamble(out: &mut String, writer: Writer) {
    out.push_str(DTD);
    let source = match writer {
        Writer::Gmond => "gmond",
        Writer::Gmetad => "gmetad",
    };
    let _ = writeln!(out, "<GANGLIA_XML VERSION=\"3.7.2\" SOURCE=\"{source}\">");
}

/// A cluster's opening element, with gmond's defaults for what pvfs does not know.
pub fn cluster_start(out: &mut String, name: &str, localtime: u64) {
    let _ = writeln!(
        out,
        "<CLUSTER NAME=\"{}\" LOCALTIME=\"{localtime}\" OWNER=\"unspecified\" LATLONG=\"unspecified\" URL=\"unspecified\">",
        Esc(name)
    );
}

/// One metric's fixed description, as gmond's modules declare it.
#[derive(Debug, Clone, Copy)]
pub struct Meta<'a> {
    pub name: &'a str,
    pub kind: &'a str,
    pub units: &'a str,
    pub tmax: u64,
    pub slope: &'a str,
    pub group: &'a str,
    pub desc: &'a str,
    pub title: &'a str,
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

/// The value of a standard metric, formatted as gmond prints it; `None` when it is not known
/// (a fact not given, or a figure that needs a sample before the first).
fn standard_value(name: &str, h: &Host<'_>) -> Option<String> {
    let f = h.facts;
    match name {
        "cpu_num" => return f.cpu_num.map(|v| v.to_string()),
        "cpu_speed" => return f.cpu_mhz.map(|v| v.to_string()),
        "boottime" => return f.boottime.map(|v| v.to_string()),
        "gexec" => return Some("OFF".into()),
        "machine_type" => return f.machine.clone(),
        "os_name" => return Some("Linux".into()),
        "os_release" => return f.os_release.clone(),
        "disk_total" => return f.disk_space.map(|d| format!("{:.3}", d.0)),
        "disk_free" => return f.disk_space.map(|d| format!("{:.3}", d.1)),
        "part_max_used" => return f.disk_space.map(|d| format!("{:.1}", d.2)),
        // gmond reads "MemShared", which Linux dropped in 2.6: it reports 0, and so do we.
        "mem_shared" => return Some("0".into()),
        _ => {}
    }
    let sample = &h.latest?.sample;
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
            let r = h.rates?;
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

/// Every metric the host reports, with its value as the XML carries it: gmond's standard set,
/// then each block device's iostat -x columns as `disk_<device>_<column>` in group `iostat`
/// (which stock gmond lacks).
pub fn each_metric(h: &Host<'_>, mut each: impl FnMut(&Meta<'_>, &str)) {
    for m in &STANDARD {
        if let Some(value) = standard_value(m.name, h) {
            each(m, &value);
        }
    }
    if let (Some(rates), Some(latest)) = (h.rates, h.latest) {
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
                each(&m, &format!("{value:.2}"));
            }
        }
    }
}

/// One host's element, its metrics within.
pub fn host(out: &mut String, h: &Host<'_>, writer: Writer) {
    host_start(out, h, writer);
    each_metric(h, |m, value| metric(out, m, value, h.tn, writer));
    out.push_str("</HOST>\n");
}

/// One metric of host `h`, its element alone (gmetad's answer to `/CLUSTER/HOST/METRIC`);
/// false, with nothing written, when the host does not report it.
pub fn one_metric(out: &mut String, h: &Host<'_>, name: &str, writer: Writer) -> bool {
    let mut found = false;
    each_metric(h, |m, value| {
        if !found && m.name == name {
            metric(out, m, value, h.tn, writer);
            found = true;
        }
    });
    found
}

/// A host's opening element, without its metrics.
pub fn host_start(out: &mut String, h: &Host<'_>, writer: Writer) {
    let (name, ip, reported, tn, started) = (Esc(h.name), Esc(h.ip), h.reported, h.tn, h.started);
    let _ = match writer {
        Writer::Gmond => writeln!(
            out,
            "<HOST NAME=\"{name}\" IP=\"{ip}\" TAGS=\"\" REPORTED=\"{reported}\" TN=\"{tn}\" TMAX=\"{HOST_TMAX}\" DMAX=\"0\" LOCATION=\"unspecified\" GMOND_STARTED=\"{started}\">"
        ),
        // gmetad 3.7.2's host_report_start: TAGS last.
        Writer::Gmetad => writeln!(
            out,
            "<HOST NAME=\"{name}\" IP=\"{ip}\" REPORTED=\"{reported}\" TN=\"{tn}\" TMAX=\"{HOST_TMAX}\" DMAX=\"0\" LOCATION=\"unspecified\" GMOND_STARTED=\"{started}\" TAGS=\"\">"
        ),
    };
}

fn metric(out: &mut String, m: &Meta<'_>, value: &str, tn: u64, writer: Writer) {
    // gmetad marks each metric with where it came from; gmond's DTD defaults it to "gmond".
    let source = if writer == Writer::Gmetad { " SOURCE=\"gmond\"" } else { "" };
    let _ = writeln!(
        out,
        "<METRIC NAME=\"{}\" VAL=\"{}\" TYPE=\"{}\" UNITS=\"{}\" TN=\"{tn}\" TMAX=\"{}\" DMAX=\"0\" SLOPE=\"{}\"{source}>",
        Esc(m.name),
        Esc(value),
        m.kind,
        Esc(m.units),
        m.tmax,
        m.slope,
    );
    extra_data(out, m);
    out.push_str("</METRIC>\n");
}

/// A metric's group, description and title, as gmond and gmetad carry them.
pub fn extra_data(out: &mut String, m: &Meta<'_>) {
    let _ = write!(
        out,
        "<EXTRA_DATA>\n<EXTRA_ELEMENT NAME=\"GROUP\" VAL=\"{}\"/>\n<EXTRA_ELEMENT NAME=\"DESC\" VAL=\"{}\"/>\n\
         <EXTRA_ELEMENT NAME=\"TITLE\" VAL=\"{}\"/>\n</EXTRA_DATA>\n",
        Esc(m.group),
        Esc(m.desc),
        Esc(m.title)
    );
}

/// XML attribute escaping, written straight into the document: a dump has a few hundred
/// metrics of nine attributes each, and a string per attribute was most of a dump's
/// allocations. One bad character would make gmetad drop the whole source.
pub struct Esc<'a>(pub &'a str);

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
