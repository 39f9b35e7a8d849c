//! The CA round trip on real files: init, issue, load, check.

use pvfs_tls::{TlsError, Usage, check_identity, init_ca, issue, load};
use std::os::unix::fs::PermissionsExt;

#[test]
fn init_issue_load_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let tls = dir.path().join("tls");
    init_ca(&tls).unwrap();
    assert_eq!(std::fs::metadata(&tls).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(tls.join("ca.key")).unwrap().permissions().mode() & 0o777, 0o600);

    let issued = issue(&tls, "oss00", &["10.0.0.5".into()], Usage::Agent, false).unwrap();
    assert_eq!(issued.sans, ["oss00", "10.0.0.5"]);
    assert_eq!(std::fs::metadata(&issued.key).unwrap().permissions().mode() & 0o777, 0o600);
    let summary = check_identity(&load(&tls, "oss00").unwrap(), Usage::Agent).unwrap();
    assert_eq!(summary.common_name, "oss00");
    assert_eq!(summary.sans, ["oss00", "10.0.0.5"]);

    let coord = issue(&tls, "pvfsctl", &[], Usage::default_for("pvfsctl"), false).unwrap();
    assert_eq!(coord.usage, Usage::Coordinator);
    check_identity(&load(&tls, "pvfsctl").unwrap(), Usage::Coordinator).unwrap();
}

#[test]
fn nothing_is_overwritten_without_force() {
    let dir = tempfile::tempdir().unwrap();
    init_ca(dir.path()).unwrap();
    let before = std::fs::read(dir.path().join("ca.key")).unwrap();
    assert!(matches!(init_ca(dir.path()), Err(TlsError::Exists { .. })));
    assert_eq!(std::fs::read(dir.path().join("ca.key")).unwrap(), before);

    issue(dir.path(), "n1", &[], Usage::Agent, false).unwrap();
    let err = issue(dir.path(), "n1", &[], Usage::Agent, false).unwrap_err();
    assert!(err.to_string().contains("n1.crt already exists"), "{err}");
    let old = std::fs::read(dir.path().join("n1.crt")).unwrap();
    issue(dir.path(), "n1", &[], Usage::Agent, true).unwrap();
    assert_ne!(std::fs::read(dir.path().join("n1.crt")).unwrap(), old);
}

#[test]
fn a_certificate_from_another_ca_or_with_the_wrong_usage_fails_the_check() {
    let ours = tempfile::tempdir().unwrap();
    let theirs = tempfile::tempdir().unwrap();
    init_ca(ours.path()).unwrap();
    init_ca(theirs.path()).unwrap();
    issue(theirs.path(), "n1", &[], Usage::Agent, false).unwrap();
    for file in ["n1.crt", "n1.key"] {
        std::fs::copy(theirs.path().join(file), ours.path().join(file)).unwrap();
    }
    let err = check_identity(&load(ours.path(), "n1").unwrap(), Usage::Agent).unwrap_err();
    assert!(err.to_string().contains("is not trusted by"), "{err}");

    issue(ours.path(), "n2", &[], Usage::Agent, false).unwrap();
    let err = check_identity(&load(ours.path(), "n2").unwrap(), Usage::Coordinator).unwrap_err();
    assert!(matches!(err, TlsError::Untrusted { .. }), "{err}");
}

#[test]
fn a_key_that_does_not_match_is_named() {
    let dir = tempfile::tempdir().unwrap();
    init_ca(dir.path()).unwrap();
    issue(dir.path(), "a", &[], Usage::Agent, false).unwrap();
    issue(dir.path(), "b", &[], Usage::Agent, false).unwrap();
    let mut material = load(dir.path(), "a").unwrap();
    material.key_pem = std::fs::read_to_string(dir.path().join("b.key")).unwrap();
    let err = check_identity(&material, Usage::Agent).unwrap_err();
    assert!(matches!(err, TlsError::KeyMismatch { .. }), "{err}");
}

#[test]
fn missing_files_say_how_to_make_them() {
    let dir = tempfile::tempdir().unwrap();
    let err = load(dir.path(), "pvfsctl").unwrap_err();
    assert!(err.to_string().contains("pvfsctl ca init"), "{err}");
}
