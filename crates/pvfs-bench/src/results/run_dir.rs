//! A run's results directory, and every path in it: the one place its file names are spelled
//! and the only way the coordinator and `bench import` write there. Whole files (results.json,
//! results.csv, commands.txt, the cluster file, an import's raw output) are written whole or not
//! at all ([`write_atomic`]); the files a run appends to as it goes (events.jsonl, each node's
//! metrics, mpirun's output) are [`LineFile`]s, written a line at a time, so an interrupted run
//! leaves every line it wrote whole but the last.

use super::{ImportRecord, ResultsError, RunRecord, sorted};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The record `report` reads: written first (incomplete) and last by a run, last by an import.
pub(super) const RESULTS_JSON: &str = "results.json";
const RESULTS_CSV: &str = "results.csv";
const CLUSTER_TOML: &str = "cluster.toml";
const COMMANDS_TXT: &str = "commands.txt";
const EVENTS_JSONL: &str = "events.jsonl";
const METRICS: &str = "metrics";
const RAW: &str = "raw";
const MPIRUN_OUT: &str = "mpirun.out";

/// What a run or an import makes before its results.json: a directory holding one of these and
/// no record was interrupted.
pub(super) const BEFORE_RECORD: [&str; 5] = [CLUSTER_TOML, COMMANDS_TXT, EVENTS_JSONL, METRICS, RAW];

/// `DIR/events.jsonl`, for readers.
pub fn events_path(dir: &Path) -> PathBuf {
    dir.join(EVENTS_JSONL)
}

/// `DIR/metrics/NODE.jsonl`, for readers.
pub(super) fn metrics_path(dir: &Path, node: &str) -> PathBuf {
    dir.join(METRICS).join(format!("{node}.jsonl"))
}

/// A run's results directory, made by [`RunDir::create`] (never one that exists).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    path: PathBuf,
    /// The directory's name: the run's.
    name: String,
}

impl RunDir {
    /// Makes a new run directory in `base`: `name`, or `name-2`, `name-3`, … when that is taken.
    /// `create_dir` fails on a directory that exists, so no two runs (or imports) ever share
    /// one, even when they start in the same second.
    pub fn create(base: &Path, name: &str) -> Result<RunDir, ResultsError> {
        std::fs::create_dir_all(base)
            .map_err(|source| ResultsError::CreateBase { path: base.to_owned(), source })?;
        for n in 1..=10_000 {
            let candidate = if n == 1 { name.to_owned() } else { format!("{name}-{n}") };
            let dir = base.join(&candidate);
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(RunDir { path: dir, name: candidate }),
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(ResultsError::Create { path: dir, source }),
            }
        }
        Err(ResultsError::Exhausted { base: base.to_owned(), name: name.to_owned() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The run's name (the directory's).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Writes results.json (everything) and results.csv (one row per iteration and phase),
    /// each whole or not at all.
    pub fn write_record(&self, record: &RunRecord) -> Result<(), ResultsError> {
        let path = self.path.join(RESULTS_JSON);
        let doc = sorted(record).map_err(|e| ResultsError::Write { path: path.clone(), source: e.into() })?;
        write_atomic(&path, |out| {
            serde_json::to_writer_pretty(&mut *out, &doc)?;
            out.write_all(b"\n")
        })?;
        write_atomic(&self.path.join(RESULTS_CSV), |out| out.write_all(record.csv().as_bytes()))
    }

    /// Writes an import's results.json, whole or not at all.
    pub fn write_import(&self, record: &ImportRecord<'_>) -> Result<(), ResultsError> {
        write_atomic(&self.path.join(RESULTS_JSON), |out| {
            serde_json::to_writer_pretty(&mut *out, record)?;
            out.write_all(b"\n")
        })
    }

    /// Keeps the cluster file the run was made from, as cluster.toml (read as a cluster file
    /// is, `cap` being its cap: a regular file no larger).
    pub fn keep_cluster(&self, source: &Path, cap: pvfs_host::local_file::Cap) -> Result<(), ResultsError> {
        self.keep(&self.path.join(CLUSTER_TOML), source, cap)
    }

    /// Keeps an imported output under `raw/`, by its own file name (no more of it than `cap`,
    /// which is what was parsed); returns where.
    pub fn keep_raw(&self, source: &Path, cap: pvfs_host::local_file::Cap) -> Result<PathBuf, ResultsError> {
        let name = source.file_name().map_or_else(|| "output".into(), ToOwned::to_owned);
        let kept = self.raw_dir()?.join(name);
        self.keep(&kept, source, cap)?;
        Ok(kept)
    }

    fn keep(&self, to: &Path, source: &Path, cap: pvfs_host::local_file::Cap) -> Result<(), ResultsError> {
        write_atomic(to, |out| {
            let file = pvfs_host::local_file::open(source, cap).map_err(std::io::Error::other)?;
            std::io::copy(&mut std::io::Read::take(file, cap.bytes), out)?;
            Ok(())
        })
    }

    /// An IO500 run's `io500/result_summary.txt` and `io500/result.txt`, in io500's format (so
    /// `bench import RUN/io500` reads them as it reads io500's); returns the directory.
    pub fn write_io500(&self, run: &crate::io500::Io500Run) -> Result<PathBuf, ResultsError> {
        let dir = self.path.join("io500");
        std::fs::create_dir_all(&dir).map_err(|source| ResultsError::Write { path: dir.clone(), source })?;
        let summary = crate::io500::assemble::summary_text(run);
        write_atomic(&dir.join("result_summary.txt"), |out| out.write_all(summary.as_bytes()))?;
        let result = crate::io500::assemble::result_txt(run);
        write_atomic(&dir.join("result.txt"), |out| out.write_all(result.as_bytes()))?;
        Ok(dir)
    }

    /// commands.txt: the run's own command and the IOR/mdtest command it stands for.
    pub fn write_commands(&self, text: &str) -> Result<(), ResultsError> {
        write_atomic(&self.path.join(COMMANDS_TXT), |out| out.write_all(text.as_bytes()))
    }

    /// Adds `text` to commands.txt (the mpi launcher's exact command, once it is known), the
    /// whole file written again so it is never seen half-written.
    pub fn add_commands(&self, text: &str) -> Result<(), ResultsError> {
        let path = self.path.join(COMMANDS_TXT);
        let mut whole =
            std::fs::read(&path).map_err(|source| ResultsError::Write { path: path.clone(), source })?;
        whole.extend_from_slice(text.as_bytes());
        write_atomic(&path, |out| out.write_all(&whole))
    }

    /// events.jsonl: one line per event as it happens.
    pub fn events(&self) -> Result<LineFile, ResultsError> {
        LineFile::create(self.path.join(EVENTS_JSONL))
    }

    /// raw/mpirun.out: mpirun's output as it comes.
    pub fn mpirun_output(&self) -> Result<LineFile, ResultsError> {
        LineFile::create(self.raw_dir()?.join(MPIRUN_OUT))
    }

    /// `raw/NAME`, written whole: a file the run's tool was given (the real io500's ini).
    pub fn write_raw(&self, name: &str, text: &str) -> Result<PathBuf, ResultsError> {
        let path = self.raw_dir()?.join(name);
        write_atomic(&path, |out| out.write_all(text.as_bytes()))?;
        Ok(path)
    }

    /// The metrics directory, made before the run starts so that an interrupted run still has it.
    pub fn make_metrics_dir(&self) -> Result<(), ResultsError> {
        let dir = self.path.join(METRICS);
        std::fs::create_dir_all(&dir).map_err(|source| ResultsError::Create { path: dir, source })
    }

    /// metrics/NODE.jsonl: the node's seconds as they are recorded.
    pub fn metrics(&self, node: &str) -> Result<LineFile, ResultsError> {
        LineFile::create(metrics_path(&self.path, node))
    }

    fn raw_dir(&self) -> Result<PathBuf, ResultsError> {
        let dir = self.path.join(RAW);
        std::fs::create_dir_all(&dir).map_err(|source| ResultsError::Create { path: dir.clone(), source })?;
        Ok(dir)
    }
}

/// A file of the results directory written a line at a time as the run goes, each line
/// written whole by one `write` (so a reader, or an interruption, sees whole lines).
#[derive(Debug)]
pub struct LineFile {
    path: PathBuf,
    file: std::fs::File,
}

impl LineFile {
    fn create(path: PathBuf) -> Result<LineFile, ResultsError> {
        match std::fs::File::create(&path) {
            Ok(file) => Ok(LineFile { path, file }),
            Err(source) => Err(ResultsError::Write { path, source }),
        }
    }

    /// Writes `line` and its newline.
    pub fn line(&mut self, line: &dyn std::fmt::Display) -> Result<(), ResultsError> {
        let text = format!("{line}\n");
        self.file
            .write_all(text.as_bytes())
            .map_err(|source| ResultsError::Write { path: self.path.clone(), source })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Writes `path` whole or not at all: into a temporary file beside it, flushed to disk, then
/// renamed over `path`, and the directory flushed so that the rename survives a crash too. A
/// reader (or a run interrupted mid-write) sees the old file or the new one, never a part.
pub fn write_atomic(
    path: &Path,
    contents: impl FnOnce(&mut std::io::BufWriter<&std::fs::File>) -> std::io::Result<()>,
) -> Result<(), ResultsError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let written = (|| {
        let temp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
        let mut out = std::io::BufWriter::new(temp.as_file());
        contents(&mut out)?;
        out.flush()?;
        drop(out);
        temp.as_file().sync_all()?;
        temp.persist(path).map_err(|e| e.error)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    written.map_err(|source| ResultsError::Write { path: path.to_owned(), source })
}
