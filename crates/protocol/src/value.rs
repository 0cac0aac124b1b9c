//! [`Value`]: the RESP3 data model, one owned tree per reply.
//!
//! Replies are written by the server through a [`ReplySink`](crate::reply::ReplySink)
//! without building a tree; `Value` is what the reply *parsers* produce (for the
//! client, the CLI, the benchmark and tests) and what test vectors describe.

/// One reply value, in RESP3 terms.
///
/// RESP2 has no separate map, set, double, boolean, big number or verbatim
/// types; parsing RESP2 yields only the variants RESP2 can express. `Null`
/// and `NullArray` are both RESP3's null; they are kept apart so a RESP2
/// reply (`$-1` versus `*-1`) can be written back byte for byte.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `+text` — a status reply.
    Simple(Vec<u8>),
    /// `-CODE message` — an error reply (without the leading `-`).
    Error(Vec<u8>),
    /// `:n`.
    Integer(i64),
    /// `$n` — a binary-safe string.
    Bulk(Vec<u8>),
    /// RESP3 `_`; RESP2 `$-1`.
    Null,
    /// RESP3 `_`; RESP2 `*-1`.
    NullArray,
    /// `*n`.
    Array(Vec<Value>),
    /// `%n` — key/value pairs in order.
    Map(Vec<(Value, Value)>),
    /// `~n`.
    Set(Vec<Value>),
    /// `>n` — out-of-band data (pub/sub messages, invalidations).
    Push(Vec<Value>),
    /// `,x`.
    Double(f64),
    /// `#t` / `#f`.
    Boolean(bool),
    /// `(digits` — kept as its decimal text.
    BigNumber(Vec<u8>),
    /// `=n` — a 3-byte format (`txt`, `mkd`) and the text.
    Verbatim { format: [u8; 3], text: Vec<u8> },
    /// `|n` — attributes that decorate the value that follows them.
    Attribute { attrs: Vec<(Value, Value)>, value: Box<Value> },
}

impl Value {
    /// Convenience constructor for a bulk string.
    pub fn bulk(b: impl AsRef<[u8]>) -> Value {
        Value::Bulk(b.as_ref().to_vec())
    }

    /// Convenience constructor for a status reply.
    pub fn simple(b: impl AsRef<[u8]>) -> Value {
        Value::Simple(b.as_ref().to_vec())
    }

    /// Convenience constructor for an error reply.
    pub fn error(b: impl AsRef<[u8]>) -> Value {
        Value::Error(b.as_ref().to_vec())
    }

    /// True for an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Value::Error(_))
    }

    /// Write this value through any reply sink (RESP2, RESP3 or RESPB).
    pub fn write_to<S: crate::reply::ReplySink + ?Sized>(&self, sink: &mut S) {
        match self {
            Value::Simple(s) => sink.simple(s),
            Value::Error(e) => sink.error(e),
            Value::Integer(n) => sink.integer(*n),
            Value::Bulk(b) => sink.bulk(b),
            Value::Null => sink.null(),
            Value::NullArray => sink.null_array(),
            Value::Array(items) => {
                sink.array(items.len());
                items.iter().for_each(|v| v.write_to(sink));
            }
            Value::Set(items) => {
                sink.set(items.len());
                items.iter().for_each(|v| v.write_to(sink));
            }
            Value::Push(items) => {
                sink.push(items.len());
                items.iter().for_each(|v| v.write_to(sink));
            }
            Value::Map(pairs) => {
                sink.map(pairs.len());
                for (k, v) in pairs {
                    k.write_to(sink);
                    v.write_to(sink);
                }
            }
            Value::Double(d) => sink.double(*d),
            Value::Boolean(b) => sink.boolean(*b),
            Value::BigNumber(n) => sink.big_number(n),
            Value::Verbatim { format, text } => sink.verbatim(format, text),
            Value::Attribute { attrs, value } => {
                sink.attribute(attrs.len());
                for (k, v) in attrs {
                    k.write_to(sink);
                    v.write_to(sink);
                }
                value.write_to(sink);
            }
        }
    }
}
