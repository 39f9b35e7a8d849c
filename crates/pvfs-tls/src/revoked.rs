//! Revocation: `revoked.txt`, the serials of certificates the cluster no longer trusts.
//!
//! A private CA has no CRL distribution point or OCSP responder, and needs neither: the
//! holders that matter are a handful of coordinator certificates, and every agent can read a
//! short list from its own TLS directory. `pvfsctl ca revoke` adds to the list next to the CA;
//! the operator copies it to each node (`/etc/pvfs/tls/revoked.txt`), and agents re-read it
//! when it changes, without a restart. A certificate whose serial is listed is refused on
//! every request, even on a connection it opened before it was listed.
//!
//! The format is one serial per line, in hexadecimal (as `pvfsctl ca issue` prints it and
//! `openssl x509 -serial` shows it), with `#` starting a comment.

use crate::{REVOKED, TlsError};
use std::collections::BTreeSet;
use std::fmt;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};

/// A certificate serial number, normalised: lowercase hexadecimal, no separators, no leading
/// zeros (DER adds a zero byte to keep a serial positive; `openssl` does not show it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Serial(String);

/// RFC 5280 allows serials of at most 20 octets.
const MAX_SERIAL_DIGITS: usize = 40;

impl Serial {
    /// The serial of a DER certificate's big-endian serial bytes.
    pub fn from_bytes(bytes: &[u8]) -> Serial {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Serial::normalised(&hex)
    }

    fn normalised(hex: &str) -> Serial {
        let digits = hex.trim_start_matches('0');
        Serial(if digits.is_empty() { "0".to_owned() } else { digits.to_owned() })
    }
}

/// Why text is not a certificate serial.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SerialError {
    #[error("{0:?} is not a certificate serial (hexadecimal digits, as `pvfsctl ca issue` prints it)")]
    NotHex(String),
    #[error("{0:?} is longer than a certificate serial can be (20 bytes)")]
    TooLong(String),
}

impl FromStr for Serial {
    type Err = SerialError;

    /// Hexadecimal, in either case, with or without `:` between bytes (`3A:5F:…`, `3a5f…`).
    fn from_str(s: &str) -> Result<Serial, SerialError> {
        let hex: String = s.chars().filter(|&c| c != ':').collect::<String>().to_ascii_lowercase();
        if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(SerialError::NotHex(s.to_owned()));
        }
        let serial = Serial::normalised(&hex);
        if serial.0.len() > MAX_SERIAL_DIGITS {
            return Err(SerialError::TooLong(s.to_owned()));
        }
        Ok(serial)
    }
}

impl fmt::Display for Serial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The serial of a certificate (DER), or `None` when it cannot be parsed.
pub fn serial_of(cert_der: &[u8]) -> Option<Serial> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der).ok()?;
    Some(Serial::from_bytes(cert.raw_serial()))
}

/// The revoked serials of one `revoked.txt`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RevokedList {
    serials: BTreeSet<Serial>,
}

impl RevokedList {
    /// Reads `dir/revoked.txt`; a directory without one has revoked nothing.
    pub fn load(dir: &Path) -> Result<RevokedList, TlsError> {
        let path = dir.join(REVOKED);
        match std::fs::read_to_string(&path) {
            Ok(text) => RevokedList::parse(&text, &path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(RevokedList::default()),
            Err(source) => Err(TlsError::Read { path, source }),
        }
    }

    /// Parses the text of `path`; every line that is not blank, a comment or a serial is an
    /// error naming it: a list the agent cannot read fully must not be half-applied.
    pub fn parse(text: &str, path: &Path) -> Result<RevokedList, TlsError> {
        let mut serials = BTreeSet::new();
        for (i, line) in text.lines().enumerate() {
            let entry = line.split_once('#').map_or(line, |(before, _)| before).trim();
            if entry.is_empty() {
                continue;
            }
            let serial = entry.parse::<Serial>().map_err(|why| TlsError::BadRevoked {
                path: path.to_owned(),
                line: i + 1,
                why,
            })?;
            serials.insert(serial);
        }
        Ok(RevokedList { serials })
    }

    pub fn contains(&self, serial: &Serial) -> bool {
        self.serials.contains(serial)
    }

    pub fn len(&self) -> usize {
        self.serials.len()
    }

    pub fn is_empty(&self) -> bool {
        self.serials.is_empty()
    }
}

/// Adds `serial` to `dir/revoked.txt` (created if missing), with `note` as its comment.
/// Returns `false` when it was listed already (the file is then left as it was).
///
/// The new list is written to a fresh file and renamed over the old one, so an agent reading
/// the list at that moment sees either the old list or the new one, never half of it.
pub fn revoke(dir: &Path, serial: &Serial, note: &str) -> Result<bool, TlsError> {
    let path = dir.join(REVOKED);
    let old = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(TlsError::Read { path, source }),
    };
    if RevokedList::parse(&old, &path)?.contains(serial) {
        return Ok(false);
    }
    let mut text = if old.is_empty() {
        "# Serials of revoked pvfs certificates, one per line (`pvfsctl ca revoke`). Copy this file\n\
         # to every node's TLS directory (/etc/pvfs/tls/revoked.txt): agents re-read it when it\n\
         # changes and refuse every request made with a listed certificate.\n"
            .to_owned()
    } else {
        old
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    // One line per serial; the note must not break the format.
    let note: String = note.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    text += &format!("{serial}  # {note}\n");

    let tmp = dir.join(format!(".{REVOKED}.{}.new", std::process::id()));
    let write = || -> std::io::Result<()> {
        // create_new: never follow or reuse whatever a name we did not make points to.
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o644).open(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        std::fs::File::open(dir)?.sync_all()
    };
    write().map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        TlsError::Write { path: path.clone(), source }
    })?;
    Ok(true)
}

/// What [`revoke_named`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revocation {
    pub serial: Serial,
    /// The holder, when revoked by name.
    pub holder: Option<String>,
    /// `false` when the serial was listed already.
    pub added: bool,
    /// The list written (`dir/revoked.txt`).
    pub list: PathBuf,
}

/// `pvfsctl ca revoke`: revokes the certificate `dir/WHAT.crt`, or the serial `what` (for a
/// certificate whose file is gone). The CA itself cannot be revoked this way: replacing a CA
/// means a new CA and new certificates for everyone.
pub fn revoke_named(dir: &Path, what: &str) -> Result<Revocation, TlsError> {
    let cert_path = dir.join(format!("{what}.crt"));
    let date = time::OffsetDateTime::now_utc().date();
    let (serial, holder) = if crate::ca::check_name(what).is_ok() && cert_path.is_file() {
        crate::check_not_reserved(what)?;
        let pem = std::fs::read_to_string(&cert_path)
            .map_err(|source| TlsError::Read { path: cert_path.clone(), source })?;
        let bad = || TlsError::BadPem { path: cert_path.clone(), what: "certificate" };
        use rustls_pki_types::pem::PemObject;
        let der = rustls_pki_types::CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|_| bad())?;
        (serial_of(&der).ok_or_else(bad)?, Some(what.to_owned()))
    } else {
        let serial = what.parse::<Serial>().map_err(|why| TlsError::NotRevocable {
            what: what.to_owned(),
            dir: dir.to_owned(),
            why: format!("no {} there, and {why}", cert_path.display()),
        })?;
        (serial, None)
    };
    let note = match &holder {
        Some(name) => format!("{name}, revoked {date}"),
        None => format!("revoked {date}"),
    };
    let added = revoke(dir, &serial, &note)?;
    Ok(Revocation { serial, holder, added, list: dir.join(REVOKED) })
}

/// `dir/revoked.txt` as it is now, re-read whenever the file changes.
///
/// Each call looks at the file's metadata (one `stat`, cheap next to a TLS request) and
/// re-reads it only when its inode, size, modification or change time differ from the last
/// read: an edit in place and a replacement by rename are both seen on the next request, with
/// no timer and no restart. File times move in clock ticks, so two edits within one tick can
/// look alike; as git does for its index, a file changed within a second of being read is
/// read again on every call until it is older than that. A list that cannot be read is an
/// error for every caller until it is fixed: the agent then refuses requests rather than
/// forget a revocation.
#[derive(Debug, Clone)]
pub struct RevokedWatch {
    path: PathBuf,
    state: Arc<Mutex<Seen>>,
}

#[derive(Debug)]
struct Seen {
    stamp: Option<Stamp>,
    /// Changed so recently when read that a later change could carry the same stamp.
    racy: bool,
    /// Shared: every caller until the file changes gets the same error.
    list: Result<Arc<RevokedList>, Arc<TlsError>>,
}

/// How recent a change must be for its stamp not to be trusted (file times are taken from a
/// coarse clock; a second is far more than its tick).
const RACY: std::time::Duration = std::time::Duration::from_secs(1);

/// What identifies one version of the file; `None` fields mean "absent".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl RevokedWatch {
    /// Watches `dir/revoked.txt`, reading it now so a broken list is reported at start-up.
    pub fn new(dir: &Path) -> Result<RevokedWatch, TlsError> {
        let path = dir.join(REVOKED);
        // The stamp before the read, as in `current`: a change during the read shows as a
        // different stamp next time.
        let stamp = stamp_of(&path);
        let list = RevokedList::load(dir)?;
        let seen = Seen { stamp, racy: stamp.is_some_and(|s| s.recent()), list: Ok(Arc::new(list)) };
        Ok(RevokedWatch { path, state: Arc::new(Mutex::new(seen)) })
    }

    /// The path watched.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The list as the file says now (re-read if it changed since the last call), or why it
    /// cannot be read.
    pub fn current(&self) -> Result<Arc<RevokedList>, Arc<TlsError>> {
        let stamp = stamp_of(&self.path);
        let mut seen = self.lock();
        if seen.racy || seen.stamp != stamp {
            let dir = self.path.parent().unwrap_or(Path::new("."));
            seen.list = RevokedList::load(dir).map(Arc::new).map_err(Arc::new);
            seen.stamp = stamp;
            seen.racy = stamp.is_some_and(|s| s.recent());
        }
        seen.list.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        // Nothing panics while holding the lock; if something did, the data is still whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The file's identity and times now; `None` when it does not exist (or cannot be looked at:
/// the read that follows then says why).
fn stamp_of(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        dev: meta.dev(),
        ino: meta.ino(),
        len: meta.len(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
    })
}

impl Stamp {
    /// Changed within [`RACY`] of now, or in the future (a clock set back).
    fn recent(&self) -> bool {
        let (secs, nanos) = self.mtime.max(self.ctime);
        let changed = std::time::UNIX_EPOCH
            + std::time::Duration::new(u64::try_from(secs).unwrap_or(0), u32::try_from(nanos).unwrap_or(0));
        match std::time::SystemTime::now().duration_since(changed) {
            Ok(age) => age < RACY,
            Err(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_are_normalised_however_they_are_written() {
        let want: Serial = "3a5f00".parse().unwrap();
        for text in ["3A5F00", "3a:5f:00", "00:3A:5F:00", "0003a5f00"] {
            assert_eq!(text.parse::<Serial>().unwrap(), want, "{text}");
        }
        assert_eq!(Serial::from_bytes(&[0x00, 0x3a, 0x5f, 0x00]), want);
        assert_eq!(Serial::from_bytes(&[0]).to_string(), "0");
        for bad in ["", "xyz", "12 34", "-1"] {
            assert!(bad.parse::<Serial>().is_err(), "{bad}");
        }
        assert!("1".repeat(41).parse::<Serial>().is_err());
    }

    #[test]
    fn the_list_ignores_comments_and_names_a_bad_line() {
        let path = Path::new("/etc/pvfs/tls/revoked.txt");
        let list = RevokedList::parse("# header\n\n3a:5f  # pvfsctl, 2026-11-23\nABCD\n", path).unwrap();
        assert_eq!(list.len(), 2);
        assert!(list.contains(&"3a5f".parse().unwrap()) && list.contains(&"abcd".parse().unwrap()));
        let err = RevokedList::parse("3a5f\npvfsctl\n", path).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/etc/pvfs/tls/revoked.txt:2: \"pvfsctl\" is not a certificate serial (hexadecimal digits, as `pvfsctl ca issue` prints it)"
        );
    }

    #[test]
    fn revoke_appends_once_and_the_watch_sees_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let watch = RevokedWatch::new(dir.path()).unwrap();
        assert!(watch.current().unwrap().is_empty(), "no file: nothing revoked");

        let first: Serial = "01ab".parse().unwrap();
        assert!(revoke(dir.path(), &first, "pvfsctl\nrevoked").unwrap());
        assert!(!revoke(dir.path(), &first, "again").unwrap(), "listed once");
        let text = std::fs::read_to_string(dir.path().join(REVOKED)).unwrap();
        assert!(text.starts_with("# Serials of revoked pvfs certificates"), "{text}");
        assert!(text.ends_with("\n1ab  # pvfsctl revoked\n"), "{text}");
        assert!(watch.current().unwrap().contains(&first));

        // Edited in place (same inode, same size, moments later): seen all the same.
        let second: Serial = "02ab".parse().unwrap();
        std::fs::write(dir.path().join(REVOKED), text.replace("1ab ", "2ab ")).unwrap();
        let now = watch.current().unwrap();
        assert!(now.contains(&second) && !now.contains(&first));

        std::fs::write(dir.path().join(REVOKED), "not a serial\n").unwrap();
        let err = watch.current().unwrap_err();
        assert!(err.to_string().contains("revoked.txt:1"), "{err}");

        std::fs::remove_file(dir.path().join(REVOKED)).unwrap();
        assert!(watch.current().unwrap().is_empty(), "removed: nothing revoked");
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "no temporary left behind");
    }
}
