//! The results format against the `json!` literals it replaced: the same bytes (plus
//! `version`), and every older or hand-made record still reads.

use super::*;
use crate::model::ImportedTool;
use crate::phase::IorPhase;
use crate::summary::PhaseTotals;
use pvfs_metrics::line::DownLine;
use serde_json::json;

fn ior_row() -> IorSummary {
    IorSummary {
        operation: "write".into(),
        bw_max_mib: Some(120.5),
        bw_min_mib: Some(80.0),
        bw_mean_mib: Some(100.25),
        bw_std_mib: Some(0.1),
        ops_max: None,
        ops_min: None,
        ops_mean: Some(1000.0),
        ops_std: None,
        mean_time_s: Some(1.5),
        tasks: Some(2),
        iterations: Some(1),
        block_bytes: Some(1048576),
        transfer_bytes: Some(65536),
        file_per_proc: Some(true),
    }
}

fn record() -> RunRecord {
    let workload = crate::params::Preset::parse("throughput").unwrap().workload();
    RunRecord {
        drop_caches: None,
        io500: None,
        version: VERSION,
        run: "c-throughput-20260101T000000".into(),
        complete: false,
        preset: Some("throughput".into()),
        engine: Some(crate::launch::Engine::Builtin),
        launcher: Some(crate::launch::Launcher::Agents),
        params: Some(Params::from(&workload)),
        tasks_per_client: Some(2),
        kind: Some("local".into()),
        servers: Some(1),
        clients: Some(1),
        vm_limit_mib: None,
        sweep: Some(Sweep { key: "procs".into(), value: "2".into() }),
        dir: Some("/mnt/pvfs-bench/x".into()),
        started: Some(1000.25),
        finished: Some(1010.5),
        error: Some("interrupted".into()),
        summary: Summary { ior: vec![ior_row()], mdtest: vec![] },
        iterations: vec![],
        phases: vec![PhaseRecord {
            caches_dropped: vec![],
            latency: None,
            stage: None,
            found: None,
            first_done: None,
            lustre_job_ids: vec![],
            iteration: 0,
            phase: Phase::Ior(IorPhase::Write),
            totals: PhaseTotals {
                bytes: 2097152,
                ops: 32,
                seconds: 0.123456789,
                bw_mib: 16.2,
                ops_per_sec: 259.2,
                ..PhaseTotals::default()
            },
            tasks: vec![TaskRecord {
                node: "n1".into(),
                task: 0,
                start: 1000.5,
                end: 1000.623456789,
                bytes: 2097152,
                ops: 32,
                error: None,
            }],
        }],
        metrics_seconds: BTreeMap::from([("n1".into(), 11)]),
    }
}

/// The record as the `json!` literal in `ctl::bench::write_results` built it before this module.
fn old_literal(r: &RunRecord) -> serde_json::Value {
    let Some(Params::Ior(IorRecord { params: p, transfer_text, block_text })) = &r.params else {
        panic!("an IOR record")
    };
    let phases: Vec<_> = r
        .phases
        .iter()
        .map(|p| {
            let tasks: Vec<_> = p
                .tasks
                .iter()
                .map(|t| json!({"node": t.node, "task": t.task, "start": t.start, "end": t.end, "bytes": t.bytes, "ops": t.ops, "error": t.error}))
                .collect();
            json!({"iteration": p.iteration, "phase": p.phase, "bytes": p.totals.bytes, "ops": p.totals.ops, "seconds": p.totals.seconds, "bw_mib": p.totals.bw_mib, "ops_per_sec": p.totals.ops_per_sec, "tasks": tasks})
        })
        .collect();
    json!({
        "run": r.run, "complete": r.complete, "preset": r.preset, "engine": r.engine, "launcher": r.launcher,
        "tool": "ior",
        "params": {
            "write": p.write, "read": p.read, "odirect": p.odirect, "reorder": p.reorder, "iterations": p.iterations,
            "transfer": p.transfer, "block": p.block, "segments": p.segments, "file_per_proc": p.file_per_proc,
            "random": p.random, "fsync": p.fsync, "packet": p.packet, "transfer_text": transfer_text, "block_text": block_text,
        },
        "tasks_per_client": r.tasks_per_client, "kind": r.kind, "servers": r.servers, "clients": r.clients,
        "vm_limit_mib": r.vm_limit_mib,
        "sweep": r.sweep.as_ref().map(|s| json!({"key": s.key, "value": s.value})),
        "dir": r.dir, "started": r.started, "finished": r.finished, "error": r.error,
        "summary": {"ior": r.summary.ior, "mdtest": r.summary.mdtest},
        "iterations": r.iterations, "phases": phases, "metrics_seconds": r.metrics_seconds,
    })
}

#[test]
fn results_json_is_the_old_bytes_plus_version() {
    let base = tempfile::tempdir().unwrap();
    let dir = RunDir::create(base.path(), "run").unwrap();
    let r = record();
    dir.write_record(&r).unwrap();
    let written = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
    let mut old = old_literal(&r);
    old["version"] = json!(1);
    assert_eq!(written, serde_json::to_string_pretty(&old).unwrap() + "\n");
    // Keys sorted, so the new one sits between tool and vm_limit_mib.
    assert!(
        written.contains("\"tool\": \"ior\",\n  \"version\": 1,\n  \"vm_limit_mib\": null\n}"),
        "{written}"
    );
    let csv = std::fs::read_to_string(dir.path().join("results.csv")).unwrap();
    assert_eq!(
        csv,
        "iteration,phase,bytes,ops,seconds,bw_mib,ops_per_sec\n0,write,2097152,32,0.123457,16.200,259.200\n"
    );
    assert_eq!(load(dir.path()).unwrap(), Record::Run(Box::new(r)));
}

#[test]
fn mdtest_params_keep_their_keys() {
    let workload = crate::params::Preset::parse("metadata").unwrap().workload();
    let value = sorted(&RunRecord { params: Some(Params::from(&workload)), ..RunRecord::default() }).unwrap();
    assert_eq!(value["tool"], "mdtest");
    let keys: Vec<&String> = value["params"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "branch",
            "create",
            "depth",
            "files_only",
            "items",
            "iterations",
            "leaf_only",
            "read",
            "remove",
            "stat",
            "unique_dir"
        ]
    );
}

#[test]
fn old_and_hand_made_records_read() {
    let path = Path::new("x/results.json");
    // Before `version` and `complete`: version 1, complete.
    let Record::Run(r) = parse(
        path,
        r#"{"run": "old", "servers": 3, "summary": {"ior": [{"operation": "read", "bw_mean_mib": 5.0}]}}"#,
    )
    .unwrap() else {
        panic!("a run")
    };
    assert_eq!(
        (r.version, r.complete, r.servers, r.bw("read"), r.params),
        (1, true, Some(3), Some(5.0), None)
    );
    let r = parse(path, r#"{"version": 2, "run": "new"}"#).unwrap_err();
    assert_eq!(
        r.to_string(),
        "x/results.json: results version 2, newer than this pvfs reads (up to 1); read it with a newer pvfsctl"
    );
    let err = parse(path, "{\"run\": ").unwrap_err();
    assert!(err.to_string().starts_with("x/results.json: EOF while parsing"), "{err}");
}

#[test]
fn an_import_reads_with_its_tool_version() {
    let rows = [ior_row()];
    let import = ImportRecord {
        run: "imported-a".into(),
        complete: true,
        imported_from: "a.txt".into(),
        tool: ImportedTool::Ior,
        version: Some("4.1.0+dev".into()),
        command: None,
        summary: ImportSummary { ior: Cow::Borrowed(&rows), mdtest: Cow::Borrowed(&[]) },
        iterations: Cow::Borrowed(&[]),
        io500: None,
    };
    let base = tempfile::tempdir().unwrap();
    let dir = RunDir::create(base.path(), "imported-a").unwrap();
    dir.write_import(&import).unwrap();
    let text = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
    assert!(
        text.starts_with("{\n  \"run\": \"imported-a\",\n  \"complete\": true,\n  \"imported_from\""),
        "{text}"
    );
    let record = load(dir.path()).unwrap();
    assert_eq!((record.run_name(), record.bw("write"), record.as_run()), ("imported-a", Some(100.25), None));
}

#[test]
fn missing_records_are_named() {
    let base = tempfile::tempdir().unwrap();
    let err = load(&base.path().join("nope")).unwrap_err();
    assert!(err.to_string().contains("a pvfs results directory?"), "{err}");
    let dir = RunDir::create(base.path(), "r").unwrap();
    std::fs::write(dir.path().join("commands.txt"), "").unwrap();
    assert!(matches!(load(dir.path()), Err(ResultsError::Incomplete { .. })));
}

#[test]
fn run_dirs_are_never_shared() {
    let base = tempfile::tempdir().unwrap();
    let names: Vec<String> =
        (0..3).map(|_| RunDir::create(base.path(), "r").unwrap().name().to_owned()).collect();
    assert_eq!(names, ["r", "r-2", "r-3"]);
}

/// The one phase record keeps IOR's timers where the engine measured them, and a record
/// written before it kept them reads with none.
#[test]
fn a_phase_record_keeps_iors_timers_when_known() {
    let totals = PhaseTotals {
        bytes: 8,
        ops: 1,
        seconds: 2.0,
        bw_mib: 4.0,
        ops_per_sec: 0.5,
        open_s: Some(0.25),
        wrrd_s: Some(1.5),
        close_s: Some(0.25),
        latency_s: Some(1.5),
    };
    let record = PhaseRecord {
        iteration: 0,
        phase: Phase::Ior(IorPhase::Write),
        totals,
        tasks: vec![],
        caches_dropped: vec![],
        latency: None,
        stage: None,
        found: None,
        first_done: None,
        lustre_job_ids: vec![],
    };
    let text = sorted(&record).unwrap().to_string();
    assert_eq!(
        text,
        r#"{"bw_mib":4.0,"bytes":8,"close_s":0.25,"iteration":0,"latency_s":1.5,"open_s":0.25,"ops":1,"ops_per_sec":0.5,"phase":"write","seconds":2.0,"tasks":[],"wrrd_s":1.5}"#
    );
    assert_eq!(serde_json::from_str::<PhaseRecord>(&text).unwrap(), record);
    let old: PhaseRecord = serde_json::from_str(r#"{"phase":"read","bytes":3}"#).unwrap();
    assert_eq!((old.totals.bytes, old.totals.open_s, old.iteration), (3, None, 0));
}

#[test]
fn event_lines_are_the_old_bytes() {
    let line = BenchEvent::PhaseDone {
        iteration: 1,
        phase: Phase::Ior(IorPhase::Read),
        totals: PhaseTotals {
            bytes: 10,
            ops: 2,
            seconds: 0.5,
            bw_mib: 1.25,
            ops_per_sec: 4.0,
            ..PhaseTotals::default()
        },
        latency: None,
        first_done: None,
    };
    let old = json!({"event": "phase_done", "iteration": 1, "phase": "read", "bytes": 10, "ops": 2, "seconds": 0.5, "bw_mib": 1.25, "ops_per_sec": 4.0});
    assert_eq!(sorted(&line).unwrap().to_string(), old.to_string());
    let line = BenchEvent::PhaseStarted { iteration: 0, phase: Phase::Ior(IorPhase::Write), at: 12.5 };
    assert_eq!(
        sorted(&line).unwrap().to_string(),
        r#"{"at":12.5,"event":"phase_started","iteration":0,"phase":"write"}"#
    );
}

#[test]
fn metrics_lines_read_both_kinds() {
    let down = MetricsLine::Down(DownLine {
        down: true,
        error: "gone".into(),
        node: "n1".into(),
        time: "2026-01-01T00:00:00.000Z".into(),
    });
    let text = sorted(&down).unwrap().to_string();
    assert_eq!(text, r#"{"down":true,"error":"gone","node":"n1","time":"2026-01-01T00:00:00.000Z"}"#);
    assert_eq!(serde_json::from_str::<MetricsLine>(&text).unwrap(), down);
    let second = r#"{"cpu":{"%usr":1.5},"disks":{},"interval_s":1.0,"load":[0.5,0.25,0.0],"mem":{"kbmemfree":12},"nics":{"eth0":{"rxkB/s":2.0}},"node":"n1","tasks":{"plist-sz":100,"runq-sz":1},"time":"1970-01-01T00:16:51.000Z"}"#;
    let MetricsLine::Second(line) = serde_json::from_str::<MetricsLine>(second).unwrap() else {
        panic!("a second")
    };
    assert_eq!(line.span(), Some((1010.0, 1011.0)));
    assert_eq!(sorted(&line).unwrap().to_string(), second, "integers stay integers");
}

/// `bench import`'s store: a directory named for the file and the second, the output kept
/// byte for byte under raw/, and a record that reads back as the parsed rows.
#[test]
fn an_import_is_stored_as_a_run_of_its_own() {
    let base = tempfile::tempdir().unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/ior/ior_tput.txt");
    let parsed = crate::parse::parse_file(&file).unwrap();
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_462_200);
    let run = store_import(base.path(), &file, &parsed, now).unwrap();
    assert_eq!(run.name(), "imported-ior_tput-20261123T193000");
    assert_eq!(std::fs::read(run.path().join("raw/ior_tput.txt")).unwrap(), std::fs::read(&file).unwrap());
    let Record::Import(record) = load(run.path()).unwrap() else { panic!("an import's record") };
    assert_eq!((record.summary.ior.as_ref(), record.tool), (parsed.ior.as_slice(), parsed.tool.into()));
    let again = store_import(base.path(), &file, &parsed, now).unwrap();
    assert_eq!(again.name(), "imported-ior_tput-20261123T193000-2", "never a directory that exists");
}
