//! `pvfsctl bench --watch`: the run's phase, elapsed time and aggregate rates with a
//! per-second chart, above `top`'s table of every node's disks and network.
//!
//! Like `top`'s, the screen is plain data ([`Watch`]) drawn by [`draw`], so a test renders it
//! into a `TestBackend` and reads the text back.

use super::tui::{self, NodeRow, Screen, SortKey};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Sparkline};
use std::collections::{BTreeMap, VecDeque};
use std::time::SystemTime;

/// Seconds of aggregate history in the chart.
const CHART: usize = 120;

/// What the bench panel shows.
#[derive(Debug, Clone)]
pub(crate) struct Watch {
    pub title: String,
    /// "iteration 1 read", or "finished".
    pub phase: String,
    pub phase_started: Option<SystemTime>,
    pub run_started: SystemTime,
    /// Each client's cumulative bytes and ops in the current phase.
    pub clients: BTreeMap<String, (u64, u64)>,
    /// The previous second's totals, for this second's rates.
    last: (u64, u64, Option<SystemTime>),
    /// Aggregate MiB/s and ops/s of the current second.
    pub rate: (f64, f64),
    /// Aggregate MiB/s, one value per second, oldest first.
    pub chart: VecDeque<u64>,
    /// The last second's latency over every client's operations, while a phase runs.
    pub latency: Option<pvfs_bench::latency::Percentiles>,
    /// Results of finished phases, newest last.
    pub done: Vec<String>,
    pub nodes: Screen,
}

impl Watch {
    pub(crate) fn new(title: String, cluster: &pvfs_config::Cluster) -> Watch {
        let rows = cluster
            .nodes
            .iter()
            .map(|n| NodeRow::new(&n.name, &n.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(",")))
            .collect();
        Watch {
            title,
            phase: "starting".into(),
            phase_started: None,
            run_started: SystemTime::now(),
            clients: BTreeMap::new(),
            last: (0, 0, None),
            rate: (0.0, 0.0),
            chart: VecDeque::new(),
            latency: None,
            done: Vec::new(),
            nodes: Screen {
                title: "nodes".into(),
                rows,
                sort: SortKey::Name,
                reverse: false,
                clock: String::new(),
                selected: None,
            },
        }
    }

    pub(crate) fn phase_started(&mut self, label: String, at: SystemTime) {
        self.phase = label;
        self.phase_started = Some(at);
        self.clients.clear();
        self.last = (0, 0, Some(at));
        self.latency = None;
    }

    pub(crate) fn latency_second(&mut self, latency: pvfs_bench::latency::Percentiles) {
        self.latency = Some(latency);
    }

    pub(crate) fn progress(&mut self, node: &str, bytes: u64, ops: u64) {
        self.clients.insert(node.to_owned(), (bytes, ops));
    }

    /// Once a second: the aggregate rate since the last tick, into the chart.
    pub(crate) fn tick(&mut self, now: SystemTime) {
        let (bytes, ops) = self.clients.values().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let since =
            self.last.2.map_or(1.0, |t| now.duration_since(t).unwrap_or_default().as_secs_f64()).max(1e-3);
        let mib = bytes.saturating_sub(self.last.0) as f64 / 1048576.0 / since;
        let iops = ops.saturating_sub(self.last.1) as f64 / since;
        self.rate = (mib, iops);
        self.last = (bytes, ops, Some(now));
        if self.chart.len() == CHART {
            self.chart.pop_front();
        }
        self.chart.push_back(mib.round() as u64);
    }

    pub(crate) fn phase_done(&mut self, line: String) {
        self.done.push(line);
        self.clients.clear();
        self.rate = (0.0, 0.0);
        self.latency = None;
    }
}

/// Handles the keys pressed since the last call (never blocks): `s` and `r` sort the node
/// table as in `top`; true when `q`, Esc or Ctrl-C asks to leave the view.
pub(crate) fn keys(watch: &mut Watch) -> bool {
    tui::handle_keys(&mut watch.nodes)
}

/// Renders the bench panel above the node table.
pub(crate) fn draw(frame: &mut Frame<'_>, w: &Watch) {
    let [head, chart, results, nodes] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Min(5),
    ])
    .areas(frame.area());
    let elapsed = w.run_started.elapsed().unwrap_or_default().as_secs_f64();
    let in_phase = w.phase_started.map_or(0.0, |t| t.elapsed().unwrap_or_default().as_secs_f64());
    let (bytes, ops) = w.clients.values().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let latency = w.latency.map_or_else(String::new, |l| {
        use pvfs_bench::latency::format_ns;
        format!(
            "   last second p50 {} p99 {} max {}",
            format_ns(l.p50_ns),
            format_ns(l.p99_ns),
            format_ns(l.max_ns)
        )
    });
    let lines = vec![
        Line::from(w.title.clone()).style(Style::new().add_modifier(Modifier::BOLD)),
        Line::from(format!(
            "{}  {in_phase:.0}s in phase, {elapsed:.0}s in all   now {:.1} MiB/s, {:.0} ops/s{latency}   phase so far {} MiB, {} ops   q: quit view",
            w.phase,
            w.rate.0,
            w.rate.1,
            bytes >> 20,
            ops
        )),
    ];
    frame.render_widget(Paragraph::new(lines), head);
    let data: Vec<u64> = w.chart.iter().copied().collect();
    let max = data.iter().copied().max().unwrap_or(0).max(1);
    frame.render_widget(
        Sparkline::default()
            .block(Block::bordered().title(format!(" aggregate MiB/s, last {CHART} s (peak {max}) ")))
            .data(&data)
            .max(max)
            .style(Style::new().fg(Color::Cyan)),
        chart,
    );
    let shown: Vec<Line<'_>> = w.done.iter().rev().take(4).rev().map(|l| Line::from(l.as_str())).collect();
    frame.render_widget(Paragraph::new(shown).block(Block::bordered().title(" finished phases ")), results);
    tui::draw_in(frame, nodes, &w.nodes);
    tui::keep_printable(frame);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use std::time::Duration;

    #[test]
    fn the_panel_shows_phase_rates_and_results() {
        let cluster = pvfs_config::parse(
            std::path::Path::new("/c.toml"),
            "[cluster]\nname = \"w\"\nkind = \"local\"\n[local]\nmount = \"/m\"\n[[node]]\nname = \"c1\"\naddress = \"127.0.0.1:1\"\nroles = [\"client\"]\n",
        )
        .unwrap();
        let mut w = Watch::new("bench w-throughput".into(), &cluster);
        let t0 = SystemTime::now();
        w.phase_started("iteration 0 write".into(), t0);
        w.progress("c1", 300 << 20, 300);
        w.tick(t0 + Duration::from_secs(2));
        assert_eq!(w.rate, (150.0, 150.0), "300 MiB over 2 s");
        let mut second = pvfs_bench::latency::Recorder::new();
        [2_000_000, 3_000_000, 40_000_000].into_iter().for_each(|ns| second.record(ns));
        let p = second.percentiles().unwrap();
        w.latency_second(p);
        let mut terminal = Terminal::new(TestBackend::new(200, 30)).unwrap();
        let shown = |terminal: &mut Terminal<TestBackend>, w: &Watch| {
            terminal.draw(|f| draw(f, w)).unwrap();
            terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect::<String>()
        };
        let text = shown(&mut terminal, &w);
        // Each figure is its bucket's (within 1 %): 3.01 ms and 40.1 ms here.
        use pvfs_bench::latency::format_ns;
        let line = format!(
            "last second p50 {} p99 {} max {}",
            format_ns(p.p50_ns),
            format_ns(p.p99_ns),
            format_ns(p.max_ns)
        );
        assert!(line.starts_with("last second p50 3.0") && line.contains("p99 40."), "{line}");
        assert!(text.contains(&line), "{text}");
        w.phase_done("iteration 0 write: 150.00 MiB/s".into());
        let text = shown(&mut terminal, &w);
        assert!(!text.contains("last second"), "a finished phase has no last second: {text}");
        assert!(text.contains("bench w-throughput"), "{text}");
        assert!(text.contains("aggregate MiB/s") && text.contains("peak 150"), "{text}");
        assert!(text.contains("iteration 0 write: 150.00 MiB/s"), "{text}");
        assert!(text.contains("c1"), "the node table is there: {text}");
    }
}
