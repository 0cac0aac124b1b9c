//! Everything the store keeps per thread, in one place.
//!
//! A command runs on one thread from its first lookup to its last write,
//! and a few facts are about that run rather than about any database: the
//! key the frame scan located ahead of it ([`crate::keyspace::lookahead`]),
//! the time every expiry check of the command agrees on
//! ([`crate::keyspace::now_ms`]), the transaction whose `EXEC` holds shard
//! reservations, and what the store noticed for the server to act on once
//! the command is done: keys that became ready for blocked clients
//! ([`crate::keyspace::ready`]) and the events it caused
//! ([`crate::keyspace::events`]). The store sits below the server and
//! cannot call up, so it notes these here, on the thread, where the server
//! collects them.
//!
//! They live here rather than as statics spread over the files that use
//! them, so that what a thread carries is read in one screen. This module
//! defines the data and imports nothing from the crate; the modules above
//! it own the logic.
//!
//! The state is in two parts. [`PerThread`] holds plain numbers, read by
//! every lookup and every command: its thread-local needs no destructor,
//! so reading a field costs what reading a static does. [`Notes`] holds
//! what owns memory (the ready keys and the events); a thread-local with
//! a destructor checks on every access that the destructor is registered,
//! which in one part with the numbers cost a pipelined GET 46 more
//! instructions (2,100 → 2,146, callgrind), most of it in the key-memo
//! check every lookup makes. The notes are read only when something was
//! noted.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

/// A kind of event the keyspace records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerEvent {
    /// A key was removed because its deadline passed.
    Expired = 0,
    /// A key was removed to bring memory under `maxmemory`.
    Evicted = 1,
    /// A key was created.
    New = 2,
    /// A read lookup found no key.
    KeyMiss = 3,
}

impl ServerEvent {
    /// The kind's bit in a mask of wanted kinds.
    pub const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// One recorded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// What happened.
    pub kind: ServerEvent,
    /// The database of the key.
    pub db: usize,
    /// The key.
    pub key: Box<[u8]>,
    /// For a key the keyspace removed (expired, evicted): its place in the
    /// keyspace's order of changes, taken under the shard's lock (see
    /// [`crate::keyspace::Keyspace::next_change`]); 0 for the other kinds.
    pub seq: u64,
}

/// Keys made ready on one thread, in the order they became ready, without
/// repeats.
#[derive(Debug, Default)]
pub struct ReadyList {
    /// `(database, key)`, oldest first.
    pub keys: VecDeque<(usize, Box<[u8]>)>,
    /// More keys became ready than were kept.
    pub overflow: bool,
}

/// The store's plain per-thread state: numbers every command reads.
#[derive(Debug)]
pub struct PerThread {
    /// The located key of the running command: its address and length
    /// (0, 0 when none). Kept apart from its place so that the check every
    /// lookup makes reads two words, not the whole record.
    pub memo_key: Cell<(usize, usize)>,
    /// The located key's slot and hash.
    pub memo_place: Cell<(u16, u64)>,
    /// The time the running command started at (Unix ms), while one runs.
    pub command_time_ms: Cell<Option<i64>>,
    /// The transaction whose `EXEC` runs on this thread, if one does.
    pub transaction: Cell<Option<u64>>,
    /// Whether [`Notes::ready`] got a key since the server last settled
    /// it (read after every command, so kept here, not with the list).
    pub has_ready: Cell<bool>,
    /// This thread replays an append-only file: no key expires (see
    /// [`crate::keyspace::Loading`]).
    pub loading: Cell<bool>,
}

/// What the store noticed on this thread for the server to act on.
#[derive(Debug)]
pub struct Notes {
    /// Keys made ready since they were last taken.
    pub ready: RefCell<ReadyList>,
    /// Events recorded since they were last taken, oldest first.
    pub events: RefCell<Vec<Pending>>,
}

impl PerThread {
    const fn new() -> PerThread {
        PerThread {
            memo_key: Cell::new((0, 0)),
            memo_place: Cell::new((0, 0)),
            command_time_ms: Cell::new(None),
            transaction: Cell::new(None),
            has_ready: Cell::new(false),
            loading: Cell::new(false),
        }
    }
}

impl Notes {
    const fn new() -> Notes {
        Notes {
            ready: RefCell::new(ReadyList { keys: VecDeque::new(), overflow: false }),
            events: RefCell::new(Vec::new()),
        }
    }
}

thread_local! {
    static THIS: PerThread = const { PerThread::new() };
    static NOTES: Notes = const { Notes::new() };
}

/// Run `f` on this thread's plain state.
#[inline(always)]
pub fn with<R>(f: impl FnOnce(&PerThread) -> R) -> R {
    THIS.with(f)
}

/// Run `f` on what this thread noted for the server.
#[inline]
pub fn with_notes<R>(f: impl FnOnce(&Notes) -> R) -> R {
    NOTES.with(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_state_needs_no_destructor() {
        assert!(!std::mem::needs_drop::<PerThread>());
    }

    #[test]
    fn each_thread_has_its_own() {
        with(|t| t.command_time_ms.set(Some(42)));
        let other = std::thread::spawn(|| with(|t| t.command_time_ms.get())).join().expect("thread ran");
        assert_eq!(other, None);
        assert_eq!(with(|t| t.command_time_ms.replace(None)), Some(42));
    }
}
