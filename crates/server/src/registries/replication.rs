//! Replication as the master shares it: the replication id and offset,
//! the stream's last bytes (the backlog), and the replicas.
//!
//! The stream is one buffer, as in Redis 7.0: the feed
//! ([`crate::replication::feed`]) appends the journal's records to it in
//! order, and each replica's connection sends from its own place in it.
//! The buffer keeps the last `repl-backlog-size` bytes for partial
//! resyncs, and more while a replica still has to send them; a replica
//! that falls further behind than `client-output-buffer-limit replica`
//! allows is dropped, as Redis drops it, and the buffer lets go of what
//! only it needed.
//!
//! Offsets count the stream's bytes from the start, as Redis's
//! `master_repl_offset`: the stream's last byte is at `offset`, the
//! backlog's first at `offset - backlog.len() + 1`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::config::OutputLimit;

/// Where a replica's synchronization is, as `INFO replication` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum LinkState {
    /// Waiting for its snapshot to be written (`wait_bgsave`).
    WaitBgsave = 0,
    /// Being sent its snapshot (`send_bulk`).
    SendBulk = 1,
    /// Receiving the stream (`online`).
    Online = 2,
}

impl LinkState {
    /// The word `INFO replication` shows.
    pub fn name(self) -> &'static str {
        match self {
            LinkState::WaitBgsave => "wait_bgsave",
            LinkState::SendBulk => "send_bulk",
            LinkState::Online => "online",
        }
    }
}

/// Where a `FAILOVER` is (`master_failover_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailoverState {
    #[default]
    None,
    /// Writes are held until a replica has all of them.
    WaitForSync,
    /// This server follows the replica and asks it to take over.
    InProgress,
}

impl FailoverState {
    /// The words `INFO replication` shows.
    pub fn name(self) -> &'static str {
        match self {
            FailoverState::None => "no-failover",
            FailoverState::WaitForSync => "waiting-for-sync",
            FailoverState::InProgress => "failover-in-progress",
        }
    }
}

/// A `FAILOVER` under way.
#[derive(Debug, Clone, Default)]
pub struct Failover {
    pub state: FailoverState,
    /// `TO host port`, or the replica that caught up first.
    pub target: Option<(String, u16)>,
    /// Where `TIMEOUT` ends (Unix ms; 0: no timeout).
    pub end_ms: i64,
    /// `FORCE`: at the timeout, hand over anyway.
    pub force: bool,
}

/// `sent` of a replica not yet given its place in the stream.
const NOT_PLACED: u64 = u64::MAX;

/// One replica's connection, as the master sees it.
#[derive(Debug)]
pub struct Link {
    /// Its client id (`CLIENT LIST`, `CLIENT KILL`).
    pub client_id: u64,
    /// The address it connected from, or the one it announced
    /// (`REPLCONF ip-address`).
    pub ip: String,
    /// The port it listens on (`REPLCONF listening-port`; 0: not told).
    pub port: u16,
    state: AtomicU8,
    /// The offset of the last byte its connection took from the stream
    /// ([`NOT_PLACED`] until it has a place).
    sent: AtomicU64,
    /// The offset it last acknowledged (`REPLCONF ACK`).
    pub ack_offset: AtomicU64,
    /// When, in Unix milliseconds.
    pub ack_time_ms: AtomicI64,
    /// When it went above the soft output limit (0: it is not above).
    over_soft_since_ms: AtomicI64,
    /// It fell too far behind and must be closed.
    dropped: AtomicBool,
    /// Told whenever the stream grows, the link gets its place, or it is
    /// dropped.
    pub wake: Notify,
}

impl Link {
    /// A replica's link, waiting for its snapshot.
    pub fn new(client_id: u64, ip: String, port: u16) -> Link {
        Link {
            client_id,
            ip,
            port,
            state: AtomicU8::new(LinkState::WaitBgsave as u8),
            sent: AtomicU64::new(NOT_PLACED),
            ack_offset: AtomicU64::new(0),
            ack_time_ms: AtomicI64::new(crate::keyspace::now_ms()),
            over_soft_since_ms: AtomicI64::new(0),
            dropped: AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    pub fn state(&self) -> LinkState {
        match self.state.load(Ordering::Relaxed) {
            0 => LinkState::WaitBgsave,
            1 => LinkState::SendBulk,
            _ => LinkState::Online,
        }
    }

    pub fn set_state(&self, state: LinkState) {
        self.state.store(state as u8, Ordering::Relaxed);
    }

    /// The offset of the last byte it took, once it has a place.
    pub fn sent(&self) -> Option<u64> {
        let sent = self.sent.load(Ordering::Acquire);
        (sent != NOT_PLACED).then_some(sent)
    }

    /// Whether it fell too far behind and must be closed.
    pub fn dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    /// Note an acknowledgement of `offset`.
    pub fn acked(&self, offset: u64) {
        self.ack_offset.fetch_max(offset, Ordering::Relaxed);
        self.ack_time_ms.store(crate::keyspace::now_ms(), Ordering::Relaxed);
    }
}

/// What a client said of itself as a replica (`REPLCONF`), and what it
/// asked for.
#[derive(Debug, Clone, Default)]
pub struct ReplicaConf {
    /// `listening-port`.
    pub port: u16,
    /// `ip-address`.
    pub ip: Option<String>,
    /// `capa psync2`.
    pub psync2: bool,
    /// `capa eof`: it reads a snapshot of unknown length, up to an end
    /// mark (a diskless sync).
    pub eof: bool,
    /// `rdb-only 1`: the snapshot alone, no stream.
    pub rdb_only: bool,
    /// `PSYNC <replid> <offset>`; `None` for `SYNC`.
    pub psync: Option<(Vec<u8>, i64)>,
}

/// What a replica's connection takes from the stream in one go, at most.
pub const TAKE_BYTES: usize = 256 * 1024;

/// The stream's ids, as PSYNC2 has them: the one it goes by now, and the
/// one it went by before (a replica promoted keeps serving partial
/// resyncs to its former master's other replicas up to `second_offset`).
#[derive(Debug, Clone)]
pub struct Ids {
    /// `master_replid`.
    pub replid: String,
    /// `master_replid2` (all zeros: none).
    pub replid2: String,
    /// `second_repl_offset`: the first offset `replid2` no longer names
    /// (-1: none).
    pub second_offset: i64,
}

/// The id `master_replid2` shows when there is none.
pub const NO_ID: &str = "0000000000000000000000000000000000000000";

/// What this server is a replica of, when it is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    pub host: String,
    pub port: u16,
}

/// Where a replica's link to its master is, as `INFO replication`'s
/// `master_link_status` and `ROLE` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum UpstreamState {
    /// Not connected (`connect` in `ROLE`).
    Connect = 0,
    /// Connecting, or in the handshake (`connecting`, `handshake`).
    Connecting = 1,
    /// Receiving the snapshot (`sync`).
    Sync = 2,
    /// Receiving the stream (`connected`).
    Connected = 3,
}

impl UpstreamState {
    /// The word `ROLE` shows.
    pub fn role_name(self) -> &'static str {
        match self {
            UpstreamState::Connect => "connect",
            UpstreamState::Connecting => "connecting",
            UpstreamState::Sync => "sync",
            UpstreamState::Connected => "connected",
        }
    }
}

/// What refuses clients' commands while this server is a replica: bits
/// of [`Replication::refusals`].
pub mod refuse {
    /// `replica-read-only yes`: writes.
    pub const WRITES: u8 = 1;
    /// `replica-serve-stale-data no` while the link is down: most commands.
    pub const STALE: u8 = 2;
    /// A master with fewer good replicas than `min-replicas-to-write`:
    /// writes.
    pub const NOREPLICAS: u8 = 4;
}

/// `min-replicas-to-write` and `min-replicas-max-lag`: a master takes
/// writes only while `to_write` replicas acknowledged within `max_lag_s`
/// seconds (off when either is 0).
#[derive(Debug, Clone, Copy)]
pub struct MinReplicas {
    pub to_write: usize,
    pub max_lag_s: i64,
}

impl MinReplicas {
    /// Whether the rule is on.
    pub fn on(self) -> bool {
        self.to_write > 0 && self.max_lag_s > 0
    }
}

/// The link to the master, while this server is a replica (figures for
/// `INFO replication`).
#[derive(Debug, Default)]
pub struct UpstreamLink {
    /// Bumped by every `REPLICAOF`: a link of an older generation stops.
    pub generation: AtomicU64,
    state: AtomicU8,
    /// When the link last read from the master (Unix milliseconds).
    pub last_io_ms: AtomicI64,
    /// When the link went down (0: it is up, or never was).
    pub down_since_ms: AtomicI64,
    /// The snapshot being received: its size (-1: up to an end mark) and
    /// what came of it so far.
    pub sync_total_bytes: AtomicI64,
    pub sync_read_bytes: AtomicU64,
    /// The offset of the last byte read from the master
    /// (`slave_read_repl_offset`).
    pub read_offset: AtomicU64,
    /// The socket, so that `REPLICAOF` can cut it at once.
    pub socket: Mutex<Option<std::net::TcpStream>>,
}

impl UpstreamLink {
    pub fn state(&self) -> UpstreamState {
        match self.state.load(Ordering::Relaxed) {
            0 => UpstreamState::Connect,
            1 => UpstreamState::Connecting,
            2 => UpstreamState::Sync,
            _ => UpstreamState::Connected,
        }
    }

    pub fn set_state(&self, state: UpstreamState) {
        self.state.store(state as u8, Ordering::Relaxed);
    }

    /// Cut the socket, if there is one, so that the link's thread wakes.
    pub fn cut(&self) {
        if let Some(socket) = self.socket.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct Replication {
    /// The stream's ids.
    ids: Mutex<Ids>,
    /// What this server replicates, when it is a replica.
    upstream: Mutex<Option<Upstream>>,
    /// The link to it.
    pub link: UpstreamLink,
    /// [`refuse`] bits: one relaxed load per command while there are none.
    refusals: AtomicU8,
    /// The feed appends the records of places from this one on: a replica
    /// streams its master's bytes as they came instead (`u64::MAX`), and
    /// a promoted one its own changes from the moment of its promotion.
    stream_from_place: AtomicU64,
    /// Held by a replica while it applies its master's commands and
    /// appends them to its stream, and by a full resync of its own
    /// replicas at their snapshot's moment: the snapshot then holds every
    /// command up to the stream's end, and none after.
    pub apply_gate: Mutex<()>,
    /// The stream's length: the offset of its last byte.
    offset: AtomicU64,
    /// The feed thread runs.
    pub feeding: AtomicBool,
    /// Places of the order of changes the stream holds: every one up to
    /// this.
    pub places_done: AtomicU64,
    /// The stream's end once the feed had appended them, before any
    /// `PING` or `GETACK` after (stored before `places_done`).
    pub fed_offset: AtomicU64,
    /// A client in `WAIT` wants the replicas' offsets: the feed appends
    /// `REPLCONF GETACK *` next.
    pub getack_wanted: AtomicBool,
    /// Good replicas when last counted, for `min-replicas-to-write`.
    good_replicas: AtomicUsize,
    /// The lowest `cut` of the replicas attaching (`u64::MAX`: none), so
    /// that the feed tests each record against one number.
    lowest_cut: AtomicU64,
    inner: Mutex<Inner>,
    /// Full resyncs served (`sync_full`), partial ones (`sync_partial_ok`)
    /// and partial ones asked for and refused (`sync_partial_err`).
    pub syncs_full: AtomicU64,
    pub syncs_partial_ok: AtomicU64,
    pub syncs_partial_err: AtomicU64,
    /// Snapshots for replicas finished, and how the last one went.
    snapshots: Mutex<(u64, Option<SnapshotOutcome>)>,
    /// Told when one finishes.
    pub snapshot_wake: Notify,
    /// The `FAILOVER` under way, if any.
    failover: Mutex<Failover>,
}

/// A snapshot written for replicas: the file, open, or why there is none.
pub type SnapshotOutcome = Result<Arc<std::fs::File>, String>;

impl Inner {
    fn no_replicas(&self) -> bool {
        self.placed.is_empty() && self.attaching.is_empty() && self.waiting.is_empty()
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// The stream's last bytes.
    backlog: VecDeque<u8>,
    /// The backlog exists (`repl_backlog_active`): since the first replica,
    /// until `repl-backlog-ttl` seconds without one free it.
    active: bool,
    /// When the last replica left (Unix ms; 0 while there are replicas, or
    /// never were).
    no_replicas_since_ms: i64,
    /// Replicas with a place in the stream.
    placed: Vec<Arc<Link>>,
    /// Replicas whose snapshot's moment the feed has not reached yet: each
    /// gets its place once the stream holds every place up to its `cut`.
    attaching: Vec<(u64, Arc<Link>)>,
    /// A replica got its place since the feed last looked: the next
    /// operation goes after a `SELECT`, as Redis sends one to a new replica.
    select_again: bool,
    /// Replicas waiting for a diskless snapshot to begin, in the order
    /// they came.
    waiting: Vec<Waiting>,
}

/// A replica waiting for a diskless snapshot (`repl-diskless-sync`): the
/// first waits `repl-diskless-sync-delay` seconds for others to share it.
#[derive(Debug)]
pub struct Waiting {
    pub link: Arc<Link>,
    /// Where its connection takes the snapshot from.
    pub sink: crate::registries::saves::PieceSender,
    pub since: std::time::Instant,
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            ids: Mutex::new(Ids { replid: hex_id(), replid2: NO_ID.into(), second_offset: -1 }),
            upstream: Mutex::new(None),
            link: UpstreamLink::default(),
            refusals: AtomicU8::new(0),
            stream_from_place: AtomicU64::new(0),
            apply_gate: Mutex::new(()),
            offset: AtomicU64::new(0),
            feeding: AtomicBool::new(false),
            places_done: AtomicU64::new(0),
            fed_offset: AtomicU64::new(0),
            getack_wanted: AtomicBool::new(false),
            good_replicas: AtomicUsize::new(0),
            lowest_cut: AtomicU64::new(u64::MAX),
            inner: Mutex::new(Inner::default()),
            syncs_full: AtomicU64::new(0),
            syncs_partial_ok: AtomicU64::new(0),
            syncs_partial_err: AtomicU64::new(0),
            snapshots: Mutex::new((0, None)),
            snapshot_wake: Notify::new(),
            failover: Mutex::new(Failover::default()),
        }
    }
}

/// A random id of 40 hex digits (`master_replid`, `run_id`).
pub fn hex_id() -> String {
    use std::fmt::Write;
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::with_capacity(48);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    while out.len() < 40 {
        // Each RandomState is seeded afresh by the standard library.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(now.as_nanos() ^ u128::from(std::process::id()));
        let _ = write!(out, "{:016x}", h.finish());
    }
    out.truncate(40);
    out
}

/// What `INFO replication` shows of the backlog.
#[derive(Debug, Clone, Copy)]
pub struct BacklogFigures {
    pub active: bool,
    pub first_byte_offset: u64,
    pub histlen: u64,
}

impl Replication {
    /// `master_replid`.
    pub fn replid(&self) -> String {
        self.ids().replid
    }

    pub fn ids(&self) -> Ids {
        self.ids.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether a `PSYNC <replid> <offset>` (`offset`: the first byte
    /// wanted) can continue from this stream:
    /// `replid` is its id, or its former one and `offset` came before the
    /// change (PSYNC2).
    pub fn continues(&self, replid: &[u8], offset: u64) -> bool {
        let ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        replid == ids.replid.as_bytes()
            || replid == ids.replid2.as_bytes()
                && ids.replid2 != NO_ID
                && i64::try_from(offset).is_ok_and(|o| o <= ids.second_offset)
    }

    /// What this server replicates, when it is a replica.
    pub fn upstream(&self) -> Option<Upstream> {
        self.upstream.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The `FAILOVER` under way (a copy).
    pub fn failover(&self) -> Failover {
        self.lock_failover().clone()
    }

    pub fn lock_failover(&self) -> MutexGuard<'_, Failover> {
        self.failover.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether this server is a replica.
    pub fn is_replica(&self) -> bool {
        self.stream_from_place.load(Ordering::Acquire) == u64::MAX
    }

    /// The [`refuse`] bits now.
    #[inline]
    pub fn refusals(&self) -> u8 {
        self.refusals.load(Ordering::Relaxed)
    }

    /// Work the [`refuse`] bits out again from the role, the link and the
    /// settings.
    pub fn update_refusals(&self, read_only: bool, serve_stale: bool, min: MinReplicas) {
        let mut bits = 0;
        if self.is_replica() {
            if read_only {
                bits |= refuse::WRITES;
            }
            if !serve_stale && self.link.state() != UpstreamState::Connected {
                bits |= refuse::STALE;
            }
        }
        let good = self.good_replicas(min.max_lag_s);
        self.good_replicas.store(good, Ordering::Relaxed);
        if min.on() && !self.is_replica() && good < min.to_write {
            bits |= refuse::NOREPLICAS;
        }
        self.refusals.store(bits, Ordering::Relaxed);
    }

    /// Online replicas that acknowledged within `max_lag_s` seconds
    /// (Redis's "good" replicas; its clock is whole seconds).
    fn good_replicas(&self, max_lag_s: i64) -> usize {
        let now_s = crate::keyspace::now_ms() / 1000;
        let inner = self.lock();
        inner
            .placed
            .iter()
            .filter(|l| l.state() == LinkState::Online)
            .filter(|l| now_s - l.ack_time_ms.load(Ordering::Relaxed) / 1000 <= max_lag_s)
            .count()
    }

    /// `min_slaves_good_slaves`, as last counted.
    pub fn good_replicas_counted(&self) -> usize {
        self.good_replicas.load(Ordering::Relaxed)
    }

    /// Become a replica of `upstream` (with the apply gate held): the feed
    /// stops appending, the link of any earlier master stops.
    pub fn follow(&self, upstream: Upstream) -> u64 {
        *self.upstream.lock().unwrap_or_else(|p| p.into_inner()) = Some(upstream);
        self.stream_from_place.store(u64::MAX, Ordering::Release);
        crate::log::set_replica(true);
        self.link.set_state(UpstreamState::Connect);
        self.link.down_since_ms.store(0, Ordering::Relaxed);
        let generation = self.link.generation.fetch_add(1, Ordering::AcqRel) + 1;
        self.link.cut();
        generation
    }

    /// Stop being a replica (`REPLICAOF NO ONE`), every shard held and
    /// `next_place` the next place of the order of changes: the stream
    /// takes a new id, keeps the old one for what came before (PSYNC2),
    /// and goes on with this server's own changes from `next_place`.
    pub fn promote(&self, next_place: u64) {
        *self.upstream.lock().unwrap_or_else(|p| p.into_inner()) = None;
        crate::log::set_replica(false);
        self.link.generation.fetch_add(1, Ordering::AcqRel);
        self.link.cut();
        self.link.set_state(UpstreamState::Connect);
        let mut ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        ids.replid2 = std::mem::replace(&mut ids.replid, hex_id());
        ids.second_offset = i64::try_from(self.offset()).unwrap_or(i64::MAX).saturating_add(1);
        drop(ids);
        self.stream_from_place.store(next_place, Ordering::Release);
    }

    /// Whether the feed appends the record of place `seq`.
    #[inline]
    pub fn streams_place(&self, seq: u64) -> bool {
        seq >= self.stream_from_place.load(Ordering::Acquire)
    }

    /// A full resync from the master loaded: the stream is the master's,
    /// `replid` at `offset`, and starts empty there.
    pub fn restart_at(&self, replid: &str, offset: u64) {
        let mut inner = self.lock();
        let mut ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        *ids = Ids { replid: replid.to_string(), replid2: NO_ID.into(), second_offset: -1 };
        drop(ids);
        inner.backlog.clear();
        inner.active = true;
        self.offset.store(offset, Ordering::Release);
        // Its own replicas follow another stream now: they sync again.
        for link in inner.placed.drain(..) {
            link.dropped.store(true, Ordering::Release);
            link.wake.notify_one();
        }
    }

    /// A partial resync from the master (`+CONTINUE <replid>`): when the
    /// master's id changed (it was promoted), the stream takes it and
    /// keeps the old one for what came before.
    pub fn continue_as(&self, replid: &str) {
        let mut ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        if ids.replid != replid {
            ids.replid2 = std::mem::replace(&mut ids.replid, replid.to_string());
            ids.second_offset = i64::try_from(self.offset()).unwrap_or(i64::MAX).saturating_add(1);
        }
    }

    /// Whether the stream has a backlog (a full resync, or a replica, ever).
    pub fn active(&self) -> bool {
        self.lock().active
    }

    /// Give `link` its place at the stream's end now (a replica's own
    /// replica, at its snapshot's moment).
    pub fn place_at_end(&self, link: &Arc<Link>) {
        let mut inner = self.lock();
        inner.active = true;
        inner.no_replicas_since_ms = 0;
        link.sent.store(self.offset(), Ordering::Release);
        link.wake.notify_one();
        inner.placed.push(Arc::clone(link));
    }

    /// `master_repl_offset`.
    pub fn offset(&self) -> u64 {
        self.offset.load(Ordering::Acquire)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// At a snapshot's moment (every shard held, `cut` the last place it
    /// holds): `link` gets its place in the stream once the feed has put
    /// every place up to `cut` in it.
    pub fn attach(&self, cut: u64, link: Arc<Link>) {
        let mut inner = self.lock();
        inner.active = true;
        inner.no_replicas_since_ms = 0;
        inner.attaching.push((cut, link));
        self.lowest_cut.fetch_min(cut, Ordering::AcqRel);
    }

    /// Whether a replica attaching takes its place before place `next`
    /// ([`Replication::reached`] places it).
    #[inline]
    pub fn placing_before(&self, next: u64) -> bool {
        self.lowest_cut.load(Ordering::Acquire) < next
    }

    fn update_lowest_cut(&self, inner: &Inner) {
        let lowest = inner.attaching.iter().map(|(cut, _)| *cut).min().unwrap_or(u64::MAX);
        self.lowest_cut.store(lowest, Ordering::Release);
    }

    /// Give `link` its place at `from`, the offset of the first byte it
    /// wants (`PSYNC`'s offset), when the backlog still holds it (or it is
    /// the next byte): a partial resync. False when it cannot be served.
    pub fn place_at(&self, link: &Arc<Link>, from: u64) -> bool {
        let mut inner = self.lock();
        let end = self.offset();
        let first = end + 1 - inner.backlog.len() as u64;
        if !inner.active || from < first || from > end + 1 {
            return false;
        }
        link.sent.store(from - 1, Ordering::Release);
        inner.placed.push(Arc::clone(link));
        true
    }

    /// For the feed, before it appends place `next` (and after each
    /// round): replicas whose snapshot holds every place before `next`
    /// take their place at the stream's end. Returns whether one did.
    pub fn reached(&self, next: u64) -> bool {
        let mut inner = self.lock();
        if inner.attaching.is_empty() {
            return false;
        }
        let end = self.offset();
        let mut placed = false;
        let mut i = 0;
        while i < inner.attaching.len() {
            if inner.attaching[i].0 < next {
                let (_, link) = inner.attaching.swap_remove(i);
                link.sent.store(end, Ordering::Release);
                link.wake.notify_one();
                inner.placed.push(link);
                placed = true;
            } else {
                i += 1;
            }
        }
        inner.select_again |= placed;
        self.update_lowest_cut(&inner);
        placed
    }

    /// Whether the next operation must follow a `SELECT` (a replica got
    /// its place since the last call).
    pub fn take_select_again(&self) -> bool {
        std::mem::take(&mut self.lock().select_again)
    }

    /// Append `bytes` to the stream, keeping the last `backlog_size`
    /// bytes and what the replicas still have to take, within `limit`.
    pub fn append(&self, bytes: &[u8], backlog_size: usize, limit: OutputLimit) {
        if bytes.is_empty() {
            return;
        }
        let mut inner = self.lock();
        if !inner.active {
            // No backlog, no replica: nothing keeps the bytes.
            return;
        }
        inner.backlog.extend(bytes);
        let end = self.offset.fetch_add(bytes.len() as u64, Ordering::AcqRel) + bytes.len() as u64;
        let now_ms = crate::keyspace::now_ms();
        inner.placed.retain(|link| {
            let Some(sent) = link.sent() else { return true };
            let behind = end - sent;
            let over_hard = limit.hard > 0 && behind > limit.hard;
            let over_soft = limit.soft > 0 && limit.soft_seconds > 0 && behind > limit.soft;
            let since = link.over_soft_since_ms.load(Ordering::Relaxed);
            let soft_expired = over_soft && since > 0 && now_ms - since > (limit.soft_seconds * 1000) as i64;
            if over_soft && since == 0 {
                link.over_soft_since_ms.store(now_ms, Ordering::Relaxed);
            } else if !over_soft {
                link.over_soft_since_ms.store(0, Ordering::Relaxed);
            }
            if over_hard || soft_expired {
                crate::log!(
                    Warning,
                    "Client id={} addr={}:{} closed for overcoming of output buffer limits.",
                    link.client_id,
                    link.ip,
                    link.port
                );
                link.dropped.store(true, Ordering::Release);
                link.wake.notify_one();
                return false;
            }
            link.wake.notify_one();
            true
        });
        let needed = inner.placed.iter().filter_map(|l| l.sent()).min().map_or(end, |s| s);
        let keep_from = end.saturating_sub(backlog_size as u64).min(needed);
        let first = end + 1 - inner.backlog.len() as u64;
        let drop = keep_from.saturating_sub(first - 1).min(inner.backlog.len() as u64) as usize;
        inner.backlog.drain(..drop);
    }

    /// Copy into `out` (emptied first) the stream's bytes after `link`'s
    /// place, at most [`TAKE_BYTES`], moving its place past them.
    pub fn take_for(&self, link: &Link, out: &mut Vec<u8>) {
        out.clear();
        let Some(sent) = link.sent() else { return };
        let inner = self.lock();
        let end = self.offset();
        if sent >= end {
            return;
        }
        let first = end + 1 - inner.backlog.len() as u64;
        let Some(skip) = (sent + 1).checked_sub(first) else {
            // Trimmed past it: it was dropped, and its connection closes.
            return;
        };
        let take = ((end - sent) as usize).min(TAKE_BYTES);
        let (a, b) = inner.backlog.as_slices();
        let skip = skip as usize;
        if skip < a.len() {
            let from_a = (a.len() - skip).min(take);
            out.extend_from_slice(&a[skip..skip + from_a]);
            out.extend_from_slice(&b[..take - from_a]);
        } else {
            let at = skip - a.len();
            out.extend_from_slice(&b[at..at + take]);
        }
        link.sent.store(sent + take as u64, Ordering::Release);
    }

    /// Forget `link` (its connection ends).
    pub fn detach(&self, link: &Arc<Link>) {
        let mut inner = self.lock();
        inner.placed.retain(|l| !Arc::ptr_eq(l, link));
        inner.attaching.retain(|(_, l)| !Arc::ptr_eq(l, link));
        inner.waiting.retain(|w| !Arc::ptr_eq(&w.link, link));
        if inner.no_replicas() {
            inner.no_replicas_since_ms = crate::keyspace::now_ms();
        }
        self.update_lowest_cut(&inner);
    }

    /// A master's backlog goes once it has had no replica for `ttl_s`
    /// seconds (`repl-backlog-ttl`; 0: never), and the stream takes a new
    /// id, as Redis does: without a backlog the offset stands still, so
    /// the old id at a later offset would name other bytes. A replica keeps
    /// its backlog, to serve partial resyncs if it is promoted. Returns
    /// whether it went now.
    pub fn free_idle_backlog(&self, ttl_s: i64, now_ms: i64) -> bool {
        let mut inner = self.lock();
        let idle = inner.no_replicas() && inner.no_replicas_since_ms > 0;
        if ttl_s <= 0 || !inner.active || !idle || self.is_replica() {
            return false;
        }
        if now_ms - inner.no_replicas_since_ms <= ttl_s.saturating_mul(1000) {
            return false;
        }
        inner.active = false;
        inner.backlog = VecDeque::new();
        drop(inner);
        let mut ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        *ids = Ids { replid: hex_id(), replid2: NO_ID.into(), second_offset: -1 };
        true
    }

    /// `link` waits for a diskless snapshot, which its connection takes
    /// from `sink`.
    pub fn wait_for_diskless(&self, link: Arc<Link>, sink: crate::registries::saves::PieceSender) {
        let mut inner = self.lock();
        inner.no_replicas_since_ms = 0;
        inner.waiting.push(Waiting { link, sink, since: std::time::Instant::now() });
    }

    /// Whether `link` still waits for its diskless snapshot to begin.
    pub fn is_waiting(&self, link: &Arc<Link>) -> bool {
        self.lock().waiting.iter().any(|w| Arc::ptr_eq(&w.link, link))
    }

    /// Whether the waiting replicas' snapshot is due: the first has waited
    /// `delay`, or `max` (when above 0) are waiting.
    pub fn waiting_due(&self, delay: std::time::Duration, max: usize) -> bool {
        let inner = self.lock();
        let first_waited = inner.waiting.first().is_some_and(|w| w.since.elapsed() >= delay);
        first_waited || max > 0 && inner.waiting.len() >= max
    }

    /// Every waiting replica, which the snapshot about to begin serves.
    pub fn take_waiting(&self) -> Vec<Waiting> {
        std::mem::take(&mut self.lock().waiting)
    }

    /// The snapshot could not begin: they wait again, first as before.
    pub fn put_back_waiting(&self, mut waiting: Vec<Waiting>) {
        let mut inner = self.lock();
        waiting.append(&mut inner.waiting);
        inner.waiting = waiting;
    }

    /// Every replica, placed, attaching or waiting, in the order they came.
    pub fn replicas(&self) -> Vec<Arc<Link>> {
        let inner = self.lock();
        let waiting = inner.waiting.iter().map(|w| &w.link);
        let mut all: Vec<Arc<Link>> =
            inner.placed.iter().chain(inner.attaching.iter().map(|(_, l)| l)).chain(waiting).cloned().collect();
        all.sort_by_key(|l| l.client_id);
        all
    }

    /// Whether any replica has a place in the stream (the feed sends
    /// its pings only then).
    pub fn streaming(&self) -> bool {
        !self.lock().placed.is_empty()
    }

    pub fn backlog(&self) -> BacklogFigures {
        let inner = self.lock();
        let histlen = inner.backlog.len() as u64;
        let end = self.offset();
        BacklogFigures {
            active: inner.active,
            first_byte_offset: if inner.active { end + 1 - histlen } else { 0 },
            histlen,
        }
    }

    /// The number of snapshots for replicas finished so far.
    pub fn snapshots_done(&self) -> u64 {
        self.snapshots.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    /// How the snapshot after the first `done` ones went, once it has.
    pub fn snapshot_after(&self, done: u64) -> Option<SnapshotOutcome> {
        let guard = self.snapshots.lock().unwrap_or_else(|p| p.into_inner());
        if guard.0 > done {
            guard.1.clone()
        } else {
            None
        }
    }

    /// A snapshot for replicas is written (or failed).
    pub fn snapshot_done(&self, outcome: SnapshotOutcome) {
        let mut guard = self.snapshots.lock().unwrap_or_else(|p| p.into_inner());
        guard.0 += 1;
        guard.1 = Some(outcome);
        drop(guard);
        self.snapshot_wake.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(id: u64) -> Arc<Link> {
        Arc::new(Link::new(id, "127.0.0.1".into(), 1))
    }

    #[test]
    fn a_replica_takes_the_stream_from_its_place_and_the_backlog_keeps_its_size() {
        let r = Replication::default();
        let a = link(1);
        r.attach(5, Arc::clone(&a));
        let limit = OutputLimit::default();
        r.append(b"before", 4, limit);
        assert!(!r.reached(5), "place 5 is not in the stream yet");
        assert!(r.reached(6) && r.take_select_again());
        assert_eq!(a.sent(), Some(6));
        r.append(b"abcdefgh", 4, limit);
        let mut out = Vec::new();
        r.take_for(&a, &mut out);
        assert_eq!(out, b"abcdefgh");
        r.take_for(&a, &mut out);
        assert!(out.is_empty());
        r.append(b"ij", 4, limit);
        let b = r.backlog();
        assert_eq!((b.first_byte_offset, b.histlen), (13, 4), "only the last four bytes");
        let late = link(2);
        assert!(!r.place_at(&late, 12), "no longer held");
        assert!(r.place_at(&late, 13));
        r.take_for(&late, &mut out);
        assert_eq!(out, b"ghij");
    }

    #[test]
    fn a_replica_too_far_behind_is_dropped_and_lets_the_buffer_go() {
        let r = Replication::default();
        let a = link(1);
        r.attach(0, Arc::clone(&a));
        r.reached(1);
        let limit = OutputLimit { hard: 10, soft: 0, soft_seconds: 0 };
        r.append(b"0123456789", 2, limit);
        assert_eq!(r.backlog().histlen, 10, "kept for the replica");
        r.append(b"x", 2, limit);
        assert!(a.dropped());
        assert_eq!(r.backlog().histlen, 2);
        assert!(r.replicas().is_empty());
    }

    #[test]
    fn the_backlog_goes_after_its_ttl_without_replicas_and_the_id_changes() {
        let r = Replication::default();
        let a = link(1);
        r.attach(0, Arc::clone(&a));
        r.reached(1);
        let limit = OutputLimit::default();
        r.append(b"abc", 100, limit);
        let id = r.replid();
        assert!(!r.free_idle_backlog(1, i64::MAX), "a replica is attached");
        r.detach(&a);
        let left_ms = crate::keyspace::now_ms();
        assert!(!r.free_idle_backlog(0, i64::MAX), "ttl 0 keeps it");
        assert!(!r.free_idle_backlog(10, left_ms + 10_000), "not yet");
        assert!(r.free_idle_backlog(10, left_ms + 10_001));
        let b = r.backlog();
        assert!(!b.active && b.histlen == 0);
        assert_ne!(r.replid(), id);
        assert!(!r.continues(id.as_bytes(), 1), "the old id no longer continues");
        r.append(b"def", 100, limit);
        assert_eq!(r.offset(), 3, "the offset stands still without a backlog");
    }
}
