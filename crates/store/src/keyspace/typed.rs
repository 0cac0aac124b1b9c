//! A key's value of one type, read and changed in whichever encoding it
//! has: the lookups every collection type's commands share, with Redis's
//! choice of which ones count as keyspace hits and misses (reads do, writes
//! do not), and the changes that try the packed form first
//! ([`change_packed_or`], [`push_list`], [`set_hash_fields`]). The command layer calls these
//! rather than driving entries and encodings itself.

use super::{Db, Entry};
use crate::types::hash::{self, HashLimits, HashValue};
use crate::types::list::{push_packed, ListValue};
use crate::types::packed::Kind;
use crate::types::Boxed;

/// The key holds a value of another type.
pub struct WrongType;

/// The value of type `V` at `key` for a read command (counted as a keyspace
/// hit or miss): `Ok(None)` when missing.
pub fn read_at<'d, V: Boxed>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<V::Ref<'d>>, WrongType> {
    match db.get(key, now) {
        None => Ok(None),
        Some(entry) => V::of(entry.value()).map(Some).ok_or(WrongType),
    }
}

/// The value of type `V` at `key` for a write command that only reads it
/// (not counted).
pub fn read_for_write<'d, V: Boxed>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<V::Ref<'d>>, WrongType> {
    match db.lookup_write(key, now) {
        None => Ok(None),
        Some(entry) => V::of(entry.value()).map(Some).ok_or(WrongType),
    }
}

/// The value of type `V` at `key`, to change it: `Ok(None)` when missing.
pub fn write<'d, V: Boxed>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<&'d mut V>, WrongType> {
    match db.get_mut(key, now) {
        None => Ok(None),
        Some(entry) => typed_mut(entry).map(Some),
    }
}

/// The value of type `V` at `key`, to change it, created by `make` when the
/// key is missing. The caller must leave something in a value it created.
pub fn write_or_create<'d, V: Boxed>(
    db: &'d mut Db,
    key: &[u8],
    now: i64,
    make: impl FnOnce() -> V,
) -> Result<&'d mut V, WrongType> {
    let entry = db.get_mut_or_insert(key, now, || Box::new(make()).into_value()).ok_or(WrongType)?;
    typed_mut(entry)
}

/// [`write`], or with `make` [`write_or_create`], that first offers the
/// entry to `packed`, which may change a packed value without boxing it
/// (see [`Entry::rewrite_packed`]); when it declines, `boxed` gets the value
/// as `V` as [`write`] gives it. With the result comes whether `is_empty`
/// found the value `boxed` changed empty (the caller then deletes the key).
/// One probe of the table for an existing key, its memory charge settled
/// at once.
#[inline(always)]
pub fn change_packed_or<V: Boxed, R>(
    db: &mut Db,
    key: &[u8],
    now: i64,
    make: Option<impl FnOnce() -> V>,
    packed: impl FnOnce(&mut Entry) -> Option<R>,
    boxed: impl FnOnce(Option<&mut V>) -> R,
    is_empty: impl FnOnce(V::Ref<'_>) -> bool,
) -> Result<(R, bool), WrongType> {
    let change = |entry: Option<&mut Entry>| {
        let Some(entry) = entry else { return Ok((boxed(None), false)) };
        if let Some(result) = packed(entry) {
            return Ok((result, false));
        }
        let v = typed_mut::<V>(entry)?;
        let result = boxed(Some(&mut *v));
        Ok((result, is_empty(v.view())))
    };
    match make {
        Some(make) => {
            db.change_or_insert(key, now, || Box::new(make()).into_value(), |e| change(Some(e))).ok_or(WrongType)?
        }
        None => db.change(key, now, change),
    }
}

/// The entry's value as `V`. The type is checked on the borrowed view
/// first: [`Entry::value_mut`] stores a packed string
/// boxed, which would change its encoding for a command that then fails.
pub fn typed_mut<V: Boxed>(entry: &mut Entry) -> Result<&mut V, WrongType> {
    if V::of(entry.value()).is_none() {
        return Err(WrongType);
    }
    V::of_mut(entry.value_mut()).ok_or(WrongType)
}

/// Delete `key` when it holds a `V` that `is_empty` finds empty: an empty
/// collection is no key. Neither counted nor marked accessed. True when the
/// key was deleted (the command then announces `del` after its own event).
pub fn remove_if_empty<V: Boxed>(db: &mut Db, key: &[u8], now: i64, is_empty: impl FnOnce(V::Ref<'_>) -> bool) -> bool {
    if db.inspect(key, now).and_then(|e| V::of(e.value())).is_some_and(is_empty) {
        return db.remove(key).is_some();
    }
    false
}

/// What a `...STORE` command did to its destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// The result was stored.
    Written,
    /// The result was empty and an existing key was deleted.
    Deleted,
    /// The result was empty and there was no key.
    Nothing,
}

/// Replace whatever `key` holds with `value` as a new key, or delete the key
/// when `value` is empty (the `...STORE` commands). As in Redis, an empty
/// result deletes the key without looking at its deadline, so a key that
/// had expired is announced as deleted, not as expired.
pub fn store<V: Boxed>(db: &mut Db, key: &[u8], value: V, empty: bool) -> Stored {
    if empty {
        return match db.remove(key) {
            Some(_) => Stored::Deleted,
            None => Stored::Nothing,
        };
    }
    db.replace(key, Box::new(value).into_value());
    Stored::Written
}

/// `LPUSH`/`RPUSH` (`front` for the head) of `elements` onto the list at
/// `key`, created when missing if `create` (the X forms do not create):
/// the list's length after, 0 for a missing key not created. A packed list
/// takes the elements in place while they fit its encoding.
#[inline(always)]
pub fn push_list(
    db: &mut Db,
    key: &[u8],
    now: i64,
    front: bool,
    elements: &[&[u8]],
    create: bool,
) -> Result<usize, WrongType> {
    let make = create.then_some(ListValue::new);
    change_packed_or(
        db,
        key,
        now,
        make,
        |entry| entry.extend_packed(Kind::List, |bytes, at| push_packed(bytes, at, front, elements)),
        |found| {
            found.map_or(0, |l| {
                for e in elements {
                    l.push(front, e);
                }
                l.len()
            })
        },
        // Pushes never leave a list empty.
        |_| false,
    )
    .map(|(len, _)| len)
}

/// `HSET` of `pairs` on the hash at `key`, created when missing: how many
/// fields are new. A packed hash takes them in place, or is rewritten,
/// while it stays within `limits`; otherwise the hash is boxed.
#[inline(always)]
pub fn set_hash_fields(
    db: &mut Db,
    key: &[u8],
    now: i64,
    pairs: &[(&[u8], &[u8])],
    limits: HashLimits,
) -> Result<usize, WrongType> {
    change_packed_or(
        db,
        key,
        now,
        Some(HashValue::new),
        |entry| set_packed_hash(entry, pairs, limits),
        |found: Option<&mut HashValue>| found.map_or(0, |h| pairs.iter().filter(|(f, v)| h.set(f, v, limits)).count()),
        // Setting fields never leaves a hash empty.
        |_| false,
    )
    .map(|(added, _)| added)
}

/// `HSET`'s pairs set on a packed hash without boxing it: in place when
/// every value changed keeps its length (new fields appended), else
/// rewritten; `None` when the hash is
/// not packed or would not stay packed. How many fields are new.
fn set_packed_hash(entry: &mut Entry, pairs: &[(&[u8], &[u8])], limits: HashLimits) -> Option<usize> {
    let mut plan = None;
    let in_place = entry.extend_packed(Kind::Hash, |bytes, at| {
        let found = plan.insert(hash::plan_set(&bytes[at..], pairs, limits)?);
        hash::set_in_place(bytes, at, pairs, limits, found)
    });
    if in_place.is_some() {
        return in_place;
    }
    let plan = plan?;
    entry.rewrite_packed(Kind::Hash, |h, out| hash::set_packed(h, pairs, limits, &plan, out))
}
