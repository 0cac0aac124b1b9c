//! The other blobs RDB packs values in: the intset (sets of integers, still
//! written by Redis 7.0), and the ziplist and zipmap that Redis 6 and
//! earlier wrote for small lists, hashes and sorted sets (read only).
//!
//! Intset: `[encoding: u32 LE: 2, 4 or 8][count: u32 LE]` then the
//! integers, little endian, each of the encoding's size, strictly
//! ascending.
//!
//! Ziplist: `[bytes: u32 LE][tail offset: u32 LE][count: u16 LE]`, entries,
//! `0xFF`. An entry is the previous entry's length (1 byte under 254, else
//! `0xFE` and u32 LE), then its encoding: `00LLLLLL`, `01LLLLLL LLLLLLLL`
//! (big endian) or `0x80` + u32 BE for strings; `0xC0` i16, `0xD0` i32,
//! `0xE0` i64, `0xF0` i24, `0xFE` i8 (little endian); `0xF1`..`0xFD` the
//! integers 0 to 12.
//!
//! Zipmap: `[count: 1 byte, 254 = unknown]`, then pairs: the key's length
//! (1 byte under 254, else `0xFE` and u32 LE), the key, the value's length
//! in the same form, one byte of free space after the value, the value,
//! that many free bytes; `0xFF` at the end.

use super::listpack::Item;
use super::RdbError;

const BAD_INTSET: RdbError = RdbError::Bad("intset");
const BAD_ZIPLIST: RdbError = RdbError::Bad("ziplist");
const BAD_ZIPMAP: RdbError = RdbError::Bad("zipmap");

/// The intset of `ints` (strictly ascending), in the smallest encoding
/// that holds them all.
pub fn intset(ints: &[i64]) -> Vec<u8> {
    debug_assert!(ints.windows(2).all(|w| w[0] < w[1]));
    let width: usize = if ints.iter().all(|&n| i16::try_from(n).is_ok()) {
        2
    } else if ints.iter().all(|&n| i32::try_from(n).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * ints.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&u32::try_from(ints.len()).unwrap_or(u32::MAX).to_le_bytes());
    for &n in ints {
        out.extend_from_slice(&n.to_le_bytes()[..width]);
    }
    out
}

/// The integers of an intset blob, checked: a known width, a count of at
/// least one filling the blob exactly, strictly ascending.
pub fn read_intset(blob: &[u8]) -> Result<Vec<i64>, RdbError> {
    if blob.len() < 8 {
        return Err(BAD_INTSET);
    }
    let width = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
    let count = u32::from_le_bytes([blob[4], blob[5], blob[6], blob[7]]) as usize;
    // Redis refuses an empty intset as corrupt, and so does kvik.
    if !matches!(width, 2 | 4 | 8) || count == 0 || count.checked_mul(width) != Some(blob.len() - 8) {
        return Err(BAD_INTSET);
    }
    let ints: Vec<i64> = blob[8..]
        .chunks_exact(width)
        .map(|c| {
            let mut buf = [0u8; 8];
            buf[..width].copy_from_slice(c);
            let shift = 64 - 8 * width as u32;
            (i64::from_le_bytes(buf) << shift) >> shift
        })
        .collect();
    if ints.windows(2).any(|w| w[0] >= w[1]) {
        return Err(BAD_INTSET);
    }
    Ok(ints)
}

/// A little cursor for the two old blobs.
struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, err: RdbError) -> Result<&'a [u8], RdbError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.data.len()).ok_or(err)?;
        let bytes = &self.data[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn byte(&mut self, err: RdbError) -> Result<u8, RdbError> {
        Ok(self.take(1, err)?[0])
    }

    fn u32_le(&mut self, err: RdbError) -> Result<u32, RdbError> {
        let b = self.take(4, err)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn int_le(&mut self, n: usize, err: RdbError) -> Result<i64, RdbError> {
        let bytes = self.take(n, err)?;
        let mut buf = [0u8; 8];
        buf[..n].copy_from_slice(bytes);
        let shift = 64 - 8 * n as u32;
        Ok((i64::from_le_bytes(buf) << shift) >> shift)
    }
}

/// The entries of a ziplist blob, checked: the header's size and tail,
/// each entry inside the blob with the previous length it records, the
/// count (unless it is the "unknown" 65535), the end marker.
pub fn read_ziplist(blob: &[u8]) -> Result<Vec<Item<'_>>, RdbError> {
    if blob.len() < 11 || blob[blob.len() - 1] != 0xFF {
        return Err(BAD_ZIPLIST);
    }
    let mut c = Cursor { data: &blob[..blob.len() - 1], at: 0 };
    let total = c.u32_le(BAD_ZIPLIST)? as usize;
    let tail = c.u32_le(BAD_ZIPLIST)? as usize;
    let count = u16::from_le_bytes([blob[8], blob[9]]);
    c.at = 10;
    if total != blob.len() {
        return Err(BAD_ZIPLIST);
    }
    let mut items = Vec::new();
    let (mut prev_len, mut last_start) = (0usize, 10usize);
    while c.at < c.data.len() {
        let start = c.at;
        let recorded_prev = match c.byte(BAD_ZIPLIST)? {
            0xFE => c.u32_le(BAD_ZIPLIST)? as usize,
            0xFF => return Err(BAD_ZIPLIST),
            n => usize::from(n),
        };
        if recorded_prev != prev_len {
            return Err(BAD_ZIPLIST);
        }
        let b = c.byte(BAD_ZIPLIST)?;
        let item = match b >> 6 {
            0 => Item::Str(c.take(usize::from(b & 0x3f), BAD_ZIPLIST)?),
            1 => {
                let low = c.byte(BAD_ZIPLIST)?;
                Item::Str(c.take(usize::from(b & 0x3f) << 8 | usize::from(low), BAD_ZIPLIST)?)
            }
            2 if b == 0x80 => {
                let len = c.take(4, BAD_ZIPLIST)?;
                Item::Str(c.take(u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize, BAD_ZIPLIST)?)
            }
            _ => match b {
                0xC0 => Item::Int(c.int_le(2, BAD_ZIPLIST)?),
                0xD0 => Item::Int(c.int_le(4, BAD_ZIPLIST)?),
                0xE0 => Item::Int(c.int_le(8, BAD_ZIPLIST)?),
                0xF0 => Item::Int(c.int_le(3, BAD_ZIPLIST)?),
                0xFE => Item::Int(c.int_le(1, BAD_ZIPLIST)?),
                0xF1..=0xFD => Item::Int(i64::from(b & 0x0f) - 1),
                _ => return Err(BAD_ZIPLIST),
            },
        };
        items.push(item);
        prev_len = c.at - start;
        last_start = start;
    }
    let tail_ok = if items.is_empty() { tail == 10 } else { tail == last_start };
    if !tail_ok || (count != u16::MAX && usize::from(count) != items.len()) {
        return Err(BAD_ZIPLIST);
    }
    Ok(items)
}

/// A key and its value, borrowed from a blob.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// The key-value pairs of a zipmap blob, checked.
pub fn read_zipmap(blob: &[u8]) -> Result<Vec<Pair<'_>>, RdbError> {
    let mut c = Cursor { data: blob, at: 0 };
    let count = c.byte(BAD_ZIPMAP)?;
    let mut pairs = Vec::new();
    loop {
        let key_len = match c.byte(BAD_ZIPMAP)? {
            0xFF => break,
            0xFE => c.u32_le(BAD_ZIPMAP)? as usize,
            n => usize::from(n),
        };
        let key = c.take(key_len, BAD_ZIPMAP)?;
        let value_len = match c.byte(BAD_ZIPMAP)? {
            0xFF => return Err(BAD_ZIPMAP),
            0xFE => c.u32_le(BAD_ZIPMAP)? as usize,
            n => usize::from(n),
        };
        let free = usize::from(c.byte(BAD_ZIPMAP)?);
        let value = c.take(value_len, BAD_ZIPMAP)?;
        c.take(free, BAD_ZIPMAP)?;
        pairs.push((key, value));
    }
    if c.at != blob.len() || (count < 254 && usize::from(count) != pairs.len()) {
        return Err(BAD_ZIPMAP);
    }
    Ok(pairs)
}

/// A ziplist of `items` as Redis 6 wrote one (for tests of the readers).
#[cfg(test)]
pub(crate) fn ziplist(items: &[&[u8]]) -> Vec<u8> {
    let mut body = Vec::new();
    let (mut prev, mut tail) = (0usize, 10usize);
    for item in items {
        let start = 10 + body.len();
        if prev < 254 {
            body.push(prev as u8);
        } else {
            body.push(0xFE);
            body.extend_from_slice(&(prev as u32).to_le_bytes());
        }
        match super::listpack::canonical_i64(item) {
            Some(n @ 0..=12) => body.push(0xF1 + n as u8),
            Some(n) if i16::try_from(n).is_ok() => {
                body.push(0xC0);
                body.extend_from_slice(&(n as i16).to_le_bytes());
            }
            _ => {
                body.push(item.len() as u8);
                body.extend_from_slice(item);
            }
        }
        prev = 10 + body.len() - start;
        tail = start;
    }
    let mut out = Vec::new();
    out.extend_from_slice(&((11 + body.len()) as u32).to_le_bytes());
    out.extend_from_slice(&(tail as u32).to_le_bytes());
    out.extend_from_slice(&(items.len() as u16).to_le_bytes());
    out.extend_from_slice(&body);
    out.push(0xFF);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intsets_take_the_narrowest_width_and_read_back() {
        let small = intset(&[-3, 1, 2]);
        assert_eq!(small, [2, 0, 0, 0, 3, 0, 0, 0, 0xFD, 0xFF, 1, 0, 2, 0]);
        assert_eq!(read_intset(&small), Ok(vec![-3, 1, 2]));
        let wide = intset(&[1, 1 << 40]);
        assert_eq!(wide[0], 8);
        assert_eq!(read_intset(&wide), Ok(vec![1, 1 << 40]));
        assert_eq!(read_intset(&intset(&[70_000])).map(|v| v[0]), Ok(70_000));
        let mut unsorted = small.clone();
        unsorted[10] = 5;
        assert_eq!(read_intset(&unsorted), Err(BAD_INTSET));
        assert_eq!(read_intset(&small[..12]), Err(BAD_INTSET));
    }

    #[test]
    fn ziplists_read_with_every_check() {
        let zl = ziplist(&[b"a", b"7", b"1000", b"hello"]);
        let items = read_ziplist(&zl).expect("reads");
        assert_eq!(items, [Item::Str(b"a"), Item::Int(7), Item::Int(1000), Item::Str(b"hello")]);
        assert_eq!(read_ziplist(&ziplist(&[])), Ok(vec![]));
        let mut bad_prev = zl.clone();
        bad_prev[13] = 9;
        assert_eq!(read_ziplist(&bad_prev), Err(BAD_ZIPLIST));
        let mut bad_count = zl.clone();
        bad_count[8] = 9;
        assert_eq!(read_ziplist(&bad_count), Err(BAD_ZIPLIST));
        assert_eq!(read_ziplist(&zl[..zl.len() - 1]), Err(BAD_ZIPLIST));
    }

    #[test]
    fn zipmaps_read_with_free_space() {
        let zm = [2, 1, b'a', 1, 0, b'x', 2, b'b', b'c', 3, 2, b'y', b'y', b'y', 0, 0, 0xFF];
        assert_eq!(read_zipmap(&zm), Ok(vec![(&b"a"[..], &b"x"[..]), (&b"bc"[..], &b"yyy"[..])]));
        assert_eq!(read_zipmap(&zm[..zm.len() - 1]), Err(BAD_ZIPMAP));
        let mut wrong_count = zm;
        wrong_count[0] = 3;
        assert_eq!(read_zipmap(&wrong_count), Err(BAD_ZIPMAP));
    }
}
