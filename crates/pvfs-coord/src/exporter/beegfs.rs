//! Each node's BeeGFS servers, as their own per-second statistics tell them (`beegfs-ctl
//! --serverstats`, `beegfs stats server`): requests processed, queued, busy workers, and a
//! storage server's bytes to and from its targets in the newest second, labelled by node,
//! role, server kind and numeric ID. Gauges of that second, not counters: BeeGFS keeps its
//! figures per second (beegfs-mon stores them as such in its `highResStorage`/`highResMeta`
//! measurements). pvfs's own names: BeeGFS has no Prometheus exporter of its own.
//!
//! And each node's targets: their space and inodes as their server counts them (what
//! `beegfs-df` shows, read by the agent every second), and their reachability and consistency
//! as the management daemon last said, each a state set (one series per state, 1 for the
//! current one), only for a target whose state is known.

use super::{ClusterView, Sink};
use pvfs_metrics::beegfs::{ServerSecond, TargetSecond};

/// Every BeeGFS family of `view` (none when no node has a BeeGFS server or target).
pub(super) fn write(w: &mut impl Sink, view: &ClusterView) {
    servers(w, view);
    targets(w, view);
}

/// What is done with each target and its labels.
type Visit<'a> = dyn FnMut(&[(&str, &str)], &TargetSecond) + 'a;

/// A state set's family: its name, help, the states, and the target's current one.
type StateSet = (&'static str, &'static str, &'static [&'static str], fn(&TargetSecond) -> &str);

/// The states a target's reachability and consistency can be in, as the agent names them.
const REACHABILITY: [&str; 3] = ["online", "probably-offline", "offline"];
const CONSISTENCY: [&str; 4] = ["good", "needs-resync", "resyncing", "bad"];

fn targets(w: &mut impl Sink, view: &ClusterView) {
    let any = view.nodes.values().any(|v| {
        v.last.as_ref().is_some_and(|s| s.sample.fs.as_ref().is_some_and(|f| !f.beegfs_targets.is_empty()))
    });
    if !any {
        return;
    }
    // Each node's targets, with their labels.
    let each = |visit: &mut Visit<'_>| {
        for (node, v) in &view.nodes {
            let Some(fs) = v.last.as_ref().and_then(|s| s.sample.fs.as_ref()) else { continue };
            for target in &fs.beegfs_targets {
                let id = target.id.to_string();
                let labels = [
                    ("node", node.as_str()),
                    ("role", v.role.as_str()),
                    ("kind", target.kind.as_str()),
                    ("target_id", id.as_str()),
                    ("path", target.path.as_str()),
                ];
                visit(&labels, target);
            }
        }
    };
    type Field = fn(&TargetSecond) -> u64;
    let families: [(&str, &str, Field); 4] = [
        ("pvfs_beegfs_target_capacity_bytes", "The target's size, as its server reports it.", |t| {
            t.total_bytes
        }),
        (
            "pvfs_beegfs_target_free_bytes",
            "The target's free space, as its server reports it (its override file's, if any).",
            |t| t.free_bytes,
        ),
        ("pvfs_beegfs_target_inodes", "The target's inodes.", |t| t.total_inodes),
        (
            "pvfs_beegfs_target_free_inodes",
            "The target's free inodes, as its server reports them (its override file's, if any).",
            |t| t.free_inodes,
        ),
    ];
    for (name, help, field) in families {
        w.family(name, "gauge", help, |f| each(&mut |labels, t| f.sample(name, labels, field(t) as f64)));
    }
    let sets: [StateSet; 2] = [
        (
            "pvfs_beegfs_target_reachability",
            "1 for the target's reachability as the management daemon last said it, 0 for the others.",
            &REACHABILITY,
            |t| &t.reachability,
        ),
        (
            "pvfs_beegfs_target_consistency",
            "1 for the target's consistency as the management daemon last said it, 0 for the others.",
            &CONSISTENCY,
            |t| &t.consistency,
        ),
    ];
    for (name, help, states, field) in sets {
        w.family(name, "gauge", help, |f| {
            each(&mut |labels, t| {
                let now = field(t);
                if now.is_empty() {
                    return;
                }
                for state in states {
                    let mut with = labels.to_vec();
                    with.push(("state", state));
                    f.sample(name, &with, if *state == now { 1.0 } else { 0.0 });
                }
            })
        });
    }
}

/// Each node's BeeGFS servers' newest second.
fn servers(w: &mut impl Sink, view: &ClusterView) {
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
