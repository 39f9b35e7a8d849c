//! The Debian package `pvfs_VERSION_ARCH.deb`, laid out by hand and built with Debian's own
//! `dpkg-deb --build --root-owner-group` (no packaging crate, no debhelper), and [`check`]ed by
//! reading the built file back with `dpkg-deb --info/--contents`.
//!
//! What goes where (Debian 12's paths):
//! - `/usr/bin/pvfs` (stripped), with `pvfsctl` a symlink to it (the name picks the
//!   personality), and `/usr/bin/pvfs-agent` (stripped), the agent's own program;
//! - `/lib/systemd/system/pvfs-agent.service`: config/pvfs-agent.service with the binary at
//!   `/usr/bin` (a package never installs into `/usr/local`);
//! - `/etc/pvfs/agent.env`, a conffile (an administrator's edits survive upgrades), in a 0700
//!   `/etc/pvfs`, where the certificates go;
//! - completions (bash, zsh, fish) and gzipped man pages, both from `pvfsctl generate`;
//! - README, ARCHITECTURE, the example cluster files, `copyright` and `changelog.gz` under
//!   `/usr/share/doc/pvfs`;
//! - maintainer scripts from packaging/deb/ (see postinst for when the agent is started).

use crate::util::{self, read, step};
use anyhow::{Context, bail, ensure};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The systemd unit as the package installs it.
pub const UNIT_PATH: &str = "lib/systemd/system/pvfs-agent.service";
/// The environment file the unit reads, the package's only conffile.
pub const CONFFILE: &str = "/etc/pvfs/agent.env";
const MAINTAINER: &str = "Seed 1d42de57 maintainers <maintainers@users.noreply.a-seed-1d42de57.example>";

/// How hard `dpkg-deb` compresses: a release is built once and downloaded many times; the e2e
/// package (a debug binary of a few hundred MB) is built on every run and installed once.
#[derive(Clone, Copy, Debug)]
pub enum Compression {
    /// xz, dpkg-deb's default.
    Release,
    /// gzip -1.
    Fast,
}

/// What goes into the package.
pub struct Inputs<'a> {
    pub binary: &'a Path,
    /// The agent's program: `pvfs-agent` of the same build, or `binary` itself (which runs as
    /// the agent by that name).
    pub agent: &'a Path,
    /// A directory with `completions/` and `man/` as `pvfsctl generate --out` writes them.
    pub generated: &'a Path,
    pub version: &'a str,
    pub compression: Compression,
    /// Which build the binary is, for its libc6 dependency ([`shlib_depends`]) and [`check`].
    pub glibc: Glibc,
}

/// Builds the package in `work` (cleared first) and writes it to `out_dir`; returns its path.
pub fn build(inputs: &Inputs<'_>, work: &Path, out_dir: &Path) -> anyhow::Result<PathBuf> {
    let repo = util::root();
    let arch = architecture()?;
    if work.exists() {
        std::fs::remove_dir_all(work).with_context(|| format!("clearing {}", work.display()))?;
    }
    // dpkg-shlibdeps wants the tree at debian/PACKAGE and a debian/control beside it.
    let pkg = work.join("debian/pvfs");

    let bin = pkg.join("usr/bin");
    mkdir(&bin)?;
    copy(inputs.binary, &bin.join("pvfs"), 0o755)?;
    copy(inputs.agent, &bin.join("pvfs-agent"), 0o755)?;
    // Stripped as dh_strip strips executables (Debian policy 10.1): the package carries no
    // debug sections. Panic messages keep their file:line (those are data, not debug info);
    // the tarball's binaries keep their line tables for symbolised backtraces.
    for program in ["pvfs", "pvfs-agent"] {
        step(
            Command::new("strip")
                .args(["--remove-section=.comment", "--remove-section=.note"])
                .arg(bin.join(program)),
        )?;
    }
    std::os::unix::fs::symlink("pvfs", bin.join("pvfsctl")).context("linking usr/bin/pvfsctl")?;

    let unit = std::fs::read_to_string(repo.join("config/pvfs-agent.service"))
        .context("reading config/pvfs-agent.service")?;
    mkdir(&pkg.join("lib/systemd/system"))?;
    write(&pkg.join(UNIT_PATH), &packaged_unit(&unit)?, 0o644)?;

    let etc = pkg.join("etc/pvfs");
    mkdir(&etc)?;
    // Certificates and keys go here; postinst keeps it 0700 too.
    chmod(&etc, 0o700)?;
    copy(&repo.join("config/pvfs-agent.env"), &pkg.join(CONFFILE.trim_start_matches('/')), 0o644)?;

    install_generated(inputs.generated, &pkg)?;

    let doc = pkg.join("usr/share/doc/pvfs");
    mkdir(&doc.join("examples"))?;
    for file in ["README.md", "ARCHITECTURE.md"] {
        copy(&repo.join(file), &doc.join(file), 0o644)?;
    }
    for path in example_files(&repo)? {
        copy(&path, &doc.join("examples").join(path.file_name().unwrap_or_default()), 0o644)?;
    }
    write(&doc.join("copyright"), &copyright(&copyright_years(&repo)), 0o644)?;
    write(&doc.join("changelog"), &changelog(inputs.version), 0o644)?;
    gzip(&doc.join("changelog"))?;

    // The lintian overrides, with the reasons in the file.
    let overrides = pkg.join("usr/share/lintian/overrides");
    mkdir(&overrides)?;
    copy(&repo.join("packaging/deb/lintian-overrides"), &overrides.join("pvfs"), 0o644)?;

    let control_dir = pkg.join("DEBIAN");
    mkdir(&control_dir)?;
    for script in ["postinst", "prerm", "postrm"] {
        copy(&repo.join("packaging/deb").join(script), &control_dir.join(script), 0o755)?;
    }
    write(&control_dir.join("conffiles"), &format!("{CONFFILE}\n"), 0o644)?;
    let depends = shlib_depends(work, &[bin.join("pvfs"), bin.join("pvfs-agent")], inputs.glibc)?;
    let control = control(inputs.version, &arch, &depends, installed_size(&pkg)?);
    write(&control_dir.join("control"), &control, 0o644)?;
    write(&control_dir.join("md5sums"), &md5sums(&pkg)?, 0o644)?;

    mkdir(out_dir)?;
    let deb = out_dir.join(format!("pvfs_{}_{arch}.deb", inputs.version));
    let mut cmd = Command::new("dpkg-deb");
    cmd.args(["--build", "--root-owner-group"]);
    match inputs.compression {
        Compression::Release => cmd.arg("-Zxz"),
        Compression::Fast => cmd.args(["-Zgzip", "-z1"]),
    };
    step(cmd.arg(&pkg).arg(&deb))?;
    Ok(deb)
}

/// Builds a package around `binary` (any build of it: the e2e uses the debug one) in `work`,
/// with its completions and man pages generated by the binary itself.
pub fn build_from_binary(binary: &Path, work: &Path) -> anyhow::Result<PathBuf> {
    let generated = work.join("generated");
    std::fs::create_dir_all(&generated)?;
    step(Command::new(binary).args(["ctl", "generate", "--out"]).arg(&generated))?;
    let version = crate::dist::version(&util::root())?;
    let glibc = Glibc::Any;
    let agent = pvfs_host::paths::agent_program(binary);
    let inputs = Inputs {
        binary,
        agent: &agent,
        generated: &generated,
        version: &version,
        compression: Compression::Fast,
        glibc,
    };
    let deb = build(&inputs, &work.join("tree"), work)?;
    check(&deb, &version, glibc)?;
    Ok(deb)
}

/// The unit with the binary where the package puts it.
fn packaged_unit(unit: &str) -> anyhow::Result<String> {
    ensure!(
        unit.contains("ExecStart=/usr/local/bin/pvfs-agent"),
        "config/pvfs-agent.service no longer starts /usr/local/bin/pvfs-agent: update deb::packaged_unit"
    );
    Ok(unit.replace("/usr/local/bin/pvfs-agent", "/usr/bin/pvfs-agent"))
}

/// Completions for all three names where bash-completion, zsh and fish look for vendor files;
/// man pages gzipped (Debian policy 12.1), with `pvfs.1` a link to `pvfsctl.1` (its default
/// personality) when the binary wrote none.
fn install_generated(generated: &Path, pkg: &Path) -> anyhow::Result<()> {
    let share = pkg.join("usr/share");
    let places = [
        ("bash-completion/completions", ".bash", ""),
        ("zsh/vendor-completions", "_", ""),
        ("fish/vendor_completions.d", ".fish", ".fish"),
    ];
    for (dir, _, _) in places {
        mkdir(&share.join(dir))?;
    }
    for name in ["pvfsctl", "pvfs-agent", "pvfs"] {
        let completions = generated.join("completions");
        copy(&completions.join(format!("{name}.bash")), &share.join(places[0].0).join(name), 0o644)?;
        copy(
            &completions.join(format!("_{name}")),
            &share.join(places[1].0).join(format!("_{name}")),
            0o644,
        )?;
        let fish = format!("{name}.fish");
        copy(&completions.join(&fish), &share.join(places[2].0).join(&fish), 0o644)?;
    }
    let man1 = share.join("man/man1");
    mkdir(&man1)?;
    let mut pages = 0;
    for entry in std::fs::read_dir(generated.join("man")).context("reading the generated man pages")? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "1") {
            let to = man1.join(path.file_name().unwrap_or_default());
            copy(&path, &to, 0o644)?;
            gzip(&to)?;
            pages += 1;
        }
    }
    ensure!(pages >= 2, "only {pages} man pages in {}", generated.join("man").display());
    // `pvfs` has its own pages when the binary generates them; otherwise man pvfs shows pvfsctl's.
    if !man1.join("pvfs.1.gz").exists() {
        std::os::unix::fs::symlink("pvfsctl.1.gz", man1.join("pvfs.1.gz")).context("linking pvfs.1.gz")?;
    }
    Ok(())
}

fn example_files(repo: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(repo.join("config"))? {
        let path = entry?.path();
        // Not the state files `pvfsctl provision` writes beside a cluster file: they are the
        // user's, not examples.
        if path.extension().is_some_and(|e| e == "toml") && !path.to_string_lossy().ends_with(".state.toml") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// `dpkg --print-architecture`: Debian's name for this machine (amd64, arm64), which is not
/// Rust's (x86_64, aarch64).
pub fn architecture() -> anyhow::Result<String> {
    Ok(read(Command::new("dpkg").arg("--print-architecture"))?.trim().to_owned())
}

/// The Depends line, from the shared libraries the binary links and the symbol versions it
/// uses, as dpkg-shlibdeps reads them from the installed libraries' symbols files (the way
/// Debian's own packages get theirs): e.g. `libc6 (>= 2.34), libgcc-s1 (>= 4.2)`.
///
/// For the shipped binary, libc6's minimum is then the newest glibc symbol version the binary
/// uses (2.17), not dpkg-shlibdeps' 2.34. Debian's libc6 symbols file puts `sysconf` at 2.34
/// whatever its symbol version (libc6's changelog, 2.34: "force __sysconf@GLIBC_2.* and
/// sysconf@GLIBC_2.* dependencies to 2.34 to correctly support the new definition of
/// MINSIGSTKSZ and SIGSTKSZ"), because a program compiled against glibc 2.34's headers may
/// pass sysconf constants older glibc lacks. The shipped binary's C code was compiled against
/// glibc 2.17's headers (zig), and its Rust code passes sysconf only constants glibc 2.17 has
/// (`_SC_PAGESIZE`, `_SC_CLK_TCK`, `_SC_NPROCESSORS_ONLN`, `_SC_HOST_NAME_MAX` …; std sizes its
/// signal stacks with `getauxval(AT_MINSIGSTKSZ)`), so that forced minimum does not apply.
fn shlib_depends(work: &Path, binaries: &[PathBuf], glibc: Glibc) -> anyhow::Result<String> {
    write(&work.join("debian/control"), "Source: pvfs\n\nPackage: pvfs\nArchitecture: any\n", 0o644)?;
    let mut cmd = Command::new("dpkg-shlibdeps");
    cmd.current_dir(work).arg("-O");
    for binary in binaries {
        cmd.arg("-e").arg(binary);
    }
    let out = read(&mut cmd).context("computing Depends (dpkg-shlibdeps is in dpkg-dev)")?;
    let depends = parse_shlibdeps(&out)?;
    match glibc {
        Glibc::Any => Ok(depends),
        Glibc::Shipped => {
            let mut needed = Vec::new();
            for binary in binaries {
                needed = needed.max(crate::glibc::check_floor(binary)?);
            }
            let lowered = with_libc6_minimum(&depends, &join(&needed));
            eprintln!("xtask deb: dpkg-shlibdeps says {depends}; the binary's symbols need {lowered}");
            Ok(lowered)
        }
    }
}

/// `depends` with libc6's minimum version replaced by `version`.
fn with_libc6_minimum(depends: &str, version: &str) -> String {
    depends
        .split(',')
        .map(str::trim)
        .map(|d| {
            if d.starts_with("libc6 ") || d == "libc6" {
                format!("libc6 (>= {version})")
            } else {
                d.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse_shlibdeps(out: &str) -> anyhow::Result<String> {
    out.lines()
        .find_map(|l| l.strip_prefix("shlibs:Depends="))
        .map(|d| d.trim().to_owned())
        .filter(|d| d.contains("libc6"))
        .with_context(|| format!("no libc6 in dpkg-shlibdeps' answer: {out:?}"))
}

/// What [`check`] asks of the packaged binary's glibc symbol versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Glibc {
    /// The shipped package (`dist`): none newer than `glibc::FLOOR` (2.17, EL7), and Depends
    /// says at least what the binary needs.
    Shipped,
    /// Any build (the e2e packages its debug binary, linked against the build machine's
    /// glibc): Depends says at least what the binary needs.
    Any,
}

fn control(version: &str, arch: &str, depends: &str, installed_kib: u64) -> String {
    format!(
        "Package: pvfs
Version: {version}
Architecture: {arch}
Maintainer: {MAINTAINER}
Installed-Size: {installed_kib}
Depends: {depends}
Section: admin
Priority: optional
Description: parallel file system setup, benchmarks and per-second node metrics
 One binary: run as pvfsctl it is the coordinator that stands up Lustre,
 GlusterFS or BeeGFS across a set of nodes, benchmarks them with IOR and
 mdtest semantics and reports; run as pvfs-agent it is the daemon on every
 node, serving node facts, per-second disk and network metrics and typed
 setup steps over mutual TLS.
 .
 The package enables pvfs-agent.service and starts it once the node's
 certificate, key and the cluster CA are in /etc/pvfs/tls (see
 /etc/pvfs/agent.env).
"
    )
}

/// `debian/copyright` in the machine-readable format.
fn copyright(years: &str) -> String {
    format!(
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: pvfs
Comment: The binary links Rust crates statically; each keeps its own license (MIT
 and/or Apache-2.0 for most), listed in the source tree's Cargo.lock.

Files: *
Copyright: {years} Seed 1d42de57 maintainers
License: Apache-2.0

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the \"License\"); you may not use
 this file except in compliance with the License.
 .
 On Debian systems, the full text of the Apache License, Version 2.0 can be found
 in /usr/share/common-licenses/Apache-2.0.
"
    )
}

/// The years of the source tree's commits (`2025-2026`), or this year outside a git checkout.
fn copyright_years(repo: &Path) -> String {
    let log = read(Command::new("git").current_dir(repo).args(["log", "--format=%cd", "--date=format:%Y"]));
    let years: Vec<String> = log.map(|l| l.lines().map(str::to_owned).collect()).unwrap_or_default();
    match (years.iter().min(), years.iter().max()) {
        (Some(first), Some(last)) if first != last => format!("{first}-{last}"),
        (Some(year), _) => year.clone(),
        _ => read(Command::new("date").arg("+%Y")).map(|y| y.trim().to_owned()).unwrap_or_default(),
    }
}

/// A one-entry Debian changelog (a native package needs one); dated now, in RFC 5322 form.
fn changelog(version: &str) -> String {
    let date = read(Command::new("date").arg("-R")).map(|d| d.trim().to_owned()).unwrap_or_default();
    format!(
        "pvfs ({version}) unstable; urgency=medium\n\n  * Built by `cargo xtask dist` from the pvfs source tree.\n\n -- {MAINTAINER}  {date}\n"
    )
}

/// Installed-Size in KiB, counted as dpkg-gencontrol does: each file rounded up to a KiB,
/// each directory and symlink one.
fn installed_size(pkg: &Path) -> anyhow::Result<u64> {
    fn walk(dir: &Path, total: &mut u64) -> anyhow::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let meta = entry.path().symlink_metadata()?;
            if entry.file_name() == "DEBIAN" {
                continue;
            }
            if meta.is_dir() {
                *total += 1;
                walk(&entry.path(), total)?;
            } else if meta.is_file() {
                *total += meta.len().div_ceil(1024);
            } else {
                *total += 1;
            }
        }
        Ok(())
    }
    let mut total = 0;
    walk(pkg, &mut total)?;
    Ok(total)
}

/// DEBIAN/md5sums (what `debsums` and `dpkg --verify` compare against), conffiles excepted as
/// dpkg records those itself.
fn md5sums(pkg: &Path) -> anyhow::Result<String> {
    read(Command::new("sh").current_dir(pkg).args([
        "-c",
        "find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\\0' | sort -z | xargs -0 md5sum",
    ]))
}

/// One line of `dpkg-deb --contents`: `drwxr-xr-x root/root 0 2026-11-26 13:00 ./etc/`.
#[derive(Debug, PartialEq)]
struct Entry {
    mode: String,
    owner: String,
    size: u64,
    /// Without the leading `.` (`/etc/pvfs/`, with the trailing `/` of a directory).
    path: String,
    link: Option<String>,
}

fn parse_contents(text: &str) -> anyhow::Result<BTreeMap<String, Entry>> {
    let mut entries = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        ensure!(parts.len() >= 6, "dpkg-deb --contents line {}: {line:?}", n + 1);
        let rest = parts[5..].join(" ");
        let (path, link) = match rest.split_once(" -> ") {
            Some((path, link)) => (path.to_owned(), Some(link.to_owned())),
            None => (rest, None),
        };
        let path = path.strip_prefix('.').unwrap_or(&path).to_owned();
        let size = parts[2].parse().with_context(|| format!("dpkg-deb --contents line {}: size", n + 1))?;
        entries.insert(
            path.clone(),
            Entry { mode: parts[0].to_owned(), owner: parts[1].to_owned(), size, path, link },
        );
    }
    Ok(entries)
}

/// Reads the package back with dpkg-deb and checks what an installation relies on: control
/// fields, the conffile, the maintainer scripts, every file's place, owner and mode, the unit
/// pointing at the packaged binary, and a libc6 dependency no older than the glibc the binary
/// needs (for the shipped package, itself no newer than 2.17).
pub fn check(deb: &Path, version: &str, rule: Glibc) -> anyhow::Result<()> {
    let field = |name: &str| -> anyhow::Result<String> {
        Ok(read(Command::new("dpkg-deb").arg("--field").arg(deb).arg(name))?.trim().to_owned())
    };
    let arch = architecture()?;
    ensure!(field("Package")? == "pvfs", "Package: {}", field("Package")?);
    ensure!(field("Version")? == version, "Version: {} (want {version})", field("Version")?);
    ensure!(field("Architecture")? == arch, "Architecture: {} (want {arch})", field("Architecture")?);
    ensure!(field("Maintainer")?.contains('@'), "Maintainer: {}", field("Maintainer")?);
    ensure!(field("Description")?.lines().count() > 3, "Description: {}", field("Description")?);
    let installed: u64 = field("Installed-Size")?.parse().context("Installed-Size")?;

    let info = read(Command::new("dpkg-deb").arg("--info").arg(deb))?;
    for script in ["postinst", "prerm", "postrm"] {
        // `dpkg-deb --info` marks executable control members with `*`.
        ensure!(
            info.lines().any(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words.windows(2).any(|w| w == ["*", script]) && words.ends_with(&["#!/bin/sh"])
            }),
            "{script} missing or not an executable shell script:\n{info}"
        );
    }
    let conffiles = read(Command::new("sh").args([
        "-c",
        "dpkg-deb --ctrl-tarfile \"$1\" | tar -xO ./conffiles",
        "sh",
        &deb.to_string_lossy(),
    ]))?;
    ensure!(conffiles == format!("{CONFFILE}\n"), "conffiles: {conffiles:?}");

    let contents = parse_contents(&read(Command::new("dpkg-deb").arg("--contents").arg(deb))?)?;
    let mut want: Vec<(String, &str, Option<&str>)> = vec![
        ("/usr/bin/pvfs".into(), "-rwxr-xr-x", None),
        ("/usr/bin/pvfsctl".into(), "lrwxrwxrwx", Some("pvfs")),
        ("/usr/bin/pvfs-agent".into(), "-rwxr-xr-x", None),
        (format!("/{UNIT_PATH}"), "-rw-r--r--", None),
        ("/etc/pvfs/".into(), "drwx------", None),
        (CONFFILE.into(), "-rw-r--r--", None),
        ("/usr/share/man/man1/pvfsctl.1.gz".into(), "-rw-r--r--", None),
        ("/usr/share/man/man1/pvfs-agent.1.gz".into(), "-rw-r--r--", None),
        ("/usr/share/doc/pvfs/README.md".into(), "-rw-r--r--", None),
        ("/usr/share/doc/pvfs/ARCHITECTURE.md".into(), "-rw-r--r--", None),
        ("/usr/share/doc/pvfs/copyright".into(), "-rw-r--r--", None),
        ("/usr/share/doc/pvfs/changelog.gz".into(), "-rw-r--r--", None),
    ];
    for name in ["pvfsctl", "pvfs-agent", "pvfs"] {
        want.push((format!("/usr/share/bash-completion/completions/{name}"), "-rw-r--r--", None));
        want.push((format!("/usr/share/zsh/vendor-completions/_{name}"), "-rw-r--r--", None));
        want.push((format!("/usr/share/fish/vendor_completions.d/{name}.fish"), "-rw-r--r--", None));
    }
    for path in example_files(&util::root())? {
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        want.push((format!("/usr/share/doc/pvfs/examples/{file}"), "-rw-r--r--", None));
    }
    for (path, mode, link) in &want {
        let entry = contents.get(path).with_context(|| format!("{path} is not in {}", deb.display()))?;
        ensure!(entry.mode == *mode, "{path}: mode {} (want {mode})", entry.mode);
        ensure!(entry.link.as_deref() == *link, "{path}: link {:?} (want {link:?})", entry.link);
        if entry.mode.starts_with('-') {
            ensure!(entry.size > 0, "{path} is empty");
        }
    }
    ensure!(contents.contains_key("/usr/share/man/man1/pvfs.1.gz"), "no man page for pvfs");
    for entry in contents.values() {
        ensure!(entry.owner == "root/root", "{}: owned by {}", entry.path, entry.owner);
        let allowed = ["/usr/bin/", "/usr/share/", "/lib/systemd/system/", "/etc/pvfs/"];
        ensure!(
            entry.path.ends_with('/') || allowed.iter().any(|p| entry.path.starts_with(p)),
            "{} is outside the package's places",
            entry.path
        );
        if entry.path.starts_with("/usr/share/man/") && !entry.path.ends_with('/') {
            ensure!(entry.path.ends_with(".1.gz"), "{}: a man page not gzipped", entry.path);
        }
        // World-writable anything, or setuid, would be a hole on every node.
        ensure!(
            entry.mode.starts_with('l') || (entry.mode.as_bytes()[8] != b'w' && !entry.mode.contains('s')),
            "{}: mode {}",
            entry.path,
            entry.mode
        );
    }
    let files: u64 = contents.values().filter(|e| e.mode.starts_with('-')).map(|e| e.size).sum();
    ensure!(installed >= files / 1024, "Installed-Size {installed} KiB < {} KiB of files", files / 1024);

    // The unit and the binary as installed.
    let unpacked = deb.with_extension("check");
    if unpacked.exists() {
        std::fs::remove_dir_all(&unpacked)?;
    }
    step(Command::new("dpkg-deb").arg("-x").arg(deb).arg(&unpacked))?;
    let unit = std::fs::read_to_string(unpacked.join(UNIT_PATH))?;
    ensure!(
        unit.contains("\nExecStart=/usr/bin/pvfs-agent\n") && !unit.contains("/usr/local"),
        "the packaged unit does not start /usr/bin/pvfs-agent:\n{unit}"
    );
    ensure!(unit.contains("EnvironmentFile=-/etc/pvfs/agent.env"), "the unit does not read {CONFFILE}");
    let mut glibc = Vec::new();
    for program in ["pvfs", "pvfs-agent"] {
        let packaged = unpacked.join("usr/bin").join(program);
        let sections = util::sections(&packaged)?;
        ensure!(
            !sections.contains(".debug_info")
                && !sections.contains(".debug_line")
                && !sections.contains(".symtab"),
            "the packaged /usr/bin/{program} is not stripped:\n{sections}"
        );
        glibc = glibc.max(match rule {
            Glibc::Shipped => crate::glibc::check_floor(&packaged)?,
            Glibc::Any => crate::glibc::needed_by(&packaged)?,
        });
    }
    let depends = field("Depends")?;
    let declared =
        libc6_minimum(&depends).with_context(|| format!("Depends has no libc6 (>= …): {depends}"))?;
    ensure!(
        declared >= glibc,
        "Depends says libc6 (>= {}) but the binary uses GLIBC_{}",
        join(&declared),
        join(&glibc)
    );
    if rule == Glibc::Shipped {
        // dpkg-shlibdeps states the newest version of the symbols the binary uses; a package
        // for EL7-era glibc must not ask for more than EL7 has.
        ensure!(
            declared.as_slice() <= crate::glibc::FLOOR.as_slice(),
            "Depends says libc6 (>= {}), newer than glibc {}: {depends}",
            join(&declared),
            join(&crate::glibc::FLOOR)
        );
    }
    std::fs::remove_dir_all(&unpacked)?;
    eprintln!(
        "xtask deb: {} checked: {} entries, conffile {CONFFILE}, Depends: {depends} (binary needs GLIBC_{})",
        deb.display(),
        contents.len(),
        join(&glibc)
    );
    Ok(())
}

/// `2.34` from `libc6 (>= 2.34), libgcc-s1 (>= 4.2)`.
fn libc6_minimum(depends: &str) -> Option<Vec<u32>> {
    let rest = depends.split(',').map(str::trim).find(|d| d.starts_with("libc6 "))?;
    let version = rest.split_once(">=")?.1.trim().trim_end_matches(')').trim();
    // Debian versions may carry `~` or a revision: only the numeric head matters here.
    let head = version.split(['~', '-', '+']).next()?;
    head.split('.').map(|p| p.parse().ok()).collect()
}

fn join(version: &[u32]) -> String {
    version.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
}

fn mkdir(path: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))
}

fn chmod(path: &Path, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("chmod {mode:o} {}", path.display()))
}

/// Copies with an explicit mode: the package's modes must not depend on the builder's umask
/// or on how the source was checked out.
fn copy(from: &Path, to: &Path, mode: u32) -> anyhow::Result<()> {
    std::fs::copy(from, to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    chmod(to, mode)
}

fn write(to: &Path, text: &str, mode: u32) -> anyhow::Result<()> {
    std::fs::write(to, text).with_context(|| format!("writing {}", to.display()))?;
    chmod(to, mode)
}

/// `gzip -9n`: no name or timestamp inside, so the same input gives the same bytes.
fn gzip(path: &Path) -> anyhow::Result<()> {
    step(Command::new("gzip").args(["-9n", "--force"]).arg(path)).map(|_| ())?;
    if path.exists() {
        bail!("gzip left {} behind", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shlibdeps_answer_is_read() {
        // dpkg-shlibdeps 1.21.22 (Debian 12) on /usr/bin/ls.
        let out = "shlibs:Depends=libc6 (>= 2.34), libselinux1 (>= 3.1~)\n";
        assert_eq!(parse_shlibdeps(out).unwrap(), "libc6 (>= 2.34), libselinux1 (>= 3.1~)");
        assert!(parse_shlibdeps("shlibs:Depends=libfoo1\n").is_err());
        assert!(parse_shlibdeps("").is_err());
    }

    #[test]
    fn libc6_minimum_is_replaced_and_the_rest_kept() {
        // dpkg-shlibdeps 1.21.22 (Debian 12) on the zig-built binary said `libc6 (>= 2.34)`.
        assert_eq!(with_libc6_minimum("libc6 (>= 2.34)", "2.17"), "libc6 (>= 2.17)");
        assert_eq!(
            with_libc6_minimum("libgcc-s1 (>= 4.2), libc6 (>= 2.34)", "2.17"),
            "libgcc-s1 (>= 4.2), libc6 (>= 2.17)"
        );
        assert_eq!(with_libc6_minimum("libc6-dev (>= 2.34)", "2.17"), "libc6-dev (>= 2.34)");
    }

    #[test]
    fn libc6_minimum_is_read_from_depends() {
        assert_eq!(libc6_minimum("libc6 (>= 2.34), libgcc-s1 (>= 4.2)"), Some(vec![2, 34]));
        assert_eq!(libc6_minimum("libgcc-s1 (>= 4.2), libc6 (>= 2.36~)"), Some(vec![2, 36]));
        assert_eq!(libc6_minimum("libc6"), None);
        assert_eq!(libc6_minimum("libc6-dev (>= 2.34)"), None);
    }

    #[test]
    fn contents_lines_are_parsed() {
        // dpkg-deb 1.21.22's --contents (tar's verbose listing).
        let text = "\
drwx------ root/root         0 2026-11-26 14:02 ./etc/pvfs/
-rw-r--r-- root/root      1234 2026-11-26 14:02 ./etc/pvfs/agent.env
lrwxrwxrwx root/root         0 2026-11-26 14:02 ./usr/bin/pvfsctl -> pvfs
";
        let entries = parse_contents(text).unwrap();
        assert_eq!(entries["/etc/pvfs/"].mode, "drwx------");
        assert_eq!(entries["/etc/pvfs/agent.env"].size, 1234);
        assert_eq!(entries["/usr/bin/pvfsctl"].link.as_deref(), Some("pvfs"));
        assert!(parse_contents("-rw-r--r-- root/root").is_err());
    }

    /// A real package round trip: built by dpkg-deb around a real ELF (this test binary) with
    /// stand-in completions and man pages, then read back by [`check`].
    #[test]
    fn package_is_built_and_reads_back() {
        let work = util::root().join(format!("target/deb-test-{}", std::process::id()));
        let generated = work.join("generated");
        std::fs::create_dir_all(generated.join("completions")).unwrap();
        std::fs::create_dir_all(generated.join("man")).unwrap();
        for name in ["pvfsctl", "pvfs-agent", "pvfs"] {
            for file in [format!("{name}.bash"), format!("_{name}"), format!("{name}.fish")] {
                std::fs::write(generated.join("completions").join(file), "# completions\n").unwrap();
            }
            std::fs::write(generated.join("man").join(format!("{name}.1")), ".TH X 1\n").unwrap();
        }
        let binary = std::env::current_exe().unwrap();
        let inputs = Inputs {
            binary: &binary,
            // A second real ELF for the agent's program, so each is placed and stripped apart.
            agent: Path::new("/bin/true"),
            generated: &generated,
            version: "9.8.7",
            compression: Compression::Fast,
            glibc: Glibc::Any,
        };
        let deb = build(&inputs, &work.join("tree"), &work).unwrap();
        assert_eq!(
            deb.file_name().unwrap().to_string_lossy(),
            format!("pvfs_9.8.7_{}.deb", architecture().unwrap())
        );
        check(&deb, "9.8.7", Glibc::Any).unwrap();
        // And a wrong expectation is caught.
        assert!(check(&deb, "9.8.8", Glibc::Any).is_err());
        // This test program is linked against this machine's glibc (2.36 on Debian 12), not
        // 2.17: as a shipped package it is refused.
        let needed = crate::glibc::needed_by(&binary).unwrap();
        let shipped = check(&deb, "9.8.7", Glibc::Shipped);
        assert_eq!(shipped.is_ok(), needed.as_slice() <= crate::glibc::FLOOR.as_slice(), "{shipped:?}");
        std::fs::remove_dir_all(&work).unwrap();
    }

    #[test]
    fn unit_is_pointed_at_the_packaged_binary() {
        let unit = std::fs::read_to_string(util::root().join("config/pvfs-agent.service")).unwrap();
        let packaged = packaged_unit(&unit).unwrap();
        assert!(packaged.contains("\nExecStartPre=/usr/bin/pvfs-agent --check-config\n"));
        assert!(packaged.contains("\nExecStart=/usr/bin/pvfs-agent\n"));
        assert!(!packaged.contains("/usr/local"));
        assert!(packaged_unit("ExecStart=/opt/agent").is_err());
    }
}
