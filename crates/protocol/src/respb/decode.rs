//! RESPB/1 request decoding: one frame at a time into [`CommandArgs`].
//!
//! Frames carry no total length; the opcode's [`Layout`] says where a frame
//! ends. The decoder walks the layout over the buffered bytes and fills the
//! argument list as it goes; if the buffer ends before the frame does, it
//! forgets what it produced and reports how many more bytes it needs at
//! least, so the caller can read more and call again with the same frame
//! start. Walking a layout costs a few steps per field, not per byte, so a
//! retry after a partial frame is cheap even for large values.
//!
//! Every error is fatal for the connection: without a frame length a
//! receiver cannot find the next frame after an invalid one.

use super::float_text::write_canonical_f64;
use super::layout::{all_strings, Effect, Field, Layout, Opt};
use super::layouts::{core_command, core_layout, module_layout};
use super::{MODULE_PREFIX, MUX_CLOSE, MUX_CREATE, PASSTHROUGH};
use crate::args::CommandArgs;
use crate::number::{write_i64, write_u64};
use crate::resp::request::{
    Progress, RequestError, RequestLimits, RequestParser, UNAUTHENTICATED_MAX_BULK, UNAUTHENTICATED_MAX_MULTIBULK,
};

/// Longest frame a connection may send before one of its channels has
/// authenticated: room for the most arguments a RESP client may send then,
/// each of the longest length, with their length fields.
pub const UNAUTHENTICATED_MAX_FRAME: usize = UNAUTHENTICATED_MAX_MULTIBULK * (UNAUTHENTICATED_MAX_BULK + 8);

/// Limits a decoder enforces on lengths a client claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RespbLimits {
    /// Largest `[4B len]` value accepted (Redis's `proto-max-bulk-len`, 512 MiB by default).
    pub max_bulk_len: usize,
    /// Largest passthrough frame (`[4B len]` of RESP text).
    pub max_passthrough_len: usize,
    /// The sender has not authenticated: frames are held to the bounds a
    /// RESP client has then (at most [`UNAUTHENTICATED_MAX_MULTIBULK`]
    /// arguments of at most [`UNAUTHENTICATED_MAX_BULK`] bytes, and no
    /// frame longer than [`UNAUTHENTICATED_MAX_FRAME`]), so that a stranger
    /// cannot make the server buffer a large frame before it is told to
    /// authenticate.
    pub unauthenticated: bool,
}

impl Default for RespbLimits {
    fn default() -> Self {
        RespbLimits::for_bulk_len(512 * 1024 * 1024)
    }
}

impl RespbLimits {
    /// The limits that go with `proto-max-bulk-len` = `max_bulk_len`: a
    /// passthrough frame may hold a bulk that long and its RESP framing.
    pub fn for_bulk_len(max_bulk_len: usize) -> RespbLimits {
        RespbLimits {
            max_bulk_len,
            max_passthrough_len: max_bulk_len.saturating_add(64 * 1024),
            unauthenticated: false,
        }
    }

    /// These limits, tightened (or not) for a sender that has not authenticated.
    pub fn unauthenticated(self, unauthenticated: bool) -> RespbLimits {
        RespbLimits { unauthenticated, ..self }
    }

    /// The largest `[4B len]` accepted now.
    fn bulk_cap(&self) -> usize {
        if self.unauthenticated {
            self.max_bulk_len.min(UNAUTHENTICATED_MAX_BULK)
        } else {
            self.max_bulk_len
        }
    }
}

/// What one decoded frame asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// A command on channel `mux`; its arguments are in the `CommandArgs`.
    Command {
        /// Channel the command runs on and the reply goes to.
        mux: u16,
    },
    /// MUX_CREATE: open channel `target` (the reply goes to `mux`).
    MuxCreate {
        /// Channel of the frame itself.
        mux: u16,
        /// Channel to open.
        target: u16,
    },
    /// MUX_CLOSE: close channel `target` (the reply goes to `mux`).
    MuxClose {
        /// Channel of the frame itself.
        mux: u16,
        /// Channel to close.
        target: u16,
    },
}

/// Outcome of one decode call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// A whole frame was decoded from the first `consumed` bytes.
    Frame {
        /// The frame.
        frame: Frame,
        /// Bytes it took.
        consumed: usize,
    },
    /// The frame is not complete; at least `hint` more bytes are needed.
    NeedMore {
        /// Lower bound on the missing bytes (at least 1).
        hint: usize,
    },
}

/// Why a frame could not be decoded. The connection cannot continue after one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// A 16-bit opcode no layout exists for.
    UnknownOpcode(u16),
    /// A module command id no layout exists for.
    UnknownModuleCommand(u32),
    /// A length field above the configured limit.
    LengthOverLimit(u64),
    /// A choice or subcommand byte outside its alternatives.
    BadChoice(u8),
    /// A boolean byte other than 0 or 1.
    BadBool(u8),
    /// A presence mask with undefined bits, or a paired field without its partner.
    BadMask(u8),
    /// A flags byte with undefined bits.
    BadFlags(u8),
    /// A float64 field holding NaN, which no argument text denotes.
    NotANumber,
    /// A passthrough frame whose RESP text is not exactly one command.
    BadPassthrough(&'static str),
    /// A passthrough frame whose RESP text is malformed, or one of the
    /// pre-authentication bounds RESP shares (argument count, bulk length).
    Resp(RequestError),
    /// A frame longer than [`UNAUTHENTICATED_MAX_FRAME`] before authentication.
    UnauthenticatedFrame,
}

/// A decode failure, with the channel it concerns when the header was readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Mux id of the failing frame, if its header was complete.
    pub mux: Option<u16>,
    /// What was wrong.
    pub kind: DecodeErrorKind,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            DecodeErrorKind::UnknownOpcode(op) => write!(f, "ERR RESPB unknown opcode 0x{op:04X}"),
            DecodeErrorKind::UnknownModuleCommand(id) => write!(f, "ERR RESPB unknown module command 0x{id:08X}"),
            DecodeErrorKind::LengthOverLimit(n) => write!(f, "ERR RESPB length {n} exceeds the configured limit"),
            DecodeErrorKind::BadChoice(b) => write!(f, "ERR RESPB invalid choice byte {b}"),
            DecodeErrorKind::BadBool(b) => write!(f, "ERR RESPB invalid boolean byte {b}"),
            DecodeErrorKind::BadMask(b) => write!(f, "ERR RESPB invalid presence mask 0x{b:02X}"),
            DecodeErrorKind::BadFlags(b) => write!(f, "ERR RESPB invalid flags 0x{b:02X}"),
            DecodeErrorKind::NotANumber => write!(f, "ERR RESPB float field is NaN"),
            DecodeErrorKind::BadPassthrough(why) => write!(f, "ERR RESPB passthrough {why}"),
            DecodeErrorKind::Resp(e) => write!(f, "{e}"),
            DecodeErrorKind::UnauthenticatedFrame => write!(f, "ERR Protocol error: unauthenticated frame length"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Why a walk stopped early.
enum Stop {
    NeedMore(usize),
    Fatal(DecodeErrorKind),
}

impl From<DecodeErrorKind> for Stop {
    fn from(k: DecodeErrorKind) -> Self {
        Stop::Fatal(k)
    }
}

/// Bounded reader over the buffered bytes of one frame.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Take `n` bytes, returning where they start.
    #[inline]
    fn take(&mut self, n: usize) -> Result<usize, Stop> {
        let have = self.buf.len() - self.pos;
        if have < n {
            return Err(Stop::NeedMore(n - have));
        }
        let at = self.pos;
        self.pos += n;
        Ok(at)
    }

    #[inline]
    fn u8(&mut self) -> Result<u8, Stop> {
        let at = self.take(1)?;
        Ok(self.buf[at])
    }

    #[inline]
    fn u16(&mut self) -> Result<u16, Stop> {
        let at = self.take(2)?;
        Ok(u16::from_be_bytes([self.buf[at], self.buf[at + 1]]))
    }

    #[inline]
    fn u32(&mut self) -> Result<u32, Stop> {
        let at = self.take(4)?;
        let b = &self.buf[at..at + 4];
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    #[inline]
    fn u64(&mut self) -> Result<u64, Stop> {
        let at = self.take(8)?;
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.buf[at..at + 8]);
        Ok(u64::from_be_bytes(w))
    }
}

#[derive(Debug)]
/// Per-frame state of a layout walk: where each top-level field's arguments
/// begin and the fix-ups that later flag bits ask for.
struct Walk {
    field_arg: [usize; Layout::MAX_FIELDS],
    /// Argument index and raw bits of each [`Field::Number64`], formatted at the end.
    numbers: [(usize, u64); 2],
    n_numbers: usize,
    float_numbers: bool,
    /// Bit `k` set: top-level field `k` is an exclusive bound.
    exclusive: u16,
    /// Tokens to insert before a field's first argument, in bit order.
    inserts: [(u8, &'static str); 8],
    n_inserts: usize,
    last_count: usize,
    max_bulk_len: usize,
}

/// RESPB/1 request decoder. Holds a RESP parser for passthrough frames.
#[derive(Debug)]
pub struct RespbDecoder {
    limits: RespbLimits,
    resp: RequestParser,
    walk: Walk,
}

impl Default for RespbDecoder {
    fn default() -> Self {
        Self::new(RespbLimits::default())
    }
}

impl RespbDecoder {
    /// A decoder enforcing `limits`.
    pub fn new(limits: RespbLimits) -> Self {
        let walk = Walk {
            field_arg: [0; Layout::MAX_FIELDS],
            numbers: [(0, 0); 2],
            n_numbers: 0,
            float_numbers: false,
            exclusive: 0,
            inserts: [(0, ""); 8],
            n_inserts: 0,
            last_count: 0,
            max_bulk_len: limits.bulk_cap(),
        };
        let mut decoder = RespbDecoder { limits, resp: RequestParser::new(RequestLimits::default()), walk };
        decoder.set_limits(limits);
        decoder
    }

    /// The limits in force.
    pub fn limits(&self) -> RespbLimits {
        self.limits
    }

    /// Enforce `limits` from the next frame on (a changed
    /// `proto-max-bulk-len`, a connection that authenticated).
    pub fn set_limits(&mut self, limits: RespbLimits) {
        self.limits = limits;
        self.walk.max_bulk_len = limits.bulk_cap();
        self.resp.set_limits(RequestLimits { max_bulk_len: limits.max_bulk_len, ..RequestLimits::default() });
        self.resp.set_auth_required(limits.unauthenticated);
    }

    /// Decode one frame from the start of `buf` into `out` (cleared first).
    pub fn decode(&mut self, buf: &[u8], out: &mut CommandArgs) -> Result<Decoded, DecodeError> {
        out.clear();
        let Some(&[o0, o1, m0, m1]) = buf.first_chunk::<4>() else {
            return Ok(Decoded::NeedMore { hint: 4 - buf.len() });
        };
        let (op, mux) = (u16::from_be_bytes([o0, o1]), u16::from_be_bytes([m0, m1]));
        let mut rd = Reader { buf, pos: 4 };
        let result = match core_layout(op) {
            Some(layout) => self.command(layout, &mut rd, out).map(|()| {
                out.set_command(core_command(op));
                Frame::Command { mux }
            }),
            None => self.other_frame(op, mux, &mut rd, out),
        };
        match result {
            Ok(frame) if !self.limits.unauthenticated => Ok(Decoded::Frame { frame, consumed: rd.pos }),
            Ok(frame) => self.unauthenticated_frame(frame, rd.pos, mux, out),
            Err(stop) if !self.limits.unauthenticated => finish_stop(stop, Some(mux), out),
            Err(stop) => self.unauthenticated_stop(stop, buf.len(), mux, out),
        }
    }

    /// A whole frame under the pre-authentication bounds: no longer than
    /// [`UNAUTHENTICATED_MAX_FRAME`], with at most RESP's argument count.
    #[cold]
    fn unauthenticated_frame(
        &self,
        frame: Frame,
        consumed: usize,
        mux: u16,
        out: &mut CommandArgs,
    ) -> Result<Decoded, DecodeError> {
        let kind = if consumed > UNAUTHENTICATED_MAX_FRAME {
            DecodeErrorKind::UnauthenticatedFrame
        } else if out.len() > UNAUTHENTICATED_MAX_MULTIBULK {
            DecodeErrorKind::Resp(RequestError::UnauthenticatedMultibulkLength)
        } else {
            return Ok(Decoded::Frame { frame, consumed });
        };
        out.clear();
        Err(DecodeError { mux: Some(mux), kind })
    }

    /// A partial or failed frame under the pre-authentication bounds: a
    /// partial one fails as soon as its bytes so far pass the frame bound,
    /// so no more of it is buffered, and a bulk over the bound is reported
    /// as RESP reports it.
    #[cold]
    fn unauthenticated_stop(
        &self,
        stop: Stop,
        buffered: usize,
        mux: u16,
        out: &mut CommandArgs,
    ) -> Result<Decoded, DecodeError> {
        let kind = match stop {
            Stop::NeedMore(hint) if buffered.saturating_add(hint) > UNAUTHENTICATED_MAX_FRAME => {
                DecodeErrorKind::UnauthenticatedFrame
            }
            Stop::Fatal(DecodeErrorKind::LengthOverLimit(n)) if n <= self.limits.max_bulk_len as u64 => {
                DecodeErrorKind::Resp(RequestError::UnauthenticatedBulkLength)
            }
            other => return finish_stop(other, Some(mux), out),
        };
        out.clear();
        Err(DecodeError { mux: Some(mux), kind })
    }

    /// Frames that are not core commands: control, passthrough, module commands.
    fn other_frame(&mut self, op: u16, mux: u16, rd: &mut Reader<'_>, out: &mut CommandArgs) -> Result<Frame, Stop> {
        match op {
            MUX_CREATE => rd.u16().map(|target| Frame::MuxCreate { mux, target }),
            MUX_CLOSE => rd.u16().map(|target| Frame::MuxClose { mux, target }),
            PASSTHROUGH => self.passthrough(rd, out).map(|()| Frame::Command { mux }),
            MODULE_PREFIX => {
                let id = rd.u32()?;
                let layout = module_layout(id).ok_or(Stop::Fatal(DecodeErrorKind::UnknownModuleCommand(id)))?;
                self.command(layout, rd, out).map(|()| Frame::Command { mux })
            }
            _ => Err(Stop::Fatal(DecodeErrorKind::UnknownOpcode(op))),
        }
    }

    fn passthrough(&mut self, rd: &mut Reader<'_>, out: &mut CommandArgs) -> Result<(), Stop> {
        let len = rd.u32()? as usize;
        if self.limits.unauthenticated && len > UNAUTHENTICATED_MAX_FRAME {
            return Err(DecodeErrorKind::UnauthenticatedFrame.into());
        }
        if len > self.limits.max_passthrough_len {
            return Err(DecodeErrorKind::LengthOverLimit(len as u64).into());
        }
        let at = rd.take(len)?;
        let text = &rd.buf[at..at + len];
        self.resp.reset();
        let progress = self.resp.parse(text, out).map_err(DecodeErrorKind::Resp);
        self.resp.reset();
        match progress? {
            Progress::Done(n) if n == len && !out.is_empty() => {
                out.shift_input(at);
                Ok(())
            }
            Progress::Done(n) if n < len => Err(DecodeErrorKind::BadPassthrough("holds more than one command").into()),
            Progress::Done(_) => Err(DecodeErrorKind::BadPassthrough("holds no command").into()),
            Progress::NeedMore { .. } => Err(DecodeErrorKind::BadPassthrough("ends inside a command").into()),
        }
    }

    #[inline(always)]
    fn command(&mut self, layout: &'static Layout, rd: &mut Reader<'_>, out: &mut CommandArgs) -> Result<(), Stop> {
        debug_assert!(layout.fields.len() <= Layout::MAX_FIELDS);
        out.push_name(layout.name);
        if layout.plain {
            return plain_strings(layout.fields, rd, out, self.walk.max_bulk_len);
        }
        // The walk state lives in the decoder so a command costs no setup beyond these resets.
        let walk = &mut self.walk;
        if layout.deferred {
            walk.n_numbers = 0;
            walk.float_numbers = false;
            walk.exclusive = 0;
            walk.n_inserts = 0;
        }
        for (i, field) in layout.fields.iter().enumerate() {
            if layout.deferred {
                walk.field_arg[i] = out.len();
            }
            // The common top-level fields inline; the rest take the general walk.
            match field {
                Field::Bytes2 => {
                    let len = usize::from(rd.u16()?);
                    let at = rd.take(len)?;
                    out.push_input(at, len);
                }
                Field::Bytes4 => plain_strings(&[Field::Bytes4], rd, out, walk.max_bulk_len)?,
                Field::Flags(_) if rd.buf.get(rd.pos) == Some(&0) => rd.pos += 1,
                Field::List(list) if list.token.is_none() && all_strings(list.item) => {
                    let count = usize::from(rd.u16()?);
                    if list.emit_count {
                        out.push_with(|s| write_u64(s, count as u64));
                    }
                    walk.last_count = count;
                    for _ in 0..count {
                        plain_strings(list.item, rd, out, walk.max_bulk_len)?;
                    }
                }
                _ => field_decode(field, rd, out, walk)?,
            }
        }
        if layout.deferred {
            walk.apply(out)?;
        }
        Ok(())
    }
}

/// Fast path for layouts made only of `s16`/`s32` fields.
#[inline(always)]
fn plain_strings(
    fields: &[Field],
    rd: &mut Reader<'_>,
    out: &mut CommandArgs,
    max_bulk_len: usize,
) -> Result<(), Stop> {
    for f in fields {
        let len = if matches!(f, Field::Bytes2) {
            usize::from(rd.u16()?)
        } else {
            let len = rd.u32()?;
            if len as usize > max_bulk_len {
                return Err(DecodeErrorKind::LengthOverLimit(u64::from(len)).into());
            }
            len as usize
        };
        let at = rd.take(len)?;
        out.push_input(at, len);
    }
    Ok(())
}

fn finish_stop(stop: Stop, mux: Option<u16>, out: &mut CommandArgs) -> Result<Decoded, DecodeError> {
    out.clear();
    match stop {
        Stop::NeedMore(hint) => Ok(Decoded::NeedMore { hint: hint.max(1) }),
        Stop::Fatal(kind) => Err(DecodeError { mux, kind }),
    }
}

impl Walk {
    /// Apply the deferred effects: number formatting, exclusive prefixes, inserted tokens.
    fn apply(&mut self, out: &mut CommandArgs) -> Result<(), Stop> {
        for &(arg, raw) in &self.numbers[..self.n_numbers] {
            if self.float_numbers {
                let x = f64::from_bits(raw);
                if x.is_nan() {
                    return Err(DecodeErrorKind::NotANumber.into());
                }
                out.replace_with(arg, |s| {
                    write_canonical_f64(s, x);
                });
            } else {
                out.replace_with(arg, |s| write_i64(s, raw as i64));
            }
        }
        // The marked fields in ascending order, visiting only the set bits:
        // most frames mark none.
        let mut exclusive = self.exclusive;
        while exclusive != 0 {
            let field = exclusive.trailing_zeros() as usize;
            exclusive &= exclusive - 1;
            if let Some(&arg) = self.field_arg.get(field) {
                out.prefix_owned(arg, b"(");
            }
        }
        // Insert from the last position backwards so earlier indexes stay valid;
        // equal positions are inserted in reverse bit order to come out in bit order.
        for &(field, token) in self.inserts[..self.n_inserts].iter().rev() {
            out.insert_owned(self.field_arg[usize::from(field)], token.as_bytes());
        }
        Ok(())
    }
}

/// Push each space-separated word of `token` as an argument (`AGGREGATE SUM` is two).
fn push_token(out: &mut CommandArgs, token: &str) {
    for word in token.split(' ').filter(|w| !w.is_empty()) {
        out.push_owned(word.as_bytes());
    }
}

fn fields_decode(fields: &[Field], rd: &mut Reader<'_>, out: &mut CommandArgs, walk: &mut Walk) -> Result<(), Stop> {
    fields.iter().try_for_each(|f| field_decode(f, rd, out, walk))
}

fn field_decode(field: &Field, rd: &mut Reader<'_>, out: &mut CommandArgs, walk: &mut Walk) -> Result<(), Stop> {
    match *field {
        Field::Bytes2 => {
            let len = usize::from(rd.u16()?);
            let at = rd.take(len)?;
            out.push_input(at, len);
        }
        Field::Bytes4 => {
            let len = rd.u32()?;
            if len as usize > walk.max_bulk_len {
                return Err(DecodeErrorKind::LengthOverLimit(u64::from(len)).into());
            }
            let at = rd.take(len as usize)?;
            out.push_input(at, len as usize);
        }
        Field::Int64 => {
            let n = rd.u64()? as i64;
            out.push_with(|s| write_i64(s, n));
        }
        Field::Uint64 => {
            let n = rd.u64()?;
            out.push_with(|s| write_u64(s, n));
        }
        Field::Float64 => {
            let x = f64::from_bits(rd.u64()?);
            if x.is_nan() {
                return Err(DecodeErrorKind::NotANumber.into());
            }
            out.push_with(|s| {
                write_canonical_f64(s, x);
            });
        }
        Field::Number64 => {
            // Formatted once the flags byte says int or float; layouts have at most two.
            let raw = rd.u64()?;
            debug_assert!(walk.n_numbers < walk.numbers.len());
            if let Some(slot) = walk.numbers.get_mut(walk.n_numbers) {
                *slot = (out.len(), raw);
                walk.n_numbers += 1;
            }
            out.push_owned(b"");
        }
        Field::Uint16 => {
            let n = rd.u16()?;
            out.push_with(|s| write_u64(s, u64::from(n)));
        }
        Field::Int16 => {
            let n = rd.u16()? as i16;
            out.push_with(|s| write_i64(s, i64::from(n)));
        }
        Field::Uint8 => {
            let n = rd.u8()?;
            out.push_with(|s| write_u64(s, u64::from(n)));
        }
        Field::Token(t) => push_token(out, t),
        Field::Choice(alts) => {
            let b = rd.u8()?;
            let alt = alts.get(usize::from(b)).ok_or(Stop::Fatal(DecodeErrorKind::BadChoice(b)))?;
            push_token(out, alt.token);
            fields_decode(alt.fields, rd, out, walk)?;
        }
        Field::OptToken(tokens) => {
            let b = rd.u8()?;
            if b != 0 {
                let t = tokens.get(usize::from(b) - 1).ok_or(Stop::Fatal(DecodeErrorKind::BadChoice(b)))?;
                push_token(out, t);
            }
        }
        Field::Bool(t) => match rd.u8()? {
            0 => {}
            1 => push_token(out, t),
            b => return Err(DecodeErrorKind::BadBool(b).into()),
        },
        Field::List(list) => {
            let count = usize::from(rd.u16()?);
            if let Some(t) = list.token {
                push_token(out, t);
            }
            if list.emit_count {
                out.push_with(|s| write_u64(s, count as u64));
            }
            walk.last_count = count;
            for _ in 0..count {
                fields_decode(list.item, rd, out, walk)?;
            }
        }
        Field::Weights => {
            for _ in 0..walk.last_count {
                field_decode(&Field::Float64, rd, out, walk)?;
            }
        }
        Field::StreamPairs => {
            let count = usize::from(rd.u16()?);
            push_token(out, "STREAMS");
            let pairs_at = rd.pos;
            // Keys first, then ids: RESP lists all keys before all ids.
            for _ in 0..count {
                field_decode(&Field::Bytes2, rd, out, walk)?;
                let id_len = usize::from(rd.u16()?);
                rd.take(id_len)?;
            }
            let end = rd.pos;
            rd.pos = pairs_at;
            for _ in 0..count {
                let key_len = usize::from(rd.u16()?);
                rd.take(key_len)?;
                field_decode(&Field::Bytes2, rd, out, walk)?;
            }
            debug_assert_eq!(rd.pos, end);
        }
        Field::Flags(bits) => {
            let b = rd.u8()?;
            if bits.len() < 8 && b >> bits.len() != 0 {
                return Err(DecodeErrorKind::BadFlags(b).into());
            }
            for (_, bit) in bits.iter().enumerate().filter(|(i, _)| b & (1 << i) != 0) {
                match bit.effect {
                    Effect::Inline => {}
                    Effect::FloatFields => walk.float_numbers = true,
                    Effect::Exclusive(field) => {
                        walk.exclusive |= 1 << field;
                        continue;
                    }
                    Effect::BeforeField(field) => {
                        walk.inserts[walk.n_inserts] = (field, bit.token);
                        walk.n_inserts += 1;
                        continue;
                    }
                }
                push_token(out, bit.token);
                fields_decode(bit.fields, rd, out, walk)?;
            }
        }
        Field::Mask(opts) => {
            let m = rd.u8()?;
            if !mask_is_valid(m, opts) {
                return Err(DecodeErrorKind::BadMask(m).into());
            }
            for (_, o) in opts.iter().enumerate().filter(|(i, _)| m & (1 << i) != 0) {
                push_token(out, o.token);
                field_decode(&o.field, rd, out, walk)?;
            }
        }
        Field::Rest => {
            let argc = rd.u16()?;
            for _ in 0..argc {
                let len = rd.u32()?;
                if len as usize > walk.max_bulk_len {
                    return Err(DecodeErrorKind::LengthOverLimit(u64::from(len)).into());
                }
                let at = rd.take(len as usize)?;
                out.push_input(at, len as usize);
            }
        }
    }
    Ok(())
}

/// A mask is valid when it sets only defined bits and every paired field
/// (`with_previous`) is present exactly when the field before it is.
pub(crate) fn mask_is_valid(m: u8, opts: &[Opt]) -> bool {
    if opts.len() < 8 && m >> opts.len() != 0 {
        return false;
    }
    opts.iter().enumerate().skip(1).all(|(i, o)| {
        let here = m & (1 << i) != 0;
        let prev = m & (1 << (i - 1)) != 0;
        !o.with_previous || here == prev
    })
}
