//! The one way pvfs reads a file a user named (a cluster file, an IOR output to import, a
//! results directory's records, certificates): a regular file, at most so large, or an error
//! that names the file and says what to do.
//!
//! A name can point anywhere: `/dev/zero` read to its end took a machine's whole memory, and
//! opening a FIFO blocks until someone writes to it, so `validate` hung forever. So the path is
//! looked at first (nothing but a regular file is ever opened: opening some devices does
//! something), then opened with `O_NONBLOCK` (should it have been swapped for a FIFO meanwhile,
//! the open returns at once) and `O_NOCTTY`, and the opened file is checked again with
//! `fstat`; its size is checked against the caller's cap before anything is read, and the read
//! itself stops one byte past the cap, in case the file grows while it is read.
//! `O_NONBLOCK` changes nothing for a regular file's reads, so it is left set.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// How much of a kind of file is read at most, and what it is called in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// What the file is, for errors: "a cluster file".
    pub what: &'static str,
    /// Its largest size, in bytes.
    pub bytes: u64,
}

/// A user-named file that was not read.
#[derive(Debug, thiserror::Error)]
pub enum LocalFileError {
    /// Opening or reading it failed: missing, no permission, an I/O error.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "{} is {kind}, not a regular file: pvfs reads {what} only from a regular file; save it to a file and give that",
        path.display()
    )]
    /// A directory, device, FIFO or socket.
    NotRegular { path: PathBuf, kind: &'static str, what: &'static str },
    #[error(
        "{} is {}, more than the {} that {what} may be: is it the right file?",
        path.display(),
        size_text(*size),
        size_text(*cap)
    )]
    /// Over the caller's cap (checked before reading, and while reading).
    TooLarge { path: PathBuf, size: u64, cap: u64, what: &'static str },
    #[error("{} is not UTF-8 text ({what} must be)", path.display())]
    NotText { path: PathBuf, what: &'static str },
}

impl LocalFileError {
    /// The I/O error, when the file could not be opened or read, for callers whose errors
    /// already say that in their own words; the refusal itself otherwise.
    pub fn into_io(self) -> Result<io::Error, LocalFileError> {
        match self {
            LocalFileError::Io { source, .. } => Ok(source),
            refused => Err(refused),
        }
    }

    /// The file does not exist (callers for which that is an expected state, such as a state
    /// file not yet written, tell it apart).
    pub fn is_not_found(&self) -> bool {
        matches!(self, LocalFileError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// The file named in the error.
    pub fn path(&self) -> &Path {
        match self {
            LocalFileError::Io { path, .. }
            | LocalFileError::NotRegular { path, .. }
            | LocalFileError::TooLarge { path, .. }
            | LocalFileError::NotText { path, .. } => path,
        }
    }
}

/// `bytes` as people read sizes: "64 MiB", "1 GiB", "4096 bytes".
fn size_text(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        if bytes >= unit {
            return if bytes.is_multiple_of(unit) {
                format!("{} {name}", bytes / unit)
            } else {
                format!("{:.1} {name}", bytes as f64 / unit as f64)
            };
        }
    }
    format!("{bytes} bytes")
}

/// What a file type is called in errors.
fn kind(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO (named pipe)"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Opens `path`, a regular file of at most `cap.bytes`, for reading; see the module's
/// documentation. Symbolic links are followed (a user may name a link to their file).
pub fn open(path: &Path, cap: Cap) -> Result<File, LocalFileError> {
    let open_err = |source| LocalFileError::Io { path: path.to_owned(), source };
    let check = |metadata: &std::fs::Metadata| {
        if !metadata.is_file() {
            return Err(LocalFileError::NotRegular {
                path: path.to_owned(),
                kind: kind(metadata.file_type()),
                what: cap.what,
            });
        }
        if metadata.len() > cap.bytes {
            return Err(LocalFileError::TooLarge {
                path: path.to_owned(),
                size: metadata.len(),
                cap: cap.bytes,
                what: cap.what,
            });
        }
        Ok(())
    };
    check(&std::fs::metadata(path).map_err(open_err)?)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .map_err(open_err)?;
    check(&file.metadata().map_err(open_err)?)?;
    Ok(file)
}

/// The whole of `path`, a regular file of at most `cap.bytes`.
pub fn read(path: &Path, cap: Cap) -> Result<Vec<u8>, LocalFileError> {
    let file = open(path, cap)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // One byte past the cap: a file that grew past it while read is seen to have.
    file.take(cap.bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| LocalFileError::Io { path: path.to_owned(), source })?;
    if bytes.len() as u64 > cap.bytes {
        return Err(LocalFileError::TooLarge {
            path: path.to_owned(),
            size: bytes.len() as u64,
            cap: cap.bytes,
            what: cap.what,
        });
    }
    Ok(bytes)
}

/// [`read`], as UTF-8 text.
pub fn read_to_string(path: &Path, cap: Cap) -> Result<String, LocalFileError> {
    String::from_utf8(read(path, cap)?)
        .map_err(|_| LocalFileError::NotText { path: path.to_owned(), what: cap.what })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Cap = Cap { what: "a test file", bytes: 16 };

    #[test]
    fn a_regular_file_within_its_cap_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "sixteen bytes!!\n").unwrap();
        assert_eq!(read_to_string(&path, SMALL).unwrap(), "sixteen bytes!!\n");
        // Through a symbolic link too.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert_eq!(read(&link, SMALL).unwrap().len(), 16);
    }

    #[test]
    fn a_larger_file_is_refused_before_it_is_read_with_both_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        // Sparse: nothing is written, and nothing is read.
        File::create(&path).unwrap().set_len(65 << 20).unwrap();
        let cap = Cap { what: "a cluster file", bytes: 64 << 20 };
        let err = read(&path, cap).unwrap_err();
        assert!(matches!(err, LocalFileError::TooLarge { size, .. } if size == 65 << 20), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "{} is 65 MiB, more than the 64 MiB that a cluster file may be: is it the right file?",
                path.display()
            )
        );
    }

    #[test]
    fn devices_directories_and_fifos_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        for (path, kind) in [
            (PathBuf::from("/dev/zero"), "a character device"),
            (dir.path().to_owned(), "a directory"),
            (fifo, "a FIFO (named pipe)"),
        ] {
            // On a thread, so that an open that blocks fails the test instead of hanging it.
            let (tx, rx) = std::sync::mpsc::channel();
            let asked = path.clone();
            std::thread::spawn(move || tx.send(read(&asked, SMALL).map(|_| ())));
            let err = rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("reading {} blocked", path.display()))
                .unwrap_err();
            assert!(matches!(err, LocalFileError::NotRegular { kind: k, .. } if k == kind), "{err}");
            let want = format!(
                "{} is {kind}, not a regular file: pvfs reads a test file only from a regular file; \
                 save it to a file and give that",
                path.display()
            );
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn a_missing_file_is_told_apart() {
        let err = read(Path::new("/nonexistent/pvfs-test"), SMALL).unwrap_err();
        assert!(err.is_not_found(), "{err}");
        assert_eq!(err.path(), Path::new("/nonexistent/pvfs-test"));
        assert!(err.to_string().starts_with("cannot read /nonexistent/pvfs-test: "), "{err}");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size_text(4096), "4 KiB");
        assert_eq!(size_text(100), "100 bytes");
        assert_eq!(size_text(1 << 30), "1 GiB");
        assert_eq!(size_text(3 << 19), "1.5 MiB");
    }
}
