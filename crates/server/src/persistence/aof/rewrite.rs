//! Rewriting the append-only file without fork (`BGREWRITEAOF`, the
//! `auto-aof-rewrite-*` points, `CONFIG SET appendonly yes`), as Redis 7
//! lays the files out.
//!
//! 1. A new incremental file is created and added to the manifest, which
//!    is written: from now on a crash finds the old base, the old
//!    incremental files and the new one, which together are whole.
//! 2. A background snapshot (`super::super::background`) fixes its moment
//!    holding every shard; at that moment the writer is told to move to the
//!    new incremental file after the last place handed out so far. The
//!    changes up to that place are in the old files and in the snapshot;
//!    the ones after it go to the new file only.
//! 3. The snapshot is written as the new base (an RDB file with the
//!    `aof-base` field) through a temporary file.
//! 4. The manifest is written with the new base and the new incremental
//!    file alone, and the files it no longer names are deleted.
//!
//! Turning the file on while the server runs is the same, with no old
//! files: the journal starts at the snapshot's moment, and the manifest is
//! written once the base is (a crash before that finds what the directory
//! held before, as with Redis).

use std::fs::OpenOptions;
use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use kvik_persist::aof::manifest::{base_name, manifest_name, FileInfo, FileKind, Manifest};

use crate::registries::append_only::{Files, PendingRewrite, Rotation};
use crate::registries::saves::{Purpose, Refused};
use crate::state::ServerState;

/// Why a rewrite did not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotStarted {
    /// One runs already.
    InProgress,
    /// A background save runs: the rewrite starts when it ends.
    Scheduled,
    /// The append-only file is off.
    Off,
    /// The files could not be prepared, or the server is stopping.
    Failed(String),
}

/// Start a rewrite of the running append-only file.
pub fn start(state: &ServerState) -> Result<(), NotStarted> {
    let aof = &state.append_only;
    if !aof.enabled() {
        return Err(NotStarted::Off);
    }
    if aof.rewrites.in_progress.swap(true, Ordering::AcqRel) {
        return Err(NotStarted::InProgress);
    }
    if state.saver.in_progress() {
        aof.rewrites.in_progress.store(false, Ordering::Release);
        aof.rewrites.scheduled.store(true, Ordering::Relaxed);
        return Err(NotStarted::Scheduled);
    }
    super::read_settings(state);
    let begun = begin(state, None);
    if let Err(e) = &begun {
        aof.rewrites.in_progress.store(false, Ordering::Release);
        crate::log!(Warning, "Can't rewrite the append only file: {e}");
    }
    begun.map_err(NotStarted::Failed)
}

/// Turn the append-only file on while the server runs (`CONFIG SET
/// appendonly yes`): the journal starts at a snapshot's moment, which is
/// written as the base of a new log in `dir`/`appenddirname`.
pub fn turn_on(state: &ServerState) -> Result<(), String> {
    let aof = &state.append_only;
    if aof.enabled() {
        return Ok(());
    }
    if state.saver.in_progress() {
        return Err("a background save is in progress; try again when it ends".into());
    }
    if aof.rewrites.in_progress.swap(true, Ordering::AcqRel) {
        return Err("a rewrite is in progress".into());
    }
    super::read_settings(state);
    let result = (|| {
        let (dir, name) = super::location(state);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("Can't open or create append-only dir {}: {e}", dir.display()))?;
        // What the directory holds already becomes history once the new
        // base is written, as Redis does.
        let manifest = std::fs::read(dir.join(manifest_name(&name)))
            .ok()
            .and_then(|data| Manifest::parse(&data).ok())
            .unwrap_or_default();
        *aof.files.lock().unwrap_or_else(|p| p.into_inner()) = Some(Files { dir, name, manifest });
        begin(state, Some(state))
    })();
    if let Err(e) = &result {
        aof.rewrites.in_progress.store(false, Ordering::Release);
        *aof.files.lock().unwrap_or_else(|p| p.into_inner()) = None;
        crate::log!(Warning, "Can't turn on the append only file: {e}");
    }
    result
}

/// Steps 1 and 2: the new incremental file, the manifest naming it (when
/// the log runs), and the snapshot. `turning_on` starts the journal and
/// its writer at the snapshot's moment instead of moving the writer.
fn begin(state: &ServerState, turning_on: Option<&ServerState>) -> Result<(), String> {
    let aof = &state.append_only;
    let mut files = aof.files.lock().unwrap_or_else(|p| p.into_inner());
    let Some(f) = files.as_mut() else { return Err("the append-only file has no files".into()) };
    let incr_seq = f.manifest.incr.iter().chain(&f.manifest.history).map(|i| i.seq).max().unwrap_or(0) + 1;
    let base_seq = f.manifest.base.iter().chain(&f.manifest.history).map(|i| i.seq).max().unwrap_or(0) + 1;
    let incr = super::new_incr(state, &f.name, incr_seq);
    let respb = kvik_persist::aof::manifest::is_respb(&incr.name);
    let incr_path = f.dir.join(&incr.name);
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .open(&incr_path)
        .and_then(|file| file.sync_all().map(|()| file))
        .map_err(|e| format!("Can't open the append-only file {}: {e}", incr_path.display()))?;
    if turning_on.is_none() {
        let mut manifest = f.manifest.clone();
        manifest.incr.push(incr.clone());
        super::write_manifest(&f.dir, &f.name, &manifest).map_err(|e| format!("Can't write the AOF manifest: {e}"))?;
        f.manifest = manifest;
        crate::log!(Notice, "Creating AOF incr file {} on background rewrite", incr.name);
    }
    let path = f.dir.join(base_name(&f.name, base_seq, true));
    let temp = f.dir.join(format!("temp-rewriteaof-bg-{}.aof", std::process::id()));
    *aof.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(PendingRewrite { base_seq, incr });
    drop(files);
    let mut file = Some(file);
    let mut started = Ok(());
    let moment = |cut: u64| match turning_on {
        None => {
            let file = file.take();
            *aof.rotation.lock().unwrap_or_else(|p| p.into_inner()) =
                file.map(|file| Rotation { after_seq: cut, file, respb });
        }
        Some(state) => {
            if let Some(file) = file.take() {
                started = super::start_journal(state, file, cut + 1, respb);
            }
        }
    };
    match super::super::background::start_job(state, Purpose::AofBase, path, temp, moment) {
        Ok(()) => {}
        Err(Refused::InProgress) => return Err("a background save is in progress".into()),
        Err(Refused::NotRunning) => return Err("the server is stopping".into()),
    }
    started.map_err(|e| format!("Can't start the AOF writer: {e}"))?;
    *aof.rewrites.started.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    crate::log!(Notice, "Background append only file rewriting started");
    Ok(())
}

/// Steps 3 and 4, once the persistence thread wrote (or failed to write)
/// the new base.
pub fn done(state: &ServerState, written: io::Result<u64>, took: Duration, copied: u64) {
    let aof = &state.append_only;
    let rw = &aof.rewrites;
    let pending = aof.pending.lock().unwrap_or_else(|p| p.into_inner()).take();
    let result = written.map_err(|e| e.to_string()).and_then(|_| match pending {
        Some(p) => install(state, p),
        None => Err("the rewrite's files were lost".into()),
    });
    rw.last_secs.store(i64::try_from(took.as_secs()).unwrap_or(i64::MAX), Ordering::Relaxed);
    rw.last_copied.store(copied, Ordering::Relaxed);
    *rw.started.lock().unwrap_or_else(|p| p.into_inner()) = None;
    match result {
        Ok(()) => {
            rw.last_ok.store(true, Ordering::Relaxed);
            rw.consecutive_failures.store(0, Ordering::Relaxed);
            rw.done.fetch_add(1, Ordering::Relaxed);
            crate::log!(Notice, "Background AOF rewrite terminated with success");
            crate::log!(Notice, "Background AOF rewrite finished successfully");
        }
        Err(e) => {
            rw.last_ok.store(false, Ordering::Relaxed);
            rw.consecutive_failures.fetch_add(1, Ordering::Relaxed);
            crate::log!(Warning, "Background AOF rewrite failed: {e}");
        }
    }
    rw.in_progress.store(false, Ordering::Release);
}

/// The new base is in place: the manifest names it and the new
/// incremental file alone, and the older files go.
fn install(state: &ServerState, p: PendingRewrite) -> Result<(), String> {
    let aof = &state.append_only;
    let mut files = aof.files.lock().unwrap_or_else(|p| p.into_inner());
    let Some(f) = files.as_mut() else { return Err("the append-only file was turned off".into()) };
    let base = FileInfo { name: base_name(&f.name, p.base_seq, true), seq: p.base_seq, kind: FileKind::Base };
    let old: Vec<FileInfo> = f
        .manifest
        .files()
        .chain(&f.manifest.history)
        .filter(|o| o.seq < p.incr.seq || o.kind != FileKind::Incr)
        .filter(|o| o.name != base.name)
        .cloned()
        .collect();
    let later: Vec<FileInfo> = f.manifest.incr.iter().filter(|i| i.seq >= p.incr.seq).cloned().collect();
    let incr = if later.is_empty() { vec![p.incr.clone()] } else { later };
    let history = old.into_iter().map(|o| FileInfo { kind: FileKind::History, ..o }).collect::<Vec<_>>();
    let manifest = Manifest { base: Some(base), history: history.clone(), incr };
    super::write_manifest(&f.dir, &f.name, &manifest).map_err(|e| format!("Can't write the AOF manifest: {e}"))?;
    if state.config().get("aof-disable-auto-gc") == "yes" {
        // Kept, and named as history, until the setting goes back to no
        // and the next rewrite deletes them.
        let (current, base_size) = super::file_sizes(&f.dir, &manifest);
        aof.current_size.store(current, Ordering::Relaxed);
        aof.base_size.store(base_size, Ordering::Relaxed);
        f.manifest = manifest;
        return Ok(());
    }
    for h in &history {
        let _ = std::fs::remove_file(f.dir.join(&h.name));
    }
    let clean = Manifest { history: Vec::new(), ..manifest };
    super::write_manifest(&f.dir, &f.name, &clean).map_err(|e| format!("Can't write the AOF manifest: {e}"))?;
    let (current, base_size) = super::file_sizes(&f.dir, &clean);
    aof.current_size.store(current, Ordering::Relaxed);
    aof.base_size.store(base_size, Ordering::Relaxed);
    f.manifest = clean;
    Ok(())
}

/// The persistence thread's round, between background saves: a rewrite
/// asked for while a save ran, or one that `auto-aof-rewrite-percentage`
/// and `auto-aof-rewrite-min-size` call for (the log has grown by that
/// share over its base, and is at least that large). True when one
/// started.
pub fn cron(state: &ServerState) -> bool {
    let aof = &state.append_only;
    if !aof.enabled() || aof.rewrites.in_progress() {
        return false;
    }
    if aof.rewrites.scheduled.swap(false, Ordering::Relaxed) {
        return start(state).is_ok();
    }
    let (percentage, min_size) = {
        let config = state.config();
        (config.int("auto-aof-rewrite-percentage"), config.int("auto-aof-rewrite-min-size"))
    };
    let (current, base, _) = aof.sizes();
    let base = base.max(1);
    let grown = current.saturating_sub(base) * 100 / base;
    if percentage > 0
        && current >= u64::try_from(min_size).unwrap_or(0)
        && grown >= u64::try_from(percentage).unwrap_or(u64::MAX)
    {
        crate::log!(Notice, "Starting automatic rewriting of AOF on {grown}% growth");
        return start(state).is_ok();
    }
    false
}

/// Remove a rewrite's temporary base, left by a stop.
pub fn remove_temp_file(dir: &std::path::Path) {
    let _ = std::fs::remove_file(dir.join(format!("temp-rewriteaof-bg-{}.aof", std::process::id())));
}
