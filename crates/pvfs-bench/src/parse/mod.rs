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
mod fuzz;
#[cfg(test)]
mod tests;

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::model::{Parsed, Tool};

/// Why an output could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The message names its cause, so the cause is a plain field, not a `source()`: printed
    /// with its chain (`{:#}`, as `main` prints errors) it would be said twice.
    #[error("cannot read {path}: {cause}")]
    Read { path: PathBuf, cause: std::io::Error },
    /// Not a regular file, or larger than [`OUTPUT_FILE`]: refused unread.
    #[error(transparent)]
    File(pvfs_host::local_file::LocalFileError),
    /// Reading from a stream failed ([`parse_file`] names the file instead).
    #[error("reading line {line}: {cause}")]
    Io { line: usize, cause: std::io::Error },
    /// Any other error, in a file [`parse_file`] read (not chained either, for the same reason).
    #[error("{path}: {error}")]
    InFile { path: PathBuf, error: Box<ParseError> },
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
    /// A SUMMARY heading in none of the forms mdtest prints (see the `mdtest` module): its
    /// values' unit would be a guess.
    #[error(
        "line {line}: unknown mdtest heading {heading:?}; expected 'SUMMARY rate…' or 'SUMMARY \
         time…', with no unit, '(in ops/sec)' or (time) '(in ms/op)'"
    )]
    MdtestHeading { line: usize, heading: String },
    /// A column (or IOR's `Max Write:` line) in a unit IOR does not print there.
    #[error(
        "line {line}: {table} '{column}' is in a unit this parser does not know (expected {expected}); \
         refusing to guess how to read it"
    )]
    Unit { table: &'static str, line: usize, column: String, expected: String },
    /// A line longer than [`MAX_LINE`]: no IOR or mdtest output has one.
    #[error("line {line} is longer than {MAX_LINE} bytes: not an IOR or mdtest output")]
    LineTooLong { line: usize },
}

/// The longest line read (16 MiB): IOR's and mdtest's lines are short (its JSON is printed
/// across lines), so a longer one is not theirs, and it is refused before it fills memory.
pub const MAX_LINE: u64 = 16 << 20;

/// The largest output [`parse_file`] reads (and `bench import` copies). The longest real ones,
/// verbose runs of thousands of tasks, are tens of MiB: IOR prints a line or two per task and
/// iteration. Reading is a line at a time, so the cap bounds the time a wrong file takes, and
/// the copy an import keeps, not memory.
pub const OUTPUT_FILE: pvfs_host::local_file::Cap =
    pvfs_host::local_file::Cap { what: "an IOR or mdtest output", bytes: 1 << 30 };

/// Reads any IOR or mdtest output; see the module documentation for what is recognised.
pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    parse_reader(text.as_bytes())
}

/// Reads an output from `reader`, a line at a time; see the module documentation for what is
/// recognised. I/O errors are [`ParseError::Io`].
pub fn parse_reader(reader: impl BufRead) -> Result<Parsed, ParseError> {
    scan(reader)?.finish()
}

/// Reads a file, then [`parse`]s it, a line at a time (an output can be gigabytes). Outputs are
/// read as UTF-8 with invalid bytes replaced: interleaved writes from several processes can cut
/// a multi-byte character in two.
pub fn parse_file(path: &Path) -> Result<Parsed, ParseError> {
    let read = |cause| ParseError::Read { path: path.to_owned(), cause };
    let file = pvfs_host::local_file::open(path, OUTPUT_FILE).map_err(|err| match err.into_io() {
        Ok(cause) => read(cause),
        Err(refused) => ParseError::File(refused),
    })?;
    // No further than the size checked at the open, should the file grow while it is read.
    match parse_reader(std::io::BufReader::with_capacity(1 << 16, file.take(OUTPUT_FILE.bytes))) {
        Ok(parsed) => Ok(parsed),
        Err(ParseError::Io { cause, .. }) => Err(read(cause)),
        Err(error) => Err(ParseError::InFile { path: path.to_owned(), error: Box::new(error) }),
    }
}

/// Every line of `reader` through every reader of a format at once: which format the output is
/// in is only known at its end (JSON anywhere wins; a second banner refuses it), so each line
/// is read once by each, and nothing is read twice. Work is linear in the input: each line is
/// looked at by a fixed set of readers, each of which sees only that line (and the JSON
/// document, from its first line on, is the one part kept whole).
fn scan(mut reader: impl BufRead) -> Result<Scan, ParseError> {
    let mut scan = Scan::default();
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let number = scan.lines + 1;
        // One byte more than the limit, to tell a line of exactly MAX_LINE from a longer one.
        let read = (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut buffer)
            .map_err(|cause| ParseError::Io { line: number, cause })?;
        if read == 0 {
            break;
        }
        let mut bytes = buffer.as_slice();
        let ended = match bytes.strip_suffix(b"\n") {
            Some(line) => {
                bytes = line.strip_suffix(b"\r").unwrap_or(line);
                true
            }
            None if read as u64 > MAX_LINE => return Err(ParseError::LineTooLong { line: number }),
            None => false,
        };
        let line = String::from_utf8_lossy(bytes);
        let line = if number == 1 { line.strip_prefix('\u{feff}').unwrap_or(&line) } else { &line };
        scan.line(line, ended);
    }
    Ok(scan)
}

/// What [`scan`] gathered.
#[derive(Default)]
struct Scan {
    /// Lines read so far: also the work done, which tests bound (see `tests::linear`).
    lines: usize,
    errors: tool_errors::Errors,
    signs: tool_errors::Signs,
    /// Each run's banner: (1-based line, tool). IOR prints `IOR-<version>: MPI Coordinated
    /// Test of Parallel I/O` once per run, mdtest `mdtest-<version> was launched with …`.
    banners: Vec<(usize, Tool)>,
    json: Option<ior::JsonText>,
    ior: ior::TextParser,
    csv: ior::CsvParser,
    mdtest: mdtest::TextParser,
    mdtest_summary: bool,
    summary_file: Option<String>,
}

impl Scan {
    /// `ended`: whether the line ended with a newline (the last may not).
    fn line(&mut self, line: &str, ended: bool) {
        self.lines += 1;
        let number = self.lines;
        self.errors.line(line);
        self.signs.line(line);
        match &mut self.json {
            Some(json) => json.line(line, ended),
            None => self.json = ior::JsonText::start(line, number, ended),
        }
        if ior::banner_version(line).is_some() {
            self.banners.push((number, Tool::Ior));
        } else if mdtest::banner_version(line).is_some() {
            self.banners.push((number, Tool::Mdtest));
        }
        self.ior.line(line, number);
        self.csv.line(line, number);
        self.mdtest.line(line, number);
        self.mdtest_summary |= mdtest::is_summary(line);
        if self.summary_file.is_none() {
            self.summary_file = ior::summary_file_notice(line);
        }
    }

    fn finish(mut self) -> Result<Parsed, ParseError> {
        let errors = self.errors.into_vec();
        // IOR's JSON has no banner, but the text before it may hold one (some IOR versions
        // print theirs in every format), so JSON is looked for first.
        if let Some(json) = self.json.take()
            && let Some(parsed) = json.parse(&errors)?
        {
            return Ok(parsed);
        }
        if self.banners.len() > 1 {
            let lines = self.banners.iter().map(|(line, _)| line.to_string()).collect::<Vec<_>>().join(", ");
            return Err(ParseError::SeveralRuns { count: self.banners.len(), lines });
        }
        match self.banners.first().map(|(_, tool)| *tool) {
            Some(Tool::Ior) if self.csv.seen_header && !self.ior.seen_table => {
                return self.csv.finish(errors);
            }
            Some(Tool::Ior) => {
                let parsed = self.ior.finish(errors)?;
                // With -O summaryFile the banner stays on stdout and the results go to the file.
                if parsed.ior.is_empty()
                    && parsed.errors.is_empty()
                    && let Some(path) = self.summary_file
                {
                    return Err(ParseError::SummaryElsewhere { path });
                }
                return Ok(parsed);
            }
            Some(Tool::Mdtest) => return self.mdtest.finish(errors),
            None => {}
        }

        // No banner: a fragment of a log (a summary table on its own), a CSV summary, or a run
        // that failed before printing its banner.
        if self.ior.seen_table {
            return self.ior.finish(errors);
        }
        if self.mdtest_summary {
            return self.mdtest.finish(errors);
        }
        if self.csv.seen_header {
            return self.csv.finish(errors);
        }
        if let Some(tool) = self.signs.tool(&errors) {
            return Ok(empty(tool, errors));
        }
        if let Some(path) = self.summary_file {
            return Err(ParseError::SummaryElsewhere { path });
        }
        Err(ParseError::Unrecognized)
    }
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
