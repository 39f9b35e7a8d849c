//! The dump against a real gmond 3.7.2 dump (copied from shared/fixtures/ganglia): the same DTD, the same
//! element and attribute layout, and the same name, type, units, TMAX, slope, group,
//! description and title for every standard metric.

use super::*;
use pvfs_metrics::sample::{CpuCounters, DiskCounters, LoadCounters, MemCounters, NicCounters, Sample};
use tokio::net::TcpStream;

const REAL: &str = include_str!("../../testdata/gmond-3.7.2-dump.xml");

fn stamped(seq: u64, read_sectors: u64) -> Stamped {
    Stamped {
        epoch: 1,
        seq,
        sample: Sample {
            time_unix_ns: (1_795_314_640 + seq) * 1_000_000_000,
            mono_ns: seq * 1_000_000_000,
            disks: vec![DiskCounters {
                name: "sdb".into(),
                rd_ios: read_sectors / 8,
                rd_sectors: read_sectors,
                ..Default::default()
            }],
            nics: vec![
                NicCounters {
                    name: "eth0".into(),
                    rx_bytes: 1000 * seq,
                    rx_packets: 10 * seq,
                    ..Default::default()
                },
                NicCounters { name: "lo".into(), rx_bytes: 99_999 * seq, ..Default::default() },
            ],
            cpu: CpuCounters { user: 60 * seq, system: 30 * seq, idle: 10 * seq, ..Default::default() },
            mem: MemCounters {
                total_kb: 24_683_656,
                free_kb: 21_834_284,
                buffers_kb: 19_168,
                cached_kb: 2_226_392,
                ..Default::default()
            },
            load: LoadCounters { one: 1.4, five: 1.14, fifteen: 0.5, runnable: 1, tasks: 96 },
            fs: None,
        },
    }
}

fn ours() -> String {
    let facts = StaticFacts {
        cpu_num: 2,
        cpu_mhz: 2445,
        machine: "x86_64",
        os_release: "6.18.44-fc-v769".into(),
        boottime: 1_795_314_205,
    };
    let (prev, curr) = (stamped(8, 8000), stamped(9, 16000));
    let rates = Rates::between(&prev.sample, &curr.sample);
    render(&Snapshot {
        cluster: "pvfs-research",
        host: "oss00",
        ip: "10.0.0.5".into(),
        started: 1_795_314_589,
        now: 1_795_314_654,
        facts: &facts,
        latest: Some(&curr),
        rates: Some(&rates),
        disk_space: (270.553, 84.196, 68.9),
    })
}

/// (name, TYPE, UNITS, TMAX, DMAX, SLOPE, GROUP, DESC, TITLE) of every METRIC.
fn metrics(xml: &str) -> Vec<[String; 9]> {
    let mut out = Vec::new();
    for block in xml.split("<METRIC ").skip(1) {
        let attr = |name: &str| {
            let key = format!("{name}=\"");
            let start = block.find(&key).map(|i| i + key.len()).unwrap();
            block[start..].split('"').next().unwrap().to_owned()
        };
        let extra = |name: &str| {
            let key = format!("<EXTRA_ELEMENT NAME=\"{name}\" VAL=\"");
            let start = block.find(&key).map(|i| i + key.len()).unwrap();
            block[start..].split('"').next().unwrap().to_owned()
        };
        out.push([
            attr("NAME"),
            attr("TYPE"),
            attr("UNITS"),
            attr("TMAX"),
            attr("DMAX"),
            attr("SLOPE"),
            extra("GROUP"),
            extra("DESC"),
            extra("TITLE"),
        ]);
    }
    out
}

#[test]
fn same_dtd_and_standard_metrics_as_a_real_gmond() {
    let ours = ours();
    let real_dtd_end = REAL.find("<GANGLIA_XML").unwrap();
    assert_eq!(&ours[..ours.find("<GANGLIA_XML").unwrap()], &REAL[..real_dtd_end], "DTD differs");
    let real = metrics(REAL);
    let mine = metrics(&ours);
    assert_eq!(real.len(), 32);
    for metric in &real {
        assert!(mine.contains(metric), "gmond's {metric:?} is missing or differs");
    }
}

#[test]
fn elements_and_attributes_in_gmonds_order() {
    let ours = ours();
    let line = |prefix: &str, xml: &str| -> Vec<String> {
        let l = xml.lines().find(|l| l.starts_with(prefix)).unwrap();
        l.split('"')
            .step_by(2)
            .map(|part| part.trim().trim_start_matches(prefix).trim_end_matches('=').trim().to_owned())
            .filter(|s| !s.is_empty() && s != ">")
            .collect()
    };
    for prefix in ["<GANGLIA_XML", "<CLUSTER", "<HOST", "<METRIC"] {
        assert_eq!(line(prefix, &ours), line(prefix, REAL), "{prefix} attributes");
    }
    assert!(ours.ends_with("</HOST>\n</CLUSTER>\n</GANGLIA_XML>\n"));
}

#[test]
fn values_come_from_the_samples_and_rates() {
    let ours = ours();
    let val = |name: &str| {
        let key = format!("<METRIC NAME=\"{name}\" VAL=\"");
        let start = ours.find(&key).map(|i| i + key.len()).unwrap_or_else(|| panic!("no {name}"));
        ours[start..].split('"').next().unwrap().to_owned()
    };
    assert_eq!(val("cpu_user"), "60.0"); // +60 of +100 ticks
    assert_eq!(val("cpu_system"), "30.0");
    assert_eq!(val("cpu_idle"), "10.0");
    assert_eq!(val("bytes_in"), "1000.00"); // eth0 only: lo is not counted, as in gmond
    assert_eq!(val("pkts_in"), "10.00");
    assert_eq!(val("mem_free"), "21834284");
    assert_eq!(val("load_one"), "1.40");
    assert_eq!(val("proc_total"), "96");
    assert_eq!(val("disk_free"), "84.196");
    assert_eq!(val("machine_type"), "x86_64");
    // Per-disk iostat, which stock gmond does not have: 1000 reads of 8000 sectors in 1 s.
    assert_eq!(val("disk_sdb_r_per_second"), "1000.00");
    assert_eq!(val("disk_sdb_rkb_per_second"), "4000.00");
    assert!(ours.contains("<METRIC NAME=\"disk_sdb_util_percent\" VAL=\"0.00\" TYPE=\"float\" UNITS=\"%\""));
    assert!(ours.contains("<HOST NAME=\"oss00\" IP=\"10.0.0.5\" TAGS=\"\" REPORTED=\"1795314649\" TN=\"5\" TMAX=\"20\" DMAX=\"0\""));
}

#[test]
fn attribute_values_are_escaped() {
    assert_eq!(esc("a<b&\"c\"\n"), "a&lt;b&amp;&quot;c&quot; ");
}

/// A sample with `disks` busy devices: a dump of several megabytes, more than a socket's
/// buffers hold, so a client that does not read blocks its writer.
fn many_disks(seq: u64, disks: usize) -> Sample {
    let mut sample = stamped(seq, 8000 * seq).sample;
    sample.disks = (0..disks)
        .map(|i| DiskCounters {
            name: format!("sd{i}"),
            rd_ios: 100 * seq,
            rd_sectors: 800 * seq,
            ..Default::default()
        })
        .collect();
    sample
}

/// Reads `socket` to its end (bounded: 30 s).
async fn read_all(socket: &mut TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), socket.read_to_end(&mut out))
        .await
        .expect("the dump ended within 30 s")
        .expect("the dump was read");
    String::from_utf8(out).unwrap()
}

/// Before, clients were served one after the other on the accept loop: a client that did not
/// read held every other for the 10 s write timeout, and was then cut off mid-document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_read_holds_up_no_other() {
    let history = History::new(1, 10);
    history.push(&many_disks(1, 2000));
    history.push(&many_disks(2, 2000));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let server =
        tokio::spawn(serve(listener, history, "c".into(), "h".into(), Root::system(), shutdown.clone()));

    // A small receive buffer (which also stops the kernel growing it), and no reading: the
    // agent's write of the multi-megabyte dump stalls.
    let stalled = tokio::net::TcpSocket::new_v4().unwrap();
    stalled.set_recv_buffer_size(4096).unwrap();
    let mut stalled = stalled.connect(addr).await.unwrap();
    let mut first = [0u8; 1];
    tokio::io::AsyncReadExt::read_exact(&mut stalled, &mut first).await.unwrap();

    // Another client meanwhile gets its whole dump...
    let mut other = TcpStream::connect(addr).await.unwrap();
    let dump = read_all(&mut other).await;
    assert!(dump.len() > 8 << 20, "{} bytes", dump.len());
    assert!(dump.ends_with("</GANGLIA_XML>\n"), "{}", &dump[dump.len() - 200..]);
    // ...and the stalled one, still connected, gets its whole dump too once it reads.
    let rest = read_all(&mut stalled).await;
    assert!(rest.len() > 8 << 20, "{} bytes", rest.len());
    assert!(rest.ends_with("</GANGLIA_XML>\n"), "{}", &rest[rest.len().saturating_sub(200)..]);
    shutdown.cancel();
    server.await.unwrap();
}
