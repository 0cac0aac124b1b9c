//! What a command adds to the journal ([`super::journal`]): its *effect*,
//! the commands that redo what it did, as Redis propagates it.
//!
//! Most commands redo themselves: the request goes in as the client sent
//! it. The ones whose outcome depends on the moment or on chance say
//! instead what they did, through [`crate::commands::Ctx::propagate`]:
//! relative times become absolute (`EXPIRE` → `PEXPIREAT`, `SET … EX` →
//! `SET … PXAT`), chosen members become named ones (`SPOP` → `SREM`), a
//! blocking pop becomes the pop that served it, `INCRBYFLOAT` becomes the
//! `SET` of its result. Keys the keyspace removes by itself (expired,
//! evicted) go in as `DEL`.
//!
//! The state lives in the client's [`Effects`]: a command's first change
//! takes the record's place under its shard locks, its operations collect
//! as it runs, and the record is published when the command is done. The
//! commands `EXEC` runs share one record, written `MULTI` … `EXEC` when it
//! holds more than one operation (a transaction of one write is that
//! write, as in Redis 7.0).

use crate::keyspace::events::{Pending, ServerEvent};
use crate::state::ServerState;

use crate::registries::journal;

/// A client's record in the making.
#[derive(Debug, Default)]
pub struct Effects {
    /// The record's place in the order of changes (0: no change yet).
    seq: u64,
    /// Its operations ([`journal::put_op`]).
    ops: Vec<u8>,
    /// How many.
    count: usize,
    /// The running command changed a key.
    changed: bool,
    /// The running command said what it propagates.
    explicit: bool,
    /// A script runs that may still be started over: its record's place
    /// is taken when it ends ([`Effects::settle_place`]), not at its first
    /// change (see [`Effects::hold_place`]).
    holding: bool,
    /// The server whose journal the record goes to, for [`Drop`].
    owner: Option<std::sync::Weak<ServerState>>,
}

impl Drop for Effects {
    /// A command that took a place and never finished (it panicked, and
    /// its connection's task ended) still publishes what it had: the
    /// writer waits for every place, and with it every reply under
    /// `appendfsync always`.
    fn drop(&mut self) {
        if self.seq != 0 && self.seq != HELD_PLACE {
            if let Some(state) = self.owner.as_ref().and_then(std::sync::Weak::upgrade) {
                self.publish(&state);
            }
        }
    }
}

/// Largest buffer an idle client keeps for its next record.
const KEEP_BYTES: usize = 16 * 1024;

/// `seq` of a record that has changes but whose place is held back until
/// the script making them ends.
const HELD_PLACE: u64 = u64::MAX;

impl Effects {
    /// The running command changes a key: the record takes its place now,
    /// under the shard locks of that change.
    #[inline]
    pub fn changed(&mut self, state: &ServerState) {
        self.take_place(state);
        self.changed = true;
    }

    /// The running command propagates `args` run in database `db` (in
    /// place of its request; called as often as it has operations).
    pub fn propagate(&mut self, state: &ServerState, db: usize, args: &[&[u8]]) {
        self.take_place(state);
        self.changed = true;
        self.explicit = true;
        journal::put_op(&mut self.ops, db, args);
        self.count += 1;
    }

    /// Whether a change of the running command (or `EXEC`) took a place:
    /// the one test every command pays while the journal is off.
    #[inline]
    pub fn pending(&self) -> bool {
        self.seq != 0
    }

    fn take_place(&mut self, state: &ServerState) {
        if self.seq == 0 && self.holding {
            self.seq = HELD_PLACE;
        } else if self.seq == 0 {
            self.seq = state.keyspace.next_change();
            if self.owner.is_none() {
                self.owner = state.shared().map(|s| std::sync::Arc::downgrade(&s));
            }
        }
    }

    /// The command of `argc` arguments (`arg(i)` each), run in database
    /// `db`, is done: what it changed goes into the record (its request,
    /// unless it said otherwise).
    #[inline(never)]
    pub fn command_done<'a>(&mut self, argc: usize, arg: impl Fn(usize) -> &'a [u8], db: usize) {
        if std::mem::take(&mut self.changed) && !std::mem::take(&mut self.explicit) {
            let args: crate::inline_list::InlineList<&[u8], 8> = (0..argc).map(arg).collect();
            journal::put_op(&mut self.ops, db, &args);
            self.count += 1;
        }
        self.explicit = false;
    }

    /// A script that may be started over begins (true) or has ended
    /// (false). While it runs, its changes' record takes no place in the
    /// order of changes: a script that reserves more shards as it goes
    /// must come, in that order, after every change made on them before
    /// it had them, so its place is taken at its end
    /// ([`Effects::settle_place`]), with every shard it used still
    /// reserved. An abandoned run's record is dropped
    /// ([`Effects::discard`]) without ever having had a place.
    pub fn hold_place(&mut self, on: bool) {
        debug_assert!(!on || self.seq == 0, "a held record began after a change");
        self.holding = on;
    }

    /// Take the place of a record held by [`Effects::hold_place`], while
    /// the script's shards are still reserved.
    pub fn settle_place(&mut self, state: &ServerState) {
        self.holding = false;
        if self.seq == HELD_PLACE {
            self.seq = 0;
            self.take_place(state);
        }
    }

    /// Forget what a held record gathered: the run that made it is being
    /// undone.
    pub fn discard(&mut self) {
        debug_assert!(self.seq == 0 || self.seq == HELD_PLACE, "a record with a place is discarded");
        self.seq = 0;
        self.ops.clear();
        self.count = 0;
        self.changed = false;
        self.explicit = false;
    }

    /// Where the record's operations end now, for [`Effects::forget_since`].
    pub fn mark(&self) -> (usize, usize) {
        (self.ops.len(), self.count)
    }

    /// Forget the operations added since `mark` (a script's writes while
    /// it has turned the append-only file off with `redis.set_repl`).
    pub fn forget_since(&mut self, mark: (usize, usize)) {
        self.ops.truncate(mark.0);
        self.count = mark.1;
    }

    /// Forget the record's operations but keep its place, to be published
    /// empty (a script stopped by `SHUTDOWN NOSAVE`: the writer still
    /// waits for every place handed out).
    pub fn drop_operations(&mut self) {
        self.ops.clear();
        self.count = 0;
        self.changed = false;
        self.explicit = false;
    }

    /// Publish the record, if a change took a place for it.
    #[inline(never)]
    pub fn publish(&mut self, state: &ServerState) {
        if self.seq == HELD_PLACE {
            // Reached only if a held script ended without settling.
            self.settle_place(state);
        }
        if self.seq == 0 {
            return;
        }
        let seq = std::mem::take(&mut self.seq);
        if self.count > 1 {
            let mut wrapped = Vec::with_capacity(self.ops.len() + 64);
            let (first_db, last_db) = bounds(&self.ops);
            journal::put_op(&mut wrapped, first_db, &[b"MULTI"]);
            wrapped.extend_from_slice(&self.ops);
            journal::put_op(&mut wrapped, last_db, &[b"EXEC"]);
            state.journal.publish(seq, &wrapped);
        } else {
            state.journal.publish(seq, &self.ops);
        }
        self.ops.clear();
        self.count = 0;
        if self.ops.capacity() > KEEP_BYTES {
            self.ops = Vec::new();
        }
    }
}

/// The databases of a record's first and last operations.
fn bounds(ops: &[u8]) -> (usize, usize) {
    let mut all = journal::ops(ops).map(|(db, _)| db);
    let first = all.next().unwrap_or(0);
    (first, all.last().unwrap_or(first))
}

/// Publish a key the keyspace removed by itself, as the `DEL` that redoes
/// it, at the place it took when it was removed.
pub fn removed_by_server(state: &ServerState, event: &Pending) {
    if event.seq == 0 || !matches!(event.kind, ServerEvent::Expired | ServerEvent::Evicted) {
        return;
    }
    let mut op = Vec::with_capacity(event.key.len() + 32);
    journal::put_op(&mut op, event.db, &[b"DEL", &event.key]);
    state.journal.publish(event.seq, &op);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::Request;
    use crate::registries::journal::Hold;
    use kvik_protocol::CommandArgs;

    fn request(words: &[&str]) -> CommandArgs {
        let mut args = CommandArgs::new();
        for w in words {
            args.push_owned(w.as_bytes());
        }
        args
    }

    fn done(fx: &mut Effects, args: &CommandArgs, db: usize) {
        let req = Request::new(args, &[]);
        fx.command_done(req.argc(), |i| req.arg(i), db);
    }

    fn published(state: &ServerState) -> Vec<(u64, Vec<(usize, String)>)> {
        let (mut data, mut index) = (Vec::new(), Vec::new());
        state.journal.take(&mut data, &mut index, std::time::Duration::ZERO);
        index
            .iter()
            .map(|e| {
                let ops = journal::ops(&data[e.start..e.end])
                    .map(|(db, op)| (db, String::from_utf8_lossy(op).replace("\r\n", " ")))
                    .collect();
                (e.seq, ops)
            })
            .collect()
    }

    #[test]
    fn a_command_redoes_itself_unless_it_says_otherwise() {
        let state = ServerState::default();
        state.journal.start(state.keyspace.changes_taken() + 1, Hold::Nothing);
        let mut fx = Effects::default();
        let set = request(&["set", "k", "v"]);
        fx.changed(&state);
        done(&mut fx, &set, 3);
        fx.publish(&state);
        let spop = request(&["SPOP", "s"]);
        fx.propagate(&state, 0, &[b"SREM", b"s", b"m"]);
        done(&mut fx, &spop, 0);
        fx.publish(&state);
        fx.publish(&state);
        let got = published(&state);
        assert_eq!(got.len(), 2, "one record per change, none without");
        assert_eq!(got[0].1, [(3, "*3 $3 set $1 k $1 v ".to_string())]);
        assert_eq!(got[1].1, [(0, "*3 $4 SREM $1 s $1 m ".to_string())]);
        assert!(got[0].0 < got[1].0);
    }

    #[test]
    fn several_operations_are_one_transaction() {
        let state = ServerState::default();
        state.journal.start(state.keyspace.changes_taken() + 1, Hold::Nothing);
        let mut fx = Effects::default();
        let (a, b) = (request(&["INCR", "a"]), request(&["INCR", "b"]));
        fx.changed(&state);
        done(&mut fx, &a, 0);
        done(&mut fx, &request(&["GET", "a"]), 0);
        fx.changed(&state);
        done(&mut fx, &b, 2);
        fx.publish(&state);
        let got = published(&state);
        let ops: Vec<(usize, &str)> = got[0].1.iter().map(|(db, op)| (*db, op.as_str())).collect();
        assert_eq!(
            ops,
            [(0, "*1 $5 MULTI "), (0, "*2 $4 INCR $1 a "), (2, "*2 $4 INCR $1 b "), (2, "*1 $4 EXEC ")],
            "a read adds nothing"
        );
    }
}
