//! The append-only file, in Redis 7's layout: a directory
//! (`appenddirname`) holding a manifest, a base file (the keyspace when
//! the log began, as an RDB file) and incremental files of the commands
//! that followed.
//!
//! - [`load`]: replaying the files at start, before anything else (with
//!   `appendonly yes` the append-only file wins over `dbfilename`, as in
//!   Redis).
//! - [`writer`]: the thread that takes the journal's records
//!   ([`crate::registries::journal`]), puts them in order, writes them to the
//!   last incremental file and flushes it to disk as `appendfsync` says.
//! - here: creating the files at the first start, opening them on later
//!   ones, and stopping.
//!
//! With `appendfsync always` a reply waits until its change, and every
//! change before it, is flushed to disk: neither a kill of the server nor
//! a crash of the machine loses a write a client was told of. One flush
//! covers every record written before it, from every thread, so the
//! writes of all the clients waiting meanwhile are committed together.
//! With `everysec` (and `no`) replies do not wait: the writer hands the
//! records to the kernel every millisecond and flushes them to disk once a
//! second (`no`: when the kernel likes), so a kill loses at most the last
//! millisecond or so, and a crash of the machine the last second, which
//! is what `everysec` promises.

pub mod load;
pub mod rewrite;
pub mod writer;

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kvik_persist::aof::manifest::{
    base_name, incr_name, incr_name_respb, is_respb, manifest_name, FileInfo, FileKind, Manifest,
};

use crate::keyspace::events::{self, ServerEvent};
use crate::registries::append_only::{Files, Fsync};
use crate::registries::journal::Hold;
use crate::state::ServerState;

/// `dir`/`appenddirname` and `appendfilename`.
pub fn location(state: &ServerState) -> (PathBuf, String) {
    let config = state.config();
    (PathBuf::from(config.get("dir")).join(config.get("appenddirname")), config.get("appendfilename").to_string())
}

/// Whether `appendonly` is set.
pub fn wanted(state: &ServerState) -> bool {
    state.config().get("appendonly") == "yes"
}

/// What replies wait for under `policy`: with `always`, their changes on
/// disk; otherwise nothing, as `everysec` promises no more than the last
/// second (the writer hands what arrived to the kernel every
/// millisecond, and flushes it to disk once a second).
pub fn hold_for(policy: Fsync) -> Hold {
    match policy {
        Fsync::Always => Hold::Synced,
        Fsync::Everysec | Fsync::No => Hold::Nothing,
    }
}

/// The kinds of events the journal needs from the keyspace: the keys it
/// removes by itself.
const REMOVALS: u8 = ServerEvent::Expired.bit() | ServerEvent::Evicted.bit();

/// Open the append-only file when the server starts with `appendonly yes`,
/// after [`load`] replayed it: the last incremental file is appended to;
/// when there was none (a first start), the directory, an empty base and
/// the first incremental file are created, as Redis does. Then the writer
/// starts. The error is the text to log before exiting.
pub fn open_at_start(state: &Arc<ServerState>) -> Result<(), String> {
    read_settings(state);
    let (dir, name) = location(state);
    let manifest_path = dir.join(manifest_name(&name));
    let existing = match std::fs::read(&manifest_path) {
        Ok(data) => Some(Manifest::parse(&data).map_err(|e| format!("{e}"))?),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("Can't open the AOF manifest {}: {e}", manifest_path.display())),
    };
    let wanted_respb = state.append_only.respb.load(Ordering::Relaxed);
    let manifest = match existing {
        // No incremental file, or the last one in the other form: a new
        // one, so that no file mixes RESP and RESPB.
        Some(mut manifest) if manifest.incr.last().is_none_or(|last| is_respb(&last.name) != wanted_respb) => {
            let seq = manifest.incr.iter().chain(&manifest.history).map(|f| f.seq).max().unwrap_or(0) + 1;
            let incr = new_incr(state, &name, seq);
            crate::log!(Notice, "Creating AOF incr file {} on server start", incr.name);
            create_empty(&dir.join(&incr.name))?;
            manifest.incr.push(incr);
            write_manifest(&dir, &name, &manifest).map_err(|e| e.to_string())?;
            manifest
        }
        Some(manifest) => {
            if let Some(last) = manifest.incr.last() {
                crate::log!(Notice, "Opening AOF incr file {} on server start", last.name);
            }
            manifest
        }
        None => create_files(state, &dir, &name)?,
    };
    let Some(last) = manifest.incr.last() else { return Err("The AOF manifest names no incr file".into()) };
    let path = dir.join(&last.name);
    let respb = is_respb(&last.name);
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .map_err(|e| format!("Can't open the append-only file {}: {e}", path.display()))?;
    let sizes = file_sizes(&dir, &manifest);
    state.append_only.current_size.store(sizes.0, Ordering::Relaxed);
    state.append_only.base_size.store(sizes.1, Ordering::Relaxed);
    *state.append_only.files.lock().unwrap_or_else(|p| p.into_inner()) = Some(Files { dir, name, manifest });
    // The first place is read while every shard is held: no change with
    // an earlier place is still to be made.
    let all = state.keyspace.lock_all();
    let started = start_journal(state, file, state.keyspace.changes_taken() + 1, respb);
    drop(all);
    started.map_err(|e| format!("Can't start the AOF writer: {e}"))
}

/// A first start: the directory, a base of the keyspace (empty at start,
/// an RDB file as with Redis's `aof-use-rdb-preamble yes`) and the first
/// incremental file, then the manifest naming them.
fn create_files(state: &ServerState, dir: &Path, name: &str) -> Result<Manifest, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("Can't open or create append-only dir {}: {e}", dir.display()))?;
    let base = FileInfo { name: base_name(name, 1, true), seq: 1, kind: FileKind::Base };
    crate::log!(Notice, "Creating AOF base file {} on server start", base.name);
    super::snapshot::write_rdb(state, &dir.join(&base.name), true, Instant::now())
        .map_err(|e| format!("Can't create the AOF base file {}: {e}", base.name))?;
    let incr = new_incr(state, name, 1);
    crate::log!(Notice, "Creating AOF incr file {} on server start", incr.name);
    create_empty(&dir.join(&incr.name))?;
    let manifest = Manifest { base: Some(base), history: Vec::new(), incr: vec![incr] };
    write_manifest(dir, name, &manifest).map_err(|e| format!("Can't write the AOF manifest: {e}"))?;
    Ok(manifest)
}

fn create_empty(path: &Path) -> Result<(), String> {
    let file = File::create(path).map_err(|e| format!("Can't create the AOF file {}: {e}", path.display()))?;
    file.sync_all().map_err(|e| format!("Can't flush the AOF file {}: {e}", path.display()))
}

/// Write `manifest` as Redis does: to a temporary file in `dir`, flushed,
/// renamed over the manifest, and the directory flushed.
pub fn write_manifest(dir: &Path, name: &str, manifest: &Manifest) -> io::Result<()> {
    let target = dir.join(manifest_name(name));
    let temp = dir.join(format!("temp-{}", manifest_name(name)));
    let mut file = File::create(&temp)?;
    file.write_all(&manifest.render())?;
    super::install(&file, &temp, &target, dir).map(|_| ())
}

/// `(aof_current_size, aof_base_size)` of the files `manifest` names.
pub(crate) fn file_sizes(dir: &Path, manifest: &Manifest) -> (u64, u64) {
    let size = |f: &FileInfo| std::fs::metadata(dir.join(&f.name)).map_or(0, |m| m.len());
    let base = manifest.base.as_ref().map_or(0, size);
    (base + manifest.incr.iter().map(size).sum::<u64>(), base)
}

/// Start the journal at place `first` and its writer on `file`, the
/// incremental file now appended to. Called while every shard is held, so
/// that no change of an earlier place is still to be made (the
/// configuration is read before: it has its own lock).
fn start_journal(state: &ServerState, file: File, first: u64, respb: bool) -> io::Result<()> {
    let aof = &state.append_only;
    let shared = state.shared().ok_or_else(|| io::Error::other("the server state is not shared"))?;
    aof.closing.store(false, Ordering::Relaxed);
    state.journal.start(first, hold_for(aof.fsync()));
    events::adjust(0, REMOVALS);
    let handle = writer::spawn(shared, file, respb)?;
    *aof.writer.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
    aof.enabled.store(true, Ordering::Relaxed);
    Ok(())
}

/// The settings the writer follows, read from the configuration.
pub fn read_settings(state: &ServerState) {
    let config = state.config();
    state.append_only.set_fsync(Fsync::parse(config.get("appendfsync")));
    state.append_only.timestamps.store(config.get("aof-timestamp-enabled") == "yes", Ordering::Relaxed);
    state.append_only.respb.store(config.get("aof-format") == "respb", Ordering::Relaxed);
}

/// The incremental file of sequence `seq` in the form `aof-format` asks
/// for (read by [`read_settings`]).
pub fn new_incr(state: &ServerState, name: &str, seq: i64) -> FileInfo {
    let name =
        if state.append_only.respb.load(Ordering::Relaxed) { incr_name_respb(name, seq) } else { incr_name(name, seq) };
    FileInfo { name, seq, kind: FileKind::Incr }
}

/// `CONFIG SET appendfsync`: the writer follows from its next round.
pub fn set_fsync(state: &ServerState, policy: Fsync) {
    state.append_only.set_fsync(policy);
    if state.append_only.enabled() {
        state.journal.set_hold(hold_for(policy));
        state.journal.wake_consumer();
    }
}

/// Most time [`sync_now`] waits for the writer.
const SYNC_WAIT: Duration = Duration::from_secs(10);

/// Flush everything published so far to disk and wait for it (before the
/// server stops, as Redis's `fsync` at shutdown). False when the writer
/// did not get there in time.
pub fn sync_now(state: &ServerState) -> bool {
    if !state.append_only.enabled() {
        return true;
    }
    let target = state.keyspace.changes_taken();
    state.append_only.sync_requests.fetch_add(1, Ordering::Relaxed);
    state.journal.wake_consumer();
    let deadline = Instant::now() + SYNC_WAIT;
    while state.journal.synced() < target {
        if Instant::now() >= deadline || !state.append_only.enabled() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// Stop the writer once it has written and flushed what was published,
/// and stop the journal (`CONFIG SET appendonly no`, and the end of an
/// in-process server).
pub fn stop(state: &ServerState) {
    let aof = &state.append_only;
    if !aof.enabled.swap(false, Ordering::Relaxed) {
        return;
    }
    if aof.rewrites.in_progress() {
        // As Redis kills its rewriting child: the base is not written.
        state.saver.abort();
    }
    aof.closing.store(true, Ordering::Relaxed);
    state.journal.wake_consumer();
    let handle = aof.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(handle) = handle {
        let _ = handle.join();
    }
    state.journal.stop();
    events::adjust(REMOVALS, 0);
    *aof.files.lock().unwrap_or_else(|p| p.into_inner()) = None;
    *aof.rotation.lock().unwrap_or_else(|p| p.into_inner()) = None;
}
