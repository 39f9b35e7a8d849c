//! From phase totals to IOR's and mdtest's summary rows, computed as the tools compute them
//! (max, min, mean, and the standard deviation each tool uses: IOR's over n, mdtest 4's over
//! n − 1), so the built-in engine's results read like IOR's and mdtest's.

use crate::model::{IorIteration, IorSummary, MdtestSummary};
use crate::params::IorParams;
use std::time::SystemTime;

/// What one task did in one phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskResult {
    /// Global task number (0 .. tasks across all clients).
    pub task: u32,
    pub start: SystemTime,
    pub end: SystemTime,
    /// Bytes moved (IOR) or 0 (mdtest).
    pub bytes: u64,
    /// Transfers (IOR) or items (mdtest) done.
    pub ops: u64,
    /// The first error, naming the file and the operation; the task stopped there.
    pub error: Option<String>,
    /// When its reads or writes began and ended (fsync included), between its file's open
    /// and close: IOR's read/write timers. `None` where there are none (mdtest, fio, a task
    /// that failed first).
    pub rdwr: Option<(SystemTime, SystemTime)>,
}

/// Aggregate of a phase over every task of every client: IOR's "bw" and "IOPS" with barriers.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PhaseTotals {
    pub bytes: u64,
    pub ops: u64,
    /// Last end − first start, seconds.
    pub seconds: f64,
    pub bw_mib: f64,
    /// Ops over `seconds`: what IOR's summary averages.
    pub ops_per_sec: f64,
    /// IOR's open, wr/rd and close columns: each from the first task's start of it to the
    /// last task's end of it (IOR reduces its timers so), when the tasks' timers are known.
    pub open_s: Option<f64>,
    pub wrrd_s: Option<f64>,
    pub close_s: Option<f64>,
    /// IOR's per-iteration latency: the first task's read/write time over its transfers (IOR
    /// prints rank 0's, though it also reduces a minimum).
    pub latency_s: Option<f64>,
}

/// How a tool divides the squared deviations.
#[derive(Clone, Copy)]
enum Deviation {
    /// IOR's `std_dev`: by n.
    Population,
    /// mdtest 4's summary: by n − 1, and 0 for a single iteration.
    Sample,
}

/// max, min, mean, standard deviation.
fn stats(values: &[f64], deviation: Deviation) -> Option<(f64, f64, f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    let mean = values.iter().sum::<f64>() / n;
    let squares = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>();
    let std = match deviation {
        Deviation::Population => (squares / n).sqrt(),
        Deviation::Sample if values.len() == 1 => 0.0,
        Deviation::Sample => (squares / (n - 1.0)).sqrt(),
    };
    Some((max, min, mean, std))
}

/// A row of IOR's Results table for one iteration's phase.
pub fn ior_iteration(operation: &str, iteration: u64, t: &PhaseTotals, p: &IorParams) -> IorIteration {
    // IOR divides this iteration's transfers by the read/write time alone (first start to
    // last end), not by the total that bandwidth uses.
    let access = t.wrrd_s.filter(|s| *s > 0.0).unwrap_or(t.seconds);
    IorIteration {
        operation: operation.to_owned(),
        iteration,
        bw_mib: Some(t.bw_mib),
        iops: Some(t.ops as f64 / access),
        latency_s: t.latency_s.or_else(|| (t.ops > 0).then(|| t.seconds / t.ops as f64)),
        block_kib: Some(p.block as f64 / 1024.0),
        xfer_kib: Some(p.transfer as f64 / 1024.0),
        open_s: t.open_s,
        wrrd_s: t.wrrd_s,
        close_s: t.close_s,
        total_s: Some(t.seconds),
    }
}

/// IOR's "Summary of all tests" row for `operation` over its iterations.
pub fn ior_summary(
    operation: &str,
    iterations: &[PhaseTotals],
    p: &IorParams,
    tasks: u32,
) -> Option<IorSummary> {
    let bw: Vec<f64> = iterations.iter().map(|t| t.bw_mib).collect();
    let ops: Vec<f64> = iterations.iter().map(|t| t.ops_per_sec).collect();
    let (bw_max, bw_min, bw_mean, bw_std) = stats(&bw, Deviation::Population)?;
    let (ops_max, ops_min, ops_mean, ops_std) = stats(&ops, Deviation::Population)?;
    Some(IorSummary {
        operation: operation.to_owned(),
        bw_max_mib: Some(bw_max),
        bw_min_mib: Some(bw_min),
        bw_mean_mib: Some(bw_mean),
        bw_std_mib: Some(bw_std),
        ops_max: Some(ops_max),
        ops_min: Some(ops_min),
        ops_mean: Some(ops_mean),
        ops_std: Some(ops_std),
        mean_time_s: Some(iterations.iter().map(|t| t.seconds).sum::<f64>() / iterations.len() as f64),
        tasks: Some(u64::from(tasks)),
        iterations: Some(iterations.len() as u64),
        block_bytes: Some(p.block),
        transfer_bytes: Some(p.transfer),
        file_per_proc: Some(p.file_per_proc),
    })
}

/// mdtest's SUMMARY row (ops/sec) for `operation` over its iterations, with mdtest 4's
/// standard deviation (n − 1; 0 for one iteration).
pub fn mdtest_summary(operation: &str, iterations: &[PhaseTotals]) -> Option<MdtestSummary> {
    let rates: Vec<f64> = iterations.iter().map(|t| t.ops_per_sec).collect();
    let (max, min, mean, std) = stats(&rates, Deviation::Sample)?;
    Some(MdtestSummary {
        operation: operation.to_owned(),
        max: Some(max),
        min: Some(min),
        mean: Some(mean),
        std: Some(std),
        unit: "ops/sec".to_owned(),
    })
}

/// IOR's "Summary of all tests" table (the columns the runs fill) and mdtest's SUMMARY table,
/// as text: what `pvfs-agent engine` and `pvfsctl bench` print at the end.
pub fn tables(ior: &[IorSummary], mdtest: &[MdtestSummary]) -> String {
    let f = |v: Option<f64>| v.map_or("NA".to_owned(), |v| format!("{v:.2}"));
    let mut text = String::new();
    if !ior.is_empty() {
        text += "Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    Mean(s) #Tasks reps\n";
        for r in ior {
            text += &format!(
                "{:<9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10.5} {:>6} {:>4}\n",
                r.operation,
                f(r.bw_max_mib),
                f(r.bw_min_mib),
                f(r.bw_mean_mib),
                f(r.bw_std_mib),
                f(r.ops_max),
                f(r.ops_min),
                f(r.ops_mean),
                f(r.ops_std),
                r.mean_time_s.unwrap_or_default(),
                r.tasks.unwrap_or_default(),
                r.iterations.unwrap_or_default()
            );
        }
    }
    if !mdtest.is_empty() {
        text += "SUMMARY rate (in ops/sec):\n   Operation                     Max            Min           Mean        Std Dev\n";
        for r in mdtest {
            let g = |v: Option<f64>| v.map_or("NA".to_owned(), |v| format!("{v:.3}"));
            text += &format!(
                "   {:<22} {:>14} {:>14} {:>14} {:>14}\n",
                r.operation,
                g(r.max),
                g(r.min),
                g(r.mean),
                g(r.std)
            );
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(bw: f64, seconds: f64) -> PhaseTotals {
        PhaseTotals { bytes: 0, ops: 10, seconds, bw_mib: bw, ops_per_sec: bw * 2.0, ..Default::default() }
    }

    #[test]
    fn the_summary_is_iors_arithmetic() {
        // IOR's StdDev is the population one: 10 and 20 give 5 (the sample std would be 7.07).
        let p = match crate::params::Preset::Throughput.workload() {
            crate::params::Workload::Ior(p) => p,
            _ => unreachable!(),
        };
        let s = ior_summary("write", &[t(10.0, 0.168237), t(20.0, 0.168315)], &p, 2).unwrap();
        assert_eq!(
            (s.bw_max_mib, s.bw_min_mib, s.bw_mean_mib, s.bw_std_mib),
            (Some(20.0), Some(10.0), Some(15.0), Some(5.0))
        );
        // ior_tput.txt: total(s) 0.168237 and 0.168315 give Mean(s) 0.16828.
        assert_eq!(format!("{:.5}", s.mean_time_s.unwrap()), "0.16828");
        assert_eq!((s.tasks, s.iterations, s.block_bytes), (Some(2), Some(2), Some(4 << 30)));
        assert!(ior_summary("read", &[], &p, 2).is_none());

        // A row divides its transfers by the read/write time, as IOR does; the summary's OPs
        // by the total time.
        let timed = PhaseTotals {
            ops: 100,
            seconds: 2.0,
            open_s: Some(0.25),
            wrrd_s: Some(1.25),
            close_s: Some(0.5),
            latency_s: Some(0.02),
            ..t(10.0, 2.0)
        };
        let row = ior_iteration("write", 0, &timed, &p);
        assert_eq!((row.iops, row.latency_s), (Some(80.0), Some(0.02)));
        assert_eq!(
            (row.open_s, row.wrrd_s, row.close_s, row.total_s),
            (Some(0.25), Some(1.25), Some(0.5), Some(2.0))
        );
        let untimed = ior_iteration("write", 0, &PhaseTotals { ops: 100, ..t(10.0, 2.0) }, &p);
        assert_eq!((untimed.iops, untimed.latency_s, untimed.open_s), (Some(50.0), Some(0.02), None));
        // mdtest 4 divides by n − 1: 200 and 100 give 70.71 (the population std would be 50).
        let m = mdtest_summary("File creation", &[t(100.0, 1.0), t(50.0, 1.0)]).unwrap();
        assert_eq!((m.max, m.min, m.mean), (Some(200.0), Some(100.0), Some(150.0)));
        assert_eq!(format!("{:.3}", m.std.unwrap()), "70.711");
        assert_eq!(mdtest_summary("File creation", &[t(100.0, 1.0)]).unwrap().std, Some(0.0));
    }
}
