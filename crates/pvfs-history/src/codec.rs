//! How points are laid out in the store.
//!
//! - A **tail row** is one point as it was closed: written once, read until its chunk is
//!   complete. Deflated at the fastest level: a node's point is a few hundred to a few
//!   thousand series whose names repeat and whose idle devices are zeros, so it shrinks about
//!   tenfold for little CPU — plain, the tails of 1,000 nodes of 1,448 series grew the store by
//!   0.8 GB a minute (version 1 rows, plain, still read).
//! - A **chunk** is up to a tier's [`chunk_points`](crate::tier::Tier::chunk_points) points of
//!   one node in one tier, column by column: each series' averages, each XORed with the one before it (a
//!   steady value becomes zero bits), then its minima and maxima, each XORed with its own
//!   point's average (zero bits where the point was steady), the 32-bit words
//!   split into byte planes (the sign and exponent bytes, which change least, end up together),
//!   and the whole deflated. This is Gorilla's XOR idea with a general compressor behind it.
//!
//! Written by hand: the layouts are a few dozen lines, and the crates that do columnar float
//! compression (pco, tsz) would add a dependency tree or are no longer kept, for what deflate
//! (already in the tree) does with these two transforms in front of it.
//!
//! Every layout starts with a version byte, so that a later one can still read these.

use crate::consolidate::{Point, Stat};
use crate::series::{Group, SeriesKey};

/// The chunks' layouts, the same bytes after the first: a chunk of the first layout may hold
/// up to [`LONGEST_CHUNK_POINTS`](crate::tier::LONGEST_CHUNK_POINTS) points (written before the
/// tiers had chunks of their own lengths, or merged with one such); one of the second holds
/// points of its tier's chunk span only, so a read that starts after its span can skip it
/// unread ([`chunk_within_span`]).
const CHUNK_LONG: u8 = 1;
const CHUNK_SPANNED: u8 = 2;
/// A tail row's layouts: plain, and deflated.
const POINT_PLAIN: u8 = 1;
const POINT_DEFLATED: u8 = 2;
/// A tail row inflates to at most this: a point of every series a node can have.
const POINT_MAX: usize = 16 << 20;

/// A stored row that does not read: the store is damaged or of a later version.
#[derive(Debug, thiserror::Error)]
#[error("a stored {what} does not read ({why})")]
pub struct Corrupt {
    pub what: &'static str,
    pub why: &'static str,
}

/// One point as a tail row.
pub fn point_bytes(point: &Point) -> Vec<u8> {
    let mut plain = Vec::with_capacity(8 + point.series.len() * 24);
    plain.extend_from_slice(&point.seconds.to_le_bytes());
    put_len(&mut plain, point.series.len());
    for (key, stat) in &point.series {
        put_key(&mut plain, key);
        for value in [stat.avg, stat.min, stat.max] {
            plain.extend_from_slice(&value.to_le_bytes());
        }
    }
    let mut out = vec![POINT_DEFLATED];
    out.extend(miniz_oxide::deflate::compress_to_vec(&plain, 1));
    out
}

/// A tail row back into the point that starts at `start`.
pub fn point_from(start: u64, bytes: &[u8]) -> Result<Point, Corrupt> {
    let what = "point";
    let (&version, rest) = bytes.split_first().ok_or(Corrupt { what, why: "empty" })?;
    let inflated;
    let body = match version {
        POINT_PLAIN => rest,
        POINT_DEFLATED => {
            inflated = miniz_oxide::inflate::decompress_to_vec_with_limit(rest, POINT_MAX)
                .map_err(|_| Corrupt { what, why: "does not inflate" })?;
            &inflated
        }
        _ => return Err(Corrupt { what, why: "unknown version" }),
    };
    let mut r = Reader { bytes: body, what };
    let seconds = r.u32()?;
    let n = r.len()?;
    let mut series = Vec::with_capacity(n);
    for _ in 0..n {
        let key = r.key()?;
        let stat = Stat { avg: r.f32()?, min: r.f32()?, max: r.f32()? };
        series.push((key, stat));
    }
    r.end()?;
    Ok(Point { start, seconds, series })
}

/// Whether a chunk row holds only points of its tier's chunk span (the second layout), read
/// from its first byte.
pub fn chunk_within_span(bytes: &[u8]) -> bool {
    bytes.first() == Some(&CHUNK_SPANNED)
}

/// Points of one chunk (in time order, each in the chunk starting at `chunk` of a tier of
/// `step` seconds and chunks of `span` seconds) as a chunk row.
pub fn chunk_bytes(chunk: u64, step: u64, span: u64, points: &[Point]) -> Vec<u8> {
    // Every series of any point, in a fixed order; a point lacking one has a clear bit.
    let mut keys: Vec<&SeriesKey> = points.iter().flat_map(|p| p.series.iter().map(|(k, _)| k)).collect();
    keys.sort();
    keys.dedup();
    let mut plain = Vec::new();
    // Each point's slot as the step from the one before (1 but for gaps), then each point's
    // seconds (the step but where the node was down): runs that deflate to a few bytes.
    put_len(&mut plain, points.len());
    let mut slot = 0;
    for point in points {
        let at = (point.start - chunk) / step;
        plain.extend_from_slice(&u16::try_from(at - slot).unwrap_or(u16::MAX).to_le_bytes());
        slot = at;
    }
    for point in points {
        plain.extend_from_slice(&u16::try_from(point.seconds).unwrap_or(u16::MAX).to_le_bytes());
    }
    put_len(&mut plain, keys.len());
    let mut words: Vec<u32> = Vec::new();
    // Each point's series are in key order (as `Point` keeps them), so one cursor per point
    // walks them beside `keys`.
    let mut cursors = vec![0usize; points.len()];
    for key in &keys {
        put_key(&mut plain, key);
        let mut bits = vec![0u8; points.len().div_ceil(8)];
        let mut stats = Vec::with_capacity(points.len());
        for (i, point) in points.iter().enumerate() {
            if let Some((k, stat)) = point.series.get(cursors[i])
                && k == *key
            {
                cursors[i] += 1;
                bits[i / 8] |= 1 << (i % 8);
                stats.push(*stat);
            }
        }
        plain.extend_from_slice(&bits);
        // Averages XORed with the one before; minima and maxima with their own point's
        // average: over a steady point all three are equal, and cost zero bits.
        let mut prev = 0u32;
        for stat in &stats {
            words.push(stat.avg.to_bits() ^ prev);
            prev = stat.avg.to_bits();
        }
        for pick in [|s: &Stat| s.min, |s: &Stat| s.max] {
            words.extend(stats.iter().map(|stat| pick(stat).to_bits() ^ stat.avg.to_bits()));
        }
    }
    for plane in 0..4 {
        plain.extend(words.iter().map(|w| w.to_le_bytes()[plane]));
    }
    let within = points.iter().all(|p| p.start >= chunk && p.start < chunk + span);
    let mut out = vec![if within { CHUNK_SPANNED } else { CHUNK_LONG }];
    out.extend(miniz_oxide::deflate::compress_to_vec(&plain, 6));
    out
}

/// A chunk row back into its points.
pub fn chunk_from(chunk: u64, step: u64, bytes: &[u8]) -> Result<Vec<Point>, Corrupt> {
    chunk_from_with(chunk, step, bytes, &|_| true)
}

/// A chunk row back into its points, with only the series `keep` wants (the others are not
/// decoded).
pub fn chunk_from_with(
    chunk: u64,
    step: u64,
    bytes: &[u8],
    keep: &dyn Fn(&SeriesKey) -> bool,
) -> Result<Vec<Point>, Corrupt> {
    let what = "chunk";
    let (&version, deflated) = bytes.split_first().ok_or(Corrupt { what, why: "empty" })?;
    if version != CHUNK_LONG && version != CHUNK_SPANNED {
        return Err(Corrupt { what, why: "unknown version" });
    }
    // A chunk holds at most LONGEST_CHUNK_POINTS points of a few thousand series: far under this.
    let plain = miniz_oxide::inflate::decompress_to_vec_with_limit(deflated, 64 << 20)
        .map_err(|_| Corrupt { what, why: "does not inflate" })?;
    let mut r = Reader { bytes: &plain, what };
    let n = r.len()?;
    let mut points = Vec::with_capacity(n);
    let mut slot = 0;
    for _ in 0..n {
        slot += u64::from(r.u16()?);
        points.push(Point { start: chunk + slot * step, seconds: 0, series: Vec::new() });
    }
    for point in &mut points {
        point.seconds = u32::from(r.u16()?);
    }
    let nkeys = r.len()?;
    let mut present = Vec::with_capacity(nkeys);
    let mut count = 0usize;
    for _ in 0..nkeys {
        let key = r.key()?;
        let bits = r.take(n.div_ceil(8))?.to_vec();
        let has: Vec<usize> = (0..n).filter(|i| bits[i / 8] & (1 << (i % 8)) != 0).collect();
        count += has.len() * 3;
        present.push((key, has));
    }
    let planes = r.take(count * 4)?;
    r.end()?;
    let word = |i: usize| {
        u32::from_le_bytes([planes[i], planes[count + i], planes[2 * count + i], planes[3 * count + i]])
    };
    let mut at = 0;
    for (key, has) in present {
        if !keep(&key) {
            at += 3 * has.len();
            continue;
        }
        let mut avgs = Vec::with_capacity(has.len());
        let mut prev = 0u32;
        for _ in &has {
            prev ^= word(at);
            at += 1;
            avgs.push(prev);
        }
        let (mins, maxs) = (at, at + has.len());
        at += 2 * has.len();
        for (j, &i) in has.iter().enumerate() {
            let stat = Stat {
                avg: f32::from_bits(avgs[j]),
                min: f32::from_bits(word(mins + j) ^ avgs[j]),
                max: f32::from_bits(word(maxs + j) ^ avgs[j]),
            };
            points[i].series.push((key.clone(), stat));
        }
    }
    Ok(points)
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

fn put_key(out: &mut Vec<u8>, key: &SeriesKey) {
    out.push(key.group.code());
    for text in [&key.device, &key.column] {
        // Device and column names are short (the kernel's are at most 32 bytes).
        let bytes = &text.as_bytes()[..text.len().min(255)];
        out.push(bytes.len() as u8);
        out.extend_from_slice(bytes);
    }
}

/// Reads a row front to back.
struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        if self.bytes.len() < n {
            return Err(Corrupt { what: self.what, why: "ends early" });
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u16(&mut self) -> Result<u16, Corrupt> {
        let bytes = self.take(2)?;
        Ok(u16::from_le_bytes([bytes[0], bytes[1]]))
    }

    fn u32(&mut self) -> Result<u32, Corrupt> {
        let bytes = self.take(4)?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    fn len(&mut self) -> Result<usize, Corrupt> {
        let n = self.u32()? as usize;
        // No count in a row can exceed its bytes: a damaged count must not allocate gigabytes.
        if n > self.bytes.len() * 8 + 8 {
            return Err(Corrupt { what: self.what, why: "a count beyond its size" });
        }
        Ok(n)
    }

    fn f32(&mut self) -> Result<f32, Corrupt> {
        self.u32().map(f32::from_bits)
    }

    fn text(&mut self) -> Result<String, Corrupt> {
        let n = self.take(1)?[0] as usize;
        String::from_utf8(self.take(n)?.to_vec())
            .map_err(|_| Corrupt { what: self.what, why: "a name is not UTF-8" })
    }

    fn key(&mut self) -> Result<SeriesKey, Corrupt> {
        let group =
            Group::from_code(self.take(1)?[0]).ok_or(Corrupt { what: self.what, why: "an unknown group" })?;
        Ok(SeriesKey { group, device: self.text()?, column: self.text()? })
    }

    fn end(&self) -> Result<(), Corrupt> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(Corrupt { what: self.what, why: "bytes after its end" })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(start: u64, util: f32, with_nic: bool) -> Point {
        let mut series = vec![
            (SeriesKey::new(Group::Cpu, "", "%usr"), Stat { avg: 1.5, min: 0.0, max: 3.25 }),
            (
                SeriesKey::new(Group::Disk, "sda", "%util"),
                Stat { avg: util, min: util / 2.0, max: util * 2.0 },
            ),
        ];
        if with_nic {
            series.push((
                SeriesKey::new(Group::Nic, "eth0.100", "rxkB/s"),
                Stat { avg: 1e6, min: -0.0, max: f32::MAX },
            ));
        }
        series.sort_by(|a, b| a.0.cmp(&b.0));
        Point { start, seconds: 10, series }
    }

    #[test]
    fn a_point_reads_back_as_it_was_written() {
        let p = point(1000, 12.5, true);
        assert_eq!(point_from(1000, &point_bytes(&p)).expect("reads"), p);
    }

    /// Tail rows written plain (version 1, before they were deflated) still read.
    #[test]
    fn a_plain_point_of_the_first_layout_still_reads() {
        let p = point(1000, 12.5, true);
        let mut plain = vec![POINT_PLAIN];
        plain.extend_from_slice(&p.seconds.to_le_bytes());
        put_len(&mut plain, p.series.len());
        for (key, stat) in &p.series {
            put_key(&mut plain, key);
            for value in [stat.avg, stat.min, stat.max] {
                plain.extend_from_slice(&value.to_le_bytes());
            }
        }
        assert_eq!(point_from(1000, &plain).expect("reads"), p);
    }

    /// A node's point where most devices are idle (as on a server with many disks, most of them
    /// quiet) takes a fraction of its plain size.
    #[test]
    fn an_idle_nodes_point_is_a_fraction_of_its_plain_size() {
        let mut series: Vec<(SeriesKey, Stat)> = (0..60)
            .flat_map(|d| {
                ["r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await", "aqu-sz", "%util"].map(|column| {
                    let zero = Stat { avg: 0.0, min: 0.0, max: 0.0 };
                    (SeriesKey::new(Group::Disk, &format!("loop{d}"), column), zero)
                })
            })
            .collect();
        series.sort_by(|a, b| a.0.cmp(&b.0));
        let p = Point { start: 0, seconds: 10, series };
        let plain_size =
            p.series.iter().map(|(k, _)| 3 + k.device.len() + k.column.len() + 12).sum::<usize>();
        let bytes = point_bytes(&p);
        assert!(bytes.len() * 5 < plain_size, "{} bytes of {plain_size}", bytes.len());
        assert_eq!(point_from(0, &bytes).expect("reads"), p);
    }

    #[test]
    fn a_chunk_reads_back_every_point_and_the_series_each_had() {
        // Points with gaps between them, one lacking a series.
        let points: Vec<Point> = [0u64, 1, 2, 7, 359]
            .into_iter()
            .map(|slot| point(3600 + slot * 10, slot as f32 * 0.37, slot != 2))
            .collect();
        let bytes = chunk_bytes(3600, 10, 3600, &points);
        assert_eq!(chunk_from(3600, 10, &bytes).expect("reads"), points);
    }

    #[test]
    fn a_chunk_read_for_some_series_gives_those_as_they_were() {
        let points: Vec<Point> = (0..20).map(|slot| point(slot * 10, slot as f32, slot % 3 != 0)).collect();
        let bytes = chunk_bytes(0, 10, 3600, &points);
        let only_nic = chunk_from_with(0, 10, &bytes, &|k| k.group == Group::Nic).expect("reads");
        let expected: Vec<Point> = points
            .iter()
            .map(|p| Point {
                series: p.series.iter().filter(|(k, _)| k.group == Group::Nic).cloned().collect(),
                ..p.clone()
            })
            .collect();
        assert_eq!(only_nic, expected);
    }

    #[test]
    fn a_steady_series_costs_almost_nothing_in_a_chunk() {
        let points: Vec<Point> = (0..360).map(|slot| point(slot * 10, 0.0, true)).collect();
        let bytes = chunk_bytes(0, 10, 3600, &points);
        // 360 points × 3 series × 3 figures × 4 bytes = 12,960 bytes as plain f32.
        assert!(bytes.len() < 400, "{} bytes", bytes.len());
    }

    /// A chunk says whether its points stay within its span: one merged with a longer chunk
    /// of the first layout does not, and a read must look into it.
    #[test]
    fn a_chunk_says_whether_its_points_stay_within_its_span() {
        let points: Vec<Point> = (0..10).map(|slot| point(slot * 10, 1.0, true)).collect();
        assert!(chunk_within_span(&chunk_bytes(0, 10, 100, &points)));
        assert!(!chunk_within_span(&chunk_bytes(0, 10, 90, &points)));
        assert_eq!(chunk_from(0, 10, &chunk_bytes(0, 10, 90, &points)).expect("reads"), points);
    }

    #[test]
    fn a_damaged_row_is_an_error_not_a_panic() {
        let p = point(0, 1.0, true);
        let bytes = point_bytes(&p);
        for cut in 0..bytes.len() {
            assert!(point_from(0, &bytes[..cut]).is_err(), "cut at {cut}");
        }
        let chunk = chunk_bytes(0, 10, 3600, &[p]);
        for cut in 0..chunk.len() {
            assert!(chunk_from(0, 10, &chunk[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = chunk.clone();
        flipped[0] = 9;
        assert!(chunk_from(0, 10, &flipped).is_err());
    }
}
