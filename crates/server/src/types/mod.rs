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
pub mod string;
pub mod zset;

use set::SetValue;
use string::StrValue;
use zset::ZSetValue;

/// A stored value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string (also integers and bitmaps).
    Str(StrValue),
    /// A set, boxed so that a stored entry stays as small as a string's.
    Set(Box<SetValue>),
    /// A sorted set, boxed likewise.
    ZSet(Box<ZSetValue>),
}

impl Value {
    /// `set` as a stored value.
    pub fn set(set: SetValue) -> Value {
        Value::Set(Box::new(set))
    }

    /// `zset` as a stored value.
    pub fn zset(zset: ZSetValue) -> Value {
        Value::ZSet(Box::new(zset))
    }

    /// The name `TYPE` reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
        }
    }

    /// Bytes the value holds outside its [`Value`] itself (for the memory
    /// estimate); an integer lives inline and costs nothing more.
    pub fn heap_size(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
            Value::Set(s) => std::mem::size_of::<SetValue>() + s.heap_size(),
            Value::ZSet(z) => std::mem::size_of::<ZSetValue>() + z.heap_size(),
        }
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding(),
            Value::Set(s) => s.encoding(),
            Value::ZSet(z) => z.encoding(),
        }
    }
}
