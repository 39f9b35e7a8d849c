//! A systemd unit enabled (starts at boot) and running, and restarted once when a step of
//! the same unit changed a file it reads.
//!
//! A daemon reads its configuration when it starts: a changed `beegfs-meta.conf`, a new
//! `beegfs-mounts.conf` or LNet's module options mean nothing until the service restarts, and
//! `up` must not report a node converged while its daemons run with old settings. So a
//! service step names the files its unit reads (`configs`); [`crate::run_unit`] notes every
//! file the unit's earlier steps changed (`Step::configures`) and, when one of them is among
//! a running service's `configs`, this step restarts it — once, after all the unit's changes
//! to it, and only then. A service that is not running yet is simply started and reads the
//! new files. Plans show the restart where it would happen.

use crate::{Action, Assessment, NodeAccess, StepError};
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
    /// The files the unit reads at start: a change to one of them by an earlier step of the
    /// same unit restarts it.
    pub configs: Vec<String>,
}

impl Service {
    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        self.assess_after(host, &[]).await
    }

    /// The assessment when earlier steps of the unit changed `changed` (files): a running
    /// unit that reads one of them is restarted.
    pub(crate) async fn assess_after<R: Runner>(
        &self,
        host: &NodeAccess<R>,
        changed: &[String],
    ) -> Result<Assessment, StepError> {
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
            if (state == "not-found" || missing)
                && OPTIONAL_UNITS.contains(&self.unit.trim_end_matches(".service"))
            {
                return Ok(a);
            }
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
            // Through a set: a service reading many files after a long unit stays linear.
            let reads: std::collections::HashSet<&str> = self.configs.iter().map(String::as_str).collect();
            let stale: Vec<&str> = changed.iter().map(String::as_str).filter(|c| reads.contains(c)).collect();
            // "reloading" is running. systemd 219 answers "unknown" for a unit it has not
            // loaded; later ones "inactive".
            if !matches!(state, "active" | "reloading") {
                a.change(
                    format!("{} is {}", self.unit, if state.is_empty() { "not running" } else { state }),
                    Action::Run(Command::new("systemctl").args(["start", &self.unit]).timeout(START_TIMEOUT)),
                );
            } else if !stale.is_empty() {
                a.change(
                    format!("{} runs with its old settings: {} changed", self.unit, stale.join(", ")),
                    Action::Run(
                        Command::new("systemctl").args(["restart", &self.unit]).timeout(START_TIMEOUT),
                    ),
                );
            } else if let Some(newer) = self.changed_since_start(host).await? {
                // Read back, not remembered: a run that changed the file and then stopped
                // before this step (a later step failed, the agent was stopped) left the
                // daemon on its old settings, and the next run sees the file in sync.
                a.change(
                    format!("{} runs with its old settings: {newer} changed after it started", self.unit),
                    Action::Run(
                        Command::new("systemctl").args(["restart", &self.unit]).timeout(START_TIMEOUT),
                    ),
                );
            }
        }
        Ok(a)
    }
}

impl Service {
    /// The first of `configs` modified after the running unit entered the active state
    /// (`ActiveEnterTimestampMonotonic`, µs of CLOCK_MONOTONIC; systemd 219 on EL7 has it),
    /// comparing on the monotonic clock: file times are wall-clock, so they are moved onto it
    /// by the current offset between the two clocks on this node.
    async fn changed_since_start<R: Runner>(
        &self,
        host: &NodeAccess<R>,
    ) -> Result<Option<String>, StepError> {
        if self.configs.is_empty() {
            return Ok(None);
        }
        let show =
            Command::new("systemctl").args(["show", "--property=ActiveEnterTimestampMonotonic", &self.unit]);
        let shown = show.to_string();
        let out = host.probe_ok(show).await?;
        let started: u64 = out
            .lines()
            .find_map(|l| l.strip_prefix("ActiveEnterTimestampMonotonic="))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| StepError::Unexpected {
                command: shown,
                message: format!("{:?} has no ActiveEnterTimestampMonotonic=MICROSECONDS", out.trim()),
            })?;
        let Some(offset) = realtime_minus_monotonic_us() else { return Ok(None) };
        for config in &self.configs {
            let Ok(meta) = std::fs::metadata(host.root.path(config)) else { continue };
            let Ok(modified) = meta.modified() else { continue };
            let Ok(since_epoch) = modified.duration_since(std::time::UNIX_EPOCH) else { continue };
            let modified_mono = since_epoch.as_micros() as i128 - offset;
            if started > 0 && modified_mono > i128::from(started) {
                return Ok(Some(config.clone()));
            }
        }
        Ok(None)
    }
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC now, in µs.
fn realtime_minus_monotonic_us() -> Option<i128> {
    use nix::time::{ClockId, clock_gettime};
    let us =
        |t: nix::sys::time::TimeSpec| i128::from(t.tv_sec()) * 1_000_000 + i128::from(t.tv_nsec()) / 1000;
    let real = clock_gettime(ClockId::CLOCK_REALTIME).ok()?;
    let mono = clock_gettime(ClockId::CLOCK_MONOTONIC).ok()?;
    Some(us(real) - us(mono))
}

/// The current CLOCK_MONOTONIC in µs, for tests that record systemd's answers.
#[cfg(test)]
fn monotonic_now_us() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
    t.tv_sec() as u64 * 1_000_000 + t.tv_nsec() as u64 / 1000
}

impl fmt::Display for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match (self.enabled, self.running) {
            (true, true) => "enabled and running",
            (true, false) => "enabled",
            (false, true) => "running",
            (false, false) => "known",
        };
        write!(f, "service {} {what}", self.unit)?;
        if !self.configs.is_empty() {
            write!(f, ", restarted when {} changes", self.configs.join(" or "))?;
        }
        Ok(())
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
        let host = NodeAccess::new(Root::at(dir.path()), runner);
        let step = Service { unit: "glusterd".into(), enabled: true, running: true, configs: vec![] };
        let a = step.assess(&host).await.unwrap();
        assert_eq!(a.diff, ["glusterd is disabled", "glusterd is inactive"]);
        let shown: Vec<String> = a.actions.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["systemctl enable glusterd", "systemctl start glusterd"]);
    }

    /// A unit whose configuration an earlier step changed: a running daemon restarts once,
    /// at its service step; one that is not running just starts; no change, no restart.
    #[tokio::test]
    async fn a_changed_configuration_restarts_a_running_unit_once() {
        use crate::{ConfigKeys, Outcome, Step, StepEvent, Unguarded, run_unit};
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run/systemd/system")).unwrap();
        std::fs::create_dir_all(dir.path().join("etc/beegfs")).unwrap();
        let conf = dir.path().join("etc/beegfs/beegfs-meta.conf");
        std::fs::write(&conf, "sysMgmtdHost = 10.0.0.4\ntuneNumWorkers = 12\n").unwrap();
        // systemd 239 (EL8) answers for a running, enabled unit.
        let runner = RecordedRunner::new()
            .record("systemctl is-enabled beegfs-meta", 0, "enabled\n", "")
            .record("systemctl is-active beegfs-meta", 0, "active\n", "")
            .record("systemctl restart beegfs-meta", 0, "", "")
            // systemd 239's answer; the unit (re)started after every write of this test.
            .record(
                "systemctl show --property=ActiveEnterTimestampMonotonic beegfs-meta",
                0,
                &format!("ActiveEnterTimestampMonotonic={}\n", monotonic_now_us() + 3_600_000_000),
                "",
            );
        let host = NodeAccess::new(Root::at(dir.path()), runner.clone());
        let keys = |key: &str, value: &str| {
            Step::ConfigKeys(ConfigKeys {
                path: "/etc/beegfs/beegfs-meta.conf".into(),
                keys: vec![(key.into(), value.into())],
            })
        };
        let service = Step::Service(Service {
            unit: "beegfs-meta".into(),
            enabled: true,
            running: true,
            configs: vec!["/etc/beegfs/beegfs-meta.conf".into()],
        });
        let steps = [keys("tuneNumWorkers", "64"), keys("connMaxInternodeNum", "32"), service.clone()];
        let run = |dry_run: bool| {
            let (host, steps) = (&host, &steps);
            async move {
                let mut outcomes = Vec::new();
                run_unit(
                    steps,
                    host,
                    &Unguarded,
                    dry_run,
                    false,
                    |e| {
                        if let StepEvent::Done { outcome, .. } = e {
                            outcomes.push(outcome);
                        }
                    },
                    || true,
                )
                .await;
                outcomes
            }
        };
        let plan = run(true).await;
        let Outcome::WouldChange { diff, would_run } = &plan[2] else { panic!("{plan:?}") };
        assert_eq!(diff, &["beegfs-meta runs with its old settings: /etc/beegfs/beegfs-meta.conf changed"]);
        assert_eq!(would_run, &["systemctl restart beegfs-meta"]);
        let ran = run(false).await;
        assert!(matches!(ran[2], Outcome::Changed { .. }), "{ran:?}");
        let restarts = |r: &RecordedRunner| {
            r.calls().iter().filter(|c| c.as_str() == "systemctl restart beegfs-meta").count()
        };
        assert_eq!(restarts(&runner), 1, "two changes, one restart");
        // The same unit again: nothing changed, nothing restarts.
        let again = run(false).await;
        assert!(again.iter().all(|o| matches!(o, Outcome::Ok { .. })), "{again:?}");
        assert_eq!(restarts(&runner), 1);
        // Shown in plans.
        assert_eq!(
            service.to_string(),
            "service beegfs-meta enabled and running, restarted when /etc/beegfs/beegfs-meta.conf changes"
        );
    }

    /// A run that changed the configuration and stopped before the service step: the next
    /// run finds the file in sync but newer than the daemon, and restarts it.
    #[tokio::test]
    async fn a_daemon_older_than_its_configuration_is_restarted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run/systemd/system")).unwrap();
        std::fs::create_dir_all(dir.path().join("etc/beegfs")).unwrap();
        std::fs::write(dir.path().join("etc/beegfs/beegfs-client.conf"), "sysMgmtdHost = 10.0.0.4\n")
            .unwrap();
        let show = "systemctl show --property=ActiveEnterTimestampMonotonic beegfs-client";
        let step = Service {
            unit: "beegfs-client".into(),
            enabled: true,
            running: true,
            configs: vec!["/etc/beegfs/beegfs-client.conf".into(), "/etc/beegfs/beegfs-mounts.conf".into()],
        };
        // The unit entered the active state now; the file's time decides.
        let started = || {
            RecordedRunner::new()
                .record("systemctl is-enabled beegfs-client", 0, "enabled\n", "")
                .record("systemctl is-active beegfs-client", 0, "active\n", "")
                .record(show, 0, &format!("ActiveEnterTimestampMonotonic={}\n", monotonic_now_us()), "")
        };
        let touch = |when: std::time::SystemTime| {
            std::fs::File::options()
                .write(true)
                .open(dir.path().join("etc/beegfs/beegfs-client.conf"))
                .unwrap()
                .set_modified(when)
                .unwrap();
        };
        // Written after the daemon started (ten minutes from now, as a later run would).
        touch(std::time::SystemTime::now() + Duration::from_secs(600));
        let host = NodeAccess::new(Root::at(dir.path()), started());
        let a = step.assess(&host).await.unwrap();
        assert_eq!(
            a.diff,
            [
                "beegfs-client runs with its old settings: /etc/beegfs/beegfs-client.conf changed after it started"
            ]
        );
        assert_eq!(a.actions[0].to_string(), "systemctl restart beegfs-client");
        // Written a minute before it started: in sync.
        touch(std::time::SystemTime::now() - Duration::from_secs(60));
        let host = NodeAccess::new(Root::at(dir.path()), started());
        assert!(step.assess(&host).await.unwrap().is_in_sync());
        // systemd answering something else is named.
        let odd = RecordedRunner::new()
            .record("systemctl is-enabled beegfs-client", 0, "enabled\n", "")
            .record("systemctl is-active beegfs-client", 0, "active\n", "")
            .record(show, 0, "ActiveEnterTimestampMonotonic=n/a\n", "");
        let err = step.assess(&NodeAccess::new(Root::at(dir.path()), odd)).await.unwrap_err();
        assert!(matches!(err, StepError::Unexpected { .. }), "{err}");
    }

    #[tokio::test]
    async fn a_missing_unit_is_named_across_systemd_versions() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run/systemd/system")).unwrap();
        let step = Service { unit: "glusterd".into(), enabled: true, running: true, configs: vec![] };
        for (code, stdout, stderr) in [
            // systemd 215 (Debian 8, systemd/systemd#937) through 252 (recorded on Debian 12):
            // EL7's 219 and EL8's 239 print the same.
            (1, "", "Failed to get unit file state for glusterd.service: No such file or directory\n"),
            // systemd since it prints "not-found" and exits 4 (src/systemctl/systemctl-is-enabled.c).
            (4, "not-found\n", ""),
        ] {
            let runner = RecordedRunner::new().record("systemctl is-enabled glusterd", code, stdout, stderr);
            let host = NodeAccess::new(Root::at(dir.path()), runner);
            let err = step.assess(&host).await.unwrap_err();
            assert!(err.to_string().contains("there is no unit glusterd on this node"), "{err}");
        }
    }

    #[tokio::test]
    async fn every_documented_unit_file_state_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run/systemd/system")).unwrap();
        let step = Service { unit: "glusterd".into(), enabled: true, running: false, configs: vec![] };
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
            let host = NodeAccess::new(Root::at(dir.path()), runner);
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
        let host = NodeAccess::new(Root::at(dir.path()), runner);
        let err = step.assess(&host).await.unwrap_err();
        assert!(
            matches!(&err, StepError::Command { stderr, .. } if stderr.contains("Failed to connect to bus")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_missing_unit_or_missing_systemd_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let host = NodeAccess::new(Root::at(dir.path()), RecordedRunner::new());
        let step = Service { unit: "glusterd".into(), enabled: true, running: true, configs: vec![] };
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
        let host = NodeAccess::new(Root::at(dir.path()), runner);
        let err = step.assess(&host).await.unwrap_err();
        assert!(err.to_string().contains("is its package installed"), "{err}");
    }
}
