//! RESPB/1 request encoding from the RESP form of a command.
//!
//! The encoder walks the same [`Layout`] the decoder walks, matching the
//! arguments against it. Options may come in any order and any letter case
//! (Redis reads them that way); numbers must be written exactly as the
//! decoder would write them back. Anything the layout cannot carry without
//! changing the command's meaning (an unknown option, a repeated option, a
//! non-canonical number, a string too long for its length field) makes the
//! encoder fall back to a passthrough frame holding the command as RESP text,
//! so no argument is ever dropped or altered (design decision 6).

use super::float_text::parse_canonical_f64;
use super::layout::{arity_of, Bit, Effect, Field, Layout, Opt};
use super::layouts::layout_by_name;
use super::PASSTHROUGH;
use crate::number::parse_i64;

/// How a command went on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// As its opcode's binary layout.
    Binary,
    /// As a passthrough frame of RESP text.
    Passthrough,
}

/// Append one request frame for `args` (name first) on channel `mux` to `out`.
pub fn encode_request<A: AsRef<[u8]>>(args: &[A], mux: u16, out: &mut Vec<u8>) -> Encoding {
    let start = out.len();
    if let Some(layout) = args.first().and_then(|name| layout_by_name(name.as_ref())) {
        if encode_layout(layout, args, mux, out).is_some() {
            return Encoding::Binary;
        }
        out.truncate(start);
    }
    write_passthrough(args, mux, out);
    Encoding::Passthrough
}

/// Append a passthrough frame carrying `args` as one RESP multibulk command.
pub fn write_passthrough<A: AsRef<[u8]>>(args: &[A], mux: u16, out: &mut Vec<u8>) {
    out.extend_from_slice(&PASSTHROUGH.to_be_bytes());
    out.extend_from_slice(&mux.to_be_bytes());
    let len_at = out.len();
    out.extend_from_slice(&[0; 4]);
    crate::resp::command::write_command(args, out);
    let len = (out.len() - len_at - 4) as u32;
    out[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
}

/// True when `arg` spells `word`: exactly for lower-case words (geo units,
/// which Redis compares case-sensitively), ignoring ASCII case otherwise.
fn word_matches(word: &str, arg: &[u8]) -> bool {
    if word.bytes().any(|b| b.is_ascii_lowercase()) {
        word.as_bytes() == arg
    } else {
        word.as_bytes().eq_ignore_ascii_case(arg)
    }
}

/// Encoder state for one command.
struct Enc<'a, A> {
    args: &'a [A],
    i: usize,
    out: &'a mut Vec<u8>,
    layout: &'static Layout,
    last_count: usize,
    /// Output position, argument index and exclusive mark of each [`Field::Number64`].
    numbers: [(usize, usize, bool); 2],
    n_numbers: usize,
    float_numbers: bool,
    /// Flag bits found outside the flags byte (exclusive bounds, leading tokens).
    pending_flags: u8,
    flags_at: Option<usize>,
}

fn encode_layout<A: AsRef<[u8]>>(layout: &'static Layout, args: &[A], mux: u16, out: &mut Vec<u8>) -> Option<()> {
    layout.write_header(mux, out);
    let mut e = Enc {
        args,
        i: 1,
        out,
        layout,
        last_count: 0,
        numbers: [(0, 0, false); 2],
        n_numbers: 0,
        float_numbers: false,
        pending_flags: 0,
        flags_at: None,
    };
    for (k, field) in layout.fields.iter().enumerate() {
        let trailing: usize = layout.fields[k + 1..].iter().map(min_arity).sum();
        e.leading_tokens(k)?;
        e.field(field, Some(k), trailing)?;
    }
    if e.i != args.len() {
        return None;
    }
    e.finish()
}

/// Fewest arguments a field can produce (used to leave room for what follows).
fn min_arity(field: &Field) -> usize {
    match field {
        Field::List(l) => usize::from(l.token.is_some()) + usize::from(l.emit_count),
        Field::StreamPairs => 1,
        f => f.fixed_arity().unwrap_or(0),
    }
}

impl<'a, A: AsRef<[u8]>> Enc<'a, A> {
    fn arg(&self, i: usize) -> Option<&'a [u8]> {
        self.args.get(i).map(|a| a.as_ref())
    }

    fn next(&mut self) -> Option<&'a [u8]> {
        let a = self.arg(self.i)?;
        self.i += 1;
        Some(a)
    }

    fn remaining(&self) -> usize {
        self.args.len() - self.i
    }

    /// Number of arguments `token`'s words match at position `at`, if all do.
    fn words_at(&self, token: &str, at: usize) -> Option<usize> {
        let mut n = 0;
        for word in token.split(' ') {
            if !word_matches(word, self.arg(at + n)?) {
                return None;
            }
            n += 1;
        }
        Some(n)
    }

    fn layout_bits(&self) -> &'static [Bit] {
        self.layout.fields.iter().find_map(|f| if let Field::Flags(b) = f { Some(*b) } else { None }).unwrap_or(&[])
    }

    /// Consume tokens RESP places before top-level field `k` (XTRIM's `=` / `~`).
    fn leading_tokens(&mut self, k: usize) -> Option<()> {
        let bits = self.layout_bits();
        loop {
            let hit = bits.iter().enumerate().find(|(b, bit)| {
                bit.effect == Effect::BeforeField(k as u8)
                    && self.pending_flags & (1 << b) == 0
                    && self.arg(self.i).is_some_and(|a| word_matches(bit.token, a))
            });
            match hit {
                Some((b, _)) => {
                    self.pending_flags |= 1 << b;
                    self.i += 1;
                }
                None => return Some(()),
            }
        }
    }

    /// Strip a `(` from a numeric argument when top-level field `k` may be exclusive.
    fn exclusive_text(&mut self, arg: &'a [u8], top: Option<usize>) -> &'a [u8] {
        let Some(k) = top else { return arg };
        let bits = self.layout_bits();
        let bit = bits.iter().position(|b| b.effect == Effect::Exclusive(k as u8));
        match (bit, arg.split_first()) {
            (Some(b), Some((b'(', rest))) => {
                self.pending_flags |= 1 << b;
                rest
            }
            _ => arg,
        }
    }

    fn put_u16(&mut self, n: usize) -> Option<()> {
        let n = u16::try_from(n).ok()?;
        self.out.extend_from_slice(&n.to_be_bytes());
        Some(())
    }

    fn field(&mut self, field: &Field, top: Option<usize>, trailing: usize) -> Option<()> {
        match *field {
            Field::Bytes2 => {
                let a = self.next()?;
                self.put_u16(a.len())?;
                self.out.extend_from_slice(a);
            }
            Field::Bytes4 => {
                let a = self.next()?;
                let n = u32::try_from(a.len()).ok()?;
                self.out.extend_from_slice(&n.to_be_bytes());
                self.out.extend_from_slice(a);
            }
            Field::Int64 => {
                let n = parse_i64(self.next()?)?;
                self.out.extend_from_slice(&n.to_be_bytes());
            }
            Field::Uint64 => {
                let n = parse_canonical_u64(self.next()?)?;
                self.out.extend_from_slice(&n.to_be_bytes());
            }
            Field::Float64 => {
                let a = self.next()?;
                let text = self.exclusive_text(a, top);
                let x = parse_canonical_f64(text)?;
                self.out.extend_from_slice(&x.to_bits().to_be_bytes());
            }
            Field::Number64 => {
                let a = self.next()?;
                let text = self.exclusive_text(a, top);
                let slot = self.numbers.get_mut(self.n_numbers)?;
                *slot = (self.out.len(), self.i - 1, text.len() != a.len());
                self.n_numbers += 1;
                self.out.extend_from_slice(&[0; 8]);
            }
            Field::Uint16 => {
                let n = u16::try_from(parse_canonical_u64(self.next()?)?).ok()?;
                self.out.extend_from_slice(&n.to_be_bytes());
            }
            Field::Int16 => {
                let n = i16::try_from(parse_i64(self.next()?)?).ok()?;
                self.out.extend_from_slice(&n.to_be_bytes());
            }
            Field::Uint8 => {
                let n = u8::try_from(parse_canonical_u64(self.next()?)?).ok()?;
                self.out.push(n);
            }
            Field::Token(t) => {
                let n = self.words_at(t, self.i)?;
                self.i += n;
            }
            Field::Choice(alts) => {
                let a = self.next()?;
                let (idx, alt) = alts.iter().enumerate().find(|(_, alt)| word_matches(alt.token, a))?;
                self.out.push(idx as u8);
                for f in alt.fields {
                    self.field(f, None, 0)?;
                }
            }
            Field::OptToken(tokens) => {
                let hit = self.arg(self.i).and_then(|a| tokens.iter().position(|t| word_matches(t, a)));
                self.out.push(hit.map_or(0, |p| p as u8 + 1));
                self.i += usize::from(hit.is_some());
            }
            Field::Bool(t) => {
                let hit = self.arg(self.i).is_some_and(|a| word_matches(t, a));
                self.out.push(u8::from(hit));
                self.i += usize::from(hit);
            }
            Field::List(list) => {
                if let Some(t) = list.token {
                    self.i += self.words_at(t, self.i)?;
                }
                let count_at = self.out.len();
                self.out.extend_from_slice(&[0, 0]);
                let count = if list.emit_count {
                    let n = usize::try_from(parse_canonical_u64(self.next()?)?).ok()?;
                    for _ in 0..n {
                        for f in list.item {
                            self.field(f, None, 0)?;
                        }
                    }
                    n
                } else {
                    let mut n = 0;
                    while self.remaining() > trailing && !self.at_following_token(top) {
                        for f in list.item {
                            self.field(f, None, 0)?;
                        }
                        n += 1;
                    }
                    n
                };
                let count = u16::try_from(count).ok()?;
                self.out[count_at..count_at + 2].copy_from_slice(&count.to_be_bytes());
                self.last_count = usize::from(count);
            }
            Field::Weights => {
                for _ in 0..self.last_count {
                    self.field(&Field::Float64, None, 0)?;
                }
            }
            Field::StreamPairs => {
                self.i += self.words_at("STREAMS", self.i)?;
                let rest = self.remaining();
                if rest == 0 || rest & 1 == 1 {
                    return None;
                }
                let n = rest / 2;
                self.put_u16(n)?;
                for k in 0..n {
                    for a in [self.arg(self.i + k)?, self.arg(self.i + n + k)?] {
                        self.put_u16(a.len())?;
                        self.out.extend_from_slice(a);
                    }
                }
                self.i += rest;
            }
            Field::Flags(bits) => self.flags(bits)?,
            Field::Mask(opts) => self.mask(opts, trailing)?,
            Field::Rest => {
                let n = self.remaining();
                self.put_u16(n)?;
                while let Some(a) = self.next() {
                    let len = u32::try_from(a.len()).ok()?;
                    self.out.extend_from_slice(&len.to_be_bytes());
                    self.out.extend_from_slice(a);
                }
            }
        }
        Some(())
    }

    /// True when the next argument is an option token of a field after top-level
    /// field `top` (XCLAIM's ids end where its options begin).
    fn at_following_token(&self, top: Option<usize>) -> bool {
        let (Some(k), Some(arg)) = (top, self.arg(self.i)) else {
            return false;
        };
        let first_word = |t: &str| t.split(' ').next().is_some_and(|w| !w.is_empty() && word_matches(w, arg));
        self.layout.fields[k + 1..].iter().any(|f| match f {
            Field::Flags(bits) => bits.iter().any(|b| first_word(b.token)),
            Field::Mask(opts) => opts.iter().any(|o| first_word(o.token)),
            Field::Bool(t) => first_word(t),
            Field::OptToken(ts) => ts.iter().any(|t| first_word(t)),
            _ => false,
        })
    }

    /// Arguments taken by a bit's or option's fields starting at `at`.
    fn span(&self, fields: &[Field], at: usize) -> Option<usize> {
        if let Some(n) = arity_of(fields) {
            return Some(n);
        }
        match fields {
            [Field::Weights] => Some(self.last_count),
            [Field::List(l)] if !l.emit_count && l.token.is_none() => Some(self.args.len().saturating_sub(at)),
            _ => None,
        }
    }

    /// Options of a flags byte: find them in any order, then write their
    /// fields in bit order.
    fn flags(&mut self, bits: &'static [Bit]) -> Option<()> {
        let at = self.out.len();
        self.flags_at = Some(at);
        self.out.push(0);
        let mut starts = [usize::MAX; 8];
        let mut set = 0u8;
        'scan: while self.i < self.args.len() {
            for (b, bit) in bits.iter().enumerate() {
                let taken = set & (1 << b) != 0;
                let in_place = matches!(bit.effect, Effect::Inline | Effect::FloatFields);
                if taken || !in_place {
                    continue;
                }
                if let Some(n) = self.words_at(bit.token, self.i) {
                    set |= 1 << b;
                    starts[b] = self.i + n;
                    self.i = starts[b] + self.span(bit.fields, starts[b])?;
                    if self.i > self.args.len() {
                        return None;
                    }
                    if bit.effect == Effect::FloatFields {
                        self.float_numbers = true;
                    }
                    continue 'scan;
                }
            }
            break;
        }
        let end = self.i;
        for (b, bit) in bits.iter().enumerate().filter(|(b, _)| set & (1 << b) != 0) {
            self.i = starts[b];
            for f in bit.fields {
                self.field(f, None, 0)?;
            }
            if self.i != starts[b] + self.span(bit.fields, starts[b])? {
                return None;
            }
        }
        self.i = end;
        self.out[at] = set;
        Some(())
    }

    /// Optional fields behind a presence mask: token options in any order,
    /// token-less ones by position; fields written in mask-bit order.
    fn mask(&mut self, opts: &'static [Opt], trailing: usize) -> Option<()> {
        let at = self.out.len();
        self.out.push(0);
        let mut starts = [usize::MAX; 8];
        let mut set = 0u8;
        let mut highest: Option<usize> = None;
        loop {
            let chain_len = |j: usize| opts[j + 1..].iter().take_while(|o| o.with_previous).count();
            let by_token = opts.iter().enumerate().find_map(|(j, o)| {
                let free = set & (1 << j) == 0 && !o.with_previous && !o.token.is_empty();
                free.then(|| self.words_at(o.token, self.i).map(|n| (j, n))).flatten()
            });
            let (j, skip) = match by_token {
                Some(hit) => hit,
                None => {
                    let next = opts.iter().enumerate().find(|(j, o)| {
                        o.token.is_empty()
                            && !o.with_previous
                            && set & (1 << j) == 0
                            && !matches!(highest, Some(h) if *j <= h)
                    });
                    let Some((j, o)) = next else { break };
                    let need = 1 + chain_len(j);
                    let fits = self.remaining() >= need + trailing;
                    if !fits || !self.arg(self.i).is_some_and(|a| value_fits(&o.field, a)) {
                        break;
                    }
                    (j, 0)
                }
            };
            let group = 1 + chain_len(j);
            let mut pos = self.i + skip;
            for (g, o) in opts[j..j + group].iter().enumerate() {
                set |= 1 << (j + g);
                starts[j + g] = pos;
                pos += o.field.fixed_arity()?;
            }
            if pos > self.args.len() {
                return None;
            }
            self.i = pos;
            highest = Some(highest.map_or(j + group - 1, |h| h.max(j + group - 1)));
        }
        let end = self.i;
        for (j, o) in opts.iter().enumerate().filter(|(j, _)| set & (1 << j) != 0) {
            self.i = starts[j];
            self.field(&o.field, None, 0)?;
        }
        self.i = end;
        self.out[at] = set;
        Some(())
    }

    /// Write the deferred numbers and the flag bits found outside the flags byte.
    fn finish(self) -> Option<()> {
        for &(pos, arg, exclusive) in &self.numbers[..self.n_numbers] {
            let a = self.arg(arg)?;
            let text = if exclusive { a.get(1..)? } else { a };
            let raw = if self.float_numbers { parse_canonical_f64(text)?.to_bits() } else { parse_i64(text)? as u64 };
            self.out[pos..pos + 8].copy_from_slice(&raw.to_be_bytes());
        }
        if self.pending_flags != 0 {
            let at = self.flags_at?;
            self.out[at] |= self.pending_flags;
        }
        Some(())
    }
}

/// Whether a token-less optional argument could be the value of `field`.
fn value_fits(field: &Field, arg: &[u8]) -> bool {
    match field {
        Field::Int64 => parse_i64(arg).is_some(),
        Field::Int16 => parse_i64(arg).is_some_and(|n| i16::try_from(n).is_ok()),
        Field::Uint16 => parse_canonical_u64(arg).is_some_and(|n| n <= u64::from(u16::MAX)),
        Field::Float64 => parse_canonical_f64(arg).is_some(),
        Field::Bytes2 => arg.len() <= usize::from(u16::MAX),
        _ => true,
    }
}

/// Parse an unsigned decimal written exactly as it would be formatted back.
pub(crate) fn parse_canonical_u64(text: &[u8]) -> Option<u64> {
    match text {
        [] => None,
        [b'0'] => Some(0),
        [b'0', ..] => None,
        _ => text.iter().try_fold(0u64, |acc, &b| {
            let d = b.checked_sub(b'0').filter(|d| *d < 10)?;
            acc.checked_mul(10)?.checked_add(u64::from(d))
        }),
    }
}
