//! The argument checks of Lua's auxiliary library (`luaL_checknumber`,
//! `luaL_checkinteger`, `luaL_checklstring`, `luaL_optinteger`,
//! `luaL_argerror`, `luaL_checkstack`) for the libraries written here in
//! place of Redis's C ones: the same coercions (a numeric string is a
//! number, a number is a string) and the same error texts, so a script
//! that passes a library the wrong thing fails as it does under Redis.
//!
//! Also the conversions from a double that C makes on x86-64 (`cvttsd2si`:
//! a value out of range, or NaN, is the smallest 64-bit integer), which
//! these libraries rely on where a Lua number becomes a C integer.

use mlua::{Lua, MultiValue, Value};

/// Most stack slots a C function may use (`LUAI_MAXCSTACK`): beyond it
/// `luaL_checkstack` fails.
pub const MAX_C_STACK: usize = 8000;

/// Slots of a Rust function's Lua stack that mlua may use besides the
/// values it returns (found by trying: about two dozen when its pool of
/// error values is empty): a function that returns thousands of values
/// stops this much short of the C limit, so that it fails with the
/// library's error rather than mlua's.
pub const MLUA_RESERVE: usize = 32;

/// The text of `luaL_argerror(L, narg, extra)` raised from the running
/// library function (`narg` is 1-based; 0 is the function itself).
pub fn arg_error(lua: &Lua, narg: i64, extra: &str) -> String {
    let names = lua.inspect_stack(0, |frame| {
        let names = frame.names();
        (names.name.map(|n| n.into_owned()), names.name_what)
    });
    let (name, what) = names.unwrap_or((None, None));
    let name = name.as_deref().unwrap_or("?");
    if what == Some("method") {
        if narg == 1 {
            return format!("calling '{name}' on bad self ({extra})");
        }
        return format!("bad argument #{} to '{name}' ({extra})", narg - 1);
    }
    format!("bad argument #{narg} to '{name}' ({extra})")
}

/// The type name Lua itself gives `value` (`luaL_typename`).
fn type_name(value: Option<&Value>) -> &'static str {
    match value {
        None => "no value",
        Some(Value::Integer(_) | Value::Number(_)) => "number",
        Some(Value::LightUserData(_)) => "userdata",
        Some(v) => v.type_name(),
    }
}

fn type_error(lua: &Lua, args: &MultiValue, narg: usize, expected: &str) -> String {
    let got = type_name(args.get(narg - 1));
    arg_error(lua, narg as i64, &format!("{expected} expected, got {got}"))
}

/// `luaL_checknumber`: argument `narg` (1-based) as a number.
pub fn check_number(lua: &Lua, args: &MultiValue, narg: usize) -> Result<f64, String> {
    let number = args.get(narg - 1).and_then(|v| lua.coerce_number(v.clone()).ok().flatten());
    number.ok_or_else(|| type_error(lua, args, narg, "number"))
}

/// `luaL_checkinteger`: argument `narg` as a number, truncated.
pub fn check_integer(lua: &Lua, args: &MultiValue, narg: usize) -> Result<i64, String> {
    check_number(lua, args, narg).map(to_integer)
}

/// `luaL_optinteger`: `default` when argument `narg` is missing or nil.
pub fn opt_integer(lua: &Lua, args: &MultiValue, narg: usize, default: i64) -> Result<i64, String> {
    match args.get(narg - 1) {
        None | Some(Value::Nil) => Ok(default),
        Some(_) => check_integer(lua, args, narg),
    }
}

/// `luaL_checklstring`: argument `narg` as bytes (a number is written as
/// Lua writes it).
pub fn check_bytes(lua: &Lua, args: &MultiValue, narg: usize) -> Result<Vec<u8>, String> {
    let string = args.get(narg - 1).and_then(|v| lua.coerce_string(v.clone()).ok().flatten());
    match string {
        Some(s) => Ok(s.as_bytes().to_vec()),
        None => Err(type_error(lua, args, narg, "string")),
    }
}

/// The text of `luaL_checkstack`'s failure.
pub fn stack_overflow(what: &str) -> String {
    format!("stack overflow ({what})")
}

/// A double as a C cast to a signed 64-bit integer makes it on x86-64:
/// truncated, and the smallest integer when out of range or NaN.
pub fn to_integer(d: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if d.is_nan() || !(-LIMIT..LIMIT).contains(&d) {
        return i64::MIN;
    }
    d as i64
}

/// A double as a C cast to an unsigned 64-bit integer makes it on x86-64
/// (gcc's sequence: values from 2^63 up are converted less 2^63, with the
/// top bit put back).
pub fn to_unsigned(d: f64) -> u64 {
    const TOP: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if d >= TOP {
        return (to_integer(d - TOP) as u64) ^ (1 << 63);
    }
    to_integer(d) as u64
}

#[cfg(test)]
mod tests {
    use super::{to_integer, to_unsigned};

    #[test]
    fn doubles_become_integers_as_x86_casts_make_them() {
        assert_eq!(to_integer(-2.7), -2);
        assert_eq!(to_integer(f64::NAN), i64::MIN);
        assert_eq!(to_integer(1e30), i64::MIN);
        assert_eq!(to_unsigned(9_223_372_036_854_775_808.0), 1 << 63);
        assert_eq!(to_unsigned(18_446_744_073_709_551_616.0), 0, "2^64");
        assert_eq!(to_unsigned(f64::INFINITY), 0);
        assert_eq!(to_unsigned(f64::NAN), 1 << 63);
        assert_eq!(to_unsigned(-1.0), u64::MAX);
    }
}
