//! The RDB file loader: any input is refused or loads keys that, written
//! into a file again, load back the same.
//!
//! The last 8 bytes of the input are read as a checksum of 0, which the
//! loader takes as "not checked" (as Redis does for `rdbchecksum no`
//! files), so that the fuzzer's changes reach the decoder instead of
//! failing the checksum.

use kvik_persist::rdb::file::{load, Access, FileWriter, SaveInfo};
use kvik_persist::rdb::value::LoadLimits;
use kvik_store::types::Value;

/// One loaded key, owned.
type Key = (usize, Vec<u8>, Value, Option<i64>, Access);

fn keys_of(data: &[u8]) -> Option<Vec<Key>> {
    let mut keys = Vec::new();
    load(data, &LoadLimits::default(), |k| {
        keys.push((k.db, k.key.into_owned(), k.value, k.deadline_ms, k.access));
        Ok(())
    })
    .ok()?;
    Some(keys)
}

/// Panics when a property is broken for `data`.
pub fn check(data: &[u8]) {
    let mut data = data.to_vec();
    let tail = data.len().saturating_sub(8);
    data[tail..].fill(0);
    let Some(keys) = keys_of(&data) else { return };
    let info = SaveInfo { redis_version: "7.0.15".into(), ctime_s: 0, used_mem: 0, aof_base: false };
    let mut w = FileWriter::start(Vec::new(), &info, true, true).expect("writing to memory");
    let mut db = None;
    for (key_db, key, value, deadline, access) in &keys {
        if db != Some(*key_db) {
            w.select_db(*key_db, 0, 0).expect("writing to memory");
            db = Some(*key_db);
        }
        w.entry(key, value.view(), *deadline, *access).expect("writing to memory");
    }
    let again = w.finish().expect("writing to memory");
    let back = keys_of(&again).expect("a file kvik wrote loads");
    assert_eq!(back.len(), keys.len());
    for (a, b) in back.iter().zip(&keys) {
        assert!(
            a.0 == b.0 && a.1 == b.1 && a.2 == b.2 && a.3 == b.3 && a.4 == b.4,
            "a loaded key writes and loads the same"
        );
    }
}
