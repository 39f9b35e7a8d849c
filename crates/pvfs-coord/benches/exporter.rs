//! What a Prometheus scrape of `pvfsctl serve` costs: the exposition of 1,000 nodes, each with
//! this machine's latest sample and the rates over its last second, in the classic text format
//! and in OpenMetrics. `cargo bench -p pvfs-coord`.

use criterion::{Criterion, criterion_group, criterion_main};
use pvfs_coord::exporter::{ClusterView, NodeView, render};
use pvfs_coord::stream::StreamEvent;
use pvfs_host::Root;
use pvfs_metrics::ring::Stamped;
use pvfs_metrics::sample::{DeviceFilter, Sampler};
use std::hint::black_box;

const NODES: usize = 1000;

/// 1,000 nodes that have each sent two consecutive samples (so each has rates).
fn cluster() -> ClusterView {
    let mut sampler = Sampler::new(Root::system(), DeviceFilter::default());
    let first = sampler.sample().expect("sampling this machine's /proc");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let second = sampler.sample().expect("sampling this machine's /proc");
    let mut view = ClusterView::default();
    for i in 0..NODES {
        let node = format!("node{i:04}");
        let role = if i % 10 == 0 { "server" } else { "client" };
        view.nodes.insert(node.clone(), NodeView { role: role.into(), ..NodeView::default() });
        for (seq, sample) in [(1, &first), (2, &second)] {
            let stamped = Box::new(Stamped { epoch: 1, seq, sample: sample.clone() });
            view.apply(StreamEvent::Sample { node: node.clone(), stamped, processes: Vec::new() });
        }
    }
    view
}

fn exposition(c: &mut Criterion) {
    let view = cluster();
    let text = render(&view, false);
    let lines = text.lines().count();
    c.bench_function(
        &format!("exporter: text 0.0.4 of {NODES} nodes ({lines} lines, {} KB)", text.len() / 1024),
        |b| b.iter(|| black_box(render(black_box(&view), false))),
    );
    c.bench_function(&format!("exporter: OpenMetrics of {NODES} nodes"), |b| {
        b.iter(|| black_box(render(black_box(&view), true)))
    });
}

criterion_group!(benches, exposition);
criterion_main!(benches);
