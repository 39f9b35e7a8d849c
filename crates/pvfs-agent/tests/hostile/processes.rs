//! The per-process view over the real stream: a stream that asks gets the node's busiest
//! processes with each sample; one that does not gets none.

use super::harness::{Agent, Pki, TIMEOUT};
use pvfs_proto::pb;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A child process killed (and reaped) when the test ends, passed or not.
struct Busy(Child);

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(program: &str, args: &[&str]) -> Busy {
    Busy(
        Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{program}: {e}")),
    )
}

#[tokio::test]
async fn a_stream_that_asks_gets_the_busiest_processes_with_each_sample() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    // A CPU hog, and a writer that syncs every 64 KiB so that its bytes reach storage (on the
    // target directory's disk, not a tmpfs, where nothing is written back), bounded to 1 GiB.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let of = format!("of={}", dir.path().join("written").display());
    let cpu = spawn("yes", &[]);
    let writer = spawn("dd", &["if=/dev/zero", &of, "bs=64k", "count=16384", "oflag=dsync"]);
    let (cpu_pid, writer_pid) = (cpu.0.id(), writer.0.id());

    let mut client = agent.connect().await;
    let plain = pb::MetricsRequest { epoch: 0, after_seq: 0, since_unix_ns: 0, processes: 0 };
    let mut without = client.metrics(plain).await.expect("a plain stream").into_inner();
    let asking = pb::MetricsRequest { processes: 5, ..plain };
    let mut with = client.metrics(asking).await.expect("a stream asking for processes").into_inner();

    // The first scan is the baseline; within a few seconds both children are among the top.
    let mut seen_cpu = None;
    let mut seen_writer = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while seen_cpu.is_none() || seen_writer.is_none() {
        let event = tokio::time::timeout_at(deadline, with.message())
            .await
            .unwrap_or_else(|_| panic!("no sample listed both yes ({seen_cpu:?}) and dd ({seen_writer:?})"))
            .expect("the stream is healthy")
            .expect("the stream is open");
        let Some(pb::metrics_event::Event::Sample(sample)) = event.event else { continue };
        assert!(sample.processes.len() <= 10, "5 by CPU and 5 by I/O at most: {:?}", sample.processes);
        for p in &sample.processes {
            if p.pid == cpu_pid && p.cpu_percent > 20.0 {
                assert_eq!(p.name, "yes");
                assert!(!p.kernel);
                seen_cpu = Some(p.clone());
            }
            if p.pid == writer_pid && p.write_bytes_per_s > 0 {
                assert_eq!(p.name, "dd");
                seen_writer = Some(p.clone());
            }
        }
    }

    // The stream that did not ask got its samples all along, and never a process.
    for _ in 0..3 {
        let event = tokio::time::timeout(TIMEOUT, without.message())
            .await
            .expect("a sample within 10 s")
            .expect("the stream is healthy")
            .expect("the stream is open");
        if let Some(pb::metrics_event::Event::Sample(sample)) = event.event {
            assert!(sample.processes.is_empty(), "{:?}", sample.processes);
        }
    }
    drop((cpu, writer));
    agent.stop().await;
}
