//! Redis Cluster hash slots: CRC16 (XMODEM) of the key, or of its `{hashtag}`, mod 16384.
//!
//! kvik picks a key's shard from its slot, so keys that share a hashtag share
//! a shard (multi-key commands on them take one lock) and cluster mode can
//! later map slots to nodes without re-hashing anything.

/// Number of hash slots, as Redis Cluster defines them.
pub const SLOTS: u16 = 16384;

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0) lookup tables
/// for slicing by 8: `TABLES[k][b]` is the CRC contribution of byte `b`
/// followed by `k` zero bytes, so eight bytes cost eight lookups and no
/// dependency chain between them, instead of eight dependent steps.
const TABLES: [[u16; 256]; 8] = {
    let mut tables = [[0u16; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            bit += 1;
        }
        tables[0][i] = crc;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = tables[k - 1][i];
            tables[k][i] = (prev << 8) ^ tables[0][(prev >> 8) as usize];
            i += 1;
        }
        k += 1;
    }
    tables
};

/// One byte of CRC16 (XMODEM).
#[inline]
fn crc16_byte(crc: u16, b: u8) -> u16 {
    (crc << 8) ^ TABLES[0][usize::from((crc >> 8) as u8 ^ b)]
}

/// CRC16 (XMODEM) of `bytes`, eight bytes at a time.
pub fn crc16(bytes: &[u8]) -> u16 {
    let mut crc = 0u16;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let [hi, lo] = crc.to_be_bytes();
        crc = TABLES[7][usize::from(c[0] ^ hi)]
            ^ TABLES[6][usize::from(c[1] ^ lo)]
            ^ TABLES[5][usize::from(c[2])]
            ^ TABLES[4][usize::from(c[3])]
            ^ TABLES[3][usize::from(c[4])]
            ^ TABLES[2][usize::from(c[5])]
            ^ TABLES[1][usize::from(c[6])]
            ^ TABLES[0][usize::from(c[7])];
    }
    chunks.remainder().iter().fold(crc, |crc, &b| crc16_byte(crc, b))
}

/// Where the first `{` of `key` is, looking at eight bytes at a time
/// (a key without one, the common case, is passed over in a few steps).
fn find_open_brace(key: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const BRACES: u64 = u64::from_ne_bytes([b'{'; 8]);
    let mut chunks = key.chunks_exact(8);
    let mut at = 0;
    for c in &mut chunks {
        // Every chunk has eight bytes: the default is never taken, and the
        // conversion is one load where indexing each byte is eight.
        let word = u64::from_ne_bytes(c.first_chunk::<8>().copied().unwrap_or_default()) ^ BRACES;
        // Non-zero exactly when some byte of `word` is zero, i.e. was `{`.
        if word.wrapping_sub(ONES) & !word & HIGHS != 0 {
            return c.iter().position(|&b| b == b'{').map(|i| at + i);
        }
        at += 8;
    }
    chunks.remainder().iter().position(|&b| b == b'{').map(|i| at + i)
}

/// The part of `key` that is hashed: the text between the first `{` and the
/// next `}` when that is not empty, otherwise the whole key.
pub fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = find_open_brace(key) {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The hash slot of `key` (0..16384): remembered when the key is the one
/// the running command's frame was scanned for (see
/// [`super::lookahead::KeyMemo`]), computed otherwise.
pub fn key_slot(key: &[u8]) -> u16 {
    super::lookahead::remembered_slot(key).unwrap_or_else(|| crc16(hash_tag(key)) & (SLOTS - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_matches_the_cluster_specification() {
        // The Redis Cluster specification's check value.
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }

    #[test]
    fn slots_match_redis() {
        // Values from CLUSTER KEYSLOT on Redis.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b""), 0);
    }

    /// The plain bit-by-bit CRC the tables are built from.
    fn crc16_bitwise(bytes: &[u8]) -> u16 {
        let mut crc = 0u16;
        for &b in bytes {
            crc ^= u16::from(b) << 8;
            for _ in 0..8 {
                crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            }
        }
        crc
    }

    #[test]
    fn sliced_crc16_matches_the_bitwise_definition() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let data: Vec<u8> = (0..200)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for len in 0..data.len() {
            assert_eq!(crc16(&data[..len]), crc16_bitwise(&data[..len]), "length {len}");
        }
    }

    #[test]
    fn the_first_brace_is_found_at_every_position() {
        for len in 0..40 {
            let mut key = vec![b'a'; len];
            assert_eq!(find_open_brace(&key), None);
            for at in 0..len {
                key[at] = b'{';
                assert_eq!(find_open_brace(&key), Some(at));
                key[at] = 0xfb; // '{' with the high bit set is not a brace
                assert_eq!(find_open_brace(&key), None);
                key[at] = b'a';
            }
        }
        assert_eq!(find_open_brace(b"aaaaaaaaa{b{"), Some(9));
    }

    #[test]
    fn hashtags_group_keys() {
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"{user1000}.followers"));
        assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_tag(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hash_tag(b"{no close"), b"{no close");
    }
}
