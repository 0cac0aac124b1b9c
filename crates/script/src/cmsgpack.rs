//! The `cmsgpack` library Redis gives scripts: lua-cmsgpack 0.4.0's
//! `pack`, `unpack`, `unpack_one` and `unpack_limit`, with its rules,
//! quirks and texts, since scripts store what it writes and read it back
//! under both servers.
//!
//! Packing: a number that is a whole 64-bit integer is the smallest
//! integer encoding that holds it; any other number is a float32 when the
//! float says the same, else a float64; a string is fixstr, str8, str16 or
//! str32 by its length; a table whose keys are exactly 1..n is an array,
//! any other a map (in the table's own order); a table 16 levels down,
//! and anything that is not a string, number, boolean or table, is nil.
//! Several arguments are several messages, one after the other.
//!
//! Unpacking reads nil, booleans, every integer and float, str8/16/32 and
//! fixstr, arrays and maps; bin, ext and 0xc1 are "Bad data format", a
//! message cut short is "Missing bytes". 64-bit unsigned integers come
//! back as the signed integer with the same bits, as in Redis's build.
//! There is no nesting limit of its own: what bounds a message is the C
//! stack a decoder may use, 8,000 slots, counted here as Redis's decoder
//! uses them (two per array level, one or two per map level, one per
//! value returned), so the same messages fail with the same texts; only
//! the number of values one call may return stops a few dozen short of
//! Redis's 7,999, for the slots mlua keeps for itself. The decoding keeps
//! its open tables in a scratch table, not in recursion.

use mlua::{Lua, MultiValue, Table, Value};

use crate::lauxlib::{
    arg_error, check_bytes, check_integer, opt_integer, stack_overflow, to_integer, MAX_C_STACK, MLUA_RESERVE,
};

/// Tables nested deeper than this are packed as nil
/// (`LUACMSGPACK_MAX_NESTING`).
const MAX_NESTING: usize = 16;

/// The most a `pack` may write: a table that refers to itself many times
/// over packs to an output that grows as a power of its width, which
/// Redis writes until it runs out of memory; this one stops here.
const MAX_PACKED: usize = 512 << 20;

/// How a library function failed.
enum Fail {
    /// An error raised as `luaL_error` raises it, with the caller's place.
    Placed(String),
    /// An error of Lua's own runtime inside the function (a table index
    /// that is nil or NaN), which carries no place.
    Bare(&'static str),
}

impl From<String> for Fail {
    fn from(text: String) -> Fail {
        Fail::Placed(text)
    }
}

impl From<mlua::Error> for Fail {
    /// mlua's references to Lua values are slots of one more Lua stack,
    /// and run out near 8,000 as the C stack does: a message of that many
    /// strings or tables fails as one of too many values does.
    fn from(e: mlua::Error) -> Fail {
        match e {
            mlua::Error::StackError => Fail::Placed(stack_overflow(TOO_MANY)),
            e => Fail::Placed(e.to_string()),
        }
    }
}

/// What `luaL_checkstack` says when a message has too many values.
const TOO_MANY: &str = "too many return values at once; use unpack_one or unpack_limit instead.";

type Outcome = Result<MultiValue, Fail>;

/// One function of the library.
type MsgpackFn = fn(&Lua, &MultiValue) -> Outcome;

/// Build the `cmsgpack` table; `raise` turns an error text into the Lua
/// error the script sees.
pub fn library(
    lua: &Lua,
    raise: impl Fn(&Lua, String) -> mlua::Result<Value> + Clone + 'static,
) -> mlua::Result<Table> {
    let cmsgpack = lua.create_table()?;
    // `raise` places an error at the Lua frame that called the function
    // raising it; called through this function, whose caller is the
    // library's own (a C frame), the error has no place.
    let raise_bare = raise.clone();
    let bare = lua.create_function(move |lua, text: String| raise_bare(lua, text))?;
    let functions: [(&'static str, MsgpackFn); 4] = [
        ("pack", pack),
        ("unpack", |lua, a| unpack_full(lua, a, a.len(), 0, 0)),
        ("unpack_one", unpack_one),
        ("unpack_limit", unpack_limit),
    ];
    for (name, f) in functions {
        let raise = raise.clone();
        let bare = bare.clone();
        cmsgpack.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| match f(lua, &args) {
                Ok(values) => Ok(values),
                Err(Fail::Placed(text)) => raise(lua, text).map(|v| MultiValue::from_iter([v])),
                Err(Fail::Bare(text)) => bare.call::<Value>(text).map(|v| MultiValue::from_iter([v])),
            })?,
        )?;
    }
    cmsgpack.raw_set("_NAME", "cmsgpack")?;
    cmsgpack.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    cmsgpack.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    cmsgpack.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(cmsgpack)
}

/// `cmsgpack.pack(...)`: every argument packed, one message after another.
fn pack(lua: &Lua, args: &MultiValue) -> Outcome {
    if args.is_empty() {
        return Err(arg_error(lua, 0, "MessagePack pack needs input.").into());
    }
    // The C asks for as many more slots as it has arguments.
    if 2 * args.len() > MAX_C_STACK {
        return Err(arg_error(lua, 0, "Too many arguments for MessagePack pack.").into());
    }
    let mut packer = Packer { out: Vec::new() };
    for value in args.iter() {
        packer.value(value, 0)?;
    }
    Ok(MultiValue::from_iter([Value::String(lua.create_string(&packer.out)?)]))
}

struct Packer {
    out: Vec<u8>,
}

impl Packer {
    fn value(&mut self, value: &Value, level: usize) -> Result<(), Fail> {
        if self.out.len() > MAX_PACKED {
            return Err(Fail::Placed("MessagePack pack: the packed message is too large".to_string()));
        }
        match value {
            Value::String(s) => self.bytes(&s.as_bytes()),
            Value::Boolean(b) => self.out.push(if *b { 0xc3 } else { 0xc2 }),
            Value::Integer(n) => self.number(*n as f64),
            Value::Number(n) => self.number(*n),
            Value::Table(t) if level < MAX_NESTING => self.table(t, level)?,
            _ => self.out.push(0xc0),
        }
        Ok(())
    }

    fn bytes(&mut self, s: &[u8]) {
        let len = s.len();
        if len < 32 {
            self.out.push(0xa0 | len as u8);
        } else if len <= 0xff {
            self.out.extend_from_slice(&[0xd9, len as u8]);
        } else if len <= 0xffff {
            self.out.push(0xda);
            self.out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            self.out.push(0xdb);
            self.out.extend_from_slice(&(len as u32).to_be_bytes());
        }
        self.out.extend_from_slice(s);
    }

    /// A whole number in the 64-bit range as an integer, any other as a
    /// float (`IS_INT64_EQUIVALENT`, with x86's cast).
    fn number(&mut self, n: f64) {
        if !n.is_infinite() && to_integer(n) as f64 == n {
            self.integer(to_integer(n));
        } else {
            self.double(n);
        }
    }

    fn integer(&mut self, n: i64) {
        let out = &mut self.out;
        match n {
            0..=127 => out.push(n as u8),
            128..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
            0x100..=0xffff => header(out, 0xcd, &(n as u16).to_be_bytes()),
            0x1_0000..=0xffff_ffff => header(out, 0xce, &(n as u32).to_be_bytes()),
            0x1_0000_0000.. => header(out, 0xcf, &n.to_be_bytes()),
            -32..=-1 => out.push(n as u8),
            -128..=-33 => out.extend_from_slice(&[0xd0, n as u8]),
            -32768..=-129 => header(out, 0xd1, &(n as i16).to_be_bytes()),
            -2_147_483_648..=-32769 => header(out, 0xd2, &(n as i32).to_be_bytes()),
            _ => header(out, 0xd3, &n.to_be_bytes()),
        }
    }

    /// A float32 when it holds the same value, else a float64.
    fn double(&mut self, d: f64) {
        let f = d as f32;
        if f64::from(f) == d {
            header(&mut self.out, 0xca, &f.to_be_bytes());
        } else {
            header(&mut self.out, 0xcb, &d.to_be_bytes());
        }
    }

    fn table(&mut self, t: &Table, level: usize) -> Result<(), Fail> {
        let (count, array) = shape(t)?;
        if array {
            self.length(0x90, 0xdc, count);
            for i in 1..=count {
                let v: Value = t.raw_get(i)?;
                self.value(&v, level + 1)?;
            }
            return Ok(());
        }
        self.length(0x80, 0xde, count);
        for pair in t.pairs::<Value, Value>() {
            let (key, value) = pair?;
            self.value(&key, level + 1)?;
            self.value(&value, level + 1)?;
        }
        Ok(())
    }

    /// An array or map header: `fix | n` up to 15, else the 16-bit form
    /// (`wide`), else the 32-bit one (`wide + 1`).
    fn length(&mut self, fix: u8, wide: u8, n: usize) {
        if n <= 15 {
            self.out.push(fix | n as u8);
        } else if n <= 0xffff {
            header(&mut self.out, wide, &(n as u16).to_be_bytes());
        } else {
            header(&mut self.out, wide + 1, &(n as u32).to_be_bytes());
        }
    }
}

fn header(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    out.extend_from_slice(body);
}

/// How many keys `t` has, and whether they are exactly 1..n (every key a
/// number, whole, from 1 up to below 2^31, and the largest the count).
fn shape(t: &Table) -> Result<(usize, bool), Fail> {
    let (mut count, mut max, mut array) = (0usize, 0f64, true);
    for pair in t.pairs::<Value, Value>() {
        let (key, _) = pair?;
        count += 1;
        let n = match key {
            Value::Integer(n) => n as f64,
            Value::Number(n) => n,
            _ => {
                array = false;
                continue;
            }
        };
        if n <= 0.0 || n >= 2_147_483_648.0 || n.fract() != 0.0 {
            array = false;
        }
        max = max.max(n);
    }
    Ok((count, array && max == count as f64))
}

/// `cmsgpack.unpack_one(msg [, offset])`: the offset after the first
/// message (-1 when none is left) and the message.
fn unpack_one(lua: &Lua, args: &MultiValue) -> Outcome {
    let offset = opt_integer(lua, args, 2, 0)?;
    unpack_full(lua, args, 1, 1, offset)
}

/// `cmsgpack.unpack_limit(msg, limit [, offset])`: as `unpack_one`, for
/// up to `limit` messages.
fn unpack_limit(lua: &Lua, args: &MultiValue) -> Outcome {
    let limit = check_integer(lua, args, 2)?;
    let offset = opt_integer(lua, args, 3, 0)?;
    unpack_full(lua, args, 1, limit, offset)
}

/// The messages in argument 1 from `offset`, up to `limit` of them; all,
/// and without the offset in front, when both are 0. `slots` is the C
/// stack the function holds before it decodes.
fn unpack_full(lua: &Lua, args: &MultiValue, slots: usize, limit: i64, offset: i64) -> Outcome {
    let data = check_bytes(lua, args, 1)?;
    let len = data.len();
    if offset < 0 || limit < 0 {
        let text = format!("Invalid request to unpack with offset of {} and limit of {}.", offset as i32, len as i32);
        return Err(text.into());
    }
    if offset as u64 > len as u64 {
        return Err(format!("Start offset {} greater than input length {}.", offset as i32, len as i32).into());
    }
    let all = limit == 0 && offset == 0;
    let limit = if all { i64::from(i32::MAX) } else { limit };
    let mut decoder = Decoder { lua, data: &data, at: offset as usize, scratch: lua.create_table()? };
    let mut values = Vec::new();
    while decoder.at < len && (values.len() as i64) < limit {
        // mlua returns the values above the arguments and slots of its
        // own: a few dozen values fewer than Redis fits, with its error.
        if args.len() + MLUA_RESERVE + values.len() + usize::from(!all) > MAX_C_STACK {
            return Err(stack_overflow(TOO_MANY).into());
        }
        values.push(decoder.message(slots + values.len())?);
    }
    if !all {
        if slots + values.len() + 1 > MAX_C_STACK {
            return Err(stack_overflow("in function mp_unpack_full").into());
        }
        let next = if decoder.at == len { -1.0 } else { decoder.at as f64 };
        values.insert(0, Value::Number(next));
    }
    Ok(MultiValue::from_iter(values))
}

/// What one type byte (with what follows it) stands for.
enum Item {
    Value(Value),
    Array(usize),
    Map(usize),
}

/// A table being filled: how many entries are still to come. The table
/// itself (and a map's key waiting for its value) is kept in the
/// decoder's scratch table, not held from Rust, so that a message nested
/// thousands of levels deep holds no more of mlua's references than a
/// flat one.
struct Open {
    left: usize,
    kind: Kind,
}

enum Kind {
    /// An array, and the index of its next element.
    Array(usize),
    /// A map, and where the key of the value that comes next is.
    Map(Key),
}

enum Key {
    /// Not read yet.
    Awaited,
    /// Read, and one no table can have.
    Invalid(&'static str),
    /// Read, and kept in the scratch table.
    Kept,
}

impl Open {
    /// The C stack slots the table holds while it is open: itself, and an
    /// array's index.
    fn slots(&self) -> usize {
        match self.kind {
            Kind::Array(_) => 2,
            Kind::Map(_) => 1,
        }
    }
}

struct Decoder<'a> {
    lua: &'a Lua,
    data: &'a [u8],
    at: usize,
    /// The open tables: the one `d` levels down at `2d - 1`, its waiting
    /// key at `2d`.
    scratch: Table,
}

const MISSING: &str = "Missing bytes in input.";
const BAD_FORMAT: &str = "Bad data format in input.";

impl<'a> Decoder<'a> {
    /// One whole message, read with `base` C stack slots in use.
    fn message(&mut self, base: usize) -> Result<Value, Fail> {
        let mut open: Vec<Open> = Vec::new();
        let mut slots = base;
        loop {
            let (n, kind) = match self.item(slots)? {
                Item::Value(v) => {
                    match self.complete(&mut open, &mut slots, v)? {
                        Some(done) => return Ok(done),
                        None => continue,
                    };
                }
                Item::Array(n) => {
                    if slots + 2 > MAX_C_STACK {
                        return Err(stack_overflow("in function mp_decode_to_lua_array").into());
                    }
                    (n, Kind::Array(1))
                }
                Item::Map(n) => (n, Kind::Map(Key::Awaited)),
            };
            let table = self.lua.create_table()?;
            if n == 0 {
                match self.complete(&mut open, &mut slots, Value::Table(table))? {
                    Some(done) => return Ok(done),
                    None => continue,
                };
            }
            self.scratch.raw_set(2 * open.len() + 1, table)?;
            let entry = Open { left: n, kind };
            slots += entry.slots();
            open.push(entry);
        }
    }

    /// Put `value` in the innermost open table, and each table that
    /// completes in the one it belongs to: the whole message when the
    /// outermost completes.
    fn complete(&self, open: &mut Vec<Open>, slots: &mut usize, value: Value) -> Result<Option<Value>, Fail> {
        let mut done = value;
        while let Some(mut top) = open.pop() {
            let depth = open.len() + 1;
            let (change, complete) = self.store(&mut top, depth, done)?;
            *slots = slots.saturating_add_signed(change);
            if !complete {
                open.push(top);
                return Ok(None);
            }
            *slots -= top.slots();
            done = self.scratch.raw_get(2 * depth - 1)?;
            self.scratch.raw_set(2 * depth - 1, Value::Nil)?;
        }
        Ok(Some(done))
    }

    /// Put `value` in `top`, the table `depth` levels down: the change in
    /// C stack slots it makes (a map's key waits on the stack for its
    /// value), and whether the table is complete.
    fn store(&self, top: &mut Open, depth: usize, value: Value) -> Result<(isize, bool), Fail> {
        let key_at = 2 * depth;
        let table = || self.scratch.raw_get::<Table>(2 * depth - 1);
        match &mut top.kind {
            Kind::Array(next) => {
                table()?.raw_set(*next, value)?;
                *next += 1;
            }
            Kind::Map(key) => match std::mem::replace(key, Key::Awaited) {
                Key::Awaited => {
                    *key = match value {
                        Value::Nil => Key::Invalid("table index is nil"),
                        Value::Number(n) if n.is_nan() => Key::Invalid("table index is NaN"),
                        v => {
                            self.scratch.raw_set(key_at, v)?;
                            Key::Kept
                        }
                    };
                    return Ok((1, false));
                }
                // What `lua_settable` says of such a key.
                Key::Invalid(text) => return Err(Fail::Bare(text)),
                Key::Kept => {
                    let k: Value = self.scratch.raw_get(key_at)?;
                    self.scratch.raw_set(key_at, Value::Nil)?;
                    table()?.raw_set(k, value)?;
                    top.left -= 1;
                    return Ok((-1, top.left == 0));
                }
            },
        }
        top.left -= 1;
        Ok((0, top.left == 0))
    }

    /// The item at the cursor, read with `slots` C stack slots in use.
    fn item(&mut self, slots: usize) -> Result<Item, Fail> {
        let Some(&tag) = self.data.get(self.at) else { return Err(Fail::Placed(MISSING.to_string())) };
        if slots + 1 > MAX_C_STACK {
            return Err(stack_overflow(TOO_MANY).into());
        }
        let number = |n: f64| Ok(Item::Value(Value::Number(n)));
        match tag {
            0x00..=0x7f => {
                self.at += 1;
                number(f64::from(tag))
            }
            0xe0..=0xff => {
                self.at += 1;
                number(f64::from(tag as i8))
            }
            0xcc => number(f64::from(self.body::<1>()?[0])),
            0xd0 => number(f64::from(self.body::<1>()?[0] as i8)),
            0xcd => number(f64::from(u16::from_be_bytes(self.body()?))),
            0xd1 => number(f64::from(i16::from_be_bytes(self.body()?))),
            0xce => number(f64::from(u32::from_be_bytes(self.body()?))),
            0xd2 => number(f64::from(i32::from_be_bytes(self.body()?))),
            // Pushed as a signed integer: the top half wraps round.
            0xcf => number(u64::from_be_bytes(self.body()?) as i64 as f64),
            0xd3 => number(i64::from_be_bytes(self.body()?) as f64),
            0xca => number(f64::from(f32::from_be_bytes(self.body()?))),
            0xcb => number(f64::from_be_bytes(self.body()?)),
            0xc0 | 0xc2 | 0xc3 => {
                self.at += 1;
                Ok(Item::Value(match tag {
                    0xc0 => Value::Nil,
                    t => Value::Boolean(t == 0xc3),
                }))
            }
            0xa0..=0xbf => self.string(1, usize::from(tag & 0x1f)),
            0xd9 => {
                let [n] = self.peek::<1>()?;
                self.string(2, usize::from(n))
            }
            0xda => {
                let n = u16::from_be_bytes(self.peek()?);
                self.string(3, usize::from(n))
            }
            0xdb => {
                let n = u32::from_be_bytes(self.peek()?);
                self.string(5, n as usize)
            }
            0x90..=0x9f => {
                self.at += 1;
                Ok(Item::Array(usize::from(tag & 0xf)))
            }
            0x80..=0x8f => {
                self.at += 1;
                Ok(Item::Map(usize::from(tag & 0xf)))
            }
            0xdc => Ok(Item::Array(usize::from(u16::from_be_bytes(self.body()?)))),
            0xdd => Ok(Item::Array(u32::from_be_bytes(self.body()?) as usize)),
            0xde => Ok(Item::Map(usize::from(u16::from_be_bytes(self.body()?)))),
            0xdf => Ok(Item::Map(u32::from_be_bytes(self.body()?) as usize)),
            // 0xc1, bin and ext.
            _ => Err(Fail::Placed(BAD_FORMAT.to_string())),
        }
    }

    /// The `N` bytes after the type byte, without moving past them.
    fn peek<const N: usize>(&self) -> Result<[u8; N], Fail> {
        let start = self.at + 1;
        let bytes = self.data.get(start..start + N).ok_or_else(|| Fail::Placed(MISSING.to_string()))?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// The `N` bytes after the type byte, moving past both.
    fn body<const N: usize>(&mut self) -> Result<[u8; N], Fail> {
        let out = self.peek::<N>()?;
        self.at += 1 + N;
        Ok(out)
    }

    /// A string of `len` bytes after a header of `header` bytes.
    fn string(&mut self, header: usize, len: usize) -> Result<Item, Fail> {
        let start = self.at + header;
        let end = start.checked_add(len).filter(|&end| end <= self.data.len());
        let Some(end) = end else { return Err(Fail::Placed(MISSING.to_string())) };
        let s = self.lua.create_string(&self.data[start..end])?;
        self.at = end;
        Ok(Item::Value(Value::String(s)))
    }
}

#[cfg(test)]
mod tests {
    use mlua::{Lua, Value};

    fn lua() -> Lua {
        let lua = Lua::new();
        let raise = |_: &Lua, text: String| -> mlua::Result<Value> { Err(mlua::Error::runtime(text)) };
        let library = super::library(&lua, raise).expect("library");
        lua.globals().set("cmsgpack", library).expect("global");
        lua
    }

    fn hex_of(lua: &Lua, expr: &str) -> String {
        let packed: mlua::LuaString = lua.load(format!("return cmsgpack.pack({expr})")).eval().expect(expr);
        packed.as_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }

    fn eval_error(lua: &Lua, chunk: &str) -> String {
        match lua.load(chunk).exec() {
            Ok(()) => panic!("{chunk} did not fail"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn numbers_pack_to_the_smallest_encoding() {
        let lua = lua();
        assert_eq!(hex_of(&lua, "0, 127, 128, 255, 256, 65535, 65536"), "007fcc80ccffcd0100cdffffce00010000");
        assert_eq!(hex_of(&lua, "4294967296"), "cf0000000100000000");
        assert_eq!(hex_of(&lua, "-1, -32, -33, -128, -129, -32768, -32769"), "ffe0d0dfd080d1ff7fd18000d2ffff7fff");
        assert_eq!(hex_of(&lua, "-2^63, 2^63"), "d38000000000000000ca5f000000");
        assert_eq!(hex_of(&lua, "1.5, 0.1, 1/0"), "ca3fc00000cb3fb999999999999aca7f800000");
        assert_eq!(hex_of(&lua, "-0.0"), "00");
    }

    #[test]
    fn strings_and_tables_pack_by_size_and_shape() {
        let lua = lua();
        assert_eq!(hex_of(&lua, "'ab'"), "a26162");
        assert!(hex_of(&lua, "string.rep('x', 32)").starts_with("d920"));
        assert!(hex_of(&lua, "string.rep('x', 256)").starts_with("da0100"));
        assert!(hex_of(&lua, "string.rep('x', 65536)").starts_with("db00010000"));
        assert_eq!(hex_of(&lua, "{}"), "90");
        assert_eq!(hex_of(&lua, "{1, 2}"), "920102");
        assert_eq!(hex_of(&lua, "{[2] = 1}"), "810201");
        assert_eq!(hex_of(&lua, "true, false, nil, print"), "c3c2c0c0");
    }

    #[test]
    fn tables_deeper_than_sixteen_levels_pack_as_nil() {
        let lua = lua();
        let nested = "local t = {} for i = 1, 20 do t = {t} end";
        let packed: mlua::LuaString = lua.load(format!("{nested} return cmsgpack.pack(t)")).eval().expect("pack");
        let bytes = packed.as_bytes();
        assert_eq!(bytes.len(), 17);
        assert!(bytes[..16].iter().all(|&b| b == 0x91));
        assert_eq!(bytes[16], 0xc0);
    }

    #[test]
    fn unpack_reads_back_what_pack_wrote() {
        let lua = lua();
        let ok: bool = lua
            .load(
                "local a, b, c = cmsgpack.unpack(cmsgpack.pack({1, {x = 'y'}}, -5.25, 'z'))
                 return a[1] == 1 and a[2].x == 'y' and b == -5.25 and c == 'z'",
            )
            .eval()
            .expect("round trip");
        assert!(ok);
        let (next, value): (i64, i64) = lua.load("return cmsgpack.unpack_one('\\1\\2', 0)").eval().expect("unpack_one");
        assert_eq!((next, value), (1, 1));
        let next: i64 = lua.load("return cmsgpack.unpack_limit('\\1\\2', 2)").eval().expect("unpack_limit");
        assert_eq!(next, -1);
    }

    #[test]
    fn bad_input_fails_with_lua_cmsgpacks_texts() {
        let lua = lua();
        assert!(eval_error(&lua, "cmsgpack.unpack('\\146\\1')").contains("Missing bytes in input."));
        assert!(eval_error(&lua, "cmsgpack.unpack('\\196\\0')").contains("Bad data format in input."));
        assert!(eval_error(&lua, "cmsgpack.unpack('\\129\\192\\1')").contains("table index is nil"));
        assert!(
            eval_error(&lua, "cmsgpack.unpack_one('\\1', 5)").contains("Start offset 5 greater than input length 1.")
        );
        let deep = "cmsgpack.unpack(string.rep('\\145', 5000) .. '\\1')";
        assert!(eval_error(&lua, deep).contains("stack overflow (in function mp_decode_to_lua_array)"));
    }
}
