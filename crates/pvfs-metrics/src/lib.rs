//! Readers for the host's `/proc`, `/sys` and `/etc`, always under an injectable
//! [`pvfs_host::Root`].
//!
//! - [`facts`]: what a node is (hostname, OS, kernel, CPUs, memory, block devices, NICs), the
//!   payload of the agent's `Info` RPC.

pub mod facts;
