//! The validation pass: everything serde cannot check, every error collected.

use crate::diagnostic::Diagnostic;
use crate::model::{Address, Bench, Cluster, Kind, KindSpec, Node, Role};
use crate::schema::ClusterFile;
use crate::suggest::closest;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Checks `file` (read from `path`, whose text is `source`) and returns the validated
/// cluster, or `None` with the reasons pushed to `diagnostics`.
pub(crate) fn validate(
    path: &Path,
    source: &str,
    file: ClusterFile,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Cluster> {
    let mut v = Validator { source, diagnostics };

    let name = file.cluster.name.get_ref().clone();
    if !is_simple_name(&name) {
        v.error(
            &file.cluster.name,
            "cluster name must be letters, digits, '-', '_' or '.' (it labels reports and metrics)",
        );
    }
    let kind = match file.cluster.kind.get_ref().parse::<Kind>() {
        Ok(kind) => Some(kind),
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

    let spec = kind.and_then(|kind| v.kind_spec(kind, &file));
    let nodes = v.nodes(kind, &file);
    let bench = v.bench(&file);

    let base = path.parent().unwrap_or(Path::new("."));
    Some(Cluster {
        source: path.to_owned(),
        name,
        kind: kind?,
        nodes,
        tls_dir: base.join(&file.tls.dir),
        spec: spec?,
        bench,
    })
}

struct Validator<'a> {
    source: &'a str,
    diagnostics: &'a mut Vec<Diagnostic>,
}

impl Validator<'_> {
    fn error<T>(&mut self, at: &Spanned<T>, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::at(self.source, at.span(), message));
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
                Some(s) => {
                    let fsname = s.fsname.get_ref();
                    if fsname.is_empty()
                        || fsname.len() > 8
                        || !fsname.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    {
                        self.error(&s.fsname, "Lustre fsname must be 1 to 8 letters, digits, '_' or '-'");
                    }
                    let lnet = s.lnet.get_ref();
                    let net = lnet.trim_end_matches(|c: char| c.is_ascii_digit());
                    if net != "tcp" && net != "o2ib" {
                        self.error(&s.lnet, format!("unknown LNet network {lnet:?}: use \"tcp\" or \"o2ib\" (optionally numbered, e.g. \"tcp1\")"));
                    }
                    KindSpec::Lustre {
                        fsname: fsname.clone(),
                        mount: self.absolute(&s.mount),
                        lnet: lnet.clone(),
                    }
                }
                None => return self.missing(file, missing("fsname, mount")),
            },
            Kind::Glusterfs => match &file.glusterfs {
                Some(s) => {
                    if !is_simple_name(s.volume.get_ref()) {
                        self.error(&s.volume, "volume name must be letters, digits, '-', '_' or '.'");
                    }
                    KindSpec::Glusterfs { volume: s.volume.get_ref().clone(), mount: self.absolute(&s.mount) }
                }
                None => return self.missing(file, missing("volume, mount")),
            },
            Kind::Beegfs => match &file.beegfs {
                Some(s) => KindSpec::Beegfs { mount: self.absolute(&s.mount) },
                None => return self.missing(file, missing("mount")),
            },
            Kind::Local => match &file.local {
                Some(s) => KindSpec::Local { mount: self.absolute(&s.mount) },
                None => return self.missing(file, missing("mount")),
            },
        };
        Some(spec)
    }

    fn missing(&mut self, file: &ClusterFile, message: String) -> Option<KindSpec> {
        self.error(&file.cluster.kind, message);
        None
    }

    fn nodes(&mut self, kind: Option<Kind>, file: &ClusterFile) -> Vec<Node> {
        if file.node.is_empty() {
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
            if !is_simple_name(name) || name.starts_with(['.', '-']) {
                self.error(&spec.name, format!("node name {name:?} must be letters, digits, '-', '_' or '.' (it names the node's certificate file)"));
            } else if let Some(first) = names.insert(name, line) {
                self.error(
                    &spec.name,
                    format!("duplicate node name {name:?} (first defined on line {first})"),
                );
            }

            let address = match spec.address.get_ref().parse::<Address>() {
                Ok(address) => {
                    if let Some((other, first)) = addresses.get(&address) {
                        self.error(&spec.address, format!("address {address} is already node {other:?}'s (line {first}); each node needs its own agent address"));
                    } else {
                        addresses.insert(address.clone(), (name, self.line(&spec.address)));
                    }
                    Some(address)
                }
                Err(why) => {
                    self.error(
                        &spec.address,
                        format!("cannot parse address {:?}: {why}", spec.address.get_ref()),
                    );
                    None
                }
            };

            let mut roles = Vec::new();
            if spec.roles.get_ref().is_empty() {
                self.error(&spec.roles, format!("node {name:?} has no roles; give at least one"));
            }
            for role in spec.roles.get_ref() {
                let given = role.get_ref().as_str();
                let Ok(parsed) = given.parse::<Role>() else {
                    let all: Vec<&'static str> = Role::ALL.iter().map(|r| r.as_str()).collect();
                    let hint =
                        closest(given, &all).map(|r| format!("; did you mean {r:?}?")).unwrap_or_default();
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

            let mut disks: Vec<PathBuf> = Vec::new();
            for disk in &spec.disks {
                let path = PathBuf::from(disk.get_ref());
                if !path.is_absolute() {
                    self.error(
                        disk,
                        format!(
                            "disk {:?} must be an absolute device path, e.g. /dev/disk/azure/scsi1/lun0",
                            disk.get_ref()
                        ),
                    );
                } else if disks.contains(&path) {
                    self.error(disk, format!("disk {:?} is listed twice for node {name:?}", disk.get_ref()));
                } else {
                    disks.push(path);
                }
            }

            if let Some(address) = address {
                nodes.push(Node { name: name.to_owned(), address, roles, disks });
            }
        }
        nodes
    }

    fn bench(&mut self, file: &ClusterFile) -> Bench {
        let Some(b) = &file.bench else { return Bench::default() };
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
        let launcher = one_of(&b.launcher, "launcher", &["agents", "mpi"]);
        let engine = one_of(&b.engine, "engine", &["ior", "builtin", "fio"]);
        Bench { mount: b.mount.as_ref().map(|m| self.absolute(m)), launcher, engine }
    }

    fn absolute(&mut self, path: &Spanned<String>) -> PathBuf {
        let p = PathBuf::from(path.get_ref());
        if !p.is_absolute() {
            self.error(path, format!("{:?} must be an absolute path", path.get_ref()));
        }
        p
    }

    fn line<T>(&self, at: &Spanned<T>) -> usize {
        Diagnostic::at(self.source, at.span(), "").line
    }
}

/// Names that are safe as file names and metric labels.
fn is_simple_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}
