//! Block steps against recorded outputs of the real tools (blkid and wipefs recorded on
//! this machine; mdadm and LVM outputs from reference/setup-anchors.md, as md and dm are absent
//! from this kernel), on real devices: every device a test names (`/dev/sdc`, `/dev/md0`) is a
//! link to a loop device made for the test, so the device rules (block device, unused,
//! claimable, zeros) run against the real kernel. These tests need root, as CI runs them.

use super::*;
use crate::{Outcome, Step, execute};
use pvfs_host::testing::{DeviceRoot, LoopDevice, Mounted};
use pvfs_host::{RecordedRunner, SystemRunner};

const BLKID_EXT4: &str = "DEVNAME=/dev/loop0\nLABEL=tgt\nUUID=8f780630-8498-4c6c-854b-fa2623ee30e9\nVERSION=1.0\nBLOCK_SIZE=1024\nTYPE=ext4\nUSAGE=filesystem\n";
const WIPEFS_EXT4: &str = "DEVICE OFFSET TYPE UUID                                 LABEL\nloop0  0x438  ext4 8f780630-8498-4c6c-854b-fa2623ee30e9 tgt\n";
const BLKID_XFS: &str = "DEVNAME=/dev/loop0\nLABEL=brick1\nUUID=0b0e8c7e-5ad3-4c55-a2b5-95d2d9ff1c39\nBLOCK_SIZE=512\nTYPE=xfs\nUSAGE=filesystem\n";

/// The node's disks: a test root and the loop devices its `/dev` names link to (detached when
/// this drops, after the host).
struct Disks {
    root: DeviceRoot,
    loops: Vec<LoopDevice>,
}

impl Disks {
    fn get(&self, i: usize) -> &LoopDevice {
        &self.loops[i]
    }
}

/// A root where each of `devices` is a zeroed 64 MiB loop device.
fn host_with<R: Runner>(devices: &[&str], runner: R) -> (Disks, NodeAccess<R>) {
    let root = DeviceRoot::new();
    let mut loops = Vec::new();
    for dev in devices {
        let disk = LoopDevice::new(64 << 20);
        root.link(dev, &disk.path);
        loops.push(disk);
    }
    let host = NodeAccess::new(root.root(), runner);
    (Disks { root, loops }, host)
}

/// A root with device nodes as empty files, for steps that find their device already in use
/// by what they want (a running array, a PV in its VG) and so prove nothing.
fn plain_host(devices: &[&str], runner: RecordedRunner) -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
    let dir = tempfile::tempdir().unwrap();
    for dev in devices {
        let path = dir.path().join(dev.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "").unwrap();
    }
    let host = NodeAccess::new(pvfs_host::Root::at(dir.path()), runner);
    (dir, host)
}

fn shown(a: &Assessment) -> Vec<String> {
    a.actions.iter().map(ToString::to_string).collect()
}

fn brick(wipe: bool) -> Mkfs {
    Mkfs {
        device: "/dev/loop0".into(),
        fstype: "xfs".into(),
        options: ["-K", "-i", "size=512", "-n", "size=8192"].map(String::from).to_vec(),
        label: Some("brick1".into()),
        wipe,
    }
}

#[tokio::test]
async fn mkfs_formats_a_device_proven_empty_without_force() {
    let runner = RecordedRunner::new().record("blkid -p -o export /dev/loop0", 2, "", "").record(
        "wipefs --no-act -- /dev/loop0",
        0,
        "",
        "",
    );
    let (_d, host) = host_with(&["/dev/loop0"], runner);
    let a = brick(false).assess(&host).await.unwrap();
    assert_eq!(a.diff, ["/dev/loop0 has no file system"]);
    assert_eq!(shown(&a), ["mkfs.xfs -K -i size=512 -n size=8192 -L brick1 -- /dev/loop0"]);
}

#[tokio::test]
async fn mkfs_leaves_the_wanted_file_system_alone() {
    let runner = RecordedRunner::new().record("blkid -p -o export /dev/loop0", 0, BLKID_XFS, "");
    let (_d, host) = plain_host(&["/dev/loop0"], runner.clone());
    assert!(brick(true).assess(&host).await.unwrap().is_in_sync());
    assert_eq!(runner.calls(), ["blkid -p -o export /dev/loop0"], "nothing else is even probed");
}

#[tokio::test]
async fn mkfs_refuses_a_device_with_data_unless_listed_for_wiping() {
    let runner = RecordedRunner::new().record("blkid -p -o export /dev/loop0", 0, BLKID_EXT4, "");
    let (_d, host) = host_with(&["/dev/loop0"], runner);
    let err = brick(false).assess(&host).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "refusing: /dev/loop0 holds ext4 (LABEL=tgt) (rule: pvfs makes file systems only on devices proven \
         empty: no signature, and zeros in the first and last MiB). If its contents may be destroyed, add \
         \"/dev/loop0\" to this node's `wipe` list in the cluster file"
    );
    let a = brick(true).assess(&host).await.unwrap();
    assert_eq!(shown(&a), ["mkfs.xfs -f -K -i size=512 -n size=8192 -L brick1 -- /dev/loop0"]);
    assert_eq!(a.diff, ["/dev/loop0 holds ext4 (LABEL=tgt), not xfs (listed under wipe)"]);
}

/// wipefs lists signatures in a table that changed with util-linux 2.31 (EL7's 2.23: `offset
/// type` and a rule; EL8's 2.32 and later: `DEVICE OFFSET TYPE UUID LABEL`); any listing at all
/// is a signature, in either format.
#[tokio::test]
async fn wipefs_listings_of_el7_and_el8_formats_are_signatures() {
    for name in ["util-linux-2.2x-table.txt", "util-linux-2.40-columns.txt"] {
        let path = format!("{}/testdata/wipefs/{name}", env!("CARGO_MANIFEST_DIR"));
        let text: String = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        let runner = RecordedRunner::new().record("blkid -p -o export /dev/loop0", 2, "", "").record(
            "wipefs --no-act -- /dev/loop0",
            0,
            &text,
            "",
        );
        let (_d, host) = host_with(&["/dev/loop0"], runner);
        let err = brick(false).assess(&host).await.unwrap_err();
        assert!(err.to_string().contains("signatures wipefs lists"), "{name}: {err}");
        assert!(matches!(err, StepError::Refused { .. }) && err.is_refusal(), "{name}: {err}");
    }
}

#[tokio::test]
async fn a_signature_only_wipefs_sees_is_not_empty() {
    let runner = RecordedRunner::new().record("blkid -p -o export /dev/loop0", 2, "", "").record(
        "wipefs --no-act -- /dev/loop0",
        0,
        WIPEFS_EXT4,
        "",
    );
    let (_d, host) = host_with(&["/dev/loop0"], runner);
    let err = brick(false).assess(&host).await.unwrap_err();
    assert!(err.to_string().contains("signatures wipefs lists"), "{err}");
}

#[tokio::test]
async fn an_unreadable_or_missing_device_is_never_empty() {
    let runner = RecordedRunner::new().record(
        "blkid -p -o export /dev/loop0",
        2,
        "",
        "blkid: error: /dev/loop0: Permission denied\n",
    );
    let (_d, host) = host_with(&["/dev/loop0"], runner);
    for wipe in [false, true] {
        let err = brick(wipe).assess(&host).await.unwrap_err();
        assert!(err.to_string().contains("cannot prove /dev/loop0 empty"), "{err}");
    }
    let (_d, host) = host_with(&[], RecordedRunner::new());
    let err = brick(true).assess(&host).await.unwrap_err();
    assert!(err.to_string().contains("cannot prove /dev/loop0 empty"), "{err}");
    assert!(err.to_string().contains("/dev/loop0: no such device on this node"), "{err}");
}

#[tokio::test]
async fn data_without_a_signature_is_not_empty() {
    // The finding of issue 10: a device with data blkid and wipefs know nothing about was
    // formatted. Both tools say nothing here (recorded on this machine for such a device).
    let runner = RecordedRunner::new().record("blkid -p -o export /dev/loop0", 2, "", "").record(
        "wipefs --no-act -- /dev/loop0",
        0,
        "",
        "",
    );
    let (disks, host) = host_with(&["/dev/loop0"], runner.clone());
    disks.get(0).write_at(4096, b"rows of a database, no signature");
    let err = brick(false).assess(&host).await.unwrap_err();
    assert!(
        err.to_string().starts_with(
            "refusing: /dev/loop0 holds data but no signature blkid or wipefs knows (data at byte 4096 (first \
             MiB)) (rule: pvfs makes file systems only on devices proven empty"
        ),
        "{err}"
    );
    let a = brick(true).assess(&host).await.unwrap();
    assert_eq!(shown(&a), ["mkfs.xfs -f -K -i size=512 -n size=8192 -L brick1 -- /dev/loop0"]);
}

#[tokio::test]
async fn a_mounted_device_is_refused_even_when_listed_for_wiping() {
    let runner = RecordedRunner::new().record("blkid -p -o export /dev/loop0", 0, BLKID_EXT4, "");
    let (disks, host) = host_with(&["/dev/loop0"], runner);
    let mounted = Mounted::ext4(&disks.get(0).path);
    let before = disks.get(0).checksum();
    for wipe in [false, true] {
        let err = brick(wipe).assess(&host).await.unwrap_err();
        assert!(err.to_string().contains(&format!("is mounted on {}", mounted.target.display())), "{err}");
        assert!(
            err.to_string()
                .contains("rule: a mounted device is never formatted, even when listed under `wipe`")
        );
    }
    // Compared while still mounted: mounting itself changes what the device reads (ext4
    // marks its superblock in use), and unmounting changes it back.
    assert_eq!(disks.get(0).checksum(), before);
    drop(mounted);
}

#[tokio::test]
async fn a_regular_file_is_refused_as_a_device() {
    let (disks, host) = host_with(&[], RecordedRunner::new());
    std::fs::write(disks.root.dir.path().join("dev/loop0"), vec![0u8; 1 << 20]).unwrap();
    for wipe in [false, true] {
        let err = brick(wipe).assess(&host).await.unwrap_err();
        assert!(
            err.to_string().starts_with(
                "refusing: /dev/loop0 is a regular file, not a block device (rule: only block devices"
            ),
            "{err}"
        );
    }
}

#[tokio::test]
async fn options_off_the_allow_list_and_unknown_types_are_refused_before_anything_is_probed() {
    let runner = RecordedRunner::new();
    let (_d, host) = host_with(&["/dev/loop0"], runner.clone());
    for options in [&["-Kf"][..], &["-l", "logdev=/dev/sdb"], &["-K", "-f"]] {
        let step = Mkfs { options: options.iter().map(|o| o.to_string()).collect(), ..brick(true) };
        let err = step.assess(&host).await.unwrap_err();
        assert!(
            err.to_string().starts_with("refusing: mkfs options of /dev/loop0: mkfs.xfs option -"),
            "{err}"
        );
        assert!(
            err.to_string().contains("no force flag") || err.to_string().contains("no second device"),
            "{err}"
        );
    }
    let step = Mkfs { fstype: "../../tmp/evil".into(), options: vec![], ..brick(true) };
    let err = step.assess(&host).await.unwrap_err();
    assert!(err.to_string().contains("rule: pvfs makes only xfs and ext4 file systems"), "{err}");
    assert_eq!(runner.calls(), Vec::<String>::new(), "nothing was run, not even a probe");
}

/// Apply proves again just before it acts: a device that changed after assessment is left
/// alone.
#[tokio::test]
async fn apply_refuses_a_device_that_changed_since_it_was_assessed() {
    let runner = RecordedRunner::new().record("blkid -p -o export /dev/loop0", 2, "", "").record(
        "wipefs --no-act -- /dev/loop0",
        0,
        "",
        "",
    );
    let (disks, host) = host_with(&["/dev/loop0"], runner.clone());
    let a = brick(false).assess(&host).await.unwrap();
    let [action] = &a.actions[..] else { panic!("{a:?}") };
    let perform = async |action: &Action| {
        crate::exec::perform(action, &host, &mut |_: &crate::CommandRecord| {}).await.unwrap_err().to_string()
    };

    // Data written since: no longer proven empty.
    disks.get(0).write_at(1 << 16, b"written after the plan was made");
    let before = disks.get(0).checksum();
    let err = perform(action).await;
    assert!(err.contains("was proven empty when assessed but now holds data"), "{err}");
    disk_unchanged(&disks, before);
    disks.get(0).write_at(1 << 16, &[0; 31]);

    // Mounted since.
    let mounted = Mounted::ext4(&disks.get(0).path);
    let err = perform(action).await;
    assert!(err.contains("rule: a mounted device is never formatted"), "{err}");
    drop(mounted);

    // The name points at another device since.
    let other = LoopDevice::new(64 << 20);
    std::fs::remove_file(disks.root.dir.path().join("dev/loop0")).unwrap();
    disks.root.link("/dev/loop0", &other.path);
    let err = perform(action).await;
    assert!(err.contains("rule: the device acted on is the one checked"), "{err}");
    assert!(!runner.calls().iter().any(|c| c.starts_with("mkfs")), "{:?}", runner.calls());
}

fn disk_unchanged(disks: &Disks, before: u64) {
    assert_eq!(disks.get(0).checksum(), before, "the device was left as it was");
}

/// The whole path for real: a zeroed loop device is proven empty, formatted by the real
/// mkfs.ext4 (after apply proved it again and let go of it), and then in sync.
#[tokio::test]
async fn a_zeroed_device_is_formatted_for_real() {
    let disk = LoopDevice::new(64 << 20);
    let host = NodeAccess::new(pvfs_host::Root::system(), SystemRunner);
    let step = Step::Mkfs(Mkfs {
        device: disk.path.clone(),
        fstype: "ext4".into(),
        options: vec!["-q".into(), "-E".into(), "nodiscard".into()],
        label: Some("brick1".into()),
        wipe: false,
    });
    let Outcome::Changed { diff } = execute(&step, &host, &crate::Unguarded, false, |_| {}).await else {
        panic!()
    };
    assert_eq!(diff, [format!("{} has no file system", disk.path)]);
    assert_eq!(execute(&step, &host, &crate::Unguarded, false, |_| {}).await, Outcome::Ok { detail: None });
    let probe = blkid::probe(&host.root, &host.runner, &disk.path).await;
    assert_eq!((probe.kind(), probe.field("LABEL")), (Some("ext4"), Some("brick1")));
}

fn raid(members: &[&str]) -> Raid0 {
    Raid0 {
        device: "/dev/md0".into(),
        members: members.iter().map(|m| m.to_string()).collect(),
        chunk_kib: None,
        wipe: vec![],
        conf: Some("/etc/mdadm/mdadm.conf".into()),
    }
}

#[tokio::test]
async fn raid0_is_created_on_empty_members_and_recorded() {
    let mut runner = RecordedRunner::new();
    for dev in ["/dev/sdc", "/dev/sdd"] {
        runner = runner
            .record(
                &format!("mdadm --examine --export {dev}"),
                1,
                "",
                &format!("mdadm: No md superblock detected on {dev}.\n"),
            )
            .record(&format!("blkid -p -o export {dev}"), 2, "", "")
            .record(&format!("wipefs --no-act -- {dev}"), 0, "", "");
    }
    let (_d, host) = host_with(&["/dev/sdc", "/dev/sdd"], runner);
    let a = raid(&["/dev/sdc", "/dev/sdd"]).assess(&host).await.unwrap();
    assert_eq!(a.diff, ["/dev/md0 does not exist", "/etc/mdadm/mdadm.conf does not record /dev/md0"]);
    assert_eq!(
        shown(&a),
        [
            "mdadm --create /dev/md0 --run --level=0 --raid-devices=2 /dev/sdc /dev/sdd",
            "mdadm --detail --brief /dev/md0 >> /etc/mdadm/mdadm.conf; update-initramfs -u",
        ]
    );
}

#[tokio::test]
async fn a_wiped_member_keeps_mdadms_own_guard() {
    let mut runner = RecordedRunner::new()
        .record("blkid -p -o export /dev/sdc", 0, &BLKID_EXT4.replace("loop0", "sdc"), "")
        .record("blkid -p -o export /dev/sdd", 2, "", "")
        .record("wipefs --no-act -- /dev/sdd", 0, "", "");
    for dev in ["/dev/sdc", "/dev/sdd"] {
        runner = runner.record(
            &format!("mdadm --examine --export {dev}"),
            1,
            "",
            &format!("mdadm: No md superblock detected on {dev}.\n"),
        );
    }
    let (disks, host) = host_with(&["/dev/sdc", "/dev/sdd"], runner);
    disks.get(0).write_at(1024, b"an old ext4 superblock, say");
    let raid = Raid0 { wipe: vec!["/dev/sdc".into()], ..raid(&["/dev/sdc", "/dev/sdd"]) };
    let a = raid.assess(&host).await.unwrap();
    assert_eq!(
        shown(&a)[..2],
        ["wipefs --all -- /dev/sdc", "mdadm --create /dev/md0 --level=0 --raid-devices=2 /dev/sdc /dev/sdd"]
    );
    // The member not listed for wiping must be empty, whatever its neighbour's listing.
    disks.get(1).write_at(512 << 10, b"data");
    let err = raid.assess(&host).await.unwrap_err();
    assert!(err.to_string().contains("refusing: /dev/sdd holds data but no signature"), "{err}");
}

/// `mdadm --detail --export /dev/md0` as mdadm 4.2 prints it (Detail.c), members unsorted.
const DETAIL: &str = "MD_LEVEL=raid0\nMD_DEVICES=2\nMD_METADATA=1.2\nMD_UUID=3b1e8a44:0c4f7d52:8f2e6b3a:1d9c0e7f\n\
MD_DEVNAME=0\nMD_NAME=oss00:0\nMD_DEVICE_dev_sdd_ROLE=1\nMD_DEVICE_dev_sdd_DEV=/dev/sdd\nMD_DEVICE_dev_sdc_ROLE=0\nMD_DEVICE_dev_sdc_DEV=/dev/sdc\n";

#[tokio::test]
async fn a_running_raid0_with_the_same_members_is_in_sync() {
    let runner = RecordedRunner::new().record("mdadm --detail --export /dev/md0", 0, DETAIL, "");
    let (dir, host) = plain_host(&["/dev/sdc", "/dev/sdd"], runner);
    std::fs::create_dir_all(dir.path().join("sys/block/md0/md")).unwrap();
    std::fs::write(dir.path().join("sys/block/md0/md/level"), "raid0\n").unwrap();
    std::fs::create_dir_all(dir.path().join("etc/mdadm")).unwrap();
    std::fs::write(
        dir.path().join("etc/mdadm/mdadm.conf"),
        "HOMEHOST <system>\nARRAY /dev/md0 metadata=1.2 name=oss00:0 UUID=3b1e8a44:0c4f7d52:8f2e6b3a:1d9c0e7f\n",
    )
    .unwrap();
    assert!(raid(&["/dev/sdc", "/dev/sdd"]).assess(&host).await.unwrap().is_in_sync());

    let err = raid(&["/dev/sdc", "/dev/sde"]).assess(&host).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("already exists as raid0 over /dev/sdc,/dev/sdd, not raid0 over /dev/sdc,/dev/sde"),
        "{err}"
    );
}

/// `mdadm --detail --export` names each member's keys after its sysfs directory, differently
/// across versions: mdadm 3.3–4.0 print `sys_name+4` (`MD_DEVICE_sdc_DEV`, Detail.c as in
/// GuoqingJiang/SLE12-mdadm-for-clustermd, SLES 12's mdadm), mdadm 4.1+ `sys_name+1` with
/// non-alphanumerics made `_` (`MD_DEVICE_ev_sdc_DEV`, md-raid-utilities/mdadm Detail.c;
/// curtin's docstring shows `MD_DEVICE_ev_dm_5_DEV=/dev/dm-5`). The members are the values.
#[tokio::test]
async fn a_running_raid0_is_read_from_old_and_new_mdadm_exports() {
    for members in [
        "MD_DEVICE_sdd_ROLE=1\nMD_DEVICE_sdd_DEV=/dev/sdd\nMD_DEVICE_sdc_ROLE=0\nMD_DEVICE_sdc_DEV=/dev/sdc\n",
        "MD_DEVICE_ev_sdd_ROLE=1\nMD_DEVICE_ev_sdd_DEV=/dev/sdd\nMD_DEVICE_ev_sdc_ROLE=0\nMD_DEVICE_ev_sdc_DEV=/dev/sdc\n",
    ] {
        let detail = format!(
            "MD_LEVEL=raid0\nMD_DEVICES=2\nMD_METADATA=1.2\nMD_UUID=3b1e8a44:0c4f7d52:8f2e6b3a:1d9c0e7f\nMD_NAME=oss00:0\n{members}"
        );
        let runner = RecordedRunner::new().record("mdadm --detail --export /dev/md0", 0, &detail, "");
        let (dir, host) = plain_host(&["/dev/sdc", "/dev/sdd"], runner);
        std::fs::create_dir_all(dir.path().join("sys/block/md0/md")).unwrap();
        std::fs::write(dir.path().join("sys/block/md0/md/level"), "raid0\n").unwrap();
        std::fs::create_dir_all(dir.path().join("etc/mdadm")).unwrap();
        std::fs::write(
            dir.path().join("etc/mdadm/mdadm.conf"),
            "ARRAY /dev/md0 metadata=1.2 name=oss00:0 UUID=3b1e8a44:0c4f7d52:8f2e6b3a:1d9c0e7f\n",
        )
        .unwrap();
        let a = raid(&["/dev/sdc", "/dev/sdd"]).assess(&host).await.unwrap();
        assert!(a.is_in_sync(), "{members}: {:?}", a.diff);
    }
}

#[tokio::test]
async fn a_stopped_array_is_assembled_not_recreated() {
    let examine =
        "MD_LEVEL=raid0\nMD_DEVICES=2\nMD_UUID=3b1e8a44:0c4f7d52:8f2e6b3a:1d9c0e7f\nMD_DEV_UUID=aa\n";
    let runner = RecordedRunner::new().record("mdadm --examine --export /dev/sdc", 0, examine, "").record(
        "mdadm --examine --export /dev/sdd",
        0,
        examine,
        "",
    );
    let (_d, host) = plain_host(&["/dev/sdc", "/dev/sdd"], runner);
    let a = raid(&["/dev/sdc", "/dev/sdd"]).assess(&host).await.unwrap();
    assert_eq!(shown(&a)[0], "mdadm --assemble /dev/md0 /dev/sdc /dev/sdd");
}

#[tokio::test]
async fn persisting_replaces_the_array_line() {
    let brief = "ARRAY /dev/md0 metadata=1.2 name=oss00:0 UUID=3b1e8a44:0c4f7d52:8f2e6b3a:1d9c0e7f\n";
    let runner = RecordedRunner::new().record("mdadm --detail --brief /dev/md0", 0, brief, "");
    let (dir, host) = plain_host(&[], runner);
    std::fs::create_dir_all(dir.path().join("etc/mdadm")).unwrap();
    std::fs::write(dir.path().join("etc/mdadm/mdadm.conf"), "HOMEHOST <system>\nARRAY /dev/md0 UUID=old\n")
        .unwrap();
    let action = Action::PersistMdadm { device: "/dev/md0".into(), conf: "/etc/mdadm/mdadm.conf".into() };
    let mut ran = Vec::new();
    crate::exec::perform(&action, &host, &mut |r: &crate::CommandRecord| ran.push(r.command.clone()))
        .await
        .unwrap();
    assert_eq!(ran, ["mdadm --detail --brief /dev/md0"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("etc/mdadm/mdadm.conf")).unwrap(),
        format!("HOMEHOST <system>\n{brief}")
    );
}

fn thin() -> LvmThin {
    LvmThin {
        pv: "/dev/md0".into(),
        vg: "rhgs-data".into(),
        pool: "brickpool".into(),
        pool_size: "9216g".into(),
        chunk: Some("256K".into()),
        lv: "brick1".into(),
        virtual_size: "9216g".into(),
        data_alignment: Some("1024K".into()),
        extent_size: Some("256K".into()),
        zero: false,
        wipe: false,
    }
}

#[tokio::test]
async fn lvm_thin_from_nothing_is_the_seed_sequence() {
    // lvm2 2.03.16: a missing PV/VG is an empty report, exit 5 (verified live, setup-anchors §2f).
    let runner = RecordedRunner::new()
        .record("pvs --reportformat json -o pv_name,vg_name /dev/md0", 5, "  {\n      \"report\": [\n          {\n              \"pv\": [\n              ]\n          }\n      ]\n  }\n", "  Failed to find physical volume \"/dev/md0\".\n")
        .record("blkid -p -o export /dev/md0", 2, "", "")
        .record("wipefs --no-act -- /dev/md0", 0, "", "")
        .record("vgs --reportformat json -o vg_name rhgs-data", 5, "{\"report\":[{\"vg\":[]}]}", "  Volume group \"rhgs-data\" not found\n")
        .record("lvs --reportformat json --binary -o lv_name,segtype,pool_lv,zero rhgs-data", 5, "{\"report\":[{\"lv\":[]}]}", "  Volume group \"rhgs-data\" not found\n");
    let (_d, host) = host_with(&["/dev/md0"], runner);
    let a = thin().assess(&host).await.unwrap();
    assert_eq!(
        shown(&a),
        [
            "pvcreate --dataalignment 1024K -- /dev/md0",
            "vgcreate --physicalextentsize 256K -- rhgs-data /dev/md0",
            "lvcreate -L 9216g -T -c 256K -- rhgs-data/brickpool",
            "lvchange --zero n -- rhgs-data/brickpool",
            "lvcreate -V 9216g -T -n brick1 -- rhgs-data/brickpool",
        ]
    );
}

#[tokio::test]
async fn a_physical_volume_in_no_group_gets_only_its_group() {
    // `pvs --reportformat json` (lvm2 2.03, Amazon Linux 2023) for a PV in no volume group, as
    // posted in amazonlinux/amazon-linux-2023#698: indented, and `"vg_name":""`.
    let pvs = "  {\n      \"report\": [\n          {\n              \"pv\": [\n                  {\"pv_name\":\"/dev/md0\", \"vg_name\":\"\"}\n              ]\n          }\n      ]\n  }\n";
    let runner = RecordedRunner::new()
        .record("pvs --reportformat json -o pv_name,vg_name /dev/md0", 0, pvs, "")
        .record(
            "vgs --reportformat json -o vg_name rhgs-data",
            5,
            "{\"report\":[{\"vg\":[]}]}",
            "  Volume group \"rhgs-data\" not found\n",
        )
        .record(
            "lvs --reportformat json --binary -o lv_name,segtype,pool_lv,zero rhgs-data",
            5,
            "{\"report\":[{\"lv\":[]}]}",
            "  Volume group \"rhgs-data\" not found\n",
        );
    let (_d, host) = plain_host(&["/dev/md0"], runner);
    let a = thin().assess(&host).await.unwrap();
    assert_eq!(
        shown(&a)[0],
        "vgcreate --physicalextentsize 256K -- rhgs-data /dev/md0",
        "no pvcreate: {:?}",
        shown(&a)
    );
}

#[tokio::test]
async fn an_lvm2_without_json_reports_says_which_version_is_needed() {
    // lvm2 before 2.02.158 (EL7.0-7.2): getopt refuses the option, lvm exits 3 (EINVALID_CMD_LINE).
    let runner = RecordedRunner::new().record(
        "pvs --reportformat json -o pv_name,vg_name /dev/md0",
        3,
        "",
        "pvs: unrecognized option '--reportformat'\n  Error during parsing of command line.\n",
    );
    let (_d, host) = plain_host(&["/dev/md0"], runner);
    let err = thin().assess(&host).await.unwrap_err();
    assert!(err.to_string().contains("needs lvm2 2.02.158 or later"), "{err}");
}

#[tokio::test]
async fn lvm_thin_in_place_is_in_sync_and_a_foreign_vg_is_refused() {
    let lvs = r#"{"report":[{"lv":[{"lv_name":"brickpool","segtype":"thin-pool","pool_lv":"","zero":"0"},{"lv_name":"brick1","segtype":"thin","pool_lv":"brickpool","zero":"0"}]}]}"#;
    let runner = RecordedRunner::new()
        .record(
            "pvs --reportformat json -o pv_name,vg_name /dev/md0",
            0,
            r#"{"report":[{"pv":[{"pv_name":"/dev/md0","vg_name":"rhgs-data"}]}]}"#,
            "",
        )
        .record(
            "vgs --reportformat json -o vg_name rhgs-data",
            0,
            r#"{"report":[{"vg":[{"vg_name":"rhgs-data"}]}]}"#,
            "",
        )
        .record("lvs --reportformat json --binary -o lv_name,segtype,pool_lv,zero rhgs-data", 0, lvs, "");
    let (_d, host) = plain_host(&["/dev/md0"], runner);
    assert!(thin().assess(&host).await.unwrap().is_in_sync());

    let runner = RecordedRunner::new().record(
        "pvs --reportformat json -o pv_name,vg_name /dev/md0",
        0,
        r#"{"report":[{"pv":[{"pv_name":"/dev/md0","vg_name":"vg_db"}]}]}"#,
        "",
    );
    let (_d, host) = plain_host(&["/dev/md0"], runner);
    let err = thin().assess(&host).await.unwrap_err();
    assert!(err.to_string().contains("already a physical volume of volume group vg_db"), "{err}");
}

/// A storage server's sysfs as the kernel lays it out: `md10`, a RAID0 over two Azure data
/// disks named by their lun links (relative links, as udev makes them). The array is
/// bio-based: its `queue/scheduler` reads `none` with nothing to choose (elv_iosched_show in
/// block/elevator.c prints "none" for a queue without an elevator) and writing its
/// `nr_requests` fails with EINVAL (queue_requests_store in block/blk-sysfs.c); raid0_run
/// (drivers/md/raid0.c) raised its read-ahead to two stripes (2 × 2 disks × 512 KiB). The
/// disks are blk-mq SCSI disks as EL8's 4.18 kernel shows them.
fn storage_server(
    disk_scheduler: &str,
    disk_nr_requests: &str,
) -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
    let (dir, host) = plain_host(&["/dev/md10", "/dev/sdc", "/dev/sdd"], RecordedRunner::new());
    let put = |path: &str, text: &str| {
        let p = dir.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    std::fs::create_dir_all(dir.path().join("dev/disk/azure/scsi1")).unwrap();
    for (lun, sd) in [("lun0", "sdc"), ("lun1", "sdd")] {
        std::os::unix::fs::symlink(
            format!("../../../{sd}"),
            dir.path().join("dev/disk/azure/scsi1").join(lun),
        )
        .unwrap();
        put(&format!("/sys/block/{sd}/queue/scheduler"), disk_scheduler);
        put(&format!("/sys/block/{sd}/queue/nr_requests"), disk_nr_requests);
        put(&format!("/sys/block/{sd}/queue/read_ahead_kb"), "128\n");
    }
    put("/sys/block/md10/md/level", "raid0\n");
    put("/sys/block/md10/queue/scheduler", "none\n");
    put("/sys/block/md10/queue/nr_requests", "128\n");
    put("/sys/block/md10/queue/read_ahead_kb", "2048\n");
    std::fs::create_dir_all(dir.path().join("etc/udev/rules.d")).unwrap();
    (dir, host)
}

/// Seed Table 11 on an EL8 storage server: 4096 requests on mq-deadline, 32 MiB read-ahead.
fn table_11() -> Step {
    Step::BlockQueue(BlockQueue {
        device: "/dev/md10".into(),
        members: vec!["/dev/disk/azure/scsi1/lun0".into(), "/dev/disk/azure/scsi1/lun1".into()],
        scheduler: Some("deadline".into()),
        nr_requests: Some(4096),
        read_ahead_kb: Some(32768),
    })
}

#[tokio::test]
async fn queue_tuning_goes_to_the_member_disks_clamped_and_persisted() {
    let (dir, host) = storage_server("[mq-deadline] kyber bfq none\n", "256\n");
    let step = table_11();
    let Outcome::WouldChange { diff, would_run } =
        execute(&step, &host, &crate::Unguarded, true, |_| {}).await
    else {
        panic!()
    };
    assert_eq!(
        diff,
        [
            "/dev/md10 read_ahead_kb is 2048, not 32768",
            "/dev/disk/azure/scsi1/lun0 (sdc) nr_requests is 256, not 2048 (4096 asked; the kernel takes at most 2048 with the mq-deadline scheduler)",
            "/dev/disk/azure/scsi1/lun0 (sdc) read_ahead_kb is 128, not 32768",
            "/dev/disk/azure/scsi1/lun1 (sdd) nr_requests is 256, not 2048 (4096 asked; the kernel takes at most 2048 with the mq-deadline scheduler)",
            "/dev/disk/azure/scsi1/lun1 (sdd) read_ahead_kb is 128, not 32768",
            "/etc/udev/rules.d/99-pvfs-queue-md10.rules does not exist: the settings would not survive a reboot",
        ]
    );
    // Nothing is asked of the array but read-ahead: md has no scheduler, and EINVAL for
    // nr_requests.
    assert!(
        would_run
            .iter()
            .all(|a| !a.contains("md10/queue/scheduler") && !a.contains("md10/queue/nr_requests"))
    );
    assert_eq!(
        would_run,
        [
            "echo 32768 > /sys/block/md10/queue/read_ahead_kb",
            "echo 2048 > /sys/block/sdc/queue/nr_requests",
            "echo 32768 > /sys/block/sdc/queue/read_ahead_kb",
            "echo 2048 > /sys/block/sdd/queue/nr_requests",
            "echo 32768 > /sys/block/sdd/queue/read_ahead_kb",
            "write /etc/udev/rules.d/99-pvfs-queue-md10.rules",
        ]
    );
    assert!(matches!(execute(&step, &host, &crate::Unguarded, false, |_| {}).await, Outcome::Changed { .. }));
    assert_eq!(std::fs::read_to_string(dir.path().join("sys/block/sdc/queue/nr_requests")).unwrap(), "2048");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("etc/udev/rules.d/99-pvfs-queue-md10.rules")).unwrap(),
        "# Written by pvfs (block-queue of /dev/md10): the queue settings it made, applied again at boot.\n\
         ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"md10\", ATTR{queue/read_ahead_kb}=\"32768\"\n\
         ACTION==\"add|change\", SUBSYSTEM==\"block\", ENV{DEVTYPE}==\"disk\", SYMLINK==\"disk/azure/scsi1/lun0\", ATTR{queue/scheduler}=\"mq-deadline\", ATTR{queue/nr_requests}=\"2048\", ATTR{queue/read_ahead_kb}=\"32768\"\n\
         ACTION==\"add|change\", SUBSYSTEM==\"block\", ENV{DEVTYPE}==\"disk\", SYMLINK==\"disk/azure/scsi1/lun1\", ATTR{queue/scheduler}=\"mq-deadline\", ATTR{queue/nr_requests}=\"2048\", ATTR{queue/read_ahead_kb}=\"32768\"\n"
    );
    assert_eq!(execute(&step, &host, &crate::Unguarded, false, |_| {}).await, Outcome::Ok { detail: None });
}

/// CentOS 7's single-queue disks list `noop deadline [cfq]` and take the seed's 4096
/// requests as they are; the scheduler is written before nr_requests (a scheduler change
/// resets it).
#[tokio::test]
async fn single_queue_kernels_get_deadline_and_the_full_request_count() {
    let (_dir, host) = storage_server("noop deadline [cfq]\n", "128\n");
    let Step::BlockQueue(q) = table_11() else { unreachable!() };
    let step = Step::BlockQueue(BlockQueue { scheduler: Some("mq-deadline".into()), ..q });
    let Outcome::WouldChange { would_run, .. } = execute(&step, &host, &crate::Unguarded, true, |_| {}).await
    else {
        panic!()
    };
    assert_eq!(
        would_run[1..4],
        [
            "echo deadline > /sys/block/sdc/queue/scheduler",
            "echo 4096 > /sys/block/sdc/queue/nr_requests",
            "echo 32768 > /sys/block/sdc/queue/read_ahead_kb",
        ]
    );
}

#[tokio::test]
async fn a_scheduler_the_kernel_does_not_offer_is_refused_by_name() {
    let (_dir, host) = storage_server("[none] kyber\n", "64\n");
    let Step::BlockQueue(q) = table_11() else { unreachable!() };
    let err = q.assess(&host).unwrap_err();
    assert_eq!(
        err.to_string(),
        "refusing: the kernel offers no deadline scheduler for /dev/disk/azure/scsi1/lun0 (sdc) (it lists: [none] kyber); \
         load its module (modprobe mq-deadline) or set another `scheduler` in the cluster file"
    );
    // Without a scheduler, the device's tag depth (where nr_requests starts) is the limit.
    let step = BlockQueue { scheduler: None, read_ahead_kb: None, ..q.clone() };
    let a = step.assess(&host).unwrap();
    assert!(a.diff.iter().all(|d| !d.contains("nr_requests")), "{:?}", a.diff);
    let (_dir, host) = storage_server("[mq-deadline kyber\n", "64\n");
    let err = q.assess(&host).unwrap_err();
    assert!(matches!(err, StepError::Unexpected { .. }), "{err}");
}

#[test]
fn scheduler_lists_read_as_the_kernel_prints_them() {
    let mq = queue::Schedulers::parse("[mq-deadline] kyber bfq none\n").unwrap();
    assert_eq!((mq.active.as_deref(), mq.multi_queue), (Some("mq-deadline"), true));
    assert_eq!(mq.name_for("deadline"), Some("mq-deadline"));
    assert_eq!(mq.name_for("noop"), Some("none"));
    assert_eq!(mq.name_for("cfq"), None);
    let sq = queue::Schedulers::parse("noop deadline [cfq] ").unwrap();
    assert_eq!((sq.active.as_deref(), sq.multi_queue), (Some("cfq"), false));
    assert_eq!(sq.name_for("mq-deadline"), Some("deadline"));
    let md = queue::Schedulers::parse("none\n").unwrap();
    assert_eq!(md.active.as_deref(), Some("none"));
    for bad in ["", "[a] [b]", "[mq-deadline", "a;b"] {
        assert_eq!(queue::Schedulers::parse(bad), None, "{bad:?}");
    }
}
