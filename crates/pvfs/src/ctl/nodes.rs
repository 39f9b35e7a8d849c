//! `pvfsctl nodes CLUSTER.toml`: every agent's facts in one table (or JSON), exit 1 if any
//! node is unreachable.

use crate::cli::NodesArgs;
use crate::{exit, output};
use comfy_table::{Cell, CellAlignment, Table, presets};
use pvfs_coord::{NodeReport, Survey};
use pvfs_metrics::facts::Signature;

pub(crate) async fn run(args: NodesArgs) -> anyhow::Result<u8> {
    let cluster = pvfs_config::load(&args.cluster)?;
    let dialer = super::dialer(&cluster, &args.connect)?;
    let survey = pvfs_coord::survey(&cluster, &dialer).await;
    show(&survey, args.json)?;
    Ok(if survey.unreachable().next().is_some() { exit::FAILURES } else { exit::OK })
}

/// Prints the survey: a table on stdout and failures on stderr, or one JSON document.
pub(crate) fn show(survey: &Survey, json: bool) -> anyhow::Result<()> {
    if json {
        let nodes: Vec<_> = survey.nodes.iter().map(node_json).collect();
        return output::json(&Nodes { elapsed_ms: millis(survey.elapsed), nodes });
    }
    output::print(&format!("{}\n", table(survey).trim_fmt()))?;
    for node in &survey.nodes {
        if let Some(warning) = &node.warning {
            output::note(&format!("warning: node {}: {warning}", node.name));
        }
        if let Err(err) = &node.result {
            output::note(&format!("error: node {} ({}) unreachable: {err}", node.name, node.address));
        }
    }
    let down = survey.unreachable().count();
    output::note(&format!(
        "{} nodes, {} reachable, {down} unreachable ({:.2}s)",
        survey.nodes.len(),
        survey.nodes.len() - down,
        survey.elapsed.as_secs_f64()
    ));
    Ok(())
}

fn table(survey: &Survey) -> Table {
    let mut table = Table::new();
    table.load_style(presets::NOTHING);
    table.set_header([
        "NODE",
        "ROLES",
        "ADDRESS",
        "REACHABLE",
        "RTT",
        "VERSION",
        "OS",
        "KERNEL",
        "CPUS",
        "MEMORY",
        "DISKS",
        "SELINUX",
        "FIREWALL",
    ]);
    for node in &survey.nodes {
        let roles: Vec<&str> = node.roles.iter().map(|r| r.as_str()).collect();
        let mut row = vec![Cell::new(&node.name), Cell::new(roles.join(",")), Cell::new(&node.address)];
        match &node.result {
            Ok(info) => {
                let f = &info.facts;
                let empty = f.block_devices.iter().filter(|d| d.signature == Signature::Empty).count();
                let os = if f.os.pretty_name.is_empty() {
                    format!("{} {}", f.os.id, f.os.version_id)
                } else {
                    f.os.pretty_name.clone()
                };
                row.extend([
                    Cell::new("yes"),
                    Cell::new(
                        node.rtt.map(|d| format!("{:.1}ms", d.as_secs_f64() * 1000.0)).unwrap_or_default(),
                    )
                    .set_alignment(CellAlignment::Right),
                    Cell::new(&info.agent_version),
                    Cell::new(os),
                    Cell::new(&f.kernel),
                    Cell::new(f.cpu.logical).set_alignment(CellAlignment::Right),
                    Cell::new(output::bytes(f.memory_bytes)).set_alignment(CellAlignment::Right),
                    Cell::new(format!("{} ({empty} empty)", f.block_devices.len())),
                    // An agent from before these were reported says nothing: "?".
                    Cell::new(Some(f.selinux.as_str()).filter(|s| !s.is_empty()).unwrap_or("?")),
                    Cell::new(Some(f.firewall.as_str()).filter(|s| !s.is_empty()).unwrap_or("?")),
                ]);
            }
            Err(err) => row.extend([Cell::new(format!("NO ({})", err.kind))]),
        }
        table.add_row(row);
    }
    table
}

/// What `--json` prints. Fields here are in alphabetical order, the order the output has
/// always had (it was a `serde_json::Value`, whose keys are sorted).
#[derive(serde::Serialize)]
struct Nodes<'a> {
    elapsed_ms: f64,
    nodes: Vec<NodeJson<'a>>,
}

#[derive(serde::Serialize)]
struct NodeJson<'a> {
    address: &'a str,
    error: Option<&'a str>,
    error_kind: Option<&'a str>,
    /// The node's facts through a `Value`, so their keys come out sorted too; `null` when the
    /// node was not reached.
    info: serde_json::Value,
    name: &'a str,
    reachable: bool,
    roles: Vec<&'a str>,
    rtt_ms: Option<f64>,
    warning: Option<&'a str>,
}

fn node_json(node: &NodeReport) -> NodeJson<'_> {
    let (info, error, error_kind) = match &node.result {
        Ok(info) => (serde_json::to_value(info).unwrap_or_default(), None, None),
        Err(err) => (serde_json::Value::Null, Some(err.message.as_str()), Some(err.kind.as_str())),
    };
    NodeJson {
        address: &node.address,
        error,
        error_kind,
        info,
        name: &node.name,
        reachable: node.reachable(),
        roles: node.roles.iter().map(|r| r.as_str()).collect(),
        rtt_ms: node.rtt.map(millis),
        warning: node.warning.as_deref(),
    }
}

fn millis(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_config::Role;
    use pvfs_coord::{DialError, FailureKind};
    use serde_json::json;
    use std::time::Duration;

    /// The struct prints what the `json!` literal it replaced printed, byte for byte.
    #[test]
    fn json_keeps_its_keys_and_order() {
        let node = NodeReport {
            name: "n1".into(),
            roles: vec![Role::Client],
            address: "127.0.0.1:1".into(),
            rtt: Some(Duration::from_micros(1500)),
            result: Err(DialError { kind: FailureKind::Refused, message: "refused".into() }),
            warning: Some("odd".into()),
        };
        let old = json!({
            "name": "n1", "roles": ["client"], "address": "127.0.0.1:1", "reachable": false, "rtt_ms": 1.5,
            "error": "refused", "error_kind": FailureKind::Refused.as_str(), "warning": "odd", "info": null,
        });
        let survey = Survey { nodes: vec![node], elapsed: Duration::from_millis(2) };
        let new =
            Nodes { elapsed_ms: millis(survey.elapsed), nodes: survey.nodes.iter().map(node_json).collect() };
        assert_eq!(
            serde_json::to_string(&new).unwrap(),
            json!({"nodes": [old], "elapsed_ms": 2.0}).to_string()
        );
    }
}
