//! Request parsing and reply writing throughput: RESP and RESPB/1 side by
//! side, with a widely used RESP crate (`redis-protocol`) as a yardstick.
//!
//! Each request workload is one buffer of pipelined commands, as a server
//! finds it after a large read, so the numbers measure the parsers and not
//! the I/O. Results are reported per command (`Throughput::Elements`); the
//! buffer sizes printed at start-up turn them into bytes per second.
//!
//! Run: `cargo bench -p kvik-protocol --bench protocol -- --noplot`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kvik_protocol::resp::request::{Progress, RequestParser};
use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::respb::{encode_request, Decoded, Encoding, RespbDecoder, RespbReplyWriter};
use kvik_protocol::{CommandArgs, ReplySink};

/// Commands per workload buffer.
const COMMANDS: usize = 1000;

type Command = Vec<Vec<u8>>;

fn key(i: usize) -> Vec<u8> {
    format!("key:{:06}", i * 7919 % 1_000_000).into_bytes()
}

fn value(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| b'a' + ((i + j) % 26) as u8).collect()
}

fn cmd(parts: impl IntoIterator<Item = Vec<u8>>) -> Command {
    parts.into_iter().collect()
}

/// The request workloads: a name and its commands.
fn workloads() -> Vec<(&'static str, Vec<Command>)> {
    let get = (0..COMMANDS).map(|i| cmd([b"GET".to_vec(), key(i)])).collect();
    let set = |len: usize| {
        (0..COMMANDS)
            .map(|i| cmd([b"SET".to_vec(), key(i), value(i, len)]))
            .collect()
    };
    let mixed = (0..COMMANDS)
        .map(|i| match i % 5 {
            0 => cmd(std::iter::once(b"MGET".to_vec()).chain((0..10).map(|k| key(i + k)))),
            1 => cmd([b"HSET".to_vec(), key(i)]
                .into_iter()
                .chain((0..3).flat_map(|f| [format!("field{f}").into_bytes(), value(i + f, 16)]))),
            2 => cmd([b"LPUSH".to_vec(), key(i)]
                .into_iter()
                .chain((0..5).map(|e| value(i + e, 12)))),
            3 => cmd([b"GET".to_vec(), key(i)]),
            _ => cmd([b"SET".to_vec(), key(i), value(i, 50)]),
        })
        .collect();
    vec![("get", get), ("set50", set(50)), ("set1k", set(1024)), ("mixed", mixed)]
}

fn resp_buffer(commands: &[Command]) -> Vec<u8> {
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
fn respb_buffer(commands: &[Command]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in commands {
        let how = encode_request(c, 0, &mut out);
        assert_eq!(how, Encoding::Binary, "{:?} fell back to passthrough", c[0]);
    }
    out
}

fn parse_resp(parser: &mut RequestParser, args: &mut CommandArgs, buf: &[u8]) -> usize {
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

fn decode_respb(decoder: &mut RespbDecoder, args: &mut CommandArgs, buf: &[u8]) -> usize {
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
fn parse_peer(buf: &[u8]) -> usize {
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

fn requests(c: &mut Criterion) {
    for (name, commands) in workloads() {
        let resp = resp_buffer(&commands);
        let respb = respb_buffer(&commands);
        println!(
            "workload {name}: {} commands, RESP {} bytes, RESPB {} bytes",
            commands.len(),
            resp.len(),
            respb.len()
        );
        let mut group = c.benchmark_group(format!("request/{name}"));
        group.throughput(Throughput::Elements(commands.len() as u64));

        let mut parser = RequestParser::default();
        let mut args = CommandArgs::new();
        assert_eq!(parse_resp(&mut parser, &mut args, &resp), commands.len());
        group.bench_function("resp", |b| {
            b.iter(|| parse_resp(&mut parser, &mut args, black_box(&resp)))
        });

        let mut decoder = RespbDecoder::default();
        assert_eq!(decode_respb(&mut decoder, &mut args, &respb), commands.len());
        group.bench_function("respb", |b| {
            b.iter(|| decode_respb(&mut decoder, &mut args, black_box(&respb)))
        });

        assert_eq!(parse_peer(&resp), commands.len());
        group.bench_function("redis-protocol", |b| b.iter(|| parse_peer(black_box(&resp))));
        group.finish();
    }
}

/// How one reply workload writes its replies through any sink.
type WriteReplies = fn(&mut dyn ReplySink);

fn bulk_replies(sink: &mut dyn ReplySink) {
    let v = value(1, 50);
    for _ in 0..COMMANDS {
        sink.bulk(&v);
    }
}

fn integer_replies(sink: &mut dyn ReplySink) {
    for i in 0..COMMANDS {
        sink.integer(i as i64 * 1_000_003);
    }
}

/// `COMMANDS` arrays of ten 16-byte bulk strings, like MGET or LRANGE replies.
fn array_replies(sink: &mut dyn ReplySink) {
    let v = value(2, 16);
    for _ in 0..COMMANDS {
        sink.array(10);
        for _ in 0..10 {
            sink.bulk(&v);
        }
    }
}

fn replies(c: &mut Criterion) {
    let kinds: [(&str, WriteReplies); 3] = [
        ("bulk50", bulk_replies),
        ("integer", integer_replies),
        ("array10", array_replies),
    ];
    for (name, write) in kinds {
        let mut group = c.benchmark_group(format!("reply/{name}"));
        group.throughput(Throughput::Elements(COMMANDS as u64));
        let mut out = Vec::new();
        for proto in [Protocol::Resp2, Protocol::Resp3] {
            let id = BenchmarkId::new("resp", format!("{proto:?}").to_lowercase());
            group.bench_function(id, |b| {
                b.iter(|| {
                    out.clear();
                    write(&mut RespWriter::new(&mut out, proto));
                    black_box(out.len())
                })
            });
        }
        group.bench_function("respb", |b| {
            b.iter(|| {
                out.clear();
                write(&mut RespbReplyWriter::new(&mut out, 0));
                black_box(out.len())
            })
        });
        group.finish();
    }
}

criterion_group!(benches, requests, replies);
criterion_main!(benches);
