//! `pvfsctl up CLUSTER.toml [--plan] [--json]`: converge every node to the cluster file, with
//! live progress and a recap; `--plan` shows what would change and changes nothing.

use crate::cli::UpCli;
use crate::shutdown::Shutdown;
use crate::{exit, output};
use pvfs_config::Cluster;
use pvfs_coord::Dialer;
use pvfs_coord::converge::{Options, UnitFailed, UpEvent, UpRecap};
use pvfs_coord::reboot::{Progress, Wait};
use pvfs_coord::recap::Counts;
use pvfs_steps::{Outcome, StepEvent};
use serde::Serialize;
use std::time::Duration;
use tokio::sync::mpsc;

pub(crate) async fn run(cli: UpCli) -> anyhow::Result<u8> {
    let UpCli { up: args, allow_reboot, reboot_timeout, .. } = cli;
    let mut cluster = pvfs_config::load(&args.cluster)?;
    let dialer = super::dialer(&cluster, &args.connect)?;
    // What lives beside the certificates (the cluster's MPI key) goes where `--tls-dir` says.
    cluster.tls_dir = super::tls_dir(&cluster, &args.connect);
    let view = View { json: args.json, plan: args.plan, verbose: args.verbose, down: false };
    // Ctrl-C (or SIGTERM) stops sending units and lets the ones under way finish; a second
    // one exits at once (the agents finish a step whose caller went away).
    let shutdown = Shutdown::on_signals()?;
    let options = Options {
        plan: args.plan,
        allow_reboot,
        reboot_wait: Wait { timeout: reboot_timeout, ..Wait::default() },
        stop: shutdown.token(),
        stop_between_steps: false,
    };
    converge(&cluster, &dialer, options, view).await
}

/// Plans `cluster`, runs (or only assesses) it, shows it as it goes; the exit code.
pub(crate) async fn converge(
    cluster: &Cluster,
    dialer: &Dialer,
    options: Options,
    view: View,
) -> anyhow::Result<u8> {
    let mut plan = pvfs_plan::plan(cluster);
    selinux_warnings(cluster, dialer).await;
    if cluster.bench.mpi_ssh {
        // Every client's known_hosts lists every client: one that cannot be asked stops `up`
        // here, named, before anything changes.
        let keys = pvfs_coord::mpi_ssh::keys(cluster, dialer).await?;
        pvfs_plan::add_mpi_ssh(cluster, &mut plan, &keys);
    }
    // The policies the cluster file gives the nodes (what bootstrap installs): what they
    // would refuse is said before anything runs, so that a refusal halfway through a run is
    // never the first word of it. The agents judge again by the policy each one has loaded.
    for refusal in pvfs_plan::policy_refusals(cluster, &plan) {
        output::note(&format!("{refusal} (the cluster file's [policy]: `pvfsctl bootstrap` installs it)"));
    }
    run_plan(cluster, plan, dialer, options, view).await
}

/// Warns, on stderr, about each node that enforces SELinux where its file system's
/// documentation says it should not (`pvfs_plan::selinux_warning`); pvfs changes nothing about
/// it. A node that cannot be asked is left to the run, which names it.
async fn selinux_warnings(cluster: &Cluster, dialer: &Dialer) {
    let survey = pvfs_coord::survey(cluster, dialer).await;
    for report in &survey.nodes {
        let (Ok(info), Some(node)) = (&report.result, cluster.node(&report.name)) else { continue };
        let enforcing = info.facts.selinux == pvfs_metrics::facts::Selinux::Enforcing;
        if let Some(warning) = pvfs_plan::selinux_warning(cluster, node, enforcing) {
            output::note(&format!("warning: {warning}"));
        }
    }
}

/// Runs (or only assesses) `plan` on `cluster`'s agents, showing it as it goes: `up`'s plan or
/// `down`'s, through the same converge path; the exit code.
pub(crate) async fn run_plan(
    cluster: &Cluster,
    plan: pvfs_plan::Plan,
    dialer: &Dialer,
    options: Options,
    mut view: View,
) -> anyhow::Result<u8> {
    let nodes = plan.units.iter().map(|u| u.node.as_str()).collect::<std::collections::BTreeSet<_>>().len();
    if !view.json {
        let what = match (view.plan, view.down) {
            (true, false) => "planning",
            (false, false) => "converging",
            (true, true) => "planning to take down",
            (false, true) => "taking down",
        };
        output::print(&format!(
            "{what} {} ({}, {} nodes): {} units, {} steps\n",
            cluster.name,
            cluster.kind,
            nodes,
            plan.units.len(),
            plan.units.iter().map(|u| u.steps.len()).sum::<usize>()
        ))?;
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let stop = options.stop.clone();
    let work = {
        let (cluster, plan, dialer) = (cluster.clone(), plan.clone(), dialer.clone());
        tokio::spawn(
            async move { pvfs_coord::converge::converge(&cluster, &plan, &dialer, &options, tx).await },
        )
    };
    super::show_until_done(&mut rx, &stop, "no new unit starts; the steps under way finish", |event| {
        view.show(event)
    })
    .await?;
    let recap = work.await?;
    view.recap(&recap)?;
    if recap.interrupted {
        return Ok(exit::INTERRUPTED);
    }
    // A node waiting for a reboot is not converged: scripts must not take it for done.
    Ok(if recap.converged() { exit::OK } else { exit::FAILURES })
}

/// Prints events as they come: a line per step that changes (or fails, or waits), with its
/// diff and commands; JSON lines with `--json`.
pub(crate) struct View {
    pub json: bool,
    pub plan: bool,
    pub verbose: bool,
    /// The plan is `down`'s: the recap says so.
    pub down: bool,
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

impl View {
    fn show(&mut self, event: &UpEvent) -> anyhow::Result<()> {
        if self.json {
            return output::json(&line_json(&UpLine::of(event))?);
        }
        let line = match event {
            UpEvent::UnitStarted { node, label, steps, .. } => format!("[{node}] {label}: {steps} steps\n"),
            UpEvent::UnitSkipped { node, label, reason, .. } => {
                format!("[{node}] {label}: skipped, {reason}\n")
            }
            UpEvent::UnitDone { node, label, result, elapsed, .. } => match result {
                Ok(()) => format!("[{node}] {label}: done in {:.1}s\n", elapsed.as_secs_f64()),
                Err(err) => format!("[{node}] {label}: FAILED after {:.1}s: {err}\n", elapsed.as_secs_f64()),
            },
            UpEvent::UnitStopped { node, label, kernel, running, elapsed, .. } => format!(
                "[{node}] {label}: STOPPED after {:.1}s: {node} must boot into kernel {kernel} (it runs {running})\n",
                elapsed.as_secs_f64()
            ),
            UpEvent::Reboot { node, kernel, progress } => match progress {
                Progress::Rebooting => format!("[{node}] rebooting into kernel {kernel}\n"),
                Progress::Waiting { elapsed, last } => {
                    format!("[{node}]   waiting for it to come back ({}s): {last}\n", elapsed.as_secs())
                }
                Progress::Back { elapsed } => {
                    format!(
                        "[{node}] back after {}s, running {kernel}; its unit runs again\n",
                        elapsed.as_secs()
                    )
                }
            },
            UpEvent::Step { node, step, event, .. } => match event {
                StepEvent::Started { .. } | StepEvent::Command { .. } => String::new(),
                StepEvent::Progress { index, detail } => {
                    format!("[{node}]   {:>2}. {step}: waiting: {detail}\n", index + 1)
                }
                StepEvent::Done { index, outcome, duration } => {
                    self.step_line(node, *index, step, outcome, *duration)
                }
            },
        };
        if !line.is_empty() {
            output::print(&line)?;
        }
        Ok(())
    }

    fn step_line(&self, node: &str, index: u32, step: &str, outcome: &Outcome, took: Duration) -> String {
        let head = format!("[{node}]   {:>2}. {step}", index + 1);
        let secs = if took >= Duration::from_millis(100) {
            format!(" ({:.1}s)", took.as_secs_f64())
        } else {
            String::new()
        };
        let mut out = match outcome {
            Outcome::Ok { detail } if self.verbose => {
                format!("{head}: ok{}{secs}\n", detail.as_ref().map(|d| format!(", {d}")).unwrap_or_default())
            }
            Outcome::Ok { .. } => String::new(),
            Outcome::Changed { diff } => {
                let mut s = format!("{head}: changed{secs}\n");
                for d in diff {
                    s += &format!("          - {d}\n");
                }
                s
            }
            Outcome::WouldChange { diff, would_run } => {
                let mut s = format!("{head}: would change\n");
                for d in diff {
                    s += &format!("          - {d}\n");
                }
                for cmd in would_run {
                    s += &format!("          $ {cmd}\n");
                }
                s
            }
            Outcome::Pending { detail } => format!("{head}: pending: {detail}\n"),
            Outcome::Skipped { reason } => format!("{head}: skipped ({reason})\n"),
            Outcome::MustBoot { kernel, running } => {
                format!(
                    "{head}: MUST BOOT into kernel {kernel} (it runs {running}); the node's units stop here\n"
                )
            }
            Outcome::Failed(f) => {
                // A refusal reads as one, in a plan too: a disk holding data is never "pending".
                let label = if f.refused { "REFUSED" } else { "FAILED" };
                let mut s = format!("{head}: {label}{secs}\n          {}\n", f.message);
                if let Some(cmd) = &f.command {
                    let code = f.code.map_or("none (signal or not run)".to_owned(), |c| c.to_string());
                    s += &format!("          command: {cmd}\n          exit code: {code}\n");
                }
                if !f.stderr_tail.is_empty() && !f.message.contains(&f.stderr_tail) {
                    for l in f.stderr_tail.lines() {
                        s += &format!("          | {l}\n");
                    }
                }
                s
            }
        };
        if self.plan && matches!(outcome, Outcome::Skipped { .. }) {
            out.clear();
        }
        out
    }

    fn recap(&self, up: &UpRecap) -> anyhow::Result<()> {
        if self.json {
            return output::json(&line_json(&UpLine::recap(up, self.plan, self.down))?);
        }
        let recap = &up.run;
        let width = recap.nodes.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        let mut text =
            format!("\n{} ({:.1}s)\n", if self.plan { "PLAN" } else { "RECAP" }, recap.elapsed.as_secs_f64());
        for (name, c) in &recap.nodes {
            text += &if self.plan {
                format!(
                    "{name:width$}  ok={} change={} pending={} failed={}\n",
                    c.ok, c.changed, c.pending, c.failed
                )
            } else {
                format!(
                    "{name:width$}  ok={} changed={} failed={} skipped={}\n",
                    c.ok, c.changed, c.failed, c.skipped
                )
            };
        }
        output::print(&text)?;
        for failure in &recap.failures {
            output::note(&format!("error: {failure}"));
        }
        for boot in &up.rebooted {
            output::note(&format!("rebooted {} into {} (it ran {})", boot.node, boot.kernel, boot.running));
        }
        for boot in &up.boots {
            output::note(&format!("next: {}", boot.next_step()));
        }
        if self.plan && !recap.failed() {
            let changes = recap.changed();
            output::note(&if changes == 0 && self.down {
                "nothing to change: the cluster is down".to_owned()
            } else if changes == 0 {
                "nothing to change: the cluster is as the file describes".to_owned()
            } else {
                format!("{changes} steps would change; run without --plan to apply them")
            });
        }
        Ok(())
    }
}

/// `value` as a JSON line with its keys sorted, the order `--json` has always printed (it was
/// built as a `serde_json::Value`, whose maps are sorted).
fn line_json(value: &impl Serialize) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(value)
}

/// One JSON line per event, and the recap, for scripts.
#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum UpLine<'a> {
    UnitStarted {
        unit: usize,
        node: &'a str,
        label: &'a str,
        steps: usize,
    },
    UnitSkipped {
        unit: usize,
        node: &'a str,
        label: &'a str,
        reason: &'a str,
    },
    UnitDone {
        unit: usize,
        node: &'a str,
        label: &'a str,
        ok: bool,
        error: Option<&'a UnitFailed>,
        elapsed_ms: u64,
    },
    UnitStopped {
        unit: usize,
        node: &'a str,
        label: &'a str,
        must_boot: &'a str,
        running: &'a str,
        elapsed_ms: u64,
    },
    Reboot {
        node: &'a str,
        kernel: &'a str,
        /// rebooting, waiting or back.
        stage: &'static str,
        elapsed_ms: Option<u64>,
        /// What the last poll found, while waiting.
        last: Option<&'a str>,
    },
    StepProgress {
        unit: usize,
        node: &'a str,
        index: u32,
        step: &'a str,
        kind: &'a str,
        detail: &'a str,
    },
    StepStarted {
        unit: usize,
        node: &'a str,
        index: u32,
        step: &'a str,
        kind: &'a str,
    },
    Command {
        unit: usize,
        node: &'a str,
        index: u32,
        command: &'a str,
        code: Option<i32>,
        duration_ms: u64,
    },
    StepDone {
        unit: usize,
        node: &'a str,
        index: u32,
        step: &'a str,
        kind: &'a str,
        duration_ms: u64,
        /// `status` and the outcome's own fields.
        #[serde(flatten)]
        status: StepStatus<'a>,
    },
    Recap {
        plan: bool,
        down: bool,
        nodes: Vec<CountsLine<'a>>,
        failures: &'a [String],
        boots: Vec<BootLine<'a>>,
        rebooted: Vec<RebootedLine<'a>>,
        elapsed_ms: u64,
    },
}

/// A step's outcome in its `step_done` line.
#[derive(Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum StepStatus<'a> {
    Ok {
        detail: Option<&'a str>,
    },
    Changed {
        diff: &'a [String],
    },
    WouldChange {
        diff: &'a [String],
        would_run: &'a [String],
    },
    Pending {
        detail: &'a str,
    },
    Skipped {
        detail: &'a str,
    },
    MustBoot {
        kernel: &'a str,
        running: &'a str,
    },
    Failed(FailureLine<'a>),
    /// A safety refusal (policy, or data the step would destroy): a failure of its own kind.
    Refused(FailureLine<'a>),
}

#[derive(Serialize)]
struct FailureLine<'a> {
    detail: &'a str,
    command: Option<&'a str>,
    code: Option<i32>,
    stderr_tail: &'a str,
}

#[derive(Serialize)]
struct CountsLine<'a> {
    name: &'a str,
    ok: usize,
    changed: usize,
    failed: usize,
    skipped: usize,
    pending: usize,
}

#[derive(Serialize)]
struct BootLine<'a> {
    node: &'a str,
    kernel: &'a str,
    running: &'a str,
    reboot_allowed: bool,
    next_step: String,
}

#[derive(Serialize)]
struct RebootedLine<'a> {
    node: &'a str,
    kernel: &'a str,
    was_running: &'a str,
}

impl<'a> UpLine<'a> {
    fn of(event: &'a UpEvent) -> UpLine<'a> {
        match event {
            UpEvent::UnitStarted { unit, node, label, steps } => {
                UpLine::UnitStarted { unit: *unit, node, label, steps: *steps }
            }
            UpEvent::UnitSkipped { unit, node, label, reason } => {
                UpLine::UnitSkipped { unit: *unit, node, label, reason }
            }
            UpEvent::UnitDone { unit, node, label, result, elapsed } => UpLine::UnitDone {
                unit: *unit,
                node,
                label,
                ok: result.is_ok(),
                error: result.as_ref().err(),
                elapsed_ms: ms(*elapsed),
            },
            UpEvent::UnitStopped { unit, node, label, kernel, running, elapsed } => UpLine::UnitStopped {
                unit: *unit,
                node,
                label,
                must_boot: kernel,
                running,
                elapsed_ms: ms(*elapsed),
            },
            UpEvent::Reboot { node, kernel, progress } => {
                let (stage, elapsed_ms, last) = match progress {
                    Progress::Rebooting => ("rebooting", None, None),
                    Progress::Waiting { elapsed, last } => {
                        ("waiting", Some(ms(*elapsed)), Some(last.as_str()))
                    }
                    Progress::Back { elapsed } => ("back", Some(ms(*elapsed)), None),
                };
                UpLine::Reboot { node, kernel, stage, elapsed_ms, last }
            }
            UpEvent::Step { unit, node, step, kind, event } => match event {
                StepEvent::Progress { index, detail } => {
                    UpLine::StepProgress { unit: *unit, node, index: *index, step, kind, detail }
                }
                StepEvent::Started { index } => {
                    UpLine::StepStarted { unit: *unit, node, index: *index, step, kind }
                }
                StepEvent::Command { index, record } => UpLine::Command {
                    unit: *unit,
                    node,
                    index: *index,
                    command: &record.command,
                    code: record.code,
                    duration_ms: ms(record.duration),
                },
                StepEvent::Done { index, outcome, duration } => UpLine::StepDone {
                    unit: *unit,
                    node,
                    index: *index,
                    step,
                    kind,
                    duration_ms: ms(*duration),
                    status: StepStatus::of(outcome),
                },
            },
        }
    }

    fn recap(up: &'a UpRecap, plan: bool, down: bool) -> UpLine<'a> {
        let recap = &up.run;
        UpLine::Recap {
            plan,
            down,
            nodes: recap
                .nodes
                .iter()
                .map(|(name, c): &'a (String, Counts)| CountsLine {
                    name,
                    ok: c.ok,
                    changed: c.changed,
                    failed: c.failed,
                    skipped: c.skipped,
                    pending: c.pending,
                })
                .collect(),
            failures: &recap.failures,
            boots: up
                .boots
                .iter()
                .map(|b| BootLine {
                    node: &b.node,
                    kernel: &b.kernel,
                    running: &b.running,
                    reboot_allowed: b.allowed,
                    next_step: b.next_step(),
                })
                .collect(),
            rebooted: up
                .rebooted
                .iter()
                .map(|b| RebootedLine { node: &b.node, kernel: &b.kernel, was_running: &b.running })
                .collect(),
            elapsed_ms: ms(recap.elapsed),
        }
    }
}

impl<'a> StepStatus<'a> {
    fn of(outcome: &'a Outcome) -> StepStatus<'a> {
        match outcome {
            Outcome::Ok { detail } => StepStatus::Ok { detail: detail.as_deref() },
            Outcome::Changed { diff } => StepStatus::Changed { diff },
            Outcome::WouldChange { diff, would_run } => StepStatus::WouldChange { diff, would_run },
            Outcome::Pending { detail } => StepStatus::Pending { detail },
            Outcome::Skipped { reason } => StepStatus::Skipped { detail: reason },
            Outcome::MustBoot { kernel, running } => StepStatus::MustBoot { kernel, running },
            Outcome::Failed(f) => {
                let line = FailureLine {
                    detail: &f.message,
                    command: f.command.as_deref(),
                    code: f.code,
                    stderr_tail: &f.stderr_tail,
                };
                if f.refused { StepStatus::Refused(line) } else { StepStatus::Failed(line) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_coord::converge::Boot;
    use pvfs_coord::recap::Recap;
    use pvfs_steps::{CommandRecord, Failure};

    /// Every line is what the `json!` literals they replaced printed, byte for byte.
    #[test]
    fn json_lines_are_the_old_bytes() {
        let d = Duration::from_millis(1234);
        let (unit, node, step, kind) = (3, "n1".to_owned(), "mkfs /dev/sdb".to_owned(), "mkfs");
        let failure = |refused: bool| Failure {
            message: "no".into(),
            command: refused.then(|| "mkfs.xfs /dev/sdb".into()),
            code: Some(1),
            stderr_tail: "tail".into(),
            refused,
        };
        let outcomes = [
            Outcome::Ok { detail: None },
            Outcome::Ok { detail: Some("fine".into()) },
            Outcome::Changed { diff: vec!["+a".into()] },
            Outcome::WouldChange { diff: vec!["+a".into()], would_run: vec!["x".into()] },
            Outcome::Pending { detail: "later".into() },
            Outcome::Skipped { reason: "why".into() },
            Outcome::MustBoot { kernel: "k2".into(), running: "k1".into() },
            Outcome::Failed(failure(false)),
            Outcome::Failed(failure(true)),
        ];
        let mut events: Vec<UpEvent> = outcomes
            .into_iter()
            .map(|outcome| UpEvent::Step {
                unit,
                node: node.clone(),
                step: step.clone(),
                kind,
                event: StepEvent::Done { index: 2, outcome, duration: d },
            })
            .collect();
        for event in [
            StepEvent::Started { index: 1 },
            StepEvent::Progress { index: 1, detail: "half".into() },
            StepEvent::Command {
                index: 1,
                record: CommandRecord { command: "true".into(), code: None, duration: d },
            },
        ] {
            events.push(UpEvent::Step { unit, node: node.clone(), step: step.clone(), kind, event });
        }
        events.extend([
            UpEvent::UnitStarted { unit, node: node.clone(), label: "disks".into(), steps: 4 },
            UpEvent::UnitSkipped { unit, node: node.clone(), label: "disks".into(), reason: "dep".into() },
            UpEvent::UnitDone { unit, node: node.clone(), label: "l".into(), result: Ok(()), elapsed: d },
            UpEvent::UnitDone {
                unit,
                node: node.clone(),
                label: "l".into(),
                result: Err(UnitFailed(vec!["bad".into()])),
                elapsed: d,
            },
            UpEvent::UnitStopped {
                unit,
                node: node.clone(),
                label: "l".into(),
                kernel: "k2".into(),
                running: "k1".into(),
                elapsed: d,
            },
            UpEvent::Reboot { node: node.clone(), kernel: "k2".into(), progress: Progress::Rebooting },
            UpEvent::Reboot {
                node: node.clone(),
                kernel: "k2".into(),
                progress: Progress::Waiting { elapsed: d, last: "down".into() },
            },
            UpEvent::Reboot {
                node: node.clone(),
                kernel: "k2".into(),
                progress: Progress::Back { elapsed: d },
            },
        ]);
        for event in &events {
            assert_eq!(
                line_json(&UpLine::of(event)).unwrap().to_string(),
                old::event_json(event).to_string()
            );
        }
        let boot = Boot { node: "n1".into(), kernel: "k2".into(), running: "k1".into(), allowed: false };
        let recap = UpRecap {
            run: Recap {
                nodes: vec![("n1".into(), Counts { ok: 1, changed: 2, failed: 3, skipped: 4, pending: 5 })],
                failures: vec!["f".into()],
                elapsed: d,
            },
            boots: vec![boot.clone()],
            rebooted: vec![boot],
            interrupted: false,
        };
        let view = View { json: true, plan: true, verbose: false, down: false };
        assert_eq!(
            line_json(&UpLine::recap(&recap, view.plan, view.down)).unwrap().to_string(),
            old::recap_json(&view, &recap).to_string()
        );
    }

    /// The `json!` builders as they were.
    mod old {
        use super::super::*;
        use serde_json::json;

        pub(super) fn recap_json(view: &View, recap: &UpRecap) -> serde_json::Value {
            let nodes: Vec<_> = recap.run.nodes.iter().map(|(name, c)| counts_json(name, c)).collect();
            let value = json!({
                "event": "recap",
                "plan": view.plan,
                "down": view.down,
                "nodes": nodes,
                "failures": recap.run.failures,
                "boots": recap.boots.iter().map(|b| json!({
                    "node": b.node, "kernel": b.kernel, "running": b.running, "reboot_allowed": b.allowed,
                    "next_step": b.next_step(),
                })).collect::<Vec<_>>(),
                "rebooted": recap.rebooted.iter().map(|b| json!({
                    "node": b.node, "kernel": b.kernel, "was_running": b.running,
                })).collect::<Vec<_>>(),
                "elapsed_ms": ms(recap.run.elapsed),
            });
            value
        }

        pub(super) fn counts_json(name: &str, c: &Counts) -> serde_json::Value {
            json!({"name": name, "ok": c.ok, "changed": c.changed, "failed": c.failed, "skipped": c.skipped, "pending": c.pending})
        }

        /// One JSON line per event, for scripts.
        pub(super) fn event_json(event: &UpEvent) -> serde_json::Value {
            match event {
                UpEvent::UnitStarted { unit, node, label, steps } => {
                    json!({"event": "unit_started", "unit": unit, "node": node, "label": label, "steps": steps})
                }
                UpEvent::UnitSkipped { unit, node, label, reason } => {
                    json!({"event": "unit_skipped", "unit": unit, "node": node, "label": label, "reason": reason})
                }
                UpEvent::UnitDone { unit, node, label, result, elapsed } => json!({
                    "event": "unit_done", "unit": unit, "node": node, "label": label,
                    "ok": result.is_ok(), "error": result.as_ref().err(), "elapsed_ms": ms(*elapsed),
                }),
                UpEvent::UnitStopped { unit, node, label, kernel, running, elapsed } => json!({
                    "event": "unit_stopped", "unit": unit, "node": node, "label": label,
                    "must_boot": kernel, "running": running, "elapsed_ms": ms(*elapsed),
                }),
                UpEvent::Reboot { node, kernel, progress } => {
                    let (stage, elapsed, last) = match progress {
                        Progress::Rebooting => ("rebooting", None, None),
                        Progress::Waiting { elapsed, last } => ("waiting", Some(ms(*elapsed)), Some(last)),
                        Progress::Back { elapsed } => ("back", Some(ms(*elapsed)), None),
                    };
                    json!({"event": "reboot", "node": node, "kernel": kernel, "stage": stage, "elapsed_ms": elapsed, "last": last})
                }
                UpEvent::Step { unit, node, step, kind, event } => match event {
                    StepEvent::Progress { index, detail } => json!({
                        "event": "step_progress", "unit": unit, "node": node, "index": index, "step": step,
                        "kind": kind, "detail": detail,
                    }),
                    StepEvent::Started { index } => {
                        json!({"event": "step_started", "unit": unit, "node": node, "index": index, "step": step, "kind": kind})
                    }
                    StepEvent::Command { index, record } => json!({
                        "event": "command", "unit": unit, "node": node, "index": index,
                        "command": record.command, "code": record.code, "duration_ms": ms(record.duration),
                    }),
                    StepEvent::Done { index, outcome, duration } => {
                        let mut v = json!({
                            "event": "step_done", "unit": unit, "node": node, "index": index, "step": step, "kind": kind,
                            "duration_ms": ms(*duration),
                        });
                        let (status, extra) = match outcome {
                            Outcome::Ok { detail } => ("ok", json!({"detail": detail})),
                            Outcome::Changed { diff } => ("changed", json!({"diff": diff})),
                            Outcome::WouldChange { diff, would_run } => {
                                ("would_change", json!({"diff": diff, "would_run": would_run}))
                            }
                            Outcome::Pending { detail } => ("pending", json!({"detail": detail})),
                            Outcome::Skipped { reason } => ("skipped", json!({"detail": reason})),
                            Outcome::MustBoot { kernel, running } => {
                                ("must_boot", json!({"kernel": kernel, "running": running}))
                            }
                            Outcome::Failed(f) => (
                                if f.refused { "refused" } else { "failed" },
                                json!({"detail": f.message, "command": f.command, "code": f.code, "stderr_tail": f.stderr_tail}),
                            ),
                        };
                        v["status"] = json!(status);
                        if let (Some(obj), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
                            obj.extend(extra.clone());
                        }
                        v
                    }
                },
            }
        }
    }
}
