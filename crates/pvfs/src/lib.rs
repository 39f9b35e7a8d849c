//! The pvfs executables: `pvfs` (`pvfsctl`, the coordinator CLI, and `pvfs-agent`, the node
//! daemon, by the name it is run as) and `pvfs-agent` built on its own.
//!
//! [`main`]'s personality comes from argv[0], so one file copied to a node serves as both;
//! `pvfs ctl …` and `pvfs agent …` reach the same code under any name. [`agent_main`] is the
//! agent alone: the program the package and bootstrap install as `pvfs-agent`, a third the
//! code of the whole (no coordinator, TUI, charts or web view), so the daemon that runs on
//! every node for months maps a third of the pages (issue 30: 13.9 → 9.5 MB resident). This
//! crate is the CLI glue: flags ([`cli`]), logging, and output; the work is done by the library
//! crates.

mod agent;
pub mod cli;
mod ctl;
mod logging;
mod output;
mod shutdown;
mod view;

use clap::Parser;
use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

/// Exit codes, fixed for scripts.
pub mod exit {
    /// Everything asked for succeeded.
    pub const OK: u8 = 0;
    /// The command ran, and found failures (e.g. unreachable nodes).
    pub const FAILURES: u8 = 1;
    /// Bad input (flags, cluster file, certificates) or an error before the work started.
    pub const BAD_INPUT: u8 = 2;
    /// Stopped by Ctrl-C or SIGTERM before the work was done (128 + SIGINT, as shells report
    /// it); also a second stop signal, which exits at once.
    pub const INTERRUPTED: u8 = 130;
}

/// Raises the soft limit on open files to the hard limit. A coordinator talks to thousands of
/// agents (one socket each), and the usual soft limit of 1024 would cap it at about that.
pub(crate) fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
        && let Err(err) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard)
    {
        tracing::warn!(error = %err, soft, hard, "cannot raise the open-file limit");
    }
}

/// Which program the user ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Personality {
    Ctl,
    Agent,
    /// `pvfs`: the subcommand (`ctl` or `agent`) decides.
    Multi,
}

impl Personality {
    /// From argv[0]'s file name: `pvfsctl…` → Ctl, `pvfs-agent…` → Agent, anything else → Multi.
    pub fn from_argv0(argv0: &OsString) -> Personality {
        let name = Path::new(argv0).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with("pvfsctl") {
            Personality::Ctl
        } else if name.starts_with("pvfs-agent") {
            Personality::Agent
        } else {
            Personality::Multi
        }
    }
}

/// Parses the command line, runs the command, and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let personality = args.first().map(Personality::from_argv0).unwrap_or(Personality::Multi);
    let result = match personality {
        Personality::Ctl => ctl::run(cli::CtlCli::parse_from(args)),
        Personality::Agent => agent::run(cli::AgentCli::parse_from(args)),
        Personality::Multi => match cli::PvfsCli::parse_from(args).command {
            cli::PvfsCommand::Ctl(ctl) => ctl::run(ctl),
            cli::PvfsCommand::Agent(agent) => agent::run(*agent),
        },
    };
    exit_code(result)
}

/// The agent alone, whatever the name it is run as: `pvfs-agent`'s own program. Nothing here
/// reaches the coordinator's code, so the linker leaves it out.
pub fn agent_main() -> ExitCode {
    exit_code(agent::run(cli::AgentCli::parse_from(std::env::args_os())))
}

/// A command's outcome as the process's exit code, its error printed.
fn exit_code(result: anyhow::Result<u8>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) if output::is_broken_pipe(&err) => ExitCode::from(exit::OK),
        Err(err) => {
            output::error(&err);
            ExitCode::from(exit::BAD_INPUT)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Personality;

    #[test]
    fn the_name_picks_the_personality() {
        for (argv0, want) in [
            ("pvfsctl", Personality::Ctl),
            ("/usr/local/bin/pvfs-agent", Personality::Agent),
            ("./target/debug/pvfsctl", Personality::Ctl),
            ("pvfs", Personality::Multi),
            ("/opt/pvfs/bin/pvfs", Personality::Multi),
            ("something-else", Personality::Multi),
        ] {
            assert_eq!(Personality::from_argv0(&argv0.into()), want, "{argv0}");
        }
    }
}
