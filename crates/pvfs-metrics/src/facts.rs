//! Node facts: what the node is, as opposed to what it is doing (samples).
//!
//! Each fact is one small file (`/proc/sys/kernel/hostname`, `/sys/block/sdc/size`, …) read
//! under a [`Root`]. These are hand-written rather than taken from `sysinfo`/`procfs` because
//! those read the real `/proc` and `/sys` only (no injectable root for tests), and `sysinfo`
//! reports neither block devices nor NIC speeds. Essential facts (hostname, kernel, memory) fail
//! the read; optional ones (a NIC's speed, a disk's model) degrade to "not reported".

use pvfs_host::{Root, RootError, Runner};
use serde::{Deserialize, Serialize};

/// What an agent's `Info` answers: who the agent is, and the facts of its node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// The name the agent was started with; the cluster file's node name.
    pub agent_name: String,
    pub agent_version: String,
    pub agent_uptime_seconds: u64,
    /// The SHA-256 of the agent's executable as it runs: the build that answers. (Defaulted:
    /// results written before it was reported lack it; empty from an agent that could not
    /// read it.)
    #[serde(default)]
    pub agent_build: String,
    /// Its executable's path, ` (deleted)` at the end when the file was replaced since.
    #[serde(default)]
    pub agent_executable: String,
    #[serde(flatten)]
    pub facts: NodeFacts,
}

/// Everything the host tells about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeFacts {
    pub hostname: String,
    pub os: OsRelease,
    pub kernel: String,
    pub cpu: Cpu,
    pub memory_bytes: u64,
    pub block_devices: Vec<BlockDevice>,
    pub nics: Vec<Nic>,
    pub uptime_seconds: u64,
    /// The kernel's id for this boot (`/proc/sys/kernel/random/boot_id`); empty where the kernel
    /// does not say. A new value means the node rebooted, which uptime alone cannot prove.
    /// (Defaulted: results written before it was reported lack it.)
    #[serde(default)]
    pub boot_id: String,
    /// The node's SSH host key as `TYPE BASE64` (its comment dropped), from
    /// [`SSH_HOST_KEY`]; empty where the node has none. `[bench] mpi_ssh` writes the
    /// clients' keys into the known_hosts file mpirun's ssh checks.
    #[serde(default)]
    pub ssh_host_key: String,
    /// SELinux's mode, as the kernel has it ([`read_selinux`]). (Defaulted: results written
    /// before it was reported lack it.)
    #[serde(default)]
    pub selinux: Selinux,
    /// The host firewall that filters what reaches the file system's ports ([`read_firewall`]).
    #[serde(default)]
    pub firewall: HostFirewall,
}

/// SELinux's mode on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Selinux {
    /// Not reported (an agent from before it was, or selinuxfs unreadable).
    #[default]
    Unknown,
    /// No selinuxfs: the kernel has no SELinux, or it was disabled at boot.
    Disabled,
    /// Policy loaded, denials logged but not enforced.
    Permissive,
    /// Policy loaded and enforced.
    Enforcing,
}

impl Selinux {
    pub fn as_str(self) -> &'static str {
        match self {
            Selinux::Unknown => "",
            Selinux::Disabled => "disabled",
            Selinux::Permissive => "permissive",
            Selinux::Enforcing => "enforcing",
        }
    }

    /// The wire's word; anything else is [`Selinux::Unknown`].
    pub fn from_word(word: &str) -> Selinux {
        match word {
            "disabled" => Selinux::Disabled,
            "permissive" => Selinux::Permissive,
            "enforcing" => Selinux::Enforcing,
            _ => Selinux::Unknown,
        }
    }
}

/// Which host firewall is active on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostFirewall {
    /// Not reported (an agent from before it was).
    #[default]
    Unknown,
    /// Neither firewalld running nor ufw enabled.
    None,
    /// firewalld is running: `pvfsctl up` opens the file system's ports in it (unless the
    /// cluster file says `firewall = "leave"`).
    Firewalld,
    /// ufw is enabled: reported, never changed by pvfs.
    Ufw,
}

impl HostFirewall {
    pub fn as_str(self) -> &'static str {
        match self {
            HostFirewall::Unknown => "",
            HostFirewall::None => "none",
            HostFirewall::Firewalld => "firewalld",
            HostFirewall::Ufw => "ufw",
        }
    }

    /// The wire's word; anything else is [`HostFirewall::Unknown`].
    pub fn from_word(word: &str) -> HostFirewall {
        match word {
            "none" => HostFirewall::None,
            "firewalld" => HostFirewall::Firewalld,
            "ufw" => HostFirewall::Ufw,
            _ => HostFirewall::Unknown,
        }
    }

    /// Whether it filters incoming connections by default.
    pub fn is_active(self) -> bool {
        matches!(self, HostFirewall::Firewalld | HostFirewall::Ufw)
    }
}

/// The host key `NodeFacts::ssh_host_key` reports: OpenSSH's ed25519 key, which every
/// OpenSSH since 6.5 generates and Debian's and RHEL's sshd offer first.
pub const SSH_HOST_KEY: &str = "/etc/ssh/ssh_host_ed25519_key.pub";

/// `TYPE BASE64 [COMMENT]` (an OpenSSH public key file) as `TYPE BASE64`; `None` for anything
/// else, so a garbled file is reported as no key rather than written into known_hosts.
pub fn public_key_words(text: &str) -> Option<String> {
    let mut words = text.split_ascii_whitespace();
    let (kind, blob) = (words.next()?, words.next()?);
    let kind_ok = kind.starts_with("ssh-") || kind.starts_with("ecdsa-") || kind.starts_with("sk-");
    let blob_ok =
        blob.len() >= 16 && blob.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='));
    (kind_ok && kind.chars().all(|c| c.is_ascii_graphic()) && blob_ok).then(|| format!("{kind} {blob}"))
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OsRelease {
    pub id: String,
    pub version_id: String,
    pub pretty_name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Cpu {
    pub logical: u32,
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockDevice {
    pub name: String,
    pub path: String,
    pub size_bytes: u64,
    pub rotational: bool,
    /// Empty when the driver does not report a model.
    pub model: String,
    pub signature: Signature,
}

/// What `blkid -p` says is on a device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Signature {
    /// `blkid -p` exited 2 with nothing on stderr for a device node that exists: no
    /// filesystem, RAID member or partition table.
    Empty,
    /// A signature, e.g. `xfs`, `linux_raid_member`, `gpt`.
    Present { kind: String },
    /// Not proven either way; never treat this as empty.
    Unknown { detail: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nic {
    pub name: String,
    pub mac: String,
    /// Mbit/s; `None` when the driver reports none (virtual NICs, link down).
    pub speed_mbps: Option<u32>,
    pub mtu: u32,
    pub operstate: String,
    /// "full", "half", or empty when not reported.
    pub duplex: String,
}

/// An essential fact could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    #[error(transparent)]
    Read(#[from] RootError),
    #[error("cannot parse {path}: {what}")]
    Parse { path: &'static str, what: String },
}

/// Reads every fact about the node under `root`, probing block devices with `runner`.
pub async fn read(root: &Root, runner: &impl Runner) -> Result<NodeFacts, FactsError> {
    Ok(NodeFacts {
        hostname: root.read_trimmed("/proc/sys/kernel/hostname")?,
        os: read_os_release(root),
        kernel: root.read_trimmed("/proc/sys/kernel/osrelease")?,
        cpu: read_cpu(root)?,
        memory_bytes: read_mem_total(root)?,
        block_devices: read_block_devices(root, runner).await,
        nics: read_nics(root),
        uptime_seconds: read_uptime(root)?,
        boot_id: root.read_trimmed("/proc/sys/kernel/random/boot_id").unwrap_or_default(),
        ssh_host_key: root
            .read_to_string(SSH_HOST_KEY)
            .ok()
            .and_then(|text| public_key_words(&text))
            .unwrap_or_default(),
        selinux: read_selinux(root),
        firewall: read_firewall(root, runner).await,
    })
}

/// SELinux's mode from selinuxfs, the kernel's own interface (what `getenforce` reads through
/// libselinux's `security_getenforce`): `enforce` holds `1` (enforcing) or `0` (permissive).
/// libselinux looks for selinuxfs at /sys/fs/selinux (`SELINUXMNT`, every EL7+ and Debian
/// kernel) and then at /selinux (`OLDSELINUXMNT`, EL6); neither mounted means SELinux is
/// disabled (the kernel registers selinuxfs only when SELinux is enabled; selinux(8):
/// "disabled ... leaving the system running without any SELinux protection").
pub fn read_selinux(root: &Root) -> Selinux {
    for dir in ["/sys/fs/selinux", "/selinux"] {
        match root.read_trimmed(&format!("{dir}/enforce")) {
            Ok(value) if value == "1" => return Selinux::Enforcing,
            Ok(value) if value == "0" => return Selinux::Permissive,
            Ok(value) => {
                tracing::warn!(dir, value, "selinuxfs's enforce holds neither 0 nor 1");
                return Selinux::Unknown;
            }
            Err(err) if err.is_not_found() => continue,
            Err(err) => {
                tracing::warn!(error = %err, "SELinux's mode not reported");
                return Selinux::Unknown;
            }
        }
    }
    Selinux::Disabled
}

/// Which host firewall is on: firewalld when its client is installed
/// (`/usr/bin/firewall-cmd`, firewalld.spec's `%{_bindir}/firewall-cmd`) and systemd has
/// its unit active (`systemctl is-active firewalld`: firewall-cmd itself waits up to 10 s for
/// a stopped daemon); else ufw when its configuration starts it (`/etc/ufw/ufw.conf`,
/// `ENABLED=yes`, ufw.conf(5)); else none.
pub async fn read_firewall(root: &Root, runner: &impl Runner) -> HostFirewall {
    if root.exists(pvfs_host::paths::FIREWALL_CMD) {
        let is_active = pvfs_host::Command::new("systemctl").args(["is-active", "firewalld"]);
        match runner.run(&is_active).await {
            Ok(out) if out.stdout.trim() == "active" => return HostFirewall::Firewalld,
            Ok(_) => {}
            Err(err) => {
                tracing::warn!(error = %err, "firewalld's state not reported");
                return HostFirewall::Unknown;
            }
        }
    }
    let ufw = root.read_to_string("/etc/ufw/ufw.conf").unwrap_or_default();
    let enabled = ufw.lines().any(|line| {
        line.trim().strip_prefix("ENABLED=").is_some_and(|v| v.trim().trim_matches(['"', '\'']) == "yes")
    });
    if enabled { HostFirewall::Ufw } else { HostFirewall::None }
}

/// `/etc/os-release`, falling back to `/usr/lib/os-release` as os-release(5) says. A node
/// without either still reports its other facts.
fn read_os_release(root: &Root) -> OsRelease {
    let text = root
        .read_to_string("/etc/os-release")
        .or_else(|_| root.read_to_string("/usr/lib/os-release"))
        .unwrap_or_default();
    // KEY=value lines with optional shell quoting; no crate needed for a format this small.
    let mut os = OsRelease::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else { continue };
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'').to_owned();
        match key.trim() {
            "ID" => os.id = value,
            "VERSION_ID" => os.version_id = value,
            "PRETTY_NAME" => os.pretty_name = value,
            _ => {}
        }
    }
    os
}

fn read_cpu(root: &Root) -> Result<Cpu, FactsError> {
    let text = root.read_to_string("/proc/cpuinfo")?;
    let mut cpu = Cpu::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        match key.trim() {
            "processor" => cpu.logical += 1,
            "model name" if cpu.model.is_empty() => cpu.model = value.trim().to_owned(),
            _ => {}
        }
    }
    if cpu.logical == 0 {
        return Err(FactsError::Parse { path: "/proc/cpuinfo", what: "no processor lines".into() });
    }
    Ok(cpu)
}

fn read_mem_total(root: &Root) -> Result<u64, FactsError> {
    let text = root.read_to_string("/proc/meminfo")?;
    let kib = text
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .ok_or(FactsError::Parse { path: "/proc/meminfo", what: "no MemTotal line".into() })?;
    // A size past 16 EiB is no kernel's: refused, not wrapped (or a panic in a debug build).
    kib.checked_mul(1024)
        .ok_or(FactsError::Parse { path: "/proc/meminfo", what: format!("MemTotal {kib} kB is past 16 EiB") })
}

fn read_uptime(root: &Root) -> Result<u64, FactsError> {
    let text = root.read_to_string("/proc/uptime")?;
    text.split_whitespace()
        .next()
        .and_then(|s| s.parse::<f64>().ok())
        .map(|secs| secs as u64)
        .ok_or(FactsError::Parse { path: "/proc/uptime", what: format!("unexpected {text:?}") })
}

/// Whole block devices from `/sys/block`, each probed with `blkid -p`. RAM disks and loop
/// devices with nothing attached (size 0) are left out: they can hold no data.
async fn read_block_devices(root: &Root, runner: &impl Runner) -> Vec<BlockDevice> {
    let names = match root.list_dir("/sys/block") {
        Ok(names) => names,
        Err(err) => {
            tracing::warn!(error = %err, "no block devices reported");
            return Vec::new();
        }
    };
    let mut devices = Vec::new();
    for name in names {
        let sys = format!("/sys/block/{name}");
        let sectors = root.read_trimmed(&format!("{sys}/size")).ok().and_then(|s| s.parse::<u64>().ok());
        let Some(sectors) = sectors.filter(|&s| s > 0) else { continue };
        if name.starts_with("ram") {
            continue;
        }
        let path = format!("/dev/{name}");
        let signature = probe_signature(root, runner, &path).await;
        devices.push(BlockDevice {
            // The kernel counts `size` in 512-byte sectors whatever the device's block size.
            size_bytes: sectors * 512,
            rotational: root.read_trimmed(&format!("{sys}/queue/rotational")).is_ok_and(|s| s == "1"),
            model: root.read_trimmed(&format!("{sys}/device/model")).unwrap_or_default(),
            name,
            path,
            signature,
        });
    }
    devices
}

/// What `blkid -p` says is on `path` (the rule for "empty" is [`pvfs_host::blkid::probe`]'s).
pub async fn probe_signature(root: &Root, runner: &impl Runner, path: &str) -> Signature {
    match pvfs_host::blkid::probe(root, runner, path).await {
        pvfs_host::blkid::Probe::Empty => Signature::Empty,
        found @ pvfs_host::blkid::Probe::Found(_) => {
            Signature::Present { kind: found.kind().unwrap_or("unknown").to_owned() }
        }
        pvfs_host::blkid::Probe::Unknown(detail) => Signature::Unknown { detail },
    }
}

/// Network interfaces from `/sys/class/net`, loopback left out.
fn read_nics(root: &Root) -> Vec<Nic> {
    let names = match root.list_dir("/sys/class/net") {
        Ok(names) => names,
        Err(err) => {
            tracing::warn!(error = %err, "no network interfaces reported");
            return Vec::new();
        }
    };
    names
        .into_iter()
        .filter(|name| name != "lo")
        .map(|name| {
            let attr = |file: &str| root.read_trimmed(&format!("/sys/class/net/{name}/{file}"));
            Nic {
                mac: attr("address").unwrap_or_default(),
                // Reading `speed` fails with EINVAL for virtual NICs and gives -1 with no link.
                speed_mbps: attr("speed")
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .and_then(|s| u32::try_from(s).ok().filter(|&s| s > 0)),
                mtu: attr("mtu").ok().and_then(|s| s.parse().ok()).unwrap_or(0),
                operstate: attr("operstate").unwrap_or_default(),
                duplex: attr("duplex").unwrap_or_default(),
                name,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
