//! Hash commands: setting and reading fields, counters (HINCRBY,
//! HINCRBYFLOAT), HRANDFIELD and HSCAN.
//!
//! Every command reaches stored hashes through the accessors at the top, so
//! the way entries are stored can change without touching the commands. A
//! hash left empty by a command is deleted with its key, as in Redis; a
//! write picks the encoding from `hash-max-listpack-*` as they are then.

use crate::inline_list::InlineList;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use kvik_protocol::number::parse_i64;
use kvik_protocol::resp::writer::Protocol;
use kvik_protocol::ReplySink;

use super::access::{self, count_reply, reply_or_wrongtype, WrongType};
use super::keys::parse_cursor;
use super::{Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::keyspace::{glob, now_ms};
use crate::types::float80::F80;
use crate::types::hash::{HashRef, HashValue};

handlers! {
    HSET(c) => hset(c, false),
    HMSET(c) => hset(c, true),
    HSETNX(c) => hsetnx(c),
    HGET(c) => hget(c),
    HMGET(c) => hmget(c),
    HGETALL(c) => hgetall(c, true, true),
    HKEYS(c) => hgetall(c, true, false),
    HVALS(c) => hgetall(c, false, true),
    HDEL(c) => hdel(c),
    HEXISTS(c) => hexists(c),
    HLEN(c) => hlen(c),
    HSTRLEN(c) => hstrlen(c),
    HINCRBY(c) => hincrby(c),
    HINCRBYFLOAT(c) => hincrbyfloat(c),
    HRANDFIELD(c) => hrandfield(c),
    HSCAN(c) => hscan(c),
}

/// Run `read` on the hash at `key` (`None` when missing), counted as a read.
fn read_hash<T: ReplyTarget, R>(
    c: &Ctx<'_, T>,
    key: &[u8],
    read: impl FnOnce(Option<HashRef<'_>>) -> R,
) -> Result<R, WrongType> {
    access::read_with::<_, HashValue, _>(c, key, read)
}

/// Reply straight from the hash at `key` (`None` when missing).
fn reply_from_hash<T: ReplyTarget>(
    c: &mut Ctx<'_, T>,
    key: &[u8],
    write: impl FnOnce(&mut dyn ReplySink, Option<HashRef<'_>>),
) {
    access::reply_from::<_, HashValue>(c, key, write);
}

/// Run `write` on the hash at `key` under its shard lock: a missing key
/// gets a new empty hash, and the key is deleted if the hash is left empty.
/// (`HSET`, which can change a packed hash in place, goes through
/// [`crate::keyspace::typed::set_hash_fields`] instead.)
///
/// `event` names the change's keyspace event from the result, with the
/// changes it counts (`None`: nothing changed).
fn write_hash<T: ReplyTarget, R>(
    c: &mut Ctx<'_, T>,
    key: &[u8],
    write: impl FnOnce(&mut HashValue) -> R,
    event: impl FnOnce(&R) -> Option<(&'static str, u64)>,
) -> Result<R, WrongType> {
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(c.session.db);
    let now = now_ms();
    let make = Some(HashValue::new);
    // The key is created when missing, so `write` always gets a hash.
    let (result, emptied) =
        access::change_packed_or(d, key, now, make, |_| None, |h| h.map(write), |h: HashRef<'_>| h.is_empty())?;
    let result = result.ok_or(WrongType)?;
    let deleted = emptied && d.remove(key).is_some();
    if let Some((name, changes)) = event(&result) {
        c.notify_counted(EventClass::Hash, name, key, changes);
    }
    if deleted {
        c.notify_emptied(key);
    }
    drop(shard);
    Ok(result)
}

/// Run `change` on the hash at `key` if there is one, deleting the key if
/// the hash is left empty; `None` for a missing key.
fn change_hash<T: ReplyTarget, R>(
    c: &mut Ctx<'_, T>,
    key: &[u8],
    change: impl FnOnce(&mut HashValue) -> R,
    event: impl FnOnce(&R) -> Option<(&'static str, u64)>,
) -> Result<Option<R>, WrongType> {
    access::change_with(
        c,
        key,
        EventClass::Hash,
        |h: HashRef<'_>| h.is_empty(),
        |h| h.map(change),
        |r| r.as_ref().and_then(event),
    )
}

/// Reply with a value or a null.
fn reply_value(s: &mut dyn ReplySink, value: Option<&[u8]>) {
    match value {
        Some(v) => s.bulk(v),
        None => s.null(),
    }
}

/// Outcome of a command that fails on the key's type or on its arguments.
fn reply_result<T: ReplyTarget, R>(
    c: &mut Ctx<'_, T>,
    result: Result<Result<R, &[u8]>, WrongType>,
    write: impl FnOnce(&mut dyn ReplySink, R),
) {
    match result {
        Err(WrongType) => c.error(WRONGTYPE),
        Ok(Err(msg)) => c.error(msg),
        Ok(Ok(r)) => c.reply(|s| write(s, r)),
    }
}

/// `HSET key field value [field value ...]`: how many fields are new; and
/// `HMSET`, the same answering OK.
fn hset<T: ReplyTarget>(c: &mut Ctx<'_, T>, ok_reply: bool) {
    if !c.argc().is_multiple_of(2) {
        let name = if ok_reply { "hmset" } else { "hset" };
        return c.error(format!("ERR wrong number of arguments for '{name}' command").as_bytes());
    }
    let pairs: InlineList<(&[u8], &[u8]), 4> = (2..c.argc()).step_by(2).map(|i| (c.arg(i), c.arg(i + 1))).collect();
    let limits = c.state.limits.hash_limits();
    let key = c.arg(1);
    let mut shard = c.state.keyspace.lock_key(key);
    let added = crate::keyspace::typed::set_hash_fields(shard.db(c.session.db), key, now_ms(), &pairs, limits);
    if added.is_ok() {
        // Redis counts every pair set as a change, new or not.
        c.notify_counted(EventClass::Hash, "hset", key, pairs.len() as u64);
    }
    drop(shard);
    reply_or_wrongtype(c, added, |s, n| if ok_reply { s.simple(b"OK") } else { s.integer(count_reply(n)) });
}

/// `HSETNX key field value`: 1 when set, 0 when the field existed.
fn hsetnx<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (field, value) = (c.arg(2), c.arg(3));
    let limits = c.state.limits.hash_limits();
    let set = write_hash(
        c,
        c.arg(1),
        |h| !h.contains(field) && h.set(field, value, limits),
        |set| set.then_some(("hset", 1)),
    );
    reply_or_wrongtype(c, set, |s, set| s.integer(i64::from(set)));
}

/// `HGET key field`: the value, or null.
fn hget<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let field = c.arg(2);
    let value = read_hash(c, c.arg(1), |h| h.and_then(|h| h.get(field)).map(<[u8]>::to_vec));
    reply_or_wrongtype(c, value, |s, v| reply_value(s, v.as_deref()));
}

/// `HMGET key field [field ...]`: each value, null for missing fields.
fn hmget<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let fields: Vec<&[u8]> = (2..c.argc()).map(|i| c.arg(i)).collect();
    let values = read_hash(c, c.arg(1), |h| {
        fields.iter().map(|f| h.and_then(|h| h.get(f)).map(<[u8]>::to_vec)).collect::<Vec<_>>()
    });
    reply_or_wrongtype(c, values, |s, values| {
        s.array(values.len());
        for v in &values {
            reply_value(s, v.as_deref());
        }
    });
}

/// `HGETALL key` (fields and values, a map in RESP3), `HKEYS key` and
/// `HVALS key`, in the hash's order.
fn hgetall<T: ReplyTarget>(c: &mut Ctx<'_, T>, fields: bool, values: bool) {
    reply_from_hash(c, c.arg(1), |s, h| {
        let len = h.map_or(0, |h| h.len());
        if fields && values {
            s.map(len);
        } else {
            s.array(len);
        }
        for (f, v) in h.into_iter().flat_map(|h| h.iter()) {
            if fields {
                s.bulk(f);
            }
            if values {
                s.bulk(v);
            }
        }
    });
}

/// `HDEL key field [field ...]`: how many fields were removed.
fn hdel<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let fields: Vec<&[u8]> = (2..c.argc()).map(|i| c.arg(i)).collect();
    let removed = change_hash(
        c,
        c.arg(1),
        |h| fields.iter().filter(|f| h.remove(f)).count(),
        |n| (*n > 0).then_some(("hdel", *n as u64)),
    );
    reply_or_wrongtype(c, removed, |s, n| s.integer(count_reply(n.unwrap_or(0))));
}

/// `HEXISTS key field`: 1 or 0.
fn hexists<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let field = c.arg(2);
    let found = read_hash(c, c.arg(1), |h| h.is_some_and(|h| h.contains(field)));
    reply_or_wrongtype(c, found, |s, found| s.integer(i64::from(found)));
}

/// `HLEN key`: the number of fields, 0 for a missing key.
fn hlen<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let len = read_hash(c, c.arg(1), |h| h.map_or(0, |h| h.len()));
    reply_or_wrongtype(c, len, |s, n| s.integer(count_reply(n)));
}

/// `HSTRLEN key field`: the value's length, 0 when missing.
fn hstrlen<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let field = c.arg(2);
    let len = read_hash(c, c.arg(1), |h| h.and_then(|h| h.get(field)).map_or(0, <[u8]>::len));
    reply_or_wrongtype(c, len, |s, n| s.integer(count_reply(n)));
}

/// `HINCRBY key field increment`: the new value; a missing field counts as 0.
fn hincrby<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(incr) = parse_i64(c.arg(3)) else { return c.error(NOT_AN_INTEGER) };
    let field = c.arg(2);
    let limits = c.state.limits.hash_limits();
    let result = write_hash(
        c,
        c.arg(1),
        |h| -> Result<i64, &'static [u8]> {
            let old = match h.get(field) {
                None => 0,
                Some(v) => parse_i64(v).ok_or(&b"ERR hash value is not an integer"[..])?,
            };
            let new = old.checked_add(incr).ok_or(&b"ERR increment or decrement would overflow"[..])?;
            h.set(field, new.to_string().as_bytes(), limits);
            Ok(new)
        },
        |r| r.is_ok().then_some(("hincrby", 1)),
    );
    reply_result(c, result, |s, n| s.integer(n));
}

/// `HINCRBYFLOAT key field increment`: the new value as stored, computed in
/// 80-bit extended precision as Redis computes it.
fn hincrbyfloat<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let incr = match F80::parse(c.arg(3)) {
        None => return c.error(b"ERR value is not a valid float"),
        Some(v) if v.is_inf() => return c.error(b"ERR value is NaN or Infinity"),
        Some(v) => v,
    };
    let field = c.arg(2);
    let limits = c.state.limits.hash_limits();
    let result = write_hash(
        c,
        c.arg(1),
        |h| -> Result<Vec<u8>, &'static [u8]> {
            let old = match h.get(field) {
                None => F80::from_i64(0),
                Some(v) => F80::parse(v).ok_or(&b"ERR hash value is not a float"[..])?,
            };
            let sum = old.sum(incr).filter(|v| !v.is_inf());
            let text = sum.ok_or(&b"ERR increment would produce NaN or Infinity"[..])?.to_human();
            h.set(field, &text, limits);
            Ok(text)
        },
        |r| r.is_ok().then_some(("hincrbyfloat", 1)),
    );
    if let Ok(Ok(text)) = &result {
        // The sum redoes as its result, as Redis propagates it (the
        // change took its place under the lock; what redoes it can follow).
        c.propagate(&[b"HSET", c.arg(1), field, text]);
    }
    reply_result(c, result, |s, text| s.bulk(&text));
}

/// A source of random positions, seeded afresh for each command.
struct Picker(u64);

impl Picker {
    fn new() -> Picker {
        Picker(RandomState::new().hash_one(0u64) | 1)
    }

    /// A number below `n` (which must not be 0).
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n as u64) as usize
    }
}

/// HRANDFIELD's positions in a hash of `len` fields, produced as the reply
/// is written: a negative count may ask for far more picks than could be
/// held at once, and Redis streams them too.
enum Picks {
    /// Independent picks, `left` of them still to make.
    Repeating { rng: Picker, len: usize, left: usize },
    /// Distinct positions chosen up front.
    Distinct(std::vec::IntoIter<usize>),
}

impl Picks {
    /// `count` distinct positions in random order when `distinct` (all of
    /// them, in order, when `count` covers the hash), else `count`
    /// independent picks. `len` must not be 0.
    fn new(len: usize, count: usize, distinct: bool) -> Picks {
        let mut rng = Picker::new();
        if !distinct {
            return Picks::Repeating { rng, len, left: count };
        }
        let mut all: Vec<usize> = (0..len).collect();
        if count < len {
            for i in 0..count {
                let j = i + rng.below(len - i);
                all.swap(i, j);
            }
            all.truncate(count);
        }
        Picks::Distinct(all.into_iter())
    }

    /// How many positions are still to come.
    fn remaining(&self) -> usize {
        match self {
            Picks::Repeating { left, .. } => *left,
            Picks::Distinct(rest) => rest.len(),
        }
    }
}

impl Iterator for Picks {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            Picks::Repeating { rng, len, left } => {
                *left = left.checked_sub(1)?;
                Some(rng.below(*len))
            }
            Picks::Distinct(rest) => rest.next(),
        }
    }
}

/// HRANDFIELD's count: `Err` with Redis's message, checked in its order
/// (the count, then the options, then its size with WITHVALUES).
fn hrandfield_count<T: ReplyTarget>(c: &Ctx<'_, T>) -> Result<(i64, bool), &'static [u8]> {
    let count = match parse_i64(c.arg(2)) {
        None => return Err(NOT_AN_INTEGER),
        Some(i64::MIN) => {
            return Err(b"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
        }
        Some(n) => n,
    };
    let with_values = c.argc() == 4 && c.arg(3).eq_ignore_ascii_case(b"withvalues");
    if c.argc() > 4 || (c.argc() == 4 && !with_values) {
        return Err(SYNTAX_ERROR);
    }
    if with_values && count.unsigned_abs() > (i64::MAX / 2) as u64 {
        return Err(b"ERR value is out of range");
    }
    Ok((count, with_values))
}

/// `HRANDFIELD key [count [WITHVALUES]]`: one random field (or null); with
/// a count, up to `count` distinct fields, or with a negative count exactly
/// `-count` picks that may repeat; WITHVALUES adds each value (as a pair in
/// RESP3).
fn hrandfield<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() == 2 {
        let mut rng = Picker::new();
        let pick =
            |h: Option<HashRef<'_>>| h.and_then(|h| h.get_index(rng.below(h.len().max(1)))).map(|(f, _)| f.to_vec());
        let field = read_hash(c, c.arg(1), pick);
        return reply_or_wrongtype(c, field, |s, f| reply_value(s, f.as_deref()));
    }
    let (count, with_values) = match hrandfield_count(c) {
        Ok(parsed) => parsed,
        Err(msg) => return c.error(msg),
    };
    let elements = count.unsigned_abs() * if with_values { 2 } else { 1 };
    if count < 0 && access::refused_as_too_large::<_, HashValue>(c, c.arg(1), elements) {
        return;
    }
    let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
    let pairs = with_values && c.session.protocol == Protocol::Resp3;
    reply_from_hash(c, c.arg(1), |s, h| {
        let Some(h) = h.filter(|h| !h.is_empty()) else { return s.array(0) };
        let mut picks = Picks::new(h.len(), n, count >= 0);
        let items = picks.remaining();
        s.array(if with_values && !pairs { items.saturating_mul(2) } else { items });
        for (f, v) in picks.by_ref().filter_map(|i| h.get_index(i)) {
            if pairs {
                s.array(2);
            }
            s.bulk(f);
            if with_values {
                s.bulk(v);
            }
        }
    });
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]`: the next cursor and
/// the fields and values found.
///
/// As in Redis, the cursor is read before the key is looked up, and the
/// options only for an existing hash.
fn hscan<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(cursor) = parse_cursor(c.arg(2)) else { return c.error(b"ERR invalid cursor") };
    let mut shard = c.state.keyspace.lock_key(c.arg(1));
    let found = access::read_at::<HashValue>(shard.db(c.session.db), c.arg(1), now_ms());
    let scanned = match found {
        Err(WrongType) => Err(WRONGTYPE.to_vec()),
        Ok(None) => Ok((0, Vec::new())),
        Ok(Some(h)) => scan_options(c).map(|(pattern, count)| scan_hash(h, cursor, pattern, count)),
    };
    drop(shard);
    match scanned {
        Err(msg) => c.error(&msg),
        Ok((next, items)) => c.reply(|s| {
            s.array(2);
            s.bulk(next.to_string().as_bytes());
            s.array(items.len());
            for item in &items {
                s.bulk(item);
            }
        }),
    }
}

/// HSCAN's MATCH pattern (`None` for all) and COUNT, with Redis's errors.
fn scan_options<'a, T: ReplyTarget>(c: &Ctx<'a, T>) -> Result<(Option<&'a [u8]>, usize), Vec<u8>> {
    let (mut pattern, mut count) = (None, 10);
    let mut j = 3;
    while j < c.argc() {
        let (opt, more) = (c.arg(j), j + 1 < c.argc());
        if opt.eq_ignore_ascii_case(b"count") && more {
            count = match parse_i64(c.arg(j + 1)) {
                None => return Err(NOT_AN_INTEGER.to_vec()),
                Some(n) if n < 1 => return Err(SYNTAX_ERROR.to_vec()),
                Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            };
        } else if opt.eq_ignore_ascii_case(b"match") && more {
            pattern = Some(c.arg(j + 1)).filter(|p| *p != b"*");
        } else {
            return Err(SYNTAX_ERROR.to_vec());
        }
        j += 2;
    }
    Ok((pattern, count))
}

/// One HSCAN step over `h`: the next cursor, and fields and values flat.
fn scan_hash(h: HashRef<'_>, cursor: u64, pattern: Option<&[u8]>, count: usize) -> (u64, Vec<Vec<u8>>) {
    let mut items = Vec::new();
    let next = h.scan(cursor, count, |f, v| {
        if pattern.is_none_or(|p| glob::matches(p, f, false)) {
            items.push(f.to_vec());
            items.push(v.to_vec());
        }
    });
    (next, items)
}

#[cfg(test)]
mod tests {
    use super::Picks;

    #[test]
    fn distinct_picks_are_distinct_and_cover_small_hashes_in_order() {
        let picks: Vec<usize> = Picks::new(10, 4, true).collect();
        let mut sorted = picks.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 4);
        assert!(picks.iter().all(|&i| i < 10));
        assert_eq!(Picks::new(3, 5, true).collect::<Vec<_>>(), [0, 1, 2]);
        let repeating = Picks::new(3, 7, false);
        assert_eq!(repeating.remaining(), 7);
        assert!(repeating.into_iter().all(|i| i < 3));
    }

    #[test]
    fn huge_repeating_counts_are_not_materialised() {
        let mut picks = Picks::new(5, usize::MAX, false);
        assert_eq!(picks.remaining(), usize::MAX);
        assert!(picks.by_ref().take(1000).all(|i| i < 5));
        assert_eq!(picks.remaining(), usize::MAX - 1000);
    }
}
