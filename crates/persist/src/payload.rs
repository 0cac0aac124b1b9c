//! DUMP and RESTORE payloads in Redis's format, so that a value moves
//! between kvik and redis-server (and valkey-server) either way:
//!
//! ```text
//! [type byte][value body, as in an RDB file][RDB version: u16 LE][CRC-64: u64 LE]
//! ```
//!
//! The checksum covers every byte before it. RESTORE accepts any RDB
//! version up to 11, so payloads from Redis 4 to 7.2 and Valkey 8 restore
//! (Redis 7.0 itself stops at 10); a payload of a later version, or one
//! whose checksum does not hold, is refused before anything is decoded.

use kvik_store::types::{Value, ValueRef};

use crate::crc64::crc64;
use crate::rdb::read::Input;
use crate::rdb::value::{read_value, write_value, LoadLimits};
use crate::rdb::{MAX_READ_VERSION, RDB_VERSION};

/// Version and checksum bytes at the end of every payload.
const FOOTER: usize = 10;

/// Why a payload cannot be restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadError {
    /// Too short, a later RDB version, or a checksum mismatch
    /// (`ERR DUMP payload version or checksum are wrong`).
    VersionOrChecksum,
    /// Intact, but not a value kvik can decode (`ERR Bad data format`).
    BadFormat,
}

/// The payload DUMP replies with for `value` (`compress`: `rdbcompression`).
pub fn dump(value: ValueRef<'_>, compress: bool) -> Vec<u8> {
    let mut out = vec![0];
    out[0] = write_value(&mut out, value, compress);
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The size of `value`'s payload without its footer: the RDB size of the
/// value, which `DEBUG OBJECT` reports as `serializedlength`.
pub fn serialized_len(value: ValueRef<'_>, compress: bool) -> usize {
    let mut out = Vec::new();
    write_value(&mut out, value, compress);
    out.len()
}

/// The value body and type of `payload`, once its version and checksum hold.
pub fn verify(payload: &[u8]) -> Result<(u8, &[u8]), PayloadError> {
    if payload.len() < FOOTER + 1 {
        return Err(PayloadError::VersionOrChecksum);
    }
    let (data, crc) = payload.split_at(payload.len() - 8);
    let version = u16::from_le_bytes([data[data.len() - 2], data[data.len() - 1]]);
    let mut stored = [0u8; 8];
    stored.copy_from_slice(crc);
    if version > MAX_READ_VERSION || crc64(0, data) != u64::from_le_bytes(stored) {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok((data[0], &data[1..data.len() - 2]))
}

/// Decode a payload, fitting the value to `limits`.
pub fn restore(payload: &[u8], limits: &LoadLimits) -> Result<Value, PayloadError> {
    let (kind, body) = verify(payload)?;
    let mut r = Input::new(body);
    match read_value(&mut r, kind, limits) {
        Ok(Some(value)) if r.is_empty() => Ok(value),
        _ => Err(PayloadError::BadFormat),
    }
}
