//! Bootstrap's pieces: certificates, the files a node must hold, the node's reading, the diff,
//! and the remote scripts run for real by the local shell on real files.

use super::*;
use expect_test::expect;
use std::process::Command;

fn cluster(dir: &Path) -> Cluster {
    let text = format!(
        "[cluster]\nname = \"t\"\nkind = \"local\"\n[tls]\ndir = \"{}\"\n[local]\nmount = \"/mnt/pvfs\"\n\
         [[node]]\nname = \"node1\"\naddress = \"10.213.251.11:7070\"\nroles = [\"server\", \"client\"]\n\
         [[node]]\nname = \"node2\"\naddress = \"[fd00::2]:7171\"\nroles = [\"server\", \"client\"]\n",
        dir.join("tls").display()
    );
    pvfs_config::parse(&dir.join("cluster.toml"), &text).unwrap()
}

fn wanted(path: &str, mode: u32, bytes: &[u8]) -> Wanted {
    Wanted::bytes("file", path.into(), mode, bytes.to_vec())
}

#[test]
fn missing_certificates_are_issued_for_the_dialled_address_and_existing_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    let tls = dir.path().join("tls");
    let err = ensure_certificates(&c, &tls, "pvfsctl", false).unwrap_err();
    assert!(err.to_string().contains("pvfsctl ca init --dir"), "{err}");
    pvfs_tls::init_ca(&tls).unwrap();
    // --plan lists and writes nothing.
    let planned = ensure_certificates(&c, &tls, "pvfsctl", true).unwrap();
    assert_eq!(planned.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(), ["node1", "node2", "pvfsctl"]);
    assert!(planned.iter().all(|i| i.planned) && !tls.join("node1.crt").exists());

    let issued = ensure_certificates(&c, &tls, "pvfsctl", false).unwrap();
    assert_eq!(issued[0].sans, ["10.213.251.11"]);
    assert_eq!(issued[1].sans, ["fd00::2"]);
    for (name, usage) in [
        ("node1", pvfs_tls::Usage::Agent),
        ("node2", pvfs_tls::Usage::Agent),
        ("pvfsctl", pvfs_tls::Usage::Coordinator),
    ] {
        let material = pvfs_tls::load(&tls, name).unwrap();
        pvfs_tls::check_identity(&material, usage).unwrap();
    }
    let before = std::fs::read(tls.join("node1.crt")).unwrap();
    assert!(ensure_certificates(&c, &tls, "pvfsctl", false).unwrap().is_empty());
    assert_eq!(std::fs::read(tls.join("node1.crt")).unwrap(), before, "an existing certificate is kept");
}

#[test]
fn node_selection_keeps_the_named_nodes_and_refuses_unknown_names_all_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut all = cluster(dir.path());
    select_nodes(&mut all, &[]).unwrap();
    assert_eq!(all.nodes.len(), 2, "no --node: every node");

    let mut one = cluster(dir.path());
    select_nodes(&mut one, &["node2".into()]).unwrap();
    assert_eq!(one.nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["node2"]);
    // Only the selected node's certificate (and the coordinator's) is issued.
    let tls = dir.path().join("tls");
    pvfs_tls::init_ca(&tls).unwrap();
    let issued = ensure_certificates(&one, &tls, "pvfsctl", false).unwrap();
    assert_eq!(issued.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(), ["node2", "pvfsctl"]);

    let mut bad = cluster(dir.path());
    let err = select_nodes(&mut bad, &["node2".into(), "nodeX".into(), "node1 ".into()]).unwrap_err();
    assert_eq!(bad.nodes.len(), 2, "a refused selection leaves the cluster as it was");
    let message = err.to_string().replace(&dir.path().display().to_string(), "DIR");
    expect![[r#"--node: DIR/cluster.toml has no node named "nodeX", "node1 "; its nodes are: node1, node2 (nothing was done)"#]]
        .assert_eq(&message);
}

#[test]
fn a_node_holds_the_binary_unit_env_ca_and_its_own_certificate_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    let tls = dir.path().join("tls");
    pvfs_tls::init_ca(&tls).unwrap();
    let bin_path = dir.path().join("pvfs");
    std::fs::write(&bin_path, b"\x7fELF binary").unwrap();
    let binary = Wanted::file("binary", REMOTE_BINARY.into(), 0o755, &bin_path).unwrap();
    assert_eq!(binary.sha256.as_deref(), Some(sha256_hex(b"\x7fELF binary").as_str()));

    // Before issuing (--plan): the certificate and key are wanted, hash unknown.
    let files = wanted_files(&c.nodes[0], &tls, &binary, None).unwrap().route(false);
    let listed: Vec<String> = files
        .iter()
        .map(|f| {
            format!(
                "{} {:o} {} {}",
                f.what,
                f.mode,
                f.path,
                if f.sha256.is_some() { "known" } else { "to issue" }
            )
        })
        .collect();
    expect![[r#"
        [
            "binary 755 /usr/local/bin/pvfs-agent known",
            "unit 644 /etc/systemd/system/pvfs-agent.service known",
            "environment 644 /etc/pvfs/agent.env known",
            "CA certificate 644 /etc/pvfs/tls/ca.crt known",
            "certificate 644 /etc/pvfs/tls/node1.crt to issue",
            "key 600 /etc/pvfs/tls/node1.key to issue",
        ]
    "#]]
    .assert_debug_eq(&listed);

    ensure_certificates(&c, &tls, "pvfsctl", false).unwrap();
    pvfs_tls::revoke_named(&tls, "pvfsctl").unwrap();
    let files = wanted_files(&c.nodes[1], &tls, &binary, None).unwrap().route(true);
    assert!(files.iter().all(|f| f.sha256.is_some()));
    assert_eq!(files.last().unwrap().path, "/etc/pvfs/tls/revoked.txt");
    // Never another node's key, never the CA's.
    assert!(!files.iter().any(|f| f.path.contains("node1") || f.path.ends_with("ca.key")));
}

#[test]
fn with_a_package_a_node_with_dpkg_gets_it_instead_of_the_binary_and_unit() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    let tls = dir.path().join("tls");
    pvfs_tls::init_ca(&tls).unwrap();
    ensure_certificates(&c, &tls, "pvfsctl", false).unwrap();
    let binary = wanted(REMOTE_BINARY, 0o755, b"elf");
    let deb = wanted(REMOTE_DEB, 0o644, b"!<arch>\n");
    let files = wanted_files(&c.nodes[0], &tls, &binary, Some(&deb)).unwrap();
    let paths = |route: Vec<Wanted>| route.into_iter().map(|f| f.path).collect::<Vec<_>>();
    let with_dpkg = paths(files.route(true));
    assert_eq!(with_dpkg[..2], [REMOTE_DEB, REMOTE_ENV], "the package first, then our env file");
    assert!(!with_dpkg.iter().any(|p| p == REMOTE_BINARY || p == REMOTE_UNIT));
    let without = paths(files.route(false));
    assert_eq!(without[..3], [REMOTE_BINARY, REMOTE_UNIT, REMOTE_ENV]);
    assert_eq!(files.paths().len(), 7, "the probe reads both routes' files");

    // A fresh node with dpkg: package written and installed, then the rest.
    let route = files.route(true);
    let fresh = Probe { systemd: true, dpkg: true, ..Probe::default() };
    let shown: Vec<String> = diff(&route, &fresh).changes.iter().map(ToString::to_string).collect();
    assert_eq!(shown[0], "install file /var/cache/pvfs/pvfs.deb");
    assert!(shown.contains(&"dpkg -i /var/cache/pvfs/pvfs.deb".to_owned()), "{shown:?}");
    // The same package in place but removed from dpkg: installed again, nothing rewritten.
    let mut removed = Probe { active: true, enabled: true, ..fresh.clone() };
    for f in &route {
        removed.sha256.insert(f.path.clone(), f.sha256.clone().unwrap());
        removed.modes.insert(f.path.clone(), f.mode);
    }
    let plan = diff(&route, &removed);
    let shown: Vec<String> = plan.changes.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "dpkg -i /var/cache/pvfs/pvfs.deb",
            "systemctl daemon-reload",
            "systemctl restart pvfs-agent (its files changed)"
        ]
    );
    // And installed: nothing.
    assert!(diff(&route, &Probe { package_installed: true, ..removed }).changes.is_empty());
}

#[test]
fn the_env_file_names_the_node_and_listens_on_the_dialled_port() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    let env = env_file(&c.nodes[1]);
    assert!(env.starts_with("# /etc/pvfs/agent.env"), "{env}");
    expect![[r#"
        # Written by `pvfsctl bootstrap` for node node2.
        PVFS_AGENT_NAME=node2
        PVFS_AGENT_LISTEN=[::]:7171
    "#]]
    .assert_eq(env.rsplit_once("\n\n").unwrap().1);
    assert!(env_file(&c.nodes[0]).contains("\nPVFS_AGENT_LISTEN=0.0.0.0:7070\n"));
}

/// A real reading: the probe script run by the local shell over real files (sha256sum and stat
/// from coreutils), and a systemd that is absent here.
#[test]
fn the_probe_reads_hashes_and_modes_of_real_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.crt");
    let b = dir.path().join("it's.key");
    std::fs::write(&a, b"cert").unwrap();
    std::fs::write(&b, b"key").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&b, std::fs::Permissions::from_mode(0o600)).unwrap();
    let missing = dir.path().join("missing");
    let paths = [a.to_str().unwrap(), b.to_str().unwrap(), missing.to_str().unwrap()];
    let out =
        Command::new("sh").arg("-c").arg(probe_script(&paths, &[], "/nonexistent").text()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let probe = parse_probe(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(probe.sha256.get(paths[0]).unwrap(), &sha256_hex(b"cert"));
    assert_eq!(probe.sha256.get(paths[1]).unwrap(), &sha256_hex(b"key"));
    assert!(!probe.sha256.contains_key(paths[2]));
    assert_eq!(probe.modes.get(paths[1]), Some(&0o600));
    assert_eq!(probe.modes.get(paths[0]), Some(&0o644));
    // This machine's own answers to `uname -m` and getconf, read as the node's.
    let uname = Command::new("uname").arg("-m").output().unwrap();
    assert_eq!(probe.machine.as_deref(), Some(String::from_utf8_lossy(&uname.stdout).trim()));
    assert!(matches!(probe.libc, Some(platform::Libc::Glibc(_))), "{:?}", probe.libc);
}

/// The stamps, run by the local shell over real files: a big file is hashed once, then known by
/// its stamp while it stays as it was; rewritten (even to the same size), chmodded or replaced,
/// it is hashed again.
#[test]
fn a_stamp_stands_for_the_hash_only_while_the_file_is_unchanged() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("pvfs-agent");
    let deb = dir.path().join("pvfs.deb");
    std::fs::write(&bin, b"binary one").unwrap();
    std::fs::write(&deb, b"package").unwrap();
    let stamps = dir.path().join("cache/bootstrap.stamps");
    let (bin_s, deb_s, stamps_s) = (bin.to_str().unwrap(), deb.to_str().unwrap(), stamps.to_str().unwrap());
    let sh = |script: Script| {
        let out = Command::new("sh").arg("-c").arg(script.text()).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let probe = || parse_probe(&sh(probe_script(&[], &[bin_s, deb_s], stamps_s)));

    // Nothing stamped yet: neither hash is known, and reading the node wrote nothing.
    let first = probe();
    assert_eq!(first.unverified, [bin_s, deb_s]);
    assert!(first.sha256.is_empty() && !stamps.exists());
    // --plan's hashing tells the hash and writes nothing either.
    let mut planned = first.clone();
    read_hashes(&mut planned, &sh(hash_script(bin_s)));
    assert_eq!(planned.sha256[bin_s], sha256_hex(b"binary one"));
    assert_eq!(planned.unverified, [deb_s]);
    assert!(!stamps.exists());

    let mut stamped = first;
    for path in [bin_s, deb_s, bin_s] {
        read_hashes(&mut stamped, &sh(stamp_script(path, stamps_s)));
    }
    assert!(stamped.unverified.is_empty());
    assert_eq!(stamped.sha256[deb_s], sha256_hex(b"package"));
    let list = std::fs::read_to_string(&stamps).unwrap();
    assert_eq!(list.lines().count(), 2, "one line per file, however often stamped:\n{list}");
    let names: Vec<_> =
        std::fs::read_dir(stamps.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["bootstrap.stamps"], "no temporary left");

    // Stamped and unchanged: known without hashing.
    let again = probe();
    assert!(again.unverified.is_empty(), "{again:?}");
    assert_eq!(again.sha256[bin_s], sha256_hex(b"binary one"));
    assert_eq!(again.sha256[deb_s], sha256_hex(b"package"));

    // Rewritten in place to the same size: the change time moved.
    std::fs::write(&bin, b"binary two").unwrap();
    assert_eq!(probe().unverified, [bin_s]);
    read_hashes(&mut stamped, &sh(stamp_script(bin_s, stamps_s)));
    assert_eq!(stamped.sha256[bin_s], sha256_hex(b"binary two"));
    assert!(probe().unverified.is_empty());
    // A chmod, and a replacement by rename.
    std::fs::set_permissions(&deb, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(probe().unverified, [deb_s]);
    let other = dir.path().join("other");
    std::fs::write(&other, b"binary two").unwrap();
    std::fs::rename(&other, &bin).unwrap();
    assert_eq!(probe().unverified, [bin_s, deb_s]);
    // A missing file is neither known nor unverified: it is to be installed.
    std::fs::remove_file(&bin).unwrap();
    let gone = probe();
    assert!(!gone.sha256.contains_key(bin_s) && !gone.unverified.contains(&bin_s.to_owned()));
}

#[test]
fn the_stamp_script_reads_as_expected() {
    let text = stamp_script(REMOTE_BINARY, REMOTE_STAMPS).text().to_owned();
    let tmp = text.split("} > ").nth(1).unwrap().split(' ').next().unwrap().to_owned();
    assert!(tmp.starts_with("/var/cache/pvfs/bootstrap.stamps."), "{tmp}");
    expect![[r#"umask 022 && mkdir -p -- /var/cache/pvfs && id=$( stat -c '%d %i %s %z' -- /usr/local/bin/pvfs-agent ) && sum=$( sha256sum < /usr/local/bin/pvfs-agent ) && line=$( printf '%s %s %s' /usr/local/bin/pvfs-agent "${sum%% *}" "$id") && { awk -v p=/usr/local/bin/pvfs-agent -- '$1 != p' /var/cache/pvfs/bootstrap.stamps 2>/dev/null ; echo "$line" ; } > TMP && mv -f -- TMP /var/cache/pvfs/bootstrap.stamps && echo "$line" || { rm -f -- TMP ; exit 1; }"#]].assert_eq(&text.replace(&tmp, "TMP"));
}

/// The probe's output on a node with the agent installed and running, in the shape coreutils'
/// sha256sum (`HASH  PATH`) and stat (`-c '%a %n'`) and systemd's `systemctl is-active` /
/// `is-enabled` print it; the e2e scenario (`cargo xtask e2e --only bootstrap`) reads real
/// Debian 12 nodes through the same parser.
const RUNNING: &str = "\
9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  /etc/pvfs/tls/ca.crt
60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752  /etc/pvfs/tls/node1.key
@@pvfs-modes
644 /etc/pvfs/tls/ca.crt
644 /etc/pvfs/tls/node1.key
@@pvfs-systemd
@@pvfs-active
active
@@pvfs-enabled
enabled
@@pvfs-dpkg
@@pvfs-package
@@pvfs-machine
x86_64
@@pvfs-libc
glibc 2.17
";

#[test]
fn parse_probe_reads_each_section() {
    expect![[r#"
        Probe {
            sha256: {
                "/etc/pvfs/tls/ca.crt": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                "/etc/pvfs/tls/node1.key": "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752",
            },
            modes: {
                "/etc/pvfs/tls/ca.crt": 420,
                "/etc/pvfs/tls/node1.key": 420,
            },
            systemd: true,
            active: true,
            enabled: true,
            dpkg: true,
            package_installed: false,
            unverified: [],
            machine: Some(
                "x86_64",
            ),
            libc: Some(
                Glibc(
                    GlibcVersion(
                        2,
                        17,
                        0,
                    ),
                ),
            ),
        }
    "#]]
    .assert_debug_eq(&parse_probe(RUNNING));
    // A fresh node: nothing installed, the unit unknown to systemd (is-active prints
    // "inactive", is-enabled only an error on stderr, which the probe discards).
    let fresh = parse_probe("@@pvfs-modes\n@@pvfs-systemd\n@@pvfs-active\ninactive\n@@pvfs-enabled\n");
    assert_eq!(fresh, Probe { systemd: true, ..Probe::default() });
}

#[test]
fn diff_changes_only_what_differs_and_restarts_only_then() {
    let files =
        [wanted("/etc/pvfs/tls/ca.crt", 0o644, b"test"), wanted("/etc/pvfs/tls/node1.key", 0o600, b"key")];
    let same = Probe {
        sha256: files.iter().map(|f| (f.path.clone(), f.sha256.clone().unwrap())).collect(),
        modes: files.iter().map(|f| (f.path.clone(), f.mode)).collect(),
        systemd: true,
        active: true,
        enabled: true,
        dpkg: false,
        package_installed: false,
        unverified: vec![],
        ..Probe::default()
    };
    // All in place and running: nothing at all, every item ok.
    let plan = diff(&files, &same);
    assert_eq!(plan, NodePlan { changes: vec![], unchanged: 3 });
    assert_eq!(plan.changed(), 0);

    // Only stopped: started, no file written.
    let stopped = diff(&files, &Probe { active: false, ..same.clone() });
    assert_eq!(stopped.changes, [Change::Restart { because: "it was not running" }]);
    assert_eq!((stopped.unchanged, stopped.changed()), (2, 1));

    // The key's mode drifted and the CA differs: chmod, one write, a restart.
    let mut drifted = same.clone();
    drifted.modes.insert("/etc/pvfs/tls/node1.key".into(), 0o644);
    drifted.sha256.insert("/etc/pvfs/tls/ca.crt".into(), "0".repeat(64));
    let plan = diff(&files, &drifted);
    let shown: Vec<String> = plan.changes.iter().map(ToString::to_string).collect();
    expect![[r#"
        [
            "replace file /etc/pvfs/tls/ca.crt (content differs)",
            "chmod 600 file /etc/pvfs/tls/node1.key (was 644)",
            "systemctl restart pvfs-agent (its files changed)",
        ]
    "#]]
    .assert_debug_eq(&shown);
    assert_eq!((plan.unchanged, plan.changed()), (0, 3));

    // A fresh node: everything installed, the unit reloaded, enabled and started.
    let unit = Wanted::bytes("unit", REMOTE_UNIT.into(), 0o644, UNIT_TEXT.as_bytes().to_vec());
    let plan = diff(&[unit], &Probe { systemd: true, ..Probe::default() });
    let shown: Vec<String> = plan.changes.iter().map(ToString::to_string).collect();
    expect![[r#"
        [
            "install unit /etc/systemd/system/pvfs-agent.service",
            "systemctl daemon-reload",
            "systemctl enable pvfs-agent",
            "systemctl restart pvfs-agent (its files changed)",
        ]
    "#]]
    .assert_debug_eq(&shown);

    // A certificate still to be issued (--plan) is a change even if a file is there.
    let to_issue = Wanted { sha256: None, source: None, ..files[0].clone() };
    assert!(matches!(diff(&[to_issue], &same).changes[0], Change::Write { missing: false, .. }));
}

/// The write script, run by the local shell as sshd would run it: the content arrives whole,
/// with its mode, through a temporary that is gone afterwards, in a directory made private.
#[test]
fn the_write_script_installs_atomically_with_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("etc/pvfs/tls/node1.key");
    let path = target.to_str().unwrap();
    let script = write_script(path, 0o600);
    let run = |input: &[u8]| {
        use std::io::Write;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script.text())
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run(b"-----BEGIN PRIVATE KEY-----\n");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read(&target).unwrap(), b"-----BEGIN PRIVATE KEY-----\n");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777, 0o600);
    assert_eq!(std::fs::metadata(target.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
    // Replaced whole, and only the target is left in the directory.
    assert!(run(b"new").status.success());
    assert_eq!(std::fs::read(&target).unwrap(), b"new");
    let names: Vec<_> =
        std::fs::read_dir(target.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["node1.key"]);

    // A failure (the target is a directory) leaves the old state and no temporary.
    std::fs::create_dir_all(dir.path().join("d/x/sub")).unwrap();
    let blocked = write_script(dir.path().join("d/x").to_str().unwrap(), 0o644);
    let out = Command::new("sh").arg("-c").arg(blocked.text()).stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success());
    let names: Vec<_> =
        std::fs::read_dir(dir.path().join("d")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["x"]);
}

#[test]
fn the_write_script_reads_as_expected() {
    let text = write_script("/etc/pvfs/tls/node1.key", 0o600).text().to_owned();
    let tmp = text.split("of=").nth(1).unwrap().split(' ').next().unwrap().to_owned();
    assert!(tmp.starts_with("/etc/pvfs/tls/.node1.key.pvfs-bootstrap."), "{tmp}");
    expect![[r#"umask 077 && mkdir -p -- /etc/pvfs/tls && dd of=TMP bs=1M conv=fsync status=none && chmod 600 -- TMP && mv -fT -- TMP /etc/pvfs/tls/node1.key || { rm -f -- TMP ; exit 1; }"#]]
        .assert_eq(&text.replace(&tmp, "TMP"));
}

#[test]
fn a_failure_names_the_command_its_status_and_stderr() {
    let failed = NodeFailure {
        node: "node2".into(),
        message: "node node2: starting the service failed".into(),
        command: Some(
            "ssh -o BatchMode=yes -o ConnectTimeout=10 -- 10.0.0.2 'systemctl restart pvfs-agent'".into(),
        ),
        code: Some(1),
        stderr_tail:
            "Job for pvfs-agent.service failed.\nSee \"journalctl -xeu pvfs-agent.service\" for details."
                .into(),
        host_key: false,
        journal: Box::default(),
    };
    expect![[r#"
        node node2: starting the service failed
          command: ssh -o BatchMode=yes -o ConnectTimeout=10 -- 10.0.0.2 'systemctl restart pvfs-agent'
          exit status: 1
          stderr: Job for pvfs-agent.service failed.
                  See "journalctl -xeu pvfs-agent.service" for details."#]]
    .assert_eq(&failed.to_string());
    assert_eq!(tail(&(1..=10).map(|i| format!("l{i}\n")).collect::<String>()), "l5\nl6\nl7\nl8\nl9\nl10");
}

/// A stand-in for `ssh` that answers by what the remote script runs: the probe with `probe`,
/// `systemctl restart` with systemd's refusal (exit 1), `journalctl` with `journal`; it logs
/// every script it was given, one per line.
struct FakeSsh {
    dir: tempfile::TempDir,
}

impl FakeSsh {
    fn new(probe: &str, journal: &str) -> FakeSsh {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("probe"), probe).unwrap();
        std::fs::write(dir.path().join("journal"), journal).unwrap();
        // The remote script is the last argument. systemd 219's (EL7) words for a unit whose
        // ExecStartPre failed.
        let script = format!(
            "#!/bin/sh\nfor last; do :; done\nprintf '%s\\n' \"$last\" >> '{dir}/log'\n\
             case \"$last\" in\n\
             *journalctl*) cat '{dir}/journal' ;;\n\
             *'systemctl restart'*) echo 'Job for pvfs-agent.service failed because the control process exited with error code. See \"systemctl status pvfs-agent.service\" and \"journalctl -xe\" for details.' >&2; exit 1 ;;\n\
             *' dd of='*) cat > /dev/null; if [ -e '{dir}/deny' ]; then cat '{dir}/deny' >&2; exit 1; fi ;;\n\
             *) cat '{dir}/probe' ;;\n\
             esac\n",
            dir = dir.path().display()
        );
        let program = dir.path().join("ssh");
        std::fs::write(&program, script).unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeSsh { dir }
    }

    fn options(&self, needs: platform::Needs) -> Options {
        Options {
            ssh: Ssh { program: self.dir.path().join("ssh"), ..Ssh::default() },
            plan: false,
            parallel: 1,
            wait: Duration::from_secs(1),
            command_timeout: Duration::from_secs(20),
            needs,
            stop: Default::default(),
        }
    }

    /// The scripts run, in order.
    fn log(&self) -> Vec<String> {
        let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
        log.lines().map(str::to_owned).collect()
    }
}

fn el7_needs() -> platform::Needs {
    platform::Needs { machine: Some("x86_64"), glibc: Some(platform::GlibcVersion(2, 17, 0)) }
}

/// A node whose files are all in place (one CA certificate) and whose unit is enabled but not
/// running, answering `uname -m` and getconf with `machine` and `libc`.
fn probe_answer(machine: &str, libc: &str) -> String {
    format!(
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  /etc/pvfs/tls/ca.crt\n\
         @@pvfs-modes\n644 /etc/pvfs/tls/ca.crt\n@@pvfs-systemd\n@@pvfs-active\nfailed\n\
         @@pvfs-enabled\nenabled\n@@pvfs-package\n@@pvfs-machine\n{machine}\n@@pvfs-libc\n{libc}\n"
    )
}

/// Stopped before the run (Ctrl-C during set-up): no node starts, nothing is run on it, and
/// each says so.
#[tokio::test]
async fn a_stopped_bootstrap_starts_no_node() {
    let ssh = FakeSsh::new(&probe_answer("x86_64", "glibc 2.17"), "");
    let dir = tempfile::tempdir().unwrap();
    let node = cluster(dir.path()).nodes[0].clone();
    let files = NodeFiles { binary: Vec::new(), package: None, common: vec![] };
    let options = ssh.options(el7_needs());
    options.stop.cancel();
    let (tx, _rx) = mpsc::unbounded_channel();
    let recap = run(vec![(node, files)], None, options, tx).await;
    assert_eq!(recap.failures.len(), 1, "{recap:?}");
    assert_eq!(recap.failures[0].message, "interrupted before it started: nothing was changed on it");
    assert!(ssh.log().is_empty(), "ssh ran: {:?}", ssh.log());
}

async fn run_one(ssh: &FakeSsh, needs: platform::Needs) -> Recap<NodeFailure> {
    let dir = tempfile::tempdir().unwrap();
    let node = cluster(dir.path()).nodes[0].clone();
    let files = NodeFiles {
        binary: Vec::new(),
        package: None,
        common: vec![wanted("/etc/pvfs/tls/ca.crt", 0o644, b"test")],
    };
    let (tx, _rx) = mpsc::unbounded_channel();
    run(vec![(node, files)], None, ssh.options(needs), tx).await
}

#[tokio::test]
async fn a_node_that_cannot_run_the_binary_is_refused_after_the_probe_alone() {
    // CentOS 6 (glibc 2.12, `docker run centos:6 ldd --version` in wazuh/wazuh-packages issue
    // 2154): older than what the binary needs.
    let ssh = FakeSsh::new(&probe_answer("x86_64", "ldd (GNU libc) 2.12"), "");
    let recap = run_one(&ssh, el7_needs()).await;
    assert_eq!(recap.failures.len(), 1, "{recap:?}");
    expect![[r#"node node1: it has glibc 2.12, and the binary to install needs glibc 2.17 or newer; nothing was installed (the binaries `cargo xtask dist` builds need 2.17: EL7 and later)"#]]
        .assert_eq(&recap.failures[0].to_string());
    assert_eq!(ssh.log().len(), 1, "only the probe ran: {:?}", ssh.log());
    assert!(ssh.log()[0].contains("getconf GNU_LIBC_VERSION") && ssh.log()[0].contains("uname -m"));

    // An ARM node, whatever its glibc.
    let ssh = FakeSsh::new(&probe_answer("aarch64", "glibc 2.28"), "");
    let recap = run_one(&ssh, el7_needs()).await;
    assert!(recap.failures[0].message.contains("it is aarch64"), "{recap:?}");
    assert_eq!(ssh.log().len(), 1);
}

#[tokio::test]
async fn a_service_that_fails_to_start_shows_the_units_last_journal_lines() {
    // journalctl's short format, for an agent built against a newer glibc than the node's
    // (the loader's words; systemd 219's, EL7's, around them): what this exists to show. The
    // bootstrap e2e scenario reads a real journal (Debian 12's systemd, a refused policy file).
    let journal = "\
-- Logs begin at Tue 2026-11-24 09:12:01 UTC, end at Tue 2026-11-24 10:02:13 UTC. --
Nov 24 10:02:13 node1 systemd[1]: Starting pvfs node agent...
Nov 24 10:02:13 node1 pvfs-agent[4242]: /usr/local/bin/pvfs-agent: /lib64/libc.so.6: version `GLIBC_2.34' not found (required by /usr/local/bin/pvfs-agent)
Nov 24 10:02:13 node1 systemd[1]: pvfs-agent.service: control process exited, code=exited status=1
Nov 24 10:02:13 node1 systemd[1]: Failed to start pvfs node agent.
";
    let ssh = FakeSsh::new(&probe_answer("x86_64", "glibc 2.17"), journal);
    let recap = run_one(&ssh, el7_needs()).await;
    assert_eq!(recap.failures.len(), 1, "{recap:?}");
    let failed = &recap.failures[0];
    assert_eq!(failed.journal.len(), 5, "{failed:?}");
    assert!(failed.journal[2].contains("version `GLIBC_2.34' not found"), "{failed:?}");
    let log = ssh.log();
    assert!(log[1].contains("systemctl restart pvfs-agent"), "{log:?}");
    assert_eq!(log[2], "journalctl -u pvfs-agent -n 20 --no-pager");
    let shown = failed.to_string();
    let fake = ssh.dir.path().join("ssh").display().to_string();
    expect![[r#"
        node node1: starting the service failed
          command: SSH -o BatchMode=yes -o ConnectTimeout=10 -- 10.213.251.11 'systemctl restart pvfs-agent'
          exit status: 1
          stderr: Job for pvfs-agent.service failed because the control process exited with error code. See "systemctl status pvfs-agent.service" and "journalctl -xe" for details.
          journal (journalctl -u pvfs-agent -n 20 --no-pager):
            -- Logs begin at Tue 2026-11-24 09:12:01 UTC, end at Tue 2026-11-24 10:02:13 UTC. --
            Nov 24 10:02:13 node1 systemd[1]: Starting pvfs node agent...
            Nov 24 10:02:13 node1 pvfs-agent[4242]: /usr/local/bin/pvfs-agent: /lib64/libc.so.6: version `GLIBC_2.34' not found (required by /usr/local/bin/pvfs-agent)
            Nov 24 10:02:13 node1 systemd[1]: pvfs-agent.service: control process exited, code=exited status=1
            Nov 24 10:02:13 node1 systemd[1]: Failed to start pvfs node agent."#]]
    .assert_eq(&shown.replace(&fake, "SSH"));
}

/// A node whose SSH login may not write as root: the write's own words (coreutils' mkdir, as a
/// non-root login gets them under /etc), and what to do.
#[tokio::test]
async fn a_login_that_may_not_write_is_told_to_pass_sudo() {
    // Nothing in place: the CA certificate is written first.
    let probe = "@@pvfs-modes\n@@pvfs-systemd\n@@pvfs-active\nfailed\n@@pvfs-enabled\nenabled\n@@pvfs-package\n\
                 @@pvfs-machine\nx86_64\n@@pvfs-libc\nglibc 2.36\n";
    let ssh = FakeSsh::new(probe, "");
    std::fs::write(
        ssh.dir.path().join("deny"),
        "mkdir: cannot create directory '/etc/pvfs': Permission denied\n",
    )
    .unwrap();
    let recap = run_one(&ssh, el7_needs()).await;
    assert_eq!(recap.failures.len(), 1, "{recap:?}");
    expect![[r#"node node1: installing a file failed: the SSH login may not write there; if it is not root, pass --sudo (its commands then run through `sudo -n`), or --ssh-user root"#]]
        .assert_eq(&recap.failures[0].message);
    assert!(recap.failures[0].stderr_tail.contains("Permission denied"));
}

#[test]
fn sudo_that_wants_a_password_and_a_login_without_sudo_get_their_hints() {
    let plain = Ssh { user: Some("azureuser".into()), ..Ssh::default() };
    let sudo = Ssh { sudo: true, ..plain.clone() };
    // coreutils' dd and mkdir as a non-root login.
    for stderr in [
        "dd: failed to open '/etc/pvfs/tls/.ca.crt.pvfs-bootstrap.1a2b3c4d': Permission denied\n",
        "mkdir: cannot create directory '/etc/pvfs': Permission denied\n",
    ] {
        let hint = hint(stderr, &plain, "n1").unwrap();
        assert!(hint.starts_with("login azureuser may not write there") && hint.contains("--sudo"), "{hint}");
        // With --sudo it is not the login's rights any more.
        assert_eq!(hint_for(stderr, &sudo), None);
    }
    // sudo 1.9 (Debian 12) with -n and no NOPASSWD rule; older sudo without a terminal.
    for stderr in [
        "sudo: a password is required\n",
        "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper\n",
    ] {
        expect![[r#"passwordless sudo is needed for login azureuser on n1 (a NOPASSWD rule in its sudoers, e.g. `USER ALL=(root) NOPASSWD: ALL` in /etc/sudoers.d/pvfs), since bootstrap never types a password"#]]
            .assert_eq(&hint(stderr, &sudo, "n1").unwrap());
    }
    assert_eq!(hint("dd: error writing '/etc/pvfs/x': No space left on device\n", &plain, "n1"), None);
}

fn hint_for(stderr: &str, ssh: &Ssh) -> Option<String> {
    hint(stderr, ssh, "n1")
}

#[tokio::test]
async fn a_node_without_systemd_is_refused_after_the_probe_with_nothing_written() {
    // No @@pvfs-systemd marker; the package's binary unstamped (which a run would hash and
    // stamp, a write, were the node not refused first).
    let probe = "@@pvfs-modes\n755 /usr/local/bin/pvfs-agent\n@@pvfs-stamped\n/usr/local/bin/pvfs-agent 2049 12 5 2026\n\
                 @@pvfs-stamps\n@@pvfs-active\n@@pvfs-enabled\n@@pvfs-package\n@@pvfs-machine\nx86_64\n@@pvfs-libc\nglibc 2.36\n";
    let ssh = FakeSsh::new(probe, "");
    let recap = run_one(&ssh, el7_needs()).await;
    expect![[r#"node node1: systemd is not running there (/run/systemd/system is missing), and bootstrap installs the agent as a systemd service; nothing was installed. Boot the node with systemd, or leave it out with --node"#]]
        .assert_eq(&recap.failures[0].to_string());
    assert_eq!(ssh.log().len(), 1, "only the probe ran: {:?}", ssh.log());
}

#[test]
fn a_long_command_is_cut_unless_asked_for_whole() {
    let script =
        probe_script(&["/etc/pvfs/agent.env", "/etc/pvfs/tls/ca.crt"], &[REMOTE_BINARY], REMOTE_STAMPS);
    let command = Ssh::default().display(0, "10.0.0.2", &script);
    assert!(command.len() > 600, "{}", command.len());
    let failed = NodeFailure {
        node: "n2".into(),
        message: "node n2: reading the node failed".into(),
        command: Some(command.as_str().into()),
        code: Some(1),
        stderr_tail: "bash: line 1: sha256sum: command not found".into(),
        host_key: false,
        journal: Box::default(),
    };
    expect![[r#"
        node n2: reading the node failed
          command: ssh … 10.0.0.2 'sha256sum -- /etc/pvfs/agent.env /etc/pvfs/tls/ca.crt 2>/dev/null ; echo @@pvfs-modes ; stat -c '\''%a %… (-v shows the whole command)
          exit status: 1
          stderr: bash: line 1: sha256sum: command not found"#]]
    .assert_eq(&failed.render(false));
    assert!(failed.render(true).contains(&command));
    assert_eq!(failed.render(true), failed.to_string());
}

/// A node of the tarball route gets the package, and back: each route removes the other's
/// agent first, so that the unit systemd starts is the one just installed.
#[test]
fn switching_routes_removes_the_other_routes_agent() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    let tls = dir.path().join("tls");
    pvfs_tls::init_ca(&tls).unwrap();
    ensure_certificates(&c, &tls, "pvfsctl", false).unwrap();
    let binary = wanted(REMOTE_BINARY, 0o755, b"elf");
    let deb = wanted(REMOTE_DEB, 0o644, b"!<arch>\n");
    let files = wanted_files(&c.nodes[0], &tls, &binary, Some(&deb)).unwrap();
    // The tarball route, done and running.
    let mut tarball = Probe { systemd: true, active: true, enabled: true, dpkg: true, ..Probe::default() };
    for f in files.route(false) {
        tarball.sha256.insert(f.path.clone(), f.sha256.clone().unwrap());
        tarball.modes.insert(f.path.clone(), f.mode);
    }
    assert!(diff(&files.route(false), &tarball).changes.is_empty());
    let shown: Vec<String> =
        diff(&files.route(true), &tarball).changes.iter().map(ToString::to_string).collect();
    expect![[r#"
        [
            "remove /usr/local/bin/pvfs-agent /etc/systemd/system/pvfs-agent.service (the tarball route's; the package replaces them)",
            "install file /var/cache/pvfs/pvfs.deb",
            "dpkg -i /var/cache/pvfs/pvfs.deb",
            "systemctl daemon-reload",
            "systemctl enable pvfs-agent",
            "systemctl restart pvfs-agent (its files changed)",
        ]
    "#]]
    .assert_debug_eq(&shown);

    // The package's route, done: the tarball's files gone, the package installed.
    let mut packaged = Probe { package_installed: true, ..tarball.clone() };
    for path in [REMOTE_BINARY, REMOTE_UNIT] {
        packaged.sha256.remove(path);
        packaged.modes.remove(path);
    }
    packaged.sha256.insert(REMOTE_DEB.into(), deb.sha256.clone().unwrap());
    packaged.modes.insert(REMOTE_DEB.into(), 0o644);
    assert!(diff(&files.route(true), &packaged).changes.is_empty(), "a second --deb run changes nothing");
    // And back to the binary: the package removed first, the unit enabled again (its links
    // were the package's).
    let shown: Vec<String> =
        diff(&files.route(false), &packaged).changes.iter().map(ToString::to_string).collect();
    expect![[r#"
        [
            "dpkg -r pvfs (the package's agent; the binary replaces it, /etc/pvfs is kept)",
            "install file /usr/local/bin/pvfs-agent",
            "install unit /etc/systemd/system/pvfs-agent.service",
            "systemctl daemon-reload",
            "systemctl enable pvfs-agent",
            "systemctl restart pvfs-agent (its files changed)",
        ]
    "#]]
    .assert_debug_eq(&shown);
    expect![[r#"systemctl disable --quiet pvfs-agent 2>/dev/null ; rm -f -- /usr/local/bin/pvfs-agent /etc/systemd/system/pvfs-agent.service && systemctl daemon-reload"#]]
        .assert_eq(remove_files_script(&[REMOTE_BINARY.into(), REMOTE_UNIT.into()]).text());
    expect![[r#"systemctl disable --quiet pvfs-agent 2>/dev/null ; dpkg -r pvfs && rm -f -- /var/cache/pvfs/pvfs.deb"#]]
        .assert_eq(remove_package_script().text());
}

/// The package's binary and version read on the node: the script run by the local shell over a
/// real file (no dpkg-query here: the version is then unknown), and dpkg-query's line parsed.
#[test]
fn the_packages_binary_is_read_by_its_hash_and_version() {
    let (sum, version) = parse_package_binary(
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  /usr/bin/pvfs-agent\nversion 0.1.0\n",
    );
    assert_eq!(sum.as_deref(), Some("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"));
    assert_eq!(version.as_deref(), Some("0.1.0"));
    // Not installed: sha256sum prints nothing on stdout, dpkg-query an empty version.
    assert_eq!(parse_package_binary("version \n"), (None, None));
    let out = Command::new("sh").arg("-c").arg(package_binary_script().text()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn the_running_agent_must_be_the_installed_build() {
    let sum = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let tarball =
        Installed { executable: REMOTE_BINARY.into(), sha256: Some(sum.into()), package_version: None };
    let running = Running {
        version: "0.1.0".into(),
        build: sum.into(),
        executable: REMOTE_BINARY.into(),
        elapsed: Duration::from_millis(800),
    };
    assert_eq!(mismatch("n1", &tarball, &running), None);
    // The package installed, the tarball's agent still answering (the old bug): its unit in
    // /etc overrode the package's.
    let package = Installed {
        executable: PACKAGE_BINARY.into(),
        sha256: Some("60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752".into()),
        package_version: Some("0.1.0".into()),
    };
    let old = Running { executable: "/usr/local/bin/pvfs-agent (deleted)".into(), ..running.clone() };
    expect![[r#"node n1: the agent answering is not the one installed: it runs pvfs-agent 0.1.0 from /usr/local/bin/pvfs-agent (deleted) (build 9f86d081884c…), and what was installed is /usr/bin/pvfs-agent (build 60303ae22b99…, package pvfs 0.1.0). Another pvfs-agent serves its port: see `systemctl cat pvfs-agent` (a drop-in or another unit) and `ss -ltnp` on the node, stop it, and run bootstrap again"#]]
        .assert_eq(&mismatch("n1", &package, &old).unwrap());
    // The right build with another version than the package says: refused too.
    let same = Running { build: package.sha256.clone().unwrap(), version: "0.0.9".into(), ..running.clone() };
    assert!(mismatch("n1", &package, &same).is_some());
    let same = Running { version: "0.1.0".into(), ..same };
    assert_eq!(mismatch("n1", &package, &same), None);
    // A Debian revision after the crate's version, and a prerelease version, are the same.
    let revised = Installed { package_version: Some("0.1.0-1".into()), ..package.clone() };
    assert_eq!(mismatch("n1", &revised, &same), None);
    let rc = Installed { package_version: Some("0.2.0-rc.1".into()), ..package.clone() };
    assert_eq!(mismatch("n1", &rc, &Running { version: "0.2.0-rc.1".into(), ..same.clone() }), None);
    // An agent too old to say which build it is.
    let silent = Running { build: String::new(), ..running };
    assert!(mismatch("n1", &tarball, &silent).unwrap().contains("too old to report its build"));
}
