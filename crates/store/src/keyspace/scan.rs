//! SCAN's cursor: which keys a call returns and where the next call resumes.
//!
//! SCAN promises that a key present for the whole iteration is returned at
//! least once, whatever is added or removed meanwhile. kvik walks the shards
//! in order, and inside a shard walks keys in the order of a fixed 50-bit
//! hash of the key (not the hash map's own order, which changes when the map
//! grows). The cursor is `shard << 50 | hash`: the next call resumes in that
//! shard at the first key whose hash is at least `hash`. Keys that stay in
//! the database keep their shard and their hash, so every one of them is
//! reached exactly once; keys added behind the cursor are simply not seen.
//!
//! A call never stops between two keys with the same hash (a group larger
//! than COUNT is returned whole), so no key is skipped or repeated even when
//! hashes collide. Each visited shard costs one linear pass over that
//! shard's keys of the database (a selection, not a sort), which stays small
//! because there are many shards.

use super::{Entry, Keyspace};

/// Bits of the cursor that hold the position inside a shard.
pub const POSITION_BITS: u32 = 50;
const POSITION_MASK: u64 = (1 << POSITION_BITS) - 1;

/// The position of `key` inside its shard's iteration order.
///
/// A fixed function of the key's bytes (FNV-1a, then a 64-bit finaliser so
/// that the top bits are well mixed), so the order never changes while the
/// key exists.
pub fn position(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h >> (64 - POSITION_BITS)
}

impl Keyspace {
    /// One SCAN step over database `db` from `cursor`, visiting about
    /// `count` keys; `keep` decides which visited keys are returned (MATCH,
    /// TYPE, expiry). Returns the next cursor (0 when done) and the keys.
    ///
    /// Shards are locked one at a time, so a scan never blocks the server.
    pub fn scan(
        &self,
        db: usize,
        cursor: u64,
        count: usize,
        keep: impl FnMut(&[u8], &Entry) -> bool,
    ) -> (u64, Vec<Vec<u8>>) {
        self.scan_expiring(db, cursor, count, |_| false, keep)
    }

    /// [`Keyspace::scan`] that also removes the expired keys it visits whose
    /// name `expire` accepts (SCAN's MATCH), as Redis's SCAN does, so they
    /// are announced and counted as expired; they are never returned.
    pub fn scan_expiring(
        &self,
        db: usize,
        cursor: u64,
        count: usize,
        mut expire: impl FnMut(&[u8]) -> bool,
        mut keep: impl FnMut(&[u8], &Entry) -> bool,
    ) -> (u64, Vec<Vec<u8>>) {
        let count = count.max(1);
        let shards = self.shard_count();
        let mut shard = usize::try_from(cursor >> POSITION_BITS).unwrap_or(usize::MAX);
        let mut from = cursor & POSITION_MASK;
        let mut visited = 0;
        let mut out = Vec::new();
        while shard < shards && visited < count {
            let mut guard = self.lock(shard);
            let d = guard.db(db);
            let mut candidates: Vec<(u64, &[u8], &Entry)> =
                d.entries().map(|e| (position(e.key()), e.key(), e)).filter(|(p, _, _)| *p >= from).collect();
            let want = count - visited;
            // Return the `want` lowest positions, never splitting a group of
            // equal positions: everything below the first position left out,
            // or, when one group fills the whole page, that group entirely.
            let (taken, resume) = if candidates.len() <= want {
                (candidates.len(), None)
            } else {
                candidates.select_nth_unstable_by_key(want, |c| c.0);
                let boundary = candidates[want].0;
                let below = partition(&mut candidates[..want], |c| c.0 < boundary);
                if below > 0 {
                    (below, Some(boundary))
                } else {
                    let group = partition(&mut candidates, |c| c.0 == boundary);
                    (group, boundary.checked_add(1))
                }
            };
            let now = super::now_ms();
            let mut expired = Vec::new();
            for (_, k, e) in &candidates[..taken] {
                if e.is_expired(now) && expire(k) {
                    expired.push(k.to_vec());
                } else if keep(k, e) {
                    out.push(k.to_vec());
                }
            }
            // As in Redis, the matching keys met that have expired go now.
            for k in &expired {
                d.inspect(k, now);
            }
            visited += taken;
            match resume {
                Some(position) if position <= POSITION_MASK => from = position,
                _ => {
                    shard += 1;
                    from = 0;
                }
            }
        }
        if shard >= shards {
            return (0, out);
        }
        // Shard indexes are below 16384, so they fit above the position bits.
        ((shard as u64) << POSITION_BITS | from, out)
    }
}

/// Move the items satisfying `pred` to the front; returns how many there are.
fn partition<T>(items: &mut [T], mut pred: impl FnMut(&T) -> bool) -> usize {
    let mut front = 0;
    for i in 0..items.len() {
        if pred(&items[i]) {
            items.swap(front, i);
            front += 1;
        }
    }
    front
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(ks: &Keyspace, key: &[u8]) {
        ks.lock_key(key).db(0).set_string(key, b"v", None);
    }

    fn scan_all(ks: &Keyspace, count: usize, mut between: impl FnMut(usize)) -> Vec<Vec<u8>> {
        let mut cursor = 0;
        let mut seen = Vec::new();
        let mut step = 0;
        loop {
            let (next, keys) = ks.scan(0, cursor, count, |_, _| true);
            seen.extend(keys);
            if next == 0 {
                return seen;
            }
            between(step);
            step += 1;
            cursor = next;
        }
    }

    #[test]
    fn a_full_scan_returns_every_key_once() {
        let ks = Keyspace::new(16, 1);
        for i in 0..1000 {
            add(&ks, format!("key:{i}").as_bytes());
        }
        for count in [1, 7, 100, 5000] {
            let mut seen = scan_all(&ks, count, |_| {});
            seen.sort();
            let len = seen.len();
            seen.dedup();
            assert_eq!((len, seen.len()), (1000, 1000), "COUNT {count}");
        }
    }

    #[test]
    fn keys_present_throughout_are_returned_despite_changes() {
        let ks = Keyspace::new(8, 1);
        for i in 0..500 {
            add(&ks, format!("stable:{i}").as_bytes());
            add(&ks, format!("gone:{i}").as_bytes());
        }
        let seen = scan_all(&ks, 10, |step| {
            for j in 0..20 {
                add(&ks, format!("new:{step}:{j}").as_bytes());
            }
            for j in 0..5 {
                let k = format!("gone:{}", step * 5 + j);
                ks.lock_key(k.as_bytes()).db(0).remove(k.as_bytes());
            }
        });
        for i in 0..500 {
            let k = format!("stable:{i}").into_bytes();
            assert!(seen.contains(&k), "stable:{i} was missed");
        }
    }

    #[test]
    fn the_cursor_is_zero_for_an_empty_database_and_after_the_last_shard() {
        let ks = Keyspace::new(4, 1);
        assert_eq!(ks.scan(0, 0, 10, |_, _| true), (0, vec![]));
        assert_eq!(ks.scan(0, u64::MAX, 10, |_, _| true), (0, vec![]));
        add(&ks, b"k");
        assert_eq!(ks.scan(0, 0, 10, |_, _| true), (0, vec![b"k".to_vec()]));
    }
}
