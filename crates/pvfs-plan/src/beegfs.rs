//! BeeGFS 7, as the seed tunes it: the management daemon first; then metadata and storage
//! servers, each on its RAID0 (when given disks) with the block-queue and service tuning of the
//! seed's Tables 11–12 and node/target IDs from the cluster file; then clients, which mount
//! through the beegfs-client service and check every server.

use crate::{CHECK_DEADLINE, Plan, READY_DEADLINE, host_of, packages, storage};
use pvfs_config::{Cluster, KindSpec, Node, Role, Target};
use pvfs_steps::{BeegfsService, BeegfsSetup, ConfigKeys, Directory, File, Gate, GateKind, Service, Step};

pub(crate) fn plan(cluster: &Cluster, plan: &mut Plan) {
    let KindSpec::Beegfs { mount, mgmtd_dir, meta, storage: storage_target, client_tuning } = &cluster.spec
    else {
        return;
    };
    let Some(mgmtd) = cluster.with_role(Role::Mgmtd).next() else { return };
    let mgmt_host = host_of(mgmtd);

    let steps = vec![
        packages(
            cluster,
            mgmtd,
            Role::Mgmtd,
            &["beegfs-mgmtd", "beegfs-utils"],
            &["beegfs-mgmtd", "beegfs-utils"],
            &[],
        ),
        Step::BeegfsSetup(BeegfsSetup {
            service: BeegfsService::Mgmtd,
            path: Some(mgmtd_dir.display().to_string()),
            node_id: None,
            target_id: None,
            mgmt_host: None,
        }),
        Step::Service(Service { unit: "beegfs-mgmtd".into(), enabled: true, running: true }),
    ];
    let mgmtd_unit = plan.add(mgmtd, "mgmtd", steps, vec![]);

    let server = |plan: &mut Plan, node: &Node, role: Role, service: BeegfsService, target: &Target| {
        let package = format!("beegfs-{}", service.as_str());
        // A node that is meta and storage keeps metadata on its meta_disks.
        let disks = if service == BeegfsService::Meta && !node.meta_disks.is_empty() {
            &node.meta_disks
        } else {
            &node.disks
        };
        let (fs_steps, tools) = if disks.is_empty() {
            // No disks of its own: the target is a directory on the node's file system.
            let dir = target.path.display().to_string();
            (vec![Step::Directory(Directory { path: dir, mode: 0o755 })], vec![])
        } else {
            storage::filesystem(node, disks, target)
        };
        let mut steps = vec![packages(cluster, node, role, &[&package], &[&package], &tools)];
        steps.extend(fs_steps);
        let node_id = node.id.unwrap_or(1);
        steps.push(Step::BeegfsSetup(BeegfsSetup {
            service,
            // A directory inside the target's file system, as BeeGFS's guide has it: the file
            // system's own root is not empty (ext4's lost+found), and setup refuses non-empty
            // directories.
            path: Some(target.path.join(format!("beegfs_{}", service.as_str())).display().to_string()),
            node_id: Some(node_id),
            // BeeGFS's own numbering convention: storage node N serves target N01.
            target_id: (service == BeegfsService::Storage).then_some(node_id * 100 + 1),
            mgmt_host: Some(mgmt_host.clone()),
        }));
        if !target.tuning.is_empty() {
            steps.push(Step::ConfigKeys(ConfigKeys { path: service.conf(), keys: target.tuning.clone() }));
        }
        steps.push(Step::Service(Service { unit: package, enabled: true, running: true }));
        plan.add(node, service.as_str(), steps, vec![mgmtd_unit])
    };
    let mut servers = Vec::new();
    for node in cluster.with_role(Role::Meta) {
        servers.push(server(plan, node, Role::Meta, BeegfsService::Meta, meta));
    }
    for node in cluster.with_role(Role::Storage) {
        servers.push(server(plan, node, Role::Storage, BeegfsService::Storage, storage_target));
    }
    servers.push(mgmtd_unit);
    servers.sort_unstable();

    for node in cluster.with_role(Role::Client) {
        let mount_str = mount.display().to_string();
        let client_pkgs = ["beegfs-client", "beegfs-helperd", "beegfs-utils"];
        let mut steps = vec![
            packages(cluster, node, Role::Client, &client_pkgs, &client_pkgs, &[]),
            Step::BeegfsSetup(BeegfsSetup {
                service: BeegfsService::Client,
                path: None,
                node_id: None,
                target_id: None,
                mgmt_host: Some(mgmt_host.clone()),
            }),
        ];
        // beegfs-ctl reads the client config just written: the management daemon must answer
        // before the client service tries to mount.
        steps.push(Step::Gate(Gate { kind: GateKind::BeegfsMgmtdReachable, deadline: READY_DEADLINE }));
        if !client_tuning.is_empty() {
            steps.push(Step::ConfigKeys(ConfigKeys {
                path: BeegfsService::Client.conf(),
                keys: client_tuning.clone(),
            }));
        }
        steps.extend([
            Step::Directory(Directory { path: mount_str.clone(), mode: 0o755 }),
            Step::File(File {
                path: "/etc/beegfs/beegfs-mounts.conf".into(),
                contents: format!("{mount_str} /etc/beegfs/beegfs-client.conf\n"),
                mode: 0o644,
            }),
            Step::Service(Service { unit: "beegfs-helperd".into(), enabled: true, running: true }),
            Step::Service(Service { unit: "beegfs-client".into(), enabled: true, running: true }),
            Step::Gate(Gate { kind: GateKind::BeegfsCheckServers, deadline: CHECK_DEADLINE }),
            Step::Gate(Gate { kind: GateKind::Writable { dir: mount_str }, deadline: CHECK_DEADLINE }),
        ]);
        plan.add(node, "client", steps, servers.clone());
    }
}
