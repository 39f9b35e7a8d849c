//! Wire ⇄ domain conversions.
//!
//! Fields are only ever added to the protocol, so a message from an older agent may lack some:
//! conversions from the wire treat a missing message as its default rather than failing.

use crate::pb;
use pvfs_metrics::facts::{BlockDevice, Cpu, Nic, NodeFacts, NodeInfo, OsRelease, Signature};

impl From<NodeInfo> for pb::NodeInfo {
    fn from(info: NodeInfo) -> pb::NodeInfo {
        let NodeInfo { agent_name, agent_version, agent_uptime_seconds, facts } = info;
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
            facts: NodeFacts {
                hostname: info.hostname,
                os: OsRelease { id: os.id, version_id: os.version_id, pretty_name: os.pretty_name },
                kernel: info.kernel,
                cpu: Cpu { logical: cpu.logical, model: cpu.model },
                memory_bytes: info.memory_bytes,
                block_devices: info.block_devices.into_iter().map(Into::into).collect(),
                nics: info.nics.into_iter().map(Into::into).collect(),
                uptime_seconds: info.uptime_seconds,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> NodeInfo {
        NodeInfo {
            agent_name: "oss00".into(),
            agent_version: "0.1.0".into(),
            agent_uptime_seconds: 12,
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
    fn an_unset_signature_is_never_empty() {
        let d = pb::BlockDevice { name: "sdc".into(), ..Default::default() };
        assert!(matches!(BlockDevice::from(d).signature, Signature::Unknown { .. }));
    }
}
