//! Checking that a certificate is usable before serving or dialling with it, so a mistake
//! shows up as a clear message at start-up rather than as a failed handshake on a peer.

use crate::{Material, TlsError, Usage};
use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::crypto::ring;
use rustls::server::WebPkiClientVerifier;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::sync::Arc;
use time::OffsetDateTime;

/// What a certificate says about itself.
#[derive(Debug, Clone)]
pub struct CertSummary {
    pub common_name: String,
    pub sans: Vec<String>,
    pub not_after: OffsetDateTime,
}

/// Checks that `material`'s certificate matches its key, chains to its CA, is valid now and
/// has the usage the holder needs. Returns what the certificate says about itself.
pub fn check_identity(material: &Material, usage: Usage) -> Result<CertSummary, TlsError> {
    let bad_cert = || TlsError::BadPem { path: material.cert_path.clone(), what: "certificate" };
    let cert = CertificateDer::from_pem_slice(material.cert_pem.as_bytes()).map_err(|_| bad_cert())?;
    let key = PrivateKeyDer::from_pem_slice(material.key_pem.as_bytes())
        .map_err(|_| TlsError::BadPem { path: material.key_path.clone(), what: "private key" })?;
    let ca = CertificateDer::from_pem_slice(material.ca_pem.as_bytes())
        .map_err(|_| TlsError::BadPem { path: material.ca_path.clone(), what: "CA certificate" })?;

    let signing_key = ring::sign::any_supported_type(&key).map_err(|_| TlsError::BadPem {
        path: material.key_path.clone(),
        what: "private key (unsupported type)",
    })?;
    CertifiedKey::new(vec![cert.clone()], signing_key).keys_match().map_err(|_| TlsError::KeyMismatch {
        cert: material.cert_path.clone(),
        key: material.key_path.clone(),
    })?;

    let summary = summarize(&cert).ok_or_else(bad_cert)?;
    let mut roots = RootCertStore::empty();
    roots.add(ca).map_err(|e| untrusted(material, e.to_string()))?;
    let roots = Arc::new(roots);
    let provider = Arc::new(ring::default_provider());
    let now = UnixTime::now();
    match usage {
        Usage::Agent => {
            let verifier = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| untrusted(material, e.to_string()))?;
            let name = summary.sans.first().cloned().unwrap_or_else(|| summary.common_name.clone());
            let server_name = ServerName::try_from(name.as_str()).map_err(|_| {
                untrusted(material, format!("its name {name:?} is not a DNS name or IP address"))
            })?;
            verifier
                .verify_server_cert(&cert, &[], &server_name, &[], now)
                .map_err(|e| untrusted(material, e.to_string()))?;
        }
        Usage::Coordinator => {
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| untrusted(material, e.to_string()))?;
            verifier.verify_client_cert(&cert, &[], now).map_err(|e| untrusted(material, e.to_string()))?;
        }
    }
    Ok(summary)
}

fn untrusted(material: &Material, reason: String) -> TlsError {
    TlsError::Untrusted { cert: material.cert_path.clone(), ca: material.ca_path.clone(), reason }
}

/// Subject CN, SANs and expiry.
fn summarize(cert: &CertificateDer<'_>) -> Option<CertSummary> {
    use x509_parser::extensions::GeneralName;
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let common_name = parsed
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut sans = Vec::new();
    if let Ok(Some(ext)) = parsed.subject_alternative_name() {
        for name in &ext.value.general_names {
            match name {
                GeneralName::DNSName(dns) => sans.push((*dns).to_owned()),
                GeneralName::IPAddress(octets) => {
                    if let Ok(v4) = <[u8; 4]>::try_from(*octets) {
                        sans.push(std::net::IpAddr::from(v4).to_string());
                    } else if let Ok(v6) = <[u8; 16]>::try_from(*octets) {
                        sans.push(std::net::IpAddr::from(v6).to_string());
                    }
                }
                _ => {}
            }
        }
    }
    let not_after = parsed.validity().not_after.to_datetime();
    Some(CertSummary { common_name, sans, not_after })
}
