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
//! reports go to a list of the writing thread; when the writer's command has
//! finished and released its locks, [`serve_ready`] runs, on that thread,
//! the commands of the clients waiting on those keys, first come first
//! served, in *serve mode*: the command looks only at the ready key and
//! either produces the reply, encoded for the waiter's connection, or
//! nothing, in which case the client stays blocked.
//!
//! While nobody is blocked, all of this costs the keyspace one relaxed load
//! per key stored or deleted, and the command path one thread-local read:
//! no lock, no allocation.
//!
//! `EXEC` runs its commands with `may_block` false, so they answer at once;
//! waiters are served once, after the whole transaction, since serving
//! follows the client's command (`EXEC`), not the commands it queued. A
//! blocked RESPB channel holds up only itself (see [`crate::mux`]).

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use kvik_protocol::commands::CommandId;
use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::respb::RespbReplyWriter;
use kvik_protocol::{CommandArgs, ReplySink};
use tokio::sync::Notify;

use crate::commands::{self, Ctx, Outcome, ReplyTarget, Request};
use crate::keyspace::{now_ms, ready, CommandClock};
use crate::session::Session;
use crate::state::ServerState;

/// Most waiters one round of [`serve_ready`] runs before leaving the rest
/// for the next command: a bound on the work one write can cause.
const SERVE_LIMIT: usize = 100_000;

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

/// What a blocking command answers at once when it may not block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Empty {
    /// A null array (BLPOP, BLMPOP, BZPOP*, BZMPOP, XREAD, XREADGROUP).
    NullArray,
    /// A null bulk string (BRPOPLPUSH and BLMOVE, when they may not block).
    NullBulk,
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
    fn ended(&self, state: &ServerState) -> Option<Ended> {
        let mut status = self.status();
        let ended = match &mut *status {
            Status::Waiting | Status::Serving { .. } => return None,
            Status::Done(bytes) => Ended::Reply(std::mem::take(bytes)),
            Status::Cancelled(Cancel::Gone) => Ended::Gone,
            // Every blocking command answers a timeout with a null array,
            // BLMOVE too (its immediate answer inside EXEC is a null bulk).
            Status::Cancelled(Cancel::Timeout) => Ended::Reply(self.encode(|s| s.null_array())),
            Status::Cancelled(Cancel::Error) => {
                state.stats.error_reply(UNBLOCKED);
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
}

impl Blocking {
    /// A registry counting its waiters in `count` (the keyspace's gate).
    pub fn new(count: Arc<AtomicUsize>) -> Self {
        Blocking { count, registry: Mutex::default() }
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

    /// The state of a wait, once it ended.
    pub fn ended(&self, state: &ServerState, waiter: &Waiter) -> Option<Ended> {
        waiter.ended(state)
    }
}

fn is_final(status: &Status) -> bool {
    matches!(status, Status::Done(_) | Status::Cancelled(_))
}

/// What a blocking command registers when it finds nothing.
pub struct Wait<'k> {
    /// The keys it waits on, in the order given.
    pub keys: &'k [&'k [u8]],
    /// The request to run again when a key is ready; `None`: the request as sent.
    pub args: Option<CommandArgs>,
    /// When to give up; `None`: never.
    pub deadline: Option<Instant>,
    /// The reply when it may not wait (inside `EXEC`).
    pub empty: Empty,
    /// Whether deleting a key ends the wait (XREADGROUP).
    pub on_delete: bool,
}

/// A blocking command found nothing: block the client (`c.outcome` becomes
/// [`Outcome::Block`]), answer as on timeout when it may not block (inside
/// `EXEC`), or leave no reply when this is a waiter being served, which
/// keeps it blocked. Call it while holding the keys' shard locks.
pub fn wait<T: ReplyTarget>(c: &mut Ctx<'_, T>, wait: Wait<'_>) {
    if serving().is_some() {
        return;
    }
    if !c.may_block {
        return match wait.empty {
            Empty::NullArray => c.reply(|s| s.null_array()),
            Empty::NullBulk => c.reply(|s| s.null()),
        };
    }
    // Blocking commands have no subcommands: the name says which it is.
    let Some(cmd) = kvik_protocol::commands::lookup(c.req.arg(0)).map(|spec| spec.id) else { return };
    let args = wait.args.unwrap_or_else(|| copy_args(&c.req));
    let session = &*c.session;
    let waiter = Waiter {
        client: session.id,
        db: session.db,
        encoding: c.target.encoding(session),
        silent: session.reply_mode == crate::session::ReplyMode::Off || session.skip_this,
        cmd,
        args,
        keys: wait.keys.iter().map(|k| Box::<[u8]>::from(*k)).collect(),
        on_delete: wait.on_delete,
        deadline: wait.deadline,
        status: Mutex::new(Status::Waiting),
        wake: Notify::new(),
    };
    c.state.blocking.add(Arc::new(waiter));
    c.outcome = Outcome::Block;
}

/// An owned copy of the request's arguments.
pub fn copy_args(req: &Request<'_>) -> CommandArgs {
    let mut args = CommandArgs::new();
    for i in 0..req.argc() {
        args.push_owned(req.arg(i));
    }
    args
}

/// A blocking command's timeout in seconds (BLPOP & co.): its deadline, or
/// Redis's error. Redis multiplies by 1000 in long double and rounds up; a
/// product out of a 64-bit integer's range turns negative there, and a
/// deadline past the clock's range never comes.
pub fn timeout_secs(text: &[u8]) -> Result<Option<Instant>, &'static [u8]> {
    use crate::types::float80::F80;
    const NOT_FLOAT: &[u8] = b"ERR timeout is not a float or out of range";
    let value = F80::parse(text).ok_or(NOT_FLOAT)?;
    let ms = match value {
        F80::Inf { .. } => return Err(NEGATIVE),
        F80::Finite { neg, mant, exp } => millis_ceil(neg, mant, exp).ok_or(NEGATIVE)?,
    };
    if ms < 0 {
        return Err(NEGATIVE);
    }
    Ok(deadline_after(ms))
}

/// Redis's error for a negative timeout.
const NEGATIVE: &[u8] = b"ERR timeout is negative";

/// `±mant × 2^exp × 1000`, rounded up; `None` when out of `i64`'s range.
fn millis_ceil(neg: bool, mant: u64, exp: i32) -> Option<i64> {
    let scaled = u128::from(mant) * 1000;
    if scaled == 0 {
        return Some(0);
    }
    let (whole, frac) = if exp >= 0 {
        if scaled.leading_zeros() <= exp.unsigned_abs() {
            return None;
        }
        (scaled << exp, false)
    } else {
        let shift = exp.unsigned_abs();
        if shift >= 128 {
            (0, scaled != 0)
        } else {
            (scaled >> shift, scaled & ((1u128 << shift) - 1) != 0)
        }
    };
    if neg {
        // Rounding up a negative value truncates it.
        let w = i64::try_from(whole).ok()?;
        Some(-w)
    } else {
        i64::try_from(whole + u128::from(frac)).ok()
    }
}

/// XREAD's `BLOCK milliseconds`: its deadline, or Redis's error.
pub fn timeout_ms(text: &[u8]) -> Result<Option<Instant>, &'static [u8]> {
    let ms = kvik_protocol::number::parse_i64(text).ok_or(&b"ERR timeout is not an integer or out of range"[..])?;
    if ms < 0 {
        return Err(NEGATIVE);
    }
    Ok(deadline_after(ms))
}

/// The deadline `ms` milliseconds from now; `None` for 0 (wait forever) and
/// for deadlines too far to represent.
pub fn deadline_after(ms: i64) -> Option<Instant> {
    if ms == 0 {
        return None;
    }
    // Redis adds the timeout to the Unix time; beyond i64 it never fires.
    now_ms().checked_add(ms)?;
    Instant::now().checked_add(std::time::Duration::from_millis(ms.unsigned_abs()))
}

thread_local! {
    /// The key a waiter is being served from, while its command runs.
    static SERVING: RefCell<Option<Box<[u8]>>> = const { RefCell::new(None) };
}

/// Note that `key` of database `db` may now serve blocked clients. The
/// keyspace notes every key it creates or deletes while clients are
/// blocked itself ([`ready`]); XADD and XGROUP DESTROY for the stream.
pub fn push_ready(db: usize, key: &[u8]) {
    ready::push(db, key);
}

/// [`push_ready`] when anyone in `state` is blocked (XADD, XGROUP DESTROY).
pub fn signal(state: &ServerState, db: usize, key: &[u8]) {
    if state.blocking.blocked() > 0 {
        push_ready(db, key);
    }
}

/// The keys a blocking command looks at: those it names, or in serve mode
/// only the key it is served from, as Redis serves a blocked client from
/// the key that became ready.
pub fn keys_to_serve<'k>(named: Vec<&'k [u8]>, serving: &'k Option<Box<[u8]>>) -> Vec<&'k [u8]> {
    match serving {
        Some(key) => vec![&key[..]],
        None => named,
    }
}

/// The key the running command serves a waiter from, in serve mode.
pub fn serving() -> Option<Box<[u8]>> {
    SERVING.with(|s| s.borrow().clone())
}

/// Serve the clients blocked on keys made ready by this thread's last
/// command. Call it when the command has finished and holds no lock.
///
/// Inlined, so that the usual answer (nothing is ready) costs every
/// command one thread-local load rather than a call into the large body.
#[inline]
pub fn serve_ready(state: &ServerState) {
    if ready::any() {
        serve_ready_keys(state);
    }
}

/// [`serve_ready`] once some key was made ready.
#[inline(never)]
fn serve_ready_keys(state: &ServerState) {
    let mut runs = 0;
    loop {
        if ready::take_overflow() {
            let keys: Vec<(usize, Box<[u8]>)> = state.blocking.lock().queues.keys().cloned().collect();
            for (db, key) in keys {
                push_ready(db, &key);
            }
        }
        if runs >= SERVE_LIMIT {
            // Enough for one write: the rest is served after this thread's
            // next command.
            return;
        }
        let Some((db, key)) = ready::pop() else { break };
        if state.blocking.blocked() > 0 {
            runs += serve_key(state, db, &key);
        }
    }
    ready::settled();
}

/// Serve the waiters on `key` in order until one finds nothing there; the
/// number of commands run.
fn serve_key(state: &ServerState, db: usize, key: &[u8]) -> usize {
    let blocking = &state.blocking;
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
        let reply = run_waiter(state, &waiter, key);
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
        if !key_exists(state, db, key) {
            key_gone = true;
        }
    }
    runs
}

/// Whether `key` of `db` holds a value now.
fn key_exists(state: &ServerState, db: usize, key: &[u8]) -> bool {
    state.keyspace.lock_key(key).db(db).inspect(key, now_ms()).is_some()
}

/// Run `waiter`'s command in serve mode on `key`: its reply, or nothing
/// when it found nothing to serve.
fn run_waiter(state: &ServerState, waiter: &Waiter, key: &[u8]) -> Vec<u8> {
    let mut session = Session::new(waiter.client);
    session.db = waiter.db;
    // A RESPB channel's replies have RESP3 shapes.
    session.protocol = match waiter.encoding {
        Encoding::Resp(protocol) => protocol,
        Encoding::Respb(_) => Protocol::Resp3,
    };
    let mut out = Vec::new();
    let mut target = Encoded { out: &mut out, encoding: waiter.encoding };
    SERVING.with(|s| *s.borrow_mut() = Some(key.into()));
    let clock = CommandClock::start();
    let req = Request::new(&waiter.args, &[]);
    let mut ctx = Ctx {
        state,
        req,
        session: &mut session,
        target: &mut target,
        failed: false,
        outcome: Outcome::Continue,
        may_block: false,
        changes: 0,
    };
    commands::dispatch(waiter.cmd, &mut ctx);
    state.stats.record_changes(ctx.changes);
    // A wait that ends in an error (NOGROUP for a destroyed group) is a
    // failed call, as Redis counts it when the client is unblocked.
    if ctx.failed {
        if let Some(stat) = state.stats.command(waiter.cmd) {
            stat.failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    drop(clock);
    SERVING.with(|s| *s.borrow_mut() = None);
    out
}

/// Replies written in a waiter's encoding.
struct Encoded<'a> {
    out: &'a mut Vec<u8>,
    encoding: Encoding,
}

impl ReplyTarget for Encoded<'_> {
    fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, _session: &Session, write: F) {
        match self.encoding {
            Encoding::Resp(protocol) => write(&mut RespWriter::new(self.out, protocol)),
            Encoding::Respb(mux) => write(&mut RespbReplyWriter::new(self.out, mux)),
        }
    }

    fn encoding(&self, _session: &Session) -> Encoding {
        self.encoding
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_as_redis_reads_them() {
        assert_eq!(timeout_secs(b"0"), Ok(None));
        assert!(timeout_secs(b"0.01").is_ok_and(|d| d.is_some()));
        assert!(timeout_secs(b"0.0001").is_ok_and(|d| d.is_some()), "rounded up to a millisecond");
        assert!(timeout_secs(b"0x10").is_ok_and(|d| d.is_some()));
        assert_eq!(timeout_secs(b"abc"), Err(&b"ERR timeout is not a float or out of range"[..]));
        assert_eq!(timeout_secs(b" 1"), Err(&b"ERR timeout is not a float or out of range"[..]));
        assert_eq!(timeout_secs(b"nan"), Err(&b"ERR timeout is not a float or out of range"[..]));
        assert_eq!(timeout_secs(b"-1"), Err(NEGATIVE));
        assert_eq!(timeout_secs(b"inf"), Err(NEGATIVE));
        assert_eq!(timeout_secs(b"1e100"), Err(NEGATIVE));
        assert_eq!(timeout_secs(b"9223372036854775.808"), Err(NEGATIVE));
        assert_eq!(timeout_secs(b"9223372036854775.807"), Ok(None), "beyond the clock: forever");
        assert_eq!(timeout_ms(b"1.5"), Err(&b"ERR timeout is not an integer or out of range"[..]));
        assert_eq!(timeout_ms(b"-1"), Err(NEGATIVE));
        assert_eq!(timeout_ms(b"0"), Ok(None));
    }

    #[test]
    fn millis_round_up_exactly() {
        assert_eq!(millis_ceil(false, 1, 0), Some(1000));
        assert_eq!(millis_ceil(false, 1, -11), Some(1), "1/2048 s is 0.49 ms, rounded up");
        assert_eq!(millis_ceil(true, 1, -11), Some(0));
        assert_eq!(millis_ceil(false, 1, 80), None);
        assert_eq!(millis_ceil(false, 0, 200), Some(0));
    }

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
            status: Mutex::new(Status::Waiting),
            wake: Notify::new(),
        })
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
        let state = ServerState::default();
        assert_eq!(a.ended(&state), Some(Ended::Reply(b"*-1\r\n".to_vec())));
        assert!(blocking.cancel(&b, Cancel::Error));
        assert_eq!(b.ended(&state), Some(Ended::Reply(b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n".to_vec())));
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
        assert!(w.ended(&ServerState::default()).is_none(), "the run decides");
        assert_eq!(blocking.blocked(), 1);
    }

    /// Collects RESP replies, as a connection does.
    struct Collect(Vec<u8>);

    impl ReplyTarget for Collect {
        fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, session: &Session, write: F) {
            write(&mut RespWriter::new(&mut self.0, session.protocol));
        }
    }

    fn send(state: &ServerState, session: &mut Session, words: &[&str]) -> (Vec<u8>, Outcome) {
        let mut args = CommandArgs::new();
        for w in words {
            args.push_owned(w.as_bytes());
        }
        let mut out = Collect(Vec::new());
        let outcome = commands::execute(state, Request::new(&args, &[]), session, &mut out);
        (out.0, outcome)
    }

    #[test]
    fn a_push_serves_waiters_first_come_first_served() {
        let state = ServerState::default();
        let (mut a, mut b, mut pusher) = (Session::new(1), Session::new(2), Session::new(3));
        assert_eq!(send(&state, &mut a, &["BLPOP", "k", "0"]), (Vec::new(), Outcome::Block));
        assert_eq!(send(&state, &mut b, &["BRPOP", "other", "k", "0"]), (Vec::new(), Outcome::Block));
        assert_eq!(state.blocking.blocked(), 2);
        // The waiter is served before the pusher's next command runs.
        assert_eq!(send(&state, &mut pusher, &["RPUSH", "k", "x"]).0, b":1\r\n");
        assert_eq!(send(&state, &mut pusher, &["LPOP", "k"]).0, b"$-1\r\n");
        let wa = state.blocking.waiter(1).expect("waiter a");
        assert_eq!(wa.ended(&state), Some(Ended::Reply(b"*2\r\n$1\r\nk\r\n$1\r\nx\r\n".to_vec())));
        let wb = state.blocking.waiter(2).expect("waiter b");
        assert_eq!(wb.ended(&state), None, "still waiting");
        assert_eq!(state.blocking.blocked(), 1);
        assert_eq!(send(&state, &mut pusher, &["RPUSH", "k", "y", "z"]).0, b":2\r\n");
        assert_eq!(wb.ended(&state), Some(Ended::Reply(b"*2\r\n$1\r\nk\r\n$1\r\nz\r\n".to_vec())));
        assert_eq!(send(&state, &mut pusher, &["LRANGE", "k", "0", "-1"]).0, b"*1\r\n$1\r\ny\r\n");
        assert_eq!(state.blocking.blocked(), 0);
    }

    #[test]
    fn inside_exec_a_blocking_command_answers_at_once() {
        let state = ServerState::default();
        let mut session = Session::new(1);
        let mut args = CommandArgs::new();
        for w in ["BLMOVE", "a", "b", "LEFT", "LEFT", "0"] {
            args.push_owned(w.as_bytes());
        }
        let mut out = Collect(Vec::new());
        let mut ctx = Ctx {
            state: &state,
            req: Request::new(&args, &[]),
            session: &mut session,
            target: &mut out,
            failed: false,
            outcome: Outcome::Continue,
            may_block: false,
            changes: 0,
        };
        commands::dispatch(kvik_protocol::commands::id::BLMOVE, &mut ctx);
        assert_eq!(ctx.outcome, Outcome::Continue);
        assert_eq!(out.0, b"$-1\r\n");
        assert_eq!(state.blocking.blocked(), 0);
    }
}
