//! The SSH world of the scenarios whose agents `pvfsctl bootstrap` installs (bootstrap,
//! gluster): containers that run Debian's openssh-server under systemd, reached with the
//! system's OpenSSH client as a real operator reaches real nodes, host keys verified.
//!
//! Everything is the test's own, under its work directory: a key pair made here and authorized
//! for root on each container; each container's host keys generated afresh (every container
//! starts from one image, and real nodes do not share host keys) and read out of band (`docker
//! exec`) into a known_hosts file; and an ssh_config pointing at both, given to bootstrap with
//! `--ssh-config` (OpenSSH reads `~` from the password database, not `$HOME`, so this is how a
//! test points it elsewhere). A spare host key that is no node's ("the stranger") lets a
//! scenario put a wrong key in known_hosts.

use crate::docker::docker;
use crate::util::read;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Keys, known hosts and the ssh_config of one run.
pub struct SshLab {
    /// The ssh_config to pass as `--ssh-config`.
    pub config: PathBuf,
    pub known_hosts: PathBuf,
    /// `IP KEYTYPE KEY` per admitted container, in the order they were admitted.
    host_keys: Vec<(String, String)>,
    /// The public half of a host key that is no node's: `KEYTYPE KEY`.
    stranger: String,
    /// Our public key, authorized for root on every admitted container.
    public: String,
}

impl SshLab {
    /// Makes the keys and the ssh_config under `dir` (created).
    pub fn new(dir: &Path) -> anyhow::Result<SshLab> {
        crate::util::ensure_programs(&[("ssh", "openssh-client"), ("ssh-keygen", "openssh-client")])?;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let key = dir.join("id_ed25519");
        read(
            Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", "pvfs-e2e", "-f"])
                .arg(&key),
        )?;
        let public = std::fs::read_to_string(dir.join("id_ed25519.pub"))?.trim().to_owned();
        let stranger = dir.join("stranger");
        read(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(&stranger))?;
        let stranger = std::fs::read_to_string(dir.join("stranger.pub"))?;
        let stranger = stranger.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        let known_hosts = dir.join("known_hosts");
        let config = dir.join("ssh_config");
        std::fs::write(
            &config,
            format!(
                "Host *\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n",
                key.display(),
                known_hosts.display()
            ),
        )?;
        Ok(SshLab { config, known_hosts, host_keys: Vec::new(), stranger, public })
    }

    /// Gives the booted `container` (reached at `ip`) host keys of its own and our key for
    /// root, and records its host key in known_hosts.
    pub fn admit(&mut self, container: &str, ip: &str) -> anyhow::Result<()> {
        let exec = |script: &str| read(docker().args(["exec", container, "sh", "-c", script]));
        exec("rm -f /etc/ssh/ssh_host_* && ssh-keygen -A >/dev/null && systemctl restart ssh")
            .with_context(|| format!("{container}: new SSH host keys"))?;
        exec(&format!(
            "mkdir -p -m 700 /root/.ssh && printf '%s\\n' '{}' > /root/.ssh/authorized_keys",
            self.public
        ))
        .with_context(|| format!("{container}: authorizing the test's key"))?;
        let host_key = exec("cat /etc/ssh/ssh_host_ed25519_key.pub")?;
        let host_key = host_key.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        self.host_keys.retain(|(known, _)| known != ip);
        self.host_keys.push((ip.to_owned(), host_key));
        self.trust_all()
    }

    /// known_hosts with every admitted container's real key.
    pub fn trust_all(&self) -> anyhow::Result<()> {
        self.write_known(|_| KnownAs::Itself)
    }

    /// known_hosts with `ip` under the stranger's key (what a replaced machine, or a man in
    /// the middle, looks like to ssh), the others as they are.
    pub fn trust_wrong_key_for(&self, ip: &str) -> anyhow::Result<()> {
        self.write_known(|known| if known == ip { KnownAs::Stranger } else { KnownAs::Itself })
    }

    /// known_hosts without `ip`: a node never seen before.
    pub fn forget(&self, ip: &str) -> anyhow::Result<()> {
        self.write_known(|known| if known == ip { KnownAs::Unknown } else { KnownAs::Itself })
    }

    fn write_known(&self, how: impl Fn(&str) -> KnownAs) -> anyhow::Result<()> {
        let mut text = String::new();
        for (ip, key) in &self.host_keys {
            match how(ip) {
                KnownAs::Itself => text += &format!("{ip} {key}\n"),
                KnownAs::Stranger => text += &format!("{ip} {}\n", self.stranger),
                KnownAs::Unknown => {}
            }
        }
        std::fs::write(&self.known_hosts, text)
            .with_context(|| format!("writing {}", self.known_hosts.display()))
    }
}

enum KnownAs {
    Itself,
    Stranger,
    Unknown,
}
