//! A script run's undo log: what each key held before the run first
//! changed it, so that a run that has to start over (it needed a shard
//! another transaction holds, see docs/scripting.md) can be put back as if
//! it never happened.
//!
//! The copy is taken before the write, under the reservation that keeps
//! every other thread off the key's shard, and the restore happens under
//! the same reservation; so nobody ever sees the change or the restore.
//! Keys the script only reads cost nothing; a written key costs one copy of
//! its value, once per run however often it is written.

use std::collections::HashSet;

use crate::keyspace::{Entry, Keyspace};

/// Most keys one run may log: a script writing more than this many keys
/// without holding every shard reserves every shard instead (see
/// [`UndoLog::full`]), so the log's memory is bounded.
pub const MAX_KEYS: usize = 100_000;

/// Up to this many logged keys, a key is looked for in the log itself.
const SCAN_KEYS: usize = 16;

/// The keys a run changed, each as it was before its first change.
#[derive(Default)]
pub struct UndoLog {
    /// (database, key, the entry before the change or none), in the order
    /// the keys were first changed.
    saved: Vec<(usize, Box<[u8]>, Option<Entry>)>,
    /// The keys in `saved`, by database, to keep one copy per key; made
    /// only once the log outgrows [`SCAN_KEYS`] (until then `saved` is
    /// searched).
    seen: Vec<(usize, HashSet<Box<[u8]>>)>,
}

impl UndoLog {
    /// Whether the log has reached [`MAX_KEYS`].
    pub fn full(&self) -> bool {
        self.saved.len() >= MAX_KEYS
    }

    /// Keep what `key` of database `db` holds now, unless this run already
    /// kept it. The caller holds the key's shard in its reservation.
    pub fn save(&mut self, keyspace: &Keyspace, db: usize, key: &[u8]) {
        if self.holds(db, key) {
            return;
        }
        let before = keyspace.lock_key(key).db(db).find_stale(key).cloned();
        self.saved.push((db, key.into(), before));
        match self.saved.len() {
            n if n == SCAN_KEYS + 1 => {
                for (d, k, _) in &self.saved {
                    Self::seen_in(&mut self.seen, *d).insert(k.clone());
                }
            }
            n if n > SCAN_KEYS + 1 => {
                Self::seen_in(&mut self.seen, db).insert(key.into());
            }
            _ => {}
        }
    }

    /// Whether `key` of database `db` is logged already.
    fn holds(&self, db: usize, key: &[u8]) -> bool {
        if self.saved.len() <= SCAN_KEYS {
            return self.saved.iter().any(|(d, k, _)| *d == db && **k == *key);
        }
        self.seen.iter().any(|(d, set)| *d == db && set.contains(key))
    }

    /// The set of database `db`'s logged keys.
    fn seen_in(seen: &mut Vec<(usize, HashSet<Box<[u8]>>)>, db: usize) -> &mut HashSet<Box<[u8]>> {
        let at = match seen.iter().position(|(d, _)| *d == db) {
            Some(at) => at,
            None => {
                seen.push((db, HashSet::new()));
                seen.len() - 1
            }
        };
        &mut seen[at].1
    }

    /// Put every kept key back, the last changed first.
    pub fn restore(&mut self, keyspace: &Keyspace) {
        self.seen.clear();
        while let Some((db, key, before)) = self.saved.pop() {
            keyspace.lock_key(&key).db(db).restore(&key, before);
        }
    }

    /// Forget the log (the run stands, or can no longer be undone).
    pub fn clear(&mut self) {
        self.saved.clear();
        self.seen.clear();
    }
}
