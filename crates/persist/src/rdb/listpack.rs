//! Redis's listpack, the blob in which RDB 10 stores small hashes, sorted
//! sets, list nodes and stream nodes.
//!
//! ```text
//! [total bytes: u32 LE][element count: u16 LE, 65535 = unknown] element* [0xFF]
//! element = [encoding and data][back length: 1-5 bytes]
//! ```
//!
//! An element is an integer or a string. Integers: `0xxxxxxx` (0 to 127),
//! `110xxxxx` + 1 byte (13-bit signed), `F1`/`F2`/`F3`/`F4` + 2/3/4/8
//! bytes little-endian (signed). Strings: `10LLLLLL` (under 64 bytes),
//! `1110LLLL` + 1 byte (under 4,096), `F0` + u32 LE length. The back length
//! is the size of the encoding and data, 7 bits a byte, most significant
//! first, every byte but the first with its top bit set (it is read from
//! the right when walking backwards).
//!
//! The writer picks the encoding Redis picks: a string that is the
//! canonical decimal text of an `i64` is stored as that integer, in the
//! smallest form. The reader checks everything a loader relies on (the
//! header's sizes, each element inside the blob, each back length, the end
//! marker), since a listpack comes from a file or a client.

use kvik_store::types::listpack_size::back_len_width;

/// The size of the header (total bytes, element count).
const HEADER: usize = 6;
/// The last byte of every listpack.
const END: u8 = 0xFF;
/// The element count that means "count them".
const COUNT_UNKNOWN: u16 = u16::MAX;

/// One element read from a listpack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// An integer element.
    Int(i64),
    /// A string element.
    Str(&'a [u8]),
}

impl Item<'_> {
    /// The element as the bytes of a string (integers as decimal text).
    pub fn to_bytes(self) -> Vec<u8> {
        match self {
            Item::Int(n) => n.to_string().into_bytes(),
            Item::Str(s) => s.to_vec(),
        }
    }

    /// The element as an integer, when it is one or a string that is one.
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Item::Int(n) => Some(n),
            Item::Str(s) => canonical_i64(s),
        }
    }
}

/// Why a listpack cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadListpack;

/// `text` as an integer when it is the canonical decimal text of one: no
/// sign but a leading `-`, no leading zeros, no `-0`, within `i64`.
pub fn canonical_i64(text: &[u8]) -> Option<i64> {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    let canonical = match digits {
        [] => false,
        [b'0'] => digits.len() == text.len(),
        [first, ..] => first.is_ascii_digit() && *first != b'0' && digits.len() <= 19,
    };
    if !canonical || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // All ASCII digits, so the text is UTF-8; out of range fails the parse.
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// Builds a listpack element by element.
#[derive(Debug)]
pub struct Writer {
    buf: Vec<u8>,
    count: usize,
}

impl Default for Writer {
    fn default() -> Self {
        Writer::new()
    }
}

impl Writer {
    /// An empty listpack.
    pub fn new() -> Writer {
        Writer { buf: vec![0; HEADER], count: 0 }
    }

    /// Elements written so far.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes the listpack takes so far (without its end marker).
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    /// Append `item`: as an integer when it is the canonical text of one.
    pub fn push(&mut self, item: &[u8]) {
        match canonical_i64(item) {
            Some(n) => self.push_int(n),
            None => self.push_str(item),
        }
    }

    /// Append a string element as it is.
    pub fn push_str(&mut self, s: &[u8]) {
        let start = self.buf.len();
        let len = s.len();
        if len < 64 {
            self.buf.push(0x80 | len as u8);
        } else if len < 4096 {
            self.buf.push(0xE0 | (len >> 8) as u8);
            self.buf.push((len & 0xff) as u8);
        } else {
            self.buf.push(0xF0);
            self.buf.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
        self.finish_element(start);
    }

    /// Append an integer element in its smallest form.
    pub fn push_int(&mut self, n: i64) {
        let start = self.buf.len();
        if (0..=127).contains(&n) {
            self.buf.push(n as u8);
        } else if (-4096..=4095).contains(&n) {
            let u = (n as u16) & 0x1fff;
            self.buf.push(0xC0 | (u >> 8) as u8);
            self.buf.push((u & 0xff) as u8);
        } else if i16::try_from(n).is_ok() {
            self.buf.push(0xF1);
            self.buf.extend_from_slice(&(n as i16).to_le_bytes());
        } else if (-(1 << 23)..(1 << 23)).contains(&n) {
            self.buf.push(0xF2);
            self.buf.extend_from_slice(&(n as i32).to_le_bytes()[..3]);
        } else if i32::try_from(n).is_ok() {
            self.buf.push(0xF3);
            self.buf.extend_from_slice(&(n as i32).to_le_bytes());
        } else {
            self.buf.push(0xF4);
            self.buf.extend_from_slice(&n.to_le_bytes());
        }
        self.finish_element(start);
    }

    fn finish_element(&mut self, start: usize) {
        let len = self.buf.len() - start;
        put_back_len(&mut self.buf, len);
        self.count += 1;
    }

    /// The finished listpack.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(END);
        let total = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        let count = u16::try_from(self.count).unwrap_or(COUNT_UNKNOWN);
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf
    }
}

/// The back length of an element of `len` bytes: as many bytes as Redis
/// gives it (`back_len_width`), most significant group first, every group
/// after the first with its top bit set.
fn put_back_len(out: &mut Vec<u8>, len: usize) {
    let width = back_len_width(len);
    for i in (0..width).rev() {
        let group = ((len >> (7 * i)) & 0x7f) as u8;
        out.push(if i == width - 1 { group } else { group | 0x80 });
    }
}

/// The elements of a listpack, checked as they are read.
pub struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    /// Elements the header announces (`None`: unknown).
    announced: Option<usize>,
    seen: usize,
}

impl<'a> Reader<'a> {
    /// A reader over `blob`, after checking its header and end marker.
    pub fn new(blob: &'a [u8]) -> Result<Reader<'a>, BadListpack> {
        if blob.len() < HEADER + 1 || blob[blob.len() - 1] != END {
            return Err(BadListpack);
        }
        let total = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
        if total != blob.len() {
            return Err(BadListpack);
        }
        let count = u16::from_le_bytes([blob[4], blob[5]]);
        let announced = (count != COUNT_UNKNOWN).then_some(usize::from(count));
        Ok(Reader { data: &blob[..blob.len() - 1], at: HEADER, announced, seen: 0 })
    }

    /// The number of elements the header announces, when it does.
    pub fn announced(&self) -> Option<usize> {
        self.announced
    }

    /// The next element; `Ok(None)` at the end, once every announced one was read.
    pub fn next_item(&mut self) -> Result<Option<Item<'a>>, BadListpack> {
        if self.at == self.data.len() {
            return match self.announced {
                Some(n) if n != self.seen => Err(BadListpack),
                _ => Ok(None),
            };
        }
        let start = self.at;
        let item = self.element()?;
        let len = self.at - start;
        let mut expected = Vec::with_capacity(5);
        put_back_len(&mut expected, len);
        let back = self.take(expected.len())?;
        if back != expected.as_slice() {
            return Err(BadListpack);
        }
        self.seen += 1;
        Ok(Some(item))
    }

    /// Every remaining element.
    pub fn collect_all(mut self) -> Result<Vec<Item<'a>>, BadListpack> {
        let mut out = Vec::with_capacity(self.announced.unwrap_or(0).min(self.data.len()));
        while let Some(item) = self.next_item()? {
            out.push(item);
        }
        Ok(out)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], BadListpack> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.data.len()).ok_or(BadListpack)?;
        let bytes = &self.data[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn int_le(&mut self, n: usize) -> Result<i64, BadListpack> {
        let bytes = self.take(n)?;
        let mut buf = [0u8; 8];
        buf[..n].copy_from_slice(bytes);
        // Sign-extend from the top bit of the last byte read.
        let shift = 64 - 8 * n as u32;
        Ok((i64::from_le_bytes(buf) << shift) >> shift)
    }

    fn element(&mut self) -> Result<Item<'a>, BadListpack> {
        let b = self.take(1)?[0];
        Ok(match b {
            0x00..=0x7F => Item::Int(i64::from(b)),
            0x80..=0xBF => Item::Str(self.take(usize::from(b & 0x3f))?),
            0xC0..=0xDF => {
                let low = self.take(1)?[0];
                let u = (u16::from(b & 0x1f) << 8) | u16::from(low);
                // 13-bit two's complement.
                Item::Int(i64::from(((u << 3) as i16) >> 3))
            }
            0xE0..=0xEF => {
                let low = self.take(1)?[0];
                Item::Str(self.take((usize::from(b & 0x0f) << 8) | usize::from(low))?)
            }
            0xF0 => {
                let len = self.take(4)?;
                let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
                Item::Str(self.take(len)?)
            }
            0xF1 => Item::Int(self.int_le(2)?),
            0xF2 => Item::Int(self.int_le(3)?),
            0xF3 => Item::Int(self.int_le(4)?),
            0xF4 => Item::Int(self.int_le(8)?),
            _ => return Err(BadListpack),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_come_back_in_the_forms_redis_picks() {
        let mut w = Writer::new();
        let ints = [0i64, 127, 128, -1, -4096, 4095, 4096, -32768, 32767, 8_388_607, -8_388_608, 1 << 31, i64::MIN];
        for n in ints {
            w.push(n.to_string().as_bytes());
        }
        let strs: [&[u8]; 5] = [b"", b"hello", b"007", b"-0", &[b'x'; 5000]];
        for s in strs {
            w.push(s);
        }
        let lp = w.finish();
        let items = Reader::new(&lp).expect("header").collect_all().expect("elements");
        let want: Vec<Item<'_>> = ints.iter().map(|&n| Item::Int(n)).chain(strs.iter().map(|s| Item::Str(s))).collect();
        assert_eq!(items, want);
    }

    #[test]
    fn only_canonical_integer_text_is_an_integer() {
        for (text, want) in [
            (&b"0"[..], Some(0)),
            (b"-1", Some(-1)),
            (b"9223372036854775807", Some(i64::MAX)),
            (b"-9223372036854775808", Some(i64::MIN)),
            (b"9223372036854775808", None),
            (b"-0", None),
            (b"007", None),
            (b"+5", None),
            (b" 5", None),
            (b"5 ", None),
            (b"", None),
            (b"-", None),
            (b"1e3", None),
        ] {
            assert_eq!(canonical_i64(text), want, "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn a_listpack_from_redis_reads() {
        // The listpack of `HSET h a 1 bb 300` on redis-server 7.0: 4
        // elements, "a" (6-bit string), 1 (7-bit), "bb", 300 (13-bit).
        let lp = [0x13, 0, 0, 0, 4, 0, 0x81, b'a', 2, 0x01, 1, 0x82, b'b', b'b', 3, 0xC1, 0x2C, 2, 0xFF];
        let items = Reader::new(&lp).expect("header").collect_all().expect("elements");
        assert_eq!(items, [Item::Str(b"a"), Item::Int(1), Item::Str(b"bb"), Item::Int(300)]);
        let mut w = Writer::new();
        for s in [&b"a"[..], b"1", b"bb", b"300"] {
            w.push(s);
        }
        assert_eq!(w.finish(), lp, "written the same way");
    }

    #[test]
    fn back_lengths_span_several_bytes_for_long_elements() {
        let mut w = Writer::new();
        w.push_str(&[b'y'; 200]);
        let lp = w.finish();
        // 202 bytes of encoding and data: back length 0x01 0xCA.
        assert_eq!(&lp[lp.len() - 3..lp.len() - 1], &[0x01, 0xCA]);
        assert_eq!(Reader::new(&lp).expect("header").collect_all().expect("reads").len(), 1);
    }

    #[test]
    fn back_lengths_take_the_widths_redis_gives_them() {
        let back = |len| {
            let mut out = Vec::new();
            put_back_len(&mut out, len);
            out
        };
        assert_eq!(back(127), [127]);
        assert_eq!(back(128), [0x01, 0x80]);
        assert_eq!(back(16_382), [0x7f, 0xfe]);
        // Redis gives the largest 14-bit value three bytes.
        assert_eq!(back(16_383), [0x00, 0xff, 0xff]);
        assert_eq!(back(2_097_150), [0x7f, 0xff, 0xfe]);
        assert_eq!(back(2_097_151), [0x00, 0xff, 0xff, 0xff]);
        assert_eq!(back(268_435_455).len(), 5);
        // A string whose element is exactly 16,383 bytes reads back.
        let mut w = Writer::new();
        w.push_str(&vec![b'q'; 16_378]);
        let lp = w.finish();
        assert_eq!(&lp[lp.len() - 4..lp.len() - 1], &[0x00, 0xff, 0xff]);
        assert_eq!(Reader::new(&lp).and_then(Reader::collect_all).map(|v| v.len()), Ok(1));
    }

    #[test]
    fn damaged_listpacks_are_refused() {
        let mut w = Writer::new();
        w.push(b"field");
        w.push(b"12");
        let lp = w.finish();
        let read = |b: &[u8]| Reader::new(b).and_then(Reader::collect_all).map(|v| v.len());
        assert_eq!(read(&lp), Ok(2));
        assert_eq!(read(&lp[..lp.len() - 1]), Err(BadListpack), "no end marker");
        let mut wrong_total = lp.clone();
        wrong_total[0] += 1;
        assert_eq!(read(&wrong_total), Err(BadListpack));
        let mut wrong_count = lp.clone();
        wrong_count[4] = 3;
        assert_eq!(read(&wrong_count), Err(BadListpack));
        let mut long_string = lp.clone();
        long_string[6] = 0xBF;
        assert_eq!(read(&long_string), Err(BadListpack), "a string past the end");
        let mut bad_back = lp.clone();
        bad_back[12] ^= 1;
        assert_eq!(read(&bad_back), Err(BadListpack), "a back length that does not match");
        let mut bad_encoding = lp;
        bad_encoding[6] = 0xF5;
        assert_eq!(read(&bad_encoding), Err(BadListpack));
    }
}
