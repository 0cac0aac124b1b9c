//! A point-in-time view of a database that a background saver reads while
//! commands keep changing it: the keyspace's half of `BGSAVE` without fork.
//!
//! Redis forks, and the kernel copies every 4 KB page the parent writes
//! while the child saves: a pause for the fork that grows with the page
//! tables, and up to twice the memory under heavy writes. Here the unit of
//! copying is a key, and the pause is a flag flipped per database:
//!
//! * **One bit per key, free.** Every entry's `kvik-thin` pointer has a
//!   spare bit (bit 1, see [`Entry::is_marked`]). A database keeps the
//!   value that bit has on keys that are *saved* (`saved_mark` in [`Db`]).
//!   Outside a snapshot every key carries it.
//! * **The moment.** [`Db::begin_snapshot`] flips `saved_mark`, under the
//!   shard's lock, while the caller holds every shard (`lock_all`): every
//!   key now reads as not saved, and the snapshot is the keyspace as it is
//!   at that moment. That is O(databases), not O(keys).
//! * **Copy before change.** While the snapshot runs, the write paths of
//!   [`Db`] hand a key that is not saved yet to [`keep`] before they change
//!   or remove it: it is cloned into the database's copy list and marked
//!   saved. A key removed outright is moved there, not cloned. Keys created
//!   meanwhile are born saved, so they are not part of the snapshot. A
//!   flushed table is set aside whole ([`Db::clear`]), in O(1).
//! * **The saver walks in slices.** [`Db::snapshot_slice`] visits a bounded
//!   number of the table's buckets in order, hands each key not yet saved
//!   to the saver and marks it. The table may grow or rehash between
//!   slices and move keys behind the walk: the database counts the keys
//!   still unsaved, and the walk starts over from the first bucket until
//!   that count is zero (saved keys are skipped at the cost of a bit test),
//!   so no key is missed and none is written twice.
//! * **The end.** When a database has no unsaved key and its copies and
//!   set-aside tables are taken ([`Db::take_snapshot_leftovers`]),
//!   [`Db::end_snapshot`] turns the write paths' check off again. Every key
//!   then carries `saved_mark`, ready for the next flip.
//!
//! The extra memory is the copies of keys changed before the saver reached
//! them (at most what changes during the snapshot, by key, not by page),
//! counted in [`Leftovers::copied_bytes`] for `INFO`.
//!
//! The state and the write paths' hooks live here; the walk is
//! [`Db`]'s own (in `db.rs`), as it reads the table.
//!
//! [`Db`]: super::db::Db
//! [`Db::begin_snapshot`]: super::db::Db::begin_snapshot
//! [`Db::clear`]: super::db::Db::clear
//! [`Db::snapshot_slice`]: super::db::Db::snapshot_slice
//! [`Db::take_snapshot_leftovers`]: super::db::Db::take_snapshot_leftovers
//! [`Db::end_snapshot`]: super::db::Db::end_snapshot

use hashbrown::HashTable;

use super::entry::Entry;

/// What a running snapshot keeps for one database.
#[derive(Debug)]
pub(super) struct SnapshotState {
    /// The database's number when the snapshot began: `SWAPDB` moves the
    /// contents, and this state with them, to another number.
    pub(super) number: usize,
    /// Keys in the table not saved yet (marked `!saved_mark`).
    pub(super) unsaved: usize,
    /// The next bucket the walk visits.
    pub(super) cursor: usize,
    /// The table's bucket count when the walk last looked.
    pub(super) buckets: usize,
    /// Keys as they were at the moment, copied before a change.
    pub(super) copies: Vec<Entry>,
    /// Tables flushed during the snapshot, with the keys they still held.
    pub(super) detached: Vec<HashTable<Entry>>,
    /// Memory estimate of the tables set aside, bytes (the copies are
    /// counted when the saver takes them).
    pub(super) detached_bytes: usize,
}

/// What a database handed over since the saver last asked: keys copied
/// before a change, and tables flushed during the snapshot.
#[derive(Debug, Default)]
pub struct Leftovers {
    pub(super) copies: Vec<Entry>,
    pub(super) detached: Vec<HashTable<Entry>>,
    pub(super) saved_mark: bool,
    /// Memory estimate of the copies and set-aside tables handed over.
    pub copied_bytes: usize,
}

impl Leftovers {
    /// True when there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.copies.is_empty() && self.detached.is_empty()
    }

    /// Every key of the snapshot among the leftovers, each once: all the
    /// copies, and the keys of set-aside tables the walk had not reached.
    pub fn for_each(&self, mut f: impl FnMut(&Entry)) {
        self.copies.iter().for_each(&mut f);
        for table in &self.detached {
            table.iter().filter(|e| e.is_marked() != self.saved_mark).for_each(&mut f);
        }
    }
}

/// How far a walk got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// More keys are left; call again.
    More,
    /// Every key of the snapshot in the table was handed over.
    Done,
}

/// Hand `entry` to the running snapshot before it changes: cloned into the
/// copy list and marked saved, unless it is saved already. The write paths
/// call this with their own fields so that the table can stay borrowed.
#[inline]
pub(super) fn keep(running: bool, saved_mark: bool, state: &mut Option<Box<SnapshotState>>, entry: &mut Entry) {
    if running && entry.is_marked() != saved_mark {
        keep_copy(saved_mark, state, entry);
    }
}

#[cold]
#[inline(never)]
fn keep_copy(saved_mark: bool, state: &mut Option<Box<SnapshotState>>, entry: &mut Entry) {
    let Some(s) = state.as_mut() else { return };
    s.copies.push(entry.clone());
    s.unsaved -= 1;
    entry.set_marked(saved_mark);
}

/// [`keep`] for an entry already out of the table and about to be
/// dropped: moved into the copy list rather than cloned.
#[inline]
pub(super) fn keep_removed(running: bool, saved_mark: bool, state: &mut Option<Box<SnapshotState>>, entry: Entry) {
    if running && entry.is_marked() != saved_mark {
        if let Some(s) = state.as_mut() {
            s.unsaved -= 1;
            s.copies.push(entry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::db::Db;
    use crate::types::Value;
    use std::collections::BTreeMap;

    fn val(s: &str) -> Value {
        Value::Str(crate::types::string::StrValue::from_bytes(s.as_bytes()))
    }

    /// Everything a finished snapshot handed over, key by key.
    fn drain(db: &mut Db, budget: usize) -> BTreeMap<Vec<u8>, String> {
        let mut got = BTreeMap::new();
        let mut add = |e: &Entry| {
            let text = format!("{:?}", e.value().to_owned());
            assert!(got.insert(e.key().to_vec(), text).is_none(), "{:?} handed over twice", e.key());
        };
        loop {
            let walk = db.snapshot_slice(budget, budget, &mut add);
            db.take_snapshot_leftovers().for_each(&mut add);
            if walk == Walk::Done && db.end_snapshot() {
                break;
            }
        }
        got
    }

    fn contents(db: &Db) -> BTreeMap<Vec<u8>, String> {
        db.entries().map(|e| (e.key().to_vec(), format!("{:?}", e.value().to_owned()))).collect()
    }

    #[test]
    fn a_snapshot_is_the_table_at_its_beginning() {
        let mut db = Db::default();
        for i in 0..1000 {
            db.set(format!("k{i}").as_bytes(), val(&format!("v{i}")), None);
        }
        let before = contents(&db);
        db.begin_snapshot(0);
        // Changes of every kind while the saver has walked part of the table.
        let mut handed = BTreeMap::new();
        db.snapshot_slice(300, 100, |e| {
            handed.insert(e.key().to_vec(), format!("{:?}", e.value().to_owned()));
        });
        for i in 0..1000 {
            match i % 5 {
                0 => db.set(format!("k{i}").as_bytes(), val("new"), None),
                1 => {
                    db.remove(format!("k{i}").as_bytes());
                }
                2 => db.set(format!("n{i}").as_bytes(), val("born later"), None),
                3 => {
                    db.set_expire(format!("k{i}").as_bytes(), Some(1));
                }
                _ => {}
            }
        }
        let rest = drain(&mut db, 64);
        assert!(rest.keys().all(|k| !handed.contains_key(k)), "no key handed over twice");
        handed.extend(rest);
        assert_eq!(handed, before, "the keys and values of the beginning, none born later");
        assert_eq!(db.snapshot_number(), None);
        // Every key now carries the saved mark: a second snapshot sees all.
        db.begin_snapshot(0);
        assert_eq!(drain(&mut db, 1000), contents(&db));
    }

    /// The model: any interleaving of writes, flushes and slices hands
    /// over exactly the table as it was when the snapshot began.
    #[test]
    fn any_interleaving_hands_over_exactly_the_beginning() {
        let mut seed = 0x1234_5678_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..60 {
            let mut db = Db::default();
            let keys = 50 + (next() % 2000) as usize;
            for i in 0..keys {
                db.set(format!("k{}", next() % (keys as u64 * 2)).as_bytes(), val(&i.to_string()), None);
            }
            for i in 0..50 {
                let name = format!("coll{i}");
                let _ = crate::keyspace::typed::push_list(&mut db, name.as_bytes(), 0, false, &[b"first"], true);
            }
            let before = contents(&db);
            db.begin_snapshot(0);
            let mut got = BTreeMap::new();
            let mut add = |e: &Entry| {
                let text = format!("{:?}", e.value().to_owned());
                assert!(got.insert(e.key().to_vec(), text).is_none(), "handed over twice");
            };
            let budget = 1 + (next() % 200) as usize;
            let mut born = 0;
            loop {
                for _ in 0..(next() % 40) {
                    let key = format!("k{}", next() % (keys as u64 * 3));
                    match next() % 13 {
                        0..=3 => db.set(key.as_bytes(), val("changed"), None),
                        4 | 5 => drop(db.remove(key.as_bytes())),
                        6 => {
                            db.change(key.as_bytes(), 0, |e| {
                                if let Some(e) = e {
                                    *e.value_mut() = val("in place");
                                }
                            });
                        }
                        7 => {
                            db.set_expire(key.as_bytes(), Some(i64::MAX / 2));
                        }
                        8 => drop(db.take(key.as_bytes(), 0)),
                        // Packed lists and hashes edited in place, rewritten,
                        // then boxed past their limits, and packed again.
                        11 => {
                            let name = format!("coll{}", next() % 50);
                            let element = "e".repeat((next() % 80) as usize);
                            if next() % 2 == 0 {
                                let _ = crate::keyspace::typed::push_list(
                                    &mut db,
                                    name.as_bytes(),
                                    0,
                                    false,
                                    &[element.as_bytes()],
                                    true,
                                );
                            } else {
                                let field = format!("f{}", next() % 200);
                                let limits = crate::types::hash::HashLimits::default();
                                let pairs: [(&[u8], &[u8]); 1] = [(field.as_bytes(), element.as_bytes())];
                                let _ = crate::keyspace::typed::set_hash_fields(
                                    &mut db,
                                    format!("h{name}").as_bytes(),
                                    0,
                                    &pairs,
                                    limits,
                                );
                            }
                            if next() % 5 == 0 {
                                db.set_expire(name.as_bytes(), Some(i64::MAX / 3));
                            }
                        }
                        9 if round % 7 == 0 && next() % 50 == 0 => db.clear(),
                        // Many new keys at once: the table grows under the walk.
                        10 if born < 4 * keys => {
                            born += 300;
                            for j in 0..(next() % 300) {
                                db.set(format!("new{round}-{j}-{}", next()).as_bytes(), val("born"), None);
                            }
                        }
                        _ => {}
                    }
                }
                let walk = db.snapshot_slice(budget, budget, &mut add);
                db.take_snapshot_leftovers().for_each(&mut add);
                if walk == Walk::Done && db.end_snapshot() {
                    break;
                }
            }
            assert_eq!(got, before, "round {round}");
            db.begin_snapshot(1);
            assert_eq!(drain(&mut db, 97), contents(&db), "round {round}: every key saved-marked after the end");
        }
    }

    /// `SWAPDB` during a snapshot moves each database's state with its
    /// keys: the snapshot still writes each database under the number it
    /// had when the snapshot began.
    #[test]
    fn swapped_databases_keep_their_snapshot_numbers() {
        let ks = crate::keyspace::Keyspace::new(4, 3);
        for i in 0..200 {
            let key = format!("k{i}");
            let mut shard = ks.lock_key(key.as_bytes());
            shard.db(i % 3).set(key.as_bytes(), val(&format!("db{}", i % 3)), None);
        }
        let mut before: Vec<BTreeMap<Vec<u8>, String>> = vec![BTreeMap::new(); 3];
        {
            let mut all = ks.lock_all();
            for shard in all.shards() {
                for (n, db) in shard.dbs().iter_mut().enumerate() {
                    before[n].extend(contents(db));
                    db.begin_snapshot(n);
                }
            }
        }
        for shard in 0..ks.shard_count() {
            let mut guard = ks.lock(shard);
            guard.swap_dbs(0, 2);
            guard.db(0).set(b"after-swap", val("new"), None);
        }
        for (n, want) in before.iter().enumerate() {
            let mut got = BTreeMap::new();
            for shard in 0..ks.shard_count() {
                let mut guard = ks.lock(shard);
                let db = guard.snapshot_db(n).expect("a database of the snapshot");
                got.extend(drain(db, 7));
            }
            assert_eq!(&got, want, "database {n} as it was");
        }
    }

    #[test]
    fn slices_are_bounded() {
        let mut db = Db::default();
        for i in 0..10_000 {
            db.set(format!("k{i}").as_bytes(), val("v"), None);
        }
        db.begin_snapshot(0);
        let mut n = 0;
        assert_eq!(db.snapshot_slice(1_000_000, 10, |_| n += 1), Walk::More);
        assert_eq!(n, 10, "at most max_keys");
        let mut m = 0;
        db.snapshot_slice(16, 1_000_000, |_| m += 1);
        assert!(m <= 16, "at most max_buckets");
        assert_eq!(db.snapshot_unsaved(), 10_000 - n - m);
        assert!(!db.end_snapshot(), "not over while keys are left");
    }
}
