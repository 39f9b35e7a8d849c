//! The `Launch` RPC, the `mpi` launcher's agent side: this client starts the whole run as one
//! MPI job, `mpirun --hostfile … -np N PROGRAM …`, as the seed started IOR, and streams
//! mpirun's output back line by line with a heartbeat every second (IOR says nothing for
//! minutes while it writes a 4 GiB block).
//!
//! What runs is typed (a workload and a program), never a command line from the wire: the
//! agent builds IOR's or mdtest's arguments itself, reading IOR's version from `ior -h` on
//! this client for the `-B` question. mpirun reaches the other clients its own way (ssh, as
//! the seed set up); a single-client run needs nothing.

use pvfs_bench::params::{IorVersion, Workload, ior_args, mdtest_args};
use pvfs_engine::mpi::{LaunchRequest, Program};
use pvfs_host::Command;
use pvfs_proto::pb;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The hostfile's name in the run's directory.
const HOSTFILE: &str = "mpi-hostfile";

/// How long mpirun gets to stop its ranks after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Why the run's command cannot be made on this client; sent to the coordinator as is.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    OwnExecutable(#[from] crate::child::OwnExecutableError),
    #[error(
        "{0} is not installed on this client (not found in PATH): install IOR (which provides ior and \
         mdtest) on every client, or use engine = \"builtin\""
    )]
    NotInstalled(&'static str),
    #[error("`ior -h` did not finish within 30s")]
    IorHelpTimedOut,
    #[error("cannot run `ior -h`: {0}")]
    IorHelp(#[source] std::io::Error),
}

/// The command for `req` on this client, and the hostfile it names (written by the caller to
/// `hostfile_path`).
pub async fn command(req: &LaunchRequest, hostfile_path: &std::path::Path) -> Result<Command, LaunchError> {
    let program: Vec<String> = match (req.program, &req.workload) {
        (Program::Builtin, workload) => {
            let mut program = crate::child::self_command()?;
            program.extend(pvfs_engine::mpi::engine_args(workload, &req.dir, req.tasks_per_node));
            program
        }
        (Program::Ior, Workload::Ior(p)) => {
            let version = ior_version().await?;
            let mut program = vec!["ior".to_owned()];
            program.extend(ior_args(p, version, &req.dir.join("ior").display().to_string()));
            program
        }
        (Program::Ior, Workload::Mdtest(p)) => {
            if !crate::child::on_path("mdtest") {
                return Err(LaunchError::NotInstalled("mdtest"));
            }
            let mut program = vec!["mdtest".to_owned()];
            program.extend(mdtest_args(p, &req.dir.display().to_string()));
            program
        }
    };
    let mut command = Command::new("mpirun")
        .arg("--hostfile")
        .arg(hostfile_path.display().to_string())
        .args(["-np".to_owned(), req.ranks().to_string()]);
    // Open MPI refuses root unless told; the agent runs as root (it mounts file systems).
    if nix::unistd::geteuid().is_root() {
        command = command.arg("--allow-run-as-root");
    }
    Ok(command.args(program))
}

/// IOR's version from `ior -h` (which exits 1, having printed its options).
async fn ior_version() -> Result<IorVersion, LaunchError> {
    if !crate::child::on_path("ior") {
        return Err(LaunchError::NotInstalled("ior"));
    }
    let mut command = tokio::process::Command::new("ior");
    command.arg("-h").stdin(Stdio::null()).kill_on_drop(true);
    // A singleton MPI program started by root refuses to run without these.
    command.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let out = tokio::time::timeout(Duration::from_secs(30), command.output())
        .await
        .map_err(|_| LaunchError::IorHelpTimedOut)?
        .map_err(LaunchError::IorHelp)?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Ok(IorVersion::from_help(&text))
}

/// Runs `req` to its end, sending events to `tx`; stops the job when `tx`'s receiver goes
/// away or `shutdown` fires.
pub async fn run(
    req: LaunchRequest,
    tx: mpsc::Sender<Result<pb::LaunchEvent, tonic::Status>>,
    shutdown: CancellationToken,
) {
    let send = |event: pb::launch_event::Event| {
        let tx = tx.clone();
        async move { tx.send(Ok(pb::LaunchEvent { event: Some(event) })).await.is_ok() }
    };
    let fail = |why: String| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(Err(tonic::Status::failed_precondition(why))).await;
        }
    };
    // The run's directory is on the shared file system: made and written without following
    // symlinks, the hostfile through a random temporary name renamed into place.
    let hostfile = req.hostfile();
    let written = pvfs_engine::files::Dir::create_all(&req.dir)
        .and_then(|dir| dir.replace_file(HOSTFILE, hostfile.text.as_bytes(), 0o644));
    if let Err(err) = written {
        return fail(format!("cannot write the MPI hostfile: {err}")).await;
    }
    let hostfile_path: PathBuf = req.dir.join(HOSTFILE);
    let command = match command(&req, &hostfile_path).await {
        Ok(command) => command,
        Err(err) => return fail(err.to_string()).await,
    };
    if !crate::child::on_path(&command.program) {
        return fail(
            "mpirun is not installed on this client: install Open MPI (apt-get install openmpi-bin, or dnf install \
             openmpi) on every client, or use launcher = \"agents\""
                .into(),
        )
        .await;
    }
    // mpirun and the ranks it forks must not inherit the agent's protection from the OOM killer.
    let mut mpirun = vec![command.program.clone()];
    mpirun.extend(command.args.iter().cloned());
    let argv = crate::child::Argv { args: mpirun, arg0: None };
    let argv = match crate::child::with_oom_score(crate::child::TOOL_OOM_SCORE_ADJ, argv) {
        Ok(argv) => argv,
        Err(err) => return fail(err.to_string()).await,
    };
    let mut child = argv.command();
    child.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = match child.spawn() {
        Ok(child) => child,
        Err(err) => return fail(format!("cannot start `{command}`: {err}")).await,
    };
    let started = pb::LaunchStarted { command: command.to_string(), hostfile: hostfile.text.clone() };
    if !send(pb::launch_event::Event::Started(started)).await {
        return stop(&mut child).await;
    }
    let mut stdout = child.stdout.take().map(|s| BufReader::new(s).lines());
    let mut stderr = child.stderr.take().map(|s| BufReader::new(s).lines());
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    // Read both pipes to their ends before waiting: mpirun blocks if a pipe fills.
    while stdout.is_some() || stderr.is_some() {
        let (line, is_err) = tokio::select! {
            line = next_line(&mut stdout) => (line, false),
            line = next_line(&mut stderr) => (line, true),
            _ = tick.tick() => {
                if !send(pb::launch_event::Event::Alive(pb::Heartbeat {})).await {
                    return stop(&mut child).await;
                }
                continue;
            }
            () = shutdown.cancelled() => return stop(&mut child).await,
        };
        match line {
            Some(text) => {
                if !send(pb::launch_event::Event::Line(pb::OutputLine { stderr: is_err, text })).await {
                    return stop(&mut child).await;
                }
            }
            None if is_err => stderr = None,
            None => stdout = None,
        }
    }
    let exited = match child.wait().await {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            pb::LaunchExited {
                code: status.code().unwrap_or(-1),
                signal: status.signal().map(|s| s.to_string()).unwrap_or_default(),
            }
        }
        Err(err) => return fail(format!("waiting for mpirun: {err}")).await,
    };
    // mpirun has exited, so no rank is still waiting at a barrier.
    let _ = std::fs::remove_dir_all(pvfs_engine::mpi::barrier_dir(&req.dir));
    let _ = send(pb::launch_event::Event::Exited(exited)).await;
}

/// The next line of a pipe, or `None` at its end; never resolves for a pipe already closed.
async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut Option<tokio::io::Lines<R>>,
) -> Option<String> {
    match lines {
        Some(l) => l.next_line().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

/// Nobody is listening any more: SIGTERM lets mpirun stop every rank on every client; a
/// mpirun that lingers is killed.
async fn stop(child: &mut tokio::process::Child) {
    if let Some(pid) = child.id() {
        let _ =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGTERM);
    }
    if tokio::time::timeout(STOP_GRACE, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
}
