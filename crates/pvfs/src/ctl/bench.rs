//! `pvfsctl bench CLUSTER.toml`: the seed's IOR/mdtest methodology on the cluster's clients,
//! every node's per-second metrics recorded alongside, and a results directory that keeps
//! everything (the cluster file, the equivalent commands, every phase and task, the metrics),
//! whether the run finished or not. This module is the command's face: it parses, shows the
//! run (lines, the live view, or `--json`) and handles signals; what the run is
//! (`pvfs_coord::bench::plan`) and running and recording it (`pvfs_coord::bench::execute`) are
//! the coordinator's.

use super::tui::Summary;
use super::watch::{Watch, keys};
use crate::cli::{BenchArgs, ImportArgs};
use crate::shutdown::{Shutdown, StopSignal};
use crate::{exit, output};
use anyhow::{Context, bail};
use pvfs_bench::results::{self, BenchEvent};
use pvfs_config::{Cluster, Role};
use pvfs_coord::bench::BenchError;
use pvfs_coord::bench::execute::{self, RunEvent};
use pvfs_coord::bench::plan::{BenchFlags, BenchPlan, Sweep};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Processes recorded per node and second under `--watch` (top N by CPU and by I/O).
const DEFAULT_PROCESSES: u32 = 5;

/// The command's flags, as the coordinator's plan takes them (clap stays in the binary).
fn flags(args: &BenchArgs) -> BenchFlags {
    BenchFlags {
        preset: args.preset,
        procs: args.procs,
        set: args.set.clone(),
        engine: args.engine,
        launcher: args.launcher,
        dir: args.dir.clone(),
        results: args.results.clone(),
        sweep_point: args.sweep_point.clone(),
        drop_caches: args.drop_caches,
    }
}

/// The run `args` asks for on `cluster`, named for now.
fn resolve(cluster: &Cluster, args: &BenchArgs) -> anyhow::Result<BenchPlan> {
    Ok(BenchPlan::resolve(cluster, &flags(args), SystemTime::now())?)
}

pub(crate) async fn run(args: BenchArgs) -> anyhow::Result<u8> {
    // One shutdown for the whole sweep: a signal between two points stops the sweep too.
    let (shutdown, _note) = stop_on_signals()?;
    let Some(sweep) = args.sweep.clone() else { return Ok(run_point(args, shutdown.token()).await?.0) };
    let sweep = Sweep::parse(&sweep)?;
    let key = &sweep.key;
    // Check every point before running any, so a typo in the last value costs nothing.
    let path = args.cluster.clone().context("a cluster file is needed")?;
    let cluster = pvfs_config::load(&path)?;
    for point in sweep.points(&flags(&args)) {
        BenchPlan::resolve(&cluster, &point, SystemTime::now())?;
    }
    let mut code = exit::OK;
    let mut points = Vec::new();
    for value in &sweep.values {
        let mut point = args.clone();
        point.sweep = None;
        point.sweep_point = Some((key.clone(), value.clone()));
        if !args.json {
            output::print(&format!("\n== sweep {key}={value}\n"))?;
        }
        let (point_code, dir) = run_point(point, shutdown.token()).await?;
        code = code.max(point_code);
        points.push((value.clone(), dir));
        if point_code != exit::OK {
            output::note(&format!("error: the sweep stopped at {key}={value}"));
            break;
        }
    }
    if !args.json {
        let mut table = format!(
            "\nsweep over {key}:\n{:>12}  {:>12}  {:>12}  results\n",
            key, "write MiB/s", "read MiB/s"
        );
        for (value, dir) in &points {
            // A point whose record does not read shows dashes: the table is a digest, and each
            // point's own output already said what went wrong.
            let record = results::load(dir).ok();
            let bw = |op: &str| {
                record.as_ref().and_then(|r| r.bw(op)).map_or("–".to_owned(), |v| format!("{v:.1}"))
            };
            table += &format!("{value:>12}  {:>12}  {:>12}  {}\n", bw("write"), bw("read"), dir.display());
        }
        output::print(&table)?;
    }
    Ok(code)
}

/// Runs the benchmark until it ends or `stop` is cancelled (the caller's shutdown: `demo`'s);
/// the exit code and the run's results directory.
pub(crate) async fn run_to(args: BenchArgs, stop: CancellationToken) -> anyhow::Result<(u8, PathBuf)> {
    run_point(args, stop).await
}

/// The process's shutdown (the first SIGINT or SIGTERM stops the run on every client and keeps
/// what finished; a second exits at once, the record written at the start saying the run is
/// incomplete), and a note when it starts. The note's task ends with the returned handle.
fn stop_on_signals() -> anyhow::Result<(Shutdown, tokio_util::task::AbortOnDropHandle<()>)> {
    let shutdown = Shutdown::on_signals()?;
    let watching = shutdown.clone();
    let note = tokio::spawn(async move {
        watching.cancelled().await;
        let name = watching.received().map_or("stop", StopSignal::name);
        output::note(&format!(
            "{name}: stopping the run on every client and keeping what finished (again: exit at once)"
        ));
    });
    Ok((shutdown, tokio_util::task::AbortOnDropHandle::new(note)))
}

async fn run_point(args: BenchArgs, cancel: CancellationToken) -> anyhow::Result<(u8, PathBuf)> {
    let path = args.cluster.clone().context("a cluster file is needed: pvfsctl bench CLUSTER.toml")?;
    let cluster = pvfs_config::load(&path)?;
    let dialer = super::dialer(&cluster, &args.connect)?;
    let plan = resolve(&cluster, &args)?;
    let clients: Vec<_> = cluster.with_role(Role::Client).cloned().collect();
    if clients.is_empty() {
        bail!("{} has no node with role \"client\": the benchmark runs on clients", cluster.source.display());
    }
    let client_count = clients.len() as u32;
    let faults = args
        .fault
        .iter()
        .map(|spec| pvfs_coord::bench::fault::parse(spec, &cluster))
        .collect::<Result<Vec<_>, _>>()?;
    let gluster_profile =
        if args.gluster_profile { Some(pvfs_coord::bench::profile::target(&cluster)?) } else { None };
    let extras = execute::Extras { faults, gluster_profile };
    let opened = execute::open(plan, &cluster, &path)?;
    let (plan, run) = (&opened.plan, &opened.dir);
    let equivalent = plan.equivalent(run);
    let json = args.json;
    if !json {
        output::print(&format!(
            "bench {} on {} ({} clients x {} tasks), preset {}: {equivalent}\nresults: {}\n",
            run.name(),
            cluster.name,
            clients.len(),
            plan.tasks_per_client(),
            plan.preset(),
            run.path().display()
        ))?;
    }

    let screen = if args.watch && std::io::stdout().is_terminal() {
        Some((ratatui::init(), Watch::new(format!("pvfs bench {} ({})", run.name(), equivalent), &cluster)))
    } else {
        None
    };
    // `bench --watch` asks the agents for their processes (recorded each second) unless
    // `--processes` says how many.
    let processes = args.processes.unwrap_or(if args.watch { DEFAULT_PROCESSES } else { 0 });
    let (tx, rx) = mpsc::unbounded_channel();
    // The view ends with the run; an error showing it (a closed stdout) ends the command at once.
    let (outcome, ()) = tokio::try_join!(
        async {
            Ok::<_, anyhow::Error>(
                execute::execute(&opened, &cluster, clients, &dialer, processes, extras, cancel, tx).await?,
            )
        },
        show(rx, screen, json),
    )?;
    if json {
        let summary = BenchEvent::Summary {
            run: run.name().to_owned(),
            results: run.path().to_owned(),
            ior: outcome.ior.clone(),
            mdtest: outcome.mdtest.clone(),
            error: outcome.error.as_ref().map(ToString::to_string),
        };
        output::json(&results::sorted(&summary)?)?;
    } else {
        let text = pvfs_bench::summary::text(
            plan.workload(),
            plan.tasks_per_client() * client_count,
            plan.tasks_per_client(),
            &outcome.iterations,
            &outcome.ior,
            &outcome.mdtest,
        );
        output::print(&format!("\n{text}"))?;
    }
    match &outcome.error {
        Some(BenchError::Interrupted { .. }) => {
            output::note(&format!(
                "interrupted: the phases that finished and every node's metrics are kept in {}",
                run.path().display()
            ));
            Ok((exit::INTERRUPTED, run.path().to_owned()))
        }
        Some(err) => {
            output::note(&format!("error: the run stopped: {err}"));
            output::note(&format!(
                "partial results and every node's metrics are kept in {}",
                run.path().display()
            ));
            Ok((exit::FAILURES, run.path().to_owned()))
        }
        None => Ok((exit::OK, run.path().to_owned())),
    }
}

/// Shows the run as it goes: its `--json` lines, the live view, or progress lines; returns
/// when the run has ended (the live view closed again).
async fn show(
    mut events: mpsc::UnboundedReceiver<RunEvent>,
    mut screen: Option<(ratatui::DefaultTerminal, Watch)>,
    json: bool,
) -> anyhow::Result<()> {
    let mut lines = Lines::default();
    let mut second = tokio::time::interval(Duration::from_secs(1));
    let mut redraw = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            event = events.recv() => {
                let (event, line) = match event {
                    Some(RunEvent::Bench { event, line }) => (*event, line),
                    Some(RunEvent::Second(s)) => {
                        if let Some((_, watch)) = &mut screen
                            && let Some(row) = watch.nodes.row_mut(&s.node)
                        {
                            row.record(Summary::of(&s.rates, &s.devices));
                            row.targets = s.rates.lustre.clone();
                            row.bricks = s.rates.bricks.clone();
                            row.lnet = s.rates.lnet;
                        }
                        continue;
                    }
                    Some(RunEvent::Ended) | None => break,
                };
                if json {
                    output::json(&line)?;
                } else if let Some((_, watch)) = &mut screen {
                    match &event {
                        BenchEvent::PhaseStarted { iteration, phase, at } => watch.phase_started(format!("iteration {iteration} {phase}"), time(*at)),
                        BenchEvent::Progress { node, bytes, ops, .. } => watch.progress(node, *bytes, *ops),
                        BenchEvent::LatencySecond { latency, .. } => watch.latency_second(*latency),
                        BenchEvent::PhaseDone { iteration, phase, totals, latency, first_done } => watch.phase_done(phase_line(*iteration, *phase, totals, latency.as_ref(), first_done.as_ref())),
                        BenchEvent::Launched { node, .. } => watch.phase_started(format!("mpirun on {node}"), SystemTime::now()),
                        BenchEvent::Io500Stage { stage, at } => watch.phase_started(format!("io500 {stage}"), time(*at)),
                        BenchEvent::Io500Result { result } => watch.phase_done(pvfs_bench::io500::assemble::result_line(result)),
                        BenchEvent::Io500Score { score, .. } => watch.phase_done(format!("[SCORE ] {score}")),
                        BenchEvent::Fault { .. } | BenchEvent::FaultMeasured { .. } | BenchEvent::FaultHealed { .. } | BenchEvent::GlusterProfile { .. } | BenchEvent::LustreJobs { .. } => watch.phase_done(fault_line(&event).unwrap_or_default()),
                        BenchEvent::CachesDropped { .. } | BenchEvent::Output { .. } | BenchEvent::Summary { .. } => {}
                    }
                } else {
                    lines.show(&event)?;
                }
            }
            _ = second.tick() => {
                if let Some((_, watch)) = &mut screen {
                    watch.tick(SystemTime::now());
                }
            }
            _ = redraw.tick() => {
                if let Some((terminal, watch)) = &mut screen {
                    terminal.draw(|frame| super::watch::draw(frame, watch))?;
                    if keys(watch) {
                        ratatui::restore();
                        screen = None;
                        output::note("left the live view; the run goes on");
                    }
                }
            }
        }
    }
    if screen.take().is_some() {
        ratatui::restore();
    }
    Ok(())
}

/// Progress as lines: a line a second across all clients while a phase runs, and a line per
/// finished phase.
#[derive(Default)]
struct Lines {
    progress: BTreeMap<String, (u64, u64)>,
    /// The last second's latency over every client, while a phase runs.
    latency: Option<pvfs_bench::latency::Percentiles>,
    phase_start: Option<SystemTime>,
    last_line: Option<SystemTime>,
}

impl Lines {
    fn show(&mut self, event: &BenchEvent) -> anyhow::Result<()> {
        match event {
            BenchEvent::PhaseStarted { iteration, phase, at } => {
                self.progress.clear();
                self.latency = None;
                self.phase_start = Some(time(*at));
                output::print(&format!("iteration {iteration} {phase}: started\n"))?;
            }
            BenchEvent::Progress { node, bytes, ops, .. } => {
                self.progress.insert(node.clone(), (*bytes, *ops));
                // fio reports only at the end of a phase: nothing to show meanwhile.
                if self.progress.values().all(|(b, o)| *b == 0 && *o == 0) {
                    return Ok(());
                }
                if self.last_line.is_some_and(|t| t.elapsed().unwrap_or_default() < Duration::from_secs(1)) {
                    return Ok(());
                }
                self.last_line = Some(SystemTime::now());
                let (bytes, ops): (u64, u64) =
                    self.progress.values().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
                let secs =
                    self.phase_start.map_or(1.0, |t| t.elapsed().unwrap_or_default().as_secs_f64()).max(1e-3);
                let latency = self.latency.map_or_else(String::new, |l| {
                    use pvfs_bench::latency::format_ns;
                    format!("; last second p50 {}, p99 {}", format_ns(l.p50_ns), format_ns(l.p99_ns))
                });
                output::print(&format!(
                    "  {secs:>6.1}s  {} moved, {:.1} MiB/s, {:.0} ops/s so far{latency}\n",
                    output::bytes(bytes),
                    bytes as f64 / 1048576.0 / secs,
                    ops as f64 / secs
                ))?;
            }
            BenchEvent::LatencySecond { latency, .. } => self.latency = Some(*latency),
            BenchEvent::Fault { .. }
            | BenchEvent::FaultMeasured { .. }
            | BenchEvent::FaultHealed { .. }
            | BenchEvent::GlusterProfile { .. }
            | BenchEvent::LustreJobs { .. } => {
                if let Some(line) = fault_line(event) {
                    output::print(&format!("{line}\n"))?;
                }
            }
            BenchEvent::PhaseDone { iteration, phase, totals, latency, first_done } => {
                let line = phase_line(*iteration, *phase, totals, latency.as_ref(), first_done.as_ref());
                output::print(&format!("{line}\n"))?;
            }
            BenchEvent::Launched { node, command, .. } => output::print(&format!("on {node}: {command}\n"))?,
            // The real io500's figures and score are shown as their events, in io500's words.
            BenchEvent::Output { text, stderr: false } if is_io500_figure(text) => {}
            BenchEvent::Output { text, .. } => output::print(&format!("  | {text}\n"))?,
            BenchEvent::CachesDropped { iteration, phase, nodes } => {
                let freed: u64 =
                    nodes.iter().map(|n| n.cached_before_kib.saturating_sub(n.cached_after_kib)).sum();
                let slowest = nodes.iter().map(|n| n.seconds).fold(0.0, f64::max);
                output::print(&format!(
                    "iteration {iteration} {phase}: caches dropped on {} ({} freed, {slowest:.1}s)\n",
                    nodes.iter().map(|n| n.node.as_str()).collect::<Vec<_>>().join(", "),
                    output::bytes(freed.saturating_mul(1024))
                ))?;
            }
            BenchEvent::Io500Stage { stage, .. } => output::print(&format!("io500 {stage}: started\n"))?,
            BenchEvent::Io500Result { result } => {
                output::print(&format!("{}\n", pvfs_bench::io500::assemble::result_line(result)))?
            }
            BenchEvent::Io500Score { score, invalid_reasons } => {
                for reason in invalid_reasons {
                    output::print(&format!("ERROR INVALID {reason}\n"))?;
                }
                output::print(&format!("[SCORE ] {score}\n"))?;
            }
            BenchEvent::Summary { .. } => {}
        }
        Ok(())
    }
}

/// Whether `text` is one of the real io500's lines that its events show again: a phase's
/// figure, the score, a reason the run is invalid.
fn is_io500_figure(text: &str) -> bool {
    ["[RESULT]", "[      ]", "[SCORE ]", "ERROR INVALID"].iter().any(|p| text.starts_with(p))
}

/// An event's Unix seconds as a time.
fn time(unix: f64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::try_from_secs_f64(unix).unwrap_or_default()
}

fn phase_line(
    iteration: u32,
    phase: pvfs_bench::phase::Phase,
    t: &pvfs_bench::summary::PhaseTotals,
    latency: Option<&pvfs_bench::latency::Percentiles>,
    first_done: Option<&pvfs_bench::summary::FirstDone>,
) -> String {
    // elbencho's first-done column, when the phase moved bytes: a straggler shows as a rate
    // well above the phase's own (its last-done one).
    let first = first_done
        .filter(|f| f.bytes > 0)
        .map_or(String::new(), |f| format!("; first done {:.2} MiB/s at {:.3}s", f.bw_mib, f.seconds));
    let latency = latency.map_or(String::new(), |l| {
        format!(
            "; latency p50 {}, p99 {}, p99.9 {}, max {}",
            pvfs_bench::latency::format_ns(l.p50_ns),
            pvfs_bench::latency::format_ns(l.p99_ns),
            pvfs_bench::latency::format_ns(l.p999_ns),
            pvfs_bench::latency::format_ns(l.max_ns)
        )
    });
    format!(
        "iteration {} {}: {:.2} MiB/s, {:.2} ops/s, {} in {:.3}s{first}{latency}",
        iteration,
        phase,
        t.bw_mib,
        t.ops_per_sec,
        output::bytes(t.bytes),
        t.seconds
    )
}

/// `pvfsctl bench import FILE…`: each file parsed and stored as a run of its own. Exit 2 when a
/// file is not an output that can be read (bad input, as the README's table says), else 1 when
/// one is a run that failed, else 0.
pub(crate) fn import(args: ImportArgs) -> anyhow::Result<u8> {
    let mut code = exit::OK;
    for file in &args.files {
        let shown = file.display().to_string();
        // io500 leaves a directory, or its stdout; IOR's and mdtest's outputs are read first,
        // and a file none of them reads is tried as io500's before it is called unreadable.
        if file.is_dir() {
            code = code.max(import_io500(file, &args)?);
            continue;
        }
        let parsed = match pvfs_bench::parse::parse_file(file) {
            Ok(parsed) => parsed,
            Err(err) => {
                if looks_like_io500(file) {
                    code = code.max(import_io500(file, &args)?);
                } else {
                    output::note(&format!("error: {err}"));
                    code = code.max(exit::BAD_INPUT);
                }
                continue;
            }
        };
        if args.json {
            output::json(&parsed.to_import_json(&shown))?;
        }
        if let Some(why) = parsed.failure() {
            output::note(&format!("error: {shown}: the run failed: {why}"));
            code = code.max(exit::FAILURES);
            continue;
        }
        let dir = results::store_import(&args.results, file, &parsed, SystemTime::now())?;
        let dir = dir.path();
        if !args.json {
            let rows = parsed.ior.len() + parsed.mdtest.len();
            output::print(&format!(
                "{shown}: {} {}, {rows} summary rows -> {}\n",
                match parsed.tool {
                    pvfs_bench::model::Tool::Ior => "IOR",
                    pvfs_bench::model::Tool::Mdtest => "mdtest",
                },
                parsed.version.as_deref().unwrap_or("(version not stated)"),
                dir.display()
            ))?;
        }
    }
    Ok(code)
}

/// `pvfsctl bench compare BASELINE RUN…`: each run against the baseline. Exit 2 when a
/// directory holds no run's record (an import has no phases), 1 when a metric regressed past
/// the threshold with significance, else 0.
pub(crate) fn compare(args: crate::cli::CompareArgs) -> anyhow::Result<u8> {
    use pvfs_bench::compare::Verdict;
    use pvfs_bench::latency::format_ns;
    let load = |dir: &std::path::Path| -> Result<results::RunRecord, String> {
        match results::load(dir).map_err(|e| e.to_string())? {
            results::Record::Run(run) => Ok(*run),
            results::Record::Import(_) => Err(format!(
                "{}: an imported output has no phases or iterations to compare; compare runs that pvfsctl bench made",
                dir.display()
            )),
        }
    };
    let baseline = match load(&args.baseline) {
        Ok(run) => run,
        Err(why) => {
            output::note(&format!("error: {why}"));
            return Ok(exit::BAD_INPUT);
        }
    };
    let mut code = exit::OK;
    for dir in &args.runs {
        let run = match load(dir) {
            Ok(run) => run,
            Err(why) => {
                output::note(&format!("error: {why}"));
                code = code.max(exit::BAD_INPUT);
                continue;
            }
        };
        let c = pvfs_bench::compare::compare(&baseline, &run, args.threshold);
        if c.regressed() {
            code = code.max(exit::FAILURES);
        }
        if args.json {
            output::json(&c)?;
            continue;
        }
        let mut text =
            format!("{} against {} (threshold {:.1} %)\n", c.run, c.baseline, args.threshold * 100.0);
        for d in &c.differences {
            text += &format!("  differs: {} {} -> {}\n", d.key, d.baseline, d.run);
        }
        text += &format!(
            "  {:<16} {:<17} {:>22} {:>22} {:>9} {:>21}  verdict\n",
            "phase", "metric", "baseline mean ± sd (n)", "run mean ± sd (n)", "change", "95 % interval"
        );
        for r in &c.rows {
            let shown = |s: &pvfs_bench::compare::Sample| match r.metric {
                pvfs_bench::compare::Metric::LatencyP50Ns | pvfs_bench::compare::Metric::LatencyP99Ns => {
                    format!("{} ± {} ({})", format_ns(s.mean as u64), format_ns(s.sd as u64), s.n)
                }
                _ => format!("{:.1} ± {:.1} ({})", s.mean, s.sd, s.n),
            };
            let interval = r
                .interval
                .map_or("–".to_owned(), |(lo, hi)| format!("[{:+.1} %, {:+.1} %]", lo * 100.0, hi * 100.0));
            let verdict = match r.verdict {
                Verdict::Regressed => "REGRESSED",
                Verdict::Improved => "improved",
                Verdict::Unchanged => "unchanged",
                Verdict::Undecided => "undecided (one iteration)",
            };
            text += &format!(
                "  {:<16} {:<17} {:>22} {:>22} {:>+8.1}% {:>21}  {verdict}\n",
                r.phase,
                r.metric.label(),
                shown(&r.baseline),
                shown(&r.run),
                r.change * 100.0,
                interval
            );
        }
        output::print(&text)?;
    }
    Ok(code)
}

/// Whether `file` reads as io500's stdout (a file that cannot be read is not).
fn looks_like_io500(file: &std::path::Path) -> bool {
    pvfs_host::local_file::read_to_string(file, pvfs_bench::io500::IO500_FILE)
        .is_ok_and(|text| pvfs_bench::io500::looks_like_io500(&text))
}

/// Imports one io500 run (a result directory or its stdout): exit 2 when it cannot be read, 1
/// when it never reached its score (it did not finish), else stored, an invalid run with the
/// reasons io500 gave.
fn import_io500(source: &std::path::Path, args: &ImportArgs) -> anyhow::Result<u8> {
    let shown = source.display().to_string();
    let (run, files) = match pvfs_bench::io500::read_run(source) {
        Ok(read) => read,
        Err(err) => {
            output::note(&format!("error: {err}"));
            return Ok(exit::BAD_INPUT);
        }
    };
    if args.json {
        output::json(&serde_json::json!({ "file": shown, "tool": "io500", "io500": run }))?;
    }
    let Some(score) = run.score else {
        output::note(&format!(
            "error: {shown}: the io500 run has no score line: it did not finish ({} phases ran)",
            run.phases.len()
        ));
        return Ok(exit::FAILURES);
    };
    let dir = results::store_io500_import(&args.results, source, &run, &files, SystemTime::now())?;
    if !args.json {
        output::print(&format!(
            "{shown}: IO500 {} ({}), {} phases, score {score} -> {}\n",
            run.version.as_deref().unwrap_or("(version not stated)"),
            run.mode.as_deref().unwrap_or("mode not stated"),
            run.phases.len(),
            dir.path().display()
        ))?;
        let reasons = run.invalid_reasons.iter().chain(run.phases.iter().flat_map(|p| &p.invalid_reasons));
        for reason in reasons {
            output::note(&format!("  invalid: {reason}"));
        }
    }
    Ok(exit::OK)
}

/// What a fault's failed tasks did not do, as a run's line says it (empty when nothing was
/// lost, or the work had no fixed size); nothing is retried, so it is the application's loss.
fn lost_text(ops: Option<u64>, bytes: Option<u64>) -> String {
    results::lost_work(ops, bytes)
        .map_or_else(String::new, |lost| format!("; {lost} not done by them, none retried"))
}

/// A fault's line (or a phase's GlusterFS profile's), as the plain view and `--watch` show it.
fn fault_line(event: &BenchEvent) -> Option<String> {
    match event {
        BenchEvent::GlusterProfile { iteration, phase, volume, bricks, error } => Some(match error {
            Some(why) => format!("profile of {volume} over iteration {iteration} {phase}: not read: {why}"),
            None => {
                let each: Vec<String> = bricks
                    .iter()
                    .map(|b| {
                        let top = b.fops.first().map_or_else(String::new, |f| {
                            format!(", {} {} calls avg {:.2} ms", f.name, f.hits, f.avg_ns / 1e6)
                        });
                        format!(
                            "{} w {:.1} MB r {:.1} MB{top}",
                            b.brick,
                            b.write_bytes as f64 / 1e6,
                            b.read_bytes as f64 / 1e6
                        )
                    })
                    .collect();
                format!("profile of {volume} over iteration {iteration} {phase}: {}", each.join("; "))
            }
        }),
        BenchEvent::Fault { node, action, detail, .. } => {
            Some(format!("fault on {node}: {action}: {detail}"))
        }
        BenchEvent::LustreJobs { iteration, phase, clients, targets, errors } => {
            let mut ids: Vec<&str> = clients.iter().filter_map(|c| c.job_id.as_deref()).collect();
            ids.sort_unstable();
            ids.dedup();
            let mut parts: Vec<String> = targets
                .iter()
                .map(|t| {
                    let (_, read) = t.counter("read_bytes");
                    let (_, written) = t.counter("write_bytes");
                    format!(
                        "{} w {:.1} MB r {:.1} MB, {} other operations",
                        t.target,
                        written as f64 / 1e6,
                        read as f64 / 1e6,
                        t.other_ops()
                    )
                })
                .collect();
            if ids.is_empty() {
                // Every client said why; one reason is enough on a line.
                let why = clients.iter().find_map(|c| c.why_none.as_deref()).unwrap_or("no client said");
                parts.push(format!("no job id: {why}"));
            } else if targets.is_empty() {
                parts.push("no target counted it".to_owned());
            }
            parts.extend(errors.iter().cloned());
            let named = if ids.is_empty() {
                "Lustre job stats".to_owned()
            } else {
                format!("Lustre job {}", ids.join(", "))
            };
            Some(format!("{named} over iteration {iteration} {phase}: {}", parts.join("; ")))
        }
        BenchEvent::FaultMeasured {
            node,
            iteration,
            phase,
            ops_per_s_before,
            stall_s,
            recovery_s,
            client_errors,
            first_error,
            ops_lost,
            bytes_lost,
            ..
        } => {
            let recovered = recovery_s.map_or_else(
                || "not back to 90 % of it within the phase".to_owned(),
                |s| format!("back to 90 % of it {s:.1} s after the fault"),
            );
            let errors = match first_error {
                Some(first) => format!("; {client_errors} tasks failed, the first: {first}"),
                None => String::new(),
            };
            let errors = errors + &lost_text(*ops_lost, *bytes_lost);
            Some(format!(
                "fault on {node}, iteration {iteration} {phase}: {ops_per_s_before:.0} ops/s before, {stall_s:.0} s with no operation finished, {recovered}{errors}"
            ))
        }
        BenchEvent::FaultHealed { node, volume, error: Some(why), .. } => {
            Some(format!("heal of {volume} after the fault on {node}: not followed: {why}"))
        }
        BenchEvent::FaultHealed { node, volume, pending_max, split_brain, healed_after_s, .. } => {
            let healed = healed_after_s.map_or_else(
                || "entries still pending when pvfs stopped waiting".to_owned(),
                |s| format!("none left {s:.1} s after the brick came back"),
            );
            let split =
                if *split_brain > 0 { format!(", {split_brain} in split-brain") } else { String::new() };
            Some(format!(
                "heal of {volume} after the fault on {node}: at most {pending_max} entries pending{split}, {healed}"
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_bench::phase::{IorPhase, Phase};

    /// A fault's line: the rate before, the stall, the recovery, and when tasks failed, how
    /// many, the first error and what they did not do.
    #[test]
    fn a_faults_measure_is_told_with_what_its_failed_tasks_lost() {
        let measured = |ops_lost, bytes_lost| BenchEvent::FaultMeasured {
            node: "gfs2".into(),
            iteration: 0,
            phase: Phase::Ior(IorPhase::Write),
            injected_at: 100.0,
            undone_at: Some(102.0),
            ops_per_s_before: 10783.0,
            stall_s: 0.0,
            recovery_s: None,
            client_errors: 4,
            first_error: Some("client1 task 1: write …: Transport endpoint is not connected".into()),
            ops_lost,
            bytes_lost,
        };
        let line = fault_line(&measured(Some(20480), Some(20480 * 4096))).unwrap();
        assert_eq!(
            line,
            "fault on gfs2, iteration 0 write: 10783 ops/s before, 0 s with no operation finished, not back to 90 % \
             of it within the phase; 4 tasks failed, the first: client1 task 1: write …: Transport endpoint is not \
             connected; 20480 transfers (80.0 MiB) not done by them, none retried"
        );
        let no_size = fault_line(&measured(None, None)).unwrap();
        assert!(no_size.ends_with("Transport endpoint is not connected"), "{no_size}");
        assert!(
            fault_line(&measured(Some(7), None))
                .unwrap()
                .ends_with("; 7 operations not done by them, none retried")
        );
    }
}
