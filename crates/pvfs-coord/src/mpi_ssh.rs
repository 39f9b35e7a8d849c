//! `[bench] mpi_ssh` on the coordinator's side: the cluster's MPI key pair, made once with
//! `ssh-keygen` in the cluster's TLS directory (`mpi_ed25519`, never overwritten), and the
//! clients' SSH host keys as their agents report them. `up` hands both to
//! `pvfs_plan::add_mpi_ssh`.

use crate::Dialer;
use pvfs_config::{Cluster, Role};
use pvfs_plan::MpiKeys;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The key pair's file name in the TLS directory (`.pub` beside it).
pub const KEY_FILE: &str = "mpi_ed25519";

#[derive(Debug, thiserror::Error)]
pub enum MpiSshError {
    #[error("cannot run ssh-keygen to make {}: {source} (install OpenSSH's client tools)", path.display())]
    Keygen {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`ssh-keygen -t ed25519 -f {}` exited {code:?}: {stderr}", path.display())]
    KeygenFailed { path: PathBuf, code: Option<i32>, stderr: String },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A key file that is not a regular file, or larger than a key can be.
    #[error(transparent)]
    File(pvfs_host::local_file::LocalFileError),
    #[error("{} is not an OpenSSH public key; remove it and {KEY_FILE} beside it to make a new pair", path.display())]
    BadPublicKey { path: PathBuf },
    /// A client whose host key is needed (every client's known_hosts lists every client).
    #[error(
        "[bench] mpi_ssh needs every client's SSH host key for the others' known_hosts, and client {node} ({address}) \
         {why}"
    )]
    HostKey { node: String, address: String, why: String },
}

/// The cluster's key pair in `tls_dir`, made on first use: `(private, public "TYPE BASE64")`.
pub async fn key_pair(tls_dir: &Path, cluster: &str) -> Result<(String, String), MpiSshError> {
    let private = tls_dir.join(KEY_FILE);
    let public = tls_dir.join(format!("{KEY_FILE}.pub"));
    if !private.exists() {
        // ssh-keygen writes the private key 0600 itself; -N "": mpirun has no one to type a
        // passphrase.
        let out = tokio::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C"])
            .arg(format!("pvfs-mpi@{cluster}"))
            .arg("-f")
            .arg(&private)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .map_err(|source| MpiSshError::Keygen { path: private.clone(), source })?;
        if !out.status.success() {
            return Err(MpiSshError::KeygenFailed {
                path: private,
                code: out.status.code(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
    }
    let read = |path: &PathBuf| {
        pvfs_host::local_file::read_to_string(path, pvfs_tls::PEM_FILE).map_err(|err| match err.into_io() {
            Ok(source) => MpiSshError::Read { path: path.clone(), source },
            Err(refused) => MpiSshError::File(refused),
        })
    };
    let key = read(&private)?;
    let public_text = read(&public)?;
    let public_key = pvfs_metrics::facts::public_key_words(&public_text)
        .ok_or_else(|| MpiSshError::BadPublicKey { path: public.clone() })?;
    Ok((key, public_key))
}

/// The key pair and every client's host key; the first client that cannot give one is named
/// with why.
pub async fn keys(cluster: &Cluster, dialer: &Dialer) -> Result<MpiKeys, MpiSshError> {
    let (private_key, public_key) = key_pair(&cluster.tls_dir, &cluster.name).await?;
    let clients = Cluster {
        nodes: cluster.nodes.iter().filter(|n| n.has(Role::Client)).cloned().collect(),
        ..cluster.clone()
    };
    let survey = crate::survey(&clients, dialer).await;
    let mut host_keys = BTreeMap::new();
    for report in survey.nodes {
        let fail = |why: String| MpiSshError::HostKey {
            node: report.name.clone(),
            address: report.address.clone(),
            why,
        };
        match &report.result {
            Err(err) => return Err(fail(format!("cannot be reached: {err}"))),
            Ok(info) if info.facts.ssh_host_key.is_empty() => {
                return Err(fail(format!(
                    "reports none ({} is missing or not a key, or its agent is older than this pvfsctl): install \
                     openssh-server there and run again",
                    pvfs_metrics::facts::SSH_HOST_KEY
                )));
            }
            Ok(info) => {
                host_keys.insert(report.name.clone(), info.facts.ssh_host_key.clone());
            }
        }
    }
    Ok(MpiKeys { private_key, public_key, host_keys })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_pair_is_made_once_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let (private, public) = key_pair(dir.path(), "g").await.unwrap();
        assert!(private.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"), "{private}");
        assert!(public.starts_with("ssh-ed25519 "), "{public}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(KEY_FILE)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(key_pair(dir.path(), "g").await.unwrap(), (private, public));
    }
}
