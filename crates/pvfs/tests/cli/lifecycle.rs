//! Stopping the agent while a step acts on a real device: the step finishes (or, if the
//! agent is made to exit at once, its command finishes without it), and the next run finds
//! the node converged. A real `pvfs-agent` process, a real loop device, the real `mkfs.ext4`
//! behind a slow stand-in, and the coordinator's own `converge` over mutual TLS.

use crate::util::{AgentProcess, TestDir, cluster_file};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pvfs_coord::converge::{Options, UpEvent, UpRecap, converge};
use pvfs_coord::{ClientSecurity, Dialer};
use pvfs_plan::{Plan, Unit};
use pvfs_steps::{Mkfs, Outcome, Step, StepEvent};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A loop device over a zeroed 64 MiB file, detached on drop.
struct Loop {
    device: String,
}

impl Loop {
    fn new(dir: &TestDir) -> Loop {
        let backing = dir.path().join("disk.img");
        std::fs::File::create(&backing).unwrap().set_len(64 << 20).unwrap();
        let out = Command::new("losetup").args(["--find", "--show"]).arg(&backing).output().unwrap();
        assert!(
            out.status.success(),
            "losetup (these tests need root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Loop { device: String::from_utf8(out.stdout).unwrap().trim().to_owned() }
    }

    /// What `blkid -p` says the device holds now ("" for nothing).
    fn fstype(&self) -> String {
        let out =
            Command::new("blkid").args(["-p", "-o", "value", "-s", "TYPE", &self.device]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.device]).status();
    }
}

/// The real mkfs.ext4, wherever this system keeps it.
fn real_mkfs() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|dir| dir.join("mkfs.ext4"))
        .find(|p| p.is_file())
        .expect("mkfs.ext4 (e2fsprogs) is installed")
}

/// A directory whose `mkfs.ext4` is a stand-in written by this test (not e2fsprogs'): it
/// writes its pid to `pidfile`, sleeps 3 s so the agent can be stopped while it runs, then
/// execs the real mkfs.ext4 with the same arguments (same pid).
fn slow_mkfs(dir: &TestDir, pidfile: &Path) -> PathBuf {
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\n# Stand-in for mkfs.ext4, written by pvfs's lifecycle test: slow, then the real one.\n\
         echo $$ > {pid}\nsleep 3\nexec {real} \"$@\"\n",
        pid = pidfile.display(),
        real = real_mkfs().display()
    );
    let path = bin.join("mkfs.ext4");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin
}

/// `up` of one unit (mkfs ext4 on `device`) on the agent at `port`, the way `pvfsctl up` runs
/// units: `converge` over mutual TLS with the coordinator's certificate.
fn up(
    dir: &TestDir,
    port: u16,
    device: &str,
) -> impl Future<Output = (UpRecap, Vec<UpEvent>)> + Send + 'static {
    let path = cluster_file(dir, &[("n1", format!("127.0.0.1:{port}"))]);
    let cluster = pvfs_config::load(&path).unwrap();
    let step = Step::Mkfs(Mkfs {
        device: device.to_owned(),
        fstype: "ext4".into(),
        options: vec![],
        label: Some("pvfs-t".into()),
        wipe: false,
    });
    let unit = Unit { id: 0, node: "n1".into(), label: "disk".into(), steps: vec![step], after: vec![] };
    let plan = Plan { units: vec![unit] };
    let material = pvfs_tls::load(&dir.path().join("tls"), "pvfsctl").unwrap();
    let dialer = Dialer::new(ClientSecurity::MutualTls(material), Duration::from_secs(5));
    async move {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let recap = converge(&cluster, &plan, &dialer, &Options::default(), tx).await;
        let mut events = Vec::new();
        while let Ok(event) = rx.try_recv() {
            events.push(event);
        }
        (recap, events)
    }
}

/// The outcome of the unit's one step, as the coordinator heard it.
fn step_outcome(events: &[UpEvent]) -> Option<Outcome> {
    events.iter().find_map(|e| match e {
        UpEvent::Step { event: StepEvent::Done { outcome, .. }, .. } => Some(outcome.clone()),
        _ => None,
    })
}

/// Waits (bounded) until `pidfile` names a process: the stand-in has started.
fn wait_for_pid(pidfile: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(pid) = std::fs::read_to_string(pidfile).ok().and_then(|s| s.trim().parse().ok()) {
            return pid;
        }
        assert!(Instant::now() < deadline, "the stand-in mkfs.ext4 did not start within 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is a live process (not gone, not a zombie waiting to be reaped).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[test]
fn sigterm_mid_mkfs_lets_the_step_finish_and_report_then_the_next_run_is_in_sync() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let disk = Loop::new(&dir);
    let pidfile = dir.path().join("mkfs.pid");
    let bin = slow_mkfs(&dir, &pidfile);
    let mut agent = AgentProcess::start_with_path(&dir, "n1", "127.0.0.1", Some(&bin));
    let rt = runtime();
    let run = rt.spawn(up(&dir, agent.port, &disk.device));

    let mkfs = wait_for_pid(&pidfile);
    assert!(running(mkfs));
    assert_eq!(disk.fstype(), "", "stopped before mkfs wrote anything");
    let status = agent.terminate();
    assert!(status.success(), "{status}");
    // The agent drained: by the time it exited, mkfs had finished and been verified.
    assert!(!running(mkfs), "the agent exited while mkfs was still running");
    assert_eq!(disk.fstype(), "ext4");

    // The coordinator, connected throughout, heard the step's result.
    let (recap, events) = rt.block_on(run).unwrap();
    assert!(!recap.run.failed(), "{:?}", recap.run.failures);
    assert_eq!(recap.run.changed(), 1);
    let Some(Outcome::Changed { diff }) = step_outcome(&events) else { panic!("{events:?}") };
    assert!(diff.iter().any(|d| d.contains("has no file system")), "{diff:?}");

    // The next run, on a fresh agent, finds the device as the step wants it.
    drop(agent);
    std::fs::remove_file(&pidfile).unwrap();
    let agent = AgentProcess::start_with_path(&dir, "n1", "127.0.0.1", Some(&bin));
    let (recap, events) = rt.block_on(up(&dir, agent.port, &disk.device));
    assert!(!recap.run.failed(), "{:?}", recap.run.failures);
    assert_eq!((recap.run.nodes[0].1.ok, recap.run.changed()), (1, 0));
    assert_eq!(step_outcome(&events), Some(Outcome::Ok { detail: None }));
    assert!(!pidfile.exists(), "an in-sync device is not formatted again");
}

#[test]
fn a_second_sigterm_exits_at_once_and_mkfs_still_runs_to_its_end() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let disk = Loop::new(&dir);
    let pidfile = dir.path().join("mkfs.pid");
    let bin = slow_mkfs(&dir, &pidfile);
    let mut agent = AgentProcess::start_with_path(&dir, "n1", "127.0.0.1", Some(&bin));
    let rt = runtime();
    let run = rt.spawn(up(&dir, agent.port, &disk.device));

    let mkfs = wait_for_pid(&pidfile);
    // mkfs leads a session of its own, not the agent's (issue 24): field 6 of its stat.
    let session = |pid: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat.rsplit_once(") ").unwrap().1.split(' ').nth(3).unwrap().to_owned()
    };
    assert_eq!(session(mkfs as u32), mkfs.to_string());
    assert_ne!(session(mkfs as u32), session(agent.child.id()));
    let pid = Pid::from_raw(agent.child.id() as i32);
    kill(pid, Signal::SIGTERM).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    kill(pid, Signal::SIGTERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = agent.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "a second SIGTERM must exit at once");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130), "{status}");
    // The agent is gone; its mkfs is not: an action is never killed by the agent.
    assert!(running(mkfs), "mkfs died with the agent");
    let deadline = Instant::now() + Duration::from_secs(60);
    while running(mkfs) {
        assert!(Instant::now() < deadline, "mkfs did not finish within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(disk.fstype(), "ext4", "mkfs ran to its end without the agent");

    // The coordinator lost the agent mid-step and says so; the next run finds the work done.
    let (recap, _) = rt.block_on(run).unwrap();
    assert!(
        recap.run.failures.iter().any(|f| f.contains("lost the agent during step 1 of 1")
            && f.contains("broke mid-call")
            && f.contains("journalctl -u pvfs-agent")
            && !f.contains("answered Unknown")),
        "{:?}",
        recap.run.failures
    );
    drop(agent);
    std::fs::remove_file(&pidfile).unwrap();
    let agent = AgentProcess::start_with_path(&dir, "n1", "127.0.0.1", Some(&bin));
    let (recap, events) = rt.block_on(up(&dir, agent.port, &disk.device));
    assert!(!recap.run.failed(), "{:?}", recap.run.failures);
    assert_eq!(step_outcome(&events), Some(Outcome::Ok { detail: None }));
    assert!(!pidfile.exists(), "an in-sync device is not formatted again");
}

#[test]
fn sigterm_after_the_coordinator_left_still_waits_for_the_step() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let disk = Loop::new(&dir);
    let pidfile = dir.path().join("mkfs.pid");
    let bin = slow_mkfs(&dir, &pidfile);
    let mut agent = AgentProcess::start_with_path(&dir, "n1", "127.0.0.1", Some(&bin));
    let rt = runtime();
    let run = rt.spawn(up(&dir, agent.port, &disk.device));
    let mkfs = wait_for_pid(&pidfile);

    // The coordinator goes away (its connection with it); no stream holds the agent open now.
    run.abort();
    assert!(rt.block_on(run).unwrap_err().is_cancelled());
    let status = agent.terminate();
    assert!(status.success(), "{status}");
    // Still drained: the unit's task was waited for, not dropped with mkfs under it.
    assert!(!running(mkfs), "the agent exited while mkfs was still running");
    assert_eq!(disk.fstype(), "ext4");
}

/// A node whose pinned kernel is installed but not running: the step says it must boot into
/// it, the rest of its unit and its other units stop, the recap names the next step, and
/// nothing counts as failed. A real agent process; `rpm` is a stand-in on its PATH that lists
/// the running kernel (from /proc) and a second one, oldest first, as `rpm -q --qf
/// '%{EVR}.%{ARCH}\n' kernel` prints them.
#[test]
fn a_kernel_installed_but_not_running_stops_the_node_with_the_next_step() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let rpm = bin.join("rpm");
    std::fs::write(
        &rpm,
        "#!/bin/sh\n# Stand-in for rpm's kernel query, written by pvfs's lifecycle test.\n\
         cat /proc/sys/kernel/osrelease\necho 9.9.9-1.el7_lustre.x86_64\n",
    )
    .unwrap();
    std::fs::set_permissions(&rpm, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let running = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap().trim().to_owned();
    let agent = AgentProcess::start_with_path(&dir, "n1", "127.0.0.1", Some(&bin));

    let path = cluster_file(&dir, &[("n1", format!("127.0.0.1:{}", agent.port))]);
    let cluster = pvfs_config::load(&path).unwrap();
    let kernel = Step::Packages(pvfs_steps::Packages {
        manager: pvfs_steps::PackageManager::Yum,
        apt: vec![],
        rpm: vec![pvfs_steps::Package { name: "kernel".into(), version: Some("9.9.9-1.el7_lustre".into()) }],
        repos: vec![],
    });
    let unit = |id, after| Unit {
        id,
        node: "n1".into(),
        label: format!("u{id}"),
        steps: vec![kernel.clone(), kernel.clone()],
        after,
    };
    let plan = Plan { units: vec![unit(0, vec![]), unit(1, vec![0])] };
    let material = pvfs_tls::load(&dir.path().join("tls"), "pvfsctl").unwrap();
    let dialer = Dialer::new(ClientSecurity::MutualTls(material), Duration::from_secs(5));
    let rt = runtime();
    let (recap, events) = rt.block_on(async move {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let recap = converge(&cluster, &plan, &dialer, &Options::default(), tx).await;
        let mut events = Vec::new();
        while let Ok(event) = rx.try_recv() {
            events.push(event);
        }
        (recap, events)
    });

    assert_eq!(
        step_outcome(&events),
        Some(Outcome::MustBoot { kernel: "9.9.9-1.el7_lustre.x86_64".into(), running: running.clone() })
    );
    assert!(recap.run.failures.is_empty(), "{:?}", recap.run.failures);
    assert!(!recap.converged());
    assert_eq!(recap.boots.len(), 1);
    assert_eq!(
        recap.boots[0].next_step(),
        format!(
            "reboot n1 into 9.9.9-1.el7_lustre.x86_64 (it runs {running}), then run pvfsctl up again \
             (or let it: reboot = true on the node, or pvfsctl up --allow-reboot)"
        )
    );
    let skipped: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            UpEvent::UnitSkipped { label, reason, .. } if label == "u1" => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(skipped, ["n1 must boot into kernel 9.9.9-1.el7_lustre.x86_64 first"]);
    // The unit that met the kernel is reported stopped, not done and not failed.
    assert!(
        events.iter().any(|e| matches!(e, UpEvent::UnitStopped { label, kernel, .. }
            if label == "u0" && kernel == "9.9.9-1.el7_lustre.x86_64")),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| matches!(e, UpEvent::UnitDone { .. })), "{events:?}");
    let c = recap.run.nodes[0].1;
    assert_eq!((c.failed, c.skipped), (0, 3), "the unit's second step and the other unit's two");
}
