//! Running commands with their output shown or captured, and errors that name the command.

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The workspace root (xtask lives one level below it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask is inside the workspace").to_owned()
}

pub fn shown(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        s.push(' ');
        s.push_str(&arg.to_string_lossy());
    }
    s
}

/// Runs `cmd` with its output going to the terminal; fails unless it exits 0.
pub fn step(cmd: &mut Command) -> anyhow::Result<()> {
    let line = shown(cmd);
    eprintln!("$ {line}");
    let status = cmd.status().with_context(|| format!("cannot start `{line}`"))?;
    if !status.success() {
        bail!("`{line}` failed: {status}");
    }
    Ok(())
}

/// Runs `cmd` and returns its stdout; fails (with stderr) unless it exits 0.
pub fn read(cmd: &mut Command) -> anyhow::Result<String> {
    let out = capture(cmd)?;
    if !out.status.success() {
        bail!("`{}` failed: {}\n{}", shown(cmd), out.status, String::from_utf8_lossy(&out.stderr).trim_end());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// An ELF file's section headers as `readelf -S -W` lists them (what is stripped, what is not).
pub fn sections(file: &Path) -> anyhow::Result<String> {
    read(Command::new("readelf").args(["-S", "-W"]).arg(file))
}

/// Runs `cmd`, capturing everything, whatever its exit status.
pub fn capture(cmd: &mut Command) -> anyhow::Result<Output> {
    cmd.stdin(Stdio::null()).output().with_context(|| format!("cannot start `{}`", shown(cmd)))
}

/// Builds the binaries as they ship (cargo profile `dist`: fat LTO, one codegen unit; linked by
/// zig against glibc 2.17, see `glibc`) and returns the path of `pvfs`,
/// `target/x86_64-unknown-linux-gnu/dist/pvfs`, with `pvfs-agent` beside it (`pvfs_host::paths::agent_program`):
/// what `dist` packages and the benchmarks measure.
pub fn build_shipped() -> anyhow::Result<PathBuf> {
    let target = crate::glibc::target();
    let with_glibc = format!("{target}.{}", crate::glibc::join(&crate::glibc::FLOOR));
    // The tools first (installed when missing), then the clock.
    let mut zigbuild = crate::glibc::zigbuild()?;
    let started = std::time::Instant::now();
    step(zigbuild.args([
        "--profile",
        "dist",
        "--locked",
        "-p",
        "pvfs",
        "--bin",
        "pvfs",
        "--bin",
        "pvfs-agent",
        "--target",
        &with_glibc,
    ]))?;
    eprintln!("xtask: the shipped binary built in {:.0}s", started.elapsed().as_secs_f64());
    // cargo-zigbuild strips the glibc suffix: the directory is the plain target's.
    Ok(root().join("target").join(target).join("dist/pvfs"))
}

/// The arguments before the agent's own for `agent` (from `pvfs_host::paths::agent_program`): `agent` when it
/// is the whole program run by another name, none when it is the agent's.
pub fn agent_args(agent: &Path) -> &'static [&'static str] {
    if agent.file_name().is_some_and(|n| n == "pvfs-agent") { &[] } else { &["agent"] }
}

/// `target/debug/pvfs-agent`, built as the workspace's tests build it (`--workspace --exclude
/// pvfs-azure --tests`): right after `cargo nextest run` a no-op, where `-p pvfs --bin
/// pvfs-agent` alone resolves its dependencies' features without the dev-dependencies' and
/// rebuilds them (39 s of CI's, on its critical path).
pub fn debug_agent() -> anyhow::Result<PathBuf> {
    step(cargo().args(["build", "--locked", "--workspace", "--exclude", "pvfs-azure", "--tests"]))?;
    Ok(root().join("target/debug/pvfs-agent"))
}

pub fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// A child process killed (and reaped) when dropped, so a failing step leaves nothing running.
pub struct KillOnDrop(pub std::process::Child);

impl KillOnDrop {
    /// Starts `cmd` with its output discarded.
    pub fn spawn(cmd: &mut Command) -> anyhow::Result<KillOnDrop> {
        let line = shown(cmd);
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start `{line}`"))?;
        Ok(KillOnDrop(child))
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A TCP port free on loopback right now.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Whether `program` is on PATH.
pub fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Installs Debian packages (for what no program on PATH shows, such as a Python module).
/// Needs root; says exactly what to install otherwise.
pub fn ensure_packages(packages: &[&str]) -> anyhow::Result<()> {
    let is_root = read(Command::new("id").arg("-u")).map(|s| s.trim() == "0").unwrap_or(false);
    if !is_root {
        bail!("missing packages: install them with: sudo apt-get install -y {}", packages.join(" "));
    }
    step(Command::new("apt-get").arg("update").arg("-q"))?;
    step(
        Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// Installs Debian packages that provide missing programs (`(program, package)` pairs).
/// Needs root; says exactly what to install otherwise.
pub fn ensure_programs(needed: &[(&str, &str)]) -> anyhow::Result<()> {
    let missing: Vec<&str> = needed.iter().filter(|(prog, _)| !have(prog)).map(|(_, pkg)| *pkg).collect();
    if missing.is_empty() {
        return Ok(());
    }
    ensure_packages(&missing)
}

/// The median (the upper of the two middles of an even count); NaN for none (printed as
/// such: a figure a tool never reported).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// A 95 % bootstrap interval of `median(a) / median(b)`: both resampled with replacement,
/// 2,000 times, from a fixed seed (so a rerun on the same figures prints the same interval).
/// Written here because it is twenty lines and no crate is worth its build for it.
pub fn ratio_interval(a: &[f64], b: &[f64]) -> (f64, f64) {
    if a.is_empty() || b.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    // xorshift64*: deterministic, and good enough to pick indices.
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut pick = |n: usize| {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    };
    let mut ratios: Vec<f64> = (0..2000)
        .map(|_| {
            let mut ra: Vec<f64> = (0..a.len()).map(|_| a[pick(a.len())]).collect();
            let mut rb: Vec<f64> = (0..b.len()).map(|_| b[pick(b.len())]).collect();
            median(&mut ra) / median(&mut rb)
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    (ratios[50], ratios[1949])
}

/// A fresh `target/NAME` for a benchmark, with a cluster CA made by `binary` in its `tls/`, a
/// certificate for `pvfsctl`, and one for each of `agents` valid for 127.0.0.1. Returns the
/// directory and the TLS directory's path as an argument.
pub fn bench_dir(binary: &Path, name: &str, agents: &[&str]) -> anyhow::Result<(PathBuf, String)> {
    let dir = root().join("target").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let tls = dir.join("tls").to_string_lossy().into_owned();
    read(Command::new(binary).args(["ctl", "ca", "init", "--dir", &tls]))?;
    read(Command::new(binary).args(["ctl", "ca", "issue", "pvfsctl", "--dir", &tls]))?;
    for agent in agents {
        read(Command::new(binary).args(["ctl", "ca", "issue", agent, "--dir", &tls, "--san", "127.0.0.1"]))?;
    }
    Ok((dir, tls))
}
