//! One Lua state, its compiled scripts, and a run of one of them.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kvik_protocol::Value;
use mlua::{Function, HookTriggers, Lua, LuaOptions, LuaString, MultiValue, StdLib, Table, Value as Lua_, VmState};

use crate::convert::{self, error_table, from_lua};

/// What a script's `redis.call` reaches: the server, acting for the
/// script's caller.
pub trait Host {
    /// Run `args` (a command and its arguments) as `mode` says and give
    /// its reply. A command the script may not run is refused with an
    /// error reply, as any other failure.
    fn call(&mut self, args: &[&[u8]], mode: CallMode) -> Value;

    /// Whether the script has changed anything yet (a script that has
    /// cannot be stopped without breaking its atomicity).
    fn wrote(&self) -> bool;

    /// Write a `redis.log` line at `level` (0 debug … 3 warning).
    fn log(&mut self, level: u8, line: &[u8]);

    /// Whether the run must end now, to be started over: the last call
    /// could not run where the script stands (see the server's
    /// docs/scripting.md). Asked after every call; once true, the script
    /// is stopped and its run reads as [`Outcome::Abandoned`].
    fn abandoned(&self) -> bool {
        false
    }
}

/// How long a script may run before it counts as busy, and the flags
/// the server and the running script share.
#[derive(Debug, Clone)]
pub struct RunLimits {
    pub time_limit: Duration,
    pub watch: Arc<Watch>,
}

/// What other threads see of a running script, and how they stop it.
///
/// The script's own thread sets `busy` once it has run past its time
/// limit (Redis's `busy-reply-threshold`: from then on other clients are
/// told the server is busy) and `wrote` once it has changed anything;
/// another thread sets `kill` (`SCRIPT KILL`: honoured only while nothing
/// is written) or `halt` (`SHUTDOWN NOSAVE`: honoured always). The flags
/// are looked at every [`HOOK_EVERY`] instructions and at every call.
#[derive(Debug, Default)]
pub struct Watch {
    pub busy: AtomicBool,
    pub wrote: AtomicBool,
    pub kill: AtomicBool,
    pub halt: AtomicBool,
    /// Scripts busy now, server-wide: raised with `busy`, lowered by the
    /// server when the busy script ends.
    pub busy_total: Arc<AtomicUsize>,
}

impl Watch {
    /// A watch counting its busy runs into `busy_total`.
    pub fn new(busy_total: Arc<AtomicUsize>) -> Watch {
        Watch { busy_total, ..Watch::default() }
    }

    /// Ready for a new run.
    pub fn reset(&self) {
        self.busy.store(false, Ordering::Relaxed);
        self.wrote.store(false, Ordering::Relaxed);
        self.kill.store(false, Ordering::Relaxed);
    }
}

/// How the script has asked its calls to be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallMode {
    /// Replies in RESP3 (`redis.setresp(3)`), else RESP2.
    pub resp3: bool,
    /// Writes reach the append-only file (`redis.set_repl` with
    /// `REPL_AOF` in its flags, the default).
    pub aof: bool,
}

/// How a run ended.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// The reply the script's caller gets (an error reply when it failed).
    Reply(Value),
    /// `SCRIPT KILL` stopped the script before it wrote; the reply is
    /// Redis's error for it.
    Killed(Value),
    /// `SHUTDOWN NOSAVE` stopped the script, written or not.
    Halted,
    /// The host abandoned the run ([`Host::abandoned`]): whatever the
    /// script did after that point did not run, and it has no reply.
    Abandoned,
}

/// The text of `redis.call` with no arguments, and the others Redis uses
/// for a misused call.
const NO_ARGS: &[u8] = b"Please specify at least one argument for this redis lib call";
const BAD_ARG: &[u8] = b"Lua redis lib command arguments must be strings or integers";

/// `redis.REPL_AOF` and `redis.REPL_ALL`.
const REPL_AOF: u8 = 1;
const REPL_ALL: u8 = 3;

/// The collector's pause, as a percentage of the heap a cycle kept.
const GC_PAUSE: i32 = 400;

/// How many instructions run between two looks at the clock.
const HOOK_EVERY: u32 = 100_000;

/// One Lua state set up for scripts, and the scripts compiled in it.
pub struct Engine {
    lua: Lua,
    /// What the prelude reads from Rust.
    bridge: Table,
    /// The scripts' `redis` table, where each run sets `call` and `pcall`.
    redis: Table,
    /// Calls a script under the error handler.
    runner: Function,
    /// Compiled scripts, by SHA-1, in a Lua table: each function held
    /// from Rust would take a slot of mlua's reference stack, which Lua
    /// 5.1 bounds at some 8,000, where the script cache has no bound.
    scripts: Table,
    /// The script run last, held from Rust: a run of the same script
    /// again (the common case) looks nothing up.
    last: Option<([u8; 40], Function)>,
    /// The functions of the libraries installed here, by name.
    functions: Table,
    /// The function run last, held from Rust as [`Engine::last`] is.
    last_function: Option<(Vec<u8>, Function)>,
    /// Names set for every run, made once.
    names: Names,
    /// `redis.log` lines of the running script, handed to the host when
    /// it ends (the function that takes them is made once, not per run).
    logs: LogLines,
    /// When the running script started, and whether it was stopped.
    clock: Rc<RunClock>,
}

#[derive(Default)]
struct RunClock {
    started: Cell<Option<Instant>>,
    limit: Cell<Duration>,
    /// The host has not written yet: the script may still be killed.
    stoppable: Cell<bool>,
    /// The running script's flags, shared with the server.
    watch: RefCell<Option<Arc<Watch>>>,
    /// Killed at this line of the script (0: not killed).
    killed_at: Cell<i32>,
    halted: Cell<bool>,
    /// The host abandoned the run.
    abandoned: Cell<bool>,
    /// The script asked for RESP3 replies (`redis.setresp(3)`).
    resp3: Cell<bool>,
    /// The script's `redis.set_repl` flags (`REPL_ALL` until it sets them).
    repl: Cell<u8>,
    /// A library loads (`FUNCTION LOAD`) and must be done by then.
    load_deadline: Cell<Option<Instant>>,
    /// The library loading ran past its deadline.
    load_timed_out: Cell<bool>,
}

impl RunClock {
    /// Whether the script is being made to end (stopped or abandoned):
    /// every later call and instruction hook raises again, and the
    /// script's `pcall`s do not catch it.
    fn ending(&self) -> bool {
        self.killed_at.get() != 0 || self.halted.get() || self.abandoned.get()
    }

    /// Look at the time and the watch (the instruction hook): Err when the
    /// script must end now.
    fn check(&self, line: impl Fn() -> i32) -> mlua::Result<()> {
        if let Some(deadline) = self.load_deadline.get() {
            if Instant::now() > deadline {
                self.load_timed_out.set(true);
                return Err(mlua::Error::runtime("FUNCTION LOAD timeout"));
            }
            return Ok(());
        }
        let Some(started) = self.started.get() else { return Ok(()) };
        if self.ending() {
            return Err(mlua::Error::runtime("script ending"));
        }
        let watch = self.watch.borrow();
        let Some(watch) = watch.as_ref() else { return Ok(()) };
        if !watch.busy.load(Ordering::Relaxed) && started.elapsed() > self.limit.get() {
            watch.busy.store(true, Ordering::Relaxed);
            watch.busy_total.fetch_add(1, Ordering::Relaxed);
        }
        if watch.halt.load(Ordering::Relaxed) {
            self.halted.set(true);
            return Err(mlua::Error::runtime("script halted"));
        }
        if self.stoppable.get() && watch.kill.load(Ordering::Relaxed) {
            self.killed_at.set(line().max(1));
            return Err(mlua::Error::runtime("script killed"));
        }
        Ok(())
    }
}

/// The lowercase hex SHA-1 of `body`, the name `EVALSHA` knows it by.
pub fn sha1_hex(body: &[u8]) -> [u8; 40] {
    let digest = sha1_smol::Sha1::from(body).digest().bytes();
    let mut out = [0u8; 40];
    for (i, b) in digest.iter().enumerate() {
        out[2 * i] = HEX[usize::from(b >> 4)];
        out[2 * i + 1] = HEX[usize::from(b & 0xf)];
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl Engine {
    /// A fresh state with Redis's libraries and the `redis` table, its
    /// cjson settings its own.
    pub fn new() -> mlua::Result<Engine> {
        Engine::with_cjson(Arc::default())
    }

    /// [`Engine::new`], with cjson settings shared with other engines.
    pub fn with_cjson(cjson: Arc<crate::cjson::Settings>) -> mlua::Result<Engine> {
        let lua = Lua::new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH, LuaOptions::new())?;
        // The collector starts a cycle when the heap has grown to four
        // times what the last one kept (Lua's default is twice): what it
        // keeps is mostly the libraries, and a script's garbage is small,
        // so each cycle's marking of them is shared by more runs, for a
        // few hundred KB more per loop.
        lua.gc_set_mode(mlua::prelude::LuaGcMode::Incremental(
            mlua::prelude::LuaGcIncParams::default().pause(GC_PAUSE),
        ));
        let globals = lua.globals();
        for name in ["loadfile", "dofile", "print"] {
            globals.raw_set(name, Lua_::Nil)?;
        }
        let bridge = lua.create_table()?;
        bridge.set("version", crate::REDIS_VERSION)?;
        bridge.set("version_num", crate::REDIS_VERSION_NUM)?;
        bridge.set(
            "error_table",
            lua.create_function(|lua, text: mlua::LuaString| error_table(lua, &text.as_bytes()))?,
        )?;
        bridge.set(
            "sha1hex",
            lua.create_function(|lua, text: mlua::LuaString| lua.create_string(sha1_hex(&text.as_bytes())))?,
        )?;
        // `redis.setresp` and `redis.set_repl` are Rust (C, in Redis)
        // functions: a failing `return redis.setresp(4)` is no tail call,
        // so the error still finds the script's line.
        let clock = Rc::new(RunClock::default());
        let resp_clock = Rc::clone(&clock);
        let resp_bridge = bridge.clone();
        bridge.set(
            "setresp",
            lua.create_function(move |lua, args: MultiValue| {
                if args.len() != 1 {
                    return raise(
                        &resp_bridge,
                        Lua_::Table(error_table(lua, b"redis.setresp() requires one argument.")?),
                    );
                }
                // As `lua_tonumber` then a cast to int: "3" is 3, 2.5 is 2.
                match number_arg(lua, &args).map(|n| n as i64) {
                    Some(2) => resp_clock.resp3.set(false),
                    Some(3) => resp_clock.resp3.set(true),
                    _ => return raise(&resp_bridge, Lua_::Table(error_table(lua, b"RESP version must be 2 or 3.")?)),
                }
                Ok(Lua_::Nil)
            })?,
        )?;
        let repl_bridge = bridge.clone();
        let repl_clock = Rc::clone(&clock);
        bridge.set(
            "set_repl",
            lua.create_function(move |lua, args: MultiValue| {
                if args.len() != 1 {
                    // Redis's text, word for word.
                    let text = b"redis.set_repl() requires two arguments.";
                    return raise(&repl_bridge, Lua_::Table(error_table(lua, text)?));
                }
                // REPL_AOF decides whether later writes reach the
                // append-only file; kvik has no replicas for REPL_REPLICA.
                // `lua_tonumber`: what is not a number reads as 0, REPL_NONE.
                match number_arg(lua, &args).unwrap_or(0.0) as i64 {
                    flags @ 0..=3 => repl_clock.repl.set(flags as u8),
                    _ => {
                        let text = b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.";
                        return raise(&repl_bridge, Lua_::Table(error_table(lua, text)?));
                    }
                }
                Ok(Lua_::Nil)
            })?,
        )?;
        let raised_into = bridge.clone();
        let raise = move |lua: &Lua, text: String| raise_text(lua, &raised_into, &text);
        globals.raw_set("bit", crate::bit::library(&lua, raise.clone())?)?;
        globals.raw_set("cjson", crate::cjson::library(&lua, raise.clone(), cjson)?)?;
        globals.raw_set("cmsgpack", crate::cmsgpack::library(&lua, raise.clone())?)?;
        let math: Table = globals.raw_get("math")?;
        crate::random::install(&lua, &math, raise.clone())?;
        globals.raw_set("struct", crate::lstruct::library(&lua, raise)?)?;
        let prelude = lua.load(include_str!("prelude.lua")).set_name("=kvik").into_function()?;
        bridge.set("place", lua.create_function(|lua, ()| Ok(user_place(lua)))?)?;
        let ending_clock = Rc::clone(&clock);
        bridge.set("ending", lua.create_function(move |_, ()| Ok(ending_clock.ending()))?)?;
        let runner: Function = prelude.call(bridge.clone())?;
        let redis: Table = lua.globals().raw_get("redis")?;
        let hook_clock = Rc::clone(&clock);
        lua.set_hook(HookTriggers::new().every_nth_instruction(HOOK_EVERY), move |_, debug| {
            hook_clock.check(|| debug.current_line().map_or(1, |l| l as i32))?;
            Ok(VmState::Continue)
        })?;
        let scripts = lua.create_table()?;
        let functions = lua.create_table()?;
        let names = Names {
            keys: lua.create_string("KEYS")?,
            argv: lua.create_string("ARGV")?,
            call: lua.create_string("call")?,
            pcall: lua.create_string("pcall")?,
            raised: lua.create_string("raised")?,
        };
        let logs: LogLines = Rc::default();
        let log_into = Rc::clone(&logs);
        bridge.raw_set(
            "log",
            lua.create_function(move |lua, argv: MultiValue| match log_line(lua, &argv)? {
                Ok(line) => {
                    log_into.borrow_mut().push(line);
                    Ok(None)
                }
                Err(failure) => Ok(Some(failure)),
            })?,
        )?;
        Ok(Engine {
            lua,
            bridge,
            redis,
            runner,
            scripts,
            last: None,
            functions,
            last_function: None,
            names,
            logs,
            clock,
        })
    }

    /// Forget every compiled script (`SCRIPT FLUSH`).
    pub fn flush(&mut self) {
        if let Ok(empty) = self.lua.create_table() {
            self.scripts = empty;
        }
        self.last = None;
        self.lua.gc_collect().ok();
    }

    /// Compile `body` as the script named `sha`, or give Redis's error
    /// text for a script that does not compile.
    pub fn compile(&mut self, sha: &[u8; 40], body: &[u8]) -> Result<(), Vec<u8>> {
        if self.last.as_ref().is_some_and(|(last, _)| last == sha) {
            return Ok(());
        }
        let name = self.lua.create_string(sha).map_err(|e| format!("ERR {e}").into_bytes())?;
        if matches!(self.scripts.raw_get::<Lua_>(&name), Ok(Lua_::Function(_))) {
            return Ok(());
        }
        match self.lua.load(body).set_name("@user_script").into_function() {
            Ok(f) => self.scripts.raw_set(name, f).map_err(|e| format!("ERR {e}").into_bytes()),
            Err(e) => {
                let text = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    other => other.to_string(),
                };
                Err(format!("ERR Error compiling script (new function): {text}").into_bytes())
            }
        }
    }

    /// The compiled script `sha`, kept as the last one run.
    fn script(&mut self, sha: &[u8; 40]) -> Option<Function> {
        if let Some((last, f)) = &self.last {
            if last == sha {
                return Some(f.clone());
            }
        }
        let name = self.lua.create_string(sha).ok()?;
        let Ok(Lua_::Function(f)) = self.scripts.raw_get::<Lua_>(name) else { return None };
        self.last = Some((*sha, f.clone()));
        Some(f)
    }

    /// Run the compiled script `sha` with `keys` and `args` as `KEYS` and
    /// `ARGV`, its calls going to `host`.
    pub fn run(
        &mut self,
        sha: &[u8; 40],
        keys: &[&[u8]],
        args: &[&[u8]],
        host: &mut dyn Host,
        limits: RunLimits,
    ) -> Outcome {
        let Some(script) = self.script(sha) else {
            return Outcome::Reply(Value::Error(b"NOSCRIPT No matching script. Please use EVAL.".to_vec()));
        };
        let globals = self.lua.globals();
        let set = |name: &LuaString, items: &[&[u8]]| globals.raw_set(name, self.string_list(items)?);
        if let Err(e) = set(&self.names.keys, keys).and_then(|()| set(&self.names.argv, args)) {
            return Outcome::Reply(Value::Error(format!("ERR {e}").into_bytes()));
        }
        self.run_target(Target { callable: script, name: sha, source: "@user_script", params: None }, host, limits)
    }

    /// Run the function `name` (in any case) of an installed library with `keys` and
    /// `args` as its two parameters, its calls going to `host`.
    pub fn run_function(
        &mut self,
        name: &[u8],
        keys: &[&[u8]],
        args: &[&[u8]],
        host: &mut dyn Host,
        limits: RunLimits,
    ) -> Outcome {
        let Some(callable) = self.function(name) else {
            return Outcome::Reply(Value::Error(b"ERR Function not found".to_vec()));
        };
        let params = match (self.string_list(keys), self.string_list(args)) {
            (Ok(k), Ok(a)) => (k, a),
            (Err(e), _) | (_, Err(e)) => return Outcome::Reply(Value::Error(format!("ERR {e}").into_bytes())),
        };
        self.run_target(Target { callable, name, source: "@user_function", params: Some(params) }, host, limits)
    }

    /// The installed function `name` (in any case), kept as the last one run.
    fn function(&mut self, name: &[u8]) -> Option<Function> {
        if let Some((last, f)) = &self.last_function {
            if last.eq_ignore_ascii_case(name) {
                return Some(f.clone());
            }
        }
        let key = self.lua.create_string(name.to_ascii_lowercase()).ok()?;
        let Ok(Lua_::Function(f)) = self.functions.raw_get::<Lua_>(key) else { return None };
        self.last_function = Some((name.to_vec(), f.clone()));
        Some(f)
    }

    /// A Lua array of `items`.
    fn string_list(&self, items: &[&[u8]]) -> mlua::Result<Table> {
        let t = self.lua.create_table_with_capacity(items.len(), 0)?;
        for (i, item) in items.iter().enumerate() {
            t.raw_set(i + 1, self.lua.create_string(item)?)?;
        }
        Ok(t)
    }

    fn run_target(&mut self, target: Target<'_>, host: &mut dyn Host, limits: RunLimits) -> Outcome {
        self.logs.borrow_mut().clear();
        if self.bridge.raw_set(&self.names.raised, Lua_::Nil).is_err() {
            return Outcome::Reply(Value::Error(b"ERR the script engine failed".to_vec()));
        }
        self.clock.started.set(Some(Instant::now()));
        self.clock.limit.set(limits.time_limit);
        self.clock.stoppable.set(true);
        self.clock.killed_at.set(0);
        self.clock.halted.set(false);
        self.clock.abandoned.set(false);
        self.clock.resp3.set(false);
        self.clock.repl.set(REPL_ALL);
        limits.watch.reset();
        *self.clock.watch.borrow_mut() = Some(Arc::clone(&limits.watch));
        let clock = Rc::clone(&self.clock);
        // Both bridges reach the one host; neither runs inside the other.
        let host = RefCell::new(host);
        let Target { callable, name, source, params } = target;
        let result = self.lua.scope(|scope| {
            let call = scope.create_function_mut(|lua, argv: MultiValue| {
                let (reply, kind) = call_host(lua, &argv, &host, &clock)?;
                match kind {
                    Called::Reply => Ok(reply),
                    Called::Failed | Called::Misused => raise(&self.bridge, reply),
                }
            })?;
            let pcall = scope.create_function_mut(|lua, argv: MultiValue| {
                let (reply, kind) = call_host(lua, &argv, &host, &clock)?;
                match kind {
                    Called::Reply | Called::Failed => Ok(reply),
                    Called::Misused => raise(&self.bridge, reply),
                }
            })?;
            // Left in place after the run: a scope's functions refuse to
            // run once it ends, and the next run replaces them.
            self.redis.raw_set(&self.names.call, call)?;
            self.redis.raw_set(&self.names.pcall, pcall)?;
            match params {
                None => self.runner.call::<MultiValue>(callable),
                Some((keys, args)) => self.runner.call::<MultiValue>((callable, keys, args)),
            }
        });
        self.clock.started.set(None);
        *self.clock.watch.borrow_mut() = None;
        let host = host.into_inner();
        for (level, line) in self.logs.borrow_mut().drain(..) {
            host.log(level, &line);
        }
        if self.clock.halted.get() {
            return Outcome::Halted;
        }
        let line = self.clock.killed_at.get();
        if line != 0 {
            let name = String::from_utf8_lossy(name);
            let text = format!("ERR Script killed by user with SCRIPT KILL... script: {name}, on {source}:{line}.");
            return Outcome::Killed(Value::Error(text.into_bytes()));
        }
        if self.clock.abandoned.get() {
            return Outcome::Abandoned;
        }
        let outcome = match result {
            Ok(values) => values,
            Err(e) => return Outcome::Reply(Value::Error(format!("ERR Error running script: {e}").into_bytes())),
        };
        let mut values = outcome.into_iter();
        let ok = matches!(values.next(), Some(Lua_::Boolean(true)));
        let value = values.next().unwrap_or(Lua_::Nil);
        if ok {
            return Outcome::Reply(from_lua(&value, self.clock.resp3.get()));
        }
        Outcome::Reply(failure_reply(&value, name))
    }

    /// Compile and run a library's `code` (its `#!lua` line included, read
    /// as a comment), as `FUNCTION LOAD` does, and give the functions it
    /// registered, or Redis's error text. With `install`, they become
    /// this engine's to run ([`Engine::run_function`]), replacing any of
    /// the same names.
    pub fn load_library(&mut self, code: &[u8], install: bool) -> Result<Vec<Registered>, Vec<u8>> {
        let source: Vec<u8> = match code.strip_prefix(b"#!") {
            Some(rest) => [b"--".as_slice(), rest].concat(),
            None => code.to_vec(),
        };
        let chunk = match self.lua.load(&source).set_name("@user_function").into_function() {
            Ok(f) => f,
            Err(e) => {
                let text = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    other => other.to_string(),
                };
                return Err(format!("ERR Error compiling function: {text}").into_bytes());
            }
        };
        let load: Function = self.bridge.raw_get("load_library").map_err(|e| format!("ERR {e}").into_bytes())?;
        self.clock.load_deadline.set(Some(Instant::now() + LOAD_TIMEOUT));
        self.clock.load_timed_out.set(false);
        let loaded = load.call::<(Option<LuaString>, Option<Table>)>(chunk);
        self.clock.load_deadline.set(None);
        let registering = |text: &[u8]| [b"ERR Error registering functions: ".as_slice(), text].concat();
        if self.clock.load_timed_out.get() {
            return Err(registering(b"ERR FUNCTION LOAD timeout"));
        }
        let list = match loaded {
            Ok((None, Some(list))) => list,
            Ok((Some(failure), _)) => return Err(registering(&failure.as_bytes())),
            Ok((None, None)) => return Err(b"ERR the library loader failed".to_vec()),
            Err(e) => return Err(registering(format!("ERR {e}").as_bytes())),
        };
        if install {
            self.last_function = None;
        }
        let mut out = Vec::new();
        for entry in list.sequence_values::<Table>() {
            let entry = entry.map_err(|e| format!("ERR {e}").into_bytes())?;
            let field =
                |name: &str| entry.raw_get::<Option<LuaString>>(name).ok().flatten().map(|s| s.as_bytes().to_vec());
            let name = field("name").unwrap_or_default();
            let description = field("description");
            let flags = entry.raw_get::<Option<u8>>("flags").ok().flatten().unwrap_or(0);
            if install {
                let callback: Lua_ = entry.raw_get("callback").unwrap_or(Lua_::Nil);
                let key =
                    self.lua.create_string(name.to_ascii_lowercase()).map_err(|e| format!("ERR {e}").into_bytes())?;
                self.functions.raw_set(key, callback).map_err(|e| format!("ERR {e}").into_bytes())?;
            }
            out.push(Registered { name, description, flags });
        }
        if out.is_empty() {
            return Err(b"ERR No functions registered".to_vec());
        }
        Ok(out)
    }

    /// Forget every installed function (the server's libraries changed).
    pub fn clear_functions(&mut self) {
        if let Ok(empty) = self.lua.create_table() {
            self.functions = empty;
        }
        self.last_function = None;
        self.lua.gc_collect().ok();
    }
}

/// What a run runs: a script or a library's function, the name and the
/// source its errors are reported with, and a function's parameters.
struct Target<'a> {
    callable: Function,
    name: &'a [u8],
    source: &'static str,
    params: Option<(Table, Table)>,
}

/// A function a library registered with `redis.register_function`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub name: Vec<u8>,
    pub description: Option<Vec<u8>>,
    /// [`FUNCTION_FLAGS`] bits.
    pub flags: u8,
}

/// The flags a function may be registered with, as Redis lists them, and
/// their bits in [`Registered::flags`].
pub const FUNCTION_FLAGS: [(&str, u8); 5] =
    [("no-writes", 1), ("allow-oom", 2), ("allow-stale", 4), ("no-cluster", 8), ("allow-cross-slot-keys", 16)];

/// How long a library's code may run while it loads (Redis's limit).
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// The error reply for a script that raised `err` (the table the error
/// handler made): `CODE message script: <sha>, on @user_script:<line>.`
fn failure_reply(err: &Lua_, name: &[u8]) -> Value {
    let Lua_::Table(t) = err else {
        return Value::Error(b"ERR Error running script, execution failure".to_vec());
    };
    let msg = match t.raw_get::<Lua_>("err") {
        Ok(Lua_::String(s)) => s.as_bytes().to_vec(),
        _ => b"ERR execution failure".to_vec(),
    };
    let mut out = convert::trim_line_breaks(&msg);
    let source = t.raw_get::<Option<mlua::LuaString>>("source").ok().flatten();
    let line = t.raw_get::<Option<i64>>("line").ok().flatten();
    if let (Some(source), Some(line)) = (source, line) {
        out.extend_from_slice(b" script: ");
        out.extend_from_slice(name);
        out.extend_from_slice(b", on ");
        out.extend_from_slice(&source.as_bytes());
        out.extend_from_slice(format!(":{line}.").as_bytes());
    }
    Value::Error(out)
}

/// The innermost frame running the user's script, outwards from the
/// error handler: its source and current line, as Redis reports where a
/// script failed.
fn user_place(lua: &Lua) -> (Option<String>, Option<i64>) {
    for level in 1..200 {
        let found = lua.inspect_stack(level, |frame| {
            let source = frame.source();
            let is_user = matches!(source.source.as_deref(), Some("@user_script" | "@user_function"));
            is_user.then(|| (source.source.map(|s| s.into_owned()), frame.current_line().map(|l| l as i64)))
        });
        match found {
            None => break,
            Some(Some((source, line))) => return (source, line),
            Some(None) => {}
        }
    }
    (None, None)
}

/// What a call into the host came to.
#[derive(Clone, Copy)]
enum Called {
    /// A reply.
    Reply,
    /// The command's error reply: `redis.call` raises it, `redis.pcall`
    /// returns it.
    Failed,
    /// The call itself was wrong (no command, an argument that is not a
    /// string or number): both raise it.
    Misused,
}

/// Raise `table` as the script's error: kept in `bridge.raised` for the
/// error handler, which puts it in the place of the opaque error value a
/// Rust function raises.
/// The first argument as `lua_tonumber` reads it (a numeric string is a
/// number; anything else none).
fn number_arg(lua: &Lua, args: &MultiValue) -> Option<f64> {
    args.front().and_then(|v| lua.coerce_number(v.clone()).ok().flatten())
}

fn raise(bridge: &Table, table: Lua_) -> mlua::Result<Lua_> {
    bridge.raw_set("raised", table)?;
    Err(mlua::Error::runtime("redis.call failed"))
}

/// Raise `text` as a Lua library function does (`luaL_error`): prefixed
/// with the place in the script that called the function.
fn raise_text(lua: &Lua, bridge: &Table, text: &str) -> mlua::Result<Lua_> {
    let place = lua
        .inspect_stack(1, |frame| {
            let source = frame.source();
            match (source.short_src, frame.current_line()) {
                (Some(src), Some(line)) if source.what == "Lua" || source.what == "main" => format!("{src}:{line}: "),
                _ => String::new(),
            }
        })
        .unwrap_or_default();
    raise(bridge, Lua_::String(lua.create_string(format!("{place}{text}"))?))
}

/// One `redis.call` or `redis.pcall`: the host runs it, and a script that
/// has now written can no longer be stopped.
fn call_host(
    lua: &Lua,
    argv: &MultiValue,
    host: &RefCell<&mut dyn Host>,
    clock: &RunClock,
) -> mlua::Result<(Lua_, Called)> {
    clock.check(|| lua.inspect_stack(1, |frame| frame.current_line().map_or(1, |l| l as i32)).unwrap_or(1))?;
    let mut host = host.try_borrow_mut().map_err(|_| mlua::Error::runtime("redis.call inside a call"))?;
    let mode = CallMode { resp3: clock.resp3.get(), aof: clock.repl.get() & REPL_AOF != 0 };
    let called = bridge_call(lua, argv, &mut **host, mode);
    let wrote = host.wrote();
    clock.stoppable.set(!wrote);
    if wrote {
        if let Some(watch) = clock.watch.borrow().as_ref() {
            watch.wrote.store(true, Ordering::Relaxed);
        }
    }
    if host.abandoned() {
        clock.abandoned.set(true);
        return Err(mlua::Error::runtime("script abandoned"));
    }
    called
}

/// Arguments of a `redis.call` gathered on the stack.
const INLINE_ARGS: usize = 8;

/// `redis.call`'s way into the host.
fn bridge_call(lua: &Lua, argv: &MultiValue, host: &mut dyn Host, mode: CallMode) -> mlua::Result<(Lua_, Called)> {
    if argv.is_empty() {
        return Ok((Lua_::Table(error_table(lua, NO_ARGS)?), Called::Misused));
    }
    // Strings are passed as Lua holds them; only numbers need text.
    let mut numbers: Vec<Vec<u8>> = Vec::new();
    for arg in argv.iter() {
        match arg {
            Lua_::String(_) => {}
            // Redis writes a number argument with 17 significant digits
            // (`%.17g`), not as Lua's `tostring` would.
            Lua_::Number(n) => {
                let mut text = Vec::new();
                kvik_protocol::number::write_double_g17(&mut text, *n);
                numbers.push(text);
            }
            Lua_::Integer(n) => numbers.push(n.to_string().into_bytes()),
            _ => return Ok((Lua_::Table(error_table(lua, BAD_ARG)?), Called::Misused)),
        }
    }
    // Most calls have a few arguments: their bytes are gathered on the
    // stack, the rest (a long MSET, say) in vectors.
    let reply = if argv.len() <= INLINE_ARGS {
        let mut held: [Option<mlua::BorrowedBytes>; INLINE_ARGS] = Default::default();
        for (slot, arg) in held.iter_mut().zip(argv.iter()) {
            if let Lua_::String(s) = arg {
                *slot = Some(s.as_bytes());
            }
        }
        let mut args: [&[u8]; INLINE_ARGS] = [&[]; INLINE_ARGS];
        let mut next_number = numbers.iter();
        for (i, slot) in held.iter().take(argv.len()).enumerate() {
            args[i] = match slot {
                Some(bytes) => bytes,
                None => next_number.next().map_or(&[][..], Vec::as_slice),
            };
        }
        host.call(&args[..argv.len()], mode)
    } else {
        let strings: Vec<mlua::BorrowedBytes> = argv
            .iter()
            .filter_map(|arg| match arg {
                Lua_::String(s) => Some(s.as_bytes()),
                _ => None,
            })
            .collect();
        let (mut next_string, mut next_number) = (strings.iter(), numbers.iter());
        let args: Vec<&[u8]> = argv
            .iter()
            .filter_map(|arg| match arg {
                Lua_::String(_) => next_string.next().map(|b| &**b),
                _ => next_number.next().map(Vec::as_slice),
            })
            .collect();
        host.call(&args, mode)
    };
    let kind = if matches!(reply, Value::Error(_)) { Called::Failed } else { Called::Reply };
    Ok((convert::to_lua(lua, &reply, mode.resp3)?, kind))
}

/// `redis.log(level, message…)`: the line and its level, or the text of
/// the misuse.
fn log_line(lua: &Lua, argv: &MultiValue) -> mlua::Result<Result<(u8, Vec<u8>), &'static str>> {
    if argv.len() < 2 {
        return Ok(Err("redis.log() requires two arguments or more."));
    }
    let level = match argv.front() {
        Some(Lua_::Number(n)) => *n,
        Some(Lua_::Integer(n)) => *n as f64,
        _ => return Ok(Err("First argument must be a number.")),
    };
    if !(0.0..=3.0).contains(&level) {
        return Ok(Err("Invalid debug level."));
    }
    let mut line = Vec::new();
    for (i, arg) in argv.iter().skip(1).enumerate() {
        if i > 0 {
            line.push(b' ');
        }
        if let Some(s) = lua.coerce_string(arg.clone())? {
            line.extend_from_slice(&s.as_bytes());
        }
    }
    Ok(Ok((level as u8, line)))
}

/// `redis.log` lines (level, text) waiting for the host.
type LogLines = Rc<RefCell<Vec<(u8, Vec<u8>)>>>;

/// Names the engine sets on every run, as Lua strings made once.
struct Names {
    keys: LuaString,
    argv: LuaString,
    call: LuaString,
    pcall: LuaString,
    raised: LuaString,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host that answers GET with its argument and fails everything else.
    #[derive(Default)]
    struct Echo {
        calls: Vec<Vec<Vec<u8>>>,
        logged: Vec<(u8, Vec<u8>)>,
    }

    impl Host for Echo {
        fn call(&mut self, args: &[&[u8]], _mode: CallMode) -> Value {
            self.calls.push(args.iter().map(|a| a.to_vec()).collect());
            match args[0] {
                b"get" => Value::Bulk(args[1].to_vec()),
                _ => Value::Error(b"ERR unknown command".to_vec()),
            }
        }
        fn wrote(&self) -> bool {
            false
        }
        fn log(&mut self, level: u8, line: &[u8]) {
            self.logged.push((level, line.to_vec()));
        }
    }

    fn eval(engine: &mut Engine, body: &str, keys: &[&[u8]], host: &mut Echo) -> Outcome {
        let sha = sha1_hex(body.as_bytes());
        if let Err(e) = engine.compile(&sha, body.as_bytes()) {
            return Outcome::Reply(Value::Error(e));
        }
        engine.run(&sha, keys, &[], host, RunLimits { time_limit: Duration::from_millis(200), watch: Arc::default() })
    }

    fn err(text: &str) -> Outcome {
        Outcome::Reply(Value::Error(text.as_bytes().to_vec()))
    }

    #[test]
    fn sha1_is_the_hex_redis_names_scripts_by() {
        assert_eq!(&sha1_hex(b"return 1"), b"e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
    }

    #[test]
    fn scripts_call_the_host_and_fail_as_redis_reports() {
        let mut engine = Engine::new().expect("engine");
        let mut host = Echo::default();
        let got = eval(&mut engine, "return redis.call('get', KEYS[1])", &[b"k"], &mut host);
        assert_eq!(got, Outcome::Reply(Value::bulk("k")));
        let body = "return redis.call('nope')";
        let sha = String::from_utf8_lossy(&sha1_hex(body.as_bytes())).into_owned();
        let want = format!("ERR unknown command script: {sha}, on @user_script:1.");
        assert_eq!(eval(&mut engine, body, &[], &mut host), err(&want));
        assert_eq!(eval(&mut engine, "return redis.pcall('nope')", &[], &mut host), err("ERR unknown command"));
        let body = "\nreturn undefined_thing";
        let sha = String::from_utf8_lossy(&sha1_hex(body.as_bytes())).into_owned();
        let want = format!(
            "ERR user_script:2: Script attempted to access nonexistent global variable 'undefined_thing' script: {sha}, on @user_script:2."
        );
        assert_eq!(eval(&mut engine, body, &[], &mut host), err(&want));
        let got = eval(&mut engine, "x = 1", &[], &mut host);
        let Outcome::Reply(Value::Error(e)) = got else { panic!("{got:?}") };
        assert!(e.starts_with(b"ERR user_script:1: Attempt to modify a readonly table script: "));
        let got = eval(&mut engine, "return 'unclosed", &[], &mut host);
        assert!(
            matches!(&got, Outcome::Reply(Value::Error(e)) if e.starts_with(b"ERR Error compiling script (new function): user_script:1:")),
            "{got:?}"
        );
    }

    #[test]
    fn a_busy_script_is_killed_while_it_has_not_written_and_halted_always() {
        let mut engine = Engine::new().expect("engine");
        let mut host = Echo::default();
        let watch = Arc::new(Watch::new(Arc::default()));
        let limits = RunLimits { time_limit: Duration::from_millis(50), watch: Arc::clone(&watch) };
        let body = "local n = 0\nwhile true do n = n + 1 end";
        let sha = sha1_hex(body.as_bytes());
        engine.compile(&sha, body.as_bytes()).expect("compiles");
        let killer = {
            let watch = Arc::clone(&watch);
            std::thread::spawn(move || {
                while !watch.busy.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                watch.kill.store(true, Ordering::Relaxed);
            })
        };
        let got = engine.run(&sha, &[], &[], &mut host, limits.clone());
        killer.join().expect("killer");
        let want = format!(
            "ERR Script killed by user with SCRIPT KILL... script: {}, on @user_script:2.",
            String::from_utf8_lossy(&sha)
        );
        assert_eq!(got, Outcome::Killed(Value::Error(want.into_bytes())));
        assert_eq!(watch.busy_total.load(Ordering::Relaxed), 1, "counted busy once");
        // A script that wrote is not killed, but a halt stops it.
        struct Writer;
        impl Host for Writer {
            fn call(&mut self, _: &[&[u8]], _: CallMode) -> Value {
                Value::Integer(1)
            }
            fn wrote(&self) -> bool {
                true
            }
            fn log(&mut self, _: u8, _: &[u8]) {}
        }
        let body = "redis.call('incr', 'x') while true do end";
        let sha = sha1_hex(body.as_bytes());
        engine.compile(&sha, body.as_bytes()).expect("compiles");
        let stopper = {
            let watch = Arc::clone(&watch);
            std::thread::spawn(move || {
                while !watch.busy.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                watch.kill.store(true, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
                assert!(watch.wrote.load(Ordering::Relaxed));
                watch.halt.store(true, Ordering::Relaxed);
            })
        };
        assert_eq!(engine.run(&sha, &[], &[], &mut Writer, limits), Outcome::Halted);
        stopper.join().expect("stopper");
        // The engine is usable afterwards.
        assert_eq!(eval(&mut engine, "return 3", &[], &mut host), Outcome::Reply(Value::Integer(3)));
    }

    #[test]
    fn the_cache_holds_more_scripts_than_lua_has_stack_slots() {
        let mut engine = Engine::new().expect("engine");
        let mut host = Echo::default();
        for i in 0..10_000 {
            let body = format!("return {i}");
            engine.compile(&sha1_hex(body.as_bytes()), body.as_bytes()).expect("compiles");
        }
        assert_eq!(eval(&mut engine, "return 9999", &[], &mut host), Outcome::Reply(Value::Integer(9999)));
        let got = eval(&mut engine, "return cmsgpack.unpack(cmsgpack.pack(7))", &[], &mut host);
        assert_eq!(got, Outcome::Reply(Value::Integer(7)));
    }

    #[test]
    fn libraries_register_functions_that_run_with_their_keys_and_arguments() {
        let mut engine = Engine::new().expect("engine");
        let mut host = Echo::default();
        let code = b"#!lua name=lib\nlocal n = 0\n\
redis.register_function('count', function(keys, args) n = n + 1 return {n, keys[1], args[1]} end)\n\
redis.register_function{function_name='get', callback=function(keys) return redis.call('get', keys[1]) end, \
description='reads', flags={'no-writes', 'ALLOW-OOM', 'no-writes'}}\n\
redis.register_function('keys', function() return KEYS end)";
        let got = engine.load_library(code, true).expect("loads");
        let names: Vec<&[u8]> = got.iter().map(|r| r.name.as_slice()).collect();
        assert_eq!(names, [&b"count"[..], b"get", b"keys"]);
        assert_eq!((got[1].description.as_deref(), got[1].flags), (Some(&b"reads"[..]), 3));
        let limits = || RunLimits { time_limit: Duration::from_millis(200), watch: Arc::default() };
        let run = |engine: &mut Engine, name: &[u8], host: &mut Echo| {
            engine.run_function(name, &[b"k"], &[b"a"], host, limits())
        };
        let want = Value::Array(vec![Value::Integer(1), Value::bulk("k"), Value::bulk("a")]);
        assert_eq!(run(&mut engine, b"count", &mut host), Outcome::Reply(want));
        let Outcome::Reply(Value::Array(second)) = run(&mut engine, b"count", &mut host) else { panic!() };
        assert_eq!(second[0], Value::Integer(2), "the library's locals live on between calls");
        assert_eq!(run(&mut engine, b"get", &mut host), Outcome::Reply(Value::bulk("k")));
        assert_eq!(
            run(&mut engine, b"keys", &mut host),
            err("ERR user_function:5: Script attempted to access nonexistent global variable 'KEYS' script: keys, on @user_function:5.")
        );
        assert_eq!(run(&mut engine, b"nope", &mut host), err("ERR Function not found"));
        engine.clear_functions();
        assert_eq!(run(&mut engine, b"count", &mut host), err("ERR Function not found"));
    }

    #[test]
    fn a_library_that_loads_wrongly_gets_redis_error_text() {
        let mut engine = Engine::new().expect("engine");
        let load = |engine: &mut Engine, body: &str| {
            let code = format!("#!lua name=x\n{body}");
            String::from_utf8(engine.load_library(code.as_bytes(), false).expect_err("refused")).expect("utf-8")
        };
        let e = load(&mut engine, "string.len('a')");
        assert_eq!(e, "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'string'");
        let e = load(&mut engine, "redis.call('ping')");
        assert_eq!(e, "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'");
        let e = load(&mut engine, "redis.register_function{function_name='f', callback=function() end, flags={'bad'}}");
        assert_eq!(e, "ERR Error registering functions: ERR unknown flag given");
        assert_eq!(load(&mut engine, "local x = 1"), "ERR No functions registered");
        let e = load(&mut engine, "redis.register_function('f', function() end");
        assert!(e.starts_with("ERR Error compiling function: user_function:2:"), "{e}");
        let e = load(&mut engine, "while true do end");
        assert_eq!(e, "ERR Error registering functions: ERR FUNCTION LOAD timeout");
    }

    #[test]
    fn redis_log_reaches_the_host() {
        let mut engine = Engine::new().expect("engine");
        let mut host = Echo::default();
        eval(&mut engine, "redis.log(redis.LOG_WARNING, 'a', 1)", &[], &mut host);
        assert_eq!(host.logged, vec![(3, b"a 1".to_vec())]);
    }
}
