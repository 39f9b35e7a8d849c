//! Real agents on port 0, a real coordinator, real mutual TLS: who gets in and who does not.

use pvfs_agent::{AgentError, Security, Settings};
use pvfs_config::{Address, Node, Role};
use pvfs_coord::{ClientSecurity, Dialer, FailureKind};
use pvfs_host::Root;
use pvfs_proto::pb;
use pvfs_tls::Usage;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

const TIMEOUT: Duration = Duration::from_secs(5);

/// A CA with a coordinator certificate, in a temp dir.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        pvfs_tls::init_ca(dir.path()).unwrap();
        pvfs_tls::issue(dir.path(), "pvfsctl", &[], Usage::Coordinator, false).unwrap();
        Pki { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn agent_cert(&self, name: &str, sans: &[&str]) {
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        pvfs_tls::issue(self.path(), name, &sans, Usage::Agent, false).unwrap();
    }

    fn dialer(&self) -> Dialer {
        Dialer::new(ClientSecurity::MutualTls(pvfs_tls::load(self.path(), "pvfsctl").unwrap()), TIMEOUT)
    }
}

struct RunningAgent {
    addr: SocketAddr,
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), AgentError>>,
    _state: tempfile::TempDir,
}

impl RunningAgent {
    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap().unwrap();
    }
}

async fn start_agent(pki: &Pki, name: &str, ip: &str) -> RunningAgent {
    let state = tempfile::tempdir().unwrap();
    let settings = Settings {
        name: name.into(),
        listen: format!("{ip}:0").parse().unwrap(),
        security: Security::MutualTls { dir: pki.path().to_owned() },
        state_dir: state.path().join("state"),
        root: Root::system(),
        history: Duration::from_secs(60),
        gmond: None,
        policy: pvfs_policy::Policy::default(),
        policy_file: None,
    };
    let prepared = pvfs_agent::prepare(settings).unwrap();
    let listener = pvfs_agent::bind(prepared.settings().listen).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(pvfs_agent::serve(listener, prepared, shutdown.clone()));
    RunningAgent { addr, shutdown, task, _state: state }
}

fn node(name: &str, addr: SocketAddr) -> Node {
    Node {
        name: name.into(),
        address: Address::from(addr),
        roles: vec![Role::Client],
        disks: vec![],
        meta_disks: vec![],
        wipe: vec![],
        id: None,
        reboot: false,
        lnet_address: None,
    }
}

#[tokio::test]
async fn a_coordinator_with_a_valid_certificate_gets_info() {
    let pki = Pki::new();
    pki.agent_cert("n1", &["127.0.0.1"]);
    let agent = start_agent(&pki, "n1", "127.0.0.1").await;

    let mut conn = pki.dialer().connect(&node("n1", agent.addr)).await.unwrap();
    let info = conn.agent.info(pb::InfoRequest {}).await.unwrap().into_inner().node.unwrap();
    assert_eq!(info.agent_name, "n1");
    assert_eq!(info.agent_version, pvfs_agent::VERSION);
    // Its build: the SHA-256 of the executable running it (this test binary), as coreutils
    // hashes the file, and that file's path.
    let exe = std::env::current_exe().unwrap();
    let sum = std::process::Command::new("sha256sum").arg(&exe).output().unwrap();
    assert_eq!(info.agent_build, String::from_utf8_lossy(&sum.stdout).split_whitespace().next().unwrap());
    assert_eq!(info.agent_executable, exe.to_string_lossy());
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(info.hostname, here.trim());
    assert!(info.memory_bytes > 0 && info.cpu.unwrap().logical > 0);

    let health = conn
        .health
        .check(tonic_health::pb::HealthCheckRequest { service: "pvfs.v1.Agent".into() })
        .await
        .unwrap();
    assert_eq!(
        health.into_inner().status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
    agent.stop().await;
}

/// Dials with hand-made TLS settings (no certificate, or another CA's) and calls `Info`.
async fn call_with(ca: &Path, identity: Option<(PathBuf, PathBuf)>, addr: SocketAddr) -> Result<(), String> {
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(std::fs::read(ca.join("ca.crt")).unwrap()))
        .domain_name(addr.ip().to_string());
    if let Some((cert, key)) = identity {
        tls = tls.identity(Identity::from_pem(std::fs::read(cert).unwrap(), std::fs::read(key).unwrap()));
    }
    let endpoint =
        Endpoint::from_shared(format!("https://{addr}")).unwrap().tls_config(tls).unwrap().timeout(TIMEOUT);
    let channel = endpoint.connect().await.map_err(|e| format!("connect: {e:?}"))?;
    pb::agent_client::AgentClient::new(channel)
        .info(pb::InfoRequest {})
        .await
        .map(|_| ())
        .map_err(|e| format!("rpc: {e:?}"))
}

#[tokio::test]
async fn clients_without_a_certificate_or_from_another_ca_are_rejected() {
    let pki = Pki::new();
    pki.agent_cert("n1", &["127.0.0.1"]);
    let agent = start_agent(&pki, "n1", "127.0.0.1").await;

    // Control: the same hand-made client with the real coordinator certificate gets in.
    let ours = (pki.path().join("pvfsctl.crt"), pki.path().join("pvfsctl.key"));
    call_with(pki.path(), Some(ours), agent.addr).await.unwrap();

    let err = call_with(pki.path(), None, agent.addr).await.unwrap_err();
    assert!(err.contains("CertificateRequired") || err.contains("alert"), "{err}");

    let other = Pki::new();
    let theirs = (other.path().join("pvfsctl.crt"), other.path().join("pvfsctl.key"));
    let err = call_with(pki.path(), Some(theirs), agent.addr).await.unwrap_err();
    assert!(err.contains("UnknownCA") || err.contains("alert"), "{err}");

    // Another agent's certificate is signed by the right CA but is for serving, not for
    // commanding agents.
    pki.agent_cert("n2", &["127.0.0.2"]);
    let agent_identity = (pki.path().join("n2.crt"), pki.path().join("n2.key"));
    let err = call_with(pki.path(), Some(agent_identity), agent.addr).await.unwrap_err();
    assert!(err.contains("alert"), "{err}");
    agent.stop().await;
}

#[tokio::test]
async fn the_coordinator_explains_a_rejected_certificate() {
    let pki = Pki::new();
    pki.agent_cert("n1", &["127.0.0.1"]);
    let agent = start_agent(&pki, "n1", "127.0.0.1").await;
    let other = Pki::new();
    // The agent's CA differs from the coordinator's: both sides reject, and the coordinator
    // finds out first (it verifies the server certificate).
    let err = other.dialer().connect(&node("n1", agent.addr)).await.unwrap_err();
    assert_eq!(err.kind, FailureKind::Tls, "{err}");
    assert!(err.message.contains("not signed by this cluster's CA"), "{err}");

    // The coordinator's certificate from another CA, the agent's from ours: the agent rejects.
    std::fs::copy(pki.path().join("ca.crt"), other.path().join("ca.crt")).unwrap();
    let survey_cluster = cluster_of(&[node("n1", agent.addr)]);
    let survey = pvfs_coord::survey(&survey_cluster, &other.dialer()).await;
    let err = survey.nodes[0].result.as_ref().unwrap_err();
    assert_eq!(err.kind, FailureKind::Tls, "{err}");
    assert!(err.message.contains("does not accept our certificate"), "{err}");
    agent.stop().await;
}

#[tokio::test]
async fn an_agent_certificate_must_name_the_dialled_address() {
    let pki = Pki::new();
    // Issued for 127.0.0.9, served on 127.0.0.1.
    pki.agent_cert("n1", &["127.0.0.9"]);
    let agent = start_agent(&pki, "n1", "127.0.0.1").await;
    let err = pki.dialer().connect(&node("n1", agent.addr)).await.unwrap_err();
    assert_eq!(err.kind, FailureKind::Tls);
    assert!(err.message.contains("does not name 127.0.0.1"), "{err}");
    agent.stop().await;
}

/// The coordinator's own connector (one TLS configuration for every agent) names each way a
/// dial can fail before TLS even starts, as tonic's did.
#[tokio::test]
async fn a_name_that_does_not_resolve_a_peer_that_is_not_tls_and_a_silent_one_are_told_apart() {
    let pki = Pki::new();
    let mut unresolvable = node("n1", "127.0.0.1:7070".parse().unwrap());
    unresolvable.address =
        Address { host: pvfs_config::model::Host::Name("no-such-host.invalid".into()), port: 7070 };
    let err = pki.dialer().connect(&unresolvable).await.unwrap_err();
    assert_eq!(err.kind, FailureKind::Dns, "{err}");
    assert!(err.message.starts_with("cannot resolve no-such-host.invalid: "), "{err}");

    // Something that answers in plain HTTP.
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http_addr = http.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut socket, _)) = http.accept().await {
            let mut hello = [0u8; 512];
            let _ = socket.read(&mut hello).await;
            let _ = socket.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n").await;
        }
    });
    let err = pki.dialer().connect(&node("n1", http_addr)).await.unwrap_err();
    assert_eq!(err.kind, FailureKind::Tls, "{err}");
    assert!(err.message.contains("did not answer with TLS"), "{err}");

    // Something that accepts and never says a word: the dial's timeout, not a hang.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            open.push(socket);
        }
    });
    let material = pvfs_tls::load(pki.path(), "pvfsctl").unwrap();
    let impatient = Dialer::new(ClientSecurity::MutualTls(material), Duration::from_millis(500));
    let err = impatient.connect(&node("n1", silent_addr)).await.unwrap_err();
    assert_eq!(err.kind, FailureKind::Timeout, "{err}");
    assert!(err.message.starts_with("timed out after 0.5s: no answer from 127.0.0.1:"), "{err}");
    held.abort();
}

/// A coordinator key that is not a key fails every dial with a message naming the file, and
/// nothing is sent to the agent.
#[tokio::test]
async fn a_broken_coordinator_key_is_named_on_every_dial() {
    let pki = Pki::new();
    pki.agent_cert("n1", &["127.0.0.1"]);
    let agent = start_agent(&pki, "n1", "127.0.0.1").await;
    std::fs::write(pki.path().join("pvfsctl.key"), "not a key\n").unwrap();
    let dialer = pki.dialer();
    for _ in 0..2 {
        let err = dialer.connect(&node("n1", agent.addr)).await.unwrap_err();
        assert_eq!(err.kind, FailureKind::Config, "{err}");
        assert!(err.message.contains("pvfsctl.key is not a valid PEM private key"), "{err}");
    }
    agent.stop().await;
}

#[tokio::test]
async fn a_stopped_agent_is_refused_and_named() {
    let pki = Pki::new();
    pki.agent_cert("up", &["127.0.0.1"]);
    pki.agent_cert("down", &["127.0.0.1"]);
    let up = start_agent(&pki, "up", "127.0.0.1").await;
    let down = start_agent(&pki, "down", "127.0.0.1").await;
    let down_addr = down.addr;
    down.stop().await;

    let cluster = cluster_of(&[node("up", up.addr), node("down", down_addr)]);
    let survey = pvfs_coord::survey(&cluster, &pki.dialer()).await;
    assert!(survey.nodes[0].reachable(), "{:?}", survey.nodes[0].result);
    assert!(survey.nodes[0].rtt.is_some());
    let failed: Vec<_> =
        survey.unreachable().map(|n| (n.name.as_str(), n.result.as_ref().unwrap_err().kind)).collect();
    assert_eq!(failed, [("down", FailureKind::Refused)]);
    up.stop().await;
}

#[tokio::test]
async fn a_revoked_coordinator_is_told_why_it_is_refused() {
    let pki = Pki::new();
    pki.agent_cert("n1", &["127.0.0.1"]);
    let agent = start_agent(&pki, "n1", "127.0.0.1").await;
    let cluster = cluster_of(&[node("n1", agent.addr)]);
    assert!(pvfs_coord::survey(&cluster, &pki.dialer()).await.nodes[0].reachable());

    let revocation = pvfs_tls::revoke_named(pki.path(), "pvfsctl").unwrap();
    let survey = pvfs_coord::survey(&cluster, &pki.dialer()).await;
    let err = survey.nodes[0].result.as_ref().unwrap_err();
    assert_eq!(err.kind, FailureKind::Denied, "{err}");
    assert_eq!(err.kind.as_str(), "denied");
    assert!(
        err.message.starts_with(&format!(
            "the agent refused this coordinator: certificate \"pvfsctl\" (serial {}) is revoked",
            revocation.serial
        )),
        "{err}"
    );
    agent.stop().await;
}

#[tokio::test]
async fn a_second_agent_on_the_same_state_dir_is_refused() {
    let pki = Pki::new();
    pki.agent_cert("n1", &["127.0.0.1"]);
    let agent = start_agent(&pki, "n1", "127.0.0.1").await;
    // Wait until the first agent holds its lock (it is serving once a connection succeeds).
    pki.dialer().connect(&node("n1", agent.addr)).await.unwrap();
    let settings = Settings {
        name: "n1".into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        security: Security::MutualTls { dir: pki.path().to_owned() },
        state_dir: agent._state.path().join("state"),
        root: Root::system(),
        history: Duration::from_secs(60),
        gmond: None,
        policy: pvfs_policy::Policy::default(),
        policy_file: None,
    };
    let prepared = pvfs_agent::prepare(settings).unwrap();
    let listener = pvfs_agent::bind(prepared.settings().listen).await.unwrap();
    let err = pvfs_agent::serve(listener, prepared, CancellationToken::new()).await.unwrap_err();
    assert!(matches!(err, AgentError::StateLocked { .. }), "{err}");
    agent.stop().await;
}

fn cluster_of(nodes: &[Node]) -> pvfs_config::Cluster {
    pvfs_config::Cluster {
        source: "cluster.toml".into(),
        name: "test".into(),
        kind: pvfs_config::Kind::Local,
        nodes: nodes.to_vec(),
        tls_dir: "tls".into(),
        spec: pvfs_config::KindSpec::Local { mount: "/tmp".into(), targets: "/tmp/targets".into() },
        bench: Default::default(),
        packages: Default::default(),
        repos: vec![],
        azure: None,
        policy: None,
        firewall: Default::default(),
    }
}

/// `up` interrupted (Ctrl-C) before a unit could start: nothing is sent to the agent, every
/// unit is reported skipped, and the recap says the run was interrupted (not converged).
#[tokio::test]
async fn a_stopped_converge_starts_no_unit() {
    use pvfs_coord::converge::{Options, UpEvent, converge};
    let pki = Pki::new();
    pki.agent_cert("n1", &["127.0.0.1"]);
    let agent = start_agent(&pki, "n1", "127.0.0.1").await;
    let cluster = cluster_of(&[node("n1", agent.addr)]);
    let target = tempfile::tempdir().unwrap();
    let dir = target.path().join("made");
    let step =
        pvfs_steps::Step::Directory(pvfs_steps::Directory { path: dir.display().to_string(), mode: 0o755 });
    let unit = |id, after| pvfs_plan::Unit {
        id,
        node: "n1".into(),
        label: format!("u{id}"),
        steps: vec![step.clone()],
        after,
    };
    let plan = pvfs_plan::Plan { units: vec![unit(0, vec![]), unit(1, vec![0])] };
    let options = Options::default();
    options.stop.cancel();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let recap = converge(&cluster, &plan, &pki.dialer(), &options, tx).await;
    let mut skipped = Vec::new();
    while let Ok(event) = rx.try_recv() {
        match event {
            UpEvent::UnitSkipped { label, reason, .. } => skipped.push((label, reason)),
            other => panic!("nothing may start after the stop: {other:?}"),
        }
    }
    let reason = "interrupted before it started".to_owned();
    assert_eq!(skipped, [("u0".to_owned(), reason.clone()), ("u1".to_owned(), reason)]);
    assert!(recap.interrupted && !recap.converged(), "{recap:?}");
    assert_eq!(recap.run.nodes[0].1.skipped, 2);
    assert!(!dir.exists(), "the step ran");
    agent.stop().await;
}

/// `down --wipe` interrupted: with `stop_between_steps` the unit under way stops too, after
/// the step the agent is running (here a gate, which stops waiting), and no later step runs.
#[tokio::test]
async fn a_stop_between_steps_leaves_the_unit_after_the_step_under_way() {
    use pvfs_coord::converge::{Options, UpEvent, converge};
    let pki = Pki::new();
    pki.agent_cert("n1", &["127.0.0.1"]);
    let agent = start_agent(&pki, "n1", "127.0.0.1").await;
    let cluster = cluster_of(&[node("n1", agent.addr)]);
    // No hidden component: the policy refuses dotted paths.
    let target = tempfile::Builder::new().prefix("pvfs-stop-").tempdir().unwrap();
    let after = target.path().join("after");
    // A gate that cannot pass (its directory never appears), then a step that would act.
    let gate = pvfs_steps::Step::Gate(pvfs_steps::Gate {
        kind: pvfs_steps::GateKind::Writable { dir: target.path().join("never").display().to_string() },
        deadline: Duration::from_secs(120),
    });
    let then =
        pvfs_steps::Step::Directory(pvfs_steps::Directory { path: after.display().to_string(), mode: 0o755 });
    let plan = pvfs_plan::Plan {
        units: vec![pvfs_plan::Unit {
            id: 0,
            node: "n1".into(),
            label: "wipe".into(),
            steps: vec![gate, then],
            after: vec![],
        }],
    };
    let options = Options { stop_between_steps: true, ..Options::default() };
    let stop = options.stop.clone();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let dialer = pki.dialer();
    let run = tokio::spawn(async move { converge(&cluster, &plan, &dialer, &options, tx).await });
    // Stop once the agent is running the gate.
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        let mut seen = Vec::new();
        while let Some(event) = rx.recv().await {
            if let UpEvent::Step { event: pvfs_steps::StepEvent::Started { index: 0 }, .. } = event {
                return Ok(());
            }
            seen.push(format!("{event:?}"));
        }
        Err(seen)
    })
    .await;
    assert_eq!(waited, Ok(Ok(())), "the gate never started");
    stop.cancel();
    let recap =
        tokio::time::timeout(Duration::from_secs(30), run).await.expect("the unit did not stop").unwrap();
    assert!(recap.interrupted && !recap.converged(), "{recap:?}");
    assert_eq!(recap.run.failures.len(), 1, "{recap:?}");
    assert!(
        recap.run.failures[0].contains("interrupted during step 1 of 2: the agent finishes that step"),
        "{:?}",
        recap.run.failures
    );
    assert_eq!((recap.run.nodes[0].1.failed, recap.run.nodes[0].1.skipped), (1, 1));
    // The agent saw the call end: its gate stopped waiting, and the next step never ran (its
    // probes come every second, so two seconds is past its next look).
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!after.exists(), "a step after the stop ran");
    agent.stop().await;
}

/// A benchmark on `clients` with a small IOR workload, in a directory of its own.
fn bench_spec(clients: Vec<Node>, dir: &Path) -> pvfs_coord::bench::BenchSpec {
    let mut workload = pvfs_bench::params::Preset::Throughput.workload();
    workload.set_all([("t", "64k"), ("b", "256k"), ("i", "1")]).unwrap();
    pvfs_coord::bench::BenchSpec {
        runner: pvfs_bench::launch::Runner::AgentsBuiltin,
        workload,
        clients,
        tasks_per_client: 1,
        dir: dir.to_owned(),
        mpi_ssh: false,
        drop_caches: vec![],
        io500_program: None,
        lustre_servers: vec![],
    }
}

/// A client whose agent is stopped ends the run before it starts, naming the client in the
/// error's own field (not only in its text).
#[tokio::test]
async fn a_bench_client_that_cannot_be_reached_is_named() {
    use pvfs_coord::bench::{self, BenchError};
    let pki = Pki::new();
    pki.agent_cert("n1", &["127.0.0.1"]);
    let agent = start_agent(&pki, "n1", "127.0.0.1").await;
    let addr = agent.addr;
    agent.stop().await;
    let dir = tempfile::tempdir().unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let spec = bench_spec(vec![node("n1", addr)], dir.path());
    let outcome = bench::run(&spec, &pki.dialer(), tx, CancellationToken::new()).await;
    let Some(BenchError::Unreachable { node, source }) = &outcome.error else { panic!("{outcome:?}") };
    assert_eq!((node.as_str(), source.kind), ("n1", FailureKind::Refused), "{source}");
    assert!(!outcome.interrupted() && outcome.phases.is_empty());
    let text = outcome.error.as_ref().unwrap().to_string();
    assert!(text.starts_with("client n1 cannot be reached: "), "{text}");
}

/// A run cancelled (Ctrl-C) is `Interrupted`, naming the iteration and phase it stopped in;
/// its text is what results.json has always kept ("iteration 0, write: interrupted").
#[tokio::test]
async fn a_cancelled_bench_is_interrupted_not_failed() {
    use pvfs_bench::phase::{IorPhase, Phase};
    use pvfs_coord::bench::{self, BenchError};
    let pki = Pki::new();
    pki.agent_cert("n1", &["127.0.0.1"]);
    let agent = start_agent(&pki, "n1", "127.0.0.1").await;
    let dir = tempfile::tempdir().unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let spec = bench_spec(vec![node("n1", agent.addr)], dir.path());
    let cancel = CancellationToken::new();
    cancel.cancel();
    let outcome = bench::run(&spec, &pki.dialer(), tx, cancel).await;
    let error = outcome.error.as_ref().expect("an interrupted run says so");
    assert!(
        matches!(error, BenchError::Interrupted { during: Some((0, Phase::Ior(IorPhase::Write))) }),
        "{error:?}"
    );
    assert!(outcome.interrupted());
    assert_eq!(error.to_string(), "iteration 0, write: interrupted");
    agent.stop().await;
}
