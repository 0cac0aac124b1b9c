//! Set commands: SADD, SREM, membership, cardinality, random picks, the
//! algebra (SINTER, SUNION, SDIFF and their STORE and CARD forms), SMOVE and
//! SSCAN.
//!
//! Values are reached only through the accessors at the top, so the way
//! entries are stored can change without touching the commands. Commands on
//! several keys lock all their shards at once and read copies of the sets
//! they combine, so the result is one atomic snapshot.

use crate::inline_list::InlineList;
use std::sync::atomic::Ordering;

use kvik_protocol::number::{parse_i64, write_i64};
use kvik_protocol::ReplySink;

use super::access::{self, count_reply, WrongType};
use super::keys::parse_cursor;
use super::random::Picker;
use super::{Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::keyspace::{glob, now_ms, Db, Keyspace, MultiLock};
use crate::types::set::{Member, SetValue};

handlers! {
    SADD(c) => sadd(c),
    SREM(c) => srem(c),
    SMEMBERS(c) => combine(c, Op::Inter, false),
    SISMEMBER(c) => sismember(c),
    SMISMEMBER(c) => smismember(c),
    SCARD(c) => scard(c),
    SPOP(c) => spop(c),
    SRANDMEMBER(c) => srandmember(c),
    SINTER(c) => combine(c, Op::Inter, false),
    SINTERCARD(c) => sintercard(c),
    SINTERSTORE(c) => combine(c, Op::Inter, true),
    SUNION(c) => combine(c, Op::Union, false),
    SUNIONSTORE(c) => combine(c, Op::Union, true),
    SDIFF(c) => combine(c, Op::Diff, false),
    SDIFFSTORE(c) => combine(c, Op::Diff, true),
    SMOVE(c) => smove(c),
    SSCAN(c) => sscan(c),
}

/// The set at `key`, created empty in the encoding Redis picks for a set
/// whose first member will be `first` when the key is missing.
fn set_or_create<'d>(db: &'d mut Db, key: &[u8], now: i64, first: &[u8]) -> Result<&'d mut SetValue, WrongType> {
    access::write_or_create(db, key, now, || SetValue::for_first_member(first))
}

/// Store `set` at `key` (replacing whatever was there), or delete the key
/// when the set is empty; the set's size.
fn store_set(db: &mut Db, key: &[u8], set: SetValue) -> (usize, access::Stored) {
    let len = set.len();
    (len, access::store(db, key, set, len == 0))
}

/// Copies of the sets at `keys` (`None` for a missing key), read under
/// `lock` (counted as reads, by the STORE forms too, as in Redis).
fn read_sets(
    lock: &mut MultiLock<'_, '_>,
    ks: &Keyspace,
    db: usize,
    keys: &[&[u8]],
    now: i64,
) -> Result<Vec<Option<SetValue>>, WrongType> {
    keys.iter().map(|k| access::read_at::<SetValue>(lock.shard_for(ks, k).db(db), k, now).map(|s| s.cloned())).collect()
}

/// `set-max-intset-entries` now.
fn max_intset<T: ReplyTarget>(c: &Ctx<'_, T>) -> usize {
    c.state.limits.set_max_intset_entries.load(Ordering::Relaxed)
}

/// Write one member as a bulk string.
fn bulk_member(s: &mut dyn ReplySink, m: Member<'_>) {
    match m {
        Member::Int(n) => {
            let mut text = Vec::with_capacity(20);
            write_i64(&mut text, n);
            s.bulk(&text);
        }
        Member::Bytes(b) => s.bulk(b),
    }
}

/// `SADD key member [member ...]`: how many were new.
fn sadd<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, db, max) = (c.arg(1), c.session.db, max_intset(c));
    let members: InlineList<&[u8], 8> = (2..c.argc()).map(|i| c.arg(i)).collect();
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let make = Some(|| SetValue::for_first_member(members[0]));
    let add = |set: Option<&mut SetValue>| set.map_or(0, |set| members.iter().filter(|m| set.insert(m, max)).count());
    // SADD never leaves a set empty.
    let added = access::change_packed_or(shard.db(db), key, now_ms(), make, |_| None, add, |_| false).map(|(n, _)| n);
    if let Some(n) = added.as_ref().ok().filter(|n| **n > 0) {
        c.notify_counted(EventClass::Set, "sadd", key, *n as u64);
    }
    drop(shard);
    match added {
        Ok(n) => c.reply(|s| s.integer(count_reply(n))),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// `SREM key member [member ...]`: how many were there.
fn srem<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let members: Vec<&[u8]> = (2..c.argc()).map(|i| c.arg(i)).collect();
    let removed = access::change_with::<_, SetValue, _>(
        c,
        c.arg(1),
        EventClass::Set,
        SetValue::is_empty,
        |set| set.map_or(0, |s| members.iter().filter(|m| s.remove(m)).count()),
        |n| (*n > 0).then_some(("srem", *n as u64)),
    );
    access::reply_or_wrongtype(c, removed, |s, n| s.integer(count_reply(n)));
}

/// `SISMEMBER key member`.
fn sismember<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, member, db) = (c.arg(1), c.arg(2), c.session.db);
    let mut shard = c.state.keyspace.lock_key(key);
    let found = access::read_at::<SetValue>(shard.db(db), key, now_ms()).map(|s| s.is_some_and(|s| s.contains(member)));
    drop(shard);
    match found {
        Ok(b) => c.reply(|s| s.integer(i64::from(b))),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// `SMISMEMBER key member [member ...]`: 1 or 0 for each.
fn smismember<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, db) = (c.arg(1), c.session.db);
    let members: Vec<&[u8]> = (2..c.argc()).map(|i| c.arg(i)).collect();
    let mut shard = c.state.keyspace.lock_key(key);
    let found: Result<Vec<bool>, WrongType> = access::read_at::<SetValue>(shard.db(db), key, now_ms())
        .map(|s| members.iter().map(|m| s.is_some_and(|s| s.contains(m))).collect());
    drop(shard);
    match found {
        Ok(flags) => c.reply(|s| {
            s.array(flags.len());
            for f in flags {
                s.integer(i64::from(f));
            }
        }),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// `SCARD key`.
fn scard<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, db) = (c.arg(1), c.session.db);
    let mut shard = c.state.keyspace.lock_key(key);
    let len = access::read_at::<SetValue>(shard.db(db), key, now_ms()).map(|s| s.map_or(0, SetValue::len));
    drop(shard);
    match len {
        Ok(n) => c.reply(|s| s.integer(count_reply(n))),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// `SPOP key [count]`: one random member (or null), or up to `count`
/// distinct ones as a set; the key goes when emptied.
fn spop<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() > 3 {
        return c.error(SYNTAX_ERROR);
    }
    let count = if c.argc() == 3 {
        match parse_i64(c.arg(2)) {
            Some(n) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => return c.error(b"ERR value is out of range, must be positive"),
        }
    } else {
        None
    };
    let (key, db, now) = (c.arg(1), c.session.db, now_ms());
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let popped = access::write::<SetValue>(d, key, now).map(|set| set.map(|s| pop_members(s, count.unwrap_or(1))));
    let deleted = access::remove_if_empty::<SetValue>(d, key, now, SetValue::is_empty);
    if let Some(n) = popped.as_ref().ok().and_then(|p| p.as_ref()).map(Vec::len).filter(|n| *n > 0) {
        c.notify_counted(EventClass::Set, "spop", key, n as u64);
    }
    if deleted {
        c.notify_emptied(key);
    }
    drop(shard);
    let popped = match popped {
        Ok(p) => p.unwrap_or_default(),
        Err(WrongType) => return c.error(WRONGTYPE),
    };
    if !popped.is_empty() {
        // The members chance chose, named (the change took its place under
        // the lock).
        let mut args: Vec<&[u8]> = Vec::with_capacity(popped.len() + 2);
        args.extend([&b"SREM"[..], key]);
        args.extend(popped.iter().map(|m| &m[..]));
        c.propagate(&args);
    }
    reply_members(c, count.is_some(), &popped, true);
}

/// Reply with the members SPOP or SRANDMEMBER chose: without a count one
/// member or a null, with one all of them, as a set (SPOP) or an array.
fn reply_members<T: ReplyTarget>(c: &mut Ctx<'_, T>, counted: bool, members: &[Vec<u8>], as_set: bool) {
    match (counted, members.first()) {
        (false, Some(m)) => c.reply(|s| s.bulk(m)),
        (false, None) => c.reply(|s| s.null()),
        (true, _) => c.reply(|s| {
            if as_set {
                s.set(members.len());
            } else {
                s.array(members.len());
            }
            for m in members {
                s.bulk(m);
            }
        }),
    }
}

/// Remove `count` random members (all, in the set's order, when `count`
/// covers the set).
fn pop_members(set: &mut SetValue, count: usize) -> Vec<Vec<u8>> {
    if count >= set.len() {
        let all = set.iter().map(|m| m.to_compact().to_vec()).collect();
        *set = SetValue::default();
        return all;
    }
    let mut picker = Picker::new();
    (0..count).filter_map(|_| set.remove_index(picker.below(set.len())).map(|m| m.to_vec())).collect()
}

/// `SRANDMEMBER key [count]`: one random member, or `count` distinct ones,
/// or with a negative count that many picks that may repeat.
fn srandmember<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() > 3 {
        return c.error(SYNTAX_ERROR);
    }
    let count = if c.argc() == 3 {
        match parse_i64(c.arg(2)) {
            None => return c.error(NOT_AN_INTEGER),
            Some(i64::MIN) => {
                return c.error(
                    b"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                )
            }
            Some(n) => Some(n),
        }
    } else {
        None
    };
    let (key, db) = (c.arg(1), c.session.db);
    if let Some(n) = count.filter(|n| *n < 0) {
        if access::refused_as_too_large::<_, SetValue>(c, key, n.unsigned_abs()) {
            return;
        }
    }
    let mut shard = c.state.keyspace.lock_key(key);
    let picked = access::read_at::<SetValue>(shard.db(db), key, now_ms())
        .map(|s| s.map(|s| random_members(s, count.unwrap_or(1))));
    drop(shard);
    let picked = match picked {
        Ok(p) => p.unwrap_or_default(),
        Err(WrongType) => return c.error(WRONGTYPE),
    };
    reply_members(c, count.is_some(), &picked, false);
}

/// `count` random members: distinct for a positive count (the whole set,
/// in its order, when the count covers it), possibly repeated for a negative one.
fn random_members(set: &SetValue, count: i64) -> Vec<Vec<u8>> {
    let text = |i: usize| set.get_index(i).map(|m| m.to_compact().to_vec());
    let mut picker = Picker::new();
    let len = set.len();
    if count < 0 {
        let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
        return (0..n).filter_map(|_| text(picker.below(len))).collect();
    }
    let n = usize::try_from(count).unwrap_or(usize::MAX);
    if n >= len {
        return set.iter().map(|m| m.to_compact().to_vec()).collect();
    }
    picker.distinct(len, n).into_iter().filter_map(text).collect()
}

/// The set operations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The result of `op` over `sets` (missing keys as `None`), built the way
/// Redis builds it: members added one by one to a new set, so the encoding
/// and, for an `intset`, the order are Redis's.
fn compute(op: Op, sets: &[Option<SetValue>], max: usize, limit: usize) -> SetValue {
    let mut out = SetValue::default();
    match op {
        Op::Inter => {
            if sets.iter().any(Option::is_none) {
                return out;
            }
            let mut present: Vec<&SetValue> = sets.iter().flatten().collect();
            present.sort_by_key(|s| s.len());
            let Some((smallest, others)) = present.split_first() else { return out };
            for m in smallest.iter() {
                let text = m.to_compact();
                if others.iter().all(|o| o.contains(&text)) {
                    out.insert(&text, max);
                    if out.len() == limit {
                        break;
                    }
                }
            }
        }
        Op::Union => {
            for set in sets.iter().flatten() {
                for m in set.iter() {
                    out.insert(&m.to_compact(), max);
                }
            }
        }
        Op::Diff => {
            let Some(Some(first)) = sets.first() else { return out };
            for m in first.iter() {
                let text = m.to_compact();
                if !sets[1..].iter().flatten().any(|o| o.contains(&text)) {
                    out.insert(&text, max);
                }
            }
        }
    }
    out
}

/// SINTER, SUNION, SDIFF (and SMEMBERS, an intersection of one); with
/// `store`, the STORE forms, whose first argument is the destination.
fn combine<T: ReplyTarget>(c: &mut Ctx<'_, T>, op: Op, store: bool) {
    let dest = store.then(|| c.arg(1));
    let first = if store { 2 } else { 1 };
    let keys: Vec<&[u8]> = (first..c.argc()).map(|i| c.arg(i)).collect();
    let (db, now, max) = (c.session.db, now_ms(), max_intset(c));
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, keys.iter().copied().chain(dest));
    let result = read_sets(&mut lock, ks, db, &keys, now).map(|sets| compute(op, &sets, max, usize::MAX));
    let result = match (result, dest) {
        (Err(WrongType), _) => Err(WrongType),
        (Ok(set), Some(dest)) => {
            let (len, stored) = store_set(lock.shard_for(ks, dest).db(db), dest, set);
            let event = match op {
                Op::Inter => "sinterstore",
                Op::Union => "sunionstore",
                Op::Diff => "sdiffstore",
            };
            access::notify_store(c, stored, EventClass::Set, event, dest);
            Ok(Err(len))
        }
        (Ok(set), None) => Ok(Ok(set)),
    };
    drop(lock);
    match result {
        Err(WrongType) => c.error(WRONGTYPE),
        Ok(Err(stored)) => c.reply(|s| s.integer(count_reply(stored))),
        Ok(Ok(set)) => c.reply(|s| {
            s.set(set.len());
            for m in set.iter() {
                bulk_member(s, m);
            }
        }),
    }
}

/// `SINTERCARD numkeys key [key ...] [LIMIT limit]`: the intersection's
/// size, counting stopped at `limit` (0: no limit).
fn sintercard<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let numkeys = match parse_i64(c.arg(1)) {
        Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => return c.error(b"ERR numkeys should be greater than 0"),
    };
    if numkeys > c.argc() - 2 {
        return c.error(b"ERR Number of keys can't be greater than number of args");
    }
    let mut limit = usize::MAX;
    let mut i = 2 + numkeys;
    while i < c.argc() {
        if c.arg(i).eq_ignore_ascii_case(b"limit") && i + 1 < c.argc() {
            match parse_i64(c.arg(i + 1)) {
                Some(n) if n >= 0 => limit = if n == 0 { usize::MAX } else { usize::try_from(n).unwrap_or(usize::MAX) },
                _ => return c.error(b"ERR LIMIT can't be negative"),
            }
            i += 2;
        } else {
            return c.error(SYNTAX_ERROR);
        }
    }
    let keys: Vec<&[u8]> = (2..2 + numkeys).map(|i| c.arg(i)).collect();
    let (db, now, max) = (c.session.db, now_ms(), max_intset(c));
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(db, keys.iter().copied());
    let card = read_sets(&mut lock, ks, db, &keys, now).map(|sets| compute(Op::Inter, &sets, max, limit).len());
    drop(lock);
    match card {
        Ok(n) => c.reply(|s| s.integer(count_reply(n))),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// `SMOVE source destination member`: 1 when moved.
fn smove<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (src, dst, member) = (c.arg(1), c.arg(2), c.arg(3));
    let (db, now, max) = (c.session.db, now_ms(), max_intset(c));
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, [src, dst]);
    let moved = move_member(c, &mut lock, ks, db, now, [src, dst], member, max);
    drop(lock);
    match moved {
        Ok(b) => c.reply(|s| s.integer(i64::from(b))),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// SMOVE's work, checks in Redis's order: a missing source is a 0 before
/// the destination's type is looked at. Announced as Redis does: the
/// removal (and the emptied source) before the destination is created.
#[allow(clippy::too_many_arguments)]
fn move_member<T: ReplyTarget>(
    c: &mut Ctx<'_, T>,
    lock: &mut MultiLock<'_, '_>,
    ks: &Keyspace,
    db: usize,
    now: i64,
    [src, dst]: [&[u8]; 2],
    member: &[u8],
    max: usize,
) -> Result<bool, WrongType> {
    let Some(source) = access::read_for_write::<SetValue>(lock.shard_for(ks, src).db(db), src, now)? else {
        return Ok(false);
    };
    let has = source.contains(member);
    access::read_for_write::<SetValue>(lock.shard_for(ks, dst).db(db), dst, now)?;
    if src == dst || !has {
        return Ok(has);
    }
    let d = lock.shard_for(ks, src).db(db);
    if let Ok(Some(s)) = access::write::<SetValue>(d, src, now) {
        s.remove(member);
    }
    let emptied = access::remove_if_empty::<SetValue>(d, src, now, SetValue::is_empty);
    c.notify(EventClass::Set, "srem", src);
    if emptied {
        c.notify_emptied(src);
    }
    // The destination changes only when it did not hold the member already.
    if set_or_create(lock.shard_for(ks, dst).db(db), dst, now, member)?.insert(member, max) {
        c.notify(EventClass::Set, "sadd", dst);
    }
    Ok(true)
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]`.
fn sscan<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(cursor) = parse_cursor(c.arg(2)) else { return c.error(b"ERR invalid cursor") };
    let (key, db) = (c.arg(1), c.session.db);
    let mut shard = c.state.keyspace.lock_key(key);
    let set = match access::read_at::<SetValue>(shard.db(db), key, now_ms()) {
        Ok(s) => s.cloned(),
        Err(WrongType) => {
            drop(shard);
            return c.error(WRONGTYPE);
        }
    };
    drop(shard);
    let Some(set) = set else { return reply_scan(c, 0, &[]) };
    let (pattern, count) = match scan_options(c, 3) {
        Ok(o) => o,
        Err(msg) => return c.error(msg),
    };
    let mut found = Vec::new();
    let next = set.scan(cursor, count, |m| {
        let text = m.to_compact();
        if pattern.is_none_or(|p| glob::matches(p, &text, false)) {
            found.push(text.to_vec());
        }
    });
    reply_scan(c, next, &found);
}

/// The MATCH pattern (`None` for all) and COUNT of SSCAN, HSCAN and ZSCAN
/// options starting at argument `from`.
pub(super) fn scan_options<'a, T: ReplyTarget>(
    c: &Ctx<'a, T>,
    from: usize,
) -> Result<(Option<&'a [u8]>, usize), &'static [u8]> {
    let (mut pattern, mut count) = (None, 10);
    let mut i = from;
    while i < c.argc() {
        let opt = c.arg(i);
        let more = i + 1 < c.argc();
        if opt.eq_ignore_ascii_case(b"count") && more {
            match parse_i64(c.arg(i + 1)) {
                None => return Err(NOT_AN_INTEGER),
                Some(n) if n < 1 => return Err(SYNTAX_ERROR),
                Some(n) => count = usize::try_from(n).unwrap_or(usize::MAX),
            }
        } else if opt.eq_ignore_ascii_case(b"match") && more {
            pattern = Some(c.arg(i + 1)).filter(|p| *p != b"*");
        } else {
            return Err(SYNTAX_ERROR);
        }
        i += 2;
    }
    Ok((pattern, count))
}

/// A scan reply: the next cursor and the items found.
pub(super) fn reply_scan<T: ReplyTarget>(c: &mut Ctx<'_, T>, next: u64, items: &[Vec<u8>]) {
    let next = next.to_string();
    c.reply(|s| {
        s.array(2);
        s.bulk(next.as_bytes());
        s.array(items.len());
        for item in items {
            s.bulk(item);
        }
    });
}
