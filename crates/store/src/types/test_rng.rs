//! A small deterministic generator for the randomised tests of the value
//! types: the same seed gives the same operations on every run, so a
//! failure names a step that can be replayed.

/// xorshift64 from `seed` (which must not be 0): each call gives the next number.
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    assert_ne!(seed, 0, "xorshift never leaves 0");
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}
