//! `SORT` and `SORT_RO`: the elements of a list, set or sorted set, sorted
//! by their own value or by values read from other keys (`BY pattern`),
//! optionally replaced by other keys' values (`GET pattern`), and with
//! `SORT ... STORE` written to a list.
//!
//! The steps, limits and comparisons follow Redis 7.0 closely because
//! several of its quirks are visible to clients: which elements are loaded
//! when nothing is sorted, how `LIMIT` is clamped, that patterns and element
//! texts are read as C strings (up to their first NUL byte) in some places
//! and as whole byte strings in others, and that equal numeric scores fall
//! back to comparing the elements' bytes.
//!
//! Patterns name keys that are only known once the elements are read, so a
//! command that uses them locks every shard; one that does not locks only
//! the source's and the destination's shards.

use std::cmp::Ordering;

use kvik_protocol::number::{parse_i64, write_i64};

use super::access::{self, count_reply};
use super::{Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::keyspace::{now_ms, Db, Keyspace, MultiLock};
use crate::types::double::strtod;
use crate::types::list::ListValue;
use crate::types::string::StrRef;
use crate::types::ValueRef;

handlers! {
    SORT(c) => sort(c, false),
    SORT_RO(c) => sort(c, true),
}

/// Redis's reply when a value sorted by number does not read as one.
const NOT_A_DOUBLE: &[u8] = b"ERR One or more scores can't be converted into double";

/// The options of one `SORT` call.
struct Options<'a> {
    desc: bool,
    alpha: bool,
    /// `LIMIT`'s offset and count as given (0 and -1 without `LIMIT`).
    offset: i64,
    count: i64,
    /// The `BY` pattern, when it names keys to sort by.
    by: Option<&'a [u8]>,
    /// `BY` was given a pattern without `*`: the elements keep their order.
    dont_sort: bool,
    gets: Vec<&'a [u8]>,
    store: Option<&'a [u8]>,
}

/// Parse the options after the key, left to right as Redis does, so the
/// first bad one decides the error.
fn parse_options<'a, T: ReplyTarget>(c: &Ctx<'a, T>, readonly: bool) -> Result<Options<'a>, &'static [u8]> {
    let mut o = Options {
        desc: false,
        alpha: false,
        offset: 0,
        count: -1,
        by: None,
        dont_sort: false,
        gets: Vec::new(),
        store: None,
    };
    let mut j = 2;
    while j < c.argc() {
        let word = c.arg(j);
        let left = c.argc() - j - 1;
        if word.eq_ignore_ascii_case(b"asc") {
            o.desc = false;
        } else if word.eq_ignore_ascii_case(b"desc") {
            o.desc = true;
        } else if word.eq_ignore_ascii_case(b"alpha") {
            o.alpha = true;
        } else if word.eq_ignore_ascii_case(b"limit") && left >= 2 {
            o.offset = parse_i64(c.arg(j + 1)).ok_or(NOT_AN_INTEGER)?;
            o.count = parse_i64(c.arg(j + 2)).ok_or(NOT_AN_INTEGER)?;
            j += 2;
        } else if !readonly && word.eq_ignore_ascii_case(b"store") && left >= 1 {
            o.store = Some(c.arg(j + 1));
            j += 1;
        } else if word.eq_ignore_ascii_case(b"by") && left >= 1 {
            let pattern = c.arg(j + 1);
            o.dont_sort = !c_str(pattern).contains(&b'*');
            o.by = Some(pattern);
            j += 1;
        } else if word.eq_ignore_ascii_case(b"get") && left >= 1 {
            o.gets.push(c.arg(j + 1));
            j += 1;
        } else {
            return Err(SYNTAX_ERROR);
        }
        j += 1;
    }
    Ok(o)
}

/// The text a C string function sees: up to the first NUL byte.
fn c_str(bytes: &[u8]) -> &[u8] {
    bytes.iter().position(|&b| b == 0).map_or(bytes, |end| &bytes[..end])
}

/// Whether running with `o` may read keys named by patterns.
fn uses_patterns(o: &Options<'_>) -> bool {
    (o.by.is_some() && !o.dont_sort) || o.gets.iter().any(|g| c_str(g) != b"#")
}

/// The kinds of value `SORT` reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Set,
    ZSet,
}

/// One element being sorted, with what it is compared by.
struct Item {
    element: Vec<u8>,
    score: f64,
    /// The `BY` value for an `ALPHA` sort by pattern (`None` when missing).
    by_text: Option<Vec<u8>>,
}

impl Item {
    fn new(element: Vec<u8>) -> Item {
        Item { element, score: 0.0, by_text: None }
    }
}

/// The database `db` of the locked shard holding `key`.
fn db_for<'l>(lock: &'l mut MultiLock<'_, '_>, ks: &Keyspace, db: usize, key: &[u8]) -> &'l mut Db {
    lock.shard_for(ks, key).db(db)
}

/// The elements of the value at `key` that the sort starts from, with the
/// `None` for another type. A missing key reads as an empty
/// list. With `range`, only ranks `start..=end` of a list or sorted set are
/// taken (from the tail when `desc`), as Redis does when nothing is sorted.
fn load(db: &mut Db, key: &[u8], now: i64, range: Option<(usize, usize, bool)>) -> Option<Vec<Item>> {
    let value = match db.get(key, now) {
        None => return Some(Vec::new()),
        Some(entry) => entry.value(),
    };
    let items = match value {
        ValueRef::List(l) => match range {
            Some((start, end, desc)) => {
                let take = (end + 1).saturating_sub(start);
                if desc {
                    l.iter().rev().skip(start).take(take).map(|e| Item::new(e.to_vec())).collect()
                } else {
                    l.iter().skip(start).take(take).map(|e| Item::new(e.to_vec())).collect()
                }
            }
            None => l.iter().map(|e| Item::new(e.to_vec())).collect(),
        },
        ValueRef::ZSet(z) => match range {
            Some((start, end, desc)) => {
                let take = (end + 1).saturating_sub(start);
                if desc {
                    z.iter().rev().skip(start).take(take).map(|(m, _)| Item::new(m.to_vec())).collect()
                } else {
                    z.iter_from(start).take(take).map(|(m, _)| Item::new(m.to_vec())).collect()
                }
            }
            None => z.iter().map(|(m, _)| Item::new(m.to_vec())).collect(),
        },
        ValueRef::Set(s) => s.iter().map(|m| Item::new(m.to_compact().to_vec())).collect(),
        _ => return None,
    };
    Some(items)
}

/// The kind and number of elements of the value at `key` (an empty list
/// when missing), `None` for a type `SORT` does not read. Not counted as a
/// lookup: [`load`] is.
fn shape(db: &mut Db, key: &[u8], now: i64) -> Option<(Kind, usize)> {
    match db.inspect(key, now).map(|e| e.value()) {
        None => Some((Kind::List, 0)),
        Some(ValueRef::List(l)) => Some((Kind::List, l.len())),
        Some(ValueRef::Set(s)) => Some((Kind::Set, s.len())),
        Some(ValueRef::ZSet(z)) => Some((Kind::ZSet, z.len())),
        Some(_) => None,
    }
}

/// The value a `BY` or `GET` pattern names for `element`: the element
/// itself for `#`, else the string at the pattern's key with the first `*`
/// replaced by the element, or with `key->field` that hash field. `None`
/// when the key is missing or of another type, or the pattern has no `*`.
fn lookup(
    lock: &mut MultiLock<'_, '_>,
    ks: &Keyspace,
    db: usize,
    now: i64,
    pattern: &[u8],
    element: &[u8],
) -> Option<Vec<u8>> {
    let head = c_str(pattern);
    if head == b"#" {
        return Some(element.to_vec());
    }
    let star = head.iter().position(|&b| b == b'*')?;
    // The field starts after the first `->` following the `*`, when
    // something follows the arrow.
    let arrow =
        head[star + 1..].windows(2).position(|w| w == b"->").map(|at| star + 1 + at).filter(|&at| at + 2 < head.len());
    let (postfix, field) = match arrow {
        Some(at) => (&pattern[star + 1..at], Some(&pattern[at + 2..])),
        None => (&pattern[star + 1..], None),
    };
    let mut key = Vec::with_capacity(pattern.len() + element.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(postfix);
    let value = db_for(lock, ks, db, &key).get(&key, now)?.value();
    match (value, field) {
        (ValueRef::Hash(h), Some(field)) => h.get(field).map(<[u8]>::to_vec),
        (ValueRef::Str(s), None) => Some(string_bytes(s)),
        _ => None,
    }
}

/// A string value's text.
fn string_bytes(s: StrRef<'_>) -> Vec<u8> {
    match s {
        StrRef::Int(n) => {
            let mut text = Vec::with_capacity(20);
            write_i64(&mut text, n);
            text
        }
        StrRef::Bytes(b) | StrRef::Raw(b) => b.to_vec(),
    }
}

/// A value sorted by number, read as Redis does with `strtod` on its C
/// string: the whole text up to the first NUL must be the number (so an
/// empty text is 0 and leading space is allowed), not NaN, and without a
/// range error.
fn score_of(text: &[u8]) -> Option<f64> {
    let text = c_str(text);
    if text.is_empty() {
        return Some(0.0);
    }
    let p = strtod(text)?;
    (!p.range_error && !p.value.is_nan()).then_some(p.value)
}

/// How two items compare, before `DESC` reverses it.
fn compare(a: &Item, b: &Item, alpha: bool, by_pattern: bool, store: bool) -> Ordering {
    // `strcoll` in the C locale, as Redis uses when replying; with STORE it
    // compares whole byte strings.
    let text_order = |x: &[u8], y: &[u8]| if store { x.cmp(y) } else { c_str(x).cmp(c_str(y)) };
    if !alpha {
        return match a.score.partial_cmp(&b.score) {
            Some(Ordering::Equal) | None => a.element.cmp(&b.element),
            Some(order) => order,
        };
    }
    if by_pattern {
        match (&a.by_text, &b.by_text) {
            (Some(x), Some(y)) => text_order(x, y),
            (x, y) => x.is_some().cmp(&y.is_some()),
        }
    } else {
        text_order(&a.element, &b.element)
    }
}

/// The first and last positions of the output, Redis's clamping of
/// `LIMIT offset count` over `len` elements; empty when `end < start`.
fn limits(len: usize, offset: i64, count: i64) -> (i64, i64) {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let mut start = offset.max(0);
    let mut end = if count < 0 { len - 1 } else { start.saturating_add(count).saturating_sub(1) };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    (start, end)
}

/// What a `SORT` produced, to reply with after the locks are released.
enum Outcome {
    WrongType,
    NotADouble,
    /// Elements (no `GET`), or the `GET` values, in output order.
    Values(Vec<Option<Vec<u8>>>),
    /// How many were stored, and what was done to the destination.
    Stored(usize, access::Stored),
}

/// `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
/// [ALPHA] [STORE destination]`, and `SORT_RO` without `STORE`.
fn sort<T: ReplyTarget>(c: &mut Ctx<'_, T>, readonly: bool) {
    let mut o = match parse_options(c, readonly) {
        Ok(o) => o,
        Err(msg) => return c.error(msg),
    };
    let key = c.arg(1);
    let (db, now) = (c.session.db, now_ms());
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = if uses_patterns(&o) { ks.lock_all() } else { ks.lock_keys(db, [key].into_iter().chain(o.store)) };
    let outcome = run(&mut lock, ks, db, now, key, &mut o);
    if let (Outcome::Stored(n, stored), Some(dest)) = (&outcome, o.store) {
        access::notify_store_counted(c, *stored, EventClass::List, "sortstore", dest, *n as u64);
    }
    drop(lock);
    match outcome {
        Outcome::WrongType => c.error(WRONGTYPE),
        Outcome::NotADouble => c.error(NOT_A_DOUBLE),
        Outcome::Stored(n, _) => c.reply(|s| s.integer(count_reply(n))),
        Outcome::Values(values) => c.reply(|s| {
            s.array(values.len());
            for v in &values {
                match v {
                    Some(v) => s.bulk(v),
                    None => s.null(),
                }
            }
        }),
    }
}

/// The work of [`sort`] under its locks.
fn run(lock: &mut MultiLock<'_, '_>, ks: &Keyspace, db: usize, now: i64, key: &[u8], o: &mut Options<'_>) -> Outcome {
    let Some((kind, len)) = shape(db_for(lock, ks, db, key), key, now) else {
        // Counted as a read, as Redis's lookup of the key is.
        let _ = db_for(lock, ks, db, key).get(key, now);
        return Outcome::WrongType;
    };
    // An unsorted set would come out in hash order, which a stored list
    // must not depend on: it is sorted by its elements' bytes instead.
    if o.dont_sort && kind == Kind::Set && o.store.is_some() {
        o.dont_sort = false;
        o.alpha = true;
        o.by = None;
    }
    let (mut start, mut end) = limits(len, o.offset, o.count);
    // Lists and sorted sets left unsorted load only the output range.
    let direct = o.dont_sort && kind != Kind::Set;
    let range = direct.then(|| {
        let from = usize::try_from(start).unwrap_or(0);
        let to = usize::try_from(end).unwrap_or(0);
        (from, to, o.desc)
    });
    let range = range.filter(|_| end >= start);
    let Some(mut items) = load(db_for(lock, ks, db, key), key, now, range) else {
        return Outcome::WrongType;
    };
    if direct {
        end -= start;
        start = 0;
    }
    if !o.dont_sort {
        let mut bad = false;
        for item in &mut items {
            let by_value = match o.by {
                Some(pattern) => match lookup(lock, ks, db, now, pattern, &item.element) {
                    Some(v) => v,
                    None => continue,
                },
                None => item.element.clone(),
            };
            if o.alpha {
                if o.by.is_some() {
                    item.by_text = Some(by_value);
                }
            } else {
                match score_of(&by_value) {
                    Some(score) => item.score = score,
                    None => bad = true,
                }
            }
        }
        if bad {
            return Outcome::NotADouble;
        }
        // A stable sort: items that compare equal (only possible for equal or
        // missing `ALPHA` `BY` values) keep the order they were loaded in.
        let (alpha, by_pattern, store, desc) = (o.alpha, o.by.is_some(), o.store.is_some(), o.desc);
        items.sort_by(|a, b| {
            let order = compare(a, b, alpha, by_pattern, store);
            if desc {
                order.reverse()
            } else {
                order
            }
        });
    }
    let chosen: &[Item] = match (usize::try_from(start), usize::try_from(end)) {
        (Ok(s), Ok(e)) if e >= s => items.get(s..=e).unwrap_or(&[]),
        _ => &[],
    };
    let mut values = Vec::with_capacity(chosen.len() * o.gets.len().max(1));
    for item in chosen {
        if o.gets.is_empty() {
            values.push(Some(item.element.clone()));
        }
        for pattern in &o.gets {
            values.push(lookup(lock, ks, db, now, pattern, &item.element));
        }
    }
    let Some(dest) = o.store else { return Outcome::Values(values) };
    let stored = values.len();
    let mut list = ListValue::new();
    for v in &values {
        list.push(false, v.as_deref().unwrap_or(b""));
    }
    let done = access::store(db_for(lock, ks, db, dest), dest, list, stored == 0);
    Outcome::Stored(stored, done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_clamp_like_redis() {
        assert_eq!(limits(5, 0, -1), (0, 4));
        assert_eq!(limits(5, -3, 2), (0, 1));
        assert_eq!(limits(5, 3, 10), (3, 4));
        assert_eq!(limits(5, 5, 1), (4, 3));
        assert_eq!(limits(5, 1, 0), (1, 0));
        assert_eq!(limits(0, 0, -1), (-1, -2));
        assert_eq!(limits(5, 2, i64::MAX), (2, 4));
    }

    #[test]
    fn scores_read_as_c_strings() {
        assert_eq!(score_of(b""), Some(0.0));
        assert_eq!(score_of(b" 1.5"), Some(1.5));
        assert_eq!(score_of(b"2\0junk"), Some(2.0));
        assert_eq!(score_of(b"1x"), None);
        assert_eq!(score_of(b"nan"), None);
        assert_eq!(score_of(b"1e400"), None);
        assert_eq!(score_of(b"-inf"), Some(f64::NEG_INFINITY));
    }
}
