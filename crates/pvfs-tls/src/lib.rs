//! The cluster's certificates: a private CA, the agents' server certificates and the
//! coordinator's client certificate, as PEM files in one directory.
//!
//! Layout of a TLS directory: `ca.crt` (everyone), `ca.key` (only where certificates are
//! issued, normally the coordinator's machine), `revoked.txt` (serials no longer trusted, see
//! [`revoked`]), and `NAME.crt` + `NAME.key` per holder. The directory's own names are
//! reserved: no holder can be called `ca`, so a leaf can never overwrite the CA's files. Keys
//! are written mode 0600. Agent certificates carry the serverAuth usage and the coordinator's
//! clientAuth only, so an agent's certificate cannot be used to command other agents; agents
//! check that usage explicitly on every request ([`check_coordinator`]), because TLS libraries
//! treat a certificate with no usage extension at all as good for anything.
//!
//! This crate knows files and X.509; it does not know gRPC. The agent and the coordinator turn
//! a loaded [`Material`] into their transport's TLS configuration.

mod ca;
mod check;
mod material;
pub mod revoked;

pub use ca::{IssueOptions, Issued, Usage, init_ca, issue, issue_with};
pub use check::{CertSummary, Refusal, check_coordinator, check_identity};
pub use material::{Material, load};
pub use revoked::{
    Revocation, RevokedList, RevokedWatch, Serial, SerialError, revoke, revoke_named, serial_of,
};

use std::path::PathBuf;

/// File names inside a TLS directory.
pub const CA_CERT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";
/// The serials of revoked certificates (see [`revoked`]).
pub const REVOKED: &str = "revoked.txt";

/// Every name the directory uses for itself. A holder's `NAME.crt` and `NAME.key` may never be
/// one of these, with or without `--force`.
pub const RESERVED_FILES: [&str; 3] = [CA_CERT, CA_KEY, REVOKED];

/// The name the coordinator's certificate is issued under by default.
pub const COORDINATOR_NAME: &str = "pvfsctl";

/// The most of a certificate or key file read: a PEM certificate with a long chain is a few
/// KiB; past this it is not one.
pub const PEM_FILE: pvfs_host::local_file::Cap =
    pvfs_host::local_file::Cap { what: "a PEM certificate or key", bytes: 1 << 20 };

/// Reads a certificate or key file the user's directory holds, as [`TlsError::Read`] or
/// [`TlsError::File`].
pub(crate) fn read_pem(path: &std::path::Path) -> Result<String, TlsError> {
    pvfs_host::local_file::read_to_string(path, PEM_FILE).map_err(|err| match err.into_io() {
        Ok(source) => TlsError::Read { path: path.to_owned(), source },
        Err(refused) => TlsError::File(refused),
    })
}

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
    /// Not a regular file, or larger than [`PEM_FILE`]: refused unread.
    #[error(transparent)]
    File(pvfs_host::local_file::LocalFileError),
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
    #[error("{} cannot be used {role}: {reason}", cert.display())]
    WrongUsage { cert: PathBuf, role: &'static str, reason: String },
    #[error("invalid name {name:?} for a certificate: {why}")]
    BadName { name: String, why: &'static str },
    #[error(
        "the name {name:?} is reserved: {file} is the TLS directory's own file ({}), and a holder's \
         certificate may never replace it, with or without --force; pick another name",
        RESERVED_FILES.join(", ")
    )]
    Reserved { name: String, file: &'static str },
    #[error("{}:{line}: {why}", path.display())]
    BadRevoked { path: PathBuf, line: usize, why: SerialError },
    #[error("--days {days}: {why}")]
    BadLifetime { days: u32, why: String },
    #[error("{what:?} is neither a certificate in {} nor a serial: {why}", dir.display())]
    NotRevocable { what: String, dir: PathBuf, why: String },
}

/// Refuses `name` when one of the files a holder of that name gets (`NAME.crt`, `NAME.key`) is
/// one the directory uses for itself. Compared without regard to case, so a directory copied to
/// a case-insensitive file system keeps the rule.
pub(crate) fn check_not_reserved(name: &str) -> Result<(), TlsError> {
    for own in [format!("{name}.crt"), format!("{name}.key")] {
        if let Some(file) = RESERVED_FILES.iter().find(|f| f.eq_ignore_ascii_case(&own)) {
            return Err(TlsError::Reserved { name: name.to_owned(), file });
        }
    }
    Ok(())
}

fn hint_for_read(err: &std::io::Error) -> &'static str {
    if err.kind() == std::io::ErrorKind::NotFound {
        " (create the CA with `pvfsctl ca init --dir DIR` and certificates with `pvfsctl ca issue NAME --dir DIR`)"
    } else {
        ""
    }
}
