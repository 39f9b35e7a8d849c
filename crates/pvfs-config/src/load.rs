//! Reading a cluster file: TOML syntax, unknown keys, then typed deserialization, collecting
//! every error on the way.

use crate::diagnostic::{ConfigError, Diagnostic, Source};
use crate::fields;
use crate::model::Cluster;
use crate::schema::{
    BeegfsSection, BenchSection, ClusterFile, ClusterSection, GlusterfsSection, LocalSection, LustreSection,
    NodeSpec, PackagesSection, RepoSpec, TlsSection,
};
use serde::de::DeserializeOwned;
use std::path::Path;
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

/// Reads and validates the cluster file at `path`.
pub fn load(path: &Path) -> Result<Cluster, ConfigError> {
    let source = std::fs::read_to_string(path)
        .map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
    parse(path, &source)
}

/// Validates `text`, the text of the cluster file at `path` (relative paths in it, such as
/// `[tls] dir`, are resolved against `path`'s directory).
pub fn parse(path: &Path, text: &str) -> Result<Cluster, ConfigError> {
    parse_source(path, &Source::new(text))
}

/// [`parse`] over a text whose line index is built (tests read its counter afterwards).
pub(crate) fn parse_source(path: &Path, source: &Source<'_>) -> Result<Cluster, ConfigError> {
    let mut diagnostics = Vec::new();
    let file = read_file(source, &mut diagnostics);
    let cluster = file.and_then(|(file, incomplete)| {
        crate::validate::validate(path, source, file, &incomplete, &mut diagnostics)
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
    let cluster_span = cluster.as_ref().map(|c| c.span());
    let cluster: Option<ClusterSection> = typed_opt(source, "cluster", cluster, diagnostics, &mut incomplete);
    let tls: Option<TlsSection> = typed_opt(source, "tls", tls, diagnostics, &mut incomplete);
    let lustre = typed_opt(source, "lustre", lustre, diagnostics, &mut incomplete);
    let glusterfs = typed_opt(source, "glusterfs", glusterfs, diagnostics, &mut incomplete);
    let beegfs = typed_opt(source, "beegfs", beegfs, diagnostics, &mut incomplete);
    let local = typed_opt(source, "local", local, diagnostics, &mut incomplete);
    let bench = typed_opt(source, "bench", bench, diagnostics, &mut incomplete);
    let packages = typed_opt(source, "packages", packages, diagnostics, &mut incomplete);
    let mut repos_complete = true;
    let repo =
        array_of_tables(source, &root, "repo", fields::of::<RepoSpec>(), diagnostics, &mut repos_complete);
    if !repos_complete {
        incomplete.sections.push("repo");
    }
    let mut nodes_complete = true;
    let node =
        array_of_tables(source, &root, "node", fields::of::<NodeSpec>(), diagnostics, &mut nodes_complete);
    incomplete.nodes = !nodes_complete;
    let cluster = match (cluster, cluster_span) {
        (Some(cluster), _) => cluster,
        // A [cluster] that did not deserialize has had its error; the nodes are still checked
        // (without a kind) so their errors come in the same run.
        (None, Some(span)) => ClusterSection {
            name: Spanned::new(span.clone(), String::new()),
            kind: Spanned::new(span, String::new()),
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

/// A `[[key]]` array of tables, each checked for unknown keys and deserialized on its own.
fn array_of_tables<T: DeserializeOwned>(
    source: &Source<'_>,
    root: &DeTable<'_>,
    key: &str,
    known: &'static [&'static str],
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
                match typed(source, item, diagnostics) {
                    Some(spec) => out.push(spec),
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
