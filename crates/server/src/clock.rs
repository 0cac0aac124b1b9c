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
//!
//! Commands run back to back from one read of a connection (a pipeline)
//! share readings: inside a [`Batch`], the reading that ends one command is
//! the start of the next, since nothing runs between them on the thread.
//! On a VM the vDSO clock costs tens of nanoseconds per read, a tenth of a
//! pipelined GET, so this halves the clock's share. A reading never crosses
//! an await: a `Batch` is opened only around code that runs without
//! yielding, and closing it drops the reading.
//!
//! The reading itself is the CPU's cycle counter where the kernel keeps
//! time with it ([`kvik_clock::cycle_counter`]), turned into monotonic
//! microseconds from a per-thread anchor ([`Ticks`]): the monotonic clock
//! read together with the counter, refreshed every [`REANCHOR_US`] like
//! the wall-clock anchor. The counter's rate is measured, not assumed: from
//! the readings of the origin and of each new anchor, once they are
//! [`CALIBRATE_US`] apart; each pair is the clock read between two counter
//! readings that came out close together, so a thread descheduled mid-pair
//! cannot skew an anchor or the rate. Until the rate is known, and where
//! there is no counter, the monotonic clock is read every time. Readings
//! on one thread never go back, even when a new anchor corrects a small
//! drift.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::per_thread::{self, Handoff, Ticks};

/// How old (monotonic microseconds) a thread's wall-clock anchor may get
/// before the wall clock is read again.
pub const REANCHOR_US: u64 = 1_000;

/// How far apart (monotonic microseconds) two readings of the counter and
/// the clock must be before the counter's rate is worked out from them:
/// far enough that the clock's own jitter (well under a microsecond) is
/// lost in the span.
pub const CALIBRATE_US: u64 = 20_000;

/// How many counter ticks may separate the two counter readings around a
/// clock reading for the three to count as read together: about 4 µs at
/// 2.4 GHz, where the clock read itself takes some 75 ticks. Wider, the
/// thread was interrupted in between, and an anchor taken from the pair
/// could be off by as much as the gap.
const MAX_PAIR_TICKS: u64 = 10_000;

/// How many times [`read_pair`] tries for readings that count as together.
const PAIR_TRIES: usize = 3;

/// The process's monotonic origin, every [`mono_us`] value counts from it.
#[derive(Debug, Clone, Copy)]
struct Origin {
    /// The origin as an [`Instant`].
    instant: Instant,
    /// The raw monotonic clock then, in nanoseconds.
    mono_ns: u64,
    /// The counter and the raw clock (ns) read together then, where there
    /// is a counter and the readings came out together.
    pair: Option<(u64, u64)>,
}

static ORIGIN: OnceLock<Origin> = OnceLock::new();

/// Microseconds per counter tick as a 32.32 fixed-point number, measured
/// (see [`calibrate`]); 0 until then.
static US_PER_TICK: AtomicU64 = AtomicU64::new(0);

/// Commands that run one after another on this thread with no await in
/// between: each starts at the reading that ended the one before.
///
/// Open it only around code that does not yield (the loop that runs what
/// one read brought), and drop it before any await; a reading kept across
/// an await would give the next command a stale time. Batches do not nest.
#[derive(Debug)]
#[must_use = "the batch ends when this is dropped"]
pub struct Batch {
    /// Tied to this thread.
    _thread: std::marker::PhantomData<*const ()>,
}

impl Batch {
    /// Open this thread's batch.
    pub fn open() -> Batch {
        per_thread::with(|t| {
            debug_assert_eq!(t.handoff.get(), Handoff::Closed, "batches do not nest");
            t.handoff.set(Handoff::Open);
        });
        Batch { _thread: std::marker::PhantomData }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        per_thread::with(|t| t.handoff.set(Handoff::Closed));
    }
}

/// [`ORIGIN`]. The raw clock is `CLOCK_MONOTONIC`, the clock behind
/// [`Instant`] on Linux, read directly (see [`kvik_clock`]).
fn origin_of_time() -> Origin {
    *ORIGIN.get_or_init(|| Origin {
        instant: Instant::now(),
        mono_ns: kvik_clock::monotonic_ns(),
        pair: kvik_clock::cycle_counter().and_then(read_pair),
    })
}

/// The counter and the raw monotonic clock (ns), read together: the
/// counter is read on both sides of the clock, starting from `before`, and
/// readings too far apart are taken again, [`PAIR_TRIES`] times at most.
/// `None` when no try came out together.
fn read_pair(mut before: u64) -> Option<(u64, u64)> {
    for _ in 0..PAIR_TRIES {
        let raw_ns = kvik_clock::monotonic_ns();
        let after = kvik_clock::cycle_counter()?;
        if after >= before && after - before < MAX_PAIR_TICKS {
            return Some((before, raw_ns));
        }
        before = after;
    }
    None
}

/// The monotonic origin every [`mono_us`] value counts from.
pub fn origin() -> Instant {
    origin_of_time().instant
}

/// Microseconds from the origin to `at` (0 for an instant before it).
pub fn mono_us(at: Instant) -> u64 {
    let d = at.saturating_duration_since(origin());
    d.as_secs().saturating_mul(1_000_000).saturating_add(u64::from(d.subsec_micros()))
}

/// Microseconds from the origin to now.
#[inline]
pub fn now_mono_us() -> u64 {
    match kvik_clock::cycle_counter() {
        Some(ticks) => counted_us(ticks),
        None => read_mono_ns() / 1000,
    }
}

/// Nanoseconds from the origin to now, read from the monotonic clock.
fn read_mono_ns() -> u64 {
    kvik_clock::monotonic_ns().saturating_sub(origin_of_time().mono_ns)
}

/// The time at counter reading `ticks`, from this thread's anchor while it
/// is fresh and the rate is known; otherwise from a new anchor.
#[inline]
fn counted_us(ticks: u64) -> u64 {
    per_thread::with(|t| {
        let cell = &t.ticks;
        let anchor = cell.get();
        let rate = US_PER_TICK.load(Ordering::Relaxed);
        if let Some(mut a) = anchor.filter(|a| rate != 0 && ticks >= a.ticks) {
            let since_us = (u128::from(ticks - a.ticks) * u128::from(rate)) >> 32;
            if since_us < u128::from(REANCHOR_US) {
                // `since_us` is below REANCHOR_US, so the cast keeps it whole.
                let now = (a.mono_us + since_us as u64).max(a.last_us);
                a.last_us = now;
                cell.set(Some(a));
                return now;
            }
        }
        reanchored_us(cell, anchor, ticks)
    })
}

/// [`counted_us`] from a new anchor, read now with the raw clock: once
/// [`REANCHOR_US`] has passed since the last one, so at most about a
/// thousand times a second however many commands the thread runs.
#[inline(never)]
fn reanchored_us(cell: &Cell<Option<Ticks>>, anchor: Option<Ticks>, ticks: u64) -> u64 {
    let origin = origin_of_time();
    let (ticks, mono_ns) = match read_pair(ticks) {
        Some((ticks, raw_ns)) => {
            calibrate(origin, ticks, raw_ns);
            (ticks, raw_ns.saturating_sub(origin.mono_ns))
        }
        // No anchor from readings that did not come out together: the
        // next reading on this thread tries again.
        None => (u64::MAX, read_mono_ns()),
    };
    let mono_us = mono_ns / 1000;
    let last_us = anchor.map_or(mono_us, |a| a.last_us.max(mono_us));
    cell.set(Some(Ticks { ticks, mono_us, last_us }));
    last_us
}

/// Work out the counter's rate from the origin's pair and this one (the
/// counter and the raw clock in ns), once they are [`CALIBRATE_US`] apart.
fn calibrate(origin: Origin, ticks: u64, raw_ns: u64) {
    let Some((origin_ticks, origin_ns)) = origin.pair else { return };
    let span_ns = raw_ns.saturating_sub(origin_ns);
    if span_ns < CALIBRATE_US * 1000 || ticks <= origin_ticks {
        return;
    }
    // µs per tick = ns / (1000 × ticks), kept as a 32.32 fixed-point number.
    let rate = (u128::from(span_ns) << 32) / (u128::from(ticks - origin_ticks) * 1000);
    US_PER_TICK.store(u64::try_from(rate).unwrap_or(u64::MAX), Ordering::Relaxed);
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
#[inline]
fn wall_us_at(mono: u64) -> i64 {
    per_thread::with(|t| match t.wall_anchor.get() {
        Some((m, w)) if mono >= m && mono - m < REANCHOR_US => w.saturating_add((mono - m) as i64),
        _ => wall_anchored_at(&t.wall_anchor, mono),
    })
}

/// [`wall_us_at`] from a new anchor: the wall clock read now, noted with `mono`.
#[inline(never)]
fn wall_anchored_at(anchor: &Cell<Option<(u64, i64)>>, mono: u64) -> i64 {
    let w = wall_clock_us();
    anchor.set(Some((mono, w)));
    w
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
    /// Read the clock for a command about to run, or, in a [`Batch`], take
    /// the reading that ended the command before it.
    #[inline(always)]
    pub fn now() -> CommandStart {
        let handoff = per_thread::with(|t| {
            let h = t.handoff.get();
            if let Handoff::Ended(_) = h {
                t.handoff.set(Handoff::Open);
            }
            h
        });
        let mono_us = match handoff {
            Handoff::Ended(at) => at,
            Handoff::Open | Handoff::Closed => now_mono_us(),
        };
        CommandStart { mono_us, wall_ms: wall_us_at(mono_us).div_euclid(1000) }
    }

    /// Microseconds since the start (the command's duration, read at its
    /// end). In a [`Batch`] the reading is kept for the next command.
    #[inline]
    pub fn elapsed_us(&self) -> u64 {
        let end = now_mono_us();
        per_thread::with(|t| {
            if t.handoff.get() != Handoff::Closed {
                t.handoff.set(Handoff::Ended(end));
            }
        });
        end.saturating_sub(self.mono_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether readings come from the counter, waiting (a bounded while)
    /// for its rate to be measured where they do.
    fn counter_calibrated() -> bool {
        if kvik_clock::cycle_counter().is_none() {
            return false;
        }
        for _ in 0..200 {
            let _ = now_mono_us();
            if US_PER_TICK.load(Ordering::Relaxed) != 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        panic!("the counter's rate was not measured within 400 ms");
    }

    #[test]
    fn the_counter_rate_is_measured_and_plausible() {
        if !counter_calibrated() {
            assert_eq!(US_PER_TICK.load(Ordering::Relaxed), 0, "no counter, no rate");
            return;
        }
        let ticks_per_us = (1u128 << 32) / u128::from(US_PER_TICK.load(Ordering::Relaxed));
        assert!((100..100_000).contains(&ticks_per_us), "{ticks_per_us} ticks per µs");
    }

    #[test]
    fn counted_time_follows_the_monotonic_clock() {
        counter_calibrated();
        // Across several anchors: each reading lies between clock readings
        // taken around it (within a few µs of drift and rounding).
        for i in 0..40 {
            let before = read_mono_ns() / 1000;
            let counted = now_mono_us();
            let after = read_mono_ns() / 1000;
            assert!(before <= counted + 20 && counted <= after + 20, "{i}: {before} {counted} {after}");
            std::thread::sleep(Duration::from_micros(300));
        }
    }

    #[test]
    fn a_pair_is_read_again_when_its_counter_readings_are_far_apart() {
        let Some(now) = kvik_clock::cycle_counter() else {
            assert_eq!(read_pair(0), None, "no counter, no pair");
            return;
        };
        // A `before` from long ago (or from the future) makes the first try
        // too wide: the pair comes from the second, with a fresh counter.
        for stale in [now.saturating_sub(1 << 40), now + (1 << 40)] {
            let (ticks, raw_ns) = read_pair(stale).expect("a second try comes out together");
            assert!(ticks >= now && ticks < now + (1 << 40), "{ticks} {now}");
            assert!(raw_ns <= kvik_clock::monotonic_ns());
        }
        let fresh = kvik_clock::cycle_counter().expect("the counter stays available");
        let (ticks, _) = read_pair(fresh).expect("readings in a row come out together");
        assert!(ticks >= fresh, "{ticks} {fresh}");
    }

    #[test]
    fn counted_time_never_goes_back() {
        counter_calibrated();
        let mut last = now_mono_us();
        for i in 0..200_000 {
            let now = now_mono_us();
            assert!(now >= last, "{i}: {now} < {last}");
            last = now;
            if i % 20_000 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

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

    #[test]
    fn a_batch_hands_each_end_to_the_next_start() {
        let batch = Batch::open();
        let first = CommandStart::now();
        std::thread::sleep(Duration::from_millis(2));
        let took = first.elapsed_us();
        assert!(took >= 2000, "{took}");
        let second = CommandStart::now();
        assert_eq!(second.mono_us, first.mono_us + took, "the second command starts where the first ended");
        // A start takes the reading once; without an end between, the clock is read.
        std::thread::sleep(Duration::from_millis(2));
        let third = CommandStart::now();
        assert!(third.mono_us >= second.mono_us + 2000);
        let _ = third.elapsed_us();
        drop(batch);
        // Closing the batch drops the reading: a start after it is fresh.
        std::thread::sleep(Duration::from_millis(2));
        let after = CommandStart::now();
        assert!(after.mono_us >= third.mono_us + 2000, "{} {}", after.mono_us, third.mono_us);
        // Outside a batch an end keeps nothing.
        let _ = after.elapsed_us();
        std::thread::sleep(Duration::from_millis(2));
        assert!(CommandStart::now().mono_us >= after.mono_us + 2000);
    }
}
