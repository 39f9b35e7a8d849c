//! `pvfs-agent engine`: the built-in engine on this machine, IOR's summary out.

use crate::cli::EngineArgs;
use crate::{exit, output};
use anyhow::Context;
use pvfs_bench::params::{Preset, Workload};

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
    let mut text = String::new();
    match &workload {
        Workload::Ior(_) => {
            text += "Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    Mean(s) #Tasks reps\n";
            for r in &run.ior {
                let f = |v: Option<f64>| v.map_or("NA".to_owned(), |v| format!("{v:.2}"));
                text += &format!(
                    "{:<9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10.5} {:>6} {:>4}\n",
                    r.operation,
                    f(r.bw_max_mib),
                    f(r.bw_min_mib),
                    f(r.bw_mean_mib),
                    f(r.bw_std_mib),
                    f(r.ops_max),
                    f(r.ops_min),
                    f(r.ops_mean),
                    f(r.ops_std),
                    r.mean_time_s.unwrap_or_default(),
                    r.tasks.unwrap_or_default(),
                    r.iterations.unwrap_or_default()
                );
            }
        }
        Workload::Mdtest(_) => {
            text += "   Operation                     Max            Min           Mean        Std Dev\n";
            for r in &run.mdtest {
                let f = |v: Option<f64>| v.unwrap_or_default();
                text += &format!(
                    "   {:<22} {:>14.3} {:>14.3} {:>14.3} {:>14.3}\n",
                    r.operation,
                    f(r.max),
                    f(r.min),
                    f(r.mean),
                    f(r.std)
                );
            }
        }
    }
    output::print(&text)?;
    Ok(exit::OK)
}
