//! Stream values: entries ordered by id, consumer groups with their pending
//! entries.
//!
//! Entries live in an ordered map from id to fields. Redis stores them in
//! macro nodes (listpacks of up to `stream-node-max-entries` entries and
//! `stream-node-max-bytes` bytes) and that layout shows through its
//! behaviour: `MAXLEN ~`/`MINID ~` trimming removes whole nodes only, and
//! `XINFO STREAM` reports the node count. kvik keeps a model of the nodes —
//! for each, its first id, live and deleted counts, its last id and its
//! exact listpack size as Redis would encode it — so approximate trimming
//! removes exactly what Redis removes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use kvik_protocol::number::{parse_i64, write_u64};

use super::compact::CompactBytes;

/// A stream entry id: milliseconds and sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    /// Milliseconds part.
    pub ms: u64,
    /// Sequence part.
    pub seq: u64,
}

impl StreamId {
    /// `0-0`, below every entry.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The largest id.
    pub const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    /// The id right after this one, `None` after [`StreamId::MAX`].
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self.ms.checked_add(1).map(|ms| StreamId { ms, seq: 0 }),
        }
    }

    /// The id right before this one, `None` before [`StreamId::MIN`].
    pub fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self.ms.checked_sub(1).map(|ms| StreamId { ms, seq: u64::MAX }),
        }
    }

    /// Append the `ms-seq` text.
    pub fn write(&self, out: &mut Vec<u8>) {
        write_u64(out, self.ms);
        out.push(b'-');
        write_u64(out, self.seq);
    }

    /// The `ms-seq` text.
    pub fn to_text(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(41);
        self.write(&mut out);
        out
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// An id argument as Redis reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdArg {
    /// A full id (`-`, `+`, `ms` or `ms-seq`).
    Id(StreamId),
    /// `ms-*`: the sequence is to be generated (XADD only).
    AutoSeq(u64),
}

/// Longest id text Redis reads (its parse buffer is 128 bytes).
const ID_MAX_CHARS: usize = 127;

/// C's `strtoull` over all of `text` as Redis's `string2ull` uses it:
/// canonical non-negative integers, or what `strtoull` accepts (leading
/// space, a `+`, leading zeros) up to `u64::MAX`; negative numbers refused.
fn parse_u64_arg(text: &[u8]) -> Option<u64> {
    if let Some(n) = parse_i64(text) {
        return u64::try_from(n).ok();
    }
    let start = text.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
    let body = &text[start..];
    let (negative, digits) = match body.split_first()? {
        (b'+', rest) => (false, rest),
        (b'-', rest) => (true, rest),
        _ => (false, body),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = digits.iter().try_fold(0u64, |acc, &d| acc.checked_mul(10)?.checked_add(u64::from(d - b'0')))?;
    // strtoull negates a `-` value; Redis only refuses it when string2ll
    // saw it as negative, so "-0" (not canonical) comes through as 0.
    match (negative, value) {
        (false, v) => Some(v),
        (true, 0) => Some(0),
        (true, _) => None,
    }
}

/// Parse an id argument: `-` and `+` (unless `strict`), `ms` (with
/// `missing_seq` as sequence), `ms-seq`, and with `allow_auto_seq` also
/// `ms-*`. `None` means Redis's "Invalid stream ID" error.
pub fn parse_id(text: &[u8], missing_seq: u64, strict: bool, allow_auto_seq: bool) -> Option<IdArg> {
    if text.len() > ID_MAX_CHARS {
        return None;
    }
    // The text is read as a C string: it ends at the first NUL.
    let text = &text[..text.iter().position(|&b| b == 0).unwrap_or(text.len())];
    match text {
        b"-" if !strict => return Some(IdArg::Id(StreamId::MIN)),
        b"+" if !strict => return Some(IdArg::Id(StreamId::MAX)),
        b"-" | b"+" => return None,
        _ => {}
    }
    let (ms_text, seq_text) = match text.iter().position(|&b| b == b'-') {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let ms = parse_u64_arg(ms_text)?;
    match seq_text {
        None => Some(IdArg::Id(StreamId { ms, seq: missing_seq })),
        Some(b"*") if allow_auto_seq => Some(IdArg::AutoSeq(ms)),
        Some(seq) => Some(IdArg::Id(StreamId { ms, seq: parse_u64_arg(seq)? })),
    }
}

/// Bytes a listpack takes for the integer `v` (encoding, data, back-length).
fn lp_int_size(v: i64) -> usize {
    let body = match v {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8_388_608..=8_388_607 => 4,
        -2_147_483_648..=2_147_483_647 => 5,
        _ => 9,
    };
    body + 1
}

/// Bytes a listpack takes for the string `s`; strings that are canonical
/// integers are stored as integers.
fn lp_str_size(s: &[u8]) -> usize {
    if let Some(v) = (s.len() <= 20).then(|| parse_i64(s)).flatten() {
        return lp_int_size(v);
    }
    let len = s.len();
    let body = if len < 64 {
        1 + len
    } else if len < 4096 {
        2 + len
    } else {
        5 + len
    };
    body + super::listpack_size::back_len_width(body)
}

/// An empty listpack: header and end byte.
const LP_EMPTY: usize = 7;
/// Largest node Redis builds whatever `stream-node-max-bytes` says.
const NODE_MAX_BYTES_CAP: usize = 1 << 30;

/// One macro node of Redis's layout (see the module comment).
#[derive(Debug, Clone, PartialEq)]
struct Node {
    /// Field names of the node's first entry; entries with the same names
    /// are stored without them.
    master_fields: Box<[CompactBytes]>,
    /// Entries not deleted.
    live: u64,
    /// Entries marked deleted but still taking room.
    deleted: u64,
    /// Id of the last entry placed in the node, deleted or not.
    last: StreamId,
    /// Listpack bytes.
    bytes: usize,
}

impl Node {
    /// Update the live and deleted counters, keeping `bytes` exact.
    fn set_counts(&mut self, live: u64, deleted: u64) {
        let size = |n: u64| lp_int_size(i64::try_from(n).unwrap_or(i64::MAX));
        self.bytes = self.bytes + size(live) + size(deleted) - size(self.live) - size(self.deleted);
        self.live = live;
        self.deleted = deleted;
    }
}

/// A pending entry of a consumer group: delivered, not yet acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The consumer it was delivered to.
    pub consumer: CompactBytes,
    /// Unix time in milliseconds of the last delivery.
    pub delivered_ms: i64,
    /// Number of deliveries.
    pub deliveries: u64,
}

/// A consumer of a group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Consumer {
    /// Unix time in milliseconds the consumer was last seen.
    pub seen_ms: i64,
    /// Ids of its pending entries.
    pub pending: BTreeSet<StreamId>,
}

/// A consumer group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Group {
    /// Last id delivered to the group.
    pub last_id: StreamId,
    /// Entries the group has read, when known.
    pub entries_read: Option<u64>,
    /// Delivered, unacknowledged entries.
    pub pending: BTreeMap<StreamId, Pending>,
    /// Consumers by name.
    pub consumers: BTreeMap<CompactBytes, Consumer>,
}

/// How to trim a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Remove entries with a smaller id.
    MinId(StreamId),
}

/// Why an entry could not be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddError {
    /// The id is not above the stream's last id (or no id is left above it).
    IdTooSmall,
    /// `ms-*` with `ms` the last id's, whose sequence is already the
    /// largest: Redis does not carry into the next millisecond.
    SeqExhausted,
}

/// A stream.
#[derive(Debug, Clone, Default)]
pub struct StreamValue {
    /// Live entries: id → field, value, field, value, ...
    entries: BTreeMap<StreamId, Box<[CompactBytes]>>,
    /// The node model, by each node's first id.
    nodes: BTreeMap<StreamId, Node>,
    /// Largest id ever added (or set by XSETID).
    pub last_id: StreamId,
    /// Largest id ever deleted.
    pub max_deleted_id: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// Consumer groups by name.
    pub groups: BTreeMap<CompactBytes, Group>,
    /// Bytes held by field and value names, for the memory estimate.
    payload_bytes: usize,
}

/// Two streams are equal when they hold the same data; the node model is
/// layout (a restored stream is laid out afresh) and does not count.
impl PartialEq for StreamValue {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
            && self.last_id == other.last_id
            && self.max_deleted_id == other.max_deleted_id
            && self.entries_added == other.entries_added
            && self.groups == other.groups
    }
}

/// Limits of the node layout (`stream-node-max-entries`, `stream-node-max-bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimits {
    /// Most entries (live and deleted) per node; 0 for no limit.
    pub max_entries: u64,
    /// Most bytes per node; 0 for Redis's cap.
    pub max_bytes: usize,
}

impl StreamValue {
    /// An empty stream.
    pub fn new() -> StreamValue {
        StreamValue::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no entries (the key can still exist).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of macro nodes Redis would have (`radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        "stream"
    }

    /// Bytes held outside the value itself, for the memory estimate.
    pub fn heap_size(&self) -> usize {
        let per_entry = std::mem::size_of::<StreamId>() + 16 + 32;
        self.entries.len() * per_entry
            + self.payload_bytes
            + self.nodes.len() * (std::mem::size_of::<Node>() + 32)
            + self.groups.values().map(|g| 64 + g.pending.len() * 96).sum::<usize>()
    }

    /// Id of the first entry (0-0 when empty).
    pub fn first_id(&self) -> StreamId {
        self.entries.keys().next().copied().unwrap_or_default()
    }

    /// The entry with id `id`.
    pub fn get(&self, id: &StreamId) -> Option<&[CompactBytes]> {
        self.entries.get(id).map(|f| &f[..])
    }

    /// Entries with ids in `start..=end`, ascending.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl DoubleEndedIterator<Item = (StreamId, &[CompactBytes])> {
        (start <= end).then(|| self.entries.range(start..=end)).into_iter().flatten().map(|(id, f)| (*id, &f[..]))
    }

    /// The id the next `XADD` gets: `explicit` if given (an exact id, or a
    /// millisecond part with a generated sequence), else from `now_ms`.
    pub fn next_id(&self, explicit: Option<IdArg>, now_ms: u64) -> Result<StreamId, AddError> {
        let id = match explicit {
            Some(IdArg::Id(id)) => id,
            Some(IdArg::AutoSeq(ms)) if ms == self.last_id.ms => match self.last_id.seq.checked_add(1) {
                Some(seq) => StreamId { ms, seq },
                None => return Err(AddError::SeqExhausted),
            },
            Some(IdArg::AutoSeq(ms)) => StreamId { ms, seq: 0 },
            None if now_ms > self.last_id.ms => StreamId { ms: now_ms, seq: 0 },
            None => self.last_id.next().ok_or(AddError::IdTooSmall)?,
        };
        if id <= self.last_id {
            return Err(AddError::IdTooSmall);
        }
        Ok(id)
    }

    /// Append an entry with `fields` (field, value, ...) under `id`, which
    /// must come from [`Self::next_id`].
    pub fn append(&mut self, id: StreamId, fields: &[&[u8]], limits: NodeLimits) {
        debug_assert!(fields.len().is_multiple_of(2) && fields.len() >= 2);
        let names: Vec<&[u8]> = fields.iter().step_by(2).copied().collect();
        let payload: usize = fields.iter().map(|f| f.len()).sum();
        let tail_fits = self.nodes.last_key_value().is_some_and(|(_, node)| {
            let max_bytes =
                if limits.max_bytes == 0 { NODE_MAX_BYTES_CAP } else { limits.max_bytes.min(NODE_MAX_BYTES_CAP) };
            node.bytes + payload < max_bytes
                && (limits.max_entries == 0 || node.live + node.deleted < limits.max_entries)
        });
        if !tail_fits {
            let mut bytes =
                LP_EMPTY + lp_int_size(0) + lp_int_size(0) + lp_int_size(names.len() as i64) + lp_int_size(0);
            bytes += names.iter().map(|n| lp_str_size(n)).sum::<usize>();
            let master_fields = names.iter().map(|n| CompactBytes::new(n)).collect();
            self.nodes.insert(id, Node { master_fields, live: 0, deleted: 0, last: id, bytes });
        }
        let Some((&master, node)) = self.nodes.iter_mut().next_back() else { return };
        let same_fields = node.master_fields.len() == names.len()
            && node.master_fields.iter().zip(&names).all(|(m, n)| m.as_slice() == *n);
        let diff = |a: u64, b: u64| a.wrapping_sub(b) as i64;
        let mut bytes = lp_int_size(if same_fields { 2 } else { 0 })
            + lp_int_size(diff(id.ms, master.ms))
            + lp_int_size(diff(id.seq, master.seq));
        let mut pieces = names.len() + 3;
        if same_fields {
            bytes += fields.iter().skip(1).step_by(2).map(|v| lp_str_size(v)).sum::<usize>();
        } else {
            bytes += lp_int_size(names.len() as i64) + fields.iter().map(|f| lp_str_size(f)).sum::<usize>();
            pieces += names.len() + 1;
        }
        bytes += lp_int_size(pieces as i64);
        node.bytes += bytes;
        let (live, deleted) = (node.live + 1, node.deleted);
        node.set_counts(live, deleted);
        node.last = id;
        self.entries.insert(id, fields.iter().map(|f| CompactBytes::new(f)).collect());
        self.payload_bytes += payload;
        self.last_id = id;
        self.entries_added += 1;
    }

    /// The first id of the node holding `id`.
    fn node_of(&self, id: StreamId) -> Option<StreamId> {
        self.nodes.range(..=id).next_back().map(|(k, _)| *k)
    }

    /// Delete the entry `id` (XDEL); false when there is none.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some(fields) = self.entries.remove(&id) else { return false };
        self.payload_bytes -= fields.iter().map(|f| f.len()).sum::<usize>();
        if let Some(master) = self.node_of(id) {
            self.mark_deleted_in(master, 1);
        }
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        true
    }

    /// Count `n` more deleted entries in the node starting at `master`,
    /// dropping the node when nothing live is left in it.
    fn mark_deleted_in(&mut self, master: StreamId, n: u64) {
        let Some(node) = self.nodes.get_mut(&master) else { return };
        if node.live <= n {
            self.nodes.remove(&master);
        } else {
            let (live, deleted) = (node.live - n, node.deleted + n);
            node.set_counts(live, deleted);
        }
    }

    /// Trim as XADD/XTRIM do: whole nodes first; with `approx`, only whole
    /// nodes; `limit` (0: none) caps the entries removed. Returns how many
    /// were removed.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut removed = 0;
        while let Some((&master, node)) = self.nodes.iter().next() {
            let len = self.entries.len() as u64;
            if matches!(how, Trim::MaxLen(max) if len <= max) {
                break;
            }
            if limit != 0 && removed + node.live > limit {
                break;
            }
            let whole = match how {
                Trim::MaxLen(max) => len - node.live >= max,
                Trim::MinId(min) => node.last < min,
            };
            if whole {
                let next = self.nodes.range(master..).nth(1).map(|(k, _)| *k);
                let doomed: Vec<StreamId> = match next {
                    Some(n) => self.entries.range(master..n).map(|(k, _)| *k).collect(),
                    None => self.entries.range(master..).map(|(k, _)| *k).collect(),
                };
                for id in &doomed {
                    if let Some(f) = self.entries.remove(id) {
                        self.payload_bytes -= f.iter().map(|x| x.len()).sum::<usize>();
                    }
                }
                removed += node.live;
                self.nodes.remove(&master);
                continue;
            }
            if approx {
                break;
            }
            removed += self.trim_inside(master, how);
            break;
        }
        removed
    }

    /// Remove entries from the front of the node at `master` one by one
    /// until `how` is met; the node keeps them as deleted.
    fn trim_inside(&mut self, master: StreamId, how: Trim) -> u64 {
        let mut n = 0;
        while let Some((&id, _)) = self.entries.range(master..).next() {
            let done = match how {
                Trim::MaxLen(max) => self.entries.len() as u64 <= max,
                Trim::MinId(min) => id >= min,
            };
            if done || self.node_of(id) != Some(master) {
                break;
            }
            if let Some(f) = self.entries.remove(&id) {
                self.payload_bytes -= f.iter().map(|x| x.len()).sum::<usize>();
            }
            n += 1;
        }
        if n > 0 {
            self.mark_deleted_in(master, n);
        }
        n
    }

    /// True when a deleted entry may lie in `start..=end` (Redis's test
    /// for whether a group's read counter can be trusted).
    pub fn has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.entries.is_empty() || self.max_deleted_id == StreamId::MIN {
            return false;
        }
        if self.first_id() > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id && self.max_deleted_id <= end
    }

    /// The number of entries added before and including `id`, when it can
    /// be known; Redis's estimate for consumer group counters.
    pub fn entries_read_at(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.entries.is_empty() && id <= self.last_id {
            return Some(self.entries_added);
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return Some(self.entries_added),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => {}
        }
        let first = self.first_id();
        if self.max_deleted_id == StreamId::MIN || self.max_deleted_id < first {
            let before = self.entries_added - self.entries.len() as u64;
            if id < first {
                return Some(before);
            }
            if id == first {
                return Some(before + 1);
            }
        }
        None
    }

    /// A group's lag (entries not yet delivered to it), when it can be known.
    ///
    /// Negative when the group was told it read more than the stream ever
    /// had (`ENTRIESREAD`): Redis 7.0 reports the difference as it is.
    pub fn lag(&self, group: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        let behind = |read: u64| self.entries_added.wrapping_sub(read) as i64;
        if let Some(read) = group.entries_read {
            if !self.has_tombstones(group.last_id, StreamId::MAX) {
                return Some(behind(read));
            }
        }
        self.entries_read_at(group.last_id).map(behind)
    }

    /// Advance `group` to having been delivered `id`, keeping its read
    /// counter as Redis does.
    pub fn advance_group(&self, group: &mut Group, id: StreamId) {
        if id <= group.last_id {
            return;
        }
        match group.entries_read {
            Some(read) if !self.has_tombstones(id, StreamId::MAX) => group.entries_read = Some(read + 1),
            _ if self.entries_added > 0 => group.entries_read = self.entries_read_at(id),
            _ => {}
        }
        group.last_id = id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: NodeLimits = NodeLimits { max_entries: 100, max_bytes: 4096 };

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    fn add(s: &mut StreamValue, ms: u64, fields: &[&str]) -> StreamId {
        let id = s.next_id(Some(IdArg::AutoSeq(ms)), 0).unwrap();
        let f: Vec<&[u8]> = fields.iter().map(|x| x.as_bytes()).collect();
        s.append(id, &f, LIMITS);
        id
    }

    #[test]
    fn ids_parse_like_redis() {
        let p = |t: &str| parse_id(t.as_bytes(), 0, false, true);
        assert_eq!(p("5"), Some(IdArg::Id(id(5, 0))));
        assert_eq!(p("5-3"), Some(IdArg::Id(id(5, 3))));
        assert_eq!(p("-"), Some(IdArg::Id(StreamId::MIN)));
        assert_eq!(p("+"), Some(IdArg::Id(StreamId::MAX)));
        assert_eq!(p("5-*"), Some(IdArg::AutoSeq(5)));
        assert_eq!(p("18446744073709551615-18446744073709551615"), Some(IdArg::Id(StreamId::MAX)));
        assert_eq!(p("+5"), Some(IdArg::Id(id(5, 0))));
        assert_eq!(p("007"), Some(IdArg::Id(id(7, 0))));
        for bad in ["", "x", "5-", "-5", "5-x", "1-2-3", "18446744073709551616", "*"] {
            assert_eq!(p(bad), None, "{bad}");
        }
        assert_eq!(parse_id(b"-", 0, true, false), None);
        assert_eq!(parse_id(b"5-*", 0, false, false), None);
        assert_eq!(parse_id(b"7", u64::MAX, false, false), Some(IdArg::Id(id(7, u64::MAX))));
    }

    #[test]
    fn ids_must_grow() {
        let mut s = StreamValue::new();
        assert_eq!(s.next_id(Some(IdArg::Id(StreamId::MIN)), 0), Err(AddError::IdTooSmall));
        assert_eq!(s.next_id(None, 1000), Ok(id(1000, 0)));
        add(&mut s, 1000, &["a", "1"]);
        assert_eq!(s.next_id(None, 999), Ok(id(1000, 1)));
        assert_eq!(s.next_id(Some(IdArg::Id(id(1000, 0))), 0), Err(AddError::IdTooSmall));
        assert_eq!(s.next_id(Some(IdArg::AutoSeq(1000)), 0), Ok(id(1000, 1)));
        assert_eq!(s.next_id(Some(IdArg::AutoSeq(999)), 0), Err(AddError::IdTooSmall));
        s.last_id = StreamId::MAX;
        assert_eq!(s.next_id(None, 0), Err(AddError::IdTooSmall));
    }

    #[test]
    fn nodes_split_at_the_entry_limit() {
        let mut s = StreamValue::new();
        for i in 0..250 {
            add(&mut s, i + 1, &["f", "v"]);
        }
        assert_eq!(s.len(), 250);
        assert_eq!(s.node_count(), 3);
        // Approximate trimming removes whole nodes only.
        assert_eq!(s.trim(Trim::MaxLen(120), true, 0), 100);
        assert_eq!(s.len(), 150);
        assert_eq!(s.trim(Trim::MaxLen(120), false, 0), 30);
        assert_eq!(s.len(), 120);
        assert_eq!(s.first_id(), id(131, 0));
        assert_eq!(s.trim(Trim::MinId(id(201, 0)), true, 0), 70);
        assert_eq!(s.len(), 50);
    }

    #[test]
    fn nodes_split_at_the_byte_limit() {
        let mut s = StreamValue::new();
        let big = "x".repeat(1000);
        for i in 0..10 {
            add(&mut s, i + 1, &["f", &big]);
        }
        assert_eq!(s.node_count(), 3);
        assert!(s.nodes.values().all(|n| n.bytes < 4096 + 1100));
    }

    #[test]
    fn deletes_count_tombstones_and_drop_empty_nodes() {
        let mut s = StreamValue::new();
        let a = add(&mut s, 1, &["f", "v"]);
        let b = add(&mut s, 2, &["f", "v"]);
        assert!(s.delete(a) && !s.delete(a));
        assert_eq!(s.max_deleted_id, a);
        assert_eq!(s.node_count(), 1);
        assert!(s.delete(b));
        assert_eq!(s.node_count(), 0);
        assert!(s.is_empty());
        assert_eq!(s.entries_added, 2);
        assert_eq!(s.last_id, b);
    }

    #[test]
    fn group_counters_follow_reads() {
        let mut s = StreamValue::new();
        let ids: Vec<StreamId> = (1..=5).map(|ms| add(&mut s, ms, &["f", "v"])).collect();
        let mut g = Group { entries_read: None, ..Group::default() };
        s.advance_group(&mut g, ids[0]);
        assert_eq!(g.entries_read, Some(1));
        s.advance_group(&mut g, ids[1]);
        assert_eq!(g.entries_read, Some(2));
        assert_eq!(s.lag(&g), Some(3));
        s.delete(ids[3]);
        assert_eq!(s.lag(&g), None);
        // Delivering past a tombstone loses the count until the last entry.
        s.advance_group(&mut g, ids[2]);
        assert_eq!(g.entries_read, None);
        s.advance_group(&mut g, ids[4]);
        assert_eq!(g.entries_read, Some(5));
        assert_eq!(s.lag(&g), Some(0));
    }

    #[test]
    fn ranges() {
        let mut s = StreamValue::new();
        for ms in 1..=5 {
            add(&mut s, ms, &["f", "v"]);
        }
        assert_eq!(s.range(id(2, 0), id(4, 0)).count(), 3);
        assert_eq!(s.range(id(4, 0), id(2, 0)).count(), 0);
        assert_eq!(s.range(StreamId::MIN, StreamId::MAX).next_back().map(|(i, _)| i), Some(id(5, 0)));
    }

    /// Node counts and trim results read from redis-server 7.0 after the same
    /// commands: mixed field names (master-field compression on and off),
    /// integer-looking and long values, deletions, and both trim forms.
    #[test]
    fn the_node_model_matches_redis() {
        let mut x: u64 = 12345;
        let mut rnd = move |n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let names: [&[u8]; 4] = [b"a", b"b", b"name", b"12"];
        let vals: [&[u8]; 4] = [b"1", b"-5", b"300", b"70000"];
        let mut s = StreamValue::new();
        let mut seen = Vec::new();
        for i in 0..600u64 {
            let n = 1 + rnd(4);
            let mut args: Vec<Vec<u8>> = Vec::new();
            for _ in 0..n {
                let k = rnd(5) as usize;
                args.push(if k < 4 { names[k].to_vec() } else { vec![b'x'; 1 + rnd(80) as usize] });
                let k = rnd(5) as usize;
                args.push(if k < 4 { vals[k].to_vec() } else { vec![b'v'; rnd(200) as usize] });
            }
            let id = StreamId { ms: i * 3 + 1, seq: rnd(3) };
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            s.append(id, &refs, LIMITS);
            if i % 50 == 49 {
                seen.push((s.len(), s.node_count()));
            }
            if i % 97 == 96 {
                for seq in 0..3 {
                    s.delete(StreamId { ms: (i - 5) * 3 + 1, seq });
                }
            }
        }
        let redis = [(50, 2), (99, 3), (149, 4), (198, 6), (248, 6), (297, 8), (347, 9), (396, 10), (446, 12)];
        assert_eq!(&seen[..9], &redis);
        assert_eq!(&seen[9..], &[(495, 13), (545, 14), (594, 15)]);
        assert_eq!(s.trim(Trim::MaxLen(250), true, 0), 327);
        assert_eq!((s.len(), s.node_count()), (267, 7));
        assert_eq!(s.trim(Trim::MaxLen(100), true, 150), 112);
        assert_eq!((s.len(), s.node_count()), (155, 4));
    }

    #[test]
    fn listpack_sizes() {
        assert_eq!(lp_int_size(0), 2);
        assert_eq!(lp_int_size(128), 3);
        assert_eq!(lp_int_size(-1), 3);
        assert_eq!(lp_int_size(1 << 40), 10);
        assert_eq!(lp_str_size(b"abc"), 5);
        assert_eq!(lp_str_size(b"123"), 2);
        assert_eq!(lp_str_size(&[b'x'; 100]), 103);
        assert_eq!(lp_str_size(&[b'x'; 200]), 204);
    }
}
