//! The append-only file as the server shares it: whether it is on, the
//! fsync policy the writer follows, the writer thread, the files it writes
//! and what `INFO persistence` reports of them. The work is
//! [`crate::persistence::aof`]'s; this registry imports nothing of the
//! server's state, which holds it.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Instant;

use kvik_persist::aof::manifest::Manifest;

/// `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Fsync {
    /// Every write is on disk before its reply.
    Always = 0,
    /// The file is flushed to disk once a second.
    Everysec = 1,
    /// The kernel flushes when it likes.
    No = 2,
}

impl Fsync {
    /// The policy a configuration value names (the value is checked by
    /// the configuration).
    pub fn parse(value: &str) -> Fsync {
        match value {
            "always" => Fsync::Always,
            "no" => Fsync::No,
            _ => Fsync::Everysec,
        }
    }

    fn from_u8(v: u8) -> Fsync {
        match v {
            0 => Fsync::Always,
            2 => Fsync::No,
            _ => Fsync::Everysec,
        }
    }
}

/// The files of the append-only file.
#[derive(Debug)]
pub struct Files {
    /// `dir`/`appenddirname`.
    pub dir: PathBuf,
    /// `appendfilename`, the stem of every name.
    pub name: String,
    /// The manifest as it is on disk.
    pub manifest: Manifest,
}

/// A new incremental file the writer moves to once it has written every
/// place up to `after_seq` (the moment of a rewrite).
#[derive(Debug)]
pub struct Rotation {
    pub after_seq: u64,
    pub file: File,
    /// The new file holds RESPB frames.
    pub respb: bool,
}

/// The files a rewrite in progress will install.
#[derive(Debug)]
pub struct PendingRewrite {
    /// The new base's sequence number.
    pub base_seq: i64,
    /// The incremental file that follows it.
    pub incr: kvik_persist::aof::manifest::FileInfo,
}

/// Rewrites (`BGREWRITEAOF`), for `INFO persistence`.
#[derive(Debug)]
pub struct Rewrites {
    /// One runs (`aof_rewrite_in_progress`).
    pub(crate) in_progress: AtomicBool,
    /// One is to start once the background save running ends.
    pub(crate) scheduled: AtomicBool,
    pub(crate) started: Mutex<Option<Instant>>,
    /// Seconds the last one took (-1: none yet).
    pub(crate) last_secs: AtomicI64,
    pub(crate) last_ok: AtomicBool,
    pub(crate) done: AtomicU64,
    pub(crate) consecutive_failures: AtomicU64,
    /// What the last one copied for changes while it ran (`aof_last_cow_size`).
    pub(crate) last_copied: AtomicU64,
}

impl Default for Rewrites {
    fn default() -> Self {
        Rewrites {
            in_progress: AtomicBool::new(false),
            scheduled: AtomicBool::new(false),
            started: Mutex::new(None),
            last_secs: AtomicI64::new(-1),
            last_ok: AtomicBool::new(true),
            done: AtomicU64::new(0),
            consecutive_failures: AtomicU64::new(0),
            last_copied: AtomicU64::new(0),
        }
    }
}

/// What `INFO persistence` reports of rewrites.
#[derive(Debug, Clone, Copy)]
pub struct RewriteProgress {
    pub in_progress: bool,
    pub scheduled: bool,
    pub current_secs: i64,
    pub last_secs: i64,
    pub last_ok: bool,
    pub done: u64,
    pub consecutive_failures: u64,
    pub last_copied: u64,
}

impl Rewrites {
    /// Whether one runs.
    pub fn in_progress(&self) -> bool {
        self.in_progress.load(Ordering::Acquire)
    }

    /// The figures `INFO persistence` reports.
    pub fn progress(&self) -> RewriteProgress {
        let started = *self.started.lock().unwrap_or_else(|p| p.into_inner());
        RewriteProgress {
            in_progress: self.in_progress(),
            scheduled: self.scheduled.load(Ordering::Relaxed),
            current_secs: started.map_or(-1, |t| i64::try_from(t.elapsed().as_secs()).unwrap_or(i64::MAX)),
            last_secs: self.last_secs.load(Ordering::Relaxed),
            last_ok: self.last_ok.load(Ordering::Relaxed),
            done: self.done.load(Ordering::Relaxed),
            consecutive_failures: self.consecutive_failures.load(Ordering::Relaxed),
            last_copied: self.last_copied.load(Ordering::Relaxed),
        }
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct AppendOnly {
    /// The writer runs (`aof_enabled`).
    pub(crate) enabled: AtomicBool,
    /// `appendfsync`, read by the writer every round.
    fsync: AtomicU8,
    /// `aof-timestamp-enabled`.
    pub(crate) timestamps: AtomicBool,
    /// `aof-format respb`: new incremental files hold RESPB frames.
    pub(crate) respb: AtomicBool,
    /// The writer is to stop once it has written what was published.
    pub(crate) closing: AtomicBool,
    /// Everything published so far is to be flushed to disk now (a count
    /// of requests; the writer answers by moving the journal's `synced`).
    pub(crate) sync_requests: AtomicU64,
    /// The last write worked (`aof_last_write_status`).
    pub(crate) write_ok: AtomicBool,
    /// Why the last failed write failed, as the system says it.
    pub(crate) last_error: Mutex<String>,
    /// Bytes of the files the manifest names (`aof_current_size`) and of
    /// its base (`aof_base_size`).
    pub(crate) current_size: AtomicU64,
    pub(crate) base_size: AtomicU64,
    /// Flushes to disk that were late (`aof_delayed_fsync`).
    pub(crate) delayed_fsync: AtomicU64,
    /// The writer thread.
    pub(crate) writer: Mutex<Option<JoinHandle<()>>>,
    /// The files, while the append-only file is on.
    pub(crate) files: Mutex<Option<Files>>,
    /// A move to a new incremental file, for the writer to take.
    pub(crate) rotation: Mutex<Option<Rotation>>,
    /// The rewrite in progress.
    pub(crate) pending: Mutex<Option<PendingRewrite>>,
    /// Rewrites.
    pub rewrites: Rewrites,
}

impl Default for AppendOnly {
    fn default() -> Self {
        AppendOnly {
            enabled: AtomicBool::new(false),
            fsync: AtomicU8::new(Fsync::Everysec as u8),
            timestamps: AtomicBool::new(false),
            respb: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            sync_requests: AtomicU64::new(0),
            write_ok: AtomicBool::new(true),
            last_error: Mutex::new(String::new()),
            current_size: AtomicU64::new(0),
            base_size: AtomicU64::new(0),
            delayed_fsync: AtomicU64::new(0),
            writer: Mutex::new(None),
            files: Mutex::new(None),
            rotation: Mutex::new(None),
            pending: Mutex::new(None),
            rewrites: Rewrites::default(),
        }
    }
}

impl AppendOnly {
    /// Whether the append-only file is on.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// The fsync policy in force.
    pub fn fsync(&self) -> Fsync {
        Fsync::from_u8(self.fsync.load(Ordering::Relaxed))
    }

    /// Set the fsync policy.
    pub fn set_fsync(&self, policy: Fsync) {
        self.fsync.store(policy as u8, Ordering::Relaxed);
    }

    /// Whether the last write to the file worked.
    pub fn write_ok(&self) -> bool {
        self.write_ok.load(Ordering::Relaxed)
    }

    /// `(aof_current_size, aof_base_size, aof_delayed_fsync)`.
    pub fn sizes(&self) -> (u64, u64, u64) {
        (
            self.current_size.load(Ordering::Relaxed),
            self.base_size.load(Ordering::Relaxed),
            self.delayed_fsync.load(Ordering::Relaxed),
        )
    }
}
