//! Which paths on a node are the system's, and where a setting that names a path may point.
//!
//! A daemon told to log to `/var/log/beegfs/../../etc/cron.d/evil` writes a cron job as root;
//! one told `connAuthFile = ../../etc/shadow` reads what it was never meant to. Every value a
//! service will use as a path — a BeeGFS `*File`/`*Directory` key, a GlusterFS `…-log-file`
//! option, any value that looks like a path — is therefore absolute, canonical and inside the
//! one place its kind of path may be, by the rule here. Both the cluster-file validator (with
//! file:line:col) and the agent's policy (on every step it is sent) ask it, so it lives in
//! `pvfs-host` for the reason `mount_options` does (the config crate cannot depend on
//! `pvfs-steps`); the policy narrows data paths further by a site's `data_roots`.

/// firewalld's client, where firewalld's package installs it (firewalld.spec, `%files`:
/// `%{_bindir}/firewall-cmd`): the agent's facts and the `firewall` step both look for it.
pub const FIREWALL_CMD: &str = "/usr/bin/firewall-cmd";

/// Directories no step may create things in, mount on, or use as data paths (and `/` itself).
/// `/lib*` is matched by prefix (`/lib`, `/lib32`, `/lib64`, `/libx32`).
pub const SYSTEM_TREES: &[&str] = &[
    "/bin", "/boot", "/dev", "/etc", "/lib", "/nix", "/opt", "/proc", "/root", "/run", "/sbin", "/snap",
    "/sys", "/usr", "/var",
];

/// `path` is `/` or lies in one of the [`SYSTEM_TREES`].
pub fn is_system(path: &str) -> bool {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or_default();
    path == "/" || first.starts_with("lib") || SYSTEM_TREES.iter().any(|t| t[1..] == *first)
}

/// `path` is `root` or lies under it (component-wise: `/data2` is not under `/data`).
pub fn under(path: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    root.is_empty() || path == root || path.strip_prefix(root).is_some_and(|rest| rest.starts_with('/'))
}

/// What keeps `path` from being absolute and canonical — no `.`/`..` or empty component, no
/// trailing `/`, no control character, at most PATH_MAX (255 bytes a component) — or from being
/// one of pvfs's (no component starting with `.`: dotfiles such as `.bashrc` or `.ssh`).
pub fn canonical_problem(path: &str) -> Option<&'static str> {
    if !path.starts_with('/') {
        return Some("is not absolute");
    }
    if path.len() > 4095 {
        return Some("is longer than PATH_MAX");
    }
    if path.chars().any(char::is_control) {
        return Some("holds a control character");
    }
    if path == "/" {
        return None;
    }
    if path.ends_with('/') {
        return Some("ends with '/'");
    }
    path[1..].split('/').find_map(|component| match component {
        "" => Some("has an empty component (`//`)"),
        "." | ".." => Some("has a `.` or `..` component"),
        c if c.len() > 255 => Some("has a component longer than 255 bytes"),
        c if c.starts_with('.') => Some("has a hidden component (dotfiles are never pvfs's)"),
        _ => None,
    })
}

/// The daemon a setting is for: it decides which keys are paths and where its logs live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// A BeeGFS service's `.conf` (`key = value`).
    Beegfs,
    /// A GlusterFS volume option (`gluster volume set VOL KEY VALUE`).
    Gluster,
}

/// What a path in a setting is for, which decides where it may point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A file the daemon appends its log to, as root: only the daemon's own log places, never
    /// a data path (a log line appended to someone's file is a write pvfs did not mean).
    Log,
    /// A file the daemon reads (a shared secret, an interface list, a TLS key): its
    /// configuration directory, or a data path.
    Config,
    /// A directory or file the daemon keeps data in: a data path (outside the system trees).
    Data,
}

/// One path a setting names, and what for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingPath<'a> {
    pub place: Place,
    pub path: &'a str,
}

/// The paths `key = value` makes `tool` use, each checked against its place's rules; `Ok`
/// with none when the setting names no path. The error is one sentence naming the key, the
/// value and what to write instead. Data paths come back so that the agent's policy can hold
/// them to a site's `data_roots` as well.
pub fn setting_paths<'a>(tool: Tool, key: &str, value: &'a str) -> Result<Vec<SettingPath<'a>>, String> {
    let Some(place) = path_key(tool, key, value)? else {
        return Ok(Vec::new());
    };
    // An empty `*File` key is BeeGFS's "not set" (its shipped configurations have several).
    if value.is_empty() {
        return Ok(Vec::new());
    }
    // BeeGFS takes several storage targets as one comma-separated list.
    let paths: Vec<&str> = if tool == Tool::Beegfs && place == Place::Data {
        value.split(',').map(str::trim).collect()
    } else {
        vec![value]
    };
    for path in &paths {
        if let Some(problem) = place_problem(tool, place, path) {
            return Err(format!("{key} = {value:?}: {path:?} {problem}"));
        }
    }
    Ok(paths.into_iter().map(|path| SettingPath { place, path }).collect())
}

/// Whether `key` (with `value`) names a path, and of which kind. Keys are recognised by the
/// names the tools give them (BeeGFS: `logStdFile`, `connAuthFile`, `storeStorageDirectory`;
/// GlusterFS: `diagnostics.client-log-file`, `ssl.own-cert`, `changelog.changelog-dir`), and
/// any other value that looks like a path is held to the data-path rule, so that a key this
/// list does not know cannot carry `../../etc` past it.
fn path_key(tool: Tool, key: &str, value: &str) -> Result<Option<Place>, String> {
    match tool {
        Tool::Beegfs => {
            if key.ends_with("File") {
                return Ok(Some(if key.starts_with("log") { Place::Log } else { Place::Config }));
            }
            if key.ends_with("Directory") || key.ends_with("Dir") || key.ends_with("Path") {
                return Ok(Some(Place::Data));
            }
        }
        Tool::Gluster => {
            let last = key.rsplit('.').next().unwrap_or(key);
            // nfs.rpc-statd names the program gNFS runs as root to notify clients.
            if PROGRAM_OPTIONS.contains(&last) {
                return Err(format!(
                    "{key} names a program the volume's daemons run as root; pvfs never sets it (set it by hand on \
                     the servers if you must)"
                ));
            }
            let pathish =
                ["-file", "-dir", "-directory", "-path", "-rmtab"].iter().any(|s| last.ends_with(s))
                    || ["own-cert", "private-key", "ca-list"].contains(&last);
            if pathish {
                return Ok(Some(if last.contains("log") {
                    Place::Log
                } else if key.starts_with("ssl.") || key.contains(".ssl-") {
                    Place::Config
                } else {
                    Place::Data
                }));
            }
        }
    }
    Ok(looks_like_path(value).then_some(Place::Data))
}

/// GlusterFS options whose value is a program to run.
const PROGRAM_OPTIONS: &[&str] = &["rpc-statd"];

/// A value that a daemon would take for a path: absolute, relative to where it runs (`./`,
/// `../`), home-relative, or with a `..` step anywhere. `10.0.0.0/24` or `*.example.com` are
/// not.
fn looks_like_path(value: &str) -> bool {
    value.starts_with(['/', '.', '~']) || value.split('/').any(|c| c == "..")
}

/// Why `path` may not be used as a `place` path of `tool`, if it may not.
fn place_problem(tool: Tool, place: Place, path: &str) -> Option<String> {
    if let Some(problem) = canonical_problem(path) {
        return Some(format!("{problem}; give an absolute path without `.`/`..` components"));
    }
    let (logs, configs): (&[&str], &[&str]) = match tool {
        Tool::Beegfs => (&["/var/log/beegfs"], &["/etc/beegfs"]),
        Tool::Gluster => (&["/var/log/glusterfs"], &["/etc/glusterfs", "/etc/ssl"]),
    };
    let strictly_under = |dirs: &[&str]| dirs.iter().any(|d| path != *d && under(path, d));
    let data = !is_system(path);
    let ok = match place {
        // BeeGFS 7's own default is /var/log/beegfs-SERVICE.log, beside the directory.
        Place::Log => {
            strictly_under(logs)
                || (tool == Tool::Beegfs
                    && path
                        .strip_prefix("/var/log/beegfs-")
                        .and_then(|n| n.strip_suffix(".log"))
                        .is_some_and(|n| !n.is_empty() && !n.contains('/')))
        }
        Place::Config => strictly_under(configs) || data,
        Place::Data => data,
    };
    if ok {
        return None;
    }
    Some(match place {
        Place::Log => format!(
            "is not in the daemon's log directory; logs go under {}{}",
            logs.join(" or "),
            if tool == Tool::Beegfs { " (or /var/log/beegfs-NAME.log)" } else { "" }
        ),
        Place::Config => format!(
            "is not in the daemon's configuration directory or a data path; use a file under {} or a data path \
             outside / and the system trees",
            configs.join(" or ")
        ),
        Place::Data => {
            "is not a data path; use a path outside / and the system trees (under /data, /mnt, /srv …)"
                .to_owned()
        }
    })
}

/// The agent's own program for the pvfs program at `exe`: the `pvfs-agent` installed beside it
/// (the package's, the tarball's, cargo's), which is the agent alone and maps a third of the
/// pages; else `exe` itself, which runs as the agent when named `pvfs-agent` or given `agent`.
/// A `pvfs-agent` that is a link (to `pvfs`, as an older layout had it) is the same program as
/// `exe`, so `exe` is taken. What bootstrap installs when not told, and what xtask's labs run.
pub fn agent_program(exe: &std::path::Path) -> std::path::PathBuf {
    let beside = exe.with_file_name("pvfs-agent");
    match std::fs::symlink_metadata(&beside) {
        Ok(meta) if meta.is_file() && beside != exe => beside,
        _ => exe.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_program_beside_this_one_is_the_agent_when_there_is_one() {
        let dir = tempfile::tempdir().unwrap();
        let pvfs = dir.path().join("pvfs");
        std::fs::write(&pvfs, "the whole program").unwrap();
        // Alone, or beside a link to itself: this program.
        assert_eq!(agent_program(&pvfs), pvfs);
        std::os::unix::fs::symlink("pvfs", dir.path().join("pvfs-agent")).unwrap();
        assert_eq!(agent_program(&pvfs), pvfs);
        // Beside the agent's own program: that one; and that one is its own agent.
        std::fs::remove_file(dir.path().join("pvfs-agent")).unwrap();
        std::fs::write(dir.path().join("pvfs-agent"), "the agent alone").unwrap();
        assert_eq!(agent_program(&pvfs), dir.path().join("pvfs-agent"));
        let agent = dir.path().join("pvfs-agent");
        assert_eq!(agent_program(&agent), agent);
    }

    fn refused(tool: Tool, key: &str, value: &str) -> String {
        setting_paths(tool, key, value).expect_err(&format!("{key} = {value} must be refused"))
    }

    #[test]
    fn the_issues_escapes_are_refused_by_key_and_by_look() {
        for value in [
            "/etc/beegfs/../cron.d/evil",
            "/var/log/beegfs/../../../etc/cron.d/evil",
            "etc/cron.d/evil",
            "evil",
        ] {
            let why = refused(Tool::Beegfs, "logStdFile", value);
            assert!(why.contains("logStdFile"), "{why}");
        }
        assert!(refused(Tool::Beegfs, "connAuthFile", "../../etc/shadow").contains("not absolute"));
        assert!(refused(Tool::Beegfs, "connAuthFile", "/etc/shadow").contains("configuration directory"));
        assert!(
            refused(Tool::Gluster, "diagnostics.client-log-file", "../../etc/cron.d/x").contains("absolute")
        );
        assert!(refused(Tool::Gluster, "diagnostics.brick-log-file", "/srv/x.log").contains("log directory"));
        // A key the lists do not know still cannot carry a relative escape or a system path.
        assert!(refused(Tool::Gluster, "features.some-new-option", "../../etc/x").contains("absolute"));
        assert!(refused(Tool::Beegfs, "sysSomethingNew", "/etc/cron.d/x").contains("data path"));
        assert!(refused(Tool::Gluster, "nfs.rpc-statd", "/sbin/rpc.statd").contains("program"));
        // Dotfiles, and / itself.
        assert!(refused(Tool::Beegfs, "storeStorageDirectory", "/home/u/.ssh").contains("hidden"));
        assert!(refused(Tool::Beegfs, "storeStorageDirectory", "/").contains("data path"));
        assert!(refused(Tool::Beegfs, "storeStorageDirectory", "/data/t1,/etc").contains("\"/etc\""));
    }

    #[test]
    fn what_real_configurations_say_is_accepted() {
        fn ok(tool: Tool, key: &str, value: &'static str) -> Vec<SettingPath<'static>> {
            setting_paths(tool, key, value).unwrap_or_else(|e| panic!("{key} = {value}: {e}"))
        }
        assert_eq!(ok(Tool::Beegfs, "logStdFile", "/var/log/beegfs-storage.log")[0].place, Place::Log);
        ok(Tool::Beegfs, "logStdFile", "/var/log/beegfs/storage.log");
        assert_eq!(ok(Tool::Beegfs, "connAuthFile", "/etc/beegfs/connauthfile")[0].place, Place::Config);
        assert!(ok(Tool::Beegfs, "connInterfacesFile", "").is_empty());
        let targets = ok(Tool::Beegfs, "storeStorageDirectory", "/data/beegfs/t1,/data/beegfs/t2");
        assert_eq!(
            targets.iter().map(|p| p.path).collect::<Vec<_>>(),
            ["/data/beegfs/t1", "/data/beegfs/t2"]
        );
        assert!(ok(Tool::Beegfs, "tuneNumWorkers", "12").is_empty());
        assert!(ok(Tool::Beegfs, "sysMgmtdHost", "mgmt.example").is_empty());
        ok(Tool::Gluster, "diagnostics.client-log-file", "/var/log/glusterfs/client.log");
        ok(Tool::Gluster, "ssl.own-cert", "/etc/ssl/glusterfs.pem");
        assert!(ok(Tool::Gluster, "auth.allow", "10.0.0.0/24").is_empty());
        assert!(ok(Tool::Gluster, "performance.cache-size", "256MB").is_empty());
    }

    #[test]
    fn system_trees_and_under_are_component_wise() {
        assert!(is_system("/") && is_system("/etc/x") && is_system("/lib64") && is_system("/var"));
        assert!(!is_system("/data") && !is_system("/etcetera") && !is_system("/srv/var"));
        assert!(under("/data/x", "/data") && under("/data", "/data") && !under("/data2", "/data"));
    }
}
