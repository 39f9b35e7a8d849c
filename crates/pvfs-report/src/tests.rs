//! A report over two hand-made runs: the numbers in it are worked out here by hand.

use super::*;
use serde_json::{Value, json};

/// A run on `servers` servers: write 100·servers MiB/s, read 150·servers; two clients whose
/// tasks take 1 s and 2 s for 100 MiB each; client c1's NIC received 300 MiB during the read.
fn run(base: &Path, name: &str, servers: u64) -> PathBuf {
    let dir = base.join(name);
    std::fs::create_dir_all(dir.join("metrics")).unwrap();
    // Integers, as `pvfsctl bench` writes byte counts.
    let mib: u64 = 1048576;
    let task = |node: &str, task: u32, start: f64, secs: f64| json!({"node": node, "task": task, "start": start, "end": start + secs, "bytes": 100 * mib, "ops": 100, "error": null});
    let doc = json!({
        "run": name,
        "servers": servers,
        "clients": 2,
        "tasks_per_client": 1,
        "vm_limit_mib": 250.0,
        "summary": {
            "ior": [
                {"operation": "write", "bw_mean_mib": 100.0 * servers as f64, "ops_mean": 1000.0},
                {"operation": "read", "bw_mean_mib": 150.0 * servers as f64, "ops_mean": 1500.0},
            ],
            "mdtest": [],
        },
        "phases": [
            {"iteration": 0, "phase": "write", "bytes": 200 * mib, "tasks": [task("c1", 0, 1000.0, 1.0), task("c2", 1, 1000.0, 2.0)]},
            {"iteration": 0, "phase": "read", "bytes": 200 * mib, "tasks": [task("c1", 0, 1010.0, 1.0), task("c2", 1, 1010.0, 1.0)]},
        ],
    });
    std::fs::write(dir.join("results.json"), doc.to_string()).unwrap();
    // c1's counters for the second 1010..1011 (the read): 300 MiB received.
    let line = json!({"time": "1970-01-01T00:16:51Z", "interval_s": 1.0, "nics": {"eth0": {"rxkB/s": 300.0 * 1024.0, "txkB/s": 0.0}, "lo": {"rxkB/s": 9999.0, "txkB/s": 9999.0}}});
    std::fs::write(dir.join("metrics/c1.jsonl"), format!("{line}\n")).unwrap();
    dir
}

#[test]
fn tables_charts_fairness_and_amplification() {
    let base = tempfile::tempdir().unwrap();
    let runs = [run(base.path(), "one", 1), run(base.path(), "two", 2)];
    let out = base.path().join("report");
    let written = write(&runs, &out).unwrap();
    let md = std::fs::read_to_string(&written.markdown).unwrap();
    // 200 MiB/s write on 2 servers against 2 × 250: 40 %; read 300 of 500: 60 %.
    assert!(md.contains("| `two` | 2 | 2 × 1 | 500 | 200 | 300 | 1000 | 1500 | 40 % | 60 % |"), "{md}");
    assert!(md.contains("| `one` | 1 | 2 × 1 | 250 | 100 | 150 |"), "{md}");
    // c1 wrote 100 MiB in 1 s, c2 in 2 s: 100 and 50 MiB/s, done at 1 s and 2 s.
    assert!(md.contains("| c1 | 100.0 | 1.000 |"), "{md}");
    assert!(md.contains("| c2 |") && md.contains("| 50.0 | 2.000 |"), "{md}");
    assert!(md.contains("write: fastest client 100.0 MiB/s, slowest 50.0 MiB/s (50 % spread)."), "{md}");
    // 300 MiB over the NIC for 200 MiB read: 1.50 (lo is not the network).
    assert!(md.contains(&format!("| read | {} | {} | 1.50 |", 200 * 1048576, 300 * 1048576)), "{md}");
    assert_eq!(written.charts.len(), 2 + 2 * 2);
    let svg = std::fs::read_to_string(out.join("scale-out.svg")).unwrap();
    let texts: Vec<&str> =
        svg.split("<text").skip(1).map(|t| t.split('>').nth(1).unwrap_or("").trim()).collect();
    assert!(texts.iter().any(|t| t.starts_with("VM limit")), "the legend names the limit: {texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("2 servers")), "the x axis names the runs: {texts:?}");
    let png = std::fs::read(out.join("scale-out.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 5_000, "a real picture, text included: {} bytes", png.len());
}

#[test]
fn a_directory_without_results_is_named() {
    let base = tempfile::tempdir().unwrap();
    let err = write(&[base.path().join("nope")], &base.path().join("out")).unwrap_err();
    assert!(err.to_string().contains("a pvfs results directory?"), "{err}");
}

/// A run interrupted after it started: its results.json says `"complete": false` (what
/// `pvfsctl bench` writes first). The report reads it and says it did not finish.
#[test]
fn an_interrupted_run_is_reported_as_incomplete() {
    let base = tempfile::tempdir().unwrap();
    let one = run(base.path(), "one", 1);
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(one.join("results.json")).unwrap()).unwrap();
    doc["complete"] = json!(false);
    std::fs::write(one.join("results.json"), doc.to_string()).unwrap();
    let two = run(base.path(), "two", 2);
    let written = write(&[one, two], &base.path().join("report")).unwrap();
    let md = std::fs::read_to_string(&written.markdown).unwrap();
    assert!(md.contains("`one (incomplete)` did not finish"), "{md}");
    assert!(md.contains("| `one (incomplete)` | 1 |"), "{md}");
    assert!(!md.contains("`two (incomplete)`"), "{md}");
}

/// A run directory interrupted before its first results.json is named as incomplete, not
/// taken for something else.
#[test]
fn a_run_directory_without_results_json_is_named_incomplete() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("imported-x-20260101T000000");
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    let err = write(std::slice::from_ref(&dir), &base.path().join("out")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{} is an incomplete run: it has no results.json (the run or import was interrupted before it \
             recorded one); its other files are kept — run it again, or leave it out of the report",
            dir.display()
        )
    );
}

/// Issue 26: a results directory that `pvfsctl demo` wrote before a run had one model (see
/// testdata/old-results/README.md) reads with today's code to the numbers it holds, and a
/// report is written over it.
#[test]
fn a_results_directory_written_before_the_run_model_reads_to_the_same_numbers() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/old-results/demo-throughput-20261127T205944");
    let raw: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let Record::Run(record) = results::load(&dir).unwrap() else { panic!("a run's record") };
    assert!(record.complete);
    assert_eq!(record.engine, Some(pvfs_bench::launch::Engine::Builtin));
    assert_eq!(record.launcher, Some(pvfs_bench::launch::Launcher::Agents));
    let phases = raw["phases"].as_array().unwrap();
    assert_eq!(record.phases.len(), phases.len());
    assert_eq!(phases.len(), 4, "two iterations of write and read");
    for (read, written) in record.phases.iter().zip(phases) {
        assert_eq!(Some(read.totals.bytes), written["bytes"].as_u64());
        assert_eq!(Some(read.totals.ops), written["ops"].as_u64());
        assert_eq!(Some(read.totals.seconds), written["seconds"].as_f64());
        assert_eq!(Some(read.totals.bw_mib), written["bw_mib"].as_f64());
        assert_eq!(read.totals.open_s, None, "not kept by then");
        assert_eq!(read.tasks.len(), written["tasks"].as_array().unwrap().len());
        for (task, w) in read.tasks.iter().zip(written["tasks"].as_array().unwrap()) {
            assert_eq!((Some(task.start), Some(task.end)), (w["start"].as_f64(), w["end"].as_f64()));
        }
    }
    for (row, written) in record.summary.ior.iter().zip(raw["summary"]["ior"].as_array().unwrap()) {
        assert_eq!(row.bw_mean_mib, written["bw_mean_mib"].as_f64());
    }
    let Some(results::Params::Ior(ior)) = &record.params else { panic!("IOR's parameters") };
    assert_eq!(Some(ior.params.transfer), raw["params"]["transfer"].as_u64());
    assert_eq!(ior.params.packet.as_str(), raw["params"]["packet"].as_str().unwrap());
    // Every metrics line reads, as many as the record counted.
    for (node, seconds) in &record.metrics_seconds {
        let lines = results::metrics_lines(&dir, node);
        let second_lines = lines.iter().filter(|l| matches!(l, results::MetricsLine::Second(_))).count();
        assert_eq!(second_lines as u64, *seconds, "{node}");
    }
    // The CSV the record makes today is the CSV written then.
    assert_eq!(record.csv(), std::fs::read_to_string(dir.join("results.csv")).unwrap());
    let out = tempfile::tempdir().unwrap();
    write(&[dir], out.path()).unwrap();
    let report = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(report.contains("demo-throughput-20261127T205944"), "{report}");
}

/// The servers' own counters by target over each phase: two OSTs and two bricks, their seconds
/// over the write (1000..1002) and the read (1010..1011); a second half inside the phase counts
/// half; the OSTs' bytes against the application's are judged within 1 %.
#[test]
fn each_phases_bytes_by_server_target() {
    let base = tempfile::tempdir().unwrap();
    let dir = run(base.path(), "one", 1);
    let mib = 1048576.0;
    // oss1: OST0000 takes 150 MiB of the write, OST0001 50 (one hot OST); the read's 200 MiB
    // split evenly. Seconds end at the time shown.
    let oss = |time: &str, w0: f64, w1: f64, r0: f64, r1: f64| {
        json!({"time": time, "interval_s": 1.0, "lustre": [
            {"component": "ost", "name": "fs-OST0000", "read_bytes_s": r0 * mib, "write_bytes_s": w0 * mib, "ops_s": 1.0},
            {"component": "ost", "name": "fs-OST0001", "read_bytes_s": r1 * mib, "write_bytes_s": w1 * mib, "ops_s": 1.0},
            {"component": "mdt", "name": "fs-MDT0000", "read_bytes_s": 0.0, "write_bytes_s": 0.0, "ops_s": 9.0}
        ]})
    };
    let lines = [
        oss("1970-01-01T00:16:41Z", 100.0, 25.0, 0.0, 0.0),
        oss("1970-01-01T00:16:42Z", 50.0, 25.0, 0.0, 0.0),
        // Half of this second (1001.5..1002.5) is in the write: 2 × 0.5 MiB more.
        oss("1970-01-01T00:16:42.500Z", 1.0, 1.0, 0.0, 0.0),
        oss("1970-01-01T00:16:51Z", 0.0, 0.0, 100.0, 100.0),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("metrics/oss1.jsonl"), text).unwrap();
    // A GlusterFS server's brick of a replica-2 volume: every byte of the write, twice over
    // two servers.
    let brick = json!({"time": "1970-01-01T00:16:42Z", "interval_s": 2.0, "bricks": [
        {"path": "/bricks/b1", "rchar_s": 0.0, "read_bytes_s": 0.0, "up": true, "volume": "gv0", "wchar_s": 100.0 * mib, "write_bytes_s": 0.0}
    ]});
    std::fs::write(dir.join("metrics/gfs1.jsonl"), format!("{brick}\n")).unwrap();
    let out = base.path().join("report");
    let written = write(&[dir], &out).unwrap();
    let md = std::fs::read_to_string(&written.markdown).unwrap();
    assert!(md.contains("### Bytes by server target: `one`"), "{md}");
    assert!(md.contains("| write | OST | fs-OST0000 | oss1 | 150.5 | 74.9 % |"), "{md}");
    assert!(md.contains("| write | OST | fs-OST0001 | oss1 | 50.5 | 25.1 % |"), "{md}");
    assert!(md.contains("| read | OST | fs-OST0000 | oss1 | 100.0 | 50.0 % |"), "{md}");
    assert!(!md.contains("fs-MDT0000"), "an MDT moves no file data: {md}");
    // 201 MiB of OST writes for 200: +0.5 %; the busiest OST 1.50 × the mean.
    assert!(
        md.contains("- write, OSTs: 201.0 MiB for the application's 200.0 MiB (the OSTs account for the phase within 1 %); busiest ÷ mean 1.50."),
        "{md}"
    );
    assert!(md.contains("- read, OSTs: 200.0 MiB for the application's 200.0 MiB (the OSTs account for the phase within 1 %); busiest ÷ mean 1.00."), "{md}");
    assert!(md.contains("| write | brick | gv0:/bricks/b1 | gfs1 | 200.0 | 100.0 % |"), "{md}");
    assert!(
        md.contains(
            "- write, bricks: 200.0 MiB for the application's 200.0 MiB (1.00 bytes per application byte"
        ),
        "{md}"
    );
}

/// A run with `--gluster-profile` and a killed brick: each phase's profile per brick (bytes,
/// calls, busiest operations), a phase whose reading failed says why, and the fault's heal is
/// in its table.
#[test]
fn each_phases_gluster_profile_and_a_faults_heal() {
    let base = tempfile::tempdir().unwrap();
    let dir = run(base.path(), "one", 1);
    let fop = |name: &str, hits: u64, avg_ns: f64, max_ns: f64| json!({"name": name, "hits": hits, "avg_ns": avg_ns, "max_ns": max_ns});
    let events = [
        json!({"event": "phase_started", "iteration": 0, "phase": "write", "at": 1000.0}),
        json!({"event": "fault", "node": "gfs2", "action": "injected", "at": 1000.5, "detail": "killed glusterfsd 4 of brick gv0:/b"}),
        json!({"event": "latency_second", "iteration": 0, "phase": "write", "at": 1000.0, "count": 100, "min_ns": 1000, "p50_ns": 2000, "p90_ns": 3000, "p99_ns": 4000, "p999_ns": 5000, "max_ns": 6000, "mean_ns": 2500.0}),
        json!({"event": "fault_measured", "node": "gfs2", "iteration": 0, "phase": "write", "injected_at": 1000.5, "undone_at": 1001.5, "ops_per_s_before": 100.0, "stall_s": 0.0, "recovery_s": 0.0}),
        json!({"event": "gluster_profile", "iteration": 0, "phase": "write", "volume": "gv0", "error": null, "bricks": [
            {"brick": "gfs1:/bricks/gv0", "seconds": 3, "read_bytes": 0, "write_bytes": 209715200u64,
             "fops": [fop("WRITE", 200, 1_500_000.0, 9_000_000.0), fop("FLUSH", 2, 40_000.0, 50_000.0), fop("LOOKUP", 1, 10_000.0, 10_000.0), fop("STATFS", 1, 5_000.0, 5_000.0)]}
        ]}),
        json!({"event": "fault_healed", "node": "gfs2", "volume": "gv0", "at": 1004.0, "pending_max": 31, "split_brain": 0, "healed_after_s": 2.5}),
        json!({"event": "gluster_profile", "iteration": 0, "phase": "read", "volume": "gv0", "bricks": [], "error": "gfs1: glusterd is not running"}),
    ];
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(dir.join("events.jsonl"), text).unwrap();
    let out = base.path().join("report");
    let md = std::fs::read_to_string(write(&[dir], &out).unwrap().markdown).unwrap();
    assert!(md.contains("### GlusterFS profile: `one`"), "{md}");
    assert!(
        md.contains("| gfs1:/bricks/gv0 | 3 | 209.7 | 0.0 | 204 | WRITE 200 (1.500 / 9.000), FLUSH 2 (0.040 / 0.050), LOOKUP 1 (0.010 / 0.010) |"),
        "{md}"
    );
    assert!(md.contains("Iteration 0, read (gv0): not read: gfs1: glusterd is not running"), "{md}");
    assert!(md.contains("| 31 | 2.5 |"), "the heal in the fault's row: {md}");
}

/// A Lustre run's job_stats readings: the write's two OSTs (one hot) and the MDT, each with its
/// share; the OSTs' bytes against the application's within 1 %; the read 10 % short, said so;
/// a client without an id and a server that could not be asked are named.
#[test]
fn each_phases_targets_by_job_id() {
    let base = tempfile::tempdir().unwrap();
    let dir = run(base.path(), "one", 1);
    let mib: u64 = 1048576;
    let ost = |name: &str, counter: &str, rpcs: u64, bytes: u64| {
        json!({"node": "oss1", "kind": "obdfilter", "target": name,
        "counters": [{"name": counter, "samples": rpcs, "sum": bytes}, {"name": "punch", "samples": 1, "sum": 30}]})
    };
    let mdt = json!({"node": "mds1", "kind": "mdt", "target": "fs-MDT0000",
        "counters": [{"name": "open", "samples": 2, "sum": 0}, {"name": "close", "samples": 2, "sum": 0}]});
    let events = [
        json!({"event": "lustre_jobs", "iteration": 0, "phase": "write",
            "clients": [{"node": "c1", "job_id": "pv0abc1w0.0"}, {"node": "c2", "job_id": "pv0abc1w0.0"}],
            "targets": [ost("fs-OST0000", "write_bytes", 150, 150 * mib), ost("fs-OST0001", "write_bytes", 51, 51 * mib), mdt]}),
        json!({"event": "lustre_jobs", "iteration": 0, "phase": "read",
            "clients": [{"node": "c1", "job_id": "pv0abc1r0.0"}, {"node": "c2", "why_none": "no Lustre client on this node (no jobid_var)"}],
            "targets": [ost("fs-OST0000", "read_bytes", 90, 90 * mib), ost("fs-OST0001", "read_bytes", 90, 90 * mib)],
            "errors": ["oss2: no answer within 10 s"]}),
    ];
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(dir.join("events.jsonl"), text).unwrap();
    let md = std::fs::read_to_string(write(&[dir], &base.path().join("report")).unwrap().markdown).unwrap();
    assert!(md.contains("### Lustre targets by job id: `one`"), "{md}");
    assert!(md.contains("| write | 0 | fs-OST0000 | oss1 | 0.0 | 150.0 | 0 | 150 | 1 | 74.6 % |"), "{md}");
    assert!(md.contains("| write | 0 | fs-OST0001 | oss1 | 0.0 | 51.0 | 0 | 51 | 1 | 25.4 % |"), "{md}");
    assert!(md.contains("| write | 0 | fs-MDT0000 | mds1 | 0.0 | 0.0 | 0 | 0 | 4 | 100.0 % |"), "{md}");
    assert!(
        md.contains("- write (iteration 0), job pv0abc1w0.0: the OSTs counted 201.0 MiB for the application's 200.0 MiB (the OSTs account for the phase within 1 %); busiest ÷ mean 1.49."),
        "{md}"
    );
    assert!(md.contains("(iteration 0), job pv0abc1r0.0: the OSTs counted 180.0 MiB for the application's 200.0 MiB (the OSTs' bytes differ from the application's by -10.0 %"), "{md}");
    assert!(
        md.contains("- read (iteration 0), c2: no job id: no Lustre client on this node (no jobid_var)."),
        "{md}"
    );
    assert!(md.contains("- read (iteration 0): oss2: no answer within 10 s"), "{md}");
}

/// A fault whose heal glusterd would not tell (a distributed volume has nothing to heal from):
/// its words in the fault's row, not a time.
#[test]
fn a_heal_not_followed_says_why() {
    let base = tempfile::tempdir().unwrap();
    let dir = run(base.path(), "one", 1);
    let events = [
        json!({"event": "phase_started", "iteration": 0, "phase": "write", "at": 1000.0}),
        json!({"event": "latency_second", "iteration": 0, "phase": "write", "at": 1000.0, "count": 100, "min_ns": 1000, "p50_ns": 2000, "p90_ns": 3000, "p99_ns": 4000, "p999_ns": 5000, "max_ns": 6000, "mean_ns": 2500.0}),
        json!({"event": "fault_measured", "node": "gfs2", "iteration": 0, "phase": "write", "injected_at": 1000.5, "undone_at": 1001.5, "ops_per_s_before": 100.0, "stall_s": 0.0, "recovery_s": 0.0, "client_errors": 2, "first_error": "c1 task 0: write /mnt/gv0/f at 0: Input/output error | 5"}),
        json!({"event": "fault_healed", "node": "gfs2", "volume": "gv0", "at": 1002.0, "pending_max": 0, "split_brain": 0, "healed_after_s": null, "error": "gfs2: Volume gv0 is not of type replicate | disperse"}),
    ];
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(dir.join("events.jsonl"), text).unwrap();
    let md = std::fs::read_to_string(write(&[dir], &base.path().join("report")).unwrap().markdown).unwrap();
    assert!(
        md.contains("| 0 | not followed: gfs2: Volume gv0 is not of type replicate / disperse |"),
        "{md}"
    );
    assert!(
        md.contains("| 2 (first: c1 task 0: write /mnt/gv0/f at 0: Input/output error / 5) |"),
        "the clients' errors: {md}"
    );
}
