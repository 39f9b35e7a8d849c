//! The fuzz corpus and its mutations, for property tests of every reader of tools' outputs:
//! this crate's parsers (`parse::fuzz`) and, through the `testing` feature, pvfs-engine's fio
//! reader. One corpus and one set of edits, so every reader is fuzzed with the same inputs and
//! `cargo xtask fuzz` steers them all with the same `PROPTEST_CASES`/`PROPTEST_RNG_SEED`.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed};
use std::path::Path;

/// Cases per property: `PROPTEST_CASES` (set by `cargo xtask fuzz`) or 256, from a fixed seed.
pub fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256);
    let seed = std::env::var("PROPTEST_RNG_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(12);
    Config {
        cases,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(seed),
        // Shrunk failures are reported in the test's output; regression files would be written
        // next to this source, which CI's checkout must not grow.
        failure_persistence: None,
        ..Config::default()
    }
}

/// The seed corpus: every real output beside the parser tests. (Test support: a corpus that
/// cannot be read is a broken checkout, so it panics.)
pub fn corpus() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/ior");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e != "md" && e != "tsv"))
        .collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// Lines that steer the readers into their states: banners, table headers, JSON openers,
/// SUMMARY headings, and values no tool prints.
pub const HOSTILE: &[&str] = &[
    "IOR-4.1.0+dev: MPI Coordinated Test of Parallel I/O",
    "mdtest-4.1.0+dev was launched with 2 total task(s) on 1 node(s)",
    "Results: ",
    "access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter",
    "write     1e999      -1         NaN         inf        0          0          0          0          0          0",
    "Summary of all tests:",
    "Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    Mean(s) Stonewall(s) Stonewall(MiB) Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt   blksiz    xsize aggs(MiB)   API RefNum",
    "SUMMARY rate (in ops/sec): (of 2 iterations)",
    "SUMMARY time (in furlongs): (of 2 iterations)",
    "   Operation                     Max            Min           Mean        Std Dev",
    "   File creation     :          1.0            2.0           x          ",
    "{",
    "\"tests\": [{\"Results\": [[{\"access\": 7}]]}],",
    "\"summary\": [{\"operation\": null}]",
    "}",
    "]]]]]]]]",
    "Max Write: 12 furlongs/s",
    "ERROR: ",
    "Command line        : ior -O summaryFile=/dev/null",
    "\u{feff}\u{202e}\u{0}\r",
    "",
];

/// One change to an input.
#[derive(Debug, Clone)]
pub enum Edit {
    FlipBit { at: usize, bit: u8 },
    DuplicateLine { at: usize },
    DropLine { at: usize },
    Truncate { at: usize },
    InsertLine { at: usize, line: usize },
}

pub fn edit() -> impl Strategy<Value = Edit> {
    let at = any::<usize>();
    prop_oneof![
        (at, 0u8..8).prop_map(|(at, bit)| Edit::FlipBit { at, bit }),
        at.prop_map(|at| Edit::DuplicateLine { at }),
        at.prop_map(|at| Edit::DropLine { at }),
        at.prop_map(|at| Edit::Truncate { at }),
        (at, 0..HOSTILE.len()).prop_map(|(at, line)| Edit::InsertLine { at, line }),
    ]
}

/// Applies `edits` in order; positions are taken modulo the input's current size.
pub fn mutate(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for edit in edits {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1))
            .filter(|&i| i < bytes.len())
            .collect();
        let line = |at: usize| {
            let start = *starts.get(at % starts.len().max(1)).unwrap_or(&0);
            let end = bytes[start..].iter().position(|b| *b == b'\n').map_or(bytes.len(), |e| start + e + 1);
            start..end
        };
        match *edit {
            Edit::FlipBit { at, bit } if !bytes.is_empty() => {
                let at = at % bytes.len();
                bytes[at] ^= 1 << bit;
            }
            Edit::DuplicateLine { at } => {
                let range = line(at);
                let copy = bytes[range.clone()].to_vec();
                bytes.splice(range.start..range.start, copy);
            }
            Edit::DropLine { at } => {
                bytes.drain(line(at));
            }
            Edit::Truncate { at } => bytes.truncate(at % (bytes.len() + 1)),
            Edit::InsertLine { at, line: hostile } => {
                let start = line(at).start;
                let text = format!("{}\n", HOSTILE[hostile]);
                bytes.splice(start..start, text.into_bytes());
            }
            Edit::FlipBit { .. } => {}
        }
    }
    bytes
}

/// A corpus file with up to 8 edits.
pub fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let corpus = corpus();
    (0..corpus.len(), prop::collection::vec(edit(), 0..8))
        .prop_map(move |(file, edits)| mutate(corpus[file].clone(), &edits))
}
