//! What the agent does per sample per stream: a stamped sample of this machine turned into its
//! wire form and encoded (and the coordinator's way back). `cargo bench -p pvfs-proto`.

use criterion::{Criterion, criterion_group, criterion_main};
use prost::Message;
use pvfs_host::Root;
use pvfs_metrics::ring::Stamped;
use pvfs_metrics::sample::{DeviceFilter, Sampler};
use pvfs_proto::pb;
use std::hint::black_box;

fn encode(c: &mut Criterion) {
    let sample =
        Sampler::new(Root::system(), DeviceFilter::default()).sample().expect("sampling this machine");
    let stamped = Stamped { epoch: 1, seq: 42, sample };
    c.bench_function("proto: a sample to its wire form and encoded", |b| {
        b.iter(|| black_box(pb::Sample::from(black_box(&stamped)).encode_to_vec()))
    });
    let bytes = pb::Sample::from(&stamped).encode_to_vec();
    c.bench_function(&format!("proto: a sample decoded ({} bytes)", bytes.len()), |b| {
        b.iter(|| black_box(pb::Sample::decode(black_box(bytes.as_slice())).expect("decodes")))
    });
}

criterion_group!(benches, encode);
criterion_main!(benches);
