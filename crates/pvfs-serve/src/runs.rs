//! The benchmark runs `serve` knows: the run directories under `--results DIR` (`pvfsctl
//! bench`'s default, `pvfs-results`), each with its phases on the clock (`pvfs-bench`'s
//! `timeline`), for `/api/runs`: the web view draws them as bands over its charts and lists
//! them. Each run's events are read again only when the file changed (its size or time).
//!
//! Each run's report (`/runs/NAME/`): `pvfs-report`'s, the one `pvfsctl report` writes, made
//! when first asked into a directory of serve's own (removed when serve ends, so the results
//! directory is only ever read), made again when the run's events change, and answered as
//! HTML with its charts beside it.

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use pvfs_bench::results::PhaseSpan;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The most run directories looked at: far more than a results directory holds in practice,
/// and a bound on what one request reads.
const MAX_RUNS: usize = 10_000;

/// What `/api/runs` reads.
#[derive(Clone)]
pub struct Runs {
    dir: Arc<PathBuf>,
    cache: Arc<Mutex<HashMap<PathBuf, Read>>>,
    reports: Arc<Reports>,
}

/// The reports made so far, by run name, each with the events' stamp it was made from.
struct Reports {
    /// Where they are written: serve's own, removed when serve ends. None when no temporary
    /// directory could be made (then no report is made, and the page says so).
    dir: Option<tempfile::TempDir>,
    made: Mutex<HashMap<String, (Stamp, Arc<Report>)>>,
}

/// An events file's size and time.
type Stamp = (u64, Option<SystemTime>);

/// A run's report, ready to answer.
pub struct Report {
    pub html: String,
    /// Its charts, by file name.
    charts: HashMap<String, PathBuf>,
}

impl Report {
    /// The chart of that name, if the report has one.
    pub fn chart(&self, name: &str) -> Option<&PathBuf> {
        self.charts.get(name)
    }
}

/// A run's phases by its directory, with its events file's size and time when they were read.
type Read = (u64, Option<SystemTime>, Arc<Vec<PhaseSpan>>);

/// One run as `/api/runs` answers it.
#[derive(Debug, Serialize)]
pub struct RunSpan {
    /// The run's directory name (`pvfsctl report DIR/NAME` reports it).
    pub run: String,
    /// Its first phase's start and its last phase's end (Unix seconds; the end is the last
    /// start for a run that stopped mid-phase).
    pub start: f64,
    pub end: f64,
    pub phases: Vec<PhaseSpan>,
}

#[derive(Debug, Deserialize)]
pub struct RunsQuery {
    /// Only runs that overlap `[from, to]` (Unix seconds); every run by default.
    pub from: Option<f64>,
    pub to: Option<f64>,
}

impl Runs {
    pub fn new(dir: PathBuf) -> Runs {
        let reports = tempfile::Builder::new().prefix("pvfs-serve-reports-").tempdir();
        if let Err(err) = &reports {
            tracing::warn!(error = %err, "no temporary directory for the runs' reports; the web view will not show them");
        }
        let reports = Arc::new(Reports { dir: reports.ok(), made: Mutex::default() });
        Runs { dir: Arc::new(dir), cache: Arc::default(), reports }
    }

    /// The report of the run `name` (a directory right under the results directory with its
    /// events), made if it is not yet or its events changed; `None` for anything else — a
    /// name with a path in it included.
    pub fn report(&self, name: &str) -> Result<Option<Arc<Report>>, String> {
        let plain = !name.is_empty()
            && !name.starts_with('.')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '+'));
        if !plain {
            return Ok(None);
        }
        let run = self.dir.join(name);
        let Ok(meta) = std::fs::metadata(pvfs_bench::results::events_path(&run)) else { return Ok(None) };
        let stamp = (meta.len(), meta.modified().ok());
        let Some(out) = &self.reports.dir else {
            return Err("serve has no temporary directory to write reports into (see its log)".to_owned());
        };
        let mut made = self.reports.made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, report)) = made.get(name)
            && *at == stamp
        {
            return Ok(Some(report.clone()));
        }
        let out = out.path().join(name);
        let written = pvfs_report::write(std::slice::from_ref(&run), &out).map_err(|e| e.to_string())?;
        let markdown = std::fs::read_to_string(&written.markdown).map_err(|e| e.to_string())?;
        let charts = written
            .charts
            .iter()
            .filter_map(|p| Some((p.file_name()?.to_str()?.to_owned(), p.clone())))
            .collect();
        let report = Arc::new(Report { html: page(name, &markdown), charts });
        made.insert(name.to_owned(), (stamp, report.clone()));
        Ok(Some(report))
    }

    /// Every run under the directory that overlaps `[from, to]`, oldest first. A directory
    /// that is not a run (no events.jsonl) is passed over; a missing results directory is no
    /// runs.
    pub fn list(&self, from: f64, to: f64) -> Vec<RunSpan> {
        let Ok(entries) = std::fs::read_dir(&*self.dir) else { return Vec::new() };
        let mut runs = Vec::new();
        for entry in entries.flatten().take(MAX_RUNS) {
            let path = entry.path();
            let Some(phases) = self.phases(&path) else { continue };
            let (Some(first), Some(last)) = (phases.first(), phases.last()) else { continue };
            let (start, end) = (first.start, last.end.unwrap_or(last.start));
            if end < from || start > to {
                continue;
            }
            let run = entry.file_name().to_string_lossy().into_owned();
            runs.push(RunSpan { run, start, end, phases: phases.to_vec() });
        }
        runs.sort_by(|a, b| a.start.total_cmp(&b.start));
        runs
    }

    fn phases(&self, dir: &std::path::Path) -> Option<Arc<Vec<PhaseSpan>>> {
        let meta = std::fs::metadata(pvfs_bench::results::events_path(dir)).ok()?;
        let stamp = (meta.len(), meta.modified().ok());
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((len, modified, phases)) = cache.get(dir)
            && (*len, *modified) == stamp
        {
            return Some(phases.clone());
        }
        let phases = Arc::new(pvfs_bench::results::timeline(dir).ok()?);
        cache.insert(dir.to_owned(), (stamp.0, stamp.1, phases.clone()));
        Some(phases)
    }
}

/// The report's Markdown as a page of its own. Raw HTML in the Markdown is shown as text: the
/// report quotes what the run recorded (host names, commands), which is not the page's to run.
fn page(name: &str, markdown: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser};
    let parser = Parser::new_ext(markdown, Options::ENABLE_TABLES).map(|event| match event {
        Event::Html(text) | Event::InlineHtml(text) => Event::Text(text),
        other => other,
    });
    let mut body = String::new();
    pulldown_cmark::html::push_html(&mut body, parser);
    let mut title = String::new();
    pulldown_cmark_escape::escape_html(&mut title, name).ok();
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} · pvfs report</title>\n\
         <style>body{{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:72em;padding:0 1em;color:#222}}\
         table{{border-collapse:collapse;margin:.5em 0}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}\
         th{{background:#f3f3f3}}img{{max-width:100%}}code{{background:#f3f3f3;padding:0 3px}}</style></head>\n\
         <body><p><a href=\"/#runs\">← the cluster's runs</a></p>\n{body}</body></html>\n"
    )
}

/// `/runs/NAME/`: the run's report as a page.
pub(crate) async fn report(State(runs): State<Runs>, Path(name): Path<String>) -> Response {
    match tokio::task::spawn_blocking(move || runs.report(&name)).await {
        Ok(Ok(Some(report))) => {
            ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], report.html.clone()).into_response()
        }
        Ok(Ok(None)) => {
            (StatusCode::NOT_FOUND, "no such run in serve's --results directory\n").into_response()
        }
        Ok(Err(err)) => (StatusCode::INTERNAL_SERVER_ERROR, format!("the report could not be made: {err}\n"))
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// `/runs/NAME/FILE`: one of the report's charts.
pub(crate) async fn chart(State(runs): State<Runs>, Path((name, file)): Path<(String, String)>) -> Response {
    let read = tokio::task::spawn_blocking(move || {
        let report = runs.report(&name).ok()??;
        let path = report.chart(&file)?;
        let kind = if file.ends_with(".svg") { "image/svg+xml" } else { "image/png" };
        Some((kind, std::fs::read(path).ok()?))
    });
    match read.await {
        Ok(Some((kind, bytes))) => ([(header::CONTENT_TYPE, kind)], bytes).into_response(),
        _ => (StatusCode::NOT_FOUND, "no such chart\n").into_response(),
    }
}

pub(crate) async fn answer(State(runs): State<Runs>, Query(query): Query<RunsQuery>) -> impl IntoResponse {
    let (from, to) = (query.from.unwrap_or(f64::NEG_INFINITY), query.to.unwrap_or(f64::INFINITY));
    // Reading directories blocks: on the blocking pool.
    let list = tokio::task::spawn_blocking(move || runs.list(from, to)).await.unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], axum::Json(list))
}
