//! Remote write against a receiver on loopback that decodes what it is sent as Prometheus'
//! does (snappy block, then the protobuf), answering as each test scripts it. The real
//! Prometheus receiving from a real `serve` is `xtask e2e`'s prometheus scenario.

use super::*;
use crate::tests::real_view;
use axum::http::{HeaderMap, StatusCode};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

/// What the receiver was sent, and what it answers next (204 when nothing is scripted).
#[derive(Clone, Default)]
struct Receiver {
    got: Arc<Mutex<Vec<(HeaderMap, proto::WriteRequest)>>>,
    answers: Arc<Mutex<VecDeque<u16>>>,
}

impl Receiver {
    /// Serves on loopback (plain, or TLS with `tls`); returns its address.
    async fn start(
        &self,
        tls: Option<Arc<rustls::ServerConfig>>,
        stop: CancellationToken,
    ) -> std::net::SocketAddr {
        let receiver = self.clone();
        let app = axum::Router::new().route(
            "/api/v1/write",
            axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
                let receiver = receiver.clone();
                async move {
                    let answer = receiver.answers.lock().unwrap().pop_front().unwrap_or(204);
                    let raw = snap::raw::Decoder::new().decompress_vec(&body).expect("a snappy block");
                    let request: proto::WriteRequest =
                        prost::Message::decode(raw.as_slice()).expect("a WriteRequest");
                    if answer == 204 {
                        receiver.got.lock().unwrap().push((headers, request));
                    }
                    (StatusCode::from_u16(answer).unwrap(), "scripted answer")
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        match tls {
            None => drop(tokio::spawn(crate::serve_http(listener, app, crate::HttpLimits::default(), stop))),
            Some(tls) => {
                drop(tokio::spawn(crate::serve_https(listener, app, crate::HttpLimits::default(), tls, stop)))
            }
        }
        addr
    }

    /// Every series received, by its sorted labels, with its points in the order received.
    fn series(&self) -> BTreeMap<String, Vec<(i64, f64)>> {
        let mut out: BTreeMap<String, Vec<(i64, f64)>> = BTreeMap::new();
        for (_, request) in self.got.lock().unwrap().iter() {
            for series in &request.timeseries {
                let names: Vec<&str> = series.labels.iter().map(|l| l.name.as_str()).collect();
                let mut sorted = names.clone();
                sorted.sort_unstable();
                assert_eq!(names, sorted, "labels must be sorted by name");
                let key = series
                    .labels
                    .iter()
                    .map(|l| format!("{}={}", l.name, l.value))
                    .collect::<Vec<_>>()
                    .join(",");
                out.entry(key).or_default().extend(series.samples.iter().map(|s| (s.timestamp, s.value)));
            }
        }
        out
    }
}

/// The one node of `view` as a remote-write second.
fn second_of(view: &crate::SharedView) -> Second {
    let view = view.read().unwrap();
    let (node, n) = view.nodes.iter().next().unwrap();
    Second {
        node: node.clone(),
        role: n.role.clone(),
        prev: n.prev.clone().unwrap(),
        last: n.last.clone().unwrap(),
    }
}

/// The text exposition's node series as `__name__=…,label=…` (sorted) → value: what a
/// scrape of the same view reads.
fn scraped(view: &crate::SharedView) -> BTreeMap<String, f64> {
    let text = exporter::render(&view.read().unwrap(), false);
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.starts_with("pvfs_ingest_delay")) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = series.split_once('{').unwrap();
        let mut pairs = vec![format!("__name__={name}")];
        for pair in labels.trim_end_matches('}').split(',') {
            let (k, v) = pair.split_once('=').unwrap();
            pairs.push(format!("{k}={}", v.trim_matches('"')));
        }
        pairs.sort_unstable();
        out.insert(pairs.join(","), value.parse::<f64>().unwrap());
    }
    out
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not within 10 s: {what}");
}

/// Issue 27: the store gets exactly what a scrape of the same second reads — every series,
/// with the exporter's names and labels, its value to the bit — stamped with the sample's own
/// time, in Prometheus' encoding and headers, with the Authorization from the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_gets_every_series_a_scrape_reads_stamped_with_the_samples_time() {
    let view = real_view();
    let stop = CancellationToken::new();
    let receiver = Receiver::default();
    let addr = receiver.start(None, stop.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let auth = dir.path().join("auth");
    std::fs::write(&auth, "Bearer s3cret\n").unwrap();
    let target = Target::new(&format!("http://{addr}/api/v1/write"), Some(&auth), None).unwrap();
    assert!(!format!("{target:?}").contains("s3cret"), "the token must not show in debug output");

    let sending = CancellationToken::new();
    let (feed, task) = start(target, sending.clone());
    let second = second_of(&view);
    let time_ms = (second.last.sample.time_unix_ns / 1_000_000) as i64;
    feed.send(second);
    let want = scraped(&view);
    wait_for("the store has the second", || receiver.series().len() == want.len()).await;

    let got = receiver.series();
    let keys: Vec<&String> = got.keys().collect();
    assert_eq!(keys, want.keys().collect::<Vec<_>>(), "the series a scrape reads, no more, no fewer");
    for (series, points) in &got {
        assert_eq!(points.len(), 1, "{series}");
        let (at, value) = points[0];
        assert_eq!(at, time_ms, "{series} is stamped with its sample's time");
        let scraped = want[series];
        assert!(
            value.to_bits() == scraped.to_bits() || (value.is_nan() && scraped.is_nan()),
            "{series}: {value} vs {scraped}"
        );
    }
    assert!(got.keys().any(|k| k.starts_with("__name__=pvfs_disk_util_percent,")), "{keys:?}");
    let (headers, _) = receiver.got.lock().unwrap()[0].clone();
    assert_eq!(headers["content-encoding"], "snappy");
    assert_eq!(headers["content-type"], "application/x-protobuf");
    assert_eq!(headers["x-prometheus-remote-write-version"], "0.1.0");
    assert_eq!(headers["authorization"], "Bearer s3cret");

    let counters = feed.counters();
    assert_eq!(counters.counts().sent, want.len() as u64);
    assert_eq!(counters.counts().newest_ms, time_ms as u64);
    drop(feed);
    sending.cancel();
    task.await.unwrap();
    stop.cancel();
}

/// A store that fails (503, 429) gets the same request again after a back-off until it takes
/// it, nothing lost or doubled; one that refuses a request (400) is not sent it again, and the
/// refused samples are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_store_is_retried_and_a_refusing_one_is_counted() {
    let view = real_view();
    let stop = CancellationToken::new();
    let receiver = Receiver::default();
    receiver.answers.lock().unwrap().extend([503, 429]);
    let addr = receiver.start(None, stop.clone()).await;
    let target = Target::new(&format!("http://{addr}/api/v1/write"), None, None).unwrap();
    let sending = CancellationToken::new();
    let (feed, task) = start(target, sending.clone());
    let series = scraped(&view).len() as u64;

    feed.send(second_of(&view));
    wait_for("the store took the second", || feed.counters().counts().sent == series).await;
    let counts = feed.counters().counts();
    assert_eq!(counts.retries, 2, "{counts:?}");
    assert_eq!(receiver.got.lock().unwrap().len(), 1, "taken once");

    receiver.answers.lock().unwrap().push_back(400);
    feed.send(second_of(&view));
    wait_for("the refusal was counted", || feed.counters().counts().refused == series).await;
    let counts = feed.counters().counts();
    assert_eq!((counts.retries, counts.sent, counts.dropped), (2, series, 0), "{counts:?}");
    drop(feed);
    sending.cancel();
    task.await.unwrap();
    stop.cancel();
}

/// With the store away, the queue bounds what waits and every second that never went is
/// counted as dropped by the time the sender has stopped: none is lost uncounted, and the
/// folder's hand-over never waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_store_away_every_unsent_second_is_counted() {
    let view = real_view();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let target = Target::new(&format!("http://127.0.0.1:{port}/api/v1/write"), None, None).unwrap();
    let sending = CancellationToken::new();
    let (feed, task) = start_with(target, 8, sending.clone());
    let began = std::time::Instant::now();
    for _ in 0..300 {
        feed.send(second_of(&view));
    }
    assert!(began.elapsed() < Duration::from_secs(5), "the hand-over waited");
    let counters = feed.counters();
    wait_for("a retry", || counters.counts().retries > 0).await;
    drop(feed);
    sending.cancel();
    task.await.unwrap();
    let counts = counters.counts();
    assert_eq!((counts.sent, counts.dropped, counts.queued), (0, 300, 0), "{counts:?}");
}

/// An https store is checked against the CA given (here a cluster CA's server certificate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_store_is_checked_against_the_ca_given() {
    let view = real_view();
    let dir = tempfile::tempdir().unwrap();
    pvfs_tls::init_ca(dir.path()).unwrap();
    pvfs_tls::issue(dir.path(), "store", &["127.0.0.1".to_owned()], pvfs_tls::Usage::Agent, false).unwrap();
    let tls = crate::https_config(&pvfs_tls::load(dir.path(), "store").unwrap()).unwrap();
    let stop = CancellationToken::new();
    let receiver = Receiver::default();
    let addr = receiver.start(Some(tls), stop.clone()).await;
    let url = format!("https://127.0.0.1:{}/api/v1/write", addr.port());
    let target = Target::new(&url, None, Some(&dir.path().join("ca.crt"))).unwrap();
    let sending = CancellationToken::new();
    let (feed, task) = start(target, sending.clone());
    feed.send(second_of(&view));
    let series = scraped(&view).len() as u64;
    wait_for("the store took the second", || feed.counters().counts().sent == series).await;
    drop(feed);
    sending.cancel();
    task.await.unwrap();
    stop.cancel();
}

/// Each wrong target is refused before anything starts, saying what to give.
#[test]
fn wrong_targets_are_refused_saying_what_to_give() {
    let err = |url: &str| Target::new(url, None, None).unwrap_err().to_string();
    assert!(err("http://user:pw@store:9090/api/v1/write").contains("--remote-write-auth-file"));
    assert!(err("ftp://store/api/v1/write").contains("http or https"));
    assert!(err("store:9090").contains("http or https"));
    assert!(err("not a url at all").contains("not a URL"));
    let missing =
        Target::new("http://store/api/v1/write", Some(Path::new("/nonexistent/auth")), None).unwrap_err();
    assert!(missing.to_string().starts_with("--remote-write-auth-file /nonexistent/auth: "), "{missing}");
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let no_roots = Target::new("https://store/api/v1/write", None, Some(&empty)).unwrap_err();
    assert!(no_roots.to_string().contains("holds no PEM certificate"), "{no_roots}");
}
