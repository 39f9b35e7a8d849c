//! The rules that make an IO500 run invalid, as io500 02091cf applies them, so that a run of
//! the built-in engine (`--preset io500`, to come) is judged by the same rules, with io500's
//! own words. From its sources:
//!
//! - `phase_dbg.c`: the stonewall must be the rules' (`stonewall-time` ≠ 300 s, or 30 s in
//!   the Student Cluster Competition's `scc` mode).
//! - `phase_ior.c`: an IOR phase with errors; a write phase whose IOR time is under the
//!   stonewall (it ran out of data before the stonewall: the block is too small).
//! - `main.c`, after each phase: a write phase (`verify_stonewall`: ior-easy-write,
//!   ior-hard-write, mdtest-easy-write, mdtest-hard-write) whose runtime is under the
//!   stonewall, or else any scored phase that scored 0; and a write phase whose runtime is
//!   under the rules' minimum (300 s, or 30 s).
//! - `phase_find.c`: a find that found nothing, or whose command failed.
//! - a dry run.
//!
//! An invalid phase makes the standard score invalid unless it is optional (find-easy,
//! find-hard, mdworkbench-bench), and always the extended one.

use std::fmt;

/// The phases io500 checks against the stonewall (`verify_stonewall = 1`).
pub const VERIFY_STONEWALL: [&str; 4] =
    ["ior-easy-write", "ior-hard-write", "mdtest-easy-write", "mdtest-hard-write"];

/// The run's settings the rules look at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunFacts {
    /// `stonewall-time`, seconds.
    pub stonewall_s: u32,
    /// The Student Cluster Competition's rules (`scc = TRUE`).
    pub scc: bool,
    pub dry_run: bool,
}

impl RunFacts {
    /// The stonewall and minimum write time the rules ask for (io500's `minwrite`).
    pub fn minimum_s(&self) -> u32 {
        if self.scc { 30 } else { 300 }
    }
}

/// What a phase did, as the rules look at it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PhaseFacts<'a> {
    pub name: &'a str,
    /// The phase's wall time, from its start to its end (io500's `t_delta`).
    pub runtime_s: f64,
    pub score: f64,
    /// Errors IOR counted (read-back mismatches included).
    pub errors: u64,
    /// An IOR write phase: IOR's own time for it, and when the stonewall was hit.
    pub ior_write: Option<(f64, f64)>,
    /// A find phase: the files it found; `None` when its command failed.
    pub found: Option<Option<u64>>,
}

/// One reason a run or a phase is invalid. Its text is io500's.
#[derive(Debug, Clone, PartialEq)]
pub enum Invalid {
    DryRun,
    Stonewall { set: u32, rule: u32 },
    IorErrors { errors: u64 },
    WriteBeforeStonewall { time: f64, stonewall: u32, hit: f64 },
    RuntimeBelowStonewall { runtime: f64 },
    ZeroScore,
    RuntimeBelowMinimum,
    FindFailed,
    FoundNothing,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Invalid::DryRun => write!(f, "DRY RUN MODE ACTIVATED"),
            Invalid::Stonewall { set, rule } => write!(f, "stonewall-time {set}s != {rule}s"),
            Invalid::IorErrors { errors } => {
                write!(f, "Errors ({errors}) occured during phase in IOR. This invalidates your run.")
            }
            Invalid::WriteBeforeStonewall { time, stonewall, hit } => {
                write!(
                    f,
                    "Write phase needed {time:.6}s instead of stonewall {stonewall}s. Stonewall was hit at {hit:.1}s"
                )
            }
            Invalid::RuntimeBelowStonewall { runtime } => {
                write!(f, "Runtime of phase ({runtime:.6}) is below stonewall time. This shouldn't happen!")
            }
            Invalid::ZeroScore => write!(f, "Resulting score shouldn't be 0.0"),
            Invalid::RuntimeBelowMinimum => write!(f, "Runtime is smaller than expected minimum runtime"),
            Invalid::FindFailed => write!(f, "PFind returned with an error, this is invalid."),
            Invalid::FoundNothing => write!(f, "Find didn't find anything, this is likely invalid."),
        }
    }
}

/// The reasons the run as a whole is invalid, in io500's order.
pub fn run_reasons(run: &RunFacts) -> Vec<Invalid> {
    let mut out = Vec::new();
    if run.dry_run {
        out.push(Invalid::DryRun);
    }
    if run.stonewall_s != run.minimum_s() {
        out.push(Invalid::Stonewall { set: run.stonewall_s, rule: run.minimum_s() });
    }
    out
}

/// The reasons a phase is invalid, in the order io500 finds them: the phase's own checks,
/// then main's after it.
pub fn phase_reasons(run: &RunFacts, phase: &PhaseFacts<'_>) -> Vec<Invalid> {
    let mut out = Vec::new();
    if phase.errors > 0 {
        out.push(Invalid::IorErrors { errors: phase.errors });
    }
    if let Some((time, hit)) = phase.ior_write
        && time < f64::from(run.stonewall_s)
    {
        out.push(Invalid::WriteBeforeStonewall { time, stonewall: run.stonewall_s, hit });
    }
    match phase.found {
        Some(None) => out.push(Invalid::FindFailed),
        Some(Some(0)) => out.push(Invalid::FoundNothing),
        _ => {}
    }
    let verify = VERIFY_STONEWALL.contains(&phase.name);
    if !run.dry_run {
        if verify && phase.runtime_s < f64::from(run.stonewall_s) {
            out.push(Invalid::RuntimeBelowStonewall { runtime: phase.runtime_s });
        } else if phase.score == 0.0 && phase.name != "timestamp" {
            out.push(Invalid::ZeroScore);
        }
    }
    if verify && phase.runtime_s < f64::from(run.minimum_s()) {
        out.push(Invalid::RuntimeBelowMinimum);
    }
    out
}
