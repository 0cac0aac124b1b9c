//! The hash table inside large hashes and sets: members (fields) with
//! their values (none for a set) in a dense array, found through a table
//! of positions.
//!
//! The dense array gives `HRANDFIELD`, `SPOP` and `SRANDMEMBER` a uniform
//! pick in O(1) and `HSCAN` and `SSCAN` a cursor that is a position. A
//! removal moves the last entry into the gap, so positions stay dense and
//! the order is insertion order until the first removal.
//!
//! The table is `hashbrown`'s, holding positions. It is ours rather than a
//! library's map because a pipelined `HSET` or `SADD` on a value larger
//! than the CPU's caches waits on three misses in a row (the control bytes,
//! the slot, the entry), and the connection's read-ahead can start those
//! loads a few commands early only with the table's address in hand
//! ([`TableAddress`], also used by large sorted sets;
//! [`MemberTable::prefetch_slot`], [`MemberTable::prefetch_entry`]).

use std::fmt;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use kvik_prefetch::prefetch;

use super::compact::{CompactBytes, MemberHasher};

/// Members with values, in a dense array indexed by a hash table.
pub struct MemberTable<V> {
    entries: Vec<(CompactBytes, V)>,
    /// Positions in `entries`, hashed by their member.
    index: HashTable<usize>,
    hasher: MemberHasher,
    /// Where `index` is, found again whenever its bucket count changes.
    at: TableAddress,
}

/// Where a `hashbrown` table keeps its control bytes (0 when it has none)
/// and its bucket mask, noted for prefetches: bucket `i` sits at
/// `ctrl - (i + 1) * size_of::<T>()`, and a probe for hash `h` starts at
/// `h & mask`. The unit tests check that layout for the `hashbrown` in
/// use; only prefetches use it, so a layout that differed would make them
/// useless, not wrong. The table's API gives no other way to its address
/// than the bucket of an element.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TableAddress {
    ctrl: usize,
    mask: usize,
}

impl TableAddress {
    /// The address of `table`, from the bucket of the element that `eq`
    /// finds under `hash` (none when there is no such element).
    pub fn of<T>(table: &HashTable<T>, hash: u64, eq: impl FnMut(&T) -> bool) -> TableAddress {
        let bucket = table.find_bucket_index(hash, eq);
        match bucket.and_then(|b| Some((b, std::ptr::from_ref(table.get_bucket(b)?).addr()))) {
            Some((b, addr)) => TableAddress { ctrl: addr + size_of::<T>() * (b + 1), mask: table.num_buckets() - 1 },
            None => TableAddress::default(),
        }
    }

    /// True when no address is noted.
    pub fn is_unknown(self) -> bool {
        self.ctrl == 0
    }

    /// Start loading the control bytes and the bucket of a table of `T`
    /// where a lookup of `hash` begins.
    #[inline]
    pub fn prefetch_slot<T>(self, hash: u64) {
        if self.ctrl != 0 {
            let pos = (hash as usize) & self.mask;
            prefetch(self.ctrl.wrapping_add(pos));
            prefetch(self.ctrl.wrapping_sub(size_of::<T>().wrapping_mul(pos + 1)));
        }
    }
}

/// What [`MemberTable::insert`] did.
#[derive(Debug, PartialEq)]
pub enum Inserted<'a, V> {
    /// The member was there; this was its value.
    Replaced(V),
    /// The member is new, stored as this.
    Added(&'a CompactBytes),
}

impl<V> Default for MemberTable<V> {
    fn default() -> Self {
        MemberTable {
            entries: Vec::new(),
            index: HashTable::new(),
            hasher: MemberHasher::default(),
            at: TableAddress::default(),
        }
    }
}

impl<V> MemberTable<V> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty table with room for `n` members.
    pub fn with_capacity(n: usize) -> Self {
        MemberTable { entries: Vec::with_capacity(n), index: HashTable::with_capacity(n), ..Self::default() }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no members.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes the table holds on the heap, members' own heap bytes left out:
    /// the entries' array and the table of positions with its control bytes.
    pub fn heap_size(&self) -> usize {
        self.entries.capacity() * size_of::<(CompactBytes, V)>() + self.index.num_buckets() * (size_of::<usize>() + 1)
    }

    /// The hash the table files `member` under: that of the process-wide
    /// [`MemberHasher`], so a scan can compute it ahead of the command.
    pub fn hash(member: &[u8]) -> u64 {
        MemberHasher::default().hash_one(member)
    }

    /// Position of `member`.
    pub fn position(&self, member: &[u8]) -> Option<usize> {
        self.position_hashed(self.hasher.hash_one(member), member)
    }

    /// Position of `member`, filed under `hash`.
    fn position_hashed(&self, hash: u64, member: &[u8]) -> Option<usize> {
        let entries = &self.entries;
        self.index.find(hash, |&i| entries[i].0.as_slice() == member).copied()
    }

    /// The value of `member`.
    pub fn get(&self, member: &[u8]) -> Option<&V> {
        self.position(member).map(|i| &self.entries[i].1)
    }

    /// The value of `member`, to change in place.
    pub fn get_mut(&mut self, member: &[u8]) -> Option<&mut V> {
        self.position(member).map(|i| &mut self.entries[i].1)
    }

    /// The member and value at position `i`.
    pub fn get_index(&self, i: usize) -> Option<(&CompactBytes, &V)> {
        self.entries.get(i).map(|(m, v)| (m, v))
    }

    /// Members and values in position order.
    pub fn iter(&self) -> impl Iterator<Item = (&CompactBytes, &V)> + '_ {
        self.entries.iter().map(|(m, v)| (m, v))
    }

    /// Members in position order.
    pub fn members(&self) -> impl Iterator<Item = &CompactBytes> + '_ {
        self.entries.iter().map(|(m, _)| m)
    }

    /// Set `member` to `value`: replaced in place when present (keeping its
    /// position), added at the end otherwise.
    pub fn insert(&mut self, member: &[u8], value: V) -> Inserted<'_, V> {
        let hash = self.hasher.hash_one(member);
        if let Some(i) = self.position_hashed(hash, member) {
            return Inserted::Replaced(std::mem::replace(&mut self.entries[i].1, value));
        }
        let at = self.push(hash, CompactBytes::new(member), value);
        Inserted::Added(&self.entries[at].0)
    }

    /// Change the value of `member` in place with `update` when present;
    /// otherwise add it at the end with the value `make` gives. The new
    /// member and its value, or `None` when it was there.
    pub fn upsert(
        &mut self,
        member: &[u8],
        update: impl FnOnce(&mut V),
        make: impl FnOnce() -> V,
    ) -> Option<(&CompactBytes, &V)> {
        let hash = self.hasher.hash_one(member);
        if let Some(i) = self.position_hashed(hash, member) {
            update(&mut self.entries[i].1);
            return None;
        }
        let at = self.push(hash, CompactBytes::new(member), make());
        let (member, value) = &self.entries[at];
        Some((member, value))
    }

    /// Add `member`, which is not in the table, at the end; its position.
    fn push(&mut self, hash: u64, member: CompactBytes, value: V) -> usize {
        let at = self.entries.len();
        let buckets = self.index.num_buckets();
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index.insert_unique(hash, at, |&i| hasher.hash_one(entries[i].0.as_slice()));
        self.entries.push((member, value));
        if self.index.num_buckets() != buckets || self.at.is_unknown() {
            self.at = TableAddress::of(&self.index, hash, |&j| j == at);
        }
        at
    }

    /// Remove `member`, filling its position with the last entry.
    pub fn swap_remove(&mut self, member: &[u8]) -> Option<(CompactBytes, V)> {
        let hash = self.hasher.hash_one(member);
        let entries = &self.entries;
        let (at, _) = self.index.find_entry(hash, |&i| entries[i].0.as_slice() == member).ok()?.remove();
        Some(self.fill_gap(at))
    }

    /// Remove the entry at position `i`, filling it with the last entry.
    pub fn swap_remove_index(&mut self, i: usize) -> Option<(CompactBytes, V)> {
        let hash = self.hasher.hash_one(self.entries.get(i)?.0.as_slice());
        let found = self.index.find_entry(hash, |&j| j == i);
        debug_assert!(found.is_ok(), "every position is in the table");
        found.ok()?.remove();
        Some(self.fill_gap(i))
    }

    /// Take out entry `at`, whose position is no longer in the table, and
    /// move the last entry into it.
    fn fill_gap(&mut self, at: usize) -> (CompactBytes, V) {
        let last = self.entries.len() - 1;
        if at != last {
            let hash = self.hasher.hash_one(self.entries[last].0.as_slice());
            let moved = self.index.find_mut(hash, |&j| j == last);
            debug_assert!(moved.is_some(), "every position is in the table");
            if let Some(pos) = moved {
                *pos = at;
            }
        }
        self.entries.swap_remove(at)
    }

    /// The entries, in position order, the table given up.
    pub fn into_entries(self) -> Vec<(CompactBytes, V)> {
        self.entries
    }

    /// Start loading the control bytes and the slot where a lookup of a
    /// member filed under `hash` begins.
    #[inline]
    pub fn prefetch_slot(&self, hash: u64) {
        self.at.prefetch_slot::<usize>(hash);
    }

    /// Start loading the entry a lookup of `hash` compares first (reading
    /// the control bytes and slot [`MemberTable::prefetch_slot`] loaded).
    /// Both of the lines an entry may straddle.
    #[inline]
    pub fn prefetch_entry(&self, hash: u64) {
        if let Some(entry) = self.index.iter_hash(hash).next().and_then(|&i| self.entries.get(i)) {
            let addr = std::ptr::from_ref(entry).addr();
            prefetch(addr);
            prefetch(addr + size_of::<(CompactBytes, V)>() - 1);
            // A member kept on the heap is not followed: reading where it
            // is would wait for the very load just started.
        }
    }
}

impl<V> FromIterator<(CompactBytes, V)> for MemberTable<V> {
    /// A table of `pairs`; a member that comes again keeps its first
    /// position and takes the later value.
    fn from_iter<I: IntoIterator<Item = (CompactBytes, V)>>(pairs: I) -> Self {
        let mut table = MemberTable::new();
        for (member, value) in pairs {
            let hash = table.hasher.hash_one(member.as_slice());
            let entries = &table.entries;
            match table.index.find(hash, |&i| entries[i].0 == member) {
                Some(&i) => table.entries[i].1 = value,
                None => {
                    table.push(hash, member, value);
                }
            }
        }
        table
    }
}

impl<V: Clone> Clone for MemberTable<V> {
    fn clone(&self) -> Self {
        let mut copy = MemberTable {
            entries: self.entries.clone(),
            index: self.index.clone(),
            hasher: self.hasher.clone(),
            at: TableAddress::default(),
        };
        if let Some((first, _)) = copy.entries.first() {
            let hash = copy.hasher.hash_one(first.as_slice());
            copy.at = TableAddress::of(&copy.index, hash, |&j| j == 0);
        }
        copy
    }
}

/// Equal when both hold the same members with equal values, whatever
/// their positions.
impl<V: PartialEq> PartialEq for MemberTable<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(m, v)| other.get(m) == Some(v))
    }
}

impl<V: fmt::Debug> fmt::Debug for MemberTable<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn member(i: u64) -> Vec<u8> {
        // Some inline, some on the heap.
        if i.is_multiple_of(7) {
            format!("a-long-member-name-that-lives-on-the-heap-{i}").into_bytes()
        } else {
            format!("m{i}").into_bytes()
        }
    }

    #[test]
    fn upsert_updates_in_place_or_adds_at_the_end() {
        let mut table: MemberTable<u64> = MemberTable::new();
        let added = table.upsert(b"a", |_| unreachable!("absent"), || 1);
        assert_eq!(added.map(|(m, v)| (m.as_slice().to_vec(), *v)), Some((b"a".to_vec(), 1)));
        assert!(table.upsert(b"b", |_| unreachable!("absent"), || 2).is_some());
        assert!(table.upsert(b"a", |v| *v += 10, || unreachable!("present")).is_none());
        assert_eq!(table.get(b"a"), Some(&11));
        assert_eq!(table.position(b"a"), Some(0), "an update keeps the position");
        assert_eq!(table.position(b"b"), Some(1));
        assert_eq!(table.len(), 2);
    }

    /// Random inserts, replacements and both kinds of removal agree with a
    /// model map, and positions stay dense: every member is found where the
    /// array has it.
    #[test]
    fn agrees_with_a_model_map() {
        let mut next = crate::types::test_rng::xorshift(0x5eed_1234_abcd_0001);
        let mut table: MemberTable<u64> = MemberTable::new();
        let mut model: HashMap<Vec<u8>, u64> = HashMap::new();
        for step in 0..20_000u64 {
            let r = next();
            let m = member(r % 3000);
            match (r >> 20) % 8 {
                0..=4 => {
                    let got = table.insert(&m, step);
                    match model.insert(m.clone(), step) {
                        Some(old) => assert_eq!(got, Inserted::Replaced(old)),
                        None => assert!(matches!(got, Inserted::Added(stored) if stored.as_slice() == &m[..])),
                    }
                }
                5 | 6 => assert_eq!(table.swap_remove(&m).map(|(k, v)| (k.to_vec(), v)), model.remove_entry(&m)),
                _ if !table.is_empty() => {
                    let i = (r >> 32) as usize % table.len();
                    let (k, v) = table.swap_remove_index(i).expect("in range");
                    assert_eq!(model.remove(k.as_slice()), Some(v));
                }
                _ => {}
            }
            assert_eq!(table.len(), model.len());
            if step.is_multiple_of(997) {
                for (i, (k, v)) in table.iter().enumerate() {
                    assert_eq!(table.position(k), Some(i));
                    assert_eq!(model.get(k.as_slice()), Some(v));
                }
            }
        }
        assert_eq!(table.swap_remove_index(table.len()), None);
        assert_eq!(table.get(b"never"), None);
    }

    /// The layout `TableAddress` assumes holds for buckets of other sizes,
    /// as the sorted sets' index (24-byte buckets) uses it: every element
    /// sits `(i + 1)` buckets below the noted control bytes.
    #[test]
    fn a_noted_address_fits_buckets_of_any_size() {
        let hasher = MemberHasher::default();
        let mut table: HashTable<(std::sync::Arc<[u8]>, f64)> = HashTable::new();
        for i in 0..3000u32 {
            let name: std::sync::Arc<[u8]> = member(u64::from(i)).into();
            table.insert_unique(hasher.hash_one(&*name), (name, f64::from(i)), |(m, _)| hasher.hash_one(&**m));
        }
        let (first, _) = table.iter().next().expect("filled");
        let first = first.clone();
        let at = TableAddress::of(&table, hasher.hash_one(&*first), |(m, _)| *m == first);
        assert_eq!(at.mask + 1, table.num_buckets());
        for (name, _) in table.iter() {
            let hash = hasher.hash_one(&**name);
            let b = table.find_bucket_index(hash, |(m, _)| m == name).expect("filed");
            let addr = std::ptr::from_ref(table.get_bucket(b).expect("full")).addr();
            assert_eq!(addr, at.ctrl - size_of::<(std::sync::Arc<[u8]>, f64)>() * (b + 1));
        }
        assert!(TableAddress::of(&table, 0, |_| false).is_unknown());
    }

    #[test]
    fn a_table_made_with_room_locates_its_control_bytes_on_the_first_member() {
        let mut table: MemberTable<()> = MemberTable::with_capacity(100);
        assert!(table.at.is_unknown());
        table.insert(b"first", ());
        let hash = MemberTable::<()>::hash(b"first");
        let b = table.index.find_bucket_index(hash, |&j| j == 0).expect("filed");
        let addr = std::ptr::from_ref(table.index.get_bucket(b).expect("full")).addr();
        assert_eq!(addr, table.at.ctrl - size_of::<usize>() * (b + 1));
    }

    #[test]
    fn order_is_insertion_order_and_removal_moves_the_last() {
        let mut table: MemberTable<u8> = MemberTable::new();
        for (i, m) in [&b"a"[..], b"b", b"c", b"d"].into_iter().enumerate() {
            table.insert(m, i as u8);
        }
        table.insert(b"b", 9);
        let order = |t: &MemberTable<u8>| t.iter().map(|(m, v)| (m.to_vec(), *v)).collect::<Vec<_>>();
        assert_eq!(order(&table), [(b"a".to_vec(), 0), (b"b".to_vec(), 9), (b"c".to_vec(), 2), (b"d".to_vec(), 3)]);
        table.swap_remove(b"a");
        assert_eq!(order(&table), [(b"d".to_vec(), 3), (b"b".to_vec(), 9), (b"c".to_vec(), 2)]);
        let rebuilt: MemberTable<u8> = order(&table).into_iter().map(|(m, v)| (CompactBytes::new(&m), v)).collect();
        assert_eq!(order(&rebuilt), order(&table));
        let repeated: MemberTable<u8> =
            [(b"x", 1), (b"y", 2), (b"x", 3)].into_iter().map(|(m, v)| (CompactBytes::new(m), v)).collect();
        assert_eq!(order(&repeated), [(b"x".to_vec(), 3), (b"y".to_vec(), 2)]);
    }

    /// Equality ignores positions; a clone is equal and finds its own table.
    #[test]
    fn equality_ignores_order_and_clones_locate_their_own_table() {
        let mut a: MemberTable<u8> = MemberTable::new();
        let mut b: MemberTable<u8> = MemberTable::new();
        for i in 0..100u8 {
            a.insert(&[i], i);
            b.insert(&[99 - i], 99 - i);
        }
        assert_eq!(a, b);
        b.insert(&[5], 0);
        assert_ne!(a, b);
        let c = a.clone();
        assert_eq!(c, a);
        assert!(!c.at.is_unknown());
        assert_ne!(c.at, a.at);
    }

    /// The control bytes and buckets are where the prefetches look: every
    /// position's bucket at `ctrl - (i + 1) * 8`, found by probing from
    /// `hash & mask`, through growth.
    #[test]
    fn the_noted_table_address_matches_the_layout() {
        let mut table: MemberTable<()> = MemberTable::new();
        for i in 0..5000u64 {
            table.insert(&member(i), ());
            if i % 500 != 0 {
                continue;
            }
            assert_eq!(table.at.mask + 1, table.index.num_buckets());
            for (at, (m, _)) in table.iter().enumerate() {
                let hash = table.hasher.hash_one(m.as_slice());
                assert_eq!(hash, MemberTable::<()>::hash(m));
                let b = table.index.find_bucket_index(hash, |&j| j == at).expect("filed");
                let addr = std::ptr::from_ref(table.index.get_bucket(b).expect("full")).addr();
                assert_eq!(addr, table.at.ctrl - size_of::<usize>() * (b + 1));
                assert!(table.index.iter_hash(hash).any(|&j| j == at));
            }
        }
        // Prefetching any hash, present or not, is harmless.
        for h in [0, 1, u64::MAX, MemberTable::<()>::hash(b"m3")] {
            table.prefetch_slot(h);
            table.prefetch_entry(h);
        }
        MemberTable::<()>::new().prefetch_entry(7);
        MemberTable::<()>::new().prefetch_slot(7);
    }
}
