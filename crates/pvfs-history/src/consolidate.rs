//! Seconds into points: a node's open point per tier takes each second's values, and is closed
//! into a [`Point`] (average, minimum and maximum of each series over the seconds it saw) when
//! a second of a later point arrives or its time has passed.

use crate::series::{Group, SeriesKey};
use crate::tier::Tier;
use serde::Serialize;

/// A series' figures over one point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stat {
    pub avg: f32,
    pub min: f32,
    pub max: f32,
}

/// A consolidated point of one node.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Its start (Unix seconds), a multiple of its tier's step.
    pub start: u64,
    /// How many seconds it holds: fewer than the step when the node was down for some of them
    /// (or `serve` was not running).
    pub seconds: u32,
    /// Its series, each with the figures of the seconds that had it, in key order.
    pub series: Vec<(SeriesKey, Stat)>,
}

/// A series' running figures. The sum is kept in f64 (thousands of seconds of large rates);
/// the minimum and maximum as the f32 they are stored as (rounding keeps their order, so the
/// f32 of the minimum is the minimum of the f32s).
#[derive(Debug, Clone, Copy)]
struct Acc {
    sum: f64,
    min: f32,
    max: f32,
    count: u32,
}

impl Acc {
    const EMPTY: Acc = Acc { sum: 0.0, min: f32::INFINITY, max: f32::NEG_INFINITY, count: 0 };

    fn add(&mut self, value: f64) {
        let v = value as f32;
        self.sum += value;
        self.count += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
}

/// A point being filled: one running figure per series of the node, by the series' index.
#[derive(Debug, Clone)]
struct Open {
    start: u64,
    seconds: u32,
    accs: Vec<Acc>,
}

impl Open {
    fn new(start: u64, series: usize) -> Open {
        Open { start, seconds: 0, accs: vec![Acc::EMPTY; series] }
    }

    /// The point, with each series that had a value in it, in key order.
    fn close(self, keys: &[SeriesKey]) -> Point {
        let mut series: Vec<(SeriesKey, Stat)> = keys
            .iter()
            .zip(&self.accs)
            .filter(|(_, acc)| acc.count > 0)
            .map(|(key, acc)| {
                let avg = (acc.sum / f64::from(acc.count)) as f32;
                (key.clone(), Stat { avg, min: acc.min, max: acc.max })
            })
            .collect();
        series.sort_by(|a, b| a.0.cmp(&b.0));
        Point { start: self.start, seconds: self.seconds, series }
    }
}

/// A node's open points, one per tier, over one list of its series: a second's values are
/// matched to their series once and added to every tier's point, and each series' name is
/// held once, not once per tier (at 1,000 nodes of 1,448 series, three lists of names were
/// most of serve's memory and the matching most of its history's CPU).
#[derive(Debug, Default)]
pub(crate) struct Consolidator {
    /// Every series the node has had, in the order its seconds give them.
    keys: Vec<SeriesKey>,
    open: Vec<Option<Open>>,
}

impl Consolidator {
    /// Adds the second whose middle is Unix time `t` (its values given to `fill`) to the open
    /// point of each of `tiers`, and hands `closed` each point it closes (tier index, point):
    /// those it does not belong to, being older. A second older than a tier's open point (a
    /// clock stepped back) is dropped from that tier: a point once closed is not reopened.
    pub(crate) fn add(
        &mut self,
        tiers: &[Tier],
        t: u64,
        fill: impl FnOnce(&mut dyn FnMut(Group, &str, &str, f64)),
        mut closed: impl FnMut(usize, Point),
    ) {
        if self.open.len() < tiers.len() {
            self.open.resize(tiers.len(), None);
        }
        let Consolidator { keys, open } = self;
        let mut taking = Vec::with_capacity(tiers.len());
        for (i, tier) in tiers.iter().enumerate() {
            let start = tier.point_of(t);
            let takes = match open[i].take() {
                Some(o) if o.start == start => {
                    open[i] = Some(o);
                    true
                }
                Some(o) if o.start < start => {
                    closed(i, o.close(keys));
                    open[i] = Some(Open::new(start, keys.len()));
                    true
                }
                Some(o) => {
                    open[i] = Some(o);
                    false
                }
                None => {
                    open[i] = Some(Open::new(start, keys.len()));
                    true
                }
            };
            if takes && let Some(o) = &mut open[i] {
                o.seconds += 1;
            }
            taking.push(takes);
        }
        if !taking.contains(&true) {
            return;
        }
        // A node's series come in the same order every second, so each is found at the
        // cursor, without a search or an allocation.
        let mut cursor = 0;
        fill(&mut |group, device, column, value| {
            // NaN (a rate sysstat cannot work out) and infinities are absent, not numbers.
            if !value.is_finite() {
                return;
            }
            let at = match keys.get(cursor) {
                Some(key) if key.is(group, device, column) => cursor,
                _ => match keys.iter().position(|key| key.is(group, device, column)) {
                    Some(at) => at,
                    None => {
                        keys.push(SeriesKey::new(group, device, column));
                        for o in open.iter_mut().flatten() {
                            o.accs.push(Acc::EMPTY);
                        }
                        keys.len() - 1
                    }
                },
            };
            for (o, &takes) in open.iter_mut().zip(&taking) {
                if takes && let Some(o) = o {
                    o.accs[at].add(value);
                }
            }
            cursor = at + 1;
        });
    }

    /// Closes tier `i`'s open point if it ended (its tier's step after its start) at or
    /// before `t`.
    pub(crate) fn close_before(&mut self, i: usize, tier: &Tier, t: u64) -> Option<Point> {
        match self.open.get(i) {
            Some(Some(open)) if open.start + tier.step_s <= t => self.close(i),
            _ => None,
        }
    }

    /// Closes tier `i`'s open point whatever its time (`serve` is stopping).
    pub(crate) fn close(&mut self, i: usize) -> Option<Point> {
        let open = self.open.get_mut(i)?.take()?;
        Some(open.close(&self.keys))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tier::TIERS;

    /// One second of the finest tier; the point it closed, if any.
    fn second(c: &mut Consolidator, t: u64, util: f64) -> Option<Point> {
        let mut closed = None;
        let fill = |each: &mut dyn FnMut(Group, &str, &str, f64)| {
            each(Group::Cpu, "", "%usr", 1.0);
            each(Group::Disk, "sda", "%util", util);
        };
        c.add(&TIERS[..1], t, fill, |_, point| closed = Some(point));
        closed
    }

    #[test]
    fn a_point_holds_the_average_minimum_and_maximum_of_its_seconds() {
        let mut c = Consolidator::default();
        let mut closed = Vec::new();
        // Seconds 100..=109 make the point at 100; a spike of 100 % in one of them.
        for t in 100..110 {
            closed.extend(second(&mut c, t, if t == 104 { 100.0 } else { 0.0 }));
        }
        assert!(closed.is_empty(), "{closed:?}");
        closed.extend(second(&mut c, 110, 5.0));
        let point = closed.pop().expect("the point at 100 closed");
        assert_eq!((point.start, point.seconds), (100, 10));
        let util = &point.series.iter().find(|(k, _)| k.is(Group::Disk, "sda", "%util")).expect("util").1;
        assert_eq!(*util, Stat { avg: 10.0, min: 0.0, max: 100.0 });
        // The open point is at 110, with the second just added.
        let point = c.close(0).expect("open");
        assert_eq!((point.start, point.seconds), (110, 1));
    }

    #[test]
    fn a_node_that_falls_silent_has_its_point_closed_by_time_and_a_gap_after() {
        let mut c = Consolidator::default();
        second(&mut c, 100, 1.0);
        second(&mut c, 101, 1.0);
        assert_eq!(c.close_before(0, &TIERS[0], 109), None);
        let point = c.close_before(0, &TIERS[0], 110).expect("closed by time");
        assert_eq!((point.start, point.seconds), (100, 2));
        // Back after a minute: the next point is the one it came back in; none between.
        let closed = second(&mut c, 161, 1.0);
        assert_eq!(closed, None);
        assert_eq!(c.close(0).map(|p| p.start), Some(160));
    }

    #[test]
    fn a_value_that_is_not_a_number_is_absent_and_a_second_from_the_past_is_dropped() {
        let mut c = Consolidator::default();
        second(&mut c, 100, f64::NAN);
        assert_eq!(second(&mut c, 95, 50.0), None);
        let point = c.close(0).expect("open");
        assert_eq!(point.seconds, 1);
        assert!(point.series.iter().all(|(k, _)| k.group == Group::Cpu), "{point:?}");
    }

    /// Every tier's point is made of the same seconds as the finest tier's, whatever order a
    /// node's series come in, and a series that first appears later is in each tier from then.
    #[test]
    fn every_tier_takes_each_second_once_with_series_added_later() {
        let mut c = Consolidator::default();
        let mut closed: Vec<(usize, Point)> = Vec::new();
        for t in 0..130u64 {
            let fill = |each: &mut dyn FnMut(Group, &str, &str, f64)| {
                // The order changes, and sdb appears at 65.
                if t % 2 == 0 {
                    each(Group::Cpu, "", "%usr", t as f64);
                    each(Group::Disk, "sda", "%util", 2.0 * t as f64);
                } else {
                    each(Group::Disk, "sda", "%util", 2.0 * t as f64);
                    each(Group::Cpu, "", "%usr", t as f64);
                }
                if t >= 65 {
                    each(Group::Disk, "sdb", "%util", 1.0);
                }
            };
            c.add(&TIERS, t, fill, |i, p| closed.push((i, p)));
        }
        let minute =
            |start: u64| closed.iter().find(|(i, p)| *i == 1 && p.start == start).map(|(_, p)| p.clone());
        let first = minute(0).expect("the minute at 0");
        assert_eq!(first.seconds, 60);
        let usr = first.series.iter().find(|(k, _)| k.is(Group::Cpu, "", "%usr")).expect("usr").1;
        assert_eq!(usr, Stat { avg: 29.5, min: 0.0, max: 59.0 });
        assert!(first.series.iter().all(|(k, _)| k.device != "sdb"));
        let second = minute(60).expect("the minute at 60");
        let sdb = second.series.iter().find(|(k, _)| k.is(Group::Disk, "sdb", "%util")).expect("sdb").1;
        assert_eq!(sdb, Stat { avg: 1.0, min: 1.0, max: 1.0 });
        // The finest tier's points: 12 closed (0..120), each of 10 seconds.
        let tens: Vec<u64> = closed.iter().filter(|(i, _)| *i == 0).map(|(_, p)| p.start).collect();
        assert_eq!(tens, (0..12).map(|i| i * 10).collect::<Vec<_>>());
        // The 10 min tier's point is still open, with all 130 seconds.
        assert_eq!(c.close(2).map(|p| p.seconds), Some(130));
    }
}
