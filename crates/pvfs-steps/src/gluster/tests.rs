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

fn gluster_host(runner: RecordedRunner) -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
    let dir = tempfile::tempdir().unwrap();
    let host = NodeAccess::new(Root::at(dir.path()), runner);
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
        execute(&step, &host, &crate::Unguarded, false, |c| ran.push((c.command.clone(), c.code))).await;
    assert!(matches!(outcome, Outcome::Changed { .. }), "{outcome:?}");
    assert_eq!(ran.len(), 2);
    assert_eq!(execute(&step, &host, &crate::Unguarded, false, |_| {}).await, Outcome::Ok { detail: None });
}

/// glusterd busy with another node's transaction answers a probe and a change alike with its
/// lock's words (glusterd-syncop.c, glusterd-mgmt.c); both are asked again until it answers.
#[tokio::test(start_paused = true)]
async fn a_busy_glusterd_is_asked_again_by_probes_and_changes() {
    const CREATE: &str = "gluster --mode=script volume create gv0 transport tcp 10.254.0.1:/bricks/n1/gv0 10.254.0.2:/bricks/n2/gv0";
    let busy_xml = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cliOutput><opRet>-1</opRet><opErrno>30802</opErrno><opErrstr>Another transaction is in progress for gv0. Please try again after some time.</opErrstr></cliOutput>
"#;
    let runner = RecordedRunner::new()
        .record(INFO, 0, busy_xml, "")
        .record(INFO, 0, ABSENT, "")
        .record(INFO, 0, &info("Started", &[B1, B2]), "")
        .record(CREATE, 1, "", "volume create: gv0: failed: Another transaction is in progress. Please try again after some time.\n")
        .record(CREATE, 0, "volume create: gv0: success: please start the volume to access data\n", "")
        .record("gluster --mode=script volume start gv0", 0, "volume start: gv0: success\n", "");
    let (_d, host) = gluster_host(runner.clone());
    let step = Step::GlusterVolume(volume(&[B1, B2]));
    let mut ran = Vec::new();
    let outcome =
        execute(&step, &host, &crate::Unguarded, false, |c| ran.push((c.command.clone(), c.code))).await;
    assert!(matches!(outcome, Outcome::Changed { .. }), "{outcome:?}");
    assert_eq!(ran.len(), 2, "{ran:?}");
    let calls = runner.calls();
    assert_eq!(calls.iter().filter(|c| *c == CREATE).count(), 2, "{calls:?}");
    assert_eq!(calls.iter().filter(|c| *c == INFO).count(), 3, "{calls:?}");
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
        execute(&Step::Gate(gate), &host, &crate::Unguarded, true, |_| {}).await,
        Outcome::Ok { detail: Some("1 peers in cluster".into()) }
    );
    // A third server is a brick to add to the real volume.
    let grown = volume(&[bricks[0], bricks[1], "10.213.250.14:/bricks/brick1/gv0"]);
    assert_eq!(grown.assess(&host).await.unwrap().actions.len(), 2);
}

mod teardown_and_rebalance {
    //! `down`'s gluster steps and the rebalance gate, on glusterfs 10.3's own answers
    //! (testdata/gluster-10.3/rebalance-*.xml, volume-info-deleted.xml: recorded in the e2e
    //! image, each file's header says how).
    use super::*;

    const NOT_STARTED: &str = include_str!("../../testdata/gluster-10.3/rebalance-not-started.xml");
    const IN_PROGRESS: &str =
        include_str!("../../testdata/gluster-10.3/rebalance-fix-layout-in-progress.xml");
    const COMPLETED: &str = include_str!("../../testdata/gluster-10.3/rebalance-fix-layout-completed.xml");
    const NO_VOLUME: &str = include_str!("../../testdata/gluster-10.3/rebalance-no-such-volume.xml");
    const REPLICATE: &str = include_str!("../../testdata/gluster-10.3/rebalance-replicate-volume.xml");
    const DELETED: &str = include_str!("../../testdata/gluster-10.3/volume-info-deleted.xml");
    const INFO_REAL: &str = include_str!("../../testdata/gluster-10.3/volume-info.xml");
    const PEERS_REAL: &str = include_str!("../../testdata/gluster-10.3/peer-status.xml");
    const STATUS: &str = "gluster --xml volume rebalance gv0 status";

    async fn rebalance(answers: &[(i32, &str)]) -> Vec<Result<Rebalance, String>> {
        let mut runner = RecordedRunner::new();
        for (code, xml) in answers {
            runner = runner.record(STATUS, *code, xml, "");
        }
        let (_dir, host) = gluster_host(runner);
        let mut out = Vec::new();
        for _ in answers {
            out.push(rebalance_status(&host, "gv0").await.map_err(|e| e.to_string()));
        }
        out
    }

    #[tokio::test]
    async fn rebalance_states_are_read_from_the_real_answers() {
        let got = rebalance(&[(1, NOT_STARTED), (0, IN_PROGRESS), (0, COMPLETED)]).await;
        assert_eq!(
            got,
            [
                Ok(Rebalance::NeverRun),
                Ok(Rebalance::Running(
                    "fix-layout in progress on 1 of 1 nodes (localhost): 0 entries scanned, 0 files moved, 0s"
                        .into()
                )),
                Ok(Rebalance::Done(
                    "fix-layout completed on 1 nodes: 0 entries scanned, 0 files moved, 4s".into()
                )),
            ]
        );
        // A replica-2 volume of two bricks: nothing to rebalance, ever (the e2e's `up` of one
        // stopped at this gate before it was read so).
        assert_eq!(rebalance(&[(1, REPLICATE)]).await, [Ok(Rebalance::NeverRun)]);
        let got = rebalance(&[(1, NO_VOLUME)]).await;
        assert_eq!(
            got,
            [Err(
                "`gluster --xml volume rebalance gv0 status` exited -1: Volume nosuch does not exist".into()
            )]
        );
    }

    /// A second server whose fix-layout failed (status 8, "fix-layout failed": the numbers of
    /// glusterd's gf_defrag_status_t), next to the recorded node: the whole is a failure naming
    /// it; an unknown status number is refused as unexpected, never read as done.
    #[tokio::test]
    async fn a_failed_or_unknown_node_is_not_done() {
        let node = |name: &str, status: u32, text: &str| {
            format!(
                "<node><nodeName>{name}</nodeName><id>x</id><files>0</files><size>0</size><lookups>12</lookups>\
                 <failures>1</failures><skipped>0</skipped><status>{status}</status><statusStr>{text}</statusStr>\
                 <runtime>3.00</runtime></node>"
            )
        };
        let two = |second: String| {
            COMPLETED
                .replacen("<aggregate>", &format!("{second}<aggregate>"), 1)
                .replace("<nodeCount>1</nodeCount>", "<nodeCount>2</nodeCount>")
        };
        let failed = two(node("10.0.0.6", 8, "fix-layout failed"));
        let unknown = two(node("10.0.0.6", 12, "who knows"));
        let got = rebalance(&[(0, &failed)]).await;
        assert_eq!(got, [Ok(Rebalance::Failed("10.0.0.6: fix-layout failed".into()))]);
        let got = rebalance(&[(0, &unknown)]).await;
        let err = got[0].clone().unwrap_err();
        assert!(
            err.contains("answered something unexpected: node 10.0.0.6 has rebalance status 12"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn the_gate_waits_for_fix_layout_and_fails_on_a_failure() {
        let runner = RecordedRunner::new()
            .record(STATUS, 0, IN_PROGRESS, "")
            .record(STATUS, 0, IN_PROGRESS, "")
            .record(STATUS, 0, COMPLETED, "");
        let (_dir, host) = gluster_host(runner.clone());
        let gate = Step::Gate(crate::Gate {
            kind: crate::GateKind::GlusterRebalanced { volume: "gv0".into() },
            deadline: Duration::from_secs(60),
        });
        let outcome = execute(&gate, &host, &crate::Unguarded, false, |_| {}).await;
        assert_eq!(
            outcome,
            Outcome::Ok {
                detail: Some("fix-layout completed on 1 nodes: 0 entries scanned, 0 files moved, 4s".into())
            }
        );
        assert_eq!(runner.calls().len(), 3, "probed until done");
        // In a unit, the wait is followed live: the state it saw, once per change.
        let (_dir, host) = gluster_host(
            RecordedRunner::new()
                .record(STATUS, 0, IN_PROGRESS, "")
                .record(STATUS, 0, IN_PROGRESS, "")
                .record(STATUS, 0, COMPLETED, ""),
        );
        let mut events = Vec::new();
        crate::run_unit(
            std::slice::from_ref(&gate),
            &host,
            &crate::Unguarded,
            false,
            false,
            |e| events.push(e),
            || true,
        )
        .await;
        let progress: Vec<&crate::StepEvent> =
            events.iter().filter(|e| matches!(e, crate::StepEvent::Progress { .. })).collect();
        assert_eq!(
            progress,
            [&crate::StepEvent::Progress {
                index: 0,
                detail:
                    "fix-layout in progress on 1 of 1 nodes (localhost): 0 entries scanned, 0 files moved, 0s"
                        .into()
            }]
        );
        let (_dir, host) = gluster_host(RecordedRunner::new().record(STATUS, 1, NOT_STARTED, ""));
        let Outcome::Ok { detail } = execute(&gate, &host, &crate::Unguarded, false, |_| {}).await else {
            panic!()
        };
        assert_eq!(detail.as_deref(), Some("no rebalance has run on gv0"));
    }

    fn systemd_host(
        runner: RecordedRunner,
        glusterd: bool,
    ) -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
        let (active, code) = if glusterd { ("active\n", 0) } else { ("inactive\n", 3) };
        let (dir, host) = gluster_host(runner.record("systemctl is-active glusterd", code, active, ""));
        std::fs::create_dir_all(dir.path().join("var/lib/glusterd/vols")).unwrap();
        std::fs::create_dir_all(dir.path().join("var/lib/glusterd/peers")).unwrap();
        (dir, host)
    }

    #[tokio::test]
    async fn a_started_volume_is_stopped_then_deleted_and_then_gone() {
        let runner = RecordedRunner::new()
            .record(INFO, 0, INFO_REAL, "")
            .record(INFO, 0, DELETED, "")
            .record("gluster --mode=script volume stop gv0", 0, "volume stop: gv0: success\n", "");
        let runner =
            runner.record("gluster --mode=script volume delete gv0", 0, "volume delete: gv0: success\n", "");
        let (_dir, host) = systemd_host(runner.clone(), true);
        let step = Step::GlusterVolumeGone(GlusterVolumeGone { name: "gv0".into() });
        let Outcome::Changed { diff } = execute(&step, &host, &crate::Unguarded, false, |_| {}).await else {
            panic!()
        };
        assert_eq!(diff, ["volume gv0 is started", "volume gv0 exists (Distribute, 2 bricks)"]);
        let calls = runner.calls();
        let stop = calls.iter().position(|c| c.ends_with("volume stop gv0")).unwrap();
        let delete = calls.iter().position(|c| c.ends_with("volume delete gv0")).unwrap();
        assert!(stop < delete, "{calls:?}");
    }

    #[tokio::test]
    async fn with_glusterd_stopped_the_store_says_whether_anything_is_left() {
        let step = GlusterVolumeGone { name: "gv0".into() };
        let peers = GlusterPeersDetached { peers: vec!["10.213.250.12".into()] };
        let (dir, host) = systemd_host(RecordedRunner::new(), false);
        assert!(step.assess(&host).await.unwrap().is_in_sync(), "a second down");
        assert!(peers.assess(&host).await.unwrap().is_in_sync());

        std::fs::create_dir_all(dir.path().join("var/lib/glusterd/vols/gv0")).unwrap();
        let err = step.assess(&host).await.unwrap_err();
        assert!(err.to_string().contains("still defines volume gv0 (/var/lib/glusterd/vols/gv0)"), "{err}");
        // glusterd's peer file: uuid, state, then the names it knows the peer by.
        std::fs::write(
            dir.path().join("var/lib/glusterd/peers/139915f4-4b61-435d-9ab2-6965efe69467"),
            include_str!("../../testdata/gluster-10.3/peer-store.txt"),
        )
        .unwrap();
        let err = peers.assess(&host).await.unwrap_err();
        assert!(err.to_string().contains("still has 10.213.250.12 as a peer"), "{err}");
    }

    #[tokio::test]
    async fn peers_in_the_pool_are_detached() {
        let runner = RecordedRunner::new().record("gluster --xml peer status", 0, PEERS_REAL, "");
        let (_dir, host) = systemd_host(runner, true);
        let a = GlusterPeersDetached { peers: vec!["10.213.250.12".into(), "10.213.250.99".into()] }
            .assess(&host)
            .await
            .unwrap();
        let shown: Vec<String> = a.actions.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["gluster --mode=script peer detach 10.213.250.12"]);
    }
}
