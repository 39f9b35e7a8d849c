//! `pvfs-agent` as a process: refusals, `--check-config`, readiness and a clean stop.

use crate::util::{AgentProcess, TestDir, cluster_file, pvfs_agent, text};

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

#[test]
fn check_config_shows_the_policy_and_refuses_a_bad_or_missing_file() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let check = |extra: &[&str]| {
        dir.command(&pvfs_agent())
            .args(["--check-config", "--name", "n1", "--listen", "127.0.0.1:7070", "--tls-dir", "tls"])
            .args(["--state-dir", "state"])
            .args(extra)
            .output()
            .unwrap()
    };
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../config/policy.example.toml");
    let ok = check(&["--policy", example]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let stdout = text(&ok.stdout);
    assert!(stdout.contains("policy: ") && stdout.contains("policy.example.toml"), "{stdout}");
    assert!(stdout.contains("    devices: /dev/disk/azure/scsi1/lun*\n"), "{stdout}");
    assert!(stdout.contains("    unsigned repositories: refused\n"), "{stdout}");

    let missing = check(&["--policy", "nope.toml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("cannot read policy file nope.toml"), "{}", text(&missing.stderr));

    dir.write("bad.toml", "kinds = [\"mkfs\"]\ndata_roots = [\"/etc\"]\n");
    let bad = check(&["--policy", "bad.toml"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr)
            .contains("bad.toml:2:15: data_roots: \"/etc\" cannot be a data root: /etc is in a system tree"),
        "{}",
        text(&bad.stderr)
    );
}

/// `--name` follows the cluster file's node-name grammar: a name that could be an option, a
/// path or a second line is refused before anything else is read.
#[test]
fn a_bad_name_is_refused_with_the_node_name_grammar() {
    let dir = TestDir::new();
    for name in ["-rf", "../ca", "n1\nx", ".hidden", ""] {
        let out = dir
            .command(&pvfs_agent())
            .args(["--check-config", &format!("--name={name}"), "--tls-dir", "tls", "--state-dir", "s"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{name:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains("--name: node name"), "{name:?}: {stderr}");
        assert!(stderr.contains("must be 1 to 64 letters, digits, '-', '_' or '.'"), "{name:?}: {stderr}");
    }
}

/// A flood of idle connections against an agent whose open-file limit is low: the agent admits
/// what its limits allow and closes the rest at once, so descriptors remain for its sampler
/// (not one sample is skipped) and `pvfsctl nodes` is answered during the flood. Before the
/// limits, the flood took every descriptor for the 10 s handshake timeout: the sampler failed
/// with "Too many open files" and the accept loop spun.
#[test]
fn a_connection_flood_at_the_descriptor_limit_costs_no_sample_and_no_answer() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let mut agent = AgentProcess::start_with_nofile(&dir, "n1", "127.0.0.1", 160);
    let cluster = cluster_file(&dir, &[("n1", format!("127.0.0.1:{}", agent.port))]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let address: std::net::SocketAddr = format!("127.0.0.1:{}", agent.port).parse().unwrap();
    // Two flooding hosts (other loopback addresses), 150 connections each: more than the 160
    // descriptors the agent has.
    let flood = runtime.block_on(async {
        let mut held = Vec::new();
        for source in ["127.0.0.2", "127.0.0.3"] {
            for _ in 0..150 {
                let socket = tokio::net::TcpSocket::new_v4().unwrap();
                socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
                held.push(socket.connect(address).await.unwrap());
            }
        }
        // Long enough for the sampler to run twice while the flood is held.
        tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
        held
    });
    let nodes = dir.ctl(&["nodes", cluster.to_str().unwrap(), "--timeout", "5s"]);
    assert_eq!(nodes.status.code(), Some(0), "{}", text(&nodes.stderr));
    assert!(text(&nodes.stdout).contains(" yes "), "{}", text(&nodes.stdout));
    drop(flood);
    assert!(agent.terminate().success());
    let mut log = String::new();
    std::io::Read::read_to_string(&mut agent.child.stderr.take().unwrap(), &mut log).unwrap();
    assert!(!log.contains("sample skipped"), "{log}");
    assert!(!log.contains("Too many open files"), "{log}");
}

/// Issue 24, item 10: a newline in an Apply's label was written raw to the agent's log,
/// forging lines such as `INFO pvfs-agent stopped`. Through the real binary's logging: every
/// line of its log is an event of its own, starting with its time and level.
#[test]
fn a_label_from_the_wire_cannot_forge_log_lines() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let mut agent = AgentProcess::start(&dir, "n1", "127.0.0.1");
    let cluster_path = cluster_file(&dir, &[("n1", format!("127.0.0.1:{}", agent.port))]);
    let forged = "x\nINFO pvfs-agent stopped\r\n\u{1b}[2K2026-01-01T00:00:00.000000Z  INFO converged unit=FORGED2 ok=1";
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let cluster = pvfs_config::load(&cluster_path).unwrap();
        let material = pvfs_tls::load(&dir.path().join("tls"), "pvfsctl").unwrap();
        let dialer = pvfs_coord::Dialer::new(
            pvfs_coord::ClientSecurity::MutualTls(material),
            std::time::Duration::from_secs(10),
        );
        let mut conn = dialer.connect(&cluster.nodes[0]).await.unwrap();
        // No steps, a dry run: the agent logs the unit it converges by its label.
        let request = pvfs_proto::pb::ApplyRequest {
            steps: Vec::new(),
            dry_run: true,
            after_changes: false,
            label: forged.into(),
            cluster_hosts: Vec::new(),
        };
        let mut events = conn.agent.apply(request).await.unwrap().into_inner();
        while events.message().await.unwrap().is_some() {}
    });
    // Closes the connection, whose task lives in the runtime: the agent waits for it to stop.
    drop(runtime);
    assert!(agent.terminate().success());
    let mut log = String::new();
    std::io::Read::read_to_string(&mut agent.child.stderr.take().unwrap(), &mut log).unwrap();
    assert!(log.contains(r"unit=x\nINFO pvfs-agent stopped\r\n\u{1b}[2K2026-01-01"), "{log}");
    let stopped = log.lines().filter(|l| l.ends_with("INFO pvfs-agent stopped")).count();
    assert!(stopped <= 1, "{log}");
    for line in log.lines() {
        // `2026-05-01T12:00:00.123456Z  INFO converging …`
        let (time, rest) = line.split_once(' ').unwrap_or_default();
        let level = rest.trim_start().split(' ').next().unwrap_or_default();
        assert!(
            time.len() > 20
                && time.ends_with('Z')
                && ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&level),
            "a line that is not an event of its own: {line:?}\n{log}"
        );
        assert!(!line.contains('\u{1b}') && !line.contains('\r'), "{line:?}");
    }
}

/// Issue 30: the engine's own output carries IOR's and mdtest's header lines (`Began`,
/// `Command line`, `Machine`, `Path` and `Finished`; `-- started at`, `Command line used`,
/// `Path` and `-- finished at`), so `bench import` of it has the command the run stands for.
#[test]
fn the_local_engines_output_imports_with_its_command() {
    let dir = TestDir::new();
    for (preset, sets, command) in [
        (
            "throughput",
            ["t=64k", "b=256k"],
            "mpirun -np 2 ior -w -r --posix.odirect -C -i1 -t64k -b256k -F -o ",
        ),
        ("metadata", ["n=8", "z=1"], "mpirun -np 2 mdtest -C -T -i1 -n 8 -z 1 -b 4 -L -u -F -d "),
    ] {
        let run = dir.path().join(preset);
        std::fs::create_dir(&run).unwrap();
        let out = dir
            .command(&pvfs_agent())
            .args([
                "engine",
                "--tasks",
                "2",
                "--preset",
                preset,
                "--dir",
                run.to_str().unwrap(),
                "--set",
                "i=1",
            ])
            .args(sets.iter().flat_map(|s| ["--set", s]))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let printed = text(&out.stdout);
        let (first, last) = if preset == "throughput" {
            ("Began               : ", "Finished            : ")
        } else {
            ("-- started at ", "-- finished at ")
        };
        assert!(printed.starts_with(first) && printed.lines().last().unwrap().starts_with(last), "{printed}");
        let saved = dir.path().join(format!("{preset}.out"));
        std::fs::write(&saved, &out.stdout).unwrap();
        let imported =
            dir.ctl(&["bench", "import", saved.to_str().unwrap(), "--results", "imports", "--json"]);
        assert_eq!(imported.status.code(), Some(0), "{}", text(&imported.stderr));
        let line: serde_json::Value = serde_json::from_slice(&imported.stdout).unwrap();
        let canonical = run.canonicalize().unwrap();
        let expected = if preset == "throughput" {
            format!("{command}{}/ior", canonical.display())
        } else {
            format!("{command}{}", canonical.display())
        };
        assert_eq!(line["command"], expected, "{line}");
    }
}

/// `pvfs-agent engine`, the built-in engine on this machine (what `cargo xtask bench-engine`
/// measures): `--json` holds each phase's latency over every transfer; `--untimed` is the
/// same run with nothing timed, which is how the timing's cost is measured.
#[test]
fn the_local_engine_reports_each_phases_latency_unless_untimed() {
    let dir = TestDir::new();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let run = |extra: &[&str]| {
        let out = dir
            .command(&pvfs_agent())
            .args(["engine", "--json", "--tasks", "2", "--dir", "d", "--set", "t=64k", "--set", "b=512k"])
            .args(["--set", "i=1"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let timed = run(&[]);
    let phases: Vec<(&str, u64)> = timed["latency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["phase"].as_str().unwrap(), l["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(phases, [("write", 16), ("read", 16)], "2 tasks of 8 transfers: {timed}");
    let write = &timed["latency"][0];
    let ns = |k: &str| write[k].as_u64().unwrap();
    assert!(ns("min_ns") > 0 && ns("min_ns") <= ns("p50_ns") && ns("p99_ns") <= ns("max_ns"), "{write}");
    let untimed = run(&["--untimed"]);
    assert_eq!(untimed["latency"], serde_json::json!([]), "{untimed}");
    assert_eq!(untimed["ior"].as_array().map(Vec::len), Some(2), "the same rows: {untimed}");
    let out =
        dir.command(&pvfs_agent()).args(["engine", "--mpi", "--untimed", "--dir", "d"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a rank is always timed: {}", text(&out.stderr));
}
