//! The seam between pvfs and the machine it runs on.
//!
//! Everything that reads the host goes through here: files under a [`Root`] (`/` in production,
//! a temp dir in tests) and external commands through a [`Runner`] ([`SystemRunner`] in
//! production, [`RecordedRunner`] with outputs captured from real tools in tests). The real
//! implementations are what ships and what the end-to-end tests exercise. Files a user names
//! on the coordinator's side (cluster files, outputs to import, certificates) are read through
//! [`local_file`]: regular files only, each kind with a size cap.

pub mod blkid;
mod command;
pub mod device;
pub mod grammar;
pub mod kmsg;
pub mod local_file;
pub mod mkfs_options;
pub mod mount_options;
pub mod mountinfo;
pub mod paths;
mod root;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use command::{
    Busy, Command, CommandError, Output, RecordedRunner, Runner, SystemRunner, run_while_busy,
};
pub use root::{Root, RootError};
