//! Pipelines over a keyspace large enough for the frame loops to prefetch
//! the keys of commands ahead of the one running (`read_ahead`): the
//! replies are those of a model, over RESP and over RESPB channels that
//! sit in different databases.

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::net::TcpStream;

use common::diff::multibulk;
use common::rng::Rng;
use common::{call, connect, read_until, split_replies, start_kvik, ServerProcess};
use kvik_protocol::resp::reply_parser::ReplyLimits;
use kvik_protocol::respb::{decode_reply, encode_request, handshake};
use kvik_protocol::Value;
use kvik_server::min_keyspace_bytes;

/// Keys written before the pipelines, with 64-byte values: well past the
/// keyspace estimate from which the scan runs on any usual L2 size
/// (`min_keyspace_bytes`).
const FILL_KEYS: usize = 150_000;

fn fill(port: u16) {
    let mut c = connect(port);
    let value = [b'f'; 64];
    for chunk in (0..FILL_KEYS).collect::<Vec<_>>().chunks(10_000) {
        let mut req = Vec::new();
        for i in chunk {
            req.extend(multibulk(&[b"SET", format!("fill:{i}").as_bytes(), &value]));
        }
        c.write_all(&req).expect("send");
        let want = chunk.len() * 5;
        let got = read_until(&mut c, |got| got.len() >= want);
        assert!(got.bytes.iter().all(|&b| b"+OK\r\n".contains(&b)), "fill replies");
    }
    let info = String::from_utf8_lossy(&call(&mut c, &[b"INFO", b"memory"])).into_owned();
    let used: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory_dataset:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory_dataset");
    assert!(used >= min_keyspace_bytes(), "the keyspace estimate ({used} bytes) is too small for the scan to run");
}

/// One random command on a small set of keys, and its reply under `model`
/// (the current database's keys), as a RESP2 reply.
fn step(rng: &mut Rng, model: &mut HashMap<Vec<u8>, Vec<u8>>) -> (Vec<Vec<u8>>, Vec<u8>) {
    let key = if rng.chance(20) {
        format!("fill:{}", rng.below(FILL_KEYS)).into_bytes()
    } else {
        format!("k:{}", rng.below(40)).into_bytes()
    };
    let bulk = |v: Option<&Vec<u8>>| match v {
        Some(v) => [format!("${}\r\n", v.len()).into_bytes(), v.clone(), b"\r\n".to_vec()].concat(),
        None => b"$-1\r\n".to_vec(),
    };
    match rng.below(6) {
        0 | 1 => {
            let value = format!("v{}", rng.below(1000)).into_bytes();
            model.insert(key.clone(), value.clone());
            (vec![b"SET".to_vec(), key, value], b"+OK\r\n".to_vec())
        }
        2 => {
            let existed = model.remove(&key).is_some();
            (vec![b"DEL".to_vec(), key], format!(":{}\r\n", u8::from(existed)).into_bytes())
        }
        3 => {
            let n = model.contains_key(&key);
            (vec![b"EXISTS".to_vec(), key], format!(":{}\r\n", u8::from(n)).into_bytes())
        }
        4 => (vec![b"PING".to_vec()], b"+PONG\r\n".to_vec()),
        _ => {
            let reply = bulk(model.get(&key));
            (vec![b"GET".to_vec(), key], reply)
        }
    }
}

/// The model of database `db` after the fill: the fill keys live in database 0.
fn model_of(db: usize) -> HashMap<Vec<u8>, Vec<u8>> {
    let mut m = HashMap::new();
    if db == 0 {
        for i in 0..FILL_KEYS {
            m.insert(format!("fill:{i}").into_bytes(), vec![b'f'; 64]);
        }
    }
    m
}

fn server() -> ServerProcess {
    let kvik = start_kvik();
    fill(kvik.port);
    kvik
}

#[test]
fn resp_pipelines_over_a_large_keyspace_answer_as_the_model() {
    let kvik = server();
    let mut rng = Rng::new(0x5eed_0001);
    let mut models = [model_of(0), model_of(1)];
    let mut c = connect(kvik.port);
    let mut db = 0;
    for round in 0..20 {
        let mut req = Vec::new();
        let mut expected = Vec::new();
        for _ in 0..500 {
            if rng.chance(2) {
                db = 1 - db;
                req.extend(multibulk(&[b"SELECT", db.to_string().as_bytes()]));
                expected.push(b"+OK\r\n".to_vec());
            }
            let (args, reply) = step(&mut rng, &mut models[db]);
            let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            req.extend(multibulk(&args));
            expected.push(reply);
        }
        send_and_compare(&mut c, &req, &expected, round);
    }
}

/// Send the pipeline `req` and check its replies, one by one, against
/// `expected` (round `round` of a test).
fn send_and_compare(c: &mut TcpStream, req: &[u8], expected: &[Vec<u8>], round: usize) {
    c.write_all(req).expect("send");
    let want = expected.concat();
    let got = read_until(c, |got| got.len() >= want.len());
    let (got, want) = (split_replies(&got.bytes), split_replies(&want));
    assert_eq!(got.len(), want.len(), "round {round}");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.escape_ascii().to_string(), w.escape_ascii().to_string(), "round {round}, reply {i}");
    }
}

/// The RESP2 reply `resp` as the value a RESPB reply frame decodes to.
fn value_of(resp: &[u8]) -> Value {
    match resp {
        b"+OK\r\n" => Value::simple("OK"),
        b"+PONG\r\n" => Value::simple("PONG"),
        b"$-1\r\n" => Value::Null,
        [b':', rest @ ..] => Value::Integer(String::from_utf8_lossy(&rest[..rest.len() - 2]).parse().unwrap_or(-1)),
        [b'$', ..] => {
            let at = resp.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
            Value::bulk(&resp[at..resp.len() - 2])
        }
        other => panic!("no value for {}", other.escape_ascii()),
    }
}

#[test]
fn respb_channels_in_different_databases_answer_as_their_models() {
    let kvik = server();
    let mut c: TcpStream = connect(kvik.port);
    c.write_all(&handshake::client_hello(1)).expect("greeting");
    read_until(&mut c, |got| got.len() >= handshake::LEN);
    let mut rng = Rng::new(0x5eed_0002);
    // Channel 1 stays in database 0, channel 2 in database 1.
    let mut models = [model_of(0), model_of(1)];
    let mut req = Vec::new();
    encode_request(&[&b"SELECT"[..], b"1"], 2, &mut req);
    let mut expected: Vec<(u16, Value)> = vec![(2, Value::simple("OK"))];
    for round in 0..10 {
        for _ in 0..800 {
            let mux = 1 + u16::from(rng.chance(50));
            let (args, reply) = step(&mut rng, &mut models[usize::from(mux - 1)]);
            let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            encode_request(&args, mux, &mut req);
            expected.push((mux, value_of(&reply)));
        }
        c.write_all(&req).expect("send");
        req.clear();
        let count = |mut buf: &[u8]| {
            let mut n = 0;
            while let Ok(Some(f)) = decode_reply(buf, &ReplyLimits::DEFAULT) {
                buf = &buf[f.consumed..];
                n += 1;
            }
            n
        };
        let got = read_until(&mut c, |got| count(got) >= expected.len());
        let mut buf = &got.bytes[..];
        for (i, (mux, value)) in expected.drain(..).enumerate() {
            let frame = decode_reply(buf, &ReplyLimits::DEFAULT).expect("a frame").expect("whole");
            buf = &buf[frame.consumed..];
            assert_eq!((frame.mux, &frame.value), (mux, &value), "round {round}, reply {i}");
        }
        assert!(buf.is_empty());
    }
}

/// Pipelined commands on the fields of one large hash and the members of
/// one large set, whose lookups the scan prefetches (`MemberStep`), and on
/// a string key that a hash command finds of the wrong type: the replies
/// are those of a model.
#[test]
fn pipelines_on_a_large_hash_and_set_answer_as_the_model() {
    let kvik = server();
    let mut c = connect(kvik.port);
    let mut model: HashMap<Vec<u8>, i64> = HashMap::new();
    let mut set_model: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
    let mut req = Vec::new();
    for i in 0..3000 {
        req.extend(multibulk(&[b"HSET", b"big", format!("field:{i}").as_bytes(), b"0"]));
        model.insert(format!("field:{i}").into_bytes(), 0);
        req.extend(multibulk(&[b"SADD", b"bigset", format!("field:{i}").as_bytes()]));
        set_model.insert(format!("field:{i}").into_bytes());
    }
    req.extend(multibulk(&[b"SET", b"str", b"x"]));
    c.write_all(&req).expect("send");
    read_until(&mut c, |got| got.len() >= 3000 * 8 + 5);
    assert_eq!(call(&mut c, &[b"OBJECT", b"ENCODING", b"big"]), b"$9\r\nhashtable\r\n");
    assert_eq!(call(&mut c, &[b"OBJECT", b"ENCODING", b"bigset"]), b"$9\r\nhashtable\r\n");
    let wrong = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n".to_vec();
    let mut rng = Rng::new(0x5eed_0003);
    for round in 0..20 {
        let mut req = Vec::new();
        let mut expected = Vec::new();
        for _ in 0..500 {
            let field = format!("field:{}", rng.below(4000)).into_bytes();
            let (cmd, reply): (Vec<&[u8]>, Vec<u8>) = match rng.below(9) {
                0 => {
                    let new = model.insert(field.clone(), 7).is_none();
                    (vec![b"HSET", b"big", &field, b"7"], format!(":{}\r\n", u8::from(new)).into_bytes())
                }
                1 => {
                    let n = model.entry(field.clone()).or_insert(0);
                    *n += 2;
                    (vec![b"HINCRBY", b"big", &field, b"2"], format!(":{n}\r\n").into_bytes())
                }
                2 => {
                    let gone = model.remove(&field).is_some();
                    (vec![b"HDEL", b"big", &field], format!(":{}\r\n", u8::from(gone)).into_bytes())
                }
                3 => (vec![b"HGET", b"str", &field], wrong.clone()),
                4 => {
                    let new = set_model.insert(field.clone());
                    (vec![b"SADD", b"bigset", &field], format!(":{}\r\n", u8::from(new)).into_bytes())
                }
                5 => {
                    let gone = set_model.remove(&field);
                    (vec![b"SREM", b"bigset", &field], format!(":{}\r\n", u8::from(gone)).into_bytes())
                }
                6 => {
                    let is = set_model.contains(&field);
                    (vec![b"SISMEMBER", b"bigset", &field], format!(":{}\r\n", u8::from(is)).into_bytes())
                }
                _ => {
                    let reply = match model.get(&field) {
                        Some(n) => format!("${}\r\n{n}\r\n", n.to_string().len()).into_bytes(),
                        None => b"$-1\r\n".to_vec(),
                    };
                    (vec![b"HGET", b"big", &field], reply)
                }
            };
            req.extend(multibulk(&cmd));
            expected.push(reply);
        }
        send_and_compare(&mut c, &req, &expected, round);
    }
    let len = call(&mut c, &[b"HLEN", b"big"]);
    assert_eq!(len, format!(":{}\r\n", model.len()).into_bytes());
    let card = call(&mut c, &[b"SCARD", b"bigset"]);
    assert_eq!(card, format!(":{}\r\n", set_model.len()).into_bytes());
}
