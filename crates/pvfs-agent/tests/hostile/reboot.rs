//! A reboot asked while the node is busy: the agent refuses it, naming what runs, so that a
//! reboot never cuts off a unit halfway through its steps or a benchmark mid-phase. The kernel
//! asked for does not exist, so even a missing lock could not reboot this machine: the agent
//! would refuse it as not installed instead — which is what it answers once the node is free,
//! proving that the refusals came from the locks.

use crate::harness::{self, Agent, Pki};
use pvfs_bench::launch::Engine;
use pvfs_bench::params::Preset;
use pvfs_bench::phase::{IorPhase, Phase};
use pvfs_bench::request::PhaseRequest;
use pvfs_proto::convert::bench::phase_request_to;
use pvfs_proto::pb;
use std::time::{Duration, Instant, SystemTime};
use tonic::Code;

/// A kernel release by the grammar, installed on no machine.
const KERNEL: &str = "0.0.1-1.pvfs_hostile.x86_64";

async fn reboot(agent: &Agent) -> tonic::Status {
    let mut client = agent.client.clone();
    let answer = client.reboot(pb::RebootRequest { kernel: KERNEL.into() }).await;
    answer.expect_err("this node cannot reboot into a kernel it does not have")
}

/// Once the node is free, the reboot is refused for what it is: the kernel is not installed.
async fn refused_as_not_installed(agent: &Agent) {
    let started = Instant::now();
    loop {
        let status = reboot(agent).await;
        if status.code() == Code::Aborted && started.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        assert!(
            status.message().contains(&format!("kernel {KERNEL} is not installed")),
            "{}",
            status.message()
        );
        return;
    }
}

#[tokio::test]
async fn a_reboot_is_refused_while_a_unit_converges() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let dir = harness::scratch("reboot-unit");
    let missing = format!("{}/never", dir.path().display());
    // A unit waiting at a gate that will not hold for a minute: it holds the node.
    let mut client = agent.connect().await;
    let request = pb::ApplyRequest {
        steps: vec![harness::step(pb::step::Step::Gate(pb::GateStep {
            deadline_ms: 60_000,
            kind: Some(pb::gate_step::Kind::Writable(missing)),
        }))],
        dry_run: false,
        after_changes: false,
        label: "waiting".into(),
        cluster_hosts: vec![],
    };
    let mut stream = client.apply(request).await.unwrap().into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert!(matches!(first.event, Some(pb::apply_event::Event::Started(_))), "{first:?}");

    let status = reboot(&agent).await;
    assert_eq!(status.code(), Code::Aborted, "{status:?}");
    assert_eq!(status.message(), "a unit is converging this node; pvfs reboots a node only between units");

    drop(stream);
    drop(client);
    refused_as_not_installed(&agent).await;
    agent.assert_still_serving().await;
    agent.stop().await;
}

#[tokio::test]
async fn a_reboot_is_refused_while_a_benchmark_runs() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let scratch = harness::scratch("reboot-bench");
    let req = PhaseRequest {
        job_tag: None,
        stop_after: None,
        engine: Engine::Builtin,
        workload: Preset::Throughput.workload(),
        dir: scratch.path().join("pvfs-bench/run"),
        first_task: 0,
        tasks: 1,
        total_tasks: 1,
        tasks_per_client: 1,
        iteration: 0,
        phase: Phase::Ior(IorPhase::Write),
    };
    // Clients start a phase together at an instant ahead: from the answer on, the phase holds
    // the node while it waits for that instant.
    let start_at = SystemTime::now() + Duration::from_secs(45);
    let mut client = agent.connect().await;
    let stream = client.bench_phase(phase_request_to(&req, start_at)).await.expect("the phase is accepted");

    let status = reboot(&agent).await;
    assert_eq!(status.code(), Code::Aborted, "{status:?}");
    assert_eq!(status.message(), "a benchmark is running on this node; reboot it once the run is over");
    assert!(!scratch.path().join("pvfs-bench/run").exists(), "the phase has not started yet");

    drop(stream);
    // The phase waits for its instant whether or not anyone listens; stopping the agent ends it.
    agent.stop().await;
}
