//! `cargo xtask dist`: one directory (and tarball) with everything an installation needs, and
//! the same as a Debian package (see `deb`).

use crate::util::{self, cargo, read, step};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `dist` wrote.
pub struct Dist {
    /// `dist/pvfs-VERSION-ARCH-linux/`.
    pub dir: PathBuf,
    /// `dist/pvfs_VERSION_DEBARCH.deb`.
    pub deb: PathBuf,
}

/// Builds the binary as it ships (profile `dist`) and writes `dist/pvfs-VERSION-ARCH-linux/`, its tarball and the
/// Debian package (checked by reading it back).
pub fn run() -> anyhow::Result<Dist> {
    let binary = util::build_shipped()?;
    let agent = binary.with_file_name("pvfs-agent");
    // Before anything is packaged: both programs start on EL7's glibc, or nothing ships.
    for program in [&binary, &agent] {
        let glibc = crate::glibc::check_floor(program)?;
        eprintln!(
            "xtask dist: {} needs GLIBC_{} at most (EL7 has {})",
            program.display(),
            crate::glibc::join(&glibc),
            crate::glibc::join(&crate::glibc::FLOOR)
        );
    }
    let root = util::root();
    let version = version(&root)?;
    let arch = std::env::consts::ARCH;
    let name = format!("pvfs-{version}-{arch}-linux");
    let out = root.join("dist").join(&name);
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("clearing {}", out.display()))?;
    }
    let bin = out.join("bin");
    mkdir(&bin)?;
    copy(&binary, &bin.join("pvfs"))?;
    // `pvfs` answers to `pvfsctl` too (the name picks the personality); the agent is its own
    // program, a third the size, which is what nodes run.
    std::os::unix::fs::symlink("pvfs", bin.join("pvfsctl")).context("linking bin/pvfsctl")?;
    copy(&agent, &bin.join("pvfs-agent"))?;
    for program in ["pvfs", "pvfs-agent"] {
        split_line_tables(&bin, program)?;
    }
    mkdir(&out.join("systemd"))?;
    copy(&root.join("config/pvfs-agent.service"), &out.join("systemd/pvfs-agent.service"))?;
    copy(&root.join("config/pvfs-agent.env"), &out.join("systemd/agent.env"))?;
    mkdir(&out.join("examples"))?;
    for entry in std::fs::read_dir(root.join("config"))? {
        let path = entry?.path();
        // Not the state files `pvfsctl provision` writes beside a cluster file: they are the
        // user's, not examples.
        if path.extension().is_some_and(|e| e == "toml") && !path.to_string_lossy().ends_with(".state.toml") {
            copy(&path, &out.join("examples").join(path.file_name().unwrap_or_default()))?;
        }
    }
    for doc in ["README.md", "ARCHITECTURE.md"] {
        copy(&root.join(doc), &out.join(doc))?;
    }
    // Completions and man pages come from the binary's own command definitions.
    step(Command::new(bin.join("pvfsctl")).arg("generate").arg("--out").arg(&out))?;

    let tarball = root.join("dist").join(format!("{name}.tar.gz"));
    step(Command::new("tar").arg("-C").arg(root.join("dist")).arg("-czf").arg(&tarball).arg(&name))?;

    // The package is made from the same binary and generated files as the tarball.
    let inputs = crate::deb::Inputs {
        binary: &bin.join("pvfs"),
        agent: &bin.join("pvfs-agent"),
        generated: &out,
        version: &version,
        compression: crate::deb::Compression::Release,
        glibc: crate::deb::Glibc::Shipped,
    };
    let deb = crate::deb::build(&inputs, &root.join("target/deb"), &root.join("dist"))?;
    crate::deb::check(&deb, &version, crate::deb::Glibc::Shipped)?;
    eprintln!("xtask dist: wrote {}, {} and {}", out.display(), tarball.display(), deb.display());
    Ok(Dist { dir: out, deb })
}

/// The version of package pvfs, from cargo metadata.
pub fn version(root: &Path) -> anyhow::Result<String> {
    let meta = read(cargo().current_dir(root).args(["metadata", "--format-version", "1", "--no-deps"]))?;
    let meta: serde_json::Value = serde_json::from_str(&meta)?;
    meta["packages"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "pvfs"))
        .and_then(|p| p["version"].as_str())
        .map(str::to_owned)
        .context("no version for package pvfs in cargo metadata")
}

/// Moves `bin/PROGRAM`'s line tables to `bin/.debug/PROGRAM.debug`, leaving the program a
/// `.gnu_debuglink` to them (the name and a CRC), and checks that they are found through it.
///
/// `pvfsctl bootstrap` uploads the agent's program to every node that installs from the
/// tarball, and with its line tables in it that was 42.8 MB a node; without them it keeps its
/// symbols (a backtrace names functions) and std's backtraces, gdb and addr2line find the
/// file and line in `.debug/` beside it, where the tarball's own programs run.
fn split_line_tables(bin: &Path, program: &str) -> anyhow::Result<()> {
    let path = bin.join(program);
    let debug_dir = bin.join(".debug");
    mkdir(&debug_dir)?;
    let debug = debug_dir.join(format!("{program}.debug"));
    step(Command::new("objcopy").arg("--only-keep-debug").arg(&path).arg(&debug))?;
    step(
        Command::new("objcopy")
            .arg("--strip-debug")
            .arg(format!("--add-gnu-debuglink={}", debug.display()))
            .arg(&path),
    )?;
    let (kept, moved) = (util::sections(&path)?, util::sections(&debug)?);
    anyhow::ensure!(
        !kept.contains(".debug_line") && kept.contains(".gnu_debuglink") && moved.contains(".debug_line"),
        "{program}'s line tables were not moved to {}:\n{kept}\n{moved}",
        debug.display()
    );
    // Through the link: addr2line names a source line for one of the program's own functions.
    let symbols = read(Command::new("nm").args(["--defined-only", "--demangle"]).arg(&path))?;
    let addresses: Vec<&str> = symbols
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (address, kind, name) = (f.next()?, f.next()?, f.next()?);
            (matches!(kind, "t" | "T") && name.starts_with("pvfs")).then_some(address)
        })
        .take(50)
        .collect();
    let lines = read(Command::new("addr2line").arg("-e").arg(&path).args(&addresses))?;
    // "src/main.rs:42" or "src/main.rs:42 (discriminator 3)"; "??:0" or "file.rs:?" when not found.
    let has_line = |l: &str| {
        let place = l.split_whitespace().next().unwrap_or_default();
        !place.starts_with("??")
            && place.rsplit_once(':').is_some_and(|(_, n)| n.parse::<u32>().is_ok_and(|n| n > 0))
    };
    anyhow::ensure!(
        lines.lines().any(has_line),
        "addr2line finds no source line for {program}'s functions through its debug link:\n{lines}"
    );
    eprintln!(
        "xtask dist: {program} {:.1} MB, its line tables in .debug/{program}.debug ({:.1} MB)",
        size_mb(&path)?,
        size_mb(&debug)?
    );
    Ok(())
}

fn size_mb(path: &Path) -> anyhow::Result<f64> {
    Ok(std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?.len() as f64 / 1e6)
}

fn mkdir(path: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))
}

fn copy(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::copy(from, to)
        .map(|_| ())
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))
}

#[cfg(test)]
mod tests {
    /// A real program built with line tables (as `dist` builds): after the split, it is
    /// smaller, its own panic's backtrace still names the source line (std finds
    /// `.debug/NAME.debug` through the link), and without the debug file only the function.
    #[test]
    fn line_tables_moved_beside_the_program_are_still_found() {
        let work = crate::util::root().join(format!("target/split-test-{}", std::process::id()));
        std::fs::create_dir_all(&work).unwrap();
        let source = work.join("probe.rs");
        std::fs::write(
            &source,
            "#[inline(never)]\n#[unsafe(no_mangle)]\npub fn pvfs_probe(n: usize) -> usize {\n    if n > 0 { panic!(\"probe\") }\n    n\n}\n\
             fn main() { pvfs_probe(std::env::args().count()); }\n",
        )
        .unwrap();
        let bin = work.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let program = bin.join("pvfs-probe");
        crate::util::step(
            std::process::Command::new("rustc")
                .args(["--edition", "2024", "-C", "debuginfo=line-tables-only", "-o"])
                .arg(&program)
                .arg(&source),
        )
        .unwrap();
        let before = std::fs::metadata(&program).unwrap().len();
        super::split_line_tables(&bin, "pvfs-probe").unwrap();
        assert!(std::fs::metadata(&program).unwrap().len() < before / 2, "the program kept its line tables");
        let backtrace = || {
            let out = std::process::Command::new(&program).env("RUST_BACKTRACE", "1").output().unwrap();
            String::from_utf8_lossy(&out.stderr).into_owned()
        };
        // A frame's place is a line "at …/probe.rs:4:…" after its name (the panic message's
        // own "probe.rs:4:16" is data, there either way).
        let placed =
            |text: &str| text.lines().any(|l| l.trim_start().starts_with("at ") && l.contains("probe.rs:4"));
        let text = backtrace();
        assert!(text.contains("pvfs_probe") && placed(&text), "{text}");
        std::fs::remove_file(bin.join(".debug/pvfs-probe.debug")).unwrap();
        let text = backtrace();
        assert!(text.contains("pvfs_probe") && !placed(&text), "{text}");
        std::fs::remove_dir_all(&work).unwrap();
    }
}
