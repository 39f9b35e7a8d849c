//! `[bench] mpi_ssh`: root SSH between the clients for mpirun, the grant the seed made by
//! hand. One key pair per cluster (the coordinator's, in its TLS directory): every client holds
//! the private key (`/etc/pvfs/mpi/id_ed25519`, 0600), a known_hosts file of the clients' host
//! keys (`/etc/pvfs/mpi/known_hosts`, checked strictly by mpirun's ssh) and one line in root's
//! `authorized_keys` that carries a marker naming pvfs and the cluster, so that it is the only
//! line pvfs ever changes or removes there ([`MpiSshGone`], for `down`).
//!
//! Root SSH between nodes is a grant an operator makes on purpose: the agent's policy refuses
//! these steps unless its policy file says `mpi_ssh = true` (rule `mpi-ssh-off`).

use crate::{Action, Assessment, File, NodeAccess, StepError};
use pvfs_host::Runner;
use std::fmt;

/// The directory of the files below; the agent's own `/etc/pvfs`.
pub const MPI_DIR: &str = "/etc/pvfs/mpi";
/// The cluster's private key, as every client holds it.
pub const MPI_KEY: &str = "/etc/pvfs/mpi/id_ed25519";
/// The clients' host keys, by address and name: mpirun's ssh trusts these and nothing else.
pub const MPI_KNOWN_HOSTS: &str = "/etc/pvfs/mpi/known_hosts";
/// Root's SSH directory (root's home on Debian and RHEL alike).
pub const ROOT_SSH_DIR: &str = "/root/.ssh";
/// Where sshd looks for the keys that may log in as root.
pub const AUTHORIZED_KEYS: &str = "/root/.ssh/authorized_keys";

/// The comment that marks pvfs's line for `cluster` in `authorized_keys`.
pub fn marker(cluster: &str) -> String {
    format!("pvfs-mpi@{cluster}")
}

/// Whether an `authorized_keys` line is pvfs's for `cluster` (its last word is the marker).
fn is_marked(line: &str, cluster: &str) -> bool {
    line.split_ascii_whitespace().last() == Some(marker(cluster).as_str())
}

/// One client as its peers' ssh knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownHost {
    /// The names mpirun may dial it by: its address (what the hostfile lists) and its node name.
    pub names: Vec<String>,
    /// `TYPE BASE64`, as the node's agent reported it.
    pub key: String,
}

/// A client holds the cluster's MPI key, its peers' host keys and the key's marked line in
/// root's `authorized_keys`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiSsh {
    /// The cluster's name, in the marker.
    pub cluster: String,
    /// The OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----` …).
    pub private_key: String,
    /// Its public half, `TYPE BASE64`.
    pub public_key: String,
    /// Every client, this one included.
    pub known_hosts: Vec<KnownHost>,
}

impl MpiSsh {
    /// The known_hosts file: one line per client, its names comma-separated.
    pub fn known_hosts_text(&self) -> String {
        self.known_hosts.iter().map(|h| format!("{} {}\n", h.names.join(","), h.key)).collect()
    }

    /// The line this cluster's key has in `authorized_keys`.
    pub fn authorized_line(&self) -> String {
        format!("{} {}", self.public_key, marker(&self.cluster))
    }

    pub(crate) fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        if !host.root.is_dir(MPI_DIR) {
            a.change(
                format!("{MPI_DIR} does not exist"),
                Action::Mkdir { path: MPI_DIR.into(), mode: 0o700 },
            );
        }
        let key = File { path: MPI_KEY.into(), contents: self.private_key.clone(), mode: 0o600 };
        merge(&mut a, key.assess(host)?);
        let known = File { path: MPI_KNOWN_HOSTS.into(), contents: self.known_hosts_text(), mode: 0o644 };
        let known = known.assess(host)?;
        if !known.is_in_sync() && host.root.exists(MPI_KNOWN_HOSTS) {
            // Said plainly: a changed host key is what a man in the middle looks like, and
            // it is also why the next benchmark would fail.
            a.diff.push(format!(
                "{MPI_KNOWN_HOSTS} does not hold the host keys the clients' agents report (a changed or \
                 forged key); it is rewritten from them"
            ));
        }
        merge(&mut a, known);
        if !host.root.is_dir(ROOT_SSH_DIR) {
            a.change(
                format!("{ROOT_SSH_DIR} does not exist"),
                Action::Mkdir { path: ROOT_SSH_DIR.into(), mode: 0o700 },
            );
        }
        let old = host.read_optional(AUTHORIZED_KEYS)?;
        let (new, changed) =
            authorized_keys_with(old.as_deref().unwrap_or(""), &self.cluster, Some(&self.authorized_line()));
        if changed {
            a.change(
                format!(
                    "{AUTHORIZED_KEYS} lacks this cluster's MPI key (line marked {})",
                    marker(&self.cluster)
                ),
                Action::Write { path: AUTHORIZED_KEYS.into(), contents: new, mode: 0o600 },
            );
        }
        Ok(a)
    }
}

impl fmt::Display for MpiSsh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mpi ssh key of cluster {} ({} clients known)", self.cluster, self.known_hosts.len())
    }
}

/// `down`: this cluster's marked line gone from root's `authorized_keys`, and the key and
/// known_hosts files removed. Other lines of `authorized_keys` are kept as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiSshGone {
    pub cluster: String,
}

impl MpiSshGone {
    pub(crate) fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let mut a = Assessment::in_sync();
        if let Some(old) = host.read_optional(AUTHORIZED_KEYS)? {
            let (new, changed) = authorized_keys_with(&old, &self.cluster, None);
            if changed {
                a.change(
                    format!(
                        "{AUTHORIZED_KEYS} holds this cluster's MPI key (line marked {})",
                        marker(&self.cluster)
                    ),
                    Action::Write { path: AUTHORIZED_KEYS.into(), contents: new, mode: 0o600 },
                );
            }
        }
        for path in [MPI_KEY, MPI_KNOWN_HOSTS] {
            if host.root.exists(path) {
                a.change(format!("{path} exists"), Action::Remove { path: path.into() });
            }
        }
        Ok(a)
    }
}

impl fmt::Display for MpiSshGone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no mpi ssh key of cluster {}", self.cluster)
    }
}

fn merge(into: &mut Assessment, from: Assessment) {
    into.diff.extend(from.diff);
    into.actions.extend(from.actions);
}

/// `text` (an `authorized_keys` file) with this cluster's marked lines replaced by `line`, or
/// removed when `line` is `None`; and whether that changed anything. Every other line stays as
/// it was, in its place.
pub(crate) fn authorized_keys_with(text: &str, cluster: &str, line: Option<&str>) -> (String, bool) {
    let mut out: Vec<&str> = text.lines().filter(|l| !is_marked(l, cluster)).collect();
    out.extend(line);
    let mut new = out.join("\n");
    if !new.is_empty() {
        new.push('\n');
    }
    let changed = new != text;
    (new, changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outcome, Step, Unguarded, execute};
    use pvfs_host::{RecordedRunner, Root};
    use std::os::unix::fs::PermissionsExt;

    const PUBLIC: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq0b0mXkqg7c6wq4GQ7Zc3a8Q0d2b1xQm0Yv9s8f7kL";
    const CLIENT1: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDx6n5e0mUw6Xz7m7i1f3sQ2bP4nq5R8yT0uV9wX1yZ2";
    const CLIENT2: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK3c1Z9s0fL2p8d7QwErTyUiOpAsDfGhJkLzXcVbNm12";

    fn step() -> MpiSsh {
        MpiSsh {
            cluster: "gluster-e2e".into(),
            private_key: "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
                .into(),
            public_key: PUBLIC.into(),
            known_hosts: vec![
                KnownHost { names: vec!["10.213.250.12".into(), "gfs2".into()], key: CLIENT1.into() },
                KnownHost { names: vec!["10.213.250.13".into(), "client1".into()], key: CLIENT2.into() },
            ],
        }
    }

    fn node() -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("etc/pvfs")).unwrap();
        let host = NodeAccess::new(Root::at(dir.path()), RecordedRunner::default());
        (dir, host)
    }

    /// Applied as an agent whose policy grants the step does (the grant itself, and what the
    /// policy allows these steps, are pvfs-policy's tests).
    async fn apply(step: &Step, host: &NodeAccess<RecordedRunner>) -> Outcome {
        execute(step, host, &Unguarded, false, |_| {}).await
    }

    fn mode(dir: &tempfile::TempDir, path: &str) -> u32 {
        std::fs::metadata(dir.path().join(path.trim_start_matches('/'))).unwrap().permissions().mode()
            & 0o7777
    }

    #[tokio::test]
    async fn installs_the_key_the_peers_and_one_marked_line_keeping_the_others() {
        let (dir, host) = node();
        std::fs::create_dir_all(dir.path().join("root/.ssh")).unwrap();
        let theirs = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ admin@laptop\n";
        std::fs::write(dir.path().join("root/.ssh/authorized_keys"), theirs).unwrap();
        let s = Step::MpiSsh(step());
        let before = s.assess(&host).await.unwrap();
        let shown: Vec<String> = before.actions.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "mkdir -p -m 700 /etc/pvfs/mpi",
                "write /etc/pvfs/mpi/id_ed25519",
                "write /etc/pvfs/mpi/known_hosts",
                "write /root/.ssh/authorized_keys"
            ]
        );
        assert!(!apply(&s, &host).await.failed());
        assert!(s.assess(&host).await.unwrap().is_in_sync());
        assert_eq!(mode(&dir, MPI_KEY), 0o600);
        assert_eq!(mode(&dir, MPI_DIR), 0o700);
        assert_eq!(mode(&dir, AUTHORIZED_KEYS), 0o600);
        let keys = std::fs::read_to_string(dir.path().join("root/.ssh/authorized_keys")).unwrap();
        assert_eq!(keys, format!("{theirs}{PUBLIC} pvfs-mpi@gluster-e2e\n"));
        let known = std::fs::read_to_string(dir.path().join("etc/pvfs/mpi/known_hosts")).unwrap();
        assert_eq!(known, format!("10.213.250.12,gfs2 {CLIENT1}\n10.213.250.13,client1 {CLIENT2}\n"));
    }

    #[tokio::test]
    async fn a_forged_host_key_is_found_and_rewritten_and_an_old_cluster_key_replaced() {
        let (dir, host) = node();
        let s = Step::MpiSsh(step());
        assert!(!apply(&s, &host).await.failed());
        let forged = CLIENT2.replace("IK3c", "IXXX");
        let known = dir.path().join("etc/pvfs/mpi/known_hosts");
        let text = std::fs::read_to_string(&known).unwrap().replace(CLIENT2, &forged);
        std::fs::write(&known, text).unwrap();
        // A key of an earlier run of the same cluster: replaced, not kept beside the new one.
        let keys = dir.path().join("root/.ssh/authorized_keys");
        std::fs::write(&keys, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAOLDOLDOLDOLD pvfs-mpi@gluster-e2e\n")
            .unwrap();
        let a = s.assess(&host).await.unwrap();
        let diff = a.diff.join("\n");
        assert!(diff.contains("a changed or forged key"), "{diff}");
        assert!(diff.contains(&format!("-10.213.250.13,client1 {forged}")), "{diff}");
        assert!(!apply(&s, &host).await.failed());
        assert!(std::fs::read_to_string(&known).unwrap().contains(CLIENT2));
        assert_eq!(std::fs::read_to_string(&keys).unwrap(), format!("{PUBLIC} pvfs-mpi@gluster-e2e\n"));
    }

    #[tokio::test]
    async fn the_private_key_is_never_shown_in_a_diff() {
        let (dir, host) = node();
        std::fs::create_dir_all(dir.path().join("etc/pvfs/mpi")).unwrap();
        std::fs::write(dir.path().join("etc/pvfs/mpi/id_ed25519"), "another key\n").unwrap();
        let a = Step::MpiSsh(step()).assess(&host).await.unwrap();
        let diff = a.diff.join("\n");
        assert!(diff.contains("differs (not shown"), "{diff}");
        assert!(!diff.contains("another key") && !diff.contains("b3BlbnNzaC1rZXkt"), "{diff}");
    }

    #[tokio::test]
    async fn gone_removes_only_the_marked_line_and_the_files() {
        let (dir, host) = node();
        assert!(!apply(&Step::MpiSsh(step()), &host).await.failed());
        let keys = dir.path().join("root/.ssh/authorized_keys");
        let mut text = std::fs::read_to_string(&keys).unwrap();
        // Another cluster's line and someone's own key stay.
        text.push_str("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOTHER pvfs-mpi@other\nssh-rsa AAAAB3Nza admin\n");
        std::fs::write(&keys, &text).unwrap();
        let gone = Step::MpiSshGone(MpiSshGone { cluster: "gluster-e2e".into() });
        let outcome = apply(&gone, &host).await;
        assert!(!outcome.failed(), "{outcome:?}");
        assert_eq!(
            std::fs::read_to_string(&keys).unwrap(),
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOTHER pvfs-mpi@other\nssh-rsa AAAAB3Nza admin\n"
        );
        assert!(!dir.path().join("etc/pvfs/mpi/id_ed25519").exists());
        assert!(!dir.path().join("etc/pvfs/mpi/known_hosts").exists());
        assert!(gone.assess(&host).await.unwrap().is_in_sync());
    }
}
