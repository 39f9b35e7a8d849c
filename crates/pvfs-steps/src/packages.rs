//! Packages installed, at pinned versions where the cluster file pins them, with the node's
//! own package manager (apt on Debian/Ubuntu, dnf or yum on RHEL-likes).

use crate::{Action, Assessment, Host, StepError};
use pvfs_host::{Command, Runner};
use std::fmt;
use std::time::Duration;

/// Installing can download hundreds of megabytes (a Lustre kernel).
const INSTALL_TIMEOUT: Duration = Duration::from_secs(1800);

/// Which package manager installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageManager {
    /// Whichever the node has: apt-get, then dnf, then yum.
    Auto,
    Apt,
    Dnf,
    Yum,
}

impl PackageManager {
    pub fn as_str(self) -> &'static str {
        match self {
            PackageManager::Auto => "auto",
            PackageManager::Apt => "apt",
            PackageManager::Dnf => "dnf",
            PackageManager::Yum => "yum",
        }
    }
}

/// One package, optionally pinned (`10.3-5` for apt, `2.9.0` or `2.9.0-1.el7` for rpm).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    pub version: Option<String>,
}

impl fmt::Display for Package {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            Some(v) => write!(f, "{}={v}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// These packages are installed (from these repositories, on yum/dnf nodes).
///
/// Package names differ between distributions (glusterfs-client on Debian is glusterfs-fuse on
/// RHEL), so the step carries both lists and the node's package manager picks one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packages {
    pub manager: PackageManager,
    /// For apt.
    pub apt: Vec<Package>,
    /// For dnf and yum.
    pub rpm: Vec<Package>,
    /// yum/dnf repositories written to /etc/yum.repos.d before installing.
    pub repos: Vec<Repo>,
}

/// A yum/dnf repository (`[[repo]]` in the cluster file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// Also its file name: `/etc/yum.repos.d/NAME.repo`.
    pub name: String,
    pub baseurl: String,
    /// Where yum fetches the signing key; `None`: keys already imported (a release package).
    pub gpgkey: Option<String>,
    /// Packages' signatures are checked. Off only where the cluster file says
    /// `gpgcheck = false`, and plans show it.
    pub gpgcheck: bool,
    /// The cluster file allows plain `http://` URLs for this repository.
    pub allow_http: bool,
}

impl Repo {
    /// Why this repository is weaker than a signed https one, if it is (for plans).
    pub fn warning(&self) -> Option<String> {
        let http = self.allow_http
            && (self.baseurl.starts_with("http://")
                || self.gpgkey.as_deref().is_some_and(|k| k.starts_with("http://")));
        match (self.gpgcheck, http) {
            (true, false) => None,
            (false, false) => {
                Some(format!("WARNING: repository {} is not GPG-checked (gpgcheck = false)", self.name))
            }
            (true, true) => Some(format!("WARNING: repository {} is fetched over plain http", self.name)),
            (false, true) => Some(format!(
                "WARNING: repository {} is not GPG-checked and is fetched over plain http",
                self.name
            )),
        }
    }
}

/// A `.repo` file as the seed writes LustrePack.repo, with the signature check the cluster
/// file asks for (and a comment saying so when it is off, for whoever reads the node).
fn repo_file(repo: &Repo) -> String {
    let Repo { name, baseurl, gpgkey, gpgcheck, .. } = repo;
    let mut text = String::new();
    if !gpgcheck {
        text += "# gpgcheck=0: the cluster file says gpgcheck = false for this repository\n";
    }
    text +=
        &format!("[{name}]\nname={name}\nbaseurl={baseurl}\nenabled=1\ngpgcheck={}\n", u8::from(*gpgcheck));
    if let Some(key) = gpgkey {
        text += &format!("gpgkey={key}\n");
    }
    text
}

impl Packages {
    pub(crate) async fn assess<R: Runner>(&self, host: &Host<R>) -> Result<Assessment, StepError> {
        let manager = self.resolve(host)?;
        let mut a = Assessment::in_sync();
        let list = if manager == PackageManager::Apt { &self.apt } else { &self.rpm };
        if manager == PackageManager::Apt && !self.repos.is_empty() {
            return Err(StepError::Refused {
                reason: "[[repo]] entries are yum/dnf repositories, and this node uses apt; add apt sources by hand \
                         or remove the [[repo]] entries"
                    .into(),
            });
        }
        for repo in &self.repos {
            let file = crate::File {
                path: format!("/etc/yum.repos.d/{}.repo", repo.name),
                contents: repo_file(repo),
                mode: 0o644,
            };
            let repo = file.assess(host)?;
            a.diff.extend(repo.diff);
            a.actions.extend(repo.actions);
        }
        let mut missing = Vec::new();
        // A pinned kernel that is installed but not running: the node must boot into it.
        let mut boot_into = None;
        for package in list {
            if manager != PackageManager::Apt && package.name == "kernel" {
                match kernel(host, package.version.as_deref()).await? {
                    Kernel::Ready => {}
                    Kernel::Missing(why) => {
                        a.diff.push(why);
                        missing.push(package);
                    }
                    Kernel::NotRunning { installed, running } => boot_into = Some((installed, running)),
                }
                continue;
            }
            let installed = installed_version(host, manager, &package.name).await?;
            match (&installed, &package.version) {
                (None, _) => a.diff.push(format!("{} is not installed", package.name)),
                (Some(have), Some(want)) if !version_matches(have, want) => {
                    a.diff.push(format!("{} is {have}, not {want}", package.name));
                }
                _ => continue,
            }
            missing.push(package);
        }
        if !missing.is_empty() {
            if let Some((kernel, _)) = &boot_into {
                a.diff.push(format!("then the node must boot into kernel {kernel}"));
            }
            a.actions.push(Action::Run(install_command(manager, &missing)));
        } else if let Some((kernel, running)) = boot_into {
            // Everything is installed; what is left cannot be done by installing. Not a
            // failure and not in sync: its own outcome, which stops the unit (nothing after
            // this step can work on the wrong kernel) and tells the operator what to do.
            return Err(StepError::MustBoot { kernel, running });
        }
        Ok(a)
    }

    fn resolve<R: Runner>(&self, host: &Host<R>) -> Result<PackageManager, StepError> {
        if self.manager != PackageManager::Auto {
            return Ok(self.manager);
        }
        [
            ("/usr/bin/apt-get", PackageManager::Apt),
            ("/usr/bin/dnf", PackageManager::Dnf),
            ("/usr/bin/yum", PackageManager::Yum),
        ]
        .into_iter()
        .find(|(path, _)| host.root.exists(path))
        .map(|(_, m)| m)
        .ok_or_else(|| StepError::Refused {
            reason: "no apt-get, dnf or yum on this node; set [packages] manager in the cluster file".into(),
        })
    }
}

impl fmt::Display for Packages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |list: &[Package]| list.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
        if self.apt == self.rpm {
            write!(f, "packages {}", names(&self.apt))
        } else if self.apt.is_empty() {
            write!(f, "packages (rpm) {}", names(&self.rpm))
        } else if self.rpm.is_empty() {
            write!(f, "packages (apt) {}", names(&self.apt))
        } else {
            write!(f, "packages {} (rpm: {})", names(&self.apt), names(&self.rpm))
        }?;
        for warning in self.repos.iter().filter_map(Repo::warning) {
            write!(f, " [{warning}]")?;
        }
        Ok(())
    }
}

/// A pin matches the installed version exactly, or as a prefix up to a `-`/`.`/`+` boundary
/// (`2.9.0` matches rpm's `2.9.0-1.el7`).
fn version_matches(have: &str, want: &str) -> bool {
    have == want || have.strip_prefix(want).is_some_and(|rest| rest.starts_with(['-', '.', '+', '~']))
}

/// The installed version, or `None`.
async fn installed_version<R: Runner>(
    host: &Host<R>,
    manager: PackageManager,
    name: &str,
) -> Result<Option<String>, StepError> {
    let command = match manager {
        PackageManager::Apt => {
            Command::new("dpkg-query").args(["-W", "-f", "${db:Status-Abbrev}|${Version}\\n", name])
        }
        _ => Command::new("rpm").args(["-q", "--qf", "%{VERSION}-%{RELEASE}\\n", name]),
    };
    let shown = command.to_string();
    let out = host.probe(command).await?;
    match (manager, out.code) {
        // "ii |10.3-5": only "ii" is installed; "rc" (removed, config kept) and "un" are not.
        (PackageManager::Apt, Some(0)) => {
            let line = out.stdout.lines().next().unwrap_or_default();
            let (status, version) = line.split_once('|').ok_or_else(|| StepError::Unexpected {
                command: shown.clone(),
                message: format!("{line:?}"),
            })?;
            Ok(status.starts_with("ii").then(|| version.trim().to_owned()))
        }
        // dpkg-query: "no packages found matching X"; rpm: "package X is not installed".
        (_, Some(1)) => Ok(None),
        (_, Some(0)) => Ok(out.stdout.lines().next().map(|l| l.trim().to_owned())),
        _ => Err(StepError::Command {
            command: shown,
            code: out.code,
            stderr: crate::error_tail(&out),
            hint: None,
        }),
    }
}

/// Where a pinned kernel stands on the node.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kernel {
    /// Installed and running (or not pinned and some kernel is installed).
    Ready,
    /// Not installed; why, for the plan.
    Missing(String),
    /// Installed (this full version, `3.10.0-514.el7_lustre.x86_64`) but the node runs another.
    NotRunning { installed: String, running: String },
}

/// The `kernel` package, read as what it is: a set of installed kernels (`rpm -q kernel` lists
/// every one, oldest first; the first line is not "the" kernel) and the one running, which the
/// kernel itself says in `/proc/sys/kernel/osrelease` (what `uname -r` prints).
async fn kernel<R: Runner>(host: &Host<R>, want: Option<&str>) -> Result<Kernel, StepError> {
    // rpm's default query format, `%{NAME}-%{VERSION}-%{RELEASE}.%{ARCH}` (`kernel-3.10.0-514.el7.x86_64`):
    // without the name, exactly what the kernel calls its release.
    let command = Command::new("rpm").args(["-q", "kernel"]);
    let shown = command.to_string();
    let out = host.probe(command).await?;
    let installed: Vec<String> = match out.code {
        Some(0) => out
            .stdout
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| {
                l.strip_prefix("kernel-").map(str::to_owned).ok_or_else(|| StepError::Unexpected {
                    command: shown.clone(),
                    message: format!("{l:?} is not kernel-VERSION-RELEASE.ARCH"),
                })
            })
            .collect::<Result<_, _>>()?,
        // "package kernel is not installed"
        Some(1) => Vec::new(),
        _ => {
            return Err(StepError::Command {
                command: shown,
                code: out.code,
                stderr: crate::error_tail(&out),
                hint: None,
            });
        }
    };
    if let Some(odd) = installed.iter().find(|v| v.contains(char::is_whitespace) || !v.contains('-')) {
        return Err(StepError::Unexpected {
            command: shown,
            message: format!("kernel-{odd:?} is not kernel-VERSION-RELEASE.ARCH"),
        });
    }
    let running = running_kernel(host)?;
    let Some(want) = want else {
        return Ok(if installed.is_empty() {
            Kernel::Missing(format!("kernel is not installed (running {running})"))
        } else {
            Kernel::Ready
        });
    };
    if version_matches(&running, want) {
        return Ok(Kernel::Ready);
    }
    match installed.iter().find(|v| version_matches(v, want)) {
        Some(found) => Ok(Kernel::NotRunning { installed: found.clone(), running }),
        None => Ok(Kernel::Missing(format!(
            "kernel {want} is not installed (installed: {}; running {running})",
            if installed.is_empty() { "none".to_owned() } else { installed.join(", ") }
        ))),
    }
}

/// The running kernel's release, from the kernel (`uname -r` reads the same string).
fn running_kernel<R: Runner>(host: &Host<R>) -> Result<String, StepError> {
    const OSRELEASE: &str = "/proc/sys/kernel/osrelease";
    let text = host.read_optional(OSRELEASE)?.ok_or_else(|| StepError::File {
        path: OSRELEASE.into(),
        message: "missing: cannot tell which kernel is running (is /proc mounted?)".into(),
    })?;
    match text.trim() {
        "" => Err(StepError::File { path: OSRELEASE.into(), message: "empty".into() }),
        release => Ok(release.to_owned()),
    }
}

fn install_command(manager: PackageManager, packages: &[&Package]) -> Command {
    let command = match manager {
        // noninteractive: no debconf prompt may wait for a terminal nobody watches; confold:
        // keep config files the operator (or pvfs) changed.
        PackageManager::Apt => Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends", "-o", "Dpkg::Options::=--force-confold"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
        PackageManager::Dnf => Command::new("dnf").args(["install", "-y"]),
        _ => Command::new("yum").args(["install", "-y"]),
    };
    let sep = if manager == PackageManager::Apt { "=" } else { "-" };
    // `--`: whatever a name holds, it is never read as an option (the policy already refuses
    // names starting with '-'; this is the second lock).
    command
        .arg("--")
        .args(packages.iter().map(|p| match &p.version {
            Some(v) => format!("{}{sep}{v}", p.name),
            None => p.name.clone(),
        }))
        .timeout(INSTALL_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_host::{RecordedRunner, Root};

    fn pkg(name: &str, version: Option<&str>) -> Package {
        Package { name: name.into(), version: version.map(Into::into) }
    }

    #[tokio::test]
    async fn apt_installs_only_what_is_missing_or_at_another_version() {
        let dir = tempfile::tempdir().unwrap();
        // Outputs recorded with dpkg-query 1.21 on Debian 12.
        let runner = RecordedRunner::new()
            .record("dpkg-query -W -f '${db:Status-Abbrev}|${Version}\\n' xfsprogs", 0, "ii |6.1.0-1\n", "")
            .record(
                "dpkg-query -W -f '${db:Status-Abbrev}|${Version}\\n' glusterfs-server",
                1,
                "",
                "dpkg-query: no packages found matching glusterfs-server\n",
            )
            .record("dpkg-query -W -f '${db:Status-Abbrev}|${Version}\\n' mdadm", 0, "rc |4.2-5\n", "")
            .record("dpkg-query -W -f '${db:Status-Abbrev}|${Version}\\n' fio", 0, "ii |3.33-3\n", "");
        let host = Host::new(Root::at(dir.path()), runner);
        let step = Packages {
            manager: PackageManager::Apt,
            rpm: vec![pkg("glusterfs-fuse", None)],
            repos: vec![],
            apt: vec![
                pkg("xfsprogs", None),
                pkg("glusterfs-server", Some("10.3-5")),
                pkg("mdadm", None),
                pkg("fio", Some("3.35-1")),
            ],
        };
        let a = step.assess(&host).await.unwrap();
        assert_eq!(
            a.diff,
            ["glusterfs-server is not installed", "mdadm is not installed", "fio is 3.33-3, not 3.35-1"]
        );
        assert_eq!(
            a.actions.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confold -- glusterfs-server=10.3-5 mdadm fio=3.35-1"
            ]
        );
    }

    #[tokio::test]
    async fn rpm_pins_match_by_prefix() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("usr/bin")).unwrap();
        std::fs::write(dir.path().join("usr/bin/yum"), "").unwrap();
        let runner = RecordedRunner::new()
            .record("rpm -q --qf '%{VERSION}-%{RELEASE}\\n' lustre", 0, "2.9.0-1.el7\n", "")
            .record(
                "rpm -q --qf '%{VERSION}-%{RELEASE}\\n' kmod-lustre",
                1,
                "package kmod-lustre is not installed\n",
                "",
            );
        let host = Host::new(Root::at(dir.path()), runner);
        let step = Packages {
            manager: PackageManager::Auto,
            apt: vec![],
            rpm: vec![pkg("lustre", Some("2.9.0")), pkg("kmod-lustre", Some("2.9.0"))],
            repos: vec![Repo {
                name: "lustre-server".into(),
                baseurl: "https://downloads.whamcloud.com/public/lustre/lustre-2.9.0/el7/server/".into(),
                gpgkey: None,
                gpgcheck: false,
                allow_http: false,
            }],
        };
        std::fs::create_dir_all(dir.path().join("etc/yum.repos.d")).unwrap();
        let a = step.assess(&host).await.unwrap();
        assert_eq!(
            a.diff,
            ["/etc/yum.repos.d/lustre-server.repo does not exist", "kmod-lustre is not installed"]
        );
        let shown: Vec<String> = a.actions.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["write /etc/yum.repos.d/lustre-server.repo", "yum install -y -- kmod-lustre-2.9.0"]
        );
        assert!(!version_matches("2.9.01-1", "2.9.0"));
    }

    /// A fixture's text without its `# ` header lines (which cite the source).
    fn fixture(text: &str) -> String {
        text.lines().filter(|l| !l.starts_with("# ")).map(|l| format!("{l}\n")).collect()
    }

    const KERNELS_EL6: &str = include_str!("../testdata/rpm/rpm-q-kernel-el6.txt");

    /// A yum node running `running`, whose `rpm -q kernel` answers `installed`.
    fn kernel_host(installed: &str, running: &str) -> (tempfile::TempDir, Host<RecordedRunner>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(dir.path().join("proc/sys/kernel/osrelease"), format!("{running}\n")).unwrap();
        let runner = if installed.is_empty() {
            RecordedRunner::new().record("rpm -q kernel", 1, "package kernel is not installed\n", "")
        } else {
            RecordedRunner::new().record("rpm -q kernel", 0, installed, "")
        };
        let host = Host::new(Root::at(dir.path()), runner);
        (dir, host)
    }

    fn kernel_step(pin: &str) -> Packages {
        Packages {
            manager: PackageManager::Yum,
            apt: vec![],
            rpm: vec![pkg("kernel", Some(pin))],
            repos: vec![],
        }
    }

    #[tokio::test]
    async fn a_pinned_kernel_is_read_from_the_installed_set_and_the_running_one() {
        // Every installed kernel counts, not the first line rpm prints (the oldest).
        let real = fixture(KERNELS_EL6);
        let (_d, host) = kernel_host(&real, "2.6.32-358.6.1.el6.x86_64");
        assert!(kernel_step("2.6.32-358.6.1.el6").assess(&host).await.unwrap().is_in_sync());

        // Installed (the second of three) but another is running: the node must boot into it.
        let (_d, host) = kernel_host(&real, "2.6.32-358.6.1.el6.x86_64");
        let err = kernel_step("2.6.32-279.el6").assess(&host).await.unwrap_err();
        assert_eq!(
            err,
            StepError::MustBoot {
                kernel: "2.6.32-279.el6.x86_64".into(),
                running: "2.6.32-358.6.1.el6.x86_64".into()
            }
        );

        // Not installed: installed, then the node must boot into it.
        let (_d, host) = kernel_host(&real, "2.6.32-358.6.1.el6.x86_64");
        let a = kernel_step("3.10.0-514.el7_lustre").assess(&host).await.unwrap();
        assert_eq!(
            a.diff,
            ["kernel 3.10.0-514.el7_lustre is not installed (installed: 2.6.32-279.14.1.el6.i686, \
              2.6.32-279.el6.x86_64, 2.6.32-358.6.1.el6.x86_64; running 2.6.32-358.6.1.el6.x86_64)"]
        );
        assert_eq!(a.actions[0].to_string(), "yum install -y -- kernel-3.10.0-514.el7_lustre");
    }

    #[tokio::test]
    async fn a_must_boot_kernel_is_its_own_outcome_and_stops_the_unit() {
        // The seed's server after `yum install kernel-3.10.0-514.el7_lustre`, still on CentOS
        // 7.3's kernel (rpm's default format, one NVRA a line, oldest first).
        let installed = "kernel-3.10.0-514.el7.x86_64\nkernel-3.10.0-514.el7_lustre.x86_64\n";
        let (dir, host) = kernel_host(installed, "3.10.0-514.el7.x86_64");
        let later = crate::Step::Directory(crate::Directory { path: "/after".into(), mode: 0o755 });
        let mut outcomes = Vec::new();
        let summary = crate::run_unit(
            &[crate::Step::Packages(kernel_step("3.10.0-514.el7_lustre")), later],
            &host,
            &crate::Policy::default(),
            false,
            false,
            |event| {
                if let crate::Event::Done { outcome, .. } = event {
                    outcomes.push(outcome);
                }
            },
            || true,
        )
        .await;
        assert_eq!(
            outcomes,
            [
                crate::Outcome::MustBoot {
                    kernel: "3.10.0-514.el7_lustre.x86_64".into(),
                    running: "3.10.0-514.el7.x86_64".into()
                },
                crate::Outcome::Skipped {
                    reason: "the node must boot into kernel 3.10.0-514.el7_lustre.x86_64 first".into()
                },
            ]
        );
        assert_eq!(
            (summary.failed, summary.skipped, summary.must_boot.as_deref()),
            (0, 1, Some("3.10.0-514.el7_lustre.x86_64"))
        );
        assert!(!dir.path().join("after").exists());

        // Once booted into it, the step is in sync.
        let (_d, host) = kernel_host(installed, "3.10.0-514.el7_lustre.x86_64");
        assert!(kernel_step("3.10.0-514.el7_lustre").assess(&host).await.unwrap().is_in_sync());
    }

    #[tokio::test]
    async fn odd_rpm_output_or_no_osrelease_is_refused_clearly() {
        let (_d, host) = kernel_host("package kernel-x\n", "3.10.0-514.el7.x86_64");
        let err = kernel_step("3.10.0-514.el7_lustre").assess(&host).await.unwrap_err();
        assert!(matches!(&err, StepError::Unexpected { command, .. } if command == "rpm -q kernel"), "{err}");
        let (dir, host) = kernel_host("kernel-3.10.0-514.el7.x86_64\n", "x");
        std::fs::remove_file(dir.path().join("proc/sys/kernel/osrelease")).unwrap();
        let err = kernel_step("3.10.0-514.el7_lustre").assess(&host).await.unwrap_err();
        assert!(err.to_string().contains("/proc/sys/kernel/osrelease"), "{err}");
    }

    #[tokio::test]
    async fn no_package_manager_is_a_clear_refusal() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::new(Root::at(dir.path()), RecordedRunner::new());
        let step = Packages {
            manager: PackageManager::Auto,
            apt: vec![pkg("fio", None)],
            rpm: vec![],
            repos: vec![],
        };
        let err = step.assess(&host).await.unwrap_err();
        assert!(err.to_string().contains("set [packages] manager"), "{err}");
    }
}
