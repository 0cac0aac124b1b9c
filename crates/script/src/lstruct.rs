//! The `struct` library Redis gives scripts (Roberto Ierusalimschy's
//! struct.c 1.4, with Redis's fixes): `struct.pack`, `struct.unpack` and
//! `struct.size`, which turn numbers and strings into C-like binary
//! records and back. Scripts keep such records in keys, so the bytes, the
//! numbers read back and the error texts are those of Redis on x86-64.
//!
//! A format is a string of options: `>` and `<` set big or little endian
//! (little is native), `![n]` the largest alignment (8 without `n`), `x` a
//! zero byte, `b`/`B` `h`/`H` `l`/`L` `T` signed or unsigned integers of
//! 1, 2, 8 and 8 bytes, `i[n]`/`I[n]` integers of `n` bytes (4 without `n`,
//! 32 at most), `c[n]` `n` bytes of a string (`c0`: all of it when
//! packing, as many as the number read before it when unpacking), `s` a
//! zero-terminated string, `f` and `d` floats and doubles, and spaces. A
//! format ends at its first zero byte.
//!
//! Integers are written from the C conversion of the Lua number to an
//! unsigned 64-bit integer (so out-of-range numbers give what x86 gives),
//! and an integer wider than 8 bytes has zeros above its low 8 bytes; read
//! back, only its low 8 bytes count. A value is aligned to the smaller of
//! its size and the alignment, counted from the start of the record
//! (packing) or of the data string (unpacking).

use mlua::{Lua, MultiValue, Table, Value};

use crate::lauxlib::{
    arg_error, check_bytes, check_number, opt_integer, stack_overflow, to_unsigned, MAX_C_STACK, MLUA_RESERVE,
};

/// Widest integer option (`MAXINTSIZE`).
const MAX_INT_SIZE: i32 = 32;
/// The alignment `!` sets without a number: a double's, on x86-64.
const MAX_ALIGN: i32 = 8;
/// `sizeof(int)`, the size of `i` and `I` without a number.
const INT_SIZE: i32 = 4;

/// What a struct function gives back to Lua, or the text of its error.
type StructResult = Result<MultiValue, String>;

/// One function of the library.
type StructFn = fn(&Lua, &MultiValue) -> StructResult;

/// Build the `struct` table; `raise` turns an error text into the Lua
/// error the script sees.
pub fn library(
    lua: &Lua,
    raise: impl Fn(&Lua, String) -> mlua::Result<Value> + Clone + 'static,
) -> mlua::Result<Table> {
    let library = lua.create_table()?;
    let functions: [(&'static str, StructFn); 3] = [("pack", pack), ("unpack", unpack), ("size", size)];
    for (name, f) in functions {
        let raise = raise.clone();
        library.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| match f(lua, &args) {
                Ok(values) => Ok(values),
                Err(text) => raise(lua, text).map(|v| MultiValue::from_iter([v])),
            })?,
        )?;
    }
    Ok(library)
}

/// Byte order and alignment, as the format has set them so far.
struct Header {
    little: bool,
    align: usize,
}

impl Default for Header {
    fn default() -> Header {
        Header { little: true, align: 1 }
    }
}

/// A format being read, option by option.
struct Format<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Format<'a> {
    fn new(bytes: &'a [u8]) -> Format<'a> {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Format { bytes: &bytes[..end], at: 0 }
    }

    fn next_option(&mut self) -> Option<u8> {
        let opt = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(opt)
    }

    /// The number written after an option, or `default`; an `int` in C,
    /// checked digit by digit against overflow.
    fn number(&mut self, default: i32) -> Result<i32, String> {
        if !self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: i32 = 0;
        while let Some(&d) = self.bytes.get(self.at).filter(|b| b.is_ascii_digit()) {
            let digit = i32::from(d - b'0');
            if a > i32::MAX / 10 || a * 10 > i32::MAX - digit {
                return Err("integral size overflow".to_string());
            }
            a = a * 10 + digit;
            self.at += 1;
        }
        Ok(a)
    }

    /// The size of option `opt` (reading its number), 0 for the options
    /// that are not values.
    fn size(&mut self, opt: u8) -> Result<usize, String> {
        Ok(match opt {
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'f' => 4,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'c' => self.number(1)? as usize,
            b'i' | b'I' => {
                let size = self.number(INT_SIZE)?;
                if size > MAX_INT_SIZE {
                    return Err(format!("integral size {size} is larger than limit of {MAX_INT_SIZE}"));
                }
                size as usize
            }
            _ => 0,
        })
    }

    /// Apply a control option (`<`, `>`, `!`, ` `); anything else is not
    /// an option at all.
    fn control(&mut self, lua: &Lua, opt: u8, h: &mut Header) -> Result<(), String> {
        match opt {
            b' ' => {}
            b'>' => h.little = false,
            b'<' => h.little = true,
            b'!' => {
                let a = self.number(MAX_ALIGN)?;
                if a <= 0 || a & (a - 1) != 0 {
                    return Err(format!("alignment {a} is not a power of 2"));
                }
                h.align = a as usize;
            }
            _ => return Err(arg_error(lua, 1, &format!("invalid format option '{}'", char::from(opt)))),
        }
        Ok(())
    }
}

/// The padding that aligns a value of `size` bytes at `len`.
fn padding(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    size.wrapping_sub(len & (size - 1)) & (size - 1)
}

fn is_integer_option(opt: u8) -> bool {
    matches!(opt, b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I')
}

/// `struct.pack(fmt, ...)`.
fn pack(lua: &Lua, args: &MultiValue) -> StructResult {
    let fmt = check_bytes(lua, args, 1)?;
    // The C pushes a nil above the arguments before it reads them: the
    // first one missing is that nil, not "no value".
    let mut marked = args.clone();
    marked.push_back(Value::Nil);
    let args = &marked;
    let mut fmt = Format::new(&fmt);
    let mut h = Header::default();
    let mut arg = 2;
    let mut out = Vec::new();
    while let Some(opt) = fmt.next_option() {
        let mut size = fmt.size(opt)?;
        let pad = padding(out.len(), &h, opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            _ if is_integer_option(opt) => {
                let n = check_number(lua, args, arg)?;
                arg += 1;
                put_integer(&mut out, n, h.little, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(lua, args, arg)? as f32;
                arg += 1;
                out.extend_from_slice(&if h.little { f.to_le_bytes() } else { f.to_be_bytes() });
            }
            b'd' => {
                let d = check_number(lua, args, arg)?;
                arg += 1;
                out.extend_from_slice(&if h.little { d.to_le_bytes() } else { d.to_be_bytes() });
            }
            b'c' | b's' => {
                let s = check_bytes(lua, args, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                // The C names the argument after the one it checks.
                let Some(part) = s.get(..size) else { return Err(arg_error(lua, arg as i64, "string too short")) };
                out.extend_from_slice(part);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => fmt.control(lua, opt, &mut h)?,
        }
    }
    Ok(MultiValue::from_iter([Value::String(lua.create_string(&out).map_err(lua_error)?)]))
}

/// The `size` low bytes of `n` as C's struct.c writes them: from `n` as an
/// unsigned 64-bit integer, zeros above its 8 bytes.
fn put_integer(out: &mut Vec<u8>, n: f64, little: bool, size: usize) {
    let value = if n < 0.0 { crate::lauxlib::to_integer(n) as u64 } else { to_unsigned(n) };
    let byte = |i: usize| if i < 8 { (value >> (8 * i)) as u8 } else { 0 };
    if little {
        out.extend((0..size).map(byte));
    } else {
        out.extend((0..size).rev().map(byte));
    }
}

/// An integer of `bytes.len()` bytes; only the low 8 bytes count, and a
/// signed one is sign-extended from its top bit (from bit 63 and below,
/// as x86 shifts by the size in bits less one, modulo 64).
fn get_integer(bytes: &[u8], little: bool, signed: bool) -> f64 {
    let mut l: u64 = 0;
    let mut shift_in = |b: &u8| l = (l << 8) | u64::from(*b);
    if little {
        bytes.iter().rev().for_each(&mut shift_in);
    } else {
        bytes.iter().for_each(&mut shift_in);
    }
    if !signed {
        return l as f64;
    }
    let shift = (bytes.len() as i64 * 8 - 1) & 63;
    let mask = u64::MAX << shift;
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

/// `struct.unpack(fmt, s [, pos])`: the values, then the position after
/// them.
fn unpack(lua: &Lua, args: &MultiValue) -> StructResult {
    let fmt = check_bytes(lua, args, 1)?;
    let data = check_bytes(lua, args, 2)?;
    let start = opt_integer(lua, args, 3, 1)? as u64 as usize;
    if start == 0 {
        return Err(arg_error(lua, 3, "offset must be 1 or greater"));
    }
    let mut pos = start - 1;
    let mut fmt = Format::new(&fmt);
    let mut h = Header::default();
    let mut results: Vec<Value> = Vec::new();
    let len = data.len();
    let too_short = || arg_error(lua, 2, "data string too short");
    while let Some(opt) = fmt.next_option() {
        let mut size = fmt.size(opt)?;
        pos = pos.wrapping_add(padding(pos, &h, opt, size));
        if size > len || pos > len - size {
            return Err(too_short());
        }
        // Room for the value and the position after it, as the C asks,
        // and for what mlua keeps below the values it returns.
        if args.len() + results.len() + 2 + MLUA_RESERVE > MAX_C_STACK {
            return Err(stack_overflow("too many results"));
        }
        match opt {
            _ if is_integer_option(opt) => {
                let n = get_integer(&data[pos..pos + size], h.little, opt.is_ascii_lowercase());
                results.push(Value::Number(n));
            }
            b'x' => {}
            b'f' => {
                let bytes = four(&data[pos..pos + 4]);
                let f = if h.little { f32::from_le_bytes(bytes) } else { f32::from_be_bytes(bytes) };
                results.push(Value::Number(f64::from(f)));
            }
            b'd' => {
                let bytes = eight(&data[pos..pos + 8]);
                let d = if h.little { f64::from_le_bytes(bytes) } else { f64::from_be_bytes(bytes) };
                results.push(Value::Number(d));
            }
            b'c' => {
                if size == 0 {
                    size = previous_size(lua, &mut results)?;
                    if size > len || pos > len - size {
                        return Err(too_short());
                    }
                }
                results.push(Value::String(lua.create_string(&data[pos..pos + size]).map_err(lua_error)?));
            }
            b's' => {
                let Some(end) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err("unfinished string in data".to_string());
                };
                size = end + 1;
                results.push(Value::String(lua.create_string(&data[pos..pos + end]).map_err(lua_error)?));
            }
            _ => fmt.control(lua, opt, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    results.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(MultiValue::from_iter(results))
}

/// An error of mlua's as the text raised for it: its references to Lua
/// values run out near 8,000, as the C stack does, so running out is the
/// error of too many results.
fn lua_error(e: mlua::Error) -> String {
    match e {
        mlua::Error::StackError => stack_overflow("too many results"),
        e => e.to_string(),
    }
}

/// `c0` when unpacking: the value read last, taken off the results, as a
/// length.
fn previous_size(lua: &Lua, results: &mut Vec<Value>) -> Result<usize, String> {
    let number = results.last().and_then(|v| lua.coerce_number(v.clone()).ok().flatten());
    let Some(n) = number else { return Err("format 'c0' needs a previous size".to_string()) };
    results.pop();
    Ok(to_unsigned(n) as usize)
}

fn four(bytes: &[u8]) -> [u8; 4] {
    let mut out = [0u8; 4];
    out.copy_from_slice(&bytes[..4]);
    out
}

fn eight(bytes: &[u8]) -> [u8; 8] {
    let mut out = [0u8; 8];
    out.copy_from_slice(&bytes[..8]);
    out
}

/// `struct.size(fmt)`: the bytes a record of the format takes.
fn size(lua: &Lua, args: &MultiValue) -> StructResult {
    let fmt = check_bytes(lua, args, 1)?;
    let mut fmt = Format::new(&fmt);
    let mut h = Header::default();
    let mut pos: usize = 0;
    while let Some(opt) = fmt.next_option() {
        let size = fmt.size(opt)?;
        pos = pos.wrapping_add(padding(pos, &h, opt, size));
        if opt == b's' {
            return Err(arg_error(lua, 1, "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(arg_error(lua, 1, "option 'c0' has no fixed size"));
        }
        // Letters and digits that are no option are passed over here.
        if !opt.is_ascii_alphanumeric() {
            fmt.control(lua, opt, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(MultiValue::from_iter([Value::Number(pos as i64 as f64)]))
}

#[cfg(test)]
mod tests {
    use mlua::{Lua, Value};

    fn lua() -> Lua {
        let lua = Lua::new();
        let raise = |_: &Lua, text: String| -> mlua::Result<Value> { Err(mlua::Error::runtime(text)) };
        let library = super::library(&lua, raise).expect("library");
        lua.globals().set("struct", library).expect("global");
        lua
    }

    fn packed(lua: &Lua, args: &str) -> Vec<u8> {
        let s: mlua::LuaString = lua.load(format!("return struct.pack({args})")).eval().expect(args);
        s.as_bytes().to_vec()
    }

    fn error(lua: &Lua, chunk: &str) -> String {
        match lua.load(chunk).exec() {
            Ok(()) => panic!("{chunk} did not fail"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn integers_pack_in_either_byte_order() {
        let lua = lua();
        assert_eq!(packed(&lua, "'>h<h', 258, 258"), [1, 2, 2, 1]);
        assert_eq!(packed(&lua, "'<i3', -1"), [0xff; 3]);
        assert_eq!(packed(&lua, "'<i8', 0/0"), [0, 0, 0, 0, 0, 0, 0, 0x80]);
        assert_eq!(packed(&lua, "'<i8', 2^64"), [0; 8]);
        let wide = packed(&lua, "'>i10', -2");
        assert_eq!(wide, [0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]);
    }

    #[test]
    fn alignment_pads_to_the_smaller_of_size_and_limit() {
        let lua = lua();
        assert_eq!(packed(&lua, "'!4 b i', 1, 2"), [1, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(packed(&lua, "'! b d', 1, 0"), [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let size: i64 = lua.load("return struct.size('!4 b i3 b h')").eval().expect("size");
        assert_eq!(size, 10);
    }

    #[test]
    fn unpack_reads_values_and_the_next_position() {
        let lua = lua();
        let (b, next): (String, i64) = lua.load("return struct.unpack('<H c0', '\\3\\0abcd')").eval().expect("unpack");
        assert_eq!((b.as_str(), next), ("abc", 6));
        let (s, next): (String, i64) = lua.load("return struct.unpack('s', 'ab\\0c')").eval().expect("s");
        assert_eq!((s.as_str(), next), ("ab", 4));
        let n: f64 = lua.load("return struct.unpack('<i9', '\\128' .. string.rep('\\0', 8))").eval().expect("i9");
        assert_eq!(n, -128.0, "sign bit 7, as x86 shifts by 71 mod 64");
    }

    #[test]
    fn errors_have_struct_cs_texts() {
        let lua = lua();
        assert!(error(&lua, "struct.pack('q')").contains("bad argument #1 to 'pack' (invalid format option 'q')"));
        assert!(error(&lua, "struct.pack('i33', 1)").contains("integral size 33 is larger than limit of 32"));
        assert!(error(&lua, "struct.pack('i99999999999', 1)").contains("integral size overflow"));
        assert!(error(&lua, "struct.pack('!3')").contains("alignment 3 is not a power of 2"));
        assert!(error(&lua, "struct.pack('c5', 'ab')").contains("bad argument #3 to 'pack' (string too short)"));
        assert!(error(&lua, "struct.unpack('i', 'ab')").contains("(data string too short)"));
        assert!(error(&lua, "struct.unpack('b', 'a', 0)").contains("(offset must be 1 or greater)"));
        assert!(error(&lua, "struct.unpack('c0', 'a')").contains("format 'c0' needs a previous size"));
        assert!(error(&lua, "struct.size('s')").contains("(option 's' has no fixed size)"));
        assert!(error(&lua, "struct.pack('b')").contains("(number expected, got nil)"));
    }
}
