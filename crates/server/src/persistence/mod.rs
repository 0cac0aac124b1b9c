//! Keeping the data across restarts: snapshots in Redis's RDB format,
//! written by `SAVE` and `SHUTDOWN SAVE` ([`snapshot`]) and loaded when the
//! server starts ([`loading`]). The formats themselves are `kvik-persist`'s;
//! this module decides where files go, when they are written, and what the
//! server reports about them.

pub mod background;
pub mod loading;
pub mod snapshot;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

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

/// The directory `path` is in (`.` for a bare file name).
pub fn dir_of(path: &Path) -> PathBuf {
    path.parent().map_or_else(|| Path::new(".").to_path_buf(), Path::to_path_buf)
}

/// `rdbcompression` and `rdbchecksum`, as a save reads them when it starts.
pub fn save_settings(state: &ServerState) -> (bool, bool) {
    let config = state.config();
    (config.get("rdbcompression") == "yes", config.get("rdbchecksum") == "yes")
}

/// Create a save's temporary file `temp` in `dir`, with Redis's words when
/// it cannot be.
pub fn create_temp(temp: &Path, dir: &Path) -> io::Result<File> {
    File::create(temp).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "Failed opening the temp RDB file {} (in server root dir {}) for saving: {e}",
                temp.display(),
                dir.display()
            ),
        )
    })
}

/// Put a written snapshot under its name: flush `file` (the temporary
/// `temp`) to disk, rename it to `path` and flush `dir`, so that the name
/// points at the old file or the new one whole, whenever the machine
/// stops. Returns the file's size.
pub fn install(file: &File, temp: &Path, path: &Path, dir: &Path) -> io::Result<u64> {
    file.sync_all()?;
    let bytes = file.metadata()?.len();
    std::fs::rename(temp, path)?;
    // The rename is durable once the directory is.
    File::open(dir)?.sync_all()?;
    Ok(bytes)
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

/// Redis's refusal of a write while `stop-writes-on-bgsave-error` holds.
pub const MISCONF: &[u8] = b"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

/// Whether writes are refused because the last background save failed,
/// save points are set and `stop-writes-on-bgsave-error` is on. One load
/// of a flag that is true while saves work, on every command.
#[inline]
pub fn writes_refused(state: &ServerState) -> bool {
    !state.stats.last_save_ok.load(std::sync::atomic::Ordering::Relaxed) && writes_refused_slow(state)
}

#[cold]
fn writes_refused_slow(state: &ServerState) -> bool {
    let stop = state.config().get("stop-writes-on-bgsave-error") == "yes";
    stop && save_points_set(state)
}

/// Whether the `save` setting has save points (Redis's `saveparamslen > 0`).
pub fn save_points_set(state: &ServerState) -> bool {
    !background::save_points(state.config().get("save")).is_empty()
}

/// What a stop asks of the snapshot (`SHUTDOWN`'s words, or the
/// `shutdown-on-sigterm` / `shutdown-on-sigint` setting's).
#[derive(Debug, Clone, Copy, Default)]
pub struct StopFlags {
    /// `SAVE`: save even without save points.
    pub save: bool,
    /// `NOSAVE`: do not save even with save points.
    pub nosave: bool,
    /// `FORCE`: stop even if the save fails.
    pub force: bool,
}

impl StopFlags {
    /// The flags a `shutdown-on-sig*` setting names (`default`: none).
    pub fn from_setting(setting: &str) -> StopFlags {
        let mut flags = StopFlags::default();
        for word in setting.split_ascii_whitespace() {
            match word {
                "save" => flags.save = true,
                "nosave" => flags.nosave = true,
                "force" => flags.force = true,
                _ => {}
            }
        }
        flags
    }
}

/// Get ready to stop, as Redis's `prepareForShutdown`: a background save
/// in progress is stopped and its file removed; the snapshot is written
/// when save points are set (unless `NOSAVE`) or `SAVE` asks. False when
/// that save failed and `FORCE` was not given: the server must keep
/// running, and the log says why.
pub fn prepare_for_stop(state: &ServerState, flags: StopFlags) -> bool {
    if state.saver.in_progress() {
        crate::log!(Warning, "There is a background save in progress. Stopping it!");
        state.saver.abort();
        background::remove_temp_file(state);
    }
    if (save_points_set(state) && !flags.nosave) || flags.save {
        crate::log!(Notice, "Saving the final RDB snapshot before exiting.");
        if snapshot::save(state).is_err() {
            if !flags.force {
                crate::log!(Warning, "Error trying to save the DB, can't exit.");
                return false;
            }
            crate::log!(Warning, "Error trying to save the DB. Exit anyway.");
        }
    }
    true
}
