//! The registry of connected clients, for `CLIENT LIST`, `CLIENT KILL`,
//! `CLIENT INFO` and the `clients` section of `INFO`.
//!
//! Each logical client registers a [`ClientHandle`] when it connects and is
//! removed when its [`Registration`] is dropped, so a client that vanishes
//! for any reason (close, error, panic in its thread) leaves no stale entry.
//! What the listing shows is copied into the handle after every command,
//! because the session itself belongs to the connection's thread.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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
    /// When the client connected.
    pub created: Instant,
    /// When the client last ran a command.
    pub last_active: Instant,
    /// Full name of the last command (`client|list`).
    pub last_cmd: &'static str,
    /// `CLIENT NO-EVICT` state (`flags=e`).
    pub no_evict: bool,
    /// Whether the client is a MONITOR (`flags=O`).
    pub monitor: bool,
    /// Library name and version from `CLIENT SETINFO`.
    pub lib_name: Vec<u8>,
    /// See `lib_name`.
    pub lib_ver: Vec<u8>,
}

/// One registered client: its listing data and a way to end it.
#[derive(Debug)]
pub struct ClientHandle {
    /// The client id.
    pub id: u64,
    /// The socket's file descriptor (`fd=`).
    pub fd: i32,
    /// Listing data, updated after each command.
    pub info: Mutex<ClientInfo>,
    killed: AtomicBool,
    /// A second handle on the socket, so another client's `CLIENT KILL` can
    /// wake a connection blocked in a read. RESPB channels share their
    /// connection's socket and have none: killing one must not end the others.
    stream: Option<TcpStream>,
}

impl ClientHandle {
    /// The listing data (recovering it if a thread panicked while holding it).
    pub fn info(&self) -> MutexGuard<'_, ClientInfo> {
        self.info.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Mark the client for closing and wake its connection.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        if let Some(s) = &self.stream {
            let _ = s.shutdown(Shutdown::Read);
        }
    }

    /// Whether `CLIENT KILL` (or a reset of the server) asked this client to go.
    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }
}

/// Longest a MONITOR line may wait for its client to read.
const MONITOR_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// A client in MONITOR mode and, until MONITOR's reply is sent, the lines
/// collected for it.
type Monitor = (Arc<ClientHandle>, Option<Vec<u8>>);

/// All connected clients, by id (so listings come out in id order, as Redis's do).
#[derive(Debug, Default)]
pub struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
    /// Clients in MONITOR mode, fed every executed command; lines for a
    /// monitor whose `+OK` is not sent yet wait in its backlog.
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

fn show(addr: Option<SocketAddr>) -> String {
    addr.map(|a| a.to_string()).unwrap_or_default()
}

impl ClientRegistry {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<ClientHandle>>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Register client `id` connected from `peer` to `local`.
    pub fn register(
        self: &Arc<Self>,
        id: u64,
        peer: Option<SocketAddr>,
        local: Option<SocketAddr>,
        fd: i32,
        stream: Option<TcpStream>,
    ) -> Registration {
        let now = Instant::now();
        let info = ClientInfo {
            addr: show(peer),
            laddr: show(local),
            name: None,
            db: 0,
            resp: 2,
            created: now,
            last_active: now,
            last_cmd: "NULL",
            no_evict: false,
            monitor: false,
            lib_name: Vec::new(),
            lib_ver: Vec::new(),
        };
        let handle = Arc::new(ClientHandle { id, fd, info: Mutex::new(info), killed: AtomicBool::new(false), stream });
        self.lock().insert(id, Arc::clone(&handle));
        Registration { registry: Arc::clone(self), handle }
    }

    /// Every registered client, in id order.
    pub fn snapshot(&self) -> Vec<Arc<ClientHandle>> {
        self.lock().values().cloned().collect()
    }

    /// Start collecting executed commands for `handle`; they are sent once
    /// [`ClientRegistry::monitor_ready`] says MONITOR's own reply went out.
    ///
    /// Returns false when the client has no socket of its own (a RESPB
    /// channel), which cannot receive the unsolicited lines.
    pub fn add_monitor(&self, handle: &Arc<ClientHandle>) -> bool {
        let Some(stream) = &handle.stream else {
            return false;
        };
        // Lines are written while every command waits on the monitors lock:
        // a monitor that stops reading is dropped rather than stalling everyone.
        let _ = stream.set_write_timeout(Some(MONITOR_WRITE_TIMEOUT));
        let mut monitors = self.lock_monitors();
        if !monitors.iter().any(|(m, _)| m.id == handle.id) {
            monitors.push((Arc::clone(handle), Some(Vec::new())));
            self.monitor_count.store(monitors.len(), Ordering::Release);
        }
        true
    }

    /// MONITOR's reply has been sent to client `id`: send what was collected
    /// since, and feed it directly from now on.
    pub fn monitor_ready(&self, id: u64) {
        let mut monitors = self.lock_monitors();
        monitors.retain_mut(|(m, backlog)| {
            if m.id != id {
                return true;
            }
            match (backlog.take(), &m.stream) {
                (Some(lines), Some(s)) => lines.is_empty() || (&*s).write_all(&lines).is_ok(),
                (None, Some(_)) => true,
                _ => false,
            }
        });
        self.monitor_count.store(monitors.len(), Ordering::Release);
    }

    fn lock_monitors(&self) -> MutexGuard<'_, Vec<Monitor>> {
        self.monitors.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stop feeding client `id` (RESET, disconnect).
    pub fn remove_monitor(&self, id: u64) {
        let mut monitors = self.lock_monitors();
        monitors.retain(|(m, _)| m.id != id);
        self.monitor_count.store(monitors.len(), Ordering::Release);
    }

    /// Whether any client is in MONITOR mode (cheap; checked for every command).
    pub fn has_monitors(&self) -> bool {
        self.monitor_count.load(Ordering::Acquire) > 0
    }

    /// Send `line` to every monitor, dropping those whose socket fails.
    ///
    /// Sent under the monitors lock so lines from different threads never interleave.
    pub fn feed_monitors(&self, line: &[u8]) {
        let mut monitors = self.lock_monitors();
        monitors.retain_mut(|(m, backlog)| {
            if m.is_killed() {
                return false;
            }
            match (backlog, &m.stream) {
                (Some(backlog), _) => {
                    backlog.extend_from_slice(line);
                    true
                }
                (None, Some(s)) => (&*s).write_all(line).is_ok(),
                (None, None) => false,
            }
        });
        self.monitor_count.store(monitors.len(), Ordering::Release);
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
