//! Raw samples: the kernel's cumulative counters, read once per interval and kept as they are.
//!
//! Rates are never computed here (see [`crate::rates`]): a sample is what the kernel said at one
//! moment, so samples can be stored, shipped and replayed, and any two of them give the rates
//! for the time between. Parsing of the `/proc` formats is procfs-core's (meminfo's excepted, see
//! [`meminfo`]); which devices count,
//! and the counter widths, follow sysstat (iostat reads whole devices from `/sys/block`, and the
//! kernel prints the `*_ticks` fields as 32-bit milliseconds).

use procfs_core::net::InterfaceDeviceStatus;
use procfs_core::{DiskStat, FromBufRead, FromRead, LoadAverage};
use pvfs_host::{Root, RootError};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

mod disks;

pub use disks::has_size;

/// Everything read at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Wall-clock time of the read, nanoseconds since the Unix epoch.
    pub time_unix_ns: u64,
    /// CLOCK_MONOTONIC at the read, nanoseconds: intervals between samples come from this, not
    /// from the wall clock (which NTP may step).
    pub mono_ns: u64,
    pub disks: Vec<DiskCounters>,
    pub nics: Vec<NicCounters>,
    pub cpu: CpuCounters,
    pub mem: MemCounters,
    pub load: LoadCounters,
    /// What the node's parallel file system says of itself that second, on a node with one.
    /// Not in the ring's encoding: the agent holds the last minute's beside it, as it does
    /// processes, and attaches them to the samples it sends.
    #[serde(skip)]
    pub fs: Option<Arc<FsSecond>>,
}

/// A file system's own view of a node in one second: its Lustre targets, its GlusterFS bricks.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FsSecond {
    pub lustre: Option<crate::lustre::node::Snapshot>,
    pub bricks: Vec<crate::gluster::LocalBrick>,
    /// This node's BeeGFS servers' second, as their own statistics tell it: the agent reads
    /// them from the servers' statistics commands as they print (`pvfs-agent`'s `beegfs`), so
    /// a [`Sampler`] leaves them empty.
    pub beegfs: Vec<crate::beegfs::ServerSecond>,
    /// This node's BeeGFS targets' space and state (`pvfs-agent`'s `beegfs` too).
    pub beegfs_targets: Vec<crate::beegfs::TargetSecond>,
}

impl FsSecond {
    /// Whether the node's file system said anything of itself this second.
    pub fn is_empty(&self) -> bool {
        self.lustre.is_none()
            && self.bricks.is_empty()
            && self.beegfs.is_empty()
            && self.beegfs_targets.is_empty()
    }
}

impl Sample {
    pub fn disk(&self, name: &str) -> Option<&DiskCounters> {
        self.disks.iter().find(|d| d.name == name)
    }

    pub fn nic(&self, name: &str) -> Option<&NicCounters> {
        self.nics.iter().find(|n| n.name == name)
    }

    /// Whole devices that have done I/O since boot (iostat hides the others), or every one
    /// with `named` (the caller asked for devices by name).
    pub fn visible_devices(&self, named: bool) -> Vec<String> {
        self.disks.iter().filter(|d| named || d.total_ios() > 0).map(|d| d.name.clone()).collect()
    }
}

/// One block device's line of `/proc/diskstats` (fields named as sysstat's `struct io_stats`).
/// Counts and sectors are the kernel's `unsigned long`; `*_ticks` are `unsigned int` ms.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskCounters {
    pub name: String,
    pub rd_ios: u64,
    pub rd_merges: u64,
    pub rd_sectors: u64,
    pub rd_ticks: u64,
    pub wr_ios: u64,
    pub wr_merges: u64,
    pub wr_sectors: u64,
    pub wr_ticks: u64,
    /// I/Os in flight now (a gauge).
    pub ios_pgr: u64,
    /// Milliseconds the device had I/O in flight.
    pub tot_ticks: u64,
    /// Sum of the latencies of all requests, in ms (weighted time).
    pub rq_ticks: u64,
    pub dc_ios: u64,
    pub dc_merges: u64,
    pub dc_sectors: u64,
    pub dc_ticks: u64,
    pub fl_ios: u64,
    pub fl_ticks: u64,
}

impl DiskCounters {
    /// Reads + writes + discards + flushes: iostat hides a device while this is 0. Saturating:
    /// counters arrive from agents over the wire, and four near-`u64::MAX` ones (a hostile or
    /// broken agent) must not panic the coordinator's stream.
    pub fn total_ios(&self) -> u64 {
        self.rd_ios.saturating_add(self.wr_ios).saturating_add(self.dc_ios).saturating_add(self.fl_ios)
    }

    /// The kernel's fields after the name, in its order (a line of `/proc/diskstats`, a
    /// `/sys/block/DEV/stat` file), 0 for those an older kernel does not write.
    pub fn from_fields(name: String, f: [u64; 17]) -> DiskCounters {
        DiskCounters {
            name,
            rd_ios: f[0],
            rd_merges: f[1],
            rd_sectors: f[2],
            rd_ticks: f[3],
            wr_ios: f[4],
            wr_merges: f[5],
            wr_sectors: f[6],
            wr_ticks: f[7],
            ios_pgr: f[8],
            tot_ticks: f[9],
            rq_ticks: f[10],
            dc_ios: f[11],
            dc_merges: f[12],
            dc_sectors: f[13],
            dc_ticks: f[14],
            fl_ios: f[15],
            fl_ticks: f[16],
        }
    }

    /// The counters in the kernel's order ([`DiskCounters::from_fields`]'s).
    pub fn fields(&self) -> [u64; 17] {
        [
            self.rd_ios,
            self.rd_merges,
            self.rd_sectors,
            self.rd_ticks,
            self.wr_ios,
            self.wr_merges,
            self.wr_sectors,
            self.wr_ticks,
            self.ios_pgr,
            self.tot_ticks,
            self.rq_ticks,
            self.dc_ios,
            self.dc_merges,
            self.dc_sectors,
            self.dc_ticks,
            self.fl_ios,
            self.fl_ticks,
        ]
    }

    fn from_stat(stat: DiskStat) -> DiskCounters {
        DiskCounters {
            name: stat.name,
            rd_ios: stat.reads,
            rd_merges: stat.merged,
            rd_sectors: stat.sectors_read,
            rd_ticks: stat.time_reading,
            wr_ios: stat.writes,
            wr_merges: stat.writes_merged,
            wr_sectors: stat.sectors_written,
            wr_ticks: stat.time_writing,
            ios_pgr: stat.in_progress,
            tot_ticks: stat.time_in_progress,
            rq_ticks: stat.weighted_time_in_progress,
            dc_ios: stat.discards.unwrap_or(0),
            dc_merges: stat.discards_merged.unwrap_or(0),
            dc_sectors: stat.sectors_discarded.unwrap_or(0),
            dc_ticks: stat.time_discarding.unwrap_or(0),
            fl_ios: stat.flushes.unwrap_or(0),
            fl_ticks: stat.time_flushing.unwrap_or(0),
        }
    }
}

/// One interface's line of `/proc/net/dev`, with its link speed and duplex from sysfs (which
/// sar reads every interval too, for %ifutil).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicCounters {
    pub name: String,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errs: u64,
    pub rx_drop: u64,
    pub rx_compressed: u64,
    pub rx_multicast: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errs: u64,
    pub tx_drop: u64,
    pub tx_compressed: u64,
    /// Mbit/s, 0 when not reported.
    pub speed_mbps: u32,
    pub duplex: Duplex,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Duplex {
    Full,
    Half,
    #[default]
    Unknown,
}

/// The `cpu` line of `/proc/stat`: all CPUs together, in USER_HZ ticks. `user` and `nice`
/// include `guest` and `guest_nice`, as the kernel counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuCounters {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub guest: u64,
    pub guest_nice: u64,
}

/// The `/proc/meminfo` lines sar -r uses, in kB as the kernel prints them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemCounters {
    pub total_kb: u64,
    pub free_kb: u64,
    pub available_kb: u64,
    pub buffers_kb: u64,
    pub cached_kb: u64,
    pub slab_kb: u64,
    pub committed_as_kb: u64,
    pub active_kb: u64,
    pub inactive_kb: u64,
    pub dirty_kb: u64,
    pub swap_total_kb: u64,
    pub swap_free_kb: u64,
}

/// `/proc/loadavg`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadCounters {
    pub one: f64,
    pub five: f64,
    pub fifteen: f64,
    /// Runnable tasks (sar's runq-sz).
    pub runnable: u32,
    /// All tasks (sar's plist-sz).
    pub tasks: u32,
}

/// A host file could not be read or understood.
#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    #[error(transparent)]
    Read(#[from] RootError),
    #[error("cannot parse {path}: {what}")]
    Parse { path: &'static str, what: String },
}

/// Which block devices a sample includes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DeviceFilter {
    /// Whole devices (those in `/sys/block`: disks, md, dm, loop, nvme namespaces), as iostat
    /// shows by default.
    #[default]
    WholeDevices,
    /// Exactly these names, partitions included.
    Named(Vec<String>),
}

/// How long a NIC's speed and duplex are trusted before sysfs is read again. sar reads them
/// every interval; here that would be two sysfs reads per NIC per second, measured at ~15 µs
/// each on a VM, the largest part of a sample's cost, for values that change only when a link
/// renegotiates.
const LINK_REFRESH: std::time::Duration = std::time::Duration::from_secs(30);

/// Reads samples under a root, remembering which block devices to read and how (see
/// [`disks`]) and each NIC's link speed and duplex.
///
/// The `/proc` files it reads every second stay open between samples (`files`), and each
/// sample reads them again from offset 0: procfs regenerates a file's text on every read from
/// the start, so the counters are as fresh as with a new open. Opening them once means a
/// sample needs no new descriptor, so a process out of descriptors (a connection flood at
/// `RLIMIT_NOFILE`) still samples every second — what the agent's monitoring must never lose.
/// (The devices' stat files are held the same way; finding the devices opens new ones, and
/// a find that cannot reads the sample from diskstats, whose descriptor is held.)
#[derive(Debug)]
pub struct Sampler {
    root: Root,
    filter: DeviceFilter,
    disks: disks::Disks,
    links: HashMap<String, (u32, Duplex, std::time::Instant)>,
    files: ProcFiles,
    /// Lustre's files, found now and then and read every second.
    lustre: crate::lustre::node::Reader,
}

/// The `/proc` files a sampler reads, each open once with the buffer its text is read into.
///
/// Measured on an idle agent (perf, DWARF call graphs): with a fresh `Vec` and `read_to_end`
/// per read, std first probes with a 32-byte read (procfs formats the file's start for it),
/// then grows the vector read by read, and asks for the file's size (a `statx`, which procfs
/// answers with 0) — together a third of the agent's idle CPU. A buffer kept at the file's
/// size, filled with `pread` from offset 0 (no `lseek`), reads the whole text in one call and
/// sees the end in a second.
#[derive(Debug, Default)]
struct ProcFiles(Vec<ProcFile>);

#[derive(Debug)]
struct ProcFile {
    path: &'static str,
    file: std::fs::File,
    text: Vec<u8>,
}

/// Room added before each read beyond the text's last size: a file that grew by a few lines
/// (a new device) still fits in one read.
const READ_MARGIN: usize = 4096;

impl ProcFiles {
    /// The text of the `/proc` file `path` now, through the handle kept from the first read.
    /// A handle that fails a read is dropped, so the next sample opens the file again. Bytes
    /// that are not UTF-8 (a device name, say) are replaced, as before.
    fn read(&mut self, root: &Root, path: &'static str) -> Result<&str, RootError> {
        use std::os::unix::fs::FileExt;
        let error = |source| RootError { path: path.to_owned(), action: "read", source };
        let index = match self.0.iter().position(|f| f.path == path) {
            Some(index) => index,
            None => {
                let file = std::fs::File::open(root.path(path)).map_err(error)?;
                self.0.push(ProcFile { path, file, text: Vec::new() });
                self.0.len() - 1
            }
        };
        let slot = &mut self.0[index];
        let mut len = 0;
        loop {
            // Safe code cannot read into uninitialised memory: the room is zeroed first (a
            // memset of a few KiB, far cheaper than the read it serves).
            if slot.text.len() < len + READ_MARGIN {
                slot.text.resize((len + READ_MARGIN).max(slot.text.len() * 2), 0);
            }
            match slot.file.read_at(&mut slot.text[len..], len as u64) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    self.0.swap_remove(index);
                    return Err(error(source));
                }
            }
        }
        let slot = &mut self.0[index];
        if std::str::from_utf8(&slot.text[..len]).is_err() {
            let replaced = String::from_utf8_lossy(&slot.text[..len]).into_owned().into_bytes();
            len = replaced.len();
            slot.text = replaced;
        }
        // Checked just above (or replaced by valid UTF-8).
        Ok(std::str::from_utf8(&slot.text[..len]).unwrap_or_default())
    }
}

impl Sampler {
    pub fn new(root: Root, filter: DeviceFilter) -> Sampler {
        Sampler {
            root,
            filter,
            disks: disks::Disks::default(),
            links: HashMap::new(),
            files: ProcFiles::default(),
            lustre: crate::lustre::node::Reader::default(),
        }
    }

    /// Speed (Mbit/s, 0 if none) and duplex of `nic`, from sysfs at most every LINK_REFRESH.
    fn link(&mut self, nic: &str) -> (u32, Duplex) {
        if let Some((speed, duplex, at)) = self.links.get(nic)
            && at.elapsed() < LINK_REFRESH
        {
            return (*speed, *duplex);
        }
        let sys = |file: &str| self.root.read_trimmed(&format!("/sys/class/net/{nic}/{file}"));
        // Virtual NICs fail the read (EINVAL) or say -1: no speed.
        let speed = sys("speed").ok().and_then(|s| s.parse::<u32>().ok()).unwrap_or(0);
        let duplex = match sys("duplex").as_deref() {
            Ok("full") => Duplex::Full,
            Ok("half") => Duplex::Half,
            _ => Duplex::Unknown,
        };
        self.links.insert(nic.to_owned(), (speed, duplex, std::time::Instant::now()));
        (speed, duplex)
    }

    /// Reads every counter now.
    pub fn sample(&mut self) -> Result<Sample, SampleError> {
        let mono_ns = monotonic_ns();
        let time_unix_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        Ok(Sample {
            time_unix_ns,
            mono_ns,
            disks: self.read_disks()?,
            nics: self.read_nics()?,
            cpu: self.read_cpu()?,
            mem: self.read_mem()?,
            load: self.read_load()?,
            fs: self.read_fs().map(Arc::new),
        })
    }

    /// The node's Lustre targets and GlusterFS bricks this second, where it has any. Bricks
    /// are looked for every second (one lookup that fails on a node without them,
    /// `/run/gluster/vols`); Lustre's files every [`crate::lustre::node::FIND_EVERY`] seconds
    /// (`/sys/fs/lustre`, `/proc/fs/lustre`), so a target shows within that time.
    fn read_fs(&mut self) -> Option<FsSecond> {
        let second = FsSecond {
            lustre: self.lustre.read(&self.root),
            bricks: crate::gluster::local_bricks(&self.root),
            beegfs: Vec::new(),
            beegfs_targets: Vec::new(),
        };
        (!second.is_empty()).then_some(second)
    }

    fn read_disks(&mut self) -> Result<Vec<DiskCounters>, SampleError> {
        self.disks.read(&self.root, &mut self.files, &self.filter)
    }

    fn read_nics(&mut self) -> Result<Vec<NicCounters>, SampleError> {
        const PATH: &str = "/proc/net/dev";
        let text = self.files.read(&self.root, PATH)?;
        let status = InterfaceDeviceStatus::from_buf_read(text.as_bytes()).map_err(|e| parse(PATH, e))?;
        let mut nics = Vec::with_capacity(status.0.len());
        for d in status.0.into_values() {
            let (speed_mbps, duplex) = self.link(&d.name);
            nics.push(NicCounters {
                rx_bytes: d.recv_bytes,
                rx_packets: d.recv_packets,
                rx_errs: d.recv_errs,
                rx_drop: d.recv_drop,
                rx_compressed: d.recv_compressed,
                rx_multicast: d.recv_multicast,
                tx_bytes: d.sent_bytes,
                tx_packets: d.sent_packets,
                tx_errs: d.sent_errs,
                tx_drop: d.sent_drop,
                tx_compressed: d.sent_compressed,
                speed_mbps,
                duplex,
                name: d.name,
            });
        }
        // /proc/net/dev order is the kernel's; a map scrambled it. Names sort for stable output.
        nics.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(nics)
    }

    fn read_cpu(&mut self) -> Result<CpuCounters, SampleError> {
        const PATH: &str = "/proc/stat";
        let text = self.files.read(&self.root, PATH)?;
        // Only the first line ("cpu  …", all CPUs) is needed; procfs-core's KernelStats would
        // also parse every per-CPU line and convert ticks through a system-info seam.
        let line = text.lines().find(|l| l.starts_with("cpu ")).ok_or_else(|| parse(PATH, "no cpu line"))?;
        let mut f = line.split_ascii_whitespace().skip(1).map(|v| v.parse::<u64>());
        let mut next = || f.next().transpose().map_err(|e| parse(PATH, e)).map(Option::unwrap_or_default);
        Ok(CpuCounters {
            user: next()?,
            nice: next()?,
            system: next()?,
            idle: next()?,
            iowait: next()?,
            irq: next()?,
            softirq: next()?,
            steal: next()?,
            guest: next()?,
            guest_nice: next()?,
        })
    }

    fn read_mem(&mut self) -> Result<MemCounters, SampleError> {
        const PATH: &str = "/proc/meminfo";
        let text = self.files.read(&self.root, PATH)?;
        meminfo(text).map_err(|what| parse(PATH, what))
    }

    fn read_load(&mut self) -> Result<LoadCounters, SampleError> {
        const PATH: &str = "/proc/loadavg";
        let text = self.files.read(&self.root, PATH)?;
        let l = LoadAverage::from_read(text.as_bytes()).map_err(|e| parse(PATH, e))?;
        // f32 in procfs-core; the kernel prints two decimals, so nothing is lost.
        let two = |v: f32| (f64::from(v) * 100.0).round() / 100.0;
        Ok(LoadCounters {
            one: two(l.one),
            five: two(l.five),
            fifteen: two(l.fifteen),
            runnable: l.cur,
            tasks: l.max,
        })
    }
}

/// The `/proc/meminfo` lines sar -r uses, read in one pass over the kernel's
/// `Key:   value kB` lines.
///
/// By hand rather than with procfs-core's `Meminfo`, which was used before: it builds a map of
/// every line (about 55 hashed `String`s) to return a dozen values, 12 % of an idle agent's
/// CPU by perf, and panics on two inputs that are not the kernel's (found by
/// `fuzz_proc_sampler_mutated_files`: a non-ASCII character before the `:`, a size past
/// 16 EiB once scaled to bytes). Values stay in kB, as the kernel prints them and sar reports
/// them, so nothing is scaled and nothing can overflow. A line sar needs that is missing, or
/// given in another unit, is an error naming it (MemAvailable only since Linux 3.14: 0 without).
fn meminfo(text: &str) -> Result<MemCounters, String> {
    const KEYS: [&str; 12] = [
        "MemTotal",
        "MemFree",
        "MemAvailable",
        "Buffers",
        "Cached",
        "Slab",
        "Committed_AS",
        "Active",
        "Inactive",
        "Dirty",
        "SwapTotal",
        "SwapFree",
    ];
    let mut values: [Option<u64>; 12] = [None; 12];
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else { continue };
        let Some(slot) = KEYS.iter().position(|k| *k == key) else { continue };
        let mut words = rest.split_ascii_whitespace();
        let value = match (words.next().map(str::parse::<u64>), words.next(), words.next()) {
            (Some(Ok(value)), Some("kB"), None) => value,
            _ => return Err(format!("{line:?} is not `{key}: N kB` as the kernel writes it")),
        };
        values[slot] = Some(value);
    }
    let value = |index: usize| values[index].ok_or_else(|| format!("no {} line", KEYS[index]));
    Ok(MemCounters {
        total_kb: value(0)?,
        free_kb: value(1)?,
        available_kb: values[2].unwrap_or(0),
        buffers_kb: value(3)?,
        cached_kb: value(4)?,
        slab_kb: value(5)?,
        committed_as_kb: value(6)?,
        active_kb: value(7)?,
        inactive_kb: value(8)?,
        dirty_kb: value(9)?,
        swap_total_kb: value(10)?,
        swap_free_kb: value(11)?,
    })
}

fn parse(path: &'static str, what: impl std::fmt::Display) -> SampleError {
    SampleError::Parse { path, what: what.to_string() }
}

/// How long from `now` to the next multiple of `interval` since the Unix epoch (never zero):
/// every node that samples on these ticks samples the same seconds.
pub fn until_tick(now: SystemTime, interval: std::time::Duration) -> std::time::Duration {
    let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
    let step = interval.as_nanos().max(1);
    std::time::Duration::from_nanos((step - since_epoch % step) as u64)
}

/// CLOCK_MONOTONIC in nanoseconds: system-wide, so samples from before and after an agent
/// restart still give true intervals.
pub fn monotonic_ns() -> u64 {
    match nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC) {
        Ok(ts) => ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64,
        // clock_gettime(CLOCK_MONOTONIC) cannot fail on Linux; keep going rather than panic.
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::{meminfo, until_tick};
    use std::time::{Duration, UNIX_EPOCH};

    /// The kernel's meminfo (Debian 12, Linux 6.18) gives sar's values in kB, as printed.
    #[test]
    fn meminfo_reads_sars_lines_in_kb() {
        let m = meminfo(include_str!("../testdata/meminfo-debian12-6.18.txt")).unwrap();
        let line = |key: &str| {
            let text = include_str!("../testdata/meminfo-debian12-6.18.txt");
            let line = text.lines().find(|l| l.split(':').next() == Some(key)).unwrap();
            line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap()
        };
        assert_eq!(m.total_kb, line("MemTotal"));
        assert_eq!(m.available_kb, line("MemAvailable"));
        assert_eq!(m.committed_as_kb, line("Committed_AS"));
        // "Active(anon)" and "Inactive(file)" are other lines than "Active" and "Inactive".
        assert_eq!(m.active_kb, line("Active"));
        assert_eq!(m.inactive_kb, line("Inactive"));
        assert_eq!(m.swap_free_kb, line("SwapFree"));
    }

    /// Inputs on which procfs-core 0.18's meminfo panicked (found by
    /// `fuzz_proc_sampler_mutated_files`), and others that are not the kernel's: values, or an
    /// error naming the line, never a panic.
    #[test]
    fn a_meminfo_that_is_not_the_kernels_is_an_error_naming_the_line() {
        let base = "MemTotal: 1 kB\nMemFree: 1 kB\nBuffers: 1 kB\nCached: 1 kB\nSlab: 1 kB\nCommitted_AS: 1 kB\n\
                    Active: 1 kB\nInactive: 1 kB\nDirty: 1 kB\nSwapTotal: 1 kB\nSwapFree: 1 kB\n";
        // No MemAvailable (before Linux 3.14): 0.
        assert_eq!(meminfo(base).unwrap().available_kb, 0);
        // A size past 16 EiB in bytes is still a u64 in kB.
        let huge = format!("{base}MemAvailable: 18014398509481984 kB\n");
        assert_eq!(meminfo(&huge).unwrap().available_kb, 18014398509481984);
        // A non-ASCII key is not one sar needs.
        assert!(meminfo(&format!("{base}Inactive(file)\u{e9}: 12 kB\n")).is_ok());
        assert_eq!(
            meminfo(&format!("{base}Dirty: 18446744073709551616 kB\n")),
            Err("\"Dirty: 18446744073709551616 kB\" is not `Dirty: N kB` as the kernel writes it".into())
        );
        assert_eq!(
            meminfo(&base.replace("Slab: 1 kB", "Slab: 1 MB")),
            Err("\"Slab: 1 MB\" is not `Slab: N kB` as the kernel writes it".into())
        );
        assert_eq!(meminfo(&base.replace("SwapFree", "SwapFrei")), Err("no SwapFree line".into()));
    }

    /// The same, through the sampler: an error naming the file, not a panic.
    #[test]
    fn a_meminfo_that_is_not_the_kernels_is_a_sample_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write("proc/diskstats", "");
        write("proc/net/dev", "Inter-|\n face |\n");
        write("proc/stat", "cpu  1 2 3 4 5 6 7 0 0 0\n");
        write("proc/loadavg", "0.52 0.31 0.12 3/187 4242\n");
        write("proc/meminfo", "MemTotal:       1000 kB\nInactive(file)\u{e9}: 12 kB\n");
        let mut sampler =
            super::Sampler::new(pvfs_host::Root::at(dir.path()), super::DeviceFilter::WholeDevices);
        let err = sampler.sample().unwrap_err().to_string();
        assert!(err.contains("/proc/meminfo") && err.contains("no MemFree line"), "{err}");
    }

    /// By default a sample holds the whole devices that ever did I/O, as iostat shows them:
    /// an unused loop device (all counters zero) and a partition are left out; a device asked
    /// for by name is kept however idle, and a line of a device left out is not even parsed.
    #[test]
    fn a_sample_leaves_out_devices_that_never_did_io_unless_named() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        // Linux 5.5+'s 20 fields (kernel's Documentation/admin-guide/iostats.rst).
        write(
            "proc/diskstats",
            concat!(
                "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
                "   7       1 loop1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
                " 253       0 vda 9071 3077 793470 3417 46870 28350 1813624 41960 0 59380 46770 0 0 0 0 1919 1392\n",
                " 253       1 vda1 8900 3077 780000 3400 46870 28350 1813624 41960 0 59300 45360 0 0 0 0 0 0\n",
                "   7       2 loop2 12 0 96 1 0 0 0 0 0 8 1 0 0 0 0 0 0\n",
            ),
        );
        for dev in ["loop0", "loop1", "vda", "loop2"] {
            std::fs::create_dir_all(dir.path().join("sys/block").join(dev)).unwrap();
        }
        write("proc/net/dev", "Inter-|\n face |\n");
        write("proc/stat", "cpu  1 2 3 4 5 6 7 0 0 0\n");
        write("proc/loadavg", "0.52 0.31 0.12 3/187 4242\n");
        write(
            "proc/meminfo",
            "MemTotal: 1000 kB\nMemFree: 500 kB\nMemAvailable: 600 kB\nBuffers: 1 kB\nCached: 2 kB\n\
             SwapCached: 0 kB\nActive: 1 kB\nInactive: 1 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n\
             Dirty: 0 kB\nShmem: 0 kB\nSlab: 1 kB\nSReclaimable: 1 kB\nCommitted_AS: 1 kB\n",
        );
        let names = |filter| {
            let mut sampler = super::Sampler::new(pvfs_host::Root::at(dir.path()), filter);
            sampler.sample().unwrap().disks.iter().map(|d| d.name.clone()).collect::<Vec<_>>()
        };
        assert_eq!(names(super::DeviceFilter::WholeDevices), ["vda", "loop2"]);
        assert_eq!(names(super::DeviceFilter::Named(vec!["loop1".into(), "vda1".into()])), ["loop1", "vda1"]);
    }

    /// The buffers kept between samples: a file that grows past the last read's size, one
    /// that shrinks, and bytes that are not UTF-8 are read whole and fresh every time.
    #[test]
    fn proc_files_are_read_whole_every_time() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        let path = dir.path().join("proc/diskstats");
        let root = pvfs_host::Root::at(dir.path());
        let mut files = super::ProcFiles::default();
        for text in ["short\n".to_owned(), "x".repeat(3 * super::READ_MARGIN + 17), "tiny".into()] {
            std::fs::write(&path, &text).unwrap();
            assert_eq!(files.read(&root, "/proc/diskstats").unwrap(), text);
        }
        std::fs::write(&path, b"sd\xffa 1\n").unwrap();
        assert_eq!(files.read(&root, "/proc/diskstats").unwrap(), "sd\u{fffd}a 1\n");
        std::fs::write(&path, "after\n").unwrap();
        assert_eq!(files.read(&root, "/proc/diskstats").unwrap(), "after\n");
        assert_eq!(files.0.len(), 1, "one handle, kept");
    }

    #[test]
    fn ticks_land_on_interval_boundaries() {
        let at = |s: u64, ms: u64| UNIX_EPOCH + Duration::from_secs(s) + Duration::from_millis(ms);
        assert_eq!(until_tick(at(100, 250), Duration::from_secs(1)), Duration::from_millis(750));
        // Exactly on a boundary: the next one, never a zero-length interval.
        assert_eq!(until_tick(at(100, 0), Duration::from_secs(1)), Duration::from_secs(1));
        assert_eq!(until_tick(at(101, 500), Duration::from_secs(5)), Duration::from_millis(3500));
    }
}
