//! `pvfsctl serve` under a slowloris: scrapes still answered (issue 24, item 8).

use crate::util::{TestDir, cluster_file, pvfsctl, text};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// `pvfsctl serve` running; SIGTERM and reaped on drop.
struct Serve {
    child: Child,
    addr: SocketAddr,
}

impl Serve {
    /// Starts `serve` on a free loopback port and waits (bounded) for the line naming it.
    fn start(dir: &TestDir, cluster: &str) -> Serve {
        let mut child = dir
            .command(&pvfsctl())
            .args(["serve", cluster, "--metrics-listen", "127.0.0.1:0"])
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
            if let Some(rest) = line.split("at http://").nth(1) {
                break rest.split('/').next().unwrap().parse().unwrap();
            }
        };
        Serve { child, addr }
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
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("n1", "127.0.0.1");
    let agent = crate::util::AgentProcess::start(&dir, "n1", "127.0.0.1");
    let cluster = cluster_file(&dir, &[("n1", format!("127.0.0.1:{}", agent.port))]);
    let cluster = cluster.to_str().unwrap();
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
    let seq: u64 = tile["seq"].as_str().unwrap().parse().unwrap();
    let table = browser.run(
        "document.getElementById('v-table').click();\n\
         return [...document.querySelectorAll('#rows tr')].map(r => [...r.cells].map(c => c.textContent));",
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
    assert_eq!(table[0][0], "n1", "{table}");
    assert_eq!(table[0][1], "server", "{table}");
    drop(agent);
}
