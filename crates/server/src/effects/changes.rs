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

use crate::keyspace::events::{self, ServerEvent};
use crate::keyspace::MultiLock;
use crate::registries::pubsub::Kind;
use crate::state::ServerState;

pub use crate::events::{parse_flags, EventClass, KEYEVENT, KEYSPACE};

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
        // A key a held script created, or missed, is its own doing: told
        // when the script ends, or never if the run is undone. What the
        // server removed (expired, evicted) is told now: it stays removed.
        if matches!(e.kind, ServerEvent::New | ServerEvent::KeyMiss) && hold(e.db, class, name, &e.key, None) {
            continue;
        }
        if matches!(e.kind, ServerEvent::Expired | ServerEvent::Evicted) {
            super::propagation::removed_by_server(state, &e);
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

/// A change announced while a script that may be started over runs
/// (see [`hold_announcements`]).
struct Held {
    db: usize,
    class: EventClass,
    event: String,
    key: Box<[u8]>,
    /// The client that changed the key, for `WATCH` and tracking; `None`
    /// for an event that is only published.
    changed_by: Option<u64>,
}

thread_local! {
    /// The announcements held on this thread, while a script runs.
    static HELD: std::cell::RefCell<Option<Vec<Held>>> = const { std::cell::RefCell::new(None) };
}

/// Hold back, on this thread, what changes announce (`WATCH`, tracking,
/// keyspace events) until [`release_announcements`] or
/// [`drop_announcements`]: a script's run that may be undone must show
/// nothing to anyone until it is known to stand. Its shards stay reserved
/// until the release, so every later `EXEC` or read on them still sees the
/// change's announcement first.
pub fn hold_announcements() {
    HELD.with(|h| *h.borrow_mut() = Some(Vec::new()));
}

/// Hold `event` if announcements are held: true when it was.
pub fn hold(db: usize, class: EventClass, event: &str, key: &[u8], changed_by: Option<u64>) -> bool {
    HELD.with(|h| match h.borrow_mut().as_mut() {
        Some(list) => {
            list.push(Held { db, class, event: event.to_owned(), key: key.into(), changed_by });
            true
        }
        None => false,
    })
}

/// Announce what was held, in order, and stop holding.
pub fn release_announcements(state: &ServerState) {
    let held = HELD.with(|h| h.borrow_mut().take()).unwrap_or_default();
    for e in held {
        if let Some(client) = e.changed_by {
            key_changed(state, e.db, &e.key, client);
        }
        publish_event(state, e.class, &e.event, e.db, &e.key);
    }
}

/// Forget what was held (the run is undone), and stop holding.
pub fn drop_announcements() {
    HELD.with(|h| *h.borrow_mut() = None);
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

/// Free memory for a command when over `maxmemory` (see
/// [`ServerState::evict_to_maxmemory`]) and announce what that expired or
/// evicted; false when the server stays over the limit.
pub fn enforce_maxmemory(state: &ServerState) -> bool {
    match state.evict_to_maxmemory() {
        None => true,
        Some(within) => {
            flush_server_events(state);
            within
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_reach_pattern_subscribers_only_for_enabled_classes() {
        let state = ServerState::default();
        let mut inbox = crate::registries::pubsub::subscriber(7, None);
        state.pubsub.psubscribe(b"__key*__:*", inbox.subscriber());
        publish_event(&state, EventClass::List, "lpush", 0, b"k");
        assert!(inbox.try_recv().is_none(), "off by default");
        state.changes.set_flags(parse_flags("Kl").unwrap_or(0));
        publish_event(&state, EventClass::Generic, "del", 0, b"k");
        publish_event(&state, EventClass::List, "lpush", 3, b"k");
        match inbox.try_recv() {
            Some(crate::registries::pubsub::Message::PMessage { channel, payload, .. }) => {
                assert_eq!((&*channel, &*payload), (&b"__keyspace@3__:k"[..], &b"lpush"[..]));
            }
            other => panic!("expected one keyspace message, got {other:?}"),
        }
        assert!(inbox.try_recv().is_none(), "no keyevent message without E");
    }
}
