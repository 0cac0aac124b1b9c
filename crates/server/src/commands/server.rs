//! Server and database commands: SELECT, DBSIZE, FLUSHDB, FLUSHALL, SHUTDOWN.

use super::{Ctx, Outcome, ReplyTarget, SYNTAX_ERROR};

/// Run the server command `name`; false when `name` is not one of them.
pub fn dispatch<T: ReplyTarget>(name: &str, c: &mut Ctx<'_, T>) -> bool {
    match name {
        "select" => select(c),
        "dbsize" => dbsize(c),
        "flushdb" => flush(c, false),
        "flushall" => flush(c, true),
        _ => return false,
    }
    true
}

/// `SELECT index`.
fn select<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    // Redis reads the index as a C int first, so a huge index gets the range message.
    match super::keys::db_index(c, c.arg(1), None) {
        Err(msg) => c.error(&msg),
        Ok(n) => {
            c.session.db = n;
            c.ok();
        }
    }
}

/// `DBSIZE`: keys in the selected database, over all shards.
fn dbsize<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let db = c.session.db;
    let ks = &c.state.keyspace;
    let total: usize = (0..ks.shard_count()).map(|i| ks.lock(i).db(db).len()).sum();
    c.reply(|s| s.integer(total as i64));
}

/// `FLUSHDB [ASYNC | SYNC]` and `FLUSHALL [ASYNC | SYNC]`.
///
/// Every shard is locked before any is cleared, so no client sees half a flush.
fn flush<T: ReplyTarget>(c: &mut Ctx<'_, T>, all: bool) {
    if c.argc() > 2
        || c.argc() == 2 && !(c.arg(1).eq_ignore_ascii_case(b"async") || c.arg(1).eq_ignore_ascii_case(b"sync"))
    {
        return c.error(SYNTAX_ERROR);
    }
    let db = c.session.db;
    let mut lock = c.state.keyspace.lock_all();
    for shard in lock.shards() {
        if all {
            shard.dbs().iter_mut().for_each(|d| d.clear());
        } else {
            shard.db(db).clear();
        }
    }
    drop(lock);
    c.ok();
}

/// `SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]`.
///
/// Options are checked as Redis checks them. There is nothing to save yet
/// and nothing to wait for, so a valid SHUTDOWN stops the server at once:
/// the client gets no reply, its connection closes with all the others, and
/// an ABORT always finds no shutdown in progress.
pub fn shutdown<T: ReplyTarget>(c: &mut Ctx<'_, T>) -> Outcome {
    let (mut nosave, mut save, mut other, mut abort) = (false, false, false, false);
    for i in 1..c.argc() {
        let word = c.arg(i);
        if word.eq_ignore_ascii_case(b"nosave") {
            nosave = true;
        } else if word.eq_ignore_ascii_case(b"save") {
            save = true;
        } else if word.eq_ignore_ascii_case(b"now") || word.eq_ignore_ascii_case(b"force") {
            other = true;
        } else if word.eq_ignore_ascii_case(b"abort") {
            abort = true;
        } else {
            c.error(SYNTAX_ERROR);
            return Outcome::Continue;
        }
    }
    if (abort && (nosave || save || other)) || (nosave && save) {
        c.error(SYNTAX_ERROR);
        return Outcome::Continue;
    }
    if abort {
        c.error(b"ERR No shutdown in progress.");
        return Outcome::Continue;
    }
    c.state.request_shutdown();
    Outcome::Close
}
