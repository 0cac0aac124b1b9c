//! Value types stored in the keyspace, one module per type, each with its
//! compact encodings and the helpers its commands share.

pub mod dump;
pub mod float80;
pub mod string;

use string::{StrRef, StrValue};

/// A stored value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string (also integers and bitmaps).
    Str(StrValue),
}

impl Value {
    /// The name `TYPE` reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
        }
    }

    /// Bytes the value holds outside its [`Value`] itself (for the memory
    /// estimate); an integer lives inline and costs nothing more.
    pub fn heap_size(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
        }
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        self.view().encoding()
    }

    /// A borrowed view of the value.
    pub fn view(&self) -> ValueRef<'_> {
        match self {
            Value::Str(s) => ValueRef::Str(s.view()),
        }
    }
}

/// A borrowed value, wherever the keyspace stores it: what read commands
/// get, so reading a value never copies it. Each value type has a variant,
/// as in [`Value`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    /// A string.
    Str(StrRef<'a>),
}

impl ValueRef<'_> {
    /// The name `TYPE` reports.
    pub fn type_name(self) -> &'static str {
        match self {
            ValueRef::Str(_) => "string",
        }
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(self) -> &'static str {
        match self {
            ValueRef::Str(s) => s.encoding(),
        }
    }

    /// An owned copy, in the same encoding.
    pub fn to_owned(self) -> Value {
        match self {
            ValueRef::Str(s) => Value::Str(s.to_owned()),
        }
    }
}
