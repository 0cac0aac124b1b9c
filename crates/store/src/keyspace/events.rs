//! Events the keyspace itself causes, recorded for whoever publishes them.
//!
//! A [`super::Db`] removes expired keys on lookup, creates keys and misses
//! reads without knowing the server around it, yet Redis announces those as
//! keyspace events (`expired`, `new`, `keymiss`), and `WATCH` and client
//! tracking must hear of every key that expired or was evicted. So the
//! database records them here, in a queue of the thread that caused them,
//! and the code that holds the server's state (the command path, the expiry
//! tick, eviction) drains it with [`take`] and publishes.
//!
//! Nothing is recorded unless some server asked for that kind of event
//! ([`adjust`]), so with notifications off a lookup pays one relaxed load.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::per_thread;

pub use crate::per_thread::{Pending, ServerEvent};

/// Most events kept between two drains on one thread. A drain follows
/// every command, every shard visited by the expiry cycle and every
/// eviction, so only a single command touching more keys than this can
/// reach it; events past it are dropped rather than growing without bound.
pub const LIMIT: usize = 1 << 16;

/// For each kind, how many servers in this process want it.
static WANTED: [AtomicUsize; 4] = [AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)];

/// How many (server, kind) pairs want events: the one load callers make
/// before draining.
static ANY: AtomicUsize = AtomicUsize::new(0);

/// A server's wanted kinds changed from mask `old` to mask `new` (bits of
/// [`ServerEvent::bit`]).
pub fn adjust(old: u8, new: u8) {
    for (i, wanted) in WANTED.iter().enumerate() {
        let bit = 1u8 << i;
        match (old & bit != 0, new & bit != 0) {
            (false, true) => {
                wanted.fetch_add(1, Ordering::Relaxed);
                ANY.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                wanted.fetch_sub(1, Ordering::Relaxed);
                ANY.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}

/// Whether some server wants events of `kind`.
#[inline]
pub fn wanted(kind: ServerEvent) -> bool {
    WANTED[kind as usize].load(Ordering::Relaxed) > 0
}

/// Whether some server wants any kind of event (so a drain may find some).
#[inline]
pub fn any_wanted() -> bool {
    ANY.load(Ordering::Relaxed) > 0
}

/// Record `kind` for `key` of database `db`, if some server wants it.
#[inline]
pub fn record(kind: ServerEvent, db: usize, key: &[u8]) {
    if wanted(kind) {
        push(Pending { kind, db, key: key.into(), seq: 0 });
    }
}

/// Record the removal of `key` (expired or evicted) by the keyspace
/// itself, if some server wants it, with its place in the keyspace's order
/// of changes taken from `changes` now, under the shard's lock: the
/// append-only file writes the removal where it happened among the
/// commands, which is what makes a replay agree with the server.
#[inline]
pub fn record_removal(kind: ServerEvent, db: usize, key: &[u8], changes: Option<&AtomicU64>) {
    if wanted(kind) {
        let seq = changes.map_or(0, |c| c.fetch_add(1, Ordering::Relaxed) + 1);
        push(Pending { kind, db, key: key.into(), seq });
    }
}

fn push(event: Pending) {
    per_thread::with_notes(|n| {
        let mut p = n.events.borrow_mut();
        // A removal holding a place in the order of changes must reach
        // whoever waits for that place; the list is bounded by the keys
        // the command named then.
        if p.len() < LIMIT || event.seq != 0 {
            p.push(event);
        }
    });
}

/// The events recorded on this thread since the last call, oldest first.
pub fn take() -> Vec<Pending> {
    per_thread::with_notes(|n| std::mem::take(&mut *n.events.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_wanted_kinds_are_recorded_and_take_drains() {
        take();
        record(ServerEvent::KeyMiss, 0, b"nobody-wants-this");
        adjust(0, ServerEvent::New.bit());
        record(ServerEvent::New, 3, b"k");
        assert!(any_wanted() && wanted(ServerEvent::New));
        let got: Vec<Pending> = take().into_iter().filter(|e| e.kind != ServerEvent::KeyMiss).collect();
        adjust(ServerEvent::New.bit(), 0);
        assert!(got.contains(&Pending { kind: ServerEvent::New, db: 3, key: Box::from(&b"k"[..]), seq: 0 }));
        assert!(take().iter().all(|e| &*e.key != b"k"), "drained");
    }
}
