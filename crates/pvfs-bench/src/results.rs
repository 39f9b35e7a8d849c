//! The results directory's on-disk format, owned in one place: what `pvfsctl bench` and
//! `bench import` write (`results.json`, `results.csv`, `events.jsonl`, `metrics/NODE.jsonl`)
//! and what `report` and the sweep table read back, as serde types rather than string keys.
//!
//! Every JSON file here has always been written with its keys in alphabetical order (through
//! `serde_json::Value`, whose maps are sorted), nested rows included. The writers keep that by
//! serializing through [`sorted`] (and `metrics/NODE.jsonl`'s line, [`MetricsLine`], which
//! `pvfs-metrics` defines, writes its keys in that order itself), so a directory written today
//! reads byte for byte like one written before these types existed; only `results.json` gained
//! a `version`. The exception
//! is an import's record ([`ImportRecord`]), which is streamed to the file in field order, as it
//! always was (a parsed output of a million iterations is not built as a tree first).

use crate::model::{ImportedTool, IorIteration, IorSummary, MdtestSummary};
use crate::phase::Phase;
/// A line of `metrics/NODE.jsonl`, which `pvfs-metrics` defines: the same line is what
/// `pvfsctl top --json` and `pvfs-agent metrics --json` print.
pub use pvfs_metrics::line::MetricsLine;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod run_dir;
pub use run_dir::{LineFile, RunDir, events_path, write_atomic};
mod timeline;
pub use timeline::{
    FaultSpan, Heal, LatencySecond, PhaseJobs, PhaseProfile, PhaseSpan, faults, gluster_profiles,
    latency_seconds, lustre_jobs, timeline,
};

/// The version of `results.json` this code writes. Records from before the field existed
/// have the same shape and read as version 1.
pub const VERSION: u32 = 1;

/// Why a results directory could not be made, written or read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// A run directory that was interrupted before it recorded anything: `pvfsctl bench` and
    /// `bench import` write results.json whole, first thing (bench) or last (import), so a
    /// directory of theirs without one stopped early.
    #[error(
        "{dir} is an incomplete run: it has no results.json (the run or import was interrupted \
         before it recorded one); its other files are kept — run it again, or leave it out of the report"
    )]
    Incomplete { dir: PathBuf },
    #[error("{path}: {source} (is {dir} a pvfs results directory?)")]
    Read { path: PathBuf, dir: PathBuf, source: std::io::Error },
    /// Not a regular file, or larger than [`RECORD_FILE`]: refused unread.
    #[error("{error} (is {dir} a pvfs results directory?)")]
    File { dir: PathBuf, error: pvfs_host::local_file::LocalFileError },
    #[error("{path}: {source}")]
    BadJson { path: PathBuf, source: serde_json::Error },
    #[error(
        "{path}: results version {found}, newer than this pvfs reads (up to {VERSION}); read it with a newer pvfsctl"
    )]
    Version { path: PathBuf, found: u32 },
    #[error("writing {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("creating the results directory {path}: {source}")]
    CreateBase { path: PathBuf, source: std::io::Error },
    #[error("creating the run directory {path}: {source}")]
    Create { path: PathBuf, source: std::io::Error },
    #[error("{base}: 10000 runs named {name}-… already; move some away")]
    Exhausted { base: PathBuf, name: String },
}

/// `results.json` of a `pvfsctl bench` run. Every field has a default so records from older
/// versions (and hand-made ones) read; `complete` defaults to true, since records written
/// before it existed were written at the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunRecord {
    /// The format's version ([`VERSION`]).
    pub version: u32,
    /// The run's name (its directory's name).
    pub run: String,
    /// False for the record written when the run starts, and for one that was interrupted or
    /// stopped early: its figures are what it had recorded.
    pub complete: bool,
    pub preset: Option<String>,
    pub engine: Option<crate::launch::Engine>,
    pub launcher: Option<crate::launch::Launcher>,
    /// `tool` and `params`.
    #[serde(flatten)]
    pub params: Option<Params>,
    pub tasks_per_client: Option<u32>,
    /// The cluster's kind (local, vm, …).
    pub kind: Option<String>,
    /// Nodes serving the file system.
    pub servers: Option<u64>,
    pub clients: Option<u64>,
    /// The per-VM bandwidth limit, MiB/s.
    pub vm_limit_mib: Option<f64>,
    /// The sweep point this run is, when it is one.
    pub sweep: Option<Sweep>,
    /// Whose caches were dropped before read and stat phases (absent: nobody's); each phase's
    /// record says what each drop did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_caches: Option<crate::request::DropCaches>,
    /// The run's directory on the file system under test.
    pub dir: Option<PathBuf>,
    /// Unix seconds.
    pub started: Option<f64>,
    pub finished: Option<f64>,
    /// Why the run stopped early (a client's failure, or an interruption).
    pub error: Option<String>,
    pub summary: Summary,
    pub iterations: Vec<IorIteration>,
    pub phases: Vec<PhaseRecord>,
    /// Seconds of metrics each node recorded.
    pub metrics_seconds: BTreeMap<String, u64>,
    /// An IO500 run told as io500 tells one: each stage's figure, the rules, the score (absent
    /// for any other run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io500: Option<crate::io500::Io500Run>,
}

impl Default for RunRecord {
    fn default() -> Self {
        RunRecord {
            version: VERSION,
            run: String::new(),
            complete: true,
            preset: None,
            engine: None,
            launcher: None,
            params: None,
            tasks_per_client: None,
            kind: None,
            servers: None,
            clients: None,
            vm_limit_mib: None,
            sweep: None,
            drop_caches: None,
            dir: None,
            started: None,
            finished: None,
            error: None,
            summary: Summary::default(),
            iterations: Vec::new(),
            phases: Vec::new(),
            metrics_seconds: BTreeMap::new(),
            io500: None,
        }
    }
}

impl RunRecord {
    /// The IOR summary row's mean bandwidth for "write" or "read".
    pub fn bw(&self, op: &str) -> Option<f64> {
        self.summary.ior.iter().find(|r| r.operation == op)?.bw_mean_mib
    }

    /// The IOR summary row's mean operations per second for "write" or "read".
    pub fn ops(&self, op: &str) -> Option<f64> {
        self.summary.ior.iter().find(|r| r.operation == op)?.ops_mean
    }

    /// `results.csv`: one row per iteration and phase.
    pub fn csv(&self) -> String {
        let mut csv = String::from("iteration,phase,bytes,ops,seconds,bw_mib,ops_per_sec\n");
        for p in &self.phases {
            csv += &format!(
                "{},{},{},{},{:.6},{:.3},{:.3}\n",
                p.iteration,
                p.phase,
                p.totals.bytes,
                p.totals.ops,
                p.totals.seconds,
                p.totals.bw_mib,
                p.totals.ops_per_sec
            );
        }
        csv
    }
}

/// The summary rows, as IOR and mdtest print them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    pub ior: Vec<IorSummary>,
    pub mdtest: Vec<MdtestSummary>,
}

/// `"sweep": {"key": "procs", "value": "4"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    pub key: String,
    pub value: String,
}

/// The workload's parameters: `"tool": "ior", "params": {…}` in the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "tool", content = "params", rename_all = "lowercase")]
pub enum Params {
    Ior(IorRecord),
    Mdtest(crate::params::MdtestParams),
    Find(crate::params::FindParams),
    Io500(crate::io500::plan::Io500Params),
}

impl From<&crate::params::Workload> for Params {
    fn from(w: &crate::params::Workload) -> Self {
        use crate::params::{Workload, format_size};
        match w {
            Workload::Ior(p) => Params::Ior(IorRecord {
                params: p.clone(),
                transfer_text: format_size(p.transfer),
                block_text: format_size(p.block),
            }),
            Workload::Mdtest(p) => Params::Mdtest(p.clone()),
            Workload::Find(p) => Params::Find(p.clone()),
            Workload::Io500(p) => Params::Io500(p.clone()),
        }
    }
}

/// IOR's parameters as the record keeps them: the workload's own, and the sizes as text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IorRecord {
    #[serde(flatten)]
    pub params: crate::params::IorParams,
    pub transfer_text: String,
    pub block_text: String,
}

/// One phase of one iteration, on every client: what the coordinator keeps as each phase ends
/// and results.json's `phases[]`. Every field but the phase may be missing (read as zero or
/// empty); a record without a phase is no record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseRecord {
    #[serde(default)]
    pub iteration: u32,
    /// Written as its label: "write", "read", or mdtest's row name ("File creation").
    pub phase: Phase,
    #[serde(flatten)]
    pub totals: crate::summary::PhaseTotals,
    /// Every task's part, in task order.
    #[serde(default)]
    pub tasks: Vec<TaskRecord>,
    /// The nodes whose caches were dropped before the phase, and what that did (absent when
    /// none were).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caches_dropped: Vec<CacheDrop>,
    /// Each transfer's or operation's time over every task (absent where not measured: fio,
    /// IOR and mdtest under mpirun, records written before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<PhaseLatency>,
    /// The IO500 stage the phase belongs to (absent in any other run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<crate::io500::plan::Stage>,
    /// A find's files found (absent for other phases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<u64>,
    /// elbencho's first-done figures: what every task had moved when the first one finished
    /// (the agents launcher; absent elsewhere). The totals are the last-done ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_done: Option<crate::summary::FirstDone>,
    /// The job id each client's Lustre client gave the phase's tasks, or why none: the
    /// coordinator's, for reading the servers' job_stats (the record keeps the reading, a
    /// [`BenchEvent::LustreJobs`], in events.jsonl).
    #[serde(skip)]
    pub lustre_job_ids: Vec<ClientJobId>,
}

impl PhaseRecord {
    /// What the phase is shown and compared as: its label, or in an IO500 run its stage's
    /// name with it (ior-easy's and ior-hard's writes are two phases).
    pub fn name(&self) -> String {
        match self.stage {
            Some(stage) => format!("{stage} {}", self.phase.label()),
            None => self.phase.label().to_owned(),
        }
    }
}

/// A phase's latency: its percentiles over every task, each client's, and the merged
/// histogram's buckets (so runs and iterations can be merged again later).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseLatency {
    #[serde(flatten)]
    pub all: crate::latency::Percentiles,
    pub clients: BTreeMap<String, crate::latency::Percentiles>,
    pub buckets: Vec<(u64, u64)>,
}

impl PhaseLatency {
    /// Every task's histogram merged, over all and per client; `None` when no task measured.
    pub fn of(tasks: &[(String, crate::summary::TaskResult)]) -> Option<PhaseLatency> {
        let all = crate::latency::merge(tasks.iter().map(|(_, t)| t.latency.as_slice()));
        let mut clients: BTreeMap<String, crate::latency::Recorder> = BTreeMap::new();
        for (node, t) in tasks.iter().filter(|(_, t)| !t.latency.is_empty()) {
            clients.entry(node.clone()).or_default().add_buckets(&t.latency);
        }
        Some(PhaseLatency {
            all: all.percentiles()?,
            clients: clients.iter().filter_map(|(node, r)| Some((node.clone(), r.percentiles()?))).collect(),
            buckets: all.buckets(),
        })
    }
}

/// One node's cache drop before a phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheDrop {
    pub node: String,
    /// The sync and the drop together.
    pub seconds: f64,
    /// `Cached` in /proc/meminfo before and after.
    pub cached_before_kib: u64,
    pub cached_after_kib: u64,
}

impl PhaseRecord {
    /// The phase's record from every task's result, with the client it ran on.
    pub fn new(
        iteration: u32,
        phase: Phase,
        totals: crate::summary::PhaseTotals,
        tasks: &[(String, crate::summary::TaskResult)],
    ) -> PhaseRecord {
        PhaseRecord {
            iteration,
            phase,
            totals,
            tasks: tasks.iter().map(|(node, t)| TaskRecord::new(node, t)).collect(),
            caches_dropped: Vec::new(),
            latency: PhaseLatency::of(tasks),
            stage: None,
            found: (phase == Phase::Find).then(|| tasks.iter().map(|(_, t)| t.found).sum()),
            first_done: None,
            lustre_job_ids: Vec::new(),
        }
    }
}

/// One task's part of a phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskRecord {
    /// The client it ran on.
    pub node: String,
    pub task: u32,
    /// Unix seconds.
    pub start: f64,
    pub end: f64,
    pub bytes: u64,
    pub ops: u64,
    pub error: Option<String>,
}

impl TaskRecord {
    pub fn new(node: &str, t: &crate::summary::TaskResult) -> TaskRecord {
        TaskRecord {
            node: node.to_owned(),
            task: t.task,
            start: unix(t.start),
            end: unix(t.end),
            bytes: t.bytes,
            ops: t.ops,
            error: t.error.clone(),
        }
    }
}

/// Seconds since the Unix epoch, as every record keeps its times.
pub fn unix(t: std::time::SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64()
}

/// What happens in a run, as the coordinator reports it and as it is kept: each event is one
/// line of `events.jsonl` (and of `pvfsctl bench --json`), serialised as it is here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum BenchEvent {
    PhaseStarted {
        iteration: u32,
        phase: Phase,
        /// Unix seconds: when every client starts it.
        at: f64,
    },
    /// A client's cumulative counters for the current phase.
    Progress {
        node: String,
        bytes: u64,
        ops: u64,
        time: f64,
        /// The times of the operations the client finished since its last progress, as
        /// histogram buckets: merged into the run's [`BenchEvent::LatencySecond`]s, which
        /// events.jsonl keeps instead (a client's buckets every second would be most of it).
        #[serde(skip)]
        recent: Vec<(u64, u64)>,
    },
    /// One second of a phase on the run's timeline: the percentiles of every operation the
    /// clients finished in it (their reports that arrived in it, merged; `latency::Seconds`).
    LatencySecond {
        iteration: u32,
        phase: Phase,
        /// Unix seconds: the second's start on the coordinator's clock (the phase's start, plus
        /// whole seconds).
        at: f64,
        #[serde(flatten)]
        latency: crate::latency::Percentiles,
    },
    Launched {
        node: String,
        command: String,
        hostfile: String,
    },
    Output {
        stderr: bool,
        text: String,
    },
    /// Caches dropped before a phase, on these nodes.
    CachesDropped {
        iteration: u32,
        phase: Phase,
        nodes: Vec<CacheDrop>,
    },
    PhaseDone {
        iteration: u32,
        phase: Phase,
        #[serde(flatten)]
        totals: crate::summary::PhaseTotals,
        /// The phase's percentiles over every task, where measured.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        latency: Option<crate::latency::Percentiles>,
        /// What every task had moved when the first finished, where known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_done: Option<crate::summary::FirstDone>,
    },
    /// An IO500 stage begins (its engine phases follow).
    Io500Stage {
        stage: crate::io500::plan::Stage,
        /// Unix seconds.
        at: f64,
    },
    /// An IO500 stage's figure, as io500 prints it.
    Io500Result {
        #[serde(flatten)]
        result: crate::io500::PhaseResult,
    },
    /// The IO500 score, as io500 prints it, and why the run is invalid (the run's reasons and
    /// each stage's, named).
    Io500Score {
        score: crate::io500::Score,
        invalid_reasons: Vec<String>,
    },
    /// A fault `--fault` asked for: `injected`, `undone`, or `failed` (the agent refused or
    /// could not), with what the node's agent said.
    Fault {
        node: String,
        /// The fault as `--fault` gave it (`kill-brick=gfs2,volume=gv0,at=3s`): which of a
        /// node's faults this is, when it has several.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        spec: String,
        action: String,
        /// Unix seconds: when it took effect as the node's agent said (its clock), or when the
        /// coordinator heard of it.
        at: f64,
        detail: String,
    },
    /// What a fault did to its phase, once the phase is done: the rate before it, the seconds
    /// with no operation finished from it on, and the seconds from it until the rate was back
    /// to 90 % of that for the rest of the phase (`None`: not within the phase).
    FaultMeasured {
        node: String,
        iteration: u32,
        phase: Phase,
        injected_at: f64,
        undone_at: Option<f64>,
        ops_per_s_before: f64,
        stall_s: f64,
        recovery_s: Option<f64>,
        /// Tasks that failed in the phase (an I/O error the file system returned to a client:
        /// the run stops there, as IOR does), and the first of their errors, naming its file.
        #[serde(default, skip_serializing_if = "is_zero_u32")]
        client_errors: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_error: Option<String>,
        /// What the failed tasks were to do and did not: their transfers (items for mdtest)
        /// not done, the failing one included, and their bytes (IOR). Nothing is retried — the
        /// engine, as IOR, stops a task at its first error — so this is what the application
        /// lost. `None` when no task failed, or when a task's work has no fixed size (a
        /// stonewalled phase runs until its deadline).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ops_lost: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes_lost: Option<u64>,
    },
    /// A GlusterFS brick a fault killed, healed: its volume's entries pending heal were polled
    /// (`gluster volume heal VOL info summary`) from the brick's return until none were left —
    /// the time redundancy took to come back — or until pvfs stopped waiting (`healed_after_s`
    /// `None`). `pending_max` is the most entries pending at once (summed over the bricks),
    /// `split_brain` the most in split-brain.
    FaultHealed {
        node: String,
        volume: String,
        /// Unix seconds: when no entry was left, or when pvfs stopped waiting.
        at: f64,
        pending_max: u64,
        split_brain: u64,
        healed_after_s: Option<f64>,
        /// Why the heal could not be followed (the volume has no replicas to heal from, the
        /// agent refused): `healed_after_s` is `None` then.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// GlusterFS's own profile of the volume over one phase (`--gluster-profile`): what each
    /// brick did from the phase's start to its end, as `gluster volume profile VOL info
    /// incremental` told it.
    GlusterProfile {
        iteration: u32,
        phase: Phase,
        volume: String,
        bricks: Vec<ProfiledBrick>,
        /// Why the phase's reading could not be made (no bricks then).
        error: Option<String>,
    },
    /// A Lustre phase's own I/O per target, from the servers' `job_stats` (read once the phase
    /// was done on every client): the job id each client's Lustre client gave the phase's
    /// tasks (named for the phase), and what each OST and MDT counted under those ids.
    LustreJobs {
        iteration: u32,
        phase: Phase,
        /// Each client's id, or why it has none.
        clients: Vec<ClientJobId>,
        /// Each target that counted any of the ids, its counters summed over them.
        targets: Vec<TargetJobStats>,
        /// A server that could not be asked, or a target whose job_stats could not be read.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// The last line of `--json`: the run's summary rows, and where its results are.
    Summary {
        run: String,
        results: PathBuf,
        ior: Vec<IorSummary>,
        mdtest: Vec<MdtestSummary>,
        error: Option<String>,
    },
}

/// A fault's lost work (`FaultMeasured`'s `ops_lost` and `bytes_lost`) as the run's line and
/// the report's table both say it: "14389 transfers (56.2 MiB)", "1500 operations" (mdtest's
/// items, which have no bytes); `None` when nothing was lost or the work had no fixed size.
pub fn lost_work(ops: Option<u64>, bytes: Option<u64>) -> Option<String> {
    match (ops, bytes) {
        (Some(ops), Some(bytes)) if ops > 0 => {
            Some(format!("{ops} transfers ({:.1} MiB)", bytes as f64 / 1048576.0))
        }
        (Some(ops), None) if ops > 0 => Some(format!("{ops} operations")),
        _ => None,
    }
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// The job id a client's Lustre client gave a phase's tasks, or why it has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientJobId {
    pub node: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_none: Option<String>,
}

/// What one Lustre target counted for a phase's job ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetJobStats {
    /// The server whose agent read it.
    pub node: String,
    /// `obdfilter` (an OST) or `mdt`.
    pub kind: String,
    pub target: String,
    /// Each counter with any samples: its samples (calls, or RPCs for `read_bytes` and
    /// `write_bytes`) and its sum (bytes for those two, microseconds for most others).
    pub counters: Vec<JobCounter>,
}

impl TargetJobStats {
    /// A counter's samples and sum (zeros when the target has none).
    pub fn counter(&self, name: &str) -> (u64, u64) {
        self.counters.iter().find(|c| c.name == name).map_or((0, 0), |c| (c.samples, c.sum))
    }

    /// Operations other than reads and writes (opens, creates, getattrs, punches, …).
    pub fn other_ops(&self) -> u64 {
        self.counters
            .iter()
            .filter(|c| c.name != "read_bytes" && c.name != "write_bytes")
            .map(|c| c.samples)
            .sum()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCounter {
    pub name: String,
    pub samples: u64,
    pub sum: u64,
}

/// One brick's profile over a phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledBrick {
    /// `host:/path`.
    pub brick: String,
    /// The seconds the brick's interval covers.
    pub seconds: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Each file operation called: its calls and latencies (ns), most called first.
    pub fops: Vec<ProfiledFop>,
}

/// A file operation's calls and latencies on a brick over a phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledFop {
    pub name: String,
    pub hits: u64,
    pub avg_ns: f64,
    pub max_ns: f64,
}

/// An imported run's results.json: the parsed output as it is. Written in field order, straight
/// to the file (see the module's doc); read back with owned rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportRecord<'a> {
    pub run: Cow<'a, str>,
    pub complete: bool,
    /// The file it was parsed from.
    pub imported_from: Cow<'a, str>,
    pub tool: ImportedTool,
    /// The tool's version, when the output names it (not the record's format version).
    pub version: Option<Cow<'a, str>>,
    pub command: Option<Cow<'a, str>>,
    pub summary: ImportSummary<'a>,
    pub iterations: Cow<'a, [IorIteration]>,
    /// An io500 run's phases and score (`tool` is `io500`); absent for IOR and mdtest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io500: Option<Cow<'a, crate::io500::Io500Run>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportSummary<'a> {
    pub ior: Cow<'a, [IorSummary]>,
    pub mdtest: Cow<'a, [MdtestSummary]>,
}

/// Stores an output parsed from `file` as a run of its own in `base`: a new directory named
/// for the file and `now` (never one that exists), the file under `raw/`, then results.json.
/// Each is written whole or not at all, results.json last, so a directory without one is an
/// import that was interrupted (`report` says so).
pub fn store_import(
    base: &Path,
    file: &Path,
    parsed: &crate::model::Parsed,
    now: std::time::SystemTime,
) -> Result<RunDir, ResultsError> {
    let shown = file.display().to_string();
    let stem = file.file_stem().map_or("output".into(), |s| s.to_string_lossy().into_owned());
    let stamp = humantime::format_rfc3339_seconds(now).to_string().replace([':', '-'], "");
    let run = RunDir::create(base, &format!("imported-{stem}-{}", stamp.trim_end_matches('Z')))?;
    // As it was parsed: a regular file within the cap, and no more of it than that.
    run.keep_raw(file, crate::parse::OUTPUT_FILE)?;
    run.write_import(&ImportRecord {
        run: run.name().into(),
        complete: true,
        imported_from: shown.as_str().into(),
        tool: parsed.tool.into(),
        version: parsed.version.as_deref().map(Into::into),
        command: parsed.command.as_deref().map(Into::into),
        summary: ImportSummary { ior: parsed.ior.as_slice().into(), mdtest: parsed.mdtest.as_slice().into() },
        iterations: parsed.iterations.as_slice().into(),
        io500: None,
    })?;
    Ok(run)
}

/// Stores an io500 run read from `source` (its result directory or stdout) as a run of its
/// own in `base`, as [`store_import`] does: the files it was read from under `raw/`, then
/// results.json.
pub fn store_io500_import(
    base: &Path,
    source: &Path,
    io500: &crate::io500::Io500Run,
    files: &[PathBuf],
    now: std::time::SystemTime,
) -> Result<RunDir, ResultsError> {
    let shown = source.display().to_string();
    let stem = source.file_stem().map_or("output".into(), |s| s.to_string_lossy().into_owned());
    let stamp = humantime::format_rfc3339_seconds(now).to_string().replace([':', '-'], "");
    let run = RunDir::create(base, &format!("imported-io500-{stem}-{}", stamp.trim_end_matches('Z')))?;
    for file in files {
        run.keep_raw(file, crate::io500::IO500_FILE)?;
    }
    run.write_import(&ImportRecord {
        run: run.name().into(),
        complete: true,
        imported_from: shown.as_str().into(),
        tool: ImportedTool::Io500,
        version: io500.version.as_deref().map(Into::into),
        command: None,
        summary: ImportSummary { ior: Cow::Borrowed(&[]), mdtest: Cow::Borrowed(&[]) },
        iterations: Cow::Borrowed(&[]),
        io500: Some(Cow::Borrowed(io500)),
    })?;
    Ok(run)
}

/// A results directory's record: a run's or an import's.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Run(Box<RunRecord>),
    Import(Box<ImportRecord<'static>>),
}

impl Record {
    pub fn run_name(&self) -> &str {
        match self {
            Record::Run(r) => &r.run,
            Record::Import(i) => &i.run,
        }
    }

    pub fn complete(&self) -> bool {
        match self {
            Record::Run(r) => r.complete,
            Record::Import(i) => i.complete,
        }
    }

    pub fn ior(&self) -> &[IorSummary] {
        match self {
            Record::Run(r) => &r.summary.ior,
            Record::Import(i) => &i.summary.ior,
        }
    }

    pub fn mdtest(&self) -> &[MdtestSummary] {
        match self {
            Record::Run(r) => &r.summary.mdtest,
            Record::Import(i) => &i.summary.mdtest,
        }
    }

    /// The run's record; `None` for an import (which has no phases, servers or clients).
    pub fn as_run(&self) -> Option<&RunRecord> {
        match self {
            Record::Run(r) => Some(r),
            Record::Import(_) => None,
        }
    }

    /// An imported io500 run's phases and score.
    pub fn io500(&self) -> Option<&crate::io500::Io500Run> {
        match self {
            Record::Run(r) => r.io500.as_ref(),
            Record::Import(i) => i.io500.as_deref(),
        }
    }

    /// The IOR summary row's mean bandwidth for "write" or "read".
    pub fn bw(&self, op: &str) -> Option<f64> {
        self.ior().iter().find(|r| r.operation == op)?.bw_mean_mib
    }

    pub fn ops(&self, op: &str) -> Option<f64> {
        self.ior().iter().find(|r| r.operation == op)?.ops_mean
    }
}

/// The largest results.json read: a record holds every task's start, end and bytes per phase
/// and iteration, about 100 bytes each, so a million of them (a thousand tasks, a thousand
/// phases) is ~100 MiB; it is read whole, as JSON.
pub const RECORD_FILE: pvfs_host::local_file::Cap =
    pvfs_host::local_file::Cap { what: "a results.json", bytes: 256 << 20 };

/// The largest `metrics/NODE.jsonl` read: a line a second of ~1 KiB (more with processes), so a
/// day is ~100 MiB.
pub const METRICS_FILE: pvfs_host::local_file::Cap =
    pvfs_host::local_file::Cap { what: "a node's metrics record", bytes: 1 << 30 };

/// Reads `dir/results.json`: a run's record or an import's, with an error naming the file
/// when it is missing (an incomplete run when the directory holds a run's other files), not
/// JSON, or of a newer version.
pub fn load(dir: &Path) -> Result<Record, ResultsError> {
    let path = dir.join(run_dir::RESULTS_JSON);
    let text = match pvfs_host::local_file::read_to_string(&path, RECORD_FILE) {
        Ok(text) => text,
        Err(e) if e.is_not_found() && is_run_dir(dir) => {
            return Err(ResultsError::Incomplete { dir: dir.to_owned() });
        }
        Err(err) => {
            return Err(match err.into_io() {
                Ok(source) => ResultsError::Read { path, dir: dir.to_owned(), source },
                Err(error) => ResultsError::File { dir: dir.to_owned(), error },
            });
        }
    };
    parse(&path, &text)
}

/// Only the keys that tell the two records apart: an import names its file, and its `version`
/// is the tool's.
#[derive(Deserialize)]
struct Probe {
    imported_from: Option<serde::de::IgnoredAny>,
}

fn parse(path: &Path, text: &str) -> Result<Record, ResultsError> {
    let bad = |source| ResultsError::BadJson { path: path.to_owned(), source };
    let probe: Probe = serde_json::from_str(text).map_err(bad)?;
    if probe.imported_from.is_some() {
        return Ok(Record::Import(Box::new(serde_json::from_str(text).map_err(bad)?)));
    }
    let record: RunRecord = serde_json::from_str(text).map_err(bad)?;
    if record.version > VERSION {
        return Err(ResultsError::Version { path: path.to_owned(), found: record.version });
    }
    Ok(Record::Run(Box::new(record)))
}

/// Reads `metrics/NODE.jsonl` of a run: every line that reads, in order (a line cut short by
/// an interrupted run is left out).
pub fn metrics_lines(dir: &Path, node: &str) -> Vec<MetricsLine> {
    let path = run_dir::metrics_path(dir, node);
    let Ok(text) = pvfs_host::local_file::read_to_string(&path, METRICS_FILE) else {
        return Vec::new();
    };
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

/// Whether `dir` holds what `pvfsctl bench` or `bench import` make before results.json: the
/// cluster file, the commands, events, metrics or the raw output.
fn is_run_dir(dir: &Path) -> bool {
    run_dir::BEFORE_RECORD.iter().any(|f| dir.join(f).exists())
}

/// `value` as JSON with every object's keys in alphabetical order, the order every file here
/// has always had (see the module's doc).
pub fn sorted(value: &impl Serialize) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(value)
}

#[cfg(test)]
mod tests;
