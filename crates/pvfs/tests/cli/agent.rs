//! `pvfs-agent` as a process: refusals, `--check-config`, readiness and a clean stop.

use crate::util::{AgentProcess, TestDir, pvfs_agent, text};

#[test]
fn insecure_is_refused_with_what_to_use_instead_even_on_loopback() {
    let dir = TestDir::new();
    let base = ["--listen", "127.0.0.1:0", "--name", "n1", "--state-dir", "s"];
    let by_flag = dir.command(&pvfs_agent()).arg("--insecure").args(base).output().unwrap();
    let by_env = dir.command(&pvfs_agent()).args(base).env("PVFS_AGENT_INSECURE", "true").output().unwrap();
    for out in [by_flag, by_env] {
        assert_eq!(out.status.code(), Some(2));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("--insecure was removed: unauthenticated plaintext let any user"),
            "{stderr}"
        );
        assert!(stderr.contains("then `pvfs-agent --tls-dir DIR` on each node"), "{stderr}");
    }
    assert!(!dir.path().join("s").exists(), "a refused start must change nothing");
    // A false value (as clap reads it) is not a request for plaintext.
    let out = dir
        .command(&pvfs_agent())
        .args(["--check-config", "--tls-dir", "tls"])
        .args(base)
        .env("PVFS_AGENT_INSECURE", "0")
        .output()
        .unwrap();
    assert!(text(&out.stderr).contains("tls/ca.crt"), "{}", text(&out.stderr));
}

#[test]
fn check_config_reports_the_certificate_or_what_is_wrong() {
    let dir = TestDir::new();
    dir.pki();
    let check = |name: &str| {
        dir.command(&pvfs_agent())
            .args([
                "--check-config",
                "--name",
                name,
                "--listen",
                "10.1.2.3:7070",
                "--tls-dir",
                "tls",
                "--state-dir",
                "state",
            ])
            .output()
            .unwrap()
    };
    let missing = check("n1");
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("n1.crt"), "{}", text(&missing.stderr));

    dir.issue_agent("n1", "10.1.2.3");
    let ok = check("n1");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let stdout = text(&ok.stdout);
    assert!(stdout.contains("configuration ok") && stdout.contains("for n1, 10.1.2.3"), "{stdout}");
    assert!(stdout.contains("revoked: 0 serials (tls/revoked.txt does not exist)"), "{stdout}");
    assert!(!dir.path().join("state").exists(), "--check-config creates nothing");

    // The coordinator's certificate is for clients: an agent must not serve with it.
    let wrong = check("pvfsctl");
    assert_eq!(wrong.status.code(), Some(2));
    assert!(text(&wrong.stderr).contains("is not trusted by"), "{}", text(&wrong.stderr));
}

#[test]
fn the_agent_signals_readiness_and_stops_cleanly_on_sigterm() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let mut agent = AgentProcess::start(&dir, "n1", "127.0.0.1");
    assert!(agent.port > 0);
    let status = agent.terminate();
    assert!(status.success(), "{status}");
    // systemd is told the service is stopping.
    let mut buf = [0u8; 512];
    let n = agent.notify.recv(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).contains("STOPPING=1"));
}
