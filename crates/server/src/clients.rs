//! The registry of connected clients, for `CLIENT LIST`, `CLIENT KILL`,
//! `CLIENT INFO`, `MONITOR` and the `clients` section of `INFO`.
//!
//! Each logical client registers a [`ClientHandle`] when it connects and is
//! removed when its [`Registration`] is dropped, so a client that vanishes
//! for any reason (close, error, a failed task) leaves no stale entry.
//! What the listing shows is copied into the handle, because the session
//! itself belongs to the connection's task: the last command and its time
//! into atomics after every command, the rest under a lock only when it changed.
//!
//! Nothing here writes to a socket: `CLIENT KILL` marks the client and wakes
//! its connection task, and MONITOR lines go into a channel per monitor that
//! the monitor's own connection task drains, so no event loop ever waits on
//! another client's socket.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use kvik_protocol::commands::{by_id, CommandId};
use tokio::sync::mpsc;

use crate::signal::Signal;

/// What `CLIENT LIST` shows about one client.
#[derive(Debug, Clone)]
pub struct ClientInfo {
    /// Peer address (`addr=`).
    pub addr: String,
    /// Local address of the listening side (`laddr=`).
    pub laddr: String,
    /// Name from `CLIENT SETNAME` / `HELLO SETNAME`.
    pub name: Option<Vec<u8>>,
    /// Selected database.
    pub db: usize,
    /// RESP version, 2 or 3.
    pub resp: u8,
    /// `CLIENT NO-EVICT` state (`flags=e`).
    pub no_evict: bool,
    /// Whether the client is a MONITOR (`flags=O`).
    pub monitor: bool,
    /// Channel, pattern and shard channel subscriptions (`sub=`, `psub=`, `ssub=`).
    pub subscriptions: [usize; 3],
    /// Commands queued while a MULTI is open (`multi=`, `flags=x`).
    pub multi: Option<usize>,
    /// Library name and version from `CLIENT SETINFO`.
    pub lib_name: Vec<u8>,
    /// See `lib_name`.
    pub lib_ver: Vec<u8>,
    /// Tracking state while `CLIENT TRACKING` is on (flags `t`, `R`, `B`, `redir=`).
    pub tracking: Option<Arc<crate::tracking::Shown>>,
    /// The mux id of a RESPB channel (`mux=`, shown for channels only).
    pub mux: Option<u16>,
}

/// One registered client: its listing data and a way to end it.
#[derive(Debug)]
pub struct ClientHandle {
    /// The client id.
    pub id: u64,
    /// The socket's file descriptor (`fd=`).
    pub fd: i32,
    /// When the client connected.
    pub created: Instant,
    /// Listing data that changes rarely, updated when it changes.
    pub info: Mutex<ClientInfo>,
    /// Id of the last command run, [`NO_COMMAND`] before the first; an
    /// atomic because it changes with every command.
    last_cmd: AtomicU16,
    /// When the client last ran a command (or connected), in microseconds
    /// after the process's clock origin ([`crate::clock::mono_us`]).
    last_active_us: AtomicU64,
    killed: AtomicBool,
    /// Wakes the connection task of a client that has a socket of its own,
    /// so another client's `CLIENT KILL` ends it even while it waits for
    /// input. The channels of a RESPB connection share one, and their
    /// connection closes only the channels marked killed.
    wake: Option<Arc<Signal>>,
}

impl ClientHandle {
    /// The listing data (recovering it if a thread panicked while holding it).
    pub fn info(&self) -> MutexGuard<'_, ClientInfo> {
        self.info.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record that the client ran `cmd` at `now_us` ([`crate::clock::mono_us`]);
    /// lock-free, as it runs for every command.
    pub fn ran(&self, cmd: CommandId, now_us: u64) {
        self.last_cmd.store(cmd.0, Ordering::Relaxed);
        self.last_active_us.store(now_us, Ordering::Relaxed);
    }

    /// Full name of the last command (`client|list`), `NULL` before the first, as Redis shows it.
    pub fn last_cmd(&self) -> &'static str {
        let id = self.last_cmd.load(Ordering::Relaxed);
        if id == NO_COMMAND {
            return "NULL";
        }
        by_id(CommandId(id)).map_or("NULL", |spec| spec.name)
    }

    /// When the client last ran a command (when it connected, before the first).
    pub fn last_active(&self) -> Instant {
        crate::clock::instant_at(self.last_active_us.load(Ordering::Relaxed))
    }

    /// Mark the client for closing and wake its connection.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        if let Some(wake) = &self.wake {
            wake.raise();
        }
    }

    /// Whether `CLIENT KILL` (or a reset of the server) asked this client to go.
    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }
}

/// The stored last command of a client that has not run one yet.
const NO_COMMAND: u16 = u16::MAX;

/// Most bytes of MONITOR lines that may wait for a monitor to read them; a
/// monitor that falls further behind is disconnected.
const MONITOR_BACKLOG_LIMIT: usize = 64 * 1024 * 1024;

/// The receiving end of a MONITOR feed, owned by the monitor's connection.
#[derive(Debug)]
pub struct MonitorFeed {
    lines: mpsc::UnboundedReceiver<Vec<u8>>,
    queued: Arc<AtomicUsize>,
}

impl MonitorFeed {
    /// The next fed line; `None` once the registry stopped feeding this client.
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        let line = self.lines.recv().await?;
        self.queued.fetch_sub(line.len(), Ordering::Relaxed);
        Some(line)
    }
}

/// A client in MONITOR mode, and where its lines go.
#[derive(Debug)]
struct Monitor {
    handle: Arc<ClientHandle>,
    lines: mpsc::UnboundedSender<Vec<u8>>,
    queued: Arc<AtomicUsize>,
}

/// All connected clients, by id (so listings come out in id order, as Redis's do).
#[derive(Debug, Default)]
pub struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
    /// Clients in MONITOR mode, fed every executed command.
    monitors: Mutex<Vec<Monitor>>,
    /// `monitors.len()`, read without the lock on every command.
    monitor_count: AtomicUsize,
}

/// Keeps a client registered for as long as it lives.
#[derive(Debug)]
pub struct Registration {
    registry: Arc<ClientRegistry>,
    /// The registered client.
    pub handle: Arc<ClientHandle>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.handle.id);
        if self.handle.info().monitor {
            self.registry.remove_monitor(self.handle.id);
        }
    }
}

impl ClientRegistry {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<ClientHandle>>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Register client `id` connected from `addr` to `laddr`. `wake` is
    /// notified when the client is killed (clients with a socket of their own).
    pub fn register(
        self: &Arc<Self>,
        id: u64,
        addr: String,
        laddr: String,
        fd: i32,
        wake: Option<Arc<Signal>>,
    ) -> Registration {
        let now = Instant::now();
        let info = ClientInfo {
            addr,
            laddr,
            name: None,
            db: 0,
            resp: 2,
            no_evict: false,
            monitor: false,
            subscriptions: [0; 3],
            multi: None,
            lib_name: Vec::new(),
            lib_ver: Vec::new(),
            tracking: None,
            mux: None,
        };
        let handle = Arc::new(ClientHandle {
            id,
            fd,
            created: now,
            info: Mutex::new(info),
            last_cmd: AtomicU16::new(NO_COMMAND),
            last_active_us: AtomicU64::new(crate::clock::mono_us(now)),
            killed: AtomicBool::new(false),
            wake,
        });
        self.lock().insert(id, Arc::clone(&handle));
        Registration { registry: Arc::clone(self), handle }
    }

    /// Every registered client, in id order.
    pub fn snapshot(&self) -> Vec<Arc<ClientHandle>> {
        self.lock().values().cloned().collect()
    }

    /// Start feeding executed commands to `handle`'s client; the lines wait
    /// in the returned feed until its connection sends them, which it does
    /// only after the replies already due (MONITOR's `+OK` first).
    ///
    /// Returns `None` when the client has no socket of its own (a RESPB
    /// channel), which cannot receive the unsolicited lines.
    pub fn add_monitor(&self, handle: &Arc<ClientHandle>) -> Option<MonitorFeed> {
        handle.wake.as_ref()?;
        if handle.info().mux.is_some() {
            return None;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let mut monitors = self.lock_monitors();
        monitors.retain(|m| m.handle.id != handle.id);
        monitors.push(Monitor { handle: Arc::clone(handle), lines: tx, queued: Arc::clone(&queued) });
        self.monitor_count.store(monitors.len(), Ordering::Release);
        Some(MonitorFeed { lines: rx, queued })
    }

    fn lock_monitors(&self) -> MutexGuard<'_, Vec<Monitor>> {
        self.monitors.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stop feeding client `id` (RESET, disconnect).
    pub fn remove_monitor(&self, id: u64) {
        let mut monitors = self.lock_monitors();
        monitors.retain(|m| m.handle.id != id);
        self.monitor_count.store(monitors.len(), Ordering::Release);
    }

    /// Whether any client is in MONITOR mode (cheap; checked for every command).
    pub fn has_monitors(&self) -> bool {
        self.monitor_count.load(Ordering::Acquire) > 0
    }

    /// Queue `line` for every monitor, dropping those that are gone and
    /// disconnecting those too far behind. Never waits on a socket.
    ///
    /// Queued under the monitors lock so lines from different threads reach
    /// every monitor in the same order.
    pub fn feed_monitors(&self, line: &[u8]) {
        let mut monitors = self.lock_monitors();
        monitors.retain(|m| {
            if m.handle.is_killed() {
                return false;
            }
            if m.queued.load(Ordering::Relaxed) + line.len() > MONITOR_BACKLOG_LIMIT {
                m.handle.kill();
                return false;
            }
            m.queued.fetch_add(line.len(), Ordering::Relaxed);
            m.lines.send(line.to_vec()).is_ok()
        });
        self.monitor_count.store(monitors.len(), Ordering::Release);
    }

    /// Whether client `id` is connected.
    pub fn contains(&self, id: u64) -> bool {
        self.lock().contains_key(&id)
    }

    /// Number of connected clients.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no client is connected.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}
