//! `Fault` asked of a node that did not grant it, or for something that is not a running brick
//! at a data path or an interface it may cut: refused, naming the rule, and nothing killed or
//! cut. The brick is a real process
//! (`sleep`) named by a glusterd pid file under the agent's root, so a kill the agent let
//! through would be a real kill, seen by the test.

use crate::harness::{Agent, Pki};
use pvfs_host::Root;
use pvfs_proto::pb;
use tonic::Code;

/// A root whose glusterd pid file names `pid` as brick /bricks/b1 of gv0; its /proc and /sys
/// are this machine's (links to each entry), but `pid`'s command line, which says glusterfsd.
fn brick_root(pid: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let proc = dir.path().join("proc");
    std::fs::create_dir_all(&proc).unwrap();
    for entry in std::fs::read_dir("/proc").unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if !name.starts_with(|c: char| c.is_ascii_digit()) {
            std::os::unix::fs::symlink(std::path::Path::new("/proc").join(&name), proc.join(&name)).unwrap();
        }
    }
    std::os::unix::fs::symlink("/sys", dir.path().join("sys")).unwrap();
    let put = |path: &str, bytes: &[u8]| {
        let at = dir.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, bytes).unwrap();
    };
    put("/run/gluster/vols/gv0/h-bricks-b1.pid", format!("{pid}\n").as_bytes());
    put(
        &format!("/proc/{pid}/cmdline"),
        b"/usr/sbin/glusterfsd\0-s\0h\0-p\0/var/run/gluster/vols/gv0/h-bricks-b1.pid\0--brick-name\0/bricks/b1\0",
    );
    dir
}

fn kill(volume: &str, path: &str) -> pb::FaultRequest {
    pb::FaultRequest {
        kill_brick: Some(pb::GlusterBrickFault { volume: volume.into(), path: path.into() }),
        ..pb::FaultRequest::default()
    }
}

fn cut(interface: &str, seconds: u32) -> pb::FaultRequest {
    pb::FaultRequest {
        cut_network: Some(pb::NetworkFault { interface: interface.into(), seconds }),
        ..pb::FaultRequest::default()
    }
}

/// This machine's interfaces and whether each is up (`IFF_UP` in its flags).
fn interfaces() -> Vec<(String, bool)> {
    let mut all: Vec<(String, bool)> = std::fs::read_dir("/sys/class/net")
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let flags = std::fs::read_to_string(format!("/sys/class/net/{name}/flags")).unwrap_or_default();
            let flags = u32::from_str_radix(flags.trim().trim_start_matches("0x"), 16).unwrap_or(0);
            (name, flags & 1 != 0)
        })
        .collect();
    all.sort();
    all
}

/// The stand-in brick, killed when the test ends however it ends.
struct Brick(std::process::Child);

impl Drop for Brick {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_fault_is_refused_without_the_grant_and_for_anything_but_a_running_brick() {
    let pki = Pki::new();
    let mut brick = Brick(std::process::Command::new("sleep").arg("120").spawn().unwrap());
    let dir = brick_root(brick.0.id());
    let root = dir.path().to_owned();

    // The built-in policy: no faults at all.
    let agent = Agent::start_with(&pki, |s| s.root = Root::at(&root)).await;
    let mut client = agent.connect().await;
    let refused = client.fault(kill("gv0", "/bricks/b1")).await.unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    assert!(refused.message().contains("faults = true"), "{}", refused.message());
    let refused = client.fault(cut("eth0", 5)).await.unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    assert!(refused.message().contains("faults = true"), "{}", refused.message());
    let refused = client
        .fault(pb::FaultRequest { heal_of: "gv0".into(), ..pb::FaultRequest::default() })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    agent.assert_still_serving().await;
    agent.stop().await;

    // Granted: still only a brick by name and data path, and only one that runs.
    let granted =
        pvfs_policy::Policy::new(pvfs_policy::Site { faults: true, ..pvfs_policy::Site::default() }).unwrap();
    let agent = Agent::start_with(&pki, |s| {
        s.root = Root::at(&root);
        s.policy = granted;
    })
    .await;
    let mut client = agent.connect().await;
    for (volume, path, code) in [
        ("gv0", "/bricks/../bricks/b1", Code::PermissionDenied),
        ("gv0", "bricks/b1", Code::PermissionDenied),
        ("gv0", "/etc", Code::PermissionDenied),
        ("gv0", "/proc/1", Code::PermissionDenied),
        ("gv0;reboot", "/bricks/b1", Code::PermissionDenied),
        ("gv0", "/bricks/b1\n", Code::PermissionDenied),
        ("gv1", "/bricks/b1", Code::FailedPrecondition),
        ("gv0", "/bricks/b2", Code::FailedPrecondition),
    ] {
        let status = client.fault(kill(volume, path)).await.unwrap_err();
        assert_eq!(status.code(), code, "{volume:?} {path:?}: {status:?}");
    }
    let nothing = client.fault(pb::FaultRequest::default()).await.unwrap_err();
    assert_eq!(nothing.code(), Code::InvalidArgument, "{nothing:?}");
    let both = pb::FaultRequest { cut_network: cut("eth0", 5).cut_network, ..kill("gv0", "/bricks/b1") };
    let status = client.fault(both).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(brick.0.try_wait().unwrap().is_none(), "the brick was never killed");

    // A network cut: by the grammar and bounds, never the loopback (the request came in on
    // 127.0.0.1, so "" is lo too), and never by an agent reading another root than / — even
    // for an interface this machine has.
    let before = interfaces();
    let real = before.iter().map(|(n, _)| n.as_str()).find(|n| *n != "lo").unwrap_or("eth0").to_owned();
    for (interface, seconds, code) in [
        ("", 5, Code::PermissionDenied),
        ("lo", 5, Code::PermissionDenied),
        ("../eth0", 5, Code::PermissionDenied),
        ("eth0;reboot", 5, Code::PermissionDenied),
        ("eth0 up", 5, Code::PermissionDenied),
        ("-eth0", 5, Code::PermissionDenied),
        ("a-name-too-long-for-linux", 5, Code::PermissionDenied),
        (real.as_str(), 0, Code::PermissionDenied),
        (real.as_str(), 601, Code::PermissionDenied),
        (real.as_str(), u32::MAX, Code::PermissionDenied),
        (real.as_str(), 5, Code::FailedPrecondition),
    ] {
        let status = client.fault(cut(interface, seconds)).await.unwrap_err();
        assert_eq!(status.code(), code, "{interface:?} {seconds}: {status:?}");
        if code == Code::FailedPrecondition {
            assert!(status.message().contains("--root"), "{}", status.message());
        }
    }
    let undo = client.fault(pb::FaultRequest { undo: true, ..cut(&real, 5) }).await.unwrap_err();
    assert_eq!(undo.code(), Code::FailedPrecondition, "{undo:?}");
    assert!(undo.message().contains("has not cut"), "{}", undo.message());
    assert_eq!(interfaces(), before, "no interface changed");

    // A service: only a unit pvfs manages, and never by an agent reading another root.
    let stop = |unit: &str| pb::FaultRequest {
        stop_service: Some(pb::ServiceFault { unit: unit.into() }),
        ..pb::FaultRequest::default()
    };
    for (unit, code) in [
        ("sshd", Code::PermissionDenied),
        ("pvfs-agent", Code::PermissionDenied),
        ("glusterd;reboot", Code::PermissionDenied),
        ("../glusterd", Code::PermissionDenied),
        ("", Code::PermissionDenied),
        ("glusterd", Code::FailedPrecondition),
    ] {
        let status = client.fault(stop(unit)).await.unwrap_err();
        assert_eq!(status.code(), code, "{unit:?}: {status:?}");
    }
    let start = pb::FaultRequest { undo: true, ..stop("glusterd") };
    let status = client.fault(start).await.unwrap_err();
    assert!(status.message().contains("--root"), "{}", status.message());

    // A volume's heal: a volume by name, and alone (read-only: asked of the `gluster` on the
    // agent's PATH, which answers nothing here).
    let heal = |volume: &str| pb::FaultRequest { heal_of: volume.into(), ..pb::FaultRequest::default() };
    for (request, code) in [
        (heal("gv0;reboot"), Code::PermissionDenied),
        (heal("../gv0"), Code::PermissionDenied),
        (pb::FaultRequest { undo: true, ..heal("gv0") }, Code::InvalidArgument),
        (pb::FaultRequest { heal_of: "gv0".into(), ..kill("gv0", "/bricks/b1") }, Code::InvalidArgument),
        (heal("gv0"), Code::FailedPrecondition),
    ] {
        let status = client.fault(request.clone()).await.unwrap_err();
        assert_eq!(status.code(), code, "{request:?}: {status:?}");
    }
    agent.assert_still_serving().await;
    agent.stop().await;
}

/// `GlusterProfile`: a volume by name and one of its three actions; refused where the site's
/// kinds leave out gluster-volume; and an agent reading another root never runs gluster.
#[tokio::test]
async fn a_gluster_profile_is_refused_for_anything_but_a_volume_by_name() {
    let pki = Pki::new();
    // A root of this machine's /proc and /sys (the agent's Info reads them), not `/`.
    let dir = brick_root(std::process::id());
    let root = dir.path().to_owned();
    let ask = |volume: &str, action: i32| pb::GlusterProfileRequest { volume: volume.into(), action };
    let start = pb::gluster_profile_request::Action::Start as i32;
    let agent = Agent::start_with(&pki, |s| s.root = Root::at(&root)).await;
    let mut client = agent.connect().await;
    for (request, code) in [
        (ask("gv0;reboot", start), Code::PermissionDenied),
        (ask("../gv0", start), Code::PermissionDenied),
        (ask("", start), Code::PermissionDenied),
        (ask("gv0", 0), Code::InvalidArgument),
        (ask("gv0", 99), Code::InvalidArgument),
        (ask("gv0", start), Code::FailedPrecondition),
    ] {
        let status = client.gluster_profile(request.clone()).await.unwrap_err();
        assert_eq!(status.code(), code, "{request:?}: {status:?}");
        if code == Code::FailedPrecondition {
            assert!(status.message().contains("--root"), "{}", status.message());
        }
    }
    agent.assert_still_serving().await;
    agent.stop().await;

    let narrow = pvfs_policy::Policy::new(pvfs_policy::Site {
        kinds: Some(vec!["mount".into()]),
        ..pvfs_policy::Site::default()
    })
    .unwrap();
    let agent = Agent::start_with(&pki, |s| {
        s.root = Root::at(&root);
        s.policy = narrow;
    })
    .await;
    let mut client = agent.connect().await;
    let status = client.gluster_profile(ask("gv0", start)).await.unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(status.message().contains("gluster-volume"), "{}", status.message());
    agent.stop().await;
}
