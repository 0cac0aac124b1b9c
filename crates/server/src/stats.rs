//! Server-wide counters for `INFO`, `SLOWLOG` and `LASTSAVE`.
//!
//! Counters are atomics so that every connection thread updates them without
//! a shared lock on the hot path; per-command counters live in a flat array
//! with one slot per command and subcommand of the table, found by name once
//! per call. Error counts and the slow log change rarely and use a mutex.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use kvik_protocol::commands::{CommandId, CommandSpec, COMMANDS};

/// Redis's default `slowlog-log-slower-than`, in microseconds.
pub const SLOWLOG_SLOWER_THAN_US: u64 = 10_000;
/// Redis's default `slowlog-max-len`.
pub const SLOWLOG_MAX_LEN: usize = 128;
/// Most arguments a slow log entry keeps, as Redis.
const SLOWLOG_MAX_ARGC: usize = 32;
/// Longest argument a slow log entry keeps, as Redis.
const SLOWLOG_MAX_ARGLEN: usize = 128;

/// Calls, time and failures of one command.
#[derive(Debug, Default)]
pub struct CommandStat {
    /// Completed calls.
    pub calls: AtomicU64,
    /// Total microseconds spent in them.
    pub usec: AtomicU64,
    /// Calls refused before running (arity, authentication).
    pub rejected: AtomicU64,
    /// Calls that ran and replied with an error.
    pub failed: AtomicU64,
    /// Calls by duration: slot `k` counts calls of at most `2^k` microseconds
    /// (and more than half that), for `LATENCY HISTOGRAM`.
    pub histogram: [AtomicU64; HISTOGRAM_SLOTS],
}

/// Power-of-two duration slots per command: 1 µs up to about 18 minutes.
pub const HISTOGRAM_SLOTS: usize = 31;

impl CommandStat {
    /// Count one completed call that took `usec`.
    pub fn record(&self, usec: u64) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.usec.fetch_add(usec, Ordering::Relaxed);
        let slot = (usec.max(1).next_power_of_two().trailing_zeros() as usize).min(HISTOGRAM_SLOTS - 1);
        if let Some(h) = self.histogram.get(slot) {
            h.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `(bucket upper bound in µs, calls up to it)` for every bucket where the
    /// running total grows, as `LATENCY HISTOGRAM` lists them.
    pub fn cumulative(&self) -> Vec<(u64, u64)> {
        let mut total = 0;
        let mut out = Vec::new();
        for (k, h) in self.histogram.iter().enumerate() {
            let n = h.load(Ordering::Relaxed);
            if n > 0 {
                total += n;
                out.push((1u64 << k, total));
            }
        }
        out
    }
}

/// One slow log entry.
#[derive(Debug, Clone)]
pub struct SlowEntry {
    /// Increasing id.
    pub id: u64,
    /// Unix time of the call, in seconds.
    pub time: i64,
    /// Duration in microseconds.
    pub usec: u64,
    /// The arguments, shortened as Redis shortens them.
    pub args: Vec<Vec<u8>>,
    /// Client address.
    pub addr: String,
    /// Client name (empty when unnamed).
    pub name: Vec<u8>,
}

/// The slow log: newest entry first, bounded.
#[derive(Debug, Default)]
pub struct SlowLog {
    /// Entries, newest first.
    pub entries: VecDeque<SlowEntry>,
    next_id: u64,
}

/// All the server's counters.
#[derive(Debug)]
pub struct Stats {
    /// When the server started.
    pub started: Instant,
    /// Unix time of the start, in seconds (what `LASTSAVE` reports before any save).
    pub started_unix: i64,
    /// Clients connected since start (each RESPB channel counts as one, as it is a client).
    pub total_connections: AtomicU64,
    /// Commands run.
    pub total_commands: AtomicU64,
    /// Error replies sent.
    pub total_error_replies: AtomicU64,
    /// Writes since the last save (kvik does not save yet, so since start).
    pub dirty: AtomicU64,
    /// Unix time of the last save.
    pub lastsave: AtomicI64,
    /// Whether the active expiry cycle runs (`DEBUG SET-ACTIVE-EXPIRE`).
    pub active_expire: AtomicBool,
    /// Counters by command id.
    commands: Vec<(&'static str, CommandStat)>,
    errors: Mutex<BTreeMap<Vec<u8>, u64>>,
    slowlog: Mutex<SlowLog>,
}

/// Unix time now, in microseconds.
pub fn unix_micros() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

fn all_specs(specs: &'static [CommandSpec], out: &mut Vec<&'static CommandSpec>) {
    for s in specs {
        out.push(s);
        all_specs(s.subcommands, out);
    }
}

impl Default for Stats {
    fn default() -> Self {
        let mut specs = Vec::new();
        all_specs(COMMANDS, &mut specs);
        // Table order is id order, so a command's counters sit at its id.
        let commands: Vec<_> = specs.iter().map(|s| (s.name, CommandStat::default())).collect();
        let started_unix = unix_micros() / 1_000_000;
        Stats {
            started: Instant::now(),
            started_unix,
            total_connections: AtomicU64::new(0),
            total_commands: AtomicU64::new(0),
            total_error_replies: AtomicU64::new(0),
            dirty: AtomicU64::new(0),
            lastsave: AtomicI64::new(started_unix),
            active_expire: AtomicBool::new(true),
            commands,
            errors: Mutex::new(BTreeMap::new()),
            slowlog: Mutex::new(SlowLog::default()),
        }
    }
}

impl Stats {
    /// The counters of the command with this id.
    pub fn command(&self, id: CommandId) -> Option<&CommandStat> {
        self.commands.get(id.index()).map(|(_, s)| s)
    }

    /// Every command's counters, in table order.
    pub fn commands(&self) -> impl Iterator<Item = (&'static str, &CommandStat)> {
        self.commands.iter().map(|(n, s)| (*n, s))
    }

    /// Count an error reply; its code is the text up to the first space.
    pub fn error_reply(&self, msg: &[u8]) {
        self.total_error_replies.fetch_add(1, Ordering::Relaxed);
        let code = msg.split(|&b| b == b' ').next().unwrap_or(msg);
        let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        // Redis stops adding new codes after 128 kinds, so odd errors cannot grow the table.
        if errors.len() < 128 || errors.contains_key(code) {
            *errors.entry(code.to_vec()).or_insert(0) += 1;
        }
    }

    /// Error counts by code, in code order.
    pub fn errors(&self) -> Vec<(Vec<u8>, u64)> {
        let errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        errors.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    /// Forget per-command and error counts (`CONFIG RESETSTAT`).
    pub fn reset(&self) {
        for (_, s) in &self.commands {
            s.calls.store(0, Ordering::Relaxed);
            s.usec.store(0, Ordering::Relaxed);
            s.rejected.store(0, Ordering::Relaxed);
            s.failed.store(0, Ordering::Relaxed);
            s.histogram.iter().for_each(|h| h.store(0, Ordering::Relaxed));
        }
        self.errors.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.total_error_replies.store(0, Ordering::Relaxed);
        self.total_commands.store(0, Ordering::Relaxed);
        self.total_connections.store(0, Ordering::Relaxed);
    }

    /// The slow log.
    pub fn slowlog(&self) -> MutexGuard<'_, SlowLog> {
        self.slowlog.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record a call that took `usec`, if it was slow enough.
    pub fn maybe_slow(&self, usec: u64, args: &mut dyn Iterator<Item = &[u8]>, argc: usize, addr: &str, name: &[u8]) {
        if usec < SLOWLOG_SLOWER_THAN_US {
            return;
        }
        let mut kept = Vec::new();
        let shown = argc.min(SLOWLOG_MAX_ARGC);
        for (i, a) in args.take(shown).enumerate() {
            if i == shown - 1 && shown < argc {
                kept.push(format!("... ({} more arguments)", argc - shown + 1).into_bytes());
                break;
            }
            if a.len() > SLOWLOG_MAX_ARGLEN {
                let mut v = a[..SLOWLOG_MAX_ARGLEN].to_vec();
                v.extend_from_slice(format!("... ({} more bytes)", a.len() - SLOWLOG_MAX_ARGLEN).as_bytes());
                kept.push(v);
            } else {
                kept.push(a.to_vec());
            }
        }
        let mut log = self.slowlog();
        let id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(SlowEntry {
            id,
            time: unix_micros() / 1_000_000,
            usec,
            args: kept,
            addr: addr.to_string(),
            name: name.to_vec(),
        });
        log.entries.truncate(SLOWLOG_MAX_LEN);
    }
}
