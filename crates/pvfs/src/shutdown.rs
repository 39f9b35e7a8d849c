//! One way to stop: a stop signal (SIGTERM or SIGINT) cancels a token every long-running
//! command's loops select on, and the work under way is drained, not aborted.
//!
//! The first signal cancels; a second one exits at once with [`crate::exit::INTERRUPTED`],
//! for the operator who does not want to wait for the drain. Tasks spawned through
//! [`Shutdown::spawn`] are tracked, so [`Shutdown::drain`] can wait for every one of them to
//! end on the token (bounded by a deadline) instead of cutting them off mid-write.

use anyhow::Context;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Which signal started the stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopSignal {
    Term,
    Int,
}

impl StopSignal {
    /// The name logs use (`SIGTERM`, `SIGINT`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            StopSignal::Term => "SIGTERM",
            StopSignal::Int => "SIGINT",
        }
    }
}

/// The drain deadline passed with tracked tasks still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{running} tasks still running after {deadline:?}")]
pub(crate) struct DrainTimedOut {
    pub running: usize,
    pub deadline: Duration,
}

/// The stop token, the tasks to drain when it is cancelled, and the signal that cancelled it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shutdown {
    token: CancellationToken,
    tasks: TaskTracker,
    /// Set once, by the signal watcher, before it cancels the token.
    received: Arc<OnceLock<StopSignal>>,
}

impl Shutdown {
    /// A shutdown only its token's `cancel` stops (tests, and callers that stop on something
    /// other than a signal).
    pub(crate) fn new() -> Shutdown {
        Shutdown::default()
    }

    /// A shutdown cancelled by the first SIGTERM or SIGINT; a second one exits the process at
    /// once with [`crate::exit::INTERRUPTED`]. Must be called within a Tokio runtime.
    ///
    /// Both handlers are installed before this returns, so a signal that arrives right after
    /// (a SIGTERM sent as soon as the agent says it is ready) starts a clean stop instead of
    /// killing the process by the default action.
    pub(crate) fn on_signals() -> anyhow::Result<Shutdown> {
        let term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        let int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        let shutdown = Shutdown::new();
        // Not tracked: it lives as long as the process, and `drain` must not wait for it.
        tokio::spawn(stop_on_signal(term, int, shutdown.token.clone(), shutdown.received.clone()));
        Ok(shutdown)
    }

    /// The token to hand to loops and servers; cancelled when the stop starts.
    pub(crate) fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// Resolves when the stop has started.
    pub(crate) async fn cancelled(&self) {
        self.token.cancelled().await;
    }

    /// The signal that started the stop, if one did.
    pub(crate) fn received(&self) -> Option<StopSignal> {
        self.received.get().copied()
    }

    /// Spawns a task [`Shutdown::drain`] waits for. The task must end on [`Shutdown::token`]
    /// (or by itself): drain waits, it does not abort.
    pub(crate) fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tasks.spawn(task)
    }

    /// Takes no more tasks and waits for the tracked ones to end, for at most `deadline`.
    /// Does not cancel the token: the caller decides when the stop starts.
    pub(crate) async fn drain(&self, deadline: Duration) -> Result<(), DrainTimedOut> {
        self.tasks.close();
        match tokio::time::timeout(deadline, self.tasks.wait()).await {
            Ok(()) => Ok(()),
            Err(_) => Err(DrainTimedOut { running: self.tasks.len(), deadline }),
        }
    }
}

/// The first SIGTERM or SIGINT starts a graceful shutdown; a second one exits at once.
async fn stop_on_signal(
    mut term: Signal,
    mut int: Signal,
    token: CancellationToken,
    received: Arc<OnceLock<StopSignal>>,
) {
    for n in 0..2 {
        let which = tokio::select! {
            _ = term.recv() => StopSignal::Term,
            _ = int.recv() => StopSignal::Int,
        };
        if n == 0 {
            // Recorded before the cancel, so whoever wakes on the token can ask which it was.
            let _ = received.set(which);
            tracing::info!(signal = which.name(), "stopping: draining requests");
            token.cancel();
        } else {
            tracing::warn!(signal = which.name(), "second stop signal: exiting now");
            std::process::exit(i32::from(crate::exit::INTERRUPTED));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn drain_waits_for_tasks_that_end_on_the_token() {
        let shutdown = Shutdown::new();
        let token = shutdown.token();
        let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = ended.clone();
        shutdown.spawn(async move {
            token.cancelled().await;
            // Some cleanup after the stop starts: drain must wait for it, not cut it off.
            tokio::time::sleep(Duration::from_secs(1)).await;
            seen.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        shutdown.token().cancel();
        assert_eq!(shutdown.drain(Duration::from_secs(5)).await, Ok(()));
        assert!(ended.load(std::sync::atomic::Ordering::SeqCst));
        assert!(shutdown.token().is_cancelled());
        assert_eq!(shutdown.received(), None, "no signal was involved");
    }

    #[tokio::test(start_paused = true)]
    async fn drain_gives_up_at_its_deadline() {
        let shutdown = Shutdown::new();
        shutdown.spawn(std::future::pending::<()>());
        shutdown.token().cancel();
        let deadline = Duration::from_secs(2);
        assert_eq!(shutdown.drain(deadline).await, Err(DrainTimedOut { running: 1, deadline }));
    }

    #[tokio::test(start_paused = true)]
    async fn drain_before_the_stop_waits_only_for_what_ends_by_itself() {
        let shutdown = Shutdown::new();
        shutdown.spawn(tokio::time::sleep(Duration::from_millis(10)));
        assert_eq!(shutdown.drain(Duration::from_secs(1)).await, Ok(()));
        assert!(!shutdown.token().is_cancelled(), "drain does not start the stop");
    }
}
