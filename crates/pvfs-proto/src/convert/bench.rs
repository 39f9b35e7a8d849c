//! Benchmark workloads, phases and task results, wire ⇄ domain.

use crate::pb;
use crate::pb::bench_phase_request::Phase as P;
use pvfs_bench::io500::plan::{Io500Params, Options, Seeds};
use pvfs_bench::launch::{Engine, Launcher, PairError};
use pvfs_bench::params::{DataPacket, FindParams, IorParams, MdtestParams, Violation, Workload};
use pvfs_bench::phase::{IorPhase, MdtestPhase, Phase};
use pvfs_bench::request::{LaunchRequest, PhaseRequest};
use pvfs_bench::summary::TaskResult;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

// Field by field, both ways. `segments` is not defaulted: 0 is refused by `Workload::check`,
// naming the field.
impl From<&IorParams> for pb::IorWorkload {
    fn from(p: &IorParams) -> pb::IorWorkload {
        pb::IorWorkload {
            write: p.write,
            read: p.read,
            odirect: p.odirect,
            reorder: p.reorder,
            iterations: p.iterations,
            transfer: p.transfer,
            block: p.block,
            segments: p.segments,
            file_per_proc: p.file_per_proc,
            random: p.random,
            fsync: p.fsync,
            packet: p.packet.to_string(),
            deadline: p.deadline,
            wear_out: p.wear_out,
            signature: p.signature,
            verify: p.verify,
            keep: p.keep,
        }
    }
}

impl From<IorParams> for pb::IorWorkload {
    fn from(p: IorParams) -> pb::IorWorkload {
        (&p).into()
    }
}

/// An IOR workload from the wire: field by field, the data packet by name ("" is IOR's
/// default, as an older coordinator sends it).
fn ior_from(w: pb::IorWorkload) -> Result<IorParams, RequestError> {
    let packet = if w.packet.is_empty() {
        DataPacket::Timestamp
    } else {
        DataPacket::parse(&w.packet).ok_or_else(|| RequestError::Workload {
            field: "workload.ior.packet".to_owned(),
            violation: Violation::new(
                "packet",
                format!("packet {:?} is not timestamp, offset, incompressible or random", w.packet),
            ),
        })?
    };
    Ok(IorParams {
        write: w.write,
        read: w.read,
        odirect: w.odirect,
        reorder: w.reorder,
        iterations: w.iterations,
        transfer: w.transfer,
        block: w.block,
        segments: w.segments,
        file_per_proc: w.file_per_proc,
        random: w.random,
        fsync: w.fsync,
        packet,
        deadline: w.deadline,
        wear_out: w.wear_out,
        signature: w.signature,
        verify: w.verify,
        keep: w.keep,
    })
}
same_fields!(
    MdtestParams,
    pb::MdtestWorkload,
    [
        create,
        stat,
        read,
        remove,
        iterations,
        items,
        depth,
        branch,
        leaf_only,
        unique_dir,
        files_only,
        per_task,
        stride,
        write_bytes,
        read_bytes,
        verify,
        seed,
        deadline,
        sync,
        fsync
    ]
);

fn find_to(p: &FindParams) -> pb::FindWorkload {
    pb::FindWorkload {
        changed_since: p.changed_since,
        size: p.size,
        name: p.name.clone(),
        newer: p.newer.clone(),
    }
}

/// A find from the wire: its name pattern is the only part that can be malformed (checked with
/// the workload); the name is bounded as a file name is.
fn find_from(w: pb::FindWorkload) -> Result<FindParams, RequestError> {
    if w.name.len() > 255 || w.name.contains('\0') {
        return Err(RequestError::Workload {
            field: "workload.find.name".to_owned(),
            violation: Violation::new("name", "a name pattern is at most 255 bytes, without NUL"),
        });
    }
    Ok(FindParams { changed_since: w.changed_since, size: w.size, name: w.name, newer: w.newer })
}

fn phase_to(phase: Phase) -> P {
    match phase {
        Phase::Ior(IorPhase::Write) => P::IorWrite,
        Phase::Ior(IorPhase::Read) => P::IorRead,
        Phase::IorCleanup => P::IorCleanup,
        Phase::Mdtest(m) => match m {
            MdtestPhase::TreeCreate => P::MdTreeCreate,
            MdtestPhase::DirCreate => P::MdDirCreate,
            MdtestPhase::DirStat => P::MdDirStat,
            MdtestPhase::DirRemove => P::MdDirRemove,
            MdtestPhase::FileCreate => P::MdFileCreate,
            MdtestPhase::FileStat => P::MdFileStat,
            MdtestPhase::FileRead => P::MdFileRead,
            MdtestPhase::FileRemove => P::MdFileRemove,
            MdtestPhase::TreeRemove => P::MdTreeRemove,
        },
        Phase::Find => P::Find,
    }
}

/// A benchmark request from the wire this agent refuses, before anything runs; each names the
/// request's field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("no workload in the request")]
    NoWorkload,
    /// A workload field out of its bounds: the field's wire name, and pvfs-bench's refusal.
    #[error("{field}: {violation}")]
    Workload { field: String, violation: Violation },
    #[error("unknown benchmark phase {0}")]
    UnknownPhase(i32),
    #[error("no benchmark phase given")]
    NoPhase,
    #[error("engine = {0}: unknown benchmark engine")]
    UnknownEngine(i32),
    #[error("program = {0}: unknown program")]
    UnknownProgram(i32),
    /// An engine its launcher cannot run (IOR started by the agents, fio under mpirun): the
    /// rule `pvfsctl bench` and `validate` apply, applied again here.
    #[error("engine {engine} under launcher {launcher}: {source}")]
    Pair {
        engine: Engine,
        launcher: Launcher,
        #[source]
        source: PairError,
    },
    #[error("{field} = {dir:?}: must be an absolute path of plain names (no .., no .)")]
    DirNotPlain { field: &'static str, dir: String },
    #[error(
        "{field} = {dir:?}: a benchmark runs in its own directory, MOUNT/pvfs-bench/RUN (or an IO500 run's \
         RUN/ior-easy, ior-hard, mdtest-easy, mdtest-hard, timestamp); the agent makes and writes files only there"
    )]
    DirNotARun { field: &'static str, dir: String },
    #[error("tasks = {0}: a client runs 1 to {max} tasks (a thread each)", max = pvfs_bench::params::limits::MAX_TASKS_PER_CLIENT)]
    Tasks(u32),
    #[error("total_tasks = {0}: a run has 1 to {max} tasks", max = pvfs_bench::params::limits::MAX_TOTAL_TASKS)]
    TotalTasks(u32),
    #[error(
        "first_task = {first}: tasks {first}..{} are not a share of total_tasks = {total}",
        end.map_or_else(|| "(past 2^32)".to_owned(), |e| e.to_string())
    )]
    NotAShare { first: u32, end: Option<u32>, total: u32 },
    #[error(
        "job_tag = {0:?}: a task thread's name is 1 to {max} letters, digits, '.', '_' or '-', not starting with '-'",
        max = pvfs_bench::request::MAX_JOB_TAG
    )]
    JobTag(String),
    #[error("tasks_per_client = {0}: a client runs at most {max} tasks", max = pvfs_bench::params::limits::MAX_TASKS_PER_CLIENT)]
    TasksPerClient(u32),
    #[error("iteration = {iteration}: the workload has {iterations} iterations")]
    Iteration { iteration: u32, iterations: u32 },
    #[error("hosts: no hosts to run on")]
    NoHosts,
    #[error("tasks_per_host = 0: tasks per host must be at least 1")]
    NoTasksPerHost,
    #[error("tasks_per_host = {tasks_per_host} on {hosts} hosts: {violation}")]
    RunSize { tasks_per_host: u32, hosts: usize, violation: Violation },
    #[error("hosts: client {name}: {host:?} is not a host name or address mpirun can use")]
    BadHost { name: String, host: String },
    #[error("hosts: a client name of {0} bytes is not a node name")]
    LongClientName(usize),
    #[error("workload.find: a find runs through the agents launcher, not under mpirun")]
    FindUnderMpi,
    #[error(
        "workload.io500.program = {0:?}: the io500 program is given by its absolute path of plain names, and its \
         file is named io500"
    )]
    Io500Program(String),
    /// The real io500 runs only as engine io500, and engine io500 runs only it.
    #[error("program = {program}: {why}")]
    Io500Pair { program: Engine, why: &'static str },
}

fn phase_from(value: i32) -> Result<Phase, RequestError> {
    Ok(match P::try_from(value).map_err(|_| RequestError::UnknownPhase(value))? {
        P::IorWrite => Phase::Ior(IorPhase::Write),
        P::IorRead => Phase::Ior(IorPhase::Read),
        P::IorCleanup => Phase::IorCleanup,
        P::MdTreeCreate => Phase::Mdtest(MdtestPhase::TreeCreate),
        P::MdDirCreate => Phase::Mdtest(MdtestPhase::DirCreate),
        P::MdDirStat => Phase::Mdtest(MdtestPhase::DirStat),
        P::MdDirRemove => Phase::Mdtest(MdtestPhase::DirRemove),
        P::MdFileCreate => Phase::Mdtest(MdtestPhase::FileCreate),
        P::MdFileStat => Phase::Mdtest(MdtestPhase::FileStat),
        P::MdFileRead => Phase::Mdtest(MdtestPhase::FileRead),
        P::MdFileRemove => Phase::Mdtest(MdtestPhase::FileRemove),
        P::MdTreeRemove => Phase::Mdtest(MdtestPhase::TreeRemove),
        P::Find => Phase::Find,
        P::Unspecified => return Err(RequestError::NoPhase),
    })
}

/// The wear-out's answer for a client's running phase (see `Agent.BenchWearOut`).
pub fn wear_out_request_to(iteration: u32, phase: Phase, pairs: u64) -> pb::BenchWearOutRequest {
    pb::BenchWearOutRequest { iteration, phase: phase_to(phase) as i32, pairs }
}

/// The wear-out's answer from the wire: the iteration, the phase (one of IOR's) and the count.
pub fn wear_out_request_from(req: &pb::BenchWearOutRequest) -> Result<(u32, Phase, u64), RequestError> {
    Ok((req.iteration, phase_from(req.phase)?, req.pairs))
}

/// `engine`, when `launcher` can run it (the one pair rule, [`pvfs_bench::launch::runner`]).
fn runs(engine: Engine, launcher: Launcher) -> Result<Engine, RequestError> {
    pvfs_bench::launch::runner(engine, launcher).map(|_| engine).map_err(|source| RequestError::Pair {
        engine,
        launcher,
        source,
    })
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

fn time(ns: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(ns)
}

/// The wire request for one client's phase, to start at `start_at`.
pub fn phase_request_to(req: &PhaseRequest, start_at: SystemTime) -> pb::BenchPhaseRequest {
    pb::BenchPhaseRequest {
        // An IO500 run sends each stage's own workload; the whole is no client's to run, and
        // goes as none, which the agent refuses.
        workload: match &req.workload {
            Workload::Ior(p) => Some(pb::bench_phase_request::Workload::Ior(p.into())),
            Workload::Mdtest(p) => Some(pb::bench_phase_request::Workload::Mdtest(p.into())),
            Workload::Find(p) => Some(pb::bench_phase_request::Workload::Find(find_to(p))),
            Workload::Io500(_) => None,
        },
        dir: req.dir.display().to_string(),
        first_task: req.first_task,
        tasks: req.tasks,
        total_tasks: req.total_tasks,
        tasks_per_client: req.tasks_per_client,
        iteration: req.iteration,
        phase: phase_to(req.phase) as i32,
        start_at_unix_ns: nanos(start_at),
        engine: match req.engine {
            Engine::Builtin => pb::bench_phase_request::Engine::Builtin,
            Engine::Fio => pb::bench_phase_request::Engine::Fio,
            Engine::Ior => pb::bench_phase_request::Engine::Ior,
            Engine::Io500 => pb::bench_phase_request::Engine::Io500,
        } as i32,
        stop_after: req.stop_after.unwrap_or(0),
        job_tag: req.job_tag.clone().unwrap_or_default(),
    }
}

/// The wire's name for a workload's field: `workload.ior.transfer`.
fn workload_field(workload: &Workload, violation: Violation) -> RequestError {
    let kind = match workload {
        Workload::Ior(_) => "ior",
        Workload::Mdtest(_) => "mdtest",
        Workload::Find(_) => "find",
        Workload::Io500(_) => "io500",
    };
    let field = match violation.field {
        // The run's size is the request's own fields, not the workload's.
        "tasks" => "total_tasks".to_owned(),
        field => format!("workload.{kind}.{field}"),
    };
    RequestError::Workload { field, violation }
}

/// A benchmark directory from the wire: absolute, plain components only, and a run's own
/// directory, `…/pvfs-bench/RUN`, as every coordinator names it. The engine creates and
/// writes files there as root, so a request cannot point it at `/etc` or climb out with `..`.
fn bench_dir(field: &'static str, dir: &str) -> Result<PathBuf, RequestError> {
    let path = PathBuf::from(dir);
    let plain = path.components().skip(1).all(|c| matches!(c, Component::Normal(_)));
    let named = |p: Option<&Path>, name: &str| p.and_then(Path::file_name).is_some_and(|n| n == name);
    // A run's own directory, or one of an IO500 run's four below it (each family's files).
    let family = path.file_name().and_then(|n| n.to_str()).is_some_and(pvfs_bench::io500::plan::is_stage_dir);
    let in_run_dir = named(path.parent(), "pvfs-bench")
        || (family && named(path.parent().and_then(Path::parent), "pvfs-bench"));
    if !path.is_absolute() || !plain || dir.len() > 4096 || dir.contains('\0') {
        return Err(RequestError::DirNotPlain { field, dir: dir.to_owned() });
    }
    if !in_run_dir {
        return Err(RequestError::DirNotARun { field, dir: dir.to_owned() });
    }
    Ok(path)
}

/// A phase request from the wire, and when to start it. Every field is checked before anything
/// runs, with checked arithmetic (a request may say anything): the workload's own bounds, this
/// client's share of the run, the run's size, the iteration, the directory. Each refusal names
/// the field.
pub fn phase_request_from(
    req: pb::BenchPhaseRequest,
) -> Result<(PhaseRequest, Option<SystemTime>), RequestError> {
    use pvfs_bench::params::limits::{MAX_TASKS_PER_CLIENT, MAX_TOTAL_TASKS};
    let workload = match req.workload.ok_or(RequestError::NoWorkload)? {
        pb::bench_phase_request::Workload::Ior(p) => Workload::Ior(ior_from(p)?),
        pb::bench_phase_request::Workload::Mdtest(p) => Workload::Mdtest(p.into()),
        pb::bench_phase_request::Workload::Find(p) => Workload::Find(find_from(p)?),
    };
    workload.check().map_err(|v| workload_field(&workload, v))?;
    if req.tasks == 0 || req.tasks > MAX_TASKS_PER_CLIENT {
        return Err(RequestError::Tasks(req.tasks));
    }
    if req.total_tasks == 0 || req.total_tasks > MAX_TOTAL_TASKS {
        return Err(RequestError::TotalTasks(req.total_tasks));
    }
    match req.first_task.checked_add(req.tasks) {
        Some(end) if end <= req.total_tasks => {}
        end => {
            return Err(RequestError::NotAShare { first: req.first_task, end, total: req.total_tasks });
        }
    }
    if req.tasks_per_client > MAX_TASKS_PER_CLIENT {
        return Err(RequestError::TasksPerClient(req.tasks_per_client));
    }
    let iterations = workload.iterations();
    if req.iteration >= iterations {
        return Err(RequestError::Iteration { iteration: req.iteration, iterations });
    }
    workload.check_run(req.total_tasks).map_err(|v| workload_field(&workload, v))?;
    let dir = bench_dir("dir", &req.dir)?;
    let start = (req.start_at_unix_ns > 0).then(|| time(req.start_at_unix_ns));
    Ok((
        PhaseRequest {
            engine: runs(
                match pb::bench_phase_request::Engine::try_from(req.engine) {
                    Ok(pb::bench_phase_request::Engine::Builtin) => Engine::Builtin,
                    Ok(pb::bench_phase_request::Engine::Fio) => Engine::Fio,
                    Ok(pb::bench_phase_request::Engine::Ior) => Engine::Ior,
                    Ok(pb::bench_phase_request::Engine::Io500) => Engine::Io500,
                    Err(_) => return Err(RequestError::UnknownEngine(req.engine)),
                },
                Launcher::Agents,
            )?,
            workload,
            dir,
            first_task: req.first_task,
            tasks: req.tasks,
            total_tasks: req.total_tasks,
            tasks_per_client: req.tasks_per_client.max(1),
            iteration: req.iteration,
            phase: phase_from(req.phase)?,
            stop_after: (req.stop_after > 0).then_some(req.stop_after),
            job_tag: match req.job_tag.as_str() {
                "" => None,
                tag if pvfs_bench::request::valid_job_tag(tag) => Some(tag.to_owned()),
                tag => return Err(RequestError::JobTag(tag.to_owned())),
            },
        },
        start,
    ))
}

pub fn launch_request_to(req: &LaunchRequest) -> pb::LaunchRequest {
    pb::LaunchRequest {
        // An IO500 goes as its knobs: the real io500's (`--engine io500`); the built-in
        // engine's IO500 runs through the agents launcher, and the agent refuses it here.
        workload: match &req.workload {
            Workload::Ior(p) => Some(pb::launch_request::Workload::Ior(p.into())),
            Workload::Mdtest(p) => Some(pb::launch_request::Workload::Mdtest(p.into())),
            Workload::Find(p) => Some(pb::launch_request::Workload::Find(find_to(p))),
            Workload::Io500(p) => Some(pb::launch_request::Workload::Io500(io500_to(req, &p.options))),
        },
        dir: req.dir.display().to_string(),
        hosts: req
            .clients
            .iter()
            .map(|(name, host)| pb::LaunchHost { name: name.clone(), host: host.clone() })
            .collect(),
        tasks_per_host: req.tasks_per_client,
        program: match req.engine {
            Engine::Builtin => pb::launch_request::Program::Builtin,
            Engine::Ior => pb::launch_request::Program::Ior,
            Engine::Fio => pb::launch_request::Program::Fio,
            Engine::Io500 => pb::launch_request::Program::Io500,
        } as i32,
        mpi_ssh: req.mpi_ssh,
    }
}

fn io500_to(req: &LaunchRequest, o: &Options) -> pb::Io500Workload {
    pb::Io500Workload {
        stonewall_s: o.stonewall,
        scc: o.scc,
        ior_easy_transfer: o.ior_easy_transfer,
        ior_easy_block: o.ior_easy_block,
        ior_easy_file_per_proc: o.ior_easy_file_per_proc,
        ior_hard_segments: o.ior_hard_segments,
        mdtest_easy_files: o.mdtest_easy_files,
        mdtest_hard_files: o.mdtest_hard_files,
        program: req.io500_program.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
        drop_caches: req.drop_caches,
    }
}

/// An IO500 from the wire: knobs above zero, and the program's path as the agent will look at
/// it (absolute, plain names, the file named `io500`: not any program a caller names). The
/// agent checks the file itself (its owner and modes) before it runs it.
fn io500_from(w: pb::Io500Workload) -> Result<(Options, PathBuf, bool), RequestError> {
    let zero = [
        ("stonewall_s", u64::from(w.stonewall_s)),
        ("ior_easy_transfer", w.ior_easy_transfer),
        ("ior_easy_block", w.ior_easy_block),
        ("ior_hard_segments", u64::from(w.ior_hard_segments)),
        ("mdtest_easy_files", w.mdtest_easy_files),
        ("mdtest_hard_files", w.mdtest_hard_files),
    ]
    .into_iter()
    .find(|(_, v)| *v == 0);
    if let Some((name, _)) = zero {
        return Err(RequestError::Workload {
            field: format!("workload.io500.{name}"),
            violation: Violation::new(name, "must be above 0"),
        });
    }
    let program = PathBuf::from(&w.program);
    let plain = program.is_absolute()
        && program.components().skip(1).all(|c| matches!(c, Component::Normal(_)))
        && !w.program.ends_with('/')
        && w.program.len() <= 4096
        && !w.program.chars().any(char::is_control);
    if !plain || program.file_name().is_none_or(|n| n != "io500") {
        return Err(RequestError::Io500Program(w.program));
    }
    let options = Options {
        stonewall: w.stonewall_s,
        scc: w.scc,
        ior_easy_transfer: w.ior_easy_transfer,
        ior_easy_block: w.ior_easy_block,
        ior_easy_file_per_proc: w.ior_easy_file_per_proc,
        ior_hard_segments: w.ior_hard_segments,
        mdtest_easy_files: w.mdtest_easy_files,
        mdtest_hard_files: w.mdtest_hard_files,
    };
    Ok((options, program, w.drop_caches))
}

/// A launch request from the wire, checked before anything runs: the workload, the run's size
/// (hosts x tasks per host, checked), an absolute run directory, and host names mpirun can
/// take (no spaces, nothing a hostfile line could be split on). Each refusal names the field.
pub fn launch_request_from(req: pb::LaunchRequest) -> Result<LaunchRequest, RequestError> {
    let (mut io500_program, mut drop_caches) = (None, false);
    let workload = match req.workload.ok_or(RequestError::NoWorkload)? {
        pb::launch_request::Workload::Ior(p) => Workload::Ior(ior_from(p)?),
        pb::launch_request::Workload::Mdtest(p) => Workload::Mdtest(p.into()),
        pb::launch_request::Workload::Find(_) => return Err(RequestError::FindUnderMpi),
        pb::launch_request::Workload::Io500(w) => {
            let (options, program, drop) = io500_from(w)?;
            (io500_program, drop_caches) = (Some(program), drop);
            Workload::Io500(Io500Params { options, seeds: Seeds::default() })
        }
    };
    workload.check().map_err(|v| workload_field(&workload, v))?;
    let dir = bench_dir("dir", &req.dir)?;
    if req.hosts.is_empty() {
        return Err(RequestError::NoHosts);
    }
    if req.tasks_per_host == 0 {
        return Err(RequestError::NoTasksPerHost);
    }
    let ranks =
        pvfs_bench::params::total_tasks(req.tasks_per_host, req.hosts.len()).map_err(|violation| {
            RequestError::RunSize { tasks_per_host: req.tasks_per_host, hosts: req.hosts.len(), violation }
        })?;
    workload.check_run(ranks).map_err(|v| workload_field(&workload, v))?;
    for h in &req.hosts {
        let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':');
        // 253: the longest DNS name; an IPv6 address is shorter.
        if h.host.is_empty() || h.host.len() > 253 || !h.host.chars().all(fine) {
            return Err(RequestError::BadHost { name: h.name.clone(), host: h.host.clone() });
        }
        if h.name.len() > 253 {
            return Err(RequestError::LongClientName(h.name.len()));
        }
    }
    let engine = runs(
        match pb::launch_request::Program::try_from(req.program) {
            Ok(pb::launch_request::Program::Builtin) => Engine::Builtin,
            Ok(pb::launch_request::Program::Ior) => Engine::Ior,
            Ok(pb::launch_request::Program::Fio) => Engine::Fio,
            Ok(pb::launch_request::Program::Io500) => Engine::Io500,
            Err(_) => return Err(RequestError::UnknownProgram(req.program)),
        },
        Launcher::Mpi,
    )?;
    match (engine, &workload) {
        (Engine::Io500, Workload::Io500(_)) => {}
        (Engine::Io500, _) => {
            return Err(RequestError::Io500Pair {
                program: engine,
                why: "the io500 program runs an IO500 only",
            });
        }
        (_, Workload::Io500(_)) => {
            return Err(RequestError::Io500Pair {
                program: engine,
                why: "an IO500 under mpirun is the real io500's (program PROGRAM_IO500)",
            });
        }
        _ => {}
    }
    Ok(LaunchRequest {
        engine,
        workload,
        dir,
        clients: req.hosts.into_iter().map(|h| (h.name, h.host)).collect(),
        tasks_per_client: req.tasks_per_host,
        mpi_ssh: req.mpi_ssh,
        io500_program,
        drop_caches,
    })
}

/// A client's end of a phase on the wire: its tasks' results without their histograms, and the
/// histograms merged once (see `BenchPhaseDone`), and the job id the node's Lustre client gave
/// their I/O (or why it gave none pvfs knows).
pub fn phase_done_to(tasks: &[TaskResult], job_id: &Result<String, String>) -> pb::BenchPhaseDone {
    let merged = pvfs_bench::latency::merge(tasks.iter().map(|t| t.latency.as_slice())).buckets();
    let (job_id, job_id_note) = match job_id {
        Ok(id) => (id.clone(), String::new()),
        Err(why) => (String::new(), why.clone()),
    };
    pb::BenchPhaseDone {
        job_id,
        job_id_note,
        tasks: tasks
            .iter()
            .map(|t| pb::TaskResult { latency_ns: vec![], latency_count: vec![], ..t.into() })
            .collect(),
        latency_ns: merged.iter().map(|(ns, _)| *ns).collect(),
        latency_count: merged.iter().map(|(_, n)| *n).collect(),
    }
}

/// A client's tasks from the wire: its merged histogram is carried on its first task (what
/// is recorded is per client and per phase, so where a client's operations sit among its
/// tasks changes nothing); and the client's job id, or why it has none.
pub fn phase_done_from(done: pb::BenchPhaseDone) -> (Vec<TaskResult>, Result<String, String>) {
    let mut tasks: Vec<TaskResult> = done.tasks.into_iter().map(TaskResult::from).collect();
    if let Some(first) = tasks.first_mut() {
        first.latency.extend(done.latency_ns.into_iter().zip(done.latency_count));
    }
    let job_id = match (done.job_id, done.job_id_note) {
        (id, _) if !id.is_empty() => Ok(id),
        (_, why) if !why.is_empty() => Err(why),
        _ => Err("the client's agent did not say (an agent older than job ids)".to_owned()),
    };
    (tasks, job_id)
}

impl From<&TaskResult> for pb::TaskResult {
    fn from(r: &TaskResult) -> pb::TaskResult {
        pb::TaskResult {
            task: r.task,
            start_unix_ns: nanos(r.start),
            end_unix_ns: nanos(r.end),
            bytes: r.bytes,
            ops: r.ops,
            error: r.error.clone().unwrap_or_default(),
            rdwr_start_unix_ns: r.rdwr.map_or(0, |(a, _)| nanos(a)),
            rdwr_end_unix_ns: r.rdwr.map_or(0, |(_, b)| nanos(b)),
            latency_ns: r.latency.iter().map(|(ns, _)| *ns).collect(),
            latency_count: r.latency.iter().map(|(_, n)| *n).collect(),
            found: r.found,
        }
    }
}

impl From<pb::TaskResult> for TaskResult {
    fn from(r: pb::TaskResult) -> TaskResult {
        TaskResult {
            task: r.task,
            start: time(r.start_unix_ns),
            end: time(r.end_unix_ns),
            bytes: r.bytes,
            ops: r.ops,
            error: (!r.error.is_empty()).then_some(r.error),
            rdwr: (r.rdwr_start_unix_ns != 0).then(|| (time(r.rdwr_start_unix_ns), time(r.rdwr_end_unix_ns))),
            latency: r.latency_ns.into_iter().zip(r.latency_count).collect(),
            found: r.found,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_bench::params::Preset;

    /// io500's find travels whole (its change time, size and pattern) and comes back the same;
    /// a pattern pfind would read as a regular expression, or a name no file could have, is
    /// refused naming the field; under mpirun it is refused.
    #[test]
    fn a_find_round_trips_and_its_pattern_is_checked() {
        let find = FindParams {
            changed_since: 1_800_000_000,
            size: Some(3901),
            name: "*01*".into(),
            newer: "timestamp/test-dir.0-0/mdtest_tree.0".into(),
        };
        let req = PhaseRequest {
            job_tag: None,
            stop_after: None,
            engine: Engine::Builtin,
            workload: Workload::Find(find.clone()),
            dir: "/mnt/gv0/pvfs-bench/run".into(),
            first_task: 0,
            tasks: 2,
            total_tasks: 4,
            tasks_per_client: 2,
            iteration: 0,
            phase: Phase::Find,
        };
        let at = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let (back, _) = phase_request_from(phase_request_to(&req, at)).unwrap();
        assert_eq!(back, req);
        for (name, says) in [("file[0-9]", "pfind reads [ ] ^ $"), ("a\0b", "without NUL")] {
            let bad = PhaseRequest {
                workload: Workload::Find(FindParams { name: name.into(), ..find.clone() }),
                ..req.clone()
            };
            let err = phase_request_from(phase_request_to(&bad, at)).unwrap_err().to_string();
            assert!(err.starts_with("workload.find.name:") && err.contains(says), "{err}");
        }
        let launch = LaunchRequest {
            engine: Engine::Builtin,
            workload: Workload::Find(find),
            dir: "/mnt/gv0/pvfs-bench/run".into(),
            clients: vec![("n1".into(), "10.0.0.1".into())],
            tasks_per_client: 1,
            mpi_ssh: false,
            io500_program: None,
            drop_caches: false,
        };
        let err = launch_request_from(launch_request_to(&launch)).unwrap_err().to_string();
        assert_eq!(err, "workload.find: a find runs through the agents launcher, not under mpirun");
    }

    #[test]
    fn requests_and_results_round_trip() {
        // The IO500's stages travel as their own workloads (the whole is none: refused).
        for preset in Preset::ALL.into_iter().filter(|p| !matches!(p.workload(), Workload::Io500(_))) {
            let req = PhaseRequest {
                job_tag: None,
                stop_after: None,
                engine: Engine::Fio,
                workload: preset.workload(),
                dir: "/mnt/gv0/pvfs-bench/run".into(),
                first_task: 4,
                tasks: 4,
                total_tasks: 8,
                tasks_per_client: 4,
                iteration: 1,
                phase: match preset.workload() {
                    Workload::Ior(_) => Phase::Ior(IorPhase::Read),
                    Workload::Mdtest(_) => Phase::Mdtest(MdtestPhase::FileStat),
                    Workload::Find(_) | Workload::Io500(_) => Phase::Find,
                },
            };
            let at = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
            let (back, start) = phase_request_from(phase_request_to(&req, at)).unwrap();
            assert_eq!((back, start), (req.clone(), Some(at)));
            // IOR is an MPI program: the agents cannot start a share of it.
            let ior = PhaseRequest { engine: Engine::Ior, ..req };
            let err = phase_request_from(phase_request_to(&ior, at)).unwrap_err().to_string();
            assert!(
                err.starts_with("engine ior under launcher agents: engine \"ior\" runs under launcher"),
                "{err}"
            );
        }
        let r = TaskResult {
            task: 3,
            start: time(5),
            end: time(9),
            bytes: 10,
            ops: 2,
            error: Some("write …: No space left on device".into()),
            rdwr: None,
            latency: vec![],
            found: 7,
        };
        assert_eq!(TaskResult::from(pb::TaskResult::from(&r)), r);
        let r = TaskResult {
            error: None,
            rdwr: Some((time(6), time(8))),
            latency: vec![(900, 1), (1100, 1)],
            ..r
        };
        assert_eq!(TaskResult::from(pb::TaskResult::from(&r)), r);
    }

    /// 4,096 tasks (the most a client runs), each with a wide histogram: the client's end of
    /// the phase stays far below gRPC's 4 MiB, and its merged histogram is the tasks'.
    #[test]
    fn a_clients_histograms_travel_merged_once() {
        use prost::Message;
        let tasks: Vec<TaskResult> = (0..4096u32)
            .map(|task| {
                let mut r = pvfs_bench::latency::Recorder::new();
                (0..300u64).for_each(|i| r.record(10_000 + i * i * 97 + u64::from(task)));
                TaskResult { latency: r.buckets(), ..TaskResult::begun(task, time(1)) }
            })
            .collect();
        let wire = phase_done_to(&tasks, &Ok("pvabcdew0.0".into()));
        assert!(wire.encoded_len() < 1 << 20, "{} bytes", wire.encoded_len());
        let (back, job_id) = phase_done_from(wire);
        assert_eq!(job_id.as_deref(), Ok("pvabcdew0.0"));
        assert_eq!(back.len(), 4096);
        let merged =
            |t: &[TaskResult]| pvfs_bench::latency::merge(t.iter().map(|t| t.latency.as_slice())).buckets();
        assert_eq!(merged(&back), merged(&tasks));
        assert!(back[1..].iter().all(|t| t.latency.is_empty()));
    }

    /// A client's job id, or why it has none, comes back as it went; an agent that says
    /// neither (one older than job ids) is told as such.
    #[test]
    fn a_clients_job_id_or_why_none_travels_with_its_end() {
        let none = Err("no Lustre client on this node".to_owned());
        assert_eq!(phase_done_from(phase_done_to(&[], &none)).1, none);
        let silent = phase_done_from(pb::BenchPhaseDone::default()).1;
        assert!(silent.is_err_and(|why| why.contains("did not say")));
    }

    #[test]
    fn an_io500_launch_carries_its_knobs_program_and_drops() {
        let mut options = Options::default();
        options.set("debug.stonewall-time", "30").unwrap();
        options.set("ior-easy.filePerProc", "false").unwrap();
        options.set("mdtest-hard.n", "777").unwrap();
        let req = LaunchRequest {
            engine: Engine::Io500,
            workload: Workload::Io500(Io500Params { options, seeds: Seeds::default() }),
            dir: "/mnt/gv0/pvfs-bench/run".into(),
            clients: vec![("c1".into(), "10.0.0.5".into())],
            tasks_per_client: 2,
            mpi_ssh: false,
            io500_program: Some("/opt/io500/io500".into()),
            drop_caches: true,
        };
        assert_eq!(launch_request_from(launch_request_to(&req)).unwrap(), req);
        // The knobs alone travel: seeds are io500's own to draw.
        let seeded = LaunchRequest {
            workload: Workload::Io500(Io500Params { seeds: Seeds::from(7), ..Io500Params::default() }),
            ..req.clone()
        };
        let back = launch_request_from(launch_request_to(&seeded)).unwrap();
        assert_eq!(back.workload, Workload::Io500(Io500Params::default()));
        let ior = LaunchRequest { workload: Preset::Throughput.workload(), ..req.clone() };
        let err = launch_request_from(launch_request_to(&ior)).unwrap_err().to_string();
        assert_eq!(err, "program = io500: the io500 program runs an IO500 only");
    }

    #[test]
    fn launch_requests_round_trip_and_bad_hosts_are_refused() {
        let req = LaunchRequest {
            engine: Engine::Ior,
            workload: Preset::Metadata.workload(),
            dir: "/mnt/gv0/pvfs-bench/run".into(),
            clients: vec![("c1".into(), "10.0.0.5".into()), ("c2".into(), "client2.example".into())],
            tasks_per_client: 4,
            mpi_ssh: true,
            io500_program: None,
            drop_caches: false,
        };
        assert_eq!(launch_request_from(launch_request_to(&req)).unwrap(), req);
        // fio is no MPI program: the agent applies the pair rule `bench` applies.
        let fio = LaunchRequest { engine: Engine::Fio, ..req.clone() };
        let err = launch_request_from(launch_request_to(&fio)).unwrap_err().to_string();
        assert!(
            err.starts_with("engine fio under launcher mpi: engine \"fio\" is not an MPI program"),
            "{err}"
        );
        let mut wire = launch_request_to(&req);
        wire.hosts[1].host = "c2 slots=99".into();
        let err = launch_request_from(wire).unwrap_err().to_string();
        assert!(err.contains("client c2") && err.contains("not a host name"), "{err}");
        let mut wire = launch_request_to(&req);
        wire.dir = "relative".into();
        assert!(launch_request_from(wire).unwrap_err().to_string().contains("must be an absolute path"));
        let mut wire = launch_request_to(&req);
        wire.tasks_per_host = u32::MAX;
        let err = launch_request_from(wire).unwrap_err().to_string();
        assert!(
            err.starts_with("tasks_per_host = 4294967295 on 2 hosts: procs 4294967295 is more than 4096"),
            "{err}"
        );
    }

    /// What a hostile coordinator might send: sizes that would abort the agent on allocation,
    /// sums and products that wrap in release builds. Each is refused naming the field.
    #[test]
    fn oversized_and_overflowing_requests_name_the_field() {
        let good = phase_request_to(
            &PhaseRequest {
                job_tag: None,
                stop_after: None,
                engine: Engine::Builtin,
                workload: Preset::Throughput.workload(),
                dir: "/mnt/x/pvfs-bench/run".into(),
                first_task: 0,
                tasks: 2,
                total_tasks: 4,
                tasks_per_client: 2,
                iteration: 0,
                phase: Phase::Ior(IorPhase::Write),
            },
            UNIX_EPOCH,
        );
        phase_request_from(good.clone()).unwrap();
        let ior = |f: &dyn Fn(&mut pb::IorWorkload)| {
            let mut wire = good.clone();
            let Some(pb::bench_phase_request::Workload::Ior(p)) = &mut wire.workload else { unreachable!() };
            f(p);
            phase_request_from(wire).unwrap_err().to_string()
        };
        let err = ior(&|p| (p.transfer, p.block) = (1 << 40, 1 << 40));
        assert!(err.starts_with("workload.ior.transfer: transfer 1t is larger than 1g"), "{err}");
        let err = ior(&|p| (p.block, p.segments) = (1 << 40, 100_000_000));
        assert!(err.starts_with("workload.ior.segments: block 1t x 100000000 segments"), "{err}");
        let err = ior(&|p| p.segments = 0);
        assert!(err.starts_with("workload.ior.segments: segments 0 is not between 1"), "{err}");
        let err = ior(&|p| p.iterations = u32::MAX);
        assert!(err.starts_with("workload.ior.iterations:"), "{err}");
        let err = ior(&|p| p.packet = "zeros".into());
        assert!(err.starts_with("workload.ior.packet: packet \"zeros\" is not timestamp"), "{err}");

        let share = |first_task, tasks, total_tasks| {
            phase_request_from(pb::BenchPhaseRequest { first_task, tasks, total_tasks, ..good.clone() })
                .unwrap_err()
                .to_string()
        };
        let err = share(u32::MAX, 2, 4);
        assert!(
            err.starts_with("first_task = 4294967295: tasks 4294967295..(past 2^32) are not a share"),
            "{err}"
        );
        assert!(share(0, 5000, 8000).starts_with("tasks = 5000: a client runs 1 to 4096 tasks"));
        assert!(share(0, 2, u32::MAX).starts_with("total_tasks = 4294967295: a run has 1 to 1048576 tasks"));
        let err = phase_request_from(pb::BenchPhaseRequest { iteration: 4, ..good.clone() })
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("iteration = 4: the workload has 4 iterations"), "{err}");
        let big = pb::BenchPhaseRequest { total_tasks: 1 << 20, ..good.clone() };
        let Some(pb::bench_phase_request::Workload::Ior(p)) = &big.workload else { unreachable!() };
        let big = pb::BenchPhaseRequest {
            workload: Some(pb::bench_phase_request::Workload::Ior(pb::IorWorkload {
                block: 16 << 40,
                ..p.clone()
            })),
            ..big
        };
        let err = phase_request_from(big).unwrap_err().to_string();
        assert!(err.starts_with("total_tasks: 1048576 tasks x 16t each"), "{err}");

        let mut md = good.clone();
        md.phase = P::MdFileCreate as i32;
        md.workload = Some(pb::bench_phase_request::Workload::Mdtest(pb::MdtestWorkload {
            iterations: 1,
            items: u32::MAX,
            depth: u32::MAX,
            branch: u32::MAX,
            ..Default::default()
        }));
        let err = phase_request_from(md).unwrap_err().to_string();
        assert!(err.starts_with("workload.mdtest.depth: depth 4294967295 is deeper than 32"), "{err}");
    }

    #[test]
    fn bad_requests_are_refused_before_running() {
        let mut wire = phase_request_to(
            &PhaseRequest {
                job_tag: None,
                stop_after: None,
                engine: Engine::Builtin,
                workload: Preset::Throughput.workload(),
                dir: "/mnt/x".into(),
                first_task: 0,
                tasks: 1,
                total_tasks: 1,
                tasks_per_client: 1,
                iteration: 0,
                phase: Phase::IorCleanup,
            },
            UNIX_EPOCH,
        );
        wire.dir = "relative".into();
        assert!(
            phase_request_from(wire.clone()).unwrap_err().to_string().contains("must be an absolute path")
        );
        wire.dir = "/mnt/x/pvfs-bench/../../../etc".into();
        assert!(phase_request_from(wire.clone()).unwrap_err().to_string().contains("no .."));
        wire.dir = "/etc".into();
        let err = phase_request_from(wire.clone()).unwrap_err().to_string();
        assert!(err.starts_with("dir = \"/etc\": a benchmark runs in its own directory"), "{err}");
        wire.dir = "/mnt/x/pvfs-bench/run".into();
        wire.tasks = 2;
        assert!(
            phase_request_from(wire.clone())
                .unwrap_err()
                .to_string()
                .contains("not a share of total_tasks = 1")
        );
        wire.tasks = 1;
        if let Some(pb::bench_phase_request::Workload::Ior(ior)) = &mut wire.workload {
            ior.transfer = 3 << 20;
        }
        assert!(phase_request_from(wire).unwrap_err().to_string().contains("multiple of transfer"));
    }
}
