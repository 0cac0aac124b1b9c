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

/// The payload `FUNCTION DUMP` replies with for libraries of `codes`:
/// each under the `FUNCTION2` opcode, as in an RDB file.
pub fn dump_functions<'a>(codes: impl IntoIterator<Item = &'a [u8]>, compress: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(crate::rdb::opcode::FUNCTION2);
        crate::rdb::write::put_string(&mut out, code, compress);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Why a `FUNCTION RESTORE` payload gives no libraries: Redis's text.
pub fn restore_functions(payload: &[u8]) -> Result<Vec<Vec<u8>>, &'static str> {
    if payload.len() < FOOTER {
        return Err("ERR DUMP payload version or checksum are wrong");
    }
    let (data, crc) = payload.split_at(payload.len() - 8);
    let version = u16::from_le_bytes([data[data.len() - 2], data[data.len() - 1]]);
    let mut stored = [0u8; 8];
    stored.copy_from_slice(crc);
    if version > MAX_READ_VERSION || crc64(0, data) != u64::from_le_bytes(stored) {
        return Err("ERR DUMP payload version or checksum are wrong");
    }
    let mut r = Input::new(&data[..data.len() - 2]);
    let mut codes = Vec::new();
    while !r.is_empty() {
        match r.byte() {
            Ok(crate::rdb::opcode::FUNCTION2) => {}
            Ok(crate::rdb::opcode::FUNCTION_PRE_GA) => return Err("ERR Pre-GA function format not supported"),
            Ok(_) => return Err("ERR given type is not a function"),
            Err(_) => return Err("ERR can not read data type"),
        }
        match r.string() {
            Ok(code) => codes.push(code.into_owned()),
            Err(_) => return Err("ERR failed loading the given functions payload"),
        }
    }
    Ok(codes)
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
    // As in Redis, bytes after the value (under a checksum that holds) are
    // not looked at.
    let mut r = Input::new(body);
    match read_value(&mut r, kind, limits) {
        Ok(Some(value)) => Ok(value),
        _ => Err(PayloadError::BadFormat),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::kind;
    use crate::rdb::listpack::Writer;
    use crate::rdb::write::{put_len, put_string};

    fn with_footer(mut body: Vec<u8>) -> Vec<u8> {
        body.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(0, &body);
        body.extend_from_slice(&crc.to_le_bytes());
        body
    }

    #[test]
    fn function_payloads_round_trip_and_refuse_what_is_not_a_library() {
        let codes: [&[u8]; 2] =
            [b"#!lua name=a\nredis.register_function('f', function() return 1 end)", b"#!lua name=b\nx"];
        for compress in [false, true] {
            let payload = dump_functions(codes, compress);
            assert_eq!(restore_functions(&payload).expect("restores"), codes.map(<[u8]>::to_vec));
        }
        assert_eq!(restore_functions(&dump_functions([], true)).expect("none"), Vec::<Vec<u8>>::new());
        let mut body = vec![kind::STRING];
        put_string(&mut body, b"v", false);
        assert_eq!(restore_functions(&with_footer(body)), Err("ERR given type is not a function"));
        let mut cut = dump_functions(codes, false);
        cut[3] ^= 1;
        assert_eq!(restore_functions(&cut), Err("ERR DUMP payload version or checksum are wrong"));
        assert_eq!(
            restore_functions(&with_footer(vec![crate::rdb::opcode::FUNCTION2, 0x40])),
            Err("ERR failed loading the given functions payload")
        );
    }

    #[test]
    fn bytes_after_the_value_are_not_looked_at_as_in_redis() {
        let mut body = vec![kind::STRING];
        put_string(&mut body, b"hello", false);
        body.extend_from_slice(b"trailing");
        let value = restore(&with_footer(body), &LoadLimits::default()).expect("restores");
        assert_eq!(value.type_name(), "string");
    }

    #[test]
    fn a_stream_cannot_unfold_its_master_fields_into_gigabytes() {
        // One node: a master entry with a 200 KB field name, then 2,000
        // entries that each take it: some 220 KB of payload that kvik,
        // which keeps names with every entry, would turn into 400 MB.
        let entries = 2000i64;
        let mut lp = Writer::new();
        for n in [entries, 0, 1] {
            lp.push_int(n);
        }
        lp.push_str(&vec![b'n'; 200_000]);
        lp.push_int(0);
        for seq in 0..entries {
            for n in [2, 0, seq] {
                lp.push_int(n);
            }
            lp.push(b"v");
            lp.push_int(4);
        }
        let mut body = vec![kind::STREAM_LISTPACKS_2];
        put_len(&mut body, 1);
        let mut id = [0u8; 16];
        id[7] = 1;
        put_string(&mut body, &id, false);
        put_string(&mut body, &lp.finish(), false);
        put_len(&mut body, entries as u64);
        for n in [1u64, entries as u64 - 1, 1, 0, 0, 0, entries as u64, 0] {
            put_len(&mut body, n);
        }
        let started = std::time::Instant::now();
        assert_eq!(restore(&with_footer(body), &LoadLimits::default()).map(|_| ()), Err(PayloadError::BadFormat));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
