//! The HTTP server against half-open requests and slowloris floods, on loopback.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Reads `socket` until the server closes it; panics after 30 s.
async fn until_closed(socket: &mut tokio::net::TcpStream) -> String {
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), socket.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "the server did not close the connection within 30 s");
    String::from_utf8_lossy(&out).into_owned()
}

/// Before, `axum::serve` held a request whose headers never ended for as long as the client
/// liked, and took every connection offered.
#[tokio::test]
async fn half_open_requests_are_closed_and_a_scrape_is_still_answered() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route("/metrics", get(|| async { "pvfs_up 1\n" }));
    let limits = HttpLimits {
        max_connections: 4,
        per_peer: 4,
        header_timeout: Duration::from_millis(500),
        connection_lifetime: Duration::from_secs(30),
    };
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(serve_http(listener, app, limits, shutdown.clone()));

    // Three times the connection limit, each with a request whose headers never end.
    let mut half_open = Vec::new();
    for _ in 0..3 * limits.max_connections {
        let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
        socket.write_all(b"GET /metrics HTTP/1.1\r\nHost: pvfs\r\n").await.unwrap();
        half_open.push(socket);
    }
    // A real scrape is answered (an idle connection makes room for it).
    let mut scrape = tokio::net::TcpStream::connect(addr).await.unwrap();
    scrape.write_all(b"GET /metrics HTTP/1.1\r\nHost: pvfs\r\nConnection: close\r\n\r\n").await.unwrap();
    let answer = until_closed(&mut scrape).await;
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.ends_with("pvfs_up 1\n"), "{answer}");
    // Every half-open request was closed by the server, not left waiting.
    for socket in &mut half_open {
        let answer = until_closed(socket).await;
        assert!(!answer.contains("200 OK"), "{answer}");
    }
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(30), server).await.unwrap().unwrap();
}

/// A slowloris from many addresses that opens a new connection as soon as one of its own
/// is closed. Before, scrapes waited in the listen backlog behind it (4 of 5 failed); the
/// header timeout here is longer than the test's bound, so only eviction lets them in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrapes_get_through_a_slowloris_from_many_addresses() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route("/metrics", get(|| async { "pvfs_up 1\n" }));
    let limits = HttpLimits {
        max_connections: 16,
        per_peer: 2,
        header_timeout: Duration::from_secs(120),
        connection_lifetime: Duration::from_secs(120),
    };
    let admission = Admission::new(limits.max_connections, limits.per_peer);
    let shutdown = CancellationToken::new();
    let server =
        tokio::spawn(serve_admitted(listener, app, limits, admission.clone(), None, shutdown.clone()));

    // 200 trickling connections from 127.0.1.1 … 127.0.1.200, each reopened when closed.
    let attack = CancellationToken::new();
    let mut attackers = tokio::task::JoinSet::new();
    for i in 0..200u8 {
        let from = std::net::SocketAddr::from(([127, 0, 1, i.wrapping_add(1)], 0));
        attackers.spawn(slowloris(from, addr, attack.clone()));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for _ in 0..5 {
        let mut scrape = tokio::net::TcpStream::connect(addr).await.unwrap();
        scrape.write_all(b"GET /metrics HTTP/1.1\r\nHost: pvfs\r\nConnection: close\r\n\r\n").await.unwrap();
        let answer = until_closed(&mut scrape).await;
        assert!(answer.starts_with("HTTP/1.1 200 OK") && answer.ends_with("pvfs_up 1\n"), "{answer}");
    }
    attack.cancel();
    while attackers.join_next().await.is_some() {}
    let counts = admission.counts();
    assert!(counts.evicted > 0, "{counts:?}");
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(30), server).await.unwrap().unwrap();
}

/// Connects from `from` and trickles a request's headers a byte at a time, never ending
/// them; reconnects whenever the server closes the connection, until `stop`.
async fn slowloris(from: std::net::SocketAddr, to: std::net::SocketAddr, stop: CancellationToken) {
    while !stop.is_cancelled() {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(from).unwrap();
        let Ok(mut stream) = socket.connect(to).await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let mut closed = [0u8; 1];
        let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\n").await;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                // Any answer or a close: the server let go of it.
                _ = stream.read(&mut closed) => break,
                () = tokio::time::sleep(Duration::from_millis(200)) => {
                    if stream.write_all(b"X").await.is_err() {
                        break;
                    }
                }
            }
        }
    }
}

/// One request on a fresh connection to `addr`; the whole answer.
async fn fetch(addr: std::net::SocketAddr, path: &str) -> String {
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: pvfs\r\nConnection: close\r\n\r\n");
    socket.write_all(request.as_bytes()).await.unwrap();
    until_closed(&mut socket).await
}

/// A view of a one-node cluster holding two real samples of this machine, a second's worth
/// apart in sequence (their counters are the kernel's).
pub(crate) fn real_view() -> SharedView {
    use pvfs_metrics::ring::Stamped;
    use pvfs_metrics::sample::{DeviceFilter, Sampler};
    let text = "[cluster]\nname = \"w\"\nkind = \"local\"\n[local]\nmount = \"/m\"\n\
                [[node]]\nname = \"n1\"\naddress = \"127.0.0.1\"\nroles = [\"client\"]\n";
    let cluster = pvfs_config::parse(std::path::Path::new("/etc/pvfs/cluster.toml"), text).unwrap();
    let view = view(&cluster);
    let mut sampler = Sampler::new(pvfs_host::Root::system(), DeviceFilter::default());
    for seq in 1..=2 {
        let sample = sampler.sample().unwrap();
        let stamped = Box::new(Stamped { epoch: 7, seq, sample });
        view.write().unwrap().apply(StreamEvent::Sample { node: "n1".into(), stamped, processes: vec![] });
        std::thread::sleep(Duration::from_millis(200));
    }
    view
}

/// Issue 27: the page is served whole from the binary, small, and the numbers it reads are
/// the node's second exactly as `top --json` prints it (its `SecondLine` with node and seq).
#[tokio::test]
async fn the_web_view_serves_its_page_and_each_nodes_second_as_top_prints_it() {
    let view = real_view();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(serve_http(
        listener,
        app(
            view.clone(),
            history::HistoryState { reader: None, nodes: Default::default(), agents: None, dropped: None },
            runs::Runs::new("none".into()),
            None,
            None,
            shutdown.clone(),
        ),
        HttpLimits::default(),
        shutdown.clone(),
    ));

    let page = fetch(addr, "/").await;
    assert!(page.starts_with("HTTP/1.1 200 OK"), "{page}");
    assert!(page.contains("content-type: text/html; charset=utf-8"), "{page}");
    assert!(page.contains("new EventSource(\"/api/live\")"), "the page follows the live stream");
    assert!(web::PAGE.len() < 300 << 10, "the first load stays under 300 KB: {}", web::PAGE.len());
    assert!(
        !web::PAGE.contains("http://") && !web::PAGE.contains("https://"),
        "nothing fetched from elsewhere"
    );

    let answer = fetch(addr, "/api/now").await;
    let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let now: serde_json::Value = serde_json::from_str(body).unwrap();
    let node = &now["nodes"][0];
    assert_eq!(
        (node["name"].as_str(), node["role"].as_str(), node["up"].as_bool()),
        (Some("n1"), Some("client"), Some(true))
    );
    // What top --json prints for the same two samples.
    let expected = {
        let view = view.read().unwrap();
        let n1 = &view.nodes["n1"];
        let last = n1.last.as_ref().unwrap();
        pvfs_metrics::line::SecondLine {
            node: Some("n1".into()),
            seq: Some(last.seq),
            ..pvfs_metrics::line::SecondLine::of(&n1.rates().unwrap(), &last.sample.visible_devices(false))
        }
    };
    assert_eq!(node["second"], serde_json::to_value(&expected).unwrap());
    assert_eq!(node["second"]["seq"], 2);
    assert!(node["second"]["cpu"]["%idle"].is_number(), "{node}");

    // The live stream: `now` events, the first telling the browser to come back quickly.
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket.write_all(b"GET /api/live HTTP/1.1\r\nHost: pvfs\r\n\r\n").await.unwrap();
    let mut seen = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = [0u8; 65536];
        while !String::from_utf8_lossy(&seen).contains("event: now") {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the stream ended");
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    let seen = String::from_utf8_lossy(&seen);
    assert!(read.is_ok(), "no event within 10 s: {seen}");
    assert!(seen.contains("content-type: text/event-stream"), "{seen}");
    assert!(seen.contains("retry: 250"), "{seen}");
    assert!(seen.contains("\"name\":\"n1\""), "{seen}");
    drop(socket);
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(30), server).await.unwrap().unwrap();
}
