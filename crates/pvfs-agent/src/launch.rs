//! The `Launch` RPC, the `mpi` launcher's agent side: this client starts the whole run as one
//! MPI job, `mpirun --hostfile … -np N PROGRAM …`, as the seed started IOR, and streams
//! mpirun's output back line by line with a heartbeat every second (IOR says nothing for
//! minutes while it writes a 4 GiB block).
//!
//! What runs is typed (a workload and a program), never a command line from the wire: the
//! agent builds IOR's or mdtest's arguments itself, reading IOR's version from `ior -h` on
//! this client for the `-B` question. mpirun reaches the other clients over ssh: with
//! `[bench] mpi_ssh`, with the cluster's key and known_hosts that `pvfsctl up` installed under
//! /etc/pvfs/mpi (strict host key checking, no other identity or known_hosts file); without
//! it, as root's own ssh is set up (the seed's way). A single-client run needs nothing.
//!
//! mpirun starts the same argv on every client, and the clients need not have pvfs at the same
//! path (the .deb installs /usr/bin/pvfs-agent, the tarball /usr/local/bin/pvfs-agent). So the
//! built-in engine's ranks are started as the bare name `pvfs-agent`, which Open MPI looks up
//! in each node's PATH (`orte_util_check_context_app`, on the node that starts the rank) —
//! when that name on this client's PATH is this very program (through links: an older .deb's
//! was a link to /usr/bin/pvfs), so the local ranks run the agent's own code. Otherwise (the multi-call `pvfs`, a build tree) this program's absolute
//! path is given, which is right on one client and needs the same path on the others.

use pvfs_bench::launch::{Engine, PairError};
use pvfs_bench::params::{IorVersion, Workload, ior_args, mdtest_args};
use pvfs_bench::request::LaunchRequest;
use pvfs_host::Command;
use pvfs_proto::pb;
use pvfs_steps::{MPI_KEY, MPI_KNOWN_HOSTS};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The hostfile's name in the run's directory.
const HOSTFILE: &str = "mpi-hostfile";

/// The ini file's name in the run's directory (engine io500).
const IO500_INI: &str = "io500.ini";

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
    #[error("a find runs through the agents launcher, not under mpirun")]
    FindUnderMpi,
    #[error("the built-in engine's IO500 runs through the agents launcher, not under mpirun")]
    Io500UnderMpi,
    #[error("engine io500 runs an IO500 only")]
    Io500Only,
    #[error("engine io500 needs the io500 program's path ([bench] io500 = PATH)")]
    Io500NoProgram,
    /// The io500 program is not one this agent runs as root (see [`trusted_program`]).
    #[error(
        "{} is not run: {why}. The agent runs io500 as root only from a file owned by root (or the agent's \
         user) that no one else can change, in directories no one else can change ([bench] io500 in the \
         cluster file names it)",
        .path.display()
    )]
    Io500Untrusted { path: PathBuf, why: String },
    #[error("cannot run `ior -h`: {0}")]
    IorHelp(#[source] std::io::Error),
    #[error(
        "[bench] mpi_ssh is on but {0} is missing on this client: run `pvfsctl up` (it installs the cluster's \
         MPI key where the agent's policy file says mpi_ssh = true)"
    )]
    MpiSshMissing(&'static str),
    /// An engine mpirun cannot run (the wire conversion refuses it first).
    #[error(transparent)]
    Pair(#[from] PairError),
}

/// ssh's options for mpirun with `[bench] mpi_ssh` (one word: Open MPI splits
/// `plm_rsh_args` itself): the cluster's key and nothing else, only the known_hosts `up`
/// wrote, strictly, never a prompt.
pub fn mpi_ssh_args() -> String {
    [
        "-i",
        MPI_KEY,
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        &format!("UserKnownHostsFile={MPI_KNOWN_HOSTS}"),
        "-o",
        "GlobalKnownHostsFile=/dev/null",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "BatchMode=yes",
    ]
    .join(" ")
}

/// The name the built-in engine's ranks are started by (see the module's doc): `pvfs-agent`
/// through each node's PATH when that is this program here, else this program's path.
fn engine_program(hosts: usize) -> Result<Vec<String>, LaunchError> {
    let exe = std::env::current_exe().map_err(crate::child::OwnExecutableError)?;
    if by_name(std::env::var_os("PATH"), &exe) {
        return Ok(vec![ENGINE_NAME.to_owned()]);
    }
    let own = crate::child::self_command()?;
    if hosts > 1 {
        tracing::warn!(
            program = %own.join(" "),
            "the MPI ranks are started by this program's path, as `pvfs-agent` on PATH is not this program: the \
             other clients must have it at the same path"
        );
    }
    Ok(own)
}

/// Whether `pvfs-agent` looked up in `path` (a PATH value) is `exe`.
fn by_name(path: Option<std::ffi::OsString>, exe: &std::path::Path) -> bool {
    let on_path = path.and_then(|paths| {
        std::env::split_paths(&paths).map(|dir| dir.join(ENGINE_NAME)).find(|p| p.is_file())
    });
    // Followed through links: an older .deb's /usr/bin/pvfs-agent was a link to /usr/bin/pvfs,
    // and argv[0] `pvfs-agent` picks the agent's personality either way.
    on_path.is_some_and(|found| same_file(&found, exe))
}

/// The name both installs (the .deb's /usr/bin, the tarball's /usr/local/bin) give the agent.
const ENGINE_NAME: &str = "pvfs-agent";

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The command for `req` on this client, and the hostfile it names (written by the caller to
/// `hostfile_path`).
pub async fn command(req: &LaunchRequest, hostfile_path: &std::path::Path) -> Result<Command, LaunchError> {
    let program: Vec<String> = match (req.engine, &req.workload) {
        (Engine::Fio, _) => return Err(PairError::FioIsNotMpi.into()),
        (Engine::Builtin, workload) => {
            let mut program = engine_program(req.clients.len())?;
            program.extend(pvfs_engine::mpi::engine_args(workload, &req.dir, req.tasks_per_client));
            program
        }
        (Engine::Ior, Workload::Ior(p)) => {
            let version = ior_version().await?;
            let mut program = vec!["ior".to_owned()];
            program.extend(ior_args(p, version, &req.dir.join("ior").display().to_string()));
            program
        }
        (_, Workload::Find(_)) => return Err(LaunchError::FindUnderMpi),
        (Engine::Io500, Workload::Io500(_)) => {
            let program = req.io500_program.as_deref().ok_or(LaunchError::Io500NoProgram)?;
            trusted_program(program)?;
            vec![program.display().to_string(), req.dir.join(IO500_INI).display().to_string()]
        }
        (Engine::Io500, _) => return Err(LaunchError::Io500Only),
        (_, Workload::Io500(_)) => return Err(LaunchError::Io500UnderMpi),
        (Engine::Ior, Workload::Mdtest(p)) => {
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
    if req.mpi_ssh {
        for file in [MPI_KEY, MPI_KNOWN_HOSTS] {
            if !std::path::Path::new(file).is_file() {
                return Err(LaunchError::MpiSshMissing(file));
            }
        }
        command = command.args(["--mca".to_owned(), "plm_rsh_args".to_owned(), mpi_ssh_args()]);
    }
    // Open MPI refuses root unless told; the agent runs as root (it mounts file systems).
    if nix::unistd::geteuid().is_root() {
        command = command.arg("--allow-run-as-root");
    }
    Ok(command.args(program))
}

/// Whether `path` is a program this agent runs as root: as OpenSSH's StrictModes judges a key
/// file, by who can change it. The file (links followed) must be a regular, executable file
/// owned by root or the agent's own user and writable by neither group nor others, and so
/// must every directory above it and above the path as given (a link in a directory others can
/// write could be turned to another program after this check), but for a root-owned sticky
/// directory such as /tmp, where no one can rename or remove another's entry. The path's name was checked on
/// the wire (`io500`); together they keep a coordinator's request from starting any other
/// program as root.
fn trusted_program(path: &std::path::Path) -> Result<(), LaunchError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let untrusted = |why: String| LaunchError::Io500Untrusted { path: path.to_owned(), why };
    let me = nix::unistd::geteuid().as_raw();
    let real = std::fs::canonicalize(path).map_err(|e| untrusted(format!("cannot resolve it: {e}")))?;
    let meta = std::fs::metadata(&real).map_err(|e| untrusted(format!("cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(untrusted("it is not a regular file".into()));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(untrusted("it is not executable".into()));
    }
    let owned = |what: &std::path::Path, meta: &std::fs::Metadata| -> Result<(), LaunchError> {
        if meta.uid() != 0 && meta.uid() != me {
            return Err(untrusted(format!("{} is owned by uid {}", what.display(), meta.uid())));
        }
        // A root-owned sticky directory (/tmp) lets others add names but not rename or remove
        // another's: what lies below it is still only its owners' to change.
        let sticky_root_dir = meta.is_dir() && meta.uid() == 0 && meta.mode() & 0o1000 != 0;
        if meta.mode() & 0o022 != 0 && !sticky_root_dir {
            return Err(untrusted(format!(
                "{} can be written by its group or others (mode {:o})",
                what.display(),
                meta.mode() & 0o7777
            )));
        }
        Ok(())
    };
    owned(&real, &meta)?;
    for start in [real.parent(), path.parent()].into_iter().flatten() {
        for dir in start.ancestors() {
            let meta = std::fs::metadata(dir)
                .map_err(|e| untrusted(format!("cannot read {}: {e}", dir.display())))?;
            owned(dir, &meta)?;
        }
    }
    Ok(())
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

/// Where EL's `openmpi` package puts mpirun: the MPI implementations of Fedora and EL install
/// beside each other in %{_libdir}/NAME/bin, which environment modules
/// (`module load mpi/openmpi-x86_64`) put on a login shell's PATH, and no service's PATH names.
const EL_OPENMPI_BIN: &str = "/usr/lib64/openmpi/bin";

/// Why mpirun cannot run here, and what to do: `el_installed` when EL's package is installed
/// but off the agent's PATH.
fn mpirun_missing(el_installed: bool) -> String {
    if el_installed {
        // Not "not installed", which it is. Running it from there is not done yet: mpirun by
        // its path starts the other clients' orted from the same prefix, but the ranks'
        // programs and libraries would still be looked for on their PATH.
        format!(
            "mpirun is installed in {EL_OPENMPI_BIN} (EL's openmpi package, made for `module load \
             mpi/openmpi-x86_64`), which is not on the agent's PATH, and pvfs does not run it from there: use \
             launcher = \"agents\", or an Open MPI whose mpirun is on PATH (/usr/bin, /usr/local/bin)"
        )
    } else {
        "mpirun is not installed on this client: install Open MPI (apt-get install openmpi-bin, or dnf install \
         openmpi) on every client, or use launcher = \"agents\""
            .into()
    }
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
    // What runs is settled first (the program checked, IOR asked its version), so a refusal
    // leaves nothing behind.
    let hostfile_path: PathBuf = req.dir.join(HOSTFILE);
    let command = match command(&req, &hostfile_path).await {
        Ok(command) => command,
        Err(err) => return fail(err.to_string()).await,
    };
    // The real io500's ini, from the request's typed knobs.
    let ini = match (req.engine, &req.workload) {
        (Engine::Io500, Workload::Io500(p)) => {
            match pvfs_bench::io500::ini::ini(&p.options, &req.dir, req.drop_caches) {
                Ok(text) => Some(text),
                Err(err) => return fail(err.to_string()).await,
            }
        }
        _ => None,
    };
    // The run's directory is on the shared file system: made and written without following
    // symlinks, the hostfile through a random temporary name renamed into place.
    let hostfile = req.hostfile();
    let dir = match pvfs_engine::files::Dir::create_all(&req.dir) {
        Ok(dir) => dir,
        Err(err) => return fail(format!("cannot make the run's directory: {err}")).await,
    };
    if let Err(err) = dir.replace_file(HOSTFILE, hostfile.text.as_bytes(), 0o644) {
        return fail(format!("cannot write the MPI hostfile: {err}")).await;
    }
    if let Some(text) = ini
        && let Err(err) = dir.replace_file(IO500_INI, text.as_bytes(), 0o644)
    {
        return fail(format!("cannot write io500's ini file: {err}")).await;
    }
    if !crate::child::on_path(&command.program) {
        return fail(mpirun_missing(std::path::Path::new(EL_OPENMPI_BIN).join("mpirun").exists())).await;
    }
    // Last before anything starts, so that "IOR is not installed" is said first: the job's
    // writes must leave its file system room (`room`).
    if let Workload::Ior(p) = &req.workload
        && p.write
        && let Err(err) =
            crate::room::check(&req.dir, crate::room::ior_writes(p, req.tasks_per_client, req.ranks()))
    {
        tracing::warn!(dir = %req.dir.display(), error = %err, "benchmark refused: no room");
        return fail(err.to_string()).await;
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
                // io500's writes end at their stonewall (up to a day), not at a size: its
                // file system is watched every second and the job stopped short of filling it.
                if req.engine == Engine::Io500
                    && let Some(full) = crate::room::filling(&req.dir)
                {
                    tracing::warn!(dir = %req.dir.display(), error = %full, "io500 stopped: no room");
                    stop(&mut child).await;
                    return fail(full.to_string()).await;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// An older .deb (`/usr/bin/pvfs-agent` a link to `/usr/bin/pvfs`) and the tarball
    /// (`/usr/local/bin/pvfs-agent` the program itself) both start ranks as `pvfs-agent`; a
    /// `pvfs-agent` on PATH that is another program (a stale install) is not used.
    #[test]
    fn ranks_start_by_the_bare_name_only_when_path_finds_this_program() {
        let dir = tempfile::tempdir().unwrap();
        let (deb, tarball, stale) =
            (dir.path().join("usr/bin"), dir.path().join("usr/local/bin"), dir.path().join("old"));
        for d in [&deb, &tarball, &stale] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(deb.join("pvfs"), "binary").unwrap();
        std::os::unix::fs::symlink("pvfs", deb.join("pvfs-agent")).unwrap();
        std::fs::write(tarball.join("pvfs-agent"), "binary").unwrap();
        std::fs::write(stale.join("pvfs-agent"), "binary").unwrap();
        let path = |dirs: &[&Path]| Some(std::env::join_paths(dirs).unwrap());
        assert!(!by_name(path(&[&tarball, &deb]), &deb.join("pvfs")), "the first on PATH is another program");
        assert!(by_name(path(&[&deb, &tarball]), &deb.join("pvfs")));
        assert!(by_name(path(&[&tarball, &deb]), &tarball.join("pvfs-agent")));
        assert!(!by_name(path(&[&stale, &tarball]), &tarball.join("pvfs-agent")));
        assert!(!by_name(None, &tarball.join("pvfs-agent")));
    }

    #[test]
    fn mpi_ssh_pins_the_key_and_known_hosts_strictly() {
        let args = mpi_ssh_args();
        assert_eq!(
            args,
            "-i /etc/pvfs/mpi/id_ed25519 -o IdentitiesOnly=yes -o UserKnownHostsFile=/etc/pvfs/mpi/known_hosts \
             -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o BatchMode=yes"
        );
    }

    #[tokio::test]
    async fn mpi_ssh_without_the_installed_key_is_refused_naming_the_file_and_the_fix() {
        if Path::new(MPI_KEY).exists() {
            return; // This machine is a client with the key: nothing to refuse.
        }
        let req = LaunchRequest {
            engine: Engine::Builtin,
            workload: pvfs_bench::params::Preset::Throughput.workload(),
            dir: "/mnt/gv0/run".into(),
            clients: vec![("a".into(), "10.0.0.1".into()), ("b".into(), "10.0.0.2".into())],
            tasks_per_client: 1,
            mpi_ssh: true,
            io500_program: None,
            drop_caches: false,
        };
        let err = command(&req, Path::new("/mnt/gv0/run/mpi-hostfile")).await.unwrap_err().to_string();
        assert!(err.contains(MPI_KEY) && err.contains("pvfsctl up"), "{err}");
        let req = LaunchRequest { mpi_ssh: false, ..req };
        let command = command(&req, Path::new("/mnt/gv0/run/mpi-hostfile")).await.unwrap();
        assert!(!command.args.contains(&"plm_rsh_args".to_owned()), "{command}");
    }

    /// Only a program no one else could have put there is run: under a root-owned sticky
    /// directory (/tmp) a private directory is fine; a directory or file others can write is not.
    #[test]
    fn a_program_is_trusted_only_where_no_one_else_can_change_it() {
        use std::os::unix::fs::PermissionsExt;
        let mode =
            |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        let tmp = tempfile::Builder::new().prefix("pvfs-trust").tempdir_in("/tmp").unwrap();
        mode(tmp.path(), 0o755);
        let program = tmp.path().join("io500");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        mode(&program, 0o755);
        trusted_program(&program).expect("a private directory under /tmp");
        mode(&program, 0o775);
        let err = trusted_program(&program).unwrap_err().to_string();
        assert!(err.contains("can be written by its group or others (mode 775)"), "{err}");
        mode(&program, 0o644);
        assert!(trusted_program(&program).unwrap_err().to_string().contains("not executable"));
        mode(&program, 0o755);
        mode(tmp.path(), 0o777);
        let err = trusted_program(&program).unwrap_err().to_string();
        assert!(err.contains(&format!("{} can be written", tmp.path().display())), "{err}");
        mode(tmp.path(), 0o755);
    }

    /// EL's openmpi package is installed off PATH: the message says so, not "not installed".
    #[test]
    fn mpirun_off_path_is_named_where_el_installs_it() {
        assert!(mpirun_missing(false).starts_with("mpirun is not installed on this client"));
        let el = mpirun_missing(true);
        assert!(
            el.starts_with("mpirun is installed in /usr/lib64/openmpi/bin (EL's openmpi package"),
            "{el}"
        );
    }
}
