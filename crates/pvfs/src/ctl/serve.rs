//! `pvfsctl serve`: a long-running coordinator that follows every node's sample stream and
//! serves the cluster's metrics at `/metrics` for Prometheus. What serves is `pvfs-serve`'s
//! (the view, the routes, the bounded HTTP server); this is the command: its listener, the
//! stop signals, and the drain.

use crate::cli::ServeArgs;
use crate::shutdown::Shutdown;
use crate::{exit, output};
use anyhow::Context;
use pvfs_coord::stream::{Start, follow_cluster};
use pvfs_serve::HttpLimits;
use std::collections::HashMap;
use std::time::Duration;

/// How long a stop waits for the scrapes under way and the followers: a connection lasts at
/// most [`HttpLimits::connection_lifetime`], and the followers end at their next select.
const STOP_DEADLINE: Duration = Duration::from_secs(70);

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<u8> {
    let cluster = pvfs_config::load(&args.cluster)?;
    let dialer = super::dialer(&cluster, &args.connect)?;
    let tls = match &args.web_tls {
        Some(name) => Some(web_tls(&cluster, name)?),
        None => None,
    };
    // Checked before anything starts: a wrong URL or file changes nothing.
    let remote = match &args.remote_write {
        Some(url) => Some(pvfs_serve::remote::Target::new(
            url,
            args.remote_write_auth_file.as_deref(),
            args.remote_write_ca.as_deref(),
        )?),
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(args.metrics_listen)
        .await
        .with_context(|| format!("cannot listen on {} for /metrics", args.metrics_listen))?;
    let local = listener.local_addr()?;
    let view = pvfs_serve::view(&cluster);
    let shutdown = Shutdown::on_signals()?;

    // Every node starts with the newest sample taken before now (the baseline of its first
    // rates), then follows live: /metrics shows the latest state, so an agent's history (an
    // hour of it) is not replayed. Replaying it from 10,000 agents kept the coordinator busy for
    // minutes after each start, with live samples queued behind the history.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let start = Start::Since { unix_ns: u64::try_from(now.as_nanos()).unwrap_or(u64::MAX) };
    // The followers end on the token; the folder then sees the channel close and ends too.
    let events = follow_cluster(&cluster, &dialer, &HashMap::new(), start, 0, shutdown.token());
    let (feed, reader) = match history(&args, &cluster)? {
        Some((feed, reader, writing)) => {
            // The writer commits its open points once the folder (its feed's holder) ends.
            shutdown.spawn(async move {
                let _ = tokio::task::spawn_blocking(move || writing.wait()).await;
            });
            (Some(feed), Some(reader))
        }
        None => (None, None),
    };
    let remote = remote.map(|target| {
        output::note(&format!("pushing every second by remote write to {}", target.url()));
        let (feed, sending) = pvfs_serve::remote::start(target, shutdown.token());
        shutdown.spawn(async move {
            let _ = sending.await;
        });
        feed
    });
    let counters = remote.as_ref().map(pvfs_serve::remote::Feed::counters);
    let history_dropped = feed.as_ref().map(pvfs_serve::history::Feed::dropped);
    shutdown.spawn(pvfs_serve::fold(events, view.clone(), pvfs_serve::Outlets { history: feed, remote }));
    let scheme = if tls.is_some() { "https" } else { "http" };
    output::note(&format!(
        "serving metrics of {} nodes at {scheme}://{local}/metrics and the web view at {scheme}://{local}/ (Ctrl-C or SIGTERM stops)",
        cluster.nodes.len()
    ));
    let nodes = std::sync::Arc::new(cluster.nodes.iter().map(|n| n.name.clone()).collect());
    let runs = pvfs_serve::runs::Runs::new(args.results.clone());
    // The agents answer the 1 s tier and the node view's processes.
    let agents =
        pvfs_serve::recent::Agents { cluster: std::sync::Arc::new(cluster.clone()), dialer: dialer.clone() };
    let history = pvfs_serve::history::HistoryState {
        reader,
        nodes,
        agents: Some(agents.clone()),
        dropped: history_dropped,
    };
    gmetad(&args, &cluster, &view, &dialer, &format!("{scheme}://{local}/"), &shutdown).await?;
    let processes = pvfs_serve::processes::Processes::new(agents, shutdown.token());
    let app = pvfs_serve::app(view, history, runs, counters, Some(processes), shutdown.token());
    let limits = HttpLimits::default();
    match tls {
        Some(tls) => {
            drop(shutdown.spawn(pvfs_serve::serve_https(listener, app, limits, tls, shutdown.token())))
        }
        None => drop(shutdown.spawn(pvfs_serve::serve_http(listener, app, limits, shutdown.token()))),
    }

    // Stops following the nodes and serving; the scrapes under way finish, and the folder
    // takes in what the followers had sent.
    shutdown.cancelled().await;
    if let Err(err) = shutdown.drain(STOP_DEADLINE).await {
        tracing::warn!(error = %err, "stopping: not everything ended in time; exiting anyway");
    }
    Ok(exit::OK)
}

/// gmetad's ports when asked (`--gmetad-xml`, `--gmetad-interactive`), and the task that
/// keeps the nodes' facts they show.
async fn gmetad(
    args: &ServeArgs,
    cluster: &pvfs_config::Cluster,
    view: &pvfs_serve::SharedView,
    dialer: &pvfs_coord::dial::Dialer,
    authority: &str,
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    let ports =
        [(args.gmetad_xml, false, "--gmetad-xml"), (args.gmetad_interactive, true, "--gmetad-interactive")];
    if ports.iter().all(|(addr, ..)| addr.is_none()) {
        return Ok(());
    }
    let gmetad = pvfs_serve::gmetad::Gmetad::new(view.clone(), cluster, authority.to_owned());
    for (addr, interactive, flag) in ports {
        let Some(addr) = addr else { continue };
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr} for {flag} (give {flag} a free address)"))?;
        let local = listener.local_addr()?;
        let what = if interactive { "gmetad's interactive port (queries)" } else { "gmetad's XML port" };
        output::note(&format!("answering as {what} at {local}"));
        drop(shutdown.spawn(pvfs_serve::gmetad::serve(
            listener,
            gmetad.clone(),
            interactive,
            shutdown.token(),
        )));
    }
    let cluster = std::sync::Arc::new(cluster.clone());
    drop(shutdown.spawn(gmetad.keep_facts(cluster, dialer.clone(), shutdown.token())));
    Ok(())
}

/// The history's store for `cluster` when asked: `--history DIR` keeps DIR/CLUSTER.redb.
fn history(
    args: &ServeArgs,
    cluster: &pvfs_config::Cluster,
) -> anyhow::Result<Option<(pvfs_serve::history::Feed, pvfs_history::Reader, pvfs_serve::history::Writing)>> {
    let Some(dir) = &args.history else { return Ok(None) };
    std::fs::create_dir_all(dir).with_context(|| {
        format!("cannot make the history directory {} (give --history another DIR)", dir.display())
    })?;
    let path = dir.join(format!("{}.redb", cluster.name));
    let started = pvfs_serve::history::start(&path)?;
    output::note(&format!("keeping history in {}", path.display()));
    Ok(Some(started))
}

/// `--web-tls NAME`: NAME's certificate and key from the cluster's TLS directory, checked (it
/// matches its key, chains to the CA, is valid now and is a server's) before anything starts.
fn web_tls(
    cluster: &pvfs_config::Cluster,
    name: &str,
) -> anyhow::Result<std::sync::Arc<pvfs_serve::TlsConfig>> {
    let material = pvfs_tls::load(&cluster.tls_dir, name).with_context(|| {
        format!(
            "--web-tls {name}: issue it with `pvfsctl ca issue {name} --dir {} --san HOST`",
            cluster.tls_dir.display()
        )
    })?;
    pvfs_tls::check_identity(&material, pvfs_tls::Usage::Agent)
        .with_context(|| format!("--web-tls {name}: a server certificate of the cluster's CA is needed"))?;
    pvfs_serve::https_config(&material).map_err(|e| anyhow::anyhow!("--web-tls {name}: {e}"))
}
