//! Clients blocked by BLPOP, BLMOVE, BZPOPMIN, XREAD BLOCK and friends.
//!
//! A blocking command first tries to serve itself. When it finds nothing, it
//! registers a [`Waiter`] here while it still holds its keys' shard locks, so
//! a write that comes after its look cannot miss it, and the connection then
//! waits on the waiter (see `connection.rs`) without holding any lock.
//!
//! Writes make keys *ready*: the keyspace reports every key it creates (and
//! every key it deletes, for XREADGROUP's sake) while anyone is blocked, XADD
//! reports the stream it grew, XGROUP DESTROY the stream it changed, and
//! SWAPDB, FLUSHDB and FLUSHALL every waited-on key of their databases. The
//! reports go to a list of the writing thread ([`crate::keyspace::ready`]);
//! when the writer's command has finished and released its locks, the
//! command layer (`commands::blocked::serve_ready`) runs, on that thread,
//! the commands of the clients waiting on those keys through
//! [`Blocking::serve_key`], first come first served, in *serve mode*: the
//! command looks only at the ready key and either produces the reply,
//! encoded for the waiter's connection, or nothing, in which case the
//! client stays blocked. This module is the registry and its state
//! machine; it knows nothing of commands.
//!
//! While nobody is blocked, all of this costs the keyspace one relaxed load
//! per key stored or deleted, and the command path one thread-local read:
//! no lock, no allocation.
//!
//! `WAIT` blocks here too, on no key: its waiter waits for replicas to
//! acknowledge the stream up to the changes made before it
//! ([`AckTarget`]), and the replication side serves it
//! ([`Blocking::serve_acks`]) whenever an acknowledgement comes, a
//! replica leaves, or the stream grows.
//!
//! `EXEC` runs its commands with `Waits::AnswerNow`, so they answer at once;
//! waiters are served once, after the whole transaction, since serving
//! follows the client's command (`EXEC`), not the commands it queued. A
//! blocked RESPB channel holds up only itself (see [`crate::net::mux`]).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use kvik_protocol::commands::CommandId;
use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::respb::RespbReplyWriter;
use kvik_protocol::{CommandArgs, ReplySink};
use tokio::sync::Notify;

use crate::keyspace::ready;
use crate::metrics::stats::Stats;

/// Redis's error for a client unblocked by `CLIENT UNBLOCK ... ERROR`.
pub const UNBLOCKED: &[u8] = b"UNBLOCKED client unblocked via CLIENT UNBLOCK";

/// How the replies of a blocked client are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// RESP2 or RESP3 on a connection of its own.
    Resp(Protocol),
    /// RESPB frames on a mux channel.
    Respb(u16),
}

/// Why a wait ended without the command being served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancel {
    /// The timeout passed, or `CLIENT UNBLOCK id TIMEOUT`.
    Timeout,
    /// `CLIENT UNBLOCK id ERROR`.
    Error,
    /// The client is gone (killed, disconnected, server stopping).
    Gone,
}

/// Where a waiter is in its life.
#[derive(Debug)]
enum Status {
    /// Queued on its keys.
    Waiting,
    /// A thread is running its command; `cancel` is what to do if that
    /// finds nothing, `recheck` that another thread met it meanwhile and
    /// its keys must be looked at again once it is released.
    Serving { cancel: Option<Cancel>, recheck: bool },
    /// Served: the reply to send.
    Done(Vec<u8>),
    /// The wait ended without data.
    Cancelled(Cancel),
}

/// The final state of a wait, for the connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The reply bytes to send (empty when replies are switched off).
    Reply(Vec<u8>),
    /// The client is to be closed.
    Gone,
}

/// What a blocking command that found nothing registers ([`Blocking::block`]).
#[derive(Debug)]
pub struct NewWaiter {
    /// The blocked client's id.
    pub client: u64,
    /// Its selected database.
    pub db: usize,
    /// How its replies are encoded.
    pub encoding: Encoding,
    /// Whether `CLIENT REPLY OFF`/`SKIP` drops the reply.
    pub silent: bool,
    /// The command to run again, and its arguments.
    pub cmd: CommandId,
    /// See `cmd`.
    pub args: CommandArgs,
    /// The keys it waits on, in the order given.
    pub keys: Vec<Box<[u8]>>,
    /// Whether deleting a key ends the wait (XREADGROUP).
    pub on_delete: bool,
    /// When the wait ends without data; `None`: never.
    pub deadline: Option<Instant>,
    /// For `WAIT`: the acknowledgements it waits for (then `keys` is empty).
    pub acks: Option<AckTarget>,
}

/// What a client in `WAIT` waits for: `wanted` replicas that acknowledged
/// the stream's `offset`, the one that holds every change up to `place`.
#[derive(Debug, Clone, Copy)]
pub struct AckTarget {
    /// The last place of the changes waited for.
    pub place: u64,
    /// How many replicas must acknowledge them.
    pub wanted: usize,
    /// The offset that holds them, once the stream does.
    pub offset: Option<u64>,
    /// How many replicas acknowledged that offset when last counted.
    pub count: usize,
}

/// [`AckTarget`] as a waiter keeps it, counted again as acknowledgements
/// come.
#[derive(Debug)]
struct AckWait {
    place: u64,
    wanted: usize,
    /// [`NO_OFFSET`] until the stream holds `place`.
    offset: AtomicU64,
    count: AtomicUsize,
}

/// [`AckWait::offset`] before the stream holds the place.
const NO_OFFSET: u64 = u64::MAX;

/// One blocked client: its command, ready to run again, and its wait.
#[derive(Debug)]
pub struct Waiter {
    /// The blocked client's id.
    pub client: u64,
    db: usize,
    encoding: Encoding,
    /// Whether `CLIENT REPLY OFF`/`SKIP` drops the reply.
    silent: bool,
    cmd: CommandId,
    args: CommandArgs,
    keys: Vec<Box<[u8]>>,
    /// Whether the waiter must hear that a key was deleted (XREADGROUP).
    on_delete: bool,
    /// When the wait ends without data; `None`: never.
    pub deadline: Option<Instant>,
    acks: Option<AckWait>,
    status: Mutex<Status>,
    wake: Notify,
}

impl Waiter {
    fn status(&self) -> MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Set the final status and wake the connection.
    fn finish(&self, status: Status) {
        *self.status() = status;
        self.wake.notify_one();
    }

    /// The final state, when the wait has ended.
    fn ended(&self, stats: &Stats) -> Option<Ended> {
        let mut status = self.status();
        let ended = match &mut *status {
            Status::Waiting | Status::Serving { .. } => return None,
            Status::Done(bytes) => Ended::Reply(std::mem::take(bytes)),
            Status::Cancelled(Cancel::Gone) => Ended::Gone,
            // WAIT answers a timeout with the replicas that acknowledged.
            Status::Cancelled(Cancel::Timeout) if self.acks.is_some() => {
                let count = self.acks.as_ref().map_or(0, |a| a.count.load(Ordering::Acquire));
                Ended::Reply(self.encode(|s| s.integer(i64::try_from(count).unwrap_or(i64::MAX))))
            }
            // Every blocking command answers a timeout with a null array,
            // BLMOVE too (its immediate answer inside EXEC is a null bulk).
            Status::Cancelled(Cancel::Timeout) => Ended::Reply(self.encode(|s| s.null_array())),
            Status::Cancelled(Cancel::Error) => {
                stats.error_reply(UNBLOCKED);
                Ended::Reply(self.encode(|s| s.error(UNBLOCKED)))
            }
        };
        Some(match ended {
            Ended::Reply(_) if self.silent => Ended::Reply(Vec::new()),
            other => other,
        })
    }

    /// One reply in the waiter's encoding.
    fn encode(&self, write: impl FnOnce(&mut dyn ReplySink)) -> Vec<u8> {
        let mut out = Vec::new();
        match self.encoding {
            Encoding::Resp(protocol) => write(&mut RespWriter::new(&mut out, protocol)),
            Encoding::Respb(mux) => write(&mut RespbReplyWriter::new(&mut out, mux)),
        }
        out
    }

    /// The database its command runs in.
    pub fn db(&self) -> usize {
        self.db
    }

    /// How its replies are encoded.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Its command.
    pub fn cmd(&self) -> CommandId {
        self.cmd
    }

    /// Its command's arguments.
    pub fn args(&self) -> &CommandArgs {
        &self.args
    }

    /// Wait until the waiter's state changes (served, cancelled, or a
    /// cancelled run finished); a change before the call is not lost.
    pub async fn changed(&self) {
        self.wake.notified().await;
    }
}

/// The blocked clients of a server.
#[derive(Debug)]
pub struct Blocking {
    /// Number of queued waiters, shared with the keyspace, which reports
    /// key creations only while it is non-zero.
    count: Arc<AtomicUsize>,
    /// Number of waiters in `WAIT`, so that acknowledgements cost nothing
    /// while there are none.
    ack_waiting: AtomicUsize,
    registry: Mutex<Registry>,
}

/// A key of a database: (database index, key).
type Slot = (usize, Box<[u8]>);

/// The queues, under one lock. Lock order: shard locks, then this, then a
/// waiter's status.
#[derive(Debug, Default)]
struct Registry {
    /// Waiters per (database, key), first come first.
    queues: HashMap<Slot, VecDeque<Arc<Waiter>>>,
    /// Each blocked client's waiter, until its connection is done with it.
    by_client: HashMap<u64, Arc<Waiter>>,
    /// The waiters in `WAIT`, first come first.
    acks: Vec<Arc<Waiter>>,
}

impl Blocking {
    /// A registry counting its waiters in `count` (the keyspace's gate).
    pub fn new(count: Arc<AtomicUsize>) -> Self {
        Blocking { count, ack_waiting: AtomicUsize::new(0), registry: Mutex::default() }
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of blocked clients (`INFO`'s `blocked_clients`).
    pub fn blocked(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether client `id` is blocked (`CLIENT LIST`'s flag `b`).
    pub fn is_blocked(&self, id: u64) -> bool {
        self.blocked() > 0 && self.lock().by_client.get(&id).is_some_and(|w| !is_final(&w.status()))
    }

    /// The waiter of client `id`, for its connection to wait on.
    pub fn waiter(&self, id: u64) -> Option<Arc<Waiter>> {
        self.lock().by_client.get(&id).cloned()
    }

    /// The connection of client `id` is done with its waiter.
    pub fn release(&self, id: u64) {
        self.lock().by_client.remove(&id);
    }

    fn add(&self, waiter: Arc<Waiter>) {
        let mut reg = self.lock();
        for key in &waiter.keys {
            reg.queues.entry((waiter.db, key.clone())).or_default().push_back(Arc::clone(&waiter));
        }
        if waiter.acks.is_some() {
            reg.acks.push(Arc::clone(&waiter));
            self.ack_waiting.fetch_add(1, Ordering::Relaxed);
        }
        reg.by_client.insert(waiter.client, waiter);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Take `waiter` off its queues (registry locked).
    fn dequeue(&self, reg: &mut Registry, waiter: &Arc<Waiter>) {
        for key in &waiter.keys {
            let slot = (waiter.db, key.clone());
            if let Some(queue) = reg.queues.get_mut(&slot) {
                queue.retain(|w| !Arc::ptr_eq(w, waiter));
                if queue.is_empty() {
                    reg.queues.remove(&slot);
                }
            }
        }
        if waiter.acks.is_some() {
            reg.acks.retain(|w| !Arc::ptr_eq(w, waiter));
            self.ack_waiting.fetch_sub(1, Ordering::Relaxed);
        }
        self.count.fetch_sub(1, Ordering::Relaxed);
    }

    /// End `waiter`'s wait for `why`, unless it was served already; a
    /// waiter being served ends once its command has run. False when the
    /// wait had already ended or was being ended.
    pub fn cancel(&self, waiter: &Arc<Waiter>, why: Cancel) -> bool {
        let mut reg = self.lock();
        let mut status = waiter.status();
        match &mut *status {
            Status::Waiting => {
                drop(status);
                self.dequeue(&mut reg, waiter);
                waiter.finish(Status::Cancelled(why));
                true
            }
            Status::Serving { cancel: cancel @ None, .. } => {
                *cancel = Some(why);
                true
            }
            _ => false,
        }
    }

    /// Client `id` is gone: end its wait, if any, and forget its waiter.
    /// Nothing is popped for it afterwards (a command already running for
    /// it completes, and its reply is dropped).
    pub fn abandon(&self, id: u64) {
        if let Some(waiter) = self.waiter(id) {
            self.cancel(&waiter, Cancel::Gone);
            self.release(id);
        }
    }

    /// `CLIENT UNBLOCK id TIMEOUT|ERROR`: whether the client was blocked.
    pub fn unblock(&self, id: u64, why: Cancel) -> bool {
        match self.waiter(id) {
            Some(w) => self.cancel(&w, why),
            None => false,
        }
    }

    /// Databases `dbs` (`None`: all) changed wholesale (SWAPDB, FLUSHDB,
    /// FLUSHALL): every key waited on in them is ready.
    pub fn dbs_changed(&self, dbs: Option<&[usize]>) {
        if self.blocked() == 0 {
            return;
        }
        let reg = self.lock();
        for (db, key) in reg.queues.keys() {
            if dbs.is_none_or(|dbs| dbs.contains(db)) {
                push_ready(*db, key);
            }
        }
    }

    /// Number of blocked clients with a timeout (`clients_in_timeout_table`).
    pub fn with_timeout(&self) -> usize {
        if self.blocked() == 0 {
            return 0;
        }
        let reg = self.lock();
        reg.by_client.values().filter(|w| w.deadline.is_some() && !is_final(&w.status())).count()
    }

    /// The state of a wait, once it ended (an `UNBLOCKED` error counted in `stats`).
    pub fn ended(&self, stats: &Stats, waiter: &Waiter) -> Option<Ended> {
        waiter.ended(stats)
    }

    /// Block a client: queue its waiter on its keys.
    pub fn block(&self, w: NewWaiter) {
        let waiter = Waiter {
            client: w.client,
            db: w.db,
            encoding: w.encoding,
            silent: w.silent,
            cmd: w.cmd,
            args: w.args,
            keys: w.keys,
            on_delete: w.on_delete,
            deadline: w.deadline,
            acks: w.acks.map(|a| AckWait {
                place: a.place,
                wanted: a.wanted,
                offset: AtomicU64::new(a.offset.unwrap_or(NO_OFFSET)),
                count: AtomicUsize::new(a.count),
            }),
            status: Mutex::new(Status::Waiting),
            wake: Notify::new(),
        };
        self.add(Arc::new(waiter));
    }

    /// Whether any client is in `WAIT`.
    pub fn waits_for_acks(&self) -> bool {
        self.ack_waiting.load(Ordering::Relaxed) > 0
    }

    /// Count again what the clients in `WAIT` wait for, and answer those
    /// with enough: `offset_of` gives the stream's offset that holds a
    /// place (`None`: not yet), `acks` the offsets the online replicas
    /// acknowledged.
    pub fn serve_acks(&self, offset_of: impl Fn(u64) -> Option<u64>, acks: &[u64]) {
        if !self.waits_for_acks() {
            return;
        }
        let mut reg = self.lock();
        let waiters = reg.acks.clone();
        for waiter in waiters {
            let Some(wait) = &waiter.acks else { continue };
            if !matches!(*waiter.status(), Status::Waiting) {
                continue;
            }
            let mut offset = wait.offset.load(Ordering::Acquire);
            if offset == NO_OFFSET {
                match offset_of(wait.place) {
                    Some(o) => {
                        offset = o;
                        wait.offset.store(o, Ordering::Release);
                    }
                    None => continue,
                }
            }
            let count = acks.iter().filter(|&&a| a >= offset).count();
            wait.count.store(count, Ordering::Release);
            if count >= wait.wanted {
                self.dequeue(&mut reg, &waiter);
                let reply = waiter.encode(|s| s.integer(i64::try_from(count).unwrap_or(i64::MAX)));
                waiter.finish(Status::Done(reply));
            }
        }
    }

    /// Every key someone waits on, with its database.
    pub fn waited_keys(&self) -> Vec<(usize, Box<[u8]>)> {
        self.lock().queues.keys().cloned().collect()
    }

    /// Serve the waiters on `key` of `db` in order until one finds nothing
    /// there: `run` runs a waiter's command in serve mode (its reply, empty
    /// when it found nothing), `exists` says whether the key still holds a
    /// value. The number of commands run.
    pub fn serve_key(
        &self,
        db: usize,
        key: &[u8],
        mut run: impl FnMut(&Waiter) -> Vec<u8>,
        exists: impl Fn() -> bool,
    ) -> usize {
        let blocking = self;
        let queue: Vec<Arc<Waiter>> = match blocking.lock().queues.get(&(db, Box::from(key))) {
            Some(q) => q.iter().cloned().collect(),
            None => return 0,
        };
        let mut runs = 0;
        let mut key_gone = false;
        for waiter in queue {
            if key_gone && !waiter.on_delete {
                continue;
            }
            {
                let _reg = blocking.lock();
                let mut status = waiter.status();
                match &mut *status {
                    Status::Waiting => *status = Status::Serving { cancel: None, recheck: false },
                    Status::Serving { recheck, .. } => {
                        // Another thread is trying it: that thread looks at its
                        // keys again when done, so the order holds.
                        *recheck = true;
                        return runs;
                    }
                    Status::Done(_) | Status::Cancelled(_) => continue,
                }
            }
            runs += 1;
            let reply = run(&waiter);
            let mut reg = blocking.lock();
            let status = std::mem::replace(&mut *waiter.status(), Status::Waiting);
            let Status::Serving { cancel, recheck } = status else { continue };
            if recheck {
                for k in &waiter.keys {
                    push_ready(waiter.db, k);
                }
            }
            if !reply.is_empty() {
                blocking.dequeue(&mut reg, &waiter);
                waiter.finish(Status::Done(reply));
                continue;
            }
            if let Some(why) = cancel {
                blocking.dequeue(&mut reg, &waiter);
                waiter.finish(Status::Cancelled(why));
            }
            drop(reg);
            if !exists() {
                key_gone = true;
            }
        }
        runs
    }
}

fn is_final(status: &Status) -> bool {
    matches!(status, Status::Done(_) | Status::Cancelled(_))
}

/// Note that `key` of database `db` may now serve blocked clients. The
/// keyspace notes every key it creates or deletes while clients are
/// blocked itself ([`ready`]); XADD and XGROUP DESTROY for the stream.
pub fn push_ready(db: usize, key: &[u8]) {
    ready::push(db, key);
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvik_protocol::resp::writer::Protocol;

    fn waiter(client: u64, keys: &[&[u8]]) -> Arc<Waiter> {
        Arc::new(Waiter {
            client,
            db: 0,
            encoding: Encoding::Resp(Protocol::Resp2),
            silent: false,
            cmd: kvik_protocol::commands::id::BLPOP,
            args: CommandArgs::new(),
            keys: keys.iter().map(|k| Box::<[u8]>::from(*k)).collect(),
            on_delete: false,
            deadline: None,
            acks: None,
            status: Mutex::new(Status::Waiting),
            wake: Notify::new(),
        })
    }

    fn wait_for(blocking: &Blocking, client: u64, wanted: usize) -> Arc<Waiter> {
        blocking.block(NewWaiter {
            client,
            db: 0,
            encoding: Encoding::Resp(Protocol::Resp2),
            silent: false,
            cmd: kvik_protocol::commands::id::WAIT,
            args: CommandArgs::new(),
            keys: Vec::new(),
            on_delete: false,
            deadline: None,
            acks: Some(AckTarget { place: 7, wanted, offset: None, count: 0 }),
        });
        blocking.waiter(client).expect("blocked")
    }

    #[test]
    fn a_wait_ends_when_enough_replicas_acknowledged_its_offset() {
        let blocking = Blocking::new(Arc::default());
        let stats = Stats::default();
        let w = wait_for(&blocking, 1, 2);
        assert!(blocking.waits_for_acks() && blocking.blocked() == 1);
        // Not in the stream yet: nothing is counted.
        blocking.serve_acks(|_| None, &[500, 500]);
        assert_eq!(blocking.ended(&stats, &w), None);
        blocking.serve_acks(|place| (place == 7).then_some(100), &[100, 99]);
        assert_eq!(blocking.ended(&stats, &w), None, "one replica has it");
        // The offset stays the one first found, as the stream grows.
        blocking.serve_acks(|_| Some(10_000), &[150, 100]);
        assert_eq!(blocking.ended(&stats, &w), Some(Ended::Reply(b":2\r\n".to_vec())));
        assert!(!blocking.waits_for_acks() && blocking.blocked() == 0);
    }

    #[test]
    fn a_wait_that_times_out_answers_the_count_so_far() {
        let blocking = Blocking::new(Arc::default());
        let stats = Stats::default();
        let w = wait_for(&blocking, 1, 3);
        blocking.serve_acks(|_| Some(100), &[100, 50, 120]);
        assert!(blocking.cancel(&w, Cancel::Timeout));
        assert_eq!(blocking.ended(&stats, &w), Some(Ended::Reply(b":2\r\n".to_vec())));
        assert!(!blocking.waits_for_acks());
    }

    #[test]
    fn queues_keep_order_and_cancel_removes_everywhere() {
        let blocking = Blocking::new(Arc::default());
        let (a, b) = (waiter(1, &[b"k", b"j"]), waiter(2, &[b"k"]));
        blocking.add(Arc::clone(&a));
        blocking.add(Arc::clone(&b));
        assert_eq!(blocking.blocked(), 2);
        assert!(blocking.is_blocked(1) && blocking.is_blocked(2) && !blocking.is_blocked(3));
        {
            let reg = blocking.lock();
            let q = &reg.queues[&(0, Box::from(&b"k"[..]))];
            assert_eq!(q.iter().map(|w| w.client).collect::<Vec<_>>(), [1, 2]);
        }
        assert!(blocking.unblock(1, Cancel::Timeout));
        assert!(!blocking.unblock(1, Cancel::Timeout), "already unblocked");
        assert_eq!(blocking.blocked(), 1);
        assert!(!blocking.lock().queues.contains_key(&(0, Box::from(&b"j"[..]))));
        let stats = Stats::default();
        assert_eq!(a.ended(&stats), Some(Ended::Reply(b"*-1\r\n".to_vec())));
        assert!(blocking.cancel(&b, Cancel::Error));
        assert_eq!(b.ended(&stats), Some(Ended::Reply(b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n".to_vec())));
        assert_eq!(blocking.blocked(), 0);
        assert!(blocking.lock().queues.is_empty());
        blocking.release(1);
        blocking.release(2);
        assert!(blocking.waiter(1).is_none());
    }

    #[test]
    fn a_waiter_being_served_is_cancelled_only_after_its_run() {
        let blocking = Blocking::new(Arc::default());
        let w = waiter(7, &[b"k"]);
        blocking.add(Arc::clone(&w));
        *w.status() = Status::Serving { cancel: None, recheck: false };
        assert!(blocking.cancel(&w, Cancel::Timeout));
        assert!(!blocking.cancel(&w, Cancel::Gone), "one cancel at a time");
        assert!(w.ended(&Stats::default()).is_none(), "the run decides");
        assert_eq!(blocking.blocked(), 1);
    }
}
