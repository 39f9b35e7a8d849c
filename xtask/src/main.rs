//! `cargo xtask …`: the project's automation, in Rust, so it runs the same on every machine.
//!
//! - `ci`: everything CI checks (installs what it needs on a fresh machine first).
//! - `dist`: the release directory, its tarball and the Debian package.
//! - `old-glibc`: the shipped binary run on an older glibc than the build machine's.
//! - `e2e`: a real multi-host cluster in containers.
//! - `accuracy`: `pvfs-agent metrics` against iostat and sar over the same seconds.
//! - `bench-mesh`: idle agent footprint and `pvfsctl nodes` latency.
//! - `bench-agent`: pvfs-agent against gmond and node_exporter, in rounds over the same windows.
//! - `bench-ingest`: the coordinator following many simulated agents.
//! - `bench-up`: a no-op `pvfsctl up` on many simulated nodes.
//! - `bench-engine`: the built-in engine against fio, and the real IOR and mdtest.
//! - `bench-io500`: `bench --preset io500` against the real io500.
//! - `bench-flood`: an agent under connection and stream floods while a coordinator follows it.
//! - `bench-serve-flood`: `pvfsctl serve`'s /metrics listener under a slowloris while scraped.
//! - `fuzz`: the parsers' and writers' property tests, many more cases, for a set time.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod accuracy;
mod bench;
mod bench_agent;
mod bench_bootstrap;
mod bench_engine;
mod bench_io500;
// The CLI tests' WebDriver client (headless Chromium), shared by path: bench-ingest --browser.
mod bench_flood;
mod bootstrap;
#[path = "../../crates/pvfs/tests/cli/browser.rs"]
mod browser;
mod ci;
mod deb;
mod dist;
mod docker;
mod e2e;
mod engine_vs_real;
mod fuzz;
mod glibc;
mod gluster;
mod image;
mod readme;
mod serve_flood;
mod sshlab;
mod util;
mod vendor;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "pvfs project automation")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install what the checks need (on a fresh machine), then fmt, clippy, tests, unit
    /// verification, dist and e2e.
    Ci {
        /// Skip the container end-to-end tests.
        #[arg(long)]
        no_e2e: bool,
    },
    /// Build the release binary and write dist/pvfs-VERSION-ARCH-linux/, its .tar.gz and
    /// dist/pvfs_VERSION_ARCH.deb (read back and checked).
    Dist,
    /// Run the shipped binary (`dist/…/bin/pvfs` after `dist`, or `--binary`) in a chroot of
    /// Debian bullseye (glibc 2.31), made with debootstrap the first time (root).
    OldGlibc {
        /// The binary to run; default: the one `cargo xtask dist` wrote.
        #[arg(long)]
        binary: Option<std::path::PathBuf>,
    },
    /// Start a cluster of agent containers on a private Docker network and run the scenarios.
    E2e(e2e::Args),
    /// Compare `pvfs-agent metrics` with iostat -x and sar over the same seconds under load
    /// (needs root for a loop device; installs sysstat and fio if missing).
    Accuracy,
    /// Measure pvfs-agent (streaming every second) against gmond and node_exporter: CPU and
    /// memory over the same window, and the ratios.
    BenchAgent(bench_agent::AgentArgs),
    /// Measure `pvfsctl serve` following N simulated agents: CPU per 1,000 agents and the
    /// delay from sample time to arrival.
    BenchIngest(bench::IngestArgs),
    /// Wall time of a no-op `pvfsctl up` on 20 and 1,000 simulated nodes.
    BenchUp(bench::UpArgs),
    /// The built-in engine against fio, and against the real IOR and mdtest, on the same work
    /// and file system.
    BenchEngine(bench_engine::EngineArgs),
    /// Measure an idle agent's CPU and memory, and `pvfsctl nodes` latency against containers.
    BenchMesh(bench::Args),
    /// `pvfsctl bootstrap` on containers with and without one SSH connection per node: an
    /// ssh command's cost each way, whole runs, commands and logins per node, and an estimate
    /// for 16 and 200 nodes.
    BenchBootstrap(bench_bootstrap::Args),
    /// A real agent under floods (idle connections, half-open TLS handshakes, Metrics
    /// streams) on loopback: samples lost, `nodes`/Info latency, the agent's CPU and RSS.
    BenchFlood(bench_flood::FloodArgs),
    /// `pvfsctl serve` under a slowloris on its /metrics listener from many loopback
    /// addresses and from the scraper's own: scrapes answered, serve's CPU and RSS.
    BenchServeFlood(serve_flood::ServeFloodArgs),
    /// The real io500 against `pvfsctl bench --preset io500` on the same file system, with the
    /// same knobs: each phase and the score side by side, medians of interleaved rounds.
    BenchIo500(bench_io500::Io500Args),
    /// Build the real io500, IOR, mdtest and pfind from shared/vendor into target/vendor
    /// (kept once built) and print the io500 program's path.
    Vendor,
    /// The `fuzz_*` property tests (parsers, decoders, XML and metrics writers) with many
    /// cases, a new seed each round, until `--time` is up.
    Fuzz(fuzz::FuzzArgs),
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Ci { no_e2e } => ci::run(no_e2e),
        Command::Dist => dist::run().map(|_| ()),
        Command::OldGlibc { binary } => match binary {
            Some(binary) => glibc::run_on_old_glibc(&binary),
            None => dist::run().and_then(|d| glibc::run_on_old_glibc(&d.dir.join("bin/pvfs"))),
        },
        Command::E2e(args) => e2e::run(&args),
        Command::Accuracy => accuracy::run(),
        Command::BenchMesh(args) => bench::run(&args),
        Command::BenchBootstrap(args) => bench_bootstrap::run(&args),
        Command::BenchAgent(args) => bench_agent::run_agent(&args),
        Command::BenchIngest(args) => bench::run_ingest(&args),
        Command::BenchUp(args) => bench::run_up(&args),
        Command::BenchEngine(args) => bench_engine::run(&args),
        Command::BenchFlood(args) => bench_flood::run(&args),
        Command::BenchServeFlood(args) => serve_flood::run(&args),
        Command::Fuzz(args) => fuzz::run(&args),
        Command::Vendor => vendor::run(),
        Command::BenchIo500(args) => bench_io500::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
