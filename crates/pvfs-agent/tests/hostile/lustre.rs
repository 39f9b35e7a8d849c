//! Lustre job requests a real coordinator never sends: `LustreJobs` with no ids, too many,
//! ids no Lustre job could have (too long, control characters, not ASCII), and a phase whose
//! job tag is not a thread's name. Each is refused with INVALID_ARGUMENT naming the field; a
//! reading answers only the ids asked for and never the text of a file it could not parse; the
//! agent goes on serving.

use crate::harness::{self, Agent, Pki, TIMEOUT};
use pvfs_host::Root;
use pvfs_proto::pb;
use tonic::Code;

fn ids(ids: &[&str]) -> pb::LustreJobsRequest {
    pb::LustreJobsRequest { job_ids: ids.iter().map(|s| (*s).to_owned()).collect() }
}

/// A server's root: this machine's /proc entries but its file systems' tree, where an OST
/// holds two jobs (one of them this phase's) and a second OST a job_stats file that does not
/// parse, whose bad line holds a secret.
fn server_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let proc = dir.path().join("proc");
    std::fs::create_dir_all(&proc).unwrap();
    for entry in std::fs::read_dir("/proc").unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name != "fs" && !name.starts_with(|c: char| c.is_ascii_digit()) {
            std::os::unix::fs::symlink(std::path::Path::new("/proc").join(&name), proc.join(&name)).unwrap();
        }
    }
    std::os::unix::fs::symlink("/sys", dir.path().join("sys")).unwrap();
    let put = |path: &str, text: &str| {
        let at = dir.path().join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    };
    put(
        "proc/fs/lustre/obdfilter/fs-OST0000/job_stats",
        "job_stats:\n\
         - job_id:          pv00001w0.0\n\
         \x20 snapshot_time:   1723114484.795259864 secs.nsecs\n\
         \x20 write_bytes:     { samples:           4, unit: bytes, min: 1048576, max: 1048576, sum: 4194304, sumsq: 4398046511104 }\n\
         \x20 punch:           { samples:           0, unit: usecs, min: 0, max: 0, sum: 0, sumsq: 0 }\n\
         - job_id:          someone-else.1000\n\
         \x20 snapshot_time:   1723114484.795259864 secs.nsecs\n\
         \x20 write_bytes:     { samples:           9, unit: bytes, min: 1048576, max: 1048576, sum: 9437184, sumsq: 0 }\n",
    );
    put(
        "proc/fs/lustre/obdfilter/fs-OST0001/job_stats",
        "job_stats:\n- job_id: pv00001w0.0\n  write_bytes: { samples: hunter2-secret }\n",
    );
    dir
}

#[tokio::test]
async fn a_job_reading_takes_only_bounded_ids_and_answers_only_them() {
    let pki = Pki::new();
    let dir = server_root();
    let root = dir.path().to_owned();
    let agent = Agent::start_with(&pki, |s| s.root = Root::at(&root)).await;
    let mut client = agent.connect().await;
    let many: Vec<String> = (0..65).map(|i| format!("job{i}")).collect();
    let long = "x".repeat(32);
    for (request, says) in [
        (ids(&[]), "1 to 64 ids"),
        (pb::LustreJobsRequest { job_ids: many }, "1 to 64 ids"),
        (ids(&[long.as_str()]), "no Lustre job id"),
        (ids(&[""]), "no Lustre job id"),
        (ids(&["pv00001w0.0\n- job_id: x"]), "no Lustre job id"),
        (ids(&["tab\there"]), "no Lustre job id"),
        (ids(&["pvé"]), "no Lustre job id"),
    ] {
        let status = client.lustre_jobs(request.clone()).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{request:?}: {status:?}");
        assert!(
            status.message().starts_with("job_ids:") && status.message().contains(says),
            "{}",
            status.message()
        );
    }
    // The phase's id: its OST's counters, zeros left out; the other job is not told; the file
    // that does not parse is named with its line, not its text.
    let answer = client.lustre_jobs(ids(&["pv00001w0.0"])).await.unwrap().into_inner();
    assert_eq!(answer.jobs.len(), 1, "{answer:?}");
    let job = &answer.jobs[0];
    assert_eq!(
        (job.kind.as_str(), job.target.as_str(), job.job_id.as_str()),
        ("obdfilter", "fs-OST0000", "pv00001w0.0")
    );
    assert_eq!(
        job.counters.iter().map(|c| (c.name.as_str(), c.samples, c.sum)).collect::<Vec<_>>(),
        [("write_bytes", 4, 4194304)]
    );
    assert_eq!(answer.errors.len(), 1, "{answer:?}");
    assert!(answer.errors[0].contains("fs-OST0001/job_stats: line 3"), "{answer:?}");
    assert!(!format!("{answer:?}").contains("hunter2"), "a file's text reached the caller: {answer:?}");
    agent.assert_still_serving().await;
    agent.stop().await;
}

#[tokio::test]
async fn a_phase_whose_job_tag_is_no_thread_name_is_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let scratch = harness::scratch("job-tag");
    let write = crate::bench::ior_write(&scratch.path().join("mnt/pvfs-bench/run"));
    let mut client = agent.connect().await;
    for tag in ["-pv", "pv;reboot", "pv 1", "pv/../x", "0123456789abcdef", "pv\n"] {
        let wire = pb::BenchPhaseRequest { job_tag: tag.to_owned(), ..write.clone() };
        let status =
            tokio::time::timeout(TIMEOUT, client.bench_phase(wire)).await.expect("answered").unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{tag:?}: {status:?}");
        assert!(status.message().starts_with("job_tag = "), "{tag:?}: {}", status.message());
    }
    assert!(!scratch.path().join("mnt").exists(), "nothing was made");
    agent.assert_still_serving().await;
    agent.stop().await;
}
