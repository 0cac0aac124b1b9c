//! The server's users (`ACL SETUSER`, `user` lines, the ACL file) and its
//! security log (`ACL LOG`).
//!
//! Users are kept whole and immutable behind a lock: a change builds the
//! new user and swaps it in, then bumps a generation number. A session
//! holds the user it logged in as, and compares one number with the
//! generation before each command, taking the new rules when it moved; so
//! a change reaches every connection, on every thread, at its next
//! command, as Redis's changes do, and the check of an unchanged user
//! touches no lock.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use kvik_acl::{Defaults, User, Users};

/// What an `ACL LOG` entry records a refusal of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A command the user may not run.
    Command,
    /// A key the user may not touch.
    Key,
    /// A channel the user may not use.
    Channel,
    /// Wrong credentials.
    Auth,
}

impl Reason {
    fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command was sent from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// Sent by the client.
    Toplevel,
    /// Queued in, or run by, a transaction.
    Multi,
    /// Called by a script.
    Lua,
}

impl Context {
    fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One `ACL LOG` entry.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Refusals it stands for (alike refusals within a minute are one).
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    /// The command, key, channel, or the name of the command that tried
    /// to log in.
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    /// When the last of them happened, in Unix milliseconds.
    pub time_ms: u64,
    /// The client's `CLIENT LIST` line then.
    pub client_info: Vec<u8>,
}

impl Entry {
    /// The fields of the entry as `ACL LOG` lists them, `age` in seconds.
    pub fn fields(&self, now_ms: u64) -> (&'static str, &'static str, f64) {
        let age = now_ms.saturating_sub(self.time_ms) as f64 / 1000.0;
        (self.reason.name(), self.context.name(), age)
    }
}

/// Alike refusals closer than this are counted in one entry.
const GROUPING_MS: u64 = 60_000;
/// How many of the newest entries a refusal is compared with.
const GROUPING_SCAN: usize = 10;

/// Users and the security log.
#[derive(Debug)]
pub struct Acl {
    users: RwLock<Users>,
    generation: AtomicU64,
    log: Mutex<VecDeque<Entry>>,
    /// `acllog-max-len`.
    log_max_len: AtomicUsize,
    /// `acl-pubsub-default allchannels`.
    pubsub_all: AtomicBool,
}

impl Default for Acl {
    fn default() -> Self {
        Acl {
            users: RwLock::new(Users::new()),
            generation: AtomicU64::new(1),
            log: Mutex::new(VecDeque::new()),
            log_max_len: AtomicUsize::new(128),
            pubsub_all: AtomicBool::new(false),
        }
    }
}

impl Acl {
    /// Changes since start; a session whose copy differs re-reads its user.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The users, for reading.
    pub fn users(&self) -> RwLockReadGuard<'_, Users> {
        self.users.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The user named `name`.
    pub fn user(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users().get(name).cloned()
    }

    /// The `default` user now.
    pub fn default_user(&self) -> Arc<User> {
        self.users().default_user()
    }

    /// What new selectors start with.
    pub fn defaults(&self) -> Defaults {
        Defaults { all_channels: self.pubsub_all.load(Ordering::Relaxed) }
    }

    /// Change the users; every session sees the result at its next
    /// command, and whether a new client must log in follows the default
    /// user (`auth_required`, the connections' copy of it).
    pub fn update<R>(&self, auth_required: &AtomicBool, f: impl FnOnce(&mut Users) -> R) -> R {
        let mut users = self.users.write().unwrap_or_else(|e| e.into_inner());
        let result = f(&mut users);
        let default = users.default_user();
        auth_required.store(!(default.nopass() && default.enabled()), Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::Release);
        result
    }

    /// Take `acllog-max-len` and `acl-pubsub-default` from the configuration.
    pub fn configure(&self, log_max_len: usize, pubsub_all: bool) {
        self.log_max_len.store(log_max_len, Ordering::Relaxed);
        self.pubsub_all.store(pubsub_all, Ordering::Relaxed);
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.truncate(log_max_len);
    }

    /// Record a refusal, folding it into a recent alike entry as Redis
    /// does (same reason, context, object and user, within a minute).
    pub fn log(&self, entry: Entry) {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let alike = log.iter().take(GROUPING_SCAN).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && e.time_ms.abs_diff(entry.time_ms) <= GROUPING_MS
        });
        match alike.and_then(|i| log.remove(i)) {
            Some(mut known) => {
                known.count += 1;
                known.time_ms = entry.time_ms;
                known.client_info = entry.client_info;
                log.push_front(known);
            }
            None => {
                log.push_front(entry);
                log.truncate(self.log_max_len.load(Ordering::Relaxed));
            }
        }
    }

    /// The newest `count` entries.
    pub fn entries(&self, count: usize) -> Vec<Entry> {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.iter().take(count).cloned().collect()
    }

    /// `ACL LOG RESET`.
    pub fn reset_log(&self) {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
