//! Rates as the CLI's tables show them, iostat/sar-style (their JSON is
//! `pvfs_metrics::line::SecondLine`). Shared by `pvfs-agent metrics` (this machine) and
//! `pvfsctl top` (every node).

use pvfs_metrics::gluster::BrickRates;
use pvfs_metrics::line::{ProcessLine, time_text};
use pvfs_metrics::lustre::node::TargetRates;
use pvfs_metrics::rates::{CpuColumn, DiskColumn, LoadColumn, MemColumn, NicColumn, Rates};

// Every name below came from an agent (its kernel's, its file systems', its processes'):
// each goes through `output::name`, so that none writes to the terminal or makes a row.
use crate::output::name;

/// iostat/sar-style tables: two decimals, right-aligned, one block per interval.
pub(crate) fn table(r: &Rates, devices: &[String]) -> String {
    let mut out = format!("{}  ({:.2} s)\n", time_text(r.time_unix_ns), r.interval_s);
    let row = |label: &str, values: &[f64]| {
        let mut line = format!("{label:<12}");
        for v in values {
            line += &format!(" {v:>9.2}");
        }
        line + "\n"
    };
    let header = |label: &str, columns: &[&str]| {
        let mut line = format!("{label:<12}");
        for c in columns {
            line += &format!(" {c:>9}");
        }
        line + "\n"
    };
    out += &header("Device", &DiskColumn::ALL.map(DiskColumn::name));
    for (device, d) in r.disks.iter().filter(|(device, _)| devices.contains(device)) {
        out += &row(&name(device), &DiskColumn::ALL.map(|c| d.get(c)));
    }
    out += &header("IFACE", &NicColumn::ALL.map(NicColumn::name));
    for (iface, n) in &r.nics {
        out += &row(&name(iface), &NicColumn::ALL.map(|c| n.get(c)));
    }
    out += &header("CPU", &CpuColumn::ALL.map(CpuColumn::name));
    out += &row("all", &CpuColumn::ALL.map(|c| r.cpu.get(c)));
    // sar -r's columns but kbactive and kbinact, and sar -q's, each `name value`: counts
    // whole, percentages and load averages to two places.
    let (m, l) = (&r.mem, &r.load);
    let count = |column: &dyn std::fmt::Display, v: u64| format!(" {column} {v}");
    let real = |column: &dyn std::fmt::Display, v: f64| format!(" {column} {v:.2}");
    out += "mem:";
    out += &count(&MemColumn::Kbmemfree, m.kbmemfree);
    out += &count(&MemColumn::Kbavail, m.kbavail);
    out += &count(&MemColumn::Kbmemused, m.kbmemused);
    out += &real(&MemColumn::MemusedPct, m.memused_pct);
    out += &count(&MemColumn::Kbbuffers, m.kbbuffers);
    out += &count(&MemColumn::Kbcached, m.kbcached);
    out += &count(&MemColumn::Kbcommit, m.kbcommit);
    out += &real(&MemColumn::CommitPct, m.commit_pct);
    out += &count(&MemColumn::Kbdirty, m.kbdirty);
    out += "\nload:";
    out += &count(&LoadColumn::RunqSz, l.runq_sz.into());
    out += &count(&LoadColumn::PlistSz, l.plist_sz.into());
    out += &real(&LoadColumn::Ldavg1, l.ldavg_1);
    out += &real(&LoadColumn::Ldavg5, l.ldavg_5);
    out += &real(&LoadColumn::Ldavg15, l.ldavg_15);
    out += "\n";
    if let Some(lnet) = &r.lnet {
        out += &lnet_line(lnet);
    }
    if !r.lustre.is_empty() {
        out += &target_table(&r.lustre);
    }
    if !r.bricks.is_empty() {
        out += &brick_table(&r.bricks);
    }
    out += &r.beegfs.iter().map(beegfs_line).collect::<String>();
    out += &r.beegfs_targets.iter().map(beegfs_target_line).collect::<String>();
    out + "\n"
}

/// A BeeGFS target of the node: its space used and free as its server counts it (what
/// `beegfs-df` shows; GiB are 2^30 bytes, as beegfs-df prints them), its inodes, and its state
/// as the management daemon last said it (left out while not known).
pub(crate) fn beegfs_target_line(t: &pvfs_metrics::beegfs::TargetSecond) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    let used_pct = if t.total_bytes > 0 {
        100.0 * t.total_bytes.saturating_sub(t.free_bytes) as f64 / t.total_bytes as f64
    } else {
        0.0
    };
    let state = [t.reachability.as_str(), t.consistency.as_str()]
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| format!(", {}", name(s)))
        .collect::<String>();
    format!(
        "beegfs {} target {} ({}): {used_pct:.1} % used, {:.1} of {:.1} GiB free, {} of {} inodes free{state}\n",
        name(&t.kind),
        t.id,
        name(&t.path),
        t.free_bytes as f64 / GIB,
        t.total_bytes as f64 / GIB,
        t.free_inodes,
        t.total_inodes,
    )
}

/// A BeeGFS server of the node over the second, as its own statistics count it (`beegfs-ctl
/// --serverstats`' columns): requests processed, queued and busy workers, and a storage
/// server's MB/s (10^6 bytes) written to and read from its targets.
pub(crate) fn beegfs_line(s: &pvfs_metrics::beegfs::ServerSecond) -> String {
    let disk = if s.kind == "storage" {
        format!(", write {:.1} MB/s, read {:.1} MB/s", s.write_bytes as f64 / 1e6, s.read_bytes as f64 / 1e6)
    } else {
        String::new()
    };
    format!(
        "beegfs {} {}: {} req/s, {} queued, {} busy workers{disk}\n",
        name(&s.kind),
        s.num_id,
        s.requests,
        s.queued_requests,
        s.busy_workers
    )
}

/// LNet's traffic over the second, as `lnetctl stats show` counts it: MB/s (10^6 bytes) and
/// messages a second sent and received, drops, messages in flight.
pub(crate) fn lnet_line(l: &pvfs_metrics::lustre::node::LnetRates) -> String {
    format!(
        "lnet: send {:.1} MB/s {:.0} msg/s, recv {:.1} MB/s {:.0} msg/s, drop {:.0} msg/s, in flight {}\n",
        l.send_bytes_s / 1e6,
        l.send_msgs_s,
        l.recv_bytes_s / 1e6,
        l.recv_msgs_s,
        l.drop_msgs_s,
        l.msgs_alloc
    )
}

/// A GlusterFS server's bricks over the second: each brick's process up or down, the bytes it
/// read and wrote through system calls (its clients' and its files') and to storage, MB/s of
/// 10^6 bytes.
pub(crate) fn brick_table(bricks: &[BrickRates]) -> String {
    let mut out = format!(
        "{:<12} {:<24} {:>4} {:>9} {:>9} {:>9} {:>9}\n",
        "Volume", "Brick", "Up", "rMB/s", "wMB/s", "diskrMB/s", "diskwMB/s"
    );
    for b in bricks {
        out += &format!(
            "{:<12} {:<24} {:>4} {:>9.2} {:>9.2} {:>9.2} {:>9.2}\n",
            name(&b.volume),
            name(&b.path),
            if b.up { "Y" } else { "N" },
            b.rchar_s / 1e6,
            b.wchar_s / 1e6,
            b.read_bytes_s / 1e6,
            b.write_bytes_s / 1e6
        );
    }
    out
}

/// A Lustre node's targets over the second, as LLNL's ltop lays out its OST and MDT rows:
/// MB/s read and written (10^6 bytes, as ltop), operations a second, clients connected, locks
/// granted, space and inodes in use; a recovery under way at the end of its row; under each,
/// its busiest clients by NID (from their exports' stats).
pub(crate) fn target_table(targets: &[TargetRates]) -> String {
    let mut out = format!(
        "{:<20} {:<6} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7}\n",
        "Target", "Kind", "rMB/s", "wMB/s", "IOPS", "Exports", "Locks", "%Space", "%Inodes"
    );
    let figure = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
    for t in targets {
        let count = |n: Option<u64>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
        let mut line = format!(
            "{:<20} {:<6} {:>9.2} {:>9.2} {:>9.2} {:>7} {:>7} {:>7} {:>7}",
            name(&t.name),
            name(&t.component),
            t.read_bytes_s / 1e6,
            t.write_bytes_s / 1e6,
            t.ops_s,
            count(t.exports),
            count(t.locks),
            figure(t.space_used_pct),
            figure(t.inodes_used_pct),
        );
        if let Some(recovery) = &t.recovery {
            line += &format!("  {}", name(recovery));
        }
        out += &line;
        out += "\n";
        // Which clients keep it busy: its busiest exports that moved, under it.
        for c in t.active_clients(CLIENTS_SHOWN) {
            out += &format!(
                "  {:<18} {:<6} {:>9.2} {:>9.2} {:>9.2}\n",
                name(&c.nid),
                "client",
                c.read_bytes_s / 1e6,
                c.write_bytes_s / 1e6,
                c.ops_s
            );
        }
    }
    out
}

/// Clients shown under each target, busiest first.
pub(crate) const CLIENTS_SHOWN: usize = 3;

/// A second's busiest processes as `pidstat -u -d` lays them out (kernel threads in brackets,
/// as ps shows them); a blank line after.
pub(crate) fn process_table(processes: &[ProcessLine]) -> String {
    let mut out = format!("{:>8} {:>9} {:>9} {:>9}  Command\n", "PID", "%CPU", "kB_rd/s", "kB_wr/s");
    for p in processes {
        let shown = name(&p.name);
        let shown = if p.kernel { format!("[{shown}]") } else { shown.into_owned() };
        out += &format!("{:>8} {:>9.2} {:>9.2} {:>9.2}  {shown}\n", p.pid, p.cpu, p.kb_rd_s, p.kb_wr_s);
    }
    out + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_metrics::line::SecondLine;
    use pvfs_metrics::lustre::node::ClientRates;
    use pvfs_metrics::rates::{CpuPercent, DiskRates, LoadStats, MemStats, NicRates};

    fn rates() -> Rates {
        Rates {
            time_unix_ns: 1_700_000_000_123_000_000,
            interval_s: 1.0002,
            disks: [
                ("sda".into(), DiskRates { r_s: 12.5, util: 33.333333333333336, ..Default::default() }),
                ("sdb".into(), DiskRates::default()),
            ]
            .into(),
            nics: [("eth0".into(), NicRates { rxkb_s: 0.1, ..Default::default() })].into(),
            cpu: CpuPercent { usr: 1.25, ..Default::default() },
            mem: MemStats { kbmemfree: 123456, memused_pct: 45.6, ..Default::default() },
            load: LoadStats { runq_sz: 2, plist_sz: 300, ldavg_1: 0.5, ldavg_5: 0.25, ldavg_15: 0.125 },
            lustre: Vec::new(),
            bricks: Vec::new(),
            lnet: None,
            beegfs: Vec::new(),
            beegfs_targets: Vec::new(),
        }
    }

    /// A metrics line is what the `json!` literal it once replaced printed, byte for byte: keys
    /// sorted, integers (kB counts, task counts) still integers, floats as serde_json writes
    /// them. (That implementation serialised the rates structs, which no longer are; its output
    /// for these rates is spelled out here.)
    #[test]
    fn a_second_line_is_the_old_json() {
        let old = concat!(
            r#"{"cpu":{"%gnice":0.0,"%guest":0.0,"%idle":0.0,"%iowait":0.0,"%irq":0.0,"%nice":0.0,"%soft":0.0,"%steal":0.0,"%sys":0.0,"%usr":1.25},"#,
            r#""disks":{"sda":{"%drqm":0.0,"%rrqm":0.0,"%util":33.333333333333336,"%wrqm":0.0,"aqu-sz":0.0,"d/s":0.0,"d_await":0.0,"dareq-sz":0.0,"dkB/s":0.0,"drqm/s":0.0,"f/s":0.0,"f_await":0.0,"r/s":12.5,"r_await":0.0,"rareq-sz":0.0,"rkB/s":0.0,"rrqm/s":0.0,"w/s":0.0,"w_await":0.0,"wareq-sz":0.0,"wkB/s":0.0,"wrqm/s":0.0}},"#,
            r#""interval_s":1.0002,"load":[0.5,0.25,0.125],"#,
            r#""mem":{"%commit":0.0,"%memused":45.6,"kbactive":0,"kbavail":0,"kbbuffers":0,"kbcached":0,"kbcommit":0,"kbdirty":0,"kbinact":0,"kbmemfree":123456,"kbmemused":0},"#,
            r#""nics":{"eth0":{"%ifutil":0.0,"rxcmp/s":0.0,"rxkB/s":0.1,"rxmcst/s":0.0,"rxpck/s":0.0,"txcmp/s":0.0,"txkB/s":0.0,"txpck/s":0.0}},"#,
            r#""tasks":{"plist-sz":300,"runq-sz":2},"time":"2023-11-14T22:13:20.123Z"}"#,
        );
        let line = SecondLine::of(&rates(), &["sda".to_owned()]);
        assert_eq!(serde_json::to_string(&line).unwrap(), old);
    }

    /// The table reads as it did when its column names were spelled here (the replaced
    /// implementation below, as it was, with the names it took from the rates structs).
    #[test]
    fn the_table_is_the_old_table() {
        let (r, devices) = (&rates(), &["sda".to_owned()]);
        let mut old = format!("{}  ({:.2} s)\n", time_text(r.time_unix_ns), r.interval_s);
        let row = |label: &str, values: &[f64]| {
            let mut line = format!("{label:<12}");
            for v in values {
                line += &format!(" {v:>9.2}");
            }
            line + "\n"
        };
        let header = |label: &str, columns: &str| {
            let mut line = format!("{label:<12}");
            for c in columns.split(' ') {
                line += &format!(" {c:>9}");
            }
            line + "\n"
        };
        old += &header(
            "Device",
            "r/s rkB/s rrqm/s %rrqm r_await rareq-sz w/s wkB/s wrqm/s %wrqm w_await wareq-sz d/s dkB/s \
             drqm/s %drqm d_await dareq-sz f/s f_await aqu-sz %util",
        );
        let d = &r.disks["sda"];
        let disk = [
            d.r_s, d.rkb_s, d.rrqm_s, d.rrqm_pct, d.r_await, d.rareq_sz, d.w_s, d.wkb_s, d.wrqm_s,
            d.wrqm_pct, d.w_await, d.wareq_sz, d.d_s, d.dkb_s, d.drqm_s, d.drqm_pct, d.d_await, d.dareq_sz,
            d.f_s, d.f_await, d.aqu_sz, d.util,
        ];
        old += &row("sda", &disk);
        old += &header("IFACE", "rxpck/s txpck/s rxkB/s txkB/s rxcmp/s txcmp/s rxmcst/s %ifutil");
        let n = &r.nics["eth0"];
        old += &row(
            "eth0",
            &[n.rxpck_s, n.txpck_s, n.rxkb_s, n.txkb_s, n.rxcmp_s, n.txcmp_s, n.rxmcst_s, n.ifutil],
        );
        old += &header("CPU", "%usr %nice %sys %iowait %steal %irq %soft %guest %gnice %idle");
        let c = &r.cpu;
        old +=
            &row("all", &[c.usr, c.nice, c.sys, c.iowait, c.steal, c.irq, c.soft, c.guest, c.gnice, c.idle]);
        let m = &r.mem;
        old += &format!(
            "mem: kbmemfree {} kbavail {} kbmemused {} %memused {:.2} kbbuffers {} kbcached {} kbcommit {} %commit {:.2} kbdirty {}\n",
            m.kbmemfree,
            m.kbavail,
            m.kbmemused,
            m.memused_pct,
            m.kbbuffers,
            m.kbcached,
            m.kbcommit,
            m.commit_pct,
            m.kbdirty
        );
        old += &format!(
            "load: runq-sz {} plist-sz {} ldavg-1 {:.2} ldavg-5 {:.2} ldavg-15 {:.2}\n\n",
            r.load.runq_sz, r.load.plist_sz, r.load.ldavg_1, r.load.ldavg_5, r.load.ldavg_15
        );
        assert_eq!(table(r, devices), old);
    }

    /// A Lustre server's second ends with its targets, ltop's columns, MB of 10^6 bytes; what a
    /// target does not have is `-`, a recovery under way is named.
    #[test]
    fn a_lustre_servers_table_ends_with_its_targets() {
        let mut r = rates();
        r.lustre = vec![
            TargetRates {
                component: "ost".into(),
                exports: Some(4),
                locks: Some(12),
                name: "fs-OST0000".into(),
                ops_s: 100.0,
                write_bytes_s: 419_430_400.0,
                space_used_pct: Some(2.5),
                inodes_used_pct: Some(0.125),
                recovery: Some("RECOVERING".into()),
                clients: vec![
                    ClientRates {
                        nid: "192.168.0.100@o2ib".into(),
                        ops_s: 60.0,
                        write_bytes_s: 251_658_240.0,
                        ..Default::default()
                    },
                    ClientRates { nid: "0@lo".into(), ..Default::default() },
                ],
                ..Default::default()
            },
            TargetRates {
                component: "client".into(),
                name: "fs-ffff".into(),
                read_bytes_s: 1e6,
                ..Default::default()
            },
        ];
        let text = table(&r, &[]);
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| l.starts_with("Target")).expect("a target table");
        assert_eq!(
            lines[at..].join("\n").trim_end(),
            concat!(
                "Target               Kind       rMB/s     wMB/s      IOPS Exports   Locks  %Space %Inodes\n",
                "fs-OST0000           ost         0.00    419.43    100.00       4      12    2.50    0.12  RECOVERING\n",
                "  192.168.0.100@o2ib client      0.00    251.66     60.00\n",
                "fs-ffff              client      1.00      0.00      0.00       -       -       -       -"
            )
        );
        assert!(text.ends_with("-\n\n"), "a blank line after, as after every second");
        assert!(!text.contains("lnet:"), "no LNet line without LNet's counters");
        r.lnet = Some(pvfs_metrics::lustre::node::LnetRates {
            send_bytes_s: 2.5e9,
            send_msgs_s: 2500.0,
            recv_bytes_s: 1e6,
            recv_msgs_s: 2500.0,
            drop_msgs_s: 0.0,
            msgs_alloc: 17,
            ..Default::default()
        });
        let text = table(&r, &[]);
        let lnet = text.lines().position(|l| l.starts_with("lnet:")).expect("an LNet line");
        assert_eq!(
            text.lines().nth(lnet),
            Some("lnet: send 2500.0 MB/s 2500 msg/s, recv 1.0 MB/s 2500 msg/s, drop 0 msg/s, in flight 17")
        );
        assert_eq!(
            text.lines().nth(lnet + 1).map(|l| l.starts_with("Target")),
            Some(true),
            "then the targets"
        );
    }

    /// A GlusterFS server's second ends with its bricks, a brick down shown `N`.
    #[test]
    fn a_gluster_servers_table_ends_with_its_bricks() {
        let mut r = rates();
        r.bricks = vec![
            BrickRates {
                path: "/bricks/b1".into(),
                rchar_s: 2e6,
                up: true,
                volume: "gv0".into(),
                wchar_s: 1e6,
                write_bytes_s: 52_428_800.0,
                ..Default::default()
            },
            BrickRates { path: "gfs1-bricks-b2".into(), volume: "gv0".into(), ..Default::default() },
        ];
        let text = table(&r, &[]);
        let at = text.find("Volume").expect("a brick table");
        assert_eq!(
            &text[at..],
            concat!(
                "Volume       Brick                      Up     rMB/s     wMB/s diskrMB/s diskwMB/s\n",
                "gv0          /bricks/b1                  Y      2.00      1.00      0.00     52.43\n",
                "gv0          gfs1-bricks-b2              N      0.00      0.00      0.00      0.00\n\n"
            )
        );
    }

    /// A BeeGFS server's second ends with a line per server: a storage server's with its bytes,
    /// a metadata server's without; then a line per target, its state only once known.
    #[test]
    fn a_beegfs_servers_second_ends_with_its_servers() {
        use pvfs_metrics::beegfs::ServerSecond;
        let mut r = rates();
        r.beegfs = vec![
            ServerSecond {
                kind: "storage".into(),
                num_id: 3,
                requests: 880,
                queued_requests: 3,
                busy_workers: 12,
                write_bytes: 104_857_600,
                read_bytes: 12_288,
                time: 1_700_000_000,
            },
            ServerSecond {
                kind: "meta".into(),
                num_id: 1,
                requests: 1342,
                busy_workers: 2,
                ..Default::default()
            },
        ];
        r.beegfs_targets = vec![
            pvfs_metrics::beegfs::TargetSecond {
                consistency: "needs-resync".into(),
                free_bytes: 3 << 30,
                free_inodes: 1000,
                id: 101,
                kind: "storage".into(),
                path: "/data/t1".into(),
                reachability: "online".into(),
                total_bytes: 4 << 30,
                total_inodes: 5000,
            },
            pvfs_metrics::beegfs::TargetSecond {
                id: 1,
                kind: "meta".into(),
                path: "/data/meta".into(),
                ..Default::default()
            },
        ];
        let text = table(&r, &[]);
        assert!(
            text.ends_with(concat!(
                "beegfs storage 3: 880 req/s, 3 queued, 12 busy workers, write 104.9 MB/s, read 0.0 MB/s\n",
                "beegfs meta 1: 1342 req/s, 0 queued, 2 busy workers\n",
                "beegfs storage target 101 (/data/t1): 25.0 % used, 3.0 of 4.0 GiB free, 1000 of 5000 inodes free, online, needs-resync\n",
                "beegfs meta target 1 (/data/meta): 0.0 % used, 0.0 of 0.0 GiB free, 0 of 0 inodes free\n\n"
            )),
            "{text}"
        );
    }

    /// A process's name is its owner's to choose, and an agent's names are the agent's: none
    /// reaches the terminal as a command or makes a row of its own in plain `top`.
    #[test]
    fn names_from_the_nodes_are_shown_escaped_one_row_each() {
        let evil = "x\u{1b}]0;owned\u{7}\nINFO fake row\r";
        let processes = [ProcessLine { pid: 7, name: evil.into(), ..Default::default() }];
        let text = process_table(&processes);
        // The header and the process's one row (and the blank line after the table).
        assert_eq!(text.lines().filter(|l| !l.is_empty()).count(), 2, "{text}");
        assert!(text.contains(r"x\u{1b}]0;owned\u{7}\nINFO fake row\r"), "{text}");
        let mut r = rates();
        r.disks.insert(evil.into(), DiskRates::default());
        r.lustre = vec![TargetRates {
            name: evil.into(),
            clients: vec![ClientRates { nid: evil.into(), ops_s: 1.0, ..Default::default() }],
            ..Default::default()
        }];
        let text = table(&r, &[evil.to_owned()]);
        assert!(!text.contains(|c: char| c.is_control() && c != '\n'), "{text}");
        assert_eq!(text.matches("INFO fake row").count(), 3, "{text}");
        assert!(!text.lines().any(|l| l.starts_with("INFO")), "{text}");
    }
}
