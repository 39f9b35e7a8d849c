//! Typed steps and their events, wire ⇄ domain.
//!
//! Steps come *from* the wire on the agent, so decoding is strict: a step kind or enum value
//! this agent does not know is an error naming it, never a silent default.

use crate::pb;
use crate::pb::step::Step as S;
use pvfs_steps::{
    BeegfsService, BeegfsSetup, BlockQueue, CommandRecord, ConfigKeys, Directory, Failure, File,
    FirewallPorts, Gate, GateKind, GlusterLayout, GlusterPeers, GlusterPeersDetached, GlusterVolume,
    GlusterVolumeGone, KnownHost, LctlParam, LustreRole, LustreStripe, LustreTarget, LvmThin, Mkfs, Mount,
    MpiSsh, MpiSshGone, Outcome, Package, PackageManager, Packages, PortRange, Protocol, Raid0, Repo,
    Service, ServiceStopped, Step, StepEvent, Unmount, WipeTarget,
};
use std::time::Duration;

/// A step from the wire this agent cannot carry out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("step {index}: {reason}")]
pub struct StepDecodeError {
    pub index: usize,
    pub reason: DecodeReason,
}

/// Why one step from the wire cannot be carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeReason {
    #[error("a step of a kind this agent does not know {}", OLDER)]
    UnknownStep,
    #[error("a gate of a kind this agent does not know {}", OLDER)]
    UnknownGate,
    /// An enum value this agent's protocol does not have.
    #[error("unknown {what} {value} {}", OLDER)]
    UnknownValue { what: &'static str, value: i32 },
    #[error(
        "a Lustre stripe step without its directory, count or size ({dir:?}, {count}, {size}): a broken or older \
         coordinator"
    )]
    IncompleteStripe { dir: String, count: i64, size: u64 },
    #[error(
        "an lctl parameter without its name or value ({name:?}={value:?}): a broken or older coordinator"
    )]
    IncompleteLctlParam { name: String, value: String },
    #[error(
        "a firewall step without ports, or with a port range that is not 1 to 65535, first to last \
         ({0}): a broken or older coordinator"
    )]
    BadFirewallPorts(String),
    #[error(
        "a gate deadline of {deadline:?} is longer than an agent waits ({}s at most); \
         ask for a shorter one, or run the step again after it expires",
        Gate::MAX_DEADLINE.as_secs()
    )]
    GateDeadline { deadline: Duration },
}

fn kv(pairs: &[(String, String)]) -> Vec<pb::KeyValue> {
    pairs.iter().map(|(key, value)| pb::KeyValue { key: key.clone(), value: value.clone() }).collect()
}

fn pairs(kv: Vec<pb::KeyValue>) -> Vec<(String, String)> {
    kv.into_iter().map(|p| (p.key, p.value)).collect()
}

fn packages_to(list: &[Package]) -> Vec<pb::Package> {
    list.iter().map(|p| pb::Package { name: p.name.clone(), version: p.version.clone() }).collect()
}

fn mount_to(m: &Mount) -> pb::MountStep {
    pb::MountStep {
        source: m.source.clone(),
        target: m.target.clone(),
        fstype: m.fstype.clone(),
        options: m.options.clone(),
        fstab: m.fstab,
    }
}

fn mount_from(m: pb::MountStep) -> Mount {
    Mount { source: m.source, target: m.target, fstype: m.fstype, options: m.options, fstab: m.fstab }
}

/// A firewall step from the wire: at least one port, each 1 ≤ first ≤ last ≤ 65535, tcp or
/// udp. (Which ports may be opened at all is the policy's business.)
fn firewall_from(f: pb::FirewallStep) -> Result<FirewallPorts, DecodeReason> {
    if f.ports.is_empty() {
        return Err(DecodeReason::BadFirewallPorts("no port".into()));
    }
    let mut ports = Vec::with_capacity(f.ports.len());
    for p in f.ports {
        let protocol = match pb::port_range::Protocol::try_from(p.protocol) {
            Ok(pb::port_range::Protocol::Tcp) => Protocol::Tcp,
            Ok(pb::port_range::Protocol::Udp) => Protocol::Udp,
            _ => return Err(DecodeReason::UnknownValue { what: "port protocol", value: p.protocol }),
        };
        let number = |n: u32| u16::try_from(n).ok().filter(|&n| n > 0);
        match (number(p.first), number(p.last)) {
            (Some(first), Some(last)) if first <= last => ports.push(PortRange { first, last, protocol }),
            _ => return Err(DecodeReason::BadFirewallPorts(format!("{}-{}", p.first, p.last))),
        }
    }
    Ok(FirewallPorts { ports, zone: f.zone })
}

fn packages_from(list: Vec<pb::Package>) -> Vec<Package> {
    list.into_iter().map(|p| Package { name: p.name, version: p.version }).collect()
}

// The wire forms of the steps with more than a line to convert, one function each, so that
// `From<&Step>` stays a table of step kinds; the decoders below mirror them.

fn packages_step_to(p: &Packages) -> pb::PackagesStep {
    pb::PackagesStep {
        manager: match p.manager {
            PackageManager::Auto => pb::packages_step::Manager::Auto,
            PackageManager::Apt => pb::packages_step::Manager::Apt,
            PackageManager::Dnf => pb::packages_step::Manager::Dnf,
            PackageManager::Yum => pb::packages_step::Manager::Yum,
        } as i32,
        apt: packages_to(&p.apt),
        rpm: packages_to(&p.rpm),
        repos: p
            .repos
            .iter()
            .map(|r| pb::Repo {
                name: r.name.clone(),
                baseurl: r.baseurl.clone(),
                gpgkey: r.gpgkey.clone(),
                gpgcheck_disabled: !r.gpgcheck,
                allow_http: r.allow_http,
                suites: r.suites.clone(),
                components: r.components.clone(),
                key: r.key.clone(),
            })
            .collect(),
    }
}

fn lustre_target_to(t: &LustreTarget) -> pb::LustreTargetStep {
    pb::LustreTargetStep {
        device: t.device.clone(),
        fsname: t.fsname.clone(),
        role: match t.role {
            LustreRole::MgsMdt => pb::lustre_target_step::Role::MgsMdt,
            LustreRole::Mgs => pb::lustre_target_step::Role::Mgs,
            LustreRole::Mdt => pb::lustre_target_step::Role::Mdt,
            LustreRole::Ost => pb::lustre_target_step::Role::Ost,
        } as i32,
        index: t.index,
        mgsnode: t.mgsnode.clone(),
        backfstype: t.backfstype.clone(),
        wipe: t.wipe,
    }
}

fn firewall_to(f: &FirewallPorts) -> pb::FirewallStep {
    pb::FirewallStep {
        ports: f
            .ports
            .iter()
            .map(|p| pb::PortRange {
                first: u32::from(p.first),
                last: u32::from(p.last),
                protocol: match p.protocol {
                    Protocol::Tcp => pb::port_range::Protocol::Tcp,
                    Protocol::Udp => pb::port_range::Protocol::Udp,
                } as i32,
            })
            .collect(),
        zone: f.zone.clone(),
    }
}

fn mpi_ssh_to(m: &MpiSsh) -> pb::MpiSshStep {
    pb::MpiSshStep {
        cluster: m.cluster.clone(),
        private_key: m.private_key.clone(),
        public_key: m.public_key.clone(),
        known_hosts: m
            .known_hosts
            .iter()
            .map(|h| pb::KnownHost { names: h.names.clone(), key: h.key.clone() })
            .collect(),
    }
}

/// The layout travels as a kind and the three counts, of which only the kind's own are set.
fn gluster_volume_to(v: &GlusterVolume) -> pb::GlusterVolumeStep {
    use pb::gluster_volume_step::Layout as L;
    let (layout, replica, disperse, redundancy) = match v.layout {
        GlusterLayout::Distribute => (L::Distribute, 0, 0, 0),
        GlusterLayout::Replicate { replica } => (L::Replicate, replica, 0, 0),
        GlusterLayout::Disperse { disperse, redundancy } => (L::Disperse, 0, disperse, redundancy),
    };
    pb::GlusterVolumeStep {
        name: v.name.clone(),
        layout: layout as i32,
        replica,
        disperse,
        redundancy,
        bricks: v.bricks.clone(),
        options: kv(&v.options),
    }
}

fn beegfs_setup_to(b: &BeegfsSetup) -> pb::BeegfsSetupStep {
    pb::BeegfsSetupStep {
        service: match b.service {
            BeegfsService::Mgmtd => pb::beegfs_setup_step::Service::Mgmtd,
            BeegfsService::Meta => pb::beegfs_setup_step::Service::Meta,
            BeegfsService::Storage => pb::beegfs_setup_step::Service::Storage,
            BeegfsService::Client => pb::beegfs_setup_step::Service::Client,
        } as i32,
        path: b.path.clone(),
        node_id: b.node_id,
        target_id: b.target_id,
        mgmt_host: b.mgmt_host.clone(),
    }
}

fn gate_to(g: &Gate) -> pb::GateStep {
    use pb::gate_step::Kind as K;
    let kind = match &g.kind {
        GateKind::GlusterPeersInCluster { peers } => {
            K::GlusterPeersInCluster(pb::StringList { items: peers.clone() })
        }
        GateKind::GlusterBricksOnline { volume, bricks } => {
            K::GlusterBricksOnline(pb::GlusterBricks { volume: volume.clone(), bricks: bricks.clone() })
        }
        GateKind::LnetPing { nid } => K::LnetPing(nid.clone()),
        GateKind::LnetNid { nid } => K::LnetNid(nid.clone()),
        GateKind::LfsCheckServers => K::LfsCheckServers(pb::Empty {}),
        GateKind::BeegfsMgmtdReachable => K::BeegfsMgmtdReachable(pb::Empty {}),
        GateKind::BeegfsCheckServers => K::BeegfsCheckServers(pb::Empty {}),
        GateKind::BeegfsTargetsGood { meta, storage } => {
            K::BeegfsTargetsGood(pb::BeegfsTargets { meta: *meta, storage: *storage })
        }
        GateKind::Writable { dir } => K::Writable(dir.clone()),
        GateKind::KernelBuildTree => K::KernelBuildTree(pb::Empty {}),
        GateKind::MountedAs { dir, fstype } => {
            K::MountedAs(pb::MountedAs { dir: dir.clone(), fstype: fstype.clone() })
        }
        GateKind::GlusterRebalanced { volume } => K::GlusterRebalanced(volume.clone()),
    };
    pb::GateStep { deadline_ms: g.deadline.as_millis() as u64, kind: Some(kind) }
}

impl From<&Step> for pb::Step {
    fn from(step: &Step) -> pb::Step {
        let inner = match step {
            Step::Packages(p) => S::Packages(packages_step_to(p)),
            Step::File(f) => {
                S::File(pb::FileStep { path: f.path.clone(), contents: f.contents.clone(), mode: f.mode })
            }
            Step::ConfigKeys(c) => {
                S::ConfigKeys(pb::ConfigKeysStep { path: c.path.clone(), keys: kv(&c.keys) })
            }
            Step::Directory(d) => S::Directory(pb::DirectoryStep { path: d.path.clone(), mode: d.mode }),
            Step::Service(s) => S::Service(pb::ServiceStep {
                unit: s.unit.clone(),
                enabled: s.enabled,
                running: s.running,
                configs: s.configs.clone(),
            }),
            Step::Raid0(r) => S::Raid0(pb::Raid0Step {
                device: r.device.clone(),
                members: r.members.clone(),
                chunk_kib: r.chunk_kib,
                wipe: r.wipe.clone(),
                conf: r.conf.clone(),
            }),
            Step::LvmThin(l) => S::LvmThin(pb::LvmThinStep {
                pv: l.pv.clone(),
                vg: l.vg.clone(),
                pool: l.pool.clone(),
                pool_size: l.pool_size.clone(),
                chunk: l.chunk.clone(),
                lv: l.lv.clone(),
                virtual_size: l.virtual_size.clone(),
                data_alignment: l.data_alignment.clone(),
                extent_size: l.extent_size.clone(),
                zero: l.zero,
                wipe: l.wipe,
            }),
            Step::Mkfs(m) => S::Mkfs(pb::MkfsStep {
                device: m.device.clone(),
                fstype: m.fstype.clone(),
                options: m.options.clone(),
                label: m.label.clone(),
                wipe: m.wipe,
            }),
            Step::LustreTarget(t) => S::LustreTarget(lustre_target_to(t)),
            Step::LustreStripe(s) => {
                S::LustreStripe(pb::LustreStripeStep { dir: s.dir.clone(), count: s.count, size: s.size })
            }
            Step::LctlParam(p) => {
                S::LctlParam(pb::LctlParamStep { name: p.name.clone(), value: p.value.clone() })
            }
            Step::Firewall(f) => S::Firewall(firewall_to(f)),
            Step::Mount(m) => S::Mount(mount_to(m)),
            Step::Unmount(Unmount(m)) => S::Unmount(mount_to(m)),
            Step::ServiceStopped(s) => S::ServiceStopped(pb::ServiceStoppedStep { unit: s.unit.clone() }),
            Step::GlusterVolumeGone(v) => {
                S::GlusterVolumeGone(pb::GlusterVolumeGoneStep { name: v.name.clone() })
            }
            Step::GlusterPeersDetached(p) => {
                S::GlusterPeersDetached(pb::StringList { items: p.peers.clone() })
            }
            Step::MpiSsh(m) => S::MpiSsh(mpi_ssh_to(m)),
            Step::MpiSshGone(g) => S::MpiSshGone(g.cluster.clone()),
            Step::WipeTarget(w) => S::WipeTarget(pb::WipeTargetStep {
                disks: w.disks.clone(),
                array: w.array.clone(),
                vg: w.vg.clone(),
            }),
            Step::BlockQueue(q) => S::BlockQueue(pb::BlockQueueStep {
                device: q.device.clone(),
                scheduler: q.scheduler.clone(),
                nr_requests: q.nr_requests,
                read_ahead_kb: q.read_ahead_kb,
                members: q.members.clone(),
            }),
            Step::GlusterPeers(p) => S::GlusterPeers(pb::GlusterPeersStep { peers: p.peers.clone() }),
            Step::GlusterVolume(v) => S::GlusterVolume(gluster_volume_to(v)),
            Step::BeegfsSetup(b) => S::BeegfsSetup(beegfs_setup_to(b)),
            Step::Gate(g) => S::Gate(gate_to(g)),
        };
        pb::Step { step: Some(inner) }
    }
}

/// Decodes the steps of a request.
pub fn steps_from_wire(steps: Vec<pb::Step>) -> Result<Vec<Step>, StepDecodeError> {
    steps
        .into_iter()
        .enumerate()
        .map(|(index, s)| step_from(s).map_err(|reason| StepDecodeError { index, reason }))
        .collect()
}

/// What a step or value this agent does not know most likely means.
const OLDER: &str = "(is the agent older than the coordinator?)";

fn unknown(what: &'static str, value: i32) -> DecodeReason {
    DecodeReason::UnknownValue { what, value }
}

fn step_from(step: pb::Step) -> Result<Step, DecodeReason> {
    let inner = step.step.ok_or(DecodeReason::UnknownStep)?;
    Ok(match inner {
        S::Packages(p) => Step::Packages(packages_step_from(p)?),
        S::File(f) => Step::File(File { path: f.path, contents: f.contents, mode: f.mode }),
        S::ConfigKeys(c) => Step::ConfigKeys(ConfigKeys { path: c.path, keys: pairs(c.keys) }),
        S::Directory(d) => Step::Directory(Directory { path: d.path, mode: d.mode }),
        S::Service(s) => Step::Service(Service {
            unit: s.unit,
            enabled: s.enabled,
            running: s.running,
            configs: s.configs,
        }),
        S::Raid0(r) => Step::Raid0(Raid0 {
            device: r.device,
            members: r.members,
            chunk_kib: r.chunk_kib,
            wipe: r.wipe,
            conf: r.conf,
        }),
        S::LvmThin(l) => Step::LvmThin(LvmThin {
            pv: l.pv,
            vg: l.vg,
            pool: l.pool,
            pool_size: l.pool_size,
            chunk: l.chunk,
            lv: l.lv,
            virtual_size: l.virtual_size,
            data_alignment: l.data_alignment,
            extent_size: l.extent_size,
            zero: l.zero,
            wipe: l.wipe,
        }),
        S::Mkfs(m) => Step::Mkfs(Mkfs {
            device: m.device,
            fstype: m.fstype,
            options: m.options,
            label: m.label,
            wipe: m.wipe,
        }),
        S::LustreTarget(t) => Step::LustreTarget(lustre_target_from(t)?),
        S::LustreStripe(s) => {
            if s.dir.is_empty() || s.count == 0 || s.size == 0 {
                return Err(DecodeReason::IncompleteStripe { dir: s.dir, count: s.count, size: s.size });
            }
            Step::LustreStripe(LustreStripe { dir: s.dir, count: s.count, size: s.size })
        }
        S::LctlParam(p) => {
            if p.name.is_empty() || p.value.is_empty() {
                return Err(DecodeReason::IncompleteLctlParam { name: p.name, value: p.value });
            }
            Step::LctlParam(LctlParam { name: p.name, value: p.value })
        }
        S::Firewall(f) => Step::Firewall(firewall_from(f)?),
        S::Mount(m) => Step::Mount(mount_from(m)),
        S::Unmount(m) => Step::Unmount(Unmount(mount_from(m))),
        S::ServiceStopped(s) => Step::ServiceStopped(ServiceStopped { unit: s.unit }),
        S::GlusterVolumeGone(v) => Step::GlusterVolumeGone(GlusterVolumeGone { name: v.name }),
        S::GlusterPeersDetached(p) => Step::GlusterPeersDetached(GlusterPeersDetached { peers: p.items }),
        S::MpiSsh(m) => Step::MpiSsh(mpi_ssh_from(m)),
        S::MpiSshGone(cluster) => Step::MpiSshGone(MpiSshGone { cluster }),
        S::WipeTarget(w) => Step::WipeTarget(WipeTarget { disks: w.disks, array: w.array, vg: w.vg }),
        S::BlockQueue(q) => Step::BlockQueue(BlockQueue {
            device: q.device,
            members: q.members,
            scheduler: q.scheduler,
            nr_requests: q.nr_requests,
            read_ahead_kb: q.read_ahead_kb,
        }),
        S::GlusterPeers(p) => Step::GlusterPeers(GlusterPeers { peers: p.peers }),
        S::GlusterVolume(v) => Step::GlusterVolume(gluster_volume_from(v)?),
        S::BeegfsSetup(b) => Step::BeegfsSetup(beegfs_setup_from(b)?),
        S::Gate(g) => Step::Gate(gate_from(g)?),
    })
}

// The decoders of the steps with more than a line to convert (or an enum that may be unknown),
// one function each, so that `step_from` stays a table of step kinds.

fn packages_step_from(p: pb::PackagesStep) -> Result<Packages, DecodeReason> {
    Ok(Packages {
        manager: match pb::packages_step::Manager::try_from(p.manager)
            .map_err(|_| unknown("package manager", p.manager))?
        {
            pb::packages_step::Manager::Auto => PackageManager::Auto,
            pb::packages_step::Manager::Apt => PackageManager::Apt,
            pb::packages_step::Manager::Dnf => PackageManager::Dnf,
            pb::packages_step::Manager::Yum => PackageManager::Yum,
        },
        apt: packages_from(p.apt),
        rpm: packages_from(p.rpm),
        repos: p
            .repos
            .into_iter()
            .map(|r| Repo {
                name: r.name,
                baseurl: r.baseurl,
                gpgkey: r.gpgkey,
                gpgcheck: !r.gpgcheck_disabled,
                allow_http: r.allow_http,
                suites: r.suites,
                components: r.components,
                key: r.key,
            })
            .collect(),
    })
}

fn lustre_target_from(t: pb::LustreTargetStep) -> Result<LustreTarget, DecodeReason> {
    Ok(LustreTarget {
        device: t.device,
        fsname: t.fsname,
        role: match pb::lustre_target_step::Role::try_from(t.role) {
            Ok(pb::lustre_target_step::Role::MgsMdt) => LustreRole::MgsMdt,
            Ok(pb::lustre_target_step::Role::Mgs) => LustreRole::Mgs,
            Ok(pb::lustre_target_step::Role::Mdt) => LustreRole::Mdt,
            Ok(pb::lustre_target_step::Role::Ost) => LustreRole::Ost,
            _ => return Err(unknown("Lustre target role", t.role)),
        },
        index: t.index,
        mgsnode: t.mgsnode,
        backfstype: t.backfstype,
        wipe: t.wipe,
    })
}

fn mpi_ssh_from(m: pb::MpiSshStep) -> MpiSsh {
    MpiSsh {
        cluster: m.cluster,
        private_key: m.private_key,
        public_key: m.public_key,
        known_hosts: m.known_hosts.into_iter().map(|h| KnownHost { names: h.names, key: h.key }).collect(),
    }
}

/// The layout's kind picks which of the three counts are read.
fn gluster_volume_from(v: pb::GlusterVolumeStep) -> Result<GlusterVolume, DecodeReason> {
    use pb::gluster_volume_step::Layout as L;
    let layout = match L::try_from(v.layout).map_err(|_| unknown("gluster layout", v.layout))? {
        L::Distribute => GlusterLayout::Distribute,
        L::Replicate => GlusterLayout::Replicate { replica: v.replica },
        L::Disperse => GlusterLayout::Disperse { disperse: v.disperse, redundancy: v.redundancy },
    };
    Ok(GlusterVolume { name: v.name, layout, bricks: v.bricks, options: pairs(v.options) })
}

fn beegfs_setup_from(b: pb::BeegfsSetupStep) -> Result<BeegfsSetup, DecodeReason> {
    Ok(BeegfsSetup {
        service: match pb::beegfs_setup_step::Service::try_from(b.service) {
            Ok(pb::beegfs_setup_step::Service::Mgmtd) => BeegfsService::Mgmtd,
            Ok(pb::beegfs_setup_step::Service::Meta) => BeegfsService::Meta,
            Ok(pb::beegfs_setup_step::Service::Storage) => BeegfsService::Storage,
            Ok(pb::beegfs_setup_step::Service::Client) => BeegfsService::Client,
            _ => return Err(unknown("BeeGFS service", b.service)),
        },
        path: b.path,
        node_id: b.node_id,
        target_id: b.target_id,
        mgmt_host: b.mgmt_host,
    })
}

/// A gate from the wire: its kind, and a deadline no longer than [`Gate::MAX_DEADLINE`].
fn gate_from(g: pb::GateStep) -> Result<Gate, DecodeReason> {
    use pb::gate_step::Kind as K;
    let kind = match g.kind.ok_or(DecodeReason::UnknownGate)? {
        K::GlusterPeersInCluster(list) => GateKind::GlusterPeersInCluster { peers: list.items },
        K::GlusterBricksOnline(b) => GateKind::GlusterBricksOnline { volume: b.volume, bricks: b.bricks },
        K::LnetPing(nid) => GateKind::LnetPing { nid },
        K::LnetNid(nid) => GateKind::LnetNid { nid },
        K::LfsCheckServers(_) => GateKind::LfsCheckServers,
        K::BeegfsMgmtdReachable(_) => GateKind::BeegfsMgmtdReachable,
        K::BeegfsCheckServers(_) => GateKind::BeegfsCheckServers,
        K::BeegfsTargetsGood(t) => GateKind::BeegfsTargetsGood { meta: t.meta, storage: t.storage },
        K::Writable(dir) => GateKind::Writable { dir },
        K::MountedAs(m) => GateKind::MountedAs { dir: m.dir, fstype: m.fstype },
        K::KernelBuildTree(_) => GateKind::KernelBuildTree,
        K::GlusterRebalanced(volume) => GateKind::GlusterRebalanced { volume },
    };
    // Refused rather than clamped: a gate that quietly waits less than it was asked to
    // is a different gate, and the planner never asks for more than a few minutes, so
    // only a broken or hostile caller gets here. Without a cap, one call could hold the
    // agent's Apply lock for years.
    let deadline = Duration::from_millis(g.deadline_ms);
    if deadline > Gate::MAX_DEADLINE {
        return Err(DecodeReason::GateDeadline { deadline });
    }
    Ok(Gate { kind, deadline })
}

impl From<&StepEvent> for pb::ApplyEvent {
    fn from(event: &StepEvent) -> pb::ApplyEvent {
        use pb::apply_event::Event as E;
        let inner = match event {
            StepEvent::Started { index } => E::Started(pb::StepStarted { index: *index }),
            StepEvent::Progress { index, detail } => {
                E::Progress(pb::StepProgress { index: *index, detail: detail.clone() })
            }
            StepEvent::Command { index, record } => E::Command(pb::CommandDone {
                index: *index,
                command: record.command.clone(),
                code: record.code,
                duration_ms: record.duration.as_millis() as u64,
            }),
            StepEvent::Done { index, outcome, duration } => {
                use pb::step_done::Status;
                let mut done = pb::StepDone {
                    index: *index,
                    duration_ms: duration.as_millis() as u64,
                    ..Default::default()
                };
                let status = match outcome {
                    Outcome::Ok { detail } => {
                        done.detail = detail.clone().unwrap_or_default();
                        Status::Ok
                    }
                    Outcome::Changed { diff } => {
                        done.diff = diff.clone();
                        Status::Changed
                    }
                    Outcome::WouldChange { diff, would_run } => {
                        done.diff = diff.clone();
                        done.would_run = would_run.clone();
                        Status::WouldChange
                    }
                    Outcome::Pending { detail } => {
                        done.detail = detail.clone();
                        Status::Pending
                    }
                    Outcome::Failed(f) => {
                        done.detail = f.message.clone();
                        done.command = f.command.clone().unwrap_or_default();
                        done.code = f.code;
                        done.stderr_tail = f.stderr_tail.clone();
                        done.refused = f.refused;
                        Status::Failed
                    }
                    Outcome::Skipped { reason } => {
                        done.detail = reason.clone();
                        Status::Skipped
                    }
                    Outcome::MustBoot { kernel, running } => {
                        done.boot_kernel = kernel.clone();
                        done.running_kernel = running.clone();
                        Status::MustBoot
                    }
                };
                done.status = status as i32;
                E::Done(done)
            }
        };
        pb::ApplyEvent { event: Some(inner) }
    }
}

impl From<pb::ApplyEvent> for Option<StepEvent> {
    /// `None` for an event kind this coordinator does not know (a newer agent).
    fn from(event: pb::ApplyEvent) -> Option<StepEvent> {
        use pb::apply_event::Event as E;
        Some(match event.event? {
            E::Started(s) => StepEvent::Started { index: s.index },
            E::Progress(p) => StepEvent::Progress { index: p.index, detail: p.detail },
            E::Command(c) => StepEvent::Command {
                index: c.index,
                record: CommandRecord {
                    command: c.command,
                    code: c.code,
                    duration: Duration::from_millis(c.duration_ms),
                },
            },
            E::Done(d) => {
                use pb::step_done::Status;
                let outcome = match Status::try_from(d.status).unwrap_or(Status::Unspecified) {
                    Status::Ok => Outcome::Ok { detail: (!d.detail.is_empty()).then_some(d.detail) },
                    Status::Changed => Outcome::Changed { diff: d.diff },
                    Status::WouldChange => Outcome::WouldChange { diff: d.diff, would_run: d.would_run },
                    Status::Pending => Outcome::Pending { detail: d.detail },
                    Status::Skipped => Outcome::Skipped { reason: d.detail },
                    // Strict: a must-boot without the kernel to boot into cannot be acted on.
                    Status::MustBoot if d.boot_kernel.is_empty() || d.running_kernel.is_empty() => {
                        Outcome::Failed(Failure {
                            message: "the agent said the node must boot into another kernel but did not \
                                      name the kernel (a mismatched agent version?)"
                                .into(),
                            command: None,
                            code: None,
                            stderr_tail: String::new(),
                            refused: false,
                        })
                    }
                    Status::MustBoot => {
                        Outcome::MustBoot { kernel: d.boot_kernel, running: d.running_kernel }
                    }
                    Status::Failed | Status::Unspecified => Outcome::Failed(Failure {
                        message: if d.detail.is_empty() {
                            "the agent reported an unknown status".into()
                        } else {
                            d.detail
                        },
                        command: (!d.command.is_empty()).then_some(d.command),
                        code: d.code,
                        stderr_tail: d.stderr_tail,
                        refused: d.refused,
                    }),
                };
                StepEvent::Done { index: d.index, outcome, duration: Duration::from_millis(d.duration_ms) }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every step of every example plan survives the trip over the wire unchanged.
    #[test]
    fn steps_round_trip() {
        let steps = vec![
            Step::Packages(Packages {
                manager: PackageManager::Yum,
                apt: vec![],
                rpm: vec![Package { name: "lustre".into(), version: Some("2.9.0".into()) }],
                repos: vec![
                    Repo {
                        name: "lustre".into(),
                        baseurl: "https://x/".into(),
                        gpgkey: None,
                        gpgcheck: false,
                        allow_http: false,
                        suites: vec![],
                        components: vec![],
                        key: None,
                    },
                    Repo {
                        name: "mirror".into(),
                        baseurl: "http://mirror/".into(),
                        gpgkey: Some("http://mirror/key".into()),
                        gpgcheck: true,
                        allow_http: true,
                        suites: vec![],
                        components: vec![],
                        key: None,
                    },
                    Repo {
                        name: "beegfs".into(),
                        baseurl: "https://www.beegfs.io/release/beegfs_7.4.5".into(),
                        gpgkey: None,
                        gpgcheck: true,
                        allow_http: false,
                        suites: vec!["bookworm".into()],
                        components: vec!["non-free".into()],
                        key: Some("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQ==\n-----END PGP PUBLIC KEY BLOCK-----\n".into()),
                    },
                ],
            }),
            Step::Raid0(Raid0 {
                device: "/dev/md0".into(),
                members: vec!["/dev/sdc".into()],
                chunk_kib: Some(256),
                wipe: vec![],
                conf: None,
            }),
            Step::GlusterVolume(GlusterVolume {
                name: "gv0".into(),
                layout: GlusterLayout::Disperse { disperse: 3, redundancy: 1 },
                bricks: vec!["a:/b".into()],
                options: vec![("k".into(), "v".into())],
            }),
            Step::LustreTarget(LustreTarget {
                device: "/dev/md0".into(),
                fsname: "LustreFS".into(),
                role: LustreRole::Ost,
                index: 7,
                mgsnode: Some("10.0.0.4@tcp".into()),
                backfstype: "ldiskfs".into(),
                wipe: false,
            }),
            Step::Gate(Gate {
                kind: GateKind::LnetPing { nid: "10.0.0.4@tcp".into() },
                deadline: Duration::from_secs(120),
            }),
            Step::Gate(Gate {
                kind: GateKind::LnetNid { nid: "192.168.10.4@o2ib1".into() },
                deadline: Duration::from_secs(120),
            }),
            Step::Gate(Gate { kind: GateKind::BeegfsCheckServers, deadline: Duration::from_secs(60) }),
            Step::Gate(Gate {
                kind: GateKind::MountedAs { dir: "/mnt/beegfs".into(), fstype: "beegfs".into() },
                deadline: Duration::from_secs(60),
            }),
            Step::Gate(Gate { kind: GateKind::KernelBuildTree, deadline: Duration::from_secs(5) }),
            Step::BlockQueue(BlockQueue {
                device: "/dev/md10".into(),
                members: vec!["/dev/disk/azure/scsi1/lun0".into(), "/dev/disk/azure/scsi1/lun1".into()],
                scheduler: Some("deadline".into()),
                nr_requests: Some(4096),
                read_ahead_kb: Some(32768),
            }),
            Step::Service(Service {
                unit: "beegfs-meta".into(),
                enabled: true,
                running: true,
                configs: vec!["/etc/beegfs/beegfs-meta.conf".into(), "/etc/beegfs/connauthfile".into()],
            }),
            Step::Gate(Gate {
                kind: GateKind::GlusterRebalanced { volume: "gv0".into() },
                deadline: Duration::from_secs(3600),
            }),
            Step::Unmount(Unmount(Mount {
                source: "10.0.0.4@tcp:/LustreFS".into(),
                target: "/mnt/lustre".into(),
                fstype: "lustre".into(),
                options: "defaults,_netdev".into(),
                fstab: true,
            })),
            Step::ServiceStopped(ServiceStopped { unit: "lnet".into() }),
            Step::GlusterVolumeGone(GlusterVolumeGone { name: "gv0".into() }),
            Step::GlusterPeersDetached(GlusterPeersDetached { peers: vec!["10.0.0.5".into()] }),
            Step::WipeTarget(WipeTarget {
                disks: vec!["/dev/sdc".into(), "/dev/sdd".into()],
                array: Some("/dev/md0".into()),
                vg: None,
            }),
            Step::LustreStripe(LustreStripe { dir: "/mnt/lustre/bench".into(), count: -1, size: 4 << 20 }),
            Step::LctlParam(LctlParam { name: "llite.*.max_read_ahead_mb".into(), value: "64".into() }),
            Step::MpiSsh(MpiSsh {
                cluster: "gluster-e2e".into(),
                private_key: "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----\n".into(),
                public_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq0".into(),
                known_hosts: vec![KnownHost {
                    names: vec!["10.0.0.7".into(), "client1".into()],
                    key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDx6".into(),
                }],
            }),
            Step::MpiSshGone(MpiSshGone { cluster: "gluster-e2e".into() }),
            Step::Firewall(FirewallPorts {
                ports: vec![PortRange::one(988, Protocol::Tcp), PortRange::range(8003, 8008, Protocol::Udp)],
                zone: Some("internal".into()),
            }),
            Step::Firewall(FirewallPorts { ports: vec![PortRange::one(24007, Protocol::Tcp)], zone: None }),
        ];
        let wire: Vec<pb::Step> = steps.iter().map(pb::Step::from).collect();
        assert_eq!(steps_from_wire(wire).unwrap(), steps);
        // A coordinator that does not know the GPG fields asks for signatures to be checked.
        let old = pb::Repo { name: "r".into(), baseurl: "https://x/".into(), ..Default::default() };
        let packages =
            pb::Step { step: Some(S::Packages(pb::PackagesStep { repos: vec![old], ..Default::default() })) };
        let Step::Packages(decoded) = &steps_from_wire(vec![packages]).unwrap()[0] else { unreachable!() };
        assert!(decoded.repos[0].gpgcheck && !decoded.repos[0].allow_http);
        // Zero is what a field left out decodes to: a stripe or parameter missing a part is refused.
        for bad in [
            S::LustreStripe(pb::LustreStripeStep {
                dir: "/mnt/lustre/bench".into(),
                count: 0,
                size: 4 << 20,
            }),
            S::LustreStripe(pb::LustreStripeStep { dir: "/mnt/lustre/bench".into(), count: -1, size: 0 }),
            S::LustreStripe(pb::LustreStripeStep { dir: String::new(), count: -1, size: 4 << 20 }),
            S::LctlParam(pb::LctlParamStep {
                name: "llite.*.max_read_ahead_mb".into(),
                value: String::new(),
            }),
            S::LctlParam(pb::LctlParamStep { name: String::new(), value: "64".into() }),
        ] {
            let err = steps_from_wire(vec![pb::Step { step: Some(bad) }]).unwrap_err().to_string();
            assert!(err.starts_with("step 0: a") && err.contains("without its"), "{err}");
        }
        // A firewall step with no port, a port 0, one past 65535, a range backwards or no
        // protocol.
        let port = |first, last, protocol: i32| pb::PortRange { first, last, protocol };
        for ports in [
            vec![],
            vec![port(0, 0, 1)],
            vec![port(988, 70000, 1)],
            vec![port(8008, 8003, 2)],
            vec![port(988, 988, 0)],
            vec![port(988, 988, 7)],
        ] {
            let bad = S::Firewall(pb::FirewallStep { ports: ports.clone(), zone: None });
            assert!(steps_from_wire(vec![pb::Step { step: Some(bad) }]).is_err(), "{ports:?}");
        }
        let err = steps_from_wire(vec![pb::Step { step: None }]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "step 0: a step of a kind this agent does not know (is the agent older than the coordinator?)"
        );
    }

    #[test]
    fn gate_deadlines_over_the_cap_are_refused() {
        let gate = |deadline_ms| pb::Step {
            step: Some(S::Gate(pb::GateStep {
                deadline_ms,
                kind: Some(pb::gate_step::Kind::LnetPing("10.0.0.4@tcp".into())),
            })),
        };
        let at_cap = Gate::MAX_DEADLINE.as_millis() as u64;
        assert!(steps_from_wire(vec![gate(at_cap)]).is_ok());
        let err = steps_from_wire(vec![gate(at_cap + 1), gate(u64::MAX)]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "step 0: a gate deadline of 3600.001s is longer than an agent waits (3600s at most); \
             ask for a shorter one, or run the step again after it expires"
        );
        let err = steps_from_wire(vec![gate(1000), gate(u64::MAX)]).unwrap_err();
        assert_eq!(err.index, 1);
        assert!(err.reason.to_string().starts_with("a gate deadline of 18446744073709551.615s"), "{err}");
    }

    #[test]
    fn outcomes_round_trip() {
        let failure = Outcome::Failed(Failure {
            message: "`mkfs.xfs /dev/loop0` exited 1: boom".into(),
            command: Some("mkfs.xfs /dev/loop0".into()),
            code: Some(1),
            stderr_tail: "boom".into(),
            refused: false,
        });
        let refusal = Outcome::Failed(Failure {
            message: "refusing: /dev/sdc holds xfs".into(),
            command: None,
            code: None,
            stderr_tail: String::new(),
            refused: true,
        });
        for outcome in [
            Outcome::Ok { detail: None },
            Outcome::Changed { diff: vec!["a".into()] },
            Outcome::WouldChange { diff: vec!["a".into()], would_run: vec!["b".into()] },
            Outcome::Pending { detail: "p".into() },
            Outcome::Skipped { reason: "s".into() },
            Outcome::MustBoot {
                kernel: "3.10.0-514.el7_lustre.x86_64".into(),
                running: "3.10.0-514.el7.x86_64".into(),
            },
            failure,
            refusal,
        ] {
            let event = StepEvent::Done { index: 3, outcome, duration: Duration::from_millis(12) };
            let back: Option<StepEvent> = pb::ApplyEvent::from(&event).into();
            assert_eq!(back, Some(event));
        }
        let progress =
            StepEvent::Progress { index: 2, detail: "fix-layout in progress on 1 of 2 nodes".into() };
        let back: Option<StepEvent> = pb::ApplyEvent::from(&progress).into();
        assert_eq!(back, Some(progress));
    }

    #[test]
    fn a_must_boot_without_its_kernel_is_refused() {
        let done = pb::StepDone {
            index: 0,
            status: pb::step_done::Status::MustBoot as i32,
            running_kernel: "3.10.0-514.el7.x86_64".into(),
            ..Default::default()
        };
        let event: Option<StepEvent> =
            pb::ApplyEvent { event: Some(pb::apply_event::Event::Done(done)) }.into();
        let Some(StepEvent::Done { outcome: Outcome::Failed(f), .. }) = event else { panic!("{event:?}") };
        assert!(f.message.contains("did not name the kernel"), "{}", f.message);
    }
}
