//! Per-thread command and network counters: what every command adds to
//! `INFO`'s `total_commands_processed`, `rdb_changes_since_last_save`,
//! commandstats and `LATENCY HISTOGRAM`, and what every socket read and
//! write adds to `total_net_input_bytes`, `total_net_output_bytes`,
//! `total_reads_processed` and `total_writes_processed`, kept apart for each
//! thread that serves clients.
//!
//! With one set of counters for the whole server, each command made about
//! five atomic read-modify-writes on cache lines that every event-loop thread
//! writes, so the lines moved between cores with every command. Here each
//! thread adds to its own [`Lane`] with plain loads and stores (it is the
//! lane's only writer), and readers sum the lanes when they report. Lanes
//! live as long as the [`Lanes`] that made them, so the counts of a thread
//! that ended stay counted. A thread past [`MAX_LANES`] shares one last lane
//! through atomic additions, which bounds the memory whatever runs commands.
//!
//! Lanes only grow; `CONFIG RESETSTAT` records the sums at that moment as a
//! baseline that later reports subtract, so a reset never races a thread's
//! own updates.
//!
//! Each command's durations are counted in a [`crate::metrics::histogram`] of
//! [`SLOTS`] slots (about 4 KiB), made in a lane the first time the lane
//! counts a duration of that command: a server that runs a dozen kinds of
//! command holds a dozen histograms per thread, not one for each of the
//! hundreds of commands in the table.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;

use kvik_protocol::commands::{CommandId, COMMAND_COUNT};

use crate::metrics::histogram::{self, SLOTS};
use crate::per_thread;

/// Most lanes of one's own; further threads share the last one.
pub const MAX_LANES: usize = 64;

/// One command's counters in one lane.
#[derive(Debug, Default)]
struct LaneStat {
    calls: AtomicU64,
    usec: AtomicU64,
    /// Durations by [`histogram::slot`], made on the first one counted.
    histogram: OnceLock<Box<[AtomicU64]>>,
}

impl LaneStat {
    /// The histogram, made now if this is its first duration.
    #[inline]
    fn histogram(&self) -> &[AtomicU64] {
        match self.histogram.get() {
            Some(h) => h,
            None => self.new_histogram(),
        }
    }

    #[cold]
    #[inline(never)]
    fn new_histogram(&self) -> &[AtomicU64] {
        self.histogram.get_or_init(|| (0..SLOTS).map(|_| AtomicU64::new(0)).collect())
    }
}

/// The counters one thread adds to.
#[derive(Debug)]
struct Lane {
    /// Whether several threads add to this lane (then with atomic additions).
    shared: bool,
    total_commands: AtomicU64,
    dirty: AtomicU64,
    commands: Box<[LaneStat]>,
    reads: AtomicU64,
    writes: AtomicU64,
    input_bytes: AtomicU64,
    output_bytes: AtomicU64,
}

impl Lane {
    fn new(shared: bool) -> Lane {
        Lane {
            shared,
            total_commands: AtomicU64::new(0),
            dirty: AtomicU64::new(0),
            commands: (0..COMMAND_COUNT).map(|_| LaneStat::default()).collect(),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            input_bytes: AtomicU64::new(0),
            output_bytes: AtomicU64::new(0),
        }
    }

    /// Add `n` to `counter`: a plain load and store when this thread is
    /// the lane's only writer.
    #[inline]
    fn add(&self, counter: &AtomicU64, n: u64) {
        if self.shared {
            counter.fetch_add(n, Ordering::Relaxed);
        } else {
            counter.store(counter.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
        }
    }

    /// Count one call of `cmd` (see [`Lanes::record`]).
    #[inline(always)]
    fn record(&self, cmd: CommandId, usec: u64, changes: u64, track: bool) {
        self.add(&self.total_commands, 1);
        if changes != 0 {
            self.add(&self.dirty, changes);
        }
        if let Some(stat) = self.commands.get(cmd.index()) {
            self.add(&stat.calls, 1);
            self.add(&stat.usec, usec);
            if track {
                if let Some(h) = stat.histogram().get(histogram::slot(usec)) {
                    self.add(h, 1);
                }
            }
        }
    }
}

/// One command's counts, summed over the lanes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallTotals {
    /// Completed calls.
    pub calls: u64,
    /// Total microseconds spent in them.
    pub usec: u64,
    /// Calls by duration, one count per [`histogram`] slot; empty when no
    /// duration was counted (`latency-tracking no` counts calls without).
    pub histogram: Vec<u64>,
}

impl CallTotals {
    /// Calls whose duration was counted (what `LATENCY HISTOGRAM` calls
    /// `calls`, as Redis reports its histogram's count).
    pub fn tracked(&self) -> u64 {
        histogram::total(&self.histogram)
    }

    /// `(bound in µs, calls up to it)` at every power of two of
    /// microseconds where the running total grows, as `LATENCY HISTOGRAM`
    /// lists them.
    pub fn cumulative(&self) -> Vec<(u64, u64)> {
        histogram::cumulative_powers_of_two(&self.histogram)
    }

    /// The duration at `p` percent of the counted calls, in microseconds
    /// (see [`histogram::percentile`]).
    pub fn percentile(&self, p: f64) -> u64 {
        histogram::percentile(&self.histogram, p)
    }

    fn minus(mut self, base: &CallTotals) -> CallTotals {
        self.calls = self.calls.saturating_sub(base.calls);
        self.usec = self.usec.saturating_sub(base.usec);
        for (h, b) in self.histogram.iter_mut().zip(base.histogram.iter()) {
            *h = h.saturating_sub(*b);
        }
        if self.histogram.iter().all(|&n| n == 0) {
            self.histogram = Vec::new();
        }
        self
    }
}

/// Socket reads and writes of client connections, summed over the lanes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetTotals {
    /// Reads that returned input or the end of it (`total_reads_processed`).
    pub reads: u64,
    /// Writes that sent bytes (`total_writes_processed`).
    pub writes: u64,
    /// Bytes read (`total_net_input_bytes`).
    pub input_bytes: u64,
    /// Bytes written (`total_net_output_bytes`).
    pub output_bytes: u64,
}

impl NetTotals {
    fn minus(self, base: &NetTotals) -> NetTotals {
        NetTotals {
            reads: self.reads.saturating_sub(base.reads),
            writes: self.writes.saturating_sub(base.writes),
            input_bytes: self.input_bytes.saturating_sub(base.input_bytes),
            output_bytes: self.output_bytes.saturating_sub(base.output_bytes),
        }
    }
}

/// What `CONFIG RESETSTAT` saw, subtracted from later reports.
#[derive(Debug)]
struct Baseline {
    total_commands: u64,
    commands: Box<[CallTotals]>,
    net: NetTotals,
}

static NEXT_LANES_ID: AtomicU64 = AtomicU64::new(1);

/// Every lane of one server.
#[derive(Debug)]
pub struct Lanes {
    id: u64,
    /// [`MAX_LANES`] places, filled as threads first count; the last is shared.
    lanes: Box<[OnceLock<Lane>]>,
    /// The thread owning each filled place but the shared one.
    owners: Mutex<Vec<ThreadId>>,
    baseline: Mutex<Baseline>,
}

impl Default for Lanes {
    fn default() -> Self {
        Lanes {
            id: NEXT_LANES_ID.fetch_add(1, Ordering::Relaxed),
            lanes: (0..MAX_LANES).map(|_| OnceLock::new()).collect(),
            owners: Mutex::new(Vec::new()),
            baseline: Mutex::new(Baseline {
                total_commands: 0,
                commands: vec![CallTotals::default(); COMMAND_COUNT].into_boxed_slice(),
                net: NetTotals::default(),
            }),
        }
    }
}

impl Lanes {
    /// Run `f` on this thread's lane, registering it on first use.
    ///
    /// Every command and socket operation counts through here, so the
    /// lane-known path is inlined and the first use kept apart.
    #[inline(always)]
    fn with_mine<R>(&self, f: impl FnOnce(&Lane) -> R) -> R {
        let (id, index) = per_thread::with(|t| t.stat_lane.get());
        if id == self.id {
            if let Some(lane) = self.lanes.get(index).and_then(OnceLock::get) {
                return f(lane);
            }
        }
        self.with_new(f)
    }

    /// [`Lanes::with_mine`] on this thread's first use of these lanes.
    #[cold]
    #[inline(never)]
    fn with_new<R>(&self, f: impl FnOnce(&Lane) -> R) -> R {
        let index = self.register();
        per_thread::with(|t| t.stat_lane.set((self.id, index)));
        match self.lanes.get(index).and_then(OnceLock::get) {
            Some(lane) => f(lane),
            None => f(&Lane::new(true)),
        }
    }

    /// The place of this thread's lane: found again, made, or the shared
    /// one past [`MAX_LANES`].
    fn register(&self) -> usize {
        let me = std::thread::current().id();
        let mut owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        let index = match owners.iter().position(|t| *t == me) {
            Some(i) => i,
            None if owners.len() + 1 < MAX_LANES => {
                owners.push(me);
                owners.len() - 1
            }
            None => MAX_LANES - 1,
        };
        if let Some(place) = self.lanes.get(index) {
            place.get_or_init(|| Lane::new(index == MAX_LANES - 1));
        }
        index
    }

    /// Every lane made so far.
    fn made(&self) -> impl Iterator<Item = &Lane> {
        self.lanes.iter().filter_map(OnceLock::get)
    }

    /// Count one completed call of `cmd` that took `usec` and made
    /// `changes` changes (`rdb_changes_since_last_save`), and its duration
    /// in the command's histogram when `track`.
    ///
    /// Runs after every command: the counting is inlined into the caller
    /// on the path where this thread's lane is known, and only the first
    /// call of a thread goes through the closure of [`Lanes::with_mine`]
    /// (a closure called from both paths was kept out of line, a call and
    /// its spills on every command).
    #[inline(always)]
    pub fn record(&self, cmd: CommandId, usec: u64, changes: u64, track: bool) {
        match self.known_lane() {
            Some(lane) => lane.record(cmd, usec, changes, track),
            None => self.with_new(|lane| lane.record(cmd, usec, changes, track)),
        }
    }

    /// This thread's lane, when it has been registered.
    #[inline(always)]
    fn known_lane(&self) -> Option<&Lane> {
        let (id, index) = per_thread::with(|t| t.stat_lane.get());
        if id == self.id {
            return self.lanes.get(index).and_then(OnceLock::get);
        }
        None
    }

    /// Count changes made outside a command call.
    pub fn record_changes(&self, changes: u64) {
        if changes != 0 {
            self.with_mine(|lane| lane.add(&lane.dirty, changes));
        }
    }

    /// Count one socket read of `bytes` (0: the end of the input).
    #[inline]
    pub fn record_read(&self, bytes: usize) {
        self.with_mine(|lane| {
            lane.add(&lane.reads, 1);
            lane.add(&lane.input_bytes, bytes as u64);
        });
    }

    /// Count one socket write of `bytes`.
    #[inline]
    pub fn record_write(&self, bytes: usize) {
        self.with_mine(|lane| {
            lane.add(&lane.writes, 1);
            lane.add(&lane.output_bytes, bytes as u64);
        });
    }

    /// Client reads and writes since start, not minding resets.
    fn raw_net(&self) -> NetTotals {
        let load = |f: fn(&Lane) -> &AtomicU64| self.sum(|l| f(l).load(Ordering::Relaxed));
        NetTotals {
            reads: load(|l| &l.reads),
            writes: load(|l| &l.writes),
            input_bytes: load(|l| &l.input_bytes),
            output_bytes: load(|l| &l.output_bytes),
        }
    }

    /// Client reads and writes since start or the last reset.
    pub fn net(&self) -> NetTotals {
        let raw = self.raw_net();
        raw.minus(&self.baseline.lock().unwrap_or_else(|e| e.into_inner()).net)
    }

    /// Sum `f` over every lane.
    fn sum(&self, f: impl Fn(&Lane) -> u64) -> u64 {
        self.made().map(f).fold(0, u64::wrapping_add)
    }

    /// Commands run since start or the last reset.
    pub fn total_commands(&self) -> u64 {
        let now = self.sum(|l| l.total_commands.load(Ordering::Relaxed));
        let base = self.baseline.lock().unwrap_or_else(|e| e.into_inner()).total_commands;
        now.saturating_sub(base)
    }

    /// Writes since start (a reset leaves them).
    pub fn dirty(&self) -> u64 {
        self.sum(|l| l.dirty.load(Ordering::Relaxed))
    }

    /// The counts of `cmd` since start, not minding resets.
    fn raw(&self, cmd: usize) -> CallTotals {
        let mut t = CallTotals::default();
        for lane in self.made() {
            let Some(s) = lane.commands.get(cmd) else { continue };
            t.calls = t.calls.wrapping_add(s.calls.load(Ordering::Relaxed));
            t.usec = t.usec.wrapping_add(s.usec.load(Ordering::Relaxed));
            if let Some(h) = s.histogram.get() {
                if t.histogram.is_empty() {
                    t.histogram = vec![0; SLOTS];
                }
                for (sum, n) in t.histogram.iter_mut().zip(h.iter()) {
                    *sum = sum.wrapping_add(n.load(Ordering::Relaxed));
                }
            }
        }
        t
    }

    /// The counts of `cmd` since start or the last reset.
    pub fn command(&self, cmd: CommandId) -> CallTotals {
        let raw = self.raw(cmd.index());
        let baseline = self.baseline.lock().unwrap_or_else(|e| e.into_inner());
        match baseline.commands.get(cmd.index()) {
            Some(b) => raw.minus(b),
            None => raw,
        }
    }

    /// Every command's counts since start or the last reset, by command index.
    pub fn all(&self) -> Vec<CallTotals> {
        let baseline = self.baseline.lock().unwrap_or_else(|e| e.into_inner());
        (0..COMMAND_COUNT)
            .map(|i| {
                let raw = self.raw(i);
                match baseline.commands.get(i) {
                    Some(b) => raw.minus(b),
                    None => raw,
                }
            })
            .collect()
    }

    /// Start the command counts and `total_commands` from zero (`CONFIG RESETSTAT`).
    pub fn reset(&self) {
        let commands: Box<[CallTotals]> = (0..COMMAND_COUNT).map(|i| self.raw(i)).collect();
        let total_commands = self.sum(|l| l.total_commands.load(Ordering::Relaxed));
        let net = self.raw_net();
        *self.baseline.lock().unwrap_or_else(|e| e.into_inner()) = Baseline { total_commands, commands, net };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvik_protocol::commands::id;
    use std::sync::Arc;

    #[test]
    fn threads_add_to_their_own_lanes_and_reports_sum_them() {
        let lanes = Arc::new(Lanes::default());
        lanes.record(id::GET, 3, 0, true);
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let lanes = Arc::clone(&lanes);
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        lanes.record(id::SET, 1, 1, true);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("worker");
        }
        assert_eq!(lanes.total_commands(), 3001);
        assert_eq!(lanes.dirty(), 3000);
        let set = lanes.command(id::SET);
        assert_eq!((set.calls, set.usec), (3000, 3000));
        assert_eq!(set.cumulative(), vec![(1, 3000)]);
        let get = lanes.command(id::GET);
        assert_eq!((get.calls, get.usec, get.cumulative()), (1, 3, vec![(4, 1)]));
        assert_eq!(lanes.made().count(), 4, "one lane per thread");
    }

    #[test]
    fn reset_starts_counts_from_zero_but_keeps_dirty() {
        let lanes = Lanes::default();
        lanes.record(id::SET, 5, 1, true);
        lanes.reset();
        assert_eq!(lanes.total_commands(), 0);
        assert_eq!(lanes.command(id::SET), CallTotals::default());
        assert_eq!(lanes.dirty(), 1);
        lanes.record(id::SET, 1000, 1, true);
        let set = lanes.command(id::SET);
        assert_eq!((set.calls, set.usec, set.cumulative()), (1, 1000, vec![(1024, 1)]));
        assert_eq!(lanes.total_commands(), 1);
        assert_eq!(lanes.all()[id::SET.index()], set);
    }

    #[test]
    fn durations_are_counted_only_while_tracked() {
        let lanes = Lanes::default();
        lanes.record(id::GET, 10, 0, false);
        let get = lanes.command(id::GET);
        assert_eq!((get.calls, get.tracked(), get.histogram.len()), (1, 0, 0), "no histogram made");
        lanes.record(id::GET, 10, 0, true);
        lanes.record(id::GET, 3000, 0, true);
        let get = lanes.command(id::GET);
        assert_eq!((get.calls, get.tracked()), (3, 2));
        assert_eq!((get.percentile(50.0), get.percentile(99.0)), (10, 3072));
        lanes.reset();
        assert_eq!(lanes.command(id::GET), CallTotals::default());
    }

    #[test]
    fn reads_and_writes_add_up_across_threads_and_reset() {
        let lanes = Arc::new(Lanes::default());
        lanes.record_read(100);
        let worker = {
            let lanes = Arc::clone(&lanes);
            std::thread::spawn(move || {
                lanes.record_read(0);
                lanes.record_write(7);
                lanes.record_write(5);
            })
        };
        worker.join().expect("worker");
        assert_eq!(lanes.net(), NetTotals { reads: 2, writes: 2, input_bytes: 100, output_bytes: 12 });
        lanes.reset();
        assert_eq!(lanes.net(), NetTotals::default());
        lanes.record_write(3);
        assert_eq!(lanes.net(), NetTotals { writes: 1, output_bytes: 3, ..NetTotals::default() });
    }

    #[test]
    fn threads_past_the_limit_share_one_lane() {
        let lanes = Arc::new(Lanes::default());
        let workers: Vec<_> = (0..MAX_LANES + 5)
            .map(|_| {
                let lanes = Arc::clone(&lanes);
                std::thread::spawn(move || lanes.record(id::PING, 1, 0, true))
            })
            .collect();
        for w in workers {
            w.join().expect("worker");
        }
        assert_eq!(lanes.total_commands(), (MAX_LANES + 5) as u64);
        assert_eq!(lanes.made().count(), MAX_LANES);
    }

    #[test]
    fn two_servers_on_one_thread_keep_their_own_counts() {
        let (a, b) = (Lanes::default(), Lanes::default());
        a.record(id::GET, 1, 0, true);
        b.record(id::GET, 1, 0, true);
        a.record(id::GET, 1, 0, true);
        assert_eq!((a.total_commands(), b.total_commands()), (2, 1));
    }
}
