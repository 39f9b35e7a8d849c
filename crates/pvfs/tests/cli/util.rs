//! Helpers: a temp dir per test, commands on the built binaries, agents started as processes.

use std::io::Read;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn pvfsctl() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pvfsctl"))
}

pub fn pvfs_agent() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pvfs-agent"))
}

pub struct TestDir {
    dir: tempfile::TempDir,
}

impl TestDir {
    pub fn new() -> TestDir {
        TestDir { dir: tempfile::Builder::new().prefix("pvfs-cli-").tempdir().unwrap() }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `program` in this dir with nothing from the caller's environment but PATH.
    pub fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(self.path()).env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd
    }

    pub fn ctl(&self, args: &[&str]) -> Output {
        self.command(&pvfsctl()).args(args).output().unwrap()
    }

    /// [`TestDir::ctl`] for a command that might hang: killed, and the test failed, if it has
    /// not exited within `limit`. Its output goes through files, so nothing blocks on a pipe.
    pub fn ctl_within(&self, limit: Duration, args: &[&str]) -> Output {
        let (stdout, stderr) = (self.path().join(".stdout"), self.path().join(".stderr"));
        let mut child = self
            .command(&pvfsctl())
            .args(args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("pvfsctl {args:?} still running after {limit:?}: killed");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Output { status, stdout: std::fs::read(&stdout).unwrap(), stderr: std::fs::read(&stderr).unwrap() }
    }

    /// A CA with the coordinator's certificate in `tls/`.
    pub fn pki(&self) -> PathBuf {
        let tls = self.path().join("tls");
        let init = self.ctl(&["ca", "init", "--dir", "tls"]);
        assert!(init.status.success(), "{}", text(&init.stderr));
        let issue = self.ctl(&["ca", "issue", "pvfsctl", "--dir", "tls"]);
        assert!(issue.status.success(), "{}", text(&issue.stderr));
        tls
    }

    pub fn issue_agent(&self, name: &str, ip: &str) {
        let out = self.ctl(&["ca", "issue", name, "--dir", "tls", "--san", ip]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// An agent process, killed on drop.
pub struct AgentProcess {
    pub child: Child,
    pub port: u16,
    pub notify: UnixDatagram,
}

impl AgentProcess {
    /// Starts `pvfs-agent` on `ip` port 0 and waits (bounded) for its readiness message.
    pub fn start(dir: &TestDir, name: &str, ip: &str) -> AgentProcess {
        AgentProcess::start_with_path(dir, name, ip, None)
    }

    /// As [`AgentProcess::start`], with `bin` first in the agent's PATH (programs the agent runs).
    pub fn start_with_path(dir: &TestDir, name: &str, ip: &str, bin: Option<&Path>) -> AgentProcess {
        AgentProcess::start_with_args(dir, name, ip, bin, &[])
    }

    /// As [`AgentProcess::start_with_path`], with `extra` flags for the agent (`--policy FILE`).
    pub fn start_with_args(
        dir: &TestDir,
        name: &str,
        ip: &str,
        bin: Option<&Path>,
        extra: &[&str],
    ) -> AgentProcess {
        AgentProcess::start_on(dir, name, &format!("{ip}:0"), bin, extra)
    }

    /// As [`AgentProcess::start_with_args`], listening on `listen` (an agent started again on
    /// its old port, as after a reboot).
    pub fn start_on(
        dir: &TestDir,
        name: &str,
        listen: &str,
        bin: Option<&Path>,
        extra: &[&str],
    ) -> AgentProcess {
        let mut command = dir.command(&pvfs_agent());
        if let Some(bin) = bin {
            let mut paths = vec![bin.to_owned()];
            paths.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
            command.env("PATH", std::env::join_paths(paths).unwrap());
        }
        AgentProcess::spawn(dir, name, listen, command, extra)
    }

    /// As [`AgentProcess::start`], with `env` in the agent's environment (and so its engine's).
    pub fn start_with_env(dir: &TestDir, name: &str, ip: &str, env: &[(&str, &str)]) -> AgentProcess {
        AgentProcess::start_with_env_args(dir, name, ip, env, &[])
    }

    /// As [`AgentProcess::start_with_env`], with `extra` flags for the agent (`--root DIR`).
    pub fn start_with_env_args(
        dir: &TestDir,
        name: &str,
        ip: &str,
        env: &[(&str, &str)],
        extra: &[&str],
    ) -> AgentProcess {
        let mut command = dir.command(&pvfs_agent());
        command.envs(env.iter().copied());
        AgentProcess::spawn(dir, name, &format!("{ip}:0"), command, extra)
    }

    /// As [`AgentProcess::start`], under an open-file limit (soft and hard) of `nofile`, set by
    /// the shell's `ulimit` (the workspace forbids the `unsafe` of a `pre_exec` hook).
    pub fn start_with_nofile(dir: &TestDir, name: &str, ip: &str, nofile: u64) -> AgentProcess {
        let mut command = dir.command(Path::new("sh"));
        command.args(["-c", &format!("ulimit -n {nofile} && exec \"$0\" \"$@\"")]).arg(pvfs_agent());
        AgentProcess::spawn(dir, name, &format!("{ip}:0"), command, &[])
    }

    /// Runs `command` (the agent, or something that becomes it) with the agent's flags and
    /// waits (bounded) for its readiness message.
    fn spawn(dir: &TestDir, name: &str, listen: &str, mut command: Command, extra: &[&str]) -> AgentProcess {
        let sock_path = dir.path().join(format!("{name}.notify"));
        // A restarted agent of the same name gets a fresh socket.
        let _ = std::fs::remove_file(&sock_path);
        let notify = UnixDatagram::bind(&sock_path).unwrap();
        notify.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let mut child = command
            .args(["--name", name, "--listen", listen, "--tls-dir", "tls"])
            .args(extra)
            .arg("--state-dir")
            .arg(dir.path().join(format!("state-{name}")))
            .env("NOTIFY_SOCKET", &sock_path)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut buf = [0u8; 2048];
        let port = loop {
            assert!(Instant::now() < deadline, "agent {name} not ready within 20s");
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
                panic!("agent {name} exited {status}: {err}");
            }
            let Ok(n) = notify.recv(&mut buf) else { continue };
            let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
            if let Some(listen) = msg.lines().find_map(|l| l.strip_prefix("X_PVFS_LISTEN=")) {
                assert!(msg.contains("READY=1"), "{msg}");
                break listen.parse::<std::net::SocketAddr>().unwrap().port();
            }
        };
        AgentProcess { child, port, notify }
    }

    /// SIGTERM, then wait (bounded) for exit; returns the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "agent did not stop within 15s of SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn cluster_file(dir: &TestDir, nodes: &[(&str, String)]) -> PathBuf {
    let mut toml =
        String::from("[cluster]\nname = \"t\"\nkind = \"local\"\n[local]\nmount = \"/tmp/pvfs-t\"\n");
    for (name, address) in nodes {
        toml += &format!("[[node]]\nname = \"{name}\"\naddress = \"{address}\"\nroles = [\"server\"]\n");
    }
    dir.write("cluster.toml", &toml)
}

/// A process spinning on a CPU (`yes` into /dev/null), killed and reaped when dropped: what a
/// per-process view must list.
pub struct CpuHog(pub Child);

impl Drop for CpuHog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn cpu_hog() -> CpuHog {
    CpuHog(
        Command::new("yes")
            .stdout(Stdio::null())
            .stdin(Stdio::null())
            .spawn()
            .expect("starting `yes` as a CPU hog"),
    )
}

/// The web view's browser; xtask's `bench-ingest --browser` uses the same file.
#[path = "browser.rs"]
mod browser;
pub use browser::Browser;
