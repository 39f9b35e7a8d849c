//! The history's bytes on disk per node, beside gmetad's RRDs for the same series.
//!
//! `cargo run --release -p pvfs-history --example footprint -- LINES.jsonl…` feeds real
//! per-second lines (a benchmark's `metrics/NODE.jsonl`, or `pvfsctl top --json` captured for
//! as long as you like) through the store at their own times, compacts every chunk, and prints
//! what each tier's rows take per point and per node at a full keep, and what gmetad's default
//! RRDs (15 s for a day, 1 min for 2 weeks, 10 min for a year, one file per metric) take for as
//! many series: measured with `rrdtool create` when rrdtool is installed, else from the RRD
//! layout (8 bytes a row). A capture shorter than a chunk (an hour of 10 s points, 6 h of 1 min,
//! 60 h of 10 min) overstates the per-point cost: each chunk's names are paid for fewer points.

// The report is this program's output.
#![allow(clippy::print_stdout)]

use pvfs_history::{Group, TIERS};
use pvfs_metrics::line::{MetricsLine, SecondLine};
use pvfs_metrics::rates::{Column, CpuColumn, LoadColumn, MemColumn};
use std::collections::BTreeMap;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        return Err("give per-second lines: metrics/NODE.jsonl files or `pvfsctl top --json` output".into());
    }
    let mut lines: Vec<(String, u64, SecondLine)> = Vec::new();
    for file in &files {
        let stem =
            std::path::Path::new(file).file_stem().and_then(|s| s.to_str()).unwrap_or("node").to_owned();
        for (n, text) in std::fs::read_to_string(file)?.lines().enumerate() {
            let line: MetricsLine =
                serde_json::from_str(text).map_err(|e| format!("{file}:{}: {e}", n + 1))?;
            // `top --json`'s lines that say a node is up or down have no interval.
            if let MetricsLine::Second(line) = line
                && line.interval_s > 0.0
                && let Some((begin, end)) = line.span()
            {
                let node = line.node.clone().unwrap_or_else(|| stem.clone());
                lines.push((node, ((begin + end) / 2.0) as u64, *line));
            }
        }
    }
    lines.sort_by_key(|(_, t, _)| *t);
    let (Some(first), Some(last)) = (lines.first().map(|l| l.1), lines.last().map(|l| l.1)) else {
        return Err("no per-second lines in those files".into());
    };
    let dir = std::env::temp_dir().join(format!("pvfs-footprint-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("h.redb");
    let (mut writer, reader) = pvfs_history::open(&path, first)?;
    let mut series: BTreeMap<String, usize> = BTreeMap::new();
    let mut committed = first;
    for (node, t, line) in &lines {
        let mut count = 0;
        feed(line, &mut |_, _, _, _| count += 1);
        writer.record_with(node, *t, |each| feed(line, each));
        let known = series.entry(node.clone()).or_default();
        *known = (*known).max(count);
        if *t >= committed + 10 {
            writer.close_due(*t);
            writer.commit(*t)?;
            committed = *t;
        }
    }
    writer.close_all();
    // Late enough that every chunk of every tier has ended and is compacted.
    writer.commit(last + TIERS[2].chunk_span() + 60)?;
    let nodes = series.len() as u64;
    let per_node = series.values().sum::<usize>() as f64 / nodes as f64;
    println!(
        "{} seconds of {nodes} node(s) ({:.1} h), {per_node:.0} series per node",
        lines.len(),
        (last - first) as f64 / 3600.0
    );
    println!(
        "{:<5} {:>12} {:>14} {:>16} {:>12} {:>18}",
        "tier", "points/node", "bytes/node", "bytes/point", "kept", "at full keep/node"
    );
    let mut full = 0.0;
    // A tier whose chunk the capture did not fill is costed at the per-point bytes of the
    // finest tier that has a full one (its points hold the same series, consolidated alike).
    let mut full_chunk: Option<(f64, &str)> = None;
    let first_node = series.keys().next().cloned().unwrap_or_default();
    for tier in reader.footprint()? {
        let points = reader.range(&first_node, tier.tier, 0, u64::MAX / 2)?.points.len() as u64;
        let bytes = (tier.chunk_bytes + tier.tail_bytes) as f64 / nodes as f64;
        let measured = if points > 0 { bytes / points as f64 } else { 0.0 };
        let (per_point, how) = if points >= tier.tier.chunk_points {
            full_chunk.get_or_insert((measured, tier.tier.name));
            (measured, String::new())
        } else if let Some((cost, name)) = full_chunk {
            (cost, format!("  (chunk not filled: costed as {name}'s)"))
        } else {
            (measured, "  (chunk not filled: overstated)".to_owned())
        };
        let kept = tier.tier.keep_s / tier.tier.step_s;
        full += per_point * kept as f64;
        println!(
            "{:<5} {points:>12} {bytes:>14.0} {measured:>16.1} {kept:>12} {:>15.2} MB{how}",
            tier.tier.name,
            per_point * kept as f64 / 1e6
        );
    }
    let rrd = gmetad_rrd_bytes(&dir);
    let gmetad = rrd.0 as f64 * per_node;
    println!(
        "pvfs history at full keep (7 d of 10 s, 90 d of 1 min, 2 y of 10 min): {:.2} MB per node",
        full / 1e6
    );
    println!(
        "gmetad's default RRDs (1 d of 15 s, 14 d of 1 min, 1 y of 10 min) for {per_node:.0} series: {:.2} MB per node ({} bytes per series, {})",
        gmetad / 1e6,
        rrd.0,
        rrd.1
    );
    println!("ratio: {:.2} of gmetad's", full / gmetad);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// Every series of a line, as `Writer::record` takes them from rates.
fn feed(line: &SecondLine, each: &mut dyn FnMut(Group, &str, &str, f64)) {
    for &c in CpuColumn::BY_NAME {
        line.cpu.get(c).into_iter().for_each(|v| each(Group::Cpu, "", c.name(), v));
    }
    for &c in MemColumn::BY_NAME {
        line.mem.get(c).into_iter().for_each(|v| each(Group::Mem, "", c.name(), v));
    }
    for &c in LoadColumn::BY_NAME {
        let value = match c {
            LoadColumn::Ldavg1 => Some(line.load[0]),
            LoadColumn::Ldavg5 => Some(line.load[1]),
            LoadColumn::Ldavg15 => Some(line.load[2]),
            _ => line.tasks.get(c),
        };
        value.into_iter().for_each(|v| each(Group::Load, "", c.name(), v));
    }
    for (name, disk) in &line.disks {
        for &c in pvfs_metrics::rates::DiskColumn::BY_NAME {
            disk.get(c).into_iter().for_each(|v| each(Group::Disk, name, c.name(), v));
        }
    }
    for (name, nic) in &line.nics {
        for &c in pvfs_metrics::rates::NicColumn::BY_NAME {
            nic.get(c).into_iter().for_each(|v| each(Group::Nic, name, c.name(), v));
        }
    }
}

/// One gmetad RRD's size: `rrdtool create` with gmetad's default step and RRAs (gmetad.conf's
/// `RRAs`, its `DS:sum:GAUGE:<heartbeat>:U:U`), or the layout's 8 bytes a row.
fn gmetad_rrd_bytes(dir: &std::path::Path) -> (u64, &'static str) {
    let file = dir.join("gmetad.rrd");
    let made = std::process::Command::new("rrdtool")
        .arg("create")
        .arg(&file)
        .args(["--step", "15", "DS:sum:GAUGE:120:U:U"])
        .args(["RRA:AVERAGE:0.5:1:5856", "RRA:AVERAGE:0.5:4:20160", "RRA:AVERAGE:0.5:40:52704"])
        .status()
        .is_ok_and(|s| s.success());
    match std::fs::metadata(&file) {
        Ok(meta) if made => (meta.len(), "measured with rrdtool create"),
        _ => ((5856 + 20160 + 52704) * 8, "rows × 8 bytes; rrdtool is not installed"),
    }
}
