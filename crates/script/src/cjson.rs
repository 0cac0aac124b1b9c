//! The `cjson` library Redis gives scripts: `cjson.encode`,
//! `cjson.decode` and `cjson.null`, with lua-cjson 2.1's rules and texts as
//! Redis 7.0 configures it.
//!
//! Encoding: numbers with 14 significant digits (`%.14g`), NaN and the
//! infinities refused; strings with `"`, `\`, `/` and control characters
//! escaped; a table whose keys are all integers from 1 up is an array
//! (holes are `null`) unless it is "excessively sparse" (its largest index
//! is over 10 and over twice its number of elements), which is an error;
//! any other table is an object, in the table's own order, with number
//! keys written as strings; an empty table is `{}`; 1,000 levels at most.
//!
//! Decoding: strict JSON, except that numbers are read as C's `strtod`
//! reads them (a leading `+`, leading zeros, hex, `inf`, `nan`), as Redis's
//! build allows; `null` is `cjson.null`; errors say what was expected, what
//! was found and at which character.
//!
//! Those are the defaults; lua-cjson's settings functions change them
//! (`encode_sparse_array`, `encode_max_depth`, `decode_max_depth`,
//! `encode_number_precision`, `encode_keep_buffer`,
//! `encode_invalid_numbers`, `decode_invalid_numbers`), with its argument
//! checks and texts. A setting lasts, as in Redis, until the scripts' Lua
//! world is made again (`SCRIPT FLUSH`): it lives in a [`Settings`] the
//! server shares between its event loops' engines, so that it holds for
//! every script whichever loop runs it. `cjson.new()` gives a library of
//! its own settings.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::sync::Arc;

use mlua::{Lua, MultiValue, Table, Value};

use crate::format::format_g;

/// cjson's settings, lua-cjson 2.1's defaults until a script changes them.
#[derive(Debug)]
pub struct Settings {
    sparse_convert: AtomicBool,
    sparse_ratio: AtomicI32,
    sparse_safe: AtomicI32,
    encode_max_depth: AtomicI32,
    decode_max_depth: AtomicI32,
    /// 0: refused, 1: written (`inf`, `nan`), 2: written as `null`.
    encode_invalid: AtomicU8,
    decode_invalid: AtomicBool,
    /// Whether an encoding buffer is kept between calls: memory only, kept
    /// and reported as lua-cjson keeps and reports it.
    keep_buffer: AtomicBool,
    precision: AtomicU8,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            sparse_convert: AtomicBool::new(false),
            sparse_ratio: AtomicI32::new(2),
            sparse_safe: AtomicI32::new(10),
            encode_max_depth: AtomicI32::new(1000),
            decode_max_depth: AtomicI32::new(1000),
            encode_invalid: AtomicU8::new(0),
            decode_invalid: AtomicBool::new(true),
            keep_buffer: AtomicBool::new(true),
            precision: AtomicU8::new(14),
        }
    }
}

impl Settings {
    /// Back to the defaults (`SCRIPT FLUSH`).
    pub fn reset(&self) {
        let d = Settings::default();
        let r = Ordering::Relaxed;
        self.sparse_convert.store(d.sparse_convert.into_inner(), r);
        self.sparse_ratio.store(d.sparse_ratio.into_inner(), r);
        self.sparse_safe.store(d.sparse_safe.into_inner(), r);
        self.encode_max_depth.store(d.encode_max_depth.into_inner(), r);
        self.decode_max_depth.store(d.decode_max_depth.into_inner(), r);
        self.encode_invalid.store(d.encode_invalid.into_inner(), r);
        self.decode_invalid.store(d.decode_invalid.into_inner(), r);
        self.keep_buffer.store(d.keep_buffer.into_inner(), r);
        self.precision.store(d.precision.into_inner(), r);
    }

    /// The settings as one call uses them.
    fn now(&self) -> Config {
        let r = Ordering::Relaxed;
        Config {
            sparse_convert: self.sparse_convert.load(r),
            sparse_ratio: self.sparse_ratio.load(r),
            sparse_safe: self.sparse_safe.load(r),
            encode_max_depth: self.encode_max_depth.load(r).max(1) as usize,
            decode_max_depth: self.decode_max_depth.load(r).max(1) as usize,
            encode_invalid: self.encode_invalid.load(r),
            decode_invalid: self.decode_invalid.load(r),
            precision: usize::from(self.precision.load(r)),
        }
    }
}

/// [`Settings`] read once for an `encode` or a `decode`.
#[derive(Debug, Clone, Copy)]
struct Config {
    sparse_convert: bool,
    sparse_ratio: i32,
    sparse_safe: i32,
    encode_max_depth: usize,
    decode_max_depth: usize,
    encode_invalid: u8,
    decode_invalid: bool,
    precision: usize,
}

/// Build the `cjson` table; `raise` turns an error text into the Lua error
/// the script sees.
pub fn library(
    lua: &Lua,
    raise: impl Fn(&Lua, String) -> mlua::Result<Value> + Clone + 'static,
    settings: Arc<Settings>,
) -> mlua::Result<Table> {
    let cjson = lua.create_table()?;
    let raise_encode = raise.clone();
    let encoding = Arc::clone(&settings);
    cjson.raw_set(
        "encode",
        lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 1 {
                return raise_encode(lua, "bad argument #1 to 'encode' (expected 1 argument)".to_string());
            }
            let mut out = Vec::new();
            match encode(&args[0], 1, &encoding.now(), &mut out) {
                Ok(()) => Ok(Value::String(lua.create_string(&out)?)),
                Err(text) => raise_encode(lua, text),
            }
        })?,
    )?;
    let decoding = Arc::clone(&settings);
    let raise_decode = raise.clone();
    cjson.raw_set(
        "decode",
        lua.create_function(move |lua, args: MultiValue| {
            let raise = &raise_decode;
            if args.len() != 1 {
                return raise(lua, "bad argument #1 to 'decode' (expected 1 argument)".to_string());
            }
            let text = match lua.coerce_string(args[0].clone())? {
                Some(s) => s.as_bytes().to_vec(),
                None => {
                    let got = args[0].type_name();
                    return raise(lua, format!("bad argument #1 to 'decode' (string expected, got {got})"));
                }
            };
            let decoded = Decoder { lua, text: &text, at: 0, config: decoding.now() }.document();
            match decoded {
                Ok(v) => Ok(v),
                Err(message) => raise(lua, message),
            }
        })?,
    )?;
    cjson.raw_set("null", Value::NULL)?;
    cjson.raw_set("_NAME", "cjson")?;
    cjson.raw_set("_VERSION", "2.1.0")?;
    settings_functions(lua, &cjson, &raise, &settings)?;
    let raise_new = raise.clone();
    cjson.raw_set(
        "new",
        lua.create_function(move |lua, ()| library(lua, raise_new.clone(), Arc::new(Settings::default())))?,
    )?;
    Ok(cjson)
}

/// An integer setting's argument (`nil`: unchanged), checked as
/// lua-cjson checks it (its range error always names argument 1).
fn integer_option(args: &MultiValue, i: usize, min: i32, max: i32) -> Result<Option<i32>, String> {
    let Some(v) = args.get(i).filter(|v| !v.is_nil()) else { return Ok(None) };
    let n = match v {
        Value::Integer(n) => *n as f64,
        Value::Number(n) => *n,
        Value::String(s) => match std::str::from_utf8(&s.as_bytes()).ok().and_then(|t| t.trim().parse::<f64>().ok()) {
            Some(n) => n,
            None => return Err(format!("bad argument #{} to '{{}}' (number expected, got string)", i + 1)),
        },
        other => return Err(format!("bad argument #{} to '{{}}' (number expected, got {})", i + 1, other.type_name())),
    };
    // As Lua 5.1's `lua_tointeger` and a C `int` make of it.
    let value = n as i64 as i32;
    if value < min || value > max {
        return Err(format!("bad argument #1 to '{{}}' (expected integer between {min} and {max})"));
    }
    Ok(Some(value))
}

/// An option setting's argument (`nil`: unchanged): a boolean (false is
/// option 0, true option 1) or one of `options` by name.
fn enum_option(args: &MultiValue, i: usize, options: &[&str]) -> Result<Option<u8>, String> {
    match args.get(i) {
        None | Some(Value::Nil) => Ok(None),
        Some(Value::Boolean(b)) => Ok(Some(u8::from(*b))),
        Some(Value::String(s)) => {
            let name = s.as_bytes();
            match options.iter().position(|o| o.as_bytes() == &*name) {
                Some(at) => Ok(Some(at as u8)),
                None => Err(format!(
                    "bad argument #{} to '{{}}' (invalid option '{}')",
                    i + 1,
                    String::from_utf8_lossy(&name)
                )),
            }
        }
        Some(Value::Integer(n)) => Err(format!("bad argument #{} to '{{}}' (invalid option '{n}')", i + 1)),
        Some(Value::Number(n)) => {
            Err(format!("bad argument #{} to '{{}}' (invalid option '{}')", i + 1, format_g(*n, 14)))
        }
        Some(other) => Err(format!("bad argument #{} to '{{}}' (string expected, got {})", i + 1, other.type_name())),
    }
}

/// What an option setting returns: false and true as booleans, the
/// others by name.
fn option_value(lua: &Lua, setting: u8, options: &[&str]) -> mlua::Result<Value> {
    match setting {
        0 | 1 => Ok(Value::Boolean(setting == 1)),
        n => Ok(Value::String(lua.create_string(options.get(usize::from(n)).copied().unwrap_or("?"))?)),
    }
}

const ON_OFF: [&str; 2] = ["off", "on"];
const INVALID_NUMBERS: [&str; 3] = ["off", "on", "null"];

/// The settings functions, each returning the setting as it now stands.
fn settings_functions(
    lua: &Lua,
    cjson: &Table,
    raise: &(impl Fn(&Lua, String) -> mlua::Result<Value> + Clone + 'static),
    settings: &Arc<Settings>,
) -> mlua::Result<()> {
    type Setter = fn(&Lua, &Settings, &MultiValue) -> Result<MultiValue, String>;
    let setters: [(&str, usize, Setter); 7] = [
        ("encode_sparse_array", 3, |_, s, args| {
            let convert = enum_option(args, 0, &ON_OFF)?;
            let ratio = integer_option(args, 1, 0, i32::MAX)?;
            let safe = integer_option(args, 2, 0, i32::MAX)?;
            let r = Ordering::Relaxed;
            if let Some(c) = convert {
                s.sparse_convert.store(c == 1, r);
            }
            if let Some(v) = ratio {
                s.sparse_ratio.store(v, r);
            }
            if let Some(v) = safe {
                s.sparse_safe.store(v, r);
            }
            let out = [
                Value::Boolean(s.sparse_convert.load(r)),
                Value::Integer(i64::from(s.sparse_ratio.load(r))),
                Value::Integer(i64::from(s.sparse_safe.load(r))),
            ];
            Ok(MultiValue::from_iter(out))
        }),
        ("encode_max_depth", 1, |_, s, args| {
            if let Some(v) = integer_option(args, 0, 1, i32::MAX)? {
                s.encode_max_depth.store(v, Ordering::Relaxed);
            }
            Ok(MultiValue::from_iter([Value::Integer(i64::from(s.encode_max_depth.load(Ordering::Relaxed)))]))
        }),
        ("decode_max_depth", 1, |_, s, args| {
            if let Some(v) = integer_option(args, 0, 1, i32::MAX)? {
                s.decode_max_depth.store(v, Ordering::Relaxed);
            }
            Ok(MultiValue::from_iter([Value::Integer(i64::from(s.decode_max_depth.load(Ordering::Relaxed)))]))
        }),
        ("encode_number_precision", 1, |_, s, args| {
            if let Some(v) = integer_option(args, 0, 1, 14)? {
                s.precision.store(v as u8, Ordering::Relaxed);
            }
            Ok(MultiValue::from_iter([Value::Integer(i64::from(s.precision.load(Ordering::Relaxed)))]))
        }),
        ("encode_keep_buffer", 1, |_, s, args| {
            if let Some(v) = enum_option(args, 0, &ON_OFF)? {
                s.keep_buffer.store(v == 1, Ordering::Relaxed);
            }
            Ok(MultiValue::from_iter([Value::Boolean(s.keep_buffer.load(Ordering::Relaxed))]))
        }),
        ("encode_invalid_numbers", 1, |lua, s, args| {
            if let Some(v) = enum_option(args, 0, &INVALID_NUMBERS)? {
                s.encode_invalid.store(v, Ordering::Relaxed);
            }
            let now = s.encode_invalid.load(Ordering::Relaxed);
            Ok(MultiValue::from_iter([option_value(lua, now, &INVALID_NUMBERS).map_err(|e| e.to_string())?]))
        }),
        ("decode_invalid_numbers", 1, |_, s, args| {
            if let Some(v) = enum_option(args, 0, &ON_OFF)? {
                s.decode_invalid.store(v == 1, Ordering::Relaxed);
            }
            Ok(MultiValue::from_iter([Value::Boolean(s.decode_invalid.load(Ordering::Relaxed))]))
        }),
    ];
    for (name, most, set) in setters {
        // `name` is the field each function is set as; its errors take the
        // name it was called by.
        let settings = Arc::clone(settings);
        let raise = raise.clone();
        cjson.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                // An argument error names the function as its caller
                // called it (`?` through `pcall`), as `luaL_argerror` does.
                let called =
                    || lua.inspect_stack(0, |d| d.names().name.map(|n| n.into_owned())).flatten().unwrap_or("?".into());
                if args.len() > most {
                    let text = format!("bad argument #{} to '{}' (found too many arguments)", most + 1, called());
                    return raise(lua, text).map(|v| MultiValue::from_iter([v]));
                }
                match set(lua, &settings, &args) {
                    Ok(values) => Ok(values),
                    Err(text) => raise(lua, text.replace("{}", &called())).map(|v| MultiValue::from_iter([v])),
                }
            })?,
        )?;
    }
    Ok(())
}

fn encode(value: &Value, depth: usize, config: &Config, out: &mut Vec<u8>) -> Result<(), String> {
    match value {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(n) => number(*n as f64, config, out)?,
        Value::Number(n) => number(*n, config, out)?,
        Value::String(s) => string(&s.as_bytes(), out),
        Value::Table(t) => table(t, depth, config, out)?,
        other => return Err(format!("Cannot serialise {}: type not supported", other.type_name())),
    }
    Ok(())
}

fn number(n: f64, config: &Config, out: &mut Vec<u8>) -> Result<(), String> {
    if !n.is_finite() {
        match config.encode_invalid {
            0 => return Err("Cannot serialise number: must not be NaN or Inf".to_string()),
            // `nan` whatever its sign (some C libraries write `-nan`).
            1 if n.is_nan() => {
                out.extend_from_slice(b"nan");
                return Ok(());
            }
            1 => {}
            _ => {
                out.extend_from_slice(b"null");
                return Ok(());
            }
        }
    }
    out.extend_from_slice(format_g(n, config.precision).as_bytes());
    Ok(())
}

fn string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// The length of `t` as an array, or `None` when it is an object; an error
/// when it is an array too sparse to write.
fn array_length(t: &Table, config: &Config) -> Result<Option<usize>, String> {
    let (mut max, mut items) = (0f64, 0usize);
    for pair in t.pairs::<Value, Value>() {
        let (key, _) = pair.map_err(|e| e.to_string())?;
        let k = match key {
            Value::Number(k) => k,
            Value::Integer(k) => k as f64,
            _ => return Ok(None),
        };
        if k.floor() != k || k < 1.0 {
            return Ok(None);
        }
        max = max.max(k);
        items += 1;
    }
    let ratio = f64::from(config.sparse_ratio);
    if config.sparse_ratio > 0 && max > items as f64 * ratio && max > f64::from(config.sparse_safe) {
        if config.sparse_convert {
            return Ok(None);
        }
        return Err("Cannot serialise table: excessively sparse array".to_string());
    }
    Ok((max > 0.0).then_some(max as usize))
}

fn table(t: &Table, depth: usize, config: &Config, out: &mut Vec<u8>) -> Result<(), String> {
    if depth > config.encode_max_depth {
        return Err(format!("Cannot serialise, excessive nesting ({depth})"));
    }
    if let Some(len) = array_length(t, config)? {
        out.push(b'[');
        for i in 1..=len {
            if i > 1 {
                out.push(b',');
            }
            let v: Value = t.raw_get(i).map_err(|e| e.to_string())?;
            encode(&v, depth + 1, config, out)?;
        }
        out.push(b']');
        return Ok(());
    }
    out.push(b'{');
    let mut first = true;
    for pair in t.pairs::<Value, Value>() {
        let (key, value) = pair.map_err(|e| e.to_string())?;
        if !first {
            out.push(b',');
        }
        first = false;
        match &key {
            Value::String(s) => string(&s.as_bytes(), out),
            Value::Number(_) | Value::Integer(_) => {
                out.push(b'"');
                let n = match key {
                    Value::Number(n) => n,
                    Value::Integer(n) => n as f64,
                    _ => 0.0,
                };
                number(n, config, out)?;
                out.push(b'"');
            }
            other => {
                return Err(format!("Cannot serialise {}: table key must be a number or string", other.type_name()))
            }
        }
        out.push(b':');
        encode(&value, depth + 1, config, out)?;
    }
    out.push(b'}');
    Ok(())
}

struct Decoder<'a> {
    lua: &'a Lua,
    text: &'a [u8],
    at: usize,
    config: Config,
}

/// One token and where it began.
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    /// What could not be read as a token, and why.
    Bad(&'static str),
}

impl Token {
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str(_) => "T_STRING",
            Token::Num(_) => "T_NUMBER",
            Token::Bool(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Bad(why) => why,
        }
    }
}

impl Decoder<'_> {
    fn document(&mut self) -> Result<Value, String> {
        let (token, at) = self.next()?;
        let value = self.value(token, at, 1)?;
        let (token, at) = self.next()?;
        match token {
            Token::End => Ok(value),
            other => Err(expected("the end", other.name(), at)),
        }
    }

    fn value(&mut self, token: Token, at: usize, depth: usize) -> Result<Value, String> {
        let lua_err = |e: mlua::Error| e.to_string();
        Ok(match token {
            Token::Str(s) => Value::String(self.lua.create_string(&s).map_err(lua_err)?),
            Token::Num(n) => Value::Number(n),
            Token::Bool(b) => Value::Boolean(b),
            Token::Null => Value::NULL,
            Token::ObjBegin => self.object(at, depth)?,
            Token::ArrBegin => self.array(at, depth)?,
            other => return Err(expected("value", other.name(), at)),
        })
    }

    fn nested(&self, at: usize, depth: usize) -> Result<(), String> {
        if depth > self.config.decode_max_depth {
            return Err(format!("Found too many nested data structures ({depth}) at character {}", at + 1));
        }
        Ok(())
    }

    fn object(&mut self, at: usize, depth: usize) -> Result<Value, String> {
        self.nested(at, depth)?;
        let t = self.lua.create_table().map_err(|e| e.to_string())?;
        let (mut token, mut at) = self.next()?;
        if matches!(token, Token::ObjEnd) {
            return Ok(Value::Table(t));
        }
        loop {
            let key = match token {
                Token::Str(s) => s,
                other => return Err(expected("object key string", other.name(), at)),
            };
            let (colon, colon_at) = self.next()?;
            if !matches!(colon, Token::Colon) {
                return Err(expected("colon", colon.name(), colon_at));
            }
            let (v, v_at) = self.next()?;
            let value = self.value(v, v_at, depth + 1)?;
            let key = self.lua.create_string(&key).map_err(|e| e.to_string())?;
            t.raw_set(key, value).map_err(|e| e.to_string())?;
            let (sep, sep_at) = self.next()?;
            match sep {
                Token::ObjEnd => return Ok(Value::Table(t)),
                Token::Comma => {}
                other => return Err(expected("comma or object end", other.name(), sep_at)),
            }
            (token, at) = self.next()?;
        }
    }

    fn array(&mut self, at: usize, depth: usize) -> Result<Value, String> {
        self.nested(at, depth)?;
        let t = self.lua.create_table().map_err(|e| e.to_string())?;
        let (mut token, mut at) = self.next()?;
        if matches!(token, Token::ArrEnd) {
            return Ok(Value::Table(t));
        }
        let mut i = 1;
        loop {
            let value = self.value(token, at, depth + 1)?;
            t.raw_set(i, value).map_err(|e| e.to_string())?;
            i += 1;
            let (sep, sep_at) = self.next()?;
            match sep {
                Token::ArrEnd => return Ok(Value::Table(t)),
                Token::Comma => {}
                other => return Err(expected("comma or array end", other.name(), sep_at)),
            }
            (token, at) = self.next()?;
        }
    }

    /// The next token and the index it starts at; a token that cannot be
    /// read is an error that names the value expected.
    fn next(&mut self) -> Result<(Token, usize), String> {
        while self.at < self.text.len() && matches!(self.text[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
        let at = self.at;
        let rest = &self.text[at..];
        let Some(&c) = rest.first() else { return Ok((Token::End, at)) };
        let single = |t: Token, d: &mut Self| {
            d.at += 1;
            Ok((t, at))
        };
        match c {
            b'{' => single(Token::ObjBegin, self),
            b'}' => single(Token::ObjEnd, self),
            b'[' => single(Token::ArrBegin, self),
            b']' => single(Token::ArrEnd, self),
            b':' => single(Token::Colon, self),
            b',' => single(Token::Comma, self),
            b'"' => self.string_token(at),
            b'-' | b'0'..=b'9' if !self.config.decode_invalid && invalid_number(rest) => {
                Ok((Token::Bad("invalid number"), at))
            }
            b'-' | b'0'..=b'9' => self.number_token(at),
            _ if rest.starts_with(b"true") => {
                self.at += 4;
                Ok((Token::Bool(true), at))
            }
            _ if rest.starts_with(b"false") => {
                self.at += 5;
                Ok((Token::Bool(false), at))
            }
            _ if rest.starts_with(b"null") => {
                self.at += 4;
                Ok((Token::Null, at))
            }
            _ if self.config.decode_invalid && invalid_number_start(rest) => self.number_token(at),
            _ => Ok((Token::Bad("invalid token"), at)),
        }
    }

    fn number_token(&mut self, at: usize) -> Result<(Token, usize), String> {
        match strtod(&self.text[at..]) {
            Some((n, used)) => {
                self.at = at + used;
                Ok((Token::Num(n), at))
            }
            None => Ok((Token::Bad("invalid number"), at)),
        }
    }

    fn string_token(&mut self, at: usize) -> Result<(Token, usize), String> {
        let text = self.text;
        let mut i = at + 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = text.get(i) else {
                return Ok((Token::Bad("unexpected end of string"), i));
            };
            match c {
                b'"' => break,
                b'\\' => {
                    let escape_at = i;
                    let Some(&e) = text.get(i + 1) else {
                        return Ok((Token::Bad("invalid escape code"), escape_at));
                    };
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0c),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let Some((ch, used)) = unicode_escape(&text[i..]) else {
                                return Ok((Token::Bad("invalid unicode escape code"), escape_at));
                            };
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                            i += used;
                            continue;
                        }
                        _ => return Ok((Token::Bad("invalid escape code"), escape_at)),
                    }
                    i += 2;
                }
                _ => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        self.at = i + 1;
        Ok((Token::Str(out), at))
    }
}

/// `\uXXXX` (with its low surrogate when it is a high one) at the start of
/// `s`: the character and the bytes it took.
fn unicode_escape(s: &[u8]) -> Option<(char, usize)> {
    let unit = |s: &[u8]| -> Option<u32> {
        if s.len() < 6 || s[0] != b'\\' || s[1] != b'u' {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(&s[2..6]).ok()?, 16).ok()
    };
    let first = unit(s)?;
    if (0xD800..0xDC00).contains(&first) {
        let second = unit(&s[6..])?;
        if !(0xDC00..0xE000).contains(&second) {
            return None;
        }
        let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
        return Some((char::from_u32(code)?, 12));
    }
    if (0xDC00..0xE000).contains(&first) {
        return None;
    }
    Some((char::from_u32(first)?, 6))
}

/// Whether `s` starts one of the numbers strict JSON refuses and Redis's
/// cjson still reads: a `+`, `inf` or `nan`.
fn invalid_number_start(s: &[u8]) -> bool {
    let s = s.strip_prefix(b"-").unwrap_or(s);
    s.first() == Some(&b'+') || starts_ignore_case(s, b"inf") || starts_ignore_case(s, b"nan")
}

/// Whether `s` starts a number lua-cjson calls invalid: a `+`, hex, a
/// leading zero, `inf` or `nan` (refused when `decode_invalid_numbers` is
/// off).
fn invalid_number(s: &[u8]) -> bool {
    if s.first() == Some(&b'+') {
        return true;
    }
    let s = s.strip_prefix(b"-").unwrap_or(s);
    match s.first() {
        Some(b'0') => matches!(s.get(1), Some(b'x' | b'X' | b'0'..=b'9')),
        Some(c) if *c <= b'9' => false,
        _ => starts_ignore_case(s, b"inf") || starts_ignore_case(s, b"nan"),
    }
}

fn starts_ignore_case(s: &[u8], word: &[u8]) -> bool {
    s.len() >= word.len() && s[..word.len()].eq_ignore_ascii_case(word)
}

/// The longest prefix of `s` that C's `strtod` reads as a number: the
/// value and how many bytes it took, or `None` when no number starts here.
fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let (sign, mut i) = sign_of(s);
    let rest = &s[i..];
    if starts_ignore_case(rest, b"infinity") {
        return Some((sign * f64::INFINITY, i + 8));
    }
    if starts_ignore_case(rest, b"inf") {
        return Some((sign * f64::INFINITY, i + 3));
    }
    if starts_ignore_case(rest, b"nan") {
        return Some((f64::NAN, i + 3));
    }
    if rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' && rest[2].is_ascii_hexdigit()
        || rest.len() > 3
            && rest[0] == b'0'
            && (rest[1] | 0x20) == b'x'
            && rest[2] == b'.'
            && rest[3].is_ascii_hexdigit()
    {
        let (value, used) = hex_float(&rest[2..]);
        return Some((sign * value, i + 2 + used));
    }
    let start = i;
    let digits = |s: &[u8], from: usize| s[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let int = digits(s, i);
    i += int;
    let mut frac = 0;
    if s.get(i) == Some(&b'.') {
        frac = digits(s, i + 1);
        if int + frac > 0 {
            i += 1 + frac;
        }
    }
    if int + frac == 0 {
        return None;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(s.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp = digits(s, j);
        if exp > 0 {
            i = j + exp;
        }
    }
    let text = std::str::from_utf8(&s[start..i]).ok()?;
    let value: f64 = text.parse().ok()?;
    Some((sign * value, i))
}

/// An optional `+` or `-` at the start of `s`: the sign as a factor, and
/// the bytes it took.
fn sign_of(s: &[u8]) -> (f64, usize) {
    match s.first() {
        Some(b'-') => (-1.0, 1),
        Some(b'+') => (1.0, 1),
        _ => (1.0, 0),
    }
}

/// A hex float's digits after `0x` (`1p4`, `ff`, `.8`): value and length.
fn hex_float(s: &[u8]) -> (f64, usize) {
    let mut value = 0f64;
    let mut i = 0;
    while let Some(d) = s.get(i).and_then(|b| (*b as char).to_digit(16)) {
        value = value * 16.0 + f64::from(d);
        i += 1;
    }
    if s.get(i) == Some(&b'.') {
        let mut scale = 1.0 / 16.0;
        i += 1;
        while let Some(d) = s.get(i).and_then(|b| (*b as char).to_digit(16)) {
            value += f64::from(d) * scale;
            scale /= 16.0;
            i += 1;
        }
    }
    if matches!(s.get(i), Some(b'p' | b'P')) {
        let (exp_sign, used) = sign_of(&s[i + 1..]);
        let j = i + 1 + used;
        let exp_digits = s[j..].iter().take_while(|b| b.is_ascii_digit()).count();
        if exp_digits > 0 {
            let exp: i32 = std::str::from_utf8(&s[j..j + exp_digits]).ok().and_then(|t| t.parse().ok()).unwrap_or(0);
            value *= 2f64.powi(exp_sign as i32 * exp);
            i = j + exp_digits;
        }
    }
    (value, i)
}

fn expected(what: &str, found: &str, at: usize) -> String {
    format!("Expected {what} but found {found} at character {}", at + 1)
}

#[cfg(test)]
mod tests {
    use super::strtod;

    #[test]
    fn numbers_are_read_as_strtod_reads_them() {
        assert_eq!(strtod(b"12abc"), Some((12.0, 2)));
        assert_eq!(strtod(b"-1.5e3,"), Some((-1500.0, 6)));
        assert_eq!(strtod(b"1.5e"), Some((1.5, 3)));
        assert_eq!(strtod(b"0x10"), Some((16.0, 4)));
        assert_eq!(strtod(b"0x1p4"), Some((16.0, 5)));
        assert_eq!(strtod(b"+7"), Some((7.0, 2)));
        assert_eq!(strtod(b"-"), None);
        assert_eq!(strtod(b"inf"), Some((f64::INFINITY, 3)));
    }
}
