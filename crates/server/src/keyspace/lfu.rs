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

use std::sync::atomic::{AtomicU32, Ordering};

use super::entry::Meta;

/// Counter of a new key.
pub const INIT_VAL: u8 = 5;

/// The LFU options, shared by every database and changed by `CONFIG SET`.
#[derive(Debug)]
pub struct Tuning {
    /// `lfu-log-factor`.
    log_factor: AtomicU32,
    /// `lfu-decay-time`, in minutes (0: never decay).
    decay_minutes: AtomicU32,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning { log_factor: AtomicU32::new(10), decay_minutes: AtomicU32::new(1) }
    }
}

impl Tuning {
    /// Apply `lfu-log-factor` and `lfu-decay-time`.
    pub fn set(&self, log_factor: u32, decay_minutes: u32) {
        self.log_factor.store(log_factor, Ordering::Relaxed);
        self.decay_minutes.store(decay_minutes, Ordering::Relaxed);
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

/// Minutes from `then` to `now` on the wrapping 16-bit clock.
fn elapsed(then: u16, now: u16) -> u16 {
    now.wrapping_sub(then)
}

/// The counter of `meta` after the decay due at `now_ms`, without storing it
/// (what `OBJECT FREQ` reports and what eviction compares).
pub fn decayed(meta: &Meta, now_ms: i64, tuning: &Tuning) -> u8 {
    let period = tuning.decay_minutes();
    if period == 0 {
        return meta.lfu_count;
    }
    let periods = u32::from(elapsed(meta.lfu_minutes, minutes(now_ms))) / period;
    u8::try_from(u32::from(meta.lfu_count).saturating_sub(periods)).unwrap_or(0)
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

/// Record one access in `meta` at `now_ms`: decay, then increment.
pub fn record_access(meta: &mut Meta, now_ms: i64, tuning: &Tuning, random: u64) {
    let counter = decayed(meta, now_ms, tuning);
    meta.lfu_count = log_incr(counter, tuning.log_factor(), random);
    meta.lfu_minutes = minutes(now_ms);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Meta {
        Meta::new(0)
    }

    #[test]
    fn new_keys_start_at_five_and_grow_logarithmically() {
        let tuning = Tuning::default();
        let mut e = entry();
        assert_eq!(e.lfu_count, INIT_VAL);
        let mut x: u64 = 0x1234_5678;
        let now = 1_000_000_000_000;
        e.lfu_minutes = minutes(now);
        let mut step = |e: &mut Meta, n: usize| {
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                record_access(e, now, &tuning, x);
            }
        };
        step(&mut e, 100);
        // Redis's table for factor 10: about 10 after 100 hits, 18 after 1000
        // (the second varies between about 15 and 25 from run to run).
        assert!((8..=14).contains(&e.lfu_count), "{}", e.lfu_count);
        step(&mut e, 900);
        assert!((15..=25).contains(&e.lfu_count), "{}", e.lfu_count);
        assert_eq!(log_incr(255, 10, 0), 255);
        assert_eq!(log_incr(5, 10, u64::MAX), 6, "p is 1 at the initial value");
    }

    #[test]
    fn counters_decay_one_per_period_idle() {
        let tuning = Tuning::default();
        let mut e = entry();
        e.lfu_count = 20;
        e.lfu_minutes = minutes(0);
        assert_eq!(decayed(&e, 0, &tuning), 20);
        assert_eq!(decayed(&e, 3 * 60_000, &tuning), 17);
        assert_eq!(decayed(&e, 100 * 60_000, &tuning), 0);
        tuning.set(10, 2);
        assert_eq!(decayed(&e, 4 * 60_000, &tuning), 18);
        tuning.set(10, 0);
        assert_eq!(decayed(&e, 400 * 60_000, &tuning), 20);
        // The clock wraps at 2^16 minutes without losing the distance.
        e.lfu_minutes = u16::MAX;
        tuning.set(10, 1);
        assert_eq!(decayed(&e, 65_536 * 60_000, &tuning), 19);
    }
}
