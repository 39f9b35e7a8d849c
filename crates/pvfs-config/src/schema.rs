//! The cluster file as written: serde structs, one per TOML table.
//!
//! Every struct denies unknown fields, so a misspelt key is an error rather than a silently
//! ignored setting. Values whose correctness serde cannot judge (roles, addresses, names) are
//! kept as spanned strings and checked by the validation pass, so that it can report all of
//! them with positions.

use serde::Deserialize;
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
}

/// `[cluster]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// A name for the cluster, used in reports and exported metrics.
    pub name: Spanned<String>,
    /// Which parallel file system the cluster runs: lustre, glusterfs, beegfs or local.
    pub kind: Spanned<String>,
}

/// `[[node]]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Unique node name; also the name of the agent's certificate (`NAME.crt`).
    pub name: Spanned<String>,
    /// Where the node's agent listens: `IP:PORT`, `HOST:PORT`, `[IPv6]:PORT`, or an IP or host
    /// alone for the default port 7070.
    pub address: Spanned<String>,
    /// What the node is in the file system, e.g. `["mgs", "mds"]`, `["oss"]`, `["client"]`.
    pub roles: Spanned<Vec<Spanned<String>>>,
    /// Block devices the node contributes (RAID0 members, bricks, targets), by stable path.
    #[serde(default)]
    pub disks: Vec<Spanned<String>>,
}

/// `[tls]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    /// Directory holding `ca.crt` and the coordinator's `pvfsctl.crt`/`pvfsctl.key`, relative
    /// to the cluster file. `pvfsctl --tls-dir` overrides it.
    #[serde(default = "default_tls_dir")]
    pub dir: String,
}

impl Default for TlsSection {
    fn default() -> Self {
        TlsSection { dir: default_tls_dir() }
    }
}

fn default_tls_dir() -> String {
    "tls".to_owned()
}

/// `[lustre]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LustreSection {
    /// File system name given to mkfs.lustre (at most 8 characters).
    pub fsname: Spanned<String>,
    /// Where clients mount the file system.
    pub mount: Spanned<String>,
    /// LNet network type: "tcp" (or "o2ib" on InfiniBand).
    #[serde(default = "default_lnet")]
    pub lnet: Spanned<String>,
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
}

/// `[beegfs]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BeegfsSection {
    /// Where clients mount the file system.
    pub mount: Spanned<String>,
}

/// `[local]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalSection {
    /// Directory used as the file system's mount point on every node.
    pub mount: Spanned<String>,
}

/// `[bench]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchSection {
    /// Directory the benchmark writes in; defaults to the kind's mount.
    pub mount: Option<Spanned<String>>,
    /// How processes are started on the clients: "agents" or "mpi".
    pub launcher: Option<Spanned<String>>,
    /// What does the I/O: "ior", "builtin" or "fio".
    pub engine: Option<Spanned<String>>,
}
