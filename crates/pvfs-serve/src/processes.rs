//! The node view's busiest processes, when asked (`/api/processes?node=NAME`): the per-process
//! view `top --processes` shows, for one node at a time.
//!
//! An agent scans its processes only while a stream asks for them, so `serve` does not ask
//! with its own streams (that would keep every node scanning for as long as serve runs).
//! The first request for a node opens a stream of its own to that node with processes asked
//! for; each later request reads the newest second it brought; the stream is closed once the
//! page has not asked for 15 s (the page asks every 2 s while it shows them). At most
//! [`MAX_WATCHED`] nodes are watched at once.

use crate::recent::Agents;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use pvfs_coord::stream::StreamEvent;
use pvfs_metrics::line::{ProcessLine, time_text};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How many processes of a node are shown (top's default is 5; a page has room for more).
const SHOWN: u32 = 10;

/// Nodes watched at once: a few browsers each on a node view.
pub const MAX_WATCHED: usize = 8;

/// A node's stream is closed after this long without a request.
const IDLE: Duration = Duration::from_secs(15);

/// The watched nodes, and what watching needs.
#[derive(Clone)]
pub struct Processes {
    agents: Agents,
    watched: Arc<Mutex<HashMap<String, Watch>>>,
    stop: CancellationToken,
}

/// One watched node.
struct Watch {
    newest: Arc<Mutex<Option<Newest>>>,
    asked: Arc<Mutex<Instant>>,
}

/// A node's newest second with its processes.
#[derive(Debug, Clone, Serialize)]
pub struct Newest {
    /// The second's end, as `top --json` writes it.
    pub time: String,
    pub seq: u64,
    pub processes: Vec<ProcessLine>,
}

/// What `/api/processes` answers: the newest second's processes, or none yet (the stream has
/// just been opened; the agent needs two scans for a second's figures).
#[derive(Debug, Serialize)]
pub struct Answer {
    pub node: String,
    #[serde(flatten)]
    pub newest: Option<Newest>,
}

#[derive(Debug, Deserialize)]
pub struct ProcessesQuery {
    pub node: String,
}

impl Processes {
    /// Watching ends on `stop` (serve's).
    pub fn new(agents: Agents, stop: CancellationToken) -> Processes {
        Processes { agents, watched: Arc::default(), stop }
    }

    /// The newest processes of `node`, starting to watch it if it is not yet; `Err` says why
    /// not (an unknown node, or too many watched).
    fn ask(&self, node: &str) -> Result<Option<Newest>, (StatusCode, String)> {
        if !self.agents.cluster.nodes.iter().any(|n| n.name == node) {
            return Err((StatusCode::NOT_FOUND, format!("no node {node} in the cluster file\n")));
        }
        let mut watched = self.watched.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(watch) = watched.get(node) {
            *watch.asked.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
            return Ok(watch.newest.lock().unwrap_or_else(|p| p.into_inner()).clone());
        }
        if watched.len() >= MAX_WATCHED {
            return Err((
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "the processes of {MAX_WATCHED} nodes are being watched already; close a node view\n"
                ),
            ));
        }
        let watch = Watch { newest: Arc::default(), asked: Arc::new(Mutex::new(Instant::now())) };
        let stop = self.stop.child_token();
        let Some(events) = self.agents.follow(node, crate::recent::unix_now_ns(), SHOWN, stop.clone()) else {
            return Err((StatusCode::NOT_FOUND, format!("no node {node} in the cluster file\n")));
        };
        let (newest, asked) = (watch.newest.clone(), watch.asked.clone());
        let (name, all) = (node.to_owned(), self.watched.clone());
        tokio::spawn(async move {
            watch_node(events, newest, asked, stop).await;
            all.lock().unwrap_or_else(|p| p.into_inner()).remove(&name);
        });
        watched.insert(node.to_owned(), watch);
        Ok(None)
    }
}

/// Keeps `newest` current from the node's stream until nobody asked for [`IDLE`] or serve stops.
async fn watch_node(
    mut events: tokio::sync::mpsc::Receiver<StreamEvent>,
    newest: Arc<Mutex<Option<Newest>>>,
    asked: Arc<Mutex<Instant>>,
    stop: CancellationToken,
) {
    let mut check = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(StreamEvent::Sample { stamped, processes, .. }) => {
                    let second = Newest {
                        time: time_text(stamped.sample.time_unix_ns),
                        seq: stamped.seq,
                        processes: processes.iter().map(ProcessLine::from).collect(),
                    };
                    *newest.lock().unwrap_or_else(|p| p.into_inner()) = Some(second);
                }
                Some(_) => {}
                None => break,
            },
            _ = check.tick() => {
                if asked.lock().unwrap_or_else(|p| p.into_inner()).elapsed() > IDLE {
                    break;
                }
            }
            () = stop.cancelled() => break,
        }
    }
    // Ends the node's stream (its follower watches this token).
    stop.cancel();
}

/// `/api/processes?node=NAME`.
pub(crate) async fn answer(
    State(processes): State<Processes>,
    Query(query): Query<ProcessesQuery>,
) -> Response {
    match processes.ask(&query.node) {
        Ok(newest) => axum::Json(Answer { node: query.node, newest }).into_response(),
        Err((status, why)) => (status, why).into_response(),
    }
}
