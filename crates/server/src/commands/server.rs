//! Server and database commands: SELECT, DBSIZE, FLUSHDB, FLUSHALL.

use kvik_protocol::number::parse_i64;

use super::{Ctx, ReplyTarget, SYNTAX_ERROR};

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
    match parse_i64(c.arg(1)) {
        None => c.error(b"ERR value is not an integer or out of range"),
        Some(n) if n < 0 || n as u64 >= c.state.keyspace.databases() as u64 => c.error(b"ERR DB index is out of range"),
        Some(n) => {
            c.session.db = n as usize;
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
