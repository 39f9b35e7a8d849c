//! Fuzzing the output readers on stable Rust: proptest mutates the real IOR, mdtest and fio
//! outputs in `testdata/ior/` (byte flips, duplicated, dropped, cut and hostile lines) and checks
//! that reading never panics, that an error names a line inside the input, and that work grows
//! linearly with the input.
//!
//! proptest rather than `cargo fuzz`: it runs on stable, inside `cargo nextest`, with a fixed
//! seed (CI never flakes) and shrinks a failure to a small input. `cargo xtask fuzz` runs the
//! same properties with many more cases.

use super::{ParseError, parse_reader};
use crate::engine::IorPhase;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed};
use std::path::Path;

/// Cases per property: `PROPTEST_CASES` (set by `cargo xtask fuzz`) or 256, from a fixed seed.
fn config() -> Config {
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

/// The seed corpus: every real output beside the parser tests.
fn corpus() -> Vec<Vec<u8>> {
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
const HOSTILE: &[&str] = &[
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
enum Edit {
    FlipBit { at: usize, bit: u8 },
    DuplicateLine { at: usize },
    DropLine { at: usize },
    Truncate { at: usize },
    InsertLine { at: usize, line: usize },
}

fn edit() -> impl Strategy<Value = Edit> {
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
fn mutate(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
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
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let corpus = corpus();
    (0..corpus.len(), prop::collection::vec(edit(), 0..8))
        .prop_map(move |(file, edits)| mutate(corpus[file].clone(), &edits))
}

/// The line an error names, if it names one.
fn error_line(error: &ParseError) -> Option<usize> {
    match error {
        ParseError::Io { line, .. }
        | ParseError::Json { line, .. }
        | ParseError::RowWidth { line, .. }
        | ParseError::Value { line, .. }
        | ParseError::MdtestHeading { line, .. }
        | ParseError::Unit { line, .. }
        | ParseError::LineTooLong { line } => Some(*line),
        // About the whole output (no banner, results elsewhere, several runs: each banner's line
        // is in the message) or a JSON path (`tests[0].Results[1]`), which is its position.
        ParseError::Unrecognized
        | ParseError::SummaryElsewhere { .. }
        | ParseError::SeveralRuns { .. }
        | ParseError::JsonValue { .. }
        | ParseError::Read { .. }
        | ParseError::InFile { .. } => None,
    }
}

/// Lines as the reader counts them: a last line without a newline counts too.
fn line_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| **b == b'\n').count() + usize::from(!bytes.ends_with(b"\n"))
}

proptest! {
    #![proptest_config(config())]

    /// Never a panic; an error's line is one of the input's.
    #[test]
    fn fuzz_parse_mutated_outputs(bytes in mutated()) {
        if let Err(error) = parse_reader(bytes.as_slice()) {
            if let Some(line) = error_line(&error) {
                prop_assert!(line >= 1 && line <= line_count(&bytes).max(1), "{error} in {} lines", line_count(&bytes));
            }
            if let ParseError::Json { column, .. } = error {
                prop_assert!(column >= 1, "{error}: columns are 1-based");
            }
        }
    }

    /// Arbitrary bytes, not only near-outputs: never a panic.
    #[test]
    fn fuzz_parse_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        let _ = parse_reader(bytes.as_slice());
    }

    /// fio's JSON (the built-in fio engine's results): never a panic, errors are fine.
    #[test]
    fn fuzz_fio_results_mutated(bytes in mutated(), write in any::<bool>()) {
        let text = String::from_utf8_lossy(&bytes);
        let phase = if write { IorPhase::Write } else { IorPhase::Read };
        let _ = crate::fio::results(&text, phase, std::time::UNIX_EPOCH);
    }
}

/// Allocations (count and bytes) reading `bytes`: deterministic, unlike time, and what a
/// quadratic reader (re-copying what it has read for each line) would show.
fn work(bytes: &[u8]) -> (u64, u64) {
    let info = allocation_counter::measure(|| {
        let _ = parse_reader(bytes);
    });
    (info.count_total, info.bytes_total)
}

/// Linear time: each output repeated 16 times costs at most ~16 times (plus a constant) what it
/// costs once. Repeating a whole run is refused as several runs only at the end, so every line
/// is still read; JSON outputs repeat as one long document.
#[test]
fn fuzz_parse_work_is_linear() {
    for (i, one) in corpus().into_iter().enumerate() {
        // The 1x input is four copies, so both sides are past any first-run-only work.
        let (one, sixteen) = (one.repeat(4), one.repeat(64));
        let (count1, bytes1) = work(&one);
        let (count16, bytes16) = work(&sixteen);
        assert!(count1 > 0, "allocation-counter is not the global allocator");
        assert!(count16 <= 20 * count1 + 64, "file {i}: {count1} → {count16} allocations");
        assert!(bytes16 <= 20 * bytes1 + 64 * 1024, "file {i}: {bytes1} → {bytes16} bytes allocated");
    }
}

/// Found by `fuzz_parse_mutated_outputs` (seed 1): JSON cut at a line's end was reported at
/// "line N+1, column 0" of an N-line output.
#[test]
fn fuzz_regression_json_cut_at_a_line_end_names_a_real_position() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/ior/ior_tput_json.txt"))
            .unwrap();
    let cut: String = text.lines().take(60).map(|l| format!("{l}\n")).collect();
    let error = parse_reader(cut.as_bytes()).unwrap_err();
    let ParseError::Json { line, column, .. } = error else { panic!("{error}") };
    let last = cut.lines().nth(59).unwrap();
    assert_eq!((line, column), (60, last.chars().count() + 1), "{error}");
}
