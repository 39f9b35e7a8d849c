//! Reading a cluster file: TOML syntax, unknown keys, then typed deserialization, collecting
//! every error on the way.

use crate::azure::Azure;
use crate::diagnostic::{ConfigError, Diagnostic, Source};
use crate::fields;
use crate::model::Cluster;
use crate::schema::{
    AzureRoleSection, AzureSection, BeegfsSection, BenchSection, ClusterFile, ClusterSection,
    DataDisksSection, GlusterfsSection, LocalSection, LustreSection, NodeSpec, PackagesSection, PolicyTable,
    RepoSpec, TlsSection,
};
use pvfs_host::local_file::{self, Cap};
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

/// Reads and validates the cluster file at `path`: what `up`, `bench` and `nodes` work from,
/// so every node has an address (with `[azure]`, from the state file `provision` wrote when
/// the file gives none).
pub fn load(path: &Path) -> Result<Cluster, ConfigError> {
    Loader::default().load(path)
}

/// Validates `text`, the text of the cluster file at `path` (relative paths in it, such as
/// `[tls] dir`, are resolved against `path`'s directory).
pub fn parse(path: &Path, text: &str) -> Result<Cluster, ConfigError> {
    Loader::default().parse(path, text)
}

/// Reads and validates a cluster file with an `[azure]` section for `pvfsctl provision`, which
/// runs before the VMs (and so their addresses) exist: see [`Provisioning`].
pub fn load_provisioning(path: &Path) -> Result<Provisioning, ConfigError> {
    Loader::default().load_provisioning(path)
}

/// What `pvfsctl validate` checks: everything [`load`] does, except that with `[azure]` a node
/// may still lack an address (`provision` gives it one). Without `[azure]` it is [`load`].
pub fn check(path: &Path) -> Result<Checked, ConfigError> {
    Loader::default().check(path)
}

/// A cluster file that passed [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// As in [`Provisioning::cluster`]: a node in `unaddressed` stands at `0.0.0.0:7070`.
    pub cluster: Cluster,
    /// Nodes with no address yet (only ever with `[azure]`), in file order.
    pub unaddressed: Vec<String>,
}

/// A cluster file with an `[azure]` section, validated for provisioning: every check of
/// [`load`] but the nodes' addresses, which may not exist yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provisioning {
    /// The cluster file.
    pub source: PathBuf,
    /// The state file beside it ([`crate::azure::state_path`]), read for the addresses it
    /// has and written by `provision`.
    pub state: PathBuf,
    /// The cluster. A node in `unaddressed` carries the unspecified address `0.0.0.0:7070`
    /// in its place: nothing may dial it (`load` refuses such a file instead).
    pub cluster: Cluster,
    /// `[azure]`, one VM per node in file order (also in `cluster.azure`).
    pub azure: Azure,
    /// Nodes with no address in the cluster file nor in the state file, in file order.
    pub unaddressed: Vec<String>,
}

impl Provisioning {
    /// The node's address, when the cluster file or the state file gives one.
    pub fn address(&self, node: &str) -> Option<&crate::Address> {
        if self.unaddressed.iter().any(|n| n == node) {
            return None;
        }
        self.cluster.node(node).map(|n| &n.address)
    }
}

/// How cluster files are read: [`load`] and friends use [`Loader::default`]; tests and tools
/// that must not depend on the user's home directory give their own.
#[derive(Debug, Clone, Default)]
pub struct Loader {
    /// What `~/` in a path of the file means; `None`: `$HOME`.
    home: Option<PathBuf>,
}

/// Whether nodes may lack an address (provisioning) or must have one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Addresses {
    Required,
    MayBeUnknown,
}

/// What the validation pass needs besides the file.
pub(crate) struct Context<'a> {
    pub(crate) addresses: Addresses,
    /// `~/`'s directory, if known.
    pub(crate) home: Option<&'a Path>,
}

impl Loader {
    /// A loader that expands `~/` to `home` instead of `$HOME`.
    pub fn with_home(home: impl Into<PathBuf>) -> Loader {
        Loader { home: Some(home.into()) }
    }

    /// [`load`], with this loader's settings.
    pub fn load(&self, path: &Path) -> Result<Cluster, ConfigError> {
        self.parse(path, &read(path)?)
    }

    /// [`parse`], with this loader's settings.
    pub fn parse(&self, path: &Path, text: &str) -> Result<Cluster, ConfigError> {
        self.run(path, &Source::new(text), Addresses::Required).map(|(cluster, _)| cluster)
    }

    /// [`check`], with this loader's settings.
    pub fn check(&self, path: &Path) -> Result<Checked, ConfigError> {
        let text = read(path)?;
        let (cluster, unaddressed) = self.run(path, &Source::new(&text), Addresses::MayBeUnknown)?;
        Ok(Checked { cluster, unaddressed })
    }

    /// [`load_provisioning`], with this loader's settings.
    pub fn load_provisioning(&self, path: &Path) -> Result<Provisioning, ConfigError> {
        self.parse_provisioning(path, &read(path)?)
    }

    /// [`load_provisioning`] of `text`, the text of the cluster file at `path`.
    pub fn parse_provisioning(&self, path: &Path, text: &str) -> Result<Provisioning, ConfigError> {
        let (cluster, unaddressed) = self.run(path, &Source::new(text), Addresses::MayBeUnknown)?;
        let Some(azure) = cluster.azure.clone() else {
            return Err(ConfigError::Invalid {
                path: path.to_owned(),
                diagnostics: vec![Diagnostic {
                    line: 1,
                    column: 1,
                    message: "the cluster file has no [azure] section: add one (subscription, resource_group,                               location, subnet, admin_user, ssh_public_key_file and an [azure.role.ROLE] per role)                               to provision its nodes"
                        .into(),
                }],
            });
        };
        Ok(Provisioning {
            source: path.to_owned(),
            state: crate::azure::state_path(path),
            cluster,
            azure,
            unaddressed,
        })
    }

    fn home(&self) -> Option<PathBuf> {
        self.home.clone().or_else(|| std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from))
    }

    fn run(
        &self,
        path: &Path,
        source: &Source<'_>,
        addresses: Addresses,
    ) -> Result<(Cluster, Vec<String>), ConfigError> {
        let home = self.home();
        let context = Context { addresses, home: home.as_deref() };
        parse_with(path, source, &context)
    }
}

/// The largest cluster file read. The biggest real ones (hundreds of nodes) are tens of KiB;
/// past this a file is not one, and it is refused before it is read (`validate /dev/zero` used
/// to read until the machine ran out of memory).
pub const CLUSTER_FILE: Cap = Cap { what: "a cluster file", bytes: 64 << 20 };

fn read(path: &Path) -> Result<String, ConfigError> {
    local_file::read_to_string(path, CLUSTER_FILE).map_err(|err| match err.into_io() {
        Ok(source) => ConfigError::Read { path: path.to_owned(), source },
        Err(refused) => ConfigError::File(refused),
    })
}

/// [`parse`] over a text whose line index is built (tests read its counter afterwards).
#[cfg(test)]
pub(crate) fn parse_source(path: &Path, source: &Source<'_>) -> Result<Cluster, ConfigError> {
    let home = Loader::default().home();
    let context = Context { addresses: Addresses::Required, home: home.as_deref() };
    parse_with(path, source, &context).map(|(cluster, _)| cluster)
}

/// The cluster, and the nodes left without an address (only ever some with
/// [`Addresses::MayBeUnknown`]).
fn parse_with(
    path: &Path,
    source: &Source<'_>,
    context: &Context<'_>,
) -> Result<(Cluster, Vec<String>), ConfigError> {
    let mut diagnostics = Vec::new();
    let file = read_file(source, &mut diagnostics);
    let cluster = file.and_then(|(file, incomplete)| {
        crate::validate::validate(path, source, file, &incomplete, context, &mut diagnostics)
    });
    match cluster {
        Some(cluster) if diagnostics.is_empty() => Ok(cluster),
        _ => {
            diagnostics.sort_by_key(|d| (d.line, d.column));
            diagnostics.dedup();
            Err(ConfigError::Invalid { path: path.to_owned(), diagnostics })
        }
    }
}

/// What of the file did not deserialize (and was reported already), so that validation
/// checks the rest without reporting what is merely missing because of it: a `[lustre]`
/// section with a type error is not also "missing", and a cluster with a node that did not
/// deserialize is not also "without an oss".
#[derive(Debug, Default)]
pub(crate) struct Incomplete {
    /// Sections present in the file that did not deserialize.
    pub(crate) sections: Vec<&'static str>,
    /// Some `[[node]]` did not deserialize.
    pub(crate) nodes: bool,
}

impl Incomplete {
    pub(crate) fn section(&self, name: &str) -> bool {
        self.sections.contains(&name)
    }
}

/// The raw file and what of it did not deserialize, or `None` when it is too broken to
/// validate further (bad TOML syntax, or a `[cluster]` section that did not deserialize).
/// Unknown keys are reported and then dropped, and a section or node with a type error is
/// reported and left out, so the rest of the file is still checked in the same run.
fn read_file(source: &Source<'_>, diagnostics: &mut Vec<Diagnostic>) -> Option<(ClusterFile, Incomplete)> {
    let (root, errors) = DeTable::parse_recoverable(source.text);
    if !errors.is_empty() {
        for err in errors {
            let span = err.span().unwrap_or(0..0);
            diagnostics.push(Diagnostic::at(source, span, format!("TOML syntax: {}", err.message().trim())));
        }
        return None;
    }
    let mut root = root.into_inner();
    retain_sections(source, &mut root, diagnostics);

    // Each section and each node deserializes on its own, so one bad value does not hide the
    // errors in the others.
    let mut incomplete = Incomplete::default();
    let mut section = |key: &str, known: &'static [&'static str]| {
        let mut value = root.get(key)?.clone();
        if let DeValue::Table(table) = value.get_mut() {
            retain_known(source, table, known, &format!("[{key}]"), diagnostics);
        }
        Some(value)
    };
    let cluster = section("cluster", fields::of::<ClusterSection>());
    let tls = section("tls", fields::of::<TlsSection>());
    let lustre = section("lustre", fields::of::<LustreSection>());
    let glusterfs = section("glusterfs", fields::of::<GlusterfsSection>());
    let beegfs = section("beegfs", fields::of::<BeegfsSection>());
    let local = section("local", fields::of::<LocalSection>());
    let bench = section("bench", fields::of::<BenchSection>());
    let packages = section("packages", fields::of::<PackagesSection>());
    let policy = section("policy", fields::of::<PolicyTable>());
    let mut azure = section("azure", fields::of::<AzureSection>());
    if let Some(azure) = &mut azure {
        retain_azure_roles(source, azure, diagnostics);
    }
    let cluster_span = cluster.as_ref().map(|c| c.span());
    let cluster: Option<ClusterSection> = typed_opt(source, "cluster", cluster, diagnostics, &mut incomplete);
    let tls: Option<TlsSection> = typed_opt(source, "tls", tls, diagnostics, &mut incomplete);
    let lustre = typed_opt(source, "lustre", lustre, diagnostics, &mut incomplete);
    let glusterfs = typed_opt(source, "glusterfs", glusterfs, diagnostics, &mut incomplete);
    let beegfs = typed_opt(source, "beegfs", beegfs, diagnostics, &mut incomplete);
    let local = typed_opt(source, "local", local, diagnostics, &mut incomplete);
    let bench = typed_opt(source, "bench", bench, diagnostics, &mut incomplete);
    let packages = typed_opt(source, "packages", packages, diagnostics, &mut incomplete);
    let policy = typed_opt(source, "policy", policy, diagnostics, &mut incomplete);
    let azure_present = azure.is_some();
    let azure = typed_opt(source, "azure", azure, diagnostics, &mut incomplete);
    let mut repos_complete = true;
    let repo = array_of_tables(
        source,
        &root,
        "repo",
        fields::of::<RepoSpec>(),
        |_: &RepoSpec| None,
        diagnostics,
        &mut repos_complete,
    );
    if !repos_complete {
        incomplete.sections.push("repo");
    }
    let mut nodes_complete = true;
    // Without [azure] a node's address can come from nowhere else: required, as it has always
    // been, and reported where serde reported it (at the node's table).
    let node = array_of_tables(
        source,
        &root,
        "node",
        fields::of::<NodeSpec>(),
        |spec: &NodeSpec| {
            (!azure_present && spec.address.is_none()).then(|| "missing field `address`".to_owned())
        },
        diagnostics,
        &mut nodes_complete,
    );
    incomplete.nodes = !nodes_complete;
    let cluster = match (cluster, cluster_span) {
        (Some(cluster), _) => cluster,
        // A [cluster] that did not deserialize has had its error; the nodes are still checked
        // (without a kind) so their errors come in the same run.
        (None, Some(span)) => ClusterSection {
            name: Spanned::new(span.clone(), String::new()),
            kind: Spanned::new(span, String::new()),
            firewall: None,
        },
        (None, None) => {
            let msg = "missing [cluster] section: add one with `name` and `kind` (lustre, glusterfs, beegfs or local)";
            diagnostics.push(Diagnostic::at(source, 0..0, msg));
            return None;
        }
    };
    let file = ClusterFile {
        cluster,
        node,
        tls: tls.unwrap_or_default(),
        lustre,
        glusterfs,
        beegfs,
        local,
        bench,
        packages,
        repo,
        azure,
        policy,
    };
    Some((file, incomplete))
}

/// Drops the top-level keys the file may not have, reporting each; a table or array of
/// tables is reported as the section it looks like (`unknown section [clustr]; did you mean
/// [cluster]?`) and, when the section it is near is absent, read as that section, so a typo
/// in a header does not also hide every error inside it.
fn retain_sections(source: &Source<'_>, root: &mut DeTable<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let known = fields::of::<ClusterFile>();
    let mut kept = DeTable::new();
    let mut adopted = Vec::new();
    for (key, value) in std::mem::take(root) {
        let name: &str = key.get_ref();
        if known.contains(&name) {
            kept.insert(key, value);
            continue;
        }
        let close = crate::suggest::closest(name, known);
        let (open, shut) = match value.get_ref() {
            DeValue::Table(_) => ("[", "]"),
            DeValue::Array(items) if !items.is_empty() && items.iter().all(|i| i.get_ref().is_table()) => {
                ("[[", "]]")
            }
            _ => ("", ""),
        };
        let message = match (open, close) {
            ("", Some(close)) => format!("unknown key `{name}` at the top level; did you mean `{close}`?"),
            ("", None) => {
                format!("unknown key `{name}` at the top level; expected one of: {}", known.join(", "))
            }
            (_, Some(close)) => {
                format!("unknown section {open}{name}{shut}; did you mean {open}{close}{shut}?")
            }
            (_, None) => format!(
                "unknown section {open}{name}{shut}; sections are {}",
                known
                    .iter()
                    .map(|k| if ["node", "repo"].contains(k) { format!("[[{k}]]") } else { format!("[{k}]") })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        diagnostics.push(Diagnostic::at(source, key.span(), message));
        if let Some(close) = close.filter(|_| !open.is_empty()) {
            adopted.push((close, value));
        }
    }
    for (close, value) in adopted {
        // Only where the file has no such section, and only the first near miss.
        if !kept.keys().any(|k| k.get_ref() == close) {
            kept.insert(Spanned::new(0..0, std::borrow::Cow::Borrowed(close)), value);
        }
    }
    *root = kept;
}

/// Checks the keys of every `[azure.role.ROLE]` table and its `data_disks`, so each unknown
/// key is reported (serde would stop at the first and drop the whole section).
fn retain_azure_roles(
    source: &Source<'_>,
    azure: &mut Spanned<DeValue<'_>>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let DeValue::Table(azure) = azure.get_mut() else { return };
    let Some(roles) = azure.get_mut("role") else { return };
    let DeValue::Table(roles) = roles.get_mut() else { return };
    for (role, table) in roles.iter_mut() {
        let DeValue::Table(table) = table.get_mut() else { continue };
        let place = format!("[azure.role.{}]", role.get_ref());
        retain_known(source, table, fields::of::<AzureRoleSection>(), &place, diagnostics);
        if let Some(disks) = table.get_mut("data_disks")
            && let DeValue::Table(disks) = disks.get_mut()
        {
            let place = format!("{place} data_disks");
            retain_known(source, disks, fields::of::<DataDisksSection>(), &place, diagnostics);
        }
    }
}

/// A `[[key]]` array of tables, each checked for unknown keys and deserialized on its own;
/// one that `reject` has a reason to refuse is reported at its table, as a missing field is.
fn array_of_tables<T: DeserializeOwned>(
    source: &Source<'_>,
    root: &DeTable<'_>,
    key: &str,
    known: &'static [&'static str],
    reject: impl Fn(&T) -> Option<String>,
    diagnostics: &mut Vec<Diagnostic>,
    complete: &mut bool,
) -> Vec<T> {
    let mut out = Vec::new();
    let Some(value) = root.get(key) else { return out };
    match value.get_ref() {
        DeValue::Array(items) if items.iter().all(|i| i.get_ref().is_table()) => {
            for item in items.iter() {
                let mut item = item.clone();
                if let DeValue::Table(table) = item.get_mut() {
                    retain_known(source, table, known, &format!("[[{key}]]"), diagnostics);
                }
                let span = item.span();
                match typed::<T>(source, item, diagnostics) {
                    Some(spec) => match reject(&spec) {
                        None => out.push(spec),
                        Some(why) => {
                            diagnostics.push(Diagnostic::at(source, span, why));
                            *complete = false;
                        }
                    },
                    None => *complete = false,
                }
            }
        }
        _ => {
            let msg = format!("`{key}` must be an array of tables: write each as a [[{key}]] table");
            diagnostics.push(Diagnostic::at(source, value.span(), msg));
            *complete = false;
        }
    }
    out
}

/// Deserializes an optional section; a failure is recorded in `incomplete`.
fn typed_opt<T: DeserializeOwned>(
    source: &Source<'_>,
    name: &'static str,
    value: Option<Spanned<DeValue<'_>>>,
    diagnostics: &mut Vec<Diagnostic>,
    incomplete: &mut Incomplete,
) -> Option<T> {
    let value = value?;
    let typed = typed(source, value, diagnostics);
    if typed.is_none() {
        incomplete.sections.push(name);
    }
    typed
}

/// Deserializes one section or node, reporting its error with position.
fn typed<T: DeserializeOwned>(
    source: &Source<'_>,
    value: Spanned<DeValue<'_>>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<T> {
    T::deserialize(ValueDeserializer::from(value))
        .map_err(|err| {
            let span = err.span().unwrap_or(0..0);
            diagnostics.push(Diagnostic::at(source, span, err.message().trim().to_owned()));
        })
        .ok()
}

fn retain_known(
    source: &Source<'_>,
    table: &mut DeTable<'_>,
    known: &'static [&'static str],
    place: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut kept = DeTable::new();
    for (key, value) in std::mem::take(table) {
        let name: &str = key.get_ref();
        if known.contains(&name) {
            kept.insert(key, value);
            continue;
        }
        let hint = match crate::suggest::closest(name, known) {
            Some(close) => format!("did you mean `{close}`?"),
            None => format!("expected one of: {}", known.join(", ")),
        };
        diagnostics.push(Diagnostic::at(
            source,
            key.span(),
            format!("unknown key `{name}` in {place}; {hint}"),
        ));
    }
    *table = kept;
}
