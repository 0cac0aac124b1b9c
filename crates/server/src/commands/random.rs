//! Random picks for SPOP, SRANDMEMBER and ZRANDMEMBER.
//!
//! The picks only have to be uniform, not unpredictable, so a small
//! generator seeded once per command from the standard library's random
//! hasher keys is enough and costs nothing per draw.

use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};

/// xorshift64* seeded from the process's random hasher keys.
pub(super) struct Picker(u64);

impl Picker {
    /// A generator with a fresh seed.
    pub(super) fn new() -> Picker {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(0x9e37_79b9_7f4a_7c15);
        Picker(h.finish() | 1)
    }

    /// A number in `0..n` (`n` must not be 0).
    pub(super) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n as u64) as usize
    }

    /// `count` distinct positions of `0..len` in random order (`count <= len`):
    /// a partial shuffle when most positions are taken, rejection of repeats
    /// when few are, so neither case costs more than it must.
    pub(super) fn distinct(&mut self, len: usize, count: usize) -> Vec<usize> {
        if count.saturating_mul(3) > len {
            let mut all: Vec<usize> = (0..len).collect();
            for i in 0..count {
                let j = i + self.below(len - i);
                all.swap(i, j);
            }
            all.truncate(count);
            return all;
        }
        let mut seen = HashSet::with_capacity(count);
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let i = self.below(len);
            if seen.insert(i) {
                out.push(i);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_picks_are_distinct_and_in_range() {
        let mut p = Picker::new();
        for (len, count) in [(10, 10), (10, 3), (1000, 5), (1, 1), (5, 0)] {
            let picks = p.distinct(len, count);
            let unique: HashSet<_> = picks.iter().collect();
            assert_eq!((picks.len(), unique.len()), (count, count));
            assert!(picks.iter().all(|&i| i < len));
        }
    }
}
