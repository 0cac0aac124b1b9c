//! The vocabulary of changes: the classes of keyspace events and the flags
//! of `notify-keyspace-events` that select them ([`parse_flags`]), and the
//! [`Hub`] that holds the parsed flags and the count of consumers and tells
//! the keyspace which of its own events anyone wants. Below the registries
//! and the state, which hold a [`Hub`]; what follows a change (publishing,
//! `WATCH`, tracking) is [`crate::effects::changes`], above them.

use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::keyspace::events::{self, ServerEvent};

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
}
