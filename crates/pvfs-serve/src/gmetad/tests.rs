//! gmetad's answers from a view of three nodes (one up, one down, one never heard): the paths,
//! the filter and the malformed requests as gmetad 3.7.2's server.c treats them, read back with
//! a real XML parser.

use super::*;
use pvfs_coord::stream::StreamEvent;
use pvfs_metrics::ring::Stamped;
use pvfs_metrics::sample::{CpuCounters, DiskCounters, LoadCounters, MemCounters, Sample};

fn stamped(seq: u64) -> Stamped {
    Stamped {
        epoch: 1,
        seq,
        sample: Sample {
            time_unix_ns: unix_now().saturating_sub(3 - seq) * 1_000_000_000,
            mono_ns: seq * 1_000_000_000,
            disks: vec![DiskCounters {
                name: "sdb".into(),
                rd_ios: 100 * seq,
                rd_sectors: 800 * seq,
                ..Default::default()
            }],
            nics: vec![],
            cpu: CpuCounters { user: 60 * seq, idle: 40 * seq, ..Default::default() },
            mem: MemCounters { total_kb: 1000, free_kb: 250, ..Default::default() },
            load: LoadCounters { one: 1.5, five: 1.0, fifteen: 0.25, runnable: 2, tasks: 90 },
            fs: None,
        },
    }
}

/// `oss1` up with two seconds, `oss2` heard and then down, `oss3` never heard.
fn gmetad() -> Arc<Gmetad> {
    let toml = "[cluster]\nname = \"lab\"\nkind = \"local\"\n[local]\nmount = \"/tmp/pvfs-t\"\n\
        [[node]]\nname = \"oss1\"\naddress = \"10.0.0.1:7070\"\nroles = [\"server\"]\n\
        [[node]]\nname = \"oss2\"\naddress = \"10.0.0.2:7070\"\nroles = [\"server\"]\n\
        [[node]]\nname = \"oss3\"\naddress = \"oss3.example:7070\"\nroles = [\"server\"]\n";
    let cluster = pvfs_config::parse(std::path::Path::new("t.toml"), toml).unwrap();
    let view = crate::view(&cluster);
    {
        let mut v = view.write().unwrap();
        for (node, seq) in [("oss1", 1), ("oss1", 2), ("oss2", 1), ("oss2", 2)] {
            let stamped = Box::new(stamped(seq));
            v.apply(StreamEvent::Sample { node: node.into(), stamped, processes: vec![] });
        }
        let error = pvfs_coord::dial::DialError {
            kind: pvfs_coord::dial::FailureKind::Other,
            message: "gone".into(),
        };
        v.apply(StreamEvent::Down { node: "oss2".into(), error });
    }
    Gmetad::new(view, &cluster, "http://127.0.0.1:9477/".into())
}

/// The document parsed (a real XML parser, with the DTD), or a panic that shows it.
fn parsed(xml: &str) -> roxmltree::Document<'_> {
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    roxmltree::Document::parse_with_options(xml, options).unwrap_or_else(|e| panic!("{e}:\n{xml}"))
}

fn named<'a>(doc: &'a roxmltree::Document<'_>, tag: &str) -> Vec<&'a str> {
    doc.descendants().filter(|n| n.has_tag_name(tag)).map(|n| n.attribute("NAME").unwrap()).collect()
}

#[test]
fn the_xml_port_writes_every_host_heard_in_one_grid() {
    let xml = gmetad().answer("/").unwrap();
    let doc = parsed(&xml);
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "GANGLIA_XML");
    assert_eq!(root.attribute("SOURCE"), Some("gmetad"));
    assert_eq!(named(&doc, "GRID"), ["lab"]);
    assert_eq!(named(&doc, "CLUSTER"), ["lab"]);
    // A host never heard of is not one gmetad would know.
    assert_eq!(named(&doc, "HOST"), ["oss1", "oss2"]);
    let oss1 = doc.descendants().find(|n| n.attribute("NAME") == Some("oss1")).unwrap();
    assert_eq!(oss1.attribute("IP"), Some("10.0.0.1"));
    let metric = |name: &str| {
        oss1.children()
            .find(|n| n.attribute("NAME") == Some(name))
            .map(|n| n.attribute("VAL").unwrap().to_owned())
    };
    assert_eq!(metric("load_one").as_deref(), Some("1.50"));
    assert_eq!(metric("mem_total").as_deref(), Some("1000"));
    assert_eq!(metric("cpu_user").as_deref(), Some("60.0"));
    // iostat's columns of the disk that did I/O: 100 reads in the second.
    assert_eq!(metric("disk_sdb_r_per_second").as_deref(), Some("100.00"));
    // Facts not yet asked of the agent are left out, not made up.
    assert_eq!(metric("cpu_num"), None);
    for m in oss1.children().filter(|n| n.has_tag_name("METRIC")) {
        assert_eq!(m.attribute("SOURCE"), Some("gmond"), "{m:?}");
    }
}

#[test]
fn a_path_narrows_the_answer_to_a_cluster_a_host_or_a_metric() {
    let g = gmetad();
    let host = g.answer("/lab/oss1").unwrap();
    let doc = parsed(&host);
    assert_eq!(named(&doc, "HOST"), ["oss1"]);
    assert!(named(&doc, "METRIC").len() > 20, "{host}");

    let one = g.answer("/lab/oss1/load_one").unwrap();
    let doc = parsed(&one);
    assert_eq!(named(&doc, "HOST"), Vec::<&str>::new(), "{one}");
    assert_eq!(named(&doc, "METRIC"), ["load_one"], "{one}");
    assert_eq!(named(&doc, "CLUSTER"), ["lab"]);

    // What is not found shows its parent whole, as gmetad does for a non-HTTP request.
    let unknown_metric = g.answer("/lab/oss1/no_such_metric").unwrap();
    assert_eq!(named(&parsed(&unknown_metric), "HOST"), ["oss1"]);
    let unknown_host = g.answer("/lab/oss9").unwrap();
    assert_eq!(named(&parsed(&unknown_host), "HOST"), ["oss1", "oss2"]);
    let unknown_cluster = g.answer("/other").unwrap();
    assert_eq!(named(&parsed(&unknown_cluster), "HOST"), ["oss1", "oss2"]);
}

#[test]
fn a_summary_counts_hosts_and_sums_the_numeric_metrics_of_those_up() {
    let g = gmetad();
    let xml = g.answer("/lab?filter=summary").unwrap();
    let doc = parsed(&xml);
    assert_eq!(named(&doc, "HOST"), Vec::<&str>::new(), "{xml}");
    let hosts = doc.descendants().find(|n| n.has_tag_name("HOSTS")).unwrap();
    // oss2 is down (its stream failed) and oss3 never answered.
    assert_eq!((hosts.attribute("UP"), hosts.attribute("DOWN")), (Some("1"), Some("2")));
    let sum = |name: &str| {
        let m = doc
            .descendants()
            .find(|n| n.has_tag_name("METRICS") && n.attribute("NAME") == Some(name))
            .unwrap();
        [m.attribute("SUM").unwrap(), m.attribute("NUM").unwrap(), m.attribute("TYPE").unwrap()]
            .map(str::to_owned)
    };
    // Only oss1's figures: float sums keep the value's decimals, integer ones none.
    assert_eq!(sum("load_one"), ["1.50", "1", "double"]);
    assert_eq!(sum("proc_total"), ["90", "1", "double"]);
    // Strings are not summed.
    assert!(!named(&doc, "METRICS").contains(&"os_name"));
    // The root's summary is the grid's, then the cluster's.
    let root = g.answer("/?filter=summary").unwrap();
    assert_eq!(parsed(&root).descendants().filter(|n| n.has_tag_name("HOSTS")).count(), 2, "{root}");
    // A host has no summary: its element, empty.
    let host = g.answer("/lab/oss1?filter=summary").unwrap();
    let doc = parsed(&host);
    assert_eq!(named(&doc, "HOST"), ["oss1"]);
    assert_eq!(named(&doc, "METRIC"), Vec::<&str>::new());
}

#[test]
fn requests_gmetad_calls_malformed_are_closed_unanswered() {
    let g = gmetad();
    for bad in ["", "lab/oss1", "/lab;rm", "/lab/<x>", "/lab?filter", "/lab'"] {
        assert!(g.answer(bad).is_none(), "{bad:?} was answered");
    }
    // An unknown filter is no filter (gmetad logs it and answers in full).
    assert_eq!(named(&parsed(&g.answer("/lab?filter=other").unwrap()), "HOST"), ["oss1", "oss2"]);
}

#[tokio::test]
async fn the_interactive_port_answers_one_line_and_closes() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let server = tokio::spawn(serve(listener, gmetad(), true, stop.clone()));
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.write_all(b"/lab/oss1/load_one\n").await.unwrap();
    let mut answer = String::new();
    let read = tokio::time::timeout(Duration::from_secs(10), socket.read_to_string(&mut answer)).await;
    read.unwrap().unwrap();
    assert_eq!(named(&parsed(&answer), "METRIC"), ["load_one"]);
    // A malformed request: closed with nothing written.
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.write_all(b"lab\n").await.unwrap();
    let mut answer = String::new();
    let read = tokio::time::timeout(Duration::from_secs(10), socket.read_to_string(&mut answer)).await;
    read.unwrap().unwrap();
    assert_eq!(answer, "");
    stop.cancel();
    server.await.unwrap();
}
