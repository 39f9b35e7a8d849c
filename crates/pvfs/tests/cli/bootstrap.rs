//! `pvfsctl bootstrap`'s flags: which nodes it acts on (`--node`).
//!
//! Real SSH to real nodes is the e2e's (`cargo xtask e2e --only bootstrap`, and the gluster
//! scenario installs its agents with it). Here `ssh` is a stand-in script first in PATH that
//! records the host it was asked for and answers the read-only probe as a bare systemd node
//! would (this machine's own `uname -m` and glibc, except for n2 where [`OLD_LIBC`] asks), so
//! the test sees exactly which nodes the command reached; only `--plan` runs, which reads nodes
//! and changes nothing.

use crate::util::{TestDir, cluster_file, text};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// With this file in the test directory, the stand-in `ssh` answers for n2 as CentOS 6 would
/// (`ldd (GNU libc) 2.12`, from `docker run centos:6 ldd --version` in wazuh/wazuh-packages
/// issue 2154; its getconf is left out, as an old or odd node's may be).
const OLD_LIBC: &str = "n2-is-centos6";

/// With this file in the test directory, the stand-in `ssh` fails n2's probe as a node without
/// sha256sum would (bash's words, exit status 127).
const NO_SHA256SUM: &str = "n2-lacks-sha256sum";

/// Three nodes, a CA without any certificate issued yet, and the stand-in `ssh` in `bin/`.
fn setup(dir: &TestDir) -> (PathBuf, PathBuf) {
    let cluster = cluster_file(
        dir,
        &[("n1", "10.1.0.1:7070".into()), ("n2", "10.1.0.2:7070".into()), ("n3", "10.1.0.3:7070".into())],
    );
    let init = dir.ctl(&["ca", "init", "--dir", "tls"]);
    assert!(init.status.success(), "{}", text(&init.stderr));
    // The next step is bootstrap, which issues every certificate from the CA.
    assert!(text(&init.stdout).contains("next: `pvfsctl bootstrap CLUSTER.toml`"), "{}", text(&init.stdout));
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // The host is the argument before the remote command (the last two arguments are HOST and
    // SCRIPT); the markers are the probe's, every section empty: nothing installed there.
    let script = format!(
        "#!/bin/sh\nwhile [ $# -gt 2 ]; do shift; done\necho \"$1\" >> '{log}'\n\
         if [ \"$1\" = 10.1.0.2 ] && [ -e '{fails}' ]; then echo 'bash: line 1: sha256sum: command not found' >&2; exit 127; fi\n\
         printf '@@pvfs-modes\\n@@pvfs-systemd\\n@@pvfs-active\\n@@pvfs-enabled\\n@@pvfs-package\\n'\n\
         echo @@pvfs-machine\nuname -m\necho @@pvfs-libc\n\
         if [ \"$1\" = 10.1.0.2 ] && [ -e '{old}' ]; then echo 'ldd (GNU libc) 2.12'; else getconf GNU_LIBC_VERSION; fi\n",
        log = dir.path().join("ssh.log").display(),
        old = dir.path().join(OLD_LIBC).display(),
        fails = dir.path().join(NO_SHA256SUM).display(),
    );
    let ssh = bin.join("ssh");
    std::fs::write(&ssh, script).unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    (cluster, bin)
}

fn bootstrap(dir: &TestDir, bin: &Path, cluster: &Path, extra: &[&str]) -> Output {
    let path = std::env::join_paths(
        std::iter::once(bin.to_owned())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    dir.command(&crate::util::pvfsctl())
        .env("PATH", path)
        .args(["bootstrap"])
        .arg(cluster)
        .args(extra)
        .output()
        .unwrap()
}

/// The hosts the stand-in `ssh` was run for, sorted (nodes are read in parallel).
fn reached(dir: &TestDir) -> Vec<String> {
    let log = std::fs::read_to_string(dir.path().join("ssh.log")).unwrap_or_default();
    let mut hosts: Vec<String> = log.lines().map(str::to_owned).collect();
    hosts.sort();
    hosts
}

fn tls_files(dir: &TestDir) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.path().join("tls"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn node_acts_on_the_named_nodes_only() {
    let dir = TestDir::new();
    let (cluster, bin) = setup(&dir);
    let out = bootstrap(&dir, &bin, &cluster, &["--plan", "--json", "--node", "n3", "--node", "n1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(reached(&dir), ["10.1.0.1", "10.1.0.3"]);
    let certificates: Vec<&str> =
        events.iter().filter(|e| e["event"] == "certificate").filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(certificates, ["n1", "n3", "pvfsctl"], "only the named nodes' certificates: {events:?}");
    let probed: Vec<&str> =
        events.iter().filter(|e| e["event"] == "probed").filter_map(|e| e["node"].as_str()).collect();
    assert_eq!(probed.len(), 2, "{events:?}");
    assert!(!probed.contains(&"n2"), "{events:?}");
    // The recap in the cluster file's order, whatever the flags' order.
    // The recap in the cluster file's order, whatever the flags' order.
    let recap = events.last().unwrap();
    let names: Vec<&str> =
        recap["nodes"].as_array().unwrap().iter().filter_map(|n| n["name"].as_str()).collect();
    assert_eq!(names, ["n1", "n3"], "{recap}");
    assert_eq!(tls_files(&dir), ["ca.crt", "ca.key"], "--plan issued a certificate");

    // Without --node: every node.
    std::fs::remove_file(dir.path().join("ssh.log")).unwrap();
    let out = bootstrap(&dir, &bin, &cluster, &["--plan"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(reached(&dir), ["10.1.0.1", "10.1.0.2", "10.1.0.3"]);
}

#[test]
fn an_unknown_node_is_refused_naming_the_clusters_nodes_and_nothing_is_done() {
    let dir = TestDir::new();
    let (cluster, bin) = setup(&dir);
    // Not --plan: this run would issue certificates and install agents if it went ahead.
    let out = bootstrap(&dir, &bin, &cluster, &["--node", "n2", "--node", "n9"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("has no node named \"n9\"")
            && stderr.contains("its nodes are: n1, n2, n3")
            && stderr.contains("cluster.toml"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(reached(&dir).is_empty(), "ssh was run: {:?}", reached(&dir));
    assert_eq!(tls_files(&dir), ["ca.crt", "ca.key"], "a certificate was issued");
}

#[test]
fn a_node_with_an_older_glibc_than_the_binary_needs_is_refused_naming_both() {
    let dir = TestDir::new();
    let (cluster, bin) = setup(&dir);
    std::fs::write(dir.path().join(OLD_LIBC), "").unwrap();
    let out = bootstrap(&dir, &bin, &cluster, &["--plan", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let recap = events.last().unwrap();
    let failures = recap["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{recap}");
    assert_eq!(failures[0]["node"], "n2");
    // pvfsctl here is this machine's own build: it needs this machine's newest glibc symbol
    // version (2.34 on Debian 12), which the message names.
    let message = failures[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("node n2: it has glibc 2.12, and the binary to install needs glibc 2.")
            && message.contains("or newer; nothing was installed"),
        "{message}"
    );
    // The other nodes were read and planned as usual.
    let probed: Vec<&str> =
        events.iter().filter(|e| e["event"] == "probed").filter_map(|e| e["node"].as_str()).collect();
    assert_eq!(probed.len(), 2, "{events:?}");
    assert!(!probed.contains(&"n2"), "{events:?}");
}

/// A failed node is one line as it happens and once in full in the recap; the probe's command
/// line (about a thousand characters) cut there unless -v.
#[test]
fn a_failure_is_shown_once_with_its_command_cut_unless_verbose() {
    let dir = TestDir::new();
    let (cluster, bin) = setup(&dir);
    std::fs::write(dir.path().join(NO_SHA256SUM), "").unwrap();
    let out = bootstrap(&dir, &bin, &cluster, &["--plan"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("[n2] FAILED: node n2: reading the node failed").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("command not found").count(), 1, "{stderr}");
    let commands: Vec<&str> = stderr.lines().filter(|l| l.trim_start().starts_with("command: ")).collect();
    assert_eq!(commands.len(), 1, "{stderr}");
    assert!(
        commands[0].ends_with("… (-v shows the whole command)") && commands[0].chars().count() < 200,
        "{stderr}"
    );
    assert!(!stderr.contains("getconf GNU_LIBC_VERSION"), "the whole probe was shown: {stderr}");
    // The other nodes went on.
    assert!(text(&out.stdout).contains("n1  ok="), "{}", text(&out.stdout));

    let out = bootstrap(&dir, &bin, &cluster, &["--plan", "-v"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("getconf GNU_LIBC_VERSION").count(), 1, "{stderr}");
    assert!(!stderr.contains("-v shows the whole command"), "{stderr}");
}
