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
//! before anything is decoded. Bodies: a string is its bytes.

use super::string::StrValue;
use super::{Value, ValueRef};

/// Version written into payloads; RESTORE refuses any other.
pub const FORMAT_VERSION: u16 = 1;

/// Version and checksum bytes at the end of every payload.
const FOOTER: usize = 10;

const KIND_STRING: u8 = 0;

/// Why a payload cannot be restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadError {
    /// Too short, another version, or a checksum mismatch.
    VersionOrChecksum,
    /// Intact, but not a value kvik can decode.
    BadFormat,
}

/// The payload DUMP replies with for `value`.
pub fn dump(value: ValueRef<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    match value {
        ValueRef::Str(s) => {
            out.push(KIND_STRING);
            let mut scratch = Vec::new();
            out.extend_from_slice(s.bytes(&mut scratch));
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
        _ => Err(PayloadError::BadFormat),
    }
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
            assert_eq!(restore(&dump(v.view())), Ok(v));
        }
    }

    #[test]
    fn damaged_payloads_are_refused() {
        let good = dump(Value::Str(StrValue::from_bytes(b"value")).view());
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
