//! Fuzzing the wire → domain conversions on stable Rust: bytes a peer could send are decoded as
//! each message an agent or coordinator receives (with prost, as tonic does) and converted;
//! decoding may fail and conversion may refuse, but neither may panic.
//!
//! Random bytes alone rarely decode past the first field, so most cases are built as protobuf
//! wire data (tags, varints, fixed-width and length-delimited fields, nested up to four deep)
//! with field numbers in the messages' range and extreme values: they decode, and reach the
//! conversions with unknown enum values, missing submessages and out-of-range numbers.

use crate::convert::bench::{launch_request_from, phase_request_from};
use crate::convert::steps_from_wire;
use crate::pb;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed};
use prost::Message;

/// Cases per property: `PROPTEST_CASES` (set by `cargo xtask fuzz`) or 4096, from a fixed seed.
/// More than the other crates' 256: a case costs microseconds here, and only about one in ten
/// reaches a step's conversion intact (measured: 27 of 256).
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(4096);
    let seed = std::env::var("PROPTEST_RNG_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(12);
    Config {
        cases,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(seed),
        // Shrunk failures are reported in the test's output; no regression files in the tree.
        failure_persistence: None,
        ..Config::default()
    }
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Integers at the edges: zero, small, negative (as proto3 encodes an int32), and maxima.
fn number() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        0u64..64,
        Just(u64::MAX),
        Just(u32::MAX as u64),
        Just(i32::MIN as i64 as u64),
        Just((-1i64) as u64),
        any::<u64>(),
    ]
}

/// One encoded field of a message, its payload nested from `inner`.
fn field(inner: BoxedStrategy<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let tag = |number: u32, wire: u32| u64::from(number << 3 | wire);
    prop_oneof![
        (1u32..40, number()).prop_map(move |(n, v)| {
            let mut out = Vec::new();
            varint(tag(n, 0), &mut out);
            varint(v, &mut out);
            out
        }),
        (1u32..40, any::<u64>()).prop_map(move |(n, v)| {
            let mut out = Vec::new();
            varint(tag(n, 1), &mut out);
            out.extend(v.to_le_bytes());
            out
        }),
        (1u32..40, any::<u32>()).prop_map(move |(n, v)| {
            let mut out = Vec::new();
            varint(tag(n, 5), &mut out);
            out.extend(v.to_le_bytes());
            out
        }),
        (1u32..40, prop_oneof![inner, "\\PC{0,24}".prop_map(String::into_bytes)]).prop_map(
            move |(n, payload)| {
                let mut out = Vec::new();
                varint(tag(n, 2), &mut out);
                varint(payload.len() as u64, &mut out);
                out.extend(payload);
                out
            }
        ),
    ]
}

/// A message's encoding: fields, each possibly a nested message.
fn message() -> impl Strategy<Value = Vec<u8>> {
    let leaf = prop::collection::vec(any::<u8>(), 0..16);
    leaf.prop_recursive(4, 256, 8, |inner| {
        prop::collection::vec(field(inner.boxed()), 0..8).prop_map(|fields| fields.concat())
    })
}

/// Valid encodings to mutate: generated fields alone rarely make a message with a step in it
/// (a field number with another wire type than the schema's fails the whole decode).
fn seeds() -> Vec<Vec<u8>> {
    use pvfs_steps::{Gate, GateKind, GlusterLayout, GlusterVolume, LustreRole, LustreTarget, Raid0, Step};
    use std::time::Duration;
    let steps = [
        Step::Raid0(Raid0 {
            device: "/dev/md0".into(),
            members: vec!["/dev/sdc".into()],
            chunk_kib: Some(256),
            wipe: vec![],
            conf: None,
        }),
        Step::GlusterVolume(GlusterVolume {
            name: "gv0".into(),
            layout: GlusterLayout::Disperse { disperse: 3, redundancy: 1 },
            bricks: vec!["a:/b".into()],
            options: vec![("k".into(), "v".into())],
        }),
        Step::LustreTarget(LustreTarget {
            device: "/dev/md0".into(),
            fsname: "LustreFS".into(),
            role: LustreRole::Ost,
            index: 7,
            mgsnode: Some("10.0.0.4@tcp".into()),
            backfstype: "ldiskfs".into(),
            wipe: false,
        }),
        Step::Gate(Gate {
            kind: GateKind::LnetPing { nid: "10.0.0.4@tcp".into() },
            deadline: Duration::from_secs(120),
        }),
    ];
    let apply = pb::ApplyRequest { steps: steps.iter().map(pb::Step::from).collect(), ..Default::default() };
    let sample = pb::Sample {
        disks: vec![pb::DiskCounters { name: "sdb".into(), ..Default::default() }],
        nics: vec![pb::NicCounters { name: "eth0".into(), ..Default::default() }],
        cpu: Some(pb::CpuCounters::default()),
        ..Default::default()
    };
    vec![apply.encode_to_vec(), sample.encode_to_vec()]
}

/// A seed with bytes overwritten, a generated message spliced in, and possibly cut.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let seeds = seeds();
    (
        0..seeds.len(),
        prop::collection::vec((any::<usize>(), any::<u8>()), 0..3),
        prop::option::weighted(0.25, (any::<usize>(), message())),
        prop::option::weighted(0.2, any::<usize>()),
    )
        .prop_map(move |(seed, writes, splice, cut)| {
            let mut bytes = seeds[seed].clone();
            for (at, byte) in writes {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            if let Some((at, fields)) = splice {
                let at = at % (bytes.len() + 1);
                bytes.splice(at..at, fields);
            }
            if let Some(cut) = cut {
                bytes.truncate(cut % (bytes.len() + 1));
            }
            bytes
        })
}

/// Mutated valid messages, wire data, or plain random bytes.
fn wire() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![4 => mutated(), 1 => message(), 1 => prop::collection::vec(any::<u8>(), 0..512)]
}

/// Decodes `bytes` as every received message and converts what decodes.
fn decode_and_convert(bytes: &[u8]) {
    if let Ok(m) = pb::NodeInfo::decode(bytes) {
        let _ = pvfs_metrics::facts::NodeInfo::from(m);
    }
    if let Ok(m) = pb::Sample::decode(bytes) {
        let _ = pvfs_metrics::ring::Stamped::from(m);
    }
    if let Ok(pb::MetricsEvent { event: Some(pb::metrics_event::Event::Sample(s)) }) =
        pb::MetricsEvent::decode(bytes)
    {
        let _ = pvfs_metrics::ring::Stamped::from(s);
    }
    if let Ok(m) = pb::BenchPhaseRequest::decode(bytes) {
        let _ = phase_request_from(m);
    }
    if let Ok(m) = pb::LaunchRequest::decode(bytes) {
        let _ = launch_request_from(m);
    }
    if let Ok(m) = pb::TaskResult::decode(bytes) {
        let _ = pvfs_bench::summary::TaskResult::from(m);
    }
    if let Ok(m) = pb::ApplyRequest::decode(bytes) {
        let _ = steps_from_wire(m.steps);
    }
    if let Ok(m) = pb::ApplyEvent::decode(bytes) {
        let _ = Option::<pvfs_steps::StepEvent>::from(m);
    }
}

proptest! {
    #![proptest_config(config())]

    /// Never a panic, whatever a peer sends.
    #[test]
    fn fuzz_proto_decode_and_convert(bytes in wire()) {
        decode_and_convert(&bytes);
    }
}
