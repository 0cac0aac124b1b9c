//! Prefetching the keys a batch of commands is about to look up.
//!
//! A lookup in a keyspace larger than the caches waits on three loads in a
//! row: the table's control bytes, the slot they point to, and the entry
//! the slot points to. Each is a miss of some hundred nanoseconds, several
//! times the rest of a pipelined GET. A connection that holds many
//! commands in its buffer knows their keys in advance, so it starts those
//! loads a few commands ahead (the server's connection loops), in two
//! steps, each far enough ahead for its loads to arrive:
//!
//! 1. [`Keyspace::prefetch_table`] starts loading the key's shard lock, the
//!    head of its database, and the first control group and slots of its
//!    probe sequence. It takes no lock: the table's address comes from its
//!    [`TableHint`], and where the database lies was noted when the shard
//!    was built.
//! 2. [`Keyspace::prefetch_entry`], a few commands later, when those lines
//!    have arrived, takes the shard's lock if it is free, reads the slot
//!    whose tag matches and starts loading the entry it points to.
//!
//! Everything here is a hint. A hint that is stale (the table grew since,
//! or a SWAPDB moved it) or wrong (a command whose first argument is not
//! a key) only costs the few instructions that issued it.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use kvik_prefetch::prefetch;

use crate::per_thread;

use super::{
    entry::same_key,
    hashing::{key_hasher, LINE},
    key_slot, Entry, Keyspace,
};

/// The keyspace size (its memory estimate) from which the frame scan
/// (the server's read-ahead) and multi-key locks ([`Keyspace::lock_keys`]) prefetch: the
/// size of a core's L2 cache, as the kernel reports it
/// ([`l2_cache_bytes`]), or [`DEFAULT_MIN_KEYSPACE_BYTES`] where it does not.
///
/// Below it most of the keyspace stays in the CPU's caches, and the scan's
/// own work (hashing every key ahead, a lock tried per key) costs more than
/// the prefetches save. Above it the lookups' cache misses dominate a
/// pipelined GET. Server CPU per 2 M GETs of 3-byte values with the scan
/// against without, medians of 5 alternating runs on a 2-core AMD EPYC VM
/// (1 MiB of L2 per core), redis-benchmark `-c 1 -P 1000` / `-c 50 -P 16`:
/// - 1,000 keys (about 45 KB): +19% / +6%;
/// - 10,000 keys (450 KB): +13% / −4%;
/// - 30,000 keys (1.35 MB): −25% / −15%;
/// - 95,000 keys (4.3 MB): −42% / −22%, and 58% / 19% more GETs per second.
///
/// On an Intel VM with a larger L2, 63,000 keys (3.5 MB) were about even,
/// which a fixed threshold could not serve on both machines.
pub fn min_keyspace_bytes() -> usize {
    static MIN: OnceLock<usize> = OnceLock::new();
    *MIN.get_or_init(|| l2_cache_bytes().unwrap_or(DEFAULT_MIN_KEYSPACE_BYTES))
}

/// [`min_keyspace_bytes`] where the kernel does not say how large L2 is.
pub const DEFAULT_MIN_KEYSPACE_BYTES: usize = 1 << 20;

/// The L2 cache of CPU 0 (data or unified), from Linux's sysfs.
fn l2_cache_bytes() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    // A CPU lists a handful of caches (`index0` to `index3` on x86-64).
    for entry in dir.flatten().take(16) {
        let path = entry.path();
        let read = |name: &str| std::fs::read_to_string(path.join(name)).ok();
        let level = read("level");
        let kind = read("type");
        if level.as_deref().map(str::trim) == Some("2") && kind.as_deref().map(str::trim) != Some("Instruction") {
            return read("size").as_deref().and_then(parse_cache_size);
        }
    }
    None
}

/// A sysfs cache size: `1024K`, `2M` or a number of bytes.
fn parse_cache_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let (digits, unit) = match text.strip_suffix('K') {
        Some(d) => (d, 1 << 10),
        None => match text.strip_suffix('M') {
            Some(d) => (d, 1 << 20),
            None => (text, 1),
        },
    };
    digits.parse::<usize>().ok()?.checked_mul(unit).filter(|&n| n > 0)
}

/// Control bytes a probe reads at once (`hashbrown`'s group width with SSE2).
const GROUP: usize = 16;

/// A shift that puts a table's bucket count (as a power of two) above any
/// user-space address.
const BUCKETS_SHIFT: u32 = 56;

/// Where one database's table in one shard keeps its control bytes, and
/// how many buckets it has, published for threads that hold no lock.
///
/// The table is `hashbrown`'s: buckets sit just below the control bytes,
/// bucket `i` at `ctrl - (i + 1) * size_of::<Entry>()`, and a probe for
/// hash `h` starts at group `h & (buckets - 1)`. A layout that ever
/// differed would make the hints useless, never wrong; the unit test below
/// checks it for the version in use.
#[derive(Debug, Default)]
pub struct TableHint(AtomicU64);

impl TableHint {
    /// The table's control bytes are at `ctrl`, and it has `buckets`
    /// buckets (a power of two).
    pub fn publish(&self, ctrl: usize, buckets: usize) {
        debug_assert!(buckets.is_power_of_two());
        let addr = ctrl as u64;
        let packed =
            if addr >> BUCKETS_SHIFT == 0 { addr | u64::from(buckets.trailing_zeros()) << BUCKETS_SHIFT } else { 0 };
        self.0.store(packed, Ordering::Relaxed);
    }

    /// The table has no storage (or none worth a hint).
    pub fn clear(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    /// The control bytes' address and the bucket mask, if published.
    fn read(&self) -> Option<(usize, usize)> {
        let packed = self.0.load(Ordering::Relaxed);
        if packed == 0 {
            return None;
        }
        let ctrl = (packed & ((1 << BUCKETS_SHIFT) - 1)) as usize;
        let mask = (1usize << (packed >> BUCKETS_SHIFT)) - 1;
        Some((ctrl, mask))
    }

    /// Start loading the control group where a probe for `hash` begins,
    /// and the slots it covers.
    ///
    /// The group is [`GROUP`] control bytes from `pos`, and may straddle two
    /// lines. Its slots run down from the one of `pos`, [`GROUP`] of them:
    /// the line of `pos`'s slot and the one below it hold the first 9 to
    /// 16, and a key sits in one of the first few nearly always (it took the
    /// first free slot when it was inserted).
    fn prefetch(&self, hash: u64) {
        if let Some((ctrl, mask)) = self.read() {
            let pos = (hash as usize) & mask;
            prefetch(ctrl.wrapping_add(pos));
            prefetch(ctrl.wrapping_add(pos + GROUP - 1));
            let first_slot = ctrl.wrapping_sub(size_of::<Entry>().wrapping_mul(pos + 1));
            prefetch(first_slot);
            prefetch(first_slot.wrapping_sub(LINE));
        }
    }
}

/// Where a database publishes its [`TableHint`]: its slot in the
/// keyspace's array.
#[derive(Debug, Clone)]
pub struct HintSlot {
    all: Arc<[TableHint]>,
    at: usize,
}

impl HintSlot {
    pub(super) fn new(all: &Arc<[TableHint]>, at: usize) -> HintSlot {
        HintSlot { all: Arc::clone(all), at }
    }

    pub(super) fn get(&self) -> Option<&TableHint> {
        self.all.get(self.at)
    }
}

/// A key a command is about to use, located: where its bytes are, its
/// slot, shard and hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ahead {
    addr: usize,
    len: usize,
    slot: u16,
    shard: usize,
    db: usize,
    hash: u64,
}

/// Remembers, while it lives, the slot and hash of the key of the command
/// about to run on this thread, which the scan computed when it located
/// the key: [`remembered_slot`] and [`remembered_hash`] answer for those
/// bytes, so the command does not compute them a second time.
///
/// The memo is keyed by the key's address and length in the connection's
/// buffer. That identifies the bytes only while the buffer is neither
/// changed nor freed, which holds while the frame loop runs without
/// yielding: keep a memo only around the one command, never across an
/// await (a clippy lint enforces it).
#[derive(Debug)]
#[must_use = "the key is remembered until this is dropped"]
pub struct KeyMemo {
    set: bool,
    /// Tied to this thread.
    _thread: std::marker::PhantomData<*const ()>,
}

impl KeyMemo {
    /// A memo that remembers nothing.
    pub fn none() -> KeyMemo {
        KeyMemo { set: false, _thread: std::marker::PhantomData }
    }

    /// Remember `at` for this thread until the memo is dropped.
    pub fn remember(at: &Ahead) -> KeyMemo {
        per_thread::with(|t| {
            t.memo_place.set((at.slot, at.hash));
            t.memo_key.set((at.addr, at.len));
        });
        KeyMemo { set: true, _thread: std::marker::PhantomData }
    }
}

impl Drop for KeyMemo {
    fn drop(&mut self) {
        if self.set {
            per_thread::with(|t| t.memo_key.set((0, 0)));
        }
    }
}

/// The remembered slot and hash, if `key` is those very bytes. (No key
/// lives at address 0, so the empty memo matches nothing.)
#[inline]
fn remembered(key: &[u8]) -> Option<(u16, u64)> {
    per_thread::with(|t| (t.memo_key.get() == (key.as_ptr().addr(), key.len())).then(|| t.memo_place.get()))
}

/// The hash slot of `key`, if it is the remembered key (see [`KeyMemo`]).
#[inline]
pub fn remembered_slot(key: &[u8]) -> Option<u16> {
    remembered(key).map(|(slot, _)| slot)
}

/// The table hash of `key`, if it is the remembered key (see [`KeyMemo`]).
#[inline]
pub fn remembered_hash(key: &[u8]) -> Option<u64> {
    remembered(key).map(|(_, hash)| hash)
}

impl Ahead {
    /// `key`, located as this one was, when it is the same key: what the
    /// scan's hashing and step 1 would give again, without doing them. Only
    /// when this key's bytes still lie in `buf`, the bytes being scanned.
    pub fn again(&self, buf: &[u8], key: &[u8]) -> Option<Ahead> {
        let mine = self.key_in(buf)?;
        same_key(mine, key).then(|| Ahead { addr: key.as_ptr().addr(), len: key.len(), ..*self })
    }

    /// The key's bytes, when they lie in `buf`.
    fn key_in<'b>(&self, buf: &'b [u8]) -> Option<&'b [u8]> {
        let start = self.addr.checked_sub(buf.as_ptr().addr())?;
        buf.get(start..start.checked_add(self.len)?)
    }

    /// Where the key lives, leaving out where its bytes were.
    #[doc(hidden)]
    pub fn place(&self) -> (usize, usize, u16, u64) {
        (self.shard, self.db, self.slot, self.hash)
    }

    /// Where the key's bytes were.
    #[doc(hidden)]
    pub fn addr_for_tests(&self) -> usize {
        self.addr
    }

    /// Whether the key's bytes lie within `buf`.
    #[doc(hidden)]
    pub fn within(&self, buf: &[u8]) -> bool {
        let start = buf.as_ptr().addr();
        start <= self.addr && self.addr + self.len <= start + buf.len()
    }
}

impl Keyspace {
    /// Step 1 for `key` in database `db`: start loading its shard's lock and
    /// the table lines its lookup reads first. Returns where the key is,
    /// for step 2.
    pub fn prefetch_table(&self, db: usize, key: &[u8]) -> Option<Ahead> {
        if db >= self.databases {
            return None;
        }
        let slot = key_slot(key);
        let shard = usize::from(slot) & (self.shards.len() - 1);
        let hash = key_hasher().hash_one(key);
        self.prefetch_lines(db, shard, hash)?;
        Some(Ahead { addr: key.as_ptr().addr(), len: key.len(), slot, shard, db, hash })
    }

    /// Step 1 for the key filed under `hash` in shard `shard` of database
    /// `db`; `None` when there is no such database.
    pub(super) fn prefetch_lines(&self, db: usize, shard: usize, hash: u64) -> Option<()> {
        prefetch(std::ptr::from_ref(self.shards.get(shard)?).addr());
        let table = db * self.shards.len() + shard;
        if let Some(&head) = self.db_heads.get(table) {
            prefetch(head);
            prefetch(head + LINE);
        }
        self.hints.get(table)?.prefetch(hash);
        Some(())
    }

    /// Step 2: start loading the entry a lookup of `at` will compare. Skips
    /// a shard whose lock another thread holds rather than wait for it.
    pub fn prefetch_entry(&self, at: Ahead) {
        if let Ok(shard) = self.shards[at.shard].try_lock() {
            if let Some(db) = shard.dbs.get(at.db) {
                db.prefetch_entry(at.hash);
            }
        }
    }
}

/// The two loads of a member lookup in a large hash or set, for commands
/// that name a member after their key (`HSET`, `SADD`, …): once the key's entry
/// is cached, [`MemberStep::Slot`] starts loading the control bytes and
/// slot of the member table, and one command later [`MemberStep::Entry`]
/// reads them and starts loading the entry they point to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberStep {
    /// The member table's control group and slot.
    Slot,
    /// The member's entry.
    Entry,
}

impl Keyspace {
    /// A member step for `at`'s value and the member filed under
    /// `member_hash`; `buf` holds the key's bytes (the bytes being
    /// scanned). Like step 2, skips a shard another thread holds. False
    /// when the value has no member table (a small hash or set, a string,
    /// no key): the frame needs no further member step.
    pub fn prefetch_member(&self, at: Ahead, buf: &[u8], member_hash: u64, step: MemberStep) -> bool {
        let Some(key) = at.key_in(buf) else { return false };
        match self.shards[at.shard].try_lock() {
            Ok(shard) => shard.dbs.get(at.db).is_some_and(|db| db.prefetch_member(at.hash, key, member_hash, step)),
            // Busy: this load is skipped, the next may find the shard free.
            Err(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::Meta;
    use hashbrown::HashTable;

    /// The layout the hints assume, for the `hashbrown` in use: bucket `i`
    /// sits `i + 1` elements below the control bytes, and a lookup's first
    /// probe group holds most keys.
    #[test]
    fn cache_sizes_read_as_sysfs_writes_them() {
        assert_eq!(parse_cache_size("1024K\n"), Some(1 << 20));
        assert_eq!(parse_cache_size("2M"), Some(2 << 20));
        assert_eq!(parse_cache_size("65536"), Some(65536));
        for bad in ["", "K", "0K", "-1K", "12Q", "99999999999999999999M"] {
            assert_eq!(parse_cache_size(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_threshold_is_a_plausible_cache_size() {
        let min = min_keyspace_bytes();
        assert!((64 << 10..=1 << 30).contains(&min), "{min}");
    }

    #[test]
    fn buckets_sit_below_the_control_bytes() {
        let hasher = key_hasher();
        let mut table: HashTable<Entry> = HashTable::new();
        let keys: Vec<Vec<u8>> = (0..5000).map(|i| format!("key:{i}").into_bytes()).collect();
        for key in &keys {
            let entry = Entry::string(key, b"v", None, crate::keyspace::Meta::new(0, false));
            table.insert_unique(hasher.hash_one(key), entry, |e| hasher.hash_one(e.key()));
        }
        let buckets = table.num_buckets();
        assert!(buckets.is_power_of_two());
        let first = table.iter().next().expect("a key");
        let at = table.find_bucket_index(hasher.hash_one(first.key()), |e| e.key() == first.key()).expect("found");
        let ctrl = std::ptr::from_ref(table.get_bucket(at).expect("full")).addr() + size_of::<Entry>() * (at + 1);
        let mut in_first_group = 0;
        for key in &keys {
            let hash = hasher.hash_one(key);
            let i = table.find_bucket_index(hash, |e| e.key() == &key[..]).expect("found");
            let addr = std::ptr::from_ref(table.get_bucket(i).expect("full")).addr();
            assert_eq!(addr, ctrl - size_of::<Entry>() * (i + 1), "bucket {i}");
            let start = (hash as usize) & (buckets - 1);
            if (i.wrapping_sub(start) & (buckets - 1)) < 16 {
                in_first_group += 1;
            }
        }
        assert!(in_first_group * 10 >= keys.len() * 9, "{in_first_group} of {} in the first group", keys.len());
    }

    /// A memo answers for the very bytes it was made for, and only while
    /// it lives. (A memo with a wrong slot and hash shows which answer came
    /// from it.)
    #[test]
    fn a_memo_answers_for_the_same_bytes_only_while_it_lives() {
        let ks = Keyspace::new(16, 1);
        let buf = b"GET user:1000 user:1000".to_vec();
        let (key, twin) = (&buf[4..13], &buf[14..]);
        assert_eq!(key, twin);
        let (slot, hash) = (key_slot(key), key_hasher().hash_one(key));
        let at = ks.prefetch_table(0, key).expect("a database");
        assert_eq!((at.slot, at.hash), (slot, hash));
        let fake = Ahead { slot: slot ^ 1, hash: hash ^ 1, ..at };
        {
            let _memo = KeyMemo::remember(&fake);
            assert_eq!((remembered_slot(key), remembered_hash(key)), (Some(slot ^ 1), Some(hash ^ 1)));
            assert_eq!(key_slot(key), slot ^ 1, "the memo answers for its bytes");
            assert_eq!(key_slot(twin), slot, "equal bytes elsewhere are computed");
            assert_eq!(key_slot(&buf[4..12]), key_slot(b"user:100"), "a prefix is another key");
            let none = KeyMemo::none();
            drop(none);
            assert_eq!(key_slot(key), slot ^ 1, "dropping an empty memo forgets nothing");
        }
        assert_eq!(key_slot(key), slot, "forgotten once dropped");
        assert_eq!(remembered_hash(key), None);
        std::thread::spawn(move || assert_eq!(remembered_slot(&buf[4..13]), None)).join().expect("thread");
    }

    #[test]
    fn a_hint_round_trips_and_refuses_what_it_cannot_pack() {
        let hint = TableHint::default();
        assert_eq!(hint.read(), None);
        hint.publish(0x7f12_3456_7890, 1 << 20);
        assert_eq!(hint.read(), Some((0x7f12_3456_7890, (1 << 20) - 1)));
        hint.publish(usize::MAX - 5, 16);
        assert_eq!(hint.read(), None);
        hint.publish(0x1000, 1);
        assert_eq!(hint.read(), Some((0x1000, 0)));
        hint.clear();
        assert_eq!(hint.read(), None);
    }

    /// Checks every key of `keys` in database `db` against the published
    /// hint: its bucket lies in the table the hint describes, and for most
    /// keys in the group a probe starts at.
    fn hints_match(ks: &Keyspace, db: usize, keys: &[String]) {
        let mut near = 0;
        for key in keys {
            let at = ks.prefetch_table(db, key.as_bytes()).expect("a database");
            let (ctrl, mask) = ks.hints[db * ks.shard_count() + at.shard].read().expect("published");
            let addr = ks.lock(at.shard).db(db).bucket_addr(key.as_bytes()).expect("the key");
            assert!(addr < ctrl && ctrl - addr <= size_of::<Entry>() * (mask + 1), "{key} outside its table");
            let bucket = (ctrl - addr) / size_of::<Entry>() - 1;
            if bucket.wrapping_sub(at.hash as usize & mask) & mask < 16 {
                near += 1;
            }
        }
        assert!(near * 10 >= keys.len() * 9, "{near} of {} keys in their first group", keys.len());
    }

    #[test]
    fn prefetching_finds_the_tables_each_database_publishes() {
        let ks = Keyspace::new(4, 2);
        for i in 0..2000 {
            let key = format!("k{i}");
            let mut shard = ks.lock_key(key.as_bytes());
            let meta = crate::keyspace::Meta::new(0, false);
            shard.db(i % 2).insert(Entry::string(key.as_bytes(), b"v", None, meta));
        }
        for i in 0..2000 {
            let key = format!("k{i}");
            let at = ks.prefetch_table(i % 2, key.as_bytes()).expect("a database");
            assert_eq!(at.shard, ks.shard_of(key.as_bytes()));
            let hint = ks.hints[at.db * ks.shard_count() + at.shard].read();
            assert!(hint.is_some(), "database {} of shard {} published its table", at.db, at.shard);
            ks.prefetch_entry(at);
        }
        assert_eq!(ks.prefetch_table(2, b"k1"), None, "no such database");
        let keys: Vec<String> = (0..2000).map(|i| format!("k{i}")).collect();
        let (even, odd): (Vec<_>, Vec<_>) =
            keys.iter().cloned().partition(|k| k[1..].parse::<usize>().unwrap_or(0) % 2 == 0);
        hints_match(&ks, 0, &even);
        hints_match(&ks, 1, &odd);
        // SWAPDB trades the tables, and each database number's hint follows.
        for shard in 0..ks.shard_count() {
            ks.lock(shard).swap_dbs(0, 1);
        }
        hints_match(&ks, 1, &even);
        hints_match(&ks, 0, &odd);
        // An emptied database takes its hint back until it holds keys again.
        for shard in 0..ks.shard_count() {
            ks.lock(shard).db(0).clear();
        }
        for shard in 0..ks.shard_count() {
            assert_eq!(ks.hints[shard].read(), None);
        }
        for key in &odd {
            ks.lock_key(key.as_bytes()).db(0).insert(Entry::string(key.as_bytes(), b"w", None, Meta::new(0, false)));
        }
        hints_match(&ks, 0, &odd);
    }
}
