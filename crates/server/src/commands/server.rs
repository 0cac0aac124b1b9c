//! Server and database commands: SELECT, DBSIZE, FLUSHDB, FLUSHALL, INFO,
//! TIME, SAVE, LASTSAVE, MEMORY, SLOWLOG, LATENCY, DEBUG and SHUTDOWN.

use std::sync::atomic::Ordering;
use std::time::Duration;

use kvik_protocol::commands::{CommandSpec, COMMANDS};
use kvik_protocol::number::parse_i64;

use super::{info, Ctx, Outcome, ReplyTarget, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::effects::changes;
use crate::keyspace::db::{charge, ENTRY_OVERHEAD};
use crate::keyspace::now_ms;
use crate::metrics::stats::unix_micros;

handlers! {
    SELECT(c) => select(c),
    DBSIZE(c) => dbsize(c),
    FLUSHDB(c) => flush(c, false),
    FLUSHALL(c) => flush(c, true),
    INFO(c) => info::info(c),
    TIME(c) => {
        let now = unix_micros();
        let (secs, micros) = (now / 1_000_000, now % 1_000_000);
        c.reply(|s| {
            s.array(2);
            s.bulk(secs.to_string().as_bytes());
            s.bulk(micros.to_string().as_bytes());
        });
    },
    SAVE(c) => {
        // A rewrite's snapshot only reads what SAVE reads; a BGSAVE would
        // write the same file.
        if c.state.saver.in_progress() && !c.state.append_only.rewrites.in_progress() {
            return c.error(BGSAVE_IN_PROGRESS);
        }
        c.state.stats.rdb_saves.fetch_add(1, Ordering::Relaxed);
        match crate::persistence::snapshot::save(c.state) {
            Ok(_) => c.ok(),
            // Redis answers a failed save with a bare ERR; the log says why.
            Err(_) => c.error(b"ERR"),
        }
    },
    BGSAVE(c) => bgsave(c),
    BGREWRITEAOF(c) => bgrewriteaof(c),
    LASTSAVE(c) => {
        let t = c.state.stats.lastsave.load(Ordering::Relaxed);
        c.reply(|s| s.integer(t));
    },
    MEMORY_USAGE(c) => memory_usage(c),
    MEMORY_STATS(c) => memory_stats(c),
    MEMORY_PURGE(c) => {
        // Redis answers OK whether or not its allocator had pages to give back.
        kvik_heap::release_free_memory();
        c.ok()
    },
    MEMORY_DOCTOR(c) => memory_doctor(c),
    MEMORY_HELP(c) => super::help(c, MEMORY_HELP),
    // What Redis answers when built without jemalloc, as kvik's allocator is the system one.
    MEMORY_MALLOC_STATS(c) => c.reply(|s| s.verbatim(b"txt", b"Stats not supported for the current allocator")),
    SLOWLOG_GET(c) => slowlog_get(c),
    SLOWLOG_LEN(c) => {
        let n = c.state.stats.slowlog().entries.len() as i64;
        c.reply(|s| s.integer(n));
    },
    SLOWLOG_RESET(c) => {
        c.state.stats.slowlog().entries.clear();
        c.ok();
    },
    SLOWLOG_HELP(c) => super::help(c, SLOWLOG_HELP),
    LATENCY_LATEST(c) => latency_latest(c),
    LATENCY_HISTORY(c) => latency_history(c),
    LATENCY_RESET(c) => {
        let resets = {
            let mut monitor = c.state.stats.latency();
            if c.argc() == 2 {
                monitor.reset(None)
            } else {
                (2..c.argc()).map(|i| monitor.reset(Some(c.arg(i)))).sum()
            }
        };
        c.reply(|s| s.integer(resets as i64));
    },
    LATENCY_DOCTOR(c) => latency_doctor(c),
    LATENCY_GRAPH(c) => latency_graph(c),
    LATENCY_HELP(c) => super::help(c, LATENCY_HELP),
    LATENCY_HISTOGRAM(c) => latency_histogram(c),
    DEBUG(c) => debug(c),
    SHUTDOWN(c) => c.outcome = shutdown(c),
}

/// `SELECT index`.
fn select<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    // Redis reads the index as a C int first, so a huge index gets the range message.
    match super::keys::db_index(c, c.arg(1), None) {
        Err(msg) => c.error(&msg),
        Ok(n) => {
            c.session.db = n;
            c.ok();
        }
    }
}

/// `DBSIZE`: keys in the selected database, over all shards.
///
/// Every shard is locked at once: counted one at a time, a key that a
/// RENAME moves between shards meanwhile could be counted twice or not at
/// all.
fn dbsize<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let db = c.session.db;
    let mut lock = c.state.keyspace.lock_all();
    let total: usize = lock.shards().into_iter().map(|shard| shard.db(db).len()).sum();
    drop(lock);
    c.reply(|s| s.integer(total as i64));
}

/// `FLUSHDB [ASYNC | SYNC]` and `FLUSHALL [ASYNC | SYNC]`.
///
/// Every shard is locked before any is cleared, so no client sees half a flush.
/// Redis's refusal of a save while a background one runs.
const BGSAVE_IN_PROGRESS: &[u8] = b"ERR Background save already in progress";

/// `BGREWRITEAOF`: rewrite the append-only file from a background
/// snapshot (see [`crate::persistence::aof::rewrite`]), with Redis's replies.
fn bgrewriteaof<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    use crate::persistence::aof::rewrite::{self, NotStarted};
    match rewrite::start(c.state) {
        Ok(()) => c.reply(|s| s.simple(b"Background append only file rewriting started")),
        Err(NotStarted::Scheduled) => c.reply(|s| s.simple(b"Background append only file rewriting scheduled")),
        Err(NotStarted::InProgress) => c.error(b"ERR Background append only file rewriting already in progress"),
        Err(NotStarted::Off) => {
            c.error(b"ERR the append-only file is off (appendonly no): kvik rewrites it only while it is on")
        }
        Err(NotStarted::Failed(_)) => c.error(
            b"ERR Can't execute an AOF background rewriting. Please check the server logs for more information.",
        ),
    }
}

/// `BGSAVE [SCHEDULE]`: begin a background save (see
/// [`crate::persistence::background`]). Inside `EXEC` it is scheduled
/// instead, as in Redis, to start once the transaction is over.
fn bgsave<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    use crate::persistence::background;
    use crate::registries::saves::Refused;
    if c.argc() > 2 || c.argc() == 2 && !c.arg(1).eq_ignore_ascii_case(b"schedule") {
        return c.error(SYNTAX_ERROR);
    }
    let schedule = c.argc() == 2;
    if c.state.append_only.rewrites.in_progress() {
        // The rewrite holds the snapshot, as Redis's child does.
        if schedule {
            c.state.saver.schedule();
            return c.reply(|s| s.simple(b"Background saving scheduled"));
        }
        return c.error(b"ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.");
    }
    if c.state.saver.in_progress() {
        return c.error(BGSAVE_IN_PROGRESS);
    }
    if crate::keyspace::in_transaction() {
        c.state.saver.schedule();
        return c.reply(|s| s.simple(b"Background saving scheduled"));
    }
    match background::start(c.state) {
        Ok(()) => c.reply(|s| s.simple(b"Background saving started")),
        Err(Refused::InProgress) => c.error(BGSAVE_IN_PROGRESS),
        Err(Refused::NotRunning) => c.error(b"ERR the server is stopping: no background save can start"),
    }
}

fn flush<T: ReplyTarget>(c: &mut Ctx<'_, T>, all: bool) {
    if c.argc() > 2
        || c.argc() == 2 && !(c.arg(1).eq_ignore_ascii_case(b"async") || c.arg(1).eq_ignore_ascii_case(b"sync"))
    {
        return c.error(SYNTAX_ERROR);
    }
    let db = c.session.db;
    let mut lock = c.state.keyspace.lock_all();
    c.note_change();
    changes::db_flushed(c.state, if all { None } else { Some(db) });
    // Each key removed counts as a change, as in Redis.
    let mut removed = 0;
    for shard in lock.shards() {
        if all {
            for d in shard.dbs().iter_mut() {
                removed += d.len();
                d.clear();
            }
        } else {
            removed += shard.db(db).len();
            shard.db(db).clear();
        }
    }
    drop(lock);
    if all && c.state.saver.in_progress() && !c.state.append_only.rewrites.in_progress() {
        // As Redis kills its saving child: the snapshot would bring back
        // what was just flushed. A rewrite goes on: the FLUSHALL is in
        // its new incremental file, after the base.
        crate::log!(Notice, "FLUSHALL: the background save in progress is stopped");
        c.state.saver.abort();
    }
    if all && crate::persistence::save_points_set(c.state) {
        // With save points, the file is emptied too, as in Redis: the
        // removals are counted first, so that the save counts from after them.
        c.state.stats.record_changes(removed as u64);
        let _ = crate::persistence::snapshot::save(c.state);
    } else {
        c.count_changes(removed as u64);
    }
    // XREADGROUP waiters on a flushed stream learn that it is gone.
    let flushed = [db];
    c.state.blocking.dbs_changed(if all { None } else { Some(&flushed) });
    c.ok();
}

/// `SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]`.
///
/// Options are checked as Redis checks them. The snapshot is written first
/// when save points are set (unless `NOSAVE`) or `SAVE` asks, and a failed
/// save keeps the server running (and says so) unless `FORCE` says to exit
/// all the same (see [`crate::persistence::prepare_for_stop`]). There is nothing else to wait for,
/// so a valid SHUTDOWN then stops the server at once: the client gets no
/// reply, its connection closes with all the others, and an ABORT always
/// finds no shutdown in progress.
pub fn shutdown<T: ReplyTarget>(c: &mut Ctx<'_, T>) -> Outcome {
    let (mut nosave, mut save, mut other, mut abort, mut force) = (false, false, false, false, false);
    for i in 1..c.argc() {
        let word = c.arg(i);
        if word.eq_ignore_ascii_case(b"nosave") {
            nosave = true;
        } else if word.eq_ignore_ascii_case(b"save") {
            save = true;
        } else if word.eq_ignore_ascii_case(b"now") {
            other = true;
        } else if word.eq_ignore_ascii_case(b"force") {
            (other, force) = (true, true);
        } else if word.eq_ignore_ascii_case(b"abort") {
            abort = true;
        } else {
            c.error(SYNTAX_ERROR);
            return Outcome::Continue;
        }
    }
    if (abort && (nosave || save || other)) || (nosave && save) {
        c.error(SYNTAX_ERROR);
        return Outcome::Continue;
    }
    if abort {
        c.error(b"ERR No shutdown in progress.");
        return Outcome::Continue;
    }
    if c.state.scripts.any_busy() {
        // Only NOSAVE stops a busy script (saving would wait for it): as
        // Redis, any other SHUTDOWN is answered BUSY.
        if !nosave {
            c.error(c.state.scripts.busy_reply());
            return Outcome::Continue;
        }
    }
    if nosave {
        c.state.scripts.halt_all();
        c.state.scripts.wait_idle(std::time::Duration::from_secs(5));
    }
    let flags = crate::persistence::StopFlags { save, nosave, force };
    if !crate::persistence::prepare_for_stop(c.state, flags) {
        // A failed save keeps the server running, and says so.
        crate::log!(Warning, "Errors trying to shut down the server. Check the logs for more information.");
        c.error(b"ERR Errors trying to SHUTDOWN. Check logs.");
        return Outcome::Continue;
    }
    c.state.request_shutdown();
    Outcome::Close
}

/// `DEBUG RELOAD`: save the snapshot, empty the keyspace and load the file
/// back (`NOSAVE`: load the file there; `NOFLUSH`: keep what is there;
/// `MERGE`: a loaded key replaces one there instead of failing the load).
/// Every shard is held from the flush to the end of the load, so no client
/// sees the keyspace half loaded.
fn debug_reload<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (mut merge, mut flush, mut save) = (false, true, true);
    for i in 2..c.argc() {
        let opt = c.arg(i);
        if opt.eq_ignore_ascii_case(b"merge") {
            merge = true;
        } else if opt.eq_ignore_ascii_case(b"noflush") {
            flush = false;
        } else if opt.eq_ignore_ascii_case(b"nosave") {
            save = false;
        } else {
            return c.error(b"ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.");
        }
    }
    if save && crate::persistence::snapshot::save(c.state).is_err() {
        return c.error(b"ERR");
    }
    let state = c.state;
    let ks = &state.keyspace;
    let mut lock = ks.lock_all();
    let mut removed = 0;
    if flush {
        changes::db_flushed(state, None);
        for shard in lock.shards() {
            for d in shard.dbs().iter_mut() {
                removed += d.len();
                d.clear();
            }
        }
    }
    let loaded = crate::persistence::loading::load_with(
        state,
        &crate::persistence::snapshot_path(state),
        crate::persistence::loading::Load { merge, keep_expired: false, flush_functions: flush },
        super::install_loaded_functions,
        |db, entry| {
            let key = entry.key().to_vec();
            lock.shard_for(ks, &key).db(db).insert(entry).is_none()
        },
    );
    drop(lock);
    c.count_changes(removed as u64);
    if flush {
        state.blocking.dbs_changed(None);
    }
    match loaded {
        Ok(None) => {
            crate::log!(Warning, "Fatal error loading the DB: no such file. The keyspace is as it was.");
            c.error(b"ERR Error trying to load the RDB dump")
        }
        Ok(Some(_)) => {
            crate::log!(Warning, "DB reloaded by DEBUG RELOAD");
            c.ok()
        }
        Err(e) => {
            crate::log!(Warning, "{e}");
            c.error(b"ERR Error trying to load the RDB dump")
        }
    }
}

/// `MEMORY USAGE key [SAMPLES count]`: the key's share of the memory
/// estimate ([`charge`]), without marking the key accessed, as in Redis.
fn memory_usage<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() == 5 && c.arg(3).eq_ignore_ascii_case(b"samples") {
        if parse_i64(c.arg(4)).is_none() {
            return c.error(NOT_AN_INTEGER);
        }
    } else if c.argc() != 3 {
        return c.error(SYNTAX_ERROR);
    }
    let (db, key) = (c.session.db, c.arg(2));
    let size = {
        let mut shard = c.state.keyspace.lock_key(key);
        shard.db(db).find_stale(key).map(charge)
    };
    match size {
        Some(n) => c.reply(|s| s.integer(n as i64)),
        None => c.reply(|s| s.null()),
    }
}

/// `MEMORY STATS`: Redis's fields, in its order, from kvik's estimates.
fn memory_stats<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let data = info::dataset_bytes(c.state) as i64;
    let clients = info::client_bytes(c.state) as i64;
    let total = data + clients;
    let ks = &c.state.keyspace;
    let mut per_db = vec![(0i64, 0i64); ks.databases()];
    for i in 0..ks.shard_count() {
        let mut shard = ks.lock(i);
        for (n, d) in shard.dbs().iter().enumerate() {
            if let Some(slot) = per_db.get_mut(n) {
                slot.0 += d.len() as i64;
                slot.1 += d.expiring() as i64;
            }
        }
    }
    let keys: i64 = per_db.iter().map(|(k, _)| k).sum();
    let used_dbs: Vec<(usize, (i64, i64))> = per_db.into_iter().enumerate().filter(|(_, (k, _))| *k > 0).collect();
    let ratio = |a: i64, b: i64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    // Only what kvik measures: its data estimate and its clients' buffers,
    // which add up to `total.allocated` (INFO's used_memory), and zeros for
    // the buffers it has none of yet. Per key and in percent of the total,
    // as Redis relates them to the memory above startup (0 here).
    c.reply(|s| {
        let head: [(&str, i64); 7] = [
            ("total.allocated", total),
            ("startup.allocated", 0),
            ("replication.backlog", 0),
            ("clients.slaves", 0),
            ("clients.normal", clients),
            ("cluster.links", 0),
            ("aof.buffer", 0),
        ];
        s.map(head.len() + used_dbs.len() + 4);
        for (k, v) in head {
            s.bulk(k.as_bytes());
            s.integer(v);
        }
        for (n, (k, e)) in &used_dbs {
            s.bulk(format!("db.{n}").as_bytes());
            s.map(3);
            s.bulk(b"overhead.hashtable.main");
            s.integer(k * ENTRY_OVERHEAD as i64);
            s.bulk(b"overhead.hashtable.expires");
            s.integer(e * 8);
            s.bulk(b"overhead.hashtable.slot-to-keys");
            s.integer(0);
        }
        s.bulk(b"keys.count");
        s.integer(keys);
        s.bulk(b"keys.bytes-per-key");
        s.integer(if keys > 0 { total / keys } else { 0 });
        s.bulk(b"dataset.bytes");
        s.integer(data);
        s.bulk(b"dataset.percentage");
        s.double(ratio(data * 100, total));
    });
}

/// `MEMORY DOCTOR`: Redis's text for an almost empty server; otherwise a
/// report of what kvik can measure, its data estimate and its clients'
/// buffers against the process's resident memory, rather than Redis's
/// verdict, which rests on allocator statistics kvik does not have.
fn memory_doctor<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let used = info::used_memory(c.state) as u64;
    let text = if used < 5 * 1024 * 1024 {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n".to_string()
    } else {
        let rss = crate::housekeeping::heap_return::resident_bytes();
        let times = rss as f64 / used as f64;
        let mut report = format!(
            "Hi Sam, I can only compare the data ({}) and the client buffers ({}) with the memory the process \
             holds ({}), {times:.2} times as much. I cannot tell fragmentation or peaks apart yet.\n",
            info::human_bytes(info::dataset_bytes(c.state) as u64),
            info::human_bytes(info::client_bytes(c.state) as u64),
            info::human_bytes(rss)
        );
        if times > 1.5 {
            report.push_str(
                "\n * High resident memory for the data: memory freed by deletions may still be held by the allocator. \
                 MEMORY PURGE gives back what it can.\n",
            );
        }
        report
    };
    c.reply(|s| s.verbatim(b"txt", text.as_bytes()));
}

/// `SLOWLOG GET [count]`: newest first, 10 by default, -1 for all.
fn slowlog_get<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let count = if c.argc() == 3 {
        match parse_i64(c.arg(2)) {
            Some(n) if n >= -1 => n,
            _ => return c.error(b"ERR count should be greater than or equal to -1"),
        }
    } else {
        10
    };
    let entries: Vec<_> = {
        let log = c.state.stats.slowlog();
        let take = if count < 0 { usize::MAX } else { count as usize };
        log.entries.iter().take(take).cloned().collect()
    };
    c.reply(|s| {
        s.array(entries.len());
        for e in &entries {
            s.array(6);
            s.integer(e.id as i64);
            s.integer(e.time);
            s.integer(e.usec as i64);
            s.array(e.args.len());
            for a in &e.args {
                s.bulk(a);
            }
            s.bulk(e.addr.as_bytes());
            s.bulk(&e.name);
        }
    });
}

/// `DEBUG SLEEP seconds`, `DEBUG SET-ACTIVE-EXPIRE 0|1`, `DEBUG OBJECT key`,
/// `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]`.
fn debug<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let sub = c.arg(1).to_ascii_lowercase();
    match sub.as_slice() {
        b"reload" => debug_reload(c),
        b"sleep" if c.argc() == 3 => {
            let secs = std::str::from_utf8(c.arg(2)).ok().and_then(|s| s.trim().parse::<f64>().ok()).unwrap_or(0.0);
            if secs.is_finite() && secs > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(secs.min(3600.0)));
            }
            c.ok();
        }
        b"set-active-expire" if c.argc() == 3 => {
            let on = parse_i64(c.arg(2)).unwrap_or(0) != 0;
            c.state.stats.active_expire.store(on, Ordering::Relaxed);
            c.ok();
        }
        b"object" if c.argc() == 3 => {
            let (db, key) = (c.session.db, c.arg(2));
            let now = now_ms();
            let compress = c.state.rdb_compression();
            let found = {
                let mut shard = c.state.keyspace.lock_key(key);
                shard.db(db).inspect(key, now).map(|e| {
                    let value = e.value();
                    let serialized = kvik_persist::payload::serialized_len(value, compress);
                    (value.encoding(), serialized, e.meta())
                })
            };
            match found {
                Some((encoding, len, meta)) => {
                    // The raw 24-bit access clock and its LRU reading, whatever the policy.
                    let (lru, idle) = (meta.clock, meta.idle_seconds(now));
                    let text = format!(
                        "Value at:0x0 refcount:1 encoding:{encoding} serializedlength:{len} lru:{lru} lru_seconds_idle:{idle}",
                    );
                    c.reply(|s| s.simple(text.as_bytes()));
                }
                None => c.error(b"ERR no such key"),
            }
        }
        b"help" => super::help(c, DEBUG_HELP),
        _ => {
            let mut msg = b"ERR unknown subcommand '".to_vec();
            msg.extend_from_slice(super::until_nul(c.arg(1), 128));
            msg.extend_from_slice(b"'. Try DEBUG HELP.");
            c.error(&msg);
        }
    }
}

/// `LATENCY LATEST`: each event's newest sample and its worst latency ever.
fn latency_latest<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let rows: Vec<(&'static str, crate::metrics::latency::Sample, u64)> =
        c.state.stats.latency().events().map(|(name, series)| (name, series.latest(), series.max)).collect();
    c.reply(|s| {
        s.array(rows.len());
        for (name, latest, max) in &rows {
            s.array(4);
            s.bulk(name.as_bytes());
            s.integer(latest.time);
            s.integer(latest.latency as i64);
            s.integer(*max as i64);
        }
    });
}

/// `LATENCY HISTORY event`: the event's samples, oldest first, as
/// `[unix time, milliseconds]` pairs; none for an event never recorded.
fn latency_history<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let samples: Vec<crate::metrics::latency::Sample> =
        c.state.stats.latency().find(c.arg(2)).map(|(_, series)| series.samples().collect()).unwrap_or_default();
    c.reply(|s| {
        s.array(samples.len());
        for sample in &samples {
            s.array(2);
            s.integer(sample.time);
            s.integer(sample.latency as i64);
        }
    });
}

/// `LATENCY GRAPH event`: Redis's ASCII graph of the event's samples.
fn latency_graph<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let now = unix_micros() / 1_000_000;
    let graph = c.state.stats.latency().find(c.arg(2)).map(|(name, series)| series.graph(name, now));
    match graph {
        Some(text) => c.reply(|s| s.verbatim(b"txt", text.as_bytes())),
        None => {
            let mut msg = b"ERR No samples available for event '".to_vec();
            msg.extend_from_slice(super::until_nul(c.arg(2), usize::MAX));
            msg.push(b'\'');
            c.error(&msg);
        }
    }
}

/// `LATENCY DOCTOR`: Redis's report, from the recorded events and the
/// settings it advises on.
fn latency_doctor<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (threshold_ms, slowlog_slower_than) = {
        let config = c.state.config();
        (config.int("latency-monitor-threshold"), config.int("slowlog-log-slower-than"))
    };
    let inputs = crate::metrics::latency::DoctorInputs {
        threshold_ms,
        slowlog_slower_than,
        anon_huge_pages: crate::metrics::latency::anon_huge_pages(),
        now: unix_micros() / 1_000_000,
    };
    let report = crate::metrics::latency::doctor(&c.state.stats.latency(), inputs);
    c.reply(|s| s.verbatim(b"txt", report.as_bytes()));
}

/// `LATENCY HISTOGRAM [command ...]`: per command, the calls whose
/// duration was counted (`latency-tracking`) and their cumulative
/// distribution at powers of two of microseconds (see
/// [`crate::metrics::histogram`]; Redis's bounds are powers of two of 1.024 µs, so
/// where it reads 33, 66, 132 … kvik reads 32, 64, 128 …). A container
/// name stands for its subcommands; commands with no counted call are left out.
fn latency_histogram<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let stats = &c.state.stats;
    let mut specs: Vec<&'static CommandSpec> = Vec::new();
    if c.argc() == 2 {
        for spec in COMMANDS {
            specs.push(spec);
            specs.extend(spec.subcommands);
        }
    } else {
        for i in 2..c.argc() {
            let arg = c.arg(i);
            let Some(spec) = super::command::find(arg) else { continue };
            if spec.subcommands.is_empty() {
                specs.push(spec);
            } else {
                specs.extend(spec.subcommands);
            }
        }
    }
    let mut rows = Vec::new();
    for spec in specs {
        let name = spec.name;
        let stat = stats.calls(spec.id);
        let calls = stat.tracked();
        // A command named twice is listed twice, as Redis lists it.
        if calls > 0 {
            rows.push((name, calls, stat.cumulative()));
        }
    }
    c.reply(|s| {
        s.map(rows.len());
        for (name, calls, buckets) in &rows {
            s.bulk(name.as_bytes());
            s.map(2);
            s.bulk(b"calls");
            s.integer(*calls as i64);
            s.bulk(b"histogram_usec");
            s.map(buckets.len());
            for (bound, count) in buckets {
                s.integer(*bound as i64);
                s.integer(*count as i64);
            }
        }
    });
}

/// The DEBUG subcommands kvik has.
const DEBUG_HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "OBJECT <key>",
    "    Show low level info about the `key` and associated value.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
];

/// Redis 7.0's `MEMORY HELP` text.
const MEMORY_HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
];

/// Redis 7.0's `SLOWLOG HELP` text.
const SLOWLOG_HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
];

/// Redis 7.0's `LATENCY HELP` text.
const LATENCY_HELP: &[&str] = &[
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
];
