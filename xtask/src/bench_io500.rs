//! `cargo xtask bench-io500`: the real io500 (built from shared/vendor by `xtask vendor`) and
//! `pvfsctl bench --preset io500` (the built-in engine through a real agent) on the same file
//! system, with the same knobs, at each task count, in interleaved rounds (the order turned
//! each round); each phase's figure and the score side by side, medians, their ratio and its
//! 95 % bootstrap interval, and whether that interval puts the phase within ±5 % of io500.
//!
//! The agent is `pvfsctl demo --agents 1 --hold`'s: one real agent on loopback over mTLS, whose
//! mount directory is on this machine's disk; io500 writes in a directory beside the agent's
//! runs on the same file system. Both get the same ini knobs (`pvfs_bench::io500::ini` writes
//! io500's, `--set` gives pvfs the same). Both print io500's `[RESULT]` lines, read here with
//! `pvfs_bench::io500::parse_summary`.

use crate::util;
use anyhow::Context;
use pvfs_bench::io500::plan::Options;
use pvfs_bench::io500::{PhaseResult, parse_summary};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Io500Args {
    /// Rounds of each tool at each task count (the median is reported, with a bootstrap
    /// interval on each ratio).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Task counts: io500's ranks, and pvfs's tasks on the one client.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub tasks: Vec<u32>,
    /// io500's stonewall, seconds (its rules want 300; short runs are marked invalid by both).
    #[arg(long, default_value_t = 5)]
    pub stonewall: u32,
    /// The pvfs binary to measure; default: the shipped build (`cargo xtask dist`'s profile).
    #[arg(long)]
    pub binary: Option<PathBuf>,
    /// Where the agent's files, its mount and io500's data go (default: target/bench-io500).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// The knobs both runs get, besides the stonewall: each task's ior-easy file is capped at
/// 4 GiB (the stonewall ends it first on this machine's disk); the rest are io500's defaults.
const KNOBS: [(&str, &str); 1] = [("ior-easy.blockSize", "4g")];

pub fn run(args: &Io500Args) -> anyhow::Result<()> {
    anyhow::ensure!(args.rounds > 0, "--rounds must be at least 1");
    anyhow::ensure!(args.tasks.iter().all(|t| (1..=64).contains(t)), "--tasks: each count 1..=64");
    util::ensure_programs(&[("mpirun", "openmpi-bin")])?;
    let io500 = crate::vendor::build()?;
    let binary = match &args.binary {
        Some(binary) => binary.clone(),
        None => util::build_shipped()?,
    };
    let dir = args.dir.clone().unwrap_or_else(|| util::root().join("target/bench-io500"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let mut options = Options::default();
    options.set("debug.stonewall-time", &args.stonewall.to_string())?;
    for (key, value) in KNOBS {
        options.set(key, value)?;
    }
    std::fs::create_dir_all(&dir)?;
    let demo = dir.join("demo");
    let _agent = start_agent(&binary, &demo)?;
    let cluster = demo.join("cluster.toml");
    let mount = demo.join("mnt");
    eprintln!("xtask bench-io500: io500 {} and pvfs {}", io500.display(), binary.display());
    // Per task count and tool: each round's phases.
    let mut figures: BTreeMap<(u32, &str), Vec<Vec<PhaseResult>>> = BTreeMap::new();
    let mut scores: BTreeMap<(u32, &str), Vec<f64>> = BTreeMap::new();
    for round in 0..args.rounds {
        for &tasks in &args.tasks {
            let mut order = ["io500", "pvfs"];
            if round % 2 == 1 {
                order.reverse();
            }
            for tool in order {
                let started = Instant::now();
                let text = match tool {
                    "io500" => {
                        real_once(&io500, &options, &mount.join(format!("io500-{round}-{tasks}")), tasks)?
                    }
                    _ => pvfs_once(&binary, &cluster, &options, tasks, &dir.join("results"))?,
                };
                let summary = parse_summary(&text).with_context(|| format!("{tool}'s output:\n{text}"))?;
                let score = summary.score.with_context(|| format!("{tool} printed no score:\n{text}"))?;
                eprintln!(
                    "round {} tasks {tasks} {tool}: score {:.3} ({:.0}s)",
                    round + 1,
                    score.total,
                    started.elapsed().as_secs_f64()
                );
                scores.entry((tasks, tool)).or_default().push(score.total);
                figures.entry((tasks, tool)).or_default().push(summary.phases);
            }
        }
    }
    println!(
        "\nio500 02091cf vs pvfs --preset io500 on {} (stonewall {} s, median of {} rounds, interleaved):",
        mount.display(),
        args.stonewall,
        args.rounds
    );
    println!(
        "{:>5} {:<20} {:>14} {:>14} {:>8} {:>18}  within ±5 %?",
        "tasks", "phase", "io500", "pvfs", "ratio", "95 % interval"
    );
    for &tasks in &args.tasks {
        let real = &figures[&(tasks, "io500")];
        let ours = &figures[&(tasks, "pvfs")];
        let names: Vec<String> = real[0].iter().filter(|p| p.scored).map(|p| p.name.clone()).collect();
        for name in names {
            let of = |runs: &[Vec<PhaseResult>]| -> Vec<f64> {
                runs.iter().filter_map(|r| r.iter().find(|p| p.name == name)).map(|p| p.value).collect()
            };
            let unit = real[0].iter().find(|p| p.name == name).map_or("", |p| unit(p));
            let (a, b) = (of(real), of(ours));
            println!(
                "{tasks:>5} {name:<20} {:>14} {:>14} {}",
                format!("{:.3} {unit}", util::median(&mut a.clone())),
                format!("{:.3}", util::median(&mut b.clone())),
                compared(&b, &a)
            );
        }
        let (a, b) = (&scores[&(tasks, "io500")], &scores[&(tasks, "pvfs")]);
        println!(
            "{tasks:>5} {:<20} {:>14.3} {:>14.3} {}",
            "SCORE",
            util::median(&mut a.clone()),
            util::median(&mut b.clone()),
            compared(b, a)
        );
    }
    Ok(())
}

/// pvfs's rounds against io500's: the ratio of medians, its 95 % bootstrap interval, and what
/// the interval says of the ±5 % goal — inside, outside, or undecided (these rounds cannot
/// tell).
fn compared(pvfs: &[f64], io500: &[f64]) -> String {
    let ratio = util::median(&mut pvfs.to_vec()) / util::median(&mut io500.to_vec());
    let (lo, hi) = util::ratio_interval(pvfs, io500);
    let verdict = if lo >= 0.95 && hi <= 1.05 {
        "within"
    } else if hi < 0.95 || lo > 1.05 {
        "outside"
    } else {
        "undecided"
    };
    format!("{ratio:>8.3} {:>18}  {verdict}", format!("[{lo:.3}, {hi:.3}]"))
}

fn unit(p: &PhaseResult) -> &'static str {
    match p.unit {
        pvfs_bench::io500::Unit::GiBPerS => "GiB/s",
        pvfs_bench::io500::Unit::KIops => "kIOPS",
    }
}

/// `pvfsctl demo --agents 1 --hold` in `dir`, until its cluster is set up and its own
/// benchmark done (its report written).
fn start_agent(binary: &Path, dir: &Path) -> anyhow::Result<Demo> {
    let log = std::fs::File::create(dir.with_extension("log"))?;
    let child = Command::new(binary)
        .args(["ctl", "demo", "--agents", "1", "--hold", "--dir"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("starting pvfsctl demo")?;
    let demo = Demo(child);
    let deadline = Instant::now() + Duration::from_secs(300);
    while !dir.join("pvfs-report/report.md").is_file() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "pvfsctl demo did not finish setting up in 300 s: see {}",
            dir.with_extension("log").display()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    Ok(demo)
}

/// The demo, stopped as Ctrl-C stops it (SIGTERM: it stops its agents) when dropped.
struct Demo(std::process::Child);

impl Drop for Demo {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        for _ in 0..40 {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One run of the real io500 with `tasks` ranks in `data`: its stdout.
fn real_once(io500: &Path, options: &Options, data: &Path, tasks: u32) -> anyhow::Result<String> {
    std::fs::create_dir_all(data)?;
    let ini = data.join("io500.ini");
    std::fs::write(&ini, pvfs_bench::io500::ini::ini(options, data, false)?)?;
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", &tasks.to_string()])
        .arg(io500)
        .arg(&ini)
        .output()
        .context("running mpirun io500")?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    anyhow::ensure!(
        out.status.success(),
        "io500 failed ({}):\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(data)?;
    Ok(text)
}

/// One `pvfsctl bench --preset io500` with `tasks` tasks on the demo's one client: its stdout.
fn pvfs_once(
    binary: &Path,
    cluster: &Path,
    options: &Options,
    tasks: u32,
    results: &Path,
) -> anyhow::Result<String> {
    let mut command = Command::new(binary);
    command.args(["ctl", "bench"]).arg(cluster).args(["--preset", "io500", "--procs", &tasks.to_string()]);
    for (key, value) in options.changed() {
        command.args(["--set", &format!("{key}={value}")]);
    }
    let out = command.arg("--results").arg(results).output().context("running pvfsctl bench")?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    anyhow::ensure!(
        out.status.success(),
        "pvfsctl bench failed ({}):\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(text)
}
