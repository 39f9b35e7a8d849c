//! `serve --remote-write URL`: every node's every second pushed to a Prometheus-compatible
//! store (Prometheus' own receiver, Mimir, Thanos, VictoriaMetrics, Cortex) by the
//! remote-write protocol 1.0: a protobuf `WriteRequest`, snappy-compressed, POSTed.
//!
//! The series are the exporter's, written by the same [`exporter::visit`] that `/metrics`
//! is, with the exporter's names and labels, each stamped with its sample's own time (not the
//! time it was sent), so a store holds exactly the agents' seconds.
//!
//! The folder hands each node's newest pair of samples to a bounded queue it never waits on;
//! one task turns them into requests and sends them on one connection, in order (a store
//! refuses a series' samples out of order). A failed request is retried with back-off (a 5xx,
//! a 429 or a connection error, as Prometheus' own sender does); a request the store refuses
//! (another 4xx) is dropped and counted, since sending it again would be refused again. While
//! the store is away the queue fills and newer seconds are dropped and counted: the agents'
//! streams are never held up. The counts are on `/metrics` (`pvfs_remote_write_*`).

use pvfs_coord::exporter::{self, ClusterView, NodeView, Sink};
use pvfs_metrics::ring::Stamped;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Node-seconds waiting to be sent. Each holds its node's two newest samples alive (a few KB
/// for a node of a few disks), so this bounds the memory a store that is away can take: some
/// 25 minutes of a 10-node cluster, 16 s of a 1,000-node one.
const QUEUE: usize = 16_384;

/// The most samples in one request. Prometheus' own sender sends 2,000 at most (its
/// `max_samples_per_send`); a node-second here is a hundred to a few thousand series, so a
/// request is a few node-seconds: small enough for any receiver's size limit.
const MAX_SAMPLES: usize = 10_000;

/// Back-off between retries of a failed request, doubling from the first to the last
/// (Prometheus' `min_backoff` and `max_backoff` are 30 ms and 5 s).
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A request's whole exchange, as Prometheus' `remote_timeout`.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// On stop, what is queued is sent for at most this long.
const STOP_FLUSH: Duration = Duration::from_secs(5);

/// Where to write, checked before anything starts.
#[derive(Clone)]
pub struct Target {
    host: String,
    port: u16,
    /// The request's path and query (`/api/v1/write`).
    path: String,
    /// The `Authorization` header's value (from a file, never the command line).
    authorization: Option<String>,
    /// Roots for https (none for http): the system's, or the file given.
    roots: Option<Arc<rustls::RootCertStore>>,
    /// The URL as given, for messages (without credentials: a URL may not hold any).
    url: String,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the authorization.
        f.debug_struct("Target").field("url", &self.url).finish_non_exhaustive()
    }
}

/// Why a target cannot be used; each says what to give instead.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("--remote-write {url}: not a URL ({reason}); give e.g. http://HOST:9090/api/v1/write")]
    Url { url: String, reason: String },
    #[error(
        "--remote-write {url}: credentials in the URL would show in `ps` and in logs; put the Authorization header's value (e.g. `Basic dXNlcjpwYXNz` or `Bearer TOKEN`) in a file and give --remote-write-auth-file FILE"
    )]
    Credentials { url: String },
    #[error("--remote-write-auth-file {path}: {reason}")]
    Auth { path: String, reason: String },
    #[error("--remote-write-ca {path}: {reason}")]
    Roots { path: String, reason: String },
}

impl Target {
    /// `url` (http or https), with the `Authorization` value in `auth_file` and, for https,
    /// the roots in `ca_file` or else the system's.
    pub fn new(url: &str, auth_file: Option<&Path>, ca_file: Option<&Path>) -> Result<Target, TargetError> {
        let bad = |reason: &str| TargetError::Url { url: url.to_owned(), reason: reason.to_owned() };
        let uri: hyper::Uri = url.parse().map_err(|e: hyper::http::uri::InvalidUri| bad(&e.to_string()))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(bad("the scheme must be http or https")),
        };
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        if authority.as_str().contains('@') {
            return Err(TargetError::Credentials { url: url.to_owned() });
        }
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        let authorization = match auth_file {
            None => None,
            Some(file) => Some(authorization(file)?),
        };
        let roots = match (https, ca_file) {
            (false, _) => None,
            (true, Some(file)) => Some(Arc::new(roots_from(file)?)),
            (true, None) => Some(Arc::new(system_roots()?)),
        };
        Ok(Target { host, port, path, authorization, roots, url: url.to_owned() })
    }

    /// The URL as given.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// The header value in `file`: its one line, trimmed.
fn authorization(file: &Path) -> Result<String, TargetError> {
    let fail = |reason: String| TargetError::Auth { path: file.display().to_string(), reason };
    let text = std::fs::read_to_string(file).map_err(|e| fail(e.to_string()))?;
    let value = text.trim();
    if value.is_empty() || value.contains(['\n', '\r']) {
        return Err(fail(
            "must hold the Authorization header's value on one line, e.g. `Bearer TOKEN`".to_owned(),
        ));
    }
    hyper::http::HeaderValue::from_str(value)
        .map_err(|_| fail("holds characters a header cannot carry".to_owned()))?;
    Ok(value.to_owned())
}

/// The certificates of a PEM file.
fn roots_from(file: &Path) -> Result<rustls::RootCertStore, TargetError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let fail = |reason: String| TargetError::Roots { path: file.display().to_string(), reason };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(file).map_err(|e| fail(e.to_string()))? {
        roots.add(cert.map_err(|e| fail(e.to_string()))?).map_err(|e| fail(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(fail("holds no PEM certificate".to_owned()));
    }
    Ok(roots)
}

/// The system's trusted roots (`rustls-native-certs`: the bundle wherever the distribution
/// keeps it, /etc/ssl/certs on Debian, /etc/pki/tls on Enterprise Linux, or SSL_CERT_FILE).
fn system_roots() -> Result<rustls::RootCertStore, TargetError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let reason = found.errors.first().map_or("none found".to_owned(), |e| e.to_string());
        return Err(TargetError::Roots {
            path: "(the system's trusted certificates)".to_owned(),
            reason: format!("{reason}; give the store's CA with --remote-write-ca FILE"),
        });
    }
    Ok(roots)
}

/// What the sender has done, as `/metrics` shows it.
#[derive(Debug, Default)]
pub struct Counters {
    /// Samples the store accepted.
    sent: AtomicU64,
    /// Samples the store refused (a 4xx other than 429): not sent again.
    refused: AtomicU64,
    /// Node-seconds dropped: the queue was full (the store away or slow), or still queued when
    /// serve stopped.
    dropped: AtomicU64,
    /// Requests sent again after a failure.
    retries: AtomicU64,
    /// Node-seconds waiting.
    queued: AtomicU64,
    /// The newest sample time the store accepted, in milliseconds.
    newest_ms: AtomicU64,
}

/// A snapshot of [`Counters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub sent: u64,
    pub refused: u64,
    pub dropped: u64,
    pub retries: u64,
    pub queued: u64,
    pub newest_ms: u64,
}

impl Counters {
    pub fn counts(&self) -> Counts {
        Counts {
            sent: self.sent.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            queued: self.queued.load(Ordering::Relaxed),
            newest_ms: self.newest_ms.load(Ordering::Relaxed),
        }
    }

    /// The sender's families, for `/metrics`.
    pub fn write(&self, sink: &mut impl Sink) {
        let c = self.counts();
        sink.family(
            "pvfs_remote_write_samples_total",
            "counter",
            "Samples sent by remote write: accepted by the store, or refused by it (not sent again).",
            |f| {
                f.sample("pvfs_remote_write_samples_total", &[("result", "sent")], c.sent as f64);
                f.sample("pvfs_remote_write_samples_total", &[("result", "refused")], c.refused as f64);
            },
        );
        sink.family(
            "pvfs_remote_write_dropped_seconds_total",
            "counter",
            "Node-seconds never sent: the queue was full, or serve stopped before they went.",
            |f| f.sample("pvfs_remote_write_dropped_seconds_total", &[], c.dropped as f64),
        );
        sink.family(
            "pvfs_remote_write_retries_total",
            "counter",
            "Requests sent again after a failure.",
            |f| f.sample("pvfs_remote_write_retries_total", &[], c.retries as f64),
        );
        sink.family("pvfs_remote_write_queued_seconds", "gauge", "Node-seconds waiting to be sent.", |f| {
            f.sample("pvfs_remote_write_queued_seconds", &[], c.queued as f64)
        });
        sink.family(
            "pvfs_remote_write_newest_sample_time_seconds",
            "gauge",
            "Time of the newest sample the store accepted.",
            |f| f.sample("pvfs_remote_write_newest_sample_time_seconds", &[], c.newest_ms as f64 / 1e3),
        );
    }
}

/// One node's second, as the folder hands it over.
pub struct Second {
    pub node: String,
    pub role: String,
    pub prev: Arc<Stamped>,
    pub last: Arc<Stamped>,
}

/// The folder's end: where it hands seconds over.
#[derive(Clone)]
pub struct Feed {
    tx: mpsc::Sender<Second>,
    counters: Arc<Counters>,
}

impl Feed {
    /// Queues a second, or drops it (counted) when the queue is full.
    pub fn send(&self, second: Second) {
        // Counted before it is queued: the sender may take it (and count it out) at once.
        self.counters.queued.fetch_add(1, Ordering::Relaxed);
        let sent = self.tx.try_send(second);
        if sent.is_err() {
            self.counters.queued.fetch_sub(1, Ordering::Relaxed);
        }
        match sent {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                if self.counters.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!("remote write: the queue is full; seconds are being dropped");
                }
            }
            // The sender ended (serve is stopping).
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }
}

/// Starts the sender to `target` (a task: call within the runtime). It sends until every
/// [`Feed`] is dropped or `stop`, then sends what is queued for a few seconds more; the
/// handle ends when it has.
pub fn start(target: Target, stop: CancellationToken) -> (Feed, tokio::task::JoinHandle<()>) {
    start_with(target, QUEUE, stop)
}

/// [`start`] with a queue of `capacity` node-seconds.
fn start_with(
    target: Target,
    capacity: usize,
    stop: CancellationToken,
) -> (Feed, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel(capacity);
    let counters = Arc::new(Counters::default());
    let sender = Sender { target, connection: None, counters: counters.clone() };
    let task = tokio::spawn(sender.run(rx, stop));
    (Feed { tx, counters }, task)
}

/// The task that sends.
struct Sender {
    target: Target,
    /// The open connection, reused from request to request.
    connection: Option<hyper::client::conn::http1::SendRequest<axum::body::Body>>,
    counters: Arc<Counters>,
}

/// What one attempt came to.
enum Outcome {
    Accepted,
    /// The store refused it: status and what it said.
    Refused(u16, String),
    /// Try again: why.
    Failed(String),
}

impl Sender {
    async fn run(mut self, mut rx: mpsc::Receiver<Second>, stop: CancellationToken) {
        let mut seconds = Vec::new();
        let mut failing = false;
        while !stop.is_cancelled() {
            let received = tokio::select! {
                n = rx.recv_many(&mut seconds, 256) => n,
                () = stop.cancelled() => break,
            };
            if received == 0 {
                break;
            }
            self.counters.queued.fetch_sub(received as u64, Ordering::Relaxed);
            for batch in batches(&seconds) {
                if stop.is_cancelled() {
                    // Never sent: counted, as is everything the stop leaves unsent.
                    self.counters.dropped.fetch_add(batch.0.seconds as u64, Ordering::Relaxed);
                    continue;
                }
                failing = self.send_until_done(batch, &stop, failing).await;
            }
            seconds.clear();
        }
        // Stopping: the folder hands over its last seconds and drops its feed; they get one
        // attempt each, all within a few seconds. What does not go is counted.
        let mut left = 0; // taken from the queue, neither sent nor counted yet
        let flushed = tokio::time::timeout(STOP_FLUSH, async {
            loop {
                seconds.clear();
                let received = rx.recv_many(&mut seconds, 256).await;
                self.counters.queued.fetch_sub(received as u64, Ordering::Relaxed);
                if received == 0 {
                    return;
                }
                left = received;
                for (request, samples) in batches(&seconds) {
                    match self.attempt(&request).await {
                        Outcome::Accepted => self.accepted(samples, &request),
                        _ => {
                            self.counters.dropped.fetch_add(request.seconds as u64, Ordering::Relaxed);
                        }
                    }
                    left -= request.seconds;
                }
            }
        })
        .await;
        if flushed.is_err() {
            rx.close();
            let mut unsent = left as u64;
            while rx.try_recv().is_ok() {
                unsent += 1;
            }
            self.counters.dropped.fetch_add(unsent, Ordering::Relaxed);
            self.counters.queued.store(0, Ordering::Relaxed);
            tracing::warn!(unsent, "remote write: stopped before everything queued was sent");
        }
        let counts = self.counters.counts();
        tracing::info!(
            sent = counts.sent,
            refused = counts.refused,
            dropped = counts.dropped,
            retries = counts.retries,
            "remote write: stopped"
        );
    }

    /// Sends `batch` until the store takes or refuses it, or `stop`; says whether the store is
    /// failing (to log a failure once per episode, not once per retry).
    async fn send_until_done(
        &mut self,
        batch: (Request, usize),
        stop: &CancellationToken,
        mut failing: bool,
    ) -> bool {
        let (request, samples) = batch;
        let mut backoff = FIRST_BACKOFF;
        loop {
            match self.attempt(&request).await {
                Outcome::Accepted => {
                    if failing {
                        tracing::info!(url = %self.target.url, "remote write: the store takes samples again");
                    }
                    self.accepted(samples, &request);
                    return false;
                }
                Outcome::Refused(status, body) => {
                    if self.counters.refused.fetch_add(samples as u64, Ordering::Relaxed) == 0 {
                        tracing::warn!(url = %self.target.url, status, answer = %body, "remote write: the store refused samples; they are not sent again");
                    }
                    return failing;
                }
                Outcome::Failed(why) => {
                    if !failing {
                        tracing::warn!(url = %self.target.url, error = %why, "remote write: cannot send; retrying with back-off");
                        failing = true;
                    }
                    self.connection = None;
                    tokio::select! {
                        biased;
                        () = stop.cancelled() => {
                            // Never sent: counted, as is everything the stop leaves unsent.
                            self.counters.dropped.fetch_add(request.seconds as u64, Ordering::Relaxed);
                            return failing;
                        }
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    self.counters.retries.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    fn accepted(&self, samples: usize, request: &Request) {
        self.counters.sent.fetch_add(samples as u64, Ordering::Relaxed);
        self.counters.newest_ms.fetch_max(request.newest_ms, Ordering::Relaxed);
    }

    /// One POST of `request`, within the request timeout.
    async fn attempt(&mut self, request: &Request) -> Outcome {
        match tokio::time::timeout(REQUEST_TIMEOUT, self.post(request)).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome::Failed(format!("no answer in {} s", REQUEST_TIMEOUT.as_secs())),
        }
    }

    async fn post(&mut self, request: &Request) -> Outcome {
        let mut connection = match self.connection.take() {
            Some(c) if !c.is_closed() => c,
            _ => match connect(&self.target).await {
                Ok(c) => c,
                Err(why) => return Outcome::Failed(why),
            },
        };
        if connection.ready().await.is_err() {
            return Outcome::Failed("the connection closed".to_owned());
        }
        let host = if self.target.host.contains(':') {
            format!("[{}]:{}", self.target.host, self.target.port)
        } else {
            format!("{}:{}", self.target.host, self.target.port)
        };
        let mut builder = hyper::Request::post(&self.target.path)
            .header(hyper::header::HOST, host)
            .header(hyper::header::CONTENT_TYPE, "application/x-protobuf")
            .header(hyper::header::CONTENT_ENCODING, "snappy")
            .header(hyper::header::USER_AGENT, concat!("pvfs/", env!("CARGO_PKG_VERSION")))
            .header("X-Prometheus-Remote-Write-Version", "0.1.0");
        if let Some(value) = &self.target.authorization {
            builder = builder.header(hyper::header::AUTHORIZATION, value);
        }
        let Ok(http) = builder.body(axum::body::Body::from(request.body.clone())) else {
            return Outcome::Failed("the request could not be built".to_owned());
        };
        let response = match connection.send_request(http).await {
            Ok(response) => response,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        let status = response.status();
        // What the store says, for the log (a short text), read whole so the connection is
        // ready for the next request.
        let body = axum::body::to_bytes(axum::body::Body::new(response.into_body()), 64 * 1024).await;
        let said = body.map(|b| String::from_utf8_lossy(&b).trim().to_owned()).unwrap_or_default();
        self.connection = Some(connection);
        if status.is_success() {
            Outcome::Accepted
        } else if status.as_u16() == 429 || status.is_server_error() {
            Outcome::Failed(format!("{status}: {said}"))
        } else {
            Outcome::Refused(status.as_u16(), said)
        }
    }
}

/// A connection to the target, over TLS for https.
async fn connect(
    target: &Target,
) -> Result<hyper::client::conn::http1::SendRequest<axum::body::Body>, String> {
    let tcp = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("cannot connect to {}:{}: {e}", target.host, target.port))?;
    let _ = tcp.set_nodelay(true);
    let io: Box<dyn crate::Io> = match &target.roots {
        None => Box::new(tcp),
        Some(roots) => {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots.clone())
                .with_no_client_auth();
            let name = rustls::pki_types::ServerName::try_from(target.host.clone())
                .map_err(|e| format!("{}: {e}", target.host))?;
            let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
            Box::new(
                connector.connect(name, tcp).await.map_err(|e| format!("TLS with {}: {e}", target.host))?,
            )
        }
    };
    let (sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
        .await
        .map_err(|e| e.to_string())?;
    // Ends when the sender is dropped or the peer closes.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// A request's body, ready to send (and to send again).
struct Request {
    body: axum::body::Bytes,
    newest_ms: u64,
    /// The node-seconds it holds.
    seconds: usize,
}

/// `seconds` as requests of at most [`MAX_SAMPLES`] samples (a node-second is never split),
/// each with its count of samples.
fn batches(seconds: &[Second]) -> Vec<(Request, usize)> {
    let mut out = Vec::new();
    let mut series = Vec::new();
    let mut newest_ms = 0;
    let mut held = 0;
    for second in seconds {
        let time_ms = second.last.sample.time_unix_ns / 1_000_000;
        write_second(second, &mut series);
        newest_ms = newest_ms.max(time_ms);
        held += 1;
        if series.len() >= MAX_SAMPLES {
            out.push(request(std::mem::take(&mut series), newest_ms, held));
            newest_ms = 0;
            held = 0;
        }
    }
    if !series.is_empty() {
        out.push(request(series, newest_ms, held));
    }
    out
}

fn request(timeseries: Vec<proto::TimeSeries>, newest_ms: u64, seconds: usize) -> (Request, usize) {
    let samples = timeseries.len();
    let encoded = prost::Message::encode_to_vec(&proto::WriteRequest { timeseries });
    // Remote write's snappy is the block format, not the framed stream format.
    let body = snap::raw::Encoder::new().compress_vec(&encoded).unwrap_or_default();
    (Request { body: body.into(), newest_ms, seconds }, samples)
}

/// The exporter's series of one node-second, appended to `out`, stamped with its time.
pub fn write_second(second: &Second, out: &mut Vec<proto::TimeSeries>) {
    let node = NodeView {
        role: second.role.clone(),
        up: true,
        last: Some(second.last.clone()),
        prev: Some(second.prev.clone()),
    };
    let rates = [node.rates()];
    let mut view = ClusterView::default();
    view.nodes.insert(second.node.clone(), node);
    let timestamp = i64::try_from(second.last.sample.time_unix_ns / 1_000_000).unwrap_or(i64::MAX);
    exporter::visit(&view, &rates, &mut Collect { out, timestamp });
}

/// A [`Sink`] that makes each sample a time series of one point.
struct Collect<'a> {
    out: &'a mut Vec<proto::TimeSeries>,
    timestamp: i64,
}

impl Sink for Collect<'_> {
    fn begin(&mut self, _name: &str, _kind: &str, _help: &str) -> bool {
        true
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let mut all = Vec::with_capacity(labels.len() + 1);
        all.push(proto::Label { name: "__name__".to_owned(), value: name.to_owned() });
        all.extend(
            labels.iter().map(|(k, v)| proto::Label { name: (*k).to_owned(), value: (*v).to_owned() }),
        );
        // The protocol asks for labels sorted by name.
        all.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        self.out.push(proto::TimeSeries {
            labels: all,
            samples: vec![proto::Sample { value, timestamp: self.timestamp }],
        });
    }
}

/// Remote write 1.0's messages (prometheus/prompb's types.proto and remote.proto), the fields
/// pvfs sends: derived here rather than generated, as they are four small messages that have
/// not changed since the protocol's first version.
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct WriteRequest {
        #[prost(message, repeated, tag = "1")]
        pub timeseries: Vec<TimeSeries>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TimeSeries {
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<Label>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<Sample>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub value: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(double, tag = "1")]
        pub value: f64,
        /// Milliseconds since the epoch.
        #[prost(int64, tag = "2")]
        pub timestamp: i64,
    }
}

#[cfg(test)]
mod tests;
