//! Everything the server keeps per thread, in one place.
//!
//! A worker thread runs many connections' commands one after another, and
//! a few facts belong to the thread rather than to any connection: its
//! clock anchors, which let a command's start be derived from one counter
//! read ([`crate::clock`]); how many connections its event loop serves and
//! whether its writes have been slow ([`crate::net::reply_pacing`]); and
//! which lane of the statistics it counts into ([`crate::metrics::stat_lanes`]).
//! They live here, in one [`PerThread`], rather than as statics spread over
//! the files that use them, so that what a thread carries can be read in
//! one screen, and so that nothing new becomes per-thread without showing
//! up here.
//!
//! Every field is a `Cell` of plain numbers: the thread-local needs no
//! destructor and no lazy set-up, so reading a field costs what reading a
//! static does. State that must own memory does not belong here: it is
//! passed down the call (a served waiter's key travels in the command's
//! context) or lives with the store's own per-thread state
//! (`kvik_store::per_thread`), which the store reaches without the server.
//!
//! This module sits at the bottom of the crate: it defines the data and
//! imports nothing from the crate; the modules above own the logic.

use std::cell::Cell;

/// A thread's counter reading and the monotonic time read with it (see
/// [`crate::clock`]).
#[derive(Debug, Clone, Copy)]
pub struct Ticks {
    /// The counter.
    pub ticks: u64,
    /// The monotonic time, as microseconds after the origin.
    pub mono_us: u64,
    /// The latest time this thread was given, which the next is never below.
    pub last_us: u64,
}

/// The state of this thread's clock batch (see [`crate::clock::Batch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handoff {
    /// No batch is open: every start reads the clock.
    Closed,
    /// A batch is open, and no command has ended in it since the last start.
    Open,
    /// A batch is open, and a command just ended at this monotonic time.
    Ended(u64),
}

/// What this thread's event loop knows about its writes (see
/// [`crate::net::reply_pacing`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Pacing {
    /// Connections served by this loop.
    pub connections: usize,
    /// Moving average of whether timed writes were slow (out of
    /// `reply_pacing::SCORE_ONE`).
    pub slow_score: u32,
    /// Batches since the last probe, while deferring.
    pub since_probe: u32,
}

/// The server's state of one thread.
#[derive(Debug)]
pub struct PerThread {
    /// `(monotonic µs, wall-clock Unix µs)` read together.
    pub wall_anchor: Cell<Option<(u64, i64)>>,
    /// The cycle counter's anchor.
    pub ticks: Cell<Option<Ticks>>,
    /// What the next command start on this thread may reuse.
    pub handoff: Cell<Handoff>,
    /// Reply pacing of this thread's loop.
    pub pacing: Cell<Pacing>,
    /// `(id of a stat_lanes::Lanes, index of this thread's lane in it)`,
    /// for the one this thread last counted into.
    pub stat_lane: Cell<(u64, usize)>,
    /// Which event loop this thread runs (`None` on other threads): the
    /// slot its scripts run in (`registries::scripts`).
    pub loop_index: Cell<Option<usize>>,
}

impl PerThread {
    const fn new() -> PerThread {
        PerThread {
            wall_anchor: Cell::new(None),
            ticks: Cell::new(None),
            handoff: Cell::new(Handoff::Closed),
            pacing: Cell::new(Pacing { connections: 0, slow_score: 0, since_probe: 0 }),
            stat_lane: Cell::new((0, 0)),
            loop_index: Cell::new(None),
        }
    }
}

thread_local! {
    static THIS: PerThread = const { PerThread::new() };
}

/// Run `f` on this thread's state.
#[inline(always)]
pub fn with<R>(f: impl FnOnce(&PerThread) -> R) -> R {
    THIS.with(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_needs_no_destructor() {
        // A destructor would make every access check whether it was
        // registered yet; the fields are plain numbers so that none is.
        assert!(!std::mem::needs_drop::<PerThread>());
    }

    #[test]
    fn each_thread_has_its_own() {
        with(|t| t.stat_lane.set((7, 3)));
        let other = std::thread::spawn(|| with(|t| t.stat_lane.get())).join().expect("thread ran");
        assert_eq!(other, (0, 0));
        assert_eq!(with(|t| t.stat_lane.get()), (7, 3));
    }
}
