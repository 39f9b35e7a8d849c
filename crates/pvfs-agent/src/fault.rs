//! Faults a benchmark injects on this node (`pvfsctl bench --fault`), and their undoing.
//!
//! Three kinds. The node cut off the network for a while ([`network`]: one interface down, and
//! back up by the agent itself). A service stopped as an operator stops it (`systemctl stop`,
//! a unit pvfs manages) and started again. And a GlusterFS brick killed as a crash kills it (SIGKILL to its `glusterfsd`,
//! found by glusterd's pid file and checked by its command line, as the sampler finds it:
//! `pvfs_metrics::gluster::local_bricks`), and brought back as an operator does (`gluster
//! volume start VOL force`, which starts the volume's bricks that are not running). Both only
//! where this node's policy file grants `faults = true`, and only for a brick by its data path
//! (`Policy::check_fault_brick`): an agent that is root everywhere never kills a process on a
//! coordinator's word otherwise.

pub mod network;

use pvfs_host::{Command, Root, Runner};
use pvfs_policy::{Policy, PolicyError};
use std::time::Duration;

/// How long a killed brick's process is waited for to be gone.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// glusterd starts a volume's bricks in seconds; beyond this something is wrong.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a brick `volume start force` started is waited for to run (glusterd answers once
/// it has spawned the brick, which then writes its pid file and starts serving).
const RUNNING_WITHIN: Duration = Duration::from_secs(10);

/// Refuses what would act on this machine (`doing`: "stop or start the machine's glusterd")
/// from an agent that reads another root than `/` (`--root`: tests, a chroot inspected): its
/// view is of that root, what it would change is the machine's.
pub(crate) fn on_this_machine(root: &Root, doing: &str) -> Result<(), String> {
    if root.base() == std::path::Path::new("/") {
        return Ok(());
    }
    Err(format!(
        "this agent reads {} as its root (--root), not this machine's: it does not {doing}",
        root.base().display()
    ))
}

/// `t` in nanoseconds since the Unix epoch (0 before it).
pub fn unix_ns(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos() as u64
}

/// A fault that was not injected or not undone.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    #[error(transparent)]
    Refused(#[from] PolicyError),
    /// No such brick runs here (already down, another node's, a typo).
    #[error("no running brick {path} of volume {volume} on this node{seen}")]
    NoBrick { volume: String, path: String, seen: String },
    #[error("{0}")]
    Failed(String),
}

/// Kills the brick `path` of `volume`: its `glusterfsd` gets SIGKILL, and is waited for (bounded)
/// to be gone. Returns what was done.
pub async fn kill_brick(
    root: &Root,
    policy: &Policy,
    volume: &str,
    path: &str,
) -> Result<String, FaultError> {
    policy.check_fault_brick(volume, path)?;
    let bricks = pvfs_metrics::gluster::local_bricks(root);
    let Some(pid) = bricks.iter().find(|b| b.volume == volume && b.path == path).and_then(|b| b.pid) else {
        let running: Vec<String> =
            bricks.iter().filter(|b| b.pid.is_some()).map(|b| format!("{}:{}", b.volume, b.path)).collect();
        let seen =
            if running.is_empty() { String::new() } else { format!(" (running: {})", running.join(", ")) };
        return Err(FaultError::NoBrick { volume: volume.to_owned(), path: path.to_owned(), seen });
    };
    let target = nix::unistd::Pid::from_raw(
        i32::try_from(pid).map_err(|_| FaultError::Failed(format!("pid {pid} is not a process id")))?,
    );
    // The pid was read from glusterd's pid file and checked against the process's command
    // line just above; between the two a brick that died and a pid reused within
    // microseconds is not a case a benchmark's fault needs to close.
    nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGKILL)
        .map_err(|e| FaultError::Failed(format!("kill -9 {pid} (brick {volume}:{path}): {e}")))?;
    let proc = format!("/proc/{pid}/cmdline");
    let deadline = tokio::time::Instant::now() + GONE_WITHIN;
    // A killed process stays in /proc as a zombie until its parent (glusterd's, or init)
    // reaps it; an empty command line says it has died.
    while root.read_to_string(&proc).is_ok_and(|c| !c.is_empty()) {
        if tokio::time::Instant::now() >= deadline {
            return Err(FaultError::Failed(format!(
                "brick {volume}:{path}'s glusterfsd {pid} still runs {GONE_WITHIN:?} after SIGKILL"
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(format!("killed glusterfsd {pid} of brick {volume}:{path}"))
}

/// Brings the killed brick back: `gluster volume start VOL force`, then checks it runs again.
pub async fn restart_brick(
    root: &Root,
    runner: &impl Runner,
    policy: &Policy,
    volume: &str,
    path: &str,
) -> Result<String, FaultError> {
    policy.check_fault_brick(volume, path)?;
    // Asked again while glusterd is busy: the brick's death sets off other transactions in the
    // pool (the CI's e2e once saw "Another transaction is in progress" here).
    let command = pvfs_steps::gluster_command(&["--mode=script", "volume", "start", volume, "force"])
        .timeout(START_TIMEOUT);
    let shown = command.to_string();
    let out = pvfs_host::run_while_busy(runner, &command, true)
        .await
        .map_err(|e| FaultError::Failed(e.to_string()))?;
    if !out.success() {
        let said = if out.stderr.trim().is_empty() { out.stdout.trim() } else { out.stderr.trim() };
        return Err(FaultError::Failed(format!("{shown} failed ({:?}): {said}", out.code)));
    }
    let deadline = tokio::time::Instant::now() + RUNNING_WITHIN;
    loop {
        let back = pvfs_metrics::gluster::local_bricks(root)
            .into_iter()
            .find(|b| b.volume == volume && b.path == path)
            .and_then(|b| b.pid);
        if let Some(pid) = back {
            return Ok(format!("{shown}: brick {volume}:{path} runs again (glusterfsd {pid})"));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(FaultError::Failed(format!(
                "{shown} succeeded but brick {volume}:{path} does not run {RUNNING_WITHIN:?} later"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `heal info summary` asks every brick; on a large volume it takes a while.
const HEAL_INFO_TIMEOUT: Duration = Duration::from_secs(60);

/// How far `volume`'s heal has got: `gluster volume heal VOL info summary --xml`, each brick's
/// entries pending, in split-brain and possibly healing. Read-only (and so, like a brick's
/// restart, also asked of an agent on another root: the `gluster` it finds answers), but it
/// runs gluster on a coordinator's word, so only where faults are granted (their measure is
/// what asks).
pub async fn heal_info(
    runner: &impl Runner,
    policy: &Policy,
    volume: &str,
) -> Result<(String, Vec<pvfs_metrics::gluster::HealCount>), FaultError> {
    policy.check_fault_heal(volume)?;
    let command =
        pvfs_steps::gluster_command(&["--mode=script", "--xml", "volume", "heal", volume, "info", "summary"])
            .timeout(HEAL_INFO_TIMEOUT);
    let shown = command.to_string();
    let out = pvfs_host::run_while_busy(runner, &command, false)
        .await
        .map_err(|e| FaultError::Failed(e.to_string()))?;
    // gluster answers in XML, with its own return code inside, whatever its exit status.
    let bricks = pvfs_metrics::gluster::parse_heal_summary(&out.stdout).map_err(|e| {
        FaultError::Failed(format!("{shown} ({:?}): {e}; it said: {}", out.code, out.stderr.trim()))
    })?;
    let entries: u64 = bricks.iter().filter_map(|b| b.total).sum();
    Ok((format!("{entries} entries to heal on {volume}"), bricks))
}

/// How long `systemctl` may take to stop or start a file system's daemon.
const SYSTEMCTL_TIMEOUT: Duration = Duration::from_secs(120);

/// Stops `unit` (`systemctl stop`) and checks it is no longer active; `start` starts it again
/// and checks it is. Only a unit the policy lets a fault stop, and only on this machine: an
/// agent reading another root (`--root`) never acts on the machine's services.
pub async fn service(
    root: &Root,
    runner: &impl Runner,
    policy: &Policy,
    unit: &str,
    start: bool,
) -> Result<String, FaultError> {
    policy.check_fault_service(unit)?;
    on_this_machine(root, &format!("stop or start the machine's {unit}")).map_err(FaultError::Failed)?;
    let verb = if start { "start" } else { "stop" };
    let command = Command::new("systemctl").args([verb, unit]).timeout(SYSTEMCTL_TIMEOUT);
    let shown = command.to_string();
    let out = runner.run_action(&command).await.map_err(|e| FaultError::Failed(e.to_string()))?;
    if !out.success() {
        return Err(FaultError::Failed(format!("{shown} failed ({:?}): {}", out.code, out.stderr.trim())));
    }
    // `is-active` exits 0 only for an active unit (and prints its state either way).
    let state = runner
        .run(&Command::new("systemctl").args(["is-active", unit]).timeout(SYSTEMCTL_TIMEOUT))
        .await
        .map_err(|e| FaultError::Failed(e.to_string()))?;
    let now = state.stdout.trim();
    if state.success() != start {
        return Err(FaultError::Failed(format!("{shown} succeeded, but {unit} is {now} after it")));
    }
    Ok(format!("{shown}: {unit} is {now}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_host::RecordedRunner;

    /// A root whose /run/gluster/vols/gv0 names a brick process: `pid`'s command line as
    /// glusterd starts one.
    fn brick_root(pid: u32) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let put = |path: &str, bytes: &[u8]| {
            let at = dir.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, bytes).unwrap();
        };
        put("/run/gluster/vols/gv0/h-bricks-b1.pid", format!("{pid}\n").as_bytes());
        put(
            &format!("/proc/{pid}/cmdline"),
            b"/usr/sbin/glusterfsd\0-s\0h\0--volfile-id\0gv0.h.bricks-b1\0-p\0/var/run/gluster/vols/gv0/h-bricks-b1.pid\0--brick-name\0/bricks/b1\0",
        );
        dir
    }

    fn granted() -> Policy {
        Policy::new(pvfs_policy::Site { faults: true, ..pvfs_policy::Site::default() }).unwrap()
    }

    #[tokio::test]
    async fn a_brick_is_killed_only_with_the_grant_and_only_if_it_runs() {
        // A real process stands in for the brick: what is killed is what the pid file names.
        let mut child = std::process::Command::new("sleep").arg("60").spawn().unwrap();
        let dir = brick_root(child.id());
        let root = Root::at(dir.path());
        let refused = kill_brick(&root, &Policy::default(), "gv0", "/bricks/b1").await.unwrap_err();
        assert!(matches!(&refused, FaultError::Refused(e) if e.rule == "faults-off"), "{refused}");
        let missing = kill_brick(&root, &granted(), "gv0", "/bricks/b2").await.unwrap_err();
        assert_eq!(
            missing.to_string(),
            "no running brick /bricks/b2 of volume gv0 on this node (running: gv0:/bricks/b1)"
        );
        assert!(child.try_wait().unwrap().is_none(), "nothing killed yet");
        // The stand-in's /proc entry is the test's file: it says the process is gone once
        // emptied, as the kernel's does for a zombie.
        let cmdline = dir.path().join(format!("proc/{}/cmdline", child.id()));
        let emptier = {
            let cmdline = cmdline.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                std::fs::write(cmdline, b"").unwrap();
            })
        };
        let done = kill_brick(&root, &granted(), "gv0", "/bricks/b1").await.unwrap();
        emptier.await.unwrap();
        assert_eq!(done, format!("killed glusterfsd {} of brick gv0:/bricks/b1", child.id()));
        let status = child.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9), "SIGKILL, as a crash");
    }

    /// A service is stopped and started by systemctl and checked with `is-active`; a unit the
    /// policy does not let a fault stop, or an agent on another root, runs nothing.
    #[tokio::test]
    async fn a_service_is_stopped_and_started_and_checked() {
        let runner = RecordedRunner::new().record("systemctl stop glusterd", 0, "", "").record(
            "systemctl is-active glusterd",
            3,
            "inactive\n",
            "",
        );
        let done = service(&Root::system(), &runner, &granted(), "glusterd", false).await.unwrap();
        assert_eq!(done, "systemctl stop glusterd: glusterd is inactive");
        let runner = RecordedRunner::new().record("systemctl start glusterd", 0, "", "").record(
            "systemctl is-active glusterd",
            0,
            "active\n",
            "",
        );
        let done = service(&Root::system(), &runner, &granted(), "glusterd", true).await.unwrap();
        assert_eq!(done, "systemctl start glusterd: glusterd is active");
        // Started but not active: said, not taken for done.
        let failing = RecordedRunner::new().record("systemctl start glusterd", 0, "", "").record(
            "systemctl is-active glusterd",
            3,
            "failed\n",
            "",
        );
        let err = service(&Root::system(), &failing, &granted(), "glusterd", true).await.unwrap_err();
        assert!(err.to_string().ends_with("glusterd is failed after it"), "{err}");
        let none = RecordedRunner::new();
        assert!(service(&Root::system(), &none, &granted(), "sshd", false).await.is_err());
        assert!(service(&Root::system(), &none, &Policy::default(), "glusterd", false).await.is_err());
        let dir = tempfile::tempdir().unwrap();
        let err = service(&Root::at(dir.path()), &none, &granted(), "glusterd", false).await.unwrap_err();
        assert!(err.to_string().contains("--root"), "{err}");
        assert!(none.calls().is_empty(), "{:?}", none.calls());
    }

    /// A volume's heal as gluster's XML tells it (a real GlusterFS 10.3 answer), summed.
    #[tokio::test]
    async fn a_volumes_heal_is_asked_of_gluster_only_with_the_grant() {
        let xml = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../pvfs-metrics/testdata/gluster/heal-summary-after-restart.xml"),
        )
        .unwrap();
        let runner = RecordedRunner::new().record(
            "gluster --mode=script --xml volume heal gv0 info summary",
            0,
            &xml,
            "",
        );
        let (done, bricks) = heal_info(&runner, &granted(), "gv0").await.unwrap();
        let expected = pvfs_metrics::gluster::parse_heal_summary(&xml).unwrap();
        let entries: u64 = expected.iter().filter_map(|b| b.total).sum();
        assert_eq!(bricks, expected);
        assert_eq!(done, format!("{entries} entries to heal on gv0"));
        let none = RecordedRunner::new();
        assert!(heal_info(&none, &Policy::default(), "gv0").await.is_err());
        assert!(heal_info(&none, &granted(), "gv0;reboot").await.is_err());
        assert!(none.calls().is_empty());
        let garbled = RecordedRunner::new().record(
            "gluster --mode=script --xml volume heal gv0 info summary",
            1,
            "",
            "Connection failed. Please check if gluster daemon is operational.\n",
        );
        let err = heal_info(&garbled, &granted(), "gv0").await.unwrap_err();
        assert!(err.to_string().contains("gluster daemon is operational"), "{err}");
    }

    #[tokio::test]
    async fn a_brick_is_brought_back_by_gluster_and_checked() {
        let dir = brick_root(std::process::id());
        let root = Root::at(dir.path());
        let runner = RecordedRunner::new().record(
            "gluster --mode=script volume start gv0 force",
            0,
            "volume start: gv0: success\n",
            "",
        );
        let done = restart_brick(&root, &runner, &granted(), "gv0", "/bricks/b1").await.unwrap();
        assert!(
            done.ends_with(&format!("brick gv0:/bricks/b1 runs again (glusterfsd {})", std::process::id())),
            "{done}"
        );
        let failing = RecordedRunner::new().record(
            "gluster --mode=script volume start gv0 force",
            1,
            "",
            "volume start: gv0: failed: Volume gv0 does not exist\n",
        );
        let err = restart_brick(&root, &failing, &granted(), "gv0", "/bricks/b1").await.unwrap_err();
        assert!(err.to_string().contains("Volume gv0 does not exist"), "{err}");
        assert_eq!(failing.calls().len(), 1, "another failure is not asked again");
        // glusterd busy with another node's transaction (glusterd-mgmt.c's words, as the CI's
        // e2e met them): asked again until it answers.
        let busy = RecordedRunner::new()
            .record(
                "gluster --mode=script volume start gv0 force",
                1,
                "",
                "volume start: gv0: failed: Another transaction is in progress. Please try again after some time.\n",
            )
            .record("gluster --mode=script volume start gv0 force", 0, "volume start: gv0: success\n", "");
        restart_brick(&root, &busy, &granted(), "gv0", "/bricks/b1").await.unwrap();
        assert_eq!(busy.calls().len(), 2);
        assert!(restart_brick(&root, &runner, &Policy::default(), "gv0", "/bricks/b1").await.is_err());
    }
}
