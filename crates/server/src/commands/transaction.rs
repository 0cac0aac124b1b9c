//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! While a `MULTI` is open, [`super::execute_checked`] checks each command
//! as usual and queues it ([`queue`]) instead of running it. `EXEC` then
//! reserves the shards the queued commands touch, found from the command
//! table's key specs as `COMMAND GETKEYS` finds them (every shard when a
//! command's keys cannot be known that way: `KEYS`, `FLUSHALL`, `SORT`,
//! `INFO`, …), checks the watched keys, and runs the commands one after
//! another through the same path as direct commands. No other thread can
//! see a reserved shard until the last of them has run, so the transaction
//! is atomic across shards and threads.

use kvik_protocol::commands::{id, CommandSpec};

use super::command::{find_keys, keyless, keys_known, runs_script};
use super::{reject, run_checked, runs, unknown_command, unknown_subcommand, Ctx, Outcome, ReplyTarget, Request, Run};
use crate::client::auth;
use crate::client::session::Session;
use crate::client::transaction::Queued;
use crate::keyspace::{now_ms, Keyspace};
use crate::state::ServerState;

handlers! {
    MULTI(c) => begin(c),
    EXEC(c) => exec(c),
    DISCARD(c) => discard(c),
    WATCH(c) => watch(c),
    UNWATCH(c) => unwatch(c),
}

/// Redis's refusal of a `no-multi` command (SAVE, SHUTDOWN, …) inside MULTI.
pub(super) const NOT_IN_MULTI: &[u8] = b"ERR Command not allowed inside a transaction";

/// `EXEC` after a command was refused while queuing.
const EXECABORT: &[u8] = b"EXECABORT Transaction discarded because of previous errors.";

/// Whether `spec` is queued while a MULTI is open, rather than run: all
/// but the commands that act on the transaction itself (QUIT never gets
/// this far).
pub(super) fn queues(spec: &CommandSpec) -> bool {
    !matches!(spec.id, id::MULTI | id::EXEC | id::DISCARD | id::WATCH | id::RESET)
}

/// A command was refused before it ran: inside MULTI that dooms the
/// transaction.
pub(super) fn refused_while_queuing(session: &mut Session) {
    if let Some(multi) = session.multi.as_mut() {
        multi.abort();
    }
}

/// Whether `maxmemory` refuses `spec` beyond its own `denyoom` flag: inside
/// MULTI, queuing anything could grow memory without bound, so Redis
/// refuses every command but the ones ending the transaction, and `EXEC`
/// when a queued command may add data.
pub(super) fn refused_over_maxmemory(session: &Session, spec: &CommandSpec) -> bool {
    let Some(multi) = session.multi.as_ref() else { return false };
    match spec.id {
        id::EXEC => multi.may_add_data(),
        id::DISCARD | id::RESET => false,
        _ => true,
    }
}

/// `EXEC` itself refused (arity, OOM, …): the transaction is discarded and
/// the refusal told as `EXECABORT`, without its `ERR ` code.
pub(super) fn exec_refused(session: &mut Session, msg: &[u8]) -> Vec<u8> {
    session.discard_multi();
    let reason = msg.strip_prefix(b"ERR ").unwrap_or(msg);
    [&b"EXECABORT Transaction discarded because of: "[..], reason].concat()
}

/// Queue a checked command for `EXEC` and answer `+QUEUED`; one kvik does
/// not run is refused as unknown, as it would be when run.
pub(super) fn queue<T: ReplyTarget>(
    state: &ServerState,
    req: Request<'_>,
    session: &mut Session,
    target: &mut T,
    spec: &'static CommandSpec,
) {
    // CLIENT LIST's `cmd=` shows the last command queued, as in Redis.
    if let Some(handle) = session.handle() {
        handle.ran(spec.id, crate::clock::now_mono_us());
    }
    if !runs(spec.id) {
        refused_while_queuing(session);
        let msg = if spec.container.is_some() { unknown_subcommand(&req) } else { unknown_command(&req) };
        return reject(state, session, target, &msg);
    }
    let limit = state.limits.query_buffer_limit();
    let Some(open) = session.multi.as_mut() else { return };
    if open.push((0..req.argc()).map(|i| req.arg(i)), spec, limit).is_err() {
        open.abort();
        return reject(state, session, target, b"ERR Transaction queue limit reached");
    }
    session.show_queued();
    target.reply(session, |s| s.simple(b"QUEUED"));
}

/// `MULTI`.
fn begin<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.session.multi.is_some() {
        return c.error(b"ERR MULTI calls can not be nested");
    }
    c.session.begin_multi();
    c.ok();
}

/// `DISCARD`.
/// Outside a transaction it is only an error: Redis leaves the client's
/// watches, and whether they have been broken, as they were.
fn discard<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.session.multi.is_none() {
        return c.error(b"ERR DISCARD without MULTI");
    }
    c.session.discard_multi();
    c.ok();
}

/// `WATCH key [key ...]`.
fn watch<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.session.multi.is_some() {
        return c.error(b"ERR WATCH inside MULTI is not allowed");
    }
    let (state, db, id) = (c.state, c.session.db, c.session.id);
    let now = now_ms();
    for i in 1..c.argc() {
        let key = c.arg(i);
        let mut shard = state.keyspace.lock_key(key);
        if !c.session.watched.watch(&state.watches, id, db, key, shard.db(db), now) {
            drop(shard);
            return c.error(b"ERR too many watched keys");
        }
    }
    c.ok();
}

/// `UNWATCH`.
fn unwatch<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    c.session.watched.clear();
    c.ok();
}

/// `EXEC`: run the queued commands as one, unless a watched key changed.
fn exec<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(open) = c.session.take_multi_keeping_watches() else {
        return c.error(b"ERR EXEC without MULTI");
    };
    if open.aborted() {
        c.session.watched.clear();
        return c.error(EXECABORT);
    }
    let queued = open.into_queued();
    let state = c.state;
    let shards = touched_shards(&state.keyspace, &queued);
    // Reserve first, then look at the watches: a change made before the
    // reservation is seen; none can come after it on these shards.
    let reservation = state.keyspace.reserve(c.session.id, shards.as_deref());
    let failed = c.session.watched.failed(now_ms());
    c.session.watched.clear();
    if failed {
        drop(reservation);
        return c.reply(|s| s.null_array());
    }
    c.reply(|s| s.array(queued.len()));
    let mut outcome = Outcome::Continue;
    for q in &queued {
        let req = Request::new(&q.args, &[]);
        // Permissions are checked again: the rules may have changed since
        // the command was queued.
        let context = crate::registries::acl::Context::Multi;
        if let Err(denied) = auth::permitted(state, c.session, q.spec, req.argc(), |i| req.arg(i), context) {
            reject(state, c.session, c.target, &auth::exec_noperm_text(denied));
            continue;
        }
        if run_checked(state, req, c.session, c.target, q.spec, Run::Queued) == Outcome::Close {
            outcome = Outcome::Close;
        }
    }
    drop(reservation);
    c.outcome = outcome;
}

/// The shards the queued commands touch, or `None` when that cannot be
/// known from their arguments (then every shard is reserved).
fn touched_shards(keyspace: &Keyspace, queued: &[Queued]) -> Option<Vec<usize>> {
    let mut shards = Vec::new();
    for q in queued {
        if keyless(q.spec) {
            continue;
        }
        let args: Vec<&[u8]> = (0..q.args.len()).map(|i| q.args.get(&[], i).unwrap_or_default()).collect();
        // A script may touch keys it did not declare: every shard.
        if !keys_known(q.spec) || runs_script(q.spec) {
            return None;
        }
        let keys = find_keys(q.spec, &args)?;
        shards.extend(keys.iter().filter_map(|(i, _)| args.get(*i)).map(|k| keyspace.shard_of(k)));
    }
    Some(shards)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvik_protocol::commands::lookup;
    use kvik_protocol::CommandArgs;

    fn queued(words: &[&str]) -> Queued {
        let mut args = CommandArgs::new();
        words.iter().for_each(|w| args.push_owned(w.as_bytes()));
        Queued { args, spec: lookup(words[0].as_bytes()).expect("known command") }
    }

    #[test]
    fn shards_come_from_key_specs_or_are_all() {
        let ks = Keyspace::new(16, 1);
        let exact = touched_shards(&ks, &[queued(&["SET", "a", "1"]), queued(&["MSET", "b", "1", "c", "2"])]);
        let want: Vec<usize> = [b"a", b"b", b"c"].iter().map(|k| ks.shard_of(*k)).collect();
        assert_eq!(exact, Some(want));
        assert_eq!(touched_shards(&ks, &[queued(&["PING"]), queued(&["SELECT", "1"])]), Some(vec![]));
        assert_eq!(touched_shards(&ks, &[queued(&["SET", "a", "1"]), queued(&["KEYS", "*"])]), None);
        assert_eq!(touched_shards(&ks, &[queued(&["FLUSHALL"])]), None);
        assert_eq!(touched_shards(&ks, &[queued(&["INFO"])]), None);
        assert_eq!(touched_shards(&ks, &[queued(&["SORT", "l", "BY", "w_*"])]), None);
        assert_eq!(touched_shards(&ks, &[queued(&["SORT_RO", "l"])]), None);
        assert_eq!(touched_shards(&ks, &[queued(&["EVAL", "return 1", "1", "a"])]), None, "scripts reserve all");
        let union = touched_shards(&ks, &[queued(&["ZUNIONSTORE", "d", "2", "x", "y", "WEIGHTS", "1", "2"])]);
        let want: Vec<usize> = [b"d", b"x", b"y"].iter().map(|k| ks.shard_of(*k)).collect();
        assert_eq!(union, Some(want), "key counts are read from the arguments");
    }
}
