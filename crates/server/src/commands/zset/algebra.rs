//! The sorted set algebra: ZUNION, ZINTER, ZDIFF, their STORE forms and
//! ZINTERCARD, over sorted sets and plain sets (whose members score 1).

use std::collections::HashMap;

use kvik_protocol::number::parse_i64;

use super::{build, limits, resp3, source_at, store_zset, write_items, Items, Limits, Source};
use crate::commands::access::{self, count_reply, WrongType};
use crate::commands::keyword::Keyword;
use crate::commands::{Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::keyspace::now_ms;
use crate::types::double::parse_score;

/// The algebra operations.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum SetOp {
    Union,
    Inter,
    Diff,
}

/// What the algebra command does with its result.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Output {
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
        match Keyword::of(c.arg(j)).as_bytes() {
            b"weights" if weighted && left > keys => {
                for (i, w) in o.weights.iter_mut().enumerate() {
                    *w = parse_score(c.arg(j + 1 + i)).ok_or(&b"ERR weight value is not a float"[..])?;
                }
                j += 1 + keys;
            }
            b"aggregate" if weighted && left >= 2 => {
                o.aggregate = match Keyword::of(c.arg(j + 1)).as_bytes() {
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
pub(super) fn algebra<T: ReplyTarget>(c: &mut Ctx<'_, T>, op: SetOp, out: Output) {
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
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, keys.iter().copied().chain(dst));
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
    let stored = dst.map(|dst| {
        let (len, stored) = store_zset(lock.shard_for(ks, dst).db(db), dst, build(result.iter().cloned(), limits));
        let event = match op {
            SetOp::Union => "zunionstore",
            SetOp::Inter => "zinterstore",
            SetOp::Diff => "zdiffstore",
        };
        access::notify_store(c, stored, EventClass::ZSet, event, dst);
        len
    });
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
