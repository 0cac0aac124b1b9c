//! kvik's Lua: the world a script runs in, and nothing about where its
//! commands go.
//!
//! An [`Engine`] is one Lua 5.1 state (the interpreter Redis embeds, built
//! from source with the crate) set up as Redis 7.0 sets up its own: the
//! base library without the ways to reach files (`loadfile`, `dofile`),
//! `table`, `string`, `math`, `bit`, `cjson`, `cmsgpack` and `struct`, the
//! `redis` table, and globals that a script may read but not create. The
//! server keeps one engine per event loop (a Lua state belongs to one
//! thread) and hands each run a [`Host`]:
//! the way back into the server that `redis.call` takes. The host answers
//! with a reply [`Value`], and [`convert`] turns values into Lua and back
//! by Redis's rules, so what a script sees and what its caller gets are
//! the same as with redis-server.
//!
//! A library (`FUNCTION LOAD`) is loaded into an engine by
//! [`Engine::load_library`], which runs its code in Redis 7.0's load-time
//! world and gives what it registered; its functions then run by
//! [`Engine::run_function`].
//!
//! (A script's `#!` line and a library's are read by the server, which
//! knows what their flags mean.)

#![forbid(unsafe_code)]

mod bit;
mod cjson;
mod cmsgpack;
mod convert;
mod engine;
mod format;
mod lauxlib;
mod lstruct;
mod random;

pub use cjson::Settings as CjsonSettings;
pub use engine::{sha1_hex, CallMode, Engine, Host, Outcome, Registered, RunLimits, Watch, FUNCTION_FLAGS};
pub use kvik_protocol::Value;

/// The Redis version scripts are told they run on (`redis.REDIS_VERSION`).
pub const REDIS_VERSION: &str = "7.0.15";
/// The same as a number, `0x00MMmmpp` (`redis.REDIS_VERSION_NUM`).
pub const REDIS_VERSION_NUM: i64 = 0x0007_000f;
