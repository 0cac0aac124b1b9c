//! Command durations as a log-linear histogram, for `INFO latencystats`
//! and `LATENCY HISTOGRAM`.
//!
//! Redis keeps an HdrHistogram per command (2 significant digits, 1 ns to
//! 1 s) and answers percentiles from it. kvik needs something it can add
//! to on every command with one plain store and that a reader can sum
//! over threads, so it keeps fixed slots of `u64` counts:
//!
//! - every power of two of microseconds is one range, split into
//!   [`SUB_BUCKETS`] equal slots, so a slot is at most 1/16 of the values
//!   it holds wide (values 1 to 32 µs have a slot each);
//! - a percentile is answered with the highest value of the slot it falls
//!   in, as Redis answers with the highest value its bucket stands for, so
//!   it is never below the measured duration and at most 6.25% above it
//!   (Redis's buckets are below 1% wide: kvik's figures are coarser, not
//!   made up);
//! - slots are laid out so that every power of two is the top of one, so
//!   `LATENCY HISTOGRAM`'s cumulative counts at 1, 2, 4, … µs are exact.
//!
//! Durations come from kvik's command clock, in whole microseconds; a
//! command that took less than one counts as 1 µs, as Redis counts its
//! shortest ones as its 1 ns minimum. The slots reach 2^36 µs (19 hours);
//! anything longer counts in the last one (Redis stops at 1 s).
//!
//! The slot of a duration `d` is found from `d - 1`: its highest bit picks
//! the range, the 4 bits below it the slot within the range.

/// Slots each power of two of microseconds is split into.
pub const SUB_BUCKETS: usize = 16;
/// `log2(SUB_BUCKETS)`.
const SUB_BITS: u32 = 4;
/// Durations up to `2^MAX_BITS` µs have slots of their own.
const MAX_BITS: u32 = 36;
/// Number of slots.
pub const SLOTS: usize = SUB_BUCKETS * (MAX_BITS - SUB_BITS + 1) as usize;

/// The slot a duration of `usec` microseconds counts in.
#[inline]
pub fn slot(usec: u64) -> usize {
    let v = usec.saturating_sub(1).min((1 << MAX_BITS) - 1);
    if v < SUB_BUCKETS as u64 {
        return v as usize;
    }
    let top = 63 - v.leading_zeros();
    let shift = top - SUB_BITS;
    (SUB_BUCKETS as u64 * u64::from(shift) + (v >> shift)) as usize
}

/// The durations slot `i` holds, in microseconds: `(lowest, highest)`.
pub fn bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    let sub = SUB_BUCKETS as u64;
    if i < 2 * sub {
        return (i + 1, i + 1);
    }
    let shift = i / sub - 1;
    let mantissa = sub + i % sub;
    ((mantissa << shift) + 1, (mantissa + 1) << shift)
}

/// Calls counted in `counts` (one count per slot).
pub fn total(counts: &[u64]) -> u64 {
    counts.iter().fold(0, |a, &n| a.wrapping_add(n))
}

/// The duration at `percentile` (0 to 100) of the calls in `counts`, in
/// microseconds, by Redis's rule (`hdr_value_at_percentile`): the call at
/// rank `percentile/100 × calls`, rounded, at least the first; reported as
/// the highest value of its slot, or for percentile 0 the lowest. 0 when
/// nothing was counted.
pub fn percentile(counts: &[u64], percentile: f64) -> u64 {
    let calls = total(counts);
    let wanted = percentile.clamp(0.0, 100.0);
    let rank = ((wanted / 100.0 * calls as f64) + 0.5) as u64;
    let rank = rank.max(1);
    let mut seen = 0u64;
    for (i, &n) in counts.iter().enumerate() {
        seen = seen.wrapping_add(n);
        if n > 0 && seen >= rank {
            let (low, high) = bounds(i);
            return if wanted == 0.0 { low } else { high };
        }
    }
    0
}

/// `(bound in µs, calls up to it)` at every power of two of microseconds
/// where the running total grows, as `LATENCY HISTOGRAM` lists them.
pub fn cumulative_powers_of_two(counts: &[u64]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut running = 0u64;
    let mut listed = 0u64;
    let mut bound = 1u64;
    for (i, &n) in counts.iter().enumerate() {
        running = running.wrapping_add(n);
        let (_, high) = bounds(i);
        if high == bound {
            if running > listed {
                out.push((bound, running));
                listed = running;
            }
            bound = bound.saturating_mul(2);
        }
    }
    out
}

/// A percentile as Redis names it in `INFO` and `CONFIG GET`: printed with
/// six decimals (`%f`), then trailing zeros and a trailing point dropped.
pub fn percentile_name(p: f64) -> String {
    let mut text = format!("{p:.6}");
    if text.contains('.') {
        while text.ends_with('0') {
            text.pop();
        }
        if text.ends_with('.') {
            text.pop();
        }
    }
    text
}

/// Parse a `latency-tracking-info-percentiles` value: numbers from 0 to
/// 100 separated by single spaces, or nothing at all. The error is Redis's
/// text for the refusal.
pub fn parse_percentiles(value: &str) -> Result<Vec<f64>, &'static str> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for word in value.split(' ') {
        // As Redis's string2d: no empty word, no spaces, nothing after the number, no NaN.
        let number = word.parse::<f64>().ok().filter(|p| !p.is_nan());
        let Some(p) = number else {
            return Err("Invalid latency-tracking-info-percentiles parameters");
        };
        if !(0.0..=100.0).contains(&p) {
            return Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]");
        }
        out.push(p);
    }
    Ok(out)
}

/// The canonical form of a `latency-tracking-info-percentiles` value, as
/// `CONFIG GET` shows it (`"0.50 99.90"` reads back `"0.5 99.9"`).
pub fn canonical_percentiles(value: &str) -> Result<String, &'static str> {
    let list = parse_percentiles(value)?;
    Ok(list.iter().map(|p| percentile_name(*p)).collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts_of(durations: &[u64]) -> Vec<u64> {
        let mut counts = vec![0; SLOTS];
        for &d in durations {
            counts[slot(d)] += 1;
        }
        counts
    }

    #[test]
    fn slots_are_contiguous_and_hold_their_values() {
        let mut expected_low = 1;
        for i in 0..SLOTS {
            let (low, high) = bounds(i);
            assert_eq!(low, expected_low, "slot {i}");
            assert!(high >= low);
            assert_eq!(slot(low), i, "lowest value of slot {i}");
            assert_eq!(slot(high), i, "highest value of slot {i}");
            // Never wider than a sixteenth of the values it holds.
            assert!((high - low + 1) * SUB_BUCKETS as u64 <= low.max(SUB_BUCKETS as u64), "slot {i}");
            expected_low = high + 1;
        }
        assert_eq!(bounds(SLOTS - 1).1, 1 << MAX_BITS);
        assert_eq!(slot(0), 0);
        assert_eq!(slot(u64::MAX), SLOTS - 1);
    }

    #[test]
    fn powers_of_two_end_slots() {
        for k in 0..=MAX_BITS {
            assert_eq!(bounds(slot(1 << k)).1, 1 << k, "2^{k}");
        }
    }

    #[test]
    fn percentiles_follow_redis_rank_rule() {
        // 1000 calls of 10 µs, 10 of 10,000 µs.
        let mut durations = vec![10; 1000];
        durations.extend([10_000; 10]);
        let counts = counts_of(&durations);
        assert_eq!(percentile(&counts, 50.0), 10);
        assert_eq!(percentile(&counts, 99.0), 10);
        let p999 = percentile(&counts, 99.9);
        assert!((10_000..=10_000 + 10_000 / 16).contains(&p999), "{p999}");
        assert_eq!(percentile(&counts, 100.0), p999);
        assert_eq!(percentile(&[0; SLOTS], 50.0), 0);
        // Percentile 0 reports the lowest value of the first slot.
        let counts = counts_of(&[100, 200]);
        assert_eq!(percentile(&counts, 0.0), bounds(slot(100)).0);
        assert_eq!(percentile(&counts, 0.0001), bounds(slot(100)).1);
    }

    #[test]
    fn cumulative_counts_at_powers_of_two() {
        let counts = counts_of(&[0, 1, 2, 3, 5, 1000, 1024, 1025]);
        assert_eq!(cumulative_powers_of_two(&counts), vec![(1, 2), (2, 3), (4, 4), (8, 5), (1024, 7), (2048, 8)]);
        assert_eq!(cumulative_powers_of_two(&[0; SLOTS]), vec![]);
    }

    #[test]
    fn percentile_names_and_values_read_as_in_redis() {
        assert_eq!(percentile_name(50.0), "50");
        assert_eq!(percentile_name(99.9), "99.9");
        assert_eq!(percentile_name(0.0001), "0.0001");
        assert_eq!(percentile_name(10.0), "10");
        assert_eq!(percentile_name(0.0), "0");
        assert_eq!(canonical_percentiles("0.0001 99.990 100 0 1e1"), Ok("0.0001 99.99 100 0 10".to_string()));
        assert_eq!(canonical_percentiles(""), Ok(String::new()));
        let invalid = Err("Invalid latency-tracking-info-percentiles parameters");
        assert_eq!(canonical_percentiles("50 abc"), invalid);
        assert_eq!(canonical_percentiles("  50   99 "), invalid);
        assert_eq!(canonical_percentiles("nan"), invalid);
        let range = Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]");
        assert_eq!(canonical_percentiles("101"), range);
        assert_eq!(canonical_percentiles("-1"), range);
    }
}
