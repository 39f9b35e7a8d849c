//! IOR outputs: text (the default summary format), JSON and CSV.
//!
//! IOR versions differ in which columns they print (3.2 has no `IOPS` or `Latency(s)`, 3.3 added
//! the `Stonewall` columns, 3.0/3.1 said `Command line used:`), and in how JSON nests its
//! results (3.2: one array per repetition; 4.x: one flat array). Tables are read by column name
//! and JSON by key, so a column or key a version lacks reads as `None`.
//!
//! CSV (`-O summaryFormat=CSV`) has only per-iteration rows. Its summary rows are computed here
//! the way IOR computes its own (`PrintLongSummaryOneOperation` in `ior-output.c`), from the
//! same per-iteration values, and only where the CSV states them:
//! - `bw_*_mib`: max, min, mean and the population standard deviation (IOR divides the variance
//!   by the number of repetitions, not one less) of the iterations' `bw(MiB/s)`, which IOR
//!   computes as it does for the summary (bytes moved / total time);
//! - `mean_time_s`: the mean of `total(s)`, which is what IOR's `Mean(s)` averages;
//! - `iterations`: how many rows the operation has; `tasks`: `numTasks` when every row agrees;
//!   `block_bytes`/`transfer_bytes`: `block(KiB)`/`xfer(KiB)` × 1024 when every row agrees and
//!   that is a whole number of bytes.
//!
//! The rest stay `None`: IOR's `OPs` statistics are of bytes / transfer size / total time, not
//! of the CSV's `IOPS` column (timed over the transfers alone), and CSV does not say whether the
//! run used a file per process. CSV prints four decimals, so the computed values can differ
//! from IOR's own in the last places.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::table::{self, Header, Row};
use super::{ParseError, header_value};
use crate::model::{IorIteration, IorSummary, Parsed, Tool};

const TITLE: &str = ": MPI Coordinated Test of Parallel I/O";

/// The version in IOR's banner, `IOR-4.1.0+dev: MPI Coordinated Test of Parallel I/O`.
pub(super) fn banner_version(line: &str) -> Option<&str> {
    let rest = &line[line.find("IOR-")? + "IOR-".len()..];
    let version = rest[..rest.find(TITLE)?].trim();
    (!version.is_empty() && !version.contains(char::is_whitespace)).then_some(version)
}

/// Where IOR wrote its results, when its stdout says only that (`-O summaryFile=…`).
pub(super) fn summary_file_notice(line: &str) -> Option<String> {
    line.trim().strip_prefix("Writing output to ").map(|p| p.trim().to_owned())
}

/// The units IOR prints in its tables' column names (`bw(MiB/s)`, `Max(MiB)`, `Mean(s)`; see
/// `PrintHeader`/`PrintLongSummaryHeader` in `src/ior-output.c`), per table. A column with a
/// unit not listed is refused: its values would be read as if they were in IOR's usual unit.
const RESULTS_UNITS: &[&str] = &["MiB/s", "s", "KiB"];
const SUMMARY_UNITS: &[&str] = &["MiB", "OPs", "s"];

/// The unit in a column name, `bw(MiB/s)` → `MiB/s`; `None` for a name without one.
fn column_unit(name: &str) -> Option<&str> {
    let open = name.find('(')?;
    name[open + 1..].strip_suffix(')')
}

/// Refuses a header whose columns name a unit outside `known`.
fn check_units(header: Header, known: &[&str]) -> Result<Header, ParseError> {
    for name in &header.names {
        if let Some(unit) = column_unit(name)
            && !known.contains(&unit)
        {
            return Err(ParseError::Unit {
                table: header.table,
                line: header.line,
                column: name.clone(),
                expected: known.join(", "),
            });
        }
    }
    Ok(header)
}

/// `Max Write: 760.83 MiB/sec (797.79 MB/sec)`, which IOR prints after its summary
/// (`PrintShortSummary`). Not read (the summary table has the same maximum), but its units are
/// checked like a table's: `Ok(false)` for any other line.
fn short_summary(line: &str, number: usize) -> Result<bool, ParseError> {
    let t = line.trim();
    let Some(rest) = t.strip_prefix("Max Write:").or_else(|| t.strip_prefix("Max Read:")) else {
        return Ok(false);
    };
    let tokens: Vec<&str> = rest.split_whitespace().collect();
    let fits = matches!(tokens.as_slice(), [a, "MiB/sec", b, "MB/sec)"]
        if table::number(a).is_ok() && b.strip_prefix('(').is_some_and(|b| table::number(b).is_ok()));
    if fits {
        Ok(true)
    } else {
        Err(ParseError::Unit {
            table: "IOR short summary",
            line: number,
            column: t.to_owned(),
            expected: "'<n> MiB/sec (<n> MB/sec)'".to_owned(),
        })
    }
}

/// `access    bw(MiB/s)  IOPS  Latency(s)  block(KiB) …  iter`
///
/// The header is known by its first column and a bandwidth column of any unit, so that one in
/// another unit is refused rather than passed over.
fn results_header(line: &str, number: usize) -> Option<Header> {
    // Most lines are not headers: look at the first word before collecting any.
    if line.split_whitespace().next() != Some("access") {
        return None;
    }
    let names: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    names.iter().any(|n| n.starts_with("bw(")).then(|| Header::new("IOR Results", names, number))
}

/// `Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs) … StdDev    Mean(s) …`
///
/// Both standard deviations are headed `StdDev`; they are named here by the statistics they
/// follow (`StdDev(MiB)` after `Mean(MiB)`, `StdDev(OPs)` after `Mean(OPs)`). IOR 2.x wrote
/// names apart (`Max (MiB)`, `Std Dev`); they are joined.
fn summary_header(line: &str, number: usize) -> Option<Header> {
    if line.split_whitespace().next() != Some("Operation") {
        return None;
    }
    let mut names: Vec<String> = Vec::new();
    for token in line.split_whitespace() {
        match names.last_mut() {
            Some(last) if token.starts_with('(') || (token == "Dev" && last == "Std") => last.push_str(token),
            _ => names.push(token.to_owned()),
        }
    }
    if !names.iter().any(|n| n.starts_with("Max(")) {
        return None;
    }
    // IOR 2.x with -v heads its trailing columns `Op grep #Tasks tPN … aggsize` but prints
    // numTasks, tasksPerNode, …, aggFileSizeForBW, TestNum, api: named here as printed, so
    // that no value is read from its neighbour's column.
    if let Some(op) = names.windows(2).position(|w| w[0] == "Op" && w[1] == "grep") {
        names.truncate(op);
        names.extend(
            ["#Tasks", "tPN", "reps", "fPP", "reord", "reordoff", "reordrand", "seed", "segcnt", "blksiz"]
                .into_iter()
                .chain(["xsize", "aggsize", "Test#", "API"])
                .map(str::to_owned),
        );
    }
    let mut seen = 0;
    for i in 0..names.len() {
        if names[i] != "StdDev" {
            continue;
        }
        // The nearest column before it with a unit says whose deviation it is.
        let unit = names[..i].iter().rev().find_map(|n| {
            if n.ends_with("(MiB)") {
                Some("MiB")
            } else if n.ends_with("(OPs)") {
                Some("OPs")
            } else {
                None
            }
        });
        let unit = unit.unwrap_or(if seen == 0 { "MiB" } else { "OPs" });
        names[i] = format!("StdDev({unit})");
        seen += 1;
    }
    Some(Header::new("IOR summary", names, number))
}

/// `access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),numTasks,iter`
fn csv_header(line: &str, number: usize) -> Option<Header> {
    let line = line.trim();
    (line.starts_with("access,") && line.contains(",bw("))
        .then(|| Header::new("IOR CSV", line.split(',').map(|n| n.trim().to_owned()).collect(), number))
}

/// Which of IOR's text tables the lines are in.
#[derive(Default)]
enum Table {
    #[default]
    None,
    Results(Header),
    Summary(Header),
}

/// IOR's text output, read a line at a time. The first error stops the reading: it is the
/// answer if the output turns out to be IOR's text.
#[derive(Default)]
pub(super) struct TextParser {
    parsed: Option<Parsed>,
    table: Table,
    /// Whether a Results or summary header was seen (a table, or a fragment of one).
    pub seen_table: bool,
    numbering: Numbering,
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
        let parsed = self.parsed.get_or_insert_with(|| empty(Vec::new()));
        if parsed.version.is_none()
            && let Some(version) = banner_version(line)
        {
            parsed.version = Some(version.to_owned());
            return Ok(());
        }
        if parsed.command.is_none()
            && let Some(command) = header_value(line, &["Command line", "Command line used"])
        {
            parsed.command = Some(command.to_owned());
            return Ok(());
        }
        if let Some(header) = results_header(line, number) {
            self.seen_table = true;
            self.table = Table::Results(check_units(header, RESULTS_UNITS)?);
            return Ok(());
        }
        if let Some(header) = summary_header(line, number) {
            self.seen_table = true;
            self.table = Table::Summary(check_units(header, SUMMARY_UNITS)?);
            return Ok(());
        }
        if short_summary(line, number)? {
            return Ok(());
        }
        if matches!(self.table, Table::None) {
            return Ok(());
        }
        // Anything else inside a table (a warning from another rank) is not a row; rows start
        // with their operation.
        let cells: Vec<&str> = line.split_whitespace().collect();
        match (&self.table, cells.first().copied()) {
            (Table::Results(header), Some("write" | "read" | "remove")) => {
                let row = header.row(cells, number)?;
                let iteration = iteration(&row, &mut self.numbering)?;
                parsed.iterations.push(iteration);
            }
            (Table::Summary(header), Some("write" | "read")) => {
                let mut cells = cells;
                // IOR 2.x ends each summary row with the word EXCEL (a marker for spreadsheets).
                if cells.last() == Some(&"EXCEL") {
                    cells.pop();
                }
                let row = header.row(cells, number)?;
                parsed.ior.push(summary(&row)?);
            }
            _ => {}
        }
        Ok(())
    }

    pub fn finish(self, errors: Vec<String>) -> Result<Parsed, ParseError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let mut parsed = self.parsed.unwrap_or_else(|| empty(Vec::new()));
        parsed.errors = errors;
        Ok(parsed)
    }
}

/// The iteration of a row that does not print its own: its place among the rows of the same
/// operation so far, counted as they come (no rescan of the rows before it).
#[derive(Default)]
struct Numbering {
    seen: std::collections::HashMap<String, u64>,
}

impl Numbering {
    /// Counts a row of `operation`; returns how many came before it.
    fn next(&mut self, operation: &str) -> u64 {
        let count = match self.seen.get_mut(operation) {
            Some(count) => count,
            None => self.seen.entry(operation.to_owned()).or_default(),
        };
        let before = *count;
        *count += 1;
        before
    }
}

/// A Results row (text or CSV; both use the same column names, but for `Latency`).
fn iteration(row: &Row<'_, '_>, numbering: &mut Numbering) -> Result<IorIteration, ParseError> {
    let operation = row.text(&["access"]).unwrap_or_default().to_owned();
    // Every version prints `iter`; should one not, the rows of an operation come in order.
    let place = numbering.next(&operation);
    let iteration = row.u64(&["iter"])?.unwrap_or(place);
    Ok(IorIteration {
        operation,
        iteration,
        bw_mib: row.f64(&["bw(MiB/s)"])?,
        iops: row.f64(&["IOPS"])?,
        latency_s: row.f64(&["Latency(s)", "Latency"])?,
        block_kib: row.f64(&["block(KiB)"])?,
        xfer_kib: row.f64(&["xfer(KiB)"])?,
        open_s: row.f64(&["open(s)"])?,
        wrrd_s: row.f64(&["wr/rd(s)"])?,
        close_s: row.f64(&["close(s)"])?,
        total_s: row.f64(&["total(s)"])?,
    })
}

/// A `Summary of all tests` row.
fn summary(row: &Row<'_, '_>) -> Result<IorSummary, ParseError> {
    Ok(IorSummary {
        operation: row.text(&["Operation"]).unwrap_or_default().to_owned(),
        bw_max_mib: row.f64(&["Max(MiB)"])?,
        bw_min_mib: row.f64(&["Min(MiB)"])?,
        bw_mean_mib: row.f64(&["Mean(MiB)"])?,
        bw_std_mib: row.f64(&["StdDev(MiB)"])?,
        ops_max: row.f64(&["Max(OPs)"])?,
        ops_min: row.f64(&["Min(OPs)"])?,
        ops_mean: row.f64(&["Mean(OPs)"])?,
        ops_std: row.f64(&["StdDev(OPs)"])?,
        mean_time_s: row.f64(&["Mean(s)"])?,
        tasks: row.u64(&["#Tasks"])?,
        iterations: row.u64(&["reps"])?,
        block_bytes: row.u64(&["blksiz"])?,
        transfer_bytes: row.u64(&["xsize"])?,
        file_per_proc: row.flag(&["fPP"])?,
    })
}

/// IOR's CSV output, read a line at a time; see the module documentation for its summary rows.
#[derive(Default)]
pub(super) struct CsvParser {
    parsed: Option<Parsed>,
    tasks: Vec<Option<u64>>,
    header: Option<Header>,
    /// Whether a CSV header was seen.
    pub seen_header: bool,
    numbering: Numbering,
    error: Option<ParseError>,
}

impl CsvParser {
    pub fn line(&mut self, line: &str, number: usize) {
        if self.error.is_none()
            && let Err(error) = self.read(line, number)
        {
            self.error = Some(error);
        }
    }

    fn read(&mut self, line: &str, number: usize) -> Result<(), ParseError> {
        let parsed = self.parsed.get_or_insert_with(|| empty(Vec::new()));
        // No IOR version prints its banner with CSV so far; should one, it is read.
        if parsed.version.is_none()
            && let Some(version) = banner_version(line)
        {
            parsed.version = Some(version.to_owned());
            return Ok(());
        }
        if parsed.command.is_none()
            && let Some(command) = header_value(line, &["Command line", "Command line used"])
        {
            parsed.command = Some(command.to_owned());
            return Ok(());
        }
        if let Some(found) = csv_header(line, number) {
            self.seen_header = true;
            self.header = Some(check_units(found, RESULTS_UNITS)?);
            return Ok(());
        }
        let Some(header) = &self.header else { return Ok(()) };
        let cells: Vec<&str> = line.trim().split(',').map(str::trim).collect();
        if !matches!(cells.first().copied(), Some("write" | "read" | "remove")) {
            return Ok(());
        }
        let row = header.row(cells, number)?;
        self.tasks.push(row.u64(&["numTasks"])?);
        let iteration = iteration(&row, &mut self.numbering)?;
        parsed.iterations.push(iteration);
        Ok(())
    }

    pub fn finish(self, errors: Vec<String>) -> Result<Parsed, ParseError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let mut parsed = self.parsed.unwrap_or_else(|| empty(Vec::new()));
        parsed.errors = errors;
        parsed.ior = csv_summary(&parsed.iterations, &self.tasks);
        Ok(parsed)
    }
}

/// The summary IOR would print for these iterations (`tasks[i]` is row i's `numTasks`).
fn csv_summary(iterations: &[IorIteration], tasks: &[Option<u64>]) -> Vec<IorSummary> {
    let mut operations: Vec<&str> = Vec::new();
    for it in iterations {
        if matches!(it.operation.as_str(), "write" | "read") && !operations.contains(&it.operation.as_str()) {
            operations.push(&it.operation);
        }
    }
    operations
        .into_iter()
        .map(|operation| {
            let rows: Vec<usize> =
                (0..iterations.len()).filter(|&i| iterations[i].operation == operation).collect();
            let all = |f: fn(&IorIteration) -> Option<f64>| -> Option<Vec<f64>> {
                rows.iter().map(|&i| f(&iterations[i])).collect()
            };
            let bw = all(|it| it.bw_mib).map(|values| Stats::of(&values));
            IorSummary {
                operation: operation.to_owned(),
                bw_max_mib: bw.as_ref().map(|s| s.max),
                bw_min_mib: bw.as_ref().map(|s| s.min),
                bw_mean_mib: bw.as_ref().map(|s| s.mean),
                bw_std_mib: bw.as_ref().map(|s| s.std),
                ops_max: None,
                ops_min: None,
                ops_mean: None,
                ops_std: None,
                mean_time_s: all(|it| it.total_s).map(|values| Stats::of(&values).mean),
                tasks: same(rows.iter().map(|&i| tasks.get(i).copied().flatten())),
                iterations: Some(rows.len() as u64),
                block_bytes: same(rows.iter().map(|&i| iterations[i].block_kib)).and_then(kib_to_bytes),
                transfer_bytes: same(rows.iter().map(|&i| iterations[i].xfer_kib)).and_then(kib_to_bytes),
                file_per_proc: None,
            }
        })
        .collect()
}

/// IOR's statistics over repetitions (`bw_ops_values` in `ior-output.c`).
struct Stats {
    max: f64,
    min: f64,
    mean: f64,
    /// Population standard deviation: IOR divides by the number of repetitions.
    std: f64,
}

impl Stats {
    /// `values` is never empty: an operation has at least the row that named it.
    fn of(values: &[f64]) -> Stats {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let variance = values.iter().map(|v| (mean - v).powi(2)).sum::<f64>() / n;
        Stats {
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            mean,
            std: variance.sqrt(),
        }
    }
}

/// The value every item has, if they all have the same one.
fn same<T: PartialEq + Copy>(mut items: impl Iterator<Item = Option<T>>) -> Option<T> {
    let first = items.next()??;
    items.all(|item| item == Some(first)).then_some(first)
}

/// KiB as IOR printed them (4 decimals in CSV) to bytes, when that is a whole number of bytes.
fn kib_to_bytes(kib: f64) -> Option<u64> {
    let bytes = kib * 1024.0;
    (bytes >= 0.0 && bytes.fract() == 0.0 && bytes <= u64::MAX as f64).then_some(bytes as u64)
}

/// The text from the first line that starts with `{` (IOR's JSON document, perhaps, after text
/// IOR or MPI printed first) to the end, gathered a line at a time: the only part of an output
/// that is held whole, because a JSON document is read whole.
pub(super) struct JsonText {
    /// Lines before the document's first.
    before: usize,
    text: String,
}

impl JsonText {
    /// Starts the document at `line` (1-based `number`) when it opens one.
    /// `ended`: whether the line ended with a newline, so that the document's positions
    /// (a parse error's line and column) are the file's.
    pub fn start(line: &str, number: usize, ended: bool) -> Option<JsonText> {
        if !line.trim_start().starts_with('{') {
            return None;
        }
        let mut json = JsonText { before: number - 1, text: String::new() };
        json.line(line, ended);
        Some(json)
    }

    pub fn line(&mut self, line: &str, ended: bool) {
        self.text.push_str(line);
        if ended {
            self.text.push('\n');
        }
    }

    /// The output IOR's JSON document holds; `Ok(None)` when the text is not one. The text is
    /// held once: each object is read one level at a time, its values left as text
    /// (`RawValue`) until read, so the document is never also built as a tree of values.
    pub fn parse(self, errors: &[String]) -> Result<Option<Parsed>, ParseError> {
        let candidate = self.text.as_str();
        // Only the first value is read, so whatever follows it (MPI's messages) does not matter.
        let first = serde_json::Deserializer::from_str(candidate).into_iter::<&RawValue>().next();
        let error = match first {
            Some(Ok(document)) => return parse_json(document, errors),
            Some(Err(error)) => error,
            None => return Ok(None),
        };
        // Lines another process printed into the document (warnings from other ranks, MPI's
        // notices) make it invalid; IOR's own JSON lines never start with a letter.
        let cleaned = without_foreign_lines(candidate);
        if let Some(Ok(document)) =
            serde_json::Deserializer::from_str(&cleaned).into_iter::<&RawValue>().next()
            && let Some(parsed) = parse_json(document, errors)?
        {
            return Ok(Some(parsed));
        }
        if !["\"tests\"", "\"summary\"", "\"Command line\""].iter().any(|key| candidate.contains(key)) {
            return Ok(None);
        }
        let message = error.to_string();
        let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m).to_owned();
        // serde_json puts an error at the end of the text after its final newline, on a line
        // that does not exist (column 0): it is named as the end of the last line instead.
        let (line, column) = match (error.line(), error.column()) {
            (line, 0) if line > 1 => {
                let last = candidate.lines().nth(line - 2).unwrap_or_default();
                (line - 1, last.chars().count() + 1)
            }
            (line, column) => (line, column.max(1)),
        };
        Err(ParseError::Json { line: self.before + line, column, message })
    }
}

/// One level of a JSON object: its values as the text they are, read when needed.
type Object<'a> = BTreeMap<String, &'a RawValue>;

/// A piece of the document, read whole (a Results entry, the summary: small).
fn value(raw: &RawValue, at: &str) -> Result<Value, ParseError> {
    serde_json::from_str(raw.get()).map_err(|e| malformed(at, &e))
}

/// An array's items, each left as text; `null` or nothing is none.
fn raw_array<'a>(raw: Option<&'a RawValue>, at: &str) -> Result<Vec<&'a RawValue>, ParseError> {
    let Some(raw) = raw else { return Ok(Vec::new()) };
    if raw.get().trim_start().starts_with('[') {
        return serde_json::from_str(raw.get()).map_err(|e| malformed(at, &e));
    }
    match value(raw, at)? {
        Value::Null => Ok(Vec::new()),
        other => Err(json_error(at, "an array", &other)),
    }
}

/// An error reading a piece again that already parsed as part of the whole (so, not expected).
fn malformed(at: &str, error: &serde_json::Error) -> ParseError {
    ParseError::JsonValue { at: at.to_owned(), expected: "valid JSON", found: error.to_string() }
}

/// `text` without the lines that cannot be part of IOR's JSON: those starting with a letter
/// (`WARNING: …`, `POSIX couldn't call statvfs`), MPI's rules (`-----`) and its
/// `[host:pid] …` notices.
fn without_foreign_lines(text: &str) -> String {
    text.lines()
        .filter(|line| {
            let t = line.trim_start();
            let mpi_notice =
                t.strip_prefix('[').and_then(|rest| rest.split_once(']')).is_some_and(|(inside, _)| {
                    inside.contains(':') && !inside.contains(|c: char| c.is_whitespace() || c == '"')
                });
            !(t.starts_with(|c: char| c.is_ascii_alphabetic()) || t.starts_with("--") || mpi_notice)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// IOR's JSON document: `Ok(None)` when it is not an object with `tests` or `summary`.
fn parse_json(document: &RawValue, errors: &[String]) -> Result<Option<Parsed>, ParseError> {
    let Ok(root) = serde_json::from_str::<Object<'_>>(document.get()) else { return Ok(None) };
    if !root.contains_key("tests") && !root.contains_key("summary") {
        return Ok(None);
    }
    let mut parsed = empty(errors.to_vec());
    let text = |key: &str| root.get(key).and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
    parsed.version = text("Version");
    parsed.command = text("Command line");

    for (t, test) in raw_array(root.get("tests").copied(), "tests")?.into_iter().enumerate() {
        // A test that is not an object has no results.
        let Ok(test) = serde_json::from_str::<Object<'_>>(test.get()) else { continue };
        let Some(results) = test.get("Results").copied() else { continue };
        let at = format!("tests[{t}].Results");
        let mut numbering = Numbering::default();
        for (r, entry) in raw_array(Some(results), &at)?.into_iter().enumerate() {
            match value(entry, &at)? {
                // IOR 3.2 opens one array per repetition.
                Value::Array(inner) => {
                    for (k, entry) in inner.iter().enumerate() {
                        let at = format!("{at}[{r}][{k}]");
                        let it = json_iteration(entry, &at, Some(r as u64), &mut numbering)?;
                        parsed.iterations.push(it);
                    }
                }
                entry => {
                    let at = format!("{at}[{r}]");
                    let it = json_iteration(&entry, &at, None, &mut numbering)?;
                    parsed.iterations.push(it);
                }
            }
        }
    }

    let summary = match root.get("summary") {
        Some(raw) => value(raw, "summary")?,
        None => Value::Null,
    };
    for (s, row) in array(Some(&summary), "summary")?.iter().enumerate() {
        let at = format!("summary[{s}]");
        let row = object(row, &at)?;
        let get = Getter { row, at: &at };
        parsed.ior.push(IorSummary {
            operation: get.operation("operation")?,
            bw_max_mib: get.f64("bwMaxMIB")?,
            bw_min_mib: get.f64("bwMinMIB")?,
            bw_mean_mib: get.f64("bwMeanMIB")?,
            bw_std_mib: get.f64("bwStdMIB")?,
            ops_max: get.f64("OPsMax")?,
            ops_min: get.f64("OPsMin")?,
            ops_mean: get.f64("OPsMean")?,
            ops_std: get.f64("OPsSD")?,
            mean_time_s: get.f64("MeanTime")?,
            tasks: get.u64("numTasks")?,
            iterations: get.u64("repetitions")?,
            block_bytes: get.u64("blockSize")?,
            transfer_bytes: get.u64("transferSize")?,
            file_per_proc: get.u64("filePerProc")?.map(|n| n != 0),
        });
    }
    Ok(Some(parsed))
}

/// One `Results[]` entry. Its iteration is its `iter` key where IOR prints one, else the
/// repetition array it sits in (3.2), else its place among the test's entries of the same
/// access (4.x prints each repetition's entries in order).
fn json_iteration(
    entry: &Value,
    at: &str,
    repetition: Option<u64>,
    numbering: &mut Numbering,
) -> Result<IorIteration, ParseError> {
    let get = Getter { row: object(entry, at)?, at };
    let operation = get.operation("access")?;
    let place = numbering.next(&operation);
    let iteration = match (get.u64("iter")?, repetition) {
        (Some(n), _) | (None, Some(n)) => n,
        (None, None) => place,
    };
    Ok(IorIteration {
        operation,
        iteration,
        bw_mib: get.f64("bwMiB")?,
        iops: get.f64("iops")?,
        latency_s: get.f64("latency")?,
        block_kib: get.f64("blockKiB")?,
        xfer_kib: get.f64("xferKiB")?,
        open_s: get.f64("openTime")?,
        wrrd_s: get.f64("wrRdTime")?,
        close_s: get.f64("closeTime")?,
        total_s: get.f64("totalTime")?,
    })
}

fn array<'v>(value: Option<&'v Value>, at: &str) -> Result<&'v [Value], ParseError> {
    match value {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(json_error(at, "an array", other)),
    }
}

fn object<'v>(value: &'v Value, at: &str) -> Result<&'v Map<String, Value>, ParseError> {
    value.as_object().ok_or_else(|| json_error(at, "an object", value))
}

fn json_error(at: &str, expected: &'static str, found: &Value) -> ParseError {
    let mut found = found.to_string();
    if found.len() > 60 {
        let cut = (0..=60).rev().find(|&i| found.is_char_boundary(i)).unwrap_or(0);
        found.truncate(cut);
        found.push('…');
    }
    ParseError::JsonValue { at: at.to_owned(), expected, found }
}

/// Typed reads of one JSON object's keys. IOR prints numbers as numbers, but some values as
/// strings (`"GPUDirect": "0"`), so numeric strings are numbers too, and `"NA"` none.
struct Getter<'v, 'a> {
    row: &'v Map<String, Value>,
    at: &'a str,
}

impl Getter<'_, '_> {
    fn operation(&self, key: &str) -> Result<String, ParseError> {
        match self.row.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(json_error(&format!("{}.{key}", self.at), "a string", other)),
            None => Err(json_error(&format!("{}.{key}", self.at), "a string", &Value::Null)),
        }
    }

    fn f64(&self, key: &str) -> Result<Option<f64>, ParseError> {
        match self.row.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(Value::String(s)) => table::number(s).map_err(|()| {
                json_error(&format!("{}.{key}", self.at), "a number", &Value::String(s.clone()))
            }),
            Some(other) => Err(json_error(&format!("{}.{key}", self.at), "a number", other)),
        }
    }

    fn u64(&self, key: &str) -> Result<Option<u64>, ParseError> {
        let bad = |v: &Value| json_error(&format!("{}.{key}", self.at), "a whole number", v);
        match self.row.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v @ Value::Number(n)) => match n.as_u64() {
                Some(n) => Ok(Some(n)),
                None => table::whole(&n.to_string()).map_err(|()| bad(v)),
            },
            Some(v @ Value::String(s)) => table::whole(s).map_err(|()| bad(v)),
            Some(other) => Err(bad(other)),
        }
    }
}

fn empty(errors: Vec<String>) -> Parsed {
    super::empty(Tool::Ior, errors)
}
