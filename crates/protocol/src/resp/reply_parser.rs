//! Client-side RESP2/RESP3 reply parsing, for the client library, the CLI,
//! the benchmark and tests.
//!
//! Replies come from a server the client does not control, so every length
//! is checked against [`ReplyLimits`] and against the bytes actually
//! received before anything is allocated, and nesting is bounded so a hostile
//! reply cannot exhaust the stack. Incomplete input is not an error: the
//! functions return `None` and the caller reads more bytes.
//!
//! [`reply_len`] and [`parse_reply`] share one generic parser, so they accept
//! and reject exactly the same inputs; `reply_len` builds nothing and never
//! allocates, which lets a benchmark count replies at full speed.

use crate::value::Value;
use std::fmt;

/// Bounds on what a reply may claim, so a broken or hostile server cannot
/// make the client allocate without limit or recurse without limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyLimits {
    /// Longest bulk string, blob error or verbatim string accepted.
    pub max_bulk_len: usize,
    /// Most elements accepted in one aggregate (pairs for maps and attributes).
    pub max_aggregate_len: usize,
    /// Deepest nesting of aggregates accepted (a top-level array is depth 1).
    ///
    /// The parser recurses once per level, so this also bounds its stack use;
    /// keep it in the hundreds, not the millions.
    pub max_depth: usize,
}

impl ReplyLimits {
    /// Redis's own limits where it has one (512 MiB strings), generous
    /// elsewhere: `i32::MAX` elements and 128 levels of nesting.
    pub const DEFAULT: ReplyLimits =
        ReplyLimits { max_bulk_len: 512 * 1024 * 1024, max_aggregate_len: i32::MAX as usize, max_depth: 128 };
}

impl Default for ReplyLimits {
    fn default() -> Self {
        ReplyLimits::DEFAULT
    }
}

/// Why a reply could not be parsed. The connection is unusable afterwards:
/// the reply's end cannot be found reliably.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyError {
    /// The first byte is not a RESP2/RESP3 type marker.
    UnknownType(u8),
    /// A length or element count is not a valid number for its type.
    BadLength(u8),
    /// An integer reply (`:`) is not a valid `i64`.
    BadInteger,
    /// A double reply (`,`) is not a valid number, `inf`, `-inf` or `nan`.
    BadDouble,
    /// A boolean reply (`#`) is neither `t` nor `f`.
    BadBoolean,
    /// A big number reply (`(`) is not an optional `-` followed by digits.
    BadBigNumber,
    /// A verbatim string (`=`) lacks its `fmt:` prefix.
    BadVerbatim,
    /// A null reply (`_`) carries data.
    BadNull,
    /// A line or a blob is not terminated by CR LF.
    MissingCrlf,
    /// Aggregates nest deeper than [`ReplyLimits::max_depth`].
    TooDeep {
        /// The limit that was exceeded.
        max_depth: usize,
    },
    /// A string claims more bytes than [`ReplyLimits::max_bulk_len`].
    BulkTooLong {
        /// The claimed length.
        len: u64,
        /// The limit that was exceeded.
        max: usize,
    },
    /// An aggregate claims more elements than [`ReplyLimits::max_aggregate_len`].
    AggregateTooLong {
        /// The claimed element (or pair) count.
        len: u64,
        /// The limit that was exceeded.
        max: usize,
    },
    /// A streamed string or aggregate (`$?`, `*?`, …), which is not supported.
    Streamed(u8),
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyError::UnknownType(b) => {
                write!(f, "protocol error: unknown reply type byte {:?}", char::from(*b))
            }
            ReplyError::BadLength(b) => {
                write!(f, "protocol error: invalid length in {:?} reply", char::from(*b))
            }
            ReplyError::BadInteger => f.write_str("protocol error: invalid integer reply"),
            ReplyError::BadDouble => f.write_str("protocol error: invalid double reply"),
            ReplyError::BadBoolean => f.write_str("protocol error: invalid boolean reply"),
            ReplyError::BadBigNumber => f.write_str("protocol error: invalid big number reply"),
            ReplyError::BadVerbatim => f.write_str("protocol error: verbatim string without a format prefix"),
            ReplyError::BadNull => f.write_str("protocol error: null reply with data"),
            ReplyError::MissingCrlf => f.write_str("protocol error: expected CR LF"),
            ReplyError::TooDeep { max_depth } => {
                write!(f, "protocol error: reply nested deeper than {max_depth} levels")
            }
            ReplyError::BulkTooLong { len, max } => {
                write!(f, "protocol error: string of {len} bytes exceeds the limit of {max}")
            }
            ReplyError::AggregateTooLong { len, max } => {
                write!(f, "protocol error: aggregate of {len} elements exceeds the limit of {max}")
            }
            ReplyError::Streamed(b) => {
                write!(f, "protocol error: streamed {:?} replies are not supported", char::from(*b))
            }
        }
    }
}

impl std::error::Error for ReplyError {}

/// Length of the complete reply at the start of `buf`, or `None` if more
/// bytes are needed.
///
/// Validates exactly what [`parse_reply`] validates but builds nothing and
/// never allocates, so replies can be counted and skipped cheaply.
pub fn reply_len(buf: &[u8], limits: &ReplyLimits) -> Result<Option<usize>, ReplyError> {
    let parser = Parser { buf, limits };
    Ok(parser.value(&mut Skip, 0, 0)?.map(|((), end)| end))
}

/// Parses one complete reply at the start of `buf` into a [`Value`] and
/// returns it with the number of bytes it took, or `None` if more bytes are
/// needed.
///
/// RESP2 nulls keep their shape (`$-1` → [`Value::Null`], `*-1` →
/// [`Value::NullArray`]); RESP3's `_` is [`Value::Null`]; `!` blob errors are
/// [`Value::Error`]; attributes wrap the value they decorate.
pub fn parse_reply(buf: &[u8], limits: &ReplyLimits) -> Result<Option<(Value, usize)>, ReplyError> {
    Parser { buf, limits }.value(&mut Tree, 0, 0)
}

/// [`parse_reply`] into what `builder` makes of each part. Incomplete
/// input gives `None` after building part of the reply, which is thrown
/// away: a caller whose objects are costly asks [`reply_len`] first.
pub fn parse_reply_with<B: ReplyBuilder>(
    buf: &[u8],
    limits: &ReplyLimits,
    builder: &mut B,
) -> Result<Option<(B::V, usize)>, ReplyError> {
    Parser { buf, limits }.value(builder, 0, 0)
}

/// What the generic parser produces for each reply: a [`Value`] tree,
/// nothing at all (zero-sized, so its vectors never allocate), or what a
/// caller builds itself ([`parse_reply_with`]; the Python client builds its
/// objects straight from the bytes).
pub trait ReplyBuilder {
    type V;
    fn simple(&mut self, s: &[u8]) -> Self::V;
    fn error(&mut self, s: &[u8]) -> Self::V;
    fn integer(&mut self, n: i64) -> Self::V;
    fn bulk(&mut self, b: &[u8]) -> Self::V;
    fn null(&mut self) -> Self::V;
    fn null_array(&mut self) -> Self::V;
    fn double(&mut self, d: f64) -> Self::V;
    fn boolean(&mut self, b: bool) -> Self::V;
    fn big_number(&mut self, digits: &[u8]) -> Self::V;
    fn verbatim(&mut self, format: [u8; 3], text: &[u8]) -> Self::V;
    /// `kind`: `*` array, `~` set, `>` push.
    fn list(&mut self, kind: u8, items: Vec<Self::V>) -> Self::V;
    fn map(&mut self, pairs: Vec<(Self::V, Self::V)>) -> Self::V;
    fn attribute(&mut self, attrs: Vec<(Self::V, Self::V)>, value: Self::V) -> Self::V;
}

/// Builds [`Value`]s.
struct Tree;

impl ReplyBuilder for Tree {
    type V = Value;
    fn simple(&mut self, s: &[u8]) -> Value {
        Value::Simple(s.to_vec())
    }
    fn error(&mut self, s: &[u8]) -> Value {
        Value::Error(s.to_vec())
    }
    fn integer(&mut self, n: i64) -> Value {
        Value::Integer(n)
    }
    fn bulk(&mut self, b: &[u8]) -> Value {
        Value::Bulk(b.to_vec())
    }
    fn null(&mut self) -> Value {
        Value::Null
    }
    fn null_array(&mut self) -> Value {
        Value::NullArray
    }
    fn double(&mut self, d: f64) -> Value {
        Value::Double(d)
    }
    fn boolean(&mut self, b: bool) -> Value {
        Value::Boolean(b)
    }
    fn big_number(&mut self, digits: &[u8]) -> Value {
        Value::BigNumber(digits.to_vec())
    }
    fn verbatim(&mut self, format: [u8; 3], text: &[u8]) -> Value {
        Value::Verbatim { format, text: text.to_vec() }
    }
    fn list(&mut self, kind: u8, items: Vec<Value>) -> Value {
        match kind {
            b'~' => Value::Set(items),
            b'>' => Value::Push(items),
            _ => Value::Array(items),
        }
    }
    fn map(&mut self, pairs: Vec<(Value, Value)>) -> Value {
        Value::Map(pairs)
    }
    fn attribute(&mut self, attrs: Vec<(Value, Value)>, value: Value) -> Value {
        Value::Attribute { attrs, value: Box::new(value) }
    }
}

/// Builds nothing: only validates and measures.
struct Skip;

impl ReplyBuilder for Skip {
    type V = ();
    fn simple(&mut self, _: &[u8]) {}
    fn error(&mut self, _: &[u8]) {}
    fn integer(&mut self, _: i64) {}
    fn bulk(&mut self, _: &[u8]) {}
    fn null(&mut self) {}
    fn null_array(&mut self) {}
    fn double(&mut self, _: f64) {}
    fn boolean(&mut self, _: bool) {}
    fn big_number(&mut self, _: &[u8]) {}
    fn verbatim(&mut self, _: [u8; 3], _: &[u8]) {}
    fn list(&mut self, _: u8, _: Vec<()>) {}
    fn map(&mut self, _: Vec<((), ())>) {}
    fn attribute(&mut self, _: Vec<((), ())>, _: ()) {}
}

/// A parse result: the value and the offset just past it, or `None` if incomplete.
type Step<T> = Result<Option<(T, usize)>, ReplyError>;

/// Smallest encoding of any value (`_\r\n`), used to cap preallocation by
/// the bytes actually received.
const MIN_VALUE_LEN: usize = 3;

struct Parser<'b> {
    buf: &'b [u8],
    limits: &'b ReplyLimits,
}

impl<'b> Parser<'b> {
    /// The line starting at `pos` (without CR LF) and the offset after it.
    fn line(&self, pos: usize) -> Result<Option<(&'b [u8], usize)>, ReplyError> {
        let rest = self.buf.get(pos..).unwrap_or_default();
        let Some(cr) = rest.iter().position(|&b| b == b'\r') else {
            return Ok(None);
        };
        match rest.get(cr + 1) {
            None => Ok(None),
            Some(b'\n') => Ok(Some((&rest[..cr], pos + cr + 2))),
            Some(_) => Err(ReplyError::MissingCrlf),
        }
    }

    /// Parses the value at `pos`, nested inside `depth` aggregates.
    fn value<B: ReplyBuilder>(&self, b: &mut B, pos: usize, depth: usize) -> Step<B::V> {
        let Some(&kind) = self.buf.get(pos) else {
            return Ok(None);
        };
        match kind {
            b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' | b'$' | b'!' | b'=' | b'*' | b'~' | b'>' | b'%' | b'|' => {}
            b';' | b'.' => return Err(ReplyError::Streamed(kind)),
            _ => return Err(ReplyError::UnknownType(kind)),
        }
        let Some((line, next)) = self.line(pos + 1)? else {
            return Ok(None);
        };
        let v = match kind {
            b'+' => b.simple(line),
            b'-' => b.error(line),
            b':' => b.integer(parse_int(line).ok_or(ReplyError::BadInteger)?),
            b'_' if line.is_empty() => b.null(),
            b'_' => return Err(ReplyError::BadNull),
            b',' => b.double(parse_double(line).ok_or(ReplyError::BadDouble)?),
            b'#' => match line {
                b"t" => b.boolean(true),
                b"f" => b.boolean(false),
                _ => return Err(ReplyError::BadBoolean),
            },
            b'(' => {
                let digits = line.strip_prefix(b"-").unwrap_or(line);
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return Err(ReplyError::BadBigNumber);
                }
                b.big_number(line)
            }
            b'$' | b'!' | b'=' => return self.blob(b, kind, line, next),
            _ => return self.aggregate(b, kind, line, next, depth),
        };
        Ok(Some((v, next)))
    }

    /// `$`, `!` and `=`: a length line, that many bytes, CR LF.
    fn blob<B: ReplyBuilder>(&self, b: &mut B, kind: u8, line: &[u8], start: usize) -> Step<B::V> {
        let Some(len) = length_line(kind, line, b'$')? else {
            return Ok(Some((b.null(), start)));
        };
        let max = self.limits.max_bulk_len;
        let too_long = ReplyError::BulkTooLong { len, max };
        let len = usize::try_from(len).map_err(|_| too_long.clone())?;
        if len > max {
            return Err(too_long);
        }
        let end = start.checked_add(len).ok_or(too_long.clone())?;
        let after = end.checked_add(2).ok_or(too_long)?;
        // Only look at (and copy) the data once all of it has arrived.
        let (Some(data), Some(crlf)) = (self.buf.get(start..end), self.buf.get(end..after)) else {
            return Ok(None);
        };
        if crlf != b"\r\n" {
            return Err(ReplyError::MissingCrlf);
        }
        let v = match kind {
            b'$' => b.bulk(data),
            b'!' => b.error(data),
            _ => match data {
                [f0, f1, f2, b':', text @ ..] => b.verbatim([*f0, *f1, *f2], text),
                _ => return Err(ReplyError::BadVerbatim),
            },
        };
        Ok(Some((v, after)))
    }

    /// `*`, `~`, `>`, `%` and `|`: a count line followed by the elements.
    fn aggregate<B: ReplyBuilder>(&self, b: &mut B, kind: u8, line: &[u8], start: usize, depth: usize) -> Step<B::V> {
        let Some(len) = length_line(kind, line, b'*')? else {
            return Ok(Some((b.null_array(), start)));
        };
        let max = self.limits.max_aggregate_len;
        let too_long = ReplyError::AggregateTooLong { len, max };
        let count = usize::try_from(len).map_err(|_| too_long.clone())?;
        if count > max {
            return Err(too_long);
        }
        if depth >= self.limits.max_depth {
            return Err(ReplyError::TooDeep { max_depth: self.limits.max_depth });
        }
        // A claimed count never reserves more than the received bytes could hold.
        let available = self.buf.len().saturating_sub(start) / MIN_VALUE_LEN;
        let mut pos = start;
        match kind {
            b'%' | b'|' => {
                let mut pairs = Vec::with_capacity(count.min(available / 2));
                for _ in 0..count {
                    let Some((k, p)) = self.value(b, pos, depth + 1)? else {
                        return Ok(None);
                    };
                    let Some((v, p)) = self.value(b, p, depth + 1)? else {
                        return Ok(None);
                    };
                    pairs.push((k, v));
                    pos = p;
                }
                if kind == b'%' {
                    return Ok(Some((b.map(pairs), pos)));
                }
                // The decorated value counts as one level deeper, so chains of
                // attributes are bounded by the depth limit too.
                let Some((v, p)) = self.value(b, pos, depth + 1)? else {
                    return Ok(None);
                };
                Ok(Some((b.attribute(pairs, v), p)))
            }
            _ => {
                let mut items = Vec::with_capacity(count.min(available));
                for _ in 0..count {
                    let Some((v, p)) = self.value(b, pos, depth + 1)? else {
                        return Ok(None);
                    };
                    items.push(v);
                    pos = p;
                }
                Ok(Some((b.list(kind, items), pos)))
            }
        }
    }
}

/// A decimal `i64` as servers send it: optional sign, at least one digit,
/// no overflow. Slightly more lenient than the server's own argument parsing
/// (leading zeros and `+` pass) because a client should accept what any
/// RESP server may send.
fn parse_int(line: &[u8]) -> Option<i64> {
    let (negative, digits) = match line.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, line),
    };
    if digits.is_empty() {
        return None;
    }
    // Accumulate negatively so i64::MIN fits.
    let mut n: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_sub(i64::from(b - b'0'))?;
    }
    if negative {
        Some(n)
    } else {
        n.checked_neg()
    }
}

/// A RESP3 double: decimal or exponent notation, `inf`, `-inf`, `nan`
/// (also `-nan`, which glibc-based servers may print).
fn parse_double(line: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(line).ok()?;
    if text.eq_ignore_ascii_case("-nan") {
        return Some(-f64::NAN);
    }
    if text.is_empty() || text.bytes().any(|b| b.is_ascii_whitespace()) {
        return None;
    }
    text.parse().ok()
}

/// The length on a `$`/`*`-style header line: `None` for RESP2's `-1` null
/// (only on `null_kind`), an error for streamed (`?`) or malformed lengths.
fn length_line(kind: u8, line: &[u8], null_kind: u8) -> Result<Option<u64>, ReplyError> {
    if line == b"?" {
        return Err(ReplyError::Streamed(kind));
    }
    let n = parse_int(line).ok_or(ReplyError::BadLength(kind))?;
    if n == -1 && kind == null_kind {
        return Ok(None);
    }
    u64::try_from(n).map(Some).map_err(|_| ReplyError::BadLength(kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::writer::{Protocol, RespWriter};
    use proptest::prelude::*;

    const L: ReplyLimits = ReplyLimits::DEFAULT;

    fn parse(buf: &[u8]) -> Result<Option<(Value, usize)>, ReplyError> {
        let parsed = parse_reply(buf, &L);
        let len = reply_len(buf, &L);
        match (&parsed, &len) {
            (Ok(p), Ok(l)) => assert_eq!(p.as_ref().map(|(_, n)| *n), *l),
            (Err(a), Err(b)) => assert_eq!(a, b),
            _ => panic!("reply_len {len:?} disagrees with parse_reply {parsed:?}"),
        }
        parsed
    }

    #[track_caller]
    fn ok(buf: &[u8], v: Value) {
        assert_eq!(parse(buf), Ok(Some((v, buf.len()))));
    }

    #[track_caller]
    fn err(buf: &[u8], e: ReplyError) {
        assert_eq!(parse(buf), Err(e), "{:?}", String::from_utf8_lossy(buf));
    }

    fn encode(proto: Protocol, v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        v.write_to(&mut RespWriter::new(&mut out, proto));
        out
    }

    #[test]
    fn resp2_types() {
        ok(b"+OK\r\n", Value::simple("OK"));
        ok(b"+\r\n", Value::simple(""));
        ok(b"-ERR x y\r\n", Value::error("ERR x y"));
        ok(b":0\r\n", Value::Integer(0));
        ok(b":-9223372036854775808\r\n", Value::Integer(i64::MIN));
        ok(b":9223372036854775807\r\n", Value::Integer(i64::MAX));
        ok(b"$0\r\n\r\n", Value::bulk(""));
        ok(b"$4\r\na\r\nb\r\n", Value::bulk("a\r\nb"));
        ok(b"$-1\r\n", Value::Null);
        ok(b"*-1\r\n", Value::NullArray);
        ok(b"*0\r\n", Value::Array(vec![]));
        ok(
            b"*3\r\n:1\r\n*1\r\n$1\r\nx\r\n$-1\r\n",
            Value::Array(vec![Value::Integer(1), Value::Array(vec![Value::bulk("x")]), Value::Null]),
        );
    }

    #[test]
    fn resp3_types() {
        ok(b"_\r\n", Value::Null);
        ok(b",1.1000000000000001\r\n", Value::Double(1.1));
        ok(b",inf\r\n", Value::Double(f64::INFINITY));
        ok(b",-inf\r\n", Value::Double(f64::NEG_INFINITY));
        ok(b",1e+20\r\n", Value::Double(1e20));
        ok(b",-0\r\n", Value::Double(-0.0));
        for nan in [&b",nan\r\n"[..], b",-nan\r\n", b",NaN\r\n"] {
            match parse(nan) {
                Ok(Some((Value::Double(d), _))) => assert!(d.is_nan()),
                other => panic!("{other:?}"),
            }
        }
        ok(b"#t\r\n", Value::Boolean(true));
        ok(b"#f\r\n", Value::Boolean(false));
        ok(
            b"(1234567999999999999999999999999999999\r\n",
            Value::BigNumber(b"1234567999999999999999999999999999999".to_vec()),
        );
        ok(b"(-12\r\n", Value::BigNumber(b"-12".to_vec()));
        ok(b"!8\r\nERR a\r\nb\r\n", Value::error("ERR a\r\nb"));
        ok(
            b"=29\r\ntxt:This is a verbatim\nstring\r\n",
            Value::Verbatim { format: *b"txt", text: b"This is a verbatim\nstring".to_vec() },
        );
        ok(b"=4\r\nmkd:\r\n", Value::Verbatim { format: *b"mkd", text: vec![] });
        ok(b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n", Value::Map(vec![(Value::bulk("f"), Value::bulk("v"))]));
        ok(b"~1\r\n$1\r\nm\r\n", Value::Set(vec![Value::bulk("m")]));
        ok(b">2\r\n$7\r\nmessage\r\n:1\r\n", Value::Push(vec![Value::bulk("message"), Value::Integer(1)]));
    }

    /// `DEBUG PROTOCOL attrib` as sent by redis-server 7.0.15.
    #[test]
    fn attribute_from_redis() {
        ok(
            b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n$39\r\nSome real reply following the attribute\r\n",
            Value::Attribute {
                attrs: vec![(
                    Value::bulk("key-popularity"),
                    Value::Array(vec![Value::bulk("key:123"), Value::Integer(90)]),
                )],
                value: Box::new(Value::bulk("Some real reply following the attribute")),
            },
        );
    }

    #[test]
    fn consecutive_replies() {
        let buf = b"+OK\r\n:1\r\n$-1\r\n";
        let (v, n) = parse(buf).unwrap().unwrap();
        assert_eq!((v, n), (Value::simple("OK"), 5));
        let (v, m) = parse(&buf[n..]).unwrap().unwrap();
        assert_eq!((v, m), (Value::Integer(1), 4));
        assert_eq!(parse(&buf[n + m..]).unwrap().unwrap().0, Value::Null);
        assert_eq!(parse(b""), Ok(None));
    }

    #[test]
    fn malformed_inputs_are_errors() {
        use ReplyError::*;
        err(b"x\r\n", UnknownType(b'x'));
        err(b"\r\n", UnknownType(b'\r'));
        err(b"@", UnknownType(b'@'));
        err(b":12a\r\n", BadInteger);
        err(b":\r\n", BadInteger);
        err(b":-\r\n", BadInteger);
        err(b":9223372036854775808\r\n", BadInteger);
        err(b":1\rx", MissingCrlf);
        err(b"+OK\rX\n", MissingCrlf);
        err(b"$3\r\nabcd\r\n", MissingCrlf);
        err(b"$3\r\nabc\n\r", MissingCrlf);
        err(b"$-2\r\n", BadLength(b'$'));
        err(b"$x\r\n", BadLength(b'$'));
        err(b"$\r\n", BadLength(b'$'));
        err(b"!-1\r\n", BadLength(b'!'));
        err(b"=-1\r\n", BadLength(b'='));
        err(b"*-2\r\n", BadLength(b'*'));
        err(b"%-1\r\n", BadLength(b'%'));
        err(b"~-1\r\n", BadLength(b'~'));
        err(b">-1\r\n", BadLength(b'>'));
        err(b"|-1\r\n", BadLength(b'|'));
        err(b",\r\n", BadDouble);
        err(b",1.5x\r\n", BadDouble);
        err(b", 1\r\n", BadDouble);
        err(b",\xff\r\n", BadDouble);
        err(b"#x\r\n", BadBoolean);
        err(b"#\r\n", BadBoolean);
        err(b"#tt\r\n", BadBoolean);
        err(b"(\r\n", BadBigNumber);
        err(b"(-\r\n", BadBigNumber);
        err(b"(12a\r\n", BadBigNumber);
        err(b"=3\r\ntxt\r\n", BadVerbatim);
        err(b"=5\r\ntxt-x\r\n", BadVerbatim);
        err(b"_x\r\n", BadNull);
        err(b"$?\r\n", Streamed(b'$'));
        err(b"*?\r\n", Streamed(b'*'));
        err(b"%?\r\n", Streamed(b'%'));
        err(b";4\r\nabcd\r\n", Streamed(b';'));
        err(b"*2\r\n:1\r\n?\r\n", UnknownType(b'?'));
        assert!(!ReplyError::BadDouble.to_string().is_empty());
        assert!(ReplyError::UnknownType(b'x').to_string().contains("'x'"));
    }

    #[test]
    fn huge_length_claims_do_not_allocate() {
        let unlimited = ReplyLimits { max_bulk_len: usize::MAX, max_aggregate_len: usize::MAX, max_depth: 128 };
        for buf in [
            &b"$4294967296\r\nab"[..],
            b"!4294967296\r\nab",
            b"=4294967296\r\ntxt:",
            b"*4294967296\r\n:1\r\n",
            b"%4294967296\r\n:1\r\n:2\r\n",
            b"|4294967296\r\n",
            b"$9223372036854775807\r\n",
            b"*9223372036854775807\r\n",
        ] {
            assert_eq!(parse_reply(buf, &unlimited), Ok(None));
            assert_eq!(reply_len(buf, &unlimited), Ok(None));
        }
        err(b"$4294967296\r\nab", ReplyError::BulkTooLong { len: 4294967296, max: 512 * 1024 * 1024 });
        err(b"*4294967296\r\n", ReplyError::AggregateTooLong { len: 4294967296, max: i32::MAX as usize });
        let small = ReplyLimits { max_bulk_len: 3, max_aggregate_len: 2, max_depth: 4 };
        assert_eq!(parse_reply(b"$4\r\nabcd\r\n", &small), Err(ReplyError::BulkTooLong { len: 4, max: 3 }));
        assert!(parse_reply(b"$3\r\nabc\r\n", &small).unwrap().is_some());
        assert_eq!(reply_len(b"%3\r\n", &small), Err(ReplyError::AggregateTooLong { len: 3, max: 2 }));
    }

    #[test]
    fn depth_is_bounded() {
        let nested = |n: usize| {
            let mut buf = b"*1\r\n".repeat(n);
            buf.extend_from_slice(b":1\r\n");
            buf
        };
        assert!(parse(&nested(128)).unwrap().is_some());
        err(&nested(129), ReplyError::TooDeep { max_depth: 128 });
        // Far beyond any stack: rejected at the limit, not by overflowing.
        err(&nested(1_000_000), ReplyError::TooDeep { max_depth: 128 });
        err(&b"|0\r\n".repeat(1_000_000), ReplyError::TooDeep { max_depth: 128 });
        err(&b"%1\r\n".repeat(1_000_000), ReplyError::TooDeep { max_depth: 128 });
        // Incomplete but not too deep yet: more bytes needed.
        assert_eq!(parse(&b"*1\r\n".repeat(100)), Ok(None));
    }

    /// Values RESP3 can carry without loss: no `NullArray` (RESP3 has one
    /// null) and no CR/LF in simple strings and errors (the writer blanks them).
    fn resp3_value() -> impl Strategy<Value = Value> {
        let line =
            proptest::collection::vec(any::<u8>().prop_filter("no CR/LF", |b| *b != b'\r' && *b != b'\n'), 0..12);
        let leaf = prop_oneof![
            line.clone().prop_map(Value::Simple),
            line.prop_map(Value::Error),
            any::<i64>().prop_map(Value::Integer),
            proptest::collection::vec(any::<u8>(), 0..24).prop_map(Value::Bulk),
            Just(Value::Null),
            any::<f64>().prop_map(Value::Double),
            prop_oneof![Just(0.0), Just(-0.0), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(1.1)]
                .prop_map(Value::Double),
            any::<bool>().prop_map(Value::Boolean),
            "-?[1-9][0-9]{0,40}".prop_map(|s| Value::BigNumber(s.into_bytes())),
            (any::<[u8; 3]>(), proptest::collection::vec(any::<u8>(), 0..16))
                .prop_map(|(format, text)| Value::Verbatim { format, text }),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| {
            let items = proptest::collection::vec(inner.clone(), 0..6);
            let pairs = proptest::collection::vec((inner.clone(), inner.clone()), 0..4);
            prop_oneof![
                items.clone().prop_map(Value::Array),
                items.clone().prop_map(Value::Set),
                items.prop_map(Value::Push),
                pairs.clone().prop_map(Value::Map),
                (pairs, inner).prop_map(|(attrs, v)| Value::Attribute { attrs, value: Box::new(v) }),
            ]
        })
    }

    /// Values RESP2 can carry exactly.
    fn resp2_value() -> impl Strategy<Value = Value> {
        let line =
            proptest::collection::vec(any::<u8>().prop_filter("no CR/LF", |b| *b != b'\r' && *b != b'\n'), 0..12);
        let leaf = prop_oneof![
            line.clone().prop_map(Value::Simple),
            line.prop_map(Value::Error),
            any::<i64>().prop_map(Value::Integer),
            proptest::collection::vec(any::<u8>(), 0..24).prop_map(Value::Bulk),
            Just(Value::Null),
            Just(Value::NullArray),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| proptest::collection::vec(inner, 0..6).prop_map(Value::Array))
    }

    /// Structural equality where NaN equals NaN (doubles are otherwise exact).
    fn same(a: &Value, b: &Value) -> bool {
        let all = |x: &[Value], y: &[Value]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q));
        let pairs = |x: &[(Value, Value)], y: &[(Value, Value)]| {
            x.len() == y.len() && x.iter().zip(y).all(|((k1, v1), (k2, v2))| same(k1, k2) && same(v1, v2))
        };
        match (a, b) {
            (Value::Double(x), Value::Double(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
            (Value::Array(x), Value::Array(y)) | (Value::Set(x), Value::Set(y)) | (Value::Push(x), Value::Push(y)) => {
                all(x, y)
            }
            (Value::Map(x), Value::Map(y)) => pairs(x, y),
            (Value::Attribute { attrs: a1, value: v1 }, Value::Attribute { attrs: a2, value: v2 }) => {
                pairs(a1, a2) && same(v1, v2)
            }
            _ => a == b,
        }
    }

    fn check_prefixes(buf: &[u8]) -> Result<(), TestCaseError> {
        for cut in 0..buf.len() {
            prop_assert_eq!(reply_len(&buf[..cut], &L), Ok(None), "prefix {}", cut);
            prop_assert_eq!(parse_reply(&buf[..cut], &L), Ok(None), "prefix {}", cut);
        }
        prop_assert_eq!(reply_len(buf, &L), Ok(Some(buf.len())));
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn resp3_round_trip(v in resp3_value()) {
            let buf = encode(Protocol::Resp3, &v);
            let (back, n) = parse_reply(&buf, &L).unwrap().unwrap();
            prop_assert_eq!(n, buf.len());
            prop_assert!(same(&back, &v), "{:?} != {:?}", back, v);
            check_prefixes(&buf)?;
        }

        #[test]
        fn resp2_round_trip(v in resp2_value()) {
            let buf = encode(Protocol::Resp2, &v);
            prop_assert_eq!(parse_reply(&buf, &L), Ok(Some((v, buf.len()))));
            check_prefixes(&buf)?;
        }

        #[test]
        fn resp2_down_conversion_parses(v in resp3_value()) {
            // Whatever RESP3 value is written as RESP2, the result is one
            // well-formed RESP2 reply.
            let mut buf = Vec::new();
            let mut w = RespWriter::new(&mut buf, Protocol::Resp2);
            v.write_to(&mut w);
            prop_assert!(!w.is_dropping_attributes());
            prop_assert_eq!(reply_len(&buf, &L), Ok(Some(buf.len())));
            check_prefixes(&buf)?;
        }

        #[test]
        fn garbage_never_panics(buf in proptest::collection::vec(
            prop_oneof![
                4 => proptest::sample::select(b"+-:$*_,#(!=%~>|\r\n0123456789-?tfa".to_vec()),
                1 => any::<u8>(),
            ],
            0..64,
        )) {
            let parsed = parse_reply(&buf, &L);
            let len = reply_len(&buf, &L);
            match (&parsed, &len) {
                (Ok(p), Ok(l)) => prop_assert_eq!(p.as_ref().map(|(_, n)| *n), *l),
                (Err(a), Err(b)) => prop_assert_eq!(a, b),
                _ => prop_assert!(false, "{:?} vs {:?}", parsed, len),
            }
        }
    }
}
