//! Value types stored in the keyspace, one module per type, each with its
//! compact encodings and the helpers its commands share.

pub mod compact;
pub mod double;
pub mod float80;
pub mod geo;
pub mod hash;
pub mod hll;
pub mod list;
pub mod listpack_size;
pub mod member_table;
pub mod packed;
pub mod set;
pub mod stream;
pub mod string;
pub mod zset;

#[cfg(test)]
pub(crate) mod test_rng;

use hash::{HashRef, HashValue};
use list::{ListRef, ListValue};
use set::SetValue;
use stream::StreamValue;
use string::{StrRef, StrValue};
use zset::ZSetValue;

/// A stored value. Every type but the string is boxed, so a value, and the
/// node of a key stored boxed, stay as small as a string's.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string (also integers and bitmaps).
    Str(StrValue),
    /// A set.
    Set(Box<SetValue>),
    /// A sorted set.
    ZSet(Box<ZSetValue>),
    /// A stream.
    Stream(Box<StreamValue>),
    /// A list.
    List(Box<ListValue>),
    /// A hash.
    Hash(Box<HashValue>),
}

impl Value {
    /// The name `TYPE` reports.
    pub fn type_name(&self) -> &'static str {
        self.view().type_name()
    }

    /// Bytes the value holds outside its [`Value`] itself (for the memory
    /// estimate); an integer lives inline and costs nothing more.
    pub fn heap_size(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
            Value::Set(s) => std::mem::size_of::<SetValue>() + s.heap_size(),
            Value::ZSet(z) => std::mem::size_of::<ZSetValue>() + z.heap_size(),
            Value::Stream(s) => std::mem::size_of::<StreamValue>() + s.heap_size(),
            Value::List(l) => std::mem::size_of::<ListValue>() + l.heap_size(),
            Value::Hash(h) => std::mem::size_of::<HashValue>() + h.heap_size(),
        }
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        self.view().encoding()
    }

    /// A borrowed view of the value.
    #[inline]
    pub fn view(&self) -> ValueRef<'_> {
        match self {
            Value::Str(s) => ValueRef::Str(s.view()),
            Value::Set(s) => ValueRef::Set(s),
            Value::ZSet(z) => ValueRef::ZSet(z),
            Value::Stream(s) => ValueRef::Stream(s),
            Value::List(l) => ValueRef::List(ListRef::Boxed(l)),
            Value::Hash(h) => ValueRef::Hash(HashRef::Boxed(h)),
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
    /// A set.
    Set(&'a SetValue),
    /// A sorted set.
    ZSet(&'a ZSetValue),
    /// A stream.
    Stream(&'a StreamValue),
    /// A list, boxed or packed.
    List(ListRef<'a>),
    /// A hash, boxed or packed.
    Hash(HashRef<'a>),
}

impl ValueRef<'_> {
    /// The name `TYPE` reports.
    pub fn type_name(self) -> &'static str {
        match self {
            ValueRef::Str(_) => "string",
            ValueRef::Set(_) => "set",
            ValueRef::ZSet(_) => "zset",
            ValueRef::Stream(_) => "stream",
            ValueRef::List(_) => "list",
            ValueRef::Hash(_) => "hash",
        }
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(self) -> &'static str {
        match self {
            ValueRef::Str(s) => s.encoding(),
            ValueRef::Set(s) => s.encoding(),
            ValueRef::ZSet(z) => z.encoding(),
            ValueRef::Stream(s) => s.encoding(),
            ValueRef::List(l) => l.encoding(),
            ValueRef::Hash(h) => h.encoding(),
        }
    }

    /// An owned copy, in the same encoding.
    pub fn to_owned(self) -> Value {
        match self {
            ValueRef::Str(s) => Value::Str(s.to_owned()),
            ValueRef::Set(s) => Value::Set(Box::new(s.clone())),
            ValueRef::ZSet(z) => Value::ZSet(Box::new(z.clone())),
            ValueRef::Stream(s) => Value::Stream(Box::new(s.clone())),
            ValueRef::List(l) => Value::List(Box::new(l.to_owned())),
            ValueRef::Hash(h) => Value::Hash(Box::new(h.to_owned())),
        }
    }
}

/// A value type that [`Value`] holds boxed (every type but the string): how
/// commands find it in a stored value and store a new one, so one set of
/// keyspace accessors serves every such type.
pub trait Boxed: Sized {
    /// How reads borrow the type: `&Self` for types always stored boxed, a
    /// view such as [`ListRef`] for those that may also be stored packed.
    type Ref<'a>: Copy
    where
        Self: 'a;
    /// The value as this type, if it is one.
    fn of(value: ValueRef<'_>) -> Option<Self::Ref<'_>>;
    /// The value as this type, mutable, if it is one.
    fn of_mut(value: &mut Value) -> Option<&mut Self>;
    /// A read view of the boxed value itself.
    fn view(&self) -> Self::Ref<'_>;
    /// The stored form of `self`.
    fn into_value(self: Box<Self>) -> Value;
}

/// Implement [`Boxed`] for the type each variant of [`Value`] and
/// [`ValueRef`] named `$variant` holds, reads borrowing it as `$ref`.
macro_rules! boxed {
    ($($ty:ty => $variant:ident as $ref:ty, viewed by $view:expr),* $(,)?) => {$(
        impl Boxed for $ty {
            type Ref<'a> = $ref;

            fn of(value: ValueRef<'_>) -> Option<Self::Ref<'_>> {
                match value {
                    ValueRef::$variant(v) => Some(v),
                    _ => None,
                }
            }

            fn of_mut(value: &mut Value) -> Option<&mut Self> {
                match value {
                    Value::$variant(v) => Some(v),
                    _ => None,
                }
            }

            fn view(&self) -> Self::Ref<'_> {
                $view(self)
            }

            fn into_value(self: Box<Self>) -> Value {
                Value::$variant(self)
            }
        }
    )*};
}

boxed!(
    SetValue => Set as &'a SetValue, viewed by std::convert::identity,
    ZSetValue => ZSet as &'a ZSetValue, viewed by std::convert::identity,
    StreamValue => Stream as &'a StreamValue, viewed by std::convert::identity,
    ListValue => List as ListRef<'a>, viewed by ListRef::Boxed,
    HashValue => Hash as HashRef<'a>, viewed by HashRef::Boxed,
);
