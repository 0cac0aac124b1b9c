//! The keyspace: all databases, split into shards by hash slot, each shard
//! behind its own lock.
//!
//! A command on one key locks one shard. A command on several keys locks
//! every shard it touches, in ascending shard order, before it reads or
//! writes anything, so multi-key commands are atomic and two of them can
//! never deadlock. Commands on different shards run in parallel.

pub mod db;
pub mod expire;
pub mod glob;
pub mod scan;
pub mod slot;

use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

pub use db::{Db, Entry};
pub use slot::key_slot;

/// The keys of every database that fall in one shard's slots.
#[derive(Debug)]
pub struct Shard {
    dbs: Box<[Db]>,
}

impl Shard {
    fn new(databases: usize) -> Shard {
        Shard { dbs: (0..databases).map(|_| Db::default()).collect() }
    }

    /// Database `index` of this shard (callers validate the index at `SELECT`).
    pub fn db(&mut self, index: usize) -> &mut Db {
        let last = self.dbs.len() - 1;
        &mut self.dbs[index.min(last)]
    }

    /// Every database of this shard.
    pub fn dbs(&mut self) -> &mut [Db] {
        &mut self.dbs
    }

    /// Databases `a` and `b` of this shard, both mutable (`COPY ... DB`,
    /// `MOVE`); `None` when they are the same or out of range.
    pub fn two_dbs(&mut self, a: usize, b: usize) -> Option<(&mut Db, &mut Db)> {
        if a == b || a >= self.dbs.len() || b >= self.dbs.len() {
            return None;
        }
        if a < b {
            let (low, high) = self.dbs.split_at_mut(b);
            Some((&mut low[a], &mut high[0]))
        } else {
            let (low, high) = self.dbs.split_at_mut(a);
            Some((&mut high[0], &mut low[b]))
        }
    }
}

/// A lock held on one shard.
pub type ShardGuard<'a> = MutexGuard<'a, Shard>;

/// All databases of the server.
#[derive(Debug)]
pub struct Keyspace {
    shards: Box<[Mutex<Shard>]>,
    databases: usize,
}

impl Keyspace {
    /// A keyspace of `databases` databases split into `shards` shards.
    ///
    /// `shards` is rounded to a power of two between 1 and 16384, so a slot
    /// maps to a shard with a mask.
    pub fn new(shards: usize, databases: usize) -> Keyspace {
        let n = shards.clamp(1, usize::from(slot::SLOTS)).next_power_of_two();
        let databases = databases.max(1);
        Keyspace { shards: (0..n).map(|_| Mutex::new(Shard::new(databases))).collect(), databases }
    }

    /// Number of databases (`SELECT` accepts `0..databases`).
    pub fn databases(&self) -> usize {
        self.databases
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The shard that holds `key`.
    pub fn shard_of(&self, key: &[u8]) -> usize {
        usize::from(key_slot(key)) & (self.shards.len() - 1)
    }

    /// Lock shard `index`.
    pub fn lock(&self, index: usize) -> ShardGuard<'_> {
        // A panic while holding a shard lock poisons it; the data is still
        // consistent at the granularity of one command, so keep serving.
        self.shards[index].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Lock the shard of `key`.
    pub fn lock_key(&self, key: &[u8]) -> ShardGuard<'_> {
        self.lock(self.shard_of(key))
    }

    /// Lock every shard holding one of `keys`, in ascending order.
    ///
    /// Returns the guards and, for each key, the position of its shard's
    /// guard in that list.
    pub fn lock_keys<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> MultiLock<'_> {
        let mut order: Vec<usize> = keys.into_iter().map(|k| self.shard_of(k)).collect();
        order.sort_unstable();
        order.dedup();
        MultiLock { guards: order.iter().map(|&i| (i, self.lock(i))).collect() }
    }

    /// Lock every shard, in ascending order (FLUSHALL, KEYS, DBSIZE, …).
    pub fn lock_all(&self) -> MultiLock<'_> {
        MultiLock { guards: (0..self.shards.len()).map(|i| (i, self.lock(i))).collect() }
    }
}

/// Locks on several shards, taken in ascending order.
pub struct MultiLock<'a> {
    guards: Vec<(usize, ShardGuard<'a>)>,
}

impl<'a> MultiLock<'a> {
    /// The locked shard holding `key` (which must be among the keys locked).
    pub fn shard_for(&mut self, keyspace: &Keyspace, key: &[u8]) -> &mut Shard {
        let want = keyspace.shard_of(key);
        let at = self.guards.partition_point(|(i, _)| *i < want).min(self.guards.len() - 1);
        debug_assert_eq!(self.guards[at].0, want, "key's shard was not locked");
        &mut self.guards[at].1
    }

    /// Every locked shard, in shard order.
    pub fn shards(&mut self) -> Vec<&mut Shard> {
        self.guards.iter_mut().map(|(_, g)| &mut **g).collect()
    }
}

/// The current Unix time in milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{string::StrValue, Value};

    #[test]
    fn shard_count_is_a_power_of_two_and_hashtags_share_a_shard() {
        let ks = Keyspace::new(100, 16);
        assert_eq!(ks.shard_count(), 128);
        assert_eq!(ks.shard_of(b"{u1}.a"), ks.shard_of(b"{u1}.b"));
        assert_eq!(Keyspace::new(0, 0).shard_count(), 1);
        assert_eq!(Keyspace::new(0, 0).databases(), 1);
    }

    #[test]
    fn multi_locks_find_each_key_shard() {
        let ks = Keyspace::new(16, 16);
        let keys: [&[u8]; 4] = [b"a", b"b", b"c", b"a"];
        {
            let mut lock = ks.lock_keys(keys);
            for k in keys {
                lock.shard_for(&ks, k).db(0).insert(k, Entry::new(Value::Str(StrValue::from_bytes(k))));
            }
        }
        let total: usize = ks.lock_all().shards().into_iter().map(|s| s.db(0).len()).sum();
        assert_eq!(total, 3);
    }
}
