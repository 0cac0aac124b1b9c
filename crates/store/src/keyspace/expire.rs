//! The active expiry cycle: removes keys whose deadline passed even when no
//! client asks for them, so they stop using memory and leave `DBSIZE`.
//!
//! Like Redis's cycle it runs ten times a second with a bounded amount of
//! work: each tick walks the shards round-robin, removes at most
//! [`ActiveExpiry::KEYS_PER_SHARD`] due keys per shard lock, and stops after
//! [`ActiveExpiry::TICK_BUDGET`] so client commands never wait long on a
//! shard. Shards the tick did not reach (or left with due keys) are first in
//! line next tick. Lazy expiry on access covers the time in between.

use std::sync::Weak;
use std::thread;
use std::time::{Duration, Instant};

use super::{now_ms, Keyspace};

/// Round-robin state of the cycle.
#[derive(Debug, Default)]
pub struct ActiveExpiry {
    next_shard: usize,
}

impl ActiveExpiry {
    /// Time between ticks.
    pub const PERIOD: Duration = Duration::from_millis(100);
    /// Most keys removed per shard per visit (over all its databases).
    pub const KEYS_PER_SHARD: usize = 200;
    /// Most time one tick spends.
    pub const TICK_BUDGET: Duration = Duration::from_millis(25);

    /// One tick over `keyspace`; returns how many keys it removed.
    pub fn tick(&mut self, keyspace: &Keyspace) -> usize {
        self.tick_with(keyspace, || {})
    }

    /// [`ActiveExpiry::tick`], calling `after_shard` after each shard visit
    /// while the shard is still locked, to publish what the visit recorded
    /// (see [`super::events`]).
    pub fn tick_with(&mut self, keyspace: &Keyspace, mut after_shard: impl FnMut()) -> usize {
        let started = Instant::now();
        let shards = keyspace.shard_count();
        let mut removed = 0;
        let mut unfinished = None;
        for step in 0..shards {
            let index = (self.next_shard + step) % shards;
            let now = now_ms();
            let mut shard = keyspace.lock(index);
            let mut budget = Self::KEYS_PER_SHARD;
            for db in shard.dbs() {
                let n = db.remove_expired(now, budget);
                budget -= n;
                removed += n;
            }
            after_shard();
            drop(shard);
            if budget == 0 && unfinished.is_none() {
                unfinished = Some(index);
            }
            if started.elapsed() >= Self::TICK_BUDGET {
                self.next_shard = unfinished.unwrap_or((index + 1) % shards);
                keyspace.record_expire_cycle(elapsed_us(started), true);
                return removed;
            }
        }
        self.next_shard = unfinished.unwrap_or(self.next_shard);
        keyspace.record_expire_cycle(elapsed_us(started), false);
        removed
    }

    /// Run the cycle on a background thread for as long as `owner` lives,
    /// skipping the ticks for which `keyspace` gives none (expiry switched off),
    /// calling `after_shard` after each shard visit (see [`ActiveExpiry::tick_with`]).
    ///
    /// The thread holds only a weak reference, so dropping the server's
    /// state ends it at the next tick.
    pub fn spawn<T: Send + Sync + 'static>(
        owner: Weak<T>,
        keyspace: fn(&T) -> Option<&Keyspace>,
        after_shard: fn(&T),
    ) -> std::io::Result<thread::JoinHandle<()>> {
        thread::Builder::new().name("kvik-expire".into()).spawn(move || {
            let mut cycle = ActiveExpiry::default();
            loop {
                thread::sleep(Self::PERIOD);
                let Some(state) = owner.upgrade() else { return };
                if let Some(keyspace) = keyspace(&state) {
                    cycle.tick_with(keyspace, || after_shard(&state));
                }
            }
        })
    }
}

/// Microseconds since `started`.
fn elapsed_us(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_removes_due_keys_in_every_database_and_keeps_the_rest() {
        let ks = Keyspace::new(8, 2);
        for i in 0..100 {
            let key = format!("k{i}").into_bytes();
            let at = if i % 2 == 0 { Some(1) } else { None };
            ks.lock_key(&key).db(i % 2).set_string(&key, b"v", at);
            ks.lock_key(&key).db(1 - i % 2).set_string(&key, b"v", at);
        }
        let mut cycle = ActiveExpiry::default();
        let mut removed = 0;
        for _ in 0..10 {
            removed += cycle.tick(&ks);
        }
        assert_eq!(removed, 100);
        let left: usize = (0..ks.shard_count()).map(|i| ks.lock(i).dbs().iter().map(|d| d.len()).sum::<usize>()).sum();
        assert_eq!(left, 100);
    }
}
