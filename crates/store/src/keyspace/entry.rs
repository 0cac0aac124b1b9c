//! The record the keyspace keeps for one key: its name, value, deadline and
//! access bookkeeping, laid out to take as little memory as possible.
//!
//! Most keys hold a string written whole (SET, MSET, INCR). Such a key is
//! stored *packed*: one heap allocation holding everything, so a key costs
//! one allocation instead of three (entry, name, value). The hash table's
//! element is a one-word [`Thin`] pointer (8 bytes, against 16 for a
//! `Box<[u8]>`; at the table's usual load of about one half that is some
//! 17 bytes less per key): the packed bytes' length lives in front of
//! them in their allocation, one byte for lengths below 255, else five
//! (see `kvik-thin`). The packed bytes are:
//!
//! ```text
//! [3B access clock][1B flags]
//! [8B deadline, ms]                       only with the DEADLINE flag
//! nothing: keys below 15 bytes have their length in the flags' top 4 bits
//!   or [1B key length] or [0xFF][4B key length]  (lengths from 255 on)
//! [key]
//! [8B integer] or [string bytes]          the integer with the INTEGER kind
//!   or [packed list] / [packed hash]      with the LIST / HASH kind
//! ```
//!
//! Small lists and small hashes in the `listpack` encoding are packed too,
//! in the encoding of [`crate::types::packed`]: a key made by one RPUSH or
//! HSET then costs one allocation instead of four (node, name, value box,
//! elements). Reads borrow them in place through [`ListRef`] / [`HashRef`].
//!
//! Every other value is stored *boxed*, in a [`Node`] with the owned
//! [`Value`]: strings changed in place (APPEND, SETRANGE, SETBIT grow them
//! and need spare capacity, and Redis reports them as `raw`), larger lists
//! and hashes, and the other collection types. [`Entry::value_mut`] turns a
//! packed key into a boxed one when a command changes its value in place; a
//! value stored whole again ([`Entry::set_value`]) is packed again, and so
//! is a list or hash small again after a change ([`Entry::repack`], which
//! the keyspace calls once the change is done).
//!
//! Integers stay packed through INCR and friends: [`Entry::set_int`]
//! rewrites the 8 bytes in place.
//!
//! The header is four bytes because glibc malloc hands out chunks in
//! 16-byte steps (up to 24 bytes of data in a 32-byte chunk, up to 40 in
//! a 48-byte one, ...): a one-element list `list:123456` holding `element`
//! takes 1 + 4 + 11 + 8 = 24 bytes (length, header, key, element), one
//! chunk size below what an 8-byte header gave it. The flags byte uses
//! its four spare bits for a short key's length so that the thin
//! pointer's length byte costs nothing for such keys. The access clock is
//! Redis's single 24-bit field, read by the `maxmemory-policy` (see
//! [`Meta`]).

use super::{lfu, lru};
use crate::types::hash::{HashRef, HashValue};
use crate::types::list::{ListRef, ListValue};
use crate::types::packed::{Kind, PackedSeq};
use crate::types::string::{stored_int, StrRef, StrValue};
use crate::types::{Value, ValueRef};
use kvik_thin::{Thin, View, ViewMut};

/// What the keyspace records about a key's use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Redis's 24-bit access clock, whose meaning depends on the
    /// `maxmemory-policy` in force: under an LFU policy the LFU minutes
    /// clock (16 bits) and counter (8 bits, see [`super::lfu`]), under any
    /// other the time of the last access in seconds (see [`super::lru`]).
    /// A policy change does not rewrite it: each key is written the new
    /// way at its next access, and read the new way meanwhile, as in Redis.
    /// Only the low 24 bits are kept.
    pub clock: u32,
    /// The value was made by `COPY` and not replaced since. Redis gives a
    /// copy its own object even for the small integers it otherwise shares
    /// between keys, which `OBJECT REFCOUNT` shows.
    pub private_copy: bool,
}

impl Meta {
    /// The record of a key created at `now_ms`, written for an LFU
    /// `maxmemory-policy` when `lfu`, else for any other.
    pub fn new(now_ms: i64, lfu: bool) -> Meta {
        let clock = if lfu { lfu::fresh(now_ms) } else { lru::clock(now_ms) };
        Meta { clock, private_copy: false }
    }

    /// The LFU counter, reading the clock as LFU data.
    pub fn lfu_counter(&self) -> u8 {
        lfu::counter(self.clock)
    }

    /// The LFU minutes clock, reading the clock as LFU data.
    pub fn lfu_minutes(&self) -> u16 {
        lfu::minutes_of(self.clock)
    }

    /// Seconds since the last access at `now_ms`, reading the clock as the
    /// LRU time (`OBJECT IDLETIME`, eviction under an LRU policy).
    pub fn idle_seconds(&self, now_ms: i64) -> u32 {
        lru::idle_seconds(self.clock, now_ms)
    }

    /// Record an access at `now_ms` the way `tuning`'s policy keeps them:
    /// the LFU counter's decay and increment (`random` is a uniform 64-bit
    /// number) or the LRU time.
    pub fn touch(&mut self, now_ms: i64, tuning: &lfu::Tuning, random: u64) {
        if tuning.lfu_policy() {
            self.clock = lfu::accessed(self.clock, now_ms, tuning, random);
        } else {
            self.clock = lru::clock(now_ms);
        }
    }
}

/// Bytes of the fixed header of a packed entry.
const HEADER: usize = 4;
/// Bytes of the access clock at the start of the header.
const CLOCK_BYTES: usize = 3;
/// Position of the flag byte in the header.
const FLAGS_AT: usize = 3;
/// Flag: an 8-byte deadline follows the header.
const DEADLINE: u8 = 1;
/// Flag: [`Meta::private_copy`].
const PRIVATE: u8 = 2;
/// The two flag bits naming the kind of the packed value: string bytes
/// (both clear) or one of the three below.
const KIND: u8 = 4 | 8;
/// Kind: the value is an 8-byte integer rather than string bytes.
const INTEGER: u8 = 4;
/// Kind: the value is a packed list.
const LIST: u8 = 8;
/// Kind: the value is a packed hash.
const HASH: u8 = 4 | 8;
/// The top four flag bits hold a short key's length plus one; zero when
/// a key-length field follows instead.
const SHORT_KEY_SHIFT: u32 = 4;
/// Keys shorter than this have their length in the flags.
const SHORT_KEY: usize = 15;
/// Key-length byte announcing a 4-byte length.
const LONG_KEY: u8 = u8::MAX;

/// A boxed key: everything a packed key holds, with an owned value.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    meta: Meta,
    deadline: Option<i64>,
    key: Box<[u8]>,
    value: Value,
}

/// One key as the hash table stores it: one word, pointing at the packed
/// bytes or at the boxed [`Node`] (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry(Thin<Node>);

/// A value in the form a packed entry can hold.
#[derive(Clone, Copy)]
enum Packable<'a> {
    Int(i64),
    Bytes(&'a [u8]),
    List(&'a ListValue),
    Hash(&'a HashValue),
    /// Value bytes of another packed entry, with their kind flag.
    Copy(u8, &'a [u8]),
}

impl<'a> Packable<'a> {
    /// The packed form of `value`, if it has one (integers, strings written
    /// whole, small lists and hashes).
    fn of(value: &'a Value) -> Option<Packable<'a>> {
        match value {
            Value::Str(StrValue::Int(n)) => Some(Packable::Int(*n)),
            Value::Str(StrValue::Bytes(b)) => Some(Packable::Bytes(b)),
            Value::List(l) if l.packable() => Some(Packable::List(l)),
            Value::Hash(h) if h.packable() => Some(Packable::Hash(h)),
            Value::Str(StrValue::Raw(_))
            | Value::Set(_)
            | Value::ZSet(_)
            | Value::Stream(_)
            | Value::List(_)
            | Value::Hash(_) => None,
        }
    }

    /// `bytes` as SET stores them: the integer when they are its canonical
    /// text, else the bytes.
    fn text(bytes: &'a [u8]) -> Packable<'a> {
        match stored_int(bytes) {
            Some(n) => Packable::Int(n),
            None => Packable::Bytes(bytes),
        }
    }

    /// The kind flag of the packed value.
    fn flag(self) -> u8 {
        match self {
            Packable::Int(_) => INTEGER,
            Packable::Bytes(_) => 0,
            Packable::List(_) => LIST,
            Packable::Hash(_) => HASH,
            Packable::Copy(flag, _) => flag,
        }
    }

    /// Bytes of the packed value.
    fn len(self) -> usize {
        match self {
            Packable::Int(_) => 8,
            Packable::Bytes(b) | Packable::Copy(_, b) => b.len(),
            Packable::List(l) => l.encoded_len(),
            Packable::Hash(h) => h.encoded_len(),
        }
    }

    /// Append the packed value to `out`.
    fn write(self, out: &mut Vec<u8>) {
        match self {
            Packable::Int(n) => out.extend_from_slice(&n.to_le_bytes()),
            Packable::Bytes(b) | Packable::Copy(_, b) => out.extend_from_slice(b),
            Packable::List(l) => l.encode(out),
            Packable::Hash(h) => h.encode(out),
        }
    }
}

/// Build the packed bytes of a key, or `None` when they would be longer
/// than a [`Thin`] holds (4 GiB, which only a raised `proto-max-bulk-len`
/// allows): such a key is stored boxed.
fn pack(meta: Meta, deadline: Option<i64>, key: &[u8], value: Packable<'_>) -> Option<Thin<Node>> {
    let key_len_bytes = match key.len() {
        n if n < SHORT_KEY => 0,
        n if n < usize::from(LONG_KEY) => 1,
        _ => 5,
    };
    let len = (HEADER + if deadline.is_some() { 8 } else { 0 } + key_len_bytes)
        .saturating_add(key.len())
        .saturating_add(value.len());
    if len > kvik_thin::MAX_LEN {
        return None;
    }
    Thin::try_build(len, |out| write_packed(out, meta, deadline, key, value)).ok()
}

/// Append the packed bytes of a key to `out` (see the module docs).
fn write_packed(out: &mut Vec<u8>, meta: Meta, deadline: Option<i64>, key: &[u8], value: Packable<'_>) {
    let mut flags = 0;
    if deadline.is_some() {
        flags |= DEADLINE;
    }
    if meta.private_copy {
        flags |= PRIVATE;
    }
    flags |= value.flag();
    let short = key.len() < SHORT_KEY;
    if let Some(n) = u8::try_from(key.len() + 1).ok().filter(|_| short) {
        flags |= n << SHORT_KEY_SHIFT;
    }
    out.extend_from_slice(&meta.clock.to_le_bytes()[..CLOCK_BYTES]);
    out.push(flags);
    if let Some(at) = deadline {
        out.extend_from_slice(&at.to_le_bytes());
    }
    match u8::try_from(key.len()) {
        _ if short => {}
        Ok(n) if n < LONG_KEY => out.push(n),
        _ => {
            out.push(LONG_KEY);
            out.extend_from_slice(&u32::try_from(key.len()).unwrap_or(u32::MAX).to_le_bytes());
        }
    }
    out.extend_from_slice(key);
    value.write(out);
}

/// Read 8 little-endian bytes at `at` of packed bytes built by [`pack`].
fn read_i64(bytes: &[u8], at: usize) -> i64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    i64::from_le_bytes(word)
}

/// Where the key of packed bytes starts and ends (the value follows it).
fn key_span(bytes: &[u8]) -> (usize, usize) {
    let flags = bytes[FLAGS_AT];
    let at = if flags & DEADLINE != 0 { HEADER + 8 } else { HEADER };
    let short = usize::from(flags >> SHORT_KEY_SHIFT);
    if short != 0 {
        return (at, at + short - 1);
    }
    if bytes[at] == LONG_KEY {
        let mut len = [0u8; 4];
        len.copy_from_slice(&bytes[at + 1..at + 5]);
        let start = at + 5;
        (start, start + u32::from_le_bytes(len) as usize)
    } else {
        let start = at + 1;
        (start, start + usize::from(bytes[at]))
    }
}

/// The metadata in the header of packed bytes.
fn packed_meta(bytes: &[u8]) -> Meta {
    Meta { clock: u32::from_le_bytes([bytes[0], bytes[1], bytes[2], 0]), private_copy: bytes[FLAGS_AT] & PRIVATE != 0 }
}

/// The value bytes of packed bytes, with their kind flag, to pack again.
fn packed_value(bytes: &[u8]) -> Packable<'_> {
    let (_, end) = key_span(bytes);
    Packable::Copy(bytes[FLAGS_AT] & KIND, &bytes[end..])
}

/// The value of packed bytes, borrowed. Always inlined, for the same
/// reason as [`Entry::value`].
#[inline(always)]
fn packed_view(bytes: &[u8]) -> ValueRef<'_> {
    let (_, end) = key_span(bytes);
    let flags = bytes[FLAGS_AT];
    match flags & KIND {
        INTEGER => ValueRef::Str(StrRef::Int(read_i64(bytes, end))),
        LIST => ValueRef::List(ListRef::Packed(PackedSeq::new(&bytes[end..]))),
        HASH => ValueRef::Hash(HashRef::Packed(PackedSeq::new(&bytes[end..]))),
        _ => ValueRef::Str(StrRef::Bytes(&bytes[end..])),
    }
}

impl Entry {
    /// `key` holding `value`, expiring at `deadline` (never when `None`).
    pub fn new(key: &[u8], value: Value, deadline: Option<i64>, meta: Meta) -> Entry {
        match Packable::of(&value).and_then(|p| pack(meta, deadline, key, p)) {
            Some(packed) => Entry(packed),
            None => {
                // 24 bits, as a packed key keeps them.
                let meta = Meta { clock: meta.clock & lru::CLOCK_MAX, ..meta };
                Entry(Thin::new_boxed(Node { meta, deadline, key: key.into(), value }))
            }
        }
    }

    /// `key` holding the string `bytes` written whole, as SET stores it:
    /// packed, as an integer when the bytes are one's canonical text.
    pub fn string(key: &[u8], bytes: &[u8], deadline: Option<i64>, meta: Meta) -> Entry {
        match pack(meta, deadline, key, Packable::text(bytes)) {
            Some(packed) => Entry(packed),
            None => Entry::new(key, Value::Str(StrValue::from_bytes(bytes)), deadline, meta),
        }
    }

    /// Where the entry's allocation is, for a prefetch hint.
    pub fn addr(&self) -> usize {
        self.0.addr()
    }

    /// The key's name.
    pub fn key(&self) -> &[u8] {
        match self.0.view() {
            View::Bytes(b) => {
                let (start, end) = key_span(b);
                &b[start..end]
            }
            View::Boxed(n) => &n.key,
        }
    }

    /// Whether this is the entry of `key` (see [`same_key`]).
    #[inline]
    pub fn is_key(&self, key: &[u8]) -> bool {
        same_key(self.key(), key)
    }

    /// The value, borrowed. Inlined: returned through memory, the view
    /// was read back in wider pieces than it was written, a
    /// store-forwarding stall on every GET.
    #[inline]
    pub fn value(&self) -> ValueRef<'_> {
        match self.0.view() {
            View::Bytes(b) => packed_view(b),
            View::Boxed(n) => n.value.view(),
        }
    }

    /// The value, for a change in place; a packed key is boxed first (once).
    pub fn value_mut(&mut self) -> &mut Value {
        if !self.0.is_boxed() {
            self.replace_thin(Thin::new_boxed(self.node()));
        }
        match self.0.view_mut() {
            ViewMut::Boxed(n) => &mut n.value,
            // Boxed just above.
            ViewMut::Bytes(_) => unreachable!("entry was boxed"),
        }
    }

    /// Hold `thin` instead of what this entry held, keeping the snapshot
    /// mark: every change of representation goes through here, so that a
    /// key a snapshot has written is never written twice.
    fn replace_thin(&mut self, thin: Thin<Node>) {
        let marked = self.0.is_marked();
        self.0 = thin;
        self.0.set_marked(marked);
    }

    /// The snapshot mark (see [`super::snapshot`]): compared with the
    /// database's, it tells whether a running snapshot has this key.
    #[inline]
    pub(super) fn is_marked(&self) -> bool {
        self.0.is_marked()
    }

    /// Set the snapshot mark.
    #[inline]
    pub(super) fn set_marked(&mut self, marked: bool) {
        self.0.set_marked(marked);
    }

    /// The [`Node`] holding what this entry holds.
    fn node(&self) -> Node {
        Node { meta: self.meta(), deadline: self.deadline(), key: self.key().into(), value: self.value().to_owned() }
    }

    /// Replace the value, keeping deadline and access record; a value with
    /// a packed form is packed.
    pub fn set_value(&mut self, value: Value) {
        let packable = Packable::of(&value).is_some();
        match self.0.view_mut() {
            ViewMut::Boxed(n) if !packable => n.value = value,
            _ => {
                let Entry(fresh) = Entry::new(self.key(), value, self.deadline(), self.meta());
                self.replace_thin(fresh);
            }
        }
    }

    /// Pack a boxed value that has a packed form again: a list or hash a
    /// change left small (the keyspace calls this once a change is done).
    /// True when the entry is packed afterwards.
    #[inline]
    pub fn repack(&mut self) -> bool {
        match self.0.view() {
            View::Bytes(_) => true,
            // Most boxed values have no packed form (a large list, a set):
            // answered without a call.
            View::Boxed(n) if !may_pack(&n.value) => false,
            View::Boxed(_) => self.pack_boxed(),
        }
    }

    /// [`Entry::repack`] of a boxed value that may have a packed form.
    fn pack_boxed(&mut self) -> bool {
        let packed = match self.0.view() {
            View::Bytes(_) => return true,
            View::Boxed(n) => match Packable::of(&n.value).and_then(|p| pack(n.meta, n.deadline, &n.key, p)) {
                Some(packed) => packed,
                None => return false,
            },
        };
        self.replace_thin(packed);
        true
    }

    /// True when the entry is stored packed.
    pub fn is_packed(&self) -> bool {
        !self.0.is_boxed()
    }

    /// Change a packed list or hash of `kind` in its own allocation,
    /// which may grow (a realloc, often in place): `edit` gets the entry's
    /// bytes and where the value's encoding starts in them (see
    /// [`crate::types::packed`]), and changes or extends the encoding; when
    /// it declines with `None` it must leave the bytes as they were.
    #[inline]
    pub fn extend_packed<R>(&mut self, kind: Kind, edit: impl FnOnce(&mut Vec<u8>, usize) -> Option<R>) -> Option<R> {
        let View::Bytes(b) = self.0.view() else { return None };
        if b[FLAGS_AT] & KIND != kind_flag(kind) {
            return None;
        }
        let (_, end) = key_span(b);
        // The vector holds the thin pointer's length prefix before the
        // entry's bytes: `at` counts from the vector's start.
        self.0.edit_vec(|bytes, at| edit(bytes, at + end)).flatten()
    }

    /// Change a packed list or hash of `kind` without boxing it: `edit`
    /// reads the current encoding (see [`crate::types::packed`]) and
    /// appends the new one to the buffer it is given, or declines with
    /// `None` (nothing changes; the caller then changes the value through
    /// [`Entry::value_mut`]).
    pub fn rewrite_packed<R>(&mut self, kind: Kind, edit: impl FnOnce(&[u8], &mut Vec<u8>) -> Option<R>) -> Option<R> {
        let View::Bytes(b) = self.0.view() else { return None };
        if b[FLAGS_AT] & KIND != kind_flag(kind) {
            return None;
        }
        let (_, end) = key_span(b);
        let mut result = None;
        let rewritten = Thin::try_build(b.len() + 64, |out| {
            out.extend_from_slice(&b[..end]);
            result = edit(&b[end..], out);
        });
        let result = result?;
        self.replace_thin(rewritten.ok()?);
        Some(result)
    }

    /// Replace the value with the integer `n` (INCR and friends): in place
    /// when the key already holds a packed integer.
    pub fn set_int(&mut self, n: i64) {
        if let ViewMut::Bytes(b) = self.0.view_mut() {
            if b[FLAGS_AT] & KIND == INTEGER {
                let (_, end) = key_span(b);
                b[end..end + 8].copy_from_slice(&n.to_le_bytes());
                return;
            }
        }
        self.set_value(Value::Str(StrValue::Int(n)));
    }

    /// Write `bytes` over the value of a packed string key without a
    /// deadline, as SET stores them, with access record `meta`, when they
    /// take exactly the room of the old value (a counter or a fixed-size
    /// value written again): no allocation, and the same bytes
    /// [`Entry::string`] would build. False, with nothing changed, otherwise.
    pub fn rewrite_string(&mut self, bytes: &[u8], meta: Meta) -> bool {
        let ViewMut::Bytes(b) = self.0.view_mut() else { return false };
        let flags = b[FLAGS_AT];
        if flags & DEADLINE != 0 || !matches!(flags & KIND, 0 | INTEGER) {
            return false;
        }
        let (_, end) = key_span(b);
        let value = Packable::text(bytes);
        let place = &mut b[end..];
        match value {
            Packable::Int(n) if place.len() == 8 => place.copy_from_slice(&n.to_le_bytes()),
            Packable::Bytes(v) if place.len() == v.len() => place.copy_from_slice(v),
            _ => return false,
        }
        b[..CLOCK_BYTES].copy_from_slice(&meta.clock.to_le_bytes()[..CLOCK_BYTES]);
        let private = if meta.private_copy { PRIVATE } else { 0 };
        b[FLAGS_AT] = (flags & !(KIND | PRIVATE)) | value.flag() | private;
        true
    }

    /// The same entry under another name (RENAME).
    pub fn renamed(self, key: &[u8]) -> Entry {
        match self.0.into_box() {
            Ok(mut n) => {
                n.key = key.into();
                Entry(Thin::from_box(n))
            }
            Err(packed) => {
                let old = Entry(packed);
                let renamed = match old.0.view() {
                    View::Bytes(b) => pack(packed_meta(b), deadline_of(b), key, packed_value(b)),
                    View::Boxed(_) => None,
                };
                renamed
                    .map(Entry)
                    .unwrap_or_else(|| Entry::new(key, old.value().to_owned(), old.deadline(), old.meta()))
            }
        }
    }

    /// The access record.
    pub fn meta(&self) -> Meta {
        match self.0.view() {
            View::Bytes(b) => packed_meta(b),
            View::Boxed(n) => n.meta,
        }
    }

    /// Replace the access record.
    pub fn set_meta(&mut self, meta: Meta) {
        match self.0.view_mut() {
            ViewMut::Bytes(b) => {
                b[..CLOCK_BYTES].copy_from_slice(&meta.clock.to_le_bytes()[..CLOCK_BYTES]);
                b[FLAGS_AT] = if meta.private_copy { b[FLAGS_AT] | PRIVATE } else { b[FLAGS_AT] & !PRIVATE };
            }
            ViewMut::Boxed(n) => n.meta = Meta { clock: meta.clock & lru::CLOCK_MAX, ..meta },
        }
    }

    /// Unix time in milliseconds at which the key expires.
    pub fn deadline(&self) -> Option<i64> {
        match self.0.view() {
            View::Bytes(b) => deadline_of(b),
            View::Boxed(n) => n.deadline,
        }
    }

    /// Set or clear the deadline. The keyspace's deadline index must follow,
    /// so only [`super::Db`] calls this.
    pub(super) fn set_deadline(&mut self, at: Option<i64>) {
        let repacked = match self.0.view_mut() {
            ViewMut::Boxed(n) => {
                n.deadline = at;
                return;
            }
            ViewMut::Bytes(b) => match (b[FLAGS_AT] & DEADLINE != 0, at) {
                (true, Some(at)) => {
                    b[HEADER..HEADER + 8].copy_from_slice(&at.to_le_bytes());
                    return;
                }
                (false, None) => return,
                _ => {
                    let (start, end) = key_span(b);
                    pack(packed_meta(b), at, &b[start..end], packed_value(b))
                }
            },
        };
        let fresh = repacked.unwrap_or_else(|| Thin::new_boxed(Node { deadline: at, ..self.node() }));
        self.replace_thin(fresh);
    }

    /// True when the deadline has passed at `now_ms`.
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.deadline().is_some_and(|at| at <= now_ms && !super::loading())
    }

    /// Bytes this entry holds on the heap (name, value, bookkeeping), not
    /// counting its place in the table.
    pub fn heap_size(&self) -> usize {
        match self.0.view() {
            View::Bytes(_) => self.0.heap_size(),
            View::Boxed(n) => std::mem::size_of::<Node>() + n.key.len() + n.value.heap_size(),
        }
    }
}

/// A cheap first look for [`Entry::repack`]: false when `value` surely has
/// no packed form (a boxed string or a big collection is common there).
#[inline]
fn may_pack(value: &Value) -> bool {
    use crate::types::packed::MAX_ELEMENTS;
    match value {
        Value::List(l) => l.len() <= MAX_ELEMENTS,
        Value::Hash(h) => h.len() <= MAX_ELEMENTS / 2,
        Value::Str(StrValue::Int(_) | StrValue::Bytes(_)) => true,
        Value::Str(StrValue::Raw(_)) | Value::Set(_) | Value::ZSet(_) | Value::Stream(_) => false,
    }
}

/// The flag of a packed value of `kind`.
fn kind_flag(kind: Kind) -> u8 {
    match kind {
        Kind::List => LIST,
        Kind::Hash => HASH,
    }
}

/// The deadline in packed bytes.
fn deadline_of(bytes: &[u8]) -> Option<i64> {
    (bytes[FLAGS_AT] & DEADLINE != 0).then(|| read_i64(bytes, HEADER))
}

/// Whether two keys hold the same bytes.
///
/// Every lookup compares the key it looks for with the one it finds, and a
/// slice compare calls `memcmp`, whose call and length dispatch cost more
/// than comparing a short key: keys of 4 to 16 bytes are compared as two
/// overlapping words here (which together cover every byte), longer ones by
/// `memcmp`.
#[inline]
pub fn same_key(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    fn word8(s: &[u8], at: usize) -> u64 {
        s.get(at..at + 8).and_then(|w| w.try_into().ok()).map_or(0, u64::from_ne_bytes)
    }
    fn word4(s: &[u8], at: usize) -> u32 {
        s.get(at..at + 4).and_then(|w| w.try_into().ok()).map_or(0, u32::from_ne_bytes)
    }
    match n {
        8..=16 => word8(a, 0) == word8(b, 0) && word8(a, n - 8) == word8(b, n - 8),
        4..=7 => word4(a, 0) == word4(b, 0) && word4(a, n - 4) == word4(b, n - 4),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal keys compare equal and any one-byte change at any length up to
    /// 40 bytes is seen, at every offset, as slice equality sees it.
    #[test]
    fn same_key_agrees_with_slice_equality() {
        let base: Vec<u8> = (0u8..40).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
        for len in 0..=40 {
            for start in 0..3 {
                let a = &base[start..(start + len).min(40)];
                let b = a.to_vec();
                assert!(same_key(a, &b), "len {len}");
                for at in 0..a.len() {
                    let mut c = b.clone();
                    c[at] ^= 0x80;
                    assert!(!same_key(a, &c), "len {len} byte {at}");
                }
                assert!(!same_key(a, &base[..a.len().saturating_sub(1)]) || a.is_empty());
            }
        }
        assert!(same_key(b"", b""));
        assert!(!same_key(b"key:1", b"key:10"));
    }

    fn meta() -> Meta {
        Meta { clock: lfu::clock(65_000, 7), private_copy: false }
    }

    /// The packed bytes of `e` (which must be packed).
    fn packed(e: &Entry) -> Vec<u8> {
        match e.0.view() {
            View::Bytes(b) => b.to_vec(),
            View::Boxed(_) => panic!("not packed"),
        }
    }

    #[test]
    fn a_rewritten_string_is_what_packing_it_afresh_builds() {
        let mut next = crate::types::test_rng::xorshift(0x5eed_1234);
        let values: [&[u8]; 10] =
            [b"", b"a", b"ab", b"12", b"-7", b"012", b"hello", b"world", b"9223372036854775807", b"12345678"];
        let mut rewritten = 0;
        for round in 0..2_000 {
            let key = format!("key:{}", next() % (if round % 2 == 0 { 30 } else { 300 })).repeat(1 + round % 3);
            let old = values[(next() % 10) as usize];
            let new = values[(next() % 10) as usize];
            let m0 = Meta { clock: (next() & 0xff_ffff) as u32, private_copy: next().is_multiple_of(2) };
            let m1 = Meta { clock: (next() & 0xff_ffff) as u32, private_copy: next().is_multiple_of(4) };
            let deadline = next().is_multiple_of(4).then_some(1_700_000_000_000);
            let mut e = Entry::string(key.as_bytes(), old, deadline, m0);
            let before = packed(&e);
            if e.rewrite_string(new, m1) {
                rewritten += 1;
                assert!(deadline.is_none(), "a key with a deadline was rewritten");
                assert_eq!(
                    packed(&e),
                    packed(&Entry::string(key.as_bytes(), new, None, m1)),
                    "{key} {old:?} -> {new:?}"
                );
                assert_eq!(text(&e), new);
                assert_eq!(e.meta(), m1);
                assert_eq!(e.key(), key.as_bytes());
            } else {
                assert_eq!(packed(&e), before, "a refused rewrite changed the entry");
                let fresh = Entry::string(key.as_bytes(), new, None, m1);
                assert!(
                    deadline.is_some() || packed(&fresh).len() != before.len(),
                    "{old:?} -> {new:?} fits but was refused"
                );
            }
        }
        assert!(rewritten > 200, "only {rewritten} rewrites");
        // Boxed values and packed lists are left to the general path.
        let mut boxed = Entry::new(b"k", Value::Str(StrValue::Raw(b"abc".to_vec())), None, meta());
        assert!(!boxed.rewrite_string(b"xyz", meta()));
    }

    fn text(e: &Entry) -> Vec<u8> {
        match e.value() {
            ValueRef::Str(s) => s.bytes(&mut Vec::new()).to_vec(),
            other => panic!("not a string: {other:?}"),
        }
    }

    #[test]
    fn an_entry_is_one_word() {
        assert_eq!(std::mem::size_of::<Entry>(), 8);
    }

    #[test]
    fn packed_strings_read_back_with_their_bookkeeping() {
        let long_key = vec![b'k'; 300];
        for key in [&b""[..], b"key:1", &long_key] {
            for deadline in [None, Some(1_234_567)] {
                for value in [&b"hello"[..], b"", b"-42", b"0123", &[b'x'; 100]] {
                    let e = Entry::string(key, value, deadline, meta());
                    assert_eq!(e.key(), key);
                    assert_eq!(text(&e), value);
                    assert_eq!(e.deadline(), deadline);
                    assert_eq!(e.meta(), meta());
                    // The thin pointer's length prefix is 1 or 5 bytes.
                    assert!(e.heap_size() <= 5 + HEADER + 8 + 5 + key.len() + value.len().max(8));
                }
            }
        }
        assert_eq!(Entry::string(b"k", b"-42", None, meta()).value(), ValueRef::Str(StrRef::Int(-42)));
        assert_eq!(Entry::string(b"k", b"0123", None, meta()).value(), ValueRef::Str(StrRef::Bytes(b"0123")));
    }

    #[test]
    fn deadlines_and_meta_change_in_place_or_repack() {
        let mut e = Entry::string(b"key", b"v", None, meta());
        e.set_deadline(Some(99));
        assert_eq!((e.deadline(), e.key(), text(&e)), (Some(99), &b"key"[..], b"v".to_vec()));
        e.set_deadline(Some(100));
        e.set_meta(Meta { private_copy: true, ..meta() });
        assert_eq!(e.deadline(), Some(100));
        assert!(e.meta().private_copy);
        e.set_deadline(None);
        assert_eq!((e.deadline(), e.meta().private_copy, text(&e)), (None, true, b"v".to_vec()));
    }

    #[test]
    fn integers_change_in_place_and_writes_box_the_value() {
        let mut e = Entry::string(b"n", b"10", Some(5), meta());
        let before = e.heap_size();
        e.set_int(11);
        assert_eq!((e.value(), e.heap_size()), (ValueRef::Str(StrRef::Int(11)), before));
        if let Value::Str(s) = e.value_mut() {
            s.make_raw().extend_from_slice(b"xyz");
        }
        assert_eq!((e.value(), e.deadline(), e.key()), (ValueRef::Str(StrRef::Raw(b"11xyz")), Some(5), &b"n"[..]));
        assert_eq!(e.value().encoding(), "raw");
        e.set_int(3);
        assert_eq!(e.value(), ValueRef::Str(StrRef::Int(3)));
        assert_eq!(e.heap_size(), before, "a value stored whole is packed again");
        let renamed = e.renamed(b"other");
        assert_eq!((renamed.key(), renamed.deadline(), renamed.meta()), (&b"other"[..], Some(5), meta()));
    }

    #[test]
    fn collections_change_boxed_and_read_in_place() {
        let mut list = crate::types::list::ListValue::new();
        list.push(false, b"a");
        let mut e = Entry::new(b"l", Value::List(Box::new(list)), Some(9), meta());
        assert_eq!((e.key(), e.deadline(), e.value().type_name()), (&b"l"[..], Some(9), "list"));
        let before = e.heap_size();
        if let Value::List(l) = e.value_mut() {
            l.push(false, b"b");
        }
        assert!(matches!(e.value(), ValueRef::List(l) if l.len() == 2));
        assert!(e.heap_size() >= before);
        let renamed = e.renamed(b"m");
        assert_eq!((renamed.key(), renamed.value().type_name()), (&b"m"[..], "list"));
    }

    fn list_of(items: &[&[u8]]) -> Value {
        let mut list = ListValue::new();
        items.iter().for_each(|it| list.push(false, it));
        Value::List(Box::new(list))
    }

    fn hash_of(pairs: &[(&[u8], &[u8])]) -> Value {
        let mut hash = HashValue::new();
        pairs.iter().for_each(|(f, v)| {
            hash.insert(f, v);
        });
        Value::Hash(Box::new(hash))
    }

    fn items(e: &Entry) -> Vec<Vec<u8>> {
        match e.value() {
            ValueRef::List(l) => l.iter().map(<[u8]>::to_vec).collect(),
            other => panic!("not a list: {other:?}"),
        }
    }

    #[test]
    fn small_lists_are_packed_and_read_in_place() {
        let long = vec![b'z'; 300];
        let items_in: [&[u8]; 4] = [b"a", b"", &long, b"element"];
        for deadline in [None, Some(77)] {
            let e = Entry::new(b"list:1", list_of(&items_in), deadline, meta());
            assert!(e.is_packed());
            assert_eq!((e.key(), e.deadline(), e.meta()), (&b"list:1"[..], deadline, meta()));
            assert_eq!(items(&e), items_in.map(<[u8]>::to_vec));
            let ValueRef::List(l) = e.value() else { panic!("not a list") };
            assert!(l.is_packed());
            assert_eq!(
                (l.len(), l.get(-1), l.get(2).map(<[u8]>::len), l.get(4)),
                (4, Some(&b"element"[..]), Some(300), None)
            );
            assert_eq!(l.range(1, 2).count(), 2);
            assert_eq!(l.iter().next_back(), Some(&b"element"[..]));
            assert_eq!(l.positions(b"a", -1, 0, 0), [0]);
            assert_eq!(e.value().encoding(), "quicklist");
            assert_eq!(e.value().to_owned(), list_of(&items_in));
            // One allocation: header, key, and each element with its length,
            // after the 5-byte length the thin pointer gives strings of 255 on.
            // The 6-byte key's length is in the flags.
            let body = HEADER + deadline.map_or(0, |_| 8) + 6 + (1 + 1) + 1 + (2 + 300) + (1 + 7);
            assert_eq!(e.heap_size(), 5 + body);
        }
    }

    #[test]
    fn small_hashes_are_packed_in_listpack_order() {
        let pairs: [(&[u8], &[u8]); 3] = [(b"name", b"kvik"), (b"age", b"7"), (b"city", b"Oslo")];
        let e = Entry::new(b"hash:1", hash_of(&pairs), None, meta());
        assert!(e.is_packed());
        let ValueRef::Hash(h) = e.value() else { panic!("not a hash") };
        assert!(h.is_packed());
        assert_eq!((h.len(), h.get(b"age"), h.get(b"nope"), h.encoding()), (3, Some(&b"7"[..]), None, "listpack"));
        assert_eq!(h.get_index(2), Some((&b"city"[..], &b"Oslo"[..])));
        assert_eq!(h.iter().collect::<Vec<_>>(), pairs);
        let mut seen = Vec::new();
        assert_eq!(h.scan(0, 1, |f, v| seen.push((f.to_vec(), v.to_vec()))), 0);
        assert_eq!(seen.len(), 3);
        assert_eq!(e.value().to_owned(), hash_of(&pairs));
        assert!(e.heap_size() <= 64, "{}", e.heap_size());
    }

    #[test]
    fn packing_stops_and_starts_at_the_limits() {
        use crate::types::packed::{MAX_BYTES, MAX_ELEMENTS};
        let many: Vec<Vec<u8>> = (0..=MAX_ELEMENTS).map(|i| i.to_string().into_bytes()).collect();
        let refs: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
        assert!(Entry::new(b"l", list_of(&refs[..MAX_ELEMENTS]), None, meta()).is_packed());
        assert!(!Entry::new(b"l", list_of(&refs), None, meta()).is_packed());
        let big = vec![b'x'; MAX_BYTES];
        assert!(!Entry::new(b"l", list_of(&[&big]), None, meta()).is_packed());
        assert!(Entry::new(b"l", list_of(&[&big[..MAX_BYTES - 4]]), None, meta()).is_packed());
        assert!(Entry::new(b"l", list_of(&[]), None, meta()).is_packed(), "a key made for a push starts packed");
        // A hash in the table encoding stays boxed however small.
        let mut table = HashValue::new();
        table.insert(b"f", b"v");
        table.grow_if_needed(0, 64, 0);
        assert!(!Entry::new(b"h", Value::Hash(Box::new(table)), None, meta()).is_packed());
        let fields: Vec<(&[u8], &[u8])> = refs.iter().map(|f| (*f, &b"v"[..])).collect();
        assert!(Entry::new(b"h", hash_of(&fields[..MAX_ELEMENTS / 2]), None, meta()).is_packed());
        assert!(!Entry::new(b"h", hash_of(&fields[..MAX_ELEMENTS / 2 + 1]), None, meta()).is_packed());
    }

    #[test]
    fn a_changed_collection_is_packed_again_while_small() {
        let mut e = Entry::new(b"l", list_of(&[b"a"]), Some(5), meta());
        let Value::List(l) = e.value_mut() else { panic!("not a list") };
        l.push(true, b"b");
        assert!(!e.is_packed());
        assert!(e.repack());
        assert_eq!((items(&e), e.deadline(), e.meta()), (vec![b"b".to_vec(), b"a".to_vec()], Some(5), meta()));
        // Grown past the limit: boxed for good, until it shrinks.
        let Value::List(l) = e.value_mut() else { panic!("not a list") };
        (0..crate::types::packed::MAX_ELEMENTS).for_each(|_| l.push(false, b"x"));
        assert!(!e.repack());
        let Value::List(l) = e.value_mut() else { panic!("not a list") };
        l.keep(Some((0, 2)));
        assert!(e.repack());
        assert_eq!(items(&e), [b"b".to_vec(), b"a".to_vec(), b"x".to_vec()]);
    }

    #[test]
    fn packed_collections_keep_deadline_and_meta_through_changes() {
        let mut e = Entry::new(b"h", hash_of(&[(b"f", b"v")]), None, meta());
        e.set_deadline(Some(1_000));
        assert!(e.is_packed());
        assert_eq!(e.deadline(), Some(1_000));
        let lfu = Meta { clock: lfu::clock(3, 200), private_copy: true };
        e.set_meta(lfu);
        e.set_deadline(Some(2_000));
        e.set_deadline(None);
        assert_eq!((e.meta(), e.deadline()), (lfu, None));
        let renamed = e.renamed(b"other");
        assert!(renamed.is_packed());
        assert_eq!((renamed.key(), renamed.meta()), (&b"other"[..], lfu));
        assert!(matches!(renamed.value(), ValueRef::Hash(h) if h.get(b"f") == Some(b"v")));
        let mut boxed = renamed.clone();
        let Value::Hash(h) = boxed.value_mut() else { panic!("not a hash") };
        h.insert(b"g", b"w");
        assert_eq!(boxed.meta(), lfu);
        assert!(boxed.repack());
        assert_eq!((boxed.meta(), boxed.key()), (lfu, &b"other"[..]));
        assert!(matches!(boxed.value(), ValueRef::Hash(h) if h.len() == 2));
    }

    #[test]
    fn a_small_list_key_fits_a_32_byte_chunk() {
        // Length 1, header 4 (the 11-byte key's length in its flags), key,
        // element with its length.
        let e = Entry::new(b"list:123456", list_of(&[b"element"]), None, meta());
        assert!(e.is_packed());
        assert_eq!(e.heap_size(), 24, "glibc serves up to 24 bytes from a 32-byte chunk");
        assert_eq!(Entry::string(b"key:123456", b"abc", None, meta()).heap_size(), 1 + HEADER + 10 + 3);
        let hash = Entry::new(b"h", hash_of(&[(b"f", b"v")]), None, meta());
        assert_eq!(hash.heap_size(), 1 + HEADER + 1 + 2 + 2);
    }

    #[test]
    fn key_lengths_move_from_the_flags_to_a_byte_to_five_bytes() {
        for (len, length_bytes) in [(0, 0), (1, 0), (14, 0), (15, 1), (16, 1), (254, 1), (255, 5), (300, 5)] {
            let key = vec![b'k'; len];
            for deadline in [None, Some(42)] {
                let mut e = Entry::string(&key, b"value", deadline, meta());
                let body = HEADER + deadline.map_or(0, |_| 8) + length_bytes + len + 5;
                assert_eq!(e.heap_size(), body + if body < 255 { 1 } else { 5 }, "key of {len}");
                assert_eq!(
                    (e.key(), text(&e), e.deadline(), e.meta()),
                    (&key[..], b"value".to_vec(), deadline, meta())
                );
                e.set_meta(Meta { private_copy: true, ..meta() });
                e.set_deadline(Some(7));
                e.set_int(-5);
                assert_eq!((e.key(), e.value(), e.deadline()), (&key[..], ValueRef::Str(StrRef::Int(-5)), Some(7)));
                assert!(e.meta().private_copy);
                let list = Entry::new(&key, list_of(&[b"x"]), deadline, meta());
                assert_eq!((list.key(), items(&list)), (&key[..], vec![b"x".to_vec()]));
            }
        }
    }

    #[test]
    fn the_clock_keeps_24_bits_whatever_the_policy_wrote() {
        let now = 1_700_000_000_123;
        let lru = Meta::new(now, false);
        assert_eq!((lru.clock, lru.idle_seconds(now + 4_000)), (lru::clock(now), 4));
        let lfu_meta = Meta::new(now, true);
        assert_eq!((lfu_meta.lfu_counter(), lfu_meta.lfu_minutes()), (lfu::INIT_VAL, lfu::minutes(now)));
        for m in [lru, lfu_meta, Meta { clock: lru::CLOCK_MAX, private_copy: true }] {
            for deadline in [None, Some(now + 10)] {
                let packed = Entry::string(b"k", b"v", deadline, m);
                let boxed = Entry::new(b"k", Value::Set(Default::default()), deadline, m);
                let list = Entry::new(b"k", list_of(&[b"a", b"b"]), deadline, m);
                for e in [&packed, &boxed, &list] {
                    assert_eq!((e.meta(), e.deadline()), (m, deadline));
                }
                let mut repacked = list.clone();
                let Value::List(l) = repacked.value_mut() else { panic!("not a list") };
                l.push(false, b"c");
                assert!(!repacked.is_packed());
                assert_eq!(repacked.meta(), m);
                assert!(repacked.repack());
                assert_eq!((repacked.meta(), repacked.deadline(), items(&repacked).len()), (m, deadline, 3));
            }
        }
        // Bits above the 24 are not kept, packed or boxed.
        let wide = Meta { clock: 0x0123_4567, private_copy: false };
        let narrow = Meta { clock: 0x23_4567, ..wide };
        assert_eq!(Entry::string(b"k", b"v", None, wide).meta(), narrow);
        assert_eq!(Entry::new(b"k", Value::Set(Default::default()), None, wide).meta(), narrow);
        let mut e = Entry::string(b"k", b"v", Some(5), meta());
        e.set_meta(wide);
        assert_eq!((e.meta(), e.deadline(), text(&e)), (narrow, Some(5), b"v".to_vec()));
    }

    #[test]
    fn touches_follow_the_policy() {
        let tuning = lfu::Tuning::default();
        let mut m = Meta::new(0, false);
        m.touch(90_000, &tuning, 0);
        assert_eq!(m.clock, 90);
        tuning.set_lfu_policy(true);
        m.touch(120_000, &tuning, 0);
        assert_eq!(m.lfu_minutes(), 2);
        let mut e = Entry::string(b"k", b"v", None, Meta::new(0, true));
        let mut meta = e.meta();
        meta.touch(60_000, &tuning, 0);
        e.set_meta(meta);
        // One minute idle takes one off, the access puts it back.
        assert_eq!((e.meta().lfu_minutes(), e.meta().lfu_counter()), (1, lfu::INIT_VAL));
    }

    #[test]
    fn values_and_nodes_stay_small() {
        // Every type but the string is boxed, so none makes a key's node larger.
        assert!(std::mem::size_of::<Value>() <= 32);
        assert!(std::mem::size_of::<Node>() <= 80);
    }
}
