//! Lustre's targets as lustrefs-exporter names them (whamcloud/lustrefs-exporter 0.12.6:
//! the same metric names, help, types and `component`/`operation`/`target` labels), so that
//! Grafana dashboards made for it read pvfs's series unchanged; each series also has the
//! `node` and `role` every pvfs series has (lustrefs-exporter runs one per server, and
//! Prometheus tells them apart by `instance`). The figures are the kernel's cumulative
//! counters of each node's newest second.
//!
//! Two of its counters are named without `_total` (`lustre_client_stats`, the maximum sizes):
//! the text format keeps its type; OpenMetrics, which requires `_total` on a counter's
//! samples, has them as `unknown` ([`super::Text`]).

use super::{ClusterView, Sink};
use pvfs_metrics::lustre::node::{Kind, Target};

/// One family: for every node's every target `pick` gives, its labels beyond node and role,
/// and its value.
fn family<'v>(
    w: &mut impl Sink,
    view: &'v ClusterView,
    (name, kind, help): (&str, &str, &str),
    pick: impl Fn(&'v Target, &mut dyn FnMut(&[(&str, &str)], f64)),
) {
    w.family(name, kind, help, |f| {
        for (node, v) in &view.nodes {
            let Some(lustre) =
                v.last.as_ref().and_then(|s| s.sample.fs.as_ref().and_then(|f| f.lustre.as_ref()))
            else {
                continue;
            };
            for target in &lustre.targets {
                pick(target, &mut |labels, value| {
                    let mut all: Vec<(&str, &str)> = vec![("node", node), ("role", &v.role)];
                    all.extend_from_slice(labels);
                    f.sample(name, &all, value);
                });
            }
        }
    });
}

/// Every Lustre family of `view` (none when no node has Lustre).
pub(super) fn write(w: &mut impl Sink, view: &ClusterView) {
    let any = view
        .nodes
        .values()
        .any(|v| v.last.as_ref().is_some_and(|s| s.sample.fs.as_ref().is_some_and(|f| f.lustre.is_some())));
    if !any {
        return;
    }
    w.family(
        "lustre_health_healthy",
        "gauge",
        "Indicates whether the Lustre target is healthy or not. 1 is healthy, 0 is unhealthy.",
        |f| {
            for (node, v) in &view.nodes {
                if let Some(healthy) = v
                    .last
                    .as_ref()
                    .and_then(|s| s.sample.fs.as_ref().and_then(|f| f.lustre.as_ref()))
                    .and_then(|l| l.healthy)
                {
                    f.sample(
                        "lustre_health_healthy",
                        &[("node", node), ("role", &v.role)],
                        if healthy { 1.0 } else { 0.0 },
                    );
                }
            }
        },
    );
    // LNet's traffic, lustrefs-exporter 0.12.6's six families (its lnet.rs): its byte counters
    // are the node's, without labels, as these are; its message counters are labelled by
    // `nid` there (each interface's, from `lnetctl net show -v`), while the kernel's file pvfs
    // reads holds the node's total only, so these have no `nid` (a dashboard's sum over `nid`
    // reads them the same).
    type Lnet = pvfs_metrics::lustre::LnetCounters;
    type Family = (&'static str, &'static str, fn(&Lnet) -> u64);
    let lnet_families: [Family; 6] = [
        ("lustre_send_count_total", "Total number of messages that have been sent", |l| l.send_count),
        ("lustre_receive_count_total", "Total number of messages that have been received", |l| l.recv_count),
        ("lustre_drop_count_total", "Total number of messages that have been dropped", |l| l.drop_count),
        ("lustre_send_bytes_total", "Total number of bytes that have been sent", |l| l.send_length),
        ("lustre_receive_bytes_total", "Total number of bytes that have been received", |l| l.recv_length),
        ("lustre_drop_bytes_total", "Total number of bytes that have been dropped", |l| l.drop_length),
    ];
    for (name, help, value) in lnet_families {
        let lnets: Vec<(&String, &str, Lnet)> = view
            .nodes
            .iter()
            .filter_map(|(node, v)| {
                let lnet = v.last.as_ref()?.sample.fs.as_ref()?.lustre.as_ref()?.lnet?;
                Some((node, v.role.as_str(), lnet))
            })
            .collect();
        if lnets.is_empty() {
            continue;
        }
        w.family(name, "counter", help, |f| {
            for (node, role, lnet) in &lnets {
                f.sample(name, &[("node", node), ("role", role)], value(lnet) as f64);
            }
        });
    }
    // An OST's reads and writes: the samples, sizes and bytes of its read_bytes and write_bytes.
    for (counter, operation, what) in [("read_bytes", "read", "read"), ("write_bytes", "write", "written")] {
        let ost = |t: &Target| t.kind == Some(Kind::Ost);
        let names = [
            (
                format!("lustre_{operation}_samples_total"),
                "counter",
                format!("Total number of {operation}s that have been recorded."),
            ),
            (
                format!("lustre_{operation}_minimum_size_bytes"),
                "gauge",
                format!("The minimum {operation} size in bytes."),
            ),
            (
                format!("lustre_{operation}_maximum_size_bytes"),
                "counter",
                format!("The maximum {operation} size in bytes."),
            ),
            (
                format!("lustre_{operation}_bytes_total"),
                "counter",
                format!("The total number of bytes that have been {what}."),
            ),
        ];
        for (i, (name, kind, help)) in names.iter().enumerate() {
            family(w, view, (name, kind, help), |t, emit| {
                let Some(s) = t.counter(counter).filter(|_| ost(t)) else { return };
                let value = match i {
                    0 => Some(s.samples),
                    1 => s.min,
                    2 => s.max,
                    _ => s.sum,
                };
                if let Some(value) = value {
                    emit(
                        &[("component", "ost"), ("operation", operation), ("target", &t.name)],
                        value as f64,
                    );
                }
            });
        }
    }
    family(
        w,
        view,
        ("lustre_stats_total", "counter", "Number of operations the filesystem has performed."),
        |t, emit| {
            if t.kind != Some(Kind::Mdt) {
                return;
            }
            for s in &t.counters {
                emit(&[("component", "mdt"), ("operation", &s.name), ("target", &t.name)], s.samples as f64);
            }
        },
    );
    family(w, view, ("lustre_client_stats", "counter", "Lustre client interface stats."), |t, emit| {
        if t.kind != Some(Kind::Client) {
            return;
        }
        for s in &t.counters {
            emit(&[("operation", &s.name), ("target", &t.name)], s.samples as f64);
        }
    });
    type SpaceField = fn(&pvfs_metrics::lustre::node::Space) -> u64;
    let space: [(&str, &str, SpaceField); 5] = [
        ("lustre_available_kilobytes", "Number of kilobytes readily available in the pool", |s| {
            s.kbytes_avail
        }),
        ("lustre_capacity_kilobytes", "Capacity of the pool in kilobytes", |s| s.kbytes_total),
        ("lustre_free_kilobytes", "Number of kilobytes allocated to the pool", |s| s.kbytes_free),
        ("lustre_inodes_free", "The number of inodes (objects) available", |s| s.files_free),
        ("lustre_inodes_maximum", "The maximum number of inodes (objects) the filesystem can hold", |s| {
            s.files_total
        }),
    ];
    for (name, help, field) in space {
        family(w, view, (name, "gauge", help), |t, emit| {
            if let (Some(s), Some(kind)) = (t.space, t.kind) {
                emit(&[("component", kind.component()), ("target", &t.name)], field(&s) as f64);
            }
        });
    }
    family(
        w,
        view,
        ("lustre_exports_total", "gauge", "Total number of times the pool has been exported"),
        |t, emit| {
            if let (Some(n), Some(kind)) = (t.exports, t.kind) {
                emit(&[("component", kind.component()), ("target", &t.name)], n as f64);
            }
        },
    );
    type LockField = fn(&pvfs_metrics::lustre::node::Locks) -> Option<u64>;
    let locks: [(&str, &str, &str, LockField); 4] = [
        ("lustre_lock_count_total", "gauge", "Number of locks", |l| l.count),
        ("lustre_lock_timeout_total", "counter", "Number of lock timeouts", |l| l.timeouts),
        ("lustre_lock_contended_total", "gauge", "Number of contended locks", |l| l.contended),
        (
            "lustre_lock_contention_seconds_total",
            "gauge",
            "Time in seconds during which locks were contended",
            |l| l.contention_seconds,
        ),
    ];
    for (name, kind, help, field) in locks {
        family(w, view, (name, kind, help), |t, emit| {
            if let (Some(n), Some(kind)) = (field(&t.locks), t.kind) {
                emit(&[("component", kind.component()), ("target", &t.name)], n as f64);
            }
        });
    }
    // Not one of lustrefs-exporter's: a target's recovery as a state set, so that an alert
    // can say which target has been recovering for how long.
    family(
        w,
        view,
        (
            "pvfs_lustre_recovery_status",
            "gauge",
            "1 for the target's recovery_status status (COMPLETE, RECOVERING, WAITING_FOR_CLIENTS, INACTIVE, ...).",
        ),
        |t, emit| {
            if let (Some(status), Some(kind)) = (&t.recovery, t.kind) {
                emit(&[("component", kind.component()), ("status", status), ("target", &t.name)], 1.0);
            }
        },
    );
    // Each target's busiest clients' exports (every one of them from an `lctl get_param`
    // output; the busiest few each second from an agent: an idle client's series pauses, and
    // a rate over the counters it has is still right), as lustrefs-exporter 0.12.6's stats.rs
    // exports every export: each counter's samples, its sum of bytes, and its sum of `usecs`
    // under `_milliseconds` (its name; the value is the kernel's microseconds, as there, so
    // dashboards made for it read the same figures).
    type ExportPick = fn(&pvfs_metrics::lustre::Stat) -> Option<u64>;
    let export_families: [(&str, &str, ExportPick); 3] = [
        (
            "lustre_client_export_bytes_total",
            "Accumulated bytes per operation the target has performed per export.",
            |s| s.sum.filter(|_| s.units == "bytes"),
        ),
        (
            "lustre_client_export_milliseconds_total",
            "Accumulated latency per operations the target has performed per export.",
            |s| s.sum.filter(|_| s.units == "usecs"),
        ),
        ("lustre_client_export_stats", "Number of operations the target has performed per export.", |s| {
            Some(s.samples)
        }),
    ];
    for (name, help, value) in export_families {
        family(w, view, (name, "counter", help), |t, emit| {
            let Some(kind) = t.kind else { return };
            for e in &t.busiest_exports {
                for s in &e.counters {
                    if let Some(v) = value(s) {
                        emit(
                            &[
                                ("component", kind.component()),
                                ("target", &t.name),
                                ("nid", &e.nid),
                                ("name", &s.name),
                                ("units", &s.units),
                            ],
                            v as f64,
                        );
                    }
                }
            }
        });
    }
    // Each OSD's brw_stats tables, a series per bucket and direction, as lustrefs-exporter
    // 0.12.6's brw_stats.rs names them (each table by lustre_collector's name for it; its help
    // texts as its snapshots print them). Counters, all of them, as there: "in flight" counts
    // the I/Os that found that many in flight. Lustre 2.16's I/O time of each I/O size
    // (`io_time_SIZE`) goes into `lustre_io_time_milliseconds_total` with the size in bytes as
    // its `opsize`, as there.
    let brw: [(&str, &str, &str); 8] = [
        (
            "disk_iosize",
            "lustre_disk_io_total",
            "Total number of operations the filesystem has performed for the given size. 'size' label represents 'Disk I/O size', the size of each I/O operation",
        ),
        (
            "rpc_hist",
            "lustre_disk_io",
            "Current number of I/O operations that are processing during the snapshot. 'size' label represents 'Disk I/Os in flight', the number of disk I/Os currently pending.",
        ),
        (
            "pages",
            "lustre_pages_per_bulk_rw_total",
            "Total number of pages per block RPC. 'size' label represents 'Pages per bulk r/w', the number of pages per RPC request",
        ),
        (
            "discont_pages",
            "lustre_discontiguous_pages_total",
            "Total number of logical discontinuities per RPC. 'size' label represents 'Discontiguous pages', the number of discontinuities in the logical file offset of each page in a single RPC.",
        ),
        (
            "dio_frags",
            "lustre_dio_frags",
            "Current disk IO fragmentation for the given size. 'size' label represents 'Disk fragmented I/Os', the number of I/Os that were not written entirely sequentially.",
        ),
        (
            "discont_blocks",
            "lustre_discontiguous_blocks_total",
            "'size' label represents 'Discontiguous blocks', the number of discontinuities in the physical block allocation in the file system for a single RPC",
        ),
        (
            "io_time",
            "lustre_io_time_milliseconds_total",
            "Total time in milliseconds the filesystem has spent processing various object sizes. 'size' label represents 'I/O time (1/1000s)', the amount of time for each I/O operation to complete.",
        ),
        ("block_maps_msec", "lustre_block_maps_milliseconds_total", "Number of block maps in milliseconds"),
    ];
    let any_brw = view.nodes.values().any(|v| {
        v.last
            .as_ref()
            .and_then(|s| s.sample.fs.as_ref())
            .and_then(|f| f.lustre.as_ref())
            .is_some_and(|l| l.targets.iter().any(|t| !t.brw.is_empty()))
    });
    if !any_brw {
        return;
    }
    for (table, name, help) in brw {
        family(w, view, (name, "counter", help), |t, emit| {
            let Some(kind) = t.kind else { return };
            for h in &t.brw {
                let opsize = match h.name.strip_prefix("io_time_") {
                    Some(opsize) if table == "io_time" => Some(opsize),
                    _ if h.name == table => None,
                    _ => continue,
                };
                for b in &h.buckets {
                    let size = b.name.to_string();
                    for (operation, n) in [("read", b.read), ("write", b.write)] {
                        let mut labels = vec![("component", kind.component()), ("operation", operation)];
                        labels.extend(opsize.map(|o| ("opsize", o)));
                        labels.extend([("target", t.name.as_str()), ("size", size.as_str())]);
                        emit(&labels, n as f64);
                    }
                }
            }
        });
    }
}
