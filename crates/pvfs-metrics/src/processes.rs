//! The per-process view: the node's busiest processes by CPU and by I/O bytes, with rates over
//! the last interval, read with `sysinfo` only while a reader asks for them.
//!
//! Unlike [`crate::sample`], this reads the real `/proc` (sysinfo's own readers, not a
//! [`pvfs_host::Root`]), and it ships rates, not raw counters: which processes are reported
//! changes from second to second (the top N), so a reader could not pair two reports into rates
//! the way it pairs samples. Each scan reads every process's `stat` and `io` (nothing else: no
//! command line, environment or memory), and only whole processes: threads of a process are
//! counted in it (sysinfo's tasks are not listed), while kernel threads (`ll_ost_io_00_01`,
//! `kworker/…`) are processes of their own and are listed, marked `kernel`.

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::time::Instant;
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System, ThreadKind};

/// One process over the last interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Process {
    pub pid: u32,
    /// The kernel's name for it (`comm`: at most 15 bytes, e.g. `glusterfsd`, `ll_ost_io00_001`).
    pub name: String,
    /// CPU time over the interval, % of one CPU (a process busy on two CPUs shows 200).
    pub cpu_percent: f32,
    /// Bytes it caused to be read from / written to storage (`/proc/PID/io` `read_bytes`,
    /// `write_bytes`), per second. 0 for a process first seen in this scan.
    pub read_bytes_per_s: u64,
    pub write_bytes_per_s: u64,
    /// A kernel thread (Lustre's `ll_ost_io_*`, `kworker/*`), not a user process.
    pub kernel: bool,
}

impl Process {
    /// Bytes per second read and written.
    pub fn io_bytes_per_s(&self) -> u64 {
        self.read_bytes_per_s.saturating_add(self.write_bytes_per_s)
    }
}

/// What a process reader could not do.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the node's processes: {0}")]
pub struct ProcessError(String);

/// Scans the node's processes, keeping the previous scan's counters to compute the next rates.
/// Dropped when nobody asks for processes, so an idle agent holds no process table.
pub struct ProcessScanner {
    system: System,
    /// Processes seen by the previous scan: only they have a baseline for I/O rates (sysinfo
    /// reports a new process's whole history as its first "delta").
    seen: HashSet<Pid>,
    last: Option<Instant>,
}

impl std::fmt::Debug for ProcessScanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessScanner").field("processes", &self.seen.len()).finish_non_exhaustive()
    }
}

impl ProcessScanner {
    pub fn new() -> Result<ProcessScanner, ProcessError> {
        let system = System::new().map_err(|e| ProcessError(e.to_string()))?;
        Ok(ProcessScanner { system, seen: HashSet::new(), last: None })
    }

    /// Every process with its rates since the previous scan (all zero on the first scan: it is
    /// the baseline).
    pub fn scan(&mut self) -> Vec<Process> {
        // CPU (`stat`) and I/O (`io`) only; no tasks: a process's threads are summed in its
        // own `stat` and `io`, and listing them would read every thread's files as well.
        let kind = ProcessRefreshKind::nothing().with_cpu().with_disk_usage().without_tasks();
        self.system.refresh_processes_specifics(ProcessesToUpdate::All, true, kind);
        let now = Instant::now();
        let elapsed = self.last.map(|l| now.duration_since(l).as_secs_f64());
        self.last = Some(now);
        let per_second = |bytes: u64| match elapsed {
            Some(s) if s > 0.0 => (bytes as f64 / s).round() as u64,
            _ => 0,
        };
        let mut seen = HashSet::with_capacity(self.system.processes().len());
        let processes = self
            .system
            .processes()
            .iter()
            .filter(|(_, p)| p.thread_kind() != Some(ThreadKind::Userland))
            .map(|(pid, p)| {
                seen.insert(*pid);
                let known = self.seen.contains(pid);
                let io = p.disk_usage();
                Process {
                    pid: pid.as_u32(),
                    name: p.name().to_string_lossy().into_owned(),
                    cpu_percent: if known { p.cpu_usage() } else { 0.0 },
                    read_bytes_per_s: if known { per_second(io.read_bytes) } else { 0 },
                    write_bytes_per_s: if known { per_second(io.written_bytes) } else { 0 },
                    kernel: p.thread_kind() == Some(ThreadKind::Kernel),
                }
            })
            .collect();
        self.seen = seen;
        processes
    }
}

/// The top `n` of `processes` by CPU and the top `n` by I/O bytes, each process once, busiest
/// CPU first; processes doing nothing are left out.
pub fn top(processes: &[Process], n: usize) -> Vec<Process> {
    let mut by_cpu: Vec<&Process> = processes.iter().filter(|p| p.cpu_percent > 0.0).collect();
    by_cpu.sort_by(|a, b| b.cpu_percent.total_cmp(&a.cpu_percent).then(a.pid.cmp(&b.pid)));
    by_cpu.truncate(n);
    let mut by_io: Vec<&Process> = processes.iter().filter(|p| p.io_bytes_per_s() > 0).collect();
    by_io.sort_by(|a, b| b.io_bytes_per_s().cmp(&a.io_bytes_per_s()).then(a.pid.cmp(&b.pid)));
    by_io.truncate(n);
    let mut chosen: Vec<Process> = by_cpu.into_iter().cloned().collect();
    for p in by_io {
        if !chosen.iter().any(|c| c.pid == p.pid) {
            chosen.push(p.clone());
        }
    }
    chosen.sort_by(|a, b| {
        b.cpu_percent
            .total_cmp(&a.cpu_percent)
            .then(b.io_bytes_per_s().cmp(&a.io_bytes_per_s()))
            .then(a.pid.cmp(&b.pid))
    });
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, cpu: f32, read: u64, write: u64) -> Process {
        Process {
            pid,
            name: format!("p{pid}"),
            cpu_percent: cpu,
            read_bytes_per_s: read,
            write_bytes_per_s: write,
            kernel: false,
        }
    }

    #[test]
    fn the_top_is_the_union_of_the_busiest_by_cpu_and_by_io() {
        let all =
            [p(1, 90.0, 0, 0), p(2, 50.0, 0, 10), p(3, 0.0, 0, 0), p(4, 1.0, 500, 0), p(5, 0.5, 0, 900)];
        let pids = |v: Vec<Process>| v.iter().map(|p| p.pid).collect::<Vec<_>>();
        // By CPU: 1, 2; by I/O: 5, 4. Ordered by CPU.
        assert_eq!(pids(top(&all, 2)), [1, 2, 4, 5]);
        // 2 and 4 are in both tops: listed once.
        assert_eq!(pids(top(&all, 3)), [1, 2, 4, 5]);
        assert_eq!(pids(top(&all, 1)), [1, 5]);
        assert!(top(&all, 0).is_empty());
        // A process doing nothing is never listed.
        assert!(!pids(top(&all, 10)).contains(&3));
    }

    /// The real /proc: this test process is listed, and so are kernel threads, marked as such.
    #[test]
    fn a_scan_lists_this_process_and_kernel_threads() {
        // Busy for `ms` of this thread's own CPU time (the kernel's count in schedstat, ns),
        // not of the wall clock: on a machine running other tests beside this one a wall-clock
        // spin may get a small share of a core, and the process's CPU % with it.
        let cpu_ns = || -> u64 {
            let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
            stat.split_whitespace().next().unwrap().parse().unwrap()
        };
        let spin = |ms: u64| {
            let until = cpu_ns() + ms * 1_000_000;
            let mut spins = 0u64;
            while cpu_ns() < until {
                for _ in 0..10_000 {
                    spins = std::hint::black_box(spins.wrapping_add(1));
                }
            }
        };
        // sysinfo computes no CPU % for a process whose baseline shows no CPU time at all, so
        // this one has used some before the first scan.
        spin(50);
        let mut scanner = ProcessScanner::new().unwrap();
        let started = Instant::now();
        let first = scanner.scan();
        assert!(first.iter().all(|p| p.cpu_percent == 0.0 && p.io_bytes_per_s() == 0), "a baseline");
        // Busy for a while so that the second scan sees CPU time.
        spin(300);
        let second = scanner.scan();
        let window = started.elapsed();
        let me = second.iter().find(|p| p.pid == std::process::id()).expect("this process is listed");
        // At least the 300 ms spun over the time between the scans (which is within `window`),
        // less a tick of /proc/PID/stat's 10 ms resolution at each end.
        let least = 280.0 / window.as_secs_f32() / 10.0;
        assert!(
            me.cpu_percent >= least && me.cpu_percent > 0.0,
            "{me:?}, at least {least} % over {window:?}"
        );
        assert!(!me.kernel);
        // Outside a PID namespace, pid 2 is kthreadd, the parent of every kernel thread.
        if std::fs::read_to_string("/proc/2/comm").is_ok_and(|c| c.trim() == "kthreadd") {
            let kthreadd = second.iter().find(|p| p.pid == 2).expect("kthreadd is listed");
            assert!(kthreadd.kernel, "{kthreadd:?}");
        }
    }
}
