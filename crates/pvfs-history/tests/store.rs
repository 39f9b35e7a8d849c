//! The store on a real file: what is committed reads back exactly, across a restart and across
//! a writer killed with SIGKILL in the middle of its writes.

use pvfs_history::{Group, TIERS, Tier};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// Where the tests' time starts: a whole hour (so the first chunk starts there), in 2027.
const BASE: u64 = 1_800_000_000;

/// When set, the crash test's binary is the child: the writer that gets killed.
const CHILD: &str = "PVFS_HISTORY_TEST_WRITER";

/// A second's value of the test's one disk series: varies, so that every point differs.
fn util(t: u64) -> f64 {
    (t % 97) as f64 + 0.25
}

/// Writes 10 s of node `n1` from `start`.
fn ten_seconds(writer: &mut pvfs_history::Writer, start: u64) {
    for t in start..start + 10 {
        writer.record_with("n1", t, |each| {
            each(Group::Disk, "sda", "%util", util(t));
            each(Group::Cpu, "", "%usr", 1.0);
        });
    }
}

/// The 10 s point at `start` as it must read.
fn check_point(point: &pvfs_history::Point, start: u64) {
    let values: Vec<f64> = (start..start + 10).map(util).collect();
    let (_, stat) = point.series.iter().find(|(k, _)| k.is(Group::Disk, "sda", "%util")).expect("%util");
    assert_eq!(point.seconds, 10, "point {start}");
    assert_eq!(stat.avg, (values.iter().sum::<f64>() / 10.0) as f32, "point {start}");
    assert_eq!(stat.min, values.iter().copied().fold(f64::INFINITY, f64::min) as f32, "point {start}");
    assert_eq!(stat.max, values.iter().copied().fold(f64::NEG_INFINITY, f64::max) as f32, "point {start}");
}

fn tier(name: &str) -> Tier {
    Tier::named(name).expect("a tier")
}

#[test]
fn points_read_back_after_a_restart_and_their_chunk_is_compacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.redb");
    let base = BASE;
    {
        let (mut writer, _) = pvfs_history::open(&path, base).expect("open");
        // 50 minutes: 300 points, the last ones in the tail (their chunk is not complete).
        for i in 0..300 {
            ten_seconds(&mut writer, base + i * 10);
            writer.close_due(base + i * 10 + 13);
            writer.commit(base + i * 10 + 13).expect("commit");
        }
    }
    // Reopened two hours later: the chunk has ended, so it is compacted at open.
    let (mut writer, reader) = pvfs_history::open(&path, base + 3 * 3600).expect("reopen");
    let range = reader.range("n1", tier("10s"), base, base + 3600).expect("range");
    assert_eq!(range.points.len(), 300);
    for (i, point) in range.points.iter().enumerate() {
        check_point(point, base + i as u64 * 10);
    }
    // The 1 min points are there too: all 50, the last closed by time 3 s after it ended.
    let minutes = reader.range("n1", tier("1m"), base, base + 3600).expect("range");
    assert_eq!(minutes.points.len(), 50);
    assert!(minutes.points.iter().all(|p| p.seconds == 60));
    // A gap: nothing was written for two hours, and nothing reads there.
    let gap = reader.range("n1", tier("10s"), base + 3000, base + 3 * 3600).expect("range");
    assert!(gap.points.is_empty(), "{:?}", gap.points.first());
    // Writing resumes after the gap.
    ten_seconds(&mut writer, base + 3 * 3600);
    writer.close_all();
    writer.commit(base + 3 * 3600 + 20).expect("commit");
    let resumed = reader.range("n1", tier("10s"), base, base + 4 * 3600).expect("range");
    assert_eq!(resumed.points.len(), 301);
    // Another node reads as nothing, not an error.
    assert!(reader.range("n2", tier("10s"), base, base + 4 * 3600).expect("range").points.is_empty());
}

#[test]
fn points_past_their_keep_are_deleted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.redb");
    let base = BASE;
    {
        let (mut writer, _) = pvfs_history::open(&path, base).expect("open");
        for i in 0..400 {
            ten_seconds(&mut writer, base + i * 10);
        }
        writer.close_all();
        writer.commit(base + 4000).expect("commit");
    }
    let keep = TIERS[0].keep_s;
    let (_, reader) = pvfs_history::open(&path, base + keep + 3600 + 60).expect("reopen");
    // The cut is at `now − keep` = base + 3660: the first hour's chunk is gone, the points
    // that start from base + 3660 on stay (34 of them).
    let kept = reader.range("n1", tier("10s"), base, base + 7200).expect("range");
    assert_eq!(kept.points.first().map(|p| p.start), Some(base + 3660));
    assert_eq!(kept.points.len(), 34);
    // The 1 min tier keeps them for 90 days.
    assert_eq!(reader.range("n1", tier("1m"), base, base + 7200).expect("range").points.len(), 67);
}

/// The child: writes 10 s points one commit each from the start its parent gives, printing
/// each point's start once its commit has returned, until it is killed (bounded all the same).
fn child(path: &Path, start: u64) {
    let (mut writer, _) = pvfs_history::open(path, start).expect("open");
    for i in 0..100_000 {
        let t = start + i * 10;
        ten_seconds(&mut writer, t);
        writer.close_due(t + 13);
        writer.commit(t + 13).expect("commit");
        // Said only once the commit has returned: what the parent then expects to read back.
        let mut out = std::io::stdout().lock();
        writeln!(out, "committed {t}").and_then(|()| out.flush()).expect("the parent reads");
    }
}

#[test]
fn a_writer_killed_with_sigkill_mid_write_loses_nothing_it_had_committed() {
    if let Ok(spec) = std::env::var(CHILD) {
        let (path, start) = spec.split_once('@').expect("PATH@START");
        return child(Path::new(path), start.parse().expect("a start"));
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.redb");
    let base = BASE;
    let mut committed = Vec::new();
    // Three writers, each killed at a different point, each starting where the last was
    // killed: chunks complete (and are compacted) under way, and some are left in the tail.
    for (round, kill_after) in [150usize, 400, 90].into_iter().enumerate() {
        let start = committed.last().map_or(base, |t| t + 10);
        let mut writer = Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "--exact",
                "a_writer_killed_with_sigkill_mid_write_loses_nothing_it_had_committed",
                "--nocapture",
            ])
            .env(CHILD, format!("{}@{start}", path.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the writer starts");
        let stdout = BufReader::new(writer.stdout.take().expect("stdout"));
        let mut seen = 0;
        for line in stdout.lines() {
            let line = line.expect("a line");
            if let Some(t) = line.strip_prefix("committed ") {
                committed.push(t.parse::<u64>().expect("a start"));
                seen += 1;
                if seen == kill_after {
                    // SIGKILL, while it goes on writing.
                    writer.kill().expect("kill");
                    break;
                }
            }
        }
        writer.wait().expect("wait");
        assert_eq!(seen, kill_after, "round {round}: the writer ended before it was killed");
        // Everything it said was committed reads back exactly.
        let (_, reader) =
            pvfs_history::open(&path, start + kill_after as u64 * 10 + 20).expect("reopens after the kill");
        let range = reader.range("n1", tier("10s"), base, u64::MAX / 2).expect("range");
        let starts: Vec<u64> = range.points.iter().map(|p| p.start).collect();
        for t in &committed {
            let at = starts.binary_search(t).unwrap_or_else(|_| panic!("round {round}: point {t} lost"));
            check_point(&range.points[at], *t);
        }
    }
}

/// Stores written when every tier's chunks were 360 points long still read: a chunk of that
/// first layout that began before a range's own first chunk (now 90 points of 10 s) is found
/// and read where it reaches into the range.
#[test]
fn a_long_chunk_of_the_first_layout_is_read_where_it_reaches_into_a_range() {
    use pvfs_history::{Point, SeriesKey, Stat};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.redb");
    let points: Vec<Point> = (0..360)
        .map(|i| {
            let start = BASE + i * 10;
            let v = util(start) as f32;
            let stat = Stat { avg: v, min: v - 0.25, max: v + 0.25 };
            Point { start, seconds: 10, series: vec![(SeriesKey::new(Group::Disk, "sda", "%util"), stat)] }
        })
        .collect();
    // An hour of points in one chunk row, as the first layout kept them.
    let row = pvfs_history::codec::chunk_bytes(BASE, 10, tier("10s").chunk_span(), &points);
    assert!(!pvfs_history::codec::chunk_within_span(&row));
    {
        let db = redb::Database::create(&path).expect("create");
        let txn = db.begin_write().expect("begin");
        {
            let chunks = redb::TableDefinition::<(&str, u64), &[u8]>::new("chunk-10s");
            let mut table = txn.open_table(chunks).expect("table");
            table.insert(("n1", BASE), row.as_slice()).expect("insert");
        }
        txn.commit().expect("commit");
    }
    let (_, reader) = pvfs_history::open(&path, BASE + 7200).expect("open");
    // 40 to 50 minutes in: past the first 15-minute chunk of the new layout.
    let range = reader.range("n1", tier("10s"), BASE + 2400, BASE + 3000).expect("range");
    assert_eq!(range.points, points[240..300]);
}
