//! Generic key commands: DEL, UNLINK, EXISTS, TYPE, TOUCH; expiry (EXPIRE
//! and friends, TTL and friends, PERSIST); KEYS, SCAN, RANDOMKEY; RENAME,
//! RENAMENX, COPY, MOVE, SWAPDB; OBJECT; DUMP and RESTORE.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

use kvik_protocol::number::parse_i64;

use super::{until_nul, Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::effects::changes::{self, EventClass};
use crate::keyspace::{glob, lfu, lru, now_ms, Entry, Meta};
use crate::types::string::StrRef;
use crate::types::ValueRef;
use kvik_persist::payload::{self, PayloadError};

const NO_SUCH_KEY: &[u8] = b"ERR no such key";
const SAME_OBJECT: &[u8] = b"ERR source and destination objects are the same";
const DB_OUT_OF_RANGE: &[u8] = b"ERR DB index is out of range";

/// Redis reports this reference count for values it shares between keys
/// (small integers), and kvik reports it for the same values.
const SHARED_REFCOUNT: i64 = i32::MAX as i64;
/// Integers below this are the ones Redis shares.
const SHARED_INTEGERS: i64 = 10_000;

const OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

handlers! {
    DEL(c) => del(c),
    UNLINK(c) => del(c),
    EXISTS(c) => count_existing(c, false),
    TOUCH(c) => count_existing(c, true),
    TYPE(c) => type_of(c),
    EXPIRE(c) => expire(c, "expire", Base::Now, Unit::Seconds),
    PEXPIRE(c) => expire(c, "pexpire", Base::Now, Unit::Millis),
    EXPIREAT(c) => expire(c, "expireat", Base::Epoch, Unit::Seconds),
    PEXPIREAT(c) => expire(c, "pexpireat", Base::Epoch, Unit::Millis),
    TTL(c) => ttl(c, Unit::Seconds, Base::Now),
    PTTL(c) => ttl(c, Unit::Millis, Base::Now),
    EXPIRETIME(c) => ttl(c, Unit::Seconds, Base::Epoch),
    PEXPIRETIME(c) => ttl(c, Unit::Millis, Base::Epoch),
    PERSIST(c) => persist(c),
    KEYS(c) => keys(c),
    SCAN(c) => scan(c),
    RANDOMKEY(c) => randomkey(c),
    RENAME(c) => rename(c, false),
    RENAMENX(c) => rename(c, true),
    COPY(c) => copy(c),
    MOVE(c) => move_key(c),
    SWAPDB(c) => swapdb(c),
    OBJECT_ENCODING(c) => object(c, "object|encoding"),
    OBJECT_FREQ(c) => object(c, "object|freq"),
    OBJECT_IDLETIME(c) => object(c, "object|idletime"),
    OBJECT_REFCOUNT(c) => object(c, "object|refcount"),
    OBJECT_HELP(c) => c.reply(|s| {
        s.array(OBJECT_HELP.len());
        for line in OBJECT_HELP {
            s.simple(line.as_bytes());
        }
    }),
    DUMP(c) => dump_key(c),
    RESTORE(c) => restore(c),
    MIGRATE(c) => super::migrate::migrate(c),
}

/// Reply with a count.
fn reply_count<T: ReplyTarget>(c: &mut Ctx<'_, T>, n: usize) {
    c.reply(|s| s.integer(i64::try_from(n).unwrap_or(i64::MAX)));
}

/// `DEL key [key ...]` / `UNLINK`: how many keys were removed.
fn del<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let req = c.req;
    let keys: Vec<&[u8]> = (1..req.argc()).map(|i| req.arg(i)).collect();
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, keys.iter().copied());
    let mut removed = 0;
    for k in &keys {
        let d = lock.shard_for(ks, k).db(db);
        if d.contains(k, now) && d.remove(k).is_some() {
            removed += 1;
            c.notify(EventClass::Generic, "del", k);
        }
    }
    drop(lock);
    reply_count(c, removed);
}

/// `EXISTS key [key ...]` / `TOUCH key [key ...]`: how many of the keys
/// exist (repeats count again). TOUCH also marks them accessed.
fn count_existing<T: ReplyTarget>(c: &mut Ctx<'_, T>, touch: bool) {
    let req = c.req;
    let keys: Vec<&[u8]> = (1..req.argc()).map(|i| req.arg(i)).collect();
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, keys.iter().copied());
    let found = keys
        .iter()
        .filter(|k| {
            let d = lock.shard_for(ks, k).db(db);
            if touch {
                d.get(k, now).is_some()
            } else {
                d.peek(k, now).is_some()
            }
        })
        .count();
    drop(lock);
    reply_count(c, found);
}

/// `TYPE key`: the value's type name, or `none`.
fn type_of<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let key = c.req.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let name = shard.db(db).peek(key, now_ms()).map_or("none", |e| e.value().type_name());
    drop(shard);
    c.reply(|s| s.simple(name.as_bytes()));
}

/// Whether a time is relative to now or to the Unix epoch.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Base {
    Now,
    Epoch,
}

/// The unit of a time argument or reply.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Seconds,
    Millis,
}

/// `EXPIRE key seconds [NX | XX | GT | LT]` and its millisecond and
/// absolute forms. A deadline already past deletes the key (and still
/// counts as set); GT treats a key without TTL as expiring never.
fn expire<T: ReplyTarget>(c: &mut Ctx<'_, T>, name: &str, base: Base, unit: Unit) {
    let req = c.req;
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for i in 3..req.argc() {
        let opt = req.arg(i);
        if opt.eq_ignore_ascii_case(b"nx") {
            nx = true;
        } else if opt.eq_ignore_ascii_case(b"xx") {
            xx = true;
        } else if opt.eq_ignore_ascii_case(b"gt") {
            gt = true;
        } else if opt.eq_ignore_ascii_case(b"lt") {
            lt = true;
        } else {
            let mut msg = b"ERR Unsupported option ".to_vec();
            msg.extend_from_slice(until_nul(opt, usize::MAX));
            return c.error(&msg);
        }
    }
    if nx && (xx || gt || lt) {
        return c.error(b"ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return c.error(b"ERR GT and LT options at the same time are not compatible");
    }
    let Some(mut when) = parse_i64(req.arg(2)) else { return c.error(NOT_AN_INTEGER) };
    let invalid = format!("ERR invalid expire time in '{name}' command");
    if unit == Unit::Seconds {
        let Some(ms) = when.checked_mul(1000) else { return c.error(invalid.as_bytes()) };
        when = ms;
    }
    let now = now_ms();
    let basetime = if base == Base::Now { now } else { 0 };
    if when > i64::MAX - basetime {
        return c.error(invalid.as_bytes());
    }
    when += basetime;
    let key = req.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let set = match d.lookup_write(key, now).map(Entry::deadline) {
        None => false,
        Some(current) => {
            let refused = nx && current.is_some()
                || xx && current.is_none()
                || gt && current.is_none_or(|at| when <= at)
                || lt && current.is_some_and(|at| when >= at);
            if refused {
                false
            } else if when <= now && !crate::keyspace::loading() {
                d.remove(key);
                c.notify(EventClass::Generic, "del", key);
                c.propagate(&[b"DEL", key]);
                true
            } else {
                let set = d.set_expire(key, Some(when));
                if set {
                    c.notify(EventClass::Generic, "expire", key);
                    // The absolute time, as Redis writes it; the options
                    // held, and hold again on replay.
                    let when = when.to_string();
                    let mut args: Vec<&[u8]> = vec![b"PEXPIREAT", key, when.as_bytes()];
                    args.extend((3..req.argc()).map(|i| req.arg(i)));
                    c.propagate(&args);
                }
                set
            }
        }
    };
    drop(shard);
    c.reply(|s| s.integer(i64::from(set)));
}

/// `TTL key`, `PTTL key`, `EXPIRETIME key`, `PEXPIRETIME key`: -2 for a
/// missing key, -1 for a key without deadline; seconds are rounded.
fn ttl<T: ReplyTarget>(c: &mut Ctx<'_, T>, unit: Unit, base: Base) {
    let key = c.req.arg(1);
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let found = shard.db(db).peek(key, now).map(Entry::deadline);
    drop(shard);
    let reply = match found {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => {
            let t = (if base == Base::Now { at - now } else { at }).max(0);
            match unit {
                Unit::Millis => t,
                // Rounded without overflow, as Redis's reply for a deadline near i64::MAX shows.
                Unit::Seconds => i64::try_from((i128::from(t) + 500) / 1000).unwrap_or(i64::MAX),
            }
        }
    };
    c.reply(|s| s.integer(reply));
}

/// `PERSIST key`: 1 when a deadline was removed.
fn persist<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let key = c.req.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let had = d.lookup_write(key, now_ms()).is_some_and(|e| e.deadline().is_some());
    if had {
        d.set_expire(key, None);
        c.notify(EventClass::Generic, "persist", key);
    }
    drop(shard);
    c.reply(|s| s.integer(i64::from(had)));
}

/// `KEYS pattern`: every live key of the database matching the pattern.
///
/// All shards are locked for the walk, so the answer is one consistent
/// moment of the database, as in Redis.
fn keys<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let pattern = c.req.arg(1);
    let all = pattern == b"*";
    let db = c.session.db;
    let now = now_ms();
    let mut lock = c.state.keyspace.lock_all();
    let mut found: Vec<Vec<u8>> = Vec::new();
    for shard in lock.shards() {
        for e in shard.db(db).entries() {
            if !e.is_expired(now) && (all || glob::matches(pattern, e.key(), false)) {
                found.push(e.key().to_vec());
            }
        }
    }
    drop(lock);
    c.reply(|s| {
        s.array(found.len());
        for k in &found {
            s.bulk(k);
        }
    });
}

/// A SCAN cursor as Redis reads it (C's `strtoull`): an optional sign, then
/// digits; a minus wraps around; no leading space, nothing after, no overflow.
/// Nothing at all reads as 0.
pub(super) fn parse_cursor(text: &[u8]) -> Option<u64> {
    if text.is_empty() {
        return Some(0);
    }
    let (negative, digits) = match text[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: u64 = 0;
    for &d in digits {
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if negative { n.wrapping_neg() } else { n })
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`.
///
/// See [`crate::keyspace::scan`] for what the cursor holds and why every key
/// present for the whole iteration is returned.
fn scan<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let req = c.req;
    let Some(cursor) = parse_cursor(req.arg(1)) else { return c.error(b"ERR invalid cursor") };
    let mut count: usize = 10;
    let mut pattern: Option<&[u8]> = None;
    let mut type_name: Option<&[u8]> = None;
    let mut i = 2;
    while i < req.argc() {
        let opt = req.arg(i);
        let more = req.argc() - i >= 2;
        if opt.eq_ignore_ascii_case(b"count") && more {
            match parse_i64(req.arg(i + 1)) {
                None => return c.error(NOT_AN_INTEGER),
                Some(n) if n < 1 => return c.error(SYNTAX_ERROR),
                Some(n) => count = usize::try_from(n).unwrap_or(usize::MAX),
            }
        } else if opt.eq_ignore_ascii_case(b"match") && more {
            pattern = Some(req.arg(i + 1)).filter(|p| *p != b"*");
        } else if opt.eq_ignore_ascii_case(b"type") && more {
            type_name = Some(req.arg(i + 1));
        } else {
            return c.error(SYNTAX_ERROR);
        }
        i += 2;
    }
    let now = now_ms();
    let matches = |k: &[u8]| pattern.is_none_or(|p| glob::matches(p, k, false));
    let (next, found) = c.state.keyspace.scan_expiring(c.session.db, cursor, count, matches, |k, e| {
        matches(k)
            && type_name.is_none_or(|t| t.eq_ignore_ascii_case(e.value().type_name().as_bytes()))
            && !e.is_expired(now)
    });
    let next = next.to_string();
    c.reply(|s| {
        s.array(2);
        s.bulk(next.as_bytes());
        s.array(found.len());
        for k in &found {
            s.bulk(k);
        }
    });
}

/// A random number below `n` (which must not be 0).
fn random_below(n: usize) -> usize {
    let mut h = RandomState::new().build_hasher();
    h.write_usize(n);
    (h.finish() % n as u64) as usize
}

/// `RANDOMKEY`: a random live key of the database, or null when empty.
fn randomkey<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let db = c.session.db;
    let now = now_ms();
    let mut lock = c.state.keyspace.lock_all();
    let mut shards = lock.shards();
    let mut found = None;
    // Expired keys met on the way are removed and another pick is made; the
    // bound keeps one call short when nearly every key has expired.
    for _ in 0..100 {
        let total: usize = shards.iter_mut().map(|s| s.db(db).len()).sum();
        if total == 0 {
            break;
        }
        let mut r = random_below(total);
        let Some(shard) = shards.iter_mut().find_map(|s| {
            let len = s.db(db).len();
            if r < len {
                Some(s)
            } else {
                r -= len;
                None
            }
        }) else {
            break;
        };
        if let Some(k) = shard.db(db).nth_live_key(r, now) {
            found = Some(k);
            break;
        }
    }
    drop(shards);
    drop(lock);
    match found {
        Some(k) => c.reply(|s| s.bulk(&k)),
        None => c.reply(|s| s.null()),
    }
}

/// `RENAME key newkey` / `RENAMENX key newkey`: the value keeps its TTL.
fn rename<T: ReplyTarget>(c: &mut Ctx<'_, T>, nx: bool) {
    let req = c.req;
    let (src, dst) = (req.arg(1), req.arg(2));
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, [src, dst]);
    // Ok(true): renamed; Ok(false): RENAMENX refused; Err: no source.
    let outcome = (|| -> Result<bool, ()> {
        if !lock.shard_for(ks, src).db(db).contains(src, now) {
            return Err(());
        }
        if src == dst {
            return Ok(!nx);
        }
        let d = lock.shard_for(ks, dst).db(db);
        if d.contains(dst, now) {
            if nx {
                return Ok(false);
            }
            d.remove(dst);
        }
        let entry = lock.shard_for(ks, src).db(db).take(src, now).ok_or(())?;
        lock.shard_for(ks, dst).db(db).insert(entry.renamed(dst));
        // One change, announced as two events.
        c.notify_counted(EventClass::Generic, "rename_from", src, 0);
        c.notify(EventClass::Generic, "rename_to", dst);
        Ok(true)
    })();
    drop(lock);
    match (outcome, nx) {
        (Err(()), _) => c.error(NO_SUCH_KEY),
        (Ok(done), true) => c.reply(|s| s.integer(i64::from(done))),
        (Ok(_), false) => c.ok(),
    }
}

/// A database index argument as Redis reads it: an integer (else
/// `custom` or "not an integer"), that fits C's `int` (else `custom` or
/// Redis's range message), then within the configured databases.
pub(super) fn db_index<T: ReplyTarget>(c: &Ctx<'_, T>, text: &[u8], custom: Option<&[u8]>) -> Result<usize, Vec<u8>> {
    let n = parse_i64(text).ok_or_else(|| custom.unwrap_or(NOT_AN_INTEGER).to_vec())?;
    if i32::try_from(n).is_err() {
        let msg: &[u8] = b"ERR value is out of range, value must between -2147483648 and 2147483647";
        return Err(custom.unwrap_or(msg).to_vec());
    }
    usize::try_from(n).ok().filter(|n| *n < c.state.keyspace.databases()).ok_or_else(|| DB_OUT_OF_RANGE.to_vec())
}

/// `COPY source destination [DB destination-db] [REPLACE]`: 1 when copied.
fn copy<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let req = c.req;
    let (src, dst) = (req.arg(1), req.arg(2));
    let src_db = c.session.db;
    let mut dst_db = src_db;
    let mut replace = false;
    let mut i = 3;
    while i < req.argc() {
        let opt = req.arg(i);
        if opt.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if opt.eq_ignore_ascii_case(b"db") && i + 1 < req.argc() {
            match db_index(c, req.arg(i + 1), None) {
                Ok(n) => dst_db = n,
                Err(msg) => return c.error(&msg),
            }
            i += 1;
        } else {
            return c.error(SYNTAX_ERROR);
        }
        i += 1;
    }
    if src_db == dst_db && src == dst {
        return c.error(SAME_OBJECT);
    }
    let now = now_ms();
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(src_db, [src, dst]);
    let source = lock.shard_for(ks, src).db(src_db).get(src, now).map(|e| (e.value().to_owned(), e.deadline()));
    let copied = match source {
        None => false,
        Some((value, deadline)) => {
            let d = lock.shard_for(ks, dst).db(dst_db);
            if d.contains(dst, now) && !replace {
                false
            } else {
                // The copy is a new key, with a new key's access frequency.
                let lfu_policy = state.keyspace.lfu_tuning().lfu_policy();
                let meta = Meta { private_copy: true, ..Meta::new(now, lfu_policy) };
                d.remove(dst);
                d.insert(Entry::new(dst, value, deadline, meta));
                c.notify_in(dst_db, EventClass::Generic, "copy_to", dst);
                true
            }
        }
    };
    drop(lock);
    c.reply(|s| s.integer(i64::from(copied)));
}

/// `MOVE key db`: 1 when moved; 0 when missing here or present there.
fn move_key<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let req = c.req;
    let key = req.arg(1);
    let src_db = c.session.db;
    let dst_db = match db_index(c, req.arg(2), None) {
        Ok(n) => n,
        Err(msg) => return c.error(&msg),
    };
    if src_db == dst_db {
        return c.error(SAME_OBJECT);
    }
    let now = now_ms();
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let moved = match shard.two_dbs(src_db, dst_db) {
        Some((from, to)) => {
            let movable = from.contains(key, now) && !to.contains(key, now);
            match if movable { from.take(key, now) } else { None } {
                Some(entry) => {
                    to.insert(entry);
                    true
                }
                None => false,
            }
        }
        None => false,
    };
    if moved {
        // One change, announced as two events.
        c.notify_in_counted(src_db, EventClass::Generic, "move_from", key, 0);
        c.notify_in(dst_db, EventClass::Generic, "move_to", key);
    }
    drop(shard);
    c.reply(|s| s.integer(i64::from(moved)));
}

/// `SWAPDB index1 index2`: every client of one database now sees the other's data.
fn swapdb<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let req = c.req;
    let a = db_index(c, req.arg(1), Some(b"ERR invalid first DB index"));
    let b = db_index(c, req.arg(2), Some(b"ERR invalid second DB index"));
    // Both integers are read before either range is checked, as in Redis.
    let (a, b) = match (a, b) {
        (Err(msg), _) if msg != DB_OUT_OF_RANGE => return c.error(&msg),
        (_, Err(msg)) if msg != DB_OUT_OF_RANGE => return c.error(&msg),
        (Ok(a), Ok(b)) => (a, b),
        _ => return c.error(DB_OUT_OF_RANGE),
    };
    let mut lock = c.state.keyspace.lock_all();
    c.note_change();
    changes::dbs_swapped(c.state, a, b, &mut lock);
    for shard in lock.shards() {
        shard.swap_dbs(a, b);
    }
    drop(lock);
    c.count_changes(1);
    c.state.blocking.dbs_changed(Some(&[a, b]));
    c.ok();
}

/// `OBJECT ENCODING | FREQ | IDLETIME | REFCOUNT key`: null for a missing
/// key; looking does not count as an access.
fn object<T: ReplyTarget>(c: &mut Ctx<'_, T>, name: &str) {
    let key = c.req.arg(2);
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let Some(entry) = shard.db(db).peek_quiet(key, now) else {
        drop(shard);
        return c.reply(|s| s.null());
    };
    let (value, meta) = (entry.value(), entry.meta());
    let encoding = value.encoding();
    let idle = i64::from(meta.idle_seconds(now));
    let freq = i64::from(lfu::decayed(meta.clock, now, c.state.keyspace.lfu_tuning()));
    let refcount = match value {
        ValueRef::Str(StrRef::Int(n)) if (0..SHARED_INTEGERS).contains(&n) && !meta.private_copy => SHARED_REFCOUNT,
        _ => 1,
    };
    drop(shard);
    // As in Redis, one field holds either the access time or the frequency,
    // by policy, and the one not kept is refused (after a policy change the
    // bits written under the old one are read the new way until the key's
    // next access, which is what Redis reports too).
    let lfu_policy = c.state.limits.maxmemory_policy().lfu();
    match name {
        "object|encoding" => c.reply(|s| s.bulk(encoding.as_bytes())),
        "object|idletime" if lfu_policy => c.error(
            b"ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
        "object|idletime" => c.reply(|s| s.integer(idle)),
        "object|refcount" => c.reply(|s| s.integer(refcount)),
        _ if lfu_policy => c.reply(|s| s.integer(freq)),
        _ => c.error(
            b"ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
    }
}

/// `DUMP key`: the value in Redis's payload format, or null.
fn dump_key<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let key = c.req.arg(1);
    let db = c.session.db;
    let state = c.state;
    let compress = state.rdb_compression();
    let mut shard = state.keyspace.lock_key(key);
    let payload = shard.db(db).get(key, now_ms()).map(|e| payload::dump(e.value(), compress));
    drop(shard);
    match payload {
        Some(p) => c.reply(|s| s.bulk(&p)),
        None => c.reply(|s| s.null()),
    }
}

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]`.
///
/// Checks run in Redis's order: options, then the existing key, then the
/// TTL, then the payload. A TTL already in the past restores nothing (and
/// with REPLACE still removes the old value) but replies OK.
fn restore<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let req = c.req;
    let (mut replace, mut absttl) = (false, false);
    let mut idle: Option<i64> = None;
    let mut freq: Option<i64> = None;
    let mut j = 4;
    while j < req.argc() {
        let opt = req.arg(j);
        let more = j + 1 < req.argc();
        if opt.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if opt.eq_ignore_ascii_case(b"absttl") {
            absttl = true;
        } else if opt.eq_ignore_ascii_case(b"idletime") && more && freq.is_none() {
            match parse_i64(req.arg(j + 1)) {
                None => return c.error(NOT_AN_INTEGER),
                Some(n) if n < 0 => return c.error(b"ERR Invalid IDLETIME value, must be >= 0"),
                Some(n) => idle = Some(n),
            }
            j += 1;
        } else if opt.eq_ignore_ascii_case(b"freq") && more && idle.is_none() {
            match parse_i64(req.arg(j + 1)) {
                None => return c.error(NOT_AN_INTEGER),
                Some(n) if !(0..=255).contains(&n) => {
                    return c.error(b"ERR Invalid FREQ value, must be >= 0 and <= 255")
                }
                Some(n) => freq = Some(n),
            }
            j += 1;
        } else {
            return c.error(SYNTAX_ERROR);
        }
        j += 1;
    }
    let key = req.arg(1);
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    // Read before the shard lock: the configuration has a lock of its own.
    let limits = state.load_limits();
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let result = (|| -> Result<(), &[u8]> {
        if !replace && d.contains(key, now) {
            return Err(b"BUSYKEY Target key name already exists.");
        }
        let mut ttl = parse_i64(req.arg(2)).ok_or(NOT_AN_INTEGER)?;
        if ttl < 0 {
            return Err(b"ERR Invalid TTL value, must be >= 0");
        }
        let value = payload::restore(req.arg(3), &limits).map_err(|e| match e {
            PayloadError::VersionOrChecksum => &b"ERR DUMP payload version or checksum are wrong"[..],
            PayloadError::BadFormat => b"ERR Bad data format",
        })?;
        let deleted = replace && d.take(key, now).is_some();
        if ttl != 0 && !absttl {
            ttl = ttl.saturating_add(now);
        }
        if ttl != 0 && ttl <= now && !crate::keyspace::loading() {
            if deleted {
                c.notify(EventClass::Generic, "del", key);
                c.propagate(&[b"DEL", key]);
            }
            return Ok(());
        }
        // As in Redis, the option for the policy in force is applied and the other ignored.
        let lfu_policy = c.state.keyspace.lfu_tuning().lfu_policy();
        let mut meta = Meta::new(now, lfu_policy);
        if let Some(idle) = idle.filter(|_| !lfu_policy) {
            meta.clock = lru::clock_idle_for(u64::try_from(idle).unwrap_or(0), now);
        }
        if let Some(freq) = freq.filter(|_| lfu_policy) {
            meta.clock = lfu::clock(lfu::minutes(now), u8::try_from(freq).unwrap_or(u8::MAX));
        }
        d.insert(Entry::new(key, value, (ttl != 0).then_some(ttl), meta));
        c.notify(EventClass::Generic, "restore", key);
        if ttl != 0 && !absttl {
            // The deadline it got, as an absolute time.
            let at = ttl.to_string();
            let mut args: Vec<&[u8]> = vec![b"RESTORE", key, at.as_bytes(), req.arg(3), b"ABSTTL"];
            args.extend((4..req.argc()).map(|i| req.arg(i)).filter(|a| !a.eq_ignore_ascii_case(b"absttl")));
            c.propagate(&args);
        }
        Ok(())
    })();
    drop(shard);
    match result {
        Ok(()) => c.ok(),
        Err(msg) => c.error(msg),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_cursor;

    #[test]
    fn cursors_read_like_strtoull() {
        assert_eq!(parse_cursor(b"0"), Some(0));
        assert_eq!(parse_cursor(b""), Some(0));
        assert_eq!(parse_cursor(b"+7"), Some(7));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551616"), None);
        assert_eq!(parse_cursor(b" 1"), None);
        assert_eq!(parse_cursor(b"1 "), None);
        assert_eq!(parse_cursor(b"-"), None);
        assert_eq!(parse_cursor(b"0x10"), None);
    }
}
