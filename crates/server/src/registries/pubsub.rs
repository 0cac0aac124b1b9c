//! Publish/subscribe: who listens to which channel and pattern, and the
//! delivery of published messages to them.
//!
//! Every subscribed client (a connection, or a RESPB mux channel) owns one
//! [`Subscriber`]: a queue of messages its own connection task drains and
//! encodes in the client's protocol, so a publisher never touches another
//! client's socket and never waits for it. The queue is bounded in bytes by
//! `client-output-buffer-limit pubsub`: a subscriber that falls further
//! behind than the hard limit is cut off, as Redis disconnects it, instead of
//! letting memory grow.
//!
//! Channel subscriptions live in [`SHARDS`] maps picked by a hash of the
//! channel, so publishers to different channels rarely meet on a lock;
//! pattern subscriptions are few in practice and live in one list that
//! every publish scans. Shard channels (`SSUBSCRIBE`) have their own maps: on
//! a single node they behave like channels, but Redis keeps the two
//! namespaces apart.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::task::{Context, Poll};

use indexmap::IndexSet;
use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::ReplySink;
use tokio::sync::mpsc;

use crate::keyspace::glob;
use crate::signal::Signal;

/// Number of channel map shards.
const SHARDS: usize = 64;

/// A message on its way to one subscriber. The variants are named after
/// the push types clients see (`message`, `pmessage`, `smessage`).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// Published on a channel the subscriber listens to.
    Message {
        /// The channel.
        channel: Arc<[u8]>,
        /// The payload.
        payload: Arc<[u8]>,
    },
    /// Published on a channel matching one of the subscriber's patterns.
    PMessage {
        /// The pattern that matched.
        pattern: Arc<[u8]>,
        /// The channel.
        channel: Arc<[u8]>,
        /// The payload.
        payload: Arc<[u8]>,
    },
    /// Published on a shard channel the subscriber listens to.
    SMessage {
        /// The shard channel.
        channel: Arc<[u8]>,
        /// The payload.
        payload: Arc<[u8]>,
    },
    /// Keys a tracking client may have cached changed (client-side
    /// caching; see [`crate::registries::tracking`]).
    Invalidate {
        /// The keys, or `None` for every key (after a flush).
        keys: Option<Vec<Box<[u8]>>>,
        /// Whether this client receives it for another one (`REDIRECT`),
        /// which lets a RESP2 subscriber get it as a pub/sub message.
        redirected: bool,
        /// Whether the tracking client speaks RESP3: the null of a flush is
        /// written in its protocol, not in the receiver's, as Redis does.
        null_resp3: bool,
    },
    /// The client this tracking client redirects to is gone.
    RedirectBroken {
        /// The id it redirected to.
        to: u64,
    },
}

impl Message {
    /// Bytes the message holds for its subscriber, for the output limit.
    pub fn size(&self) -> usize {
        match self {
            Message::Message { channel, payload } | Message::SMessage { channel, payload } => {
                channel.len() + payload.len() + 32
            }
            Message::PMessage { pattern, channel, payload } => pattern.len() + channel.len() + payload.len() + 48,
            Message::Invalidate { keys, .. } => keys.iter().flatten().map(|k| k.len() + 16).sum::<usize>() + 32,
            Message::RedirectBroken { .. } => 48,
        }
    }
}

/// The channel RESP2 clients receive invalidations on.
pub const INVALIDATE_CHANNEL: &[u8] = b"__redis__:invalidate";

/// Append `msg` as a client speaking `protocol` sees it: a push in RESP3,
/// an array in RESP2. `listening` says whether the client is subscribed to
/// anything (a RESP2 client receives redirected invalidations only then).
pub fn encode_message(out: &mut Vec<u8>, protocol: Protocol, listening: bool, msg: &Message) {
    // The null of a flush follows the tracking client's protocol, which may
    // not be the receiver's: those bytes are written as they are.
    if let Message::Invalidate { keys: None, null_resp3, redirected } = msg {
        if *null_resp3 != (protocol == Protocol::Resp3) && shows_invalidation(protocol, listening, *redirected) {
            let mut w = RespWriter::new(out, protocol);
            invalidation_header(&mut w, protocol);
            out.extend_from_slice(if *null_resp3 { b"_\r\n" } else { b"$-1\r\n" });
            return;
        }
    }
    write_message(&mut RespWriter::new(out, protocol), protocol, listening, msg);
}

/// Whether a client speaking `protocol` is sent an invalidation: RESP3
/// clients always, RESP2 clients only as the subscribed target of a redirect.
fn shows_invalidation(protocol: Protocol, listening: bool, redirected: bool) -> bool {
    protocol == Protocol::Resp3 || (redirected && listening)
}

/// The part of an invalidation before its keys.
fn invalidation_header(w: &mut dyn ReplySink, protocol: Protocol) {
    if protocol == Protocol::Resp3 {
        w.push(2);
        w.bulk(b"invalidate");
    } else {
        w.push(3);
        w.bulk(b"message");
        w.bulk(INVALIDATE_CHANNEL);
    }
}

/// Write `msg` to `w` (a sink in `protocol`) as a push (an array where
/// pushes do not exist). Tracking messages a client cannot receive in its
/// protocol write nothing, as Redis drops them.
pub fn write_message(w: &mut dyn ReplySink, protocol: Protocol, listening: bool, msg: &Message) {
    match msg {
        Message::Message { channel, payload } => {
            w.push(3);
            w.bulk(b"message");
            w.bulk(channel);
            w.bulk(payload);
        }
        Message::SMessage { channel, payload } => {
            w.push(3);
            w.bulk(b"smessage");
            w.bulk(channel);
            w.bulk(payload);
        }
        Message::PMessage { pattern, channel, payload } => {
            w.push(4);
            w.bulk(b"pmessage");
            w.bulk(pattern);
            w.bulk(channel);
            w.bulk(payload);
        }
        Message::Invalidate { keys, redirected, .. } => {
            if !shows_invalidation(protocol, listening, *redirected) {
                return;
            }
            invalidation_header(w, protocol);
            match keys {
                Some(keys) => {
                    w.array(keys.len());
                    for k in keys {
                        w.bulk(k);
                    }
                }
                None => w.null(),
            }
        }
        Message::RedirectBroken { to } => {
            if protocol == Protocol::Resp3 {
                w.push(2);
                w.bulk(b"tracking-redir-broken");
                w.integer(i64::try_from(*to).unwrap_or(i64::MAX));
            }
        }
    }
}

/// One client's side of pub/sub: its identity and its message queue.
#[derive(Debug)]
pub struct Subscriber {
    /// Unique id (the client id), to find the subscriber in the maps.
    id: u64,
    tx: mpsc::UnboundedSender<Message>,
    /// Bytes queued and not yet taken by the client's task.
    queued: AtomicUsize,
    /// Messages queued and not yet taken: counted before a message is sent,
    /// so the receiver can tell from one load that nothing is waiting.
    messages: AtomicUsize,
    /// Set when the subscriber fell too far behind; its client is to be closed.
    overflowed: AtomicBool,
    /// Since when (in [`crate::clock::now_mono_us`] microseconds, 0: not)
    /// the queue has been above the soft limit.
    over_soft_since_us: AtomicU64,
    /// Raised when the subscriber overflows, so that its connection closes
    /// it even while it waits for the client to take earlier messages.
    wake: Option<Arc<Signal>>,
}

/// `client-output-buffer-limit pubsub`: the bytes a subscriber's queue may
/// reach (`hard`), or stay above for `soft_seconds` (`soft`), before its
/// client is closed; 0 turns a limit off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueLimit {
    /// Bytes past which the client is closed at once.
    pub hard: usize,
    /// Bytes the queue may stay above for `soft_seconds` only.
    pub soft: usize,
    /// Seconds allowed above `soft`.
    pub soft_seconds: u64,
}

impl QueueLimit {
    /// No limit at all.
    pub const NONE: QueueLimit = QueueLimit { hard: 0, soft: 0, soft_seconds: 0 };
}

/// The receiving end, held by the subscriber's connection task.
///
/// Every RESP3 client and every RESPB channel has one (other clients may
/// redirect tracking invalidations to it), and its connection polls it
/// between requests.
///
/// Every poll goes to the queue. Skipping the queue while the message count
/// read zero and the queue was thought to hold this task's waker lost
/// wake-ups under load: the queue can let go of a waker without a message
/// (tokio's cooperative budget answers Pending without registering it, and
/// a receive that finds a send half-done parks on a waker of its own).
#[derive(Debug)]
pub struct Inbox {
    subscriber: Arc<Subscriber>,
    rx: mpsc::UnboundedReceiver<Message>,
}

impl Inbox {
    /// The next message; `None` never happens while the inbox's subscriber
    /// lives, since the inbox holds it.
    pub async fn recv(&mut self) -> Option<Message> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Poll for the next message (a connection waiting on many inboxes).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        match self.rx.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(msg) => {
                if let Some(msg) = &msg {
                    self.taken(msg);
                }
                Poll::Ready(msg)
            }
        }
    }

    /// A message if one is queued, without waiting.
    pub fn try_recv(&mut self) -> Option<Message> {
        if self.subscriber.messages.load(Ordering::Acquire) == 0 {
            return None;
        }
        let msg = self.rx.try_recv().ok()?;
        self.taken(&msg);
        Some(msg)
    }

    /// Account for `msg` leaving the queue.
    fn taken(&mut self, msg: &Message) {
        let s = &self.subscriber;
        s.messages.fetch_sub(1, Ordering::AcqRel);
        s.queued.fetch_sub(msg.size().min(s.queued.load(Ordering::Relaxed)), Ordering::Relaxed);
    }

    /// True when the subscriber overflowed its output limit.
    pub fn overflowed(&self) -> bool {
        self.subscriber.overflowed.load(Ordering::Relaxed)
    }

    /// The subscriber, to register subscriptions with.
    pub fn subscriber(&self) -> &Arc<Subscriber> {
        &self.subscriber
    }
}

/// A new subscriber for client `id` and its inbox; `wake` is raised when
/// it overflows.
pub fn subscriber(id: u64, wake: Option<Arc<Signal>>) -> Inbox {
    let (tx, rx) = mpsc::unbounded_channel();
    let subscriber = Arc::new(Subscriber {
        id,
        tx,
        queued: AtomicUsize::new(0),
        messages: AtomicUsize::new(0),
        overflowed: AtomicBool::new(false),
        over_soft_since_us: AtomicU64::new(0),
        wake,
    });
    Inbox { subscriber, rx }
}

impl Subscriber {
    /// Whether the subscriber overflowed: its client is being closed, and
    /// no longer counts as a receiver.
    pub fn is_cut_off(&self) -> bool {
        self.overflowed.load(Ordering::Relaxed)
    }

    /// Queue `msg` unless that puts the subscriber past `limit`; true when
    /// queued. Past it, the subscriber is cut off for good and its
    /// connection woken to close it.
    pub fn deliver(&self, msg: Message, limit: QueueLimit) -> bool {
        if self.overflowed.load(Ordering::Relaxed) {
            return false;
        }
        let size = msg.size();
        let queued = self.queued.load(Ordering::Relaxed) + size;
        if (limit.hard > 0 && queued > limit.hard) || self.too_long_over_soft(queued, limit) {
            self.cut_off();
            return false;
        }
        // Counted before sending, so the receiver's subtraction never
        // comes first and a receiver that sees no message has none coming
        // without a wake.
        self.queued.fetch_add(size, Ordering::Relaxed);
        self.messages.fetch_add(1, Ordering::AcqRel);
        if self.tx.send(msg).is_ok() {
            return true;
        }
        self.messages.fetch_sub(1, Ordering::AcqRel);
        false
    }

    /// Whether a queue of `queued` bytes has been above the soft limit for
    /// longer than it allows (noting when it went above it, or that it no
    /// longer is).
    fn too_long_over_soft(&self, queued: usize, limit: QueueLimit) -> bool {
        if limit.soft == 0 || limit.soft_seconds == 0 || queued <= limit.soft {
            if self.over_soft_since_us.load(Ordering::Relaxed) != 0 {
                self.over_soft_since_us.store(0, Ordering::Relaxed);
            }
            return false;
        }
        let now_us = crate::clock::now_mono_us().max(1);
        let since_us = self.over_soft_since_us.load(Ordering::Relaxed);
        if since_us == 0 {
            self.over_soft_since_us.store(now_us, Ordering::Relaxed);
            return false;
        }
        now_us.saturating_sub(since_us) > limit.soft_seconds.saturating_mul(1_000_000)
    }

    #[cold]
    fn cut_off(&self) {
        if !self.overflowed.swap(true, Ordering::Relaxed) {
            static LIMIT: crate::log::RateLimit = crate::log::RateLimit::per(1000);
            if LIMIT.allow() {
                crate::log!(Warning, "Client id={} closed for overcoming of output buffer limits.", self.id);
            }
            if let Some(wake) = &self.wake {
                wake.raise();
            }
        }
    }
}

/// Which namespace a subscription is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `SUBSCRIBE` channels.
    Channel,
    /// `SSUBSCRIBE` shard channels.
    Shard,
}

type ChannelMap = HashMap<Arc<[u8]>, Vec<Arc<Subscriber>>>;

/// Pattern subscriptions: each pattern with one subscriber, in order.
type PatternList = Vec<(Arc<[u8]>, Arc<Subscriber>)>;

/// The server's subscriptions.
#[derive(Debug)]
pub struct PubSub {
    channels: Vec<Mutex<ChannelMap>>,
    shard_channels: Vec<Mutex<ChannelMap>>,
    patterns: RwLock<PatternList>,
    /// `client-output-buffer-limit pubsub`: hard and soft limits in bytes
    /// (0: none) and the soft limit's seconds.
    hard_limit: AtomicUsize,
    soft_limit: AtomicUsize,
    soft_seconds: AtomicU64,
    /// Messages delivered, for statistics.
    delivered: AtomicU64,
}

impl Default for PubSub {
    fn default() -> Self {
        PubSub {
            channels: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            shard_channels: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            patterns: RwLock::new(Vec::new()),
            hard_limit: AtomicUsize::new(32 * 1024 * 1024),
            soft_limit: AtomicUsize::new(8 * 1024 * 1024),
            soft_seconds: AtomicU64::new(60),
            delivered: AtomicU64::new(0),
        }
    }
}

fn shard_of(channel: &[u8]) -> usize {
    let mut h = DefaultHasher::new();
    channel.hash(&mut h);
    (h.finish() as usize) % SHARDS
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PubSub {
    /// The limits past which a subscriber is cut off.
    pub fn limit(&self) -> QueueLimit {
        QueueLimit {
            hard: self.hard_limit.load(Ordering::Relaxed),
            soft: self.soft_limit.load(Ordering::Relaxed),
            soft_seconds: self.soft_seconds.load(Ordering::Relaxed),
        }
    }

    /// Set the limits past which a subscriber is cut off.
    pub fn set_limit(&self, limit: QueueLimit) {
        self.hard_limit.store(limit.hard, Ordering::Relaxed);
        self.soft_limit.store(limit.soft, Ordering::Relaxed);
        self.soft_seconds.store(limit.soft_seconds, Ordering::Relaxed);
    }

    fn map(&self, kind: Kind, channel: &[u8]) -> MutexGuard<'_, ChannelMap> {
        let shards = match kind {
            Kind::Channel => &self.channels,
            Kind::Shard => &self.shard_channels,
        };
        locked(&shards[shard_of(channel)])
    }

    /// Add `sub` to `channel`'s listeners; false when it already was one.
    pub fn subscribe(&self, kind: Kind, channel: &[u8], sub: &Arc<Subscriber>) -> bool {
        let mut map = self.map(kind, channel);
        let list = map.entry(Arc::from(channel)).or_default();
        if list.iter().any(|s| s.id == sub.id) {
            return false;
        }
        list.push(sub.clone());
        true
    }

    /// Remove `sub` from `channel`'s listeners; false when it was not one.
    pub fn unsubscribe(&self, kind: Kind, channel: &[u8], sub: &Subscriber) -> bool {
        let mut map = self.map(kind, channel);
        let Some(list) = map.get_mut(channel) else { return false };
        let before = list.len();
        list.retain(|s| s.id != sub.id);
        let removed = list.len() != before;
        if list.is_empty() {
            map.remove(channel);
        }
        removed
    }

    /// Add a pattern subscription; false when `sub` already had it.
    pub fn psubscribe(&self, pattern: &[u8], sub: &Arc<Subscriber>) -> bool {
        let mut patterns = self.patterns.write().unwrap_or_else(|e| e.into_inner());
        if patterns.iter().any(|(p, s)| s.id == sub.id && **p == *pattern) {
            return false;
        }
        patterns.push((Arc::from(pattern), sub.clone()));
        true
    }

    /// Remove a pattern subscription; false when `sub` did not have it.
    pub fn punsubscribe(&self, pattern: &[u8], sub: &Subscriber) -> bool {
        let mut patterns = self.patterns.write().unwrap_or_else(|e| e.into_inner());
        let before = patterns.len();
        patterns.retain(|(p, s)| !(s.id == sub.id && **p == *pattern));
        patterns.len() != before
    }

    /// Deliver `payload` to the listeners of `channel` (and, for ordinary
    /// channels, of matching patterns); the number of receivers, as PUBLISH
    /// replies (a client listening both ways counts twice). A listener cut
    /// off for falling behind is being closed and counts no more (the one
    /// this message cuts off still counts, as in Redis).
    pub fn publish(&self, kind: Kind, channel: &[u8], payload: &[u8]) -> usize {
        let limit = self.limit();
        let channel: Arc<[u8]> = Arc::from(channel);
        let payload: Arc<[u8]> = Arc::from(payload);
        let mut receivers = 0;
        let listeners: Vec<Arc<Subscriber>> = self.map(kind, &channel).get(&channel).cloned().unwrap_or_default();
        for sub in &listeners {
            let msg = match kind {
                Kind::Channel => Message::Message { channel: channel.clone(), payload: payload.clone() },
                Kind::Shard => Message::SMessage { channel: channel.clone(), payload: payload.clone() },
            };
            let gone = sub.is_cut_off();
            sub.deliver(msg, limit);
            receivers += usize::from(!gone);
        }
        if kind == Kind::Channel {
            let patterns = self.patterns.read().unwrap_or_else(|e| e.into_inner());
            for (pattern, sub) in patterns.iter().filter(|(p, _)| glob::matches(p, &channel, false)) {
                let msg =
                    Message::PMessage { pattern: pattern.clone(), channel: channel.clone(), payload: payload.clone() };
                let gone = sub.is_cut_off();
                sub.deliver(msg, limit);
                receivers += usize::from(!gone);
            }
        }
        self.delivered.fetch_add(receivers as u64, Ordering::Relaxed);
        receivers
    }

    /// Channels (of `kind`) with at least one listener, matching `pattern` if given.
    pub fn channels(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Arc<[u8]>> {
        let shards = match kind {
            Kind::Channel => &self.channels,
            Kind::Shard => &self.shard_channels,
        };
        let mut out = Vec::new();
        for shard in shards {
            let map = locked(shard);
            out.extend(map.keys().filter(|c| pattern.is_none_or(|p| glob::matches(p, c, false))).cloned());
        }
        out
    }

    /// Listeners of `channel`.
    pub fn numsub(&self, kind: Kind, channel: &[u8]) -> usize {
        self.map(kind, channel).get(channel).map_or(0, Vec::len)
    }

    /// Distinct patterns subscribed to, by any client (`PUBSUB NUMPAT`).
    pub fn numpat(&self) -> usize {
        let patterns = self.patterns.read().unwrap_or_else(|e| e.into_inner());
        patterns.iter().map(|(p, _)| p).collect::<std::collections::HashSet<_>>().len()
    }
}

/// One client's subscriptions, kept with its session: what it listens to
/// (for the counts Redis replies with and for unsubscribing everything) and
/// the inbox its messages arrive in, made on its first subscription.
///
/// Dropping it (the client went away) takes every subscription back out of
/// the server's maps, so a closed client is never published to.
#[derive(Debug)]
pub struct Subscriptions {
    client_id: u64,
    /// The client's connection's wake, raised when its subscriber overflows.
    wake: Option<Arc<Signal>>,
    registry: Option<Arc<PubSub>>,
    inbox: Option<Inbox>,
    channels: IndexSet<Arc<[u8]>>,
    patterns: IndexSet<Arc<[u8]>>,
    shard_channels: IndexSet<Arc<[u8]>>,
}

impl Subscriptions {
    /// No subscriptions yet for client `client_id`.
    pub fn new(client_id: u64) -> Subscriptions {
        Subscriptions {
            client_id,
            wake: None,
            registry: None,
            inbox: None,
            channels: IndexSet::new(),
            patterns: IndexSet::new(),
            shard_channels: IndexSet::new(),
        }
    }

    /// Channels plus patterns: the count SUBSCRIBE and PSUBSCRIBE report.
    #[inline]
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Shard channels: the count SSUBSCRIBE reports.
    #[inline]
    pub fn shard_count(&self) -> usize {
        self.shard_channels.len()
    }

    /// Channels, patterns and shard channels listened to, as `CLIENT LIST` shows them.
    #[inline]
    pub fn counts(&self) -> [usize; 3] {
        [self.channels.len(), self.patterns.len(), self.shard_channels.len()]
    }

    /// True while the client listens to anything (Redis's pub/sub context).
    #[inline]
    pub fn active(&self) -> bool {
        self.count() + self.shard_count() > 0
    }

    /// Raise `wake` when the client's subscriber overflows (set before it
    /// has one).
    pub fn set_wake(&mut self, wake: Option<Arc<Signal>>) {
        self.wake = wake;
    }

    /// The inbox, once the client subscribed to something.
    pub fn inbox(&mut self) -> Option<&mut Inbox> {
        self.inbox.as_mut()
    }

    /// The client's subscriber, its inbox made now if it had none: what
    /// other clients deliver tracking invalidations to.
    pub fn open_inbox(&mut self) -> Arc<Subscriber> {
        let (id, wake) = (self.client_id, &self.wake);
        self.inbox.get_or_insert_with(|| subscriber(id, wake.clone())).subscriber().clone()
    }

    /// The subscriber registered in `registry`, made on first use.
    fn subscriber(&mut self, registry: &Arc<PubSub>) -> Arc<Subscriber> {
        if self.registry.is_none() {
            self.registry = Some(registry.clone());
        }
        let (id, wake) = (self.client_id, &self.wake);
        self.inbox.get_or_insert_with(|| subscriber(id, wake.clone())).subscriber().clone()
    }

    fn set_of(&mut self, kind: Kind) -> &mut IndexSet<Arc<[u8]>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Shard => &mut self.shard_channels,
        }
    }

    /// Listen to `channel`; the count to reply with.
    pub fn subscribe(&mut self, registry: &Arc<PubSub>, kind: Kind, channel: &[u8]) -> usize {
        let sub = self.subscriber(registry);
        if self.set_of(kind).insert(Arc::from(channel)) {
            registry.subscribe(kind, channel, &sub);
        }
        self.count_of(kind)
    }

    /// Stop listening to `channel`; the count to reply with.
    pub fn unsubscribe(&mut self, registry: &PubSub, kind: Kind, channel: &[u8]) -> usize {
        if self.set_of(kind).shift_remove(channel) {
            if let Some(inbox) = &self.inbox {
                registry.unsubscribe(kind, channel, inbox.subscriber());
            }
        }
        self.count_of(kind)
    }

    /// Listen to channels matching `pattern`; the count to reply with.
    pub fn psubscribe(&mut self, registry: &Arc<PubSub>, pattern: &[u8]) -> usize {
        let sub = self.subscriber(registry);
        if self.patterns.insert(Arc::from(pattern)) {
            registry.psubscribe(pattern, &sub);
        }
        self.count()
    }

    /// Stop listening to `pattern`; the count to reply with.
    pub fn punsubscribe(&mut self, registry: &PubSub, pattern: &[u8]) -> usize {
        if self.patterns.shift_remove(pattern) {
            if let Some(inbox) = &self.inbox {
                registry.punsubscribe(pattern, inbox.subscriber());
            }
        }
        self.count()
    }

    fn count_of(&self, kind: Kind) -> usize {
        match kind {
            Kind::Channel => self.count(),
            Kind::Shard => self.shard_count(),
        }
    }

    /// The channels (of `kind`) listened to, in subscription order.
    pub fn channels(&self, kind: Kind) -> Vec<Arc<[u8]>> {
        match kind {
            Kind::Channel => self.channels.iter().cloned().collect(),
            Kind::Shard => self.shard_channels.iter().cloned().collect(),
        }
    }

    /// The patterns listened to, in subscription order.
    pub fn patterns(&self) -> Vec<Arc<[u8]>> {
        self.patterns.iter().cloned().collect()
    }

    /// Stop listening to everything (RESET, disconnect).
    pub fn clear(&mut self) {
        let (Some(registry), Some(inbox)) = (self.registry.clone(), self.inbox.as_ref()) else { return };
        let sub = inbox.subscriber().clone();
        for c in self.channels.drain(..) {
            registry.unsubscribe(Kind::Channel, &c, &sub);
        }
        for c in self.shard_channels.drain(..) {
            registry.unsubscribe(Kind::Shard, &c, &sub);
        }
        for p in self.patterns.drain(..) {
            registry.punsubscribe(&p, &sub);
        }
        self.inbox = None;
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    /// A waker that counts its wakes.
    struct Counted(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn message(payload: &[u8]) -> Message {
        Message::Message { channel: Arc::from(&b"ch"[..]), payload: Arc::from(payload) }
    }

    #[test]
    fn an_inbox_is_woken_by_every_message_however_taken() {
        let counter = Arc::new(Counted(std::sync::atomic::AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&counter));
        let mut cx = Context::from_waker(&waker);
        let mut inbox = subscriber(7, None);
        let tx = Arc::clone(inbox.subscriber());
        assert!(inbox.poll_recv(&mut cx).is_pending());
        assert!(inbox.poll_recv(&mut cx).is_pending());
        assert!(inbox.poll_recv(&mut cx).is_pending());
        assert!(tx.deliver(message(b"one"), QueueLimit::NONE));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "a send wakes the registered task");
        assert!(matches!(inbox.poll_recv(&mut cx), Poll::Ready(Some(_))));
        assert!(inbox.poll_recv(&mut cx).is_pending());
        assert!(tx.deliver(message(b"two"), QueueLimit::NONE));
        assert_eq!(counter.0.load(Ordering::SeqCst), 2);
        // Taken without polling: the next poll registers again.
        assert!(inbox.try_recv().is_some());
        assert!(inbox.try_recv().is_none());
        assert!(inbox.poll_recv(&mut cx).is_pending());
        assert!(tx.deliver(message(b"three"), QueueLimit::NONE));
        assert_eq!(counter.0.load(Ordering::SeqCst), 3);
        assert!(matches!(inbox.poll_recv(&mut cx), Poll::Ready(Some(_))));
        assert_eq!(tx.queued.load(Ordering::SeqCst), 0);
        assert_eq!(tx.messages.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn an_inbox_polled_out_of_budget_is_still_woken() {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let counter = Arc::new(Counted(std::sync::atomic::AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&counter));
        let mut inbox = subscriber(9, None);
        let tx = Arc::clone(inbox.subscriber());
        let (filler, mut busy) = mpsc::unbounded_channel::<u8>();
        for _ in 0..1000 {
            let _ = filler.send(0);
        }
        // A task poll that spends its whole budget on another queue before
        // it polls the inbox, as a connection does that wrote many
        // messages in one go.
        rt.block_on(std::future::poll_fn(|cx| {
            while busy.poll_recv(cx).is_ready() {}
            assert!(inbox.poll_recv(&mut Context::from_waker(&waker)).is_pending());
            Poll::Ready(())
        }));
        // The next poll, with budget again, must leave the waker with the queue.
        rt.block_on(std::future::poll_fn(|_| {
            assert!(inbox.poll_recv(&mut Context::from_waker(&waker)).is_pending());
            Poll::Ready(())
        }));
        assert!(tx.deliver(message(b"late"), QueueLimit::NONE));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "the message never woke the task");
    }

    #[test]
    fn channels_and_patterns_reach_their_listeners() {
        let ps = PubSub::default();
        let mut a = subscriber(1, None);
        let mut b = subscriber(2, None);
        assert!(ps.subscribe(Kind::Channel, b"news", a.subscriber()));
        assert!(!ps.subscribe(Kind::Channel, b"news", a.subscriber()));
        assert!(ps.psubscribe(b"n*", b.subscriber()));
        assert!(ps.psubscribe(b"n*", a.subscriber()));
        assert_eq!(ps.publish(Kind::Channel, b"news", b"hi"), 3);
        assert_eq!(ps.publish(Kind::Channel, b"other", b"x"), 0);
        assert_eq!(ps.publish(Kind::Shard, b"news", b"x"), 0);
        assert!(matches!(a.try_recv(), Some(Message::Message { .. })));
        assert!(matches!(a.try_recv(), Some(Message::PMessage { .. })));
        assert!(a.try_recv().is_none());
        match b.try_recv() {
            Some(Message::PMessage { pattern, channel, payload }) => {
                assert_eq!((&*pattern, &*channel, &*payload), (&b"n*"[..], &b"news"[..], &b"hi"[..]));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(ps.numsub(Kind::Channel, b"news"), 1);
        assert_eq!(ps.numpat(), 1);
        assert_eq!(ps.channels(Kind::Channel, Some(b"n?ws")).len(), 1);
        assert!(ps.unsubscribe(Kind::Channel, b"news", a.subscriber()));
        assert!(!ps.unsubscribe(Kind::Channel, b"news", a.subscriber()));
        assert!(ps.channels(Kind::Channel, None).is_empty());
        assert!(ps.punsubscribe(b"n*", b.subscriber()));
        assert_eq!(ps.numpat(), 1);
    }

    #[test]
    fn a_client_s_subscriptions_count_and_leave_with_it() {
        let ps = Arc::new(PubSub::default());
        let mut subs = Subscriptions::new(9);
        assert_eq!(subs.subscribe(&ps, Kind::Channel, b"a"), 1);
        assert_eq!(subs.subscribe(&ps, Kind::Channel, b"a"), 1);
        assert_eq!(subs.psubscribe(&ps, b"a*"), 2);
        assert_eq!(subs.subscribe(&ps, Kind::Shard, b"s"), 1);
        assert!(subs.active());
        assert_eq!(ps.publish(Kind::Channel, b"a", b"x"), 2);
        assert_eq!(subs.unsubscribe(&ps, Kind::Channel, b"zz"), 2);
        assert_eq!(subs.unsubscribe(&ps, Kind::Channel, b"a"), 1);
        drop(subs);
        assert_eq!(ps.publish(Kind::Channel, b"a", b"x"), 0);
        assert_eq!(ps.numpat(), 0);
        assert_eq!(ps.numsub(Kind::Shard, b"s"), 0);
    }

    fn encoded(protocol: Protocol, listening: bool, msg: &Message) -> Vec<u8> {
        let mut out = Vec::new();
        encode_message(&mut out, protocol, listening, msg);
        out
    }

    #[test]
    fn invalidations_are_written_as_redis_writes_them() {
        let keys = Message::Invalidate { keys: Some(vec![Box::from(&b"k"[..])]), redirected: false, null_resp3: true };
        assert_eq!(encoded(Protocol::Resp3, false, &keys), b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n");
        assert_eq!(encoded(Protocol::Resp2, true, &keys), b"", "not redirected: RESP2 gets nothing");
        let redirected =
            Message::Invalidate { keys: Some(vec![Box::from(&b"k"[..])]), redirected: true, null_resp3: false };
        assert_eq!(encoded(Protocol::Resp2, false, &redirected), b"", "a RESP2 target must listen");
        assert_eq!(
            encoded(Protocol::Resp2, true, &redirected),
            b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nk\r\n"
        );
        // The null of a flush follows the tracking client's protocol.
        let flush2 = Message::Invalidate { keys: None, redirected: true, null_resp3: false };
        assert_eq!(encoded(Protocol::Resp3, false, &flush2), b">2\r\n$10\r\ninvalidate\r\n$-1\r\n");
        let flush3 = Message::Invalidate { keys: None, redirected: true, null_resp3: true };
        assert_eq!(encoded(Protocol::Resp3, false, &flush3), b">2\r\n$10\r\ninvalidate\r\n_\r\n");
        assert_eq!(
            encoded(Protocol::Resp2, true, &flush3),
            b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n_\r\n"
        );
        let broken = Message::RedirectBroken { to: 7 };
        assert_eq!(encoded(Protocol::Resp3, false, &broken), b">2\r\n$21\r\ntracking-redir-broken\r\n:7\r\n");
        assert_eq!(encoded(Protocol::Resp2, true, &broken), b"");
    }

    #[test]
    fn a_subscriber_that_falls_behind_is_cut_off() {
        let ps = PubSub::default();
        ps.set_limit(QueueLimit { hard: 1000, ..QueueLimit::NONE });
        let mut slow = subscriber(7, None);
        ps.subscribe(Kind::Shard, b"c", slow.subscriber());
        for _ in 0..10 {
            ps.publish(Kind::Shard, b"c", &[0u8; 200]);
        }
        assert!(slow.overflowed());
        let mut got = 0;
        while slow.try_recv().is_some() {
            got += 1;
        }
        assert!((1..10).contains(&got), "{got}");
    }
}
