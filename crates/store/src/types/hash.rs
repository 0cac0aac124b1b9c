//! Hash values: fields mapped to values.
//!
//! Small hashes are a flat list of pairs in insertion order, searched
//! linearly — Redis's `listpack` encoding, under its name and with its
//! order, so `HGETALL` on a small hash answers in the same order as Redis.
//! Past `hash-max-listpack-entries` fields or a field or value longer than
//! `hash-max-listpack-value` bytes the hash becomes a hash table (`hashtable`)
//! and never goes back. The table keeps its entries in a dense array
//! ([`MemberTable`]), which gives `HRANDFIELD` a uniform pick in O(1) and
//! `HSCAN` a cursor that is simply a position (see [`HashValue::scan`]).

use super::compact::{CompactBytes, MemberBytes};
use super::member_table::MemberTable;
use super::packed::{self, PackedIter, PackedSeq};

/// When a small hash becomes a table: `hash-max-listpack-entries` and
/// `hash-max-listpack-value`, as in force when the hash is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashLimits {
    /// Most fields a listpack hash holds.
    pub max_entries: usize,
    /// Longest field or value, in bytes, a listpack hash holds.
    pub max_value: usize,
}

impl Default for HashLimits {
    /// Redis's defaults.
    fn default() -> Self {
        HashLimits { max_entries: 512, max_value: 64 }
    }
}

/// A hash.
#[derive(Debug, Clone, PartialEq)]
pub enum HashValue {
    /// Pairs in insertion order, and the heap bytes of their fields and values.
    Listpack(Vec<(CompactBytes, CompactBytes)>, MemberBytes),
    /// A hash table over a dense array of pairs, and the heap bytes of
    /// their fields and values.
    Table(MemberTable<CompactBytes>, MemberBytes),
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::Listpack(Vec::new(), MemberBytes::default())
    }
}

impl HashValue {
    /// An empty hash in the small encoding.
    pub fn new() -> HashValue {
        HashValue::default()
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        match self {
            HashValue::Listpack(pairs, _) => pairs.len(),
            HashValue::Table(map, _) => map.len(),
        }
    }

    /// True when the hash has no fields (such a key does not exist).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            HashValue::Listpack(..) => "listpack",
            HashValue::Table(..) => "hashtable",
        }
    }

    /// Bytes held outside the value itself, for the memory estimate.
    pub fn heap_size(&self) -> usize {
        let pair = std::mem::size_of::<(CompactBytes, CompactBytes)>();
        match self {
            HashValue::Listpack(pairs, bytes) => pairs.capacity() * pair + bytes.get(),
            HashValue::Table(map, bytes) => map.heap_size() + bytes.get(),
        }
    }

    /// Switch to the table encoding when there are more than `max_entries`
    /// fields or `longest` (the longest field or value just written or about
    /// to be) exceeds `max_value` bytes.
    pub fn grow_if_needed(&mut self, max_entries: usize, max_value: usize, longest: usize) {
        if let HashValue::Listpack(pairs, bytes) = self {
            if pairs.len() > max_entries || longest > max_value {
                let map = std::mem::take(pairs).into_iter().collect();
                *self = HashValue::Table(map, *bytes);
            }
        }
    }

    /// Set `field` to `value` under `limits`: the hash turns into a table
    /// first when either is too long for the small encoding, and after when
    /// it has too many fields, as Redis orders it. True when the field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: HashLimits) -> bool {
        self.grow_if_needed(usize::MAX, limits.max_value, field.len().max(value.len()));
        let added = self.insert(field, value);
        self.grow_if_needed(limits.max_entries, usize::MAX, 0);
        added
    }

    /// Pick the encoding `limits` give a hash built whole (`RESTORE`), which
    /// may be the small one even for a hash dumped as a table.
    pub fn conform(&mut self, limits: HashLimits) {
        if let HashValue::Table(map, bytes) = self {
            let longest = map.iter().map(|(f, v)| f.len().max(v.len())).max().unwrap_or(0);
            if map.len() <= limits.max_entries && longest <= limits.max_value {
                *self = HashValue::Listpack(std::mem::take(map).into_entries(), *bytes);
            }
        }
        let longest = self.iter().map(|(f, v)| f.len().max(v.len())).max().unwrap_or(0);
        self.grow_if_needed(limits.max_entries, limits.max_value, longest);
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            HashValue::Listpack(pairs, _) => pairs.iter().find(|(f, _)| &**f == field).map(|(_, v)| v.as_slice()),
            HashValue::Table(map, _) => map.get(field).map(CompactBytes::as_slice),
        }
    }

    /// True when `field` exists.
    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Set `field` to `value`; true when the field is new.
    ///
    /// A field's value is rewritten in place ([`CompactBytes::set`]).
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        match self {
            HashValue::Listpack(pairs, bytes) => match pairs.iter_mut().find(|(f, _)| &**f == field) {
                Some((_, v)) => {
                    bytes.rewrite(v, value);
                    false
                }
                None => {
                    let (field, value) = (CompactBytes::new(field), CompactBytes::new(value));
                    bytes.add(&field);
                    bytes.add(&value);
                    pairs.push((field, value));
                    true
                }
            },
            HashValue::Table(map, bytes) => {
                match map.upsert(field, |v| bytes.rewrite(v, value), || CompactBytes::new(value)) {
                    Some((field, value)) => {
                        bytes.add(field);
                        bytes.add(value);
                        true
                    }
                    None => false,
                }
            }
        }
    }

    /// Remove `field`; true when it existed.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Listpack(pairs, bytes) => match pairs.iter().position(|(f, _)| &**f == field) {
                Some(i) => {
                    let (f, v) = pairs.remove(i);
                    bytes.sub(&f);
                    bytes.sub(&v);
                    true
                }
                None => false,
            },
            // Order means nothing in a table, so the last pair fills the gap.
            HashValue::Table(map, bytes) => match map.swap_remove(field) {
                Some((f, v)) => {
                    bytes.sub(&f);
                    bytes.sub(&v);
                    true
                }
                None => false,
            },
        }
    }

    /// Field and value at position `i` of the hash's order (for random picks).
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match self {
            HashValue::Listpack(pairs, _) => pairs.get(i).map(|(f, v)| (f.as_slice(), v.as_slice())),
            HashValue::Table(map, _) => map.get_index(i).map(|(f, v)| (f.as_slice(), v.as_slice())),
        }
    }

    /// Fields and values in the hash's order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            HashValue::Listpack(pairs, _) => Box::new(pairs.iter().map(|(f, v)| (f.as_slice(), v.as_slice()))),
            HashValue::Table(map, _) => Box::new(map.iter().map(|(f, v)| (f.as_slice(), v.as_slice()))),
        }
    }

    /// One `HSCAN` step from `cursor`, visiting about `count` pairs; returns
    /// the next cursor (0 when done).
    ///
    /// A small hash is returned whole at once, as Redis does. A table is
    /// walked from its last position down: removals move the last pair into
    /// the gap, which is either not visited yet or below the cursor (visited
    /// again, as `SCAN` allows), so every pair present for the whole scan is
    /// returned; the cursor is one more than the next position to visit.
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&[u8], &[u8])) -> u64 {
        match self {
            HashValue::Listpack(..) => {
                self.iter().for_each(|(f, v)| visit(f, v));
                0
            }
            HashValue::Table(map, _) => scan_dense(map.len(), cursor, count, |i| {
                if let Some((f, v)) = map.get_index(i) {
                    visit(f, v);
                }
            }),
        }
    }
}

impl HashValue {
    /// True when the hash is small enough to be stored packed: in the
    /// `listpack` encoding and within [`packed::fits`]. An empty hash is
    /// too, so a key created for a write starts packed (a command leaves
    /// no empty hash behind).
    pub fn packable(&self) -> bool {
        match self {
            HashValue::Listpack(pairs, _) => {
                pairs.len() <= packed::MAX_ELEMENTS / 2 && packed::fits(pairs.len() * 2, self.encoded_len())
            }
            HashValue::Table(..) => false,
        }
    }

    /// Append the packed encoding of the hash (fields and values
    /// alternating) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        packed::encode(out, self.iter().flat_map(|(f, v)| [f, v]));
    }

    /// Bytes of the packed encoding.
    pub fn encoded_len(&self) -> usize {
        packed::encoded_len(self.iter().flat_map(|(f, v)| [f, v]))
    }
}

/// A hash, borrowed from wherever the keyspace keeps it: boxed, or packed
/// in the key's entry (see [`packed`]; always the `listpack` encoding).
/// Read commands take this view.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HashRef<'a> {
    /// A hash stored as a [`HashValue`].
    Boxed(&'a HashValue),
    /// A small hash packed in its key's entry.
    Packed(PackedSeq<'a>),
}

/// True when `pairs` may go into a `listpack` hash under `limits` as far
/// as their lengths go (a longer field or value makes a table).
fn short_enough(pairs: &[(&[u8], &[u8])], limits: HashLimits) -> bool {
    pairs.iter().all(|(f, v)| f.len().max(v.len()) <= limits.max_value)
}

/// Most pairs of one `HSET` the packed path takes (more go the boxed way,
/// which packs the hash again after).
const MOST_PAIRS: usize = 4;

/// Where an `HSET` finds its fields in a packed hash, from one walk over
/// it (see [`plan_set`]): how to change the hash in place or rewrite it.
#[derive(Debug, Clone, Copy)]
pub struct SetPlan {
    /// Fields in the hash now.
    len: usize,
    /// For each pair, where the current value of its field is in the
    /// encoding: the start of its length and of its bytes, and its end
    /// (a packed encoding is at most `packed::MAX_BYTES` long).
    found: [Option<(u32, u32, u32)>; MOST_PAIRS],
}

/// Find the fields of `pairs` in the packed hash `encoding`, or `None` when
/// `HSET` cannot leave it a packed `listpack` hash under `limits` as far as
/// the pairs alone tell (too many, too long, or a hash already over a
/// lowered field limit, which any HSET turns into a table).
pub fn plan_set(encoding: &[u8], pairs: &[(&[u8], &[u8])], limits: HashLimits) -> Option<SetPlan> {
    if pairs.len() > MOST_PAIRS || !short_enough(pairs, limits) {
        return None;
    }
    let mut at = 0;
    let mut len = 0;
    let mut found = [None; MOST_PAIRS];
    // Bounded: each pair takes at least two bytes of the encoding.
    while at < encoding.len() {
        len += 1;
        if len > limits.max_entries {
            return None;
        }
        let (fs, fe) = packed::element_at(encoding, at)?;
        let (vs, ve) = packed::element_at(encoding, fe)?;
        let field = &encoding[fs..fe];
        for (slot, (f, _)) in found.iter_mut().zip(pairs) {
            if *f == field {
                *slot = Some((u32::try_from(fe).ok()?, u32::try_from(vs).ok()?, u32::try_from(ve).ok()?));
            }
        }
        at = ve;
    }
    Some(SetPlan { len, found })
}

/// Apply `plan` to the packed hash whose encoding starts at `at` of
/// `bytes` without moving anything: when every field found keeps its
/// value's length, those values are overwritten and new fields appended
/// (growing `bytes`). How many fields are new; `None` (nothing changed)
/// when that cannot be done or the result would not stay packed.
pub fn set_in_place(
    bytes: &mut Vec<u8>,
    at: usize,
    pairs: &[(&[u8], &[u8])],
    limits: HashLimits,
    plan: &SetPlan,
) -> Option<usize> {
    let same = pairs
        .iter()
        .zip(&plan.found)
        .all(|((_, v), slot)| slot.is_none_or(|(_, vs, ve)| (ve - vs) as usize == v.len()));
    if !same {
        return None;
    }
    let first = |i: usize| !pairs[..i].iter().any(|(f, _)| *f == pairs[i].0);
    let new = |i: usize| plan.found[i].is_none() && first(i);
    let value_of = |i: usize| {
        let field = pairs[i].0;
        pairs[i + 1..].iter().rev().find(|(f, _)| *f == field).map_or(pairs[i].1, |(_, v)| *v)
    };
    let (added, grow) = (0..pairs.len())
        .filter(|&i| new(i))
        .fold((0, 0), |(n, b), i| (n + 1, b + packed::element_len(pairs[i].0) + packed::element_len(value_of(i))));
    let len = plan.len + added;
    if len > limits.max_entries || len > packed::MAX_ELEMENTS / 2 || !packed::fits(len * 2, bytes.len() - at + grow) {
        return None;
    }
    // In pair order, so a field given twice ends with its last value.
    for ((_, v), slot) in pairs.iter().zip(&plan.found) {
        if let Some((_, from, to)) = *slot {
            bytes[at + from as usize..at + to as usize].copy_from_slice(v);
        }
    }
    if added > 0 {
        bytes.reserve_exact(grow);
        for i in (0..pairs.len()).filter(|&i| new(i)) {
            packed::put_element(bytes, pairs[i].0);
            packed::put_element(bytes, value_of(i));
        }
    }
    Some(added)
}

/// `HSET` of `pairs` on the packed hash `current` as `plan` (made from it)
/// found them: appends the new encoding to `out` and returns how many
/// fields are new, or `None` when the result is too big to stay packed.
///
/// Existing fields keep their place, new ones follow in the order they are
/// first given, and a field given twice takes its last value, as a run of
/// [`HashValue::set`] leaves them. Unchanged stretches are copied whole.
pub fn set_packed(
    current: &[u8],
    pairs: &[(&[u8], &[u8])],
    limits: HashLimits,
    plan: &SetPlan,
    out: &mut Vec<u8>,
) -> Option<usize> {
    let value_of = |i: usize| {
        let field = pairs[i].0;
        pairs[i + 1..].iter().rev().find(|(f, _)| *f == field).map_or(pairs[i].1, |(_, v)| *v)
    };
    let first = |i: usize| !pairs[..i].iter().any(|(f, _)| *f == pairs[i].0);
    // Values to replace, in the order they sit in the encoding (a field
    // given twice is replaced once, by its first pair, with the last value).
    let mut changes = [(usize::MAX, 0, 0); MOST_PAIRS];
    let mut n = 0;
    for (i, slot) in plan.found.iter().enumerate().take(pairs.len()) {
        if let Some((start, _, end)) = *slot {
            if first(i) {
                changes[n] = (start as usize, end as usize, i);
                n += 1;
            }
        }
    }
    changes[..n].sort_unstable();
    let start = out.len();
    let mut copied = 0;
    for &(from, to, i) in &changes[..n] {
        out.extend_from_slice(&current[copied..from]);
        packed::put_element(out, value_of(i));
        copied = to;
    }
    out.extend_from_slice(&current[copied..]);
    let mut added = 0;
    for (i, &(field, _)) in pairs.iter().enumerate() {
        if plan.found[i].is_none() && first(i) {
            packed::put_element(out, field);
            packed::put_element(out, value_of(i));
            added += 1;
        }
    }
    let len = plan.len + added;
    if len > limits.max_entries || len > packed::MAX_ELEMENTS / 2 || !packed::fits(len * 2, out.len() - start) {
        return None;
    }
    Some(added)
}

/// Pairs of a packed hash, in order.
struct Pairs<'a>(PackedIter<'a>);

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        Some((self.0.next()?, self.0.next()?))
    }
}

impl<'a> HashRef<'a> {
    /// Number of fields.
    pub fn len(self) -> usize {
        match self {
            HashRef::Boxed(h) => h.len(),
            HashRef::Packed(p) => p.len() / 2,
        }
    }

    /// True when the hash has no fields.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(self) -> &'static str {
        match self {
            HashRef::Boxed(h) => h.encoding(),
            HashRef::Packed(_) => "listpack",
        }
    }

    /// True when the hash is stored packed.
    pub fn is_packed(self) -> bool {
        matches!(self, HashRef::Packed(_))
    }

    /// The value of `field`.
    pub fn get(self, field: &[u8]) -> Option<&'a [u8]> {
        match self {
            HashRef::Boxed(h) => h.get(field),
            HashRef::Packed(p) => Pairs(p.iter()).find(|(f, _)| *f == field).map(|(_, v)| v),
        }
    }

    /// True when `field` exists.
    pub fn contains(self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Field and value at position `i` of the hash's order.
    pub fn get_index(self, i: usize) -> Option<(&'a [u8], &'a [u8])> {
        match self {
            HashRef::Boxed(h) => h.get_index(i),
            HashRef::Packed(p) => Pairs(p.iter()).nth(i),
        }
    }

    /// Fields and values in the hash's order.
    pub fn iter(self) -> Box<dyn Iterator<Item = (&'a [u8], &'a [u8])> + 'a> {
        match self {
            HashRef::Boxed(h) => h.iter(),
            HashRef::Packed(p) => Box::new(Pairs(p.iter())),
        }
    }

    /// One `HSCAN` step; see [`HashValue::scan`]. A packed hash is small
    /// and returned whole.
    pub fn scan(self, cursor: u64, count: usize, mut visit: impl FnMut(&[u8], &[u8])) -> u64 {
        match self {
            HashRef::Boxed(h) => h.scan(cursor, count, visit),
            HashRef::Packed(p) => {
                Pairs(p.iter()).for_each(|(f, v)| visit(f, v));
                0
            }
        }
    }

    /// An owned copy, in the same encoding.
    pub fn to_owned(self) -> HashValue {
        match self {
            HashRef::Boxed(h) => h.clone(),
            HashRef::Packed(p) => {
                let mut pairs = Vec::with_capacity(p.len() / 2);
                pairs.extend(Pairs(p.iter()).map(|(f, v)| (CompactBytes::new(f), CompactBytes::new(v))));
                let bytes = MemberBytes::of(pairs.iter().flat_map(|(f, v)| [f, v]));
                HashValue::Listpack(pairs, bytes)
            }
        }
    }
}

/// Walk positions of a dense array of `len` items downwards from `cursor`
/// (0: from the top) for about `count` items; the next cursor, 0 when done.
pub fn scan_dense(len: usize, cursor: u64, count: usize, mut visit: impl FnMut(usize)) -> u64 {
    let top = if cursor == 0 { len } else { usize::try_from(cursor).unwrap_or(usize::MAX).min(len) };
    let stop = top.saturating_sub(count.max(1));
    for i in (stop..top).rev() {
        visit(i);
    }
    stop as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The heap bytes a hash keeps count of, and the same sum counted afresh.
    fn member_bytes(h: &HashValue) -> (usize, usize) {
        let (counted, pairs): (_, Box<dyn Iterator<Item = (&CompactBytes, &CompactBytes)>>) = match h {
            HashValue::Listpack(pairs, bytes) => (bytes.get(), Box::new(pairs.iter().map(|(f, v)| (f, v)))),
            HashValue::Table(map, bytes) => (bytes.get(), Box::new(map.iter())),
        };
        (counted, MemberBytes::of(pairs.flat_map(|(f, v)| [f, v])).get())
    }

    #[test]
    fn the_member_byte_count_follows_every_change() {
        // Fields and values of 1 to 59 bytes, so some live inline and some
        // on the heap; a small field pool, so writes replace and removes hit.
        let mut next = crate::types::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        let limits = HashLimits { max_entries: 16, max_value: 40 };
        let mut h = HashValue::new();
        for step in 0..4000 {
            let r = next();
            let field = vec![b'f'; 1 + (r % 59) as usize];
            let value = vec![b'v'; 1 + ((r >> 8) % 59) as usize];
            match (r >> 16) % 4 {
                0 | 1 => {
                    h.set(&field, &value, limits);
                }
                2 => {
                    h.remove(&field);
                }
                _ => h.conform(limits),
            }
            let (counted, actual) = member_bytes(&h);
            assert_eq!(counted, actual, "step {step}, {} fields, {}", h.len(), h.encoding());
        }
        assert_eq!(member_bytes(&HashRef::Boxed(&h).to_owned()), member_bytes(&h));
    }

    #[test]
    fn small_hashes_keep_insertion_order_and_replace_in_place() {
        let mut h = HashValue::new();
        assert!(h.insert(b"b", b"1"));
        assert!(h.insert(b"a", b"2"));
        assert!(!h.insert(b"b", b"3"));
        let pairs: Vec<_> = h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
        assert_eq!(pairs, [(b"b".to_vec(), b"3".to_vec()), (b"a".to_vec(), b"2".to_vec())]);
        assert!(h.remove(b"b"));
        assert!(!h.remove(b"b"));
        assert_eq!(h.get(b"a"), Some(&b"2"[..]));
        assert_eq!(h.encoding(), "listpack");
    }

    fn packed(h: &HashValue) -> Vec<u8> {
        let mut out = Vec::new();
        h.encode(&mut out);
        out
    }

    /// A packed HSET leaves what the boxed one leaves, or declines.
    fn check_set(start: &HashValue, pairs: &[(&[u8], &[u8])], limits: HashLimits) -> Option<usize> {
        let mut boxed = start.clone();
        let added = pairs.iter().filter(|(f, v)| boxed.set(f, v, limits)).count();
        let mut encoding = packed(start);
        let mut out = Vec::new();
        let plan = plan_set(&encoding, pairs, limits);
        let result = plan.and_then(|plan| set_packed(&encoding, pairs, limits, &plan, &mut out));
        match result {
            Some(n) => {
                assert_eq!((n, HashRef::Packed(PackedSeq::new(&out)).to_owned()), (added, boxed.clone()), "{pairs:?}");
                assert!(boxed.packable());
            }
            None => assert!(!boxed.packable() || boxed.encoding() == "hashtable", "{pairs:?} declined"),
        }
        if let Some(n) = plan.and_then(|plan| set_in_place(&mut encoding, 0, pairs, limits, &plan)) {
            assert_eq!(
                (n, HashRef::Packed(PackedSeq::new(&encoding)).to_owned()),
                (added, boxed),
                "{pairs:?} in place"
            );
        }
        result
    }

    #[test]
    fn packed_hset_matches_the_boxed_one() {
        let mut h = HashValue::new();
        h.insert(b"name", b"kvik");
        h.insert(b"age", b"7");
        let limits = HashLimits::default();
        assert_eq!(check_set(&h, &[(b"age", b"8")], limits), Some(0));
        assert_eq!(check_set(&h, &[(b"age", b"10"), (b"city", b"Oslo"), (b"city", b"Bergen")], limits), Some(1));
        assert_eq!(check_set(&h, &[(b"new", b"1"), (b"new2", b"2"), (b"new", b"3")], limits), Some(2));
        assert_eq!(check_set(&h, &[(b"age", b"100"), (b"name", b"k")], limits), Some(0), "changes out of order");
        assert_eq!(check_set(&h, &[(b"name", b"x"), (b"age", b"123"), (b"name", b"yy"), (b"z", b"")], limits), Some(1));
        assert_eq!(check_set(&h, &[(b"age", &[b'x'; 65])], limits), None, "too long: a table");
        let tight = HashLimits { max_entries: 2, max_value: 64 };
        assert_eq!(check_set(&h, &[(b"age", b"9")], tight), Some(0));
        assert_eq!(check_set(&h, &[(b"more", b"9")], tight), None, "too many: a table");
        let lowered = HashLimits { max_entries: 1, max_value: 64 };
        assert_eq!(check_set(&h, &[(b"age", b"9")], lowered), None, "over a lowered limit: a table");
        let fields: Vec<Vec<u8>> = (0..40).map(|i| format!("f{i}").into_bytes()).collect();
        let pairs: Vec<(&[u8], &[u8])> = fields.iter().map(|f| (f.as_slice(), &b"v"[..])).collect();
        assert_eq!(check_set(&h, &pairs, limits), None, "past the packed bound");
        // In place only when every field exists with a value of the same length.
        let mut encoding = packed(&h);
        let mut in_place = |pairs: &[(&[u8], &[u8])]| {
            let plan = plan_set(&encoding, pairs, limits).unwrap();
            set_in_place(&mut encoding, 0, pairs, limits, &plan)
        };
        assert_eq!(in_place(&[(b"age", b"77")]), None);
        assert_eq!(in_place(&[(b"nope", b"7")]), Some(1));
        assert_eq!(in_place(&[(b"name", b"KVIK"), (b"age", b"9")]), Some(0));
        assert_eq!(in_place(&[(b"age", b"1"), (b"age", b"2")]), Some(0));
        assert_eq!(HashRef::Packed(PackedSeq::new(&encoding)).get(b"name"), Some(&b"KVIK"[..]));
        assert_eq!(HashRef::Packed(PackedSeq::new(&encoding)).get(b"age"), Some(&b"2"[..]));
    }

    #[test]
    fn growth_keeps_every_pair() {
        let mut h = HashValue::new();
        for i in 0..10 {
            h.insert(format!("f{i}").as_bytes(), format!("v{i}").as_bytes());
        }
        h.grow_if_needed(10, 64, 2);
        assert_eq!(h.encoding(), "listpack");
        h.grow_if_needed(9, 64, 2);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 10);
        assert_eq!(h.get(b"f7"), Some(&b"v7"[..]));
        assert!(h.remove(b"f0"));
        assert_eq!(h.len(), 9);
        assert!(h.get_index(8).is_some() && h.get_index(9).is_none());
    }

    #[test]
    fn a_table_scan_returns_every_pair_present_throughout() {
        let mut h = HashValue::new();
        for i in 0..100 {
            h.insert(format!("f{i}").as_bytes(), b"v");
        }
        h.grow_if_needed(0, 64, 0);
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut round = 0;
        loop {
            cursor = h.scan(cursor, 7, |f, _| {
                seen.insert(f.to_vec());
            });
            // Change the hash between calls: remove low fields, add new ones.
            h.remove(format!("f{round}").as_bytes());
            h.insert(format!("new{round}").as_bytes(), b"v");
            round += 1;
            if cursor == 0 {
                break;
            }
        }
        for i in round..100 {
            assert!(seen.contains(format!("f{i}").as_bytes()), "f{i} missed");
        }
    }
}
