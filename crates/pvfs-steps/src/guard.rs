//! What the step runner asks before it acts, and the refusals it can be answered with.
//!
//! [`run_unit`](crate::run_unit) and [`execute`](crate::execute) ask a [`Guard`] about the
//! whole unit before anything runs, about every step before it is assessed and about every
//! action before it is performed, so that a bug in a step's assessment cannot become a write
//! outside what the node allows. The one guard that ships is the agent's authorization
//! policy, `pvfs_policy::Policy`; this crate knows no rule of it, so the rules live in one
//! crate and the dependency points one way (the policy judges steps, the runner only asks).
//!
//! A refusal is a [`PolicyError`]: a short, stable rule id, the value and what to do. Steps
//! themselves refuse with one too where the rule needs what the node holds (a mount onto a
//! directory with files in it: `mount-target`).

use crate::{Action, Step};
use pvfs_host::Root;

/// Judges steps and actions before the runner touches the node. `Sync`: the runner holds it
/// across its awaits, on whichever thread the unit's task runs.
pub trait Guard: Sync {
    /// Every step of a unit, in order, with the node's checks: the first refusal, naming
    /// the step. Asked once, before anything runs.
    fn check_unit_on(&self, steps: &[Step], root: &Root) -> Result<(), StepRefused>;

    /// One step, with the node's checks, just before it is assessed. `made` lists the devices
    /// earlier steps of the same unit create ([`MadeDevices`]).
    fn check_step_on(&self, step: &Step, root: &Root, made: &[String]) -> Result<(), PolicyError>;

    /// One action of a step of kind `step_kind`, just before it is performed: the backstop.
    fn check_action_on(&self, step_kind: &str, action: &Action, root: &Root) -> Result<(), PolicyError>;
}

/// A refusal: which rule, the value it refused, and what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused by policy rule `{rule}`: {problem}; {fix}")]
pub struct PolicyError {
    /// A short, stable id (`file-mode`, `repo-url`, …) that tests, logs and docs can name.
    pub rule: &'static str,
    /// The offending value, as given.
    pub value: String,
    /// What is wrong with it, in a sentence that names the value.
    pub problem: String,
    /// What to do about it.
    pub fix: String,
}

impl PolicyError {
    pub fn new(
        rule: &'static str,
        value: &str,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> PolicyError {
        PolicyError { rule, value: value.to_owned(), problem: problem.into(), fix: fix.into() }
    }
}

/// A unit refused because of one of its steps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("step {} ({step}) of the unit: {error}", index + 1)]
pub struct StepRefused {
    /// 0-based, as in the wire's events.
    pub index: usize,
    /// The step as plans show it.
    pub step: String,
    pub error: PolicyError,
}

/// The devices a unit's steps make (arrays, thin volumes), in order: the devices made before
/// step `i` are [`MadeDevices::before`]`(i)`. A guard that limits which devices a step may
/// consume lets a step use what an earlier step of its unit made.
///
/// One list and a count per step, not a list per step: a unit of many such steps would
/// otherwise hold a copy of every earlier device for each step (quadratic memory).
#[derive(Debug, Clone, Default)]
pub struct MadeDevices {
    devices: Vec<String>,
    /// For each step, how many of `devices` the steps before it made.
    made_before: Vec<usize>,
}

impl MadeDevices {
    pub fn of(steps: &[Step]) -> MadeDevices {
        let mut made = MadeDevices { devices: Vec::new(), made_before: Vec::with_capacity(steps.len()) };
        for step in steps {
            made.made_before.push(made.devices.len());
            match step {
                Step::Raid0(r) => made.devices.push(r.device.clone()),
                Step::LvmThin(l) => made.devices.push(l.device()),
                _ => {}
            }
        }
        made
    }

    /// The devices the steps before step `index` make.
    pub fn before(&self, index: usize) -> &[String] {
        let count = self.made_before.get(index).copied().unwrap_or(self.devices.len());
        &self.devices[..count]
    }
}

/// A guard that allows everything, for the step tests: they are about what steps do on a
/// node; the policy's own tests (`pvfs-policy`) and the plan scenarios (`pvfs-plan`) run
/// steps under the real policy.
#[cfg(test)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Unguarded;

#[cfg(test)]
impl Guard for Unguarded {
    fn check_unit_on(&self, _: &[Step], _: &Root) -> Result<(), StepRefused> {
        Ok(())
    }

    fn check_step_on(&self, _: &Step, _: &Root, _: &[String]) -> Result<(), PolicyError> {
        Ok(())
    }

    fn check_action_on(&self, _: &str, _: &Action, _: &Root) -> Result<(), PolicyError> {
        Ok(())
    }
}
