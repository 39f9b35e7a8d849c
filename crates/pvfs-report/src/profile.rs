//! GlusterFS's own profile of the volume over each phase (`bench --gluster-profile`): what each
//! brick did — bytes, calls, and its busiest file operations with their latencies — as
//! `gluster volume profile VOL info incremental` told it at the phase's end.

use crate::RunData;
use pvfs_bench::results;

/// How many of a brick's operations the table names, busiest first.
const BUSIEST: usize = 3;

/// The section; nothing for a run without `--gluster-profile`.
pub(crate) fn section(md: &mut String, r: &RunData) {
    let Ok(profiles) = results::gluster_profiles(&r.dir) else { return };
    if profiles.is_empty() {
        return;
    }
    *md += &format!(
        "### GlusterFS profile: `{}`\n\nEach phase as the volume's bricks saw it (`gluster volume profile … info \
         incremental` at its end; `--gluster-profile`): bytes, calls, and the busiest file operations with \
         their mean and worst latency.\n\n",
        r.name
    );
    for p in &profiles {
        let phase = crate::timeline::name(r, p.iteration, p.phase);
        *md += &format!("Iteration {}, {phase} ({}):", p.iteration, p.volume);
        if let Some(why) = &p.error {
            *md += &format!(" not read: {why}\n\n");
            continue;
        }
        *md += "\n\n| brick | s | MB written | MB read | calls | busiest operations (calls, mean / max ms) |\n\
                |---|---:|---:|---:|---:|---|\n";
        for b in &p.bricks {
            let calls: u64 = b.fops.iter().map(|f| f.hits).sum();
            let busiest: Vec<String> = b
                .fops
                .iter()
                .take(BUSIEST)
                .map(|f| format!("{} {} ({:.3} / {:.3})", f.name, f.hits, f.avg_ns / 1e6, f.max_ns / 1e6))
                .collect();
            *md += &format!(
                "| {} | {} | {:.1} | {:.1} | {calls} | {} |\n",
                b.brick,
                b.seconds,
                b.write_bytes as f64 / 1e6,
                b.read_bytes as f64 / 1e6,
                if busiest.is_empty() { "none".to_owned() } else { busiest.join(", ") }
            );
        }
        *md += "\n";
    }
}
