//! A node's file-system second on the wire and back: its Lustre targets
//! (`pvfs_metrics::lustre::node::Snapshot`) and its GlusterFS bricks
//! (`pvfs_metrics::gluster::LocalBrick`).

use crate::pb;
use pvfs_metrics::gluster::LocalBrick;
use pvfs_metrics::lustre::Times;
use pvfs_metrics::lustre::exports::{Export, ExportRates};
use pvfs_metrics::lustre::node::{Kind, Locks, Snapshot, Space, Target};
use pvfs_metrics::lustre::{BrwBucket, BrwHistogram, LnetCounters, Stat};

same_fields!(
    LnetCounters,
    pb::LnetCounters,
    [
        msgs_alloc,
        msgs_max,
        errors,
        send_count,
        recv_count,
        route_count,
        drop_count,
        send_length,
        recv_length,
        route_length,
        drop_length,
    ]
);

impl From<&Snapshot> for pb::LustreSnapshot {
    fn from(s: &Snapshot) -> pb::LustreSnapshot {
        pb::LustreSnapshot {
            healthy: s.healthy,
            targets: s.targets.iter().map(pb::LustreTarget::from).collect(),
            errors: s.errors.clone(),
            lnet: s.lnet.map(pb::LnetCounters::from),
        }
    }
}

impl From<&Target> for pb::LustreTarget {
    fn from(t: &Target) -> pb::LustreTarget {
        pb::LustreTarget {
            component: t.kind.map(Kind::component).unwrap_or_default().to_owned(),
            name: t.name.clone(),
            counters: t.counters.iter().map(counter_to_wire).collect(),
            space: t.space.map(|s| pb::LustreSpace {
                kbytes_total: s.kbytes_total,
                kbytes_free: s.kbytes_free,
                kbytes_avail: s.kbytes_avail,
                files_total: s.files_total,
                files_free: s.files_free,
            }),
            exports: t.exports,
            recovery: t.recovery.clone().unwrap_or_default(),
            snapshot_time: t.times.snapshot_time.unwrap_or_default(),
            lock_count: t.locks.count,
            lock_timeouts: t.locks.timeouts,
            contended_locks: t.locks.contended,
            contention_seconds: t.locks.contention_seconds,
            brw: t
                .brw
                .iter()
                .map(|h| pb::LustreBrwHistogram {
                    name: h.name.clone(),
                    title: h.title.clone(),
                    unit: h.unit.clone(),
                    buckets: h
                        .buckets
                        .iter()
                        .map(|b| pb::LustreBrwBucket { bucket: b.name, read: b.read, write: b.write })
                        .collect(),
                })
                .collect(),
            busiest_exports: t
                .busiest_exports
                .iter()
                .map(|e| pb::LustreExport {
                    nid: e.nid.clone(),
                    counters: e.counters.iter().map(counter_to_wire).collect(),
                    rates: e.rates.map(|r| pb::LustreExportRates {
                        read_bytes_s: r.read_bytes_s,
                        write_bytes_s: r.write_bytes_s,
                        ops_s: r.ops_s,
                    }),
                })
                .collect(),
        }
    }
}

fn counter_to_wire(c: &Stat) -> pb::LustreCounter {
    pb::LustreCounter {
        name: c.name.clone(),
        units: c.units.clone(),
        samples: c.samples,
        min: c.min,
        max: c.max,
        sum: c.sum,
        sumsquare: c.sumsquare,
    }
}

fn counter_from_wire(c: pb::LustreCounter) -> Stat {
    Stat {
        name: c.name,
        units: c.units,
        samples: c.samples,
        min: c.min,
        max: c.max,
        sum: c.sum,
        sumsquare: c.sumsquare,
    }
}

impl From<pb::LustreSnapshot> for Snapshot {
    fn from(s: pb::LustreSnapshot) -> Snapshot {
        Snapshot {
            healthy: s.healthy,
            targets: s.targets.into_iter().map(Target::from).collect(),
            errors: s.errors,
            lnet: s.lnet.map(LnetCounters::from),
        }
    }
}

impl From<pb::LustreTarget> for Target {
    fn from(t: pb::LustreTarget) -> Target {
        Target {
            // A component this coordinator does not know is shown without a kind.
            kind: Kind::from_component(&t.component),
            name: t.name,
            times: Times {
                snapshot_time: (t.snapshot_time > 0.0).then_some(t.snapshot_time),
                ..Times::default()
            },
            counters: t.counters.into_iter().map(counter_from_wire).collect(),
            space: t.space.map(|s| Space {
                kbytes_total: s.kbytes_total,
                kbytes_free: s.kbytes_free,
                kbytes_avail: s.kbytes_avail,
                files_total: s.files_total,
                files_free: s.files_free,
            }),
            exports: t.exports,
            recovery: (!t.recovery.is_empty()).then_some(t.recovery),
            locks: Locks {
                count: t.lock_count,
                timeouts: t.lock_timeouts,
                contended: t.contended_locks,
                contention_seconds: t.contention_seconds,
            },
            brw: t
                .brw
                .into_iter()
                .map(|h| BrwHistogram {
                    name: h.name,
                    title: h.title,
                    unit: h.unit,
                    buckets: h
                        .buckets
                        .into_iter()
                        .map(|b| BrwBucket { name: b.bucket, read: b.read, write: b.write })
                        .collect(),
                })
                .collect(),
            busiest_exports: t
                .busiest_exports
                .into_iter()
                .map(|e| Export {
                    nid: e.nid,
                    counters: e.counters.into_iter().map(counter_from_wire).collect(),
                    rates: e.rates.map(|r| ExportRates {
                        read_bytes_s: r.read_bytes_s,
                        write_bytes_s: r.write_bytes_s,
                        ops_s: r.ops_s,
                    }),
                })
                .collect(),
        }
    }
}

impl From<&LocalBrick> for pb::GlusterBrick {
    fn from(b: &LocalBrick) -> pb::GlusterBrick {
        pb::GlusterBrick {
            volume: b.volume.clone(),
            path: b.path.clone(),
            pid: b.pid,
            port: b.port.map(u32::from),
            rchar: b.rchar,
            wchar: b.wchar,
            read_bytes: b.read_bytes,
            write_bytes: b.write_bytes,
        }
    }
}

impl From<pb::GlusterBrick> for LocalBrick {
    fn from(b: pb::GlusterBrick) -> LocalBrick {
        LocalBrick {
            volume: b.volume,
            path: b.path,
            pid: b.pid,
            // A port that is not a port is not one.
            port: b.port.and_then(|p| u16::try_from(p).ok()),
            rchar: b.rchar,
            wchar: b.wchar,
            read_bytes: b.read_bytes,
            write_bytes: b.write_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// Every figure survives the wire, including the ones a target does not have.
    #[test]
    fn a_snapshot_survives_the_wire() {
        let snapshot = Snapshot {
            healthy: Some(false),
            targets: vec![
                Target {
                    kind: Some(Kind::Ost),
                    name: "fs-OST0000".into(),
                    times: Times { snapshot_time: Some(1_688_603_042.5), ..Times::default() },
                    counters: vec![
                        Stat {
                            name: "write_bytes".into(),
                            units: "bytes".into(),
                            samples: 25001,
                            min: Some(98304),
                            max: Some(4194304),
                            sum: Some(104857600000),
                            sumsquare: Some(439803838556274688),
                        },
                        Stat {
                            name: "statfs".into(),
                            units: "reqs".into(),
                            samples: 7,
                            min: None,
                            max: None,
                            sum: None,
                            sumsquare: None,
                        },
                    ],
                    space: Some(Space {
                        kbytes_total: 10,
                        kbytes_free: 9,
                        kbytes_avail: 8,
                        files_total: 7,
                        files_free: 6,
                    }),
                    exports: Some(0),
                    recovery: Some("RECOVERING".into()),
                    locks: Locks {
                        count: Some(9),
                        timeouts: Some(0),
                        contended: Some(32),
                        contention_seconds: None,
                    },
                    brw: vec![
                        BrwHistogram {
                            name: "disk_iosize".into(),
                            title: "disk I/O size".into(),
                            unit: "ios".into(),
                            buckets: vec![
                                BrwBucket { name: 4096, read: 1, write: 2 },
                                BrwBucket { name: 1 << 20, read: 0, write: u64::MAX },
                            ],
                        },
                        BrwHistogram {
                            name: "pages".into(),
                            title: "pages per bulk r/w".into(),
                            unit: "rpcs".into(),
                            buckets: Vec::new(),
                        },
                    ],
                    busiest_exports: vec![
                        Export {
                            nid: "192.168.0.100@o2ib".into(),
                            counters: vec![Stat {
                                name: "read_bytes".into(),
                                units: "bytes".into(),
                                samples: 3,
                                min: Some(1),
                                max: Some(2),
                                sum: Some(4),
                                sumsquare: None,
                            }],
                            rates: Some(ExportRates { read_bytes_s: 1.5, write_bytes_s: 0.0, ops_s: 2.0 }),
                        },
                        Export { nid: "0@lo".into(), counters: Vec::new(), rates: None },
                    ],
                },
                Target { kind: Some(Kind::Client), name: "fs-ffff".into(), ..Target::default() },
            ],
            errors: vec!["mdt.fs-MDT0000.md_stats: …".into()],
            lnet: Some(LnetCounters {
                msgs_alloc: 1,
                msgs_max: 2,
                errors: 3,
                send_count: 4,
                recv_count: 5,
                route_count: 6,
                drop_count: 7,
                send_length: 8,
                recv_length: 9,
                route_length: 10,
                drop_length: u64::MAX,
            }),
        };
        let wire = pb::LustreSnapshot::from(&snapshot).encode_to_vec();
        let back = Snapshot::from(pb::LustreSnapshot::decode(wire.as_slice()).unwrap());
        assert_eq!(back, snapshot);
    }

    /// A sample's bricks, one up and one down, and its Lustre, survive the wire beside it; a
    /// sample without either has no file-system second after it either.
    #[test]
    fn a_samples_file_system_second_survives_the_wire() {
        use pvfs_metrics::ring::Stamped;
        use pvfs_metrics::sample::{FsSecond, Sample};
        let fs = FsSecond {
            lustre: Some(Snapshot { healthy: Some(true), ..Snapshot::default() }),
            bricks: vec![
                LocalBrick {
                    volume: "gv0".into(),
                    path: "/bricks/b1".into(),
                    pid: Some(4893),
                    port: Some(49152),
                    rchar: 1,
                    wchar: 2,
                    read_bytes: 3,
                    write_bytes: 4,
                },
                LocalBrick { volume: "gv0".into(), path: "gfs1-bricks-b2".into(), ..LocalBrick::default() },
            ],
            beegfs: vec![pvfs_metrics::beegfs::ServerSecond {
                kind: "storage".into(),
                num_id: 3,
                time: 1_700_000_002,
                requests: 40,
                queued_requests: 1,
                busy_workers: 2,
                write_bytes: 4 << 20,
                read_bytes: 8 << 10,
            }],
            beegfs_targets: vec![pvfs_metrics::beegfs::TargetSecond {
                consistency: "good".into(),
                free_bytes: 1 << 30,
                free_inodes: 7,
                id: 101,
                kind: "storage".into(),
                path: "/data/t1".into(),
                reachability: "online".into(),
                total_bytes: 2 << 30,
                total_inodes: 9,
            }],
        };
        let mut stamped = Stamped {
            epoch: 1,
            seq: 2,
            sample: Sample {
                time_unix_ns: 3,
                mono_ns: 4,
                disks: Vec::new(),
                nics: Vec::new(),
                cpu: Default::default(),
                mem: Default::default(),
                load: Default::default(),
                fs: Some(std::sync::Arc::new(fs.clone())),
            },
        };
        let wire = pb::Sample::from(&stamped).encode_to_vec();
        let back = Stamped::from(pb::Sample::decode(wire.as_slice()).unwrap());
        assert_eq!(back.sample.fs.as_deref(), Some(&fs));
        stamped.sample.fs = None;
        let wire = pb::Sample::from(&stamped).encode_to_vec();
        assert_eq!(Stamped::from(pb::Sample::decode(wire.as_slice()).unwrap()).sample.fs, None);
    }
}
