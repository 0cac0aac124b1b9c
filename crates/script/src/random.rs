//! `math.random` and `math.randomseed` as Redis 7.0 replaces them: one
//! 48-bit linear congruential generator (drand48's: `x = a·x + c mod
//! 2^48`), so that every platform draws the same numbers.
//!
//! The generator is the server's, not a Lua state's: Redis has one, which
//! starts at drand48's default state when the server starts and goes on
//! from call to call (7.0 no longer reseeds it for each script, since
//! scripts are replicated by their effects). kvik has a Lua state per
//! event loop, so the state lives here, shared by all of them; scripts
//! drawing at the same time on two loops each get numbers of the one
//! sequence. A script that seeds it (`math.randomseed(n)`) seeds it for
//! every script after, as in Redis.

use std::sync::atomic::{AtomicU64, Ordering};

use mlua::{Lua, MultiValue, Table, Value};

use crate::lauxlib;

/// drand48's multiplier and increment.
const A: u64 = 0x5_DEEC_E66D;
const C: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;

/// drand48's state before any seeding: the words 0x1234, 0xABCD, 0x330E.
const FIRST: u64 = 0x1234_ABCD_330E;

/// The largest value of one draw (`REDIS_LRAND48_MAX`).
const DRAW_MAX: u64 = i32::MAX as u64;

static STATE: AtomicU64 = AtomicU64::new(FIRST);

/// The next 31-bit draw (`lrand48`), advancing the shared state.
fn draw() -> u64 {
    let step = |x: u64| (A.wrapping_mul(x).wrapping_add(C)) & MASK;
    let mut now = STATE.load(Ordering::Relaxed);
    loop {
        let next = step(now);
        match STATE.compare_exchange_weak(now, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next >> 17,
            Err(seen) => now = seen,
        }
    }
}

/// Seed the state as `srand48(seed)` does: the seed's two halves above
/// drand48's fixed low word.
fn seed(seed: i32) {
    let bits = u64::from(seed as u32);
    STATE.store((bits << 16 | 0x330E) & MASK, Ordering::Relaxed);
}

/// The script's functions, set into its `math` table; `raise` turns an
/// error text into the Lua error the script sees.
pub fn install(
    lua: &Lua,
    math: &Table,
    raise: impl Fn(&Lua, String) -> mlua::Result<Value> + Clone + 'static,
) -> mlua::Result<()> {
    let raise_random = raise.clone();
    math.raw_set(
        "random",
        lua.create_function(move |lua, args: MultiValue| match random(lua, &args) {
            Ok(n) => Ok(Value::Number(n)),
            Err(text) => raise_random(lua, text),
        })?,
    )?;
    math.raw_set(
        "randomseed",
        lua.create_function(move |lua, args: MultiValue| match int_arg(lua, &args, 1) {
            Ok(n) => {
                seed(n);
                Ok(Value::Nil)
            }
            Err(text) => raise(lua, text),
        })?,
    )?;
    Ok(())
}

/// `math.random()`, `math.random(u)`, `math.random(l, u)`, with Lua 5.1's
/// checks and texts.
fn random(lua: &Lua, args: &MultiValue) -> Result<f64, String> {
    let r = (draw() % DRAW_MAX) as f64 / DRAW_MAX as f64;
    match args.len() {
        0 => Ok(r),
        1 => {
            let u = int_arg(lua, args, 1)?;
            if u < 1 {
                return Err(empty_interval(lua, 1));
            }
            Ok((r * f64::from(u)).floor() + 1.0)
        }
        2 => {
            let l = int_arg(lua, args, 1)?;
            let u = int_arg(lua, args, 2)?;
            if l > u {
                return Err(empty_interval(lua, 2));
            }
            Ok((r * (f64::from(u) - f64::from(l) + 1.0)).floor() + f64::from(l))
        }
        _ => Err("wrong number of arguments".to_string()),
    }
}

fn empty_interval(lua: &Lua, position: i64) -> String {
    lauxlib::arg_error(lua, position, "interval is empty")
}

/// Argument `narg` (1-based) as `luaL_checkint` reads it: a number or a
/// numeric string, cut toward zero to 64 bits and then to its low 32.
fn int_arg(lua: &Lua, args: &MultiValue, narg: usize) -> Result<i32, String> {
    lauxlib::check_integer(lua, args, narg).map(|n| n as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_drand48_from_its_default_state() {
        // The sequence a freshly started redis-server 7.0 gives
        // `math.random(1000000)`: 396465, 840486, then 0.35333609737146.
        let mut x = FIRST;
        let mut next = || {
            x = A.wrapping_mul(x).wrapping_add(C) & MASK;
            x >> 17
        };
        let r = |d: u64| (d % DRAW_MAX) as f64 / DRAW_MAX as f64;
        assert_eq!((r(next()) * 1e6).floor() + 1.0, 396_465.0);
        assert_eq!((r(next()) * 1e6).floor() + 1.0, 840_486.0);
        assert!((r(next()) - 0.353_336_097_371_46).abs() < 1e-13);
    }

    #[test]
    fn seeds_and_arguments_become_ints_as_lua_51_casts_them() {
        let int = |d: f64| lauxlib::to_integer(d) as i32;
        assert_eq!(int(3.7), 3);
        assert_eq!(int(-2.9), -2);
        assert_eq!(int(2f64.powi(31)), i32::MIN);
        assert_eq!(int(2f64.powi(40)), 0);
        assert_eq!(int(f64::NAN), 0);
    }
}
