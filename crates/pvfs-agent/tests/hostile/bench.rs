//! Benchmark requests a real coordinator never sends: sizes that would make the agent allocate
//! terabytes, counts whose sums wrap in release builds, directories outside a run, and
//! symlinks planted in the run's (shared) directory. Each is refused with an error naming the
//! field or the path, nothing is written through a symlink, and the agent goes on serving.

use crate::harness::{self, Agent, Pki, TIMEOUT};
use pvfs_bench::launch::Engine;
use pvfs_bench::params::{Preset, Workload};
use pvfs_bench::phase::{IorPhase, MdtestPhase, Phase};
use pvfs_bench::request::LaunchRequest;
use pvfs_bench::request::PhaseRequest;
use pvfs_proto::convert::bench::{launch_request_to, phase_request_to};
use pvfs_proto::pb;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};
use tonic::Code;

/// A phase request a coordinator could send: 2 of 4 tasks, IOR's write, in `dir`.
fn phase(dir: &Path, workload: Workload, phase: Phase) -> pb::BenchPhaseRequest {
    let req = PhaseRequest {
        job_tag: None,
        stop_after: None,
        engine: Engine::Builtin,
        workload,
        dir: dir.to_owned(),
        first_task: 0,
        tasks: 2,
        total_tasks: 4,
        tasks_per_client: 2,
        iteration: 0,
        phase,
    };
    phase_request_to(&req, UNIX_EPOCH)
}

/// The throughput preset's write with 1 MiB blocks: small enough that the agent's room check
/// passes on any machine the suite runs on.
pub(crate) fn ior_write(dir: &Path) -> pb::BenchPhaseRequest {
    let Workload::Ior(mut ior) = Preset::Throughput.workload() else { unreachable!() };
    (ior.transfer, ior.block) = (1 << 20, 1 << 20);
    phase(dir, Workload::Ior(ior), Phase::Ior(IorPhase::Write))
}

fn with_ior(
    mut req: pb::BenchPhaseRequest,
    change: impl FnOnce(&mut pb::IorWorkload),
) -> pb::BenchPhaseRequest {
    let Some(pb::bench_phase_request::Workload::Ior(ior)) = &mut req.workload else { unreachable!() };
    change(ior);
    req
}

/// Sends a phase and reads its stream to the end: the events, or the status it ended with.
async fn run_phase(agent: &Agent, req: pb::BenchPhaseRequest) -> Result<Vec<pb::BenchEvent>, tonic::Status> {
    let mut client = agent.client.clone();
    let mut stream = client.bench_phase(req).await?.into_inner();
    let mut events = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(60), stream.message()).await {
            Ok(Ok(Some(event))) => events.push(event),
            Ok(Ok(None)) => return Ok(events),
            Ok(Err(status)) => return Err(status),
            Err(_) => panic!("the phase's stream did not end within 60 s"),
        }
    }
}

/// Refused before anything runs: INVALID_ARGUMENT whose message starts with `field`.
async fn refused(agent: &Agent, req: pb::BenchPhaseRequest, field: &str, says: &str) {
    let status = tokio::time::timeout(TIMEOUT, run_phase(agent, req))
        .await
        .expect("answered in time")
        .expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().starts_with(field), "expected {field:?} first: {}", status.message());
    assert!(status.message().contains(says), "expected {says:?} in: {}", status.message());
}

#[tokio::test]
async fn oversized_sizes_are_refused_naming_the_field() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let scratch = harness::scratch("bench-sizes");
    let dir = scratch.path().join("pvfs-bench/run");

    // `pvfsctl bench --set b=1t --set t=1t` aborted the agent on a 1 TiB allocation.
    let huge = with_ior(ior_write(&dir), |p| (p.transfer, p.block) = (1 << 40, 1 << 40));
    refused(&agent, huge, "workload.ior.transfer:", "transfer 1t is larger than 1g").await;
    // segments x block overflows u64 (2^40 x 10^8): refused, not wrapped to something small.
    let wraps = with_ior(ior_write(&dir), |p| (p.block, p.segments) = (1 << 40, 100_000_000));
    refused(&agent, wraps, "workload.ior.segments:", "block 1t x 100000000 segments").await;
    let zero = with_ior(ior_write(&dir), |p| p.segments = 0);
    refused(&agent, zero, "workload.ior.segments:", "segments 0 is not between 1").await;
    let forever = with_ior(ior_write(&dir), |p| p.iterations = u32::MAX);
    refused(&agent, forever, "workload.ior.iterations:", "not between 1 and 1000").await;
    // A stonewall of 136 years, and a wear-out with no stonewall to wear out at (IOR's refusal).
    let endless = with_ior(ior_write(&dir), |p| p.deadline = u32::MAX);
    refused(&agent, endless, "workload.ior.deadline:", "more than a day").await;
    let no_wall = with_ior(ior_write(&dir), |p| p.wear_out = true);
    refused(&agent, no_wall, "workload.ior.wear_out:", "wear_out needs a stonewall").await;
    let blind = with_ior(ior_write(&dir), |p| (p.read, p.verify) = (false, true));
    refused(&agent, blind, "workload.ior.verify:", "verify (-R) checks what the read phase reads").await;
    // mdtest's tree grows as branch^depth.
    let mut tree = phase(&dir, Preset::Metadata.workload(), Phase::Mdtest(MdtestPhase::TreeCreate));
    if let Some(pb::bench_phase_request::Workload::Mdtest(md)) = &mut tree.workload {
        (md.branch, md.depth) = (u32::MAX, 32);
    }
    refused(&agent, tree, "workload.mdtest.branch:", "more than 10000000 directories").await;
    // mdtest's io500 options: a file's bytes are held in memory, items and the stonewall bounded.
    let md = |change: fn(&mut pb::MdtestWorkload)| {
        let mut req = phase(&dir, Preset::Metadata.workload(), Phase::Mdtest(MdtestPhase::FileCreate));
        if let Some(pb::bench_phase_request::Workload::Mdtest(md)) = &mut req.workload {
            change(md);
        }
        req
    };
    let huge = md(|m| m.write_bytes = u64::MAX);
    refused(&agent, huge, "workload.mdtest.write_bytes:", "the most one task may hold in memory").await;
    let many = md(|m| m.per_task = u64::MAX);
    refused(&agent, many, "workload.mdtest.per_task:", "more than 100000000 items per task").await;
    let endless = md(|m| (m.depth, m.deadline) = (0, u32::MAX));
    refused(&agent, endless, "workload.mdtest.deadline:", "more than a day").await;
    // A find's -newer stays below the scanned directory.
    let mut climb = phase(&dir, Preset::Metadata.workload(), Phase::Find);
    climb.workload = Some(pb::bench_phase_request::Workload::Find(pb::FindWorkload {
        newer: "../../etc".into(),
        ..Default::default()
    }));
    refused(&agent, climb, "workload.find.newer:", "of plain names").await;
    // A name pattern pfind would read as a regular expression, and one no file name could be.
    for (name, says) in [("file[0-9]", "pfind reads [ ] ^ $"), ("a\0b", "without NUL")] {
        let mut bad = phase(&dir, Preset::Metadata.workload(), Phase::Find);
        bad.workload = Some(pb::bench_phase_request::Workload::Find(pb::FindWorkload {
            name: name.into(),
            ..Default::default()
        }));
        refused(&agent, bad, "workload.find.name:", says).await;
    }
    let blind = md(|m| (m.read, m.verify) = (true, true));
    refused(&agent, blind, "workload.mdtest.verify:", "Verify read requires that read bytes is > 0").await;

    assert!(!scratch.path().join("pvfs-bench").exists(), "nothing was made");
    agent.assert_still_serving().await;
    agent.stop().await;
}

#[tokio::test]
async fn task_counts_that_would_wrap_are_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let scratch = harness::scratch("bench-counts");
    let dir = scratch.path().join("pvfs-bench/run");
    let good = ior_write(&dir);

    // first_task = u32::MAX was accepted: first_task + tasks wrapped to 1, inside total_tasks.
    let wraps = pb::BenchPhaseRequest { first_task: u32::MAX, ..good.clone() };
    refused(&agent, wraps, "first_task = 4294967295:", "past 2^32").await;
    let threads = pb::BenchPhaseRequest { tasks: u32::MAX, total_tasks: u32::MAX, ..good.clone() };
    refused(&agent, threads, "tasks = 4294967295:", "1 to 4096 tasks").await;
    let total = pb::BenchPhaseRequest { total_tasks: u32::MAX, ..good.clone() };
    refused(&agent, total, "total_tasks = 4294967295:", "1 to 1048576 tasks").await;
    let per_client = pb::BenchPhaseRequest { tasks_per_client: u32::MAX, ..good.clone() };
    refused(&agent, per_client, "tasks_per_client = 4294967295:", "at most 4096").await;
    let iteration = pb::BenchPhaseRequest { iteration: u32::MAX, ..good.clone() };
    refused(&agent, iteration, "iteration = 4294967295:", "the workload has 4 iterations").await;
    // A shared file of 2^20 tasks x 16 TiB passes the largest file offset.
    let offsets = with_ior(pb::BenchPhaseRequest { total_tasks: 1 << 20, ..good.clone() }, |p| {
        (p.block, p.transfer, p.file_per_proc) = (16 << 40, 1 << 30, false)
    });
    refused(&agent, offsets, "total_tasks:", "largest file offset").await;

    // Outside a run's own directory, or climbing out of it.
    let etc = pb::BenchPhaseRequest { dir: "/etc".into(), ..good.clone() };
    refused(&agent, etc, "dir = \"/etc\":", "MOUNT/pvfs-bench/RUN").await;
    let climb = pb::BenchPhaseRequest { dir: "/mnt/pvfs-bench/../../etc/pvfs-bench/x".into(), ..good };
    refused(&agent, climb, "dir = ", "no ..").await;

    assert!(!scratch.path().join("pvfs-bench").exists(), "nothing was made");
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// Within every bound, but 4096 tasks with 1 GiB buffers each need 4 TiB: this node cannot
/// hold that, and says so before starting anything.
#[tokio::test]
async fn a_phase_the_node_cannot_hold_is_refused_before_it_starts() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let scratch = harness::scratch("bench-memory");
    let dir = scratch.path().join("pvfs-bench/run");
    let req = with_ior(
        pb::BenchPhaseRequest { tasks: 4096, total_tasks: 4096, tasks_per_client: 4096, ..ior_write(&dir) },
        |p| (p.transfer, p.block) = (1 << 30, 1 << 30),
    );
    let status = run_phase(&agent, req).await.expect_err("refused");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(
        status.message().starts_with("4096 tasks need about 4.0 TiB of memory")
            && status.message().contains("more than half of this client's")
            && status.message().ends_with("lower procs or transfer"),
        "{}",
        status.message()
    );
    assert!(!scratch.path().join("pvfs-bench").exists());
    agent.assert_still_serving().await;
    agent.stop().await;
}

#[tokio::test]
async fn launch_sizes_that_would_wrap_are_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let scratch = harness::scratch("bench-launch");
    let mut wire = launch_request_to(&LaunchRequest {
        engine: Engine::Builtin,
        workload: Preset::Throughput.workload(),
        dir: scratch.path().join("pvfs-bench/run"),
        clients: vec![("c1".into(), "10.0.0.1".into()), ("c2".into(), "10.0.0.2".into())],
        tasks_per_client: 2,
        mpi_ssh: false,
        io500_program: None,
        drop_caches: false,
    });
    // u32::MAX x 2 hosts wrapped to a small rank count, and a hostfile of 4 billion slots.
    wire.tasks_per_host = u32::MAX;
    let mut client = agent.client.clone();
    let status = client.launch(wire).await.expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().starts_with("tasks_per_host = 4294967295 on 2 hosts:"), "{}", status.message());
    assert!(!scratch.path().join("pvfs-bench").exists());
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// Issue 24: a Launch naming 100,000 hosts at one task each was accepted and started
/// `mpirun -np 100000`. Now refused, naming the limit, before anything is made.
#[tokio::test]
async fn a_launch_on_more_clients_than_a_run_takes_is_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let scratch = harness::scratch("bench-hosts");
    let clients =
        (0..100_000).map(|i| (format!("c{i}"), format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255)));
    let wire = launch_request_to(&LaunchRequest {
        engine: Engine::Builtin,
        workload: Preset::Throughput.workload(),
        dir: scratch.path().join("pvfs-bench/run"),
        clients: clients.collect(),
        tasks_per_client: 1,
        mpi_ssh: false,
        io500_program: None,
        drop_caches: false,
    });
    let mut client = agent.client.clone();
    let status = client.launch(wire).await.expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().starts_with(&format!(
            "tasks_per_host = 1 on 100000 hosts: 100000 clients is more than {} in one run",
            pvfs_bench::params::limits::MAX_CLIENTS
        )),
        "{}",
        status.message()
    );
    assert!(!scratch.path().join("pvfs-bench").exists());
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// The run's directory is on a shared file system: another user may have planted a symlink
/// at the hostfile's name, or made the run directory itself a symlink. Neither is followed.
#[tokio::test]
async fn a_planted_symlink_at_the_hostfile_is_not_followed() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let scratch = harness::scratch("bench-hostfile");
    let victim = scratch.path().join("victim");
    std::fs::write(&victim, "root-owned contents").unwrap();
    let run = scratch.path().join("pvfs-bench/run");
    std::fs::create_dir_all(&run).unwrap();
    std::os::unix::fs::symlink(&victim, run.join("mpi-hostfile")).unwrap();
    let launch = |dir: &Path| {
        launch_request_to(&LaunchRequest {
            engine: Engine::Builtin,
            workload: Preset::Throughput.workload(),
            dir: dir.to_owned(),
            clients: vec![("n1".into(), "127.0.0.1".into())],
            tasks_per_client: 1,
            mpi_ssh: false,
            io500_program: None,
            drop_caches: false,
        })
    };
    let status = launch_stream_error(&agent, launch(&run)).await;
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(
        status.message().contains("run/mpi-hostfile: it exists and is not a plain file")
            && status.message().contains("never follows symlinks"),
        "{}",
        status.message()
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root-owned contents");

    // The run directory itself a symlink to somewhere else: refused, nothing made there.
    let elsewhere = scratch.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, scratch.path().join("pvfs-bench/linked")).unwrap();
    // Refused on arrival now, by the policy's `bench-dir` rules (no link on the way).
    let mut client = agent.client.clone();
    let status = client.launch(launch(&scratch.path().join("pvfs-bench/linked"))).await.expect_err("refused");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(status.message().contains("refused by policy rule `symlink`"), "{}", status.message());
    assert!(status.message().contains("pvfs-bench/linked is a symbolic link"), "{}", status.message());
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    agent.assert_still_serving().await;
    agent.stop().await;
}

async fn launch_stream_error(agent: &Agent, req: pb::LaunchRequest) -> tonic::Status {
    let mut client = agent.client.clone();
    let mut stream = client.launch(req).await.expect("accepted").into_inner();
    // The first message is the refusal: nothing starts before the hostfile is written.
    match tokio::time::timeout(Duration::from_secs(30), stream.message()).await.expect("an answer in time") {
        Ok(Some(event)) => panic!("the launch went ahead: {event:?}"),
        Ok(None) => panic!("the launch ended without an error"),
        Err(status) => status,
    }
}

/// fio opens its files by path; the agent makes them first, through the run directory opened
/// without following symlinks, so a planted symlink at a test file's name is refused.
#[tokio::test]
async fn a_planted_symlink_at_a_test_file_is_not_followed() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let scratch = harness::scratch("bench-testfile");
    let victim = scratch.path().join("victim");
    std::fs::write(&victim, "root-owned contents").unwrap();
    let run = scratch.path().join("pvfs-bench/run");
    std::fs::create_dir_all(&run).unwrap();
    std::os::unix::fs::symlink(&victim, run.join("ior.00000001")).unwrap();
    let mut req = ior_write(&run);
    req.engine = pb::bench_phase_request::Engine::Fio as i32;
    let status = run_phase(&agent, req).await.expect_err("refused");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(status.message().contains("run/ior.00000001: it is a symlink"), "{}", status.message());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root-owned contents");
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// A wear-out answer nobody waits for (no phase at a stonewall, or another phase's) changes
/// nothing and says so; one for no phase at all is refused as malformed.
#[tokio::test]
async fn a_wear_out_answer_for_no_waiting_phase_is_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let mut client = agent.client.clone();
    let answer = pvfs_proto::convert::bench::wear_out_request_to(0, Phase::Ior(IorPhase::Write), 5);
    let status = client.bench_wear_out(answer).await.expect_err("refused");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(status.message().contains("no ior-write of iteration 0 is waiting at a stonewall"), "{status:?}");
    let status = client
        .bench_wear_out(pb::BenchWearOutRequest { iteration: 0, phase: 0, pairs: 5 })
        .await
        .expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// `--engine io500` names a program the agent runs as root under mpirun. A request may name
/// any path: only a file named io500 is taken from the wire, and only one nobody else could
/// have put there is run (a link named io500 in a directory anyone can write, to a shell, is
/// refused with the directory named); an io500 knob of 0 and a mismatched program are refused
/// naming the field. Nothing is made in the run's directory for any of them.
#[tokio::test]
async fn an_io500_program_the_agent_must_not_run_is_refused() {
    use pvfs_bench::io500::plan::Io500Params;
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let scratch = harness::scratch("bench-io500");
    let run = scratch.path().join("pvfs-bench/run");
    let launch = |program: &Path| {
        launch_request_to(&LaunchRequest {
            engine: Engine::Io500,
            workload: Workload::Io500(Io500Params::default()),
            dir: run.clone(),
            clients: vec![("n1".into(), "127.0.0.1".into())],
            tasks_per_client: 1,
            mpi_ssh: false,
            io500_program: Some(program.to_owned()),
            drop_caches: false,
        })
    };
    let mut client = agent.client.clone();
    for program in ["/bin/sh", "/opt/io500/../../bin/sh/io500", "io500", "/opt/io500/io500.sh"] {
        let status = client.launch(launch(Path::new(program))).await.expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{program}: {status:?}");
        assert!(status.message().starts_with("workload.io500.program = "), "{}", status.message());
    }
    let mut zero = launch(Path::new("/opt/io500/io500"));
    if let Some(pb::launch_request::Workload::Io500(w)) = &mut zero.workload {
        w.mdtest_hard_files = 0;
    }
    let status = client.launch(zero).await.expect_err("refused");
    assert!(status.message().starts_with("workload.io500.mdtest_hard_files:"), "{}", status.message());
    let mut forever = launch(Path::new("/opt/io500/io500"));
    if let Some(pb::launch_request::Workload::Io500(w)) = &mut forever.workload {
        w.stonewall_s = u32::MAX;
    }
    let status = client.launch(forever).await.expect_err("refused");
    assert!(status.message().starts_with("workload.io500."), "{}", status.message());
    let mut builtin = launch(Path::new("/opt/io500/io500"));
    builtin.program = pb::launch_request::Program::Builtin as i32;
    let status = client.launch(builtin).await.expect_err("refused");
    assert!(status.message().contains("an IO500 under mpirun is the real io500's"), "{}", status.message());

    // A link named io500, to a shell, in a directory anyone may write.
    let open = scratch.path().join("open");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    std::os::unix::fs::symlink("/bin/sh", open.join("io500")).unwrap();
    let status = launch_stream_error(&agent, launch(&open.join("io500"))).await;
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(
        status.message().contains("is not run:")
            && status
                .message()
                .contains(&format!("{} can be written by its group or others", open.display())),
        "{}",
        status.message()
    );
    // Missing altogether.
    let status = launch_stream_error(&agent, launch(&scratch.path().join("none/io500"))).await;
    assert!(status.message().contains("cannot resolve it"), "{}", status.message());
    assert!(!scratch.path().join("pvfs-bench").exists(), "nothing was made for a refused launch");
    agent.assert_still_serving().await;
    agent.stop().await;
}
