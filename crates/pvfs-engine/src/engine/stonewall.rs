//! IOR's stonewall (`-D`) and its wear-out (`-O stoneWallingWearOut=1`), as ior.c's
//! `WriteOrRead` has them (hpc/ior 5fcf0ba): a task tests after each transfer whether the
//! deadline has passed since its first transfer, or whether it has made the count it was given
//! (a read after a stonewalled write); with wear-out, every task then learns the most
//! transfers any task made (IOR's `MPI_Allreduce(MAX)`) and goes on to as many.
//!
//! The tasks of one client are threads of this process, so their agreement is a barrier here
//! ([`WearOut`]); what lies beyond this process (the other clients) is the `across` function
//! the last task to arrive calls with this client's most.

use super::{EngineError, Progress};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// How a client's tasks learn the run's most at a stonewall: among themselves when they are the
/// whole run, through `across` otherwise. `Err` when a wear-out is `needed` and nothing joins
/// this client to the others (a caller of the library that gave none).
pub(crate) fn agreement<'a>(
    tasks: u32,
    total_tasks: u32,
    needed: bool,
    across: Option<super::Across<'a>>,
) -> Result<super::Across<'a>, EngineError> {
    /// The run's most is this client's: it holds every task.
    fn within(most: u64) -> Result<u64, EngineError> {
        Ok(most)
    }
    match across {
        _ if tasks == total_tasks => Ok(&within),
        Some(across) => Ok(across),
        None if needed => Err(EngineError::WearOutAcrossClients { tasks, total_tasks }),
        None => Ok(&within),
    }
}

/// A phase's stonewall, shared by its tasks.
pub(crate) struct Stonewall<'a> {
    /// `-D`: stop after the transfer during which this much time passed.
    pub deadline: Option<Duration>,
    /// Stop after this many transfers.
    pub stop_after: Option<u64>,
    /// Agree on a count after the stonewall.
    pub wear_out: Option<&'a WearOut<'a>>,
}

impl Stonewall<'_> {
    /// Tells the wear-out that a task will not agree (it failed before it could), once, so
    /// the tasks waiting for it go on.
    pub fn leave(&self, agreed: &mut bool) {
        if let (Some(wear_out), false) = (self.wear_out, *agreed) {
            *agreed = true;
            wear_out.arrive(None);
        }
    }
}

/// The barrier at which every task of this client says how many transfers it made and learns
/// the most any task of the run made.
pub(crate) struct WearOut<'a> {
    tasks: usize,
    state: Mutex<State>,
    agreed: Condvar,
    /// This client's most to the run's most (the identity when this client is the run).
    across: &'a (dyn Fn(u64) -> Result<u64, EngineError> + Sync),
}

#[derive(Default)]
struct State {
    arrived: usize,
    most: u64,
    /// The run's most, or why it could not be learned.
    outcome: Option<Result<u64, String>>,
}

/// How often a waiting task looks whether the phase was cancelled.
const CANCEL_POLL: Duration = Duration::from_millis(100);

impl<'a> WearOut<'a> {
    pub fn new(tasks: usize, across: &'a (dyn Fn(u64) -> Result<u64, EngineError> + Sync)) -> WearOut<'a> {
        WearOut { tasks, state: Mutex::new(State::default()), agreed: Condvar::new(), across }
    }

    /// A task's count (`None`: it failed and counts nothing). The last task to arrive asks
    /// beyond this client and wakes the others.
    pub fn arrive(&self, pairs: Option<u64>) {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.arrived += 1;
        state.most = state.most.max(pairs.unwrap_or(0));
        if state.arrived == self.tasks && state.outcome.is_none() {
            let most = state.most;
            // Asked with the lock held: nobody else needs it until the answer is in.
            state.outcome = Some((self.across)(most).map_err(|e| e.to_string()));
            self.agreed.notify_all();
        }
    }

    /// A task's count in, the run's most out, once every task of this client has arrived;
    /// stops waiting when the phase is cancelled.
    pub fn agree(&self, pairs: Option<u64>, progress: &Progress) -> Result<u64, EngineError> {
        self.arrive(pairs);
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            if let Some(outcome) = &state.outcome {
                return outcome.clone().map_err(|error| EngineError::WearOut { error });
            }
            progress.check()?;
            state = self
                .agreed
                .wait_timeout(state, CANCEL_POLL)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }
}
