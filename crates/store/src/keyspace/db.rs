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

use std::collections::BTreeSet;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use hashbrown::hash_table::Entry as Slot;
use hashbrown::HashTable;

pub use super::entry::{Entry, Meta};
use super::events::{self, ServerEvent};
use super::evict::Policy;
use super::hashing::{key_hasher, LINE};
use super::lfu::{self, Tuning};
use super::lookahead::{HintSlot, MemberStep};
#[cfg(test)]
use super::lru;
use super::snapshot::{self, Leftovers, SnapshotState, Walk};
use crate::types::hash::{HashRef, HashValue};
use crate::types::member_table::MemberTable;
use crate::types::set::SetValue;
use crate::types::{Value, ValueRef};

/// Bytes charged for every key beyond what its entry holds on the heap:
/// the table's 8-byte slot and control byte, with a share of the spare
/// capacity the table keeps to stay fast.
pub const ENTRY_OVERHEAD: usize = std::mem::size_of::<Entry>() + 1 + 8;

/// Bytes charged for a key's place in the deadline index beyond the copy of
/// its name: the deadline, the boxed key, and a share of the tree's node.
pub const DEADLINE_OVERHEAD: usize = 48;

/// The memory estimate for `entry`: the one per-key formula behind
/// `maxmemory`, `MEMORY USAGE`, `MEMORY STATS` and `INFO memory`.
///
/// It counts what kvik allocates for the key (name, value, bookkeeping) and
/// not the allocator's rounding, so it is a little below the real figure;
/// what matters for `maxmemory` is that it grows and shrinks with the data.
pub fn charge(entry: &Entry) -> usize {
    let deadline = if entry.deadline().is_some() { DEADLINE_OVERHEAD + entry.key().len() } else { 0 };
    ENTRY_OVERHEAD + entry.heap_size() + deadline
}

/// The hash `key` is filed under in a database's table: the one the frame
/// scan worked out when `key` is the running command's first key (see
/// [`super::lookahead::KeyMemo`]), computed otherwise.
pub(super) fn table_hash(key: &[u8]) -> u64 {
    super::lookahead::remembered_hash(key).unwrap_or_else(|| key_hasher().hash_one(key))
}

/// The keys of one database that live in one shard.
///
/// The fields are laid out by hand, in cache lines, because a command on
/// one key in a keyspace larger than the caches finds its database cold:
/// the first line holds everything a lookup reads (and the hit count it
/// writes), the second what a miss or a write adds, the rest what a
/// change in place (the open key), expiry and the hint's publishing use.
/// The lookahead starts loading the first two lines ahead of the command
/// (see [`Db::head_addr`]); the assertions below the struct keep the layout.
#[derive(Debug, Default)]
#[repr(C, align(64))]
pub struct Db {
    // Line 0: every lookup.
    /// The keys; each entry holds its own name (see [`Entry`]). Hashed with
    /// the process's [`key_hasher`], which the lookahead uses too.
    table: HashTable<Entry>,
    /// LFU parameters shared with the rest of the keyspace.
    tuning: Arc<Tuning>,
    /// State of the generator behind LFU increments and eviction samples.
    rng: u64,
    /// Read lookups that found their key and that did not (`INFO stats`'
    /// `keyspace_hits` and `keyspace_misses`), counted here under the
    /// shard's lock rather than in a counter every thread contends for.
    hits: u64,
    /// Whether `open_key` holds an open key.
    open: bool,
    /// A background snapshot runs (see [`super::snapshot`]): the write
    /// paths hand a key it has not saved to it before they change it. The
    /// one test a write pays when none runs, on the line it reads anyway.
    snapshot_running: bool,
    /// The snapshot mark a saved key carries; a new key is born with it.
    saved_mark: bool,
    // Line 1: misses and writes.
    misses: u64,
    /// Memory estimate of every key except the open one (see `open`).
    used: usize,
    /// The estimate as the shard last added it into its total (see
    /// [`super::Shard::used_memory`]). It lives here rather than in the
    /// shard, so bringing the total up to date after a command reads no
    /// memory the command did not already.
    pub(super) counted: usize,
    /// This database's number, for the events it records (kept right by
    /// the shard, which hands databases out by number).
    pub(super) index: usize,
    /// Number of blocked clients; while non-zero, keys created and deleted
    /// are noted in [`super::ready`].
    blocked: Option<Arc<AtomicUsize>>,
    /// The bucket count this database last published (see `hint`).
    hint_buckets: usize,
    /// Keys removed because their deadline passed (for `INFO stats`' `expired_keys`).
    expired: u64,
    // Lines 2 and 3: the rest.
    /// A key handed out by [`Db::get_mut`]: its value may grow or shrink
    /// after the call returns, so its charge is taken out of `used` then and
    /// put back, recomputed, by [`Db::settle`] before anything else reads or
    /// changes this database. The buffer is reused to avoid an allocation
    /// per write.
    open_key: Vec<u8>,
    /// Keys with a deadline, ordered by deadline (for the active cycle and
    /// for `INFO keyspace`'s `expires=`).
    deadlines: Deadlines,
    /// Where this database publishes its table's address for the
    /// lookahead (see [`super::lookahead`]).
    hint: Option<HintSlot>,
    /// The running snapshot's state for this database.
    snap: Option<Box<SnapshotState>>,
    /// The keyspace's counter of changes (see
    /// [`super::Keyspace::next_change`]): a key this database removes by
    /// itself takes its place in the order from it.
    changes: Option<Arc<AtomicU64>>,
}

const _: () = {
    assert!(std::mem::offset_of!(Db, open) < LINE, "a lookup reads one line");
    assert!(std::mem::offset_of!(Db, saved_mark) < LINE, "so do a write's snapshot test and an insert's mark");
    assert!(std::mem::offset_of!(Db, snapshot_running) < LINE);
    assert!(std::mem::offset_of!(Db, hits) + size_of::<u64>() <= LINE);
    assert!(std::mem::offset_of!(Db, misses) >= LINE);
    assert!(std::mem::offset_of!(Db, expired) + size_of::<u64>() <= 2 * LINE, "a write adds one more");
    assert!(std::mem::align_of::<Db>() == LINE);
};

/// The bytes of an entry the lookahead loads (see [`Db::prefetch_entry`]):
/// the smallest allocation malloc makes for a packed string with a key of
/// 16 bytes and a short value.
const ENTRY_HEAD: usize = 32;

/// How a lookup treats the key it finds, as Redis's lookup flags do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// A read command's lookup: marks the key accessed and counts a hit or miss.
    Read,
    /// A read that leaves the access record alone but still counts
    /// (EXISTS, TYPE, TTL, OBJECT).
    ReadNoTouch,
    /// `ReadNoTouch` that announces no miss (OBJECT).
    ReadQuiet,
    /// A write command's lookup: marks the key accessed, counts nothing.
    Write,
    /// `Write` handing the entry out for a change whose charge the caller
    /// settles itself (`update`, `change`).
    Update,
    /// A write lookup handing the entry out for a change: its charge is
    /// recomputed afterwards (see `Db::open`).
    Change,
    /// Hands the entry out for a change like `Change` without marking it
    /// accessed: a key just created is not accessed again.
    Open,
    /// Looks only (MEMORY USAGE, eviction): no access, no count.
    Inspect,
}

impl Db {
    /// The access record of a key created at `now_ms`, for the policy now.
    fn fresh_meta(&self, now_ms: i64) -> Meta {
        Meta::new(now_ms, self.tuning.lfu_policy())
    }

    /// An empty database reading its LFU parameters from `tuning`.
    pub fn with_tuning(tuning: Arc<Tuning>, seed: u64) -> Db {
        Db { tuning, rng: seed | 1, ..Db::default() }
    }

    /// Report keys created and deleted as database `index` while the count
    /// `blocked` is non-zero.
    pub fn report_to_waiters(&mut self, index: usize, blocked: Arc<AtomicUsize>) {
        self.index = index;
        self.blocked = Some(blocked);
    }

    /// Take the places of the keys this database removes by itself from
    /// the keyspace's counter of changes.
    pub(super) fn order_changes_by(&mut self, changes: Arc<AtomicU64>) {
        self.changes = Some(changes);
    }

    /// Publish this table's address into `slot` for the lookahead.
    pub(super) fn publish_hints_to(&mut self, slot: HintSlot) {
        self.hint = Some(slot);
        self.hint_buckets = 0;
        self.refresh_hint();
    }

    /// Trade hint slots with `other`, which traded contents with this
    /// database (SWAPDB): each slot belongs to a database number.
    pub(super) fn swap_hint_slots(&mut self, other: &mut Db) {
        std::mem::swap(&mut self.hint, &mut other.hint);
        self.hint_buckets = 0;
        other.hint_buckets = 0;
        self.refresh_hint();
        other.refresh_hint();
    }

    /// Publish the table's address again if it may have moved (its bucket
    /// count changed). The address is found from any key's bucket: the
    /// table's API gives no other way to it.
    fn refresh_hint(&mut self) {
        let buckets = self.table.num_buckets();
        if buckets == self.hint_buckets {
            return;
        }
        self.hint_buckets = buckets;
        let Some(hint) = self.hint.as_ref().and_then(HintSlot::get) else { return };
        let Some(any) = self.table.iter().next() else {
            hint.clear();
            return;
        };
        let key = any.key();
        let found = self.table.find_bucket_index(key_hasher().hash_one(key), |e| e.is_key(key));
        match found.and_then(|i| Some((i, self.table.get_bucket(i)?))) {
            Some((i, entry)) => {
                let ctrl = std::ptr::from_ref(entry).addr() + size_of::<Entry>() * (i + 1);
                hint.publish(ctrl, buckets);
            }
            None => hint.clear(),
        }
    }

    /// The address of `key`'s bucket in the table, for the tests of the
    /// published hint.
    #[cfg(test)]
    pub(super) fn bucket_addr(&self, key: &[u8]) -> Option<usize> {
        let i = self.table.find_bucket_index(self.hash(key), |e| e.is_key(key))?;
        Some(std::ptr::from_ref(self.table.get_bucket(i)?).addr())
    }

    /// Where this database starts: its first line holds what a lookup
    /// reads, the second what a write adds (see the layout of [`Db`]). A
    /// database never moves once its shard is built, so step 1 of the
    /// lookahead can start loading them without the shard's lock.
    pub(super) fn head_addr(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }

    /// Start loading the entry a lookup of `hash` would compare first: the
    /// lines of its first [`ENTRY_HEAD`] bytes, where a packed string keeps
    /// its header, a key of up to some 25 bytes and a short value. Those
    /// bytes cross into a second line for one allocation in four; the
    /// second prefetch lands in the first line for the others.
    pub(super) fn prefetch_entry(&self, hash: u64) {
        if let Some(entry) = self.table.iter_hash(hash).next() {
            kvik_prefetch::prefetch(entry.addr());
            kvik_prefetch::prefetch(entry.addr() + ENTRY_HEAD - 1);
        }
    }

    /// Start one load of a member lookup in the value of `key` (filed
    /// under `hash`), when that value is a hash or set table or a large
    /// sorted set (see [`super::lookahead::MemberStep`]). False when it is
    /// none of those (or no key is there): the member has nothing to load.
    pub(super) fn prefetch_member(&self, hash: u64, key: &[u8], member_hash: u64, step: MemberStep) -> bool {
        fn start<V>(members: &MemberTable<V>, member_hash: u64, step: MemberStep) -> bool {
            match step {
                MemberStep::Slot => members.prefetch_slot(member_hash),
                MemberStep::Entry => members.prefetch_entry(member_hash),
            }
            true
        }
        let Some(entry) = self.table.find(hash, |e| e.is_key(key)) else { return false };
        match entry.value() {
            ValueRef::Hash(HashRef::Boxed(HashValue::Table(members, _))) => start(members, member_hash, step),
            ValueRef::Set(SetValue::Table(members, _)) => start(members, member_hash, step),
            ValueRef::ZSet(z) if z.is_large() => {
                match step {
                    MemberStep::Slot => z.prefetch_member_slot(member_hash),
                    MemberStep::Entry => z.prefetch_member_entry(member_hash),
                }
                true
            }
            _ => false,
        }
    }

    /// This database now sits at `index` (SWAPDB).
    pub fn set_index(&mut self, index: usize) {
        self.index = index;
    }

    fn hash(&self, key: &[u8]) -> u64 {
        table_hash(key)
    }

    /// Put the open key's charge back into `used` (see `open`), packing
    /// its value first if the change left a small list or hash (see
    /// [`Entry::repack`]).
    #[inline]
    fn settle(&mut self) {
        if self.open {
            self.settle_open();
        }
    }

    /// [`Db::settle`] with a key open: kept out of line so that the check
    /// every lookup makes stays a single test of a flag.
    #[inline(never)]
    fn settle_open(&mut self) {
        self.open = false;
        let hash = self.hash(&self.open_key);
        if let Some(entry) = self.table.find_mut(hash, |e| e.is_key(&self.open_key)) {
            entry.repack();
            self.used += charge(entry);
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

    /// Number of keys, counting keys whose deadline passed but were not yet removed.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when the database holds no key.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Number of keys with a deadline.
    pub fn expiring(&self) -> usize {
        self.deadlines.len()
    }

    /// The mean time left to the deadlines of the keys that have one, in
    /// milliseconds (`INFO keyspace`'s `avg_ttl`; 0 with none).
    pub fn avg_ttl_ms(&self, now_ms: i64) -> i64 {
        self.deadlines.mean_left_ms(now_ms)
    }

    /// Keys removed by expiry so far.
    pub fn expired_count(&self) -> u64 {
        self.expired
    }

    /// Read lookups so far that found their key, and that did not.
    pub fn lookup_counts(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }

    /// Forget the lookup counts (`CONFIG RESETSTAT`).
    pub fn reset_lookup_counts(&mut self) {
        (self.hits, self.misses) = (0, 0);
    }

    /// The live entry for `key` in one probe of the table: an expired key
    /// found there is removed and reported missing. `how` decides whether
    /// the key is marked accessed and whether the lookup is counted.
    fn lookup(&mut self, key: &[u8], now_ms: i64, how: Lookup) -> Option<&mut Entry> {
        self.settle();
        let hash = self.hash(key);
        let touch = matches!(how, Lookup::Read | Lookup::Write | Lookup::Update | Lookup::Change);
        let random = if touch { self.next_random() } else { 0 };
        let found = match self.table.find_entry(hash, |e| e.is_key(key)) {
            // Gone for every reader; left in place while a pause holds
            // deletions back.
            Ok(found) if found.get().is_expired(now_ms) && super::expiry_paused(now_ms) => None,
            Ok(found) if found.get().is_expired(now_ms) => {
                let (old, _) = found.remove();
                self.used -= charge(&old).min(self.used);
                unindex(&mut self.deadlines, key, old.deadline());
                self.expired += 1;
                events::record_removal(ServerEvent::Expired, self.index, key, self.changes.as_deref());
                snapshot::keep_removed(self.snapshot_running, self.saved_mark, &mut self.snap, old);
                None
            }
            Ok(found) => Some(found.into_mut()),
            Err(_) => None,
        };
        match how {
            Lookup::Read | Lookup::ReadNoTouch | Lookup::ReadQuiet if found.is_some() => self.hits += 1,
            Lookup::ReadQuiet => self.misses += 1,
            Lookup::Read | Lookup::ReadNoTouch => {
                self.misses += 1;
                events::record(ServerEvent::KeyMiss, self.index, key);
            }
            Lookup::Write | Lookup::Update | Lookup::Change | Lookup::Open | Lookup::Inspect => {}
        }
        let entry = found?;
        if matches!(how, Lookup::Update | Lookup::Change | Lookup::Open) {
            snapshot::keep(self.snapshot_running, self.saved_mark, &mut self.snap, entry);
        }
        if touch {
            let mut meta = entry.meta();
            meta.touch(now_ms, &self.tuning, random);
            entry.set_meta(meta);
        }
        if matches!(how, Lookup::Change | Lookup::Open) {
            self.used -= charge(entry).min(self.used);
            self.open_key.clear();
            self.open_key.extend_from_slice(key);
            self.open = true;
        }
        Some(entry)
    }

    /// The live entry for `key` for a read command: marks it accessed and
    /// counts a keyspace hit or miss (Redis's `lookupKeyRead`; a key of
    /// the wrong type is still a hit).
    pub fn get(&mut self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        self.lookup(key, now_ms, Lookup::Read).map(|e| &*e)
    }

    /// The live entry for `key` for a read that must not count as an access
    /// (EXISTS, TYPE, TTL, OBJECT); still counted as a hit or miss, as in Redis.
    pub fn peek(&mut self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        self.lookup(key, now_ms, Lookup::ReadNoTouch).map(|e| &*e)
    }

    /// [`Db::peek`] that does not announce a miss as a `keymiss` event
    /// (OBJECT, as in Redis).
    pub fn peek_quiet(&mut self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        self.lookup(key, now_ms, Lookup::ReadQuiet).map(|e| &*e)
    }

    /// The live entry for `key` without marking it accessed or counting the
    /// lookup (MEMORY USAGE, DEBUG OBJECT, eviction).
    pub fn inspect(&mut self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        self.lookup(key, now_ms, Lookup::Inspect).map(|e| &*e)
    }

    /// The entry for `key` even if its deadline has passed, left in place
    /// (MEMORY USAGE, which Redis answers from the table without expiring).
    pub fn find_stale(&mut self, key: &[u8]) -> Option<&Entry> {
        self.settle();
        let hash = self.hash(key);
        self.table.find(hash, |e| e.is_key(key))
    }

    /// The live entry for `key`, mutable, marking it accessed; for commands
    /// that change the value (Redis's `lookupKeyWrite`, not counted as a
    /// hit or miss). The deadline is changed through [`Db::set_expire`],
    /// so the deadline index stays right.
    pub fn get_mut(&mut self, key: &[u8], now_ms: i64) -> Option<&mut Entry> {
        // `private_copy` stays: most writes leave a raw string, for which
        // sharing does not show, and the ones that store a shareable integer
        // (INCR and friends) clear it themselves, so a write that fails or
        // changes nothing keeps the copy's own object, as in Redis.
        self.lookup(key, now_ms, Lookup::Change)
    }

    /// The live entry for `key` for a change, created holding `make()` when
    /// missing (Redis's write lookup followed by `dbAdd`: a created key
    /// gets a new access record and is not marked accessed again). `None`
    /// only if the key could not be found after creating it.
    pub fn get_mut_or_insert(&mut self, key: &[u8], now_ms: i64, make: impl FnOnce() -> Value) -> Option<&mut Entry> {
        if self.lookup(key, now_ms, Lookup::Inspect).is_none() {
            self.insert(Entry::new(key, make(), None, self.fresh_meta(now_ms)));
            return self.lookup(key, now_ms, Lookup::Open);
        }
        self.lookup(key, now_ms, Lookup::Change)
    }

    /// Change the live entry for `key` with `f`, settling its memory charge
    /// at once: for small changes such as INCR's, this saves the second
    /// lookup that [`Db::get_mut`]'s deferred accounting costs.
    pub fn update<R>(&mut self, key: &[u8], now_ms: i64, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        let entry = self.lookup(key, now_ms, Lookup::Update)?;
        let before = charge(entry);
        let result = f(entry);
        let after = charge(entry);
        self.used = (self.used + after).saturating_sub(before);
        Some(result)
    }

    /// Run `f` on the live entry for `key` (`None` when missing), marking it
    /// accessed, then pack it again if the change left a small list or hash
    /// and settle its memory charge at once. One probe of the table, where
    /// [`Db::get_mut`] costs a second one when its charge is settled later.
    pub fn change<R>(&mut self, key: &[u8], now_ms: i64, f: impl FnOnce(Option<&mut Entry>) -> R) -> R {
        let Some(entry) = self.lookup(key, now_ms, Lookup::Update) else { return f(None) };
        let before = charge(entry);
        let result = f(Some(&mut *entry));
        entry.repack();
        let after = charge(entry);
        self.used = (self.used + after).saturating_sub(before);
        result
    }

    /// [`Db::change`] of the entry for `key`, created holding `make()` when
    /// missing as [`Db::get_mut_or_insert`] creates it. An existing key
    /// costs one probe of the table; `None` only if a created key could not
    /// be found again.
    pub fn change_or_insert<R>(
        &mut self,
        key: &[u8],
        now_ms: i64,
        make: impl FnOnce() -> Value,
        f: impl FnOnce(&mut Entry) -> R,
    ) -> Option<R> {
        if let Some(entry) = self.lookup(key, now_ms, Lookup::Update) {
            let before = charge(entry);
            let result = f(entry);
            entry.repack();
            let after = charge(entry);
            self.used = (self.used + after).saturating_sub(before);
            return Some(result);
        }
        self.get_mut_or_insert(key, now_ms, make).map(f)
    }

    /// The live entry for `key` for a write command that reads it first
    /// (marks it accessed, not counted as a hit or miss).
    pub fn lookup_write(&mut self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        self.lookup(key, now_ms, Lookup::Write).map(|e| &*e)
    }

    /// True when `key` exists and has not expired, for a write command
    /// (marks it accessed, not counted as a hit or miss).
    pub fn contains(&mut self, key: &[u8], now_ms: i64) -> bool {
        self.lookup(key, now_ms, Lookup::Write).is_some()
    }

    /// Remove and return the live entry for `key` (RENAME, MOVE).
    pub fn take(&mut self, key: &[u8], now_ms: i64) -> Option<Entry> {
        self.lookup(key, now_ms, Lookup::Inspect)?;
        self.remove(key)
    }

    /// Store the string `bytes` under `key` as SET does, replacing any
    /// previous value: packed, without building an owned value first.
    pub fn set_string(&mut self, key: &[u8], bytes: &[u8], deadline: Option<i64>) {
        self.settle();
        let now = super::now_ms();
        let hash = self.hash(key);
        let meta = self.fresh_meta(now);
        if deadline.is_none() && self.rewrite_string(hash, key, bytes, meta, now) {
            return;
        }
        self.insert_hashed(Entry::string(key, bytes, deadline, meta), true, Some(hash));
    }

    /// [`Db::set_string`] with no deadline over a live string key whose
    /// packed value keeps its length: the bytes are rewritten where they
    /// lie, with what [`Db::insert_hashed`] does to a replaced key (a new
    /// access record, or under LFU the old one accessed; blocked clients
    /// told). `meta` is the new key's access record at `now`. Its charge
    /// and the deadline index stay as they are. False when the key needs
    /// the general path.
    fn rewrite_string(&mut self, hash: u64, key: &[u8], bytes: &[u8], mut meta: Meta, now: i64) -> bool {
        let lfu = self.tuning.lfu_policy();
        let random = if lfu { self.next_random() } else { 0 };
        let Some(entry) = self.table.find_mut(hash, |e| e.is_key(key)) else { return false };
        snapshot::keep(self.snapshot_running, self.saved_mark, &mut self.snap, entry);
        // A key rewritten here has no deadline, so it is live.
        if lfu {
            meta.clock = lfu::accessed(entry.meta().clock, now, &self.tuning, random);
        }
        if !entry.rewrite_string(bytes, meta) {
            return false;
        }
        report(&self.blocked, self.index, key);
        true
    }

    /// Store `value` under `key`, a new key's access record, replacing any previous value.
    pub fn set(&mut self, key: &[u8], value: Value, deadline: Option<i64>) {
        self.insert(Entry::new(key, value, deadline, self.fresh_meta(super::now_ms())));
    }

    /// Store `entry` under its key, replacing any previous value; returns the old entry.
    ///
    /// A replaced key keeps its access frequency, as Redis keeps it when a
    /// value is overwritten, so rewriting a hot key does not make it look
    /// new to the LFU policies. Callers that mean a new key (`COPY ...
    /// REPLACE`, `RENAME`, `RESTORE ... REPLACE`) remove the old one first.
    pub fn insert(&mut self, entry: Entry) -> Option<Entry> {
        self.insert_announced(entry, true)
    }

    /// Store `value` under `key` as a new key with a new access record,
    /// dropping what was there (the `...STORE` commands, Redis's `setKey`):
    /// recorded as a created key only when there was no live one. True when
    /// a live key was replaced.
    pub fn replace(&mut self, key: &[u8], value: Value) -> bool {
        let existed = self.take(key, super::now_ms()).is_some();
        self.insert_announced(Entry::new(key, value, None, self.fresh_meta(super::now_ms())), !existed);
        existed
    }

    /// [`Db::insert`], recording a created key only when `announce_new`.
    fn insert_announced(&mut self, entry: Entry, announce_new: bool) -> Option<Entry> {
        self.settle();
        self.insert_hashed(entry, announce_new, None)
    }

    /// [`Db::insert_announced`] after [`Db::settle`], given the key's hash
    /// when the caller has it.
    fn insert_hashed(&mut self, mut entry: Entry, announce_new: bool, hash: Option<u64>) -> Option<Entry> {
        // Born saved: a running snapshot does not hold it (see `snapshot`).
        entry.set_marked(self.saved_mark);
        self.used += charge(&entry);
        let new_deadline = entry.deadline();
        let random = self.next_random();
        // Decoded once: finding the name in a packed entry's header is not free.
        let key = entry.key();
        let hasher = key_hasher();
        let hash = hash.unwrap_or_else(|| hasher.hash_one(key));
        // A new key, or a key replaced by another value, may serve clients
        // blocked on it (or end an XREADGROUP's wait).
        report(&self.blocked, self.index, key);
        let old = match self.table.entry(hash, |e| e.is_key(key), |e| hasher.hash_one(e.key())) {
            Slot::Occupied(mut slot) => {
                snapshot::keep(self.snapshot_running, self.saved_mark, &mut self.snap, slot.get_mut());
                let kept = slot.get();
                let now = super::now_ms();
                if kept.is_expired(now) {
                    // Gone already for every reader: replacing it makes a new key.
                    self.expired += 1;
                    events::record_removal(ServerEvent::Expired, self.index, kept.key(), self.changes.as_deref());
                    events::record(ServerEvent::New, self.index, kept.key());
                } else {
                    // The write is an access to the old key, as Redis's
                    // lookup before an overwrite is, and under an LFU
                    // policy its frequency stays (under another the new
                    // value keeps its own access time).
                    if self.tuning.lfu_policy() {
                        let clock = lfu::accessed(kept.meta().clock, now, &self.tuning, random);
                        entry.set_meta(Meta { clock, ..entry.meta() });
                    }
                }
                Some(std::mem::replace(slot.get_mut(), entry))
            }
            Slot::Vacant(slot) => {
                let placed = slot.insert(entry);
                let key = placed.get().key();
                if announce_new {
                    events::record(ServerEvent::New, self.index, key);
                }
                reindex(&mut self.deadlines, key, None, new_deadline);
                self.refresh_hint();
                return None;
            }
        };
        if let Some(old) = &old {
            self.used -= charge(old).min(self.used);
            reindex(&mut self.deadlines, old.key(), old.deadline(), new_deadline);
        }
        old
    }

    /// Remove `key`; returns its entry if it existed (expired or not).
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        self.settle();
        let hash = self.hash(key);
        let mut found = self.table.find_entry(hash, |e| e.is_key(key)).ok()?;
        snapshot::keep(self.snapshot_running, self.saved_mark, &mut self.snap, found.get_mut());
        let (old, _) = found.remove();
        self.used -= charge(&old).min(self.used);
        unindex(&mut self.deadlines, key, old.deadline());
        report(&self.blocked, self.index, key);
        Some(old)
    }

    /// Put `key` back as it was before changes that are being undone:
    /// `old` (a copy taken with [`Db::find_stale`], expired or not), or no
    /// key. Nothing is announced: the changes being undone were never
    /// shown to anyone (a script's abandoned run, see docs/scripting.md).
    pub fn restore(&mut self, key: &[u8], old: Option<Entry>) {
        self.remove(key);
        if let Some(entry) = old {
            debug_assert!(entry.is_key(key), "an entry restored under another key");
            self.settle();
            self.insert_hashed(entry, false, None);
        }
    }

    /// Set or clear the deadline of an existing key; false when the key does not exist.
    pub fn set_expire(&mut self, key: &[u8], at_ms: Option<i64>) -> bool {
        self.settle();
        let hash = self.hash(key);
        let Some(entry) = self.table.find_mut(hash, |e| e.is_key(key)) else { return false };
        snapshot::keep(self.snapshot_running, self.saved_mark, &mut self.snap, entry);
        let before = charge(entry);
        let was = entry.deadline();
        entry.set_deadline(at_ms);
        self.used = (self.used + charge(entry)).saturating_sub(before);
        reindex(&mut self.deadlines, key, was, at_ms);
        true
    }

    /// Remove every key.
    pub fn clear(&mut self) {
        self.open = false;
        let held = std::mem::take(&mut self.used);
        // A new table rather than `clear`, which would keep the old one's
        // memory; a running snapshot may still need the old one's keys.
        let old = std::mem::take(&mut self.table);
        drop(self.detach_for_snapshot(old, held));
        self.deadlines.clear();
        self.refresh_hint();
    }

    /// Every key (live or not yet removed), for KEYS, SCAN and RANDOMKEY.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.table.iter().map(Entry::key)
    }

    /// Every entry (live or not yet removed), for KEYS and SCAN's filters.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.table.iter()
    }

    /// Remove up to `budget` expired keys; returns how many were removed.
    ///
    /// The active expiry cycle calls this with a small budget per shard, so it
    /// never holds a shard lock for long.
    pub fn remove_expired(&mut self, now_ms: i64, budget: usize) -> usize {
        if super::expiry_paused(now_ms) {
            return 0;
        }
        let mut removed = 0;
        while removed < budget {
            let Some((at, key)) = self.deadlines.first() else { break };
            if *at > now_ms {
                break;
            }
            let key = key.clone();
            let before = self.expired;
            self.lookup(&key, now_ms, Lookup::Inspect);
            if self.expired > before {
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
        let pool = if policy.volatile() { self.deadlines.len() } else { self.table.len() };
        if pool == 0 {
            return;
        }
        let skip = usize::try_from(self.next_random() % pool as u64).unwrap_or(0);
        let picked: Vec<&Entry> = if policy.volatile() {
            self.deadlines
                .iter()
                .skip(skip)
                .take(samples)
                .filter_map(|(_, k)| self.table.find(key_hasher().hash_one(&k[..]), |e| e.is_key(&k[..])))
                .collect()
        } else {
            self.table.iter().skip(skip).take(samples).collect()
        };
        let mut x = self.rng;
        for entry in picked {
            let meta = entry.meta();
            let score = match policy {
                Policy::AllkeysLru | Policy::VolatileLru => u64::from(meta.idle_seconds(now_ms)),
                Policy::AllkeysLfu | Policy::VolatileLfu => {
                    u64::from(u8::MAX - lfu::decayed(meta.clock, now_ms, &self.tuning))
                }
                _ => {
                    x = x.rotate_left(17).wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
                    x
                }
            };
            out.push((score, Box::from(entry.key())));
        }
    }

    /// The `n`th key in the table's order if it is live (RANDOMKEY); an
    /// expired key found there is removed and `None` returned, so the caller
    /// picks again.
    pub fn nth_live_key(&mut self, n: usize, now_ms: i64) -> Option<Box<[u8]>> {
        self.settle();
        let entry = self.table.iter().nth(n)?;
        let key: Box<[u8]> = entry.key().into();
        if entry.is_expired(now_ms) {
            self.lookup(&key, now_ms, Lookup::Inspect);
            return None;
        }
        Some(key)
    }
}

/// The keyspace's half of a background snapshot (see [`super::snapshot`]).
impl Db {
    /// Start a snapshot of this database as it is now, under number
    /// `number`. The caller holds every shard, so that all databases begin
    /// at the same moment.
    ///
    /// # Panics
    ///
    /// When a snapshot already runs here (the server runs one at a time).
    pub fn begin_snapshot(&mut self, number: usize) {
        assert!(self.snap.is_none(), "one snapshot at a time");
        self.settle();
        self.saved_mark = !self.saved_mark;
        self.snap = Some(Box::new(SnapshotState {
            number,
            unsaved: self.table.len(),
            cursor: 0,
            buckets: self.table.num_buckets(),
            copies: Vec::new(),
            detached: Vec::new(),
            detached_bytes: 0,
        }));
        self.snapshot_running = true;
    }

    /// The number this database had when the running snapshot began, if one runs.
    pub fn snapshot_number(&self) -> Option<usize> {
        self.snap.as_ref().map(|s| s.number)
    }

    /// Keys of the snapshot still in the table and not handed over yet.
    pub fn snapshot_unsaved(&self) -> usize {
        self.snap.as_ref().map_or(0, |s| s.unsaved)
    }

    /// Visit up to `max_buckets` buckets of the table from where the last
    /// slice stopped, handing each key of the snapshot found there to `f`
    /// (at most `max_keys` of them) and marking it saved.
    ///
    /// A slice's cost is bounded by its arguments, whatever the table's
    /// size (and by the size of the values `f` writes). Keys the table
    /// moved behind the walk are found by starting over (see the module
    /// docs). `Done` when every key of the snapshot left in the table has
    /// been handed to `f` or copied.
    pub fn snapshot_slice(&mut self, max_buckets: usize, max_keys: usize, mut f: impl FnMut(&Entry)) -> Walk {
        self.settle();
        let saved_mark = self.saved_mark;
        let Some(s) = self.snap.as_mut() else { return Walk::Done };
        let buckets = self.table.num_buckets();
        if buckets != s.buckets {
            // Grown or shrunk: keys are in new places.
            s.buckets = buckets;
            s.cursor = 0;
        }
        let (mut visited, mut handed) = (0, 0);
        while s.unsaved > 0 && visited < max_buckets && handed < max_keys {
            if s.cursor >= buckets {
                // A rehash in place moved keys behind the walk.
                s.cursor = 0;
            }
            if let Some(entry) = self.table.get_bucket_mut(s.cursor) {
                if entry.is_marked() != saved_mark {
                    f(entry);
                    entry.set_marked(saved_mark);
                    s.unsaved -= 1;
                    handed += 1;
                }
            }
            s.cursor += 1;
            visited += 1;
        }
        if s.unsaved == 0 {
            Walk::Done
        } else {
            Walk::More
        }
    }

    /// The keys copied before a change and the tables flushed since the
    /// last call, for the saver to write outside the shard's lock.
    pub fn take_snapshot_leftovers(&mut self) -> Leftovers {
        let Some(s) = self.snap.as_mut() else { return Leftovers::default() };
        let copies = std::mem::take(&mut s.copies);
        let copied_bytes = copies.iter().map(charge).sum::<usize>() + std::mem::take(&mut s.detached_bytes);
        Leftovers { copies, detached: std::mem::take(&mut s.detached), saved_mark: self.saved_mark, copied_bytes }
    }

    /// End the snapshot once the walk is done and the leftovers are taken;
    /// false (and the snapshot goes on) while keys are left.
    pub fn end_snapshot(&mut self) -> bool {
        let finished =
            self.snap.as_ref().is_none_or(|s| s.unsaved == 0 && s.copies.is_empty() && s.detached.is_empty());
        if finished {
            self.snap = None;
            self.snapshot_running = false;
        }
        finished
    }

    /// Set `table`, flushed while the snapshot runs, aside for it, counting
    /// `held_bytes` (its keys' estimate) as memory the snapshot keeps; the
    /// table comes back when the snapshot needs nothing of it, to be dropped.
    pub(super) fn detach_for_snapshot(
        &mut self,
        table: HashTable<Entry>,
        held_bytes: usize,
    ) -> Option<HashTable<Entry>> {
        let s = match self.snap.as_mut() {
            Some(s) if self.snapshot_running && s.unsaved > 0 => s,
            _ => return Some(table),
        };
        s.detached_bytes += held_bytes;
        s.unsaved = 0;
        s.detached.push(table);
        None
    }
}

/// `key` of database `index` was created or deleted: report it when
/// clients are blocked (`blocked` non-zero), as they may now be served.
fn report(blocked: &Option<Arc<AtomicUsize>>, index: usize, key: &[u8]) {
    if blocked.as_ref().is_some_and(|b| b.load(Ordering::Relaxed) > 0) {
        super::ready::push(index, key);
    }
}

/// Move `key` in the deadline index from `old` to `new`.
fn reindex(deadlines: &mut Deadlines, key: &[u8], old: Option<i64>, new: Option<i64>) {
    if old == new {
        return;
    }
    unindex(deadlines, key, old);
    if let Some(at) = new {
        deadlines.insert(at, key);
    }
}

/// Take `key` out of the deadline index, where it is under `at`.
fn unindex(deadlines: &mut Deadlines, key: &[u8], at: Option<i64>) {
    if let Some(at) = at {
        deadlines.remove(at, key);
    }
}

/// The keys with a deadline, soonest first, and the sum of their deadlines,
/// kept as they change so that `INFO keyspace`'s `avg_ttl` is one division
/// rather than a walk over every key.
#[derive(Debug, Default)]
struct Deadlines {
    set: BTreeSet<(i64, Box<[u8]>)>,
    sum_ms: i128,
}

impl std::ops::Deref for Deadlines {
    type Target = BTreeSet<(i64, Box<[u8]>)>;

    fn deref(&self) -> &Self::Target {
        &self.set
    }
}

impl Deadlines {
    fn insert(&mut self, at: i64, key: &[u8]) {
        if self.set.insert((at, Box::from(key))) {
            self.sum_ms += i128::from(at);
        }
    }

    fn remove(&mut self, at: i64, key: &[u8]) {
        if self.set.remove(&(at, Box::from(key))) {
            self.sum_ms -= i128::from(at);
        }
    }

    fn pop_first(&mut self) {
        if let Some((at, _)) = self.set.pop_first() {
            self.sum_ms -= i128::from(at);
        }
    }

    fn clear(&mut self) {
        self.set.clear();
        self.sum_ms = 0;
    }

    /// The mean time left to the deadlines at `now_ms`, in milliseconds
    /// (0 with none, and never below 0: keys past theirs are as good as gone).
    fn mean_left_ms(&self, now_ms: i64) -> i64 {
        let n = self.set.len() as i128;
        if n == 0 {
            return 0;
        }
        i64::try_from((self.sum_ms / n - i128::from(now_ms)).max(0)).unwrap_or(i64::MAX)
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
        db.set(b"a", val("1"), Some(100));
        db.set(b"b", val("2"), None);
        assert_eq!((db.len(), db.expiring()), (2, 1));
        assert!(db.get(b"a", 99).is_some());
        assert!(db.get(b"a", 100).is_none());
        assert_eq!((db.len(), db.expiring(), db.expired_count()), (1, 0, 1));
    }

    #[test]
    fn a_restored_copy_undoes_writes_in_place_and_new_keys() {
        let mut db = Db::default();
        db.set_string(b"k", b"old", None);
        db.set_string(b"t", b"1", Some(i64::MAX));
        let (k, t) = (db.find_stale(b"k").cloned(), db.find_stale(b"t").cloned());
        let gone = db.find_stale(b"n").cloned();
        let used = db.used_memory();
        db.set_string(b"k", b"new", None);
        assert!(db.set_expire(b"t", None));
        db.set_string(b"n", b"fresh", None);
        db.restore(b"n", gone);
        db.restore(b"t", t);
        db.restore(b"k", k);
        assert_eq!(db.get(b"k", 0).map(|e| e.value().to_owned()), Some(Value::Str(StrValue::from_bytes(b"old"))));
        assert!(db.get(b"n", 0).is_none());
        assert_eq!((db.len(), db.expiring()), (2, 1));
        assert_eq!(db.used_memory(), used);
    }

    #[test]
    fn counters_follow_inserts_removals_and_deadlines() {
        let mut db = Db::default();
        db.set(b"a", val("1"), Some(5));
        db.set(b"a", val("2"), None);
        assert_eq!(db.expiring(), 0);
        assert!(db.set_expire(b"a", Some(10)));
        assert_eq!(db.expiring(), 1);
        assert!(!db.set_expire(b"missing", Some(10)));
        db.remove(b"a");
        assert_eq!((db.len(), db.expiring()), (0, 0));
    }

    #[test]
    fn every_database_hashes_keys_as_the_lookahead_does() {
        // The lookahead hashes a key with `key_hasher` before its database is
        // known; a default database must agree, as one made for a shard does.
        let default = Db::default();
        let made = Db::with_tuning(Arc::new(Tuning::default()), 7);
        for key in [&b"k"[..], b"", b"user:1000"] {
            assert_eq!(default.hash(key), key_hasher().hash_one(key));
            assert_eq!(made.hash(key), key_hasher().hash_one(key));
        }
    }

    #[test]
    fn values_changed_in_place_are_recounted() {
        let mut db = Db::default();
        db.set(b"k", Value::Str(StrValue::Raw(Vec::new())), None);
        let empty = db.used_memory();
        if let Some(Value::Str(s)) = db.get_mut(b"k", 0).map(Entry::value_mut) {
            s.make_raw().reserve_exact(4096);
        }
        assert!(db.used_memory() >= empty + 4096);
        db.remove(b"k");
        assert_eq!(db.used_memory(), 0);
    }

    #[test]
    fn keys_created_for_a_change_are_counted_and_kept() {
        let mut db = Db::default();
        let raw = || Value::Str(StrValue::Raw(Vec::new()));
        if let Some(Value::Str(s)) = db.get_mut_or_insert(b"k", 0, raw).map(Entry::value_mut) {
            s.make_raw().reserve_exact(4096);
        }
        assert!(db.used_memory() >= 4096, "the new key's growth is charged");
        assert_eq!(db.get_mut_or_insert(b"k", 0, || val("other")).map(|e| e.value().encoding()), Some("raw"));
        assert_eq!((db.len(), db.lookup_counts()), (1, (0, 0)));
    }

    #[test]
    fn changes_settle_their_charge_at_once() {
        let mut db = Db::default();
        let raw = || Value::Str(StrValue::Raw(Vec::new()));
        let grow = |e: &mut Entry| {
            if let Value::Str(s) = e.value_mut() {
                s.make_raw().reserve_exact(4096);
            }
        };
        assert_eq!(db.change_or_insert(b"k", 0, raw, grow), Some(()));
        let grown = db.used_memory();
        assert!(grown >= 4096, "the new key's growth is charged");
        // An existing key keeps its value and is changed in place.
        db.change_or_insert(b"k", 0, || val("other"), |e| assert_eq!(e.value().encoding(), "raw"));
        assert!(db.change(b"missing", 0, |e| e.is_none()));
        db.change(b"k", 0, |e| e.map(|e| e.set_value(val("x"))));
        assert!(db.used_memory() < grown, "shrinking is charged too");
        assert_eq!((db.len(), db.lookup_counts()), (1, (0, 0)));
        db.remove(b"k");
        assert_eq!(db.used_memory(), 0);
    }

    #[test]
    fn only_read_lookups_count_hits_and_misses() {
        let mut db = Db::default();
        db.set(b"a", val("1"), None);
        db.set(b"gone", val("1"), Some(5));
        assert!(db.get(b"a", 10).is_some());
        assert!(db.get(b"gone", 10).is_none(), "an expired key is a miss");
        assert!(db.peek(b"missing", 10).is_none());
        assert!(db.lookup_write(b"a", 10).is_some());
        assert!(db.contains(b"a", 10));
        assert!(db.get_mut(b"a", 10).is_some());
        assert!(db.inspect(b"a", 10).is_some());
        assert_eq!(db.lookup_counts(), (1, 2));
        db.reset_lookup_counts();
        assert_eq!(db.lookup_counts(), (0, 0));
    }

    #[test]
    fn peeks_leave_the_access_record_alone() {
        let mut db = Db::default();
        db.set(b"a", val("1"), None);
        let before = db.inspect(b"a", 0).map(Entry::meta);
        db.peek(b"a", 3_600_000);
        assert_eq!(db.inspect(b"a", 3_600_000).map(Entry::meta), before);
        db.get(b"a", 3_600_000);
        assert_eq!(db.inspect(b"a", 3_600_000).map(|e| e.meta().clock), Some(3600));
        assert_eq!(db.inspect(b"a", 3_605_000).map(|e| e.meta().idle_seconds(3_605_000)), Some(5));
    }

    #[test]
    fn accesses_are_recorded_as_the_policy_in_force_reads_them() {
        let tuning = Arc::new(Tuning::default());
        let mut db = Db::with_tuning(Arc::clone(&tuning), 7);
        let minute = 60_000;
        db.set(b"a", val("1"), None);
        // Under an LRU policy the clock is the access time in seconds.
        db.get(b"a", 100 * minute);
        let lru = db.inspect(b"a", 0).map(Entry::meta).map(|m| m.clock);
        assert_eq!(lru, Some(6000));
        // Under an LFU policy the same bits become minutes and a counter;
        // they are read that way at once and written that way at the next access.
        tuning.set_lfu_policy(true);
        let read = db.inspect(b"a", 0).map(Entry::meta).map(|m| (m.lfu_minutes(), m.lfu_counter()));
        assert_eq!(read, Some((6000 >> 8, (6000 & 0xff) as u8)));
        db.get(b"a", 200 * minute);
        let meta = db.inspect(b"a", 0).map(Entry::meta).expect("key");
        assert_eq!(meta.lfu_minutes(), 200);
        assert!(meta.lfu_counter() <= 1, "the old bits decayed as idle minutes: {}", meta.lfu_counter());
        // A key written under LFU starts at the initial counter; an
        // overwrite keeps the old key's frequency.
        db.set(b"b", val("1"), None);
        let counter = |db: &mut Db, k: &[u8]| db.inspect(k, 0).map(|e| e.meta().lfu_counter());
        assert_eq!(counter(&mut db, b"b"), Some(lfu::INIT_VAL));
        let hot = Meta { clock: lfu::clock(lfu::minutes(super::super::now_ms()), 200), private_copy: false };
        if let Some(e) = db.get_mut(b"b", 0) {
            e.set_meta(hot);
        }
        db.set(b"b", val("2"), None);
        assert!(counter(&mut db, b"b").is_some_and(|c| c >= 200), "{:?}", counter(&mut db, b"b"));
        // Back under LRU the overwrite keeps the new value's own time.
        tuning.set_lfu_policy(false);
        db.set(b"b", val("3"), None);
        let now_s = lru::clock(super::super::now_ms());
        assert!(db.inspect(b"b", 0).is_some_and(|e| e.meta().clock.abs_diff(now_s) <= 1));
    }

    #[test]
    fn active_removal_respects_its_budget() {
        let mut db = Db::default();
        for i in 0..10 {
            db.set(format!("k{i}").as_bytes(), val("x"), Some(1));
        }
        assert_eq!(db.remove_expired(2, 4), 4);
        assert_eq!(db.len(), 6);
        assert_eq!(db.remove_expired(2, 100), 6);
        assert!(db.is_empty());
    }
}
