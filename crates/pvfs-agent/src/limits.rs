//! What a flood of clients may take from the agent: connections (in total and per peer
//! address), file descriptors, and `Metrics` streams.
//!
//! The agent is root on a storage node and its sampler must never miss a second, so every
//! resource a client can make it hold is bounded here, and the bounds leave room for the agent's
//! own work:
//!
//! - **Connections** are admitted by [`Gate`] before tonic starts the TLS handshake: at most
//!   [`MAX_CONNECTIONS`] in all (fewer when `RLIMIT_NOFILE` is low, so that [`RESERVED_FDS`]
//!   descriptors always remain for the sampler's `/proc` reads, the units' child processes and
//!   the gmond port) and [`MAX_CONNECTIONS_PER_PEER`] from one IP address, so one flooding host
//!   cannot lock out the coordinator. A connection over either limit is closed at once. A
//!   connection's slot is held until it closes, so the limit bounds pending handshakes too
//!   (each of which ends within `HANDSHAKE_TIMEOUT`).
//! - **Accept errors**: when the process or the system is out of descriptors (`EMFILE`,
//!   `ENFILE`) accepting again at once fails again at once, so the loop backs off (growing
//!   sleeps, one warning per episode) instead of spinning a core.
//! - **Requests**: at most [`MAX_REQUEST_BYTES`] each, and [`MAX_STEPS_PER_UNIT`] steps in a
//!   unit; a unit is decoded and checked on the blocking pool, never on the worker threads
//!   the sampler's streams share.
//! - **Metrics streams**: at most [`MAX_METRICS_STREAMS`] at once over all connections (each
//!   is a task and a queue), counted by [`StreamGauge`] so tests and the flood bench can see
//!   that a stream's task ends when its client goes away.
//!
//! Hand-written rather than tower's `ConcurrencyLimit`: that limits requests inside one
//! connection, not connections, and it queues where a flood must be refused.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// Connections at most, whatever the descriptor limit. A node has a handful of coordinators,
/// each with one connection (HTTP/2 multiplexes its calls).
pub const MAX_CONNECTIONS: usize = 1024;

/// Connections at most from one IP address: a coordinator host runs a few `pvfsctl`s at once
/// (`serve`, `top`, a benchmark), each with one connection.
pub const MAX_CONNECTIONS_PER_PEER: usize = 32;

/// Descriptors kept back from connections: the sampler's `/proc` and `/sys` reads, the pipes
/// of a unit's commands and of a benchmark's processes, the state lock, the gmond port and its
/// clients, and the runtime's own.
pub const RESERVED_FDS: u64 = 64;

/// `Metrics` streams at most, over all connections. A coordinator follows a node with one;
/// each is a task and a queue of [`crate::service`]'s `STREAM_QUEUE` samples.
pub const MAX_METRICS_STREAMS: usize = 64;

/// Concurrent calls at most on one connection (HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`); a
/// coordinator's `bench` runs a Metrics stream, a BenchPhase and a few Infos at once.
pub const MAX_STREAMS_PER_CONNECTION: u32 = 32;

/// Steps in one `Apply` at most. pvfs's plans put tens of steps in a unit (16 at most in the
/// example cluster files, a BeeGFS client; a server grows by a few steps per disk); 4096
/// leaves room for any real node while keeping a unit's checks, events and memory small.
pub const MAX_STEPS_PER_UNIT: usize = 4096;

/// Bytes in one request to the Agent service at most (the gRPC message, decoded). tonic's
/// default, stated: the largest real request is a unit with a repository's signing key (at
/// most 64 KiB) or a Launch naming every client, far below it; 4096 steps of a kilobyte
/// each fit. Over it tonic answers `OUT_OF_RANGE`, naming the size and the limit.
pub const MAX_REQUEST_BYTES: usize = 4 << 20;

/// The first and the longest pause of the accept loop when out of descriptors.
const ACCEPT_BACKOFF_FIRST: Duration = Duration::from_millis(10);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// How many connections this process can hold and still keep [`RESERVED_FDS`] descriptors for
/// its own work: `RLIMIT_NOFILE`'s soft limit less the reserve, at most [`MAX_CONNECTIONS`] and
/// at least one per-peer allowance (a limit so low would not run the agent anyway).
pub fn connection_limit() -> usize {
    use nix::sys::resource::{Resource, getrlimit};
    let soft = getrlimit(Resource::RLIMIT_NOFILE).map_or(1024, |(soft, _)| soft);
    let room = usize::try_from(soft.saturating_sub(RESERVED_FDS)).unwrap_or(MAX_CONNECTIONS);
    room.clamp(MAX_CONNECTIONS_PER_PEER.min(MAX_CONNECTIONS), MAX_CONNECTIONS)
}

/// Admission counts, for tests and the flood bench.
#[derive(Debug, Default)]
pub struct ConnectionCounts {
    admitted: AtomicU64,
    refused: AtomicU64,
    open: AtomicUsize,
}

impl ConnectionCounts {
    /// Connections admitted since the agent started.
    pub fn admitted(&self) -> u64 {
        self.admitted.load(Ordering::Relaxed)
    }

    /// Connections closed on arrival because a limit was reached.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Connections open now (admitted and not yet closed).
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }
}

/// Admits connections within the limits.
#[derive(Debug, Clone)]
pub struct Gate {
    total: Arc<Semaphore>,
    per_peer: Arc<Mutex<HashMap<IpAddr, usize>>>,
    per_peer_limit: usize,
    counts: Arc<ConnectionCounts>,
}

impl Gate {
    pub fn new(total: usize, per_peer_limit: usize) -> Gate {
        Gate {
            total: Arc::new(Semaphore::new(total)),
            per_peer: Arc::default(),
            per_peer_limit,
            counts: Arc::default(),
        }
    }

    pub fn counts(&self) -> Arc<ConnectionCounts> {
        self.counts.clone()
    }

    /// A slot for a connection from `peer`, or `None` when a limit is reached.
    fn admit(&self, peer: IpAddr) -> Option<Slot> {
        let permit = self.total.clone().try_acquire_owned().ok()?;
        {
            let mut peers = self.per_peer.lock().unwrap_or_else(|p| p.into_inner());
            let count = peers.entry(peer).or_insert(0);
            if *count >= self.per_peer_limit {
                return None;
            }
            *count += 1;
        }
        self.counts.admitted.fetch_add(1, Ordering::Relaxed);
        self.counts.open.fetch_add(1, Ordering::Relaxed);
        Some(Slot { gate: self.clone(), peer, _permit: permit })
    }

    /// Accepts on `listener` until `shutdown` (or until the server stops taking connections),
    /// passing on those admitted; the rest are closed at once.
    pub fn incoming(
        self,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> tokio_stream::wrappers::ReceiverStream<std::io::Result<Admitted>> {
        // One in flight: the server takes each connection as it comes, and a connection waiting
        // here holds its slot like any other.
        let (tx, rx) = mpsc::channel(1);
        tokio::spawn(async move {
            let mut backoff = ACCEPT_BACKOFF_FIRST;
            let mut starved = false;
            loop {
                let accepted = tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tx.closed() => return,
                    accepted = listener.accept() => accepted,
                };
                let (stream, peer) = match accepted {
                    Ok(pair) => pair,
                    Err(err) if out_of_resources(&err) => {
                        if !starved {
                            tracing::warn!(error = %err, limit = ?nix::sys::resource::getrlimit(
                                nix::sys::resource::Resource::RLIMIT_NOFILE).ok(),
                                "cannot accept connections: out of file descriptors; pausing accepts \
                                 until some close (raise LimitNOFILE= in the unit if this is not a flood)");
                            starved = true;
                        }
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                        continue;
                    }
                    // The client went away between its connect and our accept: nothing to do.
                    Err(err) => {
                        tracing::debug!(error = %err, "accept failed");
                        continue;
                    }
                };
                if starved {
                    tracing::info!("accepting connections again");
                    starved = false;
                }
                backoff = ACCEPT_BACKOFF_FIRST;
                let Some(slot) = self.admit(peer.ip()) else {
                    self.counts.refused.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(peer = %peer, "connection refused: connection limit reached");
                    continue;
                };
                if let Err(err) = stream.set_nodelay(true) {
                    tracing::debug!(peer = %peer, error = %err, "cannot set TCP_NODELAY");
                }
                set_keepalive(&stream, peer);
                if tx.send(Ok(Admitted { stream, _slot: slot })).await.is_err() {
                    return;
                }
            }
        });
        tokio_stream::wrappers::ReceiverStream::new(rx)
    }
}

/// Small request/response exchanges: without TCP_NODELAY (set above), Nagle plus delayed ACKs
/// add ~40 ms to a reply. Keepalive finds coordinators that vanished without closing.
fn set_keepalive(stream: &TcpStream, peer: SocketAddr) {
    let keepalive = socket2::TcpKeepalive::new().with_time(crate::TCP_KEEPALIVE);
    if let Err(err) = socket2::SockRef::from(stream).set_tcp_keepalive(&keepalive) {
        tracing::debug!(peer = %peer, error = %err, "cannot set TCP keepalive");
    }
}

/// Out of descriptors (the process's or the system's) or of kernel memory: accepting again at
/// once would fail the same way.
fn out_of_resources(err: &std::io::Error) -> bool {
    use nix::errno::Errno;
    matches!(
        err.raw_os_error().map(Errno::from_raw),
        Some(Errno::EMFILE | Errno::ENFILE | Errno::ENOBUFS | Errno::ENOMEM)
    )
}

/// A connection's place within the limits, given back when the connection closes.
#[derive(Debug)]
struct Slot {
    gate: Gate,
    peer: IpAddr,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut peers = self.gate.per_peer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = peers.get_mut(&self.peer) {
            *count -= 1;
            if *count == 0 {
                peers.remove(&self.peer);
            }
        }
        self.gate.counts.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An admitted connection: the socket, holding its slot until it is dropped.
#[derive(Debug)]
pub struct Admitted {
    stream: TcpStream,
    _slot: Slot,
}

impl Connected for Admitted {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for Admitted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Admitted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// The `Metrics` streams: a limit on how many run at once, and how many are live.
#[derive(Debug, Clone)]
pub struct StreamGauge {
    slots: Arc<Semaphore>,
    limit: usize,
    live: Arc<AtomicUsize>,
}

impl Default for StreamGauge {
    fn default() -> StreamGauge {
        StreamGauge::new(MAX_METRICS_STREAMS)
    }
}

impl StreamGauge {
    pub fn new(limit: usize) -> StreamGauge {
        StreamGauge { slots: Arc::new(Semaphore::new(limit)), limit, live: Arc::default() }
    }

    /// Streams whose task is running now.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// A place for one more stream, held by its task; `None` at the limit.
    pub(crate) fn enter(&self) -> Option<StreamTicket> {
        let permit = self.slots.clone().try_acquire_owned().ok()?;
        self.live.fetch_add(1, Ordering::Relaxed);
        Some(StreamTicket { live: self.live.clone(), _permit: permit })
    }
}

/// One live stream; dropping it (the stream's task ending) frees the place.
#[derive(Debug)]
pub(crate) struct StreamTicket {
    live: Arc<AtomicUsize>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for StreamTicket {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::Relaxed);
    }
}
