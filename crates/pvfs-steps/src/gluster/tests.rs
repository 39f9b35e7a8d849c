//! Gluster steps against `gluster --xml` answers of glusterfs 10.3 (captured live for
//! reference/setup-anchors.md §2d, and from the e2e containers: testdata/gluster-*.xml).

use super::*;
use crate::{Outcome, Step, execute};
use pvfs_host::{RecordedRunner, Root};

const INFO: &str = "gluster --xml volume info gv0";
const ABSENT: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cliOutput>
  <opRet>-1</opRet>
  <opErrno>30806</opErrno>
  <opErrstr>Volume gv0 does not exist</opErrstr>
  <volInfo>
    <volumes>
      <count>0</count>
    </volumes>
  </volInfo>
</cliOutput>
"#;

fn info(status: &str, bricks: &[&str]) -> String {
    let bricks: String = bricks
        .iter()
        .map(|b| format!("<brick uuid=\"9ce08ef9\">{b}<name>{b}</name><hostUuid>9ce08ef9</hostUuid><isArbiter>0</isArbiter></brick>"))
        .collect();
    let code = if status == "Started" { 1 } else { 0 };
    format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cliOutput><opRet>0</opRet><opErrno>0</opErrno><opErrstr/><volInfo><volumes><volume><name>gv0</name><id>5d3c</id>
<status>{code}</status><statusStr>{status}</statusStr><snapshotCount>0</snapshotCount><brickCount>2</brickCount>
<distCount>2</distCount><replicaCount>1</replicaCount><type>0</type><typeStr>Distribute</typeStr><transport>0</transport>
<bricks>{bricks}</bricks><optCount>3</optCount><options><option><name>storage.fips-mode-rchecksum</name><value>on</value></option>
<option><name>transport.address-family</name><value>inet</value></option><option><name>nfs.disable</name><value>on</value></option>
</options></volume><count>1</count></volumes></volInfo></cliOutput>
"#
    )
}

fn volume(bricks: &[&str]) -> GlusterVolume {
    GlusterVolume {
        name: "gv0".into(),
        layout: GlusterLayout::Distribute,
        bricks: bricks.iter().map(|b| b.to_string()).collect(),
        options: vec![],
    }
}

fn gluster_host(runner: RecordedRunner) -> (tempfile::TempDir, Host<RecordedRunner>) {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(Root::at(dir.path()), runner);
    (dir, host)
}

const B1: &str = "10.254.0.1:/bricks/n1/gv0";
const B2: &str = "10.254.0.2:/bricks/n2/gv0";
const B3: &str = "10.254.0.3:/bricks/n3/gv0";

#[tokio::test]
async fn an_absent_volume_is_created_and_started_even_though_the_cli_exits_0() {
    let (_d, host) = gluster_host(RecordedRunner::new().record(INFO, 0, ABSENT, ""));
    let a = volume(&[B1, B2]).assess(&host).await.unwrap();
    let shown: Vec<String> = a.actions.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "gluster --mode=script volume create gv0 transport tcp 10.254.0.1:/bricks/n1/gv0 10.254.0.2:/bricks/n2/gv0",
            "gluster --mode=script volume start gv0",
        ]
    );
}

#[tokio::test]
async fn a_created_volume_is_only_started_and_a_started_one_left_alone() {
    let (_d, host) = gluster_host(RecordedRunner::new().record(INFO, 0, &info("Created", &[B1, B2]), ""));
    let a = volume(&[B1, B2]).assess(&host).await.unwrap();
    assert_eq!(a.diff, ["volume gv0 is Created"]);
    let (_d, host) = gluster_host(RecordedRunner::new().record(INFO, 0, &info("Started", &[B1, B2]), ""));
    assert!(volume(&[B1, B2]).assess(&host).await.unwrap().is_in_sync());
}

#[tokio::test]
async fn a_new_server_adds_its_brick_and_fixes_the_layout() {
    let (_d, host) = gluster_host(RecordedRunner::new().record(INFO, 0, &info("Started", &[B1, B2]), ""));
    let a = volume(&[B1, B2, B3]).assess(&host).await.unwrap();
    let shown: Vec<String> = a.actions.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "gluster --mode=script volume add-brick gv0 10.254.0.3:/bricks/n3/gv0",
            "gluster --mode=script volume rebalance gv0 fix-layout start",
        ]
    );
}

#[tokio::test]
async fn bricks_are_never_removed_or_reordered() {
    let (_d, host) = gluster_host(RecordedRunner::new().record(INFO, 0, &info("Started", &[B1, B2]), ""));
    for bricks in [&[B2, B1][..], &[B1][..], &[B1, B3][..]] {
        let err = volume(bricks).assess(&host).await.unwrap_err();
        assert!(err.to_string().contains("never removes or reorders"), "{err}");
    }
    let replicated = GlusterVolume { layout: GlusterLayout::Replicate { replica: 2 }, ..volume(&[B1, B2]) };
    let err = replicated.assess(&host).await.unwrap_err();
    assert!(err.to_string().contains("exists as Distribute, not replicate 2"), "{err}");
}

#[tokio::test]
async fn options_are_set_when_they_differ() {
    let (_d, host) = gluster_host(RecordedRunner::new().record(INFO, 0, &info("Started", &[B1, B2]), ""));
    let mut v = volume(&[B1, B2]);
    v.options = vec![("nfs.disable".into(), "on".into()), ("performance.cache-size".into(), "1GB".into())];
    let a = v.assess(&host).await.unwrap();
    assert_eq!(a.diff, ["performance.cache-size is unset, not 1GB"]);
}

#[tokio::test]
async fn glusterd_down_is_named() {
    let (_d, host) = gluster_host(RecordedRunner::new().record(
        INFO,
        1,
        "Connection failed. Please check if gluster daemon is operational.\n",
        "",
    ));
    let err = volume(&[B1]).assess(&host).await.unwrap_err();
    assert!(err.to_string().contains("systemctl start glusterd"), "{err}");
}

/// `gluster --xml peer status` on 10.254.0.1 with one peer (setup-anchors §2d).
const PEERS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cliOutput><opRet>0</opRet><opErrno>0</opErrno><opErrstr/><peerStatus><peer><uuid>9ce08ef9-1c8c-4b8f-a3a4-3f8a0b1d1e01</uuid>
<hostname>10.254.0.2</hostname><hostnames><hostname>10.254.0.2</hostname></hostnames><connected>1</connected><state>3</state>
<stateStr>Peer in Cluster</stateStr></peer></peerStatus></cliOutput>
"#;

#[tokio::test]
async fn peers_not_in_the_pool_are_probed() {
    let (_d, host) = gluster_host(RecordedRunner::new().record("gluster --xml peer status", 0, PEERS, ""));
    let step = GlusterPeers { peers: vec!["10.254.0.2".into(), "10.254.0.3".into()] };
    let a = step.assess(&host).await.unwrap();
    assert_eq!(a.diff, ["10.254.0.3 is not in the trusted pool"]);
    assert_eq!(a.actions[0].to_string(), "gluster --mode=script peer probe 10.254.0.3");
    let empty = r#"<?xml version="1.0"?><cliOutput><opRet>0</opRet><opErrno>0</opErrno><opErrstr/><peerStatus/></cliOutput>"#;
    let (_d, host) = gluster_host(RecordedRunner::new().record("gluster --xml peer status", 0, empty, ""));
    assert_eq!(step.assess(&host).await.unwrap().actions.len(), 2);
}

#[tokio::test]
async fn create_then_verify_runs_each_command_once() {
    let runner = RecordedRunner::new()
        .record(INFO, 0, ABSENT, "")
        .record(INFO, 0, &info("Started", &[B1, B2]), "")
        .record("gluster --mode=script volume create gv0 transport tcp 10.254.0.1:/bricks/n1/gv0 10.254.0.2:/bricks/n2/gv0", 0, "volume create: gv0: success: please start the volume to access data\n", "")
        .record("gluster --mode=script volume start gv0", 0, "volume start: gv0: success\n", "");
    let (_d, host) = gluster_host(runner.clone());
    let step = Step::GlusterVolume(volume(&[B1, B2]));
    let mut ran = Vec::new();
    let outcome =
        execute(&step, &host, &crate::Policy::default(), false, |c| ran.push((c.command.clone(), c.code)))
            .await;
    assert!(matches!(outcome, Outcome::Changed { .. }), "{outcome:?}");
    assert_eq!(ran.len(), 2);
    assert_eq!(
        execute(&step, &host, &crate::Policy::default(), false, |_| {}).await,
        Outcome::Ok { detail: None }
    );
}

/// Answers recorded from Debian's glusterfs 10.3 in the e2e containers (after `pvfsctl up
/// config/glusterfs-e2e.toml`): the converged cluster is in sync, step by step.
#[tokio::test]
async fn real_answers_of_a_converged_cluster_are_in_sync() {
    const INFO_REAL: &str = include_str!("../../testdata/gluster-10.3/volume-info.xml");
    const STATUS_REAL: &str = include_str!("../../testdata/gluster-10.3/volume-status.xml");
    const PEERS_REAL: &str = include_str!("../../testdata/gluster-10.3/peer-status.xml");
    let bricks = ["10.213.250.11:/bricks/brick1/gv0", "10.213.250.12:/bricks/brick1/gv0"];
    let runner = RecordedRunner::new()
        .record(INFO, 0, INFO_REAL, "")
        .record("gluster --xml volume status gv0", 0, STATUS_REAL, "")
        .record("gluster --xml peer status", 0, PEERS_REAL, "");
    let (_d, host) = gluster_host(runner);
    assert!(volume(&bricks).assess(&host).await.unwrap().is_in_sync());
    assert!(volume(&bricks).offline_bricks(&host).await.unwrap().is_empty());
    let peers = GlusterPeers { peers: vec!["10.213.250.12".into()] };
    assert!(peers.assess(&host).await.unwrap().is_in_sync());
    let gate = crate::Gate {
        kind: crate::GateKind::GlusterPeersInCluster { peers: vec!["10.213.250.12".into()] },
        deadline: Duration::from_secs(1),
    };
    assert_eq!(
        execute(&Step::Gate(gate), &host, &crate::Policy::default(), true, |_| {}).await,
        Outcome::Ok { detail: Some("1 peers in cluster".into()) }
    );
    // A third server is a brick to add to the real volume.
    let grown = volume(&[bricks[0], bricks[1], "10.213.250.14:/bricks/brick1/gv0"]);
    assert_eq!(grown.assess(&host).await.unwrap().actions.len(), 2);
}
