//! The agent's policy file: a site's narrowing of what a coordinator may ask of this node.
//!
//! Optional. `pvfs-agent --policy FILE` (or `PVFS_AGENT_POLICY`) names it; without the flag
//! `/etc/pvfs/policy.toml` is read when it exists. The file can only narrow the built-in policy
//! (`pvfs_policy`) or name a site's own mirrors and units; it can never switch a rule
//! off. Two keys are grants instead, since only the operator of a node can decide them:
//! `mpi_ssh = true` lets `[bench] mpi_ssh` give root ssh between the clients (refused by
//! default, rule `mpi-ssh-off`), and `faults = true` lets `pvfsctl bench --fault` kill this
//! node's bricks mid-run (rule `faults-off`). Every mistake in it is reported with `file:line:col`, and the agent does not start.

use pvfs_policy::{Policy, Site};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Where the agent looks for a policy file when `--policy` is not given.
pub const DEFAULT_POLICY_FILE: &str = "/etc/pvfs/policy.toml";

/// The file's keys; see `config/policy.example.toml` for each one's meaning.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    /// Step kinds this node runs (`mkfs`, `mount`, …); absent: all.
    kinds: Option<Vec<Spanned<String>>>,
    /// Globs of the devices this node may format, put in an array or make a physical volume.
    devices: Option<Vec<Spanned<String>>>,
    /// Where directories, mounts, bricks and targets may be.
    data_roots: Option<Vec<Spanned<String>>>,
    /// Repository URL prefixes (replaces the built-in list of upstreams).
    repositories: Option<Vec<Spanned<String>>>,
    /// systemd units allowed on top of the ones pvfs manages.
    #[serde(default)]
    services: Vec<Spanned<String>>,
    /// Refuse repositories whose packages are not GPG-checked, whatever the cluster file says.
    #[serde(default)]
    refuse_unsigned_repositories: bool,
    /// Let `[bench] mpi_ssh` install the cluster's MPI key: root ssh between the clients.
    #[serde(default)]
    mpi_ssh: bool,
    /// Let `pvfsctl bench --fault` kill this node's GlusterFS bricks mid-run.
    #[serde(default)]
    faults: bool,
}

/// A policy file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyFileError {
    #[error("cannot read policy file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Not a regular file, or larger than a policy file can be.
    #[error(transparent)]
    File(pvfs_host::local_file::LocalFileError),
    /// One `file:line:col: message` line per problem.
    #[error("{}", problems.join("\n"))]
    Invalid { path: PathBuf, problems: Vec<String> },
}

/// Reads the policy file at `path`.
pub fn load(path: &Path) -> Result<Policy, PolicyFileError> {
    // A few lists of names and paths: past 16 MiB it is not a policy file.
    const POLICY_FILE: pvfs_host::local_file::Cap =
        pvfs_host::local_file::Cap { what: "a policy file", bytes: 16 << 20 };
    let source =
        pvfs_host::local_file::read_to_string(path, POLICY_FILE).map_err(|err| match err.into_io() {
            Ok(source) => PolicyFileError::Read { path: path.to_owned(), source },
            Err(refused) => PolicyFileError::File(refused),
        })?;
    parse(path, &source)
}

/// The policy `source` (the text of the file at `path`) describes.
pub fn parse(path: &Path, source: &str) -> Result<Policy, PolicyFileError> {
    let at = |offset: usize, message: &str| {
        let (line, col) = line_column(source, offset);
        format!("{}:{line}:{col}: {message}", path.display())
    };
    let file: PolicyFile = toml::from_str(source).map_err(|err| PolicyFileError::Invalid {
        path: path.to_owned(),
        problems: vec![at(err.span().map_or(0, |s| s.start), err.message().trim())],
    })?;
    let plain = |list: &Option<Vec<Spanned<String>>>| {
        list.as_ref().map(|l| l.iter().map(|s| s.get_ref().clone()).collect::<Vec<_>>())
    };
    let site = Site {
        kinds: plain(&file.kinds),
        devices: plain(&file.devices),
        data_roots: plain(&file.data_roots),
        repositories: plain(&file.repositories),
        services: file.services.iter().map(|s| s.get_ref().clone()).collect(),
        refuse_unsigned: file.refuse_unsigned_repositories,
        mpi_ssh: file.mpi_ssh,
        faults: file.faults,
    };
    Policy::new(site).map_err(|errors| {
        let problems = errors
            .iter()
            .map(|e| {
                let list = match e.key {
                    "kinds" => file.kinds.as_deref(),
                    "devices" => file.devices.as_deref(),
                    "data_roots" => file.data_roots.as_deref(),
                    "repositories" => file.repositories.as_deref(),
                    _ => Some(file.services.as_slice()),
                };
                let offset = list.and_then(|l| l.get(e.index)).map_or(0, |s| s.span().start);
                at(offset, &format!("{}: {}", e.key, e.message))
            })
            .collect();
        PolicyFileError::Invalid { path: path.to_owned(), problems }
    })
}

/// 1-based line and column (in characters) of a byte offset, as `pvfs-config` reports them.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..offset.min(source.len())];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (before.matches('\n').count() + 1, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(source: &str) -> String {
        match parse(Path::new("/etc/pvfs/policy.toml"), source) {
            Ok(policy) => format!("ok:\n{policy}"),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn the_shipped_example_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/policy.example.toml");
        let policy = load(&path).unwrap_or_else(|e| panic!("{e}"));
        let shown = policy.to_string();
        assert!(shown.contains("devices: /dev/disk/azure/scsi1/lun*"), "{shown}");
        assert_ne!(policy, Policy::default(), "the example narrows something");
    }

    #[test]
    fn mistakes_are_reported_with_their_position() {
        assert_eq!(
            problems("kinds = [\"mkfs\"]\ndevice = [\"/dev/sdc\"]\n"),
            "/etc/pvfs/policy.toml:2:1: unknown field `device`, expected one of `kinds`, `devices`, `data_roots`, \
             `repositories`, `services`, `refuse_unsigned_repositories`, `mpi_ssh`, `faults`"
        );
        assert_eq!(
            problems(
                "kinds = [\"mkfs\", \"shell\"]\ndata_roots = [\"/data\", \"/etc\"]\nrepositories = [\"https://mirror.site\"]\n"
            ),
            "/etc/pvfs/policy.toml:1:18: kinds: unknown step kind \"shell\": use packages, file, config-keys, \
             directory, service, raid0, lvm-thin, mkfs, lustre-target, lustre-stripe, lctl-param, mount, \
             block-queue, gluster-peers, gluster-volume, beegfs-setup, unmount, service-stopped, \
             gluster-volume-gone, gluster-peers-detached, wipe, mpi-ssh, mpi-ssh-gone, firewall, reboot\n\
             /etc/pvfs/policy.toml:2:24: data_roots: \"/etc\" cannot be a data root: /etc is in a system tree\n\
             /etc/pvfs/policy.toml:3:17: repositories: \"https://mirror.site\" must be a URL prefix such as \
             \"https://mirror.example.com/lustre/\", ending in '/' (so that \"https://mirror.example.com.evil.org/\" \
             cannot match)"
        );
        assert_eq!(problems("refuse_unsigned_repositories = \"yes\"\n").lines().count(), 1);
        assert!(
            problems("refuse_unsigned_repositories = \"yes\"\n").starts_with("/etc/pvfs/policy.toml:1:32: ")
        );
    }

    #[test]
    fn mpi_ssh_is_a_grant_the_file_makes_and_shows() {
        let shown = problems("mpi_ssh = true\n");
        assert!(shown.contains("mpi ssh (root ssh between clients for mpirun): allowed"), "{shown}");
        let shown = problems("");
        assert!(shown.contains("mpi ssh (root ssh between clients for mpirun): refused"), "{shown}");
    }

    #[test]
    fn faults_are_a_grant_the_file_makes_and_shows() {
        let shown = problems("faults = true\n");
        assert!(
            shown.contains("faults (bench --fault killing this node's bricks, cutting its network, stopping its services): allowed"),
            "{shown}"
        );
        assert!(
            problems("")
                .contains("faults (bench --fault killing this node's bricks, cutting its network, stopping its services): refused")
        );
    }

    #[test]
    fn an_empty_file_is_the_default_policy() {
        assert_eq!(parse(Path::new("p.toml"), "").unwrap(), Policy::default());
    }
}
