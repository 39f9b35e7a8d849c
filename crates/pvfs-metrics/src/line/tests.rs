use super::*;
use crate::rates::{CpuPercent, DiskRates, LoadStats, MemStats, NicRates};
use serde_json::Value;

fn fixture(name: &str) -> Vec<String> {
    let path = format!("{}/testdata/line/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().map(str::to_owned).collect()
}

/// Lines that main wrote before the line moved here (a benchmark's record with processes and a
/// down line, `pvfs-agent metrics --json`, `pvfsctl top --json --processes`) read back and are
/// written again byte for byte: keys, their order, and every number's form.
#[test]
fn lines_written_before_read_back_and_write_the_same_bytes() {
    for name in ["record.jsonl", "agent-metrics.jsonl", "top.jsonl"] {
        let lines = fixture(name);
        assert!(lines.len() >= 2, "{name}");
        for line in lines {
            let read: MetricsLine =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{name}: {e}: {line}"));
            assert_eq!(serde_json::to_string(&read).unwrap(), line, "{name}");
        }
    }
    // Each kind of line is among them.
    let record: Vec<MetricsLine> =
        fixture("record.jsonl").iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(matches!(&record[0], MetricsLine::Second(s) if s.processes.is_none() && s.node.is_some()));
    assert!(
        matches!(&record[1], MetricsLine::Second(s) if s.processes.as_ref().is_some_and(|p| p.iter().any(|p| p.kernel)))
    );
    assert!(matches!(record.last(), Some(MetricsLine::Down(_))));
    let top: SecondLine = serde_json::from_str(&fixture("top.jsonl")[0]).unwrap();
    assert_eq!((top.node.as_deref(), top.seq, top.processes), (Some("n1"), Some(1), Some(vec![])));
}

/// What a reader gets by column is the value the line spells under that column's name.
#[test]
fn columns_read_by_enum_are_the_values_under_their_names() {
    let text = &fixture("record.jsonl")[1];
    let json: Value = serde_json::from_str(text).unwrap();
    let line: SecondLine = serde_json::from_str(text).unwrap();
    let number = |v: &Value| Some(v.as_f64().unwrap());
    for (device, disk) in &line.disks {
        for column in DiskColumn::ALL {
            assert_eq!(disk.get(column), number(&json["disks"][device][column.name()]), "{device} {column}");
        }
    }
    for (nic, columns) in &line.nics {
        for column in NicColumn::ALL {
            assert_eq!(columns.get(column), number(&json["nics"][nic][column.name()]), "{nic} {column}");
        }
    }
    for column in CpuColumn::ALL {
        assert_eq!(line.cpu.get(column), number(&json["cpu"][column.name()]), "{column}");
    }
    for column in MemColumn::ALL {
        assert_eq!(line.mem.get(column), number(&json["mem"][column.name()]), "{column}");
    }
    assert_eq!(line.tasks.get(LoadColumn::RunqSz), number(&json["tasks"]["runq-sz"]));
    assert_eq!(line.tasks.get(LoadColumn::PlistSz), number(&json["tasks"]["plist-sz"]));
    assert_eq!(line.tasks.get(LoadColumn::Ldavg1), None, "load averages are `load`");
    let (start, end) = line.span().unwrap();
    assert_eq!(end, 1_795_811_202.427); // 2026-11-27T20:26:42.427Z
    assert!((end - start - line.interval_s).abs() < 1e-6, "{start} {end}");
}

/// The names, in each tool's order, exactly as iostat -x, sar -n DEV, sar -u ALL, sar -r and
/// sar -q print them (and as the rates structs' serde renames spelled them before).
#[test]
fn every_column_has_its_tools_name() {
    let names = |names: &[&'static str]| names.join(" ");
    assert_eq!(
        names(&DiskColumn::ALL.map(DiskColumn::name)),
        "r/s rkB/s rrqm/s %rrqm r_await rareq-sz w/s wkB/s wrqm/s %wrqm w_await wareq-sz d/s dkB/s \
         drqm/s %drqm d_await dareq-sz f/s f_await aqu-sz %util"
    );
    assert_eq!(
        names(&NicColumn::ALL.map(NicColumn::name)),
        "rxpck/s txpck/s rxkB/s txkB/s rxcmp/s txcmp/s rxmcst/s %ifutil"
    );
    assert_eq!(
        names(&CpuColumn::ALL.map(CpuColumn::name)),
        "%usr %nice %sys %iowait %steal %irq %soft %guest %gnice %idle"
    );
    assert_eq!(
        names(&MemColumn::ALL.map(MemColumn::name)),
        "kbmemfree kbavail kbmemused %memused kbbuffers kbcached kbcommit %commit kbactive kbinact kbdirty"
    );
    assert_eq!(names(&LoadColumn::ALL.map(LoadColumn::name)), "runq-sz plist-sz ldavg-1 ldavg-5 ldavg-15");
    for column in DiskColumn::ALL {
        assert_eq!(DiskColumn::from_name(column.name()), Some(column));
    }
    assert_eq!(DiskColumn::from_name("util"), None);
}

/// Every group writes its keys in byte order, as `serde_json::Value`'s sorted maps did, and
/// every column of its rates struct, counts as integers.
#[test]
fn every_group_writes_its_columns_sorted() {
    fn sorted_as_value(value: &impl Serialize) -> String {
        let direct = serde_json::to_string(value).unwrap();
        assert_eq!(direct, serde_json::to_value(value).unwrap().to_string());
        direct
    }
    let disk = sorted_as_value(&Columns::of(&DiskRates { util: 1.5, ..Default::default() }));
    assert_eq!(disk.matches(':').count(), DiskColumn::COUNT);
    assert_eq!(sorted_as_value(&Columns::of(&NicRates::default())).matches(':').count(), NicColumn::COUNT);
    assert_eq!(sorted_as_value(&Columns::of(&CpuPercent::default())).matches(':').count(), CpuColumn::COUNT);
    let mem = sorted_as_value(&Columns::of(&MemStats { kbmemfree: 7, ..Default::default() }));
    assert!(mem.contains(r#""%commit":0.0,"%memused":0.0,"kbactive":0,"#), "{mem}");
    assert!(mem.contains(r#""kbmemfree":7,"#), "{mem}");
    sorted_as_value(&Columns::of(&LoadStats::default()));
    sorted_as_value(&ProcessLine { kernel: true, ..Default::default() });
    let full = SecondLine {
        node: Some("n1".into()),
        seq: Some(3),
        processes: Some(vec![ProcessLine::default()]),
        disks: [("sda".into(), Columns::of(&DiskRates::default()))].into(),
        ..Default::default()
    };
    sorted_as_value(&full);
}

/// A line from another version still reads: a column it lacks is absent and stays absent when
/// written again (with every number in its form), a column this version does not know is
/// skipped, and a `null` (NaN, as serde_json writes it) is no value and is written `null`.
#[test]
fn a_line_missing_columns_or_with_unknown_ones_reads() {
    let text = r#"{"cpu":{"%usr":1.5,"%vcpu":3.0},"disks":{"sda":{"%util":null,"r/s":2}},"load":[0.5,0.25,0.0],"mem":{"kbmemfree":12},"nics":{"eth0":{"rxdrop/s":1.0,"rxkB/s":2.0}},"tasks":{"runq-sz":1},"time":"1970-01-01T00:16:51.000Z"}"#;
    let MetricsLine::Second(line) = serde_json::from_str::<MetricsLine>(text).unwrap() else { panic!() };
    assert_eq!((line.cpu.get(CpuColumn::Usr), line.cpu.get(CpuColumn::Idle)), (Some(1.5), None));
    assert_eq!(line.nics["eth0"].get(NicColumn::RxkBPerS), Some(2.0));
    assert_eq!(line.mem.get(MemColumn::Kbmemfree), Some(12.0));
    assert_eq!(line.tasks.get(LoadColumn::PlistSz), None);
    assert_eq!(line.disks["sda"].get(DiskColumn::Util), None);
    assert_eq!(line.disks["sda"].get(DiskColumn::RPerS), Some(2.0));
    assert_eq!(line.interval_s, 0.0);
    // Written again: the unknown columns gone, the missing ones still missing (`interval_s`,
    // not a column, has its default), `2` still an integer and `null` still `null`.
    assert_eq!(
        serde_json::to_string(&line).unwrap(),
        r#"{"cpu":{"%usr":1.5},"disks":{"sda":{"%util":null,"r/s":2}},"interval_s":0.0,"load":[0.5,0.25,0.0],"mem":{"kbmemfree":12},"nics":{"eth0":{"rxkB/s":2.0}},"tasks":{"runq-sz":1},"time":"1970-01-01T00:16:51.000Z"}"#
    );
    // NaN is written `null`.
    let nan = Columns::of(&DiskRates { util: f64::NAN, ..Default::default() });
    assert!(serde_json::to_string(&nan).unwrap().contains(r#""%util":null"#));
    // A line that is not one is refused, not read as zeros.
    assert!(serde_json::from_str::<MetricsLine>(r#"{"cpu":{"%usr":"busy"}}"#).is_err());
}
/// A second's rates make the line the agent, `top` and the record write: only the devices
/// shown, every interface, time to the millisecond.
#[test]
fn a_line_of_rates_shows_only_the_devices_asked_for() {
    let rates = Rates {
        time_unix_ns: 1_700_000_000_123_456_789,
        interval_s: 1.0002,
        disks: [
            ("sda".into(), DiskRates { r_s: 12.5, ..Default::default() }),
            ("sdb".into(), DiskRates::default()),
        ]
        .into(),
        nics: [("eth0".into(), NicRates::default())].into(),
        cpu: CpuPercent::default(),
        mem: MemStats::default(),
        load: LoadStats { runq_sz: 2, plist_sz: 300, ldavg_1: 0.5, ldavg_5: 0.25, ldavg_15: 0.125 },
        lustre: vec![TargetRates {
            component: "ost".into(),
            exports: Some(4),
            name: "fs-OST0000".into(),
            ops_s: 100.0,
            write_bytes_s: 419_430_400.0,
            space_used_pct: Some(2.5),
            ..Default::default()
        }],
        bricks: vec![BrickRates {
            path: "/bricks/b1".into(),
            up: true,
            volume: "gv0".into(),
            write_bytes_s: 1048576.0,
            ..Default::default()
        }],
        lnet: Some(LnetRates { send_bytes_s: 2048.0, msgs_alloc: 3, ..Default::default() }),
        beegfs: vec![crate::beegfs::ServerSecond {
            kind: "storage".into(),
            num_id: 3,
            time: 1_700_000_000,
            requests: 40,
            write_bytes: 4096,
            ..Default::default()
        }],
        beegfs_targets: vec![crate::beegfs::TargetSecond {
            consistency: "good".into(),
            free_bytes: 1024,
            free_inodes: 7,
            id: 101,
            kind: "storage".into(),
            path: "/data/t1".into(),
            reachability: "online".into(),
            total_bytes: 4096,
            total_inodes: 9,
        }],
    };
    let line = SecondLine::of(&rates, &["sda".to_owned()]);
    assert_eq!(line.disks.keys().collect::<Vec<_>>(), ["sda"]);
    assert_eq!(line.time, "2023-11-14T22:13:20.123Z");
    assert_eq!(line.disks["sda"].get(DiskColumn::RPerS), Some(12.5));
    let json = serde_json::to_string(&line).unwrap();
    assert!(json.contains(r#""load":[0.5,0.25,0.125],"#), "{json}");
    assert!(json.contains(r#""tasks":{"plist-sz":300,"runq-sz":2},"#), "{json}");
    // A Lustre server's targets, between `load` and `mem` as the keys sort, each target's keys
    // sorted too, what it does not have left out; and read back the same.
    assert!(
        json.contains(concat!(
            r#""load":[0.5,0.25,0.125],"lustre":[{"component":"ost","exports":4,"name":"fs-OST0000","#,
            r#""ops_s":100.0,"read_bytes_s":0.0,"space_used_pct":2.5,"write_bytes_s":419430400.0}],"mem":"#
        )),
        "{json}"
    );
    // LNet's second just before `load`, as `lnet` sorts.
    assert!(
        json.contains(concat!(
            r#""lnet":{"drop_bytes_s":0.0,"drop_msgs_s":0.0,"msgs_alloc":3,"recv_bytes_s":0.0,"#,
            r#""recv_msgs_s":0.0,"send_bytes_s":2048.0,"send_msgs_s":0.0},"load":"#
        )),
        "{json}"
    );
    // A BeeGFS server's second comes first of all, as `beegfs` sorts, its keys sorted; then its
    // targets; then a GlusterFS server's bricks.
    assert!(
        json.starts_with(concat!(
            r#"{"beegfs":[{"busy_workers":0,"kind":"storage","num_id":3,"queued_requests":0,"read_bytes":0,"#,
            r#""requests":40,"time":1700000000,"write_bytes":4096}],"#,
            r#""beegfs_targets":[{"consistency":"good","free_bytes":1024,"free_inodes":7,"id":101,"#,
            r#""kind":"storage","path":"/data/t1","reachability":"online","total_bytes":4096,"total_inodes":9}],"#,
            r#""bricks":[{"path":"/bricks/b1","rchar_s":0.0,"read_bytes_s":0.0,"up":true,"volume":"gv0","#,
            r#""wchar_s":0.0,"write_bytes_s":1048576.0}],"cpu":"#
        )),
        "{json}"
    );
    assert_eq!(serde_json::from_str::<SecondLine>(&json).unwrap(), line);
}
