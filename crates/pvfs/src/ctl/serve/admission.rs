//! Which HTTP connections `pvfsctl serve` holds: at most so many in all and from one address,
//! and when either is full, the oldest connection that is not in the middle of a request makes
//! room for the newcomer.
//!
//! A slowloris holds connections by never finishing its request headers. Waiting for a free slot
//! (the listen backlog) let 2,000 of them push a real scrape minutes back; refusing newcomers
//! would lock scrapers out instead. Evicting the oldest *idle* connection (headers not yet
//! complete, or a kept-alive connection between requests) costs an honest client nothing: its
//! request arrives in one packet, so it is never idle for long, and a connection that already
//! holds a whole request when it is accepted is counted as busy from the start. A connection
//! serving a request (until its response body is sent) is never evicted; when every slot is
//! busy the newcomer is closed.
//!
//! The table is a `BTreeMap` keyed by admission order, so the oldest idle connection is the
//! first idle entry; it holds at most [`super::HttpLimits::max_connections`] entries, so the
//! scan for a victim is short. Admissions happen on the accept loop only, one at a time.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;

/// Admits connections within the limits, evicting idle ones to make room.
#[derive(Debug, Clone)]
pub(crate) struct Admission {
    table: Arc<Mutex<Table>>,
    max_connections: usize,
    per_peer: usize,
}

#[derive(Debug, Default)]
struct Table {
    /// The next connection's id: ids grow, so the map's order is admission order.
    next: u64,
    open: BTreeMap<u64, Entry>,
    per_peer: HashMap<IpAddr, usize>,
    counts: Counts,
}

#[derive(Debug)]
struct Entry {
    peer: IpAddr,
    /// Requests under way (from complete headers until the response body is sent).
    busy: usize,
    /// Cancelled to close the connection.
    evict: CancellationToken,
}

/// What admission has done so far, for tests and logs.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub admitted: u64,
    /// Idle connections closed to make room for a newcomer.
    pub evicted: u64,
    /// Newcomers closed because every connection they could replace was busy.
    pub refused: u64,
}

impl Table {
    /// The oldest connection with no request under way (from `peer` only, if given).
    fn oldest_idle(&self, peer: Option<IpAddr>) -> Option<u64> {
        self.open.iter().find(|(_, e)| e.busy == 0 && peer.is_none_or(|p| p == e.peer)).map(|(id, _)| *id)
    }

    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.open.remove(&id)?;
        if let Some(count) = self.per_peer.get_mut(&entry.peer) {
            *count -= 1;
            if *count == 0 {
                self.per_peer.remove(&entry.peer);
            }
        }
        Some(entry)
    }

    fn evict(&mut self, id: u64) {
        if let Some(entry) = self.remove(id) {
            entry.evict.cancel();
            self.counts.evicted += 1;
        }
    }
}

impl Admission {
    pub(crate) fn new(max_connections: usize, per_peer: usize) -> Admission {
        Admission { table: Arc::default(), max_connections, per_peer }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // Every update leaves the table whole, so a panic elsewhere does not spoil it.
        self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A place for a connection from `peer`, after evicting the oldest idle connection of that
    /// peer (when it is at its limit) or of anyone (when all places are taken); `None` when
    /// there is none to evict.
    pub(crate) fn admit(&self, peer: IpAddr) -> Option<Ticket> {
        let mut table = self.lock();
        if table.per_peer.get(&peer).copied().unwrap_or(0) >= self.per_peer {
            let Some(victim) = table.oldest_idle(Some(peer)) else {
                table.counts.refused += 1;
                return None;
            };
            table.evict(victim);
        }
        if table.open.len() >= self.max_connections {
            let Some(victim) = table.oldest_idle(None) else {
                table.counts.refused += 1;
                return None;
            };
            table.evict(victim);
        }
        let id = table.next;
        table.next += 1;
        let evict = CancellationToken::new();
        table.open.insert(id, Entry { peer, busy: 0, evict: evict.clone() });
        *table.per_peer.entry(peer).or_insert(0) += 1;
        table.counts.admitted += 1;
        Some(Ticket { table: self.table.clone(), id, evict })
    }

    pub(crate) fn counts(&self) -> Counts {
        self.lock().counts
    }

    /// Connections held now.
    #[cfg(test)]
    pub(crate) fn open(&self) -> usize {
        self.lock().open.len()
    }
}

/// An admitted connection's place, given back when it is dropped.
#[derive(Debug)]
pub(crate) struct Ticket {
    table: Arc<Mutex<Table>>,
    id: u64,
    evict: CancellationToken,
}

impl Ticket {
    /// Cancelled when the connection is evicted: it is to be closed at once.
    pub(crate) fn evicted(&self) -> CancellationToken {
        self.evict.clone()
    }

    /// Marks a request under way until the returned guard is dropped: the connection is not
    /// evicted meanwhile.
    pub(crate) fn busy(&self) -> Busy {
        let mut table = self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(entry) = table.open.get_mut(&self.id) {
            entry.busy += 1;
        }
        Busy { table: self.table.clone(), id: self.id }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut table = self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        table.remove(self.id);
    }
}

/// A request under way on a connection; see [`Ticket::busy`].
#[derive(Debug)]
pub(crate) struct Busy {
    table: Arc<Mutex<Table>>,
    id: u64,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut table = self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Absent when the connection was evicted while the request started: it is closing.
        if let Some(entry) = table.open.get_mut(&self.id) {
            entry.busy = entry.busy.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn a_full_peer_gives_up_its_oldest_idle_connection() {
        let admission = Admission::new(100, 2);
        let first = admission.admit(ip(2)).unwrap();
        let second = admission.admit(ip(2)).unwrap();
        let _busy = first.busy();
        let third = admission.admit(ip(2)).expect("the idle one makes room");
        assert!(!first.evicted().is_cancelled(), "busy: kept");
        assert!(second.evicted().is_cancelled(), "the oldest idle one goes");
        assert!(!third.evicted().is_cancelled());
        // Another address is not affected by this one's limit.
        let other = admission.admit(ip(3));
        assert!(other.is_some());
        // second is gone; first, third and other remain.
        assert_eq!(admission.open(), 3);
    }

    #[test]
    fn when_full_the_oldest_idle_connection_of_anyone_goes_and_busy_ones_stay() {
        let admission = Admission::new(3, 10);
        let a = admission.admit(ip(2)).unwrap();
        let b = admission.admit(ip(3)).unwrap();
        let c = admission.admit(ip(4)).unwrap();
        let (_a, _c) = (a.busy(), c.busy());
        let d = admission.admit(ip(5)).expect("b is idle");
        assert!(b.evicted().is_cancelled());
        let _d = d.busy();
        // Everything busy: the newcomer is refused, nobody evicted.
        assert!(admission.admit(ip(6)).is_none());
        assert_eq!(admission.counts(), Counts { admitted: 4, evicted: 1, refused: 1 });
        // A request that ends makes its connection evictable again.
        drop(_a);
        assert!(admission.admit(ip(6)).is_some());
        assert!(a.evicted().is_cancelled());
    }

    #[test]
    fn a_closed_connection_gives_its_place_back() {
        let admission = Admission::new(1, 1);
        let only = admission.admit(ip(2)).unwrap();
        let _busy = only.busy();
        assert!(admission.admit(ip(2)).is_none());
        drop(_busy);
        drop(only);
        assert_eq!(admission.open(), 0);
        let again = admission.admit(ip(2)).unwrap();
        assert!(!again.evicted().is_cancelled());
        assert_eq!(admission.counts().evicted, 0);
    }
}
