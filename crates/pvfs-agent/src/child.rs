//! Benchmark processes the agent starts, and how it keeps them from taking it (or the node's
//! storage daemons) down.
//!
//! - **Out-of-memory order.** The agent runs with `OOMScoreAdjust=-500` (its systemd unit), so
//!   the kernel spares it under memory pressure, and every child inherits that. Benchmark
//!   processes are started through `pvfs-agent oom-exec --score N -- PROGRAM …`, which sets
//!   its own score and then becomes PROGRAM: the built-in engine at [`ENGINE_OOM_SCORE_ADJ`]
//!   (the kernel's first choice), fio and mpirun (and the ranks mpirun forks) at
//!   [`TOOL_OOM_SCORE_ADJ`], above bricks and FUSE daemons (0) and far above the agent.
//! - **The built-in engine in its own process** ([`run_engine`]): `pvfs-agent engine-phase`
//!   runs one phase and reports JSON lines. A phase that needs more memory than the node can
//!   spare is refused before it starts; where systemd manages the agent, the engine runs in a
//!   transient scope with `MemoryMax` (its own cgroup), otherwise as a plain child (said once
//!   in the log). Whatever happens to it — the OOM killer, a panic, a signal — ends the phase
//!   with an error naming the cause, and the agent goes on serving.

use pvfs_bench::params::format_bytes;
use pvfs_bench::request::PhaseRequest;
use pvfs_engine::child::{MAX_LINE, PhaseLine};
use pvfs_engine::engine::{Progress, TaskResult};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::ChildStdout;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

/// The built-in engine's OOM score: the most killable process on the node. It is the process
/// pvfs can lose without harm (the phase fails with a clear error), and a runaway engine is
/// exactly what the OOM killer should find first.
pub const ENGINE_OOM_SCORE_ADJ: i32 = 1000;

/// fio's, mpirun's and their ranks' score: killed before bricks, FUSE clients and the agent
/// (0 and -500), after the built-in engine.
pub const TOOL_OOM_SCORE_ADJ: i32 = 500;

/// A command line for a process the agent starts, and the name to start it under when that
/// differs from its program's path: this binary picks its personality from the name it runs
/// as, and `pvfsctl demo` runs its agents as `pvfsctl` renamed `pvfs-agent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Argv {
    pub args: Vec<String>,
    pub arg0: Option<String>,
}

impl Argv {
    /// The command, ready for its standard streams.
    pub(crate) fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.args[0]);
        if let Some(arg0) = &self.arg0 {
            command.arg0(arg0);
        }
        command.args(&self.args[1..]).env("LC_ALL", "C");
        command
    }
}

/// The agent cannot name its own executable (`/proc/self/exe` unreadable, or the file
/// replaced): nothing it would run through itself can start.
#[derive(Debug, thiserror::Error)]
#[error("cannot find pvfs-agent's own executable: {0}")]
pub(crate) struct OwnExecutableError(#[source] pub(crate) std::io::Error);

/// This program, as the command that runs its agent personality.
pub(crate) fn self_argv() -> Result<Argv, OwnExecutableError> {
    let exe = std::env::current_exe().map_err(OwnExecutableError)?;
    let name = exe.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let path = exe.display().to_string();
    Ok(if name.starts_with("pvfs-agent") {
        Argv { args: vec![path], arg0: None }
    } else if name.starts_with("pvfsctl") {
        Argv { args: vec![path], arg0: Some("pvfs-agent".to_owned()) }
    } else {
        // The multi-call `pvfs` binary needs its subcommand.
        Argv { args: vec![path, "agent".to_owned()], arg0: None }
    })
}

/// This program's agent personality as a plain command line, for commands that cannot carry
/// a name of their own (mpirun's ranks): right for `pvfs-agent` and `pvfs`.
pub(crate) fn self_command() -> Result<Vec<String>, OwnExecutableError> {
    let Argv { mut args, arg0 } = self_argv()?;
    if arg0.is_some() {
        args.push("agent".to_owned());
    }
    Ok(args)
}

/// `inner` run with OOM score `score`: through `oom-exec`, which sets it and becomes `inner`.
pub(crate) fn with_oom_score(score: i32, inner: Argv) -> Result<Argv, OwnExecutableError> {
    let mut outer = self_argv()?;
    outer.args.extend(["oom-exec".to_owned(), "--score".to_owned(), score.to_string()]);
    if let Some(arg0) = inner.arg0 {
        outer.args.extend(["--arg0".to_owned(), arg0]);
    }
    outer.args.push("--".to_owned());
    outer.args.extend(inner.args);
    Ok(outer)
}

/// Whether `program` is on PATH.
pub(crate) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Where the engine runs: decided once per agent process, and said once in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Containment {
    /// `systemd-run --scope -p MemoryMax=…`: a transient scope, the engine's own cgroup.
    Scope,
    /// A plain child process, and why.
    Plain(String),
}

static CONTAINMENT: OnceCell<Containment> = OnceCell::const_new();

async fn containment() -> &'static Containment {
    CONTAINMENT
        .get_or_init(|| async {
            let found = probe_containment().await;
            match &found {
                Containment::Scope => {
                    tracing::info!("benchmark engines run in their own systemd scope with a memory limit")
                }
                Containment::Plain(why) => tracing::info!(
                    reason = %why,
                    "benchmark engines run as plain child processes without a memory limit of their own ({why}); \
                     their OOM score is raised so the kernel kills them first"
                ),
            }
            found
        })
        .await
}

/// A scope is used when systemd started the agent (`INVOCATION_ID`, which systemd sets for
/// every unit it runs), systemd is the init system, and `systemd-run --scope` works here.
async fn probe_containment() -> Containment {
    if std::env::var_os("INVOCATION_ID").is_none() {
        return Containment::Plain("the agent was not started by systemd".into());
    }
    if !std::path::Path::new("/run/systemd/system").is_dir() {
        return Containment::Plain("systemd is not this node's init system".into());
    }
    if !on_path("systemd-run") {
        return Containment::Plain("systemd-run is not installed".into());
    }
    let Ok(mut probe) = self_command() else {
        return Containment::Plain("no executable to probe with".into());
    };
    probe.push("--version".to_owned());
    let mut command = tokio::process::Command::new("systemd-run");
    command
        .args(scope_args(&format!("pvfs-bench-probe-{}", std::process::id()), 64 << 20))
        .args(&probe)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    match tokio::time::timeout(Duration::from_secs(10), command.output()).await {
        Ok(Ok(out)) if out.status.success() => Containment::Scope,
        Ok(Ok(out)) => Containment::Plain(format!(
            "systemd-run --scope failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Ok(Err(err)) => Containment::Plain(format!("cannot run systemd-run: {err}")),
        Err(_) => Containment::Plain("systemd-run --scope did not answer within 10s".into()),
    }
}

/// `systemd-run` arguments for a transient scope named `unit` limited to `memory_max` bytes,
/// up to the `--` after which the command goes. `--collect` unloads the unit even if the
/// engine failed, so failed scopes do not pile up.
fn scope_args(unit: &str, memory_max: u64) -> Vec<String> {
    ["--scope", "--quiet", "--collect", "--unit", unit]
        .into_iter()
        .map(str::to_owned)
        .chain(["--property".to_owned(), format!("MemoryMax={memory_max}"), "--".to_owned()])
        .collect()
}

/// The node's memory, from /proc/meminfo.
fn mem_total() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// How many processes the OOM killer has killed since boot (`oom_kill` in /proc/vmstat, Linux
/// 4.13 and later): compared before and after a phase, it tells an OOM kill from any other
/// SIGKILL.
fn oom_kills() -> Option<u64> {
    let vmstat = std::fs::read_to_string("/proc/vmstat").ok()?;
    vmstat.lines().find_map(|l| l.strip_prefix("oom_kill "))?.trim().parse().ok()
}

/// The memory the engine gets for `req`: what it needs, checked against the node before
/// anything starts, plus room for the page cache its buffered I/O is charged with in its
/// cgroup (half the node: the presets use O_DIRECT, where the cache plays no part; a buffered
/// run keeps a cache as large as a client at rest would give it), never more than the node.
pub(crate) fn engine_memory(req: &PhaseRequest) -> Result<u64, TooMuchMemory> {
    let needed = req.memory_needed();
    let Some(total) = mem_total() else { return Ok(needed) };
    if needed > total / 2 {
        return Err(TooMuchMemory { tasks: req.tasks, needed, total });
    }
    Ok(needed.saturating_add(total / 2).min(total))
}

/// A phase whose tasks would need more than half of the client's memory: refused before it
/// starts, rather than left to the OOM killer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{tasks} tasks need about {} of memory (a transfer buffer and a thread each), more than half of this \
     client's {}: lower procs or transfer",
    format_bytes(*needed),
    format_bytes(*total)
)]
pub(crate) struct TooMuchMemory {
    tasks: u32,
    needed: u64,
    total: u64,
}

/// Why an engine phase produced no results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EngineError {
    /// The engine refused the phase or could not start it (its directory, its arguments).
    Refused(String),
    /// The OOM killer ended it.
    OutOfMemory(String),
    /// It died otherwise (a signal, a panic, a broken report).
    Died(String),
}

/// The engine child's side of a wear-out: where its stonewall is said (to the coordinator,
/// through the phase's stream) and where the run's most comes back from (`BenchWearOut`).
pub(crate) struct WearLink {
    pub said: tokio::sync::mpsc::UnboundedSender<u64>,
    pub answer: tokio::sync::oneshot::Receiver<u64>,
}

/// Runs `req` in a child process of the agent (`pvfs-agent engine-phase`) on `node`,
/// updating `progress` from its lines, and returns its tasks' results. When `cancel` fires the
/// child's standard input is closed, and it stops at its next transfer or item; this still
/// waits for it to exit, so the next phase never overlaps it.
pub(crate) async fn run_engine(
    node: &str,
    req: &PhaseRequest,
    memory_max: u64,
    progress: Arc<Progress>,
    cancel: CancellationToken,
    wear: Option<WearLink>,
    env: Option<(String, String)>,
) -> Result<Vec<TaskResult>, EngineError> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let died = |why: String| EngineError::Died(format!("the built-in engine on {node} {why}"));
    let mut inner = self_argv().map_err(|err| died(err.to_string()))?;
    inner.args.extend(pvfs_engine::child::phase_args(req));
    let mut argv = with_oom_score(ENGINE_OOM_SCORE_ADJ, inner).map_err(|err| died(err.to_string()))?;
    let contained = containment().await;
    if *contained == Containment::Scope {
        // systemd-run execs the command in the new scope: the trampoline is named as itself.
        let unit =
            format!("pvfs-bench-engine-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let mut scoped = vec!["systemd-run".to_owned()];
        scoped.extend(scope_args(&unit, memory_max));
        scoped.extend(argv.args);
        argv = Argv { args: scoped, arg0: None };
    }
    let oom_before = oom_kills();
    let mut command = argv.command();
    // The variable a Lustre client reads its job id from (its jobid_var), set to the tag.
    if let Some((var, value)) = env {
        command.env(var, value);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| died(format!("could not be started ({}): {e}", argv.args[0])))?;
    let pid = child.id().unwrap_or_default();
    tracing::debug!(pid, phase = req.phase.name(), tasks = req.tasks, memory_max, "engine started");
    let stderr = tokio::spawn(stderr_tail(child.stderr.take()));
    let mut stdin = child.stdin.take();
    let mut stdout =
        BufReader::new(child.stdout.take().ok_or_else(|| died("has no standard output".into()))?);
    let mut tasks = Vec::new();
    let (mut done, mut failed) = (false, None);
    let mut partial = Vec::new();
    let (said, mut answer) = match wear {
        Some(WearLink { said, answer }) => (Some(said), Some(answer)),
        None => (None, None),
    };
    let mut stonewalled = false;
    loop {
        let line = tokio::select! {
            line = read_line(&mut stdout, &mut partial) => line,
            // Closing its standard input is the engine's signal to stop.
            () = cancel.cancelled(), if stdin.is_some() => { stdin = None; continue }
            // The run's most at the stonewall, once the engine has said it is there.
            most = async {
                match answer.as_mut() {
                    Some(answer) => answer.await,
                    None => std::future::pending().await,
                }
            }, if stonewalled && answer.is_some() => {
                answer = None;
                if let (Ok(most), Some(input)) = (most, stdin.as_mut()) {
                    use tokio::io::AsyncWriteExt;
                    // `WearOutLine`, which the engine reads: a number needs no escaping.
                    let line = format!("{{\"wear_out\":{most}}}\n");
                    if input.write_all(line.as_bytes()).await.is_err() {
                        stdin = None;
                    }
                }
                continue;
            }
        };
        let line = match line {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(why) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                return Err(died(format!("(pid {pid}) {why}")));
            }
        };
        match PhaseLine::parse(&line) {
            Some(PhaseLine::Progress { bytes, ops, recent }) => {
                progress.bytes.store(bytes, Ordering::Relaxed);
                progress.ops.store(ops, Ordering::Relaxed);
                // Bounded: a line is at most MAX_LINE, and the histogram it adds to at most
                // the buckets of u64's range.
                if let Ok(mut shared) = progress.recent.lock() {
                    shared.add_buckets(&recent);
                }
            }
            // Bounded: a task line per task of the request, no more.
            Some(task @ PhaseLine::Task { .. }) if tasks.len() < req.tasks as usize => {
                tasks.extend(task.task_result());
            }
            Some(PhaseLine::Task { .. }) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                return Err(died(format!("(pid {pid}) reported more tasks than the {} it runs", req.tasks)));
            }
            Some(PhaseLine::Failed { error }) => failed = Some(error),
            Some(PhaseLine::Done) => done = true,
            // Once a phase, and only when the phase has a wear-out to agree.
            Some(PhaseLine::Stonewalled { pairs }) if !stonewalled && said.is_some() => {
                stonewalled = true;
                if let Some(said) = &said {
                    let _ = said.send(pairs);
                }
            }
            Some(PhaseLine::Stonewalled { .. }) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                return Err(died(format!(
                    "(pid {pid}) said it reached a stonewall it was not asked to agree"
                )));
            }
            None => tracing::debug!(pid, line = %line, "engine output"),
        }
    }
    drop(stdin);
    let status = child.wait().await.map_err(|e| died(format!("(pid {pid}) could not be waited for: {e}")))?;
    let stderr = stderr.await.unwrap_or_default();
    match (failed, done, status.success()) {
        (Some(error), _, _) => Err(EngineError::Refused(error)),
        // A line per task, or none (removing IOR's files reports no task).
        (None, true, true) => Ok(tasks),
        _ => Err(death(node, pid, status, oom_before, memory_max, contained, &stderr)),
    }
}

/// Why the engine ended without its results, as an operator needs to read it.
fn death(
    node: &str,
    pid: u32,
    status: ExitStatus,
    oom_before: Option<u64>,
    memory_max: u64,
    contained: &Containment,
    stderr: &str,
) -> EngineError {
    use std::os::unix::process::ExitStatusExt;
    let said = if stderr.is_empty() { String::new() } else { format!("; it said: {stderr}") };
    let engine = format!("the built-in engine on {node} (pid {pid})");
    match status.signal() {
        Some(9) if oom_kills().zip(oom_before).is_some_and(|(after, before)| after > before) => {
            let limit = match contained {
                Containment::Scope => format!("its limit of {}", format_bytes(memory_max)),
                Containment::Plain(_) => "the node's memory".to_owned(),
            };
            EngineError::OutOfMemory(format!(
                "{engine} was killed by the kernel's OOM killer: the phase ran out of {limit}; lower procs or \
                 transfer (the agent goes on serving){said}"
            ))
        }
        Some(signal) => {
            let name = nix::sys::signal::Signal::try_from(signal)
                .map_or_else(|_| signal.to_string(), |s| s.to_string());
            let not_oom = if signal == 9 { " (not by the OOM killer: its count did not change)" } else { "" };
            EngineError::Died(format!(
                "{engine} was killed by {name}{not_oom} before it finished the phase; the agent goes on serving{said}"
            ))
        }
        None => EngineError::Died(format!(
            "{engine} exited with code {} without finishing the phase{said}",
            status.code().unwrap_or(-1)
        )),
    }
}

/// Why the engine's next line could not be had (the message follows "the built-in engine on
/// NODE (pid N)").
#[derive(Debug, thiserror::Error)]
enum LineError {
    #[error("could not be read from: {0}")]
    Read(#[source] std::io::Error),
    #[error("printed a line longer than {MAX_LINE} bytes")]
    TooLong,
}

/// The next line of the engine's output, `None` at its end. A line longer than [`MAX_LINE`] is
/// an error rather than a buffer that grows with whatever the child prints. `buf` lives across
/// calls: in a `select!`, a read interrupted mid-line keeps what it had read there (tokio's
/// `read_until` appends as it consumes), and the next call goes on from it.
async fn read_line(out: &mut BufReader<ChildStdout>, buf: &mut Vec<u8>) -> Result<Option<String>, LineError> {
    let room = u64::try_from((MAX_LINE + 1).saturating_sub(buf.len())).unwrap_or(u64::MAX);
    let read = (&mut *out).take(room).read_until(b'\n', buf).await.map_err(LineError::Read)?;
    if read == 0 && buf.is_empty() {
        return Ok(None);
    }
    if buf.len() > MAX_LINE {
        return Err(LineError::TooLong);
    }
    let line = String::from_utf8_lossy(buf).into_owned();
    buf.clear();
    Ok(Some(line))
}

/// The last lines the engine wrote to standard error (a panic's message), read to the end so
/// the pipe never fills, keeping at most 8 lines of 512 bytes.
async fn stderr_tail(stderr: Option<tokio::process::ChildStderr>) -> String {
    let Some(stderr) = stderr else { return String::new() };
    let mut lines = BufReader::new(stderr);
    let mut tail: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match (&mut lines).take(4096).read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf).trim().chars().take(512).collect::<String>();
                if !line.is_empty() {
                    tail.push_back(line);
                    if tail.len() > 8 {
                        tail.pop_front();
                    }
                }
            }
        }
    }
    Vec::from(tail).join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_transient_and_memory_limited() {
        assert_eq!(
            scope_args("pvfs-bench-engine-7-0", 1 << 30).join(" "),
            "--scope --quiet --collect --unit pvfs-bench-engine-7-0 --property MemoryMax=1073741824 --"
        );
    }

    #[test]
    fn benchmark_commands_go_through_the_trampoline() {
        let fio = Argv { args: vec!["fio".into(), "--version".into()], arg0: None };
        let argv = with_oom_score(TOOL_OOM_SCORE_ADJ, fio).unwrap();
        let at = argv.args.iter().position(|a| a == "oom-exec").unwrap();
        assert_eq!(argv.args[at..].join(" "), "oom-exec --score 500 -- fio --version");
        let renamed = Argv {
            args: vec!["/bin/pvfsctl".into(), "engine-phase".into()],
            arg0: Some("pvfs-agent".into()),
        };
        let argv = with_oom_score(ENGINE_OOM_SCORE_ADJ, renamed).unwrap();
        let at = argv.args.iter().position(|a| a == "oom-exec").unwrap();
        assert_eq!(
            argv.args[at..].join(" "),
            "oom-exec --score 1000 --arg0 pvfs-agent -- /bin/pvfsctl engine-phase"
        );
    }

    /// The engine's output is read a bounded line at a time: a child printing without end gets
    /// an error, not a buffer growing with it.
    #[tokio::test]
    async fn engine_lines_are_bounded() {
        let output = |program: &str, args: &[&str]| {
            let mut child = tokio::process::Command::new(program)
                .args(args)
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            let out = BufReader::new(child.stdout.take().unwrap());
            (child, out)
        };
        let (_printf, mut out) = output("printf", &["one\\ntwo"]);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut out, &mut buf).await.unwrap(), Some("one\n".into()));
        assert_eq!(read_line(&mut out, &mut buf).await.unwrap(), Some("two".into()));
        assert_eq!(read_line(&mut out, &mut buf).await.unwrap(), None);
        let (_cat, mut endless) = output("cat", &["/dev/zero"]);
        let err = read_line(&mut endless, &mut Vec::new()).await.unwrap_err();
        assert_eq!(err.to_string(), format!("printed a line longer than {MAX_LINE} bytes"));
    }

    #[test]
    fn the_nodes_memory_and_oom_count_are_read() {
        assert!(mem_total().is_some_and(|m| m > 64 << 20));
        assert!(oom_kills().is_some(), "/proc/vmstat has oom_kill (Linux 4.13+)");
    }
}
