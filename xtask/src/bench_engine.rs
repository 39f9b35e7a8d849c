//! `cargo xtask bench-engine`: the built-in engine (`pvfs-agent engine`) and fio on the same
//! file system with the same patterns, side by side, and what the engine's latency timing
//! costs: the engine timed (every transfer's time into its histograms, as `bench` runs it),
//! the engine `--untimed` (no clock reads, no histograms), and fio, in rounds whose order
//! rotates, each figure the median of its rounds with a bootstrap interval on each ratio; and
//! the engine's latency percentiles beside fio's own completion-latency percentiles.

use crate::engine_vs_real::{self, Tool, load_average};
use crate::util::{self, median, ratio_interval, read};
use anyhow::Context;
use std::path::Path;
use std::process::Command;

#[derive(clap::Args, Debug)]
pub struct EngineArgs {
    /// Directory on the file system to measure (default: target/bench-engine, on this
    /// machine's disk).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// Rounds: each runs the engine timed, the engine untimed and fio once, in an order that
    /// rotates from round to round (medians are reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Bytes per task for the sequential pattern.
    #[arg(long, default_value = "512m")]
    pub seq_size: String,
    /// Bytes per task for the random pattern.
    #[arg(long, default_value = "64m")]
    pub rand_size: String,
    /// Task counts to measure: the engine's tasks are threads of one process, fio's jobs are
    /// processes (as IOR's ranks are), each with its own file.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    pub tasks: Vec<u32>,
    /// What to measure the engine against: fio (the patterns above), and the real IOR and
    /// mdtest (built from shared/vendor) on the same command lines (`--ior`, `--mdtest`).
    #[arg(long, value_delimiter = ',', default_value = "fio,ior,mdtest")]
    pub against: Vec<Against>,
    /// IOR's command line for `--against ior` (without `-o`), run at each `--tasks` count.
    #[arg(
        long,
        default_value = "-a POSIX -w -r -t 1m -b 256m -F --posix.odirect -i 1",
        allow_hyphen_values = true
    )]
    pub ior: String,
    /// mdtest's command line for `--against mdtest` (without `-d`), run with 2 tasks, as the
    /// issue measured it.
    #[arg(long, default_value = "-C -T -r -n 1000 -u -i 3", allow_hyphen_values = true)]
    pub mdtest: String,
    /// The engine's build: `release` (what the README's build makes) or `dist` (the shipped
    /// binary: fat LTO, linked against glibc 2.17).
    #[arg(long, value_enum, default_value = "release")]
    pub build: Build,
    /// Do not drop the page, dentry and inode caches before each run of the real-tool
    /// comparisons (they are dropped by default, where this process may).
    #[arg(long)]
    pub keep_caches: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Against {
    Fio,
    Ior,
    Mdtest,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Build {
    Release,
    Dist,
}

impl Build {
    pub fn name(self) -> &'static str {
        match self {
            Build::Release => "release",
            Build::Dist => "dist",
        }
    }
}

/// The pvfs binary of `build`, built now (cargo's own check when nothing changed).
pub fn build(build: Build) -> anyhow::Result<std::path::PathBuf> {
    match build {
        Build::Dist => util::build_shipped(),
        Build::Release => {
            util::step(util::cargo().args([
                "build",
                "--release",
                "--locked",
                "-p",
                "pvfs",
                "--bin",
                "pvfs",
                "--bin",
                "pvfs-agent",
            ]))?;
            Ok(util::root().join("target/release/pvfs"))
        }
    }
}

/// What one run of a contender measured, per operation (write, read).
#[derive(Debug, Clone, Copy, Default)]
struct Measured {
    mib: f64,
    /// p50 and p99 in µs, where the contender times its operations.
    p50_us: Option<f64>,
    p99_us: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Contender {
    Timed,
    Untimed,
    Fio,
}

/// The engine and fio on the same patterns: 1 MiB sequential O_DIRECT write then read, and
/// 4 KiB random O_DIRECT write then read, at 1, 2 and 4 tasks (`--tasks`), a file each. fio
/// uses the same system calls (psync: pwrite/pread), a process per job (IOR's ranks are
/// processes; the engine's tasks are threads, which is what the comparison at 2 and 4 tasks is
/// for), no preallocation (the engine does not preallocate either), and covers each block once
/// as the engine's shuffle does. Both report aggregate bandwidth: all bytes over the time from
/// the first task's start to the last one's end. fio's latency is its `clat` (the system
/// call, for psync), the engine's each transfer's call.
pub fn run(args: &EngineArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    anyhow::ensure!(args.tasks.iter().all(|&t| (1..=64).contains(&t)), "--tasks: each count must be 1..=64");
    let binary = build(args.build)?;
    let dir = args.dir.clone().unwrap_or_else(|| util::root().join("target/bench-engine"));
    std::fs::create_dir_all(&dir)?;
    if args.against.contains(&Against::Fio) {
        against_fio(args, &binary, &dir)?;
    }
    let real = [Against::Ior, Against::Mdtest].iter().any(|a| args.against.contains(a));
    if real {
        let real = engine_vs_real::Real::build()?;
        if args.against.contains(&Against::Ior) {
            for &tasks in &args.tasks {
                engine_vs_real::compare(&binary, &real, Tool::Ior, tasks, &dir.join("ior"), args)?;
            }
        }
        if args.against.contains(&Against::Mdtest) {
            engine_vs_real::compare(&binary, &real, Tool::Mdtest, 2, &dir.join("mdtest"), args)?;
        }
    }
    Ok(())
}

/// The engine (timed and untimed) and fio on the patterns above.
fn against_fio(args: &EngineArgs, binary: &Path, dir: &Path) -> anyhow::Result<()> {
    util::ensure_programs(&[("fio", "fio")])?;
    let (binary, dir) = (binary.to_owned(), dir.to_owned());
    let patterns =
        [("sequential 1 MiB", "1m", &args.seq_size, false), ("random 4 KiB", "4k", &args.rand_size, true)];
    println!(
        "\nbuilt-in engine (timed, untimed) vs fio, O_DIRECT, {} ({} rounds, order rotated; median, [95 % bootstrap interval]; {}):",
        dir.display(),
        args.runs,
        binary.display()
    );
    let mut rows = Vec::new();
    for (name, bs, size, random) in patterns {
        for &tasks in &args.tasks {
            // Per contender, per round: (write, read).
            let mut got: Vec<(Contender, [Measured; 2])> = Vec::new();
            for round in 0..args.runs {
                let mut order = [Contender::Timed, Contender::Untimed, Contender::Fio];
                order.rotate_left(round % 3);
                let load = load_average();
                for contender in order {
                    let measured = match contender {
                        Contender::Timed => engine_once(&binary, &dir, tasks, bs, size, random, true)?,
                        Contender::Untimed => engine_once(&binary, &dir, tasks, bs, size, random, false)?,
                        Contender::Fio => fio_once(&dir, tasks, bs, size, random)?,
                    };
                    println!(
                        "  round {round} {name} x{tasks} {contender:?}: write {:.1} MiB/s, read {:.1} MiB/s (load {load})",
                        measured[0].mib, measured[1].mib
                    );
                    got.push((contender, measured));
                }
            }
            for (op, i) in [("write", 0), ("read", 1)] {
                let of = |c: Contender| -> Vec<Measured> {
                    got.iter().filter(|(k, _)| *k == c).map(|(_, m)| m[i]).collect()
                };
                rows.push(Row {
                    pattern: name,
                    tasks,
                    op,
                    timed: of(Contender::Timed),
                    untimed: of(Contender::Untimed),
                    fio: of(Contender::Fio),
                });
            }
        }
    }
    println!(
        "\n{:<18} {:>5} {:<5} {:>10} {:>10} {:>22} {:>10} {:>22} {:>9} {:>9} {:>9} {:>9}",
        "pattern",
        "tasks",
        "op",
        "timed MiB/s",
        "untimed",
        "timed ÷ untimed",
        "fio MiB/s",
        "timed ÷ fio",
        "p50 µs",
        "fio p50",
        "p99 µs",
        "fio p99"
    );
    for row in &rows {
        row.print();
    }
    println!(
        "\ntimed ÷ untimed is what timing every transfer costs (1.000 = nothing); an interval spanning 1.0 \
         is undecided: the cost is below what these rounds can tell apart."
    );
    Ok(())
}

/// One pattern, task count and operation over every round.
struct Row {
    pattern: &'static str,
    tasks: u32,
    op: &'static str,
    timed: Vec<Measured>,
    untimed: Vec<Measured>,
    fio: Vec<Measured>,
}

impl Row {
    fn print(&self) {
        let mib = |m: &[Measured]| -> Vec<f64> { m.iter().map(|m| m.mib).collect() };
        let (timed, untimed, fio) = (mib(&self.timed), mib(&self.untimed), mib(&self.fio));
        let ratio = |a: &[f64], b: &[f64]| {
            let r = median(&mut a.to_vec()) / median(&mut b.to_vec());
            let (lo, hi) = ratio_interval(a, b);
            let verdict = if lo <= 1.0 && hi >= 1.0 { " ~" } else { "" };
            format!("{r:.3} [{lo:.3}, {hi:.3}]{verdict}")
        };
        let us = |m: &[Measured], f: fn(&Measured) -> Option<f64>| {
            let mut v: Vec<f64> = m.iter().filter_map(f).collect();
            if v.is_empty() { "–".to_owned() } else { format!("{:.1}", median(&mut v)) }
        };
        println!(
            "{:<18} {:>5} {:<5} {:>10.1} {:>10.1} {:>22} {:>10.1} {:>22} {:>9} {:>9} {:>9} {:>9}",
            self.pattern,
            self.tasks,
            self.op,
            median(&mut timed.clone()),
            median(&mut untimed.clone()),
            ratio(&timed, &untimed),
            median(&mut fio.clone()),
            ratio(&timed, &fio),
            us(&self.timed, |m| m.p50_us),
            us(&self.fio, |m| m.p50_us),
            us(&self.timed, |m| m.p99_us),
            us(&self.fio, |m| m.p99_us),
        );
    }
}

/// One write+read of the engine: each one's bandwidth and, timed, its percentiles.
fn engine_once(
    binary: &Path,
    dir: &Path,
    tasks: u32,
    bs: &str,
    size: &str,
    random: bool,
    timed: bool,
) -> anyhow::Result<[Measured; 2]> {
    let preset = if random { "iops" } else { "throughput" };
    let mut command = Command::new(binary);
    command
        .args(["agent", "engine", "--json", "--tasks", &tasks.to_string(), "--preset", preset, "--dir"])
        .arg(dir)
        .args([
            "--set",
            &format!("t={bs}"),
            "--set",
            &format!("b={size}"),
            "--set",
            "i=1",
            "--set",
            "C=false",
        ]);
    if !timed {
        command.arg("--untimed");
    }
    let out = read(&mut command)?;
    let v: serde_json::Value = serde_json::from_str(&out)?;
    let measured = |op: &str| -> anyhow::Result<Measured> {
        let mib = v["ior"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["operation"] == op))
            .and_then(|r| r["bw_mean_mib"].as_f64())
            .with_context(|| format!("no {op} row in {out}"))?;
        let latency = v["latency"].as_array().and_then(|l| l.iter().find(|l| l["phase"] == op));
        let us = |key: &str| latency.and_then(|l| l[key].as_f64()).map(|ns| ns / 1e3);
        Ok(Measured { mib, p50_us: us("p50_ns"), p99_us: us("p99_ns") })
    };
    Ok([measured("write")?, measured("read")?])
}

/// One write+read of fio, a fresh file per job: aggregate MiB/s of each, and its clat
/// percentiles.
fn fio_once(dir: &Path, jobs: u32, bs: &str, size: &str, random: bool) -> anyhow::Result<[Measured; 2]> {
    let files: Vec<_> = (0..jobs).map(|job| dir.join(format!("fio.{job}"))).collect();
    let remove = || files.iter().for_each(|f| drop(std::fs::remove_file(f)));
    remove();
    let mut result = [Measured::default(); 2];
    for (i, (rw, key)) in [
        (if random { "randwrite" } else { "write" }, "write"),
        (if random { "randread" } else { "read" }, "read"),
    ]
    .into_iter()
    .enumerate()
    {
        let out = read(
            Command::new("fio")
                .args([
                    "--name=pvfs",
                    "--ioengine=psync",
                    "--direct=1",
                    "--fallocate=none",
                    "--group_reporting",
                ])
                .args([
                    format!("--numjobs={jobs}"),
                    format!("--rw={rw}"),
                    format!("--bs={bs}"),
                    format!("--size={size}"),
                ])
                .arg(format!("--directory={}", dir.display()))
                // fio expands $jobnum itself (no shell here): fio.0, fio.1, ...
                .arg("--filename_format=fio.$jobnum")
                .arg("--output-format=json"),
        )?;
        let v: serde_json::Value =
            serde_json::from_str(&out).with_context(|| format!("fio output: {out}"))?;
        let side = &v["jobs"][0][key];
        let bytes = side["bw_bytes"].as_f64().context("no bw_bytes in fio's output")?;
        let percentile = |p: &str| side["clat_ns"]["percentile"][p].as_f64().map(|ns| ns / 1e3);
        result[i] = Measured {
            mib: bytes / (1u64 << 20) as f64,
            p50_us: percentile("50.000000"),
            p99_us: percentile("99.000000"),
        };
    }
    remove();
    Ok(result)
}
