//! The benchmark runs `serve` knows: the run directories under `--results DIR` (`pvfsctl
//! bench`'s default, `pvfs-results`), each with its phases on the clock (`pvfs-bench`'s
//! `timeline`), for `/api/runs`: the web view draws them as bands over its charts and lists
//! them. Each run's events are read again only when the file changed (its size or time).

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::IntoResponse;
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
        Runs { dir: Arc::new(dir), cache: Arc::default() }
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

pub(crate) async fn answer(State(runs): State<Runs>, Query(query): Query<RunsQuery>) -> impl IntoResponse {
    let (from, to) = (query.from.unwrap_or(f64::NEG_INFINITY), query.to.unwrap_or(f64::INFINITY));
    // Reading directories blocks: on the blocking pool.
    let list = tokio::task::spawn_blocking(move || runs.list(from, to)).await.unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], axum::Json(list))
}
