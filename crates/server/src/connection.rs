//! One client connection, from its first byte to its close.
//!
//! The first byte decides the protocol for the life of the connection: RESP
//! text, RESPB frames, or a RESPB handshake followed by frames. After that
//! the loop is the same for both: read what the socket has, decode every
//! complete request in the buffer, run each one appending its reply to one
//! output buffer, and send that buffer with one write. Pipelined clients get
//! their whole batch answered with one system call each way.
//!
//! A request that breaks the protocol cannot be skipped (there is no way to
//! find where the next one starts), so, as Redis does, the connection gets
//! the error text after the replies already due and is then closed.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use kvik_protocol::resp::request::{Progress, RequestError, RequestParser};
use kvik_protocol::resp::writer::RespWriter;
use kvik_protocol::respb::handshake::{self, Greeting};
use kvik_protocol::respb::{detect, Decoded, Detected, Frame, RespbDecoder, RespbReplyWriter};
use kvik_protocol::{CommandArgs, ReplySink};

use crate::commands::{execute, Outcome, ReplyTarget, Request};
use crate::session::Session;
use crate::state::ServerState;

/// Smallest free space offered to a read.
const MIN_READ: usize = 16 * 1024;
/// Most the read buffer grows in one step, whatever length a client announces:
/// memory follows the bytes that actually arrive, not the bytes promised.
const MAX_GROWTH: usize = 1024 * 1024;
/// Pending output above which replies are sent before the batch ends, so a
/// long pipeline of large replies does not pile up in memory.
const FLUSH_AT: usize = 1024 * 1024;

/// How long a closing connection waits for the client to stop sending.
const LINGER: Duration = Duration::from_millis(200);
/// Most bytes discarded while lingering.
const LINGER_BYTES: usize = 1024 * 1024;

/// Serve `stream` until the client leaves, breaks the protocol, or the socket fails.
pub fn serve(mut stream: TcpStream, state: &ServerState) {
    // An I/O error only means the client is gone; there is nobody to tell.
    let _ = run(&mut stream, state);
    close_gracefully(&mut stream);
}

/// Close after the last reply without losing it.
///
/// Closing a socket that still has unread input makes the kernel reset the
/// connection, and a reset can destroy the reply (an error text, QUIT's OK)
/// before the client reads it. So: send FIN, then discard what the client
/// still sends, for a bounded time and amount, before closing.
fn close_gracefully(stream: &mut TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    if stream.set_read_timeout(Some(LINGER)).is_err() {
        return;
    }
    let mut sink = [0u8; 16 * 1024];
    let mut discarded = 0;
    while discarded < LINGER_BYTES {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => discarded += n,
        }
    }
}

fn run(stream: &mut TcpStream, state: &ServerState) -> io::Result<()> {
    let mut buf = ReadBuffer::default();
    if buf.fill(stream, 0)? == 0 {
        return Ok(());
    }
    let Some(&first) = buf.pending().first() else {
        return Ok(());
    };
    match detect(first) {
        Detected::Resp => serve_resp(stream, &mut buf, state),
        Detected::Respb => serve_respb(stream, &mut buf, state),
        Detected::Handshake => {
            if greet(stream, &mut buf)? {
                serve_respb(stream, &mut buf, state)
            } else {
                Ok(())
            }
        }
    }
}

/// Bytes read from the socket and not yet consumed by a decoder.
///
/// Requests are decoded in place; consumed bytes are dropped by moving the
/// unconsumed tail to the front before the next read, so a request split
/// across reads always starts at the same offset (0), which is what the
/// resumable decoders need.
#[derive(Default)]
struct ReadBuffer {
    data: Vec<u8>,
    start: usize,
    end: usize,
}

impl ReadBuffer {
    fn pending(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
    }

    /// One read from `stream`, making room for at least `want` bytes (within
    /// [`MAX_GROWTH`]). Returns the bytes read; 0 means the client closed.
    fn fill(&mut self, stream: &mut TcpStream, want: usize) -> io::Result<usize> {
        if self.start > 0 {
            self.data.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let room = want.clamp(MIN_READ, MAX_GROWTH);
        if self.data.len() - self.end < room {
            self.data.resize(self.end + room, 0);
        }
        loop {
            match stream.read(&mut self.data[self.end..]) {
                Ok(n) => {
                    self.end += n;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Replies for a RESP connection, in the session's RESP version.
struct RespTarget<'a> {
    out: &'a mut Vec<u8>,
}

impl ReplyTarget for RespTarget<'_> {
    fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, session: &Session, write: F) {
        let mut w = RespWriter::new(self.out, session.protocol);
        write(&mut w);
    }
}

/// Replies for one RESPB channel, as frames on its mux id.
struct RespbTarget<'a> {
    out: &'a mut Vec<u8>,
    mux: u16,
}

impl ReplyTarget for RespbTarget<'_> {
    fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, _session: &Session, write: F) {
        let mut w = RespbReplyWriter::new(self.out, self.mux);
        write(&mut w);
    }
}

/// Redis's text for a protocol error. Unlike the parser's `Display`, which
/// must produce a `str`, this quotes a non-ASCII byte as the raw byte, as
/// Redis does.
fn protocol_error_text(e: &RequestError) -> Vec<u8> {
    match e {
        RequestError::ExpectedDollar(b) => {
            let mut msg = b"ERR Protocol error: expected '$', got '".to_vec();
            msg.push(*b);
            msg.push(b'\'');
            msg
        }
        other => other.to_string().into_bytes(),
    }
}

fn serve_resp(stream: &mut TcpStream, buf: &mut ReadBuffer, state: &ServerState) -> io::Result<()> {
    let mut parser = RequestParser::default();
    let mut args = CommandArgs::new();
    let mut session = Session::connected(
        state,
        stream.peer_addr().ok(),
        stream.local_addr().ok(),
        stream.as_raw_fd(),
        stream.try_clone().ok(),
    );
    let mut out = Vec::new();
    loop {
        let mut want = 0;
        let mut close = false;
        loop {
            let pending = buf.pending();
            if pending.is_empty() {
                break;
            }
            match parser.parse(pending, &mut args) {
                Ok(Progress::Done(n)) => {
                    let outcome = if args.is_empty() {
                        Outcome::Continue
                    } else {
                        let mut target = RespTarget { out: &mut out };
                        execute(state, Request::new(&args, pending), &mut session, &mut target)
                    };
                    buf.consume(n);
                    if outcome == Outcome::Close {
                        close = true;
                        break;
                    }
                    if out.len() >= FLUSH_AT {
                        stream.write_all(&out)?;
                        out.clear();
                    }
                }
                Ok(Progress::NeedMore { hint }) => {
                    want = hint;
                    break;
                }
                Err(e) => {
                    RespWriter::new(&mut out, session.protocol).error(&protocol_error_text(&e));
                    close = true;
                    break;
                }
            }
        }
        if !out.is_empty() {
            stream.write_all(&out)?;
            out.clear();
        }
        session.flushed(state);
        if close || buf.fill(stream, want)? == 0 {
            return Ok(());
        }
    }
}

/// Answer a RESPB greeting. Returns whether frames follow.
fn greet(stream: &mut TcpStream, buf: &mut ReadBuffer) -> io::Result<bool> {
    loop {
        match handshake::read_greeting(buf.pending()) {
            Greeting::Incomplete => {
                if buf.fill(stream, handshake::LEN)? == 0 {
                    return Ok(false);
                }
            }
            Greeting::Accept { reply } => {
                stream.write_all(&reply)?;
                buf.consume(handshake::LEN);
                return Ok(true);
            }
            Greeting::Reject { reply } => {
                stream.write_all(&reply)?;
                return Ok(false);
            }
        }
    }
}

fn serve_respb(stream: &mut TcpStream, buf: &mut ReadBuffer, state: &ServerState) -> io::Result<()> {
    let mut decoder = RespbDecoder::default();
    let mut args = CommandArgs::new();
    // Every mux id is its own logical client, created on first use.
    let mut channels: HashMap<u16, Session> = HashMap::new();
    let (peer, local, fd) = (stream.peer_addr().ok(), stream.local_addr().ok(), stream.as_raw_fd());
    let new_session = || Session::connected(state, peer, local, fd, None);
    let mut out = Vec::new();
    loop {
        let mut want = 0;
        let mut close = false;
        loop {
            let pending = buf.pending();
            if pending.is_empty() {
                break;
            }
            match decoder.decode(pending, &mut args) {
                Ok(Decoded::Frame { frame, consumed }) => {
                    match frame {
                        Frame::Command { mux } => {
                            let session = channels.entry(mux).or_insert_with(new_session);
                            let mut target = RespbTarget { out: &mut out, mux };
                            // QUIT ends the logical client that sent it, not its neighbours.
                            if execute(state, Request::new(&args, pending), session, &mut target) == Outcome::Close {
                                channels.remove(&mux);
                            }
                        }
                        Frame::MuxCreate { mux, target } => {
                            channels.entry(target).or_insert_with(new_session);
                            RespbReplyWriter::new(&mut out, mux).simple(b"OK");
                        }
                        Frame::MuxClose { mux, target } => {
                            channels.remove(&target);
                            RespbReplyWriter::new(&mut out, mux).simple(b"OK");
                        }
                    }
                    buf.consume(consumed);
                    if out.len() >= FLUSH_AT {
                        stream.write_all(&out)?;
                        out.clear();
                    }
                }
                Ok(Decoded::NeedMore { hint }) => {
                    want = hint;
                    break;
                }
                Err(e) => {
                    RespbReplyWriter::new(&mut out, e.mux.unwrap_or(0)).error(e.to_string().as_bytes());
                    close = true;
                    break;
                }
            }
        }
        if !out.is_empty() {
            stream.write_all(&out)?;
            out.clear();
        }
        if close || buf.fill(stream, want)? == 0 {
            return Ok(());
        }
    }
}
