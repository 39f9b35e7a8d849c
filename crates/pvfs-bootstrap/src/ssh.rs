//! The system's OpenSSH client, run as a program with an argument vector (no local shell), and
//! what its failures mean.
//!
//! Only `-o BatchMode=yes` (never a password or passphrase prompt from a background task), a
//! `ConnectTimeout` and, for a run's own multiplexing ([`Multiplex`]), the control socket are
//! forced; everything else (users, jump hosts, agent forwarding, ports,
//! known hosts) comes from `~/.ssh/config` or the `-F` file given, as it does for `ssh` typed by
//! hand. Host keys are always verified: the strictest this module ever relaxes is
//! `StrictHostKeyChecking=accept-new`, and only when asked.
//!
//! A remote command reaches the node as one string its login shell parses, so [`Script`] builds
//! it from words that are always single-quoted and operators that can only be `&'static str`
//! literals of this module's callers: nothing read from the cluster file or the node is ever
//! shell syntax there.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// How to reach nodes over SSH.
#[derive(Debug, Clone)]
pub struct Ssh {
    /// The client program (`ssh`).
    pub program: PathBuf,
    /// `-l USER`; default: the config file's `User`, else the local user.
    pub user: Option<String>,
    /// `-i KEY`, in addition to the config file's identities and the agent's.
    pub identity: Option<PathBuf>,
    /// `-F FILE` instead of `~/.ssh/config` (OpenSSH reads the home directory from the password
    /// database, not `$HOME`, so this is how a test or a site points it elsewhere).
    pub config: Option<PathBuf>,
    /// `StrictHostKeyChecking=accept-new`: trust an unknown node's key on first contact (and
    /// record it); a *changed* key is still refused.
    pub accept_new_host_keys: bool,
    /// `ConnectTimeout`, in whole seconds as OpenSSH takes it.
    pub connect_timeout: Duration,
    /// Run the remote commands through `sudo -n` (for a login that is not root).
    pub sudo: bool,
    /// One SSH connection per node carrying all of its commands (OpenSSH's `ControlMaster`,
    /// its socket in [`Multiplex`]'s private directory); `None`: a connection per command.
    pub multiplex: Option<Multiplex>,
}

/// A run's private directory of OpenSSH control sockets: made `0700` under the temporary
/// directory, so no other user can reach (or plant) a socket that carries our sessions, and
/// removed with everything in it when dropped.
///
/// Each node gets its own socket there (`N`, by the node's place in the run), opened by the
/// node's first command (`ControlMaster=auto`) and closed by [`Ssh::close_argv`] when the node
/// is done; `ControlPersist` bounds how long a master outlives a run that was killed before it
/// could close it. The master does the one TCP connection, key exchange, host key check and
/// authentication; each command after it is a new session over that connection (a few
/// milliseconds instead of the whole handshake). Host key checking is exactly as without it:
/// the master's connection is the one that is checked.
#[derive(Debug, Clone)]
pub struct Multiplex {
    dir: std::sync::Arc<PrivateDir>,
}

/// A directory made `0700` (by `mkdir` itself, so it is never reachable by others, not even
/// for an instant) and removed with its contents on drop.
#[derive(Debug)]
struct PrivateDir(PathBuf);

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How long a master waits for another session before it exits by itself: longer than any
/// pause between one node's commands (the agent's wait is not spent over SSH), short enough
/// that a killed run leaves nothing behind for long.
pub const CONTROL_PERSIST: &str = "ControlPersist=60";

impl Multiplex {
    /// The private directory, under the system's temporary directory. A fresh random name,
    /// created rather than opened (`create_dir` fails on anything already there, a symlink
    /// included), so nothing another user prepared is ever used.
    pub fn new() -> std::io::Result<Multiplex> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let mut last = None;
        for _ in 0..8 {
            let dir = base.join(format!("pvfs-ssh-{:016x}", fastrand::u64(..)));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(Multiplex { dir: std::sync::Arc::new(PrivateDir(dir)) }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
    }

    /// The control socket of the node at `slot` in the run.
    pub fn socket(&self, slot: usize) -> PathBuf {
        self.dir.0.join(slot.to_string())
    }

    pub fn dir(&self) -> &std::path::Path {
        &self.dir.0
    }
}

/// `ControlPath` expands `%` tokens and a leading `~`; the directory is taken literally.
fn control_path(path: &std::path::Path) -> String {
    format!("ControlPath={}", path.to_string_lossy().replace('%', "%%"))
}

impl Default for Ssh {
    fn default() -> Ssh {
        Ssh {
            program: PathBuf::from("ssh"),
            user: None,
            identity: None,
            config: None,
            accept_new_host_keys: false,
            connect_timeout: Duration::from_secs(10),
            sudo: false,
            multiplex: None,
        }
    }
}

impl Ssh {
    /// The arguments (after the program) that run `script` on `host`, the node at `slot` of
    /// the run (which picks its control socket).
    pub fn argv(&self, slot: usize, host: &str, script: &Script) -> Vec<OsString> {
        let mut argv = self.options();
        if self.accept_new_host_keys {
            argv.extend(["-o".into(), "StrictHostKeyChecking=accept-new".into()]);
        }
        if let Some(multiplex) = &self.multiplex {
            argv.extend(["-o".into(), "ControlMaster=auto".into(), "-o".into(), CONTROL_PERSIST.into()]);
            argv.extend(["-o".into(), control_path(&multiplex.socket(slot)).into()]);
        }
        // `--`: a host can never be read as an option (the cluster file's grammar already
        // refuses a leading `-`; this does not rely on it).
        argv.extend(["--".into(), host.into()]);
        let text = if self.sudo { Script::sudo(script) } else { script.text.clone() };
        argv.push(text.into());
        argv
    }

    /// The arguments that ask the master of the node at `slot` to exit (`ssh -O exit`), when
    /// there is one: `None` without multiplexing or when no master was opened (its socket is
    /// not there).
    pub fn close_argv(&self, slot: usize, host: &str) -> Option<Vec<OsString>> {
        let socket = self.multiplex.as_ref()?.socket(slot);
        if !socket.exists() {
            return None;
        }
        let mut argv = self.options();
        argv.extend(["-o".into(), control_path(&socket).into(), "-O".into(), "exit".into()]);
        argv.extend(["--".into(), host.into()]);
        Some(argv)
    }

    /// What every command to a node shares: configuration, login, identity, BatchMode and
    /// the connect timeout.
    fn options(&self) -> Vec<OsString> {
        let mut argv: Vec<OsString> = Vec::new();
        if let Some(config) = &self.config {
            argv.extend(["-F".into(), config.into()]);
        }
        if let Some(user) = &self.user {
            argv.extend(["-l".into(), user.into()]);
        }
        if let Some(identity) = &self.identity {
            argv.extend(["-i".into(), identity.into()]);
        }
        argv.extend(["-o".into(), "BatchMode=yes".into()]);
        argv.extend([
            "-o".into(),
            format!("ConnectTimeout={}", self.connect_timeout.as_secs().max(1)).into(),
        ]);
        argv
    }

    /// How the command line reads in a report: `ssh … HOST 'SCRIPT'`.
    pub fn display(&self, slot: usize, host: &str, script: &Script) -> String {
        let args = self.argv(slot, host, script);
        let mut words = vec![quote(&self.program.to_string_lossy())];
        words.extend(args.iter().map(|a| quote(&a.to_string_lossy())));
        words.join(" ")
    }
}

/// A remote command line built from quoted words and fixed operators.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    text: String,
}

impl Script {
    pub fn new() -> Script {
        Script::default()
    }

    /// Appends a command: every word single-quoted unless it is plainly safe.
    pub fn cmd(mut self, words: &[&str]) -> Script {
        let line: Vec<String> = words.iter().map(|w| quote(w)).collect();
        self.push(&line.join(" "));
        self
    }

    /// Appends shell syntax: only literals of this program (`&&`, `;`, `2>/dev/null`), never
    /// data.
    pub fn op(mut self, op: &'static str) -> Script {
        self.push(op);
        self
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    fn push(&mut self, part: &str) {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        self.text.push_str(part);
    }

    /// The script as root through `sudo -n sh -c`: one quoted word, so its operators apply
    /// under sudo rather than to the login shell.
    fn sudo(script: &Script) -> String {
        format!("sudo -n sh -c {}", quote(&script.text))
    }
}

impl fmt::Display for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// POSIX shell quoting: plain words as they are, anything else in single quotes (a single
/// quote inside becomes `'\''`).
pub fn quote(word: &str) -> String {
    let plain =
        !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-./=:@%+,".contains(&b));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// Why `ssh` itself failed (exit status 255), read from its standard error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The node presented a key other than the one known_hosts holds for it.
    HostKeyChanged {
        /// `FILE:LINE` of the key on record, when ssh says.
        offending: Option<String>,
        /// The `ssh-keygen -R` line ssh suggests, when it does.
        remove_with: Option<String>,
    },
    /// No key is known for the node and nothing may add one (BatchMode, strict checking).
    HostKeyUnknown,
    /// The node refused every identity offered.
    Auth { methods: String },
    /// No TCP connection (refused, timed out, no route, name not resolved).
    Unreachable { reason: String },
}

impl Refusal {
    /// Reads ssh's standard error (exit status 255); `None` when it is none of the above.
    pub fn parse(stderr: &str) -> Option<Refusal> {
        if stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED")
            || stderr.contains("has changed and you have requested strict checking")
        {
            let offending = stderr.lines().find_map(|l| {
                let rest = l.trim().strip_prefix("Offending ")?;
                Some(rest.split_once(" in ").map_or(rest, |(_, at)| at).trim().to_owned())
            });
            let remove_with = stderr
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("ssh-keygen ") && l.contains(" -R "))
                .map(str::to_owned);
            return Some(Refusal::HostKeyChanged { offending, remove_with });
        }
        if stderr.contains("host key is known for") || stderr.contains("Host key verification failed") {
            return Some(Refusal::HostKeyUnknown);
        }
        if let Some(line) = stderr.lines().find(|l| l.contains("Permission denied (")) {
            let methods =
                line.rsplit_once('(').map_or("", |(_, m)| m.trim_end_matches(['.', ')'])).to_owned();
            return Some(Refusal::Auth { methods });
        }
        for (needle, reason) in [
            ("Connection refused", "connection refused (no sshd listening?)"),
            ("Connection timed out", "connection timed out"),
            ("No route to host", "no route to host"),
            ("Could not resolve hostname", "the host name does not resolve"),
            ("Network is unreachable", "the network is unreachable"),
        ] {
            if stderr.contains(needle) {
                return Some(Refusal::Unreachable { reason: reason.to_owned() });
            }
        }
        None
    }

    /// What happened and what to do, for `node` reached as `host`.
    pub fn explain(&self, node: &str, host: &str) -> String {
        match self {
            Refusal::HostKeyChanged { offending, remove_with } => {
                let at = offending
                    .as_deref()
                    .map(|o| format!(" (the key on record is at {o})"))
                    .unwrap_or_default();
                let remove = remove_with.clone().unwrap_or_else(|| format!("ssh-keygen -R {}", quote(host)));
                format!(
                    "refused node {node}: its SSH host key is not the one known_hosts holds for {host}{at}. \
                     Someone may be intercepting the connection, or the node was reinstalled. Check the new key's \
                     fingerprint out of band (on the node: `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`); only \
                     if it is right, remove the old key with `{remove}` and bootstrap again (with \
                     --accept-new-host-keys to record the new one). Nothing was changed on {node}"
                )
            }
            Refusal::HostKeyUnknown => format!(
                "refused node {node}: no SSH host key is known for {host} and none may be added without asking. \
                 Add it to known_hosts after checking its fingerprint (`ssh-keyscan {h}` here, `ssh-keygen -lf \
                 /etc/ssh/ssh_host_ed25519_key.pub` on the node), or pass --accept-new-host-keys to trust the key \
                 it presents on first contact. Nothing was changed on {node}",
                h = quote(host)
            ),
            Refusal::Auth { methods } => format!(
                "node {node}: {host} refused our SSH identities (it accepts: {methods}); pass --identity KEY or \
                 --ssh-user USER, or load the key into ssh-agent (bootstrap never prompts for a password)"
            ),
            Refusal::Unreachable { reason } => {
                format!("node {node}: cannot reach {host} over SSH: {reason}")
            }
        }
    }

    /// A refusal about the node's identity: the run must not go on with that node.
    pub fn is_host_key(&self) -> bool {
        matches!(self, Refusal::HostKeyChanged { .. } | Refusal::HostKeyUnknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    fn ssh() -> Ssh {
        Ssh { connect_timeout: Duration::from_secs(7), ..Ssh::default() }
    }

    #[test]
    fn argv_forces_only_batch_mode_and_a_timeout() {
        let script = Script::new().cmd(&["systemctl", "is-active", "pvfs-agent"]);
        expect![[r#"ssh -o BatchMode=yes -o ConnectTimeout=7 -- 10.0.0.5 'systemctl is-active pvfs-agent'"#]]
            .assert_eq(&ssh().display(0, "10.0.0.5", &script));
        let all = Ssh {
            user: Some("admin".into()),
            identity: Some("/keys/id ed25519".into()),
            config: Some("/t/ssh_config".into()),
            accept_new_host_keys: true,
            sudo: true,
            ..ssh()
        };
        expect![[r#"ssh -F /t/ssh_config -l admin -i '/keys/id ed25519' -o BatchMode=yes -o ConnectTimeout=7 -o StrictHostKeyChecking=accept-new -- node1 'sudo -n sh -c '\''systemctl is-active pvfs-agent'\'''"#]]
            .assert_eq(&all.display(0, "node1", &script));
        // Never weaker than accept-new, whatever the flags.
        for s in [ssh(), all] {
            let text: Vec<String> =
                s.argv(0, "h", &script).iter().map(|a| a.to_string_lossy().into_owned()).collect();
            assert!(!text.iter().any(|a| a.contains("StrictHostKeyChecking=no")), "{text:?}");
        }
    }

    /// Multiplexing adds the control socket of the node's slot, in a private directory, and
    /// nothing about host keys: the master's connection is checked as any other.
    #[test]
    fn multiplexing_uses_a_socket_per_node_in_a_private_directory() {
        use std::os::unix::fs::PermissionsExt;
        let multiplex = Multiplex::new().unwrap();
        let dir = multiplex.dir().to_owned();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        let s = Ssh { multiplex: Some(multiplex.clone()), ..ssh() };
        let script = Script::new().cmd(&["true"]);
        let shown = s.display(3, "10.0.0.5", &script).replace(&dir.display().to_string(), "DIR");
        expect![[r#"ssh -o BatchMode=yes -o ConnectTimeout=7 -o ControlMaster=auto -o ControlPersist=60 -o ControlPath=DIR/3 -- 10.0.0.5 true"#]]
            .assert_eq(&shown);
        let plain: Vec<_> = ssh().argv(3, "10.0.0.5", &script);
        let with: Vec<_> = s.argv(3, "10.0.0.5", &script);
        let checking = |argv: &[OsString]| -> Vec<String> {
            argv.iter().map(|a| a.to_string_lossy().into_owned()).filter(|a| a.contains("HostKey")).collect()
        };
        assert_eq!(checking(&plain), checking(&with));
        // No master was opened (no socket): nothing to close.
        assert_eq!(s.close_argv(3, "10.0.0.5"), None);
        std::fs::write(multiplex.socket(3), b"").unwrap();
        let close: Vec<String> =
            s.close_argv(3, "10.0.0.5").unwrap().iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let control = format!("ControlPath={}", multiplex.socket(3).display());
        assert_eq!(
            close[close.len() - 6..],
            ["-o", control.as_str(), "-O", "exit", "--", "10.0.0.5"],
            "{close:?}"
        );
        // The directory goes with the last holder.
        drop((s, multiplex));
        assert!(!dir.exists());
    }

    #[test]
    fn data_is_always_quoted_and_operators_are_literals() {
        let script = Script::new()
            .cmd(&["mkdir", "-p", "/etc/pvfs/tls"])
            .op("&&")
            .cmd(&["dd", "of=/etc/pvfs/it's $(reboot)", "status=none"])
            .op("2>/dev/null");
        expect![[r#"mkdir -p /etc/pvfs/tls && dd 'of=/etc/pvfs/it'\''s $(reboot)' status=none 2>/dev/null"#]]
            .assert_eq(script.text());
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a;b"), "'a;b'");
    }

    /// OpenSSH 9.x when the key changed: the block below is a real session's standard error
    /// (`ssh kali@localhost` after the host keys were regenerated), quoted in a public course
    /// write-up on GitHub (find_string id 26086144096); the last lines are sshconnect.c's
    /// `"%s host key for %s has changed and you have requested strict checking."` and
    /// `"Host key verification failed."`.
    const CHANGED: &str = "\
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!
Someone could be eavesdropping on you right now (man-in-the-middle attack)!
It is also possible that a host key has just been changed.
The fingerprint for the ED25519 key sent by the remote host is
SHA256:2a/XCi2ethSxh+CdkIbcMIHABLBNfIh3LCcDTduRgLk.
Please contact your system administrator.
Add correct host key in /home/kali/.ssh/known_hosts to get rid of this message.
Offending ECDSA key in /home/kali/.ssh/known_hosts:7
  remove with:
  ssh-keygen -f \"/home/kali/.ssh/known_hosts\" -R \"localhost\"
Host key for localhost has changed and you have requested strict checking.
Host key verification failed.
";

    /// OpenSSH with BatchMode and no known key: sshconnect.c's `fatal("No %s host key is known
    /// for %.200s and you have requested strict checking.")` (public OpenSSH source, HOST_NEW
    /// with strict_host_key_checking == 1), then "Host key verification failed.".
    const UNKNOWN: &str = "No ED25519 host key is known for 10.213.251.12 and you have requested strict checking.\r\nHost key verification failed.\r\n";

    #[test]
    fn a_changed_host_key_is_refused_naming_the_node_and_the_fix() {
        let refusal = Refusal::parse(CHANGED).unwrap();
        assert_eq!(
            refusal,
            Refusal::HostKeyChanged {
                offending: Some("/home/kali/.ssh/known_hosts:7".into()),
                remove_with: Some(r#"ssh-keygen -f "/home/kali/.ssh/known_hosts" -R "localhost""#.into()),
            }
        );
        assert!(refusal.is_host_key());
        expect![[r#"refused node oss1: its SSH host key is not the one known_hosts holds for localhost (the key on record is at /home/kali/.ssh/known_hosts:7). Someone may be intercepting the connection, or the node was reinstalled. Check the new key's fingerprint out of band (on the node: `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`); only if it is right, remove the old key with `ssh-keygen -f "/home/kali/.ssh/known_hosts" -R "localhost"` and bootstrap again (with --accept-new-host-keys to record the new one). Nothing was changed on oss1"#]]
            .assert_eq(&refusal.explain("oss1", "localhost"));
    }

    #[test]
    fn an_unknown_host_key_is_refused_with_both_ways_forward() {
        let refusal = Refusal::parse(UNKNOWN).unwrap();
        assert_eq!(refusal, Refusal::HostKeyUnknown);
        let text = refusal.explain("node2", "10.213.251.12");
        assert!(text.contains("ssh-keyscan 10.213.251.12"), "{text}");
        assert!(text.contains("--accept-new-host-keys"), "{text}");
    }

    #[test]
    fn other_ssh_failures_are_told_apart() {
        // sshconnect2.c: "Permission denied (%s)." with the methods the server still accepts.
        assert_eq!(
            Refusal::parse("root@10.0.0.9: Permission denied (publickey,password).\r\n"),
            Some(Refusal::Auth { methods: "publickey,password".into() })
        );
        // sshconnect.c: "ssh: connect to host %s port %s: %s" with strerror.
        assert!(matches!(
            Refusal::parse("ssh: connect to host 10.0.0.9 port 22: Connection refused\r\n"),
            Some(Refusal::Unreachable { .. })
        ));
        assert!(matches!(
            Refusal::parse("ssh: Could not resolve hostname oss9: Name or service not known\r\n"),
            Some(Refusal::Unreachable { .. })
        ));
        assert_eq!(Refusal::parse("sudo: a password is required\n"), None);
    }
}
