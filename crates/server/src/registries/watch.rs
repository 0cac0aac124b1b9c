//! `WATCH`: which clients watch which keys, and the flag a change raises.
//!
//! A client's watches share one *dirty* flag. Every change to a key goes
//! through [`crate::effects::changes`], which asks the [`WatchRegistry`] to raise the
//! flags of the clients watching it; `EXEC` fails when its flag is up.
//! While nobody watches anything the registry costs a change one relaxed
//! atomic load.
//!
//! Expiry does not go through `changes` (a lazily or actively expired key
//! is simply gone), so, as in Redis 7.0, the rule for it is checked at
//! `EXEC`: a key that existed when it was watched and whose deadline has
//! passed since fails the transaction, whether or not it was removed yet. A
//! key already expired when watched counts as missing, and its removal is
//! no change.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::keyspace::{key_slot, Db, MultiLock};

/// Most keys one client may watch; a bound on what a client can make the
/// server remember.
pub const MAX_WATCHED_KEYS: usize = 1 << 20;

/// One client's watch on one key, as the registry keeps it.
#[derive(Debug)]
struct Watcher {
    db: usize,
    client: u64,
    dirty: Arc<AtomicBool>,
    /// Whether the key existed (and had not expired) when watched.
    existed: bool,
}

/// Number of parts the registry is split into by key, so that writes on
/// different keys from different threads rarely meet on one lock.
const PARTS: usize = 64;

/// Watched keys and their watchers.
type Part = HashMap<Box<[u8]>, Vec<Watcher>>;

/// Every watched key of every client.
#[derive(Debug)]
pub struct WatchRegistry {
    /// Number of watches registered; zero lets changes skip the map.
    count: AtomicUsize,
    parts: Box<[Mutex<Part>]>,
}

impl Default for WatchRegistry {
    fn default() -> Self {
        WatchRegistry { count: AtomicUsize::new(0), parts: (0..PARTS).map(|_| Mutex::default()).collect() }
    }
}

impl WatchRegistry {
    /// The part holding `key`.
    fn map(&self, key: &[u8]) -> MutexGuard<'_, Part> {
        let part = usize::from(key_slot(key)) % PARTS;
        self.parts[part].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every part, one after another.
    fn each_part(&self, mut f: impl FnMut(&Part)) {
        for part in &self.parts[..] {
            f(&part.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// Whether anybody watches anything.
    #[inline]
    pub fn idle(&self) -> bool {
        self.count.load(Ordering::Relaxed) == 0
    }

    /// `key` of `db` changed: raise the flag of every client watching it.
    /// Called with the key's shard locked.
    pub fn touch(&self, db: usize, key: &[u8]) {
        if self.idle() {
            return;
        }
        if let Some(watchers) = self.map(key).get(key) {
            watchers.iter().filter(|w| w.db == db).for_each(|w| w.dirty.store(true, Ordering::Relaxed));
        }
    }

    /// Database `db` (every database when `None`) was emptied: raise the
    /// flags of the watches on keys that existed. Redis counts only keys
    /// the flush removed; a watched key that existed when watched and was
    /// not changed since still exists, or has expired, which fails `EXEC`
    /// anyway, so the registry needs no look at the data.
    pub fn flushed(&self, db: Option<usize>) {
        if self.idle() {
            return;
        }
        self.each_part(|part| {
            for w in part.values().flatten().filter(|w| w.existed && db.is_none_or(|d| d == w.db)) {
                w.dirty.store(true, Ordering::Relaxed);
            }
        });
    }

    /// Databases `a` and `b` are about to trade contents; `lock` holds
    /// every shard. A watched key is touched when it existed in its
    /// database, or exists (unexpired) in the one taking its place.
    pub fn swapping(&self, a: usize, b: usize, lock: &mut MultiLock<'_, '_>, keyspace: &crate::keyspace::Keyspace) {
        if self.idle() || a == b {
            return;
        }
        let now = crate::keyspace::now_ms();
        self.each_part(|part| {
            for (key, watchers) in part {
                for w in watchers.iter().filter(|w| w.db == a || w.db == b) {
                    let other = if w.db == a { b } else { a };
                    if w.existed || live(lock.shard_for(keyspace, key).db(other), key, now) {
                        w.dirty.store(true, Ordering::Relaxed);
                    }
                }
            }
        });
    }

    fn add(&self, key: &[u8], watcher: Watcher) {
        self.map(key).entry(key.into()).or_default().push(watcher);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn remove(&self, client: u64, keys: &[WatchedKey]) {
        for k in keys {
            let mut map = self.map(&k.key);
            if let Some(watchers) = map.get_mut(&*k.key) {
                let before = watchers.len();
                watchers.retain(|w| !(w.client == client && w.db == k.db));
                self.count.fetch_sub(before - watchers.len(), Ordering::Relaxed);
                if watchers.is_empty() {
                    map.remove(&*k.key);
                }
            }
        }
    }
}

/// Whether `key` exists in `db` and has not expired (looking does not
/// count as an access).
fn live(db: &mut Db, key: &[u8], now: i64) -> bool {
    db.inspect(key, now).is_some()
}

/// One key a client watches, as the client keeps it.
#[derive(Debug)]
struct WatchedKey {
    db: usize,
    key: Box<[u8]>,
    /// The key's deadline when it was watched, if it existed with one.
    deadline: Option<i64>,
}

/// The keys one client watches and the flag their changes raise.
///
/// Dropping it (the client is gone) removes its watches from the registry.
#[derive(Debug, Default)]
pub struct Watched {
    registry: Option<Arc<WatchRegistry>>,
    client: u64,
    keys: Vec<WatchedKey>,
    dirty: Arc<AtomicBool>,
}

impl Watched {
    /// Watch `key` of `db` for `client`; `shard` is the key's shard, locked,
    /// so no change can slip between looking at the key and registering.
    /// False when the client already watches too many keys.
    pub fn watch(
        &mut self,
        registry: &Arc<WatchRegistry>,
        client: u64,
        db: usize,
        key: &[u8],
        shard_db: &mut Db,
        now: i64,
    ) -> bool {
        if self.keys.iter().any(|k| k.db == db && *k.key == *key) {
            return true;
        }
        if self.keys.len() >= MAX_WATCHED_KEYS {
            return false;
        }
        let found = shard_db.inspect(key, now).map(|e| e.deadline());
        if self.registry.is_none() {
            self.registry = Some(Arc::clone(registry));
            self.client = client;
        }
        registry.add(key, Watcher { db, client, dirty: Arc::clone(&self.dirty), existed: found.is_some() });
        self.keys.push(WatchedKey { db, key: key.into(), deadline: found.flatten() });
        true
    }

    /// Whether `EXEC` must fail: a watched key changed, or one that existed
    /// when watched has expired by `now`.
    pub fn failed(&self, now: i64) -> bool {
        self.dirty.load(Ordering::Relaxed) || self.keys.iter().any(|k| k.deadline.is_some_and(|d| d <= now))
    }

    /// Forget every watch (`UNWATCH`, `EXEC`, `DISCARD`, `RESET`).
    pub fn clear(&mut self) {
        if let Some(registry) = &self.registry {
            registry.remove(self.client, &self.keys);
        }
        self.keys.clear();
        // A fresh flag: the old one may still be raised by a change that
        // looked the watchers up just before they were removed.
        self.dirty = Arc::new(AtomicBool::new(false));
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if !self.keys.is_empty() {
            self.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::Keyspace;

    fn watch(ks: &Keyspace, reg: &Arc<WatchRegistry>, w: &mut Watched, db: usize, key: &[u8]) {
        let mut shard = ks.lock_key(key);
        assert!(w.watch(reg, 7, db, key, shard.db(db), 1_000));
    }

    #[test]
    fn a_touch_raises_only_the_watchers_of_that_key_and_db() {
        let ks = Keyspace::new(4, 2);
        let reg = Arc::new(WatchRegistry::default());
        let mut w = Watched::default();
        watch(&ks, &reg, &mut w, 0, b"k");
        reg.touch(1, b"k");
        reg.touch(0, b"other");
        assert!(!w.failed(1_000));
        reg.touch(0, b"k");
        assert!(w.failed(1_000));
        w.clear();
        assert!(!w.failed(1_000));
        assert!(reg.idle(), "clearing unregisters");
    }

    #[test]
    fn flush_touches_keys_that_existed_and_expiry_fails_exec() {
        let ks = Keyspace::new(4, 2);
        let reg = Arc::new(WatchRegistry::default());
        ks.lock_key(b"live").db(0).set_string(b"live", b"v", Some(5_000));
        let mut w = Watched::default();
        watch(&ks, &reg, &mut w, 0, b"missing");
        reg.flushed(None);
        assert!(!w.failed(1_000), "a missing key is not flushed");
        watch(&ks, &reg, &mut w, 0, b"live");
        assert!(!w.failed(4_999));
        assert!(w.failed(5_000), "the deadline passed");
        reg.flushed(Some(1));
        assert!(!w.dirty.load(Ordering::Relaxed));
        reg.flushed(Some(0));
        assert!(w.dirty.load(Ordering::Relaxed));
    }

    #[test]
    fn dropping_a_client_unregisters_its_watches() {
        let ks = Keyspace::new(4, 2);
        let reg = Arc::new(WatchRegistry::default());
        {
            let mut w = Watched::default();
            watch(&ks, &reg, &mut w, 0, b"a");
            watch(&ks, &reg, &mut w, 0, b"a");
            watch(&ks, &reg, &mut w, 1, b"a");
            assert_eq!(reg.count.load(Ordering::Relaxed), 2);
        }
        assert!(reg.idle());
        reg.each_part(|part| assert!(part.is_empty()));
    }
}
