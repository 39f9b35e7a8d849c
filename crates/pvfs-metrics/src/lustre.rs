//! Lustre's own counters, in the kernel's text (issue 29's first slice: the parsers).
//!
//! - [`parse_stats`]: one `stats` file — `obdfilter.*.stats`, `mdt.*.md_stats`, `llite.*.stats`,
//!   an export's `*.exports.NID.stats`, `ost.OSS.*.stats` — as `lprocfs_stats_seq_show`
//!   (lustre/obdclass/lprocfs_status.c) prints it: `snapshot_time` (and, from 2.15,
//!   `start_time` and `elapsed_time`) in `secs.nsecs` (`secs.usecs` before 2.12), then a line
//!   per counter that has counted: `NAME COUNT samples [UNIT]`, with `MIN MAX SUM` for the
//!   counters that keep them and `SUMSQUARE` for those that keep that too.
//! - [`parse_brw_stats`]: an OSD's `brw_stats` (`osd-*.*.brw_stats`, lustre/osd-ldiskfs's
//!   `brw_stats_show`): its times, then histograms of read and write RPCs and I/Os — pages per
//!   bulk RPC, discontiguous pages and blocks, fragments, I/Os in flight, I/O time, I/O size,
//!   block maps — each a titled table of `BUCKET: COUNT % CUM% | COUNT % CUM%` rows.
//! - [`parse_recovery_status`]: a target's `recovery_status` (`KEY: VALUE` lines, as
//!   `lprocfs_recovery_status_seq_show` prints them: `status: COMPLETE`, `RECOVERING`,
//!   `WAITING_FOR_CLIENTS`, `INACTIVE`, and the clients and requests counted).
//! - [`parse_lnet_stats`]: `lnetctl stats show`'s YAML: LNet's message and byte counters
//!   (`send_count`, `recv_length`, `drop_count`, …) under `statistics:`; [`parse_lnet_proc_stats`]:
//!   the same counters as the kernel's `stats` file holds them (what the agent reads).
//! - [`lctl_params`]: `lctl get_param`'s output split into its parameters: `NAME=VALUE` on
//!   one line, or `NAME=` and the value on the lines after it (a stats file, brw_stats,
//!   job_stats), up to the next parameter's line.
//! - [`params`]: where lctl finds a parameter (sysfs, debugfs, procfs, in its order), so the
//!   agent reads the kernel's files; [`node`]: a node's targets in one second from them.
//! - [`jobstats`]: a target's `job_stats`, a job at a time in memory that does not grow with
//!   the jobs; [`jobid`]: the job id a client gives a process's I/O, worked out as its kernel
//!   does (`jobid_var`, `jobid_name`).
//!
//! The model is lustre_collector's (`Stat`: name, units, samples, min, max, sum, sumsquare),
//! so a later exporter can name things as lustrefs-exporter does. Written here rather than
//! taken from that crate: measured on this machine, `lustre_collector` 0.12.1 parses a 14 KB
//! `lctl get_param` output in 0.5–0.6 ms and a server's 93 KB exports in 2.8 ms (about
//! 33 MB/s), which every second on a server with thousands of exports is most of a core's
//! percent — the agent's whole budget — and it parses only `lctl`'s output, which would mean
//! a process per second where the kernel's files can be read directly; its library also
//! pulls in clap, serde_yaml (deprecated) and an exact pin of `combine`. The formats are
//! line-oriented and small; a line scan does them.

pub mod exports;
pub mod jobid;
pub mod jobstats;
pub mod node;
pub mod params;

/// One counter of a stats file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub name: String,
    /// What it counts in: `bytes`, `usecs`, `reqs`, …, as printed between the brackets.
    pub units: String,
    pub samples: u64,
    /// Only for the counters that keep them (`LPROCFS_CNTR_AVGMINMAX`).
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub sum: Option<u64>,
    /// Only for the counters that keep it too (`LPROCFS_CNTR_STDDEV`).
    pub sumsquare: Option<u64>,
}

/// The times a stats or brw_stats file opens with (Unix seconds, to about 0.1 µs in an f64).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Times {
    /// When it was read, as the kernel says.
    pub snapshot_time: Option<f64>,
    /// When its counters started (2.15 on), and the seconds since.
    pub start_time: Option<f64>,
    pub elapsed_time: Option<f64>,
}

impl Times {
    /// Reads `name VALUE …` into its time when `name` is one (`snapshot_time`, or
    /// `snapshot_time:` as brw_stats writes it); `None` when it is not a time's line.
    fn read<'a>(
        &mut self,
        name: &str,
        mut words: impl Iterator<Item = &'a str>,
    ) -> Option<Result<(), &'static str>> {
        let slot = match name.trim_end_matches(':') {
            "snapshot_time" => &mut self.snapshot_time,
            "start_time" => &mut self.start_time,
            "elapsed_time" => &mut self.elapsed_time,
            _ => return None,
        };
        // `1688603042.554414847 secs.nsecs`, `secs.usecs` before 2.12, `(secs.nsecs)` in
        // brw_stats before 2.15.
        let Some(value) = words.next() else { return Some(Err("a time without its value")) };
        Some(seconds(value).map(|t| *slot = Some(t)).ok_or("a time that is not secs.fraction"))
    }
}

/// A whole stats file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stats {
    pub times: Times,
    /// The counters that have counted (the kernel leaves out those at 0), in its order.
    pub counters: Vec<Stat>,
}

impl Stats {
    /// The counter `name`, if it has counted.
    pub fn get(&self, name: &str) -> Option<&Stat> {
        self.counters.iter().find(|s| s.name == name)
    }
}

/// A line of Lustre's output that is not in its format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} of {what}: {why}: {text:?}")]
pub struct StatsError {
    /// What was being read: `a Lustre stats file`, `brw_stats`, ….
    pub what: &'static str,
    /// 1-based, within the text given.
    pub line: usize,
    pub text: String,
    pub why: &'static str,
}

/// Reads one stats file's text (the value of a `…stats=` parameter, or the file itself).
pub fn parse_stats(text: &str) -> Result<Stats, StatsError> {
    let mut counters = Vec::new();
    let times = visit_stats(text, |c| {
        counters.push(Stat {
            name: c.name.to_owned(),
            units: c.units.to_owned(),
            samples: c.samples,
            min: c.min,
            max: c.max,
            sum: c.sum,
            sumsquare: c.sumsquare,
        })
    })?;
    Ok(Stats { times, counters })
}

/// One counter's line of a stats file, borrowed from its text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CounterLine<'a> {
    pub name: &'a str,
    pub units: &'a str,
    pub samples: u64,
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub sum: Option<u64>,
    pub sumsquare: Option<u64>,
}

/// Reads a stats file's lines, giving each counter to `each` as it is read (nothing allocated
/// but on an error: a server's thousands of export files are read this way each second, and
/// only the few kept are made into [`Stat`]s); returns its times.
pub(crate) fn visit_stats<'a>(
    text: &'a str,
    mut each: impl FnMut(CounterLine<'a>),
) -> Result<Times, StatsError> {
    let mut times = Times::default();
    for (i, line) in text.lines().enumerate() {
        let err = |why| StatsError { what: "a Lustre stats file", line: i + 1, text: line.to_owned(), why };
        let mut words = line.split_ascii_whitespace();
        let Some(name) = words.next() else { continue };
        if let Some(read) = times.read(name, &mut words) {
            read.map_err(err)?;
            continue;
        }
        let samples =
            words.next().and_then(|w| w.parse::<u64>().ok()).ok_or_else(|| err("no sample count"))?;
        if words.next() != Some("samples") {
            return Err(err("no `samples` after the count"));
        }
        let units = words
            .next()
            .and_then(|w| w.strip_prefix('['))
            .and_then(|w| w.strip_suffix(']'))
            .ok_or_else(|| err("no [unit] after `samples`"))?;
        let mut numbers = [0u64; 4];
        let mut count = 0;
        for w in words {
            let n = w.parse::<u64>().map_err(|_| err("a figure that is not a whole number"))?;
            if count == numbers.len() {
                count += 1;
                break;
            }
            numbers[count] = n;
            count += 1;
        }
        let (min, max, sum, sumsquare) = match (count, numbers) {
            (0, _) => (None, None, None, None),
            (3, [min, max, sum, _]) => (Some(min), Some(max), Some(sum), None),
            (4, [min, max, sum, sq]) => (Some(min), Some(max), Some(sum), Some(sq)),
            _ => return Err(err("neither none, three (min max sum) nor four figures after the unit")),
        };
        each(CounterLine { name, units, samples, min, max, sum, sumsquare });
    }
    Ok(times)
}

/// An OSD's brw_stats.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BrwStats {
    pub times: Times,
    /// Its tables in the kernel's order (one with no rows has no buckets).
    pub histograms: Vec<BrwHistogram>,
}

/// One brw_stats table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrwHistogram {
    /// lustre_collector's (and so lustrefs-exporter's) name for it: `pages`, `discont_pages`,
    /// `discont_blocks`, `dio_frags`, `rpc_hist`, `io_time`, `disk_iosize`, `block_maps_msec`,
    /// and the I/O time of one I/O size, `4K I/O time (1/1000s)`, `io_time_4096` (its size in
    /// bytes, as lustre_collector 0.12.6's `size_to_time` names it); a table Lustre adds later
    /// is named by its title.
    pub name: String,
    /// As printed: `pages per bulk r/w`.
    pub title: String,
    /// What the rows count: `rpcs`, `ios`, `maps`.
    pub unit: String,
    pub buckets: Vec<BrwBucket>,
}

/// A row: the bucket (`1K` read as 1024) and the read and write counts in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrwBucket {
    pub name: u64,
    pub read: u64,
    pub write: u64,
}

/// The tables' titles and lustre_collector's names for them.
const BRW_NAMES: [(&str, &str); 8] = [
    ("pages per bulk r/w", "pages"),
    ("discontiguous pages", "discont_pages"),
    ("discontiguous blocks", "discont_blocks"),
    ("disk fragmented I/Os", "dio_frags"),
    ("disk I/Os in flight", "rpc_hist"),
    ("I/O time (1/1000s)", "io_time"),
    ("disk I/O size", "disk_iosize"),
    ("block maps msec", "block_maps_msec"),
];

/// Reads one brw_stats file's text.
pub fn parse_brw_stats(text: &str) -> Result<BrwStats, StatsError> {
    let mut stats = BrwStats::default();
    for (i, line) in text.lines().enumerate() {
        let err = |why| StatsError { what: "Lustre's brw_stats", line: i + 1, text: line.to_owned(), why };
        let trimmed = line.trim();
        // Blank, and the `read | write` line above each table's title.
        if trimmed.is_empty() || (trimmed.starts_with("read") && trimmed.ends_with("write")) {
            continue;
        }
        let mut words = trimmed.split_ascii_whitespace();
        let first = words.next().unwrap_or_default();
        if let Some(read) = stats.times.read(first, &mut words) {
            read.map_err(err)?;
            continue;
        }
        // A title: `pages per bulk r/w     rpcs  % cum % |  rpcs        % cum %`.
        if let Some(head) = trimmed.split('|').next().and_then(|h| h.trim_end().strip_suffix("% cum %")) {
            let head = head.trim_end();
            let (title, unit) = head
                .rsplit_once(char::is_whitespace)
                .ok_or_else(|| err("a table's title without its unit"))?;
            let title = title.trim();
            let sized = title
                .strip_suffix(" I/O time (1/1000s)")
                .and_then(bucket)
                .map(|size| format!("io_time_{size}"));
            let name = match sized {
                Some(name) => name,
                None => BRW_NAMES.iter().find(|(t, _)| *t == title).map_or(title, |(_, n)| n).to_owned(),
            };
            stats.histograms.push(BrwHistogram {
                name,
                title: title.to_owned(),
                unit: unit.to_owned(),
                buckets: Vec::new(),
            });
            continue;
        }
        // A row: `1K:  0   0   0   |    8  88 100`.
        let (label, rest) =
            trimmed.split_once(':').ok_or_else(|| err("neither a time, a title nor a row"))?;
        let name = bucket(label).ok_or_else(|| err("a bucket that is not a number (with K, M or G)"))?;
        let (read, write) =
            rest.split_once('|').ok_or_else(|| err("a row without `|` between read and write"))?;
        let count = |side: &str| side.split_ascii_whitespace().next().and_then(|c| c.parse::<u64>().ok());
        let (Some(read), Some(write)) = (count(read), count(write)) else {
            return Err(err("a row whose read or write count is not a whole number"));
        };
        let table = stats.histograms.last_mut().ok_or_else(|| err("a row before any table's title"))?;
        table.buckets.push(BrwBucket { name, read, write });
    }
    Ok(stats)
}

/// A bucket's label: `32`, `1K` (1024), `1M`, `2G`.
fn bucket(label: &str) -> Option<u64> {
    let label = label.trim();
    let (digits, scale) = match label.as_bytes().last()? {
        b'K' | b'k' => (&label[..label.len() - 1], 1u64 << 10),
        b'M' | b'm' => (&label[..label.len() - 1], 1 << 20),
        b'G' | b'g' => (&label[..label.len() - 1], 1 << 30),
        _ => (label, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// A target's recovery status: its state and every `KEY: VALUE` the kernel printed with it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecoveryStatus {
    /// `COMPLETE`, `RECOVERING`, `WAITING_FOR_CLIENTS`, `INACTIVE`, … as printed.
    pub status: String,
    /// The other lines, in order: `recovery_duration` → `150`, `completed_clients` → `4/8`, ….
    pub fields: Vec<(String, String)>,
}

impl RecoveryStatus {
    /// A field that is a whole number: `recovery_duration`, `time_remaining`, `replayed_requests`.
    pub fn number(&self, key: &str) -> Option<u64> {
        self.field(key)?.parse().ok()
    }

    /// A field of clients, `DONE/ALL`: `completed_clients`, `connected_clients`.
    pub fn clients(&self, key: &str) -> Option<(u64, u64)> {
        let (done, all) = self.field(key)?.split_once('/')?;
        Some((done.trim().parse().ok()?, all.trim().parse().ok()?))
    }

    fn field(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// Reads one `recovery_status` value.
pub fn parse_recovery_status(text: &str) -> Result<RecoveryStatus, StatsError> {
    const WHAT: &str = "Lustre's recovery_status";
    let mut status = RecoveryStatus::default();
    for (i, line) in text.lines().enumerate() {
        let err = |why| StatsError { what: WHAT, line: i + 1, text: line.to_owned(), why };
        if line.trim().is_empty() {
            continue;
        }
        let (key, value) = line.split_once(':').ok_or_else(|| err("not a `KEY: VALUE` line"))?;
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(err("not a `KEY: VALUE` line"));
        }
        if key == "status" {
            status.status = value.to_owned();
        } else {
            status.fields.push((key.to_owned(), value.to_owned()));
        }
    }
    if status.status.is_empty() {
        return Err(StatsError {
            what: WHAT,
            line: 1,
            text: text.lines().next().unwrap_or_default().to_owned(),
            why: "no `status:` line",
        });
    }
    Ok(status)
}

/// LNet's counters: messages and bytes this node has sent, received, routed and dropped since
/// LNet started (or the counters were reset), and its messages in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LnetCounters {
    /// Messages allocated now, and the most ever.
    pub msgs_alloc: u64,
    pub msgs_max: u64,
    pub errors: u64,
    pub send_count: u64,
    pub recv_count: u64,
    pub route_count: u64,
    pub drop_count: u64,
    pub send_length: u64,
    pub recv_length: u64,
    pub route_length: u64,
    pub drop_length: u64,
}

impl LnetCounters {
    /// The counters in the kernel's order, by the names `lnetctl stats show` gives them.
    const NAMES: [&str; 11] = [
        "msgs_alloc",
        "msgs_max",
        "errors",
        "send_count",
        "recv_count",
        "route_count",
        "drop_count",
        "send_length",
        "recv_length",
        "route_length",
        "drop_length",
    ];

    fn field(&mut self, i: usize) -> &mut u64 {
        match i {
            0 => &mut self.msgs_alloc,
            1 => &mut self.msgs_max,
            2 => &mut self.errors,
            3 => &mut self.send_count,
            4 => &mut self.recv_count,
            5 => &mut self.route_count,
            6 => &mut self.drop_count,
            7 => &mut self.send_length,
            8 => &mut self.recv_length,
            9 => &mut self.route_length,
            _ => &mut self.drop_length,
        }
    }

    /// The same counters from `lnetctl stats show`'s (which has more: the health counters of
    /// 2.12 and later, not kept here); `None` when one of the eleven is missing.
    pub fn from_lnetctl(counters: &[(String, u64)]) -> Option<LnetCounters> {
        let mut out = LnetCounters::default();
        for (i, name) in Self::NAMES.iter().enumerate() {
            *out.field(i) = counters.iter().find(|(n, _)| n == name)?.1;
        }
        Some(out)
    }
}

/// LNet's `stats` file (`/sys/kernel/debug/lnet/stats`; `/proc/sys/lnet/stats` before 2.7),
/// as `__proc_lnet_stats` (lnet/lnet/router_proc.c) prints it: one line of eleven numbers,
/// `"%u %u %u %u %u %u %u %llu %llu %llu %llu"` — msgs_alloc, msgs_max, errors, send_count,
/// recv_count, route_count, drop_count, then send, recv, route and drop lengths in bytes.
/// The file is read for these counters rather than running `lnetctl stats show` every second.
pub fn parse_lnet_proc_stats(text: &str) -> Result<LnetCounters, StatsError> {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let err = |why| StatsError { what: "LNet's stats file", line: 1, text: line.to_owned(), why };
    let mut counters = LnetCounters::default();
    let mut fields = line.split_ascii_whitespace();
    for i in 0..LnetCounters::NAMES.len() {
        let field = fields.next().ok_or_else(|| err("fewer than the eleven counters"))?;
        *counters.field(i) = field.parse().map_err(|_| err("a counter that is not a whole number"))?;
    }
    if fields.next().is_some() {
        return Err(err("more than the eleven counters"));
    }
    Ok(counters)
}

/// `lnetctl stats show`'s counters, by name, in its order.
pub fn parse_lnet_stats(text: &str) -> Result<Vec<(String, u64)>, StatsError> {
    const WHAT: &str = "`lnetctl stats show`";
    let mut counters = Vec::new();
    let mut inside = false;
    for (i, line) in text.lines().enumerate() {
        let err = |why| StatsError { what: WHAT, line: i + 1, text: line.to_owned(), why };
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            // A top-level key: the counters are under `statistics:` only.
            inside = line.trim_end() == "statistics:";
            continue;
        }
        if !inside {
            continue;
        }
        let (key, value) = line.trim().split_once(':').ok_or_else(|| err("not a `key: value` line"))?;
        let value = value.trim().parse::<u64>().map_err(|_| err("a counter that is not a whole number"))?;
        counters.push((key.trim().to_owned(), value));
    }
    if counters.is_empty() {
        return Err(StatsError {
            what: WHAT,
            line: 1,
            text: text.lines().next().unwrap_or_default().to_owned(),
            why: "no counters under `statistics:`",
        });
    }
    Ok(counters)
}

/// `SECS.FRACTION` as seconds (the fraction's digits say its unit: 9 nanoseconds, 6 micro).
fn seconds(text: &str) -> Option<f64> {
    let (secs, fraction) = text.split_once('.').unwrap_or((text, "0"));
    let secs: u64 = secs.parse().ok()?;
    if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Read without allocating (job_stats has three times per job, tens of thousands of jobs):
    // the first 18 digits are more than an f64 keeps.
    let digits = &fraction[..fraction.len().min(18)];
    let numerator: u64 = digits.parse().ok()?;
    Some(secs as f64 + numerator as f64 / 10f64.powi(digits.len() as i32))
}

/// One parameter of `lctl get_param`'s output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param<'a> {
    /// `obdfilter.fs-OST0000.stats`.
    pub name: &'a str,
    /// What follows the `=`: the rest of the line, or the lines after a bare `NAME=`, each
    /// ending in a newline.
    pub value: &'a str,
    /// The 1-based line of its name.
    pub line: usize,
}

/// `lctl get_param`'s output, a parameter at a time. A parameter's line is a dotted name with
/// no space in it, then `=`; none of the multi-line values lctl prints (stats, brw_stats,
/// job_stats' YAML, recovery_status) has such a line, their lines being `NAME  FIGURES`,
/// `KEY: VALUE` or a table.
pub fn lctl_params(text: &str) -> Vec<Param<'_>> {
    let mut params: Vec<Param<'_>> = Vec::new();
    // The open multi-line parameter: its name, line and where its value starts.
    let mut open: Option<(&str, usize, usize)> = None;
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += line.len();
        let Some((name, value)) = param_line(line) else { continue };
        if let Some((open_name, open_line, from)) = open.take() {
            params.push(Param { name: open_name, value: &text[from..start], line: open_line });
        }
        if value.trim_end_matches(['\n', '\r']).is_empty() {
            open = Some((name, i + 1, offset));
        } else {
            params.push(Param { name, value: value.trim_end_matches(['\n', '\r']), line: i + 1 });
        }
    }
    if let Some((name, line, from)) = open {
        params.push(Param { name, value: &text[from..], line });
    }
    params
}

/// A parameter's `NAME=REST` line: NAME a dotted name of the characters Lustre's parameter
/// and target names (and NIDs: `192.168.0.100@o2ib`) hold.
fn param_line(line: &str) -> Option<(&str, &str)> {
    let (name, value) = line.split_once('=')?;
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | ':' | '*');
    (!name.is_empty() && name.chars().all(allowed)).then_some((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real outputs, copied unmodified from whamcloud/lustrefs-exporter (testdata/lustre/README.md).
    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/lustre").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// A 2.15 server's output: an OST's stats with start and elapsed times, each counter's
    /// four figures; the file's other parameters around it.
    #[test]
    fn an_osts_stats_read_as_the_kernel_printed_them() {
        let text = fixture("valid_valid.txt");
        let params = lctl_params(&text);
        let ost = params.iter().find(|p| p.name == "obdfilter.ai400-OST0000.stats").expect("the OST's stats");
        let stats = parse_stats(ost.value).unwrap();
        // An f64 keeps a Unix time to about 0.1 µs, which is all a second's rate needs.
        let near =
            |t: Option<f64>, secs: f64, fraction: f64| t.is_some_and(|t| (t - secs - fraction).abs() < 1e-6);
        assert!(near(stats.times.snapshot_time, 1_688_603_042.0, 0.554_414_847), "{stats:?}");
        assert!(near(stats.times.start_time, 1_688_526_475.0, 0.271_489_35), "{stats:?}");
        assert!(near(stats.times.elapsed_time, 76_567.0, 0.282_925_497), "{stats:?}");
        let write = stats.get("write_bytes").unwrap();
        assert_eq!(
            (write.samples, write.units.as_str(), write.min, write.max, write.sum, write.sumsquare),
            (25001, "bytes", Some(98304), Some(4194304), Some(104857600000), Some(439803838556274688))
        );
        assert_eq!(
            stats.counters.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["write_bytes", "write", "create", "statfs", "get_info"]
        );
        // One-line parameters keep their value; every parameter is found once.
        let health = params.iter().find(|p| p.name == "health_check").unwrap();
        assert_eq!(health.line, 4);
        assert!(!health.value.contains('\n'), "{health:?}");
        assert!(params.iter().filter(|p| p.name.ends_with(".stats")).all(|p| parse_stats(p.value).is_ok()));
    }

    /// Every stats parameter of every fixture reads, each counter's figures in order (min ≤
    /// max ≤ sum where kept), and an export's stats are named by its NID.
    #[test]
    fn every_stats_parameter_of_the_real_outputs_reads() {
        let mut read = 0;
        for name in [
            "valid_valid.txt",
            "valid_ex8761-lctl.txt",
            "valid_params-6.2.0-r9.txt",
            "valid_lustre-2.14.0_ddn133_2.14.0_ddn133_exports.txt",
            "valid_lustre-2-14-0_client_llite_client.txt",
        ] {
            let text = fixture(name);
            for p in lctl_params(&text).iter().filter(|p| {
                p.name.ends_with("stats") && !p.name.ends_with("brw_stats") && !p.name.ends_with("job_stats")
            }) {
                let stats = parse_stats(p.value).unwrap_or_else(|e| panic!("{name}: {}: {e}", p.name));
                assert!(stats.times.snapshot_time.is_some(), "{name}: {}", p.name);
                for s in &stats.counters {
                    if let (Some(min), Some(max), Some(sum)) = (s.min, s.max, s.sum) {
                        assert!(min <= max && max <= sum, "{name}: {}: {s:?}", p.name);
                    }
                }
                read += 1;
            }
        }
        assert!(read >= 20, "{read} stats parameters");
        let exports = fixture("valid_lustre-2.14.0_ddn133_2.14.0_ddn133_exports.txt");
        let nid = lctl_params(&exports)
            .into_iter()
            .find(|p| p.name == "obdfilter.ai400x2-OST0000.exports.192.168.0.100@o2ib.stats")
            .expect("an export by its NID");
        let read_bytes = parse_stats(nid.value).unwrap().get("read_bytes").cloned().unwrap();
        assert_eq!((read_bytes.samples, read_bytes.sum), (1165330, Some(1221937070080)));
        let llite = fixture("valid_lustre-2-14-0_client_llite_client.txt");
        let client = lctl_params(&llite)
            .into_iter()
            .find(|p| p.name.starts_with("llite.") && p.name.ends_with(".stats"))
            .unwrap();
        let ioctl = parse_stats(client.value).unwrap().get("ioctl").cloned().unwrap();
        assert_eq!((ioctl.samples, ioctl.units.as_str(), ioctl.min), (114, "reqs", None), "a count alone");
    }

    /// brw_stats of Lustre 2.10 (`(secs.nsecs)`, tables with rows) and 2.15 (start and
    /// elapsed times, empty tables): every table named as lustre_collector names it, each row's
    /// bucket and counts.
    #[test]
    fn brw_stats_read_table_by_table() {
        let with_data = parse_brw_stats(&fixture("brw_stats_with_data.txt")).unwrap();
        assert!(with_data.times.snapshot_time.is_some_and(|t| (t - 1_534_158_712.738_772_9).abs() < 1e-6));
        let names: Vec<&str> = with_data.histograms.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "pages",
                "discont_pages",
                "discont_blocks",
                "dio_frags",
                "rpc_hist",
                "io_time",
                "disk_iosize",
                "block_maps_msec"
            ]
        );
        let pages = &with_data.histograms[0];
        assert_eq!((pages.title.as_str(), pages.unit.as_str()), ("pages per bulk r/w", "rpcs"));
        assert_eq!(pages.buckets.last(), Some(&BrwBucket { name: 1024, read: 0, write: 8 }), "1K: 8 writes");
        let size = &with_data.histograms[6];
        assert_eq!(size.buckets[0], BrwBucket { name: 128 << 10, read: 0, write: 1 });
        assert_eq!(size.buckets[3], BrwBucket { name: 1 << 20, read: 0, write: 32 });
        let maps = &with_data.histograms[7];
        assert_eq!(
            (maps.unit.as_str(), maps.buckets[0]),
            ("maps", BrwBucket { name: 1, read: 12689, write: 0 })
        );
        // The I/O time of one I/O size (Lustre 2.16's tables), named with the size in bytes as
        // lustre_collector's `size_to_time` names it (its test's header).
        let sized = parse_brw_stats(
            "4K I/O time (1/1000s)     ios   % cum % |  ios         % cum %\n1:  3 75 75 | 1 100 100\n2:  1 25 100 | 0 0 100\n",
        )
        .unwrap();
        assert_eq!(
            (sized.histograms[0].name.as_str(), sized.histograms[0].title.as_str()),
            ("io_time_4096", "4K I/O time (1/1000s)")
        );
        assert_eq!(sized.histograms[0].buckets[1], BrwBucket { name: 2, read: 1, write: 0 });
        let empty = parse_brw_stats(&fixture("brw_stats_empty.txt")).unwrap();
        assert!(
            empty.histograms.iter().all(|h| h.buckets.is_empty()) && empty.histograms.len() >= 3,
            "{empty:?}"
        );
        // A 2.15 server's, inside its lctl output.
        let text = fixture("valid_valid.txt");
        let ost =
            lctl_params(&text).into_iter().find(|p| p.name == "osd-ldiskfs.ai400-OST0000.brw_stats").unwrap();
        let brw = parse_brw_stats(ost.value).unwrap();
        assert!(brw.times.start_time.is_some() && brw.times.elapsed_time.is_some(), "{brw:?}");
        assert!(brw.histograms.iter().any(|h| !h.buckets.is_empty()), "{brw:?}");
        // Every brw_stats of every server output reads.
        for name in ["valid_valid.txt", "valid_ex8761-lctl.txt", "valid_params-6.2.0-r9.txt"] {
            let text = fixture(name);
            for p in lctl_params(&text).into_iter().filter(|p| p.name.ends_with(".brw_stats")) {
                let brw = parse_brw_stats(p.value).unwrap_or_else(|e| panic!("{name}: {}: {e}", p.name));
                assert!(brw.histograms.len() >= 3 && brw.times.snapshot_time.is_some(), "{name}: {}", p.name);
            }
        }
        for (bad, why) in [
            ("1X: 0 0 0 | 0 0 0", "a bucket that is not a number (with K, M or G)"),
            ("1K: 0 0 0 0 0 0", "a row without `|` between read and write"),
            ("4: x 0 0 | 0 0 0", "a row whose read or write count is not a whole number"),
        ] {
            let err = parse_brw_stats(&format!(
                "pages per bulk r/w     rpcs  % cum % |  rpcs        % cum %\n{bad}\n"
            ))
            .unwrap_err();
            assert_eq!((err.line, err.why), (2, why), "{bad}");
        }
        assert_eq!(parse_brw_stats("4: 1 0 0 | 0 0 0").unwrap_err().why, "a row before any table's title");
    }

    /// Recovery status, complete and waiting (the one-line form lctl prints for a target that
    /// has only its status), each target's by its parameter.
    #[test]
    fn recovery_status_reads_its_state_and_counts() {
        let text = fixture("recovery-waiting-for-clients.txt");
        let targets: Vec<(&str, RecoveryStatus)> = lctl_params(&text)
            .into_iter()
            .map(|p| (p.name, parse_recovery_status(p.value).unwrap_or_else(|e| panic!("{}: {e}", p.name))))
            .collect();
        let of = |name: &str| &targets.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("{name}")).1;
        let mdt = of("mdt.fs-MDT0000.recovery_status");
        assert_eq!(mdt.status, "COMPLETE");
        assert_eq!(
            (mdt.number("recovery_duration"), mdt.clients("completed_clients")),
            (Some(1760), Some((3, 7)))
        );
        assert_eq!(mdt.number("last_transno"), Some(4294967310));
        assert_eq!(of("mdt.fs-MDT0002.recovery_status").status, "WAITING_FOR_CLIENTS");
        assert_eq!(of("obdfilter.fs-OST0004.recovery_status").fields, []);
        assert_eq!(targets.len(), 5);
        let multiple = fixture("recovery-multiple.txt");
        let all: Vec<RecoveryStatus> =
            lctl_params(&multiple).iter().map(|p| parse_recovery_status(p.value).unwrap()).collect();
        assert_eq!(all.len(), 3);
        assert!(all.iter().all(|s| s.status == "COMPLETE" && s.clients("completed_clients").is_some()));
        assert_eq!(all[2].field("IR"), Some("ENABLED"), "the last line, without its newline");
        let err = parse_recovery_status("status: RECOVERING\ntime remaining 30\n").unwrap_err();
        assert_eq!((err.line, err.why), (2, "not a `KEY: VALUE` line"));
        assert_eq!(parse_recovery_status("recovery_start: 5\n").unwrap_err().why, "no `status:` line");
    }

    #[test]
    fn lnet_counters_read_by_name() {
        let counters = parse_lnet_stats(&fixture("lnetctl_stats.txt")).unwrap();
        let of = |name: &str| counters.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        assert_eq!(
            (of("send_count"), of("recv_count"), of("drop_count")),
            (Some(1110532), Some(1110512), Some(11))
        );
        assert_eq!((of("send_length"), of("drop_length")), (Some(261865376), Some(4832)));
        assert_eq!(counters.first().map(|(n, _)| n.as_str()), Some("msgs_alloc"));
        let err = parse_lnet_stats("statistics:\n    send_count: many\n").unwrap_err();
        assert_eq!((err.line, err.why), (2, "a counter that is not a whole number"));
        assert_eq!(
            parse_lnet_stats("net:\n    - net type: lo\n").unwrap_err().why,
            "no counters under `statistics:`"
        );
    }

    /// The kernel's one line of eleven counters, read in its order; the same counters as
    /// `lnetctl stats show` names them.
    #[test]
    fn lnet_counters_from_the_kernels_file() {
        let c = parse_lnet_proc_stats(&fixture("lnet_stats_proc.txt")).unwrap();
        assert_eq!(
            (c.msgs_alloc, c.msgs_max, c.errors, c.send_count, c.recv_count, c.route_count, c.drop_count),
            (0, 1172, 0, 195805494, 204125982, 0, 16957)
        );
        assert_eq!(
            (c.send_length, c.recv_length, c.route_length, c.drop_length),
            (216828482753, 708781379083, 0, 3268048)
        );
        let named =
            LnetCounters::from_lnetctl(&parse_lnet_stats(&fixture("lnetctl_stats.txt")).unwrap()).unwrap();
        assert_eq!(
            (named.msgs_max, named.send_count, named.recv_length, named.drop_length),
            (39, 1110532, 254091008, 4832)
        );
        assert_eq!(LnetCounters::from_lnetctl(&[("send_count".into(), 1)]), None);
        for (text, why) in [
            ("0 1 2 3 4 5 6 7 8 9\n", "fewer than the eleven counters"),
            ("0 1 2 3 4 5 6 7 8 9 10 11\n", "more than the eleven counters"),
            ("0 1 2 3 4 5 -6 7 8 9 10\n", "a counter that is not a whole number"),
            ("", "fewer than the eleven counters"),
        ] {
            assert_eq!(parse_lnet_proc_stats(text).unwrap_err().why, why, "{text:?}");
        }
    }

    /// Lustre before 2.12 printed `secs.usecs`; a line out of the format is named with why.
    #[test]
    fn older_times_read_and_a_bad_line_is_named() {
        let old = "snapshot_time             1409777887.590578 secs.usecs\nping                      12 samples [reqs]\n";
        let stats = parse_stats(old).unwrap();
        assert_eq!(stats.times.snapshot_time, Some(1409777887.590578));
        assert_eq!(stats.counters[0].samples, 12);
        for (text, why) in [
            ("read_bytes  x samples [bytes]", "no sample count"),
            ("read_bytes  3 sample [bytes]", "no `samples` after the count"),
            ("read_bytes  3 samples bytes 1 2 3", "no [unit] after `samples`"),
            (
                "read_bytes  3 samples [bytes] 1 2",
                "neither none, three (min max sum) nor four figures after the unit",
            ),
            ("read_bytes  3 samples [bytes] 1 -2 3", "a figure that is not a whole number"),
            ("snapshot_time  yesterday secs.nsecs", "a time that is not secs.fraction"),
        ] {
            let err = parse_stats(&format!("snapshot_time 1.5 secs.nsecs\n{text}\n")).unwrap_err();
            assert_eq!((err.line, err.why), (2, why), "{text}");
            assert!(err.to_string().starts_with("line 2 of a Lustre stats file: "), "{err}");
        }
    }
}
