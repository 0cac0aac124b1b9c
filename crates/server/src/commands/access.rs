//! Finding a key's value of one type for a command: the lookups every
//! collection type's commands share, with Redis's choice of which ones
//! count as keyspace hits and misses (reads do, writes do not).

use kvik_protocol::ReplySink;

use super::{Ctx, ReplyTarget, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::keyspace::now_ms;
use crate::types::Boxed;

pub(super) use crate::keyspace::typed::{
    change_packed_or, read_at, read_for_write, remove_if_empty, store, typed_mut, write, write_or_create, Stored,
    WrongType,
};

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
