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
//! before anything is decoded. Bodies: a string is its bytes; a list is its
//! element count then each element; a hash is its field count then each
//! field and value, in the hash's order. Counts and lengths are 8-byte
//! little-endian integers, each byte string preceded by its length.
//!
//! A restored hash gets the encoding the limits in force give it (as a hash
//! loaded by Redis does), so the payload does not record the encoding.

use super::hash::HashValue;
use super::list::ListValue;
use super::string::StrValue;
use super::Value;

/// Version written into payloads; RESTORE refuses any other.
pub const FORMAT_VERSION: u16 = 1;

/// Version and checksum bytes at the end of every payload.
const FOOTER: usize = 10;

const KIND_STRING: u8 = 0;
const KIND_LIST: u8 = 1;
const KIND_HASH: u8 = 2;

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
        Value::List(l) => {
            out.push(KIND_LIST);
            put_len(&mut out, l.len());
            l.iter().for_each(|item| put_bytes(&mut out, item));
        }
        Value::Hash(h) => {
            out.push(KIND_HASH);
            put_len(&mut out, h.len());
            for (f, v) in h.iter() {
                put_bytes(&mut out, f);
                put_bytes(&mut out, v);
            }
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

/// Decode a payload DUMP produced. A hash comes back in the small
/// encoding; the caller applies the limits in force.
pub fn restore(payload: &[u8]) -> Result<Value, PayloadError> {
    let body = verify(payload)?;
    match body.split_first() {
        Some((&KIND_STRING, bytes)) => Ok(Value::Str(StrValue::from_bytes(bytes))),
        Some((&KIND_LIST, rest)) => read_list(&mut Reader(rest)).ok_or(PayloadError::BadFormat),
        Some((&KIND_HASH, rest)) => read_hash(&mut Reader(rest)).ok_or(PayloadError::BadFormat),
        _ => Err(PayloadError::BadFormat),
    }
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u64).to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_len(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// The unread rest of a payload body.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// A count or length; `None` past the end.
    fn len(&mut self) -> Option<usize> {
        let (head, rest) = self.0.split_first_chunk::<8>()?;
        self.0 = rest;
        usize::try_from(u64::from_le_bytes(*head)).ok()
    }

    /// A length-prefixed byte string; `None` when it runs past the end.
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.len()?;
        if n > self.0.len() {
            return None;
        }
        let (bytes, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(bytes)
    }

    /// True when everything was read.
    fn done(&self) -> bool {
        self.0.is_empty()
    }
}

/// A list body: nonempty, every element whole, nothing after.
fn read_list(r: &mut Reader<'_>) -> Option<Value> {
    let n = r.len().filter(|&n| n > 0)?;
    let mut list = ListValue::new();
    for _ in 0..n {
        list.push(false, r.bytes()?);
    }
    r.done().then(|| Value::List(Box::new(list)))
}

/// A hash body: nonempty, no field twice, nothing after.
fn read_hash(r: &mut Reader<'_>) -> Option<Value> {
    let n = r.len().filter(|&n| n > 0)?;
    let mut hash = HashValue::new();
    // A table while loading keeps duplicate checks linear; the caller
    // picks the final encoding.
    hash.grow_if_needed(0, 0, 1);
    for _ in 0..n {
        let (field, value) = (r.bytes()?, r.bytes()?);
        if !hash.insert(field, value) {
            return None;
        }
    }
    r.done().then(|| Value::Hash(Box::new(hash)))
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

    /// A payload around `body` with a correct version and checksum.
    fn sealed(body: &[u8]) -> Vec<u8> {
        let mut out = body.to_vec();
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let crc = crc64(0, &out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    fn sample_list() -> Value {
        let mut l = ListValue::new();
        for item in [&b"a"[..], b"", &[0u8, 255, 13, 10], &[b'x'; 100]] {
            l.push(false, item);
        }
        Value::List(Box::new(l))
    }

    fn sample_hash() -> HashValue {
        let mut h = HashValue::new();
        h.insert(b"f1", b"v1");
        h.insert(b"", &[0u8, 1, 2]);
        h.insert(&[b'y'; 70], b"long field");
        h
    }

    #[test]
    fn lists_and_hashes_round_trip() {
        let list = sample_list();
        assert_eq!(restore(&dump(&list)), Ok(list));
        let hash = sample_hash();
        let Ok(Value::Hash(mut back)) = restore(&dump(&Value::Hash(Box::new(hash.clone())))) else {
            panic!("a hash restores as a hash");
        };
        back.conform(crate::types::hash::HashLimits { max_entries: 512, max_value: 100 });
        assert_eq!(*back, hash);
    }

    #[test]
    fn damaged_list_and_hash_bodies_are_refused() {
        let list = dump(&sample_list());
        let body = &list[..list.len() - FOOTER];
        // Cut short, a byte too many, an element count too high or zero.
        assert_eq!(restore(&sealed(&body[..body.len() - 1])), Err(PayloadError::BadFormat));
        assert_eq!(restore(&sealed(&[body, b"z"].concat())), Err(PayloadError::BadFormat));
        let mut more = body.to_vec();
        more[1] += 1;
        assert_eq!(restore(&sealed(&more)), Err(PayloadError::BadFormat));
        let mut empty = vec![KIND_LIST];
        put_len(&mut empty, 0);
        assert_eq!(restore(&sealed(&empty)), Err(PayloadError::BadFormat));
        // A length past the end.
        let mut huge = vec![KIND_LIST];
        put_len(&mut huge, 1);
        put_len(&mut huge, usize::MAX);
        assert_eq!(restore(&sealed(&huge)), Err(PayloadError::BadFormat));
        // A hash naming one field twice, or missing a value.
        let mut twice = vec![KIND_HASH];
        put_len(&mut twice, 2);
        for _ in 0..2 {
            put_bytes(&mut twice, b"f");
            put_bytes(&mut twice, b"v");
        }
        assert_eq!(restore(&sealed(&twice)), Err(PayloadError::BadFormat));
        let mut half = vec![KIND_HASH];
        put_len(&mut half, 1);
        put_bytes(&mut half, b"f");
        assert_eq!(restore(&sealed(&half)), Err(PayloadError::BadFormat));
        // Any flipped byte fails the checksum.
        let hash = dump(&Value::Hash(Box::new(sample_hash())));
        for i in 0..hash.len() {
            let mut bad = hash.clone();
            bad[i] ^= 0x20;
            assert_eq!(restore(&bad), Err(PayloadError::VersionOrChecksum), "byte {i}");
        }
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
