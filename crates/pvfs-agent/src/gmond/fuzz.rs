//! Fuzzing the gmond XML dump on stable Rust: for arbitrary cluster, host, interface and device
//! names (control characters, quotes, `<&>`, non-characters) and arbitrary counter values, the
//! dump is well-formed XML that a real parser (roxmltree) reads back, with the names as given
//! (control characters as spaces).
//!
//! proptest rather than `cargo fuzz`: stable, inside `cargo nextest`, fixed seed, shrinking.
//! `cargo xtask fuzz` runs the same properties with many more cases.

use super::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed};
use pvfs_metrics::sample::{CpuCounters, DiskCounters, LoadCounters, MemCounters, NicCounters, Sample};

/// Cases per property: `PROPTEST_CASES` (set by `cargo xtask fuzz`) or 256, from a fixed seed.
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256);
    let seed = std::env::var("PROPTEST_RNG_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(12);
    Config {
        cases,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(seed),
        // Shrunk failures are reported in the test's output; no regression files in the tree.
        failure_persistence: None,
        ..Config::default()
    }
}

/// Names with what XML treats specially: markup characters, quotes, controls, non-characters.
fn name() -> impl Strategy<Value = String> {
    let special = prop_oneof![
        Just('<'),
        Just('>'),
        Just('&'),
        Just('"'),
        Just('\''),
        Just(']'),
        Just('\0'),
        Just('\t'),
        Just('\n'),
        Just('\r'),
        Just('\u{7f}'),
        Just('\u{85}'),
        Just('\u{fffe}'),
        Just('\u{ffff}'),
        Just('\u{1fffe}'),
        prop::char::range('\0', '\u{1f}'),
        any::<char>(),
        prop::char::range('a', 'z'),
    ];
    prop::collection::vec(special, 0..12).prop_map(|c| c.into_iter().collect())
}

fn counter() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..1_000_000, Just(u64::MAX), any::<u64>()]
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(-1.0), 0.0..100.0, any::<f64>()]
}

fn sample(disk: String, nic: String, c: [u64; 8], load: f64, mono_ns: u64) -> Sample {
    Sample {
        time_unix_ns: 1_795_314_640_000_000_000,
        mono_ns,
        disks: vec![DiskCounters {
            name: disk,
            rd_ios: c[0],
            rd_sectors: c[1],
            wr_ios: c[2],
            tot_ticks: c[3],
            ..Default::default()
        }],
        nics: vec![NicCounters { name: nic, rx_bytes: c[4], tx_packets: c[5], ..Default::default() }],
        cpu: CpuCounters {
            user: c[6],
            nice: c[7],
            system: c[0],
            idle: c[1],
            iowait: c[2],
            irq: c[3],
            softirq: c[4],
            steal: c[5],
            ..Default::default()
        },
        mem: MemCounters { total_kb: c[6], free_kb: c[7], ..Default::default() },
        load: LoadCounters {
            one: load,
            five: load,
            fifteen: load,
            runnable: c[0] as u32,
            tasks: c[1] as u32,
        },
        fs: None,
    }
}

/// What `esc` is specified to produce before parsing: control characters as spaces, the two
/// non-XML characters as U+FFFD.
fn as_read(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            c if (c as u32) < 0x20 => ' ',
            '\u{fffe}' | '\u{ffff}' => '\u{fffd}',
            c => c,
        })
        .collect()
}

proptest! {
    #![proptest_config(config())]

    /// Always well-formed, whatever the names and values; names read back as written.
    #[test]
    fn fuzz_gmond_dump_is_well_formed_xml(
        cluster in name(),
        host in name(),
        ip in name(),
        os_release in name(),
        disk in name(),
        nic in name(),
        prev in prop::array::uniform8(counter()),
        curr in prop::array::uniform8(counter()),
        load in float(),
        space in (float(), float(), float()),
        times in (any::<u64>(), any::<u64>(), any::<u64>()),
    ) {
        let facts = StaticFacts { cpu_num: 2, cpu_mhz: 2445, machine: "x86_64", os_release, boottime: times.0 };
        let (a, b) = (sample(disk.clone(), nic.clone(), prev, load, 1_000_000_000), sample(disk, nic, curr, load, 2_000_000_000));
        let rates = Rates::between(&a, &b);
        let latest = Stamped { epoch: 1, seq: 2, sample: b };
        let xml = render(&Snapshot {
            cluster: &cluster,
            host: &host,
            ip,
            started: times.1,
            now: times.2,
            facts: &facts,
            latest: Some(&latest),
            rates: Some(&rates),
            disk_space: space,
        });
        let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
        let doc = match roxmltree::Document::parse_with_options(&xml, options) {
            Ok(doc) => doc,
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        let host_element = doc.descendants().find(|n| n.has_tag_name("HOST")).unwrap();
        let (host_read, cluster_read) = (as_read(&host), as_read(&cluster));
        prop_assert_eq!(host_element.attribute("NAME"), Some(host_read.as_str()));
        let cluster_element = doc.descendants().find(|n| n.has_tag_name("CLUSTER")).unwrap();
        prop_assert_eq!(cluster_element.attribute("NAME"), Some(cluster_read.as_str()));
    }
}
