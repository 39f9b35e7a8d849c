//! `pvfsctl validate CLUSTER.toml`: every error with its position, exit 2 if any.

use crate::cli::ValidateArgs;
use crate::{exit, output};
use pvfs_config::ConfigError;
use serde_json::json;

pub(crate) fn run(args: ValidateArgs) -> anyhow::Result<u8> {
    match pvfs_config::load(&args.cluster) {
        Ok(cluster) => {
            if args.json {
                output::json(
                    &json!({"file": args.cluster, "valid": true, "errors": [], "nodes": cluster.nodes.len(), "kind": cluster.kind.as_str()}),
                )?;
            } else {
                output::print(&format!(
                    "{}: ok ({} cluster {:?}, {} nodes)\n",
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
                let errors: Vec<_> = diagnostics
                    .iter()
                    .map(|d| json!({"line": d.line, "column": d.column, "message": d.message}))
                    .collect();
                output::json(&json!({"file": path, "valid": false, "errors": errors}))?;
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
