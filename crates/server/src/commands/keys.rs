//! Generic key commands: DEL, UNLINK, EXISTS, TYPE.

use super::{Ctx, ReplyTarget};
use crate::keyspace::now_ms;

/// Run the key command `name`; false when `name` is not one of them.
pub fn dispatch<T: ReplyTarget>(name: &str, c: &mut Ctx<'_, T>) -> bool {
    match name {
        "del" | "unlink" => del(c),
        "exists" => exists(c),
        "type" => type_of(c),
        _ => return false,
    }
    true
}

/// `DEL key [key ...]` / `UNLINK`: how many keys were removed.
fn del<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let keys: Vec<&[u8]> = (1..c.argc()).map(|i| c.arg(i)).collect();
    let db = c.session.db;
    let now = now_ms();
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(keys.iter().copied());
    let removed = keys
        .iter()
        .filter(|k| {
            let d = lock.shard_for(ks, k).db(db);
            d.contains(k, now) && d.remove(k).is_some()
        })
        .count();
    drop(lock);
    c.reply(|s| s.integer(removed as i64));
}

/// `EXISTS key [key ...]`: how many of the keys exist (repeats count again).
fn exists<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let keys: Vec<&[u8]> = (1..c.argc()).map(|i| c.arg(i)).collect();
    let db = c.session.db;
    let now = now_ms();
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(keys.iter().copied());
    let stats = &c.state.stats;
    let found = keys
        .iter()
        .filter(|k| {
            let here = lock.shard_for(ks, k).db(db).contains(k, now);
            stats.key_lookup(here);
            here
        })
        .count();
    drop(lock);
    c.reply(|s| s.integer(found as i64));
}

/// `TYPE key`: the value's type name, or `none`.
fn type_of<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let key = c.arg(1);
    let db = c.session.db;
    let mut shard = c.state.keyspace.lock_key(key);
    let name = shard.db(db).get(key, now_ms()).map_or("none", |e| e.value.type_name());
    c.state.stats.key_lookup(name != "none");
    drop(shard);
    c.reply(|s| s.simple(name.as_bytes()));
}
