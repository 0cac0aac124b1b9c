//! The packed encoding of small lists and hashes: each element as its
//! length and bytes, all in one byte string that a packed keyspace entry
//! stores after its key, up to the end of the entry's allocation (see
//! [`crate::keyspace::Entry`]).
//!
//! ```text
//! ([varint length][bytes])*
//! ```
//!
//! A list's elements are its items in order; a hash's are its fields and
//! values alternating, in the hash's order. Lengths are LEB128 varints, so
//! an element shorter than 128 bytes costs one byte beyond its bytes.
//!
//! There is no element count: the encoding ends where the allocation ends,
//! and the count is found by walking the lengths ([`PackedSeq::len`]). That
//! walk is bounded by [`MAX_ELEMENTS`] (and [`MAX_BYTES`]), costs about as
//! much as reading one element by position, and saves the byte that would
//! put a one-element list key past a malloc size class (see the entry docs).
//!
//! Packing is for *small* values only ([`fits`]): a write to a packed value
//! rebuilds it, which costs in proportion to its size, and the memory it
//! saves (the boxed form's three or four allocations) is a fixed amount per
//! key that matters less the bigger the value.

/// Most elements a packed value holds (items of a list, fields and values
/// of a hash, each counted): bounds the walk that counts them.
pub const MAX_ELEMENTS: usize = 64;

/// Most bytes the encoding of a packed value takes.
pub const MAX_BYTES: usize = 1024;

/// True when `count` elements whose encoding takes `encoded` bytes are
/// small enough to pack.
pub fn fits(count: usize, encoded: usize) -> bool {
    count <= MAX_ELEMENTS && encoded <= MAX_BYTES
}

/// Bytes of the varint encoding of `n`.
fn varint_len(n: usize) -> usize {
    let mut len = 1;
    let mut n = n >> 7;
    while n != 0 {
        len += 1;
        n >>= 7;
    }
    len
}

/// Append the varint encoding of `n` to `out`.
fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The varint at the start of `bytes` and the bytes after it, if well formed.
#[cfg(test)]
fn get_varint(bytes: &[u8]) -> Option<(usize, &[u8])> {
    match bytes.split_first() {
        Some((&b, rest)) if b < 0x80 => Some((usize::from(b), rest)),
        _ => get_long_varint(bytes),
    }
}

/// [`get_varint`] of a varint longer than one byte.
fn get_long_varint(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let mut n: usize = 0;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        n |= usize::from(b & 0x7f).checked_shl(7 * i as u32)?;
        if b & 0x80 == 0 {
            return Some((n, &bytes[i + 1..]));
        }
    }
    None
}

/// Bytes the encoding of `elements` takes.
pub fn encoded_len<'e>(elements: impl Iterator<Item = &'e [u8]>) -> usize {
    elements.map(element_len).sum::<usize>()
}

/// Append the encoding of `elements` to `out`.
pub fn encode<'e>(out: &mut Vec<u8>, elements: impl Iterator<Item = &'e [u8]>) {
    elements.for_each(|e| put_element(out, e));
}

/// Append one element (its length and bytes) to `out`.
pub fn put_element(out: &mut Vec<u8>, element: &[u8]) {
    put_varint(out, element.len());
    out.extend_from_slice(element);
}

/// Write one element (its length and bytes) at the start of `dst`, which
/// must have room for [`element_len`] bytes; how many were written.
pub fn write_element(dst: &mut [u8], element: &[u8]) -> usize {
    let mut n = element.len();
    let mut at = 0;
    while n >= 0x80 {
        dst[at] = (n as u8 & 0x7f) | 0x80;
        n >>= 7;
        at += 1;
    }
    dst[at] = n as u8;
    dst[at + 1..at + 1 + element.len()].copy_from_slice(element);
    at + 1 + element.len()
}

/// Bytes one element takes in the encoding.
pub fn element_len(element: &[u8]) -> usize {
    varint_len(element.len()) + element.len()
}

/// Where the bytes of the element whose length starts at `at` in
/// `encoding` start and end (the next element's length starts at the end):
/// for walking an encoding by position, to change it in place.
#[inline]
pub fn element_at(encoding: &[u8], at: usize) -> Option<(usize, usize)> {
    let (len, from) = match encoding.get(at) {
        Some(&b) if b < 0x80 => (usize::from(b), at + 1),
        Some(_) => {
            let (len, rest) = get_long_varint(&encoding[at..])?;
            (len, encoding.len() - rest.len())
        }
        None => return None,
    };
    let to = from.checked_add(len).filter(|&to| to <= encoding.len())?;
    Some((from, to))
}

/// Which collection a packed value holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A list: its items.
    List,
    /// A hash: fields and values alternating.
    Hash,
}

/// A packed value, borrowed: reads its elements in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackedSeq<'a> {
    /// The elements, to the end.
    body: &'a [u8],
}

impl<'a> PackedSeq<'a> {
    /// A view of bytes written by [`encode`]. Bytes that are not such an
    /// encoding (which the keyspace never stores) read as the elements
    /// before the first damaged one.
    pub fn new(bytes: &'a [u8]) -> PackedSeq<'a> {
        PackedSeq { body: bytes }
    }

    /// Number of elements: a walk over their lengths (at most
    /// [`MAX_ELEMENTS`] of them in what the keyspace stores).
    pub fn len(self) -> usize {
        let bytes = self.body;
        let (end, mut at, mut n) = (bytes.len(), 0, 0);
        // The common one-byte length inline; longer ones through `element_at`.
        while at < end {
            let b = bytes[at];
            at = if b < 0x80 {
                at + 1 + usize::from(b)
            } else {
                match element_at(bytes, at) {
                    Some((_, to)) => to,
                    None => return n,
                }
            };
            n += 1;
        }
        // The last element counted runs past the end: not an element.
        if at > end {
            n - 1
        } else {
            n
        }
    }

    /// True when there are no elements.
    pub fn is_empty(self) -> bool {
        self.body.is_empty()
    }

    /// The elements in order.
    pub fn iter(self) -> PackedIter<'a> {
        PackedIter { at: 0, bytes: self.body }
    }

    /// The first `most` elements, gathered (in one allocation: each element
    /// takes at least a byte, and a stored value at most [`MAX_ELEMENTS`]).
    pub fn elements(self, most: usize) -> Vec<&'a [u8]> {
        let mut out = Vec::with_capacity(self.body.len().min(MAX_ELEMENTS).min(most));
        out.extend(self.iter().take(most));
        out
    }

    /// The element at position `i`.
    pub fn nth(self, i: usize) -> Option<&'a [u8]> {
        self.iter().nth(i)
    }
}

/// The elements of a [`PackedSeq`], front to back.
#[derive(Debug, Clone)]
pub struct PackedIter<'a> {
    /// Where the next element's length starts.
    at: usize,
    bytes: &'a [u8],
}

impl<'a> Iterator for PackedIter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        match element_at(self.bytes, self.at) {
            Some((from, to)) => {
                self.at = to;
                Some(&self.bytes[from..to])
            }
            None => {
                self.at = self.bytes.len();
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(items: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        encode(&mut out, items.iter().copied());
        assert_eq!(out.len(), encoded_len(items.iter().copied()));
        let seq = PackedSeq::new(&out);
        assert_eq!(seq.len(), items.len());
        seq.iter().map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn elements_read_back_whatever_their_length() {
        let long = vec![b'x'; 300];
        let longer = vec![b'y'; 70_000];
        let items: Vec<&[u8]> = vec![b"", b"a", &[0u8; 127], &[1u8; 128], &long, &longer];
        assert_eq!(round_trip(&items), items);
        assert!(round_trip(&[]).is_empty());
    }

    #[test]
    fn varints_cross_their_byte_boundaries() {
        for n in [0, 1, 127, 128, 16_383, 16_384, usize::MAX >> 1, usize::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, n);
            assert_eq!(out.len(), varint_len(n));
            assert_eq!(get_varint(&out), Some((n, &[][..])));
        }
    }

    #[test]
    fn the_limits_bound_count_and_bytes() {
        assert!(fits(MAX_ELEMENTS, 0));
        assert!(!fits(MAX_ELEMENTS + 1, 0));
        assert!(fits(1, MAX_BYTES));
        assert!(!fits(1, MAX_BYTES + 1));
        assert!(!fits(1, usize::MAX));
    }

    #[test]
    fn spans_point_at_each_element() {
        let long = [b'q'; 200];
        let items: [&[u8]; 3] = [b"ab", &long, b""];
        let mut out = Vec::new();
        encode(&mut out, items.iter().copied());
        assert_eq!(PackedSeq::new(&out).len(), 3);
        let mut at = 0;
        let mut found: Vec<&[u8]> = Vec::new();
        for _ in 0..3 {
            let (from, to) = element_at(&out, at).unwrap();
            found.push(&out[from..to]);
            at = to;
        }
        assert_eq!(found, items);
        assert_eq!((at, element_at(&out, at)), (out.len(), None));
        assert_eq!(element_at(&[5, b'a'], 0), None, "a length past the end");
        assert_eq!(items.iter().map(|i| element_len(i)).sum::<usize>(), out.len());
        let mut written = vec![0u8; out.len()];
        let mut at = 0;
        for item in items {
            at += write_element(&mut written[at..], item);
        }
        assert_eq!((written, at), (out.clone(), out.len()));
    }

    #[test]
    fn damaged_bytes_read_as_fewer_elements() {
        let mut out = Vec::new();
        encode(&mut out, [&b"abc"[..], b"de"].into_iter());
        out.truncate(out.len() - 1);
        assert_eq!(PackedSeq::new(&out).iter().count(), 1);
        assert_eq!(PackedSeq::new(&out).len(), 1);
        assert_eq!(PackedSeq::new(&[1, b'a', 0x81, 0x01]).len(), 1, "a long length past the end");
        assert_eq!(PackedSeq::new(&[0x80]).len(), 0);
        assert_eq!(PackedSeq::new(&out).nth(1), None);
        assert!(PackedSeq::new(&[]).is_empty());
        let mut three = Vec::new();
        encode(&mut three, [&b"a"[..], b"", b"bc"].into_iter());
        assert_eq!(PackedSeq::new(&three).elements(2), [&b"a"[..], b""]);
        assert_eq!(PackedSeq::new(&three).elements(usize::MAX).len(), 3);
    }
}
