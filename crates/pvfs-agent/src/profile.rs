//! GlusterFS's own profile of a volume, for a benchmark run with `--gluster-profile`: started
//! before the run, read at each phase's start and end (`info incremental`: what every brick
//! did since the last reading, each file operation's calls and latencies), stopped after it.
//! Profiling costs the bricks (every call is timed), so it is on only with the operator's
//! consent — the flag — and only for a volume by name (`Policy::check_gluster_profile`).

use pvfs_host::Runner;
use pvfs_metrics::gluster::{BrickProfile, GlusterError};
use pvfs_policy::{Policy, PolicyError};
use std::time::Duration;

/// `volume profile` asks every brick; on a large volume it takes a while.
const PROFILE_TIMEOUT: Duration = Duration::from_secs(60);

/// What a profile request did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answer {
    /// START: the volume was profiled already.
    pub already_started: bool,
    /// INFO: each brick's interval since the last reading.
    pub bricks: Vec<BrickProfile>,
    pub done: String,
}

/// A profile request refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(transparent)]
    Refused(#[from] PolicyError),
    #[error("{0}")]
    Failed(String),
}

/// What to do with the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Start,
    Info,
    Stop,
}

/// Starts, reads or stops `volume`'s profile with `gluster --xml volume profile`.
pub async fn profile(
    runner: &impl Runner,
    policy: &Policy,
    volume: &str,
    action: Action,
) -> Result<Answer, ProfileError> {
    policy.check_gluster_profile(volume)?;
    let verb: &[&str] = match action {
        Action::Start => &["start"],
        Action::Info => &["info", "incremental"],
        Action::Stop => &["stop"],
    };
    let command = pvfs_steps::gluster_command(
        &[&["--mode=script", "--xml", "volume", "profile", volume], verb].concat(),
    )
    .timeout(PROFILE_TIMEOUT);
    let shown = command.to_string();
    let out = pvfs_host::run_while_busy(runner, &command, true)
        .await
        .map_err(|e| ProfileError::Failed(e.to_string()))?;
    let failed = |e: GlusterError| {
        let said = out.stderr.trim();
        ProfileError::Failed(if said.is_empty() {
            format!("{shown}: {e}")
        } else {
            format!("{shown}: {e}; {said}")
        })
    };
    match action {
        Action::Info => {
            let (_, bricks) = pvfs_metrics::gluster::parse_profile(&out.stdout).map_err(failed)?;
            Ok(Answer { done: format!("{shown}: {} bricks", bricks.len()), bricks, ..Answer::default() })
        }
        Action::Start | Action::Stop => match pvfs_metrics::gluster::parse_answer(&out.stdout) {
            Ok(()) => Ok(Answer { done: format!("{shown}: done"), ..Answer::default() }),
            // glusterd's own words for a profile already on (glusterd-op-sm.c).
            Err(GlusterError::Failed { message, .. })
                if action == Action::Start && message.contains("already started") =>
            {
                Ok(Answer { already_started: true, done: format!("{shown}: {message}"), ..Answer::default() })
            }
            Err(e) => Err(failed(e)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_host::RecordedRunner;

    fn testdata(name: &str) -> String {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../pvfs-metrics/testdata/gluster")
                .join(name),
        )
        .unwrap()
    }

    /// Each action is the one gluster command, its real answers read: a profile read, a start,
    /// one already started (kept on), a stop of one not started (an error, with glusterd's words).
    #[tokio::test]
    async fn a_profile_is_started_read_and_stopped_with_gluster() {
        let base = "gluster --mode=script --xml volume profile fx";
        let runner = RecordedRunner::new()
            .record(&format!("{base} info incremental"), 0, &testdata("profile-incremental-busy.xml"), "")
            .record(&format!("{base} start"), 0, &testdata("profile-start.xml"), "")
            // gluster exits 0 with its XML whatever glusterd answered: the answer says.
            .record(&format!("{base} start"), 0, &testdata("profile-start-already.xml"), "")
            .record(&format!("{base} stop"), 0, &testdata("profile-stop-not-started.xml"), "")
            .record(&format!("{base} info incremental"), 0, &testdata("profile-info-not-started.xml"), "");
        let policy = Policy::default();
        let info = profile(&runner, &policy, "fx", Action::Info).await.unwrap();
        let expected =
            pvfs_metrics::gluster::parse_profile(&testdata("profile-incremental-busy.xml")).unwrap().1;
        assert_eq!(info.bricks, expected);
        let started = profile(&runner, &policy, "fx", Action::Start).await.unwrap();
        assert!(!started.already_started, "{started:?}");
        let again = profile(&runner, &policy, "fx", Action::Start).await.unwrap();
        assert!(again.already_started, "{again:?}");
        let stop = profile(&runner, &policy, "fx", Action::Stop).await.unwrap_err();
        assert!(stop.to_string().contains("Profile on Volume fx is not started"), "{stop}");
        let unread = profile(&runner, &policy, "fx", Action::Info).await.unwrap_err();
        assert!(unread.to_string().contains("Profile on Volume fx is not started"), "{unread}");
        let none = RecordedRunner::new();
        assert!(matches!(
            profile(&none, &policy, "fx;reboot", Action::Start).await,
            Err(ProfileError::Refused(_))
        ));
        assert!(none.calls().is_empty());
    }
}
