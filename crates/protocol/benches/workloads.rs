//! The request workloads shared by the criterion benches and the
//! instruction-count example (`examples/parse_cost.rs`): pipelined buffers of
//! GET, SET and a mix, and the loops that parse them.

#![allow(dead_code)]

use std::hint::black_box;

use kvik_protocol::resp::request::{Progress, RequestParser};
use kvik_protocol::respb::{encode_request, Decoded, Encoding, RespbDecoder};
use kvik_protocol::CommandArgs;

/// Commands per workload buffer.
pub const COMMANDS: usize = 1000;

pub type Command = Vec<Vec<u8>>;

pub fn key(i: usize) -> Vec<u8> {
    format!("key:{:06}", i * 7919 % 1_000_000).into_bytes()
}

pub fn value(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| b'a' + ((i + j) % 26) as u8).collect()
}

pub fn cmd(parts: impl IntoIterator<Item = Vec<u8>>) -> Command {
    parts.into_iter().collect()
}

/// The request workloads: a name and its commands.
pub fn workloads() -> Vec<(&'static str, Vec<Command>)> {
    let get = (0..COMMANDS).map(|i| cmd([b"GET".to_vec(), key(i)])).collect();
    let set = |len: usize| (0..COMMANDS).map(|i| cmd([b"SET".to_vec(), key(i), value(i, len)])).collect();
    let mixed = (0..COMMANDS)
        .map(|i| match i % 5 {
            0 => cmd(std::iter::once(b"MGET".to_vec()).chain((0..10).map(|k| key(i + k)))),
            1 => cmd([b"HSET".to_vec(), key(i)]
                .into_iter()
                .chain((0..3).flat_map(|f| [format!("field{f}").into_bytes(), value(i + f, 16)]))),
            2 => cmd([b"LPUSH".to_vec(), key(i)].into_iter().chain((0..5).map(|e| value(i + e, 12)))),
            3 => cmd([b"GET".to_vec(), key(i)]),
            _ => cmd([b"SET".to_vec(), key(i), value(i, 50)]),
        })
        .collect();
    vec![("get", get), ("set50", set(50)), ("set1k", set(1024)), ("mixed", mixed)]
}

pub fn resp_buffer(commands: &[Command]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in commands {
        out.extend_from_slice(format!("*{}\r\n", c.len()).as_bytes());
        for a in c {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
    }
    out
}

/// RESPB frames for `commands`; every workload command has a binary layout,
/// and a passthrough frame here would make the comparison meaningless.
pub fn respb_buffer(commands: &[Command]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in commands {
        let how = encode_request(c, 0, &mut out);
        assert_eq!(how, Encoding::Binary, "{:?} fell back to passthrough", c[0]);
    }
    out
}

pub fn parse_resp(parser: &mut RequestParser, args: &mut CommandArgs, buf: &[u8]) -> usize {
    let (mut pos, mut n) = (0, 0);
    while pos < buf.len() {
        match parser.parse(&buf[pos..], args) {
            Ok(Progress::Done(used)) => {
                black_box(&*args);
                pos += used;
                n += 1;
            }
            other => panic!("workload does not parse: {other:?}"),
        }
    }
    n
}

pub fn decode_respb(decoder: &mut RespbDecoder, args: &mut CommandArgs, buf: &[u8]) -> usize {
    let (mut pos, mut n) = (0, 0);
    while pos < buf.len() {
        match decoder.decode(&buf[pos..], args) {
            Ok(Decoded::Frame { consumed, .. }) => {
                black_box(&*args);
                pos += consumed;
                n += 1;
            }
            other => panic!("workload does not decode: {other:?}"),
        }
    }
    n
}

/// The peer: `redis-protocol`'s zero-copy RESP2 decoder, which returns byte
/// ranges into the buffer (closest to what the two parsers above produce).
pub fn parse_peer(buf: &[u8]) -> usize {
    let (mut pos, mut n) = (0, 0);
    while pos < buf.len() {
        match redis_protocol::resp2::decode::decode_range(&buf[pos..]) {
            Ok(Some((frame, used))) => {
                black_box(frame);
                pos += used;
                n += 1;
            }
            other => panic!("workload does not parse with the peer: {other:?}"),
        }
    }
    n
}
