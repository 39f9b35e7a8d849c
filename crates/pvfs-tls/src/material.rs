//! Loading a holder's certificate, key and the CA from a TLS directory.

use crate::{CA_CERT, TlsError};
use std::path::{Path, PathBuf};

/// The PEM files one holder (an agent or the coordinator) needs.
#[derive(Clone)]
pub struct Material {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    pub ca_path: PathBuf,
    pub cert_path: PathBuf,
    pub key_path: PathBuf,
}

impl std::fmt::Debug for Material {
    /// Never prints the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Material")
            .field("ca", &self.ca_path)
            .field("cert", &self.cert_path)
            .finish_non_exhaustive()
    }
}

/// Reads `dir/ca.crt`, `dir/NAME.crt` and `dir/NAME.key`.
pub fn load(dir: &Path, name: &str) -> Result<Material, TlsError> {
    // A holder named like the directory's own files would load the CA as its identity.
    crate::check_not_reserved(name)?;
    let ca_path = dir.join(CA_CERT);
    let cert_path = dir.join(format!("{name}.crt"));
    let key_path = dir.join(format!("{name}.key"));
    Ok(Material {
        ca_pem: crate::read_pem(&ca_path)?,
        cert_pem: crate::read_pem(&cert_path)?,
        key_pem: crate::read_pem(&key_path)?,
        ca_path,
        cert_path,
        key_path,
    })
}
