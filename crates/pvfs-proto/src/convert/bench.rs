//! Benchmark workloads, phases and task results, wire ⇄ domain.

use crate::pb;
use crate::pb::bench_phase_request::Phase as P;
use pvfs_bench::engine::{Engine, IorPhase, MdtestPhase, Phase, PhaseRequest, TaskResult};
use pvfs_bench::mpi::{LaunchRequest, Program};
use pvfs_bench::params::{IorParams, MdtestParams, Workload};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
        }
    }
}

impl From<pb::IorWorkload> for IorParams {
    fn from(p: pb::IorWorkload) -> IorParams {
        IorParams {
            write: p.write,
            read: p.read,
            odirect: p.odirect,
            reorder: p.reorder,
            iterations: p.iterations,
            transfer: p.transfer,
            block: p.block,
            segments: p.segments.max(1),
            file_per_proc: p.file_per_proc,
            random: p.random,
            fsync: p.fsync,
        }
    }
}

impl From<&MdtestParams> for pb::MdtestWorkload {
    fn from(p: &MdtestParams) -> pb::MdtestWorkload {
        pb::MdtestWorkload {
            create: p.create,
            stat: p.stat,
            read: p.read,
            remove: p.remove,
            iterations: p.iterations,
            items: p.items,
            depth: p.depth,
            branch: p.branch,
            leaf_only: p.leaf_only,
            unique_dir: p.unique_dir,
            files_only: p.files_only,
        }
    }
}

impl From<pb::MdtestWorkload> for MdtestParams {
    fn from(p: pb::MdtestWorkload) -> MdtestParams {
        MdtestParams {
            create: p.create,
            stat: p.stat,
            read: p.read,
            remove: p.remove,
            iterations: p.iterations,
            items: p.items,
            depth: p.depth,
            branch: p.branch,
            leaf_only: p.leaf_only,
            unique_dir: p.unique_dir,
            files_only: p.files_only,
        }
    }
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
    }
}

fn phase_from(value: i32) -> Result<Phase, String> {
    Ok(match P::try_from(value).map_err(|_| format!("unknown benchmark phase {value}"))? {
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
        P::Unspecified => return Err("no benchmark phase given".into()),
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
        workload: Some(match &req.workload {
            Workload::Ior(p) => pb::bench_phase_request::Workload::Ior(p.into()),
            Workload::Mdtest(p) => pb::bench_phase_request::Workload::Mdtest(p.into()),
        }),
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
        } as i32,
    }
}

/// A phase request from the wire, and when to start it; checked like the engine's own
/// parameters, so a bad request is refused before anything runs.
pub fn phase_request_from(req: pb::BenchPhaseRequest) -> Result<(PhaseRequest, Option<SystemTime>), String> {
    let workload = match req.workload.ok_or("no workload in the request")? {
        pb::bench_phase_request::Workload::Ior(p) => Workload::Ior(p.into()),
        pb::bench_phase_request::Workload::Mdtest(p) => Workload::Mdtest(p.into()),
    };
    workload.check().map_err(|v| v.to_string())?;
    if req.tasks == 0 || req.first_task + req.tasks > req.total_tasks {
        return Err(format!(
            "tasks {}..{} of {}: not a valid share",
            req.first_task,
            req.first_task + req.tasks,
            req.total_tasks
        ));
    }
    let dir = std::path::PathBuf::from(&req.dir);
    if !dir.is_absolute() {
        return Err(format!("benchmark directory {:?} must be absolute", req.dir));
    }
    let start = (req.start_at_unix_ns > 0).then(|| time(req.start_at_unix_ns));
    Ok((
        PhaseRequest {
            engine: match pb::bench_phase_request::Engine::try_from(req.engine) {
                Ok(pb::bench_phase_request::Engine::Builtin) => Engine::Builtin,
                Ok(pb::bench_phase_request::Engine::Fio) => Engine::Fio,
                Err(_) => return Err(format!("unknown benchmark engine {}", req.engine)),
            },
            workload,
            dir,
            first_task: req.first_task,
            tasks: req.tasks,
            total_tasks: req.total_tasks,
            tasks_per_client: req.tasks_per_client.max(1),
            iteration: req.iteration,
            phase: phase_from(req.phase)?,
        },
        start,
    ))
}

pub fn launch_request_to(req: &LaunchRequest) -> pb::LaunchRequest {
    pb::LaunchRequest {
        workload: Some(match &req.workload {
            Workload::Ior(p) => pb::launch_request::Workload::Ior(p.into()),
            Workload::Mdtest(p) => pb::launch_request::Workload::Mdtest(p.into()),
        }),
        dir: req.dir.display().to_string(),
        hosts: req
            .clients
            .iter()
            .map(|(name, host)| pb::LaunchHost { name: name.clone(), host: host.clone() })
            .collect(),
        tasks_per_host: req.tasks_per_node,
        program: match req.program {
            Program::Builtin => pb::launch_request::Program::Builtin,
            Program::Ior => pb::launch_request::Program::Ior,
        } as i32,
    }
}

/// A launch request from the wire, checked before anything runs: the workload, an absolute
/// directory, at least one host, and host names mpirun can take (no spaces, nothing a
/// hostfile line could be split on).
pub fn launch_request_from(req: pb::LaunchRequest) -> Result<LaunchRequest, String> {
    let workload = match req.workload.ok_or("no workload in the request")? {
        pb::launch_request::Workload::Ior(p) => Workload::Ior(p.into()),
        pb::launch_request::Workload::Mdtest(p) => Workload::Mdtest(p.into()),
    };
    workload.check().map_err(|v| v.to_string())?;
    let dir = std::path::PathBuf::from(&req.dir);
    if !dir.is_absolute() {
        return Err(format!("benchmark directory {:?} must be absolute", req.dir));
    }
    if req.hosts.is_empty() {
        return Err("no hosts to run on".into());
    }
    if req.tasks_per_host == 0 {
        return Err("tasks per host must be at least 1".into());
    }
    for h in &req.hosts {
        let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':');
        if h.host.is_empty() || !h.host.chars().all(fine) {
            return Err(format!(
                "client {}: {:?} is not a host name or address mpirun can use",
                h.name, h.host
            ));
        }
    }
    Ok(LaunchRequest {
        program: match pb::launch_request::Program::try_from(req.program) {
            Ok(pb::launch_request::Program::Builtin) => Program::Builtin,
            Ok(pb::launch_request::Program::Ior) => Program::Ior,
            Err(_) => return Err(format!("unknown program {}", req.program)),
        },
        workload,
        dir,
        clients: req.hosts.into_iter().map(|h| (h.name, h.host)).collect(),
        tasks_per_node: req.tasks_per_host,
    })
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_bench::params::Preset;

    #[test]
    fn requests_and_results_round_trip() {
        for preset in Preset::ALL {
            let req = PhaseRequest {
                engine: Engine::Fio,
                workload: preset.workload(),
                dir: "/mnt/gv0/bench".into(),
                first_task: 4,
                tasks: 4,
                total_tasks: 8,
                tasks_per_client: 4,
                iteration: 2,
                phase: match preset.workload() {
                    Workload::Ior(_) => Phase::Ior(IorPhase::Read),
                    Workload::Mdtest(_) => Phase::Mdtest(MdtestPhase::FileStat),
                },
            };
            let at = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
            let (back, start) = phase_request_from(phase_request_to(&req, at)).unwrap();
            assert_eq!((back, start), (req, Some(at)));
        }
        let r = TaskResult {
            task: 3,
            start: time(5),
            end: time(9),
            bytes: 10,
            ops: 2,
            error: Some("write …: No space left on device".into()),
        };
        assert_eq!(TaskResult::from(pb::TaskResult::from(&r)), r);
    }

    #[test]
    fn launch_requests_round_trip_and_bad_hosts_are_refused() {
        let req = LaunchRequest {
            program: Program::Ior,
            workload: Preset::Metadata.workload(),
            dir: "/mnt/gv0/pvfs-bench/run".into(),
            clients: vec![("c1".into(), "10.0.0.5".into()), ("c2".into(), "client2.example".into())],
            tasks_per_node: 4,
        };
        assert_eq!(launch_request_from(launch_request_to(&req)).unwrap(), req);
        let mut wire = launch_request_to(&req);
        wire.hosts[1].host = "c2 slots=99".into();
        let err = launch_request_from(wire).unwrap_err();
        assert!(err.contains("client c2") && err.contains("not a host name"), "{err}");
        let mut wire = launch_request_to(&req);
        wire.dir = "relative".into();
        assert!(launch_request_from(wire).unwrap_err().contains("must be absolute"));
    }

    #[test]
    fn bad_requests_are_refused_before_running() {
        let mut wire = phase_request_to(
            &PhaseRequest {
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
        assert!(phase_request_from(wire.clone()).unwrap_err().contains("must be absolute"));
        wire.dir = "/mnt/x".into();
        wire.tasks = 2;
        assert!(phase_request_from(wire.clone()).unwrap_err().contains("not a valid share"));
        wire.tasks = 1;
        if let Some(pb::bench_phase_request::Workload::Ior(ior)) = &mut wire.workload {
            ior.transfer = 3 << 20;
        }
        assert!(phase_request_from(wire).unwrap_err().contains("multiple of transfer"));
    }
}
