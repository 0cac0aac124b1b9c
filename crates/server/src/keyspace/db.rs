//! One database (of the 16 `SELECT` chooses from) inside one shard.
//!
//! Expiry is lazy here: every lookup first checks the key's deadline and
//! removes the key if it has passed, so no command ever sees an expired key.
//! The active cycle (which removes keys nobody asks for) walks the same map.

use std::collections::HashMap;

use crate::types::Value;

/// Bytes an entry costs beyond its key and value bytes (table slot, boxes,
/// expiry field), as counted by [`Db::memory_estimate`].
pub const ENTRY_OVERHEAD: usize = 56;

/// A stored key: its value and, if it has one, its expiry deadline.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Unix time in milliseconds at which the key expires.
    pub expire_at_ms: Option<i64>,
}

impl Entry {
    /// A key without expiry.
    pub fn new(value: Value) -> Entry {
        Entry { value, expire_at_ms: None }
    }

    /// True when the deadline has passed at `now_ms`.
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.expire_at_ms.is_some_and(|at| at <= now_ms)
    }
}

/// The keys of one database that live in one shard.
#[derive(Debug, Default)]
pub struct Db {
    map: HashMap<Box<[u8]>, Entry>,
    /// Keys with a deadline (for `INFO keyspace`'s `expires=`).
    expiring: usize,
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
        self.expiring
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

    /// The live entry for `key`.
    pub fn get(&mut self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        self.expire_if_due(key, now_ms);
        self.map.get(key)
    }

    /// The live entry for `key`, mutable. A caller that changes the deadline
    /// must go through [`Db::set_expire`] so the counters stay right.
    pub fn get_mut(&mut self, key: &[u8], now_ms: i64) -> Option<&mut Entry> {
        self.expire_if_due(key, now_ms);
        self.map.get_mut(key)
    }

    /// True when `key` exists and has not expired.
    pub fn contains(&mut self, key: &[u8], now_ms: i64) -> bool {
        self.get(key, now_ms).is_some()
    }

    /// Store `entry` under `key`, replacing any previous value; returns the old entry.
    pub fn insert(&mut self, key: &[u8], entry: Entry) -> Option<Entry> {
        let new_expiring = entry.expire_at_ms.is_some();
        let old = match self.map.get_mut(key) {
            Some(slot) => Some(std::mem::replace(slot, entry)),
            None => {
                self.map.insert(key.into(), entry);
                None
            }
        };
        let old_expiring = old.as_ref().is_some_and(|e| e.expire_at_ms.is_some());
        self.expiring = self.expiring + usize::from(new_expiring) - usize::from(old_expiring);
        old
    }

    /// Remove `key`; returns its entry if it existed (expired or not).
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let old = self.map.remove(key)?;
        if old.expire_at_ms.is_some() {
            self.expiring -= 1;
        }
        Some(old)
    }

    /// Set or clear the deadline of an existing key; false when the key does not exist.
    pub fn set_expire(&mut self, key: &[u8], at_ms: Option<i64>) -> bool {
        let Some(entry) = self.map.get_mut(key) else { return false };
        let was = entry.expire_at_ms.is_some();
        entry.expire_at_ms = at_ms;
        self.expiring = self.expiring + usize::from(at_ms.is_some()) - usize::from(was);
        true
    }

    /// Remove every key.
    pub fn clear(&mut self) {
        self.map.clear();
        self.expiring = 0;
    }

    /// Approximate bytes held by this database's keys and values, counting
    /// a fixed per-entry overhead for the table slot and bookkeeping.
    pub fn memory_estimate(&self) -> usize {
        self.map.iter().map(|(k, e)| k.len() + e.value.approx_bytes() + ENTRY_OVERHEAD).sum()
    }

    /// Every key (live or not yet removed), for KEYS, SCAN and RANDOMKEY.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.map.keys().map(|k| &k[..])
    }

    /// Remove up to `budget` expired keys; returns how many were removed.
    ///
    /// The active expiry cycle calls this with a small budget per shard, so it
    /// never holds a shard lock for long.
    pub fn remove_expired(&mut self, now_ms: i64, budget: usize) -> usize {
        if self.expiring == 0 {
            return 0;
        }
        let due: Vec<Box<[u8]>> =
            self.map.iter().filter(|(_, e)| e.is_expired(now_ms)).take(budget).map(|(k, _)| k.clone()).collect();
        for k in &due {
            self.remove(k);
        }
        self.expired += due.len() as u64;
        due.len()
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
        db.insert(b"a", Entry { value: val("1"), expire_at_ms: Some(100) });
        db.insert(b"b", Entry::new(val("2")));
        assert_eq!((db.len(), db.expiring()), (2, 1));
        assert!(db.get(b"a", 99).is_some());
        assert!(db.get(b"a", 100).is_none());
        assert_eq!((db.len(), db.expiring(), db.expired_count()), (1, 0, 1));
    }

    #[test]
    fn counters_follow_inserts_removals_and_deadlines() {
        let mut db = Db::default();
        db.insert(b"a", Entry { value: val("1"), expire_at_ms: Some(5) });
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
            db.insert(format!("k{i}").as_bytes(), Entry { value: val("x"), expire_at_ms: Some(1) });
        }
        assert_eq!(db.remove_expired(2, 4), 4);
        assert_eq!(db.len(), 6);
        assert_eq!(db.remove_expired(2, 100), 6);
        assert!(db.is_empty());
    }
}
