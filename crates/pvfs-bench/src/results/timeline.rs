//! A run's phases on the clock, read from its events.jsonl: when each phase started (every
//! client at once) and ended, with its bandwidth and rate — what `serve`'s web view draws as
//! bands over its charts — and its latency second by second, which `report` charts. Only the
//! lines asked for are parsed; a line that does not read (the last of an interrupted run) ends
//! the reading, as what came before is whole.

use super::{BenchEvent, ResultsError, run_dir};
use crate::phase::Phase;
use serde::Serialize;
use std::io::BufRead;
use std::path::Path;

/// One phase of one iteration on the clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSpan {
    pub iteration: u32,
    pub phase: Phase,
    /// Unix seconds.
    pub start: f64,
    /// `start` + the phase's seconds (last task's end − first task's start); `None` for a phase
    /// that never ended (the run was stopped in it).
    pub end: Option<f64>,
    pub bw_mib: Option<f64>,
    pub ops_per_sec: Option<f64>,
}

/// The largest events.jsonl read: a line per phase and a line per client per second of
/// progress, so a day of a thousand clients is ~10 GiB; the web view reads at most this much
/// of one (its phase lines come first in each phase, so the timeline is whole up to there).
const EVENTS_READ: u64 = 256 << 20;

/// One second of a run's latency: the percentiles of the operations every client finished in
/// it (`BenchEvent::LatencySecond`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencySecond {
    pub iteration: u32,
    pub phase: Phase,
    /// Unix seconds: the second's start (the phase's start, plus whole seconds).
    pub at: f64,
    pub latency: crate::latency::Percentiles,
}

/// Each event of the run in `dir` whose line holds `marker` (progress lines, most of the
/// file, are skipped before they are parsed), in order, up to a line that does not read.
fn each_event(dir: &Path, marker: &str, mut take: impl FnMut(BenchEvent)) -> Result<(), ResultsError> {
    let path = run_dir::events_path(dir);
    let file = std::fs::File::open(&path).map_err(|source| ResultsError::Read {
        path: path.clone(),
        dir: dir.to_owned(),
        source,
    })?;
    for line in std::io::BufReader::new(std::io::Read::take(file, EVENTS_READ)).lines() {
        let Ok(line) = line else { break };
        if !line.contains(marker) {
            continue;
        }
        match serde_json::from_str::<BenchEvent>(&line) {
            Ok(event) => take(event),
            Err(_) => break,
        }
    }
    Ok(())
}

/// The run's latency second by second, in order (none for a run from before they were kept,
/// or of fio, which reports only at the end).
pub fn latency_seconds(dir: &Path) -> Result<Vec<LatencySecond>, ResultsError> {
    let mut seconds = Vec::new();
    each_event(dir, "\"latency_second\"", |event| {
        if let BenchEvent::LatencySecond { iteration, phase, at, latency } = event {
            seconds.push(LatencySecond { iteration, phase, at, latency });
        }
    })?;
    Ok(seconds)
}

/// One `--fault` of the run: when it was injected and undone (Unix seconds), and what it did to
/// its phase (`BenchEvent::FaultMeasured`, once the phase was done).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultSpan {
    pub node: String,
    pub iteration: u32,
    pub phase: Phase,
    pub injected: f64,
    pub undone: Option<f64>,
    pub ops_per_s_before: f64,
    pub stall_s: f64,
    pub recovery_s: Option<f64>,
    /// Tasks that failed in the phase, and the first one's error.
    pub client_errors: u32,
    pub first_error: Option<String>,
    /// The failed tasks' transfers (items) and bytes not done (`BenchEvent::FaultMeasured`).
    pub ops_lost: Option<u64>,
    pub bytes_lost: Option<u64>,
    /// A killed brick's heal, once it was followed (`BenchEvent::FaultHealed`).
    pub heal: Option<Heal>,
}

/// How a killed brick's volume healed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Heal {
    /// The most entries pending at once.
    pub pending_max: u64,
    /// Seconds from the brick's return until none were left; `None`: not within the wait, or
    /// not followed (`error`).
    pub healed_after_s: Option<f64>,
    /// Why it was not followed (glusterd's words).
    pub error: Option<String>,
}

/// The run's measured faults, in order (none for a run without `--fault`).
pub fn faults(dir: &Path) -> Result<Vec<FaultSpan>, ResultsError> {
    let mut faults: Vec<FaultSpan> = Vec::new();
    each_event(dir, "\"fault_", |event| {
        // A heal is told after its fault's measure: the node's latest fault's.
        if let BenchEvent::FaultHealed { node, pending_max, healed_after_s, error, .. } = &event {
            if let Some(f) = faults.iter_mut().rev().find(|f| &f.node == node) {
                f.heal = Some(Heal {
                    pending_max: *pending_max,
                    healed_after_s: *healed_after_s,
                    error: error.clone(),
                });
            }
            return;
        }
        if let BenchEvent::FaultMeasured {
            node,
            iteration,
            phase,
            injected_at,
            undone_at,
            ops_per_s_before,
            stall_s,
            recovery_s,
            client_errors,
            first_error,
            ops_lost,
            bytes_lost,
        } = event
        {
            faults.push(FaultSpan {
                node,
                iteration,
                phase,
                injected: injected_at,
                undone: undone_at,
                ops_per_s_before,
                stall_s,
                recovery_s,
                client_errors,
                first_error,
                ops_lost,
                bytes_lost,
                heal: None,
            });
        }
    })?;
    Ok(faults)
}

/// One phase's GlusterFS profile, as the run kept it (`--gluster-profile`).
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseProfile {
    pub iteration: u32,
    pub phase: Phase,
    pub volume: String,
    pub bricks: Vec<super::ProfiledBrick>,
    pub error: Option<String>,
}

/// The run's GlusterFS profiles, a phase each, in order (none without `--gluster-profile`).
pub fn gluster_profiles(dir: &Path) -> Result<Vec<PhaseProfile>, ResultsError> {
    let mut out = Vec::new();
    each_event(dir, "\"gluster_profile\"", |event| {
        if let BenchEvent::GlusterProfile { iteration, phase, volume, bricks, error } = event {
            out.push(PhaseProfile { iteration, phase, volume, bricks, error });
        }
    })?;
    Ok(out)
}

/// One phase's I/O per Lustre target, from the servers' job_stats.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseJobs {
    pub iteration: u32,
    pub phase: Phase,
    pub clients: Vec<super::ClientJobId>,
    pub targets: Vec<super::TargetJobStats>,
    pub errors: Vec<String>,
}

/// The run's Lustre job_stats readings, a phase each, in order (none where no client has a
/// Lustre client).
pub fn lustre_jobs(dir: &Path) -> Result<Vec<PhaseJobs>, ResultsError> {
    let mut out = Vec::new();
    each_event(dir, "\"lustre_jobs\"", |event| {
        if let BenchEvent::LustreJobs { iteration, phase, clients, targets, errors } = event {
            out.push(PhaseJobs { iteration, phase, clients, targets, errors });
        }
    })?;
    Ok(out)
}

/// The phases of the run in `dir`, in the order they ran.
pub fn timeline(dir: &Path) -> Result<Vec<PhaseSpan>, ResultsError> {
    let mut spans: Vec<PhaseSpan> = Vec::new();
    each_event(dir, "\"phase_", |event| match event {
        BenchEvent::PhaseStarted { iteration, phase, at } => {
            spans.push(PhaseSpan { iteration, phase, start: at, end: None, bw_mib: None, ops_per_sec: None })
        }
        BenchEvent::PhaseDone { iteration, phase, totals, .. } => {
            if let Some(span) = spans.iter_mut().rev().find(|s| s.iteration == iteration && s.phase == phase)
            {
                span.end = Some(span.start + totals.seconds);
                span.bw_mib = Some(totals.bw_mib);
                span.ops_per_sec = Some(totals.ops_per_sec);
            }
        }
        _ => {}
    })?;
    Ok(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::IorPhase;

    #[test]
    fn a_runs_phases_are_read_from_its_events_with_their_times_and_bandwidth() {
        // A directory `pvfsctl demo --once` wrote (pvfs-report's testdata; its MANIFEST says so).
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../pvfs-report/testdata/old-results/demo-throughput-20261127T205944");
        let spans = timeline(&dir).expect("reads");
        let phases: Vec<(u32, Phase)> = spans.iter().map(|s| (s.iteration, s.phase)).collect();
        let (w, r) = (Phase::Ior(IorPhase::Write), Phase::Ior(IorPhase::Read));
        assert_eq!(phases, [(0, w), (0, r), (1, w), (1, r)]);
        let first = &spans[0];
        assert_eq!(first.start, 1795813184.7848504);
        assert_eq!(first.end, Some(1795813184.7848504 + 0.295205065));
        assert_eq!(first.bw_mib, Some(1300.7906893467427));
        assert!(spans.windows(2).all(|p| p[0].end.is_some_and(|end| end <= p[1].start)), "{spans:?}");
    }

    /// The seconds a run kept, in order, each in its phase; a torn last line ends them.
    #[test]
    fn a_runs_latency_seconds_are_read_from_its_events() {
        let dir = tempfile::tempdir().expect("tempdir");
        let second = |at: f64, p99: u64| {
            format!(
                "{{\"at\":{at},\"count\":10,\"event\":\"latency_second\",\"iteration\":0,\"max_ns\":{p99},\
                 \"mean_ns\":5.0,\"min_ns\":1,\"p50_ns\":5,\"p90_ns\":9,\"p999_ns\":{p99},\"p99_ns\":{p99},\"phase\":\"write\"}}\n"
            )
        };
        let text = format!(
            "{{\"at\":10.0,\"event\":\"phase_started\",\"iteration\":0,\"phase\":\"write\"}}\n{}{}{}",
            second(10.0, 100),
            second(11.0, 900),
            &second(12.0, 5)[..40]
        );
        std::fs::write(dir.path().join("events.jsonl"), text).expect("write");
        let seconds = latency_seconds(dir.path()).expect("reads");
        let got: Vec<(f64, u64, Phase)> = seconds.iter().map(|s| (s.at, s.latency.p99_ns, s.phase)).collect();
        assert_eq!(got, [(10.0, 100, Phase::Ior(IorPhase::Write)), (11.0, 900, Phase::Ior(IorPhase::Write))]);
        assert!(matches!(latency_seconds(&dir.path().join("nope")), Err(ResultsError::Read { .. })));
    }

    #[test]
    fn a_phase_the_run_stopped_in_has_no_end_and_a_torn_last_line_ends_the_reading() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("events.jsonl"),
            "{\"at\":10.0,\"event\":\"phase_started\",\"iteration\":0,\"phase\":\"write\"}\n\
             {\"bytes\":1,\"event\":\"progress\",\"node\":\"c1\",\"ops\":1,\"time\":11.0}\n\
             {\"at\":20.0,\"event\":\"phase_sta",
        )
        .expect("write");
        let spans = timeline(dir.path()).expect("reads");
        assert_eq!(spans.len(), 1);
        assert_eq!((spans[0].start, spans[0].end, spans[0].bw_mib), (10.0, None, None));
        assert_eq!(latency_seconds(dir.path()).expect("reads"), [], "none kept in that run");
        assert!(matches!(timeline(&dir.path().join("nope")), Err(ResultsError::Read { .. })));
    }
}
