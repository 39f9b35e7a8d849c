//! What a benchmark run is, resolved once: the command's flags over the cluster file's
//! `[bench]` over the defaults, checked as a whole (the engine and launcher pair, the preset and
//! every parameter, the run's size), with the names of its directories. ripgrep's two stages:
//! the binary parses its command line and hands over a [`BenchFlags`] (no clap here), and
//! [`BenchPlan::resolve`] turns that into settings nothing later has to look up again, and
//! nothing changes after (its fields are private). The run's name is a proposal until its
//! results directory is made ([`RunDir::create`] may add `-2`); everything named after the run
//! is asked of the plan with that [`RunDir`].

use pvfs_bench::launch::{self, Engine, Launcher, PairError, Runner};
use pvfs_bench::params::{
    IorVersion, ParamError, Preset, Violation, Workload, ior_args, mdtest_args, total_tasks,
};
use pvfs_bench::request::DropCaches;
use pvfs_bench::results::{self, RunDir, RunRecord, unix};
use pvfs_config::{Cluster, Role};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::BenchOutcome;

/// How to run this benchmark, as the command's flags say; `None` leaves a setting to the
/// cluster file's `[bench]`, then to the default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BenchFlags {
    pub preset: Option<Preset>,
    /// Tasks per client.
    pub procs: Option<u32>,
    /// `KEY=VALUE` parameter overrides, applied in order after the file's params.
    pub set: Vec<String>,
    pub engine: Option<Engine>,
    pub launcher: Option<Launcher>,
    /// The directory on the clients the run's own directory is made in.
    pub dir: Option<PathBuf>,
    /// Where the results directory is made.
    pub results: PathBuf,
    /// The sweep point this run is, `(key, value)`: `procs` sets the tasks per client, any
    /// other key is a parameter set after every `--set`.
    pub sweep_point: Option<(String, String)>,
    /// `--drop-caches`: whose caches are dropped before read and stat phases.
    pub drop_caches: Option<DropCaches>,
}

/// `--sweep KEY=V1,V2,…`: the key and its values, in order (empty values dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    pub key: String,
    pub values: Vec<String>,
}

impl Sweep {
    pub fn parse(text: &str) -> Result<Sweep, PlanError> {
        let (key, values) = text.split_once('=').ok_or_else(|| PlanError::SweepForm(text.to_owned()))?;
        let values: Vec<String> =
            values.split(',').map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect();
        if values.is_empty() {
            return Err(PlanError::SweepEmpty(text.to_owned()));
        }
        Ok(Sweep { key: key.trim().to_owned(), values })
    }

    /// `flags` for each point, in order.
    pub fn points(&self, flags: &BenchFlags) -> Vec<BenchFlags> {
        let point = |value: &String| BenchFlags {
            sweep_point: Some((self.key.clone(), value.clone())),
            ..flags.clone()
        };
        self.values.iter().map(point).collect()
    }
}

/// Why flags and a cluster file do not make a run. Each message is the one `pvfsctl bench`
/// prints after `error: `, its cause after `: `.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Pair(#[from] PairError),
    #[error("[bench] params in {}", .file.display())]
    FileParams {
        file: PathBuf,
        #[source]
        source: ParamError,
    },
    #[error("--set {0:?}: expected KEY=VALUE")]
    SetForm(String),
    #[error("--sweep {0:?}: expected KEY=V1,V2,…")]
    SweepForm(String),
    #[error("--sweep {0:?}: no values")]
    SweepEmpty(String),
    #[error("--sweep procs={0}: not a count")]
    SweepProcs(String),
    #[error("--sweep {key}={value}")]
    SweepValue {
        key: String,
        value: String,
        #[source]
        source: ParamError,
    },
    #[error("--set {item}")]
    Set {
        item: String,
        #[source]
        source: ParamError,
    },
    #[error(transparent)]
    Tasks(#[from] Violation),
    #[error("{clients} clients x {tasks_per_client} tasks")]
    Size {
        clients: usize,
        tasks_per_client: u32,
        #[source]
        source: Violation,
    },
    #[error("engine fio runs IOR-style presets (throughput, iops); metadata presets need engine builtin")]
    FioMetadata,
    #[error(
        "the io500 presets run on the built-in engine through the agents launcher (engine builtin, launcher \
         agents) or as the real io500 under mpirun (engine io500, launcher mpi), not engine {} under launcher {}",
        .0.engine(),
        .0.launcher()
    )]
    Io500Runner(Runner),
    #[error("engine io500 runs the io500 presets (--preset io500 or io500-scc), not preset {0}")]
    Io500Preset(Preset),
    #[error(
        "engine io500 runs the real io500, and {} does not say where it is: set [bench] io500 = PATH to the \
         program io500's prepare.sh built (the same path on every client)",
        .0.display()
    )]
    Io500Program(PathBuf),
    #[error(
        "engine io500 drops caches with io500's own drop-caches, on its ranks (the clients): use --drop-caches \
         clients, not all"
    )]
    Io500DropsOnClients,
    #[error("{}", pvfs_config::DROP_CACHES_UNDER_MPI)]
    DropCachesUnderMpi,
    /// The agents' `bench-dir` rule, said before any client is asked.
    #[error(
        "the benchmark directory {} {problem}; benchmarks run in the cluster's mount or a data directory (--dir, \
         [bench] mount)",
        .dir.display()
    )]
    Dir { dir: PathBuf, problem: &'static str },
}

/// A run, resolved from [`BenchFlags`] over the cluster file's `[bench]` over the defaults.
#[derive(Debug, Clone)]
pub struct BenchPlan {
    /// The engine and launcher, a valid pair.
    runner: Runner,
    /// Nodes serving the file system (for the report's scale-out and VM-limit columns).
    servers: usize,
    /// Nodes with role client (0 is refused only when the run starts: validation may ask).
    clients: usize,
    kind: String,
    vm_limit_mib: Option<f64>,
    sweep_point: Option<(String, String)>,
    preset: Preset,
    workload: Workload,
    tasks_per_client: u32,
    /// Where run directories are made on the clients (`MOUNT/pvfs-bench`), the same on each.
    client_base: PathBuf,
    /// The run's name before its results directory is made.
    name: String,
    /// Where the results directory is made.
    results_base: PathBuf,
    /// Whose caches are dropped before read and stat phases.
    drop_caches: DropCaches,
    /// Engine io500: the io500 program on the clients (`[bench] io500`).
    io500_program: Option<PathBuf>,
}

impl BenchPlan {
    /// Resolves `flags` over `cluster`, the run named for `now`. The checks run in the order
    /// the messages were written for: the engine and launcher, the preset, the parameters
    /// (the file's, then each `--set`), the run's size, then the engine against the workload.
    pub fn resolve(cluster: &Cluster, flags: &BenchFlags, now: SystemTime) -> Result<BenchPlan, PlanError> {
        let runner = launch::runner(
            flags.engine.or(cluster.bench.engine).unwrap_or_default(),
            flags.launcher.or(cluster.bench.launcher).unwrap_or_default(),
        )?;
        let preset = flags.preset.or(cluster.bench.preset).unwrap_or(Preset::Throughput);
        let mut workload = preset.workload();
        // The file's values as one set (they were checked so at load, against the file's preset).
        workload
            .set_all(cluster.bench.params.iter().map(|(key, value)| (key.as_str(), value.as_str())))
            .map_err(|source| PlanError::FileParams { file: cluster.source.clone(), source })?;
        for item in &flags.set {
            let (key, value) = item.split_once('=').ok_or_else(|| PlanError::SetForm(item.clone()))?;
            workload
                .set(key.trim(), value.trim())
                .map_err(|source| PlanError::Set { item: item.clone(), source })?;
        }
        let mut procs = flags.procs;
        match &flags.sweep_point {
            Some((key, value)) if key == "procs" => {
                let count = value.parse::<u32>().ok().filter(|n| *n > 0);
                procs = Some(count.ok_or_else(|| PlanError::SweepProcs(value.clone()))?);
            }
            Some((key, value)) => workload.set(key, value).map_err(|source| PlanError::SweepValue {
                key: key.clone(),
                value: value.clone(),
                source,
            })?,
            None => {}
        }
        workload.fix_signature(now.duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_secs()));
        let tasks_per_client = procs.or(cluster.bench.procs_per_client).unwrap_or(1);
        // The run's size bounds it too (a shared file's size, the files a phase makes).
        let clients = cluster.with_role(Role::Client).count().max(1);
        let total_tasks = total_tasks(tasks_per_client, clients)?;
        workload.check_run(total_tasks).map_err(|source| PlanError::Size {
            clients,
            tasks_per_client,
            source,
        })?;
        let name = run_name(&cluster.name, preset, now, flags.sweep_point.as_ref());
        let base =
            flags.dir.clone().or(cluster.bench.mount.clone()).unwrap_or_else(|| cluster.spec.mount().clone());
        let shown = base.to_string_lossy();
        if let Some(problem) = pvfs_host::paths::canonical_problem(&shown) {
            return Err(PlanError::Dir { dir: base, problem });
        }
        if pvfs_host::paths::is_system(&shown) {
            return Err(PlanError::Dir { dir: base, problem: "is in a system tree (or is /)" });
        }
        let servers = cluster.nodes.iter().filter(|n| n.roles.iter().any(|r| *r != Role::Client)).count();
        if runner.engine() == Engine::Fio
            && let Workload::Mdtest(_) = &workload
        {
            return Err(PlanError::FioMetadata);
        }
        let io500 = matches!(workload, Workload::Io500(_));
        if io500 && !matches!(runner, Runner::AgentsBuiltin | Runner::MpiIo500) {
            return Err(PlanError::Io500Runner(runner));
        }
        if runner == Runner::MpiIo500 && !io500 {
            return Err(PlanError::Io500Preset(preset));
        }
        let io500_program = match runner {
            Runner::MpiIo500 => Some(
                cluster.bench.io500.clone().ok_or_else(|| PlanError::Io500Program(cluster.source.clone()))?,
            ),
            _ => None,
        };
        let drop_caches = flags.drop_caches.or(cluster.bench.drop_caches).unwrap_or_default();
        match (runner, drop_caches) {
            (_, DropCaches::None) | (Runner::MpiIo500, DropCaches::Clients) => {}
            (Runner::MpiIo500, DropCaches::All) => return Err(PlanError::Io500DropsOnClients),
            _ if runner.launcher() == Launcher::Mpi => return Err(PlanError::DropCachesUnderMpi),
            _ => {}
        }
        Ok(BenchPlan {
            runner,
            servers,
            clients: cluster.with_role(Role::Client).count(),
            kind: cluster.kind.to_string(),
            vm_limit_mib: cluster.bench.vm_limit_mib.map(|l| l.0),
            sweep_point: flags.sweep_point.clone(),
            preset,
            workload,
            tasks_per_client,
            client_base: base.join("pvfs-bench"),
            name,
            results_base: flags.results.clone(),
            drop_caches,
            io500_program,
        })
    }

    /// Engine io500: the io500 program on the clients.
    pub fn io500_program(&self) -> Option<&Path> {
        self.io500_program.as_deref()
    }

    /// Whose caches are dropped before read and stat phases.
    pub fn drop_caches(&self) -> DropCaches {
        self.drop_caches
    }

    pub fn runner(&self) -> Runner {
        self.runner
    }

    pub fn preset(&self) -> Preset {
        self.preset
    }

    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    pub fn tasks_per_client(&self) -> u32 {
        self.tasks_per_client
    }

    /// Nodes with role client.
    pub fn clients(&self) -> usize {
        self.clients
    }

    /// The run's name as planned: `CLUSTER-PRESET-STAMP[-KEYVALUE]` (its results directory
    /// may add `-2`, …).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The directory the run's results directory is made in.
    pub fn results_base(&self) -> &Path {
        &self.results_base
    }

    /// The run's directory on the clients, the same path on each: named as its results
    /// directory is, so two runs in the same second never share one there either.
    pub fn client_dir(&self, run: &RunDir) -> PathBuf {
        self.client_base.join(run.name())
    }

    /// The IOR or mdtest command line this run stands for (IOR 4.1's flags), as the run's
    /// first line and commands.txt show it.
    pub fn equivalent(&self, run: &RunDir) -> String {
        let tasks = self.tasks_per_client.saturating_mul(self.clients as u32);
        let dir = self.client_dir(run);
        match &self.workload {
            Workload::Ior(p) => format!(
                "mpirun -np {tasks} ior {}",
                ior_args(p, IorVersion(4, 1, 0), &dir.join("ior").display().to_string()).join(" ")
            ),
            Workload::Mdtest(p) => {
                format!("mpirun -np {tasks} mdtest {}", mdtest_args(p, &dir.display().to_string()).join(" "))
            }
            Workload::Find(p) => pvfs_bench::io500::assemble::find_command(p, &dir),
            Workload::Io500(p) => {
                let knobs: Vec<String> =
                    p.options.changed().iter().map(|(k, v)| format!("{k} = {v}")).collect();
                format!(
                    "mpirun -np {tasks} {} io500.ini  # datadir = {}{}{}",
                    self.io500_program.as_deref().map_or("io500".into(), |p| p.display().to_string()),
                    dir.display(),
                    if knobs.is_empty() { "" } else { "; " },
                    knobs.join("; ")
                )
            }
        }
    }

    /// results.json's record of this run with `outcome`: `complete` is false for the record
    /// written when the run starts and for a run that was interrupted; `metrics` is how many
    /// seconds each node recorded.
    pub fn record(
        &self,
        run: &RunDir,
        outcome: &BenchOutcome,
        metrics: &BTreeMap<String, u64>,
        complete: bool,
    ) -> RunRecord {
        let o = outcome;
        RunRecord {
            version: results::VERSION,
            run: run.name().to_owned(),
            complete,
            preset: Some(self.preset.as_str().to_owned()),
            engine: Some(self.runner.engine()),
            launcher: Some(self.runner.launcher()),
            params: Some((&self.workload).into()),
            tasks_per_client: Some(self.tasks_per_client),
            kind: Some(self.kind.clone()),
            servers: Some(self.servers as u64),
            clients: Some(self.clients as u64),
            vm_limit_mib: self.vm_limit_mib,
            sweep: self
                .sweep_point
                .as_ref()
                .map(|(key, value)| results::Sweep { key: key.clone(), value: value.clone() }),
            drop_caches: (self.drop_caches != DropCaches::None).then_some(self.drop_caches),
            dir: Some(self.client_dir(run)),
            started: o.started.map(unix),
            finished: o.finished.map(unix),
            error: o.error.as_ref().map(ToString::to_string),
            summary: results::Summary { ior: o.ior.clone(), mdtest: o.mdtest.clone() },
            iterations: o.iterations.clone(),
            phases: o.phases.clone(),
            metrics_seconds: metrics.clone(),
            io500: o.io500.clone(),
        }
    }
}

/// `CLUSTER-PRESET-STAMP[-KEYVALUE]`: the stamp is `now` in UTC to the second, without the
/// separators a file name does not want.
fn run_name(
    cluster: &str,
    preset: Preset,
    now: SystemTime,
    sweep_point: Option<&(String, String)>,
) -> String {
    let stamp = humantime::format_rfc3339_seconds(now).to_string().replace([':', '-'], "");
    let mut name = format!("{cluster}-{}-{}", preset.as_str(), stamp.trim_end_matches('Z'));
    if let Some((key, value)) = sweep_point {
        name += &format!("-{key}{value}");
    }
    name
}

#[cfg(test)]
mod tests;
