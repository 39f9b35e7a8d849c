//! Rates from two samples, computed as sysstat 12.6 (Debian bookworm's iostat and sar) does.
//!
//! Formulas: `reference/monitoring-anchors.md` §1 (iostat.c `write_ext_stat`, rd_stats.c
//! `compute_ext_disk_stats`, pr_stats.c, sa_common.c `compute_ifutil`/`check_net_dev_reg`).
//! Differences from sysstat, both deliberate:
//! - the interval is the monotonic clock's (ns), not /proc/uptime's centiseconds, which are
//!   ±1 % at a 1 s interval;
//! - nothing else: deltas are taken at the kernel's own widths (64-bit counts, 32-bit ms
//!   ticks), so a genuine wrap gives the right delta, and the device-reset rules are sysstat's.
//!
//! Each struct's columns are an enum ([`DiskColumn`], [`NicColumn`], [`CpuColumn`],
//! [`MemColumn`], [`LoadColumn`]) whose variants know their names as iostat -x, sar -n DEV,
//! sar -u ALL, sar -r and sar -q print them, and which are the keys of the per-second JSON
//! line ([`crate::line`]).

use crate::gluster::BrickRates;
use crate::lustre::node::{LnetRates, TargetRates};
use crate::sample::{CpuCounters, DiskCounters, Duplex, LoadCounters, MemCounters, NicCounters, Sample};
use std::collections::BTreeMap;

mod columns;
mod tracker;
use columns::columns;
pub use columns::{Column, Group, Value};
pub use tracker::{RateTracker, follows};

/// A column's name as a metric name: `r/s` → `r_per_second`, `%util` → `util_percent`,
/// `rareq-sz` → `rareq_sz`, `rkB/s` → `rkb_per_second`. Used by every exporter, so that the
/// same column has the same name in Prometheus and in Ganglia.
pub fn metric_suffix(column: &str) -> String {
    let (base, percent) = match column.strip_prefix('%') {
        Some(rest) => (rest, true),
        None => (column, false),
    };
    let mut name = base.to_ascii_lowercase().replace("/s", "_per_second").replace('-', "_");
    if percent {
        name.push_str("_percent");
    }
    name
}

/// Rates for the interval between two samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates {
    /// Wall-clock time of the later sample, ns since the Unix epoch.
    pub time_unix_ns: u64,
    /// Seconds between the samples.
    pub interval_s: f64,
    pub disks: BTreeMap<String, DiskRates>,
    pub nics: BTreeMap<String, NicRates>,
    pub cpu: CpuPercent,
    pub mem: MemStats,
    pub load: LoadStats,
    /// Each Lustre target's, when both samples have Lustre's seconds.
    pub lustre: Vec<TargetRates>,
    /// LNet's, when both samples have its counters.
    pub lnet: Option<LnetRates>,
    /// Each GlusterFS brick's of this node, when both samples have them.
    pub bricks: Vec<BrickRates>,
    /// This node's BeeGFS servers' second (BeeGFS keeps per-second figures: the later sample's
    /// as they are).
    pub beegfs: Vec<crate::beegfs::ServerSecond>,
    /// This node's BeeGFS targets' space and state (the later sample's).
    pub beegfs_targets: Vec<crate::beegfs::TargetSecond>,
}

impl Rates {
    /// Rates between `prev` and `curr` (`curr` taken later). A device or interface missing from
    /// `prev` is compared against zero, as sysstat does for new devices.
    pub fn between(prev: &Sample, curr: &Sample) -> Rates {
        let interval_s = curr.mono_ns.saturating_sub(prev.mono_ns) as f64 / 1e9;
        // sysstat never divides by a zero interval (it uses 1 centisecond instead).
        let t = if interval_s > 0.0 { interval_s } else { 0.01 };
        Rates {
            time_unix_ns: curr.time_unix_ns,
            interval_s,
            disks: curr
                .disks
                .iter()
                .map(|d| (d.name.clone(), DiskRates::between(prev.disk(&d.name), d, t)))
                .collect(),
            nics: curr
                .nics
                .iter()
                .map(|n| (n.name.clone(), NicRates::between(prev.nic(&n.name), n, t)))
                .collect(),
            cpu: CpuPercent::between(&prev.cpu, &curr.cpu),
            mem: MemStats::from(&curr.mem),
            load: LoadStats::from(&curr.load),
            lustre: match (
                prev.fs.as_ref().and_then(|f| f.lustre.as_ref()),
                curr.fs.as_ref().and_then(|f| f.lustre.as_ref()),
            ) {
                (Some(p), Some(c)) => TargetRates::between(p, c, interval_s),
                _ => Vec::new(),
            },
            lnet: match (
                prev.fs.as_ref().and_then(|f| f.lustre.as_ref()),
                curr.fs.as_ref().and_then(|f| f.lustre.as_ref()),
            ) {
                (Some(p), Some(c)) => LnetRates::between(p, c, interval_s),
                _ => None,
            },
            // A brick in `curr` is shown even when `prev` had none: its process started within
            // the second (its pid file appears as it starts), and its counters, which start
            // with it, are the second's. (CI once recorded a benchmark's first second without
            // the bricks a volume started just before.) Lustre's counters run from a target's
            // mount, so a target is only rated against a second that had it.
            bricks: match &curr.fs {
                Some(c) => BrickRates::between(
                    prev.fs.as_ref().map_or(&[][..], |p| &p.bricks),
                    &c.bricks,
                    interval_s,
                ),
                None => Vec::new(),
            },
            beegfs: curr.fs.as_ref().map_or_else(Vec::new, |c| c.beegfs.clone()),
            beegfs_targets: curr.fs.as_ref().map_or_else(Vec::new, |c| c.beegfs_targets.clone()),
        }
    }
}

/// `iostat -x` columns for one device, in iostat's order ([`DiskColumn`] names them).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DiskRates {
    pub r_s: f64,
    pub rkb_s: f64,
    pub rrqm_s: f64,
    pub rrqm_pct: f64,
    pub r_await: f64,
    pub rareq_sz: f64,
    pub w_s: f64,
    pub wkb_s: f64,
    pub wrqm_s: f64,
    pub wrqm_pct: f64,
    pub w_await: f64,
    pub wareq_sz: f64,
    pub d_s: f64,
    pub dkb_s: f64,
    pub drqm_s: f64,
    pub drqm_pct: f64,
    pub d_await: f64,
    pub dareq_sz: f64,
    pub f_s: f64,
    pub f_await: f64,
    pub aqu_sz: f64,
    pub util: f64,
}

columns! {
    /// A column of `iostat -x` (sysstat 12.6), a [`DiskRates`] field.
    DiskRates => DiskColumn {
        RPerS => r_s = "r/s",
        RkBPerS => rkb_s = "rkB/s",
        RrqmPerS => rrqm_s = "rrqm/s",
        RrqmPct => rrqm_pct = "%rrqm",
        RAwait => r_await = "r_await",
        RareqSz => rareq_sz = "rareq-sz",
        WPerS => w_s = "w/s",
        WkBPerS => wkb_s = "wkB/s",
        WrqmPerS => wrqm_s = "wrqm/s",
        WrqmPct => wrqm_pct = "%wrqm",
        WAwait => w_await = "w_await",
        WareqSz => wareq_sz = "wareq-sz",
        DPerS => d_s = "d/s",
        DkBPerS => dkb_s = "dkB/s",
        DrqmPerS => drqm_s = "drqm/s",
        DrqmPct => drqm_pct = "%drqm",
        DAwait => d_await = "d_await",
        DareqSz => dareq_sz = "dareq-sz",
        FPerS => f_s = "f/s",
        FAwait => f_await = "f_await",
        AquSz => aqu_sz = "aqu-sz",
        Util => util = "%util",
    }
}

impl DiskRates {
    /// iostat's extended statistics over `t` seconds.
    pub fn between(prev: Option<&DiskCounters>, curr: &DiskCounters, t: f64) -> DiskRates {
        let zero = DiskCounters::default();
        let mut prev = prev.unwrap_or(&zero);
        // sysstat's removed-and-re-added test (`write_stats`): fewer I/Os than before and every
        // sector count lower (or zero before). The old counters then mean nothing: start from 0.
        let fell = |p: u64, c: u64| c < p || p == 0;
        if curr.total_ios() < prev.total_ios()
            && fell(prev.rd_sectors, curr.rd_sectors)
            && fell(prev.wr_sectors, curr.wr_sectors)
            && fell(prev.dc_sectors, curr.dc_sectors)
        {
            prev = &zero;
        }
        // Counts are the kernel's unsigned long (64-bit here): modular difference.
        let d = |p: u64, c: u64| c.wrapping_sub(p) as f64;
        // Times are printed as unsigned int ms: a difference modulo 2^32 survives a wrap.
        let ms = |p: u64, c: u64| (c as u32).wrapping_sub(p as u32) as f64;
        let per_s = |delta: f64| delta / t;
        let ratio = |num: f64, den: f64| if den != 0.0 { num / den } else { 0.0 };
        let pct_merged = |merges: f64, ios: f64| ratio(100.0 * merges, merges + ios);

        let (rd, wr, dc, fl) = (
            d(prev.rd_ios, curr.rd_ios),
            d(prev.wr_ios, curr.wr_ios),
            d(prev.dc_ios, curr.dc_ios),
            d(prev.fl_ios, curr.fl_ios),
        );
        let (rm, wm, dm) = (
            d(prev.rd_merges, curr.rd_merges),
            d(prev.wr_merges, curr.wr_merges),
            d(prev.dc_merges, curr.dc_merges),
        );
        let (rsec, wsec, dsec) = (
            d(prev.rd_sectors, curr.rd_sectors),
            d(prev.wr_sectors, curr.wr_sectors),
            d(prev.dc_sectors, curr.dc_sectors),
        );
        DiskRates {
            r_s: per_s(rd),
            w_s: per_s(wr),
            d_s: per_s(dc),
            f_s: per_s(fl),
            // Sectors are 512 bytes whatever the device: /2 gives kB (KiB).
            rkb_s: per_s(rsec) / 2.0,
            wkb_s: per_s(wsec) / 2.0,
            dkb_s: per_s(dsec) / 2.0,
            rrqm_s: per_s(rm),
            wrqm_s: per_s(wm),
            drqm_s: per_s(dm),
            rrqm_pct: pct_merged(rm, rd),
            wrqm_pct: pct_merged(wm, wr),
            drqm_pct: pct_merged(dm, dc),
            r_await: ratio(ms(prev.rd_ticks, curr.rd_ticks), rd),
            w_await: ratio(ms(prev.wr_ticks, curr.wr_ticks), wr),
            d_await: ratio(ms(prev.dc_ticks, curr.dc_ticks), dc),
            f_await: ratio(ms(prev.fl_ticks, curr.fl_ticks), fl),
            rareq_sz: ratio(rsec, rd) / 2.0,
            wareq_sz: ratio(wsec, wr) / 2.0,
            dareq_sz: ratio(dsec, dc) / 2.0,
            aqu_sz: per_s(ms(prev.rq_ticks, curr.rq_ticks)) / 1000.0,
            util: per_s(ms(prev.tot_ticks, curr.tot_ticks)) / 10.0,
        }
    }
}

/// `sar -n DEV` columns for one interface ([`NicColumn`] names them).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NicRates {
    pub rxpck_s: f64,
    pub txpck_s: f64,
    pub rxkb_s: f64,
    pub txkb_s: f64,
    pub rxcmp_s: f64,
    pub txcmp_s: f64,
    pub rxmcst_s: f64,
    pub ifutil: f64,
}

columns! {
    /// A column of `sar -n DEV`, a [`NicRates`] field.
    NicRates => NicColumn {
        RxpckPerS => rxpck_s = "rxpck/s",
        TxpckPerS => txpck_s = "txpck/s",
        RxkBPerS => rxkb_s = "rxkB/s",
        TxkBPerS => txkb_s = "txkB/s",
        RxcmpPerS => rxcmp_s = "rxcmp/s",
        TxcmpPerS => txcmp_s = "txcmp/s",
        RxmcstPerS => rxmcst_s = "rxmcst/s",
        Ifutil => ifutil = "%ifutil",
    }
}

impl NicRates {
    /// sar's network rates over `t` seconds.
    pub fn between(prev: Option<&NicCounters>, curr: &NicCounters, t: f64) -> NicRates {
        let zero = NicCounters::default();
        let mut prev = prev.unwrap_or(&zero);
        if unregistered(prev, curr) {
            prev = &zero;
        }
        let rate = |p: u64, c: u64| c.wrapping_sub(p) as f64 / t;
        let rx_bytes = rate(prev.rx_bytes, curr.rx_bytes);
        let tx_bytes = rate(prev.tx_bytes, curr.tx_bytes);
        NicRates {
            rxpck_s: rate(prev.rx_packets, curr.rx_packets),
            txpck_s: rate(prev.tx_packets, curr.tx_packets),
            rxkb_s: rx_bytes / 1024.0,
            txkb_s: tx_bytes / 1024.0,
            rxcmp_s: rate(prev.rx_compressed, curr.rx_compressed),
            txcmp_s: rate(prev.tx_compressed, curr.tx_compressed),
            rxmcst_s: rate(prev.rx_multicast, curr.rx_multicast),
            ifutil: ifutil(curr, rx_bytes, tx_bytes),
        }
    }
}

/// sar's `check_net_dev_reg`: any of its seven counters going backwards means the interface
/// was unregistered and registered again, unless bytes and packets disagree about it and the
/// old value was past 2^63 (a 64-bit wrap).
fn unregistered(prev: &NicCounters, curr: &NicCounters) -> bool {
    let pairs = [
        (prev.rx_bytes, curr.rx_bytes),
        (prev.tx_bytes, curr.tx_bytes),
        (prev.rx_packets, curr.rx_packets),
        (prev.tx_packets, curr.tx_packets),
        (prev.rx_compressed, curr.rx_compressed),
        (prev.tx_compressed, curr.tx_compressed),
        (prev.rx_multicast, curr.rx_multicast),
    ];
    if !pairs.iter().any(|(p, c)| c < p) {
        return false;
    }
    let overflow = |(pb, cb): (u64, u64), (pp, cp): (u64, u64)| {
        ((cb < pb && cp > pp) || (cb > pb && cp < pp)) && (pb > 1 << 63 || pp > 1 << 63)
    };
    let rx = overflow((prev.rx_bytes, curr.rx_bytes), (prev.rx_packets, curr.rx_packets));
    let tx = overflow((prev.tx_bytes, curr.tx_bytes), (prev.tx_packets, curr.tx_packets));
    !(rx || tx)
}

/// Bits per second as a percentage of the link speed (sa_common.c `compute_ifutil`).
fn ifutil(nic: &NicCounters, rx_bytes_s: f64, tx_bytes_s: f64) -> f64 {
    if nic.speed_mbps == 0 {
        return 0.0;
    }
    let speed = f64::from(nic.speed_mbps) * 1e6;
    match nic.duplex {
        Duplex::Full => rx_bytes_s.max(tx_bytes_s) * 800.0 / speed,
        Duplex::Half => (rx_bytes_s + tx_bytes_s) * 800.0 / speed,
        Duplex::Unknown => 0.0,
    }
}

/// `sar -u ALL` percentages, all CPUs together ([`CpuColumn`] names them).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuPercent {
    pub usr: f64,
    pub nice: f64,
    pub sys: f64,
    pub iowait: f64,
    pub steal: f64,
    pub irq: f64,
    pub soft: f64,
    pub guest: f64,
    pub gnice: f64,
    pub idle: f64,
}

columns! {
    /// A column of `sar -u ALL`, a [`CpuPercent`] field.
    CpuPercent => CpuColumn {
        Usr => usr = "%usr",
        Nice => nice = "%nice",
        Sys => sys = "%sys",
        Iowait => iowait = "%iowait",
        Steal => steal = "%steal",
        Irq => irq = "%irq",
        Soft => soft = "%soft",
        Guest => guest = "%guest",
        Gnice => gnice = "%gnice",
        Idle => idle = "%idle",
    }
}

impl CpuPercent {
    /// As sysstat's `print_cpu_stats`: the total excludes guest time (already inside user and
    /// nice); a field that went backwards shows 0; no ticks at all means an idle (tickless) CPU.
    pub fn between(prev: &CpuCounters, curr: &CpuCounters) -> CpuPercent {
        // Saturating: counters arrive from agents over the wire, and an overflowing sum must
        // not panic the coordinator (a saturated total reads as "no ticks", an idle CPU).
        let total = |c: &CpuCounters| {
            [c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal]
                .into_iter()
                .fold(0u64, u64::saturating_add)
        };
        let itv = total(curr).wrapping_sub(total(prev)) as f64;
        if itv <= 0.0 || total(curr) < total(prev) {
            return CpuPercent { idle: 100.0, ..CpuPercent::default() };
        }
        let pct = |p: u64, c: u64| if c < p { 0.0 } else { (c - p) as f64 / itv * 100.0 };
        CpuPercent {
            usr: pct(prev.user.saturating_sub(prev.guest), curr.user.saturating_sub(curr.guest)),
            nice: pct(prev.nice.saturating_sub(prev.guest_nice), curr.nice.saturating_sub(curr.guest_nice)),
            sys: pct(prev.system, curr.system),
            iowait: pct(prev.iowait, curr.iowait),
            steal: pct(prev.steal, curr.steal),
            irq: pct(prev.irq, curr.irq),
            soft: pct(prev.softirq, curr.softirq),
            guest: pct(prev.guest, curr.guest),
            gnice: pct(prev.guest_nice, curr.guest_nice),
            idle: pct(prev.idle, curr.idle),
        }
    }
}

/// `sar -r` columns (kB and %), from one sample ([`MemColumn`] names them).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MemStats {
    pub kbmemfree: u64,
    pub kbavail: u64,
    pub kbmemused: u64,
    pub memused_pct: f64,
    pub kbbuffers: u64,
    pub kbcached: u64,
    pub kbcommit: u64,
    pub commit_pct: f64,
    pub kbactive: u64,
    pub kbinact: u64,
    pub kbdirty: u64,
}

columns! {
    /// A column of `sar -r`, a [`MemStats`] field.
    MemStats => MemColumn {
        Kbmemfree => kbmemfree = "kbmemfree",
        Kbavail => kbavail = "kbavail",
        Kbmemused => kbmemused = "kbmemused",
        MemusedPct => memused_pct = "%memused",
        Kbbuffers => kbbuffers = "kbbuffers",
        Kbcached => kbcached = "kbcached",
        Kbcommit => kbcommit = "kbcommit",
        CommitPct => commit_pct = "%commit",
        Kbactive => kbactive = "kbactive",
        Kbinact => kbinact = "kbinact",
        Kbdirty => kbdirty = "kbdirty",
    }
}

impl From<&MemCounters> for MemStats {
    /// sysstat: used = total − (free + buffers + cached + slab), never below 0. Sums
    /// saturate: the counters also arrive from agents over the wire, and a hostile or broken
    /// one must not panic the coordinator (found by `fuzz_proc_sampler_mutated_files`).
    fn from(m: &MemCounters) -> MemStats {
        let not_used = m
            .free_kb
            .saturating_add(m.buffers_kb)
            .saturating_add(m.cached_kb)
            .saturating_add(m.slab_kb)
            .min(m.total_kb);
        let pct = |part: u64, whole: u64| if whole == 0 { 0.0 } else { part as f64 / whole as f64 * 100.0 };
        MemStats {
            kbmemfree: m.free_kb,
            kbavail: m.available_kb,
            kbmemused: m.total_kb - not_used,
            memused_pct: pct(m.total_kb - not_used, m.total_kb),
            kbbuffers: m.buffers_kb,
            kbcached: m.cached_kb,
            kbcommit: m.committed_as_kb,
            commit_pct: pct(m.committed_as_kb, m.total_kb.saturating_add(m.swap_total_kb)),
            kbactive: m.active_kb,
            kbinact: m.inactive_kb,
            kbdirty: m.dirty_kb,
        }
    }
}

/// `sar -q` columns ([`LoadColumn`] names them).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadStats {
    pub runq_sz: u32,
    pub plist_sz: u32,
    pub ldavg_1: f64,
    pub ldavg_5: f64,
    pub ldavg_15: f64,
}

columns! {
    /// A column of `sar -q`, a [`LoadStats`] field.
    LoadStats => LoadColumn {
        RunqSz => runq_sz = "runq-sz",
        PlistSz => plist_sz = "plist-sz",
        Ldavg1 => ldavg_1 = "ldavg-1",
        Ldavg5 => ldavg_5 = "ldavg-5",
        Ldavg15 => ldavg_15 = "ldavg-15",
    }
}

impl From<&LoadCounters> for LoadStats {
    fn from(l: &LoadCounters) -> LoadStats {
        LoadStats {
            runq_sz: l.runnable,
            plist_sz: l.tasks,
            ldavg_1: l.one,
            ldavg_5: l.five,
            ldavg_15: l.fifteen,
        }
    }
}

#[cfg(test)]
mod tests;
