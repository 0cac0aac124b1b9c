//! Replies into Lua values and Lua values into replies, by Redis 7.0's
//! rules.
//!
//! Into Lua: an integer is a number, a bulk string a string, a nil bulk or
//! nil array `false`, an array a table, a status `{ok = text}`, an error
//! `{err = text}`; after `redis.setresp(3)` also a map `{map = {k = v}}`, a
//! set `{set = {member = true}}`, a null `nil`, a boolean itself, a double
//! `{double = n}`, a big number `{big_number = text}` and a verbatim
//! string `{verbatim_string = {format = f, string = s}}`.
//!
//! Out of Lua: a string is a bulk string, a number an integer (its
//! fraction dropped), `true` the integer 1 and `false` a null (booleans
//! themselves when the script set RESP3), `nil` a null; a table with a
//! string `err` an error, a string `ok` a status, a number `double`, a
//! string `big_number`, a `verbatim_string` table, a `map` or a `set`
//! table is that reply (tried in that order, as Redis does); any other
//! table an array of its elements from 1 up to the first nil. The caller's
//! protocol then writes each as RESP2 or RESP3.

use kvik_protocol::Value;
use mlua::{Lua, Table, Value as Lua_};

/// How deep a reply may nest on the way into or out of Lua: Redis stops
/// where the Lua stack would overflow; kvik at a fixed depth well inside it.
pub const MAX_DEPTH: usize = 1000;

/// The text of a reply too deep to convert.
pub const TOO_DEEP: &[u8] = b"ERR reached lua stack limit";

/// `value` as the Lua value a script's `redis.call` returns; `resp3`
/// when the script asked for RESP3 (the reply then came in RESP3).
pub fn to_lua(lua: &Lua, value: &Value, resp3: bool) -> mlua::Result<Lua_> {
    to_lua_at(lua, value, 0, resp3)
}

/// A table `{name = value}`.
fn tagged(lua: &Lua, name: &str, value: Lua_) -> mlua::Result<Lua_> {
    let t = lua.create_table()?;
    t.raw_set(name, value)?;
    Ok(Lua_::Table(t))
}

fn to_lua_at(lua: &Lua, value: &Value, depth: usize, resp3: bool) -> mlua::Result<Lua_> {
    if depth > MAX_DEPTH {
        return error_table(lua, TOO_DEEP).map(Lua_::Table);
    }
    Ok(match value {
        Value::Integer(n) => Lua_::Number(*n as f64),
        Value::Bulk(b) => Lua_::String(lua.create_string(b)?),
        Value::Null | Value::NullArray if resp3 => Lua_::Nil,
        Value::Null | Value::NullArray => Lua_::Boolean(false),
        Value::Map(pairs) if resp3 => {
            let t = lua.create_table_with_capacity(0, pairs.len())?;
            for (k, v) in pairs {
                t.raw_set(to_lua_at(lua, k, depth + 1, resp3)?, to_lua_at(lua, v, depth + 1, resp3)?)?;
            }
            tagged(lua, "map", Lua_::Table(t))?
        }
        Value::Set(items) if resp3 => {
            let t = lua.create_table_with_capacity(0, items.len())?;
            for item in items {
                t.raw_set(to_lua_at(lua, item, depth + 1, resp3)?, true)?;
            }
            tagged(lua, "set", Lua_::Table(t))?
        }
        Value::Double(d) if resp3 => tagged(lua, "double", Lua_::Number(*d))?,
        Value::Boolean(b) if resp3 => Lua_::Boolean(*b),
        Value::BigNumber(b) if resp3 => tagged(lua, "big_number", Lua_::String(lua.create_string(b)?))?,
        Value::Verbatim { format, text } if resp3 => {
            let t = lua.create_table()?;
            t.raw_set("string", lua.create_string(text)?)?;
            t.raw_set("format", lua.create_string(format)?)?;
            tagged(lua, "verbatim_string", Lua_::Table(t))?
        }
        Value::Simple(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", lua.create_string(s)?)?;
            Lua_::Table(t)
        }
        Value::Error(e) => Lua_::Table(error_table(lua, &[b"-", e.as_slice()].concat())?),
        Value::Array(items) | Value::Set(items) | Value::Push(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua_at(lua, item, depth + 1, resp3)?)?;
            }
            Lua_::Table(t)
        }
        // RESP2 has none of these; a host speaking RESP2 to scripts never
        // sends them. Flattened as RESP2 would show them.
        Value::Map(pairs) => {
            let t = lua.create_table_with_capacity(pairs.len() * 2, 0)?;
            for (i, (k, v)) in pairs.iter().enumerate() {
                t.raw_set(2 * i + 1, to_lua_at(lua, k, depth + 1, resp3)?)?;
                t.raw_set(2 * i + 2, to_lua_at(lua, v, depth + 1, resp3)?)?;
            }
            Lua_::Table(t)
        }
        Value::Double(d) => Lua_::String(lua.create_string(d.to_string())?),
        Value::Boolean(b) => Lua_::Number(f64::from(u8::from(*b))),
        Value::BigNumber(b) => Lua_::String(lua.create_string(b)?),
        Value::Verbatim { text, .. } => Lua_::String(lua.create_string(text)?),
        Value::Attribute { value, .. } => to_lua_at(lua, value, depth, resp3)?,
    })
}

/// The table Redis raises or returns for an error reply: `{err = text}`,
/// where `text` is `CODE message` (a leading `-` is dropped, a text with no
/// code of its own gets `ERR`, line breaks at the end are trimmed).
pub fn error_table(lua: &Lua, text: &[u8]) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(error_text(text))?)?;
    Ok(t)
}

/// The `CODE message` form of an error text, as Redis's scripts see it.
pub fn error_text(text: &[u8]) -> Vec<u8> {
    let (code, msg): (&[u8], &[u8]) = match text.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&b| b == b' ') {
            Some(space) => (&rest[..space], &rest[space + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", text),
    };
    let start = msg.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(msg.len());
    let end = msg.iter().rposition(|&b| b != b'\r' && b != b'\n').map_or(start, |i| i + 1);
    let mut out = Vec::with_capacity(code.len() + 1 + end.saturating_sub(start));
    out.extend_from_slice(code);
    out.push(b' ');
    out.extend_from_slice(&msg[start..end.max(start)]);
    out
}

/// The reply a script's result `value` makes; `resp3` when the script
/// set RESP3 (its booleans are then booleans).
pub fn from_lua(value: &Lua_, resp3: bool) -> Value {
    from_lua_at(value, 0, resp3)
}

fn from_lua_at(value: &Lua_, depth: usize, resp3: bool) -> Value {
    if depth > MAX_DEPTH {
        return Value::Error(TOO_DEEP.to_vec());
    }
    match value {
        Lua_::String(s) => Value::Bulk(s.as_bytes().to_vec()),
        Lua_::Integer(n) => Value::Integer(*n),
        Lua_::Number(n) => Value::Integer(truncate(*n)),
        Lua_::Boolean(b) if resp3 => Value::Boolean(*b),
        Lua_::Boolean(true) => Value::Integer(1),
        Lua_::Table(t) => from_table(t, depth, resp3),
        _ => Value::Null,
    }
}

fn from_table(t: &Table, depth: usize, resp3: bool) -> Value {
    if let Ok(Lua_::String(e)) = t.raw_get::<Lua_>("err") {
        return Value::Error(trim_line_breaks(&e.as_bytes()));
    }
    if let Ok(Lua_::String(ok)) = t.raw_get::<Lua_>("ok") {
        return Value::Simple(trim_line_breaks(&ok.as_bytes()));
    }
    match t.raw_get::<Lua_>("double") {
        Ok(Lua_::Number(d)) => return Value::Double(d),
        Ok(Lua_::Integer(n)) => return Value::Double(n as f64),
        _ => {}
    }
    if let Ok(Lua_::String(n)) = t.raw_get::<Lua_>("big_number") {
        return Value::BigNumber(trim_line_breaks(&n.as_bytes()));
    }
    if let Ok(Lua_::Table(v)) = t.raw_get::<Lua_>("verbatim_string") {
        if let (Ok(Lua_::String(f)), Ok(Lua_::String(text))) =
            (v.raw_get::<Lua_>("format"), v.raw_get::<Lua_>("string"))
        {
            let mut format = [0u8; 3];
            f.as_bytes().iter().take(3).enumerate().for_each(|(i, b)| format[i] = *b);
            return Value::Verbatim { format, text: text.as_bytes().to_vec() };
        }
    }
    if let Ok(Lua_::Table(m)) = t.raw_get::<Lua_>("map") {
        let pairs = m.pairs::<Lua_, Lua_>().filter_map(Result::ok);
        let pairs = pairs.map(|(k, v)| (from_lua_at(&k, depth + 1, resp3), from_lua_at(&v, depth + 1, resp3)));
        return Value::Map(pairs.collect());
    }
    if let Ok(Lua_::Table(m)) = t.raw_get::<Lua_>("set") {
        let members = m.pairs::<Lua_, Lua_>().filter_map(Result::ok);
        return Value::Set(members.map(|(k, _)| from_lua_at(&k, depth + 1, resp3)).collect());
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Lua_>(i) {
            Ok(Lua_::Nil) | Err(_) => break,
            Ok(v) => items.push(from_lua_at(&v, depth + 1, resp3)),
        }
    }
    Value::Array(items)
}

/// A status or error line cannot hold a line break: Redis writes them as
/// spaces.
pub fn trim_line_breaks(text: &[u8]) -> Vec<u8> {
    text.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }).collect()
}

/// A Lua number as the integer Redis replies with: C's cast of a double
/// to `long long`, toward zero; where the value does not fit (and for NaN)
/// the x86-64 conversion gives the one value it has for "invalid",
/// `i64::MIN`, and so does Redis.
fn truncate(n: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if n.is_nan() || !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_texts_get_a_code_and_lose_their_line_breaks() {
        assert_eq!(error_text(b"-WRONGTYPE Operation against"), b"WRONGTYPE Operation against");
        assert_eq!(error_text(b"-My"), b"ERR My");
        assert_eq!(error_text(b"plain words"), b"ERR plain words");
        assert_eq!(error_text(b"-ERR bad\r\n"), b"ERR bad");
    }

    #[test]
    fn values_go_into_lua_and_back() {
        let lua = Lua::new();
        let reply = Value::Array(vec![
            Value::Integer(7),
            Value::bulk("x"),
            Value::Null,
            Value::simple("OK"),
            Value::error("ERR no"),
        ]);
        let back = from_lua(&to_lua(&lua, &reply, false).expect("into lua"), false);
        // nil bulk is false in Lua, and false is a nil bulk again; the
        // status and the error come back as themselves.
        assert_eq!(back, reply);
        assert_eq!(from_lua(&Lua_::Number(-3.9), false), Value::Integer(-3));
        assert_eq!(from_lua(&Lua_::Boolean(true), false), Value::Integer(1));
        assert_eq!(from_lua(&Lua_::Boolean(false), false), Value::Null);
        assert_eq!(from_lua(&Lua_::Boolean(false), true), Value::Boolean(false));
    }
}
