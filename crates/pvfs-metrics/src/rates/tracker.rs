//! Rates from a stream of numbered samples, per node: the one place that decides which two
//! samples may be compared.
//!
//! Rates are only meaningful between consecutive samples of one agent process: the same epoch
//! (the process's start time) and the next sequence number. Anything else — a gap the agent no
//! longer holds, a restarted agent whose counters started over elsewhere, a node that went
//! down — makes the next sample a new baseline rather than half of a bogus interval.

use super::Rates;
use crate::ring::Stamped;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// Each node's previous sample, the baseline of its next rates.
#[derive(Debug, Clone, Default)]
pub struct RateTracker {
    prev: HashMap<String, Stamped>,
}

impl RateTracker {
    pub fn new() -> RateTracker {
        RateTracker::default()
    }

    /// Feeds `node`'s next sample. Returns the rates since the node's previous sample when
    /// `stamped` directly follows it (same epoch, next sequence number), and `None` otherwise
    /// (the first sample, after a gap, after a restart or [`forget`](Self::forget)). Either
    /// way `stamped` becomes the node's baseline; it is handed back so the caller can read it
    /// without keeping a copy.
    pub fn next(&mut self, node: &str, stamped: Stamped) -> (Option<Rates>, &Stamped) {
        match self.prev.entry(node.to_owned()) {
            Entry::Occupied(slot) => {
                let prev = slot.into_mut();
                let rates = follows(prev, &stamped).then(|| Rates::between(&prev.sample, &stamped.sample));
                *prev = stamped;
                (rates, prev)
            }
            Entry::Vacant(slot) => (None, slot.insert(stamped)),
        }
    }

    /// Drops `node`'s baseline, so its next sample only starts a new one. For the stream's
    /// gap, restart and down events: whatever comes next is not known to follow what was
    /// seen.
    pub fn forget(&mut self, node: &str) {
        self.prev.remove(node);
    }
}

/// Whether `curr` is the sample right after `prev` from the same agent process: the rule for
/// those who keep their own baseline (the exporter keeps two samples and computes rates when
/// scraped).
pub fn follows(prev: &Stamped, curr: &Stamped) -> bool {
    prev.epoch == curr.epoch && prev.seq.checked_add(1) == Some(curr.seq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Sample;

    const SEC: u64 = 1_000_000_000;

    /// Sample `seq` of agent process `epoch`, taken `seq` seconds into it.
    fn stamped(epoch: u64, seq: u64) -> Stamped {
        let sample = Sample {
            time_unix_ns: 1_700_000_000 * SEC + seq * SEC,
            mono_ns: seq * SEC,
            disks: Vec::new(),
            nics: Vec::new(),
            cpu: Default::default(),
            mem: Default::default(),
            load: Default::default(),
            fs: None,
        };
        Stamped { epoch, seq, sample }
    }

    fn rates(t: &mut RateTracker, node: &str, epoch: u64, seq: u64) -> Option<Rates> {
        t.next(node, stamped(epoch, seq)).0
    }

    #[test]
    fn consecutive_samples_give_rates_over_their_interval() {
        let mut t = RateTracker::new();
        assert_eq!(rates(&mut t, "n1", 7, 1), None, "the first sample is only a baseline");
        let r = rates(&mut t, "n1", 7, 2).expect("seq 2 follows seq 1");
        assert_eq!(r.interval_s, 1.0);
        assert_eq!(r.time_unix_ns, 1_700_000_002 * SEC, "stamped with the later sample");
        assert!(rates(&mut t, "n1", 7, 3).is_some());
    }

    #[test]
    fn nodes_are_tracked_apart() {
        let mut t = RateTracker::new();
        assert_eq!(rates(&mut t, "n1", 7, 1), None);
        assert_eq!(rates(&mut t, "n2", 7, 2), None, "n2's first sample, whatever n1 sent");
        assert!(rates(&mut t, "n1", 7, 2).is_some());
        assert!(rates(&mut t, "n2", 7, 3).is_some());
    }

    #[test]
    fn a_gap_makes_the_next_sample_a_baseline() {
        let mut t = RateTracker::new();
        rates(&mut t, "n1", 7, 1);
        assert_eq!(rates(&mut t, "n1", 7, 4), None, "samples 2 and 3 are missing");
        assert!(rates(&mut t, "n1", 7, 5).is_some(), "and 5 follows 4");
        assert_eq!(rates(&mut t, "n1", 7, 5), None, "the same sample twice is no interval");
    }

    #[test]
    fn a_new_epoch_makes_the_next_sample_a_baseline() {
        let mut t = RateTracker::new();
        rates(&mut t, "n1", 7, 1);
        // The agent restarted: its sequence starts over, and seq 2 of the new process does
        // not follow seq 1 of the old one.
        assert_eq!(rates(&mut t, "n1", 8, 2), None);
        assert!(rates(&mut t, "n1", 8, 3).is_some());
    }

    #[test]
    fn a_forgotten_node_starts_over() {
        let mut t = RateTracker::new();
        rates(&mut t, "n1", 7, 1);
        rates(&mut t, "n2", 7, 1);
        // n1 went down: even its very next sample is only a baseline.
        t.forget("n1");
        assert_eq!(rates(&mut t, "n1", 7, 2), None);
        assert!(rates(&mut t, "n1", 7, 3).is_some());
        assert!(rates(&mut t, "n2", 7, 2).is_some(), "n2 is not affected");
        t.forget("unknown");
    }

    #[test]
    fn the_sample_fed_is_handed_back() {
        let mut t = RateTracker::new();
        let (_, latest) = t.next("n1", stamped(7, 1));
        assert_eq!(latest.seq, 1);
        let (_, latest) = t.next("n1", stamped(7, 2));
        assert_eq!((latest.epoch, latest.seq), (7, 2));
    }
}
