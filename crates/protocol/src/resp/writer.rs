//! [`RespWriter`]: a [`ReplySink`] that appends RESP2 or RESP3 bytes.
//!
//! The server appends every reply of a pipelined batch into one output
//! buffer and then writes it with a single system call, so the writer
//! borrows that buffer instead of owning one: creating a writer is free and
//! nothing is copied afterwards. Apart from the buffer growing, writing a
//! reply never allocates.
//!
//! In RESP2 the writer applies Redis's down-conversions (maps become flat
//! arrays, doubles become bulk strings, …) so command code writes each reply
//! once, in RESP3 terms.

use crate::number::{i64_len, write_double_g17, write_i64, write_u64};
use crate::reply::ReplySink;

/// Which RESP dialect a connection speaks (`HELLO 2` / `HELLO 3`).
///
/// Kept per connection because the same reply is written differently in each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Protocol {
    /// RESP2: the default for new connections.
    #[default]
    Resp2,
    /// RESP3: negotiated with `HELLO 3`.
    Resp3,
}

/// `+OK`, the most common reply of all.
pub const OK: &[u8] = b"+OK\r\n";
/// `+PONG`, the reply to `PING` without an argument.
pub const PONG: &[u8] = b"+PONG\r\n";
/// `+QUEUED`, the reply to each command inside `MULTI`.
pub const QUEUED: &[u8] = b"+QUEUED\r\n";
/// Integer 0 (also RESP2's `false`).
pub const ZERO: &[u8] = b":0\r\n";
/// Integer 1 (also RESP2's `true`).
pub const ONE: &[u8] = b":1\r\n";
/// Integer -1 (`TTL` of a key without expiry, missing index, …).
pub const MINUS_ONE: &[u8] = b":-1\r\n";
/// Integer -2 (`TTL` of a missing key).
pub const MINUS_TWO: &[u8] = b":-2\r\n";
/// An empty array: the same bytes in RESP2 and RESP3.
pub const EMPTY_ARRAY: &[u8] = b"*0\r\n";
/// An empty bulk string.
pub const EMPTY_BULK: &[u8] = b"$0\r\n\r\n";
/// RESP2's null bulk string; use [`RespWriter::null`] to get the right null for the protocol.
pub const NULL_BULK_RESP2: &[u8] = b"$-1\r\n";
/// RESP2's null array; use [`RespWriter::null_array`] to get the right null for the protocol.
pub const NULL_ARRAY_RESP2: &[u8] = b"*-1\r\n";
/// RESP3's single null.
pub const NULL_RESP3: &[u8] = b"_\r\n";
/// Redis's error for an operation on a key of another type.
pub const WRONGTYPE: &[u8] = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
/// Redis's generic syntax error.
pub const ERR_SYNTAX: &[u8] = b"-ERR syntax error\r\n";
/// Redis's error for an argument that is not a valid `i64`.
pub const ERR_NOT_INTEGER: &[u8] = b"-ERR value is not an integer or out of range\r\n";
/// Redis's error for an argument that is not a valid double.
pub const ERR_NOT_FLOAT: &[u8] = b"-ERR value is not a valid float\r\n";
/// Redis's error for commands that need an existing key (`RENAME` …).
pub const ERR_NO_SUCH_KEY: &[u8] = b"-ERR no such key\r\n";
/// Redis's error when `INCR`-style arithmetic would leave the `i64` range.
pub const ERR_OVERFLOW: &[u8] = b"-ERR increment or decrement would overflow\r\n";

/// Writes replies as RESP2 or RESP3 into a borrowed output buffer.
///
/// One writer may write any number of consecutive replies. In RESP2 it also
/// tracks attribute pairs to drop (RESP2 cannot express attributes), which is
/// why it keeps a small counter besides the buffer.
#[derive(Debug)]
pub struct RespWriter<'a> {
    out: &'a mut Vec<u8>,
    proto: Protocol,
    /// RESP2 only: complete values still to be swallowed because they are
    /// attribute keys or values. Each dropped aggregate replaces its own slot
    /// by its element count, so nesting needs no stack.
    skip: usize,
}

impl<'a> RespWriter<'a> {
    /// A writer that appends to `out` (existing contents are kept).
    #[inline]
    pub fn new(out: &'a mut Vec<u8>, proto: Protocol) -> Self {
        RespWriter { out, proto, skip: 0 }
    }

    /// The protocol this writer encodes for.
    #[inline]
    pub fn protocol(&self) -> Protocol {
        self.proto
    }

    /// Everything in the output buffer so far (including earlier contents).
    #[inline]
    pub fn buffer(&self) -> &[u8] {
        self.out
    }

    /// True while RESP2 attribute pairs are being dropped; after a complete
    /// reply this is always false, which lets tests check the sink stayed in step.
    #[inline]
    pub fn is_dropping_attributes(&self) -> bool {
        self.skip > 0
    }

    /// Appends one complete pre-encoded value, such as [`OK`] or [`WRONGTYPE`].
    ///
    /// The bytes must be valid for the writer's protocol and form exactly one
    /// value; the constants in this module that are not protocol-specific
    /// qualify. This is the fastest way to send a fixed reply.
    #[inline]
    pub fn raw(&mut self, encoded: &[u8]) {
        if self.drop_scalar() {
            return;
        }
        self.out.extend_from_slice(encoded);
    }

    /// `+OK`.
    #[inline]
    pub fn ok(&mut self) {
        self.raw(OK);
    }

    /// `+PONG`.
    #[inline]
    pub fn pong(&mut self) {
        self.raw(PONG);
    }

    /// The `WRONGTYPE` error.
    #[inline]
    pub fn wrongtype(&mut self) {
        self.raw(WRONGTYPE);
    }

    /// A bulk string holding the decimal text of `n`, for replies Redis
    /// sends as strings although they hold integers (its `addReplyBulkLongLong`).
    pub fn bulk_i64(&mut self, n: i64) {
        if self.drop_scalar() {
            return;
        }
        self.out.reserve(32);
        self.out.push(b'$');
        write_u64(self.out, i64_len(n) as u64);
        self.out.extend_from_slice(b"\r\n");
        write_i64(self.out, n);
        self.out.extend_from_slice(b"\r\n");
    }

    /// Returns true (and consumes one slot) if the next value is to be dropped.
    #[inline]
    fn drop_scalar(&mut self) -> bool {
        if self.skip == 0 {
            return false;
        }
        self.skip -= 1;
        true
    }

    /// Returns true if this aggregate header (with `children` values after
    /// it) is to be dropped, in which case its elements are dropped too.
    #[inline]
    fn drop_aggregate(&mut self, children: usize) -> bool {
        if self.skip == 0 {
            return false;
        }
        self.skip = (self.skip - 1).saturating_add(children);
        true
    }

    /// `<type><n>\r\n` for lengths and counts.
    #[inline]
    fn header(&mut self, kind: u8, n: usize) {
        self.out.reserve(24);
        self.out.push(kind);
        write_u64(self.out, n as u64);
        self.out.extend_from_slice(b"\r\n");
    }

    /// `<type>text\r\n`, with CR and LF turned into spaces so that text from
    /// anywhere (error messages quoting user input) cannot break the framing.
    #[inline]
    fn line(&mut self, kind: u8, text: &[u8]) {
        self.out.reserve(text.len() + 3);
        self.out.push(kind);
        self.out.extend(text.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
        self.out.extend_from_slice(b"\r\n");
    }

    /// `$len\r\nbytes\r\n` without the drop check.
    #[inline]
    fn bulk_body(&mut self, b: &[u8]) {
        let len = b.len();
        self.out.reserve(len + 25);
        // Most values are short: emit their header as one fixed-size copy.
        if len < 10 {
            self.out.extend_from_slice(&[b'$', b'0' + len as u8, b'\r', b'\n']);
        } else if len < 100 {
            self.out.extend_from_slice(&[b'$', b'0' + (len / 10) as u8, b'0' + (len % 10) as u8, b'\r', b'\n']);
        } else {
            self.out.push(b'$');
            write_u64(self.out, len as u64);
            self.out.extend_from_slice(b"\r\n");
        }
        self.out.extend_from_slice(b);
        self.out.extend_from_slice(b"\r\n");
    }
}

impl ReplySink for RespWriter<'_> {
    #[inline]
    fn simple(&mut self, s: &[u8]) {
        if self.drop_scalar() {
            return;
        }
        // Every successful SET, MSET, SELECT, ... answers OK, and every
        // health check's PING answers PONG: one copy of the whole reply
        // instead of the line's scan for line breaks.
        if s == b"OK" {
            self.out.extend_from_slice(OK);
            return;
        }
        if s == b"PONG" {
            self.out.extend_from_slice(PONG);
            return;
        }
        self.line(b'+', s);
    }

    #[inline]
    fn error(&mut self, msg: &[u8]) {
        if self.drop_scalar() {
            return;
        }
        // Redis trims line breaks off both ends of a formatted error before
        // turning the ones inside into spaces, so an option ending in `\r`
        // leaves no trailing space.
        let start = msg.iter().position(|b| !matches!(b, b'\r' | b'\n')).unwrap_or(msg.len());
        let end = msg.iter().rposition(|b| !matches!(b, b'\r' | b'\n')).map_or(start, |i| i + 1);
        self.line(b'-', &msg[start..end]);
    }

    #[inline]
    fn integer(&mut self, n: i64) {
        if self.drop_scalar() {
            return;
        }
        if (0..10).contains(&n) {
            self.out.extend_from_slice(&[b':', b'0' + n as u8, b'\r', b'\n']);
            return;
        }
        self.out.reserve(24);
        self.out.push(b':');
        write_i64(self.out, n);
        self.out.extend_from_slice(b"\r\n");
    }

    #[inline]
    fn bulk(&mut self, b: &[u8]) {
        if self.drop_scalar() {
            return;
        }
        self.bulk_body(b);
    }

    #[inline]
    fn null(&mut self) {
        if self.drop_scalar() {
            return;
        }
        self.out.extend_from_slice(match self.proto {
            Protocol::Resp2 => NULL_BULK_RESP2,
            Protocol::Resp3 => NULL_RESP3,
        });
    }

    #[inline]
    fn null_array(&mut self) {
        if self.drop_scalar() {
            return;
        }
        self.out.extend_from_slice(match self.proto {
            Protocol::Resp2 => NULL_ARRAY_RESP2,
            Protocol::Resp3 => NULL_RESP3,
        });
    }

    #[inline]
    fn array(&mut self, len: usize) {
        if self.drop_aggregate(len) {
            return;
        }
        self.header(b'*', len);
    }

    #[inline]
    fn map(&mut self, pairs: usize) {
        let children = pairs.saturating_mul(2);
        if self.drop_aggregate(children) {
            return;
        }
        match self.proto {
            Protocol::Resp2 => self.header(b'*', children),
            Protocol::Resp3 => self.header(b'%', pairs),
        }
    }

    #[inline]
    fn set(&mut self, len: usize) {
        if self.drop_aggregate(len) {
            return;
        }
        match self.proto {
            Protocol::Resp2 => self.header(b'*', len),
            Protocol::Resp3 => self.header(b'~', len),
        }
    }

    #[inline]
    fn push(&mut self, len: usize) {
        if self.drop_aggregate(len) {
            return;
        }
        match self.proto {
            Protocol::Resp2 => self.header(b'*', len),
            Protocol::Resp3 => self.header(b'>', len),
        }
    }

    fn double(&mut self, d: f64) {
        if self.drop_scalar() {
            return;
        }
        match self.proto {
            Protocol::Resp3 => {
                self.out.reserve(28);
                self.out.push(b',');
                write_double_g17(self.out, d);
                self.out.extend_from_slice(b"\r\n");
            }
            Protocol::Resp2 => {
                // The text is at most 24 bytes, so its length has one or two
                // digits: reserve two, then close the gap if only one is needed.
                self.out.reserve(32);
                let start = self.out.len();
                self.out.extend_from_slice(b"$00\r\n");
                let body = self.out.len();
                write_double_g17(self.out, d);
                let len = self.out.len() - body;
                if len < 10 {
                    self.out[start + 1] = b'0' + len as u8;
                    self.out.copy_within(start + 3.., start + 2);
                    self.out.pop();
                } else {
                    self.out[start + 1] = b'0' + (len / 10) as u8;
                    self.out[start + 2] = b'0' + (len % 10) as u8;
                }
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    fn double_text(&mut self, _value: f64, text: &[u8]) {
        if self.drop_scalar() {
            return;
        }
        match self.proto {
            Protocol::Resp3 => {
                self.out.push(b',');
                self.out.extend_from_slice(text);
                self.out.extend_from_slice(b"\r\n");
            }
            Protocol::Resp2 => self.bulk(text),
        }
    }

    #[inline]
    fn boolean(&mut self, b: bool) {
        if self.drop_scalar() {
            return;
        }
        self.out.extend_from_slice(match (self.proto, b) {
            (Protocol::Resp2, true) => ONE,
            (Protocol::Resp2, false) => ZERO,
            (Protocol::Resp3, true) => b"#t\r\n",
            (Protocol::Resp3, false) => b"#f\r\n",
        });
    }

    fn big_number(&mut self, digits: &[u8]) {
        if self.drop_scalar() {
            return;
        }
        match self.proto {
            Protocol::Resp2 => self.bulk_body(digits),
            Protocol::Resp3 => self.line(b'(', digits),
        }
    }

    fn verbatim(&mut self, format: &[u8; 3], text: &[u8]) {
        if self.drop_scalar() {
            return;
        }
        match self.proto {
            Protocol::Resp2 => self.bulk_body(text),
            Protocol::Resp3 => {
                self.out.reserve(text.len() + 29);
                self.out.push(b'=');
                write_u64(self.out, text.len() as u64 + 4);
                self.out.extend_from_slice(b"\r\n");
                self.out.extend_from_slice(format);
                self.out.push(b':');
                self.out.extend_from_slice(text);
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    fn attribute(&mut self, pairs: usize) {
        // The attribute itself takes no slot: it decorates the value after
        // its pairs, and that value is what fills the slot.
        let children = pairs.saturating_mul(2);
        if self.skip > 0 || self.proto == Protocol::Resp2 {
            self.skip = self.skip.saturating_add(children);
            return;
        }
        self.header(b'|', pairs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn encode(proto: Protocol, f: impl FnOnce(&mut RespWriter<'_>)) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = RespWriter::new(&mut out, proto);
        f(&mut w);
        assert!(!w.is_dropping_attributes());
        out
    }

    fn both(f: impl Fn(&mut RespWriter<'_>)) -> (Vec<u8>, Vec<u8>) {
        (encode(Protocol::Resp2, &f), encode(Protocol::Resp3, &f))
    }

    fn value(proto: Protocol, v: &Value) -> Vec<u8> {
        encode(proto, |w| v.write_to(w))
    }

    #[track_caller]
    fn check(f: impl Fn(&mut RespWriter<'_>), resp2: &[u8], resp3: &[u8]) {
        let (two, three) = both(f);
        assert_eq!(two, resp2, "RESP2: {:?}", String::from_utf8_lossy(&two));
        assert_eq!(three, resp3, "RESP3: {:?}", String::from_utf8_lossy(&three));
    }

    #[test]
    fn scalars() {
        check(|w| w.simple(b"OK"), b"+OK\r\n", b"+OK\r\n");
        check(|w| w.error(b"ERR bad thing"), b"-ERR bad thing\r\n", b"-ERR bad thing\r\n");
        check(|w| w.integer(0), b":0\r\n", b":0\r\n");
        check(|w| w.integer(9), b":9\r\n", b":9\r\n");
        check(|w| w.integer(10), b":10\r\n", b":10\r\n");
        check(|w| w.integer(-1), b":-1\r\n", b":-1\r\n");
        check(|w| w.integer(i64::MIN), b":-9223372036854775808\r\n", b":-9223372036854775808\r\n");
        check(|w| w.bulk(b""), b"$0\r\n\r\n", b"$0\r\n\r\n");
        check(|w| w.bulk(b"a\r\nb"), b"$4\r\na\r\nb\r\n", b"$4\r\na\r\nb\r\n");
        check(|w| w.bulk_i64(-123), b"$4\r\n-123\r\n", b"$4\r\n-123\r\n");
        for len in [9, 10, 99, 100, 1000, 123456] {
            let data = vec![b'x'; len];
            let mut expected = format!("${len}\r\n").into_bytes();
            expected.extend_from_slice(&data);
            expected.extend_from_slice(b"\r\n");
            check(|w| w.bulk(&data), &expected, &expected);
        }
        check(|w| w.bulk_i64(0), b"$1\r\n0\r\n", b"$1\r\n0\r\n");
    }

    #[test]
    fn nulls() {
        check(|w| w.null(), b"$-1\r\n", b"_\r\n");
        check(|w| w.null_array(), b"*-1\r\n", b"_\r\n");
    }

    /// Bytes observed from redis-server 7.0.15 (ZSCORE after `ZADD z 1.1 a`
    /// etc., in RESP2 and after `HELLO 3`).
    #[test]
    #[allow(clippy::approx_constant)] // 3.141 is what `DEBUG PROTOCOL double` sends
    fn doubles_with_their_own_text() {
        check(
            |w| w.double_text(13.5, b"13.50000000000000000"),
            b"$20\r\n13.50000000000000000\r\n",
            b",13.50000000000000000\r\n",
        );
    }

    #[test]
    fn doubles_match_redis_7_0() {
        check(|w| w.double(1.1), b"$18\r\n1.1000000000000001\r\n", b",1.1000000000000001\r\n");
        check(|w| w.double(f64::INFINITY), b"$3\r\ninf\r\n", b",inf\r\n");
        check(|w| w.double(f64::NEG_INFINITY), b"$4\r\n-inf\r\n", b",-inf\r\n");
        check(|w| w.double(1e20), b"$5\r\n1e+20\r\n", b",1e+20\r\n");
        check(|w| w.double(0.0), b"$1\r\n0\r\n", b",0\r\n");
        check(|w| w.double(3.0), b"$1\r\n3\r\n", b",3\r\n");
        check(|w| w.double(1.5e-7), b"$22\r\n1.4999999999999999e-07\r\n", b",1.4999999999999999e-07\r\n");
        check(|w| w.double(123456789.123), b"$13\r\n123456789.123\r\n", b",123456789.123\r\n");
        check(|w| w.double(3.125), b"$5\r\n3.125\r\n", b",3.125\r\n");
        // Length prefix switches from one to two digits at ten characters.
        check(|w| w.double(1.25e-3), b"$7\r\n0.00125\r\n", b",0.00125\r\n");
        check(|w| w.double(1234567890.0), b"$10\r\n1234567890\r\n", b",1234567890\r\n");
        check(|w| w.double(-f64::MAX), b"$24\r\n-1.7976931348623157e+308\r\n", b",-1.7976931348623157e+308\r\n");
    }

    #[test]
    fn resp2_down_conversions() {
        check(|w| w.boolean(true), b":1\r\n", b"#t\r\n");
        check(|w| w.boolean(false), b":0\r\n", b"#f\r\n");
        check(
            |w| w.big_number(b"1234567999999999999999999999999999999"),
            b"$37\r\n1234567999999999999999999999999999999\r\n",
            b"(1234567999999999999999999999999999999\r\n",
        );
        check(
            |w| w.verbatim(b"txt", b"This is a verbatim\nstring"),
            b"$25\r\nThis is a verbatim\nstring\r\n",
            b"=29\r\ntxt:This is a verbatim\nstring\r\n",
        );
        check(
            |w| {
                w.map(3);
                for (k, v) in [(0, 0), (1, 1), (2, 0)] {
                    w.integer(k);
                    w.integer(v);
                }
            },
            b"*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n",
            b"%3\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n",
        );
        check(
            |w| {
                w.set(3);
                (0..3).for_each(|i| w.integer(i));
            },
            b"*3\r\n:0\r\n:1\r\n:2\r\n",
            b"~3\r\n:0\r\n:1\r\n:2\r\n",
        );
        check(
            |w| {
                w.push(2);
                w.bulk(b"message");
                w.bulk(b"x");
            },
            b"*2\r\n$7\r\nmessage\r\n$1\r\nx\r\n",
            b">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n",
        );
        check(|w| w.array(0), b"*0\r\n", b"*0\r\n");
        check(|w| w.map(0), b"*0\r\n", b"%0\r\n");
    }

    /// `DEBUG PROTOCOL attrib` on redis-server 7.0.15, both protocols.
    #[test]
    fn attributes_match_redis_and_are_dropped_in_resp2() {
        let reply = Value::Attribute {
            attrs: vec![(
                Value::bulk("key-popularity"),
                Value::Array(vec![Value::bulk("key:123"), Value::Integer(90)]),
            )],
            value: Box::new(Value::bulk("Some real reply following the attribute")),
        };
        assert_eq!(
            value(Protocol::Resp3, &reply),
            b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n$39\r\nSome real reply following the attribute\r\n"
        );
        assert_eq!(value(Protocol::Resp2, &reply), b"$39\r\nSome real reply following the attribute\r\n");
    }

    #[test]
    fn resp2_drops_nested_attribute_content() {
        // Attribute whose pairs hold a map, a nested attribute, nulls, doubles
        // and every other kind, decorating an array; followed by another reply.
        let reply = Value::Array(vec![
            Value::Attribute {
                attrs: vec![
                    (
                        Value::Map(vec![(
                            Value::Set(vec![Value::Integer(1)]),
                            Value::Push(vec![Value::Null, Value::NullArray]),
                        )]),
                        Value::Attribute {
                            attrs: vec![(Value::Double(1.5), Value::Boolean(true))],
                            value: Box::new(Value::Array(vec![Value::bulk("x")])),
                        },
                    ),
                    (Value::BigNumber(b"1".to_vec()), Value::Verbatim { format: *b"txt", text: b"t".to_vec() }),
                    (Value::simple("s"), Value::error("E")),
                    (Value::Array(vec![]), Value::Map(vec![])),
                ],
                value: Box::new(Value::Array(vec![Value::Integer(7), Value::bulk("v")])),
            },
            Value::Integer(8),
        ]);
        let mut out = Vec::new();
        let mut w = RespWriter::new(&mut out, Protocol::Resp2);
        reply.write_to(&mut w);
        assert!(!w.is_dropping_attributes());
        w.ok();
        assert_eq!(out, b"*2\r\n*2\r\n:7\r\n$1\r\nv\r\n:8\r\n+OK\r\n".as_slice());
    }

    #[test]
    fn line_breaks_cannot_escape_simple_and_error_strings() {
        check(
            |w| w.error(b"ERR unknown command 'FOO\r\nBAR'"),
            b"-ERR unknown command 'FOO  BAR'\r\n",
            b"-ERR unknown command 'FOO  BAR'\r\n",
        );
        check(|w| w.simple(b"a\nb\rc"), b"+a b c\r\n", b"+a b c\r\n");
        check(
            |w| w.error(b"ERR Unsupported option x\r\n\r"),
            b"-ERR Unsupported option x\r\n",
            b"-ERR Unsupported option x\r\n",
        );
        check(|w| w.error(b"\r\n"), b"-\r\n", b"-\r\n");
        check(|w| w.big_number(b"1\r\n"), b"$3\r\n1\r\n\r\n", b"(1  \r\n");
    }

    #[test]
    fn fast_paths_and_constants() {
        check(
            |w| {
                w.ok();
                w.pong();
                w.wrongtype();
                w.raw(EMPTY_ARRAY);
            },
            b"+OK\r\n+PONG\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n*0\r\n",
            b"+OK\r\n+PONG\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n*0\r\n",
        );
        let same = |w: &mut RespWriter<'_>, f: &dyn Fn(&mut RespWriter<'_>), c: &[u8]| {
            let start = w.buffer().len();
            f(w);
            assert_eq!(&w.buffer()[start..], c);
        };
        let mut out = Vec::new();
        let mut w = RespWriter::new(&mut out, Protocol::Resp2);
        same(&mut w, &|w| w.simple(b"OK"), OK);
        same(&mut w, &|w| w.simple(b"PONG"), PONG);
        same(&mut w, &|w| w.simple(b"QUEUED"), QUEUED);
        same(&mut w, &|w| w.integer(0), ZERO);
        same(&mut w, &|w| w.integer(1), ONE);
        same(&mut w, &|w| w.integer(-1), MINUS_ONE);
        same(&mut w, &|w| w.integer(-2), MINUS_TWO);
        same(&mut w, &|w| w.array(0), EMPTY_ARRAY);
        same(&mut w, &|w| w.bulk(b""), EMPTY_BULK);
        same(&mut w, &|w| w.null(), NULL_BULK_RESP2);
        same(&mut w, &|w| w.null_array(), NULL_ARRAY_RESP2);
        same(&mut w, &|w| w.error(b"ERR syntax error"), ERR_SYNTAX);
        same(&mut w, &|w| w.error(b"ERR value is not an integer or out of range"), ERR_NOT_INTEGER);
        same(&mut w, &|w| w.error(b"ERR value is not a valid float"), ERR_NOT_FLOAT);
        same(&mut w, &|w| w.error(b"ERR no such key"), ERR_NO_SUCH_KEY);
        same(&mut w, &|w| w.error(b"ERR increment or decrement would overflow"), ERR_OVERFLOW);
        let mut out = Vec::new();
        let mut w = RespWriter::new(&mut out, Protocol::Resp3);
        same(&mut w, &|w| w.null(), NULL_RESP3);
    }

    #[test]
    fn appends_to_existing_buffer() {
        let mut out = b"+earlier\r\n".to_vec();
        RespWriter::new(&mut out, Protocol::Resp3).integer(42);
        assert_eq!(out, b"+earlier\r\n:42\r\n");
    }

    /// Redis's `HELLO 3` reply shape (7.0.15), written once in RESP3 terms.
    #[test]
    fn hello_reply_in_both_protocols() {
        let write = |w: &mut RespWriter<'_>| {
            let proto = match w.protocol() {
                Protocol::Resp2 => 2,
                Protocol::Resp3 => 3,
            };
            w.map(7);
            w.bulk(b"server");
            w.bulk(b"redis");
            w.bulk(b"version");
            w.bulk(b"7.0.15");
            w.bulk(b"proto");
            w.integer(proto);
            w.bulk(b"id");
            w.integer(4);
            w.bulk(b"mode");
            w.bulk(b"standalone");
            w.bulk(b"role");
            w.bulk(b"master");
            w.bulk(b"modules");
            w.array(0);
        };
        let body = b"$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:P\r\n$2\r\nid\r\n:4\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n";
        let with = |head: &[u8], p: u8| {
            let mut v = head.to_vec();
            v.extend(body.iter().map(|&b| if b == b'P' { p } else { b }));
            v
        };
        check(write, &with(b"*14\r\n", b'2'), &with(b"%7\r\n", b'3'));
    }
}
