//! What a step may write, and where: the places in the system trees each kind owns, the
//! modes of what pvfs writes, and the contents of the files whose lines can run programs
//! (modprobe, udev, apt sources, BeeGFS's lists).

use crate::values::{canonical, simple_name};
use crate::{
    BEEGFS_AUTH_FILE, BEEGFS_INTERFACES, BEEGFS_NET_FILTER, BEEGFS_SERVICE_CONFS, MDADM_CONFS, Policy,
    PolicyError,
};
use pvfs_host::paths::under;

/// The file BeeGFS's client service reads its mounts from.
const BEEGFS_MOUNTS: &str = "/etc/beegfs/beegfs-mounts.conf";

impl Policy {
    pub(crate) fn mkdir(&self, path: &str, mode: u32) -> Result<(), PolicyError> {
        self.data_path(path, "a directory")?;
        if mode & !0o7777 != 0 || mode & 0o6000 != 0 || mode & 0o002 != 0 {
            return Err(PolicyError::new(
                "dir-mode",
                &format!("{mode:04o}"),
                format!(
                    "directory {path} with mode {mode:04o}: setuid, setgid and world-writable directories are never made by pvfs"
                ),
                "use a mode such as 0755 or 0750",
            ));
        }
        Ok(())
    }

    /// A whole file written by a `File` step (or its action).
    pub(crate) fn file_write(&self, path: &str, contents: &str, mode: u32) -> Result<(), PolicyError> {
        canonical(path)?;
        if let Some(name) = path.strip_prefix("/etc/modprobe.d/") {
            simple_name("modprobe file", name.strip_suffix(".conf").unwrap_or("-"), 64, path).map_err(
                |e| PolicyError { rule: "file-place", fix: "write /etc/modprobe.d/NAME.conf".into(), ..e },
            )?;
            modprobe_contents(path, contents)?;
        } else if path == BEEGFS_MOUNTS {
            self.beegfs_mounts(contents)?;
        } else if path == BEEGFS_AUTH_FILE {
            if mode & 0o077 != 0 {
                return Err(PolicyError::new(
                    "file-mode",
                    &format!("{mode:04o}"),
                    format!("{path} holds BeeGFS's shared secret: mode {mode:04o} lets others read it"),
                    "use 0400 (root only)",
                ));
            }
        } else if path == BEEGFS_INTERFACES || path == BEEGFS_NET_FILTER {
            beegfs_list(path, contents)?;
        } else if path != "/etc/lnet.conf" {
            if let Some(fix) = reserved(path) {
                return Err(PolicyError::new(
                    "file-place",
                    path,
                    format!("{path} may not be written by a file step"),
                    fix,
                ));
            }
            if path.matches('/').count() == 1 {
                return Err(PolicyError::new(
                    "file-place",
                    path,
                    format!("{path} is a file directly under /"),
                    "write files under the directories the cluster file names (mount points, targets), never in /",
                ));
            }
            self.data_path(path, "a file").map_err(|e| {
                if e.rule == "system-tree" {
                    PolicyError::new(
                        "file-place",
                        path,
                        format!("{path} is not a place a file step may write"),
                        "file steps write /etc/modprobe.d/NAME.conf, /etc/lnet.conf, /etc/beegfs/beegfs-mounts.conf, \
                         BeeGFS's connauthfile, interfaces and netfilter, and files under data paths; nothing else \
                         in the system trees",
                    )
                } else {
                    e
                }
            })?;
        }
        if contents.contains('\0') {
            return Err(PolicyError::new(
                "file-content",
                path,
                format!("{path}: contents hold a NUL byte"),
                "write text",
            ));
        }
        plain_mode(path, mode)
    }

    fn beegfs_mounts(&self, contents: &str) -> Result<(), PolicyError> {
        for line in contents.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let words: Vec<&str> = line.split_whitespace().collect();
            let ok = match words.as_slice() {
                [mount, conf] => {
                    self.data_path(mount, "a BeeGFS mount point")?;
                    conf.starts_with("/etc/beegfs/beegfs-client")
                        && conf.ends_with(".conf")
                        && canonical(conf).is_ok()
                }
                _ => false,
            };
            if !ok {
                return Err(PolicyError::new(
                    "file-content",
                    line,
                    format!("{BEEGFS_MOUNTS}: {line:?} is not `MOUNTPOINT /etc/beegfs/beegfs-client.conf`"),
                    "write one mount point and its client configuration per line",
                ));
            }
        }
        Ok(())
    }
}

pub(crate) fn misplaced(step_kind: &str, path: &str) -> PolicyError {
    PolicyError::new(
        "action-kind",
        path,
        format!("a {step_kind} step may not write {path}"),
        "this is a bug in pvfs (a step produced a write outside its place); report it",
    )
}

/// The three files `mpi-ssh` writes, each with its one mode; `mpi-ssh-gone` only rewrites
/// `authorized_keys`. Every line written is printable.
pub(crate) fn mpi_ssh_write(
    step_kind: &str,
    path: &str,
    contents: &str,
    mode: u32,
) -> Result<(), PolicyError> {
    use pvfs_steps::{AUTHORIZED_KEYS, MPI_KEY, MPI_KNOWN_HOSTS};
    let want = match path {
        AUTHORIZED_KEYS => 0o600,
        MPI_KEY | MPI_KNOWN_HOSTS if step_kind == "mpi-ssh" => {
            if path == MPI_KEY {
                0o600
            } else {
                0o644
            }
        }
        _ => return Err(misplaced(step_kind, path)),
    };
    if mode != want {
        return Err(PolicyError::new(
            "file-mode",
            &format!("{mode:04o}"),
            format!("{path} is written {want:04o}, not {mode:04o}"),
            "this is a bug in pvfs; report it",
        ));
    }
    if contents.lines().any(|l| l.chars().any(char::is_control)) {
        return Err(PolicyError::new(
            "file-content",
            path,
            format!("{path} would hold a control character"),
            "remove it from the file on the node; pvfs writes printable lines only",
        ));
    }
    Ok(())
}

/// Places in the system trees that only a typed step writes, and which one.
fn reserved(path: &str) -> Option<&'static str> {
    if path == "/etc/fstab" {
        Some("/etc/fstab is written only by mount steps, one line per mount")
    } else if MDADM_CONFS.contains(&path) {
        Some("mdadm.conf is written only by raid0 steps, from the array's own `mdadm --detail --brief`")
    } else if under(path, "/etc/yum.repos.d") || under(path, "/etc/apt") {
        Some("repositories are written only by packages steps ([[repo]] in the cluster file)")
    } else if under(path, "/etc/udev") {
        Some(
            "udev rules can run programs; they are reserved for a typed step whose content the agent writes itself",
        )
    } else if under(path, "/etc/beegfs") {
        Some("BeeGFS service configurations change only through config-keys and beegfs-setup steps")
    } else {
        None
    }
}

pub(crate) fn mdadm_conf(conf: &str) -> Result<(), PolicyError> {
    if MDADM_CONFS.contains(&conf) {
        return Ok(());
    }
    Err(PolicyError::new(
        "file-place",
        conf,
        format!("{conf} is not where mdadm reads its arrays"),
        format!("use {} (or leave it out: the node's own is picked)", MDADM_CONFS.join(" or ")),
    ))
}

pub(crate) fn beegfs_conf(path: &str) -> Result<(), PolicyError> {
    if BEEGFS_SERVICE_CONFS.contains(&path) {
        return Ok(());
    }
    Err(PolicyError::new(
        "file-place",
        path,
        format!("{path} is not a BeeGFS service configuration"),
        format!("settings steps edit only {}", BEEGFS_SERVICE_CONFS.join(", ")),
    ))
}

/// Modes of files pvfs writes: data and configuration, never programs.
pub(crate) fn plain_mode(path: &str, mode: u32) -> Result<(), PolicyError> {
    let problem = if mode & !0o7777 != 0 {
        Some("is not a permission mode")
    } else if mode & 0o4000 != 0 {
        Some("has the setuid bit")
    } else if mode & 0o2000 != 0 {
        Some("has the setgid bit")
    } else if mode & 0o1000 != 0 {
        Some("has the sticky bit")
    } else if mode & 0o002 != 0 {
        Some("is world-writable")
    } else if mode & 0o111 != 0 {
        Some("has an execute bit (pvfs writes data and configuration, never programs)")
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(PolicyError::new(
            "file-mode",
            &format!("{mode:04o}"),
            format!("mode {mode:04o} for {path} {problem}"),
            "use a mode such as 0644 or 0600",
        )),
    }
}

fn modprobe_contents(path: &str, contents: &str) -> Result<(), PolicyError> {
    for line in contents.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or_default();
        let module = words.next().unwrap_or_default();
        let params_ok = words.all(|w| {
            let (key, value) = w.split_once('=').unwrap_or((w, "x"));
            !key.is_empty()
                && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                && !value.is_empty()
                && value.chars().all(|c| c.is_ascii_graphic())
        });
        let module_ok =
            !module.is_empty() && module.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
        if first != "options" || !module_ok || !params_ok {
            return Err(PolicyError::new(
                "file-content",
                line,
                format!("{path}: {line:?} is not an `options MODULE key=value…` line"),
                "modprobe files written by pvfs hold only comments and options lines (an install or remove line runs a shell command as root)",
            ));
        }
    }
    Ok(())
}

/// BeeGFS's interface and subnet lists: one short word of letters, digits and `.:/@_-` per
/// line (an interface name, or a subnet such as 10.0.0.0/24).
fn beegfs_list(path: &str, contents: &str) -> Result<(), PolicyError> {
    for line in contents.lines() {
        let ok = !line.is_empty()
            && line.len() <= 64
            && line
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '/' | '@' | '_' | '-'));
        if !ok {
            return Err(PolicyError::new(
                "file-content",
                line,
                format!("{path}: {line:?} is not an interface name or a subnet"),
                "write one interface (eth0) or subnet (10.0.0.0/24) per line",
            ));
        }
    }
    Ok(())
}

/// The fields pvfs writes into a deb822 source (sources.list(5)); any other (an `Options`-like
/// field, or `Check-Valid-Until: no`) would change how apt trusts the repository.
const DEB822_FIELDS: &[&str] = &["Types", "URIs", "Suites", "Components", "Signed-By", "Trusted"];

/// A `.sources` file as `packages::sources_file` writes it: comments and `Field: value` lines
/// of [`DEB822_FIELDS`], one paragraph (no blank line: a second paragraph is a second source).
pub(crate) fn deb822_source(path: &str, contents: &str) -> Result<(), PolicyError> {
    for line in contents.lines() {
        if line.starts_with('#') {
            continue;
        }
        let field = line.split_once(": ").map(|(f, _)| f);
        if !field.is_some_and(|f| DEB822_FIELDS.contains(&f)) || line.chars().any(char::is_control) {
            return Err(PolicyError::new(
                "file-content",
                path,
                format!("{line:?} is not a line pvfs writes into an apt source"),
                "this is a bug in pvfs (apt sources hold Types, URIs, Suites, Components, Signed-By and Trusted); report it",
            ));
        }
    }
    Ok(())
}

/// `/etc/udev/rules.d/99-pvfs-queue-NAME.rules`, the one place a block-queue step writes.
pub(crate) fn udev_rule_path(path: &str) -> Result<(), PolicyError> {
    let name = path.strip_prefix("/etc/udev/rules.d/99-pvfs-queue-").and_then(|n| n.strip_suffix(".rules"));
    match name {
        Some(name) if simple_name("", name, 64, "").is_ok() => Ok(()),
        _ => Err(misplaced("block-queue", path)),
    }
}

/// A queue-settings rule as [`pvfs_steps::BlockQueue`] writes it: comments, and lines of
/// `KEY=="value"` matches on a few identity keys followed by `ATTR{queue/…}="value"`
/// assignments. Nothing that runs, imports or jumps.
pub(crate) fn udev_queue_rule(path: &str, contents: &str) -> Result<(), PolicyError> {
    const MATCH_KEYS: &[&str] = &[
        "ACTION",
        "SUBSYSTEM",
        "KERNEL",
        "SYMLINK",
        "ENV{DEVTYPE}",
        "ENV{MD_DEVNAME}",
        "ENV{DM_NAME}",
        "ATTRS{wwid}",
    ];
    const ASSIGN_KEYS: &[&str] =
        &["ATTR{queue/scheduler}", "ATTR{queue/nr_requests}", "ATTR{queue/read_ahead_kb}"];
    let bad = |line: &str, problem: &str| {
        PolicyError::new(
            "udev-rule",
            line,
            format!("{path}: {line:?} {problem}"),
            "this is a bug in pvfs (block-queue rules hold only identity matches and queue settings); report it",
        )
    };
    for line in contents.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let mut assigned = false;
        for pair in line.split(", ") {
            let (key, op, value) = if let Some((k, v)) = pair.split_once("==") {
                (k, "==", v)
            } else if let Some((k, v)) = pair.split_once('=') {
                (k, "=", v)
            } else {
                return Err(bad(line, "is not a list of KEY==\"value\" and ATTR{…}=\"value\""));
            };
            let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or("\"");
            if value.contains(['"', '\\']) || value.chars().any(char::is_control) {
                return Err(bad(line, "has a value that is not one plain quoted string"));
            }
            match op {
                "==" if !assigned && MATCH_KEYS.contains(&key) => {}
                "=" if ASSIGN_KEYS.contains(&key) => assigned = true,
                _ => return Err(bad(line, &format!("uses {key}{op}, which a queue rule never does"))),
            }
        }
        if !assigned {
            return Err(bad(line, "sets no queue attribute"));
        }
    }
    Ok(())
}
