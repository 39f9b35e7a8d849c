//! An IO500 run of the built-in engine told as io500 tells one: each stage's figure (GiB/s for
//! the ior phases, kIOPS for the others, over the stage's own time as io500 takes it), the
//! rules applied with io500's words ([`super::rules`]), the score by io500's `calc_score`, and
//! its two result files (`result_summary.txt`, `result.txt`) in its format, so that
//! `bench import` reads a pvfs run as it reads io500's.

use super::plan::{Io500Params, MDTEST_HARD_BYTES, Stage, workload};
use super::rules::{self, PhaseFacts, RunFacts};
use super::run::{Io500Phase, Io500Run};
use super::{PhaseResult, Unit, score};
use crate::params::{FindParams, IorVersion, Workload, ior_args, mdtest_args};
use crate::summary::PhaseTotals;
use std::fmt::Write;
use std::path::Path;

/// What one stage did, as the coordinator saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct StageOutcome {
    pub stage: Stage,
    /// From the stage's start to its end (all its engine phases: io500's `t_delta`).
    pub seconds: f64,
    /// The totals of the engine phase io500 scores (`None` for the timestamp).
    pub totals: Option<PhaseTotals>,
    /// A find's files found.
    pub found: Option<u64>,
    /// The command the stage stands for.
    pub command: Option<String>,
    /// When it ended, Unix seconds.
    pub ended: Option<f64>,
}

/// The search io500's find makes: files changed since the timestamp (its directory's change
/// time, [`super::plan::TIMESTAMP_MARK`]), of mdtest-hard's size, whose name holds `01`.
pub fn find_params() -> FindParams {
    FindParams {
        changed_since: 0,
        size: Some(MDTEST_HARD_BYTES),
        name: "*01*".to_owned(),
        newer: super::plan::TIMESTAMP_MARK.to_owned(),
    }
}

/// The command `stage` stands for, over the data directory `datadir`: IOR's or mdtest's
/// arguments as IOR 4 takes them, or pfind's.
pub fn command(stage: Stage, params: &Io500Params, datadir: &Path) -> Option<String> {
    if stage == Stage::Find {
        return Some(find_command(&find_params(), datadir));
    }
    let family = stage.family()?;
    let dir = datadir.join(family.dir());
    Some(match workload(stage, &params.options, &params.seeds)? {
        Workload::Ior(p) => {
            format!(
                "ior {}",
                ior_args(&p, IorVersion(4, 1, 0), &dir.join("ior").display().to_string()).join(" ")
            )
        }
        Workload::Mdtest(p) => format!("mdtest {}", mdtest_args(&p, &dir.display().to_string()).join(" ")),
        Workload::Find(_) | Workload::Io500(_) => return None,
    })
}

/// pfind's command line for `p` over `dir` (a time given as a number, not a file, is shown as
/// `-newer @SECONDS`).
pub fn find_command(p: &FindParams, dir: &Path) -> String {
    let mut out = format!("pfind {}", dir.display());
    if !p.newer.is_empty() {
        out += &format!(" -newer {}", dir.join(&p.newer).display());
    } else if p.changed_since != 0 {
        out += &format!(" -newer @{}", p.changed_since);
    }
    if let Some(size) = p.size {
        out += &format!(" -size {size}c");
    }
    if !p.name.is_empty() {
        out += &format!(" -name {}", p.name);
    }
    out + " -C"
}

/// The run's figures, rules and score from what each stage did, for `procs` tasks in all.
pub fn assemble(params: &Io500Params, procs: u64, stages: &[StageOutcome]) -> Io500Run {
    let facts = RunFacts { stonewall_s: params.options.stonewall, scc: params.options.scc, dry_run: false };
    let mut phases = Vec::new();
    for s in stages {
        let ior =
            matches!(s.stage.family(), Some(super::plan::Family::IorEasy | super::plan::Family::IorHard));
        let value = match &s.totals {
            None => 0.0,
            Some(t) if ior => t.bw_mib / 1024.0,
            Some(t) => t.ops_per_sec / 1000.0,
        };
        let name = s.stage.name();
        let reasons = rules::phase_reasons(
            &facts,
            &PhaseFacts {
                name,
                runtime_s: s.seconds,
                score: value,
                errors: 0,
                ior_write: None,
                found: (s.stage == Stage::Find).then_some(s.found),
            },
        );
        phases.push(Io500Phase {
            result: PhaseResult {
                name: name.to_owned(),
                value,
                unit: if ior { Unit::GiBPerS } else { Unit::KIops },
                seconds: s.seconds,
                scored: s.stage.scored(),
                valid: reasons.is_empty(),
            },
            command: s.command.clone(),
            invalid_reasons: reasons.iter().map(ToString::to_string).collect(),
            ended: s.ended,
        });
    }
    let run_reasons: Vec<String> = rules::run_reasons(&facts).iter().map(ToString::to_string).collect();
    let results: Vec<PhaseResult> = phases.iter().map(|p| p.result.clone()).collect();
    let mut total = score(&results, false);
    // A stage that did not run leaves the score incomplete: no score, as io500 prints none.
    let complete = Stage::ALL.iter().all(|stage| stages.iter().any(|s| s.stage == *stage));
    total.valid &= run_reasons.is_empty();
    Io500Run {
        version: Some(format!("pvfs {} built-in engine", env!("CARGO_PKG_VERSION"))),
        mode: Some(if params.options.scc { "scc" } else { "standard" }.to_owned()),
        procs: Some(procs),
        phases,
        score: complete.then_some(total),
        extended: None,
        invalid_reasons: run_reasons,
    }
}

/// One phase's line as io500 prints it.
pub fn result_line(p: &PhaseResult) -> String {
    format!(
        "[{}] {:>20} {:>15.6} {} : time {:.3} seconds{}",
        if p.scored { "RESULT" } else { "      " },
        p.name,
        p.value,
        p.unit,
        p.seconds,
        if p.valid { "" } else { " [INVALID]" }
    )
}

/// `result_summary.txt` (and io500's stdout's figures): the version line, each phase, the score.
pub fn summary_text(run: &Io500Run) -> String {
    let mut out = format!(
        "IO500 version {} ({})\n",
        run.version.as_deref().unwrap_or(""),
        run.mode.as_deref().unwrap_or("standard")
    );
    for p in &run.phases {
        out += &result_line(&p.result);
        out.push('\n');
    }
    if let Some(score) = &run.score {
        let _ = writeln!(out, "[SCORE ] {score}");
    }
    out
}

/// `result.txt`: the run's section, each phase's (its command, why it is invalid, its score and
/// time), and the score's, as io500 writes them.
pub fn result_txt(run: &Io500Run) -> String {
    let mut out = String::from("[run]\n");
    let _ = writeln!(out, "procs           = {}", run.procs.unwrap_or(0));
    let _ = writeln!(out, "version         = {}", run.version.as_deref().unwrap_or(""));
    let _ = writeln!(out, "mode            = {}", run.mode.as_deref().unwrap_or("standard"));
    for reason in &run.invalid_reasons {
        let _ = writeln!(out, "; ERROR INVALID {reason}");
    }
    for p in &run.phases {
        let _ = write!(out, "\n[{}]\n", p.result.name);
        if let Some(command) = &p.command {
            let _ = writeln!(out, "exe             = {command}");
        }
        for reason in &p.invalid_reasons {
            let _ = writeln!(out, "; ERROR INVALID {reason}");
        }
        if p.result.scored {
            let _ = writeln!(out, "score           = {:.6}", p.result.value);
        }
        let _ = writeln!(out, "t_delta         = {:.4}", p.result.seconds);
    }
    if let Some(score) = &run.score {
        out += "\n[SCORE]\n";
        let _ = writeln!(out, "MD              = {:.6}", score.metadata);
        let _ = writeln!(out, "BW              = {:.6}", score.bandwidth);
        let _ = writeln!(
            out,
            "SCORE           = {:.6}{}",
            score.total,
            if score.valid { "" } else { " [INVALID]" }
        );
    }
    out
}
