//! Following every agent's sample stream at once, resuming each from its cursor after any
//! break, and telling the consumer when a node goes quiet.
//!
//! One task per node: connect, ask for the samples after the cursor, pass each one on, and on
//! any failure report the node down (once), wait a second and try again. The consumer gets one
//! channel of [`StreamEvent`]s for the whole cluster.

use crate::dial::{DialError, Dialer, FailureKind, from_status};
use pvfs_config::{Cluster, Node};
use pvfs_metrics::processes::Process;
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

/// Between reconnection attempts to a node that is down: one second at first, because a node
/// coming back should show up quickly; doubling (with jitter) up to [`RETRY_MAX`] while it stays
/// down, so that thousands of unreachable nodes do not turn into thousands of handshakes a
/// second.
const RETRY: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(8);

/// Connection attempts (TCP + TLS + the stream request) under way at once across the cluster.
/// Starting 10,000 streams at once made every handshake slower than the connect timeout on a
/// small coordinator, so attempts failed and were retried in a storm; a bounded number of
/// attempts at a time finishes them all sooner.
const MAX_DIALS: usize = 128;

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
pub enum StreamEvent {
    Sample {
        node: String,
        stamped: Box<Stamped>,
        /// The node's busiest processes over that second, when they were asked for
        /// (`follow_cluster`'s `processes`) and the agent had them; empty otherwise.
        processes: Vec<Process>,
    },
    /// Samples `from..=to` are gone: the agent no longer held them when asked.
    Gap { node: String, from: u64, to: u64 },
    /// The agent process restarted (new epoch): its samples after the cursor, if any, are gone.
    Restarted { node: String },
    /// The node stopped answering (or could not be reached at all).
    Down { node: String, error: DialError },
    /// The node is streaming (first connection, or back after being down).
    Up { node: String },
}

/// Starts following every node of `cluster`: from its cursor in `cursors` if it has one, else
/// from `fresh`. With `processes` > 0 every agent also reports its top `processes` processes
/// by CPU and by I/O with each sample (and scans for them only while asked); 0 leaves the
/// agents' cost as it is. Runs until `shutdown`.
pub fn follow_cluster(
    cluster: &Cluster,
    dialer: &Dialer,
    cursors: &HashMap<String, Cursor>,
    fresh: Start,
    processes: u32,
    shutdown: CancellationToken,
) -> mpsc::Receiver<StreamEvent> {
    let (tx, rx) = mpsc::channel(EVENT_QUEUE);
    let dials = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_DIALS));
    for node in &cluster.nodes {
        let start = cursors.get(&node.name).map_or(fresh, |c| Start::After(*c));
        tokio::spawn(follow(
            node.clone(),
            dialer.clone(),
            start,
            processes,
            tx.clone(),
            dials.clone(),
            shutdown.clone(),
        ));
    }
    rx
}

async fn follow(
    node: Node,
    dialer: Dialer,
    start: Start,
    processes: u32,
    tx: mpsc::Sender<StreamEvent>,
    dials: std::sync::Arc<tokio::sync::Semaphore>,
    shutdown: CancellationToken,
) {
    // Once anything has been received, a reconnection resumes after it.
    let (mut cursor, since) = match start {
        Start::After(cursor) => (cursor, 0),
        Start::Since { unix_ns } => (Cursor::default(), unix_ns),
    };
    // What every connection asks besides the cursor.
    let ask = pb::MetricsRequest { since_unix_ns: since, processes, ..pb::MetricsRequest::default() };
    let mut up = false;
    let mut reported_down = false;
    let mut retry = RETRY;
    loop {
        let result = tokio::select! {
            () = shutdown.cancelled() => return,
            result = stream_once(&node, &dialer, &mut cursor, ask, &tx, &mut up, &dials) => result,
        };
        let Err(error) = result else { return };
        // A node that was streaming is retried at once-a-second pace again.
        if up {
            retry = RETRY;
        }
        if up || !reported_down {
            up = false;
            reported_down = true;
            if tx.send(StreamEvent::Down { node: node.name.clone(), error }).await.is_err() {
                return;
            }
        }
        // Jitter spreads the retries of nodes that went down together.
        let pause = retry.mul_f64(1.0 + fastrand::f64() * 0.5);
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
        retry = (retry * 2).min(RETRY_MAX);
    }
}

/// One connection's worth of streaming. Returns `Ok` only when the consumer has gone away.
async fn stream_once(
    node: &Node,
    dialer: &Dialer,
    cursor: &mut Cursor,
    ask: pb::MetricsRequest,
    tx: &mpsc::Sender<StreamEvent>,
    up: &mut bool,
    dials: &tokio::sync::Semaphore,
) -> Result<(), DialError> {
    // Boxed: tonic's connect and call futures take ~4 KB, and unboxed they would size this
    // task for as long as it streams (one per node, 10,000 in `serve`), not only while dialling.
    let response = Box::pin(async {
        // Held until the stream is open: the handshake and the request are the costly part.
        let _permit = dials
            .acquire()
            .await
            .map_err(|_| DialError { kind: FailureKind::Other, message: "shutting down".into() })?;
        let mut conn = dialer.connect(node).await?;
        let request = pb::MetricsRequest { epoch: cursor.epoch, after_seq: cursor.seq, ..ask };
        tokio::time::timeout(dialer.timeout(), conn.agent.metrics(request))
            .await
            .map_err(|_| crate::dial::timed_out(&node.address, dialer.timeout()))?
            .map_err(|status| from_status(&status, &node.address, dialer.timeout()))
    })
    .await?;
    let mut stream = response.into_inner();
    if !*up {
        *up = true;
        if tx.send(StreamEvent::Up { node: node.name.clone() }).await.is_err() {
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
            Some(pb::metrics_event::Event::Sample(mut sample)) => {
                let processes = pvfs_proto::convert::take_processes(&mut sample);
                let stamped = Stamped::from(sample);
                let restarted = cursor.epoch != 0 && stamped.epoch != cursor.epoch;
                *cursor = Cursor { epoch: stamped.epoch, seq: stamped.seq };
                if restarted && tx.send(StreamEvent::Restarted { node: node.name.clone() }).await.is_err() {
                    return Ok(());
                }
                StreamEvent::Sample { node: node.name.clone(), stamped: Box::new(stamped), processes }
            }
            Some(pb::metrics_event::Event::Gap(gap)) => {
                cursor.seq = gap.to_seq;
                StreamEvent::Gap { node: node.name.clone(), from: gap.from_seq, to: gap.to_seq }
            }
            None => continue,
        };
        if tx.send(event).await.is_err() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each followed node is a task holding this future for as long as the coordinator runs:
    /// 10,000 of them in `serve`. The connection set-up (tonic's endpoint and channel futures)
    /// is boxed while it runs, so that it does not size every task's steady state.
    #[test]
    fn following_a_node_holds_a_small_future() {
        let node: Node = pvfs_config::parse(
            std::path::Path::new("c.toml"),
            "[cluster]\nname = \"c\"\nkind = \"local\"\n[local]\nmount = \"/m\"\n[[node]]\nname = \"n1\"\naddress = \"127.0.0.1:7070\"\nroles = [\"server\"]\n",
        )
        .unwrap()
        .nodes
        .remove(0);
        let dialer = crate::dial::unused_dialer();
        let (tx, _rx) = mpsc::channel(1);
        let dials = std::sync::Arc::new(tokio::sync::Semaphore::new(1));
        let future =
            follow(node, dialer, Start::Since { unix_ns: 0 }, 0, tx, dials, CancellationToken::new());
        let size = size_of_val(&future);
        // 4.8 KB with the set-up inline; 2.4 KB boxed (the stream, a decoded message, the
        // silence timer and the event being sent).
        assert!(size <= 3 * 1024, "{size} bytes");
    }
}
