//! The validated cluster: what the rest of pvfs works from.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;

/// A cluster file that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// The file it was read from.
    pub source: PathBuf,
    pub name: String,
    pub kind: Kind,
    pub nodes: Vec<Node>,
    /// The `[tls] dir`, resolved against the cluster file's directory.
    pub tls_dir: PathBuf,
    pub spec: KindSpec,
    pub bench: Bench,
    pub packages: Packages,
    pub repos: Vec<Repo>,
    /// `[azure]`: the VMs `pvfsctl provision` makes for the nodes, when the file has one.
    pub azure: Option<crate::azure::Azure>,
    /// `[policy]`: the agent policy bootstrap installs, when the file gives one.
    pub policy: Option<PolicySpec>,
    /// `[cluster] firewall`: whether `up` opens the file system's ports in firewalld.
    pub firewall: Firewall,
}

/// `[cluster] firewall`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Firewall {
    /// Open the ports each node's role needs where firewalld runs (the default: on an EL7/EL8
    /// default install firewalld runs and lets none of them through).
    #[default]
    Open,
    /// Change no firewall: the site manages it.
    Leave,
}

impl Firewall {
    pub const ALL: [Firewall; 2] = [Firewall::Open, Firewall::Leave];

    pub fn as_str(self) -> &'static str {
        match self {
            Firewall::Open => "open",
            Firewall::Leave => "leave",
        }
    }
}

impl Cluster {
    /// The agent policy the cluster file gives `node` (`[policy]` with its roles' tables on
    /// top), or `None` when the file gives none (bootstrap then leaves the node's own alone).
    pub fn policy_for(&self, node: &Node) -> Option<AgentPolicy> {
        let spec = self.policy.as_ref()?;
        let mut policy = spec.base.clone();
        for role in &node.roles {
            if let Some(over) = spec.roles.get(role) {
                policy = over.clone().over(policy);
            }
        }
        Some(policy.finish())
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The nodes with `role`, in file order.
    pub fn with_role(&self, role: Role) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(move |n| n.roles.contains(&role))
    }
}

/// One `[[node]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub address: Address,
    pub roles: Vec<Role>,
    pub disks: Vec<PathBuf>,
    /// BeeGFS: the metadata target's disks when they are not `disks`.
    pub meta_disks: Vec<PathBuf>,
    /// Disks the cluster file allows pvfs to destroy the contents of.
    pub wipe: Vec<PathBuf>,
    /// The node's number in the file system (OST index, BeeGFS node ID), when given.
    pub id: Option<u32>,
    /// `pvfsctl up` may reboot this node into a kernel it must boot (a Lustre server's).
    pub reboot: bool,
    /// Lustre: the node's address on the interface LNet is pinned to, when it is not the
    /// agent's; the node's NID is this address on the LNet network.
    pub lnet_address: Option<std::net::Ipv4Addr>,
}

impl Node {
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }

    /// Whether `disk` may be wiped.
    pub fn may_wipe(&self, disk: &std::path::Path) -> bool {
        self.wipe.iter().any(|w| w == disk)
    }
}

/// The parallel file system a cluster runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Lustre,
    Glusterfs,
    Beegfs,
    /// One machine, directories as targets: runs anywhere, for trying pvfs out.
    Local,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Lustre, Kind::Glusterfs, Kind::Beegfs, Kind::Local];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Lustre => "lustre",
            Kind::Glusterfs => "glusterfs",
            Kind::Beegfs => "beegfs",
            Kind::Local => "local",
        }
    }

    /// The roles a node of this kind may have.
    pub fn roles(self) -> &'static [Role] {
        match self {
            Kind::Lustre => &[Role::Mgs, Role::Mds, Role::Oss, Role::Client],
            Kind::Glusterfs => &[Role::Server, Role::Client],
            Kind::Beegfs => &[Role::Mgmtd, Role::Meta, Role::Storage, Role::Client],
            Kind::Local => &[Role::Server, Role::Client],
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = ();
    fn from_str(s: &str) -> Result<Kind, ()> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s).ok_or(())
    }
}

/// What a node is in its file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Lustre management server.
    Mgs,
    /// Lustre metadata server.
    Mds,
    /// Lustre object storage server.
    Oss,
    /// GlusterFS server (bricks), or a local-kind target holder.
    Server,
    /// BeeGFS management daemon.
    Mgmtd,
    /// BeeGFS metadata server.
    Meta,
    /// BeeGFS storage server.
    Storage,
    /// Mounts the file system and runs benchmarks.
    Client,
}

impl Role {
    pub const ALL: [Role; 8] =
        [Role::Mgs, Role::Mds, Role::Oss, Role::Server, Role::Mgmtd, Role::Meta, Role::Storage, Role::Client];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Mgs => "mgs",
            Role::Mds => "mds",
            Role::Oss => "oss",
            Role::Server => "server",
            Role::Mgmtd => "mgmtd",
            Role::Meta => "meta",
            Role::Storage => "storage",
            Role::Client => "client",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = ();
    fn from_str(s: &str) -> Result<Role, ()> {
        Role::ALL.into_iter().find(|r| r.as_str() == s).ok_or(())
    }
}

/// Where an agent listens.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Address {
    pub host: Host,
    pub port: u16,
}

/// The host part of an [`Address`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    Ip(IpAddr),
    /// A DNS name, resolved when dialled.
    Name(String),
}

impl Address {
    /// True when the address can only be reached from this machine (127.0.0.0/8, ::1,
    /// "localhost"). Not a security boundary: every user of the machine reaches it too.
    pub fn is_loopback(&self) -> bool {
        match &self.host {
            Host::Ip(ip) => ip.is_loopback(),
            Host::Name(name) => name == "localhost",
        }
    }

    /// The host as TLS verifies it: an IP without brackets, or the DNS name.
    pub fn tls_name(&self) -> String {
        match &self.host {
            Host::Ip(ip) => ip.to_string(),
            Host::Name(name) => name.clone(),
        }
    }

    /// The socket address, when the host is an IP.
    pub fn socket_addr(&self) -> Option<SocketAddr> {
        match self.host {
            Host::Ip(ip) => Some(SocketAddr::new(ip, self.port)),
            Host::Name(_) => None,
        }
    }
}

impl From<SocketAddr> for Address {
    fn from(addr: SocketAddr) -> Address {
        Address { host: Host::Ip(addr.ip()), port: addr.port() }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]:{}", self.port),
            Host::Ip(ip) => write!(f, "{ip}:{}", self.port),
            Host::Name(name) => write!(f, "{name}:{}", self.port),
        }
    }
}

impl FromStr for Address {
    type Err = String;

    /// `IP:PORT`, `[IPv6]:PORT`, `HOST:PORT`, or an IP or host alone (default port).
    fn from_str(s: &str) -> Result<Address, String> {
        if let Ok(addr) = s.parse::<SocketAddr>() {
            return check_port(addr.port()).map(|port| Address { host: Host::Ip(addr.ip()), port });
        }
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Ok(Address { host: Host::Ip(ip), port: crate::DEFAULT_AGENT_PORT });
        }
        let (host, port) = match s.rsplit_once(':') {
            Some((host, port)) => {
                let port = port
                    .parse::<u16>()
                    .map_err(|_| format!("port {port:?} is not a number from 1 to 65535"))?;
                (host, check_port(port)?)
            }
            None => (s, crate::DEFAULT_AGENT_PORT),
        };
        if host.starts_with('[') || host.contains(':') {
            return Err(format!("{host:?} is not a valid IP address (IPv6 goes in brackets: [::1]:7070)"));
        }
        if !is_dns_name(host) {
            return Err(format!(
                "{host:?} is neither an IP address nor a host name (letters, digits, '-' and '.')"
            ));
        }
        // A name whose last label is all digits is a mistyped IPv4 address ("10.0.0.300"), not
        // a host: no top-level domain is numeric (RFC 3696, section 2).
        if host.rsplit('.').next().is_some_and(|tld| tld.chars().all(|c| c.is_ascii_digit())) {
            return Err(format!("{host:?} is not a valid IPv4 address (four numbers from 0 to 255)"));
        }
        Ok(Address { host: Host::Name(host.to_ascii_lowercase()), port })
    }
}

fn check_port(port: u16) -> Result<u16, String> {
    if port == 0 {
        Err("port 0 cannot be dialled; give the port the agent listens on".into())
    } else {
        Ok(port)
    }
}

/// RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens.
pub(crate) fn is_dns_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// Settings that depend on the kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KindSpec {
    Lustre {
        fsname: String,
        mount: PathBuf,
        /// The LNet network (`tcp`, `o2ib1`).
        lnet: String,
        /// The interface LNet is pinned to (`lnet = "tcp(eth0)"`), if any.
        interface: Option<String>,
        /// Pins the Lustre packages.
        version: Option<String>,
        mdt: Target,
        ost: Target,
        /// The benchmark directory's default layout (`[lustre] stripe`), if set.
        stripe: Option<Stripe>,
        /// `lctl set_param` on every client (`[lustre.client] lctl`), by name.
        client_lctl: Vec<(String, String)>,
    },
    Glusterfs {
        volume: String,
        mount: PathBuf,
        layout: Layout,
        options: Vec<(String, String)>,
        brick: Target,
    },
    Beegfs {
        mount: PathBuf,
        mgmtd_dir: PathBuf,
        meta: Target,
        storage: Target,
        client_tuning: Vec<(String, String)>,
        /// Connection authentication between every BeeGFS service and client.
        auth: BeegfsAuth,
        /// `connInterfacesFile`: the interfaces the services and clients use, in order.
        interfaces: Vec<String>,
        /// `connNetFilterFile`: the subnets they may connect to.
        net_filter: Vec<String>,
    },
    Local {
        mount: PathBuf,
        /// Where servers keep their target directories.
        targets: PathBuf,
    },
}

impl KindSpec {
    /// Where clients see the file system.
    pub fn mount(&self) -> &PathBuf {
        match self {
            KindSpec::Lustre { mount, .. }
            | KindSpec::Glusterfs { mount, .. }
            | KindSpec::Beegfs { mount, .. }
            | KindSpec::Local { mount, .. } => mount,
        }
    }
}

/// How BeeGFS services authenticate each other (`connAuthFile`, BeeGFS 7.3+ requires it or
/// `connDisableAuthentication`).
#[derive(Clone, PartialEq, Eq)]
pub enum BeegfsAuth {
    /// The shared secret's contents, copied to every node.
    Secret(String),
    /// `connDisableAuthentication = true`.
    Disabled,
}

impl fmt::Debug for BeegfsAuth {
    /// Never the secret itself: plans and errors are logged.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BeegfsAuth::Secret(s) => write!(f, "Secret(<{} bytes>)", s.len()),
            BeegfsAuth::Disabled => f.write_str("Disabled"),
        }
    }
}

/// A Lustre default layout: `count` stripes (-1: every OST) of `size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stripe {
    pub count: i64,
    pub size: u64,
}

/// How a GlusterFS volume places files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Distribute,
    Replicate { replica: u32 },
    Disperse { disperse: u32, redundancy: u32 },
}

/// How a server's disks become the file system a target lives on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The md device made from the node's disks when it has more than one.
    pub raid: String,
    pub raid_chunk_kib: Option<u32>,
    pub lvm: Option<Lvm>,
    /// xfs or ext4 (unused for Lustre targets).
    pub fs: String,
    pub mkfs_options: Vec<String>,
    pub mount_options: String,
    pub label: Option<String>,
    /// Where the target's file system is mounted.
    pub path: PathBuf,
    pub queue: Option<Queue>,
    /// BeeGFS config keys.
    pub tuning: Vec<(String, String)>,
}

/// An LVM thin pool and volume between disks and file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lvm {
    pub vg: String,
    pub pool: String,
    pub lv: String,
    pub pool_size: String,
    pub virtual_size: String,
    pub chunk: Option<String>,
    pub data_alignment: Option<String>,
    pub extent_size: Option<String>,
    pub zero: bool,
}

/// Block-queue settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queue {
    pub scheduler: Option<String>,
    pub nr_requests: Option<u32>,
    pub read_ahead_kb: Option<u32>,
}

/// A package name and the version it is pinned to, if any.
pub type PinnedPackage = (String, Option<String>);

/// `[packages]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Packages {
    /// "auto", "apt", "dnf" or "yum".
    pub manager: String,
    /// Lists replacing the kind's defaults, per role.
    pub per_role: Vec<(Role, Vec<PinnedPackage>)>,
}

impl Packages {
    /// The list the file gives for `role`, if any.
    pub fn for_role(&self, role: Role) -> Option<&[PinnedPackage]> {
        self.per_role.iter().find(|(r, _)| *r == role).map(|(_, list)| list.as_slice())
    }
}

/// `[policy]` as validated: its own keys, and each role's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicySpec {
    pub base: PolicyKeys,
    pub roles: std::collections::BTreeMap<Role, PolicyKeys>,
}

/// One policy table's keys, each `None` where the table leaves it out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyKeys {
    pub kinds: Option<Vec<String>>,
    pub devices: Option<Vec<String>>,
    pub data_roots: Option<Vec<String>>,
    pub repositories: Option<Vec<String>>,
    pub services: Option<Vec<String>>,
    pub refuse_unsigned_repositories: Option<bool>,
    pub mpi_ssh: Option<bool>,
    pub faults: Option<bool>,
}

impl PolicyKeys {
    /// These keys, and `under`'s where these leave one out.
    pub fn over(self, under: PolicyKeys) -> PolicyKeys {
        PolicyKeys {
            kinds: self.kinds.or(under.kinds),
            devices: self.devices.or(under.devices),
            data_roots: self.data_roots.or(under.data_roots),
            repositories: self.repositories.or(under.repositories),
            services: self.services.or(under.services),
            refuse_unsigned_repositories: self
                .refuse_unsigned_repositories
                .or(under.refuse_unsigned_repositories),
            mpi_ssh: self.mpi_ssh.or(under.mpi_ssh),
            faults: self.faults.or(under.faults),
        }
    }

    /// The first key both set, to different values.
    pub fn conflict(&self, other: &PolicyKeys) -> Option<&'static str> {
        fn differ<T: PartialEq>(a: &Option<T>, b: &Option<T>) -> bool {
            matches!((a, b), (Some(a), Some(b)) if a != b)
        }
        [
            ("kinds", differ(&self.kinds, &other.kinds)),
            ("devices", differ(&self.devices, &other.devices)),
            ("data_roots", differ(&self.data_roots, &other.data_roots)),
            ("repositories", differ(&self.repositories, &other.repositories)),
            ("services", differ(&self.services, &other.services)),
            (
                "refuse_unsigned_repositories",
                differ(&self.refuse_unsigned_repositories, &other.refuse_unsigned_repositories),
            ),
            ("mpi_ssh", differ(&self.mpi_ssh, &other.mpi_ssh)),
            ("faults", differ(&self.faults, &other.faults)),
        ]
        .into_iter()
        .find_map(|(key, differs)| differs.then_some(key))
    }

    fn finish(self) -> AgentPolicy {
        AgentPolicy {
            kinds: self.kinds,
            devices: self.devices,
            data_roots: self.data_roots,
            repositories: self.repositories,
            services: self.services.unwrap_or_default(),
            refuse_unsigned_repositories: self.refuse_unsigned_repositories.unwrap_or(false),
            mpi_ssh: self.mpi_ssh.unwrap_or(false),
            faults: self.faults.unwrap_or(false),
        }
    }
}

/// One node's agent policy as the cluster file gives it: the agent's policy file, key for key
/// (pvfs-agent's `policy` module reads what [`AgentPolicy::render`] writes).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct AgentPolicy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kinds: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_roots: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repositories: Option<Vec<String>>,
    pub services: Vec<String>,
    pub refuse_unsigned_repositories: bool,
    pub mpi_ssh: bool,
    /// Written only when granted, so a policy file for an agent that predates the key still
    /// reads.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub faults: bool,
}

impl AgentPolicy {
    /// The policy file's text for `node`, saying where it came from: the file is the cluster
    /// file's to change, and the next bootstrap puts back what it says.
    pub fn render(&self, cluster_file: &std::path::Path, node: &str) -> String {
        // Strings, lists of strings and booleans: nothing toml cannot write.
        let body = toml::to_string(self).unwrap_or_default();
        format!(
            "# pvfs-agent's policy for node {node}, written by `pvfsctl bootstrap` from the [policy] of\n\
             # {}. Change it there and run bootstrap again: an edit here is replaced.\n{body}",
            cluster_file.display()
        )
    }
}

/// `[[repo]]`: a yum/dnf repository, or an apt one when it has suites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    pub name: String,
    pub baseurl: String,
    /// Empty: every node.
    pub roles: Vec<Role>,
    pub gpgkey: Option<String>,
    /// Signatures checked (the default); `false` only where the file says `gpgcheck = false`.
    pub gpgcheck: bool,
    /// The file allows plain http for this repository.
    pub allow_http: bool,
    /// apt's suites; empty for a yum/dnf repository.
    pub suites: Vec<String>,
    /// apt's components.
    pub components: Vec<String>,
    /// apt: the armored signing key read from `gpgkey_file`, shipped to the nodes.
    pub key: Option<String>,
}

/// `[bench]` defaults; each is `None` when the file leaves it to the command's default.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bench {
    pub mount: Option<PathBuf>,
    pub launcher: Option<pvfs_bench::launch::Launcher>,
    pub engine: Option<pvfs_bench::launch::Engine>,
    pub preset: Option<pvfs_bench::params::Preset>,
    pub procs_per_client: Option<u32>,
    /// Overrides, checked against the preset (or "throughput") when the file is loaded.
    pub params: Vec<(String, String)>,
    pub vm_limit_mib: Option<OrderedF64>,
    /// `mpi_ssh = true`: `up` gives the clients root ssh to each other for mpirun
    /// (`pvfs_steps::MpiSsh`), `down` takes it away.
    pub mpi_ssh: bool,
    /// Whose caches are dropped before read and stat phases.
    pub drop_caches: Option<pvfs_bench::request::DropCaches>,
    /// The real io500 on the clients (engine io500).
    pub io500: Option<PathBuf>,
}

/// An f64 that compares by bits, so the model can stay `Eq`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrderedF64(pub f64);

impl Eq for OrderedF64 {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_in_every_accepted_form() {
        let cases = [
            ("10.0.0.4:7070", "10.0.0.4:7070", false),
            ("10.0.0.4", "10.0.0.4:7070", false),
            ("[::1]:9000", "[::1]:9000", true),
            ("::1", "[::1]:7070", true),
            ("OSS00.cluster.local:7071", "oss00.cluster.local:7071", false),
            ("localhost", "localhost:7070", true),
            ("127.0.0.12:1", "127.0.0.12:1", true),
        ];
        for (input, shown, loopback) in cases {
            let addr: Address = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(addr.to_string(), shown, "{input}");
            assert_eq!(addr.is_loopback(), loopback, "{input}");
        }
    }

    #[test]
    fn bad_addresses_say_why() {
        let cases = [
            ("10.0.0.4:70x0", "port \"70x0\" is not a number from 1 to 65535"),
            ("10.0.0.4:0", "port 0 cannot be dialled"),
            ("10.0.0.4:99999", "port \"99999\" is not a number"),
            ("fe80::zz:7070", "not a valid IP address"),
            ("oss_00:7070", "neither an IP address nor a host name"),
            ("", "neither an IP address nor a host name"),
            ("10.0.0.300", "not a valid IPv4 address"),
            ("10.0.0.1.2:7070", "not a valid IPv4 address"),
        ];
        for (input, want) in cases {
            let err = input.parse::<Address>().unwrap_err();
            assert!(err.contains(want), "{input}: {err}");
        }
    }
}
