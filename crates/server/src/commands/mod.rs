//! Command dispatch and the commands kvik implements.
//!
//! Every request goes through the same checks Redis makes, in Redis's order,
//! using the shared command table for the facts: is the name known, is the
//! subcommand known, is the argument count right. Only then is the command
//! run. A name the table knows but kvik does not run is answered exactly like
//! a name nobody knows, because from the client's point of view the server
//! does not support it.
//!
//! A request's name is looked up once; from then on everything is keyed by
//! the command's id from the table: [`OWNERS`] says which module runs it (and
//! so what kvik implements, for dispatch and `COMMAND` alike), each module's
//! `handlers!` match on ids picks the handler, and commandstats are an array
//! indexed by id. Around the command's own work, nothing on that path
//! compares strings, allocates or takes a lock.
//!
//! Commands write replies through a [`ReplyTarget`], which picks the encoding
//! for the session (RESP2, RESP3 or RESPB) at the moment the reply is written;
//! that is what lets `HELLO 3` answer in RESP3 after switching the session.

use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use kvik_protocol::commands::{
    by_id, id, lookup, lookup_subcommand, CommandFlags, CommandId, CommandSpec, COMMAND_COUNT,
};
use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::{CommandArgs, ReplySink};

use crate::client::auth;
use crate::client::session::{ReplyMode, Session};
use crate::clock::CommandStart;
use crate::effects::changes::{self, EventClass};
use crate::keyspace::CommandClock;
use crate::metrics::stats;
use crate::registries::acl::Context as AclContext;
use crate::registries::replication::refuse;
use crate::state::ServerState;

/// Declares the commands a module runs, one `ID(c) => expression` line each,
/// `c` naming the [`Ctx`] in the expression.
///
/// Expands to the module's `HANDLED` list of ids and its `dispatch`, a match
/// on ids, from the same lines, so what a module claims and what it runs
/// cannot differ.
macro_rules! handlers {
    ($($id:ident($c:ident) => $body:expr,)*) => {
        /// The ids of the commands this module runs.
        pub(super) const HANDLED: &[kvik_protocol::commands::CommandId] = &[$(kvik_protocol::commands::id::$id,)*];

        /// Run the command with id `cmd`, one of [`HANDLED`].
        pub(super) fn dispatch<T: super::ReplyTarget>(
            cmd: kvik_protocol::commands::CommandId,
            ctx: &mut super::Ctx<'_, T>,
        ) {
            match cmd {
                $(kvik_protocol::commands::id::$id => {
                    let $c = ctx;
                    $body;
                })*
                _ => {}
            }
        }
    };
}

mod access;
pub mod acl;
mod bitmap;
pub mod blocked;
mod command;
mod config;
mod connection;
mod geo;
mod hash;
mod hll;
mod info;
mod keys;
mod keyword;
mod list;
mod migrate;
mod pubsub;
mod random;
mod replication;
pub use replication::RUNNERS as REPLICATION_RUNNERS;
mod scripting;
pub use scripting::install_loaded as install_loaded_functions;
mod server;
mod set;
mod sort;
mod stream;
mod strings;
mod tracking;
mod transaction;
mod zset;

/// The module that runs a command.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Module {
    /// kvik does not run the command.
    None,
    Acl,
    Connection,
    Strings,
    Bitmap,
    Keys,
    List,
    Hash,
    Server,
    Config,
    Command,
    Geo,
    Hll,
    Stream,
    Set,
    ZSet,
    PubSub,
    Sort,
    Tracking,
    Transaction,
    Scripting,
    Replication,
}

/// Which module runs each command, by id: the one place that says what kvik
/// implements, built at compile time from the modules' `handlers!` lists.
/// Dispatch and `COMMAND`'s listings both read it.
static OWNERS: [Module; COMMAND_COUNT] = {
    let mut owners = [Module::None; COMMAND_COUNT];
    claim(&mut owners, acl::HANDLED, Module::Acl);
    claim(&mut owners, connection::HANDLED, Module::Connection);
    claim(&mut owners, strings::HANDLED, Module::Strings);
    claim(&mut owners, bitmap::HANDLED, Module::Bitmap);
    claim(&mut owners, keys::HANDLED, Module::Keys);
    claim(&mut owners, list::HANDLED, Module::List);
    claim(&mut owners, hash::HANDLED, Module::Hash);
    claim(&mut owners, server::HANDLED, Module::Server);
    claim(&mut owners, config::HANDLED, Module::Config);
    claim(&mut owners, command::HANDLED, Module::Command);
    claim(&mut owners, geo::HANDLED, Module::Geo);
    claim(&mut owners, hll::HANDLED, Module::Hll);
    claim(&mut owners, stream::HANDLED, Module::Stream);
    claim(&mut owners, set::HANDLED, Module::Set);
    claim(&mut owners, zset::HANDLED, Module::ZSet);
    claim(&mut owners, pubsub::HANDLED, Module::PubSub);
    claim(&mut owners, sort::HANDLED, Module::Sort);
    claim(&mut owners, tracking::HANDLED, Module::Tracking);
    claim(&mut owners, transaction::HANDLED, Module::Transaction);
    claim(&mut owners, scripting::HANDLED, Module::Scripting);
    claim(&mut owners, replication::HANDLED, Module::Replication);
    owners
};

/// Record `module` as the runner of `ids`; two modules claiming one command
/// fail the build.
const fn claim(owners: &mut [Module; COMMAND_COUNT], ids: &[CommandId], module: Module) {
    let mut i = 0;
    while i < ids.len() {
        let slot = &mut owners[ids[i].index()];
        assert!(matches!(slot, Module::None), "a command is claimed by two modules");
        *slot = module;
        i += 1;
    }
}

/// Whether kvik runs `spec`: a command with a handler, or a container with
/// at least one subcommand that has one.
pub fn implemented(spec: &CommandSpec) -> bool {
    runs(spec.id) || spec.subcommands.iter().any(|sub| runs(sub.id))
}

/// Whether ACL rules may name `spec`: a command of Redis 7.0 (so that
/// rules written for Redis load) or one kvik runs.
pub fn known_to_acl(spec: &CommandSpec) -> bool {
    spec.source == kvik_protocol::commands::Source::Redis70 || implemented(spec)
}

/// Whether a handler exists for this id.
fn runs(id: CommandId) -> bool {
    OWNERS.get(id.index()).is_some_and(|m| *m != Module::None)
}

/// Run the command with id `cmd`; false when kvik does not implement it.
pub(crate) fn dispatch<T: ReplyTarget>(cmd: CommandId, ctx: &mut Ctx<'_, T>) -> bool {
    match OWNERS.get(cmd.index()).copied().unwrap_or(Module::None) {
        Module::None => return false,
        Module::Acl => acl::dispatch(cmd, ctx),
        Module::Connection => connection::dispatch(cmd, ctx),
        Module::Strings => strings::dispatch(cmd, ctx),
        Module::Bitmap => bitmap::dispatch(cmd, ctx),
        Module::Keys => keys::dispatch(cmd, ctx),
        Module::List => list::dispatch(cmd, ctx),
        Module::Hash => hash::dispatch(cmd, ctx),
        Module::Server => server::dispatch(cmd, ctx),
        Module::Config => config::dispatch(cmd, ctx),
        Module::Command => command::dispatch(cmd, ctx),
        Module::Geo => geo::dispatch(cmd, ctx),
        Module::Hll => hll::dispatch(cmd, ctx),
        Module::Stream => stream::dispatch(cmd, ctx),
        Module::Set => set::dispatch(cmd, ctx),
        Module::ZSet => zset::dispatch(cmd, ctx),
        Module::PubSub => pubsub::dispatch(cmd, ctx),
        Module::Sort => sort::dispatch(cmd, ctx),
        Module::Tracking => tracking::dispatch(cmd, ctx),
        Module::Transaction => transaction::dispatch(cmd, ctx),
        Module::Scripting => scripting::dispatch(cmd, ctx),
        Module::Replication => replication::dispatch(cmd, ctx),
    }
    true
}

/// Everything a command needs: the shared state, its request, its client and
/// where its reply goes.
pub struct Ctx<'a, T: ReplyTarget> {
    /// State shared by all clients (the keyspace above all).
    pub state: &'a ServerState,
    /// The request being executed.
    pub req: Request<'a>,
    /// The client that sent it.
    pub session: &'a mut Session,
    /// Where the reply goes.
    pub target: &'a mut T,
    /// Whether the command replied with an error (for `failed_calls`).
    pub failed: bool,
    /// What the connection does next (RESET and CLIENT KILL of oneself may close it).
    pub outcome: Outcome,
    /// What a blocking command does when it finds nothing.
    pub waits: Waits<'a>,
    /// What this command adds to the change counter
    /// (`rdb_changes_since_last_save`), counted as Redis counts: elements
    /// pushed, fields set, keys deleted, not write commands run.
    pub changes: u64,
}

/// What a blocking command does when it finds nothing to pop or read.
///
/// Passed in the context, not kept per thread: the one place that runs a
/// served waiter says so, and the command reads it from its own call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waits<'a> {
    /// Sent by the client: it blocks until a key is ready or it times out.
    Block,
    /// Run by `EXEC`: it answers at once, as on timeout.
    AnswerNow,
    /// A blocked client served from the key that became ready: only that
    /// key is looked at, and finding nothing (or the wrong type) leaves no
    /// reply, which keeps the client blocked.
    Serve(&'a [u8]),
}

impl<'a, T: ReplyTarget> Ctx<'a, T> {
    /// The key a blocked client is being served from, in serve mode.
    pub fn serving(&self) -> Option<&'a [u8]> {
        match self.waits {
            Waits::Serve(key) => Some(key),
            Waits::Block | Waits::AnswerNow => None,
        }
    }

    /// Write one reply through the session's encoding.
    pub fn reply(&mut self, write: impl FnOnce(&mut dyn ReplySink)) {
        self.target.reply(self.session, write);
    }

    /// Write a pub/sub confirmation or message (see [`ReplyTarget::push_reply`]).
    pub fn push(&mut self, write: impl FnOnce(&mut dyn ReplySink)) {
        self.target.push_reply(self.session, write);
    }

    /// Reply with an error (code first, no leading `-`).
    pub fn error(&mut self, msg: &[u8]) {
        self.failed = true;
        self.state.stats.error_reply(msg);
        self.reply(|s| s.error(msg));
    }

    /// Reply `+OK`.
    pub fn ok(&mut self) {
        self.reply(|s| s.simple(b"OK"));
    }

    /// This command changed `key` in the client's database: the one call
    /// every write makes per changed key and event, while it still holds the
    /// key's shard lock (see [`crate::effects::changes`]). `event` is Redis's event
    /// name for the change (`lpush`, `del`, `expire`, …).
    ///
    /// The change counts once; [`Ctx::notify_counted`] is for changes
    /// Redis counts otherwise.
    #[inline]
    pub fn notify(&mut self, class: EventClass, event: &str, key: &[u8]) {
        self.notify_in(self.session.db, class, event, key);
    }

    /// [`Ctx::notify`] for a change that the change counter counts as
    /// `changes`: the elements an `LPUSH` pushed, the fields an `HSET` set,
    /// or 0 for the `del` of a key that a removal emptied (Redis counts the
    /// removal, not the key going with it).
    #[inline]
    pub fn notify_counted(&mut self, class: EventClass, event: &str, key: &[u8], changes: u64) {
        self.notify_in_counted(self.session.db, class, event, key, changes);
    }

    /// [`Ctx::notify`] for a key of database `db` (`MOVE`, `COPY ... DB`).
    #[inline]
    pub fn notify_in(&mut self, db: usize, class: EventClass, event: &str, key: &[u8]) {
        self.notify_in_counted(db, class, event, key, 1);
    }

    /// [`Ctx::notify_counted`] for a key of database `db`.
    #[inline]
    pub fn notify_in_counted(&mut self, db: usize, class: EventClass, event: &str, key: &[u8], changes: u64) {
        self.changes += changes;
        self.note_change();
        self.announce_if_wanted(db, class, event, key);
    }

    /// This command changed the keyspace (every `notify` says so): its
    /// request goes into the journal, unless it [`Ctx::propagate`]s
    /// something else. Called under the lock of what it changed, which
    /// is where its record takes its place in the order of changes.
    #[inline]
    pub fn note_change(&mut self) {
        if self.state.journal.on() {
            self.session.effects.changed(self.state);
        }
    }

    /// What this command did, as the command `args` that redoes it in the
    /// client's database, for the journal (see
    /// [`crate::effects::propagation`]): called, under the lock of what it
    /// changed, by the commands whose request would not redo the same
    /// (relative times, random choices, blocking pops); once per
    /// operation when it takes several.
    #[inline]
    pub fn propagate(&mut self, args: &[&[u8]]) {
        self.propagate_in(self.session.db, args);
    }

    /// [`Ctx::propagate`] in database `db`.
    #[inline]
    pub fn propagate_in(&mut self, db: usize, args: &[&[u8]]) {
        if self.state.journal.on() {
            self.session.effects.propagate(self.state, db, args);
        }
    }

    /// Announce that a removal emptied the collection at `key`, which went
    /// with it: an event, but no change of its own to count.
    pub fn notify_emptied(&mut self, key: &[u8]) {
        self.notify_counted(EventClass::Generic, "del", key, 0);
    }

    /// Count changes that no event stands for (keys a `FLUSHALL` removed).
    pub fn count_changes(&mut self, changes: u64) {
        self.changes += changes;
    }

    /// Nobody is interested nearly always: that test is inlined into every
    /// write, the announcing is not.
    #[inline]
    fn announce_if_wanted(&mut self, db: usize, class: EventClass, event: &str, key: &[u8]) {
        if changes::anyone_interested(self.state, class) {
            self.announce(db, class, event, key);
        }
    }

    /// [`Ctx::notify_in`] once somebody is interested in the change.
    #[inline(never)]
    fn announce(&mut self, db: usize, class: EventClass, event: &str, key: &[u8]) {
        // What the lookups recorded (expired keys, new keys) comes first, as
        // Redis announces it when it happens.
        changes::flush_server_events(self.state);
        if changes::hold(db, class, event, key, Some(self.session.id)) {
            return;
        }
        changes::key_changed(self.state, db, key, self.session.id);
        changes::publish_event(self.state, class, event, db, key);
    }

    /// Argument `i` of the request.
    pub fn arg(&self, i: usize) -> &'a [u8] {
        self.req.arg(i)
    }

    /// Number of arguments, the name included.
    pub fn argc(&self) -> usize {
        self.req.argc()
    }
}

/// Redis's refusal of a command a RESP2 subscriber may not run.
fn subscribed_refusal(spec: &CommandSpec) -> Vec<u8> {
    let only = "only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context";
    format!("ERR Can't execute '{}': {only}", spec.name).into_bytes()
}

/// The commands a RESP2 client may send while it listens for messages.
fn allowed_while_subscribed(spec: &CommandSpec) -> bool {
    matches!(
        spec.id,
        id::PING
            | id::SUBSCRIBE
            | id::SSUBSCRIBE
            | id::UNSUBSCRIBE
            | id::SUNSUBSCRIBE
            | id::PSUBSCRIBE
            | id::PUNSUBSCRIBE
            | id::RESET
    )
}

/// Redis's reply for an operation on a key holding another type.
pub const WRONGTYPE: &[u8] = b"WRONGTYPE Operation against a key holding the wrong kind of value";
/// Redis's reply for malformed options.
pub const SYNTAX_ERROR: &[u8] = b"ERR syntax error";
/// Redis's reply for an argument that must be an integer.
pub const NOT_AN_INTEGER: &[u8] = b"ERR value is not an integer or out of range";

/// Redis's reply to a command that may add data while memory stays over `maxmemory`.
pub const OOM: &[u8] = b"OOM command not allowed when used memory > 'maxmemory'.";

/// Longest part of a client-supplied name or argument quoted back in an
/// error, as Redis bounds it, so a huge argument cannot make a huge error.
const QUOTE_LIMIT: usize = 128;

/// One decoded request: the argument list and the buffer its references point into.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    args: &'a CommandArgs,
    input: &'a [u8],
}

impl<'a> Request<'a> {
    /// Pair decoded arguments with the buffer they were decoded from.
    pub fn new(args: &'a CommandArgs, input: &'a [u8]) -> Self {
        Request { args, input }
    }

    /// Number of arguments, the command name included.
    pub fn argc(&self) -> usize {
        self.args.len()
    }

    /// The command the decoder identified (a RESPB opcode's), without a
    /// lookup by name; `None` when it did not.
    pub fn known_command(&self) -> Option<&'static CommandSpec> {
        self.args.command().and_then(by_id)
    }

    /// Argument `i` (empty when out of range, which the arity checks rule out).
    pub fn arg(&self, i: usize) -> &'a [u8] {
        self.args.get(self.input, i).unwrap_or(&[])
    }
}

/// Where a command writes its reply.
///
/// The connection decides the encoding; the command only says what to send.
/// The target is asked for a sink once per reply, after the command has
/// updated the session, so a protocol switch applies to its own reply.
pub trait ReplyTarget {
    /// Write one reply for `session` through the sink handed to `write`.
    fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, session: &Session, write: F);

    /// Write a pub/sub confirmation or message: sent even while `CLIENT
    /// REPLY OFF` or `SKIP` drops replies, as Redis sends what it pushes.
    fn push_reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, session: &Session, write: F) {
        self.reply(session, write);
    }

    /// How replies for `session` are encoded, for a blocked client's reply
    /// written later by another thread.
    fn encoding(&self, session: &Session) -> crate::registries::blocking::Encoding {
        crate::registries::blocking::Encoding::Resp(session.protocol)
    }

    /// Whether replies written earlier are still waiting to be sent (the
    /// client pipelined), for the one command that cares, `SCRIPT DEBUG`.
    fn has_pending(&self) -> bool {
        false
    }
}

/// What the connection must do after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Keep serving the client.
    Continue,
    /// Send what was written, then close (the client sent `QUIT`).
    Close,
    /// Send what was written, then wait for the client's blocking command
    /// to be served (see [`crate::registries::blocking`]) before running anything else.
    Block,
    /// Send what was written, then serve the client as a replica
    /// (`SYNC`, `PSYNC`; see [`crate::replication::master`]).
    Replica,
}

/// Validate `req` against the command table and run it.
///
/// Replies are dropped while `CLIENT REPLY OFF` or `SKIP` says so, and the
/// connection is told to close when the client was killed.
pub fn execute<T: ReplyTarget>(
    state: &ServerState,
    req: Request<'_>,
    session: &mut Session,
    target: &mut T,
) -> Outcome {
    // A client killed while its request was on the way gets no answer.
    if session.handle().is_some_and(|h| h.is_killed()) {
        return Outcome::Close;
    }
    let outcome = execute_checked(state, req, session, &mut Gate(target), Run::Direct);
    session.skip_this = false;
    if session.reply_mode == ReplyMode::SkipNext {
        session.reply_mode = ReplyMode::On;
        session.skip_this = true;
    }
    if session.handle().is_some_and(|h| h.is_killed()) {
        if outcome == Outcome::Block {
            state.blocking.abandon(session.id);
        }
        return Outcome::Close;
    }
    outcome
}

/// Passes replies on unless `CLIENT REPLY OFF` or `SKIP` says to drop them.
///
/// Decided per reply, from the session as it is then, so that
/// `CLIENT REPLY ON` sent while replies are off is itself answered.
struct Gate<'t, T>(&'t mut T);

impl<T: ReplyTarget> ReplyTarget for Gate<'_, T> {
    fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, session: &Session, write: F) {
        if session.reply_mode == ReplyMode::Off || session.skip_this {
            let mut scratch = Vec::new();
            write(&mut RespWriter::new(&mut scratch, session.protocol));
        } else {
            self.0.reply(session, write);
        }
    }

    fn push_reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, session: &Session, write: F) {
        self.0.reply(session, write);
    }

    fn encoding(&self, session: &Session) -> crate::registries::blocking::Encoding {
        self.0.encoding(session)
    }

    fn has_pending(&self) -> bool {
        self.0.has_pending()
    }
}

/// The command `req` names when a `CLIENT PAUSE` holds it back, for the
/// connection to wait on ([`crate::registries::pause::Pause::wait_for`]) before running it.
///
/// As in Redis, only a command that would run waits: unknown names, wrong
/// argument counts and unauthenticated clients are answered at once. While
/// no pause is set this costs one atomic load, inlined into the caller.
#[inline]
pub fn held_by_pause(state: &ServerState, req: Request<'_>, session: &Session) -> Option<&'static CommandSpec> {
    let mode = state.pause.mode()?;
    held_in(state, mode, req, session)
}

/// [`held_by_pause`] while a pause of `mode` is set.
#[inline(never)]
fn held_in(
    state: &ServerState,
    mode: crate::registries::pause::PauseMode,
    req: Request<'_>,
    session: &Session,
) -> Option<&'static CommandSpec> {
    let mut spec = resolve(&req)?;
    if !spec.subcommands.is_empty() && req.argc() >= 2 {
        spec = lookup_subcommand(spec, req.arg(1))?;
    }
    let runnable = runs(spec.id)
        && spec.arity_ok(req.argc())
        && (session.authenticated || !auth::required(state) || spec.flags.contains(CommandFlags::NO_AUTH));
    if runnable && spec.id == id::EXEC && !crate::registries::pause::holds(mode, spec) {
        // EXEC waits as long as one of its queued commands would (Redis
        // 7.0's rule), so that command is what the connection waits on.
        return session.multi.as_ref().and_then(|m| m.first_queued(|q| crate::registries::pause::holds(mode, q)));
    }
    (runnable && crate::registries::pause::holds(mode, spec)).then_some(spec)
}

/// Reply with an error before the command ran, counting it as Redis does.
fn reject<T: ReplyTarget>(state: &ServerState, session: &Session, target: &mut T, msg: &[u8]) {
    state.stats.error_reply(msg);
    target.reply(session, |s| s.error(msg));
}

/// Run a command read from an append-only file, as Redis's loading client
/// does: its reply goes nowhere, a blocking command answers at once. The
/// error is Redis's text for a name kvik does not know, which stops the
/// load.
pub fn replay(state: &ServerState, args: &CommandArgs, session: &mut Session) -> Result<(), String> {
    let req = Request::new(args, &[]);
    if resolve(&req).filter(|s| implemented(s)).is_none() {
        return Err(String::from_utf8_lossy(req.arg(0)).into_owned());
    }
    struct Discard;
    impl ReplyTarget for Discard {
        fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, session: &Session, write: F) {
            let mut scratch = Vec::new();
            write(&mut RespWriter::new(&mut scratch, session.protocol));
        }
    }
    execute_checked(state, req, session, &mut Discard, Run::Load);
    Ok(())
}

/// Run a command of the master's stream, as Redis's master client runs
/// one: none of the checks a client's command passes (its user may run
/// anything, a read-only replica and `maxmemory` do not refuse it), its
/// reply goes nowhere, a blocking command answers at once, and keys past
/// their deadline are live to it (the master tells when they go). The
/// error is the text of a command that could not run, for the log.
pub fn apply_from_master(state: &ServerState, args: &CommandArgs, session: &mut Session) -> Result<(), String> {
    struct Discard;
    impl ReplyTarget for Discard {
        fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, session: &Session, write: F) {
            let mut scratch = Vec::new();
            write(&mut RespWriter::new(&mut scratch, session.protocol));
        }
    }
    let req = Request::new(args, &[]);
    let unknown = || format!("unknown command '{}'", String::from_utf8_lossy(req.arg(0)));
    let mut spec = resolve(&req).filter(|s| implemented(s)).ok_or_else(unknown)?;
    if !spec.subcommands.is_empty() && req.argc() >= 2 {
        spec = lookup_subcommand(spec, req.arg(1)).ok_or_else(unknown)?;
    }
    if !spec.arity_ok(req.argc()) {
        return Err(String::from_utf8_lossy(&wrong_arity(spec)).into_owned());
    }
    let _loading = crate::keyspace::Loading::start();
    if session.multi.is_some() && transaction::queues(spec) {
        transaction::queue(state, req, session, &mut Discard, spec);
        return Ok(());
    }
    run_checked(state, req, session, &mut Discard, spec, Run::Load);
    blocked::serve_ready(state);
    Ok(())
}

/// The command a script called (`redis.call`), after the checks Redis
/// makes there, or the error it answers with (Redis's texts, in its
/// order).
pub(super) fn script_command(
    state: &ServerState,
    args: &CommandArgs,
    read_only: bool,
    session: &mut Session,
) -> Result<&'static CommandSpec, Vec<u8>> {
    let req = Request::new(args, &[]);
    let unknown = || b"ERR Unknown Redis command called from script".to_vec();
    let mut spec = resolve(&req).filter(|s| implemented(s)).ok_or_else(unknown)?;
    if !spec.subcommands.is_empty() && req.argc() >= 2 {
        spec = lookup_subcommand(spec, req.arg(1)).ok_or_else(unknown)?;
    }
    if !spec.arity_ok(req.argc()) {
        return Err(b"ERR Wrong number of args calling Redis command from script".to_vec());
    }
    if spec.flags.contains(CommandFlags::NOSCRIPT) {
        return Err(b"ERR This Redis command is not allowed from script".to_vec());
    }
    let obeyed = session.is_obeyed();
    let refusals = if obeyed { 0 } else { state.replication.refusals() };
    if refusals & refuse::STALE != 0 && !spec.flags.contains(CommandFlags::STALE) {
        return Err(b"ERR Can not execute the command on a stale replica".to_vec());
    }
    // The script runs with its caller's permissions.
    auth::permitted(state, session, spec, req.argc(), |i| req.arg(i), AclContext::Lua)
        .map_err(auth::script_noperm_text)?;
    if read_only && spec.flags.contains(CommandFlags::WRITE) {
        return Err(b"ERR Write commands are not allowed from read-only scripts.".to_vec());
    }
    if spec.flags.contains(CommandFlags::WRITE) && !obeyed {
        if refusals & refuse::WRITES != 0 {
            return Err(READONLY.to_vec());
        }
        if let Some(msg) = crate::persistence::writes_refused(state) {
            return Err(msg);
        }
        if refusals & refuse::NOREPLICAS != 0 {
            return Err(NOREPLICAS.to_vec());
        }
    }
    Ok(spec)
}

/// Run `spec`, the command `args` a script called and
/// [`script_command`] passed; its reply goes to `target`. The caller
/// holds the reservation that makes the script atomic.
pub(super) fn script_call<T: ReplyTarget>(
    state: &ServerState,
    args: &CommandArgs,
    spec: &'static CommandSpec,
    session: &mut Session,
    target: &mut T,
) {
    run_checked(state, Request::new(args, &[]), session, target, spec, Run::Queued);
}

fn execute_checked<T: ReplyTarget>(
    state: &ServerState,
    req: Request<'_>,
    session: &mut Session,
    target: &mut T,
    how: Run,
) -> Outcome {
    let name = req.arg(0);
    // Redis 7.0 answers QUIT before looking at the table, whatever its arguments.
    if name.eq_ignore_ascii_case(b"quit") {
        target.reply(session, |s| s.simple(b"OK"));
        return Outcome::Close;
    }
    // An HTTP request sent to the port (a browser led there by a hostile
    // page) must not run the commands in its body: Redis drops the client
    // at the request line or a Host header, without a reply.
    if name.eq_ignore_ascii_case(b"post") || name.eq_ignore_ascii_case(b"host:") {
        cross_protocol_warning();
        return Outcome::Close;
    }
    // A RESPB frame's opcode named the command already. A command of the
    // table that kvik does not run (no subcommand of it either) reads as
    // unknown, before its arity or subcommand is looked at.
    let Some(mut spec) = resolve(&req).filter(|s| implemented(s)) else {
        let msg = unknown_command(&req);
        transaction::refused_while_queuing(session);
        reject(state, session, target, &msg);
        return Outcome::Continue;
    };
    if !spec.subcommands.is_empty() && req.argc() >= 2 {
        match lookup_subcommand(spec, req.arg(1)) {
            Some(sub) => spec = sub,
            None => {
                let msg = unknown_subcommand(&req);
                transaction::refused_while_queuing(session);
                reject(state, session, target, &msg);
                return Outcome::Continue;
            }
        }
    }
    let stat = state.stats.command(spec.id);
    let refusal = if !spec.arity_ok(req.argc()) {
        Some(wrong_arity(spec))
    } else if spec.id == id::DEBUG && !debug_allowed(state, session) {
        Some(DEBUG_NOT_ALLOWED.to_vec())
    } else if !session.authenticated && auth::required(state) && !spec.flags.contains(CommandFlags::NO_AUTH) {
        // Redis checks authentication after the name and the arity, and lets
        // the commands that can carry credentials (AUTH, HELLO) through.
        Some(auth::NOAUTH.to_vec())
    } else if session.multi.is_some() && spec.flags.contains(CommandFlags::NO_MULTI) {
        Some(transaction::NOT_IN_MULTI.to_vec())
    } else if let Err(denied) = {
        let context = if session.multi.is_some() { AclContext::Multi } else { AclContext::Toplevel };
        auth::permitted(state, session, spec, req.argc(), |i| req.arg(i), context)
    } {
        Some(auth::noperm_text(denied, spec))
    } else if !crate::effects::changes::enforce_maxmemory(state)
        && (spec.flags.contains(CommandFlags::DENYOOM) || transaction::refused_over_maxmemory(session, spec))
    {
        // Redis frees memory for `maxmemory` before every command, and
        // refuses the ones that may add data while it stays over the limit.
        log_oom_refusal();
        Some(OOM.to_vec())
    } else if let Some(msg) =
        crate::persistence::writes_refused(state).filter(|_| refused_for_disk_error(session, spec))
    {
        // A background save failed with save points set, or a write to the
        // append-only file failed: Redis stops writes (and PING) until the
        // disk works again.
        Some(msg)
    } else if let Some(msg) = replica_refusal(state, session, spec, refuse::NOREPLICAS | refuse::WRITES) {
        Some(msg)
    } else if session.subscriptions.active() && session.protocol == Protocol::Resp2 && !allowed_while_subscribed(spec) {
        // A RESP2 connection listening for messages cannot tell replies
        // from messages, so Redis lets it run only these commands.
        Some(subscribed_refusal(spec))
    } else {
        replica_refusal(state, session, spec, refuse::STALE)
    };
    if let Some(msg) = refusal {
        if let Some(stat) = stat {
            stat.rejected.fetch_add(1, Ordering::Relaxed);
        }
        let msg = if spec.id == id::EXEC { transaction::exec_refused(session, &msg) } else { msg };
        transaction::refused_while_queuing(session);
        reject(state, session, target, &msg);
        return Outcome::Continue;
    }
    if state.scripts.any_busy() && scripting::waits_for_busy(state, spec, req, session) {
        transaction::refused_while_queuing(session);
        reject(state, session, target, state.scripts.busy_reply());
        return Outcome::Continue;
    }
    if session.multi.is_some() && transaction::queues(spec) {
        transaction::queue(state, req, session, target, spec);
        return Outcome::Continue;
    }
    let outcome = run_checked(state, req, session, target, spec, how);
    // Clients blocked on keys this command (or this EXEC) filled are served
    // now that it holds no lock, before this client's next command.
    blocked::serve_ready(state);
    outcome
}

/// How a command that passed its checks is run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    /// Sent by the client: it may block, and has the clock to itself.
    Direct,
    /// Queued, run by `EXEC`: answers at once, and shares `EXEC`'s time.
    Queued,
    /// Read from an append-only file: answers at once.
    Load,
}

/// Run a command that passed every check, then do what follows a command
/// (see [`after_command`]); shared by direct commands and `EXEC`'s.
/// Inlined into both: a call here cost every command a frame of its own.
#[inline(always)]
fn run_checked<T: ReplyTarget>(
    state: &ServerState,
    req: Request<'_>,
    session: &mut Session,
    target: &mut T,
    spec: &'static CommandSpec,
    how: Run,
) -> Outcome {
    // One reading serves the client's idle time, the command time and the duration.
    let started = CommandStart::now();
    if how == Run::Direct {
        if let Some(handle) = session.handle() {
            handle.ran(spec.id, started.mono_us);
        }
    }
    if session.tracking.on() {
        tracking::before_command(state, session, spec, req);
    }
    let clock = (how != Run::Queued).then(|| CommandClock::at(started.wall_ms));
    let waits = if how == Run::Direct { Waits::Block } else { Waits::AnswerNow };
    let mut ctx = Ctx { state, req, session, target, failed: false, outcome: Outcome::Continue, waits, changes: 0 };
    let known = dispatch(spec.id, &mut ctx);
    if ctx.session.effects.pending() {
        ctx.session.effects.command_done(req.argc(), |i| req.arg(i), ctx.session.db);
        if how != Run::Queued {
            ctx.session.effects.publish(state);
        }
    }
    changes::flush_server_events(state);
    drop(clock);
    if !known {
        // A subcommand kvik does not run reads as one Redis does not know.
        let msg = if spec.container.is_some() { unknown_subcommand(&req) } else { unknown_command(&req) };
        reject(state, ctx.session, ctx.target, &msg);
        return Outcome::Continue;
    }
    let (failed, outcome, changes) = (ctx.failed, ctx.outcome, ctx.changes);
    if session.tracking.on() {
        tracking::after_command(session, spec);
    }
    let usec = started.elapsed_us();
    after_command(state, req, session, spec, failed, usec, changes);
    outcome
}

/// Log, at most once a minute as Redis does, that a client looked like an
/// HTTP request.
#[cold]
fn cross_protocol_warning() {
    static LIMIT: crate::log::RateLimit = crate::log::RateLimit::per(60_000);
    if LIMIT.allow() {
        crate::log!(
            Warning,
            "Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: commands to \
             Redis. This is likely due to an attacker attempting to use Cross Protocol Scripting to compromise \
             your Redis instance. Connection aborted."
        );
    }
}

/// What replication refuses of the kinds `which` ([`refuse`]): a write
/// on a read-only replica, or on a master short of good replicas
/// (`min-replicas-to-write`); or, while a replica's link is down with
/// `replica-serve-stale-data no`, a command not flagged `stale`. An
/// `EXEC` counts with what it queued. One relaxed load while none of
/// these is on.
#[inline]
fn replica_refusal(state: &ServerState, session: &Session, spec: &CommandSpec, which: u8) -> Option<Vec<u8>> {
    let bits = state.replication.refusals() & which;
    if bits == 0 {
        return None;
    }
    replica_refusal_slow(session, spec, bits)
}

#[cold]
fn replica_refusal_slow(session: &Session, spec: &CommandSpec, bits: u8) -> Option<Vec<u8>> {
    let queued = |test: &dyn Fn(&CommandSpec) -> bool| {
        spec.id == id::EXEC && session.multi.as_ref().is_some_and(|m| m.any_queued(test))
    };
    if bits & refuse::STALE == 0 {
        let writes = |s: &CommandSpec| s.flags.contains(CommandFlags::WRITE);
        let msg = if bits & refuse::WRITES != 0 { READONLY } else { NOREPLICAS };
        return (writes(spec) || queued(&writes)).then(|| msg.to_vec());
    }
    let stale = |s: &CommandSpec| !s.flags.contains(CommandFlags::STALE);
    (stale(spec) || queued(&stale)).then(|| MASTERDOWN.to_vec())
}

/// Redis's refusal of a write on a master with fewer good replicas than
/// `min-replicas-to-write`.
pub(crate) const NOREPLICAS: &[u8] = b"NOREPLICAS Not enough good replicas to write.";
/// Redis's refusal of a write on a read-only replica.
pub(crate) const READONLY: &[u8] = b"READONLY You can't write against a read only replica.";
/// Redis's refusal while the link to the master is down and
/// `replica-serve-stale-data` is `no`.
pub(crate) const MASTERDOWN: &[u8] =
    b"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// Whether `spec` is one `stop-writes-on-bgsave-error` refuses, as
/// Redis's: a write, PING, or an EXEC with a write queued.
fn refused_for_disk_error(session: &Session, spec: &CommandSpec) -> bool {
    let writes = |s: &CommandSpec| s.flags.contains(CommandFlags::WRITE);
    writes(spec)
        || spec.id == id::PING
        || spec.id == id::EXEC && session.multi.as_ref().is_some_and(|m| m.any_queued(writes))
}

/// Log, at most once a second, that a command was refused over `maxmemory`.
#[cold]
fn log_oom_refusal() {
    static LIMIT: crate::log::RateLimit = crate::log::RateLimit::per(1000);
    if LIMIT.allow() {
        crate::log!(Warning, "Refused a command: used memory is over 'maxmemory' and nothing can be evicted");
    }
}

/// The commands `rename-command` moved to other names or disabled, for the
/// whole process: set once at startup, before any client connects, from the
/// configuration file and flags.
static RENAMES: OnceLock<Renames> = OnceLock::new();

/// What `rename-command` changed.
struct Renames {
    /// A new name, in lower case, and the command it names now.
    by_name: Vec<(Box<[u8]>, &'static CommandSpec)>,
    /// By command id: the command no longer answers to its own name, nor
    /// to its RESPB opcode (a disabled or hidden command stays so on every
    /// protocol).
    hidden: Vec<bool>,
}

/// Apply `rename-command` directives (`(old, new)`, `new` empty to disable
/// the command), checked as Redis checks them. Call once, at startup.
pub fn install_renames(pairs: &[(String, String)]) -> Result<(), String> {
    if pairs.is_empty() {
        return Ok(());
    }
    let mut renames = Renames { by_name: Vec::new(), hidden: vec![false; COMMAND_COUNT] };
    for (from, to) in pairs {
        let spec = lookup(from.as_bytes())
            .filter(|s| s.container.is_none() && !renames.hidden[s.id.index()])
            .or_else(|| {
                renames.by_name.iter().find(|(n, _)| n[..] == *from.to_ascii_lowercase().as_bytes()).map(|(_, s)| *s)
            })
            .ok_or_else(|| format!("No such command in rename-command: '{from}'"))?;
        renames.by_name.retain(|(_, s)| s.id != spec.id);
        renames.hidden[spec.id.index()] = true;
        if to.is_empty() {
            continue;
        }
        let taken = lookup(to.as_bytes()).is_some_and(|s| !renames.hidden[s.id.index()])
            || renames.by_name.iter().any(|(n, _)| n[..] == *to.to_ascii_lowercase().as_bytes());
        if taken {
            return Err(format!("Target command name already exists: '{to}'"));
        }
        renames.by_name.push((to.to_ascii_lowercase().into_bytes().into_boxed_slice(), spec));
    }
    RENAMES.set(renames).map_err(|_| "rename-command applied twice".to_string())
}

/// The top-level command `req` names, by its RESPB opcode or its name,
/// as `rename-command` left the names.
#[inline]
fn resolve(req: &Request<'_>) -> Option<&'static CommandSpec> {
    match RENAMES.get() {
        None => req.known_command().or_else(|| lookup(req.arg(0))),
        Some(renames) => renames.resolve(req),
    }
}

impl Renames {
    /// Runs for every command once `rename-command` was used: it compares
    /// names without regard to case in place, allocating nothing.
    fn resolve(&self, req: &Request<'_>) -> Option<&'static CommandSpec> {
        let visible = |s: &&'static CommandSpec| !self.hidden.get(s.id.index()).copied().unwrap_or(false);
        if let Some(spec) = req.known_command() {
            return Some(spec).filter(visible);
        }
        let name = req.arg(0);
        if let Some((_, spec)) = self.by_name.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            return Some(spec);
        }
        lookup(name).filter(visible)
    }
}

/// Redis's reply to DEBUG while `enable-debug-command` does not allow it.
const DEBUG_NOT_ALLOWED: &[u8] =
    b"ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", \
    you can run it from a local connection, otherwise you need to set this option in the configuration file, and then \
    restart the server.";

/// Whether `enable-debug-command` lets this client run DEBUG.
fn debug_allowed(state: &ServerState, session: &Session) -> bool {
    match state.config().get("enable-debug-command") {
        "yes" => true,
        "local" => session.local,
        _ => false,
    }
}

/// What follows a command that ran: MONITOR feeds, the dirty counter,
/// commandstats and latency histograms, the client listing, the slow log
/// and the latency monitor.
///
/// Inlined into every command's path; what seldom happens (a MONITOR
/// listening, a failed call, a slow one) is kept in functions of its own.
#[inline(always)]
fn after_command(
    state: &ServerState,
    req: Request<'_>,
    session: &mut Session,
    spec: &CommandSpec,
    failed: bool,
    usec: u64,
    changes: u64,
) {
    let unmonitored = spec.flags.contains(CommandFlags::SKIP_MONITOR) || spec.flags.contains(CommandFlags::ADMIN);
    if state.clients.has_monitors() && !unmonitored {
        feed_monitors(state, req, session, spec);
    }
    state.stats.record_call(spec.id, usec, changes, state.limits.latency_tracking());
    if failed {
        count_failed(state, spec);
    }
    session.publish();
    // One comparison with the shorter of the slow log's and the latency
    // monitor's thresholds; the rest only for a call that reached it.
    if usec >= state.limits.notable_us() {
        notable_call(state, req, session, spec, usec);
    }
}

/// Offer a call that reached `slowlog-log-slower-than` or
/// `latency-monitor-threshold` to the slow log and the latency monitor, as
/// Redis's `call()` does: the monitor records `fast-command` for commands
/// with the `fast` flag and `command` for the others, whether or not the
/// command is kept out of the slow log (`EXEC`).
#[cold]
#[inline(never)]
fn notable_call(state: &ServerState, req: Request<'_>, session: &Session, spec: &CommandSpec, usec: u64) {
    let threshold = state.limits.latency_threshold_us();
    if threshold != 0 && usec >= threshold {
        let event = if spec.flags.contains(CommandFlags::FAST) { "fast-command" } else { "command" };
        state.stats.record_latency(event, usec / 1000);
    }
    let slower_than = state.limits.slowlog_slower_than();
    if slower_than >= 0 && usec >= slower_than.unsigned_abs() && !spec.flags.contains(CommandFlags::SKIP_SLOWLOG) {
        log_slow(state, req, session, spec, usec);
    }
}

/// Show a command that ran to the clients in MONITOR.
#[cold]
#[inline(never)]
fn feed_monitors(state: &ServerState, req: Request<'_>, session: &Session, spec: &CommandSpec) {
    let addr = session.handle().map(|h| h.info().addr.clone()).unwrap_or_default();
    state.clients.feed_monitors(&monitor_line(&req, spec, session.db, &addr));
}

/// Count a call that ended in an error (commandstats' `failed_calls`).
#[cold]
#[inline(never)]
fn count_failed(state: &ServerState, spec: &CommandSpec) {
    if let Some(stat) = state.stats.command(spec.id) {
        stat.failed.fetch_add(1, Ordering::Relaxed);
    }
}

/// Offer a command that took `usec` to the slow log, its secrets replaced
/// (see [`secret_argument`]).
#[cold]
#[inline(never)]
fn log_slow(state: &ServerState, req: Request<'_>, session: &Session, spec: &CommandSpec, usec: u64) {
    if let Some(handle) = session.handle() {
        let addr = handle.info().addr.clone();
        let name = session.name.clone().unwrap_or_default();
        let mut args =
            (0..req.argc()).map(|i| if secret_argument(&req, spec, i) { &b"(redacted)"[..] } else { req.arg(i) });
        state.stats.log_slow(usec, &mut args, req.argc(), &addr, &name, state.limits.slowlog_max_len());
    }
}

/// Whether argument `i` of a HELLO is the user name or password of one of
/// its `AUTH username password` options, read as Redis reads them.
fn hello_credential(req: &Request<'_>, i: usize) -> bool {
    let mut j = 2;
    while j < req.argc() {
        let more = req.argc() - 1 - j;
        if req.arg(j).eq_ignore_ascii_case(b"auth") && more >= 2 {
            if i == j + 1 || i == j + 2 {
                return true;
            }
            j += 3;
        } else if req.arg(j).eq_ignore_ascii_case(b"setname") && more >= 1 {
            j += 2;
        } else {
            return false;
        }
    }
    false
}

/// Whether argument `i` of `req` is a secret that Redis 7.0 shows as
/// `(redacted)` in the slow log: AUTH's arguments, the user and password
/// after HELLO's AUTH, everything after `ACL SETUSER`, and the values
/// `CONFIG SET` gives `requirepass`,
/// `masterauth` and `masteruser` (also in a CONFIG SET that fails).
fn secret_argument(req: &Request<'_>, spec: &CommandSpec, i: usize) -> bool {
    match spec.id {
        id::AUTH => i > 0,
        id::HELLO => hello_credential(req, i),
        // The user and every rule: a rule may hold a password.
        id::ACL_SETUSER => i >= 2,
        id::CONFIG_SET => {
            i >= 3
                && i % 2 == 1
                && ["requirepass", "masterauth", "masteruser"]
                    .iter()
                    .any(|secret| req.arg(i - 1).eq_ignore_ascii_case(secret.as_bytes()))
        }
        _ => false,
    }
}

/// A MONITOR line: `+<unix time> [<db> <addr>] "arg" ...`, arguments quoted
/// as Redis quotes them, credentials of AUTH and HELLO AUTH replaced.
fn monitor_line(req: &Request<'_>, spec: &CommandSpec, db: usize, addr: &str) -> Vec<u8> {
    let now = stats::unix_micros();
    let mut line = format!("+{}.{:06} [{db} {addr}]", now / 1_000_000, now % 1_000_000).into_bytes();
    let hello_auth = if spec.name == "hello" {
        (2..req.argc()).find(|&i| req.arg(i).eq_ignore_ascii_case(b"auth")).map(|i| (i + 1, i + 2))
    } else {
        None
    };
    for i in 0..req.argc() {
        let redacted = (spec.name == "auth" && i > 0) || hello_auth.is_some_and(|(u, p)| i == u || i == p);
        line.push(b' ');
        if redacted {
            line.extend_from_slice(b"\"(redacted)\"");
        } else {
            quote_repr(&mut line, req.arg(i));
        }
    }
    line.extend_from_slice(b"\r\n");
    line
}

/// Redis's `sdscatrepr`: a double-quoted string with C escapes and `\xHH`
/// for other unprintable bytes.
pub fn quote_repr(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'\\' | b'"' => {
                out.push(b'\\');
                out.push(b);
            }
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            b' '..=b'~' => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// Reply with a container's help text, ending with Redis's common `HELP` entry.
pub(crate) fn help<T: ReplyTarget>(c: &mut Ctx<'_, T>, lines: &[&str]) {
    c.reply(|s| {
        s.array(lines.len() + 2);
        for line in lines {
            s.simple(line.as_bytes());
        }
        s.simple(b"HELP");
        s.simple(b"    Prints this help.");
    });
}

/// `ERR unknown subcommand or wrong number of arguments for '<sub>'. Try <COMMAND> HELP.`,
/// for subcommands whose own argument checks go beyond the table's arity.
pub(crate) fn unknown_subcommand_syntax<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let mut msg = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    msg.extend_from_slice(until_nul(c.arg(1), QUOTE_LIMIT));
    msg.extend_from_slice(b"'. Try ");
    msg.extend(until_nul(c.arg(0), usize::MAX).iter().map(u8::to_ascii_uppercase));
    msg.extend_from_slice(b" HELP.");
    c.error(&msg);
}

/// Redis accepts client names made only of printable ASCII other than space.
fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|b| (b'!'..=b'~').contains(b))
}

/// The bytes of `arg` that a C string would show: up to the first NUL, at most `max`.
///
/// Redis formats names and arguments into errors with `%s`, so they stop at a
/// NUL byte; quoting the same bytes keeps kvik's errors identical.
fn until_nul(arg: &[u8], max: usize) -> &[u8] {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
    &arg[..end.min(max)]
}

/// `ERR unknown command '<name>', with args beginning with: '<a>' '<b>' `.
///
/// The arguments are quoted until the quoted text reaches 128 bytes, each cut
/// to what is left of that budget, exactly as Redis builds the message.
fn unknown_command(req: &Request<'_>) -> Vec<u8> {
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend_from_slice(until_nul(req.arg(0), QUOTE_LIMIT));
    msg.extend_from_slice(b"', with args beginning with: ");
    let mut quoted = 0;
    for i in 1..req.argc() {
        if quoted >= QUOTE_LIMIT {
            break;
        }
        let shown = until_nul(req.arg(i), QUOTE_LIMIT - quoted);
        msg.push(b'\'');
        msg.extend_from_slice(shown);
        msg.extend_from_slice(b"' ");
        quoted += shown.len() + 3;
    }
    msg
}

/// `ERR unknown subcommand '<sub>'. Try <COMMAND> HELP.`
fn unknown_subcommand(req: &Request<'_>) -> Vec<u8> {
    let mut msg = b"ERR unknown subcommand '".to_vec();
    msg.extend_from_slice(until_nul(req.arg(1), QUOTE_LIMIT));
    msg.extend_from_slice(b"'. Try ");
    msg.extend(until_nul(req.arg(0), usize::MAX).iter().map(u8::to_ascii_uppercase));
    msg.extend_from_slice(b" HELP.");
    msg
}

/// `ERR wrong number of arguments for '<name>' command`, with the table's full
/// name (`client|setname` for a subcommand), as Redis 7.0 reports it.
fn wrong_arity(spec: &CommandSpec) -> Vec<u8> {
    format!("ERR wrong number of arguments for '{}' command", spec.name).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvik_protocol::commands::COMMANDS;
    use kvik_protocol::resp::writer::Protocol;

    /// Collects RESP bytes for a session, as a RESP connection does.
    struct Collect(Vec<u8>);

    impl ReplyTarget for Collect {
        fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, session: &Session, write: F) {
            let mut w = RespWriter::new(&mut self.0, session.protocol);
            write(&mut w);
        }
    }

    fn run(session: &mut Session, words: &[&[u8]]) -> (Vec<u8>, Outcome) {
        let mut args = CommandArgs::new();
        for w in words {
            args.push_owned(w);
        }
        let mut out = Collect(Vec::new());
        let outcome = execute(&ServerState::default(), Request::new(&args, &[]), session, &mut out);
        (out.0, outcome)
    }

    fn reply(words: &[&[u8]]) -> Vec<u8> {
        run(&mut Session::new(1), words).0
    }

    #[test]
    fn ping_and_echo() {
        assert_eq!(reply(&[b"PING"]), b"+PONG\r\n");
        assert_eq!(reply(&[b"ping", b"hi"]), b"$2\r\nhi\r\n");
        assert_eq!(reply(&[b"ping", b"a", b"b"]), b"-ERR wrong number of arguments for 'ping' command\r\n");
        assert_eq!(reply(&[b"Echo", b""]), b"$0\r\n\r\n");
        assert_eq!(reply(&[b"echo"]), b"-ERR wrong number of arguments for 'echo' command\r\n");
    }

    #[test]
    fn quit_closes_whatever_its_arguments() {
        let (bytes, outcome) = run(&mut Session::new(1), &[b"QUIT", b"x"]);
        assert_eq!(bytes, b"+OK\r\n");
        assert_eq!(outcome, Outcome::Close);
    }

    #[test]
    fn unknown_command_quotes_like_redis() {
        assert_eq!(reply(&[b"foo", b"a", b"b"]), b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n");
        assert_eq!(reply(&[b"f\0oo", b"a\0b"]), b"-ERR unknown command 'f', with args beginning with: 'a' \r\n");
        let x = [b'x'; 100];
        let y = [b'y'; 100];
        let expected = format!(
            "-ERR unknown command 'foo', with args beginning with: '{}' '{}' \r\n",
            "x".repeat(100),
            "y".repeat(25)
        );
        assert_eq!(reply(&[b"foo", &x, &y, b"z"]), expected.as_bytes());
        let long_name = [b'n'; 300];
        let got = reply(&[&long_name]);
        let expected = format!("-ERR unknown command '{}', with args beginning with: \r\n", "n".repeat(128));
        assert_eq!(got, expected.as_bytes());
    }

    #[test]
    fn known_but_unsupported_commands_read_as_unknown() {
        assert_eq!(
            reply(&[b"BF.ADD", b"k", b"v"]),
            b"-ERR unknown command 'BF.ADD', with args beginning with: 'k' 'v' \r\n"
        );
        // Arity is still checked first, from the table, as Redis does.
        assert_eq!(reply(&[b"get"]), b"-ERR wrong number of arguments for 'get' command\r\n");
    }

    #[test]
    fn subcommands_are_resolved_before_arity() {
        assert_eq!(reply(&[b"client", b"foo"]), b"-ERR unknown subcommand 'foo'. Try CLIENT HELP.\r\n");
        assert_eq!(reply(&[b"client", b"setname"]), b"-ERR wrong number of arguments for 'client|setname' command\r\n");
        assert_eq!(reply(&[b"client"]), b"-ERR wrong number of arguments for 'client' command\r\n");
        let count = reply(&[b"command", b"COUNT"]);
        let runs = COMMANDS.iter().filter(|spec| implemented(spec)).count();
        assert!(runs > 50 && runs < COMMANDS.len(), "{runs} of {}", COMMANDS.len());
        assert_eq!(count, format!(":{runs}\r\n").as_bytes());
    }

    #[test]
    fn command_lists_only_what_kvik_runs() {
        assert_eq!(reply(&[b"COMMAND", b"INFO", b"bf.add", b"client|no-touch"]), b"*2\r\n$-1\r\n$-1\r\n");
        assert!(reply(&[b"COMMAND", b"INFO", b"get"]).starts_with(b"*1\r\n*10\r\n$3\r\nget\r\n"));
        assert_eq!(reply(&[b"COMMAND", b"DOCS", b"bf.add"]), b"*0\r\n");
        let list = reply(&[b"COMMAND", b"LIST"]);
        let has = |name: &str| list.windows(name.len() + 4).any(|w| w == format!("\r\n{name}\r\n").as_bytes());
        assert!(has("get") && has("client") && has("client|list"));
        assert!(!has("bf.add") && !has("client|no-touch") && !has("module"));
    }

    #[test]
    fn hello_switches_protocol_for_its_own_reply() {
        let mut session = Session::new(42);
        let (bytes, _) = run(&mut session, &[b"HELLO", b"3", b"SETNAME", b"app"]);
        assert!(bytes.starts_with(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"));
        assert!(bytes.windows(13).any(|w| w == b"$2\r\nid\r\n:42\r\n"));
        assert!(bytes.ends_with(b"$7\r\nmodules\r\n*0\r\n"));
        assert_eq!(session.protocol, Protocol::Resp3);
        assert_eq!(session.name.as_deref(), Some(&b"app"[..]));
        let (bytes, _) = run(&mut session, &[b"hello", b"2"]);
        assert!(bytes.starts_with(b"*14\r\n"));
        assert_eq!(session.protocol, Protocol::Resp2);
    }

    #[test]
    fn over_maxmemory_only_commands_that_may_add_data_are_refused() {
        let state = ServerState::default();
        let mut session = Session::new(1);
        let mut send = |words: &[&[u8]]| {
            let mut args = CommandArgs::new();
            for w in words {
                args.push_owned(w);
            }
            let mut out = Collect(Vec::new());
            execute(&state, Request::new(&args, &[]), &mut session, &mut out);
            out.0
        };
        assert_eq!(send(&[b"SET", b"a", b"hello"]), b"+OK\r\n");
        assert_eq!(send(&[b"CONFIG", b"SET", b"maxmemory", b"1"]), b"+OK\r\n");
        assert_eq!(send(&[b"SET", b"b", b"x"]), b"-OOM command not allowed when used memory > 'maxmemory'.\r\n");
        assert_eq!(send(&[b"GET", b"a"]), b"$5\r\nhello\r\n");
        // The new policy applies at once, and then before every command.
        assert_eq!(send(&[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-random"]), b"+OK\r\n");
        assert_eq!(state.keyspace.evicted_keys(), 1);
        assert_eq!(send(&[b"SET", b"b", b"x"]), b"+OK\r\n");
        assert_eq!(send(&[b"EXISTS", b"a", b"b"]), b":0\r\n", "b alone is over one byte");
        assert_eq!(state.keyspace.evicted_keys(), 2);
    }

    #[test]
    fn hello_errors_follow_redis_order() {
        assert_eq!(reply(&[b"hello", b"4"]), b"-NOPROTO unsupported protocol version\r\n");
        assert_eq!(reply(&[b"hello", b"x"]), b"-ERR Protocol version is not an integer or out of range\r\n");
        assert_eq!(reply(&[b"hello", b"3", b"auth", b"default"]), b"-ERR Syntax error in HELLO option 'auth'\r\n");
        assert_eq!(
            reply(&[b"hello", b"3", b"auth", b"bob", b"pw"]),
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
        );
        let mut session = Session::new(1);
        let (bytes, _) = run(&mut session, &[b"hello", b"3", b"setname", b"a b"]);
        assert_eq!(bytes, b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
        assert_eq!(session.protocol, Protocol::Resp2, "a failed HELLO changes nothing");
    }

    #[test]
    fn debug_needs_the_option_and_local_means_this_machine() {
        let run_debug = |setting: &str, local: bool| {
            let (config, _) = crate::config::Config::from_args(["--enable-debug-command", setting]).unwrap();
            let state = ServerState::new(config, None);
            let mut session = Session::new(1);
            session.local = local;
            let mut args = CommandArgs::new();
            for w in [&b"DEBUG"[..], b"SLEEP", b"0"] {
                args.push_owned(w);
            }
            let mut out = Collect(Vec::new());
            execute(&state, Request::new(&args, &[]), &mut session, &mut out);
            out.0
        };
        let refused = [b"-", DEBUG_NOT_ALLOWED, b"\r\n"].concat();
        assert_eq!(run_debug("no", true), refused);
        assert_eq!(run_debug("local", false), refused);
        assert_eq!(run_debug("local", true), b"+OK\r\n");
        assert_eq!(run_debug("yes", false), b"+OK\r\n");
        assert_eq!(reply(&[b"DEBUG", b"SLEEP", b"0"]), refused, "refused by default");
    }

    #[test]
    fn monitor_quoting_follows_sdscatrepr() {
        let mut out = Vec::new();
        quote_repr(&mut out, b"a \"b\"\\\n\r\t\x07\x08\x01\xff~");
        assert_eq!(out, b"\"a \\\"b\\\"\\\\\\n\\r\\t\\a\\b\\x01\\xff~\"");
    }

    #[test]
    fn reply_off_drops_replies_until_on() {
        let mut session = Session::new(1);
        assert_eq!(run(&mut session, &[b"CLIENT", b"REPLY", b"OFF"]).0, b"");
        assert_eq!(run(&mut session, &[b"PING"]).0, b"");
        assert_eq!(run(&mut session, &[b"CLIENT", b"REPLY", b"ON"]).0, b"+OK\r\n");
        assert_eq!(run(&mut session, &[b"CLIENT", b"REPLY", b"SKIP"]).0, b"");
        assert_eq!(run(&mut session, &[b"PING"]).0, b"");
        assert_eq!(run(&mut session, &[b"PING"]).0, b"+PONG\r\n");
    }
}
