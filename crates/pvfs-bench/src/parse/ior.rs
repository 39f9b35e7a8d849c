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

/// Whether the text holds IOR's Results or summary table.
pub(super) fn has_text_tables(text: &str) -> bool {
    text.lines().any(|line| results_header(line, 0).is_some() || summary_header(line, 0).is_some())
}

pub(super) fn has_csv_header(text: &str) -> bool {
    text.lines().any(|line| csv_header(line, 0).is_some())
}

/// Where IOR wrote its results, when its stdout says only that (`-O summaryFile=…`).
pub(super) fn summary_file_notice(text: &str) -> Option<String> {
    text.lines().find_map(|line| line.trim().strip_prefix("Writing output to ").map(|p| p.trim().to_owned()))
}

/// `access    bw(MiB/s)  IOPS  Latency(s)  block(KiB) …  iter`
fn results_header(line: &str, number: usize) -> Option<Header> {
    let names: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    (names.first().is_some_and(|n| n == "access") && names.iter().any(|n| n == "bw(MiB/s)"))
        .then(|| Header::new("IOR Results", names, number))
}

/// `Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs) … StdDev    Mean(s) …`
///
/// Both standard deviations are headed `StdDev`; they are named here by the statistics they
/// follow (`StdDev(MiB)` after `Mean(MiB)`, `StdDev(OPs)` after `Mean(OPs)`). IOR 2.x wrote
/// names apart (`Max (MiB)`, `Std Dev`); they are joined.
fn summary_header(line: &str, number: usize) -> Option<Header> {
    let mut names: Vec<String> = Vec::new();
    for token in line.split_whitespace() {
        match names.last_mut() {
            Some(last) if token.starts_with('(') || (token == "Dev" && last == "Std") => last.push_str(token),
            _ => names.push(token.to_owned()),
        }
    }
    if names.first().is_none_or(|n| n != "Operation") || !names.iter().any(|n| n == "Max(MiB)") {
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
    (line.starts_with("access,") && line.contains("bw(MiB/s)"))
        .then(|| Header::new("IOR CSV", line.split(',').map(|n| n.trim().to_owned()).collect(), number))
}

/// IOR's text output.
pub(super) fn parse_text(text: &str, errors: Vec<String>) -> Result<Parsed, ParseError> {
    enum Table {
        None,
        Results(Header),
        Summary(Header),
    }
    let mut parsed = empty(errors);
    let mut table = Table::None;
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if parsed.version.is_none()
            && let Some(version) = banner_version(line)
        {
            parsed.version = Some(version.to_owned());
            continue;
        }
        if parsed.command.is_none()
            && let Some(command) = header_value(line, &["Command line", "Command line used"])
        {
            parsed.command = Some(command.to_owned());
            continue;
        }
        if let Some(header) = results_header(line, number) {
            table = Table::Results(header);
            continue;
        }
        if let Some(header) = summary_header(line, number) {
            table = Table::Summary(header);
            continue;
        }
        // Anything else inside a table (`Max Write: …`, a warning from another rank) is not a
        // row; rows start with their operation.
        let cells: Vec<&str> = line.split_whitespace().collect();
        match (&table, cells.first().copied()) {
            (Table::Results(header), Some("write" | "read" | "remove")) => {
                let row = header.row(cells, number)?;
                let iteration = iteration(&row, &parsed.iterations)?;
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
    }
    Ok(parsed)
}

/// A Results row (text or CSV; both use the same column names, but for `Latency`).
fn iteration(row: &Row<'_, '_>, earlier: &[IorIteration]) -> Result<IorIteration, ParseError> {
    let operation = row.text(&["access"]).unwrap_or_default().to_owned();
    // Every version prints `iter`; should one not, the rows of an operation come in order.
    let iteration = match row.u64(&["iter"])? {
        Some(n) => n,
        None => earlier.iter().filter(|it| it.operation == operation).count() as u64,
    };
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

/// IOR's CSV output; see the module documentation for its summary rows.
pub(super) fn parse_csv(text: &str, errors: Vec<String>) -> Result<Parsed, ParseError> {
    let mut parsed = empty(errors);
    let mut tasks: Vec<Option<u64>> = Vec::new();
    let mut header: Option<Header> = None;
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        // No IOR version prints its banner with CSV so far; should one, it is read.
        if parsed.version.is_none()
            && let Some(version) = banner_version(line)
        {
            parsed.version = Some(version.to_owned());
            continue;
        }
        if parsed.command.is_none()
            && let Some(command) = header_value(line, &["Command line", "Command line used"])
        {
            parsed.command = Some(command.to_owned());
            continue;
        }
        if let Some(found) = csv_header(line, number) {
            header = Some(found);
            continue;
        }
        let Some(header) = &header else { continue };
        let cells: Vec<&str> = line.trim().split(',').map(str::trim).collect();
        if !matches!(cells.first().copied(), Some("write" | "read" | "remove")) {
            continue;
        }
        let row = header.row(cells, number)?;
        tasks.push(row.u64(&["numTasks"])?);
        let iteration = iteration(&row, &parsed.iterations)?;
        parsed.iterations.push(iteration);
    }
    parsed.ior = csv_summary(&parsed.iterations, &tasks);
    Ok(parsed)
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

/// IOR's JSON document in `text`: the whole text, or an object that starts at the beginning of
/// a line after text IOR or MPI printed first. `Ok(None)` when the text has no IOR document.
pub(super) fn find_json(text: &str) -> Result<Option<Value>, ParseError> {
    let Some(start) = line_offsets(text).find(|&at| text[at..].trim_start().starts_with('{')) else {
        return Ok(None);
    };
    let candidate = &text[start..];
    // Only the first value is read, so whatever follows it (MPI's messages) does not matter.
    let first = serde_json::Deserializer::from_str(candidate).into_iter::<Value>().next();
    let error = match first {
        Some(Ok(value)) => return Ok(is_ior_document(&value).then_some(value)),
        Some(Err(error)) => error,
        None => return Ok(None),
    };
    // Lines another process printed into the document (warnings from other ranks, MPI's
    // notices) make it invalid; IOR's own JSON lines never start with a letter.
    let cleaned = without_foreign_lines(candidate);
    if let Some(Ok(value)) = serde_json::Deserializer::from_str(&cleaned).into_iter::<Value>().next()
        && is_ior_document(&value)
    {
        return Ok(Some(value));
    }
    if !["\"tests\"", "\"summary\"", "\"Command line\""].iter().any(|key| candidate.contains(key)) {
        return Ok(None);
    }
    let before = text[..start].matches('\n').count();
    let message = error.to_string();
    let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m).to_owned();
    Err(ParseError::Json { line: before + error.line(), column: error.column(), message })
}

fn line_offsets(text: &str) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(at, _)| at + 1))
        .filter(move |&at| at < text.len())
}

fn is_ior_document(value: &Value) -> bool {
    value.as_object().is_some_and(|o| o.contains_key("tests") || o.contains_key("summary"))
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

/// IOR's JSON document (already known to have `tests` or `summary`).
pub(super) fn parse_json(document: &Value, errors: Vec<String>) -> Result<Parsed, ParseError> {
    let mut parsed = empty(errors);
    let Some(root) = document.as_object() else { return Ok(parsed) };
    parsed.version = root.get("Version").and_then(Value::as_str).map(str::to_owned);
    parsed.command = root.get("Command line").and_then(Value::as_str).map(str::to_owned);

    for (t, test) in array(root.get("tests"), "tests")?.iter().enumerate() {
        let Some(results) = test.get("Results") else { continue };
        let at = format!("tests[{t}].Results");
        let first = parsed.iterations.len();
        for (r, entry) in array(Some(results), &at)?.iter().enumerate() {
            match entry {
                // IOR 3.2 opens one array per repetition.
                Value::Array(inner) => {
                    for (k, entry) in inner.iter().enumerate() {
                        let at = format!("{at}[{r}][{k}]");
                        let it = json_iteration(entry, &at, Some(r as u64), &parsed.iterations[first..])?;
                        parsed.iterations.push(it);
                    }
                }
                _ => {
                    let at = format!("{at}[{r}]");
                    let it = json_iteration(entry, &at, None, &parsed.iterations[first..])?;
                    parsed.iterations.push(it);
                }
            }
        }
    }

    for (s, row) in array(root.get("summary"), "summary")?.iter().enumerate() {
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
    Ok(parsed)
}

/// One `Results[]` entry. Its iteration is its `iter` key where IOR prints one, else the
/// repetition array it sits in (3.2), else its place among the test's entries of the same
/// access (4.x prints each repetition's entries in order).
fn json_iteration(
    entry: &Value,
    at: &str,
    repetition: Option<u64>,
    earlier: &[IorIteration],
) -> Result<IorIteration, ParseError> {
    let get = Getter { row: object(entry, at)?, at };
    let operation = get.operation("access")?;
    let iteration = match (get.u64("iter")?, repetition) {
        (Some(n), _) | (None, Some(n)) => n,
        (None, None) => earlier.iter().filter(|it| it.operation == operation).count() as u64,
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
