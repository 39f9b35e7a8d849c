//! `pvfsctl ca init|issue`.

use crate::util::{TestDir, text};
use std::os::unix::fs::PermissionsExt;

#[test]
fn init_then_issue_writes_keys_0600_and_never_overwrites() {
    let dir = TestDir::new();
    let tls = dir.pki();
    let mode = |f: &str| std::fs::metadata(tls.join(f)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode("ca.key"), 0o600);
    assert_eq!(mode("pvfsctl.key"), 0o600);

    let out = dir.ctl(&["ca", "issue", "oss00", "--dir", "tls", "--san", "10.0.0.5"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("issued agent (server) certificate"), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("for oss00, 10.0.0.5"));
    assert_eq!(mode("oss00.key"), 0o600);

    let key = std::fs::read(tls.join("ca.key")).unwrap();
    let again = dir.ctl(&["ca", "init", "--dir", "tls"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("already exists; refusing to overwrite"), "{}", text(&again.stderr));
    assert_eq!(std::fs::read(tls.join("ca.key")).unwrap(), key);
}

#[test]
fn issue_without_a_ca_says_how_to_make_one() {
    let dir = TestDir::new();
    let out = dir.ctl(&["ca", "issue", "n1", "--dir", "nowhere"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("pvfsctl ca init"), "{}", text(&out.stderr));
}
