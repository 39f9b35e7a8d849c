//! The `pvfs.v1.Agent` gRPC service: the edge where wire types meet the agent's work.

use pvfs_host::{Root, SystemRunner};
use pvfs_metrics::facts::{self, NodeInfo};
use pvfs_proto::pb;
use std::time::Instant;
use tonic::{Request, Response, Status};

/// Answers the coordinator's requests.
#[derive(Debug)]
pub struct AgentService {
    name: String,
    root: Root,
    started: Instant,
}

impl AgentService {
    pub fn new(name: String, root: Root) -> AgentService {
        AgentService { name, root, started: Instant::now() }
    }
}

#[tonic::async_trait]
impl pb::agent_server::Agent for AgentService {
    async fn info(&self, _request: Request<pb::InfoRequest>) -> Result<Response<pb::InfoResponse>, Status> {
        let facts = facts::read(&self.root, &SystemRunner).await.map_err(|err| {
            tracing::warn!(error = %err, "cannot read node facts");
            Status::internal(format!("cannot read node facts: {err}"))
        })?;
        let info = NodeInfo {
            agent_name: self.name.clone(),
            agent_version: crate::VERSION.to_owned(),
            agent_uptime_seconds: self.started.elapsed().as_secs(),
            facts,
        };
        Ok(Response::new(pb::InfoResponse { node: Some(info.into()) }))
    }
}
