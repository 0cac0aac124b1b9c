//! The append-only file's writer: one thread that takes the journal's
//! records, puts them back in the order of their places, writes them to
//! the incremental file and flushes it to disk as `appendfsync` says.
//!
//! Each round takes everything published since the last one, so while a
//! flush to disk runs the next group gathers: with `appendfsync always`
//! one `fsync` commits the writes of every client that sent one meanwhile,
//! and the cost of a flush is shared by as many writes as arrived during
//! the previous one.
//!
//! A record whose place is not the next to write waits (in the writer's
//! [`InOrder`]) until the places before it arrive: a command published it
//! while another, on another thread, that took an earlier place had not
//! yet.

use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::registries::append_only::{Fsync, Rotation};
use crate::registries::journal::{self, Entry, InOrder};
use crate::state::ServerState;

/// How long a round waits for a first record before looking at the clock
/// (the once-a-second flush, a stop).
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// With `everysec` and `no`, replies do not wait for the writer, which
/// writes what arrived every so often rather than being woken by each
/// record: the longest a change waits in memory before it reaches the
/// kernel.
const WRITE_INTERVAL: Duration = Duration::from_millis(1);

/// `everysec`'s period.
const SYNC_PERIOD: Duration = Duration::from_secs(1);

/// Start the writer thread on `file`.
/// Start the writer thread on `file` (of RESPB frames when `respb`).
pub fn spawn(state: Arc<ServerState>, file: File, respb: bool) -> io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name("kvik-aof".into()).spawn(move || {
        let mut writer = Writer::new(file, &state);
        writer.respb = respb;
        writer.run(&state)
    })
}

/// The writer's state.
struct Writer {
    file: File,
    /// The records put back in order; its `next` is the next place to write.
    order: InOrder,
    /// Bytes to write this round.
    out: Vec<u8>,
    /// Written to the kernel and not yet flushed to disk.
    unsynced: bool,
    last_sync: Instant,
    /// The database the file's commands run in now (`None`: not known, a
    /// `SELECT` goes first).
    db: Option<usize>,
    /// The Unix second of the last `#TS:` annotation.
    last_ts: i64,
    /// Sync requests answered.
    syncs_answered: u64,
    /// The incremental file to move to after a rewrite's moment.
    rotation: Option<Rotation>,
    /// The file holds RESPB frames (`aof-format respb`): each command is
    /// encoded again, as a RESPB client would send it.
    respb: bool,
}

impl Writer {
    fn new(file: File, state: &ServerState) -> Writer {
        Writer {
            file,
            order: InOrder::new(state.journal.first()),
            out: Vec::with_capacity(64 * 1024),
            unsynced: false,
            last_sync: Instant::now(),
            db: None,
            last_ts: 0,
            syncs_answered: 0,
            rotation: None,
            respb: false,
        }
    }

    fn run(mut self, state: &ServerState) {
        let aof = &state.append_only;
        let (mut data, mut index) = (Vec::new(), Vec::<Entry>::new());
        loop {
            let closing = aof.closing.load(Ordering::Relaxed);
            let policy = aof.fsync();
            let wait = if closing || policy != Fsync::Always { Duration::ZERO } else { IDLE_WAIT };
            if wait.is_zero() && !closing {
                std::thread::sleep(WRITE_INTERVAL);
            }
            state.journal.take(&mut data, &mut index, wait);
            if self.rotation.is_none() {
                // Taken after the records: a record placed after a
                // rewrite's moment was published after the move was set.
                self.rotation = aof.rotation.lock().unwrap_or_else(|p| p.into_inner()).take();
            }
            let before = self.order.next;
            self.order(state, &data, &mut index);
            if !self.out.is_empty() {
                self.write(state, policy);
            }
            let moved = self.order.next != before;
            let requests = aof.sync_requests.load(Ordering::Relaxed);
            let asked = requests != self.syncs_answered;
            let due = match policy {
                // Places with nothing to write still settle their replies.
                Fsync::Always => self.unsynced || moved,
                Fsync::Everysec => self.unsynced && self.last_sync.elapsed() >= SYNC_PERIOD,
                Fsync::No => false,
            };
            if due || asked || closing {
                self.sync(state, policy);
                self.syncs_answered = requests;
            }
            if closing && index.is_empty() {
                if self.order.held() > 0 {
                    crate::log!(Warning, "AOF writer stopping with {} changes out of order", self.order.held());
                    for bytes in self.order.take_held() {
                        self.emit(state, &bytes);
                    }
                    self.write(state, policy);
                    self.sync(state, policy);
                }
                return;
            }
        }
    }

    /// Turn this round's records, with those held, into the bytes to
    /// write, in the order of places, as far as the places are whole.
    fn order(&mut self, state: &ServerState, data: &[u8], index: &mut [Entry]) {
        let mut order = std::mem::take(&mut self.order);
        order.put(data, index, |seq, bytes| self.place(state, seq, bytes));
        self.order = order;
    }

    /// Write the record of place `seq`, the next one, into the file it
    /// belongs to: after a rewrite's moment, the new incremental file.
    fn place(&mut self, state: &ServerState, seq: u64, record: &[u8]) {
        if self.rotation.as_ref().is_some_and(|r| seq > r.after_seq) {
            self.rotate(state);
        }
        self.emit(state, record);
    }

    /// Finish the old incremental file (written and flushed to disk) and
    /// go on in the new one, whose first command selects its database.
    fn rotate(&mut self, state: &ServerState) {
        let Some(rotation) = self.rotation.take() else { return };
        let policy = state.append_only.fsync();
        while !self.out.is_empty() {
            self.write(state, policy);
        }
        if let Err(e) = self.file.sync_data() {
            crate::log!(Warning, "Can't flush the old AOF incr file to disk: {e}");
        }
        self.file = rotation.file;
        self.respb = rotation.respb;
        self.db = None;
    }

    /// Append one record's operations, each after the `SELECT` of its
    /// database when the file is in another one.
    fn emit(&mut self, state: &ServerState, record: &[u8]) {
        if record.is_empty() {
            return;
        }
        // RESPB has no annotation line for the time.
        if !self.respb && state.append_only.timestamps.load(Ordering::Relaxed) {
            let now = crate::persistence::snapshot::unix_seconds();
            if now > self.last_ts {
                self.out.extend_from_slice(format!("#TS:{now}\r\n").as_bytes());
                self.last_ts = now;
            }
        }
        for (db, op) in journal::ops(record) {
            if self.db != Some(db) {
                let number = db.to_string();
                let select: [&[u8]; 2] = [b"SELECT", number.as_bytes()];
                if self.respb {
                    kvik_protocol::respb::encode_request(&select, 0, &mut self.out);
                } else {
                    kvik_persist::aof::commands::put(&mut self.out, &select);
                }
                self.db = Some(db);
            }
            if self.respb {
                self.put_respb(op);
            } else {
                self.out.extend_from_slice(op);
            }
        }
    }

    /// Append the command `op` (RESP, as the journal holds it) as one
    /// RESPB frame on channel 0.
    fn put_respb(&mut self, op: &[u8]) {
        let out = &mut self.out;
        // The journal's own bytes: one whole command, which reads back.
        let _ = kvik_persist::aof::commands::read::<()>(op, |c| {
            kvik_protocol::respb::encode_request(c.args, 0, out);
            Ok(())
        });
    }

    /// Write this round's bytes. A failed write is retried next round
    /// with what was not written; meanwhile writes are refused with
    /// `-MISCONF Errors writing to the AOF file` (see
    /// `persistence::writes_refused`). With `always` the server cannot keep
    /// its promise and stops, as Redis does.
    fn write(&mut self, state: &ServerState, policy: Fsync) {
        let mut done = 0;
        while done < self.out.len() {
            match self.file.write(&self.out[done..]) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.failed(state, policy, &format!("Error writing to the AOF file: {e}"), &e);
                    break;
                }
            }
        }
        state.append_only.current_size.fetch_add(done as u64, Ordering::Relaxed);
        self.out.drain(..done);
        self.unsynced |= done > 0;
        if self.out.is_empty() {
            if !state.append_only.write_ok.swap(true, Ordering::Relaxed) {
                crate::log!(Warning, "AOF write error looks solved, Redis can write again.");
            }
        } else {
            // Retry soon; nothing is acknowledged past what was written.
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Flush the file to disk.
    fn sync(&mut self, state: &ServerState, policy: Fsync) {
        if !self.unsynced || !self.out.is_empty() {
            if self.out.is_empty() {
                state.journal.synced_to(self.order.next - 1);
            }
            return;
        }
        let started = Instant::now();
        match self.file.sync_data() {
            Ok(()) => {
                self.unsynced = false;
                self.last_sync = Instant::now();
                state.journal.synced_to(self.order.next - 1);
                if policy == Fsync::Everysec && started.elapsed() > 2 * SYNC_PERIOD {
                    state.append_only.delayed_fsync.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(e) => self.failed(
                state,
                policy,
                &format!(
                    "Can't persist AOF for fsync error when the AOF fsync policy is '{}': {e}",
                    policy_name(policy)
                ),
                &e,
            ),
        }
    }

    fn failed(&mut self, state: &ServerState, policy: Fsync, what: &str, error: &io::Error) {
        // The system's words alone, as Redis's strerror gives them.
        let text = error.to_string();
        let reason = text.split(" (os error").next().unwrap_or(&text).to_string();
        *state.append_only.last_error.lock().unwrap_or_else(|p| p.into_inner()) = reason;
        state.append_only.write_ok.store(false, Ordering::Relaxed);
        crate::log!(Warning, "{what}");
        if policy == Fsync::Always {
            crate::log!(
                Warning,
                "Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting..."
            );
            std::process::exit(1);
        }
    }
}

fn policy_name(policy: Fsync) -> &'static str {
    match policy {
        Fsync::Always => "always",
        Fsync::Everysec => "everysec",
        Fsync::No => "no",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registries::journal::{put_op, Hold};

    #[test]
    fn records_are_written_in_the_order_of_their_places_with_selects() {
        let state = ServerState::default();
        state.journal.start(1, Hold::Synced);
        let path = std::env::temp_dir().join(format!("kvik-aof-writer-{}.aof", std::process::id()));
        let mut w = Writer::new(File::create(&path).expect("file"), &state);
        let record = |db, word: &[u8]| {
            let mut out = Vec::new();
            put_op(&mut out, db, &[word]);
            out
        };
        // Place 2 arrives first and waits for 1; 4 waits for 3 into the
        // next round; an empty record settles its place.
        let (a, b, d) = (record(0, b"A"), record(0, b"B"), record(5, b"D"));
        let data = [&b[..], &d[..], &a[..]].concat();
        let mut index = vec![
            Entry { seq: 2, start: 0, end: b.len() },
            Entry { seq: 4, start: b.len(), end: b.len() + d.len() },
            Entry { seq: 1, start: b.len() + d.len(), end: data.len() },
        ];
        w.order(&state, &data, &mut index);
        assert_eq!(w.order.next, 3, "places 1 and 2 are whole; 4 waits");
        assert_eq!(w.out, b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*1\r\n$1\r\nA\r\n*1\r\n$1\r\nB\r\n");
        w.out.clear();
        w.order(&state, &[], &mut [Entry { seq: 3, start: 0, end: 0 }]);
        assert_eq!(w.order.next, 5);
        assert_eq!(w.out, b"*2\r\n$6\r\nSELECT\r\n$1\r\n5\r\n*1\r\n$1\r\nD\r\n");
        w.write(&state, Fsync::Always);
        assert!(w.out.is_empty() && w.unsynced);
        let _ = std::fs::remove_file(&path);
    }
}
