//! Many agents in one process, for measuring a coordinator at scale: N gRPC servers on
//! consecutive ports, each the real `pvfs.v1.Agent` service, all streaming the samples of one
//! real sampler (this machine's counters, so every message has a real node's size).

use crate::history::{History, run_sampler};
use crate::{AgentError, AgentService, SAMPLE_INTERVAL};
use pvfs_host::Root;
use pvfs_tls::{Material, RevokedWatch};
use std::net::SocketAddr;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tonic::transport::Server;

/// What `pvfs-agent simulate` runs.
#[derive(Debug, Clone)]
pub struct Simulation {
    pub agents: u16,
    /// The first agent's address; agent i listens on port + i.
    pub first: SocketAddr,
    /// One certificate for all (it must name the address's IP). Simulated agents are real
    /// agent services on this machine, so they take mutual TLS like any other.
    pub tls: Material,
    /// The revoked serials they refuse.
    pub revoked: RevokedWatch,
    pub name_prefix: String,
}

/// Serves every simulated agent until `shutdown`; returns once all are bound and serving.
pub async fn run(sim: Simulation, shutdown: CancellationToken) -> Result<(), AgentError> {
    let epoch =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    // Ten minutes of history is plenty for a benchmark and keeps N agents' memory shared: the
    // ring is one for all.
    let history = History::new(epoch, 600);
    tokio::spawn(run_sampler(history.clone(), Root::system(), SAMPLE_INTERVAL, shutdown.clone()));
    for i in 0..sim.agents {
        let addr = SocketAddr::new(sim.first.ip(), sim.first.port() + i);
        let listener = crate::bind(addr).await?;
        let mut server = Server::builder().tls_config(crate::server_tls(&sim.tls))?;
        let name = format!("{}{i}", sim.name_prefix);
        let service = AgentService::new(name, Root::system(), history.clone(), shutdown.clone());
        let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
        let router = server.add_service(pvfs_proto::pb::agent_server::AgentServer::with_interceptor(
            service,
            crate::auth::CoordinatorOnly::new(sim.revoked.clone()),
        ));
        let stop = shutdown.clone();
        tokio::spawn(async move {
            if let Err(err) = router.serve_with_incoming_shutdown(incoming, stop.cancelled()).await {
                tracing::warn!(error = %err, "simulated agent stopped");
            }
        });
    }
    tracing::info!(agents = sim.agents, first = %sim.first, "simulated agents serving");
    shutdown.cancelled().await;
    // Let the servers drain their streams.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(())
}
