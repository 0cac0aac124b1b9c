//! One clock reading per command.
//!
//! A command needs the time three ways: the monotonic instant it started
//! (for its duration in commandstats and the client's idle time), and the
//! wall clock in Unix milliseconds (the "command time" every expiry check
//! and access time of the command agrees on, see
//! [`crate::keyspace::now_ms`]). Reading each clock separately and turning
//! each reading into a number cost as much as a small command, so
//! [`CommandStart::now`] reads the monotonic clock once and derives the wall
//! time from a per-thread anchor: a wall-clock reading paired with the
//! monotonic reading taken with it, refreshed whenever it is older than
//! [`REANCHOR_US`]. The derived time is the wall time to within the clock's
//! drift over that interval, and a step of the wall clock (NTP, an operator)
//! is picked up within the same interval.

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How old (monotonic microseconds) a thread's wall-clock anchor may get
/// before the wall clock is read again.
pub const REANCHOR_US: u64 = 1_000;

/// The process's monotonic origin: an [`Instant`] and the raw monotonic
/// clock in microseconds, read together. Every [`mono_us`] value counts
/// from it.
static ORIGIN: OnceLock<(Instant, u64)> = OnceLock::new();

thread_local! {
    /// This thread's `(monotonic µs, wall-clock Unix µs)` read together.
    static ANCHOR: Cell<Option<(u64, i64)>> = const { Cell::new(None) };
}

/// [`ORIGIN`]. The raw clock is `CLOCK_MONOTONIC`, the clock behind
/// [`Instant`] on Linux, read directly (see [`kvik_clock`]).
fn origin_pair() -> (Instant, u64) {
    *ORIGIN.get_or_init(|| (Instant::now(), kvik_clock::monotonic_us()))
}

/// The monotonic origin every [`mono_us`] value counts from.
pub fn origin() -> Instant {
    origin_pair().0
}

/// Microseconds from the origin to `at` (0 for an instant before it).
pub fn mono_us(at: Instant) -> u64 {
    let d = at.saturating_duration_since(origin());
    d.as_secs().saturating_mul(1_000_000).saturating_add(u64::from(d.subsec_micros()))
}

/// Microseconds from the origin to now.
pub fn now_mono_us() -> u64 {
    kvik_clock::monotonic_us().saturating_sub(origin_pair().1)
}

/// The instant `us` microseconds after the origin.
pub fn instant_at(us: u64) -> Instant {
    origin() + Duration::from_micros(us)
}

/// The wall clock in Unix microseconds.
fn wall_clock_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The wall clock in Unix microseconds at monotonic time `mono`, from this
/// thread's anchor (read afresh when it is stale or from another time line).
fn wall_us_at(mono: u64) -> i64 {
    ANCHOR.with(|anchor| match anchor.get() {
        Some((m, w)) if mono >= m && mono - m < REANCHOR_US => w.saturating_add((mono - m) as i64),
        _ => {
            let w = wall_clock_us();
            anchor.set(Some((mono, w)));
            w
        }
    })
}

/// When a command started, read once.
#[derive(Debug, Clone, Copy)]
pub struct CommandStart {
    /// The monotonic time, as microseconds after [`origin`].
    pub mono_us: u64,
    /// The wall clock then, in Unix milliseconds.
    pub wall_ms: i64,
}

impl CommandStart {
    /// Read the clock for a command about to run.
    pub fn now() -> CommandStart {
        let mono_us = now_mono_us();
        CommandStart { mono_us, wall_ms: wall_us_at(mono_us).div_euclid(1000) }
    }

    /// Microseconds since the start (the command's duration, read at its end).
    pub fn elapsed_us(&self) -> u64 {
        now_mono_us().saturating_sub(self.mono_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_wall_time_follows_the_wall_clock() {
        for _ in 0..3 {
            let before = wall_clock_us().div_euclid(1000);
            let start = CommandStart::now();
            let after = wall_clock_us().div_euclid(1000);
            assert!(before - 1 <= start.wall_ms && start.wall_ms <= after + 1, "{before} {} {after}", start.wall_ms);
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn monotonic_microseconds_round_trip() {
        let start = CommandStart::now();
        let at = Instant::now();
        let back = instant_at(start.mono_us);
        // Read through the two paths, the clocks agree to within the time
        // between the readings (and the microsecond rounding).
        assert!(back <= at + Duration::from_micros(1), "{back:?} {at:?}");
        assert!(at.saturating_duration_since(back) < Duration::from_millis(50));
        assert!(mono_us(at) + 1 >= start.mono_us);
        std::thread::sleep(Duration::from_millis(1));
        assert!(start.elapsed_us() >= 1000);
        assert!(CommandStart::now().mono_us > start.mono_us);
    }
}
