//! The ports a file system needs, opened in firewalld: `firewall-cmd --permanent
//! --add-port=PORT/PROTO` for each one the permanent configuration lacks, then
//! `firewall-cmd --reload` so the running firewall takes them.
//!
//! Read back every time, never remembered: the permanent and the running port lists
//! (`firewall-cmd [--permanent] --list-ports`) are compared with the step's ports, so a second
//! run changes nothing, and a run that stopped between `--add-port` and `--reload` reloads.
//!
//! Only firewalld, and only when it runs: a node without `firewall-cmd` (firewalld's spec
//! installs it as `%{_bindir}/firewall-cmd`, /usr/bin) or whose firewalld is not active has
//! nothing to open, and the step says so. ufw (Debian, Ubuntu) is reported by the agent's
//! facts (`pvfsctl nodes`) but not changed: opening ports there is the operator's.
//!
//! `--reload` makes the permanent configuration the running one, so runtime-only changes
//! someone made by hand are dropped (firewall-cmd(1), `--reload`); pvfs never makes one.

use crate::{Action, Assessment, NodeAccess, StepError};
use pvfs_host::{Command, Runner};
use std::fmt;
use std::str::FromStr;

pub use pvfs_host::paths::FIREWALL_CMD;

/// firewall-cmd's exit code when firewalld is not running (src/firewall/errors.py,
/// `NOT_RUNNING = 252`; firewall-cmd(1), EXIT CODES).
pub const NOT_RUNNING: i32 = 252;
/// firewall-cmd's exit code for `--state` when firewalld failed at start
/// (`RUNNING_BUT_FAILED = 251`).
pub const RUNNING_BUT_FAILED: i32 = 251;

/// A transport protocol firewalld opens ports for (pvfs's file systems use these two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    Tcp,
    Udp,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }
}

/// One port or an inclusive range of them, for one protocol: `988/tcp`, `8003-8008/udp`, as
/// firewall-cmd writes and reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortRange {
    pub first: u16,
    pub last: u16,
    pub protocol: Protocol,
}

impl PortRange {
    pub const fn one(port: u16, protocol: Protocol) -> PortRange {
        PortRange { first: port, last: port, protocol }
    }

    pub const fn range(first: u16, last: u16, protocol: Protocol) -> PortRange {
        PortRange { first, last, protocol }
    }

    /// Whether every port of `self` is in one of `open` (same protocol).
    pub fn covered_by(&self, open: &[ListedPort]) -> bool {
        (self.first..=self.last).all(|port| {
            open.iter().any(|o| o.protocol == self.protocol.as_str() && o.first <= port && port <= o.last)
        })
    }

    /// Whether `self` lies inside `outer` (same protocol).
    pub fn within(&self, outer: &PortRange) -> bool {
        self.protocol == outer.protocol && outer.first <= self.first && self.last <= outer.last
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}/{}", self.first, self.protocol.as_str())
        } else {
            write!(f, "{}-{}/{}", self.first, self.last, self.protocol.as_str())
        }
    }
}

/// A port list entry that is not `PORT[-PORT]/PROTO`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not PORT/PROTOCOL or FIRST-LAST/PROTOCOL")]
pub struct PortError(pub String);

impl FromStr for PortRange {
    type Err = PortError;

    /// `988/tcp` or `8003-8008/udp`, tcp or udp only, first ≤ last, no port 0.
    fn from_str(text: &str) -> Result<PortRange, PortError> {
        let listed = ListedPort::parse(text)?;
        let protocol = match listed.protocol.as_str() {
            "tcp" => Protocol::Tcp,
            "udp" => Protocol::Udp,
            _ => return Err(PortError(text.to_owned())),
        };
        Ok(PortRange { first: listed.first, last: listed.last, protocol })
    }
}

/// One entry of `firewall-cmd --list-ports`, whatever its protocol (firewalld also knows
/// sctp and dccp, which pvfs never asks for but must read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedPort {
    pub first: u16,
    pub last: u16,
    pub protocol: String,
}

impl ListedPort {
    fn parse(text: &str) -> Result<ListedPort, PortError> {
        let err = || PortError(text.to_owned());
        let (ports, protocol) = text.split_once('/').ok_or_else(err)?;
        let (first, last) = ports.split_once('-').unwrap_or((ports, ports));
        let number =
            |s: &str| s.parse::<u16>().ok().filter(|&p| p > 0 && s.bytes().all(|b| b.is_ascii_digit()));
        let (first, last) = (number(first).ok_or_else(err)?, number(last).ok_or_else(err)?);
        if first > last || protocol.is_empty() || !protocol.bytes().all(|b| b.is_ascii_lowercase()) {
            return Err(err());
        }
        Ok(ListedPort { first, last, protocol: protocol.to_owned() })
    }
}

/// `firewall-cmd [--permanent] --list-ports`: entries separated by spaces on one line, empty
/// when none (src/firewall-cmd.in: `" ".join("%s/%s" % (port, protocol) …)`).
pub fn parse_list_ports(text: &str) -> Result<Vec<ListedPort>, PortError> {
    text.split_whitespace().map(ListedPort::parse).collect()
}

/// These ports open in firewalld's permanent and running configuration, in `zone` (`None`:
/// the default zone, which holds every interface no zone names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirewallPorts {
    pub ports: Vec<PortRange>,
    pub zone: Option<String>,
}

impl FirewallPorts {
    /// `firewall-cmd [--permanent] [--zone=ZONE] ARG`.
    fn command(&self, permanent: bool, arg: &str) -> Command {
        let mut args: Vec<String> = Vec::new();
        if permanent {
            args.push("--permanent".into());
        }
        if let Some(zone) = &self.zone {
            args.push(format!("--zone={zone}"));
        }
        args.push(arg.to_owned());
        Command::new("firewall-cmd").args(args)
    }

    /// The ports `firewall-cmd … --list-ports` lists.
    async fn listed<R: Runner>(
        &self,
        host: &NodeAccess<R>,
        permanent: bool,
    ) -> Result<Vec<ListedPort>, StepError> {
        let probe = self.command(permanent, "--list-ports");
        let shown = probe.to_string();
        let text = host.probe_ok(probe).await?;
        parse_list_ports(&text)
            .map_err(|err| StepError::Unexpected { command: shown, message: err.to_string() })
    }

    /// Whether firewalld runs: `None` when it does, else why there is nothing to do.
    async fn not_running<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Option<String>, StepError> {
        if !host.root.exists(FIREWALL_CMD) {
            return Ok(Some(format!(
                "firewalld is not installed ({FIREWALL_CMD} is absent): no port to open"
            )));
        }
        // systemd first: firewall-cmd waits up to 10 s for firewalld's D-Bus name before it
        // says "not running" (src/firewall-cmd.in, "Waiting on dbus connection..."), and a
        // stopped firewalld is the common case on nodes the seed scripts prepared.
        let active = host.probe(Command::new("systemctl").args(["is-active", "firewalld"])).await?;
        let state = active.stdout.trim();
        if state != "active" {
            let state = if state.is_empty() { "not active" } else { state };
            return Ok(Some(format!("firewalld is {state}: no port to open")));
        }
        let probe = Command::new("firewall-cmd").arg("--state");
        let shown = probe.to_string();
        let out = host.probe(probe).await?;
        match out.code {
            Some(0) if out.stdout.trim() == "running" => Ok(None),
            Some(NOT_RUNNING) => Ok(Some("firewalld is not running: no port to open".into())),
            Some(RUNNING_BUT_FAILED) => Err(StepError::Command {
                command: shown,
                code: out.code,
                stderr: crate::error_tail(&out),
                hint: Some(
                    "firewalld failed when it started: see `journalctl -u firewalld`, fix its configuration and restart it"
                        .into(),
                ),
            }),
            _ => Err(StepError::Unexpected {
                command: shown,
                message: format!("exit {:?}, {:?}", out.code, out.stdout.trim()),
            }),
        }
    }

    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        if let Some(why) = self.not_running(host).await? {
            return Ok(Assessment::noted(why));
        }
        let permanent = self.listed(host, true).await?;
        let running = self.listed(host, false).await?;
        let zone =
            self.zone.as_deref().map_or_else(|| "the default zone".to_owned(), |z| format!("zone {z}"));
        let mut a = Assessment::in_sync();
        let mut reload = false;
        for port in &self.ports {
            if !port.covered_by(&permanent) {
                a.change(
                    format!("firewalld's permanent configuration does not open {port} in {zone}"),
                    Action::Run(self.command(true, &format!("--add-port={port}"))),
                );
                reload = true;
            } else if !port.covered_by(&running) {
                a.diff.push(format!(
                    "{port} is open in firewalld's permanent configuration but not yet running"
                ));
                reload = true;
            }
        }
        if reload {
            a.actions.push(Action::Run(Command::new("firewall-cmd").arg("--reload")));
        }
        Ok(a)
    }
}

impl fmt::Display for FirewallPorts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ports: Vec<String> = self.ports.iter().map(ToString::to_string).collect();
        write!(f, "firewalld opens {}", ports.join(" "))?;
        if let Some(zone) = &self.zone {
            write!(f, " in zone {zone}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
