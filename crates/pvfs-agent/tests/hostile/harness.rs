//! A real agent and a hand-written gRPC client with a valid coordinator certificate.

use pvfs_agent::{Security, Settings};
use pvfs_host::Root;
use pvfs_proto::pb;
use pvfs_tls::Usage;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

pub const TIMEOUT: Duration = Duration::from_secs(10);

/// A cluster CA with a coordinator (`pvfsctl`) and an agent (`n1`, for 127.0.0.1) certificate.
pub struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    pub fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        pvfs_tls::init_ca(dir.path()).unwrap();
        pvfs_tls::issue(dir.path(), "pvfsctl", &[], Usage::Coordinator, false).unwrap();
        pvfs_tls::issue(dir.path(), "n1", &["127.0.0.1".to_owned()], Usage::Agent, false).unwrap();
        Pki { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A running agent and a client connected to it as the coordinator.
pub struct Agent {
    pub addr: SocketAddr,
    pub client: pb::agent_client::AgentClient<Channel>,
    pub shutdown: CancellationToken,
    pub task: Option<JoinHandle<Result<(), pvfs_agent::AgentError>>>,
    /// The agent's connection counts (admitted, refused, open).
    pub connections: std::sync::Arc<pvfs_agent::limits::ConnectionCounts>,
    /// The agent's Metrics streams (live, limit).
    pub streams: pvfs_agent::limits::StreamGauge,
    tls: std::path::PathBuf,
    _state: tempfile::TempDir,
}

impl Agent {
    pub async fn start(pki: &Pki) -> Agent {
        Agent::start_with(pki, |_| {}).await
    }

    /// Starts an agent whose settings `adjust` may change first (a site policy, say).
    pub async fn start_with(pki: &Pki, adjust: impl FnOnce(&mut Settings)) -> Agent {
        Agent::start_in(pki.path(), adjust).await
    }

    /// [`Agent::start_with`], with the certificates of a [`Pki`] made by another process.
    pub async fn start_in(tls: &Path, adjust: impl FnOnce(&mut Settings)) -> Agent {
        Agent::start_prepared(tls, adjust, |prepared| prepared).await
    }

    /// [`Agent::start_in`], with what `tune` changes once the settings are prepared (shorter
    /// HTTP/2 ping timings, say).
    pub async fn start_prepared(
        tls: &Path,
        adjust: impl FnOnce(&mut Settings),
        tune: impl FnOnce(pvfs_agent::Prepared) -> pvfs_agent::Prepared,
    ) -> Agent {
        let state = tempfile::tempdir().unwrap();
        let mut settings = Settings {
            name: "n1".into(),
            listen: "127.0.0.1:0".parse().unwrap(),
            security: Security::MutualTls { dir: tls.to_owned() },
            state_dir: state.path().join("state"),
            root: Root::system(),
            history: Duration::from_secs(60),
            gmond: None,
            policy: pvfs_policy::Policy::default(),
            policy_file: None,
        };
        adjust(&mut settings);
        let prepared = tune(pvfs_agent::prepare(settings).unwrap());
        let (connections, streams) = (prepared.connections(), prepared.metrics_streams());
        let listener = pvfs_agent::bind(prepared.settings().listen).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(pvfs_agent::serve(listener, prepared, shutdown.clone()));
        let client = connect(tls, "pvfsctl", addr).await.expect("the coordinator certificate connects");
        Agent {
            addr,
            client,
            shutdown,
            task: Some(task),
            connections,
            streams,
            tls: tls.to_owned(),
            _state: state,
        }
    }

    /// Sends one unit; the events it streamed back, or the status it was refused with.
    pub async fn apply(&self, steps: Vec<pb::Step>) -> Result<Applied, tonic::Status> {
        self.apply_request(pb::ApplyRequest {
            steps,
            dry_run: false,
            after_changes: false,
            label: "hostile".into(),
            cluster_hosts: vec![],
        })
        .await
    }

    pub async fn apply_request(&self, request: pb::ApplyRequest) -> Result<Applied, tonic::Status> {
        let mut client = self.client.clone();
        let mut stream = client.apply(request).await?.into_inner();
        let mut events = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        loop {
            match tokio::time::timeout_at(deadline, stream.message()).await {
                Ok(Ok(Some(event))) => events.push(event),
                Ok(Ok(None)) => break,
                Ok(Err(status)) => return Err(status),
                Err(_) => panic!("the agent's Apply stream did not end within 120 s"),
            }
        }
        Ok(Applied { events })
    }

    /// The agent still answers `Info`, on the connection the test used and on a new one.
    pub async fn assert_still_serving(&self) {
        let fresh = connect(&self.tls, "pvfsctl", self.addr).await.expect("a new connection is accepted");
        for mut client in [self.client.clone(), fresh] {
            let info = tokio::time::timeout(TIMEOUT, client.info(pb::InfoRequest {}))
                .await
                .expect("Info answered in time")
                .expect("Info succeeded");
            assert_eq!(info.into_inner().node.unwrap().agent_name, "n1");
        }
    }

    /// Follows the agent's samples on a connection of its own, as `top` or `serve` would, until
    /// [`Watch::assert_no_gap`]: what an attack must not interrupt.
    pub async fn watch(&self) -> Watch {
        let mut client = self.connect().await;
        let mut stream = client
            .metrics(pb::MetricsRequest::default())
            .await
            .expect("the agent serves a Metrics stream")
            .into_inner();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let task = {
            let seen = seen.clone();
            tokio::spawn(async move {
                while let Ok(Some(event)) = stream.message().await {
                    seen.lock().unwrap().push((tokio::time::Instant::now(), event));
                }
            })
        };
        Watch { seen, task, _client: client }
    }

    /// A new connection as the coordinator, from `source` (a loopback address).
    pub async fn connect_from(
        &self,
        source: std::net::IpAddr,
    ) -> Result<pb::agent_client::AgentClient<Channel>, tonic::transport::Error> {
        connect_from(&self.tls, "pvfsctl", self.addr, Some(source)).await
    }

    /// A new connection as the coordinator.
    pub async fn connect(&self) -> pb::agent_client::AgentClient<Channel> {
        connect(&self.tls, "pvfsctl", self.addr).await.expect("the coordinator certificate connects")
    }

    /// Stops the agent and waits for it to exit cleanly.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        let task = self.task.take().expect("the agent is running");
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("the agent stopped within 30 s")
            .expect("the agent task did not panic")
            .expect("the agent exited cleanly");
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A client holding `dir/NAME.crt` as its identity.
pub async fn connect(
    dir: &Path,
    name: &str,
    addr: SocketAddr,
) -> Result<pb::agent_client::AgentClient<Channel>, tonic::transport::Error> {
    connect_from(dir, name, addr, None).await
}

/// [`connect`], from the local address `source` when given (another loopback address, so that
/// the agent sees another peer).
pub async fn connect_from(
    dir: &Path,
    name: &str,
    addr: SocketAddr,
    source: Option<std::net::IpAddr>,
) -> Result<pb::agent_client::AgentClient<Channel>, tonic::transport::Error> {
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(std::fs::read(dir.join("ca.crt")).unwrap()))
        .identity(Identity::from_pem(
            std::fs::read(dir.join(format!("{name}.crt"))).unwrap(),
            std::fs::read(dir.join(format!("{name}.key"))).unwrap(),
        ))
        .domain_name(addr.ip().to_string());
    let channel = Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(tls)?
        .timeout(TIMEOUT)
        .local_address(source)
        .connect()
        .await?;
    Ok(pb::agent_client::AgentClient::new(channel))
}

/// A Metrics stream followed in the background since [`Agent::watch`].
pub struct Watch {
    seen: std::sync::Arc<std::sync::Mutex<Vec<(tokio::time::Instant, pb::MetricsEvent)>>>,
    task: JoinHandle<()>,
    _client: pb::agent_client::AgentClient<Channel>,
}

impl Watch {
    /// Every second arrived, in order, none more than 2.5 s after the last (the coordinator's
    /// "node down" threshold), and one more arrives now: the stream never stalled.
    pub async fn assert_no_gap(self) {
        let start = tokio::time::Instant::now();
        let before = self.seen.lock().unwrap().len();
        while self.seen.lock().unwrap().len() <= before {
            assert!(start.elapsed() < Duration::from_secs(5), "the Metrics stream has stopped");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.task.abort();
        let seen = self.seen.lock().unwrap();
        let mut last: Option<(tokio::time::Instant, u64)> = None;
        for (at, event) in seen.iter() {
            let Some(pb::metrics_event::Event::Sample(sample)) = &event.event else {
                panic!("the Metrics stream reported a gap: {event:?}");
            };
            if let Some((then, seq)) = last {
                assert_eq!(sample.seq, seq + 1, "samples arrived out of order or with one missing");
                assert!(
                    *at - then <= Duration::from_millis(2500),
                    "sample {} came {:?} after the one before",
                    sample.seq,
                    *at - then
                );
            }
            last = Some((*at, sample.seq));
        }
    }
}

/// What an Apply streamed.
#[derive(Debug)]
pub struct Applied {
    pub events: Vec<pb::ApplyEvent>,
}

impl Applied {
    /// The `Done` of every step, in order.
    pub fn done(&self) -> Vec<&pb::StepDone> {
        self.events
            .iter()
            .filter_map(|e| match &e.event {
                Some(pb::apply_event::Event::Done(d)) => Some(d),
                _ => None,
            })
            .collect()
    }

    pub fn all_succeeded(&self) -> bool {
        use pb::step_done::Status;
        let done = self.done();
        !done.is_empty()
            && done.iter().all(|d| matches!(Status::try_from(d.status), Ok(Status::Ok | Status::Changed)))
    }

    /// The first failed step's message, if any step failed.
    pub fn failure(&self) -> Option<String> {
        self.done()
            .into_iter()
            .find(|d| pb::step_done::Status::try_from(d.status) == Ok(pb::step_done::Status::Failed))
            .map(|d| d.detail.clone())
    }
}

/// A scratch directory for a test, removed at the end (under /tmp: not a system tree).
pub fn scratch(what: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("pvfs-hostile-{what}-")).tempdir().unwrap()
}

pub fn step(inner: pb::step::Step) -> pb::Step {
    pb::Step { step: Some(inner) }
}

pub fn directory(path: &str, mode: u32) -> pb::Step {
    step(pb::step::Step::Directory(pb::DirectoryStep { path: path.into(), mode }))
}

pub fn file(path: &str, contents: &str, mode: u32) -> pb::Step {
    step(pb::step::Step::File(pb::FileStep { path: path.into(), contents: contents.into(), mode }))
}
