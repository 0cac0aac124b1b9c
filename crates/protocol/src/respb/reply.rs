//! RESPB/1 replies: writing them through [`ReplySink`] and reading them back.
//!
//! A top-level reply is `[2B reply opcode][2B mux][payload]`; inside arrays,
//! maps, sets and pushes each element is `[1B tag][payload]`, the tag being
//! the low byte of the reply opcode. A reply RESPB cannot carry (an aggregate
//! of more than 65,535 elements, a status or error longer than 65,535 bytes,
//! attributes, nesting deeper than [`MAX_BINARY_DEPTH`]) goes as a passthrough
//! frame `[FFFF][mux][4B len][RESP3 text]` instead. The writer discovers that
//! only when it meets the offending element, so it then rewrites the part of
//! the frame it already produced as RESP3 and carries on in text.

use super::PASSTHROUGH;
use crate::reply::ReplySink;
use crate::resp::reply_parser::{parse_reply, ReplyError, ReplyLimits};
use crate::resp::writer::{Protocol, RespWriter};
use crate::value::Value;

/// Reply opcodes (top level); their low bytes are the nested element tags.
pub mod opcode {
    /// Status string: `[2B len][bytes]`.
    pub const SIMPLE: u16 = 0x8000;
    /// Error: `[2B len][bytes]`.
    pub const ERROR: u16 = 0x8001;
    /// Integer: `[8B i64]`.
    pub const INTEGER: u16 = 0x8002;
    /// Bulk string: `[4B len][bytes]`.
    pub const BULK: u16 = 0x8003;
    /// Array: `[2B count]` then elements.
    pub const ARRAY: u16 = 0x8004;
    /// Null: no payload.
    pub const NULL: u16 = 0x8005;
    /// Boolean: `[1B]` 0 or 1.
    pub const BOOLEAN: u16 = 0x8006;
    /// Double: `[8B f64]`.
    pub const DOUBLE: u16 = 0x8007;
    /// Map: `[2B pairs]` then key, value, ….
    pub const MAP: u16 = 0x8008;
    /// Set: `[2B count]` then elements.
    pub const SET: u16 = 0x8009;
    /// Push (pub/sub messages, invalidations): `[2B count]` then elements.
    pub const PUSH: u16 = 0x800A;
}

/// Deepest nesting written in binary; deeper replies go as passthrough.
pub const MAX_BINARY_DEPTH: usize = 64;

/// Largest element count or short-string length a binary reply can hold.
const MAX_U16: usize = u16::MAX as usize;

/// Nesting levels whose counts a writer keeps inline (see [`OpenCounts`]).
const INLINE_DEPTH: usize = 8;

/// The values still owed by each open aggregate of the reply under way,
/// outermost first, for levels `0..MAX_BINARY_DEPTH`.
///
/// A writer is made for every reply, so its start must be cheap: the first
/// [`INLINE_DEPTH`] levels (all that Redis replies use) live inline, a few
/// stores to clear, where the whole array was a 256-byte `memset` per reply.
/// Deeper levels go to a buffer made when a reply first needs one.
#[derive(Debug, Default)]
struct OpenCounts {
    inline: [u32; INLINE_DEPTH],
    deeper: Option<Box<[u32; MAX_BINARY_DEPTH - INLINE_DEPTH]>>,
}

impl OpenCounts {
    /// The count at `level`; 0 for a deep level never written.
    fn get(&self, level: usize) -> u32 {
        match level.checked_sub(INLINE_DEPTH) {
            None => self.inline[level],
            Some(i) => self.deeper.as_ref().map_or(0, |d| d[i]),
        }
    }

    /// The count at `level`, to change.
    fn get_mut(&mut self, level: usize) -> &mut u32 {
        match level.checked_sub(INLINE_DEPTH) {
            None => &mut self.inline[level],
            Some(i) => &mut self.deeper.get_or_insert_with(|| Box::new([0; MAX_BINARY_DEPTH - INLINE_DEPTH]))[i],
        }
    }
}

/// Writes replies for one mux channel as RESPB frames.
///
/// Any number of top-level replies may be written in a row; each becomes
/// its own frame. The writer tracks how many values the current frame still
/// needs, so it knows when a frame is complete without a stack.
#[derive(Debug)]
pub struct RespbReplyWriter<'a> {
    out: &'a mut Vec<u8>,
    mux: u16,
    /// Values still needed to complete the current top-level reply (0 = between replies).
    needed: u64,
    /// Open aggregates of the current reply, for the depth limit.
    depth_counts: OpenCounts,
    depth: usize,
    frame_start: usize,
    /// Position of the 4-byte length while the current reply is a passthrough frame.
    passthrough_len_at: Option<usize>,
}

impl<'a> RespbReplyWriter<'a> {
    /// A writer appending frames for channel `mux` to `out`.
    pub fn new(out: &'a mut Vec<u8>, mux: u16) -> Self {
        RespbReplyWriter {
            out,
            mux,
            needed: 0,
            depth_counts: OpenCounts::default(),
            depth: 0,
            frame_start: 0,
            passthrough_len_at: None,
        }
    }

    /// Switch channel for the next top-level reply.
    pub fn set_mux(&mut self, mux: u16) {
        debug_assert_eq!(self.needed, 0, "changing channel inside a reply");
        self.mux = mux;
    }

    /// True between replies (every frame written so far is complete).
    pub fn is_complete(&self) -> bool {
        self.needed == 0
    }

    /// Start a value: frame header at top level, tag byte inside an aggregate.
    fn begin(&mut self, op: u16) {
        if self.needed == 0 {
            self.frame_start = self.out.len();
            let ([o1, o2], [m1, m2]) = (op.to_be_bytes(), self.mux.to_be_bytes());
            self.out.extend_from_slice(&[o1, o2, m1, m2]);
        } else {
            self.out.push(op as u8);
        }
    }

    /// Account for one finished value, closing aggregates and frames it completes.
    fn value_done(&mut self) {
        if self.needed > 0 {
            self.needed -= 1;
        }
        while self.depth > 0 && self.depth_counts.get(self.depth - 1) == 0 {
            self.depth -= 1;
        }
        if self.depth > 0 {
            *self.depth_counts.get_mut(self.depth - 1) -= 1;
            while self.depth > 0 && self.depth_counts.get(self.depth - 1) == 0 {
                self.depth -= 1;
            }
        }
        if self.needed == 0 {
            self.close_passthrough();
        }
    }

    fn close_passthrough(&mut self) {
        if let Some(at) = self.passthrough_len_at.take() {
            let len = (self.out.len() - at - 4) as u32;
            self.out[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
    }

    /// Turn the reply under way into a passthrough frame of RESP3 text.
    fn switch_to_passthrough(&mut self) {
        if self.passthrough_len_at.is_some() {
            return;
        }
        let mut text = Vec::new();
        if self.needed > 0 {
            transcode_partial(&self.out[self.frame_start..], &mut text);
            self.out.truncate(self.frame_start);
        } else {
            self.frame_start = self.out.len();
        }
        self.out.extend_from_slice(&PASSTHROUGH.to_be_bytes());
        self.out.extend_from_slice(&self.mux.to_be_bytes());
        self.passthrough_len_at = Some(self.out.len());
        self.out.extend_from_slice(&[0; 4]);
        self.out.extend_from_slice(&text);
    }

    fn text(&mut self) -> Option<RespWriter<'_>> {
        self.passthrough_len_at.is_some().then(|| RespWriter::new(self.out, Protocol::Resp3))
    }

    fn scalar(&mut self, op: u16, write_text: impl FnOnce(&mut RespWriter<'_>), payload: impl FnOnce(&mut Vec<u8>)) {
        if let Some(mut w) = self.text() {
            write_text(&mut w);
        } else {
            self.begin(op);
            payload(self.out);
        }
        self.value_done();
    }

    fn short_string(&mut self, op: u16, s: &[u8], write_text: impl FnOnce(&mut RespWriter<'_>)) {
        if s.len() > MAX_U16 {
            self.switch_to_passthrough();
        }
        self.scalar(op, write_text, |out| {
            out.extend_from_slice(&(s.len() as u16).to_be_bytes());
            out.extend_from_slice(s);
        });
    }

    fn aggregate(&mut self, op: u16, count: usize, values: u64, write_text: impl FnOnce(&mut RespWriter<'_>)) {
        if count > MAX_U16 || self.depth >= MAX_BINARY_DEPTH {
            self.switch_to_passthrough();
        }
        if let Some(mut w) = self.text() {
            write_text(&mut w);
        } else {
            self.begin(op);
            self.out.extend_from_slice(&(count as u16).to_be_bytes());
        }
        // The aggregate itself is one value of its parent; its elements are owed next.
        let parent_needed = self.needed.saturating_sub(1);
        if self.depth > 0 {
            let owed = self.depth_counts.get_mut(self.depth - 1);
            *owed = owed.saturating_sub(1);
        }
        self.needed = parent_needed + values;
        if values == 0 {
            self.value_done_empty();
        } else if self.depth < MAX_BINARY_DEPTH {
            *self.depth_counts.get_mut(self.depth) = values.min(u64::from(u32::MAX)) as u32;
            self.depth += 1;
        }
    }

    /// An empty aggregate completes at once.
    fn value_done_empty(&mut self) {
        while self.depth > 0 && self.depth_counts.get(self.depth - 1) == 0 {
            self.depth -= 1;
        }
        if self.needed == 0 {
            self.close_passthrough();
        }
    }
}

impl ReplySink for RespbReplyWriter<'_> {
    fn simple(&mut self, s: &[u8]) {
        self.short_string(opcode::SIMPLE, s, |w| w.simple(s));
    }

    fn error(&mut self, msg: &[u8]) {
        self.short_string(opcode::ERROR, msg, |w| w.error(msg));
    }

    fn integer(&mut self, n: i64) {
        self.scalar(opcode::INTEGER, |w| w.integer(n), |out| out.extend_from_slice(&n.to_be_bytes()));
    }

    fn bulk(&mut self, b: &[u8]) {
        if u32::try_from(b.len()).is_err() {
            self.switch_to_passthrough();
        }
        self.scalar(
            opcode::BULK,
            |w| w.bulk(b),
            |out| {
                out.extend_from_slice(&(b.len() as u32).to_be_bytes());
                out.extend_from_slice(b);
            },
        );
    }

    fn null(&mut self) {
        self.scalar(opcode::NULL, |w| w.null(), |_| {});
    }

    fn null_array(&mut self) {
        self.scalar(opcode::NULL, |w| w.null_array(), |_| {});
    }

    fn array(&mut self, len: usize) {
        self.aggregate(opcode::ARRAY, len, len as u64, |w| w.array(len));
    }

    fn map(&mut self, pairs: usize) {
        self.aggregate(opcode::MAP, pairs, 2 * pairs as u64, |w| w.map(pairs));
    }

    fn set(&mut self, len: usize) {
        self.aggregate(opcode::SET, len, len as u64, |w| w.set(len));
    }

    fn push(&mut self, len: usize) {
        self.aggregate(opcode::PUSH, len, len as u64, |w| w.push(len));
    }

    fn double(&mut self, d: f64) {
        self.scalar(opcode::DOUBLE, |w| w.double(d), |out| out.extend_from_slice(&d.to_bits().to_be_bytes()));
    }

    fn double_text(&mut self, value: f64, text: &[u8]) {
        self.scalar(
            opcode::DOUBLE,
            |w| w.double_text(value, text),
            |out| out.extend_from_slice(&value.to_bits().to_be_bytes()),
        );
    }

    fn boolean(&mut self, b: bool) {
        self.scalar(opcode::BOOLEAN, |w| w.boolean(b), |out| out.push(u8::from(b)));
    }

    /// Big numbers travel as bulk strings of their digits, also inside a
    /// passthrough frame, so a reader sees the same type either way.
    fn big_number(&mut self, digits: &[u8]) {
        self.bulk(digits);
    }

    /// Verbatim strings travel as bulk strings of their text (without the format).
    fn verbatim(&mut self, _format: &[u8; 3], text: &[u8]) {
        self.bulk(text);
    }

    fn attribute(&mut self, pairs: usize) {
        // Attributes have no binary form: the whole reply travels as RESP3.
        self.switch_to_passthrough();
        if let Some(mut w) = self.text() {
            w.attribute(pairs);
        }
        // The attribute's pairs are owed before the value they decorate. Inside
        // an aggregate that value already holds the parent's slot; at top level
        // it is owed to the frame itself.
        self.needed = self.needed.max(1) + 2 * pairs as u64;
    }
}

/// Rewrite the complete tokens of an unfinished binary reply as RESP3 text.
///
/// The prefix holds only whole scalars and aggregate headers, and RESP3
/// headers carry the same counts, so the tokens convert one by one.
fn transcode_partial(mut bin: &[u8], out: &mut Vec<u8>) {
    let mut w = RespWriter::new(out, Protocol::Resp3);
    let mut top = true;
    while !bin.is_empty() {
        let tag = if top {
            let t = bin.get(1).copied().unwrap_or(0);
            bin = bin.get(4..).unwrap_or(&[]);
            t
        } else {
            let t = bin[0];
            bin = &bin[1..];
            t
        };
        top = false;
        let Some((value, used)) = read_scalar_or_header(tag, bin) else {
            debug_assert!(false, "writer produced an unreadable prefix");
            return;
        };
        bin = &bin[used..];
        match value {
            Token::Scalar(v) => v.write_to(&mut w),
            Token::Header(op, n) => match u16::from(op) | 0x8000 {
                opcode::ARRAY => w.array(n),
                opcode::MAP => w.map(n),
                opcode::SET => w.set(n),
                _ => w.push(n),
            },
        }
    }
}

/// A binary reply token: a whole scalar, or an aggregate header with its count.
enum Token {
    Scalar(Value),
    Header(u8, usize),
}

fn be<const N: usize>(b: &[u8]) -> Option<[u8; N]> {
    b.get(..N)?.try_into().ok()
}

fn read_scalar_or_header(tag: u8, b: &[u8]) -> Option<(Token, usize)> {
    let short = |b: &[u8]| -> Option<(Vec<u8>, usize)> {
        let n = usize::from(u16::from_be_bytes(be(b)?));
        Some((b.get(2..2 + n)?.to_vec(), 2 + n))
    };
    Some(match u16::from(tag) | 0x8000 {
        opcode::SIMPLE => short(b).map(|(s, n)| (Token::Scalar(Value::Simple(s)), n))?,
        opcode::ERROR => short(b).map(|(s, n)| (Token::Scalar(Value::Error(s)), n))?,
        opcode::INTEGER => (Token::Scalar(Value::Integer(i64::from_be_bytes(be(b)?))), 8),
        opcode::BULK => {
            let n = u32::from_be_bytes(be(b)?) as usize;
            (Token::Scalar(Value::Bulk(b.get(4..4 + n)?.to_vec())), 4 + n)
        }
        opcode::NULL => (Token::Scalar(Value::Null), 0),
        opcode::BOOLEAN => (Token::Scalar(Value::Boolean(*b.first()? != 0)), 1),
        opcode::DOUBLE => (Token::Scalar(Value::Double(f64::from_bits(u64::from_be_bytes(be(b)?)))), 8),
        opcode::ARRAY | opcode::MAP | opcode::SET | opcode::PUSH => {
            (Token::Header(tag, usize::from(u16::from_be_bytes(be(b)?))), 2)
        }
        _ => return None,
    })
}

/// One decoded reply frame.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyFrame {
    /// Channel the reply belongs to.
    pub mux: u16,
    /// The reply.
    pub value: Value,
    /// Bytes the frame took.
    pub consumed: usize,
}

/// Why a reply frame could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyDecodeError {
    /// A reply opcode or element tag outside 0x8000–0x800A.
    UnknownType(u16),
    /// Nesting deeper than the limit.
    TooDeep,
    /// A boolean byte other than 0 or 1.
    BadBoolean(u8),
    /// A length over the limit.
    TooLong(u64),
    /// A passthrough reply whose RESP3 text is malformed or not exactly one value.
    Passthrough(ReplyError),
    /// A passthrough reply whose text holds less or more than one value.
    PassthroughLength,
}

impl std::fmt::Display for ReplyDecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplyDecodeError::UnknownType(t) => write!(f, "RESPB reply: unknown type 0x{t:04X}"),
            ReplyDecodeError::TooDeep => write!(f, "RESPB reply: nesting too deep"),
            ReplyDecodeError::BadBoolean(b) => write!(f, "RESPB reply: invalid boolean byte {b}"),
            ReplyDecodeError::TooLong(n) => write!(f, "RESPB reply: length {n} over the limit"),
            ReplyDecodeError::Passthrough(e) => write!(f, "RESPB reply passthrough: {e}"),
            ReplyDecodeError::PassthroughLength => write!(f, "RESPB reply passthrough: not exactly one value"),
        }
    }
}

impl std::error::Error for ReplyDecodeError {}

enum Short {
    Need,
    Bad(ReplyDecodeError),
}

impl From<ReplyDecodeError> for Short {
    fn from(e: ReplyDecodeError) -> Self {
        Short::Bad(e)
    }
}

/// Read one reply frame from the start of `buf`; `Ok(None)` if more bytes are needed.
pub fn decode_reply(buf: &[u8], limits: &ReplyLimits) -> Result<Option<ReplyFrame>, ReplyDecodeError> {
    let (Some(op), Some(mux)) = (be::<2>(buf), buf.get(2..).and_then(be::<2>)) else {
        return Ok(None);
    };
    let (op, mux) = (u16::from_be_bytes(op), u16::from_be_bytes(mux));
    if op == PASSTHROUGH {
        let Some(len) = buf.get(4..).and_then(be::<4>) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes(len) as usize;
        if len > limits.max_bulk_len.saturating_add(64 * 1024) {
            return Err(ReplyDecodeError::TooLong(len as u64));
        }
        let Some(text) = buf.get(8..8 + len) else {
            return Ok(None);
        };
        return match parse_reply(text, limits) {
            Ok(Some((value, used))) if used == len => Ok(Some(ReplyFrame { mux, value, consumed: 8 + len })),
            Ok(_) => Err(ReplyDecodeError::PassthroughLength),
            Err(e) => Err(ReplyDecodeError::Passthrough(e)),
        };
    }
    if !(opcode::SIMPLE..=opcode::PUSH).contains(&op) {
        return Err(ReplyDecodeError::UnknownType(op));
    }
    let mut pos = 4;
    match read_value(op as u8, buf, &mut pos, limits, 0) {
        Ok(value) => Ok(Some(ReplyFrame { mux, value, consumed: pos })),
        Err(Short::Need) => Ok(None),
        Err(Short::Bad(e)) => Err(e),
    }
}

fn read_value(tag: u8, buf: &[u8], pos: &mut usize, limits: &ReplyLimits, depth: usize) -> Result<Value, Short> {
    let rest = buf.get(*pos..).unwrap_or(&[]);
    let op = u16::from(tag) | 0x8000;
    if matches!(op, opcode::ARRAY | opcode::MAP | opcode::SET | opcode::PUSH) {
        if depth >= limits.max_depth {
            return Err(ReplyDecodeError::TooDeep.into());
        }
        let n = usize::from(u16::from_be_bytes(be(rest).ok_or(Short::Need)?));
        *pos += 2;
        let mut child = || -> Result<Value, Short> {
            let t = *buf.get(*pos).ok_or(Short::Need)?;
            *pos += 1;
            read_value(t, buf, pos, limits, depth + 1)
        };
        // Capacity is bounded by the count field (at most 65,535), never by claimed byte lengths.
        return Ok(match op {
            opcode::MAP => {
                let mut pairs = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    let k = child()?;
                    pairs.push((k, child()?));
                }
                Value::Map(pairs)
            }
            _ => {
                let mut items = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    items.push(child()?);
                }
                match op {
                    opcode::ARRAY => Value::Array(items),
                    opcode::SET => Value::Set(items),
                    _ => Value::Push(items),
                }
            }
        });
    }
    if op == opcode::BOOLEAN {
        let b = *rest.first().ok_or(Short::Need)?;
        if b > 1 {
            return Err(ReplyDecodeError::BadBoolean(b).into());
        }
    }
    if op == opcode::BULK {
        let n = u32::from_be_bytes(be(rest).ok_or(Short::Need)?);
        if n as usize > limits.max_bulk_len {
            return Err(ReplyDecodeError::TooLong(u64::from(n)).into());
        }
    }
    if !(opcode::SIMPLE..=opcode::PUSH).contains(&op) {
        return Err(ReplyDecodeError::UnknownType(op).into());
    }
    match read_scalar_or_header(tag, rest) {
        Some((Token::Scalar(v), used)) => {
            *pos += used;
            Ok(v)
        }
        _ => Err(Short::Need),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(v: &Value, mux: u16) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = RespbReplyWriter::new(&mut out, mux);
        v.write_to(&mut w);
        assert!(w.is_complete());
        out
    }

    fn round_trip(v: &Value) -> Value {
        let bytes = frame(v, 7);
        let f = decode_reply(&bytes, &ReplyLimits::default()).unwrap().unwrap();
        assert_eq!(f.consumed, bytes.len());
        assert_eq!(f.mux, 7);
        for cut in 0..bytes.len() {
            assert_eq!(decode_reply(&bytes[..cut], &ReplyLimits::default()), Ok(None), "prefix {cut}");
        }
        f.value
    }

    #[test]
    fn ok_is_length_prefixed() {
        assert_eq!(frame(&Value::simple("OK"), 1), [0x80, 0x00, 0x00, 0x01, 0x00, 0x02, b'O', b'K']);
    }

    #[test]
    fn scalars_and_nested_aggregates_round_trip() {
        let v = Value::Array(vec![
            Value::Integer(-5),
            Value::bulk("x"),
            Value::Null,
            Value::Map(vec![(Value::bulk("k"), Value::Double(1.5))]),
            Value::Set(vec![Value::Boolean(true)]),
            Value::Array(vec![]),
            Value::error("ERR nope"),
        ]);
        assert_eq!(round_trip(&v), v);
        assert_eq!(round_trip(&Value::Push(vec![Value::bulk("message")])), Value::Push(vec![Value::bulk("message")]));
    }

    #[test]
    fn null_array_and_big_types_map_to_binary_forms() {
        assert_eq!(round_trip(&Value::NullArray), Value::Null);
        assert_eq!(round_trip(&Value::BigNumber(b"123".to_vec())), Value::bulk("123"));
        let verbatim = Value::Verbatim { format: *b"txt", text: b"hi".to_vec() };
        assert_eq!(round_trip(&verbatim), Value::bulk("hi"));
    }

    #[test]
    fn oversize_aggregate_becomes_passthrough_even_when_nested() {
        let big = Value::Array((0..70_000).map(Value::Integer).collect());
        let v = Value::Array(vec![Value::bulk("head"), big.clone(), Value::Integer(1)]);
        let bytes = frame(&v, 3);
        assert_eq!(&bytes[..2], &[0xFF, 0xFF]);
        assert_eq!(round_trip(&v), v);
        let then_small = {
            let mut out = Vec::new();
            let mut w = RespbReplyWriter::new(&mut out, 3);
            v.write_to(&mut w);
            Value::Integer(9).write_to(&mut w);
            out
        };
        let first = decode_reply(&then_small, &ReplyLimits::default()).unwrap().unwrap();
        let second = decode_reply(&then_small[first.consumed..], &ReplyLimits::default()).unwrap().unwrap();
        assert_eq!(second.value, Value::Integer(9));
    }

    #[test]
    fn long_status_and_attributes_become_passthrough() {
        let long = Value::simple(vec![b'a'; 70_000]);
        assert_eq!(round_trip(&long), long);
        let attr =
            Value::Attribute { attrs: vec![(Value::bulk("a"), Value::Integer(1))], value: Box::new(Value::Integer(2)) };
        let bytes = frame(&Value::Array(vec![attr.clone()]), 0);
        assert_eq!(&bytes[..2], &[0xFF, 0xFF]);
        assert_eq!(round_trip(&Value::Array(vec![attr.clone()])), Value::Array(vec![attr]));
    }

    #[test]
    fn deep_nesting_falls_back_switch_to_passthrough() {
        let mut v = Value::Integer(1);
        for _ in 0..100 {
            v = Value::Array(vec![v]);
        }
        let bytes = frame(&v, 0);
        assert_eq!(&bytes[..2], &[0xFF, 0xFF]);
        assert_eq!(round_trip(&v), v);
    }

    /// Aggregates nested past the inline levels still close where they
    /// should, up to the binary limit; one level more goes as passthrough.
    #[test]
    fn nesting_past_the_inline_levels_stays_binary_up_to_the_limit() {
        let nested = |depth: usize| {
            let mut v = Value::bulk("core");
            for level in 0..depth {
                let n = i64::try_from(level).unwrap_or(0);
                v = Value::Array(vec![Value::Integer(n), v, Value::Map(vec![(Value::bulk("k"), Value::Integer(-n))])]);
            }
            v
        };
        // `depth` arrays, the innermost holding a map: `depth + 1` levels.
        for depth in [INLINE_DEPTH - 1, INLINE_DEPTH, INLINE_DEPTH + 1, 30, MAX_BINARY_DEPTH - 1, MAX_BINARY_DEPTH] {
            let v = nested(depth);
            let bytes = frame(&v, 5);
            let passthrough = bytes[..2] == [0xFF, 0xFF];
            assert_eq!(passthrough, depth + 1 > MAX_BINARY_DEPTH, "depth {depth}");
            assert_eq!(round_trip(&v), v, "depth {depth}");
        }
    }

    #[test]
    fn malformed_replies_are_errors() {
        let lim = ReplyLimits::default();
        assert_eq!(decode_reply(&[0x80, 0x0B, 0, 0], &lim), Err(ReplyDecodeError::UnknownType(0x800B)));
        assert_eq!(decode_reply(&[0x80, 0x06, 0, 0, 2], &lim), Err(ReplyDecodeError::BadBoolean(2)));
        assert_eq!(decode_reply(&[0x80, 0x04, 0, 0, 0, 1, 0x20], &lim), Err(ReplyDecodeError::UnknownType(0x8020)));
        let huge = [0x80, 0x03, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF];
        assert!(matches!(decode_reply(&huge, &lim), Err(ReplyDecodeError::TooLong(_))));
        let mut deep = vec![0x80, 0x04, 0, 0, 0, 1];
        for _ in 0..200 {
            deep.extend_from_slice(&[0x04, 0, 1]);
        }
        assert_eq!(decode_reply(&deep, &lim), Err(ReplyDecodeError::TooDeep));
    }
}
