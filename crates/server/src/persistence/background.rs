//! `BGSAVE` without fork: a point-in-time snapshot written by a thread of
//! its own while every event loop keeps serving.
//!
//! [`start`] fixes the moment: holding every shard at once (as `SAVE`
//! does, but only for as long as it takes to flip one flag per database,
//! see `kvik_store::keyspace::snapshot`), it begins a snapshot of every
//! database and notes the change counter. The persistence thread
//! ([`spawn`]) then walks the databases in order, shard by shard, in
//! slices: it holds one shard for at most [`SLICE_BUCKETS`] buckets and
//! [`SLICE_KEYS`] keys, encodes those keys into the file's buffer, lets the
//! shard go and writes the buffer out. Keys a command changed before the
//! walk reached them were copied by the command; the walk writes those
//! copies after letting the shard go. The file is then flushed and renamed
//! as `SAVE`'s is (see [`super::snapshot`]). A diskless sync's snapshot
//! goes to the replicas' connections instead, through bounded channels
//! ([`start_to_replicas`]): no file, and no more memory than the channels
//! hold while the slowest replica takes it.
//!
//! The same thread checks the `save <seconds> <changes>` points ten times
//! a second, as Redis's `serverCron` does, and starts a scheduled save
//! (`BGSAVE` inside `MULTI`).
//!
//! A save that cannot write its file still walks to the end, without
//! writing, so that every key carries the saved mark again: the next
//! snapshot relies on it. `FLUSHALL` and `SHUTDOWN` abort a save in
//! progress, as Redis kills its child.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::thread;
use std::time::{Duration, Instant};

use kvik_persist::rdb::file::{FileWriter, SaveInfo};

use crate::keyspace::now_ms;
use crate::keyspace::snapshot::Walk;
use crate::keyspace::Entry;
use crate::registries::saves::{Background, Job, Piece, PieceSender, Purpose, Refused};
use crate::state::ServerState;

/// Buckets of a table one slice visits at most.
pub const SLICE_BUCKETS: usize = 1024;
/// Keys one slice encodes at most, under the shard's lock.
pub const SLICE_KEYS: usize = 64;
/// The persistence thread's nice value (0 is the default, 19 the lowest).
const SAVER_NICE: i32 = 10;
/// How often the thread looks at the save points.
const TICK: Duration = Duration::from_millis(100);
/// After a failed background save, the save points wait this long before
/// trying again (Redis's `CONFIG_BGSAVE_RETRY_DELAY`).
const RETRY_DELAY_S: i64 = 5;

/// Remove the file of a save cut short by the process stopping.
pub fn remove_temp_file(state: &ServerState) {
    let dir = super::dir_of(&super::snapshot_path(state));
    let _ = std::fs::remove_file(Background::temp_path(&dir));
}

/// Begin a background save of the keyspace as it is now; the persistence
/// thread writes it. The caller holds no shard lock.
pub fn start(state: &ServerState) -> Result<(), Refused> {
    let path = super::snapshot_path(state);
    let temp = Background::temp_path(&super::dir_of(&path));
    start_job(state, Purpose::Snapshot, path, temp, |_| {})
}

/// Begin a background snapshot for `purpose`, written to `temp` and then
/// renamed to `path`. `at_moment` runs while every shard is held, at the
/// moment the snapshot is of, with the last place of the order of changes
/// it holds (the append-only file starts its next incremental file there).
pub fn start_job(
    state: &ServerState,
    purpose: Purpose,
    path: std::path::PathBuf,
    temp: std::path::PathBuf,
    at_moment: impl FnOnce(u64),
) -> Result<(), Refused> {
    begin(state, purpose, path, temp, Vec::new(), at_moment)
}

/// Begin a snapshot streamed to replicas' connections as it is made, each
/// taking it from its channel in `sinks` (a diskless sync). `at_moment`
/// as for [`start_job`].
pub fn start_to_replicas(
    state: &ServerState,
    sinks: Vec<PieceSender>,
    at_moment: impl FnOnce(u64),
) -> Result<(), Refused> {
    let path = super::snapshot_path(state);
    let temp = Background::temp_path(&super::dir_of(&path));
    begin(state, Purpose::ReplicaSockets, path, temp, sinks, at_moment)
}

fn begin(
    state: &ServerState,
    purpose: Purpose,
    path: std::path::PathBuf,
    temp: std::path::PathBuf,
    sinks: Vec<PieceSender>,
    at_moment: impl FnOnce(u64),
) -> Result<(), Refused> {
    let bg = &state.saver;
    if !bg.thread_running.load(Ordering::Acquire) {
        return Err(Refused::NotRunning);
    }
    if bg.in_progress.swap(true, Ordering::AcqRel) {
        return Err(Refused::InProgress);
    }
    bg.abort.store(false, Ordering::Relaxed);
    if purpose != Purpose::AofBase {
        bg.scheduled.store(false, Ordering::Relaxed);
        // Counted when it starts, as Redis counts a fork.
        state.stats.rdb_saves.fetch_add(1, Ordering::Relaxed);
        bg.last_try_unix.store(super::snapshot::unix_seconds(), Ordering::Relaxed);
    }
    let mut settings = super::save_settings(state);
    if purpose == Purpose::AofBase {
        // A rewritten base is flushed as it grows per its own setting.
        settings.incremental_sync = state.config().get("aof-rewrite-incremental-fsync") == "yes";
    }
    let ks = &state.keyspace;
    let mut sizes = vec![(0, 0); ks.databases()];
    let (at_ms, dirty, used_mem, functions) = {
        let mut all = ks.lock_all();
        for shard in all.shards() {
            // Empty databases are left out: the walk finds no state for
            // them and moves on.
            shard.begin_snapshot(&mut sizes);
        }
        let mut at_moment = Some(at_moment);
        let functions = state.functions.codes_at(|| {
            if let Some(at) = at_moment.take() {
                at(ks.changes_taken());
            }
        });
        (now_ms(), state.stats.dirty_total(), ks.used_memory() as u64, functions)
    };
    let info = SaveInfo {
        redis_version: crate::REDIS_VERSION.to_string(),
        ctime_s: super::snapshot::unix_seconds(),
        used_mem,
        aof_base: purpose == Purpose::AofBase,
    };
    bg.copied.store(0, Ordering::Relaxed);
    bg.keys_done.store(0, Ordering::Relaxed);
    bg.keys_total.store(sizes.iter().map(|s| s.0 as u64).sum(), Ordering::Relaxed);
    *bg.started.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    let job = Job {
        purpose,
        temp,
        path,
        info,
        settings,
        policy: state.limits.maxmemory_policy(),
        at_ms,
        dirty,
        sizes,
        functions,
        sinks,
    };
    *bg.job.lock().unwrap_or_else(|p| p.into_inner()) = Some(job);
    bg.wake.notify_all();
    match purpose {
        Purpose::Snapshot => crate::log!(Notice, "Background saving started"),
        Purpose::Replication => crate::log!(Notice, "Starting BGSAVE for SYNC with target: disk"),
        Purpose::ReplicaSockets => crate::log!(Notice, "Starting BGSAVE for SYNC with target: replicas sockets"),
        Purpose::AofBase => {}
    }
    Ok(())
}

/// Start the persistence thread: background saves and the save points.
/// It ends when the server state is gone or the server stops.
pub fn spawn(state: Weak<ServerState>) -> io::Result<thread::JoinHandle<()>> {
    if let Some(s) = state.upgrade() {
        s.saver.thread_running.store(true, Ordering::Release);
    }
    thread::Builder::new().name("kvik-persist".into()).spawn(move || {
        // Saving is background work: where the event loops and this thread
        // want the same core, the loops get it (a snapshot on a busy
        // machine takes longer rather than slowing commands down).
        if let Err(e) = kvik_process::lower_thread_priority(SAVER_NICE) {
            crate::log!(Verbose, "The persistence thread keeps the default priority: {e}");
        }
        while let Some(state) = state.upgrade() {
            if state.shutting_down() {
                state.saver.thread_running.store(false, Ordering::Release);
                break;
            }
            let job = {
                let bg = &state.saver;
                let guard = bg.job.lock().unwrap_or_else(|p| p.into_inner());
                let (mut guard, _) =
                    bg.wake.wait_timeout_while(guard, TICK, |j| j.is_none()).unwrap_or_else(|p| p.into_inner());
                guard.take()
            };
            match job {
                Some(job) => run(&state, job),
                None => cron(&state),
            }
        }
    })
}

/// What the thread does between saves: start one when a save point is
/// reached or one was scheduled.
fn cron(state: &ServerState) {
    let bg = &state.saver;
    if bg.in_progress() || super::aof::rewrite::cron(state) {
        return;
    }
    let now = super::snapshot::unix_seconds();
    let may_retry = now - bg.last_try_unix.load(Ordering::Relaxed) > RETRY_DELAY_S
        || state.stats.last_save_ok.load(Ordering::Relaxed);
    if !may_retry {
        return;
    }
    if bg.scheduled.load(Ordering::Relaxed) {
        let _ = start(state);
        return;
    }
    let points = save_points(state.config().get("save"));
    let dirty = state.stats.dirty();
    let since = now - state.stats.lastsave.load(Ordering::Relaxed);
    if let Some((secs, changes)) = points.into_iter().find(|&(s, c)| dirty >= c && since > s) {
        crate::log!(Notice, "{changes} changes in {secs} seconds. Saving...");
        let _ = start(state);
    }
}

/// The `save` setting's pairs: seconds, changes.
pub fn save_points(setting: &str) -> Vec<(i64, u64)> {
    let words: Vec<&str> = setting.split_ascii_whitespace().collect();
    words.chunks_exact(2).filter_map(|p| Some((p[0].parse().ok()?, p[1].parse().ok()?))).collect()
}

/// Write the begun snapshot, then report how it went.
fn run(state: &ServerState, job: Job) {
    let bg = &state.saver;
    let started = Instant::now();
    let written = write(state, &job);
    let took = started.elapsed();
    let written = match written {
        Ok((keys, file)) => {
            if job.purpose == Purpose::Replication {
                let file = file.map(std::sync::Arc::new).ok_or_else(|| "the file cannot be read back".to_string());
                state.replication.snapshot_done(file);
            }
            Ok(keys)
        }
        Err(e) => {
            if job.purpose == Purpose::Replication {
                state.replication.snapshot_done(Err(e.to_string()));
            }
            Err(e)
        }
    };
    let copied = bg.copied.load(Ordering::Relaxed);
    if job.purpose == Purpose::ReplicaSockets {
        // Nothing is on disk: the last save's time and status stand.
        match &written {
            Ok(keys) => crate::log!(
                Notice,
                "Background RDB transfer terminated with success ({keys} keys in {:.3} seconds)",
                took.as_secs_f64()
            ),
            Err(e) => crate::log!(Warning, "Background transfer error: {e}"),
        }
        bg.last_copied.store(copied, Ordering::Relaxed);
        *bg.started.lock().unwrap_or_else(|p| p.into_inner()) = None;
        bg.abort.store(false, Ordering::Relaxed);
        bg.in_progress.store(false, Ordering::Release);
        return;
    }
    if job.purpose == Purpose::AofBase {
        *bg.started.lock().unwrap_or_else(|p| p.into_inner()) = None;
        bg.abort.store(false, Ordering::Relaxed);
        bg.in_progress.store(false, Ordering::Release);
        super::aof::rewrite::done(state, written, took, copied);
        return;
    }
    bg.last_secs.store(i64::try_from(took.as_secs()).unwrap_or(i64::MAX), Ordering::Relaxed);
    bg.last_copied.store(copied, Ordering::Relaxed);
    let stats = &state.stats;
    match written {
        Ok(keys) => {
            stats.dirty_at_save.store(job.dirty, Ordering::Relaxed);
            stats.lastsave.store(super::snapshot::unix_seconds(), Ordering::Relaxed);
            stats.last_save_ok.store(true, Ordering::Relaxed);
            crate::log!(Notice, "DB saved on disk");
            crate::log!(
                Notice,
                "Snapshot of {keys} keys in {:.3} seconds: {} MB copied for changes during the save",
                took.as_secs_f64(),
                copied / (1024 * 1024)
            );
            crate::log!(Notice, "Background saving terminated with success");
        }
        Err(e) if e.kind() == io::ErrorKind::Interrupted => {
            crate::log!(Warning, "Background saving aborted: {e}");
        }
        Err(e) => {
            stats.last_save_ok.store(false, Ordering::Relaxed);
            crate::log!(Warning, "Background saving error: {e}");
        }
    }
    *bg.started.lock().unwrap_or_else(|p| p.into_inner()) = None;
    bg.abort.store(false, Ordering::Relaxed);
    bg.in_progress.store(false, Ordering::Release);
}

/// Write the snapshot's keys into the temporary file, then flush and
/// rename it; or, for replicas' connections, stream them there. Returns
/// the keys written and, for replicas of a file, the file still open: what
/// is sent is this snapshot's file even if a later save renames another
/// over its name.
fn write(state: &ServerState, job: &Job) -> io::Result<(u64, Option<std::fs::File>)> {
    if job.purpose == Purpose::ReplicaSockets {
        return write_to_replicas(state, job).map(|keys| (keys, None));
    }
    let dir = super::dir_of(&job.path);
    let created = super::create_temp(&job.temp, &dir, job.settings);
    let (written, keys) = start_and_walk(state, job, created);
    let finished = written.and_then(FileWriter::finish).and_then(|file| {
        // Opened to read before the rename, so that it is this file.
        let kept = if job.purpose == Purpose::Replication { Some(std::fs::File::open(&job.temp)?) } else { None };
        super::install(file.file(), &job.temp, &job.path, &dir).map(|_| kept)
    });
    if finished.is_err() {
        let _ = std::fs::remove_file(&job.temp);
    }
    finished.map(|kept| (keys, kept))
}

/// Start a snapshot on `out` and walk the keyspace into it. Returns the
/// writer, still to be finished, unless something failed, and the keys
/// written.
fn start_and_walk<W: io::Write>(
    state: &ServerState,
    job: &Job,
    out: io::Result<W>,
) -> (io::Result<FileWriter<W>>, u64) {
    let mut failed: Option<io::Error> = None;
    let started = out.and_then(|o| FileWriter::start(o, &job.info, job.settings.compress, job.settings.checksum));
    let mut writer = match started {
        Ok(w) => Some(w),
        Err(e) => {
            failed = Some(e);
            None
        }
    };
    let keys = walk(state, job, &mut writer, &mut failed);
    let written = match (writer, failed) {
        (Some(w), None) => Ok(w),
        (_, Some(e)) => Err(e),
        (None, None) => Err(io::Error::other("nothing was written")),
    };
    (written, keys)
}

/// Stream the snapshot to the replicas' channels, then tell each how it
/// ended.
fn write_to_replicas(state: &ServerState, job: &Job) -> io::Result<u64> {
    let (written, keys) = start_and_walk(state, job, Ok(Fanout { sinks: job.sinks.clone() }));
    let finished = written.and_then(FileWriter::finish).map(|_| keys);
    let end = finished.as_ref().map(|_| ()).map_err(|e| e.to_string());
    for sink in &job.sinks {
        // A replica that left takes nothing more.
        let _ = sink.blocking_send(Piece::End(end.clone()));
    }
    finished
}

/// The snapshot's bytes to every replica's channel. Each write waits for
/// room in every channel; a replica that left is let go, and once all
/// have, the walk goes on without writing.
struct Fanout {
    sinks: Vec<PieceSender>,
}

impl io::Write for Fanout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let piece: std::sync::Arc<[u8]> = buf.into();
        self.sinks.retain(|sink| sink.blocking_send(Piece::Bytes(std::sync::Arc::clone(&piece))).is_ok());
        if self.sinks.is_empty() {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "every replica of the diskless sync left"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Walk every database of every shard, encoding the snapshot's keys into
/// `out`. Returns the keys written.
///
/// The walk always goes to the end: after an error (left in `failed`,
/// `out` then `None`), or when aborted, it goes on without writing, so
/// that the snapshot ends in every database.
fn walk<W: io::Write>(
    state: &ServerState,
    job: &Job,
    out: &mut Option<FileWriter<W>>,
    failed: &mut Option<io::Error>,
) -> u64 {
    let bg = &state.saver;
    let ks = &state.keyspace;
    for code in &job.functions {
        if let Some(w) = out.as_mut() {
            if let Err(e) = w.function(code) {
                *failed = Some(e);
                *out = None;
            }
        }
    }
    let tuning = ks.lfu_tuning();
    let mut keys = 0u64;
    for (db, &(size, expires)) in job.sizes.iter().enumerate() {
        if size > 0 {
            if let Some(w) = out.as_mut() {
                if let Err(e) = w.select_db(db, size, expires) {
                    *failed = Some(e);
                    *out = None;
                }
            }
        }
        for shard in 0..ks.shard_count() {
            loop {
                if out.is_some() && bg.abort.load(Ordering::Relaxed) {
                    *out = None;
                    *failed = Some(io::Error::new(io::ErrorKind::Interrupted, "the save was cut short"));
                }
                let mut encode = |w: &mut Option<FileWriter<W>>, e: &Entry| {
                    let Some(w) = w.as_mut() else { return };
                    if e.is_expired(job.at_ms) {
                        return;
                    }
                    let access = super::access_of(e.meta(), job.policy, tuning, job.at_ms);
                    w.put_entry(e.key(), e.value(), e.deadline(), access);
                    keys += 1;
                };
                let (walk, leftovers) = {
                    let mut guard = ks.lock(shard);
                    let Some(d) = guard.snapshot_db(db) else { break };
                    let walk = d.snapshot_slice(SLICE_BUCKETS, SLICE_KEYS, |e| encode(out, e));
                    let leftovers = d.take_snapshot_leftovers();
                    let ended = walk == Walk::Done && d.end_snapshot();
                    (if ended { Walk::Done } else { Walk::More }, leftovers)
                };
                bg.copied.fetch_add(leftovers.copied_bytes as u64, Ordering::Relaxed);
                leftovers.for_each(|e| encode(out, e));
                // The set-aside tables are freed here, off the event loops.
                drop(leftovers);
                if let Some(w) = out.as_mut() {
                    if let Err(e) = w.flush_if_full() {
                        *failed = Some(e);
                        *out = None;
                    }
                }
                bg.keys_done.store(keys, Ordering::Relaxed);
                if walk == Walk::Done {
                    break;
                }
            }
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diskless_snapshot_lets_go_of_replicas_that_left_and_stops_when_none_is_left() {
        use std::io::Write;
        let (a, mut a_rx) = tokio::sync::mpsc::channel(4);
        let (b, b_rx) = tokio::sync::mpsc::channel(4);
        let mut fanout = Fanout { sinks: vec![a, b] };
        drop(b_rx);
        assert_eq!(fanout.write(b"abc").expect("one is left"), 3);
        assert_eq!(fanout.sinks.len(), 1);
        match a_rx.try_recv() {
            Ok(Piece::Bytes(bytes)) => assert_eq!(&bytes[..], b"abc"),
            other => panic!("{other:?}"),
        }
        drop(a_rx);
        let err = fanout.write(b"d").expect_err("none is left");
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn save_points_read_as_pairs() {
        assert_eq!(save_points("3600 1 300 100 60 10000"), vec![(3600, 1), (300, 100), (60, 10000)]);
        assert_eq!(save_points(""), vec![]);
    }
}
