//! Readers of IOR and mdtest outputs: the tool, format and version are told from the text itself.
//!
//! What is read, and from where:
//! - IOR text (3.0–4.1): the `IOR-…` banner, `Command line`, the per-iteration `Results` table
//!   and `Summary of all tests`. Both tables are read by their header line, column by name, so
//!   3.x tables without `IOPS`, `Latency(s)` or the `Stonewall` columns read the same way.
//! - IOR JSON (`-O summaryFormat=JSON`): the whole document from stdout, or a summary file,
//!   with any text IOR or MPI printed around (or into) it; `tests[].Results[]` and `summary[]`.
//! - IOR CSV (`-O summaryFormat=CSV`): per-iteration rows only; see the `ior` module for the summary
//!   IOR would have printed.
//! - mdtest text (1.9–4.1): the `mdtest-…` banner, `Command line used`, every `SUMMARY` table.
//! - Failed runs: error lines from anywhere in the text (stdout and stderr may be merged, even
//!   mid-line), for [`Parsed::failure`].
//!
//! A value a given output does not state is `None`, never derived from other fields. The one
//! exception is documented where it happens (IOR CSV, which has no summary of its own).

mod ior;
mod mdtest;
mod table;
mod tool_errors;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::model::{Parsed, Tool};

/// Why an output could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    /// Any other error, in a file [`parse_file`] read.
    #[error("{path}: {source}")]
    InFile { path: PathBuf, source: Box<ParseError> },
    /// Neither tool's output, nor a failed run of either.
    #[error(
        "not an IOR or mdtest output: no 'IOR-…' / 'mdtest-…' banner, JSON 'tests' or SUMMARY table found"
    )]
    Unrecognized,
    /// IOR with `-O summaryFile=…` prints only where the results went.
    #[error(
        "this is IOR's standard output with -O summaryFile: the results were written to {path}; \
         parse that file instead"
    )]
    SummaryElsewhere { path: String },
    #[error(
        "the output holds {count} runs (banners at lines {lines}); split it into one file per run \
         (if they came from one mpirun, each process ran on its own: is IOR built against this MPI?)"
    )]
    SeveralRuns { count: usize, lines: String },
    /// IOR's JSON is cut short or garbled (a line of another process's output inside a value).
    #[error("line {line}, column {column}: IOR JSON does not parse: {message}")]
    Json { line: usize, column: usize, message: String },
    #[error("IOR JSON {at}: expected {expected}, found {found}")]
    JsonValue { at: String, expected: &'static str, found: String },
    /// A table row whose width is not its header's: most often another process's output
    /// written into the row.
    #[error(
        "line {line}: this {table} row has {found} fields but the header at line {header_line} names \
         {expected}; is other output mixed into it?"
    )]
    RowWidth { table: &'static str, line: usize, header_line: usize, found: usize, expected: usize },
    #[error("line {line}: {table} column '{column}' holds {value:?}, expected {expected}")]
    Value { table: &'static str, line: usize, column: String, value: String, expected: &'static str },
    #[error("line {line}: unknown mdtest heading {heading:?}; expected 'SUMMARY rate…' or 'SUMMARY time…'")]
    MdtestHeading { line: usize, heading: String },
}

/// Reads any IOR or mdtest output; see the module documentation for what is recognised.
pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let errors = tool_errors::scan(text);

    // IOR's JSON has no banner, but the text before it may hold one (some IOR versions print
    // theirs in every format), so JSON is looked for first.
    if let Some(document) = ior::find_json(text)? {
        return ior::parse_json(&document, errors);
    }

    let banners = banners(text);
    if banners.len() > 1 {
        let lines = banners.iter().map(|(line, _)| line.to_string()).collect::<Vec<_>>().join(", ");
        return Err(ParseError::SeveralRuns { count: banners.len(), lines });
    }
    match banners.first().map(|(_, tool)| *tool) {
        Some(Tool::Ior) if ior::has_csv_header(text) && !ior::has_text_tables(text) => {
            return ior::parse_csv(text, errors);
        }
        Some(Tool::Ior) => {
            let parsed = ior::parse_text(text, errors)?;
            // With -O summaryFile the banner stays on stdout and the results go to the file.
            if parsed.ior.is_empty()
                && parsed.errors.is_empty()
                && let Some(path) = ior::summary_file_notice(text)
            {
                return Err(ParseError::SummaryElsewhere { path });
            }
            return Ok(parsed);
        }
        Some(Tool::Mdtest) => return mdtest::parse_text(text, errors),
        None => {}
    }

    // No banner: a fragment of a log (a summary table on its own), a CSV summary, or a run that
    // failed before printing its banner.
    if ior::has_text_tables(text) {
        return ior::parse_text(text, errors);
    }
    if mdtest::has_summary(text) {
        return mdtest::parse_text(text, errors);
    }
    if ior::has_csv_header(text) {
        return ior::parse_csv(text, errors);
    }
    if let Some(tool) = tool_errors::tool(text, &errors) {
        return Ok(empty(tool, errors));
    }
    if let Some(path) = ior::summary_file_notice(text) {
        return Err(ParseError::SummaryElsewhere { path });
    }
    Err(ParseError::Unrecognized)
}

/// Reads a file, then [`parse`]s it. Outputs are read as UTF-8 with invalid bytes replaced:
/// interleaved writes from several processes can cut a multi-byte character in two.
pub fn parse_file(path: &Path) -> Result<Parsed, ParseError> {
    let bytes = std::fs::read(path).map_err(|source| ParseError::Read { path: path.to_owned(), source })?;
    parse(&String::from_utf8_lossy(&bytes))
        .map_err(|source| ParseError::InFile { path: path.to_owned(), source: Box::new(source) })
}

impl Parsed {
    /// Why the run failed, for the user: `None` when it printed a summary. Otherwise the first
    /// error line the tool printed (with a hint for the known mistakes: `-B`, removed in IOR
    /// 3.3, and `-O` given to mdtest), or, when the output has no error line at all, a note that
    /// it ends without a summary.
    pub fn failure(&self) -> Option<String> {
        if !self.ior.is_empty() || !self.mdtest.is_empty() {
            return None;
        }
        let Some(first) = self.errors.first() else {
            let table = match self.tool {
                Tool::Ior => "'Summary of all tests'",
                Tool::Mdtest => "SUMMARY table",
            };
            return Some(format!(
                "the output has no {table} and no error line: the run stopped early (killed, or its \
                 output cut short?) or printed only its usage"
            ));
        };
        Some(match tool_errors::hint(self.tool, first) {
            Some(hint) => format!("{first} — {hint}"),
            None => first.clone(),
        })
    }

    /// The shape `pvfsctl bench import --json` prints for one file: `file`, `tool`, `version`,
    /// `command` and `summary` (IOR's or mdtest's summary rows), nothing else.
    pub fn to_import_json(&self, file: &str) -> Value {
        let summary: Vec<Value> = match self.tool {
            Tool::Ior => self
                .ior
                .iter()
                .map(|row| {
                    json!({
                        "operation": row.operation,
                        "bw_max_mib": row.bw_max_mib,
                        "bw_min_mib": row.bw_min_mib,
                        "bw_mean_mib": row.bw_mean_mib,
                        "bw_std_mib": row.bw_std_mib,
                        "ops_max": row.ops_max,
                        "ops_min": row.ops_min,
                        "ops_mean": row.ops_mean,
                        "ops_std": row.ops_std,
                        "mean_time_s": row.mean_time_s,
                        "tasks": row.tasks,
                        "iterations": row.iterations,
                        "block_bytes": row.block_bytes,
                        "transfer_bytes": row.transfer_bytes,
                        "file_per_proc": row.file_per_proc,
                    })
                })
                .collect(),
            Tool::Mdtest => self
                .mdtest
                .iter()
                .map(|row| {
                    json!({
                        "operation": row.operation,
                        "max": row.max,
                        "min": row.min,
                        "mean": row.mean,
                        "std": row.std,
                        "unit": row.unit,
                    })
                })
                .collect(),
        };
        json!({
            "file": file,
            "tool": self.tool,
            "version": self.version,
            "command": self.command,
            "summary": summary,
        })
    }
}

/// Each run's banner: (1-based line, tool). IOR prints `IOR-<version>: MPI Coordinated Test of
/// Parallel I/O` once per run, mdtest `mdtest-<version> was launched with …`.
fn banners(text: &str) -> Vec<(usize, Tool)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            if ior::banner_version(line).is_some() {
                Some((i + 1, Tool::Ior))
            } else if mdtest::banner_version(line).is_some() {
                Some((i + 1, Tool::Mdtest))
            } else {
                None
            }
        })
        .collect()
}

/// A run that printed no results, only (perhaps) its errors.
fn empty(tool: Tool, errors: Vec<String>) -> Parsed {
    Parsed {
        tool,
        version: None,
        command: None,
        ior: Vec::new(),
        iterations: Vec::new(),
        mdtest: Vec::new(),
        errors,
    }
}

/// The value of a `key : value` header line (`Command line        : ior -w …`), when `line`'s
/// key is one of `keys`.
fn header_value<'a>(line: &'a str, keys: &[&str]) -> Option<&'a str> {
    let (key, value) = line.split_once(':')?;
    keys.contains(&key.trim()).then(|| value.trim())
}
