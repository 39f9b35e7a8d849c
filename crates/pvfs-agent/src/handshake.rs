//! The agent's side of the TLS handshake: the rustls server configuration, and each admitted
//! connection's handshake, after which the gate learns whether its client is a coordinator.
//!
//! The agent runs the handshake itself rather than through tonic's `tls_config`, for the
//! connection table (`limits::Gate`): only here is it known when a handshake has finished and
//! with which certificate, and a connection that proved a current coordinator certificate must
//! never be evicted for a flood's. The TLS streams go to tonic as plain I/O; tonic implements
//! `Connected` for `tokio_rustls::server::TlsStream`, so `Request::peer_certs()` still gives
//! `auth` the client's certificate, and what a certificate may *do* stays `auth`'s question
//! (with its `PERMISSION_DENIED` reasons).
//!
//! The configuration is what tonic's `ServerTlsConfig` built: the agent's certificate and
//! key, client certificates required and verified against the cluster CA, ALPN `h2`, TLS 1.2
//! and 1.3 with ring.

use crate::AgentError;
use crate::limits::Admitted;
use pvfs_tls::{Material, RevokedWatch, TlsError};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_rustls::server::TlsStream;

/// The server's TLS from its material: its certificate chain and key, and client certificates
/// required and verified against the cluster CA.
pub(crate) fn server_config(material: &Material) -> Result<Arc<ServerConfig>, AgentError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let bad = |path: &std::path::Path, what: &'static str| TlsError::BadPem { path: path.to_owned(), what };
    let cas = CertificateDer::pem_slice_iter(material.ca_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| bad(&material.ca_path, "certificate"))?;
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(cas);
    if added == 0 {
        return Err(bad(&material.ca_path, "certificate").into());
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| AgentError::ServerTls(e.to_string()))?;
    let chain = CertificateDer::pem_slice_iter(material.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| bad(&material.cert_path, "certificate"))?;
    let key = PrivateKeyDer::from_pem_slice(material.key_pem.as_bytes())
        .map_err(|_| bad(&material.key_path, "private key"))?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| AgentError::ServerTls(e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| AgentError::ServerTls(format!("{}: {e}", material.cert_path.display())))?;
    config.alpn_protocols.push(b"h2".to_vec());
    Ok(Arc::new(config))
}

/// What every connection's handshake needs; cheap to clone (shared).
#[derive(Clone)]
pub(crate) struct Handshake {
    config: Arc<ServerConfig>,
    revoked: RevokedWatch,
}

impl std::fmt::Debug for Handshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handshake").field("revoked", &self.revoked.path()).finish_non_exhaustive()
    }
}

impl Handshake {
    pub(crate) fn new(config: Arc<ServerConfig>, revoked: RevokedWatch) -> Handshake {
        Handshake { config, revoked }
    }

    /// The TLS handshake of one admitted connection whose client has sent something, to end
    /// by `deadline` (`HANDSHAKE_TIMEOUT` from admission); `None` when it failed, timed out or
    /// the connection was evicted meanwhile. A client whose certificate is a current
    /// coordinator's is then proven to the gate.
    pub(crate) async fn run(
        &self,
        admitted: Admitted,
        peer: SocketAddr,
        deadline: tokio::time::Instant,
    ) -> Option<TlsStream<Admitted>> {
        let handshake = async {
            // The ClientHello first, on its own: once it is whole the gate evicts this
            // connection only after every one that has not got that far (see `Gate`).
            let mut start =
                tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), admitted).await?;
            if !start.io.greet() {
                return Err(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "evicted"));
            }
            start.into_stream(self.config.clone()).await
        };
        let mut tls = match tokio::time::timeout_at(deadline, handshake).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(err)) => {
                tracing::debug!(peer = %peer, error = %err, "TLS handshake failed");
                return None;
            }
            Err(_) => {
                tracing::debug!(peer = %peer, "TLS handshake timed out");
                return None;
            }
        };
        if self.is_coordinator(&tls) && !tls.get_mut().0.prove() {
            // Evicted between the handshake's end and now: its I/O fails from here on anyway.
            return None;
        }
        Some(tls)
    }

    /// The client's certificate is a coordinator's and not revoked, as `auth` will ask of every
    /// request (a revoked list that cannot be read proves nobody).
    fn is_coordinator(&self, tls: &TlsStream<Admitted>) -> bool {
        let Some(leaf) = tls.get_ref().1.peer_certificates().and_then(|certs| certs.first()) else {
            return false;
        };
        self.revoked.current().is_ok_and(|revoked| pvfs_tls::check_coordinator(leaf, &revoked).is_ok())
    }
}
