//! Command streams converted between RESP and RESPB/1, in bounded memory.
//!
//! An append-only file, or the input of `--pipe`, is a stream of RESP
//! commands; RESPB carries the same commands in binary frames. The
//! [`Converter`] takes the input in chunks of any size and turns each
//! complete command into the other form as soon as it is whole, so memory
//! stays at one partial command plus one chunk however long the stream is.
//!
//! - RESP → RESPB parses with the server's own request parser (multibulk and
//!   inline, Redis's rules) and encodes with the RESPB encoder, which falls
//!   back to a passthrough frame for any command a binary layout cannot carry
//!   without changing it. Blank lines and empty multibulks are dropped, as
//!   the server would ignore them.
//! - RESPB → RESP decodes frames with the server's decoder and writes each
//!   command as a multibulk. Mux ids are not kept (a RESP stream has one
//!   client); MUX_CREATE / MUX_CLOSE frames have no RESP form and are
//!   counted and left out.
//!
//! Converting RESP → RESPB → RESP gives back commands with the same meaning:
//! names and option keywords may change case, options may come back in the
//! layout's order and numbers in canonical form; passthrough commands come
//! back byte for byte.

use std::io::{self, Read, Write};

use kvik_protocol::resp::command::write_command;
use kvik_protocol::resp::request::{Progress, RequestError, RequestLimits, RequestParser};
use kvik_protocol::respb::{encode_request, DecodeError, Decoded, Encoding, Frame, RespbDecoder};
use kvik_protocol::CommandArgs;

use crate::options::Target;

/// Bytes read from the input at a time.
pub const CHUNK: usize = 64 * 1024;

/// What a conversion did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Input bytes taken.
    pub bytes_in: u64,
    /// Output bytes produced.
    pub bytes_out: u64,
    /// Commands converted.
    pub commands: u64,
    /// Of those, commands that became (RESP → RESPB) passthrough frames or
    /// came from (RESPB → RESP) passthrough frames.
    pub passthrough: u64,
    /// MUX_CREATE / MUX_CLOSE frames left out.
    pub control_frames: u64,
}

impl Stats {
    /// How much smaller the output is than the input, in percent (negative
    /// when it grew).
    pub fn savings_percent(&self) -> f64 {
        if self.bytes_in == 0 {
            return 0.0;
        }
        (self.bytes_in as f64 - self.bytes_out as f64) * 100.0 / self.bytes_in as f64
    }

    /// The report printed on stderr after a conversion.
    pub fn report(&self, target: Target) -> String {
        let (from, to) = match target {
            Target::Respb => ("RESP", "RESPB"),
            Target::Resp => ("RESPB", "RESP"),
        };
        let mut s = format!(
            "converted {} commands ({} passthrough) from {from} to {to}: {} bytes in, {} bytes out, {:.1}% {}",
            self.commands,
            self.passthrough,
            self.bytes_in,
            self.bytes_out,
            self.savings_percent().abs(),
            if self.bytes_out <= self.bytes_in { "smaller" } else { "larger" },
        );
        if self.control_frames > 0 {
            s.push_str(&format!(" ({} mux control frames left out)", self.control_frames));
        }
        s
    }
}

/// Why a stream could not be converted.
#[derive(Debug)]
pub enum ConvertError {
    /// Reading or writing failed.
    Io(io::Error),
    /// The RESP input breaks the protocol at this input offset.
    Resp(u64, RequestError),
    /// The RESPB input holds an undecodable frame at this input offset.
    Respb(u64, DecodeError),
    /// The input ended inside a command; this many bytes were left over.
    Truncated(usize),
}

impl std::fmt::Display for ConvertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConvertError::Io(e) => write!(f, "I/O error: {e}"),
            ConvertError::Resp(at, e) => write!(f, "bad RESP command at byte {at}: {e}"),
            ConvertError::Respb(at, e) => write!(f, "bad RESPB frame at byte {at}: {e}"),
            ConvertError::Truncated(n) => write!(f, "input ends inside a command ({n} bytes left over)"),
        }
    }
}

impl std::error::Error for ConvertError {}

impl From<io::Error> for ConvertError {
    fn from(e: io::Error) -> Self {
        ConvertError::Io(e)
    }
}

/// A streaming converter in one direction.
#[derive(Debug)]
pub struct Converter {
    target: Target,
    /// Unconverted input: at most one partial command plus the last chunk.
    buf: Vec<u8>,
    /// Bytes of `buf` already converted.
    start: usize,
    /// Bytes `buf[start..]` must hold before trying again (decoder hint).
    need: usize,
    /// Input offset of `buf[0]`, for error messages.
    offset: u64,
    parser: RequestParser,
    decoder: RespbDecoder,
    args: CommandArgs,
    stats: Stats,
}

impl Converter {
    /// A converter producing `target`.
    pub fn new(target: Target) -> Converter {
        Converter {
            target,
            buf: Vec::with_capacity(CHUNK),
            start: 0,
            need: 1,
            offset: 0,
            parser: RequestParser::new(RequestLimits::default()),
            decoder: RespbDecoder::default(),
            args: CommandArgs::new(),
            stats: Stats::default(),
        }
    }

    /// What has been converted so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Take `input` and append the conversion of every command it completes
    /// to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), ConvertError> {
        self.stats.bytes_in += input.len() as u64;
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.offset += self.start as u64;
            self.start = 0;
        }
        self.buf.extend_from_slice(input);
        let before = out.len();
        let result = match self.target {
            Target::Respb => self.resp_to_respb(out),
            Target::Resp => self.respb_to_resp(out),
        };
        self.stats.bytes_out += (out.len() - before) as u64;
        result
    }

    /// Check that the input ended between commands.
    pub fn finish(&self) -> Result<Stats, ConvertError> {
        match self.buf.len() - self.start {
            0 => Ok(self.stats),
            left => Err(ConvertError::Truncated(left)),
        }
    }

    fn resp_to_respb(&mut self, out: &mut Vec<u8>) -> Result<(), ConvertError> {
        loop {
            let pending = &self.buf[self.start..];
            if pending.is_empty() {
                return Ok(());
            }
            let at = self.offset + self.start as u64;
            match self.parser.parse(pending, &mut self.args).map_err(|e| ConvertError::Resp(at, e))? {
                Progress::Done(n) => {
                    if !self.args.is_empty() {
                        let args: Vec<&[u8]> = self.args.iter(pending).collect();
                        if encode_request(&args, 0, out) == Encoding::Passthrough {
                            self.stats.passthrough += 1;
                        }
                        self.stats.commands += 1;
                    }
                    self.start += n;
                }
                Progress::NeedMore { .. } => return Ok(()),
            }
        }
    }

    fn respb_to_resp(&mut self, out: &mut Vec<u8>) -> Result<(), ConvertError> {
        loop {
            let pending = &self.buf[self.start..];
            if pending.is_empty() || pending.len() < self.need {
                return Ok(());
            }
            let at = self.offset + self.start as u64;
            match self.decoder.decode(pending, &mut self.args).map_err(|e| ConvertError::Respb(at, e))? {
                Decoded::Frame { frame, consumed } => {
                    match frame {
                        Frame::Command { .. } => {
                            let args: Vec<&[u8]> = self.args.iter(pending).collect();
                            write_command(&args, out);
                            self.stats.commands += 1;
                            if pending.starts_with(&kvik_protocol::respb::PASSTHROUGH.to_be_bytes()) {
                                self.stats.passthrough += 1;
                            }
                        }
                        Frame::MuxCreate { .. } | Frame::MuxClose { .. } => self.stats.control_frames += 1,
                    }
                    self.start += consumed;
                    self.need = 1;
                }
                Decoded::NeedMore { hint } => {
                    // The decoder starts over on each call: wait for the bytes it asked for.
                    self.need = pending.len() + hint.max(1);
                    return Ok(());
                }
            }
        }
    }
}

/// Convert everything `input` holds to `target` on `output`, in chunks.
pub fn convert_stream<R: Read, W: Write>(target: Target, mut input: R, output: W) -> Result<Stats, ConvertError> {
    let mut conv = Converter::new(target);
    let mut output = io::BufWriter::with_capacity(CHUNK, output);
    let mut chunk = vec![0u8; CHUNK];
    let mut out = Vec::with_capacity(CHUNK * 2);
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        conv.feed(&chunk[..n], &mut out)?;
        output.write_all(&out)?;
        out.clear();
    }
    output.flush()?;
    conv.finish()
}

#[cfg(test)]
mod tests;
