//! Lua scripts: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT.
//!
//! The Lua side (the sandbox, `redis.call`, the conversions) is the
//! `kvik-script` crate; this module finds the script, runs it in the event
//! loop's own Lua state, and is the way back in: each `redis.call` runs its
//! command through [`super::script_call`] on the caller's session, with the
//! reply captured in RESP2 and handed to Lua as a value.
//!
//! A script is as atomic as `MULTI`/`EXEC`: it runs holding a reservation
//! no other thread can pass. For now that is every shard, as `EXEC` of a
//! transaction whose keys cannot be known; docs/scripting.md has the plan
//! that reserves only the shards a script needs and still lets it touch
//! keys it did not declare. A script's writes reach the append-only file as
//! one record, wrapped in `MULTI`/`EXEC` when there are several, as a
//! transaction's do.
//!
//! Not run yet, and refused with the reason: scripts with a `#!` line,
//! `SCRIPT KILL` and `SCRIPT DEBUG`, `redis.setresp(3)`, the `cmsgpack` and
//! `struct` libraries (a script that uses one reads a nonexistent global)
//! and cjson's settings functions.

use std::cell::RefCell;
use std::time::Duration;

use kvik_protocol::resp::reply_parser::{parse_reply, ReplyLimits};
use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::{CommandArgs, ReplySink};
use kvik_script::{sha1_hex, Engine, Host, Outcome as Ran, RunLimits, Value};

use super::{script_call, Ctx, ReplyTarget};
use crate::client::session::Session;
use crate::state::ServerState;

handlers! {
    EVAL(c) => eval(c, Source::Body, false),
    EVALSHA(c) => eval(c, Source::Sha, false),
    EVAL_RO(c) => eval(c, Source::Body, true),
    EVALSHA_RO(c) => eval(c, Source::Sha, true),
    SCRIPT_LOAD(c) => load(c),
    SCRIPT_EXISTS(c) => exists(c),
    SCRIPT_FLUSH(c) => flush(c),
    SCRIPT_KILL(c) => c.error(
        b"ERR kvik does not run SCRIPT KILL yet: a script that runs past busy-reply-threshold without writing is stopped",
    ),
    SCRIPT_DEBUG(c) => c.error(b"ERR kvik does not run the Lua debugger (SCRIPT DEBUG)"),
    SCRIPT_HELP(c) => help(c),
}

const NOSCRIPT: &[u8] = b"NOSCRIPT No matching script. Please use EVAL.";

const NO_SHEBANG: &[u8] = b"ERR kvik does not run scripts with a #! line (shebang flags) yet";

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
    if body_bytes.starts_with(b"#!") {
        return c.error(NO_SHEBANG);
    }
    let keys: Vec<&[u8]> = (3..3 + numkeys).map(|i| c.arg(i)).collect();
    let args: Vec<&[u8]> = (3 + numkeys..c.argc()).map(|i| c.arg(i)).collect();
    let state = c.state;
    let outcome = with_engine(state, |engine| {
        engine.compile(&sha, body_bytes)?;
        if source == Source::Body {
            state.scripts.insert(sha, body_bytes);
        }
        // Inside EXEC the transaction's reservation (every shard, see
        // `transaction::touched_shards`) already holds.
        let reservation = (!state.keyspace.reserving(c.session.id)).then(|| state.keyspace.reserve(c.session.id, None));
        let mut host = ScriptHost::new(state, c.session, read_only);
        // Past `busy-reply-threshold` a script that has not written is
        // stopped (Redis would start answering other clients BUSY and wait
        // for SCRIPT KILL, which kvik does not have yet); one that has
        // written runs to its end, as in Redis, where SCRIPT KILL cannot
        // stop it either.
        let time_limit = Duration::from_millis(state.config().busy_reply_threshold_ms());
        let ran = engine.run(&sha, &keys, &args, &mut host, RunLimits { time_limit });
        host.finish();
        drop(reservation);
        Ok(ran)
    });
    match outcome {
        Err(msg) => c.error(&msg),
        Ok(Ran::Stopped) => {
            let ms = c.state.config().busy_reply_threshold_ms();
            let msg = format!(
                "ERR Script stopped: it ran longer than busy-reply-threshold ({ms} ms) without writing (kvik has no SCRIPT KILL yet)"
            );
            c.error(msg.as_bytes())
        }
        Ok(Ran::Reply(Value::Error(msg))) => c.error(&msg),
        Ok(Ran::Reply(value)) => c.reply(|s| value.write_to(s)),
    }
}

/// Run `f` with this thread's engine, made on first use and emptied when
/// the script cache was flushed since it last ran.
fn with_engine<R>(state: &ServerState, f: impl FnOnce(&mut Engine) -> Result<R, Vec<u8>>) -> Result<R, Vec<u8>> {
    ENGINE.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(|_| b"ERR a script cannot run another script".to_vec())?;
        let generation = state.scripts.generation();
        if slot.is_none() {
            let engine = Engine::new().map_err(|e| format!("ERR cannot start Lua: {e}").into_bytes())?;
            *slot = Some((engine, generation));
        }
        let Some((engine, seen)) = slot.as_mut() else { return Err(b"ERR cannot start Lua".to_vec()) };
        if *seen != generation {
            engine.flush();
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
    if body.starts_with(b"#!") {
        return c.error(NO_SHEBANG);
    }
    let state = c.state;
    match with_engine(state, |engine| engine.compile(&sha, body)) {
        Ok(()) => {
            state.scripts.insert(sha, body);
            c.reply(|s| s.bulk(&sha));
        }
        Err(msg) => c.error(&msg),
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
    c.reply(|s| {
        s.array(HELP.len());
        for line in HELP {
            s.simple(line.as_bytes());
        }
    });
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
    "HELP",
    "    Prints this help.",
];

/// The server as a script's `redis.call` sees it: the caller's session,
/// in RESP2, in its own database (a `SELECT` in the script does not move
/// the caller).
struct ScriptHost<'a> {
    state: &'a ServerState,
    session: &'a mut Session,
    read_only: bool,
    wrote: bool,
    args: CommandArgs,
    reply: Vec<u8>,
    db: usize,
    protocol: Protocol,
}

impl<'a> ScriptHost<'a> {
    fn new(state: &'a ServerState, session: &'a mut Session, read_only: bool) -> Self {
        let (db, protocol) = (session.db, session.protocol);
        session.protocol = Protocol::Resp2;
        ScriptHost {
            state,
            session,
            read_only,
            wrote: false,
            args: CommandArgs::new(),
            reply: Vec::new(),
            db,
            protocol,
        }
    }

    /// Give the caller back its database and protocol.
    fn finish(&mut self) {
        self.session.db = self.db;
        self.session.protocol = self.protocol;
    }
}

/// Captures the reply of a command a script ran.
struct Capture<'b>(&'b mut Vec<u8>);

impl ReplyTarget for Capture<'_> {
    fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, _session: &Session, write: F) {
        write(&mut RespWriter::new(self.0, Protocol::Resp2));
    }
}

impl Host for ScriptHost<'_> {
    fn call(&mut self, argv: &[&[u8]]) -> Value {
        self.args.clear();
        for a in argv {
            self.args.push_owned(a);
        }
        self.reply.clear();
        let wrote = script_call(self.state, &self.args, self.session, &mut Capture(&mut self.reply), self.read_only);
        self.wrote |= wrote;
        match parse_reply(&self.reply, &ReplyLimits::DEFAULT) {
            Ok(Some((value, _))) => value,
            _ => Value::Error(b"ERR the command's reply could not be read back".to_vec()),
        }
    }

    fn wrote(&self) -> bool {
        self.wrote
    }

    fn log(&mut self, level: u8, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        match level {
            0 => crate::log!(Debug, "{text}"),
            1 => crate::log!(Verbose, "{text}"),
            2 => crate::log!(Notice, "{text}"),
            _ => crate::log!(Warning, "{text}"),
        }
    }
}
