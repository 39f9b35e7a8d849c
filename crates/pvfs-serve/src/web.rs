//! The web view at `/`: one page, embedded in the binary (no CDN, nothing fetched at view time),
//! that draws the cluster from two endpoints of the same listener as `/metrics`:
//!
//! - `/api/now`: every node's newest second as JSON — each node's [`SecondLine`] exactly as
//!   `pvfsctl top --json` prints it for the same second (`node` and `seq` included), with its
//!   role and whether it is streaming;
//! - `/api/live`: the same document once a second as server-sent events, so the page is
//!   updated in place rather than reloaded or polled; rendered once per second for all the
//!   browsers listening (none: not rendered), each browser's stream a queue of one.
//!
//! The page draws with a canvas and plain DOM, no charting library: a sparkline and a tile per
//! node need a few dozen lines, the whole page stays a few tens of KB (the issue asks under
//! 300 KB), and Debian's libjs-* packages would have to be embedded whole for the same.

use crate::SharedView;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use pvfs_metrics::line::SecondLine;
use serde::Serialize;
use std::convert::Infallible;
use std::time::Duration;

/// The page, as it is served.
pub const PAGE: &str = include_str!("../web/index.html");

/// How often `/api/live` sends the cluster: the agents' sampling interval.
const LIVE_EVERY: Duration = Duration::from_secs(1);

/// What the browser waits before reconnecting to `/api/live` (a connection ends at the
/// server's connection lifetime): short, so the view misses at most a second.
const RECONNECT_MS: u64 = 250;

/// `/api/now`'s document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Now {
    /// Every node of the cluster file, in its order.
    pub nodes: Vec<NodeNow>,
}

/// One node's newest state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeNow {
    pub name: String,
    /// Its roles, comma-separated, as the exporter labels them.
    pub role: String,
    /// Its stream is up.
    pub up: bool,
    /// Its newest second, as `top --json` prints it; `None` until it has two samples in a row.
    pub second: Option<SecondLine>,
}

impl Now {
    /// The view's newest second of every node.
    pub fn of(view: &pvfs_coord::exporter::ClusterView) -> Now {
        let nodes = view
            .nodes
            .iter()
            .map(|(name, node)| NodeNow {
                name: name.clone(),
                role: node.role.clone(),
                up: node.up,
                second: node.rates().zip(node.last.as_ref()).map(|(rates, last)| SecondLine {
                    node: Some(name.clone()),
                    seq: Some(last.seq),
                    ..SecondLine::of(&rates, &last.sample.visible_devices(false))
                }),
            })
            .collect();
        Now { nodes }
    }

    fn json(view: &SharedView) -> String {
        // The samples are shared: the copy under the lock is cheap, the rates are worked out
        // after it.
        let snapshot = view.read().unwrap_or_else(|p| p.into_inner()).clone();
        serde_json::to_string(&Now::of(&snapshot)).unwrap_or_else(|_| "{\"nodes\":[]}".to_owned())
    }
}

pub(crate) async fn page() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], PAGE)
}

pub(crate) async fn now(State(view): State<SharedView>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], Now::json(&view))
}

/// What `/api/live` reads: the cluster's newest second as `/api/now`'s JSON, rendered once a
/// second by one task for every listener (while there is one), and serve's stop, which ends
/// every stream.
#[derive(Clone)]
pub(crate) struct Live {
    second: tokio::sync::watch::Receiver<std::sync::Arc<str>>,
    /// Browsers listening now: the renderer renders only while there is one.
    listeners: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: tokio_util::sync::CancellationToken,
}

/// One listener counted for as long as its task lives.
struct Listening(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Listening {
    fn new(listeners: &std::sync::Arc<std::sync::atomic::AtomicUsize>) -> Listening {
        listeners.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Listening(listeners.clone())
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Live {
    /// Starts the renderer: each second, when someone listens, the view's newest second is
    /// rendered once (on the blocking pool: at 10,000 nodes it is a few milliseconds of rates)
    /// and handed to every listener. It ends on `stop`.
    pub(crate) fn start(view: SharedView, stop: tokio_util::sync::CancellationToken) -> Live {
        let (tx, second) = tokio::sync::watch::channel(std::sync::Arc::<str>::from(""));
        let listeners = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = listeners.clone();
        let ended = stop.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(LIVE_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tokio::select! {
                    () = ended.cancelled() => return,
                    _ = tick.tick() => {}
                }
                if counted.load(std::sync::atomic::Ordering::Relaxed) == 0 {
                    continue;
                }
                let view = view.clone();
                let Ok(json) = tokio::task::spawn_blocking(move || Now::json(&view)).await else { continue };
                let _ = tx.send(std::sync::Arc::from(json));
            }
        });
        Live { second, listeners, stop }
    }
}

/// The cluster once a second, as `now` events, for as long as the browser listens or until
/// serve stops: each listener's task hands the renderer's newest second to a queue of one, so a
/// slow reader skips seconds rather than holding them. On the stop the task ends, which ends
/// the response, so the connection closes at once (it held serve's stop for its 60 s lifetime
/// before).
pub(crate) async fn live(State(Live { mut second, listeners, stop }): State<Live>) -> impl IntoResponse {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Event, Infallible>>(1);
    // What was rendered before this listener came may be old: it waits for the next second.
    second.mark_unchanged();
    let listening = Listening::new(&listeners);
    tokio::spawn(async move {
        let _listening = listening;
        let mut first = true;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                changed = second.changed() => if changed.is_err() { return },
            }
            let json = second.borrow_and_update().clone();
            let mut event = Event::default().event("now").data(&*json);
            if first {
                event = event.retry(Duration::from_millis(RECONNECT_MS));
                first = false;
            }
            match tx.try_send(Ok(event)) {
                Ok(()) | Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => {}
                // The browser went away: the response (and its receiver) was dropped.
                Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => return,
            }
        }
    });
    Sse::new(tokio_stream::wrappers::ReceiverStream::new(rx)).keep_alive(KeepAlive::default())
}
