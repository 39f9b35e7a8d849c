//! The 1 s tier: the agents' own rings (an hour by default), read on demand for a range in
//! the last hour rather than copied into serve's store. A request opens a stream to the node
//! from the range's start (its agent replays what its ring holds, then goes live) and ends it
//! once the range is covered, the stream has caught up with the present, or a few seconds
//! have passed; each second becomes a point of one second, its average, minimum and maximum
//! the second's own value: the figures `top --json` printed for it.

use pvfs_config::Cluster;
use pvfs_coord::dial::Dialer;
use pvfs_coord::stream::{Start, StreamEvent, follow_cluster};
use pvfs_history::{Group, Point, SeriesKey, Stat, Tier};
use pvfs_metrics::rates::{Rates, follows};
use pvfs_metrics::ring::Stamped;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// The agents' tier: their rings keep an hour unless `pvfs-agent --history` says otherwise.
/// Never stored by serve, so it has no chunks (`chunk_points` is not used).
pub const SECOND: Tier = Tier { step_s: 1, keep_s: 3600, name: "1s", chunk_points: 3600 };

/// The longest a read of a node's seconds takes before answering with what it has.
const READ_FOR: Duration = Duration::from_secs(10);

/// What reaching the agents needs: the cluster's nodes and the dialer.
#[derive(Clone)]
pub struct Agents {
    pub cluster: Arc<Cluster>,
    pub dialer: Dialer,
}

impl Agents {
    /// `node`'s stream from `since` (Unix ns), its samples asked with `processes`; ends on `stop`.
    pub fn follow(
        &self,
        node: &str,
        since: u64,
        processes: u32,
        stop: CancellationToken,
    ) -> Option<tokio::sync::mpsc::Receiver<StreamEvent>> {
        let known = self.cluster.nodes.iter().find(|n| n.name == node)?;
        let mut one = (*self.cluster).clone();
        one.nodes = vec![known.clone()];
        Some(follow_cluster(
            &one,
            &self.dialer,
            &HashMap::new(),
            Start::Since { unix_ns: since },
            processes,
            stop,
        ))
    }

    /// `node`'s seconds that end in `[from, to)` (Unix seconds), as points of one second, oldest
    /// first; fewer when the agent no longer holds them, or has not taken the last yet, or does
    /// not answer within a few seconds.
    pub async fn seconds(&self, node: &str, from: u64, to: u64) -> Vec<Point> {
        // A range into the future ends with the second now under way.
        let to = to.min(unix_now_ns() / 1_000_000_000 + 1);
        let stop = CancellationToken::new();
        // A second before `from`: the first second's baseline.
        let since = from.saturating_sub(2).saturating_mul(1_000_000_000);
        let Some(mut events) = self.follow(node, since, 0, stop.clone()) else { return Vec::new() };
        let mut points = Vec::new();
        let mut prev: Option<Stamped> = None;
        let deadline = tokio::time::Instant::now() + READ_FOR;
        loop {
            let event = tokio::select! {
                event = events.recv() => event,
                () = tokio::time::sleep_until(deadline) => None,
            };
            let Some(event) = event else { break };
            match event {
                StreamEvent::Sample { stamped, .. } => {
                    let end = stamped.sample.time_unix_ns / 1_000_000_000;
                    if let Some(before) = &prev
                        && follows(before, &stamped)
                        && (from..to).contains(&end)
                    {
                        points.push(point(before, &stamped));
                    }
                    prev = Some(*stamped);
                    // The range's last second is in.
                    if end + 1 >= to {
                        break;
                    }
                }
                StreamEvent::Down { .. } => break,
                _ => {}
            }
        }
        stop.cancel();
        points
    }
}

/// The second from `prev` to `curr` as a point of one second.
fn point(prev: &Stamped, curr: &Stamped) -> Point {
    let rates = Rates::between(&prev.sample, &curr.sample);
    let devices = curr.sample.visible_devices(false);
    let mut series = Vec::new();
    pvfs_history::series::each_value(&rates, &devices, |group: Group, device, column, value| {
        let v = value as f32;
        series.push((SeriesKey::new(group, device, column), Stat { avg: v, min: v, max: v }));
    });
    series.sort_by(|a, b| a.0.cmp(&b.0));
    Point { start: curr.sample.time_unix_ns / 1_000_000_000, seconds: 1, series }
}

/// Now, in Unix nanoseconds (a stream's `since`).
pub(crate) fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
