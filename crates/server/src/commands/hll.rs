//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE.
//!
//! A HyperLogLog is a string in Redis's format (see [`crate::types::hll`]),
//! so these commands read and write string values; anything else under the
//! key, or a string that is not a HyperLogLog, is refused. A command that
//! changes a counter first makes its string `raw`, as Redis unshares it, so
//! `OBJECT ENCODING` agrees too.

use super::{Ctx, ReplyTarget, WRONGTYPE};
use crate::effects::changes::EventClass;
use crate::keyspace::{now_ms, Db};
use crate::types::hll::{self, REGISTERS};
use crate::types::string::{StrRef, StrValue};
use crate::types::{Value, ValueRef};

handlers! {
    PFADD(c) => pfadd(c),
    PFCOUNT(c) => pfcount(c),
    PFMERGE(c) => pfmerge(c),
}

/// Why a key cannot be used as a HyperLogLog.
enum Refusal {
    /// Not a string at all.
    WrongType,
    /// A string, but not a HyperLogLog.
    NotHll,
    /// A HyperLogLog whose sparse registers do not add up.
    Corrupt,
}

impl Refusal {
    fn message(&self) -> &'static [u8] {
        match self {
            Refusal::WrongType => WRONGTYPE,
            Refusal::NotHll => hll::NOT_HLL,
            Refusal::Corrupt => hll::CORRUPT,
        }
    }
}

/// The bytes of the HyperLogLog a stored value holds; an integer is never one.
fn hll_bytes(value: ValueRef<'_>) -> Result<&[u8], Refusal> {
    match value {
        ValueRef::Str(StrRef::Bytes(b) | StrRef::Raw(b)) if hll::is_valid(b) => Ok(b),
        ValueRef::Str(_) => Err(Refusal::NotHll),
        _ => Err(Refusal::WrongType),
    }
}

/// The bytes of the HyperLogLog at `key` for reading (counted as a keyspace
/// hit or miss): `Ok(None)` when missing.
fn hll_at<'d>(db: &'d mut Db, key: &[u8], now: i64) -> Result<Option<&'d [u8]>, Refusal> {
    db.get(key, now).map(|e| hll_bytes(e.value())).transpose()
}

/// The HyperLogLog at `key` for changing, created empty when missing;
/// the flag says whether it was created. Its string is made `raw` (boxed)
/// only once it is known to be a HyperLogLog.
fn hll_for_write<'d>(db: &'d mut Db, key: &[u8], now: i64) -> Result<(&'d mut Vec<u8>, bool), Refusal> {
    let mut created = false;
    let make = || {
        created = true;
        Value::Str(StrValue::Raw(hll::new_sparse()))
    };
    let entry = db.get_mut_or_insert(key, now, make).ok_or(Refusal::WrongType)?;
    hll_bytes(entry.value())?;
    match entry.value_mut() {
        Value::Str(s) => Ok((s.make_raw(), created)),
        _ => Err(Refusal::WrongType),
    }
}

fn hll_sparse_max_bytes<T: ReplyTarget>(c: &Ctx<'_, T>) -> usize {
    c.state.config().usize("hll-sparse-max-bytes")
}

/// `PFADD key [element ...]`: 1 when the counter changed (or was created).
fn pfadd<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let key = c.arg(1);
    let max_bytes = hll_sparse_max_bytes(c);
    let db = c.session.db;
    let state = c.state;
    let mut shard = state.keyspace.lock_key(key);
    let d = shard.db(db);
    // Counted as Redis counts: the key made, and each register raised.
    let result = hll_for_write(d, key, now_ms()).and_then(|(bytes, created)| {
        let mut changes = u64::from(created);
        for i in 2..c.argc() {
            changes += u64::from(hll::add(bytes, c.arg(i), max_bytes).map_err(|_| Refusal::Corrupt)?);
        }
        if changes > 0 {
            hll::invalidate_cache(bytes);
        }
        Ok(changes)
    });
    if let Ok(changes @ 1..) = result {
        c.notify_counted(EventClass::String, "pfadd", key, changes);
    }
    drop(shard);
    match result {
        Ok(changes) => c.reply(|s| s.integer(i64::from(changes > 0))),
        Err(r) => c.error(r.message()),
    }
}

/// `PFCOUNT key [key ...]`: the estimate for one counter (cached in the
/// string, as Redis caches it), or for the union of several.
fn pfcount<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let result = if c.argc() == 2 { count_one(c) } else { count_union(c) };
    match result {
        Ok(n) => c.reply(|s| s.integer(i64::try_from(n).unwrap_or(i64::MAX))),
        Err(r) => c.error(r.message()),
    }
}

fn count_one<T: ReplyTarget>(c: &mut Ctx<'_, T>) -> Result<u64, Refusal> {
    let key = c.arg(1);
    let now = now_ms();
    let db = c.session.db;
    let mut shard = c.state.keyspace.lock_key(key);
    let d = shard.db(db);
    if hll_at(d, key, now)?.is_none() {
        return Ok(0);
    }
    let (bytes, _) = hll_for_write(d, key, now)?;
    if let Some(n) = hll::cached_count(bytes) {
        return Ok(n);
    }
    let n = hll::count(bytes).map_err(|_| Refusal::Corrupt)?;
    hll::store_count(bytes, n);
    // Storing the count rewrites the value: Redis counts it as a change
    // (a watch on the key breaks, tracking clients are told), without an event.
    crate::effects::changes::key_changed(c.state, db, key, c.session.id);
    c.count_changes(1);
    // The cache is part of the value; the journal redoes the PFCOUNT.
    c.note_change();
    Ok(n)
}

fn count_union<T: ReplyTarget>(c: &mut Ctx<'_, T>) -> Result<u64, Refusal> {
    let keys: Vec<&[u8]> = (1..c.argc()).map(|i| c.arg(i)).collect();
    let mut max = [0u8; REGISTERS];
    let db = c.session.db;
    let now = now_ms();
    let mut lock = c.state.keyspace.lock_keys(db, keys.iter().copied());
    for key in &keys {
        let d = lock.shard_for(&c.state.keyspace, key).db(db);
        if let Some(bytes) = hll_at(d, key, now)? {
            hll::merge_into(&mut max, bytes).map_err(|_| Refusal::Corrupt)?;
        }
    }
    Ok(hll::count_registers(&max))
}

/// `PFMERGE destkey [sourcekey ...]`: the destination becomes the union of
/// itself and the sources; dense when any input was dense.
fn pfmerge<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let keys: Vec<&[u8]> = (1..c.argc()).map(|i| c.arg(i)).collect();
    let max_bytes = hll_sparse_max_bytes(c);
    let db = c.session.db;
    let now = now_ms();
    let state = c.state;
    let mut lock = state.keyspace.lock_keys(db, keys.iter().copied());
    let mut max = [0u8; REGISTERS];
    let mut any_dense = false;
    let mut result = Ok(());
    for key in &keys {
        let d = lock.shard_for(&state.keyspace, key).db(db);
        match hll_at(d, key, now) {
            Ok(Some(bytes)) => {
                any_dense |= bytes.len() == hll::DENSE_SIZE && bytes[4] == 0;
                if hll::merge_into(&mut max, bytes).is_err() {
                    result = Err(Refusal::Corrupt);
                    break;
                }
            }
            Ok(None) => {}
            Err(r) => {
                result = Err(r);
                break;
            }
        }
    }
    let result = result.and_then(|()| {
        let dest = keys[0];
        let d = lock.shard_for(&state.keyspace, dest).db(db);
        let (bytes, _) = hll_for_write(d, dest, now)?;
        if any_dense {
            hll::to_dense(bytes).map_err(|_| Refusal::Corrupt)?;
        }
        for (i, &v) in max.iter().enumerate() {
            if v != 0 {
                hll::set_register(bytes, i, v, max_bytes).map_err(|_| Refusal::Corrupt)?;
            }
        }
        hll::invalidate_cache(bytes);
        Ok(())
    });
    if result.is_ok() {
        // Announced even when nothing changed, as Redis does.
        c.notify(EventClass::String, "pfadd", keys[0]);
    }
    drop(lock);
    match result {
        Ok(()) => c.ok(),
        Err(r) => c.error(r.message()),
    }
}
