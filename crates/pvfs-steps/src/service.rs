//! A systemd unit enabled (starts at boot) and running.

use crate::{Action, Assessment, Host, StepError};
use pvfs_host::{Command, Runner};
use std::fmt;
use std::time::Duration;

/// Starting a file system daemon can take a while (glusterd reads its volumes at start).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// Units some distributions' packages ship and others do not; where the unit is absent there
/// is nothing to enable, and that is not an error. `glusterfsd.service` ("GlusterFS brick
/// processes (stopping only)": ExecStart=/bin/true, ExecStop kills the brick processes) comes
/// with the EL packages (glusterfs.spec installs it to %{_unitdir}); it must be enabled and
/// active for its ExecStop to run at shutdown, because glusterd.service stops only glusterd
/// (KillMode=process) and leaves the bricks to the final SIGKILL after the network is down,
/// where clients wait out their ping timeout. Debian's glusterfs-server ships no such unit.
const OPTIONAL_UNITS: &[&str] = &["glusterfsd"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    pub unit: String,
    pub enabled: bool,
    pub running: bool,
}

impl Service {
    pub(crate) async fn assess<R: Runner>(&self, host: &Host<R>) -> Result<Assessment, StepError> {
        if !host.root.is_dir("/run/systemd/system") {
            return Err(StepError::Refused {
                reason: format!(
                    "systemd is not running on this node (no /run/systemd/system), so {} cannot be enabled or \
                     started; pvfs manages services through systemd",
                    self.unit
                ),
            });
        }
        let mut a = Assessment::in_sync();
        if self.enabled {
            // "enabled", "static", "alias" and "indirect" all start at boot or on demand; a
            // unit that does not exist is exit 1 with "No such file or directory" on stderr.
            let out = host.probe(Command::new("systemctl").args(["is-enabled", &self.unit])).await?;
            let state = out.stdout.trim();
            if (out.stderr.contains("No such file") || state == "not-found")
                && OPTIONAL_UNITS.contains(&self.unit.trim_end_matches(".service"))
            {
                return Ok(a);
            }
            if out.stderr.contains("No such file") {
                return Err(StepError::Refused {
                    reason: format!("there is no unit {} on this node; is its package installed?", self.unit),
                });
            }
            if !matches!(state, "enabled" | "enabled-runtime" | "static" | "alias" | "indirect" | "generated")
            {
                a.change(
                    format!("{} is {}", self.unit, if state.is_empty() { "not enabled" } else { state }),
                    Action::Run(Command::new("systemctl").args(["enable", &self.unit])),
                );
            }
        }
        if self.running {
            let out = host.probe(Command::new("systemctl").args(["is-active", &self.unit])).await?;
            let state = out.stdout.trim();
            if state != "active" {
                a.change(
                    format!("{} is {}", self.unit, if state.is_empty() { "not running" } else { state }),
                    Action::Run(Command::new("systemctl").args(["start", &self.unit]).timeout(START_TIMEOUT)),
                );
            }
        }
        Ok(a)
    }
}

impl fmt::Display for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match (self.enabled, self.running) {
            (true, true) => "enabled and running",
            (true, false) => "enabled",
            (false, true) => "running",
            (false, false) => "known",
        };
        write!(f, "service {} {what}", self.unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_host::{RecordedRunner, Root};

    #[tokio::test]
    async fn enables_and_starts_what_is_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run/systemd/system")).unwrap();
        let runner = RecordedRunner::new()
            .record("systemctl is-enabled glusterd", 1, "disabled\n", "")
            .record("systemctl is-active glusterd", 3, "inactive\n", "");
        let host = Host::new(Root::at(dir.path()), runner);
        let step = Service { unit: "glusterd".into(), enabled: true, running: true };
        let a = step.assess(&host).await.unwrap();
        assert_eq!(a.diff, ["glusterd is disabled", "glusterd is inactive"]);
        let shown: Vec<String> = a.actions.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["systemctl enable glusterd", "systemctl start glusterd"]);
    }

    #[tokio::test]
    async fn a_missing_unit_or_missing_systemd_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::new(Root::at(dir.path()), RecordedRunner::new());
        let step = Service { unit: "glusterd".into(), enabled: true, running: true };
        let err = step.assess(&host).await.unwrap_err();
        assert!(err.to_string().contains("systemd is not running"), "{err}");

        std::fs::create_dir_all(dir.path().join("run/systemd/system")).unwrap();
        // Recorded with systemd 252.
        let runner = RecordedRunner::new().record(
            "systemctl is-enabled glusterd",
            1,
            "",
            "Failed to get unit file state for glusterd.service: No such file or directory\n",
        );
        let host = Host::new(Root::at(dir.path()), runner);
        let err = step.assess(&host).await.unwrap_err();
        assert!(err.to_string().contains("is its package installed"), "{err}");
    }
}
