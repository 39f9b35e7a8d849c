//! Steps as pvfs-steps builds and assesses them, run under the policy: what a grant lets
//! through and what the default refuses. (pvfs-steps' own tests run their steps under an
//! allow-all guard: they are about what a step does, these about whether it may.)

use crate::{Policy, Site};
use pvfs_host::{RecordedRunner, Root};
use pvfs_steps::{
    AUTHORIZED_KEYS, Action, KnownHost, MPI_KEY, MpiSsh, MpiSshGone, NodeAccess, Outcome, Package,
    PackageManager, Packages, ROOT_SSH_DIR, Repo, Step, execute,
};

const PUBLIC: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq0b0mXkqg7c6wq4GQ7Zc3a8Q0d2b1xQm0Yv9s8f7kL";
const CLIENT1: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDx6n5e0mUw6Xz7m7i1f3sQ2bP4nq5R8yT0uV9wX1yZ2";
const CLIENT2: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK3c1Z9s0fL2p8d7QwErTyUiOpAsDfGhJkLzXcVbNm12";

fn mpi_step() -> MpiSsh {
    MpiSsh {
        cluster: "gluster-e2e".into(),
        private_key: "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
            .into(),
        public_key: PUBLIC.into(),
        known_hosts: vec![
            KnownHost { names: vec!["10.213.250.12".into(), "gfs2".into()], key: CLIENT1.into() },
            KnownHost { names: vec!["10.213.250.13".into(), "client1".into()], key: CLIENT2.into() },
        ],
    }
}

fn node() -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("etc/pvfs")).unwrap();
    let host = NodeAccess::new(Root::at(dir.path()), RecordedRunner::default());
    (dir, host)
}

fn opted_in() -> Policy {
    Policy::new(Site { mpi_ssh: true, ..Default::default() }).unwrap()
}

async fn apply(step: &Step, host: &NodeAccess<RecordedRunner>, policy: &Policy) -> Outcome {
    execute(step, host, policy, false, |_| {}).await
}

#[tokio::test]
async fn the_default_policy_refuses_the_mpi_grant_and_says_how_to_allow_it() {
    let (dir, host) = node();
    let Outcome::Failed(failure) = apply(&Step::MpiSsh(mpi_step()), &host, &Policy::default()).await else {
        panic!("not refused")
    };
    assert!(failure.refused, "{failure:?}");
    assert!(failure.message.contains("`mpi-ssh-off`"), "{}", failure.message);
    assert!(failure.message.contains("mpi_ssh = true"), "{}", failure.message);
    assert!(!dir.path().join("etc/pvfs/mpi").exists(), "nothing written");
    assert!(!dir.path().join("root").exists(), "nothing written");
}

#[tokio::test]
async fn a_granted_mpi_step_runs_and_taking_the_grant_away_needs_no_opt_in() {
    let (dir, host) = node();
    let outcome = apply(&Step::MpiSsh(mpi_step()), &host, &opted_in()).await;
    assert!(matches!(outcome, Outcome::Changed { .. }), "{outcome:?}");
    assert!(dir.path().join("etc/pvfs/mpi/id_ed25519").exists());
    let gone = Step::MpiSshGone(MpiSshGone { cluster: "gluster-e2e".into() });
    let outcome = apply(&gone, &host, &Policy::default()).await;
    assert!(matches!(outcome, Outcome::Changed { .. }), "{outcome:?}");
    assert!(!dir.path().join("etc/pvfs/mpi/id_ed25519").exists());
}

#[test]
fn the_policy_keeps_the_mpi_steps_to_their_files_and_keys_to_their_grammar() {
    let p = opted_in();
    let write = |path: &str, mode| Action::Write { path: path.into(), contents: "x\n".into(), mode };
    assert_eq!(p.check_action("mpi-ssh", &write("/etc/shadow", 0o600)).unwrap_err().rule, "action-kind");
    assert_eq!(p.check_action("mpi-ssh", &write(MPI_KEY, 0o644)).unwrap_err().rule, "file-mode");
    assert!(p.check_action("mpi-ssh", &write(MPI_KEY, 0o600)).is_ok());
    assert_eq!(p.check_action("mpi-ssh-gone", &write(MPI_KEY, 0o600)).unwrap_err().rule, "action-kind");
    assert!(p.check_action("mpi-ssh-gone", &write(AUTHORIZED_KEYS, 0o600)).is_ok());
    assert!(p.check_action("mpi-ssh", &Action::Remove { path: MPI_KEY.into() }).is_err());
    assert!(p.check_action("mpi-ssh-gone", &Action::Remove { path: "/etc/passwd".into() }).is_err());
    let mkdir = |path: &str| Action::Mkdir { path: path.into(), mode: 0o700 };
    assert!(p.check_action("mpi-ssh", &mkdir(ROOT_SSH_DIR)).is_ok());
    assert!(p.check_action("mpi-ssh", &mkdir("/etc/cron.d")).is_err());
    // A key with authorized_keys options would run a command on login.
    let mut s = mpi_step();
    s.public_key = format!("command=\"sh\" {PUBLIC}");
    assert_eq!(p.check_step(&Step::MpiSsh(s)).unwrap_err().rule, "mpi-ssh");
    let mut s = mpi_step();
    s.known_hosts[0].names.push("a b".into());
    assert_eq!(p.check_step(&Step::MpiSsh(s)).unwrap_err().rule, "name");
    let mut s = mpi_step();
    s.private_key =
        "-----BEGIN OPENSSH PRIVATE KEY-----\nnot base64!\n-----END OPENSSH PRIVATE KEY-----\n".into();
    let err = p.check_step(&Step::MpiSsh(s)).unwrap_err();
    assert!(!err.to_string().contains("not base64"), "the key is never shown: {err}");
}

/// A real armored public key (pvfs-steps' testdata/packages/README.md says where it comes
/// from).
const TEST_KEY: &str = include_str!("../../../pvfs-steps/testdata/packages/pvfs-test-repo.asc");

const DPKG_BEEGFS: &str = "dpkg-query -W -f '${db:Status-Abbrev}|${Version}\\n' beegfs-client";
const INSTALL_BEEGFS: &str =
    "apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confold -- beegfs-client";

/// An apt repository as the packages step writes it — the keyring directory, the key, the
/// deb822 source, `apt-get update`, the install — applied through the default policy, as an
/// agent does.
#[tokio::test]
async fn an_apt_repository_step_applies_under_the_default_policy() {
    let dir = tempfile::tempdir().unwrap();
    // Debian 11: sources.list.d exists, /etc/apt/keyrings does not yet.
    std::fs::create_dir_all(dir.path().join("etc/apt/sources.list.d")).unwrap();
    let absent = "dpkg-query: no packages found matching beegfs-client\n";
    // Absent for apply's assessment; installed for its verification.
    let runner = RecordedRunner::new()
        .record(DPKG_BEEGFS, 1, "", absent)
        .record(DPKG_BEEGFS, 0, "ii |7.4.5\n", "")
        .record("apt-get update", 0, "Reading package lists... Done\n", "")
        .record(INSTALL_BEEGFS, 0, "", "");
    let host = NodeAccess::new(Root::at(dir.path()), runner);
    let step = Step::Packages(Packages {
        manager: PackageManager::Apt,
        apt: vec![Package { name: "beegfs-client".into(), version: None }],
        rpm: vec![],
        repos: vec![Repo {
            name: "beegfs".into(),
            baseurl: "https://www.beegfs.io/release/beegfs_7.4.5".into(),
            gpgkey: None,
            gpgcheck: true,
            allow_http: false,
            suites: vec!["bookworm".into()],
            components: vec!["non-free".into()],
            key: Some(TEST_KEY.into()),
        }],
    });
    let outcome = execute(&step, &host, &Policy::default(), false, |_| {}).await;
    assert!(matches!(outcome, Outcome::Changed { .. }), "{outcome:?}");
    assert!(dir.path().join("etc/apt/sources.list.d/pvfs-beegfs.sources").exists());
    assert!(dir.path().join("etc/apt/keyrings/pvfs-beegfs.asc").exists());
}
