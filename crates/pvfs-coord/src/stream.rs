//! Following every agent's sample stream at once, resuming each from its cursor after any
//! break, and telling the consumer when a node goes quiet.
//!
//! One task per node: connect, ask for the samples after the cursor, pass each one on, and on
//! any failure report the node down (once), wait a second and try again. The consumer gets one
//! channel of [`Event`]s for the whole cluster.

use crate::dial::{DialError, Dialer, FailureKind, from_status};
use pvfs_config::{Cluster, Node};
use pvfs_metrics::ring::Stamped;
use pvfs_proto::pb;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Agents send a sample every second; this long without one means the node is down (or cut
/// off), which puts "down" on screen within three seconds of the last sample.
pub const SILENCE: Duration = Duration::from_millis(2500);

/// Between reconnection attempts to a node that is down. Short, because a node coming back
/// should show up quickly, and one attempt a second per down node is cheap.
const RETRY: Duration = Duration::from_secs(1);

/// Events queued for a consumer that is busy (printing, drawing). When full, node tasks wait,
/// which is fine: their agents hold the history.
const EVENT_QUEUE: usize = 1024;

/// Where a node's stream has got to: the last sample received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub epoch: u64,
    pub seq: u64,
}

/// Where to start following a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// After this cursor (a resumed reader).
    After(Cursor),
    /// With the newest sample taken before this wall-clock time, then everything later. Every
    /// node asked for the same time yields the same seconds.
    Since { unix_ns: u64 },
}

/// What the stream of a cluster says.
#[derive(Debug, Clone)]
pub enum Event {
    Sample {
        node: String,
        stamped: Box<Stamped>,
    },
    /// Samples `from..=to` are gone: the agent no longer held them when asked.
    Gap {
        node: String,
        from: u64,
        to: u64,
    },
    /// The agent process restarted (new epoch): its samples after the cursor, if any, are gone.
    Restarted {
        node: String,
    },
    /// The node stopped answering (or could not be reached at all).
    Down {
        node: String,
        error: DialError,
    },
    /// The node is streaming (first connection, or back after being down).
    Up {
        node: String,
    },
}

/// Starts following every node of `cluster`: from its cursor in `cursors` if it has one, else
/// from `fresh`. Runs until `shutdown`.
pub fn follow_cluster(
    cluster: &Cluster,
    dialer: &Dialer,
    cursors: &HashMap<String, Cursor>,
    fresh: Start,
    shutdown: CancellationToken,
) -> mpsc::Receiver<Event> {
    let (tx, rx) = mpsc::channel(EVENT_QUEUE);
    for node in &cluster.nodes {
        let start = cursors.get(&node.name).map_or(fresh, |c| Start::After(*c));
        tokio::spawn(follow(node.clone(), dialer.clone(), start, tx.clone(), shutdown.clone()));
    }
    rx
}

async fn follow(
    node: Node,
    dialer: Dialer,
    start: Start,
    tx: mpsc::Sender<Event>,
    shutdown: CancellationToken,
) {
    // Once anything has been received, a reconnection resumes after it.
    let (mut cursor, since) = match start {
        Start::After(cursor) => (cursor, 0),
        Start::Since { unix_ns } => (Cursor::default(), unix_ns),
    };
    let mut up = false;
    let mut reported_down = false;
    loop {
        let result = tokio::select! {
            () = shutdown.cancelled() => return,
            result = stream_once(&node, &dialer, &mut cursor, since, &tx, &mut up) => result,
        };
        let Err(error) = result else { return };
        if up || !reported_down {
            up = false;
            reported_down = true;
            if tx.send(Event::Down { node: node.name.clone(), error }).await.is_err() {
                return;
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(RETRY) => {}
        }
    }
}

/// One connection's worth of streaming. Returns `Ok` only when the consumer has gone away.
async fn stream_once(
    node: &Node,
    dialer: &Dialer,
    cursor: &mut Cursor,
    since_unix_ns: u64,
    tx: &mpsc::Sender<Event>,
    up: &mut bool,
) -> Result<(), DialError> {
    let mut conn = dialer.connect(node).await?;
    let request = pb::MetricsRequest { epoch: cursor.epoch, after_seq: cursor.seq, since_unix_ns };
    let response = tokio::time::timeout(dialer.timeout(), conn.agent.metrics(request))
        .await
        .map_err(|_| crate::dial::timed_out(&node.address, dialer.timeout()))?
        .map_err(|status| from_status(&status, &node.address, dialer.timeout()))?;
    let mut stream = response.into_inner();
    if !*up {
        *up = true;
        if tx.send(Event::Up { node: node.name.clone() }).await.is_err() {
            return Ok(());
        }
    }
    loop {
        let message = match tokio::time::timeout(SILENCE, stream.message()).await {
            Err(_) => {
                return Err(DialError {
                    kind: FailureKind::Timeout,
                    message: format!("no sample from {} for {:.1}s", node.address, SILENCE.as_secs_f64()),
                });
            }
            Ok(Err(status)) => return Err(from_status(&status, &node.address, dialer.timeout())),
            Ok(Ok(None)) => {
                return Err(DialError {
                    kind: FailureKind::Rpc,
                    message: "the agent ended the stream (shutting down?)".into(),
                });
            }
            Ok(Ok(Some(message))) => message,
        };
        let event = match message.event {
            Some(pb::metrics_event::Event::Sample(sample)) => {
                let stamped = Stamped::from(sample);
                let restarted = cursor.epoch != 0 && stamped.epoch != cursor.epoch;
                *cursor = Cursor { epoch: stamped.epoch, seq: stamped.seq };
                if restarted && tx.send(Event::Restarted { node: node.name.clone() }).await.is_err() {
                    return Ok(());
                }
                Event::Sample { node: node.name.clone(), stamped: Box::new(stamped) }
            }
            Some(pb::metrics_event::Event::Gap(gap)) => {
                cursor.seq = gap.to_seq;
                Event::Gap { node: node.name.clone(), from: gap.from_seq, to: gap.to_seq }
            }
            None => continue,
        };
        if tx.send(event).await.is_err() {
            return Ok(());
        }
    }
}
