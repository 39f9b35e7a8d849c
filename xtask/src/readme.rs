//! The README's flows, run as written: the `sh` blocks a reader copies (`### From SSH hosts`,
//! the "any other machines" lines and the Azure flow of `### From nothing`) are read out of
//! README.md and each line is run by `sh -c`, unchanged, in a directory of its own, against
//! containers that run systemd and sshd and have no agent, as fresh machines are.
//!
//! What a line cannot do here is skipped by name and counted: lines of programs that need
//! Azure or a real file system (`az`, `cargo build`, `provision`, `deprovision`, `up` and
//! `bench` on a Lustre cluster); a block whose lines change is noticed because every line is
//! either run or matched by [`SKIPPED`]. The cluster file each flow names (`cluster.toml`,
//! `config/lustre.toml`, `config/lustre-azure.toml`) is the test's own: kind `local` over the
//! containers, its `[tls] dir` the README's. Two things stand in for the operator's machine:
//! `pvfsctl` on PATH is the binary under test, and `ssh` on PATH adds `-F` the lab's
//! ssh_config (OpenSSH reads `~` from the password database, so `$HOME/.ssh/config` cannot be
//! pointed elsewhere). The Azure flow logs in as `azureuser` with passwordless sudo and with
//! no host key known, as on a new VM: its own line's `--accept-new-host-keys` and `--sudo`
//! are what make it work (the fault item 13 of issue 25 found).

use crate::docker::{LABEL, docker};
use crate::sshlab::SshLab;
use crate::util::{capture, read, step};
use anyhow::{Context, bail, ensure};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Its own network, apart from the other scenarios'.
const SUBNET: &str = "10.213.252.0/24";
const NODES: [(&str, &str); 2] = [("node1", "10.213.252.11"), ("node2", "10.213.252.12")];

/// Lines that cannot run here, by what they start with: Azure, and a real Lustre cluster.
const SKIPPED: &[&str] = &[
    "cargo build",
    "az login",
    "pvfsctl validate config/lustre-azure.toml",
    "pvfsctl provision",
    "pvfsctl deprovision",
    "pvfsctl up config/lustre",
    "pvfsctl bench config/lustre",
];

/// One flow: the README heading its block follows, the text that picks the block under it
/// (a heading may hold several), the cluster file its lines name, the login.
struct Flow {
    heading: &'static str,
    block_with: &'static str,
    cluster: &'static str,
    /// `None`: root with every host key known; `Some(user)`: that user, with sudo, and no host key known.
    user: Option<&'static str>,
}

const FLOWS: [Flow; 3] = [
    Flow {
        heading: "### From SSH hosts",
        block_with: "bootstrap cluster.toml",
        cluster: "cluster.toml",
        user: None,
    },
    Flow {
        heading: "### From nothing",
        block_with: "bootstrap config/lustre.toml",
        cluster: "config/lustre.toml",
        user: None,
    },
    Flow {
        heading: "### From nothing",
        block_with: "bootstrap config/lustre-azure.toml",
        cluster: "config/lustre-azure.toml",
        user: Some("azureuser"),
    },
];

struct Lab {
    run_id: String,
    network: String,
    keep: bool,
}

impl Lab {
    fn container(&self, name: &str) -> String {
        format!("pvfs-e2e-{}-readme-{name}", self.run_id)
    }

    fn exec(&self, name: &str, script: &str) -> anyhow::Result<String> {
        read(docker().args(["exec", &self.container(name), "sh", "-c", script]))
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("xtask e2e: kept the readme lab (network {})", self.network);
            return;
        }
        for (name, _) in NODES {
            let _ = capture(docker().args(["rm", "--force", "--volumes", &self.container(name)]));
        }
        let _ = capture(docker().args(["network", "rm", &self.network]));
    }
}

/// The lines of the first `sh` block under `heading` that contains `with`, comments cut.
pub fn block(readme: &str, heading: &str, with: &str) -> anyhow::Result<Vec<String>> {
    let start =
        readme.find(&format!("\n{heading}\n")).with_context(|| format!("README has no {heading:?}"))?;
    let section = &readme[start + 1..];
    // The section ends at the next heading of its level or above.
    let end = section[heading.len()..].find("\n#").map_or(section.len(), |e| e + heading.len());
    let mut rest = &section[..end];
    while let Some(open) = rest.find("```sh\n") {
        let body = &rest[open + 6..];
        let close = body.find("```").context("an sh block that does not end")?;
        let text = &body[..close];
        if text.contains(with) {
            return Ok(text
                .lines()
                .map(|l| l.split_once("  #").map_or(l, |(cmd, _)| cmd).trim().to_owned())
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .collect());
        }
        rest = &body[close + 3..];
    }
    bail!("README's {heading:?} has no sh block with {with:?}")
}

pub fn run(binary: &Path, image: &str, work: &Path, keep: bool) -> anyhow::Result<()> {
    let readme = std::fs::read_to_string(crate::util::root().join("README.md"))?;
    let run_id = format!("{}", std::process::id());
    let lab = Lab { run_id: run_id.clone(), network: format!("pvfs-e2e-readme-{run_id}"), keep };
    step(docker().args(["network", "create", "--driver", "bridge", "--subnet", SUBNET]).args([
        "--label",
        &format!("{LABEL}={run_id}"),
        &lab.network,
    ]))
    .with_context(|| format!("creating the readme network {SUBNET} (is another e2e run using it?)"))?;
    for (name, ip) in NODES {
        let mut run = docker();
        run.args(["run", "--detach", "--name", &lab.container(name), "--hostname", name])
            .args(["--network", &lab.network, "--ip", ip, "--label", &format!("{LABEL}={run_id}")])
            .args(["--env", "container=docker", "--stop-signal", "SIGRTMIN+3"])
            .args(["--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp"])
            .args(["--volume", "/sys/fs/cgroup:/sys/fs/cgroup:ro"])
            .args(["--cap-add", "SYS_ADMIN", "--security-opt", "seccomp=unconfined"])
            .args(["--security-opt", "apparmor=unconfined"])
            .args([image, "/sbin/init"]);
        read(&mut run).with_context(|| format!("starting container for {name}"))?;
    }
    let mut ssh = SshLab::new(&work.join("ssh"))?;
    for (name, ip) in NODES {
        boot(&lab, name)?;
        ssh.admit(&lab.container(name), ip)?;
    }
    let mut ran = 0;
    let mut skipped = 0;
    for flow in &FLOWS {
        let lines = block(&readme, flow.heading, flow.block_with)?;
        let dir = work.join(format!("flow-{}", flow.cluster.replace('/', "-")));
        let config = prepare(&lab, &ssh, flow, &dir, binary)?;
        for line in &lines {
            if SKIPPED.iter().any(|s| line.starts_with(s)) {
                eprintln!("xtask e2e: readme: skipped (needs Azure or Lustre): {line}");
                skipped += 1;
                continue;
            }
            ensure!(
                line.starts_with("pvfsctl "),
                "README line {line:?} is neither run here nor listed as skipped"
            );
            let run = |line: &str| {
                capture(
                    Command::new("sh")
                        .args(["-c", line])
                        .current_dir(&dir)
                        .env("PATH", format!("{}:/usr/bin:/bin", dir.join("bin").display()))
                        .env("PVFS_E2E_SSH_CONFIG", &config),
                )
            };
            // On new machines the flag is what makes it work: without it, every node is
            // refused for its unknown host key (what the README's Azure flow once did).
            if flow.user.is_some() && line.contains(" --accept-new-host-keys") {
                let out = run(&line.replace(" --accept-new-host-keys", ""))?;
                let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
                ensure!(
                    !out.status.success() && said.contains("host key"),
                    "`{line}` without --accept-new-host-keys on new machines: exit {:?}: {said}",
                    out.status.code()
                );
            }
            let started = Instant::now();
            let out = run(line)?;
            eprintln!(
                "xtask e2e: readme: `{line}`: exit {:?} in {:.1}s",
                out.status.code(),
                started.elapsed().as_secs_f64()
            );
            ensure!(
                out.status.success(),
                "README line `{line}` (under {}) failed as written:\n{}{}",
                flow.heading,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            ran += 1;
        }
        // Whatever the flow's lines were, they must leave agents that answer.
        let out = capture(
            Command::new(binary)
                .args(["ctl", "nodes", flow.cluster, "--json", "--timeout", "5s"])
                .current_dir(&dir),
        )?;
        let text = String::from_utf8_lossy(&out.stdout);
        ensure!(
            out.status.success() && NODES.iter().all(|(name, _)| text.contains(&format!("\"{name}\""))),
            "after the README's {} lines, `pvfsctl nodes {}`: {text}{}",
            flow.heading,
            flow.cluster,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    eprintln!("xtask e2e: readme: {ran} lines run as written, {skipped} skipped (Azure or Lustre)");
    ensure!(ran >= 8, "only {ran} README lines ran: the flows' blocks were not found as expected");
    Ok(())
}

/// The flow's directory: its cluster file (kind local over the containers, `[tls] dir` "tls"
/// beside it, as the README's `ca init --dir` makes it), `bin/pvfsctl` (the binary under
/// test) and `bin/ssh`, and the login it uses; returns the ssh_config its `ssh` reads.
fn prepare(lab: &Lab, ssh: &SshLab, flow: &Flow, dir: &Path, binary: &Path) -> anyhow::Result<PathBuf> {
    let cluster = dir.join(flow.cluster);
    std::fs::create_dir_all(cluster.parent().context("cluster file path")?)?;
    std::fs::create_dir_all(dir.join("bin"))?;
    let mut toml = format!(
        "# README flow {:?}\n[cluster]\nname = \"readme\"\nkind = \"local\"\n\n[tls]\ndir = \"tls\"\n\n[local]\nmount = \"/mnt/pvfs\"\n",
        flow.heading
    );
    for (name, ip) in NODES {
        toml += &format!(
            "\n[[node]]\nname = \"{name}\"\naddress = \"{ip}:7070\"\nroles = [\"server\", \"client\"]\n"
        );
    }
    std::fs::write(&cluster, toml)?;
    std::os::unix::fs::symlink(binary, dir.join("bin/pvfsctl"))?;
    let config = match flow.user {
        None => ssh.config.clone(),
        Some(user) => {
            // A VM's admin login: our key, passwordless sudo, and a known_hosts of its own
            // that knows no node yet.
            for (name, _) in NODES {
                lab.exec(
                    name,
                    &format!(
                        "id {user} >/dev/null 2>&1 || useradd -m -s /bin/sh {user}; \
                         install -d -m 700 -o {user} -g {user} /home/{user}/.ssh; \
                         install -m 600 -o {user} -g {user} /root/.ssh/authorized_keys /home/{user}/.ssh/authorized_keys; \
                         echo '{user} ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/{user}; chmod 440 /etc/sudoers.d/{user}"
                    ),
                )?;
            }
            let known = dir.join("known_hosts");
            std::fs::write(&known, "")?;
            let text = std::fs::read_to_string(&ssh.config)?
                .replace(&ssh.known_hosts.display().to_string(), &known.display().to_string());
            let config = dir.join("ssh_config");
            std::fs::write(&config, text)?;
            config
        }
    };
    let wrapper = dir.join("bin/ssh");
    std::fs::write(&wrapper, "#!/bin/sh\nexec /usr/bin/ssh -F \"$PVFS_E2E_SSH_CONFIG\" \"$@\"\n")?;
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    Ok(config)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flow's block is found in the README as it is, and each of its lines is either run
    /// or skipped by name.
    #[test]
    fn the_readmes_flows_are_found_and_every_line_is_accounted_for() {
        let readme = std::fs::read_to_string(crate::util::root().join("README.md")).unwrap();
        for flow in &FLOWS {
            let lines = block(&readme, flow.heading, flow.block_with).unwrap();
            assert!(lines.iter().any(|l| l.contains("pvfsctl bootstrap")), "{lines:?}");
            for line in &lines {
                assert!(
                    SKIPPED.iter().any(|s| line.starts_with(s)) || line.starts_with("pvfsctl "),
                    "{line:?}"
                );
            }
        }
        let azure = block(&readme, "### From nothing", "bootstrap config/lustre-azure.toml").unwrap();
        let boot = azure.iter().find(|l| l.contains("bootstrap")).unwrap();
        assert!(boot.contains("--accept-new-host-keys") && boot.contains("--sudo"), "{boot}");
    }
}
