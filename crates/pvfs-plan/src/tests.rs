//! Plans for the example cluster files, as the commands they would run on fresh nodes.
//!
//! Each example's plan is dry-run against simulated nodes on which nothing is set up yet
//! (every probe answers as the real tool does on a bare machine: no package, no signature, no
//! mount, no array, no volume; the packages' own files, such as /etc/beegfs/*.conf, are
//! present so that later steps can be assessed). The snapshot is the command sequence per
//! node, to be read next to the seed's: see the notes above each test for what differs and why.

mod beegfs_scenario;
mod grammar;

use crate::{Plan, plan};
use expect_test::{Expect, expect};
use pvfs_host::testing::{DeviceRoot, LoopDevice};
use pvfs_host::{Command, CommandError, Output, Root, Runner};
use pvfs_policy::Policy;
use pvfs_steps::{NodeAccess, Outcome, Step, StepEvent, run_unit};
use std::path::Path;

/// Answers every probe as a bare node would.
struct BareNode;

fn out(code: i32, stdout: &str, stderr: &str) -> Output {
    Output { code: Some(code), stdout: stdout.into(), stderr: stderr.into() }
}

impl Runner for BareNode {
    async fn run(&self, command: &Command) -> Result<Output, CommandError> {
        let args: Vec<&str> = command.args.iter().map(String::as_str).collect();
        Ok(match (command.program.as_str(), args.as_slice()) {
            ("blkid", _) => out(2, "", ""),
            ("wipefs", ["--no-act", "--", _]) => out(0, "", ""),
            ("mdadm", ["--examine", ..]) => out(1, "", "mdadm: No md superblock detected.\n"),
            ("pvs" | "vgs" | "lvs", _) => {
                out(5, "{\"report\":[{\"pv\":[],\"vg\":[],\"lv\":[]}]}", "  not found\n")
            }
            ("rpm", [.., name]) => out(1, &format!("package {name} is not installed\n"), ""),
            ("dpkg-query", [.., name]) => {
                out(1, "", &format!("dpkg-query: no packages found matching {name}\n"))
            }
            ("systemctl", ["is-enabled", ..]) => out(1, "disabled\n", ""),
            ("systemctl", ["is-active", ..]) => out(3, "inactive\n", ""),
            ("gluster", ["--xml", "peer", "status"]) => out(
                0,
                "<?xml version=\"1.0\"?><cliOutput><opRet>0</opRet><opErrno>0</opErrno><opErrstr/><peerStatus/></cliOutput>",
                "",
            ),
            ("gluster", ["--xml", "volume", "info", name]) => out(
                0,
                &format!(
                    "<?xml version=\"1.0\"?><cliOutput><opRet>-1</opRet><opErrno>30806</opErrno><opErrstr>Volume {name} does not exist</opErrstr></cliOutput>"
                ),
                "",
            ),
            ("gluster", ["--xml", "volume", "status", name]) => out(
                0,
                &format!(
                    "<?xml version=\"1.0\"?><cliOutput><opRet>-1</opRet><opErrno>30806</opErrno><opErrstr>Volume {name} does not exist</opErrstr></cliOutput>"
                ),
                "",
            ),
            // glusterfs 10.3 on a volume that does not exist (pvfs-steps'
            // testdata/gluster-10.3/rebalance-no-such-volume.xml; the CLI exits 1).
            ("gluster", ["--xml", "volume", "rebalance", name, "status"]) => out(
                1,
                &format!(
                    "<?xml version=\"1.0\"?><cliOutput><opRet>-1</opRet><opErrno>30800</opErrno><opErrstr>Volume {name} does not exist</opErrstr></cliOutput>"
                ),
                "",
            ),
            ("lctl", ["ping", nid]) => out(5, "", &format!("failed to ping {nid}: Input/output error\n")),
            ("beegfs-ctl", ["--listnodes", ..]) => out(1, "", "Unable to connect to management daemon\n"),
            ("lfs", ["check", "servers"]) => {
                out(2, "", "lfs check: cannot find mounted Lustre file system\n")
            }
            ("lfs", ["getstripe", "-d", "--", dir]) => {
                out(2, "", &format!("lfs getstripe: cannot open '{dir}': No such file or directory (2)\n"))
            }
            ("lctl", ["get_param", "-n", name]) => out(
                2,
                "",
                &format!(
                    "error: get_param: param_path '{}': No such file or directory\n",
                    name.replace('.', "/")
                ),
            ),
            ("tunefs.lustre", ["--dryrun", "--", dev]) => out(
                19,
                "",
                &format!("\ntunefs.lustre FATAL: Device {dev} has not been formatted with mkfs.lustre\n"),
            ),
            _ => return Err(CommandError::NotRecorded { command: command.to_string() }),
        })
    }
}

/// The plan's units with, under each step, the commands it would run (`$ …`), or why not.
///
/// The node's disks are real: every device name is a node for one zeroed loop device (a bare
/// node's disks are unused and empty, and the agent proves that on the device itself, as
/// root; a dry run only looks, so one device can stand for all of them).
async fn render(plan: &Plan, devices: &[&str], rpm: bool) -> String {
    let node = DeviceRoot::new();
    let disk = LoopDevice::new(64 << 20);
    let dir = &node.dir;
    let touch = |path: &str, text: &str| {
        let p = dir.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    std::fs::create_dir_all(dir.path().join("run/systemd/system")).unwrap();
    std::fs::create_dir_all(dir.path().join("etc/yum.repos.d")).unwrap();
    touch(if rpm { "/usr/bin/yum" } else { "/usr/bin/apt-get" }, "");
    touch("/etc/fstab", "");
    for service in ["mgmtd", "meta", "storage", "client", "helperd"] {
        touch(&format!("/etc/beegfs/beegfs-{service}.conf"), "sysMgmtdHost =\n");
    }
    for dev in devices {
        // Nodes of their own, not links: a name such as /dev/md20 must stay md20 for the
        // steps that derive sysfs paths from it (queue settings), as on a real node.
        node.node(dev, &disk.path);
    }
    let host = NodeAccess::new(Root::at(dir.path()), BareNode);
    let mut shown = String::new();
    for unit in &plan.units {
        let after: Vec<String> = unit.after.iter().map(|a| format!("#{a}")).collect();
        let after = if after.is_empty() { String::new() } else { format!(" (after {})", after.join(" ")) };
        shown += &format!("#{} {} {}{after}\n", unit.id, unit.node, unit.label);
        // As `up --plan` runs it: a unit after others that would change is told so.
        let mut outcomes = Vec::new();
        run_unit(
            &unit.steps,
            &host,
            &Policy::default(),
            true,
            !unit.after.is_empty(),
            |e| {
                if let StepEvent::Done { outcome, .. } = e {
                    outcomes.push(outcome);
                }
            },
            || true,
        )
        .await;
        for (step, outcome) in unit.steps.iter().zip(outcomes) {
            shown += &format!("  {step}\n");
            match outcome {
                Outcome::WouldChange { would_run, .. } => {
                    for cmd in would_run {
                        shown += &format!("    $ {cmd}\n");
                    }
                }
                Outcome::Pending { .. } if matches!(step, Step::Gate(_)) => shown += "    (waits)\n",
                Outcome::Pending { detail } => shown += &format!("    (pending: {detail})\n"),
                Outcome::Ok { .. } => shown += "    (in sync)\n",
                other => shown += &format!("    !! {other:?}\n"),
            }
        }
    }
    shown
}

fn example(name: &str) -> pvfs_config::Cluster {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config").join(name);
    // An [azure] example names `~/.ssh/id_ed25519.pub` and has no addresses before
    // `provision`: it is read from a home of the test's own, as `provision` reads it (its
    // nodes at the unspecified address, which no plan step here dials).
    if std::fs::read_to_string(&path).unwrap().contains("\n[azure]\n") {
        static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
        let home = HOME.get_or_init(|| {
            let home = tempfile::tempdir().unwrap();
            std::fs::create_dir(home.path().join(".ssh")).unwrap();
            let key =
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINAgQPdA2fgB2gs++YENv63NBcKieyO71BfY/pmWwXdD pvfs-test";
            std::fs::write(home.path().join(".ssh/id_ed25519.pub"), key).unwrap();
            home
        });
        let loader = pvfs_config::Loader::with_home(home.path());
        return loader.load_provisioning(&path).unwrap_or_else(|e| panic!("{e}")).cluster;
    }
    pvfs_config::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// The example cluster files in config/: not the agent's policy, nor the state files
/// `provision` writes beside a cluster file.
fn is_example(name: &str) -> bool {
    name.ends_with(".toml") && !name.starts_with("policy") && !name.ends_with(".state.toml")
}

async fn check(name: &str, devices: &[&str], rpm: bool, expect: Expect) {
    let plan = plan(&example(name));
    expect.assert_eq(&render(&plan, devices, rpm).await);
}

fn luns(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("/dev/disk/azure/scsi1/lun{i}")).collect()
}

/// Seed 000, GlusterFS section, steps 2–7 and "Set up the GlusterFS volume": the same commands
/// in the same order, except: `mdadm` gets `--run` (no prompt) only because every member was
/// proven empty, and writes mdadm.conf from the array's own `--detail --brief`; `mkfs.xfs` has no `-f` (the device is proven empty first);
/// mounts are checked in the kernel's mount table and written to fstab once, not appended; peers are probed
/// once from one server (probing is idempotent; the second probe "to set its host name" is
/// only needed with host names, not the IPs used here); the brick is a directory under the
/// brick mount; the volume gets `transport tcp` explicitly.
#[tokio::test]
async fn glusterfs_follows_the_seed() {
    let mut devices: Vec<String> = luns(10);
    devices.extend(["/dev/md0".into(), "/dev/rhgs-data/brick1".into()]);
    let devices: Vec<&str> = devices.iter().map(String::as_str).collect();
    check("glusterfs.toml", &devices, true, expect![[r#"
        #0 glusterserver1 brick
          firewalld opens 24007-24008/tcp 49152/tcp
            (in sync)
          packages (rpm) centos-release-gluster
            $ yum install -y -- centos-release-gluster
          packages glusterfs-server mdadm lvm2 xfsprogs (rpm: glusterfs-server glusterfs-cli glusterfs-geo-replication glusterfs-fuse glusterfs mdadm lvm2 xfsprogs)
            $ yum install -y -- glusterfs-server glusterfs-cli glusterfs-geo-replication glusterfs-fuse glusterfs mdadm lvm2 xfsprogs
          service glusterd enabled and running
            $ systemctl enable glusterd
            $ systemctl start glusterd
          service glusterfsd enabled and running
            $ systemctl enable glusterfsd
            $ systemctl start glusterfsd
          raid0 /dev/md0 over 10 disks
            $ mdadm --create /dev/md0 --run --level=0 --raid-devices=10 /dev/disk/azure/scsi1/lun0 /dev/disk/azure/scsi1/lun1 /dev/disk/azure/scsi1/lun2 /dev/disk/azure/scsi1/lun3 /dev/disk/azure/scsi1/lun4 /dev/disk/azure/scsi1/lun5 /dev/disk/azure/scsi1/lun6 /dev/disk/azure/scsi1/lun7 /dev/disk/azure/scsi1/lun8 /dev/disk/azure/scsi1/lun9
            $ mdadm --detail --brief /dev/md0 >> /etc/mdadm.conf
          lvm thin volume /dev/rhgs-data/brick1 in rhgs-data/brickpool on /dev/md0
            $ pvcreate --dataalignment 1024K -- /dev/md0
            $ vgcreate --physicalextentsize 256K -- rhgs-data /dev/md0
            $ lvcreate -L 9216g -T -c 256K -- rhgs-data/brickpool
            $ lvchange --zero n -- rhgs-data/brickpool
            $ lvcreate -V 9216g -T -n brick1 -- rhgs-data/brickpool
          xfs on /dev/rhgs-data/brick1
            $ mkfs.xfs -K -i size=512 -n size=8192 -- /dev/rhgs-data/brick1
          mount /dev/rhgs-data/brick1 on /rhs/brick1 (xfs)
            $ mkdir -p -m 755 /rhs/brick1
            $ write /etc/fstab
            $ mount -t xfs -o defaults,inode64,noatime,nouuid -- /dev/rhgs-data/brick1 /rhs/brick1
          directory /rhs/brick1/dist-vol
            $ mkdir -p -m 755 /rhs/brick1/dist-vol
        #1 glusterserver2 brick
          firewalld opens 24007-24008/tcp 49152/tcp
            (in sync)
          packages (rpm) centos-release-gluster
            $ yum install -y -- centos-release-gluster
          packages glusterfs-server mdadm lvm2 xfsprogs (rpm: glusterfs-server glusterfs-cli glusterfs-geo-replication glusterfs-fuse glusterfs mdadm lvm2 xfsprogs)
            $ yum install -y -- glusterfs-server glusterfs-cli glusterfs-geo-replication glusterfs-fuse glusterfs mdadm lvm2 xfsprogs
          service glusterd enabled and running
            $ systemctl enable glusterd
            $ systemctl start glusterd
          service glusterfsd enabled and running
            $ systemctl enable glusterfsd
            $ systemctl start glusterfsd
          raid0 /dev/md0 over 10 disks
            $ mdadm --create /dev/md0 --run --level=0 --raid-devices=10 /dev/disk/azure/scsi1/lun0 /dev/disk/azure/scsi1/lun1 /dev/disk/azure/scsi1/lun2 /dev/disk/azure/scsi1/lun3 /dev/disk/azure/scsi1/lun4 /dev/disk/azure/scsi1/lun5 /dev/disk/azure/scsi1/lun6 /dev/disk/azure/scsi1/lun7 /dev/disk/azure/scsi1/lun8 /dev/disk/azure/scsi1/lun9
            $ mdadm --detail --brief /dev/md0 >> /etc/mdadm.conf
          lvm thin volume /dev/rhgs-data/brick1 in rhgs-data/brickpool on /dev/md0
            $ pvcreate --dataalignment 1024K -- /dev/md0
            $ vgcreate --physicalextentsize 256K -- rhgs-data /dev/md0
            $ lvcreate -L 9216g -T -c 256K -- rhgs-data/brickpool
            $ lvchange --zero n -- rhgs-data/brickpool
            $ lvcreate -V 9216g -T -n brick1 -- rhgs-data/brickpool
          xfs on /dev/rhgs-data/brick1
            $ mkfs.xfs -K -i size=512 -n size=8192 -- /dev/rhgs-data/brick1
          mount /dev/rhgs-data/brick1 on /rhs/brick1 (xfs)
            $ mkdir -p -m 755 /rhs/brick1
            $ write /etc/fstab
            $ mount -t xfs -o defaults,inode64,noatime,nouuid -- /dev/rhgs-data/brick1 /rhs/brick1
          directory /rhs/brick1/dist-vol
            $ mkdir -p -m 755 /rhs/brick1/dist-vol
        #2 glusterserver1 volume (after #0 #1)
          trusted pool with 10.0.0.6
            $ gluster --mode=script peer probe 10.0.0.6
          wait until 10.0.0.6 are in cluster
            (waits)
          gluster volume dist-vol (distribute, 2 bricks)
            $ gluster --mode=script volume create dist-vol transport tcp 10.0.0.5:/rhs/brick1/dist-vol 10.0.0.6:/rhs/brick1/dist-vol
            $ gluster --mode=script volume start dist-vol
          check the 2 bricks of dist-vol are online
            (waits)
          wait until any rebalance of dist-vol has finished
            (waits)
        #3 client00 mount (after #2)
          packages glusterfs-client (rpm: glusterfs-fuse)
            $ yum install -y -- glusterfs-fuse
          mount 10.0.0.5:/dist-vol on /mnt/gluster (glusterfs)
            $ mkdir -p -m 755 /mnt/gluster
            $ write /etc/fstab
            $ mount -t glusterfs -o defaults,_netdev,nosuid,nodev,backup-volfile-servers=10.0.0.6 -- 10.0.0.5:/dist-vol /mnt/gluster
          check /mnt/gluster is writable
            (waits)
        #4 client01 mount (after #2)
          packages glusterfs-client (rpm: glusterfs-fuse)
            $ yum install -y -- glusterfs-fuse
          mount 10.0.0.5:/dist-vol on /mnt/gluster (glusterfs)
            $ mkdir -p -m 755 /mnt/gluster
            $ write /etc/fstab
            $ mount -t glusterfs -o defaults,_netdev,nosuid,nodev,backup-volfile-servers=10.0.0.6 -- 10.0.0.5:/dist-vol /mnt/gluster
          check /mnt/gluster is writable
            (waits)
    "#]]).await;
}

/// Seed 000, Lustre section: the repository, packages, lnet.conf and `lnet` enabled on every
/// server; `mkfs.lustre --mgs --mdt` on the MGS/MDS and its mount; `mdadm -C /dev/md0 -l raid0
/// -n 10` and `mkfs.lustre --ost --mgsnode --index` on each OSS with the index from the file;
/// then the client's mount. Differences: no `--reformat` (devices proven empty), `--index=0`
/// given for the MDT too, an `lctl ping` of the MGS before OSTs and clients mount, fstab
/// entries, and the validation the seed does by hand (`lfs check servers`) as a gate.
#[tokio::test]
async fn lustre_follows_the_seed() {
    let mut devices: Vec<String> = luns(10);
    devices.push("/dev/md0".into());
    let devices: Vec<&str> = devices.iter().map(String::as_str).collect();
    check("lustre.toml", &devices, true, expect![[r#"
        #0 mgsmds00 mgs+mdt
          firewalld opens 988/tcp
            (in sync)
          packages kernel=3.10.0-514.el7_lustre lustre=2.9.0 kmod-lustre=2.9.0 kmod-lustre-osd-ldiskfs=2.9.0 lustre-osd-ldiskfs-mount=2.9.0 e2fsprogs [WARNING: repository lustreserver is not GPG-checked (gpgcheck = false)] [WARNING: repository e2fsprogs is not GPG-checked (gpgcheck = false)]
            $ write /etc/yum.repos.d/lustreserver.repo
            $ write /etc/yum.repos.d/e2fsprogs.repo
            $ yum install -y -- kernel-3.10.0-514.el7_lustre lustre-2.9.0 kmod-lustre-2.9.0 kmod-lustre-osd-ldiskfs-2.9.0 lustre-osd-ldiskfs-mount-2.9.0 e2fsprogs
          file /etc/modprobe.d/lnet.conf
            $ write /etc/modprobe.d/lnet.conf
          service lnet enabled and running, restarted when /etc/modprobe.d/lnet.conf changes
            $ systemctl enable lnet
            $ systemctl start lnet
          check that LNet's NID here is 10.0.0.4@tcp
            (waits)
          lustre mgs+mdt LustreFS-MDT0000 on /dev/disk/azure/scsi1/lun0
            $ mkfs.lustre --fsname=LustreFS --backfstype=ldiskfs --mgs --mdt --index=0 -- /dev/disk/azure/scsi1/lun0
          mount /dev/disk/azure/scsi1/lun0 on /mnt/mgsmds (lustre)
            $ mkdir -p -m 755 /mnt/mgsmds
            $ write /etc/fstab
            $ mount -t lustre -o defaults,_netdev -- /dev/disk/azure/scsi1/lun0 /mnt/mgsmds
        #1 oss00 ost (after #0)
          firewalld opens 988/tcp
            (in sync)
          packages kernel=3.10.0-514.el7_lustre lustre=2.9.0 kmod-lustre=2.9.0 kmod-lustre-osd-ldiskfs=2.9.0 lustre-osd-ldiskfs-mount=2.9.0 e2fsprogs mdadm [WARNING: repository lustreserver is not GPG-checked (gpgcheck = false)] [WARNING: repository e2fsprogs is not GPG-checked (gpgcheck = false)]
            $ write /etc/yum.repos.d/lustreserver.repo
            $ write /etc/yum.repos.d/e2fsprogs.repo
            $ yum install -y -- kernel-3.10.0-514.el7_lustre lustre-2.9.0 kmod-lustre-2.9.0 kmod-lustre-osd-ldiskfs-2.9.0 lustre-osd-ldiskfs-mount-2.9.0 e2fsprogs mdadm
          file /etc/modprobe.d/lnet.conf
            $ write /etc/modprobe.d/lnet.conf
          service lnet enabled and running, restarted when /etc/modprobe.d/lnet.conf changes
            $ systemctl enable lnet
            $ systemctl start lnet
          check that LNet's NID here is 10.0.0.5@tcp
            (waits)
          wait until 10.0.0.4@tcp answers lctl ping
            (waits)
          raid0 /dev/md0 over 10 disks
            $ mdadm --create /dev/md0 --run --level=0 --raid-devices=10 /dev/disk/azure/scsi1/lun0 /dev/disk/azure/scsi1/lun1 /dev/disk/azure/scsi1/lun2 /dev/disk/azure/scsi1/lun3 /dev/disk/azure/scsi1/lun4 /dev/disk/azure/scsi1/lun5 /dev/disk/azure/scsi1/lun6 /dev/disk/azure/scsi1/lun7 /dev/disk/azure/scsi1/lun8 /dev/disk/azure/scsi1/lun9
            $ mdadm --detail --brief /dev/md0 >> /etc/mdadm.conf
          lustre ost LustreFS-OST0000 on /dev/md0
            $ mkfs.lustre --fsname=LustreFS --backfstype=ldiskfs --ost --mgsnode=10.0.0.4@tcp --index=0 -- /dev/md0
          mount /dev/md0 on /mnt/oss (lustre)
            $ mkdir -p -m 755 /mnt/oss
            $ write /etc/fstab
            $ mount -t lustre -o defaults,_netdev -- /dev/md0 /mnt/oss
        #2 oss01 ost (after #0)
          firewalld opens 988/tcp
            (in sync)
          packages kernel=3.10.0-514.el7_lustre lustre=2.9.0 kmod-lustre=2.9.0 kmod-lustre-osd-ldiskfs=2.9.0 lustre-osd-ldiskfs-mount=2.9.0 e2fsprogs mdadm [WARNING: repository lustreserver is not GPG-checked (gpgcheck = false)] [WARNING: repository e2fsprogs is not GPG-checked (gpgcheck = false)]
            $ write /etc/yum.repos.d/lustreserver.repo
            $ write /etc/yum.repos.d/e2fsprogs.repo
            $ yum install -y -- kernel-3.10.0-514.el7_lustre lustre-2.9.0 kmod-lustre-2.9.0 kmod-lustre-osd-ldiskfs-2.9.0 lustre-osd-ldiskfs-mount-2.9.0 e2fsprogs mdadm
          file /etc/modprobe.d/lnet.conf
            $ write /etc/modprobe.d/lnet.conf
          service lnet enabled and running, restarted when /etc/modprobe.d/lnet.conf changes
            $ systemctl enable lnet
            $ systemctl start lnet
          check that LNet's NID here is 10.0.0.6@tcp
            (waits)
          wait until 10.0.0.4@tcp answers lctl ping
            (waits)
          raid0 /dev/md0 over 10 disks
            $ mdadm --create /dev/md0 --run --level=0 --raid-devices=10 /dev/disk/azure/scsi1/lun0 /dev/disk/azure/scsi1/lun1 /dev/disk/azure/scsi1/lun2 /dev/disk/azure/scsi1/lun3 /dev/disk/azure/scsi1/lun4 /dev/disk/azure/scsi1/lun5 /dev/disk/azure/scsi1/lun6 /dev/disk/azure/scsi1/lun7 /dev/disk/azure/scsi1/lun8 /dev/disk/azure/scsi1/lun9
            $ mdadm --detail --brief /dev/md0 >> /etc/mdadm.conf
          lustre ost LustreFS-OST0001 on /dev/md0
            $ mkfs.lustre --fsname=LustreFS --backfstype=ldiskfs --ost --mgsnode=10.0.0.4@tcp --index=1 -- /dev/md0
          mount /dev/md0 on /mnt/oss (lustre)
            $ mkdir -p -m 755 /mnt/oss
            $ write /etc/fstab
            $ mount -t lustre -o defaults,_netdev -- /dev/md0 /mnt/oss
        #3 client00 client (after #0 #1 #2)
          firewalld opens 988/tcp
            (in sync)
          packages kmod-lustre-client=2.9.0 lustre-client=2.9.0 [WARNING: repository lustreclient is not GPG-checked (gpgcheck = false)]
            $ write /etc/yum.repos.d/lustreclient.repo
            $ yum install -y -- kmod-lustre-client-2.9.0 lustre-client-2.9.0
          file /etc/modprobe.d/lnet.conf
            $ write /etc/modprobe.d/lnet.conf
          service lnet enabled and running, restarted when /etc/modprobe.d/lnet.conf changes
            $ systemctl enable lnet
            $ systemctl start lnet
          wait until 10.0.0.4@tcp answers lctl ping
            (waits)
          mount 10.0.0.4@tcp:/LustreFS on /mnt/lustre (lustre)
            $ mkdir -p -m 755 /mnt/lustre
            $ write /etc/fstab
            $ mount -t lustre -o defaults,_netdev,nosuid,nodev -- 10.0.0.4@tcp:/LustreFS /mnt/lustre
          check lfs check servers
            (waits)
          check /mnt/lustre is writable
            (waits)
          directory /mnt/lustre/bench
            $ mkdir -p -m 755 /mnt/lustre/bench
    "#]]).await;
}

/// The modern counterpart of the seed's Lustre: 2.15 on EL8 with dnf, patchless ldiskfs
/// servers on the stock kernel (no kernel package, so no reboot), the same layout and order as
/// `lustre.toml`, LNet pinned to eth0 in lnet.conf.
#[tokio::test]
async fn lustre_2_15_on_el8() {
    let devices = ["/dev/nvme1n1", "/dev/nvme2n1", "/dev/nvme3n1", "/dev/nvme4n1", "/dev/md0"];
    check("lustre-2.15-el8.toml", &devices, true, expect![[r#"
        #0 mgsmds00 mgs+mdt
          firewalld opens 988/tcp
            (in sync)
          packages lustre=2.15.4 kmod-lustre=2.15.4 kmod-lustre-osd-ldiskfs=2.15.4 lustre-osd-ldiskfs-mount=2.15.4 e2fsprogs [WARNING: repository lustre-server is not GPG-checked (gpgcheck = false)] [WARNING: repository e2fsprogs-wc is not GPG-checked (gpgcheck = false)]
            $ write /etc/yum.repos.d/lustre-server.repo
            $ write /etc/yum.repos.d/e2fsprogs-wc.repo
            $ dnf install -y -- lustre-2.15.4 kmod-lustre-2.15.4 kmod-lustre-osd-ldiskfs-2.15.4 lustre-osd-ldiskfs-mount-2.15.4 e2fsprogs
          file /etc/modprobe.d/lnet.conf
            $ write /etc/modprobe.d/lnet.conf
          service lnet enabled and running, restarted when /etc/modprobe.d/lnet.conf changes
            $ systemctl enable lnet
            $ systemctl start lnet
          check that LNet's NID here is 10.0.0.4@tcp
            (waits)
          lustre mgs+mdt lustre-MDT0000 on /dev/nvme1n1
            $ mkfs.lustre --fsname=lustre --backfstype=ldiskfs --mgs --mdt --index=0 -- /dev/nvme1n1
          mount /dev/nvme1n1 on /mnt/mgsmds (lustre)
            $ mkdir -p -m 755 /mnt/mgsmds
            $ write /etc/fstab
            $ mount -t lustre -o defaults,_netdev -- /dev/nvme1n1 /mnt/mgsmds
        #1 oss00 ost (after #0)
          firewalld opens 988/tcp
            (in sync)
          packages lustre=2.15.4 kmod-lustre=2.15.4 kmod-lustre-osd-ldiskfs=2.15.4 lustre-osd-ldiskfs-mount=2.15.4 e2fsprogs mdadm [WARNING: repository lustre-server is not GPG-checked (gpgcheck = false)] [WARNING: repository e2fsprogs-wc is not GPG-checked (gpgcheck = false)]
            $ write /etc/yum.repos.d/lustre-server.repo
            $ write /etc/yum.repos.d/e2fsprogs-wc.repo
            $ dnf install -y -- lustre-2.15.4 kmod-lustre-2.15.4 kmod-lustre-osd-ldiskfs-2.15.4 lustre-osd-ldiskfs-mount-2.15.4 e2fsprogs mdadm
          file /etc/modprobe.d/lnet.conf
            $ write /etc/modprobe.d/lnet.conf
          service lnet enabled and running, restarted when /etc/modprobe.d/lnet.conf changes
            $ systemctl enable lnet
            $ systemctl start lnet
          check that LNet's NID here is 10.0.0.5@tcp
            (waits)
          wait until 10.0.0.4@tcp answers lctl ping
            (waits)
          raid0 /dev/md0 over 4 disks
            $ mdadm --create /dev/md0 --run --level=0 --raid-devices=4 /dev/nvme1n1 /dev/nvme2n1 /dev/nvme3n1 /dev/nvme4n1
            $ mdadm --detail --brief /dev/md0 >> /etc/mdadm.conf
          lustre ost lustre-OST0000 on /dev/md0
            $ mkfs.lustre --fsname=lustre --backfstype=ldiskfs --ost --mgsnode=10.0.0.4@tcp --index=0 -- /dev/md0
          mount /dev/md0 on /mnt/oss (lustre)
            $ mkdir -p -m 755 /mnt/oss
            $ write /etc/fstab
            $ mount -t lustre -o defaults,_netdev -- /dev/md0 /mnt/oss
        #2 oss01 ost (after #0)
          firewalld opens 988/tcp
            (in sync)
          packages lustre=2.15.4 kmod-lustre=2.15.4 kmod-lustre-osd-ldiskfs=2.15.4 lustre-osd-ldiskfs-mount=2.15.4 e2fsprogs mdadm [WARNING: repository lustre-server is not GPG-checked (gpgcheck = false)] [WARNING: repository e2fsprogs-wc is not GPG-checked (gpgcheck = false)]
            $ write /etc/yum.repos.d/lustre-server.repo
            $ write /etc/yum.repos.d/e2fsprogs-wc.repo
            $ dnf install -y -- lustre-2.15.4 kmod-lustre-2.15.4 kmod-lustre-osd-ldiskfs-2.15.4 lustre-osd-ldiskfs-mount-2.15.4 e2fsprogs mdadm
          file /etc/modprobe.d/lnet.conf
            $ write /etc/modprobe.d/lnet.conf
          service lnet enabled and running, restarted when /etc/modprobe.d/lnet.conf changes
            $ systemctl enable lnet
            $ systemctl start lnet
          check that LNet's NID here is 10.0.0.6@tcp
            (waits)
          wait until 10.0.0.4@tcp answers lctl ping
            (waits)
          raid0 /dev/md0 over 4 disks
            $ mdadm --create /dev/md0 --run --level=0 --raid-devices=4 /dev/nvme1n1 /dev/nvme2n1 /dev/nvme3n1 /dev/nvme4n1
            $ mdadm --detail --brief /dev/md0 >> /etc/mdadm.conf
          lustre ost lustre-OST0001 on /dev/md0
            $ mkfs.lustre --fsname=lustre --backfstype=ldiskfs --ost --mgsnode=10.0.0.4@tcp --index=1 -- /dev/md0
          mount /dev/md0 on /mnt/oss (lustre)
            $ mkdir -p -m 755 /mnt/oss
            $ write /etc/fstab
            $ mount -t lustre -o defaults,_netdev -- /dev/md0 /mnt/oss
        #3 client00 client (after #0 #1 #2)
          firewalld opens 988/tcp
            (in sync)
          packages kmod-lustre-client=2.15.4 lustre-client=2.15.4 [WARNING: repository lustre-client is not GPG-checked (gpgcheck = false)]
            $ write /etc/yum.repos.d/lustre-client.repo
            $ dnf install -y -- kmod-lustre-client-2.15.4 lustre-client-2.15.4
          file /etc/modprobe.d/lnet.conf
            $ write /etc/modprobe.d/lnet.conf
          service lnet enabled and running, restarted when /etc/modprobe.d/lnet.conf changes
            $ systemctl enable lnet
            $ systemctl start lnet
          wait until 10.0.0.4@tcp answers lctl ping
            (waits)
          mount 10.0.0.4@tcp:/lustre on /mnt/lustre (lustre)
            $ mkdir -p -m 755 /mnt/lustre
            $ write /etc/fstab
            $ mount -t lustre -o defaults,_netdev,nosuid,nodev -- 10.0.0.4@tcp:/lustre /mnt/lustre
          check lfs check servers
            (waits)
          check /mnt/lustre is writable
            (waits)
          lctl llite.*.max_read_ahead_mb=64
            (pending: depends on the changes before it: `lctl get_param -n 'llite.*.max_read_ahead_mb'` exited 2: error: get_param: param_path 'llite/*/max_read_ahead_mb': No such file or directory (no parameter matches llite.*.max_read_ahead_mb: is the Lustre client module loaded and the file system mounted here?))
          directory /mnt/lustre/bench
            $ mkdir -p -m 755 /mnt/lustre/bench
          stripe new files in /mnt/lustre/bench over every OST, 4M a stripe
            (pending: depends on the changes before it: `lfs getstripe -d -- /mnt/lustre/bench` exited 2: lfs getstripe: cannot open '/mnt/lustre/bench': No such file or directory (2))
    "#]]).await;
}

/// Seed 000, BeeGFS section and Tables 11–12 (the seed deployed BeeGFS from a template; its
/// steps are the az-cat scripts': RAID0s md20/md10, ext4 for metadata, xfs for storage, the
/// services' config keys, enable/start), with `beegfs-setup-*` and fixed IDs instead of
/// first-run init.
#[tokio::test]
async fn beegfs_follows_the_seed() {
    let mut devices: Vec<String> = luns(16);
    devices.extend(["/dev/md10".into(), "/dev/md20".into()]);
    let devices: Vec<&str> = devices.iter().map(String::as_str).collect();
    check("beegfs.toml", &devices, true, expect![[r#"
        #0 mgmt mgmtd
          firewalld opens 8008/tcp 8008/udp
            (in sync)
          packages beegfs-mgmtd beegfs-utils
            $ write /etc/yum.repos.d/beegfs.repo
            $ yum install -y -- beegfs-mgmtd beegfs-utils
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          beegfs mgmtd in /data/beegfs/mgmtd
            $ /opt/beegfs/sbin/beegfs-setup-mgmtd -p /data/beegfs/mgmtd
          settings in /etc/beegfs/beegfs-mgmtd.conf: connAuthFile=/etc/beegfs/connauthfile
            $ write /etc/beegfs/beegfs-mgmtd.conf
          service beegfs-mgmtd enabled and running, restarted when /etc/beegfs/beegfs-mgmtd.conf or /etc/beegfs/connauthfile changes
            $ systemctl enable beegfs-mgmtd
            $ systemctl start beegfs-mgmtd
        #1 storage0 meta (after #0)
          firewalld opens 8003/tcp 8003/udp 8005/tcp 8005/udp
            (in sync)
          packages beegfs-meta mdadm e2fsprogs
            $ write /etc/yum.repos.d/beegfs.repo
            $ yum install -y -- beegfs-meta mdadm e2fsprogs
          raid0 /dev/md20 over 6 disks
            $ mdadm --create /dev/md20 --run --level=0 --raid-devices=6 /dev/disk/azure/scsi1/lun10 /dev/disk/azure/scsi1/lun11 /dev/disk/azure/scsi1/lun12 /dev/disk/azure/scsi1/lun13 /dev/disk/azure/scsi1/lun14 /dev/disk/azure/scsi1/lun15
            $ mdadm --detail --brief /dev/md20 >> /etc/mdadm.conf
          ext4 on /dev/md20
            $ mkfs.ext4 -i 2048 -I 512 -J size=400 -O dir_index,filetype -- /dev/md20
          mount /dev/md20 on /data/beegfs/meta (ext4)
            $ mkdir -p -m 755 /data/beegfs/meta
            $ write /etc/fstab
            $ mount -t ext4 -o defaults,noatime,nodiratime -- /dev/md20 /data/beegfs/meta
          queue of /dev/md20 and its 6 disks: scheduler=deadline nr_requests=128 read_ahead_kb=128
            (pending: depends on the changes before it: /sys/block/md20/queue: no queue settings for /dev/md20: it is not a whole disk or array the kernel knows (a partition has none))
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          beegfs meta node 1 in /data/beegfs/meta/beegfs_meta
            $ /opt/beegfs/sbin/beegfs-setup-meta -p /data/beegfs/meta/beegfs_meta -s 1 -m 10.0.0.4
          settings in /etc/beegfs/beegfs-meta.conf: connAuthFile=/etc/beegfs/connauthfile connMaxInternodeNum=32 tuneNumWorkers=64
            $ write /etc/beegfs/beegfs-meta.conf
          service beegfs-meta enabled and running, restarted when /etc/beegfs/beegfs-meta.conf or /etc/beegfs/connauthfile changes
            $ systemctl enable beegfs-meta
            $ systemctl start beegfs-meta
        #2 storage1 meta (after #0)
          firewalld opens 8003/tcp 8003/udp 8005/tcp 8005/udp
            (in sync)
          packages beegfs-meta mdadm e2fsprogs
            $ write /etc/yum.repos.d/beegfs.repo
            $ yum install -y -- beegfs-meta mdadm e2fsprogs
          raid0 /dev/md20 over 6 disks
            $ mdadm --create /dev/md20 --run --level=0 --raid-devices=6 /dev/disk/azure/scsi1/lun10 /dev/disk/azure/scsi1/lun11 /dev/disk/azure/scsi1/lun12 /dev/disk/azure/scsi1/lun13 /dev/disk/azure/scsi1/lun14 /dev/disk/azure/scsi1/lun15
            $ mdadm --detail --brief /dev/md20 >> /etc/mdadm.conf
          ext4 on /dev/md20
            $ mkfs.ext4 -i 2048 -I 512 -J size=400 -O dir_index,filetype -- /dev/md20
          mount /dev/md20 on /data/beegfs/meta (ext4)
            $ mkdir -p -m 755 /data/beegfs/meta
            $ write /etc/fstab
            $ mount -t ext4 -o defaults,noatime,nodiratime -- /dev/md20 /data/beegfs/meta
          queue of /dev/md20 and its 6 disks: scheduler=deadline nr_requests=128 read_ahead_kb=128
            (pending: depends on the changes before it: /sys/block/md20/queue: no queue settings for /dev/md20: it is not a whole disk or array the kernel knows (a partition has none))
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          beegfs meta node 2 in /data/beegfs/meta/beegfs_meta
            $ /opt/beegfs/sbin/beegfs-setup-meta -p /data/beegfs/meta/beegfs_meta -s 2 -m 10.0.0.4
          settings in /etc/beegfs/beegfs-meta.conf: connAuthFile=/etc/beegfs/connauthfile connMaxInternodeNum=32 tuneNumWorkers=64
            $ write /etc/beegfs/beegfs-meta.conf
          service beegfs-meta enabled and running, restarted when /etc/beegfs/beegfs-meta.conf or /etc/beegfs/connauthfile changes
            $ systemctl enable beegfs-meta
            $ systemctl start beegfs-meta
        #3 storage0 storage (after #0 #1)
          packages beegfs-storage mdadm xfsprogs
            $ write /etc/yum.repos.d/beegfs.repo
            $ yum install -y -- beegfs-storage mdadm xfsprogs
          raid0 /dev/md10 over 10 disks
            $ mdadm --create /dev/md10 --run --level=0 --raid-devices=10 /dev/disk/azure/scsi1/lun0 /dev/disk/azure/scsi1/lun1 /dev/disk/azure/scsi1/lun2 /dev/disk/azure/scsi1/lun3 /dev/disk/azure/scsi1/lun4 /dev/disk/azure/scsi1/lun5 /dev/disk/azure/scsi1/lun6 /dev/disk/azure/scsi1/lun7 /dev/disk/azure/scsi1/lun8 /dev/disk/azure/scsi1/lun9
            $ mdadm --detail --brief /dev/md10 >> /etc/mdadm.conf
          xfs on /dev/md10
            $ mkfs.xfs -- /dev/md10
          mount /dev/md10 on /data/beegfs/storage (xfs)
            $ mkdir -p -m 755 /data/beegfs/storage
            $ write /etc/fstab
            $ mount -t xfs -o defaults,noatime,nodiratime,logbufs=8,logbsize=256k,largeio,inode64,swalloc,allocsize=131072k -- /dev/md10 /data/beegfs/storage
          queue of /dev/md10 and its 10 disks: scheduler=deadline nr_requests=4096 read_ahead_kb=32768
            (pending: depends on the changes before it: /sys/block/md10/queue: no queue settings for /dev/md10: it is not a whole disk or array the kernel knows (a partition has none))
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          beegfs storage node 1 target 101 in /data/beegfs/storage/beegfs_storage
            $ /opt/beegfs/sbin/beegfs-setup-storage -p /data/beegfs/storage/beegfs_storage -s 1 -i 101 -m 10.0.0.4
          settings in /etc/beegfs/beegfs-storage.conf: connAuthFile=/etc/beegfs/connauthfile connMaxInternodeNum=32 tuneFileReadAheadSize=32m tuneFileReadAheadTriggerSize=2m tuneFileReadSize=256K tuneFileWriteSize=256K tuneNumWorkers=64 tuneWorkerBufSize=16m
            $ write /etc/beegfs/beegfs-storage.conf
          service beegfs-storage enabled and running, restarted when /etc/beegfs/beegfs-storage.conf or /etc/beegfs/connauthfile changes
            $ systemctl enable beegfs-storage
            $ systemctl start beegfs-storage
        #4 storage1 storage (after #0 #2)
          packages beegfs-storage mdadm xfsprogs
            $ write /etc/yum.repos.d/beegfs.repo
            $ yum install -y -- beegfs-storage mdadm xfsprogs
          raid0 /dev/md10 over 10 disks
            $ mdadm --create /dev/md10 --run --level=0 --raid-devices=10 /dev/disk/azure/scsi1/lun0 /dev/disk/azure/scsi1/lun1 /dev/disk/azure/scsi1/lun2 /dev/disk/azure/scsi1/lun3 /dev/disk/azure/scsi1/lun4 /dev/disk/azure/scsi1/lun5 /dev/disk/azure/scsi1/lun6 /dev/disk/azure/scsi1/lun7 /dev/disk/azure/scsi1/lun8 /dev/disk/azure/scsi1/lun9
            $ mdadm --detail --brief /dev/md10 >> /etc/mdadm.conf
          xfs on /dev/md10
            $ mkfs.xfs -- /dev/md10
          mount /dev/md10 on /data/beegfs/storage (xfs)
            $ mkdir -p -m 755 /data/beegfs/storage
            $ write /etc/fstab
            $ mount -t xfs -o defaults,noatime,nodiratime,logbufs=8,logbsize=256k,largeio,inode64,swalloc,allocsize=131072k -- /dev/md10 /data/beegfs/storage
          queue of /dev/md10 and its 10 disks: scheduler=deadline nr_requests=4096 read_ahead_kb=32768
            (pending: depends on the changes before it: /sys/block/md10/queue: no queue settings for /dev/md10: it is not a whole disk or array the kernel knows (a partition has none))
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          beegfs storage node 2 target 201 in /data/beegfs/storage/beegfs_storage
            $ /opt/beegfs/sbin/beegfs-setup-storage -p /data/beegfs/storage/beegfs_storage -s 2 -i 201 -m 10.0.0.4
          settings in /etc/beegfs/beegfs-storage.conf: connAuthFile=/etc/beegfs/connauthfile connMaxInternodeNum=32 tuneFileReadAheadSize=32m tuneFileReadAheadTriggerSize=2m tuneFileReadSize=256K tuneFileWriteSize=256K tuneNumWorkers=64 tuneWorkerBufSize=16m
            $ write /etc/beegfs/beegfs-storage.conf
          service beegfs-storage enabled and running, restarted when /etc/beegfs/beegfs-storage.conf or /etc/beegfs/connauthfile changes
            $ systemctl enable beegfs-storage
            $ systemctl start beegfs-storage
        #5 client00 client (after #0 #1 #2 #3 #4)
          firewalld opens 8004/udp
            (in sync)
          packages beegfs-client beegfs-helperd beegfs-utils gcc make (rpm: beegfs-client beegfs-helperd beegfs-utils kernel-devel gcc make elfutils-libelf-devel)
            $ write /etc/yum.repos.d/beegfs.repo
            $ yum install -y -- beegfs-client beegfs-helperd beegfs-utils kernel-devel gcc make elfutils-libelf-devel
          check the running kernel's headers are installed
            (waits)
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          beegfs client
            $ /opt/beegfs/sbin/beegfs-setup-client -m 10.0.0.4
          settings in /etc/beegfs/beegfs-client.conf: connAuthFile=/etc/beegfs/connauthfile connMaxInternodeNum=32
            $ write /etc/beegfs/beegfs-client.conf
          settings in /etc/beegfs/beegfs-helperd.conf: connAuthFile=/etc/beegfs/connauthfile
            $ write /etc/beegfs/beegfs-helperd.conf
          wait until the BeeGFS management daemon is reachable
            (waits)
          wait until 2 metadata and 2 storage targets are Online and Good (beegfs-ctl --listtargets --state)
            (waits)
          directory /mnt/beegfs
            $ mkdir -p -m 755 /mnt/beegfs
          file /etc/beegfs/beegfs-mounts.conf
            $ write /etc/beegfs/beegfs-mounts.conf
          service beegfs-helperd enabled and running, restarted when /etc/beegfs/beegfs-helperd.conf or /etc/beegfs/connauthfile changes
            $ systemctl enable beegfs-helperd
            $ systemctl start beegfs-helperd
          service beegfs-client enabled and running, restarted when /etc/beegfs/beegfs-client.conf or /etc/beegfs/beegfs-mounts.conf or /etc/beegfs/connauthfile changes
            $ systemctl enable beegfs-client
            $ systemctl start beegfs-client
          check beegfs-check-servers
            (waits)
          check /mnt/beegfs is a beegfs mount
            (waits)
          check /mnt/beegfs is writable
            (waits)
    "#]]).await;
}

/// BeeGFS 7.4 on EL8 with authentication: the same layout as `beegfs.toml`, with dnf from
/// ThinkParQ's signed 7.4.6 repository, the shared secret copied to every node (mode 0400,
/// never shown) and named in every service's configuration with the interface and subnet
/// lists, each service restarted when one of its files changes, and the client checked to be
/// a BeeGFS mount before the write probe.
#[tokio::test]
async fn beegfs_7_4_on_el8_authenticates() {
    let mut devices: Vec<String> = luns(12);
    devices.extend(["/dev/md10".into(), "/dev/md20".into()]);
    let devices: Vec<&str> = devices.iter().map(String::as_str).collect();
    check("beegfs-7.4-el8.toml", &devices, true, expect![[r#"
        #0 mgmt mgmtd
          firewalld opens 8008/tcp 8008/udp
            (in sync)
          packages beegfs-mgmtd beegfs-utils
            $ write /etc/yum.repos.d/beegfs.repo
            $ dnf install -y -- beegfs-mgmtd beegfs-utils
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          file /etc/beegfs/interfaces
            $ write /etc/beegfs/interfaces
          file /etc/beegfs/netfilter
            $ write /etc/beegfs/netfilter
          beegfs mgmtd in /data/beegfs/mgmtd
            $ /opt/beegfs/sbin/beegfs-setup-mgmtd -p /data/beegfs/mgmtd
          settings in /etc/beegfs/beegfs-mgmtd.conf: connAuthFile=/etc/beegfs/connauthfile connInterfacesFile=/etc/beegfs/interfaces connNetFilterFile=/etc/beegfs/netfilter
            $ write /etc/beegfs/beegfs-mgmtd.conf
          service beegfs-mgmtd enabled and running, restarted when /etc/beegfs/beegfs-mgmtd.conf or /etc/beegfs/connauthfile or /etc/beegfs/interfaces or /etc/beegfs/netfilter changes
            $ systemctl enable beegfs-mgmtd
            $ systemctl start beegfs-mgmtd
        #1 storage0 meta (after #0)
          firewalld opens 8003/tcp 8003/udp 8005/tcp 8005/udp
            (in sync)
          packages beegfs-meta mdadm e2fsprogs
            $ write /etc/yum.repos.d/beegfs.repo
            $ dnf install -y -- beegfs-meta mdadm e2fsprogs
          raid0 /dev/md20 over 2 disks
            $ mdadm --create /dev/md20 --run --level=0 --raid-devices=2 /dev/disk/azure/scsi1/lun10 /dev/disk/azure/scsi1/lun11
            $ mdadm --detail --brief /dev/md20 >> /etc/mdadm.conf
          ext4 on /dev/md20
            $ mkfs.ext4 -i 2048 -I 512 -J size=400 -O dir_index,filetype -- /dev/md20
          mount /dev/md20 on /data/beegfs/meta (ext4)
            $ mkdir -p -m 755 /data/beegfs/meta
            $ write /etc/fstab
            $ mount -t ext4 -o defaults,noatime,nodiratime -- /dev/md20 /data/beegfs/meta
          queue of /dev/md20 and its 2 disks: scheduler=mq-deadline nr_requests=128 read_ahead_kb=128
            (pending: depends on the changes before it: /sys/block/md20/queue: no queue settings for /dev/md20: it is not a whole disk or array the kernel knows (a partition has none))
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          file /etc/beegfs/interfaces
            $ write /etc/beegfs/interfaces
          file /etc/beegfs/netfilter
            $ write /etc/beegfs/netfilter
          beegfs meta node 1 in /data/beegfs/meta/beegfs_meta
            $ /opt/beegfs/sbin/beegfs-setup-meta -p /data/beegfs/meta/beegfs_meta -s 1 -m 10.0.0.4
          settings in /etc/beegfs/beegfs-meta.conf: connAuthFile=/etc/beegfs/connauthfile connInterfacesFile=/etc/beegfs/interfaces connNetFilterFile=/etc/beegfs/netfilter connMaxInternodeNum=32 tuneNumWorkers=64
            $ write /etc/beegfs/beegfs-meta.conf
          service beegfs-meta enabled and running, restarted when /etc/beegfs/beegfs-meta.conf or /etc/beegfs/connauthfile or /etc/beegfs/interfaces or /etc/beegfs/netfilter changes
            $ systemctl enable beegfs-meta
            $ systemctl start beegfs-meta
        #2 storage1 meta (after #0)
          firewalld opens 8003/tcp 8003/udp 8005/tcp 8005/udp
            (in sync)
          packages beegfs-meta mdadm e2fsprogs
            $ write /etc/yum.repos.d/beegfs.repo
            $ dnf install -y -- beegfs-meta mdadm e2fsprogs
          raid0 /dev/md20 over 2 disks
            $ mdadm --create /dev/md20 --run --level=0 --raid-devices=2 /dev/disk/azure/scsi1/lun10 /dev/disk/azure/scsi1/lun11
            $ mdadm --detail --brief /dev/md20 >> /etc/mdadm.conf
          ext4 on /dev/md20
            $ mkfs.ext4 -i 2048 -I 512 -J size=400 -O dir_index,filetype -- /dev/md20
          mount /dev/md20 on /data/beegfs/meta (ext4)
            $ mkdir -p -m 755 /data/beegfs/meta
            $ write /etc/fstab
            $ mount -t ext4 -o defaults,noatime,nodiratime -- /dev/md20 /data/beegfs/meta
          queue of /dev/md20 and its 2 disks: scheduler=mq-deadline nr_requests=128 read_ahead_kb=128
            (pending: depends on the changes before it: /sys/block/md20/queue: no queue settings for /dev/md20: it is not a whole disk or array the kernel knows (a partition has none))
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          file /etc/beegfs/interfaces
            $ write /etc/beegfs/interfaces
          file /etc/beegfs/netfilter
            $ write /etc/beegfs/netfilter
          beegfs meta node 2 in /data/beegfs/meta/beegfs_meta
            $ /opt/beegfs/sbin/beegfs-setup-meta -p /data/beegfs/meta/beegfs_meta -s 2 -m 10.0.0.4
          settings in /etc/beegfs/beegfs-meta.conf: connAuthFile=/etc/beegfs/connauthfile connInterfacesFile=/etc/beegfs/interfaces connNetFilterFile=/etc/beegfs/netfilter connMaxInternodeNum=32 tuneNumWorkers=64
            $ write /etc/beegfs/beegfs-meta.conf
          service beegfs-meta enabled and running, restarted when /etc/beegfs/beegfs-meta.conf or /etc/beegfs/connauthfile or /etc/beegfs/interfaces or /etc/beegfs/netfilter changes
            $ systemctl enable beegfs-meta
            $ systemctl start beegfs-meta
        #3 storage0 storage (after #0 #1)
          packages beegfs-storage mdadm xfsprogs
            $ write /etc/yum.repos.d/beegfs.repo
            $ dnf install -y -- beegfs-storage mdadm xfsprogs
          raid0 /dev/md10 over 4 disks
            $ mdadm --create /dev/md10 --run --level=0 --raid-devices=4 /dev/disk/azure/scsi1/lun0 /dev/disk/azure/scsi1/lun1 /dev/disk/azure/scsi1/lun2 /dev/disk/azure/scsi1/lun3
            $ mdadm --detail --brief /dev/md10 >> /etc/mdadm.conf
          xfs on /dev/md10
            $ mkfs.xfs -- /dev/md10
          mount /dev/md10 on /data/beegfs/storage (xfs)
            $ mkdir -p -m 755 /data/beegfs/storage
            $ write /etc/fstab
            $ mount -t xfs -o defaults,noatime,nodiratime,logbufs=8,logbsize=256k,largeio,inode64,swalloc,allocsize=131072k -- /dev/md10 /data/beegfs/storage
          queue of /dev/md10 and its 4 disks: scheduler=mq-deadline nr_requests=4096 read_ahead_kb=32768
            (pending: depends on the changes before it: /sys/block/md10/queue: no queue settings for /dev/md10: it is not a whole disk or array the kernel knows (a partition has none))
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          file /etc/beegfs/interfaces
            $ write /etc/beegfs/interfaces
          file /etc/beegfs/netfilter
            $ write /etc/beegfs/netfilter
          beegfs storage node 1 target 101 in /data/beegfs/storage/beegfs_storage
            $ /opt/beegfs/sbin/beegfs-setup-storage -p /data/beegfs/storage/beegfs_storage -s 1 -i 101 -m 10.0.0.4
          settings in /etc/beegfs/beegfs-storage.conf: connAuthFile=/etc/beegfs/connauthfile connInterfacesFile=/etc/beegfs/interfaces connNetFilterFile=/etc/beegfs/netfilter connMaxInternodeNum=32 tuneFileReadAheadSize=32m tuneFileReadAheadTriggerSize=2m tuneFileReadSize=256K tuneFileWriteSize=256K tuneNumWorkers=64 tuneWorkerBufSize=16m
            $ write /etc/beegfs/beegfs-storage.conf
          service beegfs-storage enabled and running, restarted when /etc/beegfs/beegfs-storage.conf or /etc/beegfs/connauthfile or /etc/beegfs/interfaces or /etc/beegfs/netfilter changes
            $ systemctl enable beegfs-storage
            $ systemctl start beegfs-storage
        #4 storage1 storage (after #0 #2)
          packages beegfs-storage mdadm xfsprogs
            $ write /etc/yum.repos.d/beegfs.repo
            $ dnf install -y -- beegfs-storage mdadm xfsprogs
          raid0 /dev/md10 over 4 disks
            $ mdadm --create /dev/md10 --run --level=0 --raid-devices=4 /dev/disk/azure/scsi1/lun0 /dev/disk/azure/scsi1/lun1 /dev/disk/azure/scsi1/lun2 /dev/disk/azure/scsi1/lun3
            $ mdadm --detail --brief /dev/md10 >> /etc/mdadm.conf
          xfs on /dev/md10
            $ mkfs.xfs -- /dev/md10
          mount /dev/md10 on /data/beegfs/storage (xfs)
            $ mkdir -p -m 755 /data/beegfs/storage
            $ write /etc/fstab
            $ mount -t xfs -o defaults,noatime,nodiratime,logbufs=8,logbsize=256k,largeio,inode64,swalloc,allocsize=131072k -- /dev/md10 /data/beegfs/storage
          queue of /dev/md10 and its 4 disks: scheduler=mq-deadline nr_requests=4096 read_ahead_kb=32768
            (pending: depends on the changes before it: /sys/block/md10/queue: no queue settings for /dev/md10: it is not a whole disk or array the kernel knows (a partition has none))
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          file /etc/beegfs/interfaces
            $ write /etc/beegfs/interfaces
          file /etc/beegfs/netfilter
            $ write /etc/beegfs/netfilter
          beegfs storage node 2 target 201 in /data/beegfs/storage/beegfs_storage
            $ /opt/beegfs/sbin/beegfs-setup-storage -p /data/beegfs/storage/beegfs_storage -s 2 -i 201 -m 10.0.0.4
          settings in /etc/beegfs/beegfs-storage.conf: connAuthFile=/etc/beegfs/connauthfile connInterfacesFile=/etc/beegfs/interfaces connNetFilterFile=/etc/beegfs/netfilter connMaxInternodeNum=32 tuneFileReadAheadSize=32m tuneFileReadAheadTriggerSize=2m tuneFileReadSize=256K tuneFileWriteSize=256K tuneNumWorkers=64 tuneWorkerBufSize=16m
            $ write /etc/beegfs/beegfs-storage.conf
          service beegfs-storage enabled and running, restarted when /etc/beegfs/beegfs-storage.conf or /etc/beegfs/connauthfile or /etc/beegfs/interfaces or /etc/beegfs/netfilter changes
            $ systemctl enable beegfs-storage
            $ systemctl start beegfs-storage
        #5 client00 client (after #0 #1 #2 #3 #4)
          firewalld opens 8004/udp
            (in sync)
          packages beegfs-client beegfs-helperd beegfs-utils gcc make (rpm: beegfs-client beegfs-helperd beegfs-utils kernel-devel gcc make elfutils-libelf-devel)
            $ write /etc/yum.repos.d/beegfs.repo
            $ dnf install -y -- beegfs-client beegfs-helperd beegfs-utils kernel-devel gcc make elfutils-libelf-devel
          check the running kernel's headers are installed
            (waits)
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          file /etc/beegfs/interfaces
            $ write /etc/beegfs/interfaces
          file /etc/beegfs/netfilter
            $ write /etc/beegfs/netfilter
          beegfs client
            $ /opt/beegfs/sbin/beegfs-setup-client -m 10.0.0.4
          settings in /etc/beegfs/beegfs-client.conf: connAuthFile=/etc/beegfs/connauthfile connInterfacesFile=/etc/beegfs/interfaces connNetFilterFile=/etc/beegfs/netfilter connMaxInternodeNum=32
            $ write /etc/beegfs/beegfs-client.conf
          settings in /etc/beegfs/beegfs-helperd.conf: connAuthFile=/etc/beegfs/connauthfile
            $ write /etc/beegfs/beegfs-helperd.conf
          wait until the BeeGFS management daemon is reachable
            (waits)
          wait until 2 metadata and 2 storage targets are Online and Good (beegfs-ctl --listtargets --state)
            (waits)
          directory /mnt/beegfs
            $ mkdir -p -m 755 /mnt/beegfs
          file /etc/beegfs/beegfs-mounts.conf
            $ write /etc/beegfs/beegfs-mounts.conf
          service beegfs-helperd enabled and running, restarted when /etc/beegfs/beegfs-helperd.conf or /etc/beegfs/connauthfile changes
            $ systemctl enable beegfs-helperd
            $ systemctl start beegfs-helperd
          service beegfs-client enabled and running, restarted when /etc/beegfs/beegfs-client.conf or /etc/beegfs/beegfs-mounts.conf or /etc/beegfs/connauthfile or /etc/beegfs/interfaces or /etc/beegfs/netfilter changes
            $ systemctl enable beegfs-client
            $ systemctl start beegfs-client
          check beegfs-check-servers
            (waits)
          check /mnt/beegfs is a beegfs mount
            (waits)
          check /mnt/beegfs is writable
            (waits)
        #6 client01 client (after #0 #1 #2 #3 #4)
          firewalld opens 8004/udp
            (in sync)
          packages beegfs-client beegfs-helperd beegfs-utils gcc make (rpm: beegfs-client beegfs-helperd beegfs-utils kernel-devel gcc make elfutils-libelf-devel)
            $ write /etc/yum.repos.d/beegfs.repo
            $ dnf install -y -- beegfs-client beegfs-helperd beegfs-utils kernel-devel gcc make elfutils-libelf-devel
          check the running kernel's headers are installed
            (waits)
          file /etc/beegfs/connauthfile
            $ write /etc/beegfs/connauthfile
          file /etc/beegfs/interfaces
            $ write /etc/beegfs/interfaces
          file /etc/beegfs/netfilter
            $ write /etc/beegfs/netfilter
          beegfs client
            $ /opt/beegfs/sbin/beegfs-setup-client -m 10.0.0.4
          settings in /etc/beegfs/beegfs-client.conf: connAuthFile=/etc/beegfs/connauthfile connInterfacesFile=/etc/beegfs/interfaces connNetFilterFile=/etc/beegfs/netfilter connMaxInternodeNum=32
            $ write /etc/beegfs/beegfs-client.conf
          settings in /etc/beegfs/beegfs-helperd.conf: connAuthFile=/etc/beegfs/connauthfile
            $ write /etc/beegfs/beegfs-helperd.conf
          wait until the BeeGFS management daemon is reachable
            (waits)
          wait until 2 metadata and 2 storage targets are Online and Good (beegfs-ctl --listtargets --state)
            (waits)
          directory /mnt/beegfs
            $ mkdir -p -m 755 /mnt/beegfs
          file /etc/beegfs/beegfs-mounts.conf
            $ write /etc/beegfs/beegfs-mounts.conf
          service beegfs-helperd enabled and running, restarted when /etc/beegfs/beegfs-helperd.conf or /etc/beegfs/connauthfile changes
            $ systemctl enable beegfs-helperd
            $ systemctl start beegfs-helperd
          service beegfs-client enabled and running, restarted when /etc/beegfs/beegfs-client.conf or /etc/beegfs/beegfs-mounts.conf or /etc/beegfs/connauthfile or /etc/beegfs/interfaces or /etc/beegfs/netfilter changes
            $ systemctl enable beegfs-client
            $ systemctl start beegfs-client
          check beegfs-check-servers
            (waits)
          check /mnt/beegfs is a beegfs mount
            (waits)
          check /mnt/beegfs is writable
            (waits)
    "#]]).await;
    let plan = plan(&example("beegfs-7.4-el8.toml"));
    let secret =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/beegfs.auth"))
            .unwrap();
    assert!(!plan.to_string().contains(secret.trim()), "a plan never shows the secret");
}

#[tokio::test]
async fn the_e2e_gluster_cluster_on_debian() {
    check("glusterfs-e2e.toml", &["/dev/pvfs-disk0"], false, expect![[r#"
        #0 gfs1 brick
          firewalld opens 24007-24008/tcp 49152/tcp
            (in sync)
          packages (rpm) centos-release-gluster
            (in sync)
          packages glusterfs-server xfsprogs (rpm: glusterfs-server glusterfs-cli glusterfs-geo-replication glusterfs-fuse glusterfs xfsprogs)
            $ apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confold -- glusterfs-server xfsprogs
          service glusterd enabled and running
            $ systemctl enable glusterd
            $ systemctl start glusterd
          service glusterfsd enabled and running
            $ systemctl enable glusterfsd
            $ systemctl start glusterfsd
          xfs on /dev/pvfs-disk0
            $ mkfs.xfs -i size=512 -- /dev/pvfs-disk0
          mount /dev/pvfs-disk0 on /bricks/brick1 (xfs)
            $ mkdir -p -m 755 /bricks/brick1
            $ write /etc/fstab
            $ mount -t xfs -o defaults,inode64,noatime -- /dev/pvfs-disk0 /bricks/brick1
          directory /bricks/brick1/gv0
            $ mkdir -p -m 755 /bricks/brick1/gv0
        #1 gfs2 brick
          firewalld opens 24007-24008/tcp 49152/tcp
            (in sync)
          packages (rpm) centos-release-gluster
            (in sync)
          packages glusterfs-server xfsprogs (rpm: glusterfs-server glusterfs-cli glusterfs-geo-replication glusterfs-fuse glusterfs xfsprogs)
            $ apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confold -- glusterfs-server xfsprogs
          service glusterd enabled and running
            $ systemctl enable glusterd
            $ systemctl start glusterd
          service glusterfsd enabled and running
            $ systemctl enable glusterfsd
            $ systemctl start glusterfsd
          xfs on /dev/pvfs-disk0
            $ mkfs.xfs -i size=512 -- /dev/pvfs-disk0
          mount /dev/pvfs-disk0 on /bricks/brick1 (xfs)
            $ mkdir -p -m 755 /bricks/brick1
            $ write /etc/fstab
            $ mount -t xfs -o defaults,inode64,noatime -- /dev/pvfs-disk0 /bricks/brick1
          directory /bricks/brick1/gv0
            $ mkdir -p -m 755 /bricks/brick1/gv0
        #2 gfs1 volume (after #0 #1)
          trusted pool with 10.213.250.12
            $ gluster --mode=script peer probe 10.213.250.12
          wait until 10.213.250.12 are in cluster
            (waits)
          gluster volume gv0 (distribute, 2 bricks)
            $ gluster --mode=script volume create gv0 transport tcp 10.213.250.11:/bricks/brick1/gv0 10.213.250.12:/bricks/brick1/gv0
            $ gluster --mode=script volume start gv0
          check the 2 bricks of gv0 are online
            (waits)
          wait until any rebalance of gv0 has finished
            (waits)
        #3 client1 mount (after #2)
          packages glusterfs-client (rpm: glusterfs-fuse)
            $ apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confold -- glusterfs-client
          mount 10.213.250.11:/gv0 on /mnt/gv0 (glusterfs)
            $ mkdir -p -m 755 /mnt/gv0
            $ write /etc/fstab
            $ mount -t glusterfs -o defaults,_netdev,nosuid,nodev,backup-volfile-servers=10.213.250.12 -- 10.213.250.11:/gv0 /mnt/gv0
          check /mnt/gv0 is writable
            (waits)
    "#]]).await;
}

#[test]
fn units_order_across_nodes() {
    let plan = plan(&example("glusterfs-e2e.toml"));
    expect![[r#"
        #0 gfs1 brick
            firewalld opens 24007-24008/tcp 49152/tcp
            packages (rpm) centos-release-gluster
            packages glusterfs-server xfsprogs (rpm: glusterfs-server glusterfs-cli glusterfs-geo-replication glusterfs-fuse glusterfs xfsprogs)
            service glusterd enabled and running
            service glusterfsd enabled and running
            xfs on /dev/pvfs-disk0
            mount /dev/pvfs-disk0 on /bricks/brick1 (xfs)
            directory /bricks/brick1/gv0
        #1 gfs2 brick
            firewalld opens 24007-24008/tcp 49152/tcp
            packages (rpm) centos-release-gluster
            packages glusterfs-server xfsprogs (rpm: glusterfs-server glusterfs-cli glusterfs-geo-replication glusterfs-fuse glusterfs xfsprogs)
            service glusterd enabled and running
            service glusterfsd enabled and running
            xfs on /dev/pvfs-disk0
            mount /dev/pvfs-disk0 on /bricks/brick1 (xfs)
            directory /bricks/brick1/gv0
        #2 gfs1 volume (after #0 #1)
            trusted pool with 10.213.250.12
            wait until 10.213.250.12 are in cluster
            gluster volume gv0 (distribute, 2 bricks)
            check the 2 bricks of gv0 are online
            wait until any rebalance of gv0 has finished
        #3 client1 mount (after #2)
            packages glusterfs-client (rpm: glusterfs-fuse)
            mount 10.213.250.11:/gv0 on /mnt/gv0 (glusterfs)
            check /mnt/gv0 is writable
    "#]]
    .assert_eq(&plan.to_string());
    assert_eq!(plan.dependents(0), [2, 3]);
    let local = plan_of_local();
    assert!(local.units.iter().all(|u| u.steps.iter().all(|s| !matches!(s, Step::Packages(_)))));
}

fn plan_of_local() -> Plan {
    plan(&example("local.toml"))
}

/// The policy must never get in the way of real work: every step the planner makes for every
/// example cluster file passes the agents' default policy (the pure rules, and the node's on a
/// bare simulated node), and so do the actions their dry runs produce.
#[tokio::test]
async fn every_example_plan_passes_the_default_policy() {
    let policy = Policy::default();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !is_example(&name) {
            continue;
        }
        // As the agents get it: with the hosts the coordinator sends (every host a step names
        // must be the cluster's own).
        let policy = policy.for_cluster(crate::cluster_hosts(&example(&name)));
        let plan = plan(&example(&name));
        let mut devices: Vec<String> = plan
            .units
            .iter()
            .flat_map(|u| &u.steps)
            .filter_map(|s| match s {
                Step::Raid0(r) => Some(r.members.clone()),
                Step::Mkfs(m) => Some(vec![m.device.clone()]),
                Step::LvmThin(l) => Some(vec![l.pv.clone()]),
                _ => None,
            })
            .flatten()
            .collect();
        // Every node has the same disk names; the simulated node needs each once.
        devices.sort();
        devices.dedup();
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::at(tmp.path());
        for unit in &plan.units {
            if let Err(refused) = policy.check_unit_on(&unit.steps, &root) {
                panic!("{name}: unit #{} on {} ({}): {refused}", unit.id, unit.node, unit.label);
            }
            checked += unit.steps.len();
        }
        // And the actions a dry run on bare nodes lists: run_unit checks each step again and
        // would report a refusal as a failure, which `render` shows as `!!`.
        let devices: Vec<&str> = devices.iter().map(String::as_str).collect();
        for rpm in [false, true] {
            let shown = render(&plan, &devices, rpm).await;
            assert!(!shown.contains("refused by policy"), "{name}:\n{shown}");
        }
    }
    assert!(checked > 50, "only {checked} steps checked");
}

#[test]
fn plans_show_unsigned_repositories() {
    let plan = plan(&example("lustre.toml"));
    let shown = plan.to_string();
    assert!(
        shown.contains("[WARNING: repository lustreserver is not GPG-checked (gpgcheck = false)]"),
        "{shown}"
    );
}

#[test]
fn a_pinned_lnet_interface_reaches_lnet_conf() {
    let plan = plan(&example("lustre-2.15-el8.toml"));
    let confs: Vec<&str> = plan
        .units
        .iter()
        .flat_map(|u| &u.steps)
        .filter_map(|s| match s {
            Step::File(f) if f.path == "/etc/modprobe.d/lnet.conf" => Some(f.contents.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(confs.len(), 4, "every server and the client");
    assert!(confs.iter().all(|c| *c == "options lnet networks=tcp(eth0)\n"), "{confs:?}");
    // The seed's file leaves the interface to LNet.
    let seed = plan_lnet_conf(&example("lustre.toml"));
    assert_eq!(seed, "options lnet networks=tcp\n");
}

fn plan_lnet_conf(cluster: &pvfs_config::Cluster) -> String {
    plan(cluster)
        .units
        .iter()
        .flat_map(|u| &u.steps)
        .find_map(|s| match s {
            Step::File(f) if f.path == "/etc/modprobe.d/lnet.conf" => Some(f.contents.clone()),
            _ => None,
        })
        .unwrap()
}

/// `down` is `up` reversed: the client unmounts first, then the volume goes and the peers
/// leave the pool (on the server that made them), then each server's brick unmounts and its
/// services stop (glusterfsd, which stops the bricks, before glusterd). Packages, directories
/// and gates have nothing to undo; without `--wipe` the brick's file system stays.
#[test]
fn down_is_up_reversed() {
    expect![[r#"
        #0 client1 mount
            unmount 10.213.250.11:/gv0 from /mnt/gv0 (glusterfs), and its fstab line
        #1 gfs1 volume (after #0)
            gluster volume gv0 stopped and deleted
            10.213.250.12 detached from the trusted pool
        #2 gfs2 brick (after #1)
            unmount /dev/pvfs-disk0 from /bricks/brick1 (xfs), and its fstab line
            service glusterfsd stopped and disabled
            service glusterd stopped and disabled
        #3 gfs1 brick (after #1)
            unmount /dev/pvfs-disk0 from /bricks/brick1 (xfs), and its fstab line
            service glusterfsd stopped and disabled
            service glusterd stopped and disabled
    "#]]
    .assert_eq(&crate::down(&example("glusterfs-e2e.toml"), false).to_string());
}

/// Lustre, with `--wipe`: clients unmount before any server; OSTs unmount (and are wiped)
/// before the MGS/MDT; each node's LNet stops after its targets, as Lustre's manual has it
/// (`lnet.service` runs `lustre_rmmod ptlrpc`, `lnetctl lnet unconfigure`, `lustre_rmmod`).
/// An OSS's wipe stops its RAID0 array and clears its members.
#[test]
fn lustre_down_wipes_osts_before_the_mdt() {
    expect![[r#"
        #0 client00 client
            unmount 10.0.0.4@tcp:/LustreFS from /mnt/lustre (lustre), and its fstab line
            service lnet stopped and disabled
        #1 oss01 ost (after #0)
            unmount /dev/md0 from /mnt/oss (lustre), and its fstab line
            wipe /dev/disk/azure/scsi1/lun0 /dev/disk/azure/scsi1/lun1 /dev/disk/azure/scsi1/lun2 /dev/disk/azure/scsi1/lun3 /dev/disk/azure/scsi1/lun4 /dev/disk/azure/scsi1/lun5 /dev/disk/azure/scsi1/lun6 /dev/disk/azure/scsi1/lun7 /dev/disk/azure/scsi1/lun8 /dev/disk/azure/scsi1/lun9 (array /dev/md0)
            service lnet stopped and disabled
        #2 oss00 ost (after #0)
            unmount /dev/md0 from /mnt/oss (lustre), and its fstab line
            wipe /dev/disk/azure/scsi1/lun0 /dev/disk/azure/scsi1/lun1 /dev/disk/azure/scsi1/lun2 /dev/disk/azure/scsi1/lun3 /dev/disk/azure/scsi1/lun4 /dev/disk/azure/scsi1/lun5 /dev/disk/azure/scsi1/lun6 /dev/disk/azure/scsi1/lun7 /dev/disk/azure/scsi1/lun8 /dev/disk/azure/scsi1/lun9 (array /dev/md0)
            service lnet stopped and disabled
        #3 mgsmds00 mgs+mdt (after #0 #1 #2)
            unmount /dev/disk/azure/scsi1/lun0 from /mnt/mgsmds (lustre), and its fstab line
            wipe /dev/disk/azure/scsi1/lun0
            service lnet stopped and disabled
    "#]]
    .assert_eq(&crate::down(&example("lustre.toml"), true).to_string());
}

/// BeeGFS: clients stop their client and helper services (the client service unmounts), then
/// the metadata and storage servers stop and unmount their targets, then the management
/// daemon stops.
#[test]
fn beegfs_down_stops_clients_then_servers_then_mgmtd() {
    expect![[r#"
        #0 client00 client
            service beegfs-client stopped and disabled
            service beegfs-helperd stopped and disabled
        #1 storage1 storage (after #0)
            service beegfs-storage stopped and disabled
            unmount /dev/md10 from /data/beegfs/storage (xfs), and its fstab line
        #2 storage0 storage (after #0)
            service beegfs-storage stopped and disabled
            unmount /dev/md10 from /data/beegfs/storage (xfs), and its fstab line
        #3 storage1 meta (after #0 #1)
            service beegfs-meta stopped and disabled
            unmount /dev/md20 from /data/beegfs/meta (ext4), and its fstab line
        #4 storage0 meta (after #0 #2)
            service beegfs-meta stopped and disabled
            unmount /dev/md20 from /data/beegfs/meta (ext4), and its fstab line
        #5 mgmt mgmtd (after #0 #1 #2 #3 #4)
            service beegfs-mgmtd stopped and disabled
    "#]]
    .assert_eq(&crate::down(&example("beegfs.toml"), false).to_string());
}

/// Every example's down plan, with and without `--wipe`, passes the default policy, and on
/// bare nodes (nothing mounted, running or formatted) it finds nothing to do: a second `down`
/// changes nothing.
#[tokio::test]
async fn down_on_bare_nodes_changes_nothing_and_passes_the_policy() {
    let policy = Policy::default();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config");
    let mut wipes = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !is_example(&name) {
            continue;
        }
        let policy = policy.for_cluster(crate::cluster_hosts(&example(&name)));
        for wipe in [false, true] {
            let plan = crate::down(&example(&name), wipe);
            let tmp = tempfile::tempdir().unwrap();
            let mut disks: Vec<String> = Vec::new();
            for unit in &plan.units {
                if let Err(refused) = policy.check_unit_on(&unit.steps, &Root::at(tmp.path())) {
                    panic!("{name}: unit #{} on {} ({}): {refused}", unit.id, unit.node, unit.label);
                }
                for step in &unit.steps {
                    if let Step::WipeTarget(w) = step {
                        wipes += 1;
                        disks.extend(w.disks.iter().cloned());
                    }
                }
            }
            disks.sort();
            disks.dedup();
            let disks: Vec<&str> = disks.iter().map(String::as_str).collect();
            let shown = render(&plan, &disks, true).await;
            assert!(!shown.contains("$ ") && !shown.contains("!!"), "{name} (wipe: {wipe}):\n{shown}");
        }
    }
    assert!(wipes >= 4, "only {wipes} wipe steps");
}

/// With LNet pinned to another interface than the one the agents are dialled on, every NID is
/// the node's `lnet_address`: in the servers' NID checks, the targets' `--mgsnode`, the LNet
/// pings and the clients' mount source.
#[test]
fn nids_come_from_the_lnet_address_when_a_node_gives_one() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/lustre-2.15-el8.toml");
    let source = std::fs::read_to_string(&path).unwrap();
    // Every node's address on the InfiniBand fabric: 10.0.0.N → 192.168.100.N.
    let mut pinned = String::new();
    for line in source.lines() {
        pinned += line;
        pinned += "\n";
        if let Some(ip) = line.strip_prefix("address = \"10.0.0.").and_then(|r| r.strip_suffix('"')) {
            pinned += &format!("lnet_address = \"192.168.100.{}\"\n", ip.split(':').next().unwrap());
        }
    }
    let pinned = pinned.replace("lnet = \"tcp(eth0)\"", "lnet = \"tcp(ib0)\"");
    assert!(pinned.contains("lnet = \"tcp(ib0)\"") && pinned.contains("lnet_address"), "{pinned}");
    let cluster = pvfs_config::parse(&path, &pinned).unwrap_or_else(|e| panic!("{e}"));
    let shown: Vec<String> =
        plan(&cluster).units.iter().flat_map(|u| u.steps.iter().map(|s| s.to_string())).collect();
    let mgs = "192.168.100.4@tcp";
    assert!(shown.iter().any(|s| s == &format!("check that LNet's NID here is {mgs}")), "{shown:#?}");
    assert!(shown.iter().any(|s| s == &format!("wait until {mgs} answers lctl ping")), "{shown:#?}");
    assert!(shown.iter().any(|s| s.starts_with(&format!("mount {mgs}:/"))), "{shown:#?}");
    assert!(!shown.iter().any(|s| s.contains("10.0.0.") && s.contains("@tcp")), "{shown:#?}");
}

/// `up --plan`'s word before anything runs: the units a node's cluster-file policy would
/// refuse, each with the step and the rule, and the nodes without a policy left to their
/// agents.
#[test]
fn the_cluster_files_policies_say_which_units_they_refuse() {
    let src = r#"
[cluster]
name = "gv"
kind = "glusterfs"

[[node]]
name = "s1"
address = "10.0.0.1"
roles = ["server"]
disks = ["/dev/sdb"]

[[node]]
name = "c1"
address = "10.0.0.2"
roles = ["client"]

[glusterfs]
volume = "gv0"
mount = "/mnt/gv0"

[policy.role.server]
kinds = ["firewall", "packages", "service", "directory", "mount", "block-queue", "gluster-peers", "gluster-volume"]
"#;
    let cluster = pvfs_config::parse(Path::new("/c/cluster.toml"), src).unwrap();
    let plan = plan(&cluster);
    let said = crate::policy_refusals(&cluster, &plan);
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(said[0].starts_with("node s1: its [policy] refuses unit `brick` at step"), "{}", said[0]);
    assert!(said[0].contains("mkfs"), "{}", said[0]);
    // The client has a [policy] too (the empty base): the defaults, which refuse nothing here.
    assert!(crate::agent_policy(&cluster, cluster.node("c1").unwrap()).is_some());

    // A value only the agent's rules know is wrong is said once per node, naming the key.
    let bad =
        src.replace("[policy.role.server]", "[policy]\nkinds = [\"mkfs\", \"format\"]\n[policy.role.server]");
    let cluster = pvfs_config::parse(Path::new("/c/cluster.toml"), &bad).unwrap();
    let said = crate::policy_refusals(&cluster, &crate::plan(&cluster));
    // s1's role table replaces `kinds`, so only c1 takes the bad list.
    assert_eq!(said.len(), 2, "{said:#?}");
    assert!(said[0].starts_with("node s1: its [policy] refuses unit `brick`"), "{said:#?}");
    assert!(said[1].starts_with("node c1: [policy] kinds[1]: unknown step kind \"format\""), "{said:#?}");
}

/// A gate that times out names the nodes whose ports it waited for: the waiting node, then
/// the ones it reaches (the MGS by its NID, every server, the peers by host).
#[test]
fn a_timed_out_gate_names_the_nodes_it_waited_for() {
    use pvfs_steps::GateKind;
    let lustre = example("lustre.toml");
    let names = |node: &str, gate: &GateKind| -> Vec<String> {
        crate::gate_nodes(&lustre, node, gate).iter().map(|n| n.name.clone()).collect()
    };
    let mgs = lustre.with_role(pvfs_config::Role::Mgs).next().unwrap();
    let client = lustre.with_role(pvfs_config::Role::Client).next().unwrap();
    let nid = format!("{}@tcp", mgs.address.tls_name());
    assert_eq!(names(&client.name, &GateKind::LnetPing { nid }), [client.name.clone(), mgs.name.clone()]);
    let servers = names(&client.name, &GateKind::LfsCheckServers);
    assert_eq!(servers[0], client.name);
    assert!(servers.len() > 2, "{servers:?}");
    assert!(names(&client.name, &GateKind::KernelBuildTree).is_empty());
    // Ports: LNet's on every Lustre node, client or server.
    assert_eq!(
        crate::ports_of(&lustre, client).iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["988/tcp"]
    );
}

/// SELinux enforcing is warned about where the file system's documentation says so, and
/// nowhere else: Lustre and BeeGFS servers, not their clients, not GlusterFS.
#[test]
fn selinux_enforcing_is_warned_about_on_servers_whose_documentation_says_so() {
    let warned = |file: &str| -> Vec<String> {
        let cluster = example(file);
        cluster
            .nodes
            .iter()
            .filter(|n| crate::selinux_warning(&cluster, n, true).is_some())
            .map(|n| n.name.clone())
            .collect()
    };
    let lustre = example("lustre.toml");
    let servers: Vec<String> =
        lustre.nodes.iter().filter(|n| !n.has(pvfs_config::Role::Client)).map(|n| n.name.clone()).collect();
    assert_eq!(warned("lustre.toml"), servers);
    // Lustre 2.15 pinned: the manual no longer requires it.
    let mut pinned = lustre.clone();
    if let pvfs_config::KindSpec::Lustre { version, .. } = &mut pinned.spec {
        *version = Some("2.15.4".into());
    }
    assert!(pinned.nodes.iter().all(|n| crate::selinux_warning(&pinned, n, true).is_none()));
    let beegfs = example("beegfs.toml");
    let beegfs_servers: Vec<String> = beegfs
        .nodes
        .iter()
        .filter(|n| !n.has(pvfs_config::Role::Client) || n.roles.len() > 1)
        .map(|n| n.name.clone())
        .collect();
    assert_eq!(warned("beegfs.toml"), beegfs_servers);
    assert!(warned("glusterfs.toml").is_empty());
    let node = &lustre.nodes[0];
    assert_eq!(crate::selinux_warning(&lustre, node, false), None, "permissive or disabled: nothing");
    let text = crate::selinux_warning(&lustre, node, true).unwrap();
    assert!(text.contains("pvfs does not change it") && text.contains("/etc/selinux/config"), "{text}");
}
