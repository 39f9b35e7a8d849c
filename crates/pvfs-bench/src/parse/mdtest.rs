//! mdtest's text output: the banner, the command line and every SUMMARY table.
//!
//! The tables' headings and rows across versions:
//! - 1.9: `SUMMARY: (of 2 iterations)`, rows `Directory creation:   1234.567 …` (rates only);
//! - 3.x: `SUMMARY rate: (of …)` and, with `-P` or `-Z`, `SUMMARY time: (of …)`; rows
//!   `Directory creation        :   1234.567 …`, and a `File create (stonewall)` row with `NA`s;
//! - 4.0: `SUMMARY rate: (of …)`, rows without the colon;
//! - 4.1: `SUMMARY rate (in ops/sec): (of …)`, and with `-Z` `SUMMARY time (in ms/op): (of …)`;
//!   with `--showRankStatistics` each row has per-rank Max/Min/Mean before the usual four.
//!
//! Units: every table's heading is read, and only the forms below are accepted; any other (a
//! unit this parser does not know, `SUMMARY time (in us/op)`) is refused with its line rather
//! than guessed:
//!
//! | heading                              | printed by                          | values    |
//! |--------------------------------------|-------------------------------------|-----------|
//! | `SUMMARY: (of N iterations)`         | 1.9                                 | `ops/sec` |
//! | `SUMMARY rate: (of …)`               | 3.x, 4.0                            | `ops/sec` |
//! | `SUMMARY time: (of …)`               | 3.x, 4.0 with `-Z` or `-P`          | `sec`     |
//! | `SUMMARY rate (in ops/sec): (of …)`  | 4.1 (hpc/ior#452)                   | `ops/sec` |
//! | `SUMMARY time (in ops/sec): (of …)`  | 4.1 snapshots before hpc/ior#497    | `sec`     |
//! | `SUMMARY time (in ms/op): (of …)`    | 4.1 with `-Z` or `-P` (hpc/ior#497) | `sec`     |
//!
//! A time table holds the seconds each phase took, per iteration the slowest rank's: every
//! version prints `time[i]`, which `updateResult` in `src/mdtest.c` sets to `t_end - t_start`
//! (hpc/ior master, c702a98: `summarize_results_rank0` prints `cur->time[i]` under the
//! `(in ms/op)` heading, unscaled and not divided by the items). hpc/ior#497 changed only the
//! heading's words. `mdtest_small_Z.txt` agrees: its `Tree creation` mean, 0.029, is the time
//! 21 directories take at the ~1,700 ops/sec `mdtest_paper_lustre.txt` measures on the same
//! machine (0.012 s), not a time per operation (0.6 ms). Labelling these values "ms/op" would
//! make them 1000x too small.

use super::table::{self, Header};
use super::{ParseError, header_value};
use crate::model::{MdtestSummary, Parsed, Tool};

/// The unit of a rate table's values.
pub(super) const RATE: &str = "ops/sec";
/// The unit of a time table's values: seconds one phase took.
pub(super) const TIME: &str = "sec";

/// The version in mdtest's banner, `mdtest-4.1.0+dev was launched with 2 total task(s) on 1 node(s)`.
pub(super) fn banner_version(line: &str) -> Option<&str> {
    let rest = &line[line.find("mdtest-")? + "mdtest-".len()..];
    let version = rest[..rest.find(" was launched with")?].trim();
    (!version.is_empty() && !version.contains(char::is_whitespace)).then_some(version)
}

/// Whether the line is a SUMMARY table's heading.
pub(super) fn is_summary(line: &str) -> bool {
    let t = line.trim_start();
    ["SUMMARY rate", "SUMMARY time", "SUMMARY:"].iter().any(|heading| t.starts_with(heading))
}

/// The unit of the values under a SUMMARY heading; see the module documentation for the forms.
fn unit(heading: &str, line: usize) -> Result<&'static str, ParseError> {
    let refuse = || ParseError::MdtestHeading { line, heading: heading.trim().to_owned() };
    let rest = heading.trim().strip_prefix("SUMMARY").ok_or_else(refuse)?.trim_start();
    let (kind, rest) = if let Some(rest) = rest.strip_prefix("rate") {
        (RATE, rest)
    } else if let Some(rest) = rest.strip_prefix("time") {
        (TIME, rest)
    } else {
        // 1.9: `SUMMARY: (of …)`, rates only.
        (RATE, rest)
    };
    let rest = rest.trim_start();
    // What the heading says its values are in, when it says (4.1: `(in ops/sec)`).
    let (stated, rest) = match rest.strip_prefix("(in ") {
        Some(inner) => {
            let (stated, rest) = inner.split_once(')').ok_or_else(refuse)?;
            (Some(stated.trim()), rest.trim_start())
        }
        None => (None, rest),
    };
    if !rest.starts_with(':') {
        return Err(refuse());
    }
    match (kind, stated) {
        (RATE, None | Some("ops/sec")) => Ok(RATE),
        (TIME, None | Some("ms/op" | "ops/sec")) => Ok(TIME),
        _ => Err(refuse()),
    }
}

/// The value columns of `   Operation   Max   Min   Mean   Std Dev`, or with per-rank
/// statistics `Operation per Rank: Max Min Mean per Iteration: Max Min Mean Std Dev`.
fn value_columns(line: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for token in line.split_whitespace().skip(1) {
        if token == "per" || token.ends_with(':') {
            continue;
        }
        match names.last_mut() {
            Some(last) if token == "Dev" && last == "Std" => last.push_str(" Dev"),
            _ => names.push(token.to_owned()),
        }
    }
    names
}

/// A table being read.
struct Table {
    unit: &'static str,
    header: Header,
}

/// mdtest's text output, read a line at a time. The first error stops the reading: it is the
/// answer if the output turns out to be mdtest's.
#[derive(Default)]
pub(super) struct TextParser {
    version: Option<String>,
    command: Option<String>,
    rows: Vec<MdtestSummary>,
    table: Option<Table>,
    error: Option<ParseError>,
}

impl TextParser {
    pub fn line(&mut self, line: &str, number: usize) {
        if self.error.is_none()
            && let Err(error) = self.read(line, number)
        {
            self.error = Some(error);
        }
    }

    fn read(&mut self, line: &str, number: usize) -> Result<(), ParseError> {
        let t = line.trim();
        if self.version.is_none()
            && let Some(version) = banner_version(line)
        {
            self.version = Some(version.to_owned());
            return Ok(());
        }
        if self.command.is_none()
            && let Some(command) = header_value(line, &["Command line used"])
        {
            self.command = Some(command.to_owned());
            return Ok(());
        }
        if t.starts_with("SUMMARY") {
            // Until a header line says otherwise, the four columns every version prints.
            let columns = ["Max", "Min", "Mean", "Std Dev"].map(str::to_owned).to_vec();
            let header = Header::new("mdtest SUMMARY", columns, number);
            self.table = Some(Table { unit: unit(t, number)?, header });
            return Ok(());
        }
        let Some(current) = &mut self.table else { return Ok(()) };
        let dashes = !t.is_empty() && t.split_whitespace().all(|w| w.chars().all(|c| c == '-'));
        if t.is_empty() || (t.starts_with("--") && !dashes) {
            // A blank line or `-- finished at … --` ends the table.
            self.table = None;
            return Ok(());
        }
        if dashes {
            return Ok(());
        }
        if t.starts_with("Operation") {
            current.header = Header::new("mdtest SUMMARY", value_columns(t), number);
            return Ok(());
        }
        if let Some(row) = row(t, &current.header, current.unit, number)? {
            self.rows.push(row);
        }
        Ok(())
    }

    pub fn finish(self, errors: Vec<String>) -> Result<Parsed, ParseError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let mut parsed = super::empty(Tool::Mdtest, errors);
        parsed.version = self.version;
        parsed.command = self.command;
        parsed.mdtest = self.rows;
        Ok(parsed)
    }
}

/// A table row: the operation's name (which has spaces, and in 1.9/3.x a colon after it), then
/// one value per column. `Ok(None)` for lines that are not rows (another rank's message).
fn row(
    line: &str,
    header: &Header,
    unit: &'static str,
    number: usize,
) -> Result<Option<MdtestSummary>, ParseError> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    // Values are numbers, `NA` (the stonewall row) or C's `nan`/`inf`.
    let values = tokens.iter().rev().take_while(|t| **t != "-" && table::number(t).is_ok()).count();
    let name = tokens[..tokens.len() - values].join(" ");
    let name = name.trim_end_matches(':').trim_end();
    if values == 0 || !is_operation(name) {
        return Ok(None);
    }
    let cells = tokens[tokens.len() - values..].to_vec();
    let row = header.row(cells, number)?;
    // With per-rank statistics a name appears twice; the last is the per-iteration value,
    // the one every version prints.
    let value = |name: &str| match header.names.iter().rposition(|n| n == name) {
        Some(i) => row.f64_at(i),
        None => Ok(None),
    };
    Ok(Some(MdtestSummary {
        operation: name.to_owned(),
        max: value("Max")?,
        min: value("Min")?,
        mean: value("Mean")?,
        std: value("Std Dev")?,
        unit: unit.to_owned(),
    }))
}

/// Whether `name` reads as an operation (`File creation`, `File create (stonewall)`) rather
/// than a message that happens to end in a number (`WARNING: unable to stat /mnt/x 12`).
fn is_operation(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphabetic() || matches!(c, ' ' | '(' | ')' | '-' | '_'))
}
