//! The history `serve` keeps (`pvfs-history`): a thread that owns the store's writer, fed each
//! node's newest pair of samples by the folder, and `/api/history`, which reads the store.
//!
//! The folder hands over the two samples (shared, so a pointer copy each) and the thread works
//! out the rates: the folder stays as cheap per sample as it was, and a slow disk delays only
//! the history. The hand-over is a bounded queue the folder never waits on: when the thread
//! falls behind, seconds are dropped and counted, never the agents' streams held up.

use crate::recent;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use pvfs_history::{Group, HistoryError, Point, Reader, TIERS, Tier, Writer};
use pvfs_metrics::rates::Rates;
use pvfs_metrics::ring::Stamped;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds queued for the writer. Each holds its node's two newest samples alive (tens of KB
/// for a node of many disks), so the queue is short: a burst of 4,096 nodes at the top of a
/// second, and a writer that is behind drops seconds (counted) rather than holding memory.
const QUEUE: usize = 4_096;

/// The most points one answer holds: a range that would hold more is answered from a coarser
/// tier (a chart is at most a few thousand pixels wide).
pub const MAX_POINTS: u64 = 2_000;

/// One node's second, as the folder hands it over.
pub struct Second {
    pub node: String,
    pub prev: Arc<Stamped>,
    pub last: Arc<Stamped>,
}

/// The folder's end of the history: where it hands seconds over.
#[derive(Clone)]
pub struct Feed {
    tx: SyncSender<Second>,
    dropped: Arc<AtomicU64>,
}

impl Feed {
    /// How many seconds were dropped so far.
    pub fn dropped(&self) -> Arc<AtomicU64> {
        self.dropped.clone()
    }

    /// Hands a second over, or drops it (counted) when the writer is behind.
    pub fn send(&self, second: Second) {
        match self.tx.try_send(second) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!(
                        "history: the store is behind; seconds are being dropped from the history"
                    );
                }
            }
            // The writer stopped (its store failed, and it said so).
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

/// The writer's thread.
pub struct Writing(std::thread::JoinHandle<()>);

impl Writing {
    /// Waits for the writer to end: once every [`Feed`] is dropped, it commits every open point
    /// and ends.
    pub fn wait(self) {
        let _ = self.0.join();
    }
}

/// Opens the store at `path` and starts its writer on a thread of its own.
pub fn start(path: &Path) -> Result<(Feed, Reader, Writing), HistoryError> {
    let (writer, reader) = pvfs_history::open(path, unix_now())?;
    let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
    let dropped = Arc::new(AtomicU64::new(0));
    let counted = dropped.clone();
    let thread = std::thread::Builder::new()
        .name("history".into())
        .spawn(move || write(writer, rx, &counted))
        .expect("a thread can be started");
    Ok((Feed { tx, dropped }, reader, Writing(thread)))
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()
}

/// The writer's loop: takes seconds as they come, closes points whose time has passed and
/// commits once a second.
fn write(mut writer: Writer, rx: Receiver<Second>, dropped: &AtomicU64) {
    let mut committed_at = 0;
    loop {
        let ended = match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(second) => {
                take(&mut writer, &second);
                // What else is queued, without waiting.
                while let Ok(second) = rx.try_recv() {
                    take(&mut writer, &second);
                }
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        let now = unix_now();
        if ended {
            writer.close_all();
        } else if now == committed_at {
            continue;
        } else {
            writer.close_due(now);
        }
        committed_at = now;
        if let Err(err) = writer.commit(now) {
            tracing::error!(error = %err, "history: cannot write; serve goes on without history");
            return;
        }
        if ended {
            let dropped = dropped.load(Ordering::Relaxed);
            if dropped > 0 {
                tracing::warn!(dropped, "history: seconds dropped while the store was behind");
            }
            return;
        }
    }
}

fn take(writer: &mut Writer, second: &Second) {
    let rates = Rates::between(&second.prev.sample, &second.last.sample);
    writer.record(&second.node, &rates, &second.last.sample.visible_devices(false));
}

/// `/api/history`'s query.
#[derive(Debug, Deserialize)]
pub struct HistoryQuery {
    pub node: String,
    /// Unix seconds; by default an hour before `to`.
    pub from: Option<u64>,
    /// Unix seconds; by default now.
    pub to: Option<u64>,
    /// `10s`, `1m` or `10m`; by default the finest that keeps `from` and fits the range in
    /// [`MAX_POINTS`].
    pub tier: Option<String>,
    /// Only these columns (comma-separated, as sysstat names them: `%util,r/s`); every one by
    /// default. A node with many disks has a thousand series and more.
    pub columns: Option<String>,
}

/// `/api/history`'s answer: one node's points, column by column (`null` where a point lacks the
/// series), so the browser draws each series from three arrays.
#[derive(Debug, Serialize)]
pub struct HistoryAnswer {
    pub node: String,
    pub tier: &'static str,
    pub step_s: u64,
    pub from: u64,
    pub to: u64,
    /// Each point's start (Unix seconds); a step missing between two is a gap.
    pub times: Vec<u64>,
    /// The seconds each point holds (fewer than `step_s` where the node was down for some).
    pub seconds: Vec<u32>,
    pub series: Vec<SeriesAnswer>,
}

#[derive(Debug, Serialize)]
pub struct SeriesAnswer {
    pub group: Group,
    pub device: String,
    pub column: String,
    pub avg: Vec<Option<f32>>,
    pub min: Vec<Option<f32>>,
    pub max: Vec<Option<f32>>,
}

impl HistoryAnswer {
    /// The points, column by column; only the series whose column is in `columns`, when given.
    fn of(
        node: String,
        tier: Tier,
        from: u64,
        to: u64,
        points: &[Point],
        columns: Option<&[&str]>,
    ) -> HistoryAnswer {
        let wanted = |k: &pvfs_history::SeriesKey| columns.is_none_or(|c| c.contains(&k.column.as_str()));
        let mut keys: Vec<&pvfs_history::SeriesKey> =
            points.iter().flat_map(|p| p.series.iter().map(|(k, _)| k)).filter(|k| wanted(k)).collect();
        keys.sort();
        keys.dedup();
        // Each point's series are in key order, as `keys` is: one cursor per point walks them
        // (a search per key and point took seconds for a node of 1,400 series).
        let mut cursors = vec![0usize; points.len()];
        let series = keys
            .into_iter()
            .map(|key| {
                let stats: Vec<_> = points
                    .iter()
                    .zip(&mut cursors)
                    .map(|(p, at)| {
                        while p.series.get(*at).is_some_and(|(k, _)| k < key) {
                            *at += 1;
                        }
                        p.series.get(*at).filter(|(k, _)| k == key).map(|(_, s)| *s)
                    })
                    .collect();
                SeriesAnswer {
                    group: key.group,
                    device: key.device.clone(),
                    column: key.column.clone(),
                    avg: stats.iter().map(|s| s.map(|s| s.avg)).collect(),
                    min: stats.iter().map(|s| s.map(|s| s.min)).collect(),
                    max: stats.iter().map(|s| s.map(|s| s.max)).collect(),
                }
            })
            .collect();
        HistoryAnswer {
            node,
            tier: tier.name,
            step_s: tier.step_s,
            from,
            to,
            times: points.iter().map(|p| p.start).collect(),
            seconds: points.iter().map(|p| p.seconds).collect(),
            series,
        }
    }
}

/// The tier a range is answered from: the one asked for, or the finest that still keeps `from`
/// and holds the range in [`MAX_POINTS`]: the agents' 1 s ([`recent::SECOND`]) when `agents`
/// can be asked, then the store's.
pub fn tier_for(asked: Option<&str>, from: u64, to: u64, now: u64, agents: bool) -> Result<Tier, String> {
    let all = agents.then_some(recent::SECOND).into_iter().chain(TIERS);
    if let Some(name) = asked {
        return all.into_iter().find(|t| t.name == name).ok_or_else(|| {
            let names: Vec<&str> = agents.then_some("1s").into_iter().chain(TIERS.map(|t| t.name)).collect();
            format!("no tier {name:?}: the tiers are {}", names.join(", "))
        });
    }
    let span = to.saturating_sub(from);
    Ok(all
        .into_iter()
        .find(|tier| now.saturating_sub(tier.keep_s) <= from && span / tier.step_s <= MAX_POINTS)
        .unwrap_or(TIERS[TIERS.len() - 1]))
}

/// What `/api/history` reads: the store, the cluster's nodes, and their agents (the 1 s tier).
#[derive(Clone)]
pub struct HistoryState {
    pub reader: Option<Reader>,
    pub nodes: Arc<Vec<String>>,
    pub agents: Option<recent::Agents>,
    /// The seconds the writer could not take ([`Feed::dropped`]), for `/metrics`.
    pub dropped: Option<Arc<AtomicU64>>,
}

/// Writes the history's counts as families of `/metrics`.
pub fn write_counts(dropped: &AtomicU64, sink: &mut impl pvfs_coord::exporter::Sink) {
    sink.family(
        "pvfs_history_dropped_seconds_total",
        "counter",
        "Node-seconds not kept in the history: its writer was behind.",
        |f| f.sample("pvfs_history_dropped_seconds_total", &[], dropped.load(Ordering::Relaxed) as f64),
    );
}

/// A refusal or failure, said in plain text.
fn bad(status: StatusCode, text: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}

/// What a history route answers when serve was started without `--history`.
fn no_history() -> Response {
    bad(StatusCode::NOT_FOUND, "this serve keeps no history: start it with --history DIR\n".into())
}

/// A read done on the blocking pool, as JSON or as what went wrong.
fn answered<T: Serialize>(read: Result<Result<T, HistoryError>, tokio::task::JoinError>) -> Response {
    match read {
        Ok(Ok(answer)) => ([(header::CONTENT_TYPE, "application/json")], axum::Json(answer)).into_response(),
        Ok(Err(err)) => bad(StatusCode::INTERNAL_SERVER_ERROR, format!("{err}\n")),
        Err(_) => bad(StatusCode::INTERNAL_SERVER_ERROR, "the history read failed\n".into()),
    }
}

pub(crate) async fn answer(State(state): State<HistoryState>, Query(query): Query<HistoryQuery>) -> Response {
    if !state.nodes.contains(&query.node) {
        return bad(StatusCode::NOT_FOUND, format!("no node {:?} in the cluster file\n", query.node));
    }
    let now = unix_now();
    let to = query.to.unwrap_or(now);
    let from = query.from.unwrap_or(to.saturating_sub(3600));
    if from >= to {
        return bad(StatusCode::BAD_REQUEST, format!("from ({from}) must be before to ({to})\n"));
    }
    let tier = match tier_for(query.tier.as_deref(), from, to, now, state.agents.is_some()) {
        Ok(tier) => tier,
        Err(text) => return bad(StatusCode::BAD_REQUEST, text + "\n"),
    };
    let (node, columns) = (query.node, query.columns);
    // The 1 s tier is the agents' (never stored here).
    if let (true, Some(agents)) = (tier == recent::SECOND, &state.agents) {
        let points = agents.seconds(&node, from, to).await;
        let columns: Option<Vec<&str>> = columns.as_deref().map(|c| c.split(',').collect());
        let answer = HistoryAnswer::of(node, tier, from, to, &points, columns.as_deref());
        return ([(header::CONTENT_TYPE, "application/json")], axum::Json(answer)).into_response();
    }
    let Some(reader) = state.reader else { return no_history() };
    // redb reads block: on the blocking pool, beside the runtime's threads.
    let read = tokio::task::spawn_blocking(move || {
        let columns: Option<Vec<&str>> = columns.as_deref().map(|c| c.split(',').collect());
        let keep =
            |k: &pvfs_history::SeriesKey| columns.as_ref().is_none_or(|c| c.contains(&k.column.as_str()));
        reader
            .range_of(&node, tier, from, to, &keep)
            .map(|range| HistoryAnswer::of(node, tier, from, to, &range.points, columns.as_deref()))
    })
    .await;
    answered(read)
}

/// `/api/heatmap`'s query.
#[derive(Debug, Deserialize)]
pub struct HeatmapQuery {
    /// A disk column (`%util`, `r_await`, `w_await`, `aqu-sz`, …): each cell is the busiest
    /// disk's average over the point.
    pub column: Option<String>,
    /// How far back, in minutes (by default 30, at most a day).
    pub minutes: Option<u64>,
}

/// `/api/heatmap`'s answer: every node's busiest disk on one column over the last minutes, a
/// row per node and a cell per 10 s point (`null` where the node has no point): the view that
/// finds one slow target among hundreds.
#[derive(Debug, Serialize)]
pub struct HeatmapAnswer {
    pub column: String,
    pub step_s: u64,
    /// The first cell's start; cell `i` starts at `from + i × step_s`.
    pub from: u64,
    pub cells: usize,
    pub nodes: Vec<HeatmapRow>,
}

#[derive(Debug, Serialize)]
pub struct HeatmapRow {
    pub name: String,
    pub values: Vec<Option<f32>>,
}

/// The longest heatmap: a day of 10 s cells.
const HEATMAP_MINUTES: u64 = 24 * 60;

impl HeatmapAnswer {
    /// Reads every node's points of the 10 s tier since `minutes` before `now`.
    pub fn read(
        reader: &Reader,
        nodes: &[String],
        column: &str,
        minutes: u64,
        now: u64,
    ) -> Result<HeatmapAnswer, HistoryError> {
        let tier = TIERS[0];
        let to = tier.point_of(now) + tier.step_s;
        let from = to - minutes.clamp(1, HEATMAP_MINUTES) * 60;
        let cells = usize::try_from((to - from) / tier.step_s).unwrap_or(0);
        let keep = |k: &pvfs_history::SeriesKey| k.group == Group::Disk && k.column == column;
        let mut rows = Vec::with_capacity(nodes.len());
        for node in nodes {
            let mut values = vec![None; cells];
            for point in reader.range_of(node, tier, from, to, &keep)?.points {
                let busiest = point
                    .series
                    .iter()
                    .map(|(_, s)| s.avg)
                    .fold(None, |m: Option<f32>, v| Some(m.map_or(v, |m| m.max(v))));
                if let Some(cell) =
                    values.get_mut(usize::try_from((point.start - from) / tier.step_s).unwrap_or(usize::MAX))
                {
                    *cell = busiest;
                }
            }
            rows.push(HeatmapRow { name: node.clone(), values });
        }
        Ok(HeatmapAnswer { column: column.to_owned(), step_s: tier.step_s, from, cells, nodes: rows })
    }
}

pub(crate) async fn heatmap(
    State(state): State<HistoryState>,
    Query(query): Query<HeatmapQuery>,
) -> Response {
    let Some(reader) = state.reader else { return no_history() };
    let column = query.column.unwrap_or_else(|| "%util".to_owned());
    if pvfs_metrics::rates::DiskColumn::from_name(&column).is_none() {
        return bad(
            StatusCode::BAD_REQUEST,
            format!("no disk column {column:?}: iostat -x's names (%util, r_await, w_await, aqu-sz, …)\n"),
        );
    }
    let minutes = query.minutes.unwrap_or(30);
    let read = tokio::task::spawn_blocking(move || {
        HeatmapAnswer::read(&reader, &state.nodes, &column, minutes, unix_now())
    })
    .await;
    answered(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_answered_from_the_finest_tier_that_keeps_it_and_fits_it() {
        let now = 1_800_000_000;
        let tier = |from: u64, to: u64| tier_for(None, from, to, now, false).map(|t| t.name);
        assert_eq!(tier(now - 3600, now), Ok("10s"));
        // 6 h of 10 s would be 2,160 points.
        assert_eq!(tier(now - 6 * 3600, now), Ok("1m"));
        // An hour 8 days ago: past the 10 s tier's keep.
        assert_eq!(tier(now - 8 * 86_400, now - 8 * 86_400 + 3600), Ok("1m"));
        assert_eq!(tier(now - 30 * 86_400, now), Ok("10m"));
        assert_eq!(tier(now - 400 * 86_400, now - 399 * 86_400), Ok("10m"));
        assert_eq!(tier_for(Some("1m"), now - 3600, now, now, false).map(|t| t.name), Ok("1m"));
        assert!(
            tier_for(Some("5m"), now - 3600, now, now, false)
                .unwrap_err()
                .contains("the tiers are 10s, 1m, 10m")
        );
        // With the agents: their seconds for a range of the last hour that fits.
        let with_agents = |from: u64, to: u64| tier_for(None, from, to, now, true).map(|t| t.name);
        assert_eq!(with_agents(now - 1800, now), Ok("1s"));
        assert_eq!(with_agents(now - 3600, now), Ok("10s"), "3,600 points are too many");
        assert_eq!(with_agents(now - 7200, now - 6000), Ok("10s"), "past the agents' hour");
        assert!(
            tier_for(Some("5m"), now - 60, now, now, true)
                .unwrap_err()
                .contains("the tiers are 1s, 10s, 1m, 10m")
        );
    }
}
