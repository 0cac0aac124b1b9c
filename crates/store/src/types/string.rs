//! String values and their encodings.
//!
//! Like Redis, a string that is the canonical text of a 64-bit integer is kept
//! as the integer (8 bytes instead of a heap buffer, and INCR needs no
//! parsing); other strings keep their bytes. `OBJECT ENCODING` reports
//! Redis's names: `int`, `embstr` for short strings written whole, `raw` for
//! longer ones and for strings changed in place (APPEND, SETRANGE).

use kvik_protocol::number::{parse_i64, write_i64};

/// Longest string Redis stores as `embstr`.
const EMBSTR_MAX: usize = 44;

/// Largest string a client may create (Redis's default `proto-max-bulk-len`,
/// 512 MB); SETRANGE, SETBIT and friends refuse to grow a string beyond it.
pub const MAX_STRING_LEN: u64 = 512 * 1024 * 1024;

/// The byte range `GETRANGE` returns for `start..=end` on a string of `len`
/// bytes, with Redis's rules: negative indexes count from the end, both ends
/// are clamped, and an empty or inverted range gives `None`.
pub fn byte_range(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let from_end = |i: i64| if i < 0 { len_i.wrapping_add(i).max(0) } else { i };
    let start = from_end(start);
    let end = from_end(end).min(len_i - 1);
    if len == 0 || start > end {
        return None;
    }
    Some((usize::try_from(start).ok()?, usize::try_from(end).ok()?))
}

/// Overwrite `bytes` with `value` at `offset`, zero-padding the gap; the new length.
pub fn write_at(bytes: &mut Vec<u8>, offset: usize, value: &[u8]) -> usize {
    let end = offset + value.len();
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[offset..end].copy_from_slice(value);
    bytes.len()
}

/// The integer a string written whole is stored as: `bytes` when they are
/// the canonical text of a 64-bit integer (Redis only tries strings of up
/// to 20 bytes).
pub fn stored_int(bytes: &[u8]) -> Option<i64> {
    (bytes.len() <= 20).then(|| parse_i64(bytes)).flatten()
}

/// A string value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrValue {
    /// The canonical text of this integer.
    Int(i64),
    /// Bytes written whole (SET, GETSET, …).
    Bytes(Vec<u8>),
    /// Bytes changed in place; always reported as `raw`.
    Raw(Vec<u8>),
}

impl StrValue {
    /// Store `bytes` in the most compact form that reads back identically.
    pub fn from_bytes(bytes: &[u8]) -> StrValue {
        match stored_int(bytes) {
            Some(n) => StrValue::Int(n),
            None => StrValue::Bytes(bytes.to_vec()),
        }
    }

    /// A borrowed view of the string.
    pub fn view(&self) -> StrRef<'_> {
        match self {
            StrValue::Int(n) => StrRef::Int(*n),
            StrValue::Bytes(b) => StrRef::Bytes(b),
            StrValue::Raw(b) => StrRef::Raw(b),
        }
    }

    /// Length in bytes of the string's text.
    pub fn len(&self) -> usize {
        self.view().len()
    }

    /// Bytes allocated for the string's text (0 for an integer).
    pub fn heap_size(&self) -> usize {
        match self {
            StrValue::Int(_) => 0,
            StrValue::Bytes(b) | StrValue::Raw(b) => b.capacity(),
        }
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The string's bytes, formatting an integer into `scratch` when needed.
    pub fn bytes<'a>(&'a self, scratch: &'a mut Vec<u8>) -> &'a [u8] {
        match self {
            StrValue::Int(n) => {
                scratch.clear();
                write_i64(scratch, *n);
                scratch
            }
            StrValue::Bytes(b) | StrValue::Raw(b) => b,
        }
    }

    /// The integer this string holds, if it is one (Redis's `string2ll` rules).
    pub fn as_i64(&self) -> Option<i64> {
        self.view().as_i64()
    }

    /// Mutable bytes for an in-place change; the value becomes `raw`.
    pub fn make_raw(&mut self) -> &mut Vec<u8> {
        if !matches!(self, StrValue::Raw(_)) {
            let bytes = match std::mem::replace(self, StrValue::Raw(Vec::new())) {
                StrValue::Int(n) => {
                    let mut v = Vec::new();
                    write_i64(&mut v, n);
                    v
                }
                StrValue::Bytes(b) | StrValue::Raw(b) => b,
            };
            *self = StrValue::Raw(bytes);
        }
        match self {
            StrValue::Raw(b) => b,
            // Just made raw above.
            _ => unreachable!("string was made raw"),
        }
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        self.view().encoding()
    }
}

/// A borrowed string, wherever it is stored: what read commands get, so
/// reading a value never copies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrRef<'a> {
    /// The canonical text of this integer.
    Int(i64),
    /// Bytes written whole.
    Bytes(&'a [u8]),
    /// Bytes changed in place.
    Raw(&'a [u8]),
}

impl<'a> StrRef<'a> {
    /// Length in bytes of the string's text.
    pub fn len(self) -> usize {
        match self {
            StrRef::Int(n) => kvik_protocol::number::i64_len(n),
            StrRef::Bytes(b) | StrRef::Raw(b) => b.len(),
        }
    }

    /// True for the empty string.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The string's bytes, formatting an integer into `scratch` when needed.
    pub fn bytes<'s>(self, scratch: &'s mut Vec<u8>) -> &'s [u8]
    where
        'a: 's,
    {
        match self {
            StrRef::Int(n) => {
                scratch.clear();
                write_i64(scratch, n);
                scratch
            }
            StrRef::Bytes(b) | StrRef::Raw(b) => b,
        }
    }

    /// The integer this string holds, if it is one (Redis's `string2ll` rules).
    pub fn as_i64(self) -> Option<i64> {
        match self {
            StrRef::Int(n) => Some(n),
            StrRef::Bytes(b) | StrRef::Raw(b) => parse_i64(b),
        }
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(self) -> &'static str {
        match self {
            StrRef::Int(_) => "int",
            StrRef::Bytes(b) if b.len() <= EMBSTR_MAX => "embstr",
            _ => "raw",
        }
    }

    /// An owned copy, in the same encoding.
    pub fn to_owned(self) -> StrValue {
        match self {
            StrRef::Int(n) => StrValue::Int(n),
            StrRef::Bytes(b) => StrValue::Bytes(b.to_vec()),
            StrRef::Raw(b) => StrValue::Raw(b.to_vec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_stored_as_integers_only_when_canonical() {
        assert_eq!(StrValue::from_bytes(b"123"), StrValue::Int(123));
        assert_eq!(StrValue::from_bytes(b"-9223372036854775808"), StrValue::Int(i64::MIN));
        assert_eq!(StrValue::from_bytes(b"0123"), StrValue::Bytes(b"0123".to_vec()));
        assert_eq!(StrValue::from_bytes(b"+1"), StrValue::Bytes(b"+1".to_vec()));
        assert_eq!(StrValue::from_bytes(b"9223372036854775808"), StrValue::Bytes(b"9223372036854775808".to_vec()));
    }

    #[test]
    fn byte_ranges_follow_getrange() {
        assert_eq!(byte_range(5, 0, -1), Some((0, 4)));
        assert_eq!(byte_range(5, -3, -1), Some((2, 4)));
        assert_eq!(byte_range(5, -1, -3), None);
        assert_eq!(byte_range(5, 3, 1), None);
        assert_eq!(byte_range(5, -100, 100), Some((0, 4)));
        assert_eq!(byte_range(0, 0, -1), None);
        assert_eq!(byte_range(5, i64::MIN, i64::MAX), Some((0, 4)));
        assert_eq!(byte_range(5, 10, 20), None);
    }

    #[test]
    fn writes_pad_with_zeros() {
        let mut b = b"ab".to_vec();
        assert_eq!(write_at(&mut b, 4, b"x"), 5);
        assert_eq!(b, b"ab\0\0x");
        assert_eq!(write_at(&mut b, 0, b"AB"), 5);
        assert_eq!(b, b"AB\0\0x");
    }

    #[test]
    fn encodings_use_redis_names() {
        assert_eq!(StrValue::from_bytes(b"12").encoding(), "int");
        assert_eq!(StrValue::from_bytes(&[b'a'; 44]).encoding(), "embstr");
        assert_eq!(StrValue::from_bytes(&[b'a'; 45]).encoding(), "raw");
        let mut s = StrValue::from_bytes(b"ab");
        s.make_raw().push(b'c');
        assert_eq!(s.encoding(), "raw");
        let mut scratch = Vec::new();
        assert_eq!(s.bytes(&mut scratch), b"abc");
        assert_eq!(StrValue::Int(-5).bytes(&mut scratch), b"-5");
        assert_eq!(StrValue::Int(-5).len(), 2);
    }
}
