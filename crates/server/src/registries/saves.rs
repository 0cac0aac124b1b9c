//! Background saves as the server shares them: the save begun and waiting
//! for the persistence thread, whether one runs or is to stop, and what
//! `INFO persistence` reports of them. The work itself is
//! [`crate::persistence::background`]'s; this registry imports nothing of
//! the server's state, which holds it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use kvik_persist::rdb::file::SaveInfo;

use crate::keyspace::evict::Policy;

/// Why a background save did not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// One runs already.
    InProgress,
    /// The persistence thread is not running (the server is stopping).
    NotRunning,
}

/// The settings a save reads when it starts.
#[derive(Debug, Clone, Copy)]
pub struct SaveSettings {
    /// `rdbcompression`.
    pub compress: bool,
    /// `rdbchecksum`.
    pub checksum: bool,
    /// `rdb-save-incremental-fsync` (`aof-rewrite-incremental-fsync` for
    /// a rewritten append-only file's base).
    pub incremental_sync: bool,
}

/// What a background snapshot is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// `BGSAVE`, the save points: `dir`/`dbfilename`.
    Snapshot,
    /// The base of a rewritten append-only file (`BGREWRITEAOF`).
    AofBase,
    /// A snapshot for replicas to load, written where `BGSAVE` writes
    /// (as Redis's disk-based sync does) and counted as a save.
    Replication,
    /// A snapshot streamed to replicas' connections as it is made
    /// (`repl-diskless-sync`): no file.
    ReplicaSockets,
}

/// A piece of a snapshot streamed to a replica's connection.
#[derive(Debug, Clone)]
pub enum Piece {
    /// The next bytes, shared by every replica of the snapshot.
    Bytes(std::sync::Arc<[u8]>),
    /// The snapshot is whole, or why it is not.
    End(Result<(), String>),
}

/// Where a replica's connection takes its pieces from: a bounded channel,
/// so that the snapshot goes no faster than its slowest replica takes it.
pub type PieceSender = tokio::sync::mpsc::Sender<Piece>;

/// A background save begun and waiting for the thread, or being written.
#[derive(Debug)]
pub struct Job {
    pub(crate) purpose: Purpose,
    pub(crate) path: PathBuf,
    pub(crate) temp: PathBuf,
    pub(crate) info: SaveInfo,
    pub(crate) settings: SaveSettings,
    pub(crate) policy: Policy,
    /// The moment: keys past their deadline then are left out.
    pub(crate) at_ms: i64,
    /// The change counter at the moment.
    pub(crate) dirty: u64,
    /// Keys and keys with a deadline per database, at the moment.
    pub(crate) sizes: Vec<(usize, usize)>,
    /// The function libraries' code, at the moment.
    pub(crate) functions: Vec<std::sync::Arc<[u8]>>,
    /// [`Purpose::ReplicaSockets`]: the replicas' channels.
    pub(crate) sinks: Vec<PieceSender>,
}

/// The state of background saving, for the commands and `INFO`.
#[derive(Debug)]
pub struct Background {
    pub(crate) job: Mutex<Option<Job>>,
    pub(crate) wake: Condvar,
    /// The persistence thread runs.
    pub(crate) thread_running: AtomicBool,
    /// A save is begun and not finished (`rdb_bgsave_in_progress`).
    pub(crate) in_progress: AtomicBool,
    /// The save in progress is to stop writing (`FLUSHALL`, `SHUTDOWN`).
    pub(crate) abort: AtomicBool,
    /// `BGSAVE` inside a transaction: start one as soon as possible.
    pub(crate) scheduled: AtomicBool,
    /// When the save in progress began.
    pub(crate) started: Mutex<Option<Instant>>,
    /// Unix seconds of the last attempt to start one.
    pub(crate) last_try_unix: AtomicI64,
    /// Seconds the last one took (`rdb_last_bgsave_time_sec`; -1: none yet).
    pub(crate) last_secs: AtomicI64,
    /// Bytes copied or set aside for the last one (`rdb_last_cow_size`).
    pub(crate) last_copied: AtomicU64,
    /// … for the one in progress (`current_cow_size`).
    pub(crate) copied: AtomicU64,
    /// Keys written by the one in progress, and keys it holds.
    pub(crate) keys_done: AtomicU64,
    pub(crate) keys_total: AtomicU64,
}

impl Default for Background {
    fn default() -> Self {
        Background {
            job: Mutex::new(None),
            wake: Condvar::new(),
            thread_running: AtomicBool::new(false),
            in_progress: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            scheduled: AtomicBool::new(false),
            started: Mutex::new(None),
            last_try_unix: AtomicI64::new(0),
            last_secs: AtomicI64::new(-1),
            last_copied: AtomicU64::new(0),
            copied: AtomicU64::new(0),
            keys_done: AtomicU64::new(0),
            keys_total: AtomicU64::new(0),
        }
    }
}

/// What `INFO persistence` reports of background saving.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub in_progress: bool,
    /// Seconds the one in progress has run, -1 when none runs.
    pub current_secs: i64,
    pub last_secs: i64,
    pub last_copied: u64,
    pub copied: u64,
    pub keys_done: u64,
    pub keys_total: u64,
}

impl Background {
    /// True while a background save runs.
    pub fn in_progress(&self) -> bool {
        self.in_progress.load(Ordering::Acquire)
    }

    /// Ask for a save as soon as none runs (`BGSAVE` inside `MULTI`).
    pub fn schedule(&self) {
        self.scheduled.store(true, Ordering::Relaxed);
    }

    /// Stop the save in progress, if any, from writing its file.
    pub fn abort(&self) {
        if self.in_progress() {
            self.abort.store(true, Ordering::Relaxed);
            self.wake.notify_all();
        }
    }

    /// The figures `INFO persistence` reports.
    pub fn progress(&self) -> Progress {
        let started = *self.started.lock().unwrap_or_else(|p| p.into_inner());
        Progress {
            in_progress: self.in_progress(),
            current_secs: started.map_or(-1, |t| i64::try_from(t.elapsed().as_secs()).unwrap_or(i64::MAX)),
            last_secs: self.last_secs.load(Ordering::Relaxed),
            last_copied: self.last_copied.load(Ordering::Relaxed),
            copied: self.copied.load(Ordering::Relaxed),
            keys_done: self.keys_done.load(Ordering::Relaxed),
            keys_total: self.keys_total.load(Ordering::Relaxed),
        }
    }

    /// The temporary file a background save writes.
    pub(crate) fn temp_path(dir: &Path) -> PathBuf {
        dir.join(format!("temp-bgsave-{}.rdb", std::process::id()))
    }
}
