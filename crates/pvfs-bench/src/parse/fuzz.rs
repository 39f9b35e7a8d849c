//! Fuzzing the output readers on stable Rust: proptest mutates the real IOR, mdtest and fio
//! outputs in `testdata/ior/` (byte flips, duplicated, dropped, cut and hostile lines; the
//! corpus and edits are in `crate::testing`) and checks that reading never panics, that an
//! error names a line inside the input, and that work grows linearly with the input.
//!
//! proptest rather than `cargo fuzz`: it runs on stable, inside `cargo nextest`, with a fixed
//! seed (CI never flakes) and shrinks a failure to a small input. `cargo xtask fuzz` runs the
//! same properties with many more cases.

use super::{ParseError, parse_reader};
use crate::testing::{config, corpus, mutated};
use proptest::prelude::*;
use std::path::Path;

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
        | ParseError::File(_)
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
