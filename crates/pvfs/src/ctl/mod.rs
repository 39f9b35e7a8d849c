//! `pvfsctl` subcommands.

pub(crate) mod bench;
mod bootstrap;
mod ca;
mod demo;
mod down;
mod generate;
mod nodes;
mod provision;
mod serve;
mod top;
mod tui;
pub(crate) mod up;
mod validate;
mod watch;

use crate::cli::{ConnectArgs, CtlCli, CtlCommand};
use crate::logging;
use anyhow::Context;
use pvfs_config::Cluster;
use pvfs_coord::{ClientSecurity, Dialer};

pub(crate) fn run(cli: CtlCli) -> anyhow::Result<u8> {
    logging::init(&cli.log, "warn")?;
    crate::raise_fd_limit();
    match cli.command {
        CtlCommand::Ca(command) => ca::run(command),
        CtlCommand::Validate(args) => validate::run(args),
        CtlCommand::Nodes(args) => runtime()?.block_on(nodes::run(args)),
        CtlCommand::Bootstrap(args) => runtime()?.block_on(bootstrap::run(*args)),
        CtlCommand::Provision(args) => runtime()?.block_on(provision::provision(args)),
        CtlCommand::Deprovision(args) => runtime()?.block_on(provision::deprovision(args)),
        CtlCommand::Up(args) if args.provision => runtime()?.block_on(provision::up(args)),
        CtlCommand::Up(args) => runtime()?.block_on(up::run(args)),
        CtlCommand::Down(args) => runtime()?.block_on(down::run(args)),
        CtlCommand::Bench(cli) => match cli.command {
            Some(crate::cli::BenchCommand::Import(args)) => bench::import(args),
            Some(crate::cli::BenchCommand::Compare(args)) => bench::compare(args),
            None => runtime()?.block_on(bench::run(cli.run)),
        },
        CtlCommand::Report(args) => {
            let written = pvfs_report::write(&args.runs, &args.out)?;
            crate::output::print(&format!(
                "wrote {} and {} charts (SVG and PNG) in {}\n",
                written.markdown.display(),
                written.charts.len(),
                args.out.display()
            ))?;
            Ok(crate::exit::OK)
        }
        CtlCommand::Top(args) => runtime()?.block_on(top::run(args)),
        CtlCommand::Serve(args) => runtime()?.block_on(serve::run(*args)),
        CtlCommand::Demo(args) => runtime()?.block_on(demo::run(args)),
        CtlCommand::Generate(args) => generate::run(args),
    }
}

/// Multi-threaded: dialling many agents means many concurrent TLS handshakes, which are CPU work.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")
}

/// The cluster's TLS directory: `--tls-dir`, else the cluster file's `[tls] dir`.
pub(crate) fn tls_dir(cluster: &Cluster, args: &ConnectArgs) -> std::path::PathBuf {
    args.tls_dir.clone().unwrap_or_else(|| cluster.tls_dir.clone())
}

/// The dialer for `cluster`: its certificates in [`tls_dir`]. Mutual TLS only.
pub(crate) fn dialer(cluster: &Cluster, args: &ConnectArgs) -> anyhow::Result<Dialer> {
    if args.insecure {
        anyhow::bail!("{INSECURE_REMOVED}");
    }
    let dir = tls_dir(cluster, args);
    // Said once, with the next step, rather than as a file that cannot be read.
    if !dir.join(pvfs_tls::CA_CERT).exists() {
        anyhow::bail!(
            "no cluster CA in {dir} ({ca} is missing): create it with `pvfsctl ca init --dir {dir}`, then \
             `pvfsctl bootstrap {file}` issues the coordinator's and the nodes' certificates from it and installs the \
             agents",
            ca = dir.join(pvfs_tls::CA_CERT).display(),
            dir = dir.display(),
            file = cluster.source.display()
        );
    }
    if !dir.join(format!("{}.crt", args.cert_name)).exists() {
        anyhow::bail!(
            "no coordinator certificate {name}.crt in {dir}: `pvfsctl bootstrap {file}` issues it from the CA (or \
             `pvfsctl ca issue {name} --dir {dir}`)",
            name = args.cert_name,
            dir = dir.display(),
            file = cluster.source.display()
        );
    }
    let material = pvfs_tls::load(&dir, &args.cert_name)?;
    pvfs_tls::check_identity(&material, pvfs_tls::Usage::Coordinator)
        .with_context(|| format!("the coordinator certificate in {} cannot be used", dir.display()))?;
    Ok(Dialer::new(ClientSecurity::MutualTls(material), args.timeout))
}

/// What `--insecure` gets now, on either side.
pub(crate) const INSECURE_REMOVED: &str = "--insecure was removed: unauthenticated plaintext let any user of an agent's machine \
     command it as root (loopback is not a boundary between users). Agents serve only mutual TLS: \
     `pvfsctl ca init --dir tls`, `pvfsctl ca issue pvfsctl --dir tls`, `pvfsctl ca issue NODE --dir tls --san NODE_IP`, \
     then `pvfs-agent --tls-dir DIR` on each node and `pvfsctl … --tls-dir tls` (or `[tls] dir` in the cluster file); \
     `pvfsctl demo` does all of it for a local cluster";

/// Shows each of `events` with `show` until the work sending them ends; when `stop` is
/// cancelled first, says `stopping` once (what still finishes), since the work goes on to a
/// clean end rather than quitting at once.
pub(crate) async fn show_until_done<E>(
    events: &mut tokio::sync::mpsc::UnboundedReceiver<E>,
    stop: &tokio_util::sync::CancellationToken,
    stopping: &str,
    mut show: impl FnMut(&E) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut told = false;
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(event) => show(&event)?,
                None => return Ok(()),
            },
            () = stop.cancelled(), if !told => {
                told = true;
                crate::output::note(&format!("interrupted: {stopping} (Ctrl-C again exits at once)"));
            }
        }
    }
}
