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

fn mkdir(path: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))
}

fn copy(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::copy(from, to)
        .map(|_| ())
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))
}
