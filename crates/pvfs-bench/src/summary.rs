//! From phase totals to IOR's and mdtest's summary rows, computed as the tools compute them
//! (max, min, mean, and the standard deviation each tool uses: IOR's over n, mdtest 4's over
//! n − 1), so the built-in engine's results read like IOR's and mdtest's.

use crate::model::{IorIteration, IorSummary, MdtestSummary};
use crate::params::{IorParams, MdtestParams, Workload};
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
    /// Each transfer's or operation's time, as its histogram's buckets (`latency`); empty
    /// where not measured (fio, which reports its own).
    pub latency: Vec<(u64, u64)>,
    /// Files found (a find, whose `ops` are the files it scanned); 0 otherwise.
    pub found: u64,
}

impl TaskResult {
    /// A task that began at `start` and has done nothing yet.
    pub fn begun(task: u32, start: SystemTime) -> TaskResult {
        TaskResult {
            task,
            start,
            end: start,
            bytes: 0,
            ops: 0,
            error: None,
            rdwr: None,
            latency: Vec::new(),
            found: 0,
        }
    }
}

/// Aggregate of a phase over every task of every client: IOR's "bw" and "IOPS" with barriers.
/// As the record and the events keep it, every field may be missing (read as zero or none);
/// the timers are written only where they are known (IOR's phases of the built-in engine).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrrd_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub close_s: Option<f64>,
    /// IOR's per-iteration latency: the first task's read/write time over its transfers (IOR
    /// prints rank 0's, though it also reduces a minimum).
    #[serde(skip_serializing_if = "Option::is_none")]
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

/// IOR's `PPDouble`: ten wide, left-justified, 6 decimals below 1, 2 below 3600, else none;
/// what IOR has no value for (a negative number to it) as `   -      `.
fn pp_double(out: &mut String, value: Option<f64>) {
    use std::fmt::Write;
    let _ = match value.filter(|v| *v >= 0.0) {
        None => write!(out, "   -       "),
        Some(v) if v < 1.0 => write!(out, "{v:<10.6} "),
        Some(v) if v < 3600.0 => write!(out, "{v:<10.2} "),
        Some(v) => write!(out, "{v:<10.0} "),
    };
}

/// What the printed IOR summary says about the run besides its rows.
#[derive(Debug, Clone, Copy)]
pub struct IorRun<'a> {
    pub params: &'a IorParams,
    /// Tasks across all clients.
    pub tasks: u32,
    /// Tasks per client (IOR's tPN, tasks per node).
    pub tasks_per_client: u32,
}

/// IOR's "Results:" table and "Summary of all tests:", laid out as IOR 4 prints them
/// (`PrintReducedResult`, `PrintLongSummaryOneOperation`), so that whatever reads IOR's
/// output reads the engine's.
pub fn ior_text(run: IorRun<'_>, iterations: &[IorIteration], summaries: &[IorSummary]) -> String {
    use std::fmt::Write;
    let p = run.params;
    let mut out = String::from("Results: \n\n");
    out += "access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter\n";
    out += "------    ---------  ----       ----------  ---------- ---------  --------   --------   --------   --------   ----\n";
    for i in iterations {
        let _ = write!(out, "{:<10}", i.operation);
        let columns = [
            i.bw_mib,
            i.iops,
            i.latency_s,
            i.block_kib,
            i.xfer_kib,
            i.open_s,
            i.wrrd_s,
            i.close_s,
            i.total_s,
        ];
        for (n, v) in columns.into_iter().enumerate() {
            pp_double(&mut out, v);
            // IOR follows the latency with two spaces, every other column with one.
            if n == 2 {
                out.push(' ');
            }
        }
        let _ = writeln!(out, "{:<4}", i.iteration);
    }
    out += "\nSummary of all tests:\n";
    out += "Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    Mean(s) Stonewall(s) Stonewall(MiB) Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt   blksiz    xsize aggs(MiB)   API RefNum\n";
    let aggregate_mib = (p.block as f64) * f64::from(p.segments) * f64::from(run.tasks) / (1u64 << 20) as f64;
    for r in summaries {
        let n = |v: Option<f64>| v.unwrap_or(0.0);
        let _ = writeln!(
            out,
            "{:<9} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.5} {:>10} {:>13} {:>5} {:>6} {:>3} {:>4} {:>3} {:>5} {:>8} {:>9} {:>4} {:>6} {:>8} {:>8} {:>9.1} {:>3} {:>6}",
            r.operation,
            n(r.bw_max_mib),
            n(r.bw_min_mib),
            n(r.bw_mean_mib),
            n(r.bw_std_mib),
            n(r.ops_max),
            n(r.ops_min),
            n(r.ops_mean),
            n(r.ops_std),
            n(r.mean_time_s),
            // No stonewalling (-D): IOR prints NA.
            "NA",
            "NA",
            0,
            run.tasks,
            run.tasks_per_client,
            p.iterations,
            u8::from(p.file_per_proc),
            u8::from(p.reorder),
            // -Q, IOR's default task offset for -C; no random reordering (-Z) and its seed.
            1,
            0,
            0,
            p.segments,
            p.block,
            p.transfer,
            aggregate_mib,
            "POSIX",
            0,
        );
    }
    out
}

/// What `pvfs-agent engine` and `pvfsctl bench` print at the end of a run: IOR's or mdtest's
/// tables as the tool prints them; nothing when no phase finished.
/// The header lines IOR and mdtest print before their results, for the built-in engine's own
/// output (`pvfs-agent engine`), so that `bench import` of it has its command: IOR's `Began`,
/// `Command line`, `Machine` and `Path`, or mdtest's `-- started at … --`, `Command line used`
/// and `Path`. The command is the IOR or mdtest run the engine's run stands for (IOR 4.1's
/// flags, under `mpirun -np TASKS` so the task count is in it). No `IOR-x.y.z`/`mdtest-x.y.z`
/// banner: the engine is neither, and an import would take the banner for their version.
/// Times are UTC (the tools print local time).
pub fn engine_header(
    workload: &Workload,
    tasks: u32,
    dir: &std::path::Path,
    machine: &str,
    began: SystemTime,
) -> String {
    match workload {
        Workload::Ior(p) => {
            let args = crate::params::ior_args(
                p,
                crate::params::IorVersion(4, 1, 0),
                &dir.join("ior").display().to_string(),
            );
            format!(
                "Began               : {}\nCommand line        : mpirun -np {tasks} ior {}\nMachine             : {machine}\nPath                : {}\n\n",
                ctime(began),
                args.join(" "),
                dir.display()
            )
        }
        Workload::Mdtest(p) => format!(
            "-- started at {} --\n\nCommand line used: mpirun -np {tasks} mdtest {}\nPath: {}\n\n",
            mdtest_time(began),
            crate::params::mdtest_args(p, &dir.display().to_string()).join(" "),
            dir.display()
        ),
        Workload::Find(_) | Workload::Io500(_) => String::new(),
    }
}

/// The line IOR and mdtest end with: `Finished            : …`, `-- finished at … --`.
pub fn engine_footer(workload: &Workload, finished: SystemTime) -> String {
    match workload {
        Workload::Ior(_) => format!("Finished            : {}\n", ctime(finished)),
        Workload::Mdtest(_) => format!("-- finished at {} --\n", mdtest_time(finished)),
        Workload::Find(_) | Workload::Io500(_) => String::new(),
    }
}

/// `ctime`'s form, as IOR's `CurrentTimeString` prints it: `Sun Nov  9 05:55:45 2026`.
fn ctime(t: SystemTime) -> String {
    let t = time::OffsetDateTime::from(t);
    let weekday = &t.weekday().to_string()[..3];
    let month = &t.month().to_string()[..3];
    format!(
        "{weekday} {month} {:>2} {:02}:{:02}:{:02} {}",
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.year()
    )
}

/// mdtest's `%m/%d/%Y %H:%M:%S`.
fn mdtest_time(t: SystemTime) -> String {
    let t = time::OffsetDateTime::from(t);
    format!(
        "{:02}/{:02}/{} {:02}:{:02}:{:02}",
        u8::from(t.month()),
        t.day(),
        t.year(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

pub fn text(
    workload: &Workload,
    tasks: u32,
    tasks_per_client: u32,
    iterations: &[IorIteration],
    ior: &[IorSummary],
    mdtest: &[MdtestSummary],
) -> String {
    match workload {
        Workload::Ior(_) if iterations.is_empty() && ior.is_empty() => String::new(),
        Workload::Ior(params) => ior_text(IorRun { params, tasks, tasks_per_client }, iterations, ior),
        Workload::Mdtest(_) if mdtest.is_empty() => String::new(),
        Workload::Mdtest(params) => mdtest_text(params, mdtest),
        // pfind prints one line, which the io500 run's own files hold.
        Workload::Find(_) | Workload::Io500(_) => String::new(),
    }
}

/// mdtest 4's SUMMARY table (`summarize_results_rank0`): its rows in its order, zeros for
/// what did not run (the engine renames no directories: that row is 0, as in mdtest when its
/// rename phase is off), the tree rows last.
pub fn mdtest_text(params: &MdtestParams, summaries: &[MdtestSummary]) -> String {
    use std::fmt::Write;
    const DIRECTORY_ROWS: [&str; 4] =
        ["Directory creation", "Directory stat", "Directory rename", "Directory removal"];
    const FILE_ROWS: [&str; 4] = ["File creation", "File stat", "File read", "File removal"];
    let mut out = format!("\nSUMMARY rate (in ops/sec): (of {} iterations)\n", params.iterations);
    out += "   Operation                     Max            Min           Mean        Std Dev\n";
    out += "   ---------                     ---            ---           ----        -------\n";
    let values = |name: &str| {
        let r = summaries.iter().find(|r| r.operation == name);
        let v = |f: fn(&MdtestSummary) -> Option<f64>| r.and_then(f).unwrap_or(0.0);
        [v(|r| r.max), v(|r| r.min), v(|r| r.mean), v(|r| r.std)]
    };
    let directories = if params.files_only { &[][..] } else { &DIRECTORY_ROWS[..] };
    for name in directories.iter().chain(&FILE_ROWS) {
        let [max, min, mean, std] = values(name);
        let _ = writeln!(out, "   {name:<18}     {max:>14.3} {min:>14.3} {mean:>14.3} {std:>14.3}");
    }
    for name in ["Tree creation", "Tree removal"] {
        let [max, min, mean, std] = values(name);
        let _ = writeln!(out, "   {name:<22} {max:>14.3} {min:>14.3} {mean:>14.3} {std:>14.3}");
    }
    out
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
            Workload::Ior(p) => p,
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
    /// IOR's ctime form pads a one-digit day with a space; mdtest's is numeric; both in the
    /// header and footer the engine prints, with the command it stands for.
    #[test]
    fn the_engines_header_dates_and_names_the_run_as_ior_and_mdtest_do() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_794_200_705);
        let ior = crate::params::Preset::Throughput.workload();
        let head = engine_header(&ior, 4, std::path::Path::new("/mnt/x"), "Linux c1", at);
        assert!(
            head.starts_with(
                "Began               : Mon Nov  9 05:05:05 2026\nCommand line        : mpirun -np 4 ior -w -r"
            ),
            "{head}"
        );
        assert!(
            head.contains("-o /mnt/x/ior\nMachine             : Linux c1\nPath                : /mnt/x\n"),
            "{head}"
        );
        assert_eq!(engine_footer(&ior, at), "Finished            : Mon Nov  9 05:05:05 2026\n");
        let md = crate::params::Preset::Metadata.workload();
        let head = engine_header(&md, 2, std::path::Path::new("/mnt/x"), "Linux c1", at);
        assert!(
            head.starts_with(
                "-- started at 11/09/2026 05:05:05 --\n\nCommand line used: mpirun -np 2 mdtest -C -T"
            ),
            "{head}"
        );
        assert_eq!(engine_footer(&md, at), "-- finished at 11/09/2026 05:05:05 --\n");
    }
}

#[cfg(test)]
mod printed {
    use super::*;
    use crate::params::Preset;

    /// The lines of `text` from the one starting with `from` to the one starting with `to`
    /// (excluded), or to the end.
    fn block<'a>(text: &'a str, from: &str, to: &str) -> Vec<&'a str> {
        let lines: Vec<&str> = text.lines().collect();
        let start = lines
            .iter()
            .position(|l| l.starts_with(from))
            .unwrap_or_else(|| panic!("no {from:?} in\n{text}"));
        let end = lines[start..].iter().position(|l| l.starts_with(to)).map_or(lines.len(), |n| start + n);
        lines[start..end].to_vec()
    }

    #[test]
    fn iors_own_output_read_and_printed_again_is_the_same_text() {
        // IOR 4.1's output (`ior -w -r -C -i2 -t1m -b64m -F --posix.odirect`, 2 tasks on one
        // node), read by the parser `bench import` uses, then printed as the engine prints.
        let real = include_str!("../testdata/ior/ior_tput.txt");
        let parsed = crate::parse::parse(real).unwrap();
        let Workload::Ior(mut p) = Preset::Throughput.workload() else { unreachable!() };
        (p.iterations, p.transfer, p.block) = (2, 1 << 20, 64 << 20);
        let text =
            ior_text(IorRun { params: &p, tasks: 2, tasks_per_client: 2 }, &parsed.iterations, &parsed.ior);
        assert_eq!(block(&text, "Results:", "Finished"), block(real, "Results:", "Finished"));
        // And the engine's text reads back to the same numbers.
        let again = crate::parse::parse(&text).unwrap();
        assert_eq!((again.ior, again.iterations), (parsed.ior, parsed.iterations));
    }

    #[test]
    fn mdtests_own_output_read_and_printed_again_is_the_same_text() {
        // mdtest 4.1: `-C -T -i2 -I 200 -z 2 -b 4 -L -u -F`: the file rows, zeros for the
        // phases not run, the tree rows last.
        let real = include_str!("../testdata/ior/mdtest_paper_pvfs.txt");
        let parsed = crate::parse::parse(real).unwrap();
        let Workload::Mdtest(mut p) = Preset::Metadata.workload() else { unreachable!() };
        p.iterations = 2;
        let text = mdtest_text(&p, &parsed.mdtest);
        assert_eq!(block(&text, "SUMMARY", "-- finished"), block(real, "SUMMARY", "-- finished"));
        let again = crate::parse::parse(&text).unwrap();
        assert_eq!(again.mdtest.len(), 6);
        assert_eq!(again.mdtest[..2], parsed.mdtest[..2]);

        // Without -F the directory rows come first, the rename row among them.
        let lustre = include_str!("../testdata/ior/mdtest_paper_lustre.txt");
        let parsed = crate::parse::parse(lustre).unwrap();
        p.files_only = false;
        let text = mdtest_text(&p, &parsed.mdtest);
        assert_eq!(block(&text, "SUMMARY", "-- finished"), block(lustre, "SUMMARY", "-- finished"));
    }
}

/// elbencho's "first done" figures for a phase: what every task had moved when the first task
/// finished, over that time (the "last done" figures are the phase's totals: everything over
/// the last task's end). A straggler shows as a first-done rate well above the last-done one.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FirstDone {
    /// From the first task's start to the first task's end.
    pub seconds: f64,
    pub bytes: u64,
    pub ops: u64,
    pub bw_mib: f64,
    pub ops_per_sec: f64,
}

/// One client's progress through a phase: `(unix seconds, bytes, ops)` as it reported them,
/// cumulative.
pub type Progress = Vec<(f64, u64, u64)>;

/// The first-done figures of a phase from its tasks (with the client each ran on) and each
/// client's reported progress. A client's bytes and ops when the first task ended are read off
/// its progress, linearly between the reports around that time, from nothing at the phase's
/// start to its tasks' totals at its last task's end (so a client that reported nothing in
/// between, a phase shorter than its reports' second, is taken as steady). `None` when no task
/// ran for any time.
pub fn first_done(tasks: &[(String, TaskResult)], progress: &[(String, Progress)]) -> Option<FirstDone> {
    let secs = |t: SystemTime| t.duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let start = tasks.iter().map(|(_, t)| secs(t.start)).fold(f64::INFINITY, f64::min);
    let first_end = tasks.iter().map(|(_, t)| secs(t.end)).fold(f64::INFINITY, f64::min);
    // Also none when there is no task (both infinite) or no time passed.
    if first_end.partial_cmp(&start) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let mut clients: Vec<&str> = tasks.iter().map(|(node, _)| node.as_str()).collect();
    clients.sort_unstable();
    clients.dedup();
    let (mut bytes, mut ops) = (0.0, 0.0);
    for client in clients {
        let mine = tasks.iter().filter(|(node, _)| node == client).map(|(_, t)| t);
        let (mut end, mut all_bytes, mut all_ops) = (start, 0u64, 0u64);
        for t in mine {
            end = end.max(secs(t.end));
            all_bytes += t.bytes;
            all_ops += t.ops;
        }
        let mut points = vec![(start, 0.0, 0.0)];
        if let Some((_, reports)) = progress.iter().find(|(node, _)| node == client) {
            points.extend(
                reports
                    .iter()
                    .filter(|(t, ..)| *t > start && *t < end)
                    .map(|&(t, b, o)| (t, b as f64, o as f64)),
            );
        }
        points.push((end, all_bytes as f64, all_ops as f64));
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let at = |i: usize| points[i.min(points.len() - 1)];
        let after = points.iter().position(|p| p.0 >= first_end).unwrap_or(points.len() - 1);
        let (b, a) = (at(after), at(after.saturating_sub(1)));
        let share = if b.0 > a.0 { ((first_end - a.0) / (b.0 - a.0)).clamp(0.0, 1.0) } else { 1.0 };
        bytes += a.1 + (b.1 - a.1) * share;
        ops += a.2 + (b.2 - a.2) * share;
    }
    let seconds = first_end - start;
    Some(FirstDone {
        seconds,
        bytes: bytes.round() as u64,
        ops: ops.round() as u64,
        bw_mib: bytes / (1u64 << 20) as f64 / seconds,
        ops_per_sec: ops / seconds,
    })
}

#[cfg(test)]
mod first_done_tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn task(task: u32, from: u64, to: u64, bytes: u64) -> TaskResult {
        let at = |s| UNIX_EPOCH + Duration::from_secs(1000 + s);
        TaskResult { bytes, ops: bytes / 100, end: at(to), ..TaskResult::begun(task, at(from)) }
    }

    /// Client a's task ends first, at 2 s, having moved 200; client b, slower at first, reported
    /// 50 at 1 s and 350 at 3 s: at 2 s it had 200. First done: 400 in 2 s; last done is the
    /// totals (600 over 4 s).
    #[test]
    fn first_done_reads_every_client_at_the_first_tasks_end() {
        let tasks = vec![("a".to_owned(), task(0, 0, 2, 200)), ("b".to_owned(), task(1, 0, 4, 400))];
        let progress = vec![("b".to_owned(), vec![(1001.0, 50, 0), (1003.0, 350, 3)])];
        let first = first_done(&tasks, &progress).unwrap();
        assert_eq!((first.seconds, first.bytes), (2.0, 400));
        assert!((first.bw_mib - 400.0 / 1048576.0 / 2.0).abs() < 1e-12);
        // Without reports each client is taken as steady: b had half of its 400.
        assert_eq!(first_done(&tasks, &[]).unwrap().bytes, 400);
        // No time, no figure.
        assert_eq!(first_done(&[("a".to_owned(), task(0, 0, 0, 1))], &[]), None);
    }
}
