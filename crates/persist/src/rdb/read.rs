//! Reading RDB primitives from a byte slice, every read bounded by it.

use std::borrow::Cow;

use super::RdbError;
use crate::lzf;

/// Most bytes an LZF stream of `n` bytes can expand to: a 3-byte
/// reference copies at most 264 bytes.
fn lzf_bound(n: usize) -> usize {
    n.saturating_mul(88).saturating_add(32)
}

/// A cursor over RDB bytes.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Input<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data, at: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.at
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.at
    }

    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], RdbError> {
        if n > self.remaining() {
            return Err(RdbError::Truncated);
        }
        let bytes = &self.data[self.at..self.at + n];
        self.at += n;
        Ok(bytes)
    }

    /// The next byte.
    pub fn byte(&mut self) -> Result<u8, RdbError> {
        Ok(self.take(1)?[0])
    }

    /// The next byte, not consumed.
    pub fn peek(&self) -> Option<u8> {
        self.data.get(self.at).copied()
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RdbError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// A length, or the marker of an encoded string: `(n, false)` for a
    /// length, `(form, true)` for a string in integer or LZF form.
    fn len_or_encoding(&mut self) -> Result<(u64, bool), RdbError> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => (u64::from(b & 0x3f), false),
            1 => (u64::from(b & 0x3f) << 8 | u64::from(self.byte()?), false),
            2 => match b {
                0x80 => (u64::from(u32::from_be_bytes(self.array()?)), false),
                0x81 => (u64::from_be_bytes(self.array()?), false),
                _ => return Err(RdbError::Bad("length")),
            },
            _ => (u64::from(b & 0x3f), true),
        })
    }

    /// A length.
    pub fn len(&mut self) -> Result<u64, RdbError> {
        match self.len_or_encoding()? {
            (n, false) => Ok(n),
            (_, true) => Err(RdbError::Bad("length")),
        }
    }

    /// A count of items that each take at least `min_bytes` of the input:
    /// a count the rest of the input cannot hold is refused here, so a
    /// forged count cannot make the loader reserve memory for it.
    pub fn count(&mut self, min_bytes: usize) -> Result<usize, RdbError> {
        let n = usize::try_from(self.len()?).map_err(|_| RdbError::Bad("count"))?;
        if n.checked_mul(min_bytes.max(1)).is_none_or(|need| need > self.remaining()) {
            return Err(RdbError::Bad("count"));
        }
        Ok(n)
    }

    /// A string in any of its forms: bytes, an integer, LZF-compressed.
    pub fn string(&mut self) -> Result<Cow<'a, [u8]>, RdbError> {
        match self.len_or_encoding()? {
            (n, false) => {
                let n = usize::try_from(n).map_err(|_| RdbError::Truncated)?;
                Ok(Cow::Borrowed(self.take(n)?))
            }
            (0, true) => Ok(Cow::Owned((self.byte()? as i8).to_string().into_bytes())),
            (1, true) => Ok(Cow::Owned(i16::from_le_bytes(self.array()?).to_string().into_bytes())),
            (2, true) => Ok(Cow::Owned(i32::from_le_bytes(self.array()?).to_string().into_bytes())),
            (3, true) => {
                let packed_len = usize::try_from(self.len()?).map_err(|_| RdbError::Truncated)?;
                let len = usize::try_from(self.len()?).map_err(|_| RdbError::Bad("compressed string"))?;
                let packed = self.take(packed_len)?;
                if len > lzf_bound(packed_len) {
                    return Err(RdbError::Bad("compressed string length"));
                }
                lzf::decompress(packed, len).map(Cow::Owned).map_err(|_| RdbError::Bad("compressed string"))
            }
            _ => Err(RdbError::Bad("string encoding")),
        }
    }

    /// A string that must be an integer's text (stream ids, counters in
    /// old encodings).
    pub fn string_int(&mut self) -> Result<i64, RdbError> {
        let s = self.string()?;
        super::listpack::canonical_i64(&s).ok_or(RdbError::Bad("integer"))
    }

    /// A double as 8 bytes, little endian (RDB 8 and later).
    pub fn binary_double(&mut self) -> Result<f64, RdbError> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A double in the text form of RDB versions before 8: a length byte
    /// (253 NaN, 254 +inf, 255 -inf) and that many bytes of text.
    pub fn text_double(&mut self) -> Result<f64, RdbError> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let text = self.take(usize::from(n))?;
                std::str::from_utf8(text).ok().and_then(|t| t.parse().ok()).ok_or(RdbError::Bad("double"))
            }
        }
    }

    /// A time in Unix milliseconds, 8 bytes little endian.
    pub fn ms(&mut self) -> Result<i64, RdbError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// A time in Unix seconds, 4 bytes little endian (RDB before 3).
    pub fn seconds(&mut self) -> Result<i32, RdbError> {
        Ok(i32::from_le_bytes(self.array()?))
    }

    /// A 16-byte stream id, two big-endian u64 (milliseconds, sequence).
    pub fn raw_id(&mut self) -> Result<(u64, u64), RdbError> {
        let raw: [u8; 16] = self.array()?;
        let (ms, seq) = raw.split_at(8);
        let mut a = [0u8; 8];
        let mut b = [0u8; 8];
        a.copy_from_slice(ms);
        b.copy_from_slice(seq);
        Ok((u64::from_be_bytes(a), u64::from_be_bytes(b)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::write::{put_len, put_string};
    use super::*;

    #[test]
    fn what_is_written_reads_back() {
        let mut out = Vec::new();
        for n in [0u64, 63, 64, 16383, 16384, u64::from(u32::MAX), 1 << 40] {
            put_len(&mut out, n);
        }
        let long = b"spam spam spam spam spam spam spam spam spam spam".to_vec();
        for s in [&b"300"[..], b"-128", b"70000", b"007", b"", &long] {
            put_string(&mut out, s, true);
        }
        let mut r = Input::new(&out);
        for n in [0u64, 63, 64, 16383, 16384, u64::from(u32::MAX), 1 << 40] {
            assert_eq!(r.len(), Ok(n));
        }
        for s in [&b"300"[..], b"-128", b"70000", b"007", b"", &long] {
            assert_eq!(r.string().as_deref(), Ok(s));
        }
        assert!(r.is_empty());
    }

    #[test]
    fn a_compressed_string_from_redis_reads() {
        // DUMP of 70 times "a" on redis-server 7.0 (after the type byte).
        let bytes = b"\xc3\t@F\x01aa\xe09\x00\x01aa";
        assert_eq!(Input::new(bytes).string().as_deref(), Ok(&[b'a'; 70][..]));
    }

    #[test]
    fn damaged_input_is_an_error() {
        assert_eq!(Input::new(&[0x82]).len(), Err(RdbError::Bad("length")));
        assert_eq!(Input::new(&[0x80, 0, 0]).len(), Err(RdbError::Truncated));
        assert_eq!(Input::new(&[5, b'a']).string(), Err(RdbError::Truncated));
        assert_eq!(Input::new(&[0xC4]).string(), Err(RdbError::Bad("string encoding")));
        // An LZF string claiming a length no 3 bytes could expand to.
        assert_eq!(
            Input::new(&[0xC3, 3, 0x80, 0x10, 0, 0, 0, 0, b'a', 0xe0]).string().map(|_| ()),
            Err(RdbError::Bad("compressed string length"))
        );
        // A count larger than the input could hold.
        assert_eq!(Input::new(&[0x80, 0, 0x10, 0, 0]).count(1), Err(RdbError::Bad("count")));
    }
}
