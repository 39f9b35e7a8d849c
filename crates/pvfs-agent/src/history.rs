//! The agent's sample history: the sampler task writes it once a second; every `Metrics`
//! stream reads it by cursor.

use pvfs_host::Root;
use pvfs_metrics::rates::Rates;
use pvfs_metrics::ring::{Next, Ring, Stamped};
use pvfs_metrics::sample::{DeviceFilter, Sample, Sampler, until_tick};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The ring plus a signal that a new sample is in.
#[derive(Debug)]
pub struct History {
    // A std Mutex, not tokio's: it is held only to push or decode one entry, never across an
    // await, so an async lock would only add cost.
    ring: Mutex<Ring>,
    // Carries the newest sequence number. A watch (not a broadcast) because readers only need
    // to know "something new", and a slow reader must not make the channel hold samples: the
    // ring is the only buffer.
    newest: watch::Sender<u64>,
}

impl History {
    pub fn new(epoch: u64, capacity: usize) -> Arc<History> {
        Arc::new(History { ring: Mutex::new(Ring::new(epoch, capacity)), newest: watch::Sender::new(0) })
    }

    fn ring(&self) -> MutexGuard<'_, Ring> {
        // A panic while holding the lock leaves the ring consistent (every method finishes its
        // one change before it can fail), so a poisoned lock is still usable.
        self.ring.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn push(&self, sample: &Sample) -> u64 {
        let seq = self.ring().push(sample);
        self.newest.send_replace(seq);
        seq
    }

    pub fn next_after(&self, epoch: u64, after: u64) -> Next {
        self.ring().next_after(epoch, after)
    }

    pub fn epoch(&self) -> u64 {
        self.ring().epoch()
    }

    /// The newest sample taken before `time_unix_ns` (0 if none is held).
    pub fn seq_before(&self, time_unix_ns: u64) -> u64 {
        self.ring().seq_before(time_unix_ns)
    }

    /// The epoch and the newest sequence number (0 before the first sample).
    pub fn newest(&self) -> (u64, u64) {
        let ring = self.ring();
        (ring.epoch(), ring.last_seq())
    }

    /// The newest sample and the rates since the one before it (when both are held).
    pub fn latest_with_rates(&self) -> (Option<Stamped>, Option<Rates>) {
        let ring = self.ring();
        let last = ring.last_seq();
        let latest = ring.get(last);
        let rates = match (&latest, last.checked_sub(1).and_then(|p| ring.get(p))) {
            (Some(curr), Some(prev)) => Some(Rates::between(&prev.sample, &curr.sample)),
            _ => None,
        };
        (latest, rates)
    }

    /// Notified on every new sample.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.newest.subscribe()
    }
}

/// Samples the node on every `interval` boundary into `history` until `shutdown`.
pub async fn run_sampler(history: Arc<History>, root: Root, interval: Duration, shutdown: CancellationToken) {
    let mut sampler = Sampler::new(root, DeviceFilter::WholeDevices);
    loop {
        let wait = until_tick(SystemTime::now(), interval);
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
        let started = Instant::now();
        // /proc and /sys reads are served from kernel memory and take microseconds, so they
        // run on the async thread rather than paying for a blocking-pool hand-off each second.
        match sampler.sample() {
            Ok(sample) => {
                history.push(&sample);
            }
            Err(err) => tracing::warn!(error = %err, "sample skipped"),
        }
        let took = started.elapsed();
        if took > interval / 5 {
            tracing::warn!(took_ms = took.as_millis() as u64, "sampling took long; samples may be late");
        }
    }
}
