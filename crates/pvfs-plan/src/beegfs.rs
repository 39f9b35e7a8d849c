//! BeeGFS 7, as the seed tunes it: the management daemon first; then metadata and storage
//! servers, each on its RAID0 (when given disks) with the block-queue and service tuning of the
//! seed's Tables 11–12 and node/target IDs from the cluster file; then clients, which build
//! their kernel module, mount through the beegfs-client service and check every server.
//!
//! Every node gets the connection settings first: the shared secret (`connAuthFile`, which
//! BeeGFS 7.3 and later require unless `connDisableAuthentication = true`), and the interface
//! and subnet lists when the cluster file gives them. Each service step names the files its
//! daemon reads, so a change to any of them restarts it once, after all of them.

use crate::{CHECK_DEADLINE, Plan, READY_DEADLINE, host_of, packages, storage};
use pvfs_config::{BeegfsAuth, Cluster, KindSpec, Node, Role, Target};
use pvfs_policy::{BEEGFS_AUTH_FILE, BEEGFS_INTERFACES, BEEGFS_NET_FILTER};
use pvfs_steps::{BeegfsService, BeegfsSetup, ConfigKeys, Directory, File, Gate, GateKind, Service, Step};

/// The client's mount list, read by the beegfs-client service.
const MOUNTS_CONF: &str = "/etc/beegfs/beegfs-mounts.conf";

/// What the client needs to build its kernel module: `beegfs-client` compiles it against the
/// running kernel when its service starts (the `beegfs-client` init script's rebuild, with
/// `beegfs-client-autobuild.conf`), so the kernel headers and a compiler must be there.
const CLIENT_BUILD_RPM: &[&str] = &["kernel-devel", "gcc", "make", "elfutils-libelf-devel"];
const CLIENT_BUILD_APT: &[&str] = &["gcc", "make"];

/// How long the client waits for the running kernel's headers: they are there after the
/// packages step or not at all.
const HEADERS_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// The connection settings every BeeGFS service of a cluster shares.
struct Connection {
    /// Files written on every node before the services are set up.
    files: Vec<Step>,
    /// Keys for every service's configuration.
    keys: Vec<(String, String)>,
    /// The files among them that daemons read at start.
    configs: Vec<String>,
}

fn connection(auth: &BeegfsAuth, interfaces: &[String], net_filter: &[String]) -> Connection {
    let mut c = Connection { files: Vec::new(), keys: Vec::new(), configs: Vec::new() };
    match auth {
        BeegfsAuth::Secret(secret) => {
            c.files.push(Step::File(File {
                path: BEEGFS_AUTH_FILE.into(),
                contents: secret.clone(),
                mode: 0o400,
            }));
            // Not `connDisableAuthentication = false` as well: BeeGFS 7.3 introduced that key
            // (false by default), and 7.2, which beegfs.toml installs on EL7, does not know it.
            c.keys.push(("connAuthFile".into(), BEEGFS_AUTH_FILE.into()));
            c.configs.push(BEEGFS_AUTH_FILE.into());
        }
        BeegfsAuth::Disabled => c.keys.push(("connDisableAuthentication".into(), "true".into())),
    }
    for (path, key, list) in [
        (BEEGFS_INTERFACES, "connInterfacesFile", interfaces),
        (BEEGFS_NET_FILTER, "connNetFilterFile", net_filter),
    ] {
        if list.is_empty() {
            continue;
        }
        let mut contents = list.join("\n");
        contents.push('\n');
        c.files.push(Step::File(File { path: path.into(), contents, mode: 0o644 }));
        c.keys.push((key.into(), path.into()));
        c.configs.push(path.into());
    }
    c
}

impl Connection {
    /// The keys a service's configuration takes (helperd knows no interface or subnet lists).
    fn keys_for(&self, service: &str) -> Vec<(String, String)> {
        self.keys
            .iter()
            .filter(|(k, _)| {
                service != "helperd" || k.starts_with("connAuth") || k == "connDisableAuthentication"
            })
            .cloned()
            .collect()
    }

    /// The service step for `unit`, restarted when `conf` or a shared connection file changes.
    fn service(&self, unit: &str, conf: &[String]) -> Step {
        let mut configs: Vec<String> = conf.to_vec();
        let helperd = unit == "beegfs-helperd";
        configs.extend(self.configs.iter().filter(|c| !helperd || c.as_str() == BEEGFS_AUTH_FILE).cloned());
        Step::Service(Service { unit: unit.into(), enabled: true, running: true, configs })
    }
}

pub(crate) fn plan(cluster: &Cluster, plan: &mut Plan) {
    let KindSpec::Beegfs {
        mount,
        mgmtd_dir,
        meta,
        storage: storage_target,
        client_tuning,
        auth,
        interfaces,
        net_filter,
    } = &cluster.spec
    else {
        return;
    };
    let Some(mgmtd) = cluster.with_role(Role::Mgmtd).next() else { return };
    let mgmt_host = host_of(mgmtd);
    let conn = connection(auth, interfaces, net_filter);
    let settings = |service: BeegfsService, tuning: &[(String, String)]| -> Step {
        let mut keys = conn.keys_for(service.as_str());
        keys.extend(tuning.iter().cloned());
        Step::ConfigKeys(ConfigKeys { path: service.conf(), keys })
    };

    let mut steps = vec![packages(
        cluster,
        mgmtd,
        Role::Mgmtd,
        &["beegfs-mgmtd", "beegfs-utils"],
        &["beegfs-mgmtd", "beegfs-utils"],
        &[],
    )];
    steps.extend(conn.files.iter().cloned());
    steps.extend([
        Step::BeegfsSetup(BeegfsSetup {
            service: BeegfsService::Mgmtd,
            path: Some(mgmtd_dir.display().to_string()),
            node_id: None,
            target_id: None,
            mgmt_host: None,
        }),
        settings(BeegfsService::Mgmtd, &[]),
        conn.service("beegfs-mgmtd", &[BeegfsService::Mgmtd.conf()]),
    ]);
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
        steps.extend(conn.files.iter().cloned());
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
        steps.push(settings(service, &target.tuning));
        steps.push(conn.service(&package, &[service.conf()]));
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

    let count = |role| u32::try_from(cluster.with_role(role).count()).unwrap_or(u32::MAX);
    let (metas, storages) = (count(Role::Meta), count(Role::Storage));
    for node in cluster.with_role(Role::Client) {
        let mount_str = mount.display().to_string();
        let client_pkgs = ["beegfs-client", "beegfs-helperd", "beegfs-utils"];
        let apt: Vec<&str> = client_pkgs.iter().chain(CLIENT_BUILD_APT).copied().collect();
        let rpm: Vec<&str> = client_pkgs.iter().chain(CLIENT_BUILD_RPM).copied().collect();
        let mut steps = vec![
            packages(cluster, node, Role::Client, &apt, &rpm, &[]),
            // Said here rather than as a failed module build at service start: nothing
            // changes while this waits, so its deadline is short.
            Step::Gate(Gate { kind: GateKind::KernelBuildTree, deadline: HEADERS_DEADLINE }),
        ];
        steps.extend(conn.files.iter().cloned());
        steps.extend([
            Step::BeegfsSetup(BeegfsSetup {
                service: BeegfsService::Client,
                path: None,
                node_id: None,
                target_id: None,
                mgmt_host: Some(mgmt_host.clone()),
            }),
            settings(BeegfsService::Client, client_tuning),
            Step::ConfigKeys(ConfigKeys {
                path: "/etc/beegfs/beegfs-helperd.conf".into(),
                keys: conn.keys_for("helperd"),
            }),
            // beegfs-ctl reads the client configuration just written (management host and
            // secret): the management daemon must answer before the client service mounts.
            Step::Gate(Gate { kind: GateKind::BeegfsMgmtdReachable, deadline: READY_DEADLINE }),
            // Servers that answer are not yet targets a client can use: each must be
            // registered, Online and Good before the client mounts (one target per metadata
            // and per storage server, as the servers' units set them up).
            Step::Gate(Gate {
                kind: GateKind::BeegfsTargetsGood { meta: metas, storage: storages },
                deadline: READY_DEADLINE,
            }),
            Step::Directory(Directory { path: mount_str.clone(), mode: 0o755 }),
            Step::File(File {
                path: MOUNTS_CONF.into(),
                contents: format!("{mount_str} {}\n", BeegfsService::Client.conf()),
                mode: 0o644,
            }),
            conn.service("beegfs-helperd", &["/etc/beegfs/beegfs-helperd.conf".into()]),
            conn.service("beegfs-client", &[BeegfsService::Client.conf(), MOUNTS_CONF.into()]),
            Step::Gate(Gate { kind: GateKind::BeegfsCheckServers, deadline: CHECK_DEADLINE }),
            Step::Gate(Gate {
                kind: GateKind::MountedAs { dir: mount_str.clone(), fstype: "beegfs".into() },
                deadline: CHECK_DEADLINE,
            }),
            Step::Gate(Gate { kind: GateKind::Writable { dir: mount_str }, deadline: CHECK_DEADLINE }),
        ]);
        plan.add(node, "client", steps, servers.clone());
    }
}
