//! The engine on a real file system (a directory under target/, on disk: O_DIRECT is refused by
//! tmpfs).

use super::*;
use pvfs_bench::launch::Engine;
use pvfs_bench::params::{DataPacket, IorParams, MdtestParams};
use pvfs_bench::request::PhaseRequest;
use std::path::PathBuf;
use std::time::Duration;

fn scratch() -> tempfile::TempDir {
    let base = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/engine-tests"));
    std::fs::create_dir_all(&base).unwrap();
    // The engine refuses `..` in its directory's path: give it the real one.
    tempfile::tempdir_in(base.canonicalize().unwrap()).unwrap()
}

fn ior(file_per_proc: bool) -> IorParams {
    IorParams {
        write: true,
        read: true,
        odirect: false,
        reorder: false,
        iterations: 1,
        transfer: 64 << 10,
        block: 256 << 10,
        segments: 2,
        file_per_proc,
        random: false,
        fsync: true,
        packet: DataPacket::Timestamp,
        deadline: 0,
        wear_out: false,
        signature: 0,
        verify: false,
        keep: false,
    }
}

fn job(dir: &std::path::Path, params: IorParams, tasks: u32) -> IorJob {
    IorJob {
        params,
        base: dir.join("ior"),
        tasks: 0..tasks,
        total_tasks: tasks,
        tasks_per_client: 1,
        iteration: 0,
        stop_after: None,
        pace: None,
        timed: true,
        thread_name: None,
    }
}

#[test]
fn file_per_process_writes_each_tasks_blocks_and_reads_them_back() {
    let dir = scratch();
    let job = job(dir.path(), ior(true), 2);
    let progress = Progress::default();
    let written = run_ior_phase(&job, IorPhase::Write, &progress);
    assert!(written.iter().all(|r| r.error.is_none()), "{written:?}");
    assert_eq!(written.iter().map(|r| r.bytes).collect::<Vec<_>>(), [512 << 10, 512 << 10]);
    assert_eq!(written.iter().map(|r| r.ops).sum::<u64>(), 16);
    for task in 0..2 {
        let len = std::fs::metadata(dir.path().join(format!("ior.{task:08}"))).unwrap().len();
        assert_eq!(len, 512 << 10, "IOR's layout: segments back to back in the task's own file");
    }
    let read = run_ior_phase(&job, IorPhase::Read, &progress);
    assert!(read.iter().all(|r| r.error.is_none() && r.bytes == 512 << 10), "{read:?}");
    assert_eq!(progress.bytes.load(std::sync::atomic::Ordering::Relaxed), 2 << 20);
    let t = totals(Phase::Ior(IorPhase::Read), &read).unwrap();
    assert_eq!(t.bytes, 1 << 20);
    assert!(t.bw_mib > 0.0 && t.seconds > 0.0);
    // IOR's timers: open, read and close spans inside the total; latency per transfer.
    let (open, wrrd, close) = (t.open_s.unwrap(), t.wrrd_s.unwrap(), t.close_s.unwrap());
    assert!(wrrd > 0.0 && wrrd <= t.seconds && open <= t.seconds && close <= t.seconds, "{t:?}");
    assert!(t.latency_s.unwrap() > 0.0 && t.latency_s.unwrap() <= wrrd, "{t:?}");
    remove_files(&job).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn the_files_hold_iors_data_packets() {
    let word = |data: &[u8], i: usize| u64::from_ne_bytes(data[i * 8..i * 8 + 8].try_into().unwrap());
    let dir = scratch();
    let job = job(dir.path(), ior(true), 2);
    run_ior_phase(&job, IorPhase::Write, &Progress::default());
    // Timestamp (IOR's default): every transfer the same, `rank << 32 | signature + i`.
    let data = std::fs::read(dir.path().join("ior.00000001")).unwrap();
    assert_eq!(word(&data, 0) >> 32, 1);
    assert_eq!(word(&data, 7) - word(&data, 0), 7);
    assert_eq!(data[..64 << 10], data[64 << 10..128 << 10], "one buffer for every transfer");

    let mut params = ior(true);
    params.packet = DataPacket::Offset;
    let job = self::job(dir.path(), params, 1);
    run_ior_phase(&job, IorPhase::Write, &Progress::default());
    let data = std::fs::read(dir.path().join("ior.00000000")).unwrap();
    // The second transfer (offset 64 KiB) stamps its 4 KiB pages with offset x k.
    assert_eq!(word(&data, (64 << 10) / 8), 64 << 10);
    assert_eq!(word(&data, (64 << 10) / 8 + 512), 2 * (64 << 10));
}

#[test]
fn a_shared_file_interleaves_the_tasks_blocks() {
    let dir = scratch();
    let mut params = ior(false);
    params.segments = 1;
    let job = job(dir.path(), params, 3);
    let written = run_ior_phase(&job, IorPhase::Write, &Progress::default());
    assert!(written.iter().all(|r| r.error.is_none()), "{written:?}");
    assert_eq!(std::fs::metadata(dir.path().join("ior")).unwrap().len(), 3 * (256 << 10));
    // Task 2's first transfer is at 2 × block.
    assert_eq!(job.offsets(2, 0).next(), Some(2 * (256 << 10)));
}

#[test]
fn reorder_reads_another_clients_data() {
    let dir = scratch();
    let mut params = ior(true);
    params.reorder = true;
    let job = job(dir.path(), params, 2);
    run_ior_phase(&job, IorPhase::Write, &Progress::default());
    // Take task 0's file away: task 1 (reading task 0's) fails, task 0 (reading task 1's) not.
    std::fs::remove_file(dir.path().join("ior.00000000")).unwrap();
    let read = run_ior_phase(&job, IorPhase::Read, &Progress::default());
    assert!(read[0].error.is_none(), "{read:?}");
    let err = read[1].error.as_deref().unwrap();
    assert!(err.starts_with("open ") && err.contains("ior.00000000: No such file"), "{err}");
}

#[test]
fn random_offsets_cover_the_block_once_each() {
    let dir = scratch();
    let mut params = ior(true);
    params.random = true;
    let job = job(dir.path(), params, 1);
    let mut shuffled: Vec<u64> = job.offsets(0, 7).collect();
    let sequential: Vec<u64> = (0..8).map(|i| i * (64 << 10)).collect();
    assert_eq!(job.offsets(0, 7).len(), 8);
    assert_ne!(shuffled, sequential, "shuffled");
    shuffled.sort_unstable();
    assert_eq!(shuffled, sequential);
    assert_ne!(
        job.offsets(0, 7).collect::<Vec<_>>(),
        job.offsets(0, 8).collect::<Vec<_>>(),
        "each iteration shuffles anew"
    );
    let r = run_ior_phase(&job, IorPhase::Write, &Progress::default());
    assert!(r[0].error.is_none() && r[0].ops == 8, "{r:?}");
}

/// Offsets are computed as they are used: a task of 16 TiB in 4 KiB transfers (2^32 offsets,
/// 32 GiB as a list) costs nothing until it runs, shuffled or not, and a shared file's
/// segments interleave every task's blocks.
#[test]
fn offsets_are_lazy_even_for_the_largest_task() {
    let mut params = ior(false);
    (params.transfer, params.block, params.segments, params.random) = (4096, 16 << 40, 1, true);
    let job = job(std::path::Path::new("/nonexistent"), params.clone(), 4);
    job.check().unwrap();
    let offsets = job.offsets(3, 1);
    assert_eq!(offsets.len(), 1 << 32);
    assert!(size_of_val(&offsets) < 256);
    let first: Vec<u64> = offsets.take(3).collect();
    assert!(first.iter().all(|o| o % 4096 == 0 && *o >= 3 * (16 << 40) && *o < 4 * (16 << 40)), "{first:?}");

    (params.block, params.segments, params.random) = (8192, 3, false);
    let shared: Vec<u64> = job_with(params, 2).offsets(1, 0).collect();
    assert_eq!(shared, [8192, 12288, 3 * 8192, 3 * 8192 + 4096, 5 * 8192, 5 * 8192 + 4096]);
}

fn job_with(params: IorParams, tasks: u32) -> IorJob {
    job(std::path::Path::new("/nonexistent"), params, tasks)
}

/// A planted symlink at a test file's name is refused with a clear error, and its target is
/// left as it was; so is a symlinked run directory.
#[test]
fn a_planted_symlink_is_never_followed() {
    let dir = scratch();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::os::unix::fs::symlink(&victim, run.join("ior.00000001")).unwrap();
    let job = job(&run, ior(true), 2);
    let r = run_ior_phase(&job, IorPhase::Write, &Progress::default());
    assert!(r[0].error.is_none(), "{r:?}");
    let err = r[1].error.as_deref().unwrap();
    assert!(err.contains("run/ior.00000001: it is a symlink, and pvfs never follows symlinks"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    remove_files(&job).unwrap();
    assert!(victim.exists(), "removing the test files removes the link, not its target");

    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.path().join("linked-run")).unwrap();
    let job = IorJob { base: dir.path().join("linked-run/ior"), ..job };
    let r = run_ior_phase(&job, IorPhase::Write, &Progress::default());
    assert!(
        r.iter().all(|r| r.error.as_deref().is_some_and(|e| e.contains("linked-run: it is a symlink"))),
        "{r:?}"
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn odirect_moves_aligned_transfers() {
    let dir = scratch();
    let mut params = ior(true);
    params.odirect = true;
    params.transfer = 4096;
    params.block = 64 << 10;
    let job = job(dir.path(), params, 2);
    for phase in [IorPhase::Write, IorPhase::Read] {
        let r = run_ior_phase(&job, phase, &Progress::default());
        assert!(r.iter().all(|r| r.error.is_none() && r.ops == 32), "{r:?}");
    }
}

#[test]
fn an_unwritable_directory_is_named() {
    let dir = scratch();
    let job = job(&dir.path().join("missing"), ior(true), 1);
    let r = run_ior_phase(&job, IorPhase::Write, &Progress::default());
    let err = r[0].error.as_deref().unwrap();
    assert!(err.contains("open ") && err.contains("/missing: No such file or directory"), "{err}");
}

/// IOR's open timer starts at the open (its buffer is allocated and filled before the
/// repetition's timers): a write's open(s) holds opening the file, not filling a transfer's
/// buffer with the pattern, which for 64 MiB takes far longer than any open here.
#[test]
fn a_writes_open_span_holds_the_open_not_the_buffers_fill() {
    let dir = scratch();
    let params = IorParams { transfer: 64 << 20, block: 64 << 20, segments: 1, fsync: false, ..ior(true) };
    let mut buffer = vec![0u8; 64 << 20];
    let began = std::time::Instant::now();
    pattern::generate(&mut buffer, params.packet, 1, 0);
    let fill = began.elapsed();
    drop(buffer);
    let job = job(dir.path(), params, 1);
    let r = run_ior_phase(&job, IorPhase::Write, &Progress::default());
    assert!(r[0].error.is_none(), "{r:?}");
    let open = r[0].rdwr.unwrap().0.duration_since(r[0].start).unwrap();
    assert!(open < fill / 4, "open(s) {open:?} holds more than the open: filling the buffer took {fill:?}");
    remove_files(&job).unwrap();
}

/// mdtest makes the iteration's directory before the barrier that starts the tree's clock:
/// the engine makes it before any task begins, so when it cannot be made every task says so,
/// those that own no tree too (without `-u` only task 0 makes one).
#[test]
fn the_iteration_directory_is_made_before_the_trees_tasks_begin() {
    let dir = scratch();
    let params =
        MdtestParams { unique_dir: false, depth: 0, items: 1, iterations: 2, ..MdtestParams::default() };
    let job = MdtestJob {
        params,
        dir: dir.path().to_owned(),
        tasks: 0..2,
        total_tasks: 2,
        iteration: 0,
        stop_after: None,
        pace: None,
        thread_name: None,
    };
    let r = run_mdtest_phase(&job, MdtestPhase::TreeCreate, &Progress::default());
    assert!(r.iter().all(|r| r.error.is_none()), "{r:?}");
    assert_eq!(r.iter().map(|r| r.ops).collect::<Vec<_>>(), [1, 0], "the tree is its root, made by task 0");
    assert!(dir.path().join("test-dir.0-0/mdtest_tree.0").is_dir());
    // A file where the next iteration's directory goes.
    std::fs::write(dir.path().join("test-dir.0-1"), "").unwrap();
    let next = MdtestJob { iteration: 1, ..job.clone() };
    let r = run_mdtest_phase(&next, MdtestPhase::TreeCreate, &Progress::default());
    for task in &r {
        let err = task.error.as_deref().unwrap_or_default();
        assert!(err.contains("test-dir.0-1") && task.ops == 0, "task {}: {err:?}", task.task);
    }
    let removed = run_mdtest_phase(&job, MdtestPhase::TreeRemove, &Progress::default());
    assert!(removed.iter().all(|r| r.error.is_none()), "{removed:?}");
    assert!(!dir.path().join("test-dir.0-0").exists(), "removed after the tasks, once empty");
}

#[test]
fn mdtest_phases_create_stat_read_and_remove_a_tree() {
    let dir = scratch();
    let params = MdtestParams {
        create: false,
        stat: false,
        read: false,
        remove: false,
        iterations: 1,
        items: 3,
        depth: 2,
        branch: 2,
        leaf_only: false,
        unique_dir: true,
        files_only: false,
        ..MdtestParams::default()
    };
    let job = MdtestJob {
        params: params.clone(),
        dir: dir.path().to_owned(),
        tasks: 0..2,
        total_tasks: 2,
        iteration: 0,
        stop_after: None,
        pace: None,
        thread_name: None,
    };
    let phases = MdtestPhase::sequence(&params);
    assert_eq!(phases.len(), 9, "all of mdtest's phases when none is chosen");
    let mut ops = Vec::new();
    for phase in phases {
        let r = run_mdtest_phase(&job, phase, &Progress::default());
        assert!(r.iter().all(|r| r.error.is_none()), "{phase:?}: {r:?}");
        let counted = totals(Phase::Mdtest(phase), &r).unwrap().ops;
        ops.push((phase.row(), r.iter().map(|r| r.ops).sum::<u64>(), counted));
    }
    // 7 directories per task's tree, 3 items in each; mdtest's tree rows count one tree.
    assert_eq!(ops[0], ("Tree creation", 14, 7));
    assert_eq!(ops[1], ("Directory creation", 42, 42));
    assert_eq!(ops[7], ("File removal", 42, 42));
    assert_eq!(ops[8], ("Tree removal", 14, 7));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing left behind");

    let leaf = MdtestJob { params: MdtestParams { leaf_only: true, files_only: true, ..params }, ..job };
    let sequence = MdtestPhase::sequence(&leaf.params);
    assert!(!sequence.contains(&MdtestPhase::DirCreate));
    run_mdtest_phase(&leaf, MdtestPhase::TreeCreate, &Progress::default());
    let files = run_mdtest_phase(&leaf, MdtestPhase::FileCreate, &Progress::default());
    assert_eq!(files.iter().map(|r| r.ops).sum::<u64>(), 2 * 4 * 3, "items only in the 4 leaves");
}

/// mdtest's items and tree directories are made by name in directories opened without
/// following symlinks: a planted symlink at an item's name or in place of a tree directory is
/// refused, its target untouched.
#[test]
fn mdtest_follows_no_planted_symlink() {
    let dir = scratch();
    let victim = dir.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let params = MdtestParams {
        create: true,
        stat: true,
        read: true,
        remove: true,
        iterations: 1,
        items: 2,
        depth: 1,
        branch: 2,
        leaf_only: true,
        unique_dir: false,
        files_only: true,
        ..MdtestParams::default()
    };
    let job = MdtestJob {
        params,
        dir: run.clone(),
        tasks: 0..1,
        total_tasks: 1,
        iteration: 0,
        stop_after: None,
        pace: None,
        thread_name: None,
    };
    let tree = run.join("test-dir.0-0/mdtest_tree.0");
    let r = run_mdtest_phase(&job, MdtestPhase::TreeCreate, &Progress::default());
    assert!(r[0].error.is_none(), "{r:?}");
    std::os::unix::fs::symlink(victim.join("planted"), tree.join("mdtest_tree.1.0/file.mdtest.0.3")).unwrap();
    let r = run_mdtest_phase(&job, MdtestPhase::FileCreate, &Progress::default());
    let err = r[0].error.as_deref().unwrap();
    assert!(err.contains("mdtest_tree.1.0/file.mdtest.0.3: it is a symlink"), "{err}");
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0, "nothing created through the link");

    std::fs::remove_dir_all(tree.join("mdtest_tree.1.1")).unwrap();
    std::os::unix::fs::symlink(&victim, tree.join("mdtest_tree.1.1")).unwrap();
    let r = run_mdtest_phase(&job, MdtestPhase::FileStat, &Progress::default());
    let err = r[0].error.as_deref().unwrap_or_default();
    assert!(err.contains("mdtest_tree.1.1: it is a symlink"), "{err}");
    for file in std::fs::read_dir(tree.join("mdtest_tree.1.0")).unwrap() {
        std::fs::remove_file(file.unwrap().path()).unwrap();
    }
    let r = run_mdtest_phase(&job, MdtestPhase::TreeRemove, &Progress::default());
    let err = r[0].error.as_deref().unwrap_or_default();
    assert!(err.contains("mdtest_tree.1.1: it is a symlink"), "{err}");
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
}

/// A phase nobody waits for stops: cancelled midway (from another thread, as the agent does
/// when the coordinator's stream closes), each task ends at its next transfer with an error
/// saying why, having moved less than its share.
#[test]
fn a_cancelled_phase_stops_at_the_next_transfer() {
    let dir = scratch();
    let mut params = ior(true);
    (params.transfer, params.block, params.segments, params.fsync) = (4 << 10, 64 << 20, 1, false);
    let job = job(dir.path(), params, 2);
    let progress = Progress::default();
    let results = std::thread::scope(|scope| {
        let run = scope.spawn(|| run_ior_phase(&job, IorPhase::Write, &progress));
        while progress.ops.load(std::sync::atomic::Ordering::Relaxed) < 10 && !run.is_finished() {
            std::thread::yield_now();
        }
        progress.cancelled.store(true, std::sync::atomic::Ordering::Relaxed);
        run.join().unwrap()
    });
    // The task's text is the `Stopped` variant's, which the agent and the coordinator show.
    assert!(matches!(progress.check(), Err(EngineError::Stopped)));
    for r in &results {
        assert_eq!(r.error.as_deref(), Some(EngineError::Stopped.to_string().as_str()), "{r:?}");
        assert!(r.error.as_deref().is_some_and(|e| e.contains("nobody is waiting")), "{r:?}");
        assert!(r.bytes < 64 << 20, "task {} moved its whole block: {r:?}", r.task);
    }
    remove_files(&job).unwrap();
    let md = MdtestJob {
        params: MdtestParams {
            create: true,
            stat: false,
            read: false,
            remove: false,
            iterations: 1,
            items: 5,
            depth: 0,
            branch: 1,
            leaf_only: false,
            unique_dir: false,
            files_only: true,
            ..MdtestParams::default()
        },
        dir: dir.path().to_owned(),
        tasks: 0..1,
        total_tasks: 1,
        iteration: 0,
        stop_after: None,
        pace: None,
        thread_name: None,
    };
    let stopped = run_mdtest_phase(&md, MdtestPhase::FileCreate, &progress);
    assert!(stopped[0].error.is_some() && stopped[0].ops == 0, "{stopped:?}");
}

/// A request the engine cannot run is refused with a variant naming what is wrong: a share
/// that is not one, a phase of the other tool.
#[test]
fn requests_it_cannot_run_are_refused_by_kind() {
    let dir = scratch();
    let req = PhaseRequest {
        job_tag: None,
        stop_after: None,
        engine: Engine::Builtin,
        workload: pvfs_bench::params::Workload::Ior(ior(true)),
        dir: dir.path().to_owned(),
        first_task: u32::MAX,
        tasks: 2,
        total_tasks: 4,
        tasks_per_client: 2,
        iteration: 0,
        phase: Phase::Ior(IorPhase::Write),
    };
    let err = run_phase(&req, &Progress::default()).unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::NotAShare(pvfs_bench::request::NotAShare {
                first_task: u32::MAX,
                tasks: 2,
                total_tasks: 4
            })
        ),
        "{err:?}"
    );
    let req = PhaseRequest { first_task: 0, phase: Phase::Mdtest(MdtestPhase::FileCreate), ..req };
    let err = run_phase(&req, &Progress::default()).unwrap_err();
    assert!(
        matches!(err, EngineError::WrongPhase { phase: Phase::Mdtest(MdtestPhase::FileCreate) }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "phase Mdtest(FileCreate) does not belong to this workload");
}

/// A stonewall of 1 s over 4 KiB transfers that would take 16 s at 1 ms each (a sleep per
/// transfer, the test seam), so every task is stopped by it.
fn stonewalled(wear_out: bool) -> IorParams {
    IorParams {
        transfer: 4 << 10,
        block: 64 << 20,
        segments: 1,
        fsync: false,
        deadline: 1,
        wear_out,
        ..ior(true)
    }
}

/// Task 1 is a straggler: it loses 400 ms before its first transfer.
const STRAGGLER: Pace = Pace { task: 1, first: Duration::from_millis(400), each: Duration::from_millis(1) };

#[test]
fn wear_out_brings_a_straggler_to_the_most_any_task_made() {
    let dir = scratch();
    let job = IorJob { pace: Some(STRAGGLER), ..job(dir.path(), stonewalled(true), 2) };
    let written = run_ior_phase(&job, IorPhase::Write, &Progress::default());
    assert!(written.iter().all(|r| r.error.is_none()), "{written:?}");
    let ops: Vec<u64> = written.iter().map(|r| r.ops).collect();
    // The same count for both, short of the block (16,384): the stonewall stopped them.
    assert_eq!(ops[0], ops[1], "{ops:?}");
    assert!(ops[0] > 100 && ops[0] < 16_384, "{ops:?}");
    assert!(written.iter().all(|r| r.bytes == r.ops * 4096));
    // The straggler went on past the stonewall to catch up: it ended last.
    assert!(written[1].end > written[0].end);
    let file = |t: u32| std::fs::metadata(job.file_of(t)).unwrap().len();
    assert_eq!((file(0), file(1)), (ops[0] * 4096, ops[0] * 4096));
    // The read reads back what was written, no more (which would be an error at the end of
    // the file), and stops there without a stonewall of its own.
    let read_job = IorJob {
        stop_after: pvfs_bench::request::stop_after(&job.params, ops.iter().copied()),
        pace: None,
        ..job.clone()
    };
    let read = run_ior_phase(&read_job, IorPhase::Read, &Progress::default());
    assert!(read.iter().all(|r| r.error.is_none() && r.ops == ops[0]), "{read:?}");
}

#[test]
fn without_wear_out_each_task_stops_at_the_stonewall_and_the_read_takes_the_fewest() {
    let dir = scratch();
    let job = IorJob { pace: Some(STRAGGLER), ..job(dir.path(), stonewalled(false), 2) };
    let written = run_ior_phase(&job, IorPhase::Write, &Progress::default());
    assert!(written.iter().all(|r| r.error.is_none()), "{written:?}");
    let ops: Vec<u64> = written.iter().map(|r| r.ops).collect();
    // The straggler lost 400 ms of its second: it made fewer.
    assert!(ops[1] < ops[0], "{ops:?}");
    let stop = pvfs_bench::request::stop_after(&job.params, ops.iter().copied());
    assert_eq!(stop, Some(ops[1]));
    let read_job = IorJob { stop_after: stop, pace: None, ..job.clone() };
    let read = run_ior_phase(&read_job, IorPhase::Read, &Progress::default());
    assert!(read.iter().all(|r| r.error.is_none() && r.ops == ops[1]), "{read:?}");
}

#[test]
fn a_pace_reads_as_the_child_is_given_it() {
    assert_eq!(Pace::parse("1,400,1"), Some(STRAGGLER));
    assert_eq!(Pace::parse("1,400"), None);
    assert_eq!(Pace::parse("x,1,1"), None);
}

#[test]
fn wear_out_for_a_share_of_a_run_is_refused_naming_why() {
    let dir = scratch();
    let job = IorJob { total_tasks: 4, ..job(dir.path(), stonewalled(true), 2) };
    let results = run_ior_phase(&job, IorPhase::Write, &Progress::default());
    let error = results[0].error.as_deref().unwrap();
    assert!(error.contains("this process runs 2 of 4 tasks and has no way to ask the others"), "{error}");
    assert!(!job.file_of(0).exists(), "nothing was written");
}

/// Issue 28: each transfer is timed into the task's histogram. Transfers made to take 3 ms
/// (the test seam's pace, inside the timed call), one of them 30 ms more: the percentiles say
/// so, and every transfer is counted once.
#[test]
fn each_transfer_is_timed_into_the_tasks_histogram() {
    let dir = scratch();
    let params = IorParams { transfer: 4 << 10, block: 80 << 10, segments: 1, fsync: false, ..ior(true) };
    let slow = Pace { task: 0, first: Duration::from_millis(30), each: Duration::from_millis(3) };
    let job = IorJob { pace: Some(slow), ..job(dir.path(), params, 2) };
    let written = run_ior_phase(&job, IorPhase::Write, &Progress::default());
    let tasks: Vec<(String, TaskResult)> = written.iter().map(|r| ("c1".to_owned(), r.clone())).collect();
    let latency = pvfs_bench::results::PhaseLatency::of(&tasks).expect("measured");
    let ms = |ms: u64| ms * 1_000_000;
    assert_eq!(latency.all.count, 40, "20 transfers of each of 2 tasks");
    assert!(latency.all.min_ns >= ms(3) * 99 / 100, "{:?}", latency.all);
    assert!(latency.all.p50_ns >= ms(3) * 99 / 100 && latency.all.p50_ns < ms(33), "{:?}", latency.all);
    assert!(latency.all.max_ns >= ms(33) * 99 / 100, "the slow first transfer: {:?}", latency.all);
    assert_eq!(latency.clients.len(), 1);
    // Each task's histogram holds its own transfers.
    let task = |t: usize| pvfs_bench::latency::merge([written[t].latency.as_slice()]).count();
    assert_eq!((task(0), task(1)), (20, 20));
}

/// Issue 29: with a job tag, every task thread is named it as the kernel sees the thread
/// (`/proc/self/task/*/comm`, which a Lustre client with `jobid_var = procname_uid` reads as
/// `%e`); without one, `task N`. Read while the tasks run (each transfer paced to 20 ms).
#[test]
fn task_threads_carry_the_job_tag_the_kernel_sees() {
    fn names_while(run: impl FnOnce() + Send) -> std::collections::BTreeSet<String> {
        let seen = std::sync::Mutex::new(std::collections::BTreeSet::new());
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    for entry in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
                        if let Ok(comm) = std::fs::read_to_string(entry.path().join("comm")) {
                            seen.lock().unwrap().insert(comm.trim_end().to_owned());
                        }
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
            run();
            done.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        seen.into_inner().unwrap()
    }
    let dir = scratch();
    let params = IorParams { transfer: 4 << 10, block: 40 << 10, segments: 1, fsync: false, ..ior(true) };
    let slow = Pace { task: 0, first: Duration::ZERO, each: Duration::from_millis(20) };
    let tagged = IorJob {
        pace: Some(slow),
        thread_name: Some("pvabcdew0".into()),
        ..job(dir.path(), params.clone(), 2)
    };
    let names = names_while(|| {
        let r = run_ior_phase(&tagged, IorPhase::Write, &Progress::default());
        assert!(r.iter().all(|r| r.error.is_none()), "{r:?}");
    });
    assert!(names.contains("pvabcdew0"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("task ")), "{names:?}");
    let untagged = IorJob { pace: Some(slow), ..job(dir.path(), params, 2) };
    let names = names_while(|| drop(run_ior_phase(&untagged, IorPhase::Write, &Progress::default())));
    assert!(names.contains("task 0") && names.contains("task 1"), "{names:?}");
}

/// A task that returns before it is ready (it failed first, or panicked) arrives as it ends:
/// the others pass the start line and finish, and every task that waited began after every
/// other had arrived or ended.
#[test]
fn a_task_that_fails_before_the_start_line_holds_no_one() {
    let arrived = std::sync::atomic::AtomicUsize::new(0);
    let seen: Vec<TaskResult> = each_task(0..4, None, |task, ready| {
        if task == 2 {
            arrived.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return failed(task, &EngineError::NoTask);
        }
        arrived.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        ready.wait();
        ready.wait();
        let at_start = arrived.load(std::sync::atomic::Ordering::SeqCst);
        TaskResult { ops: at_start as u64, ..TaskResult::begun(task, SystemTime::now()) }
    });
    assert_eq!(seen.len(), 4);
    assert!(seen[2].error.is_some());
    // One that panics before its start arrives as it unwinds: the others still begin.
    let unwound: Vec<TaskResult> = each_task(0..3, None, |task, ready| {
        if task == 1 {
            panic!("a task's bug before its start");
        }
        ready.wait();
        TaskResult::begun(task, SystemTime::now())
    });
    assert!(matches!(unwound[1].error.as_deref(), Some(e) if e.contains("panicked")), "{:?}", unwound[1]);
    assert!(unwound[0].error.is_none() && unwound[2].error.is_none());
    for r in seen.iter().filter(|r| r.task != 2) {
        assert_eq!(r.ops, 4, "task {} began before every task had arrived", r.task);
    }
}

/// Issue 30: no task begins before every task's thread exists (IOR's and mdtest's ranks meet
/// at a barrier before a phase's clock starts), so a phase's time, counted from the first
/// task's start, never holds the other threads' creation: each of 16 tasks, as it begins,
/// finds all 16 task threads running under their name (a thread names itself as it starts).
#[test]
fn every_task_begins_once_every_tasks_thread_exists() {
    // Held after counting, so that no thread ends (and leaves the list) before all have counted.
    let counted = std::sync::Barrier::new(16);
    let seen: Vec<TaskResult> = each_task(0..16, Some("pvgate"), |task, ready| {
        ready.wait();
        let threads = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == "pvgate")
            })
            .count();
        counted.wait();
        TaskResult { ops: threads as u64, ..TaskResult::begun(task, SystemTime::now()) }
    });
    assert_eq!(seen.iter().map(|r| r.ops).collect::<Vec<_>>(), vec![16; 16]);
}

/// An mdtest job of `tasks` tasks in `dir`, one directory (depth 0), files only.
fn md_job(dir: &std::path::Path, params: MdtestParams, tasks: u32) -> MdtestJob {
    MdtestJob {
        params,
        dir: dir.to_owned(),
        tasks: 0..tasks,
        total_tasks: tasks,
        iteration: 0,
        stop_after: None,
        pace: None,
        thread_name: None,
    }
}

/// io500's mdtest-hard, small: `-n 6 -w 3901 -e 3901 -N 1 -X -G <seed> -F` in one shared
/// directory. Every file holds 3901 bytes of its writer's pattern; each task stats, reads and
/// removes the files of the tasks one, two and three strides on, as mdtest's do; a byte changed
/// in one file is found by the one task that reads it, named with the file.
#[test]
fn mdtest_hard_writes_reads_back_and_verifies_its_neighbours_files() {
    let dir = scratch();
    let params = MdtestParams {
        iterations: 1,
        items: 1,
        per_task: 6,
        stride: 1,
        write_bytes: 3901,
        read_bytes: 3901,
        verify: true,
        seed: 0xDEAD_BEEF,
        files_only: true,
        ..MdtestParams::default()
    };
    let job = md_job(dir.path(), params, 3);
    let run = |phase| {
        let r = run_mdtest_phase(&job, phase, &Progress::default());
        (r.iter().map(|r| r.ops).collect::<Vec<_>>(), r)
    };
    run(MdtestPhase::TreeCreate);
    let (ops, created) = run(MdtestPhase::FileCreate);
    assert!(created.iter().all(|r| r.error.is_none() && r.bytes == 6 * 3901), "{created:?}");
    assert_eq!(ops, [6, 6, 6]);
    let tree = dir.path().join("test-dir.0-0/mdtest_tree.0");
    for (task, n) in [(0, 0), (1, 5), (2, 3)] {
        let file = tree.join(format!("file.mdtest.{task}.{n}"));
        assert_eq!(std::fs::metadata(&file).unwrap().len(), 3901, "{}", file.display());
    }
    let (ops, stat) = run(MdtestPhase::FileStat);
    assert!(stat.iter().all(|r| r.error.is_none()), "{stat:?}");
    assert_eq!(ops, [6, 6, 6]);
    let (_, read) = run(MdtestPhase::FileRead);
    assert!(read.iter().all(|r| r.error.is_none() && r.bytes == 6 * 3901), "{read:?}");

    // Task 1's fifth file, one bit changed: task 2 reads it (its files are two strides on).
    let victim = tree.join("file.mdtest.1.4");
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[2000] ^= 4;
    std::fs::write(&victim, bytes).unwrap();
    let (_, read) = run(MdtestPhase::FileRead);
    assert!(read[0].error.is_none() && read[1].error.is_none(), "{read:?}");
    let error = read[2].error.as_deref().unwrap();
    assert!(error.starts_with("1 files read back differ from what task 1 wrote in them"), "{error}");
    assert!(error.contains("mdtest_tree.0/file.mdtest.1.4"), "{error}");

    run(MdtestPhase::FileRemove);
    run(MdtestPhase::TreeRemove);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing left behind");
}

/// io500's mdtest-easy, small: `-n 3 -u -L -F -N 1`. mdtest makes a task's files in the tree
/// of the task one stride on, and stats and removes there what that task's neighbour made.
#[test]
fn with_a_stride_and_unique_dirs_files_land_in_the_neighbours_tree() {
    let dir = scratch();
    let params = MdtestParams {
        iterations: 1,
        items: 1,
        per_task: 3,
        stride: 1,
        unique_dir: true,
        leaf_only: true,
        files_only: true,
        ..MdtestParams::default()
    };
    let job = md_job(dir.path(), params, 2);
    for phase in [MdtestPhase::TreeCreate, MdtestPhase::FileCreate] {
        let r = run_mdtest_phase(&job, phase, &Progress::default());
        assert!(r.iter().all(|r| r.error.is_none()), "{r:?}");
    }
    let files = |tree: u32| {
        let mut names: Vec<String> =
            std::fs::read_dir(dir.path().join(format!("test-dir.0-0/mdtest_tree.{tree}.0")))
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
        names.sort();
        names
    };
    assert_eq!(files(1), ["file.mdtest.0.0", "file.mdtest.0.1", "file.mdtest.0.2"]);
    assert_eq!(files(0), ["file.mdtest.1.0", "file.mdtest.1.1", "file.mdtest.1.2"]);
    for phase in [MdtestPhase::FileStat, MdtestPhase::FileRemove, MdtestPhase::TreeRemove] {
        let r = run_mdtest_phase(&job, phase, &Progress::default());
        assert!(r.iter().all(|r| r.error.is_none() && r.ops > 0), "{phase:?}: {r:?}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing left behind");
}

/// mdtest's `-W`: files are made until the stonewall, then every task goes on to the most any
/// task made (task 1 loses 400 ms first, so makes fewer by then); the later file phases stat
/// and remove that many, as mdtest's do from its `-x` count.
#[test]
fn mdtest_stonewall_brings_every_task_to_the_most_files_and_later_phases_to_that_count() {
    let dir = scratch();
    let params = MdtestParams {
        iterations: 1,
        items: 1,
        per_task: 1_000_000,
        deadline: 1,
        unique_dir: true,
        files_only: true,
        ..MdtestParams::default()
    };
    let job = MdtestJob { pace: Some(STRAGGLER), ..md_job(dir.path(), params, 2) };
    run_mdtest_phase(&job, MdtestPhase::TreeCreate, &Progress::default());
    let made = run_mdtest_phase(&job, MdtestPhase::FileCreate, &Progress::default());
    assert!(made.iter().all(|r| r.error.is_none()), "{made:?}");
    let ops: Vec<u64> = made.iter().map(|r| r.ops).collect();
    assert_eq!(ops[0], ops[1], "{ops:?}");
    assert!(ops[0] > 50 && ops[0] < 1000, "stopped by the 1 s stonewall at 1 ms a file: {ops:?}");
    assert!(made[1].end > made[0].end, "the straggler went on past the stonewall to catch up");
    let carried = pvfs_bench::request::carried(
        &pvfs_bench::params::Workload::Mdtest(job.params.clone()),
        Phase::Mdtest(MdtestPhase::FileCreate),
        ops.iter().copied(),
    );
    assert_eq!(carried, Some(Some(ops[0])));
    let later = MdtestJob { stop_after: Some(ops[0]), pace: None, ..job.clone() };
    for phase in [MdtestPhase::FileStat, MdtestPhase::FileRemove] {
        let r = run_mdtest_phase(&later, phase, &Progress::default());
        assert!(r.iter().all(|r| r.error.is_none() && r.ops == ops[0]), "{phase:?}: {r:?}");
    }
    let r = run_mdtest_phase(&later, MdtestPhase::TreeRemove, &Progress::default());
    assert!(r.iter().all(|r| r.error.is_none()), "every file was removed, so the trees go: {r:?}");

    // A share of a run has no one to agree with here: refused, nothing made.
    let share = MdtestJob { total_tasks: 4, ..md_job(dir.path(), job.params.clone(), 2) };
    let r = run_mdtest_phase(&share, MdtestPhase::FileCreate, &Progress::default());
    let error = r[0].error.as_deref().unwrap();
    assert!(error.contains("mdtest's -W) needs every task of the run to agree"), "{error}");
}

/// IOR's `-R`: a read compares every transfer with what its writer wrote (the `-G` signature's
/// pattern, stamped per offset), its partner's with `-C`; a changed byte is found, naming the
/// file, how many transfers differ and the first one's offset. `-k` leaves the files.
#[test]
fn ior_verify_finds_a_changed_byte_naming_the_file_and_offset() {
    let dir = scratch();
    for packet in [DataPacket::Timestamp, DataPacket::Offset, DataPacket::Random] {
        let params = IorParams {
            verify: true,
            signature: 0x8000_0001,
            reorder: true,
            keep: true,
            packet,
            ..ior(true)
        };
        let job = IorJob { tasks_per_client: 1, ..job(dir.path(), params, 2) };
        let written = run_ior_phase(&job, IorPhase::Write, &Progress::default());
        assert!(written.iter().all(|r| r.error.is_none()), "{written:?}");
        let read = run_ior_phase(&job, IorPhase::Read, &Progress::default());
        assert!(read.iter().all(|r| r.error.is_none() && r.ops == 8), "{packet}: {read:?}");

        // Task 1's file, one byte in its third transfer: task 0 reads it (-C).
        let victim = job.file_of(1);
        let mut bytes = std::fs::read(&victim).unwrap();
        bytes[(128 << 10) + 77] ^= 0x40;
        std::fs::write(&victim, bytes).unwrap();
        let read = run_ior_phase(&job, IorPhase::Read, &Progress::default());
        assert!(read[1].error.is_none(), "{read:?}");
        let error = read[0].error.as_deref().unwrap();
        assert!(error.starts_with("1 of 8 transfers read back from "), "{error}");
        assert!(
            error.contains("ior.00000001 differ from what task 1 wrote (the first at offset 131072)"),
            "{error}"
        );
        remove_files(&job).unwrap();
    }
}
