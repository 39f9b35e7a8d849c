use super::*;
use crate::{Outcome, Step, Unguarded, execute, without_header};
use pvfs_host::{RecordedRunner, Root};

const RUNNING: &str = include_str!("../../testdata/firewalld/state-running.txt");
const NOT_RUNNING_OUT: &str = include_str!("../../testdata/firewalld/state-not-running.txt");
const RANGE: &str = include_str!("../../testdata/firewalld/list-ports-range.txt");
const SEVERAL: &str = include_str!("../../testdata/firewalld/list-ports-several.txt");
const EMPTY: &str = include_str!("../../testdata/firewalld/list-ports-empty.txt");

/// A node with firewalld installed (its client where the package puts it).
fn node_with_firewalld() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("usr/bin")).unwrap();
    std::fs::write(dir.path().join("usr/bin/firewall-cmd"), "").unwrap();
    dir
}

fn beegfs_ports() -> FirewallPorts {
    FirewallPorts {
        ports: vec![PortRange::range(8003, 8008, Protocol::Tcp), PortRange::range(8003, 8008, Protocol::Udp)],
        zone: None,
    }
}

fn running(permanent: &str, runtime: &str) -> RecordedRunner {
    RecordedRunner::new()
        .record("systemctl is-active firewalld", 0, "active\n", "")
        .record("firewall-cmd --state", 0, &without_header(RUNNING), "")
        .record("firewall-cmd --permanent --list-ports", 0, &without_header(permanent), "")
        .record("firewall-cmd --list-ports", 0, &without_header(runtime), "")
}

#[test]
fn port_lists_are_read_as_firewall_cmd_prints_them() {
    let listed = parse_list_ports(&without_header(SEVERAL)).unwrap();
    let shown: Vec<String> =
        listed.iter().map(|p| format!("{}-{}/{}", p.first, p.last, p.protocol)).collect();
    assert_eq!(shown, ["22-22/tcp", "988-988/tcp", "8003-8008/tcp", "8003-8008/udp"]);
    assert_eq!(parse_list_ports(&without_header(EMPTY)).unwrap(), []);
    let range = parse_list_ports(&without_header(RANGE)).unwrap();
    assert!(PortRange::range(24007, 24008, Protocol::Tcp).covered_by(&range));
    assert!(!PortRange::one(24007, Protocol::Udp).covered_by(&range));
    assert!(!PortRange::one(988, Protocol::Tcp).covered_by(&range));
    assert!(!PortRange::range(1000, 1030, Protocol::Tcp).covered_by(&range), "1000-1023 are not in it");
    // sctp and dccp are read (firewalld opens them) but never cover a tcp/udp port.
    assert!(
        !PortRange::one(5000, Protocol::Tcp).covered_by(&parse_list_ports("5000/sctp 222/dccp").unwrap())
    );
    for bad in ["988", "988/", "/tcp", "0/tcp", "9-8/tcp", "70000/tcp", "+988/tcp", "988/TCP"] {
        assert!(parse_list_ports(bad).is_err(), "{bad}");
    }
    assert_eq!("8003-8008/udp".parse::<PortRange>().unwrap(), PortRange::range(8003, 8008, Protocol::Udp));
    assert!("5000/sctp".parse::<PortRange>().is_err(), "pvfs opens tcp and udp only");
    assert_eq!(PortRange::one(988, Protocol::Tcp).to_string(), "988/tcp");
}

#[tokio::test]
async fn missing_ports_are_added_permanently_then_reloaded() {
    let dir = node_with_firewalld();
    let host = NodeAccess::new(Root::at(dir.path()), running(EMPTY, EMPTY));
    let a = beegfs_ports().assess(&host).await.unwrap();
    let shown: Vec<String> = a.actions.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "firewall-cmd --permanent --add-port=8003-8008/tcp",
            "firewall-cmd --permanent --add-port=8003-8008/udp",
            "firewall-cmd --reload"
        ]
    );
    assert_eq!(
        a.diff[0],
        "firewalld's permanent configuration does not open 8003-8008/tcp in the default zone"
    );
    // A zone is named on every command that reads or changes it, never on --reload.
    let zoned = FirewallPorts { zone: Some("internal".into()), ..beegfs_ports() };
    let runner = RecordedRunner::new()
        .record("systemctl is-active firewalld", 0, "active\n", "")
        .record("firewall-cmd --state", 0, &without_header(RUNNING), "")
        .record("firewall-cmd --permanent --zone=internal --list-ports", 0, "\n", "")
        .record("firewall-cmd --zone=internal --list-ports", 0, "\n", "");
    let a = zoned.assess(&NodeAccess::new(Root::at(dir.path()), runner)).await.unwrap();
    assert_eq!(a.actions[0].to_string(), "firewall-cmd --permanent --zone=internal --add-port=8003-8008/tcp");
    assert_eq!(a.actions[2].to_string(), "firewall-cmd --reload");
}

#[tokio::test]
async fn open_ports_need_nothing_and_a_missed_reload_is_done() {
    let dir = node_with_firewalld();
    let host = NodeAccess::new(Root::at(dir.path()), running(SEVERAL, SEVERAL));
    assert!(beegfs_ports().assess(&host).await.unwrap().is_in_sync());
    // Within a wider range already open: nothing either.
    let gluster = FirewallPorts {
        ports: vec![PortRange::range(24007, 24008, Protocol::Tcp), PortRange::one(49152, Protocol::Tcp)],
        zone: None,
    };
    let host = NodeAccess::new(Root::at(dir.path()), running(RANGE, RANGE));
    assert!(gluster.assess(&host).await.unwrap().is_in_sync());
    // Permanent but not running (a run that stopped before --reload): reload only.
    let host = NodeAccess::new(Root::at(dir.path()), running(SEVERAL, EMPTY));
    let a = beegfs_ports().assess(&host).await.unwrap();
    let shown: Vec<String> = a.actions.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["firewall-cmd --reload"]);
    assert_eq!(a.diff.len(), 2, "{:?}", a.diff);
}

#[tokio::test]
async fn without_firewalld_there_is_nothing_to_do_and_the_step_says_why() {
    let bare = tempfile::tempdir().unwrap();
    let host = NodeAccess::new(Root::at(bare.path()), RecordedRunner::new());
    let a = beegfs_ports().assess(&host).await.unwrap();
    assert!(a.is_in_sync());
    assert_eq!(
        a.note.as_deref(),
        Some("firewalld is not installed (/usr/bin/firewall-cmd is absent): no port to open")
    );

    let dir = node_with_firewalld();
    // Stopped, as the seed scripts leave it: systemd says so, firewall-cmd is not asked.
    let stopped = RecordedRunner::new().record("systemctl is-active firewalld", 3, "inactive\n", "");
    let host = NodeAccess::new(Root::at(dir.path()), stopped.clone());
    let a = beegfs_ports().assess(&host).await.unwrap();
    assert_eq!(a.note.as_deref(), Some("firewalld is inactive: no port to open"));
    assert_eq!(stopped.calls(), ["systemctl is-active firewalld"]);
    // Active to systemd but not running to itself (between start and its D-Bus name).
    let starting = RecordedRunner::new().record("systemctl is-active firewalld", 0, "active\n", "").record(
        "firewall-cmd --state",
        NOT_RUNNING,
        &without_header(NOT_RUNNING_OUT),
        "",
    );
    let a = beegfs_ports().assess(&NodeAccess::new(Root::at(dir.path()), starting)).await.unwrap();
    assert!(a.is_in_sync());
    // Failed at start: an error saying where to look, not "nothing to do".
    let failed = RecordedRunner::new().record("systemctl is-active firewalld", 0, "active\n", "").record(
        "firewall-cmd --state",
        RUNNING_BUT_FAILED,
        "failed\n",
        "",
    );
    let err = beegfs_ports().assess(&NodeAccess::new(Root::at(dir.path()), failed)).await.unwrap_err();
    assert!(err.to_string().contains("journalctl -u firewalld"), "{err}");
}

#[tokio::test]
async fn an_unreadable_port_list_is_named() {
    let dir = node_with_firewalld();
    let host = NodeAccess::new(Root::at(dir.path()), running("988/tcp sixty/udp\n", "\n"));
    let err = beegfs_ports().assess(&host).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Unexpected { command, .. } if command == "firewall-cmd --permanent --list-ports"),
        "{err}"
    );
}

/// The whole step through `execute`: the plan shows the commands, the run performs them and
/// verifies by reading the lists again, and a second run changes nothing.
#[tokio::test]
async fn a_run_opens_the_ports_and_a_second_run_changes_nothing() {
    let dir = node_with_firewalld();
    let opened = "8003-8008/tcp 8003-8008/udp\n";
    let runner = RecordedRunner::new()
        .record("systemctl is-active firewalld", 0, "active\n", "")
        .record("firewall-cmd --state", 0, "running\n", "")
        .record("firewall-cmd --permanent --list-ports", 0, "22/tcp\n", "")
        .record("firewall-cmd --permanent --list-ports", 0, "22/tcp\n", "")
        .record("firewall-cmd --permanent --list-ports", 0, opened, "")
        .record("firewall-cmd --list-ports", 0, "22/tcp\n", "")
        .record("firewall-cmd --list-ports", 0, "22/tcp\n", "")
        .record("firewall-cmd --list-ports", 0, opened, "")
        .record("firewall-cmd --permanent --add-port=8003-8008/tcp", 0, "success\n", "")
        .record("firewall-cmd --permanent --add-port=8003-8008/udp", 0, "success\n", "")
        .record("firewall-cmd --reload", 0, "success\n", "");
    let host = NodeAccess::new(Root::at(dir.path()), runner.clone());
    let step = Step::Firewall(beegfs_ports());
    let plan = execute(&step, &host, &Unguarded, true, |_| {}).await;
    let Outcome::WouldChange { would_run, .. } = &plan else { panic!("{plan:?}") };
    assert_eq!(would_run.len(), 3);
    let ran = execute(&step, &host, &Unguarded, false, |_| {}).await;
    assert!(matches!(ran, Outcome::Changed { .. }), "{ran:?}");
    let again = execute(&step, &host, &Unguarded, false, |_| {}).await;
    assert_eq!(again, Outcome::Ok { detail: None });
    let adds = runner.calls().iter().filter(|c| c.contains("--add-port") || c.contains("--reload")).count();
    assert_eq!(adds, 3, "{:?}", runner.calls());
    assert_eq!(step.to_string(), "firewalld opens 8003-8008/tcp 8003-8008/udp");
}
