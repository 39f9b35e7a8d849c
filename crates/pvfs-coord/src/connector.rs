//! The coordinator's own TLS connector: one rustls client configuration for every agent.
//!
//! tonic's `ClientTlsConfig` builds a fresh rustls `ClientConfig` for every endpoint: the CA
//! parsed into a root store, the key loaded, and a session cache of 256 slots allocated. That
//! is about 18 KB and a key parse per agent: 180 MB and 10,000 parses for a coordinator that
//! follows 10,000 agents (heaptrack of `pvfsctl serve`). The configuration depends only on the
//! coordinator's certificate and the CA, so it is built once per [`Dialer`](crate::Dialer)
//! and shared; each connection names the agent it expects in its own handshake.
//!
//! What tonic's connector did, this one does too: TCP with `TCP_NODELAY`, TLS 1.3 with the
//! coordinator's certificate, ALPN `h2` required. Errors stay `io::Error`s carrying the
//! `rustls::Error` (tokio-rustls's shape), which is what [`explain`](crate::dial::explain)
//! reads.

use hyper_util::rt::TokioIo;
use pvfs_tls::Material;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tonic::codegen::Service;
use tonic::codegen::http::Uri;

const ALPN_H2: &[u8] = b"h2";

/// Why the coordinator's TLS client configuration could not be built from its files: each
/// names the file at fault.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsConfigError {
    /// `ca.crt` or the coordinator's certificate is not PEM.
    #[error("{} is not a valid PEM certificate: {source}", path.display())]
    NotPemCertificate {
        path: PathBuf,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// `ca.crt` parsed, but none of its certificates is one rustls can use.
    #[error("{} holds no usable CA certificate", path.display())]
    NoCa { path: PathBuf },
    /// The coordinator's key is not PEM.
    #[error("{} is not a valid PEM private key: {source}", path.display())]
    NotPemKey {
        path: PathBuf,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// rustls refused its own default protocol versions (a build without them).
    #[error("TLS configuration: {0}")]
    Protocols(#[source] rustls::Error),
    /// The certificate and key do not go together, or rustls cannot use them.
    #[error("{} and {} cannot be used as the coordinator's identity: {source}", cert.display(), key.display())]
    Identity {
        cert: PathBuf,
        key: PathBuf,
        #[source]
        source: rustls::Error,
    },
}

/// The client side of mutual TLS with the cluster's agents: trusts `ca.crt` (every certificate
/// in it), presents the coordinator's certificate chain and key. Built once, shared by every
/// connection.
pub(crate) fn client_config(material: &Material) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let mut roots = RootCertStore::empty();
    let cas = CertificateDer::pem_slice_iter(material.ca_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsConfigError::NotPemCertificate { path: material.ca_path.clone(), source })?;
    let (added, _) = roots.add_parsable_certificates(cas);
    if added == 0 {
        return Err(TlsConfigError::NoCa { path: material.ca_path.clone() });
    }
    let chain =
        CertificateDer::pem_slice_iter(material.cert_pem.as_bytes()).collect::<Result<Vec<_>, _>>().map_err(
            |source| TlsConfigError::NotPemCertificate { path: material.cert_path.clone(), source },
        )?;
    let key = PrivateKeyDer::from_pem_slice(material.key_pem.as_bytes())
        .map_err(|source| TlsConfigError::NotPemKey { path: material.key_path.clone(), source })?;
    let mut config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(TlsConfigError::Protocols)?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|source| TlsConfigError::Identity {
            cert: material.cert_path.clone(),
            key: material.key_path.clone(),
            source,
        })?;
    config.alpn_protocols.push(ALPN_H2.to_vec());
    Ok(Arc::new(config))
}

/// Dials one agent: `host:port` over TCP, then TLS verifying the agent's certificate against
/// `name`. tonic calls it again to reconnect after a connection breaks.
#[derive(Clone)]
pub(crate) struct AgentConnector {
    config: Arc<ClientConfig>,
    host: String,
    port: u16,
    name: ServerName<'static>,
}

impl AgentConnector {
    pub(crate) fn new(config: Arc<ClientConfig>, host: String, port: u16, name: ServerName<'static>) -> Self {
        AgentConnector { config, host, port, name }
    }
}

impl Service<Uri> for AgentConnector {
    type Response = TokioIo<TlsStream<TcpStream>>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// The URI is the endpoint's (`http://host:port`, for the requests' `:authority`); the
    /// connector was made for that same address.
    fn call(&mut self, _: Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            // Every address the name resolves to, in turn (tokio's, as hyper's connector did).
            let tcp = TcpStream::connect((this.host.as_str(), this.port)).await?;
            tcp.set_nodelay(true)?;
            let tls = TlsConnector::from(this.config).connect(this.name, tcp).await?;
            if tls.get_ref().1.alpn_protocol() != Some(ALPN_H2) {
                return Err(io::Error::other(
                    "the peer completed TLS but does not speak HTTP/2 (no ALPN h2): it is not a pvfs agent",
                ));
            }
            Ok(TokioIo::new(tls))
        })
    }
}
