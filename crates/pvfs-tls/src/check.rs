//! Checking that a certificate is usable before serving or dialling with it, so a mistake
//! shows up as a clear message at start-up rather than as a failed handshake on a peer.

use crate::{Material, RevokedList, Serial, TlsError, Usage};
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
    let usages = usages_of(&cert).ok_or_else(bad_cert)?;
    let wrong = |role, reason: &str| TlsError::WrongUsage {
        cert: material.cert_path.clone(),
        role,
        reason: format!("{reason} (its extended key usages: {usages})"),
    };
    // webpki accepts a certificate without the extended-key-usage extension for any purpose;
    // pvfs does not: each holder's certificate must say what it is for.
    match usage {
        Usage::Agent if !usages.server_auth => {
            return Err(wrong("by an agent", "an agent's certificate must have the serverAuth usage"));
        }
        // An agent's certificate that is also a client certificate would let whoever takes
        // one node command every other node.
        Usage::Agent if usages.client_auth => {
            return Err(wrong(
                "by an agent",
                "an agent's certificate must not have the clientAuth usage (it could command other agents)",
            ));
        }
        Usage::Coordinator if !usages.client_auth => {
            return Err(wrong(
                "as the coordinator",
                "a coordinator certificate must have the clientAuth usage; issue one with `pvfsctl ca issue pvfsctl --dir DIR`",
            ));
        }
        _ => {}
    }
    Ok(summary)
}

/// The extended key usages a certificate names, as far as pvfs cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Usages {
    /// The extension is there at all.
    present: bool,
    server_auth: bool,
    client_auth: bool,
}

impl std::fmt::Display for Usages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let named: Vec<&str> = [(self.server_auth, "serverAuth"), (self.client_auth, "clientAuth")]
            .into_iter()
            .filter_map(|(has, name)| has.then_some(name))
            .collect();
        match (self.present, named.is_empty()) {
            (false, _) => f.write_str("none: the extension is absent"),
            (true, true) => f.write_str("neither serverAuth nor clientAuth"),
            (true, false) => f.write_str(&named.join(", ")),
        }
    }
}

fn usages_of(cert: &[u8]) -> Option<Usages> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert).ok()?;
    Some(match parsed.extended_key_usage().ok()? {
        Some(eku) => {
            Usages { present: true, server_auth: eku.value.server_auth, client_auth: eku.value.client_auth }
        }
        None => Usages { present: false, server_auth: false, client_auth: false },
    })
}

/// Why an agent refuses a client that passed the TLS handshake.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the client certificate cannot be parsed")]
    Unreadable,
    #[error(
        "certificate {subject:?} (serial {serial}) is not a coordinator certificate: it lacks the clientAuth \
         usage (its extended key usages: {usages}); only a certificate from `pvfsctl ca issue pvfsctl` may command agents"
    )]
    NotClientAuth { subject: String, serial: Serial, usages: String },
    #[error(
        "certificate {subject:?} (serial {serial}) is revoked (listed in this agent's revoked.txt); \
         use a newly issued coordinator certificate (`pvfsctl ca issue pvfsctl --dir DIR --force`)"
    )]
    Revoked { subject: String, serial: Serial },
}

/// Decides whether the client certificate `cert` (DER, already verified against the CA by the
/// TLS handshake) may command an agent: it must name the clientAuth usage explicitly (an
/// absent extension is not enough, whatever webpki makes of it) and not be revoked.
pub fn check_coordinator(cert: &[u8], revoked: &RevokedList) -> Result<(), Refusal> {
    let der = CertificateDer::from(cert);
    let summary = summarize(&der).ok_or(Refusal::Unreadable)?;
    let serial = crate::serial_of(cert).ok_or(Refusal::Unreadable)?;
    let usages = usages_of(cert).ok_or(Refusal::Unreadable)?;
    let subject = summary.common_name;
    if revoked.contains(&serial) {
        return Err(Refusal::Revoked { subject, serial });
    }
    if !usages.client_auth {
        return Err(Refusal::NotClientAuth { subject, serial, usages: usages.to_string() });
    }
    Ok(())
}

/// When a PEM certificate stops being valid.
pub(crate) fn not_after_of_pem(pem: &str) -> Option<OffsetDateTime> {
    let der = CertificateDer::from_pem_slice(pem.as_bytes()).ok()?;
    Some(summarize(&der)?.not_after)
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
