//! Structured logs to stderr with `tracing`: text for people, JSON for log pipelines.

use crate::cli::{LogArgs, LogFormat};
use anyhow::Context;
use std::io::IsTerminal;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

/// Installs the global subscriber. `default` is the level when `--log`/`PVFS_LOG` is unset.
pub(crate) fn init(args: &LogArgs, default: &str) -> anyhow::Result<()> {
    let spec = args.log.as_deref().unwrap_or(default);
    let filter: Targets = spec
        .parse()
        .with_context(|| format!("invalid --log {spec:?}: use a level (error, warn, info, debug, trace) or targets like pvfs_agent=debug,info"))?;
    let registry = tracing_subscriber::registry().with(filter);
    match args.log_format {
        LogFormat::Text => {
            let layer = tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::stderr().is_terminal())
                .with_target(false);
            registry.with(layer).try_init()
        }
        LogFormat::Json => {
            let layer =
                tracing_subscriber::fmt::layer().json().with_writer(std::io::stderr).flatten_event(true);
            registry.with(layer).try_init()
        }
    }
    .context("installing the log subscriber")
}
