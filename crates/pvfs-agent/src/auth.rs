//! Who may call the `pvfs.v1.Agent` service: a coordinator certificate, checked on every
//! request.
//!
//! The TLS handshake has already proven that the client holds a key whose certificate chains
//! to the cluster CA. What it does not prove is that the certificate is *for commanding agents*:
//! webpki, like most TLS libraries, treats a certificate without the extended-key-usage
//! extension as good for any purpose, and knows nothing of pvfs's list of revoked serials. So
//! every request is checked here again, with [`pvfs_tls::check_coordinator`]: the clientAuth
//! usage must be named explicitly, and the serial must not be in `revoked.txt` (re-read when it
//! changes, so a revocation applies to the next request, even on a connection opened before).
//!
//! This is an interceptor rather than a custom rustls client verifier: tonic's
//! `ServerTlsConfig` does not take one, and a refusal here is a gRPC `PERMISSION_DENIED` with a
//! message `pvfsctl` can show, where a refused handshake is an opaque TLS alert.

use pvfs_tls::RevokedWatch;
use tonic::service::Interceptor;
use tonic::{Request, Status};

/// Admits only coordinator certificates that are not revoked.
#[derive(Debug, Clone)]
pub(crate) struct CoordinatorOnly {
    revoked: RevokedWatch,
}

impl CoordinatorOnly {
    pub(crate) fn new(revoked: RevokedWatch) -> CoordinatorOnly {
        CoordinatorOnly { revoked }
    }
}

impl Interceptor for CoordinatorOnly {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        // The server requires a client certificate, so a request without one cannot arrive
        // over TLS; refuse rather than assume.
        let certs = request.peer_certs().ok_or_else(|| {
            Status::permission_denied(
                "no client certificate: connect with mutual TLS and a coordinator certificate",
            )
        })?;
        let leaf =
            certs.first().ok_or_else(|| Status::permission_denied("the client sent no certificate"))?;
        let revoked = self.revoked.current().map_err(|why| {
            // Failing closed: a list that cannot be read may hold the very certificate asking.
            tracing::error!(list = %self.revoked.path().display(), error = %why, "cannot read the revoked list; refusing every request");
            Status::permission_denied(format!(
                "this agent cannot read its list of revoked certificates ({why}); it refuses every request until the list is fixed"
            ))
        })?;
        if let Err(refusal) = pvfs_tls::check_coordinator(leaf, &revoked) {
            tracing::warn!(%refusal, "request refused");
            return Err(Status::permission_denied(refusal.to_string()));
        }
        Ok(request)
    }
}
