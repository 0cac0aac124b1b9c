//! The payload layout language of RESPB/1 requests.
//!
//! Every request opcode has one [`Layout`]: an ordered list of [`Field`]s that
//! says both how the binary payload is laid out and which RESP arguments it
//! stands for. The decoder and the encoder are two walks over the same list,
//! so they cannot disagree, and `spec/respb.md` prints the same list.
//!
//! Arguments come out in the order the fields produce them; that order is
//! the command's canonical RESP form (options in the order Redis documents
//! them). The few places where RESP puts an argument before the binary field
//! that governs it are expressed with [`Effect`]s on flag bits.

/// One element of a payload layout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Field {
    /// `[2B len][bytes]`: one argument of at most 65,535 bytes.
    Bytes2,
    /// `[4B len][bytes]`: one argument (values, scripts, serialized data).
    Bytes4,
    /// `[8B]` big-endian two's-complement integer, one decimal argument.
    Int64,
    /// `[8B]` big-endian IEEE-754 double, one argument in canonical float text.
    Float64,
    /// `[8B]` big-endian unsigned integer (SCAN cursors), one decimal argument.
    Uint64,
    /// `[8B]` read as float64 when the flags byte sets an [`Effect::FloatFields`] bit, else as int64.
    Number64,
    /// `[2B]` unsigned integer (database indexes, ports, counts), one decimal argument.
    Uint16,
    /// `[2B]` two's-complement integer (counts where negative means "with repeats").
    Int16,
    /// `[1B]` unsigned integer (bit values, protocol versions), one decimal argument.
    Uint8,
    /// No bytes: the token is always emitted.
    Token(&'static str),
    /// `[1B index]`: one of the alternatives, whose token is emitted followed by its fields.
    Choice(&'static [Alt]),
    /// `[1B]`: 0 emits nothing, `i` emits `tokens[i - 1]`.
    OptToken(&'static [&'static str]),
    /// `[1B]`: 1 emits the token, 0 emits nothing.
    Bool(&'static str),
    /// `[2B count]` then `count` repetitions of `item`.
    List(List),
    /// One `[8B]` float64 weight per element of the most recent list.
    Weights,
    /// `[2B count]` then `count × ([2B keylen][key][2B idlen][id])`, emitted as
    /// `STREAMS key… id…`.
    StreamPairs,
    /// `[1B flags]`, bit 0 first.
    Flags(&'static [Bit]),
    /// `[1B presence mask]`: bit `i` set iff optional field `i` follows.
    Mask(&'static [Opt]),
    /// `[2B argc]` then `argc × ([4B len][bytes])`: the remaining arguments verbatim.
    Rest,
}

/// A repeated group: `[2B count]` then `count` items.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct List {
    /// Token emitted before the list (`FIELDS`, `ITEMS`, `KEYS`).
    pub token: Option<&'static str>,
    /// Whether the count itself is a RESP argument (`numkeys`, `numfields`).
    pub emit_count: bool,
    /// Fields of one item.
    pub item: &'static [Field],
}

/// One alternative of a [`Field::Choice`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Alt {
    /// Token emitted for this alternative.
    pub token: &'static str,
    /// Fields that follow the index byte when this alternative is chosen.
    pub fields: &'static [Field],
}

/// One bit of a [`Field::Flags`] byte.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bit {
    /// Token emitted when the bit is set ("" for bits that only have an effect).
    pub token: &'static str,
    /// Fields that follow, in bit order, when the bit is set.
    pub fields: &'static [Field],
    /// What else the bit changes.
    pub effect: Effect,
}

/// How a flag bit acts on the arguments besides emitting its token in place.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Effect {
    /// Token (and fields) emitted where the flags byte stands.
    Inline,
    /// Token emitted in place, and every [`Field::Number64`] of the layout is a float64.
    FloatFields,
    /// Token emitted just before the argument of top-level field `n` (XTRIM's `~`).
    BeforeField(u8),
    /// No token: the argument of top-level field `n` gets a `(` prefix (exclusive bound).
    Exclusive(u8),
}

/// One optional field governed by a [`Field::Mask`] bit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Opt {
    /// Token emitted before the field ("" for none).
    pub token: &'static str,
    /// The field itself.
    pub field: Field,
    /// True when this field is present exactly when the previous one is
    /// (`LIMIT offset count`); it still has its own mask bit.
    pub with_previous: bool,
}

/// The payload layout of one request opcode.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Layout {
    /// Command name as RESP sends it (upper case).
    pub name: &'static str,
    /// Opcode: 16-bit core opcode, or `module << 16 | command` for module commands.
    pub opcode: u32,
    /// True for module commands, framed with the `0xF000` prefix.
    pub module: bool,
    /// Top-level fields in payload order.
    pub fields: &'static [Field],
    /// True when every field is a plain string (`s16`/`s32`): such frames
    /// (GET, APPEND, HGET, …) decode without the general walk.
    pub plain: bool,
    /// True when some argument is fixed up after the walk (a `Number64`, or a
    /// flag bit with an effect on an earlier field); only such layouts pay for it.
    pub deferred: bool,
}

/// Whether decoding `fields` needs the deferred fix-ups; `const` so layouts carry the answer.
pub const fn has_deferred(fields: &[Field]) -> bool {
    let mut i = 0;
    while i < fields.len() {
        match fields[i] {
            Field::Number64 => return true,
            Field::Flags(bits) => {
                let mut b = 0;
                while b < bits.len() {
                    if !matches!(bits[b].effect, Effect::Inline) {
                        return true;
                    }
                    b += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// Whether `fields` are all plain strings; `const` so layouts carry the answer.
pub const fn all_strings(fields: &[Field]) -> bool {
    let mut i = 0;
    while i < fields.len() {
        if !matches!(fields[i], Field::Bytes2 | Field::Bytes4) {
            return false;
        }
        i += 1;
    }
    true
}

impl Layout {
    /// Upper bound on top-level fields, so walks can keep per-field state on the stack.
    pub const MAX_FIELDS: usize = 12;

    /// Append this opcode's frame header for channel `mux`: `[opcode][mux]`, or
    /// `[F000][mux][4B module command]` for a module command.
    pub fn write_header(&self, mux: u16, out: &mut Vec<u8>) {
        if self.module {
            out.extend_from_slice(&super::MODULE_PREFIX.to_be_bytes());
            out.extend_from_slice(&mux.to_be_bytes());
            out.extend_from_slice(&self.opcode.to_be_bytes());
        } else {
            out.extend_from_slice(&(self.opcode as u16).to_be_bytes());
            out.extend_from_slice(&mux.to_be_bytes());
        }
    }
}

impl Field {
    /// Number of RESP arguments this field always produces, or `None` when it varies.
    pub fn fixed_arity(&self) -> Option<usize> {
        match self {
            Field::Bytes2
            | Field::Bytes4
            | Field::Int64
            | Field::Float64
            | Field::Uint64
            | Field::Number64
            | Field::Uint16
            | Field::Int16
            | Field::Uint8
            | Field::Token(_) => Some(1),
            Field::Choice(alts) => {
                let first = alts.first().map(|a| arity_of(a.fields))?;
                alts.iter().all(|a| arity_of(a.fields) == first).then(|| first.map(|n| n + 1))?
            }
            _ => None,
        }
    }
}

/// Fixed number of arguments a field sequence produces, or `None` when it varies.
pub fn arity_of(fields: &[Field]) -> Option<usize> {
    fields.iter().try_fold(0usize, |acc, f| f.fixed_arity().map(|n| acc + n))
}

/// Render `fields` in the notation `spec/respb.md` uses (see its "Layout notation").
pub fn describe(fields: &[Field]) -> String {
    let parts: Vec<String> = fields.iter().map(describe_field).collect();
    if parts.is_empty() {
        "(empty)".to_string()
    } else {
        parts.join(" ")
    }
}

fn quoted(token: &str) -> String {
    format!("\"{token}\"")
}

fn describe_field(f: &Field) -> String {
    match f {
        Field::Bytes2 => "s16".into(),
        Field::Bytes4 => "s32".into(),
        Field::Int64 => "i64".into(),
        Field::Float64 => "f64".into(),
        Field::Uint64 => "u64".into(),
        Field::Number64 => "n64".into(),
        Field::Uint16 => "u16".into(),
        Field::Int16 => "i16".into(),
        Field::Uint8 => "u8".into(),
        Field::Token(t) => quoted(t),
        Field::Choice(alts) => {
            let a: Vec<String> = alts
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    if a.fields.is_empty() {
                        format!("{i}={}", a.token)
                    } else {
                        format!("{i}={} {}", a.token, describe(a.fields))
                    }
                })
                .collect();
            format!("choice{{{}}}", a.join(", "))
        }
        Field::OptToken(tokens) => {
            let a: Vec<String> = tokens.iter().enumerate().map(|(i, t)| format!("{}={t}", i + 1)).collect();
            format!("opt{{0=none, {}}}", a.join(", "))
        }
        Field::Bool(t) => format!("bool({t})"),
        Field::List(l) => {
            let mut s = String::new();
            if let Some(t) = l.token {
                s.push_str(&quoted(t));
                s.push(' ');
            }
            s.push_str(if l.emit_count { "list#" } else { "list" });
            s.push('(');
            s.push_str(&describe(l.item));
            s.push(')');
            s
        }
        Field::Weights => "weights".into(),
        Field::StreamPairs => "streams(s16 key, s16 id)".into(),
        Field::Flags(bits) => {
            let b: Vec<String> = bits
                .iter()
                .enumerate()
                .map(|(i, bit)| {
                    let what = match bit.effect {
                        Effect::Inline if bit.fields.is_empty() => bit.token.to_string(),
                        Effect::Inline => format!("{} {}", bit.token, describe(bit.fields)),
                        Effect::FloatFields => format!("{} (n64 fields are f64)", bit.token),
                        Effect::BeforeField(k) => format!("{} (before field {k})", bit.token),
                        Effect::Exclusive(k) => format!("exclusive field {k}"),
                    };
                    format!("{i}:{what}")
                })
                .collect();
            format!("flags{{{}}}", b.join(", "))
        }
        Field::Mask(opts) => {
            let b: Vec<String> = opts
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    let mut s = format!("{i}:");
                    if o.with_previous {
                        s.push_str("with previous ");
                    }
                    if !o.token.is_empty() {
                        s.push_str(o.token);
                        s.push(' ');
                    }
                    s.push_str(&describe_field(&o.field));
                    s
                })
                .collect();
            format!("mask{{{}}}", b.join(", "))
        }
        Field::Rest => "rest".into(),
    }
}
