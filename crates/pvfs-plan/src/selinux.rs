//! What each file system's documentation says about SELinux, for nodes that enforce it.
//!
//! pvfs never changes SELinux's mode: disabling it takes a reboot and is a site's security
//! decision (the seed scripts ran `setenforce 0` and edited /etc/selinux/config). `pvfsctl
//! up` asks each node for its mode (`NodeFacts::selinux`, from selinuxfs) and warns, naming
//! the node and the document, where the file system's documentation says SELinux should not
//! be enforcing there; the run goes on, and `pvfsctl nodes` shows every node's mode.
//!
//! - **Lustre servers** (MGS, MDS, OSS): the Lustre Operations Manual's "Environmental
//!   Requirements" (InstallingLustre.xml) listed "(Required) Disable Security-Enhanced Linux
//!   (SELinux) on all Lustre servers. The Lustre software does not support SELinux." until the
//!   manual's change for 2.13 (doc/manual.git 8beab6d5, which added "Checking SELinux Policy
//!   Enforced by Lustre Clients" and dropped the requirement). Warned unless `[lustre] version`
//!   pins 2.13 or later (the seed's repositories are 2.9.0). Lustre clients support SELinux
//!   since 2.8 (the same manual's security chapter): no warning.
//! - **BeeGFS servers** (management, metadata, storage): BeeGFS's SELinux page
//!   (doc.beegfs.io, Advanced Topics → SELinux) says "Setting up SELinux on BeeGFS servers is
//!   outside the scope of this guide and not typically recommended for performance reasons".
//!   Clients: no warning (the same page is about labelling on clients).
//! - **GlusterFS**: none; GlusterFS runs with SELinux enforcing (its packages carry its
//!   policy, glusterfs-selinux, on EL), so the mode is only reported.

use pvfs_config::{Cluster, Kind, KindSpec, Node, Role};

/// The warning for `node` when SELinux enforces there, if its file system's documentation
/// says otherwise.
pub fn selinux_warning(cluster: &Cluster, node: &Node, enforcing: bool) -> Option<String> {
    if !enforcing {
        return None;
    }
    match cluster.kind {
        Kind::Lustre if [Role::Mgs, Role::Mds, Role::Oss].iter().any(|r| node.has(*r)) => {
            let version = match &cluster.spec {
                KindSpec::Lustre { version, .. } => version.as_deref(),
                _ => None,
            };
            if version.is_some_and(at_least_2_13) {
                return None;
            }
            Some(format!(
                "SELinux is enforcing on Lustre server {}: the Lustre manual before 2.13 requires it disabled on \
                 servers (\"The Lustre software does not support SELinux\"); pvfs does not change it — set \
                 SELINUX=disabled in /etc/selinux/config and reboot, or pin [lustre] version to 2.13 or later",
                node.name
            ))
        }
        Kind::Beegfs if [Role::Mgmtd, Role::Meta, Role::Storage].iter().any(|r| node.has(*r)) => {
            Some(format!(
                "SELinux is enforcing on BeeGFS server {}: BeeGFS's documentation does not recommend SELinux on \
             servers (\"not typically recommended for performance reasons\"); pvfs does not change it — set \
             SELINUX=disabled (or permissive) in /etc/selinux/config and reboot if the site allows",
                node.name
            ))
        }
        _ => None,
    }
}

/// `2.13`, `2.15.4`, `2.15.4-1.el8` → true; `2.12.9`, `2.9.0` → false; what does not read as
/// MAJOR.MINOR → false (warned, as unknown).
fn at_least_2_13(version: &str) -> bool {
    let mut parts = version.split(['.', '-']);
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    matches!((major, minor), (Some(major), Some(minor)) if (major, minor) >= (2, 13))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_2_13_on_need_no_warning() {
        for (version, want) in [
            ("2.13", true),
            ("2.15.4", true),
            ("2.15.4-1.el8", true),
            ("3.0", true),
            ("2.12.9", false),
            ("2.9.0", false),
            ("x", false),
        ] {
            assert_eq!(at_least_2_13(version), want, "{version}");
        }
    }
}
