//! `pvfsctl top`: every node's rates, second by second, from the agents' sample streams.
//!
//! Rates need two consecutive samples of the same agent process, so each node's previous
//! sample is kept; after a gap or an agent restart the next sample is a new baseline. With a
//! cursor file, a restarted `top` asks each agent for the samples after the last one it
//! printed (and the one before, as the baseline), so nothing is skipped or printed twice.

use super::tui::{self, NodeRow, Screen, SortKey, Summary};
use crate::cli::TopArgs;
use crate::view::{table, time_text, to_json, visible_devices};
use crate::{exit, output};
use anyhow::Context;
use pvfs_coord::stream::{Cursor, Event, Start, follow_cluster};
use pvfs_metrics::rates::Rates;
use pvfs_metrics::ring::Stamped;
use ratatui::crossterm::event::{self as term_event, KeyCode, KeyEventKind, KeyModifiers};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// With `--count`, how long past the expected end to wait for slow or missing nodes.
const COUNT_GRACE: Duration = Duration::from_secs(15);

/// Per node: the last sample (the baseline of the next rates) and how many were shown.
#[derive(Default)]
struct NodeState {
    prev: Option<Stamped>,
    shown: u64,
    down: bool,
    /// The cursor to save: the last sample shown.
    printed: Option<Cursor>,
}

pub(crate) async fn run(args: TopArgs) -> anyhow::Result<u8> {
    let cluster = pvfs_config::load(&args.cluster)?;
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
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let first_second = (now.as_secs() + 1) * 1_000_000_000;
    let shutdown = CancellationToken::new();
    let mut events = follow_cluster(
        &cluster,
        &dialer,
        &requested,
        Start::Since { unix_ns: first_second },
        shutdown.clone(),
    );
    let mut nodes: BTreeMap<String, NodeState> =
        cluster.nodes.iter().map(|n| (n.name.clone(), NodeState::default())).collect();
    for (name, state) in &mut nodes {
        state.printed = saved.get(name).copied();
    }

    let deadline = args.count.map(|n| tokio::time::Instant::now() + Duration::from_secs(n) + COUNT_GRACE);
    let mut flush = tokio::time::interval(Duration::from_secs(1));
    let mut dirty = false;
    // Full screen when a person is watching; lines otherwise (pipes, --json, --count).
    let mut sink = if !args.json && args.count.is_none() && std::io::stdout().is_terminal() {
        Sink::Screen(Box::new(FullScreen::start(&cluster)?))
    } else {
        Sink::Lines { json: args.json }
    };
    let mut redraw = tokio::time::interval(Duration::from_millis(250));
    let outcome = loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = redraw.tick() => {
                if let Sink::Screen(screen) = &mut sink {
                    if screen.handle_keys() {
                        break exit::OK;
                    }
                    screen.draw()?;
                }
                continue;
            }
            _ = flush.tick() => {
                if dirty {
                    save_cursors(args.cursor_file.as_deref(), &nodes)?;
                    dirty = false;
                }
                continue;
            }
            () = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => {
                let short: Vec<&str> = nodes.iter().filter(|(_, s)| s.shown < args.count.unwrap_or(0)).map(|(n, _)| n.as_str()).collect();
                output::note(&format!("stopped at the --count deadline; short of samples: {}", short.join(", ")));
                break exit::FAILURES;
            }
            _ = tokio::signal::ctrl_c() => break exit::OK,
        };
        let Some(event) = event else { break exit::FAILURES };
        match event {
            Event::Sample { node, stamped } => {
                let Some(state) = nodes.get_mut(&node) else { continue };
                state.down = false;
                let stamped = *stamped;
                // Already shown before a restart of `top`, or before the first second shown (a
                // fresh start): only the baseline for what follows.
                let seen = match state.printed {
                    Some(c) => c.epoch == stamped.epoch && stamped.seq <= c.seq,
                    None => stamped.sample.time_unix_ns < first_second,
                };
                let consecutive =
                    state.prev.as_ref().is_some_and(|p| p.epoch == stamped.epoch && p.seq + 1 == stamped.seq);
                // With --count, a node that has shown its count waits for the others silently.
                let done = args.count.is_some_and(|n| state.shown >= n);
                if consecutive && !seen && !done {
                    let prev = state.prev.as_ref().map(|p| &p.sample);
                    if let Some(prev) = prev {
                        let rates = Rates::between(prev, &stamped.sample);
                        let devices = visible_devices(&stamped.sample, false);
                        sink.sample(&node, stamped.seq, &rates, &devices)?;
                        state.shown += 1;
                        state.printed = Some(Cursor { epoch: stamped.epoch, seq: stamped.seq });
                        dirty = true;
                    }
                }
                state.prev = Some(stamped);
            }
            Event::Gap { node, from, to } => {
                if let Some(state) = nodes.get_mut(&node) {
                    state.prev = None;
                }
                sink.status(
                    &node,
                    json!({"gap": {"from_seq": from, "to_seq": to}}),
                    &format!("samples {from}..{to} are no longer held by the agent"),
                )?;
            }
            Event::Restarted { node } => {
                if let Some(state) = nodes.get_mut(&node) {
                    state.prev = None;
                }
                sink.status(
                    &node,
                    json!({"restarted": true}),
                    "agent restarted; its samples since the last one shown are lost",
                )?;
            }
            Event::Down { node, error } => {
                if let Some(state) = nodes.get_mut(&node) {
                    state.down = true;
                    state.prev = None;
                }
                sink.down(&node, &error.message);
                sink.status(
                    &node,
                    json!({"down": true, "error": error.message, "error_kind": error.kind.as_str()}),
                    &format!("down: {error}"),
                )?;
            }
            Event::Up { node } => {
                sink.status(&node, json!({"up": true}), "up")?;
            }
        }
        if let Some(count) = args.count
            && nodes.values().all(|s| s.shown >= count || (s.down && s.shown > 0))
        {
            break if nodes.values().any(|s| s.down) { exit::FAILURES } else { exit::OK };
        }
    };
    shutdown.cancel();
    drop(sink);
    save_cursors(args.cursor_file.as_deref(), &nodes)?;
    Ok(outcome)
}

/// Where `top` shows what it gets.
enum Sink {
    /// JSON objects or iostat-style tables, one after another.
    Lines { json: bool },
    /// The full-screen view.
    Screen(Box<FullScreen>),
}

impl Sink {
    fn sample(&mut self, node: &str, seq: u64, rates: &Rates, devices: &[String]) -> anyhow::Result<()> {
        match self {
            Sink::Lines { json } => show(node, seq, rates, devices, *json),
            Sink::Screen(screen) => {
                if let Some(row) = screen.screen.row_mut(node) {
                    row.record(Summary::of(rates, devices));
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
            Sink::Lines { json } => status(node, *json, fields, text),
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
    fn start(cluster: &pvfs_config::Cluster) -> anyhow::Result<FullScreen> {
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
        };
        Ok(FullScreen { terminal: ratatui::init(), screen })
    }

    fn draw(&mut self) -> anyhow::Result<()> {
        let screen = &self.screen;
        self.terminal.draw(|frame| tui::draw(frame, screen))?;
        Ok(())
    }

    /// Applies pending key presses; true when the user asked to quit. Never blocks: the
    /// terminal is polled with a zero timeout on each redraw tick.
    fn handle_keys(&mut self) -> bool {
        while term_event::poll(Duration::ZERO).unwrap_or(false) {
            let Ok(term_event::Event::Key(key)) = term_event::read() else { continue };
            if key.kind != KeyEventKind::Press {
                continue;
            }
            match key.code {
                KeyCode::Char('q') | KeyCode::Esc => return true,
                // Raw mode turns Ctrl-C into a key press instead of SIGINT.
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return true,
                KeyCode::Char('s') => self.screen.sort = self.screen.sort.next(),
                KeyCode::Char('r') => self.screen.reverse = !self.screen.reverse,
                _ => {}
            }
        }
        false
    }
}

impl Drop for FullScreen {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

fn show(node: &str, seq: u64, rates: &Rates, devices: &[String], json: bool) -> anyhow::Result<()> {
    if json {
        let mut value = to_json(rates, devices);
        if let Some(map) = value.as_object_mut() {
            map.insert("node".into(), json!(node));
            map.insert("seq".into(), json!(seq));
        }
        output::json(&value)
    } else {
        Ok(output::print(&format!("== {node}\n{}", table(rates, devices)))?)
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
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{} is not a pvfsctl cursor file", path.display())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(HashMap::new()),
        Err(err) => Err(err).with_context(|| format!("reading {}", path.display())),
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
