//! The shared test vectors in `spec/vectors/`: built here, checked in, and
//! verified here against the Rust codec (the Python and Go suites read the
//! same files).
//!
//! `KVIK_WRITE_VECTORS=1 cargo test -p kvik-protocol --test vectors` rewrites
//! the files; without it the test fails when they differ from what the code
//! produces, and then checks every vector read from the files.

use kvik_protocol::resp::request::{Progress, RequestParser};
use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::respb::float_text::write_canonical_f64;
use kvik_protocol::respb::layout::Field;
use kvik_protocol::respb::layouts::LAYOUTS;
use kvik_protocol::respb::reply::decode_reply;
use kvik_protocol::respb::sample::{frame_with_bits, random_frame, Rng, Style};
use kvik_protocol::respb::{
    control_frame, detect, encode_request, handshake, Decoded, Detected, Encoding, Frame, RespbDecoder,
    RespbReplyWriter, MUX_CLOSE, MUX_CREATE,
};
use kvik_protocol::{CommandArgs, Value};
use serde_json::{json, Value as Json};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn arg_json(a: &[u8]) -> Json {
    match std::str::from_utf8(a) {
        Ok(s) => json!(s),
        Err(_) => json!({ "hex": hex(a) }),
    }
}

fn json_arg(j: &Json) -> Vec<u8> {
    match j {
        Json::String(s) => s.as_bytes().to_vec(),
        other => unhex(other["hex"].as_str().unwrap()),
    }
}

fn args_json(args: &[Vec<u8>]) -> Json {
    Json::Array(args.iter().map(|a| arg_json(a)).collect())
}

fn decode_one(frame: &[u8]) -> Result<(Frame, Vec<Vec<u8>>), String> {
    let mut args = CommandArgs::new();
    match RespbDecoder::default().decode(frame, &mut args) {
        Ok(Decoded::Frame { frame: f, consumed }) => {
            assert_eq!(consumed, frame.len(), "vector frame has trailing bytes");
            Ok((f, args.to_vec(frame)))
        }
        Ok(Decoded::NeedMore { .. }) => Err("incomplete".into()),
        Err(e) => Err(error_name(&e.kind).into()),
    }
}

fn error_name(k: &kvik_protocol::respb::DecodeErrorKind) -> &'static str {
    use kvik_protocol::respb::DecodeErrorKind::*;
    match k {
        UnknownOpcode(_) => "unknown_opcode",
        UnknownModuleCommand(_) => "unknown_module_command",
        LengthOverLimit(_) => "length_over_limit",
        BadChoice(_) => "bad_choice",
        BadBool(_) => "bad_bool",
        BadMask(_) => "bad_mask",
        BadFlags(_) => "bad_flags",
        NotANumber => "not_a_number",
        BadPassthrough(_) => "bad_passthrough",
        Resp(_) => "resp_error",
        UnauthenticatedFrame => "unauthenticated_frame",
    }
}

fn words(s: &str) -> Vec<Vec<u8>> {
    s.split(' ').map(|w| w.as_bytes().to_vec()).collect()
}

/// Commands written the way clients write them, covering flags, options in
/// other orders and cases, paired optional fields and passthrough fallbacks.
const HAND_REQUESTS: &[&str] = &[
    "GET key",
    "SET key value",
    "SET key value NX",
    "SET key value XX GET",
    "SET key value EX 60",
    "set key value px 1500 nx",
    "SET key value KEEPTTL",
    "SET key value PXAT 1700000000000 GET XX",
    "SET key value EX 1.5",
    "SET key value EX 10 PX 10",
    "GETEX key PERSIST",
    "GETEX key EXAT 1700000000",
    "INCRBYFLOAT key 0.1",
    "INCRBYFLOAT key 1.50",
    "MGET a b c",
    "MSET a 1 b 2",
    "LCS a b IDX MINMATCHLEN 4 WITHMATCHLEN",
    "LPUSH list a b c",
    "LPOP list",
    "LPOP list 3",
    "LPOP list -1",
    "LINSERT list BEFORE pivot x",
    "LMOVE src dst LEFT RIGHT",
    "LMPOP 2 a b LEFT COUNT 10",
    "LPOS list x RANK -1 MAXLEN 100",
    "BLPOP a b 0",
    "BLPOP a 0.25",
    "BLMPOP 1.5 1 a RIGHT",
    "SADD s a b",
    "SRANDMEMBER s -5",
    "SSCAN s 0",
    "SSCAN s 42 COUNT 10 MATCH user:*",
    "SINTERCARD 2 a b LIMIT 5",
    "ZADD z 1 a 2.5 b",
    "ZADD z NX CH 1 a",
    "ZADD z GT INCR -inf a",
    "ZADD z 1.0 a",
    "ZRANGE z 0 -1",
    "ZRANGE z 0 -1 WITHSCORES",
    "ZRANGE z (1 +inf BYSCORE LIMIT 0 10",
    "ZRANGE z +inf (1 BYSCORE REV WITHSCORES",
    "ZRANGE z [a (c BYLEX",
    "ZRANGEBYSCORE z -inf (5 WITHSCORES LIMIT 1 2",
    "ZREVRANGEBYSCORE z 10 0",
    "ZRANGEBYLEX z [a [z LIMIT 0 5",
    "ZREVRANGE z 0 1 WITHSCORES",
    "ZCOUNT z 1 2",
    "ZCOUNT z (1 2",
    "ZRANDMEMBER z -3 WITHSCORES",
    "ZUNIONSTORE out 2 a b WEIGHTS 2 0.5 AGGREGATE MIN",
    "ZINTER 2 a b WITHSCORES",
    "ZSCAN z 0 NOSCORES",
    "ZMPOP 1 z MAX COUNT 2",
    "ZRANGESTORE dst src 0 10 BYSCORE",
    "HSET h f1 v1 f2 v2",
    "HINCRBYFLOAT h f 2.5",
    "HSCAN h 0 MATCH f* NOVALUES",
    "HRANDFIELD h -2 WITHVALUES",
    "HEXPIRE h 100 NX FIELDS 2 a b",
    "HGETEX h PX 500 FIELDS 1 a",
    "HSETEX h FNX EX 10 FIELDS 1 a b",
    "SETBIT key 7 1",
    "SETBIT key 7 2",
    "BITCOUNT key",
    "BITCOUNT key 0 -1 BIT",
    "BITPOS key 1 2",
    "BITOP XOR dst a b",
    "BITFIELD key INCRBY u8 #1 5 OVERFLOW FAIL",
    "PFADD hll a b c",
    "GEOADD g XX 13.361389 38.115556 Palermo",
    "GEODIST g a b km",
    "GEORADIUS g 15 37 200 km WITHCOORD COUNT 5 ASC",
    "GEORADIUS g 15 37 200 km STORE dst",
    "GEOSEARCH g FROMLONLAT 15 37 BYRADIUS 200 km ASC",
    "XADD s * field value",
    "XADD s 1-1 a 1 b 2",
    "XADD s MAXLEN ~ 1000 * f v",
    "XRANGE s - + COUNT 10",
    "XREAD BLOCK 0 STREAMS s $",
    "XREAD COUNT 1 STREAMS a b 0-0 0-0",
    "XREADGROUP GROUP g alice COUNT 5 NOACK STREAMS s >",
    "XTRIM s MAXLEN = 10",
    "XTRIM s MINID ~ 1000 LIMIT 50",
    "XTRIM s MINID 1-0",
    "XPENDING s g",
    "XPENDING s g - + 10",
    "XPENDING s g IDLE 1000 - + 10 bob",
    "XCLAIM s g bob 3600000 1-0 2-0 JUSTID FORCE",
    "XAUTOCLAIM s g bob 0 0-0 COUNT 25 JUSTID",
    "XINFO STREAM s FULL COUNT 5",
    "XGROUP CREATE s g $ MKSTREAM",
    "XGROUP HELP",
    "XSETID s 5-0 ENTRIESADDED 10 MAXDELETEDID 3-0",
    "PUBLISH channel hello",
    "SUBSCRIBE a b",
    "PUBSUB NUMSUB a b",
    "MULTI",
    "EXEC",
    "WATCH a b",
    "EVAL return 1 0",
    "EVAL return 2 1 k a1 a2",
    "EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0",
    "FCALL fn 1 key arg",
    "SCRIPT LOAD return",
    "FUNCTION LIST",
    "DEL a b c",
    "EXPIRE key 10",
    "EXPIRE key 10 GT",
    "PEXPIREAT key 1700000000000 XX",
    "SCAN 0",
    "SCAN 17 MATCH user:* COUNT 1000 TYPE hash",
    "SCAN 18446744073709551615",
    "RESTORE key 0 payload REPLACE ABSTTL IDLETIME 5",
    "MIGRATE host 6379 key 0 5000 COPY REPLACE AUTH2 user pass",
    "MOVE key 1",
    "COPY a b DB 2 REPLACE",
    "SORT list BY weight_* GET # LIMIT 0 10 DESC ALPHA",
    "OBJECT ENCODING key",
    "OBJECT HELP",
    "WAIT 1 100",
    "PING",
    "PING hello",
    "ECHO hello",
    "AUTH secret",
    "AUTH user secret",
    "SELECT 3",
    "SELECT -1",
    "HELLO 3",
    "HELLO 3 AUTH default secret SETNAME app",
    "HELLO",
    "CLIENT SETNAME app",
    "CLIENT LIST TYPE normal",
    "CLUSTER SLOTS",
    "FLUSHALL",
    "FLUSHDB ASYNC",
    "SHUTDOWN NOSAVE NOW",
    "INFO",
    "INFO server clients",
    "CONFIG GET maxmemory*",
    "COMMAND",
    "COMMAND DOCS get",
    "SLOWLOG GET 10",
    "SLOWLOG RESET",
    "FAILOVER TO host 6380 FORCE TIMEOUT 100",
    "SWAPDB 0 1",
    "REPLICAOF NO ONE",
    "DEBUG SLEEP 0",
    "MEMORY USAGE key SAMPLES 5",
    "JSON.SET doc $ {\"a\":1} NX",
    "JSON.GET doc $.a $.b",
    "JSON.MGET a b $",
    "JSON.DEL doc",
    "JSON.ARRPOP doc $.list -1",
    "JSON.NUMINCRBY doc $.n 2.5",
    "BF.RESERVE bf 0.01 1000 NONSCALING",
    "BF.INSERT bf CAPACITY 100 NOCREATE ITEMS a b",
    "FT.SEARCH idx hello LIMIT 0 10",
    "FT._LIST",
    "NOSUCHCOMMAND a b",
];

fn build_requests() -> Json {
    let mut out = Vec::new();
    for (n, text) in HAND_REQUESTS.iter().enumerate() {
        let args = words(text);
        let mux = n as u16;
        let mut frame = Vec::new();
        let enc = encode_request(&args, mux, &mut frame);
        let (_, decoded) = decode_one(&frame).unwrap();
        out.push(json!({
            "name": text,
            "mux": mux,
            "args": args_json(&args),
            "encoding": if enc == Encoding::Binary { "binary" } else { "passthrough" },
            "frame": hex(&frame),
            "decoded": args_json(&decoded),
        }));
    }
    let mut rng = Rng(0x5EED_0001);
    for layout in LAYOUTS {
        for i in 0..2 {
            let mux = rng.below(4) as u16;
            let frame = random_frame(layout, mux, &mut rng, Style::Readable);
            let (_, decoded) = decode_one(&frame).unwrap();
            out.push(json!({
                "name": format!("{} sample {}", layout.name, i + 1),
                "mux": mux,
                "args": args_json(&decoded),
                "encoding": "binary",
                "frame": hex(&frame),
                "decoded": args_json(&decoded),
            }));
        }
    }
    // One frame per flag bit and per presence-mask bit of every layout, so each
    // option appears alone at least once.
    let mut rng = Rng(0x5EED_0002);
    for layout in LAYOUTS {
        let width = |pred: fn(&Field) -> usize| layout.fields.iter().map(pred).max().unwrap_or(0);
        let n_flags = width(|f| if let Field::Flags(b) = f { b.len() } else { 0 });
        let n_mask = width(|f| if let Field::Mask(o) = f { o.len() } else { 0 });
        let cases = (0..n_flags)
            .map(|b| (Some(1u8 << b), Some(0u8), format!("flag bit {b}")))
            .chain((0..n_mask).map(|b| (Some(0u8), Some(1u8 << b), format!("mask bit {b}"))));
        for (flags, mask, what) in cases {
            let mux = rng.below(4) as u16;
            let frame = frame_with_bits(layout, mux, &mut rng, Style::Readable, flags, mask);
            let (_, decoded) = decode_one(&frame).unwrap();
            out.push(json!({
                "name": format!("{} {what}", layout.name),
                "mux": mux,
                "args": args_json(&decoded),
                "encoding": "binary",
                "frame": hex(&frame),
                "decoded": args_json(&decoded),
            }));
        }
    }
    json!({
        "description": "RESPB/1 request frames. Encoding `args` on channel `mux` gives `frame`; decoding `frame` gives `decoded` (the canonical form: option tokens upper-cased and in layout order).",
        "requests": out,
    })
}

/// Frames a decoder must accept although no encoder produces them.
fn build_decode_only() -> Json {
    let mut v = Vec::new();
    let mut push = |name: &str, frame: Vec<u8>| {
        let (f, args) = decode_one(&frame).unwrap();
        let mux = match f {
            Frame::Command { mux } => mux,
            _ => unreachable!(),
        };
        v.push(json!({ "name": name, "frame": hex(&frame), "mux": mux, "decoded": args_json(&args) }));
    };
    let mut pt = vec![0xFF, 0xFF, 0x00, 0x02];
    pt.extend_from_slice(&12u32.to_be_bytes());
    pt.extend_from_slice(b"PING hello\r\n");
    push("passthrough with an inline command", pt);
    // SET with both NX and XX: carried faithfully, the server answers the syntax error.
    push("SET with NX and XX bits", vec![0x00, 0x01, 0, 0, 0, 1, b'k', 0, 0, 0, 1, b'v', 0b11]);
    // BITCOUNT with only the second optional field present.
    let mut bc = vec![0x01, 0x42, 0, 0, 0, 1, b'k', 0b10];
    bc.extend_from_slice(&5i64.to_be_bytes());
    bc.push(0);
    push("BITCOUNT with end but no start", bc);
    let mut xr = vec![0x01, 0xC4, 0, 0, 0];
    xr.extend_from_slice(&0u16.to_be_bytes());
    push("XREAD with no streams", xr);
    json!({ "description": "Frames that decode, though an encoder would not produce them.", "frames": v })
}

fn build_malformed() -> Json {
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("unknown core opcode", vec![0x7F, 0x00, 0x00, 0x01], "unknown_opcode"),
        ("unknown module command", vec![0xF0, 0x00, 0x00, 0x01, 0x00, 0x09, 0x00, 0x00], "unknown_module_command"),
        (
            "SET value length of 4 GiB - 1",
            vec![0x00, 0x01, 0, 0, 0, 1, b'k', 0xFF, 0xFF, 0xFF, 0xFF],
            "length_over_limit",
        ),
        ("LINSERT choice byte out of range", vec![0x00, 0x4A, 0, 0, 0, 1, b'k', 7], "bad_choice"),
        (
            "ZREVRANGE boolean byte 2",
            {
                let mut f = vec![0x00, 0xC8, 0, 0, 0, 1, b'z'];
                f.extend_from_slice(&[0; 16]);
                f.push(2);
                f
            },
            "bad_bool",
        ),
        (
            "ZRANGEBYLEX offset without count",
            vec![0x00, 0xC7, 0, 0, 0, 1, b'z', 0, 1, b'a', 0, 1, b'b', 0b01],
            "bad_mask",
        ),
        ("PING mask with an undefined bit", vec![0x03, 0x00, 0, 0, 0b10], "bad_mask"),
        ("GETEX undefined flag bit", vec![0x00, 0x06, 0, 0, 0, 1, b'k', 0b0010_0000], "bad_flags"),
        (
            "INCRBYFLOAT NaN",
            {
                let mut f = vec![0x00, 0x0B, 0, 0, 0, 1, b'k'];
                f.extend_from_slice(&f64::NAN.to_bits().to_be_bytes());
                f
            },
            "not_a_number",
        ),
        (
            "passthrough with two commands",
            {
                let t = b"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n";
                let mut f = vec![0xFF, 0xFF, 0, 0];
                f.extend_from_slice(&(t.len() as u32).to_be_bytes());
                f.extend_from_slice(t);
                f
            },
            "bad_passthrough",
        ),
        (
            "passthrough ending inside a command",
            {
                let t = b"*2\r\n$4\r\nECHO\r\n";
                let mut f = vec![0xFF, 0xFF, 0, 0];
                f.extend_from_slice(&(t.len() as u32).to_be_bytes());
                f.extend_from_slice(t);
                f
            },
            "bad_passthrough",
        ),
        (
            "passthrough with a protocol error",
            {
                let t = b"*x\r\n";
                let mut f = vec![0xFF, 0xFF, 0, 0];
                f.extend_from_slice(&(t.len() as u32).to_be_bytes());
                f.extend_from_slice(t);
                f
            },
            "resp_error",
        ),
        ("truncated GET", vec![0x00, 0x00, 0, 0, 0, 5, b'k', b'e'], "incomplete"),
        ("header only", vec![0x00, 0x00, 0x00], "incomplete"),
    ];
    let v: Vec<Json> = cases
        .into_iter()
        .map(|(name, frame, error)| {
            assert_eq!(decode_one(&frame).map(|_| ()).unwrap_err(), error, "{name}");
            json!({ "name": name, "frame": hex(&frame), "error": error })
        })
        .collect();
    json!({
        "description": "Frames a decoder must reject. `incomplete` means more bytes are needed; every other error closes the connection after an error reply on the frame's channel.",
        "frames": v,
    })
}

/// Bytes as hex, or for large encodings a digest: length, the first 64 bytes
/// and the FNV-1a 64-bit hash of the whole (simple to recompute in any language).
fn bytes_json(b: &[u8]) -> Json {
    if b.len() <= 4096 {
        return json!(hex(b));
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    json!({ "len": b.len(), "prefix": hex(&b[..64]), "fnv1a64": format!("{h:016x}") })
}

/// A large aggregate of one repeated element is written as `{"repeat": n, "item": v}`,
/// a long string of one repeated byte as `{"repeat": n, "byte": "x"}`.
fn repeated_items(items: &[Value]) -> Option<Json> {
    (items.len() > 1000 && items.iter().all(|i| *i == items[0]))
        .then(|| json!({ "repeat": items.len(), "item": value_json(&items[0]) }))
}

fn repeated_bytes(b: &[u8]) -> Option<Json> {
    (b.len() > 1000 && b.iter().all(|x| *x == b[0]))
        .then(|| json!({ "repeat": b.len(), "byte": String::from_utf8_lossy(&b[..1]) }))
}

fn value_json(v: &Value) -> Json {
    let pairs =
        |p: &[(Value, Value)]| Json::Array(p.iter().map(|(k, v)| json!([value_json(k), value_json(v)])).collect());
    let list =
        |items: &[Value]| repeated_items(items).unwrap_or_else(|| Json::Array(items.iter().map(value_json).collect()));
    let text = |b: &[u8]| repeated_bytes(b).unwrap_or_else(|| arg_json(b));
    match v {
        Value::Simple(s) => json!({ "simple": text(s) }),
        Value::Error(s) => json!({ "error": text(s) }),
        Value::Integer(n) => json!({ "integer": n.to_string() }),
        Value::Bulk(b) => json!({ "bulk": text(b) }),
        Value::Null => json!({ "null": "bulk" }),
        Value::NullArray => json!({ "null": "array" }),
        Value::Array(items) => json!({ "array": list(items) }),
        Value::Set(items) => json!({ "set": list(items) }),
        Value::Push(items) => json!({ "push": list(items) }),
        Value::Map(p) => json!({ "map": pairs(p) }),
        Value::Double(d) => {
            let mut t = Vec::new();
            if d.is_nan() {
                t.extend_from_slice(b"nan");
            } else {
                write_canonical_f64(&mut t, *d);
            }
            json!({ "double": String::from_utf8(t).unwrap() })
        }
        Value::Boolean(b) => json!({ "boolean": b }),
        Value::BigNumber(n) => json!({ "big_number": text(n) }),
        Value::Verbatim { format, text: t } => {
            json!({ "verbatim": { "format": String::from_utf8_lossy(format), "text": text(t) } })
        }
        Value::Attribute { attrs, value } => {
            json!({ "attribute": { "attrs": pairs(attrs), "value": value_json(value) } })
        }
    }
}

fn sample_replies() -> Vec<(&'static str, Value)> {
    let b = Value::bulk;
    vec![
        ("OK", Value::simple("OK")),
        ("status", Value::simple("QUEUED")),
        ("error", Value::error("ERR unknown command 'foo', with args beginning with: ")),
        ("wrongtype", Value::error("WRONGTYPE Operation against a key holding the wrong kind of value")),
        ("integer zero", Value::Integer(0)),
        ("integer negative", Value::Integer(-42)),
        ("integer min", Value::Integer(i64::MIN)),
        ("bulk", b("hello")),
        ("empty bulk", b("")),
        ("binary bulk", Value::Bulk(vec![0, 255, b'\r', b'\n'])),
        ("null bulk", Value::Null),
        ("null array", Value::NullArray),
        ("boolean true", Value::Boolean(true)),
        ("boolean false", Value::Boolean(false)),
        ("double", Value::Double(1.5)),
        ("double 1.1", Value::Double(1.1)),
        ("double inf", Value::Double(f64::INFINITY)),
        ("double -inf", Value::Double(f64::NEG_INFINITY)),
        ("big number", Value::BigNumber(b"3492890328409238509324850943850943825024385".to_vec())),
        ("verbatim", Value::Verbatim { format: *b"txt", text: b"Some string".to_vec() }),
        ("empty array", Value::Array(vec![])),
        ("array of bulks", Value::Array(vec![b("a"), b("b"), Value::Null])),
        ("map (HGETALL)", Value::Map(vec![(b("f1"), b("v1")), (b("f2"), b("v2"))])),
        ("set (SMEMBERS)", Value::Set(vec![b("x"), b("y")])),
        ("push (message)", Value::Push(vec![b("message"), b("news"), b("hello")])),
        (
            "nested",
            Value::Array(vec![
                Value::Integer(1),
                Value::Array(vec![b("x"), Value::Map(vec![(b("k"), Value::Double(-0.5))])]),
                Value::Set(vec![]),
                Value::error("ERR inner"),
            ]),
        ),
        (
            "attribute (passthrough in RESPB)",
            Value::Attribute {
                attrs: vec![(b("key-popularity"), Value::Array(vec![b("a"), Value::Double(0.1923)]))],
                value: Box::new(Value::Array(vec![Value::Integer(2039123), Value::Integer(9543892)])),
            },
        ),
        ("status over 65535 bytes (passthrough in RESPB)", Value::Simple(vec![b'x'; 65536])),
        ("array of 65536 elements (passthrough in RESPB)", Value::Array(vec![Value::Integer(7); 65536])),
        (
            "oversize array nested after a header (passthrough in RESPB)",
            Value::Array(vec![b("head"), Value::Array(vec![Value::Integer(1); 70000])]),
        ),
    ]
}

fn build_replies() -> Json {
    let mut v = Vec::new();
    for (i, (name, value)) in sample_replies().into_iter().enumerate() {
        let mux = (i % 3) as u16;
        let mut respb = Vec::new();
        value.write_to(&mut RespbReplyWriter::new(&mut respb, mux));
        let frame = decode_reply(&respb, &Default::default()).unwrap().unwrap();
        let mut resp2 = Vec::new();
        value.write_to(&mut RespWriter::new(&mut resp2, Protocol::Resp2));
        let mut resp3 = Vec::new();
        value.write_to(&mut RespWriter::new(&mut resp3, Protocol::Resp3));
        v.push(json!({
            "name": name,
            "mux": mux,
            "value": value_json(&value),
            "respb": bytes_json(&respb),
            "respb_decoded": value_json(&frame.value),
            "resp3": bytes_json(&resp3),
            "resp2": bytes_json(&resp2),
        }));
    }
    json!({
        "description": "Replies: `value` written as RESPB on channel `mux` gives `respb`, which decodes to `respb_decoded` (RESPB has one null and carries big numbers and verbatim strings as bulk strings); `resp3` and `resp2` are the RESP encodings Redis 7.0 sends for the same value. Integers are decimal strings; doubles are canonical text. Large values use `{\"repeat\": n, \"item\": v}` / `{\"repeat\": n, \"byte\": b}`; large encodings are given as `{len, prefix (first 64 bytes), fnv1a64 of all bytes}`.",
        "replies": v,
    })
}

fn build_resp_requests() -> Json {
    let cases: &[&[u8]] = &[
        b"*1\r\n$4\r\nPING\r\n",
        b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n",
        b"*2\r\n$3\r\nGET\r\n$0\r\n\r\n",
        b"PING\r\n",
        b"SET key \"hello world\"\r\n",
        b"SET k \"\\x41\\n\\t\"\n",
        b"SET k 'it''s'\r\n",
        b"SET k 'a\\'b'\r\n",
        b"  \r\n",
        b"*0\r\n",
        b"*-1\r\n",
        b"*x\r\n",
        b"*1\r\n$x\r\n",
        b"*1\r\n$-1\r\n",
        b"*1\r\n+PING\r\n",
        b"*1\r\n$4\r\nPINGxx",
        b"SET k \"unterminated\r\n",
        b"SET k \"a\"b\r\n",
        b"*2\r\n$3\r\nGET\r\n$3\r\nke",
    ];
    let v: Vec<Json> = cases
        .iter()
        .map(|input| {
            let mut p = RequestParser::default();
            let mut args = CommandArgs::new();
            let result = match p.parse(input, &mut args) {
                Ok(Progress::Done(n)) => json!({ "consumed": n, "args": args_json(&args.to_vec(input)) }),
                Ok(Progress::NeedMore { .. }) => json!({ "incomplete": true }),
                Err(e) => json!({ "error": e.to_string() }),
            };
            json!({ "input": hex(input), "text": String::from_utf8_lossy(input), "result": result })
        })
        .collect();
    json!({
        "description": "RESP requests (multibulk and inline) with the arguments a server parses from them, or Redis's error reply text. An empty `args` list is an empty command the server skips.",
        "requests": v,
    })
}

fn build_misc() -> Json {
    let floats = [
        0.0,
        -0.0,
        1.0,
        1.5,
        -2.25,
        0.1,
        1e21,
        1e-7,
        123456789012345680.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        5e-324,
        f64::MAX,
    ];
    let float_text: Vec<Json> = floats
        .iter()
        .map(|x| {
            let mut t = Vec::new();
            write_canonical_f64(&mut t, *x);
            json!({ "bits": format!("{:016x}", x.to_bits()), "text": String::from_utf8(t).unwrap() })
        })
        .collect();
    let detection: Vec<Json> = [0x00u8, 0x01, 0x0A, 0x0D, 0x1F, 0x20, b'*', b'P', 0xD3, 0xF0, 0xFE, 0xFF]
        .iter()
        .map(|&b| {
            let d = match detect(b) {
                Detected::Handshake => "handshake",
                Detected::Respb => "respb",
                Detected::Resp => "resp",
            };
            json!({ "first_byte": format!("{b:02x}"), "protocol": d })
        })
        .collect();
    let greeting = |g: &[u8]| match handshake::read_greeting(g) {
        handshake::Greeting::Incomplete => json!({ "greeting": hex(g), "outcome": "incomplete" }),
        handshake::Greeting::Accept { reply } => {
            json!({ "greeting": hex(g), "outcome": "accept", "reply": hex(&reply) })
        }
        handshake::Greeting::Reject { reply } => {
            json!({ "greeting": hex(g), "outcome": "reject", "reply": hex(&reply) })
        }
    };
    let mut create = Vec::new();
    control_frame(MUX_CREATE, 0, 7, &mut create);
    let mut close = Vec::new();
    control_frame(MUX_CLOSE, 3, 7, &mut close);
    json!({
        "description": "Canonical float text for float64 fields, first-byte detection, handshakes and mux control frames.",
        "float_text": float_text,
        "detection": detection,
        "handshake": [
            greeting(&[0xD3, 0xC1, 1, 0]),
            greeting(&[0xD3, 0xC1, 2, 0]),
            greeting(&[0xD3, 0xC1, 1]),
            greeting(&[0xD3, 0xC1, 1, 1]),
        ],
        "control": [
            { "name": "MUX_CREATE 7 on channel 0", "frame": hex(&create), "kind": "mux_create", "mux": 0, "target": 7 },
            { "name": "MUX_CLOSE 7 on channel 3", "frame": hex(&close), "kind": "mux_close", "mux": 3, "target": 7 },
        ],
    })
}

fn vector_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors")
}

fn check_or_write(name: &str, value: &Json) -> Json {
    let path = vector_dir().join(name);
    let text = serde_json::to_string_pretty(value).unwrap() + "\n";
    if std::env::var_os("KVIK_WRITE_VECTORS").is_some() {
        std::fs::create_dir_all(vector_dir()).unwrap();
        std::fs::write(&path, &text).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(on_disk == text, "{name} is stale: run KVIK_WRITE_VECTORS=1 cargo test -p kvik-protocol --test vectors");
    serde_json::from_str(&on_disk).unwrap()
}

#[test]
fn request_vectors() {
    let file = check_or_write("requests.json", &build_requests());
    let mut seen = std::collections::BTreeSet::new();
    for v in file["requests"].as_array().unwrap() {
        let args: Vec<Vec<u8>> = v["args"].as_array().unwrap().iter().map(json_arg).collect();
        let decoded: Vec<Vec<u8>> = v["decoded"].as_array().unwrap().iter().map(json_arg).collect();
        let frame = unhex(v["frame"].as_str().unwrap());
        let mux = v["mux"].as_u64().unwrap() as u16;
        let mut out = Vec::new();
        let enc = encode_request(&args, mux, &mut out);
        assert_eq!(out, frame, "{}", v["name"]);
        assert_eq!(enc == Encoding::Binary, v["encoding"] == "binary", "{}", v["name"]);
        let (f, got) = decode_one(&frame).unwrap();
        assert_eq!(f, Frame::Command { mux });
        assert_eq!(got, decoded, "{}", v["name"]);
        if enc == Encoding::Binary {
            seen.insert(u16::from_be_bytes([frame[0], frame[1]]) as u32);
            if frame[0] == 0xF0 {
                seen.insert(u32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]) | 0xF000_0000);
            }
        }
    }
    for l in LAYOUTS {
        let key = if l.module { l.opcode | 0xF000_0000 } else { l.opcode };
        assert!(seen.contains(&key), "no vector for {}", l.name);
    }
}

#[test]
fn decode_only_and_malformed_vectors() {
    let ok = check_or_write("decode_only.json", &build_decode_only());
    for v in ok["frames"].as_array().unwrap() {
        let (f, args) = decode_one(&unhex(v["frame"].as_str().unwrap())).unwrap();
        assert_eq!(f, Frame::Command { mux: v["mux"].as_u64().unwrap() as u16 });
        let want: Vec<Vec<u8>> = v["decoded"].as_array().unwrap().iter().map(json_arg).collect();
        assert_eq!(args, want, "{}", v["name"]);
    }
    let bad = check_or_write("malformed.json", &build_malformed());
    for v in bad["frames"].as_array().unwrap() {
        let err = decode_one(&unhex(v["frame"].as_str().unwrap())).map(|_| ()).unwrap_err();
        assert_eq!(err, v["error"].as_str().unwrap(), "{}", v["name"]);
    }
}

#[test]
fn reply_vectors() {
    let file = check_or_write("replies.json", &build_replies());
    let samples = sample_replies();
    for (v, (_, value)) in file["replies"].as_array().unwrap().iter().zip(&samples) {
        let mux = v["mux"].as_u64().unwrap() as u16;
        let mut respb = Vec::new();
        value.write_to(&mut RespbReplyWriter::new(&mut respb, mux));
        assert_eq!(bytes_json(&respb), v["respb"], "{}", v["name"]);
        let frame = decode_reply(&respb, &Default::default()).unwrap().unwrap();
        assert_eq!((frame.mux, frame.consumed), (mux, respb.len()));
        assert_eq!(value_json(&frame.value), v["respb_decoded"], "{}", v["name"]);
        for (proto, key) in [(Protocol::Resp2, "resp2"), (Protocol::Resp3, "resp3")] {
            let mut out = Vec::new();
            value.write_to(&mut RespWriter::new(&mut out, proto));
            assert_eq!(bytes_json(&out), v[key], "{} {key}", v["name"]);
        }
    }
    assert_eq!(file["replies"].as_array().unwrap().len(), samples.len());
}

#[test]
fn resp_request_and_misc_vectors() {
    let file = check_or_write("resp_requests.json", &build_resp_requests());
    assert!(file["requests"].as_array().unwrap().len() > 10);
    let misc = check_or_write("misc.json", &build_misc());
    for f in misc["float_text"].as_array().unwrap() {
        let x = f64::from_bits(u64::from_str_radix(f["bits"].as_str().unwrap(), 16).unwrap());
        assert_eq!(
            kvik_protocol::respb::float_text::parse_canonical_f64(f["text"].as_str().unwrap().as_bytes())
                .map(f64::to_bits),
            Some(x.to_bits())
        );
    }
}

/// The per-opcode layout table in `spec/respb.md` is generated from the layouts.
#[test]
fn spec_layout_table_is_current() {
    use kvik_protocol::respb::layout::describe;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/respb.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- BEGIN GENERATED LAYOUTS -->\n", "<!-- END GENERATED LAYOUTS -->");
    let start = doc.find(begin).expect("begin marker") + begin.len();
    let stop = doc.find(end).expect("end marker");
    let mut table = String::from("| Opcode | Command | Payload |\n|---|---|---|\n");
    for l in LAYOUTS {
        let op = if l.module { format!("F000 + {:08X}", l.opcode) } else { format!("{:04X}", l.opcode) };
        let payload = describe(l.fields).replace('|', "\\|");
        table.push_str(&format!("| `{op}` | {} | `{payload}` |\n", l.name));
    }
    if std::env::var_os("KVIK_WRITE_VECTORS").is_some() {
        let updated = format!("{}{}{}", &doc[..start], table, &doc[stop..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert!(
        doc[start..stop] == table,
        "spec/respb.md layout table is stale: run KVIK_WRITE_VECTORS=1 cargo test -p kvik-protocol --test vectors"
    );
}
