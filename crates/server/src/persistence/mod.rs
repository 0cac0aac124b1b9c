//! Keeping the data across restarts: snapshots in Redis's RDB format,
//! written by `SAVE` and `SHUTDOWN SAVE` ([`snapshot`]) and loaded when the
//! server starts ([`loading`]). The formats themselves are `kvik-persist`'s;
//! this module decides where files go, when they are written, and what the
//! server reports about them.

pub mod loading;
pub mod snapshot;

use std::path::PathBuf;

use crate::keyspace::entry::Meta;
use crate::keyspace::evict::Policy;
use crate::keyspace::{lfu, lru};
use crate::state::ServerState;
use kvik_persist::rdb::file::Access;

/// `dir`/`dbfilename`: where the snapshot is written and read.
pub fn snapshot_path(state: &ServerState) -> PathBuf {
    let config = state.config();
    PathBuf::from(config.get("dir")).join(config.get("dbfilename"))
}

/// What a file records of a key's accesses under `policy`: the LRU idle
/// time for an LRU policy, the LFU counter for an LFU one, as Redis writes.
pub fn access_of(meta: Meta, policy: Policy, tuning: &lfu::Tuning, now_ms: i64) -> Access {
    match policy {
        Policy::AllkeysLru | Policy::VolatileLru => Access::IdleSeconds(u64::from(meta.idle_seconds(now_ms))),
        Policy::AllkeysLfu | Policy::VolatileLfu => Access::Frequency(lfu::decayed(meta.clock, now_ms, tuning)),
        _ => Access::None,
    }
}

/// The access record of a loaded key, as the policy in force keeps it
/// (the other kind of record is ignored, as in Redis).
pub fn meta_of(access: Access, lfu_policy: bool, now_ms: i64) -> Meta {
    let mut meta = Meta::new(now_ms, lfu_policy);
    match access {
        Access::IdleSeconds(s) if !lfu_policy => meta.clock = lru::clock_idle_for(s, now_ms),
        Access::Frequency(f) if lfu_policy => meta.clock = lfu::clock(lfu::minutes(now_ms), f),
        _ => {}
    }
    meta
}
