//! `pvfsctl serve`: a long-running coordinator that follows every node's sample stream and
//! serves the cluster's metrics at `/metrics` for Prometheus.
//!
//! The HTTP side is bounded ([`serve_http`]): a client has [`HttpLimits::header_timeout`] to
//! send its request's headers, a connection lasts at most [`HttpLimits::connection_lifetime`],
//! and at most [`HttpLimits::max_connections`] are held at once, [`HttpLimits::per_peer`] from
//! one address; when full, the oldest connection with no request under way is closed to make
//! room ([`admission`]), so half-open requests cannot pile up and hold descriptors, nor keep a
//! scraper out.

mod admission;

use crate::cli::ServeArgs;
use crate::shutdown::Shutdown;
use crate::{exit, output};
use admission::{Admission, Busy, Ticket};
use anyhow::Context;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::routing::get;
use pvfs_coord::exporter::{self, ClusterView};
use pvfs_coord::stream::{Start, StreamEvent, follow_cluster};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a stop waits for the scrapes under way and the followers: a connection lasts at
/// most [`HttpLimits::connection_lifetime`], and the followers end at their next select.
const STOP_DEADLINE: Duration = Duration::from_secs(70);

/// Events folded into the view under one write lock: enough to take a second's burst from
/// thousands of agents in few locks, few enough that a scrape waits at most a millisecond or so.
const FOLD_BATCH: usize = 256;

/// A scrape is sent in pieces of at least this much (whole metric families).
const SCRAPE_CHUNK: usize = 1024 * 1024;

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
    let shutdown = Shutdown::on_signals()?;

    // Every node starts with the newest sample taken before now (the baseline of its first
    // rates), then follows live: /metrics shows the latest state, so an agent's history (an
    // hour of it) is not replayed. Replaying it from 10,000 agents kept the coordinator busy for
    // minutes after each start, with live samples queued behind the history.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let start = Start::Since { unix_ns: u64::try_from(now.as_nanos()).unwrap_or(u64::MAX) };
    // The followers end on the token; the folder then sees the channel close and ends too.
    let mut events = follow_cluster(&cluster, &dialer, &HashMap::new(), start, 0, shutdown.token());
    {
        let view = view.clone();
        shutdown.spawn(async move {
            // Taken in batches, under one lock each: the agents' samples arrive together at the
            // top of each second, and a lock per sample made scrapes and the folder contend.
            let mut batch = Vec::with_capacity(FOLD_BATCH);
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
                        StreamEvent::Sample { .. } => {}
                    }
                }
                let mut view = view.write().unwrap_or_else(|p| p.into_inner());
                for event in batch.drain(..) {
                    view.apply(event);
                }
            }
        });
    }

    let app = axum::Router::new().route("/metrics", get(metrics)).route("/", get(index)).with_state(view);
    output::note(&format!(
        "serving metrics of {} nodes at http://{local}/metrics (Ctrl-C or SIGTERM stops)",
        cluster.nodes.len()
    ));
    shutdown.spawn(serve_http(listener, app, HttpLimits::default(), shutdown.token()));
    // Stops following the nodes and serving; the scrapes under way finish, and the folder
    // takes in what the followers had sent.
    shutdown.cancelled().await;
    if let Err(err) = shutdown.drain(STOP_DEADLINE).await {
        tracing::warn!(error = %err, "stopping: not everything ended in time; exiting anyway");
    }
    Ok(exit::OK)
}

/// The exposition; OpenMetrics when the scraper asks for it (Prometheus does by default).
async fn metrics(State(view): State<SharedView>, headers: HeaderMap) -> impl IntoResponse {
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
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<axum::body::Bytes, std::convert::Infallible>>(2);
    tokio::task::spawn_blocking(move || {
        // A scraper that hangs up closes the channel, which stops the rendering.
        exporter::render_chunks(&snapshot, openmetrics, SCRAPE_CHUNK, |text| {
            tx.blocking_send(Ok(axum::body::Bytes::from(text))).is_ok()
        });
    });
    let body = axum::body::Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    ([(header::CONTENT_TYPE, content_type)], body)
}

async fn index() -> &'static str {
    "pvfsctl serve: metrics at /metrics\n"
}

/// What HTTP clients may hold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HttpLimits {
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
pub(crate) async fn serve_http(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: HttpLimits,
    shutdown: CancellationToken,
) {
    serve_admitted(listener, app, limits, Admission::new(limits.max_connections, limits.per_peer), shutdown)
        .await
}

/// [`serve_http`] with the caller's [`Admission`], whose counts tests read.
async fn serve_admitted(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: HttpLimits,
    admission: Admission,
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
        let connection = builder.serve_connection(hyper_util::rt::TokioIo::new(socket), service);
        let stop = shutdown.clone();
        connections.spawn(async move {
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
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Reads `socket` until the server closes it; panics after 30 s.
    async fn until_closed(socket: &mut tokio::net::TcpStream) -> String {
        let mut out = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(30), socket.read_to_end(&mut out)).await;
        assert!(read.is_ok(), "the server did not close the connection within 30 s");
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Before, `axum::serve` held a request whose headers never ended for as long as the client
    /// liked, and took every connection offered.
    #[tokio::test]
    async fn half_open_requests_are_closed_and_a_scrape_is_still_answered() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().route("/metrics", get(|| async { "pvfs_up 1\n" }));
        let limits = HttpLimits {
            max_connections: 4,
            per_peer: 4,
            header_timeout: Duration::from_millis(500),
            connection_lifetime: Duration::from_secs(30),
        };
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(serve_http(listener, app, limits, shutdown.clone()));

        // Three times the connection limit, each with a request whose headers never end.
        let mut half_open = Vec::new();
        for _ in 0..3 * limits.max_connections {
            let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
            socket.write_all(b"GET /metrics HTTP/1.1\r\nHost: pvfs\r\n").await.unwrap();
            half_open.push(socket);
        }
        // A real scrape is answered (an idle connection makes room for it).
        let mut scrape = tokio::net::TcpStream::connect(addr).await.unwrap();
        scrape.write_all(b"GET /metrics HTTP/1.1\r\nHost: pvfs\r\nConnection: close\r\n\r\n").await.unwrap();
        let answer = until_closed(&mut scrape).await;
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.ends_with("pvfs_up 1\n"), "{answer}");
        // Every half-open request was closed by the server, not left waiting.
        for socket in &mut half_open {
            let answer = until_closed(socket).await;
            assert!(!answer.contains("200 OK"), "{answer}");
        }
        shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(30), server).await.unwrap().unwrap();
    }

    /// A slowloris from many addresses that opens a new connection as soon as one of its own
    /// is closed. Before, scrapes waited in the listen backlog behind it (4 of 5 failed); the
    /// header timeout here is longer than the test's bound, so only eviction lets them in.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn scrapes_get_through_a_slowloris_from_many_addresses() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().route("/metrics", get(|| async { "pvfs_up 1\n" }));
        let limits = HttpLimits {
            max_connections: 16,
            per_peer: 2,
            header_timeout: Duration::from_secs(120),
            connection_lifetime: Duration::from_secs(120),
        };
        let admission = Admission::new(limits.max_connections, limits.per_peer);
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(serve_admitted(listener, app, limits, admission.clone(), shutdown.clone()));

        // 200 trickling connections from 127.0.1.1 … 127.0.1.200, each reopened when closed.
        let attack = CancellationToken::new();
        let mut attackers = tokio::task::JoinSet::new();
        for i in 0..200u8 {
            let from = std::net::SocketAddr::from(([127, 0, 1, i.wrapping_add(1)], 0));
            attackers.spawn(slowloris(from, addr, attack.clone()));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        for _ in 0..5 {
            let mut scrape = tokio::net::TcpStream::connect(addr).await.unwrap();
            scrape
                .write_all(b"GET /metrics HTTP/1.1\r\nHost: pvfs\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            let answer = until_closed(&mut scrape).await;
            assert!(answer.starts_with("HTTP/1.1 200 OK") && answer.ends_with("pvfs_up 1\n"), "{answer}");
        }
        attack.cancel();
        while attackers.join_next().await.is_some() {}
        let counts = admission.counts();
        assert!(counts.evicted > 0, "{counts:?}");
        shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(30), server).await.unwrap().unwrap();
    }

    /// Connects from `from` and trickles a request's headers a byte at a time, never ending
    /// them; reconnects whenever the server closes the connection, until `stop`.
    async fn slowloris(from: std::net::SocketAddr, to: std::net::SocketAddr, stop: CancellationToken) {
        while !stop.is_cancelled() {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(from).unwrap();
            let Ok(mut stream) = socket.connect(to).await else {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let mut closed = [0u8; 1];
            let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\n").await;
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    // Any answer or a close: the server let go of it.
                    _ = stream.read(&mut closed) => break,
                    () = tokio::time::sleep(Duration::from_millis(200)) => {
                        if stream.write_all(b"X").await.is_err() {
                            break;
                        }
                    }
                }
            }
        }
    }
}
