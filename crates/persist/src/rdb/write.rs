//! Writing RDB primitives: lengths, strings, doubles, times.

use crate::lzf;

/// Append the RDB length `n`: 6 bits in one byte, 14 bits in two (big
/// endian), or a marker and 4 or 8 bytes big endian.
pub fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push((n & 0xff) as u8);
    } else if let Ok(n) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// Append string `s` the way Redis saves every string: as an 8, 16 or 32
/// bit integer when it is the canonical text of one (at most 11 bytes),
/// else LZF-compressed when `compress` and it is over 20 bytes and that
/// saves at least 4 bytes, else its length and bytes.
pub fn put_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if s.len() <= 11 && put_int_string(out, s) {
        return;
    }
    if compress && s.len() > 20 {
        if let Some(packed) = lzf::compress(s, s.len() - 4) {
            out.push(0xC3);
            put_len(out, packed.len() as u64);
            put_len(out, s.len() as u64);
            out.extend_from_slice(&packed);
            return;
        }
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// The integer forms of a string; false when `s` has none.
fn put_int_string(out: &mut Vec<u8>, s: &[u8]) -> bool {
    let Some(n) = super::listpack::canonical_i64(s) else { return false };
    put_int_value(out, n)
}

/// Append `n` as an integer-encoded string; false when it needs over 32 bits.
pub fn put_int_value(out: &mut Vec<u8>, n: i64) -> bool {
    if let Ok(b) = i8::try_from(n) {
        out.push(0xC0);
        out.push(b as u8);
    } else if let Ok(h) = i16::try_from(n) {
        out.push(0xC1);
        out.extend_from_slice(&h.to_le_bytes());
    } else if let Ok(w) = i32::try_from(n) {
        out.push(0xC2);
        out.extend_from_slice(&w.to_le_bytes());
    } else {
        return false;
    }
    true
}

/// Append an integer as a string: integer-encoded when it fits in 32 bits,
/// else as its decimal text.
pub fn put_int(out: &mut Vec<u8>, n: i64) {
    if !put_int_value(out, n) {
        let text = n.to_string();
        put_len(out, text.len() as u64);
        out.extend_from_slice(text.as_bytes());
    }
}

/// Append a double as its 8 bytes, little endian (RDB 8 and later).
pub fn put_binary_double(out: &mut Vec<u8>, d: f64) {
    out.extend_from_slice(&d.to_le_bytes());
}

/// Append a time in Unix milliseconds as 8 bytes, little endian.
pub fn put_ms(out: &mut Vec<u8>, ms: i64) {
    out.extend_from_slice(&ms.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: &[u8], compress: bool) -> Vec<u8> {
        let mut out = Vec::new();
        put_string(&mut out, s, compress);
        out
    }

    #[test]
    fn lengths_take_the_smallest_form() {
        let len = |n| {
            let mut out = Vec::new();
            put_len(&mut out, n);
            out
        };
        assert_eq!(len(63), [63]);
        assert_eq!(len(64), [0x40, 64]);
        assert_eq!(len(16383), [0x7f, 0xff]);
        assert_eq!(len(16384), [0x80, 0, 0, 0x40, 0]);
        assert_eq!(len(1 << 32), [0x81, 0, 0, 0, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn strings_are_saved_as_redis_saves_them() {
        // DUMP of `SET n 300` on redis-server 7.0 starts 00 C1 2C 01.
        assert_eq!(string(b"300", true), [0xC1, 0x2C, 0x01]);
        assert_eq!(string(b"-5", true), [0xC0, 0xFB]);
        assert_eq!(string(b"70000", true), [0xC2, 0x70, 0x11, 0x01, 0x00]);
        assert_eq!(string(b"12345678901", true)[0], 11, "beyond 32 bits: text");
        assert_eq!(string(b"007", true), [3, b'0', b'0', b'7']);
        let long = [b'a'; 70];
        assert_eq!(string(&long, true)[0], 0xC3, "compressed");
        assert_eq!(string(&long, false)[..3], [0x40, 70, b'a'], "rdbcompression no");
    }
}
