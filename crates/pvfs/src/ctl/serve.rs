//! `pvfsctl serve`: a long-running coordinator that follows every node's sample stream and
//! serves the cluster's metrics at `/metrics` for Prometheus. What serves is `pvfs-serve`'s
//! (the view, the routes, the bounded HTTP server); this is the command: its listener, the
//! stop signals, and the drain.

use crate::cli::ServeArgs;
use crate::shutdown::Shutdown;
use crate::{exit, output};
use anyhow::Context;
use pvfs_coord::stream::{Start, follow_cluster};
use pvfs_serve::HttpLimits;
use std::collections::HashMap;
use std::time::Duration;

/// How long a stop waits for the scrapes under way and the followers: a connection lasts at
/// most [`HttpLimits::connection_lifetime`], and the followers end at their next select.
const STOP_DEADLINE: Duration = Duration::from_secs(70);

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<u8> {
    let cluster = pvfs_config::load(&args.cluster)?;
    let dialer = super::dialer(&cluster, &args.connect)?;
    let listener = tokio::net::TcpListener::bind(args.metrics_listen)
        .await
        .with_context(|| format!("cannot listen on {} for /metrics", args.metrics_listen))?;
    let local = listener.local_addr()?;
    let view = pvfs_serve::view(&cluster);
    let shutdown = Shutdown::on_signals()?;

    // Every node starts with the newest sample taken before now (the baseline of its first
    // rates), then follows live: /metrics shows the latest state, so an agent's history (an
    // hour of it) is not replayed. Replaying it from 10,000 agents kept the coordinator busy for
    // minutes after each start, with live samples queued behind the history.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let start = Start::Since { unix_ns: u64::try_from(now.as_nanos()).unwrap_or(u64::MAX) };
    // The followers end on the token; the folder then sees the channel close and ends too.
    let events = follow_cluster(&cluster, &dialer, &HashMap::new(), start, 0, shutdown.token());
    shutdown.spawn(pvfs_serve::fold(events, view.clone()));
    output::note(&format!(
        "serving metrics of {} nodes at http://{local}/metrics and the web view at http://{local}/ (Ctrl-C or SIGTERM stops)",
        cluster.nodes.len()
    ));
    shutdown.spawn(pvfs_serve::serve_http(
        listener,
        pvfs_serve::app(view),
        HttpLimits::default(),
        shutdown.token(),
    ));
    // Stops following the nodes and serving; the scrapes under way finish, and the folder
    // takes in what the followers had sent.
    shutdown.cancelled().await;
    if let Err(err) = shutdown.drain(STOP_DEADLINE).await {
        tracing::warn!(error = %err, "stopping: not everything ended in time; exiting anyway");
    }
    Ok(exit::OK)
}
