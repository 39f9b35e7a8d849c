//! `cargo xtask fuzz --time 10m`: the `fuzz_*` property tests (proptest, in the parser and
//! writer crates) with many more cases than CI runs, round after round with a new seed each,
//! until the time is up.
//!
//! Each round is `cargo nextest run -E 'test(/fuzz_/)'` with `PROPTEST_CASES` and
//! `PROPTEST_RNG_SEED` set (the tests read both; CI leaves them unset: 256 cases, seed 12). A
//! failing round stops the run and prints the seed, so that exact round can be run again.

use crate::util::{cargo, shown};
use anyhow::{Context, bail};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The crates with `fuzz_*` tests.
const CRATES: [&str; 9] = [
    "pvfs-config",
    "pvfs-bench",
    "pvfs-engine",
    "pvfs-proto",
    "pvfs-agent",
    "pvfs-coord",
    // The agent's probe parsers (mountinfo, lctl, lfs, beegfs, mdadm, lvm, gluster) and its
    // /proc readers.
    "pvfs-host",
    "pvfs-steps",
    "pvfs-metrics",
];

#[derive(clap::Args, Debug)]
pub struct FuzzArgs {
    /// How long to fuzz, e.g. `90s`, `10m`, `2h` (the build comes out of it too).
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub time: Duration,
    /// Cases per property in each round.
    #[arg(long, default_value_t = 20_000)]
    pub cases: u64,
    /// First round's seed (the next rounds add 1); default: from the clock.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Optimised test builds (`--release`: fat LTO, a long first build, then many more cases
    /// per second).
    #[arg(long)]
    pub release: bool,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (number, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = number.parse().map_err(|_| format!("{s:?}: expected a number then s, m or h"))?;
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return Err(format!("{s:?}: unknown unit {unit:?}; use s, m or h")),
    };
    Ok(Duration::from_secs(n * scale))
}

pub fn run(args: &FuzzArgs) -> anyhow::Result<()> {
    let deadline = Instant::now() + args.time;
    let first =
        args.seed.unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_secs()));
    // The build once, outside any round's time limit check.
    let mut build = nextest(args);
    build.arg("--no-run");
    crate::util::step(&mut build)?;
    let mut rounds = 0;
    for seed in first.. {
        if Instant::now() >= deadline {
            break;
        }
        let mut cmd = nextest(args);
        cmd.arg("--no-fail-fast");
        cmd.env("PROPTEST_CASES", args.cases.to_string()).env("PROPTEST_RNG_SEED", seed.to_string());
        eprintln!("$ PROPTEST_CASES={} PROPTEST_RNG_SEED={seed} {}", args.cases, shown(&cmd));
        // Its own process group, so that the time limit stops nextest and its test processes too.
        cmd.process_group(0);
        let mut child = cmd.spawn().with_context(|| format!("cannot start `{}`", shown(&cmd)))?;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if Instant::now() >= deadline {
                // The round is cut short: what it covered passed; nothing is reported failed.
                let _ = Command::new("kill").args(["-TERM", &format!("-{}", child.id())]).status();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        match status {
            Some(status) if !status.success() => bail!(
                "round with seed {seed} failed ({status}); rerun it with \
                 PROPTEST_CASES={} PROPTEST_RNG_SEED={seed} {}",
                args.cases,
                shown(&nextest(args))
            ),
            Some(_) => rounds += 1,
            None => break,
        }
    }
    eprintln!(
        "fuzz: {rounds} complete round(s) of {} cases per property, seeds from {first}, no failure",
        args.cases
    );
    Ok(())
}

fn nextest(args: &FuzzArgs) -> Command {
    let mut cmd = cargo();
    cmd.args(["nextest", "run"]);
    if args.release {
        cmd.arg("--release");
    }
    for krate in CRATES {
        cmd.args(["-p", krate]);
    }
    cmd.args(["-E", "test(/fuzz_/)"]);
    cmd
}
