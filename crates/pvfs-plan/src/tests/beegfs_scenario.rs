//! A BeeGFS 7.4 cluster with authentication from bare nodes to converged, and a second run
//! that changes nothing: every unit of the plan runs for real (not dry) against simulated
//! nodes whose tools behave as BeeGFS 7.4's do — `dnf install` lays down the packaged
//! configuration files (the real default `beegfs-storage.conf`), the `beegfs-setup-*` scripts
//! write what `ThinkParQ/beegfs`'s scripts write (format.conf, the ID files, the keys they
//! `sed`), systemd starts and restarts units and says since when they run, and the client
//! service mounts BeeGFS in the node's `/proc/self/mountinfo`. The servers keep their targets
//! in directories (md and device-mapper are absent from the build machines' kernel; the block
//! steps have their own tests on real devices).

use crate::plan;
use pvfs_host::{Command, CommandError, Output, Root, Runner};
use pvfs_policy::Policy;
use pvfs_steps::{NodeAccess, Outcome, StepEvent, run_unit};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const STORAGE_CONF: &str = include_str!("../../../pvfs-steps/testdata/beegfs-7/beegfs-storage.conf");
const CHECK_SERVERS: &str = "Management\n==========\nmgmt [ID: 1]: reachable at 10.0.0.4:8008 (protocol: TCP)\n\n\
    Metadata\n==========\nserver [ID: 1]: reachable at 10.0.0.5:8005 (protocol: TCP)\n\n\
    Storage\n==========\nserver [ID: 1]: reachable at 10.0.0.5:8003 (protocol: TCP)\n\n";
const RELEASE: &str = "4.18.0-513.5.1.el8_9.x86_64";

/// One simulated node: its files under `root`, its packages and units in memory.
#[derive(Clone)]
struct SimNode {
    root: PathBuf,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    installed: BTreeSet<String>,
    enabled: BTreeSet<String>,
    /// Running units and the CLOCK_MONOTONIC µs they entered the active state.
    active: BTreeMap<String, u64>,
    /// Every command that changed the node, in order.
    actions: Vec<String>,
}

fn ok(stdout: &str) -> Result<Output, CommandError> {
    Ok(Output { code: Some(0), stdout: stdout.into(), stderr: String::new() })
}

fn monotonic_us() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
    t.tv_sec() as u64 * 1_000_000 + t.tv_nsec() as u64 / 1000
}

impl SimNode {
    fn new(dir: &Path) -> SimNode {
        for d in ["run/systemd/system", "etc/yum.repos.d", "etc/beegfs", "proc/self", "proc/sys/kernel"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::write(dir.join("etc/fstab"), "").unwrap();
        std::fs::write(
            dir.join("proc/self/mountinfo"),
            "22 1 253:0 / / rw,relatime shared:1 - xfs /dev/mapper/rl-root rw\n",
        )
        .unwrap();
        std::fs::write(dir.join("proc/sys/kernel/osrelease"), format!("{RELEASE}\n")).unwrap();
        // Its programs are its packages' (crate::programs), as in crate::scenario.
        crate::programs::base(dir, RELEASE);
        SimNode { root: dir.to_owned(), state: Arc::default() }
    }

    fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    fn write(&self, abs: &str, text: &str) {
        let p = self.path(abs);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// `sed -i "s/\(^KEY.*=\).*/\1 VALUE/"`, as the setup scripts change their config.
    fn sed_key(&self, conf: &str, key: &str, value: &str) {
        let text = std::fs::read_to_string(self.path(conf)).unwrap();
        let out: Vec<String> = text
            .lines()
            .map(|l| {
                if l.starts_with(key) && l.contains('=') { format!("{key} = {value}") } else { l.to_owned() }
            })
            .collect();
        self.write(conf, &(out.join("\n") + "\n"));
    }

    fn install(&self, package: &str) {
        let packaged = |service: &str, extra: &str| {
            format!(
                "sysMgmtdHost                 =\nconnAuthFile                 =\nconnDisableAuthentication    = false\n\
                 connInterfacesFile           =\nconnNetFilterFile            =\nconnMaxInternodeNum          = 12\n{extra}\
                 logStdFile                   = /var/log/beegfs-{service}.log\n"
            )
        };
        match package {
            "beegfs-mgmtd" => self.write(
                "/etc/beegfs/beegfs-mgmtd.conf",
                &packaged("mgmtd", "storeMgmtdDirectory          =\nstoreAllowFirstRunInit       = true\n"),
            ),
            "beegfs-meta" => self.write(
                "/etc/beegfs/beegfs-meta.conf",
                &packaged(
                    "meta",
                    "storeMetaDirectory           =\nstoreAllowFirstRunInit       = true\nstoreFsUUID                  =\ntuneNumWorkers               = 0\n",
                ),
            ),
            "beegfs-storage" => self.write("/etc/beegfs/beegfs-storage.conf", STORAGE_CONF),
            "beegfs-client" => self.write("/etc/beegfs/beegfs-client.conf", &packaged("client", "")),
            "beegfs-helperd" => self.write(
                "/etc/beegfs/beegfs-helperd.conf",
                "connAuthFile       =\nconnDisableAuthentication = false\nconnHelperdPortTCP = 8006\n",
            ),
            "kernel-devel" => {
                std::fs::create_dir_all(self.path(&format!("/usr/src/kernels/{RELEASE}"))).unwrap();
                std::fs::create_dir_all(self.path(&format!("/lib/modules/{RELEASE}"))).unwrap();
                std::os::unix::fs::symlink(
                    format!("/usr/src/kernels/{RELEASE}"),
                    self.path(&format!("/lib/modules/{RELEASE}/build")),
                )
                .unwrap();
            }
            _ => {}
        }
        crate::programs::install(&self.root, package);
        self.state.lock().unwrap().installed.insert(package.to_owned());
    }

    /// What `beegfs-setup-*` leaves behind (ThinkParQ/beegfs, */build/dist/sbin/beegfs-setup-*).
    fn setup(&self, service: &str, args: &[&str]) -> Result<Output, CommandError> {
        let arg = |flag: &str| args.iter().position(|a| *a == flag).map(|i| args[i + 1]);
        let conf = format!("/etc/beegfs/beegfs-{service}.conf");
        if let Some(dir) = arg("-p") {
            if std::fs::read_dir(self.path(dir)).is_ok_and(|mut d| d.next().is_some()) {
                return Ok(Output {
                    code: Some(1),
                    stdout: " * ERROR: Storage target directory is not empty.\n".into(),
                    stderr: String::new(),
                });
            }
            self.write(
                &format!("{dir}/format.conf"),
                "# This file was auto-generated. Do not modify it!\nversion=3\n",
            );
            for (flag, file) in [("-i", "targetNumID"), ("-s", "nodeNumID")] {
                if let Some(id) = arg(flag) {
                    self.write(&format!("{dir}/{file}"), &format!("{id}\n"));
                }
            }
            let key = match service {
                "mgmtd" => "storeMgmtdDirectory",
                "meta" => "storeMetaDirectory",
                _ => "storeStorageDirectory",
            };
            self.sed_key(&conf, key, dir);
            if service != "mgmtd" {
                self.sed_key(&conf, "storeAllowFirstRunInit", "false");
            }
        }
        if let Some(host) = arg("-m") {
            self.sed_key(&conf, "sysMgmtdHost", host);
        }
        ok("All done.\n")
    }

    fn systemctl(&self, verb: &str, unit: &str) -> Result<Output, CommandError> {
        let mut state = self.state.lock().unwrap();
        let answer = |code: i32, stdout: &str| {
            Ok(Output { code: Some(code), stdout: stdout.into(), stderr: String::new() })
        };
        match verb {
            "is-enabled" if state.enabled.contains(unit) => answer(0, "enabled\n"),
            "is-enabled" => answer(1, "disabled\n"),
            "is-active" if state.active.contains_key(unit) => answer(0, "active\n"),
            "is-active" => answer(3, "inactive\n"),
            "enable" => {
                state.enabled.insert(unit.to_owned());
                answer(0, "")
            }
            "start" | "restart" => {
                state.active.insert(unit.to_owned(), monotonic_us());
                drop(state);
                if unit == "beegfs-client" {
                    // The client service mounts what beegfs-mounts.conf lists.
                    let mounts =
                        std::fs::read_to_string(self.path("/etc/beegfs/beegfs-mounts.conf")).unwrap();
                    let point = mounts.split_whitespace().next().unwrap();
                    let table = std::fs::read_to_string(self.path("/proc/self/mountinfo")).unwrap();
                    if !table.contains(" - beegfs ") {
                        self.write(
                            "/proc/self/mountinfo",
                            &format!(
                                "{table}120 22 0:52 / {point} rw,relatime shared:64 - beegfs beegfs_nodev rw,cfgFile=/etc/beegfs/beegfs-client.conf\n"
                            ),
                        );
                    }
                }
                answer(0, "")
            }
            _ => unreachable!("systemctl {verb} {unit}"),
        }
    }
}

impl Runner for SimNode {
    async fn run(&self, command: &Command) -> Result<Output, CommandError> {
        let args: Vec<&str> = command.args.iter().map(String::as_str).collect();
        match (crate::programs::find(&self.root, command)?.as_str(), args.as_slice()) {
            ("rpm", [.., name]) => {
                if self.state.lock().unwrap().installed.contains(*name) {
                    ok("7.4.6-1.el8\n")
                } else {
                    Ok(Output {
                        code: Some(1),
                        stdout: format!("package {name} is not installed\n"),
                        stderr: String::new(),
                    })
                }
            }
            ("systemctl", ["show", "--property=ActiveEnterTimestampMonotonic", unit]) => {
                let since = self.state.lock().unwrap().active.get(*unit).copied().unwrap_or(0);
                ok(&format!("ActiveEnterTimestampMonotonic={since}\n"))
            }
            ("systemctl", [verb @ ("is-enabled" | "is-active"), unit]) => self.systemctl(verb, unit),
            ("beegfs-ctl", ["--listnodes", "--nodetype=management", "--reachable", "--errorcodes"]) => {
                ok("mgmt [ID: 1]\n")
            }
            ("beegfs-check-servers", []) => ok(CHECK_SERVERS),
            // The one metadata and one storage server's targets (storage node 1 serves
            // target 101, the planner's numbering), as testdata/beegfs-7/listtargets-failover.txt
            // shows healthy ones.
            ("beegfs-ctl", ["--listtargets", nodetype, "--state"]) => {
                let id = if *nodetype == "--nodetype=meta" { 1 } else { 101 };
                ok(&format!(
                    "TargetID     Reachability  Consistency   NodeID\n========     ============  ===========   ======\n{id:>8}           Online         Good        1\n"
                ))
            }
            _ => Err(CommandError::NotRecorded { command: command.to_string() }),
        }
    }

    async fn run_action(&self, command: &Command) -> Result<Output, CommandError> {
        let args: Vec<&str> = command.args.iter().map(String::as_str).collect();
        self.state.lock().unwrap().actions.push(command.to_string());
        match (crate::programs::find(&self.root, command)?.as_str(), args.as_slice()) {
            ("dnf", ["install", "-y", "--", packages @ ..]) => {
                for p in packages {
                    self.install(p);
                }
                ok("Complete!\n")
            }
            ("systemctl", [verb, unit]) => self.systemctl(verb, unit),
            (setup, rest) if setup.starts_with("beegfs-setup-") => {
                self.setup(&setup["beegfs-setup-".len()..], rest)
            }
            _ => Err(CommandError::NotRecorded { command: command.to_string() }),
        }
    }
}

/// Runs every unit of the plan, in order, on its node; the outcomes per unit.
async fn converge(plan: &crate::Plan, nodes: &BTreeMap<String, SimNode>) -> Vec<(String, Vec<Outcome>)> {
    let mut all = Vec::new();
    for unit in &plan.units {
        let node = &nodes[&unit.node];
        let host = NodeAccess::new(Root::at(&node.root), node.clone());
        let mut outcomes = Vec::new();
        run_unit(
            &unit.steps,
            &host,
            &Policy::default(),
            false,
            false,
            |e| {
                if let StepEvent::Done { outcome, .. } = e {
                    outcomes.push(outcome);
                }
            },
            || true,
        )
        .await;
        all.push((format!("#{} {} {}", unit.id, unit.node, unit.label), outcomes));
    }
    all
}

#[tokio::test]
async fn beegfs_7_4_converges_from_bare_nodes_and_then_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "pvfs-scenario-secret-0123456789abcdefghijklmnop\n";
    std::fs::write(dir.path().join("beegfs.auth"), secret).unwrap();
    let file = dir.path().join("cluster.toml");
    std::fs::write(
        &file,
        r#"
[cluster]
name = "scenario"
kind = "beegfs"

[[repo]]
name = "beegfs"
baseurl = "https://www.beegfs.io/release/beegfs_7.4.6/dists/rhel8"
gpgkey = "https://www.beegfs.io/release/beegfs_7.4.6/gpg/GPG-KEY-beegfs"

[packages]
manager = "dnf"

[[node]]
name = "mgmt"
address = "10.0.0.4:7070"
roles = ["mgmtd"]

[[node]]
name = "server"
address = "10.0.0.5:7070"
roles = ["meta", "storage"]
id = 1

[[node]]
name = "client"
address = "10.0.0.20:7070"
roles = ["client"]

[beegfs]
mount = "/mnt/beegfs"
auth_secret = "beegfs.auth"
interfaces = ["eth0"]
net_filter = ["10.0.0.0/24"]

[beegfs.meta]
path = "/data/beegfs/meta"
tuning = { tuneNumWorkers = "64" }

[beegfs.storage]
path = "/data/beegfs/storage"
tuning = { tuneNumWorkers = "64", tuneFileReadAheadSize = "32m" }
"#,
    )
    .unwrap();
    let cluster = pvfs_config::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let plan = plan(&cluster);
    let roots: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let nodes: BTreeMap<String, SimNode> = ["mgmt", "server", "client"]
        .iter()
        .zip(&roots)
        .map(|(name, root)| ((*name).to_owned(), SimNode::new(root.path())))
        .collect();

    let first = converge(&plan, &nodes).await;
    for (unit, outcomes) in &first {
        for o in outcomes {
            assert!(matches!(o, Outcome::Ok { .. } | Outcome::Changed { .. }), "{unit}: {o:?}");
        }
    }
    let client = &nodes["client"];
    // Started once each, never restarted: the configuration was complete before the start.
    let actions = client.state.lock().unwrap().actions.clone();
    assert_eq!(actions.iter().filter(|a| a.starts_with("systemctl restart")).count(), 0, "{actions:?}");
    assert_eq!(std::fs::read_to_string(client.path("/etc/beegfs/connauthfile")).unwrap(), secret);
    let conf = std::fs::read_to_string(nodes["server"].path("/etc/beegfs/beegfs-storage.conf")).unwrap();
    for line in [
        "sysMgmtdHost = 10.0.0.4",
        "storeStorageDirectory = /data/beegfs/storage/beegfs_storage",
        "storeAllowFirstRunInit = false",
        "connAuthFile = /etc/beegfs/connauthfile",
        "connInterfacesFile = /etc/beegfs/interfaces",
        "connNetFilterFile = /etc/beegfs/netfilter",
        "tuneNumWorkers = 64",
    ] {
        assert!(conf.lines().any(|l| l == line), "{line:?} in\n{conf}");
    }

    // The second run: everything in sync, no command run at all.
    let before: usize = nodes.values().map(|n| n.state.lock().unwrap().actions.len()).sum();
    let second = converge(&plan, &nodes).await;
    for (unit, outcomes) in &second {
        for o in outcomes {
            assert!(matches!(o, Outcome::Ok { .. }), "{unit}: {o:?}");
        }
    }
    let after: usize = nodes.values().map(|n| n.state.lock().unwrap().actions.len()).sum();
    assert_eq!(before, after, "a converged cluster runs nothing");

    // A tuning change: the storage daemon restarts once, nothing else does.
    let mut retuned = cluster.clone();
    if let pvfs_config::KindSpec::Beegfs { storage, .. } = &mut retuned.spec {
        storage.tuning = vec![("tuneNumWorkers".into(), "128".into())];
    }
    let third = converge(&plan_of(&retuned), &nodes).await;
    let changed: Vec<&str> = third
        .iter()
        .flat_map(|(unit, outcomes)| outcomes.iter().map(move |o| (unit, o)))
        .filter(|(_, o)| matches!(o, Outcome::Changed { .. }))
        .map(|(unit, _)| unit.as_str())
        .collect();
    assert_eq!(changed, ["#2 server storage", "#2 server storage"], "{third:?}");
    let server_actions = nodes["server"].state.lock().unwrap().actions.clone();
    assert_eq!(server_actions.last().map(String::as_str), Some("systemctl restart beegfs-storage"));
    assert_eq!(server_actions.iter().filter(|a| a.starts_with("systemctl restart")).count(), 1);
}

fn plan_of(cluster: &pvfs_config::Cluster) -> crate::Plan {
    plan(cluster)
}
