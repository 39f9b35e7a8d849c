//! Which clients keep a server's targets busy: each export's stats (`obdfilter.*.exports.NID.stats`,
//! `mdt.*.exports.NID.stats`: the target's counters for that one client, in a stats file's
//! format), read every second, and the busiest few of each target kept.
//!
//! A server has an export per client per target: thousands on a large cluster, each file a few
//! hundred bytes. Every file is read each second (the only way to know which clients moved), but
//! what is kept does not grow with them: one small record per export for its last totals (to
//! rate the next second against), and the [`BUSIEST`] exports of each target in full — their
//! counters for the exporter, their rates for `top`. Nothing else of a file outlives its read.
//! At most [`MAX_FILES`] files are read a second; a server with more says so in its snapshot's
//! errors rather than spending the agent's budget on them.

use super::node::Kind;
use super::{CounterLine, Stat, StatsError, visit_stats};
use std::collections::HashMap;

/// Exports kept per target each second: the busiest, by bytes then operations.
pub const BUSIEST: usize = 8;

/// Export files read a second at most (a node with more reads the first this many, in lctl's
/// order, and says so).
pub const MAX_FILES: usize = 4096;

/// One client's export of a target: its counters (cumulative, as the kernel keeps them), and
/// what it did over the second before, when the export was read then too.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Export {
    /// The client's NID, as the export's directory names it: `192.168.0.100@o2ib`, `0@lo`.
    pub nid: String,
    pub counters: Vec<Stat>,
    pub rates: Option<ExportRates>,
}

/// An export over one interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ExportRates {
    pub read_bytes_s: f64,
    pub write_bytes_s: f64,
    /// An OST's reads and writes (RPCs), an MDT's every operation, as its target's are counted.
    pub ops_s: f64,
}

/// What an export has done in all: the figures its rates come from.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Totals {
    read_bytes: u64,
    write_bytes: u64,
    ops: u64,
}

impl Totals {
    /// Adds one counter's line.
    fn add(&mut self, kind: Kind, c: &CounterLine<'_>) {
        match c.name {
            "read_bytes" => self.read_bytes = self.read_bytes.saturating_add(c.sum.unwrap_or(0)),
            "write_bytes" => self.write_bytes = self.write_bytes.saturating_add(c.sum.unwrap_or(0)),
            _ => {}
        }
        if kind.counts_as_op(c.name) {
            self.ops = self.ops.saturating_add(c.samples);
        }
    }
}

/// An export file's kernel time and totals, read without keeping anything of it: enough to
/// rate it and to tell whether it is among its target's busiest (only those are parsed whole).
fn glance(kind: Kind, text: &str) -> Result<(Option<f64>, Totals), StatsError> {
    let mut totals = Totals::default();
    let times = visit_stats(text, |c| totals.add(kind, &c))?;
    Ok((times.snapshot_time, totals))
}

/// Each export's last totals and when the kernel read them, so the next second is rated
/// against them: an entry per export read in the last round only, found by borrowed names (no
/// allocation for an export already known).
#[derive(Debug, Default)]
pub struct Tracker {
    /// Target → NID → (the round it was last read in, kernel time, totals).
    last: HashMap<String, HashMap<String, (u64, f64, Totals)>>,
    round: u64,
}

impl Tracker {
    /// Rates `now` (read at kernel time `at`, `None` when the file had none) against the
    /// export's previous read, and remembers it for the next. `None` the first time, or when
    /// no time says how long it was.
    fn rate(&mut self, target: &str, nid: &str, at: Option<f64>, now: Totals) -> Option<ExportRates> {
        let at = at?;
        let round = self.round;
        let nids = match self.last.get_mut(target) {
            Some(nids) => nids,
            None => self.last.entry(target.to_owned()).or_default(),
        };
        let before = match nids.get_mut(nid) {
            Some(entry) => Some(std::mem::replace(entry, (round, at, now))),
            None => {
                nids.insert(nid.to_owned(), (round, at, now));
                None
            }
        };
        let (_, then, was) = before?;
        let seconds = at - then;
        if seconds <= 0.0 {
            return None;
        }
        // A counter that went back is a new export (the client reconnected): counted from zero.
        let delta = |now: u64, was: u64| (if now >= was { now - was } else { now }) as f64 / seconds;
        Some(ExportRates {
            read_bytes_s: delta(now.read_bytes, was.read_bytes),
            write_bytes_s: delta(now.write_bytes, was.write_bytes),
            ops_s: delta(now.ops, was.ops),
        })
    }

    /// Forgets the exports not read in this round (gone, or beyond [`MAX_FILES`]), and begins
    /// the next.
    fn end_round(&mut self) {
        let round = self.round;
        for nids in self.last.values_mut() {
            nids.retain(|_, (seen, _, _)| *seen == round);
        }
        self.last.retain(|_, nids| !nids.is_empty());
        self.round += 1;
    }

    /// How many exports it remembers (for tests of its bound).
    pub fn len(&self) -> usize {
        self.last.values().map(HashMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }
}

/// A target's busiest exports while its files are read one by one: holds `keep` at most.
#[derive(Debug)]
pub struct Busiest {
    keep: usize,
    exports: Vec<(Rank, Export)>,
}

/// How busy an export is: rated exports by bytes a second then operations a second, before
/// the unrated by bytes in all.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
struct Rank(u8, f64, f64);

impl Rank {
    fn of(rates: Option<ExportRates>, totals: Totals) -> Rank {
        match rates {
            Some(r) => Rank(1, r.read_bytes_s + r.write_bytes_s, r.ops_s),
            None => Rank(0, totals.read_bytes.saturating_add(totals.write_bytes) as f64, 0.0),
        }
    }
}

impl Busiest {
    pub fn new(keep: usize) -> Busiest {
        Busiest { keep, exports: Vec::new() }
    }

    /// Where an export of `rank` named `nid` would go; `None` when it would not be kept. The
    /// NID settles a tie, so the order is the same every second.
    fn place(&self, rank: Rank, nid: &str) -> Option<usize> {
        let at = self.exports.partition_point(|(r, e)| match rank.partial_cmp(r) {
            Some(std::cmp::Ordering::Greater) => false,
            Some(std::cmp::Ordering::Less) => true,
            _ => e.nid.as_str() < nid,
        });
        (at < self.keep).then_some(at)
    }

    fn insert(&mut self, at: usize, rank: Rank, export: Export) {
        self.exports.insert(at, (rank, export));
        self.exports.truncate(self.keep);
    }

    pub fn into_vec(self) -> Vec<Export> {
        self.exports.into_iter().map(|(_, e)| e).collect()
    }
}

/// Reads one round of export files: each `(target, kind, nid, text)` glanced at, rated against
/// `tracker`'s last round, and parsed whole only when it is among its target's busiest so far
/// (`keep` each); a file that does not read is named in `errors`. Returns each target's
/// busiest, by target name.
pub fn round<'a>(
    tracker: &mut Tracker,
    keep: usize,
    files: impl Iterator<Item = (&'a str, Kind, &'a str, String)>,
    errors: &mut Vec<String>,
) -> HashMap<String, Vec<Export>> {
    let mut busiest: HashMap<String, Busiest> = HashMap::new();
    for (target, kind, nid, text) in files {
        let parsed = glance(kind, &text).and_then(|(at, totals)| {
            let rates = tracker.rate(target, nid, at, totals);
            let rank = Rank::of(rates, totals);
            let target_busiest = match busiest.get_mut(target) {
                Some(b) => b,
                None => busiest.entry(target.to_owned()).or_insert_with(|| Busiest::new(keep)),
            };
            if let Some(at) = target_busiest.place(rank, nid) {
                let stats = super::parse_stats(&text)?;
                target_busiest.insert(
                    at,
                    rank,
                    Export { nid: nid.to_owned(), counters: stats.counters, rates },
                );
            }
            Ok(())
        });
        if let Err(e) = parsed {
            errors.push(format!("{target} export {nid}'s stats: {e}"));
        }
    }
    tracker.end_round();
    busiest.into_iter().map(|(target, b)| (target, b.into_vec())).collect()
}

/// The target and NID of an export's stats parameter (`obdfilter.fs-OST0000.exports.NID.stats`:
/// the NID keeps its own dots), and its target's kind; `None` for any other name.
pub fn parse_name(name: &str) -> Option<(&str, Kind, &str)> {
    let (kind, rest) = if let Some(rest) = name.strip_prefix("obdfilter.") {
        (Kind::Ost, rest)
    } else {
        (Kind::Mdt, name.strip_prefix("mdt.")?)
    };
    let (target, rest) = rest.split_once(".exports.")?;
    let nid = rest.strip_suffix(".stats")?;
    (!target.is_empty() && !target.contains('.') && !nid.is_empty()).then_some((target, kind, nid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(at: f64, read: u64, write: u64) -> String {
        format!(
            "snapshot_time {at:.9} secs.nsecs\n\
             read_bytes {r} samples [bytes] 1048576 1048576 {rb}\n\
             write_bytes {w} samples [bytes] 1048576 1048576 {wb}\n\
             statfs 3 samples [usecs] 1 4 7 21\n",
            r = read.max(1),
            rb = read.max(1) << 20,
            w = write.max(1),
            wb = write.max(1) << 20,
        )
    }

    #[test]
    fn an_exports_name_gives_its_target_and_nid_with_the_nids_dots() {
        assert_eq!(
            parse_name("obdfilter.fs-OST0000.exports.192.168.0.100@o2ib.stats"),
            Some(("fs-OST0000", Kind::Ost, "192.168.0.100@o2ib"))
        );
        assert_eq!(parse_name("mdt.fs-MDT0000.exports.0@lo.stats"), Some(("fs-MDT0000", Kind::Mdt, "0@lo")));
        for other in [
            "obdfilter.fs-OST0000.stats",
            "mdt.fs-MDT0000.exports.0@lo.uuid",
            "obdfilter..exports.0@lo.stats",
            "obdfilter.fs-OST0000.exports..stats",
            "llite.fs-ffff.exports.0@lo.stats",
        ] {
            assert_eq!(parse_name(other), None, "{other}");
        }
    }

    /// Two rounds: the second rates every export against the first by the kernel's times, and
    /// keeps the busiest three of each target in order; the first has no rates.
    #[test]
    fn the_busiest_exports_are_kept_with_their_rates() {
        let mut tracker = Tracker::default();
        let mut errors = Vec::new();
        let nids: Vec<String> = (0..6).map(|i| format!("10.0.0.{i}@tcp")).collect();
        let first: Vec<_> =
            nids.iter().map(|n| ("fs-OST0000", Kind::Ost, n.as_str(), stats(100.0, 10, 10))).collect();
        let kept = round(&mut tracker, 3, first.into_iter(), &mut errors);
        assert!(kept["fs-OST0000"].iter().all(|e| e.rates.is_none()));
        assert_eq!(kept["fs-OST0000"].len(), 3);
        // Half a second later: client i wrote i MiB more, client 5 read 4 MiB more too.
        let second: Vec<_> = nids
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let read = if i == 5 { 14 } else { 10 };
                ("fs-OST0000", Kind::Ost, n.as_str(), stats(100.5, read, 10 + i as u64))
            })
            .collect();
        let kept = round(&mut tracker, 3, second.into_iter(), &mut errors);
        let ost = &kept["fs-OST0000"];
        assert_eq!(
            ost.iter().map(|e| e.nid.as_str()).collect::<Vec<_>>(),
            ["10.0.0.5@tcp", "10.0.0.4@tcp", "10.0.0.3@tcp"]
        );
        let r = ost[0].rates.unwrap();
        assert_eq!((r.read_bytes_s, r.write_bytes_s, r.ops_s), (8.0 * 1048576.0, 10.0 * 1048576.0, 18.0));
        assert_eq!(ost[0].counters.len(), 3, "its counters kept whole for the exporter");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(tracker.len(), 6);
    }

    /// An export gone is forgotten; one whose counters went back counts from zero; a file that
    /// is not a stats file is named and the rest kept.
    #[test]
    fn gone_reset_and_unreadable_exports() {
        let mut tracker = Tracker::default();
        let mut errors = Vec::new();
        let files = |r: Vec<(&'static str, String)>| {
            r.into_iter().map(|(nid, text)| ("fs-OST0000", Kind::Ost, nid, text)).collect::<Vec<_>>()
        };
        round(
            &mut tracker,
            8,
            files(vec![("a@tcp", stats(1.0, 50, 50)), ("b@tcp", stats(1.0, 5, 5))]).into_iter(),
            &mut errors,
        );
        let kept = round(
            &mut tracker,
            8,
            files(vec![("a@tcp", stats(2.0, 2, 1)), ("c@tcp", "not stats\n".to_owned())]).into_iter(),
            &mut errors,
        );
        let a = kept["fs-OST0000"][0].rates.unwrap();
        assert_eq!((a.read_bytes_s, a.write_bytes_s), (2.0 * 1048576.0, 1048576.0));
        assert_eq!(tracker.len(), 1, "b is gone, c never parsed");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("fs-OST0000 export c@tcp's stats: line 1"), "{errors:?}");
    }

    /// However many exports a round reads, each target keeps `keep`.
    #[test]
    fn what_is_kept_does_not_grow_with_the_clients() {
        let mut tracker = Tracker::default();
        let mut errors = Vec::new();
        let nids: Vec<String> = (0..3000).map(|i| format!("10.0.{}.{}@o2ib", i / 256, i % 256)).collect();
        for at in [1.0, 2.0] {
            let files: Vec<_> = nids
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    ("fs-OST0001", Kind::Ost, n.as_str(), stats(at, (i as u64 * at as u64) % 977, 1))
                })
                .collect();
            let kept = round(&mut tracker, BUSIEST, files.into_iter(), &mut errors);
            assert_eq!(kept["fs-OST0001"].len(), BUSIEST);
        }
        assert_eq!(tracker.len(), 3000);
    }
}
