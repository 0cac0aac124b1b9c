//! The server as a script's `redis.call` sees it, and the reservation the
//! script runs under.
//!
//! Each call runs its command on the caller's session, in RESP2, its reply
//! captured and handed to Lua as a value. Before it runs, the call's keys
//! (found by the command table's key specs) must lie in shards the script
//! has reserved. A shard it has not is added without waiting
//! ([`Reservation::try_extend`]); when another transaction holds it, the
//! run is *abandoned*: the call is not made, the script is stopped, and
//! [`ScriptHost::abandon`] puts back what the run changed (its
//! [`UndoLog`]) so the caller can start it over with a reservation that
//! includes the shard, taken in ascending order. docs/scripting.md tells
//! why this can neither deadlock nor show a half-done script.
//!
//! While a run may still be abandoned, what its changes would announce
//! (`WATCH`, tracking, keyspace events), its record for the append-only
//! file and its `redis.log` lines are held back; [`ScriptHost::finish`]
//! releases them when the run stands. Once the script holds every shard
//! nothing can make it start over, and the holding ends early.

use kvik_protocol::commands::{id, CommandFlags, CommandSpec, KeySpecFlags};
use kvik_protocol::resp::reply_parser::{parse_reply, ReplyLimits};
use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::{CommandArgs, ReplySink};
use kvik_script::{CallMode, Host, Value};

use super::undo::UndoLog;
use crate::client::session::Session;
use crate::commands::command::{find_keys, keyless, keys_known};
use crate::commands::{script_call, script_command, ReplyTarget};
use crate::effects::changes;
use crate::keyspace::Reservation;
use crate::state::ServerState;

/// The shards a script needs beyond those it holds, when a run is
/// abandoned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shards {
    /// These, ascending.
    Some(Vec<usize>),
    /// Every shard.
    All,
}

/// What of the keyspace a command needs reserved.
pub(super) enum Needs {
    /// Nothing: it works on the connection, pub/sub registrations or the clock.
    Nothing,
    /// The shards of the keys at these argument positions (and flags).
    Keys(Vec<(usize, KeySpecFlags)>),
    /// Every shard: its keys cannot be known from its arguments (`KEYS`,
    /// `SCAN`, `FLUSHALL`, `SORT … BY`), it works on another database
    /// (`MOVE`, `COPY … DB`), or what it does cannot be undone (`PUBLISH`).
    Everything,
}

pub(super) fn needs(spec: &CommandSpec, argv: &[&[u8]]) -> Needs {
    if matches!(spec.id, id::PUBLISH | id::SPUBLISH | id::MOVE | id::COPY) {
        return Needs::Everything;
    }
    if keyless(spec) || spec.id == id::TIME {
        return Needs::Nothing;
    }
    if !keys_known(spec) {
        return Needs::Everything;
    }
    match find_keys(spec, argv) {
        Some(keys) => Needs::Keys(keys),
        // A malformed key count: the command refuses it without touching a key.
        None => Needs::Nothing,
    }
}

/// One run of a script, acting for its caller.
pub struct ScriptHost<'a> {
    state: &'a ServerState,
    session: &'a mut Session,
    rules: super::Rules,
    wrote: bool,
    args: CommandArgs,
    reply: Vec<u8>,
    /// The caller's database and protocol, given back at the end.
    db: usize,
    protocol: Protocol,
    /// The script's own reservation; `None` inside `EXEC`, whose
    /// reservation of every shard holds.
    reservation: Option<Reservation<'a>>,
    /// The run may still be abandoned: announcements, the record's place
    /// and log lines are held, and writes are logged for undoing.
    holding: bool,
    undo: UndoLog,
    /// The shards the run's calls used, ascending.
    touched: Vec<usize>,
    /// A call needed every shard (its keys cannot be known, or it cannot
    /// be undone): so will the next run, most likely.
    escalated: bool,
    /// Set when the run is abandoned: the shard it could not get.
    wanted: Option<Shards>,
    logs: Vec<(u8, Vec<u8>)>,
}

/// Buffers a run leaves for the next on its loop (a run's arguments, its
/// calls' replies, its undo log), so that a script's run allocates none of
/// them once they have grown.
#[derive(Default)]
struct Spare {
    args: CommandArgs,
    reply: Vec<u8>,
    undo: UndoLog,
}

/// Largest reply buffer kept for the next run.
const KEEP_REPLY_BYTES: usize = 64 * 1024;

thread_local! {
    static SPARE: std::cell::RefCell<Spare> = std::cell::RefCell::new(Spare::default());
}

impl Drop for ScriptHost<'_> {
    fn drop(&mut self) {
        if self.reply.capacity() > KEEP_REPLY_BYTES {
            self.reply = Vec::new();
        }
        self.undo.clear();
        let spare = Spare {
            args: std::mem::take(&mut self.args),
            reply: std::mem::take(&mut self.reply),
            undo: std::mem::take(&mut self.undo),
        };
        SPARE.with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                *s = spare;
            }
        });
    }
}

impl<'a> ScriptHost<'a> {
    /// A run under `reservation` (`None`: inside `EXEC`).
    pub fn new(
        state: &'a ServerState,
        session: &'a mut Session,
        rules: super::Rules,
        reservation: Option<Reservation<'a>>,
    ) -> Self {
        let (db, protocol) = (session.db, session.protocol);
        session.protocol = Protocol::Resp2;
        let holding = reservation.as_ref().is_some_and(|r| !r.holds_all());
        if holding {
            changes::hold_announcements();
            session.effects.hold_place(true);
        }
        let spare = SPARE.with(|s| s.try_borrow_mut().map(|mut s| std::mem::take(&mut *s)).unwrap_or_default());
        ScriptHost {
            state,
            session,
            rules,
            wrote: false,
            args: spare.args,
            reply: spare.reply,
            db,
            protocol,
            reservation,
            holding,
            undo: spare.undo,
            touched: Vec::new(),
            escalated: false,
            wanted: None,
            logs: Vec::new(),
        }
    }

    /// The run stands: release what was held, with the shards still
    /// reserved, and give the caller back its database and protocol.
    /// Returns the shards the calls used (`All` when the run came to hold
    /// every shard), the script's best first guess next time.
    pub fn finish(mut self) -> Shards {
        let used = if self.escalated { Shards::All } else { Shards::Some(std::mem::take(&mut self.touched)) };
        self.stop_holding();
        for (level, line) in std::mem::take(&mut self.logs) {
            write_log(level, &line);
        }
        self.give_back_session();
        used
    }

    /// The run is abandoned: put back everything it changed and forget
    /// what it held, then release its reservation. Returns the shards the
    /// next run must reserve from the start.
    pub fn abandon(mut self) -> Shards {
        debug_assert!(self.holding, "a run that cannot be undone was abandoned");
        self.undo.restore(&self.state.keyspace);
        changes::drop_announcements();
        self.session.effects.discard();
        self.session.effects.hold_place(false);
        self.holding = false;
        self.give_back_session();
        let mut shards = self.reservation.as_ref().map(|r| r.shards().to_vec()).unwrap_or_default();
        match self.wanted.take() {
            Some(Shards::Some(more)) => shards.extend(more),
            Some(Shards::All) | None => return Shards::All,
        }
        shards.sort_unstable();
        shards.dedup();
        Shards::Some(shards)
    }

    /// Whether the run can still be put back ([`ScriptHost::abandon`]).
    pub fn can_undo(&self) -> bool {
        self.holding
    }

    /// Drop what the run would write to the append-only file, keeping its
    /// place (published empty): the server stops without saving.
    pub fn drop_record(&mut self) {
        self.session.effects.drop_operations();
    }

    /// Announce what was held, take the record's place and keep no undo
    /// log: the run stands (or can no longer be abandoned).
    fn stop_holding(&mut self) {
        if self.holding {
            self.holding = false;
            changes::release_announcements(self.state);
            self.session.effects.settle_place(self.state);
            self.undo.clear();
        }
    }

    fn give_back_session(&mut self) {
        self.session.db = self.db;
        self.session.protocol = self.protocol;
    }

    /// Make sure the shards `spec` needs for `argv` are reserved, logging
    /// the keys a write changes; false when the run must be abandoned.
    fn cover(&mut self, spec: &CommandSpec, argv: &[&[u8]]) -> bool {
        let Some(reservation) = self.reservation.as_mut() else { return true };
        let keyspace = &self.state.keyspace;
        if !self.holding {
            // Every shard is held: only note what the calls use, for the
            // script's next first guess.
            match needs(spec, argv) {
                Needs::Everything => self.escalated = true,
                Needs::Keys(positions) if !self.escalated => {
                    for &(at, _) in &positions {
                        if let Some(key) = argv.get(at) {
                            note_shard(&mut self.touched, keyspace.shard_of(key));
                        }
                    }
                }
                Needs::Keys(_) | Needs::Nothing => {}
            }
            return true;
        }
        let positions = match needs(spec, argv) {
            Needs::Nothing => return true,
            Needs::Keys(positions) if !self.undo.full() => positions,
            Needs::Keys(_) | Needs::Everything => {
                self.escalated = true;
                for shard in 0..keyspace.shard_count() {
                    if !reservation.try_extend(shard) {
                        self.wanted = Some(Shards::All);
                        return false;
                    }
                }
                self.stop_holding();
                return true;
            }
        };
        for &(at, _) in &positions {
            let Some(key) = argv.get(at) else { continue };
            let shard = keyspace.shard_of(key);
            note_shard(&mut self.touched, shard);
            if !reservation.try_extend(shard) {
                self.wanted = Some(Shards::Some(self.touched.clone()));
                return false;
            }
        }
        if reservation.holds_all() {
            self.stop_holding();
        } else if spec.flags.contains(CommandFlags::WRITE) {
            for &(at, _) in &positions {
                if let Some(key) = argv.get(at) {
                    self.undo.save(keyspace, self.session.db, key);
                }
            }
        }
        true
    }
}

/// Add `shard` to `touched` (ascending, no repeats).
fn note_shard(touched: &mut Vec<usize>, shard: usize) {
    if let Err(place) = touched.binary_search(&shard) {
        touched.insert(place, shard);
    }
}

/// Captures the reply of a command a script ran, in the protocol the
/// script speaks.
struct Capture<'b>(&'b mut Vec<u8>, Protocol);

impl ReplyTarget for Capture<'_> {
    fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, _session: &Session, write: F) {
        write(&mut RespWriter::new(self.0, self.1));
    }
}

impl Host for ScriptHost<'_> {
    fn call(&mut self, argv: &[&[u8]], mode: CallMode) -> Value {
        self.args.clear();
        for a in argv {
            self.args.push_owned(a);
        }
        let spec = match script_command(self.state, &self.args, self.rules.read_only, self.session) {
            Ok(spec) => spec,
            Err(msg) => return Value::Error(msg),
        };
        if self.rules.deny_oom && !self.wrote && spec.flags.contains(CommandFlags::DENYOOM) {
            return Value::Error(crate::commands::OOM.to_vec());
        }
        if !self.cover(spec, argv) {
            return Value::Error(b"ERR the script is started over".to_vec());
        }
        self.reply.clear();
        let protocol = if mode.resp3 { Protocol::Resp3 } else { Protocol::Resp2 };
        self.session.protocol = protocol;
        // `redis.set_repl` without REPL_AOF: what the call changes stays
        // out of the append-only file.
        let before = self.session.effects.mark();
        script_call(self.state, &self.args, spec, self.session, &mut Capture(&mut self.reply, protocol));
        if !mode.aof {
            self.session.effects.forget_since(before);
        }
        self.wrote |= spec.flags.contains(CommandFlags::WRITE);
        match parse_reply(&self.reply, &ReplyLimits::DEFAULT) {
            Ok(Some((value, _))) => value,
            _ => Value::Error(b"ERR the command's reply could not be read back".to_vec()),
        }
    }

    fn wrote(&self) -> bool {
        self.wrote
    }

    fn abandoned(&self) -> bool {
        self.wanted.is_some()
    }

    fn log(&mut self, level: u8, line: &[u8]) {
        if self.holding {
            self.logs.push((level, line.to_vec()));
        } else {
            write_log(level, line);
        }
    }
}

/// Write a `redis.log` line to the server's log.
fn write_log(level: u8, line: &[u8]) {
    let text = String::from_utf8_lossy(line);
    match level {
        0 => crate::log!(Debug, "{text}"),
        1 => crate::log!(Verbose, "{text}"),
        2 => crate::log!(Notice, "{text}"),
        _ => crate::log!(Warning, "{text}"),
    }
}
