//! Reports over one or more runs, like the seed's: tables per run (servers, VM limit, write,
//! read, efficiency), the scale-out figure across runs (bars against the VM limit, the seed's
//! Fig. 13), per-client fairness (spread of bandwidth and completion time, seed 004's Fig. 9),
//! network bytes against application bytes from the per-second counters (seed 004's
//! read-ahead amplification), and each phase's latency, whole and second by second
//! (`timeline`), and each phase's bytes by server target (`targets`: Lustre OSTs, GlusterFS
//! bricks). Markdown, with every chart as SVG and PNG.

use plotters::coord::{CoordTranslate, Shift};
use plotters::prelude::*;
use pvfs_bench::phase::{IorPhase, Phase};
use pvfs_bench::results::{self, PhaseRecord, Record, ResultsError, RunRecord};
use pvfs_metrics::line::Columns;
use pvfs_metrics::rates::{DiskColumn, NicColumn};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The font the PNG charts are drawn with, embedded so a report renders the same on a bare
/// server (DejaVu Sans, Bitstream Vera license: assets/DejaVuSans.LICENSE).
const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A run's results.json is missing, incomplete, or does not read.
    #[error(transparent)]
    Load(#[from] ResultsError),
    #[error("writing {path}: {message}")]
    Write { path: PathBuf, message: String },
}

/// One run's results, as `results.json` holds them.
#[derive(Debug, Clone)]
pub struct RunData {
    pub dir: PathBuf,
    /// The run's name; "(incomplete)" after it when the run did not finish.
    pub name: String,
    pub record: Record,
    /// False when results.json says the run did not finish (`"complete": false`: interrupted,
    /// or still running): its results are what it had recorded.
    pub complete: bool,
}

impl RunData {
    pub fn load(dir: &Path) -> Result<RunData, ReportError> {
        let record = results::load(dir)?;
        let mut name = match record.run_name() {
            "" => dir.display().to_string(),
            name => name.to_owned(),
        };
        let complete = record.complete();
        if !complete {
            name += " (incomplete)";
        }
        Ok(RunData { dir: dir.to_owned(), name, record, complete })
    }

    fn run(&self) -> Option<&RunRecord> {
        self.record.as_run()
    }

    fn servers(&self) -> Option<u64> {
        self.run()?.servers
    }

    fn vm_limit(&self) -> Option<f64> {
        self.run()?.vm_limit_mib
    }

    /// The summary row's mean bandwidth for "write" or "read".
    fn bw(&self, op: &str) -> Option<f64> {
        self.record.bw(op)
    }

    fn ops(&self, op: &str) -> Option<f64> {
        self.record.ops(op)
    }

    /// What the VM limit is for the whole run: per-VM limit × servers.
    fn cluster_limit(&self) -> Option<f64> {
        Some(self.vm_limit()? * self.servers()? as f64)
    }

    fn label(&self) -> String {
        if let Some(sweep) = self.run().and_then(|r| r.sweep.as_ref()) {
            return format!("{}={}", sweep.key, sweep.value);
        }
        match self.servers() {
            Some(n) => format!("{n} servers"),
            None => self.name.clone(),
        }
    }
}

/// What was written.
#[derive(Debug, Clone, Default)]
pub struct Written {
    pub markdown: PathBuf,
    pub charts: Vec<PathBuf>,
}

/// Writes the report over `runs` into `out`.
pub fn write(runs: &[PathBuf], out: &Path) -> Result<Written, ReportError> {
    let runs: Vec<RunData> = runs.iter().map(|d| RunData::load(d)).collect::<Result<_, _>>()?;
    std::fs::create_dir_all(out)
        .map_err(|e| ReportError::Write { path: out.to_owned(), message: e.to_string() })?;
    let mut written = Written::default();
    let mut md = heading(&runs);
    written.charts.extend(throughput_section(&mut md, &runs, out)?);
    metadata_section(&mut md, &runs);
    io500_section(&mut md, &runs);
    for r in &runs {
        let Some(phases) = r.run().map(|r| &r.phases[..]).filter(|p| !p.is_empty()) else { continue };
        written.charts.extend(fairness_section(&mut md, r, phases, out)?);
        latency_section(&mut md, r, phases);
        written.charts.extend(timeline::section(&mut md, r, out)?);
        amplification_section(&mut md, r, phases);
        targets::section(&mut md, r, phases);
        jobs::section(&mut md, r, phases);
        profile::section(&mut md, r);
    }

    let path = out.join("report.md");
    std::fs::write(&path, md)
        .map_err(|e| ReportError::Write { path: path.clone(), message: e.to_string() })?;
    written.markdown = path;
    Ok(written)
}

/// The title, the runs reported on, and which of them did not finish.
fn heading(runs: &[RunData]) -> String {
    let mut md = String::from("# pvfs benchmark report\n\n");
    md += &format!(
        "{} run(s): {}.\n\n",
        runs.len(),
        runs.iter().map(|r| format!("`{}`", r.name)).collect::<Vec<_>>().join(", ")
    );
    for r in runs.iter().filter(|r| !r.complete) {
        md += &format!(
            "`{}` did not finish (interrupted, or still running): its figures are what it had recorded.\n\n",
            r.name
        );
    }
    md
}

/// The IOR runs' bandwidth and IOPS against the cluster's VM limit, as a table and the
/// scale-out chart (whose files it returns); nothing when no run has IOR figures.
fn throughput_section(md: &mut String, runs: &[RunData], out: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let ior: Vec<&RunData> =
        runs.iter().filter(|r| r.bw("write").is_some() || r.bw("read").is_some()).collect();
    if ior.is_empty() {
        return Ok(Vec::new());
    }
    *md += "## Throughput and IOPS\n\n";
    *md += "As the seed's tables: the VM limit is the per-VM limit (`[bench] vm_limit_mib`) times the servers.\n\n";
    *md += "| run | servers | clients × tasks | VM limit (MiB/s) | write (MiB/s) | read (MiB/s) | write IOPS | read IOPS | write eff. | read eff. |\n";
    *md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for r in &ior {
        let limit = r.cluster_limit();
        let eff = |bw: Option<f64>| match (bw, limit) {
            (Some(bw), Some(l)) if l > 0.0 => format!("{:.0} %", bw / l * 100.0),
            _ => "–".into(),
        };
        *md += &format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.name,
            r.servers().map_or("–".into(), |s| s.to_string()),
            match (r.run().and_then(|r| r.clients), r.run().and_then(|r| r.tasks_per_client)) {
                (Some(c), Some(t)) => format!("{c} × {t}"),
                _ => "–".into(),
            },
            limit.map_or("–".into(), |l| format!("{l:.0}")),
            num(r.bw("write")),
            num(r.bw("read")),
            num(r.ops("write")),
            num(r.ops("read")),
            eff(r.bw("write")),
            eff(r.bw("read")),
        );
    }
    *md += "\n";
    let categories: Vec<String> = ior.iter().map(|r| r.label()).collect();
    let series = vec![
        (
            "write",
            ior.iter().map(|r| r.bw("write").unwrap_or(0.0)).collect::<Vec<_>>(),
            RGBColor(31, 119, 180),
        ),
        ("read", ior.iter().map(|r| r.bw("read").unwrap_or(0.0)).collect::<Vec<_>>(), RGBColor(255, 127, 14)),
    ];
    let limits: Vec<Option<f64>> = ior.iter().map(|r| r.cluster_limit()).collect();
    let files = chart(
        out,
        "scale-out",
        "Throughput per run against the VM limit",
        "MiB/s",
        &categories,
        &series,
        &limits,
    )?;
    *md += "![scale-out](scale-out.svg)\n\n";
    Ok(files)
}

/// mdtest's table, one row per run and operation; nothing when no run has mdtest figures.
fn metadata_section(md: &mut String, runs: &[RunData]) {
    let md_runs: Vec<&RunData> = runs.iter().filter(|r| !r.record.mdtest().is_empty()).collect();
    if md_runs.is_empty() {
        return;
    }
    *md += "## Metadata (mdtest)\n\n| run | operation | max | min | mean | std | unit |\n|---|---|---:|---:|---:|---:|---|\n";
    for r in &md_runs {
        for row in r.record.mdtest() {
            *md += &format!(
                "| `{}` | {} | {} | {} | {} | {} | {} |\n",
                r.name,
                row.operation,
                num(row.max),
                num(row.min),
                num(row.mean),
                num(row.std),
                row.unit
            );
        }
    }
    *md += "\n";
}

/// One run's latency per phase and iteration over every task: min, the percentiles fio and
/// elbencho print, and max; nothing when no phase was measured.
fn latency_section(md: &mut String, r: &RunData, phases: &[PhaseRecord]) {
    use pvfs_bench::latency::format_ns;
    let measured: Vec<(&PhaseRecord, &results::PhaseLatency)> =
        phases.iter().filter_map(|p| Some((p, p.latency.as_ref()?))).collect();
    if measured.is_empty() {
        return;
    }
    *md += &format!("## Latency: `{}`\n\n", r.name);
    *md += "Each transfer (IOR) or operation (mdtest) of every task, merged from each task's histogram.\n\n";
    *md += "| iteration | phase | operations | min | p50 | p90 | p99 | p99.9 | max |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (p, l) in &measured {
        let a = &l.all;
        *md += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            p.iteration,
            p.name(),
            a.count,
            format_ns(a.min_ns),
            format_ns(a.p50_ns),
            format_ns(a.p90_ns),
            format_ns(a.p99_ns),
            format_ns(a.p999_ns),
            format_ns(a.max_ns)
        );
    }
    *md += "\n";
}

/// Each IO500 run's phases and score as io500 printed them, with why io500 called it invalid;
/// nothing when no run is an IO500.
fn io500_section(md: &mut String, runs: &[RunData]) {
    let runs: Vec<(&RunData, &pvfs_bench::io500::Io500Run)> =
        runs.iter().filter_map(|r| Some((r, r.record.io500()?))).collect();
    if runs.is_empty() {
        return;
    }
    *md += "## IO500\n\n";
    *md += "As io500 printed them: bandwidth phases in GiB/s, the others in kIOPS; the score is the geometric mean of each group and the square root of their product.\n\n";
    *md += "| run | phase | value | unit | time (s) | valid |\n|---|---|---:|---|---:|---|\n";
    for (r, run) in &runs {
        for p in &run.phases {
            let p = &p.result;
            *md += &format!(
                "| `{}` | {}{} | {:.6} | {} | {:.3} | {} |\n",
                r.name,
                p.name,
                if p.scored { "" } else { " (not scored)" },
                p.value,
                p.unit,
                p.seconds,
                if p.valid { "yes" } else { "**INVALID**" }
            );
        }
    }
    io500_disks(md, &runs);
    *md += "\n| run | mode | ranks | bandwidth (GiB/s) | metadata (kIOPS) | score | valid |\n|---|---|---:|---:|---:|---:|---|\n";
    for (r, run) in &runs {
        let (bw, iops, total) = run.score.map_or(("–".into(), "–".into(), "–".into()), |s| {
            (format!("{:.6}", s.bandwidth), format!("{:.6}", s.metadata), format!("{:.6}", s.total))
        });
        *md += &format!(
            "| `{}` | {} | {} | {bw} | {iops} | {total} | {} |\n",
            r.name,
            run.mode.as_deref().unwrap_or("–"),
            run.procs.map_or("–".into(), |p| p.to_string()),
            if run.valid() { "yes" } else { "**INVALID**" }
        );
    }
    *md += "\n";
    for (r, run) in runs.iter().filter(|(_, run)| !run.valid()) {
        *md += &format!("Why io500 called `{}` invalid:\n\n", r.name);
        for reason in &run.invalid_reasons {
            *md += &format!("- {reason}\n");
        }
        for p in run.phases.iter().filter(|p| !p.invalid_reasons.is_empty()) {
            for reason in &p.invalid_reasons {
                *md += &format!("- {}: {reason}\n", p.result.name);
            }
        }
        *md += "\n";
    }
}

/// One run's per-client bandwidth and finishing time per operation, with its spread and chart
/// (whose files it returns).
fn fairness_section(
    md: &mut String,
    r: &RunData,
    phases: &[PhaseRecord],
    out: &Path,
) -> Result<Vec<PathBuf>, ReportError> {
    let slug = slug(&r.name);
    *md += &format!("## Per-client fairness: `{}`\n\n", r.name);
    *md += "Each client's bandwidth (its bytes over its own first start to last end) and when it finished, \
           in seconds after the phase began, averaged over iterations; the spread is what a seed-004-style \
           fairness plot shows.\n\n";
    let fair = fairness(phases);
    let ops: Vec<&String> =
        fair.keys().map(|(_, op)| op).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    *md += "| client |";
    for op in &ops {
        *md += &format!(" {op} (MiB/s) | {op} done (s) |");
    }
    *md += "\n|---|";
    *md += &"---:|---:|".repeat(ops.len());
    *md += "\n";
    let clients: Vec<&String> =
        fair.keys().map(|(c, _)| c).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    for client in &clients {
        *md += &format!("| {client} |");
        for op in &ops {
            match fair.get(&((*client).clone(), (*op).clone())) {
                Some(f) => *md += &format!(" {:.1} | {:.3} |", f.bw_mib, f.done_s),
                None => *md += " – | – |",
            }
        }
        *md += "\n";
    }
    for op in &ops {
        let values: Vec<f64> = clients
            .iter()
            .filter_map(|c| fair.get(&((*c).clone(), (*op).clone())))
            .map(|f| f.bw_mib)
            .collect();
        if let (Some(max), Some(min)) =
            (values.iter().copied().reduce(f64::max), values.iter().copied().reduce(f64::min))
        {
            *md += &format!(
                "\n{op}: fastest client {max:.1} MiB/s, slowest {min:.1} MiB/s ({:.0} % spread).",
                if max > 0.0 { (max - min) / max * 100.0 } else { 0.0 }
            );
        }
    }
    *md += "\n\n";
    let categories: Vec<String> = clients.iter().map(|c| (*c).clone()).collect();
    let colors = [RGBColor(31, 119, 180), RGBColor(255, 127, 14), RGBColor(44, 160, 44)];
    let series: Vec<(&str, Vec<f64>, RGBColor)> = ops
        .iter()
        .zip(colors.iter().cycle())
        .map(|(op, color)| {
            let values = clients
                .iter()
                .map(|c| fair.get(&((*c).clone(), (*op).clone())).map_or(0.0, |f| f.bw_mib))
                .collect();
            (op.as_str(), values, *color)
        })
        .collect();
    let name = format!("fairness-{slug}");
    let files =
        chart(out, &name, &format!("Per-client bandwidth, {}", r.name), "MiB/s", &categories, &series, &[])?;
    *md += &format!("![fairness]({name}.svg)\n\n");
    Ok(files)
}

/// How many bytes crossed the clients' NICs per byte the application moved, per phase of one
/// run; nothing when [`amplification`] finds no phase to measure.
fn amplification_section(md: &mut String, r: &RunData, phases: &[PhaseRecord]) {
    let amp = amplification(r, phases);
    if amp.is_empty() {
        return;
    }
    *md += &format!("### Network bytes against application bytes: `{}`\n\n", r.name);
    *md += "From the clients' NIC counters over each phase's seconds: how many bytes crossed the network \
           per byte the application moved (more than 1 on reads is read-ahead fetching what was never read, \
           as seed 004 found).\n\n| phase | application bytes | client NIC bytes | ratio |\n|---|---:|---:|---:|\n";
    for (phase, app, net) in amp {
        // No bytes on the NICs at all: clients and servers share a machine (kind local), so
        // there is no network to measure; a ratio of 0 would read as a finding.
        let ratio = if app > 0.0 && net > 0.0 {
            format!("{:.2}", net / app)
        } else {
            "– (no network traffic)".into()
        };
        *md += &format!("| {phase} | {app:.0} | {net:.0} | {ratio} |\n");
    }
    *md += "\n";
}

fn num(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| if v >= 100.0 { format!("{v:.0}") } else { format!("{v:.2}") })
}

fn slug(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

/// Each IO500 phase's seconds over the nodes' disks, for the runs that know when each phase ended
/// (pvfs's own, the built-in engine's or the real io500's under `--engine io500`; an import does
/// not): what every node's disks read and wrote over the phase's time, from the run's
/// per-second metrics, each second counted by its overlap with the phase.
fn io500_disks(md: &mut String, runs: &[(&RunData, &pvfs_bench::io500::Io500Run)]) {
    let mut rows = String::new();
    for (r, run) in runs {
        let Record::Run(record) = &r.record else { continue };
        let Some(started) = record.started else { continue };
        // Per node, every recorded second: (start, end, read bytes, written bytes).
        let mut seconds: Vec<(f64, f64, f64, f64)> = Vec::new();
        for node in record.metrics_seconds.keys() {
            for line in results::metrics_lines(&r.dir, node) {
                let results::MetricsLine::Second(line) = line else { continue };
                let Some((start, end)) = line.span() else { continue };
                let kib = |column| line.disks.values().map(|d| d.get(column).unwrap_or(0.0)).sum::<f64>();
                let bytes = 1024.0 * line.interval_s;
                seconds.push((
                    start,
                    end,
                    kib(DiskColumn::RkBPerS) * bytes,
                    kib(DiskColumn::WkBPerS) * bytes,
                ));
            }
        }
        if seconds.is_empty() {
            continue;
        }
        for p in &run.phases {
            let Some(end) = p.ended else { continue };
            let start = end - p.result.seconds;
            let (mut read, mut written) = (0.0, 0.0);
            for (s, e, rd, wr) in &seconds {
                let overlap = (e.min(end) - s.max(start)).max(0.0) / (e - s).max(1e-9);
                read += overlap * rd;
                written += overlap * wr;
            }
            let mib_s = |bytes: f64| bytes / 1048576.0 / p.result.seconds.max(1e-3);
            rows += &format!(
                "| `{}` | {} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
                r.name,
                p.result.name,
                start - started,
                end - started,
                mib_s(read),
                mib_s(written)
            );
        }
    }
    if !rows.is_empty() {
        *md += "\nEach phase's seconds (from the run's start) and what every node's disks read and wrote meanwhile, from the per-second metrics:\n\n";
        *md += "| run | phase | from (s) | to (s) | disks read (MiB/s) | disks written (MiB/s) |\n|---|---|---:|---:|---:|---:|\n";
        *md += &rows;
    }
}

/// A client's share of one kind of phase.
#[derive(Debug, Clone, Copy)]
struct Fair {
    bw_mib: f64,
    done_s: f64,
}

/// Per (client, phase kind): bandwidth and completion time, averaged over iterations.
fn fairness(phases: &[PhaseRecord]) -> BTreeMap<(String, String), Fair> {
    let mut acc: BTreeMap<(String, String), (f64, f64, u32)> = BTreeMap::new();
    for phase in phases {
        let op = phase.name();
        let begin = phase.tasks.iter().map(|t| t.start).fold(f64::MAX, f64::min);
        let mut by_client: BTreeMap<String, (f64, f64, f64)> = BTreeMap::new();
        for t in &phase.tasks {
            let (s, e, b) = (t.start, t.end, t.bytes as f64);
            let entry = by_client.entry(t.node.clone()).or_insert((f64::MAX, 0.0, 0.0));
            entry.0 = entry.0.min(s);
            entry.1 = entry.1.max(e);
            entry.2 += b;
        }
        for (client, (s, e, b)) in by_client {
            let bw = b / 1048576.0 / (e - s).max(1e-9);
            let slot = acc.entry((client, op.clone())).or_insert((0.0, 0.0, 0));
            slot.0 += bw;
            slot.1 += e - begin;
            slot.2 += 1;
        }
    }
    acc.into_iter()
        .map(|(k, (bw, done, n))| (k, Fair { bw_mib: bw / f64::from(n), done_s: done / f64::from(n) }))
        .collect()
}

/// Per phase kind: application bytes, and bytes the clients' NICs moved (rx for reads, tx for
/// writes) during the seconds the phases ran, from `metrics/NODE.jsonl`.
fn amplification(run: &RunData, phases: &[PhaseRecord]) -> Vec<(String, f64, f64)> {
    let clients: std::collections::BTreeSet<&str> =
        phases.iter().flat_map(|p| &p.tasks).map(|t| t.node.as_str()).collect();
    // Per client: (second's start and end time, rx bytes, tx bytes) for every recorded second.
    let mut seconds: Vec<(f64, f64, f64, f64)> = Vec::new();
    for client in &clients {
        for line in results::metrics_lines(&run.dir, client) {
            let results::MetricsLine::Second(line) = line else { continue };
            let Some((start, end)) = line.span() else { continue };
            let interval = line.interval_s;
            // A column the line lacks (or holds as `null`) counts as nothing moved.
            let column = |nic: &Columns<NicColumn>, column| nic.get(column).unwrap_or(0.0);
            let (mut rx, mut tx) = (0.0, 0.0);
            for (name, nic) in &line.nics {
                if name == "lo" {
                    continue;
                }
                rx += column(nic, NicColumn::RxkBPerS) * 1024.0 * interval;
                tx += column(nic, NicColumn::TxkBPerS) * 1024.0 * interval;
            }
            seconds.push((start, end, rx, tx));
        }
    }
    if seconds.is_empty() {
        return Vec::new();
    }
    let mut out: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for phase in phases {
        let op = phase.name();
        let writes = phase.phase == Phase::Ior(IorPhase::Write);
        let start = phase.tasks.iter().map(|t| t.start).fold(f64::MAX, f64::min);
        let end = phase.tasks.iter().map(|t| t.end).fold(0.0, f64::max);
        let app = phase.totals.bytes as f64;
        // Each second counts in proportion to its overlap with the phase.
        let mut net = 0.0;
        for (s, e, rx, tx) in &seconds {
            let overlap = (e.min(end) - s.max(start)).max(0.0) / (e - s).max(1e-9);
            net += overlap * if writes { *tx } else { *rx };
        }
        let slot = out.entry(op).or_default();
        slot.0 += app;
        slot.1 += net;
    }
    out.into_iter().filter(|(_, (app, _))| *app > 0.0).map(|(op, (app, net))| (op, app, net)).collect()
}

/// A chart that draws itself on any plotters backend.
trait Drawing {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// `what` drawn as `NAME.svg` and `NAME.png` (`size` pixels) in `out`; returns both files.
fn render(
    out: &Path,
    name: &str,
    size: (u32, u32),
    what: &impl Drawing,
) -> Result<Vec<PathBuf>, ReportError> {
    // Registering twice is harmless; every chart registers so callers need not remember to.
    let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    let svg = out.join(format!("{name}.svg"));
    let png = out.join(format!("{name}.png"));
    let err = |path: &Path, e: String| ReportError::Write { path: path.to_owned(), message: e };
    {
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        what.draw(&root).map_err(|e| err(&svg, e))?;
        root.present().map_err(|e| err(&svg, e.to_string()))?;
    }
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        what.draw(&root).map_err(|e| err(&png, e))?;
        root.present().map_err(|e| err(&png, e.to_string()))?;
    }
    Ok(vec![svg, png])
}

/// The series' legend, in the charts' one style.
fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())
}

/// Grouped bars, one group per category, with optional limit marks, as `NAME.svg` and
/// `NAME.png` in `out`.
fn chart(
    out: &Path,
    name: &str,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(&str, Vec<f64>, RGBColor)],
    limits: &[Option<f64>],
) -> Result<Vec<PathBuf>, ReportError> {
    render(out, name, (900, 500), &Bars { title, y_label, categories, series, limits })
}

struct Bars<'a> {
    title: &'a str,
    y_label: &'a str,
    categories: &'a [String],
    series: &'a [(&'a str, Vec<f64>, RGBColor)],
    limits: &'a [Option<f64>],
}

impl Drawing for Bars<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let Bars { title, y_label, categories, series, limits } = *self;
        draw(root, title, y_label, categories, series, limits)
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(&str, Vec<f64>, RGBColor)],
    limits: &[Option<f64>],
) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let top = series
        .iter()
        .flat_map(|(_, v, _)| v.iter().copied())
        .chain(limits.iter().flatten().copied())
        .fold(0.0_f64, f64::max)
        .max(1.0)
        * 1.15;
    let n = categories.len().max(1);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..n as f64, 0.0..top)
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        // Categories are drawn below by hand, centred under their bars: the mesh's own x labels
        // fall wherever its key points do.
        .x_labels(0)
        .y_desc(y_label)
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(e)?;
    let width = 0.8 / series.len().max(1) as f64;
    for (k, (label, values, color)) in series.iter().enumerate() {
        let color = *color;
        chart
            .draw_series(values.iter().enumerate().map(|(i, v)| {
                let x0 = i as f64 + 0.1 + k as f64 * width;
                Rectangle::new([(x0, 0.0), (x0 + width * 0.95, *v)], color.filled())
            }))
            .map_err(e)?
            .label(*label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    if limits.iter().any(Option::is_some) {
        chart
            .draw_series(limits.iter().enumerate().filter_map(|(i, l)| {
                l.map(|l| {
                    PathElement::new(vec![(i as f64 + 0.05, l), (i as f64 + 0.95, l)], BLACK.stroke_width(2))
                })
            }))
            .map_err(e)?
            .label("VM limit")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], BLACK.stroke_width(2)));
    }
    for (i, category) in categories.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let style =
            TextStyle::from(("sans-serif", 14).into_font()).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Top,
            ));
        root.draw(&Text::new(category.clone(), (x, y + 8), style)).map_err(e)?;
    }
    legend(&mut chart)
}

mod jobs;
mod profile;
mod targets;
mod timeline;

#[cfg(test)]
mod tests;
