//! The journal: every change the server makes, as the commands that
//! redo it, in one order that replays to the keyspace the server has.
//!
//! Commands run on several threads at once, so "the order they ran in" is
//! not one thing. What replay needs is weaker: two changes of one key in
//! the order they were made, a multi-key change or a transaction whole.
//! Each change takes a place from the keyspace's counter while it holds the
//! shard locks of its keys ([`crate::keyspace::Keyspace::next_change`]),
//! so changes that meet on a key are numbered in the order they were made,
//! and changes numbered the other way round touched different keys and
//! commute. A command publishes its record after it lets go of its locks;
//! records arrive out of order, and the consumer (the append-only file's
//! writer) puts them back in order: it writes place `n` only once every
//! place before it has arrived. Every place taken is published, an empty
//! record when a change turned out to have nothing to say, or the writer
//! would wait for it forever.
//!
//! A record is a list of operations, each a database number and one
//! command in RESP ([`put_op`]); the writer adds the `SELECT`s.
//!
//! Two consumers may take the records, each from a queue of its own: the
//! append-only file's writer and the replication feed
//! ([`crate::replication::feed`]), which turns them into the stream sent
//! to replicas. Each puts them back in order with an [`InOrder`].
//!
//! The journal also holds the writer's progress (how far the records are
//! on disk), which is what a connection waits on before
//! it sends replies: with `appendfsync always` a reply goes out once the
//! change it reports, and every change made before it, is on disk.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

/// What replies wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Hold {
    /// Nothing: no journal, or nobody waits.
    Nothing = 0,
    /// The changes they follow are on disk (`appendfsync always`).
    Synced = 1,
}

/// One published record, in the queue's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Its place in the order of changes.
    pub seq: u64,
    /// Where its operations are in [`Queue::data`].
    pub start: usize,
    pub end: usize,
}

/// Records published and not yet taken by the consumer.
#[derive(Debug, Default)]
pub struct Queue {
    /// The records' operations, one after the other.
    pub data: Vec<u8>,
    /// The records, in the order they were published.
    pub index: Vec<Entry>,
    /// The consumer sleeps on the condition variable.
    consumer_waiting: bool,
    /// A wake came while the consumer was not waiting: its next take
    /// does not wait.
    wake_pending: bool,
}

/// The bit of [`Journal::consumers`] for the append-only file's writer.
const AOF: u8 = 1;
/// … for the replication feed.
const FEED: u8 = 2;

/// One consumer's records: where it starts, what waits for it.
#[derive(Debug)]
struct Consumer {
    /// The first place recorded for it: records of earlier places (taken
    /// before it started) are dropped.
    first: AtomicU64,
    queue: Mutex<Queue>,
    /// Signalled when a record arrives while the consumer sleeps.
    arrived: Condvar,
}

impl Consumer {
    fn new() -> Consumer {
        Consumer { first: AtomicU64::new(1), queue: Mutex::new(Queue::default()), arrived: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn start(&self, first: u64) {
        let mut queue = self.lock();
        queue.data.clear();
        queue.index.clear();
        self.first.store(first, Ordering::Relaxed);
    }

    fn clear(&self) {
        let mut queue = self.lock();
        queue.data = Vec::new();
        queue.index = Vec::new();
        drop(queue);
        self.arrived.notify_all();
    }

    fn push(&self, seq: u64, ops: &[u8]) {
        if seq < self.first.load(Ordering::Relaxed) {
            return;
        }
        let mut queue = self.lock();
        let start = queue.data.len();
        queue.data.extend_from_slice(ops);
        let end = queue.data.len();
        queue.index.push(Entry { seq, start, end });
        let wake = std::mem::take(&mut queue.consumer_waiting);
        drop(queue);
        if wake {
            self.arrived.notify_one();
        }
    }

    /// Trade `data` and `index` (emptied first) for what was published
    /// since the last call, waiting up to `wait` for a first record while
    /// `on` says the consumer runs.
    fn take(&self, data: &mut Vec<u8>, index: &mut Vec<Entry>, wait: Duration, on: impl Fn() -> bool) {
        data.clear();
        index.clear();
        let mut queue = self.lock();
        if queue.index.is_empty() && !std::mem::take(&mut queue.wake_pending) && on() && !wait.is_zero() {
            queue.consumer_waiting = true;
            queue = match self.arrived.wait_timeout(queue, wait) {
                Ok((q, _)) => q,
                Err(poisoned) => poisoned.into_inner().0,
            };
            queue.consumer_waiting = false;
            queue.wake_pending = false;
        }
        std::mem::swap(&mut queue.data, data);
        std::mem::swap(&mut queue.index, index);
    }

    fn wake(&self) {
        let mut queue = self.lock();
        queue.wake_pending = true;
        drop(queue);
        self.arrived.notify_all();
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct Journal {
    /// Who takes the records ([`AOF`], [`FEED`]): one relaxed load on
    /// every write tells whether changes are recorded at all.
    consumers: AtomicU8,
    /// What replies wait for ([`Hold`]).
    hold: AtomicU8,
    /// The append-only file's writer's records.
    aof: Consumer,
    /// The replication feed's records.
    feed: Consumer,
    /// Every place up to this one is on disk.
    synced: AtomicU64,
    /// Woken whenever `synced` moves, or the journal stops.
    settled: Notify,
    /// One per event loop, told the same: the loop wakes its own waiting
    /// connections, so a flush costs one cross-thread wake per loop, not
    /// one per waiting client.
    relays: Mutex<Vec<Arc<Notify>>>,
}

impl Default for Journal {
    fn default() -> Self {
        Journal {
            consumers: AtomicU8::new(0),
            hold: AtomicU8::new(Hold::Nothing as u8),
            aof: Consumer::new(),
            feed: Consumer::new(),
            synced: AtomicU64::new(0),
            settled: Notify::new(),
            relays: Mutex::new(Vec::new()),
        }
    }
}

/// Append one operation, `args` run in database `db`, to a record's bytes.
pub fn put_op(out: &mut Vec<u8>, db: usize, args: &[&[u8]]) {
    let db = u32::try_from(db).unwrap_or(u32::MAX);
    out.extend_from_slice(&db.to_le_bytes());
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    kvik_persist::aof::commands::put(out, args);
    let len = u32::try_from(out.len() - at - 4).unwrap_or(u32::MAX);
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// The operations of a record's bytes: `(database, command in RESP)`.
pub fn ops(mut bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    std::iter::from_fn(move || {
        let (db, rest) = bytes.split_first_chunk::<4>()?;
        let (len, rest) = rest.split_first_chunk::<4>()?;
        let len = (u32::from_le_bytes(*len) as usize).min(rest.len());
        let (op, rest) = rest.split_at(len);
        bytes = rest;
        Some((u32::from_le_bytes(*db) as usize, op))
    })
}

impl Journal {
    /// Whether changes are recorded (for either consumer).
    #[inline]
    pub fn on(&self) -> bool {
        self.consumers.load(Ordering::Relaxed) != 0
    }

    /// Whether the append-only file's writer takes records.
    fn aof_on(&self) -> bool {
        self.consumers.load(Ordering::Relaxed) & AOF != 0
    }

    /// Whether the replication feed takes records.
    pub fn feed_on(&self) -> bool {
        self.consumers.load(Ordering::Relaxed) & FEED != 0
    }

    /// Start recording for the append-only file from place `first` on (the
    /// next place the keyspace hands out, read while every shard is held,
    /// so that no change of an earlier place is still to be made), replies
    /// waiting for `hold`.
    pub fn start(&self, first: u64, hold: Hold) {
        self.aof.start(first);
        self.synced.store(first - 1, Ordering::Relaxed);
        self.hold.store(hold as u8, Ordering::Relaxed);
        self.consumers.fetch_or(AOF, Ordering::Release);
    }

    /// Stop recording for the append-only file; replies waiting are let go.
    pub fn stop(&self) {
        self.consumers.fetch_and(!AOF, Ordering::Release);
        self.hold.store(Hold::Nothing as u8, Ordering::Relaxed);
        self.aof.clear();
        self.wake_settled();
    }

    /// Start recording for the replication feed from place `first` on
    /// (read while every shard is held, as for [`Journal::start`]).
    pub fn start_feed(&self, first: u64) {
        self.feed.start(first);
        self.consumers.fetch_or(FEED, Ordering::Release);
    }

    /// Stop recording for the replication feed.
    pub fn stop_feed(&self) {
        self.consumers.fetch_and(!FEED, Ordering::Release);
        self.feed.clear();
    }

    /// The first place recorded for the append-only file.
    pub fn first(&self) -> u64 {
        self.aof.first.load(Ordering::Relaxed)
    }

    /// The first place recorded for the replication feed.
    pub fn feed_first(&self) -> u64 {
        self.feed.first.load(Ordering::Relaxed)
    }

    /// Change what replies wait for (`CONFIG SET appendfsync`).
    pub fn set_hold(&self, hold: Hold) {
        self.hold.store(hold as u8, Ordering::Relaxed);
        self.wake_settled();
    }

    /// Publish the record of place `seq`: `ops` as [`put_op`] wrote them,
    /// empty for a place that has nothing to say.
    pub fn publish(&self, seq: u64, ops: &[u8]) {
        let consumers = self.consumers.load(Ordering::Relaxed);
        if consumers & AOF != 0 {
            self.aof.push(seq, ops);
        }
        if consumers & FEED != 0 {
            self.feed.push(seq, ops);
        }
    }

    /// For the append-only file's writer: trade `data` and `index`
    /// (emptied first) for what was published since the last call, waiting
    /// up to `wait` for a first record. False when it is off.
    pub fn take(&self, data: &mut Vec<u8>, index: &mut Vec<Entry>, wait: Duration) -> bool {
        self.aof.take(data, index, wait, || self.aof_on());
        self.aof_on()
    }

    /// [`Journal::take`] for the replication feed.
    pub fn take_feed(&self, data: &mut Vec<u8>, index: &mut Vec<Entry>, wait: Duration) -> bool {
        self.feed.take(data, index, wait, || self.feed_on());
        self.feed_on()
    }

    /// Wake the append-only file's writer now (to stop, or to rotate files).
    pub fn wake_consumer(&self) {
        self.aof.wake();
    }

    /// Wake the replication feed now.
    pub fn wake_feed(&self) {
        self.feed.wake();
    }

    /// The consumer flushed every place up to `seq` to disk.
    pub fn synced_to(&self, seq: u64) {
        self.synced.store(seq, Ordering::Release);
        self.wake_settled();
    }

    /// A relay for one event loop: notified (with a permit kept when its
    /// loop is busy) whenever replies may be let go.
    pub fn relay(&self) -> Arc<Notify> {
        let relay = Arc::new(Notify::new());
        self.relays.lock().unwrap_or_else(|p| p.into_inner()).push(Arc::clone(&relay));
        relay
    }

    fn wake_settled(&self) {
        self.settled.notify_waiters();
        for relay in self.relays.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            relay.notify_one();
        }
    }

    /// How far the records are on disk.
    pub fn synced(&self) -> u64 {
        self.synced.load(Ordering::Acquire)
    }

    /// Whether replies sent once every place up to `seq` was made may go
    /// out now.
    #[inline]
    pub fn settled_at(&self, seq: u64) -> bool {
        match self.hold.load(Ordering::Relaxed) {
            0 => true,
            _ => self.synced.load(Ordering::Acquire) >= seq || !self.aof_on(),
        }
    }

    /// Wait until replies following place `seq` may go out.
    pub async fn wait_settled(&self, seq: u64) {
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.settled_at(seq) {
                return;
            }
            notified.await;
        }
    }

    /// Bytes published and not yet taken by the append-only file's writer.
    pub fn queued_bytes(&self) -> usize {
        self.aof.lock().data.len()
    }
}

/// Puts a consumer's records back in the order of their places: a record
/// whose place is not the next waits until the places before it arrive
/// (every place is published, so that wait is short).
#[derive(Debug, Default)]
pub struct InOrder {
    /// The next place to hand on.
    pub next: u64,
    /// Records that arrived before their turn.
    held: BTreeMap<u64, Vec<u8>>,
}

impl InOrder {
    /// Hand on places from `first` on.
    pub fn new(first: u64) -> InOrder {
        InOrder { next: first, held: BTreeMap::new() }
    }

    /// Hand this round's records (`index` into `data`), with those held,
    /// to `emit` in the order of places, as far as the places are whole.
    pub fn put(&mut self, data: &[u8], index: &mut [Entry], mut emit: impl FnMut(u64, &[u8])) {
        index.sort_unstable_by_key(|e| e.seq);
        for e in index.iter() {
            let bytes = &data[e.start..e.end];
            if e.seq == self.next {
                emit(e.seq, bytes);
                self.next = e.seq + 1;
                while let Some(bytes) = self.held.remove(&self.next) {
                    emit(self.next, &bytes);
                    self.next += 1;
                }
            } else if e.seq > self.next {
                self.held.insert(e.seq, bytes.to_vec());
            }
        }
    }

    /// How many records wait for an earlier place.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// The records still waiting, in order of places, given up on (the
    /// consumer stops).
    pub fn take_held(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.held).into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_round_trip_through_a_record() {
        let mut out = Vec::new();
        put_op(&mut out, 0, &[b"SET", b"k", b"v"]);
        put_op(&mut out, 7, &[b"DEL", b"k"]);
        let got: Vec<(usize, Vec<u8>)> = ops(&out).map(|(db, op)| (db, op.to_vec())).collect();
        assert_eq!(
            got,
            [
                (0, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n".to_vec()),
                (7, b"*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n".to_vec())
            ]
        );
    }

    #[test]
    fn records_before_the_start_are_dropped_and_the_rest_taken_in_turn() {
        let j = Journal::default();
        j.publish(1, b"x");
        j.start(5, Hold::Synced);
        j.publish(4, b"old");
        j.publish(6, b"b");
        j.publish(5, b"a");
        let (mut data, mut index) = (Vec::new(), Vec::new());
        assert!(j.take(&mut data, &mut index, Duration::ZERO));
        assert_eq!(index.iter().map(|e| e.seq).collect::<Vec<_>>(), [6, 5]);
        assert_eq!(data, b"ba");
        assert!(!j.settled_at(6), "always waits for the disk");
        j.synced_to(6);
        assert!(j.settled_at(6) && !j.settled_at(7));
        j.set_hold(Hold::Nothing);
        assert!(j.settled_at(7));
        j.set_hold(Hold::Synced);
        j.stop();
        assert!(j.settled_at(7), "a stopped journal holds nobody");
    }
}
