//! A run's latency second by second (its events' `latency_second` lines): per phase, how the
//! seconds' p99 spread (the median second and the worst, and when the worst came), and a chart
//! of p50, p99 and max per second over the whole run with its phases marked — where a stall, a
//! failover or a server's cache flush shows as a spike that the phase's percentiles average in.

use super::{Drawing, ReportError, RunData, legend, render, slug};
use plotters::coord::Shift;
use plotters::prelude::*;
use pvfs_bench::latency::format_ns;
use pvfs_bench::phase::Phase;
use pvfs_bench::results::{self, FaultSpan, LatencySecond, PhaseSpan};
use std::path::{Path, PathBuf};

/// One run's latency per second, and its chart's files; nothing for a run that has none
/// (an import, fio, a run from before they were kept).
pub(super) fn section(md: &mut String, r: &RunData, out: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let seconds = results::latency_seconds(&r.dir).unwrap_or_default();
    if seconds.is_empty() {
        return Ok(Vec::new());
    }
    let spans = results::timeline(&r.dir).unwrap_or_default();
    *md += &format!("### Latency second by second: `{}`\n\n", r.name);
    *md += "Each second, the percentiles of every operation the clients finished in it (their reports \
            merged as they arrived). A phase's median second is its steady state; its worst second is \
            where it stalled.\n\n";
    *md += "| iteration | phase | seconds | median second's p50 | median second's p99 | worst second's p99 | \
            worst second (s into the phase) | worst second's max |\n|---:|---|---:|---:|---:|---:|---:|---:|\n";
    for ((iteration, phase), group) in phases(&seconds) {
        let mut p50: Vec<u64> = group.iter().map(|s| s.latency.p50_ns).collect();
        let mut p99: Vec<u64> = group.iter().map(|s| s.latency.p99_ns).collect();
        let Some(worst) = group.iter().max_by_key(|s| s.latency.p99_ns) else { continue };
        let start = span(&spans, iteration, phase).map_or(group[0].at, |s| s.start);
        *md += &format!(
            "| {iteration} | {} | {} | {} | {} | {} | {:.0} | {} |\n",
            name(r, iteration, phase),
            group.len(),
            format_ns(median(&mut p50)),
            format_ns(median(&mut p99)),
            format_ns(worst.latency.p99_ns),
            (worst.at - start).max(0.0),
            format_ns(worst.latency.max_ns),
        );
    }
    *md += "\n";
    let faults = results::faults(&r.dir).unwrap_or_default();
    if !faults.is_empty() {
        *md += "Faults (`--fault`), each measured from its phase's seconds: the rate before it, the seconds \
                from it on with no operation finished, and how long until the rate was back to 90 % of the \
                rate before for the rest of the phase (shaded red on the chart while in place); for a \
                killed GlusterFS brick, the most entries pending heal once it was back and how long until \
                none were left; the tasks that failed (a client's I/O error stops the run, as it stops IOR) \
                and the first error, and what those tasks were to do and did not (nothing is retried: \
                each failed task stops at its error, so this is what the application lost).\n\n\
                | node | iteration | phase | at (s into the phase) | for (s) | ops/s before | stall (s) | back to 90 % after (s) | client errors | lost (not done) | pending heal (most) | healed after (s) |\n\
                |---|---:|---|---:|---:|---:|---:|---:|---|---|---:|---:|\n";
        for f in &faults {
            let start = span(&spans, f.iteration, f.phase).map_or(f.injected, |s| s.start);
            *md += &format!(
                "| {} | {} | {} | {:.1} | {} | {:.0} | {:.0} | {} | {} | {} | {} | {} |\n",
                f.node,
                f.iteration,
                name(r, f.iteration, f.phase),
                f.injected - start,
                f.undone.map_or("still in place at the phase's end".to_owned(), |u| format!(
                    "{:.1}",
                    u - f.injected
                )),
                f.ops_per_s_before,
                f.stall_s,
                f.recovery_s.map_or("not within the phase".to_owned(), |s| format!("{s:.1}")),
                match &f.first_error {
                    Some(first) => format!("{} (first: {})", f.client_errors, first.replace('|', "/")),
                    None => f.client_errors.to_string(),
                },
                match results::lost_work(f.ops_lost, f.bytes_lost) {
                    Some(lost) => lost,
                    None if f.client_errors == 0 || f.ops_lost == Some(0) => "none".to_owned(),
                    None => "– (no fixed size: a stonewalled phase)".to_owned(),
                },
                f.heal.as_ref().map_or("–".to_owned(), |h| h.pending_max.to_string()),
                f.heal.as_ref().map_or("–".to_owned(), |h| match (&h.error, h.healed_after_s) {
                    (Some(why), _) => format!("not followed: {}", why.replace('|', "/")),
                    (None, Some(s)) => format!("{s:.1}"),
                    (None, None) => "not within the wait".to_owned(),
                }),
            );
        }
        *md += "\n";
    }
    let name = format!("latency-seconds-{}", slug(&r.name));
    let files = chart(out, &name, &format!("Latency per second, {}", r.name), &seconds, &spans, &faults)?;
    *md += &format!("![latency per second]({name}.svg)\n\n");
    Ok(files)
}

/// The seconds grouped by their phase, in the order the phases ran.
fn phases(seconds: &[LatencySecond]) -> Vec<((u32, Phase), Vec<&LatencySecond>)> {
    let mut out: Vec<((u32, Phase), Vec<&LatencySecond>)> = Vec::new();
    for s in seconds {
        match out.last_mut() {
            Some((key, group)) if *key == (s.iteration, s.phase) => group.push(s),
            _ => out.push(((s.iteration, s.phase), vec![s])),
        }
    }
    out
}

/// The phase's name as the run's other tables give it (an IO500 stage's with its stage).
pub(crate) fn name(r: &RunData, iteration: u32, phase: Phase) -> String {
    let records: Vec<_> = r
        .run()
        .map(|run| run.phases.iter().filter(|p| p.iteration == iteration && p.phase == phase).collect())
        .unwrap_or_default();
    match records[..] {
        [record] => record.name(),
        _ => phase.label().to_owned(),
    }
}

fn span(spans: &[PhaseSpan], iteration: u32, phase: Phase) -> Option<&PhaseSpan> {
    spans.iter().find(|s| s.iteration == iteration && s.phase == phase)
}

/// The middle value (the upper of the two middles of an even count); 0 for none.
fn median(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

/// Which of a second's figures a line draws.
type Pick = fn(&LatencySecond) -> u64;

/// p50, p99 and max per second (log scale) over the run's seconds, each phase a band.
fn chart(
    out: &Path,
    name: &str,
    title: &str,
    seconds: &[LatencySecond],
    spans: &[PhaseSpan],
    faults: &[FaultSpan],
) -> Result<Vec<PathBuf>, ReportError> {
    render(out, name, (900, 450), &Chart { title, seconds, spans, faults })
}

struct Chart<'a> {
    title: &'a str,
    seconds: &'a [LatencySecond],
    spans: &'a [PhaseSpan],
    faults: &'a [FaultSpan],
}

impl Drawing for Chart<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        draw(root, self.title, self.seconds, self.spans, self.faults)
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    seconds: &[LatencySecond],
    spans: &[PhaseSpan],
    faults: &[FaultSpan],
) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    // The clock starts at the run's first phase; latency in µs, at least 0.1 so the log scale
    // has a floor.
    let origin = spans.first().map_or(f64::MAX, |s| s.start).min(seconds[0].at);
    // Each second at the middle of its part of the phase (a phase's last second may be cut
    // short by its end).
    let x = |s: &LatencySecond| {
        let end = span(spans, s.iteration, s.phase).and_then(|p| p.end).unwrap_or(f64::MAX);
        (s.at + (s.at + 1.0).min(end).max(s.at + 0.05)) / 2.0 - origin
    };
    let us = |ns: u64| (ns as f64 / 1e3).max(0.1);
    let end = seconds
        .iter()
        .map(x)
        .chain(spans.iter().filter_map(|s| s.end).map(|e| e - origin))
        .fold(1.0, f64::max)
        + 0.5;
    let low = seconds.iter().map(|s| us(s.latency.p50_ns)).fold(f64::MAX, f64::min) / 2.0;
    let high = seconds.iter().map(|s| us(s.latency.max_ns)).fold(0.2, f64::max) * 2.0;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..end, (low..high).log_scale())
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("seconds into the run")
        .y_desc("latency (log)")
        .y_label_formatter(&|us| format_ns((us * 1e3) as u64))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(e)?;
    // Every other phase shaded, its name at the top.
    for (i, span) in spans.iter().enumerate() {
        let (from, to) = (span.start - origin, span.end.unwrap_or(span.start + 1.0) - origin);
        if i % 2 == 0 {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(from, low), (to.max(from + 0.5), high)],
                    RGBColor(230, 230, 230).filled(),
                )))
                .map_err(e)?;
        }
        chart
            .draw_series(std::iter::once(Text::new(
                span.phase.label().to_owned(),
                (from, high / 1.3),
                ("sans-serif", 12).into_font(),
            )))
            .map_err(e)?;
    }
    // Each fault while in place, shaded red and named by its node.
    for f in faults {
        let (from, to) = (f.injected - origin, f.undone.unwrap_or(f.injected + 1.0) - origin);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(from, low), (to.max(from + 0.2), high)],
                RGBColor(255, 200, 200).filled(),
            )))
            .map_err(e)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("fault: {}", f.node),
                (from, high / 2.0),
                ("sans-serif", 12).into_font().color(&RED),
            )))
            .map_err(e)?;
    }
    let lines: [(&str, Pick, RGBColor); 3] = [
        ("p50", |s| s.latency.p50_ns, RGBColor(31, 119, 180)),
        ("p99", |s| s.latency.p99_ns, RGBColor(255, 127, 14)),
        ("max", |s| s.latency.max_ns, RGBColor(150, 150, 150)),
    ];
    for (label, value, color) in lines {
        // A line per phase, so a gap between phases is not drawn across.
        for (k, (_, group)) in phases(seconds).iter().enumerate() {
            let points: Vec<(f64, f64)> = group.iter().map(|s| (x(s), us(value(s)))).collect();
            let series =
                chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(2))).map_err(e)?;
            if k == 0 {
                series
                    .label(label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], color.stroke_width(2)));
            }
            chart.draw_series(points.iter().map(|p| Circle::new(*p, 2, color.filled()))).map_err(e)?;
        }
    }
    legend(&mut chart)
}
