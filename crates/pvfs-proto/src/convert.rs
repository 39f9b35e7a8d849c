//! Wire ⇄ domain conversions.
//!
//! Fields are only ever added to the protocol, so a message from an older agent may lack some:
//! conversions from the wire treat a missing message as its default rather than failing.

use crate::pb;
use pvfs_metrics::facts::{
    BlockDevice, Cpu, HostFirewall, Nic, NodeFacts, NodeInfo, OsRelease, Selinux, Signature,
};
use pvfs_metrics::processes::Process;
use pvfs_metrics::ring::Stamped;
use pvfs_metrics::sample::{
    CpuCounters, DiskCounters, Duplex, FsSecond, LoadCounters, MemCounters, NicCounters, Sample,
};

impl From<NodeInfo> for pb::NodeInfo {
    fn from(info: NodeInfo) -> pb::NodeInfo {
        let NodeInfo {
            agent_name,
            agent_version,
            agent_uptime_seconds,
            agent_build,
            agent_executable,
            facts,
        } = info;
        pb::NodeInfo {
            hostname: facts.hostname,
            os: Some(pb::OsRelease {
                id: facts.os.id,
                version_id: facts.os.version_id,
                pretty_name: facts.os.pretty_name,
            }),
            kernel: facts.kernel,
            cpu: Some(pb::Cpu { logical: facts.cpu.logical, model: facts.cpu.model }),
            memory_bytes: facts.memory_bytes,
            block_devices: facts.block_devices.into_iter().map(Into::into).collect(),
            nics: facts.nics.into_iter().map(Into::into).collect(),
            agent_version,
            uptime_seconds: facts.uptime_seconds,
            agent_uptime_seconds,
            agent_name,
            boot_id: facts.boot_id,
            ssh_host_key: facts.ssh_host_key,
            selinux: facts.selinux.as_str().to_owned(),
            firewall: facts.firewall.as_str().to_owned(),
            agent_build,
            agent_executable,
        }
    }
}

impl From<pb::NodeInfo> for NodeInfo {
    fn from(info: pb::NodeInfo) -> NodeInfo {
        let os = info.os.unwrap_or_default();
        let cpu = info.cpu.unwrap_or_default();
        NodeInfo {
            agent_name: info.agent_name,
            agent_version: info.agent_version,
            agent_uptime_seconds: info.agent_uptime_seconds,
            agent_build: info.agent_build,
            agent_executable: info.agent_executable,
            facts: NodeFacts {
                hostname: info.hostname,
                os: OsRelease { id: os.id, version_id: os.version_id, pretty_name: os.pretty_name },
                kernel: info.kernel,
                cpu: Cpu { logical: cpu.logical, model: cpu.model },
                memory_bytes: info.memory_bytes,
                block_devices: info.block_devices.into_iter().map(Into::into).collect(),
                nics: info.nics.into_iter().map(Into::into).collect(),
                uptime_seconds: info.uptime_seconds,
                boot_id: info.boot_id,
                ssh_host_key: info.ssh_host_key,
                selinux: Selinux::from_word(&info.selinux),
                firewall: HostFirewall::from_word(&info.firewall),
            },
        }
    }
}

impl From<BlockDevice> for pb::BlockDevice {
    fn from(d: BlockDevice) -> pb::BlockDevice {
        use pb::signature::State;
        let signature = match d.signature {
            Signature::Empty => pb::Signature { state: State::Empty.into(), ..Default::default() },
            Signature::Present { kind } => {
                pb::Signature { state: State::Present.into(), kind, detail: String::new() }
            }
            Signature::Unknown { detail } => {
                pb::Signature { state: State::Unknown.into(), kind: String::new(), detail }
            }
        };
        pb::BlockDevice {
            name: d.name,
            path: d.path,
            size_bytes: d.size_bytes,
            rotational: d.rotational,
            model: d.model,
            signature: Some(signature),
        }
    }
}

impl From<pb::BlockDevice> for BlockDevice {
    fn from(d: pb::BlockDevice) -> BlockDevice {
        use pb::signature::State;
        let sig = d.signature.unwrap_or_default();
        // An agent that did not say (or says something this coordinator does not know) has
        // not proven the device empty.
        let signature = match sig.state() {
            State::Empty => Signature::Empty,
            State::Present => Signature::Present { kind: sig.kind },
            State::Unknown | State::Unspecified => Signature::Unknown {
                detail: if sig.detail.is_empty() { "not reported by the agent".into() } else { sig.detail },
            },
        };
        BlockDevice {
            name: d.name,
            path: d.path,
            size_bytes: d.size_bytes,
            rotational: d.rotational,
            model: d.model,
            signature,
        }
    }
}

impl From<Nic> for pb::Nic {
    fn from(n: Nic) -> pb::Nic {
        pb::Nic {
            name: n.name,
            mac: n.mac,
            speed_mbps: n.speed_mbps,
            mtu: n.mtu,
            operstate: n.operstate,
            duplex: n.duplex,
        }
    }
}

impl From<pb::Nic> for Nic {
    fn from(n: pb::Nic) -> Nic {
        Nic {
            name: n.name,
            mac: n.mac,
            speed_mbps: n.speed_mbps,
            mtu: n.mtu,
            operstate: n.operstate,
            duplex: n.duplex,
        }
    }
}

impl From<&Stamped> for pb::Sample {
    fn from(st: &Stamped) -> pb::Sample {
        let s = &st.sample;
        let mut sample = pb::Sample {
            epoch: st.epoch,
            seq: st.seq,
            time_unix_ns: s.time_unix_ns,
            mono_ns: s.mono_ns,
            disks: s.disks.iter().map(pb::DiskCounters::from).collect(),
            nics: s.nics.iter().map(pb::NicCounters::from).collect(),
            cpu: Some(pb::CpuCounters::from(&s.cpu)),
            mem: Some(pb::MemCounters::from(&s.mem)),
            load: Some(pb::LoadCounters::from(&s.load)),
            // Attached per stream, for the streams that asked ([`processes_to_wire`]).
            processes: Vec::new(),
            lustre: None,
            bricks: Vec::new(),
            beegfs: Vec::new(),
            beegfs_targets: Vec::new(),
        };
        if let Some(fs) = &s.fs {
            fs_to_wire(fs, &mut sample);
        }
        sample
    }
}

/// A node's file-system second on the wire (`Sample.lustre`, `Sample.bricks`, `Sample.beegfs`).
pub fn fs_to_wire(fs: &FsSecond, sample: &mut pb::Sample) {
    sample.lustre = fs.lustre.as_ref().map(pb::LustreSnapshot::from);
    sample.bricks = fs.bricks.iter().map(pb::GlusterBrick::from).collect();
    sample.beegfs = fs.beegfs.iter().map(pb::BeegfsServerSecond::from).collect();
    sample.beegfs_targets = fs.beegfs_targets.iter().map(pb::BeegfsTargetSecond::from).collect();
}

/// A sample's processes on the wire (`Sample.processes`).
pub fn processes_to_wire(processes: &[Process]) -> Vec<pb::ProcessRates> {
    processes.iter().map(pb::ProcessRates::from).collect()
}

/// The processes a sample carries (none from an agent that predates them, or when the stream
/// did not ask), taken out of it; the rest converts to [`Stamped`] as before.
pub fn take_processes(sample: &mut pb::Sample) -> Vec<Process> {
    std::mem::take(&mut sample.processes).into_iter().map(Process::from).collect()
}

impl From<pb::Sample> for Stamped {
    fn from(p: pb::Sample) -> Stamped {
        Stamped {
            epoch: p.epoch,
            seq: p.seq,
            sample: Sample {
                time_unix_ns: p.time_unix_ns,
                mono_ns: p.mono_ns,
                disks: p.disks.into_iter().map(Into::into).collect(),
                nics: p.nics.into_iter().map(Into::into).collect(),
                cpu: p.cpu.map(Into::into).unwrap_or_default(),
                mem: p.mem.map(Into::into).unwrap_or_default(),
                load: p.load.map(Into::into).unwrap_or_default(),
                fs: (p.lustre.is_some()
                    || !p.bricks.is_empty()
                    || !p.beegfs.is_empty()
                    || !p.beegfs_targets.is_empty())
                .then(|| {
                    std::sync::Arc::new(FsSecond {
                        lustre: p.lustre.map(Into::into),
                        bricks: p.bricks.into_iter().map(Into::into).collect(),
                        beegfs: p.beegfs.into_iter().map(Into::into).collect(),
                        beegfs_targets: p.beegfs_targets.into_iter().map(Into::into).collect(),
                    })
                }),
            },
        }
    }
}

/// Both directions of a counters struct whose fields have the same names on both sides.
macro_rules! same_fields {
    ($domain:path, $wire:path, [$($field:ident),* $(,)?] $(, $name:ident)?) => {
        impl From<&$domain> for $wire {
            fn from(d: &$domain) -> $wire {
                Self::from(d.clone())
            }
        }
        impl From<$domain> for $wire {
            fn from(d: $domain) -> $wire {
                $wire { $($name: d.$name,)? $($field: d.$field,)* }
            }
        }
        impl From<$wire> for $domain {
            fn from(w: $wire) -> $domain {
                $domain { $($name: w.$name,)? $($field: w.$field,)* }
            }
        }
    };
}

same_fields!(
    DiskCounters,
    pb::DiskCounters,
    [
        rd_ios, rd_merges, rd_sectors, rd_ticks, wr_ios, wr_merges, wr_sectors, wr_ticks, ios_pgr, tot_ticks,
        rq_ticks, dc_ios, dc_merges, dc_sectors, dc_ticks, fl_ios, fl_ticks,
    ],
    name
);
same_fields!(
    CpuCounters,
    pb::CpuCounters,
    [user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice]
);
same_fields!(
    MemCounters,
    pb::MemCounters,
    [
        total_kb,
        free_kb,
        available_kb,
        buffers_kb,
        cached_kb,
        slab_kb,
        committed_as_kb,
        active_kb,
        inactive_kb,
        dirty_kb,
        swap_total_kb,
        swap_free_kb,
    ]
);
same_fields!(LoadCounters, pb::LoadCounters, [one, five, fifteen, runnable, tasks]);
same_fields!(
    pvfs_metrics::beegfs::ServerSecond,
    pb::BeegfsServerSecond,
    [kind, num_id, time, requests, queued_requests, busy_workers, write_bytes, read_bytes]
);
same_fields!(
    pvfs_metrics::beegfs::TargetSecond,
    pb::BeegfsTargetSecond,
    [kind, id, path, total_bytes, free_bytes, total_inodes, free_inodes, reachability, consistency]
);

impl From<&NicCounters> for pb::NicCounters {
    fn from(n: &NicCounters) -> pb::NicCounters {
        pb::NicCounters {
            name: n.name.clone(),
            rx_bytes: n.rx_bytes,
            rx_packets: n.rx_packets,
            rx_errs: n.rx_errs,
            rx_drop: n.rx_drop,
            rx_compressed: n.rx_compressed,
            rx_multicast: n.rx_multicast,
            tx_bytes: n.tx_bytes,
            tx_packets: n.tx_packets,
            tx_errs: n.tx_errs,
            tx_drop: n.tx_drop,
            tx_compressed: n.tx_compressed,
            speed_mbps: n.speed_mbps,
            duplex: match n.duplex {
                Duplex::Full => "full",
                Duplex::Half => "half",
                Duplex::Unknown => "",
            }
            .into(),
        }
    }
}

impl From<pb::NicCounters> for NicCounters {
    fn from(n: pb::NicCounters) -> NicCounters {
        NicCounters {
            duplex: match n.duplex.as_str() {
                "full" => Duplex::Full,
                "half" => Duplex::Half,
                _ => Duplex::Unknown,
            },
            name: n.name,
            rx_bytes: n.rx_bytes,
            rx_packets: n.rx_packets,
            rx_errs: n.rx_errs,
            rx_drop: n.rx_drop,
            rx_compressed: n.rx_compressed,
            rx_multicast: n.rx_multicast,
            tx_bytes: n.tx_bytes,
            tx_packets: n.tx_packets,
            tx_errs: n.tx_errs,
            tx_drop: n.tx_drop,
            tx_compressed: n.tx_compressed,
            speed_mbps: n.speed_mbps,
        }
    }
}

same_fields!(
    Process,
    pb::ProcessRates,
    [pid, name, cpu_percent, read_bytes_per_s, write_bytes_per_s, kernel]
);

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> NodeInfo {
        NodeInfo {
            agent_name: "oss00".into(),
            agent_version: "0.1.0".into(),
            agent_uptime_seconds: 12,
            agent_build: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
            agent_executable: "/usr/local/bin/pvfs-agent".into(),
            facts: NodeFacts {
                hostname: "oss00".into(),
                os: OsRelease {
                    id: "debian".into(),
                    version_id: "12".into(),
                    pretty_name: "Debian GNU/Linux 12 (bookworm)".into(),
                },
                kernel: "6.1.0-37-amd64".into(),
                cpu: Cpu { logical: 2, model: "Xeon".into() },
                memory_bytes: 1 << 34,
                block_devices: vec![
                    BlockDevice {
                        name: "sdc".into(),
                        path: "/dev/sdc".into(),
                        size_bytes: 1 << 40,
                        rotational: true,
                        model: "Virtual Disk".into(),
                        signature: Signature::Empty,
                    },
                    BlockDevice {
                        name: "sdd".into(),
                        path: "/dev/sdd".into(),
                        size_bytes: 1 << 40,
                        rotational: true,
                        model: String::new(),
                        signature: Signature::Present { kind: "xfs".into() },
                    },
                    BlockDevice {
                        name: "sde".into(),
                        path: "/dev/sde".into(),
                        size_bytes: 1 << 40,
                        rotational: true,
                        model: String::new(),
                        signature: Signature::Unknown { detail: "no device node".into() },
                    },
                ],
                nics: vec![Nic {
                    name: "eth0".into(),
                    mac: "00:0d:3a:8e:11:20".into(),
                    speed_mbps: Some(40000),
                    mtu: 1500,
                    operstate: "up".into(),
                    duplex: "full".into(),
                }],
                uptime_seconds: 86523,
                boot_id: "0a9a3c1e-64a8-4f5b-9d51-2b6f1f3c6e7d".into(),
                ssh_host_key:
                    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDx6n5e0mUw6Xz7m7i1f3sQ2bP4nq5R8yT0uV9wX1yZ2".into(),
                selinux: Selinux::Enforcing,
                firewall: HostFirewall::Firewalld,
            },
        }
    }

    #[test]
    fn node_info_survives_the_wire() {
        let info = sample();
        let wire = prost::Message::encode_to_vec(&pb::NodeInfo::from(info.clone()));
        let back: pb::NodeInfo = prost::Message::decode(wire.as_slice()).unwrap();
        assert_eq!(NodeInfo::from(back), info);
    }

    #[test]
    fn samples_survive_the_wire() {
        let stamped = Stamped {
            epoch: 17,
            seq: 4242,
            sample: Sample {
                time_unix_ns: 1_763_780_000_000_000_000,
                mono_ns: 86_400_123_456_789,
                disks: vec![DiskCounters {
                    name: "md0".into(),
                    rd_ios: 1,
                    wr_sectors: 2,
                    fl_ticks: 3,
                    ..Default::default()
                }],
                nics: vec![NicCounters {
                    name: "ib0".into(),
                    rx_bytes: u64::MAX,
                    speed_mbps: 100_000,
                    duplex: Duplex::Full,
                    ..Default::default()
                }],
                cpu: CpuCounters { user: 5, guest_nice: 6, ..Default::default() },
                mem: MemCounters { total_kb: 7, swap_free_kb: 8, ..Default::default() },
                load: LoadCounters { one: 0.52, five: 0.31, fifteen: 0.12, runnable: 3, tasks: 187 },
                fs: None,
            },
        };
        let wire = prost::Message::encode_to_vec(&pb::Sample::from(&stamped));
        let back: pb::Sample = prost::Message::decode(wire.as_slice()).unwrap();
        assert_eq!(Stamped::from(back), stamped);
    }

    #[test]
    fn processes_survive_the_wire_beside_their_sample() {
        let stamped = Stamped {
            epoch: 1,
            seq: 2,
            sample: Sample {
                time_unix_ns: 3,
                mono_ns: 4,
                disks: vec![],
                nics: vec![],
                cpu: CpuCounters::default(),
                mem: MemCounters::default(),
                load: LoadCounters::default(),
                fs: None,
            },
        };
        let processes = vec![
            Process {
                pid: 4242,
                name: "glusterfsd".into(),
                cpu_percent: 187.5,
                read_bytes_per_s: 0,
                write_bytes_per_s: 734_003_200,
                kernel: false,
            },
            Process {
                pid: 9,
                name: "ll_ost_io00_001".into(),
                cpu_percent: 3.0,
                read_bytes_per_s: u64::MAX,
                write_bytes_per_s: 1,
                kernel: true,
            },
        ];
        let mut sample = pb::Sample::from(&stamped);
        sample.processes = processes_to_wire(&processes);
        let wire = prost::Message::encode_to_vec(&sample);
        let mut back: pb::Sample = prost::Message::decode(wire.as_slice()).unwrap();
        assert_eq!(take_processes(&mut back), processes);
        assert_eq!(Stamped::from(back), stamped);
        // A sample without processes (an older agent, or a stream that did not ask) costs no
        // bytes for them.
        let bare = prost::Message::encode_to_vec(&pb::Sample::from(&stamped));
        let mut bare: pb::Sample = prost::Message::decode(bare.as_slice()).unwrap();
        assert!(take_processes(&mut bare).is_empty());
    }

    #[test]
    fn an_unset_signature_is_never_empty() {
        let d = pb::BlockDevice { name: "sdc".into(), ..Default::default() };
        assert!(matches!(BlockDevice::from(d).signature, Signature::Unknown { .. }));
    }
}

pub mod bench;
mod lustre;
mod steps;
pub use steps::{DecodeReason, StepDecodeError, steps_from_wire};

#[cfg(test)]
mod fuzz;
