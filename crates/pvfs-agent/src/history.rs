//! The agent's sample history: the sampler task writes it once a second; every `Metrics`
//! stream reads it by cursor. Beside it, the per-process view: scanned with each sample only
//! while some stream asks for it ([`ProcessDemand`]), the last few seconds' held by sequence
//! number for the streams that asked; and, on a node with Lustre targets or GlusterFS bricks,
//! each second's view of them, held the same way.

use pvfs_host::Root;
use pvfs_metrics::processes::{self, Process, ProcessScanner};
use pvfs_metrics::rates::Rates;
use pvfs_metrics::ring::{Next, Ring, Stamped};
use pvfs_metrics::sample::{DeviceFilter, FsSecond, Sample, Sampler, until_tick};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The ring plus a signal that a new sample is in.
#[derive(Debug)]
pub struct History {
    // A std Mutex, not tokio's: it is held only to push or decode one entry, never across an
    // await, so an async lock would only add cost.
    ring: Mutex<Ring>,
    // Carries the newest sequence number. A watch (not a broadcast) because readers only need
    // to know "something new", and a slow reader must not make the channel hold samples: the
    // ring is the only buffer.
    newest: watch::Sender<u64>,
    /// The processes of the newest samples that had them, by sequence number; at most
    /// [`PROCESS_SECONDS`]. A stream queues at most a few samples, so a reader that keeps up
    /// finds its second here; one catching up on older seconds gets them without processes.
    processes: Mutex<VecDeque<(u64, Arc<[Process]>)>>,
    /// What the streams ask for: how many processes, by how many streams.
    demand: ProcessDemand,
    /// Process scans made (for tests and logs: none while nobody asks).
    scans: AtomicU64,
    /// The file system's own seconds (Lustre targets, GlusterFS bricks), by sequence number, on
    /// a node with them; at most [`FS_SECONDS`]. The ring's compact encoding has no place for
    /// them (their shape is the node's targets), so they are held beside it as processes are.
    fs: Mutex<VecDeque<(u64, Arc<FsSecond>)>>,
}

/// Seconds of the file system's view held: a stream that falls a minute behind gets the older
/// seconds without it (a gap in the per-target view, not in the node's).
const FS_SECONDS: usize = 60;

/// Seconds of processes held.
const PROCESS_SECONDS: usize = 16;

/// The most processes (by CPU, and again by I/O) a stream may ask for: what a client can make
/// the agent scan, hold and send is bounded.
pub const MAX_PROCESSES: u32 = 64;

/// The streams asking for processes: each holds a [`ProcessTicket`] for its N, and the sampler
/// scans for the largest N asked (each stream takes its own top N of that).
#[derive(Debug, Default, Clone)]
pub struct ProcessDemand {
    // N → how many streams ask for it. A std Mutex: held for a map update, never across an
    // await.
    asked: Arc<Mutex<BTreeMap<u32, usize>>>,
}

impl ProcessDemand {
    fn asked(&self) -> MutexGuard<'_, BTreeMap<u32, usize>> {
        self.asked.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Asks for the top `n` processes (clamped to [`MAX_PROCESSES`]) until the ticket drops;
    /// `None` for 0, which asks for nothing.
    pub fn ask(&self, n: u32) -> Option<ProcessTicket> {
        let n = n.min(MAX_PROCESSES);
        if n == 0 {
            return None;
        }
        *self.asked().entry(n).or_default() += 1;
        Some(ProcessTicket { demand: self.clone(), n })
    }

    /// The largest N any stream asks for; 0 when none does.
    pub fn top(&self) -> u32 {
        self.asked().last_key_value().map_or(0, |(n, _)| *n)
    }
}

/// A stream's request for processes, withdrawn when dropped (the stream ended).
#[derive(Debug)]
pub struct ProcessTicket {
    demand: ProcessDemand,
    n: u32,
}

impl ProcessTicket {
    pub fn n(&self) -> usize {
        self.n as usize
    }
}

impl Drop for ProcessTicket {
    fn drop(&mut self) {
        let mut asked = self.demand.asked();
        if let Some(count) = asked.get_mut(&self.n) {
            *count -= 1;
            if *count == 0 {
                asked.remove(&self.n);
            }
        }
    }
}

impl History {
    pub fn new(epoch: u64, capacity: usize) -> Arc<History> {
        Arc::new(History {
            ring: Mutex::new(Ring::new(epoch, capacity)),
            newest: watch::Sender::new(0),
            processes: Mutex::new(VecDeque::new()),
            demand: ProcessDemand::default(),
            scans: AtomicU64::new(0),
            fs: Mutex::new(VecDeque::new()),
        })
    }

    /// Who asks for processes.
    pub fn demand(&self) -> &ProcessDemand {
        &self.demand
    }

    /// How many process scans the sampler has made.
    pub fn process_scans(&self) -> u64 {
        self.scans.load(Ordering::Relaxed)
    }

    /// The processes scanned with sample `seq` of the current epoch, if they are held.
    pub fn processes(&self, seq: u64) -> Option<Arc<[Process]>> {
        let held = self.processes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        held.iter().rev().find(|(s, _)| *s == seq).map(|(_, p)| p.clone())
    }

    /// The file system's second with sample `seq` of the current epoch, if it is held.
    pub fn fs(&self, seq: u64) -> Option<Arc<FsSecond>> {
        let held = self.fs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        held.iter().rev().find(|(s, _)| *s == seq).map(|(_, l)| l.clone())
    }

    fn ring(&self) -> MutexGuard<'_, Ring> {
        // A panic while holding the lock leaves the ring consistent (every method finishes its
        // one change before it can fail), so a poisoned lock is still usable.
        self.ring.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn push(&self, sample: &Sample) -> u64 {
        self.push_with(sample, None)
    }

    /// Pushes `sample` with the processes scanned with it: both are in before any stream can
    /// see the sample, so a stream that asked for processes always finds this second's, and
    /// every stream its file system's second. The ring stays locked until they are: a stream
    /// reading a backlog (or just opened) finds new samples through the ring without waiting
    /// for the "new sample" signal, and once found a sample's file system second that was not
    /// yet held would be sent without it — a second without its bricks in the record (CI saw
    /// it). Lock order: ring, then the others; nothing takes them the other way round.
    pub fn push_with(&self, sample: &Sample, processes: Option<Vec<Process>>) -> u64 {
        let mut ring = self.ring();
        let seq = ring.push(sample);
        if let Some(fs) = &sample.fs {
            let mut held = self.fs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if held.len() == FS_SECONDS {
                held.pop_front();
            }
            held.push_back((seq, fs.clone()));
        }
        if let Some(processes) = processes {
            let mut held = self.processes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if held.len() == PROCESS_SECONDS {
                held.pop_front();
            }
            held.push_back((seq, processes.into()));
        }
        drop(ring);
        self.newest.send_replace(seq);
        seq
    }

    pub fn next_after(&self, epoch: u64, after: u64) -> Next {
        self.ring().next_after(epoch, after)
    }

    pub fn epoch(&self) -> u64 {
        self.ring().epoch()
    }

    /// The newest sample taken before `time_unix_ns` (0 if none is held).
    pub fn seq_before(&self, time_unix_ns: u64) -> u64 {
        self.ring().seq_before(time_unix_ns)
    }

    /// The epoch and the newest sequence number (0 before the first sample).
    pub fn newest(&self) -> (u64, u64) {
        let ring = self.ring();
        (ring.epoch(), ring.last_seq())
    }

    /// The newest sample and the rates since the one before it (when both are held).
    pub fn latest_with_rates(&self) -> (Option<Stamped>, Option<Rates>) {
        let ring = self.ring();
        let last = ring.last_seq();
        let latest = ring.get(last);
        let rates = match (&latest, last.checked_sub(1).and_then(|p| ring.get(p))) {
            (Some(curr), Some(prev)) => Some(Rates::between(&prev.sample, &curr.sample)),
            _ => None,
        };
        (latest, rates)
    }

    /// Notified on every new sample.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.newest.subscribe()
    }
}

/// Samples the node on every `interval` boundary into `history` until `shutdown`.
pub async fn run_sampler(history: Arc<History>, root: Root, interval: Duration, shutdown: CancellationToken) {
    // BeeGFS's servers' own seconds, read from their tools as they print (none elsewhere).
    let mut beegfs = crate::beegfs::Watch::new(root.clone());
    let mut sampler = Sampler::new(root, DeviceFilter::WholeDevices);
    // Exists only while some stream asks for processes: when the last one goes it is dropped
    // with its process table, so an agent nobody asks keeps no table and makes no scan. A new
    // asker costs a baseline second (its first scan has no rates yet).
    let mut scanner: Option<ProcessScanner> = None;
    loop {
        let wait = until_tick(SystemTime::now(), interval);
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
        let started = Instant::now();
        // /proc and /sys reads are served from kernel memory and take microseconds, so they
        // run on the async thread rather than paying for a blocking-pool hand-off each second.
        let sample = sampler.sample();
        let asked = history.demand().top() as usize;
        let processes = if asked == 0 {
            if scanner.take().is_some() {
                // The last asker has gone: nothing of the view stays behind.
                history.processes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clear();
            }
            None
        } else {
            scan_processes(&mut scanner, asked).await
        };
        if processes.is_some() {
            history.scans.fetch_add(1, Ordering::Relaxed);
        }
        match sample {
            Ok(sample) => {
                let targets = beegfs.targets();
                history.push_with(&with_beegfs(sample, beegfs.seconds(), targets), processes);
            }
            Err(err) => tracing::warn!(error = %err, "sample skipped"),
        }
        let took = started.elapsed();
        if took > interval / 5 {
            tracing::warn!(took_ms = took.as_millis() as u64, "sampling took long; samples may be late");
        }
    }
}

/// `sample` with this node's BeeGFS servers' and targets' second in its file-system second.
fn with_beegfs(
    mut sample: Sample,
    servers: Vec<pvfs_metrics::beegfs::ServerSecond>,
    targets: Vec<pvfs_metrics::beegfs::TargetSecond>,
) -> Sample {
    if !servers.is_empty() || !targets.is_empty() {
        let mut fs = sample.fs.as_deref().cloned().unwrap_or_default();
        fs.beegfs = servers;
        fs.beegfs_targets = targets;
        sample.fs = Some(Arc::new(fs));
    }
    sample
}

/// One scan of the node's processes, the top `n` by CPU and by I/O kept. On the blocking pool:
/// unlike a sample's few files, a scan reads two files per process (thousands on a busy
/// server), which must not hold up the streams on the async threads. `None` when the scanner
/// cannot be made (logged) or the scan panicked.
async fn scan_processes(scanner: &mut Option<ProcessScanner>, n: usize) -> Option<Vec<Process>> {
    let mut current = match scanner.take() {
        Some(s) => s,
        None => match ProcessScanner::new() {
            Ok(s) => s,
            Err(err) => {
                tracing::warn!(error = %err, "no per-process view");
                return None;
            }
        },
    };
    let (current, top) = tokio::task::spawn_blocking(move || {
        let all = current.scan();
        let top = processes::top(&all, n);
        (current, top)
    })
    .await
    .ok()?;
    *scanner = Some(current);
    Some(top)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits (bounded) until the history holds sample `seq`.
    async fn until_seq(history: &History, seq: u64) {
        let mut newest = history.subscribe();
        tokio::time::timeout(Duration::from_secs(10), newest.wait_for(|s| *s >= seq))
            .await
            .expect("samples keep coming")
            .unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn processes_are_scanned_only_while_a_stream_asks() {
        let history = History::new(1, 100);
        let shutdown = CancellationToken::new();
        let sampler = tokio::spawn(run_sampler(
            history.clone(),
            Root::system(),
            Duration::from_millis(50),
            shutdown.clone(),
        ));
        // Nobody asks: samples, no scans, no processes held.
        until_seq(&history, 3).await;
        assert_eq!(history.process_scans(), 0);
        assert!((1..=3).all(|seq| history.processes(seq).is_none()));
        assert!(history.demand().ask(0).is_none(), "0 asks for nothing");

        // Two streams ask; the sampler scans for the larger N, clamped.
        let small = history.demand().ask(2).unwrap();
        let large = history.demand().ask(1_000).unwrap();
        assert_eq!(history.demand().top(), MAX_PROCESSES);
        let (_, asked_at) = history.newest();
        until_seq(&history, asked_at + 3).await;
        assert!(history.process_scans() >= 2);
        let (_, newest) = history.newest();
        assert!(history.processes(newest).is_some(), "the newest sample's processes are held");
        drop(small);
        assert_eq!(history.demand().top(), MAX_PROCESSES);

        // The last one goes: scanning stops (at most the second under way finishes), and the
        // processes held go too.
        drop(large);
        assert_eq!(history.demand().top(), 0);
        let (_, left_at) = history.newest();
        until_seq(&history, left_at + 2).await;
        let scans = history.process_scans();
        until_seq(&history, left_at + 5).await;
        assert_eq!(history.process_scans(), scans);
        assert!(history.processes(newest).is_none());
        shutdown.cancel();
        sampler.await.unwrap();
    }

    /// A reader that finds a sample in the ring finds its file system second too: CI once
    /// recorded a brick server's second without its bricks, because the ring was unlocked
    /// before the second was held, and a stream reading a backlog (or just opened) took the
    /// sample in between. A reader here spins on the ring (as such a stream does) while samples
    /// are pushed as fast as it takes them; before the fix it found a few samples without it.
    #[test]
    fn a_sample_is_never_seen_without_its_file_system_second() {
        use pvfs_metrics::sample::{CpuCounters, LoadCounters, MemCounters};
        const SAMPLES: u64 = 5_000;
        let history = History::new(1, 4096);
        let fs = Arc::new(FsSecond { bricks: vec![Default::default()], ..FsSecond::default() });
        let missing = AtomicU64::new(0);
        // What the reader has seen: the next sample is pushed once it is waiting for it,
        // spinning on the ring, so each push lands while they look (and none falls out of the
        // 60 s the history holds file system seconds for).
        let seen = [AtomicU64::new(0)];
        std::thread::scope(|scope| {
            for seen in &seen {
                let (history, missing) = (&history, &missing);
                scope.spawn(move || {
                    let mut after = 0;
                    while after < SAMPLES {
                        match history.next_after(1, after) {
                            Next::Sample(stamped) => {
                                after = stamped.seq;
                                if history.fs(stamped.seq).is_none() {
                                    missing.fetch_add(1, Ordering::Relaxed);
                                }
                                seen.store(after, Ordering::Release);
                            }
                            Next::Gap { to, .. } => {
                                after = to;
                                seen.store(after, Ordering::Release);
                            }
                            Next::Pending => std::hint::spin_loop(),
                        }
                    }
                });
            }
            for seq in 1..=SAMPLES {
                while seen.iter().any(|s| s.load(Ordering::Acquire) + 1 < seq) {
                    std::thread::yield_now();
                }
                let sample = Sample {
                    time_unix_ns: seq * 1_000_000_000,
                    mono_ns: seq * 1_000_000_000,
                    disks: Vec::new(),
                    nics: Vec::new(),
                    cpu: CpuCounters::default(),
                    mem: MemCounters::default(),
                    load: LoadCounters::default(),
                    fs: Some(fs.clone()),
                };
                history.push(&sample);
            }
        });
        assert_eq!(missing.load(Ordering::Relaxed), 0, "samples seen without their file system second");
    }
}
