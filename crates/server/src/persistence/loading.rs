//! Loading `dir`/`dbfilename` when the server starts, before it accepts
//! connections, as Redis does.
//!
//! A missing file is an empty start. A file that cannot be read whole —
//! truncated, corrupt, a later RDB version, a value kvik cannot hold
//! (module data, function libraries), a database number past `databases`,
//! a key twice — stops the start with the reason and where in the file it
//! was found: starting empty would throw the data away at the next save.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use kvik_persist::rdb::file::{load, LoadError};

use crate::keyspace::entry::Entry;
use crate::keyspace::now_ms;
use crate::state::ServerState;

/// What the load found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Keys put in the keyspace.
    pub keys: u64,
    /// Keys dropped because their deadline had passed.
    pub expired: u64,
    /// Keys dropped because their value was empty.
    pub empty: u64,
}

/// Keys handed to an inserting thread at once.
const BATCH: usize = 512;

/// Load the snapshot into `state`'s (empty) keyspace; `Ok(None)` when
/// there is no file. The error is the text to log before exiting.
///
/// The file is read on this thread and its keys inserted on one thread
/// per core, each owning a share of the shards: inserting into a table
/// far larger than the caches is mostly waiting for memory, and the
/// threads wait in parallel. Every shard is written by one thread only,
/// so the locks are never contended.
pub fn load_snapshot(state: &ServerState, install: InstallFunctions) -> Result<Option<Loaded>, String> {
    load_rdb(state, &super::snapshot_path(state), false, install)
}

/// Load the RDB file at `path` into the keyspace as [`load_snapshot`]
/// does; keys past their deadline are kept when `keep_expired` (an
/// append-only file's base, whose commands may still change them, as
/// Redis loads one).
pub fn load_rdb(
    state: &ServerState,
    path: &Path,
    keep_expired: bool,
    install: InstallFunctions,
) -> Result<Option<Loaded>, String> {
    let ks = &state.keyspace;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, ks.shard_count());
    let duplicate = AtomicBool::new(false);
    let loaded = std::thread::scope(|scope| {
        let mut senders = Vec::with_capacity(threads);
        for _ in 0..threads {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(usize, Entry)>>(4);
            senders.push(tx);
            let duplicate = &duplicate;
            scope.spawn(move || {
                for batch in rx {
                    for (db, entry) in batch {
                        let mut shard = ks.lock(ks.shard_of(entry.key()));
                        if shard.db(db).insert(entry).is_some() {
                            duplicate.store(true, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
        let mut pending: Vec<Vec<(usize, Entry)>> = (0..threads).map(|_| Vec::with_capacity(BATCH)).collect();
        let how = Load { merge: false, keep_expired, flush_functions: true };
        let loaded = load_with(state, path, how, install, |db, entry| {
            let to = ks.shard_of(entry.key()) % threads;
            pending[to].push((db, entry));
            if pending[to].len() == BATCH {
                let batch = std::mem::replace(&mut pending[to], Vec::with_capacity(BATCH));
                // A thread that stopped has panicked, which the scope reports.
                let _ = senders[to].send(batch);
            }
            !duplicate.load(Ordering::Relaxed)
        });
        for (to, batch) in pending.into_iter().enumerate() {
            let _ = senders[to].send(batch);
        }
        loaded
    })?;
    if duplicate.load(Ordering::Relaxed) {
        return Err(format!(
            "Internal error in RDB reading {}: key: the same key twice. Terminating server after rdb file reading failure.",
            path.display()
        ));
    }
    Ok(loaded)
}

/// Installs a file's function libraries (their code, in order; `true`:
/// in place of all there are), or says why one does not load. Libraries
/// are compiled by the commands' layer, which passes this in.
pub type InstallFunctions = fn(&ServerState, &[Vec<u8>], bool) -> Result<(), String>;

/// How a file's keys are taken.
#[derive(Debug, Clone, Copy, Default)]
pub struct Load {
    /// A key seen twice replaces the one there (DEBUG RELOAD MERGE)
    /// instead of failing the load.
    pub merge: bool,
    /// Keys past their deadline are loaded too.
    pub keep_expired: bool,
    /// The file's function libraries replace all there are (else only
    /// those of their names).
    pub flush_functions: bool,
}

/// Load the RDB file at `path` through `insert`, which puts one key in
/// database `db` and says whether it was new.
pub fn load_with(
    state: &ServerState,
    path: &Path,
    how: Load,
    install: InstallFunctions,
    insert: impl FnMut(usize, Entry) -> bool,
) -> Result<Option<Loaded>, String> {
    let data = match std::fs::read(path) {
        Ok(data) => data,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("Fatal error loading the DB: {e} ({}). Exiting.", path.display())),
    };
    load_bytes(state, &data, &path.display().to_string(), how, install, insert).map(Some)
}

/// Load the RDB file `data` (named `name` in errors) through `insert`, as
/// [`load_with`] does.
pub fn load_bytes(
    state: &ServerState,
    data: &[u8],
    name: &str,
    how: Load,
    install: InstallFunctions,
    mut insert: impl FnMut(usize, Entry) -> bool,
) -> Result<Loaded, String> {
    let merge = how.merge;
    let started = Instant::now();
    let limits = state.load_limits();
    let lfu_policy = state.limits.maxmemory_policy().lfu();
    let databases = state.keyspace.databases();
    let now = now_ms();
    let mut loaded = Loaded::default();
    let summary = load(data, &limits, |key| {
        if key.db >= databases {
            return Err("database number (the file was written by a server with more databases)");
        }
        if !how.keep_expired && key.deadline_ms.is_some_and(|at| at <= now) {
            loaded.expired += 1;
            return Ok(());
        }
        let meta = super::meta_of(key.access, lfu_policy, now);
        let entry = Entry::new(&key.key, key.value, key.deadline_ms, meta);
        if !insert(key.db, entry) && !merge {
            return Err("key: the same key twice");
        }
        loaded.keys += 1;
        Ok(())
    })
    .map_err(|e: LoadError| {
        format!(
            "Internal error in RDB reading offset {} of {name}: {}. Terminating server after rdb file reading failure.",
            e.offset, e.error
        )
    })?;
    install(state, &summary.functions, how.flush_functions)
        .map_err(|e| format!("{e} ({name}). Terminating server after rdb file reading failure."))?;
    loaded.empty = summary.empty_skipped;
    state.stats.loaded_keys.store(loaded.keys, Ordering::Relaxed);
    state.stats.loaded_expired.store(loaded.expired, Ordering::Relaxed);
    crate::log!(Notice, "Loading RDB produced by version {}", aux(&summary.aux, b"redis-ver").unwrap_or("?".into()));
    crate::log!(Notice, "Done loading RDB, keys loaded: {}, keys expired: {}.", loaded.keys, loaded.expired);
    if loaded.empty > 0 {
        crate::log!(Notice, "Empty keys skipped: {}", loaded.empty);
    }
    crate::log!(Notice, "DB loaded from disk: {:.3} seconds", started.elapsed().as_secs_f64());
    Ok(loaded)
}

fn aux(fields: &[(Vec<u8>, Vec<u8>)], name: &[u8]) -> Option<String> {
    fields.iter().find(|(n, _)| n == name).map(|(_, v)| String::from_utf8_lossy(v).into_owned())
}
