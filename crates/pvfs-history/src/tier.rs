//! The history's tiers: how long a point spans and how long it is kept.
//!
//! gmetad's default RRDs keep 15 s points for a day, 1 min for 2 weeks and 10 min for a year,
//! averages only. These keep finer points for longer, each with its minimum and maximum so that
//! a one-second spike is still visible at 10 min. The 1 s tier is the agents' own ring (their
//! last hour), read from them, not copied here.

/// One tier of consolidated points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tier {
    /// What a point spans, in seconds; points start at multiples of it (Unix time).
    pub step_s: u64,
    /// How long its points are kept, in seconds.
    pub keep_s: u64,
    /// Its name in the store's tables and in the API (`10s`, `1m`, `10m`).
    pub name: &'static str,
    /// Points per stored chunk. A chunk is compressed once it is complete; until then its
    /// points are tail rows, one per node per point. Long chunks compress a little better, but
    /// every node's tail holds up to a chunk of points of every tier: at 360 points each (an
    /// hour of 10 s, 6 h of 1 min, 60 h of 10 min), the tails of 1,000 nodes of 1,448 series
    /// were tens of GB. These keep each tail to an hour or less of writing, bar the 10 min
    /// tier's 6 hours (36 points).
    pub chunk_points: u64,
}

const DAY: u64 = 86_400;

/// The tiers, finest first.
pub const TIERS: [Tier; 3] = [
    Tier { step_s: 10, keep_s: 7 * DAY, name: "10s", chunk_points: 90 },
    Tier { step_s: 60, keep_s: 90 * DAY, name: "1m", chunk_points: 60 },
    Tier { step_s: 600, keep_s: 730 * DAY, name: "10m", chunk_points: 36 },
];

/// The longest a chunk has ever spanned, in points: stores written before the tiers had
/// their own chunk lengths hold chunks of 360 points, which a read of a range must still find
/// when one began before the range.
pub const LONGEST_CHUNK_POINTS: u64 = 360;

impl Tier {
    /// The start of the point holding Unix second `t`.
    pub fn point_of(&self, t: u64) -> u64 {
        t - t % self.step_s
    }

    /// What one chunk spans, in seconds.
    pub fn chunk_span(&self) -> u64 {
        self.step_s * self.chunk_points
    }

    /// The start of the chunk holding the point that starts at `start`.
    pub fn chunk_of(&self, start: u64) -> u64 {
        start - start % self.chunk_span()
    }

    /// The tier named `name`.
    pub fn named(name: &str) -> Option<Tier> {
        TIERS.into_iter().find(|tier| tier.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tier_is_finer_and_kept_longer_than_gmetads_default() {
        // gmetad's defaults (gmetad.conf: RRAs "RRA:AVERAGE:0.5:1:5856" "RRA:AVERAGE:0.5:4:20160"
        // "RRA:AVERAGE:0.5:40:52704" at step 15): 15 s for ~a day, 1 min for 14 days, 10 min for a year.
        let gmetad = [(15, 5856 * 15), (60, 20160 * 60), (600, 52704 * 600)];
        for (tier, (step, kept)) in TIERS.iter().zip(gmetad) {
            assert!(tier.step_s <= step, "{}", tier.name);
            assert!(tier.keep_s > kept, "{}", tier.name);
        }
    }

    #[test]
    fn a_second_falls_in_the_point_and_chunk_that_hold_it() {
        let tier = Tier::named("1m").expect("1m");
        assert_eq!(tier.point_of(1_700_000_059), 1_700_000_040);
        assert_eq!(tier.point_of(1_700_000_040), 1_700_000_040);
        assert_eq!(tier.chunk_of(1_700_000_040), 1_700_000_040 - 1_700_000_040 % 3_600);
        assert_eq!(Tier::named("1h"), None);
    }
}
