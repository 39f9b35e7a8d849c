//! The validation pass: everything serde cannot check, every error collected.

mod azure;
mod release;

use crate::diagnostic::{Diagnostic, Source};
use crate::grammar;
use crate::load::{Context, Incomplete};
use crate::model::{
    Address, BeegfsAuth, Bench, Cluster, Firewall, Kind, KindSpec, Layout, Lvm, Node, Packages, Queue, Repo,
    Role, Stripe, Target,
};
use crate::schema::{
    BeegfsSection, BenchSection, ClusterFile, GlusterfsSection, LocalSection, LustreSection, NodeSpec,
    StripeSection, TargetSection,
};
use crate::suggest::closest;
use pvfs_host::local_file::{self, Cap};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Why the mpi launcher cannot drop caches between phases (the CLI says the same).
pub const DROP_CACHES_UNDER_MPI: &str = "drop_caches needs the agents launcher: the mpi launcher runs every phase inside one MPI job, which pvfs cannot stop between phases to drop caches (engine io500 drops the clients' caches itself: drop_caches = \"clients\")";

/// The most of a `[[repo]] gpgkey_file` read: an armored key is a few KiB, a keyring with
/// every subkey and signature rarely over a few hundred.
const SIGNING_KEY: Cap = Cap { what: "a repository signing key", bytes: 1 << 20 };

/// The most of `[beegfs] auth_secret` read; the secret itself is 32 to 4096 bytes (checked
/// below, with how to make one), this only keeps a wrong file from being read whole.
const BEEGFS_SECRET: Cap = Cap { what: "a BeeGFS shared secret", bytes: 64 << 10 };

/// Checks `file` (read from `path`, whose text is `source`) and returns the validated
/// cluster with the nodes left without an address (see [`Addresses`]), or `None` with the
/// reasons pushed to `diagnostics`.
pub(crate) fn validate(
    path: &Path,
    source: &Source<'_>,
    file: ClusterFile,
    incomplete: &Incomplete,
    context: &Context<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<(Cluster, Vec<String>)> {
    let base = path.parent().unwrap_or(Path::new("."));
    let mut v = Validator {
        source,
        diagnostics,
        base,
        path,
        incomplete,
        context,
        state: None,
        unaddressed: Vec::new(),
    };

    let name = file.cluster.name.get_ref().clone();
    // A [cluster] that did not deserialize stands in empty: its error is reported, and the
    // rest is checked without a kind.
    let cluster_broken = incomplete.section("cluster");
    if !cluster_broken && !is_simple_name(&name) {
        v.error(
            &file.cluster.name,
            "cluster name must be letters, digits, '-', '_' or '.' (it labels reports and metrics)",
        );
    }
    let kind = match file.cluster.kind.get_ref().parse::<Kind>() {
        Ok(kind) => Some(kind),
        Err(()) if cluster_broken => None,
        Err(()) => {
            let given = file.cluster.kind.get_ref();
            let names: Vec<&'static str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
            let hint = closest(given, &names).map(|k| format!("; did you mean {k:?}?")).unwrap_or_default();
            v.error(
                &file.cluster.kind,
                format!("unknown kind {given:?}: expected one of {}{hint}", names.join(", ")),
            );
            None
        }
    };

    let firewall = match &file.cluster.firewall {
        None => Firewall::Open,
        Some(given) => match Firewall::ALL.iter().find(|f| f.as_str() == given.get_ref()) {
            Some(firewall) => *firewall,
            None => {
                v.error(
                    given,
                    format!(
                        "firewall = {:?}: use \"open\" (pvfs opens the file system's ports in firewalld) or \"leave\" \
                         (pvfs changes no firewall)",
                        given.get_ref()
                    ),
                );
                Firewall::Open
            }
        },
    };
    v.check(&file.tls.dir, |dir| grammar::no_control("[tls] dir", dir));
    let spec = kind.and_then(|kind| v.kind_spec(kind, &file));
    let nodes = v.nodes(kind, &file);
    if let Some(kind) = kind {
        v.cross_checks(kind, spec.as_ref(), &file, &nodes);
    }
    let azure = v.azure(kind, &file, &nodes);
    let clients = nodes.iter().filter(|(node, _)| node.roles.contains(&Role::Client)).count();
    let nodes: Vec<Node> = nodes.into_iter().map(|(node, _)| node).collect();
    let bench = v.bench(&file, clients);
    let packages = v.packages(kind, &file);
    let repos = v.repos(kind, &file);
    let policy = v.policy(kind, &file, &nodes);
    match kind {
        Some(Kind::Beegfs) => v.beegfs_release(&file),
        Some(Kind::Lustre) => v.lustre_server_trees(&file, &nodes),
        _ => {}
    }
    let unaddressed = std::mem::take(&mut v.unaddressed);

    let cluster = Cluster {
        source: path.to_owned(),
        name,
        kind: kind?,
        nodes,
        tls_dir: base.join(file.tls.dir.get_ref()),
        spec: spec?,
        bench,
        packages,
        repos,
        azure,
        policy,
        firewall,
    };
    Some((cluster, unaddressed))
}

/// `[lustre] lnet`: an LNet network (`tcp`, `tcp1`, `o2ib`), optionally pinned to an
/// interface the way lnet's `networks=` module option writes it (`tcp(eth0)`, `o2ib0(ib0)`).
/// One network and one interface: the form pvfs writes to lnet.conf and derives NIDs from.
pub(crate) fn parse_lnet(text: &str) -> Result<(String, Option<String>), String> {
    let hint = "use \"tcp\" or \"o2ib\" (optionally numbered, e.g. \"tcp1\"), pinned to an interface as \"tcp(eth0)\"";
    let (net, interface) = match text.split_once('(') {
        None => (text, None),
        Some((net, rest)) => {
            let Some(interface) = rest.strip_suffix(')') else {
                return Err(format!("LNet network {text:?} opens '(' without closing it: {hint}"));
            };
            // Linux interface names: at most 15 bytes (IFNAMSIZ - 1), no '/', ',', ')' or
            // spaces; one interface, because pvfs derives the node's NID from it.
            let valid = !interface.is_empty()
                && interface.len() <= 15
                && interface.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
            if !valid {
                return Err(format!(
                    "LNet interface {interface:?} in {text:?} is not one interface name (letters, digits, '_', '-', \
                     '.', ':', at most 15): {hint}"
                ));
            }
            (net, Some(interface.to_owned()))
        }
    };
    let kind = net.trim_end_matches(|c: char| c.is_ascii_digit());
    if kind != "tcp" && kind != "o2ib" {
        return Err(format!("unknown LNet network {net:?}: {hint}"));
    }
    Ok((net.to_owned(), interface))
}

/// Defaults of a target section, per kind and role.
struct TargetDefaults {
    raid: &'static str,
    fs: &'static str,
    mkfs_options: &'static [&'static str],
    mount_options: &'static str,
    path: &'static str,
    /// The kind lets `tuning` through (BeeGFS only).
    tuning: bool,
    /// Lustre: mkfs.lustre makes the file system, so `fs`/`mkfs_options` do not apply.
    lustre: bool,
}

struct Validator<'a> {
    source: &'a Source<'a>,
    /// What did not deserialize (already reported): not to be reported again as missing.
    incomplete: &'a Incomplete,
    diagnostics: &'a mut Vec<Diagnostic>,
    /// The cluster file's directory: relative paths in it (`[tls] dir`, BeeGFS's
    /// `auth_secret`) are relative to it.
    base: &'a Path,
    /// The cluster file, as given (its state file is named after it).
    path: &'a Path,
    context: &'a Context<'a>,
    /// The state file, once a node without an address made it needed; `Err` holds why it
    /// could not be read until that is reported (once).
    state: Option<Result<crate::azure::State, Option<String>>>,
    /// Nodes without an address anywhere ([`Addresses::MayBeUnknown`] only).
    unaddressed: Vec<String>,
}

impl Validator<'_> {
    fn error<T>(&mut self, at: &Spanned<T>, message: impl Into<String>) {
        self.error_at(at.span(), message);
    }

    fn error_at(&mut self, span: std::ops::Range<usize>, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::at(self.source, span, message));
    }

    /// Reports `rule`'s refusal of the value at its position; true when the value passes.
    fn check(&mut self, at: &Spanned<String>, rule: impl FnOnce(&str) -> Result<(), String>) -> bool {
        match rule(at.get_ref()) {
            Ok(()) => true,
            Err(message) => {
                self.error(at, message);
                false
            }
        }
    }

    /// The section of `kind`, and an error for every section of another kind.
    fn kind_spec(&mut self, kind: Kind, file: &ClusterFile) -> Option<KindSpec> {
        let others: [(Kind, Option<&Spanned<String>>); 4] = [
            (Kind::Lustre, file.lustre.as_ref().map(|s| &s.mount)),
            (Kind::Glusterfs, file.glusterfs.as_ref().map(|s| &s.mount)),
            (Kind::Beegfs, file.beegfs.as_ref().map(|s| &s.mount)),
            (Kind::Local, file.local.as_ref().map(|s| &s.mount)),
        ];
        for (other, mount) in others {
            if let Some(mount) = mount.filter(|_| other != kind) {
                self.error(mount, format!("[{other}] settings in a cluster of kind {kind:?}: remove the [{other}] section or change the kind", kind = kind.as_str()));
            }
        }
        let missing = |what: &str| format!("kind = \"{kind}\" needs a [{kind}] section ({what})");
        let spec = match kind {
            Kind::Lustre => match &file.lustre {
                Some(s) => self.lustre_spec(s, file),
                None => return self.missing(file, missing("fsname, mount")),
            },
            Kind::Glusterfs => match &file.glusterfs {
                Some(s) => self.glusterfs_spec(s),
                None => return self.missing(file, missing("volume, mount")),
            },
            Kind::Beegfs => match &file.beegfs {
                Some(s) => self.beegfs_spec(s),
                None => return self.missing(file, missing("mount")),
            },
            Kind::Local => match &file.local {
                Some(s) => self.local_spec(s),
                None => return self.missing(file, missing("mount")),
            },
        };
        Some(spec)
    }

    /// `[lustre]`: the file system's name, LNet, striping, the client's lctl settings and the
    /// MDT and OST targets (ldiskfs on `/dev/md0` by default).
    fn lustre_spec(&mut self, s: &LustreSection, file: &ClusterFile) -> KindSpec {
        let fsname = s.fsname.get_ref();
        if fsname.is_empty()
            || fsname.len() > 8
            || fsname.starts_with('-')
            || !fsname.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            self.error(
                &s.fsname,
                "Lustre fsname must be 1 to 8 letters, digits, '_' or '-', not starting with '-'",
            );
        }
        if let Some(version) = &s.version {
            self.check(version, |v| grammar::package_version("lustre", v));
        }
        let (lnet, interface) = match parse_lnet(s.lnet.get_ref()) {
            Ok(parsed) => parsed,
            Err(message) => {
                self.error(&s.lnet, message);
                ("tcp".to_owned(), None)
            }
        };
        let lustre = |path| TargetDefaults {
            raid: "/dev/md0",
            fs: "ldiskfs",
            mkfs_options: &[],
            // As Lustre's manual writes server fstab lines: `_netdev` orders the
            // mount after the network at boot (LNet needs it). No x-systemd.*
            // option: mount.lustre hands options it does not know to the kernel
            // (parse_options in lustre/utils/mount_lustre.c), so the same string
            // given to `mount -o` would reach ldiskfs and fail the mount.
            mount_options: "defaults,_netdev",
            path,
            tuning: false,
            lustre: true,
        };
        let mount = self.absolute(&s.mount);
        let stripe = s.stripe.as_ref().and_then(|st| self.stripe(st, &mount, file));
        let client_lctl =
            s.client.as_ref().and_then(|c| c.lctl.as_ref()).map(|lctl| self.lctl(lctl)).unwrap_or_default();
        KindSpec::Lustre {
            fsname: fsname.clone(),
            mount,
            stripe,
            client_lctl,
            lnet,
            interface,
            version: s.version.as_ref().map(|v| v.get_ref().clone()),
            mdt: self.target(s.mdt.as_ref(), "[lustre.mdt]", &lustre("/mnt/mgsmds")),
            ost: self.target(s.ost.as_ref(), "[lustre.ost]", &lustre("/mnt/oss")),
        }
    }

    /// `[glusterfs]`: the volume, its layout and options, and the brick (XFS with 512-byte
    /// inodes by default).
    fn glusterfs_spec(&mut self, s: &GlusterfsSection) -> KindSpec {
        if !is_simple_name(s.volume.get_ref()) || s.volume.get_ref().starts_with(['-', '.']) {
            self.error(
                &s.volume,
                "volume name must be letters, digits, '-', '_' or '.', not starting with '-' or '.'",
            );
        }
        let layout = self.layout(s);
        let defaults = TargetDefaults {
            raid: "/dev/md0",
            fs: "xfs",
            // Gluster keeps its metadata in xattrs: 512-byte inodes hold them inline.
            mkfs_options: &["-i", "size=512"],
            mount_options: "defaults,inode64,noatime",
            path: "/rhs/brick1",
            tuning: false,
            lustre: false,
        };
        KindSpec::Glusterfs {
            volume: s.volume.get_ref().clone(),
            mount: self.absolute(&s.mount),
            layout,
            options: self.pairs(
                "[glusterfs] options",
                &s.options,
                grammar::gluster_key,
                grammar::gluster_value,
            ),
            brick: self.target(s.brick.as_ref(), "[glusterfs.brick]", &defaults),
        }
    }

    /// `[beegfs]`: the mount, the management directory, the metadata and storage targets (with
    /// BeeGFS's recommended mkfs and mount options), client tuning, authentication, networks.
    fn beegfs_spec(&mut self, s: &BeegfsSection) -> KindSpec {
        // az-cat's names: md20 for metadata, md10 for storage, so both fit one node.
        let meta = TargetDefaults {
            raid: "/dev/md20",
            fs: "ext4",
            // BeeGFS's metadata recommendations: small inodes, large journal.
            mkfs_options: &["-i", "2048", "-I", "512", "-J", "size=400", "-O", "dir_index,filetype"],
            mount_options: "defaults,noatime,nodiratime",
            path: "/data/beegfs/meta",
            tuning: true,
            lustre: false,
        };
        let storage = TargetDefaults {
            raid: "/dev/md10",
            fs: "xfs",
            mkfs_options: &[],
            mount_options: "defaults,noatime,nodiratime,logbufs=8,logbsize=256k,largeio,inode64,swalloc,allocsize=131072k",
            path: "/data/beegfs/storage",
            tuning: true,
            lustre: false,
        };
        KindSpec::Beegfs {
            mount: self.absolute(&s.mount),
            mgmtd_dir: s.mgmtd_dir.as_ref().map_or("/data/beegfs/mgmtd".into(), |d| self.absolute(d)),
            meta: self.target(s.meta.as_ref(), "[beegfs.meta]", &meta),
            storage: self.target(s.storage.as_ref(), "[beegfs.storage]", &storage),
            client_tuning: self.pairs(
                "[beegfs] client_tuning",
                &s.client_tuning,
                grammar::beegfs_key,
                grammar::beegfs_value,
            ),
            auth: self.beegfs_auth(s),
            interfaces: s
                .interfaces
                .iter()
                .filter(|i| self.interface(i))
                .map(|i| i.get_ref().clone())
                .collect(),
            net_filter: s.net_filter.iter().filter(|n| self.cidr(n)).map(|n| n.get_ref().clone()).collect(),
        }
    }

    /// `[local]`: the mount directory and the targets' directory beside it.
    fn local_spec(&mut self, s: &LocalSection) -> KindSpec {
        let mount = self.absolute(&s.mount);
        let targets = match &s.targets {
            Some(t) => self.absolute(t),
            None => mount.parent().unwrap_or(Path::new("/")).join("targets"),
        };
        KindSpec::Local { mount, targets }
    }

    fn missing(&mut self, file: &ClusterFile, message: String) -> Option<KindSpec> {
        // A section that is there but did not deserialize has had its error already.
        if !self.incomplete.section(file.cluster.kind.get_ref()) {
            self.error(&file.cluster.kind, message);
        }
        None
    }

    fn nodes<'f>(&mut self, kind: Option<Kind>, file: &'f ClusterFile) -> Vec<(Node, &'f NodeSpec)> {
        if file.node.is_empty() && !self.incomplete.nodes {
            self.error(
                &file.cluster.name,
                "the cluster has no nodes: add a [[node]] table with name, address and roles for each",
            );
        }
        let mut names: HashMap<&str, usize> = HashMap::new();
        let mut addresses: HashMap<Address, (&str, usize)> = HashMap::new();
        let mut nodes = Vec::new();
        for spec in &file.node {
            let name = spec.name.get_ref().as_str();
            let line = self.line(&spec.name);
            if let Err(message) = grammar::node_name(name) {
                self.error(&spec.name, message);
            } else if let Some(first) = names.insert(name, line) {
                self.error(
                    &spec.name,
                    format!("duplicate node name {name:?} (first defined on line {first})"),
                );
            }

            let address = self.node_address(name, spec, &mut addresses);
            let roles = self.node_roles(kind, name, spec);
            let (disks, meta_disks, wipe) = self.node_disks(kind, name, spec);

            // LNet's tcp NIDs are IPv4 addresses (lnet(7)).
            let lnet_address = spec.lnet_address.as_ref().and_then(|a| {
                if kind.is_some_and(|k| k != Kind::Lustre) {
                    self.error(a, "lnet_address is for Lustre nodes");
                    return None;
                }
                let parsed = a.get_ref().parse::<std::net::Ipv4Addr>();
                if parsed.is_err() {
                    self.error(a, format!("lnet_address {:?} is not an IPv4 address: give the node's address on the interface LNet is pinned to, e.g. \"192.168.10.4\"", a.get_ref()));
                }
                parsed.ok()
            });

            if let Some(address) = address {
                let id = spec.id.as_ref().map(|id| *id.get_ref());
                let reboot = spec.reboot;
                nodes.push((
                    Node {
                        name: name.to_owned(),
                        address,
                        roles,
                        disks,
                        meta_disks,
                        wipe,
                        id,
                        reboot,
                        lnet_address,
                    },
                    spec,
                ));
            }
        }
        nodes
    }

    /// The node's agent address: given, or (with `[azure]`) from the state file; each node's
    /// its own, the first holder named for a second.
    fn node_address<'f>(
        &mut self,
        name: &'f str,
        spec: &NodeSpec,
        addresses: &mut HashMap<Address, (&'f str, usize)>,
    ) -> Option<Address> {
        match &spec.address {
            Some(given) => match given.get_ref().parse::<Address>() {
                Ok(address) => {
                    if let Some((other, first)) = addresses.get(&address) {
                        self.error(given, format!("address {address} is already node {other:?}'s (line {first}); each node needs its own agent address"));
                    } else {
                        addresses.insert(address.clone(), (name, self.line(given)));
                    }
                    Some(address)
                }
                Err(why) => {
                    self.error(given, format!("cannot parse address {:?}: {why}", given.get_ref()));
                    None
                }
            },
            // Only with [azure] (the loader refuses it otherwise): from the state file.
            None => match self.state_address(name, spec) {
                Some(address) => {
                    if let Some((other, first)) = addresses.get(&address) {
                        self.error(&spec.name, format!("node {name:?}'s address {address} in {} is already node {other:?}'s (line {first}); each node needs its own agent address", crate::azure::state_path(self.path).display()));
                    } else {
                        addresses.insert(address.clone(), (name, self.line(&spec.name)));
                    }
                    Some(address)
                }
                None => Some(azure::unknown_address()),
            },
        }
    }

    /// The node's roles: known ones, valid for the kind, each once.
    fn node_roles(&mut self, kind: Option<Kind>, name: &str, spec: &NodeSpec) -> Vec<Role> {
        let mut roles = Vec::new();
        if spec.roles.get_ref().is_empty() {
            self.error(&spec.roles, format!("node {name:?} has no roles; give at least one"));
        }
        for role in spec.roles.get_ref() {
            let given = role.get_ref().as_str();
            let Ok(parsed) = given.parse::<Role>() else {
                let all: Vec<&'static str> = Role::ALL.iter().map(|r| r.as_str()).collect();
                let hint = closest(given, &all).map(|r| format!("; did you mean {r:?}?")).unwrap_or_default();
                self.error(role, format!("unknown role {given:?}: roles are {}{hint}", all.join(", ")));
                continue;
            };
            if let Some(kind) = kind.filter(|k| !k.roles().contains(&parsed)) {
                let valid: Vec<&str> = kind.roles().iter().map(|r| r.as_str()).collect();
                self.error(
                    role,
                    format!("role {given:?} is not valid for kind {kind}: use {}", valid.join(", ")),
                );
            } else if roles.contains(&parsed) {
                self.error(role, format!("role {given:?} is listed twice"));
            } else {
                roles.push(parsed);
            }
        }
        roles
    }

    /// The node's disks, its BeeGFS metadata disks and those marked to wipe: device paths, each
    /// listed once, a wipe only of a listed disk.
    fn node_disks(
        &mut self,
        kind: Option<Kind>,
        name: &str,
        spec: &NodeSpec,
    ) -> (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>) {
        // Sets beside the lists: a node may list thousands of disks, and a list lookup per
        // disk would make the node quadratic.
        let mut disks: Vec<PathBuf> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for disk in &spec.disks {
            if !self.check(disk, |d| grammar::device_path("disk", d)) {
                continue;
            }
            if !seen.insert(disk.get_ref()) {
                self.error(disk, format!("disk {:?} is listed twice for node {name:?}", disk.get_ref()));
            } else {
                disks.push(PathBuf::from(disk.get_ref()));
            }
        }

        let mut meta_disks: Vec<PathBuf> = Vec::new();
        for disk in &spec.meta_disks {
            if kind.is_some_and(|k| k != Kind::Beegfs) {
                self.error(disk, "meta_disks is for BeeGFS nodes that are both meta and storage");
            } else if !self.check(disk, |d| grammar::device_path("meta disk", d)) {
                continue;
            } else if !seen.insert(disk.get_ref()) {
                self.error(
                    disk,
                    format!("meta disk {:?} must be listed once, and not also under `disks`", disk.get_ref()),
                );
            } else {
                meta_disks.push(PathBuf::from(disk.get_ref()));
            }
        }

        let mut wipe = Vec::new();
        for w in &spec.wipe {
            let path = PathBuf::from(w.get_ref());
            if seen.contains(w.get_ref().as_str()) {
                wipe.push(path);
            } else {
                self.error(
                    w,
                    format!(
                        "{:?} is not one of node {name:?}'s disks; `wipe` may only list entries of `disks`",
                        w.get_ref()
                    ),
                );
            }
        }
        (disks, meta_disks, wipe)
    }

    /// The section's target settings over the kind's defaults.
    fn target(&mut self, section: Option<&TargetSection>, place: &str, d: &TargetDefaults) -> Target {
        let empty = TargetSection::default();
        let t = section.unwrap_or(&empty);
        if d.lustre {
            if let Some(fs) = &t.fs {
                self.error(
                    fs,
                    format!("{place}: Lustre targets are made by mkfs.lustre (ldiskfs); remove `fs`"),
                );
            }
            if let Some(opt) = t.mkfs_options.first() {
                self.error(opt, format!("{place}: mkfs_options are not used for Lustre targets"));
            }
        }
        let fs = match &t.fs {
            Some(fs) if !d.lustre && !["xfs", "ext4"].contains(&fs.get_ref().as_str()) => {
                self.error(
                    fs,
                    format!(
                        "{place}: file system {:?} is not supported: use \"xfs\" or \"ext4\"",
                        fs.get_ref()
                    ),
                );
                d.fs.to_owned()
            }
            Some(fs) => fs.get_ref().clone(),
            None => d.fs.to_owned(),
        };
        if !d.lustre {
            // The agent checks the same words against the same allow-list before it runs
            // mkfs; here the refusal gets its file:line:col.
            let words: Vec<String> = t.mkfs_options.iter().map(|o| o.get_ref().clone()).collect();
            for refused in pvfs_host::mkfs_options::check(&fs, &words) {
                self.error(&t.mkfs_options[refused.index], format!("{place}: mkfs_options: {refused}"));
            }
        }
        if let Some(tuning) = t.tuning.as_ref().filter(|_| !d.tuning) {
            self.error(tuning, format!("{place}: `tuning` sets BeeGFS config keys and is only valid in [beegfs.meta] and [beegfs.storage]"));
        }
        let raid = t.raid.as_ref().map_or(d.raid.to_owned(), |r| {
            self.check(r, |r| grammar::md_device(r).map_err(|m| format!("{place}: {m}")));
            r.get_ref().clone()
        });
        if let Some(options) = &t.mount_options {
            self.check(options, |o| grammar::mount_options(o).map_err(|m| format!("{place}: {m}")));
        }
        if let Some(label) = &t.label {
            self.check(label, |l| grammar::label(&fs, l).map_err(|m| format!("{place}: {m}")));
        }
        let lvm = t.lvm.as_ref().map(|l| self.lvm(l, place));
        Target {
            raid,
            raid_chunk_kib: t.raid_chunk_kib,
            lvm,
            fs,
            mkfs_options: if t.mkfs_options.is_empty() && t.fs.is_none() {
                d.mkfs_options.iter().map(|o| o.to_string()).collect()
            } else {
                t.mkfs_options.iter().map(|o| o.get_ref().clone()).collect()
            },
            mount_options: t
                .mount_options
                .as_ref()
                .map_or(d.mount_options.to_owned(), |o| o.get_ref().clone()),
            label: t.label.as_ref().map(|l| l.get_ref().clone()),
            path: t.path.as_ref().map_or(PathBuf::from(d.path), |p| self.absolute(p)),
            queue: t.queue.as_ref().map(|q| {
                if let Some(scheduler) = &q.scheduler {
                    self.check(scheduler, |s| grammar::scheduler(s).map_err(|m| format!("{place}: {m}")));
                }
                if let Some(ra) = &q.read_ahead_kb
                    && ra.get_ref() % 4 != 0
                {
                    self.error(
                        ra,
                        format!(
                            "{place}: read_ahead_kb = {} is not a multiple of 4: the kernel keeps read-ahead in pages, so it would read back as {}",
                            ra.get_ref(),
                            ra.get_ref() / 4 * 4
                        ),
                    );
                }
                Queue {
                    scheduler: q.scheduler.as_ref().map(|s| s.get_ref().clone()),
                    nr_requests: q.nr_requests,
                    read_ahead_kb: q.read_ahead_kb.as_ref().map(|r| *r.get_ref()),
                }
            }),
            tuning: t
                .tuning
                .as_ref()
                .map(|t| self.pairs(place, t.get_ref(), grammar::beegfs_key, grammar::beegfs_value))
                .unwrap_or_default(),
        }
    }

    /// `lvm = { … }`: names by LVM's grammar, sizes as lvcreate takes them.
    fn lvm(&mut self, l: &crate::schema::LvmSection, place: &str) -> Lvm {
        let mut name = |what: &str, at: &Spanned<String>| {
            self.check(at, |n| grammar::lvm_name(what, n).map_err(|m| format!("{place}: {m}")));
            at.get_ref().clone()
        };
        let (vg, pool, lv) =
            (name("volume group", &l.vg), name("thin pool", &l.pool), name("logical volume", &l.lv));
        let mut size = |what: &str, at: &Spanned<String>, share: bool| {
            self.check(at, |v| grammar::lvm_size(what, v, share).map_err(|m| format!("{place}: {m}")));
            at.get_ref().clone()
        };
        Lvm {
            vg,
            pool,
            lv,
            pool_size: size("pool_size", &l.pool_size, true),
            virtual_size: size("virtual_size", &l.virtual_size, false),
            chunk: l.chunk.as_ref().map(|c| size("chunk", c, false)),
            data_alignment: l.data_alignment.as_ref().map(|c| size("data_alignment", c, false)),
            extent_size: l.extent_size.as_ref().map(|c| size("extent_size", c, false)),
            zero: l.zero,
        }
    }

    /// `key = value` settings that become lines of a file or arguments (gluster options,
    /// BeeGFS tuning), each key and value by its grammar; refused pairs are left out.
    fn pairs(
        &mut self,
        place: &str,
        given: &BTreeMap<String, Spanned<String>>,
        key_rule: fn(&str) -> Result<(), String>,
        value_rule: fn(&str, &str) -> Result<(), String>,
    ) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (key, value) in given {
            // The map's keys carry no position of their own: a bad key is shown at its value.
            let ok = self.check(value, |_| key_rule(key).map_err(|m| format!("{place}: {m}")))
                && self.check(value, |v| value_rule(key, v).map_err(|m| format!("{place}: {m}")));
            if ok {
                out.push((key.clone(), value.get_ref().clone()));
            }
        }
        out
    }

    fn layout(&mut self, s: &GlusterfsSection) -> Layout {
        let count = |v: &Option<Spanned<u32>>| v.as_ref().map(|v| *v.get_ref());
        match s.layout.get_ref().as_str() {
            "distribute" => {
                for extra in [&s.replica, &s.disperse, &s.redundancy].into_iter().flatten() {
                    self.error(extra, "only used with layout = \"replicate\" (replica) or \"disperse\" (disperse, redundancy)");
                }
                Layout::Distribute
            }
            "replicate" => match count(&s.replica) {
                Some(replica) if replica >= 2 => Layout::Replicate { replica },
                _ => {
                    let at = s.replica.as_ref().map_or(s.layout.span(), |r| r.span());
                    self.error_at(at, "layout = \"replicate\" needs replica = 2 or more");
                    Layout::Distribute
                }
            },
            "disperse" => match (count(&s.disperse), count(&s.redundancy)) {
                (Some(disperse), Some(redundancy))
                    if disperse >= 3 && redundancy >= 1 && 2 * redundancy < disperse =>
                {
                    Layout::Disperse { disperse, redundancy }
                }
                _ => {
                    self.error_at(
                        s.disperse.as_ref().map_or(s.layout.span(), |d| d.span()),
                        "layout = \"disperse\" needs disperse = N (3 or more) and redundancy = R with 1 <= R < N/2",
                    );
                    Layout::Distribute
                }
            },
            other => {
                self.error(
                    &s.layout,
                    format!("unknown layout {other:?}: use \"distribute\", \"replicate\" or \"disperse\""),
                );
                Layout::Distribute
            }
        }
    }

    /// What needs the whole node list: one MGS, unique IDs, disks where targets need them.
    fn cross_checks(
        &mut self,
        kind: Kind,
        spec: Option<&KindSpec>,
        file: &ClusterFile,
        nodes: &[(Node, &NodeSpec)],
    ) {
        let with = |role: Role| nodes.iter().filter(move |(n, _)| n.has(role)).collect::<Vec<_>>();
        let kind_at = &file.cluster.kind;
        // Roles that must exist exactly once, and roles whose nodes need their own disks.
        let (single, need_disks, numbered): (&[Role], &[Role], &[Role]) = match kind {
            Kind::Lustre => (&[Role::Mgs], &[Role::Mds, Role::Oss, Role::Mgs], &[Role::Mds, Role::Oss]),
            Kind::Glusterfs => (&[], &[Role::Server], &[]),
            Kind::Beegfs => (&[Role::Mgmtd], &[], &[Role::Meta, Role::Storage]),
            Kind::Local => (&[], &[], &[]),
        };
        for &role in single {
            let holders = with(role);
            match holders.as_slice() {
                // A node that did not deserialize may be the one; its error is reported.
                [] if self.incomplete.nodes => {}
                [] => self.error(
                    kind_at,
                    format!("a {kind} cluster needs one node with role {role:?}", role = role.as_str()),
                ),
                [_] => {}
                [_, rest @ ..] => {
                    for (n, spec) in rest {
                        self.error(
                            &spec.roles,
                            format!(
                                "node {:?} is a second {}; a {kind} cluster has exactly one",
                                n.name,
                                role.as_str()
                            ),
                        );
                    }
                }
            }
        }
        let server_role = match kind {
            Kind::Lustre => Role::Oss,
            Kind::Beegfs => Role::Storage,
            _ => Role::Server,
        };
        // A local cluster may be only clients (a set of machines to watch with `top`).
        if kind != Kind::Local && !self.incomplete.nodes && with(server_role).is_empty() {
            self.error(
                kind_at,
                format!("a {kind} cluster needs at least one node with role {:?}", server_role.as_str()),
            );
        }
        for &role in need_disks {
            for (n, spec) in with(role) {
                if n.disks.is_empty() {
                    self.error(&spec.name, format!("node {:?} has role {} but lists no disks; its target needs at least one (`disks = [\"/dev/…\"]`)", n.name, role.as_str()));
                }
            }
        }
        for &role in numbered {
            let holders = with(role);
            let mut seen: HashMap<u32, &str> = HashMap::new();
            for (n, spec) in &holders {
                match (n.id, &spec.id) {
                    (None, _) if holders.len() > 1 => self.error(
                        &spec.name,
                        format!("node {:?}: several nodes are {}, so each needs its own `id` (its {}); pvfs never numbers targets by VM or file order", n.name, role.as_str(), if kind == Kind::Lustre { "target index" } else { "BeeGFS node ID" }),
                    ),
                    (Some(id), Some(at)) => {
                        if kind == Kind::Beegfs && id == 0 {
                            self.error(at, "BeeGFS IDs start at 1");
                        }
                        if let Some(other) = seen.insert(id, &n.name) {
                            self.error(at, format!("id {id} is already node {other:?}'s; every {} needs its own", role.as_str()));
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Some(KindSpec::Glusterfs { layout, .. }) = spec {
            let servers = with(Role::Server).len() as u32;
            let set = match layout {
                Layout::Distribute => 1,
                Layout::Replicate { replica } => *replica,
                Layout::Disperse { disperse, .. } => *disperse,
            };
            if servers > 0 && !self.incomplete.nodes && !servers.is_multiple_of(set) {
                self.error(kind_at, format!("{servers} servers cannot form whole sets of {set} bricks: use a multiple of {set} servers"));
            }
        }
    }

    fn packages(&mut self, kind: Option<Kind>, file: &ClusterFile) -> Packages {
        let Some(p) = &file.packages else { return Packages { manager: "auto".into(), per_role: vec![] } };
        let manager = match &p.manager {
            Some(m) if ["auto", "apt", "dnf", "yum"].contains(&m.get_ref().as_str()) => m.get_ref().clone(),
            Some(m) => {
                self.error(
                    m,
                    format!("unknown package manager {:?}: use auto, apt, dnf or yum", m.get_ref()),
                );
                "auto".into()
            }
            None => "auto".into(),
        };
        let lists = [
            (Role::Mgs, &p.mgs),
            (Role::Mds, &p.mds),
            (Role::Oss, &p.oss),
            (Role::Server, &p.server),
            (Role::Mgmtd, &p.mgmtd),
            (Role::Meta, &p.meta),
            (Role::Storage, &p.storage),
            (Role::Client, &p.client),
        ];
        let mut per_role = Vec::new();
        for (role, list) in lists {
            let Some(list) = list else { continue };
            if let (Some(kind), Some(first)) = (kind, list.first())
                && !kind.roles().contains(&role)
            {
                let role = role.as_str();
                self.error(first, format!("[packages] {role}: there is no role {role} in a {kind} cluster"));
            }
            let mut parsed = Vec::new();
            for item in list {
                let (name, version) = match item.get_ref().split_once('=') {
                    Some((n, v)) => (n.trim().to_owned(), Some(v.trim().to_owned())),
                    None => (item.get_ref().trim().to_owned(), None),
                };
                let checked = grammar::package_name(&name)
                    .and_then(|()| version.as_deref().map_or(Ok(()), |v| grammar::package_version(&name, v)));
                match checked {
                    Ok(()) => parsed.push((name, version)),
                    Err(message) => self.error(item, format!("[packages] {}: {message}", role.as_str())),
                }
            }
            per_role.push((role, parsed));
        }
        Packages { manager, per_role }
    }

    /// `[policy]`: the keys' values as far as the file can judge them (the agent's own rules
    /// judge the rest where the node's policy is built, `pvfs_plan::agent_policy`), the role
    /// tables' names against the kind's roles, and one value per key for a node with several
    /// roles whose tables both set it.
    fn policy(
        &mut self,
        kind: Option<Kind>,
        file: &ClusterFile,
        nodes: &[Node],
    ) -> Option<crate::model::PolicySpec> {
        let table = file.policy.as_ref()?;
        let base = self.policy_keys("[policy]", table);
        let mut roles = BTreeMap::new();
        for (name, sub) in &table.role {
            let what = format!("[policy.role.{name}]");
            if !sub.get_ref().role.is_empty() {
                self.error(
                    sub,
                    format!(
                        "{what} cannot have roles of its own: put every role's table under [policy.role]"
                    ),
                );
            }
            let keys = self.policy_keys(&what, sub.get_ref());
            match name.parse::<Role>() {
                Ok(role) if kind.is_none_or(|k| k.roles().contains(&role)) => {
                    roles.insert(role, (keys, sub.span()));
                }
                Ok(role) => self.error(
                    sub,
                    format!(
                        "{what}: a {} cluster has no {role} nodes; its roles are {}",
                        kind.map_or("", Kind::as_str),
                        kind.map(|k| k.roles().iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", "))
                            .unwrap_or_default()
                    ),
                ),
                Err(()) => self.error(
                    sub,
                    format!(
                        "{what}: unknown role {name:?}; roles are {}",
                        Role::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                ),
            }
        }
        // A node with two roles whose tables disagree on a key would get one of them by
        // the order of its roles: said here, so the file says which.
        for node in nodes {
            let mine: Vec<(&Role, &(crate::model::PolicyKeys, std::ops::Range<usize>))> =
                roles.iter().filter(|(r, _)| node.roles.contains(r)).collect();
            for (i, (ra, (a, span))) in mine.iter().enumerate() {
                for (rb, (b, _)) in &mine[i + 1..] {
                    if let Some(key) = a.conflict(b) {
                        self.error_at(
                            span.clone(),
                            format!(
                                "node {} has roles {ra} and {rb}, whose [policy.role.*] tables set `{key}` differently: \
                                 set it in one of them, or in [policy] for both",
                                node.name
                            ),
                        );
                    }
                }
            }
        }
        let roles = roles.into_iter().map(|(r, (k, _))| (r, k)).collect();
        Some(crate::model::PolicySpec { base, roles })
    }

    fn policy_keys(&mut self, what: &str, t: &crate::schema::PolicyTable) -> crate::model::PolicyKeys {
        let list = |v: &mut Self,
                    key: &str,
                    items: &Option<Vec<Spanned<String>>>,
                    rule: fn(&str) -> Result<(), String>| {
            items.as_ref().map(|items| {
                items
                    .iter()
                    .map(|item| {
                        v.check(item, |s| {
                            grammar::no_control(&format!("{what} {key}"), s).and_then(|()| rule(s))
                        });
                        item.get_ref().clone()
                    })
                    .collect::<Vec<String>>()
            })
        };
        let any = |_: &str| Ok(());
        let device = |s: &str| grammar::device_path("[policy] devices", s.trim_end_matches(['*', '?']));
        let root = |s: &str| {
            grammar::absolute_path("[policy] data_roots", s)?;
            if pvfs_host::paths::is_system(s) {
                return Err(format!(
                    "[policy] data_roots {s:?} is a system tree: a data root must be outside /etc, /usr, /boot …"
                ));
            }
            Ok(())
        };
        crate::model::PolicyKeys {
            kinds: list(self, "kinds", &t.kinds, any),
            devices: list(self, "devices", &t.devices, device),
            data_roots: list(self, "data_roots", &t.data_roots, root),
            repositories: list(self, "repositories", &t.repositories, any),
            services: list(self, "services", &t.services, any),
            refuse_unsigned_repositories: t.refuse_unsigned_repositories.as_ref().map(|b| *b.get_ref()),
            mpi_ssh: t.mpi_ssh.as_ref().map(|b| *b.get_ref()),
            faults: t.faults.as_ref().map(|b| *b.get_ref()),
        }
    }

    fn repos(&mut self, kind: Option<Kind>, file: &ClusterFile) -> Vec<Repo> {
        let mut repos = Vec::new();
        for r in &file.repo {
            if !is_simple_name(r.name.get_ref()) || r.name.get_ref().starts_with(['-', '.']) {
                self.error(&r.name, "repository name must be letters, digits, '-', '_' or '.', not starting with '-' or '.' (it names /etc/yum.repos.d/NAME.repo)");
            }
            let url = r.baseurl.get_ref();
            let allow_http = r.allow_http.as_ref().is_some_and(|a| *a.get_ref());
            let key = self.apt_repo(r);
            // The schemes yum and dnf fetch from (yum.conf(5), baseurl); apt's own transports
            // (sources.list(5), URI SPECIFICATION) less ftp, which apt 1.9 dropped.
            let schemes: &[&str] = if r.suites.is_empty() {
                &["https", "http", "ftp", "file"]
            } else {
                &["https", "http", "file"]
            };
            self.check(&r.baseurl, |u| grammar::url("baseurl", u, schemes));
            if let Some(key) = &r.gpgkey {
                self.check(key, |u| grammar::url("gpgkey", u, &["https", "http", "file"]));
            }
            // The agents refuse these too; saying it here puts the line number on it.
            for (what, value) in [("baseurl", Some(&r.baseurl)), ("gpgkey", r.gpgkey.as_ref())] {
                let Some(value) = value else { continue };
                let v = value.get_ref();
                if v.starts_with("http://") && !allow_http {
                    self.error(
                        value,
                        format!(
                            "{what} {v:?} is plain http, which lets anyone on the path swap the packages: use https, \
                             or add `allow_http = true` to this [[repo]] if you mean it"
                        ),
                    );
                }
            }
            let mut roles = Vec::new();
            for role in &r.roles {
                match role.get_ref().parse::<Role>() {
                    Ok(parsed) if kind.is_none_or(|k| k.roles().contains(&parsed)) => roles.push(parsed),
                    _ => {
                        self.error(role, format!("unknown role {:?} for this cluster's kind", role.get_ref()))
                    }
                }
            }
            repos.push(Repo {
                name: r.name.get_ref().clone(),
                baseurl: url.clone(),
                roles,
                gpgkey: r.gpgkey.as_ref().map(|k| k.get_ref().clone()),
                gpgcheck: r.gpgcheck.as_ref().is_none_or(|g| *g.get_ref()),
                allow_http,
                suites: r.suites.iter().map(|s| s.get_ref().clone()).collect(),
                components: r.components.iter().map(|c| c.get_ref().clone()).collect(),
                key,
            });
        }
        repos
    }

    /// A `[[repo]]`'s apt fields, checked as sources.list(5) takes them; the signing key read
    /// from `gpgkey_file`, which the nodes get in their plan (as `[beegfs] auth_secret` is
    /// shipped), since apt itself fetches no keys.
    fn apt_repo(&mut self, r: &crate::schema::RepoSpec) -> Option<String> {
        let name = r.name.get_ref();
        for suite in &r.suites {
            self.check(suite, |w| grammar::apt_word("suite", w));
        }
        for component in &r.components {
            self.check(component, |w| grammar::apt_word("component", w));
        }
        if r.suites.is_empty() {
            if let Some(component) = r.components.first() {
                self.error(
                    component,
                    format!("[[repo]] {name}: components are for apt repositories; give its suites too, or remove them"),
                );
            }
            if let Some(file) = &r.gpgkey_file {
                self.error(
                    file,
                    format!(
                        "[[repo]] {name}: gpgkey_file is for apt repositories (with suites); a yum/dnf repository \
                         names its key with gpgkey = URL"
                    ),
                );
            }
            return None;
        }
        // sources.list(5): a suite that is an exact path (ends in '/') takes no components;
        // any other needs at least one.
        match (r.suites.iter().find(|s| s.get_ref().ends_with('/')), r.components.first()) {
            (Some(_), Some(component)) => self.error(
                component,
                format!(
                    "[[repo]] {name}: a suite ending in '/' is an exact path, which takes no components \
                     (sources.list(5)): remove components, or name the suite without the '/'"
                ),
            ),
            (None, None) => self.error(
                &r.suites[0],
                format!(
                    "[[repo]] {name}: an apt suite needs components (components = [\"main\"]), or write an exact \
                     path ending in '/'"
                ),
            ),
            _ => {}
        }
        if let Some(key) = &r.gpgkey {
            if !key.get_ref().starts_with("file://") {
                self.error(
                    key,
                    format!(
                        "[[repo]] {name}: apt does not fetch signing keys: save the key next to the cluster file \
                         (`curl -fsSLo {name}.asc URL`, then check its fingerprint) and give gpgkey_file = \"{name}.asc\""
                    ),
                );
            } else if r.gpgkey_file.is_some() {
                self.error(key, format!("[[repo]] {name}: give gpgkey or gpgkey_file, not both"));
            }
        }
        let file = r.gpgkey_file.as_ref()?;
        if !self.check(file, |p| grammar::no_control("gpgkey_file", p)) {
            return None;
        }
        let path = self.base.join(file.get_ref());
        let shown = path.display();
        match local_file::read(&path, SIGNING_KEY).map(String::from_utf8) {
            Ok(Ok(text)) => match grammar::armored_key(&text) {
                Ok(()) => Some(text),
                Err(why) => {
                    self.error(file, format!("{shown}: {why}"));
                    None
                }
            },
            Ok(Err(_)) => {
                self.error(
                    file,
                    format!(
                        "{shown} is not text (a binary keyring?): export it armored with \
                         `gpg --no-default-keyring --keyring {shown} --armor --export > {name}.asc`"
                    ),
                );
                None
            }
            Err(err) => {
                let message = match err.into_io() {
                    Ok(err) => format!(
                        "cannot read the signing key of [[repo]] {name} at {shown}: {err}; save the repository's \
                         ASCII-armored key there, as its publisher ships it"
                    ),
                    Err(refused) => refused.to_string(),
                };
                self.error(file, message);
                None
            }
        }
    }

    fn bench(&mut self, file: &ClusterFile, clients: usize) -> Bench {
        let Some(b) = &file.bench else { return Bench::default() };
        use pvfs_bench::launch::{Engine, Launcher, PairError, runner};
        use pvfs_bench::params::Preset;
        // Each name is parsed here, at its position, rather than by serde, so an unknown one is
        // one of the file's collected errors with its line, in words that list what is known.
        let mut one_of = |value: &Option<Spanned<String>>, what: &str, allowed: &[&str]| {
            let value = value.as_ref()?;
            if allowed.contains(&value.get_ref().as_str()) {
                Some(value.get_ref().clone())
            } else {
                self.error(
                    value,
                    format!("unknown {what} {:?}: use {}", value.get_ref(), allowed.join(", ")),
                );
                None
            }
        };
        let launcher =
            one_of(&b.launcher, "launcher", &["agents", "mpi"]).as_deref().and_then(Launcher::parse);
        let engine = one_of(&b.engine, "engine", &["ior", "builtin", "fio", "io500"])
            .as_deref()
            .and_then(Engine::parse);
        let presets: Vec<&str> = Preset::ALL.iter().map(|p| p.as_str()).collect();
        let preset = one_of(&b.preset, "preset", &presets).as_deref().and_then(|p| Preset::parse(p).ok());
        let drop_caches = one_of(&b.drop_caches, "drop_caches", &["none", "clients", "all"])
            .as_deref()
            .and_then(pvfs_bench::request::DropCaches::parse);
        // The CLI's flags may still change either, so only a pair the file itself names (its
        // engine, under its launcher or the default one) is refused here, at the engine.
        if let (Some(at), Some(Err(err))) =
            (&b.engine, engine.map(|e| runner(e, launcher.unwrap_or_default())))
        {
            self.error(
                at,
                match err {
                    PairError::IorNeedsMpi => {
                        "engine \"ior\" needs launcher = \"mpi\" (IOR is an MPI program); \
                                               with the agents launcher use engine \"builtin\" or \"fio\""
                            .to_owned()
                    }
                    PairError::FioIsNotMpi => {
                        "engine \"fio\" is not an MPI program: use it with launcher = \"agents\"".to_owned()
                    }
                    PairError::Io500NeedsMpi => {
                        "engine \"io500\" needs launcher = \"mpi\" (io500 is an MPI program); with the agents \
                         launcher use engine \"builtin\", which runs the IO500 through the agents"
                            .to_owned()
                    }
                },
            );
        }
        let params = self.bench_params(b, preset, clients);
        // io500 drops caches itself, on its ranks: the clients'.
        let io500_drops =
            engine == Some(Engine::Io500) && drop_caches == Some(pvfs_bench::request::DropCaches::Clients);
        if let (Some(at), Some(Launcher::Mpi), Some(d)) = (&b.drop_caches, launcher, drop_caches)
            && d != pvfs_bench::request::DropCaches::None
            && !io500_drops
        {
            self.error(at, DROP_CACHES_UNDER_MPI.to_owned());
        }
        let mpi_ssh = match &b.mpi_ssh {
            Some(on) if *on.get_ref() => {
                // Root ssh between the clients is a grant; one that nothing can use is refused
                // rather than made.
                if launcher == Some(Launcher::Agents) {
                    self.error(
                        on,
                        "mpi_ssh = true gives root ssh between the clients to mpirun, and this file's \
                         launcher is \"agents\", which needs none: remove mpi_ssh, or use launcher = \"mpi\""
                            .to_owned(),
                    );
                } else if clients < 2 {
                    self.error(
                        on,
                        format!(
                            "mpi_ssh = true gives root ssh between the clients to mpirun, and this cluster has \
                             {clients} client{}: an MPI job on one client needs no ssh; remove mpi_ssh",
                            if clients == 1 { "" } else { "s" }
                        ),
                    );
                }
                true
            }
            _ => false,
        };
        Bench {
            mount: b.mount.as_ref().map(|m| {
                self.check(m, grammar::bench_dir);
                PathBuf::from(m.get_ref())
            }),
            launcher,
            engine,
            preset,
            procs_per_client: b.procs_per_client.as_ref().map(|p| *p.get_ref()),
            params,
            vm_limit_mib: b.vm_limit_mib.as_ref().and_then(|limit| {
                let mib = *limit.get_ref();
                if mib.is_finite() && mib > 0.0 {
                    Some(crate::model::OrderedF64(mib))
                } else {
                    self.error(
                        limit,
                        format!("vm_limit_mib = {mib}: give the VM's limit in MiB/s, a number above 0"),
                    );
                    None
                }
            }),
            mpi_ssh,
            drop_caches,
            io500: b.io500.as_ref().map(|p| {
                self.check(p, grammar::io500_program);
                PathBuf::from(p.get_ref())
            }),
        }
    }

    /// `[bench] params` and `procs_per_client`, checked against the preset they modify (or
    /// "throughput") and the run's size (procs x the file's clients), so a mistake shows here
    /// with its line: each value that does not parse at its own place, a bound or combination
    /// at the parameter it names.
    fn bench_params(
        &mut self,
        b: &BenchSection,
        preset: Option<pvfs_bench::params::Preset>,
        clients: usize,
    ) -> Vec<(String, String)> {
        use pvfs_bench::params::{Preset, total_tasks};
        let mut workload = preset.unwrap_or(Preset::Throughput).workload();
        let mut params = Vec::new();
        let mut parsed = true;
        if let Some(given) = &b.params {
            for (key, value) in given.get_ref() {
                if let Err(err) = workload.assign(key, value.get_ref()) {
                    self.error(value, format!("[bench] params: {err}"));
                    parsed = false;
                }
                params.push((key.clone(), value.get_ref().clone()));
            }
        }
        let procs = b.procs_per_client.as_ref();
        let tasks = match total_tasks(procs.map_or(1, |p| *p.get_ref()), clients.max(1)) {
            Ok(tasks) => tasks,
            Err(v) => {
                if let Some(procs) = procs {
                    self.error(procs, format!("procs_per_client: {v}"));
                }
                return params;
            }
        };
        if !parsed {
            return params;
        }
        let Err(v) = workload.check_run(tasks) else { return params };
        let named = b.params.as_ref().and_then(|given| {
            given.get_ref().iter().find(|(key, _)| workload.field(key) == Some(v.field)).map(
                |(key, value)| (format!("[bench] params: {key} = {:?}: {v}", value.get_ref()), value.span()),
            )
        });
        match (named, procs, &b.params) {
            (Some((message, span)), _, _) => self.error_at(span, message),
            (None, Some(procs), _) if v.field == "tasks" => {
                self.error(procs, format!("procs_per_client: {v} ({clients} clients)"))
            }
            (None, _, Some(given)) => self.error(given, format!("[bench] params: {v}")),
            (None, Some(procs), None) => self.error(procs, format!("procs_per_client: {v}")),
            (None, None, None) => {}
        }
        params
    }

    /// BeeGFS 7.3 and later refuse to start without a `connAuthFile` unless
    /// `connDisableAuthentication = true` (AbstractConfig::initConnAuthHash in
    /// common/source/common/app/config/AbstractConfig.cpp): one of the two is required.
    fn beegfs_auth(&mut self, s: &BeegfsSection) -> BeegfsAuth {
        match (&s.auth_secret, &s.disable_authentication) {
            (Some(_), Some(disable)) if *disable.get_ref() => {
                self.error(disable, "[beegfs]: give auth_secret or disable_authentication = true, not both");
                BeegfsAuth::Disabled
            }
            (Some(secret), _) => {
                if !self.check(secret, |p| grammar::no_control("auth_secret", p)) {
                    return BeegfsAuth::Disabled;
                }
                let path = self.base.join(secret.get_ref());
                let shown = path.display();
                match local_file::read(&path, BEEGFS_SECRET) {
                    Ok(bytes) => match String::from_utf8(bytes) {
                        // BeeGFS hashes the file's first 4 KiB; too short a secret is no secret.
                        Ok(text) if text.trim().len() >= 32 && text.len() <= 4096 && !text.contains('\0') => {
                            BeegfsAuth::Secret(text)
                        }
                        Ok(_) => {
                            self.error(
                                secret,
                                format!(
                                    "{shown}: a BeeGFS shared secret must be 32 to 4096 bytes of text; make one with \
                                     `head -c 48 /dev/urandom | base64 > {shown} && chmod 400 {shown}`"
                                ),
                            );
                            BeegfsAuth::Disabled
                        }
                        Err(_) => {
                            self.error(
                                secret,
                                format!(
                                    "{shown} is not text; pvfs copies the secret as text (`head -c 48 /dev/urandom | base64 > {shown}`)"
                                ),
                            );
                            BeegfsAuth::Disabled
                        }
                    },
                    Err(err) => {
                        let message = match err.into_io() {
                            Ok(err) => format!(
                                "cannot read the BeeGFS shared secret {shown}: {err}; make one with \
                                 `head -c 48 /dev/urandom | base64 > {shown} && chmod 400 {shown}`"
                            ),
                            Err(refused) => refused.to_string(),
                        };
                        self.error(secret, message);
                        BeegfsAuth::Disabled
                    }
                }
            }
            (None, Some(disable)) if *disable.get_ref() => BeegfsAuth::Disabled,
            (None, _) => {
                self.error(
                    &s.mount,
                    "[beegfs]: BeeGFS 7.3 and later refuse to start without connection authentication: set \
                     auth_secret = \"FILE\" (a shared secret next to the cluster file, copied to every node), or \
                     disable_authentication = true",
                );
                BeegfsAuth::Disabled
            }
        }
    }

    /// An interface name as `ip link` shows it (IFNAMSIZ: at most 15 bytes).
    fn interface(&mut self, name: &Spanned<String>) -> bool {
        let n = name.get_ref();
        let ok = !n.is_empty()
            && n.len() <= 15
            && n.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '@'));
        if !ok {
            self.error(name, format!("{n:?} is not a network interface name (eth0, ib0, …)"));
        }
        ok
    }

    /// `ADDRESS/BITS`, as BeeGFS's connNetFilterFile takes it.
    fn cidr(&mut self, net: &Spanned<String>) -> bool {
        let ok = net.get_ref().split_once('/').is_some_and(|(addr, bits)| {
            match (addr.parse::<std::net::IpAddr>(), bits.parse::<u8>()) {
                (Ok(std::net::IpAddr::V4(_)), Ok(b)) => b <= 32,
                (Ok(std::net::IpAddr::V6(_)), Ok(b)) => b <= 128,
                _ => false,
            }
        });
        if !ok {
            self.error(net, format!("{:?} is not a subnet such as 10.0.0.0/24", net.get_ref()));
        }
        ok
    }

    /// `[lustre] stripe = { count = -1, size = "4M" }`, within Lustre's limits (a count of -1
    /// or 1 to 2000; a size a multiple of 64 KiB below 4 GiB), for a benchmark directory that
    /// is on the file system.
    fn stripe(&mut self, st: &Spanned<StripeSection>, mount: &Path, file: &ClusterFile) -> Option<Stripe> {
        let section = st.get_ref();
        let count = *section.count.get_ref();
        let mut ok = true;
        if count != -1 && !(1..=2000).contains(&count) {
            self.error(&section.count, format!("stripe count {count}: use -1 (every OST) or 1 to 2000"));
            ok = false;
        }
        let size = match parse_stripe_size(section.size.get_ref()) {
            Ok(size) => size,
            Err(message) => {
                self.error(&section.size, message);
                ok = false;
                0
            }
        };
        let bench = file.bench.as_ref().and_then(|b| b.mount.as_ref());
        if let Some(dir) = bench
            && !Path::new(dir.get_ref()).starts_with(mount)
        {
            self.error(
                st,
                format!(
                    "[lustre] stripe applies to the benchmark directory, but [bench] mount {:?} (line {}) is not under \
                     the Lustre mount {}: put the benchmark directory on Lustre or remove `stripe`",
                    dir.get_ref(),
                    self.line(dir),
                    mount.display()
                ),
            );
            ok = false;
        }
        ok.then_some(Stripe { count, size })
    }

    /// `[lustre.client] lctl = { "llite.*.max_read_ahead_mb" = "64" }`: names and values as the
    /// agent's policy takes them (`lctl-param` in pvfs-steps' policy), so a file that loads has
    /// a plan the agents run.
    fn lctl(&mut self, lctl: &Spanned<BTreeMap<String, Spanned<String>>>) -> Vec<(String, String)> {
        const PREFIXES: &[&str] = &["llite.", "osc.", "mdc.", "lov.", "lmv.", "ldlm."];
        let mut params = Vec::new();
        for (name, value) in lctl.get_ref() {
            let grammar = !name.is_empty()
                && name.len() <= 128
                && name.chars().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '*' | '-')
                })
                && !name.contains("..");
            if !grammar || !PREFIXES.iter().any(|p| name.starts_with(p)) || name.contains("upcall") {
                self.error(
                    lctl,
                    format!(
                        "[lustre.client] lctl: {name:?} is not a client parameter pvfs sets: use lower-case letters, \
                         digits, '_', '.', '*' or '-' under {} (instances by glob: \"llite.*.max_read_ahead_mb\")",
                        PREFIXES.join(", ")
                    ),
                );
                continue;
            }
            let v = value.get_ref();
            if v.is_empty() || v.len() > 256 || v.chars().any(|c| c.is_whitespace() || c.is_control()) {
                self.error(
                    value,
                    format!(
                        "[lustre.client] lctl {name}: {v:?} is not one word; give the value without spaces"
                    ),
                );
                continue;
            }
            params.push((name.clone(), v.clone()));
        }
        params
    }

    /// A path on the nodes (mount points, target directories): normalised and absolute, so it
    /// reaches fstab and `mount` as written and the agent's policy judges the path it names.
    fn absolute(&mut self, path: &Spanned<String>) -> PathBuf {
        self.check(path, |p| grammar::absolute_path("path", p));
        PathBuf::from(path.get_ref())
    }

    fn line<T>(&self, at: &Spanned<T>) -> usize {
        self.source.line(at.span().start)
    }
}

/// A stripe size: bytes, or a number with a K, M or G suffix (either case, as lfs takes it),
/// a multiple of 64 KiB below 4 GiB.
pub(crate) fn parse_stripe_size(text: &str) -> Result<u64, String> {
    let hint = "use a multiple of 64K below 4G, such as \"1M\" or \"4M\"";
    let (digits, shift) = match text.char_indices().last() {
        Some((i, 'k' | 'K')) => (&text[..i], 10),
        Some((i, 'm' | 'M')) => (&text[..i], 20),
        Some((i, 'g' | 'G')) => (&text[..i], 30),
        _ => (text, 0),
    };
    let number: u64 = digits.parse().map_err(|_| format!("stripe size {text:?} is not a size: {hint}"))?;
    let bytes = number.checked_shl(shift).filter(|b| b >> shift == number).unwrap_or(u64::MAX);
    if bytes == 0 || !bytes.is_multiple_of(64 << 10) || bytes >= 4 << 30 {
        return Err(format!("stripe size {text:?} is not one Lustre takes: {hint}"));
    }
    Ok(bytes)
}

/// Names that are safe as file names and metric labels.
fn is_simple_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}
