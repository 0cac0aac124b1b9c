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
//!
//! Changes the server makes by itself (a key expired, found on lookup or by
//! the active cycle; a key evicted for `maxmemory`), and the `new` and
//! `keymiss` events, happen deep in a [`crate::keyspace::Db`] that knows
//! nothing of this; it records them ([`crate::keyspace::events`]) and
//! [`flush_server_events`] announces them: before a command's own events
//! (so the order is Redis's), after every command, expiry visit and
//! eviction. [`Hub`] holds the parsed flags and the count of consumers, and
//! tells the keyspace which of those events anyone wants, so with
//! notifications off and no consumer they cost one relaxed load.

use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::keyspace::events::{self, ServerEvent};
use crate::keyspace::MultiLock;
use crate::pubsub::Kind;
use crate::state::ServerState;

/// The class of a keyspace event: the letter `notify-keyspace-events`
/// selects it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
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

    /// The class's bit in parsed `notify-keyspace-events` flags.
    pub const fn bit(self) -> u32 {
        1 << (self as u32 + 2)
    }
}

/// Flag bit: publish on `__keyspace@<db>__:<key>` channels (`K`).
pub const KEYSPACE: u32 = 1;
/// Flag bit: publish on `__keyevent@<db>__:<event>` channels (`E`).
pub const KEYEVENT: u32 = 2;
/// Flag bit: module events (`d`), accepted and kept, never published by kvik.
const MODULE: u32 = 1 << 20;
/// What `A` stands for: every class but `n` (new keys) and `m` (misses).
const ALL: u32 = EventClass::Generic.bit()
    | EventClass::String.bit()
    | EventClass::List.bit()
    | EventClass::Set.bit()
    | EventClass::Hash.bit()
    | EventClass::ZSet.bit()
    | EventClass::Stream.bit()
    | EventClass::Expired.bit()
    | EventClass::Evicted.bit()
    | MODULE;

/// Parse a `notify-keyspace-events` value into flag bits; `None` for a
/// character Redis does not accept (letters are case-sensitive).
pub fn parse_flags(value: &str) -> Option<u32> {
    let mut flags = 0;
    for c in value.bytes() {
        flags |= match c {
            b'A' => ALL,
            b'g' => EventClass::Generic.bit(),
            b'$' => EventClass::String.bit(),
            b'l' => EventClass::List.bit(),
            b's' => EventClass::Set.bit(),
            b'h' => EventClass::Hash.bit(),
            b'z' => EventClass::ZSet.bit(),
            b't' => EventClass::Stream.bit(),
            b'x' => EventClass::Expired.bit(),
            b'e' => EventClass::Evicted.bit(),
            b'n' => EventClass::New.bit(),
            b'm' => EventClass::KeyMiss.bit(),
            b'd' => MODULE,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            _ => return None,
        };
    }
    Some(flags)
}

/// What decides which changes are announced, shared by the whole server:
/// the parsed `notify-keyspace-events` flags and the number of consumers
/// (`WATCH`, client tracking) that need to hear of keys the server itself
/// removes. Reading either is one relaxed load, so a write with
/// notifications off pays only that.
#[derive(Debug, Default)]
pub struct Hub {
    flags: AtomicU32,
    consumers: AtomicUsize,
    /// The [`ServerEvent`] kinds this server wants recorded, as last
    /// reported to [`events::adjust`].
    wanted: AtomicU8,
    /// Serialises recomputing `wanted`, so two changes cannot report out of order.
    refresh: Mutex<()>,
}

impl Hub {
    /// The `notify-keyspace-events` flags now.
    #[inline]
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// Replace the flags (on `CONFIG SET` and at startup).
    pub fn set_flags(&self, flags: u32) {
        self.flags.store(flags, Ordering::Relaxed);
        self.refresh();
    }

    /// A consumer that must hear of expired and evicted keys registered
    /// (a client's first `WATCH`, tracking switched on).
    pub fn add_consumer(&self) {
        self.consumers.fetch_add(1, Ordering::Relaxed);
        self.refresh();
    }

    /// A consumer registered with [`Hub::add_consumer`] went away.
    pub fn remove_consumer(&self) {
        // Never below zero, whatever a caller does.
        let _ = self.consumers.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        self.refresh();
    }

    /// Whether some consumer is registered.
    #[inline]
    pub fn has_consumers(&self) -> bool {
        self.consumers.load(Ordering::Relaxed) > 0
    }

    /// Tell the keyspace which events to record for this server now.
    fn refresh(&self) {
        let _one = self.refresh.lock().unwrap_or_else(|e| e.into_inner());
        let flags = self.flags();
        let publishing = |class: EventClass| flags & (KEYSPACE | KEYEVENT) != 0 && flags & class.bit() != 0;
        let mut want = 0;
        if self.has_consumers() || publishing(EventClass::Expired) {
            want |= ServerEvent::Expired.bit();
        }
        if self.has_consumers() || publishing(EventClass::Evicted) {
            want |= ServerEvent::Evicted.bit();
        }
        if publishing(EventClass::New) {
            want |= ServerEvent::New.bit();
        }
        if publishing(EventClass::KeyMiss) {
            want |= ServerEvent::KeyMiss.bit();
        }
        let old = self.wanted.swap(want, Ordering::Relaxed);
        events::adjust(old, want);
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        events::adjust(*self.wanted.get_mut(), 0);
    }
}

/// Publish what the keyspace recorded on this thread (expired, evicted and
/// new keys, read misses; see [`events`]) and tell `WATCH` and tracking of
/// the keys the server removed. Runs before a command's own events and
/// after every command, expiry visit and eviction.
///
/// Inlined: while no server wants events this is one relaxed load.
#[inline]
pub fn flush_server_events(state: &ServerState) {
    if events::any_wanted() {
        publish_server_events(state);
    }
}

/// [`flush_server_events`] while some server wants events.
#[inline(never)]
fn publish_server_events(state: &ServerState) {
    for e in events::take() {
        let (class, name) = match e.kind {
            ServerEvent::Expired => (EventClass::Expired, "expired"),
            ServerEvent::Evicted => (EventClass::Evicted, "evicted"),
            ServerEvent::New => (EventClass::New, "new"),
            ServerEvent::KeyMiss => (EventClass::KeyMiss, "keymiss"),
        };
        if matches!(e.kind, ServerEvent::Expired | ServerEvent::Evicted) {
            key_changed(state, e.db, &e.key, 0);
        }
        publish_event(state, class, name, e.db, &e.key);
    }
}

/// Whether a change of `class` to a key has anyone to tell: recorded
/// server events to announce, a `WATCH`, a tracking client, or a keyspace
/// notification of that class. Each is one relaxed load of a counter or of
/// flags kept up to date where they change, so the common case (nobody)
/// costs a few loads instead of a call into each consumer.
#[inline]
pub fn anyone_interested(state: &ServerState, class: EventClass) -> bool {
    events::any_wanted() || !state.watches.idle() || !state.tracking.idle() || state.changes.flags() & class.bit() != 0
}

/// `key` of database `db` was changed by client `by_client` (0 for the
/// server itself: expiry, eviction).
///
/// Called with the key's shard locked.
pub fn key_changed(state: &ServerState, db: usize, key: &[u8], by_client: u64) {
    state.watches.touch(db, key);
    // Tracking follows key names whatever the database, as Redis does.
    state.tracking.key_changed(&state.clients, state.pubsub.limit(), key, by_client);
}

/// Database `db` was emptied (`FLUSHDB`), or every database (`FLUSHALL`,
/// `db` = `None`).
pub fn db_flushed(state: &ServerState, db: Option<usize>) {
    state.watches.flushed(db);
    // Redis tells every tracking client to drop everything, whichever
    // database was emptied.
    state.tracking.flushed(&state.clients, state.pubsub.limit());
}

/// Databases `a` and `b` are about to trade contents (`SWAPDB`); `lock`
/// holds every shard, so what each database holds can still be looked at.
pub fn dbs_swapped(state: &ServerState, a: usize, b: usize, lock: &mut MultiLock<'_, '_>) {
    state.watches.swapping(a, b, lock, &state.keyspace);
}

/// Publish the keyspace event `event` of `class` on `key` of database `db`,
/// when `notify-keyspace-events` asks for it.
///
/// The pub/sub registry takes only its own locks, never a shard's, so this
/// is safe under a shard lock.
pub fn publish_event(state: &ServerState, class: EventClass, event: &str, db: usize, key: &[u8]) {
    let flags = state.changes.flags();
    if flags & class.bit() == 0 {
        return;
    }
    if flags & KEYSPACE != 0 {
        let channel = [format!("__keyspace@{db}__:").as_bytes(), key].concat();
        state.pubsub.publish(Kind::Channel, &channel, event.as_bytes());
    }
    if flags & KEYEVENT != 0 {
        let channel = format!("__keyevent@{db}__:{event}");
        state.pubsub.publish(Kind::Channel, channel.as_bytes(), key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_like_redis() {
        assert_eq!(parse_flags(""), Some(0));
        assert_eq!(parse_flags("KEA"), Some(KEYSPACE | KEYEVENT | ALL));
        let kl = parse_flags("Kl").unwrap();
        assert_eq!(kl, KEYSPACE | EventClass::List.bit());
        assert_eq!(parse_flags("An").map(|f| f & EventClass::New.bit() != 0), Some(true));
        assert_eq!(parse_flags("A").map(|f| f & (EventClass::New.bit() | EventClass::KeyMiss.bit())), Some(0));
        assert_eq!(parse_flags("Em$"), Some(KEYEVENT | EventClass::KeyMiss.bit() | EventClass::String.bit()));
        assert_eq!(parse_flags("k"), None, "letters are case-sensitive");
        assert_eq!(parse_flags("KEq"), None);
    }

    #[test]
    fn hub_wants_server_events_only_when_someone_listens() {
        let hub = Hub::default();
        assert_eq!(hub.wanted.load(Ordering::Relaxed), 0);
        hub.set_flags(parse_flags("Ax").unwrap_or(0));
        assert_eq!(hub.wanted.load(Ordering::Relaxed), 0, "neither K nor E: nothing is published");
        hub.set_flags(parse_flags("Kx").unwrap_or(0));
        assert_eq!(hub.wanted.load(Ordering::Relaxed), ServerEvent::Expired.bit());
        hub.set_flags(parse_flags("Enm").unwrap_or(0));
        assert_eq!(hub.wanted.load(Ordering::Relaxed), ServerEvent::New.bit() | ServerEvent::KeyMiss.bit());
        hub.set_flags(0);
        hub.add_consumer();
        assert!(hub.has_consumers());
        assert_eq!(hub.wanted.load(Ordering::Relaxed), ServerEvent::Expired.bit() | ServerEvent::Evicted.bit());
        hub.remove_consumer();
        hub.remove_consumer();
        assert!(!hub.has_consumers());
        assert_eq!(hub.wanted.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn events_reach_pattern_subscribers_only_for_enabled_classes() {
        let state = ServerState::default();
        let mut inbox = crate::pubsub::subscriber(7, None);
        state.pubsub.psubscribe(b"__key*__:*", inbox.subscriber());
        publish_event(&state, EventClass::List, "lpush", 0, b"k");
        assert!(inbox.try_recv().is_none(), "off by default");
        state.changes.set_flags(parse_flags("Kl").unwrap_or(0));
        publish_event(&state, EventClass::Generic, "del", 0, b"k");
        publish_event(&state, EventClass::List, "lpush", 3, b"k");
        match inbox.try_recv() {
            Some(crate::pubsub::Message::PMessage { channel, payload, .. }) => {
                assert_eq!((&*channel, &*payload), (&b"__keyspace@3__:k"[..], &b"lpush"[..]));
            }
            other => panic!("expected one keyspace message, got {other:?}"),
        }
        assert!(inbox.try_recv().is_none(), "no keyevent message without E");
    }
}
