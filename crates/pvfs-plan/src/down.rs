//! `pvfsctl down`: the plan of `up`, reversed. Every unit of `up` becomes a unit that undoes
//! it — its steps undone in the opposite order, and the unit run after the teardown of every
//! unit that depended on it — so clients unmount before the servers they mount from stop,
//! the gluster volume goes before its peers leave the pool and its bricks unmount, OSTs
//! unmount before the MDT and the MGS, and a node's LNet stops after its targets.
//!
//! What each step becomes:
//! - a mount: unmounted, and its fstab line removed ([`Unmount`]); nothing else is ever
//!   unmounted, since the step names the mount `up` made;
//! - a service: stopped and disabled ([`ServiceStopped`]); stopping `lnet.service` runs its
//!   ExecStop lines, `lustre_rmmod ptlrpc`, `lnetctl lnet unconfigure`, `lustre_rmmod libcfs
//!   ldiskfs` (lustre-release, lustre/scripts/systemd/lnet.service.in), the by-hand sequence,
//!   so LNet goes last on each node, after its targets;
//! - the gluster volume: stopped and deleted; the trusted pool: its peers detached;
//! - a target's storage (RAID0, LVM thin, mkfs, mkfs.lustre): left as it is, unless `wipe`
//!   ([`WipeTarget`]). A rebuild between benchmark runs keeps the arrays and volume groups
//!   assembled: `up` then finds the same array, thin volume and file system and only mounts
//!   them again, and stopping an array would gain nothing but a reassembly. Only a wipe, which
//!   destroys the target for a fresh file system, stops the array (a running array holds its
//!   disks) and deactivates the volume group;
//! - packages, configuration files, directories, queue tuning and gates: nothing (a package
//!   removal is not a teardown; the files are `up`'s to rewrite).
//!
//! Units that have nothing to undo are left out, their ordering passed through to the units
//! around them.

use crate::{Plan, Unit};
use pvfs_config::Cluster;
use pvfs_steps::{GlusterPeersDetached, GlusterVolumeGone, ServiceStopped, Step, Unmount, WipeTarget};

/// The plan that takes `cluster` down; with `wipe`, its targets' disks are destroyed too.
pub fn down(cluster: &Cluster, wipe: bool) -> Plan {
    let up = crate::plan(cluster);
    let n = up.units.len();
    // Down unit `n - 1 - i` undoes up unit `i`: units still only depend on units before them.
    let down_id = |up_id: usize| n - 1 - up_id;
    let mut units: Vec<Unit> = up
        .units
        .iter()
        .rev()
        .map(|u| {
            let mut after: Vec<usize> =
                up.units.iter().filter(|d| d.after.contains(&u.id)).map(|d| down_id(d.id)).collect();
            after.sort_unstable();
            Unit {
                id: down_id(u.id),
                node: u.node.clone(),
                label: u.label.clone(),
                steps: teardown(&u.steps, wipe),
                after,
            }
        })
        .collect();

    // Drop the units with nothing to do; whoever waited for one waits for what it waited for.
    let keep: Vec<bool> = units.iter().map(|u| !u.steps.is_empty()).collect();
    for i in 0..units.len() {
        let mut after: Vec<usize> = Vec::new();
        let mut frontier = units[i].after.clone();
        while let Some(d) = frontier.pop() {
            if keep[d] {
                if !after.contains(&d) {
                    after.push(d);
                }
            } else {
                frontier.extend(units[d].after.iter().copied());
            }
        }
        units[i].after = after;
    }
    let new_id: Vec<Option<usize>> = {
        let mut next = 0;
        keep.iter()
            .map(|&k| {
                k.then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect()
    };
    let mut plan = Plan::default();
    for unit in units.into_iter().filter(|u| keep[u.id]) {
        let mut after: Vec<usize> = unit.after.iter().filter_map(|&d| new_id[d]).collect();
        after.sort_unstable();
        plan.units.push(Unit { id: new_id[unit.id].unwrap_or_default(), after, ..unit });
    }
    // The clients' root ssh goes after each client's own teardown.
    crate::mpi::add_mpi_ssh_gone(cluster, &mut plan);
    plan
}

/// What undoes `steps` (one unit of `up`), in the order it must run.
fn teardown(steps: &[Step], wipe: bool) -> Vec<Step> {
    let mut out = Vec::new();
    // The storage under a target, gathered from the steps that built it: a wipe goes right
    // after the target's unmount, so it comes where the first of them (the RAID0) was.
    let mut disks: Vec<String> = Vec::new();
    let mut array = None;
    let mut vg = None;
    let mut target = None;
    for step in steps {
        match step {
            Step::Raid0(r) => {
                disks = r.members.clone();
                array = Some(r.device.clone());
            }
            Step::LvmThin(l) => {
                if disks.is_empty() {
                    disks = vec![l.pv.clone()];
                }
                vg = Some(l.vg.clone());
            }
            Step::Mkfs(m) if disks.is_empty() => disks = vec![m.device.clone()],
            Step::LustreTarget(t) if disks.is_empty() => disks = vec![t.device.clone()],
            _ => {}
        }
        if matches!(step, Step::Raid0(_) | Step::LvmThin(_) | Step::Mkfs(_) | Step::LustreTarget(_)) {
            target.get_or_insert(out.len());
        }
        // Undone in reverse: collected here in `up`'s order, reversed below.
        out.push(match step {
            Step::Mount(m) => Some(Step::Unmount(Unmount(m.clone()))),
            Step::Service(s) => Some(Step::ServiceStopped(ServiceStopped { unit: s.unit.clone() })),
            Step::GlusterVolume(v) => {
                Some(Step::GlusterVolumeGone(GlusterVolumeGone { name: v.name.clone() }))
            }
            Step::GlusterPeers(p) => {
                Some(Step::GlusterPeersDetached(GlusterPeersDetached { peers: p.peers.clone() }))
            }
            _ => None,
        });
    }
    if wipe
        && let Some(at) = target
        && !disks.is_empty()
    {
        out[at] = Some(Step::WipeTarget(WipeTarget { disks, array, vg }));
    }
    out.into_iter().rev().flatten().collect()
}
