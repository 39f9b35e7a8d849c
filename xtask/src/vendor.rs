//! `cargo xtask vendor`: the real io500, IOR, mdtest and pfind, built from the unmodified
//! source snapshots in the workplace's `shared/vendor` (see its MANIFEST.md) into
//! `target/vendor/`, never into the repository. The tests that run the real io500 under
//! `--engine io500` and `bench-io500` use what this builds; `xtask ci` builds it first.
//!
//! The steps are io500's own `prepare.sh`'s, without its `git clone`s (these machines reach
//! no git host): IOR from its archive into io500's `build/ior` (`./bootstrap`, `./configure
//! --prefix`, `make install` in `src`), pfind into `build/pfind` (its `compile.sh`, without
//! lz4, which prepare.sh fetches and pfind treats as optional), then io500's Makefile. About
//! 30 s on two cores; a finished build is kept (`.built`), keyed by the three archives' names.

use crate::util::{self, step};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The archives, as MANIFEST.md names them: io500 02091cf, the IOR it pins, pfind.
const IO500: &str = "io500-02091cf.tar.gz";
const IOR: &str = "ior-5fcf0ba.tar.gz";
const PFIND: &str = "pfind-aaba722.tar.gz";

/// io500's commit as its Makefile would print it (`git describe --abbrev=12`).
const IO500_COMMIT: &str = "02091cf254d8";

/// This recipe's revision, in the build's directory name: a changed recipe builds anew.
const RECIPE: u32 = 2;

/// Debian's packages the build needs: autotools for IOR, mpicc, `-lefence` (io500's
/// Makefile links it).
const PACKAGES: [&str; 6] =
    ["autoconf", "automake", "libtool", "pkg-config", "libopenmpi-dev", "electric-fence"];

/// Where the vendor archives are: `PVFS_VENDOR`, else the workplace's `shared/vendor` beside
/// the repository.
pub fn sources() -> anyhow::Result<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var_os("PVFS_VENDOR") {
        Some(dir) => vec![PathBuf::from(dir)],
        // Beside the repository, as the workplace lays it out, or at the workplace's own place
        // (a clone made elsewhere).
        None => vec![util::root().join("../shared/vendor"), PathBuf::from("/work/shared/vendor")],
    };
    match candidates.iter().find(|dir| dir.join(IO500).is_file()) {
        Some(dir) => Ok(dir.clone()),
        None => anyhow::bail!(
            "no {IO500} in {}: the vendor archives (IOR, io500, pfind; see shared/vendor/MANIFEST.md) are \
             needed to build the real io500; set PVFS_VENDOR to their directory",
            candidates.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(" or ")
        ),
    }
}

/// The built tree: `io500/io500`, and `io500/bin/{ior,mdtest,pfind}`.
pub fn built_dir() -> PathBuf {
    util::root().join("target/vendor").join(format!(
        "{}+{}+{}-r{RECIPE}",
        IO500.trim_end_matches(".tar.gz"),
        IOR.trim_end_matches(".tar.gz"),
        PFIND.trim_end_matches(".tar.gz")
    ))
}

/// Builds the tools once (kept in [`built_dir`]) and returns the io500 program's path.
pub fn build() -> anyhow::Result<PathBuf> {
    let out = built_dir();
    let io500 = out.join("io500/io500");
    if out.join(".built").is_file() && io500.is_file() {
        return Ok(io500);
    }
    let sources = sources()?;
    if !util::have("mpicc") || !util::have("autoreconf") {
        util::ensure_packages(&PACKAGES)?;
    }
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    std::fs::create_dir_all(&out)?;
    untar(&sources.join(IO500), &out)?;
    let top = out.join("io500");
    let build = top.join("build");
    std::fs::create_dir_all(&build)?;
    untar(&sources.join(IOR), &build)?;
    untar(&sources.join(PFIND), &build)?;
    let jobs = format!("-j{}", std::thread::available_parallelism().map_or(2, |n| n.get()));
    let ior = build.join("ior");
    step(Command::new("./bootstrap").current_dir(&ior))?;
    step(Command::new("./configure").arg(format!("--prefix={}", top.display())).current_dir(&ior))?;
    step(Command::new("make").args([jobs.as_str(), "install"]).current_dir(ior.join("src")))?;
    step(Command::new("./compile.sh").current_dir(build.join("pfind")))?;
    std::os::unix::fs::symlink(build.join("pfind/pfind"), top.join("bin/pfind"))
        .context("linking bin/pfind")?;
    // io500's Makefile takes its version from `git describe`, which inside this repository
    // would name pvfs's commit: the archive's own is given instead.
    step(Command::new("make").arg(&jobs).arg(format!("VERSION={IO500_COMMIT}")).current_dir(&top))?;
    if !io500.is_file() {
        anyhow::bail!("io500's make finished but {} is missing", io500.display());
    }
    // The archives' modes are kept by tar as root (io500's tree is 775): as an install would,
    // none of it writable by group or others, or the agent refuses to run it as root.
    step(Command::new("chmod").args(["-R", "go-w"]).arg(&out))?;
    std::fs::write(out.join(".built"), "")?;
    Ok(io500)
}

fn untar(archive: &Path, into: &Path) -> anyhow::Result<()> {
    step(Command::new("tar").arg("-xzf").arg(archive).arg("-C").arg(into))
}

/// `cargo xtask vendor`.
pub fn run() -> anyhow::Result<()> {
    let io500 = build()?;
    println!("{}", io500.display());
    Ok(())
}
