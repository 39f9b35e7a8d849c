//! Each write and read phase's bytes by server target, from the servers' own counters in the
//! run's per-second metrics: every Lustre OST's (`write_bytes`/`read_bytes` of its
//! `obdfilter.*.stats`) and every GlusterFS brick's (what its `glusterfsd` wrote and read
//! through system calls). One target far above the others' mean is a striping or hardware
//! problem; the servers' bytes against the clients' say whether the counters account for the
//! phase (a Lustre OST counts each byte a client wrote once; a brick of a replica-N volume
//! takes every byte written to its replica set).

use crate::RunData;
use pvfs_bench::phase::{IorPhase, Phase};
use pvfs_bench::results::{self, PhaseRecord};
use std::collections::BTreeMap;

/// A target: its kind (`OST`, `brick`), its name, its node.
type Target = (&'static str, String, String);

/// Every target's bytes in one recorded second of one node.
struct Second {
    start: f64,
    end: f64,
    /// Each target's (read, written) bytes.
    bytes: Vec<(Target, (f64, f64))>,
}

/// Every server-side target second the run recorded, on every node.
fn seconds(r: &RunData) -> Vec<Second> {
    let Ok(entries) = std::fs::read_dir(r.dir.join("metrics")) else { return Vec::new() };
    let mut nodes: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok()?.strip_suffix(".jsonl").map(str::to_owned))
        .collect();
    nodes.sort();
    let mut out = Vec::new();
    for node in nodes {
        for line in results::metrics_lines(&r.dir, &node) {
            let results::MetricsLine::Second(line) = line else { continue };
            let Some((start, end)) = line.span() else { continue };
            let t = line.interval_s;
            let mut bytes = Vec::new();
            for target in line.lustre.iter().filter(|t| t.component == "ost") {
                bytes.push((
                    ("OST", target.name.clone(), node.clone()),
                    (target.read_bytes_s * t, target.write_bytes_s * t),
                ));
            }
            for brick in &line.bricks {
                bytes.push((
                    ("brick", format!("{}:{}", brick.volume, brick.path), node.clone()),
                    (brick.rchar_s * t, brick.wchar_s * t),
                ));
            }
            if !bytes.is_empty() {
                out.push(Second { start, end, bytes });
            }
        }
    }
    out
}

/// The section; nothing when the run recorded no server target.
pub(crate) fn section(md: &mut String, r: &RunData, phases: &[PhaseRecord]) {
    let seconds = seconds(r);
    if seconds.is_empty() {
        return;
    }
    // Per phase kind (iterations added up): application bytes, and each target's bytes in
    // the phase's direction.
    let mut kinds: BTreeMap<String, (f64, BTreeMap<Target, f64>)> = BTreeMap::new();
    for phase in phases {
        let writes = match phase.phase {
            Phase::Ior(IorPhase::Write) => true,
            Phase::Ior(IorPhase::Read) => false,
            _ => continue,
        };
        let start = phase.tasks.iter().map(|t| t.start).fold(f64::MAX, f64::min);
        let end = phase.tasks.iter().map(|t| t.end).fold(0.0, f64::max);
        if end <= start {
            continue;
        }
        let slot = kinds.entry(phase.name()).or_default();
        slot.0 += phase.totals.bytes as f64;
        for s in &seconds {
            // Each second counts in proportion to its overlap with the phase.
            let overlap = (s.end.min(end) - s.start.max(start)).max(0.0) / (s.end - s.start).max(1e-9);
            if overlap == 0.0 {
                continue;
            }
            for (key, (read, written)) in &s.bytes {
                *slot.1.entry(key.clone()).or_default() += overlap * if writes { written } else { read };
            }
        }
    }
    if kinds.is_empty() {
        return;
    }
    *md += &format!("### Bytes by server target: `{}`\n\n", r.name);
    *md += "From the servers' own counters over each phase's seconds (a Lustre OST's `write_bytes`/`read_bytes`, \
            a GlusterFS brick's bytes through its `glusterfsd`'s system calls), with each target's share of its \
            kind and the servers' bytes against the application's.\n\n\
            | phase | kind | target | node | MiB | share |\n|---|---|---|---|---:|---:|\n";
    let mut notes = String::new();
    for (phase, (app, targets)) in &kinds {
        let mut by_kind: BTreeMap<&str, Vec<(&Target, f64)>> = BTreeMap::new();
        for (key, bytes) in targets {
            by_kind.entry(key.0).or_default().push((key, *bytes));
        }
        for (kind, rows) in by_kind {
            let total: f64 = rows.iter().map(|(_, b)| b).sum();
            for ((_, target, node), bytes) in &rows {
                let share = if total > 0.0 { 100.0 * bytes / total } else { 0.0 };
                *md += &format!(
                    "| {phase} | {kind} | {target} | {node} | {:.1} | {share:.1} % |\n",
                    bytes / 1048576.0
                );
            }
            let mean = total / rows.len() as f64;
            let max = rows.iter().map(|(_, b)| *b).fold(0.0, f64::max);
            let balance = if mean > 0.0 { format!("{:.2}", max / mean) } else { "–".into() };
            let ratio = if *app > 0.0 { total / app } else { 0.0 };
            let verdict = match kind {
                // Lustre counts each byte once on the OST it is striped to.
                "OST" if (ratio - 1.0).abs() <= 0.01 => {
                    "the OSTs account for the phase within 1 %".to_owned()
                }
                "OST" => format!(
                    "the OSTs' bytes differ from the application's by {:+.1} %",
                    100.0 * (ratio - 1.0)
                ),
                _ => format!(
                    "{ratio:.2} bytes per application byte (a brick of a replica-N volume takes every byte of its set)"
                ),
            };
            notes += &format!(
                "- {phase}, {kind}s: {:.1} MiB for the application's {:.1} MiB ({verdict}); busiest ÷ mean {balance}.\n",
                total / 1048576.0,
                app / 1048576.0
            );
        }
    }
    *md += "\n";
    *md += &notes;
    *md += "\n";
}
