//! Creating the cluster CA and issuing certificates from it.

use crate::{CA_CERT, CA_KEY, COORDINATOR_NAME, Serial, TlsError};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose, SanType,
};
use std::fs;
use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use time::{Duration, OffsetDateTime};

/// A cluster outlives hardware refreshes; ten years keeps CA rotation off the to-do list of a
/// benchmark campaign.
const CA_VALIDITY: Duration = Duration::days(3650);
/// Leaf certificates are cheap to reissue; `--days` shortens (or lengthens) this.
const LEAF_VALIDITY_DAYS: u32 = 825;
/// Certificates are valid from a little in the past so a node whose clock is a few minutes
/// behind the issuer's still accepts them.
const CLOCK_SKEW: Duration = Duration::minutes(10);

/// What a certificate may be used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    /// An agent: TLS server.
    Agent,
    /// The coordinator: TLS client.
    Coordinator,
}

impl Usage {
    /// The usage `ca issue NAME` picks when not told: `pvfsctl` is the coordinator.
    pub fn default_for(name: &str) -> Usage {
        if name == COORDINATOR_NAME { Usage::Coordinator } else { Usage::Agent }
    }
}

/// What `issue` wrote.
#[derive(Debug, Clone)]
pub struct Issued {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub usage: Usage,
    /// Subject alternative names, as given (the name itself first when it is a DNS name).
    pub sans: Vec<String>,
    pub not_after: OffsetDateTime,
    /// What `pvfsctl ca revoke` (and `revoked.txt`) names this certificate by.
    pub serial: Serial,
}

/// How to issue a certificate ([`issue_with`]).
#[derive(Debug, Clone)]
pub struct IssueOptions {
    /// Extra subject alternative names (IP addresses or DNS names).
    pub sans: Vec<String>,
    pub usage: Usage,
    /// Replace an existing `NAME.crt`/`NAME.key` (never the CA's files).
    pub force: bool,
    /// Lifetime in days; 825 when not given. A short one limits what a lost certificate is
    /// worth; it may not outlast the CA.
    pub days: Option<u32>,
}

/// Creates a new CA in `dir` (created if missing, mode 0700). Refuses to replace an existing
/// CA: every certificate issued from it would stop being trusted.
pub fn init_ca(dir: &Path) -> Result<PathBuf, TlsError> {
    let cert_path = dir.join(CA_CERT);
    let key_path = dir.join(CA_KEY);
    for path in [&cert_path, &key_path] {
        if path.exists() {
            return Err(TlsError::Exists { path: path.clone() });
        }
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| TlsError::Write { path: dir.to_owned(), source })?;

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    // A CA name of its own, so that a certificate from another pvfs cluster's CA is reported as
    // "unknown issuer" rather than failing a signature check against a same-named CA.
    let id =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    params.distinguished_name = dn(&format!("pvfs cluster CA {:x}", id ^ u128::from(std::process::id())));
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let now = OffsetDateTime::now_utc();
    params.not_before = now - CLOCK_SKEW;
    params.not_after = now + CA_VALIDITY;
    let cert = params.self_signed(&key)?;

    write_new(&key_path, key.serialize_pem().as_bytes(), 0o600)?;
    write_new(&cert_path, cert.pem().as_bytes(), 0o644)?;
    Ok(cert_path)
}

/// Issues `dir/NAME.crt` and `dir/NAME.key`, signed by the CA in `dir`.
///
/// `sans` are extra subject alternative names (IP addresses or DNS names); `name` itself is
/// added when it is a valid DNS name. Agents need the address the coordinator dials among
/// them, since that is what the coordinator verifies.
pub fn issue(dir: &Path, name: &str, sans: &[String], usage: Usage, force: bool) -> Result<Issued, TlsError> {
    issue_with(dir, name, &IssueOptions { sans: sans.to_vec(), usage, force, days: None })
}

/// [`issue`], with every option.
pub fn issue_with(dir: &Path, name: &str, options: &IssueOptions) -> Result<Issued, TlsError> {
    let IssueOptions { sans, usage, force, days } = options;
    let (usage, force) = (*usage, *force);
    check_name(name)?;
    crate::check_not_reserved(name)?;
    let cert_path = dir.join(format!("{name}.crt"));
    let key_path = dir.join(format!("{name}.key"));
    if !force {
        for path in [&cert_path, &key_path] {
            if path.exists() {
                return Err(TlsError::Exists { path: path.clone() });
            }
        }
    }

    let ca_cert_path = dir.join(CA_CERT);
    let ca_key_path = dir.join(CA_KEY);
    let ca_pem = read(&ca_cert_path)?;
    let ca_key = KeyPair::from_pem(&read(&ca_key_path)?)
        .map_err(|_| TlsError::BadPem { path: ca_key_path.clone(), what: "private key" })?;
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key)
        .map_err(|_| TlsError::BadPem { path: ca_cert_path.clone(), what: "CA certificate" })?;
    let ca_not_after = crate::check::not_after_of_pem(&ca_pem)
        .ok_or_else(|| TlsError::BadPem { path: ca_cert_path.clone(), what: "CA certificate" })?;
    let now = OffsetDateTime::now_utc();
    let days = days.unwrap_or(LEAF_VALIDITY_DAYS);
    if days == 0 {
        return Err(TlsError::BadLifetime {
            days,
            why: "a certificate must be valid for at least a day".into(),
        });
    }
    let not_after = now + Duration::days(i64::from(days));
    if not_after > ca_not_after {
        return Err(TlsError::BadLifetime {
            days,
            why: format!(
                "it would outlast the CA, which is valid until {}; ask for fewer days",
                ca_not_after.date()
            ),
        });
    }

    let mut all_sans = Vec::new();
    if is_dns_name(name) {
        all_sans.push(name.to_owned());
    }
    for san in sans {
        if !all_sans.contains(san) {
            all_sans.push(san.clone());
        }
    }
    let mut params = CertificateParams::default();
    params.distinguished_name = dn(name);
    params.subject_alt_names = all_sans.iter().map(|s| san_type(s)).collect::<Result<_, _>>()?;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![match usage {
        Usage::Agent => ExtendedKeyUsagePurpose::ServerAuth,
        Usage::Coordinator => ExtendedKeyUsagePurpose::ClientAuth,
    }];
    params.use_authority_key_identifier_extension = true;
    params.not_before = now - CLOCK_SKEW;
    params.not_after = not_after;
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    let serial = crate::serial_of(cert.der())
        .ok_or_else(|| TlsError::BadPem { path: cert_path.clone(), what: "certificate (just issued)" })?;

    if force {
        // Replacing: remove first so the new files are created with our modes. (A name that
        // is a symbolic link loses the link, not what it points to.)
        for path in [&cert_path, &key_path] {
            let _ = fs::remove_file(path);
        }
    }
    write_new(&key_path, key.serialize_pem().as_bytes(), 0o600)?;
    write_new(&cert_path, cert.pem().as_bytes(), 0o644)?;
    Ok(Issued { cert: cert_path, key: key_path, usage, sans: all_sans, not_after, serial })
}

fn dn(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "pvfs");
    dn.push(DnType::CommonName, common_name);
    dn
}

fn san_type(s: &str) -> Result<SanType, TlsError> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Ok(SanType::IpAddress(ip));
    }
    if !is_dns_name(s) {
        return Err(TlsError::BadName {
            name: s.to_owned(),
            why: "a SAN must be an IP address or a DNS name",
        });
    }
    let name =
        s.try_into().map_err(|_| TlsError::BadName { name: s.to_owned(), why: "not a valid DNS name" })?;
    Ok(SanType::DnsName(name))
}

/// Names become file names: keep them to the characters the cluster file allows for nodes.
pub(crate) fn check_name(name: &str) -> Result<(), TlsError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['.', '-'])
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(TlsError::BadName { name: name.to_owned(), why: "use letters, digits, '-', '_' or '.'" })
    }
}

fn is_dns_name(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
        && !s.chars().all(|c| c.is_ascii_digit() || c == '.')
}

fn read(path: &Path) -> Result<String, TlsError> {
    crate::read_pem(path)
}

/// Creates `path` with `mode` from the start (no window where a key is world-readable), and
/// fails if it exists.
fn write_new(path: &Path, contents: &[u8], mode: u32) -> Result<(), TlsError> {
    let write = || -> std::io::Result<()> {
        let mut file = fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(path)?;
        file.write_all(contents)?;
        file.sync_all()
    };
    write().map_err(|source| TlsError::Write { path: path.to_owned(), source })
}
