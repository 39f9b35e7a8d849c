//! `pvfs-agent engine`: the built-in engine on this machine, IOR's summary out.

use crate::cli::EngineArgs;
use crate::{exit, output};
use anyhow::Context;
use pvfs_bench::params::Preset;

pub(crate) fn run(args: EngineArgs) -> anyhow::Result<u8> {
    let mut workload = Preset::parse(&args.preset)?.workload();
    for item in &args.set {
        let (key, value) =
            item.split_once('=').with_context(|| format!("--set {item:?}: expected KEY=VALUE"))?;
        workload.set(key.trim(), value.trim())?;
    }
    anyhow::ensure!(args.tasks >= 1, "--tasks must be at least 1");
    anyhow::ensure!(args.dir.is_dir(), "{} is not a directory", args.dir.display());
    let run = match pvfs_bench::local::run(&workload, &args.dir, args.tasks) {
        Ok(run) => run,
        Err(err) => {
            output::error(&anyhow::anyhow!("{err}"));
            return Ok(exit::FAILURES);
        }
    };
    if args.json {
        output::json(
            &serde_json::json!({"ior": run.ior, "iterations": run.iterations, "mdtest": run.mdtest}),
        )?;
        return Ok(exit::OK);
    }
    let text = pvfs_bench::summary::tables(&run.ior, &run.mdtest);
    output::print(&text)?;
    Ok(exit::OK)
}
