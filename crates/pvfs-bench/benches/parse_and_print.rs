//! The parsers `bench import` and the mpi launcher read IOR's and mdtest's outputs with, over a
//! large output (an IOR run of 5,000 repetitions: 10,000 Results rows), and the engine's
//! printing of IOR's tables. `cargo bench -p pvfs-bench`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pvfs_bench::params::{Preset, Workload};
use pvfs_bench::summary::{IorRun, ior_text};
use std::hint::black_box;

/// IOR 4.1's real output with its Results table grown to `repetitions` write/read pairs.
fn large_ior_output(repetitions: usize) -> String {
    let real = include_str!("../testdata/ior/ior_tput.txt");
    let lines: Vec<&str> = real.lines().collect();
    let rows = lines.iter().position(|l| l.starts_with("write ")).expect("a Results row");
    let mut text = lines[..rows].join("\n") + "\n";
    // A row ends with its iteration, `%-4d`.
    let (write, read) =
        (&lines[rows][..lines[rows].len() - 4], &lines[rows + 1][..lines[rows + 1].len() - 4]);
    for i in 0..repetitions {
        text += &format!("{write}{i:<4}\n{read}{i:<4}\n");
    }
    let summary = lines.iter().position(|l| l.starts_with("Summary of all tests")).expect("a summary");
    text + "\n" + &lines[summary..].join("\n") + "\n"
}

fn parse(c: &mut Criterion) {
    let text = large_ior_output(5000);
    let mut group = c.benchmark_group("parse");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("IOR text, 10,000 Results rows", |b| {
        b.iter(|| black_box(pvfs_bench::parse::parse(black_box(&text)).expect("parses")))
    });
    let mdtest = include_str!("../testdata/ior/mdtest_paper_lustre.txt");
    group.throughput(Throughput::Bytes(mdtest.len() as u64));
    group.bench_function("mdtest text, one run", |b| {
        b.iter(|| black_box(pvfs_bench::parse::parse(black_box(mdtest)).expect("parses")))
    });
    group.finish();
}

fn print(c: &mut Criterion) {
    let parsed = pvfs_bench::parse::parse(&large_ior_output(5000)).expect("parses");
    let Workload::Ior(params) = Preset::Throughput.workload() else { unreachable!() };
    let run = IorRun { params: &params, tasks: 2, tasks_per_client: 2 };
    c.bench_function("print: IOR's Results and Summary, 10,000 rows", |b| {
        b.iter(|| black_box(ior_text(run, black_box(&parsed.iterations), &parsed.ior)))
    });
}

criterion_group!(benches, parse, print);
criterion_main!(benches);
