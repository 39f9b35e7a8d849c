//! `pvfsctl bootstrap CLUSTER.toml`: agents installed and started over SSH on every node, with
//! certificates from the cluster CA, until each answers over mutual TLS; lines as it goes (or
//! JSON with `--json`) and a recap like `up`'s. What it does is `pvfs-bootstrap`'s; this
//! resolves the flags, issues the missing certificates and shows the events.

use crate::cli::BootstrapArgs;
use crate::{exit, output};
use anyhow::Context;
use pvfs_bootstrap::{
    self as bootstrap, BootstrapEvent, Change, Counts, NodeFailure, Options, Recap, Wanted,
};
use pvfs_coord::{ClientSecurity, Dialer};
use serde::Serialize;
use std::time::Duration;
use tokio::sync::mpsc;

pub(crate) async fn run(args: BootstrapArgs) -> anyhow::Result<u8> {
    // Ctrl-C (or SIGTERM) as for `up`: no node starts after it; the nodes under way finish.
    let shutdown = crate::shutdown::Shutdown::on_signals()?;
    let mut cluster = pvfs_config::load(&args.cluster)?;
    // First: a mistyped --node must stop the run before any certificate is issued.
    bootstrap::select_nodes(&mut cluster, &args.nodes)?;
    if args.connect.insecure {
        anyhow::bail!("{}", super::INSECURE_REMOVED);
    }
    let tls_dir = args.connect.tls_dir.clone().unwrap_or_else(|| cluster.tls_dir.clone());
    let binary_path = match &args.from {
        Some(path) => path.clone(),
        None => pvfs_host::paths::agent_program(
            &std::env::current_exe().context("finding this program's own binary")?,
        ),
    };
    let binary = Wanted::file("binary", bootstrap::REMOTE_BINARY.into(), 0o755, &binary_path)?;
    // Each node's machine and glibc are checked against this binary's before anything is
    // written there. A --deb is `cargo xtask dist`'s package of the same build, so its needs
    // are the binary's.
    let needs = bootstrap::platform::needs(&binary_path)
        .map_err(|source| bootstrap::BootstrapError::Binary { path: binary_path.clone(), source })?;
    let package = match &args.deb {
        Some(deb) => Some(Wanted::file("package", bootstrap::REMOTE_DEB.into(), 0o644, deb)?),
        None => None,
    };
    let issued = bootstrap::ensure_certificates(&cluster, &tls_dir, &args.connect.cert_name, args.plan)?;
    for cert in &issued {
        let verb = if cert.planned { "would issue" } else { "issued" };
        let names =
            if cert.sans.is_empty() { String::new() } else { format!(" for {}", cert.sans.join(", ")) };
        if args.json {
            output::json(&Line::Certificate {
                name: &cert.name,
                path: &cert.cert.to_string_lossy(),
                sans: &cert.sans,
                planned: cert.planned,
            })?;
        } else {
            output::print(&format!("{verb} certificate {}{names}\n", cert.cert.display()))?;
        }
    }
    let mut nodes = Vec::with_capacity(cluster.nodes.len());
    for node in &cluster.nodes {
        let mut files = bootstrap::wanted_files(node, &tls_dir, &binary, package.as_ref())?;
        files.common.extend(bootstrap::policy_file(&cluster, node)?);
        nodes.push((node.clone(), files));
    }
    // The coordinator's own certificate exists now (issued above when it did not), except with
    // --plan, which dials nothing.
    let dialer = if args.plan {
        None
    } else {
        let material = pvfs_tls::load(&tls_dir, &args.connect.cert_name)?;
        pvfs_tls::check_identity(&material, pvfs_tls::Usage::Coordinator).with_context(|| {
            format!("the coordinator certificate in {} cannot be used", tls_dir.display())
        })?;
        Some(Dialer::new(ClientSecurity::MutualTls(material), args.connect.timeout))
    };
    // One SSH connection per node for all its commands, its control socket in a directory of
    // this run's own (removed when the run ends).
    let multiplex = if args.no_multiplex {
        None
    } else {
        Some(bootstrap::ssh::Multiplex::new().with_context(|| {
            format!(
                "creating a private directory for SSH control sockets in {} (set TMPDIR elsewhere, or pass \
                 --no-multiplex)",
                std::env::temp_dir().display()
            )
        })?)
    };
    let options = Options {
        ssh: bootstrap::ssh::Ssh {
            user: args.ssh_user,
            identity: args.identity,
            config: args.ssh_config,
            accept_new_host_keys: args.accept_new_host_keys,
            connect_timeout: args.ssh_timeout,
            sudo: args.sudo,
            multiplex,
            ..Default::default()
        },
        plan: args.plan,
        parallel: usize::from(args.parallel),
        wait: args.wait,
        // A binary of some 100 MB over a slow link; the bound is for a node that hangs.
        command_timeout: Duration::from_secs(600),
        needs,
        stop: shutdown.token(),
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let work = tokio::spawn(bootstrap::run(nodes, dialer, options, tx));
    let view = View { json: args.json, plan: args.plan, verbose: args.verbose };
    let stopping = "no new node starts; the nodes under way finish";
    super::show_until_done(&mut rx, &shutdown.token(), stopping, |event| view.show(event)).await?;
    let recap = work.await?;
    view.recap(&recap)?;
    Ok(if shutdown.token().is_cancelled() {
        exit::INTERRUPTED
    } else if recap.failed() {
        exit::FAILURES
    } else {
        exit::OK
    })
}

struct View {
    json: bool,
    plan: bool,
    /// Failed commands shown whole.
    verbose: bool,
}

impl View {
    fn show(&self, event: &BootstrapEvent) -> anyhow::Result<()> {
        if self.json {
            return output::json(&Line::of(event));
        }
        let text = match event {
            BootstrapEvent::Probed { node, plan } if self.plan => {
                let mut text = String::new();
                for change in &plan.changes {
                    text += &format!("[{node}] would {change}\n");
                }
                if plan.changes.is_empty() {
                    text += &format!("[{node}] nothing to change\n");
                }
                text
            }
            BootstrapEvent::Probed { .. } => return Ok(()),
            BootstrapEvent::Done { node, change } => format!("[{node}] {change}\n"),
            BootstrapEvent::Waiting { node, elapsed, last } => {
                output::note(&format!("[{node}] waiting for the agent ({}s): {last}", elapsed.as_secs()));
                return Ok(());
            }
            BootstrapEvent::Ready { node, version, build, executable, elapsed } => format!(
                "[{node}] agent {version} (build {}, {executable}) answers over mutual TLS ({:.1}s)\n",
                build.get(..12).unwrap_or(build),
                elapsed.as_secs_f64()
            ),
            // One line as it happens; the whole failure (command, stderr, journal) is in the
            // recap, once.
            BootstrapEvent::Finished { node, result: Err(failure) } => {
                let first = failure.message.lines().next().unwrap_or_default();
                output::note(&format!("[{node}] FAILED: {first}"));
                return Ok(());
            }
            BootstrapEvent::Finished { .. } => return Ok(()),
        };
        Ok(output::print(&text)?)
    }

    fn recap(&self, recap: &Recap<NodeFailure>) -> anyhow::Result<()> {
        if self.json {
            return output::json(&Line::Recap {
                plan: self.plan,
                nodes: recap
                    .nodes
                    .iter()
                    .map(|(name, c)| CountsLine { name, ok: c.ok, changed: c.changed, failed: c.failed })
                    .collect(),
                failures: recap.failures.iter().map(FailureLine::of).collect(),
                elapsed_ms: ms(recap.elapsed),
            });
        }
        let width = recap.nodes.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        let mut text =
            format!("\n{} ({:.1}s)\n", if self.plan { "PLAN" } else { "RECAP" }, recap.elapsed.as_secs_f64());
        for (name, Counts { ok, changed, failed, .. }) in &recap.nodes {
            let change = if self.plan { "change" } else { "changed" };
            text += &format!("{name:width$}  ok={ok} {change}={changed} failed={failed}\n");
        }
        output::print(&text)?;
        for failure in &recap.failures {
            output::note(&format!("error: {}", failure.render(self.verbose)));
        }
        if self.plan && recap.failures.is_empty() {
            let changes = recap.changed();
            output::note(&if changes == 0 {
                "nothing to change: every agent is installed and running".to_owned()
            } else {
                format!("{changes} changes would be made; run without --plan to make them")
            });
        }
        Ok(())
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One line of `--json`.
#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Line<'a> {
    Certificate { name: &'a str, path: &'a str, sans: &'a [String], planned: bool },
    Probed { node: &'a str, unchanged: usize, changes: Vec<String> },
    Change { node: &'a str, change: String },
    Waiting { node: &'a str, elapsed_ms: u64, last: &'a str },
    Ready { node: &'a str, version: &'a str, build: &'a str, executable: &'a str, elapsed_ms: u64 },
    NodeDone { node: &'a str, ok: bool, failure: Option<FailureLine<'a>> },
    Recap { plan: bool, nodes: Vec<CountsLine<'a>>, failures: Vec<FailureLine<'a>>, elapsed_ms: u64 },
}

#[derive(Serialize)]
struct CountsLine<'a> {
    name: &'a str,
    ok: usize,
    changed: usize,
    failed: usize,
}

#[derive(Serialize)]
struct FailureLine<'a> {
    node: &'a str,
    message: &'a str,
    command: Option<&'a str>,
    code: Option<i32>,
    stderr_tail: &'a str,
    host_key: bool,
    journal: &'a [String],
}

impl<'a> FailureLine<'a> {
    fn of(f: &'a NodeFailure) -> FailureLine<'a> {
        FailureLine {
            node: &f.node,
            message: &f.message,
            command: f.command.as_deref(),
            code: f.code,
            stderr_tail: &f.stderr_tail,
            host_key: f.host_key,
            journal: &f.journal,
        }
    }
}

impl<'a> Line<'a> {
    fn of(event: &'a BootstrapEvent) -> Line<'a> {
        match event {
            BootstrapEvent::Probed { node, plan } => Line::Probed {
                node,
                unchanged: plan.unchanged,
                changes: plan.changes.iter().map(Change::to_string).collect(),
            },
            BootstrapEvent::Done { node, change } => Line::Change { node, change: change.to_string() },
            BootstrapEvent::Waiting { node, elapsed, last } => {
                Line::Waiting { node, elapsed_ms: ms(*elapsed), last }
            }
            BootstrapEvent::Ready { node, version, build, executable, elapsed } => {
                Line::Ready { node, version, build, executable, elapsed_ms: ms(*elapsed) }
            }
            BootstrapEvent::Finished { node, result } => Line::NodeDone {
                node,
                ok: result.is_ok(),
                failure: result.as_ref().err().map(FailureLine::of),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// What bootstrap writes from a cluster file's `[policy]` is a policy file the agent
    /// reads, and it gives the agent the policy the coordinator judged the plan by.
    #[test]
    fn the_policy_file_written_is_the_one_the_agent_reads() {
        let src = r#"
[cluster]
name = "gv"
kind = "glusterfs"

[[node]]
name = "s1"
address = "10.0.0.1"
roles = ["server"]
disks = ["/dev/disk/azure/scsi1/lun0"]

[[node]]
name = "c1"
address = "10.0.0.2"
roles = ["client"]

[glusterfs]
volume = "gv0"
mount = "/mnt/gv0"

[policy]
kinds = ["packages", "service", "mkfs", "mount", "directory", "gluster-peers", "gluster-volume"]
devices = ["/dev/disk/azure/scsi1/lun*"]
repositories = ["https://mirror.example.com/gluster/"]
refuse_unsigned_repositories = true

[policy.role.client]
mpi_ssh = true
services = ["chronyd"]
"#;
        let cluster = pvfs_config::parse(Path::new("/c/cluster.toml"), src).unwrap();
        for node in &cluster.nodes {
            let text = cluster.policy_for(node).unwrap().render(&cluster.source, &node.name);
            let read = pvfs_agent::policy::parse(Path::new("/etc/pvfs/policy.toml"), &text)
                .unwrap_or_else(|err| panic!("{err}\n{text}"));
            let judged = pvfs_plan::agent_policy(&cluster, node).unwrap().unwrap();
            assert_eq!(read, judged, "{text}");
        }
        // The client's grant is its own: the server's policy does not give it.
        let server = pvfs_plan::agent_policy(&cluster, cluster.node("s1").unwrap()).unwrap().unwrap();
        let client = pvfs_plan::agent_policy(&cluster, cluster.node("c1").unwrap()).unwrap().unwrap();
        assert_ne!(server, client);
    }
}
