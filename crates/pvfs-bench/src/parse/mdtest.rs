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
//! Units: a rate table is in operations per second (`"ops/sec"`). A time table holds the
//! seconds each phase took, per iteration the slowest rank's (`"sec"`): every version prints
//! the phase's elapsed time (`time[i] = t_end - t_start` in `mdtest.c`). mdtest 4.1 heads that
//! table `(in ms/op)`, and some 4.0 snapshots `(in ops/sec)`, but hpc/ior#497 changed only the
//! heading's words, not the values; `mdtest_small_Z.txt` agrees (its phase times add up to the
//! run's wall time; as milliseconds per operation they would not).

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

/// Whether the text holds a SUMMARY table's heading.
pub(super) fn has_summary(text: &str) -> bool {
    text.lines().any(|line| {
        let t = line.trim_start();
        ["SUMMARY rate", "SUMMARY time", "SUMMARY:"].iter().any(|heading| t.starts_with(heading))
    })
}

/// The unit a SUMMARY heading announces; see the module documentation.
fn unit(heading: &str, line: usize) -> Result<&'static str, ParseError> {
    let rest = heading.trim().trim_start_matches("SUMMARY").trim_start();
    if rest.starts_with("rate") || rest.starts_with(':') {
        Ok(RATE)
    } else if rest.starts_with("time") {
        Ok(TIME)
    } else {
        Err(ParseError::MdtestHeading { line, heading: heading.trim().to_owned() })
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

/// mdtest's output.
pub(super) fn parse_text(text: &str, errors: Vec<String>) -> Result<Parsed, ParseError> {
    let mut parsed = super::empty(Tool::Mdtest, errors);
    let mut table: Option<Table> = None;
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        let t = line.trim();
        if parsed.version.is_none()
            && let Some(version) = banner_version(line)
        {
            parsed.version = Some(version.to_owned());
            continue;
        }
        if parsed.command.is_none()
            && let Some(command) = header_value(line, &["Command line used"])
        {
            parsed.command = Some(command.to_owned());
            continue;
        }
        if t.starts_with("SUMMARY") {
            // Until a header line says otherwise, the four columns every version prints.
            let columns = ["Max", "Min", "Mean", "Std Dev"].map(str::to_owned).to_vec();
            let header = Header::new("mdtest SUMMARY", columns, number);
            table = Some(Table { unit: unit(t, number)?, header });
            continue;
        }
        let Some(current) = &mut table else { continue };
        let dashes = !t.is_empty() && t.split_whitespace().all(|w| w.chars().all(|c| c == '-'));
        if t.is_empty() || (t.starts_with("--") && !dashes) {
            // A blank line or `-- finished at … --` ends the table.
            table = None;
            continue;
        }
        if dashes {
            continue;
        }
        if t.starts_with("Operation") {
            current.header = Header::new("mdtest SUMMARY", value_columns(t), number);
            continue;
        }
        if let Some(row) = row(t, &current.header, current.unit, number)? {
            parsed.mdtest.push(row);
        }
    }
    Ok(parsed)
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
