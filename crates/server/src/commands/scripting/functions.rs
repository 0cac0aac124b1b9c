//! Functions: `FUNCTION LOAD | DELETE | FLUSH | LIST | STATS | DUMP |
//! RESTORE | HELP`, `FCALL`, `FCALL_RO` (`FUNCTION KILL` is `SCRIPT
//! KILL`'s, in the module above).
//!
//! A library is checked where it is loaded: its `#!lua name=…` line here,
//! its code in this loop's engine (which runs it to learn what it
//! registers), its names against the others in the registry
//! (`registries::functions`). Every loop then installs the libraries in
//! its own engine before its next `FCALL` (see [`install_current`]), and
//! a function runs as a script does, in parallel with others on other
//! shards, its keys declared by its caller.
//!
//! A library change is a write: it counts as a change, and its command
//! goes to the append-only file as it was sent, its place taken under the
//! registry's lock so that a snapshot holds it or the file after does.

use std::cell::Cell;
use std::sync::Arc;

use kvik_script::{Engine, FUNCTION_FLAGS};

use super::{shebang, start, with_engine, Callee, Rules};
use crate::commands::{Ctx, ReplyTarget};
use crate::keyspace::glob;
use crate::registries::functions::{already_exists, Library};
use crate::state::ServerState;

thread_local! {
    /// The generation of the libraries installed in this loop's engine.
    static INSTALLED: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Install the server's libraries in `engine` if they changed since it
/// last did. A library failing here loaded where it was checked (in
/// another loop's engine: only its time limit can differ); its functions
/// are then missing on this loop, and the log says so.
fn install_current(state: &ServerState, engine: &mut Engine) {
    let generation = state.functions.generation();
    if INSTALLED.get() == Some(generation) {
        return;
    }
    engine.clear_functions();
    super::forget_learned_functions();
    for lib in state.functions.all() {
        if let Err(e) = engine.load_library(&lib.code, true) {
            crate::log!(
                Warning,
                "Library {} did not load on this thread: {}",
                String::from_utf8_lossy(&lib.name),
                String::from_utf8_lossy(&e)
            );
        }
    }
    INSTALLED.set(Some(generation));
}

/// `FCALL function numkeys key… arg…` and `FCALL_RO`.
pub(super) fn fcall<T: ReplyTarget>(c: &mut Ctx<'_, T>, read_only: bool) {
    let name = c.arg(1);
    let state = c.state;
    let Some(flags) = state.functions.flags_of(name) else { return c.error(b"ERR Function not found") };
    let Some(n) = kvik_protocol::number::parse_i64(c.arg(2)) else {
        return c.error(b"ERR Bad number of keys provided");
    };
    if n > (c.argc() - 3) as i64 {
        return c.error(b"ERR Number of keys can't be greater than number of args");
    }
    if n < 0 {
        return c.error(b"ERR Number of keys can't be negative");
    }
    let declared = shebang::Flags {
        no_writes: flags & NO_WRITES != 0,
        allow_oom: flags & ALLOW_OOM != 0,
        allow_stale: flags & ALLOW_STALE != 0,
    };
    let rules = match Rules::of(state, c.session, Some(declared), read_only) {
        Ok(rules) => rules,
        Err(msg) => return c.error(&msg),
    };
    start(c, Callee::Function(name), n as usize, rules, |engine| {
        install_current(state, engine);
        Ok(())
    });
}

const NO_WRITES: u8 = FUNCTION_FLAGS[0].1;
const ALLOW_OOM: u8 = FUNCTION_FLAGS[1].1;
const ALLOW_STALE: u8 = FUNCTION_FLAGS[2].1;

/// The library `code` declares, checked as `FUNCTION LOAD` checks it: its
/// `#!` line, its name (free unless `replace`), its code run in this
/// loop's engine for the functions it registers. Redis's error otherwise.
pub fn create(state: &ServerState, code: &[u8], replace: bool) -> Result<Library, Vec<u8>> {
    let name = library_name(code)?;
    if !replace && state.functions.contains(&name) {
        return Err(already_exists(&name));
    }
    let functions = with_engine(state, |engine| engine.load_library(code, false))?;
    Ok(Library { name, code: Arc::from(code), functions })
}

/// The name a library's `#!lua name=…` line gives it, or Redis's error.
fn library_name(code: &[u8]) -> Result<Vec<u8>, Vec<u8>> {
    if !code.starts_with(b"#!") {
        return Err(b"ERR Missing library metadata".to_vec());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err(b"ERR Invalid library metadata".to_vec());
    };
    let mut parts = code[2..end].split(|b| b.is_ascii_whitespace()).filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or_default();
    let mut name: Option<&[u8]> = None;
    for part in parts {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(b"ERR Invalid metadata value, name argument was given multiple times".to_vec());
            }
            name = Some(&part[5..]);
            continue;
        }
        return Err([b"ERR Invalid metadata value given: ".as_slice(), part].concat());
    }
    let Some(name) = name else { return Err(b"ERR Library name was not given".to_vec()) };
    if name.is_empty() || !name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_') {
        return Err(b"ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".to_vec());
    }
    if !engine.eq_ignore_ascii_case(b"lua") {
        return Err([b"ERR Engine '".as_slice(), engine, b"' not found"].concat());
    }
    Ok(name.to_vec())
}

/// A library change is done: counted, and its command journaled, while
/// the registry is still held.
fn changed<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    c.count_changes(1);
    c.note_change();
}

/// `FUNCTION LOAD [REPLACE] code`.
pub(super) fn load<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let argc = c.argc();
    let mut replace = false;
    for i in 2..argc - 1 {
        let opt = c.arg(i);
        if !opt.eq_ignore_ascii_case(b"replace") {
            return c.error(&[b"ERR Unknown option given: ".as_slice(), opt].concat());
        }
        replace = true;
    }
    let state = c.state;
    let lib = match create(state, c.arg(argc - 1), replace) {
        Ok(lib) => lib,
        Err(msg) => return c.error(&msg),
    };
    let name = lib.name.clone();
    let mut edit = state.functions.edit();
    if let Err(msg) = edit.insert(lib, replace) {
        drop(edit);
        return c.error(&msg);
    }
    changed(c);
    drop(edit);
    c.reply(|s| s.bulk(&name));
}

/// `FUNCTION DELETE library`.
pub(super) fn delete<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let state = c.state;
    let mut edit = state.functions.edit();
    if edit.remove(c.arg(2)).is_none() {
        drop(edit);
        return c.error(b"ERR Library not found");
    }
    changed(c);
    drop(edit);
    c.ok();
}

/// `FUNCTION FLUSH [ASYNC|SYNC]`: both at once (only code is freed).
pub(super) fn flush<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() > 3 {
        return crate::commands::unknown_subcommand_syntax(c);
    }
    if c.argc() == 3 && !matches!(c.arg(2).to_ascii_lowercase().as_slice(), b"sync" | b"async") {
        return c.error(b"ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    let state = c.state;
    let mut edit = state.functions.edit();
    edit.clear();
    changed(c);
    drop(edit);
    c.ok();
}

/// `FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]`, libraries in name
/// order, their functions in the order they were registered.
pub(super) fn list<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let (mut with_code, mut pattern): (bool, Option<&[u8]>) = (false, None);
    let mut i = 2;
    while i < c.argc() {
        let arg = c.arg(i);
        if !with_code && arg.eq_ignore_ascii_case(b"withcode") {
            with_code = true;
        } else if pattern.is_none() && arg.eq_ignore_ascii_case(b"libraryname") {
            if i + 1 >= c.argc() {
                return c.error(b"ERR library name argument was not given");
            }
            i += 1;
            pattern = Some(c.arg(i));
        } else {
            return c.error(&[b"ERR Unknown argument ".as_slice(), arg].concat());
        }
        i += 1;
    }
    let libs: Vec<Arc<Library>> = c
        .state
        .functions
        .all()
        .into_iter()
        .filter(|lib| pattern.is_none_or(|p| glob::matches(p, &lib.name, true)))
        .collect();
    c.reply(|s| {
        s.array(libs.len());
        for lib in &libs {
            s.map(3 + usize::from(with_code));
            s.bulk(b"library_name");
            s.bulk(&lib.name);
            s.bulk(b"engine");
            s.bulk(b"LUA");
            s.bulk(b"functions");
            s.array(lib.functions.len());
            for f in &lib.functions {
                s.map(3);
                s.bulk(b"name");
                s.bulk(&f.name);
                s.bulk(b"description");
                match &f.description {
                    Some(d) => s.bulk(d),
                    None => s.null(),
                }
                s.bulk(b"flags");
                let names: Vec<&str> =
                    FUNCTION_FLAGS.iter().filter(|(_, bit)| f.flags & bit != 0).map(|(name, _)| *name).collect();
                s.set(names.len());
                for name in names {
                    s.simple(name.as_bytes());
                }
            }
            if with_code {
                s.bulk(b"library_code");
                s.bulk(&lib.code);
            }
        }
    });
}

/// `FUNCTION STATS`: the function running longest now, and the counts.
pub(super) fn stats<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let running = c.state.scripts.running_function();
    let (libraries, functions) = c.state.functions.counts();
    c.reply(|s| {
        s.map(2);
        s.bulk(b"running_script");
        match &running {
            None => s.null(),
            Some(run) => {
                s.map(3);
                s.bulk(b"name");
                s.bulk(&run.name);
                s.bulk(b"command");
                s.array(run.command.len());
                for arg in &run.command {
                    s.bulk(arg);
                }
                s.bulk(b"duration_ms");
                s.integer(i64::try_from(run.started.elapsed().as_millis()).unwrap_or(i64::MAX));
            }
        }
        s.bulk(b"engines");
        s.map(1);
        s.bulk(b"LUA");
        s.map(2);
        s.bulk(b"libraries_count");
        s.integer(libraries as i64);
        s.bulk(b"functions_count");
        s.integer(functions as i64);
    });
}

/// `FUNCTION DUMP`: every library's code in Redis's payload format.
pub(super) fn dump<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    let libs = c.state.functions.all();
    let payload = kvik_persist::payload::dump_functions(libs.iter().map(|l| &*l.code), c.state.rdb_compression());
    c.reply(|s| s.bulk(&payload));
}

/// How `FUNCTION RESTORE` treats the libraries there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Only the restored libraries remain.
    Flush,
    /// The restored libraries join the others; a name taken fails it all.
    Append,
    /// As `Append`, a restored library replacing the one of its name.
    Replace,
}

/// `FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]`.
pub(super) fn restore<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    if c.argc() > 4 {
        return crate::commands::unknown_subcommand_syntax(c);
    }
    let policy = match c.argc() {
        4 => match c.arg(3).to_ascii_lowercase().as_slice() {
            b"flush" => Policy::Flush,
            b"append" => Policy::Append,
            b"replace" => Policy::Replace,
            _ => return c.error(b"ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."),
        },
        _ => Policy::Append,
    };
    let codes = match kvik_persist::payload::restore_functions(c.arg(2)) {
        Ok(codes) => codes,
        Err(msg) => return c.error(msg.as_bytes()),
    };
    let state = c.state;
    match join(state, &codes, policy, |_| changed(c)) {
        Ok(()) => c.ok(),
        Err(msg) => c.error(&msg),
    }
}

/// Check every library of `codes` and add them to the registry by
/// `policy`, all or none; `also` runs under the registry's lock once they
/// are in.
pub fn join(
    state: &ServerState,
    codes: &[Vec<u8>],
    policy: Policy,
    also: impl FnOnce(&mut crate::registries::functions::Edit<'_>),
) -> Result<(), Vec<u8>> {
    let mut libs: Vec<Library> = Vec::with_capacity(codes.len());
    for code in codes {
        let lib = create(state, code, true)?;
        if libs.iter().any(|l| l.name == lib.name) {
            return Err(already_exists(&lib.name));
        }
        let clash = |f: &&kvik_script::Registered| {
            libs.iter().any(|l| l.functions.iter().any(|g| g.name.eq_ignore_ascii_case(&f.name)))
        };
        if let Some(f) = lib.functions.iter().find(clash) {
            return Err([b"ERR Function ".as_slice(), &f.name, b" already exists"].concat());
        }
        libs.push(lib);
    }
    let mut edit = state.functions.edit();
    match policy {
        Policy::Flush => edit.clear(),
        Policy::Append => {
            if let Some(lib) = libs.iter().find(|l| edit.get(&l.name).is_some()) {
                return Err([b"ERR Library ".as_slice(), &lib.name, b" already exists"].concat());
            }
        }
        Policy::Replace => {}
    }
    // Function names may not collide with a library that stays.
    let replaced = |name: &[u8]| libs.iter().any(|l| l.name == name);
    for lib in &libs {
        for f in &lib.functions {
            let taken = edit.iter().any(|other| {
                !replaced(&other.name) && other.functions.iter().any(|g| g.name.eq_ignore_ascii_case(&f.name))
            });
            if taken {
                return Err([b"ERR Function ".as_slice(), &f.name, b" already exists"].concat());
            }
        }
    }
    for lib in libs {
        edit.insert(lib, true)?;
    }
    also(&mut edit);
    Ok(())
}

/// Install the libraries an RDB file held (at startup, or `DEBUG
/// RELOAD`): they replace what is there (`flush`: all of it), and one
/// that does not load fails the load, as in Redis.
pub fn install_loaded(state: &ServerState, codes: &[Vec<u8>], flush: bool) -> Result<(), String> {
    if codes.is_empty() && !flush {
        return Ok(());
    }
    let policy = if flush { Policy::Flush } else { Policy::Replace };
    join(state, codes, policy, |_| {}).map_err(|e| format!("Failed loading library: {}", String::from_utf8_lossy(&e)))
}

pub(super) fn help<T: ReplyTarget>(c: &mut Ctx<'_, T>) {
    crate::commands::help(c, HELP);
}

const HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
];
