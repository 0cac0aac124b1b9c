//! The keyspace: all databases, split into shards by hash slot, each shard
//! behind its own lock.
//!
//! A command on one key locks one shard. A command on several keys locks
//! every shard it touches, in ascending shard order, before it reads or
//! writes anything, so multi-key commands are atomic and two of them can
//! never deadlock. Commands on different shards run in parallel.
//!
//! An `EXEC` runs several commands that must look like one: it first
//! *reserves* the shards they touch ([`Keyspace::reserve`]). A reserved
//! shard can still be locked by the thread running that transaction, one
//! command after another, while every other thread (clients, active expiry,
//! eviction) waits until the reservation ends. Nobody waits for a
//! reservation while holding a shard lock, and reservations are taken in
//! ascending shard order, so reservations cannot deadlock either.

pub mod db;
pub mod entry;
pub mod events;
pub mod evict;
pub mod expire;
pub mod glob;
pub mod hashing;
pub mod lfu;
pub mod lookahead;
pub mod lru;
pub mod ready;
pub mod scan;
mod shard_guards;
pub mod slot;
pub mod snapshot;
pub mod typed;

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::inline_list::InlineList;
use crate::per_thread;
pub use db::{Db, Entry, Meta};
pub use evict::Policy;
use lookahead::HintSlot;
use shard_guards::{ShardGuards, INLINE_GUARDS};
pub use slot::key_slot;

/// The keys of every database that fall in one shard's slots.
#[derive(Debug)]
pub struct Shard {
    dbs: Box<[Db]>,
    /// Sum of the databases' `counted` estimates.
    used: usize,
    /// Databases handed out since the estimate was last brought up to
    /// date; only these can have changed, so a command that used one
    /// database does not re-read all sixteen.
    touched: Touched,
    /// The transaction (client id) that reserved this shard while its
    /// `EXEC` runs; other threads wait until it is released.
    reserved_by: Option<u64>,
    /// Threads waiting for the reservation to end: the one who ends it
    /// wakes them only if there are any (a wake is a system call).
    waiters: usize,
}

/// The databases of a shard handed out since its estimate was last brought
/// up to date, kept inline: a bit each for the first 64, and one flag that
/// stands for every database once any of the rest is.
#[derive(Debug, Default, Clone, Copy)]
struct Touched {
    low: u64,
    all: bool,
}

impl Touched {
    const ALL: Touched = Touched { low: 0, all: true };

    fn add(&mut self, index: usize) {
        match u32::try_from(index).ok().and_then(|i| 1u64.checked_shl(i)) {
            Some(bit) => self.low |= bit,
            None => self.all = true,
        }
    }

    /// The marked databases' numbers, of `count` databases.
    fn indices(self, count: usize) -> impl Iterator<Item = usize> {
        let every = if self.all { 0..count } else { 0..0 };
        let mut bits = if self.all { 0 } else { self.low };
        every.chain(std::iter::from_fn(move || {
            let i = (bits != 0).then(|| bits.trailing_zeros() as usize)?;
            bits &= bits - 1;
            Some(i)
        }))
    }
}

impl Shard {
    /// Shard `index` of the keyspace, publishing its tables into `hints`.
    fn new(index: usize, databases: usize, ks: &KeyspaceShared<'_>) -> Shard {
        let seed = ks.seed ^ ((index as u64) << 32);
        Shard {
            dbs: (0..databases)
                .map(|i| {
                    let mut db = Db::with_tuning(Arc::clone(ks.tuning), seed.wrapping_mul(31).wrapping_add(i as u64));
                    db.report_to_waiters(i, Arc::clone(ks.blocked));
                    db.order_changes_by(Arc::clone(ks.changes));
                    db.publish_hints_to(HintSlot::new(ks.hints, i * ks.shards + index));
                    db
                })
                .collect(),
            used: 0,
            touched: Touched::default(),
            reserved_by: None,
            waiters: 0,
        }
    }

    /// Note that database `index` was handed out and may change.
    fn touch(&mut self, index: usize) {
        self.touched.add(index);
    }

    /// Memory estimate of this shard's keys, over all its databases.
    pub fn used_memory(&mut self) -> usize {
        let touched = std::mem::take(&mut self.touched);
        for i in touched.indices(self.dbs.len()) {
            let Some(db) = self.dbs.get_mut(i) else { continue };
            let now = db.used_memory();
            self.used = (self.used + now).saturating_sub(db.counted);
            db.counted = now;
        }
        self.used
    }

    /// Database `index` of this shard (callers validate the index at `SELECT`).
    pub fn db(&mut self, index: usize) -> &mut Db {
        let index = index.min(self.dbs.len() - 1);
        self.touch(index);
        &mut self.dbs[index]
    }

    /// Every database of this shard.
    pub fn dbs(&mut self) -> &mut [Db] {
        self.touched = Touched::ALL;
        &mut self.dbs
    }

    /// Trade the contents of databases `a` and `b` (`SWAPDB`); each
    /// database keeps the number it sits at, for the events and ready keys
    /// it reports.
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        if a < self.dbs.len() && b < self.dbs.len() {
            self.touch(a);
            self.touch(b);
            self.dbs.swap(a, b);
            self.dbs[a].set_index(a);
            self.dbs[b].set_index(b);
            if let Some((x, y)) = self.two_dbs(a, b) {
                x.swap_hint_slots(y);
            }
        }
    }

    /// Begin a background snapshot of every database of this shard that
    /// holds keys (see [`snapshot`]), adding each one's keys and keys with
    /// a deadline into `sizes` by number. Empty databases are left out and
    /// not even marked as handed out, so that the moment costs a look at
    /// each database's first line, not a recount of every one.
    pub fn begin_snapshot(&mut self, sizes: &mut [(usize, usize)]) {
        for (i, size) in sizes.iter_mut().enumerate().take(self.dbs.len()) {
            if self.dbs[i].is_empty() {
                continue;
            }
            self.touch(i);
            let db = &mut self.dbs[i];
            size.0 += db.len();
            size.1 += db.expiring();
            db.begin_snapshot(i);
        }
    }

    /// The database of this shard that was number `number` when the
    /// running snapshot began (`SWAPDB` may have moved it since).
    pub fn snapshot_db(&mut self, number: usize) -> Option<&mut Db> {
        let index = self.dbs.iter().position(|d| d.snapshot_number() == Some(number))?;
        self.touch(index);
        Some(&mut self.dbs[index])
    }

    /// Databases `a` and `b` of this shard, both mutable (`COPY ... DB`,
    /// `MOVE`); `None` when they are the same or out of range.
    pub fn two_dbs(&mut self, a: usize, b: usize) -> Option<(&mut Db, &mut Db)> {
        if a == b || a >= self.dbs.len() || b >= self.dbs.len() {
            return None;
        }
        self.touch(a);
        self.touch(b);
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
///
/// Releasing it publishes the shard's memory estimate into the keyspace's
/// total, so the total is exact after every command without a lock of its
/// own, and reading it (before every command, when `maxmemory` is set) is
/// one atomic load.
pub struct ShardGuard<'a> {
    guard: MutexGuard<'a, Shard>,
    published: &'a AtomicUsize,
    total: &'a AtomicUsize,
}

impl Deref for ShardGuard<'_> {
    type Target = Shard;
    fn deref(&self) -> &Shard {
        &self.guard
    }
}

impl DerefMut for ShardGuard<'_> {
    fn deref_mut(&mut self) -> &mut Shard {
        &mut self.guard
    }
}

impl Drop for ShardGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        let now = self.guard.used_memory();
        // Only a holder of this shard's lock writes its published figure, so
        // a plain load and store suffice, and a read-only command (most of
        // them) writes nothing.
        let before = self.published.load(Ordering::Relaxed);
        if now != before {
            self.published.store(now, Ordering::Relaxed);
            // Wrapping arithmetic adds a negative change correctly.
            self.total.fetch_add(now.wrapping_sub(before), Ordering::Relaxed);
        }
    }
}

/// All databases of the server.
#[derive(Debug)]
pub struct Keyspace {
    shards: Box<[Mutex<Shard>]>,
    /// Each database's table address in each shard (`db * shards + shard`:
    /// database 0's, the busiest, are adjacent), for the lookahead's
    /// lock-free prefetches.
    hints: Arc<[lookahead::TableHint]>,
    /// Where each database starts ([`Db::head_addr`]), in the order of
    /// `hints`; fixed once the shards are built.
    db_heads: Box<[usize]>,
    /// Signalled when a shard's reservation ends.
    released: Box<[Condvar]>,
    /// Each shard's memory estimate as last published by its guard.
    published: Box<[AtomicUsize]>,
    /// Sum of `published`.
    used: AtomicUsize,
    /// Keys evicted for `maxmemory`.
    evicted: AtomicU64,
    /// Time the active expiry cycle has run, in microseconds
    /// (`expire_cycle_cpu_milliseconds`).
    expire_cycle_us: AtomicU64,
    /// Expiry ticks that stopped at their time budget with expired keys
    /// left (`expired_time_cap_reached_count`).
    expire_time_capped: AtomicU64,
    /// Where the next eviction round starts looking, so rounds spread over shards.
    evict_cursor: AtomicUsize,
    /// Eviction candidates kept between rounds, and the policy that scored them.
    evict_pool: Mutex<(evict::Pool, Option<Policy>)>,
    /// LFU parameters every database reads.
    tuning: Arc<lfu::Tuning>,
    /// Number of blocked clients (owned by the server's blocked-client registry): while it is
    /// non-zero, databases report keys they create and delete.
    blocked: Arc<AtomicUsize>,
    /// The order of changes ([`Keyspace::next_change`]).
    changes: Arc<AtomicU64>,
    databases: usize,
}

/// What every shard of a new keyspace is built from.
struct KeyspaceShared<'a> {
    shards: usize,
    tuning: &'a Arc<lfu::Tuning>,
    seed: u64,
    blocked: &'a Arc<AtomicUsize>,
    changes: &'a Arc<AtomicU64>,
    hints: &'a Arc<[lookahead::TableHint]>,
}

impl Keyspace {
    /// A keyspace of `databases` databases split into `shards` shards.
    ///
    /// `shards` is rounded to a power of two between 1 and 16384, so a slot
    /// maps to a shard with a mask.
    pub fn new(shards: usize, databases: usize) -> Keyspace {
        let n = shards.clamp(1, usize::from(slot::SLOTS)).next_power_of_two();
        let databases = databases.max(1);
        let tuning = Arc::new(lfu::Tuning::default());
        let seed = now_ms().unsigned_abs();
        let blocked = Arc::new(AtomicUsize::new(0));
        let changes = Arc::new(AtomicU64::new(0));
        let hints: Arc<[lookahead::TableHint]> = (0..n * databases).map(|_| lookahead::TableHint::default()).collect();
        let shared =
            KeyspaceShared { shards: n, tuning: &tuning, seed, blocked: &blocked, changes: &changes, hints: &hints };
        let shards: Box<[Mutex<Shard>]> = (0..n).map(|i| Mutex::new(Shard::new(i, databases, &shared))).collect();
        let db_heads = (0..databases)
            .flat_map(|db| {
                shards.iter().map(move |shard| {
                    let shard = shard.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    shard.dbs[db].head_addr()
                })
            })
            .collect();
        Keyspace {
            shards,
            hints: Arc::clone(&hints),
            db_heads,
            blocked,
            changes,
            released: (0..n).map(|_| Condvar::new()).collect(),
            published: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            used: AtomicUsize::new(0),
            evicted: AtomicU64::new(0),
            expire_cycle_us: AtomicU64::new(0),
            expire_time_capped: AtomicU64::new(0),
            evict_cursor: AtomicUsize::new(0),
            evict_pool: Mutex::new((evict::Pool::default(), None)),
            tuning,
            databases,
        }
    }

    /// Memory estimate of all keys, in bytes (`INFO memory`'s `used_memory`
    /// and what `maxmemory` is checked against).
    pub fn used_memory(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The count of blocked clients the databases watch (owned by the
    /// server's blocked-client registry; keys they may want are noted in
    /// [`ready`]).
    pub fn blocked_gate(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.blocked)
    }

    /// The LFU parameters (`lfu-log-factor`, `lfu-decay-time`).
    pub fn lfu_tuning(&self) -> &lfu::Tuning {
        &self.tuning
    }

    /// Read lookups that found their key and that did not, over every
    /// database (`INFO stats`' `keyspace_hits` and `keyspace_misses`).
    pub fn lookup_counts(&self) -> (u64, u64) {
        (0..self.shard_count())
            .flat_map(|i| self.lock(i).dbs().iter().map(Db::lookup_counts).collect::<Vec<_>>())
            .fold((0, 0), |(h, m), (dh, dm)| (h + dh, m + dm))
    }

    /// Forget the lookup counts (`CONFIG RESETSTAT`).
    pub fn reset_lookup_counts(&self) {
        for i in 0..self.shard_count() {
            self.lock(i).dbs().iter_mut().for_each(Db::reset_lookup_counts);
        }
    }

    /// Count one tick of the active expiry cycle that ran `us`
    /// microseconds, `capped` when it stopped at its time budget.
    pub fn record_expire_cycle(&self, us: u64, capped: bool) {
        self.expire_cycle_us.fetch_add(us, Ordering::Relaxed);
        if capped {
            self.expire_time_capped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Milliseconds the active expiry cycle has run, and how many of its
    /// ticks stopped at the time budget.
    pub fn expire_cycle_stats(&self) -> (u64, u64) {
        (self.expire_cycle_us.load(Ordering::Relaxed) / 1000, self.expire_time_capped.load(Ordering::Relaxed))
    }

    /// Number of databases (`SELECT` accepts `0..databases`).
    pub fn databases(&self) -> usize {
        self.databases
    }

    /// The next place in the keyspace's order of changes (1, 2, …).
    ///
    /// A change takes its place while it holds the shard locks of the keys
    /// it changes, so two changes of one key are numbered in the order they
    /// were made, and a multi-key change (holding all its shards at once)
    /// gets one place, before or after each other change of its keys.
    /// Sorted by place, the changes replay to the keyspace as it is: what
    /// the append-only file relies on. Keys the keyspace removes by itself
    /// (expired on lookup, evicted) take theirs in the same order (see
    /// [`events::record_removal`]).
    pub fn next_change(&self) -> u64 {
        self.changes.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The last place handed out by [`Keyspace::next_change`] (0: none yet).
    pub fn changes_taken(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The shard that holds `key`.
    pub fn shard_of(&self, key: &[u8]) -> usize {
        usize::from(key_slot(key)) & (self.shards.len() - 1)
    }

    /// Lock shard `index`, waiting while another thread's transaction has
    /// it reserved. The caller must hold no other shard lock (several
    /// shards are locked through [`Keyspace::lock_keys`] or
    /// [`Keyspace::lock_all`]).
    pub fn lock(&self, index: usize) -> ShardGuard<'_> {
        let mut guard = self.raw_lock(index);
        // Outside transactions this is the whole cost: one field of the
        // shard just locked.
        while guard.reserved_by.is_some_and(|owner| !is_current_transaction(owner)) {
            guard.waiters += 1;
            guard = self.released[index].wait(guard).unwrap_or_else(|poisoned| poisoned.into_inner());
            guard.waiters -= 1;
        }
        ShardGuard { guard, published: &self.published[index], total: &self.used }
    }

    /// Lock shard `index` unless another thread's transaction has it reserved.
    fn lock_unreserved(&self, index: usize) -> Option<ShardGuard<'_>> {
        let guard = self.raw_lock(index);
        if guard.reserved_by.is_some_and(|owner| !is_current_transaction(owner)) {
            return None;
        }
        Some(ShardGuard { guard, published: &self.published[index], total: &self.used })
    }

    fn raw_lock(&self, index: usize) -> MutexGuard<'_, Shard> {
        // A panic while holding a shard lock poisons it; the data is still
        // consistent at the granularity of one command, so keep serving.
        self.shards[index].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Lock the shard of `key`.
    pub fn lock_key(&self, key: &[u8]) -> ShardGuard<'_> {
        self.lock(self.shard_of(key))
    }

    /// Lock every shard holding one of `keys`, in ascending order, for a
    /// command on database `db`.
    ///
    /// The lock remembers which of its guards each key's shard is under, so
    /// [`MultiLock::shard_for`] asked for the same keys in the same order
    /// neither hashes nor searches for any of them again.
    ///
    /// In a keyspace larger than the CPU's cache (see
    /// [`lookahead::min_keyspace_bytes`]) the lock also starts loading what
    /// the command's lookups of its keys will read: each key's table lines
    /// before the shards are locked, each key's entry once they are. The
    /// frame scan (the server's read-ahead) prefetches only a command's first
    /// key; without this an MSET of ten keys waits on some twenty misses in
    /// a row, where with it their loads overlap.
    pub fn lock_keys<'k>(&self, db: usize, keys: impl IntoIterator<Item = &'k [u8]>) -> MultiLock<'_, 'k> {
        let ahead = self.worth_prefetching(db, lookahead::min_keyspace_bytes());
        self.lock_keys_ahead(db, keys, ahead)
    }

    /// Whether lookups in database `db` are worth prefetching: it exists,
    /// and the keyspace has outgrown `min_bytes` (the cache).
    fn worth_prefetching(&self, db: usize, min_bytes: usize) -> bool {
        db < self.databases && self.used_memory() >= min_bytes
    }

    /// [`Keyspace::lock_keys`], prefetching when `ahead`.
    fn lock_keys_ahead<'k>(
        &self,
        db: usize,
        keys: impl IntoIterator<Item = &'k [u8]>,
        ahead: bool,
    ) -> MultiLock<'_, 'k> {
        // Built in place: the lock holds some hundreds of bytes inline.
        let mut lock = MultiLock::new();
        // Each key's shard above the key's place in `lock.keys`, in one
        // number: sorted, these give the shards in locking order and each
        // key its guard.
        let mut by_shard: InlineList<u64, INLINE_GUARDS> = InlineList::new();
        for key in keys {
            let shard = self.shard_of(key);
            let mut known = KnownKey::of(key);
            if ahead {
                known.hash = db::table_hash(key);
                self.prefetch_lines(db, shard, known.hash);
            }
            let at = lock.keys.len() as u64;
            assert!(at <= u64::from(u32::MAX), "more keys than a lock can place");
            by_shard.push((shard as u64) << 32 | at);
            lock.keys.push(known);
        }
        by_shard.sort_unstable();
        for &packed in by_shard.iter() {
            let (shard, at) = ((packed >> 32) as usize, (packed & u64::from(u32::MAX)) as usize);
            if lock.order.last() != Some(&shard) {
                lock.order.push(shard);
            }
            if let Some(known) = lock.keys.get_mut(at) {
                known.guard = lock.order.len() - 1;
            }
        }
        self.take_shards(&mut lock);
        if ahead {
            lock.prefetch_entries(db);
        }
        lock
    }

    /// Lock every shard, in ascending order (FLUSHALL, KEYS, DBSIZE, …).
    pub fn lock_all(&self) -> MultiLock<'_, 'static> {
        let mut lock = MultiLock::new();
        (0..self.shards.len()).for_each(|i| lock.order.push(i));
        self.take_shards(&mut lock);
        lock
    }

    /// Lock the shards of `lock.order` (ascending). A shard reserved by
    /// another transaction is waited for with no lock held: everything
    /// taken so far is let go, and the whole set is tried again once it is
    /// free.
    fn take_shards<'a>(&'a self, lock: &mut MultiLock<'a, '_>) {
        loop {
            lock.guards.reset_for(lock.order.len());
            let mut blocked = None;
            for &i in lock.order.iter() {
                match self.lock_unreserved(i) {
                    Some(g) => lock.guards.push(g),
                    None => {
                        blocked = Some(i);
                        break;
                    }
                }
            }
            let Some(i) = blocked else { return };
            lock.guards.reset_for(0);
            drop(self.lock(i));
        }
    }

    /// Reserve shards for transaction `owner` (a client id) on this thread,
    /// until the returned reservation is dropped: `shards` (ascending), or
    /// every shard when `None`. Waits, holding no lock, for reservations of
    /// other transactions on those shards to end.
    pub fn reserve(&self, owner: u64, shards: Option<&[usize]>) -> Reservation<'_> {
        let shards: Vec<usize> = match shards {
            Some(list) => {
                let mut list: Vec<usize> = list.iter().copied().filter(|&i| i < self.shards.len()).collect();
                list.sort_unstable();
                list.dedup();
                list
            }
            None => (0..self.shards.len()).collect(),
        };
        per_thread::with(|t| t.transaction.set(Some(owner)));
        for &i in &shards {
            let mut guard = self.lock(i);
            guard.reserved_by = Some(owner);
        }
        Reservation { keyspace: self, owner, shards }
    }
}

impl Keyspace {
    /// The transaction (client id) that holds shard `index` reserved, if any.
    pub fn reserved_by(&self, index: usize) -> Option<u64> {
        if index >= self.shards.len() {
            return None;
        }
        self.raw_lock(index).reserved_by
    }

    /// Whether transaction `owner` already holds a reservation on this
    /// thread (a script run by `EXEC` runs inside the transaction's, which
    /// reserved every shard for it).
    pub fn reserving(&self, owner: u64) -> bool {
        is_current_transaction(owner)
    }
}

/// Shards reserved for the transaction running on this thread; dropping it
/// releases them and wakes whoever waits for them.
pub struct Reservation<'a> {
    keyspace: &'a Keyspace,
    owner: u64,
    shards: Vec<usize>,
}

impl Reservation<'_> {
    /// The reserved shards, ascending.
    pub fn shards(&self) -> &[usize] {
        &self.shards
    }

    /// Whether shard `index` is reserved.
    pub fn holds(&self, index: usize) -> bool {
        self.shards.binary_search(&index).is_ok()
    }

    /// Whether every shard is reserved (nothing can be missing any more).
    pub fn holds_all(&self) -> bool {
        self.shards.len() == self.keyspace.shards.len()
    }

    /// Add shard `index` to the reservation *without waiting*: false when
    /// another transaction holds it. Never waiting is what lets a script
    /// grow its reservation in any order without closing a circle of
    /// waits (see docs/scripting.md); the caller that gets false must let
    /// everything go before it waits.
    pub fn try_extend(&mut self, index: usize) -> bool {
        let Err(at) = self.shards.binary_search(&index) else { return true };
        if index >= self.keyspace.shards.len() {
            return true;
        }
        let mut guard = self.keyspace.raw_lock(index);
        if guard.reserved_by.is_some_and(|other| other != self.owner) {
            return false;
        }
        guard.reserved_by = Some(self.owner);
        self.shards.insert(at, index);
        true
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        for &i in &self.shards {
            let mut shard = self.keyspace.raw_lock(i);
            shard.reserved_by = None;
            let waited = shard.waiters > 0;
            drop(shard);
            if waited {
                self.keyspace.released[i].notify_all();
            }
        }
        per_thread::with(|t| t.transaction.set(None));
    }
}

/// Whether transaction `owner` is the one running on this thread.
fn is_current_transaction(owner: u64) -> bool {
    per_thread::with(|t| t.transaction.get()) == Some(owner)
}

/// Whether a transaction runs on this thread (its `EXEC` holds reservations).
pub fn in_transaction() -> bool {
    per_thread::with(|t| t.transaction.get()).is_some()
}

/// Locks on several shards, taken in ascending order.
pub struct MultiLock<'a, 'k> {
    /// The locked shards, ascending.
    order: InlineList<usize, INLINE_GUARDS>,
    /// Their guards, in the same order.
    guards: ShardGuards<'a>,
    /// The keys [`Keyspace::lock_keys`] was given, in its order.
    keys: InlineList<KnownKey, INLINE_GUARDS>,
    /// Which of `keys` the next [`MultiLock::shard_for`] is likely asked about.
    next: usize,
    /// The keys stay borrowed while the lock lives, so a slice at a
    /// remembered place still holds the bytes it had.
    _keys: PhantomData<&'k [u8]>,
}

/// A key whose guard is known: the slice is recognised by where it lies,
/// so nothing is copied or compared byte by byte.
#[derive(Debug, Clone, Copy, Default)]
struct KnownKey {
    addr: usize,
    len: usize,
    /// Where the guard of the key's shard is among the lock's guards.
    guard: usize,
    /// The key's table hash, when the lock prefetched for it.
    hash: u64,
}

impl KnownKey {
    /// `key`, its guard not known yet.
    fn of(key: &[u8]) -> KnownKey {
        KnownKey { addr: key.as_ptr() as usize, len: key.len(), guard: 0, hash: 0 }
    }

    /// Whether `key` is this very slice (then it has these bytes, and this guard).
    fn is(&self, key: &[u8]) -> bool {
        self.addr == key.as_ptr() as usize && self.len == key.len()
    }
}

/// A command asked a multi-key lock for a key whose shard it did not lock:
/// a bug in the command, stopped before it touches another shard's data.
#[cold]
#[inline(never)]
fn unlocked_key(key: &[u8]) -> ! {
    panic!("a command used key {:?}, whose shard it did not lock", String::from_utf8_lossy(key));
}

impl<'a> MultiLock<'a, '_> {
    /// No shard locked yet.
    fn new() -> Self {
        MultiLock {
            order: InlineList::new(),
            guards: ShardGuards::new(),
            keys: InlineList::new(),
            next: 0,
            _keys: PhantomData,
        }
    }

    /// The locked shard holding `key` (which must be among the keys locked).
    ///
    /// Commands ask for their keys in the order they locked them, in one
    /// pass or several (MSETNX checks every key, then sets every key), so
    /// the next remembered key is checked first, then the first one; any
    /// other key is hashed and its shard searched for.
    #[inline]
    pub fn shard_for(&mut self, keyspace: &Keyspace, key: &[u8]) -> &mut Shard {
        // A remembered key is one of the slices the lock was taken for, so
        // its guard is right by construction; any other key's shard is
        // checked, in every build: a command that used the nearest locked
        // shard for a key it did not lock would corrupt that shard's data,
        // where stopping it costs one comparison after the search.
        let at = match self.remembered_guard(key) {
            Some(at) => at,
            None => {
                let want = keyspace.shard_of(key);
                let at = self.order.partition_point(|&i| i < want).min(self.order.len().saturating_sub(1));
                if self.order.get(at) != Some(&want) {
                    unlocked_key(key);
                }
                at
            }
        };
        match self.guards.get_mut(at) {
            Some(guard) => guard,
            None => panic!("a multi-key lock holds no shard"),
        }
    }

    /// Where the guard for `key` is, if `key` is the next remembered key
    /// or the first one.
    #[inline]
    fn remembered_guard(&mut self, key: &[u8]) -> Option<usize> {
        let (at, guard) = [self.next, 0]
            .into_iter()
            .find_map(|at| self.keys.get(at).filter(|known| known.is(key)).map(|known| (at, known.guard)))?;
        self.next = at + 1;
        Some(guard)
    }

    /// Start loading each key's entry in database `db` (step 2 of
    /// [`lookahead`], with the shards locked).
    fn prefetch_entries(&mut self, db: usize) {
        for known in self.keys.iter() {
            if let Some(d) = self.guards.get_mut(known.guard).and_then(|g| g.dbs.get(db)) {
                d.prefetch_entry(known.hash);
            }
        }
    }

    /// Every locked shard, in shard order.
    pub fn shards(&mut self) -> Vec<&mut Shard> {
        self.guards.iter_mut().map(|g| &mut **g).collect()
    }
}

/// The current Unix time in milliseconds: while a command runs on this
/// thread, the time it started at.
///
/// As in Redis, one command sees one time: every key it creates gets the
/// same access time and every expiry check agrees, and a command touching
/// many keys (MSET) reads the clock once instead of once per key.
#[inline]
pub fn now_ms() -> i64 {
    per_thread::with(|t| t.command_time_ms.get()).unwrap_or_else(wall_clock_ms)
}

/// Until when (Unix milliseconds) keys that expire are not deleted: a
/// `CLIENT PAUSE` holds writes back, and deleting an expired key is one.
/// Meanwhile lookups report such keys missing, without removing them, as
/// Redis does. One per process, like the pause it follows.
static EXPIRY_PAUSED_UNTIL_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Hold back the deletion of expired keys until `until_ms` (0: no longer).
pub fn pause_expiry(until_ms: i64) {
    EXPIRY_PAUSED_UNTIL_MS.store(until_ms, std::sync::atomic::Ordering::Relaxed);
}

/// Set while the server is a replica: its master deletes keys that
/// expire and tells it to (`DEL` in the stream), so that both delete the
/// same keys at the same point of the stream; meanwhile the replica's
/// readers see them missing, as Redis's replica hides them.
static REPLICA_KEEPS_EXPIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Keep expired keys in place until told otherwise (see
/// [`REPLICA_KEEPS_EXPIRED`]).
pub fn keep_expired_keys(keep: bool) {
    REPLICA_KEEPS_EXPIRED.store(keep, std::sync::atomic::Ordering::Relaxed);
}

/// Whether expired keys are to stay in place at `now_ms`.
pub fn expiry_paused(now_ms: i64) -> bool {
    let until = EXPIRY_PAUSED_UNTIL_MS.load(std::sync::atomic::Ordering::Relaxed);
    REPLICA_KEEPS_EXPIRED.load(std::sync::atomic::Ordering::Relaxed) || until != 0 && now_ms < until
}

/// The wall clock in Unix milliseconds.
fn wall_clock_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Holds the thread's command time (see [`now_ms`]) for as long as it lives.
pub struct CommandClock(());

impl CommandClock {
    /// Fix the time for the command about to run on this thread.
    pub fn start() -> CommandClock {
        CommandClock::at(wall_clock_ms())
    }

    /// Fix the time for the command about to run on this thread at `ms`
    /// (Unix milliseconds), a time the caller read already.
    pub fn at(ms: i64) -> CommandClock {
        per_thread::with(|t| t.command_time_ms.set(Some(ms)));
        CommandClock(())
    }
}

/// While alive, keys on this thread do not expire: an append-only file
/// replays commands written when their keys were live, and a key whose
/// deadline has passed since must still be there for the commands that
/// follow it (a `PERSIST` that saved it, an `APPEND` to it), as Redis
/// replays. The keys past their deadline go once the load is done.
#[derive(Debug)]
pub struct Loading(());

impl Loading {
    /// Start replaying on this thread.
    pub fn start() -> Loading {
        per_thread::with(|t| t.loading.set(true));
        Loading(())
    }
}

impl Drop for Loading {
    fn drop(&mut self) {
        per_thread::with(|t| t.loading.set(false));
    }
}

/// Whether this thread replays an append-only file (see [`Loading`]).
#[inline]
pub fn loading() -> bool {
    per_thread::with(|t| t.loading.get())
}

impl Drop for CommandClock {
    fn drop(&mut self) {
        per_thread::with(|t| t.command_time_ms.set(None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::string::StrRef;
    use crate::types::Value;
    use hashing::key_hasher;
    use std::hash::BuildHasher;

    #[test]
    fn shard_count_is_a_power_of_two_and_hashtags_share_a_shard() {
        let ks = Keyspace::new(100, 16);
        assert_eq!(ks.shard_count(), 128);
        assert_eq!(ks.shard_of(b"{u1}.a"), ks.shard_of(b"{u1}.b"));
        assert_eq!(Keyspace::new(0, 0).shard_count(), 1);
        assert_eq!(Keyspace::new(0, 0).databases(), 1);
    }

    #[test]
    fn the_noted_database_addresses_stay_right() {
        let ks = Keyspace::new(4, 3);
        let check = |ks: &Keyspace| {
            for shard in 0..ks.shard_count() {
                let mut guard = ks.lock(shard);
                for (db, d) in guard.dbs().iter().enumerate() {
                    assert_eq!(ks.db_heads[db * ks.shard_count() + shard], d.head_addr(), "db {db} of shard {shard}");
                    assert_eq!(d.head_addr() % hashing::LINE, 0, "a database starts a cache line");
                }
            }
        };
        check(&ks);
        // Neither growing a table nor swapping databases moves them.
        for i in 0..2000 {
            let key = format!("key:{i}");
            ks.lock_key(key.as_bytes()).db(1).set_string(key.as_bytes(), b"v", None);
        }
        for shard in 0..ks.shard_count() {
            ks.lock(shard).swap_dbs(0, 1);
        }
        check(&ks);
        assert_eq!(ks.db_heads.len(), ks.shard_count() * ks.databases());
    }

    #[test]
    fn multi_locks_find_each_key_shard() {
        let ks = Keyspace::new(16, 16);
        let keys: [&[u8]; 4] = [b"a", b"b", b"c", b"a"];
        {
            let mut lock = ks.lock_keys(0, keys);
            for k in keys {
                lock.shard_for(&ks, k).db(0).set_string(k, k, None);
            }
        }
        let total: usize = ks.lock_all().shards().into_iter().map(|s| s.db(0).len()).sum();
        assert_eq!(total, 3);
    }

    #[test]
    fn a_multi_lock_finds_shards_in_any_order_and_for_equal_copies() {
        // Few keys and shards keep the lock's lists in place; 40 keys over
        // 128 shards lock more shards than fit there.
        for (shards, count) in [(16, 3), (16, 40), (128, 40)] {
            a_multi_lock_finds_shards_for(shards, count);
        }
    }

    fn a_multi_lock_finds_shards_for(shards: usize, count: usize) {
        let ks = Keyspace::new(shards, 1);
        let names: Vec<Vec<u8>> = (0..count).map(|i| format!("key:{i}").into_bytes()).collect();
        let keys: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        let mut lock = ks.lock_keys(0, keys.iter().copied());
        let locked: std::collections::BTreeSet<usize> = keys.iter().map(|k| ks.shard_of(k)).collect();
        assert_eq!(&*lock.order, locked.iter().copied().collect::<Vec<_>>().as_slice());
        assert_eq!(lock.guards.iter_mut().count(), locked.len());
        if shards == 128 {
            assert!(locked.len() > INLINE_GUARDS, "{} shards locked", locked.len());
        }
        // In order (remembered), backwards (hashed), then by equal copies
        // that lie elsewhere (hashed): each key lands in its own shard.
        for (i, k) in keys.iter().enumerate() {
            lock.shard_for(&ks, k).db(0).set_string(k, b"1", None);
            let copy = k.to_vec();
            let back = keys[keys.len() - 1 - i];
            lock.shard_for(&ks, back).db(0).set_string(back, b"2", None);
            lock.shard_for(&ks, &copy).db(0).set_string(&copy, b"3", None);
        }
        // Two passes in lock order, as MSETNX makes: every key is
        // remembered, with the guard of its own shard.
        lock.next = 0;
        for _ in 0..2 {
            for k in &keys {
                let at = lock.remembered_guard(k);
                assert_eq!(at.and_then(|at| lock.order.get(at)), Some(&ks.shard_of(k)));
            }
        }
        drop(lock);
        for k in &keys {
            let mut shard = ks.lock_key(k);
            assert!(shard.db(0).get_mut(k, 0).is_some(), "{:?} is not in its shard", String::from_utf8_lossy(k));
        }
        let total: usize = ks.lock_all().shards().into_iter().map(|s| s.db(0).len()).sum();
        assert_eq!(total, keys.len());
    }

    #[test]
    fn a_key_whose_shard_was_not_locked_is_refused_in_every_build() {
        let ks = Keyspace::new(16, 1);
        let locked: &[u8] = b"locked";
        let other = (0..1000)
            .map(|i| format!("other:{i}").into_bytes())
            .find(|k| ks.shard_of(k) != ks.shard_of(locked))
            .expect("a key in another shard");
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut lock = ks.lock_keys(0, [locked]);
            lock.shard_for(&ks, &other).db(0).set_string(&other, b"v", None);
        }));
        assert!(outcome.is_err(), "the wrong shard was used");
        // Nothing was written anywhere.
        let total: usize = ks.lock_all().shards().into_iter().map(|s| s.db(0).len()).sum();
        assert_eq!(total, 0);
    }

    #[test]
    fn a_multi_lock_prefetches_in_a_keyspace_larger_than_the_cache() {
        let ks = Keyspace::new(16, 2);
        let names: Vec<Vec<u8>> = (0..20).map(|i| format!("key:{i}").into_bytes()).collect();
        let keys: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        let hashes = |lock: &MultiLock<'_, '_>| lock.keys.iter().map(|k| k.hash).collect::<Vec<_>>();
        // An empty keyspace fits any cache; a missing database is never worth it.
        assert!(!ks.worth_prefetching(0, lookahead::min_keyspace_bytes()));
        assert!(hashes(&ks.lock_keys(0, keys.iter().copied())).iter().all(|&h| h == 0));
        for k in &keys[..10] {
            ks.lock_key(k).db(0).set_string(k, b"old", None);
        }
        assert!(ks.worth_prefetching(0, 1));
        assert!(!ks.worth_prefetching(2, 1));
        // Prefetching: each key's table hash is worked out up front, and
        // the lock serves the command as it does without.
        let mut lock = ks.lock_keys_ahead(0, keys.iter().copied(), true);
        let want: Vec<u64> = keys.iter().map(|k| key_hasher().hash_one(k)).collect();
        assert_eq!(hashes(&lock), want);
        for k in &keys {
            lock.shard_for(&ks, k).db(0).set_string(k, k, None);
        }
        drop(lock);
        for k in &keys {
            let mut shard = ks.lock_key(k);
            let value = shard.db(0).get_mut(k, 0).map(|e| e.value());
            assert!(matches!(value, Some(crate::types::ValueRef::Str(StrRef::Bytes(b))) if b == *k), "{k:?}");
        }
    }

    #[test]
    fn a_reserved_shard_waits_for_other_threads_only() {
        use std::sync::atomic::AtomicBool;
        let ks = Arc::new(Keyspace::new(4, 1));
        let (a, b) = (b"{a}".as_slice(), b"{b}".as_slice());
        assert_ne!(ks.shard_of(a), ks.shard_of(b), "the test needs two shards");
        let reservation = ks.reserve(7, Some(&[ks.shard_of(a)]));
        // The reserving thread goes in, one lock after another.
        ks.lock_key(a).db(0).set_string(a, b"1", None);
        ks.lock_keys(0, [a, b]).shard_for(&ks, b).db(0).set_string(b, b"1", None);
        let done = Arc::new(AtomicBool::new(false));
        let other = {
            let (ks, done) = (Arc::clone(&ks), Arc::clone(&done));
            std::thread::spawn(move || {
                // Another shard is free; the reserved one waits, with no
                // lock held meanwhile.
                ks.lock_key(b"{b}").db(0).set_string(b"{b}", b"2", None);
                let mut lock = ks.lock_keys(0, [b"{a}".as_slice(), b"{b}".as_slice()]);
                lock.shard_for(&ks, b"{a}").db(0).set_string(b"{a}", b"2", None);
                done.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!done.load(Ordering::SeqCst), "the other thread got through a reservation");
        // The shard the other thread waits for is not held: it stays free.
        ks.lock_key(b).db(0).set_string(b, b"3", None);
        drop(reservation);
        other.join().expect("the other thread finishes once released");
        assert!(done.load(Ordering::SeqCst));
        assert!(!in_transaction());
    }

    #[test]
    fn memory_estimate_follows_every_change() {
        let ks = Keyspace::new(4, 2);
        assert_eq!(ks.used_memory(), 0);
        ks.lock_key(b"a").db(0).set_string(b"a", b"hello world", None);
        let one = ks.used_memory();
        assert!(one >= db::ENTRY_OVERHEAD + 1 + 11);
        ks.lock_key(b"a").db(0).set_string(b"a", &[b'x'; 1000], None);
        assert!(ks.used_memory() >= db::ENTRY_OVERHEAD + 1 + 1000);
        {
            let mut shard = ks.lock_key(b"a");
            if let Some(Value::Str(s)) = shard.db(0).get_mut(b"a", now_ms()).map(Entry::value_mut) {
                s.make_raw().extend_from_slice(&[b'y'; 5000]);
            }
        }
        assert!(ks.used_memory() >= db::ENTRY_OVERHEAD + 1 + 6000, "growth in place is counted");
        {
            let mut shard = ks.lock_key(b"a");
            assert!(shard.db(0).set_expire(b"a", Some(now_ms() + 10_000)));
        }
        let with_ttl = ks.used_memory();
        ks.lock_key(b"a").db(0).set_expire(b"a", None);
        assert_eq!(ks.used_memory(), with_ttl - db::DEADLINE_OVERHEAD - 1);
        ks.lock_key(b"b").db(1).set_string(b"b", b"1", None);
        ks.lock_key(b"a").db(0).remove(b"a");
        // Length 1, header 4 (with the key's length), key 1, the integer 8:
        // one allocation.
        assert_eq!(ks.used_memory(), db::ENTRY_OVERHEAD + 14, "an integer costs its packed entry");
        ks.lock_key(b"b").db(1).clear();
        assert_eq!(ks.used_memory(), 0);
    }

    #[test]
    fn touched_databases_are_listed_once_and_any_past_64_lists_all() {
        let mut touched = Touched::default();
        assert_eq!(touched.indices(100).count(), 0);
        for i in [5, 0, 63, 5] {
            touched.add(i);
        }
        assert_eq!(touched.indices(100).collect::<Vec<_>>(), [0, 5, 63]);
        touched.add(64);
        assert_eq!(touched.indices(100).collect::<Vec<_>>(), (0..100).collect::<Vec<_>>());
        assert_eq!(Touched::ALL.indices(3).collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn memory_estimate_sums_databases_past_the_first_64_and_across_swaps() {
        let ks = Keyspace::new(1, 100);
        let big = [b'v'; 500];
        ks.lock(0).db(3).set_string(b"a", &big, None);
        let one = ks.used_memory();
        assert!(one >= 500);
        ks.lock(0).db(70).set_string(b"b", &big, None);
        ks.lock(0).db(99).set_string(b"c", &big, None);
        assert_eq!(ks.used_memory(), 3 * one, "three keys of the same size");
        ks.lock(0).swap_dbs(3, 80);
        assert_eq!(ks.used_memory(), 3 * one, "a swap moves keys, not memory");
        ks.lock(0).db(80).remove(b"a");
        ks.lock(0).db(70).remove(b"b");
        assert_eq!(ks.used_memory(), one);
        ks.lock(0).dbs().iter_mut().for_each(Db::clear);
        assert_eq!(ks.used_memory(), 0);
    }
}
