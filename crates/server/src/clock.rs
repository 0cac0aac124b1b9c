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
    /// What the next [`CommandStart::now`] on this thread may reuse.
    static HANDOFF: Cell<Handoff> = const { Cell::new(Handoff::Closed) };
}

/// The state of this thread's [`Batch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handoff {
    /// No batch is open: every start reads the clock.
    Closed,
    /// A batch is open, and no command has ended in it since the last start.
    Open,
    /// A batch is open, and a command just ended at this monotonic time.
    Ended(u64),
}

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
        debug_assert_eq!(HANDOFF.get(), Handoff::Closed, "batches do not nest");
        HANDOFF.set(Handoff::Open);
        Batch { _thread: std::marker::PhantomData }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        HANDOFF.set(Handoff::Closed);
    }
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
    /// Read the clock for a command about to run, or, in a [`Batch`], take
    /// the reading that ended the command before it.
    pub fn now() -> CommandStart {
        let mono_us = match HANDOFF.get() {
            Handoff::Ended(at) => {
                HANDOFF.set(Handoff::Open);
                at
            }
            Handoff::Open | Handoff::Closed => now_mono_us(),
        };
        CommandStart { mono_us, wall_ms: wall_us_at(mono_us).div_euclid(1000) }
    }

    /// Microseconds since the start (the command's duration, read at its
    /// end). In a [`Batch`] the reading is kept for the next command.
    pub fn elapsed_us(&self) -> u64 {
        let end = now_mono_us();
        if HANDOFF.get() != Handoff::Closed {
            HANDOFF.set(Handoff::Ended(end));
        }
        end.saturating_sub(self.mono_us)
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
