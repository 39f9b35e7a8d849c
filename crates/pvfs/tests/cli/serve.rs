//! `pvfsctl serve` under a slowloris: scrapes still answered (issue 24, item 8).

use crate::util::{TestDir, cluster_file, pvfsctl, text};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

mod gmetad;

/// `pvfsctl serve` running; SIGTERM and reaped on drop.
struct Serve {
    child: Child,
    addr: SocketAddr,
    /// Its stderr's lines after the one naming the web listener.
    lines: std::sync::mpsc::Receiver<String>,
}

impl Serve {
    /// Starts `serve` on a free loopback port and waits (bounded) for the line naming it.
    fn start(dir: &TestDir, cluster: &str) -> Serve {
        Serve::start_with(dir, cluster, &[])
    }

    /// [`Serve::start`] with more flags.
    fn start_with(dir: &TestDir, cluster: &str, flags: &[&str]) -> Serve {
        let mut child = dir
            .command(&pvfsctl())
            .args(["serve", cluster, "--metrics-listen", "127.0.0.1:0"])
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        // The rest of its stderr is drained, so that serve never blocks writing its logs.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        let addr = loop {
            let line = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("serve did not say where it listens within 20 s"));
            if let Some(rest) = line.split(" at http://").nth(1).or_else(|| line.split(" at https://").nth(1))
            {
                break rest.split('/').next().unwrap().parse().unwrap();
            }
        };
        Serve { child, addr, lines: rx }
    }

    /// The first line of its stderr from now that contains `what`; panics after `within`.
    fn said(&self, what: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let line = self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("serve did not say {what:?} within {within:?}"));
            if line.contains(what) {
                return line;
            }
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// One `GET /metrics` on a fresh connection (from 127.0.0.1): the status line, or why none
/// came within 20 s. Blocking, on a thread of its own, as a scraper is a process of its own
/// (on the flood's runtime, its request would wait behind the flood's tasks).
async fn scrape(to: SocketAddr) -> Result<String, String> {
    let exchange = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let limit = Duration::from_secs(20);
        let mut stream = std::net::TcpStream::connect_timeout(&to, limit)?;
        stream.set_read_timeout(Some(limit))?;
        stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: pvfs\r\nConnection: close\r\n\r\n")?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        Ok::<_, std::io::Error>(text(&answer))
    });
    match exchange.await.map_err(|e| e.to_string())? {
        Ok(answer) => Ok(answer.lines().next().unwrap_or_default().to_owned()),
        Err(err) => Err(err.to_string()),
    }
}

/// Holds a connection from `from` trickling a request's headers (a byte every half second,
/// never the blank line that ends them), and opens a new one on its next round, 5 s after
/// serve closes it, until `stop`: what a slowloris does. (Reopening at once, a connection flood,
/// is `cargo xtask bench-serve-flood`'s; here it would only load the machine the other tests
/// share.)
async fn slowloris(from: SocketAddr, to: SocketAddr, stop: CancellationToken) {
    let mut first = true;
    while !stop.is_cancelled() {
        if !std::mem::take(&mut first) {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(Duration::from_secs(5)) => {}
            }
        }
        let Ok(socket) = tokio::net::TcpSocket::new_v4() else { return };
        let connected = async {
            socket.bind(from)?;
            socket.connect(to).await
        };
        let Ok(mut stream) = connected.await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: pvfs\r\n").await;
        let mut buf = [0u8; 256];
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                // An answer or a close: serve let go of this one.
                _ = stream.read(&mut buf) => break,
                () = tokio::time::sleep(Duration::from_millis(500)) => {
                    if stream.write_all(b"X").await.is_err() {
                        break;
                    }
                }
            }
        }
    }
}

/// 2,000 slowloris connections from 2,000 loopback addresses, then 200 from one other address,
/// then 200 from the scraper's own: five real scrapes succeed under each. Before, the header
/// timeout alone let 1 of 5 through.
#[test]
fn scrapes_are_answered_under_a_slowloris_from_many_addresses_from_one_and_from_their_own() {
    // The flood's sockets are this process's descriptors.
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    let flood = usize::try_from(hard.saturating_sub(256)).unwrap_or(usize::MAX).min(2000);
    assert!(flood >= 1000, "an open-file hard limit of {hard} is too low for this test");

    let dir = TestDir::new();
    dir.pki();
    // Nothing listens on port 1: serve reports the node down and serves /metrics anyway.
    let cluster = cluster_file(&dir, &[("n1", "127.0.0.1:1".into())]);
    let serve = Serve::start(&dir, cluster.to_str().unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let scraper = SocketAddr::from(([127, 0, 0, 1], 0));
        assert_eq!(scrape(serve.addr).await.as_deref(), Ok("HTTP/1.1 200 OK"), "before the flood");
        let many: Vec<SocketAddr> = (0..flood)
            .map(|i| SocketAddr::from(([127, 0, 1 + (i / 250) as u8, 1 + (i % 250) as u8], 0)))
            .collect();
        let other = vec![SocketAddr::from(([127, 0, 0, 2], 0)); 200];
        let own = vec![scraper; 200];
        for (attack, sources) in
            [("many addresses", many), ("one other address", other), ("their own address", own)]
        {
            let stop = CancellationToken::new();
            let mut attackers = tokio::task::JoinSet::new();
            for from in sources {
                attackers.spawn(slowloris(from, serve.addr, stop.clone()));
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
            let mut answers = Vec::new();
            for _ in 0..5 {
                answers.push(scrape(serve.addr).await);
            }
            stop.cancel();
            while attackers.join_next().await.is_some() {}
            assert!(
                answers.iter().all(|a| a.as_deref() == Ok("HTTP/1.1 200 OK")),
                "from {attack}: {answers:?}"
            );
        }
    });
}

/// The numbers a tile shows, from a `top --json` line, as the page works them out: MB/s of all
/// the line's disks read and written, and the busiest disk's %util.
fn tile_figures(line: &serde_json::Value) -> (f64, f64, f64) {
    let disks = line["disks"].as_object().unwrap();
    let sum = |key: &str| disks.values().map(|d| d[key].as_f64().unwrap_or(0.0)).sum::<f64>() / 1024.0;
    let util = disks.values().map(|d| d["%util"].as_f64().unwrap_or(0.0)).fold(0.0, f64::max);
    (sum("rkB/s"), sum("wkB/s"), util)
}

/// Issue 27: a real headless Chromium (Debian's, driven over WebDriver; CI installs both)
/// opens the web view of a real `serve` following a real agent. The numbers its tile shows for
/// the node are those of `top --json` for the same second (found by the agent's sequence number
/// the tile carries), and the table view lists the node.
#[test]
fn a_browser_shows_each_node_as_top_prints_the_same_second() {
    let OneNode { dir, agent, cluster } = OneNode::start();
    let cluster = cluster.as_str();
    let serve = Serve::start(&dir, cluster);
    // `top --json` over the seconds the browser may show.
    let top = dir
        .command(&pvfsctl())
        .args(["top", cluster, "--json", "--count", "15"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let browser = crate::util::Browser::start();
    browser.go(&format!("http://{}/", serve.addr));
    // The tile once it shows a second (bounded: the live stream sends one each second).
    let read_tile = "const t = document.querySelector('.tile[data-node=\"n1\"]');\n\
        if (!t || !t.dataset.seq) return null;\n\
        return {seq: t.dataset.seq, io: t.querySelector('.io').textContent, util: t.querySelector('.util').textContent};";
    let deadline = Instant::now() + Duration::from_secs(15);
    let tile = loop {
        let tile = browser.run(read_tile);
        if !tile.is_null() {
            break tile;
        }
        assert!(Instant::now() < deadline, "the page showed no second of n1 within 15 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    // A later second, from the live stream (the first may be from before `top` began).
    std::thread::sleep(Duration::from_secs(2));
    let later = browser.run(read_tile);
    assert_ne!(later["seq"], tile["seq"], "the page did not move on to a later second");
    let tile = later;
    browser.screenshot("serve-tiles");
    let seq: u64 = tile["seq"].as_str().unwrap().parse().unwrap();
    let table = browser.run(
        "document.getElementById('v-table').click();\n\
         return [...document.querySelectorAll('#rows tr:not(.pad)')].map(r => [...r.cells].map(c => c.textContent));",
    );

    let out = top.wait_with_output().unwrap();
    let line = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["node"] == "n1" && l["seq"] == seq)
        .unwrap_or_else(|| panic!("top --json printed no second {seq} of n1:\n{}", text(&out.stdout)));
    let (read, write, busiest) = tile_figures(&line);
    // One decimal for MB/s, none for %util, as the page rounds them (JS's toFixed).
    assert_eq!(tile["io"], format!("r {read:.1} w {write:.1} MB/s"), "second {seq}: {line}");
    let util = tile["util"].as_str().unwrap();
    assert!(util.starts_with(&format!("util {busiest:.0}%")), "{util} against {busiest} in {line}");
    browser.screenshot("serve-table");
    assert_eq!(table[0][0], "n1", "{table}");
    assert_eq!(table[0][1], "server", "{table}");
    drop(agent);
}

/// A test directory with a CA and one real agent, `n1`, and the cluster file naming it.
/// Issue 27: the table view of a large cluster builds rows only for the nodes on screen, and
/// scrolling or sorting still reaches every node: 300 nodes (none answering, so each is listed
/// as down), of which the page must build far fewer rows, yet show the last one when scrolled to
/// the bottom and first when sorted the other way.
#[test]
fn the_table_builds_only_the_rows_on_screen_and_reaches_every_node() {
    let dir = TestDir::new();
    dir.pki();
    // Nothing listens on these loopback ports: each node is down, and listed as such.
    let nodes: Vec<(String, String)> =
        (1..=300).map(|i| (format!("n{i:03}"), format!("127.0.0.1:{}", 40_000 + i))).collect();
    let named: Vec<(&str, String)> = nodes.iter().map(|(n, a)| (n.as_str(), a.clone())).collect();
    let cluster = cluster_file(&dir, &named);
    let serve = Serve::start(&dir, cluster.to_str().unwrap());
    let browser = crate::util::Browser::start();
    browser.go(&format!("http://{}/", serve.addr));
    let rows = "return [...document.querySelectorAll('#rows tr:not(.pad)')].map(r => [...r.cells].map(c => c.textContent));";
    let deadline = Instant::now() + Duration::from_secs(15);
    let first = loop {
        let shown = browser.run(&format!("document.getElementById('v-table').click();\n{rows}"));
        if shown.as_array().is_some_and(|r| !r.is_empty()) {
            break shown;
        }
        assert!(Instant::now() < deadline, "the table showed no node within 15 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    let built = first.as_array().unwrap().len();
    assert!(built < 150, "{built} rows built for 300 nodes: the table should build those on screen");
    assert_eq!(first[0][0], "n001", "{first}");
    assert_eq!(first[0][1], "server (down)", "{first}");
    // The spacers keep the page as tall as every row would make it.
    let tall = browser.run(
        "const h = document.querySelectorAll('#rows tr:not(.pad)')[1].getBoundingClientRect().height;\n\
         return document.getElementById('rows').getBoundingClientRect().height / h;",
    );
    let tall = tall.as_f64().unwrap();
    assert!((299.5..=300.5).contains(&tall), "the table is {tall} rows tall for 300 nodes");
    browser.run("window.scrollTo(0, document.body.scrollHeight); return null;");
    let deadline = Instant::now() + Duration::from_secs(5);
    let bottom = loop {
        let shown = browser.run(rows);
        if shown.as_array().and_then(|r| r.last()).is_some_and(|r| r[0] == "n300") {
            break shown;
        }
        assert!(Instant::now() < deadline, "scrolled to the bottom, the table does not show n300: {shown}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(bottom.as_array().unwrap().len() < 150, "{bottom}");
    browser.screenshot("serve-table-300");
    // Sorted by name the other way (a click on the header already sorting), n300 comes first.
    browser.run(
        "window.scrollTo(0, 0);\n\
         const th = document.querySelector('th[data-k=\"name\"]'); th.click(); return null;",
    );
    let sorted = browser.run(rows);
    assert_eq!(sorted[0][0], "n300", "{sorted}");
}

struct OneNode {
    dir: TestDir,
    agent: crate::util::AgentProcess,
    cluster: String,
}

impl OneNode {
    fn start() -> OneNode {
        let dir = TestDir::new();
        dir.pki();
        dir.issue_agent("n1", "127.0.0.1");
        let agent = crate::util::AgentProcess::start(&dir, "n1", "127.0.0.1");
        let cluster = cluster_file(&dir, &[("n1", format!("127.0.0.1:{}", agent.port))]);
        OneNode { cluster: cluster.to_str().unwrap().to_owned(), dir, agent }
    }
}

/// One blocking `GET path` (bounded at 20 s): the status code and the body.
fn get(to: SocketAddr, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let limit = Duration::from_secs(20);
    let mut stream = std::net::TcpStream::connect_timeout(&to, limit).unwrap();
    stream.set_read_timeout(Some(limit)).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: pvfs\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = text(&answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    // The JSON answers are sent whole (a Content-Length); a chunked one would need decoding.
    (status, body.to_owned())
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// Issue 27: `serve` keeps history. A 10 s point of a real agent's node holds the average,
/// minimum and maximum of the ten seconds `top --json` printed for the same span, exactly (as
/// the store's 32-bit floats); a node not in the cluster file and a backwards range are refused
/// with what is wrong.
#[test]
fn serve_keeps_each_nodes_ten_second_points_as_the_seconds_top_printed() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    dir.issue_agent("n2", "127.0.0.1");
    let agent = crate::util::AgentProcess::start(&dir, "n1", "127.0.0.1");
    let agent2 = crate::util::AgentProcess::start(&dir, "n2", "127.0.0.1");
    let nodes = [("n1", format!("127.0.0.1:{}", agent.port)), ("n2", format!("127.0.0.1:{}", agent2.port))];
    let cluster = cluster_file(&dir, &nodes);
    let cluster = cluster.to_str().unwrap();
    let serve = Serve::start_with(&dir, cluster, &["--history", "pvfs-history"]);
    let top = dir
        .command(&pvfsctl())
        .args(["top", cluster, "--json", "--count", "26"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The first complete 10 s point (bounded: one closes every 10 s, 3 s after its end).
    let from = unix_now() - 60;
    let deadline = Instant::now() + Duration::from_secs(40);
    let (answer, at) = loop {
        let (status, body) = get(serve.addr, &format!("/api/history?node=n1&tier=10s&from={from}"));
        assert_eq!(status, 200, "{body}");
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        let full = answer["seconds"].as_array().unwrap().iter().position(|s| s == 10);
        if let Some(at) = full {
            break (answer, at);
        }
        assert!(Instant::now() < deadline, "no complete 10 s point within 40 s: {body}");
        std::thread::sleep(Duration::from_millis(500));
    };
    let start = answer["times"][at].as_u64().unwrap();
    let out = top.wait_with_output().unwrap();
    // top's seconds whose middle falls in the point.
    let lines: Vec<pvfs_metrics::line::SecondLine> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &pvfs_metrics::line::SecondLine| {
            if l.node.as_deref() != Some("n1") || l.interval_s == 0.0 {
                return false;
            }
            let (begin, end) = l.span().unwrap();
            ((begin + end) / 2.0).floor() as u64 / 10 * 10 == start
        })
        .collect();
    assert_eq!(lines.len(), 10, "top printed {} seconds of the point at {start}", lines.len());
    let series = |group: &str, column: &str| {
        answer["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["group"] == group && s["column"] == column)
            .unwrap_or_else(|| panic!("no {group} {column} in {answer}"))
            .clone()
    };
    type Column = fn(&pvfs_metrics::line::SecondLine) -> f64;
    let checks: [(&str, &str, Column); 3] = [
        ("cpu", "%idle", |l| l.cpu.get(pvfs_metrics::rates::CpuColumn::Idle).unwrap()),
        ("mem", "kbmemused", |l| l.mem.get(pvfs_metrics::rates::MemColumn::Kbmemused).unwrap()),
        ("load", "plist-sz", |l| l.tasks.get(pvfs_metrics::rates::LoadColumn::PlistSz).unwrap()),
    ];
    for (group, column, value) in checks {
        let values: Vec<f64> = lines.iter().map(value).collect();
        let s = series(group, column);
        let avg = (values.iter().sum::<f64>() / 10.0) as f32;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min) as f32;
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max) as f32;
        let got = |k: &str| s[k][at].as_f64().unwrap() as f32;
        assert_eq!((got("avg"), got("min"), got("max")), (avg, min, max), "{group} {column}: {values:?}");
    }
    let (status, body) = get(serve.addr, "/api/history?node=nope");
    assert_eq!((status, body.trim()), (404, "no node \"nope\" in the cluster file"));
    let (status, body) = get(serve.addr, "/api/history?node=n1&from=20&to=10");
    assert_eq!((status, body.trim()), (400, "from (20) must be before to (10)"));
    // Where the README says: DIR/CLUSTER.redb.
    assert!(dir.path().join("pvfs-history/t.redb").is_file());

    // The node view in a real headless Chromium: the last hour from the 10 s tier, then the
    // last 6 hours, which serve answers from the 1 min tier (6 h of 10 s would be 2,160 points).
    let browser = crate::util::Browser::start();
    browser.go(&format!("http://{}/#node=n1&last=3600", serve.addr));
    let read_charts = "const b = document.getElementById('charts');
        if (!b.dataset.tier || document.getElementById('node-view').hidden) return null;
        return {tier: b.dataset.tier, points: +b.dataset.points, charts: [...b.querySelectorAll('.chart')].map(c => c.dataset.group + ' ' + c.dataset.column)};";
    let wait_charts = |what: &str, tier: &str| {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let shown = browser.run(read_charts);
            if shown["tier"] == tier {
                return shown;
            }
            assert!(Instant::now() < deadline, "the node view showed no {what} within 15 s: {shown}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let hour = wait_charts("hour", "10s");
    browser.screenshot("serve-node-hour");
    assert!(hour["points"].as_u64().unwrap() >= 1, "{hour}");
    let charts = hour["charts"].to_string();
    for chart in ["cpu %usr,%sys,%iowait", "mem kbmemused,kbcached", "load ldavg-1,runq-sz"] {
        assert!(charts.contains(chart), "no chart {chart}: {charts}");
    }
    browser.run("[...document.querySelectorAll('#ranges button')].find(b => b.textContent === '6 h').click(); return null;");
    let six = wait_charts("6 hours", "1m");
    let (_, body) = get(serve.addr, &format!("/api/history?node=n1&tier=1m&from={}", unix_now() - 6 * 3600));
    let minutes: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(six["points"], minutes["times"].as_array().unwrap().len(), "{six} against {minutes}");

    // The compare view: both nodes' CPU busy on one chart, over an hour that ends with the
    // point above (closed, so nothing joins it while the browser reads). Each node's newest
    // figure drawn is 100 − its %idle average as /api/history gives it.
    let (from, to) = (start + 10 - 3600, start + 10);
    browser.go(&format!("http://{}/#compare=n1,n2&metric=cpu-busy&from={from}&to={to}", serve.addr));
    let read_compare = "const c = document.getElementById('c-chart');\n\
        if (c.dataset.nodes !== 'n1,n2') return null;\n\
        return [...c.querySelectorAll('.k span')].map(k => ({node: k.dataset.node, points: +k.dataset.points, last: k.dataset.last}));";
    let deadline = Instant::now() + Duration::from_secs(15);
    let keys = loop {
        let keys = browser.run(read_compare);
        if !keys.is_null() {
            break keys;
        }
        assert!(Instant::now() < deadline, "the compare view drew no chart of n1 and n2 within 15 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    browser.screenshot("serve-compare");
    for key in keys.as_array().unwrap() {
        let node = key["node"].as_str().unwrap();
        let (_, body) = get(serve.addr, &format!("/api/history?node={node}&from={from}&to={to}"));
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            key["points"],
            answer["times"].as_array().unwrap().len(),
            "{node}: {key} against {answer}"
        );
        let idle = answer["series"].as_array().unwrap().iter().find(|s| s["column"] == "%idle").unwrap();
        let last = idle["avg"].as_array().unwrap().last().unwrap().as_f64().unwrap();
        let shown: f64 = key["last"].as_str().unwrap().parse().unwrap();
        assert_eq!(shown, 100.0 - last, "{node}: {key} against %idle {last}");
    }

    // The heatmap: a row per node; n1's cell for the point above is its busiest disk's %util
    // average, as /api/history has the disks (none with I/O: no cell).
    let (_, body) = get(serve.addr, "/api/heatmap?column=%25util&minutes=30");
    let heat: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> =
        heat["nodes"].as_array().unwrap().iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["n1", "n2"], "{heat}");
    let cell = ((start - heat["from"].as_u64().unwrap()) / 10) as usize;
    let busiest = answer["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["group"] == "disk" && s["column"] == "%util")
        .filter_map(|s| s["avg"][at].as_f64())
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    assert_eq!(heat["nodes"][0]["values"][cell].as_f64(), busiest, "cell {cell} of {heat}");
    browser.go(&format!("http://{}/#heatmap", serve.addr));
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let drawn = browser.run("const c = document.getElementById('hm'); return c.dataset.nodes ? [+c.dataset.nodes, +c.dataset.cells] : null;");
        if !drawn.is_null() {
            assert_eq!(drawn, serde_json::json!([2, heat["cells"]]), "{drawn}");
            browser.screenshot("serve-heatmap");
            break;
        }
        assert!(Instant::now() < deadline, "the heatmap was not drawn within 15 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(agent);
    drop(agent2);
}

/// Issue 27: `--web-tls NAME` serves the web view and /metrics over HTTPS with a server
/// certificate of the cluster's CA: a client trusting only the CA's ca.crt reads `/api/now`;
/// plain HTTP gets no page; a name with no certificate is refused before anything starts, with
/// the command that issues one.
#[test]
fn web_tls_serves_https_with_a_certificate_of_the_clusters_ca() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    dir.issue_agent("web", "127.0.0.1");
    let agent = crate::util::AgentProcess::start(&dir, "n1", "127.0.0.1");
    let cluster = cluster_file(&dir, &[("n1", format!("127.0.0.1:{}", agent.port))]);
    let cluster = cluster.to_str().unwrap();

    let out = dir.ctl(&[
        "serve",
        cluster,
        "--web-tls",
        "nope",
        "--history",
        "pvfs-history",
        "--metrics-listen",
        "127.0.0.1:0",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--web-tls nope") && err.contains("pvfsctl ca issue nope"), "{err}");
    assert!(!dir.path().join("pvfs-history").exists(), "a refused serve made its history: {err}");

    let serve = Serve::start_with(&dir, cluster, &["--web-tls", "web"]);
    let ca = std::fs::read(dir.path().join("tls/ca.crt")).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&ca) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let config = std::sync::Arc::new(config);
    // Over HTTPS until the page's data has the node's first second (its agent has just started).
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        use std::io::{Read, Write};
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let connection = rustls::ClientConnection::new(config.clone(), name).unwrap();
        let tcp = std::net::TcpStream::connect(serve.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut tls = rustls::StreamOwned::new(connection, tcp);
        tls.write_all(b"GET /api/now HTTP/1.1\r\nHost: pvfs\r\nConnection: close\r\n\r\n").unwrap();
        let mut answer = Vec::new();
        // rustls reports a peer that closes without close_notify as an error; the answer is in.
        let _ = tls.read_to_end(&mut answer);
        let answer = text(&answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        if answer.contains("\"nodes\":[{\"name\":\"n1\"") {
            break;
        }
        assert!(Instant::now() < deadline, "no second of n1 over HTTPS within 15 s: {answer}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Plain HTTP on the same port: no page (the handshake fails and the connection closes,
    // maybe before the request is even written: a broken pipe is the same refusal).
    let answer = {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(serve.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = stream.write_all(b"GET /api/now HTTP/1.1\r\nHost: pvfs\r\nConnection: close\r\n\r\n");
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        text(&answer)
    };
    assert!(!answer.starts_with("HTTP/"), "plain HTTP was answered: {answer}");
    drop(agent);
}

/// Copies a directory tree (files and directories only).
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// Issue 27: `serve` knows the runs of its `--results` directory (here a run `pvfsctl demo`
/// wrote, from pvfs-report's testdata): `/api/runs` gives each phase on the clock with its
/// bandwidth, as events.jsonl has them; in a real headless Chromium the node view of that span
/// draws them as bands, and the runs view lists the run and opens the compare view over it.
#[test]
fn serve_draws_the_runs_of_its_results_directory_as_bands() {
    let OneNode { dir, agent, cluster } = OneNode::start();
    let run = "demo-throughput-20261127T205944";
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pvfs-report/testdata/old-results")
        .join(run);
    copy_tree(&fixture, &dir.path().join("pvfs-results").join(run));
    let serve = Serve::start_with(&dir, &cluster, &["--history", "pvfs-history"]);

    let (status, body) = get(serve.addr, "/api/runs");
    assert_eq!(status, 200, "{body}");
    let runs: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    let events = std::fs::read_to_string(fixture.join("events.jsonl")).unwrap();
    let started: Vec<serde_json::Value> = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "phase_started")
        .collect();
    let phases = runs[0]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), started.len());
    for (phase, event) in phases.iter().zip(&started) {
        assert_eq!((&phase["phase"], &phase["start"]), (&event["phase"], &event["at"]), "{phase}");
        assert!(phase["bw_mib"].as_f64().unwrap() > 0.0, "{phase}");
    }
    assert_eq!(runs[0]["run"], run);
    let (start, end) = (runs[0]["start"].as_f64().unwrap(), runs[0]["end"].as_f64().unwrap());
    // A range that misses the run lists nothing.
    let (_, body) = get(serve.addr, &format!("/api/runs?from={}&to={}", end + 10.0, end + 20.0));
    assert_eq!(body, "[]");

    let browser = crate::util::Browser::start();
    let (from, to) = (start as u64 - 60, end as u64 + 60);
    browser.go(&format!("http://{}/#node=n1&from={from}&to={to}", serve.addr));
    let wait = |script: &str, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let value = browser.run(script);
            if !value.is_null() {
                return value;
            }
            assert!(Instant::now() < deadline, "no {what} within 15 s");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let bands =
        wait("return document.getElementById('charts').dataset.bands ?? null;", "bands in the node view");
    assert_eq!(bands, started.len().to_string());
    browser.run("document.getElementById('v-runs').click(); return null;");
    let row = wait(
        "const r = document.querySelector('#run-rows tr'); return r ? r.dataset.run : null;",
        "run listed",
    );
    assert_eq!(row, run);
    browser.screenshot("serve-runs");
    browser.run("document.querySelector('#run-rows tr').click(); return null;");
    let compare = wait(
        "const c = document.getElementById('c-chart'); return c.dataset.bands && c.dataset.nodes === 'n1' ? c.dataset.bands : null;",
        "compare view over the run",
    );
    assert_eq!(compare, started.len().to_string());

    // The run's report, linked from the runs view: pvfsctl report's, with its charts.
    let (status, page) = get(serve.addr, &format!("/runs/{run}/"));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<h1>pvfs benchmark report</h1>"), "{page}");
    assert!(page.contains(&format!("<code>{run}</code>")), "{page}");
    assert!(page.contains("<table>"), "the report's tables are HTML tables: {page}");
    let chart = page
        .split("src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("the report has no chart: {page}"));
    let (status, svg) = get(serve.addr, &format!("/runs/{run}/{chart}"));
    assert_eq!(status, 200, "{chart}");
    assert!(svg.contains("<svg"), "{chart}: {svg}");
    browser.run("document.getElementById('v-runs').click(); return null;");
    let href = wait(
        "const a = document.querySelector('#run-rows a.report'); return a ? a.href : null;",
        "report link",
    );
    assert_eq!(href, format!("http://{}/runs/{run}/", serve.addr));
    browser.go(href.as_str().unwrap());
    let heading =
        wait("const h = document.querySelector('h1'); return h ? h.textContent : null;", "report page");
    assert_eq!(heading, "pvfs benchmark report");
    wait(
        "const n = [...document.images].filter(i => i.complete && i.naturalWidth > 0).length; return n > 0 ? n : null;",
        "the report's charts loaded in the browser",
    );
    browser.screenshot("serve-run-report");
    // Nothing else is served from the results directory or beside it.
    for path in [
        "/runs/../",
        "/runs/%2E%2E/",
        "/runs/..%2Fpvfs-results/",
        "/runs/nosuchrun/",
        &format!("/runs/{run}/events.jsonl"),
        &format!("/runs/{run}/..%2Fevents.jsonl"),
    ] {
        let (status, body) = get(serve.addr, path);
        assert_eq!(status, 404, "{path}: {body}");
    }
    drop(agent);
}

/// A browser's live stream never ends by itself: serve's stop ends it, so that Ctrl-C or
/// SIGTERM with the web view open stops serve at once (it waited out the connection's 60 s
/// lifetime before), with exit code 0, and the browser sees its stream end.
#[test]
fn a_stop_ends_the_web_views_live_streams() {
    use std::io::{Read, Write};
    let OneNode { dir, agent, cluster } = OneNode::start();
    let mut serve = Serve::start_with(&dir, &cluster, &[]);
    let mut stream = std::net::TcpStream::connect(serve.addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.write_all(b"GET /api/live HTTP/1.1\r\nHost: pvfs\r\n\r\n").unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !text(&seen).contains("event: now") {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the live stream ended before its first second: {}", text(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let pid = nix::unistd::Pid::from_raw(serve.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = serve.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "serve had not stopped 15 s after SIGTERM with a live stream open"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status}");
    // The browser's end of it is closed.
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).expect("the stream ends");
    drop(agent);
}

/// Issue 27: `config/grafana/pvfs-cluster.json` is a dashboard Grafana's own schema takes
/// (`tests/fixtures/grafana`, checked by Debian's python3-jsonschema), its queries use only
/// the variables it defines, and every series they name is one a real `serve` exports.
#[test]
fn the_grafana_dashboard_passes_grafanas_schema_and_names_only_series_serve_exports() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dashboard_path = root.join("../../config/grafana/pvfs-cluster.json");
    let schema = root.join("tests/fixtures/grafana/dashboard.jsonschema.json");
    let check = "import json, sys, jsonschema\n\
        schema = json.load(open(sys.argv[1]))\n\
        jsonschema.Draft7Validator.check_schema(schema)\n\
        errors = list(jsonschema.Draft7Validator(schema).iter_errors(json.load(open(sys.argv[2]))))\n\
        for e in errors: print('/'.join(map(str, e.absolute_path)), e.message[:300])\n\
        sys.exit(1 if errors else 0)\n";
    let out = std::process::Command::new("/usr/bin/python3")
        .args(["-c", check])
        .arg(&schema)
        .arg(&dashboard_path)
        .output()
        .expect("Debian's python3 (with python3-jsonschema, which xtask ci installs)");
    assert!(
        out.status.success(),
        "Grafana's schema refuses the dashboard:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );

    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&dashboard_path).unwrap()).unwrap();
    let variables: Vec<String> = dashboard["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_owned())
        .collect();
    let mut queries: Vec<String> = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries.push(target["expr"].as_str().unwrap().to_owned());
        }
    }
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        if variable["type"] == "query" {
            queries.push(variable["query"].as_str().unwrap().to_owned());
        }
    }
    assert!(queries.len() >= 20, "{queries:?}");
    // The compare panel's metric is each of its variable's choices.
    let compared: Vec<String> = dashboard["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["name"] == "metric")
        .flat_map(|v| {
            v["options"].as_array().unwrap().iter().map(|o| o["value"].as_str().unwrap().to_owned())
        })
        .collect();
    assert!(!compared.is_empty());

    // A real serve's exposition: the series it exports.
    let OneNode { dir, agent, cluster } = OneNode::start();
    let serve = Serve::start(&dir, &cluster);
    let deadline = Instant::now() + Duration::from_secs(20);
    let exposition = loop {
        let (status, body) = get(serve.addr, "/metrics");
        if status == 200 && body.contains("pvfs_disk_util_percent{") {
            break body;
        }
        assert!(Instant::now() < deadline, "serve exported no rates within 20 s:\n{body}");
        std::thread::sleep(Duration::from_millis(300));
    };
    let exported: std::collections::BTreeSet<&str> = exposition
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(['{', ' ']).next().unwrap())
        .collect();
    for query in &queries {
        for name in series_names(query) {
            if name == "$metric" {
                for metric in &compared {
                    assert!(
                        exported.contains(metric.as_str()),
                        "the compare choice {metric} is not exported"
                    );
                }
            } else {
                assert!(exported.contains(name.as_str()), "{query}: serve exports no {name}");
            }
        }
        for used in query.split('$').skip(1) {
            let name: String = used.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            assert!(variables.contains(&name), "{query}: ${name} is not one of the dashboard's variables");
        }
    }
    drop(agent);
}

/// The metric names in a PromQL query: identifiers that start as the exporter's do (`pvfs_`,
/// `node_`), or `$metric`.
fn series_names(query: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut word = String::new();
    for c in query.chars().chain([' ']) {
        if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
            word.push(c);
            continue;
        }
        // A label's value (inside quotes) is not a name; labels themselves are followed by `=`.
        if (word.starts_with("pvfs_") || word.starts_with("node_") || word == "$metric") && c != '=' {
            names.push(std::mem::take(&mut word));
        }
        word.clear();
    }
    names
}

/// Issue 27: the node view shows the node's busiest processes when asked, the very list
/// `top --processes` prints for the same second; serve watches them only while asked.
#[test]
fn the_node_view_shows_the_busiest_processes_as_top_prints_them() {
    let OneNode { dir, agent, cluster } = OneNode::start();
    let cluster = cluster.as_str();
    let serve = Serve::start(&dir, cluster);
    let (status, body) = get(serve.addr, "/api/processes?node=nosuch");
    assert_eq!(status, 404, "{body}");
    let top = dir
        .command(&pvfsctl())
        .args(["top", cluster, "--json", "--processes=10", "--node", "n1", "--count", "12"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let browser = crate::util::Browser::start();
    browser.go(&format!("http://{}/#node=n1&last=900", serve.addr));
    browser.run("document.getElementById('procs').open = true; return null;");
    // Rows of a second after the first shown (the section polls every 2 s).
    let read = "const b = document.getElementById('proc-rows');\n\
        if (!b.dataset.seq || !b.rows.length) return null;\n\
        return {seq: b.dataset.seq, rows: [...b.rows].map(r => [...r.cells].map(c => c.textContent))};";
    let deadline = Instant::now() + Duration::from_secs(20);
    let shown = loop {
        let shown = browser.run(read);
        if !shown.is_null() {
            break shown;
        }
        assert!(Instant::now() < deadline, "the node view showed no processes within 20 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    browser.screenshot("serve-node-processes");
    let seq: u64 = shown["seq"].as_str().unwrap().parse().unwrap();
    let out = top.wait_with_output().unwrap();
    let line = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["seq"] == seq)
        .unwrap_or_else(|| panic!("top printed no second {seq}:\n{}", text(&out.stdout)));
    let printed: Vec<Vec<String>> = line["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let name = p["name"].as_str().unwrap();
            let name = if p["kernel"] == true { format!("[{name}]") } else { name.to_owned() };
            let number = |k: &str| serde_json::to_string(&p[k]).unwrap();
            vec![p["pid"].to_string(), name, number("%CPU"), number("kB_rd/s"), number("kB_wr/s")]
        })
        .collect();
    let rows: Vec<Vec<String>> = serde_json::from_value(shown["rows"].clone()).unwrap();
    // JavaScript writes 1.0 as "1" where JSON has 1.0.
    let trimmed = |v: &Vec<Vec<String>>| -> Vec<Vec<String>> {
        v.iter().map(|r| r.iter().map(|c| c.strip_suffix(".0").unwrap_or(c).to_owned()).collect()).collect()
    };
    assert!(!rows.is_empty());
    assert_eq!(trimmed(&rows), trimmed(&printed), "second {seq}: {line}");
    drop(agent);
}

/// Issue 27: the last minutes are the agents' own seconds, read from their rings on demand
/// (the 1 s tier), with no history kept by serve: each point is the second `top --json`
/// printed, column for column.
#[test]
fn the_last_minutes_are_the_agents_seconds_as_top_printed_them() {
    let OneNode { dir, agent, cluster } = OneNode::start();
    let cluster = cluster.as_str();
    let out = dir.command(&pvfsctl()).args(["top", cluster, "--json", "--count", "5"]).output().unwrap();
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l.get("up").is_none())
        .collect();
    assert!(lines.len() >= 4, "{}", text(&out.stdout));
    // Serve starts after: those seconds can only come from the agent's ring.
    let serve = Serve::start(&dir, cluster);
    let second = |l: &serde_json::Value| -> u64 {
        let t = humantime::parse_rfc3339(l["time"].as_str().unwrap()).unwrap();
        t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
    };
    let (from, to) = (second(&lines[0]), second(lines.last().unwrap()) + 1);
    let (status, body) = get(serve.addr, &format!("/api/history?node=n1&from={from}&to={to}"));
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!((answer["tier"].as_str(), answer["step_s"].as_u64()), (Some("1s"), Some(1)), "{body}");
    let times: Vec<u64> = serde_json::from_value(answer["times"].clone()).unwrap();
    let mut compared = 0;
    for line in &lines {
        let at = times
            .iter()
            .position(|&t| t == second(line))
            .unwrap_or_else(|| panic!("no point at {line} in {times:?}"));
        for series in answer["series"].as_array().unwrap() {
            let (group, device, column) = (
                series["group"].as_str().unwrap(),
                series["device"].as_str().unwrap(),
                series["column"].as_str().unwrap(),
            );
            let printed = match group {
                "cpu" | "mem" | "tasks" => &line[group][column],
                "load" => match column {
                    "ldavg-1" => &line["load"][0],
                    "ldavg-5" => &line["load"][1],
                    "ldavg-15" => &line["load"][2],
                    _ => &line["tasks"][column],
                },
                "disk" => &line["disks"][device][column],
                "nic" => &line["nics"][device][column],
                other => panic!("group {other}"),
            };
            let Some(printed) = printed.as_f64() else { continue };
            let stored = series["avg"][at]
                .as_f64()
                .unwrap_or_else(|| panic!("{group} {device} {column} at {at}: {series}"));
            assert_eq!(stored as f32, printed as f32, "{group} {device} {column} of {}", line["time"]);
            assert_eq!(
                (series["min"][at].as_f64(), series["max"][at].as_f64()),
                (Some(stored), Some(stored))
            );
            compared += 1;
        }
    }
    assert!(compared > 50 * lines.len(), "only {compared} values compared");
    drop(agent);
}

/// A node's root for an agent (`--root`): this machine's /proc and /sys, and a Lustre server's
/// trees laid out from a real `lctl get_param` output as a 2.15 kernel holds them (one-value
/// parameters in /sys/fs/lustre, stats in /proc/fs/lustre).
fn lustre_root(dir: &TestDir) -> std::path::PathBuf {
    let root = dir.path().join("root");
    // The machine's /proc and /sys, but their file-system trees (and /sys/kernel/debug, where
    // LNet keeps its stats) the test's own.
    for (tree, own) in [("proc", "fs"), ("sys", "fs"), ("sys/kernel", "debug")] {
        let at = root.join(tree);
        std::fs::create_dir_all(&at).unwrap();
        for entry in std::fs::read_dir(format!("/{tree}")).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let taken = (tree == "sys" && name == "kernel") || name == own;
            if !taken && !name.starts_with(|c: char| c.is_ascii_digit()) {
                std::os::unix::fs::symlink(std::path::Path::new("/").join(tree).join(&name), at.join(&name))
                    .unwrap();
            }
        }
    }
    let lnet = root.join("sys/kernel/debug/lnet/stats");
    std::fs::create_dir_all(lnet.parent().unwrap()).unwrap();
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../pvfs-metrics/testdata/lustre/lnet_stats_proc.txt"),
        &lnet,
    )
    .unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pvfs-metrics/testdata/lustre/valid_valid.txt");
    let lctl = std::fs::read_to_string(fixture).unwrap();
    for p in pvfs_metrics::lustre::lctl_params(&lctl).into_iter().filter(|p| !p.name.contains(".exports.")) {
        let tree = if p.value.contains('\n') { "proc/fs/lustre" } else { "sys/fs/lustre" };
        let file = root.join(tree).join(p.name.replace('.', "/"));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, format!("{}\n", p.value.trim_end_matches('\n'))).unwrap();
    }
    // Two clients' exports of the OST written (the writer moves the first's), as the kernel
    // names each export's directory: by the client's whole NID.
    for nid in [WRITER_NID, IDLE_NID] {
        let stats = root.join("proc/fs/lustre/obdfilter/ai400-OST0000/exports").join(nid).join("stats");
        std::fs::create_dir_all(stats.parent().unwrap()).unwrap();
        std::fs::write(&stats, export_stats(unix_secs(), 0)).unwrap();
    }
    root
}

/// The client whose writes the test's writer makes, and one that does nothing.
const WRITER_NID: &str = "10.0.0.1@tcp";
const IDLE_NID: &str = "10.0.0.2@tcp";

/// An OST export's stats file read at `at` (Unix seconds) after `writes` 4 MiB writes, as
/// `lprocfs_stats_seq_show` prints it.
fn export_stats(at: f64, writes: u64) -> String {
    format!(
        "snapshot_time             {at:.9} secs.nsecs\n\
         write_bytes               {} samples [bytes] 4194304 4194304 {}\n\
         statfs                    3 samples [usecs] 1 4 7 21\n",
        1 + writes,
        (1 + writes) * (4 << 20)
    )
}

/// Bytes an OST has written at `t` (Unix seconds) while the test's writer runs: 50 MB/s in 4 MiB
/// writes from the fixture's count on.
const OST_RATE: f64 = 50e6;

/// Keeps an OST's write counters moving at [`OST_RATE`], and LNet's received bytes and the
/// writing client's export with them (each file replaced whole, every 20 ms, as the kernel's
/// files always read whole) until `stop`.
fn ost_writer(
    root: std::path::PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let stats = root.join("proc/fs/lustre/obdfilter/ai400-OST0000/stats");
        let original = std::fs::read_to_string(&stats).unwrap();
        let line = original.lines().find(|l| l.starts_with("write_bytes")).unwrap().to_owned();
        let lnet = root.join("sys/kernel/debug/lnet/stats");
        let lnet_original = std::fs::read_to_string(&lnet).unwrap();
        let lnet_temporary = lnet.with_extension("new");
        let export =
            root.join("proc/fs/lustre/obdfilter/ai400-OST0000/exports").join(WRITER_NID).join("stats");
        let export_temporary = export.with_extension("new");
        let idle = export.parent().unwrap().with_file_name(IDLE_NID).join("stats");
        let idle_temporary = idle.with_extension("new");
        let start = unix_secs();
        for _ in 0..3000 {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            let bytes = ((unix_secs() - start) * OST_RATE) as u64;
            let writes = bytes / (4 << 20);
            let moved = format!(
                "write_bytes               {} samples [bytes] 98304 4194304 {} 439803838556274688",
                25001 + writes,
                104857600000 + writes * (4 << 20)
            );
            let temporary = stats.with_extension("new");
            std::fs::write(&temporary, original.replace(&line, &moved)).unwrap();
            std::fs::rename(&temporary, &stats).unwrap();
            // What the OST wrote came in over LNet: its received bytes and messages move too.
            let lnet_now = lnet_original
                .replace("204125982", &(204125982 + writes).to_string())
                .replace("708781379083", &(708781379083 + writes * (4 << 20)).to_string());
            std::fs::write(&lnet_temporary, lnet_now).unwrap();
            std::fs::rename(&lnet_temporary, &lnet).unwrap();
            std::fs::write(&export_temporary, export_stats(unix_secs(), writes)).unwrap();
            std::fs::rename(&export_temporary, &export).unwrap();
            // The idle client's export reads the same but for its time, as the kernel's does.
            std::fs::write(&idle_temporary, export_stats(unix_secs(), 0)).unwrap();
            std::fs::rename(&idle_temporary, &idle).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

fn unix_secs() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}

/// A Lustre server's agent (a real agent over mTLS, on a root holding a real server's Lustre
/// files, one OST written at 50 MB/s): `top --json` shows its targets each second with the
/// OST's write rate, and `serve`'s /metrics has them under lustrefs-exporter's names with the
/// counters the agent read; a node without Lustre has neither.
#[test]
fn a_lustre_servers_targets_each_second_in_top_and_in_metrics() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("oss1", "127.0.0.1");
    dir.issue_agent("n2", "127.0.0.1");
    let root = lustre_root(&dir);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = ost_writer(root.clone(), stop.clone());
    let oss = crate::util::AgentProcess::start_on(
        &dir,
        "oss1",
        "127.0.0.1:0",
        None,
        &["--root", root.to_str().unwrap()],
    );
    let n2 = crate::util::AgentProcess::start(&dir, "n2", "127.0.0.1");
    let cluster = cluster_file(
        &dir,
        &[("oss1", format!("127.0.0.1:{}", oss.port)), ("n2", format!("127.0.0.1:{}", n2.port))],
    );
    let cluster = cluster.to_str().unwrap();
    std::thread::sleep(Duration::from_secs(2));

    let (lines, printed) = top_seconds(&dir, cluster, 3);
    let of = |node: &str| lines.iter().filter(|l| l["node"] == node).collect::<Vec<_>>();
    assert_eq!((of("oss1").len(), of("n2").len()), (3, 3), "{printed}");
    assert!(of("n2").iter().all(|l| l.get("lustre").is_none()), "a node without Lustre has no targets");
    for line in of("oss1") {
        let targets = line["lustre"].as_array().expect("the server's targets");
        let names: Vec<&str> = targets.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["ai400-OST0000", "ai400-OST0001", "ai400-MDT0000"], "{line}");
        let ost = &targets[0];
        let rate = ost["write_bytes_s"].as_f64().unwrap();
        // 4 MiB steps over ~1 s: within one write and the writer's 20 ms of the rate.
        assert!((rate - OST_RATE).abs() < 4.2e6 + OST_RATE * 0.05, "{rate} B/s: {line}");
        assert!(ost["ops_s"].as_f64().unwrap() > 5.0, "{line}");
        assert_eq!((ost["component"].as_str(), ost["exports"].as_u64()), (Some("ost"), Some(5)));
        assert!(ost["space_used_pct"].as_f64().is_some_and(|p| p > 0.0 && p < 100.0), "{line}");
        // Its busiest client is the one writing, at the OST's rate; the idle one after it.
        let clients = ost["clients"].as_array().expect("the OST's clients");
        assert_eq!(clients[0]["nid"].as_str(), Some(WRITER_NID), "{line}");
        let by_client = clients[0]["write_bytes_s"].as_f64().unwrap();
        assert!((by_client - OST_RATE).abs() < 4.2e6 + OST_RATE * 0.05, "{by_client} B/s: {line}");
        assert_eq!(
            (clients[1]["nid"].as_str(), clients[1]["ops_s"].as_f64()),
            (Some("10.0.0.2@tcp"), Some(0.0))
        );
        assert_eq!(targets[1]["write_bytes_s"].as_f64(), Some(0.0), "the other OST is idle");
        assert_eq!(targets[2]["component"].as_str(), Some("mdt"));
        // LNet received what the OST wrote (the test moves both together, a 4 MiB write at a
        // time; the agent reads the two files one after the other, so on a loaded machine
        // each second's two ends may see them one write apart: two writes in all).
        let lnet = &line["lnet"];
        let received = lnet["recv_bytes_s"].as_f64().unwrap();
        assert!(
            (received - rate).abs() < 2.0 * 4.2e6 + rate * 0.05,
            "{received} B/s against the OST's {rate}: {line}"
        );
        assert_eq!(lnet["send_bytes_s"].as_f64(), Some(0.0), "{line}");
    }
    let table = dir.ctl(&["top", cluster, "--count", "1"]);
    let table = text(&table.stdout);
    assert!(table.contains("Target ") && table.contains("ai400-OST0000        ost "), "{table}");
    assert!(table.contains("lnet: send 0.0 MB/s 0 msg/s, recv "), "{table}");
    assert!(
        table.contains(&format!("\n  {WRITER_NID:<18} client ")),
        "the writing client under its OST: {table}"
    );
    assert!(!table.contains("10.0.0.2@tcp"), "an idle client is not shown: {table}");

    let serve = Serve::start(&dir, cluster);
    // The exporter shows each node's newest second once it has arrived.
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        let (status, body) = get(serve.addr, "/metrics");
        assert_eq!(status, 200);
        if body.contains("lustre_write_bytes_total{") || Instant::now() > deadline {
            break body;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    let written = body
        .lines()
        .find(|l| l.starts_with("lustre_write_bytes_total{") && l.contains(r#"target="ai400-OST0000""#))
        .unwrap_or_else(|| panic!("no OST writes in /metrics:\n{body}"));
    assert!(written.contains(r#"node="oss1""#) && written.contains(r#"component="ost""#), "{written}");
    let value: u64 = written.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(value > 104857600000 && (value - 104857600000).is_multiple_of(4 << 20), "{written}");
    assert!(
        body.contains(
            r#"lustre_exports_total{node="oss1",role="server",component="ost",target="ai400-OST0001"} 4"#
        ),
        "{body}"
    );
    assert!(body.contains(r#"lustre_health_healthy{node="oss1",role="server"} 1"#));
    // Each client's export under lustrefs-exporter's names: the writer's bytes as the agent read them.
    let exported = body
        .lines()
        .find(|l| {
            l.starts_with("lustre_client_export_bytes_total{")
                && l.contains(&format!(r#"nid="{WRITER_NID}""#))
                && l.contains(r#"name="write_bytes""#)
        })
        .unwrap_or_else(|| panic!("no export of the writer in /metrics:\n{body}"));
    assert!(
        exported.contains(r#"target="ai400-OST0000""#) && exported.contains(r#"units="bytes""#),
        "{exported}"
    );
    let value: u64 = exported.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(value >= 4 << 20 && value.is_multiple_of(4 << 20), "{exported}");
    assert!(
        body.contains(r#"lustre_client_export_stats{node="oss1",role="server",component="ost",target="ai400-OST0000",nid="10.0.0.2@tcp",name="statfs",units="usecs"} 3"#),
        "{body}"
    );
    assert!(body.contains(r#"lustre_send_bytes_total{node="oss1",role="server"} 216828482753"#), "{body}");
    assert!(!body.lines().any(|l| l.starts_with("lustre_") && l.contains(r#"node="n2""#)));

    // The web view's file-system tab: every target of the server with this second's rates,
    // LNet's line, nothing of n2.
    let browser = crate::util::Browser::start();
    browser.go(&format!("http://{}/", serve.addr));
    let read = "document.getElementById('v-fs').click();\n\
        const rows = id => [...document.querySelectorAll(`#${id} tr`)].map(r => [...r.cells].map(c => c.textContent));\n\
        return {targets: rows('fs-rows'), lnet: rows('lnet-rows'), status: document.getElementById('fs-status').textContent};";
    let deadline = Instant::now() + Duration::from_secs(15);
    let shown = loop {
        let shown = browser.run(read);
        let ost_moving = shown["targets"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r[1] == "ai400-OST0000"))
            .and_then(|r| r[4].as_str()?.parse::<f64>().ok())
            .is_some_and(|mb| mb > 0.0);
        if ost_moving {
            break shown;
        }
        assert!(Instant::now() < deadline, "the file-system view showed no OST writing within 15 s: {shown}");
        std::thread::sleep(Duration::from_millis(300));
    };
    browser.screenshot("serve-file-system");
    // n2 reads this machine's own root: no Lustre there (a GlusterFS brick running on the
    // machine would show, as it should).
    let targets: Vec<&serde_json::Value> =
        shown["targets"].as_array().unwrap().iter().filter(|r| r[2] != "brick").collect();
    let names: Vec<(&str, &str, &str)> = targets
        .iter()
        .map(|r| (r[0].as_str().unwrap(), r[1].as_str().unwrap(), r[2].as_str().unwrap()))
        .collect();
    let writer_row = format!("  ai400-OST0000 ← {WRITER_NID}");
    assert_eq!(
        names,
        [
            ("oss1", "ai400-OST0000", "ost"),
            ("oss1", writer_row.as_str(), "client"),
            ("oss1", "ai400-OST0001", "ost"),
            ("oss1", "ai400-MDT0000", "mdt")
        ],
        "{shown}"
    );
    let by_client: f64 = targets[1][4].as_str().unwrap().parse().unwrap();
    assert!((by_client - OST_RATE / 1e6).abs() < 4.2 + OST_RATE / 1e6 * 0.05, "{by_client} MB/s: {shown}");
    let ost = targets[0];
    let written: f64 = ost[4].as_str().unwrap().parse().unwrap();
    // (its client's row, checked above, follows it)
    assert!((written - OST_RATE / 1e6).abs() < 4.2 + OST_RATE / 1e6 * 0.05, "{written} MB/s: {shown}");
    assert_eq!((ost[6].as_str(), ost[10].as_str()), (Some("5"), Some("")), "exports, no recovery: {shown}");
    let lnet = shown["lnet"].as_array().unwrap();
    assert_eq!(lnet.len(), 1, "{shown}");
    assert_eq!((lnet[0][0].as_str(), lnet[0][1].as_str()), (Some("oss1"), Some("0.00")), "{shown}");
    assert_eq!(shown["status"], "", "{shown}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
}

/// The stand-in for BeeGFS 7's `beegfs-ctl --serverstats --interval=1` of one storage server
/// (its header says how it prints), shared with pvfs-agent's `beegfs` tests.
const STAND_IN_BEEGFS_CTL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../pvfs-metrics/testdata/beegfs/stand-in-beegfs-ctl.sh"
));

/// Issue 29: a BeeGFS storage server's own figures every second. A real agent over mTLS on a
/// root holding a storage server's files (its configuration and `nodeNumID`), with the
/// server's statistics tool on its PATH (a stand-in printing as BeeGFS 7.4.7's does): `top
/// --json` has the server's second in each line (its requests, queue, busy workers, bytes to
/// and from its targets, the newest row's second) and its target's space and state, `top` a
/// line for each, `serve` their gauges and rows; a node without BeeGFS has none.
#[test]
fn a_beegfs_servers_own_seconds_in_top() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("stor1", "127.0.0.1");
    dir.issue_agent("n2", "127.0.0.1");
    // The server's root: this machine's /proc and /sys, and its BeeGFS files.
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    for tree in ["proc", "sys"] {
        std::os::unix::fs::symlink(format!("/{tree}"), root.join(tree)).unwrap();
    }
    let put = |path: &str, text: &str| {
        let at = root.join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    };
    put("etc/beegfs/beegfs-storage.conf", "storeStorageDirectory = /data/beegfs/t1\n");
    put("data/beegfs/t1/nodeNumID", "3\n");
    put("data/beegfs/t1/targetNumID", "101\n");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("beegfs-ctl"), STAND_IN_BEEGFS_CTL).unwrap();
    std::fs::set_permissions(bin.join("beegfs-ctl"), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    let stor = crate::util::AgentProcess::start_on(
        &dir,
        "stor1",
        "127.0.0.1:0",
        Some(&bin),
        &["--root", root.to_str().unwrap()],
    );
    let n2 = crate::util::AgentProcess::start(&dir, "n2", "127.0.0.1");
    let cluster = cluster_file(
        &dir,
        &[("stor1", format!("127.0.0.1:{}", stor.port)), ("n2", format!("127.0.0.1:{}", n2.port))],
    );
    let cluster = cluster.to_str().unwrap();
    // The tool's first round comes within a second or two of the agent's start.
    std::thread::sleep(Duration::from_secs(3));
    let (lines, printed) = top_seconds(&dir, cluster, 3);
    let of = |node: &str| lines.iter().filter(|l| l["node"] == node).collect::<Vec<_>>();
    assert_eq!((of("stor1").len(), of("n2").len()), (3, 3), "{printed}");
    assert!(of("n2").iter().all(|l| l.get("beegfs").is_none()), "a node without BeeGFS has none");
    for line in of("stor1") {
        let [server] = line["beegfs"].as_array().expect("the server's second").as_slice() else {
            panic!("one server: {line}")
        };
        assert_eq!(
            (server["kind"].as_str(), server["num_id"].as_u64(), server["requests"].as_u64()),
            (Some("storage"), Some(3), Some(880)),
            "{line}"
        );
        assert_eq!(
            (server["write_bytes"].as_u64(), server["read_bytes"].as_u64()),
            (Some(102_400 * 1024), Some(4096))
        );
        assert_eq!(
            (server["queued_requests"].as_u64(), server["busy_workers"].as_u64()),
            (Some(3), Some(12))
        );
        // The newest row the tool printed: within a few seconds of the line's own time.
        let line_s = humantime::parse_rfc3339(line["time"].as_str().unwrap())
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let at = server["time"].as_i64().unwrap();
        assert!((line_s - at).abs() <= 3, "the server's second {at}, the line's {line_s}");
        // Its target: the space of its directory's file system, counted as the server counts
        // it, and the state the management daemon's listing gives it (the stand-in's).
        let [target] = line["beegfs_targets"].as_array().expect("the server's target").as_slice() else {
            panic!("one target: {line}")
        };
        let st = nix::sys::statfs::statfs(&root).unwrap();
        assert_eq!(
            (target["kind"].as_str(), target["id"].as_u64(), target["path"].as_str()),
            (Some("storage"), Some(101), Some("/data/beegfs/t1")),
            "{line}"
        );
        assert_eq!(target["total_bytes"].as_u64(), Some(st.blocks() * st.block_size() as u64), "{line}");
        assert_eq!(target["total_inodes"].as_u64(), Some(st.files()), "{line}");
        assert_eq!(
            (target["reachability"].as_str(), target["consistency"].as_str()),
            (Some("online"), Some("good")),
            "{line}"
        );
    }
    let table = text(&dir.ctl(&["top", cluster, "--count", "1"]).stdout);
    assert!(
        table.contains("beegfs storage 3: 880 req/s, 3 queued, 12 busy workers, write 104.9 MB/s"),
        "{table}"
    );
    assert!(
        table.lines().any(|l| l.starts_with("beegfs storage target 101 (/data/beegfs/t1): ")
            && l.ends_with(" inodes free, online, good")),
        "{table}"
    );

    // serve's /metrics has the server's gauges; its web view's file-system tab a row for it.
    let serve = Serve::start(&dir, cluster);
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        let (status, body) = get(serve.addr, "/metrics");
        assert_eq!(status, 200);
        if body.contains("pvfs_beegfs_requests{") || Instant::now() > deadline {
            break body;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    let labels = r#"{node="stor1",role="server",kind="storage",num_id="3"}"#;
    assert!(body.contains(&format!("pvfs_beegfs_requests{labels} 880")), "{body}");
    assert!(body.contains(&format!("pvfs_beegfs_written_bytes{labels} 104857600")), "{body}");
    let target = r#"node="stor1",role="server",kind="storage",target_id="101",path="/data/beegfs/t1""#;
    assert!(
        body.contains(&format!("pvfs_beegfs_target_reachability{{{target},state=\"online\"}} 1")),
        "{body}"
    );
    assert!(body.contains(&format!("pvfs_beegfs_target_capacity_bytes{{{target}}} ")), "{body}");
    let browser = crate::util::Browser::start();
    browser.go(&format!("http://{}/", serve.addr));
    let read = "document.getElementById('v-fs').click();\n\
        return [...document.querySelectorAll('#fs-rows tr')].map(r => [...r.cells].map(c => c.textContent));";
    let deadline = Instant::now() + Duration::from_secs(15);
    let row = loop {
        let rows = browser.run(read);
        if let Some(row) = rows.as_array().and_then(|rows| rows.iter().find(|r| r[2] == "beegfs-storage")) {
            break row.clone();
        }
        assert!(Instant::now() < deadline, "no BeeGFS row in the file-system view within 15 s: {rows}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(
        row,
        serde_json::json!([
            "stor1",
            "storage 3",
            "beegfs-storage",
            "0.00",
            "104.86",
            "880",
            "–",
            "–",
            "–",
            "–",
            "3 queued, 12 busy"
        ]),
        "4 KiB read a second shows as 0.00 MB/s"
    );
    let rows = browser.run(read);
    let target = rows.as_array().and_then(|rows| rows.iter().find(|r| r[2] == "beegfs-target")).cloned();
    let target = target.unwrap_or_else(|| panic!("no BeeGFS target row: {rows}"));
    assert_eq!(
        (&target[0], &target[1], &target[10]),
        (&"stor1".into(), &"storage target 101".into(), &"online, good".into())
    );
    let used: f64 = target[8].as_str().unwrap().parse().unwrap();
    let st = nix::sys::statfs::statfs(&root).unwrap();
    let want = 100.0 * (st.blocks() - st.blocks_free()) as f64 / st.blocks() as f64;
    assert!((used - want).abs() <= 1.0, "%space {used} against statfs's {want}: {target}");
}

/// `top --json --count N` on `cluster`: its seconds' lines (those with a `seq`), and all it
/// printed.
fn top_seconds(dir: &TestDir, cluster: &str, count: u32) -> (Vec<serde_json::Value>, String) {
    let out = dir.ctl(&["top", cluster, "--json", "--count", &count.to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    let lines = printed
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["seq"].is_u64())
        .collect();
    (lines, printed)
}
