//! One database (of the 16 `SELECT` chooses from) inside one shard.
//!
//! Expiry is lazy here: every lookup first checks the key's deadline and
//! removes the key if it has passed, so no command ever sees an expired key.
//! Keys with a deadline are also indexed by deadline, so the active cycle
//! (which removes keys nobody asks for) finds the due ones without scanning:
//! it costs one ordered-set entry per key with a TTL, and in exchange every
//! expired key is found, not just the ones a random sample happens to hit.
//!
//! Each database also keeps an estimate of the memory its keys take (see
//! [`charge`]), updated on every change, so `maxmemory` can be checked
//! without walking the keyspace.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::evict::Policy;
use super::lfu::{self, Tuning};
use crate::types::Value;

/// Bytes charged for every key beyond its name and value: the entry itself,
/// the boxed key's pointer and length, and the hash table's slot and control
/// byte with its spare capacity.
pub const ENTRY_OVERHEAD: usize = std::mem::size_of::<Entry>() + std::mem::size_of::<Box<[u8]>>() + 16;

/// Bytes charged for a key's place in the deadline index beyond the copy of
/// its name: the deadline, the boxed key, and a share of the tree's node.
pub const DEADLINE_OVERHEAD: usize = 48;

/// The memory estimate for `entry` stored under a key of `key_len` bytes:
/// the one per-key formula behind `maxmemory`, `MEMORY USAGE`, `MEMORY
/// STATS` and `INFO memory`.
///
/// It counts what kvik allocates for the key (name, value, bookkeeping) and
/// not the allocator's rounding, so it is a little below the real figure;
/// what matters for `maxmemory` is that it grows and shrinks with the data.
pub fn charge(key_len: usize, entry: &Entry) -> usize {
    let deadline = if entry.expire_at_ms.is_some() { DEADLINE_OVERHEAD + key_len } else { 0 };
    ENTRY_OVERHEAD + key_len + entry.value.heap_size() + deadline
}

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
    /// Logarithmic access counter for the LFU eviction policies and
    /// `OBJECT FREQ` (Redis's 8-bit counter).
    pub lfu_count: u8,
    /// Minutes clock (mod 2^16) when `lfu_count` was last decayed or
    /// incremented, so idle keys lose frequency over time.
    pub lfu_minutes: u16,
}

impl Entry {
    /// A key without expiry.
    pub fn new(value: Value) -> Entry {
        Entry::with_expire(value, None)
    }

    /// A key expiring at `expire_at_ms` (never when `None`), accessed now.
    pub fn with_expire(value: Value, expire_at_ms: Option<i64>) -> Entry {
        let now = super::now_ms();
        Entry {
            value,
            expire_at_ms,
            touched_s: seconds(now),
            private_copy: false,
            lfu_count: lfu::INIT_VAL,
            lfu_minutes: lfu::minutes(now),
        }
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
    /// Memory estimate of every key except the open one (see `open`).
    used: usize,
    /// A key handed out by [`Db::get_mut`]: its value may grow or shrink
    /// after the call returns, so its charge is taken out of `used` then and
    /// put back, recomputed, by [`Db::settle`] before anything else reads or
    /// changes this database. The buffer is reused to avoid an allocation
    /// per write.
    open_key: Vec<u8>,
    /// Whether `open_key` holds an open key.
    open: bool,
    /// State of the generator behind LFU increments and eviction samples.
    rng: u64,
    /// LFU parameters shared with the rest of the keyspace.
    tuning: Arc<Tuning>,
}

impl Db {
    /// An empty database reading its LFU parameters from `tuning`.
    pub fn with_tuning(tuning: Arc<Tuning>, seed: u64) -> Db {
        Db { tuning, rng: seed | 1, ..Db::default() }
    }

    /// Put the open key's charge back into `used` (see `open`).
    fn settle(&mut self) {
        if std::mem::take(&mut self.open) {
            if let Some(entry) = self.map.get(&self.open_key[..]) {
                self.used += charge(self.open_key.len(), entry);
            }
        }
    }

    /// Memory estimate of every key in this database, in bytes.
    pub fn used_memory(&mut self) -> usize {
        self.settle();
        self.used
    }

    /// The next pseudo-random number (xorshift64*): LFU increments and
    /// eviction samples need many cheap numbers, not unpredictable ones.
    pub fn next_random(&mut self) -> u64 {
        let mut x = if self.rng == 0 { 0x9E37_79B9_7F4A_7C15 } else { self.rng };
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Record an access to `entry` at `now_ms`: idle time and LFU counter.
    fn touch(entry: &mut Entry, now_ms: i64, tuning: &Tuning, random: u64) {
        entry.touched_s = seconds(now_ms);
        lfu::record_access(entry, now_ms, tuning, random);
    }

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
        self.settle();
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
        let random = self.next_random();
        let entry = self.map.get_mut(key)?;
        Self::touch(entry, now_ms, &self.tuning, random);
        Some(entry)
    }

    /// The live entry for `key`, mutable, marking it accessed; for commands
    /// that change the value. A caller that changes the deadline must go
    /// through [`Db::set_expire`] so the deadline index stays right.
    pub fn get_mut(&mut self, key: &[u8], now_ms: i64) -> Option<&mut Entry> {
        self.expire_if_due(key, now_ms);
        let random = self.next_random();
        let entry = self.map.get_mut(key)?;
        Self::touch(entry, now_ms, &self.tuning, random);
        self.used -= charge(key.len(), entry).min(self.used);
        self.open_key.clear();
        self.open_key.extend_from_slice(key);
        self.open = true;
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
    ///
    /// A replaced key keeps its access frequency, as Redis keeps it when a
    /// value is overwritten, so rewriting a hot key does not make it look
    /// new to the LFU policies. Callers that mean a new key (`COPY ...
    /// REPLACE`, `RENAME`, `RESTORE ... REPLACE`) remove the old one first.
    pub fn insert(&mut self, key: &[u8], mut entry: Entry) -> Option<Entry> {
        self.settle();
        self.used += charge(key.len(), &entry);
        let new_deadline = entry.expire_at_ms;
        let old = match self.map.get_mut(key) {
            Some(slot) => {
                entry.lfu_count = slot.lfu_count;
                entry.lfu_minutes = slot.lfu_minutes;
                Some(std::mem::replace(slot, entry))
            }
            None => {
                self.map.insert(key.into(), entry);
                None
            }
        };
        if let Some(old) = &old {
            self.used -= charge(key.len(), old).min(self.used);
        }
        self.reindex(key, old.as_ref().and_then(|e| e.expire_at_ms), new_deadline);
        old
    }

    /// Remove `key`; returns its entry if it existed (expired or not).
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        self.settle();
        let old = self.map.remove(key)?;
        self.used -= charge(key.len(), &old).min(self.used);
        self.reindex(key, old.expire_at_ms, None);
        Some(old)
    }

    /// Set or clear the deadline of an existing key; false when the key does not exist.
    pub fn set_expire(&mut self, key: &[u8], at_ms: Option<i64>) -> bool {
        self.settle();
        let Some(entry) = self.map.get_mut(key) else { return false };
        let before = charge(key.len(), entry);
        let was = std::mem::replace(&mut entry.expire_at_ms, at_ms);
        self.used = (self.used + charge(key.len(), entry)).saturating_sub(before);
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
        self.open = false;
        self.used = 0;
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

    /// Up to `samples` keys of this database that `policy` may evict, each
    /// with its score (higher: evict sooner), added to `out`; nothing when the
    /// policy finds nothing here (no keys, or no keys with a TTL for the
    /// volatile policies).
    ///
    /// Samples are a run of consecutive keys from a random place in the
    /// table's order, which is itself unrelated to the keys, so a run is as
    /// good a sample as scattered picks and costs one walk instead of several.
    /// `volatile-ttl` samples the soonest deadlines, which the index knows.
    pub fn eviction_samples(&mut self, policy: Policy, samples: usize, now_ms: i64, out: &mut Vec<(u64, Box<[u8]>)>) {
        self.settle();
        let samples = samples.max(1);
        if policy == Policy::VolatileTtl {
            for (at, key) in self.deadlines.iter().take(samples) {
                out.push((u64::MAX - u64::try_from(*at).unwrap_or(0), key.clone()));
            }
            return;
        }
        let pool = if policy.volatile() { self.deadlines.len() } else { self.map.len() };
        if pool == 0 {
            return;
        }
        let skip = usize::try_from(self.next_random() % pool as u64).unwrap_or(0);
        let now_s = seconds(now_ms);
        let picked: Vec<(&[u8], &Entry)> = if policy.volatile() {
            self.deadlines
                .iter()
                .skip(skip)
                .take(samples)
                .filter_map(|(_, k)| self.map.get_key_value(k).map(|(k, e)| (&k[..], e)))
                .collect()
        } else {
            self.map.iter().skip(skip).take(samples).map(|(k, e)| (&k[..], e)).collect()
        };
        let mut x = self.rng;
        for (key, entry) in picked {
            let score = match policy {
                Policy::AllkeysLru | Policy::VolatileLru => u64::from(now_s.saturating_sub(entry.touched_s)),
                Policy::AllkeysLfu | Policy::VolatileLfu => {
                    u64::from(u8::MAX - lfu::decayed(entry, now_ms, &self.tuning))
                }
                _ => {
                    x = x.rotate_left(17).wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
                    x
                }
            };
            out.push((score, Box::from(key)));
        }
    }

    /// The `n`th key in the map's order if it is live (RANDOMKEY); an
    /// expired key found there is removed and `None` returned, so the caller
    /// picks again.
    pub fn nth_live_key(&mut self, n: usize, now_ms: i64) -> Option<Box<[u8]>> {
        self.settle();
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
    fn lfu_fields_fit_in_the_entry_padding() {
        // Value (32) + deadline (16) + access time, flags and LFU counter (8).
        assert!(std::mem::size_of::<Entry>() <= 56, "{}", std::mem::size_of::<Entry>());
    }

    #[test]
    fn values_changed_in_place_are_recounted() {
        let mut db = Db::default();
        db.insert(b"k", Entry::new(Value::Str(StrValue::Raw(Vec::new()))));
        let empty = db.used_memory();
        if let Some(Entry { value: Value::Str(StrValue::Raw(bytes)), .. }) = db.get_mut(b"k", 0) {
            bytes.reserve_exact(4096);
        }
        assert!(db.used_memory() >= empty + 4096);
        db.remove(b"k");
        assert_eq!(db.used_memory(), 0);
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
