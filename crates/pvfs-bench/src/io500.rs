//! The IO500 as io500 reports and scores it (IO500/io500 at 02091cf, `src/main.c`): each
//! phase's line, the score line, the reasons a run is invalid, and the score worked out again
//! from the phases.
//!
//! A phase's line is `[RESULT] NAME VALUE UNIT : time SECONDS seconds`, with ` [INVALID]` at
//! the end when the phase broke a rule; `[      ]` in place of `[RESULT]` marks a phase that
//! counts in no score (`timestamp`, `ior-rnd4K-easy-read`). The unit is `GiB/s` for the ior
//! phases (io500 picks it by the name's first letter) and `kIOPS` for the others. The score
//! line is `[SCORE ] Bandwidth BW GiB/s : IOPS MD kiops : TOTAL SCORE`, `[SCOREX]` for the
//! extended score, each with ` [INVALID]` when the run is. stdout and `result_summary.txt`
//! hold the same lines; stdout also holds `ERROR INVALID (FILE:LINE) REASON` lines.
//!
//! The score ([`score`], io500's `calc_score`): per group (bandwidth: the ior phases, in GiB/s;
//! metadata: mdtest and find, in kIOPS), the geometric mean of the phases that score above
//! zero (a group with none scores 0), and the total is the square root of the product of the
//! two. The standard score leaves out the optional phases (`find-easy`, `find-hard`,
//! `mdworkbench-bench`), which the extended score counts.

use serde::{Deserialize, Serialize};
use std::fmt;

pub mod assemble;
pub mod ini;
pub mod plan;
pub mod rules;
mod run;
pub use run::{IO500_FILE, Io500Phase, Io500Run, ReadError, from_stdout, looks_like_io500, read_run};

/// What a phase's figure is in (serialised as io500 prints it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    /// Bandwidth: the ior phases.
    #[serde(rename = "GiB/s")]
    GiBPerS,
    /// Thousands of operations a second: mdtest, find.
    #[serde(rename = "kIOPS")]
    KIops,
}

/// One phase's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    pub name: String,
    pub value: f64,
    pub unit: Unit,
    pub seconds: f64,
    /// In a score (`[RESULT]`), or in none (`[      ]`).
    pub scored: bool,
    /// False when io500 marked the phase `[INVALID]`.
    pub valid: bool,
}

/// A score as io500 prints it, or as [`score`] works it out.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// Geometric mean of the bandwidth phases, GiB/s.
    pub bandwidth: f64,
    /// Geometric mean of the metadata phases, kIOPS.
    pub metadata: f64,
    pub total: f64,
    pub valid: bool,
}

/// What a run's output says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// The phases in the order they ran.
    pub phases: Vec<PhaseResult>,
    /// The `[SCORE ]` line, when the run got that far.
    pub score: Option<Score>,
    /// The `[SCOREX]` line of an extended run.
    pub extended: Option<Score>,
    /// Each `ERROR INVALID` line's reason, in order (stdout only).
    pub invalid_reasons: Vec<String>,
}

/// Phases that count only in the extended score (io500's `IO500_PHASE_FLAG_OPTIONAL` among
/// the scored ones).
pub const OPTIONAL: [&str; 3] = ["find-easy", "find-hard", "mdworkbench-bench"];

/// A line of io500's output that does not read as its format says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} of the io500 output: {why}: {text:?}")]
pub struct Io500Error {
    pub line: usize,
    pub why: &'static str,
    pub text: String,
}

/// Reads io500's stdout or its `result_summary.txt`. Lines that are neither a phase, a score
/// nor an `ERROR INVALID` (the version, the result directory, `;` comments) are skipped.
pub fn parse_summary(text: &str) -> Result<Summary, Io500Error> {
    let mut summary = Summary::default();
    for (i, line) in text.lines().enumerate() {
        let error = |why| Io500Error { line: i + 1, why, text: line.to_owned() };
        if let Some(rest) = line.strip_prefix("[RESULT]") {
            summary.phases.push(phase(rest, true).ok_or_else(|| error("not a phase's result"))?);
        } else if let Some(rest) = line.strip_prefix("[      ]") {
            summary.phases.push(phase(rest, false).ok_or_else(|| error("not a phase's result"))?);
        } else if let Some(rest) = line.strip_prefix("[SCORE ]") {
            summary.score = Some(score_line(rest).ok_or_else(|| error("not a score"))?);
        } else if let Some(rest) = line.strip_prefix("[SCOREX]") {
            // The extended section's header is `[SCOREX]` alone; its score line has figures.
            if !rest.trim().is_empty() {
                summary.extended = Some(score_line(rest).ok_or_else(|| error("not a score"))?);
            }
        } else if let Some(rest) = line.strip_prefix("ERROR INVALID") {
            // `ERROR INVALID (src/main.c:490) Runtime is smaller…`: the reason after the place.
            let rest = rest.trim_start();
            let reason = match rest.strip_prefix('(').and_then(|r| r.split_once(')')) {
                Some((_, reason)) => reason.trim(),
                None => rest,
            };
            summary.invalid_reasons.push(reason.to_owned());
        }
    }
    Ok(summary)
}

/// One section of io500's `result.txt` (`[run]`, a phase's, `[SCORE]`): its `key = value`
/// pairs in order, and the `; ERROR INVALID` reasons written within it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResultSection {
    pub name: String,
    pub values: Vec<(String, String)>,
    pub invalid_reasons: Vec<String>,
}

impl ResultSection {
    /// The value of `key`, the first if it is given twice.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// Reads io500's `result.txt`: an ini file whose sections are the run, each phase that ran
/// (`t_start`, `exe` — the IOR, mdtest or pfind command line —, `score`, `t_delta`, and the
/// stonewall figures of the write phases), and the score. Each `; ERROR INVALID` comment is
/// kept with the section it is in, which says which phase broke which rule; other comments
/// (`; START`, `; END`) are skipped.
pub fn parse_result_txt(text: &str) -> Result<Vec<ResultSection>, Io500Error> {
    let mut sections: Vec<ResultSection> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let error = |why| Io500Error { line: i + 1, why, text: line.to_owned() };
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            sections.push(ResultSection { name: name.to_owned(), ..ResultSection::default() });
            continue;
        }
        let section = sections.last_mut().ok_or_else(|| error("a line before any section"))?;
        if let Some(comment) = trimmed.strip_prefix(';') {
            if let Some(reason) = comment.trim().strip_prefix("ERROR INVALID") {
                section.invalid_reasons.push(reason.trim().to_owned());
            }
            continue;
        }
        let (key, value) = trimmed.split_once('=').ok_or_else(|| error("not `key = value`"))?;
        section.values.push((key.trim().to_owned(), value.trim().to_owned()));
    }
    Ok(sections)
}

/// ` NAME VALUE UNIT : time SECONDS seconds[ [INVALID]]`.
fn phase(rest: &str, scored: bool) -> Option<PhaseResult> {
    let (rest, valid) = match rest.trim_end().strip_suffix("[INVALID]") {
        Some(rest) => (rest, false),
        None => (rest, true),
    };
    let (figure, time) = rest.split_once(" : time ")?;
    let mut words = figure.split_whitespace();
    let name = words.next()?.to_owned();
    let value = number(words.next()?)?;
    let unit = match words.next()? {
        "GiB/s" => Unit::GiBPerS,
        "kIOPS" => Unit::KIops,
        _ => return None,
    };
    if words.next().is_some() {
        return None;
    }
    let seconds = number(time.trim().strip_suffix("seconds")?.trim())?;
    Some(PhaseResult { name, value, unit, seconds, scored, valid })
}

/// ` Bandwidth BW GiB/s : IOPS MD kiops : TOTAL SCORE[ [INVALID]]`.
fn score_line(rest: &str) -> Option<Score> {
    let (rest, valid) = match rest.trim_end().strip_suffix("[INVALID]") {
        Some(rest) => (rest, false),
        None => (rest, true),
    };
    let mut parts = rest.split(" : ");
    let bandwidth =
        number(parts.next()?.trim().strip_prefix("Bandwidth")?.trim().strip_suffix("GiB/s")?.trim())?;
    let metadata = number(parts.next()?.trim().strip_prefix("IOPS")?.trim().strip_suffix("kiops")?.trim())?;
    let total = number(parts.next()?.trim().strip_prefix("TOTAL")?.trim())?;
    if parts.next().is_some() {
        return None;
    }
    Some(Score { bandwidth, metadata, total, valid })
}

/// A figure as io500 prints it (`%f`): finite, not negative.
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
}

/// io500's `calc_score` over `phases`: the standard score, or with `extended` the optional
/// phases too. Valid when every phase it counts is; the rules on the run as a whole (a
/// stonewall other than 300 s, a dry run) are the caller's to apply.
pub fn score(phases: &[PhaseResult], extended: bool) -> Score {
    let counted: Vec<&PhaseResult> =
        phases.iter().filter(|p| p.scored && (extended || !OPTIONAL.contains(&p.name.as_str()))).collect();
    let group = |unit: Unit| {
        // Phases scoring 0 or less are left out of the mean, as io500 leaves them out.
        let figures: Vec<f64> =
            counted.iter().filter(|p| p.unit == unit && p.value > 0.0).map(|p| p.value).collect();
        if figures.is_empty() {
            0.0
        } else {
            figures.iter().product::<f64>().powf(1.0 / figures.len() as f64)
        }
    };
    let (bandwidth, metadata) = (group(Unit::GiBPerS), group(Unit::KIops));
    Score {
        bandwidth,
        metadata,
        total: (bandwidth * metadata).sqrt(),
        valid: counted.iter().all(|p| p.valid),
    }
}

impl fmt::Display for Unit {
    /// As io500 prints it after a phase's figure.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unit::GiBPerS => "GiB/s",
            Unit::KIops => "kIOPS",
        })
    }
}

impl fmt::Display for Score {
    /// As io500 prints it after `[SCORE ]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Bandwidth {:.6} GiB/s : IOPS {:.6} kiops : TOTAL {:.6}{}",
            self.bandwidth,
            self.metadata,
            self.total,
            if self.valid { "" } else { " [INVALID]" }
        )
    }
}

#[cfg(test)]
mod tests;
