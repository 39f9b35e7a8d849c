//! A systemd unit enabled (starts at boot) and running.

use crate::{Action, Assessment, Host, StepError};
use pvfs_host::{Command, Runner};
use std::fmt;
use std::time::Duration;

/// Starting a file system daemon can take a while (glusterd reads its volumes at start).
const START_TIMEOUT: Duration = Duration::from_secs(120);

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
            let command = Command::new("systemctl").args(["is-enabled", &self.unit]);
            let shown = command.to_string();
            let out = host.probe(command).await?;
            let state = out.stdout.lines().next().unwrap_or_default().trim();
            // A unit that does not exist: systemd up to 25x says so on stderr and exits 1
            // ("Failed to get unit file state for X.service: No such file or directory", EL7's
            // 219 and EL8's 239 alike); later ones print "not-found" and exit 4.
            let missing = out.stderr.lines().any(|l| {
                l.starts_with("Failed to get unit file state for") && l.ends_with("No such file or directory")
            });
            if state == "not-found" || missing {
                return Err(StepError::Refused {
                    reason: format!("there is no unit {} on this node; is its package installed?", self.unit),
                });
            }
            match state {
                // The states systemd itself counts as enabled (systemctl-is-enabled.c).
                "enabled" | "enabled-runtime" | "static" | "alias" | "indirect" | "generated" => {}
                "masked" | "masked-runtime" => {
                    return Err(StepError::Refused {
                        reason: format!(
                            "{} is masked on this node, so it can be neither enabled nor started; if it should \
                             run, `systemctl unmask {}` by hand",
                            self.unit, self.unit
                        ),
                    });
                }
                "disabled" | "linked" | "linked-runtime" | "transient" | "bad" => a.change(
                    format!("{} is {state}", self.unit),
                    Action::Run(Command::new("systemctl").args(["enable", &self.unit])),
                ),
                // Nothing pvfs can read (no bus: "Failed to connect to bus"): the tool's own words.
                "" if !out.success() => {
                    return Err(StepError::Command {
                        command: shown,
                        code: out.code,
                        stderr: crate::error_tail(&out),
                        hint: None,
                    });
                }
                other => {
                    return Err(StepError::Unexpected {
                        command: shown,
                        message: format!("unit file state {other:?} is none systemctl(1) documents"),
                    });
                }
            }
        }
        if self.running {
            let out = host.probe(Command::new("systemctl").args(["is-active", &self.unit])).await?;
            let state = out.stdout.lines().next().unwrap_or_default().trim();
            // "reloading" is running. systemd 219 answers "unknown" for a unit it has not
            // loaded; later ones "inactive".
            if !matches!(state, "active" | "reloading") {
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
    async fn a_missing_unit_is_named_across_systemd_versions() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run/systemd/system")).unwrap();
        let step = Service { unit: "glusterd".into(), enabled: true, running: true };
        for (code, stdout, stderr) in [
            // systemd 215 (Debian 8, systemd/systemd#937) through 252 (recorded on Debian 12):
            // EL7's 219 and EL8's 239 print the same.
            (1, "", "Failed to get unit file state for glusterd.service: No such file or directory\n"),
            // systemd since it prints "not-found" and exits 4 (src/systemctl/systemctl-is-enabled.c).
            (4, "not-found\n", ""),
        ] {
            let runner = RecordedRunner::new().record("systemctl is-enabled glusterd", code, stdout, stderr);
            let host = Host::new(Root::at(dir.path()), runner);
            let err = step.assess(&host).await.unwrap_err();
            assert!(err.to_string().contains("there is no unit glusterd on this node"), "{err}");
        }
    }

    #[tokio::test]
    async fn every_documented_unit_file_state_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run/systemd/system")).unwrap();
        let step = Service { unit: "glusterd".into(), enabled: true, running: false };
        // systemctl(1), is-enabled: exit 0 for the enabled states, non-zero for the others.
        for (state, code, want) in [
            ("enabled", 0, "ok"),
            ("enabled-runtime", 0, "ok"),
            ("static", 0, "ok"),
            ("indirect", 0, "ok"),
            ("alias", 0, "ok"),
            ("generated", 0, "ok"),
            ("disabled", 1, "enable"),
            ("linked", 1, "enable"),
            ("masked", 1, "refused"),
            ("masked-runtime", 1, "refused"),
            ("frobnicated", 1, "unexpected"),
        ] {
            let runner = RecordedRunner::new().record(
                "systemctl is-enabled glusterd",
                code,
                &format!("{state}\n"),
                "",
            );
            let host = Host::new(Root::at(dir.path()), runner);
            match (step.assess(&host).await, want) {
                (Ok(a), "ok") => assert!(a.is_in_sync(), "{state}"),
                (Ok(a), "enable") => assert_eq!(a.diff, [format!("glusterd is {state}")]),
                (Err(StepError::Refused { reason }), "refused") => {
                    assert!(reason.contains("systemctl unmask glusterd"), "{reason}")
                }
                (Err(StepError::Unexpected { command, .. }), "unexpected") => {
                    assert_eq!(command, "systemctl is-enabled glusterd")
                }
                (other, _) => panic!("{state}: {other:?}"),
            }
        }
        // No bus to ask: the tool's own message, not "disabled".
        let runner = RecordedRunner::new().record(
            "systemctl is-enabled glusterd",
            1,
            "",
            "Failed to connect to bus: No such file or directory\n",
        );
        let host = Host::new(Root::at(dir.path()), runner);
        let err = step.assess(&host).await.unwrap_err();
        assert!(
            matches!(&err, StepError::Command { stderr, .. } if stderr.contains("Failed to connect to bus")),
            "{err}"
        );
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
