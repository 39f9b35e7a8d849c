//! A server's disks → (RAID0) → (LVM thin) → file system → mount: the steps every kind shares.

use pvfs_config::{Node, Target};
use pvfs_steps::{BlockQueue, LvmThin, Mkfs, Mount, Raid0, Step};
use std::path::PathBuf;

/// The block device a target's file system goes on, and the steps that make it.
pub(crate) struct Device {
    pub steps: Vec<Step>,
    pub path: String,
    /// Packages the layout needs (mdadm, lvm2).
    pub tools: Vec<&'static str>,
    /// Every disk under it may be wiped (so stale signatures on the new device may be too).
    pub wipe: bool,
}

/// RAID0 of the target's disks when there are several, then an LVM thin volume when
/// configured.
pub(crate) fn device(node: &Node, disks: &[PathBuf], target: &Target) -> Device {
    let wipe = !disks.is_empty() && disks.iter().all(|d| node.may_wipe(d));
    let disks: Vec<String> = disks.iter().map(|d| d.display().to_string()).collect();
    let mut steps = Vec::new();
    let mut tools = Vec::new();
    let mut path = disks.first().cloned().unwrap_or_default();
    if disks.len() > 1 {
        steps.push(Step::Raid0(Raid0 {
            device: target.raid.clone(),
            members: disks.clone(),
            chunk_kib: target.raid_chunk_kib,
            wipe: node.wipe.iter().map(|w| w.display().to_string()).filter(|w| disks.contains(w)).collect(),
            conf: None,
        }));
        tools.push("mdadm");
        path = target.raid.clone();
    }
    if let Some(lvm) = &target.lvm {
        let thin = LvmThin {
            pv: path,
            vg: lvm.vg.clone(),
            pool: lvm.pool.clone(),
            pool_size: lvm.pool_size.clone(),
            chunk: lvm.chunk.clone(),
            lv: lvm.lv.clone(),
            virtual_size: lvm.virtual_size.clone(),
            data_alignment: lvm.data_alignment.clone(),
            extent_size: lvm.extent_size.clone(),
            zero: lvm.zero,
            wipe,
        };
        path = thin.device();
        steps.push(Step::LvmThin(thin));
        tools.push("lvm2");
    }
    Device { steps, path, tools, wipe }
}

/// Queue tuning of the device under the file system and, for a RAID0, of its member disks:
/// the array has no request queue of its own, so the scheduler and `nr_requests` of the
/// seed's Tables 11–12 go to the disks (as BeeGFS's tuning guide applies them), and
/// read-ahead to both (see `pvfs_steps::BlockQueue`).
pub(crate) fn queue(disks: &[PathBuf], target: &Target) -> Option<Step> {
    let q = target.queue.as_ref()?;
    let (device, members) = if disks.len() > 1 {
        (target.raid.clone(), disks.iter().map(|d| d.display().to_string()).collect())
    } else {
        (disks.first()?.display().to_string(), Vec::new())
    };
    Some(Step::BlockQueue(BlockQueue {
        device,
        members,
        scheduler: q.scheduler.clone(),
        nr_requests: q.nr_requests,
        read_ahead_kb: q.read_ahead_kb,
    }))
}

/// The whole stack for an xfs/ext4 target: device, mkfs, mount (with fstab), queue tuning.
/// Returns the steps and the packages they need.
pub(crate) fn filesystem(node: &Node, disks: &[PathBuf], target: &Target) -> (Vec<Step>, Vec<&'static str>) {
    let Device { mut steps, path, mut tools, wipe } = device(node, disks, target);
    let path_str = target.path.display().to_string();
    steps.push(Step::Mkfs(Mkfs {
        device: path.clone(),
        fstype: target.fs.clone(),
        options: target.mkfs_options.clone(),
        label: target.label.clone(),
        wipe,
    }));
    steps.push(Step::Mount(Mount {
        source: path,
        target: path_str,
        fstype: target.fs.clone(),
        options: target.mount_options.clone(),
        fstab: true,
    }));
    steps.extend(queue(disks, target));
    tools.push(if target.fs == "xfs" { "xfsprogs" } else { "e2fsprogs" });
    (steps, tools)
}
