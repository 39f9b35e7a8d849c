//! Readiness and watchdog notifications to systemd (`Type=notify`, `WatchdogSec=`).
//!
//! Anything that sets `NOTIFY_SOCKET` gets the same messages: `pvfsctl demo` uses this to learn
//! when, and on which port, each agent it started is serving. Without `NOTIFY_SOCKET` these
//! are no-ops.

use std::net::SocketAddr;
use tokio_util::sync::CancellationToken;

/// Extra variables carrying the bound address and the agent's name (systemd ignores unknown
/// `X_` variables).
pub const LISTEN_VAR: &str = "X_PVFS_LISTEN";
pub const NAME_VAR: &str = "X_PVFS_NAME";

pub(crate) fn ready(local: SocketAddr, name: &str) {
    let status = format!("serving {name} on {local}");
    let listen = format!("{LISTEN_VAR}={local}");
    let name = format!("{NAME_VAR}={name}");
    let states = [
        sd_notify::NotifyState::Ready,
        sd_notify::NotifyState::Status(&status),
        sd_notify::NotifyState::Custom(&listen),
        sd_notify::NotifyState::Custom(&name),
    ];
    if let Err(err) = sd_notify::notify(&states) {
        tracing::warn!(error = %err, "could not notify readiness");
    }
}

pub(crate) fn stopping() {
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Stopping]);
}

/// Pings the watchdog at half its interval until shutdown, when systemd asked for one: the
/// task to run (the caller spawns it, and waits for it to end on `shutdown`).
pub(crate) fn watchdog(shutdown: CancellationToken) -> Option<impl Future<Output = ()> + Send + 'static> {
    let interval = sd_notify::watchdog_enabled()? / 2;
    Some(async move {
        let mut ticks = tokio::time::interval(interval);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = ticks.tick() => {
                    if let Err(err) = sd_notify::notify(&[sd_notify::NotifyState::Watchdog]) {
                        tracing::warn!(error = %err, "watchdog ping failed");
                    }
                }
            }
        }
    })
}
