//! Files that root makes in directories other users can write to, following no symlink.
//!
//! A benchmark's run directory is on the file system under test, which is shared: any user
//! of the cluster may have created `pvfs-bench/RUN/ior.00000003` as a symlink to
//! `/etc/shadow` before the agent (root) writes it. So every name is resolved here one
//! component at a time from a directory descriptor with `O_NOFOLLOW` (a symlink anywhere in
//! the path is refused, the run directory's own components included), files are opened with
//! `O_NOFOLLOW`, new ones with `O_EXCL`, anything that is not a plain file with a single
//! link is refused before a byte is written, and files written whole go to a random temporary
//! name first and are renamed into place. The one lookup by whole path is a look
//! ([`Dir::stat_by_path`]: mdtest's and pfind's stats, which change nothing).
//!
//! Every refusal is a [`FileError`] naming the operation and the path, saying why, and that
//! pvfs never follows symlinks there.

use nix::errno::Errno;
use nix::fcntl::{AtFlags, FcntlArg, OFlag, openat, renameat};
use nix::sys::stat::{Mode, SFlag, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, unlinkat};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// A directory opened without following symlinks, with its path for messages. Everything
/// below it is reached through its descriptor, so renaming a directory on the way and putting
/// a symlink in its place changes nothing for a `Dir` already open.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// The flags every directory in a walk is opened with: a symlink fails with ELOOP (or ENOTDIR)
/// instead of being followed.
fn dir_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

/// Why a file or directory in a benchmark's directory was refused or could not be used: each
/// names the operation (`open`, `mkdir`, `unlink`, …) and the path.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A symlink where pvfs expected a file or directory of its own: refused, never followed.
    #[error(
        "{op} {}: it is a symlink, and pvfs never follows symlinks in a benchmark's directory (other users \
         can write there); remove it, or use the real path",
        path.display()
    )]
    Symlink { op: &'static str, path: PathBuf },
    /// The system call failed (no such file, permission, no space, …).
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The benchmark's directory was given as a relative path.
    #[error("{}: the benchmark directory must be an absolute path", path.display())]
    NotAbsolute { path: PathBuf },
    /// A path below the run directory with `..` or a root: a walk stays below its start.
    #[error("{}: only plain names below the run directory (no .., no /)", path.display())]
    NotBelow { path: PathBuf },
    /// Something other than a plain file at a test file's name (a FIFO, a device, a directory).
    #[error(
        "{op} {}: not a regular file; pvfs reads and writes only plain files in a benchmark's directory",
        path.display()
    )]
    NotRegular { op: &'static str, path: PathBuf },
    /// A file to be written that has other hard links: writing it would change another file.
    #[error(
        "open {}: it has {links} hard links, so writing it would change another file too; pvfs writes only \
         its own files in a benchmark's directory: remove it",
        path.display()
    )]
    HardLinks { path: PathBuf, links: u64 },
    /// A file to be replaced whole that exists and is not a plain file.
    #[error(
        "write {}: it exists and is not a plain file (a symlink?); pvfs never follows symlinks in a \
         benchmark's directory (other users can write there): remove it",
        path.display()
    )]
    NotPlainFile { path: PathBuf },
}

impl FileError {
    /// `source` from `op` on `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> FileError {
        FileError::Io { op, path: path.into(), source }
    }
}

/// The error for `errno` from `op` on `path`, telling the symlink case apart.
fn explain(op: &'static str, path: &Path, errno: Errno) -> FileError {
    match errno {
        Errno::ELOOP => FileError::Symlink { op, path: path.to_owned() },
        _ => FileError::io(op, path, std::io::Error::from(errno)),
    }
}

/// Opens directory `name` under `parent` without following a symlink there. With
/// `O_DIRECTORY`, Linux says ENOTDIR for a symlink rather than ELOOP: look, so the message
/// says what is really there.
fn open_dir_at(parent: BorrowedFd<'_>, name: &std::ffi::OsStr, path: &Path) -> Result<OwnedFd, FileError> {
    openat(parent, name, dir_flags(), Mode::empty()).map_err(|e| {
        let is_link = e == Errno::ENOTDIR
            && fstatat(parent, name, AtFlags::AT_SYMLINK_NOFOLLOW)
                .is_ok_and(|st| st.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFLNK.bits());
        explain("open", path, if is_link { Errno::ELOOP } else { e })
    })
}

/// The normal components of `rel`, refusing `..` and absolute paths: a walk must stay below
/// its start.
fn components(rel: &Path) -> Result<Vec<&std::ffi::OsStr>, FileError> {
    rel.components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(FileError::NotBelow { path: rel.to_owned() }),
        })
        .collect()
}

impl Dir {
    /// Opens absolute `path`, refusing a symlink at any of its components.
    pub fn open(path: &Path) -> Result<Dir, FileError> {
        Dir::walk(path, false)
    }

    /// Creates `path` and its missing parents (mode 0755, less the umask), refusing a symlink
    /// at any component, and opens it.
    pub fn create_all(path: &Path) -> Result<Dir, FileError> {
        Dir::walk(path, true)
    }

    fn walk(path: &Path, create: bool) -> Result<Dir, FileError> {
        if !path.is_absolute() {
            return Err(FileError::NotAbsolute { path: path.to_owned() });
        }
        let root = Path::new("/");
        let fd = openat(nix::fcntl::AT_FDCWD, root, dir_flags(), Mode::empty())
            .map_err(|e| explain("open", root, e))?;
        let mut dir = Dir { fd, path: root.to_owned() };
        for name in components(path.strip_prefix("/").unwrap_or(path))? {
            dir = if create { dir.create_dir(name)? } else { dir.open_dir(Path::new(name))? };
        }
        Ok(dir)
    }

    /// The directory's path, as it was opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the directory `rel` below this one, one component at a time, refusing symlinks.
    pub fn open_dir(&self, rel: &Path) -> Result<Dir, FileError> {
        let mut fd: Option<OwnedFd> = None;
        let mut path = self.path.clone();
        for name in components(rel)? {
            path.push(name);
            let parent = fd.as_ref().map_or(self.fd.as_fd(), |fd| fd.as_fd());
            fd = Some(open_dir_at(parent, name, &path)?);
        }
        match fd {
            Some(fd) => Ok(Dir { fd, path }),
            None => nix::unistd::dup(&self.fd)
                .map(|fd| Dir { fd, path })
                .map_err(|e| explain("open", &self.path, e)),
        }
    }

    /// Makes directory `name` here unless it exists (as a real directory), and opens it.
    pub fn create_dir(&self, name: impl AsRef<Path>) -> Result<Dir, FileError> {
        let name = name.as_ref();
        let path = self.path.join(name);
        match mkdirat(&self.fd, name, Mode::from_bits_truncate(0o755)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(explain("mkdir", &path, e)),
        }
        // A symlink planted at the name is EEXIST above, and refused here.
        self.open_dir(name)
    }

    /// Makes directory `name` here, which must not exist (mdtest's directory items).
    pub fn mkdir(&self, name: &str) -> Result<(), FileError> {
        mkdirat(&self.fd, name, Mode::from_bits_truncate(0o755))
            .map_err(|e| explain("mkdir", &self.path.join(name), e))
    }

    /// Creates file `name`, which must not exist: `O_CREAT | O_EXCL | O_NOFOLLOW`.
    pub fn create_new(&self, name: &str, mode: u32) -> Result<File, FileError> {
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        openat(&self.fd, name, flags, Mode::from_bits_truncate(mode)).map(File::from).map_err(|e| {
            // O_EXCL fails on any existing name; say so plainly when it is a symlink.
            let is_link = e == Errno::EEXIST && self.is_symlink(name);
            explain("create", &self.path.join(name), if is_link { Errno::ELOOP } else { e })
        })
    }

    fn is_symlink(&self, name: &str) -> bool {
        self.stat(name).is_ok_and(|st| st.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFLNK.bits())
    }

    /// Opens file `name` for writing, creating it if missing, as IOR's write phase does (no
    /// truncation: a shared file is written in place by every task). `extra` adds flags such
    /// as `O_DIRECT`. A symlink, a device, a FIFO or a file with other hard links is refused.
    pub fn open_write(&self, name: &str, extra: OFlag) -> Result<File, FileError> {
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | extra;
        // The links are the open's own stat's: a second one was a fourth system call in
        // IOR's `open(s)`, where IOR makes one.
        let (file, meta) = self.open_checked(name, flags, "open")?;
        let links = meta.nlink();
        if links > 1 {
            return Err(FileError::HardLinks { path: self.path.join(name), links });
        }
        Ok(file)
    }

    /// Opens file `name` for reading; a symlink, a device or a FIFO is refused (and a FIFO
    /// cannot make the open hang).
    pub fn open_read(&self, name: &str, extra: OFlag) -> Result<File, FileError> {
        self.open_checked(name, OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | extra, "open")
            .map(|(file, _)| file)
    }

    /// Opens with `O_NONBLOCK` (so a FIFO planted at the name cannot block the open), checks
    /// that a plain file was opened, then clears `O_NONBLOCK` for the I/O itself. Returns the
    /// file and what its stat said.
    fn open_checked(
        &self,
        name: &str,
        flags: OFlag,
        what: &'static str,
    ) -> Result<(File, std::fs::Metadata), FileError> {
        let path = self.path.join(name);
        let fd = openat(&self.fd, name, flags | OFlag::O_NONBLOCK, Mode::from_bits_truncate(0o644))
            .map_err(|e| explain(what, &path, e))?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(|e| FileError::io("stat", &path, e))?;
        if !meta.file_type().is_file() {
            return Err(FileError::NotRegular { op: what, path });
        }
        // The status flags are the ones asked for (F_SETFL takes only those — O_DIRECT,
        // O_APPEND, O_NONBLOCK, … — and ignores the access mode and creation flags among
        // `flags`), so no F_GETFL is needed to know them: an open is three system calls, not
        // four (IOR's `open(s)` is one `open`; `xtask bench-engine --against ior`).
        nix::fcntl::fcntl(&file, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK))
            .map_err(|e| explain("fcntl", &path, e))?;
        Ok((file, meta))
    }

    /// `lstat` of `name` here: what it is, never what a symlink points at.
    pub fn stat(&self, name: &str) -> Result<nix::sys::stat::FileStat, FileError> {
        fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW)
            .map_err(|e| explain("stat", &self.path.join(name), e))
    }

    /// `name` here looked at as mdtest and pfind look at theirs: by its whole path, which the
    /// kernel (or a parallel file system's client) resolves a component at a time, so a stat
    /// phase's figure holds those lookups as theirs does (on this machine's ext4, ~0.6 µs of a
    /// 2.7 µs stat through twelve components; on a network file system, possibly a round trip
    /// each). It is only a look, and it follows no symlink at `name`; the directories above
    /// were walked without following any when this one was opened, and one swapped for a
    /// symlink since would be looked through, which shows a benchmark nothing but another
    /// file's size and times. Whatever writes, creates, opens or removes stays relative to
    /// the descriptor.
    pub fn stat_by_path(
        &self,
        name: impl AsRef<std::ffi::OsStr>,
    ) -> Result<nix::sys::stat::FileStat, FileError> {
        let path = self.path.join(name.as_ref());
        nix::sys::stat::lstat(&path).map_err(|e| explain("stat", &path, e))
    }

    /// This directory's link count: 2 for one with no subdirectory, on the file systems that
    /// count them (1 on those that do not, btrfs among them).
    pub fn links(&self) -> Result<u64, FileError> {
        nix::sys::stat::fstat(&self.fd).map(|st| st.st_nlink).map_err(|e| explain("stat", &self.path, e))
    }

    /// This directory's change time, seconds since 1970.
    pub fn ctime(&self) -> Result<i64, FileError> {
        nix::sys::stat::fstat(&self.fd).map(|st| st.st_ctime).map_err(|e| explain("stat", &self.path, e))
    }

    /// `lstat` of the entry `name` here, as `readdir` named it (any bytes).
    pub fn lstat_at(&self, name: &std::ffi::CStr) -> Result<nix::sys::stat::FileStat, FileError> {
        fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW).map_err(|e| {
            let shown = std::ffi::OsStr::from_bytes(name.to_bytes());
            explain("stat", &self.path.join(shown), e)
        })
    }

    /// Removes file `name` here (a symlink is removed, never followed); a missing one is fine
    /// when `missing_ok`.
    pub fn remove_file(&self, name: &str, missing_ok: bool) -> Result<(), FileError> {
        match unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir) {
            Err(Errno::ENOENT) if missing_ok => Ok(()),
            other => other.map_err(|e| explain("unlink", &self.path.join(name), e)),
        }
    }

    /// Calls `visit` with each entry of this directory but `.` and `..`, and its type as
    /// `readdir` gives it (`None` where the file system does not say), as the entries stream
    /// in: a directory of millions is never held whole.
    pub fn each_entry<E: From<FileError>>(
        &self,
        mut visit: impl FnMut(&std::ffi::CStr, Option<nix::dir::Type>) -> Result<(), E>,
    ) -> Result<(), E> {
        // Its own descriptor: reading moves the directory's offset.
        let fd = nix::unistd::dup(&self.fd).map_err(|e| explain("open", &self.path, e))?;
        let mut dir = nix::dir::Dir::from_fd(fd).map_err(|e| explain("open", &self.path, e))?;
        for entry in dir.iter() {
            let entry = entry.map_err(|e| explain("readdir", &self.path, e))?;
            let name = entry.file_name();
            if name.to_bytes() == b"." || name.to_bytes() == b".." {
                continue;
            }
            visit(name, entry.file_type())?;
        }
        Ok(())
    }

    /// Removes the empty directory `name` here.
    pub fn remove_dir(&self, name: &str) -> Result<(), FileError> {
        unlinkat(&self.fd, name, UnlinkatFlags::RemoveDir)
            .map_err(|e| explain("rmdir", &self.path.join(name), e))
    }

    /// Writes `contents` as file `name`: to a random new name first (`O_EXCL | O_NOFOLLOW`),
    /// synced, then renamed over `name`, and the directory synced. A rename replaces a symlink
    /// at `name` rather than following it; one found there beforehand is refused all the same,
    /// since it means someone is trying.
    pub fn replace_file(&self, name: &str, contents: &[u8], mode: u32) -> Result<(), FileError> {
        let path = self.path.join(name);
        match self.stat(name) {
            Ok(st) if SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) != SFlag::S_IFREG => {
                return Err(FileError::NotPlainFile { path });
            }
            _ => {}
        }
        let (temp, mut file) = loop {
            let temp = format!(".{name}.{:016x}", fastrand::u64(..));
            match self.create_new(&temp, mode) {
                Ok(file) => break (temp, file),
                // Someone holds that name already: draw another.
                Err(_) if self.stat(&temp).is_ok() => continue,
                Err(err) => return Err(err),
            }
        };
        let written = file
            .write_all(contents)
            .and_then(|()| file.sync_all())
            .map_err(|e| FileError::io("write", self.path.join(&temp), e));
        drop(file);
        if let Err(err) = written.and_then(|()| {
            renameat(&self.fd, temp.as_str(), &self.fd, name).map_err(|e| explain("rename into", &path, e))
        }) {
            let _ = self.remove_file(&temp, true);
            return Err(err);
        }
        nix::unistd::fsync(&self.fd).map_err(|e| explain("fsync", &self.path, e))
    }

    /// Entries in the directory, counted through its descriptor (so a directory renamed away and
    /// replaced is not the one counted).
    pub fn count_entries(&self) -> Result<usize, FileError> {
        let by_fd = PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()));
        let entries = std::fs::read_dir(&by_fd).map_err(|e| FileError::io("list", &self.path, e))?;
        Ok(entries.filter(Result::is_ok).count())
    }

    /// The names of the directory's entries, read through its descriptor.
    pub fn entry_names(&self) -> Result<Vec<String>, FileError> {
        let by_fd = PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()));
        let entries = std::fs::read_dir(&by_fd).map_err(|e| FileError::io("list", &self.path, e))?;
        Ok(entries.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
    }

    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A look by whole path follows no symlink at the name, and a missing one is named.
    #[test]
    fn a_look_by_whole_path_does_not_follow_the_name() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::create_all(&tmp.path().join("run")).unwrap();
        std::fs::write(tmp.path().join("secret"), b"0123456789").unwrap();
        symlink(tmp.path().join("secret"), tmp.path().join("run/file")).unwrap();
        let st = dir.stat_by_path("file").unwrap();
        assert_eq!(st.st_mode & SFlag::S_IFMT.bits(), SFlag::S_IFLNK.bits(), "the link itself");
        dir.mkdir("sub").unwrap();
        assert_eq!(dir.stat_by_path("sub").unwrap().st_mode & SFlag::S_IFMT.bits(), SFlag::S_IFDIR.bits());
        let err = dir.stat_by_path("gone").unwrap_err().to_string();
        assert!(err.contains("run/gone"), "{err}");
    }

    #[test]
    fn directories_are_made_and_opened_without_following_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("pvfs-bench/run");
        let dir = Dir::create_all(&run).unwrap();
        assert!(run.is_dir());
        assert_eq!(dir.path(), run);
        Dir::open(&run).unwrap();

        // A symlink anywhere on the way is refused, and what it points at is left alone.
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        symlink(&elsewhere, tmp.path().join("pvfs-bench/linked")).unwrap();
        for path in [tmp.path().join("pvfs-bench/linked"), tmp.path().join("pvfs-bench/linked/sub")] {
            let err = Dir::create_all(&path).unwrap_err().to_string();
            assert!(err.contains("linked: it is a symlink, and pvfs never follows symlinks"), "{err}");
            let err = Dir::open(&path).unwrap_err().to_string();
            assert!(err.contains("pvfs-bench/linked: it is a symlink"), "{err}");
            // The refusal is a variant callers can match, naming the link itself.
            let err = Dir::open(&path).unwrap_err();
            assert!(
                matches!(&err, FileError::Symlink { op: "open", path } if path.ends_with("pvfs-bench/linked")),
                "{err:?}"
            );
        }
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing made through the link");
        assert!(Dir::create_all(Path::new("relative/dir")).unwrap_err().to_string().contains("absolute"));
        assert!(matches!(Dir::open(Path::new("relative/dir")), Err(FileError::NotAbsolute { .. })));
        assert!(dir.open_dir(Path::new("../x")).unwrap_err().to_string().contains("no .."));
        assert!(matches!(dir.open_dir(Path::new("../x")), Err(FileError::NotBelow { .. })));
    }

    #[test]
    fn files_refuse_symlinks_links_and_devices() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::create_all(tmp.path()).unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        symlink(&victim, tmp.path().join("ior.00000000")).unwrap();
        let err = dir.open_write("ior.00000000", OFlag::empty()).unwrap_err().to_string();
        assert!(err.contains("ior.00000000: it is a symlink"), "{err}");
        let err = dir.open_read("ior.00000000", OFlag::empty()).unwrap_err().to_string();
        assert!(err.contains("it is a symlink"), "{err}");
        let err = dir.create_new("ior.00000000", 0o644).unwrap_err().to_string();
        assert!(err.contains("ior.00000000: it is a symlink"), "{err}");
        std::fs::write(tmp.path().join("plain"), "").unwrap();
        assert!(dir.create_new("plain", 0o644).unwrap_err().to_string().contains("File exists"));
        std::fs::hard_link(&victim, tmp.path().join("ior.00000001")).unwrap();
        let err = dir.open_write("ior.00000001", OFlag::empty()).unwrap_err();
        assert!(matches!(err, FileError::HardLinks { links: 2, .. }), "{err:?}");
        assert!(err.to_string().contains("it has 2 hard links"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");

        // A FIFO cannot make the open hang, and is refused.
        nix::unistd::mkfifo(&tmp.path().join("fifo"), Mode::from_bits_truncate(0o600)).unwrap();
        assert!(
            dir.open_read("fifo", OFlag::empty()).unwrap_err().to_string().contains("not a regular file")
        );
        assert!(matches!(
            dir.open_read("fifo", OFlag::empty()),
            Err(FileError::NotRegular { op: "open", .. })
        ));
        let null = Dir::open(Path::new("/dev")).unwrap();
        assert!(
            null.open_read("null", OFlag::empty()).unwrap_err().to_string().contains("not a regular file")
        );

        // A plain file is written and read, blocking as usual.
        let mut w = dir.open_write("ior", OFlag::empty()).unwrap();
        w.write_all(b"data").unwrap();
        let r = dir.open_read("ior", OFlag::empty()).unwrap();
        let flags = OFlag::from_bits_truncate(nix::fcntl::fcntl(&r, FcntlArg::F_GETFL).unwrap());
        assert!(!flags.contains(OFlag::O_NONBLOCK));
        // The status flags asked for stay once O_NONBLOCK is cleared (set without reading them
        // back first), and so does the access mode.
        let w = dir.open_write("ior", OFlag::O_APPEND).unwrap();
        let flags = OFlag::from_bits_truncate(nix::fcntl::fcntl(&w, FcntlArg::F_GETFL).unwrap());
        assert!(flags.contains(OFlag::O_APPEND) && !flags.contains(OFlag::O_NONBLOCK), "{flags:?}");
        assert_eq!(flags & OFlag::O_ACCMODE, OFlag::O_WRONLY, "{flags:?}");
        dir.remove_file("ior", false).unwrap();
        dir.remove_file("ior", true).unwrap();
        // Removing a symlink removes the link, not its target.
        dir.remove_file("ior.00000000", false).unwrap();
        assert!(victim.exists());
    }

    #[test]
    fn a_replaced_file_goes_through_a_temporary_and_never_through_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::create_all(tmp.path()).unwrap();
        dir.replace_file("mpi-hostfile", b"a slots=1\n", 0o644).unwrap();
        dir.replace_file("mpi-hostfile", b"b slots=2\n", 0o644).unwrap();
        assert_eq!(std::fs::read_to_string(tmp.path().join("mpi-hostfile")).unwrap(), "b slots=2\n");
        assert_eq!(dir.count_entries().unwrap(), 1, "no temporary left behind");

        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::fs::remove_file(tmp.path().join("mpi-hostfile")).unwrap();
        symlink(&victim, tmp.path().join("mpi-hostfile")).unwrap();
        let err = dir.replace_file("mpi-hostfile", b"c slots=3\n", 0o644).unwrap_err().to_string();
        assert!(err.contains("mpi-hostfile: it exists and is not a plain file"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }
}
