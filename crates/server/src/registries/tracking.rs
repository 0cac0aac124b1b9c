//! Server-assisted client-side caching (`CLIENT TRACKING`).
//!
//! A tracking client caches what it reads; the server remembers which keys
//! each client may hold and tells it when one changes, so it can drop the
//! stale copy. Two ways to follow keys, as in Redis 7.0:
//! - default mode: every key a read-only command of the client reads is
//!   remembered (under its name alone, whatever the database), and the
//!   first change of it afterwards sends one invalidation and forgets it;
//! - `BCAST`: the client names prefixes and hears about every change of a
//!   key starting with one, without reads being remembered. Those
//!   invalidations are gathered and sent together once the writer's batch
//!   of commands is done, one message per prefix, as Redis sends them
//!   before it next waits for input.
//!
//! Messages travel through the receiving client's inbox (the pub/sub
//! [`Subscriber`]), which only its own connection drains, so a writer never
//! touches another client's socket. A RESP3 client gets them as pushes on
//! its own connection; a RESP2 client needs `REDIRECT` to a client that is
//! subscribed, which gets them as messages on `__redis__:invalidate`.
//!
//! The key table is split in shards by key hash, so reads and writes of
//! different keys on different threads rarely meet on a lock, and nothing
//! is locked while no client tracks: every key change first loads two
//! counters (keys and prefixes), which stay 0. Reads are remembered before
//! the command reads the keys, so a change made on another thread between
//! the read and the remembering cannot go unannounced.
//! `tracking-table-max-keys` bounds the table: past it, keys are forgotten
//! (and their clients told) to make room.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::mem;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::events::Hub;
use crate::registries::clients::{ClientRegistry, TrackingShown as Shown};
use crate::registries::pubsub::{Message, Subscriber, Subscriptions};

/// Most keys forgotten in one go to get back under `tracking-table-max-keys`;
/// the rest goes on the next read, so lowering the limit never stalls a
/// command for long.
const EVICT_BATCH: usize = 10_000;

/// How one tracking client wants its invalidations, as the table needs it.
#[derive(Debug)]
struct Tracker {
    redirect: u64,
    bcast: bool,
    noloop: bool,
    /// The client's protocol, for the null a flush sends.
    resp3: bool,
    shown: Arc<Shown>,
}

/// The clients that may have one key cached. Most keys are read by one
/// client, which needs no set of its own.
#[derive(Debug)]
enum Readers {
    One(u64),
    Many(HashSet<u64>),
}

impl Readers {
    /// Add `id`; false when it was there.
    fn insert(&mut self, id: u64) -> bool {
        match self {
            Readers::One(only) if *only == id => false,
            Readers::One(only) => {
                *self = Readers::Many(HashSet::from([*only, id]));
                true
            }
            Readers::Many(ids) => ids.insert(id),
        }
    }

    /// The clients, in id order.
    fn into_sorted(self) -> Vec<u64> {
        match self {
            Readers::One(id) => vec![id],
            Readers::Many(ids) => {
                let mut ids: Vec<u64> = ids.into_iter().collect();
                ids.sort_unstable();
                ids
            }
        }
    }
}

/// One `BCAST` prefix: the clients following it and the changed keys not
/// yet sent, each with the client that changed it last (for `NOLOOP`).
#[derive(Debug, Default)]
struct Prefix {
    clients: BTreeSet<u64>,
    pending: BTreeMap<Box<[u8]>, u64>,
}

/// Number of key table shards: reads and writes of different keys on
/// different threads rarely meet on one lock.
const SHARDS: usize = 64;

/// Key name → clients that may have it cached: one shard of the table.
type KeyShard = HashMap<Box<[u8]>, Readers>;

/// The tracking clients and where to reach every client that can receive.
#[derive(Debug, Default)]
struct Clients {
    trackers: HashMap<u64, Tracker>,
    /// Where to deliver to each client that can receive messages now.
    mailboxes: HashMap<u64, Arc<Subscriber>>,
}

/// Where messages go and how big a backlog a receiver may have.
struct Post<'a> {
    clients: &'a ClientRegistry,
    limit: crate::registries::pubsub::QueueLimit,
}

/// The server's tracking state.
///
/// Locks, never more than one of a kind at a time and always in this
/// order: a key shard or the prefixes, then the clients (read). The
/// clients are written only with no other of these locks held.
#[derive(Debug)]
pub struct Tracking {
    /// Clients with tracking on (`tracking_clients`).
    clients_on: AtomicUsize,
    /// Keys in the table (`tracking_total_keys`): with `prefix_count`, 0
    /// means a change has nothing to do.
    keys: AtomicUsize,
    /// Sum of the clients over all keys (`tracking_total_items`).
    items: AtomicUsize,
    /// Prefixes followed (`tracking_total_prefixes`).
    prefix_count: AtomicUsize,
    /// Whether `BCAST` invalidations wait to be sent.
    pending: AtomicBool,
    /// `tracking-table-max-keys` (0: no limit).
    max_keys: AtomicUsize,
    /// Where eviction looks for keys next.
    evict_from: AtomicUsize,
    shards: Box<[Mutex<KeyShard>]>,
    prefixes: Mutex<BTreeMap<Box<[u8]>, Prefix>>,
    clients: RwLock<Clients>,
    /// Told of every client that starts or stops tracking, so that keys
    /// the server expires or evicts are announced while anyone tracks.
    hub: OnceLock<Arc<Hub>>,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            clients_on: AtomicUsize::new(0),
            keys: AtomicUsize::new(0),
            items: AtomicUsize::new(0),
            prefix_count: AtomicUsize::new(0),
            pending: AtomicBool::new(false),
            max_keys: AtomicUsize::new(0),
            evict_from: AtomicUsize::new(0),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            prefixes: Mutex::new(BTreeMap::new()),
            clients: RwLock::new(Clients::default()),
            hub: OnceLock::new(),
        }
    }
}

/// The options of `CLIENT TRACKING ON`.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// `REDIRECT` target (0: none).
    pub redirect: u64,
    /// `BCAST`.
    pub bcast: bool,
    /// `OPTIN`.
    pub optin: bool,
    /// `OPTOUT`.
    pub optout: bool,
    /// `NOLOOP`.
    pub noloop: bool,
    /// `PREFIX`es, for `BCAST`.
    pub prefixes: Vec<Box<[u8]>>,
}

/// `INFO` numbers: keys, items and prefixes in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    /// `tracking_total_keys`.
    pub keys: usize,
    /// `tracking_total_items`.
    pub items: usize,
    /// `tracking_total_prefixes`.
    pub prefixes: usize,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Tracking {
    fn shard(&self, key: &[u8]) -> MutexGuard<'_, KeyShard> {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        locked(&self.shards[(h.finish() as usize) % SHARDS])
    }

    fn read_clients(&self) -> RwLockReadGuard<'_, Clients> {
        self.clients.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_clients(&self) -> RwLockWriteGuard<'_, Clients> {
        self.clients.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Set `tracking-table-max-keys`.
    pub fn set_max_keys(&self, max: usize) {
        self.max_keys.store(max, Ordering::Relaxed);
    }

    /// Number of clients with tracking on.
    pub fn clients_on(&self) -> usize {
        self.clients_on.load(Ordering::Relaxed)
    }

    /// The numbers `INFO` shows.
    pub fn totals(&self) -> Totals {
        Totals {
            keys: self.keys.load(Ordering::Relaxed),
            items: self.items.load(Ordering::Relaxed),
            prefixes: self.prefix_count.load(Ordering::Relaxed),
        }
    }

    /// Report clients that start and stop tracking to `hub` from now on.
    pub fn attach_hub(&self, hub: Arc<Hub>) {
        let _ = self.hub.set(hub);
    }

    /// Deliver messages for client `id` to `mailbox` from now on.
    pub fn set_mailbox(&self, id: u64, mailbox: Arc<Subscriber>) {
        self.write_clients().mailboxes.insert(id, mailbox);
    }

    /// Start (or change) tracking for client `id`; `resp3` is its protocol now.
    fn enable(&self, id: u64, options: &Options, resp3: bool) -> Arc<Shown> {
        let shown = Arc::new(Shown::new(options.redirect, options.bcast));
        let tracker = Tracker {
            redirect: options.redirect,
            bcast: options.bcast,
            noloop: options.noloop,
            resp3,
            shown: Arc::clone(&shown),
        };
        if self.write_clients().trackers.insert(id, tracker).is_none() {
            self.clients_on.fetch_add(1, Ordering::Relaxed);
            if let Some(hub) = self.hub.get() {
                hub.add_consumer();
            }
        }
        if options.bcast {
            let empty: [Box<[u8]>; 1] = [Box::from(&b""[..])];
            let given = if options.prefixes.is_empty() { &empty[..] } else { &options.prefixes[..] };
            let mut prefixes = locked(&self.prefixes);
            for p in given {
                prefixes.entry(p.clone()).or_default().clients.insert(id);
            }
            self.prefix_count.store(prefixes.len(), Ordering::Relaxed);
        }
        shown
    }

    /// Stop tracking for client `id`, which followed `followed`. The keys
    /// it read stay in the table until they change, as in Redis.
    fn disable(&self, id: u64, followed: &BTreeSet<Box<[u8]>>) {
        if self.write_clients().trackers.remove(&id).is_some() {
            self.clients_on.fetch_sub(1, Ordering::Relaxed);
            if let Some(hub) = self.hub.get() {
                hub.remove_consumer();
            }
        }
        if followed.is_empty() {
            return;
        }
        let mut prefixes = locked(&self.prefixes);
        for p in followed {
            if let Some(prefix) = prefixes.get_mut(p) {
                prefix.clients.remove(&id);
                if prefix.clients.is_empty() {
                    prefixes.remove(p);
                }
            }
        }
        self.prefix_count.store(prefixes.len(), Ordering::Relaxed);
    }

    /// Client `id` is gone.
    fn forget_client(&self, id: u64, followed: &BTreeSet<Box<[u8]>>) {
        self.disable(id, followed);
        self.write_clients().mailboxes.remove(&id);
    }

    /// Client `id` now speaks RESP3 (or not).
    fn set_resp3(&self, id: u64, resp3: bool) {
        if let Some(t) = self.write_clients().trackers.get_mut(&id) {
            t.resp3 = resp3;
        }
    }

    /// Remember that client `id` may cache `keys`, then forget keys past
    /// `tracking-table-max-keys`, telling their clients.
    fn remember<'k>(&self, post: &Post<'_>, id: u64, keys: impl Iterator<Item = &'k [u8]>) {
        for key in keys {
            let mut shard = self.shard(key);
            // Counted under the shard lock, before the command reads the
            // key: a writer that changes it afterwards sees the count.
            let added = match shard.get_mut(key) {
                Some(readers) => readers.insert(id),
                None => {
                    shard.insert(Box::from(key), Readers::One(id));
                    self.keys.fetch_add(1, Ordering::Relaxed);
                    true
                }
            };
            if added {
                self.items.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.evict(post);
    }

    /// Forget keys past a lowered `tracking-table-max-keys` now, telling
    /// their clients, rather than at the next read.
    pub fn enforce_max_keys(&self, clients: &ClientRegistry, limit: crate::registries::pubsub::QueueLimit) {
        self.evict(&Post { clients, limit });
    }

    /// Forget keys (a batch at most) until the table is within
    /// `tracking-table-max-keys`, telling their clients.
    fn evict(&self, post: &Post<'_>) {
        let max = self.max_keys.load(Ordering::Relaxed);
        let count = self.keys.load(Ordering::Relaxed);
        if max == 0 || count <= max {
            return;
        }
        let mut excess = (count - max).min(EVICT_BATCH);
        let start = self.evict_from.fetch_add(1, Ordering::Relaxed);
        let mut gone = Vec::new();
        for i in 0..SHARDS {
            if excess == 0 {
                break;
            }
            let mut shard = locked(&self.shards[(start + i) % SHARDS]);
            let victims: Vec<Box<[u8]>> = shard.keys().take(excess).cloned().collect();
            for key in victims {
                if let Some(readers) = shard.remove(&key) {
                    excess -= 1;
                    gone.push((key, self.forget(readers)));
                }
            }
        }
        let clients = self.read_clients();
        for (key, ids) in gone {
            clients.tell_readers(post, &key, ids, 0);
        }
    }

    /// Take a key's readers out of the counts; their ids, in order.
    fn forget(&self, readers: Readers) -> Vec<u64> {
        let ids = readers.into_sorted();
        self.keys.fetch_sub(1, Ordering::Relaxed);
        self.items.fetch_sub(ids.len(), Ordering::Relaxed);
        ids
    }

    /// `key` changed, by client `by_client` (0: the server itself).
    /// Whether no client has a tracked key or a `BCAST` prefix: then a
    /// change to a key has no one to tell (two relaxed loads).
    #[inline]
    pub fn idle(&self) -> bool {
        self.keys.load(Ordering::Relaxed) == 0 && self.prefix_count.load(Ordering::Relaxed) == 0
    }

    pub fn key_changed(
        &self,
        clients: &ClientRegistry,
        limit: crate::registries::pubsub::QueueLimit,
        key: &[u8],
        by_client: u64,
    ) {
        let tracked = self.keys.load(Ordering::Relaxed) > 0;
        let followed = self.prefix_count.load(Ordering::Relaxed) > 0;
        if !tracked && !followed {
            return;
        }
        let post = Post { clients, limit };
        if followed && self.queue_broadcast(key, by_client) && by_client == 0 {
            // Changes the server makes on its own have no batch to end.
            self.flush_broadcasts(clients, limit);
        }
        if tracked {
            let Some(readers) = self.shard(key).remove(key) else { return };
            let ids = self.forget(readers);
            self.read_clients().tell_readers(&post, key, ids, by_client);
        }
    }

    /// Note `key` for the `BCAST` prefixes it starts with; whether any.
    fn queue_broadcast(&self, key: &[u8], by_client: u64) -> bool {
        let mut queued = false;
        for (p, prefix) in locked(&self.prefixes).iter_mut() {
            if key.starts_with(p) {
                prefix.pending.insert(Box::from(key), by_client);
                queued = true;
            }
        }
        if queued {
            self.pending.store(true, Ordering::Relaxed);
        }
        queued
    }

    /// Every key of some database (or of all) was deleted: every tracking
    /// client is told to drop everything, and the table starts over.
    pub fn flushed(&self, clients: &ClientRegistry, limit: crate::registries::pubsub::QueueLimit) {
        if self.clients_on() == 0 && self.keys.load(Ordering::Relaxed) == 0 {
            return;
        }
        for shard in self.shards.iter() {
            let mut shard = locked(shard);
            for (_, readers) in shard.drain() {
                self.forget(readers);
            }
        }
        let post = Post { clients, limit };
        let clients = self.read_clients();
        let mut ids: Vec<u64> = clients.trackers.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            clients.send(&post, id, None);
        }
    }

    /// Send the `BCAST` invalidations gathered since the last call.
    pub fn flush_broadcasts(&self, clients: &ClientRegistry, limit: crate::registries::pubsub::QueueLimit) {
        if !self.pending.swap(false, Ordering::Relaxed) {
            return;
        }
        let mut batches = Vec::new();
        for prefix in locked(&self.prefixes).values_mut() {
            if !prefix.pending.is_empty() {
                let pending = mem::take(&mut prefix.pending);
                batches.push((prefix.clients.iter().copied().collect::<Vec<u64>>(), pending));
            }
        }
        let post = Post { clients, limit };
        let clients = self.read_clients();
        for (ids, pending) in batches {
            for id in ids {
                let noloop = clients.trackers.get(&id).is_some_and(|t| t.noloop);
                let keys: Vec<Box<[u8]>> =
                    pending.iter().filter(|(_, by)| !(noloop && **by == id)).map(|(k, _)| k.clone()).collect();
                if !keys.is_empty() {
                    clients.send(&post, id, Some(keys));
                }
            }
        }
    }
}

impl Clients {
    /// Tell the default-mode clients `ids` that read `key` that it changed.
    fn tell_readers(&self, post: &Post<'_>, key: &[u8], ids: Vec<u64>, by_client: u64) {
        for id in ids {
            let Some(t) = self.trackers.get(&id) else { continue };
            if t.bcast || (t.noloop && id == by_client) {
                continue;
            }
            self.send(post, id, Some(vec![Box::from(key)]));
        }
    }

    /// Deliver an invalidation (`None`: of everything) for tracking client
    /// `id`, to it or to its redirect target.
    fn send(&self, post: &Post<'_>, id: u64, keys: Option<Vec<Box<[u8]>>>) {
        let Some(t) = self.trackers.get(&id) else { return };
        let null_resp3 = t.resp3;
        if t.redirect == 0 {
            if let Some(own) = self.mailboxes.get(&id) {
                own.deliver(Message::Invalidate { keys, redirected: false, null_resp3 }, post.limit);
            }
            return;
        }
        if let Some(target) = self.mailboxes.get(&t.redirect) {
            target.deliver(Message::Invalidate { keys, redirected: true, null_resp3 }, post.limit);
        } else if !post.clients.contains(t.redirect) {
            t.shown.mark_broken();
            if let Some(own) = self.mailboxes.get(&id) {
                own.deliver(Message::RedirectBroken { to: t.redirect }, post.limit);
            }
        }
        // A target that exists but cannot receive (RESP2, not subscribed)
        // gets nothing, as in Redis.
    }
}

/// One client's tracking settings, kept in its session.
///
/// Dropping it (the client went away) takes the client out of the table.
#[derive(Debug)]
pub struct ClientTracking {
    id: u64,
    registry: Option<Arc<Tracking>>,
    /// Whether the client has a connection of its own to receive on.
    receives: bool,
    /// The inbox registered as the client's mailbox.
    mailbox: Option<Arc<Subscriber>>,
    /// The protocol last told to the table.
    resp3: bool,
    on: bool,
    options: Options,
    /// `CLIENT CACHING` was given for the next command.
    caching: bool,
    /// The prefixes followed in `BCAST` mode, sorted as Redis lists them.
    prefixes: BTreeSet<Box<[u8]>>,
    shown: Option<Arc<Shown>>,
}

impl ClientTracking {
    /// Tracking off, for client `id`, not attached to a server.
    pub fn new(id: u64) -> Self {
        ClientTracking {
            id,
            registry: None,
            receives: false,
            mailbox: None,
            resp3: false,
            on: false,
            options: Options::default(),
            caching: false,
            prefixes: BTreeSet::new(),
            shown: None,
        }
    }

    /// Tracking off, for client `id` of the server whose table is
    /// `registry`; `receives` when the client has a socket of its own.
    pub fn attached(id: u64, registry: Arc<Tracking>, receives: bool) -> Self {
        let mut t = ClientTracking::new(id);
        t.registry = Some(registry);
        t.receives = receives;
        t
    }

    /// Whether tracking is on (checked around every command).
    pub fn on(&self) -> bool {
        self.on
    }

    /// The options tracking was turned on with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Whether `CLIENT CACHING` applies to the next command.
    pub fn caching(&self) -> bool {
        self.caching
    }

    /// The `BCAST` prefixes, in order.
    pub fn prefixes(&self) -> impl Iterator<Item = &[u8]> + Clone {
        self.prefixes.iter().map(|p| &p[..])
    }

    /// What `CLIENT LIST` shows, while tracking is on.
    pub fn shown(&self) -> Option<&Arc<Shown>> {
        self.shown.as_ref()
    }

    /// Whether the redirect target was found gone.
    pub fn broken(&self) -> bool {
        self.shown.as_ref().is_some_and(|s| s.broken())
    }

    /// `CLIENT CACHING YES|NO` was accepted.
    pub fn set_caching(&mut self) {
        self.caching = true;
    }

    /// The command that ran was not a `CLIENT` subcommand: `CLIENT CACHING`
    /// covered it and is used up.
    pub fn command_done(&mut self) {
        self.caching = false;
    }

    /// Whether the next read-only command's keys are remembered.
    pub fn remembers_reads(&self) -> bool {
        let o = &self.options;
        // OPTIN remembers only after CACHING YES, OPTOUT all but after CACHING NO.
        let wanted = if o.optin {
            self.caching
        } else if o.optout {
            !self.caching
        } else {
            true
        };
        self.on && !o.bcast && wanted
    }

    /// `CLIENT TRACKING ON` with `options` (already checked). As in Redis,
    /// turning it on again replaces the mode and the redirect, and adds
    /// prefixes to those followed.
    pub fn enable(&mut self, registry: &Arc<Tracking>, options: Options, resp3: bool) {
        if self.registry.is_none() {
            self.registry = Some(Arc::clone(registry));
        }
        self.resp3 = resp3;
        let shown = registry.enable(self.id, &options, resp3);
        if options.bcast {
            if options.prefixes.is_empty() {
                self.prefixes.insert(Box::from(&b""[..]));
            }
            self.prefixes.extend(options.prefixes.iter().cloned());
        }
        self.on = true;
        self.options = Options { prefixes: Vec::new(), ..options };
        self.shown = Some(shown);
    }

    /// `CLIENT TRACKING OFF` (also RESET).
    pub fn disable(&mut self) {
        if !self.on {
            return;
        }
        if let Some(registry) = &self.registry {
            registry.disable(self.id, &self.prefixes);
        }
        self.on = false;
        self.caching = false;
        self.options = Options::default();
        self.prefixes.clear();
        self.shown = None;
    }

    /// Keep the table's view of the client current: its protocol, and the
    /// inbox other clients deliver to once it can receive (RESP3, or
    /// subscribed). Called when the protocol or the subscriptions changed,
    /// and when tracking is turned on.
    pub fn sync(&mut self, resp3: bool, subscriptions: &mut Subscriptions) {
        let Some(registry) = self.registry.clone() else { return };
        if self.on && resp3 != self.resp3 {
            registry.set_resp3(self.id, resp3);
        }
        self.resp3 = resp3;
        // A RESP2 client that listens to nothing cannot be sent anything.
        if !self.receives || !(resp3 || subscriptions.active()) {
            return;
        }
        let inbox = subscriptions.open_inbox();
        if self.mailbox.as_ref().is_some_and(|m| Arc::ptr_eq(m, &inbox)) {
            return;
        }
        registry.set_mailbox(self.id, Arc::clone(&inbox));
        self.mailbox = Some(inbox);
    }
}

impl Drop for ClientTracking {
    fn drop(&mut self) {
        if let Some(registry) = &self.registry {
            if self.on || self.mailbox.is_some() {
                registry.forget_client(self.id, &self.prefixes);
            }
        }
    }
}

/// Remember the keys `keys` a read-only command of client `id` is about to
/// read (see [`ClientTracking::remembers_reads`]).
pub fn remember<'k>(
    tracking: &Tracking,
    clients: &ClientRegistry,
    limit: crate::registries::pubsub::QueueLimit,
    id: u64,
    keys: impl Iterator<Item = &'k [u8]>,
) {
    tracking.remember(&Post { clients, limit }, id, keys);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registries::pubsub::{subscriber, Inbox};

    fn registry() -> Arc<ClientRegistry> {
        Arc::new(ClientRegistry::default())
    }

    /// A tracking client with a mailbox.
    fn client(t: &Arc<Tracking>, id: u64, options: Options) -> (ClientTracking, Inbox) {
        let inbox = subscriber(id, None);
        t.set_mailbox(id, Arc::clone(inbox.subscriber()));
        let mut c = ClientTracking::attached(id, Arc::clone(t), true);
        c.enable(t, options, true);
        (c, inbox)
    }

    fn keys_of(msg: Option<Message>) -> Option<Vec<Vec<u8>>> {
        match msg? {
            Message::Invalidate { keys, .. } => {
                Some(keys.unwrap_or_default().into_iter().map(|k| k.to_vec()).collect())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_read_key_is_invalidated_once() {
        let t = Arc::new(Tracking::default());
        let clients = registry();
        let (_c, mut inbox) = client(&t, 1, Options::default());
        remember(&t, &clients, crate::registries::pubsub::QueueLimit::NONE, 1, [&b"k"[..], b"k", b"j"].into_iter());
        assert_eq!(t.totals(), Totals { keys: 2, items: 2, prefixes: 0 });
        t.key_changed(&clients, crate::registries::pubsub::QueueLimit::NONE, b"k", 2);
        t.key_changed(&clients, crate::registries::pubsub::QueueLimit::NONE, b"k", 2);
        assert_eq!(keys_of(inbox.try_recv()), Some(vec![b"k".to_vec()]));
        assert!(inbox.try_recv().is_none(), "forgotten after the first change");
        assert_eq!(t.totals().keys, 1);
    }

    #[test]
    fn every_reader_of_a_key_is_told() {
        let t = Arc::new(Tracking::default());
        let clients = registry();
        let (_a, mut a) = client(&t, 1, Options::default());
        let (_b, mut b) = client(&t, 2, Options::default());
        for id in [1, 2, 1] {
            remember(&t, &clients, crate::registries::pubsub::QueueLimit::NONE, id, [&b"k"[..]].into_iter());
        }
        assert_eq!(t.totals(), Totals { keys: 1, items: 2, prefixes: 0 });
        t.key_changed(&clients, crate::registries::pubsub::QueueLimit::NONE, b"k", 3);
        assert_eq!(keys_of(a.try_recv()), Some(vec![b"k".to_vec()]));
        assert_eq!(keys_of(b.try_recv()), Some(vec![b"k".to_vec()]));
        assert_eq!(t.totals(), Totals { keys: 0, items: 0, prefixes: 0 });
    }

    #[test]
    fn noloop_skips_own_changes_and_off_stops_messages() {
        let t = Arc::new(Tracking::default());
        let clients = registry();
        let (mut c, mut inbox) = client(&t, 1, Options { noloop: true, ..Options::default() });
        remember(&t, &clients, crate::registries::pubsub::QueueLimit::NONE, 1, [&b"k"[..]].into_iter());
        t.key_changed(&clients, crate::registries::pubsub::QueueLimit::NONE, b"k", 1);
        assert!(inbox.try_recv().is_none());
        remember(&t, &clients, crate::registries::pubsub::QueueLimit::NONE, 1, [&b"k"[..]].into_iter());
        c.disable();
        assert_eq!(t.clients_on(), 0);
        t.key_changed(&clients, crate::registries::pubsub::QueueLimit::NONE, b"k", 2);
        assert!(inbox.try_recv().is_none());
    }

    #[test]
    fn broadcasts_gather_keys_by_prefix_until_flushed() {
        let t = Arc::new(Tracking::default());
        let clients = registry();
        let prefixes = vec![Box::from(&b"a"[..]), Box::from(&b"b"[..])];
        let (_c, mut inbox) = client(&t, 1, Options { bcast: true, prefixes, ..Options::default() });
        assert_eq!(t.totals().prefixes, 2);
        for k in [&b"a2"[..], b"b1", b"c1", b"a1", b"a2"] {
            t.key_changed(&clients, crate::registries::pubsub::QueueLimit::NONE, k, 7);
        }
        assert!(inbox.try_recv().is_none(), "nothing before the flush");
        t.flush_broadcasts(&clients, crate::registries::pubsub::QueueLimit::NONE);
        assert_eq!(keys_of(inbox.try_recv()), Some(vec![b"a1".to_vec(), b"a2".to_vec()]));
        assert_eq!(keys_of(inbox.try_recv()), Some(vec![b"b1".to_vec()]));
        assert!(inbox.try_recv().is_none());
    }

    #[test]
    fn a_flush_sends_null_and_empties_the_table() {
        let t = Arc::new(Tracking::default());
        let clients = registry();
        let (_c, mut inbox) = client(&t, 1, Options::default());
        remember(&t, &clients, crate::registries::pubsub::QueueLimit::NONE, 1, [&b"k"[..]].into_iter());
        t.flushed(&clients, crate::registries::pubsub::QueueLimit::NONE);
        assert!(matches!(inbox.try_recv(), Some(Message::Invalidate { keys: None, .. })));
        assert_eq!(t.totals().keys, 0);
    }

    #[test]
    fn the_table_stays_within_max_keys() {
        let t = Arc::new(Tracking::default());
        let clients = registry();
        t.set_max_keys(2);
        let (_c, mut inbox) = client(&t, 1, Options::default());
        let names: Vec<Vec<u8>> = (0..5).map(|i| format!("k{i}").into_bytes()).collect();
        remember(&t, &clients, crate::registries::pubsub::QueueLimit::NONE, 1, names.iter().map(|n| &n[..]));
        assert_eq!(t.totals().keys, 2);
        let mut evicted = 0;
        while let Some(keys) = keys_of(inbox.try_recv()) {
            assert_eq!(keys.len(), 1);
            evicted += 1;
        }
        assert_eq!(evicted, 3);
        t.set_max_keys(1);
        t.enforce_max_keys(&clients, crate::registries::pubsub::QueueLimit::NONE);
        assert_eq!(t.totals(), Totals { keys: 1, items: 1, prefixes: 0 });
        assert!(keys_of(inbox.try_recv()).is_some());
    }

    #[test]
    fn a_missing_redirect_target_breaks_the_redirect() {
        let t = Arc::new(Tracking::default());
        let clients = registry();
        let (c, mut inbox) = client(&t, 1, Options { redirect: 9, ..Options::default() });
        remember(&t, &clients, crate::registries::pubsub::QueueLimit::NONE, 1, [&b"k"[..]].into_iter());
        t.key_changed(&clients, crate::registries::pubsub::QueueLimit::NONE, b"k", 2);
        assert_eq!(inbox.try_recv(), Some(Message::RedirectBroken { to: 9 }));
        assert!(c.broken());
    }

    #[test]
    fn a_client_that_leaves_is_taken_out() {
        let t = Arc::new(Tracking::default());
        let prefixes = vec![Box::from(&b"p"[..])];
        let (c, _inbox) = client(&t, 1, Options { bcast: true, prefixes, ..Options::default() });
        drop(c);
        assert_eq!(t.clients_on(), 0);
        assert_eq!(t.totals().prefixes, 0);
        assert!(t.read_clients().mailboxes.is_empty());
    }
}
