//! The rate model on recorded counters: ordinary intervals, first samples, wraps, and devices
//! that go away and come back. Expected values are worked out from sysstat's formulas by hand
//! in the comments, not taken from the code under test.

use super::*;
use crate::sample::{Sample, Sampler};

const SEC: u64 = 1_000_000_000;

/// A device's counters from its diskstats fields, in the kernel's order.
fn disk(name: &str, f: [u64; 17]) -> DiskCounters {
    DiskCounters::from_fields(name.into(), f)
}

#[test]
fn an_ordinary_second_of_reads_and_writes() {
    // Two /proc/diskstats lines for sdc, one second apart (recorded during a 4 MiB-block
    // write test with some 4 KiB reads).
    let prev =
        disk("sdc", [1000, 10, 8000, 500, 2000, 100, 409600, 9000, 0, 20000, 30000, 0, 0, 0, 0, 50, 40]);
    let curr =
        disk("sdc", [1100, 30, 8800, 560, 2250, 150, 921600, 10500, 4, 20950, 32400, 0, 0, 0, 0, 60, 45]);
    let r = DiskRates::between(Some(&prev), &curr, 1.0);
    assert_eq!(r.r_s, 100.0); // 100 reads in 1 s
    assert_eq!(r.rkb_s, 400.0); // 800 sectors = 400 KiB
    assert_eq!(r.rrqm_s, 20.0);
    assert!((r.rrqm_pct - 100.0 * 20.0 / 120.0).abs() < 1e-12); // merges / (merges + ios)
    assert_eq!(r.r_await, 0.6); // 60 ms over 100 reads
    assert_eq!(r.rareq_sz, 4.0); // 800 sectors / 100 reads / 2
    assert_eq!(r.w_s, 250.0);
    assert_eq!(r.wkb_s, 256000.0); // 512000 sectors / 2
    assert_eq!(r.wareq_sz, 1024.0);
    assert_eq!(r.w_await, 6.0); // 1500 ms / 250
    assert!((r.wrqm_pct - 100.0 * 50.0 / 300.0).abs() < 1e-12);
    assert_eq!(r.f_s, 10.0);
    assert_eq!(r.f_await, 0.5);
    assert_eq!(r.aqu_sz, 2.4); // 2400 ms of latency in 1000 ms
    assert_eq!(r.util, 95.0); // busy 950 ms of 1000
    assert_eq!((r.d_s, r.d_await, r.dareq_sz, r.drqm_pct), (0.0, 0.0, 0.0, 0.0)); // no discards: 0, not NaN

    // Over 2 s every per-second column halves; per-I/O columns do not change.
    let r2 = DiskRates::between(Some(&prev), &curr, 2.0);
    assert_eq!((r2.r_s, r2.util, r2.aqu_sz), (50.0, 47.5, 1.2));
    assert_eq!((r2.r_await, r2.wareq_sz), (0.6, 1024.0));
}

#[test]
fn millisecond_fields_wrap_at_32_bits_without_a_jump() {
    // tot_ticks and rq_ticks are printed as unsigned int: 4294967000 → 704 is +1000 ms.
    let prev = disk("md0", [10, 0, 80, 5, 0, 0, 0, 0, 0, 4_294_967_000, 4_294_966_296, 0, 0, 0, 0, 0, 0]);
    let curr = disk("md0", [20, 0, 160, 15, 0, 0, 0, 0, 0, 704, 1000, 0, 0, 0, 0, 0, 0]);
    let r = DiskRates::between(Some(&prev), &curr, 1.0);
    assert_eq!(r.util, 100.0);
    assert_eq!(r.aqu_sz, 2.0); // 4294966296 → 1000 is +2000 ms
    assert_eq!(r.r_await, 1.0);
}

#[test]
fn a_device_that_disappears_and_returns_starts_from_zero() {
    // sdd was unplugged and re-added: all I/O and sector counts are lower than before.
    let before = disk("sdd", [5000, 0, 40000, 900, 7000, 0, 56000, 1200, 0, 3000, 2100, 0, 0, 0, 0, 0, 0]);
    let back = disk("sdd", [30, 0, 240, 12, 10, 0, 80, 4, 0, 20, 16, 0, 0, 0, 0, 0, 0]);
    let r = DiskRates::between(Some(&before), &back, 1.0);
    // Compared against zero: the new absolute counters over the interval, as sysstat does.
    assert_eq!((r.r_s, r.w_s, r.rkb_s, r.util), (30.0, 10.0, 120.0, 2.0));
    // A device seen for the first time is compared against zero too.
    assert_eq!(DiskRates::between(None, &back, 1.0), r);
    // Fewer I/Os but *more* sectors read is not a reset: the modular difference stands (a huge
    // number, as in sysstat 12.6, which is exactly what a real 64-bit wrap would give).
    let odd = disk("sdd", [4000, 0, 50000, 900, 7000, 0, 56000, 1200, 0, 3000, 2100, 0, 0, 0, 0, 0, 0]);
    assert!(DiskRates::between(Some(&before), &odd, 1.0).r_s > 1e18);
}

fn nic(name: &str, rx: (u64, u64), tx: (u64, u64), speed: u32, duplex: Duplex) -> NicCounters {
    NicCounters {
        name: name.into(),
        rx_bytes: rx.0,
        rx_packets: rx.1,
        tx_bytes: tx.0,
        tx_packets: tx.1,
        speed_mbps: speed,
        duplex,
        ..NicCounters::default()
    }
}

#[test]
fn network_rates_and_ifutil() {
    let prev = nic("eth0", (1_000_000, 1000), (2_000_000, 2000), 1000, Duplex::Full);
    let curr = nic(
        "eth0",
        (1_000_000 + 62_500_000, 1000 + 41_000),
        (2_000_000 + 1_024_000, 2000 + 9000),
        1000,
        Duplex::Full,
    );
    let r = NicRates::between(Some(&prev), &curr, 1.0);
    assert_eq!((r.rxpck_s, r.txpck_s), (41_000.0, 9000.0));
    assert_eq!(r.rxkb_s, 62_500_000.0 / 1024.0);
    assert_eq!(r.txkb_s, 1000.0);
    // Full duplex: the busier direction, 62.5 MB/s = 500 Mbit/s of 1000.
    assert_eq!(r.ifutil, 50.0);
    let half = NicRates::between(Some(&Duplex::Half.on(&prev)), &Duplex::Half.on(&curr), 1.0);
    assert_eq!(half.ifutil, (62_500_000.0 + 1_024_000.0) * 800.0 / 1e9);
    let unknown = NicRates::between(Some(&Duplex::Unknown.on(&prev)), &Duplex::Unknown.on(&curr), 1.0);
    assert_eq!(unknown.ifutil, 0.0);
}

impl Duplex {
    fn on(self, n: &NicCounters) -> NicCounters {
        NicCounters { duplex: self, ..n.clone() }
    }
}

#[test]
fn an_interface_registered_again_starts_from_zero_but_a_64_bit_wrap_does_not() {
    let prev = nic("ib0", (900_000, 900), (800_000, 800), 0, Duplex::Unknown);
    let again = nic("ib0", (5_000, 5), (4_000, 4), 0, Duplex::Unknown);
    let r = NicRates::between(Some(&prev), &again, 1.0);
    assert_eq!((r.rxpck_s, r.rxkb_s), (5.0, 5000.0 / 1024.0));

    // rx_bytes wrapped past 2^64 while packets kept growing: a wrap, keep the modular delta.
    let near = u64::MAX - 999;
    let prev = nic("ib0", (near, 100), (0, 0), 0, Duplex::Unknown);
    let wrapped = nic("ib0", (24, 110), (0, 0), 0, Duplex::Unknown);
    let r = NicRates::between(Some(&prev), &wrapped, 1.0);
    assert_eq!(r.rxkb_s, 1024.0 / 1024.0); // 1000 to the top, 24 after it
    assert_eq!(r.rxpck_s, 10.0);
}

#[test]
fn cpu_percentages_follow_sar_u_all() {
    let prev = CpuCounters {
        user: 1000,
        nice: 10,
        system: 300,
        idle: 8000,
        iowait: 50,
        irq: 5,
        softirq: 20,
        steal: 0,
        guest: 100,
        guest_nice: 0,
    };
    // +40 user of which +10 guest, +5 sys, +50 idle, +3 iowait, +1 irq, +1 softirq = 100 ticks.
    let curr = CpuCounters {
        user: 1040,
        nice: 10,
        system: 305,
        idle: 8050,
        iowait: 53,
        irq: 6,
        softirq: 21,
        steal: 0,
        guest: 110,
        guest_nice: 0,
    };
    let p = CpuPercent::between(&prev, &curr);
    assert_eq!(p.usr, 30.0); // user less guest
    assert_eq!(p.guest, 10.0);
    assert_eq!((p.sys, p.idle, p.iowait, p.irq, p.soft), (5.0, 50.0, 3.0, 1.0, 1.0));
    // No ticks at all in the interval: an idle tickless CPU, as sysstat shows it.
    assert_eq!(CpuPercent::between(&curr, &curr).idle, 100.0);
}

#[test]
fn memory_follows_sar_r() {
    let m = MemCounters {
        total_kb: 1000,
        free_kb: 100,
        available_kb: 600,
        buffers_kb: 50,
        cached_kb: 300,
        slab_kb: 50,
        committed_as_kb: 750,
        swap_total_kb: 500,
        ..MemCounters::default()
    };
    let s = MemStats::from(&m);
    assert_eq!(s.kbmemused, 500); // 1000 − (100 + 50 + 300 + 50)
    assert_eq!(s.memused_pct, 50.0);
    assert_eq!(s.commit_pct, 50.0); // 750 of RAM + swap
}

/// Memory counters near `u64::MAX` (a broken agent's, sent over the wire) give figures, not a
/// panic: the sums saturate.
#[test]
fn memory_counters_near_the_top_of_u64_do_not_overflow() {
    let m = MemCounters {
        total_kb: u64::MAX,
        free_kb: u64::MAX - 1,
        buffers_kb: 2,
        cached_kb: u64::MAX,
        swap_total_kb: 5,
        committed_as_kb: u64::MAX,
        ..MemCounters::default()
    };
    let s = MemStats::from(&m);
    assert_eq!(s.kbmemused, 0);
    assert_eq!(s.commit_pct, 100.0);
}

/// Writes a fake /proc and /sys for the sampler.
fn fake_root(diskstats: &str, net_dev: &str, stat: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("proc/diskstats", diskstats);
    w("proc/net/dev", net_dev);
    w("proc/stat", stat);
    // Recorded from a Debian 12 VM (kernel 6.18): procfs-core wants every field a real kernel prints.
    w("proc/meminfo", include_str!("../../testdata/meminfo-debian12-6.18.txt"));
    w("proc/loadavg", "0.52 0.31 0.12 3/187 4242\n");
    for name in ["sda", "vdb", "md0"] {
        std::fs::create_dir_all(dir.path().join("sys/block").join(name)).unwrap();
    }
    w("sys/class/net/eth0/speed", "25000\n");
    w("sys/class/net/eth0/duplex", "full\n");
    dir
}

const NET_DEV: &str = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo:  123456     789    0    0    0     0          0         0   123456     789    0    0    0     0       0          0\n  eth0: 987654321 654321    1    2    0     0          0        12 123456789 23456    0    0    0     0       0          0\n";

#[test]
fn the_sampler_reads_whole_devices_and_named_partitions() {
    // A kernel 6.x diskstats: 20 fields for disks, partitions and md; loop0 never used.
    let diskstats = "   8       0 sda 5400 120 431000 2300 8800 900 1200000 45000 0 30000 47300 0 0 0 0 700 800\n   8       1 sda1 5300 120 430000 2290 8800 900 1200000 45000 0 29900 47290 0 0 0 0 0 0\n   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n 252      16 vdb 10 0 80 1 0 0 0 0 0 4 1 0 0 0 0 0 0\n   9       0 md0 300 0 2400 0 100 0 800 0 0 0 0 0 0 0 0 0 0\n";
    let root = fake_root(
        diskstats,
        NET_DEV,
        "cpu  1000 10 300 8000 50 5 20 0 100 0\ncpu0 500 5 150 4000 25 2 10 0 50 0\n",
    );
    let mut sampler = Sampler::new(pvfs_host::Root::at(root.path()), Default::default());
    let s = sampler.sample().unwrap();
    let names: Vec<&str> = s.disks.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["sda", "vdb", "md0"]); // loop0 and sda1 are not in the fake /sys/block
    let sda = s.disk("sda").unwrap();
    assert_eq!(
        (sda.rd_ios, sda.wr_sectors, sda.rq_ticks, sda.fl_ios, sda.fl_ticks),
        (5400, 1200000, 47300, 700, 800)
    );
    let eth0 = s.nic("eth0").unwrap();
    assert_eq!(
        (eth0.rx_bytes, eth0.rx_packets, eth0.rx_multicast, eth0.tx_bytes),
        (987654321, 654321, 12, 123456789)
    );
    assert_eq!((eth0.speed_mbps, eth0.duplex), (25000, Duplex::Full));
    assert_eq!(s.nic("lo").unwrap().speed_mbps, 0);
    assert_eq!(s.cpu.guest, 100);
    assert_eq!(s.mem.total_kb, 24683656);
    assert_eq!(s.mem.swap_total_kb, 0);
    assert_eq!((s.load.one, s.load.runnable, s.load.tasks), (0.52, 3, 187));

    let mut named = Sampler::new(
        pvfs_host::Root::at(root.path()),
        crate::sample::DeviceFilter::Named(vec!["sda1".into()]),
    );
    let names: Vec<String> = named.sample().unwrap().disks.into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["sda1"]);
}

#[test]
fn rates_between_two_recorded_samples() {
    let a = fake_root(
        "   8       0 sda 100 0 800 10 200 0 1600 20 0 100 30 0 0 0 0 0 0\n",
        NET_DEV,
        "cpu  1000 10 300 8000 50 5 20 0 100 0\n",
    );
    let mut sampler = Sampler::new(pvfs_host::Root::at(a.path()), Default::default());
    let mut first: Sample = sampler.sample().unwrap();
    std::fs::write(
        a.path().join("proc/diskstats"),
        "   8       0 sda 300 0 2400 30 200 0 1600 20 0 600 60 0 0 0 0 0 0\n",
    )
    .unwrap();
    let mut second = sampler.sample().unwrap();
    // Pin the clocks: the rates must not depend on how fast the test ran.
    first.mono_ns = 10 * SEC;
    second.mono_ns = 12 * SEC;
    let r = Rates::between(&first, &second);
    assert_eq!(r.interval_s, 2.0);
    let sda = &r.disks["sda"];
    assert_eq!((sda.r_s, sda.rkb_s, sda.r_await, sda.util), (100.0, 400.0, 0.1, 25.0));
    assert_eq!(r.nics["eth0"].rxkb_s, 0.0);
    assert_eq!(r.cpu.idle, 100.0);
    let json = serde_json::to_value(crate::line::Columns::of(&r.disks["sda"])).unwrap();
    assert_eq!(json["r/s"], 100.0);
    assert_eq!(json["%util"], 25.0);
    assert_eq!(json.as_object().unwrap().len(), DiskColumn::COUNT);
}

#[test]
fn column_names_become_metric_names() {
    assert_eq!(metric_suffix("r/s"), "r_per_second");
    assert_eq!(metric_suffix("%util"), "util_percent");
    assert_eq!(metric_suffix("rareq-sz"), "rareq_sz");
    assert_eq!(metric_suffix("%rrqm"), "rrqm_percent");
    assert_eq!(metric_suffix("rxkB/s"), "rxkb_per_second");
}

/// A brick that started within the second (a volume started just before, the sample before
/// had no bricks at all) is in the second's rates, counted from zero as its new process's
/// counters are; a Lustre target is only rated against a second that had it (its counters
/// run from its mount, not from the second).
#[test]
fn a_brick_new_within_the_second_is_shown_counted_from_zero() {
    use crate::gluster::LocalBrick;
    use crate::sample::FsSecond;
    use std::sync::Arc;
    let a = fake_root("", NET_DEV, "cpu  1000 10 300 8000 50 5 20 0 100 0\n");
    let mut sampler = Sampler::new(pvfs_host::Root::at(a.path()), Default::default());
    let mut before = sampler.sample().unwrap();
    let mut after = sampler.sample().unwrap();
    before.mono_ns = 10 * SEC;
    after.mono_ns = 12 * SEC;
    before.fs = None;
    let brick = LocalBrick {
        volume: "gv0".into(),
        path: "/bricks/b1".into(),
        pid: Some(4242),
        wchar: 2 << 20,
        ..LocalBrick::default()
    };
    let target = crate::lustre::node::Target { name: "fs-OST0000".into(), ..Default::default() };
    after.fs = Some(Arc::new(FsSecond {
        lustre: Some(crate::lustre::node::Snapshot { targets: vec![target], ..Default::default() }),
        bricks: vec![brick],
        beegfs: Vec::new(),
        beegfs_targets: Vec::new(),
    }));
    let r = Rates::between(&before, &after);
    assert_eq!(r.bricks.len(), 1);
    assert_eq!((r.bricks[0].up, r.bricks[0].wchar_s), (true, 1048576.0), "2 MiB over 2 s");
    assert!(r.lustre.is_empty(), "a target is rated only against a second that had it");
    // And a second after one without a file system: nothing.
    assert!(Rates::between(&after, &before).bricks.is_empty());
}
