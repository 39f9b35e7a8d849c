//! Reading a cluster file: TOML syntax, unknown keys, then typed deserialization, collecting
//! every error on the way.

use crate::diagnostic::{ConfigError, Diagnostic};
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

/// Validates `source`, the text of the cluster file at `path` (relative paths in it, such as
/// `[tls] dir`, are resolved against `path`'s directory).
pub fn parse(path: &Path, source: &str) -> Result<Cluster, ConfigError> {
    let mut diagnostics = Vec::new();
    let file = read_file(source, &mut diagnostics);
    let cluster = file.and_then(|file| crate::validate::validate(path, source, file, &mut diagnostics));
    match cluster {
        Some(cluster) if diagnostics.is_empty() => Ok(cluster),
        _ => {
            diagnostics.sort_by_key(|d| (d.line, d.column));
            diagnostics.dedup();
            Err(ConfigError::Invalid { path: path.to_owned(), diagnostics })
        }
    }
}

/// The raw file, or `None` when it is too broken to validate further (bad syntax, or a
/// section that did not deserialize). Unknown keys are reported and then dropped, so the
/// rest of the file is still checked.
fn read_file(source: &str, diagnostics: &mut Vec<Diagnostic>) -> Option<ClusterFile> {
    let (root, errors) = DeTable::parse_recoverable(source);
    if !errors.is_empty() {
        for err in errors {
            let span = err.span().unwrap_or(0..0);
            diagnostics.push(Diagnostic::at(source, span, format!("TOML syntax: {}", err.message().trim())));
        }
        return None;
    }
    let mut root = root.into_inner();
    retain_known(source, &mut root, fields::of::<ClusterFile>(), "the top level", diagnostics);

    // Each section and each node deserializes on its own, so one bad value does not hide the
    // errors in the others.
    let mut complete = true;
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
    let cluster: Option<ClusterSection> = typed_opt(source, cluster, diagnostics, &mut complete);
    let tls: Option<TlsSection> = typed_opt(source, tls, diagnostics, &mut complete);
    let lustre = typed_opt(source, lustre, diagnostics, &mut complete);
    let glusterfs = typed_opt(source, glusterfs, diagnostics, &mut complete);
    let beegfs = typed_opt(source, beegfs, diagnostics, &mut complete);
    let local = typed_opt(source, local, diagnostics, &mut complete);
    let bench = typed_opt(source, bench, diagnostics, &mut complete);
    let packages = typed_opt(source, packages, diagnostics, &mut complete);
    let repo = array_of_tables(source, &root, "repo", fields::of::<RepoSpec>(), diagnostics, &mut complete);

    let node = array_of_tables(source, &root, "node", fields::of::<NodeSpec>(), diagnostics, &mut complete);
    let Some(cluster) = cluster else {
        let msg =
            "missing [cluster] section: add one with `name` and `kind` (lustre, glusterfs, beegfs or local)";
        diagnostics.push(Diagnostic::at(source, 0..0, msg));
        return None;
    };
    complete.then(|| ClusterFile {
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
    })
}

/// A `[[key]]` array of tables, each checked for unknown keys and deserialized on its own.
fn array_of_tables<T: DeserializeOwned>(
    source: &str,
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

/// Deserializes an optional section; a failure clears `complete`.
fn typed_opt<T: DeserializeOwned>(
    source: &str,
    value: Option<Spanned<DeValue<'_>>>,
    diagnostics: &mut Vec<Diagnostic>,
    complete: &mut bool,
) -> Option<T> {
    let value = value?;
    let typed = typed(source, value, diagnostics);
    *complete &= typed.is_some();
    typed
}

/// Deserializes one section or node, reporting its error with position.
fn typed<T: DeserializeOwned>(
    source: &str,
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
    source: &str,
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
