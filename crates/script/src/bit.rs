//! The `bit` library Redis gives scripts (LuaBitOp's functions): 32-bit
//! operations on Lua numbers.
//!
//! An argument becomes 32 bits the way LuaBitOp makes it: the number is
//! rounded to the nearest integer (ties to even) and its low 32 bits are
//! kept, which adding 2^52 + 2^51 to the double does in one step (the
//! integer then fills the low bits of the mantissa). Results are signed
//! 32-bit numbers. A missing or non-numeric argument raises Lua's own
//! "bad argument" error, placed at the script's line.

use mlua::{Lua, MultiValue, Table, Value};

/// What a bit function gives back to Lua, or the text of its error.
type BitResult = Result<Value, String>;

/// One function of the library.
type BitFn = fn(&Lua, &MultiValue) -> BitResult;

/// Build the `bit` table; `raise` turns an error text into the Lua error
/// the script sees.
pub fn library(
    lua: &Lua,
    raise: impl Fn(&Lua, String) -> mlua::Result<Value> + Clone + 'static,
) -> mlua::Result<Table> {
    let bit = lua.create_table()?;
    let functions: [(&'static str, BitFn); 12] = [
        ("tobit", |lua, a| one(lua, a, |x| x)),
        ("bnot", |lua, a| one(lua, a, |x| !x)),
        ("bswap", |lua, a| one(lua, a, u32::swap_bytes)),
        ("band", |lua, a| fold(lua, a, |x, y| x & y)),
        ("bor", |lua, a| fold(lua, a, |x, y| x | y)),
        ("bxor", |lua, a| fold(lua, a, |x, y| x ^ y)),
        ("lshift", |lua, a| shift(lua, a, |x, n| x << n)),
        ("rshift", |lua, a| shift(lua, a, |x, n| x >> n)),
        ("arshift", |lua, a| shift(lua, a, |x, n| ((x as i32) >> n) as u32)),
        ("rol", |lua, a| shift(lua, a, u32::rotate_left)),
        ("ror", |lua, a| shift(lua, a, u32::rotate_right)),
        ("tohex", tohex),
    ];
    for (name, f) in functions {
        let raise = raise.clone();
        bit.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| match f(lua, &args) {
                Ok(v) => Ok(v),
                Err(text) => raise(lua, text),
            })?,
        )?;
    }
    Ok(bit)
}

/// A number as LuaBitOp's 32 bits.
pub fn to_bits(n: f64) -> u32 {
    (n + 6_755_399_441_055_744.0).to_bits() as u32
}

fn result(bits: u32) -> Value {
    Value::Number(f64::from(bits as i32))
}

/// Argument `i` (0-based) as 32 bits, or Lua's error for it.
fn arg(lua: &Lua, args: &MultiValue, i: usize) -> Result<u32, String> {
    crate::lauxlib::check_number(lua, args, i + 1).map(to_bits)
}

fn one(lua: &Lua, args: &MultiValue, op: fn(u32) -> u32) -> BitResult {
    Ok(result(op(arg(lua, args, 0)?)))
}

fn fold(lua: &Lua, args: &MultiValue, op: fn(u32, u32) -> u32) -> BitResult {
    let mut acc = arg(lua, args, 0)?;
    for i in 1..args.len() {
        acc = op(acc, arg(lua, args, i)?);
    }
    Ok(result(acc))
}

fn shift(lua: &Lua, args: &MultiValue, op: fn(u32, u32) -> u32) -> BitResult {
    let x = arg(lua, args, 0)?;
    let n = arg(lua, args, 1)? & 31;
    Ok(result(op(x, n)))
}

/// `bit.tohex(x [, n])`: the low `|n|` hex digits of `x` (8 at most, 8
/// when `n` is left out), upper case when `n` is negative.
fn tohex(lua: &Lua, args: &MultiValue) -> BitResult {
    let x = arg(lua, args, 0)?;
    let n = if args.len() < 2 { 8 } else { arg(lua, args, 1)? as i32 };
    let (digits, upper) = if n < 0 { (n.unsigned_abs(), true) } else { (n as u32, false) };
    let digits = digits.min(8) as usize;
    let table: &[u8; 16] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    let mut out = vec![b'0'; digits];
    let mut rest = x;
    for slot in out.iter_mut().rev() {
        *slot = table[(rest & 15) as usize];
        rest >>= 4;
    }
    Ok(Value::String(lua.create_string(&out).map_err(|e| e.to_string())?))
}

#[cfg(test)]
mod tests {
    use super::to_bits;

    #[test]
    fn numbers_become_bits_as_luabitop_makes_them() {
        assert_eq!(to_bits(1.5) as i32, 2);
        assert_eq!(to_bits(2.5) as i32, 2, "ties go to even");
        assert_eq!(to_bits(-1.5) as i32, -2);
        assert_eq!(to_bits(4_294_967_295.0) as i32, -1);
        assert_eq!(to_bits(4_294_967_301.0), 5);
        assert_eq!(to_bits(4_503_599_627_370_496.0), 0, "2^52");
    }
}
