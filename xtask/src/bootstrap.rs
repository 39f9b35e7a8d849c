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
//!    each answers over mTLS, each node's commands over one SSH connection (sshd's journal
//!    counts one login per node); `pvfsctl nodes` answers for every node;
//! 3. a second `bootstrap` changes nothing (0 changed in the recap);
//! 4. with node3's key in known_hosts replaced by another key, and node1's agent stopped:
//!    node3 is refused (host key, nothing changed there) and named with what to do, node1 is
//!    started again, the run exits 1;
//! 5. with node3 absent from known_hosts: refused as unknown; with `--accept-new-host-keys`
//!    its key is recorded and it is left as it is (0 changed);
//! 6. node2 answers the probe as a glibc 2.12 node would (a `getconf` first in PATH) and lacks
//!    its environment file: refused, naming both glibc versions, and nothing written there;
//!    node1's agent is stopped with a policy file it refuses: the failure carries the unit's
//!    journal lines, which name the file; both put right, a last run succeeds;
//! 7. node3 is switched to the .deb (`--deb`) and back: each route removes the other's binary
//!    and unit (or package), the agent answering is the one just installed (its executable, and
//!    systemd's unit and main process), and a second run of each changes nothing;
//! 8. a drop-in makes node1's unit start another build: after the restart the agent answering
//!    is not what was installed, and the run fails naming it.

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
pub struct Lab {
    run_id: String,
    network: String,
    keep: bool,
    /// What the containers' names say they are for (`boot`, `bench`).
    tag: &'static str,
    /// Name and address of each node.
    pub nodes: Vec<(String, String)>,
}

impl Lab {
    /// Containers running systemd and sshd (no agent) for `nodes` on their own network
    /// `subnet`, booted, each admitted to `ssh` (its own host keys, our key for root).
    pub fn start(
        image: &str,
        tag: &'static str,
        subnet: &str,
        nodes: Vec<(String, String)>,
        ssh: &mut SshLab,
        keep: bool,
    ) -> anyhow::Result<Lab> {
        let run_id = format!("{}", std::process::id());
        let lab =
            Lab { run_id: run_id.clone(), network: format!("pvfs-e2e-{tag}-{run_id}"), keep, tag, nodes };
        step(docker().args(["network", "create", "--driver", "bridge", "--subnet", subnet]).args([
            "--label",
            &format!("{LABEL}={run_id}"),
            &lab.network,
        ]))
        .with_context(|| format!("creating the network {subnet} (is another run using it?)"))?;
        for (name, ip) in &lab.nodes {
            let mut run = docker();
            run.args(["run", "--detach", "--name", &lab.container(name), "--hostname", name])
                .args(["--network", &lab.network, "--ip", ip, "--label", &format!("{LABEL}={run_id}")])
                // As in the gluster scenario: systemd as PID 1 in a container, and what the
                // agent's unit needs to start there. No agent, no certificate: bootstrap brings
                // them.
                .args(["--env", "container=docker", "--stop-signal", "SIGRTMIN+3"])
                .args(["--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp"])
                .args(["--volume", "/sys/fs/cgroup:/sys/fs/cgroup:ro"])
                .args(["--cap-add", "SYS_ADMIN", "--security-opt", "seccomp=unconfined"])
                .args(["--security-opt", "apparmor=unconfined"])
                .args([image, "/sbin/init"]);
            read(&mut run).with_context(|| format!("starting container for {name}"))?;
        }
        // The test's SSH world: our key authorized, each node's own host keys in known_hosts.
        for (name, ip) in &lab.nodes {
            boot(&lab, name)?;
            ssh.admit(&lab.container(name), ip)?;
            ensure!(
                lab.exec(name, &["systemctl", "is-enabled", "pvfs-agent"]).is_err(),
                "{name} has an agent already"
            );
        }
        Ok(lab)
    }

    pub fn container(&self, name: &str) -> String {
        format!("pvfs-e2e-{}-{}-{name}", self.run_id, self.tag)
    }

    pub fn exec(&self, name: &str, args: &[&str]) -> anyhow::Result<String> {
        read(docker().arg("exec").arg(self.container(name)).args(args))
    }

    /// The SSH logins sshd accepted on `name` so far (one per connection: a multiplexed
    /// session is not a login), from its journal.
    pub fn ssh_logins(&self, name: &str) -> anyhow::Result<usize> {
        // Not `journalctl -g`, which fails when nothing matches yet.
        let journal = self.exec(name, &["journalctl", "--no-pager", "-q", "-u", "ssh"])?;
        Ok(journal.lines().filter(|l| l.contains("Accepted publickey")).count())
    }

    fn logs(&self) -> String {
        let mut all = String::new();
        for (name, _) in &self.nodes {
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
        for (name, _) in &self.nodes {
            let _ = capture(docker().args(["rm", "--force", "--volumes", &self.container(name)]));
        }
        let _ = capture(docker().args(["network", "rm", &self.network]));
    }
}

/// Runs the scenario with `binary` as both the coordinator and what it installs.
pub fn run(binary: &Path, image: &str, work: &Path, keep: bool) -> anyhow::Result<()> {
    let run_id = format!("{}", std::process::id());
    let mut ssh = SshLab::new(&work.join("ssh"))?;
    let nodes = NODES.iter().map(|(n, ip)| ((*n).to_owned(), (*ip).to_owned())).collect();
    let lab = Lab::start(image, "boot", SUBNET, nodes, &mut ssh, keep)?;

    // The cluster file and the CA (bootstrap never creates a CA).
    let tls = work.join("tls");
    read(Command::new(binary).args(["ctl", "ca", "init", "--dir"]).arg(&tls))?;
    let cluster = cluster_file(work, &format!("bootstrap e2e {run_id}"), &tls, &lab.nodes)?;
    let ctx = Ctx { binary: binary.to_owned(), cluster, config: ssh.config.clone() };
    let result = scenario(&lab, &ctx, &ssh, work);
    if result.is_err() {
        eprintln!("xtask e2e: bootstrap scenario failed; journals:\n{}", lab.logs());
    }
    result
}

/// The cluster file of `nodes`, with its CA in `tls`.
pub fn cluster_file(
    work: &Path,
    comment: &str,
    tls: &Path,
    nodes: &[(String, String)],
) -> anyhow::Result<PathBuf> {
    let mut toml = format!(
        "# {comment}\n[cluster]\nname = \"boot-e2e\"\nkind = \"local\"\n\n[tls]\ndir = \"{}\"\n\n[local]\nmount = \"/mnt/pvfs\"\n",
        tls.display()
    );
    for (name, ip) in nodes {
        toml += &format!(
            "\n[[node]]\nname = \"{name}\"\naddress = \"{ip}:7070\"\nroles = [\"server\", \"client\"]\n"
        );
    }
    let cluster = work.join("cluster.toml");
    std::fs::write(&cluster, toml)?;
    Ok(cluster)
}

pub struct Ctx {
    pub binary: PathBuf,
    pub cluster: PathBuf,
    pub config: PathBuf,
}

impl Ctx {
    /// `pvfsctl bootstrap CLUSTER --ssh-config FILE --json EXTRA…`: exit code, events, stderr.
    pub fn bootstrap(&self, extra: &[&str]) -> anyhow::Result<(Option<i32>, Vec<Value>, String)> {
        self.bootstrap_with(&mut Command::new(&self.binary), extra)
    }

    /// As [`Ctx::bootstrap`], run as `command` (its environment: a PATH, say).
    pub fn bootstrap_with(
        &self,
        command: &mut Command,
        extra: &[&str],
    ) -> anyhow::Result<(Option<i32>, Vec<Value>, String)> {
        let started = Instant::now();
        let out = capture(
            command
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

fn scenario(lab: &Lab, ctx: &Ctx, ssh: &SshLab, work: &Path) -> anyhow::Result<()> {
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

    // 2. The real run: every node changed, every agent answering, each node's commands over
    // one SSH connection (sshd logs one login per connection, none per multiplexed session).
    let logins =
        |lab: &Lab| -> anyhow::Result<Vec<usize>> { NODES.iter().map(|(n, _)| lab.ssh_logins(n)).collect() };
    let before = logins(lab)?;
    let (code, events, stderr) = ctx.bootstrap(&[])?;
    ensure!(code == Some(0), "bootstrap failed: {stderr}\n{events:?}");
    let after = logins(lab)?;
    for ((name, _), (b, a)) in NODES.iter().zip(before.iter().zip(&after)) {
        eprintln!("xtask e2e: {name}: {} SSH login(s) for the first bootstrap", a - b);
        ensure!(
            a - b == 1,
            "{name}: {} SSH logins in one bootstrap, want 1 (one multiplexed connection)",
            a - b
        );
    }
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

    switch_routes(lab, ctx, work)?;
    another_agent_answers(lab, ctx)?;
    Ok(())
}

/// Step 7: node3 goes from the binary to the .deb and back: each time the other route's agent is
/// removed, and the agent that answers is the one just installed (its build, its path, its
/// unit); a second run of each changes nothing.
fn switch_routes(lab: &Lab, ctx: &Ctx, work: &Path) -> anyhow::Result<()> {
    let deb = crate::deb::build_from_binary(&ctx.binary, &work.join("deb"))?;
    let deb_arg = deb.to_string_lossy().into_owned();
    let node = "node3";
    let running_exe = |lab: &Lab| -> anyhow::Result<String> {
        let pid = lab.exec(node, &["systemctl", "show", "-p", "MainPID", "--value", "pvfs-agent"])?;
        Ok(lab.exec(node, &["readlink", &format!("/proc/{}/exe", pid.trim())])?.trim().to_owned())
    };
    let unit = |lab: &Lab| -> anyhow::Result<String> {
        Ok(lab
            .exec(node, &["systemctl", "show", "-p", "FragmentPath", "--value", "pvfs-agent"])?
            .trim()
            .to_owned())
    };
    ensure!(
        running_exe(lab)? == "/usr/local/bin/pvfs-agent",
        "node3 does not run the tarball's agent to begin with"
    );

    let (code, events, stderr) = ctx.bootstrap(&["--deb", &deb_arg, "--node", node])?;
    ensure!(code == Some(0), "bootstrap --deb over the tarball route failed: {stderr}\n{events:?}");
    let probed = find(&events, "probed", node).context("no probe of node3")?;
    ensure!(
        probed["changes"].as_array().is_some_and(|c| c.iter().any(|c| c.as_str().is_some_and(
            |c| c.starts_with("remove /usr/local/bin/pvfs-agent /etc/systemd/system/pvfs-agent.service")
        ))),
        "the plan does not remove the tarball's files: {probed}"
    );
    let ready = find(&events, "ready", node).context("node3 never answered")?;
    eprintln!("xtask e2e: node3 on the package: {ready}");
    ensure!(
        ready["executable"] == "/usr/bin/pvfs-agent",
        "the agent answering is not the package's: {ready}"
    );
    ensure!(running_exe(lab)? == "/usr/bin/pvfs-agent", "systemd runs {}", running_exe(lab)?);
    ensure!(unit(lab)? == "/lib/systemd/system/pvfs-agent.service", "the unit is {}", unit(lab)?);
    for gone in ["/usr/local/bin/pvfs-agent", "/etc/systemd/system/pvfs-agent.service"] {
        ensure!(lab.exec(node, &["test", "-e", gone]).is_err(), "{gone} is still on node3");
    }
    ensure!(lab.exec(node, &["systemctl", "is-enabled", "pvfs-agent"])?.trim() == "enabled");
    let (code, events, _) = ctx.bootstrap(&["--deb", &deb_arg, "--node", node])?;
    ensure!(
        code == Some(0) && total(&events, "changed") == 0,
        "a second --deb run changed things: {:?}",
        events.last()
    );

    // And back to the binary.
    let (code, events, stderr) = ctx.bootstrap(&["--node", node])?;
    ensure!(code == Some(0), "bootstrap over the package route failed: {stderr}\n{events:?}");
    let ready = find(&events, "ready", node).context("node3 never answered")?;
    ensure!(
        ready["executable"] == "/usr/local/bin/pvfs-agent",
        "the agent answering is not the binary: {ready}"
    );
    ensure!(running_exe(lab)? == "/usr/local/bin/pvfs-agent", "systemd runs {}", running_exe(lab)?);
    ensure!(unit(lab)? == "/etc/systemd/system/pvfs-agent.service", "the unit is {}", unit(lab)?);
    let status = lab.exec(node, &["sh", "-c", "dpkg-query -W -f '${Status}' pvfs 2>/dev/null; true"])?;
    ensure!(!status.ends_with(" installed"), "the package is still installed: {status}");
    for gone in ["/usr/bin/pvfs", "/usr/bin/pvfs-agent", "/var/cache/pvfs/pvfs.deb"] {
        ensure!(lab.exec(node, &["test", "-e", gone]).is_err(), "{gone} is still on node3");
    }
    ensure!(lab.exec(node, &["systemctl", "is-enabled", "pvfs-agent"])?.trim() == "enabled");
    let (code, events, _) = ctx.bootstrap(&["--node", node])?;
    ensure!(
        code == Some(0) && total(&events, "changed") == 0,
        "a second run changed things: {:?}",
        events.last()
    );
    Ok(())
}

/// Step 8: a drop-in makes node1's unit start another build (the binary with a byte appended, at
/// another path): bootstrap's restart leaves that one answering, which is a failure naming it;
/// the drop-in gone, a run succeeds.
fn another_agent_answers(lab: &Lab, ctx: &Ctx) -> anyhow::Result<()> {
    let node = "node1";
    lab.exec(node, &["sh", "-c", "mkdir -p /opt/other /etc/systemd/system/pvfs-agent.service.d && \
        cp /usr/local/bin/pvfs-agent /opt/other/pvfs-agent && printf x >> /opt/other/pvfs-agent && \
        printf '[Service]\\nExecStart=\\nExecStart=/opt/other/pvfs-agent\\n' > /etc/systemd/system/pvfs-agent.service.d/zz-other.conf && \
        systemctl daemon-reload && systemctl stop pvfs-agent"])?;
    let (code, events, _) = ctx.bootstrap(&["--node", node])?;
    ensure!(code == Some(1), "another build answering must fail the run: exit {code:?}");
    let failed = failure_of(&events, node)?;
    let message = failed["message"].as_str().unwrap_or_default();
    eprintln!("xtask e2e: node1 runs another build: {message}");
    ensure!(
        message.contains("is not the one installed") && message.contains("/opt/other/pvfs-agent"),
        "unclear mismatch: {failed}"
    );
    lab.exec(node, &["sh", "-c", "rm -r /etc/systemd/system/pvfs-agent.service.d /opt/other && systemctl daemon-reload && systemctl stop pvfs-agent"])?;
    let (code, events, stderr) = ctx.bootstrap(&["--node", node])?;
    ensure!(code == Some(0), "bootstrap without the drop-in failed: {stderr}\n{events:?}");
    Ok(())
}

/// Waits (bounded) until systemd in the container has finished booting.
pub fn boot(lab: &Lab, name: &str) -> anyhow::Result<()> {
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

pub fn json_lines(out: &Output) -> anyhow::Result<Vec<Value>> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str(l)
                .with_context(|| format!("not JSON: {l}\nstderr: {}", String::from_utf8_lossy(&out.stderr)))
        })
        .collect()
}

pub fn find<'a>(events: &'a [Value], event: &str, node: &str) -> Option<&'a Value> {
    events.iter().find(|e| e["event"] == event && e["node"] == node)
}

pub fn recap_of<'a>(events: &'a [Value], node: &str) -> anyhow::Result<&'a Value> {
    events
        .last()
        .filter(|r| r["event"] == "recap")
        .and_then(|r| r["nodes"].as_array())
        .and_then(|nodes| nodes.iter().find(|n| n["name"] == node))
        .with_context(|| format!("no recap line for {node}: {:?}", events.last()))
}

pub fn failure_of<'a>(events: &'a [Value], node: &str) -> anyhow::Result<&'a Value> {
    events
        .last()
        .and_then(|r| r["failures"].as_array())
        .and_then(|f| f.iter().find(|f| f["node"] == node))
        .with_context(|| format!("no failure for {node}: {:?}", events.last()))
}

/// The recap's sum of `field` over nodes.
pub fn total(events: &[Value], field: &str) -> u64 {
    events
        .last()
        .and_then(|r| r["nodes"].as_array())
        .map_or(0, |nodes| nodes.iter().filter_map(|n| n[field].as_u64()).sum())
}
