//! The simulated nodes' programs: each package's executables where its real file list puts them
//! (`testdata/el-programs.txt`, which cites the spec files), found as the agent finds a program
//! on a node — `execvp` with systemd's PATH for services. A command by a name that no installed
//! package puts on that PATH, or by a path that none installs, fails in the simulator as it
//! would on a node, so a plan cannot pass here with a program a real node lacks.

use pvfs_host::{Command, CommandError};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const TABLE: &str = include_str!("../testdata/el-programs.txt");

/// The agent's PATH on an EL node: systemd's for services on a merged-/usr system
/// (src/basic/path-util.h, DEFAULT_PATH_NORMAL), which config/pvfs-agent.service keeps.
pub(crate) const SERVICE_PATH: &[&str] = &["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin"];

/// Every path the table lists for `package` (`@base-el7`, `@base-el8` for a minimal install).
fn paths(package: &str) -> impl Iterator<Item = &'static str> + '_ {
    TABLE
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(' '))
        .filter(move |(p, _)| *p == package)
        .map(|(_, path)| path.trim())
}

/// Gives the node under `dir` EL7+'s merged /usr (/bin and /sbin are links into /usr, as the
/// filesystem package makes them) and a minimal install's programs: EL7's yum for a `.el7`
/// kernel `release`, EL8's dnf otherwise.
pub(crate) fn base(dir: &Path, release: &str) {
    for (link, target) in [("bin", "usr/bin"), ("sbin", "usr/sbin")] {
        std::fs::create_dir_all(dir.join(target)).unwrap();
        std::os::unix::fs::symlink(target, dir.join(link)).unwrap();
    }
    install(dir, if release.contains(".el7") { "@base-el7" } else { "@base-el8" });
}

/// Puts `package`'s programs on the node under `dir`, each an empty executable file at its
/// path (through the node's /sbin and /bin links, so a package that lists /sbin fills
/// /usr/sbin, as on the node).
pub(crate) fn install(dir: &Path, package: &str) {
    for path in paths(package) {
        let file = dir.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Whether the node under `dir` has an executable file at `path`.
pub(crate) fn has(dir: &Path, path: &str) -> bool {
    std::fs::metadata(dir.join(path.trim_start_matches('/')))
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The program `command` runs on the node under `dir`, by its file name, as execvp(3) finds
/// it: a program with a `/` is that file; any other is the first file of that name in a
/// [`SERVICE_PATH`] directory. Nothing found is the error the agent's runner gives when the
/// program cannot be started (ENOENT).
pub(crate) fn find(dir: &Path, command: &Command) -> Result<String, CommandError> {
    let program = command.program.as_str();
    let found = if program.contains('/') {
        has(dir, program).then_some(program.to_owned())
    } else {
        SERVICE_PATH.iter().map(|d| format!("{d}/{program}")).find(|p| has(dir, p))
    };
    match found {
        Some(path) => Ok(path.rsplit('/').next().unwrap_or_default().to_owned()),
        None => Err(CommandError::Spawn {
            command: command.to_string(),
            program: program.to_owned(),
            // ENOENT, as the kernel answers execve for a file that is not there.
            source: std::io::Error::from_raw_os_error(2),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the issue found on real nodes: ThinkParQ's packages put the setup scripts in
    /// /opt/beegfs/sbin, which no service's PATH names, so the bare name is not found there
    /// (and neither is a path no package installs); beegfs-ctl is on PATH in /usr/bin.
    #[test]
    fn programs_are_where_their_packages_put_them_and_nowhere_else() {
        let dir = tempfile::tempdir().unwrap();
        base(dir.path(), "4.18.0-513.5.1.el8_9.x86_64");
        let find = |program: &str| find(dir.path(), &Command::new(program).arg("x"));
        assert_eq!(find("dnf").unwrap(), "dnf");
        assert_eq!(find("/usr/bin/systemctl").unwrap(), "systemctl");
        // Through the merged /usr's links, as on the node.
        assert_eq!(find("/sbin/blkid").unwrap(), "blkid");
        // Not before its package.
        let err = find("/opt/beegfs/sbin/beegfs-setup-storage").unwrap_err();
        assert_eq!(
            err.to_string(),
            "`/opt/beegfs/sbin/beegfs-setup-storage x` could not be started: No such file or directory \
             (os error 2) (is /opt/beegfs/sbin/beegfs-setup-storage installed?)"
        );
        install(dir.path(), "beegfs-storage");
        install(dir.path(), "beegfs-utils");
        assert_eq!(find("/opt/beegfs/sbin/beegfs-setup-storage").unwrap(), "beegfs-setup-storage");
        for missing in
            ["beegfs-setup-storage", "/usr/sbin/beegfs-setup-storage", "/usr/local/bin/beegfs-setup-storage"]
        {
            assert!(
                matches!(find(missing), Err(CommandError::Spawn { source, .. }) if source.kind() == std::io::ErrorKind::NotFound),
                "{missing}"
            );
        }
        assert_eq!(find("beegfs-ctl").unwrap(), "beegfs-ctl");
        assert_eq!(find("beegfs-check-servers").unwrap(), "beegfs-check-servers");
        // EL7's base has yum and no dnf.
        let el7 = tempfile::tempdir().unwrap();
        base(el7.path(), "3.10.0-1160.el7.x86_64");
        assert!(has(el7.path(), "/usr/bin/yum") && !has(el7.path(), "/usr/bin/dnf"));
        // A package's /sbin path lands in /usr/sbin.
        install(el7.path(), "lustre-client");
        assert!(has(el7.path(), "/usr/sbin/mount.lustre") && !has(el7.path(), "/usr/sbin/mkfs.lustre"));
    }
}
