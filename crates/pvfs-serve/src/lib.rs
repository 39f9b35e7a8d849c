//! `pvfsctl serve`'s server, in the shape of gmetad: the cluster's newest state, folded from
//! every agent's stream into one [`ClusterView`], and an HTTP server that answers `/metrics`
//! (Prometheus' text format, or OpenMetrics when asked) from it. The binary owns the command:
//! its flags, the signals, and what it prints; this crate owns what serves.
//!
//! - [`fold`]: the agents' events into the view, in batches under one lock each.
//! - [`app`]: the routes (`/metrics`, [`web`]'s page and its `/api/now` and `/api/live`, and
//!   [`history`]'s `/api/history`).
//! - [`history`]: the store of every node's past (`pvfs-history`), fed by [`fold`].
//! - [`runs`]: the benchmark runs of `--results DIR`, their phases on the clock.
//! - [`processes`]: a node's busiest processes, watched only while a node view asks.
//! - [`recent`]: the 1 s tier, read from the agents' rings on demand for `/api/history`.
//! - [`remote`]: every node's seconds pushed by Prometheus' remote write (`--remote-write`),
//!   fed by [`fold`].
//! - [`gmetad`]: gmetad's XML and interactive ports (`--gmetad-xml`, `--gmetad-interactive`),
//!   answered from the view, for ganglia tools.
//! - [`serve_http`]: hyper's HTTP/1.1 within [`HttpLimits`] — a header-read timeout, a
//!   connection lifetime, and [`admission`]'s table, which admits every connection at once and
//!   closes the oldest idle one when full, so a slowloris cannot keep a scrape out.

mod admission;
pub mod gmetad;
pub mod history;
pub mod processes;
pub mod recent;
pub mod remote;
pub mod runs;
pub mod web;

use admission::{Admission, Busy, Ticket};
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::routing::get;
use pvfs_coord::exporter::{self, ClusterView};
use pvfs_coord::stream::StreamEvent;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Events folded into the view under one write lock: enough to take a second's burst from
/// thousands of agents in few locks, few enough that a scrape waits at most a millisecond or so.
const FOLD_BATCH: usize = 256;

/// A scrape is sent in pieces of at least this much (whole metric families).
const SCRAPE_CHUNK: usize = 1024 * 1024;

/// The cluster's view, shared by the folder and the handlers. A std RwLock: held only to fold
/// in a batch of events or to copy the view for one scrape, never across an await.
pub type SharedView = Arc<RwLock<ClusterView>>;

/// A view of `cluster` with nothing folded in yet.
pub fn view(cluster: &pvfs_config::Cluster) -> SharedView {
    Arc::new(RwLock::new(ClusterView::new(cluster)))
}

/// Where the folder hands each node's new second, besides the view.
#[derive(Clone, Default)]
pub struct Outlets {
    /// The history's writer (`--history`).
    pub history: Option<history::Feed>,
    /// Remote write's sender (`--remote-write`).
    pub remote: Option<remote::Feed>,
}

/// Folds `events` into `view` until the channel closes (its followers ended), saying in the
/// log when a node goes down, comes back, restarts or loses samples, and hands each node's
/// new second to the `outlets` there are.
pub async fn fold(mut events: mpsc::Receiver<StreamEvent>, view: SharedView, outlets: Outlets) {
    let Outlets { history, remote } = outlets;
    let handing = history.is_some() || remote.is_some();
    // Taken in batches, under one lock each: the agents' samples arrive together at the
    // top of each second, and a lock per sample made scrapes and the folder contend.
    let mut batch = Vec::with_capacity(FOLD_BATCH);
    let mut sampled = Vec::with_capacity(FOLD_BATCH);
    while events.recv_many(&mut batch, FOLD_BATCH).await > 0 {
        for event in &batch {
            match event {
                StreamEvent::Down { node, error } => {
                    tracing::warn!(node = %node, error = %error, "node down")
                }
                StreamEvent::Up { node } => tracing::info!(node = %node, "node streaming"),
                StreamEvent::Restarted { node } => tracing::info!(node = %node, "agent restarted"),
                StreamEvent::Gap { node, from, to } => {
                    tracing::warn!(node = %node, from, to, "samples lost")
                }
                StreamEvent::Sample { node, .. } if handing => sampled.push(node.clone()),
                StreamEvent::Sample { .. } => {}
            }
        }
        let mut view = view.write().unwrap_or_else(|p| p.into_inner());
        for event in batch.drain(..) {
            view.apply(event);
        }
        // The node's newest pair, when they follow each other (a second with rates).
        for node in sampled.drain(..) {
            let Some(n) = view.nodes.get(&node) else { continue };
            let Some((prev, last)) = n.prev.clone().zip(n.last.clone()) else { continue };
            if let Some(remote) = &remote {
                let role = n.role.clone();
                let second =
                    remote::Second { node: node.clone(), role, prev: prev.clone(), last: last.clone() };
                remote.send(second);
            }
            if let Some(history) = &history {
                history.send(history::Second { node, prev, last });
            }
        }
    }
}

/// The routes over `view`, `history` and `runs`: `/metrics` (with remote write's counts when
/// there is one), the web view (`/`, `/api/now`, `/api/live`), `/api/history`, `/api/heatmap`,
/// `/api/runs` and the runs' reports, and `/api/processes` when `processes` can be watched. `stop` ends the live streams (a browser's never ends by itself, and would
/// hold serve's stop for a connection's lifetime) and their renderer, a task this starts (so it
/// is called within the runtime).
pub fn app(
    view: SharedView,
    history: history::HistoryState,
    runs: runs::Runs,
    remote: Option<Arc<remote::Counters>>,
    processes: Option<processes::Processes>,
    stop: CancellationToken,
) -> axum::Router {
    let history_dropped = history.dropped.clone();
    let past = axum::Router::new()
        .route("/api/history", get(history::answer))
        .route("/api/heatmap", get(history::heatmap))
        .with_state(history);
    let runs = axum::Router::new()
        .route("/api/runs", get(runs::answer))
        .route("/runs/{name}/", get(runs::report))
        .route("/runs/{name}/{file}", get(runs::chart))
        .with_state(runs);
    let exposition = Exposition { view: view.clone(), remote, history: history_dropped };
    axum::Router::new()
        .route("/metrics", get(metrics))
        .with_state(exposition)
        .route("/", get(web::page))
        .route("/api/now", get(web::now))
        .with_state(view.clone())
        .merge(
            axum::Router::new().route("/api/live", get(web::live)).with_state(web::Live::start(view, stop)),
        )
        .merge(past)
        .merge(runs)
        .merge(match processes {
            Some(processes) => {
                axum::Router::new().route("/api/processes", get(processes::answer)).with_state(processes)
            }
            None => axum::Router::new(),
        })
}

/// What `/metrics` shows: the cluster, remote write's counts, and what the history dropped.
#[derive(Clone)]
struct Exposition {
    view: SharedView,
    remote: Option<Arc<remote::Counters>>,
    history: Option<Arc<std::sync::atomic::AtomicU64>>,
}

/// The exposition; OpenMetrics when the scraper asks for it (Prometheus does by default).
async fn metrics(
    State(Exposition { view, remote, history }): State<Exposition>,
    headers: HeaderMap,
) -> impl IntoResponse {
    let openmetrics = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("application/openmetrics-text"));
    // A copy taken under the lock (the samples are shared, so this is a few milliseconds at
    // 10,000 nodes), rendered after it on the blocking pool and sent as it is written: at that
    // size the text is about 400 MB, and holding the lock through its rendering stalled the
    // folder, a runtime thread stalled the streams, and the whole text in memory was most of the
    // coordinator's.
    let snapshot = view.read().unwrap_or_else(|p| p.into_inner()).clone();
    let content_type = if openmetrics { exporter::OPENMETRICS_FORMAT } else { exporter::TEXT_FORMAT };
    let (tx, rx) = mpsc::channel::<Result<axum::body::Bytes, std::convert::Infallible>>(2);
    tokio::task::spawn_blocking(move || {
        // A scraper that hangs up closes the channel, which stops the rendering.
        let mut text = exporter::Text::new(&snapshot, openmetrics, SCRAPE_CHUNK, |text| {
            tx.blocking_send(Ok(axum::body::Bytes::from(text))).is_ok()
        });
        text.cluster(&snapshot);
        if let Some(remote) = &remote {
            remote.write(&mut text);
        }
        if let Some(dropped) = &history {
            history::write_counts(dropped, &mut text);
        }
        text.finish();
    });
    let body = axum::body::Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    ([(header::CONTENT_TYPE, content_type)], body)
}

/// What HTTP clients may hold.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// Connections held at once. When all are taken, the oldest idle one (no request under way)
    /// is closed to admit a newcomer; when all are busy, the newcomer is closed.
    pub max_connections: usize,
    /// Connections held at once from one IP address, with the same eviction among them: one
    /// host cannot take every place, and a scraper sharing its address still gets in.
    pub per_peer: usize,
    /// To send a request's headers (hyper's `header_read_timeout`, also between the requests
    /// of a kept-alive connection): a client that opens a connection and trickles or never
    /// finishes its request is closed after this.
    pub header_timeout: Duration,
    /// A connection's whole life, however busy: bounds one that stops reading its response.
    /// Prometheus reconnects for its next scrape.
    pub connection_lifetime: Duration,
}

impl Default for HttpLimits {
    fn default() -> HttpLimits {
        // A handful of Prometheus servers scrape every 15 s or so, one connection per target
        // each; 256 is far above that and far below the descriptor limit (raised to the hard
        // limit for the agents' connections), and each idle connection is a few KiB of
        // buffers. Their request headers arrive in one packet.
        HttpLimits {
            max_connections: 256,
            per_peer: 16,
            header_timeout: Duration::from_secs(5),
            connection_lifetime: Duration::from_secs(60),
        }
    }
}

/// Serves `app` over HTTP/1.1 on `listener` within `limits` until `shutdown`, then lets the
/// requests under way finish (each within its connection's lifetime).
///
/// hyper's own connection builder rather than `axum::serve`, which has no header-read timeout
/// and no connection limit. Every connection is accepted at once and admitted or closed
/// ([`admission`]): waiting for a free slot in the listen backlog, as this did before, let a
/// slowloris of 2,000 connections keep 4 of 5 scrapes out.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: HttpLimits,
    shutdown: CancellationToken,
) {
    let admission = Admission::new(limits.max_connections, limits.per_peer);
    serve_admitted(listener, app, limits, admission, None, shutdown).await
}

/// [`serve_http`] over TLS (`serve --web-tls`): each admitted connection's handshake must end
/// within the header timeout, so a client that opens TLS and stalls is closed as a slowloris
/// is.
pub async fn serve_https(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: HttpLimits,
    tls: Arc<rustls::ServerConfig>,
    shutdown: CancellationToken,
) {
    let admission = Admission::new(limits.max_connections, limits.per_peer);
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    serve_admitted(listener, app, limits, admission, Some(acceptor), shutdown).await
}

/// The web listener's TLS from `material` (a server certificate the cluster's CA issued, e.g.
/// `pvfsctl ca issue serve --san HOST`): no client certificate is asked for, as browsers have
/// none and every route is read-only. Says which file is wrong.
pub fn https_config(material: &pvfs_tls::Material) -> Result<Arc<rustls::ServerConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_slice_iter(material.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: not a PEM certificate ({e})", material.cert_path.display()))?;
    let key = PrivateKeyDer::from_pem_slice(material.key_pem.as_bytes())
        .map_err(|e| format!("{}: not a PEM private key ({e})", material.key_path.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("{}: {e}", material.cert_path.display()))?;
    // HTTP/1.1 only, as the plain listener.
    config.alpn_protocols.push(b"http/1.1".to_vec());
    Ok(Arc::new(config))
}

/// The web listener's TLS configuration ([`https_config`]).
pub type TlsConfig = rustls::ServerConfig;

/// A connection's byte stream, plain or TLS: one type for hyper whichever it is.
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

/// [`serve_http`] with the caller's [`Admission`], whose counts tests read, and TLS when given.
async fn serve_admitted(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: HttpLimits,
    admission: Admission,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: CancellationToken,
) {
    let connections = tokio_util::task::TaskTracker::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(limits.header_timeout);
    let mut failing = false;
    loop {
        let (socket, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    // Out of descriptors fails again at once: pause rather than spin, and say
                    // so once per episode rather than ten times a second.
                    if !failing {
                        tracing::warn!(error = %err, "/metrics: cannot accept connections; pausing accepts");
                        failing = true;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        failing = false;
        let Some(ticket) = admission.admit(peer.ip(), std::os::fd::AsRawFd::as_raw_fd(&socket)) else {
            // Every place is serving a request: closed at once, never queued.
            tracing::debug!(peer = %peer, "/metrics connection refused: every connection is busy");
            continue;
        };
        let evicted = ticket.evicted();
        let requests = ticket.requests();
        let app = hyper_util::service::TowerToHyperService::new(app.clone());
        let service = hyper::service::service_fn(move |request| {
            let busy = requests.busy();
            let response = hyper::service::Service::call(&app, request);
            async move {
                let response = response.await?;
                // Busy until hyper has sent the body and dropped it.
                Ok::<_, std::convert::Infallible>(response.map(|body| Guarded { body, _busy: busy }))
            }
        });
        let socket = Admitted { ticket, stream: socket };
        let stop = shutdown.clone();
        let builder = builder.clone();
        let tls = tls.clone();
        connections.spawn(async move {
            let io: Box<dyn Io> = match tls {
                None => Box::new(socket),
                Some(acceptor) => {
                    match tokio::time::timeout(limits.header_timeout, acceptor.accept(socket)).await {
                        Ok(Ok(stream)) => Box::new(stream),
                        Ok(Err(err)) => {
                            return tracing::debug!(peer = %peer, error = %err, "web: TLS handshake failed");
                        }
                        Err(_) => return tracing::debug!(peer = %peer, "web: TLS handshake not done in time"),
                    }
                }
            };
            let connection = builder.serve_connection(hyper_util::rt::TokioIo::new(io), service);
            let mut connection = std::pin::pin!(connection);
            let served = tokio::time::timeout(limits.connection_lifetime, async {
                tokio::select! {
                    served = connection.as_mut() => Some(served),
                    // Dropping the connection closes its socket.
                    () = evicted.cancelled() => None,
                    () = stop.cancelled() => {
                        connection.as_mut().graceful_shutdown();
                        Some(connection.as_mut().await)
                    }
                }
            })
            .await;
            match served {
                Ok(Some(Ok(()))) => {}
                Ok(Some(Err(err))) => {
                    tracing::debug!(peer = %peer, error = %err, "/metrics connection ended")
                }
                Ok(None) => {
                    tracing::debug!(peer = %peer, "/metrics connection closed: idle, and its place taken")
                }
                Err(_) => tracing::debug!(peer = %peer, "/metrics connection closed: lifetime reached"),
            }
        });
        // The connection's task (just spawned, so next on this thread) reads the request the
        // client has sent by now before this loop accepts more: under a flood of newcomers, each
        // of which may evict an idle connection, a scraper's request must be read first.
        tokio::task::yield_now().await;
    }
    let counts = admission.counts();
    tracing::debug!(
        admitted = counts.admitted,
        evicted = counts.evicted,
        refused = counts.refused,
        "/metrics: stopped accepting"
    );
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// An admitted connection's socket with its place in the [`Admission`] table. The ticket is
/// declared first so that it is dropped first: the table names the socket's descriptor, and
/// must let go of it before the descriptor is closed (and its number given to another socket).
struct Admitted {
    ticket: Ticket,
    stream: tokio::net::TcpStream,
}

impl tokio::io::AsyncRead for Admitted {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = std::pin::Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.ticket.heard();
        }
        read
    }
}

impl tokio::io::AsyncWrite for Admitted {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// A response body that keeps its connection marked busy until hyper has sent it.
struct Guarded {
    body: axum::body::Body,
    _busy: Busy,
}

impl http_body::Body for Guarded {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests;
