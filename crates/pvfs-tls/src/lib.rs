//! The cluster's certificates: a private CA, the agents' server certificates and the
//! coordinator's client certificate, as PEM files in one directory.
//!
//! Layout of a TLS directory: `ca.crt` (everyone), `ca.key` (only where certificates are
//! issued, normally the coordinator's machine), and `NAME.crt` + `NAME.key` per holder. Keys
//! are written mode 0600. Agent certificates carry the serverAuth usage and the coordinator's
//! clientAuth only, so an agent's certificate cannot be used to command other agents.
//!
//! This crate knows files and X.509; it does not know gRPC. The agent and the coordinator turn
//! a loaded [`Material`] into their transport's TLS configuration.

mod ca;
mod check;
mod material;

pub use ca::{Issued, Usage, init_ca, issue};
pub use check::{CertSummary, check_identity};
pub use material::{Material, load};

use std::path::PathBuf;

/// File names inside a TLS directory.
pub const CA_CERT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";

/// The name the coordinator's certificate is issued under by default.
pub const COORDINATOR_NAME: &str = "pvfsctl";

/// Something about the TLS directory or its files is wrong.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{} already exists; refusing to overwrite it (pass --force to replace it, after making sure nothing still uses it)", path.display())]
    Exists { path: PathBuf },
    #[error("cannot read {}: {source}{}", path.display(), hint_for_read(source))]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a valid PEM {what}", path.display())]
    BadPem { path: PathBuf, what: &'static str },
    #[error("cannot generate a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("{} does not match the key in {}", cert.display(), key.display())]
    KeyMismatch { cert: PathBuf, key: PathBuf },
    #[error("{} is not trusted by {}: {reason}", cert.display(), ca.display())]
    Untrusted { cert: PathBuf, ca: PathBuf, reason: String },
    #[error("invalid name {name:?} for a certificate: {why}")]
    BadName { name: String, why: &'static str },
}

fn hint_for_read(err: &std::io::Error) -> &'static str {
    if err.kind() == std::io::ErrorKind::NotFound {
        " (create the CA with `pvfsctl ca init --dir DIR` and certificates with `pvfsctl ca issue NAME --dir DIR`)"
    } else {
        ""
    }
}
