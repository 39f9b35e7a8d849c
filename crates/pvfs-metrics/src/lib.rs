//! Readers for the host's `/proc`, `/sys` and `/etc`, always under an injectable
//! [`pvfs_host::Root`].
//!
//! - [`facts`]: what a node is (hostname, OS, kernel, CPUs, memory, block devices, NICs), the
//!   payload of the agent's `Info` RPC.
//! - [`sample`]: what the node is doing: raw cumulative counters read once per interval.
//! - [`rates`]: iostat/sar rates from two samples, as sysstat 12.6 computes them, each group's
//!   columns an enum that knows its iostat/sar name.
//! - [`line`]: a second's rates as the JSON line that a benchmark's metrics record keeps and
//!   `pvfsctl top --json` and `pvfs-agent metrics --json` print.
//! - [`processes`]: the busiest processes by CPU and I/O, read only while a reader asks.
//! - [`ring`]: the agent's bounded, compact history of samples, read by cursor.
//! - [`lustre`]: Lustre's own counters in the kernel's text (stats files, `lctl get_param`).
//! - [`gluster`]: GlusterFS's view of its bricks (`gluster --xml` status, profile, heal
//!   summary) and this node's brick processes from glusterd's pid files and /proc.
//! - [`beegfs`]: BeeGFS's servers' statistics and targets' state and space, as `beegfs-ctl`
//!   (7.x) and `beegfs` (8) print them.
//! - [`ganglia`]: Ganglia's XML (gmond's host element and standard metrics), written by the
//!   agent's gmond drop-in and by serve's gmetad interface.

pub mod beegfs;
pub mod facts;
#[cfg(test)]
mod fuzz;
pub mod ganglia;
pub mod gluster;
pub mod line;
pub mod lustre;
pub mod processes;
pub mod rates;
pub mod ring;
pub mod sample;
