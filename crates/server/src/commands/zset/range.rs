//! The range engine of the sorted set commands and the commands built on
//! it: every form of ZRANGE (and ZRANGESTORE), the removals by range and
//! the counts.
//!
//! A range (by rank, score or member) becomes a run of ascending ranks
//! ([`span`]), which [`select`] walks forwards or backwards with an offset
//! and a limit.

use std::cmp::Ordering;

use kvik_protocol::number::parse_i64;

use super::{
    build_incrementally, limits, read_zset, resp3, store_zset, write_members, zset_at, Items, BAD_LEX_RANGE,
    BAD_SCORE_RANGE,
};
use crate::commands::access::{self, count_reply, WrongType};
use crate::commands::keyword::Keyword;
use crate::commands::{Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::keyspace::now_ms;
use crate::types::list::rank_range;
use crate::types::zset::{LexBound, ScoreBound, ZSetValue};

/// How a range is given.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum By {
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
    if !min.admits_from_below(last) || !max.admits_from_above(first) {
        return (0, 0);
    }
    if rev {
        let Some(from_top) = z.iter().rev().position(|(m, _)| max.admits_from_above(m)) else { return (0, 0) };
        let top = z.len() - 1 - from_top;
        let run = z.iter_rev_from(top).take_while(|(m, _)| min.admits_from_below(m)).count();
        (top + 1 - run, top + 1)
    } else {
        let Some(start) = z.iter().position(|(m, _)| min.admits_from_below(m)) else { return (0, 0) };
        let run = z.iter_from(start).take_while(|(m, _)| max.admits_from_above(m)).count();
        (start, start + run)
    }
}

/// The members of ranks `lo..hi`, walked upwards (or downwards with `rev`),
/// skipping `offset` and taking at most `limit` (negative: no limit). A
/// negative offset selects nothing, as in Redis.
fn select(z: &ZSetValue, span: (usize, usize), rev: bool, offset: i64, limit: i64) -> Items {
    select_in_place(z, span, rev, offset, limit).into_iter().map(|(m, s)| (m.to_vec(), s)).collect()
}

/// [`select`] borrowing the members from the set.
fn select_in_place(z: &ZSetValue, (lo, hi): (usize, usize), rev: bool, offset: i64, limit: i64) -> Vec<(&[u8], f64)> {
    let Ok(offset) = usize::try_from(offset) else { return Vec::new() };
    let available = (hi - lo).saturating_sub(offset);
    let take = usize::try_from(limit).map_or(available, |l| l.min(available));
    if take == 0 {
        return Vec::new();
    }
    if rev {
        z.iter_rev_from(hi - 1 - offset).take(take).collect()
    } else {
        z.iter_from(lo + offset).take(take).collect()
    }
}

/// Which command of the ZRANGE family runs: whether it stores, and the
/// range kind and direction it fixes (`Auto`/`None`: left to options).
#[derive(Clone, Copy)]
pub(super) struct Form {
    pub(super) store: bool,
    pub(super) by: By,
    pub(super) rev: Option<bool>,
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
        let left = c.argc() - j - 1;
        match Keyword::of(c.arg(j)).as_bytes() {
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
pub(super) fn zrange<T: ReplyTarget>(c: &mut Ctx<'_, T>, form: Form) {
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
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, [src].into_iter().chain(dst));
    // Rank ranges take no LIMIT (one of `0 -1` is accepted and ignored).
    let (offset, limit) = if o.by == By::Rank { (0, -1) } else { (o.offset, o.limit) };
    let Some(dst) = dst else {
        // ZRANGE and friends: the reply is written from the members in
        // place, under the lock, as GET writes its value: copying each
        // member out first cost more than the range search.
        let nested = resp3(c);
        match zset_at(lock.shard_for(ks, src).db(db), src, now) {
            Err(WrongType) => c.error(WRONGTYPE),
            Ok(z) => {
                let items =
                    z.map_or_else(Vec::new, |z| select_in_place(z, span(z, &range, o.rev), o.rev, offset, limit));
                c.reply(|s| write_members(s, items.iter().copied(), o.withscores, nested));
            }
        }
        return;
    };
    // ZRANGESTORE: the selection is copied out, since storing it may replace the source.
    let found = zset_at(lock.shard_for(ks, src).db(db), src, now)
        .map(|z| z.map_or_else(Vec::new, |z| select(z, span(z, &range, o.rev), o.rev, offset, limit)));
    let Ok(items) = found else {
        drop(lock);
        return c.error(WRONGTYPE);
    };
    let large = o.by == By::Rank && items.len() > limits.entries;
    let z = build_incrementally(items, large, limits);
    let (len, stored) = store_zset(lock.shard_for(ks, dst).db(db), dst, z);
    access::notify_store(c, stored, EventClass::ZSet, "zrangestore", dst);
    drop(lock);
    c.reply(|s| s.integer(count_reply(len)));
}

/// `ZREMRANGEBYRANK`, `ZREMRANGEBYSCORE`, `ZREMRANGEBYLEX key min max`:
/// how many were removed.
pub(super) fn zremrange<T: ReplyTarget>(c: &mut Ctx<'_, T>, by: By) {
    let range = match Range::parse(by, c.arg(2), c.arg(3)) {
        Ok(r) => r,
        Err(msg) => return c.error(msg),
    };
    let event = match by {
        By::Score => "zremrangebyscore",
        By::Lex => "zremrangebylex",
        By::Rank | By::Auto => "zremrangebyrank",
    };
    let removed = access::change_with(
        c,
        c.arg(1),
        EventClass::ZSet,
        ZSetValue::is_empty,
        |z| {
            z.map_or(0, |z| {
                let (lo, hi) = span(z, &range, false);
                z.remove_ranks(lo, hi)
            })
        },
        |n| (*n > 0).then_some((event, *n as u64)),
    );
    access::reply_or_wrongtype(c, removed, |s, n| s.integer(count_reply(n)));
}

/// `ZCOUNT key min max` and `ZLEXCOUNT key min max`.
pub(super) fn zcount<T: ReplyTarget>(c: &mut Ctx<'_, T>, by: By) {
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
