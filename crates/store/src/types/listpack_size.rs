//! A fact of Redis's listpack format that two layers need: how many bytes
//! the back length of an element takes. The stream's node model sizes its
//! nodes as Redis would (`stream-node-max-bytes`), and kvik-persist writes
//! real listpacks for RDB files; both ask here, so they cannot drift apart.

/// Bytes of the back length of a listpack element whose encoding and data
/// take `len` bytes, by Redis's thresholds (`lpEncodeBacklen`): up to 127,
/// one; under 16,383, two; under 2,097,151, three; under 268,435,455,
/// four; else five. The largest value of each 7-bit width thus takes one
/// byte more than it needs, as Redis writes it.
pub fn back_len_width(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16_382 => 2,
        16_383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_change_where_redis_changes_them() {
        let at = [127, 128, 16_382, 16_383, 2_097_150, 2_097_151, 268_435_454, 268_435_455];
        assert_eq!(at.map(back_len_width), [1, 2, 2, 3, 3, 4, 4, 5]);
    }
}
