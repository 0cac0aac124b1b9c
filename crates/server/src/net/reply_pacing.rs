//! When an event loop writes a connection's replies: as soon as its batch
//! has run, or after the loop's other connections have run theirs.
//!
//! On loopback, and on any host where clients run beside the server, the
//! writer of a reply pays for waking the reader: the kernel delivers the
//! bytes in the sender's system call and wakes the thread that waits for
//! them, and on a virtual machine waking a sleeping CPU costs several
//! microseconds (about 6 µs on the machines `bench/` ran on). A client
//! that keeps many connections busy, and waits for the server, sleeps
//! between replies: one write per connection and batch wakes it once per
//! batch. When the server is the slower side this can be a fifth of its
//! time (pipelined ZADDs on one large sorted set, 200-deep pipelines of
//! GETs).
//!
//! So the loop watches what small writes cost. While they keep coming out
//! slow (the reader was asleep), a connection with a small batch of replies
//! lets the loop's other connections run first, so that the replies of one
//! pass go out back to back and one wake-up serves them all, as Redis
//! writes every client's replies before it waits for events again. While
//! writes are cheap the reader is busy, so holding replies back would only
//! leave it idle: they go out at once. Every [`PROBE_EVERY`]th batch is
//! written at once even while deferring, to see whether the reader still
//! sleeps. Large batches always go at once (the reader has work enough),
//! and so does everything on a loop with one connection.
//!
//! A large batch on a loop with one connection is the opposite case: the
//! client waits for its replies while the server runs it, then reads them
//! while the server waits. So such a batch, read with at least
//! [`SPLIT_INPUT_BYTES`] of input, sends the replies of its first part once
//! that part has run ([`BatchSplit`]), and the client reads them while the
//! server runs the rest: one more write per large batch buys the overlap of
//! the two sides' work. With 1,000 pipelined PINGs from one client, where
//! the server's share of a round trip is about 60%, the first write goes
//! after 60% of the input.
//!
//! Two cases already overlap and are not split. A read that filled the read
//! buffer left more input in the socket: the next batch follows at once,
//! and its write answers the client as early as a split would. With other
//! connections on the loop, the client reads their replies meanwhile, and
//! the extra write is only a cost: 10 connections pipelining 1,000 PINGs
//! each lost about 8% to it.
//!
//! The state is per loop thread and needs no locking.

use crate::clock::now_mono_us;
use crate::per_thread::{self, Pacing};

/// Largest batch of replies (bytes) that may wait for the loop's other
/// connections, and whose write is timed.
pub const SMALL_BATCH_BYTES: usize = 8 * 1024;

/// A write of a small batch that takes this long (µs) most likely woke the
/// reader. A write that wakes nobody takes 1–2 µs on loopback.
pub const WAKE_US: u64 = 4;

/// While deferring, one batch in this many is written at once, as a probe.
pub const PROBE_EVERY: u32 = 32;

/// The slow-write score (out of [`SCORE_ONE`]) from which replies wait.
const DEFER_FROM: u32 = SCORE_ONE / 2;

/// The slow-write score's scale: a moving average of 1 for a slow write
/// and 0 for a fast one, in fixed point.
const SCORE_ONE: u32 = 1 << 10;

/// Least input (bytes) a batch needs to be split: at a few dozen bytes per
/// small request, a few hundred requests, whose run takes far longer than
/// the extra write costs.
pub const SPLIT_INPUT_BYTES: usize = 8 * 1024;

/// Share of a split batch's input (in thousandths) still to run when the
/// first part's replies go out.
const SPLIT_REST_PERMILLE: usize = 400;

/// When a batch's first replies go out before the batch has run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSplit {
    /// Split once this little input is left; `None` when there is no split
    /// (a small batch, or the first part's replies are gone).
    rest_bytes: Option<usize>,
}

impl BatchSplit {
    /// The split of a batch that starts with `input` bytes buffered, on
    /// this thread's loop; `more_input` when the socket most likely holds
    /// more (the read filled the buffer).
    pub fn plan(input: usize, more_input: bool) -> BatchSplit {
        if input < SPLIT_INPUT_BYTES || more_input {
            return BatchSplit { rest_bytes: None };
        }
        BatchSplit::plan_among(input, per_thread::with(|t| t.pacing.get().connections))
    }

    /// The split of a batch of `input` bytes on a loop serving `connections`.
    fn plan_among(input: usize, connections: usize) -> BatchSplit {
        let split = input >= SPLIT_INPUT_BYTES && connections < 2;
        BatchSplit { rest_bytes: split.then(|| input / 1000 * SPLIT_REST_PERMILLE) }
    }

    /// Whether the replies so far go out now, with `left` bytes of input
    /// still to run and `replies` bytes of replies due. Says yes once.
    #[inline]
    pub fn due(&mut self, left: usize, replies: usize) -> bool {
        match self.rest_bytes {
            Some(rest) if left <= rest && replies > 0 => {
                self.rest_bytes = None;
                true
            }
            _ => false,
        }
    }
}

impl Pacing {
    fn deferring(&self) -> bool {
        self.slow_score >= DEFER_FROM
    }

    /// Fold one timed write into the score: a weight of 1/8 for the newest.
    fn record(&mut self, slow: bool) {
        let sample = if slow { SCORE_ONE } else { 0 };
        self.slow_score = self.slow_score - self.slow_score / 8 + sample / 8;
        debug_assert!(self.slow_score <= SCORE_ONE);
    }

    /// What to do with a batch of `bytes` replies.
    fn plan(&mut self, bytes: usize) -> Plan {
        if bytes > SMALL_BATCH_BYTES || self.connections < 2 {
            return Plan::Now;
        }
        if !self.deferring() {
            return Plan::NowTimed;
        }
        self.since_probe += 1;
        if self.since_probe >= PROBE_EVERY {
            self.since_probe = 0;
            return Plan::NowTimed;
        }
        Plan::AfterOthers
    }
}

/// How a batch of replies is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// At once, untimed.
    Now,
    /// At once, timing the write ([`WriteTimer`]).
    NowTimed,
    /// After the loop's other connections ran ([`yield_to_others`]).
    AfterOthers,
}

/// A connection's place in its loop's count, for as long as it is served.
#[derive(Debug)]
pub struct LoopSeat(());

impl LoopSeat {
    /// Count a connection served by this thread's loop until dropped.
    pub fn take() -> LoopSeat {
        update(|p| p.connections += 1);
        LoopSeat(())
    }
}

impl Drop for LoopSeat {
    fn drop(&mut self) {
        update(|p| p.connections = p.connections.saturating_sub(1));
    }
}

fn update<R>(f: impl FnOnce(&mut Pacing) -> R) -> R {
    per_thread::with(|t| {
        let mut pacing = t.pacing.get();
        let r = f(&mut pacing);
        t.pacing.set(pacing);
        r
    })
}

/// How this loop writes a batch of `bytes` replies now.
pub fn plan(bytes: usize) -> Plan {
    update(|p| p.plan(bytes))
}

/// Before writing a batch of `bytes` replies: wait for the loop's other
/// queued connections if the plan says so; the timer of the write when it
/// is to be timed.
pub async fn before_write(bytes: usize) -> Option<WriteTimer> {
    let plan = plan(bytes);
    if plan == Plan::AfterOthers {
        yield_to_others().await;
    }
    WriteTimer::start(plan)
}

/// Let the connections already waiting to run on this loop run first,
/// then come back.
///
/// Unlike `tokio::task::yield_now`, which comes back only after the loop
/// has looked for new events and run the connections they woke, this
/// queues the connection at once, behind those already queued: its replies
/// go out at the end of the current pass, not one pass later.
pub fn yield_to_others() -> YieldToOthers {
    YieldToOthers { queued: false }
}

/// The future of [`yield_to_others`].
#[derive(Debug)]
pub struct YieldToOthers {
    queued: bool,
}

impl std::future::Future for YieldToOthers {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.queued {
            return std::task::Poll::Ready(());
        }
        self.queued = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// The start of a timed write; [`WriteTimer::done`] records how long it took.
#[derive(Debug)]
pub struct WriteTimer {
    start_us: u64,
}

impl WriteTimer {
    /// A timer for a write of a batch planned `plan`; `None` when untimed.
    pub fn start(plan: Plan) -> Option<WriteTimer> {
        (plan == Plan::NowTimed).then(|| WriteTimer { start_us: now_mono_us() })
    }

    /// The write is done.
    pub fn done(self) {
        let slow = now_mono_us().saturating_sub(self.start_us) >= WAKE_US;
        update(|p| p.record(slow));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacing(connections: usize) -> Pacing {
        Pacing { connections, ..Pacing::default() }
    }

    #[test]
    fn one_connection_or_a_large_batch_goes_at_once_untimed() {
        let mut p = pacing(1);
        for _ in 0..100 {
            p.record(true);
        }
        assert!(p.deferring());
        assert_eq!(p.plan(10), Plan::Now);
        p.connections = 5;
        assert_eq!(p.plan(SMALL_BATCH_BYTES + 1), Plan::Now);
        assert_eq!(p.plan(SMALL_BATCH_BYTES), Plan::AfterOthers);
    }

    #[test]
    fn slow_writes_turn_deferring_on_and_fast_probes_turn_it_off() {
        let mut p = pacing(10);
        assert_eq!(p.plan(100), Plan::NowTimed, "cheap until shown otherwise");
        let mut slow_writes = 0;
        while !p.deferring() {
            p.record(true);
            slow_writes += 1;
            assert!(slow_writes < 20, "a run of slow writes turns it on");
        }
        assert!(slow_writes > 1, "one slow write is not enough");
        // Deferring: one batch in PROBE_EVERY is written at once and timed.
        let plans: Vec<Plan> = (0..PROBE_EVERY * 2).map(|_| p.plan(100)).collect();
        assert_eq!(plans.iter().filter(|&&x| x == Plan::NowTimed).count(), 2);
        assert_eq!(plans.iter().filter(|&&x| x == Plan::AfterOthers).count(), 2 * PROBE_EVERY as usize - 2);
        // Probes that come out fast turn it off again.
        let mut fast_probes = 0;
        while p.deferring() {
            p.record(false);
            fast_probes += 1;
            assert!(fast_probes < 20);
        }
        assert_eq!(p.plan(100), Plan::NowTimed);
    }

    #[test]
    fn the_score_stays_within_its_scale() {
        let mut p = pacing(2);
        for i in 0..10_000 {
            p.record(i % 3 != 0);
            assert!(p.slow_score <= SCORE_ONE);
        }
        for _ in 0..200 {
            p.record(false);
        }
        assert!(p.slow_score < SCORE_ONE / 64);
    }

    /// A connection that yields resumes after the connections already
    /// queued on the loop, and at once when there are none.
    #[test]
    fn yielding_lets_the_queued_connections_run_first() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let local = tokio::task::LocalSet::new();
        let order = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        local.block_on(&runtime, async {
            let log = |name: &'static str| {
                let order = std::rc::Rc::clone(&order);
                move || order.borrow_mut().push(name)
            };
            let (a_runs, a_resumes, b_runs) = (log("a runs"), log("a resumes"), log("b runs"));
            let a = tokio::task::spawn_local(async move {
                a_runs();
                yield_to_others().await;
                a_resumes();
            });
            let b = tokio::task::spawn_local(async move { b_runs() });
            a.await.expect("a");
            b.await.expect("b");
            // Alone on the loop, it comes straight back.
            let alone = tokio::time::timeout(std::time::Duration::from_secs(5), yield_to_others()).await;
            assert!(alone.is_ok());
        });
        assert_eq!(*order.borrow(), ["a runs", "b runs", "a resumes"]);
    }

    #[test]
    fn a_large_batch_splits_once_after_its_first_part() {
        let input = 14_000;
        let mut split = BatchSplit::plan_among(input, 1);
        // Run 14-byte requests: the replies go out once, when 40% of the input is left.
        let mut splits = Vec::new();
        for ran in 1..=input / 14 {
            if split.due(input - ran * 14, ran * 7) {
                splits.push(ran);
            }
        }
        assert_eq!(splits, [600]);
        // Nothing due yet: the split waits for a reply.
        let mut split = BatchSplit::plan_among(input, 1);
        assert!(!split.due(0, 0));
        assert!(split.due(0, 1));
    }

    #[test]
    fn a_small_batch_more_input_or_a_shared_loop_is_not_split() {
        let mut split = BatchSplit::plan_among(SPLIT_INPUT_BYTES - 1, 1);
        assert!((0..SPLIT_INPUT_BYTES).all(|left| !split.due(left, 100)));
        assert!(BatchSplit::plan_among(SPLIT_INPUT_BYTES, 1).due(0, 1));
        let mut shared = BatchSplit::plan_among(1 << 20, 2);
        assert!(!shared.due(0, 100));
        // The loop's own count decides: one seat on a fresh thread splits, two do not.
        std::thread::spawn(|| {
            let _one = LoopSeat::take();
            assert!(BatchSplit::plan(SPLIT_INPUT_BYTES, false).due(0, 1));
            assert!(!BatchSplit::plan(SPLIT_INPUT_BYTES, true).due(0, 1), "more input waits: no split");
            let _two = LoopSeat::take();
            assert!(!BatchSplit::plan(SPLIT_INPUT_BYTES, false).due(0, 1));
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn seats_count_the_loops_connections() {
        std::thread::spawn(|| {
            let a = LoopSeat::take();
            let b = LoopSeat::take();
            assert_eq!(per_thread::with(|t| t.pacing.get().connections), 2);
            drop(a);
            assert_eq!(per_thread::with(|t| t.pacing.get().connections), 1);
            drop(b);
            assert_eq!(per_thread::with(|t| t.pacing.get().connections), 0);
        })
        .join()
        .expect("thread");
    }
}
