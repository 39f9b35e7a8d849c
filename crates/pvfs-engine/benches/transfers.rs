//! The built-in engine's per-transfer path on a local directory (the page cache, so the
//! engine's own cost shows rather than a disk's): IOR's write and read phases of 64 MiB per
//! task in 1 MiB and 4 KiB transfers, one and two tasks. `cargo bench -p pvfs-engine`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pvfs_bench::params::Preset;
use std::hint::black_box;

fn transfers(c: &mut Criterion) {
    let base = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/engine-bench"));
    std::fs::create_dir_all(&base).expect("making target/engine-bench");
    let dir = tempfile::tempdir_in(base.canonicalize().expect("target/engine-bench")).expect("a temp dir");
    let mut group = c.benchmark_group("engine");
    group.sample_size(10);
    for (transfer, tasks) in [("1m", 1u32), ("1m", 2), ("4k", 1)] {
        let mut workload = Preset::Throughput.workload();
        workload
            .set_all([("t", transfer), ("b", "64m"), ("i", "1"), ("B", "false"), ("C", "false")])
            .expect("valid");
        group.throughput(Throughput::Bytes(2 * u64::from(tasks) * (64 << 20)));
        group.bench_function(format!("IOR write+read, {tasks} task(s) x 64m in {transfer} transfers"), |b| {
            b.iter(|| black_box(pvfs_engine::local::run(&workload, dir.path(), tasks, true).expect("runs")))
        });
    }
    group.finish();
}

criterion_group!(benches, transfers);
criterion_main!(benches);
