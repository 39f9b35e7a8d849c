//! Calls that must not lock a node out, and certificates that must not command it: a gate
//! deadline beyond the cap, a caller that disconnects mid-gate, certificates signed by the
//! cluster CA that are not coordinator certificates, and a coordinator certificate revoked
//! while the agent runs (and while its Metrics stream is open). All over real mutual TLS
//! against a real agent.

use crate::harness::{self, Agent, Pki, connect};
use pvfs_proto::pb;
use std::path::Path;
use std::time::{Duration, Instant};

/// A gate that waits for `dir` to be writable, for up to `deadline`.
fn writable_gate(dir: &str, deadline_ms: u64) -> pb::Step {
    harness::step(pb::step::Step::Gate(pb::GateStep {
        deadline_ms,
        kind: Some(pb::gate_step::Kind::Writable(dir.into())),
    }))
}

#[tokio::test]
async fn a_gate_deadline_beyond_the_cap_is_refused_and_the_node_stays_free() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let dir = harness::scratch("deadline");
    let missing = format!("{}/never", dir.path().display());
    let days = 1000 * 3600 * 24 * 365;
    let err = agent.apply(vec![writable_gate(&missing, days)]).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert!(
        err.message().starts_with(
            "step 0: a gate deadline of 31536000s is longer than an agent waits (3600s at most)"
        ),
        "{}",
        err.message()
    );
    // Refused before taking the lock: the next unit runs at once.
    let target = format!("{}/target", dir.path().display());
    let done = agent.apply(vec![harness::directory(&target, 0o755)]).await.expect("the node is free");
    assert!(done.all_succeeded(), "{:?}", done.failure());
    agent.assert_still_serving().await;
    agent.stop().await;
}

#[tokio::test]
async fn a_caller_that_disconnects_mid_gate_releases_the_node_within_seconds() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let dir = harness::scratch("gone");
    let missing = format!("{}/never", dir.path().display());

    // A caller on its own connection starts an hour-long gate that will never hold...
    let mut gone = connect(pki.path(), "pvfsctl", agent.addr).await.unwrap();
    let request = pb::ApplyRequest {
        steps: vec![writable_gate(&missing, 3_600_000)],
        dry_run: false,
        after_changes: false,
        label: "gone".into(),
        cluster_hosts: vec![],
    };
    let mut stream = gone.apply(request).await.unwrap().into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert!(matches!(first.event, Some(pb::apply_event::Event::Started(_))), "{first:?}");

    // ...and holds the node while it is there (the premise: the lock is real)...
    let target = format!("{}/target", dir.path().display());
    let busy = agent.apply(vec![harness::directory(&target, 0o755)]).await.unwrap_err();
    assert_eq!(busy.code(), tonic::Code::Aborted, "{busy:?}");
    assert!(busy.message().contains("another `pvfsctl up` is converging this node"), "{}", busy.message());

    // ...then goes away without a word.
    drop(stream);
    drop(gone);
    let left = Instant::now();
    let done = loop {
        match agent.apply(vec![harness::directory(&target, 0o755)]).await {
            Ok(done) => break done,
            Err(status) if status.code() == tonic::Code::Aborted => {
                assert!(
                    left.elapsed() < Duration::from_secs(10),
                    "the node is still locked 10 s after the caller left"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(status) => panic!("{status:?}"),
        }
    };
    assert!(done.all_succeeded(), "{:?}", done.failure());
    assert!(dir.path().join("target").is_dir());
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// Signs `dir/NAME.crt` with the cluster CA in `dir`, with exactly `usages` as its extended key
/// usages (none: no extension at all). `pvfsctl ca issue` never makes these; a careless CA
/// holder with openssl could.
fn issue_raw(dir: &Path, name: &str, usages: Vec<rcgen::ExtendedKeyUsagePurpose>) {
    let ca_key = rcgen::KeyPair::from_pem(&std::fs::read_to_string(dir.join("ca.key")).unwrap()).unwrap();
    let issuer =
        rcgen::Issuer::from_ca_cert_pem(&std::fs::read_to_string(dir.join("ca.crt")).unwrap(), ca_key)
            .unwrap();
    let mut params = rcgen::CertificateParams::new(vec![name.to_owned()]).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    params.extended_key_usages = usages;
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).unwrap();
    std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
}

/// Info and Apply with the certificate `name`; the status each was refused with.
async fn refused_as(pki: &Pki, agent: &Agent, name: &str, probe: &Path) -> (tonic::Status, tonic::Status) {
    let mut client =
        connect(pki.path(), name, agent.addr).await.expect("the handshake passes: the CA signed it");
    let info = client.info(pb::InfoRequest {}).await.expect_err("Info must be refused");
    let request = pb::ApplyRequest {
        steps: vec![harness::directory(&probe.display().to_string(), 0o755)],
        dry_run: false,
        after_changes: false,
        label: "hostile".into(),
        cluster_hosts: vec![],
    };
    let apply = client.apply(request).await.expect_err("Apply must be refused");
    assert!(!probe.exists(), "a refused certificate changed the node");
    (info, apply)
}

#[tokio::test]
async fn a_ca_signed_certificate_without_client_auth_cannot_command_the_agent() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let dir = harness::scratch("eku");
    let probe = dir.path().join("made");

    // No extended key usage at all: webpki lets it through the handshake as "any usage"; the
    // agent itself must not.
    issue_raw(pki.path(), "bare", vec![]);
    let (info, apply) = refused_as(&pki, &agent, "bare", &probe).await;
    for status in [info, apply] {
        assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
        assert!(
            status.message().starts_with("certificate \"bare\" (serial ")
                && status.message().contains(
                    "is not a coordinator certificate: it lacks the clientAuth usage (its extended key usages: none: the extension is absent)"
                ),
            "{}",
            status.message()
        );
    }

    // Another agent's certificate (serverAuth only), the one a compromised node holds: refused
    // by the handshake already, and never reaches the service.
    pvfs_tls::issue(pki.path(), "n2", &["127.0.0.2".to_owned()], pvfs_tls::Usage::Agent, false).unwrap();
    let refused = match connect(pki.path(), "n2", agent.addr).await {
        Err(err) => format!("{err:?}"),
        Ok(mut client) => {
            format!("{:?}", client.info(pb::InfoRequest {}).await.expect_err("n2 must be refused"))
        }
    };
    assert!(refused.contains("alert") || refused.contains("BadCertificate"), "{refused}");
    let mut again = connect(pki.path(), "n2", agent.addr).await.ok();
    if let Some(client) = again.as_mut() {
        let request = pb::ApplyRequest {
            steps: vec![harness::directory(&probe.display().to_string(), 0o755)],
            dry_run: false,
            after_changes: false,
            label: "hostile".into(),
            cluster_hosts: vec![],
        };
        assert!(client.apply(request).await.is_err());
    }
    assert!(!probe.exists());
    agent.assert_still_serving().await;
    agent.stop().await;
}

#[tokio::test]
async fn a_coordinator_certificate_revoked_while_the_agent_runs_is_refused_and_a_new_one_works() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let dir = harness::scratch("revoked");
    let probe = dir.path().join("made");
    let mut before = agent.client.clone();
    before.info(pb::InfoRequest {}).await.expect("the coordinator gets in before the revocation");

    // Revoked in the agent's TLS directory while it runs, no restart.
    let revocation = pvfs_tls::revoke_named(pki.path(), "pvfsctl").unwrap();
    let want = format!("certificate \"pvfsctl\" (serial {}) is revoked", revocation.serial);
    // On the connection opened before the revocation...
    let status = before.info(pb::InfoRequest {}).await.expect_err("revoked on an open connection");
    assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
    assert!(status.message().starts_with(&want), "{}", status.message());
    // ...and on a new one, for every call.
    let (info, apply) = refused_as(&pki, &agent, "pvfsctl", &probe).await;
    for status in [info, apply] {
        assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
        assert!(status.message().starts_with(&want), "{}", status.message());
    }

    // A list the agent cannot read refuses everyone until it is fixed.
    let list = pki.path().join("revoked.txt");
    let good = std::fs::read_to_string(&list).unwrap();
    std::fs::write(&list, format!("{good}not-a-serial\n")).unwrap();
    pvfs_tls::issue(pki.path(), "pvfsctl", &[], pvfs_tls::Usage::Coordinator, true).unwrap();
    let mut fresh = connect(pki.path(), "pvfsctl", agent.addr).await.unwrap();
    let status = fresh.info(pb::InfoRequest {}).await.expect_err("an unreadable list fails closed");
    assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
    assert!(
        status.message().starts_with("this agent cannot read its list of revoked certificates (")
            && status.message().contains("revoked.txt:"),
        "{}",
        status.message()
    );

    // Fixed: the re-issued certificate (a new serial) works, with no restart.
    std::fs::write(&list, good).unwrap();
    fresh.info(pb::InfoRequest {}).await.expect("a newly issued coordinator certificate works");
    let steps = vec![harness::directory(&probe.display().to_string(), 0o755)];
    let mut stream = fresh
        .apply(pb::ApplyRequest {
            steps,
            dry_run: false,
            after_changes: false,
            label: "new".into(),
            cluster_hosts: vec![],
        })
        .await
        .unwrap()
        .into_inner();
    while stream.message().await.unwrap().is_some() {}
    assert!(probe.is_dir());
    agent.stop().await;
}

/// The next Metrics event within `TIMEOUT`: a sample, or the status the stream ended with.
async fn next_event(
    stream: &mut tonic::Streaming<pb::MetricsEvent>,
) -> Result<Option<pb::MetricsEvent>, tonic::Status> {
    tokio::time::timeout(harness::TIMEOUT, stream.message()).await.expect("a Metrics event within 10 s")
}

/// Issue 24: a revoked certificate's open Metrics stream kept streaming (every request is
/// checked, and a stream is one request). Now it ends with PERMISSION_DENIED, naming the
/// revocation, within seconds of `revoked.txt` changing; another coordinator's stream goes on.
#[tokio::test]
async fn an_open_metrics_stream_ends_once_its_certificate_is_revoked() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    pvfs_tls::issue(pki.path(), "other", &[], pvfs_tls::Usage::Coordinator, false).unwrap();
    let mut other = connect(pki.path(), "other", agent.addr).await.unwrap();
    let request = pb::MetricsRequest { epoch: 0, after_seq: 0, since_unix_ns: 0, processes: 0 };
    let mut doomed = agent.client.clone().metrics(request).await.unwrap().into_inner();
    let mut kept = other.metrics(request).await.unwrap().into_inner();
    for stream in [&mut doomed, &mut kept] {
        let event = next_event(stream).await.expect("the stream is healthy").expect("the stream is open");
        assert!(matches!(event.event, Some(pb::metrics_event::Event::Sample(_))), "{event:?}");
    }

    let revocation = pvfs_tls::revoke_named(pki.path(), "pvfsctl").unwrap();
    let revoked_at = Instant::now();
    let status = loop {
        match next_event(&mut doomed).await {
            Ok(Some(_)) => {
                assert!(revoked_at.elapsed() < Duration::from_secs(5), "still streaming 5 s after")
            }
            Ok(None) => panic!("the stream ended without saying why"),
            Err(status) => break status,
        }
    };
    assert!(revoked_at.elapsed() < Duration::from_secs(5), "cut only after {:?}", revoked_at.elapsed());
    assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
    let want = format!("certificate \"pvfsctl\" (serial {}) is revoked", revocation.serial);
    assert!(status.message().starts_with(&want), "{}", status.message());

    // The other coordinator's stream goes on, and it is still answered.
    let event = next_event(&mut kept).await.expect("the other stream is healthy").expect("and open");
    assert!(matches!(event.event, Some(pb::metrics_event::Event::Sample(_))), "{event:?}");
    other.info(pb::InfoRequest {}).await.expect("the other coordinator is still answered");
    drop((doomed, kept));
    agent.stop().await;
}
