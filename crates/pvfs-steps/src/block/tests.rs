//! Block steps against recorded outputs of the real tools (blkid, wipefs and findmnt recorded on
//! this machine; mdadm and LVM outputs from reference/setup-anchors.md, as md and dm are absent
//! from this kernel).

use super::*;
use crate::{Outcome, Step, execute};
use pvfs_host::{RecordedRunner, Root};

const BLKID_EXT4: &str = "DEVNAME=/dev/loop0\nLABEL=tgt\nUUID=8f780630-8498-4c6c-854b-fa2623ee30e9\nVERSION=1.0\nBLOCK_SIZE=1024\nTYPE=ext4\nUSAGE=filesystem\n";
const WIPEFS_EXT4: &str = "DEVICE OFFSET TYPE UUID                                 LABEL\nloop0  0x438  ext4 8f780630-8498-4c6c-854b-fa2623ee30e9 tgt\n";
const BLKID_XFS: &str = "DEVNAME=/dev/loop0\nLABEL=brick1\nUUID=0b0e8c7e-5ad3-4c55-a2b5-95d2d9ff1c39\nBLOCK_SIZE=512\nTYPE=xfs\nUSAGE=filesystem\n";

/// A root with device nodes (empty files: only their existence is looked at).
fn host_with(devices: &[&str], runner: RecordedRunner) -> (tempfile::TempDir, Host<RecordedRunner>) {
    let dir = tempfile::tempdir().unwrap();
    for dev in devices {
        let path = dir.path().join(dev.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "").unwrap();
    }
    let host = Host::new(Root::at(dir.path()), runner);
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
        "wipefs --no-act /dev/loop0",
        0,
        "",
        "",
    );
    let (_d, host) = host_with(&["/dev/loop0"], runner);
    let a = brick(false).assess(&host).await.unwrap();
    assert_eq!(a.diff, ["/dev/loop0 has no file system"]);
    assert_eq!(shown(&a), ["mkfs.xfs -K -i size=512 -n size=8192 -L brick1 /dev/loop0"]);
}

#[tokio::test]
async fn mkfs_leaves_the_wanted_file_system_alone() {
    let runner = RecordedRunner::new().record("blkid -p -o export /dev/loop0", 0, BLKID_XFS, "");
    let (_d, host) = host_with(&["/dev/loop0"], runner.clone());
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
        "refusing: /dev/loop0 holds ext4 (LABEL=tgt); pvfs makes file systems only on devices proven empty. \
         If its contents may be destroyed, add \"/dev/loop0\" to this node's `wipe` list in the cluster file"
    );
    let a = brick(true).assess(&host).await.unwrap();
    assert_eq!(shown(&a), ["mkfs.xfs -f -K -i size=512 -n size=8192 -L brick1 /dev/loop0"]);
    assert_eq!(a.diff, ["/dev/loop0 holds ext4 (LABEL=tgt), not xfs (listed under wipe)"]);
}

#[tokio::test]
async fn a_signature_only_wipefs_sees_is_not_empty() {
    let runner = RecordedRunner::new().record("blkid -p -o export /dev/loop0", 2, "", "").record(
        "wipefs --no-act /dev/loop0",
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
    assert!(err.to_string().contains("no device node /dev/loop0"), "{err}");
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
            .record(&format!("wipefs --no-act {dev}"), 0, "", "");
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

/// `mdadm --detail --export /dev/md0` as mdadm 4.2 prints it (Detail.c), members unsorted.
const DETAIL: &str = "MD_LEVEL=raid0\nMD_DEVICES=2\nMD_METADATA=1.2\nMD_UUID=3b1e8a44:0c4f7d52:8f2e6b3a:1d9c0e7f\n\
MD_DEVNAME=0\nMD_NAME=oss00:0\nMD_DEVICE_dev_sdd_ROLE=1\nMD_DEVICE_dev_sdd_DEV=/dev/sdd\nMD_DEVICE_dev_sdc_ROLE=0\nMD_DEVICE_dev_sdc_DEV=/dev/sdc\n";

#[tokio::test]
async fn a_running_raid0_with_the_same_members_is_in_sync() {
    let runner = RecordedRunner::new().record("mdadm --detail --export /dev/md0", 0, DETAIL, "");
    let (dir, host) = host_with(&["/dev/sdc", "/dev/sdd"], runner);
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
    let (_d, host) = host_with(&["/dev/sdc", "/dev/sdd"], runner);
    let a = raid(&["/dev/sdc", "/dev/sdd"]).assess(&host).await.unwrap();
    assert_eq!(shown(&a)[0], "mdadm --assemble /dev/md0 /dev/sdc /dev/sdd");
}

#[tokio::test]
async fn persisting_replaces_the_array_line() {
    let brief = "ARRAY /dev/md0 metadata=1.2 name=oss00:0 UUID=3b1e8a44:0c4f7d52:8f2e6b3a:1d9c0e7f\n";
    let runner = RecordedRunner::new().record("mdadm --detail --brief /dev/md0", 0, brief, "");
    let (dir, host) = host_with(&[], runner);
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
        .record("wipefs --no-act /dev/md0", 0, "", "")
        .record("vgs --reportformat json -o vg_name rhgs-data", 5, "{\"report\":[{\"vg\":[]}]}", "  Volume group \"rhgs-data\" not found\n")
        .record("lvs --reportformat json --binary -o lv_name,segtype,pool_lv,zero rhgs-data", 5, "{\"report\":[{\"lv\":[]}]}", "  Volume group \"rhgs-data\" not found\n");
    let (_d, host) = host_with(&["/dev/md0"], runner);
    let a = thin().assess(&host).await.unwrap();
    assert_eq!(
        shown(&a),
        [
            "pvcreate --dataalignment 1024K /dev/md0",
            "vgcreate --physicalextentsize 256K rhgs-data /dev/md0",
            "lvcreate -L 9216g -T rhgs-data/brickpool -c 256K",
            "lvchange --zero n rhgs-data/brickpool",
            "lvcreate -V 9216g -T rhgs-data/brickpool -n brick1",
        ]
    );
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
    let (_d, host) = host_with(&["/dev/md0"], runner);
    assert!(thin().assess(&host).await.unwrap().is_in_sync());

    let runner = RecordedRunner::new().record(
        "pvs --reportformat json -o pv_name,vg_name /dev/md0",
        0,
        r#"{"report":[{"pv":[{"pv_name":"/dev/md0","vg_name":"vg_db"}]}]}"#,
        "",
    );
    let (_d, host) = host_with(&["/dev/md0"], runner);
    let err = thin().assess(&host).await.unwrap_err();
    assert!(err.to_string().contains("already a physical volume of volume group vg_db"), "{err}");
}

#[tokio::test]
async fn queue_settings_are_written_and_then_in_sync() {
    let (dir, host) = host_with(&["/dev/md0"], RecordedRunner::new());
    let queue = dir.path().join("sys/block/md0/queue");
    std::fs::create_dir_all(&queue).unwrap();
    std::fs::write(queue.join("scheduler"), "[none] mq-deadline\n").unwrap();
    std::fs::write(queue.join("nr_requests"), "128\n").unwrap();
    std::fs::write(queue.join("read_ahead_kb"), "128\n").unwrap();
    let step = Step::BlockQueue(BlockQueue {
        device: "/dev/md0".into(),
        scheduler: Some("deadline".into()),
        nr_requests: Some(4096),
        read_ahead_kb: Some(32768),
    });
    let Outcome::WouldChange { diff, would_run } =
        execute(&step, &host, &crate::Policy::default(), true, |_| {}).await
    else {
        panic!()
    };
    assert_eq!(
        diff,
        [
            "/dev/md0 scheduler is none, not deadline",
            "/dev/md0 nr_requests is 128, not 4096",
            "/dev/md0 read_ahead_kb is 128, not 32768"
        ]
    );
    assert_eq!(would_run[0], "echo deadline > /sys/block/md0/queue/scheduler");
    // Blk-mq kernels show the seed's "deadline" as mq-deadline: that is in sync.
    std::fs::write(queue.join("scheduler"), "none [mq-deadline]\n").unwrap();
    let Outcome::Changed { diff } = execute(&step, &host, &crate::Policy::default(), false, |_| {}).await
    else {
        panic!()
    };
    assert_eq!(diff.len(), 2);
    assert_eq!(
        execute(&step, &host, &crate::Policy::default(), false, |_| {}).await,
        Outcome::Ok { detail: None }
    );
    assert_eq!(std::fs::read_to_string(queue.join("read_ahead_kb")).unwrap(), "32768");
}
