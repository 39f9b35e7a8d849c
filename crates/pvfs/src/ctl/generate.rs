//! `pvfsctl generate --out DIR`: shell completions and man pages for every name of the binary.

use crate::cli::GenerateArgs;
use crate::{cli, exit, output};
use anyhow::Context;
use clap_complete::Shell;

pub(crate) fn run(args: GenerateArgs) -> anyhow::Result<u8> {
    let completions = args.out.join("completions");
    let man = args.out.join("man");
    for dir in [&completions, &man] {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut pages = 0;
    for mut command in cli::commands() {
        let name = command.get_name().to_owned();
        // Before the completions build it: a built command has its `help` subcommands made.
        let mut pages_of = without_help(command.clone());
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            clap_complete::generate_to(shell, &mut command, &name, &completions)
                .with_context(|| format!("writing {shell} completions for {name}"))?;
        }
        // One page per command and subcommand (pvfsctl.1, pvfsctl-nodes.1, …). `pvfs` gets
        // its own page only: its `ctl` and `agent` are pvfsctl and pvfs-agent, whose pages
        // say it all (and clap_mangen would write `pvfs-agent-*.1` over pvfs-agent's own).
        pages_of.build();
        pages += man_pages(&pages_of, &man, name != "pvfs")
            .with_context(|| format!("writing man pages for {name}"))?;
    }
    output::print(&format!("wrote {} and {pages} man pages in {}\n", completions.display(), man.display()))?;
    Ok(exit::OK)
}

/// `command` without clap's `help` subcommand, at every level: `pvfsctl help nodes` is
/// `pvfsctl nodes --help`, and a page for each (`pvfsctl-help-nodes.1`, `…-help-help.1`) is
/// noise in `man -k`. clap_mangen's own `generate_to` drops it at the top level only.
fn without_help(command: clap::Command) -> clap::Command {
    let names: Vec<String> = command.get_subcommands().map(|s| s.get_name().to_owned()).collect();
    names.into_iter().fold(command.disable_help_subcommand(true), |command, name| {
        command.mut_subcommand(name, without_help)
    })
}

/// The page of `command` (built) and, with `deep`, of every visible subcommand below it; how
/// many were written.
fn man_pages(command: &clap::Command, dir: &std::path::Path, deep: bool) -> std::io::Result<usize> {
    let mut written = 0;
    if deep {
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            written += man_pages(sub, dir, true)?;
        }
    }
    clap_mangen::Man::new(command.clone()).generate_to(dir)?;
    Ok(written + 1)
}
