//! `up` with reboots allowed: a node that must boot into its installed Lustre kernel is
//! rebooted into it by its agent, `up` waits for it to come back running that kernel, and its
//! units go on — or, when the node comes back on another kernel, does not come back, or still
//! must boot into yet another kernel, `up` stops and says so; a node already running the kernel
//! is not rebooted at all.
//!
//! A real agent process over real mutual TLS, on a stand-in root (`--root`): its
//! `/proc/sys/kernel` answers with a kernel release and boot id of the test's own, the rest is
//! this machine's. `rpm`, `grubby` and `systemctl` are stand-ins on its PATH. Once the stand-in
//! `systemctl reboot` has run, the test kills the agent, "boots" the default kernel (writes its
//! release and a new boot id into the root) and starts the agent again on the same port, as
//! the node would.

use crate::util::{AgentProcess, TestDir, cluster_file};
use pvfs_coord::converge::{Options, UpEvent, UpRecap, converge};
use pvfs_coord::reboot::{Progress, Wait};
use pvfs_coord::{ClientSecurity, Dialer};
use pvfs_plan::{Plan, Unit};
use pvfs_steps::Step;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const STOCK: &str = "3.10.0-514.el7.x86_64";
const LUSTRE: &str = "3.10.0-514.el7_lustre.x86_64";
/// A later Lustre kernel, also installed: a unit that pins it after `LUSTRE` must boot twice.
const LATER: &str = "3.10.0-957.el7_lustre.x86_64";

/// How the node comes back after its stand-in `systemctl reboot`.
#[derive(Clone, Copy)]
enum Back {
    /// On its boot loader's default kernel, as a node does.
    Default,
    /// On this kernel whatever the default says (a boot loader that did not take it).
    On(&'static str),
    /// Never.
    Never,
}

/// A node's root: this machine's /proc, /sys and /dev, except the kernel release and boot id.
fn stand_in_root(dir: &TestDir, running: &str) -> PathBuf {
    let root = dir.path().join("root");
    // /proc, /proc/sys and /proc/sys/kernel are directories of links to the real entries, so
    // that only the two files the test owns differ.
    let mirror = |real: &str, skip: &[&str]| {
        let at = root.join(real.trim_start_matches('/'));
        std::fs::create_dir_all(&at).unwrap();
        for entry in std::fs::read_dir(real).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if !skip.contains(&name.as_str()) && !name.starts_with(|c: char| c.is_ascii_digit()) {
                std::os::unix::fs::symlink(Path::new(real).join(&name), at.join(&name)).unwrap();
            }
        }
    };
    mirror("/proc", &["sys"]);
    mirror("/proc/sys", &["kernel"]);
    mirror("/proc/sys/kernel", &["osrelease", "random"]);
    std::fs::create_dir_all(root.join("proc/sys/kernel/random")).unwrap();
    std::fs::write(root.join("proc/sys/kernel/osrelease"), format!("{running}\n")).unwrap();
    std::fs::write(root.join("proc/sys/kernel/random/boot_id"), "9f1c5a52-0e0b-4c1e-8d2f-1b7e3f0a6c01\n")
        .unwrap();
    for tree in ["sys", "dev"] {
        std::os::unix::fs::symlink(format!("/{tree}"), root.join(tree)).unwrap();
    }
    std::fs::create_dir_all(root.join("boot")).unwrap();
    std::fs::write(root.join(format!("boot/vmlinuz-{LUSTRE}")), "").unwrap();
    root
}

/// `rpm` lists both kernels (oldest first, as `rpm -q --qf '%{EVR}.%{ARCH}\n' kernel` does);
/// `grubby` keeps its default in the root; `systemctl reboot` leaves a mark for the test.
fn stand_in_tools(dir: &TestDir, root: &Path) -> PathBuf {
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let root = root.display();
    let scripts = [
        ("rpm", format!("echo {STOCK}\necho {LUSTRE}\necho {LATER}\n")),
        (
            "grubby",
            format!(
                "case \"$1\" in\n  --set-default=*) echo \"${{1#--set-default=}}\" > {root}/grub-default ;;\n  \
                 --default-kernel) cat {root}/grub-default ;;\n  *) exit 64 ;;\nesac\n"
            ),
        ),
        ("systemctl", format!("[ \"$1\" = reboot ] || exit 64\ntouch {root}/rebooted\n")),
    ];
    for (name, body) in scripts {
        let path = bin.join(name);
        std::fs::write(
            &path,
            format!("#!/bin/sh\n# Stand-in for {name}, written by pvfs's reboot test.\n{body}"),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

/// A step pinning the kernel `release` (without its architecture, as a cluster file pins it).
fn pin(release: &str) -> Step {
    Step::Packages(pvfs_steps::Packages {
        manager: pvfs_steps::PackageManager::Yum,
        apt: vec![],
        rpm: vec![pvfs_steps::Package {
            name: "kernel".into(),
            version: Some(release.trim_end_matches(".x86_64").into()),
        }],
        repos: vec![],
    })
}

/// Two units on one node; the first pins the Lustre kernel (installed, not running).
fn plan() -> Plan {
    plan_of(vec![pin(LUSTRE)])
}

/// Two units on one node, each of `steps`.
fn plan_of(steps: Vec<Step>) -> Plan {
    let unit =
        |id, after| Unit { id, node: "n1".into(), label: format!("u{id}"), steps: steps.clone(), after };
    Plan { units: vec![unit(0, vec![]), unit(1, vec![0])] }
}

/// The node comes up, on a new boot, on `on` or else its boot loader's default kernel.
fn boot(root: &Path, on: Option<&str>) {
    let default = std::fs::read_to_string(root.join("grub-default")).unwrap();
    let release = default.trim().strip_prefix("/boot/vmlinuz-").unwrap().to_owned();
    let release = on.map_or(release, str::to_owned);
    std::fs::write(root.join("proc/sys/kernel/osrelease"), format!("{release}\n")).unwrap();
    std::fs::write(root.join("proc/sys/kernel/random/boot_id"), "2d7be0f4-5a3c-4e8b-b9a1-70c6d5e4f3a2\n")
        .unwrap();
}

/// Runs `up` on the node with `options`; while it runs, once the stand-in systemctl has run,
/// the node goes down, and comes `back` and starts its agent again. The recap and the events.
fn up(dir: &TestDir, options: Options, back: Back) -> (UpRecap, Vec<UpEvent>) {
    up_with(dir, Run { options, back, plan: plan(), reboot_on_node: false })
}

/// What one `up` of the test runs.
struct Run {
    options: Options,
    back: Back,
    plan: Plan,
    /// `reboot = true` on the node in the cluster file.
    reboot_on_node: bool,
}

fn up_with(dir: &TestDir, run: Run) -> (UpRecap, Vec<UpEvent>) {
    let Run { options, back, plan, reboot_on_node } = run;
    let root = stand_in_root(dir, STOCK);
    let bin = stand_in_tools(dir, &root);
    let root_flag = ["--root", root.to_str().unwrap()];
    let agent = AgentProcess::start_on(dir, "n1", "127.0.0.1:0", Some(&bin), &root_flag);
    let port = agent.port;
    let file = cluster_file(dir, &[("n1", format!("127.0.0.1:{port}"))]);
    if reboot_on_node {
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text + "reboot = true\n").unwrap();
    }
    let cluster = pvfs_config::load(&file).unwrap();
    assert_eq!(cluster.nodes[0].reboot, reboot_on_node);
    let material = pvfs_tls::load(&dir.path().join("tls"), "pvfsctl").unwrap();
    let dialer = Dialer::new(ClientSecurity::MutualTls(material), Duration::from_secs(5));
    let marker = root.join("rebooted");
    let over = std::sync::atomic::AtomicBool::new(false);
    // The node's systemd: once the reboot has "happened", the old agent is gone and a new one
    // starts on the same port.
    std::thread::scope(|scope| {
        let node = scope.spawn(|| {
            let mut agent = agent;
            let deadline = Instant::now() + Duration::from_secs(60);
            while !marker.exists() && !over.load(Ordering::Relaxed) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            if !marker.exists() {
                return Some(agent);
            }
            drop(agent);
            let on = match back {
                Back::Never => return None,
                Back::Default => None,
                Back::On(release) => Some(release),
            };
            boot(&root, on);
            agent = AgentProcess::start_on(dir, "n1", &format!("127.0.0.1:{port}"), Some(&bin), &root_flag);
            Some(agent)
        });
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let result = rt.block_on(async {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let recap = converge(&cluster, &plan, &dialer, &options, tx).await;
            let mut events = Vec::new();
            while let Ok(event) = rx.try_recv() {
                events.push(event);
            }
            (recap, events)
        });
        // Ends the "systemd" thread's wait if no reboot came.
        over.store(true, Ordering::Relaxed);
        drop(node.join().unwrap());
        result
    })
}

fn reboots(events: &[UpEvent]) -> Vec<&Progress> {
    events
        .iter()
        .filter_map(|e| match e {
            UpEvent::Reboot { node, kernel, progress } if node == "n1" && kernel == LUSTRE => Some(progress),
            _ => None,
        })
        .collect()
}

fn fast(timeout: Duration) -> Wait {
    Wait { timeout, poll: Duration::from_millis(200) }
}

#[test]
fn a_node_allowed_to_reboot_boots_its_kernel_and_its_units_go_on() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let options =
        Options { allow_reboot: true, reboot_wait: fast(Duration::from_secs(60)), ..Options::default() };
    let (recap, events) = up(&dir, options, Back::Default);

    assert!(recap.converged(), "{:?} {:?}", recap.run.failures, recap.boots);
    assert_eq!(recap.rebooted.len(), 1, "{:?}", recap.rebooted);
    let rebooted = &recap.rebooted[0];
    assert_eq!(
        (rebooted.node.as_str(), rebooted.kernel.as_str(), rebooted.running.as_str()),
        ("n1", LUSTRE, STOCK)
    );
    // The boot default was set to the kernel's image before the reboot.
    let default = std::fs::read_to_string(dir.path().join("root/grub-default")).unwrap();
    assert_eq!(default.trim(), format!("/boot/vmlinuz-{LUSTRE}"));
    let progress = reboots(&events);
    assert_eq!(progress.first(), Some(&&Progress::Rebooting), "{progress:?}");
    assert!(matches!(progress.last(), Some(Progress::Back { .. })), "{progress:?}");
    // Both units ran to their end, the second after the reboot.
    let done: Vec<(&str, bool)> = events
        .iter()
        .filter_map(|e| match e {
            UpEvent::UnitDone { label, result, .. } => Some((label.as_str(), result.is_ok())),
            _ => None,
        })
        .collect();
    assert_eq!(done, [("u0", true), ("u1", true)]);
    let c = recap.run.nodes[0].1;
    assert_eq!((c.ok, c.failed, c.skipped), (2, 0, 0), "{c:?}");
}

#[test]
fn a_node_that_does_not_come_back_is_named_with_what_the_last_poll_found() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    // Reboot = true on the node would do the same as the flag; here the wait is short and the
    // node never comes back on a new boot.
    let options =
        Options { allow_reboot: true, reboot_wait: fast(Duration::from_secs(3)), ..Options::default() };
    let (recap, events) = up(&dir, options, Back::Never);

    assert!(!recap.converged());
    assert!(recap.rebooted.is_empty());
    assert_eq!(recap.run.failures.len(), 1, "{:?}", recap.run.failures);
    let failure = &recap.run.failures[0];
    assert!(
        failure.contains(&format!("n1 did not come back within 3s of rebooting into {LUSTRE}")),
        "{failure}"
    );
    // The node went down and stayed down: nothing answers on its port.
    assert!(failure.contains("(last: not answering: "), "{failure}");
    assert!(reboots(&events).iter().any(|p| matches!(p, Progress::Waiting { .. })), "{events:?}");
    // The node's other unit is not run on the wrong kernel.
    assert!(
        events.iter().any(|e| matches!(e, UpEvent::UnitSkipped { label, .. } if label == "u1")),
        "{events:?}"
    );
}

#[test]
fn without_permission_the_node_stops_and_the_next_step_says_how_to_allow_it() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let (recap, events) = up(&dir, Options::default(), Back::Default);

    assert!(reboots(&events).is_empty(), "{events:?}");
    assert!(!dir.path().join("root/grub-default").exists(), "nothing touched the boot loader");
    assert_eq!(recap.boots.len(), 1);
    let next = recap.boots[0].next_step();
    assert!(next.starts_with(&format!("reboot n1 into {LUSTRE} (it runs {STOCK})")), "{next}");
    assert!(next.contains("--allow-reboot"), "{next}");
}

/// `reboot = true` on the node, and no `--allow-reboot`: the node's own permission is enough
/// for the whole path (boot default, reboot, wait, kernel checked, units go on).
#[test]
fn reboot_true_on_the_node_lets_up_reboot_it_without_the_flag() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let options = Options { reboot_wait: fast(Duration::from_secs(60)), ..Options::default() };
    assert!(!options.allow_reboot);
    let (recap, events) =
        up_with(&dir, Run { options, back: Back::Default, plan: plan(), reboot_on_node: true });

    assert!(recap.converged(), "{:?} {:?}", recap.run.failures, recap.boots);
    assert!(dir.path().join("root/rebooted").exists(), "the agent ran systemctl reboot");
    let rebooted: Vec<(&str, &str)> =
        recap.rebooted.iter().map(|b| (b.node.as_str(), b.kernel.as_str())).collect();
    assert_eq!(rebooted, [("n1", LUSTRE)]);
    assert!(matches!(reboots(&events).last(), Some(Progress::Back { .. })), "{events:?}");
    let c = recap.run.nodes[0].1;
    assert_eq!((c.ok, c.failed, c.skipped), (2, 0, 0), "{c:?}");
}

/// The node reboots but its boot loader starts the old kernel: `up` fails the node naming the
/// kernel it runs, and runs nothing more on it.
#[test]
fn a_node_back_on_another_kernel_fails_naming_the_kernel_it_runs() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let options =
        Options { allow_reboot: true, reboot_wait: fast(Duration::from_secs(60)), ..Options::default() };
    let (recap, events) = up(&dir, options, Back::On(STOCK));

    assert!(!recap.converged());
    assert!(recap.rebooted.is_empty(), "{:?}", recap.rebooted);
    assert_eq!(recap.run.failures.len(), 1, "{:?}", recap.run.failures);
    let failure = &recap.run.failures[0];
    assert!(
        failure.contains(&format!(
            "n1 rebooted but runs {STOCK}, not {LUSTRE}: its boot loader did not start the kernel"
        )),
        "{failure}"
    );
    assert!(failure.contains("grubby --default-kernel"), "{failure}");
    // It did go down and come back: a new boot, polled, then refused.
    assert!(dir.path().join("root/rebooted").exists());
    assert!(!reboots(&events).iter().any(|p| matches!(p, Progress::Back { .. })), "{events:?}");
    assert!(
        events.iter().any(|e| matches!(e, UpEvent::UnitSkipped { label, .. } if label == "u1")),
        "{events:?}"
    );
}

/// After rebooting into the kernel the unit asked for, the unit runs again and asks for yet
/// another: `up` does not reboot twice on its own, it fails the unit saying so.
#[test]
fn a_unit_that_still_must_boot_after_its_reboot_fails_saying_so() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let options =
        Options { allow_reboot: true, reboot_wait: fast(Duration::from_secs(60)), ..Options::default() };
    let plan = plan_of(vec![pin(LUSTRE), pin(LATER)]);
    let (recap, events) = up_with(&dir, Run { options, back: Back::Default, plan, reboot_on_node: false });

    assert!(!recap.converged());
    assert!(matches!(reboots(&events).last(), Some(Progress::Back { .. })), "{events:?}");
    assert_eq!(recap.run.failures.len(), 1, "{:?}", recap.run.failures);
    let failure = &recap.run.failures[0];
    assert!(
        failure.contains(&format!(
            "still must boot into {LATER} (it runs {LUSTRE}) after rebooting into {LUSTRE}; reboot it by hand, then run pvfsctl up again"
        )),
        "{failure}"
    );
    // One reboot only, into the first kernel.
    let default = std::fs::read_to_string(dir.path().join("root/grub-default")).unwrap();
    assert_eq!(default.trim(), format!("/boot/vmlinuz-{LUSTRE}"));
    assert_eq!(reboots(&events).iter().filter(|p| matches!(p, Progress::Rebooting)).count(), 1);
}

/// Asked to reboot into the kernel it already runs (the node was rebooted by hand between the
/// step's answer and the request), the agent answers `already_running`: nothing is rebooted,
/// the boot loader is not touched, and the caller goes on with the same connection.
#[test]
fn a_node_already_on_the_kernel_is_not_rebooted() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let root = stand_in_root(&dir, LUSTRE);
    let bin = stand_in_tools(&dir, &root);
    let agent =
        AgentProcess::start_on(&dir, "n1", "127.0.0.1:0", Some(&bin), &["--root", root.to_str().unwrap()]);
    let cluster =
        pvfs_config::load(&cluster_file(&dir, &[("n1", format!("127.0.0.1:{}", agent.port))])).unwrap();
    let material = pvfs_tls::load(&dir.path().join("tls"), "pvfsctl").unwrap();
    let dialer = Dialer::new(ClientSecurity::MutualTls(material), Duration::from_secs(5));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let node = &cluster.nodes[0];
    rt.block_on(async {
        let conn = dialer.connect(node).await.unwrap();
        let wait = fast(Duration::from_secs(5));
        let answered = pvfs_coord::reboot::reboot_into(node, conn, &dialer, LUSTRE, wait, |p| {
            seen.lock().unwrap().push(p)
        })
        .await;
        assert!(answered.is_ok(), "{:?}", answered.err());
    });
    assert_eq!(seen.into_inner().unwrap(), [], "no reboot, no wait");
    assert!(!root.join("rebooted").exists(), "systemctl reboot did not run");
    assert!(!root.join("grub-default").exists(), "the boot loader was not touched");
    drop(agent);
}
