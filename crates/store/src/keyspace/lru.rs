//! The LRU reading of a key's 24-bit access clock ([`super::entry::Meta`]).
//!
//! Like Redis, kvik keeps one 24-bit field per key and reads it by the
//! `maxmemory-policy` in force: under an LFU policy it holds LFU data (see
//! [`super::lfu`]), under any other it holds the time of the last access
//! in seconds, modulo 2^24 (a clock that wraps about every 194 days).
//! Switching the policy at runtime does not rewrite the keys: the bits
//! written under one policy are read under the other until the key is next
//! accessed, which is what Redis shows too (its error texts for OBJECT
//! IDLETIME / FREQ warn that the data "will take some time to adjust").

/// Largest value of the 24-bit clock.
pub const CLOCK_MAX: u32 = (1 << 24) - 1;

/// The LRU clock at `now_ms`: Unix seconds modulo 2^24.
pub fn clock(now_ms: i64) -> u32 {
    // The mask keeps 24 bits, so the cast loses nothing.
    ((now_ms.max(0) / 1000) & i64::from(CLOCK_MAX)) as u32
}

/// Seconds since an access at clock `then`, as Redis estimates them: the
/// difference of the clocks, taken over the wrap when `then` is ahead
/// (for bits written as LFU data that can be anything).
pub fn idle_seconds(then: u32, now_ms: i64) -> u32 {
    let now = clock(now_ms);
    let then = then & CLOCK_MAX;
    if now >= then {
        now - then
    } else {
        now + (CLOCK_MAX - then)
    }
}

/// The clock of a key last accessed `idle` seconds before `now_ms`
/// (`RESTORE ... IDLETIME`). An idle time reaching back before the clock's
/// last wrap is stored half a cycle ahead of now, so the key reads as idle
/// for about 97 days, as Redis does.
pub fn clock_idle_for(idle: u64, now_ms: i64) -> u32 {
    let now = clock(now_ms);
    match u32::try_from(idle).ok().and_then(|idle| now.checked_sub(idle)) {
        Some(then) => then,
        None => (now + CLOCK_MAX / 2) % CLOCK_MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_counts_seconds_and_wraps_at_24_bits() {
        assert_eq!(clock(1_999), 1);
        assert_eq!(clock(-5), 0);
        assert_eq!(clock(i64::from(CLOCK_MAX + 1) * 1000), 0);
        assert_eq!(idle_seconds(clock(10_000), 75_000), 65);
        assert_eq!(idle_seconds(clock(10_000), 10_999), 0);
        // Accessed just before the wrap, read just after it.
        let before = i64::from(CLOCK_MAX) * 1000;
        assert_eq!(idle_seconds(clock(before), before + 3_000), 2);
    }

    #[test]
    fn restored_idle_times_read_back() {
        let now = 1_700_000_000_000;
        assert_eq!(idle_seconds(clock_idle_for(1000, now), now), 1000);
        assert_eq!(idle_seconds(clock_idle_for(0, now), now), 0);
        // Half a cycle, whichever side of the wrap now is.
        assert_eq!(idle_seconds(clock_idle_for(u64::MAX, now), now), CLOCK_MAX - CLOCK_MAX / 2);
        let late = i64::from(CLOCK_MAX - 10) * 1000;
        assert_eq!(idle_seconds(clock_idle_for(u64::from(CLOCK_MAX), late), late), CLOCK_MAX - CLOCK_MAX / 2);
    }
}
