//! `pvfsctl nodes CLUSTER.toml`: every agent's facts in one table (or JSON), exit 1 if any
//! node is unreachable.

use crate::cli::NodesArgs;
use crate::{exit, output};
use comfy_table::{Cell, CellAlignment, Table, presets};
use pvfs_coord::{NodeReport, Survey};
use pvfs_metrics::facts::Signature;
use serde_json::json;

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
        return output::json(&json!({"nodes": nodes, "elapsed_ms": millis(survey.elapsed)}));
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
                ]);
            }
            Err(err) => row.extend([Cell::new(format!("NO ({})", err.kind))]),
        }
        table.add_row(row);
    }
    table
}

fn node_json(node: &NodeReport) -> serde_json::Value {
    let roles: Vec<&str> = node.roles.iter().map(|r| r.as_str()).collect();
    let (info, error, kind) = match &node.result {
        Ok(info) => (serde_json::to_value(info).unwrap_or_default(), None, None),
        Err(err) => (serde_json::Value::Null, Some(err.message.clone()), Some(err.kind.as_str())),
    };
    json!({
        "name": node.name,
        "roles": roles,
        "address": node.address,
        "reachable": node.reachable(),
        "rtt_ms": node.rtt.map(millis),
        "error": error,
        "error_kind": kind,
        "warning": node.warning,
        "info": info,
    })
}

fn millis(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
