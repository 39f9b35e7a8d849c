//! Scenario tests: an example cluster file applied for real (`run_unit`, not a dry run) to
//! simulated bare nodes, unit by unit in plan order, until it converges; then a second run
//! that must find every step in sync.
//!
//! A [`SimNode`] behaves like a bare Enterprise Linux node whose state changes as apply's
//! commands run: `yum install` makes `rpm -q` answer installed, `systemctl enable/start` make
//! `is-enabled/is-active` answer so, `mdadm --create` makes the array appear in /sys and in
//! `mdadm --detail`, the LVM tools keep their report, `mkfs` makes `blkid -p` find the file
//! system, `mount` adds a line to the node's `/proc/self/mountinfo`, and `gluster` keeps its
//! pool and volumes. Every probe answers in the real tool's format (the shapes of the
//! recorded outputs in pvfs-steps' testdata and reference/setup-anchors.md). The node's disks
//! are real: every device name is a device node of one zeroed loop device, so the device
//! rules (block device, unused, claimable, zeros) run against the kernel, as in the plan
//! snapshots.
//!
//! To add an example (Lustre, BeeGFS), teach [`SimNode::answer`] the example's tools (their
//! probes in the recorded formats, their actions as state changes) and add a test like
//! [`glusterfs_converges_and_then_changes_nothing`].

use crate::plan;
use pvfs_host::testing::{DeviceRoot, LoopDevice};
use pvfs_host::{Command, CommandError, Output, Root, Runner};
use pvfs_steps::{Event, Host, Outcome, Policy, run_unit};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

fn out(code: i32, stdout: &str, stderr: &str) -> Output {
    Output { code: Some(code), stdout: stdout.into(), stderr: stderr.into() }
}

/// What the node holds, as its tools would report it.
#[derive(Debug, Default)]
struct State {
    packages: BTreeSet<String>,
    enabled: BTreeSet<String>,
    active: BTreeSet<String>,
    /// md device → members, as given to `mdadm --create`.
    arrays: BTreeMap<String, Vec<String>>,
    /// PV → its volume group ("" for none).
    pvs: BTreeMap<String, String>,
    vgs: BTreeSet<String>,
    /// (vg, lv) → (segtype, pool, zero).
    lvs: BTreeMap<(String, String), (String, String, bool)>,
    /// device → file system type.
    filesystems: BTreeMap<String, String>,
    next_mount_id: u32,
    peers: Vec<String>,
    /// volume → (bricks, started).
    volumes: BTreeMap<String, (Vec<String>, bool)>,
}

/// A simulated bare EL node (see the module documentation).
#[derive(Clone)]
struct SimNode {
    dir: PathBuf,
    state: Arc<Mutex<State>>,
}

impl SimNode {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn mountinfo_append(&self, line: &str) {
        let path = self.dir.join("proc/self/mountinfo");
        let table = std::fs::read_to_string(&path).unwrap();
        std::fs::write(path, table + line).unwrap();
    }

    fn answer(&self, program: &str, args: &[&str]) -> Option<Output> {
        let mut s = self.state();
        Some(match (program, args) {
            // rpm 4.x: `package NAME is not installed` on stdout, exit 1.
            ("rpm", ["-q", "--qf", _, name]) => {
                if s.packages.contains(*name) {
                    out(0, "1.0-1.el7.x86_64\n", "")
                } else {
                    out(1, &format!("package {name} is not installed\n"), "")
                }
            }
            ("yum" | "dnf", ["install", "-y", "--", names @ ..]) => {
                s.packages.extend(names.iter().map(|n| (*n).to_owned()));
                out(0, "Complete!\n", "")
            }
            ("systemctl", ["is-enabled", unit]) => {
                if s.enabled.contains(*unit) {
                    out(0, "enabled\n", "")
                } else {
                    out(1, "disabled\n", "")
                }
            }
            ("systemctl", ["is-active", unit]) => {
                if s.active.contains(*unit) {
                    out(0, "active\n", "")
                } else {
                    out(3, "inactive\n", "")
                }
            }
            ("systemctl", ["enable", unit]) => {
                s.enabled.insert((*unit).to_owned());
                out(0, "", "")
            }
            ("systemctl", ["start", unit]) => {
                s.active.insert((*unit).to_owned());
                out(0, "", "")
            }
            ("mdadm", ["--examine", "--export", member]) => {
                out(1, "", &format!("mdadm: No md superblock detected on {member}.\n"))
            }
            ("mdadm", ["--create", device, rest @ ..]) => {
                let members: Vec<String> =
                    rest.iter().filter(|a| a.starts_with('/')).map(|m| (*m).to_owned()).collect();
                let name = device.rsplit('/').next().unwrap();
                let md = self.dir.join(format!("sys/block/{name}/md"));
                std::fs::create_dir_all(&md).unwrap();
                std::fs::write(md.join("level"), "raid0\n").unwrap();
                s.arrays.insert((*device).to_owned(), members);
                out(0, "", &format!("mdadm: array {device} started.\n"))
            }
            // mdadm 4.x Detail.c, --export: the array's fields, then each member's role and node.
            ("mdadm", ["--detail", "--export", device]) => {
                let members = s.arrays.get(*device)?;
                let mut text = format!(
                    "MD_LEVEL=raid0\nMD_DEVICES={}\nMD_METADATA=1.2\nMD_UUID={}\nMD_NAME=sim:0\n",
                    members.len(),
                    Self::uuid(device)
                );
                for (role, member) in members.iter().enumerate() {
                    let key: String = member
                        .trim_start_matches('/')
                        .chars()
                        .map(|c| if c.is_alphanumeric() { c } else { '_' })
                        .collect();
                    text += &format!("MD_DEVICE_{key}_ROLE={role}\nMD_DEVICE_{key}_DEV={member}\n");
                }
                out(0, &text, "")
            }
            ("mdadm", ["--detail", "--brief", device]) => {
                s.arrays.get(*device)?;
                out(0, &format!("ARRAY {device} metadata=1.2 name=sim:0 UUID={}\n", Self::uuid(device)), "")
            }
            // lvm2 2.03: a missing object is exit 5 with an empty report.
            ("pvs", [.., pv]) => match s.pvs.get(*pv) {
                Some(vg) => {
                    out(0, &format!(r#"{{"report":[{{"pv":[{{"pv_name":"{pv}","vg_name":"{vg}"}}]}}]}}"#), "")
                }
                None => out(
                    5,
                    r#"{"report":[{"pv":[]}]}"#,
                    &format!("  Failed to find physical volume \"{pv}\".\n"),
                ),
            },
            ("pvcreate", [.., pv]) => {
                s.pvs.insert((*pv).to_owned(), String::new());
                out(0, &format!("  Physical volume \"{pv}\" successfully created.\n"), "")
            }
            ("vgcreate", [.., vg, pv]) => {
                s.vgs.insert((*vg).to_owned());
                s.pvs.insert((*pv).to_owned(), (*vg).to_owned());
                out(0, "", "")
            }
            ("vgs", [.., vg]) => {
                if s.vgs.contains(*vg) {
                    out(0, &format!(r#"{{"report":[{{"vg":[{{"vg_name":"{vg}"}}]}}]}}"#), "")
                } else {
                    out(5, r#"{"report":[{"vg":[]}]}"#, &format!("  Volume group \"{vg}\" not found\n"))
                }
            }
            ("lvs", [.., vg]) => {
                if !s.vgs.contains(*vg) {
                    return Some(out(
                        5,
                        r#"{"report":[{"lv":[]}]}"#,
                        &format!("  Volume group \"{vg}\" not found\n"),
                    ));
                }
                let rows: Vec<String> = s
                    .lvs
                    .iter()
                    .filter(|((v, _), _)| v == vg)
                    .map(|((_, lv), (segtype, pool, zero))| {
                        format!(
                            r#"{{"lv_name":"{lv}","segtype":"{segtype}","pool_lv":"{pool}","zero":"{}"}}"#,
                            u8::from(*zero)
                        )
                    })
                    .collect();
                out(0, &format!(r#"{{"report":[{{"lv":[{}]}}]}}"#, rows.join(",")), "")
            }
            ("lvcreate", ["-L" | "-l", _, "-T", spec, ..]) => {
                let (vg, pool) = spec.split_once('/')?;
                s.lvs.insert((vg.into(), pool.into()), ("thin-pool".into(), String::new(), true));
                out(0, "", "")
            }
            ("lvcreate", ["-V", _, "-T", spec, "-n", lv]) => {
                let (vg, pool) = spec.split_once('/')?;
                s.lvs.insert((vg.into(), (*lv).into()), ("thin".into(), pool.into(), false));
                out(0, "", "")
            }
            ("lvchange", ["--zero", "n", spec]) => {
                let (vg, pool) = spec.split_once('/')?;
                s.lvs.get_mut(&(vg.into(), pool.into()))?.2 = false;
                out(0, "", "")
            }
            // blkid -p: exit 2 and silence for nothing found (util-linux blkid(8)).
            ("blkid", ["-p", "-o", "export", device]) => match s.filesystems.get(*device) {
                Some(fstype) => out(
                    0,
                    &format!(
                        "DEVNAME={device}\nUUID=4c1d5e6f-0000-4000-8000-000000000001\nTYPE={fstype}\nUSAGE=filesystem\n"
                    ),
                    "",
                ),
                None => out(2, "", ""),
            },
            ("wipefs", ["--no-act", _]) => out(0, "", ""),
            (mkfs, [.., device]) if mkfs.starts_with("mkfs.") => {
                s.filesystems.insert((*device).to_owned(), mkfs["mkfs.".len()..].to_owned());
                out(0, "", "")
            }
            ("mount", ["-t", fstype, "-o", options, source, target]) => {
                s.next_mount_id += 1;
                let id = 100 + s.next_mount_id;
                let (dev, shown) = if source.starts_with('/') {
                    let id = pvfs_host::device::identify(&Root::at(&self.dir), source).ok()?;
                    (id.dev.to_string(), (*fstype).to_owned())
                } else {
                    (
                        format!("0:{id}"),
                        if *fstype == "glusterfs" { "fuse.glusterfs".into() } else { (*fstype).to_owned() },
                    )
                };
                drop(s);
                self.mountinfo_append(&format!(
                    "{id} 1 {dev} / {target} rw,relatime shared:{id} - {shown} {source} {options}\n"
                ));
                out(0, "", "")
            }
            ("gluster", ["--mode=script", "peer", "probe", peer]) => {
                s.peers.push((*peer).to_owned());
                out(0, "peer probe: success\n", "")
            }
            // The shapes of testdata/gluster-10.3 (glusterfs 10.3's --xml answers).
            ("gluster", ["--xml", "peer", "status"]) => {
                let peers: String = s
                    .peers
                    .iter()
                    .map(|p| {
                        format!(
                            "<peer><uuid>fc72846d-f378-4ebd-8eeb-d1484b43860f</uuid><hostname>{p}</hostname>\
                             <hostnames><hostname>{p}</hostname></hostnames><connected>1</connected><state>3</state>\
                             <stateStr>Peer in Cluster</stateStr></peer>"
                        )
                    })
                    .collect();
                out(0, &Self::xml(&format!("<peerStatus>{peers}</peerStatus>")), "")
            }
            ("gluster", ["--mode=script", "volume", "create", name, rest @ ..]) => {
                let bricks = rest.iter().filter(|a| a.contains(":/")).map(|b| (*b).to_owned()).collect();
                s.volumes.insert((*name).to_owned(), (bricks, false));
                out(
                    0,
                    &format!("volume create: {name}: success: please start the volume to access data\n"),
                    "",
                )
            }
            ("gluster", ["--mode=script", "volume", "start", name]) => {
                s.volumes.get_mut(*name)?.1 = true;
                out(0, &format!("volume start: {name}: success\n"), "")
            }
            ("gluster", ["--xml", "volume", "info", name]) => match s.volumes.get(*name) {
                None => out(
                    0,
                    &format!(
                        "<?xml version=\"1.0\"?><cliOutput><opRet>-1</opRet><opErrno>30806</opErrno><opErrstr>Volume {name} does not exist</opErrstr></cliOutput>"
                    ),
                    "",
                ),
                Some((bricks, started)) => {
                    let bricks: String = bricks
                        .iter()
                        .map(|b| {
                            format!("<brick uuid=\"0\">{b}<name>{b}</name><isArbiter>0</isArbiter></brick>")
                        })
                        .collect();
                    let status = if *started { "Started" } else { "Created" };
                    out(
                        0,
                        &Self::xml(&format!(
                            "<volInfo><volumes><volume><name>{name}</name><statusStr>{status}</statusStr>\
                             <typeStr>Distribute</typeStr><bricks>{bricks}</bricks><options/></volume></volumes></volInfo>"
                        )),
                        "",
                    )
                }
            },
            // The simulated pool never adds bricks, so no rebalance ever runs: glusterd's
            // answer for that (cli-rpc-ops.c, "Rebalance not started for volume %s.").
            ("gluster", ["--xml", "volume", "rebalance", name, "status"]) => {
                s.volumes.get(*name)?;
                out(
                    0,
                    &format!(
                        "<?xml version=\"1.0\"?><cliOutput><opRet>-1</opRet><opErrno>0</opErrno><opErrstr>Rebalance not started for volume {name}.</opErrstr></cliOutput>"
                    ),
                    "",
                )
            }
            ("gluster", ["--xml", "volume", "status", name]) => {
                let (bricks, started) = s.volumes.get(*name)?;
                let nodes: String = bricks
                    .iter()
                    .map(|b| {
                        let (host, path) = b.split_once(':').unwrap();
                        format!(
                            "<node><hostname>{host}</hostname><path>{path}</path><status>{}</status></node>",
                            u8::from(*started)
                        )
                    })
                    .collect();
                out(
                    0,
                    &Self::xml(&format!(
                        "<volStatus><volumes><volume><volName>{name}</volName>{nodes}</volume></volumes></volStatus>"
                    )),
                    "",
                )
            }
            _ => return None,
        })
    }

    fn xml(body: &str) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<cliOutput><opRet>0</opRet><opErrno>0</opErrno><opErrstr/>{body}</cliOutput>\n"
        )
    }

    /// A stable array UUID in mdadm's `8:8:8:8` hex form.
    fn uuid(device: &str) -> String {
        let n = device.bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        format!("{n:08x}:34dcb6dc:d1bcbb9c:f3e05134")
    }
}

impl Runner for SimNode {
    async fn run(&self, command: &Command) -> Result<Output, CommandError> {
        let args: Vec<&str> = command.args.iter().map(String::as_str).collect();
        self.answer(&command.program, &args)
            .ok_or_else(|| CommandError::NotRecorded { command: command.to_string() })
    }
}

/// One simulated node: its temp root (each disk a device node of a loop device of its own,
/// as apply claims an array's members together; its own mount table) and its tools.
struct Node {
    _root: DeviceRoot,
    _disks: Vec<LoopDevice>,
    host: Host<SimNode>,
}

impl Node {
    fn bare_el(devices: &[&str]) -> Node {
        let root = DeviceRoot::new();
        let dir = root.dir.path().to_owned();
        // The node's own kernel table, not the build machine's.
        std::fs::remove_file(dir.join("proc")).unwrap();
        let touch = |path: &str, text: &str| {
            let p = dir.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        touch(
            "/proc/self/mountinfo",
            "1 0 253:0 / / rw,relatime shared:1 - xfs /dev/mapper/centos-root rw\n",
        );
        touch("/usr/bin/yum", "");
        touch("/etc/fstab", "");
        std::fs::create_dir_all(dir.join("run/systemd/system")).unwrap();
        std::fs::create_dir_all(dir.join("etc/yum.repos.d")).unwrap();
        let disks: Vec<LoopDevice> = devices.iter().map(|_| LoopDevice::new(8 << 20)).collect();
        for (dev, disk) in devices.iter().zip(&disks) {
            root.node(dev, &disk.path);
        }
        let sim = SimNode { dir: dir.clone(), state: Arc::default() };
        let host = Host::new(Root::at(Path::new(&dir)), sim);
        Node { _root: root, _disks: disks, host }
    }
}

/// Applies every unit of `plan` in order on its node; returns each step's outcome, as
/// `node unit: step: outcome`.
async fn apply(plan: &crate::Plan, nodes: &BTreeMap<String, Node>) -> Vec<(String, Outcome)> {
    let mut all = Vec::new();
    for unit in &plan.units {
        let node = &nodes[&unit.node];
        let mut outcomes = Vec::new();
        run_unit(
            &unit.steps,
            &node.host,
            &Policy::default(),
            false,
            false,
            |e| {
                if let Event::Done { index, outcome, .. } = e {
                    outcomes.push((index as usize, outcome));
                }
            },
            || true,
        )
        .await;
        for (index, outcome) in outcomes {
            all.push((format!("{} #{}: {}", unit.node, unit.id, unit.steps[index]), outcome));
        }
    }
    all
}

#[tokio::test]
async fn glusterfs_converges_and_then_changes_nothing() {
    let cluster = {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/glusterfs.toml");
        pvfs_config::load(&path).unwrap_or_else(|e| panic!("{e}"))
    };
    let plan = plan(&cluster);
    let mut disks: Vec<String> = (0..10).map(|i| format!("/dev/disk/azure/scsi1/lun{i}")).collect();
    disks.extend(["/dev/md0".into(), "/dev/rhgs-data/brick1".into()]);
    let disks: Vec<&str> = disks.iter().map(String::as_str).collect();
    // Servers have the seed's ten data disks; clients none.
    let servers: BTreeSet<&str> =
        plan.units.iter().filter(|u| u.label == "brick").map(|u| u.node.as_str()).collect();
    let nodes: BTreeMap<String, Node> = plan
        .units
        .iter()
        .map(|u| u.node.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|name| {
            let node = Node::bare_el(if servers.contains(name.as_str()) { &disks } else { &[] });
            (name, node)
        })
        .collect();

    let first = apply(&plan, &nodes).await;
    let failed: Vec<String> = first
        .iter()
        .filter(|(_, o)| !matches!(o, Outcome::Changed { .. } | Outcome::Ok { .. }))
        .map(|(what, o)| format!("{what}: {o:?}"))
        .collect();
    assert!(failed.is_empty(), "the first run converges:\n{}", failed.join("\n"));
    assert!(first.iter().any(|(_, o)| matches!(o, Outcome::Changed { .. })), "bare nodes change");

    let second = apply(&plan, &nodes).await;
    let changed: Vec<String> = second
        .iter()
        .filter(|(_, o)| !matches!(o, Outcome::Ok { .. }))
        .map(|(what, o)| format!("{what}: {o:?}"))
        .collect();
    assert!(changed.is_empty(), "a second run changes nothing:\n{}", changed.join("\n"));
    assert_eq!(second.len(), first.len());

    // What the nodes hold now is what the cluster file describes.
    let server = &nodes["glusterserver1"].host.runner;
    let mounts = pvfs_host::mountinfo::read(&nodes["glusterserver1"].host.root).unwrap();
    assert_eq!(pvfs_host::mountinfo::visible_at(&mounts, "/rhs/brick1").unwrap().fstype, "xfs");
    assert_eq!(server.state().volumes["dist-vol"].0.len(), 2);
    let client = pvfs_host::mountinfo::read(&nodes["client00"].host.root).unwrap();
    assert_eq!(pvfs_host::mountinfo::visible_at(&client, "/mnt/gluster").unwrap().fstype, "fuse.glusterfs");
}
