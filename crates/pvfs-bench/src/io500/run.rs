//! A whole io500 run read back from what io500 leaves: its result directory
//! (`result_summary.txt`, with `result.txt` for each phase's command and reasons, and the
//! `config.ini` it ran with), or its stdout saved to a file. This is what `bench import` stores
//! and `report` shows.
//!
//! The figures are checked before they are believed: a phase's score in `result.txt` must be
//! the one `result_summary.txt` prints, and the printed score must be what io500's
//! `calc_score` gives for the printed phases (within their rounding to six decimals), so an
//! output that was edited, truncated or mixed from two runs is refused, not stored.

use super::{Io500Error, PhaseResult, Score, parse_result_txt, parse_summary, score};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The largest io500 file read: a summary is ~2 KiB, `result.txt` ~10 KiB; stdout with `-v`
/// can hold every rank's lines.
pub const IO500_FILE: pvfs_host::local_file::Cap =
    pvfs_host::local_file::Cap { what: "an io500 output", bytes: 64 << 20 };

/// The files of a result directory read, in the order they are looked for.
const SUMMARY_TXT: &str = "result_summary.txt";
const RESULT_TXT: &str = "result.txt";
const CONFIG_INI: &str = "config.ini";

/// One phase as the run reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Io500Phase {
    #[serde(flatten)]
    pub result: PhaseResult,
    /// The IOR, mdtest or pfind command io500 ran for it (`result.txt`'s `exe`).
    pub command: Option<String>,
    /// Why io500 marked it invalid (`result.txt`'s `; ERROR INVALID` lines in its section).
    pub invalid_reasons: Vec<String>,
    /// When the phase ended, Unix seconds: when its line reached the coordinator (`--engine
    /// io500`) or when the built-in engine's stage ended; absent in an imported run. With
    /// `seconds` it places the phase over the run's per-second metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<f64>,
}

/// An io500 run as its output says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Io500Run {
    /// io500's version, when its build knew it (`IO500 version io500-sc24 (standard)`).
    pub version: Option<String>,
    /// `standard`, `extended`, `scc`…
    pub mode: Option<String>,
    /// MPI ranks (`result.txt`'s `procs`).
    pub procs: Option<u64>,
    pub phases: Vec<Io500Phase>,
    pub score: Option<Score>,
    pub extended: Option<Score>,
    /// The reasons the run as a whole is invalid (`result.txt`'s run and score sections), or,
    /// from stdout, which does not say which phase a reason belongs to, every reason.
    pub invalid_reasons: Vec<String>,
}

impl Io500Run {
    /// Whether io500 called the run valid: its score line says so.
    pub fn valid(&self) -> bool {
        self.score.is_some_and(|s| s.valid)
    }
}

/// Why an io500 output was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    File(#[from] pvfs_host::local_file::LocalFileError),
    #[error("{}: {error}", path.display())]
    Format { path: PathBuf, error: Io500Error },
    #[error("{}: no io500 phase or score line in it: is it io500's stdout or result_summary.txt?", path.display())]
    NotIo500 { path: PathBuf },
    #[error(
        "{}: not an io500 result directory: it has no result_summary.txt (give the directory io500 printed as `The result files are stored in the directory`)",
        dir.display()
    )]
    NoSummary { dir: PathBuf },
    #[error("{}: {what}: {printed} is printed, but {computed} is what the output's own figures give; the files disagree (edited, or from two runs?)", path.display())]
    Disagree { path: PathBuf, what: String, printed: String, computed: String },
}

/// Whether `text` is io500's output (a phase, score or version line of its own).
pub fn looks_like_io500(text: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with("[RESULT]") || l.starts_with("[SCORE ]") || l.starts_with("IO500 version"))
}

/// Reads an io500 run from its result directory or its stdout (see the module's doc); returns
/// the run and the files it read, to keep beside the record.
pub fn read_run(path: &Path) -> Result<(Io500Run, Vec<PathBuf>), ReadError> {
    let read = |p: &Path| pvfs_host::local_file::read_to_string(p, IO500_FILE);
    let (summary_path, result_path) = if path.is_dir() {
        let summary = path.join(SUMMARY_TXT);
        if !summary.is_file() {
            return Err(ReadError::NoSummary { dir: path.to_owned() });
        }
        let result = path.join(RESULT_TXT);
        (summary, result.is_file().then_some(result))
    } else {
        (path.to_owned(), None)
    };
    let text = read(&summary_path)?;
    let format = |path: &Path| {
        let path = path.to_owned();
        move |error| ReadError::Format { path, error }
    };
    let mut run = summary_run(&text, &summary_path)?;
    let mut files = vec![summary_path.clone()];
    if let Some(result_path) = result_path {
        let sections = parse_result_txt(&read(&result_path)?).map_err(format(&result_path))?;
        join_sections(&mut run, &sections, &result_path)?;
        files.push(result_path);
    }
    if path.is_dir() && path.join(CONFIG_INI).is_file() {
        files.push(path.join(CONFIG_INI));
    }
    check_scores(&run, &summary_path)?;
    Ok((run, files))
}

/// Reads an io500 run from its stdout as it was streamed back (`--engine io500`); `path` names
/// where it is kept, for the errors. The scores are checked as [`read_run`] checks them.
pub fn from_stdout(text: &str, path: &Path) -> Result<Io500Run, ReadError> {
    let run = summary_run(text, path)?;
    check_scores(&run, path)?;
    Ok(run)
}

/// The run a summary's (or stdout's) text gives, before `result.txt` adds to it.
fn summary_run(text: &str, path: &Path) -> Result<Io500Run, ReadError> {
    let summary = parse_summary(text).map_err(|error| ReadError::Format { path: path.to_owned(), error })?;
    if summary.phases.is_empty() && summary.score.is_none() {
        return Err(ReadError::NotIo500 { path: path.to_owned() });
    }
    let (version, mode) = version_line(text);
    Ok(Io500Run {
        version,
        mode,
        procs: None,
        phases: summary
            .phases
            .into_iter()
            .map(|result| Io500Phase { result, command: None, invalid_reasons: Vec::new(), ended: None })
            .collect(),
        score: summary.score,
        extended: summary.extended,
        invalid_reasons: summary.invalid_reasons,
    })
}

/// `IO500 version VERSION (MODE)`: the version (`None` when io500 was built without one) and
/// the mode.
fn version_line(text: &str) -> (Option<String>, Option<String>) {
    let Some(rest) = text.lines().find_map(|l| l.strip_prefix("IO500 version")) else { return (None, None) };
    let (version, mode) = match rest.rsplit_once('(') {
        Some((version, mode)) => (version, mode.trim().strip_suffix(')').map(str::to_owned)),
        None => (rest, None),
    };
    let version = version.trim();
    ((!version.is_empty()).then(|| version.to_owned()), mode)
}

/// Each phase's command and reasons from its `result.txt` section, the run's from `[run]` and
/// `[SCORE]`; a phase whose section scores differently is an error.
fn join_sections(
    run: &mut Io500Run,
    sections: &[super::ResultSection],
    path: &Path,
) -> Result<(), ReadError> {
    for section in sections {
        match section.name.as_str() {
            "run" => {
                run.procs = section.get("procs").and_then(|p| p.parse().ok());
                if let Some(mode) = section.get("mode").filter(|m| !m.is_empty()) {
                    run.mode = Some(mode.to_owned());
                }
                if let Some(version) = section.get("version").filter(|v| !v.is_empty()) {
                    run.version = Some(version.to_owned());
                }
                run.invalid_reasons.extend(section.invalid_reasons.iter().cloned());
            }
            "SCORE" | "SCOREX" => run.invalid_reasons.extend(section.invalid_reasons.iter().cloned()),
            name => {
                let Some(phase) = run.phases.iter_mut().find(|p| p.result.name == name) else { continue };
                if let Some(printed) = section.get("score") {
                    // Both files print the same `%f` of the same double.
                    let shown = format!("{:.6}", phase.result.value);
                    if printed != shown {
                        return Err(ReadError::Disagree {
                            path: path.to_owned(),
                            what: format!("phase {name}'s score"),
                            printed: printed.to_owned(),
                            computed: format!("{shown} in result_summary.txt"),
                        });
                    }
                }
                phase.command = section.get("exe").map(str::to_owned);
                phase.invalid_reasons = section.invalid_reasons.clone();
            }
        }
    }
    Ok(())
}

/// The printed scores against io500's `calc_score` over the printed phases. The phases are
/// printed to six decimals, so the score is only known within the scores of every phase at
/// the bottom and at the top of its rounding (`calc_score` grows with each phase); a phase
/// printed as 0 may have been just above it and counted, so then nothing can be said.
fn check_scores(run: &Io500Run, path: &Path) -> Result<(), ReadError> {
    const HALF_ULP: f64 = 0.5e-6;
    let phases: Vec<PhaseResult> = run.phases.iter().map(|p| p.result.clone()).collect();
    for (printed, extended, what) in
        [(run.score, false, "the score"), (run.extended, true, "the extended score")]
    {
        let Some(printed) = printed else { continue };
        if phases.iter().any(|p| p.scored && p.value == 0.0) {
            continue;
        }
        let shifted = |by: f64| {
            let moved: Vec<PhaseResult> =
                phases.iter().map(|p| PhaseResult { value: (p.value + by).max(0.0), ..p.clone() }).collect();
            score(&moved, extended)
        };
        let (low, high) = (shifted(-HALF_ULP), shifted(HALF_ULP));
        let within = |v: f64, lo: f64, hi: f64| v >= lo - HALF_ULP * 1.01 && v <= hi + HALF_ULP * 1.01;
        for (name, v, lo, hi) in [
            ("bandwidth", printed.bandwidth, low.bandwidth, high.bandwidth),
            ("metadata", printed.metadata, low.metadata, high.metadata),
            ("total", printed.total, low.total, high.total),
        ] {
            if !within(v, lo, hi) {
                return Err(ReadError::Disagree {
                    path: path.to_owned(),
                    what: format!("{what}'s {name}"),
                    printed: format!("{v:.6}"),
                    computed: format!("{:.6}", score(&phases, extended).field(name)),
                });
            }
        }
    }
    Ok(())
}

impl Score {
    fn field(&self, name: &str) -> f64 {
        match name {
            "bandwidth" => self.bandwidth,
            "metadata" => self.metadata,
            _ => self.total,
        }
    }
}
