//! Fuzzing the cluster-file loader on stable Rust: proptest mutates the repository's
//! `config/*.toml` (byte flips, duplicated, dropped, cut and hostile lines) and checks that
//! loading never panics, that every diagnostic points inside the text, and that work grows
//! linearly with the file.
//!
//! proptest rather than `cargo fuzz`: it runs on stable, inside `cargo nextest`, with a fixed
//! seed (CI never flakes) and shrinks a failure to a small file. `cargo xtask fuzz` runs the
//! same properties with many more cases.

use crate::diagnostic::Source;
use crate::load::parse_source;
use crate::{ConfigError, parse};
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
        // Shrunk failures are reported in the test's output; no regression files in the tree.
        failure_persistence: None,
        ..Config::default()
    }
}

/// The seed corpus: every cluster and policy file the repository ships.
fn corpus() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        // Cluster and policy files; not the state files `provision` writes beside them.
        .filter(|p| {
            p.extension().is_some_and(|e| e == "toml") && !p.to_string_lossy().ends_with(".state.toml")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 5, "config/*.toml not found in {}", dir.display());
    files.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
}

/// Lines that open, close or repeat the file's tables and keys, with values of the wrong
/// type, out of range or not UTF-8-clean in spirit (controls, bidi overrides).
const HOSTILE: &[&str] = &[
    "[cluster]",
    "[[node]]",
    "[[node]] # twice",
    "[tls]",
    "[lustre]",
    "[[node.disks]]",
    "name = \"\"",
    "name = \"nø\u{202e}\u{0}\"",
    "kind = \"lustre\"",
    "kind = 7",
    "address = \"[::1]:99999\"",
    "address = \"10.0.0.1:\"",
    "roles = [\"oss\", \"oss\", 1, []]",
    "disks = [[[[[[[[[[[[[[[[\"/dev/sda\"]]]]]]]]]]]]]]]]",
    "stripe = { count = -1, size = \"1e99\" }",
    "repo = \"http://[::1\"",
    "[azure]",
    "[azure.role.oss]",
    "[azure.role.\u{202e}]",
    "data_disks = { count = 4294967295, size_gib = -1, caching = \"\\n\" }",
    "ssh_public_key_file = \"~\"",
    "ssh_public_key_file = \"/dev/zero\"",
    "subnet = \"/subscriptions//resourceGroups\"",
    "azure = { zone = \"1\", data_disks = { count = 1 } }",
    "= =",
    "\"\"\"",
    "a.b.c.d.e = 1",
    "x = 1979-05-27T07:32:00Z",
    "x = 0x",
    "\u{feff}",
    "",
];

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

/// Applies `edits` in order to the file's bytes (positions modulo its current size), then reads
/// them back as the loader does: invalid UTF-8 replaced.
fn mutate(text: &str, edits: &[Edit]) -> String {
    let mut bytes = text.as_bytes().to_vec();
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
                bytes.splice(start..start, format!("{}\n", HOSTILE[hostile]).into_bytes());
            }
            Edit::FlipBit { .. } => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn mutated() -> impl Strategy<Value = String> {
    let corpus = corpus();
    (0..corpus.len(), prop::collection::vec(edit(), 0..8))
        .prop_map(move |(file, edits)| mutate(&corpus[file], &edits))
}

/// Every diagnostic names a line of the text and a column on it (1-based, in characters; one
/// past the end marks "missing at end of line").
fn check_positions(text: &str, error: &ConfigError) -> Result<(), TestCaseError> {
    let ConfigError::Invalid { diagnostics, .. } = error else {
        return Err(TestCaseError::fail(format!("parse read a file: {error}")));
    };
    prop_assert!(!diagnostics.is_empty(), "an error without a diagnostic");
    let lines: Vec<&str> = text.split('\n').collect();
    for d in diagnostics {
        prop_assert!(
            d.line >= 1 && d.line <= lines.len(),
            "line {} of {}: {}",
            d.line,
            lines.len(),
            d.message
        );
        let width = lines[d.line - 1].chars().count();
        prop_assert!(
            d.column >= 1 && d.column <= width + 1,
            "{}:{} (width {width}): {}",
            d.line,
            d.column,
            d.message
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Never a panic; every diagnostic points inside the text.
    #[test]
    fn fuzz_config_mutated_files(text in mutated()) {
        if let Err(error) = parse(Path::new("fuzz.toml"), &text) {
            check_positions(&text, &error)?;
        }
    }

    /// Arbitrary text, not only near-cluster files: never a panic, positions inside the text.
    #[test]
    fn fuzz_config_random_text(text in "\\PC{0,512}") {
        if let Err(error) = parse(Path::new("fuzz.toml"), &text) {
            check_positions(&text, &error)?;
        }
    }
}

/// A cluster file of `nodes` nodes, every other one with errors (a non-ASCII name, a shared
/// address, an unknown key), so that both loading and reporting are exercised.
fn big(nodes: usize) -> String {
    let mut text =
        String::from("[cluster]\nname = \"big\"\nkind = \"local\"\n[local]\nmount = \"/mnt/big\"\n");
    for i in 0..nodes {
        if i % 2 == 0 {
            text += &format!(
                "[[node]]\nname = \"n{i}\"\naddress = \"10.0.{}.{}\"\nroles = [\"server\"]\n",
                i / 250,
                i % 250
            );
        } else {
            text += &format!(
                "[[node]]\nname = \"nø{i}\"\naddress = \"10.0.0.1\"\nroles = [\"server\"]\ncolour = 1\n"
            );
        }
    }
    text
}

/// Allocations (count and bytes) and position bytes rescanned loading `text`: deterministic,
/// unlike time, and what a quadratic pass (rescanning or re-copying per node) would show.
fn work(text: &str) -> (u64, u64, usize) {
    let source = Source::new(text);
    let info = allocation_counter::measure(|| {
        let _ = parse_source(Path::new("big.toml"), &source);
    });
    (info.count_total, info.bytes_total, source.scanned())
}

/// Linear time: a file with 16 times the nodes costs at most ~16 times the work.
#[test]
fn fuzz_config_work_is_linear() {
    let (count1, bytes1, scanned1) = work(&big(256));
    let (count16, bytes16, scanned16) = work(&big(16 * 256));
    assert!(count1 > 0, "allocation-counter is not the global allocator");
    assert!(count16 <= 20 * count1, "{count1} → {count16} allocations");
    assert!(bytes16 <= 20 * bytes1, "{bytes1} → {bytes16} bytes allocated");
    assert!(scanned16 <= 20 * scanned1.max(1), "{scanned1} → {scanned16} bytes rescanned");
}
