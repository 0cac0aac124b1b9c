//! RESPB from the client's side for the tests: the greeting, request
//! frames on a channel, control frames, and reading reply frames back.

use std::io::Write;
use std::net::TcpStream;

use super::{connect, read_until, ServerProcess};
use kvik_protocol::resp::reply_parser::ReplyLimits;
use kvik_protocol::respb::handshake;
use kvik_protocol::respb::{control_frame, decode_reply, encode_request, ReplyFrame};

/// A connection to `server` that has sent the RESPB greeting and read the
/// server's.
pub fn greeted(server: &ServerProcess) -> TcpStream {
    let mut stream = connect(server.port);
    stream.write_all(&handshake::client_hello(1)).expect("send greeting");
    let answer = read_until(&mut stream, |got| got.len() >= handshake::LEN);
    assert_eq!(answer.bytes, [0xD3, 0xC1, 0x01, 0x00]);
    stream
}

pub fn send(stream: &mut TcpStream, args: &[&[u8]], mux: u16) {
    let mut frame = Vec::new();
    encode_request(args, mux, &mut frame);
    stream.write_all(&frame).expect("send frame");
}

pub fn control(stream: &mut TcpStream, opcode: u16, mux: u16, target: u16) {
    let mut frame = Vec::new();
    control_frame(opcode, mux, target, &mut frame);
    stream.write_all(&frame).expect("send control frame");
}

/// Number of complete frames at the start of `buf`.
pub fn frames_in(mut buf: &[u8]) -> usize {
    let mut n = 0;
    while let Ok(Some(f)) = decode_reply(buf, &ReplyLimits::DEFAULT) {
        buf = &buf[f.consumed..];
        n += 1;
    }
    n
}

/// Read exactly `n` reply frames.
pub fn frames(stream: &mut TcpStream, n: usize) -> Vec<ReplyFrame> {
    let answer = read_until(stream, |got| frames_in(got) >= n);
    let mut buf = &answer.bytes[..];
    let mut out = Vec::new();
    while let Ok(Some(f)) = decode_reply(buf, &ReplyLimits::DEFAULT) {
        buf = &buf[f.consumed..];
        out.push(f);
    }
    assert_eq!(out.len(), n, "exactly {n} frames expected");
    assert!(buf.is_empty(), "no bytes after the frames");
    out
}

pub fn one(stream: &mut TcpStream) -> ReplyFrame {
    frames(stream, 1).remove(0)
}

pub fn request(stream: &mut TcpStream, args: &[&[u8]], mux: u16) -> ReplyFrame {
    send(stream, args, mux);
    one(stream)
}
