//! The monotonic clock in microseconds, and the CPU's cycle counter.
//!
//! Every command reads the clock twice (its start and its end). Through
//! `std::time::Instant` each reading also paid for checked `timespec`
//! arithmetic that cost several times the reading itself; here the reading
//! is one `clock_gettime(CLOCK_MONOTONIC)` call (answered in user space by
//! the kernel's vDSO) and one multiplication. `CLOCK_MONOTONIC` is the
//! clock behind `Instant` on Linux, so the two can be compared.
//!
//! Cheaper still is the counter the vDSO itself reads, the time-stamp
//! counter: [`cycle_counter`] gives it where the kernel keeps time with it
//! (so it ticks at a constant rate and agrees across cores). A reading is
//! about half of a `clock_gettime` call on the machines measured in
//! `bench/` (26 ns against 50 ns on a VM); turning ticks into time is the
//! caller's business (see the server's `clock` module).
//!
//! This crate exists so that the server crates can keep
//! `#![forbid(unsafe_code)]`: the foreign call and the counter read live here.

#![deny(unsafe_code)]
#![warn(missing_docs)]

/// Microseconds on the monotonic clock since an unspecified start (boot,
/// on Linux). Never decreases within the process.
pub fn monotonic_us() -> u64 {
    let (secs, nanos) = read_monotonic();
    secs.saturating_mul(1_000_000).saturating_add(nanos / 1000)
}

/// Nanoseconds on the same clock as [`monotonic_us`].
pub fn monotonic_ns() -> u64 {
    let (secs, nanos) = read_monotonic();
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// The CPU's time-stamp counter, in ticks from an unspecified start, when
/// the kernel keeps its own time with it; `None` elsewhere (another
/// clocksource, another architecture), where callers use [`monotonic_us`].
///
/// The kernel picks the counter as its clocksource only after checking
/// that it runs at a constant rate through power states and is in step on
/// every core, which is what a caller converting ticks to time needs.
pub fn cycle_counter() -> Option<u64> {
    use std::sync::OnceLock;
    static USABLE: OnceLock<bool> = OnceLock::new();
    USABLE.get_or_init(kernel_keeps_time_with_the_counter).then(read_counter)
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn kernel_keeps_time_with_the_counter() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|name| name.trim() == "tsc")
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn kernel_keeps_time_with_the_counter() -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn read_counter() -> u64 {
    // SAFETY: RDTSC exists on every x86-64 CPU; it reads a counter into
    // registers and touches no memory.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn read_counter() -> u64 {
    0
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
    fn the_counter_is_offered_only_where_the_kernel_keeps_time_with_it() {
        let kernel = kernel_keeps_time_with_the_counter();
        assert_eq!(cycle_counter().is_some(), kernel);
        let Some(first) = cycle_counter() else { return };
        let ns = monotonic_ns();
        std::thread::sleep(Duration::from_millis(5));
        let ticks = cycle_counter().map(|t| t - first);
        let waited_ns = monotonic_ns() - ns;
        // Whatever the rate, it is between 100 MHz and 100 GHz.
        let ticks = ticks.expect("the counter stays available");
        assert!(ticks > waited_ns / 10 && ticks < waited_ns * 100, "{ticks} ticks in {waited_ns} ns");
    }

    #[test]
    fn nanoseconds_and_microseconds_are_one_clock() {
        let us = monotonic_us();
        let ns = monotonic_ns();
        let again = monotonic_us();
        assert!(us <= ns / 1000 && ns / 1000 <= again, "{us} {ns} {again}");
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
