//! The append-only file as the server shares it: whether it is on, the
//! fsync policy the writer follows, the writer thread, the files it writes
//! and what `INFO persistence` reports of them. The work is
//! [`crate::persistence::aof`]'s; this registry imports nothing of the
//! server's state, which holds it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;

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

/// See the module documentation.
#[derive(Debug)]
pub struct AppendOnly {
    /// The writer runs (`aof_enabled`).
    pub(crate) enabled: AtomicBool,
    /// `appendfsync`, read by the writer every round.
    fsync: AtomicU8,
    /// `aof-timestamp-enabled`.
    pub(crate) timestamps: AtomicBool,
    /// The writer is to stop once it has written what was published.
    pub(crate) closing: AtomicBool,
    /// Everything published so far is to be flushed to disk now (a count
    /// of requests; the writer answers by moving the journal's `synced`).
    pub(crate) sync_requests: AtomicU64,
    /// The last write worked (`aof_last_write_status`).
    pub(crate) write_ok: AtomicBool,
    /// Bytes of the files the manifest names (`aof_current_size`) and of
    /// its base (`aof_base_size`).
    pub(crate) current_size: AtomicU64,
    pub(crate) base_size: AtomicU64,
    /// Flushes to disk that were late (`aof_delayed_fsync`).
    pub(crate) delayed_fsync: AtomicU64,
    /// The writer thread.
    pub(crate) writer: Mutex<Option<JoinHandle<()>>>,
}

impl Default for AppendOnly {
    fn default() -> Self {
        AppendOnly {
            enabled: AtomicBool::new(false),
            fsync: AtomicU8::new(Fsync::Everysec as u8),
            timestamps: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            sync_requests: AtomicU64::new(0),
            write_ok: AtomicBool::new(true),
            current_size: AtomicU64::new(0),
            base_size: AtomicU64::new(0),
            delayed_fsync: AtomicU64::new(0),
            writer: Mutex::new(None),
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
