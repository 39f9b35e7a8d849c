//! `pvfsctl nodes` against agent processes.

use crate::util::{AgentProcess, TestDir, cluster_file, text};

#[test]
fn nodes_shows_every_agent_and_exits_1_naming_a_stopped_one() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    dir.issue_agent("n2", "127.0.0.1");
    let _n1 = AgentProcess::start(&dir, "n1", "127.0.0.1");
    let mut n2 = AgentProcess::start(&dir, "n2", "127.0.0.1");
    let path = cluster_file(
        &dir,
        &[("n1", format!("127.0.0.1:{}", _n1.port)), ("n2", format!("127.0.0.1:{}", n2.port))],
    );
    let path = path.to_str().unwrap();

    let out = dir.ctl(&["nodes", path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let header = stdout.lines().next().unwrap();
    for column in [
        "NODE",
        "ROLES",
        "ADDRESS",
        "REACHABLE",
        "RTT",
        "VERSION",
        "OS",
        "KERNEL",
        "CPUS",
        "MEMORY",
        "DISKS",
        "SELINUX",
        "FIREWALL",
    ] {
        assert!(header.contains(column), "{header}");
    }
    assert_eq!(stdout.lines().filter(|l| l.contains(" yes ")).count(), 2, "{stdout}");

    assert!(n2.terminate().success());
    let out = dir.ctl(&["nodes", path, "--timeout", "3s"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("error: node n2 (127.0.0.1:{}) unreachable: connection refused", n2.port)),
        "{stderr}"
    );
    assert!(!stderr.contains("node n1 "), "{stderr}");

    let out = dir.ctl(&["nodes", path, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes[0]["name"], "n1");
    assert_eq!(nodes[0]["reachable"], true);
    assert_eq!(nodes[0]["info"]["agent_name"], "n1");
    assert!(nodes[0]["info"]["memory_bytes"].as_u64().unwrap() > 0);
    assert!(nodes[0]["info"]["block_devices"].is_array());
    // This machine's own answers, read by the real agent: whatever they are, they are known.
    let selinux = nodes[0]["info"]["selinux"].as_str().unwrap();
    assert!(["enforcing", "permissive", "disabled"].contains(&selinux), "{selinux}");
    let firewall = nodes[0]["info"]["firewall"].as_str().unwrap();
    assert!(["firewalld", "ufw", "none"].contains(&firewall), "{firewall}");
    assert_eq!(nodes[1]["reachable"], false);
    assert_eq!(nodes[1]["error_kind"], "refused");
    assert!(nodes[1]["error"].as_str().unwrap().contains("connection refused"));
    assert!(nodes[1]["info"].is_null());
}

#[test]
fn nodes_refuses_insecure_even_to_loopback_and_finds_certificates_via_tls_dir() {
    let dir = TestDir::new();
    // Loopback too: plaintext there let any local user command the agent as root.
    let path = cluster_file(&dir, &[("n1", "127.0.0.1:7070".into())]);
    let out = dir.ctl(&["nodes", path.to_str().unwrap(), "--insecure"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("--insecure was removed: unauthenticated plaintext"), "{stderr}");
    assert!(stderr.contains("`pvfsctl ca init --dir tls`") && stderr.contains("pvfsctl demo"), "{stderr}");

    // No certificates where the cluster file says: the error names the file and the fix.
    let out = dir.ctl(&["nodes", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("tls/ca.crt") && stderr.contains("pvfsctl ca init"), "{stderr}");
    // Said once, with the step after it, and not once per node or per file.
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(stderr.matches("tls/ca.crt").count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: no cluster CA in ") && stderr.contains("pvfsctl bootstrap"),
        "{stderr}"
    );
    // With the CA and no coordinator certificate: that, and how to get it.
    assert!(dir.ctl(&["ca", "init", "--dir", "tls"]).status.success());
    let out = dir.ctl(&["nodes", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("no coordinator certificate pvfsctl.crt in ") && stderr.contains("pvfsctl bootstrap"),
        "{stderr}"
    );
}

#[test]
fn tls_dir_overrides_the_cluster_files_tls_section() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let agent = AgentProcess::start(&dir, "n1", "127.0.0.1");
    // The cluster file lives elsewhere and its [tls] dir (default "tls", next to it) is empty.
    std::fs::create_dir(dir.path().join("elsewhere")).unwrap();
    let toml = format!(
        "[cluster]\nname = \"t\"\nkind = \"local\"\n[local]\nmount = \"/tmp/t\"\n\
         [[node]]\nname = \"n1\"\naddress = \"127.0.0.1:{}\"\nroles = [\"client\"]\n",
        agent.port
    );
    let path = dir.write("elsewhere/cluster.toml", &toml);
    let path = path.to_str().unwrap();
    let without = dir.ctl(&["nodes", path]);
    assert_eq!(without.status.code(), Some(2));
    assert!(text(&without.stderr).contains("elsewhere/tls/ca.crt"), "{}", text(&without.stderr));
    let with = dir.ctl(&["nodes", path, "--tls-dir", "tls"]);
    assert_eq!(with.status.code(), Some(0), "{}", text(&with.stderr));
}
