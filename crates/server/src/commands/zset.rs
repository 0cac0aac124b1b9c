//! Sorted set commands: ZADD and ZINCRBY, lookups by member and rank, every
//! form of ZRANGE (and the removals and counts that share its ranges), pops,
//! random picks, the algebra (ZUNION, ZINTER, ZDIFF, their STORE forms and
//! ZINTERCARD) and ZSCAN.
//!
//! Values are reached only through the accessors at the top. All range
//! commands go through one engine ([`Range`], [`span`], [`select`]), which
//! turns a rank, score or lexicographic range into a run of ascending ranks
//! and then walks it forwards or backwards with an offset and a limit.
//! Commands on several keys lock all their shards at once.

use std::cmp::Ordering;
use std::collections::HashMap;

use kvik_protocol::number::{parse_i64, write_double_g17};
use kvik_protocol::resp::writer::Protocol;
use kvik_protocol::ReplySink;

use super::keys::parse_cursor;
use super::random::Picker;
use super::set::{reply_scan, scan_options};
use super::{Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::keyspace::{glob, now_ms, Db, Entry, Keyspace, MultiLock};
use crate::types::double::parse_score;
use crate::types::list::rank_range;
use crate::types::set::SetValue;
use crate::types::zset::{LexBound, ScoreBound, ZSetValue};
use crate::types::Value;

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

/// The key holds another type.
struct WrongType;

/// The sorted set at `key`, if any.
fn zset_at<'d>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<&'d ZSetValue>, WrongType> {
    match db.get(key, now) {
        None => Ok(None),
        Some(Entry { value: Value::ZSet(z), .. }) => Ok(Some(&**z)),
        Some(_) => Err(WrongType),
    }
}

/// The sorted set at `key`, mutable, if any.
fn zset_at_mut<'d>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<&'d mut ZSetValue>, WrongType> {
    match db.get_mut(key, now) {
        None => Ok(None),
        Some(Entry { value: Value::ZSet(z), .. }) => Ok(Some(&mut **z)),
        Some(_) => Err(WrongType),
    }
}

/// The sorted set at `key`, created empty (small encoding) when missing.
fn zset_or_create<'d>(db: &'d mut Db, key: &[u8], now: i64) -> Result<&'d mut ZSetValue, WrongType> {
    if !db.contains(key, now) {
        db.insert(key, Entry::new(Value::zset(ZSetValue::new())));
    }
    zset_at_mut(db, key, now)?.ok_or(WrongType)
}

/// Delete `key` if it holds an empty sorted set: an empty set is no key.
fn drop_if_empty(db: &mut Db, key: &[u8], now: i64) {
    if matches!(zset_at(db, key, now), Ok(Some(z)) if z.is_empty()) {
        db.remove(key);
    }
}

/// Store `z` at `key` (replacing whatever was there), or delete the key
/// when `z` is empty; the set's size.
fn store_zset(db: &mut Db, key: &[u8], z: ZSetValue) -> usize {
    let len = z.len();
    db.remove(key);
    if len > 0 {
        db.insert(key, Entry::new(Value::zset(z)));
    }
    len
}

/// An input of the algebra commands: a sorted set, or a set whose members
/// all score 1.
enum Source {
    Sorted(ZSetValue),
    Plain(SetValue),
}

/// A copy of the set or sorted set at `key`, if any.
fn source_at(db: &mut Db, key: &[u8], now: i64) -> Result<Option<Source>, WrongType> {
    match db.get(key, now) {
        None => Ok(None),
        Some(Entry { value: Value::ZSet(z), .. }) => Ok(Some(Source::Sorted((**z).clone()))),
        Some(Entry { value: Value::Set(s), .. }) => Ok(Some(Source::Plain((**s).clone()))),
        Some(_) => Err(WrongType),
    }
}

/// `zset-max-listpack-entries` and `zset-max-listpack-value` now.
#[derive(Clone, Copy)]
struct Limits {
    entries: usize,
    value: usize,
}

fn limits<T: ReplyTarget>(c: &Ctx<'_, T>) -> Limits {
    let config = c.state.config();
    Limits { entries: config.usize("zset-max-listpack-entries"), value: config.usize("zset-max-listpack-value") }
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
fn build(items: impl IntoIterator<Item = (Vec<u8>, f64)>, limits: Limits) -> ZSetValue {
    let mut z = ZSetValue::new_large();
    for (m, s) in items {
        z.insert(&m, s);
    }
    z.shrink_if_fits(limits.entries, limits.value);
    z
}

fn count_reply(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn resp3<T: ReplyTarget>(c: &Ctx<'_, T>) -> bool {
    c.session.protocol == Protocol::Resp3
}

/// Members with or without their scores: flat in RESP2, pairs in RESP3
/// (`nested`), as Redis replies to ZRANGE and friends.
fn write_items(s: &mut dyn ReplySink, items: &[(Vec<u8>, f64)], withscores: bool, nested: bool) {
    s.array(if withscores && !nested { items.len() * 2 } else { items.len() });
    for (m, score) in items {
        if withscores && nested {
            s.array(2);
        }
        s.bulk(m);
        if withscores {
            s.double(*score);
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
    let mut pairs = Vec::new();
    for i in (opts.first..c.argc()).step_by(2) {
        let Some(score) = parse_score(c.arg(i)) else { return c.error(NOT_A_FLOAT) };
        pairs.push((score, c.arg(i + 1)));
    }
    let (key, db, now, limits) = (c.arg(1), c.session.db, now_ms(), limits(c));
    let mut shard = c.state.keyspace.lock_key(key);
    let d = shard.db(db);
    let outcome = match zset_at(d, key, now) {
        Err(WrongType) => Err(WRONGTYPE),
        Ok(None) if opts.xx => Ok(ZaddOutcome::default()),
        Ok(_) => match zset_or_create(d, key, now) {
            Ok(z) => apply_zadd(z, &opts, &pairs, limits),
            Err(WrongType) => Err(WRONGTYPE),
        },
    };
    drop_if_empty(d, key, now);
    drop(shard);
    match outcome {
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
struct ZaddOptions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
    first: usize,
}

/// Parse ZADD's flags with Redis's checks, in Redis's order.
fn zadd_options<T: ReplyTarget>(c: &Ctx<'_, T>, incr: bool) -> Result<ZaddOptions, &'static [u8]> {
    let mut o = ZaddOptions { incr, first: 2, ..ZaddOptions::default() };
    while o.first < c.argc() {
        let flag = match c.arg(o.first).to_ascii_lowercase().as_slice() {
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
struct ZaddOutcome {
    added: usize,
    updated: usize,
    /// Elements not skipped by NX, XX, GT or LT.
    processed: usize,
    /// The score of the last element processed (INCR's reply).
    last_score: Option<f64>,
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
                    z.insert(member, new);
                    out.updated += 1;
                }
            }
            None if o.xx => {}
            None => {
                z.grow_before_insert(limits.entries, limits.value, member.len());
                z.insert(member, score);
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
    let (key, db, now) = (c.arg(1), c.session.db, now_ms());
    let members: Vec<&[u8]> = (2..c.argc()).map(|i| c.arg(i)).collect();
    let mut shard = c.state.keyspace.lock_key(key);
    let d = shard.db(db);
    let removed =
        zset_at_mut(d, key, now).map(|z| z.map_or(0, |z| members.iter().filter(|m| z.remove(m).is_some()).count()));
    drop_if_empty(d, key, now);
    drop(shard);
    match removed {
        Ok(n) => c.reply(|s| s.integer(count_reply(n))),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// Run `read` on the sorted set at argument 1 (`None` when missing) under
/// its shard's lock.
fn read_zset<T: ReplyTarget, R>(c: &Ctx<'_, T>, read: impl FnOnce(Option<&ZSetValue>) -> R) -> Result<R, WrongType> {
    let (key, db) = (c.arg(1), c.session.db);
    let mut shard = c.state.keyspace.lock_key(key);
    zset_at(shard.db(db), key, now_ms()).map(read)
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

/// How a range is given.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    /// Not said yet (ZRANGE before its options are read): by rank.
    Auto,
    Rank,
    Score,
    Lex,
}

/// A parsed range, its ends already in (min, max) order.
enum Range {
    Rank(i64, i64),
    Score(ScoreBound, ScoreBound),
    Lex(LexBound, LexBound),
}

impl Range {
    /// Parse the two ends with the rules and errors of `by`.
    fn parse(by: By, min: &[u8], max: &[u8]) -> Result<Range, &'static [u8]> {
        match by {
            By::Auto | By::Rank => match (parse_i64(min), parse_i64(max)) {
                (Some(a), Some(b)) => Ok(Range::Rank(a, b)),
                _ => Err(NOT_AN_INTEGER),
            },
            By::Score => match (ScoreBound::parse(min), ScoreBound::parse(max)) {
                (Some(a), Some(b)) => Ok(Range::Score(a, b)),
                _ => Err(BAD_SCORE_RANGE),
            },
            By::Lex => match (LexBound::parse(min), LexBound::parse(max)) {
                (Some(a), Some(b)) => Ok(Range::Lex(a, b)),
                _ => Err(BAD_LEX_RANGE),
            },
        }
    }
}

/// The ascending ranks `lo..hi` that `range` selects in `z`; `rev` matters
/// for rank ranges (counted from the top) and lexicographic ones.
fn span(z: &ZSetValue, range: &Range, rev: bool) -> (usize, usize) {
    let len = z.len();
    match range {
        Range::Rank(start, end) => match rank_range(len, *start, *end) {
            Some((s, e)) if rev => (len - 1 - e, len - s),
            Some((s, e)) => (s, e + 1),
            None => (0, 0),
        },
        Range::Score(min, max) => {
            let lo = z.rank_above_score(min);
            (lo, z.rank_after_score(max).max(lo))
        }
        Range::Lex(min, max) => lex_span(z, min, max, rev),
    }
}

/// Redis's order of lex range ends, where `-` and `+` sit below and above
/// every string.
fn lex_cmp(a: &LexBound, b: &LexBound) -> Ordering {
    match (a, b) {
        (LexBound::Min, LexBound::Min) | (LexBound::Max, LexBound::Max) => Ordering::Equal,
        (LexBound::Min, _) | (_, LexBound::Max) => Ordering::Less,
        (LexBound::Max, _) | (_, LexBound::Min) => Ordering::Greater,
        (LexBound::Inclusive(x) | LexBound::Exclusive(x), LexBound::Inclusive(y) | LexBound::Exclusive(y)) => x.cmp(y),
    }
}

fn lex_admits_from_below(min: &LexBound, m: &[u8]) -> bool {
    match min {
        LexBound::Min => true,
        LexBound::Max => false,
        LexBound::Inclusive(b) => m >= &b[..],
        LexBound::Exclusive(b) => m > &b[..],
    }
}

fn lex_admits_from_above(max: &LexBound, m: &[u8]) -> bool {
    match max {
        LexBound::Min => false,
        LexBound::Max => true,
        LexBound::Inclusive(b) => m <= &b[..],
        LexBound::Exclusive(b) => m < &b[..],
    }
}

/// The run of ranks a lex range selects. When all scores are equal the
/// members are in lexicographic order and two binary searches find it; when
/// they are not, the answer is Redis's for its small encoding: the walk
/// from one end to the first member inside the range, then on while inside.
fn lex_span(z: &ZSetValue, min: &LexBound, max: &LexBound, rev: bool) -> (usize, usize) {
    let ordered = lex_cmp(min, max);
    let inclusive_both = matches!(min, LexBound::Inclusive(_)) && matches!(max, LexBound::Inclusive(_));
    let (Some((first, low)), Some((last, high))) = (z.get(0), z.len().checked_sub(1).and_then(|i| z.get(i))) else {
        return (0, 0);
    };
    if ordered == Ordering::Greater || (ordered == Ordering::Equal && !inclusive_both) {
        return (0, 0);
    }
    if low == high {
        let lo = z.rank_above_lex(min);
        return (lo, z.rank_after_lex(max).max(lo));
    }
    if !lex_admits_from_below(min, last) || !lex_admits_from_above(max, first) {
        return (0, 0);
    }
    if rev {
        let Some(from_top) = z.iter().rev().position(|(m, _)| lex_admits_from_above(max, m)) else { return (0, 0) };
        let top = z.len() - 1 - from_top;
        let run = z.iter_rev_from(top).take_while(|(m, _)| lex_admits_from_below(min, m)).count();
        (top + 1 - run, top + 1)
    } else {
        let Some(start) = z.iter().position(|(m, _)| lex_admits_from_below(min, m)) else { return (0, 0) };
        let run = z.iter_from(start).take_while(|(m, _)| lex_admits_from_above(max, m)).count();
        (start, start + run)
    }
}

/// The members of ranks `lo..hi`, walked upwards (or downwards with `rev`),
/// skipping `offset` and taking at most `limit` (negative: no limit). A
/// negative offset selects nothing, as in Redis.
fn select(z: &ZSetValue, (lo, hi): (usize, usize), rev: bool, offset: i64, limit: i64) -> Items {
    let Ok(offset) = usize::try_from(offset) else { return Vec::new() };
    let available = (hi - lo).saturating_sub(offset);
    let take = usize::try_from(limit).map_or(available, |l| l.min(available));
    if take == 0 {
        return Vec::new();
    }
    let own = |(m, s): (&[u8], f64)| (m.to_vec(), s);
    if rev {
        z.iter_rev_from(hi - 1 - offset).take(take).map(own).collect()
    } else {
        z.iter_from(lo + offset).take(take).map(own).collect()
    }
}

/// Which command of the ZRANGE family runs: whether it stores, and the
/// range kind and direction it fixes (`Auto`/`None`: left to options).
#[derive(Clone, Copy)]
struct Form {
    store: bool,
    by: By,
    rev: Option<bool>,
}

/// ZRANGE's options after the range.
struct RangeOptions {
    by: By,
    rev: bool,
    withscores: bool,
    offset: i64,
    limit: i64,
}

/// Parse the options of the ZRANGE family from argument `from`, with
/// Redis's errors in Redis's order.
fn range_options<T: ReplyTarget>(c: &Ctx<'_, T>, form: Form, from: usize) -> Result<RangeOptions, &'static [u8]> {
    let mut o = RangeOptions { by: form.by, rev: false, withscores: false, offset: 0, limit: -1 };
    let mut rev = form.rev;
    let mut j = from;
    while j < c.argc() {
        let opt = c.arg(j).to_ascii_lowercase();
        let left = c.argc() - j - 1;
        match opt.as_slice() {
            b"withscores" if !form.store => o.withscores = true,
            b"limit" if left >= 2 => {
                match (parse_i64(c.arg(j + 1)), parse_i64(c.arg(j + 2))) {
                    (Some(off), Some(lim)) => (o.offset, o.limit) = (off, lim),
                    _ => return Err(NOT_AN_INTEGER),
                }
                j += 2;
            }
            b"rev" if rev.is_none() => rev = Some(true),
            b"bylex" if o.by == By::Auto => o.by = By::Lex,
            b"byscore" if o.by == By::Auto => o.by = By::Score,
            _ => return Err(SYNTAX_ERROR),
        }
        j += 1;
    }
    o.rev = rev.unwrap_or(false);
    if o.by == By::Auto {
        o.by = By::Rank;
    }
    if o.limit != -1 && o.by == By::Rank {
        return Err(b"ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    }
    if o.withscores && o.by == By::Lex {
        return Err(b"ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    Ok(o)
}

/// The ZRANGE family: ZRANGE, ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE,
/// ZRANGEBYLEX, ZREVRANGEBYLEX and ZRANGESTORE.
fn zrange<T: ReplyTarget>(c: &mut Ctx<'_, T>, form: Form) {
    let base = if form.store { 2 } else { 1 };
    let o = match range_options(c, form, base + 3) {
        Ok(o) => o,
        Err(msg) => return c.error(msg),
    };
    // Score and lex ranges read backwards take the maximum first.
    let (mut min, mut max) = (c.arg(base + 1), c.arg(base + 2));
    if o.rev && o.by != By::Rank {
        std::mem::swap(&mut min, &mut max);
    }
    let range = match Range::parse(o.by, min, max) {
        Ok(r) => r,
        Err(msg) => return c.error(msg),
    };
    let (src, dst) = (c.arg(base), form.store.then(|| c.arg(1)));
    let (db, now, limits) = (c.session.db, now_ms(), limits(c));
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys([src].into_iter().chain(dst));
    // Rank ranges take no LIMIT (one of `0 -1` is accepted and ignored).
    let (offset, limit) = if o.by == By::Rank { (0, -1) } else { (o.offset, o.limit) };
    let found = zset_at(lock.shard_for(ks, src).db(db), src, now)
        .map(|z| z.map_or_else(Vec::new, |z| select(z, span(z, &range, o.rev), o.rev, offset, limit)));
    let stored = match (&found, dst) {
        (Ok(items), Some(dst)) => {
            let large = o.by == By::Rank && items.len() > limits.entries;
            let z = build_incrementally(items.clone(), large, limits);
            Some(store_zset(lock.shard_for(ks, dst).db(db), dst, z))
        }
        _ => None,
    };
    drop(lock);
    let nested = resp3(c);
    match (found, stored) {
        (Err(WrongType), _) => c.error(WRONGTYPE),
        (Ok(_), Some(n)) => c.reply(|s| s.integer(count_reply(n))),
        (Ok(items), None) => c.reply(|s| write_items(s, &items, o.withscores, nested)),
    }
}

/// `ZREMRANGEBYRANK`, `ZREMRANGEBYSCORE`, `ZREMRANGEBYLEX key min max`:
/// how many were removed.
fn zremrange<T: ReplyTarget>(c: &mut Ctx<'_, T>, by: By) {
    let range = match Range::parse(by, c.arg(2), c.arg(3)) {
        Ok(r) => r,
        Err(msg) => return c.error(msg),
    };
    let (key, db, now) = (c.arg(1), c.session.db, now_ms());
    let mut shard = c.state.keyspace.lock_key(key);
    let d = shard.db(db);
    let removed = zset_at_mut(d, key, now).map(|z| {
        z.map_or(0, |z| {
            let (lo, hi) = span(z, &range, false);
            z.remove_ranks(lo, hi)
        })
    });
    drop_if_empty(d, key, now);
    drop(shard);
    match removed {
        Ok(n) => c.reply(|s| s.integer(count_reply(n))),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// `ZCOUNT key min max` and `ZLEXCOUNT key min max`.
fn zcount<T: ReplyTarget>(c: &mut Ctx<'_, T>, by: By) {
    let range = match Range::parse(by, c.arg(2), c.arg(3)) {
        Ok(r) => r,
        Err(msg) => return c.error(msg),
    };
    let count = read_zset(c, |z| {
        z.map_or(0, |z| {
            let (lo, hi) = span(z, &range, false);
            hi - lo
        })
    });
    match count {
        Ok(n) => c.reply(|s| s.integer(count_reply(n))),
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
    let (key, db, now) = (c.arg(1), c.session.db, now_ms());
    let mut shard = c.state.keyspace.lock_key(key);
    let d = shard.db(db);
    let popped = zset_at_mut(d, key, now).map(|z| z.map_or_else(Vec::new, |z| pop_items(z, max, count.unwrap_or(1))));
    drop_if_empty(d, key, now);
    drop(shard);
    let nested = resp3(c) && count.is_some();
    match popped {
        Ok(items) => c.reply(|s| write_items(s, &items, true, nested)),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`: pops from the first
/// non-empty key; `[key, [[member, score], ...]]` or a null array.
fn zmpop<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let numkeys = match parse_i64(c.arg(1)) {
        Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => return c.error(b"ERR numkeys should be greater than 0"),
    };
    let Some(where_at) = numkeys.checked_add(2).filter(|&w| w < c.argc()) else { return c.error(SYNTAX_ERROR) };
    let max = match c.arg(where_at).to_ascii_lowercase().as_slice() {
        b"min" => false,
        b"max" => true,
        _ => return c.error(SYNTAX_ERROR),
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < c.argc() {
        if count.is_none() && c.arg(j).eq_ignore_ascii_case(b"count") && j + 1 < c.argc() {
            match parse_i64(c.arg(j + 1)) {
                Some(n) if n > 0 => count = Some(usize::try_from(n).unwrap_or(usize::MAX)),
                _ => return c.error(b"ERR count should be greater than 0"),
            }
            j += 2;
        } else {
            return c.error(SYNTAX_ERROR);
        }
    }
    let keys: Vec<&[u8]> = (2..where_at).map(|i| c.arg(i)).collect();
    let (db, now) = (c.session.db, now_ms());
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(keys.iter().copied());
    let popped = pop_first_nonempty(&mut lock, ks, db, now, &keys, max, count.unwrap_or(1));
    drop(lock);
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

/// ZMPOP's work: the first key holding a sorted set gives up to `count`
/// members; a key of another type met before it is an error.
fn pop_first_nonempty<'k>(
    lock: &mut MultiLock<'_>,
    ks: &Keyspace,
    db: usize,
    now: i64,
    keys: &[&'k [u8]],
    max: bool,
    count: usize,
) -> Result<Option<(&'k [u8], Items)>, WrongType> {
    for &key in keys {
        let d = lock.shard_for(ks, key).db(db);
        if let Some(z) = zset_at_mut(d, key, now)? {
            let items = pop_items(z, max, count);
            drop_if_empty(d, key, now);
            return Ok(Some((key, items)));
        }
    }
    Ok(None)
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

/// The algebra operations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

/// What the algebra command does with its result.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Output {
    /// ZUNION, ZINTER, ZDIFF: reply with it.
    Reply,
    /// The STORE forms: store it at the destination (argument 1).
    Store,
    /// ZINTERCARD: reply with its size.
    Card,
}

/// How scores of one member in several inputs combine.
#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Fold `value` into `target`; an infinite sum of opposite signs is 0.
    fn fold(self, target: &mut f64, value: f64) {
        match self {
            Aggregate::Sum => {
                *target += value;
                if target.is_nan() {
                    *target = 0.0;
                }
            }
            Aggregate::Min => {
                if value < *target {
                    *target = value;
                }
            }
            Aggregate::Max => {
                if value > *target {
                    *target = value;
                }
            }
        }
    }
}

impl Source {
    fn len(&self) -> usize {
        match self {
            Source::Sorted(z) => z.len(),
            Source::Plain(s) => s.len(),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Source::Sorted(z) => z.score(member),
            Source::Plain(s) => s.contains(member).then_some(1.0),
        }
    }

    fn items(&self) -> Items {
        match self {
            Source::Sorted(z) => z.iter().map(|(m, s)| (m.to_vec(), s)).collect(),
            Source::Plain(s) => s.iter().map(|m| (m.to_compact().to_vec(), 1.0)).collect(),
        }
    }
}

/// The algebra's options after the keys.
struct AlgebraOptions {
    weights: Vec<f64>,
    aggregate: Aggregate,
    withscores: bool,
    /// ZINTERCARD's LIMIT (0: none).
    limit: usize,
}

/// Parse WEIGHTS, AGGREGATE, WITHSCORES and LIMIT from argument `from` as
/// `op` and `out` allow them.
fn algebra_options<T: ReplyTarget>(
    c: &Ctx<'_, T>,
    op: SetOp,
    out: Output,
    from: usize,
    keys: usize,
) -> Result<AlgebraOptions, &'static [u8]> {
    let mut o = AlgebraOptions { weights: vec![1.0; keys], aggregate: Aggregate::Sum, withscores: false, limit: 0 };
    let weighted = op != SetOp::Diff && out != Output::Card;
    let mut j = from;
    while j < c.argc() {
        let left = c.argc() - j;
        let opt = c.arg(j).to_ascii_lowercase();
        match opt.as_slice() {
            b"weights" if weighted && left > keys => {
                for (i, w) in o.weights.iter_mut().enumerate() {
                    *w = parse_score(c.arg(j + 1 + i)).ok_or(&b"ERR weight value is not a float"[..])?;
                }
                j += 1 + keys;
            }
            b"aggregate" if weighted && left >= 2 => {
                o.aggregate = match c.arg(j + 1).to_ascii_lowercase().as_slice() {
                    b"sum" => Aggregate::Sum,
                    b"min" => Aggregate::Min,
                    b"max" => Aggregate::Max,
                    _ => return Err(SYNTAX_ERROR),
                };
                j += 2;
            }
            b"withscores" if out == Output::Reply => {
                o.withscores = true;
                j += 1;
            }
            b"limit" if out == Output::Card && left >= 2 => {
                o.limit = match parse_i64(c.arg(j + 1)) {
                    Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
                    _ => return Err(b"ERR LIMIT can't be negative"),
                };
                j += 2;
            }
            _ => return Err(SYNTAX_ERROR),
        }
    }
    Ok(o)
}

/// ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD.
///
/// As in Redis the keys are looked up (and their types checked) before the
/// options are read, so a wrong type wins over a syntax error.
fn algebra<T: ReplyTarget>(c: &mut Ctx<'_, T>, op: SetOp, out: Output) {
    let at = if out == Output::Store { 2 } else { 1 };
    let numkeys = match parse_i64(c.arg(at)) {
        None => return c.error(NOT_AN_INTEGER),
        Some(n) if n < 1 => {
            let name = String::from_utf8_lossy(c.arg(0)).to_ascii_lowercase();
            return c.error(format!("ERR at least 1 input key is needed for '{name}' command").as_bytes());
        }
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    };
    if numkeys > c.argc() - at - 1 {
        return c.error(SYNTAX_ERROR);
    }
    let keys: Vec<&[u8]> = (at + 1..at + 1 + numkeys).map(|i| c.arg(i)).collect();
    let dst = (out == Output::Store).then(|| c.arg(1));
    let (db, now, limits) = (c.session.db, now_ms(), limits(c));
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(keys.iter().copied().chain(dst));
    let sources: Result<Vec<Option<Source>>, WrongType> =
        keys.iter().map(|k| source_at(lock.shard_for(ks, k).db(db), k, now)).collect();
    let Ok(sources) = sources else {
        drop(lock);
        return c.error(WRONGTYPE);
    };
    let o = match algebra_options(c, op, out, at + 1 + numkeys, numkeys) {
        Ok(o) => o,
        Err(msg) => {
            drop(lock);
            return c.error(msg);
        }
    };
    let cap = if out == Output::Card && o.limit > 0 { o.limit } else { usize::MAX };
    let result = combine(op, &sources, &o, cap);
    let stored = dst.map(|dst| store_zset(lock.shard_for(ks, dst).db(db), dst, build(result.iter().cloned(), limits)));
    drop(lock);
    match (out, stored) {
        (Output::Card, _) => c.reply(|s| s.integer(count_reply(result.len()))),
        (_, Some(n)) => c.reply(|s| s.integer(count_reply(n))),
        _ => {
            let nested = resp3(c);
            let sorted = build(result, Limits { entries: 0, value: 0 });
            let items: Items = sorted.iter().map(|(m, s)| (m.to_vec(), s)).collect();
            c.reply(|s| write_items(s, &items, o.withscores, nested));
        }
    }
}

/// A weighted score; a NaN product (0 × inf) counts as 0.
fn weighted(score: f64, weight: f64) -> f64 {
    let v = score * weight;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

/// The members and scores `op` yields over `sources` (missing keys as
/// `None`), stopping after `cap` members. Inputs are taken smallest first,
/// as Redis takes them, which fixes the order scores are summed in.
fn combine(op: SetOp, sources: &[Option<Source>], o: &AlgebraOptions, cap: usize) -> Items {
    let len = |i: usize| sources[i].as_ref().map_or(0, Source::len);
    let mut order: Vec<usize> = (0..sources.len()).collect();
    if op != SetOp::Diff {
        order.sort_by_key(|&i| len(i));
    }
    let mut out = Vec::new();
    match op {
        SetOp::Inter => {
            let Some(Some(first)) = sources.get(order[0]) else { return out };
            'members: for (m, s) in first.items() {
                let mut score = weighted(s, o.weights[order[0]]);
                for &j in &order[1..] {
                    let Some(v) = sources[j].as_ref().and_then(|src| src.score(&m)) else { continue 'members };
                    o.aggregate.fold(&mut score, v * o.weights[j]);
                }
                out.push((m, score));
                if out.len() >= cap {
                    break;
                }
            }
        }
        SetOp::Union => {
            let mut at: HashMap<Vec<u8>, usize> = HashMap::new();
            for &i in &order {
                for (m, s) in sources[i].as_ref().map_or_else(Vec::new, Source::items) {
                    let score = weighted(s, o.weights[i]);
                    match at.get(&m) {
                        Some(&k) => o.aggregate.fold(&mut out[k].1, score),
                        None => {
                            at.insert(m.clone(), out.len());
                            out.push((m, score));
                        }
                    }
                }
            }
        }
        SetOp::Diff => {
            let Some(Some(first)) = sources.first() else { return out };
            for (m, s) in first.items() {
                if !sources[1..].iter().flatten().any(|src| src.score(&m).is_some()) {
                    out.push((m, s));
                }
            }
        }
    }
    out
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
