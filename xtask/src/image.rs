//! The node image, built locally: no registry can be pulled from, so a Debian root is made
//! with debootstrap from the machine's own apt mirror and imported with `docker import`.
//!
//! The image is tagged with a hash of what goes into it, and reused while that does not change
//! (a cache across runs on the same machine; CI builds it once per run).

use crate::docker::docker;
use crate::util::{capture, read, root, step};
use anyhow::{Context, bail};
use std::hash::{Hash, Hasher};
use std::process::{Command, Stdio};

/// Packages on every node. Later scenarios add theirs (sysstat, fio, openmpi) here; the tag
/// changes and the image is rebuilt. systemd boots the gluster scenario's containers (glusterd
/// and the agent run as the services they are on a real node); GlusterFS 10.3 and XFS are
/// preinstalled because the containers reach no package mirror.
pub const PACKAGES: &[&str] = &[
    "iproute2",
    "procps",
    "ca-certificates",
    "systemd",
    "systemd-sysv",
    "dbus",
    "util-linux",
    "xfsprogs",
    "fuse3",
    "glusterfs-server",
    "glusterfs-client",
    // The mpi launcher: mpirun on the client (IOR itself is not in Debian).
    "openmpi-bin",
    // `pvfsctl bootstrap` reaches nodes over SSH (the bootstrap scenario); its probe and writes
    // use coreutils only.
    "openssh-server",
    // The README's Azure flow logs in as an admin user and runs bootstrap with --sudo.
    "sudo",
];

/// Bump to force a rebuild when the build steps below change.
const RECIPE_VERSION: u32 = 1;

/// Returns the tag of the node image, building it first if this machine does not have it.
pub fn ensure() -> anyhow::Result<String> {
    let (mirror, suite) = apt_source()?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (RECIPE_VERSION, PACKAGES, &suite).hash(&mut hasher);
    let tag = format!("pvfs-node:{:016x}", hasher.finish());
    if capture(docker().args(["image", "inspect", &tag]))?.status.success() {
        eprintln!("xtask: node image {tag} is cached");
        return Ok(tag);
    }
    eprintln!("xtask: building node image {tag} (debootstrap {suite} from {mirror}; a few minutes)");
    crate::util::ensure_programs(&[("debootstrap", "debootstrap")])?;
    let build = root().join("target/e2e/image-root");
    if build.exists() {
        std::fs::remove_dir_all(&build).with_context(|| format!("clearing {}", build.display()))?;
    }
    std::fs::create_dir_all(&build)?;
    step(
        Command::new("debootstrap")
            .args(["--variant=minbase", &format!("--include={}", PACKAGES.join(",")), &suite])
            .arg(&build)
            .arg(&mirror),
    )?;
    // Package caches are dead weight in the image.
    for dir in ["var/cache/apt/archives", "var/lib/apt/lists"] {
        let _ = capture(Command::new("find").arg(build.join(dir)).args(["-type", "f", "-delete"]));
    }
    let tar = Command::new("tar")
        .arg("-C")
        .arg(&build)
        .args(["--numeric-owner", "-c", "."])
        .stdout(Stdio::piped())
        .spawn()
        .context("starting tar")?;
    let import = docker()
        .args(["import", "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"])
        .args(["--change", "LABEL pvfs-node=1", "-", &tag])
        .stdin(tar.stdout.context("tar stdout")?)
        .output()
        .context("starting docker import")?;
    if !import.status.success() {
        bail!("docker import failed: {}", String::from_utf8_lossy(&import.stderr));
    }
    std::fs::remove_dir_all(&build).ok();
    eprintln!("xtask: built {tag}");
    Ok(tag)
}

/// The mirror and suite this machine's apt uses (deb822 `.sources` or a classic
/// `sources.list`), so the image comes from the same place as the host's packages.
pub fn apt_source() -> anyhow::Result<(String, String)> {
    let os = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let suite = os
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|s| s.trim_matches('"').to_owned())
        .unwrap_or_else(|| "bookworm".into());
    let mut texts = Vec::new();
    for file in ["/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"] {
        if let Ok(text) = std::fs::read_to_string(file) {
            texts.push(text);
        }
    }
    let sources =
        read(Command::new("sh").args(["-c", "cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true"]))?;
    texts.push(sources);
    for text in &texts {
        for line in text.lines().map(str::trim) {
            let uri = if let Some(uris) = line.strip_prefix("URIs:") {
                uris.split_whitespace().next()
            } else if let Some(rest) = line.strip_prefix("deb ") {
                rest.split_whitespace().find(|w| w.starts_with("http"))
            } else {
                None
            };
            if let Some(uri) = uri.filter(|u| !u.contains("security")) {
                return Ok((uri.to_owned(), suite));
            }
        }
    }
    Ok(("http://deb.debian.org/debian".into(), suite))
}
