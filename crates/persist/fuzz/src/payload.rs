//! RESTORE's decoder: any input is refused or restores a value whose own
//! payload (compressed or not) restores to an equal value. The same input
//! read as a `FUNCTION RESTORE` payload is refused or gives libraries
//! whose own payload gives them back.
//!
//! The input is a payload without its footer (the type byte and the value
//! body); the check adds the RDB version and the CRC-64, so that the
//! fuzzer's changes reach the decoder instead of failing the checksum.

use kvik_persist::crc64::crc64;
use kvik_persist::payload::{dump, dump_functions, restore, restore_functions};
use kvik_persist::rdb::value::LoadLimits;
use kvik_persist::rdb::RDB_VERSION;

/// `body` with the footer a payload ends with.
pub fn with_footer(body: &[u8]) -> Vec<u8> {
    let mut payload = body.to_vec();
    payload.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload
}

/// Panics when a property is broken for `data`.
pub fn check(data: &[u8]) {
    let payload = with_footer(data);
    if let Ok(codes) = restore_functions(&payload) {
        for compress in [true, false] {
            let again = dump_functions(codes.iter().map(Vec::as_slice), compress);
            assert_eq!(restore_functions(&again).as_ref(), Ok(&codes), "libraries dump and restore the same");
        }
    }
    let limits = LoadLimits::default();
    let Ok(value) = restore(&with_footer(data), &limits) else { return };
    for compress in [true, false] {
        let again = dump(value.view(), compress);
        let back = restore(&again, &limits).expect("a payload kvik wrote restores");
        assert_eq!(back, value, "a restored value dumps and restores the same (compress {compress})");
    }
}
