//! The bootstrap end-to-end scenario: `pvfsctl bootstrap` installs agents over real SSH on
//! containers that run systemd and Debian's openssh-server and have no agent at all.
//!
//! The test's SSH world is its own (`sshlab`: a key pair made here, each container's freshly
//! generated host keys in a known_hosts file, an ssh_config given with `--ssh-config`). The
//! scenario:
//!
//! 1. `bootstrap --plan` lists what each node needs and changes nothing (no agent afterwards,
//!    no certificate issued);
//! 2. `bootstrap` issues the certificates, installs and starts every agent, and waits until
//!    each answers over mTLS; `pvfsctl nodes` answers for every node;
//! 3. a second `bootstrap` changes nothing (0 changed in the recap);
//! 4. with node3's key in known_hosts replaced by another key, and node1's agent stopped:
//!    node3 is refused (host key, nothing changed there) and named with what to do, node1 is
//!    started again, the run exits 1;
//! 5. with node3 absent from known_hosts: refused as unknown; with `--accept-new-host-keys`
//!    its key is recorded and it is left as it is (0 changed);
//! 6. node2 answers the probe as a glibc 2.12 node would (a `getconf` first in PATH) and lacks
//!    its environment file: refused, naming both glibc versions, and nothing written there;
//!    node1's agent is stopped with a policy file it refuses: the failure carries the unit's
//!    journal lines, which name the file; both put right, a last run succeeds.

use crate::docker::{LABEL, docker};
use crate::sshlab::SshLab;
use crate::util::{capture, read, step};
use anyhow::{Context, bail, ensure};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Its own fixed network, apart from the gluster scenario's.
const SUBNET: &str = "10.213.251.0/24";
const NODES: [(&str, &str); 3] =
    [("node1", "10.213.251.11"), ("node2", "10.213.251.12"), ("node3", "10.213.251.13")];

/// Containers and network of one run, removed on drop (unless kept).
struct Lab {
    run_id: String,
    network: String,
    keep: bool,
}

impl Lab {
    fn container(&self, name: &str) -> String {
        format!("pvfs-e2e-{}-boot-{name}", self.run_id)
    }

    fn exec(&self, name: &str, args: &[&str]) -> anyhow::Result<String> {
        read(docker().arg("exec").arg(self.container(name)).args(args))
    }

    fn logs(&self) -> String {
        let mut all = String::new();
        for (name, _) in NODES {
            let journal = capture(docker().args([
                "exec",
                &self.container(name),
                "journalctl",
                "--no-pager",
                "-n",
                "30",
                "-u",
                "pvfs-agent",
                "-u",
                "ssh",
            ]));
            let text = journal.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
            all += &format!("--- {name} ---\n{text}\n");
        }
        all
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("xtask e2e: kept the bootstrap lab (network {})", self.network);
            return;
        }
        for (name, _) in NODES {
            let _ = capture(docker().args(["rm", "--force", "--volumes", &self.container(name)]));
        }
        let _ = capture(docker().args(["network", "rm", &self.network]));
    }
}

/// Runs the scenario with `binary` as both the coordinator and what it installs.
pub fn run(binary: &Path, image: &str, work: &Path, keep: bool) -> anyhow::Result<()> {
    let run_id = format!("{}", std::process::id());
    let lab = Lab { run_id: run_id.clone(), network: format!("pvfs-e2e-boot-{run_id}"), keep };
    step(docker().args(["network", "create", "--driver", "bridge", "--subnet", SUBNET]).args([
        "--label",
        &format!("{LABEL}={run_id}"),
        &lab.network,
    ]))
    .with_context(|| format!("creating the bootstrap network {SUBNET} (is another e2e run using it?)"))?;
    for (name, ip) in NODES {
        let mut run = docker();
        run.args(["run", "--detach", "--name", &lab.container(name), "--hostname", name])
            .args(["--network", &lab.network, "--ip", ip, "--label", &format!("{LABEL}={run_id}")])
            // As in the gluster scenario: systemd as PID 1 in a container, and what the
            // agent's unit needs to start there. No agent, no certificate: bootstrap brings them.
            .args(["--env", "container=docker", "--stop-signal", "SIGRTMIN+3"])
            .args(["--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp"])
            .args(["--volume", "/sys/fs/cgroup:/sys/fs/cgroup:ro"])
            .args(["--cap-add", "SYS_ADMIN", "--security-opt", "seccomp=unconfined"])
            .args(["--security-opt", "apparmor=unconfined"])
            .args([image, "/sbin/init"]);
        read(&mut run).with_context(|| format!("starting container for {name}"))?;
    }

    // The test's SSH world: our key authorized, each node's own host keys in known_hosts.
    let mut ssh = SshLab::new(&work.join("ssh"))?;
    for (name, ip) in NODES {
        boot(&lab, name)?;
        ssh.admit(&lab.container(name), ip)?;
        ensure!(
            lab.exec(name, &["systemctl", "is-enabled", "pvfs-agent"]).is_err(),
            "{name} has an agent already"
        );
    }

    // The cluster file and the CA (bootstrap never creates a CA).
    let tls = work.join("tls");
    read(Command::new(binary).args(["ctl", "ca", "init", "--dir"]).arg(&tls))?;
    let mut toml = format!(
        "# bootstrap e2e {run_id}\n[cluster]\nname = \"boot-e2e\"\nkind = \"local\"\n\n[tls]\ndir = \"{}\"\n\n[local]\nmount = \"/mnt/pvfs\"\n",
        tls.display()
    );
    for (name, ip) in NODES {
        toml += &format!(
            "\n[[node]]\nname = \"{name}\"\naddress = \"{ip}:7070\"\nroles = [\"server\", \"client\"]\n"
        );
    }
    let cluster = work.join("cluster.toml");
    std::fs::write(&cluster, toml)?;

    let ctx = Ctx { binary: binary.to_owned(), cluster, config: ssh.config.clone() };
    let result = scenario(&lab, &ctx, &ssh);
    if result.is_err() {
        eprintln!("xtask e2e: bootstrap scenario failed; journals:\n{}", lab.logs());
    }
    result
}

struct Ctx {
    binary: PathBuf,
    cluster: PathBuf,
    config: PathBuf,
}

impl Ctx {
    /// `pvfsctl bootstrap CLUSTER --ssh-config FILE --json EXTRA…`: exit code, events, stderr.
    fn bootstrap(&self, extra: &[&str]) -> anyhow::Result<(Option<i32>, Vec<Value>, String)> {
        let started = Instant::now();
        let out = capture(
            Command::new(&self.binary)
                .args(["ctl", "bootstrap"])
                .arg(&self.cluster)
                .arg("--ssh-config")
                .arg(&self.config)
                .args(["--json", "--wait", "30s"])
                .args(extra),
        )?;
        eprintln!(
            "xtask e2e: bootstrap {extra:?}: exit {:?} in {:.1}s",
            out.status.code(),
            started.elapsed().as_secs_f64()
        );
        let events = json_lines(&out)?;
        Ok((out.status.code(), events, String::from_utf8_lossy(&out.stderr).into_owned()))
    }

    fn nodes(&self) -> anyhow::Result<Output> {
        capture(Command::new(&self.binary).args(["ctl", "nodes"]).arg(&self.cluster).args([
            "--json",
            "--timeout",
            "3s",
        ]))
    }
}

fn scenario(lab: &Lab, ctx: &Ctx, ssh: &SshLab) -> anyhow::Result<()> {
    // 1. The plan: every node needs everything; nothing is issued or installed.
    let (code, events, stderr) = ctx.bootstrap(&["--plan"])?;
    ensure!(code == Some(0), "bootstrap --plan failed: {stderr}");
    for (name, _) in NODES {
        let probed = find(&events, "probed", name).with_context(|| format!("no probe of {name}"))?;
        let changes = probed["changes"].as_array().map_or(0, Vec::len);
        ensure!(changes >= 6, "{name}: the plan lists {changes} changes: {probed}");
        ensure!(
            lab.exec(name, &["test", "-e", "/usr/local/bin/pvfs-agent"]).is_err(),
            "--plan installed on {name}"
        );
    }
    ensure!(!ctx.cluster.with_file_name("tls/node1.crt").exists(), "--plan issued a certificate");
    ensure!(events.iter().all(|e| e["event"] != "change"), "--plan changed something");

    // 2. The real run: every node changed, every agent answering.
    let (code, events, stderr) = ctx.bootstrap(&[])?;
    ensure!(code == Some(0), "bootstrap failed: {stderr}\n{events:?}");
    for (name, _) in NODES {
        let counts = recap_of(&events, name)?;
        ensure!(counts["changed"].as_u64() >= Some(7) && counts["failed"] == 0, "{name}: {counts}");
        ensure!(find(&events, "ready", name).is_some(), "{name} never answered");
        // The key is private on the node, and the agent runs as the systemd service.
        ensure!(lab.exec(name, &["stat", "-c", "%a", &format!("/etc/pvfs/tls/{name}.key")])?.trim() == "600");
        ensure!(lab.exec(name, &["systemctl", "is-enabled", "pvfs-agent"])?.trim() == "enabled");
    }
    let out = ctx.nodes()?;
    ensure!(out.status.success(), "nodes after bootstrap: {}", String::from_utf8_lossy(&out.stderr));
    let nodes: Value = serde_json::from_slice(&out.stdout)?;
    for (node, (name, _)) in nodes["nodes"].as_array().context("no nodes")?.iter().zip(NODES) {
        ensure!(node["reachable"] == true && node["info"]["agent_name"] == name, "{name}: {node}");
    }

    // 3. Again: nothing changes.
    let (code, events, stderr) = ctx.bootstrap(&[])?;
    ensure!(code == Some(0), "second bootstrap failed: {stderr}");
    ensure!(total(&events, "changed") == 0, "second bootstrap changed things: {:?}", events.last());
    ensure!(events.iter().all(|e| e["event"] != "change"), "second bootstrap wrote: {events:?}");

    // 4. node3's host key is not what known_hosts says; node1's agent is stopped.
    ssh.trust_wrong_key_for(NODES[2].1)?;
    lab.exec("node1", &["systemctl", "stop", "pvfs-agent"])?;
    let (code, events, _) = ctx.bootstrap(&[])?;
    ensure!(code == Some(1), "a refused node must fail the run: exit {code:?}");
    let failure = failure_of(&events, "node3")?;
    let message = failure["message"].as_str().unwrap_or_default();
    eprintln!("xtask e2e: node3 refused: {message}\n  ssh said: {}", failure["stderr_tail"]);
    ensure!(failure["host_key"] == true, "not a host key refusal: {failure}");
    ensure!(
        message.contains("refused node node3")
            && message.contains("ssh-keygen")
            && message.contains("known_hosts"),
        "unclear refusal: {message}"
    );
    let node1 = recap_of(&events, "node1")?;
    ensure!(node1["changed"] == 1 && node1["failed"] == 0, "node1 was not started again: {node1}");
    ensure!(recap_of(&events, "node2")?["failed"] == 0);
    ensure!(lab.exec("node1", &["systemctl", "is-active", "pvfs-agent"])?.trim() == "active");

    // 5. node3 unknown: refused; then trusted on first contact, and left as it is.
    ssh.forget(NODES[2].1)?;
    let (code, events, _) = ctx.bootstrap(&[])?;
    let failure = failure_of(&events, "node3")?;
    eprintln!("xtask e2e: node3 unknown: {}\n  ssh said: {}", failure["message"], failure["stderr_tail"]);
    ensure!(code == Some(1) && failure["host_key"] == true, "unknown host key: {failure}");
    ensure!(failure["message"].as_str().unwrap_or_default().contains("--accept-new-host-keys"));
    let (code, events, stderr) = ctx.bootstrap(&["--accept-new-host-keys"])?;
    ensure!(code == Some(0), "--accept-new-host-keys failed: {stderr}");
    ensure!(total(&events, "changed") == 0, "accept-new changed things: {:?}", events.last());
    let recorded = std::fs::read_to_string(&ssh.known_hosts)?;
    ensure!(recorded.contains(NODES[2].1), "node3's key was not recorded: {recorded}");
    ensure!(ctx.nodes()?.status.success(), "nodes after the last bootstrap");

    // 6. node2 says it has glibc 2.12 (CentOS 6's) and lacks a file; node1 cannot start.
    lab.exec("node2", &["sh", "-c", "printf '#!/bin/sh\\necho glibc 2.12\\n' > /usr/local/bin/getconf"])?;
    lab.exec("node2", &["chmod", "755", "/usr/local/bin/getconf"])?;
    lab.exec("node2", &["rm", "/etc/pvfs/agent.env"])?;
    lab.exec("node1", &["sh", "-c", "echo 'this is = not [ a policy' > /etc/pvfs/policy.toml"])?;
    lab.exec("node1", &["systemctl", "stop", "pvfs-agent"])?;
    let (code, events, _) = ctx.bootstrap(&[])?;
    ensure!(code == Some(1), "an old glibc and a failing service must fail the run: exit {code:?}");
    let old = failure_of(&events, "node2")?;
    let message = old["message"].as_str().unwrap_or_default();
    eprintln!("xtask e2e: node2 with glibc 2.12: {message}");
    ensure!(
        message.contains("it has glibc 2.12")
            && message.contains("needs glibc 2.")
            && old["command"].is_null(),
        "unclear refusal: {old}"
    );
    ensure!(lab.exec("node2", &["test", "-e", "/etc/pvfs/agent.env"]).is_err(), "node2 was written to");
    let failed = failure_of(&events, "node1")?;
    let journal: Vec<&str> = failed["journal"]
        .as_array()
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    eprintln!("xtask e2e: node1's failed start, its journal:\n  {}", journal.join("\n  "));
    ensure!(
        journal.iter().any(|l| l.contains("policy.toml")),
        "the journal lines do not say why the agent did not start: {failed}"
    );
    lab.exec("node2", &["rm", "/usr/local/bin/getconf"])?;
    lab.exec("node1", &["rm", "/etc/pvfs/policy.toml"])?;
    let (code, events, stderr) = ctx.bootstrap(&[])?;
    ensure!(code == Some(0), "bootstrap after putting both right failed: {stderr}\n{events:?}");
    ensure!(ctx.nodes()?.status.success(), "nodes after the last bootstrap");
    Ok(())
}

/// Waits (bounded) until systemd in the container has finished booting.
fn boot(lab: &Lab, name: &str) -> anyhow::Result<()> {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let out = capture(docker().args(["exec", &lab.container(name), "systemctl", "is-system-running"]))?;
        let state = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if state == "running" || state == "degraded" {
            return Ok(());
        }
        if Instant::now() > until {
            bail!("{name}: systemd did not finish booting in 60 s (state {state:?})");
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn json_lines(out: &Output) -> anyhow::Result<Vec<Value>> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str(l)
                .with_context(|| format!("not JSON: {l}\nstderr: {}", String::from_utf8_lossy(&out.stderr)))
        })
        .collect()
}

fn find<'a>(events: &'a [Value], event: &str, node: &str) -> Option<&'a Value> {
    events.iter().find(|e| e["event"] == event && e["node"] == node)
}

fn recap_of<'a>(events: &'a [Value], node: &str) -> anyhow::Result<&'a Value> {
    events
        .last()
        .filter(|r| r["event"] == "recap")
        .and_then(|r| r["nodes"].as_array())
        .and_then(|nodes| nodes.iter().find(|n| n["name"] == node))
        .with_context(|| format!("no recap line for {node}: {:?}", events.last()))
}

fn failure_of<'a>(events: &'a [Value], node: &str) -> anyhow::Result<&'a Value> {
    events
        .last()
        .and_then(|r| r["failures"].as_array())
        .and_then(|f| f.iter().find(|f| f["node"] == node))
        .with_context(|| format!("no failure for {node}: {:?}", events.last()))
}

/// The recap's sum of `field` over nodes.
fn total(events: &[Value], field: &str) -> u64 {
    events
        .last()
        .and_then(|r| r["nodes"].as_array())
        .map_or(0, |nodes| nodes.iter().filter_map(|n| n[field].as_u64()).sum())
}
