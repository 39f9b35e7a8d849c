//! `compare` on records with known iterations: a clear regression fails the gate, noise of
//! the same size does not, one iteration a side is undecided, and what differs is named.

use super::*;
use crate::phase::{IorPhase, MdtestPhase};
use crate::results::PhaseRecord;
use crate::summary::PhaseTotals;

fn phase(iteration: u32, phase: Phase, bw_mib: f64, ops_per_sec: f64) -> PhaseRecord {
    PhaseRecord {
        iteration,
        phase,
        totals: PhaseTotals { bw_mib, ops_per_sec, ..PhaseTotals::default() },
        tasks: vec![],
        caches_dropped: vec![],
        latency: None,
        stage: None,
        found: None,
        first_done: None,
        lustre_job_ids: vec![],
    }
}

/// A run of the throughput preset whose writes did `write` MiB/s and reads `read`, one entry
/// per iteration.
fn run(name: &str, write: &[f64], read: &[f64]) -> RunRecord {
    let workload = crate::params::Preset::Throughput.workload();
    let mut phases = Vec::new();
    for (i, (w, r)) in write.iter().zip(read).enumerate() {
        phases.push(phase(i as u32, Phase::Ior(IorPhase::Write), *w, w * 32.0));
        phases.push(phase(i as u32, Phase::Ior(IorPhase::Read), *r, r * 32.0));
    }
    RunRecord { run: name.into(), params: Some((&workload).into()), phases, ..RunRecord::default() }
}

fn find<'a>(c: &'a Comparison, phase: &str, metric: Metric) -> &'a Row {
    c.rows.iter().find(|r| r.phase == phase && r.metric == metric).expect("a row")
}

#[test]
fn a_clear_regression_past_the_threshold_fails_and_noise_does_not() {
    let base = run("a", &[100.0, 102.0, 98.0, 100.0], &[200.0, 190.0, 210.0, 200.0]);
    // Writes 10 % lower, tightly; reads 5 % lower within noise of ±5 %.
    let new = run("b", &[90.0, 91.0, 89.0, 90.0], &[190.0, 200.0, 180.0, 190.0]);
    let c = compare(&base, &new, 0.05);
    let write = find(&c, "write", Metric::BwMib);
    assert_eq!(write.verdict, Verdict::Regressed, "{write:?}");
    assert!((write.change + 0.10).abs() < 1e-9, "{write:?}");
    let (lo, hi) = write.interval.unwrap();
    assert!(lo < -0.10 && hi > -0.10 && hi < 0.0, "{write:?}");
    // Welch's interval by hand: sd 1.633 and 0.8165, n 4: se = 0.9129, df = 4.41 → t(4) = 2.776.
    assert!((hi - (-10.0 + 2.776 * 0.912_870_9) / 100.0).abs() < 1e-6, "{write:?}");
    let read = find(&c, "read", Metric::BwMib);
    assert_eq!(read.verdict, Verdict::Unchanged, "{read:?}");
    assert!(c.regressed());
    // Within a 15 % threshold nothing fails.
    assert!(!compare(&base, &new, 0.15).regressed());
    // The same run against itself: no change.
    let same = compare(&base, &base, 0.05);
    assert!(same.rows.iter().all(|r| r.change == 0.0 && r.verdict == Verdict::Unchanged), "{same:?}");
    assert!(same.differences.is_empty());
    // Better by 10 %: improved, never a failure.
    let c = compare(&new, &base, 0.05);
    assert_eq!(find(&c, "write", Metric::BwMib).verdict, Verdict::Improved);
    assert!(!c.regressed());
}

#[test]
fn one_iteration_a_side_is_undecided_and_never_fails() {
    let c = compare(&run("a", &[100.0], &[100.0]), &run("b", &[50.0], &[50.0]), 0.05);
    let write = find(&c, "write", Metric::BwMib);
    assert_eq!((write.verdict, write.interval), (Verdict::Undecided, None));
    assert!((write.change + 0.5).abs() < 1e-9);
    assert!(!c.regressed());
}

#[test]
fn latency_is_worse_when_higher_and_mdtest_has_no_bandwidth() {
    let with_latency = |name: &str, p50: &[u64]| {
        let mut r = run(name, &[100.0; 3], &[100.0; 3]);
        for (p, v) in r.phases.iter_mut().filter(|p| p.phase == Phase::Ior(IorPhase::Write)).zip(p50) {
            let mut rec = crate::latency::Recorder::new();
            (0..100).for_each(|_| rec.record(*v));
            p.latency = crate::results::PhaseLatency::of(&[(
                "n1".into(),
                crate::summary::TaskResult {
                    task: 0,
                    start: std::time::UNIX_EPOCH,
                    end: std::time::UNIX_EPOCH,
                    bytes: 0,
                    ops: 100,
                    error: None,
                    rdwr: None,
                    latency: rec.buckets(),
                    found: 0,
                },
            )]);
        }
        r
    };
    let c =
        compare(&with_latency("a", &[1_000, 1_010, 990]), &with_latency("b", &[2_000, 2_020, 1_980]), 0.05);
    let p50 = find(&c, "write", Metric::LatencyP50Ns);
    assert_eq!(p50.verdict, Verdict::Regressed, "{p50:?}");
    assert!(
        c.rows.iter().all(|r| !(r.phase == "read" && r.metric == Metric::LatencyP50Ns)),
        "no latency, no row"
    );
    // mdtest rows: operations a second only.
    let md = RunRecord {
        phases: vec![phase(0, Phase::Mdtest(MdtestPhase::FileCreate), 0.0, 500.0)],
        ..RunRecord::default()
    };
    let c = compare(&md, &md, 0.05);
    assert_eq!(c.rows.iter().map(|r| r.metric).collect::<Vec<_>>(), [Metric::OpsPerSec]);
}

#[test]
fn the_settings_that_differ_are_named() {
    let base = run("a", &[100.0], &[100.0]);
    let mut new = run("b", &[100.0], &[100.0]);
    let mut workload = crate::params::Preset::Throughput.workload();
    workload.set("t", "1m").unwrap();
    new.params = Some((&workload).into());
    new.tasks_per_client = Some(8);
    let c = compare(&base, &new, 0.05);
    let keys: Vec<&str> = c.differences.iter().map(|d| d.key.as_str()).collect();
    assert_eq!(keys, ["params.transfer", "params.transfer_text", "tasks_per_client"]);
    let transfer = &c.differences[0];
    assert_eq!((transfer.baseline.as_str(), transfer.run.as_str()), ("33554432", "1048576"));
}

/// In IO500 runs ior-easy's and ior-hard's writes are two phases, compared each with its own.
#[test]
fn io500_stages_are_compared_each_with_its_own() {
    use crate::io500::plan::Stage;
    let io500 = |name: &str, easy: f64, hard: f64| {
        let mut phases = vec![
            phase(0, Phase::Ior(IorPhase::Write), easy, 1.0),
            phase(0, Phase::Ior(IorPhase::Write), hard, 1.0),
        ];
        phases[0].stage = Some(Stage::IorEasyWrite);
        phases[1].stage = Some(Stage::IorHardWrite);
        RunRecord { run: name.into(), phases, ..RunRecord::default() }
    };
    let c = compare(&io500("a", 1000.0, 50.0), &io500("b", 1000.0, 25.0), 0.05);
    assert_eq!(find(&c, "ior-easy-write write", Metric::BwMib).change, 0.0);
    assert_eq!(find(&c, "ior-hard-write write", Metric::BwMib).change, -0.5);
}
