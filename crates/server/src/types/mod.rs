//! Value types stored in the keyspace, one module per type, each with its
//! compact encodings and the helpers its commands share.

pub mod compact;
pub mod double;
pub mod dump;
pub mod float80;
pub mod geo;
pub mod hash;
pub mod hll;
pub mod list;
pub mod set;
pub mod stream;
pub mod string;
pub mod zset;

use hash::HashValue;
use list::ListValue;
use set::SetValue;
use stream::StreamValue;
use string::StrValue;
use zset::ZSetValue;

/// A stored value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string (also integers and bitmaps).
    Str(StrValue),
    /// A set.
    Set(SetValue),
    /// A sorted set.
    ZSet(ZSetValue),
    /// A stream (boxed: it is large, and rare next to strings).
    Stream(Box<StreamValue>),
    /// A list. Aggregates are boxed so every key's entry stays as small as
    /// a string's.
    List(Box<ListValue>),
    /// A hash.
    Hash(Box<HashValue>),
}

impl Value {
    /// The name `TYPE` reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
        }
    }

    /// Bytes the value holds outside its [`Value`] itself (for the memory
    /// estimate); an integer lives inline and costs nothing more.
    pub fn heap_size(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
            Value::Set(s) => s.heap_size(),
            Value::ZSet(z) => z.heap_size(),
            Value::Stream(s) => std::mem::size_of::<StreamValue>() + s.heap_size(),
            Value::List(l) => std::mem::size_of::<ListValue>() + l.heap_size(),
            Value::Hash(h) => std::mem::size_of::<HashValue>() + h.heap_size(),
        }
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding(),
            Value::Set(s) => s.encoding(),
            Value::ZSet(z) => z.encoding(),
            Value::Stream(s) => s.encoding(),
            Value::List(l) => l.encoding(),
            Value::Hash(h) => h.encoding(),
        }
    }
}
