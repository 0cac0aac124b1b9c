//! String commands: GET, SET and friends, counters, APPEND, STRLEN.
//!
//! Each command is a thin function: take the shard lock(s) for its keys,
//! read or change the entry, reply. Helpers at the top are shared by them.

use kvik_protocol::number::parse_i64;

use super::{Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::keyspace::{now_ms, Db, Entry};
use crate::types::string::StrValue;
use crate::types::Value;

/// Run the string command `name`; false when `name` is not one of them.
pub fn dispatch<T: ReplyTarget>(name: &str, c: &mut Ctx<'_, T>) -> bool {
    match name {
        "get" => get(c),
        "set" => set(c),
        "setnx" => setnx(c),
        "mget" => mget(c),
        "mset" => mset(c),
        "append" => append(c),
        "strlen" => strlen(c),
        "incr" => incr_by(c, 1),
        "decr" => incr_by(c, -1),
        "incrby" => match parse_i64(c.arg(2)) {
            Some(n) => incr_by(c, n),
            None => c.error(NOT_AN_INTEGER),
        },
        "decrby" => match parse_i64(c.arg(2)) {
            Some(i64::MIN) => c.error(b"ERR decrement would overflow"),
            Some(n) => incr_by(c, -n),
            None => c.error(NOT_AN_INTEGER),
        },
        _ => return false,
    }
    true
}

/// The string stored at `key`: `Ok(None)` when missing, `Err(())` for another type.
fn string_at<'d>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<&'d StrValue>, ()> {
    match db.get(key, now) {
        None => Ok(None),
        Some(Entry { value: Value::Str(s), .. }) => Ok(Some(s)),
    }
}

/// Reply with a string value or a null.
fn reply_string<T: ReplyTarget>(c: &mut Ctx<'_, T>, value: Option<&StrValue>) {
    let mut scratch = Vec::new();
    match value {
        Some(v) => {
            let bytes = v.bytes(&mut scratch);
            c.reply(|s| s.bulk(bytes));
        }
        None => c.reply(|s| s.null()),
    }
}

/// `GET key`.
fn get<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let key = c.arg(1);
    let db = c.session.db;
    let mut shard = c.state.keyspace.lock_key(key);
    let found = string_at(shard.db(db), key, now_ms());
    c.state.stats.key_lookup(!matches!(found, Ok(None)));
    match found {
        Ok(v) => {
            let v = v.cloned();
            drop(shard);
            reply_string(c, v.as_ref());
        }
        Err(()) => {
            drop(shard);
            c.error(WRONGTYPE);
        }
    }
}

/// What `SET`'s options ask for.
#[derive(Default)]
struct SetOptions {
    nx: bool,
    xx: bool,
    get: bool,
    keep_ttl: bool,
    /// Absolute deadline in Unix milliseconds.
    expire_at_ms: Option<i64>,
}

/// Parse `SET`'s options with Redis's rules: conflicting options are a
/// syntax error, a non-integer time is "not an integer", a time that is not
/// positive or overflows is "invalid expire time".
fn set_options<T: ReplyTarget>(c: &Ctx<'_, T>, now: i64) -> Result<SetOptions, Vec<u8>> {
    #[derive(PartialEq, Clone, Copy)]
    enum Unit {
        RelSeconds,
        RelMillis,
        AbsSeconds,
        AbsMillis,
    }
    let mut o = SetOptions::default();
    let mut expire: Option<(Unit, &[u8])> = None;
    let mut j = 3;
    while j < c.argc() {
        let opt = c.arg(j);
        let next = (j + 1 < c.argc()).then(|| c.arg(j + 1));
        let is = |w: &[u8]| opt.eq_ignore_ascii_case(w);
        if is(b"nx") && !o.xx {
            o.nx = true;
        } else if is(b"xx") && !o.nx {
            o.xx = true;
        } else if is(b"get") {
            o.get = true;
        } else if is(b"keepttl") && expire.is_none() {
            o.keep_ttl = true;
        } else if let (Some(unit), Some(value)) = (
            [(b"ex", Unit::RelSeconds), (b"px", Unit::RelMillis)]
                .iter()
                .map(|(w, u)| (&w[..], *u))
                .chain([(&b"exat"[..], Unit::AbsSeconds), (&b"pxat"[..], Unit::AbsMillis)])
                .find(|(w, _)| is(w))
                .map(|(_, u)| u),
            next,
        ) {
            // Another kind of expiry (or KEEPTTL) already given is a conflict; the same kind again is not.
            if o.keep_ttl || expire.is_some_and(|(u, _)| u != unit) {
                return Err(SYNTAX_ERROR.to_vec());
            }
            expire = Some((unit, value));
            j += 1;
        } else {
            return Err(SYNTAX_ERROR.to_vec());
        }
        j += 1;
    }
    if let Some((unit, text)) = expire {
        let n = parse_i64(text).ok_or_else(|| NOT_AN_INTEGER.to_vec())?;
        let invalid = || b"ERR invalid expire time in 'set' command".to_vec();
        if n <= 0 {
            return Err(invalid());
        }
        let ms = match unit {
            Unit::RelSeconds | Unit::AbsSeconds => n.checked_mul(1000).ok_or_else(invalid)?,
            Unit::RelMillis | Unit::AbsMillis => n,
        };
        let at = match unit {
            Unit::RelSeconds | Unit::RelMillis => ms.checked_add(now).ok_or_else(invalid)?,
            Unit::AbsSeconds | Unit::AbsMillis => ms,
        };
        o.expire_at_ms = Some(at);
    }
    Ok(o)
}

/// `SET key value [NX | XX] [GET] [EX s | PX ms | EXAT s | PXAT ms | KEEPTTL]`.
fn set<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let now = now_ms();
    let o = match set_options(c, now) {
        Ok(o) => o,
        Err(msg) => return c.error(&msg),
    };
    let (key, value) = (c.arg(1), c.arg(2));
    let db = c.session.db;
    let mut shard = c.state.keyspace.lock_key(key);
    let d = shard.db(db);
    let old = d.get(key, now).map(|Entry { value: Value::Str(s), expire_at_ms }| (s.clone(), *expire_at_ms));
    let exists = old.is_some();
    if o.get {
        // With GET the old value is read, and counted as a read, as in Redis.
        c.state.stats.key_lookup(exists);
    }
    let write = !(o.nx && exists || o.xx && !exists);
    if write {
        let expire_at_ms = if o.keep_ttl { old.as_ref().and_then(|(_, at)| *at) } else { o.expire_at_ms };
        d.insert(key, Entry { value: Value::Str(StrValue::from_bytes(value)), expire_at_ms });
    }
    drop(shard);
    match (o.get, write) {
        (true, _) => reply_string(c, old.as_ref().map(|(s, _)| s)),
        (false, true) => c.ok(),
        (false, false) => c.reply(|s| s.null()),
    }
}

/// `SETNX key value`: 1 when set, 0 when the key existed.
fn setnx<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, value) = (c.arg(1), c.arg(2));
    let db = c.session.db;
    let mut shard = c.state.keyspace.lock_key(key);
    let d = shard.db(db);
    let set = !d.contains(key, now_ms());
    if set {
        d.insert(key, Entry::new(Value::Str(StrValue::from_bytes(value))));
    }
    drop(shard);
    c.reply(|s| s.integer(i64::from(set)));
}

/// `MGET key [key ...]`: a null for missing keys and keys of other types.
fn mget<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let keys: Vec<&[u8]> = (1..c.argc()).map(|i| c.arg(i)).collect();
    let db = c.session.db;
    let now = now_ms();
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(keys.iter().copied());
    let stats = &c.state.stats;
    let values: Vec<Option<StrValue>> = keys
        .iter()
        .map(|k| {
            let found = string_at(lock.shard_for(ks, k).db(db), k, now);
            stats.key_lookup(!matches!(found, Ok(None)));
            found.ok().flatten().cloned()
        })
        .collect();
    drop(lock);
    let mut scratch = Vec::new();
    c.reply(|s| {
        s.array(values.len());
        for v in &values {
            match v {
                Some(v) => s.bulk(v.bytes(&mut scratch)),
                None => s.null(),
            }
        }
    });
}

/// `MSET key value [key value ...]`: all at once, clearing any TTL.
fn mset<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc().is_multiple_of(2) {
        return c.error(b"ERR wrong number of arguments for 'mset' command");
    }
    let db = c.session.db;
    let ks = &c.state.keyspace;
    let pairs: Vec<(&[u8], &[u8])> = (1..c.argc()).step_by(2).map(|i| (c.arg(i), c.arg(i + 1))).collect();
    let mut lock = ks.lock_keys(pairs.iter().map(|(k, _)| *k));
    for (k, v) in &pairs {
        lock.shard_for(ks, k).db(db).insert(k, Entry::new(Value::Str(StrValue::from_bytes(v))));
    }
    drop(lock);
    c.ok();
}

/// `APPEND key value`: the new length.
fn append<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, tail) = (c.arg(1), c.arg(2));
    let db = c.session.db;
    let mut shard = c.state.keyspace.lock_key(key);
    let d = shard.db(db);
    let len = match d.get_mut(key, now_ms()) {
        None => {
            d.insert(key, Entry::new(Value::Str(StrValue::Raw(tail.to_vec()))));
            tail.len()
        }
        Some(Entry { value: Value::Str(s), .. }) => {
            let bytes = s.make_raw();
            bytes.extend_from_slice(tail);
            bytes.len()
        }
    };
    drop(shard);
    c.reply(|s| s.integer(i64::try_from(len).unwrap_or(i64::MAX)));
}

/// `STRLEN key`: 0 for a missing key.
fn strlen<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let key = c.arg(1);
    let db = c.session.db;
    let mut shard = c.state.keyspace.lock_key(key);
    let found = string_at(shard.db(db), key, now_ms());
    c.state.stats.key_lookup(!matches!(found, Ok(None)));
    let len = found.map(|v| v.map_or(0, StrValue::len));
    drop(shard);
    match len {
        Ok(n) => c.reply(|s| s.integer(i64::try_from(n).unwrap_or(i64::MAX))),
        Err(()) => c.error(WRONGTYPE),
    }
}

/// INCR, DECR, INCRBY, DECRBY: add `delta`, keeping the key's TTL.
fn incr_by<T: ReplyTarget>(c: &mut Ctx<'_, T>, delta: i64) {
    let key = c.arg(1);
    let db = c.session.db;
    let mut shard = c.state.keyspace.lock_key(key);
    let d = shard.db(db);
    let result: Result<i64, &[u8]> = match d.get_mut(key, now_ms()) {
        None => {
            d.insert(key, Entry::new(Value::Str(StrValue::Int(delta))));
            Ok(delta)
        }
        Some(Entry { value: Value::Str(s), .. }) => match s.as_i64() {
            None => Err(NOT_AN_INTEGER),
            Some(old) => match old.checked_add(delta) {
                None => Err(b"ERR increment or decrement would overflow"),
                Some(new) => {
                    *s = StrValue::Int(new);
                    Ok(new)
                }
            },
        },
    };
    drop(shard);
    match result {
        Ok(n) => c.reply(|s| s.integer(n)),
        Err(msg) => c.error(msg),
    }
}
