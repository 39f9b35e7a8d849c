//! `pvfsctl down CLUSTER.toml [--plan] [--json] [--wipe [--yes-wipe=NAME]]`: take the cluster
//! apart in the reverse order of `up` (`pvfs_plan::down`), through the same converge path,
//! live progress and recap; `--plan` shows what would change and changes nothing.
//!
//! `--wipe` destroys data, so before anything is sent it lists every device on every node
//! that would be destroyed, and goes on only once the operator has typed the cluster's name at
//! a terminal, or passed it as `--yes-wipe=NAME`. Without a terminal and without that flag, or
//! with another name, it refuses (exit 2) and nothing on any node changes.

use crate::cli::DownArgs;
use crate::output;
use anyhow::bail;
use pvfs_plan::Plan;
use pvfs_steps::Step;
use std::io::{BufRead, IsTerminal, Write};

pub(crate) async fn run(args: DownArgs) -> anyhow::Result<u8> {
    let cluster = pvfs_config::load(&args.up.cluster)?;
    let plan = pvfs_plan::down(&cluster, args.wipe);
    // `up` made only what `down` leaves (directories and files, as for kind `local`): say so,
    // rather than "the cluster is down" about a cluster that is up.
    if plan.units.is_empty() && !pvfs_plan::plan(&cluster).units.is_empty() {
        output::note(&format!(
            "cluster {} (kind {}) has nothing for down to take apart: up makes only its directories and files \
             (targets, mount directories), which down leaves as they are, with their data; nothing was sent to \
             any node (remove the directories by hand if they should go)",
            cluster.name, cluster.kind
        ));
        return Ok(crate::exit::OK);
    }
    if args.wipe {
        let listing = wipe_listing(&plan);
        output::note(&if listing.is_empty() {
            format!("--wipe: cluster {} has no disks of its own to destroy", cluster.name)
        } else {
            format!(
                "--wipe destroys everything on these devices of cluster {}:\n{}",
                cluster.name,
                listing.join("\n")
            )
        });
        // A plan changes nothing: it shows the wipe without asking.
        if !args.up.plan && !listing.is_empty() {
            confirm(&cluster.name, args.yes_wipe.as_deref())?;
        }
    }
    let dialer = super::dialer(&cluster, &args.up.connect)?;
    let view =
        super::up::View { json: args.up.json, plan: args.up.plan, verbose: args.up.verbose, down: true };
    // A teardown never needs a node to boot another kernel: nothing reboots.
    // Ctrl-C (or SIGTERM) as for `up`: no unit starts after it. With --wipe the units under
    // way stop too, after the disk being wiped (never in the middle of one), so a wipe the
    // operator regrets destroys as little more as it can.
    let shutdown = crate::shutdown::Shutdown::on_signals()?;
    let options = pvfs_coord::converge::Options {
        plan: args.up.plan,
        stop: shutdown.token(),
        stop_between_steps: args.wipe,
        ..Default::default()
    };
    super::up::run_plan(&cluster, plan, &dialer, options, view).await
}

/// One line per target a wipe destroys: `  oss00: /dev/sdc /dev/sdd (array /dev/md0)`.
fn wipe_listing(plan: &Plan) -> Vec<String> {
    plan.units
        .iter()
        .flat_map(|u| u.steps.iter().map(move |s| (u, s)))
        .filter_map(|(u, s)| match s {
            Step::WipeTarget(w) => {
                Some(format!("  {}: {}", u.node, w.to_string().trim_start_matches("wipe ")))
            }
            _ => None,
        })
        .collect()
}

/// Goes on only if the operator named the cluster: `--yes-wipe=NAME`, or typed at the prompt.
fn confirm(name: &str, given: Option<&str>) -> anyhow::Result<()> {
    let typed = match given {
        Some(given) => given.to_owned(),
        None if std::io::stdin().is_terminal() => {
            let mut err = std::io::stderr();
            write!(err, "type the cluster's name ({name}) to destroy them: ")?;
            err.flush()?;
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            line.trim().to_owned()
        }
        None => bail!(
            "refusing to wipe: --wipe asks for the cluster's name at a terminal, and there is none; \
             pass --yes-wipe={name} to confirm (nothing was changed)"
        ),
    };
    if typed != name {
        bail!("refusing to wipe: {typed:?} is not the cluster's name ({name}); nothing was changed");
    }
    Ok(())
}
