//! Short byte strings kept inline: list elements, hash fields and values,
//! set members.
//!
//! Most elements of aggregate values are short (ids, names, small numbers).
//! A `Box<[u8]>` for each would cost a pointer, a length and an allocation
//! with its allocator header per element; [`CompactBytes`] keeps up to
//! [`INLINE_MAX`] bytes in its own 24 bytes and only longer ones on the heap.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::OnceLock;

use foldhash::fast::{FixedState, FoldHasher};

/// Longest byte string stored without an allocation.
pub const INLINE_MAX: usize = 22;

/// A byte string, inline when short.
#[derive(Clone)]
pub enum CompactBytes {
    /// Up to [`INLINE_MAX`] bytes; `len` of `bytes` are used.
    Inline {
        /// Bytes in use.
        len: u8,
        /// The bytes, zero after `len`.
        bytes: [u8; INLINE_MAX],
    },
    /// Longer strings.
    Heap(Box<[u8]>),
}

impl CompactBytes {
    /// A copy of `bytes`.
    pub fn new(bytes: &[u8]) -> CompactBytes {
        if bytes.len() <= INLINE_MAX {
            let mut inline = [0u8; INLINE_MAX];
            inline[..bytes.len()].copy_from_slice(bytes);
            CompactBytes::Inline { len: bytes.len() as u8, bytes: inline }
        } else {
            CompactBytes::Heap(bytes.into())
        }
    }

    /// Make this a copy of `bytes`. A heap string of the same length is
    /// overwritten where it lies: HSET of a new value of the same size, the
    /// usual update, then costs neither an allocation nor a free.
    pub fn set(&mut self, bytes: &[u8]) {
        match self {
            CompactBytes::Heap(b) if b.len() == bytes.len() => b.copy_from_slice(bytes),
            _ => *self = CompactBytes::new(bytes),
        }
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            CompactBytes::Inline { len, bytes } => &bytes[..usize::from(*len)],
            CompactBytes::Heap(b) => b,
        }
    }

    /// Bytes allocated outside the value itself.
    pub fn heap_size(&self) -> usize {
        match self {
            CompactBytes::Inline { .. } => 0,
            CompactBytes::Heap(b) => b.len(),
        }
    }
}

/// The hasher of the tables inside sets, hashes and sorted sets: foldhash
/// seeded at random once per process, as the keyspace's own table is, so
/// clients cannot choose members that collide. Hashing a short member costs
/// a fraction of what the standard library's SipHash costs, and every
/// SADD, HSET or ZADD hashes its member at least once. Iteration order of
/// these tables is their insertion order, whatever the hasher.
#[derive(Clone, Debug)]
pub struct MemberHasher(FixedState);

impl Default for MemberHasher {
    fn default() -> Self {
        static SEED: OnceLock<u64> = OnceLock::new();
        // The standard library seeds its hashers from the operating system.
        MemberHasher(FixedState::with_seed(
            *SEED.get_or_init(|| std::hash::RandomState::new().hash_one(0x6d65_6d62_u64)),
        ))
    }
}

impl BuildHasher for MemberHasher {
    type Hasher = FoldHasher<'static>;

    fn build_hasher(&self) -> Self::Hasher {
        self.0.build_hasher()
    }
}

/// The heap bytes a collection's members hold beyond their inline storage
/// (the sum of [`CompactBytes::heap_size`]), kept exact as members come
/// and go.
///
/// Every write to a key takes the key's memory estimate out of the
/// used-memory total and puts the new one back, so the estimate is read
/// twice per write. Kept as a running sum, it costs the same for a
/// collection of any size; summing the members on each read would make
/// every write to a large set or hash cost time in proportion to its size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemberBytes(usize);

impl MemberBytes {
    /// The sum over `members`.
    pub fn of<'a>(members: impl IntoIterator<Item = &'a CompactBytes>) -> MemberBytes {
        MemberBytes(members.into_iter().map(CompactBytes::heap_size).sum())
    }

    /// Count a member that joined.
    pub fn add(&mut self, member: &CompactBytes) {
        self.0 += member.heap_size();
    }

    /// Rewrite `member`, which is counted, to `bytes` ([`CompactBytes::set`]),
    /// counting the change.
    pub fn rewrite(&mut self, member: &mut CompactBytes, bytes: &[u8]) {
        self.sub(member);
        member.set(bytes);
        self.add(member);
    }

    /// Stop counting a member that left; it must have been counted.
    pub fn sub(&mut self, member: &CompactBytes) {
        debug_assert!(self.0 >= member.heap_size(), "a member left that was never counted");
        self.0 = self.0.saturating_sub(member.heap_size());
    }

    /// The sum.
    pub fn get(self) -> usize {
        self.0
    }
}

impl std::ops::Deref for CompactBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Borrow<[u8]> for CompactBytes {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl From<&[u8]> for CompactBytes {
    fn from(bytes: &[u8]) -> CompactBytes {
        CompactBytes::new(bytes)
    }
}

/// Equality, order and hash are those of the bytes, whatever the storage,
/// so maps keyed by `CompactBytes` can be searched with a `&[u8]`.
impl PartialEq for CompactBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for CompactBytes {}

impl PartialOrd for CompactBytes {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for CompactBytes {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl Hash for CompactBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl fmt::Debug for CompactBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn member_bytes_count_only_heap_members() {
        let short = CompactBytes::new(b"abc");
        let long = CompactBytes::new(&[7u8; 100]);
        let mut sum = MemberBytes::of([&short, &long]);
        assert_eq!(sum.get(), 100);
        sum.add(&long);
        assert_eq!(sum.get(), 200);
        sum.sub(&long);
        sum.sub(&short);
        assert_eq!(sum, MemberBytes::of([&long]));
    }

    #[test]
    fn set_rewrites_a_heap_string_of_the_same_length_where_it_lies() {
        let long = |b: u8| vec![b; INLINE_MAX + 10];
        let mut s = CompactBytes::new(&long(1));
        let at = s.as_slice().as_ptr();
        s.set(&long(2));
        assert_eq!(s.as_slice(), &long(2)[..]);
        assert_eq!(s.as_slice().as_ptr(), at, "same length: the same allocation");
        // Any other length, and inline strings, are made anew.
        s.set(&[3u8; INLINE_MAX + 11]);
        assert_eq!(s.as_slice(), &[3u8; INLINE_MAX + 11][..]);
        s.set(b"abc");
        assert!(matches!(s, CompactBytes::Inline { len: 3, .. }));
        s.set(b"xyz");
        assert_eq!(s.as_slice(), b"xyz");
        s.set(&long(4));
        assert!(matches!(s, CompactBytes::Heap(_)));
        assert_eq!(s.as_slice(), &long(4)[..]);
    }

    #[test]
    fn fits_in_three_words() {
        assert_eq!(std::mem::size_of::<CompactBytes>(), 24);
    }

    #[test]
    fn short_and_long_strings_read_back_and_compare_by_content() {
        let short = CompactBytes::new(b"abc");
        let edge = CompactBytes::new(&[7u8; INLINE_MAX]);
        let long = CompactBytes::new(&[7u8; INLINE_MAX + 1]);
        assert!(matches!(short, CompactBytes::Inline { .. }) && matches!(edge, CompactBytes::Inline { .. }));
        assert!(matches!(long, CompactBytes::Heap(_)));
        assert_eq!(&*short, b"abc");
        assert_eq!(long.len(), INLINE_MAX + 1);
        assert!(edge < long);
        let mut map = HashMap::new();
        map.insert(long.clone(), 1);
        map.insert(short, 2);
        assert_eq!(map.get(&[7u8; INLINE_MAX + 1][..]), Some(&1));
        assert_eq!(map.get(&b"abc"[..]), Some(&2));
    }
}
