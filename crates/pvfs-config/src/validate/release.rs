//! What a cluster file's repositories and pins say about the release it installs, where the
//! vendor's published layout lets a rule tell: BeeGFS 8 (whose packages lack what pvfs's BeeGFS
//! plan runs), and Lustre servers from Whamcloud's patched-kernel tree without its kernel, or
//! from its patchless tree with a patched kernel pinned.
//!
//! Both rules read only URLs and pins in Whamcloud's and ThinkParQ's own layouts: a site mirror
//! with another layout says nothing a rule could read, and passes.

use super::Validator;
use crate::model::{Node, Role};
use crate::schema::{ClusterFile, PackagesSection};
use toml::Spanned;

/// The per-role list of `role` in `[packages]`, with positions.
fn raw_list(p: &PackagesSection, role: Role) -> Option<&Vec<Spanned<String>>> {
    match role {
        Role::Mgs => p.mgs.as_ref(),
        Role::Mds => p.mds.as_ref(),
        Role::Oss => p.oss.as_ref(),
        Role::Server => p.server.as_ref(),
        Role::Mgmtd => p.mgmtd.as_ref(),
        Role::Meta => p.meta.as_ref(),
        Role::Storage => p.storage.as_ref(),
        Role::Client => p.client.as_ref(),
    }
}

/// `NAME=VERSION` → (name, version), as `[packages]` writes a pin.
fn pin(item: &str) -> (&str, Option<&str>) {
    match item.split_once('=') {
        Some((name, version)) => (name.trim(), Some(version.trim())),
        None => (item.trim(), None),
    }
}

/// The major version of ThinkParQ's release directory in a URL: `…/release/beegfs_7.4.6/…` →
/// 7, `…/beegfs_8.0/…` → 8 (their repository files and guides name releases so).
fn beegfs_release_major(url: &str) -> Option<u32> {
    url.split('/').find_map(|segment| segment.strip_prefix("beegfs_")?.split('.').next()?.parse().ok())
}

/// Whamcloud's server trees, as downloads.whamcloud.com lays them out
/// (`/public/lustre/lustre-2.15.4/el8.9/server/`): `server` carries the Lustre-patched kernel
/// and modules built for it; `patchless-ldiskfs-server` modules for the distribution's own
/// kernel, and no kernel. The Lustre documentation of the patchless builds: "The patchless
/// LDISKFS server distribution does not include a Linux kernel. Instead, patchless servers will
/// use the kernel distributed with the operating system … replace the string `server` with
/// `patchless-ldiskfs-server` at the end of the `[lustre-server]` `baseurl` string" (Intel
/// Manager for Lustre's upgrade guide, Lustre 2.10.1 and later).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerTree {
    Patched,
    Patchless,
}

fn whamcloud_server_tree(url: &str) -> Option<ServerTree> {
    let rest = url.split_once("://")?.1;
    let (host, path) = rest.split_once('/')?;
    if !["downloads.whamcloud.com", "downloads.hpdd.intel.com"].contains(&host) || !path.contains("lustre/") {
        return None;
    }
    match path.trim_end_matches('/').rsplit('/').next()? {
        "server" => Some(ServerTree::Patched),
        "patchless-ldiskfs-server" => Some(ServerTree::Patchless),
        _ => None,
    }
}

/// A Lustre-patched kernel's release, as Whamcloud names it: `3.10.0-514.el7_lustre`,
/// `4.18.0-513.9.1.el8_lustre`.
fn patched_kernel(version: &str) -> bool {
    version.contains("_lustre")
}

impl Validator<'_> {
    /// BeeGFS 8 is refused where the file names it: a ThinkParQ release directory
    /// `beegfs_8…` (or later) in a repository, or a `beegfs-*` package pinned to 8 or later.
    /// Its packages have no `beegfs-setup-mgmtd` (the management daemon is a new program,
    /// initialised with `beegfs-mgmtd --init`), no `beegfs-ctl` and no `beegfs-check-servers`
    /// (ThinkParQ/beegfs, beegfs.spec at 8.0.1: no mgmtd package, utils `%files` holding only
    /// fsck and the event listener), all of which pvfs's BeeGFS plan runs.
    pub(super) fn beegfs_release(&mut self, file: &ClusterFile) {
        const WHY: &str = "pvfs sets up BeeGFS 7 (7.1 to 7.4): BeeGFS 8's packages have no beegfs-setup-mgmtd, \
                           beegfs-ctl or beegfs-check-servers, which its plan runs";
        for r in &file.repo {
            if let Some(major) = beegfs_release_major(r.baseurl.get_ref()).filter(|m| *m >= 8) {
                self.error(
                    &r.baseurl,
                    format!(
                        "[[repo]] {}: this is BeeGFS {major}'s repository; {WHY}: use a beegfs_7.x release \
                         (https://www.beegfs.io/release/beegfs_7.4.6/…)",
                        r.name.get_ref()
                    ),
                );
            }
        }
        let Some(p) = &file.packages else { return };
        for role in [Role::Mgmtd, Role::Meta, Role::Storage, Role::Client] {
            for item in raw_list(p, role).into_iter().flatten() {
                let (name, version) = pin(item.get_ref());
                let major = version.and_then(|v| v.split(['.', '-']).next()?.parse::<u32>().ok());
                if let Some(major) = major.filter(|m| *m >= 8 && name.starts_with("beegfs")) {
                    self.error(
                        item,
                        format!("[packages] {}: {name} {major}.x is BeeGFS {major}; {WHY}", role.as_str()),
                    );
                }
            }
        }
    }

    /// Lustre servers installing Whamcloud's prebuilt modules (`kmod-lustre`, which the
    /// default server packages include): from the `server` tree they need its patched kernel
    /// pinned (`kernel = "…_lustre"`, which the node then boots into); from the
    /// `patchless-ldiskfs-server` tree they run the distribution's kernel, and a patched
    /// kernel pinned contradicts it. Each server is checked with the list its plan uses (the
    /// MGS node's `mgs`, another MDS's `mds`, an OSS's `oss`) and the repositories it gets.
    pub(super) fn lustre_server_trees(&mut self, file: &ClusterFile, nodes: &[Node]) {
        let mut reported = std::collections::HashSet::new();
        for node in nodes {
            let role = if node.roles.contains(&Role::Mgs) {
                Role::Mgs
            } else if node.roles.contains(&Role::Mds) {
                Role::Mds
            } else if node.roles.contains(&Role::Oss) {
                Role::Oss
            } else {
                continue;
            };
            let list = file.packages.as_ref().and_then(|p| raw_list(p, role));
            let items = || list.into_iter().flatten().map(|item| (item, pin(item.get_ref())));
            // Without a list the plan installs the default server packages, kmod-lustre among them.
            let prebuilt = list.is_none() || items().any(|(_, (name, _))| name.starts_with("kmod-lustre"));
            let kernel = items().find(|(_, (name, version))| *name == "kernel" && version.is_some());
            for (i, r) in file.repo.iter().enumerate() {
                let applies = r.roles.is_empty()
                    || r.roles
                        .iter()
                        .any(|w| w.get_ref().parse::<Role>().is_ok_and(|w| node.roles.contains(&w)));
                if !applies || !prebuilt || !reported.insert((i, role)) {
                    continue;
                }
                let url = r.baseurl.get_ref();
                let name = r.name.get_ref();
                let role = role.as_str();
                match (whamcloud_server_tree(url), kernel) {
                    (Some(ServerTree::Patched), None) => self.error(
                        &r.baseurl,
                        format!(
                            "[[repo]] {name} is Whamcloud's server tree, whose kmod-lustre is built for the Lustre-patched \
                             kernel it carries, but [packages] {role} pins no kernel: pin it (kernel = \"VERSION_lustre\", \
                             as the tree names it) and let the servers boot into it, or, for the distribution's own \
                             kernel with no reboot, use the patchless tree: {}",
                            patchless_url(url)
                        ),
                    ),
                    (Some(ServerTree::Patched), Some((item, (_, Some(version))))) if !patched_kernel(version) => {
                        self.error(
                            item,
                            format!(
                                "[packages] {role}: kernel {version} is not a Lustre-patched kernel, but [[repo]] {name} is \
                                 Whamcloud's server tree, whose kmod-lustre is built for its patched kernel \
                                 (VERSION_lustre): pin that kernel, or use the patchless tree {}",
                                patchless_url(url)
                            ),
                        )
                    }
                    (Some(ServerTree::Patchless), Some((item, (_, Some(version))))) if patched_kernel(version) => {
                        self.error(
                            item,
                            format!(
                                "[packages] {role}: kernel {version} is a Lustre-patched kernel, but [[repo]] {name} is \
                                 Whamcloud's patchless tree, whose modules run on the distribution's own kernel: remove \
                                 the kernel pin, or use the server tree for the patched kernel"
                            ),
                        )
                    }
                    _ => {}
                }
            }
        }
    }
}

/// `…/el8.9/server/` → `…/el8.9/patchless-ldiskfs-server/`.
fn patchless_url(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    let base = trimmed.strip_suffix("server").unwrap_or(trimmed);
    format!("{base}patchless-ldiskfs-server/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_directories_and_server_trees_are_read_from_the_vendors_layouts() {
        assert_eq!(beegfs_release_major("https://www.beegfs.io/release/beegfs_7.4.6/dists/rhel8"), Some(7));
        assert_eq!(beegfs_release_major("https://www.beegfs.io/release/beegfs_8.0/dists/rhel9"), Some(8));
        assert_eq!(beegfs_release_major("https://mirror.example.com/beegfs/rhel8"), None);
        let wc = "https://downloads.whamcloud.com/public/lustre/lustre-2.15.4/el8.9";
        assert_eq!(whamcloud_server_tree(&format!("{wc}/server/")), Some(ServerTree::Patched));
        assert_eq!(whamcloud_server_tree(&format!("{wc}/server")), Some(ServerTree::Patched));
        assert_eq!(
            whamcloud_server_tree(&format!("{wc}/patchless-ldiskfs-server/")),
            Some(ServerTree::Patchless)
        );
        assert_eq!(whamcloud_server_tree(&format!("{wc}/client/")), None);
        assert_eq!(whamcloud_server_tree("https://mirror.example.com/lustre/el8/server/"), None);
        assert_eq!(patchless_url(&format!("{wc}/server/")), format!("{wc}/patchless-ldiskfs-server/"));
    }
}
