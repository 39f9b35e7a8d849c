//! `engine = "fio"`: an IOR phase as one fio run per client, one fio job per task on IOR's own
//! file names and offsets, so fio's numbers and the built-in engine's describe the same I/O.
//! Building the arguments and reading fio's JSON are here; the agent runs the command.

use crate::engine::{EngineError, IorPhase, TaskResult};
use pvfs_bench::params::Workload;
use pvfs_bench::request::PhaseRequest;
use serde_json::Value;
use std::time::{Duration, SystemTime};

/// Why fio cannot run a phase, or what it printed is not a result.
#[derive(Debug, thiserror::Error)]
pub enum FioError {
    /// mdtest's phases have no fio equivalent.
    #[error("the fio engine runs IOR-style workloads (throughput, iops), not mdtest's")]
    NotIor,
    /// IOR's segments interleave blocks in a way fio's jobs do not.
    #[error("the fio engine runs one segment per task (segments = 1)")]
    Segments,
    /// The request's tasks are not a share of the run's.
    #[error(transparent)]
    Request(#[from] EngineError),
    /// fio's jobs cannot learn each other's counts at a deadline.
    #[error(
        "the fio engine has no wear-out (each fio job stops at the deadline on its own); run without wear_out, or with the built-in engine"
    )]
    WearOut,
    /// fio writes and checks its own patterns, not IOR's.
    #[error(
        "the fio engine does not write IOR's data pattern, so cannot verify it (-R); run without verify, or with the built-in engine"
    )]
    Verify,
    #[error("fio printed no JSON")]
    NoJson,
    #[error("fio's JSON does not parse: {0}")]
    Json(#[source] serde_json::Error),
    #[error("fio's JSON has no jobs")]
    NoJobs,
    /// A job pvfs did not ask for (its jobs are `taskN`).
    #[error("fio job {name:?} is not one of ours")]
    UnknownJob { name: String },
}

/// One fio job's own error, as its task's result carries it.
#[derive(Debug, thiserror::Error)]
#[error("fio job {name}: error {code} ({})", std::io::Error::from_raw_os_error(*.code))]
pub struct JobError {
    pub name: String,
    pub code: i32,
}

/// fio's arguments for `req` (an IOR write or read phase), or why fio cannot run it.
pub fn args(req: &PhaseRequest, phase: IorPhase) -> Result<Vec<String>, FioError> {
    let Workload::Ior(p) = &req.workload else {
        return Err(FioError::NotIor);
    };
    if p.segments > 1 {
        return Err(FioError::Segments);
    }
    if p.wear_out {
        return Err(FioError::WearOut);
    }
    if p.verify {
        return Err(FioError::Verify);
    }
    let rw = match (phase, p.random) {
        (IorPhase::Write, false) => "write",
        (IorPhase::Write, true) => "randwrite",
        (IorPhase::Read, false) => "read",
        (IorPhase::Read, true) => "randread",
    };
    // Global options first; each `--name` then opens a job that inherits them.
    let mut args = vec![
        // json+: each job's latency histogram too (`clat_ns.bins`), merged like the engine's.
        "--output-format=json+".to_owned(),
        "--ioengine=psync".to_owned(),
        // The built-in engine does not preallocate, and neither does IOR.
        "--fallocate=none".to_owned(),
        format!("--rw={rw}"),
        format!("--bs={}", p.transfer),
        format!("--size={}", p.block),
        format!("--direct={}", u8::from(p.odirect)),
        // Each random offset once, as IOR's shuffle does.
        "--norandommap=0".to_owned(),
    ];
    if phase == IorPhase::Write && p.fsync {
        args.push("--end_fsync=1".to_owned());
    }
    // IOR's stonewall: fio stops a job at its runtime, or when its size is done, whichever
    // comes first (no `time_based`); a read after a stonewalled write moves what it wrote.
    if p.deadline > 0 {
        args.push(format!("--runtime={}", p.deadline));
    }
    if let Some(n) = req.stop_after {
        args.push(format!("--io_size={}", n.saturating_mul(p.transfer)));
    }
    let job = job(req)?;
    for (task, owner) in owners(req, phase)? {
        args.push(format!("--name=task{task}"));
        args.push(format!("--filename={}", job.file_of(owner).display()));
        if !p.file_per_proc {
            args.push(format!("--offset={}", u64::from(owner) * p.block));
        }
    }
    Ok(args)
}

/// The names (in the run directory) of the files `phase` of `req` opens, which the agent makes
/// or checks before fio runs.
pub fn file_names(req: &PhaseRequest, phase: IorPhase) -> Result<Vec<String>, FioError> {
    let job = job(req)?;
    let mut names: Vec<String> =
        owners(req, phase)?.into_iter().map(|(_, owner)| job.file_name_of(owner)).collect();
    names.dedup();
    Ok(names)
}

fn job(req: &PhaseRequest) -> Result<crate::engine::IorJob, FioError> {
    let Workload::Ior(p) = &req.workload else {
        return Err(FioError::NotIor);
    };
    Ok(crate::engine::IorJob {
        params: p.clone(),
        base: req.dir.join("ior"),
        tasks: req.task_range().map_err(EngineError::from)?,
        total_tasks: req.total_tasks,
        tasks_per_client: req.tasks_per_client,
        iteration: req.iteration,
        stop_after: req.stop_after,
        pace: None,
        timed: true,
        thread_name: None,
    })
}

/// Each task with the task whose data it moves: itself, or with `-C` on a read, the same task
/// of the next client.
fn owners(req: &PhaseRequest, phase: IorPhase) -> Result<Vec<(u32, u32)>, FioError> {
    let job = job(req)?;
    let reorder = phase == IorPhase::Read && job.params.reorder && req.total_tasks > 1;
    // Both below 2^20 once the request is checked: the sum cannot wrap.
    Ok(job
        .tasks
        .map(|task| (task, if reorder { (task + req.tasks_per_client) % req.total_tasks } else { task }))
        .collect())
}

/// Each task's result from fio's JSON: bytes and I/Os from the job, its end from the job's run
/// time after `started` (when fio was started: fio reports no per-job start time).
pub fn results(json: &str, phase: IorPhase, started: SystemTime) -> Result<Vec<TaskResult>, FioError> {
    // fio may print warnings before the document.
    let at = json.find('{').ok_or(FioError::NoJson)?;
    let doc: Value = serde_json::from_str(&json[at..]).map_err(FioError::Json)?;
    let key = if phase == IorPhase::Write { "write" } else { "read" };
    let jobs = doc["jobs"].as_array().ok_or(FioError::NoJobs)?;
    jobs.iter()
        .map(|job| {
            let name = job["jobname"].as_str().unwrap_or_default();
            let task = name
                .strip_prefix("task")
                .and_then(|n| n.parse::<u32>().ok())
                .ok_or_else(|| FioError::UnknownJob { name: name.to_owned() })?;
            let runtime = job["job_runtime"].as_u64().unwrap_or(0);
            let error = match job["error"].as_i64() {
                Some(0) | None => None,
                Some(code) => Some(JobError { name: name.to_owned(), code: code as i32 }.to_string()),
            };
            Ok(TaskResult {
                task,
                start: started,
                end: started + Duration::from_millis(runtime),
                bytes: job[key]["io_bytes"].as_u64().unwrap_or(0),
                ops: job[key]["total_ios"].as_u64().unwrap_or(0),
                error,
                rdwr: None,
                latency: latency_bins(&job[key]["clat_ns"]["bins"]),
                found: 0,
            })
        })
        .collect()
}

/// fio's completion-latency histogram (`json+`'s `clat_ns.bins`: each bucket's value in ns as
/// a key, its count as the value) as the engine's own buckets: re-recorded, so a fio task's
/// latency merges with every other's. Empty when fio printed none (plain `json`).
fn latency_bins(bins: &Value) -> Vec<(u64, u64)> {
    let Some(bins) = bins.as_object() else { return Vec::new() };
    let pairs: Vec<(u64, u64)> =
        bins.iter().filter_map(|(ns, count)| Some((ns.parse().ok()?, count.as_u64()?))).collect();
    let mut recorder = pvfs_bench::latency::Recorder::new();
    recorder.add_buckets(&pairs);
    recorder.buckets()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Phase;
    use pvfs_bench::params::Preset;

    fn request(preset: Preset, first: u32) -> PhaseRequest {
        let mut workload = preset.workload();
        workload.set("t", "1m").unwrap();
        workload.set("b", "256m").unwrap();
        PhaseRequest {
            job_tag: None,
            stop_after: None,
            engine: pvfs_bench::launch::Engine::Fio,
            workload,
            dir: "/mnt/gv0/bench".into(),
            first_task: first,
            tasks: 2,
            total_tasks: 4,
            tasks_per_client: 2,
            iteration: 0,
            phase: Phase::Ior(IorPhase::Read),
        }
    }

    #[test]
    fn one_job_per_task_on_iors_files() {
        let a = args(&request(Preset::Throughput, 2), IorPhase::Read).unwrap();
        assert_eq!(
            a.join(" "),
            "--output-format=json+ --ioengine=psync --fallocate=none --rw=read --bs=1048576 --size=268435456 \
             --direct=1 --norandommap=0 --name=task2 --filename=/mnt/gv0/bench/ior.00000000 \
             --name=task3 --filename=/mnt/gv0/bench/ior.00000001"
        );
        let w = args(&request(Preset::Iops, 0), IorPhase::Write).unwrap();
        assert!(
            w.contains(&"--rw=randwrite".to_owned())
                && w.contains(&"--filename=/mnt/gv0/bench/ior.00000000".to_owned())
        );
        let md = PhaseRequest { workload: Preset::Metadata.workload(), ..request(Preset::Throughput, 0) };
        assert!(args(&md, IorPhase::Write).unwrap_err().to_string().contains("not mdtest's"));
        assert!(matches!(args(&md, IorPhase::Write), Err(FioError::NotIor)));
    }

    #[test]
    fn the_stonewall_is_fios_runtime_and_a_reads_count_its_io_size() {
        let mut req = request(Preset::Throughput, 0);
        req.workload.set("deadline", "30").unwrap();
        req.stop_after = Some(100);
        let a = args(&req, IorPhase::Read).unwrap().join(" ");
        assert!(a.contains("--runtime=30 --io_size=104857600 --name=task0"), "{a}");
        req.workload.set("wear_out", "true").unwrap();
        let err = args(&req, IorPhase::Write).unwrap_err().to_string();
        assert!(err.contains("the fio engine has no wear-out"), "{err}");
        let mut req = request(Preset::Throughput, 0);
        req.workload.set("R", "true").unwrap();
        let err = args(&req, IorPhase::Read).unwrap_err().to_string();
        assert!(err.contains("cannot verify it (-R)"), "{err}");
    }

    /// A real `json+` output (testdata/fio/README.md): each job's latency histogram is read
    /// into the task's buckets, every I/O counted once, and the median is fio's own within the
    /// width of fio's buckets and ours.
    #[test]
    fn fio_latency_bins_become_the_tasks_histogram() {
        let json = include_str!("../testdata/fio/jsonplus_write_4k.json");
        let r = results(json, IorPhase::Write, SystemTime::UNIX_EPOCH).unwrap();
        let doc: Value = serde_json::from_str(json).unwrap();
        for (task, job) in r.iter().zip(doc["jobs"].as_array().unwrap()) {
            let merged = pvfs_bench::latency::merge([task.latency.as_slice()]);
            assert_eq!(merged.count(), task.ops, "every I/O in the histogram");
            let fio_p50 = job["write"]["clat_ns"]["percentile"]["50.000000"].as_u64().unwrap() as f64;
            let ours = merged.percentiles().unwrap().p50_ns as f64;
            assert!((ours - fio_p50).abs() <= fio_p50 * 0.03, "ours {ours}, fio's {fio_p50}");
        }
        // Plain json has no bins: no latency, not an error.
        let plain = include_str!("../../pvfs-bench/testdata/ior/fio_seq_1m.json")
            .replace("\"seqwrite\"", "\"task5\"")
            .replace("\"seqread\"", "\"task6\"");
        let r = results(&plain, IorPhase::Write, SystemTime::UNIX_EPOCH).unwrap();
        assert!(r[0].latency.is_empty());
    }

    #[test]
    fn results_come_from_fios_json() {
        // A real fio 3.33 run (fixtures/ior/fio_seq_1m.json): a job writing 256 MiB in 1266 ms,
        // then one reading it back.
        let json = include_str!("../../pvfs-bench/testdata/ior/fio_seq_1m.json")
            .replace("\"seqwrite\"", "\"task5\"")
            .replace("\"seqread\"", "\"task6\"");
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let r = results(&format!("fio: a warning\n{json}"), IorPhase::Write, t0).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].task, r[0].bytes, r[0].ops), (5, 268435456, 256));
        assert_eq!(r[0].end, t0 + Duration::from_millis(1266));
        assert_eq!((r[1].task, r[1].bytes), (6, 0), "the read job wrote nothing");
        let err = results(include_str!("../../pvfs-bench/testdata/ior/fio_seq_1m.json"), IorPhase::Write, t0)
            .unwrap_err();
        assert!(matches!(&err, FioError::UnknownJob { name } if name == "seqwrite"), "{err:?}");
        assert!(err.to_string().contains("\"seqwrite\" is not one of ours"), "{err}");
    }

    proptest::proptest! {
        #![proptest_config(pvfs_bench::testing::config())]

        /// fio's JSON (the built-in fio engine's results), mutated from the parsers' corpus
        /// (`pvfs_bench::testing`): never a panic, errors are fine.
        #[test]
        fn fuzz_fio_results_mutated(bytes in pvfs_bench::testing::mutated(), write in proptest::prelude::any::<bool>()) {
            let text = String::from_utf8_lossy(&bytes);
            let phase = if write { IorPhase::Write } else { IorPhase::Read };
            let _ = results(&text, phase, std::time::UNIX_EPOCH);
        }
    }
}
