//! Benchmarks as the seeds ran them: IOR and mdtest over the clients of a cluster.
//!
//! - [`model`]: the result shapes every source produces (parsed IOR/mdtest outputs, the
//!   built-in engine), as `pvfsctl bench import --json` prints them.
//! - [`phase`]: the phases of a run, their labels, and which an iteration runs in what order.
//! - [`params`]: the seed's presets and every parameter's override, the bounds on every size
//!   and count ([`params::limits`]), and the exact IOR and mdtest arguments they stand for
//!   (`-B` before IOR 3.3, `--posix.odirect` after).
//! - [`engine`]: the built-in engine, IOR's and mdtest's semantics without IOR installed;
//!   [`local`] runs it on one machine; [`child`] runs one phase as the agent's child process;
//!   [`summary`] turns phases into IOR/mdtest summary rows.
//! - [`files`]: a run directory's files, made and opened without following symlinks.
//! - [`parse`]: IOR (3.2–4.1; text, JSON and CSV summaries) and mdtest outputs, including
//!   failed runs.
//! - [`mpi`]: the `mpi` launcher's hostfile, and the built-in engine run as MPI ranks.
//! - [`report`]: Markdown with SVG and PNG charts over one or more runs.

pub mod child;
pub mod engine;
pub mod files;
pub mod fio;
pub mod local;
pub mod model;
pub mod mpi;
pub mod params;
pub mod parse;
pub mod phase;
pub mod report;
pub mod summary;
