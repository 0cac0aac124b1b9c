//! The payload format of DUMP and RESTORE.
//!
//! kvik uses its own format rather than Redis's RDB encoding: a payload only
//! has to travel between kvik servers (DUMP on one, RESTORE on another), and
//! its own format can follow kvik's value types as they grow. The layout:
//!
//! ```text
//! [1B value kind][value body][2B format version, little-endian][8B CRC-64, little-endian]
//! ```
//!
//! The CRC-64 (Jones polynomial, reflected, as Redis uses for its payloads)
//! covers every byte before it, so a truncated or altered payload is refused
//! before anything is decoded. Bodies: a string is its bytes. A list is a
//! varint element count and the elements; a hash is a varint field count
//! and each field and value, in the hash's order (a restored hash gets the
//! encoding the limits in force give it, as a hash loaded by Redis does, so
//! the payload does not record it). A set is its
//! encoding (0 `intset`, 1 `hashtable`), a varint count and the members: an
//! `intset`'s as 8-byte little-endian integers in ascending order, a hash
//! set's as varint-length-prefixed bytes. A sorted set is its encoding (0
//! `listpack`, 1 `skiplist`), a varint count and, in ascending order, each
//! member's score as the 8 little-endian bytes of the double and its
//! length-prefixed name. A stream is its last id, largest deleted id and
//! count of entries ever added, its entries (id, then the length-prefixed
//! fields and values) and its groups (name, last id, read counter, pending
//! entries with consumer, time and count, consumers with seen time); ids
//! are two varints. Decoding checks what the types rely on (order,
//! distinct members, no NaN score), so even a payload with a valid checksum
//! cannot plant a value the commands would misread.

use super::compact::CompactBytes;
use super::hash::HashValue;
use super::list::ListValue;
use super::member_table::{Inserted, MemberTable};
use super::set::SetValue;
use super::stream::{Consumer, Group, NodeLimits, Pending, StreamId, StreamValue};
use super::string::StrValue;
use super::zset::ZSetValue;
use super::{Value, ValueRef};

/// Version written into payloads; RESTORE refuses any other.
///
/// The footer has the shape of Redis's (version, then CRC-64), and Redis
/// restores any payload whose version is not above its own RDB version and
/// whose checksum holds, reading the body as RDB. So kvik writes the
/// largest version there is: every Redis and Valkey refuses its payloads
/// instead of restoring a kvik hash as something else.
pub const FORMAT_VERSION: u16 = u16::MAX;

/// Version and checksum bytes at the end of every payload.
const FOOTER: usize = 10;

const KIND_STRING: u8 = 0;
const KIND_LIST: u8 = 1;
const KIND_HASH: u8 = 2;
const KIND_SET: u8 = 3;
const KIND_ZSET: u8 = 4;
const KIND_STREAM: u8 = 15;

/// Why a payload cannot be restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadError {
    /// Too short, another version, or a checksum mismatch.
    VersionOrChecksum,
    /// Intact, but not a value kvik can decode.
    BadFormat,
}

/// The payload DUMP replies with for `value`.
pub fn dump(value: ValueRef<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    match value {
        ValueRef::Str(s) => {
            out.push(KIND_STRING);
            let mut scratch = Vec::new();
            out.extend_from_slice(s.bytes(&mut scratch));
        }
        ValueRef::List(l) => {
            out.push(KIND_LIST);
            put_varint(&mut out, l.len() as u64);
            l.iter().for_each(|item| put_bytes(&mut out, item));
        }
        ValueRef::Hash(h) => {
            out.push(KIND_HASH);
            put_varint(&mut out, h.len() as u64);
            for (f, v) in h.iter() {
                put_bytes(&mut out, f);
                put_bytes(&mut out, v);
            }
        }
        ValueRef::Set(s) => {
            out.push(KIND_SET);
            dump_set(&mut out, s);
        }
        ValueRef::ZSet(z) => {
            out.push(KIND_ZSET);
            dump_zset(&mut out, z);
        }
        ValueRef::Stream(st) => {
            out.push(KIND_STREAM);
            dump_stream(&mut out, st);
        }
    }
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Check `payload`'s version and checksum without decoding it.
pub fn verify(payload: &[u8]) -> Result<&[u8], PayloadError> {
    if payload.len() < FOOTER {
        return Err(PayloadError::VersionOrChecksum);
    }
    let (data, crc) = payload.split_at(payload.len() - 8);
    let version = u16::from_le_bytes([data[data.len() - 2], data[data.len() - 1]]);
    let mut stored = [0u8; 8];
    stored.copy_from_slice(crc);
    if version != FORMAT_VERSION || crc64(0, data) != u64::from_le_bytes(stored) {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok(&data[..data.len() - 2])
}

/// Decode a payload DUMP produced. A hash comes back as a table; the
/// caller gives it the encoding the limits in force say.
pub fn restore(payload: &[u8]) -> Result<Value, PayloadError> {
    let body = verify(payload)?;
    match body.split_first() {
        Some((&KIND_STRING, bytes)) => Ok(Value::Str(StrValue::from_bytes(bytes))),
        Some((&KIND_LIST, body)) => restore_list(&mut Reader(body)).map(|l| Value::List(Box::new(l))),
        Some((&KIND_HASH, body)) => restore_hash(&mut Reader(body)).map(|h| Value::Hash(Box::new(h))),
        Some((&KIND_SET, body)) => restore_set(&mut Reader(body)).map(|s| Value::Set(Box::new(s))),
        Some((&KIND_ZSET, body)) => restore_zset(&mut Reader(body)).map(|z| Value::ZSet(Box::new(z))),
        Some((&KIND_STREAM, body)) => restore_stream(&mut Reader(body)).map(|s| Value::Stream(Box::new(s))),
        _ => Err(PayloadError::BadFormat),
    }
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn dump_set(out: &mut Vec<u8>, set: &SetValue) {
    match set {
        SetValue::Ints(ints) => {
            out.push(0);
            put_varint(out, ints.len() as u64);
            for n in ints {
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
        SetValue::Table(members, _) => {
            out.push(1);
            put_varint(out, members.len() as u64);
            for m in members.members() {
                put_bytes(out, m);
            }
        }
    }
}

fn dump_zset(out: &mut Vec<u8>, z: &ZSetValue) {
    out.push(u8::from(z.is_large()));
    put_varint(out, z.len() as u64);
    for (member, score) in z.iter() {
        out.extend_from_slice(&score.to_le_bytes());
        put_bytes(out, member);
    }
}

/// A cursor over a payload body; every read fails cleanly at the end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PayloadError> {
        if n > self.0.len() {
            return Err(PayloadError::BadFormat);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, PayloadError> {
        Ok(self.take(1)?[0])
    }

    fn eight(&mut self) -> Result<[u8; 8], PayloadError> {
        let mut out = [0u8; 8];
        out.copy_from_slice(self.take(8)?);
        Ok(out)
    }

    fn varint(&mut self) -> Result<u64, PayloadError> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(PayloadError::BadFormat)
    }

    /// A count of items each at least `min_size` bytes long, checked against
    /// what is left so a forged count cannot ask for a huge allocation.
    fn count(&mut self, min_size: usize) -> Result<usize, PayloadError> {
        let n = usize::try_from(self.varint()?).map_err(|_| PayloadError::BadFormat)?;
        if n.checked_mul(min_size).is_none_or(|need| need > self.0.len()) {
            return Err(PayloadError::BadFormat);
        }
        Ok(n)
    }

    fn bytes(&mut self) -> Result<&'a [u8], PayloadError> {
        let n = usize::try_from(self.varint()?).map_err(|_| PayloadError::BadFormat)?;
        self.take(n)
    }

    fn finish<T>(&self, value: T) -> Result<T, PayloadError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(PayloadError::BadFormat)
        }
    }
}

/// A list body: nonempty, every element whole, nothing after.
fn restore_list(r: &mut Reader<'_>) -> Result<ListValue, PayloadError> {
    let n = r.count(1)?;
    if n == 0 {
        return Err(PayloadError::BadFormat);
    }
    let mut list = ListValue::new();
    for _ in 0..n {
        list.push(false, r.bytes()?);
    }
    r.finish(list)
}

/// A hash body: nonempty, no field twice, nothing after.
fn restore_hash(r: &mut Reader<'_>) -> Result<HashValue, PayloadError> {
    let n = r.count(2)?;
    if n == 0 {
        return Err(PayloadError::BadFormat);
    }
    let mut hash = HashValue::new();
    // A table while loading keeps duplicate checks linear; the caller
    // picks the final encoding.
    hash.grow_if_needed(0, 0, 1);
    for _ in 0..n {
        let (field, value) = (r.bytes()?, r.bytes()?);
        if !hash.insert(field, value) {
            return Err(PayloadError::BadFormat);
        }
    }
    r.finish(hash)
}

fn restore_set(r: &mut Reader<'_>) -> Result<SetValue, PayloadError> {
    let set = match r.byte()? {
        0 => {
            let n = r.count(8)?;
            let ints = (0..n).map(|_| r.eight().map(i64::from_le_bytes)).collect::<Result<Vec<i64>, _>>()?;
            if ints.windows(2).any(|w| w[0] >= w[1]) {
                return Err(PayloadError::BadFormat);
            }
            SetValue::Ints(ints)
        }
        1 => {
            let n = r.count(1)?;
            let mut members = MemberTable::with_capacity(n);
            for _ in 0..n {
                if let Inserted::Replaced(()) = members.insert(r.bytes()?, ()) {
                    return Err(PayloadError::BadFormat);
                }
            }
            SetValue::table(members)
        }
        _ => return Err(PayloadError::BadFormat),
    };
    if set.is_empty() {
        return Err(PayloadError::BadFormat);
    }
    r.finish(set)
}

fn restore_zset(r: &mut Reader<'_>) -> Result<ZSetValue, PayloadError> {
    let mut z = match r.byte()? {
        0 => ZSetValue::new(),
        1 => ZSetValue::new_large(),
        _ => return Err(PayloadError::BadFormat),
    };
    let n = r.count(9)?;
    if n == 0 {
        return Err(PayloadError::BadFormat);
    }
    for _ in 0..n {
        let score = f64::from_le_bytes(r.eight()?);
        let member = r.bytes()?;
        if score.is_nan() || z.insert(member, score).is_some() {
            return Err(PayloadError::BadFormat);
        }
    }
    r.finish(z)
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_varint(out, id.ms);
    put_varint(out, id.seq);
}

fn dump_stream(out: &mut Vec<u8>, s: &StreamValue) {
    put_id(out, s.last_id);
    put_id(out, s.max_deleted_id);
    put_varint(out, s.entries_added);
    put_varint(out, s.len() as u64);
    for (id, fields) in s.range(StreamId::MIN, StreamId::MAX) {
        put_id(out, id);
        put_varint(out, fields.len() as u64);
        for f in fields {
            put_bytes(out, f);
        }
    }
    put_varint(out, s.groups.len() as u64);
    for (name, g) in &s.groups {
        put_bytes(out, name);
        put_id(out, g.last_id);
        // 0: unknown, n + 1: n entries read.
        put_varint(out, g.entries_read.map_or(0, |n| n.saturating_add(1)));
        put_varint(out, g.consumers.len() as u64);
        for (cname, cons) in &g.consumers {
            put_bytes(out, cname);
            out.extend_from_slice(&cons.seen_ms.to_le_bytes());
        }
        put_varint(out, g.pending.len() as u64);
        for (id, p) in &g.pending {
            put_id(out, *id);
            put_bytes(out, &p.consumer);
            out.extend_from_slice(&p.delivered_ms.to_le_bytes());
            put_varint(out, p.deliveries);
        }
    }
}

impl Reader<'_> {
    fn id(&mut self) -> Result<StreamId, PayloadError> {
        Ok(StreamId { ms: self.varint()?, seq: self.varint()? })
    }
}

/// Node limits used to lay out a restored stream (Redis's defaults).
const RESTORE_LIMITS: NodeLimits = NodeLimits { max_entries: 100, max_bytes: 4096 };

fn restore_stream(r: &mut Reader<'_>) -> Result<StreamValue, PayloadError> {
    let bad = PayloadError::BadFormat;
    let last_id = r.id()?;
    let max_deleted = r.id()?;
    let entries_added = r.varint()?;
    let mut s = StreamValue::new();
    for _ in 0..r.count(3)? {
        let id = r.id()?;
        let n = r.count(1)?;
        if n == 0 || n % 2 != 0 || (!s.is_empty() && id <= s.last_id) || id == StreamId::MIN {
            return Err(bad);
        }
        let fields = (0..n).map(|_| r.bytes()).collect::<Result<Vec<&[u8]>, _>>()?;
        s.append(id, &fields, RESTORE_LIMITS);
    }
    if s.len() as u64 > entries_added || (!s.is_empty() && s.last_id > last_id) {
        return Err(bad);
    }
    s.last_id = last_id;
    s.max_deleted_id = max_deleted;
    s.entries_added = entries_added;
    for _ in 0..r.count(4)? {
        let name = CompactBytes::new(r.bytes()?);
        let mut g = Group { last_id: r.id()?, entries_read: r.varint()?.checked_sub(1), ..Group::default() };
        for _ in 0..r.count(9)? {
            let cname = CompactBytes::new(r.bytes()?);
            let seen_ms = i64::from_le_bytes(r.eight()?);
            if g.consumers.insert(cname, Consumer { seen_ms, ..Consumer::default() }).is_some() {
                return Err(bad);
            }
        }
        for _ in 0..r.count(12)? {
            let id = r.id()?;
            let consumer = CompactBytes::new(r.bytes()?);
            let delivered_ms = i64::from_le_bytes(r.eight()?);
            let deliveries = r.varint()?;
            let owner = g.consumers.get_mut(&consumer).ok_or(bad)?;
            owner.pending.insert(id);
            if g.pending.insert(id, Pending { consumer, delivered_ms, deliveries }).is_some() {
                return Err(bad);
            }
        }
        if s.groups.insert(name, g).is_some() {
            return Err(bad);
        }
    }
    r.finish(s)
}

/// Reflected form of the Jones polynomial 0xad93d23594c935a9.
const POLY: u64 = 0x95ac_9329_ac4b_c9b5;

const TABLE: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ POLY } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// CRC-64/Jones of `data`, continuing from `crc`.
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    for &b in data {
        crc = TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_matches_the_jones_check_value() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn strings_round_trip() {
        for s in [&b""[..], b"hello", b"12345", b"-9223372036854775808", &[0u8, 255, 13, 10]] {
            let v = Value::Str(StrValue::from_bytes(s));
            assert_eq!(restore(&dump(v.view())), Ok(v));
        }
    }

    fn sealed(body: &[u8]) -> Vec<u8> {
        let mut out = body.to_vec();
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let crc = crc64(0, &out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    fn sample_list() -> Value {
        let mut l = ListValue::new();
        for item in [&b"a"[..], b"", &[0u8, 255, 13, 10], &[b'x'; 100]] {
            l.push(false, item);
        }
        Value::List(Box::new(l))
    }

    fn sample_hash() -> HashValue {
        let mut h = HashValue::new();
        h.insert(b"f1", b"v1");
        h.insert(b"", &[0u8, 1, 2]);
        h.insert(&[b'y'; 70], b"long field");
        h
    }

    #[test]
    fn lists_and_hashes_round_trip() {
        let list = sample_list();
        assert_eq!(restore(&dump(list.view())), Ok(list));
        let hash = sample_hash();
        let Ok(Value::Hash(mut back)) = restore(&dump(Value::Hash(Box::new(hash.clone())).view())) else {
            panic!("a hash restores as a hash");
        };
        back.conform(crate::types::hash::HashLimits { max_entries: 512, max_value: 100 });
        assert_eq!(*back, hash);
    }

    #[test]
    fn damaged_list_and_hash_bodies_are_refused() {
        let list = dump(sample_list().view());
        let body = &list[..list.len() - FOOTER];
        // Cut short, a byte too many, an element count too high or zero.
        assert_eq!(restore(&sealed(&body[..body.len() - 1])), Err(PayloadError::BadFormat));
        assert_eq!(restore(&sealed(&[body, b"z"].concat())), Err(PayloadError::BadFormat));
        let mut more = body.to_vec();
        more[1] += 1;
        assert_eq!(restore(&sealed(&more)), Err(PayloadError::BadFormat));
        let mut empty = vec![KIND_LIST];
        put_varint(&mut empty, 0);
        assert_eq!(restore(&sealed(&empty)), Err(PayloadError::BadFormat));
        // A length past the end.
        let mut huge = vec![KIND_LIST];
        put_varint(&mut huge, 1);
        put_varint(&mut huge, u64::MAX);
        assert_eq!(restore(&sealed(&huge)), Err(PayloadError::BadFormat));
        // A hash naming one field twice, or missing a value.
        let mut twice = vec![KIND_HASH];
        put_varint(&mut twice, 2);
        for _ in 0..2 {
            put_bytes(&mut twice, b"f");
            put_bytes(&mut twice, b"v");
        }
        assert_eq!(restore(&sealed(&twice)), Err(PayloadError::BadFormat));
        let mut half = vec![KIND_HASH];
        put_varint(&mut half, 1);
        put_bytes(&mut half, b"f");
        assert_eq!(restore(&sealed(&half)), Err(PayloadError::BadFormat));
        // Any flipped byte fails the checksum.
        let hash = dump(Value::Hash(Box::new(sample_hash())).view());
        for i in 0..hash.len() {
            let mut bad = hash.clone();
            bad[i] ^= 0x20;
            assert_eq!(restore(&bad), Err(PayloadError::VersionOrChecksum), "byte {i}");
        }
    }

    #[test]
    fn sets_round_trip_in_both_encodings() {
        let mut ints = SetValue::for_first_member(b"1");
        let mut table = SetValue::for_first_member(b"a");
        for m in [&b"5"[..], b"-3", b"9223372036854775807"] {
            ints.insert(m, 512);
            table.insert(m, 512);
        }
        table.insert(b"\0\xff", 512);
        for s in [ints, table] {
            let v = Value::Set(Box::new(s));
            assert_eq!(restore(&dump(v.view())), Ok(v));
        }
    }

    #[test]
    fn sorted_sets_round_trip_with_their_encoding() {
        for mut z in [ZSetValue::new(), ZSetValue::new_large()] {
            for (m, s) in [(&b"a"[..], 1.5), (b"b", f64::NEG_INFINITY), (b"", -0.0), (b"\r\n", 1e308)] {
                z.insert(m, s);
            }
            let v = Value::ZSet(Box::new(z));
            let back = restore(&dump(v.view())).unwrap();
            assert_eq!(back.encoding(), v.encoding());
            assert_eq!(back, v);
        }
    }

    #[test]
    fn streams_round_trip_with_groups() {
        let mut st = StreamValue::new();
        for ms in 1..=5u64 {
            let id = StreamId { ms, seq: 0 };
            st.append(id, &[b"f", b"v", b"n", &ms.to_le_bytes()], RESTORE_LIMITS);
        }
        st.delete(StreamId { ms: 2, seq: 0 });
        let mut g = Group { last_id: StreamId { ms: 3, seq: 0 }, entries_read: Some(3), ..Group::default() };
        let c = CompactBytes::new(b"alice");
        g.consumers.insert(c.clone(), Consumer { seen_ms: 77, pending: [StreamId { ms: 3, seq: 0 }].into() });
        g.pending.insert(StreamId { ms: 3, seq: 0 }, Pending { consumer: c, delivered_ms: 70, deliveries: 2 });
        st.groups.insert(CompactBytes::new(b"g"), g);
        let v = Value::Stream(Box::new(st));
        let payload = dump(v.view());
        assert_eq!(restore(&payload), Ok(v));
        let mut bad = payload.clone();
        bad[3] ^= 1;
        assert_eq!(restore(&bad), Err(PayloadError::VersionOrChecksum));
        let body = &payload[..payload.len() - FOOTER];
        assert_eq!(restore(&sealed(&body[..body.len() - 1])), Err(PayloadError::BadFormat));
    }

    #[test]
    fn forged_collections_are_refused() {
        // Unsorted intset, duplicate members, NaN score, bad counts, trailing bytes.
        let mut unsorted = vec![KIND_SET, 0, 2];
        unsorted.extend_from_slice(&5i64.to_le_bytes());
        unsorted.extend_from_slice(&1i64.to_le_bytes());
        let duplicate = [KIND_SET, 1, 2, 1, b'a', 1, b'a'];
        let mut nan = vec![KIND_ZSET, 0, 1];
        nan.extend_from_slice(&f64::NAN.to_le_bytes());
        nan.extend_from_slice(&[1, b'a']);
        let huge_count = [KIND_SET, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, b'a'];
        let trailing = [KIND_SET, 1, 1, 1, b'a', 0];
        let empty = [KIND_ZSET, 0, 0];
        let truncated = [KIND_SET, 1, 1, 5, b'a'];
        for body in [&unsorted[..], &duplicate, &nan, &huge_count, &trailing, &empty, &truncated] {
            assert_eq!(restore(&sealed(body)), Err(PayloadError::BadFormat), "{body:?}");
        }
        let good = dump(
            Value::ZSet({
                let mut z = ZSetValue::new();
                z.insert(b"m", 2.0);
                Box::new(z)
            })
            .view(),
        );
        let mut flipped = good.clone();
        flipped[4] ^= 0x40;
        assert_eq!(restore(&flipped), Err(PayloadError::VersionOrChecksum));
    }

    #[test]
    fn damaged_payloads_are_refused() {
        let good = dump(Value::Str(StrValue::from_bytes(b"value")).view());
        assert_eq!(restore(&good[..good.len() - 1]), Err(PayloadError::VersionOrChecksum));
        let mut flipped = good.clone();
        flipped[2] ^= 1;
        assert_eq!(restore(&flipped), Err(PayloadError::VersionOrChecksum));
        assert_eq!(restore(b"short"), Err(PayloadError::VersionOrChecksum));
        let mut unknown = vec![9u8];
        unknown.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let crc = crc64(0, &unknown);
        unknown.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(restore(&unknown), Err(PayloadError::BadFormat));
    }
}
