//! Fuzzing the Prometheus exposition on stable Rust: for arbitrary node, role, device and
//! interface names (quotes, backslashes, newlines, controls) and arbitrary counters from the
//! wire, both text formats parse by their grammar, and the node labels read back as the names.
//!
//! The checker is written here: the Rust parsers on crates.io (`prometheus-parse`,
//! `openmetrics-parser`) are lenient line splitters or unmaintained, and none checks what a
//! scraper refuses (escapes, family contiguity, suffixes per type, duplicate series). It
//! follows the OpenMetrics 1.0 ABNF (`metricname`, `labels`, `escaped-string`, `number`) and,
//! for 0.0.4, Prometheus' text format (the same sample line; HELP escapes only `\\` and `\n`).
//!
//! proptest rather than `cargo fuzz`: stable, inside `cargo nextest`, fixed seed, shrinking.
//! `cargo xtask fuzz` runs the same properties with many more cases.

use super::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed};
use pvfs_metrics::sample::{CpuCounters, DiskCounters, LoadCounters, MemCounters, NicCounters, Sample};
use std::collections::{BTreeSet, HashSet};

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

/// One parsed sample line.
#[derive(Debug)]
struct Line {
    name: String,
    labels: Vec<(String, String)>,
}

fn is_name(s: &str, colon: bool) -> bool {
    let ok = |c: char, first: bool| {
        c.is_ascii_alphabetic() || c == '_' || (colon && c == ':') || (!first && c.is_ascii_digit())
    };
    let mut chars = s.chars();
    chars.next().is_some_and(|c| ok(c, true)) && chars.all(|c| ok(c, false))
}

/// `number` of the ABNF (and Go's ParseFloat for 0.0.4, which accepts the same forms here).
fn is_number(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if ["inf", "infinity"].iter().any(|i| body.eq_ignore_ascii_case(i)) || s.eq_ignore_ascii_case("nan") {
        return true;
    }
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['+', '-']).unwrap_or(e))),
        None => (body, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |d: &str| d.chars().all(|c| c.is_ascii_digit());
    (!int.is_empty() || !frac.is_empty())
        && digits(int)
        && digits(frac)
        && exponent.is_none_or(|e| !e.is_empty() && digits(e))
}

/// Reads an `escaped-string` up to its closing quote; returns the value and the rest.
fn escaped_string(s: &str) -> Result<(String, &str), String> {
    let mut value = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &s[i + 1..])),
            '\\' => match chars.next() {
                Some((_, '\\')) => value.push('\\'),
                Some((_, '"')) => value.push('"'),
                Some((_, 'n')) => value.push('\n'),
                other => return Err(format!("bad escape {other:?}")),
            },
            '\n' => return Err("newline in a label value".into()),
            c => value.push(c),
        }
    }
    Err("unterminated label value".into())
}

/// `metricname [labels] SP number LF`.
fn sample_line(line: &str) -> Result<Line, String> {
    let end = line.find(['{', ' ']).ok_or("no value")?;
    let name = &line[..end];
    if !is_name(name, true) {
        return Err(format!("bad metric name {name:?}"));
    }
    let mut rest = &line[end..];
    let mut labels = Vec::new();
    if let Some(mut inner) = rest.strip_prefix('{') {
        loop {
            if let Some(after) = inner.strip_prefix('}') {
                rest = after;
                break;
            }
            let (key, after) = inner.split_once("=\"").ok_or("label without =\"")?;
            if !is_name(key, false) {
                return Err(format!("bad label name {key:?}"));
            }
            if labels.iter().any(|(k, _)| k == key) {
                return Err(format!("label {key} twice"));
            }
            let (value, after) = escaped_string(after)?;
            labels.push((key.to_owned(), value));
            inner = after.strip_prefix(',').unwrap_or(after);
            if !after.starts_with([',', '}']) {
                return Err("label not followed by , or }".into());
            }
        }
    }
    let value = rest.strip_prefix(' ').ok_or("no space before the value")?;
    if !is_number(value) {
        return Err(format!("bad value {value:?}"));
    }
    Ok(Line { name: name.to_owned(), labels })
}

/// The suffixes a sample of a family of `kind` may add to the family's name.
fn suffixes(kind: &str, openmetrics: bool) -> &'static [&'static str] {
    match (kind, openmetrics) {
        ("counter", true) => &["_total", "_created"],
        ("histogram", _) => &["_bucket", "_sum", "_count", "_created"],
        _ => &[""],
    }
}

/// Checks the whole exposition; returns its sample lines.
fn check(text: &str, openmetrics: bool) -> Result<Vec<Line>, String> {
    let body = if openmetrics {
        text.strip_suffix("# EOF\n").ok_or("OpenMetrics without a final # EOF")?
    } else {
        text
    };
    let body = body.strip_suffix('\n').ok_or("no final newline")?;
    let mut families = HashSet::new();
    let mut series = HashSet::new();
    let (mut family, mut kind) = (String::new(), String::new());
    let mut lines = Vec::new();
    for (i, line) in body.split('\n').enumerate() {
        let at = |e: String| format!("line {}: {e}: {line:?}", i + 1);
        if let Some(help) = line.strip_prefix("# HELP ") {
            let (name, text) = help.split_once(' ').ok_or_else(|| at("HELP without text".into()))?;
            // A HELP opens a family (as TYPE does; ours come first).
            if !families.insert(name.to_owned()) {
                return Err(at("family twice".into()));
            }
            let (family_name, _) = (name, ());
            family = family_name.to_owned();
            kind.clear();
            let mut chars = text.chars();
            while let Some(c) = chars.next() {
                match (c, openmetrics) {
                    ('\\', _) => {
                        let next = chars.next();
                        let ok = matches!(next, Some('\\' | 'n')) || (openmetrics && next == Some('"'));
                        if !ok {
                            return Err(at(format!("bad escape in HELP {next:?}")));
                        }
                    }
                    ('"', true) => return Err(at("unescaped quote in HELP".into())),
                    _ => {}
                }
            }
            continue;
        }
        if let Some(t) = line.strip_prefix("# TYPE ") {
            let (name, k) = t.split_once(' ').ok_or_else(|| at("TYPE without a type".into()))?;
            if name != family || !kind.is_empty() {
                return Err(at(format!("TYPE not right after its HELP (family {family})")));
            }
            if !["counter", "gauge", "histogram", "summary", "unknown", "untyped"].contains(&k) {
                return Err(at(format!("unknown type {k}")));
            }
            kind = k.to_owned();
            continue;
        }
        if line.starts_with('#') {
            return Err(at("unknown comment line".into()));
        }
        let sample = sample_line(line).map_err(at)?;
        let suffix = sample
            .name
            .strip_prefix(family.as_str())
            .ok_or_else(|| at(format!("outside family {family}")))?;
        if !suffixes(&kind, openmetrics).contains(&suffix) {
            return Err(at(format!("suffix {suffix:?} not allowed for a {kind}")));
        }
        let mut key: Vec<_> = sample.labels.clone();
        key.sort();
        if !series.insert((sample.name.clone(), key)) {
            return Err(at("the same series twice".into()));
        }
        if kind == "counter" || (kind == "histogram" && suffix != "_sum") {
            let value = line.rsplit(' ').next().unwrap_or_default();
            if value.eq_ignore_ascii_case("nan") || value.starts_with('-') {
                return Err(at("a counter must not be NaN or negative".into()));
            }
        }
        lines.push(sample);
    }
    Ok(lines)
}

/// Names with what the format escapes, and what it passes through.
fn name() -> impl Strategy<Value = String> {
    let special = prop_oneof![
        Just('"'),
        Just('\\'),
        Just('\n'),
        Just('\r'),
        Just('{'),
        Just('}'),
        Just(','),
        Just('='),
        Just(' '),
        Just('#'),
        Just('\0'),
        any::<char>(),
        prop::char::range('a', 'z'),
    ];
    prop::collection::vec(special, 0..10).prop_map(|c| c.into_iter().collect())
}

fn counter() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..1_000_000, Just(u64::MAX), any::<u64>()]
}

fn sample(disks: &[String], nics: &[String], c: [u64; 8], load: f64, seq: u64) -> Box<Stamped> {
    Box::new(Stamped {
        epoch: 1,
        seq,
        sample: Sample {
            time_unix_ns: c[7],
            mono_ns: seq * 1_000_000_000,
            disks: disks
                .iter()
                .map(|d| DiskCounters {
                    name: d.clone(),
                    rd_ios: c[0],
                    rd_sectors: c[1],
                    tot_ticks: c[2],
                    ..Default::default()
                })
                .collect(),
            nics: nics
                .iter()
                .map(|n| NicCounters {
                    name: n.clone(),
                    rx_bytes: c[3],
                    tx_packets: c[4],
                    ..Default::default()
                })
                .collect(),
            cpu: CpuCounters { user: c[5], idle: c[6], system: c[0], ..Default::default() },
            mem: MemCounters { total_kb: c[6], free_kb: c[7], ..Default::default() },
            load: LoadCounters {
                one: load,
                five: load,
                fifteen: load,
                runnable: c[0] as u32,
                tasks: c[1] as u32,
            },
            fs: None,
        },
    })
}

proptest! {
    #![proptest_config(config())]

    /// Both formats parse, whatever the names and counters; node labels read back as the names.
    #[test]
    fn fuzz_exporter_output_parses(
        nodes in prop::collection::btree_map(name(), name(), 0..4),
        disks in prop::collection::vec(name(), 0..3),
        nics in prop::collection::vec(name(), 0..3),
        prev in prop::array::uniform8(counter()),
        curr in prop::array::uniform8(counter()),
        load in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(-0.0), any::<f64>()],
        delays in prop::collection::vec(prop_oneof![Just(f64::NAN), Just(f64::INFINITY), any::<f64>()], 0..4),
    ) {
        let mut view = ClusterView::default();
        for (node, role) in &nodes {
            view.nodes.insert(node.clone(), NodeView { role: role.clone(), ..NodeView::default() });
            view.apply(StreamEvent::Sample { node: node.clone(), stamped: sample(&disks, &nics, prev, load, 1), processes: Vec::new() });
            view.apply(StreamEvent::Sample { node: node.clone(), stamped: sample(&disks, &nics, curr, load, 2), processes: Vec::new() });
        }
        for d in delays {
            view.delays.observe(d);
        }
        for openmetrics in [false, true] {
            let text = render(&view, openmetrics);
            let lines = match check(&text, openmetrics) {
                Ok(lines) => lines,
                Err(e) => return Err(TestCaseError::fail(format!("openmetrics={openmetrics}: {e}"))),
            };
            let seen: BTreeSet<&str> = lines
                .iter()
                .filter(|l| l.name == "pvfs_node_up")
                .flat_map(|l| l.labels.iter().filter(|(k, _)| k == "node").map(|(_, v)| v.as_str()))
                .collect();
            prop_assert_eq!(seen, nodes.keys().map(String::as_str).collect::<BTreeSet<_>>());
        }
    }
}

/// The checker refuses what it is there to refuse (so the property above can fail).
#[test]
fn fuzz_checker_refuses_broken_expositions() {
    let good = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 1\n";
    assert!(check(good, false).is_ok());
    for bad in [
        "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\n\"} 1\n",
        "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"\\q\"} 1\n",
        "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 1\na_total{x=\"1\"} 2\n",
        "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} NaN\n",
        "# HELP a_total A.\n# TYPE a_total counter\nb_total 1\n",
        "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\",x=\"2\"} 1\n",
        "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 1e\n",
    ] {
        assert!(check(bad, false).is_err(), "accepted {bad:?}");
    }
    assert!(check("# HELP a A \"q\".\n# TYPE a gauge\na 1\n# EOF\n", true).is_err());
}
