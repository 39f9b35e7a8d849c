//! `pvfsctl validate CLUSTER.toml`: every error with its position, exit 2 if any.

use crate::cli::ValidateArgs;
use crate::{exit, output};
use pvfs_config::ConfigError;
use serde::Serialize;
use std::path::Path;

/// What `--json` prints. Fields are in alphabetical order, the order the output has always had
/// (it was a `serde_json::Value`, whose keys are sorted).
#[derive(Serialize)]
struct Report<'a> {
    errors: Vec<Diagnostic<'a>>,
    file: &'a Path,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nodes: Option<usize>,
    /// With `[azure]`: the nodes that have no address until `pvfsctl provision` runs.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    unaddressed: &'a [String],
    valid: bool,
}

/// One error and where it is.
#[derive(Serialize)]
struct Diagnostic<'a> {
    column: usize,
    line: usize,
    message: &'a str,
}

pub(crate) fn run(args: ValidateArgs) -> anyhow::Result<u8> {
    // `check`, not `load`: a cluster file with [azure] is valid before `provision` has given
    // its nodes addresses (the commands that dial them refuse it until then).
    match pvfs_config::check(&args.cluster) {
        Ok(pvfs_config::Checked { cluster, unaddressed }) => {
            let problems = policy_problems(&cluster);
            if !problems.is_empty() {
                return policy_invalid(&args, &cluster, &problems);
            }
            if args.json {
                output::json(&Report {
                    errors: Vec::new(),
                    file: &args.cluster,
                    kind: Some(cluster.kind.as_str()),
                    nodes: Some(cluster.nodes.len()),
                    unaddressed: &unaddressed,
                    valid: true,
                })?;
            } else {
                let pending = match unaddressed.len() {
                    0 => String::new(),
                    n => format!(
                        "; {n} without an address until `pvfsctl provision {}`",
                        args.cluster.display()
                    ),
                };
                output::print(&format!(
                    "{}: ok ({} cluster {:?}, {} nodes{pending})\n",
                    args.cluster.display(),
                    cluster.kind,
                    cluster.name,
                    cluster.nodes.len()
                ))?;
            }
            Ok(exit::OK)
        }
        Err(ConfigError::Invalid { path, diagnostics }) => {
            if args.json {
                let errors = diagnostics
                    .iter()
                    .map(|d| Diagnostic { column: d.column, line: d.line, message: &d.message })
                    .collect();
                output::json(&Report {
                    errors,
                    file: &path,
                    kind: None,
                    nodes: None,
                    unaddressed: &[],
                    valid: false,
                })?;
            } else {
                let count = diagnostics.len();
                output::note(&ConfigError::Invalid { path, diagnostics }.to_string());
                output::note(&format!("{count} error{} found", if count == 1 { "" } else { "s" }));
            }
            Ok(exit::BAD_INPUT)
        }
        Err(err) => Err(err.into()),
    }
}

/// What the agent's rules refuse in the policies `[policy]` gives the nodes (the file's own
/// pass judged what it can; these need the agent's rules): each problem once, whichever
/// nodes share it.
fn policy_problems(cluster: &pvfs_config::Cluster) -> Vec<String> {
    let mut problems = std::collections::BTreeSet::new();
    for node in &cluster.nodes {
        if let Some(Err(errors)) = pvfs_plan::agent_policy(cluster, node) {
            // "node NAME: [policy] …": the node matters only when roles differ.
            problems.extend(
                errors.into_iter().map(|e| e.split_once(": ").map_or(e.clone(), |(_, p)| p.to_owned())),
            );
        }
    }
    problems.into_iter().collect()
}

/// The policy problems as `validate`'s errors, at the `[policy]` header's line.
fn policy_invalid(
    args: &ValidateArgs,
    cluster: &pvfs_config::Cluster,
    problems: &[String],
) -> anyhow::Result<u8> {
    let text =
        pvfs_host::local_file::read_to_string(&args.cluster, pvfs_config::CLUSTER_FILE).unwrap_or_default();
    let line = text.lines().position(|l| l.trim_start().starts_with("[policy")).map_or(1, |i| i + 1);
    if args.json {
        let errors = problems.iter().map(|message| Diagnostic { column: 1, line, message }).collect();
        output::json(&Report {
            errors,
            file: &args.cluster,
            kind: Some(cluster.kind.as_str()),
            nodes: Some(cluster.nodes.len()),
            unaddressed: &[],
            valid: false,
        })?;
    } else {
        for problem in problems {
            output::note(&format!("{}:{line}:1: {problem}", args.cluster.display()));
        }
        let count = problems.len();
        output::note(&format!("{count} error{} found", if count == 1 { "" } else { "s" }));
    }
    Ok(exit::BAD_INPUT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The struct prints what the `json!` literals it replaced printed, byte for byte.
    #[test]
    fn json_keeps_its_keys_and_order() {
        let file = Path::new("c.toml");
        let ok = Report {
            errors: Vec::new(),
            file,
            kind: Some("local"),
            nodes: Some(2),
            unaddressed: &[],
            valid: true,
        };
        assert_eq!(
            serde_json::to_string(&ok).unwrap(),
            json!({"file": file, "valid": true, "errors": [], "nodes": 2, "kind": "local"}).to_string()
        );
        let bad = Report {
            errors: vec![Diagnostic { column: 3, line: 1, message: "no" }],
            file,
            kind: None,
            nodes: None,
            unaddressed: &[],
            valid: false,
        };
        assert_eq!(
            serde_json::to_string(&bad).unwrap(),
            json!({"file": file, "valid": false, "errors": [{"line": 1, "column": 3, "message": "no"}]})
                .to_string()
        );
    }
}
