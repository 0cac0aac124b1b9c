//! List values: a double-ended queue of byte strings.
//!
//! Redis 7.0 keeps every list as a `quicklist` (a linked list of listpacks)
//! and `OBJECT ENCODING` says so for lists of any size; kvik keeps a ring
//! buffer of [`CompactBytes`], which gives the same O(1) pushes and pops at
//! both ends and O(1) indexing, and reports Redis's name.
//!
//! Indexes follow Redis: negative ones count from the tail (-1 is the last
//! element), and ranges are clamped the way `LRANGE` clamps them.

use std::collections::VecDeque;

use super::compact::CompactBytes;
use super::packed::{self, PackedSeq};

/// The inclusive index range `start..=end` of a sequence of `len` items, with
/// Redis's rules for `LRANGE`, `LTRIM` and `ZRANGE` by rank: negative indexes
/// count from the end, the start is raised to 0, the end lowered to the last
/// item, and an empty range gives `None`.
pub fn rank_range(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    let len_i = i64::try_from(len).ok()?;
    let start = if start < 0 { start.saturating_add(len_i).max(0) } else { start };
    let end = if end < 0 { end.saturating_add(len_i) } else { end };
    if start > end || start >= len_i {
        return None;
    }
    let end = end.min(len_i - 1);
    Some((usize::try_from(start).ok()?, usize::try_from(end).ok()?))
}

/// A list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListValue {
    items: VecDeque<CompactBytes>,
    /// Bytes of elements kept on the heap, for the memory estimate.
    heap_bytes: usize,
}

impl ListValue {
    /// An empty list.
    pub fn new() -> ListValue {
        ListValue::default()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when the list has no elements (such a key does not exist).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// Bytes held outside the value itself, for the memory estimate.
    pub fn heap_size(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<CompactBytes>() + self.heap_bytes
    }

    /// Add `value` at the head (`front`) or the tail.
    pub fn push(&mut self, front: bool, value: &[u8]) {
        let item = CompactBytes::new(value);
        self.heap_bytes += item.heap_size();
        if front {
            self.items.push_front(item);
        } else {
            self.items.push_back(item);
        }
    }

    /// Remove the head (`front`) or tail element.
    ///
    /// A queue that was long once and is short now gives most of its ring
    /// back, as Redis frees emptied quicklist nodes.
    pub fn pop(&mut self, front: bool) -> Option<CompactBytes> {
        let item = if front { self.items.pop_front() } else { self.items.pop_back() }?;
        self.heap_bytes -= item.heap_size();
        if self.items.capacity() > 64 && self.items.len() * 4 < self.items.capacity() {
            self.items.shrink_to(self.items.len() * 2);
        }
        Some(item)
    }

    /// The position `index` refers to (negative from the tail), if inside the list.
    fn position(&self, index: i64) -> Option<usize> {
        let len = i64::try_from(self.items.len()).ok()?;
        let i = if index < 0 { index.checked_add(len)? } else { index };
        (0..len).contains(&i).then(|| usize::try_from(i).ok()).flatten()
    }

    /// The element at `index`.
    pub fn get(&self, index: i64) -> Option<&[u8]> {
        self.position(index).map(|i| self.items[i].as_slice())
    }

    /// Replace the element at `index`; false when out of range.
    pub fn set(&mut self, index: i64, value: &[u8]) -> bool {
        let Some(i) = self.position(index) else { return false };
        let item = CompactBytes::new(value);
        self.heap_bytes = self.heap_bytes + item.heap_size() - self.items[i].heap_size();
        self.items[i] = item;
        true
    }

    /// Elements in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + ExactSizeIterator + '_ {
        self.items.iter().map(CompactBytes::as_slice)
    }

    /// Elements `start..=end` (positions from [`rank_range`]).
    pub fn range(&self, start: usize, end: usize) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        self.items.range(start..=end.min(self.items.len().saturating_sub(1))).map(CompactBytes::as_slice)
    }

    /// Keep only `start..=end`; `None` empties the list (`LTRIM`).
    pub fn keep(&mut self, range: Option<(usize, usize)>) {
        match range {
            Some((start, end)) => {
                self.items.truncate(end + 1);
                self.items.drain(..start.min(self.items.len()));
            }
            None => self.items.clear(),
        }
        self.heap_bytes = self.items.iter().map(CompactBytes::heap_size).sum();
    }

    /// Insert `value` before or after the first element equal to `pivot`;
    /// false when there is no such element (`LINSERT`).
    pub fn insert_at_pivot(&mut self, pivot: &[u8], value: &[u8], before: bool) -> bool {
        let Some(i) = self.items.iter().position(|it| it.as_slice() == pivot) else { return false };
        let item = CompactBytes::new(value);
        self.heap_bytes += item.heap_size();
        self.items.insert(if before { i } else { i + 1 }, item);
        true
    }

    /// Remove elements equal to `value`: the first `count` from the head when
    /// positive, from the tail when negative, all when zero (`LREM`); how many.
    pub fn remove_matching(&mut self, value: &[u8], count: i64) -> usize {
        let limit = if count == 0 { usize::MAX } else { usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX) };
        let mut doomed: Vec<usize> = Vec::new();
        let matches = |(i, it): (usize, &CompactBytes)| (it.as_slice() == value).then_some(i);
        if count < 0 {
            doomed.extend(self.items.iter().enumerate().rev().filter_map(matches).take(limit));
            doomed.reverse();
        } else {
            doomed.extend(self.items.iter().enumerate().filter_map(matches).take(limit));
        }
        if doomed.is_empty() {
            return 0;
        }
        let mut next = doomed.iter().peekable();
        let mut position = 0;
        self.items.retain(|_| {
            let remove = next.peek().is_some_and(|&&d| d == position);
            if remove {
                next.next();
            }
            position += 1;
            !remove
        });
        self.heap_bytes = self.items.iter().map(CompactBytes::heap_size).sum();
        doomed.len()
    }

    /// Positions of elements equal to `value` for `LPOS`; see [`positions`].
    pub fn positions(&self, value: &[u8], rank: i64, count: usize, maxlen: usize) -> Vec<usize> {
        positions(self.iter(), value, rank, count, maxlen)
    }

    /// True when the list is small enough to be stored packed. An empty
    /// list is too, so a key created for a push starts packed (a command
    /// leaves no empty list behind).
    pub fn packable(&self) -> bool {
        self.len() <= packed::MAX_ELEMENTS && packed::fits(self.len(), self.encoded_len())
    }

    /// Append the packed encoding of the list to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        packed::encode(out, self.iter());
    }

    /// Bytes of the packed encoding.
    pub fn encoded_len(&self) -> usize {
        packed::encoded_len(self.iter())
    }
}

/// `LPUSH` / `RPUSH` of `elements` onto the packed list whose encoding
/// starts at `at` of `bytes` (and runs to their end): the new length, or
/// `None` (nothing changed) when the result would be too big to pack (the
/// caller then pushes onto the list boxed).
pub fn push_packed(bytes: &mut Vec<u8>, at: usize, front: bool, elements: &[&[u8]]) -> Option<usize> {
    let count = PackedSeq::new(&bytes[at..]).len();
    let len = count.checked_add(elements.len())?;
    if len > packed::MAX_ELEMENTS {
        return None;
    }
    let added: usize = elements.iter().map(|e| packed::element_len(e)).sum();
    if !packed::fits(len, bytes.len() - at + added) {
        return None;
    }
    let old_end = bytes.len();
    bytes.reserve_exact(added);
    if front {
        // Each element goes in front of the ones pushed before it.
        bytes.resize(old_end + added, 0);
        bytes.copy_within(at..old_end, at + added);
        let mut to = at;
        for e in elements.iter().rev() {
            to += packed::write_element(&mut bytes[to..], e);
        }
    } else {
        elements.iter().for_each(|e| packed::put_element(bytes, e));
    }
    Some(len)
}

/// Positions of `items` equal to `value` for `LPOS`: skipping the first
/// `rank - 1` matches (from the tail when `rank` is negative), at most
/// `count` of them (0: all), looking at no more than `maxlen` elements
/// (0: all). `rank` must not be 0.
fn positions<'i>(
    items: impl DoubleEndedIterator<Item = &'i [u8]> + ExactSizeIterator,
    value: &[u8],
    rank: i64,
    count: usize,
    maxlen: usize,
) -> Vec<usize> {
    debug_assert!(rank != 0);
    let skip = usize::try_from(rank.unsigned_abs() - 1).unwrap_or(usize::MAX);
    let count = if count == 0 { usize::MAX } else { count };
    let maxlen = if maxlen == 0 { usize::MAX } else { maxlen };
    let hits = |(i, it): (usize, &[u8])| (it == value).then_some(i);
    let mut out = Vec::new();
    if rank > 0 {
        out.extend(items.enumerate().take(maxlen).filter_map(hits).skip(skip).take(count));
    } else {
        out.extend(items.enumerate().rev().take(maxlen).filter_map(hits).skip(skip).take(count));
    }
    out
}

/// A list, borrowed from wherever the keyspace keeps it: boxed, or packed
/// in the key's entry (see [`packed`]). Read commands take this view.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ListRef<'a> {
    /// A list stored as a [`ListValue`].
    Boxed(&'a ListValue),
    /// A small list packed in its key's entry.
    Packed(PackedSeq<'a>),
}

/// The elements of a [`ListRef`] in order, from either end.
pub enum ListIter<'a> {
    /// Over a boxed list.
    Boxed(std::collections::vec_deque::Iter<'a, CompactBytes>),
    /// Over a packed list, whose elements are found first.
    Packed(std::vec::IntoIter<&'a [u8]>),
}

impl<'a> Iterator for ListIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        match self {
            ListIter::Boxed(it) => it.next().map(CompactBytes::as_slice),
            ListIter::Packed(it) => it.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            ListIter::Boxed(it) => it.size_hint(),
            ListIter::Packed(it) => it.size_hint(),
        }
    }
}

impl DoubleEndedIterator for ListIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            ListIter::Boxed(it) => it.next_back().map(CompactBytes::as_slice),
            ListIter::Packed(it) => it.next_back(),
        }
    }
}

impl ExactSizeIterator for ListIter<'_> {}

impl<'a> ListRef<'a> {
    /// Number of elements.
    pub fn len(self) -> usize {
        match self {
            ListRef::Boxed(l) => l.len(),
            ListRef::Packed(p) => p.len(),
        }
    }

    /// True when the list has no elements.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The name `OBJECT ENCODING` reports: Redis 7.0 says `quicklist` for
    /// every list, packed or not.
    pub fn encoding(self) -> &'static str {
        "quicklist"
    }

    /// True when the list is stored packed.
    pub fn is_packed(self) -> bool {
        matches!(self, ListRef::Packed(_))
    }

    /// The element at `index` (negative from the tail).
    pub fn get(self, index: i64) -> Option<&'a [u8]> {
        match self {
            ListRef::Boxed(l) => l.get(index),
            // The length (a walk, see `packed`) only for an index from the tail.
            ListRef::Packed(p) if index >= 0 => p.nth(usize::try_from(index).ok()?),
            ListRef::Packed(p) => {
                let i = index.checked_add(i64::try_from(p.len()).ok()?)?;
                p.nth(usize::try_from(i).ok()?)
            }
        }
    }

    /// Elements in order.
    pub fn iter(self) -> ListIter<'a> {
        match self {
            ListRef::Boxed(l) => ListIter::Boxed(l.items.iter()),
            ListRef::Packed(p) => ListIter::Packed(p.elements(usize::MAX).into_iter()),
        }
    }

    /// Elements `start..=end` (positions from [`rank_range`]).
    pub fn range(self, start: usize, end: usize) -> ListIter<'a> {
        match self {
            ListRef::Boxed(l) => ListIter::Boxed(l.items.range(start..=end.min(l.len().saturating_sub(1)))),
            ListRef::Packed(p) => {
                let take = (end.saturating_add(1)).saturating_sub(start);
                let mut items = Vec::with_capacity(take.min(packed::MAX_ELEMENTS));
                items.extend(p.iter().skip(start).take(take));
                ListIter::Packed(items.into_iter())
            }
        }
    }

    /// Positions of elements equal to `value` for `LPOS`; see [`positions`].
    pub fn positions(self, value: &[u8], rank: i64, count: usize, maxlen: usize) -> Vec<usize> {
        positions(self.iter(), value, rank, count, maxlen)
    }

    /// An owned copy.
    pub fn to_owned(self) -> ListValue {
        match self {
            ListRef::Boxed(l) => l.clone(),
            ListRef::Packed(p) => {
                let mut list = ListValue::new();
                list.items.reserve_exact(p.len());
                p.iter().for_each(|item| list.push(false, item));
                list
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> ListValue {
        let mut l = ListValue::new();
        for it in items {
            l.push(false, it.as_bytes());
        }
        l
    }

    fn items(l: &ListValue) -> Vec<String> {
        l.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect()
    }

    #[test]
    fn ranges_clamp_like_lrange() {
        assert_eq!(rank_range(5, 0, -1), Some((0, 4)));
        assert_eq!(rank_range(5, -100, 100), Some((0, 4)));
        assert_eq!(rank_range(5, 3, 1), None);
        assert_eq!(rank_range(5, 5, 10), None);
        assert_eq!(rank_range(5, -2, -1), Some((3, 4)));
        assert_eq!(rank_range(0, 0, -1), None);
        assert_eq!(rank_range(5, i64::MIN, i64::MAX), Some((0, 4)));
        assert_eq!(rank_range(5, 0, i64::MIN), None);
    }

    #[test]
    fn packed_pushes_match_boxed_ones() {
        let start = list(&["a", "b"]);
        let long = [b'x'; 200];
        for front in [true, false] {
            for elements in [&[&b"c"[..], b"d"][..], &[&long[..]], &[]] {
                let mut boxed = start.clone();
                elements.iter().for_each(|e| boxed.push(front, e));
                let mut bytes = b"head".to_vec();
                start.encode(&mut bytes);
                let len = push_packed(&mut bytes, 4, front, elements);
                assert_eq!(len, Some(boxed.len()));
                assert_eq!(ListRef::Packed(PackedSeq::new(&bytes[4..])).to_owned(), boxed);
                assert_eq!(&bytes[..4], b"head");
            }
        }
        let many: Vec<&[u8]> = vec![b"e"; packed::MAX_ELEMENTS - 1];
        let mut encoding = Vec::new();
        start.encode(&mut encoding);
        let before = encoding.clone();
        assert_eq!(push_packed(&mut encoding, 0, false, &many), None);
        assert_eq!(encoding, before, "declined: unchanged");
        assert_eq!(push_packed(&mut encoding, 0, false, &many[1..]), Some(packed::MAX_ELEMENTS));
    }

    #[test]
    fn push_pop_index_and_set() {
        let mut l = list(&["b", "c"]);
        l.push(true, b"a");
        assert_eq!(items(&l), ["a", "b", "c"]);
        assert_eq!(l.get(-1), Some(&b"c"[..]));
        assert_eq!(l.get(3), None);
        assert_eq!(l.get(-4), None);
        assert!(l.set(-3, &[b'x'; 40]));
        assert!(!l.set(3, b"y"));
        assert!(l.heap_size() >= 40);
        assert_eq!(l.pop(true).map(|b| b.len()), Some(40));
        assert_eq!(l.pop(false).as_deref(), Some(&b"c"[..]));
        assert_eq!(l.encoding(), "quicklist");
    }

    #[test]
    fn a_drained_queue_gives_memory_back() {
        let mut l = ListValue::new();
        for i in 0..10_000 {
            l.push(false, format!("{i}").as_bytes());
        }
        let full = l.heap_size();
        while l.len() > 10 {
            l.pop(true);
        }
        assert!(l.heap_size() < full / 50, "{} of {full}", l.heap_size());
        assert_eq!(l.get(0), Some(&b"9990"[..]));
    }

    #[test]
    fn trim_insert_and_remove() {
        let mut l = list(&["a", "b", "a", "c", "a"]);
        assert_eq!(l.remove_matching(b"a", -2), 2);
        assert_eq!(items(&l), ["a", "b", "c"]);
        assert!(l.insert_at_pivot(b"b", b"x", true));
        assert!(l.insert_at_pivot(b"c", b"y", false));
        assert!(!l.insert_at_pivot(b"zz", b"y", false));
        assert_eq!(items(&l), ["a", "x", "b", "c", "y"]);
        l.keep(rank_range(l.len(), 1, -2));
        assert_eq!(items(&l), ["x", "b", "c"]);
        assert_eq!(l.remove_matching(b"b", 0), 1);
        l.keep(None);
        assert!(l.is_empty());
    }

    #[test]
    fn lpos_rank_count_and_maxlen() {
        let l = list(&["a", "b", "c", "1", "2", "3", "c", "c"]);
        assert_eq!(l.positions(b"c", 1, 1, 0), [2]);
        assert_eq!(l.positions(b"c", 2, 1, 0), [6]);
        assert_eq!(l.positions(b"c", -1, 0, 0), [7, 6, 2]);
        assert_eq!(l.positions(b"c", 1, 0, 3), [2]);
        assert_eq!(l.positions(b"c", -1, 0, 2), [7, 6]);
        assert!(l.positions(b"zz", 1, 0, 0).is_empty());
        assert_eq!(l.positions(b"c", i64::MIN, 0, 0), Vec::<usize>::new());
    }
}
