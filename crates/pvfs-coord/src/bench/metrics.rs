//! A benchmark's metrics record: every node's per-second rates (and, when asked, its busiest
//! processes) written to the results directory's `metrics/NODE.jsonl` while the run goes, and the wait for the run's last second
//! before the record is closed. The line is `pvfs_metrics::line`'s [`MetricsLine`], the one
//! `pvfsctl top --json` and `pvfs-agent metrics --json` print.

use crate::stream::StreamEvent;
use pvfs_bench::results;
use pvfs_metrics::line::{DownLine, MetricsLine, ProcessLine, SecondLine, time_text};
use pvfs_metrics::rates::{RateTracker, Rates};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// Why the metrics record stopped.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error(transparent)]
    Write(#[from] results::ResultsError),
    #[error("a metrics line of {node} does not serialize")]
    Line {
        node: String,
        #[source]
        source: serde_json::Error,
    },
}

/// One node's second, as recorded: for a live view of the run.
#[derive(Debug, Clone)]
pub struct NodeSecond {
    pub node: String,
    pub rates: Rates,
    /// The devices the line shows (those that have done I/O since boot).
    pub devices: Vec<String>,
}

/// Writes each node's per-second rates from `samples` to the run's `metrics/NODE.jsonl` until `shutdown`
/// (or the stream ends); returns how many seconds each node recorded. Each recorded second
/// also goes to `seconds` (dropped if nobody listens). `latest` says, per node, up to when it
/// has recorded (Unix ns; `u64::MAX` while it is down, since nothing more will come), so the
/// run can wait for its last second with [`catch_up`] rather than sleep.
pub async fn record(
    mut samples: mpsc::Receiver<StreamEvent>,
    run: results::RunDir,
    seconds: mpsc::UnboundedSender<NodeSecond>,
    latest: watch::Sender<HashMap<String, u64>>,
    shutdown: CancellationToken,
) -> Result<BTreeMap<String, u64>, MetricsError> {
    let mut files: HashMap<String, results::LineFile> = HashMap::new();
    let mut tracker = RateTracker::new();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    loop {
        let event = tokio::select! {
            () = shutdown.cancelled() => break,
            event = samples.recv() => match event { Some(e) => e, None => break },
        };
        match event {
            StreamEvent::Sample { node, stamped, processes } => {
                let time_unix_ns = stamped.sample.time_unix_ns;
                if let (Some(rates), stamped) = tracker.next(&node, *stamped) {
                    let devices = stamped.sample.visible_devices(false);
                    let line = MetricsLine::Second(Box::new(SecondLine {
                        node: Some(node.clone()),
                        // Only when there were some: a second without has no `processes`.
                        processes: (!processes.is_empty())
                            .then(|| processes.iter().map(ProcessLine::from).collect()),
                        ..SecondLine::of(&rates, &devices)
                    }));
                    let line = json_line(&line)
                        .map_err(|source| MetricsError::Line { node: node.clone(), source })?;
                    let _ = seconds.send(NodeSecond { node: node.clone(), rates, devices });
                    let file = match files.entry(node.clone()) {
                        std::collections::hash_map::Entry::Occupied(f) => f.into_mut(),
                        std::collections::hash_map::Entry::Vacant(v) => v.insert(run.metrics(&node)?),
                    };
                    file.line(&line)?;
                    *counts.entry(node.clone()).or_default() += 1;
                }
                latest.send_modify(|l| {
                    l.insert(node.clone(), time_unix_ns);
                });
            }
            StreamEvent::Down { node, error } => {
                tracker.forget(&node);
                latest.send_modify(|l| {
                    l.insert(node.clone(), u64::MAX);
                });
                let line = MetricsLine::Down(DownLine {
                    down: true,
                    error: error.message,
                    node: node.clone(),
                    time: time_text(unix_ns(SystemTime::now())),
                });
                let line =
                    json_line(&line).map_err(|source| MetricsError::Line { node: node.clone(), source })?;
                if let Some(f) = files.get_mut(&node) {
                    f.line(&line)?;
                }
            }
            StreamEvent::Gap { node, .. } | StreamEvent::Restarted { node } => {
                tracker.forget(&node);
            }
            StreamEvent::Up { .. } => {}
        }
    }
    Ok(counts)
}

/// `line` as one line of JSON (`LineFile::line` adds the newline and writes both at once).
fn json_line(line: &MetricsLine) -> serde_json::Result<String> {
    serde_json::to_string(line)
}

/// Waits until every one of `nodes` has recorded a second ending at or after `finished` (or
/// is down), but no longer than `grace`: a node gone silent without being reported down yet
/// would otherwise hold the run's end forever.
pub async fn catch_up(
    latest: &mut watch::Receiver<HashMap<String, u64>>,
    nodes: &[String],
    finished: Option<SystemTime>,
    grace: Duration,
) {
    let finished = finished.map_or(0, unix_ns);
    let caught_up =
        |latest: &HashMap<String, u64>| nodes.iter().all(|n| latest.get(n).is_some_and(|t| *t >= finished));
    // An Err is the recorder having ended (its stream closed): nothing more to wait for.
    let _ = tokio::time::timeout(grace, latest.wait_for(caught_up)).await;
}

fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_metrics::processes::Process;
    use pvfs_metrics::ring::Stamped;
    use pvfs_metrics::sample::{CpuCounters, MemCounters, Sample};

    fn stamped(seq: u64) -> Box<Stamped> {
        Box::new(Stamped {
            epoch: 9,
            seq,
            sample: Sample {
                time_unix_ns: 1_763_780_000_000_000_000 + seq * 1_000_000_000,
                mono_ns: seq * 1_000_000_000,
                disks: vec![],
                nics: vec![],
                cpu: CpuCounters { user: 100 * seq, idle: 100 * seq, ..Default::default() },
                mem: MemCounters { total_kb: 1024, ..Default::default() },
                load: Default::default(),
                fs: None,
            },
        })
    }

    /// A second that came with processes records them (pidstat's keys and units); one without
    /// records no `processes` key at all, as before.
    #[tokio::test]
    async fn a_seconds_processes_are_recorded_in_its_line() {
        let base = tempfile::tempdir().unwrap();
        let run = results::RunDir::create(base.path(), "run").unwrap();
        run.make_metrics_dir().unwrap();
        let (tx, rx) = mpsc::channel(8);
        let (seconds, _) = mpsc::unbounded_channel();
        let (latest, _) = watch::channel(HashMap::new());
        let recorder = tokio::spawn(record(rx, run.clone(), seconds, latest, CancellationToken::new()));
        let dd = Process {
            pid: 4242,
            name: "dd".into(),
            cpu_percent: 12.5,
            read_bytes_per_s: 0,
            write_bytes_per_s: 3 * 1024 * 1024 + 512,
            kernel: false,
        };
        for (seq, processes) in [(1, vec![]), (2, vec![dd]), (3, vec![])] {
            tx.send(StreamEvent::Sample { node: "c1".into(), stamped: stamped(seq), processes })
                .await
                .unwrap();
        }
        drop(tx);
        assert_eq!(recorder.await.unwrap().unwrap()["c1"], 2);
        let lines = std::fs::read_to_string(run.path().join("metrics/c1.jsonl")).unwrap();
        let lines: Vec<serde_json::Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(
            lines[0]["processes"],
            serde_json::json!([{"pid": 4242, "name": "dd", "%CPU": 12.5, "kB_rd/s": 0.0, "kB_wr/s": 3072.5}])
        );
        assert!(lines[1].get("processes").is_none(), "{}", lines[1]);
        // And they read back.
        let back: MetricsLine = serde_json::from_value(lines[0].clone()).unwrap();
        let MetricsLine::Second(second) = back else { panic!("{back:?}") };
        assert_eq!(second.processes.unwrap()[0].kb_wr_s, 3072.5);
    }

    /// The wait ends as soon as every node is past the run's end or down, and at the grace
    /// period for a node that says nothing.
    #[tokio::test(start_paused = true)]
    async fn catching_up_waits_for_every_node_or_the_grace_period() {
        let (tx, mut rx) = watch::channel(HashMap::new());
        let nodes = vec!["a".to_owned(), "b".to_owned()];
        let end = UNIX_EPOCH + Duration::from_secs(100);
        tx.send_modify(|l| {
            l.insert("a".into(), unix_ns(end));
            l.insert("b".into(), u64::MAX);
        });
        let start = tokio::time::Instant::now();
        catch_up(&mut rx, &nodes, Some(end), Duration::from_secs(5)).await;
        assert_eq!(start.elapsed(), Duration::ZERO);
        tx.send_modify(|l| {
            l.insert("b".into(), unix_ns(end) - 1);
        });
        catch_up(&mut rx, &nodes, Some(end), Duration::from_secs(5)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }
}
