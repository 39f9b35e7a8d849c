//! Fuzzing the readers of tools' and the kernel's outputs: proptest settings, edits of a real
//! output (bit flips, duplicated, dropped, cut and hostile lines) and a work measure, shared by
//! the `fuzz_*` property tests of this crate and of those above it (pvfs-steps' probe parsers,
//! pvfs-metrics' /proc readers), so that `cargo xtask fuzz` steers them all the same way.
//!
//! The same design as pvfs-config's and pvfs-bench's fuzzing (proptest on stable, a fixed seed
//! in CI, `PROPTEST_CASES`/`PROPTEST_RNG_SEED` from `cargo xtask fuzz`).

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
        // Shrunk failures are reported in the test's output; no regression files in the tree.
        failure_persistence: None,
        ..Config::default()
    }
}

/// The files of `dir` (relative to the calling crate's manifest directory) whose names end in
/// one of `extensions`, without their fixture headers (`# ` lines, the repository's way of
/// citing a fixture's source): the tools' outputs as they printed them. Test support: a
/// corpus that cannot be read is a broken checkout, so it panics.
pub fn corpus(manifest_dir: &str, dir: &str, extensions: &[&str]) -> Vec<Vec<u8>> {
    let dir = Path::new(manifest_dir).join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("cannot read the fuzz corpus {}: {err}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| extensions.iter().any(|x| e == *x)))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no {extensions:?} files in {}", dir.display());
    files.iter().map(|p| without_header(&std::fs::read(p).unwrap())).collect()
}

/// A fixture without its `# ` header lines.
pub fn without_header(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|b| *b == b'\n').filter(|l| !l.starts_with(b"# ")) {
        out.extend_from_slice(line);
    }
    out
}

/// One change to an input; positions are taken modulo its current size.
#[derive(Debug, Clone)]
pub enum Edit {
    FlipBit {
        at: usize,
        bit: u8,
    },
    DuplicateLine {
        at: usize,
    },
    DropLine {
        at: usize,
    },
    Truncate {
        at: usize,
    },
    /// One of the hostile lines, before a line of the input.
    InsertLine {
        at: usize,
        line: usize,
    },
}

/// Any edit, with `hostile` lines to insert.
pub fn edit(hostile: &'static [&'static str]) -> impl Strategy<Value = Edit> {
    let at = any::<usize>();
    prop_oneof![
        (at, 0u8..8).prop_map(|(at, bit)| Edit::FlipBit { at, bit }),
        at.prop_map(|at| Edit::DuplicateLine { at }),
        at.prop_map(|at| Edit::DropLine { at }),
        at.prop_map(|at| Edit::Truncate { at }),
        (at, 0..hostile.len().max(1)).prop_map(|(at, line)| Edit::InsertLine { at, line }),
    ]
}

/// Applies `edits` in order.
pub fn mutate(mut bytes: Vec<u8>, edits: &[Edit], hostile: &[&str]) -> Vec<u8> {
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
            Edit::InsertLine { at, line: which } => {
                if let Some(text) = hostile.get(which) {
                    let start = line(at).start;
                    bytes.splice(start..start, format!("{text}\n").into_bytes());
                }
            }
            Edit::FlipBit { .. } => {}
        }
    }
    bytes
}

/// A file of `corpus` with up to 8 edits, read as the probes read a tool's output: invalid
/// UTF-8 replaced.
pub fn mutated(corpus: Vec<Vec<u8>>, hostile: &'static [&'static str]) -> impl Strategy<Value = String> {
    assert!(!corpus.is_empty(), "an empty fuzz corpus");
    (0..corpus.len(), prop::collection::vec(edit(hostile), 0..8)).prop_map(move |(file, edits)| {
        String::from_utf8_lossy(&mutate(corpus[file].clone(), &edits, hostile)).into_owned()
    })
}

/// Arbitrary bytes (up to 2 KiB), read as text the way the probes read them.
pub fn random_text() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<u8>(), 0..2048).prop_map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// `lines` repeated until the text holds `n` of them: a large input of the reader's own
/// format, for the linear-work checks.
pub fn repeated(lines: &[&str], n: usize) -> String {
    lines.iter().cycle().take(n).map(|l| format!("{l}\n")).collect()
}

/// The named files (relative to the calling crate's manifest directory), without their
/// fixture headers, as [`corpus`] reads a directory.
pub fn files(manifest_dir: &str, paths: &[&str]) -> Vec<Vec<u8>> {
    paths
        .iter()
        .map(|p| {
            let path = Path::new(manifest_dir).join(p);
            without_header(
                &std::fs::read(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display())),
            )
        })
        .collect()
}
