//! `cargo xtask ci`: what CI runs, in order, stopping at the first failure.

use crate::util::{self, cargo, step};
use anyhow::{Context, bail};
use std::process::Command;

pub fn run(no_e2e: bool) -> anyhow::Result<()> {
    // Tools the checks use, from Debian's packages on a fresh machine.
    let mut needed = vec![
        ("systemd-analyze", "systemd"),
        ("unshare", "util-linux"),
        ("blkid", "util-linux"),
        // The device rules' tests and the agent's stop-mid-mkfs tests run on real loop devices:
        // made, formatted, mounted, swapped.
        ("wipefs", "util-linux"),
        ("mkswap", "util-linux"),
        ("losetup", "mount"),
        ("mkfs.ext4", "e2fsprogs"),
        ("iostat", "sysstat"),
        ("fio", "fio"),
        // The mpi launcher's tests run real mpirun.
        ("mpirun", "openmpi-bin"),
        // `pvfsctl bootstrap` drives the system's OpenSSH client; `up` with `[bench] mpi_ssh`
        // makes the cluster's MPI key with ssh-keygen.
        ("ssh", "openssh-client"),
        ("ssh-keygen", "openssh-client"),
        // The Debian package: its Depends from the libraries' symbols files, the glibc check,
        // and Debian's own linter on the result.
        ("dpkg-shlibdeps", "dpkg-dev"),
        ("objdump", "binutils"),
        // The tarball's programs with their line tables moved beside them, and checked.
        ("objcopy", "binutils"),
        ("addr2line", "binutils"),
        ("lintian", "lintian"),
        // The node image, and the older Debian root the shipped binary is run in.
        ("debootstrap", "debootstrap"),
        // The web view's test opens it in a real headless browser.
        ("chromium", "chromium"),
        ("chromedriver", "chromium-driver"),
        // serve's gmetad ports are polled by a real gmetad, whose RRDs are read with rrdtool.
        ("gmetad", "gmetad"),
        ("rrdtool", "rrdtool"),
    ];
    if !no_e2e {
        needed.push(("docker", "docker.io"));
    }
    util::ensure_programs(&needed)?;
    // The Grafana dashboard's test checks it against Grafana's schema with Debian's python3
    // (a module, which no program on PATH shows).
    let has_jsonschema = Command::new("/usr/bin/python3")
        .args(["-c", "import jsonschema"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_jsonschema {
        util::ensure_packages(&["python3-jsonschema"])?;
    }
    // Where the run's time goes, step by step (issue 30's CI time), told at the end whether
    // it passed or not.
    let mut clock = Clock::new();
    let outcome = checks(no_e2e, &mut clock);
    clock.tell();
    outcome?;
    // The web view's tests leave screenshots of each view for a person to look at.
    let shots = util::root().join("target/screenshots");
    if let Ok(entries) = std::fs::read_dir(&shots) {
        eprintln!("xtask ci: {} screenshots of the web view in {}", entries.count(), shots.display());
    }
    eprintln!("xtask ci: all checks passed");
    Ok(())
}

/// Each step's wall time, in the order they ran (steps run beside another overlap it, so
/// their times add up to more than the run's).
struct Clock {
    started: std::time::Instant,
    steps: Vec<(&'static str, std::time::Duration)>,
}

impl Clock {
    fn new() -> Clock {
        Clock { started: std::time::Instant::now(), steps: Vec::new() }
    }

    /// Runs `step`, keeping its time under `name`.
    fn time<T>(&mut self, name: &'static str, step: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
        let started = std::time::Instant::now();
        let out = step();
        self.steps.push((name, started.elapsed()));
        out
    }

    /// Runs `long` on a thread of its own while `beside` runs here (each of its steps timed
    /// as usual), and keeps `long`'s time under `name` once both are done. Both run to the
    /// end whatever the other does; `beside`'s failure is told first.
    fn beside<T: Send>(
        &mut self,
        name: &'static str,
        long: impl FnOnce() -> anyhow::Result<T> + Send,
        beside: impl FnOnce(&mut Clock) -> anyhow::Result<()>,
    ) -> anyhow::Result<T> {
        std::thread::scope(|scope| {
            let thread = scope.spawn(|| {
                let started = std::time::Instant::now();
                (long(), started.elapsed())
            });
            let others = beside(self);
            let (out, took) = thread.join().map_err(|_| anyhow::anyhow!("{name}: its thread panicked"))?;
            self.steps.push((name, took));
            others?;
            out
        })
    }

    fn tell(&self) {
        let total = self.started.elapsed().as_secs_f64();
        eprintln!("xtask ci: where the time went ({:.1} min in all, by the wall clock):", total / 60.0);
        for (name, took) in &self.steps {
            let s = took.as_secs_f64();
            eprintln!("  {name:<40} {:>7.1} min {:>5.1} %", s / 60.0, 100.0 * s / total.max(1e-9));
        }
    }
}

/// The checks after the tools are in place, each timed by `clock`.
fn checks(no_e2e: bool, clock: &mut Clock) -> anyhow::Result<()> {
    // The real io500 (and IOR, mdtest, pfind) from shared/vendor, which `--engine io500`'s
    // tests run: ~30 s, before the build so a missing archive is said first.
    clock.time("vendor: io500, IOR, mdtest, pfind", crate::vendor::build)?;
    free_disk("before the build");
    if !util::have("cargo-nextest") {
        clock
            .time("install cargo-nextest", || step(cargo().args(["install", "--locked", "cargo-nextest"])))?;
    }

    clock.time("fmt", || step(cargo().args(["fmt", "--all", "--check"])))?;
    // The Azure SDK (pvfs-azure, pvfs's `azure` feature) is checked in its own steps below, so
    // that the workspace's checks build what the agent builds.
    clock.time("clippy (builds the workspace)", || {
        step(cargo().args([
            "clippy",
            "--workspace",
            "--exclude",
            "pvfs-azure",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ]))
    })?;
    free_disk("after the build");
    clock.time("nextest (build and run)", || {
        step(cargo().args([
            "nextest",
            "run",
            "--workspace",
            "--exclude",
            "pvfs-azure",
            "--locked",
            "--no-fail-fast",
        ]))
    })?;
    // Before the Azure step, whose build relinks target/debug's binaries with its features.
    clock.time("systemd unit", verify_unit)?;
    // Alone: it compares CPU columns with sysstat's to a percentage point, which a build
    // beside it would move between their reads.
    clock.time("accuracy (against sysstat)", crate::accuracy::run)?;
    // The shipped build is the longest step, and for its last third (the fat-LTO link, one
    // codegen unit) it keeps one core busy: the Azure checks and the images the later steps
    // run in are made beside it. (dist builds in target/x86_64-…/dist, the Azure checks in
    // target/debug: cargo's locks are per directory, so neither waits for the other.) Also
    // installs zig and cargo-zigbuild (PyPI), pinned, when missing.
    let dist = clock.beside("dist (fat LTO, glibc 2.17; beside the next)", crate::dist::run, |clock| {
        clock.time("azure (beside dist)", azure)?;
        if !no_e2e {
            clock.time("node image (beside dist)", || crate::image::ensure().map(drop))?;
        }
        clock.time("old glibc root (beside dist)", || crate::glibc::old_root().map(drop))
    })?;
    clock.time("lintian", || lintian(&dist.deb))?;
    clock.time("old glibc", || crate::glibc::run_on_old_glibc(&dist.dir.join("bin/pvfs")))?;
    if !no_e2e {
        clock.time("e2e (containers)", || {
            crate::e2e::run_with_binary(&dist.dir.join("bin/pvfs"), &crate::e2e::Args::default())
        })?;
    }
    Ok(())
}

/// `pvfsctl provision`'s Azure support: pvfs-azure's tests against its fake ARM, and pvfs
/// with the `azure` feature (clippy of everything, and the CLI's Azure tests).
///
/// pvfs-azure and pvfs are built together, in one feature set: cargo unifies features per
/// invocation, and pvfs-azure on its own resolves 16 of its dependencies' features otherwise
/// (serde_core, syn, tokio's mio, hyper, …), so checking it alone rebuilt its whole graph a
/// second time, and its tests a third and fourth.
fn azure() -> anyhow::Result<()> {
    // `azure` with the fake ARM the CLI's `provision --plan` test talks to.
    const FEATURES: &str = "pvfs/azure-fake";
    step(cargo().args([
        "clippy",
        "-p",
        "pvfs-azure",
        "-p",
        "pvfs",
        "--features",
        FEATURES,
        "--all-targets",
        "--locked",
        "--",
        "-D",
        "warnings",
    ]))?;
    // The feature users build (`--features azure`, without the fake): a check only (its
    // dependencies without the dev-dependencies' features re-checked, ~1 min here).
    step(cargo().args(["check", "-p", "pvfs", "--features", "azure", "--locked"]))?;
    step(cargo().args([
        "nextest",
        "run",
        "-p",
        "pvfs-azure",
        "-p",
        "pvfs",
        "--features",
        FEATURES,
        "--locked",
        "--no-fail-fast",
        "-E",
        "package(pvfs-azure) or (binary(cli) and test(/azure/))",
    ]))
}

/// Prints the free space where the build and the tests write, so that a run that fails on a
/// full disk (tests writing files fail with ENOSPC) says so in its log.
fn free_disk(when: &str) {
    let mut df = Command::new("df");
    df.args(["-h", "--output=target,avail,size"]).arg(util::root()).arg(std::env::temp_dir());
    match util::capture(&mut df) {
        Ok(out) => {
            eprintln!("xtask ci: free disk {when}:\n{}", String::from_utf8_lossy(&out.stdout).trim_end())
        }
        Err(err) => eprintln!("xtask ci: free disk {when}: unknown ({err:#})"),
    }
}

/// `systemd-analyze verify` on the unit, with the freshly built agent at the path the unit
/// names. The binary is placed there inside a private mount namespace (a tmpfs over
/// /usr/local/bin that only this command sees), so the machine is left as it was. Any
/// warning fails the check, not only errors.
fn verify_unit() -> anyhow::Result<()> {
    // The agent nextest has just built, in its feature set.
    let agent = util::debug_agent()?;
    let unit = util::root().join("config/pvfs-agent.service");
    let script = format!(
        "mount -t tmpfs tmpfs /usr/local/bin && cp '{}' /usr/local/bin/pvfs-agent && systemd-analyze verify --man=no '{}'",
        agent.display(),
        unit.display()
    );
    eprintln!("$ systemd-analyze verify config/pvfs-agent.service");
    let out = util::capture(Command::new("unshare").args(["--mount", "sh", "-c", &script]))
        .context("verifying the unit")?;
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() || !said.trim().is_empty() {
        bail!("systemd-analyze verify found problems in config/pvfs-agent.service:\n{said}");
    }
    Ok(())
}

/// Debian's linter on the package: errors fail the check; the warnings left are overridden in
/// packaging/deb/lintian-overrides, each with its reason, so any new one shows here.
fn lintian(deb: &std::path::Path) -> anyhow::Result<()> {
    step(Command::new("lintian").args(["--fail-on", "error,warning", "--display-info"]).arg(deb))
}
