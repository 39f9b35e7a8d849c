//! `pvfs-agent metrics`: this machine's rates every interval, like `iostat -dx` + `sar -n DEV`
//! + `sar -u ALL` + `sar -r` + `sar -q` in one, as tables or JSON lines.

use crate::cli::MetricsArgs;
use crate::{exit, output};
use anyhow::Context;
use pvfs_host::Root;
use pvfs_metrics::rates::{CpuPercent, DiskRates, NicRates, Rates};
use pvfs_metrics::sample::{DeviceFilter, Sample, Sampler, until_tick};
use serde_json::{Map, Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) fn run(args: MetricsArgs) -> anyhow::Result<u8> {
    let filter = if args.devices.is_empty() {
        DeviceFilter::WholeDevices
    } else {
        DeviceFilter::Named(args.devices.clone())
    };
    let mut sampler = Sampler::new(Root::system(), filter);
    // The baseline: like `iostat -y`, the since-boot report is not shown.
    sleep_until_tick(args.interval);
    let mut prev = sampler.sample().context("reading the first sample")?;
    let mut shown = 0;
    while args.count.is_none_or(|n| shown < n) {
        sleep_until_tick(args.interval);
        let curr = sampler.sample().context("reading a sample")?;
        let rates = Rates::between(&prev, &curr);
        let devices = visible_devices(&curr, !args.devices.is_empty());
        if args.json {
            output::json(&to_json(&rates, &devices))?;
        } else {
            output::print(&table(&rates, &devices))?;
        }
        prev = curr;
        shown += 1;
    }
    Ok(exit::OK)
}

/// Sleeps to the next multiple of `interval` since the epoch, so that every node's sample is
/// for the same second.
fn sleep_until_tick(interval: Duration) {
    std::thread::sleep(until_tick(SystemTime::now(), interval));
}

/// Whole devices that have done I/O since boot (iostat hides the others), or every named one.
fn visible_devices(sample: &Sample, named: bool) -> Vec<String> {
    sample.disks.iter().filter(|d| named || d.total_ios() > 0).map(|d| d.name.clone()).collect()
}

fn time_text(unix_ns: u64) -> String {
    let t = UNIX_EPOCH + Duration::from_nanos(unix_ns);
    humantime::format_rfc3339_millis(t).to_string()
}

/// `{"time":…,"disks":{"sda":{"r/s":…}},"nics":{…},"cpu":{…},"mem":{…},"load":[…]}`.
fn to_json(r: &Rates, devices: &[String]) -> Value {
    let disks: Map<String, Value> = r
        .disks
        .iter()
        .filter(|(name, _)| devices.contains(name))
        .map(|(name, d)| (name.clone(), serde_json::to_value(d).unwrap_or_default()))
        .collect();
    json!({
        "time": time_text(r.time_unix_ns),
        "interval_s": r.interval_s,
        "disks": disks,
        "nics": r.nics,
        "cpu": r.cpu,
        "mem": r.mem,
        "load": [r.load.ldavg_1, r.load.ldavg_5, r.load.ldavg_15],
        "tasks": {"runq-sz": r.load.runq_sz, "plist-sz": r.load.plist_sz},
    })
}

/// iostat/sar-style tables: two decimals, right-aligned, one block per interval.
fn table(r: &Rates, devices: &[String]) -> String {
    let mut out = format!("{}  ({:.2} s)\n", time_text(r.time_unix_ns), r.interval_s);
    let row = |label: &str, values: &[f64]| {
        let mut line = format!("{label:<12}");
        for v in values {
            line += &format!(" {v:>9.2}");
        }
        line + "\n"
    };
    let header = |label: &str, columns: &[&str]| {
        let mut line = format!("{label:<12}");
        for c in columns {
            line += &format!(" {c:>9}");
        }
        line + "\n"
    };
    out += &header("Device", &DiskRates::COLUMNS);
    for (name, d) in r.disks.iter().filter(|(name, _)| devices.contains(name)) {
        out += &row(name, &d.values());
    }
    out += &header("IFACE", &NicRates::COLUMNS);
    for (name, n) in &r.nics {
        out += &row(name, &n.values());
    }
    out += &header("CPU", &CpuPercent::COLUMNS);
    out += &row("all", &r.cpu.values());
    let m = &r.mem;
    out += &format!(
        "mem: kbmemfree {} kbavail {} kbmemused {} %memused {:.2} kbbuffers {} kbcached {} kbcommit {} %commit {:.2} kbdirty {}\n",
        m.kbmemfree,
        m.kbavail,
        m.kbmemused,
        m.memused_pct,
        m.kbbuffers,
        m.kbcached,
        m.kbcommit,
        m.commit_pct,
        m.kbdirty
    );
    out += &format!(
        "load: runq-sz {} plist-sz {} ldavg-1 {:.2} ldavg-5 {:.2} ldavg-15 {:.2}\n\n",
        r.load.runq_sz, r.load.plist_sz, r.load.ldavg_1, r.load.ldavg_5, r.load.ldavg_15
    );
    out
}
