//! The coordinator side of pvfs: connections to agents and the cluster-wide operations on them.
//!
//! - [`dial`]: one mutual-TLS gRPC connection per agent, verified against the cluster CA and
//!   the address dialled, with failures explained (refused, timed out, which TLS check failed);
//!   every connection shares one TLS client configuration (`connector`).
//! - [`survey`]: every agent's facts, dialled concurrently (`pvfsctl nodes`).
//! - [`stream`]: every agent's per-second samples, followed concurrently and resumed by cursor
//!   (`pvfsctl top`, `serve`).
//! - [`bench`]: the built-in engine's phases on every client at once, with barriers between
//!   them (`pvfsctl bench`, agents launcher).
//! - [`converge`]: a plan's units run on the agents in dependency order (`pvfsctl up`).
//! - [`reboot`]: a node rebooted into the kernel it must boot, and waited for (`up`'s reboots).
//! - [`recap`]: how a cluster-wide run ended, node by node, in the words `up` and `bootstrap`
//!   (`pvfs-bootstrap`, above this crate) share.
//! - [`mpi_ssh`]: `[bench] mpi_ssh`'s key pair and the clients' host keys, for `up`.
//! - [`exporter`]: the cluster's latest samples and rates in the Prometheus/OpenMetrics text
//!   formats (`pvfsctl serve`).

pub mod bench;
mod connector;
pub mod converge;
pub mod dial;
pub mod exporter;
pub mod mpi_ssh;
pub mod reboot;
pub mod recap;
pub mod stream;
pub mod survey;

pub use dial::{ClientSecurity, DialError, Dialer, FailureKind};
pub use survey::{NodeReport, Survey, survey};
