//! What gmetad polling 1,000 agents costs them together: the gmond XML dump of one node, with
//! this machine's latest sample and the rates over its last second, rendered for 1,000 host
//! names. `cargo bench -p pvfs-agent`.

use criterion::{Criterion, criterion_group, criterion_main};
use pvfs_agent::gmond::{Snapshot, StaticFacts, render};
use pvfs_host::Root;
use pvfs_metrics::rates::Rates;
use pvfs_metrics::ring::Stamped;
use pvfs_metrics::sample::{DeviceFilter, Sampler};
use std::hint::black_box;

const NODES: usize = 1000;

fn dumps(c: &mut Criterion) {
    let root = Root::system();
    let mut sampler = Sampler::new(root.clone(), DeviceFilter::default());
    let first = sampler.sample().expect("sampling this machine's /proc");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let second = sampler.sample().expect("sampling this machine's /proc");
    let rates = Rates::between(&first, &second);
    let latest = Stamped { epoch: 1, seq: 2, sample: second };
    let facts = StaticFacts::read(&root);
    let hosts: Vec<String> = (0..NODES).map(|i| format!("node{i:04}")).collect();
    let snapshot = |host: &str| -> String {
        render(&Snapshot {
            cluster: "bench",
            host,
            ip: "10.0.0.1".into(),
            started: 1_700_000_000,
            now: latest.sample.time_unix_ns / 1_000_000_000 + 1,
            facts: &facts,
            latest: Some(&latest),
            rates: Some(&rates),
            disk_space: (512.0, 256.0, 50.0),
        })
    };
    let one = snapshot("node0000");
    c.bench_function(&format!("gmond: one node's XML dump ({} KB)", one.len() / 1024), |b| {
        b.iter(|| black_box(snapshot(black_box("node0000"))))
    });
    c.bench_function(&format!("gmond: {NODES} nodes' XML dumps"), |b| {
        b.iter(|| {
            for host in &hosts {
                black_box(snapshot(black_box(host)));
            }
        })
    });
}

criterion_group!(benches, dumps);
criterion_main!(benches);
