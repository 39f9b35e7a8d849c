//! `pvfsctl demo`: the README's run command.

use crate::util::{TestDir, text};

#[test]
fn demo_starts_agents_surveys_them_and_stops_them() {
    let dir = TestDir::new();
    let out = dir.ctl(&["demo", "--agents", "2", "--once", "--dir", "demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("demo1") && stdout.contains("demo2"), "{stdout}");
    assert_eq!(stdout.lines().filter(|l| l.contains(" yes ")).count(), 2, "{stdout}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("2 nodes, 2 reachable, 0 unreachable"), "{stderr}");
    // Kept because --dir was given: the cluster file it wrote is valid, and every agent
    // logged a clean stop.
    let demo = dir.path().join("demo");
    let check = dir.ctl(&["validate", demo.join("cluster.toml").to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(0));
    for name in ["demo1", "demo2"] {
        let log = std::fs::read_to_string(demo.join("agents").join(name).join("agent.log")).unwrap();
        assert!(log.contains("pvfs-agent stopped"), "{name}: {log}");
    }

    let again = dir.ctl(&["demo", "--once", "--dir", "demo"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("is not empty"));
}
