//! Each node's BeeGFS servers, as their own per-second statistics tell them (`beegfs-ctl
//! --serverstats`, `beegfs stats server`): requests processed, queued, busy workers, and a
//! storage server's bytes to and from its targets in the newest second, labelled by node,
//! role, server kind and numeric ID. Gauges of that second, not counters: BeeGFS keeps its
//! figures per second (beegfs-mon stores them as such in its `highResStorage`/`highResMeta`
//! measurements). pvfs's own names: BeeGFS has no Prometheus exporter of its own.

use super::{ClusterView, Sink};
use pvfs_metrics::beegfs::ServerSecond;

/// Every BeeGFS family of `view` (none when no node has a BeeGFS server).
pub(super) fn write(w: &mut impl Sink, view: &ClusterView) {
    let any = view
        .nodes
        .values()
        .any(|v| v.last.as_ref().is_some_and(|s| s.sample.fs.as_ref().is_some_and(|f| !f.beegfs.is_empty())));
    if !any {
        return;
    }
    type Field = fn(&ServerSecond) -> u64;
    let families: [(&str, &str, Field); 5] = [
        ("pvfs_beegfs_requests", "Requests the server processed in its newest second.", |s| s.requests),
        (
            "pvfs_beegfs_queued_requests",
            "Requests waiting in the server's queue when its newest second was taken.",
            |s| s.queued_requests,
        ),
        (
            "pvfs_beegfs_busy_workers",
            "The server's worker threads busy when its newest second was taken.",
            |s| s.busy_workers,
        ),
        (
            "pvfs_beegfs_written_bytes",
            "Bytes the storage server wrote to its targets in its newest second.",
            |s| s.write_bytes,
        ),
        (
            "pvfs_beegfs_read_bytes",
            "Bytes the storage server read from its targets in its newest second.",
            |s| s.read_bytes,
        ),
    ];
    for (name, help, field) in families {
        w.family(name, "gauge", help, |f| {
            for (node, v) in &view.nodes {
                let Some(fs) = v.last.as_ref().and_then(|s| s.sample.fs.as_ref()) else { continue };
                for server in &fs.beegfs {
                    let id = server.num_id.to_string();
                    f.sample(
                        name,
                        &[("node", node), ("role", &v.role), ("kind", &server.kind), ("num_id", &id)],
                        field(server) as f64,
                    );
                }
            }
        });
    }
}
