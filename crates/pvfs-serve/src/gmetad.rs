//! gmetad's own interface, answered from serve's view, so that what a site already points at
//! gmetad — ganglia-web, another gmetad polling this one, scripts reading its XML — can point
//! at `pvfsctl serve` instead (`--gmetad-xml`, `--gmetad-interactive`).
//!
//! As gmetad 3.7.2's server.c does:
//! - the XML port writes the whole grid on connect (DTD, `GANGLIA_XML SOURCE="gmetad"`, one
//!   `GRID`, the cluster, every host with its metrics, each `SOURCE="gmond"`) and closes;
//! - the interactive port reads one line — a path `/CLUSTER/HOST/METRIC`, any prefix of it,
//!   and `?filter=summary` — and writes that part of the tree inside the same `GRID`. An
//!   element not found shows its parent whole; a summary is `HOSTS UP/DOWN` and, per numeric
//!   metric of the hosts alive, `METRICS SUM NUM` (gmetad's `metric_summary`). A request
//!   gmetad calls malformed (not starting with `/`, or holding one of `>!@#$%`;|"\'<`) is
//!   closed unanswered, as gmetad closes it.
//!
//! Hosts are written by `pvfs_metrics::ganglia`, which the agent's gmond drop-in writes its
//! dump with: the same names, types and values for the same second. A host's fixed facts
//! (CPU count, kernel, boot time) come from its agent's `Info`, asked once the node is up and
//! again every 20 minutes (gmond's TMAX for them); until then those metrics are left out.
//!
//! What gmetad cannot say, serve does not pretend to: ganglia-web reads its graphs from the
//! RRD files gmetad writes, not from these ports. A gmetad polling serve as a `data_source`
//! (with `scalable off`, so that it keeps each host) writes those RRDs as it would from gmonds.
//!
//! Plain TCP with no authentication, as gmetad's ports are: off unless asked, and bound where
//! the flag says.

use crate::SharedView;
use pvfs_coord::dial::Dialer;
use pvfs_coord::exporter::NodeView;
use pvfs_metrics::ganglia::{self, Esc, Facts, Host, Meta, Writer};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// gmetad reads a request of at most this many bytes (server.c REQUESTLEN).
const REQUEST_MAX: usize = 2048;
/// A client that does not send its request, or take the answer, in this long is dropped
/// (gmetad's own readers give up after 10 s).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// Clients served at once; past this, connections are closed at once rather than queued.
const MAX_CLIENTS: usize = 32;
/// How often the facts are refreshed: gmond's TMAX for its `collect_once` metrics.
const FACTS_EVERY: Duration = Duration::from_secs(1200);
/// How soon an agent that did not answer for its facts is asked again.
const FACTS_RETRY: Duration = Duration::from_secs(30);
/// Agents asked for their facts at once.
const FACTS_AT_ONCE: usize = 8;

/// What the two ports answer from.
pub struct Gmetad {
    view: SharedView,
    cluster: String,
    /// Each node's address as the cluster file gives it: the host's `IP`.
    addresses: HashMap<String, String>,
    /// The grid's `AUTHORITY`: where serve's web view is.
    authority: String,
    facts: Mutex<HashMap<String, Known>>,
}

/// A node's facts (none until its agent has answered), and when they were asked.
struct Known {
    facts: Option<Facts>,
    /// Unix seconds the agent started: the host's `GMOND_STARTED`.
    started: u64,
    asked: Instant,
}

impl Gmetad {
    pub fn new(view: SharedView, cluster: &pvfs_config::Cluster, authority: String) -> Arc<Gmetad> {
        let addresses = cluster
            .nodes
            .iter()
            .map(|n| {
                let ip = match &n.address.host {
                    pvfs_config::Host::Ip(ip) => ip.to_string(),
                    pvfs_config::Host::Name(name) => name.clone(),
                };
                (n.name.clone(), ip)
            })
            .collect();
        Arc::new(Gmetad {
            view,
            cluster: cluster.name.clone(),
            addresses,
            authority,
            facts: Mutex::new(HashMap::new()),
        })
    }

    /// Keeps every up node's facts (its agent's `Info`) until `stop`: asked when a node is
    /// first seen up, then every [`FACTS_EVERY`] (every [`FACTS_RETRY`] until it answers).
    pub async fn keep_facts(
        self: Arc<Gmetad>,
        cluster: Arc<pvfs_config::Cluster>,
        dialer: Dialer,
        stop: CancellationToken,
    ) {
        let at_once = Arc::new(tokio::sync::Semaphore::new(FACTS_AT_ONCE));
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        let mut asking = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
                Some(_) = asking.join_next(), if !asking.is_empty() => continue,
            }
            let due: Vec<pvfs_config::Node> = {
                let view = self.view.read().unwrap_or_else(|p| p.into_inner());
                let facts = self.facts.lock().unwrap_or_else(|p| p.into_inner());
                cluster
                    .nodes
                    .iter()
                    .filter(|n| view.nodes.get(&n.name).is_some_and(|v| v.up))
                    .filter(|n| {
                        facts.get(&n.name).is_none_or(|k| {
                            let again = if k.facts.is_some() { FACTS_EVERY } else { FACTS_RETRY };
                            k.asked.elapsed() >= again
                        })
                    })
                    .cloned()
                    .collect()
            };
            for node in due {
                // Marked as asked now, so that a slow answer is not asked for again meanwhile.
                self.facts
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(node.name.clone())
                    .or_insert(Known { facts: None, started: 0, asked: Instant::now() })
                    .asked = Instant::now();
                let (me, dialer, at_once) = (self.clone(), dialer.clone(), at_once.clone());
                asking.spawn(async move {
                    let Ok(_permit) = at_once.acquire_owned().await else { return };
                    let report = pvfs_coord::survey::ask(&node, &dialer).await;
                    let Ok(info) = report.result else { return };
                    let now = unix_now();
                    let facts = Facts {
                        cpu_num: Some(info.facts.cpu.logical),
                        cpu_mhz: None,
                        machine: None,
                        os_release: Some(info.facts.kernel.clone()),
                        boottime: Some(now.saturating_sub(info.facts.uptime_seconds)),
                        disk_space: None,
                    };
                    let started = now.saturating_sub(info.agent_uptime_seconds);
                    me.facts.lock().unwrap_or_else(|p| p.into_inner()).insert(
                        node.name.clone(),
                        Known { facts: Some(facts), started, asked: Instant::now() },
                    );
                });
            }
        }
    }

    /// The answer to `request` (`/` for the XML port), or `None` when gmetad would close the
    /// connection unanswered.
    pub fn answer(&self, request: &str) -> Option<String> {
        let query = Query::parse(request)?;
        // A copy under the lock (the samples are shared), written after it.
        let nodes: BTreeMap<String, NodeView> =
            self.view.read().unwrap_or_else(|p| p.into_inner()).nodes.clone();
        let facts: HashMap<String, (Facts, u64)> = self
            .facts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(|(name, k)| Some((name.clone(), (k.facts.clone()?, k.started))))
            .collect();
        let now = unix_now();
        let hosts = Hosts { nodes: &nodes, facts: &facts, addresses: &self.addresses, now };
        let mut out = String::with_capacity(64 * 1024);
        ganglia::preamble(&mut out, Writer::Gmetad);
        let _ = writeln!(
            out,
            "<GRID NAME=\"{}\" AUTHORITY=\"{}\" LOCALTIME=\"{now}\">",
            Esc(&self.cluster),
            Esc(&self.authority)
        );
        let summary = query.summary;
        match query.path.as_slice() {
            // The root, or a cluster gmetad does not know: the whole grid.
            [] => self.root(&mut out, &hosts, summary),
            [cluster, ..] if *cluster != self.cluster => self.root(&mut out, &hosts, summary),
            [_] => self.cluster_whole(&mut out, &hosts, summary),
            [_, host, rest @ ..] => match nodes.get(*host).filter(|n| n.last.is_some()) {
                None => self.cluster_whole(&mut out, &hosts, summary),
                Some(_) => {
                    ganglia::cluster_start(&mut out, &self.cluster, now);
                    hosts.with(host, |h| {
                        // A host's one metric: that element alone.
                        let found =
                            rest.first().is_some_and(|m| ganglia::one_metric(&mut out, h, m, Writer::Gmetad));
                        if found {
                            return;
                        }
                        if summary {
                            // A summary has nothing to say of a host: its element, empty.
                            ganglia::host_start(&mut out, h, Writer::Gmetad);
                            out.push_str("</HOST>\n");
                        } else {
                            ganglia::host(&mut out, h, Writer::Gmetad);
                        }
                    });
                    out.push_str("</CLUSTER>\n");
                }
            },
        }
        out.push_str("</GRID>\n</GANGLIA_XML>\n");
        Some(out)
    }

    /// The root's subtree: with a summary, the grid's own first, then each cluster's.
    fn root(&self, out: &mut String, hosts: &Hosts<'_>, summary: bool) {
        if summary {
            hosts.summary(out);
        }
        self.cluster_whole(out, hosts, summary);
    }

    /// The cluster: its summary, or every host that has reported.
    fn cluster_whole(&self, out: &mut String, hosts: &Hosts<'_>, summary: bool) {
        ganglia::cluster_start(out, &self.cluster, hosts.now);
        if summary {
            hosts.summary(out);
        } else {
            for name in hosts.nodes.keys() {
                hosts.with(name, |h| ganglia::host(out, h, Writer::Gmetad));
            }
        }
        out.push_str("</CLUSTER>\n");
    }
}

/// What a host element is made of, for every node.
struct Hosts<'a> {
    nodes: &'a BTreeMap<String, NodeView>,
    facts: &'a HashMap<String, (Facts, u64)>,
    addresses: &'a HashMap<String, String>,
    now: u64,
}

impl Hosts<'_> {
    /// Calls `f` with `name`'s host, if it has ever reported (gmetad knows only hosts it has
    /// heard of).
    fn with(&self, name: &str, f: impl FnOnce(&Host<'_>)) {
        let Some(node) = self.nodes.get(name) else { return };
        let Some(last) = node.last.as_deref() else { return };
        let rates = node.rates();
        let none = (Facts::default(), 0);
        let (facts, started) = self.facts.get(name).unwrap_or(&none);
        let reported = last.sample.time_unix_ns / 1_000_000_000;
        let ip = self.addresses.get(name).map_or("", String::as_str);
        let host = Host {
            name,
            ip,
            reported,
            tn: self.now.saturating_sub(reported),
            started: *started,
            facts,
            latest: Some(last),
            rates: rates.as_ref(),
        };
        f(&host);
    }

    /// gmetad's summary: hosts up and down (serve knows which streams stand), and each
    /// numeric metric's sum and count over the hosts up, in gmetad's format.
    fn summary(&self, out: &mut String) {
        let up = self.nodes.values().filter(|n| n.up && n.last.is_some()).count();
        let _ = writeln!(out, "<HOSTS UP=\"{up}\" DOWN=\"{}\" SOURCE=\"gmetad\"/>", self.nodes.len() - up);
        let mut sums: BTreeMap<String, Sum> = BTreeMap::new();
        for (name, node) in self.nodes {
            if !node.up {
                continue;
            }
            self.with(name, |h| {
                ganglia::each_metric(h, |m, value| {
                    if !numeric(m.kind) {
                        return;
                    }
                    let sum = sums.entry(m.name.to_owned()).or_insert_with(|| Sum::new(m));
                    sum.add(value);
                });
            });
        }
        for (name, sum) in &sums {
            sum.write(out, name);
        }
    }
}

/// The types gmetad sums (its INT, UINT and FLOAT type tags).
fn numeric(kind: &str) -> bool {
    matches!(kind, "int8" | "uint8" | "int16" | "uint16" | "int32" | "uint32" | "float" | "double")
}

/// One metric's running summary.
struct Sum {
    total: f64,
    num: u32,
    /// Digits after the point, as the newest value was written (gmetad's `fillmetric`
    /// keeps the precision of the value it parsed last).
    precision: usize,
    float: bool,
    units: String,
    slope: String,
    group: String,
    desc: String,
    title: String,
}

impl Sum {
    fn new(m: &Meta<'_>) -> Sum {
        Sum {
            total: 0.0,
            num: 0,
            precision: 0,
            float: matches!(m.kind, "float" | "double"),
            units: m.units.to_owned(),
            slope: m.slope.to_owned(),
            group: m.group.to_owned(),
            desc: m.desc.to_owned(),
            title: m.title.to_owned(),
        }
    }

    fn add(&mut self, value: &str) {
        self.total += value.parse::<f64>().unwrap_or(0.0);
        self.num += 1;
        if let Some((_, decimals)) = value.rsplit_once('.') {
            self.precision = decimals.len();
        }
    }

    /// gmetad's `metric_summary`: `%.f` for integers, the value's precision for floats, the
    /// type always "double".
    fn write(&self, out: &mut String, name: &str) {
        let sum = if self.float {
            format!("{:.*}", self.precision, self.total)
        } else {
            format!("{:.0}", self.total)
        };
        let _ = writeln!(
            out,
            "<METRICS NAME=\"{}\" SUM=\"{sum}\" NUM=\"{}\" TYPE=\"double\" UNITS=\"{}\" SLOPE=\"{}\" SOURCE=\"gmond\">",
            Esc(name),
            self.num,
            Esc(&self.units),
            Esc(&self.slope),
        );
        let meta = Meta {
            name,
            kind: "double",
            units: &self.units,
            tmax: 0,
            slope: &self.slope,
            group: &self.group,
            desc: &self.desc,
            title: &self.title,
        };
        ganglia::extra_data(out, &meta);
        out.push_str("</METRICS>\n");
    }
}

/// An interactive request: the path's elements and whether a summary is asked.
#[derive(Debug, PartialEq, Eq)]
struct Query<'a> {
    path: Vec<&'a str>,
    summary: bool,
}

impl<'a> Query<'a> {
    /// As gmetad's `process_request`: a path from `/`, no character of `>!@#$%`;|"\'<`, and an
    /// optional `?filter=NAME` (only `summary` means anything; another is no filter).
    fn parse(request: &'a str) -> Option<Query<'a>> {
        if !request.starts_with('/') || request.contains(|c| ">!@#$%`;|\"\\'<".contains(c)) {
            return None;
        }
        let (path, filter) = match request.split_once('?') {
            Some((path, filter)) => (path, Some(filter)),
            None => (request, None),
        };
        // gmetad refuses a filter without `=`.
        let summary = match filter {
            None => false,
            Some(filter) => filter.split_once('=')?.1 == "summary",
        };
        let path = path.split('/').skip(1).take_while(|e| !e.is_empty()).collect();
        Some(Query { path, summary })
    }
}

/// Serves the XML port (`interactive` false: the whole grid on connect) or the interactive
/// port (one request line, then its answer) on `listener` until `stop`.
pub async fn serve(listener: TcpListener, gmetad: Arc<Gmetad>, interactive: bool, stop: CancellationToken) {
    let clients = Arc::new(tokio::sync::Semaphore::new(MAX_CLIENTS));
    loop {
        let (socket, peer) = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    tracing::warn!(error = %err, "gmetad port: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = clients.clone().try_acquire_owned() else {
            tracing::debug!(peer = %peer, limit = MAX_CLIENTS, "gmetad port: client refused, too many at once");
            continue;
        };
        let gmetad = gmetad.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let served = tokio::time::timeout(CLIENT_TIMEOUT, one(socket, &gmetad, interactive)).await;
            if !matches!(served, Ok(Ok(()))) {
                tracing::debug!(peer = %peer, "gmetad port: client not served");
            }
        });
    }
}

/// One client: its request (on the interactive port), then the answer, then close.
async fn one(mut socket: TcpStream, gmetad: &Gmetad, interactive: bool) -> std::io::Result<()> {
    let request = if interactive { read_line(&mut socket).await? } else { "/".to_owned() };
    let Some(answer) = gmetad.answer(&request) else {
        tracing::debug!(request = %request, "gmetad port: malformed request, closed unanswered as gmetad does");
        return Ok(());
    };
    socket.write_all(answer.as_bytes()).await?;
    socket.shutdown().await
}

/// The request: bytes up to the first newline or carriage return, at most [`REQUEST_MAX`]
/// (gmetad's `readline`; a longer line is refused).
async fn read_line(socket: &mut TcpStream) -> std::io::Result<String> {
    let mut line = Vec::with_capacity(256);
    let mut chunk = [0u8; 512];
    loop {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        if let Some(end) = chunk[..n].iter().position(|&b| b == b'\n' || b == b'\r') {
            line.extend_from_slice(&chunk[..end]);
            break;
        }
        line.extend_from_slice(&chunk[..n]);
        if line.len() > REQUEST_MAX {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "request too long"));
        }
    }
    line.truncate(REQUEST_MAX);
    Ok(String::from_utf8_lossy(&line).into_owned())
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests;
