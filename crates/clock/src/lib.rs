//! The monotonic clock in microseconds.
//!
//! Every command reads the clock twice (its start and its end). Through
//! `std::time::Instant` each reading also paid for checked `timespec`
//! arithmetic that cost several times the reading itself; here the reading
//! is one `clock_gettime(CLOCK_MONOTONIC)` call (answered in user space by
//! the kernel's vDSO) and one multiplication. `CLOCK_MONOTONIC` is the
//! clock behind `Instant` on Linux, so the two can be compared.
//!
//! This crate exists so that the server crates can keep
//! `#![forbid(unsafe_code)]`: the single foreign call lives here.

#![deny(unsafe_code)]
#![warn(missing_docs)]

/// Microseconds on the monotonic clock since an unspecified start (boot,
/// on Linux). Never decreases within the process.
pub fn monotonic_us() -> u64 {
    let (secs, nanos) = read_monotonic();
    secs.saturating_mul(1_000_000).saturating_add(nanos / 1000)
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn read_monotonic() -> (u64, u64) {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec that outlives the call, and
    // CLOCK_MONOTONIC exists on every supported kernel; the call writes
    // only `t`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    if rc != 0 {
        return fallback();
    }
    (u64::try_from(t.tv_sec).unwrap_or(0), u64::try_from(t.tv_nsec).unwrap_or(0))
}

#[cfg(not(unix))]
fn read_monotonic() -> (u64, u64) {
    fallback()
}

/// The same clock through the standard library, from a process-wide origin.
fn fallback() -> (u64, u64) {
    use std::sync::OnceLock;
    use std::time::Instant;
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let d = ORIGIN.get_or_init(Instant::now).elapsed();
    (d.as_secs(), u64::from(d.subsec_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn never_goes_back_and_counts_microseconds() {
        let mut last = monotonic_us();
        for _ in 0..1000 {
            let now = monotonic_us();
            assert!(now >= last);
            last = now;
        }
        let start = monotonic_us();
        std::thread::sleep(Duration::from_millis(5));
        let waited = monotonic_us() - start;
        assert!((5_000..1_000_000).contains(&waited), "{waited}");
    }

    #[test]
    fn agrees_with_instant() {
        let a = Instant::now();
        let m = monotonic_us();
        std::thread::sleep(Duration::from_millis(3));
        let b = Instant::now();
        let n = monotonic_us();
        let by_instant = b.duration_since(a).as_micros() as i64;
        let by_us = (n - m) as i64;
        assert!((by_instant - by_us).abs() < 1000, "{by_instant} {by_us}");
    }
}
