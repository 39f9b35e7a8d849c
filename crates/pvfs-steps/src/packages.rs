//! Packages installed, at pinned versions where the cluster file pins them, with the node's
//! own package manager (apt on Debian/Ubuntu, dnf or yum on RHEL-likes).

use crate::{Action, Assessment, NodeAccess, StepError};
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

/// These packages are installed (from these repositories).
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
    /// Repositories written before installing: `/etc/yum.repos.d/NAME.repo` on yum/dnf
    /// nodes, `/etc/apt/sources.list.d/pvfs-NAME.sources` on apt nodes.
    pub repos: Vec<Repo>,
}

/// A repository (`[[repo]]` in the cluster file): yum/dnf's, or apt's when it names suites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// Also its file name: `/etc/yum.repos.d/NAME.repo`, `/etc/apt/sources.list.d/pvfs-NAME.sources`.
    pub name: String,
    /// yum's `baseurl`; apt's `URIs`.
    pub baseurl: String,
    /// yum: where yum fetches the signing key; `None`: keys already imported (a release
    /// package). apt: a `file://` keyring already on the node (apt fetches no keys).
    pub gpgkey: Option<String>,
    /// Packages' signatures are checked. Off only where the cluster file says
    /// `gpgcheck = false`, and plans show it.
    pub gpgcheck: bool,
    /// The cluster file allows plain `http://` URLs for this repository.
    pub allow_http: bool,
    /// apt's `Suites` (`bookworm`, or an exact path ending in `/`); empty for a yum/dnf
    /// repository: a repository with suites is an apt repository.
    pub suites: Vec<String>,
    /// apt's `Components` (`main`, `non-free`); empty with an exact-path suite.
    pub components: Vec<String>,
    /// apt: the repository's ASCII-armored OpenPGP public key, shipped from the coordinator
    /// (`gpgkey_file` next to the cluster file) and written to
    /// `/etc/apt/keyrings/pvfs-NAME.asc`, which the sources file's `Signed-By` names.
    pub key: Option<String>,
}

/// Where apt keyrings that belong to one source live (Debian 12, Ubuntu 22.04 and later ship
/// the directory; sources.list(5), Signed-By).
pub const APT_KEYRINGS: &str = "/etc/apt/keyrings";
/// Where apt reads extra sources from (sources.list(5), SOURCES.LIST.D).
pub const APT_SOURCES: &str = "/etc/apt/sources.list.d";

/// apt may take a while to read every source's lists again.
const UPDATE_TIMEOUT: Duration = Duration::from_secs(600);

impl Repo {
    /// An apt repository: it names suites (yum's have none).
    pub fn is_apt(&self) -> bool {
        !self.suites.is_empty()
    }

    /// Where this repository's definition is written on a node of its kind.
    pub fn path(&self) -> String {
        if self.is_apt() {
            format!("{APT_SOURCES}/pvfs-{}.sources", self.name)
        } else {
            format!("/etc/yum.repos.d/{}.repo", self.name)
        }
    }

    /// Where an apt repository's shipped key is written, if it ships one.
    pub fn keyring_path(&self) -> Option<String> {
        self.key.as_ref().map(|_| format!("{APT_KEYRINGS}/pvfs-{}.asc", self.name))
    }

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

/// An apt source in the deb822 format of sources.list(5) ("DEB822-STYLE FORMAT": one
/// paragraph of `Field: value` lines; `Types`, `URIs`, `Suites`, `Components`, `Signed-By`,
/// `Trusted`), for `/etc/apt/sources.list.d/pvfs-NAME.sources`. A suite that is an exact path
/// (ends in `/`) takes no components; any other takes at least one (sources.list(5)).
fn sources_file(repo: &Repo) -> Result<String, StepError> {
    let refused = |why: String| StepError::Refused { reason: format!("[[repo]] {}: {why}", repo.name) };
    let exact = repo.suites.iter().any(|s| s.ends_with('/'));
    if exact && !repo.components.is_empty() {
        return Err(refused("a suite ending in '/' is an exact path and takes no components".into()));
    }
    if !exact && repo.components.is_empty() {
        return Err(refused("give components (main, non-free, …) for its suites".into()));
    }
    let signed_by = match (repo.keyring_path(), &repo.gpgkey) {
        (Some(path), _) => Some(path),
        (None, Some(key)) => match key.strip_prefix("file://") {
            Some(path) => Some(path.to_owned()),
            None => {
                return Err(refused(format!(
                    "apt does not fetch signing keys ({key}): save the key next to the cluster file and name it \
                     with gpgkey_file"
                )));
            }
        },
        // No key named: apt checks against the keys it already trusts (a keyring package's).
        (None, None) => None,
    };
    let mut text = format!(
        "# Written by pvfs from [[repo]] {} in the cluster file (deb822, sources.list(5)).\n",
        repo.name
    );
    text += &format!("Types: deb\nURIs: {}\nSuites: {}\n", repo.baseurl, repo.suites.join(" "));
    if !repo.components.is_empty() {
        text += &format!("Components: {}\n", repo.components.join(" "));
    }
    if let Some(path) = signed_by {
        text += &format!("Signed-By: {path}\n");
    }
    if !repo.gpgcheck {
        text += "# Trusted: yes: the cluster file says gpgcheck = false for this repository\nTrusted: yes\n";
    }
    Ok(text)
}

impl Packages {
    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        let manager = self.resolve(host)?;
        let mut a = Assessment::in_sync();
        let list = if manager == PackageManager::Apt { &self.apt } else { &self.rpm };
        // One [[repo]] is one kind of repository: written on a node of the other kind it would
        // be ignored by its package manager, and the packages it should bring would be looked
        // for elsewhere. Refused, naming the entry, rather than skipped.
        let apt = manager == PackageManager::Apt;
        if let Some(other) = self.repos.iter().find(|r| r.is_apt() != apt) {
            let reason = if apt {
                format!(
                    "[[repo]] {} is a yum/dnf repository (it names no suites) and this node uses apt: give it \
                     suites (and components) to make it an apt repository, or limit it to other nodes with roles",
                    other.name
                )
            } else {
                format!(
                    "[[repo]] {} is an apt repository (it names suites) and this node uses {}: limit it to the \
                     apt nodes with roles, or give a yum/dnf [[repo]] without suites",
                    other.name,
                    manager.as_str()
                )
            };
            return Err(StepError::Refused { reason });
        }
        let mut sources_changed = false;
        for repo in &self.repos {
            let mut files = Vec::new();
            if apt {
                if let (Some(key), Some(path)) = (&repo.key, repo.keyring_path()) {
                    // Debian 11 and Ubuntu 20.04 do not ship the directory yet.
                    if !host.root.is_dir(APT_KEYRINGS) {
                        a.change(
                            format!("{APT_KEYRINGS} does not exist"),
                            Action::Mkdir { path: APT_KEYRINGS.into(), mode: 0o755 },
                        );
                    }
                    // World-readable: apt reads keyrings as its unprivileged _apt user
                    // (sources.list(5), Signed-By).
                    files.push(crate::File { path, contents: key.clone(), mode: 0o644 });
                }
                files.push(crate::File { path: repo.path(), contents: sources_file(repo)?, mode: 0o644 });
            } else {
                files.push(crate::File { path: repo.path(), contents: repo_file(repo), mode: 0o644 });
            }
            for file in files {
                let written = file.assess(host)?;
                sources_changed |= !written.is_in_sync();
                a.diff.extend(written.diff);
                a.actions.extend(written.actions);
            }
        }
        // apt reads a new or changed source only on `apt-get update`; an unchanged one needs
        // no update, so a converged node runs none (yum and dnf read .repo files as they go).
        if apt && sources_changed {
            a.actions.push(Action::Run(Command::new("apt-get").arg("update").timeout(UPDATE_TIMEOUT)));
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
            let installed = installed_versions(host, manager, &package.name).await?;
            match &package.version {
                _ if installed.is_empty() => a.diff.push(format!("{} is not installed", package.name)),
                // Several versions can be installed at once (kernels, multilib): the pin
                // holds when one of them is the version pinned.
                Some(want) if !installed.iter().any(|have| have.matches(want)) => {
                    let have: Vec<String> = installed.iter().map(ToString::to_string).collect();
                    a.diff.push(format!("{} is {}, not {want}", package.name, have.join(", ")));
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

    fn resolve<R: Runner>(&self, host: &NodeAccess<R>) -> Result<PackageManager, StepError> {
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

/// One installed version of a package, as its package manager reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Installed {
    /// rpm's epoch, when the package has one (`1` of `1:2.4.6-80.el7`); dpkg keeps it in
    /// `version`.
    pub epoch: Option<String>,
    /// `2.9.0-1.el7.x86_64` (rpm: version-release.arch) or `10.3-5` (dpkg).
    pub version: String,
}

impl Installed {
    /// A pin matches exactly, or as a prefix up to a `-`/`.`/`+`/`~` boundary (`2.9.0`
    /// matches rpm's `2.9.0-1.el7.x86_64`); a pin with an epoch (`1:2.4.6`) must match the
    /// epoch too.
    pub(crate) fn matches(&self, want: &str) -> bool {
        match (want.split_once(':'), &self.epoch) {
            (Some((epoch, rest)), Some(have)) => epoch == have && version_matches(&self.version, rest),
            (Some((epoch, rest)), None) => {
                // dpkg writes the epoch into the version itself.
                version_matches(&self.version, want) || (epoch == "0" && version_matches(&self.version, rest))
            }
            (None, _) => version_matches(&self.version, want),
        }
    }
}

impl fmt::Display for Installed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.epoch {
            Some(epoch) => write!(f, "{epoch}:{}", self.version),
            None => f.write_str(&self.version),
        }
    }
}

/// A pin matches the installed version exactly, or as a prefix up to a `-`/`.`/`+` boundary
/// (`2.9.0` matches rpm's `2.9.0-1.el7`).
fn version_matches(have: &str, want: &str) -> bool {
    have == want || have.strip_prefix(want).is_some_and(|rest| rest.starts_with(['-', '.', '+', '~']))
}

/// rpm's query format for one installed package: `%{EVR}` is `[EPOCH:]VERSION-RELEASE`
/// (the epoch only where the package has one), then the architecture. One line per
/// installed instance: `rpm -q kernel` lists every installed kernel, oldest first.
const RPM_FORMAT: &str = "%{EVR}.%{ARCH}\\n";

/// dpkg-query's format: the three-letter status (desired action, state, error flag:
/// dpkg-query(1), `db:Status-Abbrev`) and the version. A package of several architectures
/// (multiarch) prints one line each.
const DPKG_FORMAT: &str = "${db:Status-Abbrev}|${Version}\\n";

/// Every installed version of `name`, empty when none is.
pub(crate) async fn installed_versions<R: Runner>(
    host: &NodeAccess<R>,
    manager: PackageManager,
    name: &str,
) -> Result<Vec<Installed>, StepError> {
    let command = match manager {
        PackageManager::Apt => Command::new("dpkg-query").args(["-W", "-f", DPKG_FORMAT, name]),
        _ => Command::new("rpm").args(["-q", "--qf", RPM_FORMAT, name]),
    };
    let shown = command.to_string();
    let out = host.probe(command).await?;
    let failed = |out: &pvfs_host::Output| StepError::Command {
        command: shown.clone(),
        code: out.code,
        stderr: crate::error_tail(out),
        hint: None,
    };
    match (manager, out.code) {
        (PackageManager::Apt, Some(0)) => parse_dpkg_query(&shown, &out.stdout),
        // "dpkg-query: no packages found matching NAME" on stderr.
        (PackageManager::Apt, Some(1)) if out.stderr.contains("no packages found matching") => Ok(Vec::new()),
        (PackageManager::Apt, _) => Err(failed(&out)),
        (_, Some(0)) => parse_rpm_query(&shown, &out.stdout),
        // "package NAME is not installed" on stdout; any other exit 1 (a damaged rpm
        // database: "error: rpmdb: …") is a failure, not an absent package.
        (_, Some(1)) if out.stdout.trim_end().ends_with("is not installed") => Ok(Vec::new()),
        _ => Err(failed(&out)),
    }
}

/// `rpm -q --qf RPM_FORMAT` lines: `3.10.0-1160.45.1.el7.x86_64`, `1:2.4.6-80.el7.centos.x86_64`.
fn parse_rpm_query(command: &str, stdout: &str) -> Result<Vec<Installed>, StepError> {
    let unexpected = |line: &str, why: &str| StepError::Unexpected {
        command: command.to_owned(),
        message: format!("{why} in {line:?} (expected [EPOCH:]VERSION-RELEASE.ARCH)"),
    };
    let installed: Vec<Installed> = stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            let (epoch, version) = match line.split_once(':') {
                Some((epoch, rest)) if !epoch.is_empty() && epoch.bytes().all(|b| b.is_ascii_digit()) => {
                    (Some(epoch.to_owned()), rest)
                }
                Some(_) => return Err(unexpected(line, "an epoch that is not a number")),
                None => (None, line),
            };
            if !version.contains('-') || version.contains(char::is_whitespace) {
                return Err(unexpected(line, "no VERSION-RELEASE"));
            }
            Ok(Installed { epoch, version: version.to_owned() })
        })
        .collect::<Result<_, _>>()?;
    if installed.is_empty() {
        return Err(StepError::Unexpected {
            command: command.to_owned(),
            message: "exit 0 and no version".into(),
        });
    }
    Ok(installed)
}

/// `dpkg-query -W -f DPKG_FORMAT` lines: `ii |6.1.0-1`. Installed means the state letter
/// (the second) is `i`, with no error flag: `ii` and `hi` (held) are installed; `rc`
/// (removed, configuration kept), `un` (unknown), `iU`/`iF` (unpacked, half-configured) and
/// `iiR` (reinstall required) are not.
fn parse_dpkg_query(command: &str, stdout: &str) -> Result<Vec<Installed>, StepError> {
    let mut installed = Vec::new();
    for line in stdout.lines().filter(|l| !l.is_empty()) {
        let unexpected = || StepError::Unexpected {
            command: command.to_owned(),
            message: format!("{line:?} is not STATUS|VERSION with a three-letter status (dpkg-query(1))"),
        };
        let (status, version) = line.split_once('|').ok_or_else(unexpected)?;
        let letters: Vec<char> = status.chars().collect();
        if letters.len() != 3 || !letters[..2].iter().all(char::is_ascii_alphabetic) {
            return Err(unexpected());
        }
        if letters[1] == 'i' && letters[2] == ' ' && !version.trim().is_empty() {
            installed.push(Installed { epoch: None, version: version.trim().to_owned() });
        }
    }
    Ok(installed)
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
async fn kernel<R: Runner>(host: &NodeAccess<R>, want: Option<&str>) -> Result<Kernel, StepError> {
    // rpm's `%{EVR}.%{ARCH}` of a kernel (no epoch) is exactly what the kernel calls its
    // release: `3.10.0-514.el7_lustre.x86_64`.
    let installed: Vec<String> = installed_versions(host, PackageManager::Yum, "kernel")
        .await?
        .into_iter()
        .map(|have| have.version)
        .collect();
    let running = running_kernel(host)?;
    let Some(want) = want else {
        return Ok(if installed.is_empty() {
            Kernel::Missing(format!("kernel is not installed (running {running})"))
        } else {
            Kernel::Ready
        });
    };
    // The running kernel holds the pin: whichever of the kernels it matches the node boots
    // next, that one holds it too.
    if version_matches(&running, want) {
        return Ok(Kernel::Ready);
    }
    let matching: Vec<&String> = installed.iter().filter(|v| version_matches(v, want)).collect();
    match matching.as_slice() {
        [] => Ok(Kernel::Missing(format!(
            "kernel {want} is not installed (installed: {}; running {running})",
            if installed.is_empty() { "none".to_owned() } else { installed.join(", ") }
        ))),
        [found] => Ok(Kernel::NotRunning { installed: (*found).clone(), running }),
        // A pin is a prefix (`3.10.0-514`), and a node keeps several kernels of one release
        // (514.10.2, 514.21.1, …): the node would boot into whichever came first in rpm's
        // list, not one the file chose.
        several => Err(StepError::Refused {
            reason: format!(
                "kernel {want} matches {} installed kernels ({}) and the node runs {running}: pvfs does not \
                 pick one to boot; pin the one you mean in full in the cluster file's [packages] \
                 (kernel = \"{}\")",
                several.len(),
                several.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", "),
                several[several.len() - 1]
            ),
        }),
    }
}

/// The running kernel's release, from the kernel (`uname -r` reads the same string).
fn running_kernel<R: Runner>(host: &NodeAccess<R>) -> Result<String, StepError> {
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
        let host = NodeAccess::new(Root::at(dir.path()), runner);
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
            .record("rpm -q --qf '%{EVR}.%{ARCH}\\n' lustre", 0, "2.9.0-1.el7.x86_64\n", "")
            .record(
                "rpm -q --qf '%{EVR}.%{ARCH}\\n' kmod-lustre",
                1,
                "package kmod-lustre is not installed\n",
                "",
            );
        let host = NodeAccess::new(Root::at(dir.path()), runner);
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
                suites: vec![],
                components: vec![],
                key: None,
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

    /// A fixture of `testdata/packages/` without its `#` header (the citation).
    fn fixture(name: &str) -> String {
        let path = format!("{}/testdata/packages/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
        crate::without_header(&text)
    }

    fn rpm_host(
        name: &str,
        code: i32,
        stdout: &str,
        stderr: &str,
    ) -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
        let dir = tempfile::tempdir().unwrap();
        let command = format!("rpm -q --qf '%{{EVR}}.%{{ARCH}}\\n' {name}");
        let host = NodeAccess::new(
            Root::at(dir.path()),
            RecordedRunner::new().record(&command, code, stdout, stderr),
        );
        (dir, host)
    }

    fn rpm_step(name: &str, version: Option<&str>) -> Packages {
        Packages { manager: PackageManager::Dnf, apt: vec![], rpm: vec![pkg(name, version)], repos: vec![] }
    }

    #[tokio::test]
    async fn every_installed_rpm_counts_not_only_the_first() {
        for fixture_name in ["rpm-q-kernel-ol6.txt", "rpm-q-kernel-ol7.txt"] {
            let out = fixture(fixture_name);
            let all: Vec<&str> = out.lines().collect();
            // kernel-devel is installed side by side like kernel (installonly), and read by the
            // generic path; `kernel` itself is also judged by the running kernel (below).
            let (_dir, host) = rpm_host("kernel-devel", 0, &out, "");
            // Each installed kernel satisfies a pin on it, wherever rpm lists it.
            for have in &all {
                let pinned = have.rsplit_once('.').unwrap().0; // without the arch
                let a = rpm_step("kernel-devel", Some(pinned)).assess(&host).await.unwrap();
                assert!(a.is_in_sync(), "{fixture_name}: {pinned}: {:?}", a.diff);
            }
            let a = rpm_step("kernel-devel", Some("4.18.0")).assess(&host).await.unwrap();
            assert_eq!(a.diff, [format!("kernel-devel is {}, not 4.18.0", all.join(", "))], "{fixture_name}");
            assert_eq!(
                a.actions.iter().map(ToString::to_string).collect::<Vec<_>>(),
                ["dnf install -y -- kernel-devel-4.18.0"]
            );
        }
    }

    const KERNELS_EL6: &str = include_str!("../testdata/packages/rpm-q-kernel-el6.txt");
    const KERNELS_EL7_514: &str = include_str!("../testdata/packages/rpm-q-kernel-el7-514.txt");

    /// A pin that matches several installed kernels names none of them (issue 25, item 9): it
    /// is refused, listing them, rather than the first rpm lists being booted.
    #[tokio::test]
    async fn a_kernel_pin_that_matches_several_installed_kernels_is_refused_as_ambiguous() {
        let real = crate::without_header(KERNELS_EL7_514);
        let (_d, host) = kernel_host(&real, "3.10.0-693.2.2.el7.x86_64");
        let err = kernel_step("3.10.0-514").assess(&host).await.unwrap_err();
        assert!(err.is_refusal(), "{err}");
        assert_eq!(
            err.to_string(),
            "refusing: kernel 3.10.0-514 matches 4 installed kernels (3.10.0-514.10.2.el7.x86_64, \
             3.10.0-514.16.1.el7.x86_64, 3.10.0-514.21.1.el7.x86_64, 3.10.0-514.26.2.el7.x86_64) and the node runs \
             3.10.0-693.2.2.el7.x86_64: pvfs does not pick one to boot; pin the one you mean in full in the cluster \
             file's [packages] (kernel = \"3.10.0-514.26.2.el7.x86_64\")"
        );
        // One of them in full: the node must boot into it.
        let err = kernel_step("3.10.0-514.21.1.el7").assess(&host).await.unwrap_err();
        assert!(
            matches!(&err, StepError::MustBoot { kernel, .. } if kernel == "3.10.0-514.21.1.el7.x86_64"),
            "{err}"
        );
        // Running one of the matching kernels holds the pin.
        let (_d, host) = kernel_host(&real, "3.10.0-514.21.1.el7.x86_64");
        assert!(kernel_step("3.10.0-514").assess(&host).await.unwrap().is_in_sync());
    }

    /// A yum node running `running`, whose `rpm -q kernel` answers `installed`.
    fn kernel_host(installed: &str, running: &str) -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(dir.path().join("proc/sys/kernel/osrelease"), format!("{running}\n")).unwrap();
        // `installed` is `rpm -q kernel` (NAME-VERSION-RELEASE.ARCH a line); the step asks with
        // `--qf '%{EVR}.%{ARCH}'`, which for a package without an epoch (kernels have none)
        // prints the same line without `kernel-`.
        let query = Command::new("rpm").args(["-q", "--qf", RPM_FORMAT, "kernel"]).to_string();
        let runner = if installed.is_empty() {
            RecordedRunner::new().record(&query, 1, "package kernel is not installed\n", "")
        } else {
            let evr: String =
                installed.lines().map(|l| format!("{}\n", l.strip_prefix("kernel-").unwrap_or(l))).collect();
            RecordedRunner::new().record(&query, 0, &evr, "")
        };
        let host = NodeAccess::new(Root::at(dir.path()), runner);
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
    async fn rpm_epochs_are_read_and_matched() {
        let (_dir, host) = rpm_host("mod_ssl", 0, &fixture("rpm-q-epoch-el7.txt"), "");
        let installed = installed_versions(&host, PackageManager::Yum, "mod_ssl").await.unwrap();
        assert_eq!(
            installed,
            [Installed { epoch: Some("1".into()), version: "2.4.6-80.el7.centos.x86_64".into() }]
        );
        for (pin, ok) in [
            ("2.4.6", true),
            ("1:2.4.6", true),
            ("1:2.4.6-80.el7.centos", true),
            ("2:2.4.6", false),
            ("2.4.7", false),
        ] {
            assert_eq!(installed[0].matches(pin), ok, "{pin}");
        }
    }

    #[tokio::test]
    async fn rpm_answers_other_than_installed_or_not_are_errors_naming_the_command() {
        // Not installed: rpm says so on stdout and exits 1.
        let (_dir, host) = rpm_host("kmod-lustre", 1, "package kmod-lustre is not installed\n", "");
        assert_eq!(installed_versions(&host, PackageManager::Yum, "kmod-lustre").await.unwrap(), []);
        // Exit 1 for another reason (a damaged rpm database) is not "not installed".
        let (_dir, host) =
            rpm_host("lustre", 1, "", "error: cannot open Packages database in /var/lib/rpm\n");
        let err = installed_versions(&host, PackageManager::Yum, "lustre").await.unwrap_err();
        assert!(err.to_string().contains("error: cannot open Packages database"), "{err}");
        // A format pvfs does not know (an rpm whose query format differs) is refused by name.
        for garbage in ["lustre-2.9.0-1.el7.x86_64 is installed\n", "x:2.9.0-1.el7.x86_64\n", "\n", "2.9.0\n"]
        {
            let (_dir, host) = rpm_host("lustre", 0, garbage, "");
            let err = installed_versions(&host, PackageManager::Yum, "lustre").await.unwrap_err();
            assert!(matches!(err, StepError::Unexpected { .. }), "{garbage:?}: {err}");
            assert!(
                err.to_string().starts_with("`rpm -q --qf '%{EVR}.%{ARCH}\\n' lustre` answered"),
                "{err}"
            );
        }
    }

    #[tokio::test]
    async fn dpkg_states_installed_held_removed_and_broken() {
        let query = |name: &str| format!("dpkg-query -W -f '${{db:Status-Abbrev}}|${{Version}}\\n' {name}");
        let runner = RecordedRunner::new()
            .record(&query("libc6"), 0, &fixture("dpkg-query-debian12.txt"), "")
            // The other states dpkg-query(1) documents for db:Status-Abbrev: held installed,
            // removed with its configuration kept, half-installed with reinstall required.
            .record(&query("held"), 0, "hi |1.0-1\n", "")
            .record(&query("removed"), 0, "rc |1.0-1\n", "")
            .record(&query("broken"), 0, "iHR|1.0-1\n", "")
            .record(&query("nosuchpkg"), 1, "", "dpkg-query: no packages found matching nosuchpkg\n")
            .record(&query("odd"), 0, "installed 1.0\n", "")
            // Exit 2 is dpkg-query's fatal error (dpkg-query(1), EXIT STATUS): not "absent".
            .record(&query("locked"), 2, "", "dpkg-query: error: cannot open /var/lib/dpkg/status\n");
        let dir = tempfile::tempdir().unwrap();
        let host = NodeAccess::new(Root::at(dir.path()), runner);
        let versions = |v: Vec<Installed>| v.into_iter().map(|i| i.version).collect::<Vec<_>>();
        let apt = PackageManager::Apt;
        assert_eq!(versions(installed_versions(&host, apt, "libc6").await.unwrap()), ["2.36-9+deb12u14"]);
        assert_eq!(versions(installed_versions(&host, apt, "held").await.unwrap()), ["1.0-1"]);
        for absent in ["removed", "broken", "nosuchpkg"] {
            assert_eq!(installed_versions(&host, apt, absent).await.unwrap(), [], "{absent}");
        }
        let err = installed_versions(&host, apt, "odd").await.unwrap_err();
        assert!(matches!(err, StepError::Unexpected { .. }), "{err}");
        let err = installed_versions(&host, apt, "locked").await.unwrap_err();
        assert!(err.to_string().contains("cannot open /var/lib/dpkg/status"), "{err}");
    }

    #[tokio::test]
    async fn a_pinned_kernel_is_read_from_the_installed_set_and_the_running_one() {
        // Every installed kernel counts, not the first line rpm prints (the oldest).
        let real = crate::without_header(KERNELS_EL6);
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
            &crate::Unguarded,
            false,
            false,
            |event| {
                if let crate::StepEvent::Done { outcome, .. } = event {
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
        assert!(
            matches!(&err, StepError::Unexpected { command, .. } if command.starts_with("rpm -q")),
            "{err}"
        );
        let (dir, host) = kernel_host("kernel-3.10.0-514.el7.x86_64\n", "x");
        std::fs::remove_file(dir.path().join("proc/sys/kernel/osrelease")).unwrap();
        let err = kernel_step("3.10.0-514.el7_lustre").assess(&host).await.unwrap_err();
        assert!(err.to_string().contains("/proc/sys/kernel/osrelease"), "{err}");
    }

    /// A real armored public key (testdata/packages/README.md says where it comes from).
    const TEST_KEY: &str = include_str!("../testdata/packages/pvfs-test-repo.asc");

    /// BeeGFS's Debian repository as its documentation lays it out (a release directory with
    /// `dists/bookworm`, component `non-free`), signed by the test key.
    fn beegfs_apt() -> Repo {
        Repo {
            name: "beegfs".into(),
            baseurl: "https://www.beegfs.io/release/beegfs_7.4.5".into(),
            gpgkey: None,
            gpgcheck: true,
            allow_http: false,
            suites: vec!["bookworm".into()],
            components: vec!["non-free".into()],
            key: Some(TEST_KEY.into()),
        }
    }

    const DPKG_BEEGFS: &str = "dpkg-query -W -f '${db:Status-Abbrev}|${Version}\\n' beegfs-client";
    const INSTALL_BEEGFS: &str =
        "apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confold -- beegfs-client";

    fn shown(actions: &[Action]) -> Vec<String> {
        actions.iter().map(ToString::to_string).collect()
    }

    #[tokio::test]
    async fn an_apt_repository_is_a_deb822_source_with_its_key_and_updates_only_when_changed() {
        let dir = tempfile::tempdir().unwrap();
        // Debian 11: sources.list.d exists, /etc/apt/keyrings does not yet.
        std::fs::create_dir_all(dir.path().join("etc/apt/sources.list.d")).unwrap();
        let absent = "dpkg-query: no packages found matching beegfs-client\n";
        // Absent for the plan and for apply's assessment; installed from then on.
        let runner = RecordedRunner::new()
            .record(DPKG_BEEGFS, 1, "", absent)
            .record(DPKG_BEEGFS, 1, "", absent)
            .record(DPKG_BEEGFS, 0, "ii |7.4.5\n", "")
            .record("apt-get update", 0, "Reading package lists... Done\n", "")
            .record(INSTALL_BEEGFS, 0, "", "");
        let host = NodeAccess::new(Root::at(dir.path()), runner.clone());
        let mut step = Packages {
            manager: PackageManager::Apt,
            apt: vec![pkg("beegfs-client", None)],
            rpm: vec![],
            repos: vec![beegfs_apt()],
        };
        // The plan: the keyring directory, the key, the source, one update, then the install.
        let a = step.assess(&host).await.unwrap();
        assert_eq!(
            shown(&a.actions),
            [
                "mkdir -p -m 755 /etc/apt/keyrings",
                "write /etc/apt/keyrings/pvfs-beegfs.asc",
                "write /etc/apt/sources.list.d/pvfs-beegfs.sources",
                "apt-get update",
                INSTALL_BEEGFS,
            ]
        );
        // Applied. (That the default policy allows these actions is pvfs-policy's test of
        // this same step.)
        let outcome =
            crate::execute(&crate::Step::Packages(step.clone()), &host, &crate::Unguarded, false, |_| {})
                .await;
        assert!(matches!(outcome, crate::Outcome::Changed { .. }), "{outcome:?}");
        let sources =
            std::fs::read_to_string(dir.path().join("etc/apt/sources.list.d/pvfs-beegfs.sources")).unwrap();
        assert_eq!(
            sources,
            "# Written by pvfs from [[repo]] beegfs in the cluster file (deb822, sources.list(5)).\n\
             Types: deb\n\
             URIs: https://www.beegfs.io/release/beegfs_7.4.5\n\
             Suites: bookworm\n\
             Components: non-free\n\
             Signed-By: /etc/apt/keyrings/pvfs-beegfs.asc\n"
        );
        let keyring = dir.path().join("etc/apt/keyrings/pvfs-beegfs.asc");
        assert_eq!(std::fs::read_to_string(&keyring).unwrap(), TEST_KEY);
        use std::os::unix::fs::PermissionsExt;
        // apt reads keyrings as its unprivileged _apt user.
        assert_eq!(std::fs::metadata(&keyring).unwrap().permissions().mode() & 0o7777, 0o644);
        let calls = runner.calls();
        let update = calls.iter().position(|c| c == "apt-get update").unwrap();
        let install = calls.iter().position(|c| c == INSTALL_BEEGFS).unwrap();
        assert!(update < install, "{calls:?}");

        // A second run: nothing differs, nothing runs, no update.
        let before = runner.calls().len();
        assert!(step.assess(&host).await.unwrap().is_in_sync());
        assert!(!runner.calls()[before..].iter().any(|c| c.starts_with("apt-get")));

        // Another suite: only the source is rewritten, then lists are read again.
        step.repos[0].suites = vec!["bullseye".into()];
        let a = step.assess(&host).await.unwrap();
        assert_eq!(
            shown(&a.actions),
            ["write /etc/apt/sources.list.d/pvfs-beegfs.sources", "apt-get update"]
        );
        assert_eq!(
            a.diff,
            [
                "/etc/apt/sources.list.d/pvfs-beegfs.sources differs:",
                "-Suites: bookworm",
                "+Suites: bullseye"
            ]
        );
    }

    #[tokio::test]
    async fn apt_sources_name_a_node_keyring_or_none_and_say_when_unsigned() {
        let with = |gpgkey: Option<&str>, gpgcheck: bool| Repo {
            gpgkey: gpgkey.map(Into::into),
            gpgcheck,
            key: None,
            suites: vec!["./".into()],
            components: vec![],
            ..beegfs_apt()
        };
        let text = sources_file(&with(Some("file:///usr/share/keyrings/beegfs.gpg"), true)).unwrap();
        assert!(text.ends_with("Suites: ./\nSigned-By: /usr/share/keyrings/beegfs.gpg\n"), "{text}");
        let text = sources_file(&with(None, false)).unwrap();
        assert!(!text.contains("Signed-By") && !text.contains("Components"), "{text}");
        assert!(text.ends_with("gpgcheck = false for this repository\nTrusted: yes\n"), "{text}");
        assert!(Repo { gpgcheck: false, ..beegfs_apt() }.warning().unwrap().contains("not GPG-checked"));
        // apt fetches no keys: a download URL is refused, naming what to do.
        let err =
            sources_file(&with(Some("https://www.beegfs.io/release/beegfs_7.4.5/gpg/GPG-KEY-beegfs"), true))
                .unwrap_err();
        assert!(err.to_string().contains("gpgkey_file"), "{err}");
        // sources.list(5): an exact path takes no components, any other suite needs one.
        let err = sources_file(&Repo { components: vec!["main".into()], ..with(None, true) }).unwrap_err();
        assert!(err.to_string().contains("exact path"), "{err}");
        let err = sources_file(&Repo { components: vec![], ..beegfs_apt() }).unwrap_err();
        assert!(err.to_string().contains("give components"), "{err}");
    }

    #[tokio::test]
    async fn a_repository_of_the_other_family_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let host = NodeAccess::new(Root::at(dir.path()), RecordedRunner::new());
        let yum = Repo { suites: vec![], components: vec![], key: None, ..beegfs_apt() };
        let on_apt = Packages { manager: PackageManager::Apt, apt: vec![], rpm: vec![], repos: vec![yum] };
        let err = on_apt.assess(&host).await.unwrap_err();
        assert!(err.to_string().contains("[[repo]] beegfs is a yum/dnf repository"), "{err}");
        let on_dnf =
            Packages { manager: PackageManager::Dnf, apt: vec![], rpm: vec![], repos: vec![beegfs_apt()] };
        let err = on_dnf.assess(&host).await.unwrap_err();
        assert!(
            err.to_string().contains("[[repo]] beegfs is an apt repository")
                && err.to_string().contains("dnf"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn no_package_manager_is_a_clear_refusal() {
        let dir = tempfile::tempdir().unwrap();
        let host = NodeAccess::new(Root::at(dir.path()), RecordedRunner::new());
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
