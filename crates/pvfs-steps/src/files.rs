//! Directories, whole files (repository definitions, modprobe options, mount lists) and
//! `key = value` settings inside files the packages installed (BeeGFS tuning).

use crate::{Action, Assessment, NodeAccess, StepError, line_diff};
use pvfs_host::Runner;
use std::fmt;

/// A directory exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directory {
    pub path: String,
    /// Mode given when pvfs creates it; an existing directory's mode is left alone.
    pub mode: u32,
}

impl Directory {
    pub(crate) fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        // One look, not two: another node's agent on the same host (the demo's, a local
        // cluster's shared mount point) may make the directory between an "is it a directory?"
        // and an "does it exist?", and the second answer alone read as a file in the way
        // (seen in CI's demo on bullseye).
        match std::fs::metadata(host.root.path(&self.path)) {
            Ok(meta) if meta.is_dir() => return Ok(a),
            Ok(_) => {
                return Err(StepError::Refused {
                    reason: format!(
                        "{} exists and is not a directory; move it away, then run again",
                        self.path
                    ),
                });
            }
            // Missing, or unreachable (a file where a parent should be): making it says why.
            Err(_) => {}
        }
        a.change(
            format!("{} does not exist", self.path),
            Action::Mkdir { path: self.path.clone(), mode: self.mode },
        );
        Ok(a)
    }
}

impl fmt::Display for Directory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "directory {}", self.path)
    }
}

/// A file has exactly these contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub path: String,
    pub contents: String,
    pub mode: u32,
}

impl File {
    pub(crate) fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        let write =
            Action::Write { path: self.path.clone(), contents: self.contents.clone(), mode: self.mode };
        // A file only root may read (BeeGFS's shared secret) never has its contents shown:
        // plans and events are logged.
        let private = self.mode & 0o077 == 0;
        match host.read_optional(&self.path)? {
            Some(old) if old == self.contents => {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::symlink_metadata(host.root.path(&self.path))
                    .map(|m| m.permissions().mode() & 0o7777)
                    .map_err(|err| StepError::File { path: self.path.clone(), message: err.to_string() })?;
                if mode != self.mode {
                    a.change(format!("{} has mode {mode:04o}, not {:04o}", self.path, self.mode), write);
                }
            }
            Some(_) if private => {
                a.change(format!("{} differs (not shown: only root may read it)", self.path), write);
            }
            Some(old) => {
                let mut diff = vec![format!("{} differs:", self.path)];
                diff.extend(line_diff(&old, &self.contents));
                a.diff.extend(diff);
                a.actions.push(write);
            }
            None => a.change(format!("{} does not exist", self.path), write),
        }
        Ok(a)
    }
}

impl fmt::Display for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "file {}", self.path)
    }
}

/// Settings in a `key = value` file (BeeGFS's `/etc/beegfs/*.conf`): each key has its value;
/// other lines, comments and the order are kept. Keys missing from the file are appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigKeys {
    pub path: String,
    pub keys: Vec<(String, String)>,
}

impl ConfigKeys {
    pub(crate) fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        let Some(old) = host.read_optional(&self.path)? else {
            return Err(StepError::File {
                path: self.path.clone(),
                message:
                    "does not exist; it comes with the service's package, which should be installed first"
                        .into(),
            });
        };
        let (new, diff) = set_keys(&old, &self.keys);
        if !diff.is_empty() {
            a.diff.extend(diff);
            a.actions.push(Action::Write { path: self.path.clone(), contents: new, mode: 0o644 });
        }
        Ok(a)
    }
}

impl fmt::Display for ConfigKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self.keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
        write!(f, "settings in {}: {}", self.path, keys.join(" "))
    }
}

/// `text` with each key set; and what changed, as `key: old -> new`.
pub(crate) fn set_keys(text: &str, keys: &[(String, String)]) -> (String, Vec<String>) {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut diff = Vec::new();
    for (key, value) in keys {
        let found = lines.iter().position(|line| {
            let line = line.trim_start();
            !line.starts_with('#') && line.split_once('=').is_some_and(|(k, _)| k.trim() == key)
        });
        match found {
            Some(i) => {
                let old = lines[i].split_once('=').map_or("", |(_, v)| v).trim().to_owned();
                if old != *value {
                    diff.push(format!("{key}: {old} -> {value}"));
                    lines[i] = format!("{key} = {value}");
                }
            }
            None => {
                diff.push(format!("{key}: (unset) -> {value}"));
                lines.push(format!("{key} = {value}"));
            }
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    (out, diff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outcome, Step, execute};
    use pvfs_host::{RecordedRunner, Root};

    fn host() -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
        let dir = tempfile::tempdir().unwrap();
        let host = NodeAccess::new(Root::at(dir.path()), RecordedRunner::new());
        (dir, host)
    }

    /// A directory there (or one made by another agent on the same host since) is in sync; a
    /// file there is refused, naming it; a missing one is made. Several agents of one host
    /// making the same directory at once each end with it made, none refusing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_directory_is_made_once_and_a_file_in_its_way_is_refused() {
        let (_dir, host) = host();
        let step = |path: &str| Step::Directory(Directory { path: path.into(), mode: 0o755 });
        assert!(matches!(
            execute(&step("/srv/mnt"), &host, &crate::Unguarded, false, |_| {}).await,
            Outcome::Changed { .. }
        ));
        assert_eq!(
            execute(&step("/srv/mnt"), &host, &crate::Unguarded, false, |_| {}).await,
            Outcome::Ok { detail: None }
        );
        host.root.write_atomic("/srv/file", b"x", 0o644).unwrap();
        let refused = execute(&step("/srv/file"), &host, &crate::Unguarded, false, |_| {}).await;
        assert!(format!("{refused:?}").contains("/srv/file exists and is not a directory"), "{refused:?}");
        let host = std::sync::Arc::new(host);
        for round in 0..20 {
            let path = format!("/srv/shared{round}");
            let runs: Vec<_> = (0..4)
                .map(|_| {
                    let (host, step) = (host.clone(), step(&path));
                    tokio::spawn(
                        async move { execute(&step, &*host, &crate::Unguarded, false, |_| {}).await },
                    )
                })
                .collect();
            for run in runs {
                let outcome = run.await.unwrap();
                assert!(
                    matches!(outcome, Outcome::Changed { .. } | Outcome::Ok { .. }),
                    "{path}: {outcome:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn a_file_is_written_once_and_then_in_sync() {
        let (_dir, host) = host();
        host.root.create_dir_all("/etc/modprobe.d", 0o755).unwrap();
        let step = Step::File(File {
            path: "/etc/modprobe.d/lnet.conf".into(),
            contents: "options lnet networks=tcp\n".into(),
            mode: 0o644,
        });
        let plan = execute(&step, &host, &crate::Unguarded, true, |_| {}).await;
        assert_eq!(
            plan,
            Outcome::WouldChange {
                diff: vec!["/etc/modprobe.d/lnet.conf does not exist".into()],
                would_run: vec!["write /etc/modprobe.d/lnet.conf".into()],
            }
        );
        assert!(!host.root.exists("/etc/modprobe.d/lnet.conf"), "a dry run writes nothing");
        assert!(matches!(
            execute(&step, &host, &crate::Unguarded, false, |_| {}).await,
            Outcome::Changed { .. }
        ));
        assert_eq!(
            execute(&step, &host, &crate::Unguarded, false, |_| {}).await,
            Outcome::Ok { detail: None }
        );
        // The quotes az-cat's script wrote (“tcp”) are drift, shown line by line.
        host.root
            .write_atomic("/etc/modprobe.d/lnet.conf", "options lnet networks=“tcp”\n".as_bytes(), 0o644)
            .unwrap();
        let Outcome::WouldChange { diff, .. } = execute(&step, &host, &crate::Unguarded, true, |_| {}).await
        else {
            panic!()
        };
        assert_eq!(
            diff,
            [
                "/etc/modprobe.d/lnet.conf differs:",
                "-options lnet networks=“tcp”",
                "+options lnet networks=tcp"
            ]
        );
    }

    /// BeeGFS's connAuthFile: mode 0400, its contents never in a diff, and a wrong mode is
    /// drift too.
    #[tokio::test]
    async fn a_private_file_is_never_shown_and_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, host) = host();
        host.root.create_dir_all("/etc/beegfs", 0o755).unwrap();
        let step =
            File { path: "/etc/beegfs/connauthfile".into(), contents: "s3cret-s3cret\n".into(), mode: 0o400 };
        host.root.write_atomic("/etc/beegfs/connauthfile", b"old-secret\n", 0o400).unwrap();
        let a = step.assess(&host).unwrap();
        assert_eq!(a.diff, ["/etc/beegfs/connauthfile differs (not shown: only root may read it)"]);
        host.root.write_atomic("/etc/beegfs/connauthfile", b"s3cret-s3cret\n", 0o644).unwrap();
        let a = step.assess(&host).unwrap();
        assert_eq!(a.diff, ["/etc/beegfs/connauthfile has mode 0644, not 0400"]);
        assert!(matches!(
            execute(&Step::File(step.clone()), &host, &crate::Unguarded, false, |_| {}).await,
            Outcome::Changed { .. }
        ));
        let meta = std::fs::metadata(dir.path().join("etc/beegfs/connauthfile")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o400);
        assert!(step.assess(&host).unwrap().is_in_sync());
    }

    #[test]
    fn config_keys_change_only_their_lines() {
        let conf = "# storage\nsysMgmtdHost                 =\nconnMaxInternodeNum          = 12\n\ntuneNumWorkers               = 12\n";
        let keys = vec![
            ("connMaxInternodeNum".to_owned(), "32".to_owned()),
            ("tuneNumWorkers".to_owned(), "12".to_owned()),
            ("tuneFileReadAheadSize".to_owned(), "32m".to_owned()),
        ];
        let (new, diff) = set_keys(conf, &keys);
        assert_eq!(diff, ["connMaxInternodeNum: 12 -> 32", "tuneFileReadAheadSize: (unset) -> 32m"]);
        assert_eq!(
            new,
            "# storage\nsysMgmtdHost                 =\nconnMaxInternodeNum = 32\n\ntuneNumWorkers               = 12\ntuneFileReadAheadSize = 32m\n"
        );
        let (again, diff) = set_keys(&new, &keys);
        assert!(diff.is_empty());
        assert_eq!(again, new);
    }

    /// The default beegfs-storage.conf of BeeGFS 7.3/7.4 (testdata/beegfs-7/beegfs-storage.conf):
    /// the authentication, interface and tuning keys it already lists are set in place, in
    /// its layout, and nothing is appended twice.
    #[test]
    fn config_keys_edit_the_packaged_beegfs_conf_in_place() {
        let conf = include_str!("../testdata/beegfs-7/beegfs-storage.conf");
        let keys: Vec<(String, String)> = [
            ("connAuthFile", "/etc/beegfs/connauthfile"),
            ("connDisableAuthentication", "false"),
            ("connInterfacesFile", "/etc/beegfs/interfaces"),
            ("tuneNumWorkers", "64"),
            ("tuneFileReadAheadSize", "32m"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let (new, diff) = set_keys(conf, &keys);
        assert_eq!(
            diff,
            [
                "connAuthFile:  -> /etc/beegfs/connauthfile",
                "connInterfacesFile:  -> /etc/beegfs/interfaces",
                "tuneNumWorkers: 12 -> 64",
                "tuneFileReadAheadSize: 0m -> 32m"
            ]
        );
        assert_eq!(new.lines().count(), conf.lines().count(), "set in place, nothing appended");
        assert!(new.contains("\nconnAuthFile = /etc/beegfs/connauthfile\n"), "{new}");
        assert!(new.contains("\nlogStdFile                   = /var/log/beegfs-storage.log\n"));
        assert_eq!(set_keys(&new, &keys).1, Vec::<String>::new());
    }

    #[tokio::test]
    async fn config_keys_need_the_packaged_file() {
        let (_dir, host) = host();
        let step = ConfigKeys { path: "/etc/beegfs/beegfs-meta.conf".into(), keys: vec![] };
        let err = step.assess(&host).unwrap_err();
        assert!(err.to_string().contains("comes with the service's package"), "{err}");
    }

    #[tokio::test]
    async fn a_directory_in_the_way_of_a_file_is_refused() {
        let (_dir, host) = host();
        host.root.write_atomic("/mnt", b"", 0o644).unwrap();
        let step = Directory { path: "/mnt".into(), mode: 0o755 };
        assert!(matches!(step.assess(&host), Err(StepError::Refused { .. })));
    }
}
