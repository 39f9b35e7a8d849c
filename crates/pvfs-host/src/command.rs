//! External commands, run through a seam so tests can replay real tools' recorded outputs.
//!
//! A [`Command`] is a program and its arguments, never a shell string: nothing here goes through
//! `sh -c`, so no argument can be reinterpreted by a shell.
//!
//! Commands come in two lifetimes. A *probe* (`blkid -p`, `findmnt`, `gluster peer status`)
//! reads the node; it is killed when it runs past its limit or when whoever waits for it goes
//! away. An *action* ([`Runner::run_action`]: `mkfs`, `mdadm --create`, package installs,
//! mounts) changes the node, and a half-done action is worse than a finished one, so the agent
//! never kills it: it runs in a session of its own, so in its own process group and without a
//! controlling terminal (a signal meant for the agent's group, or a hang-up of the terminal an
//! agent was started from, does not reach it), writes its output to files rather than to pipes
//! (it does not die of SIGPIPE when the agent exits), and past its limit it is reported as
//! still running, with its pid.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::process::Stdio;
use std::time::Duration;

/// The default limit for one command. Probes (`blkid -p`, `findmnt`) return in milliseconds;
/// a minute means a hung device or daemon, and the caller should hear about it.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub program: String,
    pub args: Vec<String>,
    /// Variables set for this command on top of the agent's environment (`LC_ALL=C` always).
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// When the command's daemon may answer "busy, ask again" ([`Command::again_while_busy`]).
    pub busy: Option<Busy>,
}

/// A daemon's answers that mean it is busy with another operation and asks to be asked again
/// (glusterd while another node's transaction holds the pool's lock: "Another transaction is
/// in progress. Please try again after some time."), and how long to keep asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    /// Any of these in the command's stdout or stderr says the daemon was busy.
    pub says: &'static [&'static str],
    /// How long after the first run the command is still run again.
    pub within: Duration,
}

impl Command {
    pub fn new(program: impl Into<String>) -> Command {
        Command {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            busy: None,
        }
    }

    /// Run through [`run_while_busy`], the command is run again while its answer holds one of
    /// `says`, for up to `within` after its first run.
    pub fn again_while_busy(mut self, says: &'static [&'static str], within: Duration) -> Command {
        self.busy = Some(Busy { says, within });
        self
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Command {
        self.args.push(arg.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Command {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Command {
        self.timeout = timeout;
        self
    }
}

impl fmt::Display for Command {
    /// The command as a user would type it (for error messages and plans).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.program)?;
        for arg in &self.args {
            // Quoted as a POSIX shell needs it, so a command copied from a plan or an error
            // message runs as shown.
            let plain = |c: char| c.is_ascii_alphanumeric() || "_./:=,@%+-".contains(c);
            if arg.is_empty() || !arg.chars().all(plain) {
                write!(f, " '{}'", arg.replace('\'', r"'\''"))?;
            } else {
                write!(f, " {arg}")?;
            }
        }
        Ok(())
    }
}

/// What a finished command produced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Output {
    /// The exit code; `None` when a signal ended the process.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// The last `lines` lines of stderr, for error messages that must stay short.
    pub fn stderr_tail(&self, lines: usize) -> String {
        let all: Vec<&str> = self.stderr.trim_end().lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// A command could not be run to completion (a non-zero exit is *not* an error here: callers
/// decide what each exit code means, e.g. `blkid -p` exits 2 for "nothing found").
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(
        "`{command}` could not be started: {source} (is {program} installed{on_path}?)",
        on_path = if program.contains('/') { "" } else { " and on PATH" }
    )]
    Spawn {
        command: String,
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("`{command}` did not finish within {}s and was killed", timeout.as_secs())]
    TimedOut { command: String, timeout: Duration },
    /// An action past its limit. It is left running: killing a half-made file system or a
    /// half-installed package would leave the node worse than letting it finish.
    #[error(
        "`{command}` has not finished after {}s; it is still running as pid {pid} and was left to \
         finish (stopping it half-way would leave the node worse); wait for it (`ps -p {pid}`), \
         then run again",
        after.as_secs()
    )]
    StillRunning { command: String, pid: u32, after: Duration },
    #[error("`{command}` failed while its output was read: {source}")]
    Io {
        command: String,
        #[source]
        source: io::Error,
    },
    #[error("`{command}` has no recorded output (tests replay only the commands they recorded)")]
    NotRecorded { command: String },
}

/// Runs commands. The trait exists so tests can replay recorded outputs; production uses
/// [`SystemRunner`].
pub trait Runner: Send + Sync {
    /// Runs a probe: killed past its limit, or when the returned future is dropped.
    fn run(&self, command: &Command) -> impl Future<Output = Result<Output, CommandError>> + Send;

    /// Runs an action: a command that changes the node, which the caller never kills (see the
    /// module's documentation). Runners that do not start processes treat both alike.
    fn run_action(&self, command: &Command) -> impl Future<Output = Result<Output, CommandError>> + Send {
        self.run(command)
    }
}

/// The first pause before a busy daemon is asked again; each pause doubles, up to
/// [`BUSY_PAUSE_MAX`].
const BUSY_PAUSE: Duration = Duration::from_millis(500);
const BUSY_PAUSE_MAX: Duration = Duration::from_secs(8);

/// Runs `command` (as an action when `action`, else as a probe) and, while its answer says its
/// daemon is busy ([`Command::again_while_busy`]), again after a pause, until it answers
/// otherwise or the command's `within` has passed since the first run. Returns the last
/// answer: one still busy at the end is the caller's failure to report, with the daemon's
/// words. A command without `busy` runs once.
pub async fn run_while_busy(
    runner: &impl Runner,
    command: &Command,
    action: bool,
) -> Result<Output, CommandError> {
    let started = tokio::time::Instant::now();
    let mut pause = BUSY_PAUSE;
    loop {
        let out = if action { runner.run_action(command).await? } else { runner.run(command).await? };
        let Some(busy) = &command.busy else { return Ok(out) };
        let said = busy.says.iter().find(|s| out.stdout.contains(**s) || out.stderr.contains(**s));
        let Some(said) = said else { return Ok(out) };
        if started.elapsed() + pause > busy.within {
            return Ok(out);
        }
        tracing::info!(command = %command, "the daemon said \"{said}\": asking again in {pause:?}");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(BUSY_PAUSE_MAX);
    }
}

/// Runs commands on this machine.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemRunner;

impl Runner for SystemRunner {
    async fn run(&self, command: &Command) -> Result<Output, CommandError> {
        let shown = command.to_string();
        let child = tokio::process::Command::new(&command.program)
            .args(&command.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A timed-out command is dropped below; kill it rather than leave it running.
            .kill_on_drop(true)
            // Tools' messages are parsed in places (blkid, gluster): keep them in English.
            .env("LC_ALL", "C")
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .spawn()
            .map_err(|source| CommandError::Spawn {
                command: shown.clone(),
                program: command.program.clone(),
                source,
            })?;
        let output = tokio::time::timeout(command.timeout, child.wait_with_output())
            .await
            .map_err(|_| CommandError::TimedOut { command: shown.clone(), timeout: command.timeout })?
            .map_err(|source| CommandError::Io { command: shown, source })?;
        Ok(Output {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }

    async fn run_action(&self, command: &Command) -> Result<Output, CommandError> {
        let shown = command.to_string();
        let io_err = |source| CommandError::Io { command: shown.clone(), source };
        // Unnamed files (O_TMPFILE), not pipes: a pipe's reader is the agent, and a child that
        // writes to a pipe nobody reads any more dies of SIGPIPE once the agent has exited.
        // Files also do not make us wait for a daemon the command leaves behind holding them
        // (mount.glusterfs's FUSE client), only for the command itself.
        let stdout = tempfile::tempfile().map_err(io_err)?;
        let stderr = tempfile::tempfile().map_err(io_err)?;
        let spawn_err =
            |source| CommandError::Spawn { command: shown.clone(), program: command.program.clone(), source };
        // A session of its own. `setsid()` between fork and exec needs `pre_exec`, which is
        // `unsafe` (the workspace forbids it), and std's `CommandExt::setsid` is unstable in
        // Rust 1.95; so util-linux's `setsid PROGRAM ARGS…` does it. A child we spawn is never
        // a process group leader (it is in the agent's group), and then `setsid` calls
        // setsid() and execs the program in place: the same pid (the one reported while it is
        // still running), its exit status, its output files. (Were it a group leader, `setsid`
        // would fork and its parent exit at once, which `--wait` fixes, but that option is
        // missing from older util-linux, CentOS 7's among them.) The program is looked up on
        // PATH here, so that a missing one is still a spawn error rather than `setsid`'s exit
        // 127.
        let mut process = match SETSID.get_or_init(|| find_program("setsid")) {
            Some(setsid) => {
                if find_program(&command.program).is_none() {
                    return Err(spawn_err(io::Error::from(io::ErrorKind::NotFound)));
                }
                // By the name given, which `setsid` looks up on the same PATH: tools that read
                // their argv[0] (mke2fs as `mkfs.ext4`, lvm as `lvcreate`) see what they did.
                let mut process = tokio::process::Command::new(setsid);
                process.arg(&command.program);
                process
            }
            // No util-linux: its own process group still keeps group-wide signals off it.
            None => {
                let mut process = tokio::process::Command::new(&command.program);
                process.process_group(0);
                process
            }
        };
        let mut child = process
            .args(&command.args)
            .stdin(Stdio::null())
            .stdout(stdout.try_clone().map_err(io_err)?)
            .stderr(stderr.try_clone().map_err(io_err)?)
            // Never killed by the agent, not even when the future waiting for it is dropped
            // (an agent stopping, a caller going away): it runs to its end.
            .kill_on_drop(false)
            .env("LC_ALL", "C")
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .spawn()
            .map_err(spawn_err)?;
        let pid = child.id().unwrap_or_default();
        let status = match tokio::time::timeout(command.timeout, child.wait()).await {
            Ok(status) => status.map_err(io_err)?,
            Err(_) => {
                // Left running, and reaped when it ends so it does not linger as a zombie.
                tokio::spawn(async move {
                    let _ = child.wait().await;
                });
                return Err(CommandError::StillRunning { command: shown, pid, after: command.timeout });
            }
        };
        Ok(Output {
            code: status.code(),
            stdout: read_back(stdout).await.map_err(io_err)?,
            stderr: read_back(stderr).await.map_err(io_err)?,
        })
    }
}

/// Where util-linux's `setsid` is, looked up once; `None` without it.
static SETSID: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();

/// `program` as `execvp` would find it: itself when it names a path, else the first
/// executable file of that name in a directory of `PATH`.
fn find_program(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &std::path::Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = std::path::PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| executable(candidate))
}

/// What a finished action wrote to one of its output files.
async fn read_back(file: std::fs::File) -> io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let mut file = tokio::fs::File::from_std(file);
    file.seek(io::SeekFrom::Start(0)).await?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).await?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Replays outputs recorded from real tools, keyed by the exact command line.
///
/// A command recorded more than once answers with its recordings in order, the last one
/// repeating: a probe before an apply and the same probe after it. Every call is logged, so a
/// test can assert exactly which commands a step ran.
#[derive(Debug, Clone, Default)]
pub struct RecordedRunner {
    state: std::sync::Arc<std::sync::Mutex<Recorded>>,
}

#[derive(Debug, Default)]
struct Recorded {
    outputs: HashMap<String, Vec<Output>>,
    served: HashMap<String, usize>,
    calls: Vec<String>,
}

impl RecordedRunner {
    pub fn new() -> RecordedRunner {
        RecordedRunner::default()
    }

    /// Records what `command_line` (as [`Command`]'s `Display` prints it) returns.
    pub fn record(self, command_line: &str, code: i32, stdout: &str, stderr: &str) -> Self {
        let output = Output { code: Some(code), stdout: stdout.to_owned(), stderr: stderr.to_owned() };
        self.lock().outputs.entry(command_line.to_owned()).or_default().push(output);
        self
    }

    /// Every command line run so far, in order.
    pub fn calls(&self) -> Vec<String> {
        self.lock().calls.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        // A test that panicked while holding the lock has failed already; its data is still
        // good for the assertion messages that follow.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Runner for RecordedRunner {
    async fn run(&self, command: &Command) -> Result<Output, CommandError> {
        let shown = command.to_string();
        let mut state = self.lock();
        state.calls.push(shown.clone());
        let served = state.served.get(&shown).copied().unwrap_or(0);
        let output = match state.outputs.get(&shown) {
            Some(outputs) => outputs[served.min(outputs.len() - 1)].clone(),
            None => return Err(CommandError::NotRecorded { command: shown }),
        };
        state.served.insert(shown, served + 1);
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_quotes_only_what_needs_it() {
        let cmd = Command::new("mkfs.xfs").args(["-L", "brick one", "/dev/loop0", ""]);
        assert_eq!(cmd.to_string(), "mkfs.xfs -L 'brick one' /dev/loop0 ''");
        let cmd = Command::new("rpm").args(["-q", "--qf", "%{VERSION}\\n", "it's"]);
        assert_eq!(cmd.to_string(), r"rpm -q --qf '%{VERSION}\n' 'it'\''s'");
    }

    #[tokio::test]
    async fn system_runner_reports_exit_codes_and_output() {
        let out = SystemRunner
            .run(&Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]))
            .await
            .unwrap();
        assert_eq!(out.code, Some(3));
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr_tail(1), "err");
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_daemon_is_asked_again_until_it_answers_or_time_is_up() {
        const BUSY: &[&str] = &["Another transaction is in progress"];
        let shown = "gluster --mode=script volume start gv0 force";
        let command = Command::new("gluster")
            .args(["--mode=script", "volume", "start", "gv0", "force"])
            .again_while_busy(BUSY, Duration::from_secs(30));
        let busy = "volume start: gv0: failed: Another transaction is in progress. Please try again after some time.\n";
        let runner = RecordedRunner::new().record(shown, 1, "", busy).record(shown, 1, "", busy).record(
            shown,
            0,
            "volume start: gv0: success\n",
            "",
        );
        let started = tokio::time::Instant::now();
        let out = run_while_busy(&runner, &command, true).await.unwrap();
        assert!(out.success(), "{out:?}");
        assert_eq!(runner.calls().len(), 3);
        // Paused 0.5 s, then 1 s.
        assert_eq!(started.elapsed(), Duration::from_millis(1500));

        // Another failure is the answer at once.
        let other = RecordedRunner::new().record(
            shown,
            1,
            "",
            "volume start: gv0: failed: Volume gv0 does not exist\n",
        );
        let out = run_while_busy(&other, &command, true).await.unwrap();
        assert_eq!(out.code, Some(1));
        assert_eq!(other.calls().len(), 1);

        // Busy to the end: the last busy answer, once `within` would pass.
        let always = RecordedRunner::new().record(shown, 1, "", busy);
        let started = tokio::time::Instant::now();
        let out = run_while_busy(&always, &command, true).await.unwrap();
        assert!(out.stderr.contains("Another transaction"), "{out:?}");
        assert!(started.elapsed() <= Duration::from_secs(30), "{:?}", started.elapsed());
        assert!(started.elapsed() >= Duration::from_secs(20), "{:?}", started.elapsed());

        // A command that does not name a busy answer runs once, whatever it says.
        let once = Command::new("gluster").args(["--mode=script", "volume", "start", "gv0", "force"]);
        let runner = RecordedRunner::new().record(shown, 1, "", busy);
        run_while_busy(&runner, &once, true).await.unwrap();
        assert_eq!(runner.calls().len(), 1);
    }

    #[tokio::test]
    async fn system_runner_names_a_missing_program() {
        let err = SystemRunner.run(&Command::new("pvfs-no-such-tool")).await.unwrap_err();
        assert!(matches!(err, CommandError::Spawn { .. }), "{err}");
        assert!(err.to_string().contains("is pvfs-no-such-tool installed"), "{err}");
    }

    #[tokio::test]
    async fn system_runner_kills_on_timeout() {
        let cmd = Command::new("sleep").arg("5").timeout(Duration::from_millis(100));
        let err = SystemRunner.run(&cmd).await.unwrap_err();
        assert!(matches!(err, CommandError::TimedOut { .. }), "{err}");
    }

    /// Waits (bounded) until `path` exists: what a command left running does at its end.
    async fn appears(path: &std::path::Path) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while tokio::time::Instant::now() < deadline {
            if path.exists() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    #[tokio::test]
    async fn an_action_reports_its_exit_code_and_output() {
        let cmd = Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]);
        let out = SystemRunner.run_action(&cmd).await.unwrap();
        assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (Some(3), "out\n", "err\n"));
        let err = SystemRunner.run_action(&Command::new("pvfs-no-such-tool")).await.unwrap_err();
        assert!(matches!(err, CommandError::Spawn { .. }), "{err}");
    }

    /// Fields 5 and 6 of /proc/PID/stat (its process group and session), from its text.
    fn group_and_session(stat: &str) -> (String, String) {
        let after_comm = stat.rsplit_once(") ").unwrap().1;
        let fields: Vec<&str> = after_comm.split(' ').collect();
        (fields[2].to_owned(), fields[3].to_owned())
    }

    #[tokio::test]
    async fn an_action_runs_in_a_session_and_group_of_its_own() {
        // The shell's own pid is `$$`: it leads its own session and group, so `setsid` ran it
        // in place (no fork: the pid the runner knows is the command's).
        let cmd = Command::new("sh").args(["-c", "echo $$; cat /proc/$$/stat"]);
        let out = SystemRunner.run_action(&cmd).await.unwrap();
        let mut lines = out.stdout.lines();
        let pid = lines.next().unwrap();
        let stat = lines.next().unwrap();
        let (pgrp, session) = group_and_session(stat);
        assert_eq!((pgrp.as_str(), session.as_str()), (pid, pid), "{stat}");
        let (our_pgrp, our_session) = group_and_session(&std::fs::read_to_string("/proc/self/stat").unwrap());
        assert_ne!(pgrp, our_pgrp, "not in the caller's group");
        assert_ne!(session, our_session, "not in the caller's session");
        assert_eq!(out.code, Some(0));
    }

    #[tokio::test]
    async fn an_action_past_its_limit_is_left_running_and_named_by_pid() {
        let dir = tempfile::tempdir().unwrap();
        let done = dir.path().join("done");
        let script = format!("sleep 1; echo finished > {}", done.display());
        let cmd = Command::new("sh").args(["-c", &script]).timeout(Duration::from_millis(100));
        let err = SystemRunner.run_action(&cmd).await.unwrap_err();
        let text = err.to_string();
        let CommandError::StillRunning { pid, .. } = err else { panic!("{text}") };
        assert!(pid > 0);
        // The pid reported is the command itself, leading its own session.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        assert_eq!(group_and_session(&stat).1, pid.to_string(), "{stat}");
        assert!(text.contains(&format!("still running as pid {pid} and was left to finish")), "{text}");
        assert!(!done.exists(), "reported before it finished");
        assert!(appears(&done).await, "the action was killed instead of finishing");
    }

    #[tokio::test]
    async fn an_action_outlives_the_future_waiting_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let (started, done) = (dir.path().join("started"), dir.path().join("done"));
        // Writes output after the waiting future is gone: with a pipe it would die of SIGPIPE.
        let script = format!(
            "touch {}; sleep 1; echo still writing; echo finished > {}",
            started.display(),
            done.display()
        );
        let cmd = Command::new("sh").args(["-c", &script]);
        let waiting = tokio::spawn(async move { SystemRunner.run_action(&cmd).await });
        assert!(appears(&started).await);
        waiting.abort();
        assert!(waiting.await.unwrap_err().is_cancelled());
        assert!(appears(&done).await, "dropping the future killed the action");
        assert_eq!(std::fs::read_to_string(&done).unwrap(), "finished\n");
    }

    #[tokio::test]
    async fn recorded_runner_replays_and_refuses_the_unrecorded() {
        let runner = RecordedRunner::new().record("blkid -p /dev/sdc", 2, "", "");
        let out = runner.run(&Command::new("blkid").args(["-p", "/dev/sdc"])).await.unwrap();
        assert_eq!(out.code, Some(2));
        let err = runner.run(&Command::new("blkid").arg("/dev/sdd")).await.unwrap_err();
        assert!(matches!(err, CommandError::NotRecorded { .. }));
        assert_eq!(runner.calls(), ["blkid -p /dev/sdc", "blkid /dev/sdd"]);
    }

    #[tokio::test]
    async fn recorded_runner_answers_in_order_then_repeats_the_last() {
        let runner = RecordedRunner::new().record("findmnt /b", 1, "", "").record("findmnt /b", 0, "/b", "");
        let cmd = Command::new("findmnt").arg("/b");
        for want in [Some(1), Some(0), Some(0)] {
            assert_eq!(runner.run(&cmd).await.unwrap().code, want);
        }
    }
}
