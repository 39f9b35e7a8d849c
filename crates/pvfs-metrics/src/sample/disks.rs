//! The block devices' counters each second, at the cost of the devices that can do I/O.
//!
//! `/proc/diskstats` is the kernel formatting a line for every disk it knows, every time it is
//! read, and a disk it knows is not one that can do I/O: a loop device that was attached, used
//! and detached keeps its line (size 0, counters frozen, "did I/O since boot") until reboot.
//! A machine that has run this project's tests lists 120 of them; a whole read of diskstats
//! there took 97 µs, against 1.7 µs for one device's stat file and under 1 µs for a `recv`
//! that finds no event (a C loop of reads, 112 lines), and the agent's CPU at 1 s was a third
//! higher there than on a fresh machine of the same kind (issue 30's notes).
//!
//! So diskstats is read to *find* the devices: at the first sample, within the second a block
//! device is added, removed, attached, detached or resized — which the kernel announces to
//! every listener of its device events (`NETLINK_KOBJECT_UEVENT`, what udev hears; one
//! non-blocking `recv` a second, [`Events`]) — and every [`REFIND_HEARING`] as a last resort.
//! Where those events cannot be heard (a root that is not this machine's, a socket refused),
//! `/proc/partitions` is read each second instead and compared with its text at the find, and
//! diskstats every [`REFIND_EVERY`]: partitions lists the devices with a size, so it changes on
//! the same events, at the cost of the kernel walking every block device (a tenth of an idle
//! agent's CPU on a machine with 120 of them, by perf).
//!
//! Between finds, each device with a size is read from its own `/sys/class/block/NAME/stat`
//! (the same fields as its diskstats line, without major, minor and name), held open and read
//! with one `pread`; a device without a size cannot do I/O, so the counters diskstats gave for
//! it are sent again unread — which keeps a sample what it was (iostat's list: every device
//! that did I/O since boot), so a loop device attached again is rated against its own
//! counters, not against zero (sending them still costs: with 111 such devices, about
//! 8 % of the agent's CPU, measured by leaving them out). A device with a size that never
//! did I/O is read too, and shows in the second its first I/O lands.
//!
//! Where any of it cannot be used (a root without sysfs, a stat file that will not open or
//! parse, no descriptors left), the sample is read from diskstats as before, and the next one
//! tries to find the devices again: the way each second is a saving, never a source of truth.

use super::{DeviceFilter, DiskCounters, ProcFiles, SampleError, parse};
use procfs_core::DiskStat;
use pvfs_host::Root;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long devices found are trusted before diskstats is read again, for a change that
/// `/proc/partitions` does not show (a kernel that hides some devices there: Linux 3.10
/// leaves out removable ones without partitions).
pub(super) const REFIND_EVERY: Duration = Duration::from_secs(10);

/// The same where the kernel's events are heard: it announces every block device's changes,
/// those it leaves out of /proc/partitions too, and a lost message is seen as lost; the finds
/// are then only a last resort.
const REFIND_HEARING: Duration = Duration::from_secs(60);

const DISKSTATS: &str = "/proc/diskstats";
const PARTITIONS: &str = "/proc/partitions";

/// Room for one stat file: the kernel writes a sysfs attribute in one page at most, and
/// Linux 6.x's 17 fields take under 200 bytes.
const STAT_ROOM: usize = 4096;

/// The devices found and what is read for each between finds.
#[derive(Debug)]
pub(super) struct Disks {
    /// In diskstats' order (so a sample's device list, and the ring's layout built from it,
    /// stays the same from second to second).
    found: Vec<Found>,
    /// `/proc/partitions` as it read just before the devices were found.
    partitions: String,
    /// When they were found; `None` until found, or when the way each second cannot be used.
    found_at: Option<Instant>,
    /// Whether a name of diskstats is a whole device (`/sys/block/NAME` exists), remembered so
    /// that sysfs is not asked again at each find.
    whole: HashMap<String, bool>,
    stat_text: Vec<u8>,
    /// The kernel's block device events, once asked for (`None` before the first find).
    events: Option<Option<Events>>,
}

#[derive(Debug)]
enum Found {
    /// A device with a size: its stat file, open.
    Live { name: String, stat: File },
    /// A device without one: its counters when found, which cannot change while it has none
    /// (kept, and not sent, when they are all zero: the next find need not ask sysfs again).
    Still(DiskCounters),
}

impl Default for Disks {
    fn default() -> Disks {
        Disks {
            found: Vec::new(),
            partitions: String::new(),
            found_at: None,
            whole: HashMap::new(),
            stat_text: vec![0; STAT_ROOM],
            events: None,
        }
    }
}

impl Disks {
    /// The devices `filter` keeps, with their counters now.
    pub(super) fn read(
        &mut self,
        root: &Root,
        files: &mut ProcFiles,
        filter: &DeviceFilter,
    ) -> Result<Vec<DiskCounters>, SampleError> {
        match self.each_second(root, files, filter) {
            Some(disks) => Ok(disks),
            None => self.find(root, files, filter),
        }
    }

    /// The counters from the devices' own stat files, or `None` when the devices must be
    /// found again first (see the module's notes).
    fn each_second(
        &mut self,
        root: &Root,
        files: &mut ProcFiles,
        filter: &DeviceFilter,
    ) -> Option<Vec<DiskCounters>> {
        use std::os::unix::fs::FileExt;
        let hearing = matches!(self.events, Some(Some(_)));
        if self.found_at?.elapsed() >= if hearing { REFIND_HEARING } else { REFIND_EVERY } {
            return None;
        }
        match &mut self.events {
            Some(Some(events)) => {
                if events.block_changed() {
                    return None;
                }
            }
            _ => {
                if files.read(root, PARTITIONS).ok()? != self.partitions {
                    return None;
                }
            }
        }
        let named = matches!(filter, DeviceFilter::Named(_));
        let mut disks = Vec::with_capacity(self.found.len());
        for found in &self.found {
            match found {
                Found::Still(counters) if named || counters.total_ios() > 0 => disks.push(counters.clone()),
                Found::Still(_) => {}
                Found::Live { name, stat } => {
                    let len = stat.read_at(&mut self.stat_text, 0).ok()?;
                    // A full buffer is not a stat file as the kernel writes it.
                    if len == self.stat_text.len() {
                        return None;
                    }
                    let counters = stat_counters(name, &self.stat_text[..len])?;
                    if named || counters.total_ios() > 0 {
                        disks.push(counters);
                    }
                }
            }
        }
        Some(disks)
    }

    /// Reads diskstats: the sample's counters, and the devices to read each second after.
    fn find(
        &mut self,
        root: &Root,
        files: &mut ProcFiles,
        filter: &DeviceFilter,
    ) -> Result<Vec<DiskCounters>, SampleError> {
        // A device still at the last find whose line has not changed is still now, without
        // asking sysfs: a machine that has run tests has a hundred of them, and reading each
        // one's size at every find cost more than the diskstats reads the finds replace.
        let still: HashMap<String, DiskCounters> = std::mem::take(&mut self.found)
            .into_iter()
            .filter_map(|found| match found {
                Found::Still(counters) => Some((counters.name.clone(), counters)),
                Found::Live { .. } => None,
            })
            .collect();
        self.found_at = None;
        // Events are heard only for this machine's devices; a root elsewhere is a recording.
        let events =
            self.events.get_or_insert_with(|| (root.base() == Path::new("/")).then(Events::open).flatten());
        // Heard before the reads: what they announce, the reads see.
        if let Some(events) = events {
            events.block_changed();
        }
        // Read before diskstats: a device that changes in between changes it after, and the
        // next sample finds again.
        let partitions = files.read(root, PARTITIONS).ok().map(str::to_owned);
        let mut usable = partitions.is_some();
        // The devices with a size, by name (the fourth field); on Linux 3.10 some with a size
        // are not listed (removable ones without partitions), so a device missing here is
        // still only when sysfs says its size is 0.
        let listed: HashSet<&str> = partitions
            .as_deref()
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.split_ascii_whitespace().nth(3))
            .collect();
        let whole = *filter == DeviceFilter::WholeDevices;
        let text = files.read(root, DISKSTATS)?;
        let mut disks = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            // Only the devices kept are parsed: a node's diskstats lists every partition and
            // loop device, and parsing, encoding and sending each one every second was a
            // fifth of the agent's CPU (perf: 62 lines, 2 of them devices that ever did I/O).
            // The name is the third field.
            let mut fields = line.split_whitespace();
            let Some(name) = fields.nth(2) else {
                // Too short to name a device: the parser says what is wrong with it.
                DiskStat::from_line(line).map_err(|e| parse(DISKSTATS, e))?;
                continue;
            };
            if !keeps(filter, &mut self.whole, root, name) {
                continue;
            }
            // A device that never did any I/O is left out by default, as iostat leaves it
            // out: its counters are all zero. When it starts, its first sample is rated against
            // zero, which is what its counters were (`Rates::between`).
            let counters = if fields.all(|f| f == "0") {
                DiskCounters { name: name.to_owned(), ..DiskCounters::default() }
            } else {
                DiskCounters::from_stat(DiskStat::from_line(line).map_err(|e| parse(DISKSTATS, e))?)
            };
            let shown = !whole || counters.total_ios() > 0;
            if usable && !listed.contains(name) && still.get(name) == Some(&counters) {
                self.found.push(Found::Still(counters.clone()));
            } else if usable {
                match held(root, name) {
                    Some(Some(stat)) => self.found.push(Found::Live { name: name.to_owned(), stat }),
                    Some(None) => self.found.push(Found::Still(counters.clone())),
                    None => usable = false,
                }
            }
            if shown {
                disks.push(counters);
            }
        }
        match partitions {
            Some(partitions) if usable => {
                self.partitions = partitions;
                self.found_at = Some(Instant::now());
            }
            _ => self.found.clear(),
        }
        Ok(disks)
    }
}

/// A socket on the kernel's device events (the multicast group udev listens to), read without
/// blocking.
///
/// By hand over nix: the crates for uevents (`kobject-uevent`, `udev`) parse every message or
/// bind to libudev, and all that is needed here is whether a message names the block
/// subsystem. A message is only a reason to find the devices again (a second's diskstats
/// read), so one forged by a process allowed to send to the group changes no figure, and at
/// most [`EVENTS_A_SECOND`] are read a second.
#[derive(Debug)]
struct Events {
    socket: OwnedFd,
    message: Vec<u8>,
}

/// Messages read in one second at most; more (a storm of events) is taken as a change.
const EVENTS_A_SECOND: usize = 64;

impl Events {
    fn open() -> Option<Events> {
        use nix::sys::socket::{AddressFamily, NetlinkAddr, SockFlag, SockProtocol, SockType, bind, socket};
        let socket = socket(
            AddressFamily::Netlink,
            SockType::Datagram,
            SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
            SockProtocol::NetlinkKObjectUEvent,
        )
        .ok()?;
        // Group 1: the kernel's own messages (udev re-sends them processed to group 2).
        bind(socket.as_raw_fd(), &NetlinkAddr::new(0, 1)).ok()?;
        Some(Events { socket, message: vec![0; 8192] })
    }

    /// Whether a block device was announced since the last call, or messages may have been
    /// lost (the socket's buffer overflowed, or it failed).
    fn block_changed(&mut self) -> bool {
        use nix::errno::Errno;
        use nix::sys::socket::{MsgFlags, recv};
        let mut changed = false;
        for _ in 0..EVENTS_A_SECOND {
            match recv(self.socket.as_raw_fd(), &mut self.message, MsgFlags::MSG_DONTWAIT) {
                Ok(len) => {
                    changed |= self.message[..len].split(|&b| b == 0).any(|field| field == b"SUBSYSTEM=block")
                }
                Err(Errno::EAGAIN) => return changed,
                Err(Errno::EINTR) => {}
                Err(_) => return true,
            }
        }
        true
    }
}

/// Whether the device `name` of diskstats is one a sampler with `filter` reports (`whole`
/// remembers which names are whole devices, `root` says).
fn keeps(filter: &DeviceFilter, whole: &mut HashMap<String, bool>, root: &Root, name: &str) -> bool {
    match filter {
        DeviceFilter::Named(names) => names.iter().any(|n| n == name),
        // Looked up before inserting: the name is copied once per device, not per sample.
        DeviceFilter::WholeDevices => match whole.get(name) {
            Some(&is_whole) => is_whole,
            None => {
                let is_whole = root.exists(&format!("/sys/block/{}", sysfs_name(name)));
                whole.insert(name.to_owned(), is_whole);
                is_whole
            }
        },
    }
}

/// sysfs spells '/' in device names (cciss/c0d0) as '!'.
fn sysfs_name(name: &str) -> String {
    name.replace('/', "!")
}

/// Whether the block device `name` (a whole device or a partition) has a size, by sysfs
/// (`None` when sysfs cannot say): one without cannot do I/O, and a sampler reads it only when
/// it finds the devices.
pub fn has_size(root: &Root, name: &str) -> Option<bool> {
    let sectors = root.read_trimmed(&format!("/sys/class/block/{}/size", sysfs_name(name))).ok()?;
    Some(sectors.parse::<u64>().ok()? > 0)
}

/// The device's stat file, open, when it has a size (`Some(None)` when its size is 0), or
/// `None` when sysfs cannot say.
fn held(root: &Root, name: &str) -> Option<Option<File>> {
    if !has_size(root, name)? {
        return Some(None);
    }
    File::open(root.path(&format!("/sys/class/block/{}/stat", sysfs_name(name)))).ok().map(Some)
}

/// A device's counters from its sysfs stat file: diskstats' fields after the name, 11 of them
/// before Linux 4.18, 15 before 5.5 (discards), 17 since (flushes); a later kernel's extra
/// fields are ignored, as procfs-core ignores them in diskstats. `None` for anything else.
fn stat_counters(name: &str, text: &[u8]) -> Option<DiskCounters> {
    let mut values = [0u64; 17];
    let mut count = 0;
    for word in std::str::from_utf8(text).ok()?.split_ascii_whitespace().take(values.len()) {
        values[count] = word.parse().ok()?;
        count += 1;
    }
    if count < 11 {
        return None;
    }
    Some(DiskCounters::from_fields(name.to_owned(), values))
}

#[cfg(test)]
mod tests {
    use super::{DeviceFilter, Disks, REFIND_EVERY, REFIND_HEARING};
    use crate::sample::{DiskCounters, ProcFiles};
    use procfs_core::DiskStat;
    use pvfs_host::Root;
    use std::collections::{BTreeMap, BTreeSet};
    use std::time::Instant;

    fn write(dir: &std::path::Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn reads(disks: &[DiskCounters]) -> Vec<(&str, u64)> {
        disks.iter().map(|d| (d.name.as_str(), d.rd_ios)).collect()
    }

    /// A root as a Linux 6.x machine that has run tests: a disk and its partition, a loop
    /// device never used (size 0), one used and detached (size 0, counters left), one
    /// attached and not used yet.
    fn machine(dir: &std::path::Path, vda_reads: u64) {
        write(
            dir,
            "proc/diskstats",
            &format!(
                " 254       0 vda {vda_reads} 5109 1369170 3400 41678 7176 3116176 6044 0 6700 10087 8627 0 931848 447 6979 194\n \
                 254       1 vda1 20000 5000 1300000 3300 41000 7000 3000000 6000 0 6600 10000 8600 0 931000 440 0 0\n   \
                 7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n   \
                 7       1 loop1 77 0 616 5 0 0 0 0 0 12 5 0 0 0 0 0 0\n   \
                 7       2 loop2 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
            ),
        );
        write(
            dir,
            "proc/partitions",
            "major minor  #blocks  name\n\n 254        0  268435456 vda\n 254        1  268434432 vda1\n   7        2       2048 loop2\n",
        );
        for (name, sectors) in
            [("vda", 536870912), ("vda1", 536868864), ("loop0", 0), ("loop1", 0), ("loop2", 4096)]
        {
            if name != "vda1" {
                std::fs::create_dir_all(dir.join("sys/block").join(name)).unwrap();
            }
            write(dir, &format!("sys/class/block/{name}/size"), &format!("{sectors}\n"));
            write(
                dir,
                &format!("sys/class/block/{name}/stat"),
                "       0        0        0        0        0        0        0        0        0        0        0        0        0        0        0        0        0\n",
            );
        }
        write(dir, "sys/class/block/vda/stat", &stat17(vda_reads));
    }

    /// Linux 6.x's stat file (17 fields, as `part_stat_show` pads them).
    fn stat17(reads: u64) -> String {
        format!(
            "{reads:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
            5109, 1369170, 3400, 41678, 7176, 3116176, 6044, 0, 6700, 10087, 8627, 0, 931848, 447, 6979, 194
        )
    }

    /// Between finds, a device with a size is read from its stat file (diskstats is not read:
    /// a change written only there does not show), a device without one keeps the counters
    /// diskstats gave, and one that starts its first I/O shows in that second; a stat file as
    /// Linux 3.10 writes it (11 fields) reads the same. /proc/partitions changing, a stat file
    /// that is not one, and the time since the find each send the sample back to diskstats.
    #[test]
    fn between_finds_each_device_with_a_size_is_read_from_its_own_stat_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        machine(dir.path(), 28544);
        let (mut disks, mut files) = (Disks::default(), ProcFiles::default());
        let mut read = || disks.read(&root, &mut files, &DeviceFilter::WholeDevices).unwrap();

        // The find: diskstats' counters, the devices that did I/O since boot.
        assert_eq!(reads(&read()), [("vda", 28544), ("loop1", 77)]);

        write(dir.path(), "sys/class/block/vda/stat", &stat17(28600));
        machine_diskstats_only(dir.path(), 99999);
        let second = read();
        assert_eq!(reads(&second), [("vda", 28600), ("loop1", 77)]);
        let vda = &second[0];
        assert_eq!(
            (vda.wr_sectors, vda.tot_ticks, vda.dc_sectors, vda.fl_ios, vda.fl_ticks),
            (3116176, 6700, 931848, 6979, 194)
        );
        // The detached loop device's line, as diskstats gave it.
        assert_eq!(second[1].tot_ticks, 12);

        // loop2's first I/O, written as Linux 3.10 writes a stat file: no discards, no flushes.
        write(
            dir.path(),
            "sys/class/block/loop2/stat",
            "       3        0       24        1        0        0        0        0        0        1        1\n",
        );
        let third = read();
        assert_eq!(reads(&third), [("vda", 28600), ("loop1", 77), ("loop2", 3)]);
        assert_eq!((third[2].rd_sectors, third[2].dc_ios, third[2].fl_ios), (24, 0, 0));

        // A stat file that is not one: this sample comes from diskstats, whole.
        write(dir.path(), "sys/class/block/vda/stat", "28700 5109 x\n");
        assert_eq!(reads(&read()), [("vda", 99999), ("loop1", 77)]);
        write(dir.path(), "sys/class/block/vda/stat", &stat17(28700));
        assert_eq!(reads(&read()), [("vda", 28700), ("loop1", 77), ("loop2", 3)]);

        // loop0 attached: /proc/partitions lists it, and the sample is diskstats'.
        let partitions = std::fs::read_to_string(dir.path().join("proc/partitions")).unwrap();
        write(dir.path(), "proc/partitions", &format!("{partitions}   7        0       2048 loop0\n"));
        assert_eq!(reads(&read()), [("vda", 99999), ("loop1", 77)]);
        assert_eq!(reads(&read()), [("vda", 28700), ("loop1", 77), ("loop2", 3)]);

        // Found too long ago: diskstats again.
        machine_diskstats_only(dir.path(), 100000);
        disks.found_at = Some(Instant::now() - REFIND_EVERY);
        assert_eq!(
            reads(&disks.read(&root, &mut files, &DeviceFilter::WholeDevices).unwrap()),
            [("vda", 100000), ("loop1", 77)]
        );
    }

    /// Rewrites diskstats' vda line only (sysfs unchanged).
    fn machine_diskstats_only(dir: &std::path::Path, vda_reads: u64) {
        let text = std::fs::read_to_string(dir.join("proc/diskstats")).unwrap();
        let rest: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
        write(
            dir,
            "proc/diskstats",
            &format!(
                " 254       0 vda {vda_reads} 5109 1369170 3400 41678 7176 3116176 6044 0 6700 10087 8627 0 931848 447 6979 194\n{rest}"
            ),
        );
    }

    /// A find asks sysfs nothing of a device that was still at the last one, is not listed in
    /// /proc/partitions, and whose line has not changed (a machine that has run tests has a
    /// hundred); one whose line changed, or that is listed now (attached again, no I/O yet), is
    /// asked again.
    #[test]
    fn a_find_asks_sysfs_only_of_devices_that_may_have_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        machine(dir.path(), 28544);
        let (mut disks, mut files) = (Disks::default(), ProcFiles::default());
        let mut read = |disks: &mut Disks, find: bool| {
            if find {
                disks.found_at = Some(Instant::now() - REFIND_EVERY);
            }
            let sample = disks.read(&root, &mut files, &DeviceFilter::WholeDevices).unwrap();
            sample.iter().map(|d| (d.name.clone(), d.rd_ios)).collect::<Vec<_>>()
        };
        let pairs = |v: &[(&str, u64)]| v.iter().map(|(n, r)| (n.to_string(), *r)).collect::<Vec<_>>();
        read(&mut disks, true);
        for name in ["loop0", "loop1"] {
            std::fs::remove_file(dir.path().join(format!("sys/class/block/{name}/size"))).unwrap();
        }
        assert_eq!(read(&mut disks, true), pairs(&[("vda", 28544), ("loop1", 77)]));
        assert!(disks.found_at.is_some(), "found without loop0's and loop1's size");

        // loop1 attached again, before any I/O: listed, so its size is asked for.
        let partitions = std::fs::read_to_string(dir.path().join("proc/partitions")).unwrap();
        write(dir.path(), "proc/partitions", &format!("{partitions}   7        1       2048 loop1\n"));
        read(&mut disks, true);
        assert!(disks.found_at.is_none(), "loop1 is listed: its size was asked for, and is missing");
        // (A find that could not use sysfs forgets what was still: loop0's size is asked too.)
        write(dir.path(), "sys/class/block/loop1/size", "4096\n");
        write(dir.path(), "sys/class/block/loop0/size", "0\n");
        read(&mut disks, true);
        assert!(disks.found_at.is_some());
        write(
            dir.path(),
            "sys/class/block/loop1/stat",
            "      80        0      640        6        0        0        0        0        0       13        6\n",
        );
        assert_eq!(read(&mut disks, false), pairs(&[("vda", 28544), ("loop1", 80)]));

        // loop0 unlisted, its line changed: asked for.
        read(&mut disks, true);
        std::fs::remove_file(dir.path().join("sys/class/block/loop0/size")).unwrap();
        let text = std::fs::read_to_string(dir.path().join("proc/diskstats")).unwrap();
        write(dir.path(), "proc/diskstats", &text.replace("loop0 0 0 0 0", "loop0 1 0 8 0"));
        read(&mut disks, true);
        assert!(disks.found_at.is_none(), "loop0's line changed: its size was asked for, and is missing");
    }

    /// A root without /proc/partitions (a container's fake /proc, an old test recording), or
    /// whose sysfs lacks a device's files: every sample is diskstats'.
    #[test]
    fn without_partitions_or_a_devices_sysfs_files_every_sample_is_diskstats() {
        for remove in ["proc/partitions", "sys/class/block/loop1/size"] {
            let dir = tempfile::tempdir().unwrap();
            let root = Root::at(dir.path());
            machine(dir.path(), 28544);
            std::fs::remove_file(dir.path().join(remove)).unwrap();
            let (mut disks, mut files) = (Disks::default(), ProcFiles::default());
            for reads_now in [28544, 28545, 28546] {
                machine_diskstats_only(dir.path(), reads_now);
                let sample = disks.read(&root, &mut files, &DeviceFilter::WholeDevices).unwrap();
                assert_eq!(reads(&sample), [("vda", reads_now), ("loop1", 77)], "without {remove}");
            }
        }
    }

    /// A device asked for by name is read from its stat file too, a partition included, and
    /// kept however idle.
    #[test]
    fn named_devices_and_partitions_are_read_from_their_stat_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        machine(dir.path(), 28544);
        let filter = DeviceFilter::Named(vec!["vda1".into(), "loop2".into()]);
        let (mut disks, mut files) = (Disks::default(), ProcFiles::default());
        assert_eq!(reads(&disks.read(&root, &mut files, &filter).unwrap()), [("vda1", 20000), ("loop2", 0)]);
        write(dir.path(), "sys/class/block/vda1/stat", &stat17(20010));
        assert_eq!(reads(&disks.read(&root, &mut files, &filter).unwrap()), [("vda1", 20010), ("loop2", 0)]);
    }

    /// On this machine, a loop device attached and written shows within a second or two of
    /// the kernel's event, long before the next periodic find.
    #[test]
    fn on_this_machine_a_device_attached_shows_within_seconds() {
        let root = Root::system();
        let (mut disks, mut files) = (Disks::default(), ProcFiles::default());
        disks.read(&root, &mut files, &DeviceFilter::WholeDevices).unwrap();
        assert!(
            matches!(disks.events, Some(Some(_))),
            "this machine's kernel lets a root process hear device events"
        );
        let started = Instant::now();
        let device = pvfs_host::testing::LoopDevice::new(1 << 20);
        device.write_at(0, b"pvfs");
        let name = device.path.trim_start_matches("/dev/").to_owned();
        let shown = (0..40).find_map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let sample = disks.read(&root, &mut files, &DeviceFilter::WholeDevices).unwrap();
            sample.into_iter().find(|d| d.name == name && d.wr_ios > 0)
        });
        assert!(shown.is_some(), "{name} not in the samples 4 s after it was attached and written");
        assert!(started.elapsed() < REFIND_HEARING);
    }

    /// On this machine's kernel: between finds, every device's counters lie between
    /// diskstats' just before and just after (the same counters, read another way), and the
    /// devices are those diskstats gives.
    #[test]
    fn on_this_machine_the_stat_files_say_what_diskstats_says() {
        let root = Root::system();
        let diskstats = || -> BTreeMap<String, DiskCounters> {
            std::fs::read_to_string("/proc/diskstats")
                .unwrap()
                .lines()
                .map(|l| DiskCounters::from_stat(DiskStat::from_line(l).unwrap()))
                .map(|d| (d.name.clone(), d))
                .collect()
        };
        let (mut disks, mut files) = (Disks::default(), ProcFiles::default());
        disks.read(&root, &mut files, &DeviceFilter::WholeDevices).unwrap();
        assert!(
            disks.found_at.is_some(),
            "this machine's /proc/partitions and sysfs serve the reads between finds"
        );
        // Other tests attach loop devices, and a find follows; a few tries give one without.
        let (before, sample, after) = (0..50)
            .find_map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                let found_at = disks.found_at;
                let before = diskstats();
                let sample = disks.read(&root, &mut files, &DeviceFilter::WholeDevices).unwrap();
                let after = diskstats();
                (found_at.is_some() && disks.found_at == found_at).then_some((before, sample, after))
            })
            .expect("a read between finds");
        assert!(!sample.is_empty(), "a machine whose disks did no I/O since boot");
        for d in &sample {
            let (b, a) = (&before[&d.name], &after[&d.name]);
            // Every counter but ios_pgr (the 9th, in flight now: a gauge).
            let fields = |c: &DiskCounters| {
                c.fields()
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| *i != 8)
                    .map(|(_, v)| v)
                    .collect::<Vec<_>>()
            };
            for ((lo, v), hi) in fields(b).into_iter().zip(fields(d)).zip(fields(a)) {
                assert!(
                    lo <= v && v <= hi,
                    "{}: {v} not within diskstats' [{lo}, {hi}]\n{b:?}\n{d:?}\n{a:?}",
                    d.name
                );
            }
        }
        let names: BTreeSet<&str> = sample.iter().map(|d| d.name.as_str()).collect();
        let expected: BTreeSet<&str> = before
            .values()
            .filter(|d| {
                d.total_ios() > 0
                    && std::path::Path::new("/sys/block").join(d.name.replace('/', "!")).exists()
            })
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(names, expected);
    }
}
