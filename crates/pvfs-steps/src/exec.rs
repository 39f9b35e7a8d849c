//! Running one step: assess, then (unless dry) apply and verify; gates probe until they hold.

use crate::{Action, Assessment, Guard, MadeDevices, NodeAccess, Step, StepError};
use pvfs_host::kmsg::KernelLog;
use pvfs_host::{Command, Runner};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// How one step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// In sync already, or a gate that holds (`detail` says what it saw).
    Ok {
        detail: Option<String>,
    },
    /// Apply changed the node; `diff` is what was different before.
    Changed {
        diff: Vec<String>,
    },
    /// Dry run: what differs, and exactly what apply would run.
    WouldChange {
        diff: Vec<String>,
        would_run: Vec<String>,
    },
    /// Dry run: a gate that does not hold yet (a readiness wait the run would wait on), or a
    /// step that cannot be assessed before earlier changes are made.
    Pending {
        detail: String,
    },
    Failed(Failure),
    /// The node must boot into `kernel` (installed; it runs `running`) before the rest of the
    /// unit can run: neither done nor failed. The unit stops here; rebooting is the operator's
    /// call (or the coordinator's, with `--allow-reboot`), then `up` carries on.
    MustBoot {
        kernel: String,
        running: String,
    },
    /// Not run, because an earlier step of the unit failed (or the unit's dependencies did).
    Skipped {
        reason: String,
    },
}

impl Outcome {
    pub fn failed(&self) -> bool {
        matches!(self, Outcome::Failed(_))
    }
}

/// A failed step, as the coordinator reports it: what, which command, its exit code and the
/// tail of its stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub message: String,
    pub command: Option<String>,
    pub code: Option<i32>,
    pub stderr_tail: String,
    /// A safety refusal ([`StepError::is_refusal`]): shown as a refusal wherever it is shown,
    /// and never relabeled pending in a dry run.
    pub refused: bool,
}

impl From<StepError> for Failure {
    fn from(err: StepError) -> Failure {
        let (code, stderr_tail) = match &err {
            StepError::Command { code, stderr, .. } => (*code, stderr.clone()),
            _ => (None, String::new()),
        };
        Failure {
            command: err.command().map(str::to_owned),
            message: err.to_string(),
            code,
            stderr_tail,
            refused: err.is_refusal(),
        }
    }
}

/// What an agent reports while it converges, in order: each step starts, its commands finish,
/// it is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepEvent {
    Started {
        index: u32,
    },
    /// A gate still waiting, and what it saw last (sent when that changes).
    Progress {
        index: u32,
        detail: String,
    },
    Command {
        index: u32,
        record: CommandRecord,
    },
    Done {
        index: u32,
        outcome: Outcome,
        duration: Duration,
    },
}

/// A command apply ran, for the live event stream and the record of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRecord {
    pub command: String,
    pub code: Option<i32>,
    pub duration: Duration,
}

/// Runs `step` on `host`, if `policy` (the agent's, a [`Guard`]) allows it. With `dry_run`
/// nothing is changed: the assessment is reported as [`Outcome::WouldChange`], gates are
/// probed once. `on_command` hears of every command apply runs, as it finishes.
pub async fn execute<R: Runner>(
    step: &Step,
    host: &NodeAccess<R>,
    policy: &dyn Guard,
    dry_run: bool,
    on_command: impl FnMut(&CommandRecord) + Send,
) -> Outcome {
    execute_while(step, host, policy, Earlier::default(), dry_run, on_command, &mut |_| {}, &|| true).await
}

/// What the steps before this one in its unit did, as far as this one cares.
#[derive(Debug, Clone, Copy, Default)]
struct Earlier<'a> {
    /// The devices they create, which the site's device list allows for this step.
    made: &'a [String],
    /// The files they changed (or would change): a service step restarts its unit when it
    /// reads one.
    changed: &'a [String],
}

/// [`execute`] as a step of a unit whose caller may go away, after `earlier` steps. A gate stops
/// waiting once `keep_going` says no (it changes nothing, so nothing is left half-done);
/// actions are not interrupted.
// Each argument is one thing the caller decides (what, where, under which rules, what it made,
// dry or not, who hears of commands and progress, and when to stop); a struct would only name
// them again.
#[allow(clippy::too_many_arguments)]
async fn execute_while<R: Runner>(
    step: &Step,
    host: &NodeAccess<R>,
    policy: &dyn Guard,
    earlier: Earlier<'_>,
    dry_run: bool,
    mut on_command: impl FnMut(&CommandRecord) + Send,
    on_progress: &mut (dyn FnMut(&str) + Send),
    keep_going: &(dyn Fn() -> bool + Sync),
) -> Outcome {
    // Checked again here although the agent checked the unit on arrival: earlier steps may
    // have changed the node (a package that installs a symbolic link), and `execute` has
    // other callers than the agent's Apply.
    if let Err(err) = policy.check_step_on(step, &host.root, earlier.made) {
        return Outcome::Failed(StepError::from(err).into());
    }
    if let Step::Gate(gate) = step {
        return if dry_run {
            match gate.probe(host).await {
                Ok(crate::gate::GateState::Ready(detail)) => Outcome::Ok { detail: Some(detail) },
                Ok(crate::gate::GateState::NotReady(detail)) => Outcome::Pending { detail },
                Err(err) => Outcome::Failed(err.into()),
            }
        } else {
            match gate.wait(host, keep_going, on_progress).await {
                Ok(crate::gate::Waited::Ready(detail)) => Outcome::Ok { detail: Some(detail) },
                Ok(crate::gate::Waited::Abandoned { after, last }) => Outcome::Failed(Failure {
                    message: format!(
                        "stopped waiting after {}s: the coordinator went away or the agent is stopping (last seen: {last})",
                        after.as_secs()
                    ),
                    command: None,
                    code: None,
                    stderr_tail: String::new(),
                    refused: false,
                }),
                Err(err) => Outcome::Failed(err.into()),
            }
        };
    }
    let assessment = match step {
        Step::Service(service) => service.assess_after(host, earlier.changed).await,
        _ => step.assess(host).await,
    };
    let assessment = match assessment {
        Ok(a) => a,
        Err(err) => return outcome_of(err),
    };
    if assessment.is_in_sync() {
        return Outcome::Ok { detail: assessment.note };
    }
    if dry_run {
        let would_run = assessment.actions.iter().map(ToString::to_string).collect();
        return Outcome::WouldChange { diff: assessment.diff, would_run };
    }
    let Assessment { diff, actions, .. } = assessment;
    // A Lustre mount that fails says why only in the kernel's log: watched from here, so
    // what was logged before this step is never shown as its cause.
    let mut kernel_log = match step {
        Step::Mount(mount) if mount.fstype == "lustre" => Some(KernelLog::watch(&host.root)),
        _ => None,
    };
    for action in &actions {
        // The backstop: a bug in an assessment cannot become a write outside the policy.
        if let Err(err) = policy.check_action_on(step.kind(), action, &host.root) {
            return Outcome::Failed(StepError::from(err).into());
        }
        if let Err(err) = perform(action, host, &mut on_command).await {
            let err = match kernel_log.as_mut() {
                Some(log) => crate::lustre_log::explain_failure(err, log),
                None => err,
            };
            return Outcome::Failed(err.into());
        }
    }
    // Verify: the node must now be what the step says. A tool that exits 0 without doing its
    // job (mount.glusterfs without CAP_SYS_ADMIN) is caught here. (A restart it just did is
    // not asked for again: the files changed before it.)
    match step.assess(host).await {
        Ok(after) if after.is_in_sync() => Outcome::Changed { diff },
        Ok(after) => Outcome::Failed(StepError::NotConverged { diff: after.diff }.into()),
        Err(err) => outcome_of(err),
    }
}

/// A step's error as its outcome: a kernel to boot into is its own outcome, not a failure.
fn outcome_of(err: StepError) -> Outcome {
    match err {
        StepError::MustBoot { kernel, running } => Outcome::MustBoot { kernel, running },
        err => Outcome::Failed(err.into()),
    }
}

/// Carries out one action.
pub(crate) async fn perform<R: Runner>(
    action: &Action,
    host: &NodeAccess<R>,
    on_command: &mut (impl FnMut(&CommandRecord) + Send),
) -> Result<(), StepError> {
    let file_err =
        |err: pvfs_host::RootError| StepError::File { path: err.path, message: err.source.to_string() };
    match action {
        Action::Run(command) => run(command, host, on_command).await.map(drop),
        Action::Destroy { command, devices } => {
            let claims = crate::block::reprove(host, devices).await?;
            // Released right before the command: the tool claims the device O_EXCL itself
            // and would fail while pvfs holds it (see `block::reprove`).
            drop(claims);
            run(command, host, on_command).await.map(drop)
        }
        Action::Write { path, contents, mode } => {
            host.root.write_atomic(path, contents.as_bytes(), *mode).map_err(file_err)
        }
        Action::Mkdir { path, mode } => host.root.create_dir_all(path, *mode).map_err(file_err),
        Action::Remove { path } => host.root.remove_file(path).map_err(file_err),
        Action::Zero { device } => {
            let started = Instant::now();
            let zeroed = pvfs_host::device::zero(&host.root, &device.path, device.dev);
            on_command(&CommandRecord {
                command: action.to_string(),
                code: Some(if zeroed.is_ok() { 0 } else { 1 }),
                duration: started.elapsed(),
            });
            zeroed
                .map(drop)
                .map_err(|err| StepError::Refused { reason: format!("did not zero {}: {err}", device.path) })
        }
        Action::Attribute { path, value } => host.root.write_attribute(path, value).map_err(file_err),
        Action::PersistMdadm { device, conf } => {
            let brief = Command::new("mdadm").args(["--detail", "--brief", device]);
            let line = run(&brief, host, on_command).await?;
            let line = line.lines().find(|l| l.starts_with("ARRAY ")).ok_or_else(|| {
                StepError::Unexpected { command: brief.to_string(), message: "no ARRAY line".into() }
            })?;
            let old = host.read_optional(conf)?.unwrap_or_default();
            let contents = crate::block::mdadm_conf_with(&old, device, line);
            if let Some(dir) = conf.rsplit_once('/').map(|(d, _)| d).filter(|d| !d.is_empty()) {
                host.root.create_dir_all(dir, 0o755).map_err(file_err)?;
            }
            host.root.write_atomic(conf, contents.as_bytes(), 0o644).map_err(file_err)?;
            // Debian assembles arrays from the initramfs copy of mdadm.conf; without this the
            // array can come back as md127 after a reboot. Distributions without
            // update-initramfs (dracut) read /etc/mdadm.conf at boot.
            if host.root.exists("/usr/sbin/update-initramfs") {
                let update = Command::new("update-initramfs").arg("-u").timeout(Duration::from_secs(300));
                run(&update, host, on_command).await?;
            }
            Ok(())
        }
    }
}

/// Runs a command of an action, which must succeed; returns its stdout.
///
/// As an action ([`Runner::run_action`]): once started it runs to its end whatever happens to
/// the agent or the caller, and one past its limit is reported as still running, never killed.
async fn run<R: Runner>(
    command: &Command,
    host: &NodeAccess<R>,
    on_command: &mut (impl FnMut(&CommandRecord) + Send),
) -> Result<String, StepError> {
    let started = Instant::now();
    let out = pvfs_host::run_while_busy(&host.runner, command, true).await;
    let shown = command.to_string();
    let code = out.as_ref().ok().and_then(|o| o.code);
    on_command(&CommandRecord { command: shown.clone(), code, duration: started.elapsed() });
    let out = out.map_err(|err| StepError::Run { message: err.to_string() })?;
    if out.success() {
        Ok(out.stdout)
    } else {
        Err(StepError::Command {
            command: shown,
            code: out.code,
            stderr: crate::error_tail(&out),
            hint: None,
        })
    }
}

/// Runs a unit's steps in order on `host`, telling `emit` what happens.
///
/// `policy` is checked for the whole unit first: a refused step fails (with the rule) before
/// anything runs, and every other step is reported skipped. The first failure skips the rest. In a dry run (`dry_run`), a step that cannot be assessed
/// after an earlier step would have changed something (or when `after_changes` says steps on
/// other nodes would) is reported as pending with the reason, not as failed: the device an
/// earlier step creates does not exist yet. A safety refusal is never relabeled so: it is
/// about what the node holds now. `keep_going` is asked before each step and between
/// a gate's probes; when it says no (the coordinator went away, the agent is stopping), a gate
/// stops waiting and no further step starts. A step that acts runs to its end.
pub async fn run_unit<R: Runner>(
    steps: &[Step],
    host: &NodeAccess<R>,
    policy: &dyn Guard,
    dry_run: bool,
    after_changes: bool,
    mut emit: impl FnMut(StepEvent) + Send,
    keep_going: impl Fn() -> bool + Send + Sync,
) -> UnitSummary {
    let mut summary = UnitSummary::default();
    if let Err(refused) = policy.check_unit_on(steps, &host.root) {
        for index in 0..steps.len() {
            let outcome = if index == refused.index {
                summary.failed += 1;
                Outcome::Failed(StepError::from(refused.error.clone()).into())
            } else {
                summary.skipped += 1;
                let reason = format!(
                    "step {} of the unit was refused by the agent's policy; nothing ran",
                    refused.index + 1
                );
                Outcome::Skipped { reason }
            };
            emit(StepEvent::Done { index: index as u32, outcome, duration: Duration::ZERO });
        }
        return summary;
    }
    let made = MadeDevices::of(steps);
    // Files the unit's steps changed (or, in a dry run, would change), for the services that
    // read them: each is restarted once, at its own step, after all of them.
    let mut changed: Vec<String> = Vec::new();
    // The same files as a set: whether one is already listed, in constant time.
    let mut changed_set: HashSet<String> = HashSet::new();
    let mut uncertain = after_changes;
    let mut failed_at: Option<usize> = None;
    // Set when a step says the node must boot into another kernel: what follows is skipped.
    let mut boot: Option<String> = None;
    for (i, step) in steps.iter().enumerate() {
        let index = i as u32;
        if let Some(kernel) = &boot {
            let reason = format!("the node must boot into kernel {kernel} first");
            emit(StepEvent::Done { index, outcome: Outcome::Skipped { reason }, duration: Duration::ZERO });
            summary.skipped += 1;
            continue;
        }
        if let Some(at) = failed_at {
            let reason = format!("step {} ({}) failed", at + 1, steps[at]);
            emit(StepEvent::Done { index, outcome: Outcome::Skipped { reason }, duration: Duration::ZERO });
            summary.skipped += 1;
            continue;
        }
        if !keep_going() {
            // A failure, not a skip: the unit is unfinished, and a coordinator still listening
            // (the agent is stopping) must not count it as done and go on to its dependents.
            let failure = Failure {
                message: "not started: the agent is stopping, or the coordinator went away; \
                          run `up` again to carry on from here"
                    .to_owned(),
                command: None,
                code: None,
                stderr_tail: String::new(),
                refused: false,
            };
            emit(StepEvent::Done { index, outcome: Outcome::Failed(failure), duration: Duration::ZERO });
            summary.failed += 1;
            failed_at = Some(i);
            continue;
        }
        // Steps do their file work synchronously: give the worker thread back between them,
        // so that a unit of thousands of steps never holds it (the agent's sampler and its
        // other callers share two worker threads).
        tokio::task::yield_now().await;
        emit(StepEvent::Started { index });
        let started = Instant::now();
        let mut commands = Vec::new();
        let mut outcome = execute_while(
            step,
            host,
            policy,
            Earlier { made: made.before(i), changed: &changed },
            dry_run,
            |record| commands.push(record.clone()),
            &mut |detail: &str| emit(StepEvent::Progress { index, detail: detail.to_owned() }),
            &keep_going,
        )
        .await;
        for record in commands {
            emit(StepEvent::Command { index, record });
        }
        // A refusal stands whatever comes before it: what it refuses (a disk holding data, a
        // mount point with files) is on the node now, not something an earlier step makes.
        if dry_run
            && uncertain
            && let Outcome::Failed(failure) = &outcome
            && !failure.refused
        {
            outcome =
                Outcome::Pending { detail: format!("depends on the changes before it: {}", failure.message) };
        }
        if matches!(outcome, Outcome::Changed { .. } | Outcome::WouldChange { .. }) {
            for file in step.configures() {
                if changed_set.insert(file.clone()) {
                    changed.push(file);
                }
            }
        }
        if let Step::Service(service) = step {
            // Restarted (or started) now: later changes would need another restart. Through a
            // set of the service's files, so a long unit stays linear.
            let reads: HashSet<&str> = service.configs.iter().map(String::as_str).collect();
            changed.retain(|f| !reads.contains(f.as_str()));
            changed_set.retain(|f| !reads.contains(f.as_str()));
        }
        match &outcome {
            Outcome::Ok { .. } => summary.ok += 1,
            Outcome::Changed { .. } => summary.changed += 1,
            Outcome::WouldChange { .. } => {
                summary.changed += 1;
                uncertain = true;
            }
            Outcome::Pending { .. } => {
                summary.pending += 1;
                uncertain = true;
            }
            Outcome::Failed(_) => {
                summary.failed += 1;
                failed_at = Some(i);
            }
            Outcome::Skipped { .. } => summary.skipped += 1,
            Outcome::MustBoot { kernel, .. } => {
                summary.must_boot = Some(kernel.clone());
                boot = Some(kernel.clone());
            }
        }
        emit(StepEvent::Done { index, outcome, duration: started.elapsed() });
    }
    summary
}

/// Counts of a unit's outcomes (a dry run counts would-change as changed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitSummary {
    pub ok: usize,
    pub changed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub pending: usize,
    /// The kernel the node must boot into before the unit can go on (it stopped there).
    pub must_boot: Option<String>,
}
