//! A private Docker network with agent containers, removed again however the run ends.

use crate::util::{capture, read, shown};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Everything the e2e runs create carries this label, so leftovers of a run that was killed
/// can be found and removed by the next one.
pub const LABEL: &str = "pvfs-e2e";

pub fn docker() -> Command {
    Command::new("docker")
}

/// One container running the agent.
pub struct Node {
    pub name: String,
    pub ip: String,
    pub container: String,
}

/// A network and its containers; dropping it removes them (unless `keep`).
pub struct Lab {
    pub run_id: String,
    pub network: String,
    pub subnet_prefix: String,
    pub nodes: Vec<Node>,
    pub keep: bool,
}

impl Lab {
    /// Removes leftovers of earlier runs, then creates a network on a free 10.213.x.0/24.
    pub fn create(run_id: &str, keep: bool) -> anyhow::Result<Lab> {
        remove_leftovers()?;
        let network = format!("pvfs-e2e-{run_id}");
        let seed = std::process::id() as usize;
        for attempt in 0..32 {
            let third = 16 + (seed + attempt * 7) % 224;
            let subnet_prefix = format!("10.213.{third}");
            let out = capture(docker().args(["network", "create", "--driver", "bridge"]).args([
                "--subnet",
                &format!("{subnet_prefix}.0/24"),
                "--label",
                &format!("{LABEL}={run_id}"),
                &network,
            ]))?;
            if out.status.success() {
                return Ok(Lab {
                    run_id: run_id.to_owned(),
                    network,
                    subnet_prefix,
                    nodes: Vec::new(),
                    keep,
                });
            }
            let err = String::from_utf8_lossy(&out.stderr);
            if !err.contains("overlap") {
                bail!("docker network create {network} failed: {err}");
            }
        }
        bail!("no free 10.213.x.0/24 subnet for the e2e network")
    }

    /// The address node number `n` (1-based) gets.
    pub fn ip(&self, n: usize) -> String {
        format!("{}.{}", self.subnet_prefix, 10 + n)
    }

    /// Starts a container named `name` at `ip` running `/usr/local/bin/pvfs-agent` (the
    /// bind-mounted `binary`) with the TLS directory `tls` mounted at /etc/pvfs/tls.
    pub fn start_agent(
        &mut self,
        image: &str,
        name: &str,
        ip: &str,
        binary: &Path,
        tls: &Path,
    ) -> anyhow::Result<()> {
        let container = format!("pvfs-e2e-{}-{name}", self.run_id);
        read(docker().args(["run", "--detach", "--name", &container, "--hostname", name]).args([
            "--network",
            &self.network,
            "--ip",
            ip,
            "--label",
            &format!("{LABEL}={}", self.run_id),
            "--volume",
            &format!("{}:/usr/local/bin/pvfs-agent:ro", binary.display()),
            "--volume",
            &format!("{}:/etc/pvfs/tls:ro", tls.display()),
            image,
            "/usr/local/bin/pvfs-agent",
            "--name",
            name,
            // The Ganglia drop-in, for the gmetad scenario.
            "--gmond-xml",
            "0.0.0.0:8649",
            "--gmond-cluster",
            "e2e",
            "--log",
            "info",
        ]))
        .with_context(|| format!("starting container {container}"))?;
        self.nodes.push(Node { name: name.to_owned(), ip: ip.to_owned(), container });
        Ok(())
    }

    pub fn node(&self, name: &str) -> anyhow::Result<&Node> {
        self.nodes.iter().find(|n| n.name == name).with_context(|| format!("no e2e node {name}"))
    }

    /// Every container's log, for a failed run's report.
    pub fn logs(&self) -> String {
        let mut all = String::new();
        for node in &self.nodes {
            let out = capture(docker().args(["logs", "--tail", "30", &node.container]));
            let text = out.map(|o| {
                format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
            });
            all += &format!("--- {} ({}) ---\n{}\n", node.name, node.container, text.unwrap_or_default());
        }
        all
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("xtask e2e: kept network {} and its containers (--keep)", self.network);
            return;
        }
        for node in &self.nodes {
            let _ = capture(docker().args(["rm", "--force", "--volumes", &node.container]));
        }
        let _ = capture(docker().args(["network", "rm", &self.network]));
    }
}

/// Containers and networks of earlier e2e runs (killed before they could clean up).
fn remove_leftovers() -> anyhow::Result<()> {
    let filter = format!("label={LABEL}");
    let containers = read(docker().args(["ps", "--all", "--quiet", "--filter", &filter]))?;
    for id in containers.split_whitespace() {
        capture(docker().args(["rm", "--force", id]))?;
    }
    let networks = read(docker().args(["network", "ls", "--quiet", "--filter", &filter]))?;
    for id in networks.split_whitespace() {
        capture(docker().args(["network", "rm", id]))?;
    }
    Ok(())
}

/// Checks the Docker engine answers, with a message that says what to do if not.
pub fn check_engine() -> anyhow::Result<()> {
    let out = capture(docker().args(["version", "--format", "{{.Server.Version}}"]));
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => bail!(
            "the Docker engine does not answer (`{}`): {}; start it (systemctl start docker)",
            shown(docker().arg("version")),
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => Err(e.context("docker is not installed (apt-get install docker.io)")),
    }
}

/// A scratch directory for one run under target/.
pub fn work_dir(run_id: &str) -> anyhow::Result<PathBuf> {
    let dir = crate::util::root().join("target/e2e").join(run_id);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}
