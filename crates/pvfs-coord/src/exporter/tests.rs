//! The exposition, checked line by line against the text format's grammar and against values
//! worked out from the samples.

use super::*;
use pvfs_metrics::sample::{CpuCounters, DiskCounters, MemCounters, NicCounters, Sample};

fn stamped(seq: u64, reads: u64, rx: u64) -> Box<Stamped> {
    Box::new(Stamped {
        epoch: 9,
        seq,
        sample: Sample {
            time_unix_ns: 1_763_780_000_000_000_000 + seq * 1_000_000_000,
            mono_ns: seq * 1_000_000_000,
            disks: vec![DiskCounters {
                name: "md0".into(),
                rd_ios: reads,
                rd_sectors: reads * 8,
                tot_ticks: seq * 500,
                ..Default::default()
            }],
            nics: vec![NicCounters { name: "eth0".into(), rx_bytes: rx, ..Default::default() }],
            cpu: CpuCounters { user: 100 * seq, idle: 100 * seq, ..Default::default() },
            mem: MemCounters { total_kb: 1024, ..Default::default() },
            load: Default::default(),
            fs: None,
        },
    })
}

fn view() -> ClusterView {
    let mut view = ClusterView::default();
    view.nodes.insert("oss00".into(), NodeView { role: "oss".into(), ..Default::default() });
    view.nodes.insert("client00".into(), NodeView { role: "client".into(), ..Default::default() });
    view.apply(StreamEvent::Sample {
        node: "oss00".into(),
        stamped: stamped(1, 1000, 5_000_000),
        processes: Vec::new(),
    });
    view.apply(StreamEvent::Sample {
        node: "oss00".into(),
        stamped: stamped(2, 1400, 5_000_000 + 1_048_576),
        processes: Vec::new(),
    });
    view
}

#[test]
fn node_exporter_names_and_iostat_gauges_per_node() {
    let text = render(&view(), false);
    for want in [
        "pvfs_node_up{node=\"oss00\",role=\"oss\"} 1",
        "pvfs_node_up{node=\"client00\",role=\"client\"} 0",
        "node_disk_reads_completed_total{node=\"oss00\",role=\"oss\",device=\"md0\"} 1400",
        "node_disk_read_bytes_total{node=\"oss00\",role=\"oss\",device=\"md0\"} 5734400", // 1400 × 8 × 512
        "node_disk_io_time_seconds_total{node=\"oss00\",role=\"oss\",device=\"md0\"} 1",
        "node_network_receive_bytes_total{node=\"oss00\",role=\"oss\",device=\"eth0\"} 6048576",
        "node_cpu_seconds_total{node=\"oss00\",role=\"oss\",cpu=\"all\",mode=\"user\"} 2",
        "node_memory_MemTotal_bytes{node=\"oss00\",role=\"oss\"} 1048576",
        // Rates over the second between the two samples.
        "pvfs_disk_r_per_second{node=\"oss00\",role=\"oss\",device=\"md0\"} 400",
        "pvfs_disk_rkb_per_second{node=\"oss00\",role=\"oss\",device=\"md0\"} 1600",
        "pvfs_disk_util_percent{node=\"oss00\",role=\"oss\",device=\"md0\"} 50",
        "pvfs_network_rxkb_per_second{node=\"oss00\",role=\"oss\",device=\"eth0\"} 1024",
        "pvfs_cpu_percent{node=\"oss00\",role=\"oss\",mode=\"usr\"} 50",
        "# TYPE node_disk_read_bytes_total counter",
    ] {
        assert!(text.contains(want), "missing {want}");
    }
    assert!(!text.contains("# EOF"));
    check_grammar(&text);
}

#[test]
fn openmetrics_names_counter_families_without_total_and_ends_with_eof() {
    let text = render(&view(), true);
    assert!(text.contains("# TYPE node_disk_read_bytes counter\n"));
    assert!(text.contains("node_disk_read_bytes_total{"));
    assert!(text.ends_with("# EOF\n"));
    check_grammar(text.trim_end_matches("# EOF\n"));
}

/// Every line is HELP, TYPE, or `name{k="v",…} value`; each family's samples are contiguous
/// and follow its TYPE; no family appears twice.
fn check_grammar(text: &str) {
    let mut families = std::collections::HashSet::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            current = rest.split(' ').next().unwrap().to_owned();
            assert!(families.insert(current.clone()), "family {current} twice");
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        if let Some((name, value)) = line.split_once(' ')
            && !name.contains('{')
        {
            assert!(name.starts_with(&current) && value.parse::<f64>().is_ok(), "{line}");
            continue;
        }
        let (name, rest) = line.split_once('{').unwrap_or_else(|| panic!("bad line {line}"));
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'), "{line}");
        assert!(name.starts_with(&current), "{name} outside its family {current}");
        let (labels, value) = rest.rsplit_once("} ").unwrap_or_else(|| panic!("bad line {line}"));
        assert!(labels.split(',').all(|l| l.contains("=\"") && l.ends_with('"')), "{line}");
        assert!(value.parse::<f64>().is_ok() || value == "NaN" || value.ends_with("Inf"), "{line}");
    }
}

#[test]
fn ingest_delays_form_a_prometheus_histogram() {
    let mut view = view();
    for ms in [1.0, 4.0, 4.0, 12.0, 600.0] {
        view.delays.observe(ms / 1000.0);
    }
    let text = render(&view, false);
    assert!(text.contains("# TYPE pvfs_ingest_delay_seconds histogram"));
    assert!(text.contains("pvfs_ingest_delay_seconds_bucket{le=\"0.001\"} 1\n"));
    assert!(text.contains("pvfs_ingest_delay_seconds_bucket{le=\"0.005\"} 3\n"));
    assert!(text.contains("pvfs_ingest_delay_seconds_bucket{le=\"0.015\"} 4\n"));
    assert!(text.contains("pvfs_ingest_delay_seconds_bucket{le=\"+Inf\"} 5\n"));
    assert!(text.contains("pvfs_ingest_delay_seconds_count 5\n"));
    check_grammar(&text);
}

#[test]
fn rates_only_between_consecutive_samples_of_one_agent_process() {
    let mut view = view();
    assert!(view.nodes["oss00"].rates().is_some());
    // A gap: seq 2 → 4. The newest is shown, but there are no rates until the next one.
    view.apply(StreamEvent::Sample {
        node: "oss00".into(),
        stamped: stamped(4, 2000, 7_000_000),
        processes: Vec::new(),
    });
    assert_eq!(view.nodes["oss00"].last.as_ref().unwrap().seq, 4);
    assert!(view.nodes["oss00"].rates().is_none());
    assert!(!render(&view, false).contains("pvfs_disk_r_per_second{node=\"oss00\""));
    view.apply(StreamEvent::Sample {
        node: "oss00".into(),
        stamped: stamped(5, 2100, 7_000_000),
        processes: Vec::new(),
    });
    assert_eq!(view.nodes["oss00"].rates().unwrap().disks["md0"].r_s, 100.0);
    // A restarted agent (new epoch) starts a new baseline.
    let mut restarted = stamped(6, 2200, 7_000_000);
    restarted.epoch = 10;
    view.apply(StreamEvent::Sample { node: "oss00".into(), stamped: restarted, processes: Vec::new() });
    assert!(view.nodes["oss00"].rates().is_none());
}

#[test]
fn the_first_device_of_each_name_is_kept() {
    for devices in [3, 40] {
        let mut view = view();
        let mut sample = stamped(3, 1500, 5_000_000);
        let disk = sample.sample.disks[0].clone();
        sample.sample.disks = (0..devices)
            .map(|i| DiskCounters { name: format!("d{}", i % 2), rd_ios: i, ..disk.clone() })
            .collect();
        view.apply(StreamEvent::Sample { node: "oss00".into(), stamped: sample, processes: Vec::new() });
        let kept = &view.nodes["oss00"].last.as_ref().unwrap().sample.disks;
        let kept: Vec<(&str, u64)> = kept.iter().map(|d| (d.name.as_str(), d.rd_ios)).collect();
        assert_eq!(kept, [("d0", 0), ("d1", 1)], "{devices} devices");
    }
}

#[test]
fn the_exposition_in_pieces_is_the_whole_one_and_stops_when_told() {
    let view = view();
    for openmetrics in [false, true] {
        let mut pieces = Vec::new();
        render_chunks(&view, openmetrics, 1, |piece| {
            pieces.push(piece);
            true
        });
        assert!(pieces.len() > 10, "one piece per family");
        assert_eq!(pieces.concat(), render(&view, openmetrics));
    }
    let mut pieces = 0;
    render_chunks(&view, false, 1, |_| {
        pieces += 1;
        pieces < 3
    });
    assert_eq!(pieces, 3, "nothing more after the scraper went away");
}

/// A series of the text format: its name, its labels sorted, its value.
type Series = (String, Vec<(String, String)>, String);

/// The series of an exposition, without `# ` lines; `drop` labels left out.
fn series(text: &str, drop: &[&str]) -> Vec<Series> {
    text.lines()
        .filter(|l| l.starts_with("lustre_"))
        .map(|line| {
            let (head, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) =
                head.split_once('{').map_or((head, ""), |(n, l)| (n, l.trim_end_matches('}')));
            let mut labels: Vec<(String, String)> = labels
                .split("\",")
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let (k, v) = l.split_once("=\"").unwrap();
                    (k.to_owned(), v.trim_end_matches('"').to_owned())
                })
                .filter(|(k, _)| !drop.contains(&k.as_str()))
                .collect();
            labels.sort();
            (name.to_owned(), labels, value.to_owned())
        })
        .collect()
}

/// The same `lctl get_param` output read by pvfs and by lustrefs-exporter 0.12.6: every series
/// it printed in the families pvfs exports is in pvfs's exposition with the same name, labels
/// (beside pvfs's node and role) and value, and pvfs prints none of those families' series it
/// did not. Its help and types too, but OpenMetrics' `unknown` for its counters without
/// `_total`.
#[test]
fn lustre_targets_are_named_as_lustrefs_exporter_names_them() {
    let families = [
        "lustre_health_healthy",
        "lustre_read_samples_total",
        "lustre_read_minimum_size_bytes",
        "lustre_read_maximum_size_bytes",
        "lustre_read_bytes_total",
        "lustre_write_samples_total",
        "lustre_write_minimum_size_bytes",
        "lustre_write_maximum_size_bytes",
        "lustre_write_bytes_total",
        "lustre_stats_total",
        "lustre_client_stats",
        "lustre_available_kilobytes",
        "lustre_capacity_kilobytes",
        "lustre_free_kilobytes",
        "lustre_inodes_free",
        "lustre_inodes_maximum",
        "lustre_exports_total",
        "lustre_lock_count_total",
        "lustre_lock_timeout_total",
        "lustre_lock_contended_total",
        "lustre_lock_contention_seconds_total",
        // Each OSD's brw_stats.
        "lustre_disk_io_total",
        "lustre_disk_io",
        "lustre_pages_per_bulk_rw_total",
        "lustre_discontiguous_pages_total",
        "lustre_dio_frags",
        "lustre_discontiguous_blocks_total",
        "lustre_io_time_milliseconds_total",
        "lustre_block_maps_milliseconds_total",
        // Each target's exports (every one, from an lctl output).
        "lustre_client_export_stats",
        "lustre_client_export_milliseconds_total",
        "lustre_client_export_bytes_total",
    ];
    let testdata = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/lustrefs-exporter");
    let inputs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../pvfs-metrics/testdata/lustre");
    let mut compared = 0;
    for (input, theirs) in [
        ("valid_valid.txt", "valid.txt.histsnap"),
        ("valid_lustre-2-14-0_client_llite_client.txt", "llite_client.txt.histsnap"),
        ("valid_lustre-2.14.0_ddn133_2.14.0_ddn133_exports.txt", "ddn133_exports.txt.histsnap"),
    ] {
        let lctl = std::fs::read_to_string(inputs.join(input)).unwrap();
        let snapshot = pvfs_metrics::lustre::node::from_lctl(&lctl);
        assert!(snapshot.errors.is_empty(), "{:?}", snapshot.errors);
        let (view, ours) = lustre_view(snapshot);
        let theirs_text = std::fs::read_to_string(testdata.join(theirs)).unwrap();
        let theirs_text: String = theirs_text.lines().skip(4).map(|l| format!("{l}\n")).collect();
        let pick = |all: Vec<Series>| -> Vec<Series> {
            let mut picked: Vec<Series> =
                all.into_iter().filter(|(n, _, _)| families.contains(&n.as_str())).collect();
            picked.sort();
            picked
        };
        let ours_series = pick(series(&ours, &["node", "role"]));
        let theirs_series = pick(series(&theirs_text, &[]));
        assert!(!theirs_series.is_empty(), "{theirs}");
        // Said as the series each side has alone: a thousand series do not read as a diff.
        let only_ours: Vec<&Series> = ours_series.iter().filter(|s| !theirs_series.contains(s)).collect();
        let only_theirs: Vec<&Series> = theirs_series.iter().filter(|s| !ours_series.contains(s)).collect();
        assert!(
            only_ours.is_empty() && only_theirs.is_empty(),
            "{input}: pvfs's alone {only_ours:#?}\nlustrefs-exporter's alone {only_theirs:#?}"
        );
        assert_eq!(ours_series.len(), theirs_series.len(), "{input}: a series twice");
        compared += theirs_series.len();
        // Their help and type lines for those families, word for word.
        for line in theirs_text.lines().filter(|l| l.starts_with("# ")) {
            let family = line.split(' ').nth(2).unwrap_or_default();
            if families.contains(&family) {
                assert!(ours.contains(&format!("{line}\n")), "{line}");
            }
        }
        // Every node's series carries its node and role.
        assert!(
            ours.contains(r#"lustre_health_healthy{node="oss00",role="oss"} "#)
                || !lctl.contains("health_check")
        );
        let openmetrics = render(&view, true);
        assert!(!openmetrics.contains("# TYPE lustre_client_stats counter"), "no counter without _total");
        if input.contains("client") {
            assert!(openmetrics.contains("# TYPE lustre_client_stats unknown\n"), "{openmetrics}");
        } else {
            assert!(openmetrics.contains("# TYPE lustre_write_bytes counter\n"));
            assert!(openmetrics.contains("# TYPE lustre_write_maximum_size_bytes unknown\n"));
        }
    }
    // The exports' 816 series among them.
    assert!(compared >= 900, "{compared} series compared");
    // A cluster without Lustre has none of these families.
    assert!(!render(&view(), false).contains("lustre_"));
}

/// A view of one node, oss00, whose second holds `snapshot`, and its exposition (its grammar
/// checked).
fn lustre_view(snapshot: pvfs_metrics::lustre::node::Snapshot) -> (ClusterView, String) {
    let mut view = view();
    let mut sample = stamped(3, 1500, 6_000_000);
    sample.sample.fs = Some(Arc::new(pvfs_metrics::sample::FsSecond {
        lustre: Some(snapshot),
        bricks: Vec::new(),
        beegfs: Vec::new(),
        beegfs_targets: Vec::new(),
    }));
    view.apply(StreamEvent::Sample { node: "oss00".into(), stamped: sample, processes: Vec::new() });
    let text = render(&view, false);
    check_grammar(&text);
    (view, text)
}

/// Lustre 2.16's I/O time of each I/O size goes where lustrefs-exporter 0.12.6 puts it: into
/// `lustre_io_time_milliseconds_total`, its size in bytes as `opsize` (its brw_stats.rs).
#[test]
fn an_io_sizes_io_time_is_exported_with_its_opsize() {
    let brw = pvfs_metrics::lustre::parse_brw_stats(
        "I/O time (1/1000s)     ios   % cum % |  ios         % cum %\n1:  5 100 100 | 0 0 0\n\n\
         4K I/O time (1/1000s)     ios   % cum % |  ios         % cum %\n1:  3 75 75 | 1 100 100\n",
    )
    .unwrap();
    let snapshot = pvfs_metrics::lustre::node::Snapshot {
        targets: vec![pvfs_metrics::lustre::node::Target {
            kind: Some(pvfs_metrics::lustre::node::Kind::Ost),
            name: "fs-OST0000".into(),
            brw: brw.histograms,
            ..Default::default()
        }],
        ..Default::default()
    };
    let (_, text) = lustre_view(snapshot);
    let series: Vec<&str> =
        text.lines().filter(|l| l.starts_with("lustre_io_time_milliseconds_total{")).collect();
    assert_eq!(
        series,
        [
            r#"lustre_io_time_milliseconds_total{node="oss00",role="oss",component="ost",operation="read",target="fs-OST0000",size="1"} 5"#,
            r#"lustre_io_time_milliseconds_total{node="oss00",role="oss",component="ost",operation="write",target="fs-OST0000",size="1"} 0"#,
            r#"lustre_io_time_milliseconds_total{node="oss00",role="oss",component="ost",operation="read",opsize="4096",target="fs-OST0000",size="1"} 3"#,
            r#"lustre_io_time_milliseconds_total{node="oss00",role="oss",component="ost",operation="write",opsize="4096",target="fs-OST0000",size="1"} 1"#,
        ],
        "{text}"
    );
}

/// LNet's counters under lustrefs-exporter 0.12.6's names and help (its `lnet.rs`, which its
/// snapshots above do not exercise: they come from `lctl get_param`, without `lnetctl`), read
/// from a real node's LNet stats file; OpenMetrics names the families without `_total`.
#[test]
fn lnet_traffic_is_named_as_lustrefs_exporter_names_it() {
    let real = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../pvfs-metrics/testdata/lustre/lnet_stats_proc.txt"),
    )
    .unwrap();
    let snapshot = pvfs_metrics::lustre::node::Snapshot {
        lnet: Some(pvfs_metrics::lustre::parse_lnet_proc_stats(&real).unwrap()),
        ..Default::default()
    };
    let (view, text) = lustre_view(snapshot);
    for (name, help, value) in [
        ("lustre_send_count_total", "Total number of messages that have been sent", "195805494"),
        ("lustre_receive_count_total", "Total number of messages that have been received", "204125982"),
        ("lustre_drop_count_total", "Total number of messages that have been dropped", "16957"),
        ("lustre_send_bytes_total", "Total number of bytes that have been sent", "216828482753"),
        ("lustre_receive_bytes_total", "Total number of bytes that have been received", "708781379083"),
        ("lustre_drop_bytes_total", "Total number of bytes that have been dropped", "3268048"),
    ] {
        assert!(text.contains(&format!("# HELP {name} {help}\n# TYPE {name} counter\n")), "{name}:\n{text}");
        assert!(
            text.contains(&format!("{name}{{node=\"oss00\",role=\"oss\"}} {value}\n")),
            "{name}:\n{text}"
        );
    }
    let openmetrics = render(&view, true);
    assert!(openmetrics.contains("# TYPE lustre_send_bytes counter\n"), "{openmetrics}");
    // No LNet, no LNet families (the node's targets may still be there).
    assert!(!render(&self::view(), false).contains("lustre_send"));
}

/// A GlusterFS server's bricks, one up and one down: up or not, and the kernel's counters of
/// the one running, by node, role, volume and brick; none on a cluster without bricks.
#[test]
fn gluster_bricks_by_node_volume_and_brick() {
    use pvfs_metrics::gluster::LocalBrick;
    let mut cluster = view();
    let mut sample = stamped(3, 1500, 6_000_000);
    let up = LocalBrick {
        volume: "gv0".into(),
        path: "/bricks/b1".into(),
        pid: Some(4893),
        port: Some(49152),
        rchar: 22160428,
        wchar: 22213982,
        read_bytes: 24576,
        write_bytes: 23179264,
    };
    let down = LocalBrick { volume: "gv0".into(), path: "/bricks/b2".into(), ..LocalBrick::default() };
    sample.sample.fs = Some(Arc::new(pvfs_metrics::sample::FsSecond {
        lustre: None,
        bricks: vec![up, down],
        beegfs: Vec::new(),
        beegfs_targets: Vec::new(),
    }));
    cluster.apply(StreamEvent::Sample { node: "oss00".into(), stamped: sample, processes: Vec::new() });
    let text = render(&cluster, false);
    check_grammar(&text);
    let labels = |brick: &str| format!(r#"{{node="oss00",role="oss",volume="gv0",brick="{brick}"}}"#);
    for line in [
        format!("pvfs_gluster_brick_up{} 1", labels("/bricks/b1")),
        format!("pvfs_gluster_brick_up{} 0", labels("/bricks/b2")),
        format!("pvfs_gluster_brick_written_bytes_total{} 23179264", labels("/bricks/b1")),
        format!("pvfs_gluster_brick_read_bytes_total{} 24576", labels("/bricks/b1")),
        format!("pvfs_gluster_brick_syscall_read_bytes_total{} 22160428", labels("/bricks/b1")),
        format!("pvfs_gluster_brick_syscall_written_bytes_total{} 22213982", labels("/bricks/b1")),
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
    }
    assert!(
        !text.contains(&format!("pvfs_gluster_brick_written_bytes_total{}", labels("/bricks/b2"))),
        "a brick down has no counters"
    );
    check_grammar(&render(&cluster, true).replace("# EOF\n", ""));
    assert!(!render(&view(), false).contains("pvfs_gluster"));
}

/// A BeeGFS storage server's newest second as gauges, by node, role, kind and numeric ID;
/// nothing of BeeGFS where no node has a server.
#[test]
fn beegfs_servers_by_node_kind_and_id() {
    let mut cluster = view();
    let mut sample = stamped(3, 1500, 6_000_000);
    let server = pvfs_metrics::beegfs::ServerSecond {
        kind: "storage".into(),
        num_id: 3,
        time: 1_700_000_000,
        requests: 880,
        queued_requests: 3,
        busy_workers: 12,
        write_bytes: 104_857_600,
        read_bytes: 4096,
    };
    let target = |id: u32, reachability: &str, consistency: &str| pvfs_metrics::beegfs::TargetSecond {
        consistency: consistency.into(),
        free_bytes: 3 << 30,
        free_inodes: 1000,
        id,
        kind: "storage".into(),
        path: format!("/data/t{id}"),
        reachability: reachability.into(),
        total_bytes: 8 << 30,
        total_inodes: 5000,
    };
    sample.sample.fs = Some(Arc::new(pvfs_metrics::sample::FsSecond {
        lustre: None,
        bricks: Vec::new(),
        beegfs: vec![server],
        beegfs_targets: vec![target(101, "probably-offline", "needs-resync"), target(102, "", "")],
    }));
    cluster.apply(StreamEvent::Sample { node: "oss00".into(), stamped: sample, processes: Vec::new() });
    let text = render(&cluster, false);
    check_grammar(&text);
    let t101 = r#"node="oss00",role="oss",kind="storage",target_id="101",path="/data/t101""#;
    let t102 = r#"node="oss00",role="oss",kind="storage",target_id="102",path="/data/t102""#;
    for line in [
        format!("pvfs_beegfs_target_capacity_bytes{{{t101}}} 8589934592"),
        format!("pvfs_beegfs_target_free_bytes{{{t101}}} 3221225472"),
        format!("pvfs_beegfs_target_inodes{{{t102}}} 5000"),
        format!("pvfs_beegfs_target_free_inodes{{{t102}}} 1000"),
        format!("pvfs_beegfs_target_reachability{{{t101},state=\"online\"}} 0"),
        format!("pvfs_beegfs_target_reachability{{{t101},state=\"probably-offline\"}} 1"),
        format!("pvfs_beegfs_target_reachability{{{t101},state=\"offline\"}} 0"),
        format!("pvfs_beegfs_target_consistency{{{t101},state=\"needs-resync\"}} 1"),
        format!("pvfs_beegfs_target_consistency{{{t101},state=\"good\"}} 0"),
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
    }
    assert!(!text.contains(&format!("{{{t102},state=")), "a state not known is not exported:\n{text}");
    let labels = r#"{node="oss00",role="oss",kind="storage",num_id="3"}"#;
    for line in [
        format!("pvfs_beegfs_requests{labels} 880"),
        format!("pvfs_beegfs_queued_requests{labels} 3"),
        format!("pvfs_beegfs_busy_workers{labels} 12"),
        format!("pvfs_beegfs_written_bytes{labels} 104857600"),
        format!("pvfs_beegfs_read_bytes{labels} 4096"),
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
    }
    check_grammar(&render(&cluster, true).replace("# EOF\n", ""));
    assert!(!render(&view(), false).contains("pvfs_beegfs"));
}
