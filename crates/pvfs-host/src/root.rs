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

    /// Whether a host path is a directory under this root.
    pub fn is_dir(&self, abs: &str) -> bool {
        self.path(abs).is_dir()
    }

    /// Replaces a file's contents all at once: written to a temporary file next to it, synced,
    /// then renamed over it, so a crash leaves the old file or the new one, never half of one
    /// (this is how `/etc/fstab` and config files are changed).
    pub fn write_atomic(&self, abs: &str, contents: &[u8], mode: u32) -> Result<(), RootError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let target = self.path(abs);
        let err = |source| RootError { path: abs.to_owned(), source };
        let dir = target.parent().ok_or_else(|| err(io::Error::other("no parent directory")))?;
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = dir.join(format!(".{name}.pvfs-new"));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&temp)
            .map_err(err)?;
        // The mode exactly, whatever the process umask (the agent's unit sets 0077, and an
        // fstab readable by root only would break every other reader).
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(mode)).map_err(err)?;
        file.write_all(contents).and_then(|()| file.sync_all()).map_err(err)?;
        std::fs::rename(&temp, &target).map_err(err)
    }

    /// Writes a kernel attribute (sysfs, procfs) in place: those files cannot be renamed over.
    pub fn write_attribute(&self, abs: &str, value: &str) -> Result<(), RootError> {
        std::fs::write(self.path(abs), value).map_err(|source| RootError { path: abs.to_owned(), source })
    }

    /// Creates a directory and its missing parents; a directory it creates gets `mode`
    /// exactly (whatever the umask); an existing one is left as it is.
    pub fn create_dir_all(&self, abs: &str, mode: u32) -> Result<(), RootError> {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let path = self.path(abs);
        let err = |source| RootError { path: abs.to_owned(), source };
        let existed = path.is_dir();
        std::fs::DirBuilder::new().recursive(true).mode(mode).create(&path).map_err(err)?;
        if !existed {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).map_err(err)?;
        }
        Ok(())
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
    fn writes_whole_files_and_directories_under_the_root() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        root.create_dir_all("/etc/beegfs", 0o755).unwrap();
        root.write_atomic("/etc/beegfs/a.conf", b"one\n", 0o644).unwrap();
        root.write_atomic("/etc/beegfs/a.conf", b"two\n", 0o600).unwrap();
        assert_eq!(root.read_to_string("/etc/beegfs/a.conf").unwrap(), "two\n");
        assert!(root.is_dir("/etc/beegfs"));
        // No temporary file is left behind.
        assert_eq!(root.list_dir("/etc/beegfs").unwrap(), ["a.conf"]);
        let mode = std::fs::metadata(dir.path().join("etc/beegfs/a.conf")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the file has the mode of its last write");
        let err = root.write_atomic("/no/such/dir/f", b"x", 0o644).unwrap_err();
        assert_eq!(err.path, "/no/such/dir/f");
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
