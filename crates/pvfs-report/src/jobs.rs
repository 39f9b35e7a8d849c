//! Each phase of a Lustre run by target, from the servers' `job_stats` for the job ids the
//! phase's tasks ran under (`BenchEvent::LustreJobs`): what each OST and MDT counted of this
//! phase alone — bytes, RPCs, metadata operations — its share of the phase, and whether the
//! OSTs' bytes add up to the application's within 1 %.

use crate::RunData;
use pvfs_bench::phase::{IorPhase, Phase};
use pvfs_bench::results::{self, PhaseRecord};

const MIB: f64 = 1048576.0;

/// The section; nothing for a run without a Lustre client's job ids.
pub(crate) fn section(md: &mut String, r: &RunData, phases: &[PhaseRecord]) {
    let Ok(readings) = results::lustre_jobs(&r.dir) else { return };
    if readings.is_empty() {
        return;
    }
    *md += &format!(
        "### Lustre targets by job id: `{}`\n\nEach phase's own I/O as the servers counted it: every target's \
         `job_stats` for the job ids the phase's tasks ran under (each phase's tasks are named for it, so \
         nothing else the file system served is counted), read once every client was done. Share: of the \
         phase's bytes for an OST, of its operations for an MDT.\n\n",
        r.name
    );
    let mut notes = String::new();
    let mut rows = String::new();
    for reading in &readings {
        let phase = crate::timeline::name(r, reading.iteration, reading.phase);
        let ids: Vec<&str> = reading.clients.iter().filter_map(|c| c.job_id.as_deref()).collect();
        let mut ids_dedup = ids.clone();
        ids_dedup.sort_unstable();
        ids_dedup.dedup();
        for c in &reading.clients {
            if let Some(why) = &c.why_none {
                notes +=
                    &format!("- {phase} (iteration {}), {}: no job id: {why}.\n", reading.iteration, c.node);
            }
        }
        for e in &reading.errors {
            notes += &format!("- {phase} (iteration {}): {e}\n", reading.iteration);
        }
        if ids.is_empty() {
            continue;
        }
        let writes = match reading.phase {
            Phase::Ior(IorPhase::Write) => Some(true),
            Phase::Ior(IorPhase::Read) => Some(false),
            _ => None,
        };
        let bytes_of = |t: &results::TargetJobStats| match writes {
            Some(true) => t.counter("write_bytes").1,
            Some(false) => t.counter("read_bytes").1,
            None => t.counter("read_bytes").1 + t.counter("write_bytes").1,
        };
        let ost_bytes: u64 = reading.targets.iter().filter(|t| t.kind == "obdfilter").map(bytes_of).sum();
        let mdt_ops: u64 = reading.targets.iter().filter(|t| t.kind == "mdt").map(|t| t.other_ops()).sum();
        for t in &reading.targets {
            let (reads, read) = t.counter("read_bytes");
            let (writes_n, written) = t.counter("write_bytes");
            let share = match t.kind.as_str() {
                "obdfilter" if ost_bytes > 0 => {
                    format!("{:.1} %", 100.0 * bytes_of(t) as f64 / ost_bytes as f64)
                }
                "mdt" if mdt_ops > 0 => format!("{:.1} %", 100.0 * t.other_ops() as f64 / mdt_ops as f64),
                _ => "–".to_owned(),
            };
            rows += &format!(
                "| {phase} | {} | {} | {} | {:.1} | {:.1} | {reads} | {writes_n} | {} | {share} |\n",
                reading.iteration,
                t.target,
                t.node,
                read as f64 / MIB,
                written as f64 / MIB,
                t.other_ops()
            );
        }
        let record = phases.iter().find(|p| p.iteration == reading.iteration && p.phase == reading.phase);
        let osts: Vec<u64> = reading.targets.iter().filter(|t| t.kind == "obdfilter").map(bytes_of).collect();
        if let (Some(record), Some(_)) = (record, writes) {
            let app = record.totals.bytes as f64;
            let ratio = if app > 0.0 { ost_bytes as f64 / app } else { 0.0 };
            let verdict = if app > 0.0 && (ratio - 1.0).abs() <= 0.01 {
                "the OSTs account for the phase within 1 %".to_owned()
            } else {
                format!(
                    "the OSTs' bytes differ from the application's by {:+.1} % (a client's cache may still hold writes, \
                     or a job id was shared)",
                    100.0 * (ratio - 1.0)
                )
            };
            let mean = ost_bytes as f64 / osts.len().max(1) as f64;
            let max = osts.iter().copied().max().unwrap_or(0) as f64;
            let balance = if mean > 0.0 { format!("{:.2}", max / mean) } else { "–".into() };
            notes += &format!(
                "- {phase} (iteration {}), job {}: the OSTs counted {:.1} MiB for the application's {:.1} MiB ({verdict}); \
                 busiest ÷ mean {balance}.\n",
                reading.iteration,
                ids_dedup.join(", "),
                ost_bytes as f64 / MIB,
                app / MIB
            );
        } else if let Some(record) = record {
            notes += &format!(
                "- {phase} (iteration {}), job {}: the MDTs counted {mdt_ops} operations for the application's {}.\n",
                reading.iteration,
                ids_dedup.join(", "),
                record.totals.ops
            );
        }
    }
    if !rows.is_empty() {
        *md += "| phase | iteration | target | node | MiB read | MiB written | read RPCs | write RPCs | other operations | share |\n\
                |---|---:|---|---|---:|---:|---:|---:|---:|---:|\n";
        *md += &rows;
        *md += "\n";
    }
    *md += &notes;
    *md += "\n";
}
