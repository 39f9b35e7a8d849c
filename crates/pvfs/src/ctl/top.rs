//! `pvfsctl top`: every node's rates, second by second, from the agents' sample streams.
//!
//! Rates need two consecutive samples of the same agent process, so each node's previous
//! sample is kept; after a gap or an agent restart the next sample is a new baseline. With a
//! cursor file, a restarted `top` asks each agent for the samples after the last one it
//! printed (and the one before, as the baseline), so nothing is skipped or printed twice.

use super::tui::{self, NodeRow, Screen, SortKey, Summary};
use crate::cli::TopArgs;
use crate::view::table;
use crate::{exit, output};
use anyhow::Context;
use pvfs_coord::stream::{Cursor, Start, StreamEvent, follow_cluster};
use pvfs_host::local_file::{self, Cap};
use pvfs_metrics::line::{ProcessLine, SecondLine, time_text};
use pvfs_metrics::processes::Process;
use pvfs_metrics::rates::{RateTracker, Rates};
use pvfs_metrics::ring::Stamped;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// With `--count`, how long past the expected end to wait for slow or missing nodes.
const COUNT_GRACE: Duration = Duration::from_secs(15);

/// Per node: how many samples were shown, and where to resume.
#[derive(Default)]
struct NodeState {
    shown: u64,
    down: bool,
    /// The cursor to save: the last sample shown.
    printed: Option<Cursor>,
}

pub(crate) async fn run(args: TopArgs) -> anyhow::Result<u8> {
    let cluster = pvfs_config::load(&args.cluster)?;
    if let Some(node) = &args.node
        && !cluster.nodes.iter().any(|n| &n.name == node)
    {
        anyhow::bail!("--node {node}: {} has no such node", args.cluster.display());
    }
    let dialer = super::dialer(&cluster, &args.connect)?;
    let saved = match &args.cursor_file {
        Some(path) => load_cursors(path)?,
        None => HashMap::new(),
    };
    // Ask for one sample before the last one printed: it is the baseline for the next rates.
    let requested: HashMap<String, Cursor> = saved
        .iter()
        .map(|(node, c)| (node.clone(), Cursor { epoch: c.epoch, seq: c.seq.saturating_sub(1) }))
        .collect();
    // Nodes without a cursor all start with the same second: the next one after now (each
    // agent sends the sample before it as the baseline). However late each connection is
    // made, every node then shows the same seconds.
    // SIGINT (Ctrl-C when not full-screen) or SIGTERM ends `top` as `q` does: the terminal
    // restored and the cursors saved. Following stops on a token of its own, so the stream's
    // end is never mistaken for a stop asked for.
    let stop = crate::shutdown::Shutdown::on_signals()?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let first_second = (now.as_secs() + 1) * 1_000_000_000;
    let shutdown = CancellationToken::new();
    let events = follow_cluster(
        &cluster,
        &dialer,
        &requested,
        Start::Since { unix_ns: first_second },
        // 0 unless asked: a plain `top` leaves the agents' cost as it is.
        args.processes.unwrap_or(0),
        shutdown.clone(),
    );
    // Full screen when a person is watching; lines otherwise (pipes, --json, --count).
    let sink = if !args.json && args.count.is_none() && std::io::stdout().is_terminal() {
        let selected = args.processes.map(|_| match &args.node {
            Some(node) => node.clone(),
            None => cluster.nodes.first().map(|n| n.name.clone()).unwrap_or_default(),
        });
        Sink::Screen(Box::new(FullScreen::start(&cluster, selected)?))
    } else {
        Sink::Lines { json: args.json, processes: args.processes.is_some() }
    };
    let mut top = Top::new(&cluster, &saved, first_second, args.count, sink);
    let outcome = top.follow(events, args.cursor_file.as_deref(), &stop).await?;
    shutdown.cancel();
    // The terminal is restored before the last cursors are written (and any error shown).
    let Top { nodes, sink, .. } = top;
    drop(sink);
    save_cursors(args.cursor_file.as_deref(), &nodes)?;
    Ok(outcome)
}

/// A running `top`: what each node has shown, and where it shows it.
struct Top {
    nodes: BTreeMap<String, NodeState>,
    /// Each node's previous sample, the baseline of its next rates.
    rates: RateTracker,
    sink: Sink,
    /// Wall-clock ns of the first second to show when starting without a cursor.
    first_second: u64,
    /// `--count`: how many seconds each node shows before `top` ends.
    count: Option<u64>,
    /// Samples were shown since the cursors were last saved.
    dirty: bool,
}

impl Top {
    fn new(
        cluster: &pvfs_config::Cluster,
        saved: &HashMap<String, Cursor>,
        first_second: u64,
        count: Option<u64>,
        sink: Sink,
    ) -> Top {
        let nodes = cluster
            .nodes
            .iter()
            .map(|n| {
                (n.name.clone(), NodeState { printed: saved.get(&n.name).copied(), ..NodeState::default() })
            })
            .collect();
        Top { nodes, rates: RateTracker::new(), sink, first_second, count, dirty: false }
    }

    /// Shows the cluster's events until the user leaves (a key or a stop signal), the stream
    /// ends, or `--count` is reached (or its deadline passes); returns the exit code. Cursors
    /// are saved to `cursor_file` once a second while samples are shown.
    async fn follow(
        &mut self,
        mut events: mpsc::Receiver<StreamEvent>,
        cursor_file: Option<&Path>,
        stop: &crate::shutdown::Shutdown,
    ) -> anyhow::Result<u8> {
        let deadline = self.count.map(|n| tokio::time::Instant::now() + Duration::from_secs(n) + COUNT_GRACE);
        let mut flush = tokio::time::interval(Duration::from_secs(1));
        let mut redraw = tokio::time::interval(Duration::from_millis(250));
        loop {
            let event = tokio::select! {
                event = events.recv() => event,
                _ = redraw.tick() => {
                    if let Sink::Screen(screen) = &mut self.sink {
                        if tui::handle_keys(&mut screen.screen) {
                            return Ok(exit::OK);
                        }
                        screen.draw()?;
                    }
                    continue;
                }
                _ = flush.tick() => {
                    if self.dirty {
                        save_cursors(cursor_file, &self.nodes)?;
                        self.dirty = false;
                    }
                    continue;
                }
                () = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => {
                    let short: Vec<&str> = self.nodes.iter().filter(|(_, s)| s.shown < self.count.unwrap_or(0)).map(|(n, _)| n.as_str()).collect();
                    output::note(&format!("stopped at the --count deadline; short of samples: {}", short.join(", ")));
                    return Ok(exit::FAILURES);
                }
                () = stop.cancelled() => return Ok(exit::OK),
            };
            let Some(event) = event else { return Ok(exit::FAILURES) };
            self.apply(event)?;
            if let Some(outcome) = self.counted() {
                return Ok(outcome);
            }
        }
    }

    /// Shows one event of the cluster's stream.
    fn apply(&mut self, event: StreamEvent) -> anyhow::Result<()> {
        match event {
            StreamEvent::Sample { node, stamped, processes } => self.sample(&node, *stamped, &processes)?,
            StreamEvent::Gap { node, from, to } => {
                self.rates.forget(&node);
                self.sink.status(
                    &node,
                    json!({"gap": {"from_seq": from, "to_seq": to}}),
                    &format!("samples {from}..{to} are no longer held by the agent"),
                )?;
            }
            StreamEvent::Restarted { node } => {
                self.rates.forget(&node);
                self.sink.status(
                    &node,
                    json!({"restarted": true}),
                    "agent restarted; its samples since the last one shown are lost",
                )?;
            }
            StreamEvent::Down { node, error } => {
                if let Some(state) = self.nodes.get_mut(&node) {
                    state.down = true;
                }
                self.rates.forget(&node);
                self.sink.down(&node, &error.message);
                self.sink.status(
                    &node,
                    json!({"down": true, "error": error.message, "error_kind": error.kind.as_str()}),
                    &format!("down: {error}"),
                )?;
            }
            StreamEvent::Up { node } => {
                self.sink.status(&node, json!({"up": true}), "up")?;
            }
        }
        Ok(())
    }

    /// A node's sample: shown as rates when it follows the node's previous one and was not
    /// shown before; always the baseline of the next.
    fn sample(&mut self, node: &str, stamped: Stamped, processes: &[Process]) -> anyhow::Result<()> {
        let Some(state) = self.nodes.get_mut(node) else { return Ok(()) };
        state.down = false;
        // Already shown before a restart of `top`, or before the first second shown (a
        // fresh start): only the baseline for what follows.
        let seen = match state.printed {
            Some(c) => c.epoch == stamped.epoch && stamped.seq <= c.seq,
            None => stamped.sample.time_unix_ns < self.first_second,
        };
        // With --count, a node that has shown its count waits for the others silently.
        let done = self.count.is_some_and(|n| state.shown >= n);
        let (rates, stamped) = self.rates.next(node, stamped);
        if let Some(rates) = rates
            && !seen
            && !done
        {
            let devices = stamped.sample.visible_devices(false);
            let processes: Vec<ProcessLine> = processes.iter().map(ProcessLine::from).collect();
            self.sink.sample(node, stamped.seq, &rates, &devices, &processes)?;
            state.shown += 1;
            state.printed = Some(Cursor { epoch: stamped.epoch, seq: stamped.seq });
            self.dirty = true;
        }
        Ok(())
    }

    /// With `--count`, the exit code once every node has shown its count (or is down after
    /// showing something).
    fn counted(&self) -> Option<u8> {
        let count = self.count?;
        self.nodes
            .values()
            .all(|s| s.shown >= count || (s.down && s.shown > 0))
            .then(|| if self.nodes.values().any(|s| s.down) { exit::FAILURES } else { exit::OK })
    }
}

/// Where `top` shows what it gets.
enum Sink {
    /// JSON objects or iostat-style tables, one after another; with `processes`, each with
    /// the node's busiest processes.
    Lines { json: bool, processes: bool },
    /// The full-screen view.
    Screen(Box<FullScreen>),
}

impl Sink {
    fn sample(
        &mut self,
        node: &str,
        seq: u64,
        rates: &Rates,
        devices: &[String],
        processes: &[ProcessLine],
    ) -> anyhow::Result<()> {
        match self {
            Sink::Lines { json, processes: asked } => {
                show(node, seq, rates, devices, asked.then_some(processes), *json)
            }
            Sink::Screen(screen) => {
                if let Some(row) = screen.screen.row_mut(node) {
                    row.record(Summary::of(rates, devices));
                    row.processes = processes.to_vec();
                    row.targets = rates.lustre.clone();
                    row.bricks = rates.bricks.clone();
                    row.lnet = rates.lnet;
                }
                screen.screen.clock = time_text(rates.time_unix_ns);
                Ok(())
            }
        }
    }

    fn down(&mut self, node: &str, reason: &str) {
        if let Sink::Screen(screen) = self
            && let Some(row) = screen.screen.row_mut(node)
        {
            row.down = Some(reason.to_owned());
        }
    }

    /// A node's change of state: a JSON line, or a line on stderr (nothing on the full screen,
    /// where the row shows it).
    fn status(&mut self, node: &str, fields: serde_json::Value, text: &str) -> anyhow::Result<()> {
        match self {
            Sink::Lines { json, .. } => status(node, *json, fields, text),
            Sink::Screen(_) => Ok(()),
        }
    }
}

/// The terminal in full-screen mode, restored when dropped (also on errors and panics:
/// `ratatui::init` installs a panic hook that restores it).
struct FullScreen {
    terminal: ratatui::DefaultTerminal,
    screen: Screen,
}

impl FullScreen {
    /// `selected`: the node whose processes the panel shows (`None`: no panel).
    fn start(cluster: &pvfs_config::Cluster, selected: Option<String>) -> anyhow::Result<FullScreen> {
        let rows = cluster
            .nodes
            .iter()
            .map(|n| NodeRow::new(&n.name, &n.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(",")))
            .collect();
        let screen = Screen {
            title: format!("pvfs top: {} cluster {:?}", cluster.kind, cluster.name),
            rows,
            sort: SortKey::Name,
            reverse: false,
            clock: String::new(),
            selected,
        };
        Ok(FullScreen { terminal: ratatui::init(), screen })
    }

    fn draw(&mut self) -> anyhow::Result<()> {
        let screen = &self.screen;
        self.terminal.draw(|frame| tui::draw(frame, screen))?;
        Ok(())
    }
}

impl Drop for FullScreen {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// One node's second; `processes` when asked for (then always present in JSON, `[]` when
/// none was busy).
fn show(
    node: &str,
    seq: u64,
    rates: &Rates,
    devices: &[String],
    processes: Option<&[ProcessLine]>,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        output::json(&SecondLine {
            node: Some(node.to_owned()),
            seq: Some(seq),
            processes: processes.map(<[ProcessLine]>::to_vec),
            ..SecondLine::of(rates, devices)
        })
    } else {
        let mut text = format!("== {node}\n{}", table(rates, devices));
        if let Some(processes) = processes {
            text += &crate::view::process_table(processes);
        }
        Ok(output::print(&text)?)
    }
}

/// A node's change of state: a JSON line, or a line on stderr.
fn status(node: &str, json: bool, fields: serde_json::Value, text: &str) -> anyhow::Result<()> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos() as u64;
    if json {
        let mut value = json!({"node": node, "time": time_text(now)});
        if let (Some(map), Some(extra)) = (value.as_object_mut(), fields.as_object()) {
            map.extend(extra.clone());
        }
        output::json(&value)
    } else {
        output::note(&format!("{} {node}: {text}", time_text(now)));
        Ok(())
    }
}

fn load_cursors(path: &Path) -> anyhow::Result<HashMap<String, Cursor>> {
    // A cursor is a node name and two numbers: even 100,000 nodes' are a few MiB.
    const CURSOR_FILE: Cap = Cap { what: "a cursor file", bytes: 64 << 20 };
    match local_file::read_to_string(path, CURSOR_FILE) {
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{} is not a pvfsctl cursor file", path.display())),
        Err(err) if err.is_not_found() => Ok(HashMap::new()),
        Err(err) => Err(err.into()),
    }
}

/// Writes the cursors atomically (a temp file renamed over the old one), so a crash leaves the
/// old cursors or the new ones, never half a file.
fn save_cursors(path: Option<&Path>, nodes: &BTreeMap<String, NodeState>) -> anyhow::Result<()> {
    let Some(path) = path else { return Ok(()) };
    let cursors: BTreeMap<&str, Cursor> =
        nodes.iter().filter_map(|(name, s)| s.printed.map(|c| (name.as_str(), c))).collect();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(&cursors)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))?;
    Ok(())
}
