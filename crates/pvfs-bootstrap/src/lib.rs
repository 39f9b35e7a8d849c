//! `pvfsctl bootstrap`: from SSH hosts to agents answering over mutual TLS.
//!
//! For every node of the cluster file: its certificate from the cluster CA (issued here when
//! missing, SAN = the address the cluster file dials), then over SSH ([`ssh`]) the agent's
//! binary, unit, environment file, the CA certificate and the node's certificate and key;
//! `systemctl daemon-reload`, enable and (re)start; then the agent is dialled over mTLS until it
//! answers, bounded, and what answers must be the build installed ([`mismatch`]: the SHA-256 of
//! the agent's running executable, which `Info` reports, against the binary sent or the
//! package's). A node holds one route's agent: the package's route first removes the tarball
//! route's binary and unit (whose unit in /etc would override the package's and keep the old
//! binary running), the tarball's route first removes the package ([`diff`]). All of a node's
//! commands go over one SSH connection ([`ssh::Multiplex`]).
//!
//! The node is read first (one `ssh` running `sha256sum`, `stat`, `systemctl is-*`, `uname -m`
//! and `getconf GNU_LIBC_VERSION`; a node that cannot run the binary is refused then, before
//! anything is written there ([`platform`]); the
//! binary and the package, hundreds of MB, are known by a stamp rather than hashed each time:
//! [`REMOTE_STAMPS`]), the
//! differences computed ([`diff`], pure), and only those are acted on: each changed file is
//! streamed to a temporary name in its own directory and renamed over the old one, so a node
//! never holds half a binary or half a key; the service is restarted only when something
//! changed or it is not running. A node that already holds all of it is left alone, which makes
//! a second run change nothing. `--plan` stops after the reading.
//!
//! Nodes are handled in parallel, at most [`Options::parallel`] at once; a failing node is
//! reported with the command, its exit status and the end of its standard error (and, when the
//! service did not start or the agent did not answer, the unit's last journal lines; for the
//! common refusals of a login that is not root, what to do: [`hint`]), and the others go on.
//!
//! This crate sits above `pvfs-coord`, whose `Dialer` checks each agent it installed; nothing in
//! the coordinator knows about SSH.

pub mod platform;
pub mod ssh;

use pvfs_config::{Cluster, Node};
use pvfs_coord::dial::{DialError, Dialer, FailureKind, from_status, timed_out};
/// A run's recap, in the words `up`'s has (`ok`, `changed`, `failed` per node).
pub use pvfs_coord::recap::{Counts, Recap};
use pvfs_proto::pb;
use ssh::{Refusal, Script, Ssh};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

/// Where things go on a node: the places `config/pvfs-agent.service` names.
pub const REMOTE_BINARY: &str = "/usr/local/bin/pvfs-agent";
pub const REMOTE_UNIT: &str = "/etc/systemd/system/pvfs-agent.service";
pub const REMOTE_ENV: &str = "/etc/pvfs/agent.env";
pub const REMOTE_TLS: &str = "/etc/pvfs/tls";
/// The systemd unit's name.
pub const SERVICE: &str = "pvfs-agent";
/// Where `--deb` keeps the package on a node: `dpkg -i` installs it from there, and its hash
/// says next time whether this package is the one installed.
pub const REMOTE_DEB: &str = "/var/cache/pvfs/pvfs.deb";
/// The Debian package's name (`cargo xtask dist`'s .deb).
pub const PACKAGE: &str = "pvfs";
/// The package's agent program (`xtask/src/deb.rs`; in packages before the agent had a program
/// of its own, a link to `/usr/bin/pvfs`, which `sha256sum` follows): what a package's agent
/// runs. Its unit is `/lib/systemd/system/pvfs-agent.service`, overridden by
/// [`REMOTE_UNIT`] when both are there, which is why a node holds one route's files only.
pub const PACKAGE_BINARY: &str = "/usr/bin/pvfs-agent";
/// Bootstrap's record of the big files it installed (the binary, the package): per file, its
/// SHA-256 and the identity `stat` gave it then ([`STAMP_FORMAT`]). A later run reads the
/// identity (a `stat`, instant) instead of hashing hundreds of megabytes on every node; a file
/// whose identity differs from its stamp, or has none, is hashed for real and stamped again. A
/// cache: deleting it costs one hashing, never a wrong answer.
pub const REMOTE_STAMPS: &str = "/var/cache/pvfs/bootstrap.stamps";
/// Device, inode, size and change time (to the nanosecond): a write, a chmod or a replacement
/// changes at least one, and no one can set a change time back (unlike the modification time,
/// `touch -d`). What it cannot see is a same-size write within the kernel's timestamp tick
/// (milliseconds) *after* the stamp was taken, i.e. someone rewriting the binary while
/// bootstrap installs it; the identity is read before hashing, so a change during the hashing
/// itself is seen next time.
const STAMP_FORMAT: &str = "%d %i %s %z";

/// The unit and the environment file's documentation, as the repository ships them, built into
/// the binary so that `pvfsctl` alone can bootstrap a node.
pub const UNIT_TEXT: &str = include_str!("../../../config/pvfs-agent.service");
const ENV_TEMPLATE: &str = include_str!("../../../config/pvfs-agent.env");

/// Something to do before any node is touched went wrong.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    #[error(transparent)]
    Tls(#[from] pvfs_tls::TlsError),
    #[error(
        "no cluster CA in {}: create it with `pvfsctl ca init --dir {}` (bootstrap issues every missing \
         certificate from it, but never creates a CA by itself)", dir.display(), dir.display()
    )]
    NoCa { dir: PathBuf },
    #[error(
        "--node: {} has no node named {}; its nodes are: {} (nothing was done)",
        file.display(),
        unknown.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "),
        known.join(", ")
    )]
    UnknownNodes { file: PathBuf, unknown: Vec<String>, known: Vec<String> },
    #[error(
        "{}: {source}; --from names the agent binary to install (by default this program)",
        path.display()
    )]
    Binary {
        path: PathBuf,
        #[source]
        source: platform::ElfError,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file to install that is not a regular file, or is larger than it can be.
    #[error(transparent)]
    File(pvfs_host::local_file::LocalFileError),
    /// The cluster file's `[policy]` holds values the agent would refuse to start with.
    #[error(
        "{}: {}\n(nothing was done: an agent refuses to start with such a policy file; fix [policy] and run again)",
        file.display(),
        problems.join("\n")
    )]
    Policy { file: PathBuf, problems: Vec<String> },
}

/// Where the agent reads its policy (pvfs-agent's `DEFAULT_POLICY_FILE`).
pub const REMOTE_POLICY: &str = "/etc/pvfs/policy.toml";

/// The policy file `node` must hold, when the cluster file has a `[policy]`: written like the
/// other files (the agent restarts when it changes, and reads it at start). Without one, a
/// policy file already on the node is the operator's and is left as it is.
pub fn policy_file(cluster: &Cluster, node: &Node) -> Result<Option<Wanted>, BootstrapError> {
    let Some(policy) = pvfs_plan::agent_policy(cluster, node) else { return Ok(None) };
    policy.map_err(|problems| BootstrapError::Policy { file: cluster.source.clone(), problems })?;
    let text = cluster.policy_for(node).map(|p| p.render(&cluster.source, &node.name)).unwrap_or_default();
    Ok(Some(Wanted::bytes("agent policy", REMOTE_POLICY.into(), 0o644, text.into_bytes())))
}

impl From<pvfs_host::local_file::LocalFileError> for BootstrapError {
    fn from(err: pvfs_host::local_file::LocalFileError) -> BootstrapError {
        let path = err.path().to_owned();
        match err.into_io() {
            Ok(source) => BootstrapError::Read { path, source },
            Err(refused) => BootstrapError::File(refused),
        }
    }
}

/// The most of a binary or package read to install it: pvfs's binary is ~15 MB, its package
/// less; past this it is not one of them.
pub const INSTALL_FILE: pvfs_host::local_file::Cap =
    pvfs_host::local_file::Cap { what: "a pvfs binary or package", bytes: 1 << 30 };

/// The most of a certificate or key read to install it.
const TLS_FILE: pvfs_host::local_file::Cap = pvfs_tls::PEM_FILE;

/// Where a file's bytes come from.
#[derive(Debug, Clone)]
pub enum Source {
    Bytes(Arc<[u8]>),
    /// A file streamed from disk (the agent's binary is too big to keep around per node).
    File(PathBuf),
}

/// One file a node must hold.
#[derive(Debug, Clone)]
pub struct Wanted {
    /// What it is, for reports ("binary", "unit", "certificate", …).
    pub what: &'static str,
    pub path: String,
    pub mode: u32,
    /// SHA-256 in lowercase hex; `None` for a certificate that `--plan` would issue first.
    pub sha256: Option<String>,
    pub source: Option<Source>,
}

impl Wanted {
    pub fn bytes(what: &'static str, path: String, mode: u32, bytes: Vec<u8>) -> Wanted {
        let sha256 = Some(sha256_hex(&bytes));
        Wanted { what, path, mode, sha256, source: Some(Source::Bytes(bytes.into())) }
    }

    pub fn file(what: &'static str, path: String, mode: u32, local: &Path) -> Result<Wanted, BootstrapError> {
        let read = |source| BootstrapError::Read { path: local.to_owned(), source };
        let mut file = pvfs_host::local_file::open(local, INSTALL_FILE)?.take(INSTALL_FILE.bytes);
        let mut context = ring::digest::Context::new(&ring::digest::SHA256);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buf).map_err(read)?;
            if n == 0 {
                break;
            }
            context.update(&buf[..n]);
        }
        let sha256 = Some(hex(context.finish().as_ref()));
        Ok(Wanted { what, path, mode, sha256, source: Some(Source::File(local.to_owned())) })
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `--node NAME…`: keeps only the named nodes of `cluster` (in the cluster file's order), so
/// that certificates are issued and SSH is run for those alone; no names keeps every node. Any
/// name the cluster lacks is refused before anything is done, all such names at once, with the
/// cluster's own names to pick from.
pub fn select_nodes(cluster: &mut Cluster, names: &[String]) -> Result<(), BootstrapError> {
    if names.is_empty() {
        return Ok(());
    }
    let unknown: Vec<String> =
        names.iter().filter(|n| !cluster.nodes.iter().any(|node| &node.name == *n)).cloned().collect();
    if !unknown.is_empty() {
        return Err(BootstrapError::UnknownNodes {
            file: cluster.source.clone(),
            unknown,
            known: cluster.nodes.iter().map(|n| n.name.clone()).collect(),
        });
    }
    cluster.nodes.retain(|node| names.contains(&node.name));
    Ok(())
}

/// A certificate issued before any node was touched.
#[derive(Debug, Clone)]
pub struct IssuedCert {
    pub name: String,
    pub cert: PathBuf,
    /// The names it is valid for; empty for the coordinator's.
    pub sans: Vec<String>,
    /// `--plan`: it would be issued, and was not.
    pub planned: bool,
}

/// Issues (or, with `plan`, lists) every certificate the run needs that `tls_dir` lacks: each
/// node's (`NODE.crt`/`NODE.key`, SAN = the host the cluster file dials) and the coordinator's,
/// with the names and in the place `pvfsctl ca issue` uses. Existing ones are kept as they are.
pub fn ensure_certificates(
    cluster: &Cluster,
    tls_dir: &Path,
    coordinator: &str,
    plan: bool,
) -> Result<Vec<IssuedCert>, BootstrapError> {
    if !tls_dir.join(pvfs_tls::CA_CERT).exists() {
        return Err(BootstrapError::NoCa { dir: tls_dir.to_owned() });
    }
    let mut issued = Vec::new();
    let holders = cluster
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), vec![n.address.tls_name()], pvfs_tls::Usage::Agent))
        .chain([(coordinator, vec![], pvfs_tls::Usage::Coordinator)]);
    for (name, sans, usage) in holders {
        let cert = tls_dir.join(format!("{name}.crt"));
        if cert.exists() {
            continue;
        }
        if !plan {
            let options = pvfs_tls::IssueOptions { sans: sans.clone(), usage, force: false, days: None };
            pvfs_tls::issue_with(tls_dir, name, &options)?;
        }
        issued.push(IssuedCert { name: name.to_owned(), cert, sans, planned: plan });
    }
    Ok(issued)
}

/// What a node must hold, by route.
#[derive(Debug, Clone)]
pub struct NodeFiles {
    /// The binary and the unit: the route without a package.
    pub binary: Vec<Wanted>,
    /// `--deb`: the package, taken where the node has dpkg (it brings the binary and unit).
    pub package: Option<Wanted>,
    /// The environment file and the TLS files, either way.
    pub common: Vec<Wanted>,
}

impl NodeFiles {
    /// Every path either route may write: what the probe reads.
    pub fn paths(&self) -> Vec<&str> {
        self.binary.iter().chain(&self.package).chain(&self.common).map(|f| f.path.as_str()).collect()
    }

    /// The paths whose bytes come from a local file (the binary, the package): big, so known
    /// on the node by their stamp rather than hashed there each time.
    pub fn stamped_paths(&self) -> Vec<&str> {
        self.binary
            .iter()
            .chain(&self.package)
            .chain(&self.common)
            .filter(|f| matches!(f.source, Some(Source::File(_))))
            .map(|f| f.path.as_str())
            .collect()
    }

    /// The route for a node with (or without) dpkg: the package first, so that the environment
    /// file written after it replaces the package's default (and dpkg keeps ours on upgrades).
    pub fn route(&self, dpkg: bool) -> Vec<Wanted> {
        let head = match &self.package {
            Some(package) if dpkg => vec![package.clone()],
            _ => self.binary.clone(),
        };
        head.into_iter().chain(self.common.iter().cloned()).collect()
    }
}

/// What `node` must hold: the binary at `binary` and the unit (or the `package`, where the node
/// has dpkg), its environment file, and from `tls_dir` the CA certificate, the node's
/// certificate and key, and `revoked.txt` if there is one. A certificate still to be issued
/// (`--plan`) is wanted without a hash.
pub fn wanted_files(
    node: &Node,
    tls_dir: &Path,
    binary: &Wanted,
    package: Option<&Wanted>,
) -> Result<NodeFiles, BootstrapError> {
    let binary =
        vec![binary.clone(), Wanted::bytes("unit", REMOTE_UNIT.into(), 0o644, UNIT_TEXT.as_bytes().to_vec())];
    let mut files = vec![Wanted::bytes("environment", REMOTE_ENV.into(), 0o644, env_file(node).into_bytes())];
    let tls = |what, local: String, mode| -> Result<Option<Wanted>, BootstrapError> {
        let path = tls_dir.join(&local);
        let remote = format!("{REMOTE_TLS}/{local}");
        match pvfs_host::local_file::read(&path, TLS_FILE) {
            Ok(bytes) => Ok(Some(Wanted::bytes(what, remote, mode, bytes))),
            Err(e) if e.is_not_found() => Ok(None),
            Err(err) => Err(err.into()),
        }
    };
    files.extend(tls("CA certificate", pvfs_tls::CA_CERT.into(), 0o644)?);
    for (what, file, mode) in
        [("certificate", format!("{}.crt", node.name), 0o644), ("key", format!("{}.key", node.name), 0o600)]
    {
        let wanted = tls(what, file.clone(), mode)?;
        files.push(wanted.unwrap_or(Wanted {
            what,
            path: format!("{REMOTE_TLS}/{file}"),
            mode,
            sha256: None,
            source: None,
        }));
    }
    files.extend(tls("revocation list", pvfs_tls::REVOKED.into(), 0o644)?);
    Ok(NodeFiles { binary, package: package.cloned(), common: files })
}

/// The node's `/etc/pvfs/agent.env`: the shipped file's comments, then its name (the cluster
/// file's, which is its certificate's) and the port the cluster file dials.
pub fn env_file(node: &Node) -> String {
    let any = if node.address.socket_addr().is_some_and(|a| a.is_ipv6()) { "[::]" } else { "0.0.0.0" };
    format!(
        "{ENV_TEMPLATE}\n# Written by `pvfsctl bootstrap` for node {name}.\nPVFS_AGENT_NAME={name}\nPVFS_AGENT_LISTEN={any}:{port}\n",
        name = node.name,
        port = node.address.port
    )
}

/// What one read of a node found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    /// Path → SHA-256 of the files that exist.
    pub sha256: BTreeMap<String, String>,
    /// Path → permission bits.
    pub modes: BTreeMap<String, u32>,
    /// `/run/systemd/system` exists: systemd is the node's init.
    pub systemd: bool,
    pub active: bool,
    pub enabled: bool,
    /// `dpkg` is there: a `--deb` is installed with it.
    pub dpkg: bool,
    /// dpkg reports the `pvfs` package installed.
    pub package_installed: bool,
    /// Stamped files that exist but whose stamp is missing or no longer describes them: their
    /// hash is not known yet (see [`REMOTE_STAMPS`]).
    pub unverified: Vec<String>,
    /// `uname -m`.
    pub machine: Option<String>,
    /// `getconf GNU_LIBC_VERSION`, or the first line of `ldd --version` where getconf does not
    /// know the variable.
    pub libc: Option<platform::Libc>,
}

const MARK_MODES: &str = "@@pvfs-modes";
const MARK_SYSTEMD: &str = "@@pvfs-systemd";
const MARK_ACTIVE: &str = "@@pvfs-active";
const MARK_ENABLED: &str = "@@pvfs-enabled";
const MARK_DPKG: &str = "@@pvfs-dpkg";
const MARK_PACKAGE: &str = "@@pvfs-package";
const MARK_STAMPED: &str = "@@pvfs-stamped";
const MARK_STAMPS: &str = "@@pvfs-stamps";
const MARK_MACHINE: &str = "@@pvfs-machine";
const MARK_LIBC: &str = "@@pvfs-libc";

/// The read-only command that fills a [`Probe`]: `hashed` files by their SHA-256, `stamped`
/// ones by their identity and the `stamps` list ([`REMOTE_STAMPS`]), and every one's mode. Every line it prints is
/// either a marker or follows one, so a missing tool shows as an empty section rather than
/// shifting the others.
pub fn probe_script(hashed: &[&str], stamped: &[&str], stamps: &str) -> Script {
    let mut script = Script::new();
    if !hashed.is_empty() {
        // Never without operands: sha256sum would read (and hash) its standard input.
        let mut sha = vec!["sha256sum", "--"];
        sha.extend(hashed);
        script = script.cmd(&sha).op("2>/dev/null ;");
    }
    let mut stat = vec!["stat", "-c", "%a %n", "--"];
    stat.extend(hashed);
    stat.extend(stamped);
    script = script.cmd(&["echo", MARK_MODES]).op(";").cmd(&stat).op("2>/dev/null ;");
    if !stamped.is_empty() {
        let format = format!("%n {STAMP_FORMAT}");
        let mut identity = vec!["stat", "-c", format.as_str(), "--"];
        identity.extend(stamped);
        script = script
            .cmd(&["echo", MARK_STAMPED])
            .op(";")
            .cmd(&identity)
            .op("2>/dev/null ;")
            .cmd(&["echo", MARK_STAMPS])
            .op(";")
            .cmd(&["cat", "--", stamps])
            .op("2>/dev/null ;");
    }
    script
        .cmd(&["test", "-d", "/run/systemd/system"])
        .op("&&")
        .cmd(&["echo", MARK_SYSTEMD])
        .op(";")
        .cmd(&["echo", MARK_ACTIVE])
        .op(";")
        .cmd(&["systemctl", "is-active", SERVICE])
        .op("2>/dev/null ;")
        .cmd(&["echo", MARK_ENABLED])
        .op(";")
        .cmd(&["systemctl", "is-enabled", SERVICE])
        .op("2>/dev/null ;")
        .cmd(&["command", "-v", "dpkg"])
        .op(">/dev/null &&")
        .cmd(&["echo", MARK_DPKG])
        .op(";")
        .cmd(&["echo", MARK_PACKAGE])
        .op(";")
        .cmd(&["dpkg-query", "-W", "-f", "${Status}\\n", PACKAGE])
        .op("2>/dev/null ;")
        .cmd(&["echo", MARK_MACHINE])
        .op(";")
        .cmd(&["uname", "-m"])
        .op("2>/dev/null ;")
        .cmd(&["echo", MARK_LIBC])
        .op(";")
        // getconf is glibc's own answer; musl's has no such variable, and its ldd (the loader)
        // prints its name on stderr, hence the 2>&1 there.
        .cmd(&["getconf", "GNU_LIBC_VERSION"])
        .op("2>/dev/null ||")
        .cmd(&["ldd", "--version"])
        .op("2>&1 |")
        .cmd(&["head", "-n", "1"])
        .op("; true")
}

/// Hashes `path` on the node and records its stamp in `stamps` ([`REMOTE_STAMPS`]) (replacing the file's
/// old line, through a temporary renamed over the list); prints `PATH SHA256 IDENTITY`. The
/// identity is read before the hashing, so a change while it hashes leaves a stamp that no
/// longer matches, and the next run hashes again.
pub fn stamp_script(path: &str, stamps: &str) -> Script {
    let (dir, _) = stamps.rsplit_once('/').unwrap_or((".", stamps));
    let dir = if dir.is_empty() { "/" } else { dir };
    let tmp = format!("{stamps}.{:08x}", fastrand::u32(..));
    Script::new()
        .op("umask 022 &&")
        .cmd(&["mkdir", "-p", "--", dir])
        .op("&& id=$(")
        .cmd(&["stat", "-c", STAMP_FORMAT, "--", path])
        .op(") && sum=$(")
        .cmd(&["sha256sum"])
        .op("<")
        .cmd(&[path])
        .op(") && line=$(")
        .cmd(&["printf", "%s %s %s", path])
        .op("\"${sum%% *}\" \"$id\") && {")
        .cmd(&["awk", "-v", &format!("p={path}"), "--", "$1 != p", stamps])
        .op("2>/dev/null ; echo \"$line\" ; } >")
        .cmd(&[&tmp])
        .op("&&")
        .cmd(&["mv", "-f", "--", &tmp, stamps])
        .op("&& echo \"$line\" || {")
        .cmd(&["rm", "-f", "--", &tmp])
        .op("; exit 1; }")
}

/// For `--plan`, which writes nothing: `PATH SHA256` of `path`, hashed on the node.
pub fn hash_script(path: &str) -> Script {
    Script::new()
        .op("sum=$(")
        .cmd(&["sha256sum"])
        .op("<")
        .cmd(&[path])
        .op(") &&")
        .cmd(&["printf", "%s %s\\n", path])
        .op("\"${sum%% *}\"")
}

/// Reads the `PATH SHA256 …` lines of [`stamp_script`] or [`hash_script`] into `probe`:
/// those paths' hashes are known now.
pub fn read_hashes(probe: &mut Probe, stdout: &str) {
    for line in stdout.lines() {
        let mut words = line.split_whitespace();
        if let (Some(path), Some(hash)) = (words.next(), words.next())
            && is_sha256(hash)
        {
            probe.sha256.insert(path.to_owned(), hash.to_ascii_lowercase());
            probe.unverified.retain(|p| p != path);
        }
    }
}

fn is_sha256(hash: &str) -> bool {
    hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Reads [`probe_script`]'s output.
pub fn parse_probe(stdout: &str) -> Probe {
    let mut probe = Probe::default();
    let mut section = "sha";
    // Path → identity now, and path → (hash, identity) as stamped.
    let mut identities = BTreeMap::new();
    let mut stamps = BTreeMap::new();
    for line in stdout.lines().map(str::trim_end) {
        match line {
            MARK_MODES => section = "modes",
            MARK_STAMPED => section = "stamped",
            MARK_STAMPS => section = "stamps",
            MARK_SYSTEMD => probe.systemd = true,
            MARK_ACTIVE => section = "active",
            MARK_ENABLED => section = "enabled",
            MARK_DPKG => probe.dpkg = true,
            MARK_PACKAGE => section = "package",
            MARK_MACHINE => section = "machine",
            MARK_LIBC => section = "libc",
            _ => match section {
                "sha" => {
                    // `HASH  PATH` (two spaces; a `*` instead of the second in binary mode).
                    if let Some((hash, path)) = line.split_once(' ') {
                        let path = path.trim_start_matches([' ', '*']);
                        if is_sha256(hash) {
                            probe.sha256.insert(path.to_owned(), hash.to_ascii_lowercase());
                        }
                    }
                }
                "modes" => {
                    if let Some((mode, path)) = line.split_once(' ')
                        && let Ok(mode) = u32::from_str_radix(mode, 8)
                    {
                        probe.modes.insert(path.to_owned(), mode);
                    }
                }
                // `PATH DEV INODE SIZE CTIME`: the identity is the rest of the line.
                "stamped" => {
                    if let Some((path, identity)) = line.split_once(' ') {
                        identities.insert(path.to_owned(), identity.to_owned());
                    }
                }
                // `PATH SHA256 DEV INODE SIZE CTIME`.
                "stamps" => {
                    if let Some((path, rest)) = line.split_once(' ')
                        && let Some((hash, identity)) = rest.split_once(' ')
                        && is_sha256(hash)
                    {
                        stamps.insert(path.to_owned(), (hash.to_ascii_lowercase(), identity.to_owned()));
                    }
                }
                // `is-active` prints active, activating, inactive, failed…; `is-enabled`
                // enabled, disabled, static… (or nothing, on stderr, when there is no unit).
                "active" => probe.active |= line == "active",
                "enabled" => probe.enabled |= line == "enabled",
                // `want flag status`: "install ok installed" when it is.
                "package" => {
                    probe.package_installed |= line.ends_with(" installed") && !line.contains("not-installed")
                }
                "machine" if probe.machine.is_none() && !line.trim().is_empty() => {
                    probe.machine = Some(line.trim().to_owned());
                }
                "libc" if probe.libc.is_none() => probe.libc = platform::parse_libc(line),
                _ => {}
            },
        }
    }
    // A stamp stands for a hash only while the file is exactly as it was stamped.
    for (path, identity) in identities {
        match stamps.remove(&path) {
            Some((hash, stamped)) if stamped == identity => {
                probe.sha256.insert(path, hash);
            }
            _ => probe.unverified.push(path),
        }
    }
    probe
}

/// One difference between a node and what it must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The file is missing or its content differs: written whole.
    Write {
        what: &'static str,
        path: String,
        missing: bool,
    },
    /// Right content, wrong permissions.
    Chmod {
        what: &'static str,
        path: String,
        from: u32,
        to: u32,
    },
    /// The tarball route's binary and unit, on a node that gets the package: its unit in
    /// /etc would override the package's and keep the old binary running.
    RemoveFiles {
        paths: Vec<String>,
    },
    /// `dpkg -r pvfs`, on a node that gets the binary: the package's agent would otherwise be
    /// the one its enablement starts.
    RemovePackage,
    /// `dpkg -i` of the package kept at [`REMOTE_DEB`].
    Dpkg,
    DaemonReload,
    Enable,
    /// Restarted because files changed, or started because it was not running.
    Restart {
        because: &'static str,
    },
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Write { what, path, missing: true } => write!(f, "install {what} {path}"),
            Change::Write { what, path, missing: false } => {
                write!(f, "replace {what} {path} (content differs)")
            }
            Change::Chmod { what, path, from, to } => write!(f, "chmod {to:o} {what} {path} (was {from:o})"),
            Change::RemoveFiles { paths } => {
                write!(f, "remove {} (the tarball route's; the package replaces them)", paths.join(" "))
            }
            Change::RemovePackage => {
                write!(
                    f,
                    "dpkg -r {PACKAGE} (the package's agent; the binary replaces it, /etc/pvfs is kept)"
                )
            }
            Change::Dpkg => write!(f, "dpkg -i {REMOTE_DEB}"),
            Change::DaemonReload => write!(f, "systemctl daemon-reload"),
            Change::Enable => write!(f, "systemctl enable {SERVICE}"),
            Change::Restart { because } => write!(f, "systemctl restart {SERVICE} ({because})"),
        }
    }
}

/// What a node needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodePlan {
    pub changes: Vec<Change>,
    /// Files already right, and the service when it needs nothing.
    pub unchanged: usize,
}

impl NodePlan {
    /// Files written, chmodded or removed, plus one for the service when it is touched.
    pub fn changed(&self) -> usize {
        let file = |c: &Change| {
            matches!(
                c,
                Change::Write { .. }
                    | Change::Chmod { .. }
                    | Change::RemoveFiles { .. }
                    | Change::RemovePackage
            )
        };
        let files = self.changes.iter().filter(|c| file(c)).count();
        let service = self.changes.iter().any(|c| !file(c));
        files + usize::from(service)
    }
}

/// The differences between `probe` and `wanted` (pure: `--plan` shows exactly this). The
/// other route's agent goes first: what the package brings (`wanted` holds the binary) or the
/// tarball's binary and unit (`wanted` holds the package), so that the unit systemd starts is
/// this route's.
pub fn diff(wanted: &[Wanted], probe: &Probe) -> NodePlan {
    let mut plan = NodePlan::default();
    let mut unit_changed = false;
    let wants = |path: &str| wanted.iter().any(|f| f.path == path);
    let mut removed = false;
    if wants(REMOTE_DEB) {
        let there: Vec<String> = [REMOTE_BINARY, REMOTE_UNIT]
            .into_iter()
            .filter(|p| probe.modes.contains_key(*p) || probe.sha256.contains_key(*p))
            .map(str::to_owned)
            .collect();
        if !there.is_empty() {
            plan.changes.push(Change::RemoveFiles { paths: there });
            removed = true;
        }
    } else if wants(REMOTE_BINARY) && probe.package_installed {
        plan.changes.push(Change::RemovePackage);
        removed = true;
    }
    for file in wanted {
        let there = probe.sha256.get(&file.path);
        let same = matches!((there, &file.sha256), (Some(a), Some(b)) if a == b);
        if !same {
            unit_changed |= file.path == REMOTE_UNIT;
            plan.changes.push(Change::Write {
                what: file.what,
                path: file.path.clone(),
                missing: there.is_none(),
            });
            continue;
        }
        match probe.modes.get(&file.path) {
            Some(&mode) if mode != file.mode => plan.changes.push(Change::Chmod {
                what: file.what,
                path: file.path.clone(),
                from: mode,
                to: file.mode,
            }),
            _ => plan.unchanged += 1,
        }
    }
    // The package is installed when it was written, or when dpkg no longer has it.
    if let Some(deb) = wanted.iter().find(|f| f.path == REMOTE_DEB) {
        let written =
            plan.changes.iter().any(|c| matches!(c, Change::Write { path, .. } if path == &deb.path));
        // Installed again after the tarball's files went, whose removal disabled the unit.
        if written || !probe.package_installed || removed {
            plan.changes.push(Change::Dpkg);
            unit_changed = true;
        }
    }
    let files_changed = !plan.changes.is_empty();
    if unit_changed || removed {
        plan.changes.push(Change::DaemonReload);
    }
    // A removal disabled the unit (its links named the other route's file).
    if !probe.enabled || removed {
        plan.changes.push(Change::Enable);
    }
    if files_changed {
        plan.changes.push(Change::Restart { because: "its files changed" });
    } else if !probe.active {
        plan.changes.push(Change::Restart { because: "it was not running" });
    }
    if !files_changed && probe.active && probe.enabled {
        plan.unchanged += 1;
    }
    plan
}

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub ssh: Ssh,
    /// Read and diff only (`--plan`).
    pub plan: bool,
    /// Nodes handled at once.
    pub parallel: usize,
    /// How long an agent has to answer over mTLS after its (re)start.
    pub wait: Duration,
    /// The bound on one `ssh` run (a binary upload included).
    pub command_timeout: Duration,
    /// What the binary to install needs of a node ([`platform::needs`]); a node that lacks it
    /// is refused after the probe, before anything is written there.
    pub needs: platform::Needs,
    /// Cancelled to stop early (Ctrl-C): no node starts after that, and the nodes under way
    /// finish (each file is written through a temporary and renamed, and a restart is waited
    /// for), so no node is left half-installed by the coordinator leaving.
    pub stop: tokio_util::sync::CancellationToken,
}

/// Why a node failed, with what an operator needs to act on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFailure {
    pub node: String,
    pub message: String,
    /// The command line that failed, when one did.
    pub command: Option<Box<str>>,
    pub code: Option<i32>,
    pub stderr_tail: String,
    /// The node's SSH host key was refused.
    pub host_key: bool,
    /// The unit's last journal lines, when the service did not start or the agent did not
    /// answer ([`journal_script`]). (This and `command` are boxed: a failure is the `Err` of
    /// every step, kept under clippy's `result_large_err` size.)
    pub journal: Box<[String]>,
}

impl NodeFailure {
    /// The failure as the CLI shows it: with `whole_command` false, a command line longer than
    /// [`SHORT_COMMAND`] characters (the probe's is about a thousand, with every path it reads)
    /// is cut there, saying so; the rest is always whole.
    pub fn render(&self, whole_command: bool) -> String {
        let mut text = self.message.clone();
        if let Some(command) = &self.command {
            text += "\n  command: ";
            text += &if whole_command { command.to_string() } else { shorten(command) };
            text += &match self.code {
                Some(code) => format!("\n  exit status: {code}"),
                None => "\n  killed by a signal or timed out".to_owned(),
            };
        }
        if !self.stderr_tail.is_empty() && !self.host_key {
            text += &format!("\n  stderr: {}", self.stderr_tail.replace('\n', "\n          "));
        }
        if !self.journal.is_empty() {
            text += &format!("\n  journal ({}):", journal_script());
            for line in &self.journal {
                text += &format!("\n    {line}");
            }
        }
        text
    }
}

/// How much of a failed command line a failure shows without `-v`: the host and the start of
/// the remote command, enough to tell which step it was.
pub const SHORT_COMMAND: usize = 120;

/// `ssh OPTIONS -- HOST 'SCRIPT'` as `ssh … HOST 'SCRIPT'`, cut at [`SHORT_COMMAND`]: the
/// options are the same for every command of a run (and shown whole with `-v`); the host and
/// the script's start say which command it was.
fn shorten(command: &str) -> String {
    if command.chars().count() <= SHORT_COMMAND {
        return command.to_owned();
    }
    let short = match command.split_once(" -- ") {
        Some((head, tail)) => format!("{} … {tail}", head.split(' ').next().unwrap_or(head)),
        None => command.to_owned(),
    };
    let cut: String = short.chars().take(SHORT_COMMAND).collect();
    let more = if cut.len() < short.len() { "…" } else { "" };
    format!("{cut}{more} (-v shows the whole command)")
}

impl std::fmt::Display for NodeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(true))
    }
}

/// What happens, as it happens.
#[derive(Debug, Clone)]
pub enum BootstrapEvent {
    /// The node was read; `plan` is what it needs.
    Probed { node: String, plan: NodePlan },
    /// One change done.
    Done { node: String, change: Change },
    /// Still waiting for the agent to answer.
    Waiting { node: String, elapsed: Duration, last: String },
    /// The agent answered over mTLS, and it runs what was installed.
    Ready {
        node: String,
        version: String,
        /// The SHA-256 of its executable as it runs.
        build: String,
        /// Its executable's path.
        executable: String,
        elapsed: Duration,
    },
    /// The node is finished (or failed).
    Finished { node: String, result: Result<Counts, NodeFailure> },
}

/// Runs every node of `nodes` (each with the files it must hold) at most `options.parallel` at
/// once; `dialer` checks the agents afterwards (`None` with `--plan`).
pub async fn run(
    nodes: Vec<(Node, NodeFiles)>,
    dialer: Option<Dialer>,
    options: Options,
    events: mpsc::UnboundedSender<BootstrapEvent>,
) -> Recap<NodeFailure> {
    let started = Instant::now();
    // Bounded: each node holds an ssh process and, while uploading, a binary's worth of socket
    // buffers; hundreds at once would only contend for the coordinator's uplink.
    let permits = Arc::new(Semaphore::new(options.parallel.max(1)));
    let options = Arc::new(options);
    let mut tasks = JoinSet::new();
    let names: Vec<String> = nodes.iter().map(|(n, _)| n.name.clone()).collect();
    for (index, (node, files)) in nodes.into_iter().enumerate() {
        let (permits, options, dialer, events) =
            (permits.clone(), options.clone(), dialer.clone(), events.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let result = if options.stop.is_cancelled() {
                Err(failure(&node.name, "interrupted before it started: nothing was changed on it".into()))
            } else {
                one_node(index, &node, &files, dialer.as_ref(), &options, &events).await
            };
            let _ = events.send(BootstrapEvent::Finished { node: node.name.clone(), result: result.clone() });
            (index, result)
        });
    }
    let mut results: Vec<Option<Result<Counts, NodeFailure>>> = vec![None; names.len()];
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((index, result)) => results[index] = Some(result),
            Err(err) => tracing::error!(error = %err, "bootstrap task failed"),
        }
    }
    let mut recap = Recap::default();
    for (name, result) in names.into_iter().zip(results) {
        let result = result
            .unwrap_or_else(|| Err(failure(&name, "internal error: the node's task ended early".into())));
        match result {
            Ok(counts) => recap.nodes.push((name, counts)),
            Err(failed) => {
                recap.nodes.push((name, Counts { failed: 1, ..Counts::default() }));
                recap.failures.push(failed);
            }
        }
    }
    recap.elapsed = started.elapsed();
    recap
}

fn failure(node: &str, message: String) -> NodeFailure {
    NodeFailure {
        node: node.to_owned(),
        message,
        command: None,
        code: None,
        stderr_tail: String::new(),
        host_key: false,
        journal: Box::default(),
    }
}

/// One node's SSH: its host, its place in the run (which picks its control socket when
/// commands share one connection), and the bound on each command.
struct Remote<'a> {
    node: &'a Node,
    ssh: &'a Ssh,
    host: String,
    slot: usize,
    timeout: Duration,
}

impl Remote<'_> {
    async fn run(&self, script: &Script, doing: &str) -> Result<String, NodeFailure> {
        remote(self, script, None, doing).await
    }

    async fn send(&self, script: &Script, stdin: &Source, doing: &str) -> Result<String, NodeFailure> {
        remote(self, script, Some(stdin), doing).await
    }

    /// Asks the node's SSH master, when one was opened, to exit (`ssh -O exit`): the run's
    /// connection to the node ends with the node's work rather than at `ControlPersist`.
    async fn close(&self) {
        let Some(argv) = self.ssh.close_argv(self.slot, &self.host) else { return };
        let closed = tokio::process::Command::new(&self.ssh.program)
            .args(argv)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output();
        match tokio::time::timeout(Duration::from_secs(10), closed).await {
            Ok(Ok(out)) if out.status.success() => {}
            // The master has gone already (it exits with its connection): nothing to close.
            Ok(Ok(out)) => {
                tracing::debug!(node = %self.node.name, stderr = %String::from_utf8_lossy(&out.stderr).trim(), "ssh -O exit")
            }
            Ok(Err(err)) => tracing::debug!(node = %self.node.name, error = %err, "ssh -O exit"),
            Err(_) => tracing::debug!(node = %self.node.name, "ssh -O exit did not answer in 10s"),
        }
    }
}

async fn one_node(
    slot: usize,
    node: &Node,
    files: &NodeFiles,
    dialer: Option<&Dialer>,
    options: &Options,
    events: &mpsc::UnboundedSender<BootstrapEvent>,
) -> Result<Counts, NodeFailure> {
    let remote = Remote {
        node,
        ssh: &options.ssh,
        host: node.address.tls_name(),
        slot,
        timeout: options.command_timeout,
    };
    let result = node_work(&remote, files, dialer, options, events).await;
    remote.close().await;
    result
}

async fn node_work(
    remote: &Remote<'_>,
    files: &NodeFiles,
    dialer: Option<&Dialer>,
    options: &Options,
    events: &mpsc::UnboundedSender<BootstrapEvent>,
) -> Result<Counts, NodeFailure> {
    let node = remote.node;
    let stamped = files.stamped_paths();
    let hashed: Vec<&str> = files.paths().into_iter().filter(|p| !stamped.contains(p)).collect();
    let script = probe_script(&hashed, &stamped, REMOTE_STAMPS);
    let probe = remote.run(&script, "reading the node").await?;
    let mut probe = parse_probe(&probe);
    // Before anything is written (the stamps below included): an agent that cannot start there
    // would leave the node with a unit failing in a loop and the operator with only
    // "exited with status 1" to go on.
    if let Some(refused) =
        platform::refusal(&node.name, &options.needs, probe.machine.as_deref(), probe.libc.as_ref())
    {
        return Err(failure(&node.name, refused));
    }
    if !probe.systemd {
        return Err(failure(&node.name, no_systemd(&node.name)));
    }
    // Big files without a stamp that still describes them (installed by hand or an older
    // bootstrap, changed since): hashed on the node once, and stamped unless this is --plan.
    for path in probe.unverified.clone() {
        let script = if options.plan { hash_script(&path) } else { stamp_script(&path, REMOTE_STAMPS) };
        let out = remote.run(&script, "hashing a file").await?;
        read_hashes(&mut probe, &out);
    }
    let files = files.route(probe.dpkg);
    let plan = diff(&files, &probe);
    let _ = events.send(BootstrapEvent::Probed { node: node.name.clone(), plan: plan.clone() });
    let changed = plan.changed();
    if options.plan {
        return Ok(Counts { ok: plan.unchanged, changed, ..Counts::default() });
    }
    let mut service = Script::new();
    for change in &plan.changes {
        match change {
            Change::Write { path, .. } => {
                let Some(file) = files.iter().find(|f| &f.path == path) else { continue };
                let Some(source) = &file.source else {
                    return Err(failure(
                        &node.name,
                        format!("node {}: nothing to install as {path}", node.name),
                    ));
                };
                remote.send(&write_script(path, file.mode), source, "installing a file").await?;
                if matches!(source, Source::File(_)) {
                    // Stamped for the next run, hashed on the node: what arrived is checked too.
                    let out = remote.run(&stamp_script(path, REMOTE_STAMPS), "stamping a file").await?;
                    let mut arrived = Probe::default();
                    read_hashes(&mut arrived, &out);
                    if arrived.sha256.get(path) != file.sha256.as_ref() {
                        return Err(failure(
                            &node.name,
                            format!(
                                "node {}: {path} does not hold what was sent (SHA-256 {} there, {} here); \
                                 is the disk full, or is something else writing it?",
                                node.name,
                                arrived.sha256.get(path).map_or("unknown", String::as_str),
                                file.sha256.as_deref().unwrap_or("unknown"),
                            ),
                        ));
                    }
                }
            }
            Change::Chmod { path, to, .. } => {
                let script = Script::new().cmd(&["chmod", &format!("{to:o}"), "--", path.as_str()]);
                remote.run(&script, "setting a file's mode").await?;
            }
            Change::RemoveFiles { paths } => {
                remote.run(&remove_files_script(paths), "removing the tarball route's files").await?;
            }
            Change::RemovePackage => {
                remote.run(&remove_package_script(), "removing the package").await?;
            }
            Change::Dpkg => {
                // confold/confdef: an environment file already there (ours) is kept, never a
                // question on a terminal that is not there.
                let script =
                    Script::new().cmd(&["dpkg", "-i", "--force-confdef", "--force-confold", REMOTE_DEB]);
                remote.run(&script, "installing the package").await?;
            }
            Change::DaemonReload => service = and(service).cmd(&["systemctl", "daemon-reload"]),
            Change::Enable => service = and(service).cmd(&["systemctl", "enable", "--quiet", SERVICE]),
            Change::Restart { .. } => service = and(service).cmd(&["systemctl", "restart", SERVICE]),
        }
        if !matches!(change, Change::DaemonReload | Change::Enable | Change::Restart { .. }) {
            let _ = events.send(BootstrapEvent::Done { node: node.name.clone(), change: change.clone() });
        }
    }
    if !service.text().is_empty() {
        let started = remote.run(&service, "starting the service").await;
        if let Err(mut failed) = started {
            // systemctl says only "See systemctl status"; why it failed is in the journal.
            failed.journal = journal(remote).await;
            return Err(failed);
        }
        for change in plan
            .changes
            .iter()
            .filter(|c| matches!(c, Change::DaemonReload | Change::Enable | Change::Restart { .. }))
        {
            let _ = events.send(BootstrapEvent::Done { node: node.name.clone(), change: change.clone() });
        }
    }
    let Some(dialer) = dialer else { return Ok(Counts { ok: plan.unchanged, changed, ..Counts::default() }) };
    let running = match wait_for_agent(node, dialer, options.wait, events).await {
        Ok(running) => running,
        Err(mut failed) => {
            // Started but not answering: crashing and restarting, say, or listening elsewhere.
            failed.journal = journal(remote).await;
            return Err(failed);
        }
    };
    // What answers must be what was installed: another agent left running (another route's
    // unit overriding this one, a drop-in, one started by hand) answers just as well.
    let installed = installed(remote, &files).await?;
    if let Some(mismatch) = mismatch(&node.name, &installed, &running) {
        return Err(failure(&node.name, mismatch));
    }
    let _ = events.send(BootstrapEvent::Ready {
        node: node.name.clone(),
        version: running.version,
        build: running.build,
        executable: running.executable,
        elapsed: running.elapsed,
    });
    Ok(Counts { ok: plan.unchanged, changed, ..Counts::default() })
}

/// Bootstrap installs the agent as a systemd service; it checks for systemd before writing
/// anything, so there is nothing to start by other means.
fn no_systemd(node: &str) -> String {
    format!(
        "node {node}: systemd is not running there (/run/systemd/system is missing), and bootstrap installs \
         the agent as a systemd service; nothing was installed. Boot the node with systemd, or leave it out \
         with --node"
    )
}

/// The agent a node holds once bootstrap is done with it, by route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The file systemd starts (`/usr/local/bin/pvfs-agent`, or the package's
    /// `/usr/bin/pvfs-agent`).
    pub executable: String,
    /// Its SHA-256.
    pub sha256: Option<String>,
    /// The package's version (`dpkg-query`), on the package's route.
    pub package_version: Option<String>,
}

/// What the running agent said of itself over mutual TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    pub version: String,
    /// The SHA-256 of its executable as it runs (empty from an agent too old to say).
    pub build: String,
    /// Its executable's path (`/proc/self/exe`; ` (deleted)` when the file was replaced since).
    pub executable: String,
    /// From the (re)start to its first answer.
    pub elapsed: Duration,
}

/// What the route installed: the binary's hash known here, or the package's read on the node
/// (the package's binary is not the one given to bootstrap: `cargo xtask dist` strips it).
async fn installed(remote: &Remote<'_>, files: &[Wanted]) -> Result<Installed, NodeFailure> {
    if files.iter().any(|f| f.path == REMOTE_DEB) {
        let out = remote.run(&package_binary_script(), "reading the package's binary").await?;
        let (sha256, package_version) = parse_package_binary(&out);
        return Ok(Installed { executable: PACKAGE_BINARY.into(), sha256, package_version });
    }
    let sha256 = files.iter().find(|f| f.path == REMOTE_BINARY).and_then(|f| f.sha256.clone());
    Ok(Installed { executable: REMOTE_BINARY.into(), sha256, package_version: None })
}

/// `sha256sum /usr/bin/pvfs-agent` and the package's version, for [`parse_package_binary`].
pub fn package_binary_script() -> Script {
    Script::new()
        .cmd(&["sha256sum", "--", PACKAGE_BINARY])
        .op("2>/dev/null ;")
        .cmd(&["dpkg-query", "-W", "-f", "version ${Version}\\n", PACKAGE])
        .op("2>/dev/null ; true")
}

/// The package binary's SHA-256 and the package's version from [`package_binary_script`].
pub fn parse_package_binary(out: &str) -> (Option<String>, Option<String>) {
    let mut sha256 = None;
    let mut version = None;
    for line in out.lines() {
        if let Some(v) = line.strip_prefix("version ") {
            version = Some(v.trim().to_owned()).filter(|v| !v.is_empty());
        } else if let Some((hash, path)) = line.split_once(' ')
            && is_sha256(hash)
            && path.trim_start_matches([' ', '*']) == PACKAGE_BINARY
        {
            sha256 = Some(hash.to_ascii_lowercase());
        }
    }
    (sha256, version)
}

/// Why the running agent is not the installed one; `None` when it is: the SHA-256 of its
/// executable as it runs against the installed file's (and, for the package, its version
/// against the package's).
pub fn mismatch(node: &str, installed: &Installed, running: &Running) -> Option<String> {
    let short = |h: &str| if h.len() > 12 { format!("{}…", &h[..12]) } else { h.to_owned() };
    let Some(want) = &installed.sha256 else {
        return Some(format!(
            "node {node}: {} is missing after the installation, so what the agent runs cannot be checked; \
             run bootstrap again",
            installed.executable
        ));
    };
    // The package's version is the crate's (`cargo xtask dist`), or that with a Debian revision
    // after its last `-`.
    let version_differs = installed.package_version.as_deref().is_some_and(|v| {
        v != running.version && v.rsplit_once('-').is_none_or(|(upstream, _)| upstream != running.version)
    });
    if &running.build == want && !version_differs {
        return None;
    }
    let runs = if running.build.is_empty() {
        format!("pvfs-agent {} from {}, too old to report its build", running.version, running.executable)
    } else {
        format!(
            "pvfs-agent {} from {} (build {})",
            running.version,
            running.executable,
            short(&running.build)
        )
    };
    let package =
        installed.package_version.as_deref().map(|v| format!(", package pvfs {v}")).unwrap_or_default();
    Some(format!(
        "node {node}: the agent answering is not the one installed: it runs {runs}, and what was installed is \
         {} (build {}{package}). Another pvfs-agent serves its port: see `systemctl cat {SERVICE}` (a drop-in \
         or another unit) and `ss -ltnp` on the node, stop it, and run bootstrap again",
        installed.executable,
        short(want)
    ))
}

/// How many of the unit's journal lines a failure shows.
pub const JOURNAL_LINES: &str = "20";

/// The agent unit's last [`JOURNAL_LINES`] journal lines on the node, for a failure to show;
/// if they cannot be read, one line saying why (the failure itself matters more).
async fn journal(remote: &Remote<'_>) -> Box<[String]> {
    match remote.run(&journal_script(), "reading the unit's journal").await {
        Ok(out) => out.lines().map(str::trim_end).filter(|l| !l.is_empty()).map(str::to_owned).collect(),
        Err(failed) => {
            let why = failed.stderr_tail.lines().last().unwrap_or(&failed.message).to_owned();
            Box::new([format!("(its journal could not be read: {why})")])
        }
    }
}

/// `journalctl -u pvfs-agent -n 20 --no-pager`: the unit's last lines, its ExecStartPre's
/// included, whatever the node's pager settings.
pub fn journal_script() -> Script {
    Script::new().cmd(&["journalctl", "-u", SERVICE, "-n", JOURNAL_LINES, "--no-pager"])
}

/// The tarball route's files, on a node that gets the package: the unit disabled first (its
/// enablement links name this file, and the package's postinst enables its own), the files
/// removed and systemd told.
pub fn remove_files_script(paths: &[String]) -> Script {
    let mut rm = vec!["rm", "-f", "--"];
    rm.extend(paths.iter().map(String::as_str));
    Script::new()
        .cmd(&["systemctl", "disable", "--quiet", SERVICE])
        .op("2>/dev/null ;")
        .cmd(&rm)
        .op("&&")
        .cmd(&["systemctl", "daemon-reload"])
}

/// The package, on a node that gets the binary: disabled while its unit is still there (so no
/// enablement link is left pointing at a file about to go), `dpkg -r` (which stops the agent,
/// keeps /etc/pvfs, and reloads systemd), and bootstrap's cached copy of it deleted.
pub fn remove_package_script() -> Script {
    Script::new()
        .cmd(&["systemctl", "disable", "--quiet", SERVICE])
        .op("2>/dev/null ;")
        .cmd(&["dpkg", "-r", PACKAGE])
        .op("&&")
        .cmd(&["rm", "-f", "--", REMOTE_DEB])
}

fn and(script: Script) -> Script {
    if script.text().is_empty() { script } else { script.op("&&") }
}

/// Streams standard input into a temporary file next to `path` (so the rename stays on one file
/// system), sets its mode, syncs it and renames it over `path`; on failure the temporary goes.
/// `umask 077` keeps a key unreadable between its creation and the chmod, and makes the
/// directories created on the way (`/etc/pvfs/tls`) private.
pub fn write_script(path: &str, mode: u32) -> Script {
    let (dir, name) = path.rsplit_once('/').unwrap_or((".", path));
    let dir = if dir.is_empty() { "/" } else { dir };
    let tmp = format!("{dir}/.{name}.pvfs-bootstrap.{:08x}", fastrand::u32(..));
    Script::new()
        .op("umask 077 &&")
        .cmd(&["mkdir", "-p", "--", dir])
        .op("&&")
        .cmd(&["dd", &format!("of={tmp}"), "bs=1M", "conv=fsync", "status=none"])
        .op("&&")
        .cmd(&["chmod", &format!("{mode:o}"), "--", &tmp])
        .op("&&")
        // -T: a directory in the way is an error, never a place to move the file into.
        .cmd(&["mv", "-fT", "--", &tmp, path])
        .op("|| {")
        .cmd(&["rm", "-f", "--", &tmp])
        .op("; exit 1; }")
}

/// Runs `script` on the node; its standard output, or the failure with the command, status and
/// standard error, a refused host key explained.
async fn remote(
    remote: &Remote<'_>,
    script: &Script,
    stdin: Option<&Source>,
    doing: &str,
) -> Result<String, NodeFailure> {
    let (node, ssh, host, timeout) = (remote.node, remote.ssh, remote.host.as_str(), remote.timeout);
    let command_line = ssh.display(remote.slot, host, script);
    let fail = |message: String, code: Option<i32>, stderr: &str| NodeFailure {
        node: node.name.clone(),
        message,
        command: Some(command_line.as_str().into()),
        code,
        stderr_tail: tail(stderr),
        host_key: false,
        journal: Box::default(),
    };
    let mut command = tokio::process::Command::new(&ssh.program);
    command
        .args(ssh.argv(remote.slot, host, script))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut bytes = None;
    match stdin {
        None => {
            command.stdin(Stdio::null());
        }
        Some(Source::File(path)) => {
            // Checked as when it was hashed (a regular file, within its cap).
            let file = pvfs_host::local_file::open(path, INSTALL_FILE)
                .map_err(|e| fail(format!("node {}: {e}", node.name), None, ""))?;
            command.stdin(Stdio::from(file));
        }
        Some(Source::Bytes(b)) => {
            command.stdin(Stdio::piped());
            bytes = Some(b.clone());
        }
    }
    let mut child = command.spawn().map_err(|e| {
        fail(
            format!(
                "node {}: cannot run {}: {e} (is the OpenSSH client installed?)",
                node.name,
                ssh.program.display()
            ),
            None,
            "",
        )
    })?;
    if let (Some(bytes), Some(mut input)) = (bytes, child.stdin.take()) {
        // Written from its own task so a full pipe cannot deadlock against our reading of
        // stdout/stderr; a write error shows up as ssh's own failure below.
        tokio::spawn(async move {
            let _ = input.write_all(&bytes).await;
            let _ = input.shutdown().await;
        });
    }
    let output = match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(fail(format!("node {}: {doing}: {e}", node.name), None, "")),
        Err(_) => {
            return Err(fail(
                format!("node {}: {doing}: no answer within {}s", node.name, timeout.as_secs()),
                None,
                "",
            ));
        }
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let code = output.status.code();
    // 255 is ssh's own failure; anything else is the remote command's.
    if code == Some(255)
        && let Some(refusal) = Refusal::parse(&stderr)
    {
        let mut failed = fail(refusal.explain(&node.name, host), code, &stderr);
        failed.host_key = refusal.is_host_key();
        return Err(failed);
    }
    let mut message = format!("node {}: {doing} failed", node.name);
    if let Some(hint) = hint(&stderr, ssh, &node.name) {
        message = format!("{message}: {hint}");
    }
    Err(fail(message, code, &stderr))
}

/// What to do about a remote command's failure, read from its standard error, when it is one
/// of the common ones that are the login's rather than the node's: a login that is not root
/// without `--sudo`, and sudo that wants a password.
pub fn hint(stderr: &str, ssh: &Ssh, node: &str) -> Option<String> {
    let login = ssh.user.as_deref().map_or_else(|| "the SSH login".to_owned(), |u| format!("login {u}"));
    // sudo's words (plugins/sudoers/auth/sudo_auth.c, check.c): `-n` refuses to prompt with
    // "a password is required"; without a terminal, "a terminal is required to read the
    // password" (sudo before 1.8.x, or a PAM module that insists).
    if ssh.sudo
        && (stderr.contains("sudo: a password is required")
            || stderr.contains("sudo: a terminal is required")
            || stderr.contains("sudo: no tty present"))
    {
        return Some(format!(
            "passwordless sudo is needed for {login} on {node} (a NOPASSWD rule in its sudoers, e.g. \
             `USER ALL=(root) NOPASSWD: ALL` in /etc/sudoers.d/pvfs), since bootstrap never types a password"
        ));
    }
    if !ssh.sudo
        && (stderr.contains("Permission denied")
            || stderr.contains("Operation not permitted")
            || stderr.contains("Access denied")
            || stderr.contains("are you root?")
            || stderr.contains("requires superuser privilege"))
    {
        return Some(format!(
            "{login} may not write there; if it is not root, pass --sudo (its commands then run through \
             `sudo -n`), or --ssh-user root"
        ));
    }
    None
}

/// The last few lines of a command's standard error.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect();
    lines[lines.len().saturating_sub(6)..].join("\n")
}

/// Dials the agent until it answers `Info` as this node, up to `wait`.
async fn wait_for_agent(
    node: &Node,
    dialer: &Dialer,
    wait: Duration,
    events: &mpsc::UnboundedSender<BootstrapEvent>,
) -> Result<Running, NodeFailure> {
    let started = Instant::now();
    let mut last_report = Instant::now();
    loop {
        let last = match ask(node, dialer).await {
            Ok(info) if info.agent_name == node.name => {
                return Ok(Running {
                    version: info.agent_version,
                    build: info.agent_build,
                    executable: info.agent_executable,
                    elapsed: started.elapsed(),
                });
            }
            Ok(info) => {
                format!(
                    "the agent at {} calls itself {:?}, not {:?}",
                    node.address, info.agent_name, node.name
                )
            }
            Err(err) => err.message,
        };
        let elapsed = started.elapsed();
        if elapsed >= wait {
            return Err(failure(
                &node.name,
                format!(
                    "node {}: the agent did not answer over mutual TLS within {}s (last: {last})",
                    node.name,
                    wait.as_secs()
                ),
            ));
        }
        if last_report.elapsed() >= Duration::from_secs(2) {
            let _ = events.send(BootstrapEvent::Waiting { node: node.name.clone(), elapsed, last });
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn ask(node: &Node, dialer: &Dialer) -> Result<pvfs_metrics::facts::NodeInfo, DialError> {
    let timeout = dialer.timeout();
    let mut conn = dialer.connect(node).await?;
    let info = tokio::time::timeout(timeout, conn.agent.info(pb::InfoRequest {}))
        .await
        .map_err(|_| timed_out(&node.address, timeout))?
        .map_err(|status| from_status(&status, &node.address, timeout))?
        .into_inner()
        .node
        .ok_or_else(|| DialError {
            kind: FailureKind::Rpc,
            message: "the agent sent no node facts".into(),
        })?;
    Ok(pvfs_metrics::facts::NodeInfo::from(info))
}

#[cfg(test)]
mod tests;
