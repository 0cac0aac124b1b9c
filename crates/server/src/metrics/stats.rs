//! Server-wide counters for `INFO`, `SLOWLOG`, `LATENCY` and `LASTSAVE`.
//!
//! Counters are atomics so that every connection thread updates them without
//! a shared lock on the hot path; what every command adds to (commands run,
//! writes, per-command calls and durations) is kept per thread
//! ([`crate::metrics::stat_lanes`]) and summed when reported. Per-command counters
//! are indexed by command id. Error counts, the slow log and the latency
//! monitor ([`crate::metrics::latency`]) change rarely and use a mutex.
//!
//! The slow log follows `slowlog-log-slower-than` and `slowlog-max-len`,
//! which the command path reads from [`crate::state::ConnectionLimits`]:
//! a call is offered to the log only when it reached the threshold, so
//! the mutex is taken for slow calls alone (for every call when the
//! threshold is 0, which asks for exactly that).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use kvik_protocol::commands::{CommandId, CommandSpec, COMMANDS};

use crate::metrics::instant_metrics::{InstantMetrics, Rates, Totals};
use crate::metrics::latency::LatencyMonitor;

/// Most arguments a slow log entry keeps, as Redis.
const SLOWLOG_MAX_ARGC: usize = 32;
/// Longest argument a slow log entry keeps, as Redis.
const SLOWLOG_MAX_ARGLEN: usize = 128;

/// Refused and failed calls of one command: rare, so shared atomics; the
/// per-call counters (calls, time, durations) are per thread, in
/// [`crate::metrics::stat_lanes`].
#[derive(Debug, Default)]
pub struct CommandStat {
    /// Calls refused before running (arity, authentication).
    pub rejected: AtomicU64,
    /// Calls that ran and replied with an error.
    pub failed: AtomicU64,
}

pub use crate::metrics::stat_lanes::{CallTotals, NetTotals};

/// One command's counters for the reports.
#[derive(Debug, Clone)]
pub struct CommandReport {
    /// Calls, time and durations.
    pub calls: CallTotals,
    /// Calls refused before running.
    pub rejected: u64,
    /// Calls that ran and replied with an error.
    pub failed: u64,
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

/// The slow log: newest entry first, at most `slowlog-max-len` entries.
#[derive(Debug, Default)]
pub struct SlowLog {
    /// Entries, newest first.
    pub entries: VecDeque<SlowEntry>,
    /// The id of the next entry: ids keep counting through `SLOWLOG RESET`
    /// and through entries dropped at once by `slowlog-max-len 0`, as in Redis.
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
    /// Connections refused for `maxclients` or by protected mode.
    pub rejected_connections: AtomicU64,
    /// Error replies sent.
    pub total_error_replies: AtomicU64,
    /// Script runs abandoned and started over because a shard they needed
    /// was held by another transaction (`script_restarts`; kvik's own
    /// field, see docs/scripting.md).
    pub script_restarts: AtomicU64,
    /// Unix time of the last save.
    pub lastsave: AtomicI64,
    /// The change counter at the last save (what `dirty()` counts from).
    pub dirty_at_save: AtomicU64,
    /// Snapshots written since start (`rdb_saves`).
    pub rdb_saves: AtomicU64,
    /// Whether the last background snapshot was written
    /// (`rdb_last_bgsave_status`; a SAVE that works sets it, as in Redis).
    pub last_save_ok: AtomicBool,
    /// Keys the startup load put in the keyspace, and those it dropped as
    /// expired (`rdb_last_load_keys_loaded` / `_expired`).
    pub loaded_keys: AtomicU64,
    /// See [`Stats::loaded_keys`].
    pub loaded_expired: AtomicU64,
    /// Whether the active expiry cycle runs (`DEBUG SET-ACTIVE-EXPIRE`).
    pub active_expire: AtomicBool,
    /// Counters by command id.
    commands: Vec<(&'static str, CommandStat)>,
    /// Commands run, writes, and per-command calls, time and durations, per thread.
    lanes: crate::metrics::stat_lanes::Lanes,
    errors: Mutex<BTreeMap<Vec<u8>, u64>>,
    slowlog: Mutex<SlowLog>,
    latency: Mutex<LatencyMonitor>,
    /// Sampled rates for `INFO`'s instantaneous fields.
    instant: Mutex<InstantMetrics>,
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
            rejected_connections: AtomicU64::new(0),
            total_error_replies: AtomicU64::new(0),
            script_restarts: AtomicU64::new(0),
            lastsave: AtomicI64::new(started_unix),
            dirty_at_save: AtomicU64::new(0),
            rdb_saves: AtomicU64::new(0),
            last_save_ok: AtomicBool::new(true),
            loaded_keys: AtomicU64::new(0),
            loaded_expired: AtomicU64::new(0),
            active_expire: AtomicBool::new(true),
            commands,
            lanes: crate::metrics::stat_lanes::Lanes::default(),
            errors: Mutex::new(BTreeMap::new()),
            slowlog: Mutex::new(SlowLog::default()),
            latency: Mutex::new(LatencyMonitor::default()),
            instant: Mutex::new(InstantMetrics::new(0)),
        }
    }
}

impl Stats {
    /// The counters of the command with this id.
    pub fn command(&self, id: CommandId) -> Option<&CommandStat> {
        self.commands.get(id.index()).map(|(_, s)| s)
    }

    /// Every command's counters, in table order.
    pub fn commands(&self) -> impl Iterator<Item = (&'static str, CommandReport)> + '_ {
        let calls = self.lanes.all();
        self.commands.iter().zip(calls).map(|((n, s), calls)| {
            let rejected = s.rejected.load(Ordering::Relaxed);
            (*n, CommandReport { calls, rejected, failed: s.failed.load(Ordering::Relaxed) })
        })
    }

    /// Calls, time and durations of the command with this id.
    pub fn calls(&self, id: CommandId) -> CallTotals {
        self.lanes.command(id)
    }

    /// Count one completed call of `id` that took `usec` on this thread and
    /// made `changes` changes (`rdb_changes_since_last_save`); its duration
    /// goes into the command's histogram when `track` (`latency-tracking`).
    #[inline]
    pub fn record_call(&self, id: CommandId, usec: u64, changes: u64, track: bool) {
        self.lanes.record(id, usec, changes, track);
    }

    /// Count changes made outside a command call (a blocked client served).
    pub fn record_changes(&self, changes: u64) {
        self.lanes.record_changes(changes);
    }

    /// Commands run (`total_commands_processed`).
    pub fn total_commands(&self) -> u64 {
        self.lanes.total_commands()
    }

    /// Changes since the last save (or since start).
    pub fn dirty(&self) -> u64 {
        self.lanes.dirty().saturating_sub(self.dirty_at_save.load(Ordering::Relaxed))
    }

    /// The change counter since start, whatever was saved.
    pub fn dirty_total(&self) -> u64 {
        self.lanes.dirty()
    }

    /// Count one read from a client's socket that returned `bytes` (0 at
    /// the end of its input).
    #[inline]
    pub fn record_read(&self, bytes: usize) {
        self.lanes.record_read(bytes);
    }

    /// Count one write to a client's socket that sent `bytes`.
    #[inline]
    pub fn record_write(&self, bytes: usize) {
        self.lanes.record_write(bytes);
    }

    /// Client socket reads and writes since start or the last reset.
    pub fn net(&self) -> NetTotals {
        self.lanes.net()
    }

    /// Milliseconds since the server started, for the rates' samples.
    fn uptime_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Take one sample of the commands and client traffic so far, for the
    /// instantaneous rates (every [`crate::metrics::instant_metrics::PERIOD`]).
    pub fn sample_rates(&self) {
        let net = self.net();
        let totals =
            Totals { commands: self.total_commands(), input_bytes: net.input_bytes, output_bytes: net.output_bytes };
        let now_ms = self.uptime_ms();
        self.instant.lock().unwrap_or_else(|e| e.into_inner()).sample(now_ms, totals);
    }

    /// The instantaneous rates: means of the last samples.
    pub fn rates(&self) -> Rates {
        self.instant.lock().unwrap_or_else(|e| e.into_inner()).rates()
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
            s.rejected.store(0, Ordering::Relaxed);
            s.failed.store(0, Ordering::Relaxed);
        }
        self.lanes.reset();
        self.errors.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.total_error_replies.store(0, Ordering::Relaxed);
        self.total_connections.store(0, Ordering::Relaxed);
        self.rejected_connections.store(0, Ordering::Relaxed);
        *self.instant.lock().unwrap_or_else(|e| e.into_inner()) = InstantMetrics::new(self.uptime_ms());
    }

    /// The slow log.
    pub fn slowlog(&self) -> MutexGuard<'_, SlowLog> {
        self.slowlog.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Add a call that took `usec` to the slow log, keeping the newest
    /// `max_len` entries: the caller has checked it against
    /// `slowlog-log-slower-than`. With `max_len` 0 the entry is dropped at
    /// once but its id is spent, as in Redis.
    pub fn log_slow(
        &self,
        usec: u64,
        args: &mut dyn Iterator<Item = &[u8]>,
        argc: usize,
        addr: &str,
        name: &[u8],
        max_len: usize,
    ) {
        if max_len == 0 {
            let mut log = self.slowlog();
            log.next_id += 1;
            log.entries.clear();
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
        log.entries.truncate(max_len);
    }

    /// Drop the oldest entries beyond `max_len`. Redis trims after every
    /// command it offers the log while the log is on, so a lowered
    /// `slowlog-max-len` takes effect at the end of the `CONFIG SET`; kvik
    /// trims then ([`crate::state::ServerState::update_config`]), which
    /// leaves the command path without the lock.
    pub fn trim_slowlog(&self, max_len: usize) {
        let mut log = self.slowlog();
        if log.entries.len() > max_len {
            log.entries.truncate(max_len);
        }
    }

    /// The latency monitor's events.
    pub fn latency(&self) -> MutexGuard<'_, LatencyMonitor> {
        self.latency.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record that `event` took `latency_ms` now: the caller has checked it
    /// against `latency-monitor-threshold`.
    pub fn record_latency(&self, event: &'static str, latency_ms: u64) {
        let now = unix_micros() / 1_000_000;
        self.latency().add(event, latency_ms, now);
    }
}
