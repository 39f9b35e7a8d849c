//! The single-machine kind: a directory per server as its target, the shared directory as
//! every client's mount. Runs anywhere without privileges, so `up` can be shown end to end.

use crate::{CHECK_DEADLINE, Plan};
use pvfs_config::{Cluster, KindSpec, Role};
use pvfs_steps::{Directory, File, Gate, GateKind, Step};

pub(crate) fn plan(cluster: &Cluster, plan: &mut Plan) {
    let KindSpec::Local { mount, targets } = &cluster.spec else { return };
    let mut targets_ready = Vec::new();
    for node in cluster.with_role(Role::Server) {
        let dir = targets.join(&node.name);
        let steps = vec![
            Step::Directory(Directory { path: dir.display().to_string(), mode: 0o755 }),
            // The target's identity, as BeeGFS's format.conf or a Lustre label: what a later
            // run checks before it would reuse the directory.
            Step::File(File {
                path: dir.join("format.conf").display().to_string(),
                contents: format!("# pvfs local target\ncluster = {}\nnode = {}\n", cluster.name, node.name),
                mode: 0o644,
            }),
        ];
        targets_ready.push(plan.add(node, "target", steps, vec![]));
    }
    for node in cluster.with_role(Role::Client) {
        let dir = mount.display().to_string();
        let steps = vec![
            Step::Directory(Directory { path: dir.clone(), mode: 0o755 }),
            Step::Gate(Gate { kind: GateKind::Writable { dir }, deadline: CHECK_DEADLINE }),
        ];
        plan.add(node, "mount", steps, targets_ready.clone());
    }
}
