//! List commands: pushes and pops at both ends, indexing and ranges, LSET,
//! LREM, LTRIM, LINSERT, LPOS, and the moves between lists (RPOPLPUSH,
//! LMOVE, LMPOP).
//!
//! Every command reaches stored lists through the accessors at the top, so
//! the way entries are stored can change without touching the commands. A
//! list left empty by a command is deleted with its key, as in Redis.

use crate::inline_list::InlineList;
use kvik_protocol::number::parse_i64;
use kvik_protocol::ReplySink;

use super::access::{self, count_reply, reply_or_wrongtype, WrongType};
use super::blocked::{self as blocking, Empty, Wait};
use super::{Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::keyspace::now_ms;
use crate::types::compact::CompactBytes;
use crate::types::list::{rank_range, ListRef, ListValue};

handlers! {
    LPUSH(c) => push(c, Head, false),
    RPUSH(c) => push(c, Tail, false),
    LPUSHX(c) => push(c, Head, true),
    RPUSHX(c) => push(c, Tail, true),
    LPOP(c) => pop(c, Head),
    RPOP(c) => pop(c, Tail),
    LLEN(c) => llen(c),
    LRANGE(c) => lrange(c),
    LINDEX(c) => lindex(c),
    LSET(c) => lset(c),
    LREM(c) => lrem(c),
    LTRIM(c) => ltrim(c),
    LINSERT(c) => linsert(c),
    LPOS(c) => lpos(c),
    RPOPLPUSH(c) => move_element(c, Tail, Head),
    LMOVE(c) => match (end_named(c.arg(3)), end_named(c.arg(4))) {
        (Some(from), Some(to)) => move_element(c, from, to),
        _ => c.error(SYNTAX_ERROR),
    },
    LMPOP(c) => lmpop(c),
    BLPOP(c) => blocking_pop(c, Head),
    BRPOP(c) => blocking_pop(c, Tail),
    BRPOPLPUSH(c) => blocking_move(c, Tail, Head, 3),
    BLMOVE(c) => match (end_named(c.arg(3)), end_named(c.arg(4))) {
        (Some(from), Some(to)) => blocking_move(c, from, to, 5),
        _ => c.error(SYNTAX_ERROR),
    },
    BLMPOP(c) => blmpop(c),
}

use End::{Head, Tail};

/// One end of a list.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// The left end, index 0.
    Head,
    /// The right end, index -1.
    Tail,
}

impl End {
    fn is_head(self) -> bool {
        self == Head
    }
}

/// `LEFT` or `RIGHT`, in any case.
fn end_named(word: &[u8]) -> Option<End> {
    if word.eq_ignore_ascii_case(b"left") {
        Some(Head)
    } else if word.eq_ignore_ascii_case(b"right") {
        Some(Tail)
    } else {
        None
    }
}

/// Run `read` on the list at `key` (`None` when missing), counted as a read.
fn read_list<T: ReplyTarget, R>(
    c: &Ctx<'_, T>,
    key: &[u8],
    read: impl FnOnce(Option<ListRef<'_>>) -> R,
) -> Result<R, WrongType> {
    access::read_with::<_, ListValue, _>(c, key, read)
}

/// Reply straight from the list at `key` (`None` when missing).
fn reply_from_list<T: ReplyTarget>(
    c: &mut Ctx<'_, T>,
    key: &[u8],
    write: impl FnOnce(&mut dyn ReplySink, Option<ListRef<'_>>),
) {
    access::reply_from::<_, ListValue>(c, key, write);
}

/// Run `write` on the list at `key` (`None` when missing), deleting the key
/// if the list is left empty; `event` names the change's event from the
/// result (`None`: nothing changed).
fn write_list<T: ReplyTarget, R>(
    c: &mut Ctx<'_, T>,
    key: &[u8],
    write: impl FnOnce(Option<&mut ListValue>) -> R,
    event: impl FnOnce(&R) -> Option<(&'static str, u64)>,
) -> Result<R, WrongType> {
    access::change_with(c, key, EventClass::List, |l: ListRef<'_>| l.is_empty(), write, event)
}

/// The word that names `end` in LMOVE.
fn end_word(end: End) -> &'static [u8] {
    if end.is_head() {
        b"LEFT"
    } else {
        b"RIGHT"
    }
}

/// The event name of a pop from `end`.
fn pop_event(end: End) -> &'static str {
    if end.is_head() {
        "lpop"
    } else {
        "rpop"
    }
}

/// The event name of a push to `end`.
fn push_event(end: End) -> &'static str {
    if end.is_head() {
        "lpush"
    } else {
        "rpush"
    }
}

/// An index or count argument: Redis's "not an integer" error otherwise.
fn int_arg<T: ReplyTarget>(c: &Ctx<'_, T>, i: usize) -> Result<i64, &'static [u8]> {
    parse_i64(c.arg(i)).ok_or(NOT_AN_INTEGER)
}

/// A count that must not be negative, with Redis's one message for a bad
/// count, whether not a number or negative.
fn non_negative(text: &[u8], msg: &'static [u8]) -> Result<usize, &'static [u8]> {
    parse_i64(text).and_then(|n| usize::try_from(n).ok()).ok_or(msg)
}

/// `LPOP key count`'s count.
fn positive_arg<T: ReplyTarget>(c: &Ctx<'_, T>, i: usize) -> Result<usize, &'static [u8]> {
    non_negative(c.arg(i), b"ERR value is out of range, must be positive")
}

/// Reply with elements as an array.
fn reply_elements(s: &mut dyn ReplySink, items: &[CompactBytes]) {
    s.array(items.len());
    for item in items {
        s.bulk(item);
    }
}

/// Remove up to `count` elements from `end` of `list`, in the order popped:
/// the elements themselves, not copies (a long one moves its allocation).
fn pop_many(list: &mut ListValue, end: End, count: usize) -> Vec<CompactBytes> {
    (0..count.min(list.len())).filter_map(|_| list.pop(end.is_head())).collect()
}

/// `LPUSH` / `RPUSH key element [element ...]`, and with `only_existing`
/// `LPUSHX` / `RPUSHX`: the length after the pushes (0 for a missing key
/// with the X forms).
fn push<T: ReplyTarget>(c: &mut Ctx<'_, T>, end: End, only_existing: bool) {
    let key = c.arg(1);
    let elements: InlineList<&[u8], 8> = (2..c.argc()).map(|i| c.arg(i)).collect();
    let now = now_ms();
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(c.session.db);
    let len = crate::keyspace::typed::push_list(d, key, now, end.is_head(), &elements, !only_existing);
    if len.as_ref().is_ok_and(|n| *n > 0) {
        c.notify_counted(EventClass::List, push_event(end), key, elements.len() as u64);
    }
    drop(shard);
    reply_or_wrongtype(c, len, |s, n| s.integer(count_reply(n)));
}

/// `LPOP` / `RPOP key [count]`: one element (or null) without a count; with
/// one, an array of up to `count` elements, a null array for a missing key.
fn pop<T: ReplyTarget>(c: &mut Ctx<'_, T>, end: End) {
    if c.argc() > 3 {
        let name = if end.is_head() { "lpop" } else { "rpop" };
        return c.error(format!("ERR wrong number of arguments for '{name}' command").as_bytes());
    }
    let count = match (c.argc() == 3).then(|| positive_arg(c, 2)).transpose() {
        Ok(n) => n,
        Err(msg) => return c.error(msg),
    };
    let popped = write_list(
        c,
        c.arg(1),
        |l| l.map(|l| pop_many(l, end, count.unwrap_or(1))),
        |items| items.as_ref().map(Vec::len).filter(|n| *n > 0).map(|n| (pop_event(end), n as u64)),
    );
    reply_or_wrongtype(c, popped, |s, items| match (items, count) {
        (None, Some(_)) => s.null_array(),
        (None, None) => s.null(),
        (Some(items), Some(_)) => reply_elements(s, &items),
        (Some(items), None) => match items.first() {
            Some(item) => s.bulk(item),
            None => s.null(),
        },
    });
}

/// `LLEN key`: 0 for a missing key.
fn llen<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let len = read_list(c, c.arg(1), |l| l.map_or(0, |l| l.len()));
    reply_or_wrongtype(c, len, |s, n| s.integer(count_reply(n)));
}

/// `LRANGE key start stop`: the elements in the inclusive range, clamped.
fn lrange<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (start, stop) = match (int_arg(c, 2), int_arg(c, 3)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(msg), _) | (_, Err(msg)) => return c.error(msg),
    };
    reply_from_list(c, c.arg(1), |s, l| match l.and_then(|l| Some((l, rank_range(l.len(), start, stop)?))) {
        None => s.array(0),
        Some((l, (a, b))) => {
            s.array(b - a + 1);
            l.range(a, b).for_each(|item| s.bulk(item));
        }
    });
}

/// `LINDEX key index`: the element, or null when out of range or missing.
///
/// The key is looked at before the index is read, so a missing key answers
/// null whatever the index.
fn lindex<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let index = parse_i64(c.arg(2));
    let found = read_list(c, c.arg(1), |l| l.map(|l| index.map(|i| l.get(i).map(<[u8]>::to_vec))));
    match found {
        Err(WrongType) => c.error(WRONGTYPE),
        Ok(Some(None)) => c.error(NOT_AN_INTEGER),
        Ok(Some(Some(Some(item)))) => c.reply(|s| s.bulk(&item)),
        Ok(None | Some(Some(None))) => c.reply(|s| s.null()),
    }
}

/// `LSET key index element`: errors for a missing key, then a bad index,
/// then one out of range.
fn lset<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (index, element) = (parse_i64(c.arg(2)), c.arg(3));
    let outcome = write_list(
        c,
        c.arg(1),
        |l| -> Result<(), &'static [u8]> {
            let l = l.ok_or(&b"ERR no such key"[..])?;
            let i = index.ok_or(NOT_AN_INTEGER)?;
            l.set(i, element).then_some(()).ok_or(b"ERR index out of range")
        },
        |r| r.is_ok().then_some(("lset", 1)),
    );
    match outcome {
        Err(WrongType) => c.error(WRONGTYPE),
        Ok(Err(msg)) => c.error(msg),
        Ok(Ok(())) => c.ok(),
    }
}

/// `LREM key count element`: how many were removed (see
/// [`ListValue::remove_matching`] for the sign of `count`).
fn lrem<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let count = match int_arg(c, 2) {
        Ok(n) => n,
        Err(msg) => return c.error(msg),
    };
    let element = c.arg(3);
    let removed = write_list(
        c,
        c.arg(1),
        |l| l.map_or(0, |l| l.remove_matching(element, count)),
        |n| (*n > 0).then_some(("lrem", *n as u64)),
    );
    reply_or_wrongtype(c, removed, |s, n| s.integer(count_reply(n)));
}

/// `LTRIM key start stop`: keep only the range; OK even for a missing key.
fn ltrim<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (start, stop) = match (int_arg(c, 2), int_arg(c, 3)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(msg), _) | (_, Err(msg)) => return c.error(msg),
    };
    let done = write_list(
        c,
        c.arg(1),
        |l| {
            l.map(|l| {
                let before = l.len();
                l.keep(rank_range(before, start, stop));
                before - l.len()
            })
        },
        // Announced even when it kept everything, as Redis does; counted by
        // the elements it dropped.
        |trimmed| trimmed.map(|n| ("ltrim", n as u64)),
    );
    reply_or_wrongtype(c, done, |s, _| s.simple(b"OK"));
}

/// `LINSERT key BEFORE|AFTER pivot element`: the new length, -1 when the
/// pivot is not found, 0 for a missing key.
fn linsert<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let where_ = c.arg(2);
    let before = if where_.eq_ignore_ascii_case(b"before") {
        true
    } else if where_.eq_ignore_ascii_case(b"after") {
        false
    } else {
        return c.error(SYNTAX_ERROR);
    };
    let (pivot, element) = (c.arg(3), c.arg(4));
    let len = write_list(
        c,
        c.arg(1),
        |l| match l {
            None => 0,
            Some(l) => {
                if l.insert_at_pivot(pivot, element, before) {
                    count_reply(l.len())
                } else {
                    -1
                }
            }
        },
        |n| (*n > 0).then_some(("linsert", 1)),
    );
    reply_or_wrongtype(c, len, |s, n| s.integer(n));
}

/// LPOS's options: which match to start from, how many to return (`None`
/// without COUNT), how many elements to look at (0: all).
struct LposOptions {
    rank: i64,
    count: Option<usize>,
    maxlen: usize,
}

const RANK_ZERO: &[u8] = b"ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list";

/// Parse LPOS's options with Redis's checks and messages.
fn lpos_options<T: ReplyTarget>(c: &Ctx<'_, T>) -> Result<LposOptions, &'static [u8]> {
    let mut o = LposOptions { rank: 1, count: None, maxlen: 0 };
    let mut j = 3;
    while j < c.argc() {
        let (opt, more) = (c.arg(j), j + 1 < c.argc());
        let value = c.arg(j + 1);
        if opt.eq_ignore_ascii_case(b"rank") && more {
            o.rank = match parse_i64(value).ok_or(NOT_AN_INTEGER)? {
                0 => return Err(RANK_ZERO),
                // Redis cannot negate this rank, and it ends up acting as -1.
                i64::MIN => -1,
                r => r,
            };
        } else if opt.eq_ignore_ascii_case(b"count") && more {
            o.count = Some(non_negative(value, b"ERR COUNT can't be negative")?);
        } else if opt.eq_ignore_ascii_case(b"maxlen") && more {
            o.maxlen = non_negative(value, b"ERR MAXLEN can't be negative")?;
        } else {
            return Err(SYNTAX_ERROR);
        }
        j += 2;
    }
    Ok(o)
}

/// `LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]`: the
/// position of a match (or null); with COUNT an array of positions.
fn lpos<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let o = match lpos_options(c) {
        Ok(o) => o,
        Err(msg) => return c.error(msg),
    };
    let element = c.arg(2);
    let found = read_list(c, c.arg(1), |l| {
        l.map_or_else(Vec::new, |l| l.positions(element, o.rank, o.count.unwrap_or(1), o.maxlen))
    });
    reply_or_wrongtype(c, found, |s, found| match (o.count, found.first()) {
        (Some(_), _) => {
            s.array(found.len());
            for &i in &found {
                s.integer(count_reply(i));
            }
        }
        (None, Some(&i)) => s.integer(count_reply(i)),
        (None, None) => s.null(),
    });
}

/// `RPOPLPUSH source destination` and `LMOVE source destination from to`:
/// move one element between lists (or round one list), atomically; the
/// element, or null when the source is missing.
///
/// Both keys' shards are locked together. As in Redis, a missing source
/// answers null before the destination's type is looked at.
fn move_element<T: ReplyTarget>(c: &mut Ctx<'_, T>, from: End, to: End) {
    let (src, dst) = (c.arg(1), c.arg(2));
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(c.session.db, [src, dst]);
    let moved = move_locked(c, &mut lock, src, dst, from, to);
    drop(lock);
    reply_moved(c, moved);
}

/// LMOVE's work with both keys locked: the element moved, if the source
/// had one, announced as Redis announces it.
fn move_locked<T: ReplyTarget>(
    c: &mut Ctx<'_, T>,
    lock: &mut crate::keyspace::MultiLock<'_, '_>,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> Result<Option<Vec<u8>>, WrongType> {
    let (db, now, ks) = (c.session.db, now_ms(), &c.state.keyspace);
    let moved = (|| -> Result<Option<(Vec<u8>, bool)>, WrongType> {
        if access::read_for_write::<ListValue>(lock.shard_for(ks, src).db(db), src, now)?.is_none() {
            return Ok(None);
        }
        access::read_for_write::<ListValue>(lock.shard_for(ks, dst).db(db), dst, now)?;
        let d = lock.shard_for(ks, src).db(db);
        let item = access::write::<ListValue>(d, src, now)?.and_then(|l| l.pop(from.is_head())).map(|b| b.to_vec());
        let Some(item) = item else { return Ok(None) };
        access::write_or_create(lock.shard_for(ks, dst).db(db), dst, now, ListValue::new)?.push(to.is_head(), &item);
        let emptied = access::remove_if_empty::<ListValue>(lock.shard_for(ks, src).db(db), src, now, |l| l.is_empty());
        Ok(Some((item, emptied)))
    })();
    if let Ok(Some((_, emptied))) = &moved {
        // Redis announces the push, then the pop, then the emptied source,
        // and counts the move as one change.
        c.notify(EventClass::List, push_event(to), dst);
        notify_popped(c, src, from, 0, *emptied);
        // A blocking move redoes as the move that served it.
        c.propagate(&[b"LMOVE", src, dst, end_word(from), end_word(to)]);
    }
    moved.map(|m| m.map(|(item, _)| item))
}

/// Reply with the element LMOVE moved, or null.
fn reply_moved<T: ReplyTarget>(c: &mut Ctx<'_, T>, moved: Result<Option<Vec<u8>>, WrongType>) {
    reply_or_wrongtype(c, moved, |s, item| match item {
        Some(item) => s.bulk(&item),
        None => s.null(),
    });
}

/// Announce a pop of `changes` elements from `key`, and its deletion when
/// the pop emptied it.
fn notify_popped<T: ReplyTarget>(c: &mut Ctx<'_, T>, key: &[u8], end: End, changes: u64, emptied: bool) {
    c.notify_counted(EventClass::List, pop_event(end), key, changes);
    if emptied {
        c.notify_emptied(key);
    }
}

/// LMPOP's arguments.
struct LmpopArgs<'a> {
    keys: Vec<&'a [u8]>,
    end: End,
    count: usize,
}

/// Elements popped from a list, with its key.
type Popped<'k> = Option<(&'k [u8], Vec<CompactBytes>)>;

/// Parse LMPOP's arguments with Redis's checks, in its order; `at` is
/// where numkeys is (1, or 2 for BLMPOP).
fn lmpop_args<'a, T: ReplyTarget>(c: &Ctx<'a, T>, at: usize) -> Result<LmpopArgs<'a>, &'static [u8]> {
    const NUMKEYS: &[u8] = b"ERR numkeys should be greater than 0";
    let numkeys = parse_i64(c.arg(at)).filter(|n| *n > 0).ok_or(NUMKEYS)?;
    let numkeys = usize::try_from(numkeys).map_err(|_| NUMKEYS)?;
    let where_at = numkeys.checked_add(at + 1).filter(|&w| w < c.argc()).ok_or(SYNTAX_ERROR)?;
    let end = end_named(c.arg(where_at)).ok_or(SYNTAX_ERROR)?;
    let mut count = None;
    let mut j = where_at + 1;
    while j < c.argc() {
        if count.is_none() && c.arg(j).eq_ignore_ascii_case(b"count") && j + 1 < c.argc() {
            let n = parse_i64(c.arg(j + 1)).filter(|n| *n > 0).ok_or(&b"ERR count should be greater than 0"[..])?;
            count = Some(usize::try_from(n).unwrap_or(usize::MAX));
            j += 2;
        } else {
            return Err(SYNTAX_ERROR);
        }
    }
    Ok(LmpopArgs { keys: (at + 1..where_at).map(|i| c.arg(i)).collect(), end, count: count.unwrap_or(1) })
}

/// `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]`: pop from the
/// first non-empty list; its key and the elements, or a null array.
fn lmpop<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let LmpopArgs { keys, end, count } = match lmpop_args(c, 1) {
        Ok(a) => a,
        Err(msg) => return c.error(msg),
    };
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(c.session.db, keys.iter().copied());
    let popped = pop_first(c, &mut lock, &keys, end, count);
    drop(lock);
    reply_or_wrongtype(c, popped, |s, popped| match popped {
        Some((key, items)) => {
            s.array(2);
            s.bulk(key);
            reply_elements(s, &items);
        }
        None => s.null_array(),
    });
}

/// Pop up to `count` elements from `end` of the first list among `keys`:
/// its key and the elements. A key of another type is an error, except in
/// serve mode, where it only means the waiter cannot be served from it.
fn pop_first<'k, T: ReplyTarget>(
    c: &mut Ctx<'_, T>,
    lock: &mut crate::keyspace::MultiLock<'_, '_>,
    keys: &[&'k [u8]],
    end: End,
    count: usize,
) -> Result<Popped<'k>, WrongType> {
    let (db, now, ks) = (c.session.db, now_ms(), &c.state.keyspace);
    for key in keys {
        let d = lock.shard_for(ks, key).db(db);
        match access::write::<ListValue>(d, key, now) {
            Ok(Some(l)) => {
                let items = pop_many(l, end, count);
                let emptied = access::remove_if_empty::<ListValue>(d, key, now, |l| l.is_empty());
                notify_popped(c, key, end, items.len() as u64, emptied);
                // A blocking or multi-key pop redoes as the pop that served it.
                let name: &[u8] = if end.is_head() { b"LPOP" } else { b"RPOP" };
                c.propagate(&[name, key, items.len().to_string().as_bytes()]);
                return Ok(Some((key, items)));
            }
            Ok(None) => {}
            Err(WrongType) if c.serving().is_some() => {}
            Err(WrongType) => return Err(WrongType),
        }
    }
    Ok(None)
}

/// `BLPOP` / `BRPOP key [key ...] timeout`: `[key, element]` from the first
/// non-empty list, or block until one is pushed.
fn blocking_pop<T: ReplyTarget>(c: &mut Ctx<'_, T>, end: End) {
    let deadline = match blocking::timeout_secs(c.arg(c.argc() - 1)) {
        Ok(d) => d,
        Err(msg) => return c.error(msg),
    };
    let serving = c.serving();
    let keys = blocking::keys_to_serve((1..c.argc() - 1).map(|i| c.arg(i)).collect(), serving);
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(c.session.db, keys.iter().copied());
    match pop_first(c, &mut lock, &keys, end, 1) {
        Err(WrongType) => c.error(WRONGTYPE),
        Ok(Some((key, items))) => {
            drop(lock);
            c.reply(|s| {
                s.array(2);
                s.bulk(key);
                s.bulk(items.first().map_or(&[][..], |i| &i[..]));
            });
        }
        Ok(None) => {
            blocking::wait(c, Wait { keys: &keys, args: None, deadline, empty: Empty::NullArray, on_delete: false })
        }
    }
}

/// `BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]`: LMPOP,
/// or block until one of the lists is pushed to.
fn blmpop<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let LmpopArgs { keys, end, count } = match lmpop_args(c, 2) {
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
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(c.session.db, keys.iter().copied());
    match pop_first(c, &mut lock, &keys, end, count) {
        Err(WrongType) => c.error(WRONGTYPE),
        Ok(Some((key, items))) => {
            drop(lock);
            c.reply(|s| {
                s.array(2);
                s.bulk(key);
                reply_elements(s, &items);
            });
        }
        Ok(None) => {
            blocking::wait(c, Wait { keys: &keys, args: None, deadline, empty: Empty::NullArray, on_delete: false })
        }
    }
}

/// `BRPOPLPUSH source destination timeout` and `BLMOVE source destination
/// from to timeout`: move one element, or block until the source is pushed
/// to. As in Redis, the destination's type is checked only once the source
/// has an element; when it is wrong the element stays where it was.
fn blocking_move<T: ReplyTarget>(c: &mut Ctx<'_, T>, from: End, to: End, timeout_at: usize) {
    let deadline = match blocking::timeout_secs(c.arg(timeout_at)) {
        Ok(d) => d,
        Err(msg) => return c.error(msg),
    };
    let (src, dst) = (c.arg(1), c.arg(2));
    let serving = c.serving().is_some();
    let (db, now) = (c.session.db, now_ms());
    let ks = &c.state.keyspace;
    let mut lock = ks.lock_keys(db, [src, dst]);
    match access::read_for_write::<ListValue>(lock.shard_for(ks, src).db(db), src, now) {
        Err(WrongType) if serving => return,
        Err(WrongType) => return c.error(WRONGTYPE),
        Ok(None) => {
            let keys = [src];
            let wait = Wait { keys: &keys, args: None, deadline, empty: Empty::NullBulk, on_delete: false };
            return blocking::wait(c, wait);
        }
        Ok(Some(_)) => {}
    }
    let moved = move_locked(c, &mut lock, src, dst, from, to);
    drop(lock);
    reply_moved(c, moved);
}
