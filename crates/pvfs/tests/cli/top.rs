//! `pvfsctl top --json` against agent processes: every node every second, resuming from a
//! cursor file with nothing lost or repeated, and a silent node shown down in time.

use crate::util::{AgentProcess, TestDir, cluster_file, cpu_hog, text};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn two_agents(dir: &TestDir) -> (AgentProcess, AgentProcess, String) {
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    dir.issue_agent("n2", "127.0.0.1");
    let n1 = AgentProcess::start(dir, "n1", "127.0.0.1");
    let n2 = AgentProcess::start(dir, "n2", "127.0.0.1");
    let path = cluster_file(
        dir,
        &[("n1", format!("127.0.0.1:{}", n1.port)), ("n2", format!("127.0.0.1:{}", n2.port))],
    );
    (n1, n2, path.to_string_lossy().into_owned())
}

/// Sample lines of a `top --json` run, per node: (seq, time).
fn samples(stdout: &[u8]) -> BTreeMap<String, Vec<(u64, String)>> {
    let mut by_node: BTreeMap<String, Vec<(u64, String)>> = BTreeMap::new();
    for line in text(stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if let Some(seq) = v["seq"].as_u64() {
            by_node
                .entry(v["node"].as_str().unwrap().into())
                .or_default()
                .push((seq, v["time"].as_str().unwrap().into()));
        }
    }
    by_node
}

#[test]
fn every_node_every_second_then_resume_without_loss() {
    let dir = TestDir::new();
    let (_n1, _n2, cluster) = two_agents(&dir);
    // Agents that have just started hold no sample before the first second `top` shows; give
    // them one, so both can show that second.
    std::thread::sleep(Duration::from_secs(2));
    let out = dir.ctl(&["top", &cluster, "--json", "--count", "3", "--cursor-file", "cursors.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first = samples(&out.stdout);
    assert_eq!(first.keys().collect::<Vec<_>>(), ["n1", "n2"]);
    for (node, lines) in &first {
        assert_eq!(lines.len(), 3, "{node}: {lines:?}");
        // Consecutive samples, one per second, on the second.
        assert!(lines.windows(2).all(|w| w[1].0 == w[0].0 + 1), "{node}: {lines:?}");
        // On the second: within its first 100 ms (a sample lands a few ms past it, more when
        // the machine is loaded; one aligned to nothing would land anywhere in the second).
        assert!(lines.iter().all(|(_, t)| t[19..].starts_with(".0")), "{node}: not on the second: {lines:?}");
    }
    // Both nodes report the same seconds.
    let seconds = |node: &str| first[node].iter().map(|(_, t)| t[..19].to_owned()).collect::<Vec<_>>();
    assert_eq!(seconds("n1"), seconds("n2"));
    // Every key of `pvfs-agent metrics --json`, plus node and seq.
    let line: Value =
        serde_json::from_str(text(&out.stdout).lines().find(|l| l.contains("\"seq\"")).unwrap()).unwrap();
    for key in ["node", "seq", "time", "interval_s", "disks", "nics", "cpu", "mem", "load", "tasks"] {
        assert!(line.get(key).is_some(), "missing {key}: {line}");
    }
    assert!(line["nics"]["lo"]["rxkB/s"].is_number());
    assert!(line["cpu"]["%idle"].is_number());

    // `top` is gone for 3 seconds; the next one picks up exactly where it stopped.
    std::thread::sleep(Duration::from_secs(3));
    let out = dir.ctl(&["top", &cluster, "--json", "--count", "6", "--cursor-file", "cursors.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let second = samples(&out.stdout);
    for node in ["n1", "n2"] {
        let last_before = first[node].last().unwrap().0;
        let after: Vec<u64> = second[node].iter().map(|(s, _)| *s).collect();
        assert_eq!(after, ((last_before + 1)..=(last_before + 6)).collect::<Vec<_>>(), "{node}");
    }
}

#[test]
fn a_silent_node_is_shown_down_within_3_seconds_of_its_last_sample() {
    let dir = TestDir::new();
    let (_n1, n2, cluster) = two_agents(&dir);
    let mut top = dir
        .command(&crate::util::pvfsctl())
        .args(["top", &cluster, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(top.stdout.take().unwrap()).lines();
    let pid = nix::unistd::Pid::from_raw(n2.child.id() as i32);
    let started = Instant::now();
    let mut stopped_at = None;
    let mut down_after = None;
    let mut n2_samples = 0;
    while let Some(Ok(line)) = lines.next() {
        assert!(started.elapsed() < Duration::from_secs(30), "no down line within 30 s");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["node"] == "n2" && v["seq"].is_u64() {
            n2_samples += 1;
            // After two samples, freeze n2: its connection stays open but nothing arrives, as
            // when a host hangs or the network drops packets.
            if n2_samples == 2 {
                nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
                stopped_at = Some(Instant::now());
            }
        }
        if v["node"] == "n2" && v["down"] == true {
            down_after = stopped_at.map(|t| t.elapsed());
            break;
        }
    }
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT);
    let _ = top.kill();
    let _ = top.wait();
    let down_after = down_after.expect("n2 never shown down");
    // The last sample arrived just before the freeze; down must show within 3 s of it.
    assert!(down_after <= Duration::from_secs(3), "shown down {down_after:?} after it went silent");
}

/// A stop signal ends `top` as `q` does: exit 0, and the cursor file holds the last sample
/// shown, so the next `top --cursor-file` resumes after it.
#[test]
fn sigterm_ends_top_cleanly_with_its_cursors_saved() {
    let dir = TestDir::new();
    let (_n1, _n2, cluster) = two_agents(&dir);
    let mut top = dir
        .command(&crate::util::pvfsctl())
        .args(["top", &cluster, "--json", "--cursor-file", "cursors.json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(top.stdout.take().unwrap()).lines();
    let started = Instant::now();
    let mut last_seq = None;
    while let Some(Ok(line)) = lines.next() {
        assert!(started.elapsed() < Duration::from_secs(30), "no sample from n1 within 30 s");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["node"] == "n1" && v["seq"].is_u64() {
            last_seq = v["seq"].as_u64();
            break;
        }
    }
    let last_seq = last_seq.expect("top printed no sample of n1");
    let pid = nix::unistd::Pid::from_raw(top.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    // `lines` (top's stdout) stays open until it has exited: a closed pipe would end it too.
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = top.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "top did not stop within 15 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(lines);
    assert_eq!(status.code(), Some(0), "{status}");
    let cursors: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("cursors.json")).unwrap()).unwrap();
    let saved = cursors["n1"]["seq"].as_u64();
    assert!(saved.is_some_and(|s| s >= last_seq), "saved {cursors}, last shown seq {last_seq}");
}

/// `--processes`: every line carries the node's busiest processes (a CPU hog among them),
/// and a plain `top` neither asks for nor prints any.
#[test]
fn processes_only_when_asked() {
    let dir = TestDir::new();
    let (_n1, _n2, cluster) = two_agents(&dir);
    std::thread::sleep(Duration::from_secs(2));
    let hog = cpu_hog();
    let out = dir.ctl(&["top", &cluster, "--json", "--count", "4", "--processes=3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("seq").is_some())
        .collect();
    assert_eq!(lines.len(), 8, "{}", text(&out.stdout));
    for node in ["n1", "n2"] {
        let of_node: Vec<&Value> = lines.iter().filter(|v| v["node"] == node).collect();
        // Each second lists at most 3 by CPU and 3 by I/O; the first may be the agent's
        // baseline (nothing busy yet), the later ones see the hog.
        assert!(
            of_node.iter().all(|v| v["processes"].as_array().is_some_and(|p| p.len() <= 6)),
            "{of_node:?}"
        );
        let hog_seen = of_node.iter().flat_map(|v| v["processes"].as_array().unwrap()).any(|p| {
            p["pid"] == hog.0.id() && p["name"] == "yes" && p["%CPU"].as_f64().is_some_and(|c| c > 20.0)
        });
        assert!(hog_seen, "{node}: {of_node:?}");
    }

    let out = dir.ctl(&["top", &cluster, "--json", "--count", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("processes"), "{}", text(&out.stdout));
    drop(hog);

    // `--processes` takes its N only after `=`: the cluster file after it stays the file.
    let out = dir.ctl(&["top", "--processes", &cluster, "--json", "--count", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"processes\""), "{}", text(&out.stdout));

    let out = dir.ctl(&["top", &cluster, "--processes", "--node", "nope", "--count", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--node nope"), "{}", text(&out.stderr));
}
