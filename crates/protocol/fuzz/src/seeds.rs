//! Starting inputs for each target, built from the codecs themselves so they
//! stay valid as the formats evolve. `examples/seeds.rs` writes them into the
//! corpus folders; the tests replay them through the checks.

use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::respb::encode::write_passthrough;
use kvik_protocol::respb::layouts::LAYOUTS;
use kvik_protocol::respb::{control_frame, encode_request, RespbReplyWriter, MUX_CREATE};
use kvik_protocol::Value;

/// Commands covering the common shapes: plain keys, values, options, numbers,
/// floats, key lists, field/value lists and subcommands.
fn commands() -> Vec<Vec<Vec<u8>>> {
    let lines: &[&str] = &[
        "PING",
        "GET key",
        "SET key value",
        "SET key value EX 10 NX",
        "SET key value PX 1500 XX GET",
        "SET key value KEEPTTL",
        "INCRBY counter -42",
        "INCRBYFLOAT f 1.5",
        "MGET a b c d",
        "MSET a 1 b 2",
        "HSET h f1 v1 f2 v2",
        "HGETALL h",
        "LPUSH list a b c",
        "LRANGE list 0 -1",
        "ZADD z 1 a 2.5 b",
        "ZADD z NX CH 3 c",
        "ZRANGE z 0 -1 WITHSCORES",
        "EXPIRE key 100 NX",
        "DEL a b c",
        "CLIENT SETNAME conn",
        "CONFIG GET maxmemory",
        "XADD s * f v",
        "SCAN 0 MATCH k* COUNT 10",
        "UNKNOWNCMD x y",
    ];
    lines.iter().map(|l| l.split(' ').map(|w| w.as_bytes().to_vec()).collect()).collect()
}

fn multibulk(args: &[Vec<u8>], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Seeds for `resp_request`: a 4-byte header (options, chunk sizes) then a stream.
pub fn resp_request() -> Vec<Vec<u8>> {
    let headers: [&[u8]; 4] = [&[0, 255, 255, 255], &[0, 0, 1, 2], &[1, 4, 7, 30], &[2, 3, 5, 9]];
    let mut pipeline = Vec::new();
    for c in commands() {
        multibulk(&c, &mut pipeline);
    }
    let streams: Vec<Vec<u8>> = vec![
        pipeline,
        b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n".to_vec(),
        b"PING\r\nSET k \"a b\\x41\" 'c'\nGET k\r\n".to_vec(),
        b"*0\r\n*-1\r\n\r\n*1\r\n$4\r\nPING\r\n".to_vec(),
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nshort\r\n".to_vec(),
        b"*1\r\n+PING\r\n".to_vec(),
        b"*2\r\n$-1\r\n".to_vec(),
    ];
    let mut out = Vec::new();
    for (i, s) in streams.iter().enumerate() {
        let mut seed = headers[i % headers.len()].to_vec();
        seed.extend_from_slice(s);
        out.push(seed);
    }
    out
}

/// Seeds for `respb_request`: encoded commands (alone and pipelined), a
/// control frame, a passthrough frame, and a bare header for every opcode.
pub fn respb_request() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut pipeline = Vec::new();
    for (i, c) in commands().iter().enumerate() {
        let mut one = Vec::new();
        encode_request(c, i as u16, &mut one);
        pipeline.extend_from_slice(&one);
        out.push(one);
    }
    out.push(pipeline);
    let mut control = Vec::new();
    control_frame(MUX_CREATE, 0, 5, &mut control);
    out.push(control);
    let mut pass = Vec::new();
    write_passthrough(&[&b"GET"[..], b"k"], 3, &mut pass);
    out.push(pass);
    for layout in LAYOUTS {
        let mut frame = Vec::new();
        if layout.module {
            frame.extend_from_slice(&0xF000u16.to_be_bytes());
            frame.extend_from_slice(&[0, 1]);
            frame.extend_from_slice(&layout.opcode.to_be_bytes());
        } else {
            frame.extend_from_slice(&(layout.opcode as u16).to_be_bytes());
            frame.extend_from_slice(&[0, 1]);
        }
        // A short key followed by a small 4-byte-length value fits many layouts.
        frame.extend_from_slice(&[0, 1, b'k', 0, 0, 0, 1, b'v', 0, 0]);
        out.push(frame);
    }
    out
}

/// Reply values covering every variant, nested a little.
fn values() -> Vec<Value> {
    let scalars = vec![
        Value::simple("OK"),
        Value::error("ERR bad"),
        Value::Integer(-7),
        Value::Integer(i64::MAX),
        Value::bulk("hello"),
        Value::bulk(""),
        Value::Null,
        Value::NullArray,
        Value::Double(3.25),
        Value::Double(f64::INFINITY),
        Value::Double(f64::NAN),
        Value::Boolean(true),
        Value::BigNumber(b"-12345678901234567890".to_vec()),
        Value::Verbatim { format: *b"txt", text: b"some text".to_vec() },
    ];
    let mut all = scalars.clone();
    all.push(Value::Array(scalars.clone()));
    all.push(Value::Set(vec![Value::bulk("a"), Value::Integer(1)]));
    all.push(Value::Push(vec![Value::bulk("message"), Value::bulk("ch"), Value::bulk("hi")]));
    all.push(Value::Map(vec![
        (Value::bulk("k"), Value::Array(vec![Value::Integer(1), Value::Null])),
        (Value::simple("s"), Value::Double(-0.5)),
    ]));
    all.push(Value::Attribute {
        attrs: vec![(Value::bulk("ttl"), Value::Integer(3))],
        value: Box::new(Value::bulk("v")),
    });
    all.push(Value::Array(vec![Value::Array(vec![Value::Array(vec![])])]));
    all
}

/// Seeds for `resp_reply`: every value in RESP3 and RESP2, plus RESP2-only and odd forms.
pub fn resp_reply() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for v in values() {
        for proto in [Protocol::Resp3, Protocol::Resp2] {
            let mut bytes = Vec::new();
            v.write_to(&mut RespWriter::new(&mut bytes, proto));
            out.push(bytes);
        }
    }
    for raw in [
        &b"$-1\r\n"[..],
        b"*-1\r\n",
        b"!10\r\nERR detail\r\n",
        b"=8\r\nmkd:# hi\r\n",
        b",1e300\r\n",
        b",-inf\r\n",
        b"+line\nbreak\r\n",
    ] {
        out.push(raw.to_vec());
    }
    out
}

/// Seeds for `respb_reply`: every value written as RESPB frames on a few channels.
pub fn respb_reply() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (i, v) in values().iter().enumerate() {
        let mut bytes = Vec::new();
        v.write_to(&mut RespbReplyWriter::new(&mut bytes, (i % 3) as u16));
        out.push(bytes);
    }
    out
}

/// Seeds of the target called `name` (empty for an unknown name).
pub fn for_target(name: &str) -> Vec<Vec<u8>> {
    match name {
        "resp_request" => resp_request(),
        "respb_request" => respb_request(),
        "resp_reply" => resp_reply(),
        "respb_reply" => respb_reply(),
        _ => Vec::new(),
    }
}
