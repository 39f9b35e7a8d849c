//! `cargo xtask e2e`: real agents in containers on a private network, the coordinator on the
//! host, real mutual TLS, and the scenarios run against them. Everything is torn down at the
//! end, pass or fail (leftovers of a killed run are removed by the next one).
//!
//! Scenarios are functions of [`Env`]; later features add theirs to [`SCENARIOS`].

use crate::docker::{self, Lab, docker};
use crate::util::{self, KillOnDrop, capture, cargo, free_port, read, step};
use anyhow::{Context, bail, ensure};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Agent containers to start (at least 3).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(3..=20))]
    pub nodes: u8,
    /// Leave the network and containers running afterwards, for a look around.
    #[arg(long)]
    pub keep: bool,
    /// Run only the scenarios whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Agents and coordinator from this binary (the shipped one, `dist/…/bin/pvfs`, as
    /// `cargo xtask ci` runs them) instead of a debug build of this tree.
    #[arg(long, value_name = "PATH")]
    pub binary: Option<PathBuf>,
}

impl Default for Args {
    fn default() -> Args {
        Args { nodes: 3, keep: false, only: None, binary: None }
    }
}

type Scenario = fn(&Env) -> anyhow::Result<()>;

/// Every scenario, in the order they run.
const SCENARIOS: &[(&str, Scenario)] =
    &[("mesh", mesh), ("metrics", metrics), ("prometheus", prometheus), ("ganglia", ganglia)];

/// A running test cluster.
pub struct Env {
    pub lab: Lab,
    pub binary: PathBuf,
    pub work: PathBuf,
    pub cluster_file: PathBuf,
}

impl Env {
    /// Builds the image if needed, issues certificates, starts the agents and writes the
    /// cluster file.
    pub fn start(binary: &Path, nodes: u8, keep: bool) -> anyhow::Result<Env> {
        docker::check_engine()?;
        let image = crate::image::ensure()?;
        let run_id = format!("{}", std::process::id());
        let work = docker::work_dir(&run_id)?;
        let mut lab = Lab::create(&run_id, keep)?;
        let env_binary = binary.to_owned();
        let tls = work.join("tls");
        let ctl = |args: &[&str]| -> anyhow::Result<String> {
            read(Command::new(&env_binary).arg("ctl").args(args))
        };
        ctl(&["ca", "init", "--dir", &tls.to_string_lossy()])?;
        ctl(&["ca", "issue", "pvfsctl", "--dir", &tls.to_string_lossy()])?;
        let mut toml = format!(
            "# e2e cluster {run_id}\n[cluster]\nname = \"e2e\"\nkind = \"local\"\n\n[local]\nmount = \"/mnt/pvfs\"\n"
        );
        for n in 1..=usize::from(nodes) {
            let name = format!("node{n}");
            let ip = lab.ip(n);
            ctl(&["ca", "issue", &name, "--dir", &tls.to_string_lossy(), "--san", &ip])?;
            // Each node gets only the CA certificate and its own key.
            let node_tls = work.join("node-tls").join(&name);
            std::fs::create_dir_all(&node_tls)?;
            for file in ["ca.crt".to_owned(), format!("{name}.crt"), format!("{name}.key")] {
                std::fs::copy(tls.join(&file), node_tls.join(&file))
                    .with_context(|| format!("copying {file}"))?;
            }
            lab.start_agent(&image, &name, &ip, &pvfs_host::paths::agent_program(binary), &node_tls)?;
            toml += &format!(
                "\n[[node]]\nname = \"{name}\"\naddress = \"{ip}:7070\"\nroles = [\"server\", \"client\"]\n"
            );
        }
        let cluster_file = work.join("cluster.toml");
        std::fs::write(&cluster_file, toml)?;
        let env = Env { lab, binary: binary.to_owned(), work, cluster_file };
        env.wait_all_reachable(Duration::from_secs(30))?;
        Ok(env)
    }

    /// Runs `pvfs ctl ARGS…` on the host.
    pub fn ctl(&self, args: &[&str]) -> anyhow::Result<Output> {
        capture(Command::new(&self.binary).arg("ctl").args(args))
    }

    pub fn cluster(&self) -> String {
        self.cluster_file.to_string_lossy().into_owned()
    }

    /// Polls `nodes` until every agent answers, up to `deadline`.
    pub fn wait_all_reachable(&self, deadline: Duration) -> anyhow::Result<()> {
        let until = Instant::now() + deadline;
        loop {
            let out = self.ctl(&["nodes", &self.cluster(), "--json", "--timeout", "2s"])?;
            if out.status.success() {
                return Ok(());
            }
            if Instant::now() > until {
                bail!(
                    "agents not all reachable after {deadline:?}:\n{}\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    self.lab.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    if let Some(binary) = &args.binary {
        return run_with_binary(binary, args);
    }
    step(cargo().args(["build", "--locked", "-p", "pvfs", "--bin", "pvfs"]))?;
    run_with_binary(&util::root().join("target/debug/pvfs"), args)
}

/// Runs the scenarios with agents and coordinator from `binary`.
pub fn run_with_binary(binary: &Path, args: &Args) -> anyhow::Result<()> {
    let binary = std::path::absolute(binary)?;
    let wanted = |name: &str| args.only.as_deref().is_none_or(|only| name.contains(only));
    if SCENARIOS.iter().any(|(name, _)| wanted(name)) {
        run_lab_scenarios(&binary, args, &wanted)?;
    }
    // Its own lab: systemd and sshd in each container, no agent until bootstrap installs it.
    if wanted("bootstrap") {
        eprintln!("xtask e2e: scenario bootstrap");
        let started = Instant::now();
        let image = crate::image::ensure()?;
        let work = docker::work_dir(&format!("bootstrap-{}", std::process::id()))?;
        crate::bootstrap::run(&binary, &image, &work, args.keep).context("e2e scenario bootstrap")?;
        if !args.keep {
            std::fs::remove_dir_all(&work).ok();
        }
        eprintln!("xtask e2e: scenario bootstrap passed ({:.1}s)", started.elapsed().as_secs_f64());
    }
    // Its own lab: the README's flows, line by line as written, on fresh systemd+sshd containers.
    if wanted("readme") {
        eprintln!("xtask e2e: scenario readme");
        let started = Instant::now();
        let image = crate::image::ensure()?;
        let work = docker::work_dir(&format!("readme-{}", std::process::id()))?;
        crate::readme::run(&binary, &image, &work, args.keep).context("e2e scenario readme")?;
        if !args.keep {
            std::fs::remove_dir_all(&work).ok();
        }
        eprintln!("xtask e2e: scenario readme passed ({:.1}s)", started.elapsed().as_secs_f64());
    }
    // Its own lab: systemd in each container, loop devices, the cluster file's fixed network.
    if wanted("gluster") {
        eprintln!("xtask e2e: scenario gluster");
        let started = Instant::now();
        let image = crate::image::ensure()?;
        let work = docker::work_dir(&format!("gluster-{}", std::process::id()))?;
        crate::gluster::run(&binary, &image, &work, args.keep).context("e2e scenario gluster")?;
        if !args.keep {
            std::fs::remove_dir_all(&work).ok();
        }
        eprintln!("xtask e2e: scenario gluster passed ({:.1}s)", started.elapsed().as_secs_f64());
    }
    Ok(())
}

fn run_lab_scenarios(binary: &Path, args: &Args, wanted: &dyn Fn(&str) -> bool) -> anyhow::Result<()> {
    let env = Env::start(binary, args.nodes, args.keep)?;
    for (name, scenario) in SCENARIOS {
        if !wanted(name) {
            continue;
        }
        eprintln!("xtask e2e: scenario {name}");
        let started = Instant::now();
        if let Err(err) = scenario(&env) {
            eprintln!("xtask e2e: scenario {name} FAILED; container logs:\n{}", env.lab.logs());
            return Err(err.context(format!("e2e scenario {name}")));
        }
        eprintln!("xtask e2e: scenario {name} passed ({:.1}s)", started.elapsed().as_secs_f64());
    }
    if !args.keep {
        std::fs::remove_dir_all(&env.work).ok();
    } else {
        eprintln!("xtask e2e: cluster file {}", env.cluster());
    }
    Ok(())
}

fn json(out: &Output) -> anyhow::Result<Value> {
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "not JSON: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The mesh: every container's agent answers with its own facts over mutual TLS; a stopped
/// one is named within the timeout; a restarted one is back.
fn mesh(env: &Env) -> anyhow::Result<()> {
    let host_kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")?.trim().to_owned();
    let out = env.ctl(&["nodes", &env.cluster(), "--json"])?;
    ensure!(out.status.success(), "nodes failed: {}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out)?;
    let nodes = v["nodes"].as_array().context("no nodes array")?;
    ensure!(
        nodes.len() == env.lab.nodes.len(),
        "expected {} nodes, got {}",
        env.lab.nodes.len(),
        nodes.len()
    );
    for (node, lab_node) in nodes.iter().zip(&env.lab.nodes) {
        let name = lab_node.name.as_str();
        let info = &node["info"];
        ensure!(node["reachable"] == true, "{name} not reachable: {node}");
        ensure!(node["address"] == format!("{}:7070", lab_node.ip), "{name} address: {}", node["address"]);
        // Facts come from inside each container: its own hostname, the shared kernel, the
        // image's OS.
        ensure!(info["hostname"] == name, "{name} reports hostname {}", info["hostname"]);
        ensure!(info["agent_name"] == name, "{name} reports agent_name {}", info["agent_name"]);
        ensure!(
            info["kernel"] == host_kernel.as_str(),
            "{name} kernel {} != host {host_kernel}",
            info["kernel"]
        );
        ensure!(info["os"]["id"] == "debian", "{name} os {}", info["os"]);
        ensure!(info["cpu"]["logical"].as_u64().unwrap_or(0) >= 1, "{name} cpus {}", info["cpu"]);
        ensure!(info["memory_bytes"].as_u64().unwrap_or(0) > 0, "{name} memory {}", info["memory_bytes"]);
        let nics = info["nics"].as_array().context("no nics")?;
        ensure!(
            nics.iter().any(|n| n["name"] == "eth0" && n["mac"].as_str().is_some_and(|m| m.len() == 17)),
            "{name} nics {nics:?}"
        );
        ensure!(node["rtt_ms"].as_f64().is_some(), "{name} has no RTT");
    }
    // The human table, for the log.
    let table = env.ctl(&["nodes", &env.cluster()])?;
    eprint!("{}", String::from_utf8_lossy(&table.stdout));

    let victim = env.lab.node("node2")?;
    step(docker().args(["stop", "-t", "5", &victim.container]))?;
    let timeout = 3.0;
    let started = Instant::now();
    let out = env.ctl(&["nodes", &env.cluster(), "--json", "--timeout", "3s"])?;
    let took = started.elapsed().as_secs_f64();
    ensure!(out.status.code() == Some(1), "nodes with node2 stopped exited {:?}", out.status.code());
    let v = json(&out)?;
    for node in v["nodes"].as_array().context("no nodes")? {
        let down = node["name"] == "node2";
        ensure!(node["reachable"] == !down, "after stopping node2: {node}");
        if down {
            ensure!(node["error"].as_str().is_some_and(|e| !e.is_empty()), "node2 has no reason: {node}");
            eprintln!("xtask e2e: node2 reported as {}: {}", node["error_kind"], node["error"]);
        }
    }
    // "Within its timeout": the survey is bounded by the per-node timeout, plus process start.
    ensure!(took < timeout + 2.0, "nodes took {took:.1}s with a {timeout}s timeout");
    let human = env.ctl(&["nodes", &env.cluster(), "--timeout", "3s"])?;
    let stderr = String::from_utf8_lossy(&human.stderr);
    ensure!(
        stderr.contains(&format!("error: node node2 ({}:7070) unreachable", victim.ip)),
        "stderr: {stderr}"
    );

    step(docker().args(["start", &victim.container]))?;
    env.wait_all_reachable(Duration::from_secs(30)).context("node2 did not come back after docker start")?;
    Ok(())
}

/// Per node, the (seq, time) of each sample line of `top --json` output.
fn sample_lines(stdout: &[u8]) -> anyhow::Result<std::collections::BTreeMap<String, Vec<(u64, String)>>> {
    let mut by_node: std::collections::BTreeMap<String, Vec<(u64, String)>> = Default::default();
    for line in String::from_utf8_lossy(stdout).lines() {
        let v: Value = serde_json::from_str(line).with_context(|| format!("not JSON: {line}"))?;
        if let Some(seq) = v["seq"].as_u64() {
            let node = v["node"].as_str().unwrap_or_default().to_owned();
            by_node.entry(node).or_default().push((seq, v["time"].as_str().unwrap_or_default().to_owned()));
        }
    }
    Ok(by_node)
}

/// Per-second metrics across containers: every node every second; the coordinator away for
/// 20 s loses nothing; a stopped or frozen node is shown down within 3 s.
fn metrics(env: &Env) -> anyhow::Result<()> {
    let cursor_file = env.work.join("cursors.json");
    let cursor_arg = cursor_file.to_string_lossy().into_owned();
    // An agent restarted by the previous scenario has no sample before now yet, so it could not
    // give rates for the first second the others show: let every agent take a sample first.
    std::thread::sleep(Duration::from_secs(2));
    let out = env.ctl(&["top", &env.cluster(), "--json", "--count", "10", "--cursor-file", &cursor_arg])?;
    ensure!(out.status.success(), "top failed: {}", String::from_utf8_lossy(&out.stderr));
    let first = sample_lines(&out.stdout)?;
    ensure!(first.len() == env.lab.nodes.len(), "top saw {} nodes of {}", first.len(), env.lab.nodes.len());
    let seconds = |lines: &Vec<(u64, String)>| {
        lines.iter().map(|(_, t)| t.get(..19).unwrap_or_default().to_owned()).collect::<Vec<_>>()
    };
    let reference = seconds(first.values().next().context("no nodes")?);
    for (node, lines) in &first {
        ensure!(lines.len() == 10, "{node}: {} samples, expected 10", lines.len());
        ensure!(lines.windows(2).all(|w| w[1].0 == w[0].0 + 1), "{node}: seq not consecutive: {lines:?}");
        ensure!(seconds(lines) == reference, "{node} reports other seconds than the rest: {lines:?}");
    }
    eprintln!("xtask e2e: top: {} nodes × 10 consecutive seconds, same seconds on every node", first.len());

    // The coordinator is away for 20 seconds; when it comes back, nothing is missing.
    std::thread::sleep(Duration::from_secs(20));
    let out = env.ctl(&["top", &env.cluster(), "--json", "--count", "25", "--cursor-file", &cursor_arg])?;
    ensure!(out.status.success(), "top (resumed) failed: {}", String::from_utf8_lossy(&out.stderr));
    let second = sample_lines(&out.stdout)?;
    for (node, lines) in &first {
        let last = lines.last().map(|(s, _)| *s).unwrap_or_default();
        let resumed: Vec<u64> =
            second.get(node).map(|l| l.iter().map(|(s, _)| *s).collect()).unwrap_or_default();
        let expected: Vec<u64> = ((last + 1)..=(last + 25)).collect();
        ensure!(
            resumed == expected,
            "{node}: after a 20 s absence got seqs {resumed:?}, expected {expected:?}"
        );
    }
    eprintln!("xtask e2e: top resumed after 20 s away: every second present on every node, none twice");

    // A node stopped (docker stop) and a node frozen (docker pause: connection open, nothing
    // sent) are both shown down within 3 s.
    for (how, node) in [("stop", "node3"), ("pause", "node2")] {
        let container = env.lab.node(node)?.container.clone();
        let took = time_to_down(env, node, || step(docker().args([how, &container])))?;
        eprintln!("xtask e2e: docker {how} {node}: shown down after {:.2}s", took.as_secs_f64());
        ensure!(took <= Duration::from_secs(3), "docker {how} {node}: shown down only after {took:?}");
        let undo = if how == "stop" { "start" } else { "unpause" };
        step(docker().args([undo, &container]))?;
    }
    env.wait_all_reachable(Duration::from_secs(30))
}

/// Runs `top --json`, waits for `node`'s samples, calls `act`, and returns how long after it
/// `node` was shown down.
fn time_to_down(env: &Env, node: &str, act: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<Duration> {
    use std::io::BufRead;
    let mut top = Command::new(&env.binary)
        .args(["ctl", "top", &env.cluster(), "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting top")?;
    let stdout = top.stdout.take().context("top stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send((Instant::now(), line)).is_err() {
                return;
            }
        }
    });
    let result = (|| {
        // Two samples from the node first, so it is known to be up.
        let mut seen = 0;
        while seen < 2 {
            let (_, line) = rx.recv_timeout(Duration::from_secs(10)).context("no samples from top")?;
            let v: Value = serde_json::from_str(&line)?;
            if v["node"] == node && v["seq"].is_u64() {
                seen += 1;
            }
        }
        let acted = Instant::now();
        act()?;
        loop {
            let (at, line) = rx.recv_timeout(Duration::from_secs(15)).context("node never shown down")?;
            let v: Value = serde_json::from_str(&line)?;
            if v["node"] == node && v["down"] == true {
                return Ok(at.duration_since(acted));
            }
        }
    })();
    let _ = top.kill();
    let _ = top.wait();
    result
}

/// GETs `url` with curl and parses the JSON body.
fn get_json(url: &str) -> anyhow::Result<Value> {
    let body = read(Command::new("curl").args(["-sf", "--max-time", "5", url]))?;
    serde_json::from_str(&body).with_context(|| format!("{url} did not return JSON"))
}

/// `pvfsctl serve` exporting the containers' metrics, scraped every second by a real
/// Prometheus (Debian's), whose HTTP API then has the series of every node; and pushing every
/// second to the same Prometheus by remote write (its receiver on), where each stored value
/// must be the one `top --json` prints for the same node and second.
fn prometheus(env: &Env) -> anyhow::Result<()> {
    util::ensure_programs(&[("prometheus", "prometheus"), ("curl", "curl")])?;
    let serve_port = free_port()?;
    let prom_port = free_port()?;
    let _serve = KillOnDrop(
        Command::new(&env.binary)
            .args(["ctl", "serve", &env.cluster(), "--metrics-listen", &format!("127.0.0.1:{serve_port}")])
            // Its history in the scenario's own directory, not the working one.
            .arg("--history")
            .arg(env.work.join("history"))
            .arg("--remote-write")
            .arg(format!("http://127.0.0.1:{prom_port}/api/v1/write"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .context("starting pvfsctl serve")?,
    );
    let prom_dir = env.work.join("prometheus");
    std::fs::create_dir_all(&prom_dir)?;
    let config = prom_dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: pvfs\n    static_configs:\n      - targets: ['127.0.0.1:{serve_port}']\n"
        ),
    )?;
    let _prometheus = KillOnDrop(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg("--web.enable-remote-write-receiver")
            .arg(format!("--storage.tsdb.path={}", prom_dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(prom_dir.join("prometheus.log"))?)
            .spawn()
            .context("starting prometheus")?,
    );
    let want: std::collections::BTreeSet<String> = env.lab.nodes.iter().map(|n| n.name.clone()).collect();
    let nodes_of = |query: &str| -> anyhow::Result<std::collections::BTreeSet<String>> {
        let v = prom_query(prom_port, query, None)?;
        Ok(v["data"]["result"]
            .as_array()
            .map(|r| r.iter().filter_map(|s| s["metric"]["node"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default())
    };
    // The scraped series (job="pvfs"); the pushed ones have no job.
    let queries = [
        ("node_exporter's disk bytes", r#"node_disk_read_bytes_total{job="pvfs"}"#),
        ("the iostat %util gauge", r#"pvfs_disk_util_percent{job="pvfs"}"#),
        (
            "a rate Prometheus computes from our counters",
            r#"rate(node_network_receive_bytes_total{job="pvfs"}[5s])"#,
        ),
        ("the nodes being up", r#"pvfs_node_up{job="pvfs"}==1"#),
        ("remote write's %util gauge", r#"pvfs_disk_util_percent{job=""}"#),
    ];
    let deadline = Instant::now() + Duration::from_secs(40);
    for (what, query) in queries {
        loop {
            let got = nodes_of(query).unwrap_or_default();
            if got == want {
                eprintln!(
                    "xtask e2e: prometheus has {what} ({query}) for {}",
                    got.iter().cloned().collect::<Vec<_>>().join(", ")
                );
                break;
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(prom_dir.join("prometheus.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(10).collect();
                bail!(
                    "prometheus has {what} ({query}) only for {got:?}, expected {want:?}; its log ends:\n{}",
                    tail.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    let health = get_json(&format!("http://127.0.0.1:{prom_port}/api/v1/targets"))?;
    let target = &health["data"]["activeTargets"][0];
    ensure!(
        target["health"] == "up",
        "prometheus says the pvfs target is {}: {}",
        target["health"],
        target["lastError"]
    );
    remote_write_matches_top(env, prom_port)?;
    grafana_queries_answer(prom_port, &want)
}

/// Every query of the Grafana dashboard (`config/grafana/pvfs-cluster.json`), its variables
/// set to "All" (and the compare panel's to each of its choices), answers with series of
/// every node from the real Prometheus: the PromQL parses and names what is there.
fn grafana_queries_answer(prom_port: u16, want: &std::collections::BTreeSet<String>) -> anyhow::Result<()> {
    let path = util::root().join("config/grafana/pvfs-cluster.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)
        .with_context(|| format!("{} is not JSON", path.display()))?;
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().into_iter().flatten() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries.push((
                panel["title"].as_str().unwrap_or_default().to_owned(),
                target["expr"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    let choices: Vec<String> = dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["name"] == "metric")
        .flat_map(|v| v["options"].as_array().cloned().unwrap_or_default())
        .filter_map(|o| o["value"].as_str().map(str::to_owned))
        .collect();
    let mut asked = 0;
    for (title, expr) in &queries {
        let all = expr.replace("$node", ".*").replace("$device", ".*").replace("$nic", ".*");
        let expanded: Vec<String> = if all.contains("$metric") {
            choices.iter().map(|m| all.replace("$metric", m)).collect()
        } else {
            vec![all]
        };
        for query in expanded {
            let v = prom_query(prom_port, &query, None)?;
            ensure!(v["status"] == "success", "the dashboard's {title:?} query {query} fails: {v}");
            let result = v["data"]["result"].as_array().cloned().unwrap_or_default();
            ensure!(!result.is_empty(), "the dashboard's {title:?} query {query} has no data");
            let nodes: std::collections::BTreeSet<String> =
                result.iter().filter_map(|s| s["metric"]["node"].as_str().map(str::to_owned)).collect();
            // A query that keeps the node label must have every node.
            ensure!(
                nodes.is_empty() || &nodes == want,
                "the dashboard's {title:?} query {query} has only {nodes:?}"
            );
            asked += 1;
        }
    }
    eprintln!("xtask e2e: the Grafana dashboard's {asked} queries all answer from prometheus");
    Ok(())
}

/// One instant query of Prometheus' HTTP API (at `time`, Unix seconds, when given).
fn prom_query(prom_port: u16, query: &str, time: Option<f64>) -> anyhow::Result<Value> {
    let mut curl = Command::new("curl");
    curl.args(["-sG", "--max-time", "5", &format!("http://127.0.0.1:{prom_port}/api/v1/query")])
        .arg("--data-urlencode")
        .arg(format!("query={query}"));
    if let Some(time) = time {
        curl.arg("--data-urlencode").arg(format!("time={time:.3}"));
    }
    let body = read(&mut curl)?;
    serde_json::from_str(&body).with_context(|| format!("prometheus' answer to {query} is not JSON: {body}"))
}

/// Every value of three seconds of `top --json` (each node's disks, NICs and CPU) is in
/// Prometheus as serve pushed it by remote write, at the same millisecond, to the bit. The
/// pushed series are those without a `job` label (the scraped ones have job="pvfs").
fn remote_write_matches_top(env: &Env, prom_port: u16) -> anyhow::Result<()> {
    use pvfs_metrics::line::MetricsLine;
    use pvfs_metrics::rates::{CpuColumn, DiskColumn, NicColumn, metric_suffix};
    let top = read(Command::new(&env.binary).args(["ctl", "top", &env.cluster(), "--json", "--count", "3"]))?;
    let lines: Vec<_> = top
        .lines()
        // Not the lines saying a node is up (`{"node", "time", "up": true}`, at top's own time).
        .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v.get("up").is_none()))
        .filter_map(|l| match serde_json::from_str::<MetricsLine>(l) {
            Ok(MetricsLine::Second(line)) => Some(line),
            _ => None,
        })
        .collect();
    ensure!(lines.len() >= 3 * env.lab.nodes.len(), "top --json printed {} seconds:\n{top}", lines.len());
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut compared = 0;
    for line in &lines {
        let node = line.node.clone().context("a top --json line without its node")?;
        let (_, end) = line.span().context("a top --json line without its time")?;
        let at_ms = (end * 1e3).round() as i64;
        // (metric, device or mode) -> value at the line's millisecond.
        let stored = loop {
            let (stored, times) = pushed_at(prom_port, &node, at_ms)?;
            if !stored.is_empty() {
                break stored;
            }
            ensure!(
                Instant::now() < deadline,
                "prometheus has no pushed series of {node} at {} ({at_ms} ms); it has {node}'s points at {times:?}",
                line.time
            );
            std::thread::sleep(Duration::from_millis(500));
        };
        let mut want: Vec<(String, String, Option<f64>)> = Vec::new();
        for (device, columns) in &line.disks {
            for c in DiskColumn::ALL {
                want.push((format!("pvfs_disk_{}", metric_suffix(c.name())), device.clone(), columns.get(c)));
            }
        }
        for (device, columns) in &line.nics {
            for c in NicColumn::ALL {
                want.push((
                    format!("pvfs_network_{}", metric_suffix(c.name())),
                    device.clone(),
                    columns.get(c),
                ));
            }
        }
        for c in CpuColumn::ALL {
            let mode = c.name().trim_start_matches('%').to_owned();
            want.push(("pvfs_cpu_percent".to_owned(), mode, line.cpu.get(c)));
        }
        for (metric, which, value) in want {
            let got = stored.get(&(metric.clone(), which.clone()));
            let same = match (value, got) {
                (Some(v), Some(g)) => v.to_bits() == g.to_bits(),
                (None, Some(g)) => g.is_nan(),
                _ => false,
            };
            ensure!(
                same,
                "{node} {which} {metric} at {}: top --json says {value:?}, prometheus stored {got:?}",
                line.time
            );
            compared += 1;
        }
    }
    eprintln!(
        "xtask e2e: prometheus stored by remote write the same {compared} values as top --json printed ({} node-seconds)",
        lines.len()
    );
    Ok(())
}

/// The series serve pushed for `node` (no `job` label) with a point at `at_ms`, by (metric,
/// device or CPU mode), from Prometheus' raw points around it; and the times of those points.
type Pushed = (std::collections::BTreeMap<(String, String), f64>, std::collections::BTreeSet<i64>);
fn pushed_at(prom_port: u16, node: &str, at_ms: i64) -> anyhow::Result<Pushed> {
    let query = format!("{{node=\"{node}\",job=\"\"}}[10s]");
    let v = prom_query(prom_port, &query, Some((at_ms as f64 + 1.0) / 1e3))?;
    let mut out = std::collections::BTreeMap::new();
    let mut times = std::collections::BTreeSet::new();
    for series in v["data"]["result"].as_array().into_iter().flatten() {
        let metric = &series["metric"];
        let name = metric["__name__"].as_str().unwrap_or_default().to_owned();
        let which = metric["device"].as_str().or(metric["mode"].as_str()).unwrap_or_default().to_owned();
        for point in series["values"].as_array().into_iter().flatten() {
            let ms = (point[0].as_f64().unwrap_or_default() * 1e3).round() as i64;
            times.insert(ms);
            if ms == at_ms {
                let value = point[1].as_str().unwrap_or_default();
                let value =
                    if value == "NaN" { f64::NAN } else { value.parse().context("a stored value")? };
                out.insert((name.clone(), which.clone()), value);
            }
        }
    }
    Ok((out, times))
}

/// Each container's agent serving the gmond XML dump, polled every second by a real gmetad
/// (Debian's 3.7.2) on the host: it must create each host's RRDs and store real values in them.
fn ganglia(env: &Env) -> anyhow::Result<()> {
    util::ensure_programs(&[("gmetad", "gmetad"), ("rrdtool", "rrdtool")])?;
    let dir = env.work.join("ganglia");
    let rrds = dir.join("rrds");
    std::fs::create_dir_all(&rrds)?;
    let mut conf = String::new();
    for node in &env.lab.nodes {
        conf += &format!("data_source \"{}\" 1 {}:8649\n", node.name, node.ip);
    }
    // gmetad 3.7.2 cannot bind to an address; free ports keep it out of anyone's way.
    conf += &format!(
        "setuid off\nrrd_rootdir \"{}\"\nxml_port {}\ninteractive_port {}\n",
        rrds.display(),
        free_port()?,
        free_port()?
    );
    let conf_path = dir.join("gmetad.conf");
    std::fs::write(&conf_path, conf)?;
    let _gmetad = KillOnDrop(
        Command::new("gmetad")
            .arg("-c")
            .arg(&conf_path)
            .arg("--debug=1")
            .stdout(std::fs::File::create(dir.join("gmetad.log"))?)
            .stderr(std::process::Stdio::null())
            .spawn()
            .context("starting gmetad")?,
    );
    // The RRD directory is the dump's CLUSTER NAME (the agents run with --gmond-cluster e2e).
    let deadline = Instant::now() + Duration::from_secs(40);
    for node in &env.lab.nodes {
        let host = rrds.join("e2e").join(&node.name);
        loop {
            match stored_values(&host) {
                Ok(summary) => {
                    eprintln!("xtask e2e: gmetad stored {} for {}", summary, node.name);
                    break;
                }
                Err(why) if Instant::now() > deadline => {
                    let log = std::fs::read_to_string(dir.join("gmetad.log")).unwrap_or_default();
                    bail!("gmetad has no usable RRDs for {}: {why:#}\ngmetad log:\n{log}", node.name);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(500)),
            }
        }
    }
    Ok(())
}

/// Checks a host's RRDs hold real numbers: the standard metrics and at least one per-disk
/// iostat metric, each with a value (not NaN) among its last 30 seconds.
fn stored_values(host: &Path) -> anyhow::Result<String> {
    let mut files: Vec<String> = std::fs::read_dir(host)
        .with_context(|| format!("no {}", host.display()))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    files.sort();
    let iostat = files.iter().find(|f| f.starts_with("disk_") && f.ends_with("_r_per_second.rrd")).cloned();
    let iostat = iostat.context("no per-disk iostat RRD yet")?;
    let mut summary = Vec::new();
    for file in ["mem_total.rrd", "load_one.rrd", "cpu_idle.rrd", "bytes_in.rrd", iostat.as_str()] {
        let out = read(
            Command::new("rrdtool").arg("fetch").arg(host.join(file)).args(["AVERAGE", "--start", "-30"]),
        )?;
        let value = out
            .lines()
            .filter_map(|l| l.split_once(": ").map(|(_, v)| v.trim()))
            .filter_map(|v| v.parse::<f64>().ok())
            .rfind(|v| v.is_finite())
            .with_context(|| format!("{file} holds no value yet"))?;
        summary.push(format!("{}={value}", file.trim_end_matches(".rrd")));
    }
    Ok(format!("{} RRDs, e.g. {}", files.len(), summary.join(", ")))
}
