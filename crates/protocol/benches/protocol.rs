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
use kvik_protocol::resp::request::RequestParser;
use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::respb::{RespbDecoder, RespbReplyWriter};
use kvik_protocol::{CommandArgs, ReplySink};

mod workloads;
use workloads::{decode_respb, parse_peer, parse_resp, resp_buffer, respb_buffer, value, workloads, COMMANDS};

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
        group.bench_function("resp", |b| b.iter(|| parse_resp(&mut parser, &mut args, black_box(&resp))));

        let mut decoder = RespbDecoder::default();
        assert_eq!(decode_respb(&mut decoder, &mut args, &respb), commands.len());
        group.bench_function("respb", |b| b.iter(|| decode_respb(&mut decoder, &mut args, black_box(&respb))));

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
    let kinds: [(&str, WriteReplies); 3] =
        [("bulk50", bulk_replies), ("integer", integer_replies), ("array10", array_replies)];
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
