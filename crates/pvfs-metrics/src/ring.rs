//! The agent's history: a bounded ring of samples, kept compact so an hour at 1 Hz costs well
//! under a megabyte.
//!
//! A coordinator that reconnects asks for every sample after its cursor (`epoch`, `seq`) and
//! gets exactly those it missed. The ring never grows past its capacity, whatever the
//! coordinators do: the oldest samples are dropped, and a reader that fell behind further than
//! that learns which sequence numbers are gone.
//!
//! Storage: every sample is flattened to a list of u64 values (counters, gauges, clocks) under
//! a shared *layout* (the device and interface names, which rarely change). Each entry stores
//! its values as LEB128 varints of the zigzag difference from the previous entry with the same
//! layout; most counters move by little or nothing in a second, so most values take one byte,
//! and a run of zeros (an idle device's every counter, a detached loop device's forever: a
//! machine that ran the tests keeps 111 of them) takes two, a zero byte then the run's length
//! less one (a varint's first byte is zero only for 0 itself, so nothing else starts so).
//! Every [`KEYFRAME_EVERY`]th entry stores full values, so reading any entry decodes at most
//! that many. (A general-purpose compressor would do worse on 100-byte records and cost more
//! CPU; the format is local to this process and never leaves it.)

use crate::sample::{CpuCounters, DiskCounters, Duplex, LoadCounters, MemCounters, NicCounters, Sample};
use std::collections::VecDeque;
use std::sync::Arc;

/// Full values every this many entries, bounding the work of reading one entry.
const KEYFRAME_EVERY: u64 = 64;

/// Values per disk and per interface in the flattened form.
const DISK_VALUES: usize = 17;
const NIC_VALUES: usize = 13;
const FIXED_VALUES: usize = 2 + 10 + 12 + 5;

/// A sample with its place in the agent's history.
#[derive(Debug, Clone, PartialEq)]
pub struct Stamped {
    /// Identifies the agent process whose ring numbered this sample (its start time in ns):
    /// sequence numbers restart with the process.
    pub epoch: u64,
    /// 1, 2, 3, … within the epoch, one per sample, without gaps.
    pub seq: u64,
    pub sample: Sample,
}

/// What a reader asking for "the next sample after `seq`" gets.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    Sample(Box<Stamped>),
    /// Samples `from..=to` are no longer held (the reader fell behind by more than the ring, or
    /// its cursor is from another epoch); continue after `to`.
    Gap {
        from: u64,
        to: u64,
    },
    /// Nothing newer yet.
    Pending,
}

#[derive(Debug, PartialEq, Eq)]
struct Layout {
    disks: Vec<String>,
    nics: Vec<String>,
}

impl Layout {
    /// How many values a sample of this layout flattens to.
    fn values(&self) -> usize {
        FIXED_VALUES + self.disks.len() * DISK_VALUES + self.nics.len() * NIC_VALUES
    }
}

#[derive(Debug)]
struct Entry {
    seq: u64,
    /// Kept beside the encoded values, so finding a time needs no decoding.
    time_unix_ns: u64,
    layout: Arc<Layout>,
    keyframe: bool,
    bytes: Box<[u8]>,
}

/// The bounded history.
#[derive(Debug)]
pub struct Ring {
    epoch: u64,
    capacity: usize,
    entries: VecDeque<Entry>,
    next_seq: u64,
    /// Flattened values of the newest entry, the base of the next delta.
    last: Option<(Arc<Layout>, Vec<u64>)>,
}

impl Ring {
    /// A ring holding at most `capacity` samples (at least 1).
    pub fn new(epoch: u64, capacity: usize) -> Ring {
        Ring { epoch, capacity: capacity.max(1), entries: VecDeque::new(), next_seq: 1, last: None }
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The newest sequence number, 0 before the first sample.
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// Bytes held by the entries' encoded values (for memory reports).
    pub fn encoded_bytes(&self) -> usize {
        self.entries.iter().map(|e| e.bytes.len()).sum()
    }

    /// Appends a sample, dropping the oldest if full; returns its sequence number.
    pub fn push(&mut self, sample: &Sample) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let (layout, values) = flatten(sample);
        let layout = match &self.last {
            Some((last, _)) if **last == layout => last.clone(),
            _ => Arc::new(layout),
        };
        let base = match &self.last {
            Some((last, prev)) if Arc::ptr_eq(last, &layout) && !seq.is_multiple_of(KEYFRAME_EVERY) => {
                Some(prev.as_slice())
            }
            _ => None,
        };
        let keyframe = base.is_none();
        let bytes = encode(values.iter().enumerate().map(|(i, v)| match base {
            Some(prev) => zigzag(v.wrapping_sub(prev[i]) as i64),
            None => zigzag(*v as i64),
        }));
        self.entries.push_back(Entry {
            seq,
            time_unix_ns: sample.time_unix_ns,
            layout: layout.clone(),
            keyframe,
            bytes,
        });
        self.last = Some((layout, values));
        // Evict after appending, so the new entry is rewritten in full if it was the oldest's
        // dependant (a ring of one).
        if self.entries.len() > self.capacity {
            self.evict_oldest();
        }
        seq
    }

    /// The first thing a reader whose cursor is (`epoch`, `after`) should get next.
    pub fn next_after(&self, epoch: u64, after: u64) -> Next {
        let Some(oldest) = self.entries.front().map(|e| e.seq) else { return Next::Pending };
        // A cursor from another agent process (or from none): start from the oldest held.
        let after = if epoch == self.epoch { after } else { 0 };
        let want = after + 1;
        if want < oldest {
            // Everything before `oldest` is gone. A fresh reader (cursor 0) is not told about
            // samples it never asked for; only a reader that held a real cursor hears of the gap.
            if after == 0 {
                return self.get(oldest).map_or(Next::Pending, |s| Next::Sample(Box::new(s)));
            }
            return Next::Gap { from: want, to: oldest - 1 };
        }
        self.get(want).map_or(Next::Pending, |s| Next::Sample(Box::new(s)))
    }

    /// The newest sample taken before `time_unix_ns` (0 when every sample held is that late or
    /// later, or none is held).
    pub fn seq_before(&self, time_unix_ns: u64) -> u64 {
        // Sample times only grow (one per tick); a partition point is a binary search.
        let after = self.entries.partition_point(|e| e.time_unix_ns < time_unix_ns);
        after.checked_sub(1).map_or(0, |i| self.entries[i].seq)
    }

    /// The sample numbered `seq`, if held.
    pub fn get(&self, seq: u64) -> Option<Stamped> {
        // Live readers ask for the newest sample every second: its values are kept in full
        // for the next delta anyway, so no decoding is needed.
        if seq == self.last_seq()
            && let Some((layout, values)) = &self.last
        {
            return Some(Stamped { epoch: self.epoch, seq, sample: unflatten(layout, values)? });
        }
        let oldest = self.entries.front()?.seq;
        let index = usize::try_from(seq.checked_sub(oldest)?).ok()?;
        let target = self.entries.get(index)?;
        let values = self.values_at(index)?;
        Some(Stamped { epoch: self.epoch, seq, sample: unflatten(&target.layout, &values)? })
    }

    /// The flattened values of the entry at `index`: its keyframe's, with the deltas up to it
    /// applied.
    fn values_at(&self, index: usize) -> Option<Vec<u64>> {
        // Walk back to the keyframe this entry's deltas start from (same layout, by design;
        // the front entry is always a keyframe, see `evict_oldest`).
        let mut start = index;
        while !self.entries.get(start)?.keyframe {
            start = start.checked_sub(1)?;
        }
        let mut values: Vec<u64> = Vec::new();
        for entry in self.entries.range(start..=index) {
            let count = entry.layout.values();
            if entry.keyframe {
                values.clear();
                values.resize(count, 0);
            }
            let mut i = 0usize;
            let mut pos = 0;
            while pos < entry.bytes.len() {
                let (raw, used) = get_varint(&entry.bytes[pos..])?;
                pos += used;
                if raw == 0 {
                    // A run of zeros: nothing changes (a keyframe's values start at 0).
                    let (less_one, used) = get_varint(&entry.bytes[pos..])?;
                    pos += used;
                    i = usize::try_from(less_one).ok().and_then(|n| i.checked_add(n)?.checked_add(1))?;
                    continue;
                }
                let v = values.get_mut(i)?;
                *v = v.wrapping_add(unzigzag(raw) as u64);
                i += 1;
            }
            // Every entry holds exactly its layout's number of values.
            if i != count || values.len() != count {
                return None;
            }
        }
        Some(values)
    }

    /// Drops the oldest entry. If the entry after it depends on it, that entry is rewritten
    /// with full values first, so the front of the ring can always be decoded.
    fn evict_oldest(&mut self) {
        let Some(second) = self.entries.get(1) else {
            self.entries.pop_front();
            return;
        };
        if !second.keyframe {
            // Its values straight from the encoded form: no sample is rebuilt to be flattened
            // again (this runs on every push once the ring is full).
            if let Some(values) = self.values_at(1) {
                let second = &mut self.entries[1];
                second.bytes = encode(values.into_iter().map(|v| zigzag(v as i64)));
                second.keyframe = true;
            }
        }
        self.entries.pop_front();
    }
}

fn flatten(s: &Sample) -> (Layout, Vec<u64>) {
    let mut v = Vec::with_capacity(FIXED_VALUES + s.disks.len() * DISK_VALUES + s.nics.len() * NIC_VALUES);
    v.extend([s.time_unix_ns, s.mono_ns]);
    let c = &s.cpu;
    v.extend([c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal, c.guest, c.guest_nice]);
    let m = &s.mem;
    v.extend([
        m.total_kb,
        m.free_kb,
        m.available_kb,
        m.buffers_kb,
        m.cached_kb,
        m.slab_kb,
        m.committed_as_kb,
        m.active_kb,
        m.inactive_kb,
        m.dirty_kb,
        m.swap_total_kb,
        m.swap_free_kb,
    ]);
    // Load averages have two decimals: keep them as hundredths.
    let l = &s.load;
    let hundredths = |x: f64| (x * 100.0).round() as u64;
    v.extend([
        hundredths(l.one),
        hundredths(l.five),
        hundredths(l.fifteen),
        u64::from(l.runnable),
        u64::from(l.tasks),
    ]);
    for d in &s.disks {
        v.extend(d.fields());
    }
    for n in &s.nics {
        let duplex = match n.duplex {
            Duplex::Unknown => 0,
            Duplex::Full => 1,
            Duplex::Half => 2,
        };
        v.extend([
            n.rx_bytes,
            n.rx_packets,
            n.rx_errs,
            n.rx_drop,
            n.rx_compressed,
            n.rx_multicast,
            n.tx_bytes,
            n.tx_packets,
            n.tx_errs,
            n.tx_drop,
            n.tx_compressed,
            u64::from(n.speed_mbps),
            duplex,
        ]);
    }
    let layout = Layout {
        disks: s.disks.iter().map(|d| d.name.clone()).collect(),
        nics: s.nics.iter().map(|n| n.name.clone()).collect(),
    };
    (layout, v)
}

fn unflatten(layout: &Layout, v: &[u64]) -> Option<Sample> {
    if v.len() != layout.values() {
        return None;
    }
    let cpu = CpuCounters {
        user: v[2],
        nice: v[3],
        system: v[4],
        idle: v[5],
        iowait: v[6],
        irq: v[7],
        softirq: v[8],
        steal: v[9],
        guest: v[10],
        guest_nice: v[11],
    };
    let mem = MemCounters {
        total_kb: v[12],
        free_kb: v[13],
        available_kb: v[14],
        buffers_kb: v[15],
        cached_kb: v[16],
        slab_kb: v[17],
        committed_as_kb: v[18],
        active_kb: v[19],
        inactive_kb: v[20],
        dirty_kb: v[21],
        swap_total_kb: v[22],
        swap_free_kb: v[23],
    };
    let load = LoadCounters {
        one: v[24] as f64 / 100.0,
        five: v[25] as f64 / 100.0,
        fifteen: v[26] as f64 / 100.0,
        runnable: v[27] as u32,
        tasks: v[28] as u32,
    };
    let mut at = FIXED_VALUES;
    let mut disks = Vec::with_capacity(layout.disks.len());
    for name in &layout.disks {
        let d = &v[at..at + DISK_VALUES];
        at += DISK_VALUES;
        disks.push(DiskCounters::from_fields(name.clone(), d.try_into().ok()?));
    }
    let mut nics = Vec::with_capacity(layout.nics.len());
    for name in &layout.nics {
        let n = &v[at..at + NIC_VALUES];
        at += NIC_VALUES;
        nics.push(NicCounters {
            name: name.clone(),
            rx_bytes: n[0],
            rx_packets: n[1],
            rx_errs: n[2],
            rx_drop: n[3],
            rx_compressed: n[4],
            rx_multicast: n[5],
            tx_bytes: n[6],
            tx_packets: n[7],
            tx_errs: n[8],
            tx_drop: n[9],
            tx_compressed: n[10],
            speed_mbps: n[11] as u32,
            duplex: match n[12] {
                1 => Duplex::Full,
                2 => Duplex::Half,
                _ => Duplex::Unknown,
            },
        });
    }
    Some(Sample { time_unix_ns: v[0], mono_ns: v[1], disks, nics, cpu, mem, load, fs: None })
}

/// Zigzagged values (or differences) as varints, each run of zeros as a zero byte and the
/// run's length less one.
fn encode(values: impl Iterator<Item = u64>) -> Box<[u8]> {
    let mut bytes = Vec::new();
    let mut zeros = 0u64;
    for v in values {
        if v == 0 {
            zeros += 1;
            continue;
        }
        if zeros > 0 {
            bytes.push(0);
            put_varint(&mut bytes, zeros - 1);
            zeros = 0;
        }
        put_varint(&mut bytes, v);
    }
    if zeros > 0 {
        bytes.push(0);
        put_varint(&mut bytes, zeros - 1);
    }
    bytes.into()
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The value and how many bytes it took; `None` on a truncated varint.
fn get_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests;
