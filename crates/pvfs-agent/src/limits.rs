//! What a flood of clients may take from the agent: connections (in total and per peer
//! address), file descriptors, and `Metrics` streams.
//!
//! The agent is root on a storage node and its sampler must never miss a second, so every
//! resource a client can make it hold is bounded here, and the bounds leave room for the agent's
//! own work:
//!
//! - **Connections** are admitted by [`Gate`] before their TLS handshake (which `handshake`
//!   runs, each in its own task, within `HANDSHAKE_TIMEOUT`): at most [`MAX_CONNECTIONS`] in
//!   all (fewer when `RLIMIT_NOFILE` is low, so that [`RESERVED_FDS`] descriptors always
//!   remain for the sampler's `/proc` reads, the units' child processes and the gmond port),
//!   of which at most [`MAX_CONNECTIONS_PER_PEER`] *unproven* from one IP address and
//!   [`MAX_HALF_HELLOS`] stalled within their ClientHello. A connection is unproven until its
//!   client has shown a current coordinator certificate in the handshake. When the table is
//!   full, an unproven connection is closed to admit the new one (see [`Gate`] for which), so idle
//!   sockets and stalled handshakes from any number of addresses cannot keep a coordinator
//!   out; proven connections are never evicted, and do not count against their address (a
//!   coordinator host runs `serve`, `top` and `up` at once). Over the per-address share, or
//!   with every place proven, a new connection is closed at once.
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

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_rustls::server::TlsStream;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tonic::transport::server::{Connected, TcpConnectInfo};

/// Connections at most, whatever the descriptor limit. A node has a handful of coordinators,
/// each with one connection (HTTP/2 multiplexes its calls).
pub const MAX_CONNECTIONS: usize = 1024;

/// Unproven connections at most from one IP address (handshakes under way, certificates that
/// are not a current coordinator's): a real client finishes its handshake in milliseconds, so
/// only a flood holds many. Proven coordinator connections are not counted: a coordinator
/// host runs several `pvfsctl`s at once (`serve`, `top`, a benchmark), each with one.
pub const MAX_CONNECTIONS_PER_PEER: usize = 32;

/// Connections at most whose client has sent part of a ClientHello and no more. Each holds
/// the start of a TLS session (about 12 KiB, measured with heaptrack), where a silent one
/// holds a socket and a small task; a real client's ClientHello arrives whole, so only a
/// flood stalls here. The memory a flood takes at its peak stays with the agent (glibc keeps
/// it for reuse), so the peak is what is bounded.
pub const MAX_HALF_HELLOS: usize = 128;

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
    evicted: AtomicU64,
    open: AtomicUsize,
    unproven: AtomicUsize,
    half_hellos: AtomicUsize,
    coordinators: AtomicUsize,
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

    /// Connections that had not proven a coordinator certificate, closed to make room for a
    /// newer one when the table was full.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// Connections open now (admitted and not yet closed, evicted ones until their socket
    /// closes).
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Connections in the table that have not proven a coordinator certificate (handshake
    /// under way, or another certificate): the ones evicted when the table is full.
    pub fn unproven(&self) -> usize {
        self.unproven.load(Ordering::Relaxed)
    }

    /// Unproven connections whose client has sent part of a ClientHello and no more.
    pub fn half_hellos(&self) -> usize {
        self.half_hellos.load(Ordering::Relaxed)
    }

    /// Open connections whose client proved a current coordinator certificate in its
    /// handshake: never evicted, and not counted against their address.
    pub fn coordinators(&self) -> usize {
        self.coordinators.load(Ordering::Relaxed)
    }
}

/// Admits connections within the limits, making room for a coordinator when full.
///
/// Every connection starts *unproven*: its TLS handshake has not finished, or finished with a
/// certificate that is not a current coordinator's. Unproven connections count against their
/// peer address; when the table is full, one is evicted (closed) to admit the new one, so a
/// flood of idle sockets or stalled handshakes from any number of addresses cannot keep a
/// coordinator out: its connection arrives, evicts one of the flood, finishes its handshake in
/// milliseconds and is *proven* — no longer evictable, and no longer counted against its
/// address (`serve`, `top` and `up` from one machine need more than one address's share).
/// Only when every connection is proven is a new one refused for room.
///
/// Which one is evicted: the oldest that sent part of a ClientHello and stalled; else the
/// oldest that has sent nothing; else the oldest whose ClientHello arrived whole. A real
/// client sends its ClientHello whole with its first packet, so under a standing flood of
/// idle sockets and half hellos its connection is past both first groups as soon as its task
/// reads it; evicting the oldest of all alone let a flood reconnecting fast enough close it
/// before its handshake ended (measured: 19 of 32 fresh coordinator connections answered,
/// `cargo xtask bench-flood`). Half hellos are also held to [`MAX_HALF_HELLOS`], for memory.
#[derive(Debug, Clone)]
pub struct Gate {
    table: Arc<Mutex<Table>>,
    limit: usize,
    half_hello_limit: usize,
    per_peer_limit: usize,
    counts: Arc<ConnectionCounts>,
}

#[derive(Debug, Default)]
struct Table {
    /// Unproven connections by stage, each by admission order (ids only grow, so the first is
    /// the oldest): those that have sent nothing yet,
    silent: BTreeMap<u64, Unproven>,
    /// those that have sent part of a ClientHello,
    half_hello: BTreeMap<u64, Unproven>,
    /// and those whose ClientHello arrived whole.
    greeted: BTreeMap<u64, Unproven>,
    /// Unproven connections per peer address.
    per_peer: HashMap<IpAddr, usize>,
    /// Proven coordinator connections.
    coordinators: usize,
    next_id: u64,
}

#[derive(Debug)]
struct Unproven {
    peer: IpAddr,
    /// Cancelled to evict the connection: its reads and writes fail from then on.
    evict: CancellationToken,
}

impl Table {
    fn unproven(&self) -> usize {
        self.silent.len() + self.half_hello.len() + self.greeted.len()
    }

    /// Copies the table's sizes to `counts` (after every change, under the lock).
    fn publish(&self, counts: &ConnectionCounts) {
        counts.unproven.store(self.unproven(), Ordering::Relaxed);
        counts.half_hellos.store(self.half_hello.len(), Ordering::Relaxed);
        counts.coordinators.store(self.coordinators, Ordering::Relaxed);
    }

    /// One unproven connection of `peer` fewer.
    fn release_peer(&mut self, peer: IpAddr) {
        if let Some(count) = self.per_peer.get_mut(&peer) {
            *count -= 1;
            if *count == 0 {
                self.per_peer.remove(&peer);
            }
        }
        // A flood from thousands of addresses grows the map; a map never shrinks by itself,
        // so give its memory back once the flood is gone.
        if self.per_peer.len() * 4 < self.per_peer.capacity() && self.per_peer.capacity() > 64 {
            self.per_peer.shrink_to_fit();
        }
    }
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Its address already holds its share of unproven connections.
    PerPeer,
    /// Every place is held by a proven coordinator.
    Full,
}

impl Gate {
    /// At most `limit` connections, of which `per_peer_limit` unproven from one address and
    /// `half_hello_limit` stalled within their ClientHello.
    pub fn new(limit: usize, half_hello_limit: usize, per_peer_limit: usize) -> Gate {
        Gate { table: Arc::default(), limit, half_hello_limit, per_peer_limit, counts: Arc::default() }
    }

    /// Closes `entry` (taken out of the table) to make room.
    fn evict(&self, table: &mut Table, entry: Unproven, why: &'static str) {
        table.release_peer(entry.peer);
        entry.evict.cancel();
        self.counts.evicted.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(peer = %entry.peer, why, "connection evicted");
    }

    pub fn counts(&self) -> Arc<ConnectionCounts> {
        self.counts.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        // Nothing panics while holding the lock; if something did, the counts are still whole.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for a connection from `peer`, evicting the oldest unproven connection when the
    /// table is full.
    fn admit(&self, peer: IpAddr) -> Result<Slot, Refusal> {
        let mut table = self.lock();
        if table.per_peer.get(&peer).copied().unwrap_or(0) >= self.per_peer_limit {
            return Err(Refusal::PerPeer);
        }
        if table.unproven() + table.coordinators >= self.limit {
            let oldest = table
                .half_hello
                .pop_first()
                .or_else(|| table.silent.pop_first())
                .or_else(|| table.greeted.pop_first());
            let Some((_, oldest)) = oldest else {
                return Err(Refusal::Full);
            };
            self.evict(
                &mut table,
                oldest,
                "the table is full and it has not proven a coordinator certificate",
            );
        }
        let id = table.next_id;
        table.next_id += 1;
        let evict = CancellationToken::new();
        table.silent.insert(id, Unproven { peer, evict: evict.clone() });
        *table.per_peer.entry(peer).or_insert(0) += 1;
        self.counts.admitted.fetch_add(1, Ordering::Relaxed);
        self.counts.open.fetch_add(1, Ordering::Relaxed);
        table.publish(&self.counts);
        Ok(Slot { gate: self.clone(), id, peer, stage: Stage::Silent, evict })
    }

    /// Accepts on `listener` until `shutdown` (or until the server stops taking connections),
    /// admits within the limits, runs each admitted connection's TLS handshake in a task of
    /// its own (`handshake`), and passes on those that finish it; the rest are closed.
    pub(crate) fn incoming(
        self,
        listener: TcpListener,
        handshake: crate::handshake::Handshake,
        shutdown: CancellationToken,
    ) -> tokio_stream::wrappers::ReceiverStream<std::io::Result<TlsStream<Admitted>>> {
        // A few finished handshakes may wait for the server to take them; each holds its
        // place like any other connection.
        let (tx, rx) = mpsc::channel(16);
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
                let slot = match self.admit(peer.ip()) {
                    Ok(slot) => slot,
                    Err(why) => {
                        self.counts.refused.fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(peer = %peer, ?why, "connection refused: connection limit reached");
                        continue;
                    }
                };
                if let Err(err) = stream.set_nodelay(true) {
                    tracing::debug!(peer = %peer, error = %err, "cannot set TCP_NODELAY");
                }
                set_keepalive(&stream, peer);
                let admitted = Admitted::new(stream, slot);
                let (handshake, tx, shutdown) = (handshake.clone(), tx.clone(), shutdown.clone());
                tokio::spawn(async move {
                    let deadline = tokio::time::Instant::now() + crate::HANDSHAKE_TIMEOUT;
                    // Until its client sends something, a connection's task holds its socket and
                    // a timer and no TLS state: that is boxed below, allocated only then. (A
                    // flood's memory is its peak, which glibc keeps.)
                    let woke = tokio::select! {
                        () = shutdown.cancelled() => return,
                        woke = tokio::time::timeout_at(deadline, admitted.readable()) => woke,
                    };
                    let mut admitted = admitted;
                    match woke {
                        Ok(Ok(())) if admitted.wake() => {}
                        Ok(Ok(())) => return,
                        Ok(Err(err)) => {
                            tracing::debug!(peer = %peer, error = %err, "connection closed before its TLS handshake");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(peer = %peer, "TLS handshake timed out: the client sent nothing");
                            return;
                        }
                    }
                    Box::pin(async move {
                        let tls = tokio::select! {
                            () = shutdown.cancelled() => return,
                            tls = handshake.run(admitted, peer, deadline) => tls,
                        };
                        if let Some(tls) = tls {
                            // The server stopped taking connections: this one closes with the task.
                            let _ = tx.send(Ok(tls)).await;
                        }
                    })
                    .await;
                });
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

/// How far a connection has got, which decides whether and in what order it is evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Nothing received yet.
    Silent,
    /// Something received, not yet a whole ClientHello: evicted first.
    HalfHello,
    /// Its ClientHello arrived; the handshake goes on (or ended without a coordinator's
    /// certificate): evicted last.
    Greeted,
    /// It proved a current coordinator certificate: never evicted.
    Proven,
}

/// A connection's place in the table, given back when the connection closes.
#[derive(Debug)]
struct Slot {
    gate: Gate,
    id: u64,
    peer: IpAddr,
    stage: Stage,
    evict: CancellationToken,
}

impl Slot {
    /// Its entry in the table, taken out; `None` when it was evicted (it closes then).
    fn take(&self, table: &mut Table) -> Option<Unproven> {
        match self.stage {
            Stage::Silent => table.silent.remove(&self.id),
            Stage::HalfHello => table.half_hello.remove(&self.id),
            Stage::Greeted => table.greeted.remove(&self.id),
            Stage::Proven => None,
        }
    }

    /// The client has sent something: its TLS state is made now, and a client that stalls
    /// within its ClientHello is evicted first. The oldest such connection is evicted when
    /// there are too many. False when this one was evicted first.
    fn wake(&mut self) -> bool {
        let mut table = self.gate.lock();
        let Some(entry) = self.take(&mut table) else { return false };
        if table.half_hello.len() >= self.gate.half_hello_limit
            && let Some((_, oldest)) = table.half_hello.pop_first()
        {
            self.gate.evict(&mut table, oldest, "too many clients stalled within their ClientHello");
        }
        table.half_hello.insert(self.id, entry);
        self.stage = Stage::HalfHello;
        table.publish(&self.gate.counts);
        true
    }

    /// The client's ClientHello arrived: evicted after every connection that has not got so
    /// far. False when it was evicted first.
    fn greet(&mut self) -> bool {
        let mut table = self.gate.lock();
        let Some(entry) = self.take(&mut table) else { return false };
        table.greeted.insert(self.id, entry);
        self.stage = Stage::Greeted;
        table.publish(&self.gate.counts);
        true
    }

    /// The client proved a coordinator certificate: never evicted from now on, and no longer
    /// counted against its address. False when it was evicted first.
    fn prove(&mut self) -> bool {
        let mut table = self.gate.lock();
        if self.take(&mut table).is_none() {
            return false;
        }
        table.release_peer(self.peer);
        table.coordinators += 1;
        self.stage = Stage::Proven;
        table.publish(&self.gate.counts);
        true
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut table = self.gate.lock();
        if self.stage == Stage::Proven {
            table.coordinators -= 1;
        } else if self.take(&mut table).is_some() {
            table.release_peer(self.peer);
        }
        // (Else it was evicted, and its place given to another connection then.)
        table.publish(&self.gate.counts);
        self.gate.counts.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An admitted connection: the socket, holding its place until it is dropped. While it is
/// unproven, its reads and writes fail once the gate evicts it, which ends its handshake, or
/// its HTTP/2 connection, wherever it is.
pub struct Admitted {
    stream: TcpStream,
    slot: Slot,
    /// Ready once evicted; `None` once proven (it can no longer be).
    evicted: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
}

impl Admitted {
    fn new(stream: TcpStream, slot: Slot) -> Admitted {
        let evicted = Some(Box::pin(slot.evict.clone().cancelled_owned()));
        Admitted { stream, slot, evicted }
    }

    /// Waits until the client has sent something, or is gone (an error then). Ends early
    /// with an error if the connection is evicted. A peek rather than `readable()`, which
    /// answers at once for a freshly accepted socket that has received nothing (measured: every
    /// idle connection of a flood went on to allocate its TLS state).
    pub(crate) async fn readable(&self) -> std::io::Result<()> {
        let mut first = [0u8; 1];
        tokio::select! {
            peeked = self.stream.peek(&mut first) => match peeked? {
                0 => Err(std::io::ErrorKind::UnexpectedEof.into()),
                _ => Ok(()),
            },
            () = self.slot.evict.cancelled() => Err(evicted_error()),
        }
    }

    /// See [`Slot::wake`].
    pub(crate) fn wake(&mut self) -> bool {
        self.slot.wake()
    }

    /// See [`Slot::greet`].
    pub(crate) fn greet(&mut self) -> bool {
        self.slot.greet()
    }

    /// See [`Slot::prove`].
    pub(crate) fn prove(&mut self) -> bool {
        let proven = self.slot.prove();
        if proven {
            self.evicted = None;
        }
        proven
    }

    /// Whether the gate has evicted this connection; registers for the wake-up if not.
    fn poll_evicted(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Error> {
        match self.evicted.as_mut().map(|evicted| evicted.as_mut().poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(evicted_error()),
            _ => Poll::Pending,
        }
    }
}

impl std::fmt::Debug for Admitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admitted")
            .field("stream", &self.stream)
            .field("slot", &self.slot)
            .finish_non_exhaustive()
    }
}

fn evicted_error() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "evicted to make room for another connection: this one had not proven a coordinator certificate",
    )
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
        if let Poll::Ready(err) = self.poll_evicted(cx) {
            return Poll::Ready(Err(err));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Admitted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if let Poll::Ready(err) = self.poll_evicted(cx) {
            return Poll::Ready(Err(err));
        }
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
        if let Poll::Ready(err) = self.poll_evicted(cx) {
            return Poll::Ready(Err(err));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(last: u8) -> IpAddr {
        IpAddr::from([127, 1, 0, last])
    }

    /// When full, a stalled half hello goes first, then the oldest silent connection, then the
    /// oldest greeted one; a proven one never, and then the new connection is refused.
    #[test]
    fn a_full_table_evicts_half_hellos_then_silent_then_greeted_and_never_the_proven() {
        let gate = Gate::new(3, 8, 32);
        let silent = gate.admit(peer(1)).unwrap();
        let mut half = gate.admit(peer(2)).unwrap();
        let mut greeted = gate.admit(peer(3)).unwrap();
        assert!(half.wake());
        assert!(greeted.wake() && greeted.greet());

        let mut newest = gate.admit(peer(4)).unwrap();
        assert!(half.evict.is_cancelled(), "the half hello goes first, though younger");
        assert!(!half.wake(), "an evicted connection goes no further");
        let _next = gate.admit(peer(5)).unwrap();
        assert!(silent.evict.is_cancelled(), "then the oldest silent one");
        assert!(!newest.evict.is_cancelled());
        assert!(newest.wake() && newest.greet() && newest.prove());

        let _last = gate.admit(peer(6)).unwrap();
        assert!(!greeted.evict.is_cancelled(), "a silent one is still there to go first");
        let counts = gate.counts();
        assert_eq!((counts.evicted(), counts.unproven(), counts.coordinators()), (3, 2, 1));
        // Every place proven: refused.
        let full = Gate::new(1, 8, 32);
        let mut only = full.admit(peer(1)).unwrap();
        assert!(only.prove());
        assert_eq!(full.admit(peer(2)).unwrap_err(), Refusal::Full);
    }

    /// Half hellos beyond their limit evict the oldest of them, whatever room the table has.
    #[test]
    fn half_hellos_are_held_to_their_limit() {
        let gate = Gate::new(100, 2, 32);
        let mut slots: Vec<Slot> = (1..=3).map(|i| gate.admit(peer(i)).unwrap()).collect();
        for slot in &mut slots {
            assert!(slot.wake());
        }
        assert!(slots[0].evict.is_cancelled());
        assert!(!slots[1].evict.is_cancelled() && !slots[2].evict.is_cancelled());
        assert_eq!(gate.counts().half_hellos(), 2);
    }

    /// A proven connection is no longer counted against its address; unproven ones are, and
    /// every place is given back when its connection closes (the address's entry too).
    #[test]
    fn the_per_address_share_counts_unproven_connections_only() {
        let gate = Gate::new(100, 8, 2);
        let mut first = gate.admit(peer(1)).unwrap();
        let _second = gate.admit(peer(1)).unwrap();
        assert_eq!(gate.admit(peer(1)).unwrap_err(), Refusal::PerPeer);
        assert!(first.prove());
        let third = gate.admit(peer(1)).unwrap();
        drop((first, third, _second));
        let table = gate.lock();
        assert_eq!((table.unproven(), table.coordinators, table.per_peer.len()), (0, 0, 0));
    }
}
