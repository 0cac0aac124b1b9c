//! Keeping the data under `maxmemory`: the eviction policies and the loop
//! that frees memory before a command runs.
//!
//! Like Redis, kvik does not keep keys ordered by age or frequency (that
//! would cost memory and work on every access); it samples. Each round looks
//! at a few shards, asks each database there for its best candidate among
//! `maxmemory-samples` sampled keys, and evicts the best of those. The
//! result approximates true LRU/LFU as Redis's sampling does, and the cost
//! is only paid while the server is over its limit.

use std::sync::atomic::Ordering;

use super::{now_ms, Keyspace};

/// A `maxmemory-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Least recently used among keys with a TTL.
    VolatileLru,
    /// Least frequently used among keys with a TTL.
    VolatileLfu,
    /// Any key with a TTL.
    VolatileRandom,
    /// The key with the soonest deadline.
    VolatileTtl,
    /// Least recently used among all keys.
    AllkeysLru,
    /// Least frequently used among all keys.
    AllkeysLfu,
    /// Any key.
    AllkeysRandom,
    /// Evict nothing; refuse commands that may add data.
    NoEviction,
}

/// Eviction policies `maxmemory-policy` accepts, in Redis's order.
pub const MAXMEMORY_POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

impl Policy {
    /// Every policy, in the order of [`MAXMEMORY_POLICIES`].
    const ALL: [Policy; 8] = [
        Policy::VolatileLru,
        Policy::VolatileLfu,
        Policy::VolatileRandom,
        Policy::VolatileTtl,
        Policy::AllkeysLru,
        Policy::AllkeysLfu,
        Policy::AllkeysRandom,
        Policy::NoEviction,
    ];

    /// The policy named `name` (a canonical `maxmemory-policy` value).
    pub fn from_name(name: &str) -> Policy {
        MAXMEMORY_POLICIES
            .iter()
            .position(|p| *p == name)
            .and_then(|i| Self::ALL.get(i).copied())
            .unwrap_or(Policy::NoEviction)
    }

    /// The policy's index, for storing it in an atomic.
    pub fn index(self) -> u8 {
        Self::ALL.iter().position(|p| *p == self).map_or(7, |i| i as u8)
    }

    /// The policy stored as `index`.
    pub fn from_index(index: u8) -> Policy {
        Self::ALL.get(usize::from(index)).copied().unwrap_or(Policy::NoEviction)
    }

    /// Whether only keys with a TTL may be evicted.
    pub fn volatile(self) -> bool {
        matches!(self, Policy::VolatileLru | Policy::VolatileLfu | Policy::VolatileRandom | Policy::VolatileTtl)
    }

    /// Whether the policy ranks keys by access frequency (which makes
    /// `OBJECT FREQ` answer and `OBJECT IDLETIME` refuse, as in Redis).
    pub fn lfu(self) -> bool {
        matches!(self, Policy::VolatileLfu | Policy::AllkeysLfu)
    }
}

/// Shards sampled in each eviction round: enough that a round sees a fair
/// number of keys, few enough that it is cheap.
const PROBE_SHARDS: usize = 4;

/// Candidates kept between rounds (Redis's eviction pool size).
pub const POOL_SIZE: usize = 16;

/// A key that may be evicted: its score (higher: evict sooner), where it lives, its name.
#[derive(Debug)]
pub struct Candidate {
    score: u64,
    shard: usize,
    db: usize,
    key: Box<[u8]>,
}

/// The best candidates seen so far, best last, as Redis's eviction pool:
/// each round adds its samples and evicts the best kept, so a key is
/// compared with many more than one round's samples.
#[derive(Debug, Default)]
pub struct Pool {
    best: Vec<Candidate>,
    /// The memory estimate when the last search found nothing to evict.
    failed_at: Option<usize>,
}

impl Pool {
    /// Add a candidate, keeping the [`POOL_SIZE`] best (and each key once).
    fn offer(&mut self, candidate: Candidate) {
        if let Some(at) =
            self.best.iter().position(|c| c.shard == candidate.shard && c.db == candidate.db && c.key == candidate.key)
        {
            self.best.remove(at);
        }
        if self.best.len() >= POOL_SIZE && self.best.first().is_some_and(|worst| worst.score >= candidate.score) {
            return;
        }
        let at = self.best.partition_point(|c| c.score <= candidate.score);
        self.best.insert(at, candidate);
        if self.best.len() > POOL_SIZE {
            self.best.remove(0);
        }
    }
}

impl Keyspace {
    /// Evict keys by `policy` until the memory estimate is at most `limit`.
    /// False when that is not possible: the policy is `noeviction`, or
    /// nothing is left that the policy may evict.
    pub fn free_memory(&self, limit: usize, policy: Policy, samples: usize) -> bool {
        if self.used_memory() <= limit {
            return true;
        }
        // Inside an EXEC (a `CONFIG SET maxmemory` it runs) eviction waits
        // for the next command: the evictor's pool lock may be held by a
        // thread waiting for this transaction's shards.
        if policy == Policy::NoEviction || super::in_transaction() {
            return false;
        }
        // One evicting client at a time: concurrent evictors would only
        // evict more than needed and fight over the same candidates.
        let mut pool = self.evict_pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool.1 != Some(policy) {
            // Scores of another policy mean nothing under this one.
            pool.0.best.clear();
            pool.0.failed_at = None;
            pool.1 = Some(policy);
        }
        // Under a volatile policy with no key left that has a TTL, every
        // command would otherwise search all shards again; the data has not
        // changed as long as the estimate has not.
        if pool.0.failed_at == Some(self.used_memory()) {
            return false;
        }
        while self.used_memory() > limit {
            if !self.evict_one(&mut pool.0, policy, samples) {
                pool.0.failed_at = Some(self.used_memory());
                return false;
            }
        }
        pool.0.failed_at = None;
        true
    }

    /// Sample a few shards into `pool`, then evict its best candidate that
    /// still qualifies; false when no shard has anything to evict.
    fn evict_one(&self, pool: &mut Pool, policy: Policy, samples: usize) -> bool {
        let shards = self.shard_count();
        let start = self.evict_cursor.fetch_add(PROBE_SHARDS, Ordering::Relaxed);
        let now = now_ms();
        let mut probed = 0;
        let mut found = Vec::new();
        for step in 0..shards {
            let index = start.wrapping_add(step) % shards;
            let mut shard = self.lock(index);
            let mut any = false;
            for (db_index, db) in shard.dbs().iter_mut().enumerate() {
                db.eviction_samples(policy, samples, now, &mut found);
                any |= !found.is_empty();
                for (score, key) in found.drain(..) {
                    pool.offer(Candidate { score, shard: index, db: db_index, key });
                }
            }
            drop(shard);
            if any {
                probed += 1;
                if probed >= PROBE_SHARDS {
                    break;
                }
            }
        }
        while let Some(candidate) = pool.best.pop() {
            let mut shard = self.lock(candidate.shard);
            let db = shard.db(candidate.db);
            // Another client may have removed the key, or its TTL, since it was sampled.
            let eligible =
                db.inspect(&candidate.key, now).is_some_and(|e| !policy.volatile() || e.deadline().is_some());
            if eligible && db.remove(&candidate.key).is_some() {
                super::events::record_removal(
                    super::events::ServerEvent::Evicted,
                    candidate.db,
                    &candidate.key,
                    Some(&self.changes),
                );
                self.evicted.fetch_add(1, Ordering::Relaxed);
                return true;
            }
        }
        false
    }

    /// Keys evicted so far (`INFO stats`' `evicted_keys`).
    pub fn evicted_keys(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(ks: &Keyspace, n: usize, ttl_every: usize) {
        for i in 0..n {
            let key = format!("key:{i}");
            let expire = (ttl_every > 0 && i % ttl_every == 0).then_some(now_ms() + 1_000_000 + i as i64);
            ks.lock_key(key.as_bytes()).db(0).set_string(key.as_bytes(), &[b'x'; 100], expire);
        }
    }

    #[test]
    fn policies_round_trip_through_names_and_indexes() {
        for (i, name) in MAXMEMORY_POLICIES.iter().enumerate() {
            let p = Policy::from_name(name);
            assert_eq!(usize::from(p.index()), i);
            assert_eq!(Policy::from_index(p.index()), p);
        }
        assert!(Policy::from_name("allkeys-lfu").lfu());
        assert!(Policy::from_name("volatile-ttl").volatile());
    }

    #[test]
    fn eviction_brings_memory_under_the_limit() {
        let ks = Keyspace::new(16, 2);
        fill(&ks, 1000, 0);
        let used = ks.used_memory();
        assert!(used > 1000 * 100);
        assert!(!ks.free_memory(used / 2, Policy::NoEviction, 5));
        assert!(ks.free_memory(used / 2, Policy::AllkeysRandom, 5));
        assert!(ks.used_memory() <= used / 2);
        assert!(ks.evicted_keys() >= 400);
    }

    #[test]
    fn the_pool_keeps_the_best_candidates_once_each() {
        let mut pool = Pool::default();
        for i in 0..40u64 {
            pool.offer(Candidate { score: i % 20, shard: 0, db: 0, key: format!("k{}", i % 20).into_bytes().into() });
        }
        assert_eq!(pool.best.len(), POOL_SIZE);
        assert_eq!(pool.best.last().map(|c| c.score), Some(19));
        assert_eq!(pool.best.first().map(|c| c.score), Some(4));
    }

    #[test]
    fn volatile_ttl_evicts_the_soonest_deadlines() {
        let ks = Keyspace::new(16, 1);
        fill(&ks, 200, 1);
        let used = ks.used_memory();
        assert!(ks.free_memory(used / 2, Policy::VolatileTtl, 5));
        let survivors: Vec<usize> = (0..200)
            .filter(|i| {
                let key = format!("key:{i}");
                ks.lock_key(key.as_bytes()).db(0).contains(key.as_bytes(), now_ms())
            })
            .collect();
        assert!(survivors.len() < 110);
        assert!(survivors.iter().all(|&i| i >= 50), "soonest deadlines go first: {survivors:?}");
    }

    #[test]
    fn volatile_policies_only_take_keys_with_a_ttl() {
        let ks = Keyspace::new(16, 1);
        fill(&ks, 400, 4);
        let used = ks.used_memory();
        assert!(!ks.free_memory(used / 2, Policy::VolatileLru, 5), "only a quarter of the keys may go");
        let left: usize = ks.lock_all().shards().into_iter().map(|s| s.db(0).len()).sum();
        assert_eq!(left, 300);
        assert_eq!(ks.evicted_keys(), 100);
    }
}
