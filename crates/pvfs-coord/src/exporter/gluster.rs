//! Each node's GlusterFS bricks, from their processes (glusterd's pid files and each
//! `glusterfsd`'s `/proc/PID/io`): whether each is up, and its cumulative bytes, labelled by
//! node, role, volume and brick path. pvfs's own names: gluster-prometheus's brick series come
//! from `gluster volume profile` and `volume status`, other figures than the kernel's.

use super::{ClusterView, Sink};
use pvfs_metrics::gluster::LocalBrick;

/// Every brick family of `view` (none when no node has bricks).
pub(super) fn write(w: &mut impl Sink, view: &ClusterView) {
    let any = view
        .nodes
        .values()
        .any(|v| v.last.as_ref().is_some_and(|s| s.sample.fs.as_ref().is_some_and(|f| !f.bricks.is_empty())));
    if !any {
        return;
    }
    type Field = fn(&LocalBrick) -> Option<f64>;
    let families: [(&str, &str, &str, Field); 5] = [
        (
            "pvfs_gluster_brick_up",
            "gauge",
            "1 while the brick's glusterfsd runs, 0 when its pid file names no running glusterfsd.",
            |b| Some(if b.pid.is_some() { 1.0 } else { 0.0 }),
        ),
        (
            "pvfs_gluster_brick_read_bytes_total",
            "counter",
            "Bytes the brick's glusterfsd caused to be read from storage (/proc/PID/io read_bytes).",
            |b| b.pid.map(|_| b.read_bytes as f64),
        ),
        (
            "pvfs_gluster_brick_written_bytes_total",
            "counter",
            "Bytes the brick's glusterfsd caused to be written to storage (/proc/PID/io write_bytes).",
            |b| b.pid.map(|_| b.write_bytes as f64),
        ),
        (
            "pvfs_gluster_brick_syscall_read_bytes_total",
            "counter",
            "Bytes the brick's glusterfsd read through system calls: its clients' requests and its files (/proc/PID/io rchar).",
            |b| b.pid.map(|_| b.rchar as f64),
        ),
        (
            "pvfs_gluster_brick_syscall_written_bytes_total",
            "counter",
            "Bytes the brick's glusterfsd wrote through system calls: its replies and its files (/proc/PID/io wchar).",
            |b| b.pid.map(|_| b.wchar as f64),
        ),
    ];
    for (name, kind, help, field) in families {
        w.family(name, kind, help, |f| {
            for (node, v) in &view.nodes {
                let Some(fs) = v.last.as_ref().and_then(|s| s.sample.fs.as_ref()) else { continue };
                for brick in &fs.bricks {
                    if let Some(value) = field(brick) {
                        f.sample(
                            name,
                            &[
                                ("node", node),
                                ("role", &v.role),
                                ("volume", &brick.volume),
                                ("brick", &brick.path),
                            ],
                            value,
                        );
                    }
                }
            }
        });
    }
}
