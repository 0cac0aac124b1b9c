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
//! The memory of each client's buffers ([`Buffers`]) is published by its
//! connection in the same spirit: a few relaxed stores each time the
//! connection stops to wait (for input, for the socket to take replies, for
//! a blocked command or a pause), never per byte or per command, and the
//! server-wide sum ([`ClientRegistry::memory`], `mem_clients_normal`) is
//! moved by the difference only when a client's total changed, which it does
//! when a buffer grows or a MULTI queues a command, not as requests come and
//! go.
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

/// Hands out client ids, unique for the life of the server.
///
/// Redis numbers clients from 1 upwards and never reuses an id; `HELLO`,
/// `CLIENT ID` and `CLIENT KILL ID` rely on that, so kvik does the same.
#[derive(Debug)]
pub struct ClientIds {
    next: AtomicU64,
}

impl Default for ClientIds {
    fn default() -> Self {
        ClientIds { next: AtomicU64::new(1) }
    }
}

impl ClientIds {
    /// The next unused id.
    pub fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }
}

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
    /// Whether the client is a replica (`flags=S`).
    pub replica: bool,
    /// Whether the client is this replica's link to its master (`flags=M`).
    pub master: bool,
    /// Channel, pattern and shard channel subscriptions (`sub=`, `psub=`, `ssub=`).
    pub subscriptions: [usize; 3],
    /// Commands queued while a MULTI is open (`multi=`, `flags=x`).
    pub multi: Option<usize>,
    /// Library name and version from `CLIENT SETINFO`.
    pub lib_name: Vec<u8>,
    /// See `lib_name`.
    pub lib_ver: Vec<u8>,
    /// Tracking state while `CLIENT TRACKING` is on (flags `t`, `R`, `B`, `redir=`).
    pub tracking: Option<Arc<TrackingShown>>,
    /// The mux id of a RESPB channel (`mux=`, shown for channels only).
    pub mux: Option<u16>,
    /// The ACL user the client runs as (`user=`).
    pub user: Vec<u8>,
}

/// What `CLIENT LIST` shows of a tracking client, shared between its
/// session, the tracking table (which marks a broken redirect) and the
/// client list.
#[derive(Debug)]
pub struct TrackingShown {
    /// The client invalidations are redirected to (0: none), `redir=`.
    pub redirect: u64,
    /// `BCAST` mode (flag `B`).
    pub bcast: bool,
    /// Set once the redirect target was found gone (flag `R`).
    broken: AtomicBool,
}

impl TrackingShown {
    /// Tracking just turned on, redirected to `redirect` (0: none).
    pub fn new(redirect: u64, bcast: bool) -> TrackingShown {
        TrackingShown { redirect, bcast, broken: AtomicBool::new(false) }
    }

    /// Whether the redirect target was found gone.
    pub fn broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    /// The redirect target is gone.
    pub fn mark_broken(&self) {
        self.broken.store(true, Ordering::Relaxed);
    }
}

/// One measurement of a connection's buffers, as its connection takes it
/// when it stops to wait; [`ClientHandle::show_buffers`] publishes it.
/// `CLIENT LIST` shows the fields under Redis's names; what each maps onto
/// in kvik, whose buffers are not Redis's (a RESP connection collects a
/// batch's replies in one growing buffer, a RESPB connection in two, one
/// being written while the next collects), is said field by field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferFigures {
    /// `qbuf`: bytes read from the socket and not yet run (a request still
    /// arriving, or requests behind a blocked or paused one).
    pub qbuf: usize,
    /// The bytes the read buffer holds; `qbuf-free` is this less `qbuf`.
    pub qbuf_cap: usize,
    /// `rbs`: the bytes the reply buffers hold.
    pub rbs: usize,
    /// `rbp`: the most reply bytes one write took since the connection
    /// opened (kvik's reply buffers keep their size, so there is no period
    /// after which to forget the peak, as Redis does).
    pub rbp: usize,
    /// `obl`: reply bytes waiting for the socket in the buffer being written.
    pub obl: usize,
    /// `oll`: 1 while replies collect behind a write still in progress
    /// (RESPB's second buffer; a RESP connection runs no command while it
    /// writes, so 0 there).
    pub oll: usize,
    /// `omem`: the bytes of those replies.
    pub omem: usize,
    /// Everything the connection holds for its buffers, by capacity: the
    /// read buffer, the argument list kept for reuse, the reply buffers
    /// and, on RESPB, the frames queued for busy channels. With `multi-mem`
    /// it makes `tot-mem`.
    pub held: usize,
}

/// What a connection last published to a client's entry, so that a
/// publish that finds nothing changed stores nothing.
#[derive(Debug, Default)]
pub struct Shown(BufferFigures);

impl Shown {
    /// Publish `f` to `handle` if it differs from the last publish.
    #[inline]
    pub fn publish(&mut self, handle: &ClientHandle, f: &BufferFigures) {
        if *f != self.0 {
            self.0 = *f;
            handle.show_buffers(f);
        }
    }
}

/// The last [`BufferFigures`] a client's connection published, and the
/// memory of its open MULTI, as atomics that only the connection's task
/// writes and `CLIENT LIST` reads.
#[derive(Debug, Default)]
pub struct Buffers {
    qbuf: AtomicUsize,
    qbuf_cap: AtomicUsize,
    rbs: AtomicUsize,
    rbp: AtomicUsize,
    obl: AtomicUsize,
    oll: AtomicUsize,
    omem: AtomicUsize,
    held: AtomicUsize,
    /// `multi-mem`: what the copies of the commands queued by an open MULTI hold.
    multi: AtomicUsize,
}

impl Buffers {
    /// The figures last published.
    pub fn figures(&self) -> BufferFigures {
        let load = |a: &AtomicUsize| a.load(Ordering::Relaxed);
        BufferFigures {
            qbuf: load(&self.qbuf),
            qbuf_cap: load(&self.qbuf_cap),
            rbs: load(&self.rbs),
            rbp: load(&self.rbp),
            obl: load(&self.obl),
            oll: load(&self.oll),
            omem: load(&self.omem),
            held: load(&self.held),
        }
    }

    /// `multi-mem`: bytes held by the commands an open MULTI queued.
    pub fn multi(&self) -> usize {
        self.multi.load(Ordering::Relaxed)
    }

    /// `tot-mem`: the buffers and the queued MULTI together, what this
    /// client adds to [`ClientRegistry::memory`].
    pub fn total(&self) -> usize {
        self.held.load(Ordering::Relaxed) + self.multi()
    }
}

/// The sum of every registered client's `tot-mem` (`mem_clients_normal`),
/// on a cache line of its own: connections on every core add to it, and
/// every command checks it under `maxmemory`.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct MemoryTotal(AtomicUsize);

impl MemoryTotal {
    /// Move the total from `old` to `new` bytes of one client.
    fn moved(&self, old: usize, new: usize) {
        if new > old {
            self.0.fetch_add(new - old, Ordering::Relaxed);
        } else {
            self.0.fetch_sub(old - new, Ordering::Relaxed);
        }
    }

    /// The sum now.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
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
    /// Its buffers, as its connection last measured them.
    pub buffers: Buffers,
    /// The registry's sum that `buffers` counts in.
    total: Arc<MemoryTotal>,
    /// Set once the client left the registry: a late publish through a
    /// handle kept elsewhere must not count in the sum again.
    retired: AtomicBool,
    /// Wakes the connection task of a client that has a socket of its own,
    /// so another client's `CLIENT KILL` ends it even while it waits for
    /// input. The channels of a RESPB connection share one, and their
    /// connection closes only the channels marked killed.
    wake: Option<Arc<Signal>>,
    /// Raised to ask the connection to give its buffers back
    /// ([`crate::housekeeping::idle_trim`]); set by the connection, which alone knows
    /// which of its waits may be woken for it.
    trim_wake: Mutex<Option<Arc<Signal>>>,
    trim_requested: AtomicBool,
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

    /// Let [`ClientHandle::request_trim`] raise `signal` (a RESP client
    /// that switched to RESPB is woken another way from then on).
    pub fn on_trim(&self, signal: &Arc<Signal>) {
        *self.trim_wake.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(signal));
    }

    /// Ask the client's connection to give its buffers back, unless asked
    /// already or it cannot be woken for it.
    pub fn request_trim(&self) {
        let wake = self.trim_wake.lock().unwrap_or_else(|e| e.into_inner());
        let Some(signal) = wake.as_ref() else { return };
        if !self.trim_requested.swap(true, Ordering::AcqRel) {
            signal.raise();
        }
    }

    /// Whether a trim was asked for since the last call.
    pub fn take_trim_request(&self) -> bool {
        self.trim_requested.swap(false, Ordering::AcqRel)
    }

    /// Whether `CLIENT KILL` (or a reset of the server) asked this client to go.
    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Publish what the client's connection measured of its buffers: plain
    /// relaxed stores, and a change to the registry's sum only when the
    /// bytes held changed. Only the connection's task calls it, through
    /// [`Shown::publish`] when it publishes often.
    #[inline(never)]
    pub fn show_buffers(&self, f: &BufferFigures) {
        let b = &self.buffers;
        b.qbuf.store(f.qbuf, Ordering::Relaxed);
        b.qbuf_cap.store(f.qbuf_cap, Ordering::Relaxed);
        b.rbs.store(f.rbs, Ordering::Relaxed);
        b.rbp.store(f.rbp, Ordering::Relaxed);
        b.obl.store(f.obl, Ordering::Relaxed);
        b.oll.store(f.oll, Ordering::Relaxed);
        b.omem.store(f.omem, Ordering::Relaxed);
        let old = b.held.load(Ordering::Relaxed);
        if old != f.held {
            self.count(&b.held, old, f.held);
        }
    }

    /// Publish the bytes read and not yet run (`qbuf`) alone: a RESP
    /// connection does at every wait, and at the start of every batch, so
    /// that a client's own `CLIENT INFO` shows its request in the buffer as
    /// Redis's does. One store.
    #[inline]
    pub fn show_input(&self, qbuf: usize) {
        self.buffers.qbuf.store(qbuf, Ordering::Relaxed);
    }

    /// Publish what an open MULTI's queued commands hold (0 once it ended).
    pub fn show_multi(&self, bytes: usize) {
        let multi = &self.buffers.multi;
        let old = multi.load(Ordering::Relaxed);
        if old != bytes {
            self.count(multi, old, bytes);
        }
    }

    /// Set `field` from `old` to `new` and move the registry's sum with it,
    /// unless the client already left the registry.
    #[cold]
    fn count(&self, field: &AtomicUsize, old: usize, new: usize) {
        if self.retired.load(Ordering::Relaxed) {
            return;
        }
        field.store(new, Ordering::Relaxed);
        self.total.moved(old, new);
    }

    /// Take the client's bytes out of the registry's sum for good.
    fn retire(&self) {
        self.retired.store(true, Ordering::Relaxed);
        let held = self.buffers.held.swap(0, Ordering::Relaxed);
        let multi = self.buffers.multi.swap(0, Ordering::Relaxed);
        self.total.moved(held + multi, 0);
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
    /// The sum of the registered clients' `tot-mem`.
    memory: Arc<MemoryTotal>,
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
        self.handle.retire();
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
            user: b"default".to_vec(),
            addr,
            laddr,
            name: None,
            db: 0,
            resp: 2,
            no_evict: false,
            monitor: false,
            replica: false,
            master: false,
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
            buffers: Buffers::default(),
            total: Arc::clone(&self.memory),
            retired: AtomicBool::new(false),
            wake,
            trim_wake: Mutex::new(None),
            trim_requested: AtomicBool::new(false),
        });
        self.lock().insert(id, Arc::clone(&handle));
        Registration { registry: Arc::clone(self), handle }
    }

    /// Every registered client, in id order.
    pub fn snapshot(&self) -> Vec<Arc<ClientHandle>> {
        self.lock().values().cloned().collect()
    }

    /// Run `f` on every registered client, under the registry's lock.
    pub fn each(&self, mut f: impl FnMut(&ClientHandle)) {
        for handle in self.lock().values() {
            f(handle);
        }
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

    /// Bytes the registered clients' buffers hold, the sum of their
    /// `tot-mem` (`mem_clients_normal`). One atomic load.
    #[inline]
    pub fn memory(&self) -> usize {
        self.memory.get()
    }
}

/// One `CLIENT LIST` line, in Redis's field order.
///
/// The buffer fields are what the client's connection measured when it
/// last stopped to wait (see [`crate::registries::clients::BufferFigures`] for what each
/// maps onto), and for the calling client the bytes of this batch's input:
/// `qbuf` counts the request being run, as Redis's does. `argv-mem` is the
/// running command's, so `argv` for the caller and 0 for every other client
/// (whose command, if one runs on another thread, cannot be looked at).
/// `tot-mem` does not add `argv-mem`: kvik reads arguments in place in the
/// query buffer, whose capacity it counts already.
pub fn list_line(h: &ClientHandle, current: u64, argv: usize, blocked: bool) -> Vec<u8> {
    let info = h.info();
    let mem = h.buffers.figures();
    let argv = if h.id == current { argv } else { 0 };
    let now = Instant::now();
    let age = now.saturating_duration_since(h.created).as_secs();
    let idle = if h.id == current { 0 } else { now.saturating_duration_since(h.last_active()).as_secs() };
    let mut flags = String::new();
    if info.replica {
        flags.push('S');
    }
    if info.monitor {
        flags.push('O');
    }
    if info.master {
        flags.push('M');
    }
    let [sub, psub, ssub] = info.subscriptions;
    if sub + psub + ssub > 0 {
        flags.push('P');
    }
    if info.multi.is_some() {
        flags.push('x');
    }
    if blocked {
        flags.push('b');
    }
    if let Some(t) = &info.tracking {
        flags.push('t');
        if t.broken() {
            flags.push('R');
        }
        if t.bcast {
            flags.push('B');
        }
    }
    if info.no_evict {
        flags.push('e');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let mut line = format!("id={} addr={} laddr={} fd={} name=", h.id, info.addr, info.laddr, h.fd).into_bytes();
    line.extend_from_slice(info.name.as_deref().unwrap_or_default());
    line.extend_from_slice(
        format!(
            " age={age} idle={idle} flags={flags} db={} sub={sub} psub={psub} ssub={ssub} multi={} qbuf={} \
             qbuf-free={} argv-mem={argv} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events=r \
             cmd={} user={} redir={} resp={}\n",
            info.db,
            info.multi.map_or(-1, |n| n as i64),
            mem.qbuf,
            mem.qbuf_cap.saturating_sub(mem.qbuf),
            h.buffers.multi(),
            mem.rbs,
            mem.rbp,
            mem.obl,
            mem.oll,
            mem.omem,
            h.buffers.total(),
            h.last_cmd(),
            String::from_utf8_lossy(&info.user),
            info.tracking.as_ref().map_or(-1, |t| i64::try_from(t.redirect).unwrap_or(i64::MAX)),
            info.resp
        )
        .as_bytes(),
    );
    // kvik's own field, last, so RESP clients' lines stay as Redis writes them.
    if let Some(mux) = info.mux {
        line.pop();
        line.extend_from_slice(format!(" mux={mux}\n").as_bytes());
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(held: usize) -> BufferFigures {
        BufferFigures { qbuf: 5, qbuf_cap: held, held, ..BufferFigures::default() }
    }

    #[test]
    fn the_sum_follows_each_client_and_forgets_one_that_left() {
        let registry = Arc::new(ClientRegistry::default());
        let a = registry.register(1, String::new(), String::new(), -1, None);
        let b = registry.register(2, String::new(), String::new(), -1, None);
        a.handle.show_buffers(&figures(1000));
        b.handle.show_buffers(&figures(500));
        assert_eq!(registry.memory(), 1500);
        a.handle.show_buffers(&figures(200));
        b.handle.show_multi(64);
        assert_eq!(registry.memory(), 200 + 500 + 64);
        assert_eq!(b.handle.buffers.total(), 564);
        assert_eq!(b.handle.buffers.figures().qbuf, 5);
        let kept = Arc::clone(&b.handle);
        drop(b);
        assert_eq!(registry.memory(), 200, "a client that left takes its bytes with it");
        // A publish through a handle kept elsewhere counts no more.
        kept.show_buffers(&figures(4000));
        kept.show_multi(1);
        assert_eq!(registry.memory(), 200);
        drop(a);
        assert_eq!(registry.memory(), 0);
    }
}
