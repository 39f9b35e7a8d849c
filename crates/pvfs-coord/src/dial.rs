//! Dialling agents.
//!
//! The coordinator is the TLS client. It presents its own certificate (clientAuth) and accepts
//! an agent only if the agent's certificate chains to the cluster CA *and* names the address
//! dialled (an IP SAN, or the DNS name in the cluster file): a certificate copied to another
//! machine does not make that machine a trusted agent.

use crate::connector::{AgentConnector, TlsConfigError, client_config};
use pvfs_config::{Address, Node};
use pvfs_proto::pb::agent_client::AgentClient;
use pvfs_tls::Material;
use rustls::pki_types::ServerName;
use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::health_client::HealthClient;

/// How the coordinator secures its connections: always mutual TLS (agents serve nothing else).
#[derive(Debug, Clone)]
pub enum ClientSecurity {
    /// Present `pvfsctl.crt` and verify agents against `ca.crt`.
    MutualTls(Material),
}

/// Opens connections to agents.
#[derive(Debug, Clone)]
pub struct Dialer {
    /// The TLS client configuration every connection shares (see [`crate::connector`]), or
    /// why it could not be built: each dial then fails with that reason (shared, as the
    /// configuration is, by every clone of the dialer).
    tls: Result<Arc<rustls::ClientConfig>, Arc<TlsConfigError>>,
    timeout: Duration,
    /// What bounds each request on its connections (the timeout, unless a caller whose
    /// request may take longer asks for more: [`Dialer::with_request_timeout`]).
    requests: Duration,
}

/// An open connection to one agent.
#[derive(Debug, Clone)]
pub struct Connection {
    pub agent: AgentClient<Channel>,
    pub health: HealthClient<Channel>,
    /// TCP + TLS + HTTP/2 set-up time.
    pub connect_time: Duration,
}

/// Why an agent could not be reached, in terms an operator can act on.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct DialError {
    pub kind: FailureKind,
    pub message: String,
}

/// The broad reason, for scripts (`--json` prints it as `error_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Nothing listens on the port (agent stopped, wrong port).
    Refused,
    /// No answer within the timeout (host down, packets dropped by a firewall).
    Timeout,
    /// No route to the host or network.
    Unreachable,
    /// The host name did not resolve.
    Dns,
    /// TLS failed: the agent's certificate, or ours as the agent judged it.
    Tls,
    /// Connected, but the agent answered with an error.
    Rpc,
    /// The agent refused our certificate's authority: not a coordinator certificate, or
    /// revoked.
    Denied,
    /// Refused before dialling (a bad address or TLS configuration).
    Config,
    /// The connection broke mid-call: the agent exited or crashed, or its node or the network
    /// went away.
    Lost,
    /// Anything else; the message has the detail.
    Other,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Refused => "refused",
            FailureKind::Timeout => "timeout",
            FailureKind::Unreachable => "unreachable",
            FailureKind::Dns => "dns",
            FailureKind::Tls => "tls",
            FailureKind::Rpc => "rpc",
            FailureKind::Denied => "denied",
            FailureKind::Config => "config",
            FailureKind::Lost => "lost",
            FailureKind::Other => "other",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Dialer {
    /// `timeout` bounds connecting and each request.
    pub fn new(security: ClientSecurity, timeout: Duration) -> Dialer {
        let ClientSecurity::MutualTls(material) = &security;
        Dialer { tls: client_config(material).map_err(Arc::new), timeout, requests: timeout }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The same dialer, whose connections give each request up to `limit` (connecting is
    /// still bounded by the timeout): for a request whose work on the node can take minutes.
    pub fn with_request_timeout(&self, limit: Duration) -> Dialer {
        Dialer { requests: limit, ..self.clone() }
    }

    /// Connects to `node`'s agent: TCP, TLS (both ways) and HTTP/2, within the timeout.
    pub async fn connect(&self, node: &Node) -> Result<Connection, DialError> {
        let (endpoint, connector) = self.endpoint(&node.address)?;
        let started = Instant::now();
        let channel =
            match tokio::time::timeout(self.timeout, endpoint.connect_with_connector(connector)).await {
                Err(_) => return Err(timed_out(&node.address, self.timeout)),
                Ok(Err(err)) => return Err(explain(&err, &node.address, self.timeout)),
                Ok(Ok(channel)) => channel,
            };
        Ok(Connection {
            agent: AgentClient::new(channel.clone()),
            health: HealthClient::new(channel),
            connect_time: started.elapsed(),
        })
    }

    /// The endpoint (its URI gives the requests' `:authority`; TLS is the connector's, so the
    /// scheme is `http`) and the connector that dials it with the shared TLS configuration.
    fn endpoint(&self, address: &Address) -> Result<(Endpoint, AgentConnector), DialError> {
        let config_error = |message: String| DialError { kind: FailureKind::Config, message };
        let tls = self.tls.clone().map_err(|e| config_error(e.to_string()))?;
        let name = ServerName::try_from(address.tls_name())
            .map_err(|e| config_error(format!("bad address {address}: {e}")))?;
        let endpoint = Endpoint::from_shared(format!("http://{address}"))
            .map_err(|e| config_error(format!("bad address {address}: {e}")))?
            .connect_timeout(self.timeout)
            .timeout(self.requests);
        // The host the agent's certificate must name is also the one to dial.
        Ok((endpoint, AgentConnector::new(tls, address.tls_name(), address.port, name)))
    }
}

/// No answer in time: the host is down, the address is wrong, or a firewall drops packets.
pub fn timed_out(address: &Address, timeout: Duration) -> DialError {
    DialError {
        kind: FailureKind::Timeout,
        message: format!(
            "timed out after {}: no answer from {address} (host down, wrong address, or a firewall dropping packets)",
            humanize(timeout)
        ),
    }
}

fn humanize(d: Duration) -> String {
    if d.subsec_millis() == 0 { format!("{}s", d.as_secs()) } else { format!("{:.1}s", d.as_secs_f64()) }
}

/// Turns a transport or RPC error into the reason an operator can act on, by looking for the
/// I/O or TLS error underneath tonic's and hyper's wrappers.
pub fn explain(err: &(dyn StdError + 'static), address: &Address, timeout: Duration) -> DialError {
    let mut source: Option<&(dyn StdError + 'static)> = Some(err);
    let mut innermost = err.to_string();
    while let Some(e) = source {
        let text = e.to_string();
        // A name lookup that failed: std's words, in the I/O error from our connector (or in
        // any wrapper that repeats them).
        if text.contains("failed to lookup address") || text.contains("Name or service not known") {
            return DialError {
                kind: FailureKind::Dns,
                message: format!("cannot resolve {}: {text}", address.tls_name()),
            };
        }
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return DialError { kind: FailureKind::Tls, message: explain_tls(tls, address) };
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            // tokio-rustls reports TLS failures as io::Error wrapping the rustls::Error.
            if let Some(tls) = io.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
                return DialError { kind: FailureKind::Tls, message: explain_tls(tls, address) };
            }
            // After the handshake (TLS 1.3 sends the server's verdict on our certificate
            // then), h2 hands the error over as text only.
            if let Some(alert) = text.strip_prefix("received fatal alert: ") {
                return DialError { kind: FailureKind::Tls, message: rejected_by_agent(alert) };
            }
            use std::io::ErrorKind as K;
            let (kind, message) = match io.kind() {
                K::ConnectionRefused => {
                    (FailureKind::Refused, format!("connection refused: no agent listening on {address}"))
                }
                K::TimedOut => return timed_out(address, timeout),
                K::HostUnreachable | K::NetworkUnreachable => {
                    (FailureKind::Unreachable, format!("{address} is unreachable: {io}"))
                }
                K::ConnectionReset | K::UnexpectedEof | K::BrokenPipe => (
                    FailureKind::Tls,
                    format!(
                        "the agent closed the connection during set-up ({io}); it may have rejected our certificate, or something other than a pvfs agent listens there"
                    ),
                ),
                _ => (FailureKind::Other, io.to_string()),
            };
            return DialError { kind, message };
        }
        innermost = text;
        source = e.source();
    }
    DialError { kind: FailureKind::Other, message: innermost }
}

/// An RPC failed after connecting. Transport problems underneath (the agent's TLS alert on our
/// certificate arrives here with TLS 1.3) are explained like connection failures; a connection
/// that broke mid-call, or an agent that does not know the call, says so rather than passing
/// on HTTP/2's words for it.
pub fn from_status(status: &tonic::Status, address: &Address, timeout: Duration) -> DialError {
    if let Some(broken) = broken_connection(status) {
        return DialError {
            kind: FailureKind::Lost,
            message: format!(
                "the connection to the agent at {address} broke mid-call ({broken}): the agent exited \
                 or crashed, its node went down, or the network dropped; its log is on that node \
                 (`journalctl -u pvfs-agent`)"
            ),
        };
    }
    if status.code() == tonic::Code::Unimplemented {
        return DialError {
            kind: FailureKind::Rpc,
            message: format!(
                "the agent at {address} does not know this call ({}): it runs another version of \
                 pvfs-agent than this pvfsctl ({}); install the same version on both (`pvfsctl \
                 nodes` shows each agent's)",
                status.message(),
                env!("CARGO_PKG_VERSION")
            ),
        };
    }
    if let Some(source) = status.source() {
        let explained = explain(source, address, timeout);
        if explained.kind != FailureKind::Other {
            return explained;
        }
    }
    if status.code() == tonic::Code::PermissionDenied {
        // The agent's own checks after the handshake (usage, revocation): its message says
        // which and what to do.
        return DialError {
            kind: FailureKind::Denied,
            message: format!("the agent refused this coordinator: {}", status.message()),
        };
    }
    DialError {
        kind: FailureKind::Rpc,
        message: format!("the agent answered {:?}: {}", status.code(), status.message()),
    }
}

/// What broke, when the call failed because its HTTP/2 connection did (the peer reset or
/// closed it, or an I/O error under it) rather than because the agent answered an error.
fn broken_connection(status: &tonic::Status) -> Option<String> {
    let mut source: Option<&(dyn StdError + 'static)> = status.source();
    while let Some(e) = source {
        if let Some(h2) = e.downcast_ref::<h2::Error>() {
            // Every HTTP/2 failure under a call is the connection going (an I/O error, a
            // GOAWAY, a reset) but a stream the agent refused to start, which says nothing
            // about the agent being gone.
            return (h2.reason() != Some(h2::Reason::REFUSED_STREAM)).then(|| h2.to_string());
        }
        source = e.source();
    }
    // hyper reports a body cut short as text only ("error reading a body from connection").
    let message = status.message();
    (status.code() == tonic::Code::Unknown && message.starts_with("h2 protocol error"))
        .then(|| message.trim_start_matches("h2 protocol error: ").to_owned())
}

/// The agent ended the handshake with an alert: almost always our certificate.
fn rejected_by_agent(alert: &str) -> String {
    format!(
        "TLS rejected by the agent: it does not accept our certificate (alert {alert}); \
         is pvfsctl.crt issued by the same CA as the agent's ca.crt?"
    )
}

/// What a rustls error means for this connection.
fn explain_tls(err: &rustls::Error, address: &Address) -> String {
    use rustls::{CertificateError as C, Error as E};
    match err {
        E::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => {
            "TLS rejected: the agent's certificate is not signed by this cluster's CA (wrong --tls-dir, or the agent has another cluster's certificate)".into()
        }
        E::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => format!(
            "TLS rejected: the agent's certificate does not name {} ({err}); reissue it with `pvfsctl ca issue NODE --san {}`",
            address.tls_name(),
            address.tls_name()
        ),
        E::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            format!("TLS rejected: the agent's certificate has expired ({err}); reissue it with `pvfsctl ca issue NODE --force`")
        }
        E::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => {
            format!("TLS rejected: the agent's certificate is not valid yet ({err}); check both clocks")
        }
        E::AlertReceived(alert) => rejected_by_agent(&format!("{alert:?}")),
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => {
            "TLS failed: the peer did not answer with TLS (is something other than a pvfs agent listening there?)".into()
        }
        other => format!("TLS failed: {other}"),
    }
}

/// A dialer whose certificates are never read: for tests of what holds one but dials nobody.
#[cfg(test)]
pub(crate) fn unused_dialer() -> Dialer {
    let material = Material {
        ca_pem: String::new(),
        cert_pem: String::new(),
        key_pem: String::new(),
        ca_path: "ca.crt".into(),
        cert_path: "pvfsctl.crt".into(),
        key_path: "pvfsctl.key".into(),
    };
    Dialer::new(ClientSecurity::MutualTls(material), Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address() -> Address {
        Address::from(std::net::SocketAddr::from(([10, 0, 0, 5], 7070)))
    }

    #[test]
    fn a_call_cut_short_says_the_agent_went_away_and_where_its_log_is() {
        // What tonic makes of hyper's error when the agent's process dies mid-stream (seen in
        // the lifecycle test that kills an agent during mkfs).
        let status = tonic::Status::unknown("h2 protocol error: error reading a body from connection");
        let err = from_status(&status, &address(), Duration::from_secs(5));
        assert_eq!(err.kind, FailureKind::Lost);
        assert!(err.message.starts_with("the connection to the agent at 10.0.0.5:7070 broke mid-call (error reading a body from connection)"), "{}", err.message);
        assert!(err.message.contains("journalctl -u pvfs-agent"), "{}", err.message);
        // An answer the agent chose is not a lost connection.
        let answered =
            from_status(&tonic::Status::unknown("some handler error"), &address(), Duration::from_secs(5));
        assert_eq!(answered.kind, FailureKind::Rpc);
    }

    #[test]
    fn a_call_the_agent_does_not_know_names_the_version_mismatch() {
        let status = tonic::Status::unimplemented("");
        let err = from_status(&status, &address(), Duration::from_secs(5));
        assert!(err.message.contains("another version of pvfs-agent than this pvfsctl"), "{}", err.message);
        assert!(err.message.contains(env!("CARGO_PKG_VERSION")), "{}", err.message);
    }
}
