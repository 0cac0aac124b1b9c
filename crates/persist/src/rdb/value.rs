//! One value in RDB form: its type byte and body, as redis-server 7.0.15
//! writes them, and back from every encoding RDB versions 6 to 10 hold.
//!
//! Written encodings follow kvik's own, which are Redis 7.0's: strings as
//! integers, LZF or raw bytes; every list as `quicklist 2` (listpack nodes
//! of up to 8 KB, Redis's default `list-max-listpack-size -2`); hashes and
//! sorted sets as `listpack` while small, else as tables (a sorted set
//! from its highest score down, as Redis writes it); sets as `intset` or
//! tables; streams as `stream listpacks 2` (nodes of up to 100 entries and
//! 4 KB, Redis's defaults).
//!
//! A loaded value gets the encoding the limits in force give it, as Redis
//! converts on load, and is checked for what kvik's types rely on: no
//! duplicate members or fields, no NaN score, stream ids ascending, every
//! pending entry owned by a consumer. An empty value is reported as such
//! (`Ok(None)`): Redis skips empty keys in a file and refuses them in a
//! payload.

use std::borrow::Cow;

use kvik_store::types::compact::CompactBytes;
use kvik_store::types::double::strtod;
use kvik_store::types::hash::{HashLimits, HashRef, HashValue};
use kvik_store::types::list::{ListRef, ListValue};
use kvik_store::types::member_table::{Inserted, MemberTable};
use kvik_store::types::set::SetValue;
use kvik_store::types::stream::{Consumer, Group, NodeLimits, Pending, StreamId, StreamValue};
use kvik_store::types::string::{StrRef, StrValue};
use kvik_store::types::zset::ZSetValue;
use kvik_store::types::{Value, ValueRef};

use super::listpack::{self, Item};
use super::read::Input;
use super::write::{put_binary_double, put_int, put_len, put_ms, put_string};
use super::{kind, packed, RdbError};

/// Bytes of one list node's listpack before a new node starts.
const LIST_NODE_BYTES: usize = 8192;
/// Most items reserved ahead from a count read from the input: a count
/// is checked against the bytes left, but an item in memory is larger
/// than its least size on disk, so reserving for the whole count at once
/// could ask for many times the input; past this the vector grows as
/// items actually arrive.
const RESERVE_LIMIT: usize = 4096;

/// How many times the node's own size the field names that stream entries
/// take from their node's master entry may add up to (plus
/// [`COPIED_ALLOWANCE`]): kvik keeps the names with every entry, where
/// Redis shares one copy per node, so without a bound a payload of a few
/// hundred KB could unfold into gigabytes.
const COPIED_RATIO: usize = 64;
/// See [`COPIED_RATIO`].
const COPIED_ALLOWANCE: usize = 1 << 20;

/// Entries of one stream node before a new node starts.
const STREAM_NODE_ENTRIES: usize = 100;
/// Bytes of one stream node's listpack before a new node starts.
const STREAM_NODE_BYTES: usize = 4096;

/// `container` of a quicklist node holding one large element as it is.
const NODE_PLAIN: u64 = 1;
/// `container` of a quicklist node holding a listpack.
const NODE_PACKED: u64 = 2;

/// A stream entry flag: deleted, kept until its node is rewritten.
const ENTRY_DELETED: i64 = 1;
/// A stream entry flag: the fields are the node's master fields.
const ENTRY_SAME_FIELDS: i64 = 2;

/// The encoding limits a loaded value is fitted to (the server's
/// `*-max-listpack-*`, `set-max-intset-entries`, `stream-node-max-*`).
#[derive(Debug, Clone, Copy)]
pub struct LoadLimits {
    /// `hash-max-listpack-entries` / `-value`.
    pub hash: HashLimits,
    /// `set-max-intset-entries`.
    pub set_max_intset_entries: usize,
    /// `zset-max-listpack-entries`.
    pub zset_max_entries: usize,
    /// `zset-max-listpack-value`.
    pub zset_max_value: usize,
    /// `stream-node-max-entries` / `-bytes`.
    pub stream: NodeLimits,
}

impl Default for LoadLimits {
    /// Redis's defaults.
    fn default() -> Self {
        LoadLimits {
            hash: HashLimits::default(),
            set_max_intset_entries: 512,
            zset_max_entries: 128,
            zset_max_value: 64,
            stream: NodeLimits { max_entries: 100, max_bytes: 4096 },
        }
    }
}

/// Append `value`'s body to `out` and return its type byte.
pub fn write_value(out: &mut Vec<u8>, value: ValueRef<'_>, compress: bool) -> u8 {
    match value {
        ValueRef::Str(StrRef::Int(n)) => {
            put_int(out, n);
            kind::STRING
        }
        ValueRef::Str(StrRef::Bytes(b) | StrRef::Raw(b)) => {
            put_string(out, b, compress);
            kind::STRING
        }
        ValueRef::List(list) => {
            write_list(out, list, compress);
            kind::LIST_QUICKLIST_2
        }
        ValueRef::Hash(hash) => write_hash(out, hash, compress),
        ValueRef::Set(set) => write_set(out, set, compress),
        ValueRef::ZSet(z) => write_zset(out, z, compress),
        ValueRef::Stream(s) => {
            write_stream(out, s, compress);
            kind::STREAM_LISTPACKS_2
        }
    }
}

fn write_list(out: &mut Vec<u8>, list: ListRef<'_>, compress: bool) {
    let mut nodes: Vec<Vec<u8>> = Vec::new();
    let mut node = listpack::Writer::new();
    for item in list.iter() {
        if !node.is_empty() && node.bytes() + item.len() + 11 > LIST_NODE_BYTES {
            nodes.push(std::mem::take(&mut node).finish());
        }
        node.push(item);
    }
    if !node.is_empty() {
        nodes.push(node.finish());
    }
    put_len(out, nodes.len() as u64);
    for lp in &nodes {
        put_len(out, NODE_PACKED);
        put_string(out, lp, compress);
    }
}

fn write_hash(out: &mut Vec<u8>, hash: HashRef<'_>, compress: bool) -> u8 {
    if hash.encoding() == "listpack" {
        let mut lp = listpack::Writer::new();
        for (f, v) in hash.iter() {
            lp.push(f);
            lp.push(v);
        }
        put_string(out, &lp.finish(), compress);
        return kind::HASH_LISTPACK;
    }
    put_len(out, hash.len() as u64);
    for (f, v) in hash.iter() {
        put_string(out, f, compress);
        put_string(out, v, compress);
    }
    kind::HASH
}

fn write_set(out: &mut Vec<u8>, set: &SetValue, compress: bool) -> u8 {
    match set {
        SetValue::Ints(ints) => {
            put_string(out, &packed::intset(ints), compress);
            kind::SET_INTSET
        }
        SetValue::Table(members, _) => {
            put_len(out, members.len() as u64);
            for m in members.members() {
                put_string(out, m, compress);
            }
            kind::SET
        }
    }
}

fn write_zset(out: &mut Vec<u8>, z: &ZSetValue, compress: bool) -> u8 {
    if !z.is_large() {
        let mut lp = listpack::Writer::new();
        let mut text = Vec::new();
        for (member, score) in z.iter() {
            lp.push(member);
            text.clear();
            kvik_protocol::number::write_double_g17(&mut text, score);
            lp.push(&text);
        }
        put_string(out, &lp.finish(), compress);
        return kind::ZSET_LISTPACK;
    }
    put_len(out, z.len() as u64);
    // From the tail, as Redis writes a skiplist.
    for (member, score) in z.iter().rev() {
        put_string(out, member, compress);
        put_binary_double(out, score);
    }
    kind::ZSET_2
}

/// A stream id's 16 bytes: milliseconds then sequence, big endian.
fn raw_id(id: StreamId) -> [u8; 16] {
    let mut raw = [0u8; 16];
    raw[..8].copy_from_slice(&id.ms.to_be_bytes());
    raw[8..].copy_from_slice(&id.seq.to_be_bytes());
    raw
}

fn write_stream(out: &mut Vec<u8>, s: &StreamValue, compress: bool) {
    let nodes = stream_nodes(s);
    put_len(out, nodes.len() as u64);
    for (master, lp) in &nodes {
        put_string(out, &raw_id(*master), compress);
        put_string(out, lp, compress);
    }
    put_len(out, s.len() as u64);
    let first = if s.is_empty() { StreamId::MIN } else { s.first_id() };
    for id in [s.last_id, first, s.max_deleted_id] {
        put_len(out, id.ms);
        put_len(out, id.seq);
    }
    put_len(out, s.entries_added);
    put_len(out, s.groups.len() as u64);
    for (name, g) in &s.groups {
        put_string(out, name, compress);
        put_len(out, g.last_id.ms);
        put_len(out, g.last_id.seq);
        // Redis writes an unknown counter as -1, read back as a length.
        put_len(out, g.entries_read.unwrap_or(u64::MAX));
        put_len(out, g.pending.len() as u64);
        for (id, p) in &g.pending {
            out.extend_from_slice(&raw_id(*id));
            put_ms(out, p.delivered_ms);
            put_len(out, p.deliveries);
        }
        put_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            put_string(out, cname, compress);
            put_ms(out, c.seen_ms);
            put_len(out, c.pending.len() as u64);
            for id in &c.pending {
                out.extend_from_slice(&raw_id(*id));
            }
        }
    }
}

/// The stream's live entries laid out in nodes: `(master id, listpack)`.
fn stream_nodes(s: &StreamValue) -> Vec<(StreamId, Vec<u8>)> {
    let mut nodes = Vec::new();
    let mut entries = s.range(StreamId::MIN, StreamId::MAX).peekable();
    while let Some(&(master, master_fields)) = entries.peek() {
        let names: Vec<&[u8]> = master_fields.iter().step_by(2).map(|f| &f[..]).collect();
        let mut body = listpack::Writer::new();
        let mut count = 0usize;
        while let Some(&(id, fields)) = entries.peek() {
            let size: usize = fields.iter().map(|f| f.len() + 2).sum::<usize>() + 16;
            if count == STREAM_NODE_ENTRIES || (count > 0 && body.bytes() + size > STREAM_NODE_BYTES) {
                break;
            }
            entries.next();
            let pairs = fields.len() / 2;
            let same = pairs == names.len() && fields.iter().step_by(2).zip(&names).all(|(f, n)| &f[..] == *n);
            body.push_int(if same { ENTRY_SAME_FIELDS } else { 0 });
            body.push_int(id.ms.wrapping_sub(master.ms) as i64);
            body.push_int(id.seq.wrapping_sub(master.seq) as i64);
            if same {
                fields.iter().skip(1).step_by(2).for_each(|v| body.push(v));
                body.push_int(pairs as i64 + 3);
            } else {
                body.push_int(pairs as i64);
                fields.iter().for_each(|f| body.push(f));
                body.push_int(2 * pairs as i64 + 4);
            }
            count += 1;
        }
        // The master entry goes first: live count, deleted count, the field names, 0.
        let mut lp = listpack::Writer::new();
        lp.push_int(count as i64);
        lp.push_int(0);
        lp.push_int(names.len() as i64);
        names.iter().for_each(|n| lp.push(n));
        lp.push_int(0);
        nodes.push((master, join_listpacks(lp, body)));
    }
    nodes
}

/// The listpack of `head`'s elements followed by `tail`'s.
fn join_listpacks(head: listpack::Writer, tail: listpack::Writer) -> Vec<u8> {
    let count = head.len() + tail.len();
    let head = head.finish();
    let tail = tail.finish();
    let mut out = Vec::with_capacity(head.len() + tail.len());
    out.extend_from_slice(&head[..head.len() - 1]);
    out.extend_from_slice(&tail[6..]);
    let total = u32::try_from(out.len()).unwrap_or(u32::MAX);
    out[..4].copy_from_slice(&total.to_le_bytes());
    out[4..6].copy_from_slice(&u16::try_from(count).unwrap_or(u16::MAX).to_le_bytes());
    out
}

// ------------------------------------------------------------------ reading

const BAD_LISTPACK: RdbError = RdbError::Bad("listpack");

fn listpack_items(blob: &[u8]) -> Result<Vec<Item<'_>>, RdbError> {
    listpack::Reader::new(blob).and_then(listpack::Reader::collect_all).map_err(|_| BAD_LISTPACK)
}

/// Read a value of type `kind` from `r`; `Ok(None)` for an empty one.
pub fn read_value(r: &mut Input<'_>, kind: u8, limits: &LoadLimits) -> Result<Option<Value>, RdbError> {
    Ok(Some(match kind {
        kind::STRING => Value::Str(StrValue::from_bytes(&r.string()?)),
        kind::LIST => {
            let n = r.count(1)?;
            let items = (0..n).map(|_| r.string()).collect::<Result<Vec<_>, _>>()?;
            return Ok(list_of(items.iter().map(|i| &i[..])));
        }
        kind::LIST_ZIPLIST => {
            let blob = r.string()?;
            let items = packed::read_ziplist(&blob)?;
            return Ok(list_of(items.iter().map(|i| i.to_bytes()).collect::<Vec<_>>().iter().map(|v| &v[..])));
        }
        kind::LIST_QUICKLIST | kind::LIST_QUICKLIST_2 => return read_quicklist(r, kind == kind::LIST_QUICKLIST_2),
        kind::SET => return read_table_set(r, limits),
        kind::SET_LISTPACK => {
            let blob = r.string()?;
            let members: Vec<Vec<u8>> = listpack_items(&blob)?.iter().map(|i| i.to_bytes()).collect();
            return set_of_members(members.iter().map(|m| &m[..]), members.len(), limits);
        }
        kind::SET_INTSET => {
            let ints = packed::read_intset(&r.string()?)?;
            return Ok(set_of_ints(ints, limits));
        }
        kind::ZSET | kind::ZSET_2 => {
            // A member of at least one byte and a score of at least one (8 in ZSET_2).
            let n = r.count(if kind == kind::ZSET_2 { 9 } else { 2 })?;
            let mut pairs = Vec::with_capacity(n.min(RESERVE_LIMIT));
            for _ in 0..n {
                let member = r.string()?.into_owned();
                let score = if kind == kind::ZSET_2 { r.binary_double()? } else { r.text_double()? };
                pairs.push((member, score));
            }
            return zset_of(pairs.iter().map(|(m, s)| (&m[..], *s)), n, limits);
        }
        kind::ZSET_ZIPLIST | kind::ZSET_LISTPACK => {
            let blob = r.string()?;
            let items = if kind == kind::ZSET_LISTPACK { listpack_items(&blob)? } else { packed::read_ziplist(&blob)? };
            if items.len() % 2 != 0 {
                return Err(RdbError::Bad("sorted set listpack"));
            }
            let mut pairs = Vec::with_capacity(items.len() / 2);
            for pair in items.chunks_exact(2) {
                pairs.push((pair[0].to_bytes(), item_score(pair[1])?));
            }
            return zset_of(pairs.iter().map(|(m, s)| (&m[..], *s)), pairs.len(), limits);
        }
        kind::HASH => {
            let n = r.count(2)?;
            let mut pairs = Vec::with_capacity(n.min(RESERVE_LIMIT));
            for _ in 0..n {
                pairs.push((r.string()?, r.string()?));
            }
            return hash_of(pairs.iter().map(|(f, v)| (&f[..], &v[..])), limits);
        }
        kind::HASH_ZIPMAP => {
            let blob = r.string()?;
            let pairs = packed::read_zipmap(&blob)?;
            return hash_of(pairs.into_iter(), limits);
        }
        kind::HASH_ZIPLIST | kind::HASH_LISTPACK => {
            let blob = r.string()?;
            let items = if kind == kind::HASH_LISTPACK { listpack_items(&blob)? } else { packed::read_ziplist(&blob)? };
            if items.len() % 2 != 0 {
                return Err(RdbError::Bad("hash listpack"));
            }
            let owned: Vec<Vec<u8>> = items.iter().map(|i| i.to_bytes()).collect();
            return hash_of(owned.chunks_exact(2).map(|p| (&p[0][..], &p[1][..])), limits);
        }
        kind::STREAM_LISTPACKS => Value::Stream(Box::new(read_stream(r, 1, limits)?)),
        kind::STREAM_LISTPACKS_2 => Value::Stream(Box::new(read_stream(r, 2, limits)?)),
        kind::STREAM_LISTPACKS_3 => Value::Stream(Box::new(read_stream(r, 3, limits)?)),
        kind::MODULE_PRE_GA | kind::MODULE_2 => return Err(RdbError::Unsupported("module value")),
        _ => return Err(RdbError::Bad("value type")),
    }))
}

fn list_of<'a>(items: impl Iterator<Item = &'a [u8]>) -> Option<Value> {
    let mut list = ListValue::new();
    for item in items {
        list.push(false, item);
    }
    (!list.is_empty()).then(|| Value::List(Box::new(list)))
}

fn read_quicklist(r: &mut Input<'_>, version_2: bool) -> Result<Option<Value>, RdbError> {
    let nodes = r.count(2)?;
    let mut list = ListValue::new();
    for _ in 0..nodes {
        let container = if version_2 { r.len()? } else { NODE_PACKED };
        let blob = r.string()?;
        match container {
            NODE_PLAIN => list.push(false, &blob),
            NODE_PACKED => {
                let items = if version_2 { listpack_items(&blob)? } else { packed::read_ziplist(&blob)? };
                let mut text = Vec::new();
                for item in items {
                    match item {
                        Item::Str(s) => list.push(false, s),
                        Item::Int(n) => {
                            text.clear();
                            text.extend_from_slice(n.to_string().as_bytes());
                            list.push(false, &text);
                        }
                    }
                }
            }
            _ => return Err(RdbError::Bad("quicklist node container")),
        }
    }
    Ok((!list.is_empty()).then(|| Value::List(Box::new(list))))
}

fn read_table_set(r: &mut Input<'_>, limits: &LoadLimits) -> Result<Option<Value>, RdbError> {
    let n = r.count(1)?;
    let members = (0..n).map(|_| r.string()).collect::<Result<Vec<Cow<'_, [u8]>>, _>>()?;
    set_of_members(members.iter().map(|m| &m[..]), n, limits)
}

/// A set of `n` members: an intset when every member is an integer and
/// they fit `set-max-intset-entries`, else a table.
fn set_of_members<'a>(
    members: impl Iterator<Item = &'a [u8]> + Clone,
    n: usize,
    limits: &LoadLimits,
) -> Result<Option<Value>, RdbError> {
    if n <= limits.set_max_intset_entries {
        let ints: Option<Vec<i64>> = members.clone().map(listpack::canonical_i64).collect();
        if let Some(mut ints) = ints {
            ints.sort_unstable();
            if ints.windows(2).any(|w| w[0] == w[1]) {
                return Err(RdbError::Bad("set: duplicate member"));
            }
            return Ok((!ints.is_empty()).then(|| Value::Set(Box::new(SetValue::Ints(ints)))));
        }
    }
    let mut table = MemberTable::with_capacity(n.min(RESERVE_LIMIT));
    for m in members {
        if let Inserted::Replaced(()) = table.insert(m, ()) {
            return Err(RdbError::Bad("set: duplicate member"));
        }
    }
    Ok((!table.is_empty()).then(|| Value::Set(Box::new(SetValue::table(table)))))
}

fn set_of_ints(ints: Vec<i64>, limits: &LoadLimits) -> Option<Value> {
    if ints.is_empty() {
        return None;
    }
    if ints.len() <= limits.set_max_intset_entries {
        return Some(Value::Set(Box::new(SetValue::Ints(ints))));
    }
    let mut table = MemberTable::with_capacity(ints.len());
    for n in ints {
        table.insert(n.to_string().as_bytes(), ());
    }
    Some(Value::Set(Box::new(SetValue::table(table))))
}

/// A score stored in a listpack or ziplist: an integer, or text `strtod` reads.
fn item_score(item: Item<'_>) -> Result<f64, RdbError> {
    let score = match item {
        Item::Int(n) => n as f64,
        Item::Str(s) => strtod(s).map(|p| p.value).ok_or(RdbError::Bad("sorted set score"))?,
    };
    if score.is_nan() {
        return Err(RdbError::Bad("sorted set score"));
    }
    Ok(score)
}

/// A sorted set of `n` members, in the encoding picked before the first
/// insert from all of them, as Redis picks it after loading: starting
/// small and growing midway would pass the first members through the
/// small encoding, which keeps a score as text and loses the sign of a
/// zero.
fn zset_of<'a>(
    pairs: impl Iterator<Item = (&'a [u8], f64)> + Clone,
    n: usize,
    limits: &LoadLimits,
) -> Result<Option<Value>, RdbError> {
    let longest = pairs.clone().map(|(m, _)| m.len()).max().unwrap_or(0);
    let large = n > limits.zset_max_entries || longest > limits.zset_max_value;
    let mut z = if large { ZSetValue::new_large() } else { ZSetValue::new() };
    for (member, score) in pairs {
        if score.is_nan() {
            return Err(RdbError::Bad("sorted set score"));
        }
        if z.insert(member, score).is_some() {
            return Err(RdbError::Bad("sorted set: duplicate member"));
        }
    }
    Ok((!z.is_empty()).then(|| Value::ZSet(Box::new(z))))
}

fn hash_of<'a>(
    pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    limits: &LoadLimits,
) -> Result<Option<Value>, RdbError> {
    let mut hash = HashValue::new();
    // A table while loading keeps the duplicate check linear; `conform`
    // then picks the encoding.
    hash.grow_if_needed(0, 0, 1);
    for (f, v) in pairs {
        if !hash.insert(f, v) {
            return Err(RdbError::Bad("hash: duplicate field"));
        }
    }
    if hash.is_empty() {
        return Ok(None);
    }
    hash.conform(limits.hash);
    Ok(Some(Value::Hash(Box::new(hash))))
}

fn id_from_lens(r: &mut Input<'_>) -> Result<StreamId, RdbError> {
    Ok(StreamId { ms: r.len()?, seq: r.len()? })
}

fn read_raw_id(r: &mut Input<'_>) -> Result<StreamId, RdbError> {
    let (ms, seq) = r.raw_id()?;
    Ok(StreamId { ms, seq })
}

/// A stream of type version `version`: 1 (`stream listpacks`), 2 (adds the
/// first id, the largest deleted id, the entries ever added and a group's
/// read counter) or 3 (adds a consumer's active time, which kvik, keeping
/// Redis 7.0's model, does not hold).
fn read_stream(r: &mut Input<'_>, version: u8, limits: &LoadLimits) -> Result<StreamValue, RdbError> {
    let version_2 = version >= 2;
    let bad = RdbError::Bad("stream");
    let mut s = StreamValue::new();
    let nodes = r.count(2)?;
    for _ in 0..nodes {
        let key = r.string()?;
        let master = match <[u8; 16]>::try_from(&key[..]) {
            Ok(raw) => read_raw_id(&mut Input::new(&raw))?,
            Err(_) => return Err(bad.clone()),
        };
        let blob = r.string()?;
        let budget = blob.len().saturating_mul(COPIED_RATIO).saturating_add(COPIED_ALLOWANCE);
        read_stream_node(&mut s, master, &listpack_items(&blob)?, limits.stream, budget)?;
    }
    let length = r.len()?;
    let last_id = id_from_lens(r)?;
    let (max_deleted, entries_added) = if version_2 {
        let _first = id_from_lens(r)?;
        (id_from_lens(r)?, r.len()?)
    } else {
        (StreamId::MIN, length)
    };
    if s.len() as u64 != length || (!s.is_empty() && s.last_id > last_id) || entries_added < length {
        return Err(bad);
    }
    s.last_id = last_id;
    s.max_deleted_id = max_deleted;
    s.entries_added = entries_added;
    for _ in 0..r.count(4)? {
        let name = CompactBytes::new(&r.string()?);
        let last_id = id_from_lens(r)?;
        let entries_read =
            if version_2 { Some(r.len()?).filter(|&n| n != u64::MAX) } else { s.entries_read_at(last_id) };
        let mut g = Group { last_id, entries_read, ..Group::default() };
        let mut owners: std::collections::BTreeMap<StreamId, Option<CompactBytes>> = Default::default();
        let mut times = Vec::new();
        for _ in 0..r.count(18)? {
            let id = read_raw_id(r)?;
            let delivered_ms = r.ms()?;
            let deliveries = r.len()?;
            if owners.insert(id, None).is_some() {
                return Err(RdbError::Bad("stream: duplicate pending entry"));
            }
            times.push((id, delivered_ms, deliveries));
        }
        for _ in 0..r.count(10)? {
            let cname = CompactBytes::new(&r.string()?);
            let seen_ms = r.ms()?;
            if version >= 3 {
                r.ms()?;
            }
            let mut consumer = Consumer { seen_ms, ..Consumer::default() };
            for _ in 0..r.count(16)? {
                let id = read_raw_id(r)?;
                match owners.get_mut(&id) {
                    Some(owner @ None) => *owner = Some(cname.clone()),
                    _ => return Err(RdbError::Bad("stream: consumer pending entry")),
                }
                consumer.pending.insert(id);
            }
            if g.consumers.insert(cname, consumer).is_some() {
                return Err(RdbError::Bad("stream: duplicate consumer"));
            }
        }
        for (id, delivered_ms, deliveries) in times {
            let consumer =
                owners.remove(&id).flatten().ok_or(RdbError::Bad("stream: pending entry without consumer"))?;
            g.pending.insert(id, Pending { consumer, delivered_ms, deliveries });
        }
        if s.groups.insert(name, g).is_some() {
            return Err(RdbError::Bad("stream: duplicate group"));
        }
    }
    Ok(s)
}

/// Append the live entries of one stream node to `s`; the master's field
/// names its entries take may add up to `budget` bytes.
fn read_stream_node(
    s: &mut StreamValue,
    master: StreamId,
    items: &[Item<'_>],
    limits: NodeLimits,
    mut budget: usize,
) -> Result<(), RdbError> {
    let bad = RdbError::Bad("stream node");
    let mut it = items.iter().copied();
    let int = |it: &mut dyn Iterator<Item = Item<'_>>| it.next().and_then(Item::as_i64).ok_or(bad.clone());
    let live = int(&mut it)?;
    let deleted = int(&mut it)?;
    let names_len = usize::try_from(int(&mut it)?).map_err(|_| bad.clone())?;
    if names_len > items.len() {
        return Err(bad);
    }
    let names: Vec<Vec<u8>> =
        (0..names_len).map(|_| it.next().map(Item::to_bytes).ok_or(bad.clone())).collect::<Result<_, _>>()?;
    if int(&mut it)? != 0 {
        return Err(bad);
    }
    let (mut seen_live, mut seen_deleted) = (0i64, 0i64);
    while let Some(flags) = it.next() {
        let flags = flags.as_i64().ok_or(bad.clone())?;
        let ms = master.ms.wrapping_add(int(&mut it)? as u64);
        let seq = master.seq.wrapping_add(int(&mut it)? as u64);
        let id = StreamId { ms, seq };
        let mut fields: Vec<Vec<u8>> = Vec::new();
        if flags & ENTRY_SAME_FIELDS != 0 {
            let copied: usize = names.iter().map(Vec::len).sum();
            budget = budget
                .checked_sub(copied)
                .ok_or(RdbError::Bad("stream node: field names repeated past any real stream"))?;
            for name in &names {
                fields.push(name.clone());
                fields.push(it.next().map(Item::to_bytes).ok_or(bad.clone())?);
            }
        } else {
            let pairs = usize::try_from(int(&mut it)?).map_err(|_| bad.clone())?;
            if pairs > items.len() {
                return Err(bad);
            }
            for _ in 0..2 * pairs {
                fields.push(it.next().map(Item::to_bytes).ok_or(bad.clone())?);
            }
        }
        let _lp_count = int(&mut it)?;
        if flags & ENTRY_DELETED != 0 {
            seen_deleted += 1;
            continue;
        }
        seen_live += 1;
        if fields.is_empty() || id == StreamId::MIN || (!s.is_empty() && id <= s.last_id) {
            return Err(bad);
        }
        let refs: Vec<&[u8]> = fields.iter().map(|f| &f[..]).collect();
        s.append(id, &refs, limits);
    }
    if seen_live != live || seen_deleted != deleted {
        return Err(bad);
    }
    Ok(())
}
