//! The per-second line: a node's rates over one second as one JSON object, the line that a
//! benchmark's `metrics/NODE.jsonl` records (with the node going down as a line of its own),
//! and that `pvfs-agent metrics --json` and `pvfsctl top --json` print.
//!
//! Each group's columns are [`Columns`], keyed by the group's column enum
//! ([`DiskColumn`](crate::rates::DiskColumn), …), so readers ask for a column by its variant
//! and the iostat/sar names are spelled only where the enums are defined. The line is
//! written once, straight from these types, and its JSON is the one these lines have always
//! had, byte for byte: every object's keys in byte order (they were once written through
//! `serde_json::Value`, whose maps are sorted; the structs here declare their fields in that
//! order), counts as integers, rates as floats, NaN as `null`. The fixtures in
//! `testdata/line/`, written by the code before this module existed, are read back and
//! written again to check it.
//!
//! Reading is lenient, so that a line of another version reads: every key may be missing, a
//! column the line lacks is absent (`get` says `None`) and stays absent when the line is
//! written again; a column this version does not know is skipped (so that line is written
//! back without it).

use crate::gluster::BrickRates;
use crate::lustre::node::{LnetRates, TargetRates};
use crate::processes::Process;
use crate::rates::{Column, CpuColumn, DiskColumn, Group, LoadColumn, MemColumn, NicColumn, Rates, Value};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Number;
use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

/// A line of `metrics/NODE.jsonl`: a node's rates over one second, or the moment it went down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MetricsLine {
    // First: a per-second line has no `down`, and every field of [`SecondLine`] has a default.
    Down(DownLine),
    Second(Box<SecondLine>),
}

/// `{"down": true, "error": …, "node": …, "time": …}`: the node stopped answering.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DownLine {
    // Fields in the byte order of their keys, the order they are written in.
    pub down: bool,
    pub error: String,
    pub node: String,
    pub time: String,
}

/// A node's rates over one second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SecondLine {
    // Fields in the byte order of their keys, the order they are written in.
    /// This node's BeeGFS servers over the second, on a node with any (absent on others).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub beegfs: Vec<crate::beegfs::ServerSecond>,
    /// This node's BeeGFS targets' space and state, on a node with any (absent on others).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub beegfs_targets: Vec<crate::beegfs::TargetSecond>,
    /// This node's GlusterFS bricks over the second, on a node with bricks (absent on others).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bricks: Vec<BrickRates>,
    pub cpu: Columns<CpuColumn>,
    /// The devices shown, by name (iostat's: those that have done I/O, or those asked for).
    pub disks: BTreeMap<String, Columns<DiskColumn>>,
    pub interval_s: f64,
    /// LNet's traffic over the second, on a node with Lustre (absent on others).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lnet: Option<LnetRates>,
    /// ldavg-1, ldavg-5, ldavg-15.
    pub load: [f64; 3],
    /// Each Lustre target's second, on a node with Lustre (absent on others).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lustre: Vec<TargetRates>,
    pub mem: Columns<MemColumn>,
    pub nics: BTreeMap<String, Columns<NicColumn>>,
    /// The node, in a benchmark's record and in `top`; absent from `pvfs-agent metrics`,
    /// which shows only its own machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The node's busiest processes over the second (its top N by CPU and by I/O), when they
    /// were asked for: in `top --json --processes` always (`[]` when none was busy), in a
    /// benchmark's record (`bench --watch`/`--processes`) only when there were some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<Vec<ProcessLine>>,
    /// The sequence number of the second's later sample on its agent: `top --json` prints it
    /// (it is what `top --cursor` resumes from); a benchmark's record does not keep it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// sar -q's runq-sz and plist-sz (its load averages are `load`).
    pub tasks: Columns<LoadColumn>,
    /// The second's end, RFC 3339 with milliseconds ([`time_text`]).
    pub time: String,
}

impl SecondLine {
    /// One second's rates as a line without a node: the devices in `devices`, every interface.
    pub fn of(rates: &Rates, devices: &[String]) -> SecondLine {
        let load = &rates.load;
        SecondLine {
            beegfs: rates.beegfs.clone(),
            beegfs_targets: rates.beegfs_targets.clone(),
            bricks: rates.bricks.clone(),
            cpu: Columns::of(&rates.cpu),
            disks: rates
                .disks
                .iter()
                .filter(|(name, _)| devices.contains(name))
                .map(|(name, disk)| (name.clone(), Columns::of(disk)))
                .collect(),
            interval_s: rates.interval_s,
            lnet: rates.lnet,
            load: [load.ldavg_1, load.ldavg_5, load.ldavg_15],
            lustre: rates.lustre.clone(),
            mem: Columns::of(&rates.mem),
            nics: rates.nics.iter().map(|(name, nic)| (name.clone(), Columns::of(nic))).collect(),
            node: None,
            processes: None,
            seq: None,
            tasks: [LoadColumn::RunqSz, LoadColumn::PlistSz]
                .into_iter()
                .map(|c| (c, load.value(c)))
                .collect(),
            time: time_text(rates.time_unix_ns),
        }
    }

    /// The second's start and end (Unix seconds), when `time` reads.
    pub fn span(&self) -> Option<(f64, f64)> {
        let t = humantime::parse_rfc3339(&self.time).ok()?;
        let end = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64();
        Some((end - self.interval_s, end))
    }
}

/// One group's columns in a line, each number as it is written: a count an integer, a rate a
/// float, `None` for what JSON cannot hold (NaN, infinities), written `null`. A column the line
/// does not have is absent.
#[derive(Debug, Clone, PartialEq)]
pub struct Columns<C>(BTreeMap<C, Option<Number>>);

impl<C: Column> Columns<C> {
    /// Every column of `group`.
    pub fn of<G: Group<Column = C>>(group: &G) -> Columns<C> {
        C::BY_NAME.iter().map(|&c| (c, group.value(c))).collect()
    }

    /// The column's value, if the line has it and it is a number.
    pub fn get(&self, column: C) -> Option<f64> {
        self.0.get(&column)?.as_ref()?.as_f64()
    }
}

impl<C> Default for Columns<C> {
    fn default() -> Self {
        Columns(BTreeMap::new())
    }
}

impl<C: Column> FromIterator<(C, Value)> for Columns<C> {
    fn from_iter<I: IntoIterator<Item = (C, Value)>>(values: I) -> Self {
        let number = |value| match value {
            Value::Count(n) => Some(Number::from(n)),
            Value::Real(x) => Number::from_f64(x),
        };
        Columns(values.into_iter().map(|(c, v)| (c, number(v))).collect())
    }
}

impl<C: Column> Serialize for Columns<C> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for column in C::BY_NAME {
            if let Some(value) = self.0.get(column) {
                map.serialize_entry(column.name(), value)?;
            }
        }
        map.end()
    }
}

impl<'de, C: Column> Deserialize<'de> for Columns<C> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<C>(std::marker::PhantomData<C>);
        impl<'de, C: Column> serde::de::Visitor<'de> for Visitor<C> {
            type Value = Columns<C>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of numbers by column name")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Columns<C>, A::Error> {
                let mut columns = BTreeMap::new();
                while let Some(Key(column)) = map.next_key::<Key<C>>()? {
                    match column {
                        Some(column) => {
                            columns.insert(column, map.next_value()?);
                        }
                        None => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(Columns(columns))
            }
        }
        deserializer.deserialize_map(Visitor(std::marker::PhantomData))
    }
}

/// An object's key read as one of `C`'s columns: `None` for a name `C` does not have.
struct Key<C>(Option<C>);

impl<'de, C: Column> Deserialize<'de> for Key<C> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<C>(std::marker::PhantomData<C>);
        impl<C: Column> serde::de::Visitor<'_> for Visitor<C> {
            type Value = Key<C>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a column name")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Key<C>, E> {
                Ok(Key(C::from_name(name)))
            }
        }
        deserializer.deserialize_str(Visitor(std::marker::PhantomData))
    }
}

/// One process over one second, its rates keyed as `pidstat -u -d` names them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessLine {
    // Fields in the byte order of their keys, the order they are written in.
    /// % of one CPU.
    #[serde(rename = "%CPU")]
    pub cpu: f64,
    /// kB (1,024 bytes) per second it made storage read and write.
    #[serde(rename = "kB_rd/s")]
    pub kb_rd_s: f64,
    #[serde(rename = "kB_wr/s")]
    pub kb_wr_s: f64,
    /// A kernel thread (Lustre's `ll_ost_io_*`), not a user process.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kernel: bool,
    /// The kernel's name for it (comm).
    pub name: String,
    pub pid: u32,
}

impl From<&Process> for ProcessLine {
    /// pidstat's units: % of one CPU and kB/s, to two decimals as it prints them.
    fn from(p: &Process) -> ProcessLine {
        let two_places = |x: f64| (x * 100.0).round() / 100.0;
        ProcessLine {
            cpu: two_places(f64::from(p.cpu_percent)),
            kb_rd_s: two_places(p.read_bytes_per_s as f64 / 1024.0),
            kb_wr_s: two_places(p.write_bytes_per_s as f64 / 1024.0),
            kernel: p.kernel,
            name: p.name.clone(),
            pid: p.pid,
        }
    }
}

/// A line's time: RFC 3339 UTC to the millisecond, from Unix ns.
pub fn time_text(unix_ns: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_nanos(unix_ns)).to_string()
}

#[cfg(test)]
mod tests;
