//! The hostile-coordinator suite: a real agent on loopback, a real mTLS client holding a valid
//! coordinator certificate, and hand-built requests that a real coordinator would never send.
//! Every one must be refused with an error naming the rule, the node must be left as it was
//! (read back from the file system, not inferred from the answer), and the agent must go on
//! serving afterwards.
//!
//! The agent runs with the real root (`/`), as in production: these tests run as root on CI,
//! so the attacks are real attacks on this machine, aimed at names no real system uses
//! (`pvfs-hostile-*`) and cleaned up even when an assertion fails.

mod availability;
mod bench;
mod devices;
mod faults;
mod flood;
mod harness;
mod lifecycle;
mod lustre;
mod places;
mod policy;
mod processes;
mod reboot;

use harness::{Agent, Pki};

#[tokio::test]
async fn a_legitimate_unit_is_still_carried_out() {
    let pki = Pki::new();
    let agent = Agent::start(&pki).await;
    let dir = harness::scratch("legit");
    let target = format!("{}/target", dir.path().display());
    let steps = vec![
        harness::directory(&target, 0o755),
        harness::file(&format!("{target}/format.conf"), "# pvfs local target\n", 0o644),
    ];
    let done = agent.apply(steps).await.expect("a plain directory in a scratch area is allowed");
    assert!(done.all_succeeded(), "{:?}", done.failure());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("target/format.conf")).unwrap(),
        "# pvfs local target\n"
    );
    agent.assert_still_serving().await;
    agent.stop().await;
}
