//! One database (of the 16 `SELECT` chooses from) inside one shard.
//!
//! Expiry is lazy here: every lookup first checks the key's deadline and
//! removes the key if it has passed, so no command ever sees an expired key.
//! Keys with a deadline are also indexed by deadline, so the active cycle
//! (which removes keys nobody asks for) finds the due ones without scanning:
//! it costs one ordered-set entry per key with a TTL, and in exchange every
//! expired key is found, not just the ones a random sample happens to hit.

use std::collections::{BTreeSet, HashMap};

use crate::types::Value;

/// A stored key: its value and, if it has one, its expiry deadline.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Unix time in milliseconds at which the key expires.
    pub expire_at_ms: Option<i64>,
    /// Unix time in seconds of the last access (for `OBJECT IDLETIME`);
    /// seconds are all Redis keeps, and four bytes keep the entry small.
    pub touched_s: u32,
    /// The value was made by `COPY` and not replaced since. Redis gives a
    /// copy its own object even for the small integers it otherwise shares
    /// between keys, which `OBJECT REFCOUNT` shows.
    pub private_copy: bool,
}

impl Entry {
    /// A key without expiry.
    pub fn new(value: Value) -> Entry {
        Entry::with_expire(value, None)
    }

    /// A key expiring at `expire_at_ms` (never when `None`), accessed now.
    pub fn with_expire(value: Value, expire_at_ms: Option<i64>) -> Entry {
        Entry { value, expire_at_ms, touched_s: seconds(super::now_ms()), private_copy: false }
    }

    /// True when the deadline has passed at `now_ms`.
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.expire_at_ms.is_some_and(|at| at <= now_ms)
    }
}

/// The keys of one database that live in one shard.
/// A Unix time in milliseconds as the seconds an entry's access time keeps.
pub fn seconds(ms: i64) -> u32 {
    u32::try_from(ms.max(0) / 1000).unwrap_or(u32::MAX)
}

#[derive(Debug, Default)]
pub struct Db {
    map: HashMap<Box<[u8]>, Entry>,
    /// Keys with a deadline, ordered by deadline (for the active cycle and
    /// for `INFO keyspace`'s `expires=`).
    deadlines: BTreeSet<(i64, Box<[u8]>)>,
    /// Keys removed because their deadline passed (for `INFO stats`' `expired_keys`).
    expired: u64,
}

impl Db {
    /// Number of keys, counting keys whose deadline passed but were not yet removed.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when the database holds no key.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of keys with a deadline.
    pub fn expiring(&self) -> usize {
        self.deadlines.len()
    }

    /// Keys removed by expiry so far.
    pub fn expired_count(&self) -> u64 {
        self.expired
    }

    /// Remove `key` if its deadline has passed; true when it did.
    fn expire_if_due(&mut self, key: &[u8], now_ms: i64) -> bool {
        let due = self.map.get(key).is_some_and(|e| e.is_expired(now_ms));
        if due {
            self.remove(key);
            self.expired += 1;
        }
        due
    }

    /// The live entry for `key`, marking it accessed.
    pub fn get(&mut self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        self.expire_if_due(key, now_ms);
        let entry = self.map.get_mut(key)?;
        entry.touched_s = seconds(now_ms);
        Some(entry)
    }

    /// The live entry for `key`, mutable, marking it accessed; for commands
    /// that change the value. A caller that changes the deadline must go
    /// through [`Db::set_expire`] so the deadline index stays right.
    pub fn get_mut(&mut self, key: &[u8], now_ms: i64) -> Option<&mut Entry> {
        self.expire_if_due(key, now_ms);
        let entry = self.map.get_mut(key)?;
        entry.touched_s = seconds(now_ms);
        // `private_copy` stays: most writes leave a raw string, for which
        // sharing does not show, and the ones that store a shareable integer
        // (INCR and friends) clear it themselves, so a write that fails or
        // changes nothing keeps the copy's own object, as in Redis.
        Some(entry)
    }

    /// The live entry for `key` without marking it accessed (`OBJECT`, `TTL`).
    pub fn peek(&mut self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        self.expire_if_due(key, now_ms);
        self.map.get(key)
    }

    /// Remove and return the live entry for `key` (RENAME, MOVE).
    pub fn take(&mut self, key: &[u8], now_ms: i64) -> Option<Entry> {
        if self.expire_if_due(key, now_ms) {
            return None;
        }
        self.remove(key)
    }

    /// True when `key` exists and has not expired.
    pub fn contains(&mut self, key: &[u8], now_ms: i64) -> bool {
        self.get(key, now_ms).is_some()
    }

    /// Store `entry` under `key`, replacing any previous value; returns the old entry.
    pub fn insert(&mut self, key: &[u8], entry: Entry) -> Option<Entry> {
        let new_deadline = entry.expire_at_ms;
        let old = match self.map.get_mut(key) {
            Some(slot) => Some(std::mem::replace(slot, entry)),
            None => {
                self.map.insert(key.into(), entry);
                None
            }
        };
        self.reindex(key, old.as_ref().and_then(|e| e.expire_at_ms), new_deadline);
        old
    }

    /// Remove `key`; returns its entry if it existed (expired or not).
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let old = self.map.remove(key)?;
        self.reindex(key, old.expire_at_ms, None);
        Some(old)
    }

    /// Set or clear the deadline of an existing key; false when the key does not exist.
    pub fn set_expire(&mut self, key: &[u8], at_ms: Option<i64>) -> bool {
        let Some(entry) = self.map.get_mut(key) else { return false };
        let was = std::mem::replace(&mut entry.expire_at_ms, at_ms);
        self.reindex(key, was, at_ms);
        true
    }

    /// Move `key` in the deadline index from `old` to `new`.
    fn reindex(&mut self, key: &[u8], old: Option<i64>, new: Option<i64>) {
        if old == new {
            return;
        }
        if let Some(at) = old {
            self.deadlines.remove(&(at, Box::from(key)));
        }
        if let Some(at) = new {
            self.deadlines.insert((at, Box::from(key)));
        }
    }

    /// Remove every key.
    pub fn clear(&mut self) {
        self.map.clear();
        self.deadlines.clear();
    }

    /// Every key (live or not yet removed), for KEYS, SCAN and RANDOMKEY.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.map.keys().map(|k| &k[..])
    }

    /// Every key with its entry (live or not yet removed), for SCAN's filters.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.map.iter().map(|(k, e)| (&k[..], e))
    }

    /// Remove up to `budget` expired keys; returns how many were removed.
    ///
    /// The active expiry cycle calls this with a small budget per shard, so it
    /// never holds a shard lock for long.
    pub fn remove_expired(&mut self, now_ms: i64, budget: usize) -> usize {
        let mut removed = 0;
        while removed < budget {
            let Some((at, key)) = self.deadlines.first() else { break };
            if *at > now_ms {
                break;
            }
            let key = key.clone();
            if self.expire_if_due(&key, now_ms) {
                removed += 1;
            } else {
                // Not in step with the entry (cannot happen through this
                // type's methods); drop the stale index entry.
                self.deadlines.pop_first();
            }
        }
        removed
    }

    /// The `n`th key in the map's order if it is live (RANDOMKEY); an
    /// expired key found there is removed and `None` returned, so the caller
    /// picks again.
    pub fn nth_live_key(&mut self, n: usize, now_ms: i64) -> Option<Box<[u8]>> {
        let (key, entry) = self.map.iter().nth(n)?;
        let key = key.clone();
        if entry.is_expired(now_ms) {
            self.expire_if_due(&key, now_ms);
            return None;
        }
        Some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::string::StrValue;

    fn val(s: &str) -> Value {
        Value::Str(StrValue::from_bytes(s.as_bytes()))
    }

    #[test]
    fn expired_keys_vanish_on_access_and_are_counted() {
        let mut db = Db::default();
        db.insert(b"a", Entry::with_expire(val("1"), Some(100)));
        db.insert(b"b", Entry::new(val("2")));
        assert_eq!((db.len(), db.expiring()), (2, 1));
        assert!(db.get(b"a", 99).is_some());
        assert!(db.get(b"a", 100).is_none());
        assert_eq!((db.len(), db.expiring(), db.expired_count()), (1, 0, 1));
    }

    #[test]
    fn counters_follow_inserts_removals_and_deadlines() {
        let mut db = Db::default();
        db.insert(b"a", Entry::with_expire(val("1"), Some(5)));
        db.insert(b"a", Entry::new(val("2")));
        assert_eq!(db.expiring(), 0);
        assert!(db.set_expire(b"a", Some(10)));
        assert_eq!(db.expiring(), 1);
        assert!(!db.set_expire(b"missing", Some(10)));
        db.remove(b"a");
        assert_eq!((db.len(), db.expiring()), (0, 0));
    }

    #[test]
    fn active_removal_respects_its_budget() {
        let mut db = Db::default();
        for i in 0..10 {
            db.insert(format!("k{i}").as_bytes(), Entry::with_expire(val("x"), Some(1)));
        }
        assert_eq!(db.remove_expired(2, 4), 4);
        assert_eq!(db.len(), 6);
        assert_eq!(db.remove_expired(2, 100), 6);
        assert!(db.is_empty());
    }
}
