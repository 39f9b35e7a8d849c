//! The CA round trip on real files: init, issue, load, check.

use pvfs_tls::{
    IssueOptions, Refusal, RevokedList, TlsError, Usage, check_coordinator, check_identity, init_ca, issue,
    issue_with, load, revoke_named, serial_of,
};
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

/// A leaf signed by the CA in `dir` with exactly `usages` as its extended key usages (none:
/// no extension at all), written as `dir/NAME.crt`/`.key`: what `issue` never makes, but a
/// careless or hostile CA holder could.
fn issue_raw(dir: &std::path::Path, name: &str, usages: Vec<rcgen::ExtendedKeyUsagePurpose>) {
    let ca_key = rcgen::KeyPair::from_pem(&std::fs::read_to_string(dir.join("ca.key")).unwrap()).unwrap();
    let issuer =
        rcgen::Issuer::from_ca_cert_pem(&std::fs::read_to_string(dir.join("ca.crt")).unwrap(), ca_key)
            .unwrap();
    let mut params = rcgen::CertificateParams::new(vec![name.to_owned()]).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    params.extended_key_usages = usages;
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).unwrap();
    std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
}

fn der(dir: &std::path::Path, name: &str) -> Vec<u8> {
    use rustls_pki_types::pem::PemObject;
    let pem = std::fs::read(dir.join(format!("{name}.crt"))).unwrap();
    rustls_pki_types::CertificateDer::from_pem_slice(&pem).unwrap().to_vec()
}

#[test]
fn the_ca_files_can_never_be_replaced_by_a_leaf() {
    let dir = tempfile::tempdir().unwrap();
    init_ca(dir.path()).unwrap();
    let before: Vec<Vec<u8>> =
        ["ca.crt", "ca.key"].iter().map(|f| std::fs::read(dir.path().join(f)).unwrap()).collect();
    for (name, force) in [("ca", false), ("ca", true), ("CA", true), ("Ca", false)] {
        for usage in [Usage::Agent, Usage::Coordinator] {
            let err = issue(dir.path(), name, &[], usage, force).unwrap_err();
            assert!(matches!(err, TlsError::Reserved { .. }), "{name} {force}: {err}");
            assert!(
                err.to_string().starts_with(&format!(
                    "the name {name:?} is reserved: ca.crt is the TLS directory's own file (ca.crt, ca.key, revoked.txt)"
                )),
                "{err}"
            );
        }
    }
    let after: Vec<Vec<u8>> =
        ["ca.crt", "ca.key"].iter().map(|f| std::fs::read(dir.path().join(f)).unwrap()).collect();
    assert_eq!(before, after, "the CA is untouched");
    // Nor can a holder named like them be loaded, which would serve the CA as its identity.
    assert!(matches!(load(dir.path(), "ca"), Err(TlsError::Reserved { .. })));
}

#[test]
fn issue_reports_the_serial_and_honours_days() {
    let dir = tempfile::tempdir().unwrap();
    init_ca(dir.path()).unwrap();
    let options = IssueOptions { sans: vec![], usage: Usage::Coordinator, force: false, days: Some(2) };
    let issued = issue_with(dir.path(), "pvfsctl", &options).unwrap();
    assert_eq!(Some(issued.serial.clone()), serial_of(&der(dir.path(), "pvfsctl")));
    let left = issued.not_after - time::OffsetDateTime::now_utc();
    assert!(left > time::Duration::hours(47) && left <= time::Duration::days(2), "{left}");
    let summary = check_identity(&load(dir.path(), "pvfsctl").unwrap(), Usage::Coordinator).unwrap();
    assert_eq!(summary.not_after, issued.not_after.replace_nanosecond(0).unwrap());

    // A re-issued certificate has a serial of its own: revoking the old one spares it.
    let again = issue_with(dir.path(), "pvfsctl", &IssueOptions { force: true, ..options.clone() }).unwrap();
    assert_ne!(again.serial, issued.serial);

    for (days, why) in [(0, "at least a day"), (4000, "it would outlast the CA, which is valid until")] {
        let err =
            issue_with(dir.path(), "n1", &IssueOptions { days: Some(days), ..options.clone() }).unwrap_err();
        assert!(err.to_string().starts_with(&format!("--days {days}: ")), "{err}");
        assert!(err.to_string().contains(why), "{err}");
    }
    assert!(!dir.path().join("n1.crt").exists());
}

#[test]
fn a_coordinator_certificate_must_say_client_auth() {
    let dir = tempfile::tempdir().unwrap();
    init_ca(dir.path()).unwrap();
    issue_raw(dir.path(), "bare", vec![]);
    let err = check_identity(&load(dir.path(), "bare").unwrap(), Usage::Coordinator).unwrap_err();
    assert!(matches!(err, TlsError::WrongUsage { .. }), "{err}");
    assert!(
        err.to_string().contains(
            "cannot be used as the coordinator: a coordinator certificate must have the clientAuth usage"
        ) && err.to_string().contains("(its extended key usages: none: the extension is absent)"),
        "{err}"
    );
    // An agent's certificate that could also act as a client is refused to the agent.
    issue_raw(
        dir.path(),
        "both",
        vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth, rcgen::ExtendedKeyUsagePurpose::ClientAuth],
    );
    let err = check_identity(&load(dir.path(), "both").unwrap(), Usage::Agent).unwrap_err();
    assert!(err.to_string().contains("must not have the clientAuth usage"), "{err}");
}

#[test]
fn agents_refuse_clients_without_client_auth_or_revoked() {
    let dir = tempfile::tempdir().unwrap();
    init_ca(dir.path()).unwrap();
    let coordinator = issue(dir.path(), "pvfsctl", &[], Usage::Coordinator, false).unwrap();
    issue(dir.path(), "n1", &["127.0.0.1".into()], Usage::Agent, false).unwrap();
    issue_raw(dir.path(), "bare", vec![]);
    let empty = RevokedList::default();

    check_coordinator(&der(dir.path(), "pvfsctl"), &empty).unwrap();
    let err = check_coordinator(&der(dir.path(), "bare"), &empty).unwrap_err();
    assert!(matches!(err, Refusal::NotClientAuth { .. }), "{err}");
    assert!(
        err.to_string().contains("\"bare\"") && err.to_string().contains("none: the extension is absent")
    );
    let err = check_coordinator(&der(dir.path(), "n1"), &empty).unwrap_err();
    assert!(
        err.to_string().contains("lacks the clientAuth usage (its extended key usages: serverAuth)"),
        "{err}"
    );

    let revocation = revoke_named(dir.path(), "pvfsctl").unwrap();
    assert_eq!((revocation.serial.clone(), revocation.added), (coordinator.serial.clone(), true));
    let list = RevokedList::load(dir.path()).unwrap();
    let err = check_coordinator(&der(dir.path(), "pvfsctl"), &list).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "certificate \"pvfsctl\" (serial {}) is revoked (listed in this agent's revoked.txt); \
             use a newly issued coordinator certificate (`pvfsctl ca issue pvfsctl --dir DIR --force`)",
            coordinator.serial
        )
    );
    let fresh = issue(dir.path(), "pvfsctl", &[], Usage::Coordinator, true).unwrap();
    check_coordinator(&der(dir.path(), "pvfsctl"), &list).unwrap();
    // By serial (the certificate's file may be gone), written as openssl shows it.
    let upper = fresh.serial.to_string().to_uppercase();
    let by_serial = revoke_named(dir.path(), &upper).unwrap();
    assert_eq!((by_serial.serial, by_serial.holder), (fresh.serial, None));
    assert!(!revoke_named(dir.path(), "pvfsctl").unwrap().added, "listed already");

    let err = revoke_named(dir.path(), "nobody").unwrap_err();
    assert!(err.to_string().starts_with("\"nobody\" is neither a certificate in"), "{err}");
    let err = revoke_named(dir.path(), "ca").unwrap_err();
    assert!(matches!(err, TlsError::Reserved { .. }), "{err}");
}
