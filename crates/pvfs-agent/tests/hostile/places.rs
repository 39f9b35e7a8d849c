//! Issue 24, items 1–4: where a unit or a benchmark may make the node write, mount or run.
//! Values that are paths escaping by `..` or by being relative, mounts a user could use
//! against root or from a host outside the cluster, another user's file replaced, and
//! benchmarks in system trees, in a new top-level directory, or filling a disk. Each is the
//! issue's reproduction as sent; each is refused naming its rule, the node is read back
//! unchanged, and the agent's Metrics stream goes on without a gap.

use crate::harness::{self, Agent, Pki, TIMEOUT, step};
use pvfs_bench::launch::Engine;
use pvfs_bench::params::{Preset, Workload};
use pvfs_bench::phase::{IorPhase, Phase};
use pvfs_bench::request::LaunchRequest;
use pvfs_bench::request::PhaseRequest;
use pvfs_proto::convert::bench::{launch_request_to, phase_request_to};
use pvfs_proto::pb;
use pvfs_proto::pb::step::Step as S;
use std::path::Path;
use std::time::UNIX_EPOCH;
use tonic::Code;

/// Sends `steps` for a cluster of `hosts`, as a dry run and as a real one: both refused with
/// `rule` on arrival. Returns the message.
async fn refused(agent: &Agent, steps: Vec<pb::Step>, hosts: &[&str], rule: &str) -> String {
    let mut message = String::new();
    for dry_run in [true, false] {
        let request = pb::ApplyRequest {
            steps: steps.clone(),
            dry_run,
            after_changes: false,
            label: "hostile".into(),
            cluster_hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
        };
        let status = agent.apply_request(request).await.expect_err("the agent must refuse this unit");
        assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
        message = status.message().to_owned();
        assert!(
            message.contains(&format!("refused by policy rule `{rule}`")),
            "dry_run={dry_run}: {message}"
        );
    }
    message
}

/// A file's contents, or `None` when there is none (what "unchanged" is compared by).
fn read(path: impl AsRef<Path>) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

fn config_keys(key: &str, value: &str) -> pb::Step {
    step(S::ConfigKeys(pb::ConfigKeysStep {
        path: "/etc/beegfs/beegfs-storage.conf".into(),
        keys: vec![pb::KeyValue { key: key.into(), value: value.into() }],
    }))
}

fn mount(source: &str, target: &str, fstype: &str, options: &str) -> pb::Step {
    step(S::Mount(pb::MountStep {
        source: source.into(),
        target: target.into(),
        fstype: fstype.into(),
        options: options.into(),
        fstab: true,
    }))
}

/// Item 1: every value a service uses as a path is absolute, canonical and in its place.
#[tokio::test]
async fn values_that_are_paths_cannot_escape_their_place() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let watch = agent.watch().await;
    let conf = "/etc/beegfs/beegfs-storage.conf";
    let before = read(conf);
    for (key, value) in [
        ("logStdFile", "/etc/beegfs/../cron.d/evil"),
        ("logStdFile", "/var/log/beegfs/../../../etc/cron.d/evil"),
        ("logStdFile", "etc/cron.d/evil"),
        ("connAuthFile", "../../etc/shadow"),
    ] {
        let message = refused(&agent, vec![config_keys(key, value)], &[], "config-keys").await;
        assert!(message.contains(key), "{message}");
    }
    assert_eq!(read(conf), before, "{conf} is as it was");
    assert!(read("/etc/cron.d/evil").is_none());

    let volume = step(S::GlusterVolume(pb::GlusterVolumeStep {
        name: "pvfs-hostile".into(),
        bricks: vec!["127.0.0.1:/srv/pvfs-hostile/brick".into()],
        options: vec![pb::KeyValue {
            key: "diagnostics.client-log-file".into(),
            value: "../../etc/cron.d/x".into(),
        }],
        ..Default::default()
    }));
    refused(&agent, vec![volume], &["127.0.0.1"], "gluster-option").await;
    watch.assert_no_gap().await;
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// Item 2: mounts pvfs makes are root's, nosuid and nodev from the cluster, from its servers.
#[tokio::test]
async fn mounts_a_user_could_use_against_root_are_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let watch = agent.watch().await;
    let dir = harness::scratch("mounts");
    let target = format!("{}/mnt", dir.path().display());
    let fstab = read("/etc/fstab");
    let message = refused(
        &agent,
        vec![mount("/dev/pvfs-hostile-none", &target, "xfs", "users,owner,suid,dev,exec")],
        &[],
        "mount-options",
    )
    .await;
    assert!(message.contains("users"), "{message}");
    let cluster = ["10.0.0.5", "10.0.0.6"];
    let client = "defaults,_netdev,nosuid,nodev";
    let message = refused(
        &agent,
        vec![mount("evil.example:/vol", &target, "glusterfs", client)],
        &cluster,
        "mount-source",
    )
    .await;
    assert!(
        message.contains("evil.example (gluster server) is not a node of this unit's cluster"),
        "{message}"
    );
    // A hand-built request names no cluster: no server is one of its nodes.
    refused(&agent, vec![mount("10.0.0.5:/vol", &target, "glusterfs", client)], &[], "mount-source").await;
    refused(
        &agent,
        vec![mount("192.0.2.66@tcp:/lustre", &target, "lustre", "suid,dev,exec,user")],
        &cluster,
        "mount-options",
    )
    .await;
    refused(
        &agent,
        vec![mount("192.0.2.66@tcp:/lustre", &target, "lustre", client)],
        &cluster,
        "mount-source",
    )
    .await;
    // A client mount without nosuid,nodev, from the cluster's own server.
    refused(
        &agent,
        vec![mount("10.0.0.5:/vol", &target, "glusterfs", "defaults,_netdev")],
        &cluster,
        "mount-options",
    )
    .await;
    assert_eq!(read("/etc/fstab"), fstab, "/etc/fstab is as it was");
    assert!(!Path::new(&target).exists(), "no mount point was made");
    watch.assert_no_gap().await;
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// Item 3: a user's file in a user's directory outside the system trees was replaced by
/// root's. Files are written only where the agent's user owns the place, never directly in /.
#[tokio::test]
async fn another_users_file_is_not_replaced() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let watch = agent.watch().await;
    let dir = harness::scratch("owner");
    let home = dir.path().join("alice");
    std::fs::create_dir(&home).unwrap();
    let notes = home.join("notes");
    std::fs::write(&notes, "alice's notes\n").unwrap();
    std::fs::set_permissions(&notes, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&home, Some(1000), Some(1000)).unwrap();
    std::os::unix::fs::chown(&notes, Some(1000), Some(1000)).unwrap();
    for path in [notes.clone(), home.join("new")] {
        let message = refused(
            &agent,
            vec![harness::file(&path.display().to_string(), "overwritten\n", 0o644)],
            &[],
            "file-owner",
        )
        .await;
        assert!(message.contains("belongs to uid 1000"), "{message}");
    }
    let meta = std::fs::metadata(&notes).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o7777), (1000, 0o600));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "alice's notes\n");
    assert!(!home.join("new").exists());
    let top = format!("/pvfs-hostile-{}", std::process::id());
    refused(&agent, vec![harness::file(&top, "x\n", 0o644)], &[], "file-place").await;
    assert!(!Path::new(&top).exists());
    watch.assert_no_gap().await;
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// A phase request: 2 of 4 tasks of IOR's write in `dir`, with `-t` and `-b` as given.
fn ior_write(dir: &Path, transfer: u64, block: u64) -> pb::BenchPhaseRequest {
    let Workload::Ior(mut ior) = Preset::Throughput.workload() else { unreachable!() };
    (ior.transfer, ior.block) = (transfer, block);
    let req = PhaseRequest {
        job_tag: None,
        stop_after: None,
        engine: Engine::Builtin,
        workload: Workload::Ior(ior),
        dir: dir.to_owned(),
        first_task: 0,
        tasks: 2,
        total_tasks: 4,
        tasks_per_client: 2,
        iteration: 0,
        phase: Phase::Ior(IorPhase::Write),
    };
    phase_request_to(&req, UNIX_EPOCH)
}

fn launch(dir: &Path) -> pb::LaunchRequest {
    let Workload::Ior(mut ior) = Preset::Throughput.workload() else { unreachable!() };
    (ior.transfer, ior.block) = (1 << 20, 1 << 20);
    launch_request_to(&LaunchRequest {
        engine: Engine::Builtin,
        workload: Workload::Ior(ior),
        dir: dir.to_owned(),
        clients: vec![("n1".into(), "127.0.0.1".into())],
        tasks_per_client: 1,
        mpi_ssh: false,
        io500_program: None,
        drop_caches: false,
    })
}

/// Item 4: benchmarks write only in data paths under an existing top-level directory, and
/// never more than their file system has room for.
#[tokio::test]
async fn benchmarks_stay_out_of_system_trees_new_top_level_directories_and_full_disks() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let watch = agent.watch().await;
    // The third directory: MOUNT/pvfs-bench/RUN with `/` as the mount.
    let top = "/pvfs-bench";
    assert!(!Path::new(top).exists(), "{top} exists on this machine; the case needs it absent");
    for (dir, rule) in [
        ("/etc/pvfs-bench/x".to_owned(), "system-tree"),
        ("/root/pvfs-bench/x".to_owned(), "system-tree"),
        (format!("{top}/pvfs-hostile-{}", std::process::id()), "bench-dir"),
    ] {
        let mut client = agent.client.clone();
        let phase = client.bench_phase(ior_write(Path::new(&dir), 1 << 20, 1 << 20)).await;
        let launched = client.launch(launch(Path::new(&dir))).await;
        for status in [phase.err(), launched.err()] {
            let status = status.unwrap_or_else(|| panic!("a benchmark in {dir} was accepted"));
            assert_eq!(status.code(), Code::PermissionDenied, "{dir}: {status:?}");
            assert!(
                status.message().contains(&format!("refused by policy rule `{rule}`")),
                "{}",
                status.message()
            );
        }
    }
    for made in ["/etc/pvfs-bench", "/root/pvfs-bench", top] {
        assert!(!Path::new(made).exists(), "{made} was made");
    }

    // `t=1g b=16t`, inside the per-task limits: more than the file system holds, so refused
    // before a byte is written, naming both numbers.
    let scratch = harness::scratch("bench-room");
    let run = scratch.path().join("pvfs-bench/run");
    let mut client = agent.client.clone();
    let status = tokio::time::timeout(TIMEOUT, client.bench_phase(ior_write(&run, 1 << 30, 16 << 40)))
        .await
        .expect("answered in time")
        .expect_err("refused");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    let message = status.message();
    assert!(message.starts_with("n1: the write phase needs 32.0 TiB"), "{message}");
    assert!(message.contains("free of") && message.contains("would leave less than 5 %"), "{message}");
    assert!(!scratch.path().join("pvfs-bench").exists(), "nothing was written");
    watch.assert_no_gap().await;
    agent.assert_still_serving().await;
    agent.stop().await;
}
