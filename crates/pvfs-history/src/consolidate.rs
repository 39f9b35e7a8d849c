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

/// A series' running figures.
#[derive(Debug, Clone, Copy)]
struct Acc {
    sum: f64,
    count: u32,
    min: f64,
    max: f64,
}

impl Acc {
    fn new() -> Acc {
        Acc { sum: 0.0, count: 0, min: f64::INFINITY, max: f64::NEG_INFINITY }
    }

    fn add(&mut self, value: f64) {
        self.sum += value;
        self.count += 1;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }
}

/// A point being filled.
#[derive(Debug, Clone)]
pub(crate) struct Open {
    start: u64,
    seconds: u32,
    series: Vec<(SeriesKey, Acc)>,
    /// Where the next value is expected: a node's series come in the same order every second,
    /// so each is found at the cursor, without a search or an allocation.
    cursor: usize,
}

impl Open {
    fn new(start: u64) -> Open {
        Open { start, seconds: 0, series: Vec::new(), cursor: 0 }
    }

    /// Starts a second.
    fn second(&mut self) {
        self.seconds += 1;
        self.cursor = 0;
    }

    fn add(&mut self, group: Group, device: &str, column: &str, value: f64) {
        // NaN (a rate sysstat cannot work out) and infinities are absent, not numbers.
        if !value.is_finite() {
            return;
        }
        let at = match self.series.get(self.cursor) {
            Some((key, _)) if key.is(group, device, column) => self.cursor,
            _ => match self.series.iter().position(|(key, _)| key.is(group, device, column)) {
                Some(at) => at,
                None => {
                    self.series.push((SeriesKey::new(group, device, column), Acc::new()));
                    self.series.len() - 1
                }
            },
        };
        self.series[at].1.add(value);
        self.cursor = at + 1;
    }

    fn close(self) -> Point {
        let stat = |acc: &Acc| Stat {
            avg: (acc.sum / f64::from(acc.count)) as f32,
            min: acc.min as f32,
            max: acc.max as f32,
        };
        let mut series: Vec<(SeriesKey, Stat)> = self
            .series
            .iter()
            .filter(|(_, acc)| acc.count > 0)
            .map(|(key, acc)| (key.clone(), stat(acc)))
            .collect();
        series.sort_by(|a, b| a.0.cmp(&b.0));
        Point { start: self.start, seconds: self.seconds, series }
    }

    /// Keeps the series (and their order) for the next point, emptied.
    fn next(&self, start: u64) -> Open {
        Open {
            start,
            seconds: 0,
            series: self.series.iter().map(|(key, _)| (key.clone(), Acc::new())).collect(),
            cursor: 0,
        }
    }
}

/// A node's open point in one tier.
#[derive(Debug, Default)]
pub(crate) struct Consolidator {
    open: Option<Open>,
}

impl Consolidator {
    /// Adds the second whose middle is Unix time `t` (its values given to `fill`), and returns
    /// the point it closed, if it belongs to a later one. A second older than the open point
    /// (a clock stepped back) is dropped: a point once closed is not reopened.
    pub(crate) fn add(
        &mut self,
        tier: &Tier,
        t: u64,
        fill: impl FnOnce(&mut dyn FnMut(Group, &str, &str, f64)),
    ) -> Option<Point> {
        let start = tier.point_of(t);
        let mut closed = None;
        let open = match self.open.take() {
            Some(open) if open.start == start => open,
            Some(open) if open.start < start => {
                let next = open.next(start);
                closed = Some(open.close());
                next
            }
            Some(open) => {
                self.open = Some(open);
                return None;
            }
            None => Open::new(start),
        };
        let open = self.open.insert(open);
        open.second();
        fill(&mut |group, device, column, value| open.add(group, device, column, value));
        closed
    }

    /// Closes the open point if it ended at or before `t`.
    pub(crate) fn close_before(&mut self, tier: &Tier, t: u64) -> Option<Point> {
        match &self.open {
            Some(open) if open.start + tier.step_s <= t => self.open.take().map(Open::close),
            _ => None,
        }
    }

    /// Closes the open point whatever its time (`serve` is stopping).
    pub(crate) fn close(&mut self) -> Option<Point> {
        self.open.take().map(Open::close)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tier::TIERS;

    fn second(c: &mut Consolidator, t: u64, util: f64) -> Option<Point> {
        c.add(&TIERS[0], t, |each| {
            each(Group::Cpu, "", "%usr", 1.0);
            each(Group::Disk, "sda", "%util", util);
        })
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
        let point = c.close().expect("open");
        assert_eq!((point.start, point.seconds), (110, 1));
    }

    #[test]
    fn a_node_that_falls_silent_has_its_point_closed_by_time_and_a_gap_after() {
        let mut c = Consolidator::default();
        second(&mut c, 100, 1.0);
        second(&mut c, 101, 1.0);
        assert_eq!(c.close_before(&TIERS[0], 109), None);
        let point = c.close_before(&TIERS[0], 110).expect("closed by time");
        assert_eq!((point.start, point.seconds), (100, 2));
        // Back after a minute: the next point is the one it came back in; none between.
        let closed = second(&mut c, 161, 1.0);
        assert_eq!(closed, None);
        assert_eq!(c.close().map(|p| p.start), Some(160));
    }

    #[test]
    fn a_value_that_is_not_a_number_is_absent_and_a_second_from_the_past_is_dropped() {
        let mut c = Consolidator::default();
        second(&mut c, 100, f64::NAN);
        assert_eq!(second(&mut c, 95, 50.0), None);
        let point = c.close().expect("open");
        assert_eq!(point.seconds, 1);
        assert!(point.series.iter().all(|(k, _)| k.group == Group::Cpu), "{point:?}");
    }
}
