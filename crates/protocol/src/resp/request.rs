//! Server-side RESP request parsing: multibulk (`*N\r\n$L\r\n...`) and inline commands.
//!
//! The parser accepts exactly what Redis 7.0 accepts and rejects the rest with
//! Redis's own error texts, so clients and tests written against Redis see the
//! same behaviour. It is resumable: when a command is only partly in the buffer
//! it remembers how far it got (arguments found, the length of the bulk being
//! read, the position reached), so a large value arriving in many reads is
//! never rescanned, and it reports how many more bytes the current bulk needs
//! so the caller can size its buffer once.
//!
//! Lengths sent by the client are never used to size an allocation: arguments
//! are references into the caller's buffer, and the argument list grows only as
//! arguments actually arrive.

use std::fmt;

use super::inline::split_inline;
use crate::args::CommandArgs;

/// Limits on what a client may send, mirroring Redis's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestLimits {
    /// Largest accepted bulk argument (Redis `proto-max-bulk-len`, 512 MiB by default).
    pub max_bulk_len: usize,
    /// Largest accepted argument count in a multibulk header (Redis allows up to `INT_MAX`).
    pub max_multibulk_len: usize,
    /// Longest inline command line, and longest `*N` / `$L` header line
    /// (Redis `PROTO_INLINE_MAX_SIZE`, 64 KiB).
    pub max_inline_len: usize,
}

impl Default for RequestLimits {
    fn default() -> Self {
        Self { max_bulk_len: 512 * 1024 * 1024, max_multibulk_len: i32::MAX as usize, max_inline_len: 64 * 1024 }
    }
}

/// Outcome of one [`RequestParser::parse`] call that did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// A whole command was parsed from the first `n` bytes of the buffer.
    Done(usize),
    /// The buffer ends inside a command.
    NeedMore {
        /// At least this many more bytes are needed before another call can
        /// make progress; 0 when unknown. While a bulk payload is being read
        /// this is the rest of the payload plus its CRLF, which lets the caller
        /// reserve room for a big value in one step.
        hint: usize,
    },
}

/// A request that breaks the protocol. The connection cannot be resynchronised
/// after one of these; Redis replies with the error text and closes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestError {
    /// `*` line not a valid integer, above the limit, or not ended by CRLF.
    InvalidMultibulkLength,
    /// `$` line not a valid integer, negative, above the limit, or not ended by CRLF.
    InvalidBulkLength,
    /// An element of a multibulk request did not start with `$`; carries the byte found.
    ExpectedDollar(u8),
    /// The `*` line grew past the header limit without a CR.
    TooBigMbulkCount,
    /// A `$` line grew past the header limit without a CR.
    TooBigBulkCount,
    /// An inline line grew past the inline limit without a newline.
    TooBigInline,
    /// An inline line has an unterminated quote, or a closing quote not followed by whitespace.
    UnbalancedQuotes,
    /// A bulk payload was not followed by CRLF.
    MissingBulkTerminator,
    /// A client that has not authenticated announced more than
    /// [`UNAUTHENTICATED_MAX_MULTIBULK`] arguments.
    UnauthenticatedMultibulkLength,
    /// A client that has not authenticated announced a bulk longer than
    /// [`UNAUTHENTICATED_MAX_BULK`] bytes.
    UnauthenticatedBulkLength,
}

/// Most arguments a client may announce before it has authenticated.
///
/// Redis uses this bound so that a stranger cannot make the server buffer a
/// large request before being told to authenticate; `AUTH user pass` and
/// `HELLO 3 AUTH user pass SETNAME name` fit well inside it.
pub const UNAUTHENTICATED_MAX_MULTIBULK: usize = 10;

/// Longest bulk a client may announce before it has authenticated (16 KiB), for
/// the same reason as [`UNAUTHENTICATED_MAX_MULTIBULK`].
pub const UNAUTHENTICATED_MAX_BULK: usize = 16 * 1024;

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ERR Protocol error: ")?;
        match self {
            Self::InvalidMultibulkLength => f.write_str("invalid multibulk length"),
            Self::InvalidBulkLength => f.write_str("invalid bulk length"),
            Self::ExpectedDollar(b) => {
                // Redis prints the raw byte, except that CR and LF become spaces
                // so the error line stays one line. A byte that is not ASCII
                // cannot be shown as itself in a `str`; it is shown as '?'.
                let shown = match *b {
                    b'\r' | b'\n' => ' ',
                    b if b.is_ascii() => b as char,
                    _ => '?',
                };
                write!(f, "expected '$', got '{shown}'")
            }
            Self::TooBigMbulkCount => f.write_str("too big mbulk count string"),
            Self::TooBigBulkCount => f.write_str("too big bulk count string"),
            Self::TooBigInline => f.write_str("too big inline request"),
            Self::UnbalancedQuotes => f.write_str("unbalanced quotes in request"),
            Self::MissingBulkTerminator => f.write_str("expected '\\r\\n' after bulk data"),
            Self::UnauthenticatedMultibulkLength => f.write_str("unauthenticated multibulk length"),
            Self::UnauthenticatedBulkLength => f.write_str("unauthenticated bulk length"),
        }
    }
}

impl std::error::Error for RequestError {}

/// Where the parser is inside the current command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Between commands.
    Idle,
    /// Reading an inline line.
    Inline,
    /// Reading the `*N` header line.
    Count,
    /// Reading the elements of a multibulk command.
    Elements,
}

/// Resumable parser for requests as a Redis server receives them.
///
/// One parser serves one connection. Positions it keeps are relative to the
/// first byte of the command in progress, which is why every call must pass a
/// buffer starting at that byte.
#[derive(Debug, Clone)]
pub struct RequestParser {
    limits: RequestLimits,
    /// Whether the tighter pre-authentication bounds apply.
    auth_required: bool,
    phase: Phase,
    /// Offset of the next unparsed byte of the current command.
    pos: usize,
    /// Offset up to which the current line was searched for its terminator
    /// without finding it, so the search resumes there.
    scanned: usize,
    /// Multibulk elements still to read.
    remaining: usize,
    /// Length of the bulk whose payload starts at `pos`, once its `$` line is read.
    bulk: Option<usize>,
}

impl Default for RequestParser {
    fn default() -> Self {
        Self::new(RequestLimits::default())
    }
}

impl RequestParser {
    /// A parser between commands, enforcing `limits`.
    pub fn new(limits: RequestLimits) -> Self {
        Self { limits, auth_required: false, phase: Phase::Idle, pos: 0, scanned: 0, remaining: 0, bulk: None }
    }

    /// The limits in force.
    pub fn limits(&self) -> &RequestLimits {
        &self.limits
    }

    /// Change the limits (e.g. after `CONFIG SET proto-max-bulk-len`); they apply
    /// to every header read from now on, including in a command in progress.
    pub fn set_limits(&mut self, limits: RequestLimits) {
        self.limits = limits;
    }

    /// Whether the pre-authentication bounds are in force.
    pub fn auth_required(&self) -> bool {
        self.auth_required
    }

    /// Turn the pre-authentication bounds ([`UNAUTHENTICATED_MAX_MULTIBULK`],
    /// [`UNAUTHENTICATED_MAX_BULK`]) on or off. The server turns them on for a
    /// connection that must authenticate and off once it has, so an
    /// unauthenticated stranger cannot make it buffer large requests.
    pub fn set_auth_required(&mut self, required: bool) {
        self.auth_required = required;
    }

    /// Forget any command in progress; the next call starts a new command.
    pub fn reset(&mut self) {
        self.phase = Phase::Idle;
        self.pos = 0;
        self.scanned = 0;
        self.remaining = 0;
        self.bulk = None;
    }

    /// Parse one command from `buf`, whose byte 0 is the first unconsumed byte.
    ///
    /// On `Done(n)` the command's arguments are in `out`, referencing `buf[..n]`;
    /// an empty `out` means the bytes were an empty command that Redis ignores
    /// (a blank inline line, `*0\r\n`, `*-1\r\n`) and the caller just consumes them.
    ///
    /// On `NeedMore` the parser keeps its progress: the caller must call again
    /// with a buffer starting at the same byte (extended with more data) and the
    /// same `out`.
    ///
    /// On error the parser is reset and `out` holds nothing meaningful; the
    /// connection should be answered with the error text and closed.
    pub fn parse(&mut self, buf: &[u8], out: &mut CommandArgs) -> Result<Progress, RequestError> {
        if self.phase == Phase::Idle {
            if let Some(n) = self.parse_whole(buf, out) {
                return Ok(Progress::Done(n));
            }
        }
        let result = self.parse_inner(buf, out);
        if result.is_err() {
            self.reset();
        }
        result
    }

    /// The pipelining fast path for a whole command: a multibulk command
    /// that is complete in `buf`, its header lines all in the usual shape
    /// and within every limit, read in one pass that keeps its position in
    /// registers and leaves the parser between commands, as it found it.
    /// `None` for anything else (an inline command, a partial frame, an
    /// empty or unusual one, any error), which the general path then parses
    /// from the start with the full rules.
    #[inline(always)]
    fn parse_whole(&self, buf: &[u8], out: &mut CommandArgs) -> Option<usize> {
        if buf.first() != Some(&b'*') {
            return None;
        }
        let (count, cr) = quick_number_line(buf, 1)?;
        let count_cap = if self.auth_required {
            UNAUTHENTICATED_MAX_MULTIBULK.min(self.limits.max_multibulk_len)
        } else {
            self.limits.max_multibulk_len
        };
        if count <= 0 || count as u64 > count_cap as u64 || cr > self.limits.max_inline_len {
            return None;
        }
        let bulk_cap = self.bulk_cap();
        out.clear();
        let mut pos = cr + 2;
        for _ in 0..count {
            let Some((start, len, end)) = complete_element(buf, pos, bulk_cap, self.limits.max_inline_len) else {
                out.clear();
                return None;
            };
            out.push_input(start, len);
            pos = end;
        }
        Some(pos)
    }

    /// The largest bulk argument accepted now: `proto-max-bulk-len`, or the
    /// pre-authentication bound when that is lower and applies.
    #[inline(always)]
    fn bulk_cap(&self) -> u64 {
        let max_bulk = self.limits.max_bulk_len as u64;
        if self.auth_required {
            max_bulk.min(UNAUTHENTICATED_MAX_BULK as u64)
        } else {
            max_bulk
        }
    }

    fn parse_inner(&mut self, buf: &[u8], out: &mut CommandArgs) -> Result<Progress, RequestError> {
        if self.phase == Phase::Idle {
            let Some(&first) = buf.first() else {
                return Ok(Progress::NeedMore { hint: 0 });
            };
            out.clear();
            self.pos = 0;
            self.scanned = 0;
            self.phase = if first == b'*' { Phase::Count } else { Phase::Inline };
        }
        match self.phase {
            Phase::Inline => self.parse_inline(buf, out),
            Phase::Count => match self.parse_count(buf)? {
                Some(done) => Ok(done),
                None => self.parse_elements(buf, out),
            },
            Phase::Elements => self.parse_elements(buf, out),
            Phase::Idle => Ok(Progress::NeedMore { hint: 0 }),
        }
    }

    fn parse_inline(&mut self, buf: &[u8], out: &mut CommandArgs) -> Result<Progress, RequestError> {
        let from = self.scanned.min(buf.len());
        let Some(nl) = memchr::memchr(b'\n', &buf[from..]).map(|i| from + i) else {
            if buf.len() > self.limits.max_inline_len {
                return Err(RequestError::TooBigInline);
            }
            self.scanned = buf.len();
            return Ok(Progress::NeedMore { hint: 0 });
        };
        // Judge the line by its own length, not by how much happened to be
        // buffered, so the outcome does not depend on how the bytes arrived.
        if nl > self.limits.max_inline_len {
            return Err(RequestError::TooBigInline);
        }
        let end = if nl > 0 && buf[nl - 1] == b'\r' { nl - 1 } else { nl };
        split_inline(&buf[..end], 0, out)?;
        self.reset();
        Ok(Progress::Done(nl + 1))
    }

    /// Read the `*N` line. `Some` when the command is finished (an empty one, or
    /// more input is needed); `None` when elements follow.
    fn parse_count(&mut self, buf: &[u8]) -> Result<Option<Progress>, RequestError> {
        let Some((value, cr)) = self.header_line(buf, RequestError::TooBigMbulkCount)? else {
            return Ok(Some(Progress::NeedMore { hint: if self.scanned < buf.len() { 1 } else { 0 } }));
        };
        let count = match value {
            Some(n) if n > 0 && n as u64 > self.limits.max_multibulk_len as u64 => {
                return Err(RequestError::InvalidMultibulkLength)
            }
            Some(n) if self.auth_required && n > UNAUTHENTICATED_MAX_MULTIBULK as i64 => {
                return Err(RequestError::UnauthenticatedMultibulkLength)
            }
            Some(n) if n <= 0 => {
                self.reset();
                return Ok(Some(Progress::Done(cr + 2)));
            }
            Some(n) => n as usize,
            None => return Err(RequestError::InvalidMultibulkLength),
        };
        self.remaining = count;
        self.pos = cr + 2;
        self.scanned = self.pos;
        self.bulk = None;
        self.phase = Phase::Elements;
        Ok(None)
    }

    fn parse_elements(&mut self, buf: &[u8], out: &mut CommandArgs) -> Result<Progress, RequestError> {
        if self.bulk.is_none() {
            self.take_complete_elements(buf, out);
        }
        while self.remaining > 0 {
            let len = match self.bulk {
                Some(len) => len,
                None => {
                    let Some(&first) = buf.get(self.pos) else {
                        return Ok(Progress::NeedMore { hint: 0 });
                    };
                    // Redis waits for the whole line before complaining; the
                    // first byte already decides it, so fail without waiting.
                    if first != b'$' {
                        return Err(RequestError::ExpectedDollar(first));
                    }
                    let Some((value, cr)) = self.header_line(buf, RequestError::TooBigBulkCount)? else {
                        return Ok(Progress::NeedMore { hint: if self.scanned < buf.len() { 1 } else { 0 } });
                    };
                    let len = match value {
                        Some(n) if n >= 0 && n as u64 <= self.limits.max_bulk_len as u64 => {
                            if self.auth_required && n as u64 > UNAUTHENTICATED_MAX_BULK as u64 {
                                return Err(RequestError::UnauthenticatedBulkLength);
                            }
                            n as usize
                        }
                        _ => return Err(RequestError::InvalidBulkLength),
                    };
                    self.pos = cr + 2;
                    self.bulk = Some(len);
                    len
                }
            };
            // `len` is at most max_bulk_len, so this cannot overflow in practice;
            // saturate anyway rather than trust a configured limit.
            let end = self.pos.saturating_add(len).saturating_add(2);
            if buf.len() < end {
                return Ok(Progress::NeedMore { hint: end - buf.len() });
            }
            if buf[end - 2] != b'\r' || buf[end - 1] != b'\n' {
                return Err(RequestError::MissingBulkTerminator);
            }
            out.push_input(self.pos, len);
            self.pos = end;
            self.scanned = end;
            self.bulk = None;
            self.remaining -= 1;
        }
        let done = self.pos;
        self.reset();
        Ok(Progress::Done(done))
    }

    /// The pipelining fast path: take every element that is already complete
    /// in `buf` and written in the usual shape, keeping position and count in
    /// registers. It stops, without touching the element, at anything else
    /// (partial data, an unusual header, any error), which the general loop in
    /// [`Self::parse_elements`] then handles with the full rules.
    #[inline(always)]
    fn take_complete_elements(&mut self, buf: &[u8], out: &mut CommandArgs) {
        let mut pos = self.pos;
        let mut remaining = self.remaining;
        let max_line = self.limits.max_inline_len;
        let bulk_cap = self.bulk_cap();
        while remaining > 0 {
            let Some((start, len, end)) = complete_element(buf, pos, bulk_cap, max_line) else {
                break;
            };
            out.push_input(start, len);
            pos = end;
            remaining -= 1;
        }
        self.pos = pos;
        self.scanned = pos;
        self.remaining = remaining;
    }

    /// Read the `*N` or `$L` line starting at `self.pos`: `None` when more input
    /// is needed, else the number it holds (`None` when it is not a valid
    /// integer or not ended by CRLF) and the index of its CR.
    #[inline(always)]
    fn header_line(&mut self, buf: &[u8], too_big: RequestError) -> Result<Option<(Option<i64>, usize)>, RequestError> {
        // Nearly every header is a few plain digits followed by CRLF; read
        // those in one pass without searching for the CR first.
        if let Some((n, cr)) = quick_number_line(buf, self.pos + 1) {
            if cr - self.pos <= self.limits.max_inline_len {
                return Ok(Some((Some(n), cr)));
            }
        }
        let Some(cr) = self.find_line_end(buf, too_big)? else {
            return Ok(None);
        };
        if buf[cr + 1] != b'\n' {
            return Ok(Some((None, cr)));
        }
        Ok(Some((parse_i64(&buf[self.pos + 1..cr]), cr)))
    }

    /// Find the CR ending the header line that starts at `self.pos`, requiring
    /// the byte after it to be present. `None` means more input is needed.
    ///
    /// A line longer than the header limit fails with `too_big`; as for inline
    /// lines, the line's own length decides, whatever was buffered.
    fn find_line_end(&mut self, buf: &[u8], too_big: RequestError) -> Result<Option<usize>, RequestError> {
        let from = self.scanned.max(self.pos + 1).min(buf.len());
        match memchr::memchr(b'\r', &buf[from..]) {
            None => {
                if buf.len().saturating_sub(self.pos) > self.limits.max_inline_len {
                    return Err(too_big);
                }
                self.scanned = buf.len();
                Ok(None)
            }
            Some(i) => {
                let cr = from + i;
                if cr - self.pos > self.limits.max_inline_len {
                    return Err(too_big);
                }
                // Keep the CR itself as the resume point so it is found again.
                self.scanned = cr;
                if cr + 1 >= buf.len() {
                    Ok(None)
                } else {
                    Ok(Some(cr))
                }
            }
        }
    }
}

/// The bulk element at `pos`, when it is whole in `buf` and in the usual
/// shape: a `$` line of plain digits within `max_line` bytes, a length up to
/// `bulk_cap`, the data and its CRLF. Its data's start and length, and where
/// the element ends; `None` for anything else, which the general path then
/// reads with the full rules.
#[inline(always)]
fn complete_element(buf: &[u8], pos: usize, bulk_cap: u64, max_line: usize) -> Option<(usize, usize, usize)> {
    if buf.get(pos) != Some(&b'$') {
        return None;
    }
    let (n, cr) = quick_number_line(buf, pos + 1)?;
    if n as u64 > bulk_cap || cr - pos > max_line {
        return None;
    }
    let (start, len) = (cr + 2, n as usize);
    let end = start.checked_add(len)?.checked_add(2)?;
    (buf.get(end - 2..end) == Some(b"\r\n")).then_some((start, len, end))
}

/// Read a header number in the common shape: 1 to 18 digits without a leading
/// zero (or `0` alone) followed by CRLF, starting at `start`. Returns the value
/// and the index of the CR, or `None` for anything else, which the general
/// path then handles (negative numbers, partial lines, errors).
#[inline(always)]
fn quick_number_line(buf: &[u8], start: usize) -> Option<(i64, usize)> {
    // Nearly every count and key or short value has one or two digits:
    // matched whole, with no loop and no bounds check per digit.
    if let Some(&[d @ b'0'..=b'9', b'\r', b'\n']) = buf.get(start..start + 3) {
        return Some((i64::from(d - b'0'), start + 1));
    }
    if let Some(&[hi @ b'1'..=b'9', lo @ b'0'..=b'9', b'\r', b'\n']) = buf.get(start..start + 4) {
        return Some((i64::from(hi - b'0') * 10 + i64::from(lo - b'0'), start + 2));
    }
    let digits = buf.get(start..)?;
    let mut value: i64 = 0;
    let mut k = 0;
    // 18 digits always fit in an i64, so no overflow check is needed here.
    while k < digits.len() && k < 18 {
        let d = digits[k].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        value = value * 10 + i64::from(d);
        k += 1;
    }
    if k == 0 || (k > 1 && digits[0] == b'0') {
        return None;
    }
    match digits.get(k..k + 2) {
        Some(b"\r\n") => Some((value, start + k)),
        _ => None,
    }
}

/// Parse a signed 64-bit decimal integer the way Redis's `string2ll` does: an
/// optional `-`, no `+`, no spaces, no leading zeros (except the number `0`
/// itself, and `-0` is rejected), and no overflow.
fn parse_i64(s: &[u8]) -> Option<i64> {
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut magnitude: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        if magnitude > i64::MAX as u64 + 1 {
            return None;
        }
        Some((magnitude as i64).wrapping_neg())
    } else {
        i64::try_from(magnitude).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Args = Vec<Vec<u8>>;

    fn args(ws: &[&[u8]]) -> Args {
        ws.iter().map(|w| w.to_vec()).collect()
    }

    /// Parse every command in `buf` at once; stops at the first error or at an
    /// incomplete tail, which is reported as `Ok(None)` in the last slot.
    fn parse_all(buf: &[u8]) -> Vec<Result<Option<Args>, RequestError>> {
        let mut p = RequestParser::default();
        let mut out = CommandArgs::new();
        let mut at = 0;
        let mut results = Vec::new();
        loop {
            if at == buf.len() {
                return results;
            }
            match p.parse(&buf[at..], &mut out) {
                Ok(Progress::Done(n)) => {
                    results.push(Ok(Some(out.to_vec(&buf[at..]))));
                    at += n;
                }
                Ok(Progress::NeedMore { .. }) => {
                    results.push(Ok(None));
                    return results;
                }
                Err(e) => {
                    results.push(Err(e));
                    return results;
                }
            }
        }
    }

    /// Feed `buf` in chunks whose sizes come from `sizes` (cycled), the way a
    /// server does: the unconsumed tail plus newly arrived bytes.
    fn parse_chunked(buf: &[u8], sizes: &[usize]) -> Vec<Result<Option<Args>, RequestError>> {
        let mut p = RequestParser::default();
        let mut out = CommandArgs::new();
        let mut start = 0;
        let mut avail = 0;
        let mut results = Vec::new();
        let mut k = 0;
        while avail < buf.len() {
            avail = (avail + sizes[k % sizes.len()].max(1)).min(buf.len());
            k += 1;
            loop {
                if start == avail {
                    break;
                }
                match p.parse(&buf[start..avail], &mut out) {
                    Ok(Progress::Done(n)) => {
                        results.push(Ok(Some(out.to_vec(&buf[start..avail]))));
                        start += n;
                    }
                    Ok(Progress::NeedMore { .. }) => break,
                    Err(e) => {
                        results.push(Err(e));
                        return results;
                    }
                }
            }
        }
        if start < buf.len() {
            results.push(Ok(None));
        }
        results
    }

    fn one(buf: &[u8]) -> Result<Progress, RequestError> {
        RequestParser::default().parse(buf, &mut CommandArgs::new())
    }

    /// What the general path alone makes of `buf`: the parse without the
    /// whole-command fast path.
    fn general(p: &mut RequestParser, buf: &[u8], out: &mut CommandArgs) -> Result<Progress, RequestError> {
        let result = p.parse_inner(buf, out);
        if result.is_err() {
            p.reset();
        }
        result
    }

    /// The fast path changes nothing a parse decides: on frames in the usual
    /// shape and on near misses of it (bad digits, leading zeros, lengths at
    /// and past each limit, short data, missing terminators, empty and
    /// negative counts), under small limits and before authentication, the
    /// outcome, the arguments and the state left behind match the general
    /// path's, for the whole buffer and for every prefix of it.
    #[test]
    fn the_whole_command_fast_path_agrees_with_the_general_path() {
        let mut rng = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let pieces: [&[u8]; 14] =
            [b"*", b"$", b"\r\n", b"\r", b"\n", b"0", b"1", b"2", b"3", b"9", b"-", b"x", b"PING", b"abc"];
        for round in 0..4000 {
            let mut buf = Vec::new();
            if next(3) > 0 {
                // A well-formed command, perhaps damaged at one byte.
                let count = next(4) + usize::from(round % 7 == 0) as u64 * 12;
                buf.extend_from_slice(format!("*{count}\r\n").as_bytes());
                for _ in 0..count {
                    let len = [0, 1, 3, 4, 5, 10, 11][next(7) as usize];
                    buf.extend_from_slice(format!("${len}\r\n").as_bytes());
                    buf.extend((0..len).map(|i| b'a' + (i % 26) as u8));
                    buf.extend_from_slice(b"\r\n");
                }
                if next(2) == 0 && !buf.is_empty() {
                    let at = next(buf.len() as u64) as usize;
                    buf[at] = pieces[next(pieces.len() as u64) as usize][0];
                }
            } else {
                for _ in 0..next(12) {
                    buf.extend_from_slice(pieces[next(pieces.len() as u64) as usize]);
                }
            }
            let limits = RequestLimits {
                max_bulk_len: [4, 10, 512 << 20][next(3) as usize],
                max_multibulk_len: [2, 12, i32::MAX as usize][next(3) as usize],
                max_inline_len: [2, 3, 5, 64 << 10][next(4) as usize],
            };
            let auth = next(4) == 0;
            for cut in 0..=buf.len() {
                let bytes = &buf[..cut];
                let (mut fast, mut slow) = (RequestParser::new(limits.clone()), RequestParser::new(limits.clone()));
                fast.set_auth_required(auth);
                slow.set_auth_required(auth);
                let (mut fast_out, mut slow_out) = (CommandArgs::new(), CommandArgs::new());
                let got = fast.parse(bytes, &mut fast_out);
                let want = general(&mut slow, bytes, &mut slow_out);
                assert_eq!(got, want, "{:?} under {limits:?}, auth {auth}", String::from_utf8_lossy(bytes));
                if let Ok(Progress::Done(_)) = want {
                    assert_eq!(fast_out.to_vec(bytes), slow_out.to_vec(bytes));
                }
                assert_eq!(
                    format!("{fast:?}"),
                    format!("{slow:?}"),
                    "state after {:?}",
                    String::from_utf8_lossy(bytes)
                );
            }
        }
    }

    fn err_text(buf: &[u8]) -> String {
        match one(buf) {
            Err(e) => e.to_string(),
            other => panic!("expected an error for {buf:?}, got {other:?}"),
        }
    }

    #[test]
    fn parses_a_multibulk_command() {
        let buf = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n";
        assert_eq!(parse_all(buf), vec![Ok(Some(args(&[b"SET", b"k", b"value"])))]);
        assert_eq!(one(buf), Ok(Progress::Done(buf.len())));
    }

    #[test]
    fn parses_inline_commands() {
        assert_eq!(parse_all(b"PING\r\n"), vec![Ok(Some(args(&[b"PING"])))]);
        assert_eq!(parse_all(b"SET a \"b c\"\n"), vec![Ok(Some(args(&[b"SET", b"a", b"b c"])))]);
        // Only the CR right before the LF is stripped.
        assert_eq!(parse_all(b"a\rb\r\r\n"), vec![Ok(Some(args(&[b"a", b"b"])))]);
        assert_eq!(parse_all(b"ECHO \"x\r\"\r\n"), vec![Ok(Some(args(&[b"ECHO", b"x\r"])))]);
    }

    #[test]
    fn empty_commands_are_consumed_with_no_arguments() {
        for buf in [&b"*0\r\n"[..], b"*-1\r\n", b"*-5\r\n", b"\n", b"\r\n", b"   \t\r\n"] {
            let mut out = CommandArgs::new();
            out.push_owned(b"stale");
            assert_eq!(RequestParser::default().parse(buf, &mut out), Ok(Progress::Done(buf.len())), "{buf:?}");
            assert!(out.is_empty(), "{buf:?}");
        }
    }

    #[test]
    fn pipelined_commands_parse_one_at_a_time() {
        let buf = b"*1\r\n$4\r\nPING\r\nECHO hi\r\n*0\r\n*2\r\n$3\r\nGET\r\n$0\r\n\r\n\n*1\r\n$4\r\nPI";
        assert_eq!(
            parse_all(buf),
            vec![
                Ok(Some(args(&[b"PING"]))),
                Ok(Some(args(&[b"ECHO", b"hi"]))),
                Ok(Some(args(&[]))),
                Ok(Some(args(&[b"GET", b""]))),
                Ok(Some(args(&[]))),
                Ok(None),
            ]
        );
    }

    #[test]
    fn payloads_are_binary_safe() {
        let buf = b"*2\r\n$4\r\n\r\n\r\n\r\n$5\r\n*1\r\n$\r\n";
        assert_eq!(parse_all(buf), vec![Ok(Some(args(&[b"\r\n\r\n", b"*1\r\n$"])))]);
        let mut bin = b"*1\r\n$256\r\n".to_vec();
        let payload: Vec<u8> = (0..=255u8).collect();
        bin.extend_from_slice(&payload);
        bin.extend_from_slice(b"\r\n");
        assert_eq!(parse_all(&bin), vec![Ok(Some(vec![payload]))]);
    }

    #[test]
    fn every_error_text_matches_redis() {
        assert_eq!(err_text(b"*x\r\n"), "ERR Protocol error: invalid multibulk length");
        assert_eq!(err_text(b"*1\r\n$x\r\n"), "ERR Protocol error: invalid bulk length");
        assert_eq!(err_text(b"*1\r\nx"), "ERR Protocol error: expected '$', got 'x'");
        assert_eq!(err_text(b"*1\r\n\r\n"), "ERR Protocol error: expected '$', got ' '");
        assert_eq!(err_text(b"*1\r\n\xc3"), "ERR Protocol error: expected '$', got '?'");
        let long_count = [&b"*"[..], &[b'1'; 70_000]].concat();
        assert_eq!(err_text(&long_count), "ERR Protocol error: too big mbulk count string");
        let long_bulk = [&b"*1\r\n$"[..], &[b'1'; 70_000]].concat();
        assert_eq!(err_text(&long_bulk), "ERR Protocol error: too big bulk count string");
        assert_eq!(err_text(&[b'a'; 70_000]), "ERR Protocol error: too big inline request");
        assert_eq!(err_text(b"SET \"a\n"), "ERR Protocol error: unbalanced quotes in request");
        assert_eq!(err_text(b"*1\r\n$1\r\naXY"), "ERR Protocol error: expected '\\r\\n' after bulk data");
    }

    #[test]
    fn count_line_follows_string2ll() {
        for bad in
            ["*+1", "*01", "*1 ", "* 1", "*", "*-", "*-0", "*1x", "*99999999999999999999", "*-99999999999999999999"]
        {
            let buf = format!("{bad}\r\n");
            assert_eq!(one(buf.as_bytes()), Err(RequestError::InvalidMultibulkLength), "{bad}");
        }
        assert_eq!(one(b"*-9223372036854775808\r\n"), Ok(Progress::Done(23)));
        assert_eq!(one(b"*9223372036854775807\r\n"), Err(RequestError::InvalidMultibulkLength));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-42"), Some(-42));
        assert_eq!(quick_number_line(b"$123\r\n", 1), Some((123, 4)));
        assert_eq!(quick_number_line(b"$0\r\n", 1), Some((0, 2)));
        assert_eq!(quick_number_line(b"$7\r\n", 1), Some((7, 2)));
        assert_eq!(quick_number_line(b"$10\r\n", 1), Some((10, 3)));
        assert_eq!(quick_number_line(b"$99\r\nab", 1), Some((99, 3)));
        for not_quick in [
            &b"$01\r\n"[..],
            b"$00\r\n",
            b"$\r\n",
            b"$-1\r\n",
            b"$1\r",
            b"$1\rx",
            b"$12\r",
            b"$12\rx",
            b"$1x\r\n",
            b"$1234567890123456789\r\n",
        ] {
            assert_eq!(quick_number_line(not_quick, 1), None, "{not_quick:?}");
        }
        assert_eq!(quick_number_line(b"*123456789012345678\r\n", 1), Some((123456789012345678, 19)));
    }

    #[test]
    fn header_lines_need_crlf() {
        assert_eq!(one(b"*1\rx$1\r\na\r\n"), Err(RequestError::InvalidMultibulkLength));
        assert_eq!(one(b"*1\r\n$1\rxa\r\n"), Err(RequestError::InvalidBulkLength));
        assert_eq!(one(b"*1\n"), Ok(Progress::NeedMore { hint: 0 }));
        assert_eq!(one(b"*1\r"), Ok(Progress::NeedMore { hint: 1 }));
    }

    #[test]
    fn bulk_length_rules_and_limit() {
        for bad in ["$-1", "$-0", "$+1", "$01", "$", "$1 ", "$536870913"] {
            let buf = format!("*1\r\n{bad}\r\n");
            assert_eq!(one(buf.as_bytes()), Err(RequestError::InvalidBulkLength), "{bad}");
        }
        // The limit itself is accepted, and the length is checked before any payload arrives.
        assert_eq!(one(b"*1\r\n$536870912\r\n"), Ok(Progress::NeedMore { hint: 536870914 }));
        let mut p = RequestParser::new(RequestLimits { max_bulk_len: 3, ..RequestLimits::default() });
        let mut out = CommandArgs::new();
        assert_eq!(p.parse(b"*1\r\n$3\r\nabc\r\n", &mut out), Ok(Progress::Done(13)));
        assert_eq!(p.parse(b"*1\r\n$4\r\n", &mut out), Err(RequestError::InvalidBulkLength));
    }

    #[test]
    fn multibulk_count_limit() {
        let mut p = RequestParser::new(RequestLimits { max_multibulk_len: 2, ..RequestLimits::default() });
        let mut out = CommandArgs::new();
        assert_eq!(p.parse(b"*3\r\n", &mut out), Err(RequestError::InvalidMultibulkLength));
        assert_eq!(p.parse(b"*2\r\n", &mut out), Ok(Progress::NeedMore { hint: 0 }));
        assert_eq!(one(b"*2147483647\r\n"), Ok(Progress::NeedMore { hint: 0 }));
        assert_eq!(one(b"*2147483648\r\n"), Err(RequestError::InvalidMultibulkLength));
    }

    #[test]
    fn huge_counts_and_lengths_do_not_allocate() {
        let mut p = RequestParser::default();
        let mut out = CommandArgs::new();
        assert_eq!(p.parse(b"*2147483647\r\n$1\r\na\r\n", &mut out), Ok(Progress::NeedMore { hint: 0 }));
        assert_eq!(out.len(), 1);
        let mut p = RequestParser::default();
        assert_eq!(p.parse(b"*1\r\n$536870912\r\nab", &mut out), Ok(Progress::NeedMore { hint: 536870912 }));
        // Reaching here at all shows nothing was sized from the claimed count or
        // length: 2^31 argument slots or 512 MiB would not go unnoticed.
        assert!(out.is_empty());
    }

    #[test]
    fn line_limits_are_exact_and_do_not_depend_on_buffering() {
        let limits = RequestLimits { max_inline_len: 8, ..RequestLimits::default() };
        let run = |buf: &[u8]| RequestParser::new(limits.clone()).parse(buf, &mut CommandArgs::new());
        // Inline: 8 bytes before the LF are fine, 9 are not, complete or not.
        assert_eq!(run(b"abcdefgh\n"), Ok(Progress::Done(9)));
        assert_eq!(run(b"abcdefgh"), Ok(Progress::NeedMore { hint: 0 }));
        assert_eq!(run(b"abcdefghi\n"), Err(RequestError::TooBigInline));
        assert_eq!(run(b"abcdefghi"), Err(RequestError::TooBigInline));
        // Count line: `*` plus 7 digits fits, one more does not.
        assert_eq!(run(b"*1000000\r\n"), Ok(Progress::NeedMore { hint: 0 }));
        assert_eq!(run(b"*10000000\r\n"), Err(RequestError::TooBigMbulkCount));
        assert_eq!(run(b"*10000000"), Err(RequestError::TooBigMbulkCount));
        // Bulk line likewise, counted from its `$`.
        assert_eq!(run(b"*1\r\n$0000000\r\n"), Err(RequestError::InvalidBulkLength));
        assert_eq!(run(b"*1\r\n$00000000\r\n"), Err(RequestError::TooBigBulkCount));
        assert_eq!(run(b"*1\r\n$00000000"), Err(RequestError::TooBigBulkCount));
    }

    #[test]
    fn unauthenticated_clients_get_tighter_bounds() {
        let mut p = RequestParser::default();
        p.set_auth_required(true);
        assert!(p.auth_required());
        let mut out = CommandArgs::new();
        let mut run = |p: &mut RequestParser, buf: &[u8]| p.parse(buf, &mut out);
        assert_eq!(run(&mut p, b"*11\r\n"), Err(RequestError::UnauthenticatedMultibulkLength));
        assert_eq!(run(&mut p, b"*10\r\n"), Ok(Progress::NeedMore { hint: 0 }));
        p.reset();
        // Malformed still wins over unauthenticated, as in Redis.
        assert_eq!(run(&mut p, b"*2147483648\r\n"), Err(RequestError::InvalidMultibulkLength));
        assert_eq!(run(&mut p, b"*1\r\n$16385\r\n"), Err(RequestError::UnauthenticatedBulkLength));
        assert_eq!(run(&mut p, b"*1\r\n$536870913\r\n"), Err(RequestError::InvalidBulkLength));
        assert_eq!(run(&mut p, b"*1\r\n$16384\r\n"), Ok(Progress::NeedMore { hint: 16386 }));
        p.reset();
        assert_eq!(run(&mut p, b"*-1\r\n"), Ok(Progress::Done(5)));
        p.set_auth_required(false);
        assert_eq!(run(&mut p, b"*11\r\n$16385\r\n"), Ok(Progress::NeedMore { hint: 16387 }));
        assert_eq!(
            RequestError::UnauthenticatedMultibulkLength.to_string(),
            "ERR Protocol error: unauthenticated multibulk length"
        );
        assert_eq!(
            RequestError::UnauthenticatedBulkLength.to_string(),
            "ERR Protocol error: unauthenticated bulk length"
        );
    }

    #[test]
    fn fast_path_respects_every_limit() {
        let tiny = RequestLimits { max_inline_len: 3, ..RequestLimits::default() };
        let mut out = CommandArgs::new();
        let buf = b"*1\r\n$100\r\n";
        assert_eq!(RequestParser::new(tiny).parse(buf, &mut out), Err(RequestError::TooBigBulkCount));
        let small_bulk = RequestLimits { max_bulk_len: 2, ..RequestLimits::default() };
        let buf = b"*2\r\n$2\r\nab\r\n$3\r\nabc\r\n";
        assert_eq!(RequestParser::new(small_bulk).parse(buf, &mut out), Err(RequestError::InvalidBulkLength));
        let mut p = RequestParser::default();
        p.set_auth_required(true);
        let mut buf = b"*1\r\n$16385\r\n".to_vec();
        buf.resize(buf.len() + 16385, b'x');
        buf.extend_from_slice(b"\r\n");
        assert_eq!(p.parse(&buf, &mut out), Err(RequestError::UnauthenticatedBulkLength));
    }

    #[test]
    fn expected_dollar_is_reported_without_waiting_for_the_line() {
        assert_eq!(one(b"*2\r\n$1\r\na\r\n:"), Err(RequestError::ExpectedDollar(b':')));
    }

    #[test]
    fn bulk_terminator_is_required() {
        assert_eq!(one(b"*1\r\n$1\r\nab\r\n"), Err(RequestError::MissingBulkTerminator));
        assert_eq!(one(b"*1\r\n$1\r\na\rx"), Err(RequestError::MissingBulkTerminator));
        assert_eq!(one(b"*1\r\n$1\r\na\n\n"), Err(RequestError::MissingBulkTerminator));
        assert_eq!(one(b"*1\r\n$1\r\na\r"), Ok(Progress::NeedMore { hint: 1 }));
    }

    #[test]
    fn parser_is_reusable_after_an_error() {
        let mut p = RequestParser::default();
        let mut out = CommandArgs::new();
        assert!(p.parse(b"*1\r\n$x\r\n", &mut out).is_err());
        assert_eq!(p.parse(b"PING\r\n", &mut out), Ok(Progress::Done(6)));
        assert_eq!(out.to_vec(b"PING\r\n"), args(&[b"PING"]));
    }

    #[test]
    fn reset_abandons_a_partial_command() {
        let mut p = RequestParser::default();
        let mut out = CommandArgs::new();
        assert!(matches!(p.parse(b"*2\r\n$3\r\nGET\r\n", &mut out), Ok(Progress::NeedMore { .. })));
        p.reset();
        assert_eq!(p.parse(b"*1\r\n$4\r\nPING\r\n", &mut out), Ok(Progress::Done(14)));
        assert_eq!(out.len(), 1);
    }

    fn pipeline() -> Vec<u8> {
        let mut buf = Vec::new();
        buf.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$10\r\nva\r\nl\r\nue!\r\n");
        buf.extend_from_slice(b"PING\r\n");
        buf.extend_from_slice(b"SET 'a b' \"c\\x41\\n\" plain\n");
        buf.extend_from_slice(b"*0\r\n\r\n*-1\r\n");
        buf.extend_from_slice(b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n");
        buf.extend_from_slice(b"  \t \r\n");
        buf.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        buf
    }

    #[test]
    fn pipeline_split_at_every_position_matches_whole_parse() {
        let buf = pipeline();
        let whole = parse_all(&buf);
        assert_eq!(whole.len(), 9);
        assert!(whole.iter().all(|r| matches!(r, Ok(Some(_)))));
        assert_eq!(parse_chunked(&buf, &[1]), whole);
        for split in 1..buf.len() {
            assert_eq!(parse_chunked(&buf, &[split, buf.len()]), whole, "split at {split}");
        }
        for seed in 0..200u64 {
            let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let sizes: Vec<usize> = (0..16)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (x >> 33) as usize % 13 + 1
                })
                .collect();
            assert_eq!(parse_chunked(&buf, &sizes), whole, "sizes {sizes:?}");
        }
    }

    #[test]
    fn errors_are_the_same_however_the_input_is_split() {
        let bad: [&[u8]; 8] = [
            b"PING\r\n*1\r\n$3\r\nabcd\r\n",
            b"PING\r\n*1\r\nfoo\r\n",
            b"PING\r\n*01\r\n",
            b"PING\r\n*1\r\n$-1\r\n",
            b"PING\r\nSET 'a\r\n",
            b"PING\r\nSET \"a\"b\r\n",
            b"*1\r\n$1\r\na\r\n*1\rx",
            b"*1\r\n$1\r\na\r\n*1\r\n$1\rx",
        ];
        for buf in bad {
            let whole = parse_all(buf);
            assert!(matches!(whole.last(), Some(Err(_))), "{buf:?}");
            for split in 1..buf.len() {
                assert_eq!(parse_chunked(buf, &[split, buf.len()]), whole, "{buf:?} split at {split}");
            }
            assert_eq!(parse_chunked(buf, &[1]), whole, "{buf:?}");
        }
    }

    #[test]
    fn need_more_hint_counts_the_rest_of_the_bulk() {
        let mut p = RequestParser::default();
        let mut out = CommandArgs::new();
        let buf = b"*2\r\n$3\r\nSET\r\n$10\r\n0123456789\r\n";
        assert_eq!(p.parse(&buf[..16], &mut out), Ok(Progress::NeedMore { hint: 0 }));
        assert_eq!(p.parse(&buf[..17], &mut out), Ok(Progress::NeedMore { hint: 1 }));
        assert_eq!(p.parse(&buf[..18], &mut out), Ok(Progress::NeedMore { hint: 12 }));
        assert_eq!(p.parse(&buf[..25], &mut out), Ok(Progress::NeedMore { hint: 5 }));
        assert_eq!(p.parse(&buf[..29], &mut out), Ok(Progress::NeedMore { hint: 1 }));
        assert_eq!(p.parse(buf, &mut out), Ok(Progress::Done(buf.len())));
        assert_eq!(out.to_vec(buf), args(&[b"SET", b"0123456789"]));
    }

    #[test]
    fn big_bulk_in_small_chunks_is_not_rescanned() {
        const SIZE: usize = 50 * 1024 * 1024;
        let mut buf = format!("*2\r\n$3\r\nSET\r\n${SIZE}\r\n").into_bytes();
        let header = buf.len();
        // Filled with CRs so that any rescan for a line end would be very visible.
        buf.resize(header + SIZE, b'\r');
        buf.extend_from_slice(b"\r\n");
        let mut p = RequestParser::default();
        let mut out = CommandArgs::new();
        let mut avail = 0;
        let started = std::time::Instant::now();
        let n = loop {
            avail = (avail + 64 * 1024).min(buf.len());
            match p.parse(&buf[..avail], &mut out).unwrap() {
                Progress::Done(n) => break n,
                Progress::NeedMore { hint } => {
                    if avail > header {
                        assert_eq!(hint, buf.len() - avail);
                        // The parser sits at the payload start with the length known.
                        assert_eq!((p.pos, p.bulk, p.remaining), (header, Some(SIZE), 1));
                    }
                }
            }
        };
        assert_eq!(n, buf.len());
        assert_eq!(out.len(), 2);
        assert_eq!(out.get(&buf, 1).map(<[u8]>::len), Some(SIZE));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn long_inline_line_arriving_bytewise_is_scanned_once() {
        let mut p = RequestParser::default();
        let mut out = CommandArgs::new();
        let mut buf = vec![b'a'; 60_000];
        buf.push(b'\n');
        for avail in 1..buf.len() {
            assert_eq!(p.parse(&buf[..avail], &mut out), Ok(Progress::NeedMore { hint: 0 }));
            assert_eq!(p.scanned, avail);
        }
        assert_eq!(p.parse(&buf, &mut out), Ok(Progress::Done(buf.len())));
    }

    #[test]
    fn display_texts_for_expected_dollar() {
        assert_eq!(RequestError::ExpectedDollar(b'\n').to_string(), "ERR Protocol error: expected '$', got ' '");
        assert_eq!(RequestError::ExpectedDollar(b'+').to_string(), "ERR Protocol error: expected '$', got '+'");
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn encode(cmds: &[Args]) -> Vec<u8> {
            let mut buf = Vec::new();
            for cmd in cmds {
                buf.extend_from_slice(format!("*{}\r\n", cmd.len()).as_bytes());
                for a in cmd {
                    buf.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                    buf.extend_from_slice(a);
                    buf.extend_from_slice(b"\r\n");
                }
            }
            buf
        }

        proptest! {
            #[test]
            fn multibulk_roundtrip_under_any_split(
                cmds in prop::collection::vec(
                    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..6), 1..5),
                sizes in prop::collection::vec(1usize..50, 1..10),
            ) {
                let buf = encode(&cmds);
                let expected: Vec<_> = cmds.iter().cloned().map(|c| Ok(Some(c))).collect();
                prop_assert_eq!(parse_all(&buf), expected.clone());
                prop_assert_eq!(parse_chunked(&buf, &sizes), expected);
            }

            #[test]
            fn arbitrary_bytes_never_panic_and_split_consistently(
                buf in prop::collection::vec(
                    prop_oneof![Just(b'*'), Just(b'$'), Just(b'\r'), Just(b'\n'), Just(b'1'), Just(b'"'), any::<u8>()],
                    0..80),
                sizes in prop::collection::vec(1usize..20, 1..6),
            ) {
                prop_assert_eq!(parse_chunked(&buf, &sizes), parse_all(&buf));
            }
        }
    }
}
