//! Lua scripts: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT; and functions
//! (FUNCTION, FCALL, FCALL_RO: see [`functions`]), which run as scripts do.
//!
//! The Lua side (the sandbox, `redis.call`, the conversions) is the
//! `kvik-script` crate; this module finds the script and runs it in the
//! event loop's own Lua state; [`host`] is the way back in, each
//! `redis.call` running its command on the caller's session.
//!
//! A script is as atomic as `MULTI`/`EXEC`: it runs holding a reservation
//! no other thread can pass, but only of the shards it needs, so scripts on
//! different keys run at the same time on different loops. A run starts
//! with the shards of its declared keys and of those it used last time
//! ([`first_guess`]), takes more as its calls need them without waiting,
//! and is put back and started over when one is held elsewhere ([`run`];
//! docs/scripting.md has the design and why it cannot deadlock). A
//! script's writes reach the append-only file as one record, wrapped in
//! `MULTI`/`EXEC` when there are several, as a transaction's do.
//!
//! A `#!lua` line's flags are read by [`shebang`]; past
//! `busy-reply-threshold` a script is busy (see `registries::scripts`).
//!
//! Not run yet, and refused with the reason: the debugger (`SCRIPT DEBUG
//! YES|SYNC`; `NO` is what every run already is, so it is answered `OK`).

mod functions;
mod host;
mod shebang;
mod undo;

pub use functions::install_loaded;

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use kvik_script::{sha1_hex, Engine, Outcome as Ran, RunLimits, Value};

use super::{Ctx, ReplyTarget};
use crate::client::session::Session;
use crate::registries::replication::refuse;
use crate::registries::scripts::FunctionCall;
use crate::state::ServerState;
use host::{ScriptHost, Shards};

handlers! {
    EVAL(c) => eval(c, Source::Body, false),
    EVALSHA(c) => eval(c, Source::Sha, false),
    EVAL_RO(c) => eval(c, Source::Body, true),
    EVALSHA_RO(c) => eval(c, Source::Sha, true),
    SCRIPT_LOAD(c) => load(c),
    SCRIPT_EXISTS(c) => exists(c),
    SCRIPT_FLUSH(c) => flush(c),
    SCRIPT_KILL(c) => kill(c, false),
    SCRIPT_DEBUG(c) => debug(c),
    SCRIPT_HELP(c) => help(c),
    FCALL(c) => functions::fcall(c, false),
    FCALL_RO(c) => functions::fcall(c, true),
    FUNCTION_LOAD(c) => functions::load(c),
    FUNCTION_DELETE(c) => functions::delete(c),
    FUNCTION_FLUSH(c) => functions::flush(c),
    FUNCTION_LIST(c) => functions::list(c),
    FUNCTION_STATS(c) => functions::stats(c),
    FUNCTION_DUMP(c) => functions::dump(c),
    FUNCTION_RESTORE(c) => functions::restore(c),
    FUNCTION_KILL(c) => kill(c, true),
    FUNCTION_HELP(c) => functions::help(c),
}

const NOSCRIPT: &[u8] = b"NOSCRIPT No matching script. Please use EVAL.";

thread_local! {
    /// This event loop's Lua state and the cache generation its compiled
    /// scripts belong to. A Lua state belongs to the thread that made it,
    /// so each loop has its own, made at its first script.
    static ENGINE: RefCell<Option<(Engine, u64)>> = const { RefCell::new(None) };
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    Body,
    Sha,
}

/// `EVAL script numkeys key… arg…` and its kin.
fn eval<T: ReplyTarget>(c: &mut Ctx<'_, T>, source: Source, read_only: bool) {
    let Some(numkeys) = numkeys(c) else { return };
    let (sha, body) = match source {
        Source::Body => {
            let body = c.arg(1);
            (sha1_hex(body), None)
        }
        Source::Sha => {
            let Some(sha) = sha_arg(c.arg(1)) else { return c.error(NOSCRIPT) };
            match c.state.scripts.get(&sha) {
                Some(body) => (sha, Some(body)),
                None => return c.error(NOSCRIPT),
            }
        }
    };
    let body_bytes: &[u8] = match &body {
        Some(b) => b,
        None => c.arg(1),
    };
    let flags = match shebang::parse(body_bytes) {
        Ok(flags) => flags,
        Err(msg) => return c.error(&msg),
    };
    let rules = match Rules::of(c.state, c.session, flags, read_only) {
        Ok(rules) => rules,
        Err(msg) => return c.error(&msg),
    };
    let state = c.state;
    let compile = |engine: &mut Engine| {
        engine.compile(&sha, &shebang::source(body_bytes))?;
        if source == Source::Body {
            state.scripts.insert(sha, body_bytes);
        }
        Ok(())
    };
    start(c, Callee::Script(&sha), numkeys, rules, compile);
}

/// What runs: a script, by its SHA-1, or a library's function, by name.
#[derive(Debug, Clone, Copy)]
enum Callee<'a> {
    Script(&'a [u8; 40]),
    Function(&'a [u8]),
}

impl Callee<'_> {
    fn run(
        self,
        engine: &mut Engine,
        keys: &[&[u8]],
        args: &[&[u8]],
        host: &mut ScriptHost<'_>,
        limits: RunLimits,
    ) -> Ran {
        match self {
            Callee::Script(sha) => engine.run(sha, keys, args, host, limits),
            Callee::Function(name) => engine.run_function(name, keys, args, host, limits),
        }
    }
}

/// Run `callee` for the command in `c` (its keys from argument 3 on,
/// `numkeys` of them, then its arguments) and reply with what it gives;
/// `prepare` readies the engine for it first (or fails the command).
fn start<T: ReplyTarget>(
    c: &mut Ctx<'_, T>,
    callee: Callee<'_>,
    numkeys: usize,
    rules: Rules,
    prepare: impl FnOnce(&mut Engine) -> Result<(), Vec<u8>>,
) {
    let keys: Vec<&[u8]> = (3..3 + numkeys).map(|i| c.arg(i)).collect();
    let args: Vec<&[u8]> = (3 + numkeys..c.argc()).map(|i| c.arg(i)).collect();
    let state = c.state;
    let function = match callee {
        Callee::Function(name) => {
            Some(FunctionCall { name, head: [c.arg(0), c.arg(1), c.arg(2)], keys: &keys, args: &args })
        }
        Callee::Script(_) => None,
    };
    let session = &mut *c.session;
    let outcome = with_engine(state, |engine| {
        prepare(engine)?;
        Ok(run(state, session, engine, callee, function, &keys, &args, rules))
    });
    match outcome {
        Err(msg) => c.error(&msg),
        Ok(Ran::Killed(Value::Error(msg))) => c.error(&msg),
        Ok(Ran::Killed(_)) => c.error(b"ERR Script killed by user with SCRIPT KILL..."),
        Ok(Ran::Halted) => c.error(b"ERR the server is shutting down: the script was stopped"),
        Ok(Ran::Abandoned) => c.error(b"ERR the script could not get the shards it needs"),
        Ok(Ran::Reply(Value::Error(msg))) => c.error(&msg),
        Ok(Ran::Reply(value)) => c.reply(|s| value.write_to(s)),
    }
}

/// What a run may do: its writes refused (`EVAL_RO`, `no-writes`), or its
/// first command that may add data refused because the server is over
/// `maxmemory` (Redis's rule: once a script has written it cannot be
/// stopped halfway, so only a script that has not written yet is refused).
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    pub read_only: bool,
    pub deny_oom: bool,
}

impl Rules {
    /// The rules of a script with `flags` (its `#!` line, if any) run by
    /// a `read_only` command for `session`, or Redis's refusal to run it
    /// at all. A script with flags is refused as a command with those
    /// flags would be (over `maxmemory`, MISCONF, a read-only or stale
    /// replica); one without is refused only on a stale replica, and its
    /// commands are checked as it calls them.
    fn of(
        state: &ServerState,
        session: &Session,
        flags: Option<shebang::Flags>,
        read_only: bool,
    ) -> Result<Rules, Vec<u8>> {
        let writes = flags.is_none_or(|f| !f.no_writes);
        let allow_oom = flags.is_some_and(|f| f.allow_oom);
        let over = writes && !allow_oom && !crate::effects::changes::enforce_maxmemory(state);
        if over && flags.is_some() {
            return Err(super::OOM.to_vec());
        }
        if let Some(f) = flags.filter(|_| !session.is_obeyed()) {
            refused_before_run(state, f)?;
        }
        let refusals = state.replication.refusals();
        if flags.is_none() && refusals & refuse::STALE != 0 && !session.is_obeyed() {
            return Err(super::MASTERDOWN.to_vec());
        }
        if read_only && flags.is_some() && writes {
            return Err(b"ERR Can not execute a script with write flag using *_ro command.".to_vec());
        }
        Ok(Rules { read_only: read_only || !writes, deny_oom: over })
    }
}

/// What refuses a script with `flags` before it runs, as a command with
/// those flags: MISCONF, NOREPLICAS and READONLY for one that may write,
/// MASTERDOWN for one without `allow-stale`.
fn refused_before_run(state: &ServerState, flags: shebang::Flags) -> Result<(), Vec<u8>> {
    if !flags.no_writes {
        if let Some(msg) = crate::persistence::writes_refused(state) {
            return Err(msg);
        }
        if state.replication.refusals() & refuse::NOREPLICAS != 0 {
            return Err(super::NOREPLICAS.to_vec());
        }
        if state.replication.refusals() & refuse::WRITES != 0 {
            return Err(super::READONLY.to_vec());
        }
    }
    if !flags.allow_stale && state.replication.refusals() & refuse::STALE != 0 {
        return Err(super::MASTERDOWN.to_vec());
    }
    Ok(())
}

/// How many times a script starts with a reservation it guessed; the
/// start after that reserves every shard, which cannot fail.
const GUESSED_STARTS: usize = 3;

/// Run the compiled script `sha` for `session` until a run stands: under a
/// reservation of the shards of its declared keys and of those it used
/// last time, started over (see [`host`]) with what it learned when it
/// needed a shard another transaction held.
#[allow(clippy::too_many_arguments)]
fn run(
    state: &ServerState,
    session: &mut Session,
    engine: &mut Engine,
    callee: Callee<'_>,
    function: Option<FunctionCall<'_>>,
    keys: &[&[u8]],
    args: &[&[u8]],
    rules: Rules,
) -> Ran {
    // Past `busy-reply-threshold` the script is busy: other clients that
    // need its shards are answered BUSY, and SCRIPT KILL may stop it
    // while it has not written.
    let running = Running::start(state, session.id, function);
    let limits = RunLimits {
        time_limit: Duration::from_millis(state.config().busy_reply_threshold_ms()),
        watch: std::sync::Arc::clone(running.slot.watch()),
    };
    // Inside EXEC the transaction's reservation (every shard, see
    // `transaction::touched_shards`) already holds.
    if state.keyspace.reserving(session.id) {
        let mut host = ScriptHost::new(state, session, rules, None);
        let ran = callee.run(engine, keys, args, &mut host, limits);
        if ran == Ran::Halted {
            host.drop_record();
        }
        host.finish();
        return ran;
    }
    let keyspace = &state.keyspace;
    let mut declared: Vec<usize> = keys.iter().map(|k| keyspace.shard_of(k)).collect();
    declared.sort_unstable();
    declared.dedup();
    let mut plan = first_guess(callee, &declared);
    let mut starts = 0;
    loop {
        starts += 1;
        if starts > GUESSED_STARTS {
            plan = Shards::All;
        }
        let reservation = match &plan {
            Shards::Some(list) => keyspace.reserve(session.id, Some(list)),
            Shards::All => keyspace.reserve(session.id, None),
        };
        let mut host = ScriptHost::new(state, session, rules, Some(reservation));
        let ran = callee.run(engine, keys, args, &mut host, limits.clone());
        if ran == Ran::Halted {
            // The server stops without saving: what the script did goes
            // nowhere, and it is put back if it still can be.
            if host.can_undo() {
                host.abandon();
            } else {
                host.drop_record();
                host.finish();
            }
            return ran;
        }
        if ran == Ran::Abandoned {
            debug_assert!(plan != Shards::All, "a run holding every shard was abandoned");
            plan = host.abandon();
            state.stats.script_restarts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            continue;
        }
        learn(callee, undeclared(host.finish(), &declared));
        return ran;
    }
}

/// This loop's run slot while a script runs (see
/// `registries::scripts`): it says who runs the script, and the slot is
/// freed however the run ends.
struct Running<'a> {
    state: &'a ServerState,
    slot: &'a crate::registries::scripts::RunSlot,
    function: bool,
}

impl<'a> Running<'a> {
    fn start(state: &'a ServerState, client: u64, function: Option<FunctionCall<'_>>) -> Running<'a> {
        let slot = state.scripts.slot(crate::per_thread::with(|t| t.loop_index.get()));
        let is_function = function.is_some();
        state.scripts.started(slot, client, function);
        Running { state, slot, function: is_function }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.state.scripts.ended(self.slot, self.function);
    }
}

thread_local! {
    /// The shards each script (by SHA-1) and each function (by name) used
    /// when it last ran on this loop, kept for those that used shards
    /// their declared keys do not name.
    static LEARNED: RefCell<Learned> = RefCell::new(Learned::default());
}

#[derive(Default)]
struct Learned {
    scripts: HashMap<[u8; 40], Shards>,
    functions: HashMap<Box<[u8]>, Shards>,
}

impl Learned {
    fn get(&self, callee: Callee<'_>) -> Option<&Shards> {
        match callee {
            Callee::Script(sha) => self.scripts.get(sha),
            Callee::Function(name) => self.functions.get(name),
        }
    }

    fn remove(&mut self, callee: Callee<'_>) {
        match callee {
            Callee::Script(sha) => self.scripts.remove(sha),
            Callee::Function(name) => self.functions.remove(name),
        };
    }

    /// Keep `used` for `callee`, forgetting the others of its kind when
    /// [`MAX_LEARNED`] are kept.
    fn insert(&mut self, callee: Callee<'_>, used: Shards) {
        match callee {
            Callee::Script(sha) => {
                if self.scripts.len() >= MAX_LEARNED && !self.scripts.contains_key(sha) {
                    self.scripts.clear();
                }
                self.scripts.insert(*sha, used);
            }
            Callee::Function(name) => {
                if self.functions.len() >= MAX_LEARNED && !self.functions.contains_key(name) {
                    self.functions.clear();
                }
                self.functions.insert(Box::from(name), used);
            }
        }
    }
}

/// Most scripts, and most functions, [`LEARNED`] keeps shards for, per loop.
const MAX_LEARNED: usize = 10_000;

/// The shards a run of `callee` starts by reserving: those of its
/// declared keys (`declared`, ascending) and those outside them it used
/// last time.
fn first_guess(callee: Callee<'_>, declared: &[usize]) -> Shards {
    let learned = LEARNED.with(|l| l.borrow().get(callee).cloned());
    match learned {
        Some(Shards::All) => Shards::All,
        Some(Shards::Some(more)) => {
            let mut shards = [declared, &more].concat();
            shards.sort_unstable();
            shards.dedup();
            Shards::Some(shards)
        }
        None => Shards::Some(declared.to_vec()),
    }
}

/// The shards of `used` outside `declared` (both ascending).
fn undeclared(used: Shards, declared: &[usize]) -> Shards {
    match used {
        Shards::All => Shards::All,
        Shards::Some(mut list) => {
            list.retain(|s| declared.binary_search(s).is_err());
            Shards::Some(list)
        }
    }
}

/// Remember the shards a run of `callee` used, for its next first guess.
fn learn(callee: Callee<'_>, used: Shards) {
    LEARNED.with(|l| {
        let mut l = l.borrow_mut();
        // Most runs use what they used last time (or only their declared
        // keys, learning nothing): nothing to write.
        let nothing = used == Shards::Some(Vec::new());
        match l.get(callee) {
            Some(known) if *known == used => {}
            None if nothing => {}
            Some(_) if nothing => l.remove(callee),
            _ => l.insert(callee, used),
        }
    });
}

/// Forget what scripts used (the cache was flushed).
fn forget_learned() {
    LEARNED.with(|l| l.borrow_mut().scripts.clear());
}

/// Forget what functions used (the libraries changed).
fn forget_learned_functions() {
    LEARNED.with(|l| l.borrow_mut().functions.clear());
}

/// Run `f` with this thread's engine, made on first use and emptied when
/// the script cache was flushed since it last ran.
fn with_engine<R>(state: &ServerState, f: impl FnOnce(&mut Engine) -> Result<R, Vec<u8>>) -> Result<R, Vec<u8>> {
    ENGINE.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(|_| b"ERR a script cannot run another script".to_vec())?;
        let generation = state.scripts.generation();
        if slot.is_none() {
            let cjson = std::sync::Arc::clone(state.scripts.cjson());
            let engine = Engine::with_cjson(cjson).map_err(|e| format!("ERR cannot start Lua: {e}").into_bytes())?;
            *slot = Some((engine, generation));
        }
        let Some((engine, seen)) = slot.as_mut() else { return Err(b"ERR cannot start Lua".to_vec()) };
        if *seen != generation {
            engine.flush();
            forget_learned();
            *seen = generation;
        }
        f(engine)
    })
}

/// The `numkeys` argument, checked as Redis checks it (an error reply is
/// written when it is wrong).
fn numkeys<T: ReplyTarget>(c: &mut Ctx<'_, T>) -> Option<usize> {
    let Some(n) = kvik_protocol::number::parse_i64(c.arg(2)) else {
        c.error(b"ERR value is not an integer or out of range");
        return None;
    };
    if n < 0 {
        c.error(b"ERR Number of keys can't be negative");
        return None;
    }
    let most = c.argc() - 3;
    if n as u64 > most as u64 {
        c.error(b"ERR Number of keys can't be greater than number of args");
        return None;
    }
    Some(n as usize)
}

/// A script's name as `EVALSHA` and `SCRIPT EXISTS` take it: 40 hex
/// digits, in either case.
fn sha_arg(arg: &[u8]) -> Option<[u8; 40]> {
    let sha: [u8; 40] = arg.try_into().ok()?;
    Some(sha.map(|b| b.to_ascii_lowercase()))
}

/// `SCRIPT LOAD script`: compile it and keep it, without running it.
fn load<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let body = c.arg(2);
    let sha = sha1_hex(body);
    if let Err(msg) = shebang::parse(body) {
        return c.error(&msg);
    }
    let state = c.state;
    match with_engine(state, |engine| engine.compile(&sha, &shebang::source(body))) {
        Ok(()) => {
            state.scripts.insert(sha, body);
            c.reply(|s| s.bulk(&sha));
        }
        Err(msg) => c.error(&msg),
    }
}

/// `SCRIPT KILL` and `FUNCTION KILL`: stop the busy scripts (or
/// functions), if none has written.
fn kill<T: ReplyTarget>(c: &mut Ctx<'_, T>, functions: bool) {
    use crate::registries::scripts::{Kill, BUSY_FUNCTION, BUSY_SCRIPT};
    match c.state.scripts.kill(functions) {
        Kill::NotBusy => c.error(b"NOTBUSY No scripts in execution right now."),
        Kill::Unkillable => c.error(UNKILLABLE),
        // Redis's texts: the other kind is busy, and the other KILL stops it.
        Kill::OtherKind if functions => c.error(BUSY_SCRIPT),
        Kill::OtherKind => c.error(BUSY_FUNCTION),
        Kill::Killed => c.ok(),
    }
}

/// `SCRIPT DEBUG YES|SYNC|NO`. Scripts never run under the debugger, so
/// `NO` asks for what is already so; the other two are refused. Redis's
/// check comes first: the debugger talks to the client alone, so the
/// command must not follow replies still unsent (a pipeline, or `EXEC`).
fn debug<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.target.has_pending() {
        return c.error(b"ERR SCRIPT DEBUG must be called outside a pipeline");
    }
    let mode = c.arg(2);
    if mode.eq_ignore_ascii_case(b"no") {
        c.ok()
    } else if mode.eq_ignore_ascii_case(b"yes") || mode.eq_ignore_ascii_case(b"sync") {
        c.error(b"ERR kvik does not run the Lua debugger (SCRIPT DEBUG YES|SYNC)")
    } else {
        c.error(b"ERR Use SCRIPT DEBUG YES/SYNC/NO")
    }
}

/// Redis's refusal to kill a script that has written.
const UNKILLABLE: &[u8] = b"UNKILLABLE Sorry the script already executed write commands against the dataset. \
You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.";

/// Whether `req`, a command for `spec` that `session` sent while some
/// script is busy, would wait for one: it needs a shard a busy script
/// holds (or every shard), or it runs a script or a transaction, which
/// may come to need one. Redis answers every command but a few `BUSY`
/// then; kvik goes on serving what the busy script does not hold.
pub(super) fn waits_for_busy(
    state: &ServerState,
    spec: &'static kvik_protocol::commands::CommandSpec,
    req: super::Request<'_>,
    session: &Session,
) -> bool {
    use kvik_protocol::commands::{id, CommandFlags};
    if spec.flags.contains(CommandFlags::ALLOW_BUSY) || state.scripts.busy_client(session.id) {
        return false;
    }
    if matches!(spec.id, id::EXEC | id::EVAL | id::EVALSHA | id::EVAL_RO | id::EVALSHA_RO | id::FCALL | id::FCALL_RO) {
        return true;
    }
    let argv: Vec<&[u8]> = (0..req.argc()).map(|i| req.arg(i)).collect();
    match host::needs(spec, &argv) {
        host::Needs::Nothing => false,
        host::Needs::Everything => true,
        host::Needs::Keys(keys) => keys.iter().filter_map(|(at, _)| argv.get(*at)).any(|key| {
            let owner = state.keyspace.reserved_by(state.keyspace.shard_of(key));
            owner.is_some_and(|client| state.scripts.busy_client(client))
        }),
    }
}

/// `SCRIPT EXISTS sha…`: 1 or 0 for each.
fn exists<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let found: Vec<bool> =
        (2..c.argc()).map(|i| sha_arg(c.arg(i)).is_some_and(|sha| c.state.scripts.contains(&sha))).collect();
    c.reply(|s| {
        s.array(found.len());
        for f in &found {
            s.integer(i64::from(*f));
        }
    });
}

/// `SCRIPT FLUSH [ASYNC|SYNC]`: both empty the cache at once (it holds
/// only the bodies; each loop drops its compiled scripts before its next).
fn flush<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() > 3 || (c.argc() == 3 && !matches!(c.arg(2).to_ascii_lowercase().as_slice(), b"sync" | b"async")) {
        return c.error(b"ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    c.state.scripts.flush();
    c.ok();
}

fn help<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    super::help(c, HELP);
}

const HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
];
