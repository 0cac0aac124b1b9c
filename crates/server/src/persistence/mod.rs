//! Keeping the data across restarts: snapshots in Redis's RDB format,
//! written by `SAVE` and `SHUTDOWN SAVE` ([`snapshot`]) and loaded when the
//! server starts ([`loading`]). The formats themselves are `kvik-persist`'s;
//! this module decides where files go, when they are written, and what the
//! server reports about them.

pub mod aof;
pub mod background;
pub mod loading;
pub mod snapshot;

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::keyspace::entry::Meta;
use crate::keyspace::evict::Policy;
use crate::keyspace::{lfu, lru};
use crate::state::ServerState;
use kvik_persist::rdb::file::Access;

/// Load what the server kept when it starts, as Redis does: with
/// `appendonly yes` the append-only file (the snapshot is not read even
/// when there is none yet), else the snapshot; then the append-only file
/// is opened for writing. The error is the text to log before exiting.
pub fn load_at_start(
    state: &std::sync::Arc<ServerState>,
    replay: aof::load::Replay,
    install: loading::InstallFunctions,
) -> Result<(), String> {
    if !aof::wanted(state) {
        return loading::load_snapshot(state, install).map(|_| ());
    }
    aof::load::load(state, replay, install)?;
    aof::open_at_start(state)
}

/// `dir`/`dbfilename`: where the snapshot is written and read.
pub fn snapshot_path(state: &ServerState) -> PathBuf {
    let config = state.config();
    PathBuf::from(config.get("dir")).join(config.get("dbfilename"))
}

/// The directory `path` is in (`.` for a bare file name).
pub fn dir_of(path: &Path) -> PathBuf {
    path.parent().map_or_else(|| Path::new(".").to_path_buf(), Path::to_path_buf)
}

pub use crate::registries::saves::SaveSettings;

/// The settings of a save starting now.
pub fn save_settings(state: &ServerState) -> SaveSettings {
    let config = state.config();
    SaveSettings {
        compress: config.get("rdbcompression") == "yes",
        checksum: config.get("rdbchecksum") == "yes",
        incremental_sync: config.get("rdb-save-incremental-fsync") == "yes",
    }
}

/// Bytes a save writes between two flushes to disk with
/// `rdb-save-incremental-fsync yes` (Redis's 4 MB).
pub const INCREMENTAL_SYNC_BYTES: u64 = 4 * 1024 * 1024;

/// A save's file. With `rdb-save-incremental-fsync` it is flushed to disk
/// every [`INCREMENTAL_SYNC_BYTES`], as Redis does, so that the kernel never
/// gathers a whole snapshot of dirty pages to write at once (a stall for
/// every other writer on the disk) and the final flush stays short.
#[derive(Debug)]
pub struct SaveFile {
    file: File,
    /// Flush every so many bytes, or never before the end.
    every: Option<u64>,
    /// Bytes written since the last flush.
    unsynced: u64,
    /// Flushes made so far.
    syncs: u64,
}

impl SaveFile {
    /// `file`, flushed every `every` bytes when given.
    pub fn new(file: File, every: Option<u64>) -> SaveFile {
        SaveFile { file, every, unsynced: 0, syncs: 0 }
    }

    /// The file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Flushes to disk made while writing.
    pub fn syncs(&self) -> u64 {
        self.syncs
    }
}

impl Write for SaveFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.unsynced += n as u64;
        if self.every.is_some_and(|every| self.unsynced >= every) {
            self.file.sync_data()?;
            self.unsynced = 0;
            self.syncs += 1;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Create a save's temporary file `temp` in `dir` (flushed as `settings`
/// say), with Redis's words when it cannot be.
pub fn create_temp(temp: &Path, dir: &Path, settings: SaveSettings) -> io::Result<SaveFile> {
    let every = settings.incremental_sync.then_some(INCREMENTAL_SYNC_BYTES);
    File::create(temp).map(|f| SaveFile::new(f, every)).map_err(|e| {
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

/// Why writes are refused for a disk error, in Redis's words and order:
/// the last background save failed while save points are set and
/// `stop-writes-on-bgsave-error` is on, or the last write to the
/// append-only file failed (with `everysec` or `no`, where replies do not
/// wait for the file: a write the file cannot take is not acknowledged).
/// Two loads of flags that are true while the disk works, on every command.
#[inline]
pub fn writes_refused(state: &ServerState) -> Option<Vec<u8>> {
    let relaxed = std::sync::atomic::Ordering::Relaxed;
    if state.stats.last_save_ok.load(relaxed) && state.append_only.write_ok.load(relaxed) {
        return None;
    }
    writes_refused_slow(state)
}

#[cold]
fn writes_refused_slow(state: &ServerState) -> Option<Vec<u8>> {
    let rdb_failed = !state.stats.last_save_ok.load(std::sync::atomic::Ordering::Relaxed);
    if rdb_failed && state.config().get("stop-writes-on-bgsave-error") == "yes" && save_points_set(state) {
        return Some(MISCONF.to_vec());
    }
    if state.append_only.enabled() && !state.append_only.write_ok() {
        let error = state.append_only.last_error.lock().unwrap_or_else(|p| p.into_inner()).clone();
        return Some(format!("MISCONF Errors writing to the AOF file: {error}").into_bytes());
    }
    None
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
    if state.append_only.enabled() {
        crate::log!(Notice, "Calling fsync() on the AOF file.");
        if !aof::sync_now(state) {
            crate::log!(Warning, "The AOF file could not be flushed to disk in time");
        }
    }
    if state.append_only.rewrites.in_progress() {
        crate::log!(Warning, "There is a background AOF rewrite in progress. Stopping it!");
        state.saver.abort();
        aof::rewrite::remove_temp_file(&aof::location(state).0);
    } else if state.saver.in_progress() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_save_file_is_flushed_to_disk_every_few_megabytes_when_asked() {
        let dir = std::env::temp_dir();
        let chunk = vec![7u8; 1024 * 1024];
        for (every, syncs) in [(Some(INCREMENTAL_SYNC_BYTES), 2), (None, 0)] {
            let path = dir.join(format!("kvik-savefile-{}-{}.tmp", std::process::id(), syncs));
            let mut f = SaveFile::new(File::create(&path).expect("create"), every);
            for _ in 0..9 {
                f.write_all(&chunk).expect("write");
            }
            assert_eq!(f.syncs(), syncs, "9 MB flushed every 4 MB: twice (or never)");
            assert_eq!(f.file().metadata().expect("metadata").len(), 9 * 1024 * 1024);
            let _ = std::fs::remove_file(&path);
        }
    }
}
