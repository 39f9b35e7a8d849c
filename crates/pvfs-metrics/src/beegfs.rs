//! BeeGFS's own view of its servers and targets, as its command-line tools print it.
//!
//! - [`parse_ctl_serverstats`]: BeeGFS 7's `beegfs-ctl --serverstats [--nodetype=storage|meta]`,
//!   as `ModeIOStat` (ctl/source/modes/ModeIOStat.cpp, ThinkParQ/beegfs 7.4.7) prints it: the sum
//!   of all servers (`Total results for N nodes:`, then a row per second of the last
//!   `--history` seconds under a `time_index` header), one server's history (`beegfs-ctl
//!   --serverstats NODEID`: the same table without the title), or `--perserver` (`===== time
//!   index: T =====`, then a row per server under a `nodeID` header, `--names` adding the
//!   server's string ID as a last `name` column). `printStatsRowTitles`/`printStatsRow` make the
//!   columns: `write_KiB read_KiB reqs qlen bsy` for storage, `reqs qlen bsy` for meta (and
//!   mgmtd), all seven (`recv_KiB send_KiB` too) with `--details`. `--interval` repeats the table.
//! - [`parse_stats_server`]: BeeGFS 8's `beegfs stats server` (ThinkParQ/beegfs-go
//!   ctl/internal/cmd/stats/server.go, `printData`), as a table or as `--output
//!   json|json-pretty|ndjson` (ctl/internal/cmdfmt, `Printomatic`): columns `time uid node_id
//!   alias queue_length requests busy_workers written read sent received`, of which a
//!   per-server listing prints `node_id alias queue_length … received`, `--sum` and a single
//!   server `time queue_length … received`, `--debug` all.
//! - [`parse_ctl_listtargets`]: BeeGFS 7's `beegfs-ctl --listtargets` with any of `--state`,
//!   `--spaceinfo`, `--pools`, `--storagepools`, `--mirrorgroups` and `--nodesfirst`,
//!   `--longnodes` or `--hidenodeid` (ctl/source/modes/ModeListTargets.cpp, `printHeader` and
//!   `printTarget`), and `beegfs-df` (utils/scripts/beegfs-df), which is that command with
//!   `--hidenodeid --pools --spaceinfo` under a `METADATA SERVERS:` and a `STORAGE TARGETS:`
//!   title.
//! - [`parse_target_list`]: BeeGFS 8's `beegfs target list [--state] [--capacity]`
//!   (ctl/internal/cmd/target/list.go, `PrintTargetList`), table or JSON.
//!
//! Units are read as the printing code makes them, so a size is only as exact as it was printed:
//! ctl prints `write_KiB` as `%9.0f` of bytes / 1024 (so to ±512 B), target space as
//! `%9.1fGiB` of bytes / 2³⁰ (±0.05 GiB) and inodes as `%10.1fM` of inodes / 10⁶ (±50 000);
//! BeeGFS 8 prints sizes with `unitconv.FormatPrefix(…, IEC, prec)` and a `B` (`12KiB`,
//! `1.8TiB`; 0 decimals in stats, 1 in the target list) and inode counts with SI prefixes
//! (`1.2M`, `500.0k`), and exact whole numbers with `--raw`. Each is read back to the nearest
//! byte or inode of the printed figure; [`ServerStats`] and [`Target`] keep every column's text or
//! figure by its header name too.
//!
//! Counters are per second: ctl and `beegfs stats server` both print the servers'
//! `HighResolutionStats`, one entry per second (`reqs`/`requests` processed and bytes moved in
//! that second; `qlen`/`queue_length` and `bsy`/`busy_workers` as they stood when it was taken).
//!
//! BeeGFS 8 before 8.0.0 (its alphas and betas) named the columns differently and is not read.
//! A table printed with `--page-size=0` has no header: server statistics are read by their
//! default columns (told apart by number), a target list is refused, its columns depending on
//! its flags.

use serde_json::Value;

/// A line of BeeGFS's output that is not in its format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} of {what}: {why}: {text:?}")]
pub struct BeegfsError {
    /// What was being read: `` `beegfs-ctl --serverstats` ``, …
    pub what: &'static str,
    /// 1-based, within the text given.
    pub line: usize,
    pub text: String,
    pub why: &'static str,
}

const CTL_SERVERSTATS: &str = "`beegfs-ctl --serverstats`";
const STATS_SERVER: &str = "`beegfs stats server`";
const CTL_LISTTARGETS: &str = "`beegfs-ctl --listtargets`";
const TARGET_LIST: &str = "`beegfs target list`";

/// What a BeeGFS node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeType {
    Meta,
    Storage,
    Management,
    Client,
}

impl NodeType {
    /// The type as BeeGFS spells it anywhere: BeeGFS 8's `meta`, `storage`, `management`,
    /// `client` and its entity IDs' short forms (`m`, `s`, `mg`, `c`), BeeGFS 7's
    /// `beegfs-meta`… and ctl's `--nodetype` words (`metadata`, `mgmt`).
    pub fn parse(word: &str) -> Option<Self> {
        let word = word.trim().to_ascii_lowercase();
        let word = word.strip_prefix("beegfs-").unwrap_or(word.as_str());
        Some(match word {
            "m" | "meta" | "metadata" => Self::Meta,
            "s" | "storage" => Self::Storage,
            "mg" | "mgmt" | "mgmtd" | "management" => Self::Management,
            "c" | "client" => Self::Client,
            _ => return None,
        })
    }

    /// The integer that BeeGFS 8's JSON holds for a `beegfs.NodeType` (it has no JSON form of
    /// its own): 1 client, 2 meta, 3 storage, 4 management.
    fn from_go(n: i64) -> Option<Self> {
        Some(match n {
            1 => Self::Client,
            2 => Self::Meta,
            3 => Self::Storage,
            4 => Self::Management,
            _ => return None,
        })
    }

    /// The short form of BeeGFS 8's entity IDs (`LegacyId.String`).
    fn short(self) -> &'static str {
        match self {
            Self::Meta => "m",
            Self::Storage => "s",
            Self::Management => "mg",
            Self::Client => "c",
        }
    }
}

/// A server as the output names it; what it does not print is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeRef {
    /// The numeric node ID (`NumNodeID`, 1..2³²).
    pub num_id: Option<u32>,
    pub node_type: Option<NodeType>,
    /// BeeGFS 7's string node ID (the host name by default) or BeeGFS 8's alias.
    pub name: Option<String>,
}

/// BeeGFS 8's `m:1`, `s:101`, `mg:1` (`LegacyId.String`) or `meta:1` (`StringLong`).
fn legacy_id(text: &str) -> Option<(NodeType, u32)> {
    let (kind, num) = text.trim().split_once(':')?;
    Some((NodeType::parse(kind)?, num.trim().parse().ok()?))
}

// ---------------------------------------------------------------------------------------------
// Server statistics

/// One server's (or the sum's) counters in one second.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerStats {
    /// The second, in Unix seconds: a history row's `time_index` or `time`, or a
    /// `--perserver` table's time index. (BeeGFS 8's per-server listing prints no time.)
    pub time: Option<i64>,
    /// The server; `None` for the sum of all servers.
    pub node: Option<NodeRef>,
    /// BeeGFS 8's unique entity ID (`uid:N`), when printed.
    pub uid: Option<i64>,
    /// Every counter column by its header name, in the header's order and in the unit the
    /// header says: BeeGFS 7's `*_KiB` columns in KiB, BeeGFS 8's `written`, `read`, `sent` and
    /// `received` in bytes, the others in requests or threads.
    pub values: Vec<(String, u64)>,
}

impl ServerStats {
    /// The counter `name` (its header's spelling), if printed.
    pub fn value(&self, name: &str) -> Option<u64> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    /// KiB in BeeGFS 7's column `kib`, or bytes in BeeGFS 8's `bytes`.
    fn bytes(&self, kib: &str, bytes: &str) -> Option<u64> {
        self.value(kib).map(|k| k.saturating_mul(1024)).or_else(|| self.value(bytes))
    }

    /// Bytes written to the storage targets in the second (`write_KiB`, `written`).
    pub fn disk_write_bytes(&self) -> Option<u64> {
        self.bytes("write_KiB", "written")
    }

    /// Bytes read from the storage targets in the second (`read_KiB`, `read`).
    pub fn disk_read_bytes(&self) -> Option<u64> {
        self.bytes("read_KiB", "read")
    }

    /// Bytes received from the network in the second (`--details`' `recv_KiB`, `received`).
    pub fn net_recv_bytes(&self) -> Option<u64> {
        self.bytes("recv_KiB", "received")
    }

    /// Bytes sent to the network in the second (`--details`' `send_KiB`, `sent`).
    pub fn net_send_bytes(&self) -> Option<u64> {
        self.bytes("send_KiB", "sent")
    }

    /// Requests processed in the second (`reqs`, `requests`).
    pub fn requests(&self) -> Option<u64> {
        self.value("reqs").or_else(|| self.value("requests"))
    }

    /// Requests waiting in the server's queue when the second was taken (`qlen`,
    /// `queue_length`).
    pub fn queued_requests(&self) -> Option<u64> {
        self.value("qlen").or_else(|| self.value("queue_length"))
    }

    /// Worker threads busy when the second was taken (`bsy`, `busy_workers`).
    pub fn busy_workers(&self) -> Option<u64> {
        self.value("bsy").or_else(|| self.value("busy_workers"))
    }
}

/// One table of server statistics: one round of the command (`--interval` prints one a round).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerStatsTable {
    /// `Total results for N nodes:` (BeeGFS 8: `Total results for nodes: N`): the rows are the
    /// sum of this many servers.
    pub nodes_summed: Option<u32>,
    /// BeeGFS 7 `--perserver`'s `===== time index: T =====`: the second every row is of.
    pub time_index: Option<i64>,
    /// `(values show last second only)` after the time index: `--interval` was over a second,
    /// and the rows are still of one second, not of the interval.
    pub last_second_only: bool,
    /// Every column as the header names it, time and node columns included (JSON: the keys).
    pub columns: Vec<String>,
    pub rows: Vec<ServerStats>,
}

impl ServerStatsTable {
    /// Whether `row` begins the command's next round rather than continuing this one: a server
    /// met again, or a history that starts over (`--interval` reprints the last seconds).
    fn next_round(&self, row: &ServerStats) -> bool {
        let Some(last) = self.rows.last() else { return false };
        let same_node = |r: &ServerStats| row.node.is_some() && r.node == row.node;
        self.rows.iter().any(same_node)
            || matches!((last.time, row.time), (Some(a), Some(b)) if b <= a && row.node.is_none())
    }
}

/// What a ctl table's rows begin with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CtlFirst {
    /// `time_index`: a history, a second a row.
    Time,
    /// `nodeID`: `--perserver`, a server a row.
    Node,
}

/// Reads `beegfs-ctl --serverstats` run with `--nodetype=node_type` (ctl's default is storage),
/// every round of it.
pub fn parse_ctl_serverstats(text: &str, node_type: NodeType) -> Result<Vec<ServerStatsTable>, BeegfsError> {
    let mut tables: Vec<ServerStatsTable> = Vec::new();
    // A title read, whose header is still to come (a blank line comes between in --perserver).
    let mut pending: Option<ServerStatsTable> = None;
    // The open table's layout: its first column, its counters, and whether `name` ends it.
    let mut open: Option<(CtlFirst, Vec<String>, bool)> = None;
    for (i, line) in text.lines().enumerate() {
        let err = |why| BeegfsError { what: CTL_SERVERSTATS, line: i + 1, text: line.to_owned(), why };
        let trimmed = line.trim();
        if trimmed.is_empty() {
            // ctl ends every table with a blank line.
            open = None;
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("Total results for ") {
            // nodesTotalStats: `"Total results for " << numStatNodes << " nodes:"`.
            let n = rest
                .strip_suffix(" nodes:")
                .and_then(|n| n.trim().parse().ok())
                .ok_or_else(|| err("a `Total results for N nodes:` title without its count"))?;
            pending = Some(ServerStatsTable { nodes_summed: Some(n), ..ServerStatsTable::default() });
            open = None;
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("===== time index:") {
            // perNodeStats: `===== time index: %u =====`, or with `(values show last second
            // only)` before the closing `=====` when the interval is over a second.
            let rest =
                rest.strip_suffix("=====").ok_or_else(|| err("a time index without its closing `=====`"))?;
            let mut words = rest.split_whitespace();
            let t = words
                .next()
                .and_then(|t| t.parse().ok())
                .ok_or_else(|| err("a time index that is not Unix seconds"))?;
            let note: Vec<&str> = words.collect();
            let last_second_only = match note.as_slice() {
                [] => false,
                ["(values", "show", "last", "second", "only)"] => true,
                _ => return Err(err("a time index followed by words ctl does not print")),
            };
            pending = Some(ServerStatsTable {
                time_index: Some(t),
                last_second_only,
                ..ServerStatsTable::default()
            });
            open = None;
            continue;
        }
        let words: Vec<&str> = trimmed.split_whitespace().collect();
        let first = match words.first() {
            Some(&"time_index") => Some(CtlFirst::Time),
            Some(&"nodeID") => Some(CtlFirst::Node),
            _ => None,
        };
        if let Some(first) = first {
            let mut counters: Vec<String> = words[1..].iter().map(|w| (*w).to_owned()).collect();
            let names = first == CtlFirst::Node && counters.last().is_some_and(|c| c == "name");
            if names {
                counters.pop();
            }
            if counters.is_empty()
                || !counters.iter().all(|c| c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
            {
                return Err(err("a header without counter columns"));
            }
            let mut table = pending.take().unwrap_or_default();
            table.columns = words.iter().map(|w| (*w).to_owned()).collect();
            tables.push(table);
            open = Some((first, counters, names));
            continue;
        }
        let (Some((first, counters, names)), Some(table)) = (&open, tables.last_mut()) else {
            return Err(err("neither a title, a header nor a row under a header"));
        };
        let mut row = ServerStats::default();
        let mut words = words.into_iter();
        let lead = words.next().unwrap_or_default();
        match first {
            CtlFirst::Time => {
                row.time = Some(lead.parse().map_err(|_| err("a time_index that is not Unix seconds"))?);
            }
            CtlFirst::Node => {
                row.time = table.time_index;
                let id = lead.parse().map_err(|_| err("a nodeID that is not a number"))?;
                row.node = Some(NodeRef { num_id: Some(id), node_type: Some(node_type), name: None });
            }
        }
        for counter in counters {
            let figure = words.next().ok_or_else(|| err("fewer figures than the header has columns"))?;
            let figure = figure.parse().map_err(|_| err("a figure that is not a whole number"))?;
            row.values.push((counter.clone(), figure));
        }
        let rest: Vec<&str> = words.collect();
        if *names {
            let name = rest.join(" ");
            if name.is_empty() {
                return Err(err("a row without the name its header promises"));
            }
            if let Some(node) = &mut row.node {
                node.name = Some(name);
            }
        } else if !rest.is_empty() {
            return Err(err("more figures than the header has columns"));
        }
        table.rows.push(row);
    }
    Ok(tables)
}

/// BeeGFS 8's server statistics columns (`allColumns`), the defaults of a per-server listing
/// (`defaultWithNode`), and of a history (`defaultColumns`): what a table without a header
/// (`--page-size=0`) is read as, by its number of cells.
const STATS_COLUMNS: [&str; 11] = [
    "time",
    "uid",
    "node_id",
    "alias",
    "queue_length",
    "requests",
    "busy_workers",
    "written",
    "read",
    "sent",
    "received",
];
const STATS_WITH_NODE: [&str; 9] =
    ["node_id", "alias", "queue_length", "requests", "busy_workers", "written", "read", "sent", "received"];
const STATS_HISTORY: [&str; 8] =
    ["time", "queue_length", "requests", "busy_workers", "written", "read", "sent", "received"];

/// Reads `beegfs stats server`: a table (with or without headers), JSON arrays
/// (`--output=json`, `json-pretty`) or a JSON object a line (`ndjson`, or `json` with
/// `--page-size=0`), every round of it.
pub fn parse_stats_server(text: &str) -> Result<Vec<ServerStatsTable>, BeegfsError> {
    if is_json(text) { stats_server_json(text) } else { stats_server_table(text) }
}

/// Whether the output is JSON: its first line that is not a `Total results` title opens an
/// array or an object.
fn is_json(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("Total results for nodes:"))
        .is_some_and(|l| l.starts_with('{') || l.starts_with('['))
}

/// multiNodeAggregated's `Total results for nodes: %d`, printed to stdout whatever the output.
fn stats_total(line: &str) -> Option<Result<u32, &'static str>> {
    let rest = line.trim().strip_prefix("Total results for nodes:")?;
    Some(rest.trim().parse().map_err(|_| "a `Total results for nodes: N` title without its count"))
}

fn stats_server_table(text: &str) -> Result<Vec<ServerStatsTable>, BeegfsError> {
    let mut tables: Vec<ServerStatsTable> = Vec::new();
    let mut pending: Option<u32> = None;
    let mut header: Option<Pretty> = None;
    for (i, line) in text.lines().enumerate() {
        let err = |why| BeegfsError { what: STATS_SERVER, line: i + 1, text: line.to_owned(), why };
        if line.trim().is_empty() {
            // Printomatic ends every page with a blank line.
            header = None;
            continue;
        }
        if let Some(total) = stats_total(line) {
            pending = Some(total.map_err(err)?);
            header = None;
            continue;
        }
        if let Some(h) = Pretty::header(line, &STATS_COLUMNS) {
            tables.push(ServerStatsTable {
                nodes_summed: pending.take(),
                columns: h.names.clone(),
                ..ServerStatsTable::default()
            });
            header = Some(h);
            continue;
        }
        let h = match &header {
            Some(h) => h,
            None => {
                // `--page-size=0` prints rows only: the default columns, told apart by number.
                let names: &[&str] = match line.split_whitespace().count() {
                    8 => &STATS_HISTORY,
                    9 => &STATS_WITH_NODE,
                    11 => &STATS_COLUMNS,
                    _ => return Err(err("a row before any header, of no default column layout")),
                };
                let h = Pretty::headless(names);
                tables.push(ServerStatsTable {
                    nodes_summed: pending.take(),
                    columns: h.names.clone(),
                    ..ServerStatsTable::default()
                });
                header.insert(h)
            }
        };
        let cells = h.cells(line).map_err(err)?;
        let row = stats_row(h.names.iter().map(String::as_str).zip(cells.iter().map(String::as_str)))
            .map_err(err)?;
        push_stats_row(&mut tables, row);
    }
    Ok(tables)
}

/// Adds a row to the last table, or to a new one when it begins the next round.
fn push_stats_row(tables: &mut Vec<ServerStatsTable>, row: ServerStats) {
    match tables.last_mut() {
        Some(table) if !table.next_round(&row) => table.rows.push(row),
        Some(table) => {
            let columns = table.columns.clone();
            tables.push(ServerStatsTable { columns, rows: vec![row], ..ServerStatsTable::default() });
        }
        None => tables.push(ServerStatsTable { rows: vec![row], ..ServerStatsTable::default() }),
    }
}

/// One row of `beegfs stats server` from its cells by column name, as `printData` fills them.
fn stats_row<'a>(cells: impl Iterator<Item = (&'a str, &'a str)>) -> Result<ServerStats, &'static str> {
    let mut row = ServerStats::default();
    let mut node = NodeRef::default();
    for (name, cell) in cells {
        let cell = cell.trim();
        match name {
            "time" => {
                // RFC 3339 in the CLI's local zone, or the Unix seconds with --raw (and when out
                // of an int64's range).
                row.time = Some(unix_time(cell).ok_or("a time that is neither RFC 3339 nor Unix seconds")?);
            }
            "uid" if cell != "n/a" => {
                let n = cell.strip_prefix("uid:").unwrap_or(cell);
                row.uid = Some(n.parse().map_err(|_| "a uid that is not `uid:N`")?);
            }
            "node_id" if cell != "n/a" => {
                let (kind, id) = legacy_id(cell).ok_or("a node ID that is not `TYPE:N` (`m:1`, `s:2`)")?;
                node.node_type = Some(kind);
                node.num_id = Some(id);
            }
            "alias" if cell != "n/a" => node.name = Some(cell.to_owned()),
            "uid" | "node_id" | "alias" => {}
            "written" | "read" | "sent" | "received" => {
                let bytes =
                    iec_bytes(cell).ok_or("a size that is neither bytes nor an IEC size (`12KiB`)")?;
                row.values.push((name.to_owned(), bytes));
            }
            _ => {
                let n = cell
                    .parse()
                    .ok()
                    .or_else(|| iec_bytes(cell))
                    .ok_or("a counter that is not a whole number")?;
                row.values.push((name.to_owned(), n));
            }
        }
    }
    if node != NodeRef::default() {
        row.node = Some(node);
    }
    Ok(row)
}

/// The JSON outputs: arrays (a page each) or objects (a row each), one after another; the
/// `Total results` titles among them are read and blanked first, keeping every offset (and so
/// every line number) of the text.
fn stats_server_json(text: &str) -> Result<Vec<ServerStatsTable>, BeegfsError> {
    let mut totals: Vec<(usize, u32)> = Vec::new();
    let mut blanked = String::with_capacity(text.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        match stats_total(line) {
            Some(total) => {
                let n = total.map_err(|why| BeegfsError {
                    what: STATS_SERVER,
                    line: i + 1,
                    text: line.trim_end().to_owned(),
                    why,
                })?;
                totals.push((blanked.len(), n));
                blanked.extend(line.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
            }
            None => blanked.push_str(line),
        }
    }
    let mut tables: Vec<ServerStatsTable> = Vec::new();
    let mut totals = totals.into_iter().peekable();
    let mut stream = serde_json::Deserializer::from_str(&blanked).into_iter::<Value>();
    while let Some(value) = stream.next() {
        let value = value.map_err(|e| json_error(STATS_SERVER, text, &e))?;
        let end = stream.byte_offset();
        let mut pending = None;
        while let Some((_, n)) = totals.next_if(|(at, _)| *at < end) {
            pending = Some(n);
        }
        let at = line_at(STATS_SERVER, text, end);
        let row_of =
            |object: &serde_json::Map<String, Value>| -> Result<(Vec<String>, ServerStats), BeegfsError> {
                let cells: Vec<(String, String)> = object
                    .iter()
                    .map(|(k, v)| json_text(v).map(|v| (k.clone(), v)))
                    .collect::<Option<_>>()
                    .ok_or_else(|| at("a value that is neither a string nor a number"))?;
                let row = stats_row(cells.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(&at)?;
                Ok((cells.into_iter().map(|(k, _)| k).collect(), row))
            };
        match value {
            Value::Array(items) => {
                let mut table = ServerStatsTable { nodes_summed: pending, ..ServerStatsTable::default() };
                for item in &items {
                    let Value::Object(object) = item else {
                        return Err(at("an array item that is not an object"));
                    };
                    let (columns, row) = row_of(object)?;
                    if table.columns.is_empty() {
                        table.columns = columns;
                    }
                    table.rows.push(row);
                }
                tables.push(table);
            }
            Value::Object(object) => {
                let (columns, row) = row_of(&object)?;
                if pending.is_some() || tables.is_empty() {
                    tables.push(ServerStatsTable {
                        nodes_summed: pending,
                        columns,
                        ..ServerStatsTable::default()
                    });
                }
                push_stats_row(&mut tables, row);
            }
            _ => return Err(at("JSON that is neither an object nor an array of them")),
        }
    }
    Ok(tables)
}

/// A JSON value as the text a table would hold.
fn json_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// serde_json's error as ours, naming the line it found it on.
fn json_error(what: &'static str, text: &str, e: &serde_json::Error) -> BeegfsError {
    // At the end of the text serde_json names the line after the last.
    let line = e.line().clamp(1, text.lines().count().max(1));
    BeegfsError {
        what,
        line,
        text: text.lines().nth(line - 1).unwrap_or_default().to_owned(),
        why: "not JSON as `--output json` prints it",
    }
}

/// An error naming the line that holds byte `end - 1` of `text` (a JSON value's last byte).
fn line_at<'a>(what: &'static str, text: &'a str, end: usize) -> impl Fn(&'static str) -> BeegfsError + 'a {
    let start = text.get(..end).unwrap_or(text).trim_end().len();
    let line = text.get(..start).unwrap_or(text).matches('\n').count() + 1;
    move |why| BeegfsError {
        what,
        line,
        text: text.lines().nth(line - 1).unwrap_or_default().to_owned(),
        why,
    }
}

// ---------------------------------------------------------------------------------------------
// Targets

/// Whether the management can reach a target (`TargetReachabilityState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reachability {
    Online,
    /// Not heard from for a while; offline after `sysTargetOfflineTimeoutSecs`.
    ProbablyOffline,
    Offline,
}

impl Reachability {
    /// `Online`, `Probably-offline`, `Offline` (`TargetStateStore::stateToStr`, beegfs-go's
    /// `ReachabilityOnline`…).
    pub fn parse(word: &str) -> Option<Self> {
        Some(match word.trim().to_ascii_lowercase().as_str() {
            "online" => Self::Online,
            "probably-offline" | "poffline" => Self::ProbablyOffline,
            "offline" => Self::Offline,
            _ => return None,
        })
    }
}

/// Whether a target's data can be trusted (`TargetConsistencyState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Consistency {
    Good,
    /// A mirror's secondary that has to be resynced from its primary.
    NeedsResync,
    /// `Needs-resync` while the resync runs (BeeGFS 7's ctl prints `resyncing`; BeeGFS 8 says
    /// it in its `sync_state` column instead).
    Resyncing,
    Bad,
}

impl Reachability {
    /// The state as a line and the exporter name it: `online`, `probably-offline`, `offline`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Online => "online",
            Self::ProbablyOffline => "probably-offline",
            Self::Offline => "offline",
        }
    }
}

impl Consistency {
    /// The state as a line and the exporter name it: `good`, `needs-resync`, `resyncing`, `bad`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Good => "good",
            Self::NeedsResync => "needs-resync",
            Self::Resyncing => "resyncing",
            Self::Bad => "bad",
        }
    }

    /// `Good`, `Needs-resync`, `resyncing`, `Bad`.
    pub fn parse(word: &str) -> Option<Self> {
        Some(match word.trim().to_ascii_lowercase().as_str() {
            "good" => Self::Good,
            "needs-resync" | "needs_resync" => Self::NeedsResync,
            "resyncing" => Self::Resyncing,
            "bad" => Self::Bad,
            _ => return None,
        })
    }
}

/// One metadata or storage target.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Target {
    /// The numeric target ID (for a metadata target, BeeGFS 7 prints its node's ID).
    pub id: u16,
    pub node_type: Option<NodeType>,
    /// BeeGFS 8's alias and unique entity ID.
    pub alias: Option<String>,
    pub uid: Option<i64>,
    /// The server it is on; `None` when hidden (`--hidenodeid`, `beegfs-df`) or unmapped.
    pub node: Option<NodeRef>,
    pub reachability: Option<Reachability>,
    pub consistency: Option<Consistency>,
    /// `--mirrorgroups`: its buddy group and whether it is the group's primary.
    pub buddy_group: Option<u16>,
    pub primary: Option<bool>,
    /// The storage pool as printed (BeeGFS 7: its number; BeeGFS 8: `s:1`).
    pub storage_pool: Option<String>,
    /// The capacity pool as printed (`normal`, `low`, `emergency`; BeeGFS 8 capitalised).
    pub capacity_pool: Option<String>,
    /// BeeGFS 8's seconds since the management last heard from it (`last_contact`).
    pub last_contact_secs: Option<u64>,
    /// Space in bytes and inodes, to the precision printed (see the module's doc).
    pub space_total: Option<u64>,
    pub space_free: Option<u64>,
    pub inodes_total: Option<u64>,
    pub inodes_free: Option<u64>,
    /// Every column as printed, by its header name (ctl's second `%`, of the inodes, as `I%`;
    /// `--longnodes`' node as its whole text).
    pub columns: Vec<(String, String)>,
}

impl Target {
    /// The column `name` as printed.
    pub fn column(&self, name: &str) -> Option<&str> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A listing of targets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TargetList {
    pub targets: Vec<Target>,
    /// ctl's ` [ERROR …]` lines (its stderr, when read with the output): a target it could not
    /// ask for its space, a node it does not know.
    pub errors: Vec<String>,
}

/// A column of ctl's target listing (`printHeader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TargetCol {
    NodeId,
    BuddyGroup,
    MemberType,
    TargetId,
    Reachability,
    Consistency,
    StoragePool,
    CapacityPool,
    Total,
    Free,
    SpacePercent,
    InodesTotal,
    InodesFree,
    InodesPercent,
}

/// ctl's header (`TargetID` somewhere in it) as its columns, with their names as printed.
fn ctl_target_header(line: &str) -> Option<Result<Vec<(TargetCol, &'static str)>, &'static str>> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if !words.contains(&"TargetID") {
        return None;
    }
    let mut cols: Vec<(TargetCol, &'static str)> = Vec::new();
    let mut words = words.into_iter().peekable();
    while let Some(word) = words.next() {
        let col = match word {
            "NodeID" => (TargetCol::NodeId, "NodeID"),
            "MirrorGroupID" => (TargetCol::BuddyGroup, "MirrorGroupID"),
            "MGMemberType" => (TargetCol::MemberType, "MGMemberType"),
            "TargetID" => (TargetCol::TargetId, "TargetID"),
            "Reachability" => (TargetCol::Reachability, "Reachability"),
            "Consistency" => (TargetCol::Consistency, "Consistency"),
            "St." if words.next_if_eq(&"Pool").is_some() => (TargetCol::StoragePool, "St. Pool"),
            "Cap." if words.next_if_eq(&"Pool").is_some() => (TargetCol::CapacityPool, "Cap. Pool"),
            // BeeGFS 7.1 and before titled the capacity pool `Pool`.
            "Pool" => (TargetCol::CapacityPool, "Pool"),
            "Total" => (TargetCol::Total, "Total"),
            "Free" => (TargetCol::Free, "Free"),
            "ITotal" => (TargetCol::InodesTotal, "ITotal"),
            "IFree" => (TargetCol::InodesFree, "IFree"),
            // `%` follows Free and then IFree.
            "%" => match cols.last() {
                Some((TargetCol::Free, _)) => (TargetCol::SpacePercent, "%"),
                Some((TargetCol::InodesFree, _)) => (TargetCol::InodesPercent, "I%"),
                _ => return Some(Err("a `%` column after neither Free nor IFree")),
            },
            _ => return Some(Err("a header column ctl does not print")),
        };
        cols.push(col);
    }
    Some(Ok(cols))
}

/// Reads `beegfs-ctl --listtargets … --nodetype=node_type` (ctl's default is storage) or
/// `beegfs-df`, whose section titles say the type of the targets under them.
pub fn parse_ctl_listtargets(text: &str, node_type: NodeType) -> Result<TargetList, BeegfsError> {
    let mut list = TargetList::default();
    let mut kind = node_type;
    let mut header: Option<Vec<(TargetCol, &'static str)>> = None;
    for (i, line) in text.lines().enumerate() {
        let err = |why| BeegfsError { what: CTL_LISTTARGETS, line: i + 1, text: line.to_owned(), why };
        let trimmed = line.trim();
        if trimmed.is_empty() {
            header = None;
            continue;
        }
        if trimmed.starts_with("[ERROR") {
            list.errors.push(trimmed.to_owned());
            continue;
        }
        // The `========` rule under the header.
        if trimmed.bytes().all(|b| b == b'=' || b == b' ') {
            continue;
        }
        // beegfs-df's titles.
        match trimmed {
            "METADATA SERVERS:" => {
                kind = NodeType::Meta;
                header = None;
                continue;
            }
            "STORAGE TARGETS:" => {
                kind = NodeType::Storage;
                header = None;
                continue;
            }
            _ => {}
        }
        if let Some(cols) = ctl_target_header(trimmed) {
            header = Some(cols.map_err(err)?);
            continue;
        }
        let cols = header.as_deref().ok_or_else(|| err("a row before any header"))?;
        let target = ctl_target_row(cols, trimmed, kind).map_err(err)?;
        list.targets.push(target);
    }
    Ok(list)
}

/// One row of ctl's target listing, its fields in the header's order (`printTarget`).
fn ctl_target_row(
    cols: &[(TargetCol, &'static str)],
    line: &str,
    kind: NodeType,
) -> Result<Target, &'static str> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut at = 0;
    let mut target = Target { node_type: Some(kind), ..Target::default() };
    let mut have_id = false;
    let mut invalid_state = false;
    for (c, (col, name)) in cols.iter().enumerate() {
        let last = c + 1 == cols.len();
        if *col == TargetCol::Consistency && invalid_state {
            // `%29s` of `<invalid_value>` stood for both state columns.
            target.columns.push(((*name).to_owned(), String::new()));
            continue;
        }
        if *col == TargetCol::NodeId && last && words.len() > at + 1 {
            // --longnodes: `  %s ` of getNodeIDWithTypeStr, `beegfs-storage node01 [ID: 1]`.
            let text = words[at..].join(" ");
            target.node = Some(long_node(&text).ok_or("a node that is not `TYPE NAME [ID: N]`")?);
            target.columns.push(((*name).to_owned(), text));
            at = words.len();
            continue;
        }
        let word = *words.get(at).ok_or("fewer fields than the header has columns")?;
        at += 1;
        target.columns.push(((*name).to_owned(), word.to_owned()));
        match col {
            TargetCol::NodeId => {
                let id = word.parse().map_err(|_| "a NodeID that is not a number")?;
                target.node = Some(NodeRef { num_id: Some(id), node_type: Some(kind), name: None });
            }
            TargetCol::BuddyGroup => {
                target.buddy_group = Some(word.parse().map_err(|_| "a MirrorGroupID that is not a number")?);
            }
            TargetCol::MemberType => {
                target.primary = Some(match word {
                    "primary" => true,
                    "secondary" => false,
                    _ => return Err("a member type that is neither primary nor secondary"),
                });
            }
            TargetCol::TargetId => {
                target.id = word.parse().map_err(|_| "a TargetID that is not a 16-bit number")?;
                have_id = true;
            }
            TargetCol::Reachability if word == "<invalid_value>" => invalid_state = true,
            TargetCol::Reachability => {
                target.reachability = Some(
                    Reachability::parse(word)
                        .ok_or("a reachability that is none of Online, Probably-offline, Offline")?,
                );
            }
            TargetCol::Consistency => {
                target.consistency = Some(
                    Consistency::parse(word)
                        .ok_or("a consistency that is none of Good, Needs-resync, resyncing, Bad")?,
                );
            }
            TargetCol::StoragePool => target.storage_pool = Some(word.to_owned()),
            TargetCol::CapacityPool => target.capacity_pool = Some(word.to_owned()),
            // addSpaceToLine: `%9.1fGiB %9.1fGiB %3.0f%% %10.1fM %10.1fM %3.0f%%`.
            TargetCol::Total | TargetCol::Free => {
                let bytes = iec_bytes(word).ok_or("a space that is not `N.NGiB`")?;
                *(if *col == TargetCol::Total { &mut target.space_total } else { &mut target.space_free }) =
                    Some(bytes);
            }
            TargetCol::InodesTotal | TargetCol::InodesFree => {
                let n = si_count(word).ok_or("an inode count that is not `N.NM`")?;
                *(if *col == TargetCol::InodesTotal {
                    &mut target.inodes_total
                } else {
                    &mut target.inodes_free
                }) = Some(n);
            }
            TargetCol::SpacePercent | TargetCol::InodesPercent => {
                word.strip_suffix('%')
                    .and_then(|p| p.parse::<u32>().ok())
                    .ok_or("a percentage that is not `N%`")?;
            }
        }
    }
    if at != words.len() {
        return Err("more fields than the header has columns");
    }
    if !have_id {
        return Err("a row without its TargetID");
    }
    Ok(target)
}

/// `beegfs-storage node01 [ID: 1]` (`Node::getNodeIDWithTypeStr`), or without the type.
fn long_node(text: &str) -> Option<NodeRef> {
    let (front, id) = text.trim().strip_suffix(']')?.rsplit_once("[ID:")?;
    let num_id = Some(id.trim().parse().ok()?);
    let words: Vec<&str> = front.split_whitespace().collect();
    let (node_type, name) = match words.as_slice() {
        [] => return None,
        [kind, name @ ..] if !name.is_empty() && NodeType::parse(kind).is_some() => {
            (NodeType::parse(kind), name.join(" "))
        }
        name => (None, name.join(" ")),
    };
    Some(NodeRef { num_id, node_type, name: Some(name) })
}

/// BeeGFS 8's target list columns (`allColumns`).
const TARGET_COLUMNS: [&str; 17] = [
    "uid",
    "id",
    "type",
    "alias",
    "node",
    "storage_pool",
    "reachability",
    "last_contact",
    "consistency",
    "sync_state",
    "cap_pool",
    "space",
    "space_used",
    "space_free",
    "inodes",
    "inodes_used",
    "inodes_free",
];

/// Reads `beegfs target list`, a table or `--output json|json-pretty|ndjson`.
pub fn parse_target_list(text: &str) -> Result<TargetList, BeegfsError> {
    let mut list = TargetList::default();
    if is_json(text) {
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        while let Some(value) = stream.next() {
            let value = value.map_err(|e| json_error(TARGET_LIST, text, &e))?;
            let at = line_at(TARGET_LIST, text, stream.byte_offset());
            let objects = match &value {
                Value::Array(items) => items.iter().collect(),
                Value::Object(_) => vec![&value],
                _ => return Err(at("target JSON that is neither an object nor an array of them")),
            };
            for object in objects {
                let Value::Object(object) = object else {
                    return Err(at("a target array item that is not an object"));
                };
                let cells: Vec<(String, String)> = object
                    .iter()
                    .map(|(k, v)| json_target_text(v).map(|v| (k.clone(), v)))
                    .collect::<Option<_>>()
                    .ok_or_else(|| at("a target value that is neither a string, a number nor an ID"))?;
                list.targets.push(target_row(cells).map_err(&at)?);
            }
        }
        return Ok(list);
    }
    let mut header: Option<Pretty> = None;
    for (i, line) in text.lines().enumerate() {
        let err = |why| BeegfsError { what: TARGET_LIST, line: i + 1, text: line.to_owned(), why };
        if line.trim().is_empty() {
            header = None;
            continue;
        }
        if let Some(h) = Pretty::header(line, &TARGET_COLUMNS) {
            header = Some(h);
            continue;
        }
        // With --page-size=0 the columns depend on the flags, so a table without a header is
        // not guessed at.
        let h = header.as_ref().ok_or_else(|| err("a row before any header"))?;
        let cells = h.cells(line).map_err(err)?;
        list.targets.push(target_row(h.names.iter().cloned().zip(cells).collect()).map_err(err)?);
    }
    Ok(list)
}

/// A target's JSON value as the text its table cell holds: the ID object
/// (`{"num_id":101,"node_type":3}`) as `s:101`, the node type's integer as its name.
fn json_target_text(v: &Value) -> Option<String> {
    if let Value::Object(id) = v {
        let num = id.get("num_id")?.as_u64()?;
        let kind = match id.get("node_type")? {
            Value::Number(n) => NodeType::from_go(n.as_i64()?)?,
            Value::String(s) => NodeType::parse(s)?,
            _ => return None,
        };
        return Some(format!("{}:{num}", kind.short()));
    }
    json_text(v)
}

/// One target of BeeGFS 8's list from its cells by column name, as `PrintTargetList` fills them.
fn target_row(cells: Vec<(String, String)>) -> Result<Target, &'static str> {
    let mut target = Target::default();
    let mut have_id = false;
    for (name, cell) in &cells {
        let cell = cell.trim();
        // What is printed for a value the management does not have.
        let absent = matches!(cell, "" | "-" | "(n/a)" | "<unmapped>" | "unknown");
        match name.as_str() {
            "uid" => {
                target.uid = Some(
                    cell.strip_prefix("uid:")
                        .unwrap_or(cell)
                        .parse()
                        .map_err(|_| "a uid that is not `uid:N`")?,
                )
            }
            "id" => {
                let (kind, id) = legacy_id(cell).ok_or("a target ID that is not `TYPE:N` (`s:101`)")?;
                target.id = u16::try_from(id).map_err(|_| "a target ID over 16 bits")?;
                target.node_type = target.node_type.or(Some(kind));
                have_id = true;
            }
            "type" => {
                let kind = NodeType::parse(cell).or_else(|| cell.parse().ok().and_then(NodeType::from_go));
                target.node_type = Some(kind.ok_or("a node type that is neither meta nor storage")?);
            }
            "alias" => target.alias = Some(cell.to_owned()),
            "node" if !absent => target.node = Some(target_node(cell).ok_or("a node that is not `TYPE:N`")?),
            "storage_pool" if !absent => target.storage_pool = Some(cell.to_owned()),
            "reachability" if !absent => {
                target.reachability = Some(
                    Reachability::parse(cell)
                        .ok_or("a reachability that is none of Online, Probably-offline, Offline")?,
                );
            }
            "consistency" if !absent => {
                target.consistency = Some(
                    Consistency::parse(cell)
                        .ok_or("a consistency that is none of Good, Needs-resync, Bad")?,
                );
            }
            "last_contact" if !absent => {
                let secs = cell.strip_suffix("s ago").and_then(|s| s.trim().parse().ok());
                target.last_contact_secs = Some(secs.ok_or("a last contact that is not `Ns ago`")?);
            }
            "cap_pool" if !absent => target.capacity_pool = Some(cell.to_owned()),
            "space" | "space_free" if !absent => {
                let bytes =
                    iec_bytes(cell).ok_or("a space that is neither bytes nor an IEC size (`1.8TiB`)")?;
                *(if name == "space" { &mut target.space_total } else { &mut target.space_free }) =
                    Some(bytes);
            }
            "inodes" | "inodes_free" if !absent => {
                let n = si_count(cell).ok_or("an inode count that is neither whole nor SI (`1.2M`)")?;
                *(if name == "inodes" { &mut target.inodes_total } else { &mut target.inodes_free }) =
                    Some(n);
            }
            // space_used and inodes_used (`1.2TiB (12.34%)`) follow from the others; sync_state
            // is kept as printed.
            _ => {}
        }
    }
    if !have_id {
        return Err("a target without its `id` column");
    }
    target.columns = cells;
    Ok(target)
}

/// The `node` column: `s:1`, or with --debug `node_storage_1[s:1, uid:13]`
/// (`EntityIdSet.String`).
fn target_node(cell: &str) -> Option<NodeRef> {
    if let Some((kind, id)) = legacy_id(cell) {
        return Some(NodeRef { num_id: Some(id), node_type: Some(kind), name: None });
    }
    let (alias, rest) = cell.strip_suffix(']')?.split_once('[')?;
    let (kind, id) = legacy_id(rest.split(',').next()?)?;
    Some(NodeRef { num_id: Some(id), node_type: Some(kind), name: Some(alias.trim().to_owned()) })
}

// ---------------------------------------------------------------------------------------------
// go-pretty tables

/// A go-pretty table's header, as `Printomatic` sets it up: every cell padded to its column's
/// width and followed by two spaces, left-aligned, the header upper-cased. Cells can hold a space
/// (`0s ago`, `1.2TiB (12.34%)`) or be empty, so a row is cut where the header's names begin.
#[derive(Debug, Clone)]
struct Pretty {
    /// Lower-cased, as the columns are named everywhere else.
    names: Vec<String>,
    /// Where each column begins, in characters (go-pretty pads by display width; these are
    /// ASCII).
    starts: Vec<usize>,
}

impl Pretty {
    /// The line as a header, if every word of it is one of `known`.
    fn header(line: &str, known: &[&str]) -> Option<Self> {
        let names: Vec<String> = line.split_whitespace().map(str::to_ascii_lowercase).collect();
        if names.is_empty() || !names.iter().all(|n| known.contains(&n.as_str())) {
            return None;
        }
        let mut starts = Vec::with_capacity(names.len());
        let mut in_word = false;
        for (at, c) in line.chars().enumerate() {
            if c.is_whitespace() {
                in_word = false;
            } else if !in_word {
                in_word = true;
                starts.push(at);
            }
        }
        Some(Self { names, starts })
    }

    /// Columns known by name only, for rows printed without a header: split at whitespace.
    fn headless(names: &[&str]) -> Self {
        Self { names: names.iter().map(|n| (*n).to_owned()).collect(), starts: Vec::new() }
    }

    /// A row's cells, one a column.
    fn cells(&self, line: &str) -> Result<Vec<String>, &'static str> {
        let words = || line.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        if self.starts.is_empty() {
            let cells = words();
            return if cells.len() == self.names.len() {
                Ok(cells)
            } else {
                Err("a row whose cells are not one a column")
            };
        }
        let chars: Vec<char> = line.chars().collect();
        let mut cells = Vec::with_capacity(self.starts.len());
        let mut aligned = chars.iter().take(self.starts[0]).all(|c| c.is_whitespace());
        for (i, &start) in self.starts.iter().enumerate() {
            let end = self.starts.get(i + 1).copied().unwrap_or(chars.len()).min(chars.len());
            if start > 0 && start < chars.len() && !chars[start - 1].is_whitespace() {
                aligned = false;
            }
            cells.push(
                chars
                    .get(start..end)
                    .map(|c| c.iter().collect::<String>())
                    .unwrap_or_default()
                    .trim()
                    .to_owned(),
            );
        }
        if aligned {
            return Ok(cells);
        }
        // Not under the header (spaces lost on the way): cells without spaces still read.
        let cells = words();
        if cells.len() == self.names.len() {
            Ok(cells)
        } else {
            Err("a row whose cells do not line up under the header")
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Units

/// `DIGITS[.DIGITS]` times `unit`, to the nearest whole number.
fn scaled(number: &str, unit: u128) -> Option<u64> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || whole.len() + fraction.len() > 30 {
        return None;
    }
    let mut mantissa: u128 = 0;
    for b in whole.bytes().chain(fraction.bytes()) {
        mantissa = mantissa.checked_mul(10)?.checked_add(u128::from(b - b'0'))?;
    }
    let divisor = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    let value = mantissa.checked_mul(unit)?.checked_add(divisor / 2)? / divisor;
    u64::try_from(value).ok()
}

/// A size as `unitconv.FormatPrefix(…, IEC, prec)` + `B` prints it (`0B`, `512B`, `12KiB`,
/// `1.8TiB`; ctl's `1787.6GiB` too), or a plain number of bytes (`--raw`).
fn iec_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let text = text.strip_suffix('B').unwrap_or(text);
    let Some(front) = text.strip_suffix('i') else { return scaled(text, 1) };
    let (at, prefix) = front.char_indices().last()?;
    let power = "KMGTPEZY".find(prefix)? + 1;
    scaled(&front[..at], 1u128.checked_shl(u32::try_from(10 * power).ok()?)?)
}

/// A count as `unitconv.FormatPrefix(…, SI, 1)` prints it (`12.0`, `500.0k`, `1.2M`; ctl's
/// `178.8M` too, its M being 10⁶).
fn si_count(text: &str) -> Option<u64> {
    let text = text.trim();
    let last = text.chars().last()?;
    let Some(power) = "kMGTPEZY".find(last).or_else(|| (last == 'K').then_some(0)) else {
        return scaled(text, 1);
    };
    let number = &text[..text.len() - last.len_utf8()];
    scaled(number, 1000u128.checked_pow(u32::try_from(power + 1).ok()?)?)
}

/// Unix seconds from Go's `time.RFC3339` (`2025-06-02T14:03:21+02:00`, `…Z`) or a plain
/// number of seconds.
fn unix_time(text: &str) -> Option<i64> {
    if let Ok(n) = text.parse::<i64>() {
        return Some(n);
    }
    let b = text.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let field = |range: std::ops::Range<usize>| -> Option<i64> {
        let s = text.get(range)?;
        if s.bytes().all(|b| b.is_ascii_digit()) { s.parse().ok() } else { None }
    };
    let (year, month, day) = (field(0..4)?, field(5..7)?, field(8..10)?);
    let (hour, minute, second) = (field(11..13)?, field(14..16)?, field(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = text.get(19..)?;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = fraction.get(digits..)?;
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (h, m) = rest.get(1..)?.split_once(':')?;
            if h.len() != 2 || m.len() != 2 {
                return None;
            }
            let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
            sign * (h * 3600 + m * 60)
        }
    };
    // Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

// ---------------------------------------------------------------------------------------------
// This node's servers, every second

/// A BeeGFS server of this node, as its own files name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalServer {
    /// [`NodeType::Storage`] or [`NodeType::Meta`].
    pub node_type: NodeType,
    /// Its numeric node ID (`NumNodeID`), which `beegfs-ctl --serverstats NUMID` and `beegfs
    /// stats server storage:NUMID` select it by.
    pub num_id: u32,
}

/// The BeeGFS storage and metadata servers of this node, from their own files and no call to
/// anything: the directory each one's configuration names (`storeStorageDirectory`, the first
/// of its comma-separated list, in /etc/beegfs/beegfs-storage.conf; `storeMetaDirectory` in
/// beegfs-meta.conf) holds `nodeNumID`, its numeric ID as a decimal line, written once the
/// server has registered with the management daemon (StorageTk, ThinkParQ/beegfs 7.4.7;
/// 8.3.1 reads only that file). A server not yet registered has none, and is not listed.
pub fn local_servers(root: &pvfs_host::Root) -> Vec<LocalServer> {
    [
        (NodeType::Storage, "/etc/beegfs/beegfs-storage.conf", "storeStorageDirectory"),
        (NodeType::Meta, "/etc/beegfs/beegfs-meta.conf", "storeMetaDirectory"),
    ]
    .into_iter()
    .filter_map(|(node_type, conf, key)| {
        let text = root.read_to_string(conf).ok()?;
        let dir = config_value(&text, key)?.split(',').next()?.trim().to_owned();
        if !dir.starts_with('/') {
            return None;
        }
        let num_id =
            root.read_trimmed(&format!("{}/nodeNumID", dir.trim_end_matches('/'))).ok()?.parse().ok()?;
        (num_id > 0).then_some(LocalServer { node_type, num_id })
    })
    .collect()
}

/// A `key = value` of a BeeGFS configuration file (`#` starts a comment).
fn config_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let line = line.split('#').next()?;
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim()).filter(|v| !v.is_empty())
    })
}

/// One of this node's servers in one second, as its own statistics tell it (values of that
/// second, not counters: BeeGFS keeps them per second).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ServerSecond {
    // Fields in the byte order of their keys, the order a second's line writes them in.
    /// Worker threads busy when the second was taken.
    pub busy_workers: u64,
    /// `storage` or `meta`.
    pub kind: String,
    pub num_id: u32,
    /// Requests waiting when the second was taken.
    pub queued_requests: u64,
    /// Bytes read from its targets in the second (storage servers).
    pub read_bytes: u64,
    /// Requests processed in the second.
    pub requests: u64,
    /// The second, in Unix seconds, as the server stamped it.
    pub time: i64,
    /// Bytes written to its targets in the second (storage servers).
    pub write_bytes: u64,
}

impl ServerSecond {
    /// The newest second of `server` in a stretch of its statistics' output (the tables of
    /// `beegfs-ctl --serverstats --interval=1 NUMID`, or the rows of `beegfs stats server
    /// TYPE:NUMID --output ndjson`): its latest `time`; `None` when it holds none.
    pub fn newest(server: LocalServer, text: &str, ctl: bool) -> Option<ServerSecond> {
        let tables =
            if ctl { parse_ctl_serverstats(text, server.node_type) } else { parse_stats_server(text) };
        let rows = tables.ok()?.into_iter().flat_map(|t| t.rows);
        let newest = rows.filter(|r| r.time.is_some()).max_by_key(|r| r.time)?;
        Some(ServerSecond {
            kind: match server.node_type {
                NodeType::Meta => "meta",
                _ => "storage",
            }
            .to_owned(),
            num_id: server.num_id,
            time: newest.time?,
            requests: newest.requests().unwrap_or(0),
            queued_requests: newest.queued_requests().unwrap_or(0),
            busy_workers: newest.busy_workers().unwrap_or(0),
            write_bytes: newest.disk_write_bytes().unwrap_or(0),
            read_bytes: newest.disk_read_bytes().unwrap_or(0),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// This node's targets, every second

/// A BeeGFS target of this node, as its server's own files name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalTarget {
    /// [`NodeType::Storage`] or [`NodeType::Meta`].
    pub node_type: NodeType,
    /// A storage target's numeric ID (`targetNumID`); a metadata server's node ID, which is
    /// its target's (`beegfs-ctl --listtargets --nodetype=meta` lists it so).
    pub id: u32,
    /// Its directory on this node.
    pub path: String,
}

/// This node's registered BeeGFS targets, from their servers' files only: every directory of
/// `storeStorageDirectory` (comma-separated, /etc/beegfs/beegfs-storage.conf) that holds
/// `targetNumID` — the target's numeric ID as a decimal line, written once the management
/// daemon has mapped it (`App::preregisterTargets`, ThinkParQ/beegfs 8.3.1's
/// storage/source/app/App.cpp; the name is StorageTk.h's `STORAGETK_TARGETNUMID_FILENAME`) —
/// and the metadata server's `storeMetaDirectory` (beegfs-meta.conf) with its `nodeNumID`.
pub fn local_targets(root: &pvfs_host::Root) -> Vec<LocalTarget> {
    let num = |dir: &str, file: &str| -> Option<u32> {
        let id: u32 =
            root.read_trimmed(&format!("{}/{file}", dir.trim_end_matches('/'))).ok()?.parse().ok()?;
        (id > 0).then_some(id)
    };
    let mut targets = Vec::new();
    if let Ok(text) = root.read_to_string("/etc/beegfs/beegfs-storage.conf")
        && let Some(dirs) = config_value(&text, "storeStorageDirectory")
    {
        for dir in dirs.split(',').map(str::trim).filter(|d| d.starts_with('/')) {
            if let Some(id) = num(dir, "targetNumID") {
                targets.push(LocalTarget { node_type: NodeType::Storage, id, path: dir.to_owned() });
            }
        }
    }
    if let Ok(text) = root.read_to_string("/etc/beegfs/beegfs-meta.conf")
        && let Some(dir) =
            config_value(&text, "storeMetaDirectory").map(str::trim).filter(|d| d.starts_with('/'))
        && let Some(id) = num(dir, "nodeNumID")
    {
        targets.push(LocalTarget { node_type: NodeType::Meta, id, path: dir.to_owned() });
    }
    targets
}

/// One of this node's targets in one second: its space as its server reports it to the
/// management daemon (and so to `beegfs-ctl --listtargets --spaceinfo` and `beegfs-df`), read
/// here from the kernel, and its state as the management daemon last told it.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct TargetSecond {
    // Fields in the byte order of their keys, the order a second's line writes them in.
    /// `good`, `needs-resync`, `resyncing` or `bad` ([`Consistency::name`]); empty while the
    /// management daemon has not said.
    pub consistency: String,
    /// Free bytes and inodes, as the server counts them (see [`TargetSecond::measure`]).
    pub free_bytes: u64,
    pub free_inodes: u64,
    pub id: u32,
    /// `storage` or `meta`.
    pub kind: String,
    /// Its directory on the node.
    pub path: String,
    /// `online`, `probably-offline` or `offline` ([`Reachability::name`]); empty while the
    /// management daemon has not said.
    pub reachability: String,
    pub total_bytes: u64,
    pub total_inodes: u64,
}

impl TargetSecond {
    /// `target`'s space now, counted as its server counts it (`StorageTk::statStoragePath`,
    /// ThinkParQ/beegfs 8.3.1): `statfs` of its directory, total `f_blocks × f_bsize`, free
    /// `f_bfree × f_bsize` (the server runs as root; on btrfs, whose free blocks count RAID redundancy, `f_bavail`), inodes `f_files` and
    /// `f_ffree`; then, as `statStoragePathOverride` does, the free space and free inodes an
    /// administrator wrote in the directory's `free_space.override` / `free_inodes.override`
    /// (a number with an optional K, M, G, T or P suffix of powers of 1024). `None` when the
    /// directory cannot be `statfs`ed (the server says -1 then).
    pub fn measure(
        root: &pvfs_host::Root,
        target: &LocalTarget,
        state: Option<TargetState>,
    ) -> Option<TargetSecond> {
        let st = nix::sys::statfs::statfs(&root.path(&target.path)).ok()?;
        // `f_bsize` is a signed word in glibc's struct; a file system never says < 0.
        let bsize = u64::try_from(st.block_size()).unwrap_or(0);
        let free_blocks = if st.filesystem_type() == nix::sys::statfs::BTRFS_SUPER_MAGIC {
            st.blocks_available()
        } else {
            st.blocks_free()
        };
        let read_override = |file: &str| {
            let text = root.read_to_string(&format!("{}/{file}", target.path.trim_end_matches('/'))).ok()?;
            parse_override(text.lines().next()?)
        };
        let (reachability, consistency) = state.unwrap_or_default();
        Some(TargetSecond {
            consistency: consistency.map_or("", Consistency::name).to_owned(),
            free_bytes: read_override("free_space.override").unwrap_or(free_blocks.saturating_mul(bsize)),
            free_inodes: read_override("free_inodes.override").unwrap_or(st.files_free()),
            id: target.id,
            kind: match target.node_type {
                NodeType::Meta => "meta",
                _ => "storage",
            }
            .to_owned(),
            path: target.path.clone(),
            reachability: reachability.map_or("", Reachability::name).to_owned(),
            total_bytes: st.blocks().saturating_mul(bsize),
            total_inodes: st.files(),
        })
    }
}

/// A free-space override's first line as `UnitTk::strHumanToInt64` reads it: digits with an
/// optional K, M, G, T or P (either case) for that power of 1024. `None` for anything else
/// (BeeGFS would read the leading digits of it, or 0; pvfs reports the kernel's figure rather
/// than guess).
fn parse_override(line: &str) -> Option<u64> {
    let line = line.trim();
    let (digits, shift) = match line.char_indices().last()? {
        (at, c) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                'P' => 50,
                _ => return None,
            };
            (&line[..at], shift)
        }
        _ => (line, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// A target's reachability and consistency as the management daemon says them (either left
/// out of a listing is `None`).
pub type TargetState = (Option<Reachability>, Option<Consistency>);

/// The management daemon's state of each of `targets` in a listing of them (`beegfs-ctl
/// --listtargets --state`, `beegfs target list --state`), by kind and ID.
pub fn states_of(list: &TargetList, targets: &[LocalTarget]) -> Vec<(NodeType, u32, TargetState)> {
    targets
        .iter()
        .filter_map(|local| {
            let listed = list
                .targets
                .iter()
                .find(|t| u32::from(t.id) == local.id && t.node_type.is_none_or(|k| k == local.node_type))?;
            Some((local.node_type, local.id, (listed.reachability, listed.consistency)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real outputs, copied unmodified (testdata/beegfs/README.md says from where).
    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/beegfs").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    const GIB: u64 = 1 << 30;

    /// `N.N` GiB as printed (`tenths`), in bytes to the nearest byte.
    fn tenths_gib(tenths: u64) -> u64 {
        (tenths * GIB + 5) / 10
    }

    /// `beegfs-df` on a BeeGFS 7 system with two metadata servers and four storage targets
    /// (Azure/azurehpc's beegfs_pools example): its titles set the type, `Cap. Pool` is read,
    /// and `%9.1fGiB` and `%10.1fM` back to bytes and inodes.
    #[test]
    fn beegfs_df_reads_both_sections() {
        use NodeType::{Meta, Storage};
        let list = parse_ctl_listtargets(&fixture("beegfs-df_azurehpc-beegfs_pools.txt"), Storage).unwrap();
        assert_eq!(list.errors, Vec::<String>::new());
        let kinds: Vec<(u16, Option<NodeType>)> = list.targets.iter().map(|t| (t.id, t.node_type)).collect();
        assert_eq!(
            kinds,
            [
                (1, Some(Meta)),
                (2, Some(Meta)),
                (1, Some(Storage)),
                (2, Some(Storage)),
                (3, Some(Storage)),
                (4, Some(Storage))
            ]
        );
        // `       1      normal    4093.7GiB    4093.7GiB 100%      409.6M      409.6M 100%`
        let storage1 = &list.targets[2];
        assert_eq!(storage1.capacity_pool.as_deref(), Some("normal"));
        assert_eq!(storage1.space_total, Some(tenths_gib(40_937)));
        assert_eq!(storage1.space_free, Some(tenths_gib(40_937)));
        assert_eq!((storage1.inodes_total, storage1.inodes_free), (Some(409_600_000), Some(409_600_000)));
        assert_eq!(storage1.node, None, "beegfs-df hides the node");
        assert_eq!((storage1.reachability, storage1.consistency), (None, None), "no --state");
        assert_eq!(storage1.column("Total"), Some("4093.7GiB"));
        assert_eq!(storage1.column("I%"), Some("100%"));
        // `       2      normal    1787.6GiB    1787.6GiB 100%      178.8M      178.8M 100%`
        let meta2 = &list.targets[1];
        assert_eq!((meta2.space_total, meta2.inodes_free), (Some(tenths_gib(17_876)), Some(178_800_000)));
    }

    /// Constructed from ModeListTargets::printHeader and printTarget's format strings (7.4.7):
    /// `%8s ` TargetID, `%16s %12s ` the states, `%12s %12s %4s %11s %11s %4s ` the space
    /// titles and `%9.1fGiB %9.1fGiB %3.0f%% %10.1fM %10.1fM %3.0f%% ` their values, `%8s `
    /// NodeID, the line's last space made its newline.
    fn ctl_targets(rows: &[(u16, &str, &str, [&str; 6], &str)]) -> String {
        let mut text = format!(
            "{:>8} {:>16} {:>12} {:>12} {:>12} {:>4} {:>11} {:>11} {:>4} {:>8}\n",
            "TargetID", "Reachability", "Consistency", "Total", "Free", "%", "ITotal", "IFree", "%", "NodeID"
        );
        text += &format!(
            "{:>8} {:>16} {:>12} {:>12} {:>12} {:>4} {:>11} {:>11} {:>4} {:>8}\n",
            "========", "============", "===========", "=====", "====", "=", "======", "=====", "=", "======"
        );
        for (id, reach, consist, [total, free, pct, itotal, ifree, ipct], node) in rows {
            text += &format!(
                "{id:>8} {reach:>16} {consist:>12} {total:>9}GiB {free:>9}GiB {pct:>3}% {itotal:>10}M {ifree:>10}M {ipct:>3}% {node:>8}\n"
            );
        }
        text
    }

    /// A storage server with two targets (one not yet mapped) and a metadata server, laid out
    /// as their files are; each target's space read as its server reads it, and compared with
    /// coreutils' `stat -f` of the same directory.
    #[test]
    fn a_nodes_targets_are_found_in_their_servers_files_and_measured_as_the_server_does() {
        let dir = tempfile::tempdir().unwrap();
        let put = |path: &str, text: &str| {
            let at = dir.path().join(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        };
        put(
            "etc/beegfs/beegfs-storage.conf",
            "# storeStorageDirectory = /old\nstoreStorageDirectory = /data/t1, /data/t2 ,/data/t3\n",
        );
        put("data/t1/targetNumID", "101\n");
        put("data/t1/nodeNumID", "1\n");
        put("data/t2/targetID", "not-yet-mapped\n");
        put("data/t3/targetNumID", "103\n");
        put("data/t3/free_space.override", "5G\n");
        put("data/t3/free_inodes.override", "1000\n");
        put("etc/beegfs/beegfs-meta.conf", "storeMetaDirectory = /data/meta\n");
        put("data/meta/nodeNumID", "7\n");
        let root = pvfs_host::Root::at(dir.path());
        let targets = local_targets(&root);
        let found: Vec<(NodeType, u32, &str)> =
            targets.iter().map(|t| (t.node_type, t.id, t.path.as_str())).collect();
        assert_eq!(
            found,
            [
                (NodeType::Storage, 101, "/data/t1"),
                (NodeType::Storage, 103, "/data/t3"),
                (NodeType::Meta, 7, "/data/meta")
            ]
        );

        let t1 = TargetSecond::measure(&root, &targets[0], None).unwrap();
        let stat = std::process::Command::new("stat")
            .args(["-f", "-c", "%b %s %f %c %d"])
            .arg(dir.path().join("data/t1"))
            .output()
            .unwrap();
        let f: Vec<u64> =
            String::from_utf8(stat.stdout).unwrap().split_whitespace().map(|v| v.parse().unwrap()).collect();
        let [blocks, bsize, bfree, files, ffree] = f[..] else { panic!("stat -f said {f:?}") };
        assert_eq!((t1.total_bytes, t1.total_inodes), (blocks * bsize, files));
        // Other processes write to this file system between the two readings.
        let near = |a: u64, b: u64, by: u64| a.abs_diff(b) <= by;
        assert!(near(t1.free_bytes, bfree * bsize, 64 << 20), "{} against {}", t1.free_bytes, bfree * bsize);
        assert!(near(t1.free_inodes, ffree, 1000), "{} against {ffree}", t1.free_inodes);
        assert_eq!(
            (t1.kind.as_str(), t1.id, t1.reachability.as_str(), t1.consistency.as_str()),
            ("storage", 101, "", "")
        );

        // The administrator's overrides win, as they do in the server's report.
        let state = Some((Some(Reachability::Online), Some(Consistency::NeedsResync)));
        let t3 = TargetSecond::measure(&root, &targets[1], state).unwrap();
        assert_eq!((t3.free_bytes, t3.free_inodes), (5 << 30, 1000));
        assert_eq!((t3.reachability.as_str(), t3.consistency.as_str()), ("online", "needs-resync"));
        assert_eq!(t3.total_bytes, t1.total_bytes, "the override changes only the free figures");

        // A directory gone: not measured.
        std::fs::remove_dir_all(dir.path().join("data/meta")).unwrap();
        assert_eq!(TargetSecond::measure(&root, &targets[2], None), None);
        // No configuration: no targets.
        assert!(local_targets(&pvfs_host::Root::at(dir.path().join("data"))).is_empty());
    }

    #[test]
    fn an_override_is_read_as_beegfs_reads_it() {
        for (line, want) in [
            ("100", Some(100)),
            ("5G", Some(5 << 30)),
            ("5g", Some(5 << 30)),
            ("2k", Some(2048)),
            ("3M", Some(3 << 20)),
            ("1T", Some(1 << 40)),
            ("1p", Some(1 << 50)),
            (" 7 ", Some(7)),
            ("", None),
            ("G", None),
            ("5E", None),
            ("-5G", None),
            ("1.5G", None),
            ("99999999999999999999", None),
            ("99999999999P", None),
        ] {
            assert_eq!(parse_override(line), want, "{line:?}");
        }
    }

    /// The management daemon's state of this node's targets, from ctl's listing of all of
    /// them (another node's and the other kind's left out).
    #[test]
    fn a_listings_states_are_matched_to_the_nodes_targets() {
        let text = ctl_targets(&[
            (101, "Online", "Good", ["1.0", "1.0", "100", "1.0", "1.0", "100"], "1"),
            (102, "Offline", "Needs-resync", ["1.0", "1.0", "100", "1.0", "1.0", "100"], "2"),
            (7, "Probably-offline", "Good", ["1.0", "1.0", "100", "1.0", "1.0", "100"], "1"),
        ]);
        let list = parse_ctl_listtargets(&text, NodeType::Storage).unwrap();
        let local = |node_type, id| LocalTarget { node_type, id, path: "/d".into() };
        let mine = [local(NodeType::Storage, 102), local(NodeType::Meta, 7), local(NodeType::Storage, 104)];
        assert_eq!(
            states_of(&list, &mine),
            [(NodeType::Storage, 102, (Some(Reachability::Offline), Some(Consistency::NeedsResync)))]
        );
    }

    #[test]
    fn ctl_listtargets_reads_states_space_and_nodes() {
        let text = ctl_targets(&[
            (101, "Online", "Good", ["11630.5", "4352.1", "37", "1164.3", "1160.2", "100"], "1"),
            (102, "Probably-offline", "Needs-resync", ["11630.5", "0.0", "0", "1164.3", "0.0", "0"], "1"),
            (201, "Offline", "resyncing", ["0.0", "0.0", "0", "0.0", "0.0", "0"], "2"),
        ]);
        let list = parse_ctl_listtargets(&text, NodeType::Storage).unwrap();
        let t = &list.targets[0];
        assert_eq!(
            (t.id, t.reachability, t.consistency),
            (101, Some(Reachability::Online), Some(Consistency::Good))
        );
        assert_eq!(t.node.as_ref().and_then(|n| n.num_id), Some(1));
        assert_eq!((t.space_total, t.space_free), (Some(tenths_gib(116_305)), Some(tenths_gib(43_521))));
        assert_eq!((t.inodes_total, t.inodes_free), (Some(1_164_300_000), Some(1_160_200_000)));
        let t = &list.targets[1];
        assert_eq!(
            (t.reachability, t.consistency),
            (Some(Reachability::ProbablyOffline), Some(Consistency::NeedsResync))
        );
        let t = &list.targets[2];
        assert_eq!(
            (t.reachability, t.consistency),
            (Some(Reachability::Offline), Some(Consistency::Resyncing))
        );
        assert_eq!(t.node.as_ref().and_then(|n| n.num_id), Some(2));
    }

    /// Constructed from printHeader/printTarget with --mirrorgroups (`%12s %12s ` titles,
    /// `%13hu %12s ` values), --longnodes (`  %s ` of getNodeIDWithTypeStr, `%1% %2%` of the
    /// node type and `NAME [ID: N]`), and a state the store does not have (`%29s ` of
    /// `<invalid_value>` in place of both state columns).
    #[test]
    fn ctl_listtargets_reads_mirror_groups_long_nodes_and_invalid_states() {
        let mut text = format!(
            "{:>12} {:>12} {:>8} {:>16} {:>12} {:>8}\n",
            "MirrorGroupID", "MGMemberType", "TargetID", "Reachability", "Consistency", "NodeID"
        );
        text += &format!(
            "{:>12} {:>12} {:>8} {:>16} {:>12} {:>8}\n",
            "=============", "============", "========", "============", "===========", "======"
        );
        text += &format!(
            "{:>13} {:>12} {:>8} {:>16} {:>12}   {}\n",
            1, "primary", 101, "Online", "Good", "beegfs-storage stor01 [ID: 1]"
        );
        text += &format!(
            "{:>13} {:>12} {:>8} {:>29}   {}\n",
            1, "secondary", 201, "<invalid_value>", "beegfs-storage stor02 [ID: 2]"
        );
        let list = parse_ctl_listtargets(&text, NodeType::Storage).unwrap();
        let [primary, secondary] = list.targets.as_slice() else { panic!("{list:?}") };
        assert_eq!((primary.buddy_group, primary.primary, primary.id), (Some(1), Some(true), 101));
        assert_eq!(
            primary.node,
            Some(NodeRef {
                num_id: Some(1),
                node_type: Some(NodeType::Storage),
                name: Some("stor01".into())
            })
        );
        assert_eq!(
            (secondary.primary, secondary.reachability, secondary.consistency),
            (Some(false), None, None)
        );
        assert_eq!(secondary.node.as_ref().and_then(|n| n.name.as_deref()), Some("stor02"));
    }

    #[test]
    fn ctl_listtargets_names_a_bad_line() {
        let good = ctl_targets(&[(1, "Online", "Good", ["1.0", "1.0", "100", "1.0", "1.0", "100"], "1")]);
        for (bad, why) in [
            (
                "       2           Online         Good   1.0GiB   1.0GiB 100%   1.0M   1.0M 100%",
                "fewer fields than the header has columns",
            ),
            (
                "       2           Online         Fine   1.0GiB   1.0GiB 100%   1.0M   1.0M 100%        1",
                "a consistency that is none of Good, Needs-resync, resyncing, Bad",
            ),
            (
                "       2           Online         Good   1.0TB   1.0GiB 100%   1.0M   1.0M 100%        1",
                "a space that is not `N.NGiB`",
            ),
            (
                "   70000           Online         Good   1.0GiB   1.0GiB 100%   1.0M   1.0M 100%        1",
                "a TargetID that is not a 16-bit number",
            ),
        ] {
            let err = parse_ctl_listtargets(&format!("{good}{bad}\n"), NodeType::Storage).unwrap_err();
            assert_eq!((err.line, err.why, err.text.as_str()), (4, why, bad));
        }
        let err = parse_ctl_listtargets("       1           Online\n", NodeType::Meta).unwrap_err();
        assert_eq!((err.line, err.why), (1, "a row before any header"));
        assert!(err.to_string().starts_with("line 1 of `beegfs-ctl --listtargets`: "), "{err}");
    }

    /// Constructed from ModeIOStat::nodesTotalStats and printStatsHistoryList (7.4.7): the
    /// `Total results for N nodes:` title, `%11s ` time_index and printStatsRowTitles' storage
    /// `%9s %9s %6s %6s %3s`, rows of `%11u ` and printStatsRow's `%9.0f %9.0f %6u %6u %3u`, a
    /// blank line after; two rounds, as `--interval` prints them.
    #[test]
    fn ctl_serverstats_reads_storage_history_rounds() {
        let mut text = String::new();
        for (round, base) in [(2, 1_700_000_000), (2, 1_700_000_001)] {
            text += &format!("Total results for {round} nodes:\n");
            text += &format!(
                "{:>11} {:>9} {:>9} {:>6} {:>6} {:>3}\n",
                "time_index", "write_KiB", "read_KiB", "reqs", "qlen", "bsy"
            );
            for (s, w, r, q, l, b) in [(0, 1_048_576, 0, 530, 3, 8), (1, 2_097_152, 512, 1_040, 0, 12)] {
                text += &format!("{:>11} {w:>9} {r:>9} {q:>6} {l:>6} {b:>3}\n", base + s);
            }
            text += "\n";
        }
        let tables = parse_ctl_serverstats(&text, NodeType::Storage).unwrap();
        assert_eq!(tables.len(), 2);
        let t = &tables[0];
        assert_eq!((t.nodes_summed, t.time_index), (Some(2), None));
        assert_eq!(t.columns, ["time_index", "write_KiB", "read_KiB", "reqs", "qlen", "bsy"]);
        let second = &t.rows[1];
        assert_eq!(second.time, Some(1_700_000_001));
        assert_eq!(second.node, None, "the sum of all servers");
        assert_eq!(second.disk_write_bytes(), Some(2_097_152 * 1024));
        assert_eq!(second.disk_read_bytes(), Some(512 * 1024));
        assert_eq!(
            (second.requests(), second.queued_requests(), second.busy_workers()),
            (Some(1_040), Some(0), Some(12))
        );
        assert_eq!(second.value("write_KiB"), Some(2_097_152));
        assert_eq!(second.net_send_bytes(), None, "only --details prints it");
        assert_eq!(tables[1].rows[0].time, Some(1_700_000_001));
    }

    /// Constructed from ModeIOStat::perNodeStats (7.4.7) for meta with --names and an interval
    /// over a second: a blank line, `===== time index: %u (values show last second only)
    /// =====`, a blank line, `%6s ` nodeID, printStatsRowTitles' meta `%6s %6s %3s`, ` name`;
    /// rows of `%6s `, `%6u %6u %3u`, ` %s`.
    #[test]
    fn ctl_serverstats_reads_per_server_rows_with_names() {
        let mut text =
            String::from("\n===== time index: 1700000123 (values show last second only) =====\n\n");
        text += &format!("{:>6} {:>6} {:>6} {:>3} name\n", "nodeID", "reqs", "qlen", "bsy");
        text += &format!("{:>6} {:>6} {:>6} {:>3} {}\n", 1, 4_211, 7, 20, "meta01");
        text += &format!("{:>6} {:>6} {:>6} {:>3} {}\n", 2, 0, 0, 0, "meta02");
        text += "\n";
        let tables = parse_ctl_serverstats(&text, NodeType::Meta).unwrap();
        let [t] = tables.as_slice() else { panic!("{tables:?}") };
        assert_eq!((t.time_index, t.last_second_only, t.nodes_summed), (Some(1_700_000_123), true, None));
        let meta01 = &t.rows[0];
        assert_eq!(
            meta01.node,
            Some(NodeRef { num_id: Some(1), node_type: Some(NodeType::Meta), name: Some("meta01".into()) })
        );
        assert_eq!(
            (meta01.time, meta01.requests(), meta01.queued_requests()),
            (Some(1_700_000_123), Some(4_211), Some(7))
        );
        assert_eq!(meta01.disk_write_bytes(), None, "meta prints no disk columns");
        assert_eq!(t.rows[1].node.as_ref().and_then(|n| n.name.as_deref()), Some("meta02"));
    }

    /// Constructed from printStatsRowTitles/printStatsRow with --details (`%9s %9s %8s %8s %6s
    /// %6s %3s`) for one server's history (no title).
    #[test]
    fn ctl_serverstats_reads_details_and_names_a_bad_line() {
        let mut text = format!(
            "{:>11} {:>9} {:>9} {:>8} {:>8} {:>6} {:>6} {:>3}\n",
            "time_index", "write_KiB", "read_KiB", "recv_KiB", "send_KiB", "reqs", "qlen", "bsy"
        );
        text += &format!(
            "{:>11} {:>9} {:>9} {:>8} {:>8} {:>6} {:>6} {:>3}\n",
            1_700_000_000, 10, 20, 30, 40, 5, 0, 1
        );
        let tables = parse_ctl_serverstats(&text, NodeType::Storage).unwrap();
        let row = &tables[0].rows[0];
        assert_eq!((row.net_recv_bytes(), row.net_send_bytes()), (Some(30 * 1024), Some(40 * 1024)));
        for (bad, why) in [
            (
                " 1700000001        10        20       30       40      5      0",
                "fewer figures than the header has columns",
            ),
            (
                " 1700000001        10        20       30       40      5      0   1  9",
                "more figures than the header has columns",
            ),
            (
                " 1700000001        10       2.5       30       40      5      0   1",
                "a figure that is not a whole number",
            ),
            (
                "  yesterday        10        20       30       40      5      0   1",
                "a time_index that is not Unix seconds",
            ),
        ] {
            let err = parse_ctl_serverstats(&format!("{text}{bad}\n"), NodeType::Storage).unwrap_err();
            assert_eq!((err.line, err.why, err.text.as_str()), (3, why, bad));
        }
        let err = parse_ctl_serverstats("\n\n     1  10  0  1\n", NodeType::Meta).unwrap_err();
        assert_eq!((err.line, err.why), (3, "neither a title, a header nor a row under a header"));
    }

    /// A go-pretty table as cmdfmt's Printomatic lays it out (ThinkParQ/beegfs-go
    /// ctl/internal/cmdfmt/fmt.go): the header upper-cased, every cell left-aligned, padded to
    /// its column's width and followed by two spaces.
    fn pretty(rows: &[&[&str]]) -> String {
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        let mut text = String::new();
        for (i, row) in rows.iter().enumerate() {
            for (cell, width) in row.iter().zip(&widths) {
                let cell = if i == 0 { cell.to_uppercase() } else { (*cell).to_owned() };
                text += &format!("{cell:<width$}  ");
            }
            text += "\n";
        }
        text
    }

    /// Constructed from beegfs-go's stats server.go (`runServerstatsCmd`'s defaultWithNode
    /// columns, `printData`'s cells: `%v` of the node's LegacyId and alias, `%d` of the
    /// counters, `FormatPrefix(bytes, IEC, 0)` + `B`), a table each round, as `--interval`
    /// prints them.
    #[test]
    fn stats_server_reads_per_server_tables() {
        let header: &[&str] = &[
            "node_id",
            "alias",
            "queue_length",
            "requests",
            "busy_workers",
            "written",
            "read",
            "sent",
            "received",
        ];
        let mut text = pretty(&[
            header,
            &["m:1", "node_meta_1", "0", "1342", "2", "0B", "0B", "4MiB", "2MiB"],
            &["s:1", "node_storage_1", "3", "880", "12", "1GiB", "12KiB", "18KiB", "1GiB"],
        ]);
        text += "\n";
        text += &pretty(&[header, &["m:1", "node_meta_1", "0", "7", "0", "0B", "0B", "512B", "1KiB"]]);
        text += "\n";
        let tables = parse_stats_server(&text).unwrap();
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[0].columns, header);
        let storage = &tables[0].rows[1];
        assert_eq!(
            storage.node,
            Some(NodeRef {
                num_id: Some(1),
                node_type: Some(NodeType::Storage),
                name: Some("node_storage_1".into())
            })
        );
        assert_eq!((storage.disk_write_bytes(), storage.disk_read_bytes()), (Some(GIB), Some(12 * 1024)));
        assert_eq!((storage.net_send_bytes(), storage.net_recv_bytes()), (Some(18 * 1024), Some(GIB)));
        assert_eq!(
            (storage.requests(), storage.queued_requests(), storage.busy_workers()),
            (Some(880), Some(3), Some(12))
        );
        assert_eq!(storage.time, None, "a per-server listing prints no time");
        assert_eq!(tables[1].rows[0].net_send_bytes(), Some(512));
    }

    /// Constructed from server.go's `--sum` path: `Total results for nodes: %d` on stdout, then
    /// the history's default columns with `time.Unix(…).Format(time.RFC3339)`; and the same
    /// with `--raw` and `--page-size=0` (no header, Unix seconds, plain bytes).
    #[test]
    fn stats_server_reads_summed_history_with_and_without_header() {
        let header: &[&str] =
            &["time", "queue_length", "requests", "busy_workers", "written", "read", "sent", "received"];
        let mut text = String::from("Total results for nodes: 3\n");
        text += &pretty(&[
            header,
            &["2025-06-02T14:03:21+02:00", "1", "300", "4", "1MiB", "0B", "3KiB", "1MiB"],
            &["2025-06-02T14:03:22+02:00", "0", "310", "5", "2MiB", "0B", "3KiB", "2MiB"],
        ]);
        let tables = parse_stats_server(&text).unwrap();
        let [t] = tables.as_slice() else { panic!("{tables:?}") };
        assert_eq!(t.nodes_summed, Some(3));
        // 2025-06-02T12:03:21Z.
        assert_eq!(t.rows[0].time, Some(1_748_865_801));
        assert_eq!((t.rows[1].time, t.rows[1].disk_write_bytes()), (Some(1_748_865_802), Some(2 << 20)));
        let raw = "Total results for nodes: 3\n1748865801  1  300  4  1048576  0  3072  1048576\n";
        let tables = parse_stats_server(raw).unwrap();
        assert_eq!(tables[0].nodes_summed, Some(3));
        assert_eq!(tables[0].rows[0].disk_write_bytes(), Some(1_048_576));
        assert_eq!(tables[0].rows[0].time, Some(1_748_865_801));
    }

    /// Constructed from cmdfmt's jsonPrinter: with `--output=json` a page is an array of
    /// objects keyed by column (Go's encoding/json sorts a map's keys), every value `printData`'s
    /// string; `ndjson` prints an object a line.
    #[test]
    fn stats_server_reads_json_and_ndjson() {
        let page = r#"[{"alias":"node_meta_1","busy_workers":"2","node_id":"m:1","queue_length":"0","read":"0B","received":"2MiB","requests":"1342","sent":"4MiB","written":"0B"},{"alias":"node_storage_1","busy_workers":"12","node_id":"s:1","queue_length":"3","read":"12KiB","received":"1GiB","requests":"880","sent":"18KiB","written":"1GiB"}]"#;
        let tables = parse_stats_server(&format!("{page}\n\n{page}\n\n")).unwrap();
        assert_eq!(tables.len(), 2);
        let storage = &tables[1].rows[1];
        assert_eq!(storage.node.as_ref().and_then(|n| n.num_id), Some(1));
        assert_eq!((storage.disk_write_bytes(), storage.busy_workers()), (Some(GIB), Some(12)));
        let ndjson = "Total results for nodes: 2\n{\"busy_workers\":\"1\",\"queue_length\":\"0\",\"read\":\"0\",\"received\":\"10\",\"requests\":\"9\",\"sent\":\"20\",\"time\":1748865801,\"written\":\"4096\"}\n{\"busy_workers\":\"1\",\"queue_length\":\"0\",\"read\":\"0\",\"received\":\"10\",\"requests\":\"9\",\"sent\":\"20\",\"time\":1748865802,\"written\":\"8192\"}\n";
        let tables = parse_stats_server(ndjson).unwrap();
        let [t] = tables.as_slice() else { panic!("{tables:?}") };
        assert_eq!((t.nodes_summed, t.rows.len()), (Some(2), 2));
        assert_eq!((t.rows[1].time, t.rows[1].disk_write_bytes()), (Some(1_748_865_802), Some(8192)));
        let err = parse_stats_server("{\"requests\":\"9\"}\n{\"requests\":\"many\"}\n").unwrap_err();
        assert_eq!((err.line, err.why), (2, "a counter that is not a whole number"));
        let err = parse_stats_server("[{\"requests\":\"9\"},\n {\"requests\":\n").unwrap_err();
        assert_eq!((err.line, err.why), (2, "not JSON as `--output json` prints it"));
    }

    #[test]
    fn stats_server_names_a_bad_line() {
        let header: &[&str] = &["node_id", "alias", "requests", "written"];
        let text = pretty(&[header, &["m:1", "node_meta_1", "4", "0B"]]);
        for (bad, why) in [
            ("q:1  node_meta_1  4         0B", "a node ID that is not `TYPE:N` (`m:1`, `s:2`)"),
            ("m:1  node_meta_1  4         12KB", "a size that is neither bytes nor an IEC size (`12KiB`)"),
            ("m:1  node_meta_1  four      0B", "a counter that is not a whole number"),
        ] {
            let err = parse_stats_server(&format!("{text}{bad}\n")).unwrap_err();
            assert_eq!((err.line, err.why, err.text.as_str()), (3, why, bad));
        }
        let err = parse_stats_server("what is this\n").unwrap_err();
        assert_eq!((err.line, err.why), (1, "a row before any header, of no default column layout"));
    }

    /// Constructed from beegfs-go's target/list.go (`PrintTargetList` with --state and
    /// --capacity: `LegacyId.String`, `%ds ago`, `FormatPrefix(…, IEC, 1)` + `B`, `… (%.2f%%)`,
    /// `FormatPrefix(…, SI, 1)`) laid out as Printomatic does.
    #[test]
    fn target_list_reads_state_and_capacity() {
        let text = pretty(&[
            &[
                "id",
                "type",
                "alias",
                "node",
                "storage_pool",
                "reachability",
                "last_contact",
                "consistency",
                "sync_state",
                "cap_pool",
                "space",
                "space_used",
                "space_free",
                "inodes",
                "inodes_used",
                "inodes_free",
            ],
            &[
                "m:1",
                "meta",
                "target_meta_1",
                "m:1",
                "(n/a)",
                "Online",
                "0s ago",
                "Good",
                "Healthy",
                "Normal",
                "228.5GiB",
                "12.3GiB (5.38%)",
                "216.2GiB",
                "15.2M",
                "1.1k (0.01%)",
                "15.2M",
            ],
            &[
                "s:101",
                "storage",
                "target_storage_101",
                "s:1",
                "s:1",
                "Probably-offline",
                "32s ago",
                "Needs-resync",
                "Unknown",
                "Emergency",
                "928.9GiB",
                "35.8GiB (3.85%)",
                "893.1GiB",
                "0.0",
                "-",
                "0.0",
            ],
        ]);
        let list = parse_target_list(&text).unwrap();
        let [meta, storage] = list.targets.as_slice() else { panic!("{list:?}") };
        assert_eq!((meta.id, meta.node_type, meta.storage_pool.as_deref()), (1, Some(NodeType::Meta), None));
        assert_eq!((meta.last_contact_secs, meta.space_total), (Some(0), Some(tenths_gib(2285))));
        assert_eq!((meta.inodes_total, meta.inodes_free), (Some(15_200_000), Some(15_200_000)));
        assert_eq!(meta.column("space_used"), Some("12.3GiB (5.38%)"));
        assert_eq!((storage.id, storage.alias.as_deref()), (101, Some("target_storage_101")));
        assert_eq!(
            (storage.reachability, storage.consistency),
            (Some(Reachability::ProbablyOffline), Some(Consistency::NeedsResync))
        );
        assert_eq!(
            storage.node,
            Some(NodeRef { num_id: Some(1), node_type: Some(NodeType::Storage), name: None })
        );
        assert_eq!((storage.space_free, storage.inodes_total), (Some(tenths_gib(8931)), Some(0)));
        assert_eq!(storage.capacity_pool.as_deref(), Some("Emergency"));
        assert_eq!(storage.column("sync_state"), Some("Unknown"));
    }

    /// Constructed from jsonPrinter over PrintTargetList's items: the target's `LegacyId` and
    /// `NodeType` have no JSON form of their own, so encoding/json prints the struct and the
    /// integer; `--raw` prints plain bytes.
    #[test]
    fn target_list_reads_json() {
        let text = r#"[{"alias":"target_storage_101","id":{"num_id":101,"node_type":3},"inodes":"0","inodes_free":"0","node":"s:1","reachability":"Offline","space":"997409685504","space_free":"959004991488","storage_pool":"s:1","type":3}]
"#;
        let list = parse_target_list(text).unwrap();
        let [t] = list.targets.as_slice() else { panic!("{list:?}") };
        assert_eq!(
            (t.id, t.node_type, t.reachability),
            (101, Some(NodeType::Storage), Some(Reachability::Offline))
        );
        assert_eq!((t.space_total, t.space_free), (Some(997_409_685_504), Some(959_004_991_488)));
        let err = parse_target_list("[{\"id\":\"s:1\",\"space\":\"lots\"}]\n").unwrap_err();
        assert_eq!((err.line, err.why), (1, "a space that is neither bytes nor an IEC size (`1.8TiB`)"));
        let text = pretty(&[&["id", "reachability"], &["s:1", "Online"]]);
        let err = parse_target_list(&format!("{text}s:2  Asleep\n")).unwrap_err();
        assert_eq!(
            (err.line, err.why),
            (3, "a reachability that is none of Online, Probably-offline, Offline")
        );
    }

    #[test]
    fn units_read_as_printed() {
        assert_eq!(iec_bytes("0B"), Some(0));
        assert_eq!(iec_bytes("1023B"), Some(1023));
        assert_eq!(iec_bytes("1.5KiB"), Some(1536));
        assert_eq!(iec_bytes("4093.7GiB"), Some(tenths_gib(40_937)));
        assert_eq!(iec_bytes("16EiB"), None, "over a u64");
        assert_eq!(iec_bytes("1.2.3KiB"), None);
        assert_eq!(si_count("500.0k"), Some(500_000));
        assert_eq!(si_count("12.0"), Some(12));
        assert_eq!(si_count("178.8M"), Some(178_800_000));
        assert_eq!(unix_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_time("2000-03-01T00:00:00-01:30"), Some(951_868_800 + 5_400));
        assert_eq!(unix_time("2025-13-01T00:00:00Z"), None);
    }

    /// Whatever the bytes, the parsers return rather than panic.
    #[test]
    fn random_text_never_panics() {
        const ALPHABET: &[char] = &[
            '0', '1', '9', '.', ' ', ' ', ' ', '\n', '\n', '%', ':', '=', '[', ']', '{', '}', '"', ',', 'G',
            'i', 'B', 'M', 'k', 's', 'T', 'Z', '-', '+', 'é', '日', '<', '>', '\r', '\t',
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let prefixes = [
            "",
            "TargetID  Reachability  Consistency  NodeID\n",
            " time_index write_KiB  read_KiB   reqs   qlen bsy\n",
            "NODE_ID  ALIAS  REQUESTS  WRITTEN\n",
            "ID     REACHABILITY  SPACE  SPACE_USED\n",
            "[",
        ];
        for round in 0..3000 {
            let len = usize::try_from(next() % 120).unwrap();
            let body: String = (0..len)
                .map(|_| ALPHABET[usize::try_from(next() % ALPHABET.len() as u64).unwrap()])
                .collect();
            let text = format!("{}{body}", prefixes[round % prefixes.len()]);
            let _ = parse_ctl_serverstats(&text, NodeType::Storage);
            let _ = parse_stats_server(&text);
            let _ = parse_ctl_listtargets(&text, NodeType::Meta);
            let _ = parse_target_list(&text);
        }
    }

    /// A storage server's files (the configuration's first storage directory holds its
    /// `nodeNumID`) and a metadata server's; one not registered yet (no `nodeNumID`) is not
    /// listed, nor a node without BeeGFS.
    #[test]
    fn this_nodes_servers_are_found_by_their_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = pvfs_host::Root::at(dir.path());
        assert!(local_servers(&root).is_empty());
        let put = |path: &str, text: &str| {
            let at = dir.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        };
        put(
            "/etc/beegfs/beegfs-storage.conf",
            "# storage\nsysMgmtdHost = mgmt01\nstoreStorageDirectory = /data/beegfs/t1, /data/beegfs/t2 # two targets\n",
        );
        put("/etc/beegfs/beegfs-meta.conf", "storeMetaDirectory = /data/beegfs/meta\n");
        assert!(local_servers(&root).is_empty(), "neither registered yet");
        put("/data/beegfs/t1/nodeNumID", "3\n");
        put("/data/beegfs/t2/nodeNumID", "99\n");
        assert_eq!(local_servers(&root), [LocalServer { node_type: NodeType::Storage, num_id: 3 }]);
        put("/data/beegfs/meta/nodeNumID", "1\n");
        assert_eq!(
            local_servers(&root),
            [
                LocalServer { node_type: NodeType::Storage, num_id: 3 },
                LocalServer { node_type: NodeType::Meta, num_id: 1 }
            ]
        );
    }

    /// A server's newest second in one round of `beegfs-ctl --serverstats --interval=1 NUMID`
    /// (ModeIOStat's single-node history: the header, a row a second, oldest first) and in
    /// `beegfs stats server storage:NUMID --output ndjson --raw` rows.
    #[test]
    fn a_servers_newest_second_from_either_tool() {
        let storage = LocalServer { node_type: NodeType::Storage, num_id: 3 };
        let mut round = format!(
            "{:>11} {:>9} {:>9} {:>6} {:>6} {:>3}\n",
            "time_index", "write_KiB", "read_KiB", "reqs", "qlen", "bsy"
        );
        for (t, w) in [(1_700_000_000, 1024), (1_700_000_001, 2048), (1_700_000_002, 4096)] {
            round += &format!("{t:>11} {w:>9} {:>9} {:>6} {:>6} {:>3}\n", 8, 40, 1, 2);
        }
        let second = ServerSecond::newest(storage, &round, true).unwrap();
        assert_eq!(
            second,
            ServerSecond {
                kind: "storage".into(),
                num_id: 3,
                time: 1_700_000_002,
                requests: 40,
                queued_requests: 1,
                busy_workers: 2,
                write_bytes: 4096 * 1024,
                read_bytes: 8 * 1024,
            }
        );
        let ndjson = "{\"busy_workers\":\"3\",\"queue_length\":\"0\",\"read\":\"0\",\"received\":\"10\",\"requests\":\"9\",\"sent\":\"20\",\"time\":1748865802,\"written\":\"8192\"}\n\
                      {\"busy_workers\":\"1\",\"queue_length\":\"0\",\"read\":\"0\",\"received\":\"10\",\"requests\":\"7\",\"sent\":\"20\",\"time\":1748865801,\"written\":\"4096\"}\n";
        let second = ServerSecond::newest(storage, ndjson, false).unwrap();
        assert_eq!(
            (second.time, second.requests, second.write_bytes, second.busy_workers),
            (1_748_865_802, 9, 8192, 3)
        );
        assert_eq!(ServerSecond::newest(storage, "", true), None);
    }
}
