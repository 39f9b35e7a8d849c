//! Latency percentiles: every transfer (IOR) and item operation (mdtest) a task makes is timed
//! into an HDR histogram (the `hdrhistogram` crate), which merges exactly, so a phase's
//! percentiles are those of every operation of every task on every client, not an average of
//! averages. A task's histogram travels (engine child line, wire, MPI rank line) as its
//! recorded buckets, `(value in ns, count)` pairs of the buckets that hold anything.
//!
//! Two significant figures: each value is kept within 1 % (fio's buckets are about 1.5 %
//! wide), which bounds a task's histogram to 128 buckets per power of two of the range it saw
//! (a few KiB), where three figures would take ten times that for each of thousands of tasks.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Significant figures kept (see the module's doc).
const SIGFIG: u8 = 2;

/// One task's (or a merge's) histogram, recording as it goes.
#[derive(Debug, Clone)]
pub struct Recorder(Histogram<u64>);

impl Default for Recorder {
    fn default() -> Recorder {
        Recorder::new()
    }
}

impl Recorder {
    pub fn new() -> Recorder {
        // Auto-resizing: it grows to the largest value recorded, so memory follows the range.
        Recorder(Histogram::new(SIGFIG).unwrap_or_else(|_| unreachable_sigfig()))
    }

    /// Records one operation of `ns` nanoseconds (0 is kept as 1: a clock that did not move).
    pub fn record(&mut self, ns: u64) {
        // An auto-resizing histogram takes any u64; saturate should it ever refuse.
        let _ = self.0.record(ns.max(1)).or_else(|_| self.0.record(self.0.high()));
    }

    /// Adds `count` operations of `ns` (a bucket of another histogram).
    fn record_n(&mut self, ns: u64, count: u64) {
        let _ = self.0.record_n(ns.max(1), count);
    }

    /// The buckets that hold anything, as the histogram travels.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.0.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
    }

    /// A histogram from travelled buckets, merged into this one.
    pub fn add_buckets(&mut self, buckets: &[(u64, u64)]) {
        for &(ns, count) in buckets {
            self.record_n(ns, count);
        }
    }

    /// Another histogram merged into this one.
    pub fn add(&mut self, other: &Recorder) {
        // Both auto-resize, so the addition cannot be out of range; should it ever fail, the
        // buckets one by one do the same.
        if self.0.add(&other.0).is_err() {
            self.add_buckets(&other.buckets());
        }
    }

    /// Everything recorded so far, leaving this one empty (the same size, so a task that
    /// hands its recent operations on many times a second allocates once).
    pub fn take(&mut self) -> Recorder {
        let taken = self.clone();
        self.reset();
        taken
    }

    /// Empties it, keeping its size.
    pub fn reset(&mut self) {
        self.0.reset();
    }

    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// Its percentiles; `None` when nothing was recorded.
    pub fn percentiles(&self) -> Option<Percentiles> {
        let h = &self.0;
        (!h.is_empty()).then(|| Percentiles {
            count: h.len(),
            min_ns: h.min(),
            p50_ns: h.value_at_quantile(0.50),
            p90_ns: h.value_at_quantile(0.90),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
            mean_ns: h.mean(),
        })
    }
}

/// `Histogram::new` refuses only a significant-figure count above 5.
fn unreachable_sigfig() -> Histogram<u64> {
    panic!("hdrhistogram refused {SIGFIG} significant figures")
}

/// A histogram merged from every task's buckets.
pub fn merge<'a>(tasks: impl IntoIterator<Item = &'a [(u64, u64)]>) -> Recorder {
    let mut all = Recorder::new();
    for buckets in tasks {
        all.add_buckets(buckets);
    }
    all
}

/// A phase's latency second by second: every client's operations that finished in one second
/// of the phase (counted from its start, on the coordinator's clock), merged. Each client
/// reports the operations finished since its last report about once a second; a report counts
/// in the second it arrives in, so a second holds what the clients finished during roughly
/// that second, and each operation is counted exactly once.
#[derive(Debug)]
pub struct Seconds {
    /// The phase's start (Unix seconds).
    origin: f64,
    /// The second being gathered (0 is the phase's first) and what it holds so far.
    open: Option<(u64, Recorder)>,
}

impl Seconds {
    /// A phase's seconds, from `origin` (Unix seconds).
    pub fn starting(origin: f64) -> Seconds {
        Seconds { origin, open: None }
    }

    /// A client's recent operations, arrived at `time` (Unix seconds). When `time` is in a
    /// later second than the one being gathered, that one is over: its start (Unix seconds)
    /// and percentiles are returned.
    pub fn add(&mut self, time: f64, buckets: &[(u64, u64)]) -> Option<(f64, Percentiles)> {
        if buckets.is_empty() {
            return None;
        }
        // A report from before the phase's start (clocks) or that makes no sense counts in
        // its first second.
        let since = time - self.origin;
        let second = if since.is_finite() && since >= 0.0 { since as u64 } else { 0 };
        let ended = match &self.open {
            Some((open, _)) if second > *open => self.flush(),
            _ => None,
        };
        let (_, merged) = self.open.get_or_insert_with(|| (second, Recorder::new()));
        merged.add_buckets(buckets);
        ended
    }

    /// The second being gathered, ended now (the phase is over); `None` when it holds nothing.
    pub fn flush(&mut self) -> Option<(f64, Percentiles)> {
        let (second, merged) = self.open.take()?;
        Some((self.origin + second as f64, merged.percentiles()?))
    }
}

/// What a phase's (or a client's) operations took, in nanoseconds, as fio and elbencho report
/// it: min, median, p90, p99, p99.9, max, and the mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
}

/// A duration in the unit that keeps it readable with three figures: `850 ns`, `12.3 µs`,
/// `4.56 ms`, `1.23 s`.
pub fn format_ns(ns: u64) -> String {
    let v = ns as f64;
    let (value, unit) = match ns {
        0..1_000 => return format!("{ns} ns"),
        1_000..1_000_000 => (v / 1e3, "µs"),
        1_000_000..1_000_000_000 => (v / 1e6, "ms"),
        _ => (v / 1e9, "s"),
    };
    let decimals = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.decimals$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1 µs, 2 µs, … 1000 µs once each: the median is 500 µs, p99 990 µs, within the 1 %
    /// that two significant figures keep.
    #[test]
    fn a_known_distribution_reads_back_its_percentiles() {
        let mut r = Recorder::new();
        (1..=1000u64).for_each(|us| r.record(us * 1000));
        let p = r.percentiles().unwrap();
        let near = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 * 0.01;
        assert_eq!(p.count, 1000);
        assert!(near(p.min_ns, 1_000) && near(p.max_ns, 1_000_000), "{p:?}");
        assert!(near(p.p50_ns, 500_000) && near(p.p90_ns, 900_000), "{p:?}");
        assert!(near(p.p99_ns, 990_000) && near(p.p999_ns, 999_000), "{p:?}");
        assert!((p.mean_ns - 500_500.0).abs() < 500_500.0 * 0.01, "{p:?}");
    }

    #[test]
    fn merged_buckets_are_the_whole_as_if_recorded_in_one() {
        let (mut odd, mut even, mut whole) = (Recorder::new(), Recorder::new(), Recorder::new());
        for ns in (1..=20_000u64).map(|i| i * i) {
            if ns % 2 == 1 {
                odd.record(ns)
            } else {
                even.record(ns)
            }
            whole.record(ns);
        }
        let merged = merge([odd.buckets().as_slice(), even.buckets().as_slice()]);
        assert_eq!(merged.percentiles(), whole.percentiles());
        assert_eq!(merged.buckets(), whole.buckets());
        // A travelled histogram is small: 20,000 values over 8 powers of two of range.
        assert!(whole.buckets().len() < 128 * 30, "{}", whole.buckets().len());
        assert_eq!(Recorder::new().percentiles(), None);
    }

    /// Reports arriving over three seconds of a phase begun at 99.5: each second's
    /// percentiles are those of what arrived in it, ended by the first report of a later
    /// second or by the phase's end.
    #[test]
    fn seconds_merge_what_arrived_in_each() {
        let of = |values: &[u64]| {
            let mut r = Recorder::new();
            values.iter().for_each(|&v| r.record(v));
            r.buckets()
        };
        let mut seconds = Seconds::starting(99.5);
        assert_eq!(seconds.add(99.7, &of(&[1_000, 2_000])), None);
        assert_eq!(seconds.add(100.4, &of(&[3_000])), None, "the same second of the phase");
        assert_eq!(seconds.add(100.6, &[]), None, "nothing reported ends nothing");
        let (start, first) = seconds.add(100.6, &of(&[50_000])).expect("the first second is over");
        assert_eq!((start, first.count, first.min_ns), (99.5, 3, 1_000));
        assert!(first.max_ns.abs_diff(3_000) <= 30, "within the 1 % kept: {first:?}");
        // A report late from an earlier second (a slow client) counts in the open one.
        assert_eq!(seconds.add(100.0, &of(&[60_000])), None);
        let (start, last) = seconds.flush().expect("the phase ended");
        assert_eq!((start, last.count), (100.5, 2));
        assert!(last.min_ns >= 49_500 && last.max_ns <= 60_600, "{last:?}");
        assert_eq!(seconds.flush(), None);
        // A clock that makes no sense still has its operations counted, in the first second.
        assert_eq!(seconds.add(f64::NAN, &of(&[1])), None);
        assert_eq!(seconds.flush().map(|(s, p)| (s, p.count)), Some((99.5, 1)));
        let mut early = Seconds::starting(200.0);
        assert_eq!(early.add(150.0, &of(&[1])), None);
        assert_eq!(early.flush().map(|(s, _)| s), Some(200.0), "a report from before the start");
    }

    #[test]
    fn taking_leaves_an_empty_recorder_and_adding_merges() {
        let mut r = Recorder::new();
        (1..=100u64).for_each(|v| r.record(v * 1000));
        let taken = r.take();
        assert_eq!((taken.count(), r.count()), (100, 0));
        r.record(7);
        r.add(&taken);
        assert_eq!(r.count(), 101);
        assert_eq!(r.percentiles().unwrap().min_ns, 7);
    }

    #[test]
    fn durations_read_in_their_unit() {
        let shown: Vec<String> = [850, 12_345, 4_560_000, 1_234_000_000, 250_000].map(format_ns).into();
        assert_eq!(shown, ["850 ns", "12.3 µs", "4.56 ms", "1.23 s", "250 µs"]);
    }
}
