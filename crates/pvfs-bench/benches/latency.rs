//! What timing every transfer costs the engine (issue 28 asks for at most 2 % of a phase's
//! throughput): two clock reads and two histogram records per transfer or operation (the
//! phase's, and the recent one handed on for the per-second timeline, which is merged and
//! emptied ten times a second), and a task's histogram turned into its buckets once at the
//! end. `cargo bench -p pvfs-bench --bench
//! latency`; the per-transfer figure against a transfer's own time (a 4 KiB O_DIRECT write is
//! tens of microseconds) is the overhead.

use criterion::{Criterion, criterion_group, criterion_main};
use pvfs_bench::latency::Recorder;
use std::hint::black_box;
use std::time::Instant;

fn per_transfer(c: &mut Criterion) {
    let mut group = c.benchmark_group("latency");
    // A spread like a real phase's: 20 µs to 20 ms.
    let values: Vec<u64> = (0..4096u64).map(|i| 20_000 + (i * i * 1_193) % 20_000_000).collect();
    group.bench_function("time and record one transfer", |b| {
        let (mut whole, mut recent, mut shared) = (Recorder::new(), Recorder::new(), Recorder::new());
        let mut i = 0;
        b.iter(|| {
            let since = Instant::now();
            black_box(values[i % values.len()]);
            let ns = since.elapsed().as_nanos() as u64 + values[i % values.len()];
            whole.record(ns);
            recent.record(ns);
            // The hand-over, at a rate like a busy task's (every 1,000 transfers; the engine's
            // is every 100 ms, so less often than this for any transfer under 100 µs).
            if i % 1000 == 0 {
                shared.add(&recent);
                recent.reset();
            }
            i += 1;
        });
    });
    group.bench_function("a task's buckets, 1 M transfers recorded", |b| {
        let mut recorder = Recorder::new();
        (0..1_000_000u64).for_each(|i| recorder.record(values[(i % 4096) as usize]));
        b.iter(|| black_box(recorder.buckets()));
    });
    group.finish();
}

criterion_group!(benches, per_transfer);
criterion_main!(benches);
