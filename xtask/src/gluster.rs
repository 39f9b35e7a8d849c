//! The GlusterFS end-to-end scenario: `pvfsctl up config/glusterfs-e2e.toml` on two server
//! containers and one client, for real.
//!
//! Each container boots systemd and runs Debian's openssh-server, and starts with no agent:
//! `pvfsctl bootstrap` installs them over real SSH ([`install_agents`]), gfs1 and client1 from
//! the binary, gfs2 from the Debian package, as an operator would on fresh hosts; glusterd and
//! the agent then run as the services they are on a real node. Each server gets a loop device
//! of the host as /dev/pvfs-disk0 for its XFS brick; the client has /dev/fuse. The scenario:
//!
//! 0. bootstrap installs every agent and `nodes` answers; a second bootstrap changes nothing; a
//!    node with a wrong host key in known_hosts is refused with what to do;
//! 1. `up --plan` on the fresh cluster lists the steps and changes nothing;
//! 2. `up`, with gfs2's container killed while it starts glusterd: the run fails naming gfs2,
//!    and the volume and client units are skipped;
//! 3. gfs2 started again, `up` again: it converges;
//! 4. the client's mount is a real FUSE mount (`findmnt`) and files written there land on both
//!    bricks;
//! 5. a second `up` changes nothing, and `--plan` finds nothing to change;
//! 6. nothing was done twice: one fstab line per mount, `mkfs.xfs` run at most once per disk,
//!    two bricks in the volume, one peer; then `down` takes it apart (client unmounted, volume
//!    and peer gone, bricks unmounted, glusterd stopped), a second `down` changes nothing,
//!    `down --wipe` refuses without the cluster's name and then destroys the bricks' disks,
//!    and `up` builds the cluster again;
//! 7. `pvfsctl bench` with the built-in engine runs on the FUSE client and keeps every node's
//!    metrics, `pvfsctl report` finds real network traffic, and a client cut off the network
//!    mid-run ends the run with an error naming it, partial results kept;
//! 8. the mpi launcher: mpirun (Debian's Open MPI) started by the client's agent runs the
//!    built-in engine as MPI ranks; `--engine ior` fails naming the client, as IOR is absent;
//!    then across hosts with `[bench] mpi_ssh = true` ([`mpi_across_hosts`]): gfs2 (the .deb)
//!    becomes a second client, `up` installs the cluster's MPI key where the agents' policy
//!    grants it, mpirun on gfs2 reaches client1 (the tarball) over that key, and a forged host
//!    key fails the run saying so until `up` repairs it.
//!
//! gfs2's package (`dpkg -i` by bootstrap of a .deb built around the same binary) is enabled,
//! so its agent comes back by itself when the scenario restarts gfs2's container. Afterwards
//! the package's own life there ([`deb_lifecycle`]): remove, reinstall without certificates
//! (enabled, not started, postinst says what is missing), with them (it starts), and again (an
//! upgrade restarts it). Its postinst without systemd, remove and purge are tried beforehand in
//! a plain container.

use crate::docker::{LABEL, docker};
use crate::sshlab::SshLab;
use crate::util::{capture, read, root, step};
use anyhow::{Context, bail, ensure};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The cluster file's fixed network (config/glusterfs-e2e.toml).
const SUBNET: &str = "10.213.250.0/24";
const NODES: [(&str, &str, bool); 3] =
    [("gfs1", "10.213.250.11", true), ("gfs2", "10.213.250.12", true), ("client1", "10.213.250.13", false)];
/// The node whose agent comes from the .deb.
const DEB_NODE: &str = "gfs2";
/// Where bootstrap puts the binary it copies (`pvfs_bootstrap::REMOTE_BINARY`; xtask
/// links none of the workspace's crates).
const BOOTSTRAPPED_BINARY: &str = "/usr/local/bin/pvfs-agent";
/// xfsprogs 6.1 refuses file systems under 300 MB.
const DISK_BYTES: u64 = 512 << 20;

/// Containers, network and loop devices of one run, removed on drop (unless kept).
struct Lab {
    run_id: String,
    work: PathBuf,
    network: String,
    loops: Vec<String>,
    keep: bool,
    /// The .deb [`DEB_NODE`] is installed from (bootstrap runs again with it).
    deb: PathBuf,
}

impl Lab {
    fn container(&self, name: &str) -> String {
        format!("pvfs-e2e-{}-{name}", self.run_id)
    }

    fn exec(&self, name: &str, args: &[&str]) -> anyhow::Result<String> {
        read(docker().arg("exec").arg(self.container(name)).args(args))
    }

    fn logs(&self) -> String {
        let mut all = String::new();
        for (name, _, _) in NODES {
            let journal = capture(docker().args([
                "exec",
                &self.container(name),
                "journalctl",
                "--no-pager",
                "-n",
                "40",
                "-u",
                "pvfs-agent",
                "-u",
                "glusterd",
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
            eprintln!("xtask e2e: kept the gluster lab (network {}, loops {:?})", self.network, self.loops);
            return;
        }
        for (name, _, _) in NODES {
            let _ = capture(docker().args(["rm", "--force", "--volumes", &self.container(name)]));
        }
        let _ = capture(docker().args(["network", "rm", &self.network]));
        for dev in &self.loops {
            let _ = capture(Command::new("losetup").args(["-d", dev]));
        }
    }
}

/// Runs the scenario with agents from `binary`.
pub fn run(binary: &Path, image: &str, work: &Path, keep: bool) -> anyhow::Result<()> {
    crate::util::ensure_programs(&[("losetup", "mount")])?;
    let run_id = format!("{}", std::process::id());
    let mut lab = Lab {
        run_id: run_id.clone(),
        work: work.to_owned(),
        network: format!("pvfs-e2e-gluster-{run_id}"),
        loops: vec![],
        keep,
        deb: PathBuf::new(),
    };
    step(docker().args(["network", "create", "--driver", "bridge", "--subnet", SUBNET]).args([
        "--label",
        &format!("{LABEL}={run_id}"),
        &lab.network,
    ]))
    .with_context(|| format!("creating the gluster network {SUBNET} (is another e2e run using it?)"))?;

    let tls = work.join("gluster-tls");
    let ctl = |args: &[&str]| read(Command::new(binary).arg("ctl").args(args));
    let tls_arg = tls.to_string_lossy().into_owned();
    // Only the CA: `pvfsctl bootstrap` issues the nodes' and the coordinator's certificates.
    ctl(&["ca", "init", "--dir", &tls_arg])?;
    let deb = crate::deb::build_from_binary(binary, &work.join("deb"))?;
    lab.deb = deb.clone();
    deb_without_systemd(image, &deb, &run_id)?;
    for (name, ip, server) in NODES {
        let node_dir = work.join("gluster-nodes").join(name);
        std::fs::create_dir_all(&node_dir)?;
        let mut run = docker();
        run.args(["run", "--detach", "--name", &lab.container(name), "--hostname", name])
            .args(["--network", &lab.network, "--ip", ip, "--label", &format!("{LABEL}={run_id}")])
            // systemd as PID 1: it needs to know it is in a container, its own /run, the
            // cgroup tree (v1 here), and the stop signal it understands.
            .args(["--env", "container=docker", "--stop-signal", "SIGRTMIN+3"])
            .args(["--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp"])
            .args(["--volume", "/sys/fs/cgroup:/sys/fs/cgroup:ro"])
            // Mounting XFS and FUSE, and glusterd's trusted.* xattrs, need CAP_SYS_ADMIN; the
            // default seccomp and AppArmor profiles forbid mount(2) even then.
            // NET_ADMIN: `bench --fault cut-network` takes a node's interface down.
            .args([
                "--cap-add",
                "SYS_ADMIN",
                "--cap-add",
                "NET_ADMIN",
                "--security-opt",
                "seccomp=unconfined",
                "--security-opt",
                "apparmor=unconfined",
            ])
            .args(["--device", "/dev/fuse"]);
        if server {
            let disk = node_dir.join("disk.img");
            let file = std::fs::File::create(&disk)?;
            file.set_len(DISK_BYTES)?;
            let dev = read(Command::new("losetup").args(["--find", "--show"]).arg(&disk))?.trim().to_owned();
            lab.loops.push(dev.clone());
            run.args(["--device", &format!("{dev}:/dev/pvfs-disk0")]);
        }
        run.args([image, "/sbin/init"]);
        read(&mut run).with_context(|| format!("starting container for {name}"))?;
    }
    for (name, _, _) in NODES {
        boot(&lab, name)?;
    }
    let cluster = root().join("config/glusterfs-e2e.toml");
    let cluster = cluster.to_string_lossy().into_owned();
    install_agents(&lab, binary, &deb, &cluster, &tls_arg)?;
    let up = |extra: &[&str]| -> anyhow::Result<(Option<i32>, Vec<Value>, String)> {
        let out = capture(
            Command::new(binary).args(["ctl", "up", &cluster, "--tls-dir", &tls_arg, "--json"]).args(extra),
        )?;
        let events = json_lines(&out.stdout)?;
        Ok((out.status.code(), events, String::from_utf8_lossy(&out.stderr).into_owned()))
    };
    wait_reachable(binary, &cluster, &tls_arg, Duration::from_secs(60))?;
    let result = scenario(&lab, binary, &cluster, &tls_arg, &up).and_then(|()| deb_lifecycle(&lab, DEB_NODE));
    if result.is_err() {
        eprintln!("xtask e2e: gluster scenario failed; journals:\n{}", lab.logs());
    }
    result
}

/// The package where systemd is not PID 1 (a plain container, no init): postinst enables the
/// unit for a later boot and says it started nothing; `dpkg -r` keeps the conffile; `dpkg
/// --purge` removes it, the enable link and the state directory, and leaves /etc/pvfs (with its
/// certificates) in place, saying so.
fn deb_without_systemd(image: &str, deb: &Path, run_id: &str) -> anyhow::Result<()> {
    let script = "set -e
dpkg -i /var/tmp/pvfs.deb
test -L /etc/systemd/system/multi-user.target.wants/pvfs-agent.service
echo \"modes: $(stat -c %a /etc/pvfs /etc/pvfs/tls /var/lib/pvfs | tr '\\n' ' ')\"
echo 'PVFS_AGENT_NAME=\"renamed1\"' >> /etc/pvfs/agent.env
dpkg -i /var/tmp/pvfs.deb
touch /etc/pvfs/tls/ca.crt
dpkg -r pvfs
test -f /etc/pvfs/agent.env && echo 'conffile kept on remove'
dpkg --purge pvfs
test ! -e /etc/pvfs/agent.env && test -f /etc/pvfs/tls/ca.crt && echo 'purge kept the certificates'
test ! -e /var/lib/pvfs && test ! -e /etc/systemd/system/multi-user.target.wants/pvfs-agent.service && echo 'purge removed the rest'
";
    let out = capture(
        docker()
            .args(["run", "--rm", "--network", "none", "--label", &format!("{LABEL}={run_id}")])
            .args(["--hostname", "plain1", "--volume", &format!("{}:/var/tmp/pvfs.deb:ro", deb.display())])
            .args([image, "sh", "-c", script]),
    )?;
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    ensure!(out.status.success(), "the package without systemd: {}\n{said}", out.status);
    for expected in [
        "pvfs-agent: enabled, not started: missing /etc/pvfs/tls/ca.crt /etc/pvfs/tls/plain1.crt /etc/pvfs/tls/plain1.key;",
        // The name from the environment file (an administrator's edit, kept by the reinstall).
        "missing /etc/pvfs/tls/ca.crt /etc/pvfs/tls/renamed1.crt /etc/pvfs/tls/renamed1.key;",
        "pvfs-agent: systemd is not running here (no /run/systemd/system)",
        "modes: 700 700 700 ",
        "conffile kept on remove",
        "pvfs: /etc/pvfs left in place",
        "purge kept the certificates",
        "purge removed the rest",
    ] {
        ensure!(said.contains(expected), "the package without systemd did not say {expected:?}:\n{said}");
    }
    eprintln!(
        "xtask e2e: .deb without systemd: enabled for the next boot, not started; purge kept /etc/pvfs"
    );
    Ok(())
}

/// How the agents get onto the nodes: as an operator installs them on fresh hosts, with
/// `pvfsctl bootstrap` over real SSH (sshd in every container, host keys verified; the test's
/// keys from `sshlab`). Every node but [`DEB_NODE`] gets the agent's program beside `binary`
/// (`--from`: the dist tarball's `bin/pvfs-agent` under `cargo xtask ci`), [`DEB_NODE`] the .deb (`--deb`: `dpkg -i` on the node); the
/// certificates are issued by bootstrap from the CA. Then `nodes` answers for all, a second
/// bootstrap changes nothing (its time is printed), and a node whose host key is not the one in
/// known_hosts is refused, named, and left alone.
fn install_agents(lab: &Lab, binary: &Path, deb: &Path, cluster: &str, tls: &str) -> anyhow::Result<()> {
    let mut ssh = SshLab::new(&lab.work.join("ssh"))?;
    for (name, ip, _) in NODES {
        ssh.admit(&lab.container(name), ip)?;
        ensure!(lab.exec(name, &["test", "-e", "/etc/pvfs"]).is_err(), "{name} has an agent already");
    }
    let config = ssh.config.to_string_lossy().into_owned();
    let bootstrap = |nodes: &[&str], from: &[&str]| -> anyhow::Result<Bootstrapped> {
        let mut cmd = Command::new(binary);
        cmd.args(["ctl", "bootstrap", cluster, "--tls-dir", tls, "--ssh-config", &config, "--json"]);
        for node in nodes {
            cmd.args(["--node", node]);
        }
        let started = Instant::now();
        let out = capture(cmd.args(from))?;
        let events = json_lines(&out.stdout)?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        Ok(Bootstrapped { code: out.status.code(), events, stderr, took: started.elapsed() })
    };
    let binary_nodes: Vec<&str> = NODES.iter().map(|n| n.0).filter(|n| *n != DEB_NODE).collect();
    // The agent's own program beside the binary (dist's), as bootstrap would pick it itself.
    let binary_arg = pvfs_host::paths::agent_program(binary).to_string_lossy().into_owned();
    let deb_arg = deb.to_string_lossy().into_owned();
    let from_binary = ["--from", binary_arg.as_str()];
    let from_deb = ["--deb", deb_arg.as_str()];
    let both = [(&binary_nodes[..], &from_binary), (&[DEB_NODE][..], &from_deb)];

    // Fresh nodes: everything installed, every agent answering over mutual TLS.
    for (nodes, from) in both {
        let run = bootstrap(nodes, from)?;
        ensure!(
            run.code == Some(0),
            "bootstrap {nodes:?} {from:?} exited {:?}: {}\n{:?}",
            run.code,
            run.stderr,
            run.events
        );
        for node in nodes {
            let counts = run.recap_of(node)?;
            ensure!(counts["changed"].as_u64() >= Some(6) && counts["failed"] == 0, "{node}: {counts}");
            ensure!(run.find("ready", node).is_some(), "{node} never answered: {:?}", run.events);
        }
        eprintln!("xtask e2e: bootstrap {nodes:?} ({}): {:.1}s", from[0], run.took.as_secs_f64());
    }
    for (name, _, _) in NODES {
        ensure!(lab.exec(name, &["stat", "-c", "%a", &format!("/etc/pvfs/tls/{name}.key")])?.trim() == "600");
        ensure!(lab.exec(name, &["systemctl", "is-enabled", "pvfs-agent"])?.trim() == "enabled");
        // Which installation runs: the package's /usr/bin/pvfs-agent, or the binary bootstrap
        // copied.
        let exe = lab.exec(
            name,
            &["sh", "-c", "readlink /proc/$(systemctl show -p MainPID --value pvfs-agent)/exe"],
        )?;
        let package = capture(docker().args([
            "exec",
            &lab.container(name),
            "dpkg-query",
            "-W",
            "-f",
            "${Status}",
            "pvfs",
        ]))?;
        let package = String::from_utf8_lossy(&package.stdout).into_owned();
        // The big file is stamped, so the next run reads its identity instead of hashing it.
        let big = if name == DEB_NODE { "/var/cache/pvfs/pvfs.deb" } else { BOOTSTRAPPED_BINARY };
        let stamps = lab.exec(name, &["cat", "/var/cache/pvfs/bootstrap.stamps"])?;
        ensure!(stamps.starts_with(&format!("{big} ")), "{name}: bootstrap's stamps: {stamps}");
        if name == DEB_NODE {
            ensure!(
                exe.trim() == "/usr/bin/pvfs-agent" && package == "install ok installed",
                "{name}: runs {exe:?}, package {package:?}"
            );
            // The environment file is bootstrap's, and still the package's conffile (dpkg keeps
            // it on upgrades rather than asking).
            let env = lab.exec(name, &["cat", "/etc/pvfs/agent.env"])?;
            ensure!(env.contains(&format!("PVFS_AGENT_NAME={name}")), "{name}: agent.env:\n{env}");
            let conffiles = lab.exec(name, &["dpkg-query", "-W", "-f", "${Conffiles}", "pvfs"])?;
            ensure!(conffiles.contains("/etc/pvfs/agent.env"), "{name}: conffiles: {conffiles}");
        } else {
            ensure!(exe.trim() == BOOTSTRAPPED_BINARY, "{name}: the agent runs {exe:?}");
            ensure!(
                package.is_empty() || !package.contains(" installed"),
                "{name}: has the package: {package:?}"
            );
        }
    }
    wait_reachable(binary, cluster, tls, Duration::from_secs(30))?;
    let out = capture(Command::new(binary).args(["ctl", "nodes", cluster, "--tls-dir", tls, "--json"]))?;
    let nodes: Value = serde_json::from_slice(&out.stdout)?;
    for (node, (name, _, _)) in nodes["nodes"].as_array().context("no nodes")?.iter().zip(NODES) {
        ensure!(node["reachable"] == true && node["info"]["agent_name"] == name, "{name}: {node}");
    }

    // Again: nothing to do, on either route.
    for (nodes, from) in both {
        let run = bootstrap(nodes, from)?;
        ensure!(run.code == Some(0), "second bootstrap {nodes:?}: {}", run.stderr);
        ensure!(
            run.total("changed") == 0 && run.events.iter().all(|e| e["event"] != "change"),
            "second bootstrap {nodes:?} changed things: {:?}",
            run.events
        );
        eprintln!(
            "xtask e2e: second bootstrap {nodes:?} ({}): 0 changed, {:.1}s",
            from[0],
            run.took.as_secs_f64()
        );
    }

    // A node whose host key is not the one known: refused with what to do, nothing done there;
    // the others are left as they are.
    let victim = binary_nodes[0];
    let victim_ip = NODES.iter().find(|n| n.0 == victim).map(|n| n.1).unwrap_or_default();
    ssh.trust_wrong_key_for(victim_ip)?;
    let run = bootstrap(&binary_nodes, &from_binary)?;
    ssh.trust_all()?;
    ensure!(run.code == Some(1), "a refused host key must fail the run: exit {:?}", run.code);
    let failure = run.failure_of(victim)?;
    let message = failure["message"].as_str().unwrap_or_default();
    ensure!(
        failure["host_key"] == true
            && message.contains(&format!("refused node {victim}"))
            && message.contains("known_hosts"),
        "unclear host key refusal: {failure}"
    );
    for node in binary_nodes.iter().filter(|n| **n != victim) {
        let counts = run.recap_of(node)?;
        ensure!(counts["changed"] == 0 && counts["failed"] == 0, "{node} beside the refused node: {counts}");
    }
    eprintln!("xtask e2e: {victim} with a wrong host key: refused: {message}");
    Ok(())
}

/// One `pvfsctl bootstrap --json` run.
struct Bootstrapped {
    code: Option<i32>,
    events: Vec<Value>,
    stderr: String,
    took: Duration,
}

impl Bootstrapped {
    fn find(&self, event: &str, node: &str) -> Option<&Value> {
        self.events.iter().find(|e| e["event"] == event && e["node"] == node)
    }

    fn recap(&self) -> anyhow::Result<&Value> {
        self.events
            .last()
            .filter(|r| r["event"] == "recap")
            .with_context(|| format!("no recap: {:?}", self.events.last()))
    }

    fn recap_of(&self, node: &str) -> anyhow::Result<&Value> {
        self.recap()?["nodes"]
            .as_array()
            .and_then(|nodes| nodes.iter().find(|n| n["name"] == node))
            .with_context(|| format!("no recap line for {node}: {:?}", self.events.last()))
    }

    fn failure_of(&self, node: &str) -> anyhow::Result<&Value> {
        self.recap()?["failures"]
            .as_array()
            .and_then(|f| f.iter().find(|f| f["node"] == node))
            .with_context(|| format!("no failure for {node}: {:?}", self.events.last()))
    }

    fn total(&self, field: &str) -> u64 {
        total(&self.events, field)
    }
}

/// After the scenario, the package's own life on [`DEB_NODE`], where bootstrap installed it:
/// `dpkg -r` stops the agent and keeps the certificates; reinstalled without certificates, it
/// is enabled but not started, and postinst says which files are missing and how to get them;
/// with them back, a reinstall starts it; a second reinstall (an upgrade) restarts it.
fn deb_lifecycle(lab: &Lab, name: &str) -> anyhow::Result<()> {
    let container = lab.container(name);
    let state = |verb: &str| -> anyhow::Result<String> {
        let out = capture(docker().args(["exec", &container, "systemctl", verb, "pvfs-agent"]))?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let said = lab.exec(name, &["dpkg", "-r", "pvfs"])?;
    let active = state("is-active")?;
    ensure!(active != "active", "{name}: pvfs-agent is still {active} after dpkg -r:\n{said}");
    lab.exec(name, &["test", "-f", &format!("/etc/pvfs/tls/{name}.key")])
        .with_context(|| format!("{name}: dpkg -r removed the key"))?;
    eprintln!("xtask e2e: {name}: dpkg -r stopped the agent ({active}), the certificates stay");

    // The package bootstrap left in its cache, installed by hand.
    let dpkg_i = || -> anyhow::Result<String> {
        let out = capture(docker().args(["exec", &container, "dpkg", "-i", "/var/cache/pvfs/pvfs.deb"]))?;
        let said =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        ensure!(out.status.success(), "{name}: dpkg -i failed: {}\n{said}", out.status);
        Ok(said)
    };
    lab.exec(name, &["mv", "/etc/pvfs/tls", "/root/tls.kept"])?;
    let said = dpkg_i()?;
    let missing = format!(
        "pvfs-agent: enabled, not started: missing /etc/pvfs/tls/ca.crt /etc/pvfs/tls/{name}.crt /etc/pvfs/tls/{name}.key;"
    );
    ensure!(
        said.contains(&missing),
        "{name}: postinst without certificates did not say {missing:?}:\n{said}"
    );
    ensure!(said.contains("pvfsctl ca issue"), "{name}: postinst does not say how to get them:\n{said}");
    ensure!(
        state("is-enabled")? == "enabled",
        "{name}: pvfs-agent is {} after dpkg -i",
        state("is-enabled")?
    );
    ensure!(
        state("is-active")? == "inactive",
        "{name}: pvfs-agent is {} without certificates",
        state("is-active")?
    );
    let modes = lab.exec(name, &["stat", "-c", "%n %a %U", "/etc/pvfs", "/etc/pvfs/tls", "/var/lib/pvfs"])?;
    ensure!(
        modes.lines().all(|l| l.ends_with(" 700 root")) && modes.lines().count() == 3,
        "{name}: directories after dpkg -i:\n{modes}"
    );
    let line = said.lines().find(|l| l.contains("not started")).unwrap_or_default();
    eprintln!("xtask e2e: {name}: dpkg -i without certificates: enabled, inactive; postinst said: {line}");

    lab.exec(name, &["sh", "-c", "rmdir /etc/pvfs/tls && mv /root/tls.kept /etc/pvfs/tls"])?;
    let said = dpkg_i()?;
    ensure!(said.contains("pvfs-agent: running"), "{name}: reinstall with certificates:\n{said}");
    ensure!(
        state("is-active")? == "active",
        "{name}: pvfs-agent is {} after the reinstall",
        state("is-active")?
    );
    let main_pid = |text: &str| text.lines().find(|l| l.starts_with("MainPID=")).map(str::to_owned);
    let before = main_pid(&state("show")?);
    let said = dpkg_i()?;
    let after = main_pid(&state("show")?);
    ensure!(
        said.contains("pvfs-agent: running") && before.is_some() && before != after,
        "{name}: an upgrade did not restart the agent ({before:?} then {after:?}):\n{said}"
    );
    eprintln!(
        "xtask e2e: {name}: certificates back, dpkg -i again: started; once more: restarted ({before:?} -> {after:?})"
    );
    Ok(())
}

type Up<'a> = dyn Fn(&[&str]) -> anyhow::Result<(Option<i32>, Vec<Value>, String)> + 'a;

fn scenario(lab: &Lab, binary: &Path, cluster: &str, tls: &str, up: &Up<'_>) -> anyhow::Result<()> {
    // 1. The plan on fresh nodes: steps listed, nothing changed.
    let fstab_before = lab.exec("gfs1", &["cat", "/etc/fstab"])?;
    let (code, events, stderr) = up(&["--plan"])?;
    ensure!(code == Some(0), "up --plan exited {code:?}: {stderr}");
    let would: Vec<&Value> = events.iter().filter(|e| e["status"] == "would_change").collect();
    ensure!(would.len() >= 8, "up --plan listed only {} changes: {events:?}", would.len());
    for kind in ["mkfs", "mount", "service"] {
        ensure!(would.iter().any(|e| e["kind"] == kind), "up --plan has no {kind} change");
    }
    // glusterd is not running before the plan's own service step starts it, so the pool and
    // the volume cannot be assessed yet: the plan says so rather than guessing.
    for kind in ["gluster-peers", "gluster-volume"] {
        ensure!(
            events
                .iter()
                .any(|e| e["kind"] == kind && (e["status"] == "would_change" || e["status"] == "pending")),
            "up --plan says nothing of {kind}"
        );
    }
    ensure!(events.iter().all(|e| e["event"] != "command"), "up --plan ran commands");
    ensure!(lab.exec("gfs1", &["cat", "/etc/fstab"])? == fstab_before, "up --plan changed gfs1's fstab");
    // glusterd's own record of volumes (the daemon is not even started by a plan).
    let volumes = lab.exec("gfs1", &["sh", "-c", "ls -A /var/lib/glusterd/vols 2>/dev/null || true"])?;
    ensure!(volumes.trim().is_empty(), "a volume exists after --plan: {volumes}");
    let active =
        capture(docker().args(["exec", &lab.container("gfs1"), "systemctl", "is-active", "glusterd"]))?;
    ensure!(!active.status.success(), "up --plan started glusterd");
    let blkid = capture(docker().args(["exec", &lab.container("gfs1"), "blkid", "-p", "/dev/pvfs-disk0"]))?;
    ensure!(blkid.status.code() == Some(2), "the disk was touched by --plan: {blkid:?}");
    eprintln!(
        "xtask e2e: up --plan on the fresh cluster: {} steps would change, nothing changed",
        would.len()
    );

    // 2. up, with gfs2 killed while it converges its brick.
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args(["ctl", "up", cluster, "--tls-dir", tls, "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting up")?;
    let stdout = child.stdout.take().context("up stdout")?;
    let mut first_run = Vec::new();
    let mut killed = false;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        let event: Value = serde_json::from_str(&line).with_context(|| format!("not JSON: {line}"))?;
        // Kill the node while it starts glusterd (about a second: long enough for the kill to
        // land mid-step; the steps after it, mkfs and mount, have not run).
        if !killed
            && event["node"] == "gfs2"
            && event["event"] == "step_started"
            && event["kind"] == "service"
        {
            step(docker().args(["kill", &lab.container("gfs2")]))?;
            killed = true;
        }
        first_run.push(event);
        ensure!(started.elapsed() < Duration::from_secs(600), "up ran for 10 minutes");
    }
    let status = child.wait()?;
    ensure!(killed, "up never started gfs2's service step: {first_run:?}");
    ensure!(status.code() == Some(1), "up with gfs2 killed exited {status}");
    let recap = first_run.last().context("no recap")?;
    let failures = recap["failures"].as_array().context("no failures")?;
    ensure!(
        failures.iter().any(|f| f.as_str().is_some_and(|f| f.starts_with("gfs2 (brick)"))),
        "the failure does not name gfs2: {recap}"
    );
    let skipped: Vec<&str> = first_run
        .iter()
        .filter(|e| e["event"] == "unit_skipped")
        .filter_map(|e| e["label"].as_str())
        .collect();
    ensure!(
        skipped.contains(&"volume") && skipped.contains(&"mount"),
        "dependents of gfs2 not skipped: {skipped:?}"
    );
    eprintln!("xtask e2e: gfs2 killed mid-up: exit 1, {}", failures[0]);

    // 3. gfs2 back, up again: it converges.
    step(docker().args(["start", &lab.container("gfs2")]))?;
    boot(lab, "gfs2")?;
    wait_reachable(binary, cluster, tls, Duration::from_secs(60))?;
    let (code, second_run, stderr) = up(&[])?;
    ensure!(code == Some(0), "up after gfs2's restart exited {code:?}: {stderr}\n{second_run:?}");
    let changed = total(&second_run, "changed");
    eprintln!("xtask e2e: up after the restart converged ({changed} steps changed)");

    // 4. A real FUSE mount, and files on both bricks.
    let mnt =
        lab.exec("client1", &["findmnt", "-J", "-o", "TARGET,SOURCE,FSTYPE", "--mountpoint", "/mnt/gv0"])?;
    let mnt: Value = serde_json::from_str(&mnt)?;
    ensure!(mnt["filesystems"][0]["fstype"] == "fuse.glusterfs", "client mount: {mnt}");
    ensure!(mnt["filesystems"][0]["source"] == "10.213.250.11:/gv0", "client mount: {mnt}");
    lab.exec(
        "client1",
        &["sh", "-c", "for i in $(seq 1 20); do echo pvfs-$i > /mnt/gv0/file-$i; done; sync"],
    )?;
    let count = |node: &str| -> anyhow::Result<usize> {
        Ok(lab
            .exec(node, &["sh", "-c", "ls /bricks/brick1/gv0 | grep -c '^file-' || true"])?
            .trim()
            .parse()?)
    };
    let (on1, on2) = (count("gfs1")?, count("gfs2")?);
    ensure!(
        on1 > 0 && on2 > 0 && on1 + on2 == 20,
        "files per brick: gfs1 {on1}, gfs2 {on2} (want both > 0, 20 in all)"
    );
    eprintln!("xtask e2e: 20 files written on client1: {on1} on gfs1's brick, {on2} on gfs2's");

    // 5. Converged: nothing changes, and the plan says so.
    let (code, third_run, stderr) = up(&[])?;
    ensure!(code == Some(0), "third up exited {code:?}: {stderr}");
    let recap = third_run.last().context("no recap")?;
    for node in recap["nodes"].as_array().context("no nodes")? {
        ensure!(node["changed"] == 0 && node["failed"] == 0, "second up on a converged cluster: {node}");
    }
    let (code, plan, stderr) = up(&["--plan"])?;
    ensure!(
        code == Some(0) && total(&plan, "changed") == 0,
        "--plan on a converged cluster: {stderr} {plan:?}"
    );
    eprintln!("xtask e2e: up on the converged cluster: 0 changed; --plan: nothing to change");

    // 6. Nothing done twice.
    let all_runs: Vec<&Value> = first_run.iter().chain(&second_run).chain(&third_run).collect();
    for node in ["gfs1", "gfs2"] {
        let mkfs = all_runs
            .iter()
            .filter(|e| e["event"] == "command" && e["node"] == node)
            .filter(|e| e["command"].as_str().is_some_and(|c| c.starts_with("mkfs.xfs")))
            .count();
        ensure!(mkfs == 1, "{node}: mkfs.xfs ran {mkfs} times");
        let fstab = lab.exec(node, &["cat", "/etc/fstab"])?;
        let lines = fstab.lines().filter(|l| l.contains(" /bricks/brick1 ")).count();
        ensure!(lines == 1, "{node}: {lines} fstab lines for the brick:\n{fstab}");
    }
    let fstab = lab.exec("client1", &["cat", "/etc/fstab"])?;
    ensure!(fstab.lines().filter(|l| l.contains(" /mnt/gv0 ")).count() == 1, "client fstab:\n{fstab}");
    let info = lab.exec("gfs1", &["gluster", "--xml", "volume", "info", "gv0"])?;
    ensure!(info.matches("<brick ").count() == 2, "volume gv0 bricks:\n{info}");
    let peers = lab.exec("gfs1", &["gluster", "--xml", "peer", "status"])?;
    ensure!(peers.matches("<peer>").count() == 1, "gfs1's peers:\n{peers}");
    // Keep what real glusterfs said, for the step tests' recordings.
    let testdata = root().join("target/e2e/gluster-recorded");
    std::fs::create_dir_all(&testdata)?;
    std::fs::write(testdata.join("volume-info.xml"), &info)?;
    std::fs::write(testdata.join("peer-status.xml"), &peers)?;
    std::fs::write(
        testdata.join("volume-status.xml"),
        lab.exec("gfs1", &["gluster", "--xml", "volume", "status", "gv0"])?,
    )?;
    eprintln!(
        "xtask e2e: nothing done twice: mkfs once per brick, one fstab line per mount, 2 bricks, 1 peer"
    );
    // glusterd's store of its peer, as `down` reads it once glusterd is stopped.
    let peer_store = lab.exec("gfs1", &["sh", "-c", "cat /var/lib/glusterd/peers/*"])?;
    std::fs::write(testdata.join("peer-store.txt"), &peer_store)?;
    down_and_up_again(lab, binary, cluster, tls, up)?;
    bench(lab, binary, cluster, tls)
}

/// Part 6b: `pvfsctl down` takes the cluster apart (the client's mount and fstab line, the
/// volume, the peer, the bricks' mounts, glusterd), a second `down` changes nothing, `--wipe`
/// refuses without the cluster's name and with a wrong one, then destroys the bricks' disks
/// with it; and `up` builds the cluster again from there.
fn down_and_up_again(lab: &Lab, binary: &Path, cluster: &str, tls: &str, up: &Up<'_>) -> anyhow::Result<()> {
    let down = |extra: &[&str]| -> anyhow::Result<(Option<i32>, Vec<Value>, String)> {
        let out = capture(
            Command::new(binary).args(["ctl", "down", cluster, "--tls-dir", tls, "--json"]).args(extra),
        )?;
        let events = json_lines(&out.stdout)?;
        Ok((out.status.code(), events, String::from_utf8_lossy(&out.stderr).into_owned()))
    };
    let code_of = |node: &str, args: &[&str]| -> anyhow::Result<Option<i32>> {
        Ok(capture(docker().args(["exec", &lab.container(node)]).args(args))?.status.code())
    };
    let volume_exists = || -> anyhow::Result<bool> {
        Ok(lab.exec("gfs1", &["sh", "-c", "ls -A /var/lib/glusterd/vols"])?.contains("gv0"))
    };

    let (code, plan, stderr) = down(&["--plan"])?;
    ensure!(code == Some(0), "down --plan exited {code:?}: {stderr}");
    for kind in ["unmount", "gluster-volume-gone", "gluster-peers-detached", "service-stopped"] {
        ensure!(
            plan.iter().any(|e| e["kind"] == kind && e["status"] == "would_change"),
            "down --plan has no {kind} change: {plan:?}"
        );
    }
    ensure!(plan.iter().all(|e| e["event"] != "command"), "down --plan ran commands");
    ensure!(volume_exists()?, "down --plan deleted the volume");

    let (code, events, stderr) = down(&[])?;
    ensure!(code == Some(0), "down exited {code:?}: {stderr}\n{events:?}");
    ensure!(
        code_of("client1", &["findmnt", "--mountpoint", "/mnt/gv0"])? == Some(1),
        "/mnt/gv0 still mounted"
    );
    ensure!(
        !lab.exec("client1", &["cat", "/etc/fstab"])?.contains(" /mnt/gv0 "),
        "client fstab keeps /mnt/gv0"
    );
    ensure!(!volume_exists()?, "volume gv0 is still in glusterd's store after down");
    let peers = lab.exec("gfs1", &["sh", "-c", "ls -A /var/lib/glusterd/peers"])?;
    ensure!(peers.trim().is_empty(), "gfs1 still has peers after down: {peers}");
    for node in ["gfs1", "gfs2"] {
        ensure!(
            code_of(node, &["findmnt", "--mountpoint", "/bricks/brick1"])? == Some(1),
            "{node}: the brick is still mounted"
        );
        ensure!(code_of(node, &["systemctl", "is-active", "glusterd"])? != Some(0), "{node}: glusterd runs");
        ensure!(
            lab.exec(node, &["systemctl", "is-enabled", "glusterd"]).is_err(),
            "{node}: glusterd is still enabled"
        );
        // Without --wipe the brick's file system stays.
        ensure!(
            code_of(node, &["blkid", "-p", "/dev/pvfs-disk0"])? == Some(0),
            "{node}: the brick was wiped"
        );
    }
    let (code, again, stderr) = down(&[])?;
    ensure!(code == Some(0) && total(&again, "changed") == 0, "a second down: {stderr} {again:?}");
    eprintln!(
        "xtask e2e: down: client unmounted, volume deleted, peer detached, bricks unmounted, glusterd stopped \
         ({} steps changed); a second down changed nothing",
        total(&events, "changed")
    );

    // --wipe: nothing without the cluster's name (no terminal here), nor with another name.
    for extra in [&["--wipe"][..], &["--wipe", "--yes-wipe=gluster-e2e-typo"][..]] {
        let (code, events, stderr) = down(extra)?;
        ensure!(
            code == Some(2) && stderr.contains("refusing to wipe") && stderr.contains("/dev/pvfs-disk0"),
            "down {extra:?} exited {code:?}: {stderr}"
        );
        ensure!(events.is_empty(), "down {extra:?} sent steps: {events:?}");
    }
    ensure!(code_of("gfs1", &["blkid", "-p", "/dev/pvfs-disk0"])? == Some(0), "a refused wipe wiped");
    let (code, events, stderr) = down(&["--wipe", "--yes-wipe=gluster-e2e"])?;
    ensure!(code == Some(0), "down --wipe exited {code:?}: {stderr}\n{events:?}");
    for node in ["gfs1", "gfs2"] {
        ensure!(
            code_of(node, &["blkid", "-p", "/dev/pvfs-disk0"])? == Some(2),
            "{node}: the disk was not wiped"
        );
    }
    let (code, again, stderr) = down(&["--wipe", "--yes-wipe=gluster-e2e"])?;
    ensure!(code == Some(0) && total(&again, "changed") == 0, "a second down --wipe: {stderr} {again:?}");
    eprintln!(
        "xtask e2e: down --wipe refused without the cluster's name, then wiped both bricks' disks; again: 0 changed"
    );

    // And back: the same file builds the cluster again on the wiped disks.
    let (code, rebuilt, stderr) = up(&[])?;
    ensure!(code == Some(0), "up after down --wipe exited {code:?}: {stderr}\n{rebuilt:?}");
    let info = lab.exec("gfs1", &["gluster", "--xml", "volume", "info", "gv0"])?;
    ensure!(info.matches("<brick ").count() == 2 && info.contains("Started"), "volume gv0 after up:\n{info}");
    ensure!(code_of("client1", &["findmnt", "--mountpoint", "/mnt/gv0"])? == Some(0), "/mnt/gv0 not mounted");
    eprintln!("xtask e2e: up after down --wipe: volume gv0 back, started, mounted on client1");
    Ok(())
}

/// Each server's brick of gv0, second by second in the bench's record (issue 29): up every
/// second; and what the two glusterfsds wrote through system calls over the run (gv0 is
/// distributed: each file on one brick) at least the 128 MiB the clients moved — the 64 MiB
/// they wrote (2 iterations of 2 tasks x 16 MiB) into the bricks' files, and the same sent back
/// for the reads (measured: 64.2 MiB each, 32.0 MiB of it to storage): at least 120, leaving a
/// second the record might begin inside of. Each brick's figures are printed.
fn brick_counters(dir: &Path) -> anyhow::Result<()> {
    let mut both = 0.0;
    for node in ["gfs1", "gfs2"] {
        let metrics = std::fs::read_to_string(dir.join("metrics").join(format!("{node}.jsonl")))?;
        let (mut seconds, mut wchar, mut disk) = (0, 0.0, 0.0);
        for line in metrics.lines() {
            let line: Value = serde_json::from_str(line)?;
            let interval = line["interval_s"].as_f64().unwrap_or(0.0);
            let bricks = line["bricks"]
                .as_array()
                .with_context(|| format!("{node}: a second without bricks: {line}"))?;
            let brick = bricks
                .iter()
                .find(|b| b["volume"] == "gv0")
                .with_context(|| format!("{node}: no brick of gv0 in {bricks:?}"))?;
            ensure!(
                brick["up"] == true && brick["path"].as_str().is_some_and(|p| p.starts_with('/')),
                "{node}: {brick}"
            );
            seconds += 1;
            wchar += brick["wchar_s"].as_f64().unwrap_or(0.0) * interval;
            disk += brick["write_bytes_s"].as_f64().unwrap_or(0.0) * interval;
        }
        let mib = |b: f64| b / f64::from(1 << 20);
        both += mib(wchar);
        eprintln!(
            "xtask e2e: {node}'s brick of gv0, {seconds} s: {:.1} MiB written through system calls, {:.1} MiB to storage",
            mib(wchar),
            mib(disk)
        );
    }
    ensure!(both >= 120.0, "the bricks wrote {both:.1} MiB through system calls for the clients' 128 MiB");
    Ok(())
}

/// `bench --fault` for real (issue 29), on a second volume of the same servers, replicated: gv1,
/// replica 2 over gfs1's and gfs2's brick mounts, made by `up` from the cluster file with
/// `volume = "gv1"`, `layout = "replicate"` (gv0 is distributed, where a brick down takes its
/// files with it: the run then fails naming the client's ENOTCONN, as it should). The servers'
/// agents are granted faults by a policy file (`faults = true`, written as an operator would
/// and read on restart); gfs2's brick of gv1 is killed three seconds into a write of small
/// direct writes and brought back three seconds later by `gluster volume start gv1 force`. The
/// run succeeds with every transfer read back as written (`verify`: 0 mismatches), the fault
/// is told and measured (rate before, stall, recovery), gfs2's record shows its brick down
/// meanwhile, and the per-second timeline around the fault is printed. The policy files go
/// afterwards; gv1 stays (the scenario's later steps use gv0).
fn brick_fault(lab: &Lab, binary: &Path, cluster: &str, tls: &str) -> anyhow::Result<()> {
    let fault_cluster = variant(
        lab,
        cluster,
        "glusterfs-e2e-replica.toml",
        "[glusterfs]\nvolume = \"gv0\"\nmount = \"/mnt/gv0\"",
        "[glusterfs]\nvolume = \"gv1\"\nmount = \"/mnt/gv1\"\nlayout = \"replicate\"\nreplica = 2",
        "",
    )?;
    let out = capture(Command::new(binary).args(["ctl", "up", &fault_cluster, "--tls-dir", tls, "--json"]))?;
    ensure!(
        out.status.success(),
        "up of the replica-2 volume gv1: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let results = lab.work.join("results").to_string_lossy().into_owned();
    let base_cluster = cluster;
    let cluster = fault_cluster.as_str();
    let grant = |on: bool| -> anyhow::Result<()> {
        for node in ["gfs1", "gfs2"] {
            let script = if on {
                "printf 'faults = true\\n' > /etc/pvfs/policy.toml && systemctl restart pvfs-agent"
            } else {
                "rm -f /etc/pvfs/policy.toml && systemctl restart pvfs-agent"
            };
            lab.exec(node, &["sh", "-c", script])?;
        }
        wait_reachable(binary, cluster, tls, Duration::from_secs(60))
    };
    grant(true)?;
    let bench_with = |fault: &str| {
        capture(
            Command::new(binary)
                .args(["ctl", "bench", cluster, "--tls-dir", tls, "--json", "--results", &results])
                .args([
                    "--procs",
                    "2",
                    "--fault",
                    fault,
                    "--set",
                    "t=4k",
                    "--set",
                    // 2 x 128 MiB: what the 512 MB bricks hold, however fast the writes go.
                    "b=128m",
                    "--set",
                    "random=true",
                    "--set",
                    "odirect=true",
                    "--set",
                    "deadline=10",
                    "--set",
                    "verify=true",
                    "--set",
                    "i=1",
                ]),
        )
    };
    let out = bench_with("kill-brick=gfs2,phase=write,at=3,for=3")?;
    // The first run's files go first: two runs' do not fit the 512 MB bricks.
    let df = lab.exec("client1", &["sh", "-c", "rm -rf /mnt/gv1/pvfs-bench && df -m /mnt/gv1 | tail -1"])?;
    eprintln!("xtask e2e: gv1 before the network cut's run: {}", df.trim());
    let cut = bench_with("cut-network=gfs2,phase=write,at=3,for=3")?;
    lab.exec("client1", &["rm", "-rf", "/mnt/gv1/pvfs-bench"])?;
    let stopped = bench_with("stop-service=gfs2,unit=glusterd,phase=write,at=3,for=3")?;
    // gv1's bricks share their file systems with gv0's: its files go before gv0's run, which
    // needs 256 MiB and would be refused for room after a fast write to gv1 (seen on CI).
    lab.exec("client1", &["rm", "-rf", "/mnt/gv1/pvfs-bench"])?;
    // gv0 is distributed: a file on the killed brick cannot be written until it is back, and
    // the tasks writing one fail — the run stops there, and the fault's measure has them and
    // what they did not write (no stonewall: each task's 32 MiB is the work it was to do; the
    // others finish theirs, ~7 s at this lab's 10,000 writes a second).
    let lost = capture(
        Command::new(binary)
            .args(["ctl", "bench", base_cluster, "--tls-dir", tls, "--json", "--results", &results])
            .args(["--procs", "8", "--fault", "kill-brick=gfs2,phase=write,at=2,for=2"])
            .args(["--set", "t=4k", "--set", "b=32m", "--set", "odirect=true"])
            .args(["--set", "i=1"]),
    )?;
    distributed_fault(&lost)?;
    // The client reconnects to the brick a few seconds after it is back: its files go then.
    lab.exec(
        "client1",
        &["sh", "-c", "for i in $(seq 30); do rm -rf /mnt/gv0/pvfs-bench 2>/dev/null && exit 0; sleep 1; done; rm -rf /mnt/gv0/pvfs-bench"],
    )?;
    grant(false)?;
    let (events, faults) = fault_run(&out, "a brick killed")?;
    ensure!(
        faults[0]["detail"].as_str().is_some_and(
            |d| d.starts_with("killed glusterfsd ") && d.ends_with("of brick gv1:/bricks/brick1/gv1")
        ),
        "injected: {}",
        faults[0]
    );
    let measured =
        events.iter().find(|e| e["event"] == "fault_measured").context("the fault not measured")?;
    ensure!(measured["ops_per_s_before"].as_f64().is_some_and(|r| r > 0.0), "measured: {measured}");
    // The writes made while the brick was down are healed onto it: entries were pending, and
    // none are left within the wait.
    let healed = events.iter().find(|e| e["event"] == "fault_healed").context("the heal not followed")?;
    ensure!(
        healed["volume"] == "gv1"
            && healed["pending_max"].as_u64().is_some_and(|n| n > 0)
            && healed["healed_after_s"].as_f64().is_some()
            && healed["split_brain"] == 0,
        "healed: {healed}"
    );
    let dir = PathBuf::from(events.last().context("no summary")?["results"].as_str().context("no results")?);
    // gfs2's brick down in its record while the fault lasted, up before and after.
    let metrics = std::fs::read_to_string(dir.join("metrics/gfs2.jsonl"))?;
    let states: Vec<bool> = metrics
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|l| {
            l["bricks"].as_array()?.iter().find(|b| b["volume"] == "gv1").map(|b| b["up"] == true)
        })
        .collect();
    ensure!(
        states.first() == Some(&true) && states.contains(&false) && states.last() == Some(&true),
        "gfs2's brick, second by second: {states:?}"
    );
    let injected = faults[0]["at"].as_f64().unwrap_or(0.0);
    let timeline: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "latency_second" && e["phase"] == "write")
        .map(|e| {
            let at = e["at"].as_f64().unwrap_or(0.0) - injected;
            format!("{at:+.0}s {}", e["count"])
        })
        .collect();
    eprintln!(
        "xtask e2e: gfs2's brick of the replica-2 gv1 killed mid-write and brought back: {} ops/s before, {} s with nothing finished, back to 90 % after {} s; at most {} entries to heal, none left {:.1} s after the brick was back; brick down for {} of {} recorded seconds; operations a second from the kill: {}; every transfer read back as written",
        measured["ops_per_s_before"],
        measured["stall_s"],
        measured["recovery_s"],
        healed["pending_max"],
        healed["healed_after_s"].as_f64().unwrap_or(0.0),
        states.iter().filter(|u| !**u).count(),
        states.len(),
        timeline.join(", ")
    );
    network_cut(lab, &cut)?;
    service_stop(lab, &stopped)
}

/// The fourth fault of [`brick_fault`]: gfs2's brick of the distributed gv0 killed two seconds
/// into a write of 8 tasks (a file each, spread over both bricks by name: that all eight land on
/// gfs1 is 1 in 256), back two seconds later. The tasks whose files are on it get the FUSE
/// client's error, the run stops with the phase (as IOR does), and the fault's measure says how
/// many failed and the first error, naming its file.
fn distributed_fault(out: &std::process::Output) -> anyhow::Result<()> {
    let events = json_lines(&out.stdout)?;
    ensure!(
        !out.status.success(),
        "a write to a killed brick of a distributed volume went through: {events:?}"
    );
    let faults: Vec<&Value> = events.iter().filter(|e| e["event"] == "fault").collect();
    ensure!(
        faults.iter().any(|f| f["action"] == "injected") && faults.iter().any(|f| f["action"] == "undone"),
        "gv0's fault: {faults:?}; the run said: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let measured = events
        .iter()
        .find(|e| e["event"] == "fault_measured")
        .context("the failed phase's fault not measured")?;
    let errors = measured["client_errors"].as_u64().unwrap_or(0);
    let first = measured["first_error"].as_str().unwrap_or_default();
    ensure!((1..=8).contains(&errors) && first.contains("/mnt/gv0/pvfs-bench/"), "measured: {measured}");
    // What the failed tasks did not write: at least their failing transfer each, at most their
    // whole 32 MiB (8,192 transfers of 4 KiB), and the bytes exactly those transfers'.
    let (ops_lost, bytes_lost) = (measured["ops_lost"].as_u64(), measured["bytes_lost"].as_u64());
    ensure!(
        ops_lost.is_some_and(|n| (errors..=errors * 8192).contains(&n))
            && bytes_lost == ops_lost.map(|n| n * 4096),
        "lost: {measured}"
    );
    eprintln!(
        "xtask e2e: gfs2's brick of the distributed gv0 killed mid-write: {errors} of 8 tasks failed ({first}); {} transfers ({:.1} MiB) not written by them, none retried; {} ops/s before, {} s with nothing finished; the brick back after the run",
        ops_lost.unwrap_or(0),
        bytes_lost.unwrap_or(0) as f64 / 1048576.0,
        measured["ops_per_s_before"],
        measured["stall_s"]
    );
    Ok(())
}

/// The third fault of [`brick_fault`]: gfs2's glusterd stopped three seconds into the write for
/// three seconds (`systemctl stop`, then `start`). glusterd manages the volume, not its data
/// path: the bricks and the client's connections to them stay, so the run goes on; the fault's
/// events say what systemctl left, and glusterd is active on gfs2 afterwards.
fn service_stop(lab: &Lab, out: &std::process::Output) -> anyhow::Result<()> {
    let (events, faults) = fault_run(out, "gfs2's glusterd stopped")?;
    ensure!(
        faults[0]["detail"] == "systemctl stop glusterd: glusterd is inactive"
            && faults[1]["detail"] == "systemctl start glusterd: glusterd is active",
        "the stop's events: {faults:?}"
    );
    let measured = events.iter().find(|e| e["event"] == "fault_measured").context("the stop not measured")?;
    let active = lab.exec("gfs2", &["systemctl", "is-active", "glusterd"])?;
    ensure!(active.trim() == "active", "gfs2's glusterd after the run: {active}");
    eprintln!(
        "xtask e2e: gfs2's glusterd stopped mid-write for 3 s and started again: {} ops/s before, {} s with nothing finished, back to 90 % after {} s; every transfer read back as written",
        measured["ops_per_s_before"], measured["stall_s"], measured["recovery_s"]
    );
    Ok(())
}

/// The second fault of [`brick_fault`]: gfs2 cut off the network (its eth0 down, the one the
/// coordinator reaches it through) three seconds into the write for three seconds, and
/// brought back by its own agent. The run goes on (the client waits for the replica, then
/// carries on), every transfer reads back as written, the cut is told with when the interface
/// was down and up, gfs2's interface is up afterwards and its agent's record of the cut gone.
fn network_cut(lab: &Lab, out: &std::process::Output) -> anyhow::Result<()> {
    let (events, faults) = fault_run(out, "gfs2 cut off the network")?;
    let (injected, undone) =
        (faults[0]["at"].as_f64().unwrap_or(0.0), faults[1]["at"].as_f64().unwrap_or(0.0));
    ensure!(
        faults[0]["detail"].as_str().is_some_and(|d| d.starts_with("cutting eth0 for 3 s")),
        "injected: {}",
        faults[0]
    );
    let said = faults[1]["detail"].as_str().unwrap_or_default();
    ensure!(
        said.starts_with("eth0 was down from ")
            && said.ends_with("brought back up by this agent at the end of the fault's time"),
        "undone: {said}"
    );
    ensure!(
        (2.5..6.0).contains(&(undone - injected)),
        "eth0 down for {:.1} s: {faults:?}",
        undone - injected
    );
    let measured = events.iter().find(|e| e["event"] == "fault_measured").context("the cut not measured")?;
    let flags = lab.exec("gfs2", &["cat", "/sys/class/net/eth0/flags"])?;
    let flags = u32::from_str_radix(flags.trim().trim_start_matches("0x"), 16)?;
    ensure!(flags & 1 == 1, "gfs2's eth0 is not up after the run: flags {flags:#x}");
    let left = lab.exec("gfs2", &["sh", "-c", "ls /run/pvfs-agent/cut 2>/dev/null || true"])?;
    ensure!(left.trim().is_empty(), "gfs2's agent still records a cut: {left}");
    let dir = PathBuf::from(events.last().context("no summary")?["results"].as_str().context("no results")?);
    let metrics = std::fs::read_to_string(dir.join("metrics/gfs2.jsonl"))?;
    let down = metrics.lines().filter(|l| l.contains("\"down\":true")).count();
    let timeline: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "latency_second" && e["phase"] == "write")
        .map(|e| format!("{:+.0}s {}", e["at"].as_f64().unwrap_or(0.0) - injected, e["count"]))
        .collect();
    eprintln!(
        "xtask e2e: gfs2 cut off the network mid-write (eth0 down {:.1} s, back by its own agent): {} ops/s before, {} s with nothing finished, back to 90 % after {} s; gfs2's stream lost {down} time(s); operations a second from the cut: {}; every transfer read back as written",
        undone - injected,
        measured["ops_per_s_before"],
        measured["stall_s"],
        measured["recovery_s"],
        timeline.join(", ")
    );
    Ok(())
}

/// `bench --gluster-profile` on gv0: GlusterFS's own profile of each phase, from real glusterd.
/// Each phase's reading has both bricks (gv0 is distributed over gfs1 and gfs2); the write's
/// bricks wrote the clients' 32 MiB between them, their busiest operation WRITE; the read's
/// read it back; the profile is off again after the run (it was off before), and the report
/// has the section.
fn gluster_profile(lab: &Lab, binary: &Path, bench_cmd: &dyn Fn(&[&str]) -> Command) -> anyhow::Result<()> {
    let out = capture(&mut bench_cmd(&[
        "--procs",
        "2",
        "--set",
        "t=1m",
        "--set",
        "b=16m",
        "--set",
        "i=1",
        "--gluster-profile",
    ]))?;
    let events = json_lines(&out.stdout)?;
    ensure!(
        out.status.success(),
        "bench --gluster-profile failed: {}\n{events:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    let profiles: Vec<&Value> = events.iter().filter(|e| e["event"] == "gluster_profile").collect();
    let phase = |name: &str| profiles.iter().find(|p| p["phase"] == name).copied();
    let (write, read) = (
        phase("write").context("no profile of the write")?,
        phase("read").context("no profile of the read")?,
    );
    let sum = |p: &Value, field: &str| -> u64 {
        p["bricks"].as_array().map_or(0, |b| b.iter().filter_map(|b| b[field].as_u64()).sum())
    };
    ensure!(write["bricks"].as_array().is_some_and(|b| b.len() == 2), "write's profile: {write}");
    ensure!(
        sum(write, "write_bytes") >= 30 << 20,
        "the bricks wrote {} bytes: {write}",
        sum(write, "write_bytes")
    );
    ensure!(sum(read, "read_bytes") >= 30 << 20, "the bricks read {} bytes: {read}", sum(read, "read_bytes"));
    let busiest = write["bricks"][0]["fops"][0]["name"].as_str().unwrap_or_default();
    ensure!(busiest == "WRITE", "the write's busiest operation is {busiest:?}: {write}");
    let stop = lab.exec("gfs1", &["sh", "-c", "gluster --mode=script volume profile gv0 stop 2>&1; true"])?;
    ensure!(stop.contains("is not started"), "the profile is still on after the run: {stop}");
    let dir =
        PathBuf::from(events.last().context("no summary")?["results"].as_str().context("no results dir")?);
    let report = lab.work.join("report-profile");
    let made = capture(Command::new(binary).args(["ctl", "report"]).arg(&dir).arg("--out").arg(&report))?;
    ensure!(made.status.success(), "report failed: {}", String::from_utf8_lossy(&made.stderr));
    let md = std::fs::read_to_string(report.join("report.md"))?;
    ensure!(md.contains("### GlusterFS profile: "), "report without the profile:\n{md}");
    let top = &write["bricks"][0]["fops"][0];
    eprintln!(
        "xtask e2e: bench --gluster-profile: the write's bricks wrote {:.1} MiB, the read's read {:.1} MiB; busiest on {}: WRITE {} calls, mean {:.2} ms; profile off again after the run",
        sum(write, "write_bytes") as f64 / f64::from(1 << 20),
        sum(read, "read_bytes") as f64 / f64::from(1 << 20),
        write["bricks"][0]["brick"].as_str().unwrap_or_default(),
        top["hits"],
        top["avg_ns"].as_f64().unwrap_or(0.0) / 1e6
    );
    Ok(())
}

/// A run with one `--fault` that succeeded: its events, and the fault's two (`injected`, then
/// `undone`).
fn fault_run(out: &std::process::Output, what: &str) -> anyhow::Result<(Vec<Value>, [Value; 2])> {
    let events = json_lines(&out.stdout)?;
    ensure!(
        out.status.success(),
        "bench with {what} failed: {}\n{events:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    let faults: Vec<Value> = events.iter().filter(|e| e["event"] == "fault").cloned().collect();
    let [injected, undone]: [Value; 2] =
        faults.clone().try_into().map_err(|_| anyhow::anyhow!("{what}: the fault's events: {faults:?}"))?;
    ensure!(
        injected["action"] == "injected" && undone["action"] == "undone",
        "{what}: the fault's events: {faults:?}"
    );
    Ok((events, [injected, undone]))
}

/// A variant of the scenario's cluster file, written to the lab's work directory as `name`:
/// `from` replaced by `to` (which must be there), then `appended`. Returns its path.
fn variant(
    lab: &Lab,
    cluster: &str,
    name: &str,
    from: &str,
    to: &str,
    appended: &str,
) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(cluster)?;
    ensure!(text.contains(from), "{cluster} has no {from:?} to make {name} from");
    let path = lab.work.join(name);
    std::fs::write(&path, text.replacen(from, to, 1) + appended)?;
    Ok(path.to_string_lossy().into_owned())
}

/// Part 7 of the scenario: `pvfsctl bench` with the built-in engine on the FUSE client, its
/// report, and a client cut off the network mid-run.
fn bench(lab: &Lab, binary: &Path, cluster: &str, tls: &str) -> anyhow::Result<()> {
    let results = lab.work.join("results");
    let results_arg = results.to_string_lossy().into_owned();
    let bench_cmd = |extra: &[&str]| {
        let mut cmd = Command::new(binary);
        cmd.args(["ctl", "bench", cluster, "--tls-dir", tls, "--json", "--results", &results_arg])
            .args(extra);
        cmd
    };
    let out = capture(&mut bench_cmd(&["--procs", "2", "--set", "t=1m", "--set", "b=16m", "--set", "i=2"]))?;
    let events = json_lines(&out.stdout)?;
    ensure!(out.status.success(), "bench failed: {}\n{events:?}", String::from_utf8_lossy(&out.stderr));
    let summary = events.last().context("no summary")?;
    let row = |op: &str| {
        summary["ior"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["operation"] == op))
            .cloned()
            .unwrap_or_default()
    };
    let (write, read) = (row("write"), row("read"));
    ensure!(write["tasks"] == 2 && write["iterations"] == 2, "write row: {write}");
    let done: Vec<&Value> = events.iter().filter(|e| e["event"] == "phase_done").collect();
    ensure!(done.len() == 4 && done.iter().all(|e| e["bytes"] == 32 << 20), "phases: {done:?}");
    let dir = PathBuf::from(summary["results"].as_str().context("no results dir")?);
    for node in ["gfs1", "gfs2", "client1"] {
        let metrics = std::fs::read_to_string(dir.join("metrics").join(format!("{node}.jsonl")))
            .with_context(|| format!("no metrics for {node}"))?;
        ensure!(metrics.lines().count() >= 2, "{node}: {} seconds of metrics", metrics.lines().count());
    }
    brick_counters(&dir)?;
    eprintln!(
        "xtask e2e: bench on the FUSE mount: write {:.1} MiB/s, read {:.1} MiB/s (2 tasks x 16 MiB, 2 iterations)",
        write["bw_mean_mib"].as_f64().unwrap_or(0.0),
        read["bw_mean_mib"].as_f64().unwrap_or(0.0)
    );
    let report = lab.work.join("report");
    let out = capture(Command::new(binary).args(["ctl", "report"]).arg(&dir).arg("--out").arg(&report))?;
    ensure!(out.status.success(), "report failed: {}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(report.join("report.md"))?;
    // The client's NIC carried the data to and from the bricks: a real ratio, not "no traffic".
    ensure!(
        md.contains("### Network bytes against application bytes") && !md.contains("no network traffic"),
        "report without network figures:\n{md}"
    );
    ensure!(report.join("scale-out.png").exists(), "no PNG chart in {}", report.display());
    gluster_profile(lab, binary, &bench_cmd)?;
    brick_fault(lab, binary, cluster, tls)?;
    mpi(&bench_cmd)?;
    mpi_across_hosts(lab, binary, cluster, tls)?;

    // A client cut off the network mid-run: the run ends naming it, and keeps what it has.
    let mut child = bench_cmd(&["--set", "t=1m", "--set", "b=64m", "--set", "i=50"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut cut = None;
    let mut events = Vec::new();
    for line in BufReader::new(child.stdout.take().context("bench stdout")?).lines() {
        let event: Value = serde_json::from_str(&line?)?;
        if cut.is_none() && event["event"] == "phase_done" {
            step(docker().args(["network", "disconnect", &lab.network, &lab.container("client1")]))?;
            cut = Some(Instant::now());
        }
        events.push(event);
    }
    let status = child.wait()?;
    let took = cut.context("no phase finished before the cut")?.elapsed();
    let summary = events.last().context("no summary after the cut")?;
    let error = summary["error"].as_str().unwrap_or_default();
    ensure!(
        status.code() == Some(1) && error.contains("client client1"),
        "after the cut: {status}, {summary}"
    );
    ensure!(took < Duration::from_secs(40), "the cut took {took:?} to end the run");
    let dir = PathBuf::from(summary["results"].as_str().context("no results dir")?);
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("results.json"))?)?;
    ensure!(kept["phases"].as_array().is_some_and(|p| !p.is_empty()), "no phases kept: {kept}");
    ensure!(dir.join("metrics/gfs1.jsonl").exists(), "metrics not kept");
    eprintln!("xtask e2e: client1 cut off mid-run: the run ended after {:.0}s: {error}", took.as_secs_f64());
    Ok(())
}

/// The mpi launcher on the FUSE client: the agent runs Debian's Open MPI `mpirun`, the
/// built-in engine's ranks meet at barriers on the gluster mount; and `--engine ior`, with no
/// IOR in the image (nor in Debian), fails naming the client and what to install.
fn mpi(bench_cmd: &dyn Fn(&[&str]) -> Command) -> anyhow::Result<()> {
    let args = ["--launcher", "mpi", "--procs", "2", "--set", "t=1m", "--set", "b=16m", "--set", "i=2"];
    let out = capture(&mut bench_cmd(&args))?;
    let events = json_lines(&out.stdout)?;
    ensure!(
        out.status.success(),
        "bench --launcher mpi failed: {}\n{events:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    let launched = events.iter().find(|e| e["event"] == "launched").context("no launched event")?;
    let command = launched["command"].as_str().unwrap_or_default();
    ensure!(
        launched["node"] == "client1"
            && command.starts_with("mpirun --hostfile ")
            && command.contains(" -np 2 "),
        "launched: {launched}"
    );
    let done: Vec<&Value> = events.iter().filter(|e| e["event"] == "phase_done").collect();
    ensure!(done.len() == 4 && done.iter().all(|e| e["bytes"] == 32 << 20), "mpi phases: {done:?}");
    let summary = events.last().context("no summary")?;
    let write = summary["ior"].as_array().and_then(|r| r.first()).cloned().unwrap_or_default();
    ensure!(write["operation"] == "write" && write["tasks"] == 2, "mpi write row: {write}");
    eprintln!(
        "xtask e2e: mpirun on client1 ({}): write {:.1} MiB/s over 2 ranks",
        launched["hostfile"].as_str().unwrap_or_default().trim(),
        write["bw_mean_mib"].as_f64().unwrap_or(0.0)
    );

    let out = capture(&mut bench_cmd(&["--launcher", "mpi", "--engine", "ior"]))?;
    let events = json_lines(&out.stdout)?;
    let error = events.last().and_then(|s| s["error"].as_str()).unwrap_or_default().to_owned();
    ensure!(
        out.status.code() == Some(1)
            && error.contains("client client1")
            && error.contains("ior is not installed"),
        "engine ior without IOR: {:?}, {error}",
        out.status
    );
    Ok(())
}

/// mpirun across two hosts with `[bench] mpi_ssh = true`: gfs2 (the `.deb` install) becomes
/// a second client, both clients' agents are granted `mpi_ssh` by the cluster file's
/// `[policy.role.client]`, which bootstrap installs as their policy files, `up`
/// installs the cluster's MPI key and the clients' host keys, and a run of the built-in engine
/// as MPI ranks spans both hosts (client1's sshd logs root's key login from gfs2). A forged
/// host key in gfs2's known_hosts fails the run saying so; `up` repairs it.
fn mpi_across_hosts(lab: &Lab, binary: &Path, cluster: &str, tls: &str) -> anyhow::Result<()> {
    const CLIENTS: [&str; 2] = ["gfs2", "client1"];
    let mpi_cluster = variant(
        lab,
        cluster,
        "glusterfs-e2e-mpi.toml",
        "name = \"gfs2\"\naddress = \"10.213.250.12:7070\"\nroles = [\"server\"]",
        "name = \"gfs2\"\naddress = \"10.213.250.12:7070\"\nroles = [\"server\", \"client\"]",
        "\n[bench]\nlauncher = \"mpi\"\nmpi_ssh = true\n\n[policy.role.client]\nmpi_ssh = true\n",
    )?;
    // The grant is in the cluster file but not yet on the nodes: their agents, on the built-in
    // policy, refuse the unit (rule mpi-ssh-off) whatever the file says.
    let out = capture(Command::new(binary).args(["ctl", "up", &mpi_cluster, "--tls-dir", tls, "--json"]))?;
    let said = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.code() != Some(0) && said.contains("mpi-ssh-off"),
        "up with mpi_ssh before bootstrap installed the policy: exit {:?}: {said}",
        out.status.code()
    );
    // Bootstrap installs each client's policy from the file, by its own route (gfs2 the
    // .deb, client1 the binary), and restarts the agent to read it.
    let ssh_config = lab.work.join("ssh/ssh_config").to_string_lossy().into_owned();
    let deb = lab.deb.to_string_lossy().into_owned();
    // The agent's own program beside the binary (dist's), as bootstrap would pick it itself.
    let binary_arg = pvfs_host::paths::agent_program(binary).to_string_lossy().into_owned();
    for (node, from) in [("gfs2", ["--deb", deb.as_str()]), ("client1", ["--from", binary_arg.as_str()])] {
        let out = capture(
            Command::new(binary)
                .args(["ctl", "bootstrap", &mpi_cluster, "--tls-dir", tls])
                .args(["--ssh-config", &ssh_config, "--node", node])
                .args(from),
        )?;
        ensure!(
            out.status.success(),
            "bootstrap {node} with [policy]: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let policy = lab.exec(node, &["cat", "/etc/pvfs/policy.toml"])?;
        ensure!(
            policy.contains("written by `pvfsctl bootstrap`") && policy.contains("mpi_ssh = true"),
            "{node}'s policy file: {policy}"
        );
    }
    wait_reachable(binary, &mpi_cluster, tls, Duration::from_secs(60))?;
    let up = || -> anyhow::Result<(Option<i32>, Vec<Value>, String)> {
        let out =
            capture(Command::new(binary).args(["ctl", "up", &mpi_cluster, "--tls-dir", tls, "--json"]))?;
        Ok((out.status.code(), json_lines(&out.stdout)?, String::from_utf8_lossy(&out.stderr).into_owned()))
    };
    let (code, events, stderr) = up()?;
    ensure!(code == Some(0), "up with mpi_ssh: exit {code:?}: {stderr}\n{events:?}");
    for node in CLIENTS {
        let mode = lab.exec(node, &["stat", "-c", "%a", "/etc/pvfs/mpi/id_ed25519"])?;
        ensure!(mode.trim() == "600", "{node}: the MPI key is mode {mode}");
    }
    let results = lab.work.join("results-mpi").to_string_lossy().into_owned();
    let bench = || -> anyhow::Result<(Option<i32>, Vec<Value>, String)> {
        let out = capture(Command::new(binary).args([
            "ctl",
            "bench",
            &mpi_cluster,
            "--tls-dir",
            tls,
            "--json",
            "--results",
            &results,
            "--procs",
            "1",
            "--set",
            "t=1m",
            "--set",
            "b=16m",
            "--set",
            "i=1",
        ]))?;
        Ok((out.status.code(), json_lines(&out.stdout)?, String::from_utf8_lossy(&out.stderr).into_owned()))
    };
    let (code, events, stderr) = bench()?;
    ensure!(code == Some(0), "bench across hosts: exit {code:?}: {stderr}\n{events:?}");
    let launched = events.iter().find(|e| e["event"] == "launched").context("no launched event")?;
    let hostfile = launched["hostfile"].as_str().unwrap_or_default();
    ensure!(
        hostfile.contains("10.213.250.12") && hostfile.contains("10.213.250.13"),
        "the hostfile names both clients: {launched}"
    );
    let done: Vec<&Value> = events.iter().filter(|e| e["event"] == "phase_done").collect();
    ensure!(done.len() == 2 && done.iter().all(|e| e["bytes"] == 32 << 20), "phases across hosts: {done:?}");
    let sshd = lab.exec(
        "client1",
        &["journalctl", "--no-pager", "-u", "ssh", "-g", "Accepted publickey for root from 10.213.250.12"],
    )?;
    ensure!(
        sshd.contains("Accepted publickey for root"),
        "client1's sshd saw no key login from gfs2:\n{sshd}"
    );
    eprintln!(
        "xtask e2e: mpirun from gfs2 over ssh to client1 ({}): 2 ranks on 2 hosts",
        hostfile.trim().replace('\n', ", ")
    );

    // A forged host key: the run fails saying so; `up` puts the real one back.
    let forged =
        "10.213.250.13 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFd4CT7eOzNl2EaLeu/nR7gzgtAahQDYyjNE12f63sLw";
    lab.exec("gfs2", &["sh", "-c", &format!("printf '%s\\n' '{forged}' > /etc/pvfs/mpi/known_hosts")])?;
    let (code, events, _) = bench()?;
    let error = events.last().and_then(|s| s["error"].as_str()).unwrap_or_default().to_owned();
    ensure!(
        code == Some(1) && error.to_lowercase().contains("host key"),
        "a forged host key: exit {code:?}, {error}"
    );
    let (code, events, stderr) = up()?;
    ensure!(code == Some(0) && total(&events, "changed") >= 1, "up after the forgery: {code:?} {stderr}");
    let (code, _, stderr) = bench()?;
    ensure!(code == Some(0), "bench after up repaired known_hosts: {code:?} {stderr}");
    eprintln!("xtask e2e: a forged host key failed the run ({error}); up repaired it and the run passed");
    Ok(())
}

/// Waits (bounded) until systemd in the container has finished booting.
fn boot(lab: &Lab, name: &str) -> anyhow::Result<()> {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let out = capture(docker().args(["exec", &lab.container(name), "systemctl", "is-system-running"]))?;
        let state = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        // "degraded" (a unit that does not fit a container failed) is booted too.
        if state == "running" || state == "degraded" {
            return Ok(());
        }
        if Instant::now() > until {
            bail!("{name}: systemd did not finish booting in 60 s (state {state:?})");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn wait_reachable(binary: &Path, cluster: &str, tls: &str, deadline: Duration) -> anyhow::Result<()> {
    let until = Instant::now() + deadline;
    loop {
        let out = capture(Command::new(binary).args([
            "ctl",
            "nodes",
            cluster,
            "--tls-dir",
            tls,
            "--timeout",
            "2s",
        ]))?;
        if out.status.success() {
            return Ok(());
        }
        if Instant::now() > until {
            bail!("agents not reachable after {deadline:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn json_lines(stdout: &[u8]) -> anyhow::Result<Vec<Value>> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).with_context(|| format!("not JSON: {l}")))
        .collect()
}

/// The recap's sum of `field` over nodes.
fn total(events: &[Value], field: &str) -> u64 {
    events
        .last()
        .and_then(|r| r["nodes"].as_array())
        .map_or(0, |nodes| nodes.iter().filter_map(|n| n[field].as_u64()).sum())
}
