//! Finding a key's value of one type for a command: the lookups every
//! collection type's commands share, with Redis's choice of which ones
//! count as keyspace hits and misses (reads do, writes do not).

use kvik_protocol::ReplySink;

use super::{Ctx, ReplyTarget, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::keyspace::{now_ms, Db, Entry};
use crate::types::Boxed;

/// The key holds a value of another type.
pub(super) struct WrongType;

/// The value of type `V` at `key` for a read command (counted as a keyspace
/// hit or miss): `Ok(None)` when missing.
pub(super) fn read_at<'d, V: Boxed>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<V::Ref<'d>>, WrongType> {
    match db.get(key, now) {
        None => Ok(None),
        Some(entry) => V::of(entry.value()).map(Some).ok_or(WrongType),
    }
}

/// The value of type `V` at `key` for a write command that only reads it
/// (not counted).
pub(super) fn read_for_write<'d, V: Boxed>(
    db: &'d mut Db,
    key: &[u8],
    now: i64,
) -> Result<Option<V::Ref<'d>>, WrongType> {
    match db.lookup_write(key, now) {
        None => Ok(None),
        Some(entry) => V::of(entry.value()).map(Some).ok_or(WrongType),
    }
}

/// The value of type `V` at `key`, to change it: `Ok(None)` when missing.
pub(super) fn write<'d, V: Boxed>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<&'d mut V>, WrongType> {
    match db.get_mut(key, now) {
        None => Ok(None),
        Some(entry) => typed_mut(entry).map(Some),
    }
}

/// The value of type `V` at `key`, to change it, created by `make` when the
/// key is missing. The caller must leave something in a value it created.
pub(super) fn write_or_create<'d, V: Boxed>(
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
pub(super) fn change_packed_or<V: Boxed, R>(
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
/// first: [`crate::keyspace::Entry::value_mut`] stores a packed string
/// boxed, which would change its encoding for a command that then fails.
fn typed_mut<V: Boxed>(entry: &mut Entry) -> Result<&mut V, WrongType> {
    if V::of(entry.value()).is_none() {
        return Err(WrongType);
    }
    V::of_mut(entry.value_mut()).ok_or(WrongType)
}

/// Delete `key` when it holds a `V` that `is_empty` finds empty: an empty
/// collection is no key. Neither counted nor marked accessed. True when the
/// key was deleted (the command then announces `del` after its own event).
pub(super) fn remove_if_empty<V: Boxed>(
    db: &mut Db,
    key: &[u8],
    now: i64,
    is_empty: impl FnOnce(V::Ref<'_>) -> bool,
) -> bool {
    if db.inspect(key, now).and_then(|e| V::of(e.value())).is_some_and(is_empty) {
        return db.remove(key).is_some();
    }
    false
}

/// What a `...STORE` command did to its destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stored {
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
pub(super) fn store<V: Boxed>(db: &mut Db, key: &[u8], value: V, empty: bool) -> Stored {
    if empty {
        return match db.remove(key) {
            Some(_) => Stored::Deleted,
            None => Stored::Nothing,
        };
    }
    db.replace(key, Box::new(value).into_value());
    Stored::Written
}

/// Announce what a `...STORE` did: `event` (of `class`) when it wrote the
/// result, `del` when an empty result deleted the key. A written result
/// counts as one change.
pub(super) fn notify_store<T: ReplyTarget>(
    c: &mut Ctx<'_, T>,
    stored: Stored,
    class: EventClass,
    event: &str,
    key: &[u8],
) {
    notify_store_counted(c, stored, class, event, key, 1);
}

/// [`notify_store`] for the commands whose written result Redis counts as
/// `changes` (`SORT ... STORE` and `GEOSEARCHSTORE` count its elements).
pub(super) fn notify_store_counted<T: ReplyTarget>(
    c: &mut Ctx<'_, T>,
    stored: Stored,
    class: EventClass,
    event: &str,
    key: &[u8],
    changes: u64,
) {
    match stored {
        Stored::Written => c.notify_counted(class, event, key, changes),
        Stored::Deleted => c.notify(EventClass::Generic, "del", key),
        Stored::Nothing => {}
    }
}

/// Run `read` on the `V` at `key` (`None` when missing) under its shard
/// lock, counting the lookup as a read.
pub(super) fn read_with<T: ReplyTarget, V: Boxed, R>(
    c: &Ctx<'_, T>,
    key: &[u8],
    read: impl FnOnce(Option<V::Ref<'_>>) -> R,
) -> Result<R, WrongType> {
    let mut shard = c.state.keyspace.lock_key(key);
    read_at::<V>(shard.db(c.session.db), key, now_ms()).map(read)
}

/// For a reply of `elements` picks from the `V` at `key` (a negative
/// count of `SRANDMEMBER`, `HRANDFIELD`, `ZRANDMEMBER`): when the reply
/// could not be sent ([`crate::housekeeping::reply_budget`]) and the key holds a `V`
/// (so the reply would not be empty), answer the error and say so. A
/// missing key or one of another type goes on to its usual reply.
pub(super) fn refused_as_too_large<T: ReplyTarget, V: Boxed>(c: &mut Ctx<'_, T>, key: &[u8], elements: u64) -> bool {
    let Err(refusal) = crate::housekeeping::reply_budget::check(
        c.state,
        elements,
        crate::housekeeping::reply_budget::MIN_ELEMENT_BYTES,
    ) else {
        return false;
    };
    if !matches!(read_with::<_, V, _>(c, key, |v| v.is_some()), Ok(true)) {
        return false;
    }
    c.error(refusal.as_bytes());
    true
}

/// Reply straight from the `V` at `key` (`None` when missing) while its
/// shard is locked, so a large reply copies each element once, into the
/// reply; counts the lookup as a read.
pub(super) fn reply_from<T: ReplyTarget, V: Boxed>(
    c: &mut Ctx<'_, T>,
    key: &[u8],
    write: impl FnOnce(&mut dyn ReplySink, Option<V::Ref<'_>>),
) {
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    match read_at::<V>(shard.db(c.session.db), key, now_ms()) {
        Ok(v) => c.reply(|s| write(s, v)),
        Err(WrongType) => {
            drop(shard);
            c.error(WRONGTYPE);
        }
    }
}

/// Run `change` on the `V` at `key` (`None` when missing) under its shard
/// lock, deleting the key if `is_empty` finds the value left empty.
///
/// `event` names the change's keyspace event (of `class`) from its result,
/// with the changes it counts, `None` when nothing changed; a deleted key is
/// announced as `del` after it.
pub(super) fn change_with<T: ReplyTarget, V: Boxed, R>(
    c: &mut Ctx<'_, T>,
    key: &[u8],
    class: EventClass,
    is_empty: impl FnOnce(V::Ref<'_>) -> bool,
    change: impl FnOnce(Option<&mut V>) -> R,
    event: impl FnOnce(&R) -> Option<(&'static str, u64)>,
) -> Result<R, WrongType> {
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(c.session.db);
    let now = now_ms();
    let (result, emptied) = d.change(key, now, |entry| match entry {
        None => Ok((change(None), false)),
        Some(entry) => {
            let v = typed_mut::<V>(entry)?;
            let result = change(Some(&mut *v));
            Ok((result, is_empty(v.view())))
        }
    })?;
    // An empty collection is no key: deleted without another lookup when
    // the change left something.
    let deleted = emptied && d.remove(key).is_some();
    if let Some((name, changes)) = event(&result) {
        c.notify_counted(class, name, key, changes);
    }
    if deleted {
        c.notify_emptied(key);
    }
    drop(shard);
    Ok(result)
}

/// Reply with the outcome of a command whose only possible error is WRONGTYPE.
pub(super) fn reply_or_wrongtype<T: ReplyTarget, R>(
    c: &mut Ctx<'_, T>,
    result: Result<R, WrongType>,
    write: impl FnOnce(&mut dyn ReplySink, R),
) {
    match result {
        Ok(r) => c.reply(|s| write(s, r)),
        Err(WrongType) => c.error(WRONGTYPE),
    }
}

/// A length or count as a reply integer.
pub(super) fn count_reply(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
