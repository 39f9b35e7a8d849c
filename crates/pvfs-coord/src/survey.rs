//! `pvfsctl nodes`: dial every agent at once and collect what each says about its node.

use crate::dial::{DialError, Dialer, FailureKind, from_status, timed_out};
use pvfs_config::{Cluster, Node, Role};
use pvfs_metrics::facts::NodeInfo;
use pvfs_proto::pb;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// What one node answered (or why it did not).
#[derive(Debug, Clone)]
pub struct NodeReport {
    pub name: String,
    pub roles: Vec<Role>,
    pub address: String,
    /// Round trip of a health check on the open connection.
    pub rtt: Option<Duration>,
    pub result: Result<NodeInfo, DialError>,
    /// Reachable, but something is off (e.g. the agent calls itself by another name).
    pub warning: Option<String>,
}

impl NodeReport {
    pub fn reachable(&self) -> bool {
        self.result.is_ok()
    }
}

/// Every node's report, in cluster-file order.
#[derive(Debug, Clone)]
pub struct Survey {
    pub nodes: Vec<NodeReport>,
    pub elapsed: Duration,
}

impl Survey {
    pub fn unreachable(&self) -> impl Iterator<Item = &NodeReport> {
        self.nodes.iter().filter(|n| !n.reachable())
    }
}

/// Dials all of `cluster`'s agents concurrently; each gets the dialer's timeout for the whole
/// exchange (connect, `Info`, health check).
pub async fn survey(cluster: &Cluster, dialer: &Dialer) -> Survey {
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for (index, node) in cluster.nodes.iter().enumerate() {
        let (node, dialer) = (node.clone(), dialer.clone());
        tasks.spawn(async move { (index, ask(&node, &dialer).await) });
    }
    let mut slots: Vec<Option<NodeReport>> = vec![None; cluster.nodes.len()];
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((index, report)) => slots[index] = Some(report),
            // A panic in one node's task is a bug; the node is reported as failed below.
            Err(err) => tracing::error!(error = %err, "survey task failed"),
        }
    }
    let nodes = slots
        .into_iter()
        .zip(&cluster.nodes)
        .map(|(slot, node)| {
            slot.unwrap_or_else(|| {
                report(
                    node,
                    None,
                    Err(DialError { kind: FailureKind::Other, message: "internal error".into() }),
                )
            })
        })
        .collect();
    Survey { nodes, elapsed: started.elapsed() }
}

fn report(node: &Node, rtt: Option<Duration>, result: Result<NodeInfo, DialError>) -> NodeReport {
    let warning = match &result {
        Ok(info) if info.agent_name != node.name => Some(format!(
            "the agent at {} calls itself {:?}, not {:?}",
            node.address, info.agent_name, node.name
        )),
        _ => None,
    };
    NodeReport {
        name: node.name.clone(),
        roles: node.roles.clone(),
        address: node.address.to_string(),
        rtt,
        result,
        warning,
    }
}

/// One node's `Info` and health check, within the dialer's timeout.
pub async fn ask(node: &Node, dialer: &Dialer) -> NodeReport {
    let timeout = dialer.timeout();
    let exchange = async {
        let mut conn = dialer.connect(node).await?;
        let info = conn
            .agent
            .info(pb::InfoRequest {})
            .await
            .map_err(|status| from_status(&status, &node.address, timeout))?
            .into_inner()
            .node
            .ok_or_else(|| DialError {
                kind: FailureKind::Rpc,
                message: "the agent sent no node facts".into(),
            })?;
        let sent = Instant::now();
        let health = conn
            .health
            .check(tonic_health::pb::HealthCheckRequest { service: String::new() })
            .await
            .map_err(|status| from_status(&status, &node.address, timeout))?;
        let rtt = sent.elapsed();
        let serving = tonic_health::pb::health_check_response::ServingStatus::Serving as i32;
        if health.into_inner().status != serving {
            return Err(DialError {
                kind: FailureKind::Rpc,
                message: "the agent reports it is not serving (shutting down?)".into(),
            });
        }
        Ok((NodeInfo::from(info), rtt))
    };
    // The deadline covers the whole exchange, so one slow node cannot hold up the survey.
    match tokio::time::timeout(timeout, exchange).await {
        Ok(Ok((info, rtt))) => report(node, Some(rtt), Ok(info)),
        Ok(Err(err)) => report(node, None, Err(err)),
        Err(_) => report(node, None, Err(timed_out(&node.address, timeout))),
    }
}
