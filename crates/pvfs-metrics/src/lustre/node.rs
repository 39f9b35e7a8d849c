//! What Lustre says of one node in one second: each target's counters, space and state, read
//! from the kernel's files where lctl finds them ([`super::params`]).
//!
//! A server's targets: an OST's `obdfilter.T.stats`, an MDT's `mdt.T.md_stats`, each one's
//! `num_exports` and `recovery_status`, and its OSD's `kbytes{total,free,avail}` and
//! `files{total,free}` (the OSD is named as its target); a client's `llite.FS-INSTANCE.stats`;
//! the node's `health_check` and LNet's counters (its `stats` file: messages and bytes sent,
//! received and dropped, what `lnetctl stats show` reports); each OSD's `brw_stats` (its
//! histograms of RPC sizes, fragmentation, I/Os in flight, I/O times and sizes, a fixed few
//! dozen rows each). These are what lustrefs-exporter reports per target, read every second.
//! Each export's stats (a client's share of a target) are read every second too, and only the
//! busiest few of each target kept ([`super::exports`]); job_stats grow with the jobs, and are
//! read when asked for (a benchmark's job id).

use super::exports::{self, Export};
use super::params;
use super::{
    BrwHistogram, LnetCounters, Stat, StatsError, Times, parse_brw_stats, parse_lnet_proc_stats,
    parse_recovery_status, parse_stats,
};
use pvfs_host::Root;
use serde::{Deserialize, Serialize};

/// What a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Ost,
    Mdt,
    /// Another OSD's target (the MGS's).
    Other,
    /// A client's mount (`llite`).
    Client,
}

impl Kind {
    /// lustrefs-exporter's `component` label.
    pub fn component(self) -> &'static str {
        match self {
            Kind::Ost => "ost",
            Kind::Mdt => "mdt",
            Kind::Other => "mgt",
            Kind::Client => "client",
        }
    }

    /// The other way round (the wire carries the label).
    pub fn from_component(label: &str) -> Option<Kind> {
        [Kind::Ost, Kind::Mdt, Kind::Other, Kind::Client].into_iter().find(|k| k.component() == label)
    }

    /// Whether a stats counter's samples are operations of a target of this kind, as ltop
    /// counts them: on an MDT every request (open, close, mknod, getattr …); elsewhere the
    /// reads and writes (an OST's `statfs`, `get_info` and `setattr` move no data). A target's
    /// ops/s and each of its clients' ([`crate::lustre::exports`]) are counted by this rule.
    pub fn counts_as_op(self, counter: &str) -> bool {
        self == Kind::Mdt || matches!(counter, "read_bytes" | "write_bytes")
    }
}

/// A target's space, from its OSD (KiB and inodes, as the kernel gives them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Space {
    pub kbytes_total: u64,
    pub kbytes_free: u64,
    pub kbytes_avail: u64,
    pub files_total: u64,
    pub files_free: u64,
}

/// A server target's lock namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Locks {
    pub count: Option<u64>,
    pub timeouts: Option<u64>,
    pub contended: Option<u64>,
    pub contention_seconds: Option<u64>,
}

/// One target (or client mount) in one second.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Target {
    pub kind: Option<Kind>,
    /// `fs-OST0000`, `fs-MDT0000`, `MGS`, or a client's `fs-ffff8c2e4a5b6000`.
    pub name: String,
    pub times: Times,
    /// Its stats' counters that have counted.
    pub counters: Vec<Stat>,
    pub space: Option<Space>,
    /// Clients connected to it (`num_exports`).
    pub exports: Option<u64>,
    /// Its lock namespace's (`ldlm.namespaces.{filter,mdt}-TARGET_UUID.*`): locks granted now,
    /// lock timeouts so far, and its `contended_locks`/`contention_seconds` settings.
    pub locks: Locks,
    /// `COMPLETE`, `RECOVERING`, … (`recovery_status`'s `status`).
    pub recovery: Option<String>,
    /// Its OSD's `brw_stats` tables, cumulative since the OSD started or they were cleared
    /// (a server target's; empty where the kernel keeps none).
    pub brw: Vec<BrwHistogram>,
    /// Its busiest clients' exports this second, busiest first ([`exports::BUSIEST`] at most
    /// when read every second; all of them from an `lctl get_param` output).
    pub busiest_exports: Vec<Export>,
}

impl Target {
    /// The counter `name`, if it has counted.
    pub fn counter(&self, name: &str) -> Option<&Stat> {
        self.counters.iter().find(|s| s.name == name)
    }
}

/// One node's Lustre in one second.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    /// `health_check`: `healthy`, else not (`NOT HEALTHY`, `LBUG`); `None` when absent.
    pub healthy: Option<bool>,
    /// Servers' targets by kind then name, then clients' mounts.
    pub targets: Vec<Target>,
    /// LNet's counters, where its `stats` file reads.
    pub lnet: Option<LnetCounters>,
    /// Files that did not read as their format says (the parameter and why); the rest of the
    /// snapshot stands without them.
    pub errors: Vec<String>,
}

impl Snapshot {
    pub fn target(&self, name: &str) -> Option<&Target> {
        self.targets.iter().find(|t| t.name == name)
    }
}

/// One target over one interval, as `top` shows it and a benchmark's record keeps it (ltop's
/// columns): what it read and wrote, its operations, its clients, how full it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TargetRates {
    // Fields in the byte order of their keys, as every line's are.
    /// Its busiest clients over the interval (those its agent could rate), busiest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<ClientRates>,
    /// lustrefs-exporter's component: `ost`, `mdt`, `mgt`, `client`.
    pub component: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exports: Option<u64>,
    /// Inodes in use, % of its OSD's (`filesfree` of `filestotal`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes_used_pct: Option<f64>,
    /// Locks its namespace has granted now (ltop's LOCKS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locks: Option<u64>,
    pub name: String,
    /// Operations a second: an OST's or a client's reads and writes (their `read_bytes` and
    /// `write_bytes` samples, one per RPC or call), an MDT's every md_stats operation.
    pub ops_s: f64,
    pub read_bytes_s: f64,
    /// `recovery_status` when it is not `COMPLETE` (or `INACTIVE`, a target never recovering).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<String>,
    /// Space in use, % as df counts it: used ÷ (used + available to users).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub space_used_pct: Option<f64>,
    pub write_bytes_s: f64,
}

impl TargetRates {
    /// Its busiest clients that did something over the interval, `n` at most (what `top` shows
    /// under the target).
    pub fn active_clients(&self, n: usize) -> impl Iterator<Item = &ClientRates> {
        self.clients.iter().filter(|c| c.ops_s > 0.0 || c.read_bytes_s > 0.0 || c.write_bytes_s > 0.0).take(n)
    }

    /// Every target of `curr` over the `seconds` since `prev` (a target new in `curr`, or
    /// whose counters went back — remounted — counts from zero).
    pub fn between(prev: &Snapshot, curr: &Snapshot, seconds: f64) -> Vec<TargetRates> {
        let t = if seconds > 0.0 { seconds } else { 0.01 };
        curr.targets
            .iter()
            .map(|c| {
                let p = prev.targets.iter().find(|p| p.name == c.name && p.kind == c.kind);
                let delta = |f: &dyn Fn(&Target) -> u64| {
                    let now = f(c);
                    let before = p.map_or(0, f);
                    (if now >= before { now - before } else { now }) as f64 / t
                };
                let sum_of =
                    |name: &'static str| move |x: &Target| x.counter(name).and_then(|s| s.sum).unwrap_or(0);
                let kind = c.kind.unwrap_or(Kind::Other);
                let ops = delta(&|x: &Target| {
                    x.counters.iter().filter(|s| kind.counts_as_op(&s.name)).map(|s| s.samples).sum()
                });
                let space = c.space.filter(|s| s.kbytes_total > 0);
                TargetRates {
                    clients: c
                        .busiest_exports
                        .iter()
                        .filter_map(|e| {
                            e.rates.map(|r| ClientRates {
                                nid: e.nid.clone(),
                                ops_s: r.ops_s,
                                read_bytes_s: r.read_bytes_s,
                                write_bytes_s: r.write_bytes_s,
                            })
                        })
                        .collect(),
                    component: c.kind.map(Kind::component).unwrap_or_default().to_owned(),
                    exports: c.exports,
                    inodes_used_pct: space.filter(|s| s.files_total > 0).map(|s| {
                        100.0 * s.files_total.saturating_sub(s.files_free) as f64 / s.files_total as f64
                    }),
                    locks: c.locks.count,
                    name: c.name.clone(),
                    ops_s: ops,
                    read_bytes_s: delta(&sum_of("read_bytes")),
                    recovery: c.recovery.clone().filter(|r| r != "COMPLETE" && r != "INACTIVE"),
                    space_used_pct: space.map(|s| {
                        let used = s.kbytes_total.saturating_sub(s.kbytes_free);
                        let of = used + s.kbytes_avail;
                        if of == 0 { 0.0 } else { 100.0 * used as f64 / of as f64 }
                    }),
                    write_bytes_s: delta(&sum_of("write_bytes")),
                }
            })
            .collect()
    }
}

/// One client of a target over one interval, from its export's stats (as its agent rated them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientRates {
    // Fields in the byte order of their keys, as every line's are.
    /// The client's NID: `192.168.0.100@o2ib`.
    pub nid: String,
    pub ops_s: f64,
    pub read_bytes_s: f64,
    pub write_bytes_s: f64,
}

/// LNet over one interval: its traffic and drops a second, its messages in flight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LnetRates {
    // Fields in the byte order of their keys, as every line's are.
    pub drop_bytes_s: f64,
    pub drop_msgs_s: f64,
    /// Messages allocated at the interval's end (LNet's in flight).
    pub msgs_alloc: u64,
    pub recv_bytes_s: f64,
    pub recv_msgs_s: f64,
    pub send_bytes_s: f64,
    pub send_msgs_s: f64,
}

impl LnetRates {
    /// LNet's rates between two snapshots that both have its counters (counters that went
    /// back — LNet restarted, or reset by writing its file — count from zero).
    pub fn between(prev: &Snapshot, curr: &Snapshot, seconds: f64) -> Option<LnetRates> {
        let (p, c) = (prev.lnet?, curr.lnet?);
        let t = if seconds > 0.0 { seconds } else { 0.01 };
        let rate = |f: fn(&LnetCounters) -> u64| {
            let (now, before) = (f(&c), f(&p));
            (if now >= before { now - before } else { now }) as f64 / t
        };
        Some(LnetRates {
            drop_bytes_s: rate(|x| x.drop_length),
            drop_msgs_s: rate(|x| x.drop_count),
            msgs_alloc: c.msgs_alloc,
            recv_bytes_s: rate(|x| x.recv_length),
            recv_msgs_s: rate(|x| x.recv_count),
            send_bytes_s: rate(|x| x.send_length),
            send_msgs_s: rate(|x| x.send_count),
        })
    }
}

/// What each parameter read is to a snapshot.
#[derive(Debug, Clone, Copy)]
enum Part {
    Stats(Kind),
    Exports,
    Recovery,
    Space(fn(&mut Space) -> &mut u64),
    Locks(fn(&mut Locks) -> &mut Option<u64>),
    Health,
    Lnet,
    Brw,
}

/// The parameters read every second, in the order they are put together.
const PARTS: [(&str, Part); 20] = [
    ("obdfilter.*.stats", Part::Stats(Kind::Ost)),
    ("mdt.*.md_stats", Part::Stats(Kind::Mdt)),
    ("llite.*.stats", Part::Stats(Kind::Client)),
    ("obdfilter.*.num_exports", Part::Exports),
    ("mdt.*.num_exports", Part::Exports),
    ("mgs.*.num_exports", Part::Exports),
    ("obdfilter.*.recovery_status", Part::Recovery),
    ("mdt.*.recovery_status", Part::Recovery),
    ("osd-*.*.kbytestotal", Part::Space(|s| &mut s.kbytes_total)),
    ("osd-*.*.kbytesfree", Part::Space(|s| &mut s.kbytes_free)),
    ("osd-*.*.kbytesavail", Part::Space(|s| &mut s.kbytes_avail)),
    ("osd-*.*.filestotal", Part::Space(|s| &mut s.files_total)),
    ("osd-*.*.filesfree", Part::Space(|s| &mut s.files_free)),
    ("ldlm.namespaces.*.lock_count", Part::Locks(|l| &mut l.count)),
    ("ldlm.namespaces.*.lock_timeouts", Part::Locks(|l| &mut l.timeouts)),
    ("ldlm.namespaces.*.contended_locks", Part::Locks(|l| &mut l.contended)),
    ("ldlm.namespaces.*.contention_seconds", Part::Locks(|l| &mut l.contention_seconds)),
    ("health_check", Part::Health),
    // In debugfs on 2.15 and later (`params::TREES`), in procfs before.
    ("osd-*.*.brw_stats", Part::Brw),
    // Looked for in LNet's trees only (`trees_for`).
    ("stats", Part::Lnet),
];

/// The trees a part's parameter is looked for in: LNet's `stats` only in LNet's own trees
/// (the name alone could be anything's).
fn trees_for<'a>(part: Part, trees: &'a [&'static str]) -> Vec<&'a str> {
    trees.iter().copied().filter(|t| !matches!(part, Part::Lnet) || t.ends_with("/lnet")).collect()
}

/// Reads the node's Lustre from the kernel's files; `None` when it has none
/// ([`params::present`]). Finds the files afresh: the sampler keeps a [`Reader`] instead.
pub fn read(root: &Root) -> Option<Snapshot> {
    Reader::default().read(root)
}

/// Reads a node's Lustre second after second, finding its files only now and then.
///
/// Finding the files is most of the work (every pattern walked in every tree of lctl's: ~0.5
/// ms for a server's three targets, measured with `cargo bench -p pvfs-metrics -- "server's
/// second"`); reading the 21 files found is the rest. So the files are found again every
/// [`FIND_EVERY`] seconds, and at once when one of them cannot be read (a target unmounted),
/// and read every second in between; a target mounted meanwhile shows within that time.
#[derive(Debug, Default)]
pub struct Reader {
    found: Vec<(Part, params::Found)>,
    /// Each export's stats file (at most [`exports::MAX_FILES`]), and how many more there were.
    exports_found: Vec<params::Found>,
    exports_beyond: usize,
    tracker: exports::Tracker,
    /// Seconds until the files are found again (0: now).
    until_find: u32,
    /// The last look found no Lustre on the node.
    absent: bool,
}

/// Seconds between two findings of a Lustre node's files.
pub const FIND_EVERY: u32 = 10;

impl Reader {
    /// This second's snapshot; `None` when the node has no Lustre.
    pub fn read(&mut self, root: &Root) -> Option<Snapshot> {
        if self.until_find == 0 {
            // Looked for again in FIND_EVERY seconds when absent, as a node's new target is:
            // the two lookups every second were a fifteenth of an idle agent's CPU (perf).
            self.absent = !params::present(root);
            if self.absent {
                self.found.clear();
                self.exports_found.clear();
                self.until_find = FIND_EVERY;
            }
        }
        if self.absent {
            self.until_find -= 1;
            return None;
        }
        if self.until_find == 0 {
            let trees = params::trees(root);
            self.found = PARTS
                .iter()
                .flat_map(|(pattern, part)| {
                    params::find_in(root, &trees_for(*part, &trees), pattern).into_iter().map(|f| (*part, f))
                })
                .collect();
            let mut exports: Vec<params::Found> = ["obdfilter.*.exports.*.stats", "mdt.*.exports.*.stats"]
                .iter()
                .flat_map(|pattern| params::find_in(root, &trees, pattern))
                .collect();
            self.exports_beyond = exports.len().saturating_sub(exports::MAX_FILES);
            exports.truncate(exports::MAX_FILES);
            self.exports_found = exports;
            self.until_find = FIND_EVERY;
        }
        self.until_find -= 1;
        let mut values = Vec::with_capacity(self.found.len());
        for (part, found) in &self.found {
            match params::read(root, found) {
                Some(text) => values.push((*part, found, text)),
                // Gone since it was found (a target unmounted): not this second's, and the
                // files are found again next second.
                None => self.until_find = 0,
            }
        }
        let mut snapshot = assemble(
            values
                .iter()
                .map(|(part, found, text)| (*part, found.name.as_str(), found.path.as_str(), text.as_str())),
        );
        // Each export's file read and dropped in turn: only each target's busiest are kept.
        let files = self.exports_found.iter().filter_map(|found| {
            let (target, kind, nid) = exports::parse_name(&found.name)?;
            // One gone (a client evicted) is simply not this second's.
            Some((target, kind, nid, params::read(root, found)?))
        });
        let busiest = exports::round(&mut self.tracker, exports::BUSIEST, files, &mut snapshot.errors);
        attach(&mut snapshot, busiest);
        if self.exports_beyond > 0 {
            snapshot.errors.push(format!(
                "{} exports' stats not read: at most {} are read a second",
                self.exports_beyond,
                exports::MAX_FILES
            ));
        }
        Some(snapshot)
    }
}

/// The same snapshot from `lctl get_param`'s output of those parameters (where only lctl's
/// output is at hand: a support bundle, a node the agent is not on). An error names the line.
pub fn from_lctl(text: &str) -> Snapshot {
    let params = super::lctl_params(text);
    let mut values = Vec::new();
    for (pattern, part) in PARTS {
        for p in params.iter().filter(|p| params::name_matches(pattern, p.name)) {
            values.push((part, p.name, format!("line {}", p.line), p.value));
        }
    }
    let mut snapshot =
        assemble(values.iter().map(|(part, name, line, value)| (*part, *name, line.as_str(), *value)));
    // Every export of the output, each target's busiest first (a dump has no second before it
    // to rate against, so by bytes in all).
    let files = params.iter().filter_map(|p| {
        let (target, kind, nid) = exports::parse_name(p.name)?;
        Some((target, kind, nid, p.value.to_owned()))
    });
    let all = exports::round(&mut exports::Tracker::default(), usize::MAX, files, &mut snapshot.errors);
    attach(&mut snapshot, all);
    snapshot
}

/// Gives each target its busiest exports (a target known only by its exports is not made up).
fn attach(snapshot: &mut Snapshot, mut busiest: std::collections::HashMap<String, Vec<Export>>) {
    for t in &mut snapshot.targets {
        if let Some(exports) = busiest.remove(&t.name) {
            t.busiest_exports = exports;
        }
    }
}

/// The parameters' values (what each is, its name, where it was read, its text) as a snapshot.
fn assemble<'a>(values: impl Iterator<Item = (Part, &'a str, &'a str, &'a str)>) -> Snapshot {
    let mut snapshot = Snapshot::default();
    for (part, name, place, text) in values {
        let target_name = name.split('.').nth(1).unwrap_or_default();
        let number =
            || text.trim().parse::<u64>().map_err(|_| format!("{name} ({place}): not a whole number"));
        match part {
            Part::Stats(kind) => {
                let i = target(&mut snapshot, target_name, Some(kind));
                match parse_stats(text) {
                    Ok(stats) => {
                        snapshot.targets[i].times = stats.times;
                        snapshot.targets[i].counters = stats.counters;
                    }
                    Err(e) => snapshot.errors.push(error(name, place, &e)),
                }
            }
            Part::Exports => match number() {
                Ok(n) => {
                    let i = target(&mut snapshot, target_name, None);
                    snapshot.targets[i].exports = Some(n);
                }
                Err(e) => snapshot.errors.push(e),
            },
            Part::Recovery => match parse_recovery_status(text) {
                Ok(status) => {
                    let i = target(&mut snapshot, target_name, None);
                    snapshot.targets[i].recovery = Some(status.status);
                }
                Err(e) => snapshot.errors.push(error(name, place, &e)),
            },
            Part::Space(field) => match number() {
                Ok(n) => {
                    let i = target(&mut snapshot, target_name, None);
                    *field(snapshot.targets[i].space.get_or_insert_with(Space::default)) = n;
                }
                Err(e) => snapshot.errors.push(e),
            },
            Part::Locks(field) => {
                // A server target's namespace: `filter-TARGET_UUID` (an OST), `mdt-TARGET_UUID`;
                // the others (a client's `…-osc-…`, the MGS's and MGC's) are not a target's.
                let namespace = name.split('.').nth(2).unwrap_or_default();
                let Some((kind, target_name)) = namespace.strip_suffix("_UUID").and_then(|n| {
                    n.strip_prefix("filter-")
                        .map(|t| (Kind::Ost, t))
                        .or_else(|| n.strip_prefix("mdt-").map(|t| (Kind::Mdt, t)))
                }) else {
                    continue;
                };
                match number() {
                    Ok(n) => {
                        let i = target(&mut snapshot, target_name, Some(kind));
                        *field(&mut snapshot.targets[i].locks) = Some(n);
                    }
                    Err(e) => snapshot.errors.push(e),
                }
            }
            Part::Health => snapshot.healthy = Some(text.trim() == "healthy"),
            Part::Brw => match parse_brw_stats(text) {
                Ok(brw) => {
                    let i = target(&mut snapshot, target_name, None);
                    snapshot.targets[i].brw = brw.histograms;
                }
                Err(e) => snapshot.errors.push(error(name, place, &e)),
            },
            Part::Lnet => match parse_lnet_proc_stats(text) {
                Ok(counters) => snapshot.lnet = Some(counters),
                Err(e) => snapshot.errors.push(error(name, place, &e)),
            },
        }
    }
    for t in &mut snapshot.targets {
        if t.kind.is_none() {
            t.kind = Some(if t.name.contains("-OST") {
                Kind::Ost
            } else if t.name.contains("-MDT") {
                Kind::Mdt
            } else {
                Kind::Other
            });
        }
    }
    snapshot.targets.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    snapshot
}

/// The index of target `name`, added when new; `kind`, when known, is set.
fn target(snapshot: &mut Snapshot, name: &str, kind: Option<Kind>) -> usize {
    match snapshot.targets.iter().position(|t| t.name == name) {
        Some(i) => {
            if kind.is_some() {
                snapshot.targets[i].kind = kind;
            }
            i
        }
        None => {
            snapshot.targets.push(Target { kind, name: name.to_owned(), ..Target::default() });
            snapshot.targets.len() - 1
        }
    }
}

fn error(name: &str, place: &str, e: &StatsError) -> String {
    format!("{name} ({place}): {e}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lustre::lctl_params;

    /// A server's real `lctl get_param` output laid out as a 2.15 kernel holds it: one-value
    /// parameters in sysfs, multi-line ones in procfs.
    fn tree_of(fixture: &str) -> (tempfile::TempDir, String) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/lustre").join(fixture);
        let text = std::fs::read_to_string(path).unwrap();
        let dir = tempfile::tempdir().unwrap();
        for p in lctl_params(&text) {
            let tree = if p.value.contains('\n') { "proc/fs/lustre" } else { "sys/fs/lustre" };
            let mut file = dir.path().join(tree).join(p.name.replace('.', "/"));
            // An export's NID has dots of its own: its directory is named by the whole NID.
            if p.name.contains(".exports.") {
                let Some((target, kind, nid)) = exports::parse_name(p.name) else { continue };
                let component = if kind == Kind::Ost { "obdfilter" } else { "mdt" };
                file = dir
                    .path()
                    .join("proc/fs/lustre")
                    .join(component)
                    .join(target)
                    .join("exports")
                    .join(nid)
                    .join("stats");
            }
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, format!("{}\n", p.value.trim_end_matches('\n'))).unwrap();
        }
        (dir, text)
    }

    /// Read from the files, every target's figures are the ones lctl printed.
    /// LNet's counters are read from its own tree (debugfs, as 2.7 and later hold them), a
    /// `stats` file in Lustre's tree is not taken for them, and two seconds give its rates.
    #[test]
    fn lnets_counters_are_read_from_its_tree_and_give_rates() {
        let (dir, _) = tree_of("valid_valid.txt");
        let real = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/lustre/lnet_stats_proc.txt"),
        )
        .unwrap();
        let lnet = dir.path().join("sys/kernel/debug/lnet/stats");
        std::fs::create_dir_all(lnet.parent().unwrap()).unwrap();
        std::fs::write(&lnet, &real).unwrap();
        std::fs::write(dir.path().join("sys/fs/lustre/stats"), "not lnet's\n").unwrap();
        let root = Root::at(dir.path());
        let mut reader = Reader::default();
        let first = reader.read(&root).unwrap();
        assert_eq!(first.lnet.map(|l| (l.send_count, l.recv_length)), Some((195805494, 708781379083)));
        assert!(first.errors.is_empty(), "{:?}", first.errors);
        // A second later: 1,000 messages and 4 MiB more sent, 2 dropped.
        let later = real
            .replace("195805494", "195806494")
            .replace("216828482753", &(216828482753u64 + (4 << 20)).to_string())
            .replace(" 16957 ", " 16959 ");
        std::fs::write(&lnet, later).unwrap();
        let second = reader.read(&root).unwrap();
        let rates = LnetRates::between(&first, &second, 1.0).unwrap();
        assert_eq!(
            (rates.send_msgs_s, rates.send_bytes_s, rates.drop_msgs_s, rates.recv_bytes_s),
            (1000.0, 4194304.0, 2.0, 0.0)
        );
        // `lctl get_param stats` names it the same way.
        let from = from_lctl(&format!("stats=\n{real}"));
        assert_eq!(from.lnet, first.lnet);
        // A node without LNet's file has no LNet rates.
        std::fs::remove_file(&lnet).unwrap();
        let gone = read(&root).unwrap();
        assert_eq!((gone.lnet, LnetRates::between(&second, &gone, 1.0)), (None, None));
    }

    #[test]
    fn a_servers_targets_read_from_the_kernels_files_as_lctl_printed_them() {
        let (dir, text) = tree_of("valid_valid.txt");
        let snapshot = read(&Root::at(dir.path())).expect("Lustre is there");
        assert!(snapshot.errors.is_empty(), "{:?}", snapshot.errors);
        assert_eq!(snapshot.healthy, Some(true));
        let names: Vec<_> = snapshot.targets.iter().map(|t| (t.kind.unwrap(), t.name.as_str())).collect();
        assert_eq!(
            names,
            [(Kind::Ost, "ai400-OST0000"), (Kind::Ost, "ai400-OST0001"), (Kind::Mdt, "ai400-MDT0000"),]
        );
        let params = lctl_params(&text);
        let value = |name: &str| params.iter().find(|p| p.name == name).map(|p| p.value.trim()).unwrap();
        let ost = snapshot.target("ai400-OST0000").unwrap();
        let printed = parse_stats(value("obdfilter.ai400-OST0000.stats")).unwrap();
        assert_eq!(ost.counters, printed.counters);
        assert_eq!(ost.counter("write_bytes").and_then(|w| w.sum), Some(104857600000));
        let space = ost.space.unwrap();
        assert_eq!(space.kbytes_avail.to_string(), value("osd-ldiskfs.ai400-OST0000.kbytesavail"));
        assert_eq!(space.files_free.to_string(), value("osd-ldiskfs.ai400-OST0000.filesfree"));
        assert_eq!(
            ost.exports.map(|n| n.to_string()).as_deref(),
            Some(value("obdfilter.ai400-OST0000.num_exports"))
        );
        let mdt = snapshot.target("ai400-MDT0000").unwrap();
        assert_eq!(mdt.counters, parse_stats(value("mdt.ai400-MDT0000.md_stats")).unwrap().counters);
        assert_eq!(mdt.exports, Some(19));
        assert_eq!(
            (mdt.locks.count, mdt.locks.timeouts, mdt.locks.contended, mdt.locks.contention_seconds),
            (Some(9), Some(0), Some(32), Some(2))
        );
        assert_eq!(
            ost.locks.count.map(|n| n.to_string()).as_deref(),
            Some(value("ldlm.namespaces.filter-ai400-OST0000_UUID.lock_count"))
        );
        // Each OSD's brw_stats, its tables as printed; lctl's output reads the same.
        for t in ["ai400-OST0000", "ai400-OST0001", "ai400-MDT0000"] {
            let printed = parse_brw_stats(value(&format!("osd-ldiskfs.{t}.brw_stats"))).unwrap();
            assert_eq!(snapshot.target(t).unwrap().brw, printed.histograms, "{t}");
            assert_eq!(from_lctl(&text).target(t).unwrap().brw, printed.histograms, "{t}");
        }
        let sizes = ost.brw.iter().find(|h| h.name == "disk_iosize").expect("disk I/O size");
        assert!(sizes.buckets.iter().any(|b| b.write > 0), "{sizes:?}");
        // On 2.15 and later brw_stats is in debugfs: found there the same.
        let from = dir.path().join("proc/fs/lustre/osd-ldiskfs/ai400-OST0000/brw_stats");
        let to = dir.path().join("sys/kernel/debug/lustre/osd-ldiskfs/ai400-OST0000/brw_stats");
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::rename(&from, &to).unwrap();
        let again = read(&Root::at(dir.path())).unwrap();
        assert_eq!(again.target("ai400-OST0000").unwrap().brw, ost.brw);
        // One that does not read as brw_stats is named, and the rest stands.
        std::fs::write(&to, "snapshot_time: 1.0 secs.nsecs\nnot a row\n").unwrap();
        let bad = read(&Root::at(dir.path())).unwrap();
        assert!(bad.target("ai400-OST0000").unwrap().brw.is_empty());
        assert_eq!(bad.errors.len(), 1, "{:?}", bad.errors);
        assert!(bad.errors[0].starts_with("osd-ldiskfs.ai400-OST0000.brw_stats ("), "{:?}", bad.errors);
        assert!(!bad.target("ai400-OST0001").unwrap().brw.is_empty());
    }

    /// A reader finds the files once and reads them each second: a counter that moved is
    /// read; a target that goes is gone the next second (its files are found again), one that
    /// comes is found within [`FIND_EVERY`] seconds.
    /// A node without Lustre is looked at again every FIND_EVERY seconds, not every second;
    /// Lustre's modules loaded meanwhile show within that time.
    #[test]
    fn a_node_without_lustre_is_looked_at_every_find_every_seconds() {
        let (dir, _) = tree_of("valid_valid.txt");
        let lustre = dir.path().join("sys/fs/lustre");
        let (proc_lustre, away) = (dir.path().join("proc/fs/lustre"), dir.path().join("proc/fs/away"));
        std::fs::rename(&lustre, dir.path().join("sys/fs/away")).unwrap();
        std::fs::rename(&proc_lustre, &away).unwrap();
        let root = Root::at(dir.path());
        let mut reader = Reader::default();
        assert!(reader.read(&root).is_none());
        std::fs::rename(dir.path().join("sys/fs/away"), &lustre).unwrap();
        std::fs::rename(&away, &proc_lustre).unwrap();
        let looks: Vec<bool> = (0..FIND_EVERY).map(|_| reader.read(&root).is_some()).collect();
        let mut want = vec![false; FIND_EVERY as usize];
        want[FIND_EVERY as usize - 1] = true;
        assert_eq!(looks, want, "not looked at until FIND_EVERY seconds after the last look");
    }

    #[test]
    fn a_reader_reads_what_it_found_and_finds_again() {
        let (dir, _) = tree_of("valid_valid.txt");
        let root = Root::at(dir.path());
        let mut reader = Reader::default();
        let first = reader.read(&root).unwrap();
        assert_eq!(first, read(&root).unwrap());
        let stats = dir.path().join("proc/fs/lustre/obdfilter/ai400-OST0000/stats");
        let text = std::fs::read_to_string(&stats).unwrap().replace("25001 samples", "25002 samples");
        std::fs::write(&stats, text).unwrap();
        let moved = reader.read(&root).unwrap();
        assert_eq!(moved.target("ai400-OST0000").unwrap().counter("write_bytes").unwrap().samples, 25002);
        // OST0001 unmounted: its files go.
        std::fs::remove_dir_all(dir.path().join("proc/fs/lustre/obdfilter/ai400-OST0001")).unwrap();
        std::fs::remove_dir_all(dir.path().join("sys/fs/lustre/obdfilter/ai400-OST0001")).unwrap();
        std::fs::remove_dir_all(dir.path().join("sys/fs/lustre/osd-ldiskfs/ai400-OST0001")).unwrap();
        std::fs::remove_dir_all(dir.path().join("proc/fs/lustre/osd-ldiskfs/ai400-OST0001")).unwrap();
        std::fs::remove_dir_all(dir.path().join("sys/fs/lustre/ldlm/namespaces/filter-ai400-OST0001_UUID"))
            .unwrap();
        reader.read(&root);
        let gone = reader.read(&root).unwrap();
        assert!(gone.target("ai400-OST0001").is_none(), "{:?}", gone.targets);
        assert!(gone.errors.is_empty(), "{:?}", gone.errors);
        // Mounted again: seen within FIND_EVERY seconds.
        let (again, _) = tree_of("valid_valid.txt");
        let source = again.path().join("proc/fs/lustre/obdfilter/ai400-OST0001");
        std::fs::create_dir_all(dir.path().join("proc/fs/lustre/obdfilter/ai400-OST0001")).unwrap();
        for entry in std::fs::read_dir(&source).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(
                entry.path(),
                dir.path().join("proc/fs/lustre/obdfilter/ai400-OST0001").join(entry.file_name()),
            )
            .unwrap();
        }
        let seen = (0..=FIND_EVERY).any(|_| reader.read(&root).unwrap().target("ai400-OST0001").is_some());
        assert!(seen, "a target mounted again is found within {FIND_EVERY} s");
    }

    /// lctl's output of the same parameters gives the same snapshot as the files, on every
    /// real output; a bad value is named by its line.
    #[test]
    fn lctls_output_gives_what_the_files_give() {
        for fixture in [
            "valid_valid.txt",
            "valid_params-6.2.0-r9.txt",
            "valid_ex8761-lctl.txt",
            "valid_lustre-2-14-0_client_llite_client.txt",
        ] {
            let (dir, text) = tree_of(fixture);
            let files = read(&Root::at(dir.path())).unwrap();
            assert_eq!(from_lctl(&text), files, "{fixture}");
            assert!(!files.targets.is_empty(), "{fixture}");
        }
        let bad = from_lctl("health_check=healthy\nobdfilter.fs-OST0000.num_exports=many\n");
        assert_eq!(bad.errors, ["obdfilter.fs-OST0000.num_exports (line 2): not a whole number"]);
        assert_eq!(bad.healthy, Some(true));
    }

    /// A server with 21 clients (a real 2.14 server's output laid out as its kernel's files):
    /// each target keeps its busiest exports, by bytes in all the first second, whole as lctl
    /// printed them; the next second the client that wrote is first, rated by the kernel's
    /// times, and shown as the target's busiest client; a client evicted is forgotten.
    #[test]
    fn each_target_keeps_its_busiest_clients_exports_every_second() {
        let fixture = "valid_lustre-2.14.0_ddn133_2.14.0_ddn133_exports.txt";
        let (dir, text) = tree_of(fixture);
        let root = Root::at(dir.path());
        let mut reader = Reader::default();
        let first = reader.read(&root).unwrap();
        assert!(first.errors.is_empty(), "{:?}", first.errors);
        let all = from_lctl(&text);
        for name in ["ai400x2-MDT0000", "ai400x2-OST0000", "ai400x2-OST0001"] {
            let (read, dumped) = (first.target(name).unwrap(), all.target(name).unwrap());
            assert_eq!(dumped.busiest_exports.len(), 21, "{name}: every export of the output");
            assert_eq!(read.busiest_exports.len(), exports::BUSIEST, "{name}");
            assert_eq!(read.busiest_exports[..], dumped.busiest_exports[..exports::BUSIEST], "{name}");
            assert!(read.busiest_exports.iter().all(|e| e.rates.is_none()));
        }
        let ost = &all.target("ai400x2-OST0000").unwrap().busiest_exports;
        let bytes = |e: &Export| {
            ["read_bytes", "write_bytes"]
                .iter()
                .filter_map(|n| e.counters.iter().find(|s| s.name == *n)?.sum)
                .sum::<u64>()
        };
        assert!(ost.windows(2).all(|w| bytes(&w[0]) >= bytes(&w[1])), "busiest first");
        // A second later 0@lo (the least busy OST export) wrote 8 MiB in 2 RPCs; .103 is evicted.
        let stats = dir.path().join("proc/fs/lustre/obdfilter/ai400x2-OST0000/exports/0@lo/stats");
        let was = std::fs::read_to_string(&stats).unwrap();
        let time: f64 = was.split_whitespace().nth(1).unwrap().parse().unwrap();
        std::fs::write(
            &stats,
            format!(
                "snapshot_time {:.9} secs.nsecs\nwrite_bytes 2 samples [bytes] 4194304 4194304 8388608\n",
                time + 1.0
            ),
        )
        .unwrap();
        std::fs::remove_dir_all(
            dir.path().join("proc/fs/lustre/obdfilter/ai400x2-OST0000/exports/192.168.0.103@o2ib"),
        )
        .unwrap();
        let second = reader.read(&root).unwrap();
        assert!(second.errors.is_empty(), "{:?}", second.errors);
        let busiest = &second.target("ai400x2-OST0000").unwrap().busiest_exports;
        assert_eq!(busiest[0].nid, "0@lo");
        let r = busiest[0].rates.unwrap();
        assert_eq!((r.write_bytes_s, r.ops_s), (8388608.0, 2.0));
        assert!(busiest.iter().all(|e| e.nid != "192.168.0.103@o2ib"));
        let rates = TargetRates::between(&first, &second, 1.0);
        let ost = rates.iter().find(|t| t.name == "ai400x2-OST0000").unwrap();
        let moved: Vec<&ClientRates> = ost.active_clients(3).collect();
        assert_eq!(moved.len(), 1, "{moved:?}");
        assert_eq!((moved[0].nid.as_str(), moved[0].write_bytes_s), ("0@lo", 8388608.0));
        // Its line names the client.
        let line = serde_json::to_string(ost).unwrap();
        assert!(
            line.starts_with(
                r#"{"clients":[{"nid":"0@lo","ops_s":2.0,"read_bytes_s":0.0,"write_bytes_s":8388608.0}"#
            ),
            "{line}"
        );
    }

    /// Rates from two seconds: bytes and operations over the interval, space as df counts it,
    /// a remounted target from zero, recovery shown only while it is under way.
    #[test]
    fn a_targets_rates_over_a_second() {
        let (dir, _) = tree_of("valid_valid.txt");
        let root = Root::at(dir.path());
        let before = read(&root).unwrap();
        let stats = dir.path().join("proc/fs/lustre/obdfilter/ai400-OST0000/stats");
        let text = std::fs::read_to_string(&stats).unwrap();
        // Half a second later: 50 more writes of 4 MiB.
        let text = text.replace(
            "write_bytes               25001 samples [bytes] 98304 4194304 104857600000",
            "write_bytes               25051 samples [bytes] 98304 4194304 105067315200",
        );
        assert!(text.contains("25051"), "the fixture's line is as expected");
        std::fs::write(&stats, text).unwrap();
        std::fs::write(
            dir.path().join("proc/fs/lustre/obdfilter/ai400-OST0001/recovery_status"),
            "status: RECOVERING\n",
        )
        .unwrap();
        let after = read(&root).unwrap();
        let rates = TargetRates::between(&before, &after, 0.5);
        let ost = rates.iter().find(|r| r.name == "ai400-OST0000").unwrap();
        assert_eq!((ost.component.as_str(), ost.write_bytes_s, ost.ops_s), ("ost", 419_430_400.0, 100.0));
        assert_eq!((ost.read_bytes_s, ost.exports, ost.recovery.as_deref()), (0.0, Some(5), None));
        let space = after.target("ai400-OST0000").unwrap().space.unwrap();
        let used = (space.kbytes_total - space.kbytes_free) as f64;
        let pct = ost.space_used_pct.unwrap();
        assert!((pct - 100.0 * used / (used + space.kbytes_avail as f64)).abs() < 1e-9 && pct > 0.0, "{pct}");
        let other = rates.iter().find(|r| r.name == "ai400-OST0001").unwrap();
        assert_eq!((other.ops_s, other.recovery.as_deref()), (0.0, Some("RECOVERING")));
        // A remount: its counters start again, and count from zero.
        let rates = TargetRates::between(&after, &before, 1.0);
        let ost = rates.iter().find(|r| r.name == "ai400-OST0000").unwrap();
        assert_eq!(ost.write_bytes_s, 104857600000.0);
        let mdt =
            TargetRates::between(&before, &before, 1.0).into_iter().find(|r| r.component == "mdt").unwrap();
        assert_eq!(mdt.ops_s, 0.0);
    }

    /// A client's mounts; a node without Lustre is not read; a file that does not read is
    /// named and the rest stands.
    #[test]
    fn a_client_a_node_without_lustre_and_a_bad_file() {
        let (dir, _) = tree_of("valid_lustre-2-14-0_client_llite_client.txt");
        let snapshot = read(&Root::at(dir.path())).unwrap();
        assert_eq!(snapshot.targets.len(), 1);
        let client = &snapshot.targets[0];
        assert_eq!((client.kind, client.name.as_str()), (Some(Kind::Client), "ai400x2-ff47bce9ca35d800"));
        assert_eq!(client.counter("open").map(|s| s.samples), Some(35955554));

        assert_eq!(read(&Root::at(tempfile::tempdir().unwrap().path())), None);

        let (dir, _) = tree_of("valid_valid.txt");
        std::fs::write(dir.path().join("proc/fs/lustre/obdfilter/ai400-OST0001/stats"), "write_bytes lots\n")
            .unwrap();
        std::fs::write(dir.path().join("sys/fs/lustre/obdfilter/ai400-OST0001/num_exports"), "many\n")
            .unwrap();
        let snapshot = read(&Root::at(dir.path())).unwrap();
        assert_eq!(snapshot.errors.len(), 2, "{:?}", snapshot.errors);
        assert!(
            snapshot.errors[0].contains("/proc/fs/lustre/obdfilter/ai400-OST0001/stats"),
            "{:?}",
            snapshot.errors
        );
        assert!(snapshot.target("ai400-OST0001").is_some_and(|t| t.counters.is_empty() && t.space.is_some()));
        assert!(snapshot.target("ai400-OST0000").is_some_and(|t| !t.counters.is_empty()));
    }
}
