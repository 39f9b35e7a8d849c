//! Which HTTP connections `pvfsctl serve` holds: at most so many in all and from one address,
//! and when either is full, the oldest connection that is not in the middle of a request makes
//! room for the newcomer.
//!
//! A slowloris holds connections by never finishing its request headers. Waiting for a free slot
//! (the listen backlog) let 2,000 of them push a real scrape minutes back; refusing newcomers
//! would lock scrapers out instead. Evicting the oldest *idle* connection (headers not yet
//! complete, or a kept-alive connection between requests) costs an honest client nothing: its
//! request arrives in one packet, so it is idle only until serve reads it. A connection serving
//! a request (until its response body is sent) is never evicted, nor one whose whole request
//! head is waiting in its socket unread (looked at with `MSG_PEEK` when it is accepted and
//! again before it would be evicted: a scraper accepted moments ago, or one whose client was
//! slow to write under load, must not lose to a flood of newcomers from its own address). When
//! every place is busy the newcomer is closed.
//!
//! The table is a `BTreeMap` keyed by admission order, so the oldest idle connection is the
//! first idle entry; it holds at most [`super::HttpLimits::max_connections`] entries, and at
//! most [`PEEKS`] candidates are looked at per admission, so the scan is short. Admissions
//! happen on the accept loop only, one at a time. An entry names its socket's descriptor, which
//! stays open while the entry exists: the [`Ticket`] is dropped before the socket it is held
//! with (see the crate root's `Admitted`), which also tells it when serve has read from the connection.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;

/// Eviction candidates looked at (one `recv(MSG_PEEK)` each) per admission at most; past
/// that, the next idle one goes without a look.
const PEEKS: usize = 8;

/// What waits unread in a connection's socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    /// Nothing (or the socket cannot be looked at).
    Nothing,
    /// Part of a request head.
    Part,
    /// A whole request head (its headers' blank line within the first 4 KiB, where scrapers'
    /// heads fit).
    Whole,
}

/// What waits in the socket `fd`, looked at without reading it and without waiting.
fn waiting(fd: RawFd) -> Waiting {
    use nix::sys::socket::{MsgFlags, recv};
    let mut buf = [0u8; 4096];
    match recv(fd, &mut buf, MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT) {
        Ok(0) | Err(_) => Waiting::Nothing,
        Ok(n) if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") => Waiting::Whole,
        Ok(_) => Waiting::Part,
    }
}

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
    /// The connection's socket, open while this entry exists.
    fd: RawFd,
    /// Whether serve has read anything from it (set by its reader, [`Ticket::heard`]).
    heard: Arc<AtomicBool>,
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
    /// The connection to evict (from `peer` only, if given): of those with no request under
    /// way and none waiting to be read, the oldest that has sent something (a slowloris
    /// trickling its headers, a kept-alive connection between requests), else the oldest that
    /// has sent nothing yet (which may be a scraper whose request is still on its way).
    fn oldest_idle(&self, peer: Option<IpAddr>) -> Option<u64> {
        let mut silent = None;
        let idle = self.open.iter().filter(|(_, e)| e.busy == 0 && peer.is_none_or(|p| p == e.peer));
        for (looked, (&id, entry)) in idle.enumerate() {
            if looked == PEEKS {
                return Some(silent.unwrap_or(id));
            }
            match waiting(entry.fd) {
                // Its task has yet to read it: not idle.
                Waiting::Whole => {}
                Waiting::Part => return Some(id),
                Waiting::Nothing if entry.heard.load(Ordering::Relaxed) => return Some(id),
                Waiting::Nothing => {
                    silent.get_or_insert(id);
                }
            }
        }
        silent
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
    pub(crate) fn admit(&self, peer: IpAddr, fd: RawFd) -> Option<Ticket> {
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
        let heard = Arc::new(AtomicBool::new(false));
        table.open.insert(id, Entry { peer, fd, heard: heard.clone(), busy: 0, evict: evict.clone() });
        *table.per_peer.entry(peer).or_insert(0) += 1;
        table.counts.admitted += 1;
        Some(Ticket { table: self.table.clone(), id, evict, heard })
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
    heard: Arc<AtomicBool>,
}

impl Ticket {
    /// Records that serve has read something from the connection: from now on, when idle, it
    /// is evicted before connections that have sent nothing yet.
    pub(crate) fn heard(&self) {
        if !self.heard.load(Ordering::Relaxed) {
            self.heard.store(true, Ordering::Relaxed);
        }
    }

    /// Cancelled when the connection is evicted: it is to be closed at once.
    pub(crate) fn evicted(&self) -> CancellationToken {
        self.evict.clone()
    }

    /// What the connection's service keeps to mark its requests busy.
    pub(crate) fn requests(&self) -> Requests {
        Requests { table: self.table.clone(), id: self.id }
    }
}

/// Marks a connection's requests; see [`Requests::busy`].
#[derive(Debug, Clone)]
pub(crate) struct Requests {
    table: Arc<Mutex<Table>>,
    id: u64,
}

impl Requests {
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

    /// No socket: never has a request waiting.
    const NO_FD: RawFd = -1;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn a_full_peer_gives_up_its_oldest_idle_connection() {
        let admission = Admission::new(100, 2);
        let first = admission.admit(ip(2), NO_FD).unwrap();
        let second = admission.admit(ip(2), NO_FD).unwrap();
        let _busy = first.requests().busy();
        let third = admission.admit(ip(2), NO_FD).expect("the idle one makes room");
        assert!(!first.evicted().is_cancelled(), "busy: kept");
        assert!(second.evicted().is_cancelled(), "the oldest idle one goes");
        assert!(!third.evicted().is_cancelled());
        // Another address is not affected by this one's limit.
        let other = admission.admit(ip(3), NO_FD);
        assert!(other.is_some());
        // second is gone; first, third and other remain.
        assert_eq!(admission.open(), 3);
    }

    #[test]
    fn when_full_the_oldest_idle_connection_of_anyone_goes_and_busy_ones_stay() {
        let admission = Admission::new(3, 10);
        let a = admission.admit(ip(2), NO_FD).unwrap();
        let b = admission.admit(ip(3), NO_FD).unwrap();
        let c = admission.admit(ip(4), NO_FD).unwrap();
        let (_a, _c) = (a.requests().busy(), c.requests().busy());
        let d = admission.admit(ip(5), NO_FD).expect("b is idle");
        assert!(b.evicted().is_cancelled());
        let _d = d.requests().busy();
        // Everything busy: the newcomer is refused, nobody evicted.
        assert!(admission.admit(ip(6), NO_FD).is_none());
        assert_eq!(admission.counts(), Counts { admitted: 4, evicted: 1, refused: 1 });
        // A request that ends makes its connection evictable again.
        drop(_a);
        assert!(admission.admit(ip(6), NO_FD).is_some());
        assert!(a.evicted().is_cancelled());
    }

    #[test]
    fn a_closed_connection_gives_its_place_back() {
        let admission = Admission::new(1, 1);
        let only = admission.admit(ip(2), NO_FD).unwrap();
        let _busy = only.requests().busy();
        assert!(admission.admit(ip(2), NO_FD).is_none());
        drop(_busy);
        drop(only);
        assert_eq!(admission.open(), 0);
        let again = admission.admit(ip(2), NO_FD).unwrap();
        assert!(!again.evicted().is_cancelled());
        assert_eq!(admission.counts().evicted, 0);
    }

    /// A connection whose whole request is waiting in its socket is not idle, however old: its
    /// task has not read it yet.
    #[test]
    fn a_connection_with_a_request_waiting_is_not_evicted() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let admission = Admission::new(100, 2);
        let pending = admission.admit(ip(2), accepted.as_raw_fd()).unwrap();
        let slow = admission.admit(ip(2), NO_FD).unwrap();
        client.write_all(b"GET /metrics HTTP/1.1\r\nHost: pvfs\r\n\r\n").unwrap();
        // Wait (bounded) until the kernel has it on the accepted side.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while waiting(accepted.as_raw_fd()) != Waiting::Whole {
            assert!(std::time::Instant::now() < deadline, "the request never arrived");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _newcomer = admission.admit(ip(2), NO_FD).unwrap();
        assert!(!pending.evicted().is_cancelled(), "its request is waiting: kept");
        assert!(slow.evicted().is_cancelled(), "the younger idle one goes instead");
    }

    /// When a connection must go, one that has sent part of a request (a slowloris) goes
    /// before an older one that has sent nothing yet (a scraper whose request is on its way).
    #[test]
    fn a_trickling_connection_goes_before_a_silent_one() {
        let admission = Admission::new(100, 3);
        let silent = admission.admit(ip(2), NO_FD).unwrap();
        let heard = admission.admit(ip(2), NO_FD).unwrap();
        heard.heard();
        let _third = admission.admit(ip(2), NO_FD).unwrap();
        let _newcomer = admission.admit(ip(2), NO_FD).unwrap();
        assert!(heard.evicted().is_cancelled());
        assert!(!silent.evicted().is_cancelled(), "silent and idle, but older: kept while another can go");
        // With only silent ones left to choose from, the oldest goes.
        let _next = admission.admit(ip(2), NO_FD).unwrap();
        assert!(silent.evicted().is_cancelled());
    }
}
