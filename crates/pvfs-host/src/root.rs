//! Files of the host, read under an injectable root directory.
//!
//! Production code uses `Root::system()` (`/`); tests point a `Root` at a temp dir holding a
//! recorded `/proc`, `/sys` and `/etc`, the way `below` tests its readers.

use std::io;
use std::path::{Path, PathBuf};

/// A file under the root could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {path}: {source}")]
pub struct RootError {
    /// The path as the host sees it (without the test root prefix), e.g. `/proc/meminfo`.
    pub path: String,
    #[source]
    pub source: io::Error,
}

impl RootError {
    /// True when the file does not exist (as opposed to existing but being unreadable).
    pub fn is_not_found(&self) -> bool {
        self.source.kind() == io::ErrorKind::NotFound
    }
}

/// The directory that stands for `/` when reading host files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    base: PathBuf,
}

impl Root {
    /// The real machine.
    pub fn system() -> Root {
        Root { base: PathBuf::from("/") }
    }

    /// A directory standing in for `/` (tests, or a chroot being inspected).
    pub fn at(base: impl Into<PathBuf>) -> Root {
        Root { base: base.into() }
    }

    /// Where the host path `abs` (e.g. `/proc/stat`) lives under this root.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.base.join(abs.trim_start_matches('/'))
    }

    /// Reads a whole file as UTF-8 (lossily: sysfs strings are ASCII in practice, and a stray
    /// byte in a model name must not hide the rest of the facts).
    pub fn read_to_string(&self, abs: &str) -> Result<String, RootError> {
        std::fs::read(self.path(abs))
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .map_err(|source| RootError { path: abs.to_owned(), source })
    }

    /// Reads a one-line sysfs/procfs attribute, trimmed.
    pub fn read_trimmed(&self, abs: &str) -> Result<String, RootError> {
        self.read_to_string(abs).map(|s| s.trim().to_owned())
    }

    /// Names of the entries of a directory, sorted so that output is stable.
    pub fn list_dir(&self, abs: &str) -> Result<Vec<String>, RootError> {
        let read = || -> io::Result<Vec<String>> {
            let mut names = Vec::new();
            for entry in std::fs::read_dir(self.path(abs))? {
                names.push(entry?.file_name().to_string_lossy().into_owned());
            }
            names.sort();
            Ok(names)
        };
        read().map_err(|source| RootError { path: abs.to_owned(), source })
    }

    /// Whether a host path exists under this root.
    pub fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }

    /// The directory standing for `/`.
    pub fn base(&self) -> &Path {
        &self.base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_under_the_root_not_the_host() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(dir.path().join("proc/sys/kernel/hostname"), "fake-node\n").unwrap();
        let root = Root::at(dir.path());
        assert_eq!(root.read_trimmed("/proc/sys/kernel/hostname").unwrap(), "fake-node");
        let err = root.read_trimmed("/proc/meminfo").unwrap_err();
        assert!(err.is_not_found());
        assert_eq!(err.path, "/proc/meminfo");
    }

    #[test]
    fn lists_directories_sorted() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["sdb", "sda", "nvme0n1"] {
            std::fs::create_dir_all(dir.path().join("sys/block").join(name)).unwrap();
        }
        let root = Root::at(dir.path());
        assert_eq!(root.list_dir("/sys/block").unwrap(), ["nvme0n1", "sda", "sdb"]);
    }
}
