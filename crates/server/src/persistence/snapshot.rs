//! Writing the keyspace to an RDB file.
//!
//! `SAVE` is Redis's blocking save: every shard is locked for the whole
//! write, so the file is one point in time and no command runs meanwhile.
//! The file is written next to its final name as `temp-<pid>.rdb`, flushed
//! to disk, renamed over `dbfilename`, and the directory flushed, so that a
//! crash at any moment leaves either the old file or the new one whole.

use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kvik_persist::rdb::file::{FileWriter, SaveInfo};

use super::{SaveFile, SaveSettings};
use crate::keyspace::now_ms;
use crate::state::ServerState;

/// What a save wrote.
#[derive(Debug, Clone, Copy)]
pub struct Saved {
    /// Keys written.
    pub keys: u64,
    /// The file's size.
    pub bytes: u64,
    /// How long it took.
    pub took: Duration,
}

/// Write the whole keyspace to `dir`/`dbfilename`, holding every shard.
/// A save that worked moves `LASTSAVE` and the change counter's start, and
/// sets `rdb_last_bgsave_status` to ok, as Redis's `rdbSave` does (the
/// `SAVE` command counts itself in `rdb_saves`; a save on `FLUSHALL`, on
/// shutdown or by `DEBUG RELOAD` is not counted, as in Redis).
pub fn save(state: &ServerState) -> io::Result<Saved> {
    let started = Instant::now();
    let result = write_file(state, started);
    match &result {
        Ok(saved) => {
            crate::log!(Notice, "DB saved on disk");
            let stats = &state.stats;
            stats.lastsave.store(unix_seconds(), Ordering::Relaxed);
            stats.last_save_ok.store(true, Ordering::Relaxed);
            crate::log!(
                Verbose,
                "Saved {} keys, {} bytes in {:.3} seconds",
                saved.keys,
                saved.bytes,
                saved.took.as_secs_f64()
            );
        }
        // As in Redis, a failed SAVE leaves `rdb_last_bgsave_status` alone:
        // that field tells of background saves.
        Err(e) => crate::log!(Warning, "Error saving DB on disk: {e}"),
    }
    result
}

/// Unix time now, in seconds.
pub fn unix_seconds() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn write_file(state: &ServerState, started: Instant) -> io::Result<Saved> {
    let path = super::snapshot_path(state);
    let (saved, dirty) = write_rdb(state, &path, false, started)?;
    // The change counter now counts from this file, once it is the one
    // under the name.
    state.stats.dirty_at_save.store(dirty, Ordering::Relaxed);
    Ok(saved)
}

/// Write the whole keyspace to `path` (through a temporary file beside
/// it), as an append-only file's base when `aof_base`: what was written,
/// and the change counter at the moment it was taken.
pub fn write_rdb(
    state: &ServerState,
    path: &std::path::Path,
    aof_base: bool,
    started: Instant,
) -> io::Result<(Saved, u64)> {
    let dir = super::dir_of(path);
    let temp = dir.join(format!("temp-{}.rdb", std::process::id()));
    let settings = super::save_settings(state);
    let file = super::create_temp(&temp, &dir, settings)?;
    let written = write_keyspace(state, file, settings, aof_base).and_then(|(file, keys, dirty)| {
        let bytes = super::install(file.file(), &temp, path, &dir)?;
        Ok((Saved { keys, bytes, took: started.elapsed() }, dirty))
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Every live key of every database, under all the shard locks at once:
/// the file, the keys written, and the change counter at that moment.
fn write_keyspace(
    state: &ServerState,
    file: SaveFile,
    settings: SaveSettings,
    aof_base: bool,
) -> io::Result<(SaveFile, u64, u64)> {
    let ks = &state.keyspace;
    let info = SaveInfo {
        redis_version: crate::REDIS_VERSION.to_string(),
        ctime_s: unix_seconds(),
        used_mem: ks.used_memory() as u64,
        aof_base,
    };
    let mut w = FileWriter::start(file, &info, settings.compress, settings.checksum)?;
    let policy = state.limits.maxmemory_policy();
    let mut all = ks.lock_all();
    for code in state.functions.codes_at(|| {}) {
        w.function(&code)?;
    }
    let mut shards = all.shards();
    let now = now_ms();
    let mut keys = 0u64;
    for db in 0..ks.databases() {
        let (size, expires) =
            shards.iter_mut().fold((0, 0), |(n, e), shard| (n + shard.db(db).len(), e + shard.db(db).expiring()));
        if size == 0 {
            continue;
        }
        w.select_db(db, size, expires)?;
        for shard in shards.iter_mut() {
            for entry in shard.db(db).entries() {
                if entry.is_expired(now) {
                    continue;
                }
                let access = super::access_of(entry.meta(), policy, ks.lfu_tuning(), now);
                w.entry(entry.key(), entry.value(), entry.deadline(), access)?;
                keys += 1;
            }
        }
    }
    let dirty = state.stats.dirty_total();
    drop(shards);
    drop(all);
    Ok((w.finish()?, keys, dirty))
}
