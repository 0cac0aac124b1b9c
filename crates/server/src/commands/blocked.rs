//! Blocking commands' side of waiting: registering a wait when a command
//! finds nothing ([`wait`]), the timeouts they take, and serving waiters
//! once their keys are ready ([`serve_ready`]): running a waiter's command
//! again in serve mode and handing its reply to the waiting connection.
//! The waiters themselves live in [`crate::registries::blocking`], which knows nothing
//! of commands.

use std::time::Instant;

use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::respb::RespbReplyWriter;
use kvik_protocol::{CommandArgs, ReplySink};

use super::{Ctx, Outcome, ReplyTarget, Request, Waits};
use crate::client::session::Session;
use crate::keyspace::{now_ms, ready, CommandClock};
use crate::registries::blocking::{push_ready, AckTarget, Encoding, NewWaiter, Waiter};
use crate::state::ServerState;

/// What a blocking command answers at once when it may not block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Empty {
    /// A null array (BLPOP, BLMPOP, BZPOP*, BZMPOP, XREAD, XREADGROUP).
    NullArray,
    /// A null bulk string (BRPOPLPUSH and BLMOVE, when they may not block).
    NullBulk,
}

/// Most waiters one round of [`serve_ready`] runs before leaving the rest
/// for the next command: a bound on the work one write can cause.
const SERVE_LIMIT: usize = 100_000;

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
    match c.waits {
        Waits::Block => {}
        Waits::Serve(_) => return,
        Waits::AnswerNow => {
            return match wait.empty {
                Empty::NullArray => c.reply(|s| s.null_array()),
                Empty::NullBulk => c.reply(|s| s.null()),
            }
        }
    }
    // Blocking commands have no subcommands: the name says which it is.
    let Some(cmd) = kvik_protocol::commands::lookup(c.req.arg(0)).map(|spec| spec.id) else { return };
    let args = wait.args.unwrap_or_else(|| copy_args(&c.req));
    let keys = wait.keys.iter().map(|k| Box::<[u8]>::from(*k)).collect();
    block(c, cmd, args, keys, wait.on_delete, wait.deadline, None);
}

/// Register the client's waiter and mark it blocked.
fn block<T: ReplyTarget>(
    c: &mut Ctx<'_, T>,
    cmd: kvik_protocol::commands::CommandId,
    args: CommandArgs,
    keys: Vec<Box<[u8]>>,
    on_delete: bool,
    deadline: Option<Instant>,
    acks: Option<AckTarget>,
) {
    let session = &*c.session;
    c.state.blocking.block(NewWaiter {
        client: session.id,
        db: session.db,
        encoding: c.target.encoding(session),
        silent: session.reply_mode == crate::client::session::ReplyMode::Off || session.skip_this,
        cmd,
        args,
        keys,
        on_delete,
        deadline,
        acks,
    });
    c.outcome = Outcome::Block;
}

/// Block the client in `WAIT` until `target` is met or `deadline` comes
/// (`c.outcome` becomes [`Outcome::Block`]). The caller answers at once
/// when it may not block.
pub fn wait_for_acks<T: ReplyTarget>(c: &mut Ctx<'_, T>, target: AckTarget, deadline: Option<Instant>) {
    block(c, kvik_protocol::commands::id::WAIT, CommandArgs::new(), Vec::new(), false, deadline, Some(target));
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

/// [`push_ready`] when anyone in `state` is blocked (XADD, XGROUP DESTROY).
pub fn signal(state: &ServerState, db: usize, key: &[u8]) {
    if state.blocking.blocked() > 0 {
        push_ready(db, key);
    }
}

/// The keys a blocking command looks at: those it names, or in serve mode
/// only the key it is served from, as Redis serves a blocked client from
/// the key that became ready.
pub fn keys_to_serve<'k>(named: Vec<&'k [u8]>, serving: Option<&'k [u8]>) -> Vec<&'k [u8]> {
    match serving {
        Some(key) => vec![key],
        None => named,
    }
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
            for (db, key) in state.blocking.waited_keys() {
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
            let run = |waiter: &Waiter| run_waiter(state, waiter, &key);
            runs += state.blocking.serve_key(db, &key, run, || key_exists(state, db, &key));
        }
    }
    ready::settled();
}

/// Whether `key` of `db` holds a value now.
fn key_exists(state: &ServerState, db: usize, key: &[u8]) -> bool {
    state.keyspace.lock_key(key).db(db).inspect(key, now_ms()).is_some()
}

/// Run `waiter`'s command in serve mode on `key`: its reply, or nothing
/// when it found nothing to serve.
fn run_waiter(state: &ServerState, waiter: &Waiter, key: &[u8]) -> Vec<u8> {
    let mut session = Session::new(waiter.client);
    session.db = waiter.db();
    // A RESPB channel's replies have RESP3 shapes.
    session.protocol = match waiter.encoding() {
        Encoding::Resp(protocol) => protocol,
        Encoding::Respb(_) => Protocol::Resp3,
    };
    let mut out = Vec::new();
    let mut target = Encoded { out: &mut out, encoding: waiter.encoding() };
    let clock = CommandClock::start();
    let req = Request::new(waiter.args(), &[]);
    let mut ctx = Ctx {
        state,
        req,
        session: &mut session,
        target: &mut target,
        failed: false,
        outcome: Outcome::Continue,
        waits: Waits::Serve(key),
        changes: 0,
    };
    super::dispatch(waiter.cmd(), &mut ctx);
    if ctx.session.effects.pending() {
        ctx.session.effects.command_done(req.argc(), |i| req.arg(i), ctx.session.db);
        ctx.session.effects.publish(state);
    }
    state.stats.record_changes(ctx.changes);
    // A wait that ends in an error (NOGROUP for a destroyed group) is a
    // failed call, as Redis counts it when the client is unblocked.
    if ctx.failed {
        if let Some(stat) = state.stats.command(waiter.cmd()) {
            stat.failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    drop(clock);
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
    use crate::registries::blocking::Ended;

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
    }

    #[test]
    fn millis_round_up_exactly() {
        assert_eq!(millis_ceil(false, 1, 0), Some(1000));
        assert_eq!(millis_ceil(false, 1, -11), Some(1), "1/2048 s is 0.49 ms, rounded up");
        assert_eq!(millis_ceil(true, 1, -11), Some(0));
        assert_eq!(millis_ceil(false, 1, 80), None);
        assert_eq!(millis_ceil(false, 0, 200), Some(0));
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
        let outcome = super::super::execute(state, Request::new(&args, &[]), session, &mut out);
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
        assert_eq!(
            state.blocking.ended(&state.stats, &wa),
            Some(Ended::Reply(b"*2\r\n$1\r\nk\r\n$1\r\nx\r\n".to_vec()))
        );
        let wb = state.blocking.waiter(2).expect("waiter b");
        assert_eq!(state.blocking.ended(&state.stats, &wb), None, "still waiting");
        assert_eq!(state.blocking.blocked(), 1);
        assert_eq!(send(&state, &mut pusher, &["RPUSH", "k", "y", "z"]).0, b":2\r\n");
        assert_eq!(
            state.blocking.ended(&state.stats, &wb),
            Some(Ended::Reply(b"*2\r\n$1\r\nk\r\n$1\r\nz\r\n".to_vec()))
        );
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
            waits: Waits::AnswerNow,
            changes: 0,
        };
        super::super::dispatch(kvik_protocol::commands::id::BLMOVE, &mut ctx);
        assert_eq!(ctx.outcome, Outcome::Continue);
        assert_eq!(out.0, b"$-1\r\n");
        assert_eq!(state.blocking.blocked(), 0);
    }
}
