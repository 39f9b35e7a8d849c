//! Benchmarks as the seeds ran them, the pure part: what a run is, and what its outputs say.
//! No threads, no I/O beyond reading an output and the results directory's files; the engine
//! that runs phases is `pvfs-engine`, the Markdown/chart report `pvfs-report`, so a crate that
//! only needs a preset or a parser (`pvfs-config`, `pvfs-proto`) compiles neither.
//!
//! - [`model`]: the result shapes every source produces (parsed IOR/mdtest outputs, the
//!   built-in engine), as `pvfsctl bench import --json` prints them.
//! - [`phase`]: the phases of a run, their labels, and which an iteration runs in what order.
//! - [`launch`]: the engines and launchers a run names, and what each valid pair runs.
//! - [`request`]: what the coordinator asks of a client (a phase's share, an MPI job), as
//!   plain data the wire, the coordinator, the engine and the agent all name.
//! - [`params`]: the seed's presets and every parameter's override, the bounds on every size
//!   and count ([`params::limits`]), and the exact IOR and mdtest arguments they stand for
//!   (`-B` before IOR 3.3, `--posix.odirect` after).
//! - [`summary`]: phase totals into IOR/mdtest summary rows, with IOR's arithmetic.
//! - [`parse`]: IOR (3.2–4.1; text, JSON and CSV summaries) and mdtest outputs, including
//!   failed runs.
//! - `testing` (feature `testing`): the fuzz corpus (the real outputs in `testdata/ior/`) and
//!   its mutations, shared with the fuzz tests of readers in other crates.
//! - [`io500`]: io500's output (phases, score, the reasons a run is invalid) and its score
//!   worked out again from the phases.
//! - [`results`]: the results directory's format (results.json, events, metrics lines), its
//!   writers and its reader.

pub mod compare;
pub mod io500;
pub mod latency;
pub mod launch;
pub mod model;
pub mod params;
pub mod parse;
pub mod phase;
pub mod request;
pub mod results;
pub mod summary;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
