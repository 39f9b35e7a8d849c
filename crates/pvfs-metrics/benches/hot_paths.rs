//! What every agent does every second, measured: read /proc into a sample (descriptors kept
//! open, read again from offset 0), turn two samples into iostat/sar rates, append the sample to
//! the history ring and read it back by cursor; and what an agent does each second only while
//! someone asks for its processes: scan every process's stat and io and pick the top 5 by CPU
//! and by I/O; and parsing a Lustre server's counters. `cargo bench -p pvfs-metrics`.

use criterion::{Criterion, criterion_group, criterion_main};
use pvfs_host::Root;
use pvfs_metrics::rates::Rates;
use pvfs_metrics::ring::Ring;
use pvfs_metrics::sample::{DeviceFilter, Sample, Sampler};
use std::hint::black_box;

/// Two real samples of this machine, 20 ms apart (so the rates have something to divide).
fn two_samples() -> (Sample, Sample) {
    let mut sampler = Sampler::new(Root::system(), DeviceFilter::default());
    let first = sampler.sample().expect("sampling this machine's /proc");
    std::thread::sleep(std::time::Duration::from_millis(20));
    (first, sampler.sample().expect("sampling this machine's /proc"))
}

fn sampling(c: &mut Criterion) {
    let mut sampler = Sampler::new(Root::system(), DeviceFilter::default());
    c.bench_function("sample: /proc and /sys into a Sample", |b| {
        b.iter(|| black_box(sampler.sample().expect("sampling")))
    });
}

fn rates(c: &mut Criterion) {
    let (prev, curr) = two_samples();
    c.bench_function("rates: iostat -x, sar -n DEV/-u/-r/-q between two samples", |b| {
        b.iter(|| black_box(Rates::between(black_box(&prev), black_box(&curr))))
    });
}

fn ring(c: &mut Criterion) {
    let (_, sample) = two_samples();
    // An hour at 1 Hz, as the agent keeps.
    let mut ring = Ring::new(1, 3600);
    let mut at = sample.clone();
    for _ in 0..3600 {
        at.time_unix_ns += 1_000_000_000;
        ring.push(&at);
    }
    c.bench_function("ring: append a sample to a full hour", |b| {
        b.iter(|| {
            at.time_unix_ns += 1_000_000_000;
            black_box(ring.push(black_box(&at)))
        })
    });
    let last = ring.last_seq();
    c.bench_function("ring: read the sample a minute back (keyframe + deltas)", |b| {
        b.iter(|| black_box(ring.get(black_box(last - 60))))
    });
}

fn processes(c: &mut Criterion) {
    let mut scanner = pvfs_metrics::processes::ProcessScanner::new().expect("sysinfo on Linux");
    let count = scanner.scan().len();
    c.bench_function(&format!("processes: scan {count} processes (stat, io) and take the top 5"), |b| {
        b.iter(|| black_box(pvfs_metrics::processes::top(&scanner.scan(), 5)))
    });
}

/// Lustre's counters as a server prints them (issue 29): a 2.14 server's 93 KB `lctl get_param`
/// output with every export's stats, split into parameters and every stats parameter parsed —
/// the figure to put beside lustre_collector's 2.8 ms for the same file (ARCHITECTURE.md).
fn lustre(c: &mut Criterion) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/lustre/valid_lustre-2.14.0_ddn133_2.14.0_ddn133_exports.txt");
    let text = std::fs::read_to_string(&path).expect("the exports fixture");
    c.bench_function(&format!("lustre: a {} KB lctl output's parameters and stats", text.len() >> 10), |b| {
        b.iter(|| {
            let params = pvfs_metrics::lustre::lctl_params(black_box(&text));
            let stats: Vec<_> = params
                .iter()
                .filter(|p| p.name.ends_with(".stats") || p.name.ends_with(".md_stats"))
                .map(|p| pvfs_metrics::lustre::parse_stats(p.value))
                .collect();
            black_box((params.len(), stats))
        })
    });
}

/// What the sampler adds each second on a Lustre server (issue 29): a 2.15 server's three
/// targets read from their files where lctl finds them (each OST's stats, the MDT's md_stats,
/// num_exports, recovery_status, the OSDs' space, health_check: 21 files, laid out in a
/// temporary directory as the kernel holds them); and on a node without Lustre or GlusterFS,
/// the lookups that find none.
fn file_system_second(c: &mut Criterion) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/lustre/valid_valid.txt");
    let text = std::fs::read_to_string(&path).expect("the server fixture");
    let dir = tempfile::tempdir().expect("a temporary directory");
    for p in pvfs_metrics::lustre::lctl_params(&text).into_iter().filter(|p| !p.name.contains(".exports.")) {
        let tree = if p.value.contains('\n') { "proc/fs/lustre" } else { "sys/fs/lustre" };
        let file = dir.path().join(tree).join(p.name.replace('.', "/"));
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("the tree");
        std::fs::write(&file, format!("{}\n", p.value.trim_end_matches('\n'))).expect("a parameter");
    }
    let root = Root::at(dir.path());
    c.bench_function("lustre: a server's second (3 targets), its files found afresh", |b| {
        b.iter(|| black_box(pvfs_metrics::lustre::node::read(&root)))
    });
    // The sampler's steady state: the files found once every FIND_EVERY seconds.
    let mut reader = pvfs_metrics::lustre::node::Reader::default();
    c.bench_function("lustre: a server's second (3 targets), as the sampler reads it", |b| {
        b.iter(|| black_box(reader.read(&root)))
    });
    // The same server with a thousand clients' exports (a third of them on each target, each
    // file a real 2.14 export's): every one read each second, each target's busiest kept.
    let exports = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/lustre/valid_lustre-2.14.0_ddn133_2.14.0_ddn133_exports.txt");
    let exports = std::fs::read_to_string(&exports).expect("the exports fixture");
    let params = pvfs_metrics::lustre::lctl_params(&exports);
    let of = |name: &str| params.iter().find(|p| p.name == name).expect("an export's stats").value;
    let ost = of("obdfilter.ai400x2-OST0000.exports.192.168.0.100@o2ib.stats");
    let mdt = of("mdt.ai400x2-MDT0000.exports.192.168.0.100@o2ib.stats");
    for (component, target, text, count) in [
        ("obdfilter", "ai400-OST0000", ost, 334),
        ("obdfilter", "ai400-OST0001", ost, 333),
        ("mdt", "ai400-MDT0000", mdt, 333),
    ] {
        for i in 0..count {
            let file = dir.path().join(format!(
                "proc/fs/lustre/{component}/{target}/exports/10.1.{}.{}@o2ib/stats",
                i / 250,
                i % 250
            ));
            std::fs::create_dir_all(file.parent().expect("a parent")).expect("the tree");
            std::fs::write(&file, text).expect("an export");
        }
    }
    let mut reader = pvfs_metrics::lustre::node::Reader::default();
    c.bench_function("lustre: a server's second (3 targets, 1,000 exports), as the sampler reads it", |b| {
        b.iter(|| black_box(reader.read(&root)))
    });
    let empty = tempfile::tempdir().expect("a temporary directory");
    let none = Root::at(empty.path());
    c.bench_function("file systems: a node without Lustre or bricks", |b| {
        b.iter(|| {
            black_box((pvfs_metrics::lustre::node::read(&none), pvfs_metrics::gluster::local_bricks(&none)))
        })
    });
}

criterion_group!(benches, sampling, rates, ring, processes, lustre, file_system_second);
criterion_main!(benches);
