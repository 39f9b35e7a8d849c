//! The ring: exact round trips, bounded size, cursors, gaps and epochs.

use super::*;

/// A sample whose counters move like a busy node's: `i` seconds in.
fn sample(i: u64, disks: &[&str]) -> Sample {
    Sample {
        time_unix_ns: 1_763_780_000_000_000_000 + i * 1_000_000_000,
        mono_ns: 86_400_000_000_000 + i * 1_000_000_000 + (i * 7919) % 1000,
        disks: disks
            .iter()
            .enumerate()
            .map(|(k, name)| DiskCounters {
                name: (*name).into(),
                rd_ios: 1_000_000 + i * 400 + k as u64,
                rd_sectors: 80_000_000 + i * 12_800,
                rd_ticks: 4_294_967_000u64.wrapping_add(i * 9) % (1 << 32),
                wr_ios: 2_000_000 + i * 250,
                wr_sectors: 900_000_000 + i * 512_000,
                ios_pgr: i % 5,
                tot_ticks: 3_000_000 + i * 950,
                rq_ticks: 9_000_000 + i * 2400,
                fl_ios: 50 + i / 3,
                ..DiskCounters::default()
            })
            .collect(),
        nics: vec![NicCounters {
            name: "eth0".into(),
            rx_bytes: 987_654_321_000 + i * 62_500_000,
            rx_packets: 654_321_000 + i * 41_000,
            tx_bytes: 123_456_789 + i * 1_024_000,
            tx_packets: 23_456 + i * 9000,
            rx_multicast: 12,
            speed_mbps: 25000,
            duplex: Duplex::Full,
            ..NicCounters::default()
        }],
        cpu: CpuCounters {
            user: 100_000 + i * 40,
            system: 30_000 + i * 5,
            idle: 800_000 + i * 150,
            iowait: 5000 + i * 3,
            ..CpuCounters::default()
        },
        mem: MemCounters {
            total_kb: 24_683_656,
            free_kb: 22_940_380 - i * 10,
            available_kb: 24_160_736,
            ..MemCounters::default()
        },
        load: LoadCounters {
            one: 0.52 + (i % 3) as f64 / 100.0,
            five: 0.31,
            fifteen: 0.12,
            runnable: 3,
            tasks: 187,
        },
        fs: None,
    }
}

#[test]
fn every_sample_comes_back_exactly() {
    let mut ring = Ring::new(7, 1000);
    let originals: Vec<Sample> = (0..300).map(|i| sample(i, &["sda", "md0"])).collect();
    for s in &originals {
        ring.push(s);
    }
    for (i, s) in originals.iter().enumerate() {
        let got = ring.get(i as u64 + 1).unwrap();
        assert_eq!((got.epoch, got.seq), (7, i as u64 + 1));
        assert_eq!(&got.sample, s, "sample {}", i + 1);
    }
}

#[test]
fn the_ring_stays_bounded_and_the_oldest_remain_readable() {
    // Capacities around the keyframe spacing: eviction must never strand a delta.
    for capacity in [1, 2, 63, 64, 65, 100] {
        let mut ring = Ring::new(1, capacity);
        for i in 0..500 {
            ring.push(&sample(i, &["sda"]));
            assert!(ring.len() <= capacity);
        }
        let oldest = 500 - capacity as u64 + 1;
        for seq in oldest..=500 {
            assert_eq!(
                ring.get(seq).unwrap().sample,
                sample(seq - 1, &["sda"]),
                "capacity {capacity}, seq {seq}"
            );
        }
        assert!(ring.get(oldest - 1).is_none());
    }
}

#[test]
fn an_hour_at_one_hertz_is_small() {
    let mut ring = Ring::new(1, 3600);
    for i in 0..3600 {
        ring.push(&sample(i, &["sda", "sdb", "sdc", "md0"]));
    }
    let per_sample = ring.encoded_bytes() / ring.len();
    // 29 + 4×17 + 13 = 110 values; unencoded they would be 880 bytes.
    assert!(per_sample < 250, "{per_sample} bytes per sample");
}

/// A machine that has run the tests: 111 detached loop devices whose counters never move, in
/// every sample. Each idle device costs a couple of bytes a second, not 17, and every sample
/// still comes back exactly.
#[test]
fn devices_that_never_move_cost_next_to_nothing() {
    let mut names: Vec<String> = (0..111).map(|n| format!("loop{n}")).collect();
    names.insert(0, "vda".into());
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let still = |i: u64| {
        let mut s = sample(i, &names);
        for (k, d) in s.disks.iter_mut().enumerate().skip(1) {
            *d = DiskCounters {
                name: d.name.clone(),
                rd_ios: 77 + k as u64,
                rd_sectors: 616,
                tot_ticks: 12,
                ..DiskCounters::default()
            };
        }
        s
    };
    let mut ring = Ring::new(1, 3600);
    for i in 0..3600 {
        ring.push(&still(i));
    }
    let per_sample = ring.encoded_bytes() / ring.len();
    // Unencoded: (29 + 112×17 + 13) × 8 = 15,568 bytes. Keyframes (1 in 64) hold every value.
    assert!(per_sample < 400, "{per_sample} bytes per sample");
    for seq in [1, 2, 63, 64, 65, 1800, 3599, 3600] {
        assert_eq!(ring.get(seq).unwrap().sample, still(seq - 1), "seq {seq}");
    }
}

#[test]
fn cursors_resume_gaps_and_epochs() {
    let mut ring = Ring::new(42, 10);
    assert_eq!(ring.next_after(42, 0), Next::Pending);
    for i in 0..25 {
        ring.push(&sample(i, &["sda"]));
    }
    // Held: 16..=25.
    let seq_of = |n: Next| match n {
        Next::Sample(s) => s.seq,
        other => panic!("{other:?}"),
    };
    assert_eq!(seq_of(ring.next_after(42, 20)), 21);
    assert_eq!(ring.next_after(42, 25), Next::Pending);
    // A reader that was at 5 missed 6..=15 for good, and is told so.
    assert_eq!(ring.next_after(42, 5), Next::Gap { from: 6, to: 15 });
    // A new reader starts from the oldest held, with no gap reported.
    assert_eq!(seq_of(ring.next_after(42, 0)), 16);
    // A cursor from another agent process starts over too.
    assert_eq!(seq_of(ring.next_after(41, 24)), 16);
}

#[test]
fn a_changed_device_list_is_kept_exactly() {
    let mut ring = Ring::new(1, 100);
    let before = sample(1, &["sda"]);
    let during = sample(2, &["sda", "sdb"]);
    let after = sample(3, &["sdb"]);
    for s in [&before, &during, &after] {
        ring.push(s);
    }
    assert_eq!(ring.get(1).unwrap().sample, before);
    assert_eq!(ring.get(2).unwrap().sample, during);
    assert_eq!(ring.get(3).unwrap().sample, after);
}

#[test]
fn varints_and_zigzag_round_trip_at_the_edges() {
    for v in [0i64, 1, -1, 63, -64, 64, i64::MAX, i64::MIN, 1 << 40, -(1 << 40)] {
        assert_eq!(unzigzag(zigzag(v)), v);
        let mut buf = Vec::new();
        put_varint(&mut buf, zigzag(v));
        assert_eq!(get_varint(&buf), Some((zigzag(v), buf.len())));
    }
    assert_eq!(get_varint(&[0x80, 0x80]), None);
}

#[test]
fn finds_the_sample_before_a_time() {
    let mut ring = Ring::new(1, 10);
    for i in 0..20 {
        ring.push(&sample(i, &["sda"]));
    }
    // Held: seqs 11..=20, sample i taken at base + i s (seq = i + 1).
    let at = |i: u64| 1_763_780_000_000_000_000 + i * 1_000_000_000;
    assert_eq!(ring.seq_before(at(15)), 15); // sample 14 (seq 15) is the last before
    assert_eq!(ring.seq_before(at(15) + 1), 16);
    assert_eq!(ring.seq_before(at(10)), 0); // before the oldest held
    assert_eq!(ring.seq_before(u64::MAX), 20);
}
