//! The cluster file: what the cluster is (nodes, their roles and disks, the file system kind).
//!
//! Loading is two passes, as in vector's config: serde reads the TOML into the raw structs of
//! [`schema`] (every struct `deny_unknown_fields`), then [`validate`] checks what serde cannot
//! (duplicates, roles against the kind, addresses) and returns a [`Cluster`]. Both passes collect
//! *every* error with its `file:line:column` instead of stopping at the first, so one run of
//! `pvfsctl validate` shows everything to fix.
//!
//! The file says *what* the cluster is; how to run a command (timeouts, output format) is for
//! command-line flags.

pub mod azure;
mod diagnostic;
mod fields;
mod grammar;
mod load;
pub mod model;
pub mod schema;
mod suggest;
mod validate;

pub use diagnostic::{ConfigError, Diagnostic};
pub use grammar::node_name;
pub use load::{CLUSTER_FILE, Checked, Loader, Provisioning, check, load, load_provisioning, parse};
pub use model::{
    Address, AgentPolicy, BeegfsAuth, Cluster, Firewall, Host, Kind, KindSpec, Layout, Lvm, Node, Packages,
    Queue, Repo, Role, Stripe, Target,
};
pub use validate::DROP_CACHES_UNDER_MPI;

/// The port agents listen on when an address gives none.
pub const DEFAULT_AGENT_PORT: u16 = 7070;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
