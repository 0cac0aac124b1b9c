//! LZF, the compression Redis applies to strings in RDB files and DUMP
//! payloads (`rdbcompression yes`).
//!
//! The format is a sequence of runs, each starting with a control byte:
//!
//! - `000LLLLL`: a literal run of `L + 1` bytes (1 to 32) that follow.
//! - `LLLooooo oooooooo`: a back reference of `L + 2` bytes (L from 1 to
//!   6) copied from `o + 1` bytes behind the output's end (13 bits, so at
//!   most 8,192 back).
//! - `111ooooo LLLLLLLL oooooooo`: the same with a length of `L + 9`
//!   (9 to 264).
//!
//! The compressor looks for matches through a table of the last place each
//! 3-byte prefix was seen: one probe per position, so it runs in linear
//! time. Any valid stream decodes the same in Redis, so the output need not
//! match Redis's byte for byte; the decoder accepts every valid stream and
//! refuses, with an error, one that reads or copies out of bounds or does
//! not come out at the length stated.

/// Longest literal run one control byte covers.
const MAX_LITERAL: usize = 32;
/// Farthest back a reference reaches.
const MAX_OFFSET: usize = 1 << 13;
/// Longest match one reference copies.
const MAX_MATCH: usize = 264;
/// Shortest match worth a reference (it costs 2 bytes).
const MIN_MATCH: usize = 3;
/// Most slots of the prefix table (a power of two); a short input gets a
/// table near its own size, so that clearing the table does not cost more
/// than compressing.
const TABLE_SLOTS: usize = 1 << 14;
/// Fewest slots of the prefix table.
const MIN_TABLE_SLOTS: usize = 1 << 6;

/// Why a stream does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// `data` compressed, or `None` when that would not fit in `max_len` bytes
/// (Redis stores a string compressed only when it saves at least 4 bytes).
pub fn compress(data: &[u8], max_len: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(max_len.min(data.len()));
    let slots = data.len().next_power_of_two().clamp(MIN_TABLE_SLOTS, TABLE_SLOTS);
    let mut table = vec![0u32; slots];
    let mut literal_start = 0;
    let mut i = 0;
    while i + MIN_MATCH <= data.len() {
        let slot = prefix_slot(&data[i..i + MIN_MATCH], slots);
        // Table entries are position + 1, so 0 means "never seen".
        let seen = table[slot] as usize;
        table[slot] = u32::try_from(i + 1).unwrap_or(0);
        if seen != 0 {
            let at = seen - 1;
            let back = i - at;
            if back <= MAX_OFFSET && data[at..at + MIN_MATCH] == data[i..i + MIN_MATCH] {
                let longest = (data.len() - i).min(MAX_MATCH);
                let mut len = MIN_MATCH;
                while len < longest && data[at + len] == data[i + len] {
                    len += 1;
                }
                put_literals(&mut out, &data[literal_start..i]);
                put_reference(&mut out, back - 1, len);
                if out.len() > max_len {
                    return None;
                }
                i += len;
                literal_start = i;
                continue;
            }
        }
        i += 1;
    }
    put_literals(&mut out, &data[literal_start..]);
    (out.len() <= max_len).then_some(out)
}

/// The table slot of a 3-byte prefix, in a table of `slots` slots.
fn prefix_slot(three: &[u8], slots: usize) -> usize {
    let v = u32::from(three[0]) << 16 | u32::from(three[1]) << 8 | u32::from(three[2]);
    (v.wrapping_mul(0x9E37_79B1) >> 18) as usize & (slots - 1)
}

fn put_literals(out: &mut Vec<u8>, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        let n = bytes.len().min(MAX_LITERAL);
        out.push((n - 1) as u8);
        out.extend_from_slice(&bytes[..n]);
        bytes = &bytes[n..];
    }
}

/// A reference `offset + 1` bytes back, `len` bytes long (3 to 264).
fn put_reference(out: &mut Vec<u8>, offset: usize, len: usize) {
    debug_assert!(offset < MAX_OFFSET && (MIN_MATCH..=MAX_MATCH).contains(&len));
    let l = len - 2;
    let high = (offset >> 8) as u8;
    if l < 7 {
        out.push(((l as u8) << 5) | high);
    } else {
        out.push((7 << 5) | high);
        out.push((l - 7) as u8);
    }
    out.push((offset & 0xff) as u8);
}

/// `data` decompressed to exactly `len` bytes.
pub fn decompress(data: &[u8], len: usize) -> Result<Vec<u8>, Corrupt> {
    // The stated length is the input's claim; reserve what the bytes at
    // hand plausibly make and grow as they prove more.
    let mut out = Vec::with_capacity(len.min(data.len().saturating_mul(4).saturating_add(64)));
    let mut i = 0;
    while i < data.len() {
        let ctrl = usize::from(data[i]);
        i += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let bytes = data.get(i..i + run).ok_or(Corrupt)?;
            if out.len() + run > len {
                return Err(Corrupt);
            }
            out.extend_from_slice(bytes);
            i += run;
            continue;
        }
        let mut run = ctrl >> 5;
        if run == 7 {
            run += usize::from(*data.get(i).ok_or(Corrupt)?);
            i += 1;
        }
        run += 2;
        let low = usize::from(*data.get(i).ok_or(Corrupt)?);
        i += 1;
        let back = ((ctrl & 0x1f) << 8 | low) + 1;
        if back > out.len() || out.len() + run > len {
            return Err(Corrupt);
        }
        // Byte by byte: a reference may overlap what it produces.
        let from = out.len() - back;
        for k in 0..run {
            let b = out[from + k];
            out.push(b);
        }
    }
    if out.len() == len {
        Ok(out)
    } else {
        Err(Corrupt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(data: &[u8]) {
        let packed = compress(data, data.len() + data.len() / 16 + 8).expect("fits with slack");
        assert_eq!(decompress(&packed, data.len()).expect("decodes"), data);
    }

    #[test]
    fn streams_decode_to_what_was_compressed() {
        round_trip(b"");
        round_trip(b"a");
        round_trip(&[b'x'; 1000]);
        round_trip(b"abcabcabcabcabcabcabcabcabcabcabcabcabcabc-hello-hello-hello");
        let mut x: u64 = 7;
        let noise: Vec<u8> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 7) as u8 + b'a'
            })
            .collect();
        round_trip(&noise);
        let far: Vec<u8> = (0..40_000u32).map(|i| (i % 9000) as u8 ^ (i / 9000) as u8).collect();
        round_trip(&far);
    }

    #[test]
    fn repetitive_text_shrinks_and_random_bytes_do_not_fit() {
        let text = b"user:1000:profile user:1001:profile user:1002:profile user:1003:profile".repeat(10);
        let packed = compress(&text, text.len() - 4).expect("shrinks");
        assert!(packed.len() < text.len() / 4, "{} of {}", packed.len(), text.len());
        let random: Vec<u8> = (0..64u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8).collect();
        assert_eq!(compress(&random, random.len() - 4), None);
    }

    #[test]
    fn an_overlapping_reference_repeats_bytes() {
        // One literal "a", then a long reference (7 + 100 + 2 = 109 bytes)
        // one byte back: 110 times "a".
        let stream = [0x00, b'a', 0xe0, 0x64, 0x00, 0x20, 0x00, b'a'];
        let out = decompress(&stream[..5], 110).expect("decodes");
        assert_eq!(out, vec![b'a'; 110]);
        assert_eq!(decompress(&stream, 110), Err(Corrupt), "output past the stated length");
    }

    #[test]
    fn out_of_bounds_streams_are_refused() {
        assert_eq!(decompress(&[0x05, b'a'], 6), Err(Corrupt), "literal past the input");
        assert_eq!(decompress(&[0x20, 0x00], 3), Err(Corrupt), "reference before the start");
        assert_eq!(decompress(&[0x00, b'a', 0x20, 0x00], 2), Err(Corrupt), "longer than stated");
        assert_eq!(decompress(&[0x00, b'a'], 2), Err(Corrupt), "shorter than stated");
        assert_eq!(decompress(&[0xe0], 10), Err(Corrupt), "cut in a control");
    }
}
