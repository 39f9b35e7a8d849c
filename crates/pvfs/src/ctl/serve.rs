//! `pvfsctl serve`: a long-running coordinator that follows every node's sample stream and
//! serves the cluster's metrics at `/metrics` for Prometheus.

use crate::cli::ServeArgs;
use crate::{exit, output};
use anyhow::Context;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::routing::get;
use pvfs_coord::exporter::{self, ClusterView};
use pvfs_coord::stream::{Event, Start, follow_cluster};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

type SharedView = Arc<RwLock<ClusterView>>;

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<u8> {
    let cluster = pvfs_config::load(&args.cluster)?;
    let dialer = super::dialer(&cluster, &args.connect)?;
    let listener = tokio::net::TcpListener::bind(args.metrics_listen)
        .await
        .with_context(|| format!("cannot listen on {} for /metrics", args.metrics_listen))?;
    let local = listener.local_addr()?;
    // A std RwLock: held only to fold in one event or render one scrape, never across an await.
    let view: SharedView = Arc::new(RwLock::new(ClusterView::new(&cluster)));
    let shutdown = CancellationToken::new();

    let mut events =
        follow_cluster(&cluster, &dialer, &HashMap::new(), Start::Since { unix_ns: 0 }, shutdown.clone());
    let folder = {
        let view = view.clone();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                match &event {
                    Event::Down { node, error } => tracing::warn!(node = %node, error = %error, "node down"),
                    Event::Up { node } => tracing::info!(node = %node, "node streaming"),
                    Event::Restarted { node } => tracing::info!(node = %node, "agent restarted"),
                    Event::Gap { node, from, to } => tracing::warn!(node = %node, from, to, "samples lost"),
                    Event::Sample { .. } => {}
                }
                view.write().unwrap_or_else(|p| p.into_inner()).apply(event);
            }
        })
    };

    let app = axum::Router::new().route("/metrics", get(metrics)).route("/", get(index)).with_state(view);
    output::note(&format!(
        "serving metrics of {} nodes at http://{local}/metrics (Ctrl-C or SIGTERM stops)",
        cluster.nodes.len()
    ));
    let stop = shutdown.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            stop_signal().await;
            stop.cancel();
        })
        .await
        .context("serving /metrics")?;
    shutdown.cancel();
    folder.abort();
    Ok(exit::OK)
}

/// The exposition; OpenMetrics when the scraper asks for it (Prometheus does by default).
async fn metrics(State(view): State<SharedView>, headers: HeaderMap) -> impl IntoResponse {
    let openmetrics = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("application/openmetrics-text"));
    let body = exporter::render(&view.read().unwrap_or_else(|p| p.into_inner()), openmetrics);
    let content_type = if openmetrics { exporter::OPENMETRICS_FORMAT } else { exporter::TEXT_FORMAT };
    ([(header::CONTENT_TYPE, content_type)], body)
}

async fn index() -> &'static str {
    "pvfsctl serve: metrics at /metrics\n"
}

async fn stop_signal() {
    let term = async {
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}
