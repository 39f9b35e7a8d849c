//! The built-in engine's per-transfer path on a local directory (the page cache, so the
//! engine's own cost shows rather than a disk's): IOR's write and read phases of 64 MiB per
//! task in 1 MiB and 4 KiB transfers, one and two tasks; and the 4 KiB one untimed, so the
//! two 4 KiB figures' difference is what timing every transfer (and handing its time on for
//! the per-second timeline) costs where it shows most — a transfer from the page cache takes
//! a microsecond or two, one to a disk tens of microseconds or more. `cargo bench -p
//! pvfs-engine`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pvfs_bench::params::Preset;
use std::hint::black_box;

fn transfers(c: &mut Criterion) {
    let base = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/engine-bench"));
    std::fs::create_dir_all(&base).expect("making target/engine-bench");
    let dir = tempfile::tempdir_in(base.canonicalize().expect("target/engine-bench")).expect("a temp dir");
    let mut group = c.benchmark_group("engine");
    group.sample_size(10);
    for (transfer, tasks, timed) in [("1m", 1u32, true), ("1m", 2, true), ("4k", 1, true), ("4k", 1, false)] {
        let mut workload = Preset::Throughput.workload();
        workload
            .set_all([("t", transfer), ("b", "64m"), ("i", "1"), ("B", "false"), ("C", "false")])
            .expect("valid");
        group.throughput(Throughput::Bytes(2 * u64::from(tasks) * (64 << 20)));
        let untimed = if timed { "" } else { ", untimed" };
        group.bench_function(
            format!("IOR write+read, {tasks} task(s) x 64m in {transfer} transfers{untimed}"),
            |b| {
                b.iter(|| {
                    black_box(pvfs_engine::local::run(&workload, dir.path(), tasks, timed).expect("runs"))
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, transfers);
criterion_main!(benches);
