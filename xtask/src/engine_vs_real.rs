//! `cargo xtask bench-engine --against ior,mdtest`: the built-in engine beside the real IOR and
//! mdtest (built from `shared/vendor` by `xtask vendor`, run under Debian's Open MPI) on the
//! same directory with the same command line.
//!
//! Each contender's own report is parsed by the parser `bench import` uses, so a row means the
//! same thing on both sides: mdtest's SUMMARY rate per row (the mean over its iterations), and
//! IOR's mean bandwidth per operation and its per-iteration `open(s)`/`close(s)` columns. The
//! engine is given the workload the command line describes (`pvfs_bench`'s reading of it,
//! `--set` for each parameter), its tasks as threads of one process, the real tool's ranks as
//! processes. Rounds alternate which runs first; each prints its figures and the load average,
//! and each row ends with both medians, their ratio, a 95 % bootstrap interval, and whether the
//! engine is within ±20 % of the real tool, outside it, or undecided (the interval straddles a
//! bound): the goal for every row.

use crate::util::{self, median, ratio_interval};
use anyhow::Context;
use pvfs_bench::model::Parsed;
use std::path::Path;
use std::process::Command;

/// What the engine must come within, as a ratio to the real tool.
const WITHIN: f64 = 0.20;

/// The real tools' programs.
pub struct Real {
    ior: std::path::PathBuf,
    mdtest: std::path::PathBuf,
}

impl Real {
    /// Builds them once (`xtask vendor`'s cache) and checks mpirun is there.
    pub fn build() -> anyhow::Result<Real> {
        util::ensure_programs(&[("mpirun", "openmpi-bin")])?;
        let io500 = crate::vendor::build()?;
        let bin = io500.parent().context("io500's directory")?.join("bin");
        Ok(Real { ior: bin.join("ior"), mdtest: bin.join("mdtest") })
    }
}

/// Which tool a comparison runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Ior,
    Mdtest,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Ior => "ior",
            Tool::Mdtest => "mdtest",
        }
    }
}

/// Every row's figure from one run's report, by name.
type Figures = Vec<(String, f64)>;

/// The rows compared, from a parsed report.
fn figures(tool: Tool, parsed: &Parsed) -> Figures {
    let mut out = Vec::new();
    match tool {
        Tool::Mdtest => {
            for row in &parsed.mdtest {
                if let Some(mean) = row.mean {
                    out.push((format!("{} ops/s", row.operation), mean));
                }
            }
        }
        Tool::Ior => {
            for row in &parsed.ior {
                if let Some(bw) = row.bw_mean_mib {
                    out.push((format!("{} MiB/s", row.operation), bw));
                }
            }
            // IOR's own columns of each iteration, averaged over the run's iterations.
            for op in ["write", "read"] {
                let of = |f: fn(&pvfs_bench::model::IorIteration) -> Option<f64>| -> Option<f64> {
                    let v: Vec<f64> =
                        parsed.iterations.iter().filter(|i| i.operation == op).filter_map(f).collect();
                    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
                };
                for (column, value) in [("open", of(|i| i.open_s)), ("close", of(|i| i.close_s))] {
                    if let Some(value) = value {
                        out.push((format!("{op} {column}(s)"), value));
                    }
                }
            }
        }
    }
    out
}

/// One comparison: the tool's command line from `opts` (`--ior`/`--mdtest`, without
/// `-o`/`-d`) run by the engine and by the real tool with `tasks` tasks in `dir`, `--runs`
/// rounds, caches dropped before each run unless `--keep-caches`.
pub fn compare(
    binary: &Path,
    real: &Real,
    tool: Tool,
    tasks: u32,
    dir: &Path,
    opts: &crate::bench_engine::EngineArgs,
) -> anyhow::Result<()> {
    let runs = opts.runs;
    let args = match tool {
        Tool::Ior => &opts.ior,
        Tool::Mdtest => &opts.mdtest,
    };
    let words: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
    let (workload, _) = match tool {
        Tool::Ior => pvfs_bench::params::ior_command(&words),
        Tool::Mdtest => pvfs_bench::params::mdtest_command(&words),
    }
    .with_context(|| format!("the engine cannot run `{} {args}`", tool.name()))?;
    println!(
        "\n{} {args}, {tasks} task(s), in {} ({runs} rounds, order alternating; engine {}):",
        tool.name(),
        dir.display(),
        binary.display()
    );
    let (mut engine, mut theirs): (Vec<Figures>, Vec<Figures>) = (Vec::new(), Vec::new());
    for round in 0..runs {
        let load = load_average();
        for engine_first in [round % 2 == 0, round % 2 == 1] {
            fresh(dir)?;
            let dropped = !opts.keep_caches && drop_caches();
            let (who, text) = if engine_first {
                let mut cmd = Command::new(binary);
                cmd.args([
                    "agent",
                    "engine",
                    "--tasks",
                    &tasks.to_string(),
                    "--preset",
                    workload.tool(),
                    "--dir",
                ])
                .arg(dir);
                for (key, value) in workload.settings() {
                    cmd.arg("--set").arg(format!("{key}={value}"));
                }
                ("engine", util::read(&mut cmd)?)
            } else {
                let program = match tool {
                    Tool::Ior => &real.ior,
                    Tool::Mdtest => &real.mdtest,
                };
                let mut cmd = Command::new("mpirun");
                cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", &tasks.to_string()])
                    .arg(program)
                    .args(&words);
                match tool {
                    Tool::Ior => cmd.arg("-o").arg(dir.join("ior")),
                    Tool::Mdtest => cmd.arg("-d").arg(dir),
                };
                (tool.name(), util::read(&mut cmd)?)
            };
            let parsed = pvfs_bench::parse::parse(&text)
                .with_context(|| format!("{who}'s output did not parse:\n{text}"))?;
            let got = figures(tool, &parsed);
            anyhow::ensure!(!got.is_empty(), "{who}'s output had no rows:\n{text}");
            println!(
                "  round {round} {who:<6} (load {load}{}): {}",
                if dropped { ", caches dropped" } else { "" },
                got.iter().map(|(k, v)| format!("{k} {}", figure(*v))).collect::<Vec<_>>().join(", ")
            );
            if engine_first { engine.push(got) } else { theirs.push(got) }
        }
    }
    fresh(dir)?;
    println!(
        "\n  {:<26} {:>14} {:>14} {:>26}  verdict (engine ÷ {} within ±{:.0} %)",
        "row",
        "engine",
        tool.name(),
        "ratio [95 % interval]",
        tool.name(),
        WITHIN * 100.0
    );
    let rows: Vec<String> =
        theirs.first().map(|f| f.iter().map(|(k, _)| k.clone()).collect()).unwrap_or_default();
    for row in rows {
        let of = |runs: &[Figures]| -> Vec<f64> {
            runs.iter().filter_map(|f| f.iter().find(|(k, _)| *k == row).map(|(_, v)| *v)).collect()
        };
        let (ours, real) = (of(&engine), of(&theirs));
        if ours.iter().chain(&real).all(|v| *v == 0.0) {
            // A row mdtest prints for a phase the command line did not run.
            continue;
        }
        if ours.is_empty() {
            println!(
                "  {row:<26} {:>14} {:>14}  the engine has no such row",
                "–",
                figure(median(&mut real.clone()))
            );
            continue;
        }
        let ratio = median(&mut ours.clone()) / median(&mut real.clone());
        let (lo, hi) = ratio_interval(&ours, &real);
        println!(
            "  {row:<26} {:>14} {:>14} {:>26}  {}",
            figure(median(&mut ours.clone())),
            figure(median(&mut real.clone())),
            format!("{ratio:.3} [{lo:.3}, {hi:.3}]"),
            verdict(lo, hi)
        );
    }
    Ok(())
}

/// A figure with three significant decimals whatever its size (an open's seconds are
/// thousandths).
fn figure(value: f64) -> String {
    if value != 0.0 && value.abs() < 1.0 { format!("{value:.6}") } else { format!("{value:.3}") }
}

/// Whether an interval of the ratio puts the engine within ±[`WITHIN`] of the real tool.
fn verdict(lo: f64, hi: f64) -> &'static str {
    let (low, high) = (1.0 - WITHIN, 1.0 + WITHIN);
    if lo >= low && hi <= high {
        "within"
    } else if hi < low || lo > high {
        "outside"
    } else {
        "undecided"
    }
}

/// An empty `dir` for the next run: what a run left (a failed one) is not the next one's.
fn fresh(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// Writes back and drops the page, dentry and inode caches, where this process may (root, a
/// writable /proc/sys): each run then starts from the same cold state. Whether it did.
fn drop_caches() -> bool {
    nix::unistd::sync();
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok()
}

/// The 1-minute load average, as /proc/loadavg says it.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_within_outside_or_undecided() {
        assert_eq!(verdict(0.9, 1.1), "within");
        assert_eq!(verdict(0.5, 0.7), "outside");
        assert_eq!(verdict(1.3, 1.5), "outside");
        assert_eq!(verdict(0.7, 0.9), "undecided");
        assert_eq!(verdict(1.1, 1.3), "undecided");
    }
}
