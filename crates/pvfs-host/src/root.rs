//! Files of the host, read and written under an injectable root directory.
//!
//! Production code uses `Root::system()` (`/`); tests point a `Root` at a temp dir holding a
//! recorded `/proc`, `/sys` and `/etc`, the way `below` tests its readers.
//!
//! Writes follow no symbolic links below the root. The agent writes as root into directories
//! other users may be able to plant names in (mount points, shared scratch areas), so a
//! symlink anywhere on the way, or at the name being written, could turn a write of a 0600
//! file into a write somewhere else with other permissions. Directories are therefore walked
//! one component at a time with `openat(O_NOFOLLOW)` from a descriptor of the root, and every
//! later call is relative to the directory descriptor found, so nothing can be swapped in
//! between a check and the use (a path would be resolved again by the kernel at each call).

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{Mode, SFlag};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

/// A file under the root could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {path}: {source}")]
pub struct RootError {
    /// The path as the host sees it (without the test root prefix), e.g. `/proc/meminfo`.
    pub path: String,
    /// What was being done: `read`, `write`, `create`.
    pub action: &'static str,
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
            .map_err(|source| RootError { path: abs.to_owned(), action: "read", source })
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
        read().map_err(|source| RootError { path: abs.to_owned(), action: "read", source })
    }

    /// Where a symbolic link under the root points (as the link says it, not resolved).
    pub fn read_link(&self, abs: &str) -> Result<PathBuf, RootError> {
        std::fs::read_link(self.path(abs)).map_err(|source| RootError {
            path: abs.to_owned(),
            action: "read the link",
            source,
        })
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

    /// Replaces a file's contents all at once, so a crash leaves the old file or the new one,
    /// never half of one (this is how `/etc/fstab` and config files are changed).
    ///
    /// The new contents go to a temporary file with a random name, created `O_EXCL|O_NOFOLLOW`
    /// in the target's directory (so a name planted in advance, file or symlink, is never
    /// opened), given `mode` exactly whatever the umask, written and fsync'd, renamed over the
    /// target, and then the directory is fsync'd so the rename itself survives a crash.
    /// Refused, naming the link, when the target or any directory on the way below the root
    /// is a symbolic link.
    pub fn write_atomic(&self, abs: &str, contents: &[u8], mode: u32) -> Result<(), RootError> {
        let err = |source| RootError { path: abs.to_owned(), action: "write", source };
        let (dirs, name) = split(abs).map_err(err)?;
        let Some(name) = name else {
            return Err(err(io::Error::other("the root itself is not a file")));
        };
        let dir = self.walk(&dirs, None).map_err(err)?;
        match nix::sys::stat::fstatat(&dir, name.as_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK => {
                return Err(err(symlink_refused(abs)));
            }
            Ok(_) | Err(Errno::ENOENT) => {}
            Err(errno) => return Err(err(errno.into())),
        }
        let (temp, file) = create_temp(&dir, &name, mode).map_err(err)?;
        let mut file = std::fs::File::from(file);
        let written = (|| -> io::Result<()> {
            use std::io::Write;
            use std::os::unix::fs::PermissionsExt;
            // fchmod: the mode exactly, whatever the process umask (the agent's unit sets
            // 0077, and an fstab readable by root only would break every other reader).
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
            file.write_all(contents)?;
            file.sync_all()?;
            nix::fcntl::renameat(&dir, temp.as_str(), &dir, name.as_str())?;
            Ok(())
        })();
        if let Err(source) = written {
            // Best effort: the temporary file is ours, and useless now.
            let _ = nix::unistd::unlinkat(&dir, temp.as_str(), nix::unistd::UnlinkatFlags::NoRemoveDir);
            return Err(err(source));
        }
        nix::unistd::fsync(&dir).map_err(|errno| err(errno.into()))
    }

    /// Removes a file (never a directory); a file already gone is no error. The directories on
    /// the way are walked without following links, and the name itself is unlinked, not what
    /// a link there points to.
    pub fn remove_file(&self, abs: &str) -> Result<(), RootError> {
        let err = |source| RootError { path: abs.to_owned(), action: "remove", source };
        let (dirs, name) = split(abs).map_err(err)?;
        let Some(name) = name else {
            return Err(err(io::Error::other("the root itself is not a file")));
        };
        let dir = match self.walk(&dirs, None) {
            Ok(dir) => dir,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(err(e)),
        };
        match nix::unistd::unlinkat(&dir, name.as_str(), nix::unistd::UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(Errno::ENOENT) => nix::unistd::fsync(&dir).map_err(|errno| err(errno.into())),
            Err(errno) => Err(err(errno.into())),
        }
    }

    /// Writes a kernel attribute (sysfs, procfs) in place: those files cannot be renamed over.
    /// Only paths under `/sys` and `/proc` are attributes; anything else is refused (a plain
    /// file written in place could be half-written, or be a link planted elsewhere). Links
    /// inside sysfs are followed: `/sys/block/sdc` is one, and only the kernel makes them.
    pub fn write_attribute(&self, abs: &str, value: &str) -> Result<(), RootError> {
        let err = |source| RootError { path: abs.to_owned(), action: "write", source };
        let (dirs, _) = split(abs).map_err(err)?;
        if !matches!(dirs.first().map(String::as_str), Some("sys" | "proc")) {
            return Err(err(io::Error::other(
                "not a kernel attribute: in-place writes are only for files under /sys and /proc",
            )));
        }
        // No O_CREAT: an attribute the kernel does not offer is an error, not a new file.
        let mut file = std::fs::OpenOptions::new().write(true).open(self.path(abs)).map_err(err)?;
        io::Write::write_all(&mut file, value.as_bytes()).map_err(err)
    }

    /// Creates a directory and its missing parents; a directory it creates gets `mode`
    /// exactly (whatever the umask); an existing one is left as it is. Refused, naming the
    /// link, when an existing component below the root is a symbolic link.
    pub fn create_dir_all(&self, abs: &str, mode: u32) -> Result<(), RootError> {
        let err = |source| RootError { path: abs.to_owned(), action: "create", source };
        let (mut dirs, name) = split(abs).map_err(err)?;
        dirs.extend(name);
        self.walk(&dirs, Some(mode)).map(drop).map_err(err)
    }

    /// Opens the directory `components` name below the root, following no symbolic link;
    /// with `create`, missing ones are made with that mode.
    fn walk(&self, components: &[String], create: Option<u32>) -> io::Result<OwnedFd> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        // The root itself may be reached through links (a test's temp dir under a linked
        // /tmp); only what lies below it is walked without following any.
        let mut dir = nix::fcntl::open(&self.base, flags, Mode::empty())?;
        let mut shown = String::new();
        for component in components {
            shown.push('/');
            shown.push_str(component);
            let open = |dir: &OwnedFd| {
                nix::fcntl::openat(dir, component.as_str(), flags | OFlag::O_NOFOLLOW, Mode::empty())
            };
            let next = match (open(&dir), create) {
                (Ok(fd), _) => fd,
                (Err(Errno::ENOENT), Some(mode)) => {
                    match nix::sys::stat::mkdirat(&dir, component.as_str(), Mode::from_bits_truncate(mode)) {
                        Ok(()) => {
                            let fd = open(&dir).map_err(|e| explain(&dir, component, &shown, e))?;
                            // The mode exactly: mkdir applies the umask.
                            nix::sys::stat::fchmod(&fd, Mode::from_bits_truncate(mode))?;
                            fd
                        }
                        // Made by someone else in the meantime: use it if it is a directory.
                        Err(Errno::EEXIST) => open(&dir).map_err(|e| explain(&dir, component, &shown, e))?,
                        Err(errno) => return Err(errno.into()),
                    }
                }
                (Err(errno), _) => return Err(explain(&dir, component, &shown, errno)),
            };
            dir = next;
        }
        Ok(dir)
    }
}

/// A host path's directories below the root and its last component; `.` is dropped and `..`
/// refused (the walk is component by component from the root, and `..` would climb out).
fn split(abs: &str) -> io::Result<(Vec<String>, Option<String>)> {
    let mut parts = Vec::new();
    for component in Path::new(abs).components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::ParentDir | Component::Prefix(_) => {
                return Err(io::Error::other("a path with `..` is not written: name the directory itself"));
            }
        }
    }
    let last = parts.pop();
    Ok((parts, last))
}

/// Why `component` of `dir` (shown as `shown`) could not be opened as a directory: a symbolic
/// link is named as such.
fn explain(dir: &OwnedFd, component: &str, shown: &str, errno: Errno) -> io::Error {
    let is_link = nix::sys::stat::fstatat(dir, component, AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK);
    if is_link {
        symlink_refused(shown)
    } else if errno == Errno::ENOTDIR {
        io::Error::other(format!("{shown} is not a directory"))
    } else {
        let source = io::Error::from(errno);
        // The kind stays, so callers can still tell "not found" from the rest.
        io::Error::new(source.kind(), format!("{shown}: {source}"))
    }
}

fn symlink_refused(shown: &str) -> io::Error {
    io::Error::other(format!(
        "{shown} is a symbolic link, and pvfs follows none when it writes as root (rule: no symlinks in \
         written paths): replace it with the real directory or file, or name the real path"
    ))
}

/// Creates a new file with a random name next to `name` in `dir`, `O_EXCL|O_NOFOLLOW`: any
/// name that exists already, whatever it is, is skipped, never opened.
fn create_temp(dir: &OwnedFd, name: &str, mode: u32) -> io::Result<(String, OwnedFd)> {
    // Long names would push the temporary name past NAME_MAX; the random part is what matters.
    let stem: String = name.chars().take(64).collect();
    let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut last = Errno::EEXIST;
    for _ in 0..16 {
        let temp = format!(".{stem}.{:016x}.pvfs-new", fastrand::u64(..));
        match nix::fcntl::openat(dir, temp.as_str(), flags, Mode::from_bits_truncate(mode & 0o777)) {
            Ok(fd) => return Ok((temp, fd)),
            Err(Errno::EEXIST) => last = Errno::EEXIST,
            Err(errno) => return Err(errno.into()),
        }
    }
    Err(io::Error::other(format!("no free temporary name after 16 tries ({})", io::Error::from(last))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode_of(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn remove_file_unlinks_the_name_not_a_link_target_and_a_missing_file_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        std::fs::create_dir_all(dir.path().join("etc/pvfs/mpi")).unwrap();
        std::fs::write(dir.path().join("precious"), "keep").unwrap();
        std::os::unix::fs::symlink(dir.path().join("precious"), dir.path().join("etc/pvfs/mpi/id")).unwrap();
        root.remove_file("/etc/pvfs/mpi/id").unwrap();
        assert!(!dir.path().join("etc/pvfs/mpi/id").exists());
        assert_eq!(std::fs::read_to_string(dir.path().join("precious")).unwrap(), "keep");
        root.remove_file("/etc/pvfs/mpi/id").unwrap();
        root.remove_file("/etc/nowhere/id").unwrap();
        std::os::unix::fs::symlink(dir.path().join("etc"), dir.path().join("linked")).unwrap();
        let err = root.remove_file("/linked/pvfs/mpi/other").unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
    }

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
        assert!(err.to_string().starts_with("cannot read /proc/meminfo: "), "{err}");
    }

    #[test]
    fn writes_whole_files_and_directories_under_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        root.create_dir_all("/etc/beegfs", 0o755).unwrap();
        root.write_atomic("/etc/beegfs/a.conf", b"one\n", 0o644).unwrap();
        root.write_atomic("/etc/beegfs/a.conf", b"two\n", 0o600).unwrap();
        assert_eq!(root.read_to_string("/etc/beegfs/a.conf").unwrap(), "two\n");
        assert!(root.is_dir("/etc/beegfs"));
        // No temporary file is left behind.
        assert_eq!(root.list_dir("/etc/beegfs").unwrap(), ["a.conf"]);
        assert_eq!(mode_of(&dir.path().join("etc/beegfs/a.conf")), 0o600, "the mode of the last write");
        let err = root.write_atomic("/no/such/dir/f", b"x", 0o644).unwrap_err();
        assert_eq!(err.path, "/no/such/dir/f");
        assert!(err.is_not_found(), "{err}");
    }

    #[test]
    fn modes_are_exact_whatever_the_umask() {
        // The test process's umask (022 at least) would make these 0644 and 0755.
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        root.create_dir_all("/shared/a/b", 0o777).unwrap();
        for made in ["shared", "shared/a", "shared/a/b"] {
            assert_eq!(mode_of(&dir.path().join(made)), 0o777, "{made}");
        }
        root.write_atomic("/shared/a/b/f", b"x", 0o666).unwrap();
        assert_eq!(mode_of(&dir.path().join("shared/a/b/f")), 0o666);
        // An existing directory keeps its mode.
        root.create_dir_all("/shared/a", 0o700).unwrap();
        assert_eq!(mode_of(&dir.path().join("shared/a")), 0o777);
    }

    /// The attack of issue 10: a symlink planted at the temporary name the old code used
    /// turned a 0600 root file into 0644 and wrote through the link.
    #[test]
    fn a_planted_symlink_at_the_old_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        root.create_dir_all("/etc", 0o755).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("etc/.cfg.pvfs-new")).unwrap();

        root.write_atomic("/etc/cfg", b"secret\n", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert_eq!(mode_of(&victim), 0o600);
        assert_eq!(std::fs::read_to_string(dir.path().join("etc/cfg")).unwrap(), "secret\n");
        assert_eq!(mode_of(&dir.path().join("etc/cfg")), 0o600);
        assert!(std::fs::symlink_metadata(dir.path().join("etc/.cfg.pvfs-new")).unwrap().is_symlink());
    }

    #[test]
    fn a_symlink_at_the_target_is_refused_and_its_target_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        root.create_dir_all("/etc", 0o755).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("etc/fstab")).unwrap();

        let err = root.write_atomic("/etc/fstab", b"/dev/x /mnt xfs defaults 0 0\n", 0o644).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot write /etc/fstab: /etc/fstab is a symbolic link, and pvfs follows none when it writes \
             as root (rule: no symlinks in written paths): replace it with the real directory or file, or \
             name the real path"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert_eq!(mode_of(&victim), 0o600);
        assert!(std::fs::symlink_metadata(dir.path().join("etc/fstab")).unwrap().is_symlink());
        assert_eq!(root.list_dir("/etc").unwrap(), ["fstab"], "no temporary file left");
    }

    #[test]
    fn a_symlinked_parent_is_refused_for_files_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::create_dir(dir.path().join("etc")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("etc/beegfs")).unwrap();

        let err = root.write_atomic("/etc/beegfs/beegfs-client.conf", b"x\n", 0o644).unwrap_err();
        assert!(err.to_string().contains("/etc/beegfs is a symbolic link"), "{err}");
        let err = root.create_dir_all("/etc/beegfs/sub/dir", 0o755).unwrap_err();
        assert!(
            err.to_string().starts_with("cannot create /etc/beegfs/sub/dir: /etc/beegfs is a symbolic link"),
            "{err}"
        );
        // A link to a directory as the last component is refused too.
        let err = root.create_dir_all("/etc/beegfs", 0o755).unwrap_err();
        assert!(err.to_string().contains("/etc/beegfs is a symbolic link"), "{err}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing was made through the link");
    }

    #[test]
    fn dot_dot_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path().join("inner"));
        std::fs::create_dir(dir.path().join("inner")).unwrap();
        let err = root.write_atomic("/../escaped", b"x", 0o644).unwrap_err();
        assert!(err.to_string().contains("`..`"), "{err}");
        assert!(!dir.path().join("escaped").exists());
        assert!(root.create_dir_all("/a/../../b", 0o755).is_err());
        assert!(!dir.path().join("b").exists());
    }

    #[test]
    fn attributes_are_only_written_under_sys_and_proc() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        std::fs::create_dir_all(dir.path().join("sys/block/sdc/queue")).unwrap();
        std::fs::write(dir.path().join("sys/block/sdc/queue/nr_requests"), "128\n").unwrap();
        root.write_attribute("/sys/block/sdc/queue/nr_requests", "4096").unwrap();
        assert_eq!(root.read_trimmed("/sys/block/sdc/queue/nr_requests").unwrap(), "4096");
        // An attribute the kernel does not offer is not created.
        assert!(root.write_attribute("/sys/block/sdc/queue/nonesuch", "1").unwrap_err().is_not_found());
        assert!(!dir.path().join("sys/block/sdc/queue/nonesuch").exists());

        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        let err = root.write_attribute("/etc/passwd", "x").unwrap_err();
        assert!(err.to_string().contains("only for files under /sys and /proc"), "{err}");
        assert!(!dir.path().join("etc/passwd").exists());
        assert!(root.write_attribute("/sys/../etc/passwd", "x").is_err());
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
