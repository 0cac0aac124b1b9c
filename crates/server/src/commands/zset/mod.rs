//! Sorted set commands: ZADD and ZINCRBY, lookups by member and rank, every
//! form of ZRANGE (and the removals and counts that share its ranges), pops,
//! random picks, the algebra (ZUNION, ZINTER, ZDIFF, their STORE forms and
//! ZINTERCARD) and ZSCAN.
//!
//! Values are reached only through the accessors at the top, which the
//! submodules share: [`range`] holds the range engine every ZRANGE form,
//! removal by range and count goes through, [`algebra`] the set algebra.
//! Commands on several keys lock all their shards at once.

mod algebra;
mod range;

use std::sync::atomic::Ordering;

use kvik_protocol::number::{parse_i64, write_double_g17};
use kvik_protocol::resp::writer::Protocol;
use kvik_protocol::ReplySink;

use super::access::{self, count_reply, WrongType};
use super::blocked::{self as blocking, Empty, Wait};
use super::keys::parse_cursor;
use super::keyword::Keyword;
use super::random::Picker;
use super::set::{reply_scan, scan_options};
use super::{Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::inline_list::InlineList;
use crate::keyspace::{glob, now_ms, Db, Keyspace, MultiLock};
use crate::types::double::parse_score;
use crate::types::set::SetValue;
use crate::types::zset::ZSetValue;
use crate::types::ValueRef;
use algebra::{algebra, Output, SetOp};
use range::{zcount, zrange, zremrange, By, Form};

handlers! {
    ZADD(c) => zadd(c, false),
    ZINCRBY(c) => zadd(c, true),
    ZREM(c) => zrem(c),
    ZCARD(c) => zcard(c),
    ZSCORE(c) => zscore(c),
    ZMSCORE(c) => zmscore(c),
    ZRANK(c) => zrank(c, false),
    ZREVRANK(c) => zrank(c, true),
    ZCOUNT(c) => zcount(c, By::Score),
    ZLEXCOUNT(c) => zcount(c, By::Lex),
    ZRANGE(c) => zrange(c, Form { store: false, by: By::Auto, rev: None }),
    ZREVRANGE(c) => zrange(c, Form { store: false, by: By::Rank, rev: Some(true) }),
    ZRANGEBYSCORE(c) => zrange(c, Form { store: false, by: By::Score, rev: Some(false) }),
    ZREVRANGEBYSCORE(c) => zrange(c, Form { store: false, by: By::Score, rev: Some(true) }),
    ZRANGEBYLEX(c) => zrange(c, Form { store: false, by: By::Lex, rev: Some(false) }),
    ZREVRANGEBYLEX(c) => zrange(c, Form { store: false, by: By::Lex, rev: Some(true) }),
    ZRANGESTORE(c) => zrange(c, Form { store: true, by: By::Auto, rev: None }),
    ZREMRANGEBYRANK(c) => zremrange(c, By::Rank),
    ZREMRANGEBYSCORE(c) => zremrange(c, By::Score),
    ZREMRANGEBYLEX(c) => zremrange(c, By::Lex),
    ZPOPMIN(c) => zpop(c, false),
    ZPOPMAX(c) => zpop(c, true),
    ZMPOP(c) => zmpop(c),
    BZPOPMIN(c) => bzpop(c, false),
    BZPOPMAX(c) => bzpop(c, true),
    BZMPOP(c) => bzmpop(c),
    ZRANDMEMBER(c) => zrandmember(c),
    ZUNION(c) => algebra(c, SetOp::Union, Output::Reply),
    ZINTER(c) => algebra(c, SetOp::Inter, Output::Reply),
    ZDIFF(c) => algebra(c, SetOp::Diff, Output::Reply),
    ZUNIONSTORE(c) => algebra(c, SetOp::Union, Output::Store),
    ZINTERSTORE(c) => algebra(c, SetOp::Inter, Output::Store),
    ZDIFFSTORE(c) => algebra(c, SetOp::Diff, Output::Store),
    ZINTERCARD(c) => algebra(c, SetOp::Inter, Output::Card),
    ZSCAN(c) => zscan(c),
}

/// Members with their scores, in reply order.
type Items = Vec<(Vec<u8>, f64)>;

const NOT_A_FLOAT: &[u8] = b"ERR value is not a valid float";
const BAD_SCORE_RANGE: &[u8] = b"ERR min or max is not a float";
const BAD_LEX_RANGE: &[u8] = b"ERR min or max not valid string range item";
const NAN_SCORE: &[u8] = b"ERR resulting score is not a number (NaN)";
const MUST_BE_POSITIVE: &[u8] = b"ERR value is out of range, must be positive";

/// The sorted set at `key`, if any, for a read command.
pub(super) fn zset_at<'d>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<&'d ZSetValue>, WrongType> {
    access::read_at::<ZSetValue>(db, key, now)
}

/// Delete `key` if it holds an empty sorted set: an empty set is no key.
/// True when it was deleted.
fn drop_if_empty(db: &mut Db, key: &[u8], now: i64) -> bool {
    access::remove_if_empty::<ZSetValue>(db, key, now, ZSetValue::is_empty)
}

/// Store `z` at `key` (replacing whatever was there), or delete the key
/// when `z` is empty; the set's size and what was done.
pub(super) fn store_zset(db: &mut Db, key: &[u8], z: ZSetValue) -> (usize, access::Stored) {
    let len = z.len();
    (len, access::store(db, key, z, len == 0))
}

/// An input of the algebra commands: a sorted set, or a set whose members
/// all score 1.
enum Source {
    Sorted(ZSetValue),
    Plain(SetValue),
}

/// A copy of the set or sorted set at `key`, if any (counted as a read, by
/// the STORE forms too, as in Redis).
fn source_at(db: &mut Db, key: &[u8], now: i64) -> Result<Option<Source>, WrongType> {
    match db.get(key, now).map(|e| e.value()) {
        None => Ok(None),
        Some(ValueRef::ZSet(z)) => Ok(Some(Source::Sorted(z.clone()))),
        Some(ValueRef::Set(s)) => Ok(Some(Source::Plain(s.clone()))),
        Some(_) => Err(WrongType),
    }
}

/// `zset-max-listpack-entries` and `zset-max-listpack-value` now.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    entries: usize,
    value: usize,
}

pub(super) fn limits<T: ReplyTarget>(c: &Ctx<'_, T>) -> Limits {
    let limits = &c.state.limits;
    Limits {
        entries: limits.zset_max_listpack_entries.load(Ordering::Relaxed),
        value: limits.zset_max_listpack_value.load(Ordering::Relaxed),
    }
}

/// A new sorted set of `items` added one by one as ZADD adds them, starting
/// in the large encoding when `large` (ZRANGESTORE of a rank range longer
/// than the entries limit starts there).
fn build_incrementally(items: Items, large: bool, limits: Limits) -> ZSetValue {
    let mut z = if large { ZSetValue::new_large() } else { ZSetValue::new() };
    for (m, s) in items {
        z.grow_before_insert(limits.entries, limits.value, m.len());
        z.insert(&m, s);
    }
    z
}

/// A new sorted set of `items` in the encoding Redis gives a set it builds
/// as a whole (Z*STORE): small when it fits the limits.
pub(super) fn build(items: impl IntoIterator<Item = (Vec<u8>, f64)>, limits: Limits) -> ZSetValue {
    let mut z = ZSetValue::new_large();
    for (m, s) in items {
        z.insert(&m, s);
    }
    z.shrink_if_fits(limits.entries, limits.value);
    z
}

fn resp3<T: ReplyTarget>(c: &Ctx<'_, T>) -> bool {
    c.session.protocol == Protocol::Resp3
}

/// Members with or without their scores: flat in RESP2, pairs in RESP3
/// (`nested`), as Redis replies to ZRANGE and friends.
fn write_items(s: &mut dyn ReplySink, items: &[(Vec<u8>, f64)], withscores: bool, nested: bool) {
    write_members(s, items.iter().map(|(m, score)| (m.as_slice(), *score)), withscores, nested);
}

/// [`write_items`] for members borrowed from the set itself.
fn write_members<'a>(
    s: &mut dyn ReplySink,
    items: impl ExactSizeIterator<Item = (&'a [u8], f64)>,
    withscores: bool,
    nested: bool,
) {
    s.array(if withscores && !nested { items.len() * 2 } else { items.len() });
    for (m, score) in items {
        if withscores && nested {
            s.array(2);
        }
        s.bulk(m);
        if withscores {
            s.double(score);
        }
    }
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`,
/// and `ZINCRBY key increment member` (`incr`), which is ZADD with INCR.
fn zadd<T: ReplyTarget>(c: &mut Ctx<'_, T>, incr: bool) {
    let opts = match zadd_options(c, incr) {
        Ok(o) => o,
        Err(msg) => return c.error(msg),
    };
    let mut pairs = InlineList::<(f64, &[u8]), 4>::new();
    for i in (opts.first..c.argc()).step_by(2) {
        let Some(score) = parse_score(c.arg(i)) else { return c.error(NOT_A_FLOAT) };
        pairs.push((score, c.arg(i + 1)));
    }
    match zadd_at(c, &opts, &pairs) {
        Err(msg) => c.error(msg),
        Ok(o) if opts.incr => match o.last_score.filter(|_| o.processed > 0) {
            Some(score) => c.reply(|s| s.double(score)),
            None => c.reply(|s| s.null()),
        },
        Ok(o) => {
            let n = if opts.ch { o.added + o.updated } else { o.added };
            c.reply(|s| s.integer(count_reply(n)));
        }
    }
}

/// ZADD's flags and where its score/member pairs start.
#[derive(Default)]
pub(super) struct ZaddOptions {
    pub(super) nx: bool,
    pub(super) xx: bool,
    pub(super) gt: bool,
    pub(super) lt: bool,
    pub(super) ch: bool,
    pub(super) incr: bool,
    pub(super) first: usize,
}

/// Parse ZADD's flags with Redis's checks, in Redis's order.
fn zadd_options<T: ReplyTarget>(c: &Ctx<'_, T>, incr: bool) -> Result<ZaddOptions, &'static [u8]> {
    let mut o = ZaddOptions { incr, first: 2, ..ZaddOptions::default() };
    while o.first < c.argc() {
        let flag = match Keyword::of(c.arg(o.first)).as_bytes() {
            b"nx" => &mut o.nx,
            b"xx" => &mut o.xx,
            b"gt" => &mut o.gt,
            b"lt" => &mut o.lt,
            b"ch" => &mut o.ch,
            b"incr" => &mut o.incr,
            _ => break,
        };
        *flag = true;
        o.first += 1;
    }
    let elements = c.argc() - o.first;
    if elements == 0 || !elements.is_multiple_of(2) {
        return Err(SYNTAX_ERROR);
    }
    if o.nx && o.xx {
        return Err(b"ERR XX and NX options at the same time are not compatible");
    }
    if (o.nx && (o.gt || o.lt)) || (o.gt && o.lt) {
        return Err(b"ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if o.incr && elements > 2 {
        return Err(b"ERR INCR option supports a single increment-element pair");
    }
    Ok(o)
}

/// What ZADD did.
#[derive(Default)]
pub(super) struct ZaddOutcome {
    pub(super) added: usize,
    pub(super) updated: usize,
    /// Elements not skipped by NX, XX, GT or LT.
    pub(super) processed: usize,
    /// The score of the last element processed (INCR's reply).
    pub(super) last_score: Option<f64>,
}

/// ZADD's (and GEOADD's) work on the sorted set at argument 1 under its
/// shard's lock: a missing key is created unless `XX` is given.
///
/// Announced as `zadd` (`zincr` with INCR) when a member was added or its
/// score changed, as GEOADD is too.
pub(super) fn zadd_at<T: ReplyTarget>(
    c: &mut Ctx<'_, T>,
    opts: &ZaddOptions,
    pairs: &[(f64, &[u8])],
) -> Result<ZaddOutcome, &'static [u8]> {
    let (key, now, limits) = (c.arg(1), now_ms(), limits(c));
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(c.session.db);
    // A missing key is created unless XX is given; a set a failed ZADD
    // left empty is deleted again.
    let make = (!opts.xx).then_some(ZSetValue::new);
    let apply =
        |z: Option<&mut ZSetValue>| z.map_or(Ok(ZaddOutcome::default()), |z| apply_zadd(z, opts, pairs, limits));
    let (outcome, emptied) = match access::change_packed_or(d, key, now, make, |_| None, apply, ZSetValue::is_empty) {
        Ok(done) => done,
        Err(WrongType) => (Err(WRONGTYPE), false),
    };
    let deleted = emptied && d.remove(key).is_some();
    if let Some(n) = outcome.as_ref().ok().map(|o| o.added + o.updated).filter(|n| *n > 0) {
        c.notify_counted(EventClass::ZSet, if opts.incr { "zincr" } else { "zadd" }, key, n as u64);
    }
    if deleted {
        c.notify_emptied(key);
    }
    drop(shard);
    outcome
}

/// Apply ZADD's pairs to `z` with Redis's rules for each flag.
fn apply_zadd(
    z: &mut ZSetValue,
    o: &ZaddOptions,
    pairs: &[(f64, &[u8])],
    limits: Limits,
) -> Result<ZaddOutcome, &'static [u8]> {
    let mut out = ZaddOutcome::default();
    for &(score, member) in pairs {
        match z.score(member) {
            Some(current) => {
                if o.nx {
                    continue;
                }
                let new = if o.incr { score + current } else { score };
                if new.is_nan() {
                    return Err(NAN_SCORE);
                }
                if (o.lt && new >= current) || (o.gt && new <= current) {
                    continue;
                }
                out.processed += 1;
                out.last_score = Some(new);
                if new != current {
                    z.insert_looked_up(member, new, Some(current));
                    out.updated += 1;
                }
            }
            None if o.xx => {}
            None => {
                z.grow_before_insert(limits.entries, limits.value, member.len());
                z.insert_looked_up(member, score, None);
                out.added += 1;
                out.processed += 1;
                out.last_score = Some(score);
            }
        }
    }
    Ok(out)
}

/// `ZREM key member [member ...]`: how many were there.
fn zrem<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let members: Vec<&[u8]> = (2..c.argc()).map(|i| c.arg(i)).collect();
    let removed = access::change_with::<_, ZSetValue, _>(
        c,
        c.arg(1),
        EventClass::ZSet,
        ZSetValue::is_empty,
        |z| z.map_or(0, |z| members.iter().filter(|m| z.remove(m).is_some()).count()),
        |n| (*n > 0).then_some(("zrem", *n as u64)),
    );
    access::reply_or_wrongtype(c, removed, |s, n| s.integer(count_reply(n)));
}

/// Run `read` on the sorted set at argument 1 (`None` when missing) under
/// its shard's lock.
fn read_zset<T: ReplyTarget, R>(c: &Ctx<'_, T>, read: impl FnOnce(Option<&ZSetValue>) -> R) -> Result<R, WrongType> {
    access::read_with::<_, ZSetValue, _>(c, c.arg(1), read)
}

/// `ZCARD key`.
fn zcard<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    match read_zset(c, |z| z.map_or(0, ZSetValue::len)) {
        Ok(n) => c.reply(|s| s.integer(count_reply(n))),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// `ZSCORE key member`.
fn zscore<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let member = c.arg(2);
    match read_zset(c, |z| z.and_then(|z| z.score(member))) {
        Ok(Some(score)) => c.reply(|s| s.double(score)),
        Ok(None) => c.reply(|s| s.null()),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// `ZMSCORE key member [member ...]`: a score or null for each.
fn zmscore<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let members: Vec<&[u8]> = (2..c.argc()).map(|i| c.arg(i)).collect();
    match read_zset(c, |z| members.iter().map(|m| z.and_then(|z| z.score(m))).collect::<Vec<_>>()) {
        Ok(scores) => c.reply(|s| {
            s.array(scores.len());
            for score in scores {
                match score {
                    Some(v) => s.double(v),
                    None => s.null(),
                }
            }
        }),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// `ZRANK key member` and `ZREVRANK` (`rev`).
fn zrank<T: ReplyTarget>(c: &mut Ctx<'_, T>, rev: bool) {
    let member = c.arg(2);
    let rank = read_zset(c, |z| z.and_then(|z| z.rank(member).map(|r| if rev { z.len() - 1 - r } else { r })));
    match rank {
        Ok(Some(r)) => c.reply(|s| s.integer(count_reply(r))),
        Ok(None) => c.reply(|s| s.null()),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// Remove up to `count` members from the low end (or the high end with
/// `max`) of `z`.
fn pop_items(z: &mut ZSetValue, max: bool, count: usize) -> Items {
    (0..count.min(z.len())).filter_map(|_| z.pop(max)).collect()
}

/// `ZPOPMIN key [count]` and `ZPOPMAX` (`max`).
fn zpop<T: ReplyTarget>(c: &mut Ctx<'_, T>, max: bool) {
    if c.argc() > 3 {
        return c.error(SYNTAX_ERROR);
    }
    let count = if c.argc() == 3 {
        match parse_i64(c.arg(2)) {
            Some(n) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => return c.error(MUST_BE_POSITIVE),
        }
    } else {
        None
    };
    let popped = access::change_with(
        c,
        c.arg(1),
        EventClass::ZSet,
        ZSetValue::is_empty,
        |z| z.map_or_else(Vec::new, |z| pop_items(z, max, count.unwrap_or(1))),
        |items| (!items.is_empty()).then_some((pop_event(max), items.len() as u64)),
    );
    let nested = resp3(c) && count.is_some();
    access::reply_or_wrongtype(c, popped, |s, items| write_items(s, &items, true, nested));
}

/// ZMPOP's arguments: the keys, whether to pop the highest scores, and the count.
type ZmpopArgs<'a> = (Vec<&'a [u8]>, bool, usize);

/// ZMPOP's arguments, numkeys at `at` (1, or 2 for BZMPOP).
fn zmpop_args<'a, T: ReplyTarget>(c: &Ctx<'a, T>, at: usize) -> Result<ZmpopArgs<'a>, &'static [u8]> {
    let numkeys = match parse_i64(c.arg(at)) {
        Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => return Err(b"ERR numkeys should be greater than 0"),
    };
    let where_at = numkeys.checked_add(at + 1).filter(|&w| w < c.argc()).ok_or(SYNTAX_ERROR)?;
    let max = match Keyword::of(c.arg(where_at)).as_bytes() {
        b"min" => false,
        b"max" => true,
        _ => return Err(SYNTAX_ERROR),
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < c.argc() {
        if count.is_none() && c.arg(j).eq_ignore_ascii_case(b"count") && j + 1 < c.argc() {
            match parse_i64(c.arg(j + 1)) {
                Some(n) if n > 0 => count = Some(usize::try_from(n).unwrap_or(usize::MAX)),
                _ => return Err(b"ERR count should be greater than 0"),
            }
            j += 2;
        } else {
            return Err(SYNTAX_ERROR);
        }
    }
    Ok(((at + 1..where_at).map(|i| c.arg(i)).collect(), max, count.unwrap_or(1)))
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`: pops from the first
/// non-empty key; `[key, [[member, score], ...]]` or a null array.
fn zmpop<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (keys, max, count) = match zmpop_args(c, 1) {
        Ok(a) => a,
        Err(msg) => return c.error(msg),
    };
    let (db, now) = (c.session.db, now_ms());
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, keys.iter().copied());
    let popped = pop_first_nonempty(&mut lock, ks, db, now, &keys, max, count);
    if let Ok(Some((key, items, deleted))) = &popped {
        notify_pop(c, key, max, items.len(), *deleted);
    }
    drop(lock);
    let popped = popped.map(|p| p.map(|(key, items, _)| (key, items)));
    match popped {
        Err(WrongType) => c.error(WRONGTYPE),
        Ok(None) => c.reply(|s| s.null_array()),
        Ok(Some((key, items))) => c.reply(|s| {
            s.array(2);
            s.bulk(key);
            write_items(s, &items, true, true);
        }),
    }
}

/// What ZMPOP popped: the key, the members, and whether the set was left
/// empty (and deleted).
type PoppedFrom<'k> = Option<(&'k [u8], Items, bool)>;

/// `BZPOPMIN` / `BZPOPMAX key [key ...] timeout`: `[key, member, score]`
/// from the first non-empty sorted set, or block until one is added to.
fn bzpop<T: ReplyTarget>(c: &mut Ctx<'_, T>, max: bool) {
    let deadline = match blocking::timeout_secs(c.arg(c.argc() - 1)) {
        Ok(d) => d,
        Err(msg) => return c.error(msg),
    };
    let serving = c.serving();
    let keys = blocking::keys_to_serve((1..c.argc() - 1).map(|i| c.arg(i)).collect(), serving);
    let (db, now) = (c.session.db, now_ms());
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(db, keys.iter().copied());
    match pop_first_nonempty(&mut lock, ks, db, now, &keys, max, 1) {
        Err(WrongType) if serving.is_some() => {}
        Err(WrongType) => c.error(WRONGTYPE),
        Ok(Some((key, items, deleted))) => {
            notify_pop(c, key, max, items.len(), deleted);
            drop(lock);
            c.reply(|s| {
                s.array(1 + 2 * items.len().min(1));
                s.bulk(key);
                if let Some((member, score)) = items.first() {
                    s.bulk(member);
                    s.double(*score);
                }
            });
        }
        Ok(None) => {
            blocking::wait(c, Wait { keys: &keys, args: None, deadline, empty: Empty::NullArray, on_delete: false })
        }
    }
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`: ZMPOP, or
/// block until one of the sorted sets is added to.
fn bzmpop<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (keys, max, count) = match zmpop_args(c, 2) {
        Ok(a) => a,
        Err(msg) => return c.error(msg),
    };
    // Redis reads the timeout after the other arguments.
    let deadline = match blocking::timeout_secs(c.arg(1)) {
        Ok(d) => d,
        Err(msg) => return c.error(msg),
    };
    let serving = c.serving();
    let keys = blocking::keys_to_serve(keys, serving);
    let (db, now) = (c.session.db, now_ms());
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(db, keys.iter().copied());
    match pop_first_nonempty(&mut lock, ks, db, now, &keys, max, count) {
        Err(WrongType) if serving.is_some() => {}
        Err(WrongType) => c.error(WRONGTYPE),
        Ok(Some((key, items, deleted))) => {
            notify_pop(c, key, max, items.len(), deleted);
            drop(lock);
            c.reply(|s| {
                s.array(2);
                s.bulk(key);
                write_items(s, &items, true, true);
            });
        }
        Ok(None) => {
            blocking::wait(c, Wait { keys: &keys, args: None, deadline, empty: Empty::NullArray, on_delete: false })
        }
    }
}

/// ZMPOP's work: the first key holding a sorted set gives up to `count`
/// members; a key of another type met before it is an error.
fn pop_first_nonempty<'k>(
    lock: &mut MultiLock<'_, '_>,
    ks: &Keyspace,
    db: usize,
    now: i64,
    keys: &[&'k [u8]],
    max: bool,
    count: usize,
) -> Result<PoppedFrom<'k>, WrongType> {
    for &key in keys {
        let d = lock.shard_for(ks, key).db(db);
        if let Some(z) = access::write::<ZSetValue>(d, key, now)? {
            let items = pop_items(z, max, count);
            let deleted = drop_if_empty(d, key, now);
            return Ok(Some((key, items, deleted)));
        }
    }
    Ok(None)
}

/// Announce a pop of `popped` members from `key`, and its deletion when the
/// pop emptied it.
///
/// Every pop from a sorted set redoes as `ZPOPMIN`/`ZPOPMAX key count`:
/// what a blocking or multi-key pop took, from the key it took it from.
fn notify_pop<T: ReplyTarget>(c: &mut Ctx<'_, T>, key: &[u8], max: bool, popped: usize, deleted: bool) {
    c.notify_counted(EventClass::ZSet, pop_event(max), key, popped as u64);
    if deleted {
        c.notify_emptied(key);
    }
    let name: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
    c.propagate(&[name, key, popped.to_string().as_bytes()]);
}

/// The event name of a pop from the top (`max`) or the bottom.
fn pop_event(max: bool) -> &'static str {
    if max {
        "zpopmax"
    } else {
        "zpopmin"
    }
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`.
fn zrandmember<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() == 2 {
        let picked = read_zset(c, |z| {
            z.filter(|z| !z.is_empty()).and_then(|z| z.get(Picker::new().below(z.len())).map(|(m, _)| m.to_vec()))
        });
        return match picked {
            Ok(Some(m)) => c.reply(|s| s.bulk(&m)),
            Ok(None) => c.reply(|s| s.null()),
            Err(WrongType) => c.error(WRONGTYPE),
        };
    }
    let count = match parse_i64(c.arg(2)) {
        None => return c.error(NOT_AN_INTEGER),
        Some(i64::MIN) => {
            return c
                .error(b"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
        }
        Some(n) => n,
    };
    if c.argc() > 4 || (c.argc() == 4 && !c.arg(3).eq_ignore_ascii_case(b"withscores")) {
        return c.error(SYNTAX_ERROR);
    }
    let withscores = c.argc() == 4;
    if withscores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return c.error(b"ERR value is out of range");
    }
    let elements = count.unsigned_abs() * if withscores { 2 } else { 1 };
    if count < 0 && access::refused_as_too_large::<_, ZSetValue>(c, c.arg(1), elements) {
        return;
    }
    let nested = resp3(c);
    match read_zset(c, |z| z.map_or_else(Vec::new, |z| random_items(z, count))) {
        Ok(items) => c.reply(|s| write_items(s, &items, withscores, nested)),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// ZRANDMEMBER's picks: with a negative count (or 1) independent picks, with
/// a count covering the set all members, otherwise distinct ones.
fn random_items(z: &ZSetValue, count: i64) -> Items {
    let len = z.len();
    let at = |i: usize| z.get(i).map(|(m, s)| (m.to_vec(), s));
    let mut picker = Picker::new();
    if len == 0 || count == 0 {
        return Vec::new();
    }
    let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
    if count < 0 || count == 1 {
        return (0..n).filter_map(|_| at(picker.below(len))).collect();
    }
    if n >= len {
        // Redis lists the whole set from the highest member down.
        return z.iter().rev().map(|(m, s)| (m.to_vec(), s)).collect();
    }
    picker.distinct(len, n).into_iter().filter_map(at).collect()
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`: members and scores.
fn zscan<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(cursor) = parse_cursor(c.arg(2)) else { return c.error(b"ERR invalid cursor") };
    let z = match read_zset(c, |z| z.cloned()) {
        Ok(z) => z,
        Err(WrongType) => return c.error(WRONGTYPE),
    };
    let Some(z) = z else { return reply_scan(c, 0, &[]) };
    let (pattern, count) = match scan_options(c, 3) {
        Ok(o) => o,
        Err(msg) => return c.error(msg),
    };
    let mut found = Vec::new();
    let mut visit = |m: &[u8], s: f64| {
        if pattern.is_none_or(|p| glob::matches(p, m, false)) {
            let mut text = Vec::with_capacity(24);
            write_double_g17(&mut text, s);
            found.push(m.to_vec());
            found.push(text);
        }
    };
    // A small set is returned whole, as Redis returns it; a large one is
    // walked by score (see `ZSetValue::scan`).
    let next = if z.is_large() {
        z.scan(cursor, count, &mut visit)
    } else {
        z.iter().for_each(|(m, s)| visit(m, s));
        0
    };
    reply_scan(c, next, &found);
}
