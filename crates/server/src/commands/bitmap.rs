//! Bitmap commands: strings read and written as arrays of bits, most
//! significant bit of each byte first, as Redis lays them out.
//!
//! SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO. The pure bit
//! arithmetic (reading and writing fields, overflow handling) sits at the
//! bottom, apart from the commands, so it can be tested on its own.

use kvik_protocol::number::parse_i64;

use super::{Ctx, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::keyspace::{now_ms, Db};
use crate::types::string::StrValue;
use crate::types::{Value, ValueRef};

handlers! {
    SETBIT(c) => setbit(c),
    GETBIT(c) => getbit(c),
    BITCOUNT(c) => bitcount(c),
    BITPOS(c) => bitpos(c),
    BITOP(c) => bitop(c),
    BITFIELD(c) => bitfield(c, false),
    BITFIELD_RO(c) => bitfield(c, true),
}

/// Redis's error for a bad bit offset.
const BAD_OFFSET: &[u8] = b"ERR bit offset is not an integer or out of range";

/// Parse a bit offset with Redis's rules: a non-negative integer whose byte
/// lies within `proto-max-bulk-len`; with `field_bits` (BITFIELD), `#n`
/// means the n-th field of that width.
fn bit_offset(arg: &[u8], field_bits: Option<u32>, max_len: u64) -> Option<u64> {
    let (text, scale) = match (arg.split_first(), field_bits) {
        (Some((b'#', rest)), Some(bits)) if !rest.is_empty() => (rest, i64::from(bits)),
        _ => (arg, 1),
    };
    let n = parse_i64(text)?.wrapping_mul(scale);
    let n = u64::try_from(n).ok()?;
    (n >> 3 < max_len).then_some(n)
}

/// `proto-max-bulk-len`, the longest string a bit offset may reach into.
fn max_len<T: ReplyTarget>(c: &Ctx<'_, T>) -> u64 {
    c.state.limits.proto_max_bulk_len() as u64
}

/// The string at `key` as bytes (an integer's text); `Err` for another type.
fn bytes_at(db: &mut Db, key: &[u8], now: i64) -> Result<Option<Vec<u8>>, ()> {
    read_bytes(db, key, now, <[u8]>::to_vec)
}

/// Run `read` on the bytes of the string at `key` (an integer's text) in
/// place, so reading a few bits of a large bitmap copies nothing; `Ok(None)`
/// for a missing key, `Err` for another type.
fn read_bytes<R>(db: &mut Db, key: &[u8], now: i64, read: impl FnOnce(&[u8]) -> R) -> Result<Option<R>, ()> {
    match db.get(key, now).map(|e| e.value()) {
        None => Ok(None),
        Some(ValueRef::Str(s)) => {
            let mut scratch = Vec::new();
            Ok(Some(read(s.bytes(&mut scratch))))
        }
        Some(_) => Err(()),
    }
}

/// The bytes of the string at `key`, created or zero-extended so that bit
/// `max_bit` exists (Redis's `lookupStringForBitCommand`); `None` for another
/// type. The flag says whether the string was created or grown, which is a
/// change even when no bit then changes.
fn bits_for_write<'d>(db: &'d mut Db, key: &[u8], max_bit: u64, now: i64) -> Option<(&'d mut Vec<u8>, bool)> {
    let need = usize::try_from(max_bit >> 3).ok()?.checked_add(1)?;
    match db.get_mut_or_insert(key, now, || Value::Str(StrValue::Raw(Vec::new()))).map(|e| e.value_mut()) {
        Some(Value::Str(s)) => {
            let bytes = s.make_raw();
            let grown = bytes.len() < need;
            if grown {
                bytes.resize(need, 0);
            }
            Some((bytes, grown))
        }
        _ => None,
    }
}

/// `SETBIT key offset 0|1`: the bit's previous value.
fn setbit<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(offset) = bit_offset(c.arg(2), None, max_len(c)) else { return c.error(BAD_OFFSET) };
    let on = match parse_i64(c.arg(3)) {
        Some(v @ (0 | 1)) => v == 1,
        _ => return c.error(b"ERR bit is not an integer or out of range"),
    };
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let old = bits_for_write(shard.db(db), key, offset, now_ms()).map(|(bytes, grown)| {
        let old = get_bit(bytes, offset);
        set_bit(bytes, offset, on);
        (old, grown || old != on)
    });
    // As in Redis 7.0, a SETBIT that changes nothing is not announced.
    if old.is_some_and(|(_, changed)| changed) {
        c.notify(EventClass::String, "setbit", key);
    }
    drop(shard);
    let old = old.map(|(old, _)| old);
    match old {
        Some(b) => c.reply(|s| s.integer(i64::from(b))),
        None => c.error(WRONGTYPE),
    }
}

/// `GETBIT key offset`: 0 beyond the end of the string or for a missing key.
fn getbit<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let Some(offset) = bit_offset(c.arg(2), None, max_len(c)) else { return c.error(BAD_OFFSET) };
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let bit = read_bytes(shard.db(db), key, now_ms(), |b| get_bit(b, offset)).map(|v| v.unwrap_or(false));
    drop(shard);
    match bit {
        Ok(b) => c.reply(|s| s.integer(i64::from(b))),
        Err(()) => c.error(WRONGTYPE),
    }
}

/// Resolve a BITCOUNT/BITPOS range to an inclusive bit range within a
/// string of `len` bytes, with Redis's rules: negative indexes count from
/// the end, the end is clamped to the string, and byte ranges cover whole
/// bytes. `None` for an empty range.
fn bit_range(len: usize, start: i64, end: i64, in_bits: bool) -> Option<(u64, u64)> {
    let total = i64::try_from(len).unwrap_or(i64::MAX).saturating_mul(if in_bits { 8 } else { 1 });
    let resolve = |i: i64| if i < 0 { (total + i).max(0) } else { i };
    let start = resolve(start);
    let end = resolve(end).min(total - 1);
    if start > end {
        return None;
    }
    let (start, end) = (start.unsigned_abs(), end.unsigned_abs());
    Some(if in_bits { (start, end) } else { (start * 8, end * 8 + 7) })
}

/// `BYTE` or `BIT` (any case); `None` for anything else.
fn unit_is_bit(arg: &[u8]) -> Option<bool> {
    if arg.eq_ignore_ascii_case(b"bit") {
        Some(true)
    } else if arg.eq_ignore_ascii_case(b"byte") {
        Some(false)
    } else {
        None
    }
}

/// A BITCOUNT/BITPOS range as given: start, end (if given) and unit.
struct RangeArgs {
    start: i64,
    end: Option<i64>,
    in_bits: bool,
}

/// Parse `[start [end [BYTE | BIT]]]` from argument `first` on, with
/// BITCOUNT's rules when `bitcount` is set and BITPOS's otherwise. A wrong
/// argument count is a syntax error before anything is parsed (BITCOUNT
/// needs the end when it has a start). BITPOS reads the unit before the
/// end and BITCOUNT after it, which decides which error a client sees.
fn range_args<T: ReplyTarget>(
    c: &Ctx<'_, T>,
    first: usize,
    bitcount: bool,
) -> Result<Option<RangeArgs>, &'static [u8]> {
    match c.argc() - first {
        0 => return Ok(None),
        1 if bitcount => return Err(SYNTAX_ERROR),
        n if n > 3 => return Err(SYNTAX_ERROR),
        _ => {}
    }
    let start = parse_i64(c.arg(first)).ok_or(NOT_AN_INTEGER)?;
    let parse_end =
        || if c.argc() > first + 1 { parse_i64(c.arg(first + 1)).map(Some).ok_or(NOT_AN_INTEGER) } else { Ok(None) };
    let early_end = if bitcount { Some(parse_end()?) } else { None };
    // BITCOUNT answers 0 for two negative indexes in the wrong order before
    // it looks at the unit, so a bad unit goes unnoticed there.
    if let Some(Some(end)) = early_end {
        if start < 0 && end < 0 && start > end {
            return Ok(Some(RangeArgs { start, end: Some(end), in_bits: false }));
        }
    }
    let in_bits = match c.argc() - first {
        3 => unit_is_bit(c.arg(first + 2)).ok_or(SYNTAX_ERROR)?,
        _ => false,
    };
    let end = match early_end {
        Some(end) => end,
        None => parse_end()?,
    };
    Ok(Some(RangeArgs { start, end, in_bits }))
}

/// `BITCOUNT key [start end [BYTE | BIT]]`: the number of set bits.
///
/// As in Redis, a missing key answers 0 before the arguments are looked at.
fn bitcount<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let args = range_args(c, 2, true);
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let count = read_bytes(shard.db(db), key, now_ms(), |bytes| {
        let range = match &args {
            Err(msg) => return Err(*msg),
            Ok(None) => (!bytes.is_empty()).then(|| (0, bytes.len() as u64 * 8 - 1)),
            Ok(Some(RangeArgs { start, end: Some(end), .. })) if *start < 0 && *end < 0 && start > end => None,
            Ok(Some(r)) => bit_range(bytes.len(), r.start, r.end.unwrap_or(i64::MAX), r.in_bits),
        };
        Ok(range.map_or(0, |(from, to)| count_bits(bytes, from, to)))
    });
    drop(shard);
    match count {
        Err(()) => c.error(WRONGTYPE),
        Ok(None) => c.reply(|s| s.integer(0)),
        Ok(Some(Err(msg))) => c.error(msg),
        Ok(Some(Ok(n))) => c.reply(|s| s.integer(i64::try_from(n).unwrap_or(i64::MAX))),
    }
}

/// `BITPOS key bit [start [end [BYTE | BIT]]]`: the first bit with that value.
///
/// Looking for a 0 without an explicit end treats the string as followed by
/// zeros, so the answer can be the first bit past its end; a missing key is
/// all zeros.
fn bitpos<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let want = match parse_i64(c.arg(2)) {
        None => return c.error(NOT_AN_INTEGER),
        Some(b @ (0 | 1)) => b == 1,
        Some(_) => return c.error(b"ERR The bit argument must be 1 or 0."),
    };
    let args = range_args(c, 3, false);
    let key = c.arg(1);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let pos = read_bytes(shard.db(db), key, now_ms(), |bytes| {
        let (range, end_given) = match &args {
            Err(msg) => return Err(*msg),
            Ok(None) => ((!bytes.is_empty()).then(|| (0, bytes.len() as u64 * 8 - 1)), false),
            Ok(Some(r)) => (bit_range(bytes.len(), r.start, r.end.unwrap_or(i64::MAX), r.in_bits), r.end.is_some()),
        };
        Ok(match range {
            None => -1,
            Some((from, to)) => match find_bit(bytes, from, to, want) {
                Some(i) => i64::try_from(i).unwrap_or(i64::MAX),
                // Past the range counts as zeros unless the end was given.
                None if !want && !end_given => i64::try_from((to / 8 + 1) * 8).unwrap_or(i64::MAX),
                None => -1,
            },
        })
    });
    drop(shard);
    match pos {
        Err(()) => c.error(WRONGTYPE),
        Ok(None) => c.reply(|s| s.integer(if want { -1 } else { 0 })),
        Ok(Some(Err(msg))) => c.error(msg),
        Ok(Some(Ok(n))) => c.reply(|s| s.integer(n)),
    }
}

/// `BITOP AND|OR|XOR|NOT destkey key [key ...]`: the result's length.
///
/// Missing keys count as empty strings, shorter strings are zero-padded to
/// the longest; an empty result deletes the destination.
fn bitop<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    #[derive(PartialEq, Clone, Copy)]
    enum Op {
        And,
        Or,
        Xor,
        Not,
    }
    let name = c.arg(1);
    let op = [(&b"and"[..], Op::And), (b"or", Op::Or), (b"xor", Op::Xor), (b"not", Op::Not)]
        .into_iter()
        .find(|(w, _)| name.eq_ignore_ascii_case(w))
        .map(|(_, op)| op);
    let Some(op) = op else { return c.error(SYNTAX_ERROR) };
    if op == Op::Not && c.argc() != 4 {
        return c.error(b"ERR BITOP NOT must be called with a single source key.");
    }
    let dest = c.arg(2);
    let sources: Vec<&[u8]> = (3..c.argc()).map(|i| c.arg(i)).collect();
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_keys(db, sources.iter().copied().chain([dest]));
    let mut inputs = Vec::with_capacity(sources.len());
    for k in &sources {
        match bytes_at(lock.shard_for(ks, k).db(db), k, now) {
            Ok(v) => inputs.push(v.unwrap_or_default()),
            Err(()) => {
                drop(lock);
                return c.error(WRONGTYPE);
            }
        }
    }
    let len = inputs.iter().map(Vec::len).max().unwrap_or(0);
    let byte = |input: &Vec<u8>, i: usize| input.get(i).copied().unwrap_or(0);
    let result: Vec<u8> = (0..len)
        .map(|i| {
            let mut rest = inputs.iter().map(|v| byte(v, i));
            let first = rest.next().unwrap_or(0);
            match op {
                Op::Not => !first,
                Op::And => rest.fold(first, |acc, b| acc & b),
                Op::Or => rest.fold(first, |acc, b| acc | b),
                Op::Xor => rest.fold(first, |acc, b| acc ^ b),
            }
        })
        .collect();
    let d = lock.shard_for(ks, dest).db(db);
    if result.is_empty() {
        if d.remove(dest).is_some() {
            c.notify(EventClass::Generic, "del", dest);
        }
    } else {
        d.replace(dest, Value::Str(StrValue::Raw(result)));
        c.notify(EventClass::String, "set", dest);
    }
    drop(lock);
    c.reply(|s| s.integer(i64::try_from(len).unwrap_or(i64::MAX)));
}

/// What BITFIELD does when a result does not fit its field.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Overflow {
    /// Keep the low bits (two's complement wrap-around).
    Wrap,
    /// Clamp to the field's minimum or maximum.
    Sat,
    /// Leave the field alone and answer null.
    Fail,
}

/// A BITFIELD field type: `i1`..`i64` or `u1`..`u63`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FieldType {
    /// Signed (two's complement) or unsigned.
    pub signed: bool,
    /// Width in bits.
    pub bits: u32,
}

/// One BITFIELD operation, checked and ready to run.
struct FieldOp {
    kind: FieldOpKind,
    ty: FieldType,
    offset: u64,
    overflow: Overflow,
}

enum FieldOpKind {
    Get,
    Set(i64),
    IncrBy(i64),
}

/// Parse a BITFIELD type, with Redis's error for anything else.
fn field_type(arg: &[u8]) -> Option<FieldType> {
    let (first, rest) = arg.split_first()?;
    // Only lowercase letters, as Redis checks them.
    let signed = match first {
        b'i' => true,
        b'u' => false,
        _ => return None,
    };
    let bits = parse_i64(rest)?;
    let max = if signed { 64 } else { 63 };
    (1..=max).contains(&bits).then_some(FieldType { signed, bits: bits as u32 })
}

/// `BITFIELD key [GET type offset] [SET type offset value]
/// [INCRBY type offset increment] [OVERFLOW WRAP|SAT|FAIL] ...` and
/// `BITFIELD_RO` (GET only): one reply per GET/SET/INCRBY, in order.
fn bitfield<T: ReplyTarget>(c: &mut Ctx<'_, T>, read_only: bool) {
    const BAD_TYPE: &[u8] =
        b"ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut writes = false;
    let mut highest = 0u64;
    let mut j = 2;
    while j < c.argc() {
        let sub = c.arg(j);
        let left = c.argc() - j - 1;
        let is = |w: &[u8]| sub.eq_ignore_ascii_case(w);
        let is_get = is(b"get") && left >= 2;
        if !is_get && !((is(b"set") || is(b"incrby")) && left >= 3) {
            if is(b"overflow") && left >= 1 {
                let kind = c.arg(j + 1);
                overflow = if kind.eq_ignore_ascii_case(b"wrap") {
                    Overflow::Wrap
                } else if kind.eq_ignore_ascii_case(b"sat") {
                    Overflow::Sat
                } else if kind.eq_ignore_ascii_case(b"fail") {
                    Overflow::Fail
                } else {
                    return c.error(b"ERR Invalid OVERFLOW type specified");
                };
                j += 2;
                continue;
            }
            return c.error(SYNTAX_ERROR);
        }
        let Some(ty) = field_type(c.arg(j + 1)) else { return c.error(BAD_TYPE) };
        let Some(offset) = bit_offset(c.arg(j + 2), Some(ty.bits), max_len(c)) else { return c.error(BAD_OFFSET) };
        let kind = if is_get {
            FieldOpKind::Get
        } else {
            writes = true;
            highest = highest.max(offset + u64::from(ty.bits) - 1);
            let Some(n) = parse_i64(c.arg(j + 3)) else { return c.error(NOT_AN_INTEGER) };
            if is(b"set") {
                FieldOpKind::Set(n)
            } else {
                FieldOpKind::IncrBy(n)
            }
        };
        ops.push(FieldOp { kind, ty, offset, overflow });
        j += if is_get { 3 } else { 4 };
    }
    let key = c.arg(1);
    let db = c.session.db;
    let now = now_ms();
    if !writes {
        let state = c.state;
        let mut shard = state.keyspace.lock_key(key);
        let read = |bytes: &[u8]| ops.iter().map(|op| read_field(bytes, op.offset, op.ty)).collect::<Vec<i64>>();
        let values = read_bytes(shard.db(db), key, now, read);
        drop(shard);
        let Ok(values) = values else { return c.error(WRONGTYPE) };
        let values = values.unwrap_or_else(|| read(&[]));
        return c.reply(|s| {
            s.array(values.len());
            for v in &values {
                s.integer(*v);
            }
        });
    }
    if read_only {
        return c.error(b"ERR BITFIELD_RO only supports the GET subcommand");
    }
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let Some((bytes, grown)) = bits_for_write(shard.db(db), key, highest, now) else {
        drop(shard);
        return c.error(WRONGTYPE);
    };
    let mut changed = grown;
    let results: Vec<Option<i64>> = ops
        .iter()
        .map(|op| {
            let old = read_field(bytes, op.offset, op.ty);
            let (target, reply_new) = match op.kind {
                FieldOpKind::Get => return Some(old),
                FieldOpKind::Set(v) => (field_add(op.ty, v, 0), false),
                FieldOpKind::IncrBy(n) => (field_add(op.ty, old, n), true),
            };
            let new = match (target, op.overflow) {
                (FieldSum::Fits(v), _) => v,
                (FieldSum::Over { wrapped, .. }, Overflow::Wrap) => wrapped,
                (FieldSum::Over { saturated, .. }, Overflow::Sat) => saturated,
                (FieldSum::Over { .. }, Overflow::Fail) => return None,
            };
            changed |= new != old;
            write_field(bytes, op.offset, op.ty, new);
            Some(if reply_new { new } else { old })
        })
        .collect();
    if changed {
        c.notify(EventClass::String, "setbit", key);
    }
    drop(shard);
    c.reply(|s| {
        s.array(results.len());
        for r in &results {
            match r {
                Some(v) => s.integer(*v),
                None => s.null(),
            }
        }
    });
}

/// Bit `i` of `bytes` (most significant bit of each byte first); 0 past the end.
pub fn get_bit(bytes: &[u8], i: u64) -> bool {
    let byte = usize::try_from(i >> 3).ok().and_then(|b| bytes.get(b));
    byte.is_some_and(|b| b & (0x80 >> (i & 7)) != 0)
}

/// Set or clear bit `i`, which must lie within `bytes`.
pub fn set_bit(bytes: &mut [u8], i: u64, on: bool) {
    if let Some(b) = usize::try_from(i >> 3).ok().and_then(|b| bytes.get_mut(b)) {
        let mask = 0x80 >> (i & 7);
        if on {
            *b |= mask;
        } else {
            *b &= !mask;
        }
    }
}

/// The first bit equal to `want` in the inclusive range `from..=to`,
/// skipping whole bytes that cannot hold it.
pub fn find_bit(bytes: &[u8], from: u64, to: u64, want: bool) -> Option<u64> {
    let skip = if want { 0x00 } else { 0xff };
    let mut i = from;
    while i <= to {
        if i.is_multiple_of(8) && i + 7 <= to {
            let byte = usize::try_from(i / 8).ok().and_then(|b| bytes.get(b)).copied().unwrap_or(0);
            if byte == skip {
                i += 8;
                continue;
            }
        }
        if get_bit(bytes, i) == want {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Number of set bits in the inclusive bit range `from..=to`.
pub fn count_bits(bytes: &[u8], from: u64, to: u64) -> u64 {
    let (first, last) = ((from / 8) as usize, (to / 8) as usize);
    let Some(span) = bytes.get(first..=last) else { return 0 };
    let whole: u64 = span.iter().map(|b| u64::from(b.count_ones())).sum();
    let head = (from % 8) as u32;
    let tail = 7 - (to % 8) as u32;
    let head_extra = span[0].checked_shr(8 - head).unwrap_or(0).count_ones();
    let tail_extra = (span[span.len() - 1] & ((1u16 << tail) - 1) as u8).count_ones();
    whole - u64::from(head_extra) - u64::from(tail_extra)
}

/// The value of the field of type `ty` at bit `offset` (zeros past the end).
pub fn read_field(bytes: &[u8], offset: u64, ty: FieldType) -> i64 {
    let raw = (0..u64::from(ty.bits)).fold(0u64, |acc, i| (acc << 1) | u64::from(get_bit(bytes, offset + i)));
    if ty.signed && ty.bits < 64 && raw >> (ty.bits - 1) & 1 == 1 {
        (raw | (u64::MAX << ty.bits)) as i64
    } else {
        raw as i64
    }
}

/// Store the low `ty.bits` bits of `value` at bit `offset` (within `bytes`).
pub fn write_field(bytes: &mut [u8], offset: u64, ty: FieldType, value: i64) {
    let v = value as u64;
    for i in 0..u64::from(ty.bits) {
        set_bit(bytes, offset + i, (v >> (u64::from(ty.bits) - 1 - i)) & 1 == 1);
    }
}

/// The outcome of `value + incr` in a field.
#[derive(Debug, PartialEq, Eq)]
pub enum FieldSum {
    /// The sum fits the field.
    Fits(i64),
    /// It does not: what WRAP and SAT would store instead.
    Over {
        /// The low bits of the sum, sign-extended for signed fields.
        wrapped: i64,
        /// The field's maximum or minimum, towards the overflow.
        saturated: i64,
    },
}

/// Add `incr` to `value` in a field of type `ty`, with Redis's overflow rules.
///
/// For unsigned fields `value` is read as the unsigned 64-bit number of its
/// bits, so SET of a negative number is an overflow past the maximum, as in
/// Redis.
pub fn field_add(ty: FieldType, value: i64, incr: i64) -> FieldSum {
    let bits = ty.bits;
    let wrap = |sum: u64| -> i64 {
        if bits >= 64 {
            return sum as i64;
        }
        let low = sum & !(u64::MAX << bits);
        if ty.signed && low >> (bits - 1) & 1 == 1 {
            (low | (u64::MAX << bits)) as i64
        } else {
            low as i64
        }
    };
    let wrapped = wrap((value as u64).wrapping_add(incr as u64));
    if ty.signed {
        let max = if bits == 64 { i64::MAX } else { (1i64 << (bits - 1)) - 1 };
        let min = -max - 1;
        // Redis's test, word for word: the room left is computed with
        // wrapping arithmetic, so a SET far below the minimum of a narrow
        // field can look like an overflow past the maximum, and SAT then
        // stores the maximum.
        let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
        let min_incr = min.wrapping_sub(value);
        if value > max || (bits != 64 && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr) {
            FieldSum::Over { wrapped, saturated: max }
        } else if value < min || (bits != 64 && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr) {
            FieldSum::Over { wrapped, saturated: min }
        } else {
            FieldSum::Fits(value.wrapping_add(incr))
        }
    } else {
        let max = (1u64 << bits) - 1;
        let v = value as u64;
        let sum = i128::from(v) + i128::from(incr);
        if v > max || sum > i128::from(max) {
            FieldSum::Over { wrapped, saturated: max as i64 }
        } else if sum < 0 {
            FieldSum::Over { wrapped, saturated: 0 }
        } else {
            FieldSum::Fits(sum as i64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::string::MAX_STRING_LEN;

    const U8: FieldType = FieldType { signed: false, bits: 8 };
    const I8: FieldType = FieldType { signed: true, bits: 8 };
    const I64: FieldType = FieldType { signed: true, bits: 64 };

    #[test]
    fn bits_are_most_significant_first() {
        let mut b = vec![0u8; 2];
        set_bit(&mut b, 1, true);
        set_bit(&mut b, 15, true);
        assert_eq!(b, [0x40, 0x01]);
        assert!(get_bit(&b, 1) && get_bit(&b, 15) && !get_bit(&b, 0) && !get_bit(&b, 100));
        assert_eq!(count_bits(&[0xff, 0xff], 3, 12), 10);
        assert_eq!(count_bits(&[0xff], 0, 7), 8);
        assert_eq!(find_bit(&[0x00, 0x00, 0x10], 0, 23, true), Some(19));
        assert_eq!(find_bit(&[0xff, 0xfe], 0, 15, false), Some(15));
        assert_eq!(find_bit(&[0xff, 0xfe], 0, 14, false), None);
        assert_eq!(find_bit(&[0x01], 3, 6, true), None);
    }

    #[test]
    fn fields_read_and_write_across_bytes() {
        let mut b = vec![0u8; 3];
        write_field(&mut b, 4, U8, 0xab);
        assert_eq!(b, [0x0a, 0xb0, 0]);
        assert_eq!(read_field(&b, 4, U8), 0xab);
        assert_eq!(read_field(&b, 4, I8), -85);
        assert_eq!(read_field(&b, 20, U8), 0);
        let t = FieldType { signed: true, bits: 4 };
        write_field(&mut b, 16, t, -1);
        assert_eq!(read_field(&b, 16, t), -1);
    }

    #[test]
    fn overflow_rules_match_redis() {
        assert_eq!(field_add(U8, 250, 10), FieldSum::Over { wrapped: 4, saturated: 255 });
        assert_eq!(field_add(U8, 5, -10), FieldSum::Over { wrapped: 251, saturated: 0 });
        assert_eq!(field_add(U8, -1, 0), FieldSum::Over { wrapped: 255, saturated: 255 });
        assert_eq!(field_add(I8, 127, 1), FieldSum::Over { wrapped: -128, saturated: 127 });
        assert_eq!(field_add(I8, -128, -1), FieldSum::Over { wrapped: 127, saturated: -128 });
        assert_eq!(field_add(I8, 100, -50), FieldSum::Fits(50));
        assert_eq!(field_add(I64, i64::MAX, 1), FieldSum::Over { wrapped: i64::MIN, saturated: i64::MAX });
        assert_eq!(field_add(I64, i64::MIN, -1), FieldSum::Over { wrapped: i64::MAX, saturated: i64::MIN });
        // SET of i64::MIN into an i63 field: Redis's wrapping room test sees an overflow upwards.
        let i63 = FieldType { signed: true, bits: 63 };
        assert_eq!(field_add(i63, i64::MIN, 0), FieldSum::Over { wrapped: 0, saturated: (1 << 62) - 1 });
        assert_eq!(field_add(I8, -200, 0), FieldSum::Over { wrapped: 56, saturated: -128 });
    }

    #[test]
    fn field_types_and_offsets() {
        assert_eq!(field_type(b"i64"), Some(I64));
        assert_eq!(field_type(b"u8"), Some(U8));
        assert_eq!(field_type(b"U8"), None);
        assert_eq!(field_type(b"u64"), None);
        assert_eq!(field_type(b"i0"), None);
        assert_eq!(field_type(b"i08"), None);
        assert_eq!(bit_offset(b"#3", Some(8), MAX_STRING_LEN), Some(24));
        assert_eq!(bit_offset(b"#3", None, MAX_STRING_LEN), None);
        assert_eq!(bit_offset(b"4294967295", None, MAX_STRING_LEN), Some(4294967295));
        assert_eq!(bit_offset(b"4294967296", None, MAX_STRING_LEN), None);
        assert_eq!(bit_offset(b"-1", None, MAX_STRING_LEN), None);
    }
}
