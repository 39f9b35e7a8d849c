//! `pvfsctl provision` / `deprovision`: the cluster's Azure VMs, through Azure Resource Manager.
//!
//! The cluster file's `[azure]` section ([`pvfs_config::Azure`]) says what each node's VM is.
//! [`plan`] compares that with the VMs already in the resource group that carry this cluster's
//! tag; [`quota`] checks the region's SKUs and vCPU quotas before anything is created; [`apply`]
//! creates or changes the VMs (one PUT each, then the ARM async-operation protocol) and writes
//! their private addresses to the state file beside the cluster file; [`deprovision`] deletes
//! only what carries this cluster's tag. [`credentials`] finds a token (Azure CLI, environment
//! service principal, managed identity).
//!
//! Only this crate knows ARM: `azure_mgmt_compute` for Microsoft.Compute, and the same HTTP
//! pipeline for the one Microsoft.Network read (a NIC's private IP) and for polling operations.

pub mod apply;
pub mod arm;
pub mod body;
pub mod credentials;
pub mod deprovision;
mod error;
pub mod plan;
pub mod quota;
#[cfg(feature = "testing")]
pub mod testing;

pub use arm::{Arm, ArmOptions};
pub use error::AzureError;

/// The tag every VM of a cluster carries, with the cluster's name as value; `deprovision`
/// deletes only what carries it.
pub const CLUSTER_TAG: &str = "pvfs-cluster";
/// The tag naming the node a VM is.
pub const NODE_TAG: &str = "pvfs-node";
