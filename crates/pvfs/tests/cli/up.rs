//! `pvfsctl up` on a local-kind cluster of real agents over mutual TLS.

use crate::util::{AgentProcess, TestDir, text};
use serde_json::Value;

/// Two agents, each a server and a client of a local cluster living in the test's dir.
fn local_cluster(dir: &TestDir, agents: &[&AgentProcess]) -> String {
    let mut toml = format!(
        "[cluster]\nname = \"t\"\nkind = \"local\"\n[local]\nmount = \"{0}/mnt\"\ntargets = \"{0}/targets\"\n",
        dir.path().display()
    );
    for (i, agent) in agents.iter().enumerate() {
        toml += &format!(
            "[[node]]\nname = \"n{}\"\naddress = \"127.0.0.1:{}\"\nroles = [\"server\", \"client\"]\n",
            i + 1,
            agent.port
        );
    }
    dir.write("cluster.toml", &toml).to_string_lossy().into_owned()
}

fn events(stdout: &[u8]) -> Vec<Value> {
    text(stdout).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn recap_counts(events: &[Value], field: &str) -> Vec<u64> {
    let recap = events.last().unwrap();
    assert_eq!(recap["event"], "recap", "{recap}");
    recap["nodes"].as_array().unwrap().iter().map(|n| n[field].as_u64().unwrap()).collect()
}

#[test]
fn plan_changes_nothing_up_converges_and_a_second_up_changes_nothing() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    dir.issue_agent("n2", "127.0.0.1");
    let (a1, a2) =
        (AgentProcess::start(&dir, "n1", "127.0.0.1"), AgentProcess::start(&dir, "n2", "127.0.0.1"));
    let cluster = local_cluster(&dir, &[&a1, &a2]);

    let plan = dir.ctl(&["up", &cluster, "--plan"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan.stderr));
    let shown = text(&plan.stdout);
    assert!(shown.contains("directory ") && shown.contains("would change"), "{shown}");
    assert!(shown.contains("$ mkdir -p -m 755 "), "the plan shows the exact actions: {shown}");
    assert!(!dir.path().join("targets").exists(), "--plan created the targets");
    assert!(!dir.path().join("mnt").exists(), "--plan created the mount");

    let up = dir.ctl(&["up", &cluster, "--json"]);
    assert_eq!(up.status.code(), Some(0), "{}", text(&up.stderr));
    let first = events(&up.stdout);
    assert_eq!(recap_counts(&first, "failed"), [0, 0]);
    assert!(recap_counts(&first, "changed").iter().sum::<u64>() >= 5, "{first:?}");
    let format = std::fs::read_to_string(dir.path().join("targets/n2/format.conf")).unwrap();
    assert_eq!(format, "# pvfs local target\ncluster = t\nnode = n2\n");
    // Every step reports started, then done; targets finish before any mount starts.
    let order: Vec<(String, String)> = first
        .iter()
        .filter(|e| e["event"] == "unit_started" || e["event"] == "unit_done")
        .map(|e| (e["event"].as_str().unwrap().to_owned(), e["label"].as_str().unwrap().to_owned()))
        .collect();
    let last_target_done = order.iter().rposition(|(e, l)| e == "unit_done" && l == "target").unwrap();
    let first_mount_start = order.iter().position(|(e, l)| e == "unit_started" && l == "mount").unwrap();
    assert!(last_target_done < first_mount_start, "{order:?}");

    let again = dir.ctl(&["up", &cluster, "--json"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    let second = events(&again.stdout);
    assert_eq!(recap_counts(&second, "changed"), [0, 0]);
    assert_eq!(recap_counts(&second, "ok"), [4, 4]);
    let human = dir.ctl(&["up", &cluster]);
    assert!(text(&human.stdout).contains("n1  ok=4 changed=0 failed=0 skipped=0"), "{}", text(&human.stdout));
}

#[test]
fn a_failure_names_node_step_and_cause_skips_dependents_and_a_rerun_resumes() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    dir.issue_agent("n2", "127.0.0.1");
    let (a1, a2) =
        (AgentProcess::start(&dir, "n1", "127.0.0.1"), AgentProcess::start(&dir, "n2", "127.0.0.1"));
    let cluster = local_cluster(&dir, &[&a1, &a2]);
    // A file where n2's target directory should be: pvfs will not move it away.
    std::fs::create_dir_all(dir.path().join("targets")).unwrap();
    dir.write("targets/n2", "not a directory\n");

    let up = dir.ctl(&["up", &cluster]);
    assert_eq!(up.status.code(), Some(1));
    let (stdout, stderr) = (text(&up.stdout), text(&up.stderr));
    let target = dir.path().join("targets/n2");
    assert!(
        stderr.contains(&format!(
            "error: n2 (target): step 1 (directory {}) failed: refusing: {} exists and is not a directory; move it away, then run again",
            target.display(),
            target.display()
        )),
        "{stderr}"
    );
    // n1's own target is made; every mount waits for all targets, so none is attempted.
    assert!(dir.path().join("targets/n1/format.conf").exists());
    assert!(stdout.contains("[n1] mount: skipped, depends on n2 target, which did not succeed"), "{stdout}");
    assert!(stdout.contains("n2  ok=0 changed=0 failed=1 skipped=3"), "{stdout}");
    assert!(stdout.contains("n1  ok=0 changed=2 failed=0 skipped=2"), "{stdout}");
    assert!(!dir.path().join("mnt").exists());

    std::fs::remove_file(&target).unwrap();
    let rerun = dir.ctl(&["up", &cluster, "--json"]);
    assert_eq!(rerun.status.code(), Some(0), "{}{}", text(&rerun.stderr), text(&rerun.stdout));
    let events = events(&rerun.stdout);
    // n1's target was kept from the first run: only n2's target and the mounts change.
    let changed: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "step_done" && e["status"] == "changed")
        .map(|e| format!("{} {}", e["node"].as_str().unwrap(), e["kind"].as_str().unwrap()))
        .collect();
    assert!(!changed.iter().any(|c| c.starts_with("n1 file")), "n1's target redone: {changed:?}");
    assert!(changed.contains(&"n2 file".to_owned()), "{changed:?}");
}

#[test]
fn an_unreachable_node_fails_its_units_and_only_those() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    dir.issue_agent("n2", "127.0.0.1");
    let a1 = AgentProcess::start(&dir, "n1", "127.0.0.1");
    let mut a2 = AgentProcess::start(&dir, "n2", "127.0.0.1");
    let cluster = local_cluster(&dir, &[&a1, &a2]);
    a2.terminate();
    let up = dir.ctl(&["up", &cluster, "--timeout", "2s"]);
    assert_eq!(up.status.code(), Some(1));
    let stderr = text(&up.stderr);
    assert!(stderr.contains("error: n2 (target): cannot reach the agent: connection refused"), "{stderr}");
    assert!(dir.path().join("targets/n1").is_dir(), "independent work finished");
}

#[test]
fn a_policy_refusal_is_a_clear_failure_of_that_nodes_unit() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    dir.issue_agent("n2", "127.0.0.1");
    // n2's site policy keeps its directories under /srv: the test's targets are elsewhere.
    let policy = dir.write("policy.toml", "data_roots = [\"/srv/pvfs-cli-nowhere\"]\n");
    let a1 = AgentProcess::start(&dir, "n1", "127.0.0.1");
    let a2 = AgentProcess::start_with_args(
        &dir,
        "n2",
        "127.0.0.1",
        None,
        &["--policy", &policy.to_string_lossy()],
    );
    let cluster = local_cluster(&dir, &[&a1, &a2]);

    for plan in [true, false] {
        let mut args = vec!["up", cluster.as_str()];
        if plan {
            args.push("--plan");
        }
        let up = dir.ctl(&args);
        assert_eq!(up.status.code(), Some(1), "plan={plan}");
        let (stdout, stderr) = (text(&up.stdout), text(&up.stderr));
        let target = dir.path().join("targets/n2");
        assert!(
            stderr.contains(&format!(
                "the agent's policy refuses this unit: step 1 (directory {}) of the unit: \
                 refused by policy rule `data-root`: {} (a directory) is outside this node's data roots; use a path \
                 under /srv/pvfs-cli-nowhere, or add a root to `data_roots` in the agent's policy file; nothing ran on n2",
                target.display(),
                target.display()
            )),
            "plan={plan}: {stderr}"
        );
        assert!(stderr.contains("n2 (target)") || stderr.contains("[n2] target: FAILED"), "{stderr}");
        let recap = if plan { "n2  ok=0 change=0 pending=0 failed=2" } else { "n2  ok=0 changed=0 failed=1" };
        assert!(stdout.contains(recap), "plan={plan}: {stdout}");
        assert!(!target.exists(), "nothing ran on n2");
    }
    // n1's own target, under the default policy, was made.
    assert!(dir.path().join("targets/n1/format.conf").exists());
}

/// A read-only bind mount of a directory onto itself, undone on drop: the mount unit's write
/// probe then waits (a gate) until the test makes it writable again.
struct ReadOnly {
    dir: std::path::PathBuf,
}

impl ReadOnly {
    fn new(dir: &std::path::Path) -> ReadOnly {
        ReadOnly::mount(&["--bind"], dir);
        let ro = ReadOnly { dir: dir.to_owned() };
        ReadOnly::mount(&["-o", "remount,bind,ro"], dir);
        ro
    }

    fn mount(args: &[&str], dir: &std::path::Path) {
        let out = std::process::Command::new("mount").args(args).arg(dir).arg(dir).output().unwrap();
        assert!(out.status.success(), "mount {args:?} (this test needs root): {}", text(&out.stderr));
    }

    fn make_writable(&self) {
        ReadOnly::mount(&["-o", "remount,bind,rw"], &self.dir);
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.dir).status();
    }
}

#[test]
fn ctrl_c_lets_the_step_under_way_finish_prints_the_recap_and_exits_130() {
    use std::io::BufRead;
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let agent = AgentProcess::start(&dir, "n1", "127.0.0.1");
    let cluster = local_cluster(&dir, &[&agent]);
    // The mount directory exists as `up` would make it, but cannot be written: the mount
    // unit's last step, the write probe, waits.
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    std::fs::set_permissions(&mnt, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let read_only = ReadOnly::new(&mnt);

    let mut up = dir
        .command(&crate::util::pvfsctl())
        .args(["up", &cluster])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Each stream's lines, read as they come by a thread of its own.
    let lines = |stream: Box<dyn std::io::Read + Send>| {
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stream).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        (rx, reader)
    };
    let (stdout_lines, stdout_reader) = lines(Box::new(up.stdout.take().unwrap()));
    let (stderr_lines, stderr_reader) = lines(Box::new(up.stderr.take().unwrap()));
    // Reads `rx` into `seen` until a line contains `want`; panics after 30 s.
    let wait_for = |rx: &std::sync::mpsc::Receiver<String>, seen: &mut Vec<String>, want: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !seen.iter().any(|l| l.contains(want)) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(_) => panic!("no line with {want:?} within 30 s: {seen:?}"),
            }
        }
    };
    let (mut shown, mut noted) = (Vec::new(), Vec::new());
    wait_for(&stdout_lines, &mut shown, "is writable: waiting: ");
    let pid = nix::unistd::Pid::from_raw(up.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    // `up` took the signal, and still waits for the step under way: the probe cannot pass yet.
    wait_for(&stderr_lines, &mut noted, "interrupted: no new unit starts; the steps under way finish");
    assert!(up.try_wait().unwrap().is_none(), "up exited before the step under way finished");
    read_only.make_writable();

    let status = up.wait().unwrap();
    stdout_reader.join().unwrap();
    stderr_reader.join().unwrap();
    shown.extend(stdout_lines.try_iter());
    noted.extend(stderr_lines.try_iter());
    let (stdout, stderr) = (shown.join("\n"), noted.join("\n"));
    assert_eq!(status.code(), Some(130), "{stdout}\n{stderr}");
    // The unit under way ran to its end, and the recap says what ran.
    assert!(stdout.contains("[n1] mount: done in "), "{stdout}");
    assert!(stdout.contains("RECAP ("), "{stdout}");
    assert!(stdout.contains("n1  ok=2 changed=2 failed=0 skipped=0"), "{stdout}");
}
