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
    let stderr = text(&again.stderr);
    assert!(stderr.contains("holds a cluster CA, and pvfsctl never replaces a CA's key"), "{stderr}");
    assert!(stderr.contains("move tls aside, run `pvfsctl ca init --dir tls`"), "{stderr}");
    // `ca init` has no --force, so it must not suggest one.
    assert!(!stderr.contains("--force"), "{stderr}");
    let force = dir.ctl(&["ca", "init", "--dir", "tls", "--force"]);
    assert_eq!(force.status.code(), Some(2));
    assert_eq!(std::fs::read(tls.join("ca.key")).unwrap(), key);
}

#[test]
fn issue_without_a_ca_says_how_to_make_one() {
    let dir = TestDir::new();
    let out = dir.ctl(&["ca", "issue", "n1", "--dir", "nowhere"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("pvfsctl ca init"), "{}", text(&out.stderr));
}

#[test]
fn a_leaf_can_never_replace_the_ca_with_or_without_force() {
    let dir = TestDir::new();
    let tls = dir.pki();
    let ca = |f: &str| std::fs::read(tls.join(f)).unwrap();
    let (cert, key) = (ca("ca.crt"), ca("ca.key"));
    for args in [
        &["ca", "issue", "ca", "--dir", "tls", "--force"][..],
        &["ca", "issue", "ca", "--dir", "tls"],
        &["ca", "issue", "CA", "--dir", "tls", "--force", "--usage", "coordinator"],
    ] {
        let out = dir.ctl(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains("is reserved: ca.crt is the TLS directory's own file"), "{stderr}");
        assert!(stderr.contains("with or without --force; pick another name"), "{stderr}");
    }
    assert_eq!((ca("ca.crt"), ca("ca.key")), (cert, key), "the CA is untouched");
}

/// The value after `label: ` on its own line of `stdout`.
fn field(stdout: &str, label: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{label}: ")))
        .unwrap_or_else(|| panic!("{stdout}"))
        .to_owned()
}

#[test]
fn issue_prints_the_serial_and_revoke_lists_it_once() {
    let dir = TestDir::new();
    dir.pki();
    let out = dir.ctl(&["ca", "issue", "ops", "--dir", "tls", "--usage", "coordinator", "--days", "7"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let serial = field(&stdout, "serial");
    assert!(serial.len() > 8 && serial.chars().all(|c| c.is_ascii_hexdigit()), "{stdout}");
    let week = std::time::SystemTime::now() + std::time::Duration::from_secs(7 * 86400);
    let date = humantime::format_rfc3339_seconds(week).to_string()[..10].to_owned();
    let until = format!("valid until {date}");
    assert!(stdout.contains(&until), "{stdout} (want {until})");

    let out = dir.ctl(&["ca", "revoke", "ops", "--dir", "tls"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout)
            .starts_with(&format!("revoked ops's certificate (serial {serial}) in tls/revoked.txt\n")),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stderr).contains("pvfsctl ca issue ops --dir tls --force"), "{}", text(&out.stderr));
    let list = std::fs::read_to_string(dir.path().join("tls/revoked.txt")).unwrap();
    assert_eq!(list.lines().filter(|l| l.starts_with(&serial)).count(), 1, "{list}");

    // By serial, as openssl prints it: already there.
    let upper = serial.to_uppercase();
    let out = dir.ctl(&["ca", "revoke", &upper, "--dir", "tls"]);
    assert!(out.status.success());
    assert!(
        text(&out.stdout).starts_with(&format!("already revoked: serial {serial}")),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("tls/revoked.txt")).unwrap(), list);

    let out = dir.ctl(&["ca", "revoke", "nobody", "--dir", "tls"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("\"nobody\" is neither a certificate in tls nor a serial"),
        "{}",
        text(&out.stderr)
    );
    let out = dir.ctl(&["ca", "issue", "x", "--dir", "tls", "--days", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--days 0: a certificate must be valid for at least a day"));
}
