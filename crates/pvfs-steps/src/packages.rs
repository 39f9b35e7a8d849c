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
        for package in list {
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
            a.actions.push(Action::Run(install_command(manager, &missing)));
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
