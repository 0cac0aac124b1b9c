//! Sorted set values: members ordered by (score, member), found by rank, by
//! score range or by lexicographic range, and by name.
//!
//! The order lives in a list of sorted blocks of at most [`BLOCK_MAX`]
//! members: finding a place is two binary searches, inserting moves at most
//! one block's worth of items, and a rank is the sizes of the blocks before
//! plus a position — simple, compact and cache friendly, where a skiplist
//! chases a pointer per level. Small sets are one block searched linearly by
//! member, which is Redis's `listpack` encoding in spirit and in name; past
//! `zset-max-listpack-entries` members or `zset-max-listpack-value` bytes a
//! member index (member → score) is added and the encoding reported is
//! `skiplist`, as Redis reports it. Like Redis, a set never goes back to the
//! small encoding by shrinking.

use std::cmp::Ordering;
use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::hash_table::Entry;
use hashbrown::HashTable;
use kvik_prefetch::prefetch;

use super::compact::MemberHasher;
use super::member_table::TableAddress;

/// Most members in one block; a full block splits in two.
const BLOCK_MAX: usize = 256;

/// A member and its score.
#[derive(Debug, Clone)]
struct Item {
    score: f64,
    member: Arc<[u8]>,
}

impl Item {
    fn cmp_key(&self, score: f64, member: &[u8]) -> Ordering {
        cmp_score(self.score, score).then_with(|| (*self.member).cmp(member))
    }
}

/// A scan cursor for `score`: the bits mapped so that cursors order as the
/// scores do, plus one to keep 0 for the start.
fn cursor_of_score(score: f64) -> u64 {
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 { !bits } else { bits | 1 << 63 };
    ordered + 1
}

/// The score a cursor from [`cursor_of_score`] stands for (any other number
/// decodes to some score, or a NaN that starts past every member).
fn score_of_cursor(cursor: u64) -> f64 {
    let ordered = cursor - 1;
    let bits = if ordered >> 63 == 1 { ordered & !(1 << 63) } else { !ordered };
    f64::from_bits(bits)
}

/// Scores are never NaN, so the partial order is total here.
fn cmp_score(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

/// One end of a score range (`ZRANGEBYSCORE 1 (5`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreBound {
    /// The score.
    pub value: f64,
    /// Whether the end itself is excluded (written with a `(`).
    pub exclusive: bool,
}

impl ScoreBound {
    /// Parse Redis's range syntax: a number, or `(` and a number.
    pub fn parse(text: &[u8]) -> Option<ScoreBound> {
        let (exclusive, number) = match text.split_first() {
            Some((b'(', rest)) => (true, rest),
            _ => (false, text),
        };
        let value = super::double::parse_range_bound(number)?;
        Some(ScoreBound { value, exclusive })
    }

    /// True when `score` is at or above this bound taken as a minimum.
    fn admits_from_below(&self, score: f64) -> bool {
        if self.exclusive {
            score > self.value
        } else {
            score >= self.value
        }
    }

    /// True when `score` is at or below this bound taken as a maximum.
    fn admits_from_above(&self, score: f64) -> bool {
        if self.exclusive {
            score < self.value
        } else {
            score <= self.value
        }
    }
}

/// One end of a lexicographic range (`ZRANGEBYLEX [a (c`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    /// `-`: below every member.
    Min,
    /// `+`: above every member.
    Max,
    /// `[member`.
    Inclusive(Vec<u8>),
    /// `(member`.
    Exclusive(Vec<u8>),
}

impl LexBound {
    /// Parse Redis's lex range syntax; `None` for anything else.
    pub fn parse(text: &[u8]) -> Option<LexBound> {
        match text.split_first()? {
            (b'-', []) => Some(LexBound::Min),
            (b'+', []) => Some(LexBound::Max),
            (b'[', rest) => Some(LexBound::Inclusive(rest.to_vec())),
            (b'(', rest) => Some(LexBound::Exclusive(rest.to_vec())),
            _ => None,
        }
    }

    /// True when `member` is at or above this bound taken as a minimum.
    pub fn admits_from_below(&self, member: &[u8]) -> bool {
        match self {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Inclusive(b) => member >= &b[..],
            LexBound::Exclusive(b) => member > &b[..],
        }
    }

    /// True when `member` is at or below this bound taken as a maximum.
    pub fn admits_from_above(&self, member: &[u8]) -> bool {
        match self {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Inclusive(b) => member <= &b[..],
            LexBound::Exclusive(b) => member < &b[..],
        }
    }
}

/// Member → score in the large encoding: a `hashbrown` table of the names
/// the order holds (shared, not copied), with its address noted so that
/// the read-ahead can prefetch a member's lookup (see
/// [`ZSetValue::prefetch_member_slot`]).
#[derive(Debug, Default)]
struct ScoreIndex {
    table: HashTable<(Arc<[u8]>, f64)>,
    hasher: MemberHasher,
    at: TableAddress,
}

impl ScoreIndex {
    fn get(&self, member: &[u8]) -> Option<f64> {
        self.table.find(self.hasher.hash_one(member), |(m, _)| **m == *member).map(|&(_, score)| score)
    }

    /// Set the score of `member`, added when new.
    fn insert(&mut self, member: Arc<[u8]>, score: f64) {
        let hash = self.hasher.hash_one(&*member);
        let buckets = self.table.num_buckets();
        let hasher = &self.hasher;
        // One probe finds the member or the slot for it.
        match self.table.entry(hash, |(m, _)| *m == member, |(m, _)| hasher.hash_one(&**m)) {
            Entry::Occupied(mut found) => {
                found.get_mut().1 = score;
                return;
            }
            Entry::Vacant(slot) => {
                slot.insert((Arc::clone(&member), score));
            }
        }
        if self.table.num_buckets() != buckets || self.at.is_unknown() {
            self.at = TableAddress::of(&self.table, hash, |(m, _)| *m == member);
        }
    }

    fn remove(&mut self, member: &[u8]) {
        if let Ok(found) = self.table.find_entry(self.hasher.hash_one(member), |(m, _)| **m == *member) {
            found.remove();
        }
    }

    fn capacity(&self) -> usize {
        self.table.capacity()
    }
}

impl FromIterator<(Arc<[u8]>, f64)> for ScoreIndex {
    fn from_iter<I: IntoIterator<Item = (Arc<[u8]>, f64)>>(items: I) -> Self {
        let mut index = ScoreIndex::default();
        for (member, score) in items {
            index.insert(member, score);
        }
        index
    }
}

impl Clone for ScoreIndex {
    fn clone(&self) -> Self {
        let mut copy =
            ScoreIndex { table: self.table.clone(), hasher: self.hasher.clone(), at: TableAddress::default() };
        if let Some((member, _)) = copy.table.iter().next() {
            let (member, hash) = (Arc::clone(member), copy.hasher.hash_one(&**member));
            copy.at = TableAddress::of(&copy.table, hash, |(m, _)| *m == member);
        }
        copy
    }
}

/// A sorted set.
#[derive(Debug, Clone, Default)]
pub struct ZSetValue {
    /// Items in (score, member) order; no block is empty, none is over `BLOCK_MAX`.
    blocks: Vec<Vec<Item>>,
    /// The score of each block's last item, side by side: finding a block
    /// reads these from one small array, where reading each block's last
    /// item was a cache miss per step of the search in a large set.
    lasts: Vec<f64>,
    /// Number of members.
    len: usize,
    /// Member → score; present in the large (`skiplist`) encoding.
    index: Option<ScoreIndex>,
    /// Bytes held by member names, for the memory estimate.
    member_bytes: usize,
}

impl PartialEq for ZSetValue {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len
            && self.iter().zip(other.iter()).all(|((a, x), (b, y))| a == b && x.to_bits() == y.to_bits())
    }
}

impl ZSetValue {
    /// An empty set in the small encoding.
    pub fn new() -> ZSetValue {
        ZSetValue::default()
    }

    /// An empty set in the large encoding (Redis creates one directly when
    /// the first member is already over the limits).
    pub fn new_large() -> ZSetValue {
        ZSetValue { index: Some(ScoreIndex::default()), ..ZSetValue::default() }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the set has no members (such a key does not exist).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        if self.index.is_some() {
            "skiplist"
        } else {
            "listpack"
        }
    }

    /// True in the large encoding.
    pub fn is_large(&self) -> bool {
        self.index.is_some()
    }

    /// Switch to the large encoding when the set holds more than
    /// `max_entries` members or a member longer than `max_value` bytes
    /// (`zset-max-listpack-entries` / `-value`); `longest` is the length of
    /// a member just added or about to be.
    pub fn grow_if_needed(&mut self, max_entries: usize, max_value: usize, longest: usize) {
        if self.index.is_none() && (self.len > max_entries || longest > max_value) {
            self.index = Some(self.iter_items().map(|it| (it.member.clone(), it.score)).collect());
        }
    }

    /// Switch to the large encoding before adding a member of `member_len`
    /// bytes if the set would then be over the limits, as Redis checks
    /// before it inserts (so the new member goes straight into the large
    /// encoding, keeping a `-0` score there).
    pub fn grow_before_insert(&mut self, max_entries: usize, max_value: usize, member_len: usize) {
        if self.index.is_none() && (self.len + 1 > max_entries || member_len > max_value) {
            self.index = Some(self.iter_items().map(|it| (it.member.clone(), it.score)).collect());
        }
    }

    /// Switch to the small encoding if the set fits in it (Redis does this
    /// for sets that `Z*STORE` create). The small encoding keeps a score as
    /// text that reads back `-0` as `0`, so zeros lose their sign.
    pub fn shrink_if_fits(&mut self, max_entries: usize, max_value: usize) {
        if self.index.is_some() && self.len <= max_entries && self.iter_items().all(|it| it.member.len() <= max_value) {
            self.index = None;
            for item in self.blocks.iter_mut().flatten() {
                if item.score == 0.0 {
                    item.score = 0.0;
                }
            }
            (0..self.blocks.len()).for_each(|b| self.note_last(b));
        }
    }

    /// Bytes held outside the value itself, for the memory estimate.
    pub fn heap_size(&self) -> usize {
        let per_item = std::mem::size_of::<Item>() + 16;
        let index = self.index.as_ref().map_or(0, |m| m.capacity() * (std::mem::size_of::<(Arc<[u8]>, f64)>() + 1));
        self.blocks.len() * (std::mem::size_of::<Vec<Item>>() + 8) + self.len * per_item + self.member_bytes + index
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.index {
            Some(index) => index.get(member),
            None => self.iter_items().find(|it| &*it.member == member).map(|it| it.score),
        }
    }

    /// Start loading the control bytes and the bucket where a lookup of a
    /// member filed under `hash` ([`super::member_table::MemberTable::hash`])
    /// in the member index begins (large encoding only).
    pub fn prefetch_member_slot(&self, hash: u64) {
        if let Some(index) = &self.index {
            index.at.prefetch_slot::<(Arc<[u8]>, f64)>(hash);
        }
    }

    /// Start loading the name a lookup of `hash` compares first (reading
    /// the bucket [`ZSetValue::prefetch_member_slot`] loaded).
    pub fn prefetch_member_entry(&self, hash: u64) {
        if let Some((member, _)) = self.index.as_ref().and_then(|index| index.table.iter_hash(hash).next()) {
            prefetch(member.as_ptr().addr());
        }
    }

    /// Add `member` with `score` or move it to `score`; the previous score.
    /// A score equal to the current one (`0` and `-0` are equal) leaves the
    /// member as it is, as Redis does.
    ///
    /// In the small encoding a score of `-0` is stored as `0`, as Redis's
    /// listpack stores it (as the integer 0).
    pub fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        let old = self.score(member);
        self.insert_looked_up(member, score, old);
        old
    }

    /// [`ZSetValue::insert`] for a caller that has just read `old`, the
    /// member's [`ZSetValue::score`]: ZADD reads it for its flags, and a
    /// second lookup by name would cost as much as the first.
    pub fn insert_looked_up(&mut self, member: &[u8], score: f64, old: Option<f64>) {
        debug_assert!(!score.is_nan());
        debug_assert_eq!(old.map(f64::to_bits), self.score(member).map(f64::to_bits));
        let score = if self.index.is_none() && score == 0.0 { 0.0 } else { score };
        let shared: Arc<[u8]> = match old {
            Some(old_score) => {
                if old_score == score {
                    return;
                }
                self.remove_item(old_score, member)
            }
            None => {
                self.len += 1;
                self.member_bytes += member.len();
                Arc::from(member)
            }
        };
        if let Some(index) = &mut self.index {
            index.insert(shared.clone(), score);
        }
        self.place(Item { score, member: shared });
    }

    /// Remove `member`; its score if it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let score = self.score(member)?;
        self.remove_item(score, member);
        self.len -= 1;
        self.member_bytes -= member.len();
        if let Some(index) = &mut self.index {
            index.remove(member);
        }
        Some(score)
    }

    /// 0-based position of `member` in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        let (b, i) = self.locate(score, member);
        Some(self.blocks[..b].iter().map(Vec::len).sum::<usize>() + i)
    }

    /// The member at ascending position `rank`.
    pub fn get(&self, rank: usize) -> Option<(&[u8], f64)> {
        let (b, i) = self.block_of_rank(rank)?;
        let it = &self.blocks[b][i];
        Some((&it.member, it.score))
    }

    /// Members in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        self.iter_items().map(|it| (&*it.member, it.score))
    }

    /// Members from ascending position `start` on.
    pub fn iter_from(&self, start: usize) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        let (b, i) = self.block_of_rank(start).unwrap_or((self.blocks.len(), 0));
        let first = self.blocks.get(b).map_or(&[][..], |blk| &blk[i..]);
        let rest = self.blocks.get(b + 1..).unwrap_or(&[]);
        first.iter().chain(rest.iter().flatten()).map(|it| (&*it.member, it.score))
    }

    /// Members from ascending position `end` (or the last) down to the first.
    pub fn iter_rev_from(&self, end: usize) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        let at = self.len.checked_sub(1).and_then(|last| self.block_of_rank(end.min(last)));
        let (first, rest): (&[Item], &[Vec<Item>]) = match at {
            Some((b, i)) => (&self.blocks[b][..=i], &self.blocks[..b]),
            None => (&[], &[]),
        };
        first.iter().rev().chain(rest.iter().rev().flat_map(|blk| blk.iter().rev())).map(|it| (&*it.member, it.score))
    }

    /// Number of members whose score is below `min` (the ascending rank of
    /// the first member admitted by `min`).
    pub fn rank_above_score(&self, min: &ScoreBound) -> usize {
        self.count_while(|it| !min.admits_from_below(it.score))
    }

    /// Number of members whose score is admitted by `max` taken as a maximum.
    pub fn rank_after_score(&self, max: &ScoreBound) -> usize {
        self.count_while(|it| max.admits_from_above(it.score))
    }

    /// As [`Self::rank_above_score`] for a lexicographic bound (meaningful
    /// when all scores are equal, as Redis requires of lex ranges).
    pub fn rank_above_lex(&self, min: &LexBound) -> usize {
        self.count_while(|it| !min.admits_from_below(&it.member))
    }

    /// As [`Self::rank_after_score`] for a lexicographic bound.
    pub fn rank_after_lex(&self, max: &LexBound) -> usize {
        self.count_while(|it| max.admits_from_above(&it.member))
    }

    /// One `ZSCAN` step over the set in ascending order from `cursor` (0:
    /// the start), visiting about `count` members; the next cursor, 0 when
    /// done.
    ///
    /// The cursor is the score to go on from, so members inserted or
    /// removed between steps shift nothing: every member present, with the
    /// same score, for the whole scan is visited. Members sharing a score
    /// are visited in the same step, which may make a step longer than
    /// `count` (a hint, as in Redis).
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&[u8], f64)) -> u64 {
        let start = match cursor {
            0 => 0,
            c => self.rank_above_score(&ScoreBound { value: score_of_cursor(c), exclusive: false }),
        };
        let mut last: Option<f64> = None;
        for (taken, (member, score)) in self.iter_from(start).enumerate() {
            if taken >= count.max(1) && last.is_some_and(|l| score != l) {
                return cursor_of_score(score);
            }
            visit(member, score);
            last = Some(score);
        }
        0
    }

    /// Remove and return the lowest (or with `last`, the highest) member.
    pub fn pop(&mut self, last: bool) -> Option<(Vec<u8>, f64)> {
        let rank = if last { self.len.checked_sub(1)? } else { 0 };
        let (member, score) = self.get(rank).map(|(m, s)| (m.to_vec(), s))?;
        self.remove(&member);
        Some((member, score))
    }

    /// Remove the members at ascending positions `start..end`; how many.
    pub fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        let end = end.min(self.len);
        if start >= end {
            return 0;
        }
        let doomed: Vec<Vec<u8>> = self.iter_from(start).take(end - start).map(|(m, _)| m.to_vec()).collect();
        for member in &doomed {
            self.remove(member);
        }
        doomed.len()
    }

    fn iter_items(&self) -> impl DoubleEndedIterator<Item = &Item> + '_ {
        self.blocks.iter().flatten()
    }

    /// Items at the front for which `pred` holds, counted; `pred` must hold
    /// for a prefix of the order (true, then false).
    fn count_while(&self, mut pred: impl FnMut(&Item) -> bool) -> usize {
        let full = self.blocks.partition_point(|blk| blk.last().is_some_and(&mut pred));
        let before: usize = self.blocks[..full].iter().map(Vec::len).sum();
        before + self.blocks.get(full).map_or(0, |blk| blk.partition_point(&mut pred))
    }

    /// Block and position of the item at `rank`.
    fn block_of_rank(&self, mut rank: usize) -> Option<(usize, usize)> {
        if rank >= self.len {
            return None;
        }
        for (b, blk) in self.blocks.iter().enumerate() {
            if rank < blk.len() {
                return Some((b, rank));
            }
            rank -= blk.len();
        }
        None
    }

    /// Block and position where (`score`, `member`) is or would go.
    fn locate(&self, score: f64, member: &[u8]) -> (usize, usize) {
        let b = self.first_block_not_below(score, member).min(self.blocks.len().saturating_sub(1));
        let i = self.blocks.get(b).map_or(0, |blk| blk.partition_point(|it| it.cmp_key(score, member).is_lt()));
        (b, i)
    }

    /// The first block whose last item is not below (`score`, `member`):
    /// a binary search over [`ZSetValue::lasts`] that reads a block's last
    /// member only when its score ties.
    fn first_block_not_below(&self, score: f64, member: &[u8]) -> usize {
        debug_assert_eq!(self.lasts.len(), self.blocks.len());
        let (mut lo, mut hi) = (0, self.lasts.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let below = match cmp_score(self.lasts[mid], score) {
                Ordering::Less => true,
                Ordering::Greater => false,
                Ordering::Equal => self.blocks[mid].last().is_some_and(|it| it.cmp_key(score, member).is_lt()),
            };
            if below {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Note block `b`'s last score in [`ZSetValue::lasts`].
    fn note_last(&mut self, b: usize) {
        if let (Some(last), Some(slot)) = (self.blocks[b].last(), self.lasts.get_mut(b)) {
            *slot = last.score;
        }
    }

    /// Put `item` in order, splitting a block that overflows.
    fn place(&mut self, item: Item) {
        if self.blocks.is_empty() {
            self.blocks.push(Vec::with_capacity(4));
            self.lasts.push(item.score);
        }
        let (b, i) = self.locate(item.score, &item.member);
        let block = &mut self.blocks[b];
        block.insert(i, item);
        if block.len() > BLOCK_MAX {
            let upper = block.split_off(block.len() / 2);
            self.blocks.insert(b + 1, upper);
            self.lasts.insert(b + 1, 0.0);
            self.note_last(b + 1);
        }
        self.note_last(b);
    }

    /// Take the item (`score`, `member`) out of the order; its shared name.
    fn remove_item(&mut self, score: f64, member: &[u8]) -> Arc<[u8]> {
        let (b, i) = self.locate(score, member);
        let block = &mut self.blocks[b];
        debug_assert!(block.get(i).is_some_and(|it| &*it.member == member));
        let item = block.remove(i);
        if block.is_empty() {
            self.blocks.remove(b);
            self.lasts.remove(b);
            return item.member;
        }
        if block.len() < BLOCK_MAX / 4 && b + 1 < self.blocks.len() && self.blocks[b + 1].len() < BLOCK_MAX / 2 {
            // Merge thin neighbours so the block count follows the size.
            let next = self.blocks.remove(b + 1);
            self.lasts.remove(b + 1);
            self.blocks[b].extend(next);
        }
        self.note_last(b);
        item.member
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn set(items: &[(&str, f64)]) -> ZSetValue {
        let mut z = ZSetValue::new();
        for (m, s) in items {
            z.insert(m.as_bytes(), *s);
        }
        z
    }

    fn members(z: &ZSetValue) -> Vec<String> {
        z.iter().map(|(m, _)| String::from_utf8_lossy(m).into_owned()).collect()
    }

    #[test]
    fn order_is_score_then_member() {
        let z = set(&[("b", 1.0), ("a", 1.0), ("c", 0.5), ("d", -1.0)]);
        assert_eq!(members(&z), ["d", "c", "a", "b"]);
        assert_eq!(z.rank(b"a"), Some(2));
        assert_eq!(z.get(3), Some((&b"b"[..], 1.0)));
        assert_eq!(z.rank(b"zz"), None);
    }

    #[test]
    fn reinserting_moves_and_reports_the_old_score() {
        let mut z = set(&[("a", 1.0), ("b", 2.0)]);
        assert_eq!(z.insert(b"a", 3.0), Some(1.0));
        assert_eq!(members(&z), ["b", "a"]);
        assert_eq!(z.len(), 2);
        assert_eq!(z.remove(b"a"), Some(3.0));
        assert_eq!(z.remove(b"a"), None);
        assert_eq!(members(&z), ["b"]);
    }

    #[test]
    fn score_ranges_count_with_exclusive_and_infinite_ends() {
        let z = set(&[("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", f64::INFINITY)]);
        let b = |t: &str| ScoreBound::parse(t.as_bytes()).unwrap();
        assert_eq!(z.rank_above_score(&b("2")), 1);
        assert_eq!(z.rank_above_score(&b("(2")), 2);
        assert_eq!(z.rank_after_score(&b("3")), 3);
        assert_eq!(z.rank_after_score(&b("(3")), 2);
        assert_eq!(z.rank_after_score(&b("+inf")), 4);
        assert_eq!(z.rank_above_score(&b("-inf")), 0);
        assert_eq!(z.rank_above_score(&b("(inf")), 4);
        assert!(ScoreBound::parse(b"(nan").is_none());
        assert!(ScoreBound::parse(b"x").is_none());
    }

    #[test]
    fn lex_ranges() {
        let z = set(&[("a", 0.0), ("b", 0.0), ("c", 0.0)]);
        let l = |t: &str| LexBound::parse(t.as_bytes()).unwrap();
        assert_eq!(z.rank_above_lex(&l("[b")), 1);
        assert_eq!(z.rank_above_lex(&l("(b")), 2);
        assert_eq!(z.rank_after_lex(&l("(c")), 2);
        assert_eq!(z.rank_after_lex(&l("+")), 3);
        assert_eq!(z.rank_above_lex(&l("-")), 0);
        assert!(LexBound::parse(b"b").is_none());
        assert!(LexBound::parse(b"").is_none());
        assert!(LexBound::parse(b"-x").is_none());
    }

    #[test]
    fn encodings_follow_the_limits_and_do_not_shrink_back() {
        let mut z = set(&[("a", 1.0)]);
        assert_eq!(z.encoding(), "listpack");
        z.insert(b"b", 2.0);
        z.grow_if_needed(1, 64, 1);
        assert_eq!(z.encoding(), "skiplist");
        assert_eq!(z.score(b"b"), Some(2.0));
        z.remove(b"b");
        z.grow_if_needed(1, 64, 1);
        assert_eq!(z.encoding(), "skiplist");
        z.shrink_if_fits(1, 64);
        assert_eq!(z.encoding(), "listpack");
        z.grow_if_needed(128, 3, 4);
        assert!(z.is_large());
    }

    #[test]
    fn reverse_iteration_and_pops() {
        let mut z = set(&[("a", 1.0), ("b", 2.0), ("c", 3.0)]);
        let rev: Vec<_> = z.iter_rev_from(1).map(|(m, _)| m.to_vec()).collect();
        assert_eq!(rev, [b"b".to_vec(), b"a".to_vec()]);
        let all: Vec<_> = z.iter_rev_from(99).map(|(m, _)| m.to_vec()).collect();
        assert_eq!(all.len(), 3);
        assert_eq!(z.pop(true), Some((b"c".to_vec(), 3.0)));
        assert_eq!(z.pop(false), Some((b"a".to_vec(), 1.0)));
        assert_eq!(ZSetValue::new().iter_rev_from(0).count(), 0);
    }

    #[test]
    fn scan_cursors_survive_changes_between_steps() {
        for s in [f64::NEG_INFINITY, -1.5, -0.0, 0.0, 2.0, f64::INFINITY] {
            assert_eq!(score_of_cursor(cursor_of_score(s)).to_bits(), s.to_bits());
        }
        assert!(cursor_of_score(-1.0) < cursor_of_score(-0.5) && cursor_of_score(0.0) < cursor_of_score(1e-300));
        let mut z = ZSetValue::new_large();
        for i in 0..100 {
            z.insert(format!("m{i}").as_bytes(), f64::from(i / 3));
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut step = 0;
        loop {
            cursor = z.scan(cursor, 7, |m, _| {
                seen.insert(m.to_vec());
            });
            // Churn below and above the cursor between steps.
            z.insert(format!("new{step}").as_bytes(), -1.0);
            z.remove(format!("new{step}").as_bytes());
            z.insert(format!("low{step}").as_bytes(), -5.0);
            step += 1;
            if cursor == 0 {
                break;
            }
        }
        assert!((0..100).all(|i| seen.contains(format!("m{i}").as_bytes())));
        assert!(step < 30);
        assert_eq!(z.scan(u64::MAX, 10, |_, _| panic!("no member is past the last cursor")), 0);
    }

    /// Random operations against a simple model (a map and a sorted list),
    /// across block splits and merges and both encodings.
    #[test]
    fn matches_a_model_under_random_operations() {
        let mut random = crate::types::test_rng::xorshift(0x1234_5678);
        let mut next = move |n: u64| random() % n;
        for large in [false, true] {
            let mut z = if large { ZSetValue::new_large() } else { ZSetValue::new() };
            let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
            for step in 0..6_000 {
                let member = format!("m{}", next(3000)).into_bytes();
                match next(4) {
                    0 | 1 => {
                        let score = next(50) as f64 - 25.0;
                        assert_eq!(z.insert(&member, score), model.insert(member.clone(), score));
                    }
                    2 => assert_eq!(z.remove(&member), model.remove(&member)),
                    _ => {
                        let mut sorted: Vec<(f64, &Vec<u8>)> = model.iter().map(|(m, s)| (*s, m)).collect();
                        sorted.sort_by(|a, b| cmp_score(a.0, b.0).then_with(|| a.1.cmp(b.1)));
                        let rank = sorted.iter().position(|(_, m)| **m == member);
                        assert_eq!(z.rank(&member), rank, "step {step}");
                        let bound = ScoreBound { value: next(50) as f64 - 25.0, exclusive: next(2) == 1 };
                        let below = sorted.iter().filter(|(s, _)| !bound.admits_from_below(*s)).count();
                        assert_eq!(z.rank_above_score(&bound), below);
                        if let Some(r) = rank {
                            assert_eq!(z.get(r).map(|(m, _)| m.to_vec()), Some(member.clone()));
                        }
                    }
                }
                assert_eq!(z.len(), model.len());
            }
            let listed: Vec<Vec<u8>> = z.iter().map(|(m, _)| m.to_vec()).collect();
            let mut expected: Vec<(f64, Vec<u8>)> = model.iter().map(|(m, s)| (*s, m.clone())).collect();
            expected.sort_by(|a, b| cmp_score(a.0, b.0).then_with(|| a.1.cmp(&b.1)));
            assert_eq!(listed, expected.into_iter().map(|(_, m)| m).collect::<Vec<_>>());
            assert!(z.blocks.iter().all(|b| !b.is_empty() && b.len() <= BLOCK_MAX));
            let lasts: Vec<u64> = z.blocks.iter().filter_map(|b| b.last()).map(|it| it.score.to_bits()).collect();
            assert_eq!(z.lasts.iter().map(|s| s.to_bits()).collect::<Vec<_>>(), lasts);
        }
    }
}
