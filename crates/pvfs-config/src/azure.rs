//! `[azure]`: the virtual machines `pvfsctl provision` creates for a cluster, and the state
//! file that gives their addresses back to the cluster file.
//!
//! The cluster file says what each node's VM is (size, image, data disks, networking); the
//! addresses Azure gives the VMs are not known until they exist, so `provision` writes them to
//! a state file next to the cluster file ([`state_path`]) and the loader reads a node's address
//! from there when the cluster file gives none. The user's file is never rewritten.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// The `[azure]` section, resolved per node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Azure {
    /// Subscription ID (a GUID).
    pub subscription: String,
    pub resource_group: String,
    /// Region, as ARM spells it (`eastus`, `westeurope`).
    pub location: String,
    /// ARM ID of an existing subnet the NICs join
    /// (`/subscriptions/…/resourceGroups/…/providers/Microsoft.Network/virtualNetworks/…/subnets/…`).
    pub subnet: String,
    /// The VMs' administrator account (root logins are not allowed on Azure images).
    pub admin_user: String,
    /// The OpenSSH public key line installed for `admin_user` (read from `ssh_public_key_file`).
    pub ssh_public_key: String,
    /// One VM per `[[node]]`, in file order.
    pub vms: Vec<AzureVm>,
}

/// One node's virtual machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AzureVm {
    /// The node's name; also the VM's name in the resource group.
    pub node: String,
    /// VM size, e.g. `Standard_DS14_v2` (the seed's).
    pub size: String,
    pub image: ImageRef,
    pub data_disks: DataDisks,
    pub accelerated_networking: bool,
    /// Availability zone ("1", "2", "3"), when pinned.
    pub zone: Option<String>,
    /// ARM ID of an existing proximity placement group, when given.
    pub proximity_placement_group: Option<String>,
}

/// A marketplace image, written `publisher:offer:sku:version` as the Azure CLI's URNs are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    pub publisher: String,
    pub offer: String,
    pub sku: String,
    pub version: String,
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}:{}", self.publisher, self.offer, self.sku, self.version)
    }
}

/// A VM's empty managed data disks, all alike, at LUNs 0..count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDisks {
    pub count: u32,
    pub size_gib: u32,
    /// `Premium_LRS`, `StandardSSD_LRS`, `Standard_LRS`, `PremiumV2_LRS`, `UltraSSD_LRS`, ….
    pub sku: String,
    pub caching: Caching,
}

/// Host caching of a data disk (ARM's `caching`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    None,
    ReadOnly,
    ReadWrite,
}

impl Caching {
    /// As ARM spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Caching::None => "None",
            Caching::ReadOnly => "ReadOnly",
            Caching::ReadWrite => "ReadWrite",
        }
    }
}

/// What `pvfsctl provision` found the VMs to be, kept next to the cluster file.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    /// By node name.
    #[serde(default)]
    pub node: BTreeMap<String, NodeState>,
}

/// One provisioned node.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeState {
    /// The private IP of the VM's NIC; the agent listens there on the default port.
    pub address: IpAddr,
    /// The VM's ARM resource ID.
    pub vm_id: String,
}

/// Where the state of the cluster file at `cluster` lives: `NAME.state.toml` beside
/// `NAME.toml`.
pub fn state_path(cluster: &Path) -> PathBuf {
    let stem = cluster.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    cluster.with_file_name(format!("{stem}.state.toml"))
}

/// Why a state file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error(
        "{path} is not a pvfs state file ({source}); it is written by `pvfsctl provision`: delete it and provision again"
    )]
    Parse { path: PathBuf, source: toml::de::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    /// Not a regular file, or larger than a state file can be.
    #[error("{0}; it is written by `pvfsctl provision`: delete it and provision again")]
    File(pvfs_host::local_file::LocalFileError),
}

/// The most of a state file read: a VM's entry is a few lines, so even thousands of VMs are
/// far below this.
const STATE_FILE: pvfs_host::local_file::Cap =
    pvfs_host::local_file::Cap { what: "a pvfs state file", bytes: 64 << 20 };

impl State {
    /// The state at `path`; an empty state when there is no file.
    pub fn read(path: &Path) -> Result<State, StateError> {
        let text = match pvfs_host::local_file::read_to_string(path, STATE_FILE) {
            Ok(text) => text,
            Err(e) if e.is_not_found() => return Ok(State::default()),
            Err(err) => {
                return Err(match err.into_io() {
                    Ok(source) => StateError::Read { path: path.to_path_buf(), source },
                    Err(refused) => StateError::File(refused),
                });
            }
        };
        toml::from_str(&text).map_err(|source| StateError::Parse { path: path.to_path_buf(), source })
    }

    /// Writes the state to `path` atomically (temporary file, fsync, rename, directory fsync),
    /// so a provision killed midway leaves the old state or the new one, never half of one.
    pub fn write(&self, path: &Path) -> Result<(), StateError> {
        use std::io::Write;
        let fail = |source| StateError::Write { path: path.to_path_buf(), source };
        let body = toml::to_string(self).expect("a state always serializes");
        let text = format!(
            "# Written by `pvfsctl provision`; it is read back for node addresses. Do not edit.\n{body}"
        );
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let tmp = dir.join(format!(
            ".{}.tmp-{}",
            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            std::process::id()
        ));
        let mut file = std::fs::File::create(&tmp).map_err(fail)?;
        file.write_all(text.as_bytes()).map_err(fail)?;
        file.sync_all().map_err(fail)?;
        std::fs::rename(&tmp, path).map_err(fail)?;
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_lives_beside_the_cluster_file_and_reads_back_what_was_written() {
        assert_eq!(
            state_path(Path::new("config/lustre-azure.toml")),
            Path::new("config/lustre-azure.state.toml")
        );
        let dir = std::env::temp_dir().join(format!("pvfs-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.state.toml");
        assert_eq!(State::read(&path).unwrap(), State::default());
        let mut state = State::default();
        state.node.insert(
            "oss00".into(),
            NodeState { address: "10.0.0.5".parse().unwrap(), vm_id: "/subscriptions/s/vm/oss00".into() },
        );
        state.write(&path).unwrap();
        assert_eq!(State::read(&path).unwrap(), state);
        std::fs::write(&path, "[node.x]\naddress = \"nope\"\n").unwrap();
        let err = State::read(&path).unwrap_err().to_string();
        assert!(err.contains("c.state.toml") && err.contains("provision"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
