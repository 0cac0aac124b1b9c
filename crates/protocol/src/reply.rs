//! [`ReplySink`]: the one interface through which replies are written.
//!
//! Command code writes a reply once, as a sequence of calls, and the sink
//! decides the bytes: RESP2 (with Redis's down-conversions), RESP3, or RESPB.
//! Aggregates are announced with their element count and followed by exactly
//! that many elements (twice as many for maps and attributes: key, value, …).

/// Receiver of one or more replies, written element by element.
pub trait ReplySink {
    /// A status reply such as `OK` (must not contain CR or LF).
    fn simple(&mut self, s: &[u8]);
    /// An error reply, code first: `ERR wrong number of arguments ...`.
    fn error(&mut self, msg: &[u8]);
    /// A signed 64-bit integer.
    fn integer(&mut self, n: i64);
    /// A binary-safe string.
    fn bulk(&mut self, b: &[u8]);
    /// A missing value where a string was expected (RESP2 `$-1`).
    fn null(&mut self);
    /// A missing value where an array was expected (RESP2 `*-1`).
    fn null_array(&mut self);
    /// An array of `len` elements follows.
    fn array(&mut self, len: usize);
    /// A map of `pairs` key/value pairs follows (RESP2: a flat array of `2 * pairs`).
    fn map(&mut self, pairs: usize);
    /// A set of `len` elements follows (RESP2: an array).
    fn set(&mut self, len: usize);
    /// An out-of-band push of `len` elements follows (RESP2: an array).
    fn push(&mut self, len: usize);
    /// A double (RESP2: a bulk string formatted as Redis does).
    fn double(&mut self, d: f64);
    /// A double shown with the given text, for the replies Redis prints in
    /// another format than its usual `%.17g` (geo coordinates come from
    /// long doubles with 17 decimals): RESP3 `,text`, RESP2 a bulk string of
    /// `text`. `value` is the same number, for encodings that send doubles
    /// in binary.
    fn double_text(&mut self, value: f64, text: &[u8]);
    /// A boolean (RESP2: integer 1 or 0).
    fn boolean(&mut self, b: bool);
    /// An arbitrary-precision integer given as decimal digits (RESP2: a bulk string).
    fn big_number(&mut self, digits: &[u8]);
    /// A verbatim string with a 3-byte format such as `txt` (RESP2: a bulk string of `text`).
    fn verbatim(&mut self, format: &[u8; 3], text: &[u8]);
    /// Attributes (`pairs` key/value pairs) that decorate the next value.
    ///
    /// Only meaningful in RESP3; a RESP2 sink drops the attribute pairs.
    fn attribute(&mut self, pairs: usize);
}
