//! The shipped binary runs on glibc 2.17 and later (EL7, the seed's CentOS 7.3; EL8's 2.28;
//! Debian and Ubuntu of the last decade), whatever glibc the build machine has.
//!
//! - Built by `cargo zigbuild` for `x86_64-unknown-linux-gnu.2.17`: zig links against stubs of
//!   glibc 2.17's exported symbols, so each symbol binds to the newest version 2.17 had (a
//!   plain `cargo build` on Debian 12 binds `__libc_start_main@GLIBC_2.34`, `stat64@GLIBC_2.33`
//!   …), and C code (ring's) is compiled by `zig cc` against glibc 2.17's headers. Rust's std
//!   supports glibc 2.17 itself (the toolchain's own `libstd-*.so` needs at most GLIBC_2.16),
//!   and reaches newer calls (`statx`, `getrandom`, `copy_file_range`, `pidfd_*`) through
//!   `dlsym` or raw syscalls with fallbacks, not versioned symbols.
//! - Checked: no dynamic symbol of the binary names a `GLIBC_` version newer than [`FLOOR`]
//!   (`objdump -T`), in `dist` for the tarball's binary and in `deb::check` for the package's.
//! - Run: `cargo xtask ci` starts it in a chroot of the oldest Debian release the machine's apt
//!   mirror still carries ([`OLD_SUITE`]), with that release's older glibc (a real EL7 cannot
//!   be made from Debian's mirrors).
//!
//! The tools are pinned and installed here when missing, both from PyPI into one virtual
//! environment under `target/` (so no system Python is touched): zig as `ziglang`, and
//! cargo-zigbuild as its authors' own prebuilt wheel (`cargo install` compiled it on every
//! fresh CI machine: 3 min 45 s of CPU for a tool that wraps the linker).

use crate::util::{self, capture, read, step};
use anyhow::{Context, bail, ensure};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The oldest glibc the shipped binary may need: EL7's.
pub const FLOOR: [u32; 2] = [2, 17];
/// `pip install ziglang==…`. zig 0.16's glibc stubs and cargo-zigbuild's CI agree on it.
const ZIGLANG: &str = "0.16.0";
/// `pip install cargo-zigbuild==…` (the same release as on crates.io).
const CARGO_ZIGBUILD: &str = "0.24.1";
/// The oldest Debian release deb.debian.org still carries (glibc 2.31, older than any
/// release this project builds on: Debian 12 has 2.36). Jessie (2.19) and stretch (2.24) are
/// only on archive.debian.org, which the build machines cannot reach. When the mirror drops
/// this one, the check says so; move it to the next.
pub const OLD_SUITE: &str = "bullseye";

/// Rust's target for this machine; `cargo zigbuild` takes it with the glibc version appended.
pub fn target() -> String {
    format!("{}-unknown-linux-gnu", std::env::consts::ARCH)
}

/// A `cargo zigbuild` command, the tools installed first when missing.
pub fn zigbuild() -> anyhow::Result<Command> {
    let venv = ensure_tools()?;
    // The environment's own cargo-zigbuild, run as cargo runs a subcommand (`cargo zigbuild`
    // would look in ~/.cargo/bin first, where another version may be), with the cargo that
    // runs xtask.
    let mut cmd = Command::new(venv.join("bin/cargo-zigbuild"));
    cmd.arg("zigbuild").current_dir(util::root());
    if let Some(cargo) = std::env::var_os("CARGO") {
        cmd.env("CARGO", cargo);
    }
    // cargo-zigbuild runs `python3 -m ziglang` when no `zig` is on PATH; this one has it.
    cmd.env("CARGO_ZIGBUILD_PYTHON_PATH", venv.join("bin/python3"));
    Ok(cmd)
}

/// The tools' virtual environment, with `ziglang` at [`ZIGLANG`] and `cargo-zigbuild` at
/// [`CARGO_ZIGBUILD`] installed in it.
fn ensure_tools() -> anyhow::Result<PathBuf> {
    let venv = util::root().join("target/tools/ziglang");
    let python = venv.join("bin/python3");
    let zig = || {
        capture(Command::new(&python).args(["-m", "ziglang", "version"]))
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let zigbuild = || {
        capture(Command::new(venv.join("bin/cargo-zigbuild")).arg("--version"))
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let pinned = |v: Option<String>| v.is_some_and(|v| v.split_whitespace().any(|w| w == CARGO_ZIGBUILD));
    if zig().as_deref() == Some(ZIGLANG) && pinned(zigbuild()) {
        return Ok(venv);
    }
    if !util::have("python3") {
        util::ensure_programs(&[("python3", "python3")])?;
    }
    // Debian's python3 has no venv module of its own (python3-venv brings ensurepip).
    if !capture(Command::new("python3").args(["-c", "import ensurepip, venv"]))?.status.success() {
        util::ensure_packages(&["python3-venv"])?;
    }
    step(Command::new("python3").args(["-m", "venv", "--clear"]).arg(&venv))?;
    step(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .arg(format!("ziglang=={ZIGLANG}"))
            .arg(format!("cargo-zigbuild=={CARGO_ZIGBUILD}")),
    )?;
    let got = zig();
    ensure!(got.as_deref() == Some(ZIGLANG), "ziglang {ZIGLANG} installed, but zig says {got:?}");
    let got = zigbuild();
    ensure!(pinned(got.clone()), "cargo-zigbuild {CARGO_ZIGBUILD} installed, but it says {got:?}");
    Ok(venv)
}

/// The newest glibc symbol version in `objdump -T`'s listing, e.g. `[2, 17]`.
pub fn needed(objdump_t: &str) -> Option<Vec<u32>> {
    objdump_t
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter_map(|w| w.strip_prefix("GLIBC_"))
        .filter_map(|v| v.split('.').map(str::parse).collect::<Result<Vec<u32>, _>>().ok())
        .max()
}

/// The newest glibc symbol version `binary` needs, from `objdump -T`.
pub fn needed_by(binary: &Path) -> anyhow::Result<Vec<u32>> {
    let objdump = read(Command::new("objdump").arg("-T").arg(binary))?;
    needed(&objdump)
        .with_context(|| format!("objdump -T shows no GLIBC_ symbol versions in {}", binary.display()))
}

/// Fails, listing them, if any dynamic symbol of `binary` needs a glibc newer than [`FLOOR`].
pub fn check_floor(binary: &Path) -> anyhow::Result<Vec<u32>> {
    let objdump = read(Command::new("objdump").arg("-T").arg(binary))?;
    let newest = needed(&objdump).context("objdump -T shows no GLIBC_ symbol versions")?;
    if newest.as_slice() > FLOOR.as_slice() {
        let newer: Vec<&str> =
            objdump.lines().filter(|l| needed(l).is_some_and(|v| v.as_slice() > FLOOR.as_slice())).collect();
        bail!(
            "{} needs GLIBC_{} (EL7 has {}): it was not linked against glibc {} (cargo zigbuild --target …gnu.{}):\n{}",
            binary.display(),
            join(&newest),
            join(&FLOOR),
            join(&FLOOR),
            join(&FLOOR),
            newer.join("\n")
        );
    }
    Ok(newest)
}

pub fn join(version: &[u32]) -> String {
    version.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
}

/// Runs `binary` (all three names) in a chroot of Debian [`OLD_SUITE`], made with debootstrap
/// from this machine's mirror the first time and kept in `target/`: `--version`, the agent's
/// `--check-config` with real certificates, `validate` of the examples (not the Azure one,
/// which reads the operator's SSH public key), and `demo --once` (three
/// agents over mutual TLS, `up` twice, a benchmark, the report), with /proc, /sys and /dev
/// mounted in a private mount namespace so that the machine is left as it was. Needs root.
pub fn run_on_old_glibc(binary: &Path) -> anyhow::Result<()> {
    let root = old_root()?;
    let have = read(Command::new("chroot").arg(&root).args(["getconf", "GNU_LIBC_VERSION"]))?;
    eprintln!("xtask glibc: {OLD_SUITE} root at {} has {}", root.display(), have.trim());
    let work = root.join("pvfs-check");
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("clearing {}", work.display()))?;
    }
    std::fs::create_dir_all(work.join("bin"))?;
    std::fs::copy(binary, work.join("bin/pvfs")).context("copying the binary into the old root")?;
    std::os::unix::fs::symlink("pvfs", work.join("bin/pvfsctl"))?;
    // The agent's own program when the build has one (dist's), else the same program's name.
    let agent = pvfs_host::paths::agent_program(binary);
    if agent == binary {
        std::os::unix::fs::symlink("pvfs", work.join("bin/pvfs-agent"))?;
    } else {
        std::fs::copy(&agent, work.join("bin/pvfs-agent")).context("copying the agent into the old root")?;
    }
    std::fs::create_dir_all(work.join("examples"))?;
    for entry in std::fs::read_dir(util::root().join("config"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "toml" || e == "auth") {
            std::fs::copy(&path, work.join("examples").join(path.file_name().unwrap_or_default()))?;
        }
    }
    let script = r#"set -e
cd /pvfs-check
bin/pvfsctl --version
bin/pvfs-agent --version
bin/pvfs ctl --version
bin/pvfsctl ca init --dir tls
bin/pvfsctl ca issue node1 --dir tls --san 127.0.0.1
bin/pvfs-agent --check-config --tls-dir tls --name node1 --state-dir state --listen 127.0.0.1:0
for f in examples/*.toml; do case "$f" in *.state.toml|*policy*|*azure*) continue ;; esac; bin/pvfsctl validate "$f" >/dev/null; done
bin/pvfsctl demo --once --dir demo >demo.log 2>&1 || { tail -n 40 demo.log; exit 1; }
tail -n 3 demo.log
"#;
    // The namespace's mounts go with it; /dev and /sys are bound read-only where they can be.
    let mounts = format!(
        "mount -t proc proc '{r}/proc' && mount --rbind /sys '{r}/sys' && mount --rbind /dev '{r}/dev' \
         && mount -t tmpfs tmpfs '{r}/tmp' && exec chroot '{r}' /bin/sh -c '{script}'",
        r = root.display(),
        script = script.replace('\'', r"'\''")
    );
    eprintln!(
        "$ (in {OLD_SUITE}: {}) {}",
        have.trim(),
        script.lines().skip(2).collect::<Vec<_>>().join("; ")
    );
    let out =
        capture(Command::new("unshare").args(["--mount", "--propagation", "private", "sh", "-c", &mounts]))?;
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        bail!("the shipped binary failed on {OLD_SUITE}'s {}:\n{said}", have.trim());
    }
    eprintln!("{}", said.trim_end());
    eprintln!("xtask glibc: the shipped binary ran on {OLD_SUITE} ({})", have.trim());
    std::fs::remove_dir_all(&work).ok();
    Ok(())
}

/// `target/old-glibc/OLD_SUITE`, debootstrapped (minbase) the first time.
pub fn old_root() -> anyhow::Result<PathBuf> {
    let root = util::root().join("target/old-glibc").join(OLD_SUITE);
    let done = root.join(".pvfs-debootstrap-done");
    if done.exists() {
        return Ok(root);
    }
    util::ensure_programs(&[("debootstrap", "debootstrap"), ("unshare", "util-linux")])?;
    if root.exists() {
        std::fs::remove_dir_all(&root).with_context(|| format!("clearing {}", root.display()))?;
    }
    std::fs::create_dir_all(&root)?;
    let (mirror, _) = crate::image::apt_source()?;
    eprintln!("xtask glibc: making a Debian {OLD_SUITE} root (debootstrap --variant=minbase from {mirror})");
    let made =
        step(Command::new("debootstrap").args(["--variant=minbase", OLD_SUITE]).arg(&root).arg(&mirror));
    if let Err(err) = made {
        bail!(
            "{err:#}\n{mirror} may no longer carry Debian {OLD_SUITE}; set glibc::OLD_SUITE to the oldest \
             release it does carry"
        );
    }
    std::fs::write(&done, "")?;
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_version_is_the_newest_symbol_version() {
        // Lines as objdump -T (binutils 2.40) prints them for a Rust binary.
        let out = "\
0000000000000000      DF *UND*	0000000000000000 (GLIBC_2.2.5) write
0000000000000000      DF *UND*	0000000000000000 (GLIBC_2.34) __libc_start_main
0000000000000000      DF *UND*	0000000000000000 (GLIBC_2.9)  pipe2
0000000000000000      DF *UND*	0000000000000000 (GCC_3.0)    _Unwind_Resume
";
        assert_eq!(needed(out), Some(vec![2, 34]));
        assert_eq!(needed("no versions here"), None);
        // Weak references count too: objdump lists them as any other.
        let weak = "0000000000000000  w   DF *UND*	0000000000000000 (GLIBC_2.28) statx\n";
        assert_eq!(needed(weak), Some(vec![2, 28]));
    }

    /// The rule against a real binary: this test program is built by plain cargo, against
    /// this machine's glibc; on Debian 12 it needs 2.34 and is refused, naming the symbols.
    #[test]
    fn a_binary_linked_against_a_newer_glibc_is_refused_naming_its_symbols() {
        let exe = std::env::current_exe().unwrap();
        let newest = needed_by(&exe).unwrap();
        match check_floor(&exe) {
            Ok(v) => assert!(v.as_slice() <= FLOOR.as_slice() && v == newest),
            Err(err) => {
                let text = format!("{err:#}");
                assert!(text.contains(&format!("needs GLIBC_{}", join(&newest))), "{text}");
                assert!(
                    text.contains(&format!("(GLIBC_{})", join(&newest))),
                    "the symbols are listed: {text}"
                );
            }
        }
    }
}
