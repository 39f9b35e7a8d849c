//! External commands, run through a seam so tests can replay real tools' recorded outputs.
//!
//! A [`Command`] is a program and its arguments, never a shell string: nothing here goes through
//! `sh -c`, so no argument can be reinterpreted by a shell.

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
}

impl Command {
    pub fn new(program: impl Into<String>) -> Command {
        Command { program: program.into(), args: Vec::new(), env: Vec::new(), timeout: DEFAULT_TIMEOUT }
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
    #[error("`{command}` could not be started: {source} (is {program} installed and on PATH?)")]
    Spawn {
        command: String,
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("`{command}` did not finish within {}s and was killed", timeout.as_secs())]
    TimedOut { command: String, timeout: Duration },
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
    fn run(&self, command: &Command) -> impl Future<Output = Result<Output, CommandError>> + Send;
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
