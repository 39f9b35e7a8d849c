//! The agent's state directory, locked so two agents never share one.

use crate::AgentError;
use std::fs::{self, File, TryLockError};
use std::path::{Path, PathBuf};

const LOCK_FILE: &str = "agent.lock";

/// Checks (without creating anything) that the state directory exists or can be created.
pub(crate) fn check(dir: &Path) -> Result<(), AgentError> {
    let state_err = |source| AgentError::State { path: dir.to_owned(), source };
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(state_err(std::io::Error::other("exists and is not a directory"))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            // It will be created: its nearest existing ancestor must be a directory.
            let parent = dir.ancestors().skip(1).find(|p| p.exists()).unwrap_or(Path::new("/"));
            if parent.is_dir() { Ok(()) } else { Err(state_err(err)) }
        }
        Err(err) => Err(state_err(err)),
    }
}

/// Creates the state directory if needed and takes its lock for the life of the returned file.
pub(crate) fn lock(dir: &Path) -> Result<File, AgentError> {
    let state_err = |source| AgentError::State { path: dir.to_owned(), source };
    fs::create_dir_all(dir).map_err(state_err)?;
    let lock_path: PathBuf = dir.join(LOCK_FILE);
    let file =
        File::options().create(true).truncate(false).write(true).open(&lock_path).map_err(state_err)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => {
            Err(AgentError::StateLocked { dir: dir.to_owned(), lock: lock_path })
        }
        Err(TryLockError::Error(err)) => Err(state_err(err)),
    }
}
