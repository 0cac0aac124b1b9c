//! Redis's LFU access counter: 8 bits per key that grow logarithmically with
//! accesses and decay while the key is left alone.
//!
//! A counter that counted every access would need many bits and would let
//! a key hot last week outrank one hot now. Redis's scheme keeps one byte:
//! an access increments it with probability `1 / ((counter - 5) *
//! lfu-log-factor + 1)`, so it takes about a million accesses to saturate at
//! the default factor, and every `lfu-decay-time` minutes without access
//! take one off. New keys start at 5 so they are not evicted before they had
//! a chance to be used. kvik keeps the same numbers so `OBJECT FREQ` and
//! `RESTORE ... FREQ` mean what they mean in Redis.
//!
//! The counter and the minutes clock of its last change share a key's
//! 24-bit access clock (`entry::Meta::clock`: minutes in the top 16 bits, the
//! counter in the low 8) while an LFU policy is in force; under any other
//! policy the same bits hold the LRU time (see [`super::lru`]).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Counter of a new key.
pub const INIT_VAL: u8 = 5;

/// The LFU options, shared by every database and changed by `CONFIG SET`.
#[derive(Debug)]
pub struct Tuning {
    /// `lfu-log-factor`.
    log_factor: AtomicU32,
    /// `lfu-decay-time`, in minutes (0: never decay).
    decay_minutes: AtomicU32,
    /// Whether the `maxmemory-policy` is an LFU one, which decides how
    /// every key's access clock is written and read.
    lfu_policy: AtomicBool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning { log_factor: AtomicU32::new(10), decay_minutes: AtomicU32::new(1), lfu_policy: AtomicBool::new(false) }
    }
}

impl Tuning {
    /// Apply `lfu-log-factor` and `lfu-decay-time`.
    pub fn set(&self, log_factor: u32, decay_minutes: u32) {
        self.log_factor.store(log_factor, Ordering::Relaxed);
        self.decay_minutes.store(decay_minutes, Ordering::Relaxed);
    }

    /// Record whether the `maxmemory-policy` now is an LFU one.
    pub fn set_lfu_policy(&self, lfu: bool) {
        self.lfu_policy.store(lfu, Ordering::Relaxed);
    }

    /// Whether keys' access clocks hold LFU data now.
    pub fn lfu_policy(&self) -> bool {
        self.lfu_policy.load(Ordering::Relaxed)
    }

    fn log_factor(&self) -> u32 {
        self.log_factor.load(Ordering::Relaxed)
    }

    fn decay_minutes(&self) -> u32 {
        self.decay_minutes.load(Ordering::Relaxed)
    }
}

/// The minutes clock LFU decay runs on: Unix minutes, mod 2^16 as in Redis.
pub fn minutes(now_ms: i64) -> u16 {
    ((now_ms.max(0) / 60_000) & 0xffff) as u16
}

/// Minutes from `then` to `now` on the wrapping 16-bit clock, counted
/// over the wrap as Redis counts them (one short of a full cycle).
fn elapsed(then: u16, now: u16) -> u16 {
    if now >= then {
        now - then
    } else {
        u16::MAX - then + now
    }
}

/// The 24-bit access clock holding `counter` changed at `minutes`.
pub fn clock(minutes: u16, counter: u8) -> u32 {
    u32::from(minutes) << 8 | u32::from(counter)
}

/// The access clock of a key created at `now_ms` under an LFU policy.
pub fn fresh(now_ms: i64) -> u32 {
    clock(minutes(now_ms), INIT_VAL)
}

/// The counter held in access clock `clock`.
pub fn counter(clock: u32) -> u8 {
    (clock & 0xff) as u8
}

/// The minutes clock of the counter's last change, held in access clock `clock`.
pub fn minutes_of(clock: u32) -> u16 {
    ((clock >> 8) & 0xffff) as u16
}

/// The counter of access clock `clock` after the decay due at `now_ms`,
/// without storing it (what `OBJECT FREQ` reports and what eviction
/// compares).
pub fn decayed(clock: u32, now_ms: i64, tuning: &Tuning) -> u8 {
    let period = tuning.decay_minutes();
    if period == 0 {
        return counter(clock);
    }
    let periods = u32::from(elapsed(minutes_of(clock), minutes(now_ms))) / period;
    u8::try_from(u32::from(counter(clock)).saturating_sub(periods)).unwrap_or(0)
}

/// One logarithmic increment of `counter`; `random` is a uniform 64-bit number.
pub fn log_incr(counter: u8, log_factor: u32, random: u64) -> u8 {
    if counter == u8::MAX {
        return counter;
    }
    let base = f64::from(counter.saturating_sub(INIT_VAL));
    let p = 1.0 / (base * f64::from(log_factor) + 1.0);
    let r = (random >> 11) as f64 / (1u64 << 53) as f64;
    if r < p {
        counter + 1
    } else {
        counter
    }
}

/// Access clock `clock` after one access at `now_ms`: decayed, then
/// incremented.
pub fn accessed(clock_then: u32, now_ms: i64, tuning: &Tuning, random: u64) -> u32 {
    let counter = decayed(clock_then, now_ms, tuning);
    clock(minutes(now_ms), log_incr(counter, tuning.log_factor(), random))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_keys_start_at_five_and_grow_logarithmically() {
        let tuning = Tuning::default();
        assert_eq!(counter(fresh(0)), INIT_VAL);
        let mut x: u64 = 0x1234_5678;
        let now = 1_000_000_000_000;
        let mut e = clock(minutes(now), INIT_VAL);
        let mut step = |e: &mut u32, n: usize| {
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *e = accessed(*e, now, &tuning, x);
            }
        };
        step(&mut e, 100);
        // Redis's table for factor 10: about 10 after 100 hits, 18 after 1000
        // (the second varies between about 15 and 25 from run to run).
        assert!((8..=14).contains(&counter(e)), "{}", counter(e));
        step(&mut e, 900);
        assert!((15..=25).contains(&counter(e)), "{}", counter(e));
        assert_eq!(minutes_of(e), minutes(now));
        assert_eq!(log_incr(255, 10, 0), 255);
        assert_eq!(log_incr(5, 10, u64::MAX), 6, "p is 1 at the initial value");
    }

    #[test]
    fn counters_decay_one_per_period_idle() {
        let tuning = Tuning::default();
        let mut e = clock(minutes(0), 20);
        assert_eq!(decayed(e, 0, &tuning), 20);
        assert_eq!(decayed(e, 3 * 60_000, &tuning), 17);
        assert_eq!(decayed(e, 100 * 60_000, &tuning), 0);
        tuning.set(10, 2);
        assert_eq!(decayed(e, 4 * 60_000, &tuning), 18);
        tuning.set(10, 0);
        assert_eq!(decayed(e, 400 * 60_000, &tuning), 20);
        // The clock wraps at 2^16 minutes; as in Redis, the distance over
        // the wrap is counted one short.
        e = clock(u16::MAX - 1, 20);
        tuning.set(10, 1);
        assert_eq!(decayed(e, 65_537 * 60_000, &tuning), 18);
    }

    #[test]
    fn the_counter_and_minutes_share_24_bits() {
        let c = clock(0xabcd, 0x12);
        assert_eq!(c, 0xab_cd12);
        assert_eq!((minutes_of(c), counter(c)), (0xabcd, 0x12));
        assert_eq!(fresh(120_000) & 0xff, u32::from(INIT_VAL));
        assert_eq!(fresh(120_000) >> 8, 2);
        let tuning = Tuning::default();
        assert!(!tuning.lfu_policy());
        tuning.set_lfu_policy(true);
        assert!(tuning.lfu_policy());
    }
}
