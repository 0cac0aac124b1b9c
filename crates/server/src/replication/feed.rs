//! The replication feed: one thread that takes the journal's records, puts
//! them back in the order of their places, and appends them to the
//! replication stream, each operation after the `SELECT` of its database
//! when the stream is in another one.
//!
//! It starts with the first replica (at the moment of its snapshot, see
//! [`start`]) and then runs for the life of the server, as Redis keeps its
//! backlog: a replica that reconnects resumes from it. While replicas
//! have a place in the stream it appends a `PING` every
//! `repl-ping-replica-period` seconds, as Redis does, so that replicas
//! see the link alive and their offsets move, and a `REPLCONF GETACK *`
//! when a client in `WAIT` asks for the replicas' offsets.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crate::config::parse_output_limits;
use crate::registries::journal::{self, Entry, InOrder};
use crate::state::ServerState;

/// How long a round waits for a first record.
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// The kinds of keys the keyspace removes by itself that the stream tells
/// of, as `DEL`s.
const REMOVALS: u8 =
    crate::keyspace::events::ServerEvent::Expired.bit() | crate::keyspace::events::ServerEvent::Evicted.bit();

/// At a snapshot's moment (every shard held; `cut` the last place the
/// snapshot holds): record changes for the stream from the next place on,
/// if that is not done yet. The feed thread itself is started by
/// [`ensure_running`], after the shards are let go.
pub fn start(state: &ServerState, cut: u64) {
    if !state.journal.feed_on() {
        state.journal.start_feed(cut + 1);
        crate::keyspace::events::adjust(0, REMOVALS);
    }
}

/// Start the feed thread unless it runs.
pub fn ensure_running(state: &Arc<ServerState>) -> io::Result<()> {
    if state.replication.feeding.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    let weak = Arc::downgrade(state);
    let spawned = std::thread::Builder::new().name("kvik-repl-feed".into()).spawn(move || run(weak));
    if let Err(e) = spawned {
        state.replication.feeding.store(false, Ordering::Release);
        return Err(e);
    }
    Ok(())
}

/// The feed's state between rounds.
struct Feed {
    order: InOrder,
    /// The database the stream's commands run in now (`None`: a `SELECT`
    /// goes first).
    db: Option<usize>,
    /// This round's bytes.
    out: Vec<u8>,
    last_ping: Instant,
}

fn run(state: Weak<ServerState>) {
    let Some(first) = state.upgrade().map(|s| s.journal.feed_first()) else { return };
    let mut feed =
        Feed { order: InOrder::new(first), db: None, out: Vec::with_capacity(64 * 1024), last_ping: Instant::now() };
    let (mut data, mut index) = (Vec::new(), Vec::<Entry>::new());
    while let Some(state) = state.upgrade() {
        if state.shutting_down() || !state.journal.take_feed(&mut data, &mut index, IDLE_WAIT) {
            break;
        }
        round(&state, &mut feed, &data, &mut index);
    }
}

/// Append this round's records, as far as their places are whole.
fn round(state: &ServerState, feed: &mut Feed, data: &[u8], index: &mut [Entry]) {
    let config = state.config();
    let backlog_size = usize::try_from(config.int("repl-backlog-size")).unwrap_or(usize::MAX);
    let limit = parse_output_limits(config.get("client-output-buffer-limit"))[1];
    let ping_period = Duration::from_secs(u64::try_from(config.int("repl-ping-replica-period")).unwrap_or(10));
    drop(config);
    let repl = &state.replication;
    let next_before = feed.order.next;
    let mut order = std::mem::take(&mut feed.order);
    order.put(data, index, |seq, record| {
        if repl.placing_before(seq) {
            // A replica takes its place before this record, after what is
            // gathered, and its stream starts with a SELECT.
            repl.append(&feed.out, backlog_size, limit);
            feed.out.clear();
            repl.reached(seq);
        }
        if repl.take_select_again() {
            feed.db = None;
        }
        if repl.streams_place(seq) {
            emit(&mut feed.out, &mut feed.db, record);
        } else {
            // A replica streams its master's bytes, which name their
            // databases themselves.
            feed.db = None;
        }
    });
    feed.order = order;
    repl.append(&feed.out, backlog_size, limit);
    feed.out.clear();
    if feed.order.next != next_before {
        // The end of the last change: what the feed appends of its own
        // afterwards (PING, GETACK) is no part of any change.
        repl.fed_offset.store(repl.offset(), Ordering::Release);
        repl.places_done.store(feed.order.next - 1, Ordering::Release);
    }
    if repl.placing_before(feed.order.next) {
        repl.reached(feed.order.next);
    }
    if repl.take_select_again() {
        feed.db = None;
    }
    // While clients are paused, as in Redis, the stream does not grow by
    // itself: a FAILOVER waits for a replica to reach its end.
    let paused = state.pause.mode().is_some();
    if repl.streaming() && !repl.is_replica() && !paused && feed.last_ping.elapsed() >= ping_period {
        kvik_persist::aof::commands::put(&mut feed.out, &[b"PING"]);
        repl.append(&feed.out, backlog_size, limit);
        feed.out.clear();
        feed.last_ping = Instant::now();
    }
    if !paused && repl.getack_wanted.swap(false, Ordering::AcqRel) && repl.streaming() && !repl.is_replica() {
        kvik_persist::aof::commands::put(&mut feed.out, &[b"REPLCONF", b"GETACK", b"*"]);
        repl.append(&feed.out, backlog_size, limit);
        feed.out.clear();
    }
    super::acks::serve(state);
}

/// Append one record's operations to `out`, each after the `SELECT` of
/// its database when the stream is in another one.
fn emit(out: &mut Vec<u8>, db: &mut Option<usize>, record: &[u8]) {
    for (op_db, op) in journal::ops(record) {
        if *db != Some(op_db) {
            let number = op_db.to_string();
            kvik_persist::aof::commands::put(out, &[b"SELECT", number.as_bytes()]);
            *db = Some(op_db);
        }
        out.extend_from_slice(op);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_follow_the_select_of_their_database() {
        let mut record = Vec::new();
        journal::put_op(&mut record, 0, &[b"SET", b"a", b"1"]);
        journal::put_op(&mut record, 0, &[b"DEL", b"b"]);
        journal::put_op(&mut record, 3, &[b"DEL", b"c"]);
        let (mut out, mut db) = (Vec::new(), None);
        emit(&mut out, &mut db, &record);
        let text = String::from_utf8_lossy(&out).replace("\r\n", " ");
        assert_eq!(text, "*2 $6 SELECT $1 0 *3 $3 SET $1 a $1 1 *2 $3 DEL $1 b *2 $6 SELECT $1 3 *2 $3 DEL $1 c ");
        assert_eq!(db, Some(3));
    }
}
