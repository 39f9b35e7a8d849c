//! The built-in benchmark engine and what runs it: IOR's and mdtest's semantics without IOR
//! installed. Threads, O_DIRECT I/O, child processes and MPI ranks live here, apart from the
//! pure `pvfs-bench` (presets, parsers, summaries), which this crate builds on.
//!
//! - [`engine`]: the built-in engine's phases, one thread per task; [`local`] runs a whole run
//!   on one machine; [`child`] runs one phase as the agent's child process.
//! - [`files`]: a run directory's files, made and opened without following symlinks.
//! - [`fio`]: a phase as one fio run per client, and reading fio's JSON.
//! - [`mpi`]: the `mpi` launcher's hostfile, and the built-in engine run as MPI ranks.

pub mod child;
pub mod engine;
pub mod files;
pub mod find;
pub mod fio;
pub mod local;
pub mod mpi;
