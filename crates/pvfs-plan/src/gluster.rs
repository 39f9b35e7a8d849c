//! GlusterFS, as the seed builds it: on every server packages, glusterd, the brick file system
//! (RAID0 → LVM thin → XFS, mounted with fstab) and the brick directory; then, from the first
//! server, the trusted pool and the volume (bricks in cluster-file order, so replica sets are
//! the file's consecutive servers); then on every client the FUSE mount.

use crate::{CHECK_DEADLINE, Plan, READY_DEADLINE, host_of, packages, storage};
use pvfs_config::{Cluster, KindSpec, Layout, Role};
use pvfs_steps::{
    Directory, Gate, GateKind, GlusterLayout, GlusterPeers, GlusterVolume, Mount, Service, Step,
};

/// How many bricks `node` serves in `cluster`'s volume: one on every server.
pub(crate) fn bricks_on(cluster: &Cluster, node: &pvfs_config::Node) -> u16 {
    u16::from(matches!(cluster.spec, KindSpec::Glusterfs { .. }) && node.has(Role::Server))
}

pub(crate) fn plan(cluster: &Cluster, plan: &mut Plan) {
    let KindSpec::Glusterfs { volume, mount, layout, options, brick } = &cluster.spec else { return };
    let servers: Vec<_> = cluster.with_role(Role::Server).collect();
    let brick_of =
        |node: &pvfs_config::Node| format!("{}:{}", host_of(node), brick.path.join(volume).display());

    let mut bricks_ready = Vec::new();
    for node in &servers {
        let (fs_steps, tools) = storage::filesystem(node, &node.disks, brick);
        let mut steps = vec![
            // centos-release-gluster carries the CentOS Storage SIG repository the seed installs from.
            packages(cluster, node, Role::Server, &[], &["centos-release-gluster"], &[]),
            packages(
                cluster,
                node,
                Role::Server,
                &["glusterfs-server"],
                &[
                    "glusterfs-server",
                    "glusterfs-cli",
                    "glusterfs-geo-replication",
                    "glusterfs-fuse",
                    "glusterfs",
                ],
                &tools,
            ),
            Step::Service(Service { unit: "glusterd".into(), enabled: true, running: true, configs: vec![] }),
            // glusterd.service stops only glusterd (KillMode=process); glusterfsd.service
            // ("brick processes, stopping only") is what stops the bricks at shutdown while
            // the network is still up, so clients fail over at once instead of waiting out
            // their ping timeout. The EL packages ship it disabled; Debian's ship none, and
            // the step finds nothing to do there.
            Step::Service(Service {
                unit: "glusterfsd".into(),
                enabled: true,
                running: true,
                configs: vec![],
            }),
        ];
        steps.extend(fs_steps);
        // The brick is a directory inside the brick file system, never its root: a volume on
        // an unmounted brick root would silently fill the node's root file system.
        steps.push(Step::Directory(Directory {
            path: brick.path.join(volume).display().to_string(),
            mode: 0o755,
        }));
        bricks_ready.push(plan.add(node, "brick", steps, vec![]));
    }

    let Some(first) = servers.first() else { return };
    let peers: Vec<String> = servers.iter().skip(1).map(|n| host_of(n)).collect();
    let mut pool_steps = Vec::new();
    if !peers.is_empty() {
        pool_steps.push(Step::GlusterPeers(GlusterPeers { peers: peers.clone() }));
        pool_steps.push(Step::Gate(Gate {
            kind: GateKind::GlusterPeersInCluster { peers },
            deadline: READY_DEADLINE,
        }));
    }
    let bricks: Vec<String> = servers.iter().map(|n| brick_of(n)).collect();
    pool_steps.push(Step::GlusterVolume(GlusterVolume {
        name: volume.clone(),
        layout: match *layout {
            Layout::Distribute => GlusterLayout::Distribute,
            Layout::Replicate { replica } => GlusterLayout::Replicate { replica },
            Layout::Disperse { disperse, redundancy } => GlusterLayout::Disperse { disperse, redundancy },
        },
        bricks: bricks.clone(),
        options: options.clone(),
    }));
    pool_steps.push(Step::Gate(Gate {
        kind: GateKind::GlusterBricksOnline { volume: volume.clone(), bricks },
        deadline: CHECK_DEADLINE,
    }));
    // After `add-brick` the volume step starts `rebalance fix-layout`, which runs on every
    // server in the background: new bricks get no files until it has finished, so clients
    // (and a benchmark) wait for it, with its progress shown, at most as long as a gate may.
    pool_steps.push(Step::Gate(Gate {
        kind: GateKind::GlusterRebalanced { volume: volume.clone() },
        deadline: Gate::MAX_DEADLINE,
    }));
    let volume_ready = plan.add(first, "volume", pool_steps, bricks_ready);

    // Clients mount from the first server and fall back to the others for the volume file.
    let backups: Vec<String> = servers.iter().skip(1).map(|n| host_of(n)).collect();
    // nosuid,nodev: the files come from other machines (the agent's policy insists).
    let mut mount_options = "defaults,_netdev,nosuid,nodev".to_owned();
    if !backups.is_empty() {
        mount_options += &format!(",backup-volfile-servers={}", backups.join(":"));
    }
    for node in cluster.with_role(Role::Client) {
        let mount_str = mount.display().to_string();
        let steps = vec![
            packages(cluster, node, Role::Client, &["glusterfs-client"], &["glusterfs-fuse"], &[]),
            Step::Mount(Mount {
                source: format!("{}:/{volume}", host_of(first)),
                target: mount_str.clone(),
                fstype: "glusterfs".into(),
                options: mount_options.clone(),
                fstab: true,
            }),
            Step::Gate(Gate { kind: GateKind::Writable { dir: mount_str }, deadline: CHECK_DEADLINE }),
        ];
        plan.add(node, "mount", steps, vec![volume_ready]);
    }
}
