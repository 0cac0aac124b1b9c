//! The payload format of DUMP and RESTORE.
//!
//! kvik uses its own format rather than Redis's RDB encoding: a payload only
//! has to travel between kvik servers (DUMP on one, RESTORE on another), and
//! its own format can follow kvik's value types as they grow. The layout:
//!
//! ```text
//! [1B value kind][value body][2B format version, little-endian][8B CRC-64, little-endian]
//! ```
//!
//! The CRC-64 (Jones polynomial, reflected, as Redis uses for its payloads)
//! covers every byte before it, so a truncated or altered payload is refused
//! before anything is decoded. Bodies: a string is its bytes. A set is its
//! encoding (0 `intset`, 1 `hashtable`), a varint count and the members: an
//! `intset`'s as 8-byte little-endian integers in ascending order, a hash
//! set's as varint-length-prefixed bytes. A sorted set is its encoding (0
//! `listpack`, 1 `skiplist`), a varint count and, in ascending order, each
//! member's score as the 8 little-endian bytes of the double and its
//! length-prefixed name. Decoding checks what the types rely on (order,
//! distinct members, no NaN score), so even a payload with a valid checksum
//! cannot plant a value the commands would misread.

use indexmap::IndexSet;

use super::compact::CompactBytes;
use super::set::SetValue;
use super::string::StrValue;
use super::zset::ZSetValue;
use super::Value;

/// Version written into payloads; RESTORE refuses any other.
pub const FORMAT_VERSION: u16 = 1;

/// Version and checksum bytes at the end of every payload.
const FOOTER: usize = 10;

const KIND_STRING: u8 = 0;
const KIND_SET: u8 = 3;
const KIND_ZSET: u8 = 4;

/// Why a payload cannot be restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadError {
    /// Too short, another version, or a checksum mismatch.
    VersionOrChecksum,
    /// Intact, but not a value kvik can decode.
    BadFormat,
}

/// The payload DUMP replies with for `value`.
pub fn dump(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    match value {
        Value::Str(s) => {
            out.push(KIND_STRING);
            let mut scratch = Vec::new();
            out.extend_from_slice(s.bytes(&mut scratch));
        }
        Value::Set(s) => {
            out.push(KIND_SET);
            dump_set(&mut out, s);
        }
        Value::ZSet(z) => {
            out.push(KIND_ZSET);
            dump_zset(&mut out, z);
        }
    }
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Check `payload`'s version and checksum without decoding it.
pub fn verify(payload: &[u8]) -> Result<&[u8], PayloadError> {
    if payload.len() < FOOTER {
        return Err(PayloadError::VersionOrChecksum);
    }
    let (data, crc) = payload.split_at(payload.len() - 8);
    let version = u16::from_le_bytes([data[data.len() - 2], data[data.len() - 1]]);
    let mut stored = [0u8; 8];
    stored.copy_from_slice(crc);
    if version != FORMAT_VERSION || crc64(0, data) != u64::from_le_bytes(stored) {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok(&data[..data.len() - 2])
}

/// Decode a payload DUMP produced.
pub fn restore(payload: &[u8]) -> Result<Value, PayloadError> {
    let body = verify(payload)?;
    match body.split_first() {
        Some((&KIND_STRING, bytes)) => Ok(Value::Str(StrValue::from_bytes(bytes))),
        Some((&KIND_SET, body)) => restore_set(&mut Reader(body)).map(Value::set),
        Some((&KIND_ZSET, body)) => restore_zset(&mut Reader(body)).map(Value::zset),
        _ => Err(PayloadError::BadFormat),
    }
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn dump_set(out: &mut Vec<u8>, set: &SetValue) {
    match set {
        SetValue::Ints(ints) => {
            out.push(0);
            put_varint(out, ints.len() as u64);
            for n in ints {
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
        SetValue::Table(members) => {
            out.push(1);
            put_varint(out, members.len() as u64);
            for m in members {
                put_bytes(out, m);
            }
        }
    }
}

fn dump_zset(out: &mut Vec<u8>, z: &ZSetValue) {
    out.push(u8::from(z.is_large()));
    put_varint(out, z.len() as u64);
    for (member, score) in z.iter() {
        out.extend_from_slice(&score.to_le_bytes());
        put_bytes(out, member);
    }
}

/// A cursor over a payload body; every read fails cleanly at the end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PayloadError> {
        if n > self.0.len() {
            return Err(PayloadError::BadFormat);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, PayloadError> {
        Ok(self.take(1)?[0])
    }

    fn eight(&mut self) -> Result<[u8; 8], PayloadError> {
        let mut out = [0u8; 8];
        out.copy_from_slice(self.take(8)?);
        Ok(out)
    }

    fn varint(&mut self) -> Result<u64, PayloadError> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(PayloadError::BadFormat)
    }

    /// A count of items each at least `min_size` bytes long, checked against
    /// what is left so a forged count cannot ask for a huge allocation.
    fn count(&mut self, min_size: usize) -> Result<usize, PayloadError> {
        let n = usize::try_from(self.varint()?).map_err(|_| PayloadError::BadFormat)?;
        if n.checked_mul(min_size).is_none_or(|need| need > self.0.len()) {
            return Err(PayloadError::BadFormat);
        }
        Ok(n)
    }

    fn bytes(&mut self) -> Result<&'a [u8], PayloadError> {
        let n = usize::try_from(self.varint()?).map_err(|_| PayloadError::BadFormat)?;
        self.take(n)
    }

    fn finish<T>(&self, value: T) -> Result<T, PayloadError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(PayloadError::BadFormat)
        }
    }
}

fn restore_set(r: &mut Reader<'_>) -> Result<SetValue, PayloadError> {
    let set = match r.byte()? {
        0 => {
            let n = r.count(8)?;
            let ints = (0..n).map(|_| r.eight().map(i64::from_le_bytes)).collect::<Result<Vec<i64>, _>>()?;
            if ints.windows(2).any(|w| w[0] >= w[1]) {
                return Err(PayloadError::BadFormat);
            }
            SetValue::Ints(ints)
        }
        1 => {
            let n = r.count(1)?;
            let mut members = IndexSet::with_capacity(n);
            for _ in 0..n {
                if !members.insert(CompactBytes::new(r.bytes()?)) {
                    return Err(PayloadError::BadFormat);
                }
            }
            SetValue::Table(members)
        }
        _ => return Err(PayloadError::BadFormat),
    };
    if set.is_empty() {
        return Err(PayloadError::BadFormat);
    }
    r.finish(set)
}

fn restore_zset(r: &mut Reader<'_>) -> Result<ZSetValue, PayloadError> {
    let mut z = match r.byte()? {
        0 => ZSetValue::new(),
        1 => ZSetValue::new_large(),
        _ => return Err(PayloadError::BadFormat),
    };
    let n = r.count(9)?;
    if n == 0 {
        return Err(PayloadError::BadFormat);
    }
    for _ in 0..n {
        let score = f64::from_le_bytes(r.eight()?);
        let member = r.bytes()?;
        if score.is_nan() || z.insert(member, score).is_some() {
            return Err(PayloadError::BadFormat);
        }
    }
    r.finish(z)
}

/// Reflected form of the Jones polynomial 0xad93d23594c935a9.
const POLY: u64 = 0x95ac_9329_ac4b_c9b5;

const TABLE: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ POLY } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// CRC-64/Jones of `data`, continuing from `crc`.
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    for &b in data {
        crc = TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_matches_the_jones_check_value() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn strings_round_trip() {
        for s in [&b""[..], b"hello", b"12345", b"-9223372036854775808", &[0u8, 255, 13, 10]] {
            let v = Value::Str(StrValue::from_bytes(s));
            assert_eq!(restore(&dump(&v)), Ok(v));
        }
    }

    fn sealed(body: &[u8]) -> Vec<u8> {
        let mut out = body.to_vec();
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let crc = crc64(0, &out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    #[test]
    fn sets_round_trip_in_both_encodings() {
        let mut ints = SetValue::for_first_member(b"1");
        let mut table = SetValue::for_first_member(b"a");
        for m in [&b"5"[..], b"-3", b"9223372036854775807"] {
            ints.insert(m, 512);
            table.insert(m, 512);
        }
        table.insert(b"\0\xff", 512);
        for s in [ints, table] {
            let v = Value::set(s);
            assert_eq!(restore(&dump(&v)), Ok(v));
        }
    }

    #[test]
    fn sorted_sets_round_trip_with_their_encoding() {
        for mut z in [ZSetValue::new(), ZSetValue::new_large()] {
            for (m, s) in [(&b"a"[..], 1.5), (b"b", f64::NEG_INFINITY), (b"", -0.0), (b"\r\n", 1e308)] {
                z.insert(m, s);
            }
            let v = Value::zset(z);
            let back = restore(&dump(&v)).unwrap();
            assert_eq!(back.encoding(), v.encoding());
            assert_eq!(back, v);
        }
    }

    #[test]
    fn forged_collections_are_refused() {
        // Unsorted intset, duplicate members, NaN score, bad counts, trailing bytes.
        let mut unsorted = vec![KIND_SET, 0, 2];
        unsorted.extend_from_slice(&5i64.to_le_bytes());
        unsorted.extend_from_slice(&1i64.to_le_bytes());
        let duplicate = [KIND_SET, 1, 2, 1, b'a', 1, b'a'];
        let mut nan = vec![KIND_ZSET, 0, 1];
        nan.extend_from_slice(&f64::NAN.to_le_bytes());
        nan.extend_from_slice(&[1, b'a']);
        let huge_count = [KIND_SET, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, b'a'];
        let trailing = [KIND_SET, 1, 1, 1, b'a', 0];
        let empty = [KIND_ZSET, 0, 0];
        let truncated = [KIND_SET, 1, 1, 5, b'a'];
        for body in [&unsorted[..], &duplicate, &nan, &huge_count, &trailing, &empty, &truncated] {
            assert_eq!(restore(&sealed(body)), Err(PayloadError::BadFormat), "{body:?}");
        }
        let good = dump(&Value::zset({
            let mut z = ZSetValue::new();
            z.insert(b"m", 2.0);
            z
        }));
        let mut flipped = good.clone();
        flipped[4] ^= 0x40;
        assert_eq!(restore(&flipped), Err(PayloadError::VersionOrChecksum));
    }

    #[test]
    fn damaged_payloads_are_refused() {
        let good = dump(&Value::Str(StrValue::from_bytes(b"value")));
        assert_eq!(restore(&good[..good.len() - 1]), Err(PayloadError::VersionOrChecksum));
        let mut flipped = good.clone();
        flipped[2] ^= 1;
        assert_eq!(restore(&flipped), Err(PayloadError::VersionOrChecksum));
        assert_eq!(restore(b"short"), Err(PayloadError::VersionOrChecksum));
        let mut unknown = vec![9u8];
        unknown.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let crc = crc64(0, &unknown);
        unknown.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(restore(&unknown), Err(PayloadError::BadFormat));
    }
}
