//! The full-screen `pvfsctl top`: a row per node, cluster totals, a 60-second sparkline per
//! node, sortable; a node that stops answering turns red within three seconds. With
//! `--processes`, a panel under the table lists the selected node's busiest processes (↑/↓
//! select another node). When servers report their file system's own view, a panel lists
//! every Lustre target and GlusterFS brick of the cluster, as ltop does.
//!
//! The screen is drawn from [`Screen`], which is plain data updated from the cluster's sample
//! stream; [`draw`] renders it with ratatui, so tests render into a `TestBackend` and read the
//! text back.

use pvfs_metrics::gluster::BrickRates;
use pvfs_metrics::line::ProcessLine;
use pvfs_metrics::lustre::node::TargetRates;
use pvfs_metrics::rates::Rates;
use ratatui::Frame;
use ratatui::crossterm::event::{self as term_event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Paragraph, Row, Sparkline, Table};
use std::collections::VecDeque;

/// Seconds of history in each sparkline.
pub(crate) const HISTORY: usize = 60;

/// What a row shows for one node in one second.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Summary {
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub iops: f64,
    /// Mean latency of the second's reads and writes, weighted by their counts.
    pub await_ms: f64,
    /// The busiest device's %util.
    pub util: f64,
    pub rx_mb_s: f64,
    pub tx_mb_s: f64,
    pub cpu: f64,
    pub mem: f64,
}

impl Summary {
    /// Sums a node's devices and interfaces (`lo` left out: it is not the network).
    pub(crate) fn of(rates: &Rates, devices: &[String]) -> Summary {
        let disks = rates.disks.iter().filter(|(name, _)| devices.contains(name)).map(|(_, d)| d);
        let (mut s, mut weighted, mut ios) = (Summary::default(), 0.0, 0.0);
        for d in disks {
            s.read_mb_s += d.rkb_s / 1024.0;
            s.write_mb_s += d.wkb_s / 1024.0;
            s.iops += d.r_s + d.w_s;
            weighted += d.r_await * d.r_s + d.w_await * d.w_s;
            ios += d.r_s + d.w_s;
            s.util = s.util.max(d.util);
        }
        s.await_ms = if ios > 0.0 { weighted / ios } else { 0.0 };
        for (_, n) in rates.nics.iter().filter(|(name, _)| name.as_str() != "lo") {
            s.rx_mb_s += n.rxkb_s / 1024.0;
            s.tx_mb_s += n.txkb_s / 1024.0;
        }
        s.cpu = 100.0 - rates.cpu.idle;
        s.mem = rates.mem.memused_pct;
        s
    }
}

/// One node's line on the screen.
#[derive(Debug, Clone)]
pub(crate) struct NodeRow {
    pub name: String,
    pub roles: String,
    pub latest: Option<Summary>,
    /// Disk MB/s (read + write) for each of the last seconds, oldest first.
    pub history: VecDeque<u64>,
    /// `Some(reason)` while down.
    pub down: Option<String>,
    /// The node's busiest processes in the latest second (with `--processes`).
    pub processes: Vec<ProcessLine>,
    /// Its Lustre targets and GlusterFS bricks over the latest second (a server's).
    pub targets: Vec<TargetRates>,
    pub bricks: Vec<BrickRates>,
    /// LNet's traffic over the second, on a node with Lustre.
    pub lnet: Option<pvfs_metrics::lustre::node::LnetRates>,
}

impl NodeRow {
    pub(crate) fn new(name: &str, roles: &str) -> NodeRow {
        NodeRow {
            name: name.into(),
            roles: roles.into(),
            latest: None,
            history: VecDeque::new(),
            down: None,
            processes: Vec::new(),
            targets: Vec::new(),
            bricks: Vec::new(),
            lnet: None,
        }
    }

    pub(crate) fn record(&mut self, summary: Summary) {
        self.latest = Some(summary);
        self.down = None;
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back((summary.read_mb_s + summary.write_mb_s).round() as u64);
    }
}

/// Columns the table can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SortKey {
    Name,
    Disk,
    Iops,
    Net,
    Cpu,
}

impl SortKey {
    pub(crate) fn next(self) -> SortKey {
        match self {
            SortKey::Name => SortKey::Disk,
            SortKey::Disk => SortKey::Iops,
            SortKey::Iops => SortKey::Net,
            SortKey::Net => SortKey::Cpu,
            SortKey::Cpu => SortKey::Name,
        }
    }

    fn label(self) -> &'static str {
        match self {
            SortKey::Name => "node",
            SortKey::Disk => "disk MB/s",
            SortKey::Iops => "IOPS",
            SortKey::Net => "net MB/s",
            SortKey::Cpu => "CPU",
        }
    }

    fn value(self, row: &NodeRow) -> f64 {
        let s = row.latest.unwrap_or_default();
        match self {
            SortKey::Name => 0.0,
            SortKey::Disk => s.read_mb_s + s.write_mb_s,
            SortKey::Iops => s.iops,
            SortKey::Net => s.rx_mb_s + s.tx_mb_s,
            SortKey::Cpu => s.cpu,
        }
    }
}

/// Applies the keys pressed since the last call to `screen`; true when the user asked to
/// leave. Never blocks: the terminal is polled with a zero timeout, once per redraw tick. The
/// keys of `top` and of `bench --watch`'s node table.
pub(crate) fn handle_keys(screen: &mut Screen) -> bool {
    while term_event::poll(std::time::Duration::ZERO).unwrap_or(false) {
        let Ok(term_event::Event::Key(key)) = term_event::read() else { continue };
        if screen.key(key) {
            return true;
        }
    }
    false
}

/// Everything on the screen.
#[derive(Debug, Clone)]
pub(crate) struct Screen {
    pub title: String,
    pub rows: Vec<NodeRow>,
    pub sort: SortKey,
    pub reverse: bool,
    /// The time of the newest sample shown.
    pub clock: String,
    /// The node whose processes the panel shows; `None`: no panel (`top` without
    /// `--processes`, `bench --watch`).
    pub selected: Option<String>,
}

impl Screen {
    pub(crate) fn row_mut(&mut self, name: &str) -> Option<&mut NodeRow> {
        self.rows.iter_mut().find(|r| r.name == name)
    }

    /// One key: `s` sorts by the next column, `r` reverses the order; true for `q`, Esc and
    /// Ctrl-C, which leave. Releases and repeats (terminals that report them) are ignored.
    fn key(&mut self, key: KeyEvent) -> bool {
        if key.kind != KeyEventKind::Press {
            return false;
        }
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return true,
            // Raw mode turns Ctrl-C into a key press instead of SIGINT.
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return true,
            KeyCode::Char('s') => self.sort = self.sort.next(),
            KeyCode::Char('r') => self.reverse = !self.reverse,
            KeyCode::Up | KeyCode::Char('k') => self.select(-1),
            KeyCode::Down | KeyCode::Char('j') => self.select(1),
            _ => {}
        }
        false
    }

    /// Moves the processes panel's node `by` rows in display order (nothing without a panel).
    fn select(&mut self, by: isize) {
        let Some(selected) = &self.selected else { return };
        let names: Vec<String> = self.sorted().iter().map(|r| r.name.clone()).collect();
        let Some(at) = names.iter().position(|n| n == selected) else { return };
        let to = at.saturating_add_signed(by).min(names.len().saturating_sub(1));
        self.selected = Some(names[to].clone());
    }

    /// Rows in display order. Biggest first for numbers; names A–Z; `reverse` flips either.
    fn sorted(&self) -> Vec<&NodeRow> {
        let mut rows: Vec<&NodeRow> = self.rows.iter().collect();
        match self.sort {
            SortKey::Name => rows.sort_by(|a, b| a.name.cmp(&b.name)),
            key => rows.sort_by(|a, b| key.value(b).total_cmp(&key.value(a)).then(a.name.cmp(&b.name))),
        }
        if self.reverse {
            rows.reverse();
        }
        rows
    }

    fn totals(&self) -> Summary {
        let up: Vec<Summary> =
            self.rows.iter().filter(|r| r.down.is_none()).filter_map(|r| r.latest).collect();
        let mut t = Summary::default();
        for s in &up {
            t.read_mb_s += s.read_mb_s;
            t.write_mb_s += s.write_mb_s;
            t.iops += s.iops;
            t.rx_mb_s += s.rx_mb_s;
            t.tx_mb_s += s.tx_mb_s;
            t.util = t.util.max(s.util);
        }
        // Latency and utilisation do not add up across nodes: weighted mean and mean.
        let ios: f64 = up.iter().map(|s| s.iops).sum();
        t.await_ms = if ios > 0.0 { up.iter().map(|s| s.await_ms * s.iops).sum::<f64>() / ios } else { 0.0 };
        let n = up.len().max(1) as f64;
        t.cpu = up.iter().map(|s| s.cpu).sum::<f64>() / n;
        t.mem = up.iter().map(|s| s.mem).sum::<f64>() / n;
        t
    }
}

const HEADERS: [&str; 13] = [
    "NODE", "ROLES", "STATE", "RD MB/s", "WR MB/s", "IOPS", "AWAIT ms", "%UTIL", "RX MB/s", "TX MB/s",
    "CPU%", "MEM%", "",
];

fn numbers(s: &Summary) -> [String; 9] {
    [
        format!("{:.1}", s.read_mb_s),
        format!("{:.1}", s.write_mb_s),
        format!("{:.0}", s.iops),
        format!("{:.2}", s.await_ms),
        format!("{:.1}", s.util),
        format!("{:.1}", s.rx_mb_s),
        format!("{:.1}", s.tx_mb_s),
        format!("{:.1}", s.cpu),
        format!("{:.1}", s.mem),
    ]
}

/// Renders the screen into `frame`.
pub(crate) fn draw(frame: &mut Frame<'_>, screen: &Screen) {
    draw_in(frame, frame.area(), screen);
    keep_printable(frame);
}

/// Takes out of every cell of `frame` what a terminal would obey rather than show. ratatui
/// leaves out control characters itself, but not the Unicode line separators or the
/// bidirectional embeddings, overrides and isolates (format characters, no width of their
/// own, so ratatui joins them to the cell before): a name from a node (a process, a device, a
/// brick, an error) carrying U+202E would reverse the rest of the line on the screen. The last
/// thing each draw does, so no text reaches the terminal without passing here.
pub(crate) fn keep_printable(frame: &mut Frame<'_>) {
    for cell in &mut frame.buffer_mut().content {
        if cell.symbol().contains(crate::output::needs_escape) {
            let kept: String = cell.symbol().chars().filter(|&c| !crate::output::needs_escape(c)).collect();
            cell.set_symbol(if kept.is_empty() { " " } else { &kept });
        }
    }
}

/// Renders the screen into `area` of `frame` (`bench --watch` puts its own panel above).
pub(crate) fn draw_in(frame: &mut Frame<'_>, area: Rect, screen: &Screen) {
    let up = screen.rows.iter().filter(|r| r.down.is_none() && r.latest.is_some()).count();
    let [head, body, foot] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(3), Constraint::Length(1)]).areas(area);
    let title = format!(
        "{}  {} nodes, {} up, {} down  {}",
        screen.title,
        screen.rows.len(),
        up,
        screen.rows.iter().filter(|r| r.down.is_some()).count(),
        screen.clock
    );
    frame.render_widget(
        Paragraph::new(Line::from(title).style(Style::new().add_modifier(Modifier::BOLD))),
        head,
    );
    let help = format!(
        "sorted by {}{}   s: sort   r: reverse   {}q: quit   sparkline: disk MB/s, last {HISTORY} s",
        screen.sort.label(),
        if screen.reverse { " (reversed)" } else { "" },
        if screen.selected.is_some() { "↑/↓: node   " } else { "" }
    );
    // The processes panel takes the bottom of the body, as many lines as the node has
    // processes (at least a few, so it does not jump about), the table keeps the rest.
    let (body, panel) = match &screen.selected {
        Some(name) => {
            let shown = screen.rows.iter().find(|r| &r.name == name).map_or(0, |r| r.processes.len());
            let height = (shown.max(3) as u16 + 3).min(body.height / 2);
            let [table, panel] =
                Layout::vertical([Constraint::Min(3), Constraint::Length(height)]).areas(body);
            (table, Some((name, panel)))
        }
        None => (body, None),
    };
    if let Some((name, panel)) = panel {
        draw_processes(frame, panel, name, screen.rows.iter().find(|r| &r.name == name));
    }
    frame.render_widget(Paragraph::new(help).style(Style::new().fg(Color::DarkGray)), foot);
    // The file system's own view, when a server reports one: every target and brick of the
    // cluster in one table, as ltop shows a file system's OSTs and MDTs, under the nodes'.
    let targets: usize = screen
        .rows
        .iter()
        .map(|r| {
            let clients: usize =
                r.targets.iter().map(|t| t.active_clients(crate::view::CLIENTS_SHOWN).count()).sum();
            r.targets.len() + clients + r.bricks.len() + usize::from(r.lnet.is_some())
        })
        .sum();
    let body = if targets > 0 {
        let height = (targets as u16 + 3).min(body.height / 2);
        let [table, panel] = Layout::vertical([Constraint::Min(3), Constraint::Length(height)]).areas(body);
        draw_targets(frame, panel, &screen.rows);
        table
    } else {
        body
    };

    let rows = screen.sorted();
    let mut table_rows: Vec<Row<'_>> = Vec::with_capacity(rows.len() + 1);
    for row in &rows {
        let selected = screen.selected.as_ref() == Some(&row.name);
        let mut cells: Vec<Cell<'_>> = vec![
            Cell::from(if selected { format!("▶{}", row.name) } else { row.name.clone() }),
            Cell::from(row.roles.clone()),
        ];
        let style = match (&row.down, row.latest) {
            (Some(reason), _) => {
                // The reason goes in the wide last column, where the sparkline would be.
                cells.push(Cell::from("DOWN"));
                cells.extend(std::iter::repeat_n(Cell::from(""), 9));
                cells.push(Cell::from(reason.clone()));
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
            }
            (None, Some(s)) => {
                cells.push(Cell::from("up"));
                cells.extend(numbers(&s).into_iter().map(Cell::from));
                Style::new()
            }
            (None, None) => {
                cells.push(Cell::from("…"));
                Style::new().fg(Color::DarkGray)
            }
        };
        table_rows.push(Row::new(cells).style(style));
    }
    let mut total = vec![Cell::from("TOTAL"), Cell::from(""), Cell::from(format!("{up} up"))];
    total.extend(numbers(&screen.totals()).into_iter().map(Cell::from));
    table_rows.push(Row::new(total).style(Style::new().add_modifier(Modifier::BOLD)));

    let widths = [
        Constraint::Length(14),
        Constraint::Length(10),
        Constraint::Length(6),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(6),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Fill(1),
    ];
    let table = Table::new(table_rows, widths)
        .header(Row::new(HEADERS).style(Style::new().add_modifier(Modifier::UNDERLINED)))
        .block(Block::bordered().title(" nodes "))
        .column_spacing(1);
    frame.render_widget(table, body);

    // Sparklines go in the last column, one per node row: the table's border, then the header.
    let spark_x = body.x + 1 + widths_total(&widths[..12]) + 12;
    let width = body.right().saturating_sub(spark_x + 1);
    for (i, row) in rows.iter().enumerate() {
        let y = body.y + 2 + i as u16;
        if y >= body.bottom().saturating_sub(2) || width == 0 {
            break;
        }
        if row.down.is_some() {
            continue;
        }
        let data: Vec<u64> = row.history.iter().copied().collect();
        let area = Rect { x: spark_x, y, width: width.min(HISTORY as u16), height: 1 };
        // At least 1 MB/s full scale, so an idle node draws empty bars rather than full ones.
        let max = data.iter().copied().max().unwrap_or(0).max(1);
        frame.render_widget(
            Sparkline::default().data(&data).max(max).style(Style::new().fg(Color::Green)),
            area,
        );
    }
}

/// The selected node's processes, busiest CPU first (as the agent ordered them).
fn draw_processes(frame: &mut Frame<'_>, area: Rect, name: &str, row: Option<&NodeRow>) {
    let processes = row.map_or(&[][..], |r| &r.processes[..]);
    let rows = processes.iter().map(|p| {
        Row::new([
            format!("{}", p.pid),
            if p.kernel { format!("[{}]", p.name) } else { p.name.clone() },
            format!("{:.1}", p.cpu),
            format!("{:.1}", p.kb_rd_s / 1024.0),
            format!("{:.1}", p.kb_wr_s / 1024.0),
        ])
    });
    let widths = [
        Constraint::Length(8),
        Constraint::Length(18),
        Constraint::Length(7),
        Constraint::Length(8),
        Constraint::Length(8),
    ];
    let title = if processes.is_empty() {
        format!(" processes on {name}: none busy yet ")
    } else {
        format!(" processes on {name}: top by CPU and by I/O ([name]: kernel thread) ")
    };
    let table = Table::new(rows, widths)
        .header(
            Row::new(["PID", "COMMAND", "%CPU", "RD MB/s", "WR MB/s"])
                .style(Style::new().add_modifier(Modifier::UNDERLINED)),
        )
        .block(Block::bordered().title(title))
        .column_spacing(1);
    frame.render_widget(table, area);
}

/// Every node's Lustre targets and GlusterFS bricks, as ltop's table: MB/s of 10^6 bytes,
/// operations a second, clients, locks, space and inodes in use, a recovery under way; a
/// brick's bytes through its process's system calls, `down` while its process is gone; a
/// Lustre node's LNet (received as read, sent as written, messages a second both ways, drops).
fn draw_targets(frame: &mut Frame<'_>, area: Rect, rows: &[NodeRow]) {
    let figure = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"));
    let count = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    let mut lines = Vec::new();
    for row in rows {
        for t in &row.targets {
            lines.push(Row::new([
                t.name.clone(),
                t.component.clone(),
                row.name.clone(),
                format!("{:.1}", t.read_bytes_s / 1e6),
                format!("{:.1}", t.write_bytes_s / 1e6),
                format!("{:.0}", t.ops_s),
                count(t.exports),
                count(t.locks),
                figure(t.space_used_pct),
                figure(t.inodes_used_pct),
                t.recovery.clone().unwrap_or_default(),
            ]));
            // Its busiest clients that moved, under it.
            for c in t.active_clients(crate::view::CLIENTS_SHOWN) {
                lines.push(Row::new([
                    format!("  {}", c.nid),
                    "client".to_owned(),
                    row.name.clone(),
                    format!("{:.1}", c.read_bytes_s / 1e6),
                    format!("{:.1}", c.write_bytes_s / 1e6),
                    format!("{:.0}", c.ops_s),
                    "-".to_owned(),
                    "-".to_owned(),
                    "-".to_owned(),
                    "-".to_owned(),
                    String::new(),
                ]));
            }
        }
        if let Some(l) = &row.lnet {
            lines.push(Row::new([
                "LNet".to_owned(),
                "lnet".to_owned(),
                row.name.clone(),
                format!("{:.1}", l.recv_bytes_s / 1e6),
                format!("{:.1}", l.send_bytes_s / 1e6),
                format!("{:.0}", l.recv_msgs_s + l.send_msgs_s),
                "-".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
                if l.drop_msgs_s > 0.0 { format!("{:.0} drops/s", l.drop_msgs_s) } else { String::new() },
            ]));
        }
        for b in &row.bricks {
            lines.push(Row::new([
                format!("{}:{}", b.volume, b.path),
                "brick".to_owned(),
                row.name.clone(),
                format!("{:.1}", b.rchar_s / 1e6),
                format!("{:.1}", b.wchar_s / 1e6),
                "-".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
                if b.up { String::new() } else { "down".to_owned() },
            ]));
        }
    }
    let widths = [
        Constraint::Length(24),
        Constraint::Length(6),
        Constraint::Length(12),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Min(8),
    ];
    let table = Table::new(lines, widths)
        .header(
            Row::new([
                "TARGET", "KIND", "NODE", "RD MB/s", "WR MB/s", "IOPS", "EXPORTS", "LOCKS", "%SPACE",
                "%INODES", "",
            ])
            .style(Style::new().add_modifier(Modifier::UNDERLINED)),
        )
        .block(Block::bordered().title(" file system: targets and bricks "))
        .column_spacing(1);
    frame.render_widget(table, area);
}

fn widths_total(widths: &[Constraint]) -> u16 {
    widths.iter().map(|c| if let Constraint::Length(n) = c { *n } else { 0 }).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn summary(disk: f64, cpu: f64) -> Summary {
        Summary {
            read_mb_s: disk,
            write_mb_s: 0.0,
            iops: disk * 10.0,
            await_ms: 1.5,
            util: 40.0,
            rx_mb_s: 2.0,
            tx_mb_s: 1.0,
            cpu,
            mem: 12.5,
        }
    }

    fn render(screen: &Screen) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(160, 12)).unwrap();
        terminal.draw(|f| draw(f, screen)).unwrap();
        let buffer = terminal.backend().buffer();
        (0..buffer.area.height)
            .map(|y| (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_owned()).collect::<String>())
            .collect()
    }

    #[test]
    fn rows_totals_sorting_and_a_down_node() {
        let mut a = NodeRow::new("oss00", "oss");
        let mut b = NodeRow::new("oss01", "oss");
        let mut c = NodeRow::new("client00", "client");
        for i in 0..70 {
            a.record(summary(100.0 + f64::from(i), 50.0));
        }
        b.record(summary(300.0, 10.0));
        c.record(summary(5.0, 90.0));
        c.down = Some("no sample for 2.5s".into());
        let mut screen = Screen {
            title: "cluster lustrefs".into(),
            rows: vec![a, b, c],
            sort: SortKey::Disk,
            reverse: false,
            clock: "04:05:06".into(),
            selected: None,
        };
        let lines = render(&screen);
        let text = lines.join("\n");
        assert!(lines[0].contains("3 nodes, 2 up, 1 down"), "{text}");
        let row_of = |name: &str| {
            lines.iter().position(|l| l.contains(name)).unwrap_or_else(|| panic!("{name} missing:\n{text}"))
        };
        // By disk MB/s, biggest first: oss01 (300), oss00 (169).
        assert!(row_of("oss01") < row_of("oss00"), "{text}");
        assert!(
            lines[row_of("client00")].contains("DOWN") && lines[row_of("client00")].contains("no sample"),
            "{text}"
        );
        // Totals count only the nodes that are up: 300 + 169 MB/s.
        assert!(lines[row_of("TOTAL")].contains("469.0"), "{text}");
        // The sparkline holds the last 60 seconds only.
        assert_eq!(screen.rows[0].history.len(), HISTORY);
        assert!(lines[row_of("oss00")].chars().any(|ch| "▁▂▃▄▅▆▇█".contains(ch)), "{text}");

        screen.sort = SortKey::Cpu;
        let lines = render(&screen);
        let row_of = |name: &str| lines.iter().position(|l| l.contains(name)).unwrap();
        assert!(row_of("oss00") < row_of("oss01"), "CPU 50 before 10");
        screen.sort = SortKey::Name;
        screen.reverse = true;
        let lines = render(&screen);
        let row_of = |name: &str| lines.iter().position(|l| l.contains(name)).unwrap();
        assert!(row_of("oss01") < row_of("oss00") && row_of("oss00") < row_of("client00"));
    }

    #[test]
    fn the_selected_nodes_processes_in_a_panel_and_arrows_move_the_selection() {
        let mut a = NodeRow::new("oss00", "oss");
        let mut b = NodeRow::new("oss01", "oss");
        a.record(summary(100.0, 50.0));
        b.record(summary(300.0, 10.0));
        a.processes = vec![
            ProcessLine {
                pid: 4242,
                name: "glusterfsd".into(),
                cpu: 87.5,
                kb_rd_s: 0.0,
                kb_wr_s: 204_800.0,
                kernel: false,
            },
            ProcessLine {
                pid: 77,
                name: "ll_ost_io00_001".into(),
                cpu: 3.0,
                kb_rd_s: 0.0,
                kb_wr_s: 0.0,
                kernel: true,
            },
        ];
        let mut screen = Screen {
            title: "cluster lustrefs".into(),
            rows: vec![a, b],
            sort: SortKey::Name,
            reverse: false,
            clock: String::new(),
            selected: Some("oss00".into()),
        };
        let render_tall = |screen: &Screen| {
            let mut terminal = Terminal::new(TestBackend::new(160, 20)).unwrap();
            terminal.draw(|f| draw(f, screen)).unwrap();
            let buffer = terminal.backend().buffer().clone();
            (0..buffer.area.height)
                .map(|y| {
                    (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_owned()).collect::<String>()
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let text = render_tall(&screen);
        assert!(text.contains("processes on oss00"), "{text}");
        assert!(text.contains("▶oss00"), "{text}");
        let glusterfsd = text.lines().find(|l| l.contains("glusterfsd")).unwrap_or_else(|| panic!("{text}"));
        assert!(
            glusterfsd.contains("4242") && glusterfsd.contains("87.5") && glusterfsd.contains("200.0"),
            "{text}"
        );
        assert!(text.contains("[ll_ost_io00_001]"), "a kernel thread in brackets: {text}");

        let press = |code| KeyEvent::new(code, KeyModifiers::NONE);
        assert!(!screen.key(press(KeyCode::Down)));
        assert_eq!(screen.selected.as_deref(), Some("oss01"));
        assert!(!screen.key(press(KeyCode::Down)), "the last row stays selected");
        assert_eq!(screen.selected.as_deref(), Some("oss01"));
        let text = render_tall(&screen);
        assert!(text.contains("processes on oss01: none busy yet"), "{text}");
        assert!(!screen.key(press(KeyCode::Char('k'))));
        assert_eq!(screen.selected.as_deref(), Some("oss00"));

        // Without --processes there is no panel, and arrows select nothing.
        screen.selected = None;
        assert!(!render_tall(&screen).contains("processes on"));
        assert!(!screen.key(press(KeyCode::Down)));
        assert_eq!(screen.selected, None);
    }

    /// A Lustre server's targets and LNet and a GlusterFS server's bricks, every one in one
    /// panel with its node; none, no panel.
    #[test]
    fn the_file_systems_targets_in_a_panel() {
        let mut oss = NodeRow::new("oss00", "server");
        oss.record(summary(10.0, 5.0));
        oss.targets = vec![TargetRates {
            component: "ost".into(),
            exports: Some(4),
            locks: Some(12),
            name: "fs-OST0000".into(),
            ops_s: 100.0,
            write_bytes_s: 419_430_400.0,
            space_used_pct: Some(2.5),
            recovery: Some("RECOVERING".into()),
            clients: vec![pvfs_metrics::lustre::node::ClientRates {
                nid: "192.168.0.100@o2ib".into(),
                write_bytes_s: 251_658_240.0,
                ops_s: 60.0,
                ..Default::default()
            }],
            ..TargetRates::default()
        }];
        oss.lnet = Some(pvfs_metrics::lustre::node::LnetRates {
            recv_bytes_s: 419_430_400.0,
            recv_msgs_s: 400.0,
            send_msgs_s: 400.0,
            drop_msgs_s: 3.0,
            ..Default::default()
        });
        let mut gfs = NodeRow::new("gfs2", "server");
        gfs.record(summary(1.0, 1.0));
        gfs.bricks = vec![BrickRates {
            path: "/bricks/b1".into(),
            volume: "gv0".into(),
            up: false,
            ..BrickRates::default()
        }];
        let screen = Screen {
            title: "t".into(),
            rows: vec![oss, gfs],
            sort: SortKey::Name,
            reverse: false,
            clock: String::new(),
            selected: None,
        };
        let mut terminal = Terminal::new(TestBackend::new(160, 20)).unwrap();
        terminal.draw(|f| draw(f, &screen)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        let text: Vec<String> = (0..buffer.area.height)
            .map(|y| (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_owned()).collect())
            .collect();
        let all = text.join("\n");
        assert!(all.contains("file system: targets and bricks"), "{all}");
        let ost = text.iter().find(|l| l.contains("fs-OST0000")).unwrap_or_else(|| panic!("{all}"));
        for cell in ["ost", "oss00", "419.4", "100", "12", "2.5", "RECOVERING"] {
            assert!(ost.contains(cell), "{cell} in {ost}");
        }
        let client =
            text.iter().find(|l| l.contains("192.168.0.100@o2ib")).unwrap_or_else(|| panic!("{all}"));
        for cell in ["client", "oss00", "251.7", "60"] {
            assert!(client.contains(cell), "{cell} in {client}");
        }
        let lnet = text.iter().find(|l| l.contains("LNet")).unwrap_or_else(|| panic!("{all}"));
        for cell in ["lnet", "oss00", "419.4", "800", "3 drops/s"] {
            assert!(lnet.contains(cell), "{cell} in {lnet}");
        }
        let brick = text.iter().find(|l| l.contains("gv0:/bricks/b1")).unwrap_or_else(|| panic!("{all}"));
        assert!(brick.contains("brick") && brick.contains("gfs2") && brick.contains("down"), "{brick}");
        let plain = Screen { rows: vec![NodeRow::new("n1", "client")], ..screen };
        let mut terminal = Terminal::new(TestBackend::new(160, 20)).unwrap();
        terminal.draw(|f| draw(f, &plain)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        let text: String = (0..buffer.area.height)
            .flat_map(|y| (0..buffer.area.width).map(move |x| (x, y)))
            .map(|(x, y)| buffer[(x, y)].symbol().to_owned())
            .collect();
        assert!(!text.contains("file system:"), "no panel without targets");
    }

    #[test]
    fn keys_sort_reverse_and_leave() {
        let mut screen = Screen {
            title: String::new(),
            rows: Vec::new(),
            sort: SortKey::Name,
            reverse: false,
            clock: String::new(),
            selected: None,
        };
        let press = |code| KeyEvent::new(code, KeyModifiers::NONE);
        assert!(!screen.key(press(KeyCode::Char('s'))));
        assert_eq!(screen.sort, SortKey::Disk);
        assert!(!screen.key(press(KeyCode::Char('r'))));
        assert!(screen.reverse);
        let mut release = press(KeyCode::Char('r'));
        release.kind = KeyEventKind::Release;
        assert!(!screen.key(release));
        assert!(screen.reverse, "a release is not a second press");
        assert!(!screen.key(press(KeyCode::Char('c'))), "a plain c is nothing");
        assert!(!screen.key(press(KeyCode::Char('x'))));
        assert_eq!((screen.sort, screen.reverse), (SortKey::Disk, true));
        assert!(screen.key(press(KeyCode::Char('q'))));
        assert!(screen.key(press(KeyCode::Esc)));
        assert!(screen.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)));
    }

    /// What a node names (a process, an error) reaches the terminal without the characters
    /// that would make it reorder or break the screen's lines, and still reads as sent.
    #[test]
    fn names_from_the_nodes_reach_the_screen_without_bidi_overrides_or_separators() {
        let mut a = NodeRow::new("oss00", "oss");
        a.record(summary(100.0, 50.0));
        a.processes = vec![ProcessLine {
            pid: 4242,
            name: "\u{202e}dsfsretsulg\u{2066}x\u{2069}".into(),
            cpu: 87.5,
            kb_rd_s: 0.0,
            kb_wr_s: 1.0,
            kernel: false,
        }];
        let mut b = NodeRow::new("oss01", "oss");
        b.down = Some("agent says: \u{202b}refused\u{202c}\u{2028}next".into());
        let screen = Screen {
            title: "cluster \u{202d}lustrefs".into(),
            rows: vec![a, b],
            sort: SortKey::Name,
            reverse: false,
            clock: String::new(),
            selected: Some("oss00".into()),
        };
        let mut terminal = Terminal::new(TestBackend::new(160, 20)).unwrap();
        terminal.draw(|f| draw(f, &screen)).unwrap();
        let buffer = terminal.backend().buffer();
        let obeyed: Vec<_> = buffer
            .content
            .iter()
            .filter(|cell| cell.symbol().contains(crate::output::needs_escape))
            .map(|cell| cell.symbol().escape_unicode().to_string())
            .collect();
        assert!(obeyed.is_empty(), "cells a terminal would obey: {obeyed:?}");
        let text = (0..buffer.area.height)
            .map(|y| (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_owned()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n");
        for shown in ["dsfsretsulgx", "refused", "cluster lustrefs"] {
            assert!(text.contains(shown), "{shown:?} is not on the screen:\n{text}");
        }
    }
}
