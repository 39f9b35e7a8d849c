//! Lustre, as the seed builds it: packages and LNet on every server; the MGS/MDT formatted and
//! mounted; each OSS's RAID0 formatted as an OST with its index from the cluster file and
//! mounted, once the MGS answers over LNet; then clients mount and check every server, take
//! the cluster file's client parameters (`lctl set_param`), and the first client makes the
//! benchmark directory with its default layout (`lfs setstripe`).

use crate::{CHECK_DEADLINE, Plan, READY_DEADLINE, host_of, packages, storage};
use pvfs_config::{Cluster, KindSpec, Node, Role, Target};
use pvfs_steps::{
    Directory, File, Gate, GateKind, LctlParam, LustreRole, LustreStripe, LustreTarget, Mount, Service, Step,
};

const SERVER_RPMS: &[&str] =
    &["lustre", "kmod-lustre", "kmod-lustre-osd-ldiskfs", "lustre-osd-ldiskfs-mount", "e2fsprogs"];
/// The prebuilt client module for the kernel the repository targets, never lustre-client-dkms:
/// that one needs dkms (EPEL) and kernel-devel for the running kernel, which the seed's nodes
/// lacked (it installed it with `--skip-broken`, so it was in effect never installed).
const CLIENT_RPMS: &[&str] = &["kmod-lustre-client", "lustre-client"];

pub(crate) fn plan(cluster: &Cluster, plan: &mut Plan) {
    let KindSpec::Lustre { fsname, mount, lnet, interface, version, mdt, ost, stripe, client_lctl } =
        &cluster.spec
    else {
        return;
    };
    // lnet's `networks=` option: the network, pinned to an interface when the file says so
    // (`tcp(eth0)`); otherwise LNet picks the first interface that is up. A node's NID is its
    // `lnet_address` (its address on that interface) on the network, else the address its
    // agent is dialled on; each server checks that LNet came up with it (`lctl list_nids`).
    let networks = match interface {
        Some(interface) => format!("{lnet}({interface})"),
        None => lnet.clone(),
    };
    let Some(mgs) = cluster.with_role(Role::Mgs).next() else { return };
    let nid = |node: &Node| format!("{}@{lnet}", lnet_host(node));
    let mgs_nid = nid(mgs);
    let lnet_steps = |node: &Node, role: Role, rpms: &[&str], tools: &[&str]| -> Vec<Step> {
        let mut steps = vec![
            pinned(packages(cluster, node, role, rpms, rpms, tools), version.as_deref()),
            Step::File(File {
                path: "/etc/modprobe.d/lnet.conf".into(),
                contents: format!("options lnet networks={networks}\n"),
                mode: 0o644,
            }),
            // LNet reads its module options when the lnet service loads the modules: a change
            // restarts it (which fails, naming the reason, while targets are mounted).
            Step::Service(Service {
                unit: "lnet".into(),
                enabled: true,
                running: true,
                configs: vec!["/etc/modprobe.d/lnet.conf".into()],
            }),
        ];
        // Servers are reached at their NID (the MGS by every node, targets by clients); a
        // client's NID is only where answers go, which LNet keeps track of by itself. A host
        // name cannot be compared with what LNet lists.
        if role != Role::Client && lnet_host(node).parse::<std::net::Ipv4Addr>().is_ok() {
            steps.push(Step::Gate(Gate {
                kind: GateKind::LnetNid { nid: nid(node) },
                deadline: READY_DEADLINE,
            }));
        }
        steps
    };

    // The MGS (with the MDT when the same node is an mds, as the seed's MGSMDS00).
    let target_steps =
        |node: &Node, target: &Target, role: LustreRole, index: u32, mgsnode: Option<String>| {
            let device = storage::device(node, &node.disks, target);
            let mut steps = device.steps;
            steps.push(Step::LustreTarget(LustreTarget {
                device: device.path.clone(),
                fsname: fsname.clone(),
                role,
                index,
                mgsnode,
                backfstype: "ldiskfs".into(),
                wipe: device.wipe,
            }));
            let path = target.path.display().to_string();
            steps.push(Step::Mount(Mount {
                source: device.path,
                target: path,
                fstype: "lustre".into(),
                options: target.mount_options.clone(),
                fstab: true,
            }));
            steps.extend(storage::queue(&node.disks, target));
            (steps, device.tools)
        };

    let mut metadata = Vec::new();
    let mgs_role = if mgs.has(Role::Mds) { LustreRole::MgsMdt } else { LustreRole::Mgs };
    let (mut steps, tools) = target_steps(mgs, mdt, mgs_role, mgs.id.unwrap_or(0), None);
    let mut all = lnet_steps(mgs, Role::Mgs, SERVER_RPMS, &tools);
    all.append(&mut steps);
    let mgs_unit = plan.add(mgs, if mgs.has(Role::Mds) { "mgs+mdt" } else { "mgs" }, all, vec![]);
    metadata.push(mgs_unit);
    for node in cluster.with_role(Role::Mds).filter(|n| n.name != mgs.name) {
        let (mut steps, tools) =
            target_steps(node, mdt, LustreRole::Mdt, node.id.unwrap_or(0), Some(mgs_nid.clone()));
        let mut all = lnet_steps(node, Role::Mds, SERVER_RPMS, &tools);
        all.push(lnet_gate(&mgs_nid));
        all.append(&mut steps);
        metadata.push(plan.add(node, "mdt", all, vec![mgs_unit]));
    }

    let mut osts = Vec::new();
    for node in cluster.with_role(Role::Oss) {
        let (mut steps, tools) =
            target_steps(node, ost, LustreRole::Ost, node.id.unwrap_or(0), Some(mgs_nid.clone()));
        let mut all = lnet_steps(node, Role::Oss, SERVER_RPMS, &tools);
        all.push(lnet_gate(&mgs_nid));
        all.append(&mut steps);
        osts.push(plan.add(node, "ost", all, metadata.clone()));
    }

    let servers: Vec<usize> = metadata.iter().chain(&osts).copied().collect();
    // The benchmark directory (`[bench] mount`, else the mount itself): one client makes it and
    // sets its default layout, which is the file system's, not a client's.
    let bench = cluster.bench.mount.clone().unwrap_or_else(|| mount.clone());
    for (i, node) in cluster.with_role(Role::Client).enumerate() {
        let mount_str = mount.display().to_string();
        let mut steps = lnet_steps(node, Role::Client, CLIENT_RPMS, &[]);
        steps.push(lnet_gate(&mgs_nid));
        steps.push(Step::Mount(Mount {
            source: format!("{mgs_nid}:/{fsname}"),
            target: mount_str.clone(),
            fstype: "lustre".into(),
            // nosuid,nodev: the files come from other machines (the agent's policy insists).
            options: "defaults,_netdev,nosuid,nodev".into(),
            fstab: true,
        }));
        steps.push(Step::Gate(Gate { kind: GateKind::LfsCheckServers, deadline: CHECK_DEADLINE }));
        steps
            .push(Step::Gate(Gate { kind: GateKind::Writable { dir: mount_str }, deadline: CHECK_DEADLINE }));
        // Per client and lost at unmount (`lctl set_param -P` on the MGS would persist them, for
        // every client of the file system, managed here or not): checked on every `up`.
        for (name, value) in client_lctl {
            steps.push(Step::LctlParam(LctlParam { name: name.clone(), value: value.clone() }));
        }
        if i == 0 {
            if bench != *mount {
                steps.push(Step::Directory(Directory { path: bench.display().to_string(), mode: 0o755 }));
            }
            if let Some(stripe) = stripe {
                steps.push(Step::LustreStripe(LustreStripe {
                    dir: bench.display().to_string(),
                    count: stripe.count,
                    size: stripe.size,
                }));
            }
        }
        plan.add(node, "client", steps, servers.clone());
    }
}

/// The address in `node`'s NID: its `lnet_address`, else the address its agent is dialled on.
pub(crate) fn lnet_host(node: &Node) -> String {
    node.lnet_address.map_or_else(|| host_of(node), |a| a.to_string())
}

fn lnet_gate(nid: &str) -> Step {
    Step::Gate(Gate { kind: GateKind::LnetPing { nid: nid.to_owned() }, deadline: READY_DEADLINE })
}

/// Pins the Lustre packages (those named lustre* or kmod-lustre*) to `version`, unless the
/// cluster file pinned them itself.
fn pinned(step: Step, version: Option<&str>) -> Step {
    let (Step::Packages(mut p), Some(version)) = (step.clone(), version) else { return step };
    for list in [&mut p.apt, &mut p.rpm] {
        for pkg in list.iter_mut() {
            if pkg.version.is_none()
                && (pkg.name.starts_with("lustre") || pkg.name.starts_with("kmod-lustre"))
            {
                pkg.version = Some(version.to_owned());
            }
        }
    }
    Step::Packages(p)
}
