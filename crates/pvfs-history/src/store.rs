//! The store: one redb file with two tables per tier.
//!
//! - `tail-<tier>`: `(node, point start)` → a point as it was closed ([`codec::point_bytes`]);
//!   the points of each node's current chunk.
//! - `chunk-<tier>`: `(node, chunk start)` → a complete chunk ([`codec::chunk_bytes`]).
//!
//! Closed points are committed together, once per call to [`Writer::commit`] (each second at
//! most, in practice at each step's boundary); redb's commit is durable and atomic, so a crash
//! loses at most the points not yet committed — the open ones, never older data. A chunk is
//! written and its tail rows deleted in one transaction once it is complete, so a crash leaves
//! either the tail rows or the chunk, never both or neither. Points past their tier's keep are
//! deleted hourly.
//!
//! **Why redb:** pure Rust (no C build on the 2-core machines, as SQLite's bundled build would
//! be), a single file, copy-on-write B-trees with checksummed commits (a `kill -9` mid-write
//! leaves the last committed state), concurrent readers beside one writer (the web view reads
//! while points are written), and kept up by its author with frequent releases.

use crate::codec::{self, Corrupt};
use crate::consolidate::{Consolidator, Point};
use crate::series::{Group, each_value};
use crate::tier::{TIERS, Tier};
use pvfs_metrics::rates::Rates;
use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Rows = TableDefinition<'static, (&'static str, u64), &'static [u8]>;

const TAIL: [Rows; 3] =
    [TableDefinition::new("tail-10s"), TableDefinition::new("tail-1m"), TableDefinition::new("tail-10m")];
const CHUNK: [Rows; 3] =
    [TableDefinition::new("chunk-10s"), TableDefinition::new("chunk-1m"), TableDefinition::new("chunk-10m")];

/// How long after a point's end it waits for late seconds before it is closed by time: an
/// agent's sample arrives within a second or so of being taken.
const GRACE_S: u64 = 3;

/// redb's page cache, far under its 1 GiB default: serve's RSS at 1,000 agents with history was
/// 2.0 GB with the default and 1.3 GB with this (xtask bench-ingest; the rest is still to be
/// found). Writes are a few KB a node every 10 s and reads a chunk at a time, so a small cache
/// costs little.
const CACHE_BYTES: usize = 32 << 20;

/// How often points past their keep are deleted.
const PRUNE_EVERY_S: u64 = 3600;

/// What went wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(
        "cannot open the history store {path}: {source} (is another `pvfsctl serve` using it? give it --history DIR of its own)"
    )]
    Open {
        path: PathBuf,
        #[source]
        source: Box<redb::DatabaseError>,
    },
    #[error("the history store {path}: {source}")]
    Store {
        path: PathBuf,
        #[source]
        source: Box<redb::Error>,
    },
    #[error("the history store {path}: node {node}: {source}")]
    Corrupt {
        path: PathBuf,
        node: String,
        #[source]
        source: Corrupt,
    },
}

/// Opens (or creates) the store at `path`: the writer that consolidates and commits, and a
/// reader for the API (clone it freely). Points left in the tail by a stop or crash whose
/// chunk has ended are compacted, and points past their keep deleted, before it returns.
pub fn open(path: &Path, now_s: u64) -> Result<(Writer, Reader), HistoryError> {
    let db = redb::Database::builder()
        .set_cache_size(CACHE_BYTES)
        .create(path)
        .map_err(|source| HistoryError::Open { path: path.to_owned(), source: Box::new(source) })?;
    let db = Arc::new(db);
    let mut writer = Writer {
        db: db.clone(),
        path: path.to_owned(),
        nodes: HashMap::new(),
        pending: Vec::new(),
        pruned_at: 0,
    };
    writer.recover(now_s)?;
    Ok((writer, Reader { db, path: path.to_owned() }))
}

/// A node's state in the writer.
#[derive(Default)]
struct NodeState {
    open: Consolidator,
    /// The chunk each tier's tail rows belong to, when there are some.
    tail_chunk: [Option<u64>; 3],
}

/// The one writer: takes every node's seconds, and commits what they close.
pub struct Writer {
    db: Arc<redb::Database>,
    path: PathBuf,
    nodes: HashMap<String, NodeState>,
    /// Closed points not yet committed, already encoded as tail rows: (node, tier index,
    /// start, row). Encoded when closed, so that the points of every node closing in the same
    /// second (each with every series' name) are not all held at once until the commit.
    pending: Vec<(String, usize, u64, Vec<u8>)>,
    pruned_at: u64,
}

/// What one commit did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Committed {
    pub points: usize,
    pub chunks: usize,
    pub pruned: usize,
}

impl Writer {
    /// Takes one second of `node`: its rates, with the disks `top` shows.
    pub fn record(&mut self, node: &str, rates: &Rates, devices: &[String]) {
        // The second's middle: a second ending at :10.0 belongs to the point before :10.
        let t = rates.time_unix_ns.saturating_sub((rates.interval_s * 0.5e9) as u64) / 1_000_000_000;
        self.record_with(node, t, |each| each_value(rates, devices, each));
    }

    /// Takes one second of `node` whose middle is Unix second `t`, its values given by `fill`.
    pub fn record_with(
        &mut self,
        node: &str,
        t: u64,
        fill: impl FnOnce(&mut dyn FnMut(Group, &str, &str, f64)),
    ) {
        let state = match self.nodes.get_mut(node) {
            Some(state) => state,
            None => self.nodes.entry(node.to_owned()).or_default(),
        };
        let pending = &mut self.pending;
        state.open.add(&TIERS, t, fill, |i, point| pending.push(encoded(node, i, &point)));
    }

    /// Closes every open point that ended (with some grace) before Unix second `now_s`: a node
    /// that fell silent has its last point kept, and nothing after it (a gap).
    pub fn close_due(&mut self, now_s: u64) {
        for (node, state) in &mut self.nodes {
            for (i, tier) in TIERS.iter().enumerate() {
                if let Some(point) = state.open.close_before(i, tier, now_s.saturating_sub(GRACE_S)) {
                    self.pending.push(encoded(node, i, &point));
                }
            }
        }
    }

    /// Closes every open point (`serve` is stopping): they are committed by the next commit.
    pub fn close_all(&mut self) {
        for (node, state) in &mut self.nodes {
            for i in 0..TIERS.len() {
                if let Some(point) = state.open.close(i) {
                    self.pending.push(encoded(node, i, &point));
                }
            }
        }
    }

    /// Commits the closed points, compacts the chunks that ended, and deletes what is past its
    /// keep (hourly), all in one transaction.
    pub fn commit(&mut self, now_s: u64) -> Result<Committed, HistoryError> {
        let prune = now_s >= self.pruned_at + PRUNE_EVERY_S;
        let due = self.due_chunks(now_s);
        if self.pending.is_empty() && due.is_empty() && !prune {
            return Ok(Committed::default());
        }
        let pending = std::mem::take(&mut self.pending);
        let txn = self.db.begin_write().map_err(|e| self.store(e))?;
        let mut done = Committed { points: pending.len(), ..Committed::default() };
        for (node, i, start, row) in &pending {
            let tier = &TIERS[*i];
            let chunk = tier.chunk_of(*start);
            let state = self.nodes.entry(node.clone()).or_default();
            if let Some(previous) = state.tail_chunk[*i].filter(|&c| c != chunk) {
                compact(&txn, &self.path, node, *i, previous)?;
                done.chunks += 1;
            }
            state.tail_chunk[*i] = Some(chunk);
            let mut tail = txn.open_table(TAIL[*i]).map_err(|e| self.store(e))?;
            tail.insert((node.as_str(), *start), row.as_slice()).map_err(|e| self.store(e))?;
        }
        for (node, i, chunk) in self.due_chunks(now_s) {
            compact(&txn, &self.path, &node, i, chunk)?;
            done.chunks += 1;
            if let Some(state) = self.nodes.get_mut(&node) {
                state.tail_chunk[i] = None;
            }
        }
        if prune {
            done.pruned = prune_old(&txn, now_s).map_err(|e| self.store(e))?;
        }
        txn.commit().map_err(|e| self.store(e))?;
        if prune {
            self.pruned_at = now_s;
        }
        Ok(done)
    }

    /// The tail chunks that ended (with grace) before `now_s`: nothing more will join them.
    fn due_chunks(&self, now_s: u64) -> Vec<(String, usize, u64)> {
        let mut due = Vec::new();
        for (node, state) in &self.nodes {
            for (i, tier) in TIERS.iter().enumerate() {
                if let Some(chunk) = state.tail_chunk[i]
                    && chunk + tier.chunk_span() + GRACE_S <= now_s
                {
                    due.push((node.clone(), i, chunk));
                }
            }
        }
        due
    }

    /// At open: finds each node's tail chunks, compacts those that ended, prunes.
    fn recover(&mut self, now_s: u64) -> Result<(), HistoryError> {
        let read = self.db.begin_read().map_err(|e| self.store(e))?;
        for (i, tier) in TIERS.iter().enumerate() {
            let tail = match read.open_table(TAIL[i]) {
                Ok(tail) => tail,
                Err(redb::TableError::TableDoesNotExist(_)) => continue,
                Err(e) => return Err(self.store(e)),
            };
            for row in tail.iter().map_err(|e| self.store(e))? {
                let (key, _) = row.map_err(|e| self.store(e))?;
                let (node, start) = key.value();
                let state = self.nodes.entry(node.to_owned()).or_default();
                // A node's tail holds one chunk; an older one left by a crash is compacted first.
                let chunk = tier.chunk_of(start);
                if state.tail_chunk[i].is_none_or(|c| c < chunk) {
                    state.tail_chunk[i] = Some(chunk);
                }
            }
        }
        drop(read);
        let txn = self.db.begin_write().map_err(|e| self.store(e))?;
        for (node, i, chunk) in self.leftover_chunks(&txn)? {
            compact(&txn, &self.path, &node, i, chunk)?;
        }
        prune_old(&txn, now_s).map_err(|e| self.store(e))?;
        txn.commit().map_err(|e| self.store(e))?;
        self.pruned_at = now_s;
        Ok(())
    }

    /// Every (node, tier, chunk) in the tail other than each node's newest.
    fn leftover_chunks(
        &self,
        txn: &redb::WriteTransaction,
    ) -> Result<Vec<(String, usize, u64)>, HistoryError> {
        let mut leftover = Vec::new();
        for (i, tier) in TIERS.iter().enumerate() {
            let tail = txn.open_table(TAIL[i]).map_err(|e| self.store(e))?;
            let mut seen: Vec<(String, u64)> = Vec::new();
            for row in tail.iter().map_err(|e| self.store(e))? {
                let (key, _) = row.map_err(|e| self.store(e))?;
                let (node, start) = key.value();
                let chunk = tier.chunk_of(start);
                let newest = self.nodes.get(node).and_then(|s| s.tail_chunk[i]);
                if newest != Some(chunk) && !seen.iter().any(|(n, c)| n == node && *c == chunk) {
                    seen.push((node.to_owned(), chunk));
                }
            }
            leftover.extend(seen.into_iter().map(|(node, chunk)| (node, i, chunk)));
        }
        Ok(leftover)
    }

    fn store(&self, e: impl Into<redb::Error>) -> HistoryError {
        HistoryError::Store { path: self.path.clone(), source: Box::new(e.into()) }
    }
}

/// A closed point of `node` in tier `i`, as its tail row.
fn encoded(node: &str, i: usize, point: &Point) -> (String, usize, u64, Vec<u8>) {
    (node.to_owned(), i, point.start, codec::point_bytes(point))
}

/// Moves `node`'s tail rows of `chunk` in tier `i` into its chunk row (merged with one already
/// there, as after a restart within a chunk that had been compacted).
fn compact(
    txn: &redb::WriteTransaction,
    path: &Path,
    node: &str,
    i: usize,
    chunk: u64,
) -> Result<(), HistoryError> {
    let tier = &TIERS[i];
    let store = |e: redb::Error| HistoryError::Store { path: path.to_owned(), source: Box::new(e) };
    let corrupt = |source| HistoryError::Corrupt { path: path.to_owned(), node: node.to_owned(), source };
    let mut tail = txn.open_table(TAIL[i]).map_err(|e| store(e.into()))?;
    let mut chunks = txn.open_table(CHUNK[i]).map_err(|e| store(e.into()))?;
    let range = (node, chunk)..(node, chunk + tier.chunk_span());
    let mut points = match chunks.get((node, chunk)).map_err(|e| store(e.into()))? {
        Some(row) => codec::chunk_from(chunk, tier.step_s, row.value()).map_err(corrupt)?,
        None => Vec::new(),
    };
    for row in tail.range(range.clone()).map_err(|e| store(e.into()))? {
        let (key, value) = row.map_err(|e| store(e.into()))?;
        let point = codec::point_from(key.value().1, value.value()).map_err(corrupt)?;
        points.retain(|p| p.start != point.start);
        points.push(point);
    }
    points.sort_by_key(|p| p.start);
    if !points.is_empty() {
        chunks
            .insert(
                (node, chunk),
                codec::chunk_bytes(chunk, tier.step_s, tier.chunk_span(), &points).as_slice(),
            )
            .map_err(|e| store(e.into()))?;
    }
    tail.retain_in(range, |_, _| false).map_err(|e| store(e.into()))?;
    Ok(())
}

/// Deletes the chunks (and stray tail rows) of every tier that ended before its keep.
fn prune_old(txn: &redb::WriteTransaction, now_s: u64) -> Result<usize, redb::Error> {
    let mut pruned = 0;
    for (i, tier) in TIERS.iter().enumerate() {
        let cutoff = now_s.saturating_sub(tier.keep_s);
        for (table, span) in [(CHUNK[i], tier.chunk_span()), (TAIL[i], tier.step_s)] {
            let mut table = txn.open_table(table)?;
            let before = table.len()?;
            table.retain(|(_, start), _| start + span > cutoff)?;
            pruned += (before - table.len()?) as usize;
        }
    }
    Ok(pruned)
}

/// Reads the store, beside the writer.
#[derive(Clone)]
pub struct Reader {
    db: Arc<redb::Database>,
    path: PathBuf,
}

/// Points of one node in one tier.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    pub tier: Tier,
    /// In time order; a point missing between two is a gap (the node or `serve` was down).
    pub points: Vec<Point>,
}

/// What one tier's tables hold on disk (redb's own count of the bytes its rows take).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierBytes {
    pub tier: Tier,
    pub chunk_rows: u64,
    pub chunk_bytes: u64,
    pub tail_rows: u64,
    pub tail_bytes: u64,
}

impl Reader {
    /// Each tier's rows and their bytes, for the footprint benchmark.
    pub fn footprint(&self) -> Result<Vec<TierBytes>, HistoryError> {
        let store = |e: redb::Error| HistoryError::Store { path: self.path.clone(), source: Box::new(e) };
        let read = self.db.begin_read().map_err(|e| store(e.into()))?;
        let mut out = Vec::new();
        for (i, tier) in TIERS.iter().enumerate() {
            let mut counts = [(0, 0); 2];
            for (at, table) in [CHUNK[i], TAIL[i]].into_iter().enumerate() {
                match read.open_table(table) {
                    Ok(table) => {
                        let stats = table.stats().map_err(|e| store(e.into()))?;
                        counts[at] = (table.len().map_err(|e| store(e.into()))?, stats.stored_bytes());
                    }
                    Err(redb::TableError::TableDoesNotExist(_)) => {}
                    Err(e) => return Err(store(e.into())),
                }
            }
            out.push(TierBytes {
                tier: *tier,
                chunk_rows: counts[0].0,
                chunk_bytes: counts[0].1,
                tail_rows: counts[1].0,
                tail_bytes: counts[1].1,
            });
        }
        Ok(out)
    }

    /// `node`'s points of `tier` that start in `[from, to)` (Unix seconds), committed ones only.
    pub fn range(&self, node: &str, tier: Tier, from: u64, to: u64) -> Result<Range, HistoryError> {
        self.range_of(node, tier, from, to, &|_| true)
    }

    /// [`Reader::range`] with only the series `keep` wants in each point.
    pub fn range_of(
        &self,
        node: &str,
        tier: Tier,
        from: u64,
        to: u64,
        keep: &dyn Fn(&crate::SeriesKey) -> bool,
    ) -> Result<Range, HistoryError> {
        let i = TIERS.iter().position(|t| *t == tier).unwrap_or(0);
        let store = |e: redb::Error| HistoryError::Store { path: self.path.clone(), source: Box::new(e) };
        let corrupt =
            |source| HistoryError::Corrupt { path: self.path.clone(), node: node.to_owned(), source };
        let read = self.db.begin_read().map_err(|e| store(e.into()))?;
        let mut points = Vec::new();
        match read.open_table(CHUNK[i]) {
            Ok(chunks) => {
                let first = tier.chunk_of(from);
                // The chunk before the range's first reaches into the range only if it is of the
                // first layout (longer chunks); one of the tier's own span is skipped unread.
                let longest = tier.step_s * crate::tier::LONGEST_CHUNK_POINTS;
                let before = chunks
                    .range((node, first.saturating_sub(longest))..(node, first))
                    .map_err(|e| store(e.into()))?
                    .next_back()
                    .transpose()
                    .map_err(|e| store(e.into()))?
                    .filter(|(_, value)| !codec::chunk_within_span(value.value()));
                let rows = chunks.range((node, first)..(node, to)).map_err(|e| store(e.into()))?;
                for row in before.into_iter().map(Ok).chain(rows) {
                    let (key, value) = row.map_err(|e| store(e.into()))?;
                    let chunk = codec::chunk_from_with(key.value().1, tier.step_s, value.value(), keep)
                        .map_err(corrupt)?;
                    points.extend(chunk.into_iter().filter(|p| p.start >= from && p.start < to));
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(store(e.into())),
        }
        match read.open_table(TAIL[i]) {
            Ok(tail) => {
                for row in tail.range((node, from)..(node, to)).map_err(|e| store(e.into()))? {
                    let (key, value) = row.map_err(|e| store(e.into()))?;
                    let mut point = codec::point_from(key.value().1, value.value()).map_err(corrupt)?;
                    point.series.retain(|(k, _)| keep(k));
                    points.retain(|p: &Point| p.start != point.start);
                    points.push(point);
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(store(e.into())),
        }
        points.sort_by_key(|p| p.start);
        Ok(Range { tier, points })
    }
}
