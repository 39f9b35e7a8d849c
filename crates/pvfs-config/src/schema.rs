//! The cluster file as written: serde structs, one per TOML table.
//!
//! Every struct denies unknown fields, so a misspelt key is an error rather than a silently
//! ignored setting. Values whose correctness serde cannot judge (roles, addresses, names) are
//! kept as spanned strings and checked by the validation pass, so that it can report all of
//! them with positions.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterFile {
    /// Name and kind of the cluster.
    pub cluster: ClusterSection,
    /// The nodes, one `[[node]]` table each.
    #[serde(default)]
    pub node: Vec<NodeSpec>,
    /// Where the coordinator finds the cluster CA and its own certificate.
    #[serde(default)]
    pub tls: TlsSection,
    /// Lustre settings; required when `kind = "lustre"`.
    pub lustre: Option<LustreSection>,
    /// GlusterFS settings; required when `kind = "glusterfs"`.
    pub glusterfs: Option<GlusterfsSection>,
    /// BeeGFS settings; required when `kind = "beegfs"`.
    pub beegfs: Option<BeegfsSection>,
    /// Settings of the single-machine kind; required when `kind = "local"`.
    pub local: Option<LocalSection>,
    /// Benchmark defaults (`pvfsctl bench`).
    pub bench: Option<BenchSection>,
    /// How packages are installed, and per-role package lists replacing the kind's defaults.
    pub packages: Option<PackagesSection>,
    /// Package repositories (yum/dnf) written before any package is installed.
    #[serde(default)]
    pub repo: Vec<RepoSpec>,
    /// The Azure VMs `pvfsctl provision` creates for the nodes; with it, node addresses may
    /// come from the state file `provision` writes.
    pub azure: Option<AzureSection>,
    /// The agent policy `pvfsctl bootstrap` installs on every node, with `[policy.role.ROLE]`
    /// tables on top for the nodes of that role.
    pub policy: Option<PolicyTable>,
}

/// `[policy]` and each `[policy.role.ROLE]`: the keys of the agent's policy file
/// (config/policy.example.toml), each optional. A role's table replaces, key by key, what
/// `[policy]` says, for the nodes with that role.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyTable {
    /// Step kinds the node runs; absent: all.
    pub kinds: Option<Vec<Spanned<String>>>,
    /// Globs of the devices the node may format, put in an array or make a physical volume.
    pub devices: Option<Vec<Spanned<String>>>,
    /// Where directories, mounts, bricks and targets may be.
    pub data_roots: Option<Vec<Spanned<String>>>,
    /// Repository URL prefixes (replaces the built-in upstreams).
    pub repositories: Option<Vec<Spanned<String>>>,
    /// systemd units allowed on top of the ones pvfs manages.
    pub services: Option<Vec<Spanned<String>>>,
    /// Refuse repositories whose packages are not GPG-checked.
    pub refuse_unsigned_repositories: Option<Spanned<bool>>,
    /// The grant `[bench] mpi_ssh` needs on every client: root ssh between the clients.
    pub mpi_ssh: Option<Spanned<bool>>,
    /// The grant `pvfsctl bench --fault` needs on every node a fault may hit: its bricks killed
    /// mid-run.
    pub faults: Option<Spanned<bool>>,
    /// `[policy.role.ROLE]`: only in `[policy]` itself.
    #[serde(default)]
    pub role: BTreeMap<String, Spanned<PolicyTable>>,
}

/// `[cluster]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// A name for the cluster, used in reports and exported metrics.
    pub name: Spanned<String>,
    /// Which parallel file system the cluster runs: lustre, glusterfs, beegfs or local.
    pub kind: Spanned<String>,
    /// What `pvfsctl up` does about firewalld on the nodes: `"open"` (the default) opens the
    /// ports the node's role needs (`firewall-cmd --permanent --add-port`, then `--reload`)
    /// where firewalld runs; `"leave"` changes no firewall (the site manages it).
    #[serde(default)]
    pub firewall: Option<Spanned<String>>,
}

/// `[[node]]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Unique node name; also the name of the agent's certificate (`NAME.crt`).
    pub name: Spanned<String>,
    /// Where the node's agent listens: `IP:PORT`, `HOST:PORT`, `[IPv6]:PORT`, or an IP or host
    /// alone for the default port 7070. Required, unless the file has an `[azure]` section:
    /// then the address `pvfsctl provision` found is read from the state file.
    pub address: Option<Spanned<String>>,
    /// What the node is in the file system, e.g. `["mgs", "mds"]`, `["oss"]`, `["client"]`.
    pub roles: Spanned<Vec<Spanned<String>>>,
    /// Block devices the node contributes (RAID0 members, bricks, targets), by stable path.
    #[serde(default)]
    pub disks: Vec<Spanned<String>>,
    /// Disks whose current contents may be destroyed. Without this, pvfs formats, RAIDs or
    /// LVMs only disks that `blkid -p` and `wipefs` prove empty.
    #[serde(default)]
    pub wipe: Vec<Spanned<String>>,
    /// BeeGFS: the metadata target's own disks on a node that is both meta and storage (the
    /// seed's six small SSDs next to ten large ones); `disks` are then the storage target's.
    #[serde(default)]
    pub meta_disks: Vec<Spanned<String>>,
    /// The node's fixed number in the file system: the OST (or MDT) index on Lustre, the
    /// numeric node ID on BeeGFS (storage target = id × 100 + 1). Needed when several nodes
    /// have the role; never derived from VM order.
    pub id: Option<Spanned<u32>>,
    /// Let `pvfsctl up` reboot this node when it must boot into another kernel (the Lustre
    /// server kernel it installed): the agent makes that kernel the boot default and reboots,
    /// and `up` waits for the node to come back. Without it (or `up --allow-reboot`), `up`
    /// stops the node's units and says what to do.
    #[serde(default)]
    pub reboot: bool,
    /// Lustre: this node's IPv4 address on the interface LNet is pinned to (`[lustre] lnet =
    /// "tcp(ib0)"`), when that is not the address the agent is dialled on. The node's NID is
    /// `ADDRESS@NETWORK`; without it, the agent's address is used.
    pub lnet_address: Option<Spanned<String>>,
    /// With `[azure]`: this node's own VM settings, over its role's `[azure.role.ROLE]`
    /// (each key given replaces the role's; `data_disks` as a whole).
    pub azure: Option<AzureRoleSection>,
}

/// `[tls]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    /// Directory holding `ca.crt` and the coordinator's `pvfsctl.crt`/`pvfsctl.key`, relative
    /// to the cluster file. `pvfsctl --tls-dir` overrides it.
    #[serde(default = "default_tls_dir")]
    pub dir: Spanned<String>,
}

impl Default for TlsSection {
    fn default() -> Self {
        TlsSection { dir: default_tls_dir() }
    }
}

fn default_tls_dir() -> Spanned<String> {
    Spanned::new(0..0, "tls".to_owned())
}

/// `[lustre]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LustreSection {
    /// File system name given to mkfs.lustre (at most 8 characters).
    pub fsname: Spanned<String>,
    /// Where clients mount the file system.
    pub mount: Spanned<String>,
    /// LNet network: "tcp" (or "o2ib" on InfiniBand, optionally numbered: "tcp1"), optionally
    /// pinned to one interface as lnet's `networks=` option writes it: "tcp(eth0)".
    #[serde(default = "default_lnet")]
    pub lnet: Spanned<String>,
    /// Lustre version the packages are pinned to, e.g. "2.9.0" (the seed's).
    pub version: Option<Spanned<String>>,
    /// The metadata target: its disk layout and mount point (default `/mnt/mgsmds`).
    pub mdt: Option<TargetSection>,
    /// Object storage targets: disk layout (default RAID0 on `/dev/md0` when a node has
    /// several disks) and mount point (default `/mnt/oss`).
    pub ost: Option<TargetSection>,
    /// Default layout of the benchmark directory (`[bench] mount`), set with `lfs setstripe`:
    /// `{ count = -1, size = "4M" }` stripes new files over every OST in 4 MiB stripes (the
    /// seed's striped runs).
    pub stripe: Option<Spanned<StripeSection>>,
    /// Settings applied on every client.
    pub client: Option<LustreClientSection>,
}

/// `[lustre] stripe`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StripeSection {
    /// OSTs a file is striped over: -1 for all, or 1 to 2000.
    pub count: Spanned<i64>,
    /// Bytes a stripe: a multiple of 64K below 4G, with an optional K, M or G suffix ("4M").
    pub size: Spanned<String>,
}

/// `[lustre.client]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LustreClientSection {
    /// Client parameters set with `lctl set_param` on every client, e.g.
    /// `{ "llite.*.max_read_ahead_mb" = "64" }`. Per client and until the next mount, so every
    /// `up` checks them again.
    pub lctl: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
}

fn default_lnet() -> Spanned<String> {
    Spanned::new(0..0, "tcp".to_owned())
}

/// `[glusterfs]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlusterfsSection {
    /// Volume name.
    pub volume: Spanned<String>,
    /// Where clients mount the volume.
    pub mount: Spanned<String>,
    /// How files are placed: "distribute" (the seed's), "replicate" or "disperse".
    #[serde(default = "default_layout")]
    pub layout: Spanned<String>,
    /// Copies of each file, with layout = "replicate".
    pub replica: Option<Spanned<u32>>,
    /// Bricks per erasure-coded set, with layout = "disperse".
    pub disperse: Option<Spanned<u32>>,
    /// Bricks of a set that may be lost, with layout = "disperse".
    pub redundancy: Option<Spanned<u32>>,
    /// `gluster volume set` options, e.g. `{ "performance.cache-size" = "1GB" }`.
    #[serde(default)]
    pub options: BTreeMap<String, Spanned<String>>,
    /// Each server's brick file system: disk layout and mount point (default `/rhs/brick1`;
    /// the brick itself is the volume's directory inside it).
    pub brick: Option<TargetSection>,
}

fn default_layout() -> Spanned<String> {
    Spanned::new(0..0, "distribute".to_owned())
}

/// `[beegfs]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BeegfsSection {
    /// Where clients mount the file system.
    pub mount: Spanned<String>,
    /// The management daemon's data directory (default `/data/beegfs/mgmtd`).
    pub mgmtd_dir: Option<Spanned<String>>,
    /// Metadata servers: disk layout, mount point (default `/data/beegfs/meta`), and
    /// `beegfs-meta.conf` tuning (seed Table 12).
    pub meta: Option<TargetSection>,
    /// Storage servers: disk layout, mount point (default `/data/beegfs/storage`), and
    /// `beegfs-storage.conf` tuning (seed Table 11).
    pub storage: Option<TargetSection>,
    /// `beegfs-client.conf` tuning on clients.
    #[serde(default)]
    pub client_tuning: BTreeMap<String, Spanned<String>>,
    /// A file next to the cluster file holding the shared secret BeeGFS authenticates
    /// connections with: pvfs copies it to `/etc/beegfs/connauthfile` (mode 0400) on every
    /// node and sets `connAuthFile` in every service's configuration. Make one with
    /// `head -c 48 /dev/urandom | base64 > beegfs.auth`. BeeGFS 7.3 and later refuse to start
    /// without it unless `disable_authentication = true`.
    pub auth_secret: Option<Spanned<String>>,
    /// Run without connection authentication (`connDisableAuthentication = true`, a key of
    /// BeeGFS 7.3 and later), as BeeGFS before 7.3 did by default: anyone who reaches the
    /// servers' ports can use the file system.
    pub disable_authentication: Option<Spanned<bool>>,
    /// The network interfaces BeeGFS uses, in order of preference (`connInterfacesFile`),
    /// e.g. `["ib0", "eth0"]`; default: all.
    #[serde(default)]
    pub interfaces: Vec<Spanned<String>>,
    /// The subnets BeeGFS may connect to (`connNetFilterFile`), e.g. `["10.0.0.0/24"]`;
    /// default: any.
    #[serde(default)]
    pub net_filter: Vec<Spanned<String>>,
}

/// `[local]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalSection {
    /// Directory used as the file system's mount point on every node.
    pub mount: Spanned<String>,
    /// Where server nodes keep their target directories (default: `targets` next to `mount`).
    pub targets: Option<Spanned<String>>,
}

/// How a server's disks become the file system a target lives on: `[glusterfs.brick]`,
/// `[lustre.mdt]`, `[lustre.ost]`, `[beegfs.meta]`, `[beegfs.storage]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TargetSection {
    /// The md device for a RAID0 of the node's disks, used when it has more than one disk
    /// (default `/dev/md0`).
    pub raid: Option<Spanned<String>>,
    /// RAID0 chunk size in KiB (mdadm's default when absent).
    pub raid_chunk_kib: Option<u32>,
    /// An LVM thin pool and thin volume between the disks and the file system (the seed's
    /// GlusterFS bricks).
    pub lvm: Option<LvmSection>,
    /// File system: "xfs" or "ext4" (Lustre targets are always made by mkfs.lustre).
    pub fs: Option<Spanned<String>>,
    /// Extra mkfs options, e.g. `["-K", "-i", "size=512", "-n", "size=8192"]`. No force flag:
    /// list the disk under the node's `wipe` instead.
    #[serde(default)]
    pub mkfs_options: Vec<Spanned<String>>,
    /// Mount options, e.g. "defaults,inode64,noatime,nouuid".
    pub mount_options: Option<Spanned<String>>,
    /// File system label.
    pub label: Option<Spanned<String>>,
    /// Where the target's file system is mounted on the server.
    pub path: Option<Spanned<String>>,
    /// Block-queue tuning of the target device (seed Tables 11–12).
    pub queue: Option<QueueSection>,
    /// BeeGFS only: keys set in the service's config file (seed Tables 11–12).
    pub tuning: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
}

/// `lvm = { … }` in a target section.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LvmSection {
    /// Volume group name (the seed's "rhgs-data").
    pub vg: Spanned<String>,
    /// Thin pool name ("brickpool").
    pub pool: Spanned<String>,
    /// Thin volume name ("brick1").
    pub lv: Spanned<String>,
    /// Pool size: an lvcreate -L size ("9216g") or -l extent share ("95%FREE").
    pub pool_size: Spanned<String>,
    /// Thin volume virtual size ("9216g").
    pub virtual_size: Spanned<String>,
    /// Pool chunk size ("256K").
    pub chunk: Option<Spanned<String>>,
    /// pvcreate --dataalignment ("1024K").
    pub data_alignment: Option<Spanned<String>>,
    /// vgcreate --physicalextentsize ("256K").
    pub extent_size: Option<Spanned<String>>,
    /// Zero new pool blocks (LVM's default true; the seed sets false with lvchange --zero n).
    #[serde(default = "yes")]
    pub zero: bool,
}

fn yes() -> bool {
    true
}

/// `queue = { … }` in a target section: `/sys/block/DEV/queue/*`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSection {
    /// I/O scheduler ("deadline", "mq-deadline", "none", …).
    pub scheduler: Option<Spanned<String>>,
    /// Requests the member disks' queues hold. The kernel takes at most 2048 with a
    /// scheduler on multi-queue kernels (EL8 and later); more is clamped, and plans say so.
    pub nr_requests: Option<u32>,
    /// Read-ahead of the target device and its member disks, in KiB: a multiple of 4, as the
    /// kernel keeps it in pages.
    pub read_ahead_kb: Option<Spanned<u32>>,
}

/// `[packages]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackagesSection {
    /// "auto" (the node's own: apt-get, dnf or yum), "apt", "dnf" or "yum".
    pub manager: Option<Spanned<String>>,
    /// Per-role lists that replace the kind's default packages for that role; `name=version`
    /// pins a version.
    pub mgs: Option<Vec<Spanned<String>>>,
    pub mds: Option<Vec<Spanned<String>>>,
    pub oss: Option<Vec<Spanned<String>>>,
    pub server: Option<Vec<Spanned<String>>>,
    pub mgmtd: Option<Vec<Spanned<String>>>,
    pub meta: Option<Vec<Spanned<String>>>,
    pub storage: Option<Vec<Spanned<String>>>,
    pub client: Option<Vec<Spanned<String>>>,
}

/// `[[repo]]`: a yum/dnf repository, written to `/etc/yum.repos.d/NAME.repo`, or with `suites`
/// an apt repository, written to `/etc/apt/sources.list.d/pvfs-NAME.sources` (deb822).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepoSpec {
    pub name: Spanned<String>,
    pub baseurl: Spanned<String>,
    /// Only on nodes with one of these roles (default: every node).
    #[serde(default)]
    pub roles: Vec<Spanned<String>>,
    /// The URL of the key the packages are signed with (yum's `gpgkey`); leave it out when a
    /// release package already imported the key. On an apt repository only a `file://`
    /// keyring already on the node (apt fetches no keys; see `gpgkey_file`).
    pub gpgkey: Option<Spanned<String>>,
    /// apt: the suites (`bookworm`, `jammy`; or one exact path ending in `/`). Giving them
    /// makes this an apt repository.
    #[serde(default)]
    pub suites: Vec<Spanned<String>>,
    /// apt: the components (`main`, `non-free`); none with an exact-path suite.
    #[serde(default)]
    pub components: Vec<Spanned<String>>,
    /// apt: a file next to the cluster file holding the repository's ASCII-armored signing key
    /// (as its publisher ships it, e.g. BeeGFS's `GPG-KEY-beegfs`); pvfs copies it to
    /// `/etc/apt/keyrings/pvfs-NAME.asc` and names it in `Signed-By`.
    pub gpgkey_file: Option<Spanned<String>>,
    /// Check the packages' signatures (default: true). `false` is for repositories whose
    /// publisher does not sign them (Whamcloud's Lustre RPMs); plans show it as a warning.
    pub gpgcheck: Option<Spanned<bool>>,
    /// Allow plain `http://` URLs (default: false): anyone on the path can swap the packages,
    /// so say so explicitly; plans show it as a warning.
    pub allow_http: Option<Spanned<bool>>,
}

/// `[bench]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchSection {
    /// Directory the benchmark writes in; defaults to the kind's mount.
    pub mount: Option<Spanned<String>>,
    /// How processes are started on the clients: "agents" or "mpi".
    pub launcher: Option<Spanned<String>>,
    /// What does the I/O: "ior", "builtin", "fio" or "io500".
    pub engine: Option<Spanned<String>>,
    /// The default preset: "throughput", "iops", "metadata" or "metadata-lustre".
    pub preset: Option<Spanned<String>>,
    /// Tasks (IOR processes) per client.
    pub procs_per_client: Option<Spanned<u32>>,
    /// Parameter overrides on top of the preset, by name or IOR/mdtest letter, e.g.
    /// `{ transfer = "1m", block = "64m", iterations = "2" }`.
    pub params: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    /// What one VM can do at most (its documented network or disk limit), MiB/s: reports show
    /// efficiency against it, as the seed's tables do.
    pub vm_limit_mib: Option<Spanned<f64>>,
    /// Give the clients root ssh to each other for mpirun (default: false): `pvfsctl up` makes
    /// the cluster's MPI key pair and installs it, with the clients' host keys, on every client
    /// whose agent policy allows it (`mpi_ssh = true` there).
    pub mpi_ssh: Option<Spanned<bool>>,
    /// Drop caches before read and stat phases: "none" (the default), "clients", or "all"
    /// (clients and servers).
    pub drop_caches: Option<Spanned<String>>,
    /// The real io500 on every client, for engine "io500": the program io500's prepare.sh
    /// built, e.g. "/opt/io500/io500".
    pub io500: Option<Spanned<String>>,
}

/// `[azure]`: where and how `pvfsctl provision` creates the nodes' virtual machines.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AzureSection {
    /// Subscription ID, a GUID (`az account show --query id`).
    pub subscription: Spanned<String>,
    /// The resource group the VMs are created in (it must exist).
    pub resource_group: Spanned<String>,
    /// Region, as ARM spells it: `eastus`, `westeurope`.
    pub location: Spanned<String>,
    /// ARM ID of an existing subnet the VMs' NICs join:
    /// `/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/VNET/subnets/SUBNET`.
    pub subnet: Spanned<String>,
    /// The VMs' administrator account, the one `pvfsctl bootstrap` logs in as.
    pub admin_user: Spanned<String>,
    /// The OpenSSH public key installed for `admin_user`: `~/` is the home directory, a
    /// relative path is relative to the cluster file.
    pub ssh_public_key_file: Spanned<String>,
    /// Per-role VM settings, `[azure.role.oss]`: every node takes its role's.
    #[serde(default)]
    pub role: BTreeMap<Spanned<String>, AzureRoleSection>,
}

/// `[azure.role.ROLE]`
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AzureRoleSection {
    /// VM size (default `Standard_DS14_v2`, the seed's).
    pub vm_size: Option<Spanned<String>>,
    /// Marketplace image `publisher:offer:sku:version` (default `OpenLogic:CentOS:7.3:latest`,
    /// the seed's OpenLogic CentOS 7.3).
    pub image: Option<Spanned<String>>,
    /// The VM's empty data disks (default none).
    pub data_disks: Option<Spanned<DataDisksSection>>,
    /// Accelerated networking on the VM's NIC (default false; the size must support it).
    pub accelerated_networking: Option<bool>,
    /// Availability zone: "1", "2" or "3" (default: none pinned).
    pub zone: Option<Spanned<String>>,
    /// ARM ID of an existing proximity placement group.
    pub proximity_placement_group: Option<Spanned<String>>,
}

/// `data_disks = { … }` in `[azure.role.ROLE]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataDisksSection {
    /// How many, at LUNs 0 to count-1 (0 to 64).
    pub count: Spanned<u32>,
    /// Size of each, GiB (4 to 32767; default 1024, a P30 as the seed's).
    pub size_gib: Option<Spanned<u32>>,
    /// Storage SKU (default `Premium_LRS`).
    pub sku: Option<Spanned<String>>,
    /// Host caching: "None" (default, as the seed's template left it), "ReadOnly" or "ReadWrite".
    pub caching: Option<Spanned<String>>,
}
