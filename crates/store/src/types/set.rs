//! Set values: unordered collections of distinct byte strings.
//!
//! A set whose members are all integers (in their canonical text) is a
//! sorted array of `i64` — Redis's `intset`, with its name and its ascending
//! order in `SMEMBERS` — until it holds more than `set-max-intset-entries`
//! members or gains a member that is not an integer; then it becomes a hash
//! set (`hashtable`) over a dense array ([`MemberTable`]), which gives `SPOP`
//! and `SRANDMEMBER` uniform picks in O(1) and `SSCAN` a positional cursor.
//! Like Redis, a set never goes back to `intset`.

use kvik_protocol::number::{parse_i64, write_i64};

use super::compact::{CompactBytes, MemberBytes};
use super::hash::scan_dense;
use super::member_table::{Inserted, MemberTable};

/// A set.
#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    /// Integers, ascending, distinct.
    Ints(Vec<i64>),
    /// Anything else.
    Table(MemberTable<()>, MemberBytes),
}

/// One member as stored: an integer of an `intset` or bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member<'a> {
    /// An `intset` member.
    Int(i64),
    /// A hash set member.
    Bytes(&'a [u8]),
}

impl Member<'_> {
    /// The member's text; integers are at most 20 bytes, so this never allocates.
    pub fn to_compact(self) -> CompactBytes {
        match self {
            Member::Int(n) => {
                let mut text = Vec::with_capacity(20);
                write_i64(&mut text, n);
                CompactBytes::new(&text)
            }
            Member::Bytes(b) => CompactBytes::new(b),
        }
    }
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue::Ints(Vec::new())
    }
}

/// The integer `member` stands for, if its text is canonical.
fn as_int(member: &[u8]) -> Option<i64> {
    (member.len() <= 20).then(|| parse_i64(member)).flatten()
}

impl SetValue {
    /// A `hashtable` set of `members`.
    pub fn table(members: MemberTable<()>) -> SetValue {
        let bytes = MemberBytes::of(members.members());
        SetValue::Table(members, bytes)
    }

    /// An empty set in the encoding Redis picks for a set whose first member
    /// is `first`: `intset` for an integer, `hashtable` otherwise.
    pub fn for_first_member(first: &[u8]) -> SetValue {
        if as_int(first).is_some() {
            SetValue::Ints(Vec::new())
        } else {
            SetValue::Table(MemberTable::new(), MemberBytes::default())
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match self {
            SetValue::Ints(v) => v.len(),
            SetValue::Table(s, _) => s.len(),
        }
    }

    /// True when the set has no members (such a key does not exist).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            SetValue::Ints(_) => "intset",
            SetValue::Table(..) => "hashtable",
        }
    }

    /// Bytes held outside the value itself, for the memory estimate.
    pub fn heap_size(&self) -> usize {
        match self {
            SetValue::Ints(v) => v.capacity() * 8,
            SetValue::Table(s, bytes) => s.heap_size() + bytes.get(),
        }
    }

    /// True when `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        match self {
            SetValue::Ints(v) => as_int(member).is_some_and(|n| v.binary_search(&n).is_ok()),
            SetValue::Table(s, _) => s.position(member).is_some(),
        }
    }

    /// Add `member`; true when it is new. `max_intset` is
    /// `set-max-intset-entries`: an `intset` growing past it converts.
    pub fn insert(&mut self, member: &[u8], max_intset: usize) -> bool {
        if let SetValue::Ints(v) = self {
            if let Some(n) = as_int(member) {
                let Err(at) = v.binary_search(&n) else { return false };
                if v.len() < max_intset {
                    v.insert(at, n);
                    return true;
                }
            }
            self.convert_to_table();
        }
        match self {
            SetValue::Table(s, bytes) => match s.insert(member, ()) {
                Inserted::Added(stored) => {
                    bytes.add(stored);
                    true
                }
                Inserted::Replaced(()) => false,
            },
            SetValue::Ints(_) => false,
        }
    }

    /// Remove `member`; true when it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            SetValue::Ints(v) => match as_int(member).map(|n| v.binary_search(&n)) {
                Some(Ok(at)) => {
                    v.remove(at);
                    true
                }
                _ => false,
            },
            SetValue::Table(s, bytes) => match s.swap_remove(member) {
                Some((m, ())) => {
                    bytes.sub(&m);
                    true
                }
                None => false,
            },
        }
    }

    /// The member at position `i` of the set's order (for random picks).
    pub fn get_index(&self, i: usize) -> Option<Member<'_>> {
        match self {
            SetValue::Ints(v) => v.get(i).map(|&n| Member::Int(n)),
            SetValue::Table(s, _) => s.get_index(i).map(|(m, ())| Member::Bytes(m)),
        }
    }

    /// Remove the member at position `i`, returning its text.
    pub fn remove_index(&mut self, i: usize) -> Option<CompactBytes> {
        match self {
            SetValue::Ints(v) => (i < v.len()).then(|| Member::Int(v.remove(i)).to_compact()),
            SetValue::Table(s, bytes) => {
                let (m, ()) = s.swap_remove_index(i)?;
                bytes.sub(&m);
                Some(m)
            }
        }
    }

    /// Members in the set's order (ascending for an `intset`).
    pub fn iter(&self) -> Box<dyn Iterator<Item = Member<'_>> + '_> {
        match self {
            SetValue::Ints(v) => Box::new(v.iter().map(|&n| Member::Int(n))),
            SetValue::Table(s, _) => Box::new(s.members().map(|m| Member::Bytes(m))),
        }
    }

    /// One `SSCAN` step; see [`super::hash::HashValue::scan`] for the cursor.
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(Member<'_>)) -> u64 {
        match self {
            SetValue::Ints(_) => {
                self.iter().for_each(visit);
                0
            }
            SetValue::Table(s, _) => scan_dense(s.len(), cursor, count, |i| {
                if let Some((m, ())) = s.get_index(i) {
                    visit(Member::Bytes(m));
                }
            }),
        }
    }

    fn convert_to_table(&mut self) {
        if let SetValue::Ints(v) = self {
            let table = v.iter().map(|&n| (Member::Int(n).to_compact(), ())).collect();
            *self = SetValue::table(table);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_member_byte_count_follows_every_change() {
        let mut next = crate::types::test_rng::xorshift(0x2545_f491_4f6c_dd1d);
        let mut s = SetValue::for_first_member(b"a");
        for step in 0..4000 {
            let r = next();
            let member = vec![b'm'; 1 + (r % 59) as usize];
            match (r >> 16) % 3 {
                0 => {
                    s.insert(&member, 512);
                }
                1 => {
                    s.remove(&member);
                }
                _ => {
                    s.remove_index((r >> 24) as usize % (s.len() + 1));
                }
            }
            let SetValue::Table(members, bytes) = &s else { panic!("a set of text stays a table") };
            assert_eq!(bytes.get(), MemberBytes::of(members.members()).get(), "step {step}");
        }
        let SetValue::Table(members, bytes) = &s else { unreachable!() };
        assert_eq!(SetValue::table(members.clone()), SetValue::Table(members.clone(), *bytes));
    }

    fn texts(s: &SetValue) -> Vec<String> {
        s.iter().map(|m| String::from_utf8_lossy(&m.to_compact()).into_owned()).collect()
    }

    #[test]
    fn integers_stay_sorted_in_an_intset() {
        let mut s = SetValue::for_first_member(b"5");
        for m in ["5", "-3", "10", "5"] {
            s.insert(m.as_bytes(), 512);
        }
        assert_eq!(s.encoding(), "intset");
        assert_eq!(texts(&s), ["-3", "5", "10"]);
        assert!(s.contains(b"10") && !s.contains(b"010") && !s.contains(b"x"));
        assert!(s.remove(b"-3") && !s.remove(b"-3"));
    }

    #[test]
    fn non_integers_and_size_convert_to_a_table() {
        let mut s = SetValue::for_first_member(b"1");
        s.insert(b"1", 512);
        assert!(s.insert(b"01", 512));
        assert_eq!(s.encoding(), "hashtable");
        assert!(s.contains(b"1") && s.contains(b"01"));
        let mut t = SetValue::for_first_member(b"1");
        t.insert(b"1", 2);
        t.insert(b"2", 2);
        assert_eq!(t.encoding(), "intset");
        t.insert(b"3", 2);
        assert_eq!(t.encoding(), "hashtable");
        assert_eq!(t.len(), 3);
        assert_eq!(SetValue::for_first_member(b"a").encoding(), "hashtable");
    }

    #[test]
    fn removal_by_position() {
        let mut s = SetValue::for_first_member(b"1");
        s.insert(b"1", 512);
        s.insert(b"2", 512);
        assert_eq!(s.remove_index(0).as_deref(), Some(&b"1"[..]));
        assert_eq!(s.remove_index(5), None);
        assert_eq!(s.len(), 1);
        assert_eq!(s.get_index(0), Some(Member::Int(2)));
    }
}
