//! The agent: the gRPC server every node runs.
//!
//! [`prepare`] checks the settings and loads what serving needs (the same checks
//! `pvfs-agent --check-config` runs); [`serve`] then takes a bound listener and a cancellation
//! token, so tests bind port 0 and stop the agent when they are done. Serving is always mutual
//! TLS, and every request to the Agent service must come from a coordinator certificate that
//! is not revoked (`auth`). There is no plaintext mode: loopback is not a boundary between a
//! machine's users, and the agent is root.
//!
//! Stopping drains: once `shutdown` is cancelled no new unit is accepted and no new step
//! starts, but a step under way runs to its end and its result still reaches a coordinator
//! that is listening; [`serve`] returns when those are done (the caller bounds how long it
//! waits, see `pvfs-agent`'s drain deadline).

mod auth;
mod beegfs;
mod build;
mod caches;
mod child;
mod fault;
mod handshake;
// Public for its benchmark (`benches/gmond.rs`): the renderer and what it renders from.
pub mod gmond;
mod history;
mod jobs;
mod launch;
pub mod limits;
mod notify;
pub mod policy;
mod profile;
mod reboot;
pub mod room;
mod service;
pub mod simulate;
mod state;

use pvfs_host::Root;
use pvfs_tls::{CertSummary, Material, RevokedWatch, TlsError, Usage};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

pub use service::AgentService;

/// The agent's version, reported by `Info`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A TLS handshake that has not finished in this long is a stuck or hostile client; drop it
/// rather than hold a connection slot. A real handshake takes a few round trips (milliseconds
/// even across sites); short, because a flood's idle connections hold slots until this ends.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(3);

/// Probe an idle connection after this long.
pub(crate) const TCP_KEEPALIVE: Duration = Duration::from_secs(30);

/// HTTP/2 pings: how long a connection may be silent before the agent asks, and how long the
/// caller then has to answer before the agent treats it as gone and closes the connection.
///
/// A caller that is frozen (SIGSTOP, a hung VM, a partition) with its TCP connection open
/// would otherwise hold what its calls hold — the node's Apply lock above all — for as long as
/// the kernel keeps the socket, which is hours. Closing the connection ends its streams, so
/// the unit under way sees its caller gone: the step under way finishes, no other starts, a
/// waiting gate stops, and the lock is released. A live coordinator's HTTP/2 stack answers
/// pings by itself, whatever its program is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    pub interval: Duration,
    pub timeout: Duration,
}

impl Default for Keepalive {
    fn default() -> Keepalive {
        Keepalive { interval: Duration::from_secs(10), timeout: Duration::from_secs(20) }
    }
}

/// How the agent is run (from its flags and environment).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The node name: the cluster file's name for this node, and the name of the certificate.
    pub name: String,
    pub listen: SocketAddr,
    pub security: Security,
    /// Where the agent keeps its state (locked: one agent per state dir).
    pub state_dir: PathBuf,
    /// `/` in production; the root facts are read under.
    pub root: Root,
    /// How much sample history to keep for coordinators that reconnect.
    pub history: Duration,
    /// The Ganglia drop-in, when asked for: a gmond XML dump on this address.
    pub gmond: Option<GmondSettings>,
    /// What steps this agent carries out (`Policy::default()`, or a site's policy file).
    pub policy: pvfs_policy::Policy,
    /// The policy file it came from, if any (for `--check-config`).
    pub policy_file: Option<PathBuf>,
}

/// `--gmond-xml ADDR --gmond-cluster NAME`.
#[derive(Debug, Clone)]
pub struct GmondSettings {
    pub listen: SocketAddr,
    /// The CLUSTER NAME in the dump.
    pub cluster: String,
}

/// Samples are taken once a second, on the second.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// How connections are secured.
///
/// Mutual TLS is the only way. (An enum still, so that another real boundary, such as a Unix
/// socket admitting only root, would have a place; unauthenticated plaintext, which gave every
/// local user root through loopback, is deliberately gone.)
#[derive(Debug, Clone)]
pub enum Security {
    /// Serve `DIR/NAME.crt`, accept only clients with a certificate from `DIR/ca.crt`, and
    /// refuse those listed in `DIR/revoked.txt`.
    MutualTls { dir: PathBuf },
}

/// The agent cannot start.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("state directory {}: {source}", path.display())]
    State {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("state directory {} is in use by another pvfs-agent (lock held on {})", dir.display(), lock.display())]
    StateLocked { dir: PathBuf, lock: PathBuf },
    #[error("cannot listen on {listen}: {source}")]
    Bind {
        listen: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("gRPC server failed: {0}")]
    Serve(#[from] tonic::transport::Error),
    #[error("the agent's TLS configuration cannot be built: {0}")]
    ServerTls(String),
}

/// Settings checked and loaded; what `serve` needs.
#[derive(Debug)]
pub struct Prepared {
    settings: Settings,
    certificate: CertSummary,
    revoked: RevokedWatch,
    tls: std::sync::Arc<rustls::ServerConfig>,
    gate: limits::Gate,
    streams: limits::StreamGauge,
    keepalive: Keepalive,
}

impl Prepared {
    /// The certificate the agent will serve.
    pub fn certificate(&self) -> &CertSummary {
        &self.certificate
    }

    /// The revoked serials the agent will refuse (re-read while serving when the file changes).
    pub fn revoked(&self) -> &RevokedWatch {
        &self.revoked
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// How many connections the agent has admitted, refused and holds open (see `limits`).
    pub fn connections(&self) -> std::sync::Arc<limits::ConnectionCounts> {
        self.gate.counts()
    }

    /// The agent's `Metrics` streams: how many are live, and the limit.
    pub fn metrics_streams(&self) -> limits::StreamGauge {
        self.streams.clone()
    }

    /// The same, with other HTTP/2 ping timings (tests use short ones; [`Keepalive::default`]
    /// is what the agent runs with).
    pub fn with_keepalive(self, keepalive: Keepalive) -> Prepared {
        Prepared { keepalive, ..self }
    }
}

/// Checks `settings` without side effects: the certificate exists, matches its key, chains to
/// the CA, is valid now and is an agent's (serverAuth, not clientAuth); the revoked list, if
/// any, reads. `--check-config` is this.
pub fn prepare(settings: Settings) -> Result<Prepared, AgentError> {
    let Security::MutualTls { dir } = &settings.security;
    let material = pvfs_tls::load(dir, &settings.name)?;
    let certificate = pvfs_tls::check_identity(&material, Usage::Agent)?;
    let revoked = RevokedWatch::new(dir)?;
    let tls = handshake::server_config(&material)?;
    state::check(&settings.state_dir)?;
    // The descriptor limit as it is now: `pvfs-agent` raises it before preparing.
    let gate = limits::Gate::new(
        limits::connection_limit(),
        limits::MAX_HALF_HELLOS,
        limits::MAX_CONNECTIONS_PER_PEER,
    );
    let streams = limits::StreamGauge::default();
    Ok(Prepared { settings, certificate, revoked, tls, gate, streams, keepalive: Keepalive::default() })
}

/// The server's TLS as tonic's configuration, for the simulated agents (`simulate`); the agent
/// itself runs its handshakes (`handshake`) with the same settings.
pub(crate) fn server_tls(material: &Material) -> ServerTlsConfig {
    ServerTlsConfig::new()
        .identity(Identity::from_pem(&material.cert_pem, &material.key_pem))
        .client_ca_root(Certificate::from_pem(&material.ca_pem))
        .timeout(HANDSHAKE_TIMEOUT)
}

/// Binds the listen address.
pub async fn bind(listen: SocketAddr) -> Result<TcpListener, AgentError> {
    TcpListener::bind(listen).await.map_err(|source| AgentError::Bind { listen, source })
}

/// Serves on `listener` until `shutdown` is cancelled, then drains: stops accepting, lets open
/// streams finish (a unit's step under way, reported to its coordinator if it is still there)
/// and waits for every unit's task, even those whose coordinator has gone.
///
/// Tells systemd (when started by it, or by anything that sets `NOTIFY_SOCKET`) that the agent
/// is ready once the listener is serving.
pub async fn serve(
    listener: TcpListener,
    prepared: Prepared,
    shutdown: CancellationToken,
) -> Result<(), AgentError> {
    let Prepared { settings, revoked, tls, gate, streams, keepalive, .. } = prepared;
    let _lock = state::lock(&settings.state_dir)?;
    let local =
        listener.local_addr().map_err(|source| AgentError::Bind { listen: settings.listen, source })?;

    // Bounded calls per connection: without it a client may open thousands of streams on one
    // connection, each a task and buffers (see `limits`). Pings find callers that froze with
    // their connection open (`Keepalive`). No `tls_config`: the connections come from
    // `handshake` already secured.
    let mut server = Server::builder()
        .max_concurrent_streams(limits::MAX_STREAMS_PER_CONNECTION)
        .http2_keepalive_interval(Some(keepalive.interval))
        .http2_keepalive_timeout(Some(keepalive.timeout));

    let (health, health_service) = tonic_health::server::health_reporter();
    // The epoch tells coordinators which agent process numbered the samples.
    let epoch =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    let capacity = (settings.history.as_secs() / SAMPLE_INTERVAL.as_secs()).max(1) as usize;
    let history = history::History::new(epoch, capacity);
    // The sampler, the gmond feed and the watchdog end on the stop token, and are waited for
    // (not aborted) once the server has drained. A child token so that they also end when the
    // server ends on its own (an error) without the caller's token being cancelled.
    let background = shutdown.child_token();
    let background_tasks = TaskTracker::new();
    background_tasks.spawn(history::run_sampler(
        history.clone(),
        settings.root.clone(),
        SAMPLE_INTERVAL,
        background.clone(),
    ));
    if let Some(g) = &settings.gmond {
        let listener = bind(g.listen).await?;
        tracing::info!(listen = %g.listen, cluster = %g.cluster, "gmond XML feed on");
        background_tasks.spawn(gmond::serve(
            listener,
            history.clone(),
            g.cluster.clone(),
            settings.name.clone(),
            settings.root.clone(),
            background.clone(),
        ));
    }
    // A network cut a previous agent process made and could not undo (it crashed, or was
    // killed) is undone before anything else: the node must not stay off the network. Only on
    // the machine's own root (an agent reading another root never cut anything).
    if settings.root == Root::system() {
        fault::network::restore_left(&settings.root, &pvfs_host::SystemRunner).await;
    }
    let agent = AgentService::new(settings.name.clone(), settings.root.clone(), history, shutdown.clone())
        .with_policy(settings.policy.clone())
        .with_metrics_streams(streams)
        .with_revoked(revoked.clone());
    let units = agent.units();
    let cuts = agent.cuts();
    health.set_serving::<pvfs_proto::pb::agent_server::AgentServer<AgentService>>().await;

    // As soon as shutdown starts systemd is told, and health turns NOT_SERVING, so a coordinator
    // polling it sees the agent going away rather than a connection reset. This is its own task,
    // not the server's shutdown future: the accept loop ends on the same token, and the server
    // may return on the end of its connections before it ever polls that future. A child token
    // so that the server ending on its own (an error) finishes this task without cancelling the
    // caller's token.
    let announced = shutdown.child_token();
    let on_shutdown = {
        let (health, announced) = (health.clone(), announced.clone());
        tokio::spawn(async move {
            announced.cancelled().await;
            notify::stopping();
            health.set_not_serving::<pvfs_proto::pb::agent_server::AgentServer<AgentService>>().await;
            // "" is the whole server, which is what `pvfsctl nodes` asks about.
            health.set_service_status("", tonic_health::ServingStatus::NotServing).await;
        })
    };
    if let Some(watchdog) = notify::watchdog(background.clone()) {
        background_tasks.spawn(watchdog);
    }

    // Connections within the limits only, their TLS handshakes, and an accept loop that backs
    // off when out of descriptors (tonic's retries at once, spinning a core); see `limits`.
    let incoming = gate.incoming(listener, handshake::Handshake::new(tls, revoked.clone()), shutdown.clone());
    let agent_server = pvfs_proto::pb::agent_server::AgentServer::new(agent)
        .max_decoding_message_size(limits::MAX_REQUEST_BYTES);
    let router =
        server.add_service(health_service).add_service(tonic::service::interceptor::InterceptedService::new(
            agent_server,
            auth::CoordinatorOnly::new(revoked),
        ));
    tracing::info!(name = %settings.name, listen = %local, version = VERSION, "pvfs-agent serving");
    notify::ready(local, &settings.name);
    let stopping = async {
        shutdown.cancelled().await;
        if !units.is_empty() {
            tracing::info!(units = units.len(), "stopping: letting the steps under way finish");
        }
    };
    // Graceful: the server stops accepting, and waits for open connections to finish their
    // streams, so a coordinator still listening receives the result of the step under way.
    let result = router.serve_with_incoming_shutdown(incoming, stopping).await;
    // Units whose coordinator went away are not held by any stream; wait for them too.
    units.close();
    units.wait().await;
    cuts.restore_all().await;
    announced.cancel();
    // It only notifies and sets two statuses: waiting for it cannot hang.
    if let Err(err) = on_shutdown.await {
        tracing::warn!(error = %err, "the shutdown notice task failed");
    }
    // Each ends at its next select on the token: a sample or a gmond document under way is
    // finished, not cut off.
    background.cancel();
    background_tasks.close();
    background_tasks.wait().await;
    tracing::info!(name = %settings.name, "pvfs-agent stopped");
    result.map_err(AgentError::from)
}
