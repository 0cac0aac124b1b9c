//! Stream commands: XADD, XRANGE and friends, trimming, consumer groups
//! (XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM) and XINFO.
//!
//! Each command parses everything it can before touching the keyspace, in
//! Redis's order, so the same bad request gets the same error. Replies whose
//! length is only known after walking the data are collected first and
//! written whole.
//!
//! For the journal, the writes whose request would not redo the same say
//! what they did, as Redis 7.0 propagates it: XADD names the id it
//! generated and trims exactly what an approximate trim removed (so does
//! XTRIM); reads and claims of a group become the `XCLAIM … FORCE JUSTID`
//! of each entry they handed out, at its absolute delivery time and count,
//! and the group's new position (`XGROUP SETID … ENTRIESREAD`); `$` in
//! XGROUP becomes the id it stood for. The others redo themselves.

use kvik_protocol::number::parse_i64;
use kvik_protocol::resp::writer::Protocol;
use kvik_protocol::ReplySink;

use super::access::{self, WrongType};
use super::blocked::{self as blocking, Empty, Wait};
use super::{help, unknown_subcommand_syntax, Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::keyspace::{now_ms, Db};
use crate::types::compact::CompactBytes;
use crate::types::stream::{
    parse_id, AddError, Consumer, Group, IdArg, NodeLimits, Pending, StreamId, StreamValue, Trim,
};

handlers! {
    XADD(c) => xadd(c),
    XLEN(c) => xlen(c),
    XRANGE(c) => xrange(c, false),
    XREVRANGE(c) => xrange(c, true),
    XDEL(c) => xdel(c),
    XTRIM(c) => xtrim(c),
    XREAD(c) => xread(c, false),
    XREADGROUP(c) => xread(c, true),
    XACK(c) => xack(c),
    XPENDING(c) => xpending(c),
    XCLAIM(c) => xclaim(c),
    XAUTOCLAIM(c) => xautoclaim(c),
    XSETID(c) => xsetid(c),
    XGROUP_CREATE(c) => xgroup(c),
    XGROUP_SETID(c) => xgroup(c),
    XGROUP_DESTROY(c) => xgroup(c),
    XGROUP_CREATECONSUMER(c) => xgroup(c),
    XGROUP_DELCONSUMER(c) => xgroup(c),
    XGROUP_HELP(c) => xgroup_help(c),
    XINFO_STREAM(c) => xinfo_stream(c),
    XINFO_GROUPS(c) => xinfo_groups(c),
    XINFO_CONSUMERS(c) => xinfo_consumers(c),
    XINFO_HELP(c) => xinfo_help(c),
}

const INVALID_ID: &[u8] = b"ERR Invalid stream ID specified as stream command argument";
const NO_SUCH_KEY: &[u8] = b"ERR no such key";

/// The stream at `key` for a read command: `Ok(None)` when missing, `Err`
/// for another type.
fn stream_at<'d>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<&'d StreamValue>, ()> {
    access::read_at::<StreamValue>(db, key, now).map_err(|WrongType| ())
}

/// The stream at `key` for a write command that reads it first.
fn stream_for_write<'d>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<&'d StreamValue>, ()> {
    access::read_for_write::<StreamValue>(db, key, now).map_err(|WrongType| ())
}

/// The stream at `key` for changing.
fn stream_at_mut<'d>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<&'d mut StreamValue>, ()> {
    access::write(db, key, now).map_err(|WrongType| ())
}

/// The stream at `key` for changing, created empty when missing.
fn stream_or_new<'d>(db: &'d mut Db, key: &[u8], now: i64) -> Result<&'d mut StreamValue, ()> {
    access::write_or_create(db, key, now, StreamValue::new).map_err(|WrongType| ())
}

/// The node limits from the configuration.
fn node_limits<T: ReplyTarget>(c: &Ctx<'_, T>) -> NodeLimits {
    let config = c.state.config();
    NodeLimits {
        max_entries: u64::try_from(config.int("stream-node-max-entries")).unwrap_or(0),
        max_bytes: config.usize("stream-node-max-bytes"),
    }
}

fn now_u64() -> u64 {
    u64::try_from(now_ms()).unwrap_or(0)
}

/// An id with `-`/`+` allowed and `missing_seq` for a bare millisecond part.
fn id_arg(text: &[u8], missing_seq: u64) -> Option<StreamId> {
    match parse_id(text, missing_seq, false, false)? {
        IdArg::Id(id) => Some(id),
        IdArg::AutoSeq(_) => None,
    }
}

/// A strict id: no `-` or `+`.
fn strict_id(text: &[u8]) -> Option<StreamId> {
    match parse_id(text, 0, true, false)? {
        IdArg::Id(id) => Some(id),
        IdArg::AutoSeq(_) => None,
    }
}

/// A range end: an id, or `(` and a strict id meaning "excluding it".
fn interval_id(text: &[u8], missing_seq: u64) -> Option<(StreamId, bool)> {
    match text.split_first() {
        Some((b'(', rest)) if text.len() > 1 => strict_id_with(rest, missing_seq).map(|id| (id, true)),
        _ => id_arg(text, missing_seq).map(|id| (id, false)),
    }
}

fn strict_id_with(text: &[u8], missing_seq: u64) -> Option<StreamId> {
    match parse_id(text, missing_seq, true, false)? {
        IdArg::Id(id) => Some(id),
        IdArg::AutoSeq(_) => None,
    }
}

/// Parse the start and end of a range (XRANGE, XPENDING), applying exclusion.
fn parse_interval(start: &[u8], end: &[u8]) -> Result<(StreamId, StreamId), &'static [u8]> {
    let (mut from, from_ex) = interval_id(start, 0).ok_or(INVALID_ID)?;
    if from_ex {
        from = from.next().ok_or(&b"ERR invalid start ID for the interval"[..])?;
    }
    let (mut to, to_ex) = interval_id(end, u64::MAX).ok_or(INVALID_ID)?;
    if to_ex {
        to = to.prev().ok_or(&b"ERR invalid end ID for the interval"[..])?;
    }
    Ok((from, to))
}

/// A stream entry as replied: `[id, [field, value, ...]]`.
fn write_entry(s: &mut dyn ReplySink, id: StreamId, fields: &[CompactBytes]) {
    s.array(2);
    s.bulk(&id.to_text());
    s.array(fields.len());
    for f in fields {
        s.bulk(f);
    }
}

/// What one stream contributes to an XREAD reply: entries, or ids whose
/// entry is gone (a consumer's history can name deleted entries).
type Served<'a> = (&'a [u8], Vec<(StreamId, Option<Vec<CompactBytes>>)>);

/// An owned copy of an entry, for replies written after the lock is released.
type OwnedEntry = (StreamId, Vec<CompactBytes>);

fn owned(id: StreamId, fields: &[CompactBytes]) -> OwnedEntry {
    (id, fields.to_vec())
}

fn write_entries(s: &mut dyn ReplySink, entries: &[OwnedEntry]) {
    s.array(entries.len());
    for (id, fields) in entries {
        write_entry(s, *id, fields);
    }
}

/// Trimming options shared by XADD and XTRIM.
#[derive(Default)]
struct TrimArgs {
    how: Option<Trim>,
    approx: bool,
    limit: u64,
    nomkstream: bool,
    /// The id XADD was given (`None`: `*`).
    id: Option<IdArg>,
    /// Index of the first field (XADD) or the argument count (XTRIM).
    next: usize,
    /// Where the `~` is (0: none), for the record that says `=` instead.
    approx_at: usize,
    /// Where the MAXLEN or MINID threshold is.
    threshold_at: usize,
    /// Where each `LIMIT` keyword is (empty, so not allocated, unless
    /// given): the record of an approximate trim leaves them out.
    limit_at: Vec<usize>,
}

/// Parse XADD's or XTRIM's options as Redis does.
fn parse_trim_args<T: ReplyTarget>(c: &Ctx<'_, T>, xadd: bool) -> Result<TrimArgs, Vec<u8>> {
    let mut a = TrimArgs::default();
    let mut limit_given = false;
    let argc = c.argc();
    let mut i = 2;
    while i < argc {
        let more = argc - 1 - i;
        let opt = c.arg(i);
        if xadd && opt == b"*" {
            break;
        } else if (opt.eq_ignore_ascii_case(b"maxlen") || opt.eq_ignore_ascii_case(b"minid")) && more > 0 {
            if a.how.is_some() {
                return Err(b"ERR syntax error, MAXLEN and MINID options at the same time are not compatible".to_vec());
            }
            a.approx = false;
            a.approx_at = 0;
            let next = c.arg(i + 1);
            if more >= 2 && (next == b"~" || next == b"=") {
                a.approx = next == b"~";
                if a.approx {
                    a.approx_at = i + 1;
                }
                i += 1;
            }
            a.threshold_at = i + 1;
            let value = c.arg(i + 1);
            a.how = Some(if opt.eq_ignore_ascii_case(b"maxlen") {
                let n = parse_i64(value).ok_or(NOT_AN_INTEGER.to_vec())?;
                Trim::MaxLen(u64::try_from(n).map_err(|_| b"ERR The MAXLEN argument must be >= 0.".to_vec())?)
            } else {
                Trim::MinId(strict_id(value).ok_or(INVALID_ID.to_vec())?)
            });
            i += 2;
            continue;
        } else if opt.eq_ignore_ascii_case(b"limit") && more > 0 {
            let n = parse_i64(c.arg(i + 1)).ok_or(NOT_AN_INTEGER.to_vec())?;
            a.limit = u64::try_from(n).map_err(|_| b"ERR The LIMIT argument must be >= 0.".to_vec())?;
            limit_given = true;
            a.limit_at.push(i);
            i += 2;
            continue;
        } else if xadd && opt.eq_ignore_ascii_case(b"nomkstream") {
            a.nomkstream = true;
        } else if xadd {
            a.id = Some(parse_id(opt, 0, true, true).ok_or(INVALID_ID.to_vec())?);
            break;
        } else {
            return Err(SYNTAX_ERROR.to_vec());
        }
        i += 1;
    }
    if a.limit != 0 && a.how.is_none() {
        return Err(b"ERR syntax error, LIMIT cannot be used without specifying a trimming strategy".to_vec());
    }
    if !xadd && a.how.is_none() {
        return Err(b"ERR syntax error, XTRIM must be called with a trimming strategy".to_vec());
    }
    if crate::keyspace::loading() {
        // A record trims exactly (see `propagate_trim`); one written by
        // redis-server keeps its LIMIT beside the `=`, which Redis ignores
        // when it replays, and so does kvik.
        a.limit = 0;
    } else if limit_given {
        if !a.approx {
            return Err(b"ERR syntax error, LIMIT cannot be used without the special ~ option".to_vec());
        }
    } else if a.approx {
        let per_node = u64::try_from(c.state.config().int("stream-node-max-entries")).unwrap_or(0);
        a.limit = match 100 * per_node {
            0 => 10_000,
            n => n.min(1 << 30),
        };
    } else {
        a.limit = 0;
    }
    a.next = i + 1;
    Ok(a)
}

/// `XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT n]] *|id field value ...`
fn xadd<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let a = match parse_trim_args(c, true) {
        Ok(a) => a,
        Err(msg) => return c.error(&msg),
    };
    let fields_at = a.next;
    let argc = c.argc();
    if argc < fields_at + 2 || (argc - fields_at) % 2 == 1 {
        return c.error(b"ERR wrong number of arguments for 'xadd' command");
    }
    if a.id == Some(IdArg::Id(StreamId::MIN)) {
        return c.error(b"ERR The ID specified in XADD must be greater than 0-0");
    }
    let key = c.arg(1);
    let fields: Vec<&[u8]> = (fields_at..argc).map(|i| c.arg(i)).collect();
    let limits = node_limits(c);
    let now = now_ms();
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let stream = match stream_at_mut(d, key, now) {
        Err(()) => return c.error(WRONGTYPE),
        Ok(None) if a.nomkstream => {
            drop(shard);
            return c.reply(|s| s.null());
        }
        Ok(_) => match stream_or_new(d, key, now) {
            Ok(s) => s,
            Err(()) => return c.error(WRONGTYPE),
        },
    };
    if stream.last_id == StreamId::MAX {
        return c.error(b"ERR The stream has exhausted the last possible ID, unable to add more items");
    }
    let id = match stream.next_id(a.id, now_u64()) {
        Ok(id) => id,
        Err(AddError::IdTooSmall) => {
            return c.error(b"ERR The ID specified in XADD is equal or smaller than the target stream top item")
        }
        Err(AddError::SeqExhausted) => return c.error(b"ERR Elements are too large to be stored"),
    };
    stream.append(id, &fields, limits);
    let trimmed = a.how.map_or(0, |how| stream.trim(how, a.approx, a.limit));
    // Redis rewrites what is not the same on replay: an id the clock or the
    // previous one chose, and an approximate trim, whose outcome depends on
    // the node sizes of the moment (see `trimmed_to`).
    let auto_id = !matches!(a.id, Some(IdArg::Id(_)));
    let rewrite = state.journal.on() && (auto_id || a.approx);
    let threshold = if rewrite { trimmed_to(stream, &a) } else { None };
    c.notify(EventClass::Stream, "xadd", key);
    // The trim is part of the one change XADD counts.
    if trimmed > 0 {
        c.notify_counted(EventClass::Stream, "xtrim", key, 0);
    }
    // A stream that grows can serve clients blocked reading it.
    blocking::signal(c.state, db, key);
    drop(shard);
    let id_text = id.to_text();
    if rewrite {
        // The change took its place under the lock (notify).
        propagate_trim(c, &a, threshold.as_deref(), auto_id.then_some(&id_text[..]));
    }
    c.reply(|s| s.bulk(&id_text));
}

/// The exact threshold that removes what an approximate trim of `stream`
/// removed (`None` when the trim was exact or absent): the length left for
/// MAXLEN, the first id left for MINID (the largest id when none is, which
/// removes all), as Redis's `streamRewriteTrimArgument` writes it.
fn trimmed_to(stream: &StreamValue, a: &TrimArgs) -> Option<Vec<u8>> {
    if !a.approx {
        return None;
    }
    match a.how? {
        Trim::MaxLen(_) => Some(stream.len().to_string().into_bytes()),
        Trim::MinId(_) if stream.is_empty() => Some(StreamId::MAX.to_text()),
        Trim::MinId(_) => Some(stream.first_id().to_text()),
    }
}

/// Propagate XADD's or XTRIM's request with `~ threshold` as
/// `= exact_threshold` and without LIMIT (an exact trim takes none), and
/// with XADD's id argument `id` when it was generated.
///
/// Redis 7.0 keeps LIMIT in its rewrite and ignores it on replay; leaving
/// it out makes the record a valid request anywhere.
fn propagate_trim<T: ReplyTarget>(c: &mut Ctx<'_, T>, a: &TrimArgs, threshold: Option<&[u8]>, id: Option<&[u8]>) {
    let id_at = a.next - 1;
    let mut args: Vec<&[u8]> = Vec::with_capacity(c.argc());
    let mut i = 0;
    while i < c.argc() {
        if threshold.is_some() && a.limit_at.contains(&i) {
            i += 2;
            continue;
        }
        let arg = match (threshold, id) {
            (Some(_), _) if i == a.approx_at && a.approx_at != 0 => &b"="[..],
            (Some(t), _) if i == a.threshold_at => t,
            (_, Some(id)) if i == id_at => id,
            _ => c.arg(i),
        };
        args.push(arg);
        i += 1;
    }
    c.propagate(&args);
}

/// `XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT n]`
fn xtrim<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let a = match parse_trim_args(c, false) {
        Ok(a) => a,
        Err(msg) => return c.error(&msg),
    };
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let (removed, threshold) = match stream_at_mut(shard.db(db), key, now_ms()) {
        Err(()) => return c.error(WRONGTYPE),
        Ok(None) => (0, None),
        Ok(Some(s)) => {
            let removed = a.how.map_or(0, |how| s.trim(how, a.approx, a.limit));
            // Only a trim that removed something is a change to record.
            let exact = if removed > 0 && state.journal.on() { trimmed_to(s, &a) } else { None };
            (removed, exact)
        }
    };
    if removed > 0 {
        c.notify_counted(EventClass::Stream, "xtrim", key, removed);
    }
    drop(shard);
    if threshold.is_some() {
        // An approximate trim redoes as the exact one (the change took its
        // place under the lock).
        propagate_trim(c, &a, threshold.as_deref(), None);
    }
    c.reply(|s| s.integer(i64::try_from(removed).unwrap_or(i64::MAX)));
}

/// `XLEN key`
fn xlen<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let len = match stream_at(shard.db(db), key, now_ms()) {
        Err(()) => return c.error(WRONGTYPE),
        Ok(s) => s.map_or(0, StreamValue::len),
    };
    drop(shard);
    c.reply(|s| s.integer(i64::try_from(len).unwrap_or(i64::MAX)));
}

/// `XRANGE key start end [COUNT n]` and `XREVRANGE key end start [COUNT n]`.
fn xrange<T: ReplyTarget>(c: &mut Ctx<'_, T>, rev: bool) {
    let (start_arg, end_arg) = if rev { (c.arg(3), c.arg(2)) } else { (c.arg(2), c.arg(3)) };
    let (start, end) = match parse_interval(start_arg, end_arg) {
        Ok(r) => r,
        Err(msg) => return c.error(msg),
    };
    let mut count: Option<u64> = None;
    let mut j = 4;
    while j < c.argc() {
        if c.arg(j).eq_ignore_ascii_case(b"count") && j + 1 < c.argc() {
            match parse_i64(c.arg(j + 1)) {
                Some(n) => count = Some(u64::try_from(n).unwrap_or(0)),
                None => return c.error(NOT_AN_INTEGER),
            }
            j += 2;
        } else {
            return c.error(SYNTAX_ERROR);
        }
    }
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let entries: Option<Vec<OwnedEntry>> = match stream_at(shard.db(db), key, now_ms()) {
        Err(()) => return c.error(WRONGTYPE),
        Ok(None) => Some(Vec::new()),
        Ok(Some(_)) if count == Some(0) => None,
        Ok(Some(s)) => {
            let take = count.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
            let range = s.range(start, end);
            Some(if rev {
                range.rev().take(take).map(|(id, f)| owned(id, f)).collect()
            } else {
                range.take(take).map(|(id, f)| owned(id, f)).collect()
            })
        }
    };
    drop(shard);
    match entries {
        Some(e) => c.reply(|s| write_entries(s, &e)),
        None => c.reply(|s| s.null_array()),
    }
}

/// `XDEL key id [id ...]`
fn xdel<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let key = c.arg(1);
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    match stream_for_write(d, key, now) {
        Err(()) => return c.error(WRONGTYPE),
        Ok(None) => {
            drop(shard);
            return c.reply(|s| s.integer(0));
        }
        Ok(Some(_)) => {}
    }
    let mut ids = Vec::with_capacity(c.argc() - 2);
    for i in 2..c.argc() {
        match strict_id(c.arg(i)) {
            Some(id) => ids.push(id),
            None => return c.error(INVALID_ID),
        }
    }
    let deleted = match stream_at_mut(d, key, now) {
        Ok(Some(s)) => ids.iter().filter(|id| s.delete(**id)).count(),
        _ => 0,
    };
    if deleted > 0 {
        c.notify_counted(EventClass::Stream, "xdel", key, deleted as u64);
    }
    drop(shard);
    c.reply(|s| s.integer(i64::try_from(deleted).unwrap_or(i64::MAX)));
}

/// The options of XREAD / XREADGROUP.
struct ReadArgs<'a> {
    count: usize,
    block: Option<i64>,
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
    keys: Vec<&'a [u8]>,
    ids: Vec<&'a [u8]>,
}

fn parse_read_args<'a, T: ReplyTarget>(c: &Ctx<'a, T>, group_cmd: bool) -> Result<ReadArgs<'a>, Vec<u8>> {
    let mut a = ReadArgs { count: 0, block: None, group: None, noack: false, keys: Vec::new(), ids: Vec::new() };
    let argc = c.argc();
    let mut streams_at = 0;
    let mut i = 1;
    while i < argc {
        let more = argc - i - 1;
        let opt = c.arg(i);
        if opt.eq_ignore_ascii_case(b"block") && more > 0 {
            i += 1;
            let ms = parse_i64(c.arg(i)).ok_or(b"ERR timeout is not an integer or out of range".to_vec())?;
            if ms < 0 {
                return Err(b"ERR timeout is negative".to_vec());
            }
            a.block = Some(ms);
        } else if opt.eq_ignore_ascii_case(b"count") && more > 0 {
            i += 1;
            let n = parse_i64(c.arg(i)).ok_or(NOT_AN_INTEGER.to_vec())?;
            a.count = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
        } else if opt.eq_ignore_ascii_case(b"streams") && more > 0 {
            streams_at = i + 1;
            let n = argc - streams_at;
            if !n.is_multiple_of(2) {
                // Redis 7.0 names XREAD and `$` for XREADGROUP too.
                return Err(
                    b"ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
                        .to_vec(),
                );
            }
            a.keys = (streams_at..streams_at + n / 2).map(|k| c.arg(k)).collect();
            a.ids = (streams_at + n / 2..argc).map(|k| c.arg(k)).collect();
            break;
        } else if opt.eq_ignore_ascii_case(b"group") && more >= 2 {
            if !group_cmd {
                return Err(b"ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.".to_vec());
            }
            a.group = Some((c.arg(i + 1), c.arg(i + 2)));
            i += 2;
        } else if opt.eq_ignore_ascii_case(b"noack") {
            if !group_cmd {
                return Err(b"ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.".to_vec());
            }
            a.noack = true;
        } else {
            return Err(SYNTAX_ERROR.to_vec());
        }
        i += 1;
    }
    if streams_at == 0 {
        return Err(SYNTAX_ERROR.to_vec());
    }
    if group_cmd && a.group.is_none() {
        return Err(b"ERR Missing GROUP option for XREADGROUP".to_vec());
    }
    Ok(a)
}

/// Where a read starts in one stream.
#[derive(Clone, Copy)]
enum ReadFrom {
    /// Entries above this id.
    After(StreamId),
    /// New entries for the group (`>`).
    New,
    /// The consumer's own pending entries above this id.
    History(StreamId),
}

/// `XREAD ... STREAMS key ... id ...` and `XREADGROUP GROUP g c ... STREAMS key ... id ...`.
fn xread<T: ReplyTarget>(c: &mut Ctx<'_, T>, group_cmd: bool) {
    let mut a = match parse_read_args(c, group_cmd) {
        Ok(a) => a,
        Err(msg) => return c.error(&msg),
    };
    let id_args_at = c.argc() - a.ids.len();
    let serving = c.serving();
    if let Some(key) = serving {
        // Served from one ready stream: only that one is read.
        let keep: Vec<bool> = a.keys.iter().map(|k| *k == key).collect();
        let mut flags = keep.iter();
        a.keys.retain(|_| flags.next().copied().unwrap_or(false));
        let mut flags = keep.iter();
        a.ids.retain(|_| flags.next().copied().unwrap_or(false));
    }
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, a.keys.iter().copied());
    // First pass: check types and groups, resolve the ids, as Redis does
    // before serving anything.
    let mut from = Vec::with_capacity(a.keys.len());
    for (key, id_text) in a.keys.iter().zip(&a.ids) {
        let stream = match stream_at(lock.shard_for(ks, key).db(db), key, now) {
            Ok(s) => s,
            Err(()) if serving.is_some() && group_cmd => return c.error(b"UNBLOCKED the stream key no longer exists"),
            Err(()) if serving.is_some() => return,
            Err(()) => return c.error(WRONGTYPE),
        };
        if let Some((group, _)) = a.group.filter(|_| serving.is_some()) {
            // A blocked reader whose stream or group went away is told so.
            match stream {
                None => return c.error(b"UNBLOCKED the stream key no longer exists"),
                Some(s) if !s.groups.contains_key(group) => {
                    return c.error(b"NOGROUP the consumer group this client was blocked on no longer exists")
                }
                Some(_) => {}
            }
        }
        if let Some((group, _)) = a.group {
            if !stream.is_some_and(|s| s.groups.contains_key(group)) {
                let msg = nogroup_read(key, group);
                return c.error(&msg);
            }
        }
        let start = match *id_text {
            b"$" if group_cmd => {
                return c.error(
                    b"ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                )
            }
            b"$" => ReadFrom::After(stream.map_or(StreamId::MIN, |s| s.last_id)),
            b">" if !group_cmd => {
                return c.error(
                    b"ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                )
            }
            b">" => ReadFrom::New,
            text => match strict_id(text) {
                Some(id) if group_cmd => ReadFrom::History(id),
                Some(id) => ReadFrom::After(id),
                None => return c.error(INVALID_ID),
            },
        };
        from.push(start);
    }
    let mut served: Vec<Served<'_>> = Vec::new();
    for (key, start) in a.keys.iter().zip(from.iter().copied()) {
        let d = lock.shard_for(ks, key).db(db);
        // Redis looks each key up again, as a read, to serve it.
        if !matches!(stream_at(d, key, now), Ok(Some(_))) {
            continue;
        }
        let Ok(Some(stream)) = stream_at_mut(d, key, now) else { continue };
        let entries = match (a.group, start) {
            (None, ReadFrom::After(after)) => {
                let Some(first) = after.next() else { continue };
                let take = if a.count == 0 { usize::MAX } else { a.count };
                let e: Vec<_> =
                    stream.range(first, StreamId::MAX).take(take).map(|(id, f)| (id, Some(f.to_vec()))).collect();
                if e.is_empty() {
                    continue;
                }
                e
            }
            (Some((group, consumer)), start) => {
                let (entries, created) = read_group(stream, group, consumer, start, a.count, a.noack, now);
                if created {
                    announce(c, "xgroup-createconsumer", key);
                }
                if let Some(e) = entries.as_ref().filter(|_| state.journal.on()) {
                    let read = GroupRead { key, group, consumer, start, noack: a.noack, created };
                    propagate_group_read(c, stream, &read, e);
                }
                match entries {
                    // Each stream a group read serves is one change, however
                    // many entries it hands out.
                    Some(e) => {
                        c.count_changes(1);
                        e
                    }
                    None => continue,
                }
            }
            (None, _) => continue,
        };
        served.push((key, entries));
    }
    if served.is_empty() {
        let Some(ms) = a.block else {
            drop(lock);
            return c.reply(|s| s.null_array());
        };
        // `$` means the last id now: the waiter remembers which that was.
        let mut args = kvik_protocol::CommandArgs::new();
        for i in 0..c.argc() {
            let resolved = i.checked_sub(id_args_at).and_then(|j| match (a.ids.get(j), from.get(j)) {
                (Some(&b"$"), Some(ReadFrom::After(id))) => Some(id.to_text()),
                _ => None,
            });
            args.push_owned(resolved.as_deref().unwrap_or(c.arg(i)));
        }
        let wait = Wait {
            keys: &a.keys,
            args: Some(args),
            deadline: blocking::deadline_after(ms),
            empty: Empty::NullArray,
            on_delete: group_cmd,
        };
        return blocking::wait(c, wait);
    }
    drop(lock);
    let resp3 = c.session.protocol == Protocol::Resp3;
    c.reply(|s| {
        if resp3 {
            s.map(served.len());
        } else {
            s.array(served.len());
        }
        for (key, entries) in &served {
            if !resp3 {
                s.array(2);
            }
            s.bulk(key);
            s.array(entries.len());
            for (id, fields) in entries {
                match fields {
                    Some(f) => write_entry(s, *id, f),
                    None => {
                        s.array(2);
                        s.bulk(&id.to_text());
                        s.null_array();
                    }
                }
            }
        }
    });
}

/// One stream an XREADGROUP served, for [`propagate_group_read`].
struct GroupRead<'k> {
    key: &'k [u8],
    group: &'k [u8],
    consumer: &'k [u8],
    start: ReadFrom,
    noack: bool,
    /// The read created the consumer.
    created: bool,
}

/// Propagate what an XREADGROUP did to one stream (under its lock): the
/// request itself would read whatever is there at replay, and stamp its
/// own time on what it delivers.
///
/// As Redis does, each entry delivered becomes the `XCLAIM … FORCE JUSTID`
/// that puts it in the consumer's pending list with the same delivery time
/// and count, and a NOACK read the `XGROUP SETID … ENTRIESREAD` that moves
/// the group as it moved, after the `XGROUP CREATECONSUMER` of a consumer
/// it created. Where Redis 7.0 records nothing (which replays to a different
/// group), kvik follows its later versions: a read of new entries also
/// records the group's position and read counter (an `XCLAIM`'s LASTID moves
/// the position only), deliveries from the consumer's history are recorded
/// too, and a consumer created by a read that records no `XCLAIM` naming it
/// is created by `XGROUP CREATECONSUMER`.
fn propagate_group_read<T: ReplyTarget>(
    c: &mut Ctx<'_, T>,
    stream: &StreamValue,
    read: &GroupRead<'_>,
    entries: &ServedEntries,
) {
    let Some(group) = stream.groups.get(read.group) else { return };
    let claims = !read.noack && entries.iter().any(|(_, fields)| fields.is_some());
    if read.created && !claims {
        c.propagate(&[b"XGROUP", b"CREATECONSUMER", read.key, read.group, read.consumer]);
    }
    if !read.noack {
        for (id, _) in entries.iter().filter(|(_, fields)| fields.is_some()) {
            let Some(p) = group.pending.get(id) else { continue };
            // Redis names the group's position when it delivered the entry:
            // the entry itself for new ones.
            let last_id = if matches!(read.start, ReadFrom::New) { *id } else { group.last_id };
            propagate_claim(c, read.key, read.group, *id, p, last_id);
        }
    }
    if matches!(read.start, ReadFrom::New) && !entries.is_empty() {
        propagate_group_position(c, read.key, read.group, group);
    }
}

/// Propagate pending entry `id` of `group` as it is now, `p` (its owner,
/// delivery time and count), as the XCLAIM that makes it so whatever it
/// was: `FORCE` creates it, `JUSTID` keeps the count given, `TIME` is
/// absolute, `LASTID` moves the group's position up to `last_id`. For an
/// entry that is gone from the stream the same XCLAIM drops it from the
/// pending list, as the claim that found it gone did.
fn propagate_claim<T: ReplyTarget>(
    c: &mut Ctx<'_, T>,
    key: &[u8],
    group: &[u8],
    id: StreamId,
    p: &Pending,
    last_id: StreamId,
) {
    let (id, time, count, last) =
        (id.to_text(), p.delivered_ms.to_string(), p.deliveries.to_string(), last_id.to_text());
    c.propagate(&[
        b"XCLAIM",
        key,
        group,
        &p.consumer,
        b"0",
        &id,
        b"TIME",
        time.as_bytes(),
        b"RETRYCOUNT",
        count.as_bytes(),
        b"FORCE",
        b"JUSTID",
        b"LASTID",
        &last,
    ]);
}

/// Propagate the position and read counter of `group` (Redis's
/// `streamPropagateGroupID`); -1 stands for an unknown counter.
fn propagate_group_position<T: ReplyTarget>(c: &mut Ctx<'_, T>, key: &[u8], name: &[u8], group: &Group) {
    let last = group.last_id.to_text();
    let read = group.entries_read.map_or_else(|| "-1".to_string(), |n| n.to_string());
    c.propagate(&[b"XGROUP", b"SETID", key, name, &last, b"ENTRIESREAD", read.as_bytes()]);
}

fn nogroup_read(key: &[u8], group: &[u8]) -> Vec<u8> {
    let mut msg = b"NOGROUP No such key '".to_vec();
    msg.extend_from_slice(key);
    msg.extend_from_slice(b"' or consumer group '");
    msg.extend_from_slice(group);
    msg.extend_from_slice(b"' in XREADGROUP with GROUP option");
    msg
}

/// Entries served to a reader: ids, with the fields unless deleted since.
type ServedEntries = Vec<(StreamId, Option<Vec<CompactBytes>>)>;

/// Serve one stream of an XREADGROUP; `None` when nothing is served for it
/// (no new entries for `>`). The flag says whether the consumer was created.
fn read_group(
    stream: &mut StreamValue,
    group_name: &[u8],
    consumer_name: &[u8],
    start: ReadFrom,
    count: usize,
    noack: bool,
    now: i64,
) -> (Option<ServedEntries>, bool) {
    let Some(mut group) = stream.groups.remove(group_name) else { return (None, false) };
    let serve = match start {
        ReadFrom::History(id) => Some(ReadFrom::History(id)),
        ReadFrom::New => {
            let newest = stream.range(StreamId::MIN, StreamId::MAX).next_back().map(|(id, _)| id);
            newest.filter(|&n| n > group.last_id).map(|_| ReadFrom::After(group.last_id))
        }
        ReadFrom::After(_) => None,
    };
    // As in Redis, a consumer is created (and seen) only when the read is
    // served: `>` with nothing new leaves the group as it was.
    let known = group.consumers.len();
    if serve.is_some() {
        group.consumers.entry(CompactBytes::new(consumer_name)).or_default().seen_ms = now;
    }
    let created = group.consumers.len() > known;
    let out = match serve {
        None => None,
        Some(ReadFrom::History(id)) => Some(history(stream, &mut group, consumer_name, id, count, now)),
        Some(ReadFrom::After(after)) => Some(deliver_new(stream, &mut group, consumer_name, after, count, noack, now)),
        Some(ReadFrom::New) => None,
    };
    stream.groups.insert(CompactBytes::new(group_name), group);
    (out, created)
}

/// The consumer's pending entries from just above `after`, each delivered again.
fn history(
    stream: &StreamValue,
    group: &mut Group,
    consumer_name: &[u8],
    after: StreamId,
    count: usize,
    now: i64,
) -> Vec<(StreamId, Option<Vec<CompactBytes>>)> {
    let Some(first) = after.next() else { return Vec::new() };
    let ids: Vec<StreamId> = match group.consumers.get(consumer_name) {
        Some(cons) => cons.pending.range(first..).take(if count == 0 { usize::MAX } else { count }).copied().collect(),
        None => Vec::new(),
    };
    ids.into_iter()
        .map(|id| match stream.get(&id) {
            Some(fields) => {
                if let Some(p) = group.pending.get_mut(&id) {
                    p.delivered_ms = now;
                    p.deliveries += 1;
                }
                (id, Some(fields.to_vec()))
            }
            None => (id, None),
        })
        .collect()
}

/// Entries above `after` delivered to the consumer, moving the group forward.
fn deliver_new(
    stream: &StreamValue,
    group: &mut Group,
    consumer_name: &[u8],
    after: StreamId,
    count: usize,
    noack: bool,
    now: i64,
) -> Vec<(StreamId, Option<Vec<CompactBytes>>)> {
    let Some(first) = after.next() else { return Vec::new() };
    let take = if count == 0 { usize::MAX } else { count };
    let entries: Vec<(StreamId, Vec<CompactBytes>)> =
        stream.range(first, StreamId::MAX).take(take).map(|(id, f)| (id, f.to_vec())).collect();
    let name = CompactBytes::new(consumer_name);
    for (id, _) in &entries {
        stream.advance_group(group, *id);
        if noack {
            continue;
        }
        if let Some(previous) = group.pending.get(id).map(|p| p.consumer.clone()) {
            if let Some(old) = group.consumers.get_mut(&previous) {
                old.pending.remove(id);
            }
        }
        group.pending.insert(*id, Pending { consumer: name.clone(), delivered_ms: now, deliveries: 1 });
        group.consumers.entry(name.clone()).or_default().pending.insert(*id);
    }
    entries.into_iter().map(|(id, f)| (id, Some(f))).collect()
}

/// `XACK key group id [id ...]`
fn xack<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, group_name) = (c.arg(1), c.arg(2));
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let has_group = match stream_at(d, key, now) {
        Err(()) => return c.error(WRONGTYPE),
        Ok(s) => s.is_some_and(|s| s.groups.contains_key(group_name)),
    };
    if !has_group {
        drop(shard);
        return c.reply(|s| s.integer(0));
    }
    let mut ids = Vec::with_capacity(c.argc() - 3);
    for i in 3..c.argc() {
        match strict_id(c.arg(i)) {
            Some(id) => ids.push(id),
            None => return c.error(INVALID_ID),
        }
    }
    let mut acked: u64 = 0;
    if let Ok(Some(s)) = stream_at_mut(d, key, now) {
        if let Some(group) = s.groups.get_mut(group_name) {
            for id in ids {
                if let Some(p) = group.pending.remove(&id) {
                    if let Some(cons) = group.consumers.get_mut(&p.consumer) {
                        cons.pending.remove(&id);
                    }
                    acked += 1;
                }
            }
        }
    }
    if acked > 0 {
        // The request redoes itself: the record takes its place here.
        c.note_change();
    }
    drop(shard);
    c.count_changes(acked);
    c.reply(|s| s.integer(acked as i64));
}

/// Redis's error for a group the stream at `key` does not have (XGROUP, XINFO CONSUMERS).
fn no_such_group(group: &[u8], key: &[u8]) -> Vec<u8> {
    let mut msg = b"NOGROUP No such consumer group '".to_vec();
    msg.extend_from_slice(group);
    msg.extend_from_slice(b"' for key name '");
    msg.extend_from_slice(key);
    msg.push(b'\'');
    msg
}

fn nogroup(key: &[u8], group: &[u8]) -> Vec<u8> {
    let mut msg = b"NOGROUP No such key '".to_vec();
    msg.extend_from_slice(key);
    msg.extend_from_slice(b"' or consumer group '");
    msg.extend_from_slice(group);
    msg.push(b'\'');
    msg
}

/// `XPENDING key group [[IDLE min-idle] start end count [consumer]]`
fn xpending<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let argc = c.argc();
    if argc != 3 && !(6..=9).contains(&argc) {
        return c.error(SYNTAX_ERROR);
    }
    let mut range = None;
    if argc >= 6 {
        let mut at = 3;
        let mut min_idle = 0;
        if c.arg(3).eq_ignore_ascii_case(b"idle") {
            match parse_i64(c.arg(4)) {
                Some(n) => min_idle = n,
                None => return c.error(NOT_AN_INTEGER),
            }
            if argc < 8 {
                return c.error(SYNTAX_ERROR);
            }
            at += 2;
        }
        let count = match parse_i64(c.arg(at + 2)) {
            Some(n) => usize::try_from(n.max(0)).unwrap_or(usize::MAX),
            None => return c.error(NOT_AN_INTEGER),
        };
        let (start, end) = match parse_interval(c.arg(at), c.arg(at + 1)) {
            Ok(r) => r,
            Err(msg) => return c.error(msg),
        };
        let consumer = (at + 3 < argc).then(|| c.arg(at + 3));
        range = Some((min_idle, start, end, count, consumer));
    }
    let (key, group_name) = (c.arg(1), c.arg(2));
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let group = match stream_at(shard.db(db), key, now) {
        Err(()) => return c.error(WRONGTYPE),
        Ok(s) => s.and_then(|s| s.groups.get(group_name)),
    };
    let Some(group) = group else {
        let msg = nogroup(key, group_name);
        drop(shard);
        return c.error(&msg);
    };
    match range {
        None => {
            let first = group.pending.keys().next().copied();
            let last = group.pending.keys().next_back().copied();
            let per_consumer: Vec<(CompactBytes, usize)> = group
                .consumers
                .iter()
                .filter(|(_, cons)| !cons.pending.is_empty())
                .map(|(name, cons)| (name.clone(), cons.pending.len()))
                .collect();
            let total = group.pending.len();
            drop(shard);
            c.reply(|s| {
                s.array(4);
                s.integer(i64::try_from(total).unwrap_or(i64::MAX));
                match (first, last) {
                    (Some(f), Some(l)) => {
                        s.bulk(&f.to_text());
                        s.bulk(&l.to_text());
                        s.array(per_consumer.len());
                        for (name, n) in &per_consumer {
                            s.array(2);
                            s.bulk(name);
                            s.bulk(n.to_string().as_bytes());
                        }
                    }
                    _ => {
                        s.null();
                        s.null();
                        s.null_array();
                    }
                }
            });
        }
        Some((min_idle, start, end, count, consumer)) => {
            let rows = pending_rows(group, min_idle, start, end, count, consumer, now);
            drop(shard);
            c.reply(|s| {
                s.array(rows.len());
                for (id, name, idle, deliveries) in &rows {
                    s.array(4);
                    s.bulk(&id.to_text());
                    s.bulk(name);
                    s.integer(*idle);
                    s.integer(i64::try_from(*deliveries).unwrap_or(i64::MAX));
                }
            });
        }
    }
}

/// XPENDING's detailed rows: id, consumer, idle ms, deliveries.
fn pending_rows(
    group: &Group,
    min_idle: i64,
    start: StreamId,
    end: StreamId,
    count: usize,
    consumer: Option<&[u8]>,
    now: i64,
) -> Vec<(StreamId, CompactBytes, i64, u64)> {
    if start > end {
        return Vec::new();
    }
    let ids: Box<dyn Iterator<Item = StreamId>> = match consumer {
        Some(name) => match group.consumers.get(name) {
            Some(cons) => Box::new(cons.pending.range(start..=end).copied()),
            None => return Vec::new(),
        },
        None => Box::new(group.pending.range(start..=end).map(|(id, _)| *id)),
    };
    ids.filter_map(|id| group.pending.get(&id).map(|p| (id, p)))
        .filter(|(_, p)| min_idle == 0 || now - p.delivered_ms >= min_idle)
        .take(count)
        .map(|(id, p)| (id, p.consumer.clone(), (now - p.delivered_ms).max(0), p.deliveries))
        .collect()
}

/// Give pending entry `id` to `consumer` (XCLAIM, XAUTOCLAIM).
fn hand_over(group: &mut Group, id: StreamId, consumer: &CompactBytes, delivered_ms: i64, deliveries: Option<u64>) {
    let previous = group.pending.get(&id).map(|p| p.consumer.clone());
    if let Some(prev) = previous.filter(|p| p != consumer) {
        if let Some(cons) = group.consumers.get_mut(&prev) {
            cons.pending.remove(&id);
        }
    }
    let entry =
        group.pending.entry(id).or_insert_with(|| Pending { consumer: consumer.clone(), delivered_ms, deliveries: 1 });
    entry.delivered_ms = delivered_ms;
    if let Some(n) = deliveries {
        entry.deliveries = n;
    }
    entry.consumer = consumer.clone();
    group.consumers.entry(consumer.clone()).or_default().pending.insert(id);
}

/// Drop pending entry `id` from the group and its consumer; what it was,
/// if it was there.
fn forget(group: &mut Group, id: StreamId) -> Option<Pending> {
    let p = group.pending.remove(&id)?;
    if let Some(cons) = group.consumers.get_mut(&p.consumer) {
        cons.pending.remove(&id);
    }
    Some(p)
}

/// XCLAIM's options after the ids.
struct ClaimOptions {
    idle_or_time: Option<i64>,
    retrycount: Option<u64>,
    force: bool,
    justid: bool,
    last_id: StreamId,
}

fn parse_claim_options<T: ReplyTarget>(c: &Ctx<'_, T>, from: usize, now: i64) -> Result<ClaimOptions, Vec<u8>> {
    let mut o =
        ClaimOptions { idle_or_time: None, retrycount: None, force: false, justid: false, last_id: StreamId::MIN };
    let argc = c.argc();
    let mut j = from;
    let number = |i: usize, what: &str| {
        parse_i64(c.arg(i)).ok_or_else(|| format!("ERR Invalid {what} option argument for XCLAIM").into_bytes())
    };
    while j < argc {
        let more = argc - 1 - j;
        let opt = c.arg(j);
        if opt.eq_ignore_ascii_case(b"force") {
            o.force = true;
        } else if opt.eq_ignore_ascii_case(b"justid") {
            o.justid = true;
        } else if opt.eq_ignore_ascii_case(b"idle") && more > 0 {
            j += 1;
            o.idle_or_time = Some(now - number(j, "IDLE")?);
        } else if opt.eq_ignore_ascii_case(b"time") && more > 0 {
            j += 1;
            o.idle_or_time = Some(number(j, "TIME")?);
        } else if opt.eq_ignore_ascii_case(b"retrycount") && more > 0 {
            j += 1;
            o.retrycount = Some(u64::try_from(number(j, "RETRYCOUNT")?).unwrap_or(0));
        } else if opt.eq_ignore_ascii_case(b"lastid") && more > 0 {
            j += 1;
            o.last_id = strict_id(c.arg(j)).ok_or(INVALID_ID.to_vec())?;
        } else {
            let mut msg = b"ERR Unrecognized XCLAIM option '".to_vec();
            msg.extend_from_slice(&opt[..opt.iter().position(|&b| b == 0).unwrap_or(opt.len())]);
            msg.push(b'\'');
            return Err(msg);
        }
        j += 1;
    }
    Ok(o)
}

/// `XCLAIM key group consumer min-idle-time id [id ...] [options]`
fn xclaim<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, group_name, consumer_name) = (c.arg(1), c.arg(2), c.arg(3));
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let ks = &state.keyspace;
    let mut shard = ks.lock_key(key);
    let d = shard.db(db);
    match stream_at(d, key, now) {
        Err(()) => return c.error(WRONGTYPE),
        Ok(s) if !s.is_some_and(|s| s.groups.contains_key(group_name)) => {
            let msg = nogroup(key, group_name);
            return c.error(&msg);
        }
        Ok(_) => {}
    }
    let min_idle = match parse_i64(c.arg(4)) {
        Some(n) => n.max(0),
        None => return c.error(b"ERR Invalid min-idle-time argument for XCLAIM"),
    };
    let mut ids = Vec::new();
    let mut j = 5;
    while j < c.argc() {
        match strict_id(c.arg(j)) {
            Some(id) => ids.push(id),
            None => break,
        }
        j += 1;
    }
    let o = match parse_claim_options(c, j, now) {
        Ok(o) => o,
        Err(msg) => return c.error(&msg),
    };
    let delivered = o.idle_or_time.map_or(now, |t| if t < 0 || t > now { now } else { t });
    let Ok(Some(stream)) = stream_at_mut(d, key, now) else { return c.error(WRONGTYPE) };
    let Some(mut group) = stream.groups.remove(group_name) else { return c.error(WRONGTYPE) };
    let moved = o.last_id > group.last_id;
    if moved {
        group.last_id = o.last_id;
    }
    let journal = state.journal.on();
    // Whether an XCLAIM was propagated, whose LASTID moves the group.
    let mut claims = false;
    let mut forgotten: u64 = 0;
    let consumer = CompactBytes::new(consumer_name);
    let known = group.consumers.len();
    let mut claimed: Vec<(StreamId, Option<Vec<CompactBytes>>)> = Vec::new();
    for id in ids {
        let Some(fields) = stream.get(&id) else {
            if let Some(p) = forget(&mut group, id) {
                forgotten += 1;
                if journal {
                    propagate_claim(c, key, group_name, id, &p, group.last_id);
                    claims = true;
                }
            }
            continue;
        };
        let pending = group.pending.get(&id);
        if pending.is_none() && !o.force {
            continue;
        }
        if let Some(p) = pending {
            if min_idle > 0 && now - p.delivered_ms < min_idle {
                continue;
            }
        }
        let before = group.pending.get(&id).map_or(1, |p| p.deliveries);
        let deliveries = o.retrycount.or(if o.justid { None } else { Some(before + 1) });
        group.consumers.entry(consumer.clone()).or_default().seen_ms = now;
        hand_over(&mut group, id, &consumer, delivered, deliveries);
        if let Some(p) = group.pending.get(&id).filter(|_| journal) {
            propagate_claim(c, key, group_name, id, p, group.last_id);
            claims = true;
        }
        claimed.push((id, (!o.justid).then(|| fields.to_vec())));
    }
    let created = group.consumers.len() > known;
    // A LASTID that moved the group with nothing claimed is a change of
    // its own, recorded as the group's new position.
    let moved_alone = moved && claimed.is_empty() && forgotten == 0;
    if moved && journal && !claims {
        propagate_group_position(c, key, group_name, &group);
    }
    stream.groups.insert(CompactBytes::new(group_name), group);
    if created {
        announce(c, "xgroup-createconsumer", key);
    }
    // Every entry handed over or dropped is a change, as in Redis.
    c.count_changes(claimed.len() as u64 + forgotten + u64::from(moved_alone));
    drop(shard);
    c.reply(|s| {
        s.array(claimed.len());
        for (id, fields) in &claimed {
            match fields {
                Some(f) => write_entry(s, *id, f),
                None => s.bulk(&id.to_text()),
            }
        }
    });
}

/// `XAUTOCLAIM key group consumer min-idle-time start [COUNT n] [JUSTID]`
fn xautoclaim<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let min_idle = match parse_i64(c.arg(4)) {
        Some(n) => n.max(0),
        None => return c.error(b"ERR Invalid min-idle-time argument for XAUTOCLAIM"),
    };
    let start = match interval_id(c.arg(5), 0) {
        None => return c.error(INVALID_ID),
        Some((id, false)) => id,
        Some((id, true)) => match id.next() {
            Some(n) => n,
            None => return c.error(b"ERR invalid start ID for the interval"),
        },
    };
    let mut count: u64 = 100;
    let mut justid = false;
    let mut j = 6;
    let max_count = (i64::MAX / 16) as u64;
    while j < c.argc() {
        let more = c.argc() - 1 - j;
        if c.arg(j).eq_ignore_ascii_case(b"count") && more > 0 {
            match parse_i64(c.arg(j + 1)).and_then(|n| u64::try_from(n).ok()).filter(|n| (1..=max_count).contains(n)) {
                Some(n) => count = n,
                None => return c.error(b"ERR COUNT must be > 0"),
            }
            j += 1;
        } else if c.arg(j).eq_ignore_ascii_case(b"justid") {
            justid = true;
        } else {
            return c.error(SYNTAX_ERROR);
        }
        j += 1;
    }
    let (key, group_name, consumer_name) = (c.arg(1), c.arg(2), c.arg(3));
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    // Redis's lookup is a read's (counted as a hit or miss); the change follows.
    if stream_at(d, key, now).is_err() {
        return c.error(WRONGTYPE);
    }
    let stream = match stream_at_mut(d, key, now) {
        Err(()) => return c.error(WRONGTYPE),
        Ok(s) => s,
    };
    let Some((stream, mut group)) = stream.and_then(|s| s.groups.remove(group_name).map(|g| (s, g))) else {
        let msg = nogroup(key, group_name);
        return c.error(&msg);
    };
    let consumer = CompactBytes::new(consumer_name);
    let known = group.consumers.len();
    let journal = state.journal.on();
    let mut attempts = count * 10;
    let mut left = count;
    let mut claimed: Vec<(StreamId, Option<Vec<CompactBytes>>)> = Vec::new();
    let mut deleted: Vec<StreamId> = Vec::new();
    let mut cursor = start;
    let mut next_cursor = StreamId::MIN;
    loop {
        let candidate = group.pending.range(cursor..).next().map(|(id, p)| (*id, p.delivered_ms));
        if attempts == 0 || left == 0 {
            next_cursor = candidate.map_or(StreamId::MIN, |(id, _)| id);
            break;
        }
        attempts -= 1;
        let Some((id, delivered_ms)) = candidate else { break };
        cursor = match id.next() {
            Some(n) => n,
            None => StreamId::MAX,
        };
        let Some(fields) = stream.get(&id) else {
            if let Some(p) = forget(&mut group, id).filter(|_| journal) {
                // Replayed, the XCLAIM finds the entry gone too and drops it.
                propagate_claim(c, key, group_name, id, &p, group.last_id);
            }
            deleted.push(id);
            left -= 1;
            if id == StreamId::MAX {
                break;
            }
            continue;
        };
        if min_idle > 0 && now - delivered_ms < min_idle {
            if id == StreamId::MAX {
                break;
            }
            continue;
        }
        let deliveries = group.pending.get(&id).map_or(1, |p| p.deliveries);
        group.consumers.entry(consumer.clone()).or_default().seen_ms = now;
        hand_over(&mut group, id, &consumer, now, if justid { None } else { Some(deliveries + 1) });
        if let Some(p) = group.pending.get(&id).filter(|_| journal) {
            propagate_claim(c, key, group_name, id, p, group.last_id);
        }
        claimed.push((id, (!justid).then(|| fields.to_vec())));
        left -= 1;
        if id == StreamId::MAX {
            break;
        }
    }
    let created = group.consumers.len() > known;
    stream.groups.insert(CompactBytes::new(group_name), group);
    if created {
        announce(c, "xgroup-createconsumer", key);
    }
    // Every entry handed over or dropped is a change, as in Redis.
    c.count_changes((claimed.len() + deleted.len()) as u64);
    drop(shard);
    c.reply(|s| {
        s.array(3);
        s.bulk(&next_cursor.to_text());
        s.array(claimed.len());
        for (id, fields) in &claimed {
            match fields {
                Some(f) => write_entry(s, *id, f),
                None => s.bulk(&id.to_text()),
            }
        }
        s.array(deleted.len());
        for id in &deleted {
            s.bulk(&id.to_text());
        }
    });
}

/// Publish a consumer group or XSETID event without treating it as a
/// change of the key: Redis 7.0 neither fails the EXEC of a client watching
/// the key nor invalidates it for tracking clients on these. It does count
/// it in the change counter, and the journal records it.
fn announce<T: ReplyTarget>(c: &mut Ctx<'_, T>, event: &str, key: &[u8]) {
    c.count_changes(1);
    // It is a change all the same for the journal (called under the lock).
    c.note_change();
    crate::effects::changes::flush_server_events(c.state);
    crate::effects::changes::publish_event(c.state, EventClass::Stream, event, c.session.db, key);
}

/// `XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id]`
fn xsetid<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(id) = strict_id(c.arg(2)) else { return c.error(INVALID_ID) };
    let mut entries_added: Option<u64> = None;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < c.argc() {
        let more = c.argc() - 1 - i;
        let opt = c.arg(i);
        if opt.eq_ignore_ascii_case(b"entriesadded") && more > 0 {
            match parse_i64(c.arg(i + 1)) {
                None => return c.error(NOT_AN_INTEGER),
                Some(n) if n < 0 => return c.error(b"ERR entries_added must be positive"),
                Some(n) => entries_added = Some(n.unsigned_abs()),
            }
        } else if opt.eq_ignore_ascii_case(b"maxdeletedid") && more > 0 {
            match strict_id(c.arg(i + 1)) {
                None => return c.error(INVALID_ID),
                Some(m) if id < m => {
                    return c.error(b"ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
                }
                Some(m) => max_deleted = m,
            }
        } else {
            return c.error(SYNTAX_ERROR);
        }
        i += 2;
    }
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let stream = match stream_at_mut(shard.db(db), key, now_ms()) {
        Err(()) => return c.error(WRONGTYPE),
        Ok(None) => return c.error(NO_SUCH_KEY),
        Ok(Some(s)) => s,
    };
    if let Some((top, _)) = stream.range(StreamId::MIN, StreamId::MAX).next_back() {
        if id < top {
            return c.error(b"ERR The ID specified in XSETID is smaller than the target stream top item");
        }
        if entries_added.is_some_and(|n| (stream.len() as u64) > n) {
            return c.error(b"ERR The entries_added specified in XSETID is smaller than the target stream length");
        }
    }
    // Redis 7.0 lets the last id go below the largest deleted one; only
    // the top item and a given MAXDELETEDID bound it.
    stream.last_id = id;
    if let Some(n) = entries_added {
        stream.entries_added = n;
    }
    if max_deleted != StreamId::MIN {
        stream.max_deleted_id = max_deleted;
    }
    announce(c, "xsetid", key);
    drop(shard);
    c.ok();
}

/// The XGROUP subcommands that name a key and a group.
fn xgroup<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let sub = c.arg(1).to_ascii_lowercase();
    let (key, group_name) = (c.arg(2), c.arg(3));
    let argc = c.argc();
    let create = sub == b"create";
    let mut mkstream = false;
    let mut entries_read: Option<Option<u64>> = None;
    let mut i = 5;
    while i < argc {
        if create && c.arg(i).eq_ignore_ascii_case(b"mkstream") {
            mkstream = true;
            i += 1;
        } else if (create || sub == b"setid") && c.arg(i).eq_ignore_ascii_case(b"entriesread") && i + 1 < argc {
            match parse_i64(c.arg(i + 1)) {
                None => return c.error(NOT_AN_INTEGER),
                Some(-1) => entries_read = Some(None),
                Some(n) if n < 0 => return c.error(b"ERR value for ENTRIESREAD must be positive or -1"),
                Some(n) => entries_read = Some(Some(n.unsigned_abs())),
            }
            i += 2;
        } else {
            return unknown_subcommand_syntax(c);
        }
    }
    let now = now_ms();
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    let exists = match stream_for_write(d, key, now) {
        Err(()) => return c.error(WRONGTYPE),
        Ok(s) => s.map(|s| s.groups.contains_key(group_name)),
    };
    if !mkstream {
        match exists {
            None => {
                return c.error(b"ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
            }
            Some(false) if sub != b"create" && sub != b"destroy" => {
                return c.error(&no_such_group(group_name, key));
            }
            _ => {}
        }
    }
    let valid_argc = match sub.as_slice() {
        b"create" => (5..=8).contains(&argc),
        b"setid" => argc == 5 || argc == 7,
        b"destroy" => argc == 4,
        _ => argc == 5,
    };
    if !valid_argc {
        return unknown_subcommand_syntax(c);
    }
    let target_id = |s: Option<&StreamValue>| -> Option<StreamId> {
        match c.arg(4) {
            b"$" => Some(s.map_or(StreamId::MIN, |s| s.last_id)),
            text if sub == b"create" => strict_id(text),
            text => id_arg(text, 0),
        }
    };
    match sub.as_slice() {
        b"create" => {
            let Some(id) = target_id(stream_for_write(d, key, now).ok().flatten()) else { return c.error(INVALID_ID) };
            let Ok(stream) = stream_or_new(d, key, now) else { return c.error(WRONGTYPE) };
            let name = CompactBytes::new(group_name);
            if stream.groups.contains_key(&name) {
                return c.error(b"BUSYGROUP Consumer Group name already exists");
            }
            let read = entries_read.unwrap_or(None);
            stream.groups.insert(name, Group { last_id: id, entries_read: read, ..Group::default() });
            if exists.is_none() {
                // MKSTREAM made the key: that is a change.
                c.notify(EventClass::Stream, "xgroup-create", key);
            } else {
                announce(c, "xgroup-create", key);
            }
            drop(shard);
            propagate_resolved_id(c, id);
            c.ok();
        }
        b"setid" => {
            let Some(id) = target_id(stream_for_write(d, key, now).ok().flatten()) else { return c.error(INVALID_ID) };
            let mut set = false;
            if let Ok(Some(stream)) = stream_at_mut(d, key, now) {
                if let Some(g) = stream.groups.get_mut(group_name) {
                    g.last_id = id;
                    g.entries_read = entries_read.unwrap_or(None);
                    set = true;
                }
            }
            if set {
                announce(c, "xgroup-setid", key);
            }
            drop(shard);
            if set {
                propagate_resolved_id(c, id);
            }
            c.ok();
        }
        b"destroy" => {
            let removed = match stream_at_mut(d, key, now) {
                Ok(Some(s)) => s.groups.remove(group_name).is_some(),
                _ => false,
            };
            if removed {
                announce(c, "xgroup-destroy", key);
            }
            // Readers blocked on the group learn that it is gone.
            blocking::signal(c.state, db, key);
            drop(shard);
            c.reply(|s| s.integer(i64::from(removed)));
        }
        b"createconsumer" => {
            let consumer = CompactBytes::new(c.arg(4));
            let mut created = false;
            if let Ok(Some(stream)) = stream_at_mut(d, key, now) {
                if let Some(g) = stream.groups.get_mut(group_name) {
                    if let std::collections::btree_map::Entry::Vacant(slot) = g.consumers.entry(consumer) {
                        slot.insert(Consumer { seen_ms: now, ..Consumer::default() });
                        created = true;
                    }
                }
            }
            if created {
                announce(c, "xgroup-createconsumer", key);
            }
            drop(shard);
            c.reply(|s| s.integer(i64::from(created)));
        }
        _ => {
            let mut pending = 0;
            let mut removed = false;
            if let Ok(Some(stream)) = stream_at_mut(d, key, now) {
                if let Some(g) = stream.groups.get_mut(group_name) {
                    if let Some(cons) = g.consumers.remove(c.arg(4)) {
                        removed = true;
                        pending = cons.pending.len();
                        for id in &cons.pending {
                            g.pending.remove(id);
                        }
                    }
                }
            }
            if removed {
                announce(c, "xgroup-delconsumer", key);
            }
            drop(shard);
            c.reply(|s| s.integer(i64::try_from(pending).unwrap_or(i64::MAX)));
        }
    }
}

/// For XGROUP CREATE or SETID given `$`, which resolved to `id`: propagate
/// the request with `id` in its place, after the change took its place
/// under the lock.
///
/// Redis 7.0 writes `$` as it came. Replayed, `$` reads the stream as the
/// records before it left it, which is the stream this command saw, so
/// either redoes the same; the id does without that reasoning, and reads
/// plainly in the file.
fn propagate_resolved_id<T: ReplyTarget>(c: &mut Ctx<'_, T>, id: StreamId) {
    if c.arg(4) != b"$" || !c.state.journal.on() {
        return;
    }
    let id = id.to_text();
    let args: Vec<&[u8]> = (0..c.argc()).map(|i| if i == 4 { &id[..] } else { c.arg(i) }).collect();
    c.propagate(&args);
}

fn xgroup_help<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    help(
        c,
        &[
            "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ],
    );
}

fn xinfo_help<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    help(
        c,
        &[
            "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ],
    );
}

/// A copy of a stream for XINFO, taken under the lock and formatted after.
fn snapshot<T: ReplyTarget>(c: &Ctx<'_, T>, key: &[u8]) -> Result<StreamValue, &'static [u8]> {
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    match stream_at(shard.db(db), key, now_ms()) {
        Err(()) => Err(WRONGTYPE),
        Ok(None) => Err(NO_SUCH_KEY),
        Ok(Some(s)) => Ok(s.clone()),
    }
}

/// `XINFO STREAM key [FULL [COUNT n]]`
fn xinfo_stream<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let argc = c.argc();
    let mut full = None;
    if argc > 3 {
        if (argc != 4 && argc != 6) || !c.arg(3).eq_ignore_ascii_case(b"full") {
            return unknown_subcommand_syntax(c);
        }
        let mut count: i64 = 10;
        if argc == 6 {
            if !c.arg(4).eq_ignore_ascii_case(b"count") {
                return unknown_subcommand_syntax(c);
            }
            match parse_i64(c.arg(5)) {
                Some(n) if n < 0 => count = 10,
                Some(n) => count = n,
                None => return c.error(NOT_AN_INTEGER),
            }
        }
        full = Some(usize::try_from(count).unwrap_or(usize::MAX));
    }
    let s = match snapshot(c, c.arg(2)) {
        Ok(s) => s,
        Err(msg) => return c.error(msg),
    };
    c.reply(|out| write_stream_info(out, &s, full));
}

fn write_stream_info(out: &mut dyn ReplySink, s: &StreamValue, full: Option<usize>) {
    out.map(if full.is_some() { 9 } else { 10 });
    out.bulk(b"length");
    out.integer(s.len() as i64);
    out.bulk(b"radix-tree-keys");
    out.integer(s.node_count() as i64);
    out.bulk(b"radix-tree-nodes");
    out.integer(radix_nodes_estimate(s));
    out.bulk(b"last-generated-id");
    out.bulk(&s.last_id.to_text());
    out.bulk(b"max-deleted-entry-id");
    out.bulk(&s.max_deleted_id.to_text());
    out.bulk(b"entries-added");
    out.integer(i64::try_from(s.entries_added).unwrap_or(i64::MAX));
    out.bulk(b"recorded-first-entry-id");
    out.bulk(&s.first_id().to_text());
    let all = || s.range(StreamId::MIN, StreamId::MAX);
    let Some(count) = full else {
        out.bulk(b"groups");
        out.integer(s.groups.len() as i64);
        out.bulk(b"first-entry");
        match all().next() {
            Some((id, f)) => write_entry(out, id, f),
            None => out.null(),
        }
        out.bulk(b"last-entry");
        match all().next_back() {
            Some((id, f)) => write_entry(out, id, f),
            None => out.null(),
        }
        return;
    };
    let limit = if count == 0 { usize::MAX } else { count };
    out.bulk(b"entries");
    let entries: Vec<_> = all().take(limit).collect();
    out.array(entries.len());
    for (id, f) in entries {
        write_entry(out, id, f);
    }
    out.bulk(b"groups");
    out.array(s.groups.len());
    for (name, g) in &s.groups {
        out.map(7);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"last-delivered-id");
        out.bulk(&g.last_id.to_text());
        write_read_and_lag(out, s, g);
        out.bulk(b"pel-count");
        out.integer(g.pending.len() as i64);
        out.bulk(b"pending");
        let pel: Vec<_> = g.pending.iter().take(limit).collect();
        out.array(pel.len());
        for (id, p) in pel {
            out.array(4);
            out.bulk(&id.to_text());
            out.bulk(&p.consumer);
            out.integer(p.delivered_ms);
            out.integer(i64::try_from(p.deliveries).unwrap_or(i64::MAX));
        }
        out.bulk(b"consumers");
        out.array(g.consumers.len());
        for (cname, cons) in &g.consumers {
            out.map(4);
            out.bulk(b"name");
            out.bulk(cname);
            out.bulk(b"seen-time");
            out.integer(cons.seen_ms);
            out.bulk(b"pel-count");
            out.integer(cons.pending.len() as i64);
            out.bulk(b"pending");
            let ids: Vec<_> = cons.pending.iter().take(limit).collect();
            out.array(ids.len());
            for id in ids {
                let p = g.pending.get(id);
                out.array(3);
                out.bulk(&id.to_text());
                out.integer(p.map_or(0, |p| p.delivered_ms));
                out.integer(p.map_or(0, |p| i64::try_from(p.deliveries).unwrap_or(i64::MAX)));
            }
        }
    }
}

/// Redis reports the node count of its radix tree, an internal figure with
/// no equivalent here; kvik reports one more than the number of macro
/// nodes, what a tree holding them needs at least.
fn radix_nodes_estimate(s: &StreamValue) -> i64 {
    s.node_count() as i64 + 1
}

fn write_read_and_lag(out: &mut dyn ReplySink, s: &StreamValue, g: &Group) {
    out.bulk(b"entries-read");
    match g.entries_read {
        Some(n) => out.integer(i64::try_from(n).unwrap_or(i64::MAX)),
        None => out.null(),
    }
    out.bulk(b"lag");
    match s.lag(g) {
        Some(n) => out.integer(n),
        None => out.null(),
    }
}

/// `XINFO GROUPS key`
fn xinfo_groups<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let s = match snapshot(c, c.arg(2)) {
        Ok(s) => s,
        Err(msg) => return c.error(msg),
    };
    c.reply(|out| {
        out.array(s.groups.len());
        for (name, g) in &s.groups {
            out.map(6);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"consumers");
            out.integer(g.consumers.len() as i64);
            out.bulk(b"pending");
            out.integer(g.pending.len() as i64);
            out.bulk(b"last-delivered-id");
            out.bulk(&g.last_id.to_text());
            write_read_and_lag(out, &s, g);
        }
    });
}

/// `XINFO CONSUMERS key group`
fn xinfo_consumers<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (key, group_name) = (c.arg(2), c.arg(3));
    let s = match snapshot(c, key) {
        Ok(s) => s,
        Err(msg) => return c.error(msg),
    };
    let Some(g) = s.groups.get(group_name) else {
        return c.error(&no_such_group(group_name, key));
    };
    let now = now_ms();
    c.reply(|out| {
        out.array(g.consumers.len());
        for (name, cons) in &g.consumers {
            out.map(3);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"pending");
            out.integer(cons.pending.len() as i64);
            out.bulk(b"idle");
            out.integer((now - cons.seen_ms).max(0));
        }
    });
}
