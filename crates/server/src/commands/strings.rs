//! String commands: GET, SET and friends, counters, APPEND, STRLEN.
//!
//! Each command is a thin function: take the shard lock(s) for its keys,
//! read or change the entry, reply. Helpers at the top are shared by them.

use crate::inline_list::InlineList;
use kvik_protocol::number::parse_i64;

use super::{Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::keyspace::{now_ms, Db, Meta};
use crate::types::float80::F80;
use crate::types::string::{byte_range, write_at, StrRef, StrValue};
use crate::types::{Value, ValueRef};

handlers! {
    GET(c) => get(c),
    SET(c) => set(c),
    SETNX(c) => setnx(c),
    MGET(c) => mget(c),
    MSET(c) => mset(c),
    APPEND(c) => append(c),
    STRLEN(c) => strlen(c),
    INCR(c) => incr_by(c, 1),
    DECR(c) => incr_by(c, -1),
    INCRBY(c) => match parse_i64(c.arg(2)) {
        Some(n) => incr_by(c, n),
        None => c.error(NOT_AN_INTEGER),
    },
    DECRBY(c) => match parse_i64(c.arg(2)) {
        Some(i64::MIN) => c.error(b"ERR decrement would overflow"),
        Some(n) => incr_by(c, -n),
        None => c.error(NOT_AN_INTEGER),
    },
    SETEX(c) => setex(c, true),
    PSETEX(c) => setex(c, false),
    GETSET(c) => getset(c),
    GETDEL(c) => getdel(c),
    GETEX(c) => getex(c),
    MSETNX(c) => msetnx(c),
    INCRBYFLOAT(c) => incrbyfloat(c),
    GETRANGE(c) => getrange(c),
    SUBSTR(c) => getrange(c),
    SETRANGE(c) => setrange(c),
    LCS(c) => lcs(c),
}

/// The string stored at `key`, borrowed, for a read command (counted as a
/// keyspace hit or miss): `Ok(None)` when missing, `Err(())` for another type.
fn string_at<'d>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<StrRef<'d>>, ()> {
    match db.get(key, now).map(|e| e.value()) {
        None => Ok(None),
        Some(ValueRef::Str(s)) => Ok(Some(s)),
        Some(_) => Err(()),
    }
}

/// A copy of the string at `key` for a command that replaces or removes it.
fn owned_string_at(db: &mut Db, key: &[u8], now: i64) -> Result<Option<StrValue>, ()> {
    string_at(db, key, now).map(|v| v.map(StrRef::to_owned))
}

/// Redis's error for a string that would outgrow `proto-max-bulk-len`.
const TOO_LONG: &[u8] = b"ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// The deadline an expiry argument asks for, with Redis's checks: an integer,
/// positive, not overflowing when scaled to milliseconds or made absolute.
/// `command` names the command in the "invalid expire time" error.
fn expire_deadline(text: &[u8], seconds: bool, relative: bool, now: i64, command: &str) -> Result<i64, Vec<u8>> {
    let n = parse_i64(text).ok_or_else(|| NOT_AN_INTEGER.to_vec())?;
    let invalid = || format!("ERR invalid expire time in '{command}' command").into_bytes();
    if n <= 0 || (seconds && n > i64::MAX / 1000) {
        return Err(invalid());
    }
    let ms = if seconds { n * 1000 } else { n };
    let at = if relative { ms.wrapping_add(now) } else { ms };
    if at <= 0 {
        return Err(invalid());
    }
    Ok(at)
}

/// Reply with a string value or a null.
fn reply_string<T: ReplyTarget>(c: &mut Ctx<'_, T>, value: Option<StrRef<'_>>) {
    match value {
        Some(StrRef::Int(n)) => {
            let mut text = Vec::with_capacity(20);
            kvik_protocol::number::write_i64(&mut text, n);
            c.reply(|s| s.bulk(&text));
        }
        Some(StrRef::Bytes(b) | StrRef::Raw(b)) => c.reply(|s| s.bulk(b)),
        None => c.reply(|s| s.null()),
    }
}

/// `GET key`. The reply is written from the stored bytes while the shard
/// is locked, so reading a value never copies it first.
fn get<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    match string_at(shard.db(db), key, now_ms()) {
        Ok(v) => reply_string(c, v),
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
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    if !(o.get || o.nx || o.xx || o.keep_ttl) {
        // Nothing depends on the old value: one probe of the table.
        d.set_string(key, value, o.expire_at_ms);
        notify_set(c, key, o.expire_at_ms.is_some());
        if let Some(at) = o.expire_at_ms {
            propagate_deadline(c, key, value, at);
        }
        drop(shard);
        return c.ok();
    }
    // With GET the old value is read, and counted as a read, as in Redis.
    let found = if o.get { d.get(key, now) } else { d.lookup_write(key, now) };
    // The old value matters only to GET, which refuses another type.
    let old = found.map(|e| match e.value() {
        ValueRef::Str(s) => Ok((o.get.then(|| s.to_owned()), e.deadline())),
        _ => Err(e.deadline()),
    });
    if o.get && matches!(old, Some(Err(_))) {
        drop(shard);
        return c.error(WRONGTYPE);
    }
    let old = old.map(|found| found.unwrap_or_else(|at| (None, at)));
    let exists = old.is_some();
    let write = !(o.nx && exists || o.xx && !exists);
    if write {
        let expire_at_ms = if o.keep_ttl { old.as_ref().and_then(|(_, at)| *at) } else { o.expire_at_ms };
        d.set_string(key, value, expire_at_ms);
        notify_set(c, key, o.expire_at_ms.is_some());
        if let Some(at) = o.expire_at_ms {
            propagate_deadline(c, key, value, at);
        }
    }
    drop(shard);
    match (o.get, write) {
        (true, _) => reply_string(c, old.as_ref().and_then(|(s, _)| s.as_ref()).map(StrValue::view)),
        (false, true) => c.ok(),
        (false, false) => c.reply(|s| s.null()),
    }
}

/// Announce a SET: `set`, then `expire` when it gave the key a TTL (one
/// change all the same).
fn notify_set<T: ReplyTarget>(c: &mut Ctx<'_, T>, key: &[u8], with_ttl: bool) {
    c.notify(EventClass::String, "set", key);
    if with_ttl {
        c.notify_counted(EventClass::Generic, "expire", key, 0);
    }
}

/// A SET that gave `key` the deadline `at_ms` redoes as `SET key value
/// PXAT at_ms`, as Redis propagates it: a relative time would move. Out of
/// line: a SET without a deadline pays only the test of its option.
#[inline(never)]
fn propagate_deadline<T: ReplyTarget>(c: &mut Ctx<'_, T>, key: &[u8], value: &[u8], at_ms: i64) {
    if c.state.journal.on() {
        c.propagate(&[b"SET", key, value, b"PXAT", at_ms.to_string().as_bytes()]);
    }
}

/// `SETNX key value`: 1 when set, 0 when the key existed.
fn setnx<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, value) = (c.arg(1), c.arg(2));
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let set = !d.contains(key, now_ms());
    if set {
        d.set_string(key, value, None);
        c.notify(EventClass::String, "set", key);
    }
    drop(shard);
    c.reply(|s| s.integer(i64::from(set)));
}

/// `MGET key [key ...]`: a null for missing keys and keys of other types.
fn mget<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let keys: InlineList<&[u8], 16> = (1..c.argc()).map(|i| c.arg(i)).collect();
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, keys.iter().copied());
    // Written from the stored bytes with every shard still locked, so the
    // values are not copied first.
    let mut scratch = Vec::new();
    c.reply(|s| {
        s.array(keys.len());
        for k in &keys {
            match string_at(lock.shard_for(ks, k).db(db), k, now) {
                Ok(Some(v)) => s.bulk(v.bytes(&mut scratch)),
                Ok(None) | Err(()) => s.null(),
            }
        }
    });
    drop(lock);
}

/// `MSET key value [key value ...]`: all at once, clearing any TTL.
fn mset<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc().is_multiple_of(2) {
        return c.error(b"ERR wrong number of arguments for 'mset' command");
    }
    let db = c.session.db;
    let state = c.state;
    let ks = &state.keyspace;
    let pairs: InlineList<(&[u8], &[u8]), 16> = (1..c.argc()).step_by(2).map(|i| (c.arg(i), c.arg(i + 1))).collect();
    let mut lock = ks.lock_keys(db, pairs.iter().map(|(k, _)| *k));
    for (k, v) in &pairs {
        lock.shard_for(ks, k).db(db).set_string(k, v, None);
        c.notify(EventClass::String, "set", k);
    }
    drop(lock);
    c.ok();
}

/// `APPEND key value`: the new length.
fn append<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, tail) = (c.arg(1), c.arg(2));
    let limit = c.state.limits.proto_max_bulk_len();
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let len = match d.get_mut(key, now_ms()).map(|e| e.value_mut()) {
        None => {
            // A new key is stored as SET would store it (an integer, or embstr).
            d.set_string(key, tail, None);
            Some(tail.len())
        }
        // The result may not pass proto-max-bulk-len, as Redis checks.
        Some(Value::Str(s)) if s.len().saturating_add(tail.len()) > limit => {
            drop(shard);
            return c.error(TOO_LONG);
        }
        Some(Value::Str(s)) => {
            let bytes = s.make_raw();
            bytes.extend_from_slice(tail);
            Some(bytes.len())
        }
        Some(_) => None,
    };
    if len.is_some() {
        c.notify(EventClass::String, "append", key);
    }
    drop(shard);
    match len {
        Some(len) => c.reply(|s| s.integer(i64::try_from(len).unwrap_or(i64::MAX))),
        None => c.error(WRONGTYPE),
    }
}

/// `STRLEN key`: 0 for a missing key.
fn strlen<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let len = string_at(shard.db(db), key, now_ms()).map(|v| v.map_or(0, StrRef::len));
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
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let now = now_ms();
    let changed = d.update(key, now, |entry| match entry.value() {
        ValueRef::Str(s) => match s.as_i64().map(|old| old.checked_add(delta)) {
            None => Err(NOT_AN_INTEGER),
            Some(None) => Err(&b"ERR increment or decrement would overflow"[..]),
            Some(Some(new)) => {
                // Redis stores the result as a new, possibly shared, integer.
                entry.set_meta(Meta { private_copy: false, ..entry.meta() });
                entry.set_int(new);
                Ok(new)
            }
        },
        _ => Err(WRONGTYPE),
    });
    let result = changed.unwrap_or_else(|| {
        d.set(key, Value::Str(StrValue::Int(delta)), None);
        Ok(delta)
    });
    if result.is_ok() {
        c.notify(EventClass::String, "incrby", key);
    }
    drop(shard);
    match result {
        Ok(n) => c.reply(|s| s.integer(n)),
        Err(msg) => c.error(msg),
    }
}

/// `SETEX key seconds value` (`seconds`) and `PSETEX key milliseconds value`.
fn setex<T: ReplyTarget>(c: &mut Ctx<'_, T>, seconds: bool) {
    let now = now_ms();
    let command = if seconds { "setex" } else { "psetex" };
    let at = match expire_deadline(c.arg(2), seconds, true, now, command) {
        Ok(at) => at,
        Err(msg) => return c.error(&msg),
    };
    let (key, value) = (c.arg(1), c.arg(3));
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    shard.db(db).set_string(key, value, Some(at));
    notify_set(c, key, true);
    propagate_deadline(c, key, value, at);
    drop(shard);
    c.ok();
}

/// `GETSET key value`: the old value; the new one has no TTL.
fn getset<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, value) = (c.arg(1), c.arg(2));
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let old = owned_string_at(d, key, now_ms());
    if old.is_ok() {
        d.set_string(key, value, None);
        c.notify(EventClass::String, "set", key);
    }
    drop(shard);
    match old {
        Ok(v) => reply_string(c, v.as_ref().map(StrValue::view)),
        Err(()) => c.error(WRONGTYPE),
    }
}

/// `GETDEL key`: the value, and the key is gone.
fn getdel<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let old = owned_string_at(d, key, now_ms());
    if let Ok(Some(_)) = old {
        d.remove(key);
        c.notify(EventClass::Generic, "del", key);
    }
    drop(shard);
    match old {
        Ok(v) => reply_string(c, v.as_ref().map(StrValue::view)),
        Err(()) => c.error(WRONGTYPE),
    }
}

/// What `GETEX` does to the key's TTL, as parsed (the time not yet checked).
enum TtlChange<'a> {
    Keep,
    Persist,
    /// EX, PX, EXAT or PXAT (an index into [`GETEX_UNITS`]) and its time.
    At(usize, &'a [u8]),
}

/// GETEX's expiry options: name, time in seconds, time relative to now.
const GETEX_UNITS: [(&[u8], bool, bool); 4] =
    [(b"ex", true, true), (b"px", false, true), (b"exat", true, false), (b"pxat", false, false)];

/// Parse `GETEX`'s options with Redis's rules: one of EX, PX, EXAT, PXAT,
/// PERSIST (the same one may repeat; two different ones are a syntax error).
fn getex_options<'a, T: ReplyTarget>(c: &Ctx<'a, T>) -> Result<TtlChange<'a>, &'static [u8]> {
    let mut change = TtlChange::Keep;
    let mut j = 2;
    while j < c.argc() {
        let opt = c.req.arg(j);
        let has_next = j + 1 < c.argc();
        let unit = GETEX_UNITS.iter().position(|(w, _, _)| opt.eq_ignore_ascii_case(w));
        match (unit, &change) {
            (None, TtlChange::Keep | TtlChange::Persist) if opt.eq_ignore_ascii_case(b"persist") => {
                change = TtlChange::Persist;
            }
            (Some(u), TtlChange::Keep) if has_next => {
                change = TtlChange::At(u, c.req.arg(j + 1));
                j += 1;
            }
            (Some(u), TtlChange::At(prev, _)) if has_next && *prev == u => {
                change = TtlChange::At(u, c.req.arg(j + 1));
                j += 1;
            }
            _ => return Err(SYNTAX_ERROR),
        }
        j += 1;
    }
    Ok(change)
}

/// `GETEX key [EX s | PX ms | EXAT s | PXAT ms | PERSIST]`: the value, and
/// the key's TTL changed as asked.
///
/// Redis checks the options' syntax first, answers null for a missing key,
/// and only then checks the time, so a bad time on a missing key is no error.
fn getex<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let now = now_ms();
    let change = match getex_options(c) {
        Ok(ch) => ch,
        Err(msg) => return c.error(msg),
    };
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let value = match owned_string_at(d, key, now) {
        Ok(Some(v)) => v,
        Ok(None) => {
            drop(shard);
            return c.reply(|s| s.null());
        }
        Err(()) => {
            drop(shard);
            return c.error(WRONGTYPE);
        }
    };
    match change {
        TtlChange::Keep => {}
        TtlChange::Persist => {
            if d.inspect(key, now).is_some_and(|e| e.deadline().is_some()) {
                d.set_expire(key, None);
                c.notify(EventClass::Generic, "persist", key);
                c.propagate(&[b"PERSIST", key]);
            }
        }
        TtlChange::At(u, text) => {
            let (_, seconds, relative) = GETEX_UNITS[u];
            match expire_deadline(text, seconds, relative, now, "getex") {
                Err(msg) => {
                    drop(shard);
                    return c.error(&msg);
                }
                Ok(at) if !relative && at <= now && !crate::keyspace::loading() => {
                    d.remove(key);
                    c.notify(EventClass::Generic, "del", key);
                    c.propagate(&[b"DEL", key]);
                }
                Ok(at) => {
                    d.set_expire(key, Some(at));
                    c.notify(EventClass::Generic, "expire", key);
                    c.propagate(&[b"PEXPIREAT", key, at.to_string().as_bytes()]);
                }
            }
        }
    }
    drop(shard);
    reply_string(c, Some(value.view()));
}

/// `MSETNX key value [key value ...]`: 1 when every key was set, 0 (and
/// nothing set) when any of them exists.
fn msetnx<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc().is_multiple_of(2) {
        return c.error(b"ERR wrong number of arguments for 'msetnx' command");
    }
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let ks = &state.keyspace;
    let pairs: InlineList<(&[u8], &[u8]), 16> = (1..c.argc()).step_by(2).map(|i| (c.arg(i), c.arg(i + 1))).collect();
    let mut lock = ks.lock_keys(db, pairs.iter().map(|(k, _)| *k));
    let any = pairs.iter().any(|(k, _)| lock.shard_for(ks, k).db(db).contains(k, now));
    if !any {
        for (k, v) in &pairs {
            lock.shard_for(ks, k).db(db).set_string(k, v, None);
            c.notify(EventClass::String, "set", k);
        }
    }
    drop(lock);
    c.reply(|s| s.integer(i64::from(!any)));
}

/// `INCRBYFLOAT key increment`: computed in 80-bit extended precision and
/// stored as text, exactly as Redis does; the key keeps its TTL.
fn incrbyfloat<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, incr) = (c.arg(1), c.arg(2));
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let result = add_float(shard.db(db), key, incr, now_ms());
    if let Ok(text) = &result {
        c.notify(EventClass::String, "incrbyfloat", key);
        // The sum is redone as its result, as Redis propagates it, so a
        // replay cannot round differently.
        c.propagate(&[b"SET", key, text, b"KEEPTTL"]);
    }
    drop(shard);
    match result {
        Ok(text) => c.reply(|s| s.bulk(&text)),
        Err(msg) => c.error(msg),
    }
}

/// INCRBYFLOAT's work on one database: the new value as stored, or the error.
///
/// Every error is found before the entry is taken for writing, because a
/// failed increment leaves the value as it was, copy-owned or not, as
/// `OBJECT REFCOUNT` shows.
fn add_float(d: &mut Db, key: &[u8], incr: &[u8], now: i64) -> Result<Vec<u8>, &'static [u8]> {
    const NOT_A_FLOAT: &[u8] = b"ERR value is not a valid float";
    let old = match d.lookup_write(key, now).map(|e| e.value()) {
        None => F80::from_i64(0),
        Some(ValueRef::Str(s)) => match s {
            StrRef::Int(n) => Some(F80::from_i64(n)),
            StrRef::Bytes(b) | StrRef::Raw(b) => F80::parse(b),
        }
        .ok_or(NOT_A_FLOAT)?,
        Some(_) => return Err(WRONGTYPE),
    };
    let inc = F80::parse(incr).ok_or(NOT_A_FLOAT)?;
    let sum = old.sum(inc).filter(|v| !v.is_inf()).ok_or(b"ERR increment would produce NaN or Infinity".as_slice())?;
    let text = sum.to_human();
    match d.get_mut(key, now) {
        Some(entry) => entry.set_value(Value::Str(StrValue::Bytes(text.clone()))),
        None => d.set(key, Value::Str(StrValue::Bytes(text.clone())), None),
    }
    Ok(text)
}

/// `GETRANGE key start end` (and its old name `SUBSTR`): the bytes in the
/// inclusive range, an empty string for a missing key or an empty range.
fn getrange<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (Some(start), Some(end)) = (parse_i64(c.arg(2)), parse_i64(c.arg(3))) else {
        return c.error(NOT_AN_INTEGER);
    };
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let mut scratch = Vec::new();
    let part = match string_at(shard.db(db), key, now_ms()) {
        Err(()) => None,
        Ok(None) => Some(Vec::new()),
        Ok(Some(v)) => {
            let bytes = v.bytes(&mut scratch);
            Some(byte_range(bytes.len(), start, end).map_or_else(Vec::new, |(a, b)| bytes[a..=b].to_vec()))
        }
    };
    drop(shard);
    match part {
        Some(p) => c.reply(|s| s.bulk(&p)),
        None => c.error(WRONGTYPE),
    }
}

/// `SETRANGE key offset value`: overwrite from `offset`, zero-padding; the
/// new length. Writing nothing changes nothing (and creates no key).
fn setrange<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let offset = match parse_i64(c.arg(2)) {
        None => return c.error(NOT_AN_INTEGER),
        Some(n) if n < 0 => return c.error(b"ERR offset is out of range"),
        Some(n) => n.unsigned_abs(),
    };
    let (key, value) = (c.arg(1), c.arg(3));
    let fits = offset.saturating_add(value.len() as u64) <= c.state.limits.proto_max_bulk_len() as u64;
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let result: Result<usize, &[u8]> = match d.get_mut(key, now_ms()) {
        None if value.is_empty() => Ok(0),
        None if !fits => Err(TOO_LONG),
        None => {
            let mut bytes = Vec::new();
            let len = write_at(&mut bytes, offset as usize, value);
            d.set(key, Value::Str(StrValue::Raw(bytes)), None);
            Ok(len)
        }
        Some(entry) => match entry.value() {
            ValueRef::Str(s) if value.is_empty() => Ok(s.len()),
            ValueRef::Str(_) if !fits => Err(TOO_LONG),
            ValueRef::Str(_) => match entry.value_mut() {
                Value::Str(s) => Ok(write_at(s.make_raw(), offset as usize, value)),
                _ => Err(WRONGTYPE),
            },
            _ => Err(WRONGTYPE),
        },
    };
    if result.is_ok() && !value.is_empty() {
        c.notify(EventClass::String, "setrange", key);
    }
    drop(shard);
    match result {
        Ok(n) => c.reply(|s| s.integer(i64::try_from(n).unwrap_or(i64::MAX))),
        Err(msg) => c.error(msg),
    }
}

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]`: the longest
/// common subsequence of two strings, its length, or the matching ranges.
fn lcs<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (ka, kb) = (c.arg(1), c.arg(2));
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, [ka, kb]);
    let a = owned_string_at(lock.shard_for(ks, ka).db(db), ka, now);
    let b = owned_string_at(lock.shard_for(ks, kb).db(db), kb, now);
    drop(lock);
    let (Ok(a), Ok(b)) = (a, b) else {
        return c.error(b"ERR The specified keys must contain string values");
    };
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    let a = a.as_ref().map_or(&[][..], |v| v.bytes(&mut sa));
    let b = b.as_ref().map_or(&[][..], |v| v.bytes(&mut sb));
    let (mut get_len, mut get_idx, mut with_len, mut min_len) = (false, false, false, 0u64);
    let mut j = 3;
    while j < c.argc() {
        let opt = c.arg(j);
        if opt.eq_ignore_ascii_case(b"idx") {
            get_idx = true;
        } else if opt.eq_ignore_ascii_case(b"len") {
            get_len = true;
        } else if opt.eq_ignore_ascii_case(b"withmatchlen") {
            with_len = true;
        } else if opt.eq_ignore_ascii_case(b"minmatchlen") && j + 1 < c.argc() {
            match parse_i64(c.arg(j + 1)) {
                Some(n) => min_len = u64::try_from(n).unwrap_or(0),
                None => return c.error(NOT_AN_INTEGER),
            }
            j += 1;
        } else {
            return c.error(SYNTAX_ERROR);
        }
        j += 1;
    }
    if get_idx && get_len {
        return c.error(b"ERR If you want both the length and indexes, please just use IDX.");
    }
    let cells = (a.len() as u64 + 1).saturating_mul(b.len() as u64 + 1);
    if cells.saturating_mul(4) > c.state.limits.proto_max_bulk_len() as u64 {
        return c.error(b"ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    }
    let result = lcs_table(a, b);
    if get_len {
        return c.reply(|s| s.integer(i64::from(result.len())));
    }
    if !get_idx {
        let text = result.sequence(a, b);
        return c.reply(|s| s.bulk(&text));
    }
    let ranges: Vec<_> = result.ranges(a, b).into_iter().filter(|r| min_len == 0 || r.len() >= min_len).collect();
    let total = result.len();
    c.reply(|s| {
        s.map(2);
        s.bulk(b"matches");
        s.array(ranges.len());
        for r in &ranges {
            s.array(if with_len { 3 } else { 2 });
            s.array(2);
            s.integer(i64::from(r.a.0));
            s.integer(i64::from(r.a.1));
            s.array(2);
            s.integer(i64::from(r.b.0));
            s.integer(i64::from(r.b.1));
            if with_len {
                s.integer(i64::try_from(r.len()).unwrap_or(i64::MAX));
            }
        }
        s.bulk(b"len");
        s.integer(i64::from(total));
    });
}

/// The dynamic-programming table of LCS lengths of all prefix pairs.
struct LcsTable {
    cols: usize,
    cells: Vec<u32>,
}

/// One matching range: inclusive byte ranges in both strings.
struct LcsRange {
    a: (u32, u32),
    b: (u32, u32),
}

impl LcsRange {
    fn len(&self) -> u64 {
        u64::from(self.a.1 - self.a.0) + 1
    }
}

/// Fill the LCS table for `a` and `b`.
fn lcs_table(a: &[u8], b: &[u8]) -> LcsTable {
    let cols = b.len() + 1;
    let mut cells = vec![0u32; (a.len() + 1) * cols];
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            cells[i * cols + j] = if a[i - 1] == b[j - 1] {
                cells[(i - 1) * cols + j - 1] + 1
            } else {
                cells[(i - 1) * cols + j].max(cells[i * cols + j - 1])
            };
        }
    }
    LcsTable { cols, cells }
}

impl LcsTable {
    fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[i * self.cols + j]
    }

    /// Length of the whole LCS.
    fn len(&self) -> u32 {
        self.cells.last().copied().unwrap_or(0)
    }

    /// Walk back from the end as Redis does: on equal bytes take the match,
    /// otherwise step towards the larger neighbour, preferring `b`'s side on ties.
    fn walk(&self, a: &[u8], b: &[u8], mut on_step: impl FnMut(Option<(usize, usize)>)) {
        let (mut i, mut j) = (a.len(), b.len());
        while i > 0 && j > 0 {
            if a[i - 1] == b[j - 1] {
                on_step(Some((i - 1, j - 1)));
                i -= 1;
                j -= 1;
            } else {
                if self.at(i - 1, j) > self.at(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                on_step(None);
            }
        }
    }

    /// The LCS itself.
    fn sequence(&self, a: &[u8], b: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() as usize);
        self.walk(a, b, |m| {
            if let Some((i, _)) = m {
                out.push(a[i]);
            }
        });
        out.reverse();
        out
    }

    /// The runs of consecutive matches, last first, as Redis reports them.
    fn ranges(&self, a: &[u8], b: &[u8]) -> Vec<LcsRange> {
        let mut out = Vec::new();
        let mut cur: Option<LcsRange> = None;
        self.walk(a, b, |m| match m {
            Some((i, j)) => {
                let (i, j) = (i as u32, j as u32);
                let extended = match &mut cur {
                    Some(r) if r.a.0 == i + 1 && r.b.0 == j + 1 => {
                        r.a.0 = i;
                        r.b.0 = j;
                        true
                    }
                    Some(_) => false,
                    None => {
                        cur = Some(LcsRange { a: (i, i), b: (j, j) });
                        true
                    }
                };
                if !extended {
                    out.extend(cur.take());
                    cur = Some(LcsRange { a: (i, i), b: (j, j) });
                }
                if i == 0 || j == 0 {
                    out.extend(cur.take());
                }
            }
            None => out.extend(cur.take()),
        });
        out.extend(cur.take());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcs_walk_matches_redis() {
        let (a, b) = (&b"ohmytext"[..], &b"mynewtext"[..]);
        let t = lcs_table(a, b);
        assert_eq!(t.len(), 6);
        assert_eq!(t.sequence(a, b), b"mytext");
        let ranges: Vec<_> = t.ranges(a, b).iter().map(|r| (r.a, r.b, r.len())).collect();
        assert_eq!(ranges, [((4, 7), (5, 8), 4), ((2, 3), (0, 1), 2)]);
        let empty = lcs_table(b"", b"abc");
        assert_eq!((empty.len(), empty.sequence(b"", b"abc")), (0, Vec::new()));
    }

    #[test]
    fn expire_deadlines_follow_redis_checks() {
        assert_eq!(expire_deadline(b"10", true, true, 1_000, "setex"), Ok(11_000));
        assert_eq!(expire_deadline(b"10", false, false, 1_000, "getex"), Ok(10));
        assert_eq!(expire_deadline(b"x", true, true, 0, "setex"), Err(NOT_AN_INTEGER.to_vec()));
        let invalid = b"ERR invalid expire time in 'psetex' command".to_vec();
        assert_eq!(expire_deadline(b"0", false, true, 0, "psetex"), Err(invalid.clone()));
        assert_eq!(expire_deadline(b"9223372036854775807", false, true, 5, "psetex"), Err(invalid));
    }
}
