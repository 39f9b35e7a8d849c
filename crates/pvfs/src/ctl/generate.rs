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
    for mut command in cli::commands() {
        let name = command.get_name().to_owned();
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            clap_complete::generate_to(shell, &mut command, &name, &completions)
                .with_context(|| format!("writing {shell} completions for {name}"))?;
        }
        // One page per command and subcommand (pvfsctl.1, pvfsctl-nodes.1, …).
        clap_mangen::generate_to(command, &man).with_context(|| format!("writing man pages for {name}"))?;
    }
    output::print(&format!("wrote {} and {}\n", completions.display(), man.display()))?;
    Ok(exit::OK)
}
