//! Benchmarks as the seeds ran them: IOR and mdtest over the clients of a cluster.
//!
//! - [`model`]: the result shapes every source produces (parsed IOR/mdtest outputs, the
//!   built-in engine), as `pvfsctl bench import --json` prints them.
//! - [`parse`]: IOR (3.2–4.1; text, JSON and CSV summaries) and mdtest outputs, including
//!   failed runs.

pub mod model;
pub mod parse;
