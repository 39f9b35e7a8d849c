//! BeeGFS 7.x service setup with `beegfs-setup-*`, node and target IDs from the cluster file.
//!
//! The scripts are run by their full path, [`SETUP_DIR`]: ThinkParQ's packages install them
//! there and nowhere else, on every 7.x release and both package formats (beegfs.spec at
//! 7.1.5, 7.2, 7.3.4 and 7.4.6, the `%files` of meta, mgmtd, storage and client, e.g. 7.4.6
//! lines 502, 531, 560 and 727; debian/rules at the same tags installs them under
//! debian/beegfs-*/opt/beegfs/sbin), and no PATH a service gets names that directory. BeeGFS 8
//! has no `beegfs-setup-mgmtd` (its management daemon is a new program configured by
//! `/etc/beegfs/beegfs-mgmtd.toml` and initialised with `beegfs-mgmtd --init`; beegfs.spec at
//! 8.0.1 installs only the meta, storage and client scripts) and no `beegfs-ctl` or
//! `beegfs-check-servers`, which the plan's gates run: this step refuses a node with BeeGFS 8's
//! management daemon instead of failing on a missing file.
//!
//! The setup scripts are not idempotent (a second `beegfs-setup-storage` exits 1: "Storage
//! target directory is not empty"; with `-f` it appends the path again), so the state is probed
//! first: the data directory's `format.conf`, `nodeNumID` and `targetNumID`, and the service's
//! config file. The reference deployments skip these scripts and let first-run init pick random
//! IDs; pvfs passes the IDs so they survive a rebuild.

use crate::files::set_keys;
use crate::{Action, Assessment, NodeAccess, StepError};
use pvfs_host::{Command, Runner};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeegfsService {
    Mgmtd,
    Meta,
    Storage,
    Client,
}

/// Where ThinkParQ's BeeGFS 7 packages install the setup scripts (see the module's
/// documentation).
pub const SETUP_DIR: &str = "/opt/beegfs/sbin";

/// BeeGFS 8's management daemon configuration, which BeeGFS 7 never had (its is
/// `beegfs-mgmtd.conf`).
const BEEGFS8_MGMTD_TOML: &str = "/etc/beegfs/beegfs-mgmtd.toml";

impl BeegfsService {
    /// The setup script of this service, by its full path.
    pub fn setup_script(self) -> String {
        format!("{SETUP_DIR}/beegfs-setup-{}", self.as_str())
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BeegfsService::Mgmtd => "mgmtd",
            BeegfsService::Meta => "meta",
            BeegfsService::Storage => "storage",
            BeegfsService::Client => "client",
        }
    }

    /// The config key naming the data directory.
    fn dir_key(self) -> Option<&'static str> {
        match self {
            BeegfsService::Mgmtd => Some("storeMgmtdDirectory"),
            BeegfsService::Meta => Some("storeMetaDirectory"),
            BeegfsService::Storage => Some("storeStorageDirectory"),
            BeegfsService::Client => None,
        }
    }

    pub fn conf(self) -> String {
        format!("/etc/beegfs/beegfs-{}.conf", self.as_str())
    }
}

/// A BeeGFS service initialised: its data directory formatted with the given IDs and its
/// config pointing at the directory and the management host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeegfsSetup {
    pub service: BeegfsService,
    /// The data directory (not for clients).
    pub path: Option<String>,
    pub node_id: Option<u32>,
    /// Storage only.
    pub target_id: Option<u32>,
    /// The management daemon's host (not for mgmtd itself).
    pub mgmt_host: Option<String>,
}

impl BeegfsSetup {
    fn setup_command(&self) -> Command {
        let mut cmd = Command::new(self.service.setup_script());
        if let Some(path) = &self.path {
            cmd = cmd.args(["-p", path]);
        }
        if let Some(id) = self.node_id {
            cmd = cmd.args(["-s", &id.to_string()]);
        }
        if let Some(id) = self.target_id {
            cmd = cmd.args(["-i", &id.to_string()]);
        }
        if let Some(host) = &self.mgmt_host {
            cmd = cmd.args(["-m", host]);
        }
        cmd
    }

    pub(crate) fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        let conf_path = self.service.conf();
        let Some(conf) = host.read_optional(&conf_path)? else {
            if host.root.exists(BEEGFS8_MGMTD_TOML) {
                return Err(StepError::Refused {
                    reason: format!(
                        "{BEEGFS8_MGMTD_TOML} is BeeGFS 8's management daemon: pvfs sets up BeeGFS 7 (7.1 to 7.4), \
                         whose packages have beegfs-setup-mgmtd, beegfs-ctl and beegfs-check-servers, which BeeGFS 8 \
                         dropped; point [[repo]] at a beegfs_7.x release and remove the BeeGFS 8 packages"
                    ),
                });
            }
            return Err(StepError::File {
                path: conf_path,
                message: format!("does not exist; install beegfs-{} first", self.service.as_str()),
            });
        };
        if let Some(path) = &self.path {
            if !host.root.exists(&format!("{path}/format.conf")) {
                a.change(
                    format!("{path} is not a formatted BeeGFS {} directory", self.service.as_str()),
                    Action::Run(self.setup_command()),
                );
                return Ok(a);
            }
            for (file, want) in [("nodeNumID", self.node_id), ("targetNumID", self.target_id)] {
                let Some(want) = want else { continue };
                let Some(have) = host.read_optional(&format!("{path}/{file}"))? else {
                    // The scripts write format.conf first and the ID files after it: a
                    // directory with the one and not the other is a setup that stopped half
                    // way, and the daemon would start with an ID of its own choosing.
                    return Err(StepError::Refused {
                        reason: format!(
                            "{path} holds format.conf but no {file}: beegfs-setup-{} stopped half way (or the \
                             directory was set up by hand). If beegfs-{} never ran on it, `ls -A {path}` shows only \
                             what setup writes (format.conf, chunks, buddymir); empty it and run again",
                            self.service.as_str(),
                            self.service.as_str()
                        ),
                    });
                };
                if have.trim() != want.to_string() {
                    return Err(StepError::Refused {
                        reason: format!(
                            "{path} is already BeeGFS {} with {file} {}, not {want}; IDs are fixed once a target \
                             is formatted: fix the cluster file, or empty the directory by hand if its data may go",
                            self.service.as_str(),
                            have.trim()
                        ),
                    });
                }
            }
        }
        let mut keys = Vec::new();
        if let (Some(key), Some(path)) = (self.service.dir_key(), &self.path) {
            keys.push((key.to_owned(), path.clone()));
        }
        if let Some(mgmt) = &self.mgmt_host {
            keys.push(("sysMgmtdHost".to_owned(), mgmt.clone()));
        }
        if matches!(self.service, BeegfsService::Meta | BeegfsService::Storage) && self.path.is_some() {
            // As the setup scripts leave it: the daemon refuses to start on an unformatted
            // (say, unmounted) directory instead of initialising it with a random ID.
            keys.push(("storeAllowFirstRunInit".to_owned(), "false".to_owned()));
        }
        let (new, diff) = set_keys(&conf, &keys);
        if !diff.is_empty() {
            if self.path.is_none() {
                // A client has no data directory: its setup script is what sets the host.
                a.change(diff.join("; "), Action::Run(self.setup_command()));
            } else {
                a.diff.extend(diff);
                a.actions.push(Action::Write { path: conf_path, contents: new, mode: 0o644 });
            }
        }
        Ok(a)
    }
}

impl fmt::Display for BeegfsSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "beegfs {}", self.service.as_str())?;
        if let Some(id) = self.node_id {
            write!(f, " node {id}")?;
        }
        if let Some(id) = self.target_id {
            write!(f, " target {id}")?;
        }
        if let Some(path) = &self.path {
            write!(f, " in {path}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_host::{RecordedRunner, Root};

    fn storage() -> BeegfsSetup {
        BeegfsSetup {
            service: BeegfsService::Storage,
            path: Some("/data/beegfs/storage".into()),
            node_id: Some(2),
            target_id: Some(201),
            mgmt_host: Some("10.0.0.4".into()),
        }
    }

    fn host() -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
        let dir = tempfile::tempdir().unwrap();
        let host = NodeAccess::new(Root::at(dir.path()), RecordedRunner::new());
        host.root.create_dir_all("/etc/beegfs", 0o755).unwrap();
        host.root
            .write_atomic(
                "/etc/beegfs/beegfs-storage.conf",
                b"sysMgmtdHost =\nstoreStorageDirectory =\n",
                0o644,
            )
            .unwrap();
        (dir, host)
    }

    #[test]
    fn setup_runs_once_with_the_ids_from_the_cluster_file() {
        let (_d, host) = host();
        let a = storage().assess(&host).unwrap();
        assert_eq!(
            a.actions[0].to_string(),
            "/opt/beegfs/sbin/beegfs-setup-storage -p /data/beegfs/storage -s 2 -i 201 -m 10.0.0.4"
        );
        // What the script leaves behind (beegfs-setup-storage in BeeGFS 7.4).
        host.root.create_dir_all("/data/beegfs/storage", 0o755).unwrap();
        for (file, text) in
            [("format.conf", "# BeeGFS format\nversion=1\n"), ("nodeNumID", "2\n"), ("targetNumID", "201\n")]
        {
            host.root.write_atomic(&format!("/data/beegfs/storage/{file}"), text.as_bytes(), 0o644).unwrap();
        }
        host.root
            .write_atomic(
                "/etc/beegfs/beegfs-storage.conf",
                b"sysMgmtdHost = 10.0.0.4\nstoreStorageDirectory = /data/beegfs/storage\nstoreAllowFirstRunInit = false\n",
                0o644,
            )
            .unwrap();
        assert!(storage().assess(&host).unwrap().is_in_sync());
        let other = BeegfsSetup { target_id: Some(101), ..storage() };
        let err = other.assess(&host).unwrap_err();
        assert!(err.to_string().contains("with targetNumID 201, not 101"), "{err}");
    }

    /// beegfs-setup-storage writes format.conf, chunks/ and buddymir/ first and the ID files
    /// after (storage/build/dist/sbin/beegfs-setup-storage, init_storage_dir): interrupted in
    /// between, the directory is not a finished target and must not count as one.
    #[test]
    fn a_setup_that_stopped_half_way_is_not_done() {
        let (_d, host) = host();
        host.root.create_dir_all("/data/beegfs/storage/chunks", 0o755).unwrap();
        host.root.create_dir_all("/data/beegfs/storage/buddymir", 0o755).unwrap();
        host.root
            .write_atomic(
                "/data/beegfs/storage/format.conf",
                b"# This file was auto-generated. Do not modify it!\nversion=3\n",
                0o644,
            )
            .unwrap();
        let err = storage().assess(&host).unwrap_err();
        assert!(
            err.to_string()
                .contains("holds format.conf but no nodeNumID: beegfs-setup-storage stopped half way"),
            "{err}"
        );
        host.root.write_atomic("/data/beegfs/storage/nodeNumID", b"2\n", 0o644).unwrap();
        let err = storage().assess(&host).unwrap_err();
        assert!(err.to_string().contains("but no targetNumID"), "{err}");
        host.root.write_atomic("/data/beegfs/storage/targetNumID", b"201\n", 0o644).unwrap();
        // Formatted; the configuration is then set key by key, as the script would have.
        let a = storage().assess(&host).unwrap();
        assert_eq!(
            a.diff,
            [
                "storeStorageDirectory:  -> /data/beegfs/storage",
                "sysMgmtdHost:  -> 10.0.0.4",
                "storeAllowFirstRunInit: (unset) -> false"
            ]
        );
    }

    /// A BeeGFS 8 management node: the package installs `/etc/beegfs/beegfs-mgmtd.toml`
    /// (ThinkParQ/beegfs-rust's mgmtd reads it by default) and no `beegfs-mgmtd.conf` or
    /// setup script. Refused, naming the version, rather than "install beegfs-mgmtd first".
    #[test]
    fn beegfs_8_management_is_refused_by_name() {
        let (_d, host) = host();
        let mgmtd = BeegfsSetup {
            service: BeegfsService::Mgmtd,
            path: Some("/data/beegfs/mgmtd".into()),
            node_id: None,
            target_id: None,
            mgmt_host: None,
        };
        let err = mgmtd.assess(&host).unwrap_err();
        assert!(err.to_string().contains("install beegfs-mgmtd first"), "{err}");
        host.root
            .write_atomic(
                "/etc/beegfs/beegfs-mgmtd.toml",
                b"# db-file = \"/var/lib/beegfs/mgmtd.sqlite\"\n",
                0o644,
            )
            .unwrap();
        let err = mgmtd.assess(&host).unwrap_err();
        assert!(err.is_refusal(), "{err}");
        assert!(err.to_string().contains("BeeGFS 8's management daemon: pvfs sets up BeeGFS 7"), "{err}");
    }
}
