//! RESPB mux channels as independent logical clients: blocked channels do
//! not hold back the others, MUX_CLOSE and CLIENT KILL cancel waits, the
//! channel limit, per-channel state, pushes on the subscribing channel,
//! RESP3 reply shapes, the `HELLO 3 PROTO RESPB` upgrade, `CLIENT LIST`'s
//! `mux=` field, and RESP3 vs RESPB giving the same values for random
//! command sequences.

mod common;
mod random;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::respb::{control, frames, frames_in, greeted, one, request, send};
use common::{call, connect, exchange, read_until, start_kvik, start_kvik_with, ServerProcess};
use kvik_protocol::resp::reply_parser::{parse_reply, ReplyLimits};
use kvik_protocol::respb::{decode_reply, encode_request, MUX_CLOSE, MUX_CREATE};
use kvik_protocol::Value;

/// Nothing arrives on `stream` for a moment.
fn silent(stream: &mut TcpStream) {
    stream.set_read_timeout(Some(Duration::from_millis(150))).expect("timeout");
    let mut byte = [0u8; 1];
    let got = std::io::Read::read(stream, &mut byte);
    assert!(got.is_err(), "unexpected bytes: {got:?} {byte:?}");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
}

fn info_field(port: u16, field: &str) -> String {
    let mut c = connect(port);
    let text = String::from_utf8_lossy(&call(&mut c, &[b"INFO", b"clients"])).into_owned();
    let prefix = format!("{field}:");
    text.lines().find_map(|l| l.strip_prefix(&prefix)).unwrap_or_default().trim().to_string()
}

fn wait_blocked(port: u16, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while info_field(port, "blocked_clients") != n.to_string() {
        assert!(Instant::now() < deadline, "blocked_clients never became {n}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn bulk_text(v: &Value) -> String {
    match v {
        Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

#[test]
fn blocked_channel_does_not_hold_back_a_hundred_others() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    send(&mut s, &[b"BLPOP", b"list", b"0"], 1000);
    wait_blocked(kvik.port, 1);
    for mux in 0..100u16 {
        let (k, v) = (format!("key{mux}"), format!("value{mux}"));
        send(&mut s, &[b"SET", k.as_bytes(), v.as_bytes()], mux);
        send(&mut s, &[b"GET", k.as_bytes()], mux);
    }
    let got = frames(&mut s, 200);
    for pair in got.chunks(2) {
        let mux = pair[0].mux;
        assert_eq!(pair[1].mux, mux);
        assert_eq!(pair[0].value, Value::simple("OK"));
        assert_eq!(pair[1].value, Value::bulk(format!("value{mux}")));
    }
    // Served by a push from another channel of the same connection.
    send(&mut s, &[b"RPUSH", b"list", b"a"], 7);
    let mut got = frames(&mut s, 2);
    got.sort_by_key(|f| f.mux);
    assert_eq!((got[0].mux, &got[0].value), (7, &Value::Integer(1)));
    assert_eq!((got[1].mux, &got[1].value), (1000, &Value::Array(vec![Value::bulk("list"), Value::bulk("a")])));
    // And by a push from another connection.
    send(&mut s, &[b"BLPOP", b"list", b"0"], 1000);
    wait_blocked(kvik.port, 1);
    assert_eq!(request(&mut s, &[b"PING"], 3).value, Value::simple("PONG"));
    let mut other = connect(kvik.port);
    assert_eq!(call(&mut other, &[b"RPUSH", b"list", b"b"]), b":1\r\n");
    let served = one(&mut s);
    assert_eq!((served.mux, served.value), (1000, Value::Array(vec![Value::bulk("list"), Value::bulk("b")])));
}

#[test]
fn frames_behind_a_blocked_command_run_in_order_after_it() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    send(&mut s, &[b"BLPOP", b"q", b"0"], 5);
    send(&mut s, &[b"PING"], 5);
    send(&mut s, &[b"ECHO", b"after"], 5);
    send(&mut s, &[b"PING", b"other"], 6);
    let first = one(&mut s);
    assert_eq!((first.mux, first.value), (6, Value::bulk("other")));
    silent(&mut s);
    let mut other = connect(kvik.port);
    call(&mut other, &[b"RPUSH", b"q", b"x"]);
    let got = frames(&mut s, 3);
    let seen: Vec<(u16, Value)> = got.into_iter().map(|f| (f.mux, f.value)).collect();
    assert_eq!(
        seen,
        vec![
            (5, Value::Array(vec![Value::bulk("q"), Value::bulk("x")])),
            (5, Value::simple("PONG")),
            (5, Value::bulk("after")),
        ]
    );
    // A timeout answers with the one null, and the queue runs after it.
    send(&mut s, &[b"BRPOP", b"nothing", b"0.05"], 8);
    send(&mut s, &[b"ECHO", b"late"], 8);
    let got = frames(&mut s, 2);
    assert_eq!((got[0].mux, &got[0].value), (8, &Value::Null));
    assert_eq!((got[1].mux, &got[1].value), (8, &Value::bulk("late")));
}

#[test]
fn xread_block_and_bzpopmin_on_channels() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    send(&mut s, &[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"st", b"$"], 2);
    send(&mut s, &[b"BZPOPMIN", b"zs", b"0"], 4);
    wait_blocked(kvik.port, 2);
    assert_eq!(request(&mut s, &[b"SET", b"a", b"1"], 3).value, Value::simple("OK"));
    assert_eq!(request(&mut s, &[b"GET", b"a"], 3).value, Value::bulk("1"));
    let mut other = connect(kvik.port);
    call(&mut other, &[b"XADD", b"st", b"1-1", b"f", b"v"]);
    let got = one(&mut s);
    assert_eq!(got.mux, 2);
    let entry = Value::Array(vec![Value::bulk("1-1"), Value::Array(vec![Value::bulk("f"), Value::bulk("v")])]);
    assert_eq!(got.value, Value::Map(vec![(Value::bulk("st"), Value::Array(vec![entry]))]), "XREAD is a map in RESP3");
    call(&mut other, &[b"ZADD", b"zs", b"2.5", b"m"]);
    let got = one(&mut s);
    assert_eq!((got.mux, got.value), (4, Value::Array(vec![Value::bulk("zs"), Value::bulk("m"), Value::Double(2.5)])));
}

#[test]
fn mux_close_cancels_a_blocked_command_and_resets_the_channel() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    assert_eq!(request(&mut s, &[b"SELECT", b"3"], 9).value, Value::simple("OK"));
    send(&mut s, &[b"BLPOP", b"k", b"0"], 9);
    send(&mut s, &[b"PING"], 9);
    wait_blocked(kvik.port, 1);
    control(&mut s, MUX_CLOSE, 9, 9);
    let ok = one(&mut s);
    assert_eq!((ok.mux, ok.value), (9, Value::simple("OK")), "no reply for the cancelled command or its queue");
    wait_blocked(kvik.port, 0);
    let mut other = connect(kvik.port);
    call(&mut other, &[b"SELECT", b"3"]);
    call(&mut other, &[b"RPUSH", b"k", b"x"]);
    assert_eq!(call(&mut other, &[b"LLEN", b"k"]), b":1\r\n", "nothing was popped for the closed channel");
    silent(&mut s);
    // The id is reused with fresh state.
    let info = request(&mut s, &[b"CLIENT", b"INFO"], 9);
    assert!(bulk_text(&info.value).contains(" db=0 "), "fresh channel is on db 0: {:?}", info.value);
    // MULTI is discarded by a close.
    assert_eq!(request(&mut s, &[b"MULTI"], 9).value, Value::simple("OK"));
    control(&mut s, MUX_CLOSE, 1, 9);
    assert_eq!(one(&mut s).value, Value::simple("OK"));
    assert_eq!(request(&mut s, &[b"EXEC"], 9).value, Value::error("ERR EXEC without MULTI"));
    // MUX_CREATE of an open channel also starts it afresh, and a blocked one is cancelled.
    send(&mut s, &[b"BLPOP", b"k2", b"0"], 10);
    wait_blocked(kvik.port, 1);
    control(&mut s, MUX_CREATE, 11, 10);
    assert_eq!(one(&mut s).mux, 11);
    wait_blocked(kvik.port, 0);
    assert_eq!(request(&mut s, &[b"PING"], 10).value, Value::simple("PONG"));
}

/// Channel `mux`'s `CLIENT ID`.
fn client_id(stream: &mut TcpStream, mux: u16) -> i64 {
    match request(stream, &[b"CLIENT", b"ID"], mux).value {
        Value::Integer(id) => id,
        other => panic!("CLIENT ID: {other:?}"),
    }
}

#[test]
fn client_kill_of_a_blocked_channel_ends_only_that_channel() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    let id = client_id(&mut s, 11);
    send(&mut s, &[b"BLPOP", b"k", b"0"], 11);
    wait_blocked(kvik.port, 1);
    let mut other = connect(kvik.port);
    assert_eq!(call(&mut other, &[b"CLIENT", b"KILL", b"ID", id.to_string().as_bytes()]), b":1\r\n");
    wait_blocked(kvik.port, 0);
    assert_eq!(request(&mut s, &[b"PING"], 12).value, Value::simple("PONG"), "the other channels stay");
    // The killed id's mux starts again as a new client.
    let again = request(&mut s, &[b"CLIENT", b"ID"], 11).value;
    assert_ne!(again, Value::Integer(id));
}

/// The ids in `CLIENT LIST`.
fn listed_ids(port: u16) -> Vec<i64> {
    let mut c = connect(port);
    let text = String::from_utf8_lossy(&call(&mut c, &[b"CLIENT", b"LIST"])).into_owned();
    text.lines().filter_map(|l| l.strip_prefix("id=")?.split(' ').next()?.parse().ok()).collect()
}

#[test]
fn client_kill_of_an_idle_channel_ends_only_that_channel() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    let id = client_id(&mut s, 21);
    assert_eq!(request(&mut s, &[b"SET", b"k", b"v"], 22).value, Value::simple("OK"));
    // The connection now waits for input with no channel busy.
    let mut other = connect(kvik.port);
    assert_eq!(call(&mut other, &[b"CLIENT", b"KILL", b"ID", id.to_string().as_bytes()]), b":1\r\n");
    let deadline = Instant::now() + Duration::from_secs(5);
    while listed_ids(kvik.port).contains(&id) {
        assert!(Instant::now() < deadline, "the killed channel stayed in CLIENT LIST");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(request(&mut s, &[b"GET", b"k"], 22).value, Value::Bulk(b"v".to_vec()), "the other channels stay");
    let again = request(&mut s, &[b"CLIENT", b"ID"], 21).value;
    assert_ne!(again, Value::Integer(id), "the killed mux starts again as a new client");
}

#[test]
fn idle_timeout_closes_an_idle_respb_connection_but_not_a_blocked_one() {
    let kvik = start_kvik_with(&["--timeout", "1"]);
    let mut idle = greeted(&kvik);
    assert_eq!(request(&mut idle, &[b"PING"], 1).value, Value::simple("PONG"));
    let mut blocked = greeted(&kvik);
    send(&mut blocked, &[b"BLPOP", b"list", b"0"], 5);
    wait_blocked(kvik.port, 1);
    let started = Instant::now();
    idle.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut byte = [0u8; 1];
    let got = std::io::Read::read(&mut idle, &mut byte);
    assert!(matches!(got, Ok(0)), "an idle connection is closed, got {got:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "closed within the timeout's reach");
    // As in Redis, the timeout spares a client blocked in a command.
    let mut other = connect(kvik.port);
    assert_eq!(call(&mut other, &[b"RPUSH", b"list", b"x"]), b":1\r\n");
    match one(&mut blocked).value {
        Value::Array(items) => assert_eq!(items, vec![Value::Bulk(b"list".to_vec()), Value::Bulk(b"x".to_vec())]),
        other => panic!("BLPOP: {other:?}"),
    }
}

#[test]
fn channel_limit_answers_excess_channels_with_an_error() {
    let kvik = start_kvik();
    let mut admin = connect(kvik.port);
    assert_eq!(call(&mut admin, &[b"CONFIG", b"SET", b"respb-max-channels", b"3"]), b"+OK\r\n");
    assert_eq!(
        call(&mut admin, &[b"CONFIG", b"GET", b"respb-max-channels"]),
        b"*2\r\n$18\r\nrespb-max-channels\r\n$1\r\n3\r\n"
    );
    let mut s = greeted(&kvik);
    for mux in 1..=3 {
        assert_eq!(request(&mut s, &[b"PING"], mux).value, Value::simple("PONG"));
    }
    let refused = request(&mut s, &[b"SET", b"x", b"1"], 4);
    assert_eq!(refused.mux, 4);
    assert!(matches!(&refused.value, Value::Error(e) if e.starts_with(b"ERR too many mux channels")));
    control(&mut s, MUX_CREATE, 1, 5);
    assert!(matches!(one(&mut s).value, Value::Error(_)));
    assert_eq!(call(&mut admin, &[b"EXISTS", b"x"]), b":0\r\n", "the refused frame ran nothing");
    control(&mut s, MUX_CLOSE, 1, 3);
    assert_eq!(one(&mut s).value, Value::simple("OK"));
    assert_eq!(request(&mut s, &[b"PING"], 4).value, Value::simple("PONG"));
    assert_eq!(info_field(kvik.port, "connected_clients"), "5", "2 RESP clients (one asking) and 3 channels");
}

#[test]
fn channels_keep_their_own_db_auth_multi_and_subscriptions() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    request(&mut s, &[b"SELECT", b"2"], 1);
    request(&mut s, &[b"SET", b"x", b"one"], 1);
    assert_eq!(request(&mut s, &[b"GET", b"x"], 2).value, Value::Null);
    assert_eq!(request(&mut s, &[b"GET", b"x"], 1).value, Value::bulk("one"));
    assert_eq!(request(&mut s, &[b"MULTI"], 1).value, Value::simple("OK"));
    assert_eq!(request(&mut s, &[b"SET", b"y", b"1"], 1).value, Value::simple("QUEUED"));
    assert_eq!(request(&mut s, &[b"SET", b"y", b"2"], 2).value, Value::simple("OK"));
    assert_eq!(request(&mut s, &[b"DISCARD"], 1).value, Value::simple("OK"));
    let sub = request(&mut s, &[b"SUBSCRIBE", b"news"], 3);
    assert_eq!(sub.mux, 3);
    assert!(matches!(sub.value, Value::Push(_)), "confirmations are pushes: {:?}", sub.value);
    assert_eq!(request(&mut s, &[b"PING"], 2).value, Value::simple("PONG"));
    // A password set later: existing channels stay in, new ones must AUTH.
    let mut admin = connect(kvik.port);
    call(&mut admin, &[b"CONFIG", b"SET", b"requirepass", b"pw"]);
    assert_eq!(request(&mut s, &[b"PING"], 2).value, Value::simple("PONG"));
    assert!(matches!(request(&mut s, &[b"PING"], 20).value, Value::Error(e) if e.starts_with(b"NOAUTH")));
    assert_eq!(request(&mut s, &[b"AUTH", b"pw"], 20).value, Value::simple("OK"));
    assert_eq!(request(&mut s, &[b"PING"], 20).value, Value::simple("PONG"));
    assert!(matches!(request(&mut s, &[b"PING"], 21).value, Value::Error(e) if e.starts_with(b"NOAUTH")));
}

fn push(items: &[&str]) -> Value {
    Value::Push(items.iter().map(Value::bulk).collect())
}

#[test]
fn pubsub_messages_arrive_as_pushes_on_the_subscribing_channel() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    request(&mut s, &[b"SUBSCRIBE", b"ch"], 4);
    request(&mut s, &[b"PSUBSCRIBE", b"p*"], 5);
    request(&mut s, &[b"SSUBSCRIBE", b"sh"], 6);
    let mut other = connect(kvik.port);
    assert_eq!(call(&mut other, &[b"PUBLISH", b"ch", b"hello"]), b":1\r\n");
    let got = one(&mut s);
    assert_eq!((got.mux, got.value), (4, push(&["message", "ch", "hello"])));
    call(&mut other, &[b"PUBLISH", b"pq", b"hi"]);
    let got = one(&mut s);
    assert_eq!((got.mux, got.value), (5, push(&["pmessage", "p*", "pq", "hi"])));
    call(&mut other, &[b"SPUBLISH", b"sh", b"s"]);
    let got = one(&mut s);
    assert_eq!((got.mux, got.value), (6, push(&["smessage", "sh", "s"])));
    // A message published on the same connection follows the PUBLISH reply.
    send(&mut s, &[b"PUBLISH", b"ch", b"self"], 7);
    let got = frames(&mut s, 2);
    assert_eq!((got[0].mux, &got[0].value), (7, &Value::Integer(1)));
    assert_eq!((got[1].mux, &got[1].value), (4, &push(&["message", "ch", "self"])));
    // A closed channel's subscriptions are gone.
    control(&mut s, MUX_CLOSE, 4, 4);
    one(&mut s);
    assert_eq!(call(&mut other, &[b"PUBLISH", b"ch", b"gone"]), b":0\r\n");
}

#[test]
fn keyspace_notifications_and_invalidations_reach_their_channel() {
    let kvik = start_kvik();
    let mut admin = connect(kvik.port);
    call(&mut admin, &[b"CONFIG", b"SET", b"notify-keyspace-events", b"KA"]);
    let mut s = greeted(&kvik);
    request(&mut s, &[b"SUBSCRIBE", b"__keyspace@0__:watched"], 8);
    call(&mut admin, &[b"SET", b"watched", b"1"]);
    let got = one(&mut s);
    assert_eq!((got.mux, got.value), (8, push(&["message", "__keyspace@0__:watched", "set"])));
    assert_eq!(request(&mut s, &[b"CLIENT", b"TRACKING", b"ON"], 9).value, Value::simple("OK"));
    assert_eq!(request(&mut s, &[b"GET", b"cached"], 9).value, Value::Null);
    call(&mut admin, &[b"SET", b"cached", b"v"]);
    let got = one(&mut s);
    assert_eq!(
        (got.mux, got.value),
        (9, Value::Push(vec![Value::bulk("invalidate"), Value::Array(vec![Value::bulk("cached")])]))
    );
}

#[test]
fn replies_have_resp3_shapes() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    request(&mut s, &[b"HSET", b"h", b"f", b"v"], 1);
    assert_eq!(request(&mut s, &[b"HGETALL", b"h"], 1).value, Value::Map(vec![(Value::bulk("f"), Value::bulk("v"))]));
    request(&mut s, &[b"SADD", b"s", b"m"], 1);
    assert_eq!(request(&mut s, &[b"SMEMBERS", b"s"], 1).value, Value::Set(vec![Value::bulk("m")]));
    request(&mut s, &[b"ZADD", b"z", b"1.5", b"a", b"2", b"b"], 1);
    let pair = |m: &str, d: f64| Value::Array(vec![Value::bulk(m), Value::Double(d)]);
    assert_eq!(
        request(&mut s, &[b"ZRANGE", b"z", b"0", b"-1", b"WITHSCORES"], 1).value,
        Value::Array(vec![pair("a", 1.5), pair("b", 2.0)])
    );
    assert_eq!(request(&mut s, &[b"ZSCORE", b"z", b"a"], 1).value, Value::Double(1.5));
    // HELLO 2 on a channel is answered, but the channel keeps RESP3 shapes.
    let hello = request(&mut s, &[b"HELLO", b"2"], 1).value;
    let Value::Map(pairs) = hello else { panic!("HELLO reply is a map") };
    assert!(pairs.contains(&(Value::bulk("proto"), Value::Integer(3))));
    assert_eq!(request(&mut s, &[b"ZSCORE", b"z", b"a"], 1).value, Value::Double(1.5));
    request(&mut s, &[b"RESET"], 1);
    assert_eq!(request(&mut s, &[b"SMEMBERS", b"s"], 1).value, Value::Set(vec![Value::bulk("m")]));
}

#[test]
fn hello_proto_respb_upgrades_a_resp_connection() {
    let kvik = start_kvik();
    let mut c = connect(kvik.port);
    assert_eq!(call(&mut c, &[b"SELECT", b"5"]), b"+OK\r\n");
    let refused = call(&mut c, &[b"HELLO", b"2", b"PROTO", b"RESPB"]);
    assert!(refused.starts_with(b"-ERR"), "{}", refused.escape_ascii());
    let hello = call(&mut c, &[b"HELLO", b"3", b"PROTO", b"RESPB"]);
    let (value, used) = parse_reply(&hello, &ReplyLimits::DEFAULT).expect("RESP3").expect("complete");
    assert_eq!(used, hello.len());
    assert!(matches!(value, Value::Map(_)), "the RESP3 HELLO reply comes first");
    // From here on the connection speaks RESPB; the client is channel 0.
    assert_eq!(request(&mut c, &[b"PING"], 0).value, Value::simple("PONG"));
    let info = bulk_text(&request(&mut c, &[b"CLIENT", b"INFO"], 0).value);
    assert!(info.contains(" db=5 ") && info.ends_with(" mux=0\n"), "{info}");
    assert_eq!(request(&mut c, &[b"PING"], 3).value, Value::simple("PONG"));
}

#[test]
fn subscriptions_made_over_resp3_carry_over_to_channel_0() {
    let kvik = start_kvik();
    let mut c = connect(kvik.port);
    call(&mut c, &[b"HELLO", b"3"]);
    let confirmed = call(&mut c, &[b"SUBSCRIBE", b"before"]);
    assert!(confirmed.starts_with(b">3\r\n"), "{}", confirmed.escape_ascii());
    call(&mut c, &[b"HELLO", b"3", b"PROTO", b"RESPB"]);
    let mut other = connect(kvik.port);
    assert_eq!(call(&mut other, &[b"PUBLISH", b"before", b"m"]), b":1\r\n");
    let got = one(&mut c);
    assert_eq!((got.mux, got.value), (0, push(&["message", "before", "m"])));
}

#[test]
fn client_list_shows_channels_with_their_mux_id() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    request(&mut s, &[b"CLIENT", b"SETNAME", b"chan7"], 7);
    request(&mut s, &[b"PING"], 8);
    let mut resp = connect(kvik.port);
    let list = String::from_utf8_lossy(&call(&mut resp, &[b"CLIENT", b"LIST"])).into_owned();
    let line7 = list.lines().find(|l| l.contains("name=chan7")).expect("channel 7 listed");
    assert!(line7.ends_with(" resp=3 mux=7"), "{line7}");
    assert!(list.lines().any(|l| l.ends_with(" mux=8")));
    let own = list.lines().find(|l| l.contains("cmd=client|list")).expect("the RESP client");
    assert!(own.ends_with(" resp=2"), "RESP lines have no mux field: {own}");
    assert_eq!(info_field(kvik.port, "connected_clients"), "4");
}

#[test]
fn malformed_frame_closes_the_connection_and_its_waits() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    send(&mut s, &[b"BLPOP", b"k", b"0"], 1);
    wait_blocked(kvik.port, 1);
    s.write_all(&[0x7F, 0xFE, 0x00, 0x02]).expect("send");
    let answer = read_until(&mut s, |_| false);
    assert!(answer.closed);
    let frame = decode_reply(&answer.bytes, &ReplyLimits::DEFAULT).expect("frame").expect("complete");
    assert_eq!(frame.mux, 2);
    assert!(matches!(frame.value, Value::Error(e) if e.starts_with(b"ERR RESPB unknown opcode")));
    wait_blocked(kvik.port, 0);
}

/// Make RESP3 and RESPB values comparable: RESPB has one null, and carries
/// big numbers and verbatim strings as bulk strings; maps and sets are
/// compared as sorted (server hash order).
fn normalize(v: Value) -> String {
    fn norm(v: Value) -> Value {
        match v {
            Value::NullArray => Value::Null,
            Value::BigNumber(d) => Value::Bulk(d),
            Value::Verbatim { text, .. } => Value::Bulk(text),
            Value::Array(items) => Value::Array(items.into_iter().map(norm).collect()),
            Value::Push(items) => Value::Push(items.into_iter().map(norm).collect()),
            Value::Set(items) => {
                let mut items: Vec<Value> = items.into_iter().map(norm).collect();
                items.sort_by_key(|i| format!("{i:?}"));
                Value::Set(items)
            }
            Value::Map(pairs) => {
                let mut pairs: Vec<(Value, Value)> = pairs.into_iter().map(|(k, v)| (norm(k), norm(v))).collect();
                pairs.sort_by_key(|p| format!("{p:?}"));
                Value::Map(pairs)
            }
            other => other,
        }
    }
    format!("{:?}", norm(v))
}

fn resp3_values(port: u16, commands: &[Vec<Vec<u8>>]) -> Vec<String> {
    let mut c = connect(port);
    call(&mut c, &[b"HELLO", b"3"]);
    let mut out = Vec::new();
    for cmd in commands {
        let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_slice()).collect();
        out.extend_from_slice(&common::diff::multibulk(&args));
    }
    c.write_all(&out).expect("send");
    let count = |mut buf: &[u8]| {
        let mut n = 0;
        while let Ok(Some((_, used))) = parse_reply(buf, &ReplyLimits::DEFAULT) {
            buf = &buf[used..];
            n += 1;
        }
        n
    };
    let bytes = read_until(&mut c, |got| count(got) >= commands.len()).bytes;
    let mut buf = &bytes[..];
    let mut values = Vec::new();
    while let Ok(Some((v, used))) = parse_reply(buf, &ReplyLimits::DEFAULT) {
        buf = &buf[used..];
        values.push(normalize(v));
    }
    values
}

fn respb_values(server: &ServerProcess, commands: &[Vec<Vec<u8>>]) -> Vec<String> {
    let mut s = greeted(server);
    let mut out = Vec::new();
    for cmd in commands {
        encode_request(cmd, 1, &mut out);
    }
    s.write_all(&out).expect("send");
    frames(&mut s, commands.len()).into_iter().map(|f| normalize(f.value)).collect()
}

#[test]
fn random_sequences_give_the_same_values_over_resp3_and_respb() {
    let resp3 = start_kvik();
    let respb = start_kvik();
    let mut total = 0;
    for family in [random::Family::Lists, random::Family::Hashes] {
        for seed in 0..26 {
            // Random picks differ run to run; everything else must match.
            let commands: Vec<Vec<Vec<u8>>> = random::sequence_args(family, seed)
                .into_iter()
                .filter(|c| {
                    let skip: [&[u8]; 4] = [b"HRANDFIELD", b"RANDOMKEY", b"HELLO", b"RESET"];
                    !skip.iter().any(|s| c[0].eq_ignore_ascii_case(s))
                })
                .collect();
            let a = resp3_values(resp3.port, &commands);
            let b = respb_values(&respb, &commands);
            assert_eq!(a.len(), commands.len());
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                assert_eq!(
                    x,
                    y,
                    "{family:?} seed {seed} command {i}: {:?}",
                    String::from_utf8_lossy(&commands[i].concat())
                );
            }
            total += commands.len();
            for port in [resp3.port, respb.port] {
                call(&mut connect(port), &[b"FLUSHALL"]);
            }
        }
    }
    assert!(total >= 20_000, "only {total} commands");
}

#[test]
fn queues_behind_a_blocked_channel_are_bounded() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    send(&mut s, &[b"BLPOP", b"k", b"0"], 1);
    wait_blocked(kvik.port, 1);
    // More frames than one channel may queue: the connection stops
    // decoding, so a later frame on another channel waits too.
    let mut frames_out = Vec::new();
    for _ in 0..1100 {
        encode_request(&[&b"PING"[..]], 1, &mut frames_out);
    }
    encode_request(&[&b"ECHO"[..], b"two"], 2, &mut frames_out);
    s.write_all(&frames_out).expect("send");
    silent(&mut s);
    let mut other = connect(kvik.port);
    call(&mut other, &[b"RPUSH", b"k", b"v"]);
    let got = frames(&mut s, 1102);
    assert_eq!((got[0].mux, &got[0].value), (1, &Value::Array(vec![Value::bulk("k"), Value::bulk("v")])));
    assert!(got[1..1101].iter().all(|f| f.mux == 1 && f.value == Value::simple("PONG")));
    assert_eq!((got[1101].mux, &got[1101].value), (2, &Value::bulk("two")));
}

#[test]
fn a_huge_reply_being_written_does_not_stop_other_channels() {
    let kvik = start_kvik();
    let mut admin = connect(kvik.port);
    let big = vec![b'x'; 32 * 1024 * 1024];
    assert_eq!(call(&mut admin, &[b"SET", b"big", &big]), b"+OK\r\n");
    let mut s = greeted(&kvik);
    // The client reads nothing while the huge reply is due.
    send(&mut s, &[b"GET", b"big"], 1);
    send(&mut s, &[b"SET", b"marker", b"ran"], 2);
    let deadline = Instant::now() + Duration::from_secs(5);
    while call(&mut admin, &[b"GET", b"marker"]) != b"$3\r\nran\r\n" {
        assert!(Instant::now() < deadline, "the other channel's frame never ran");
        std::thread::sleep(Duration::from_millis(5));
    }
    let got = frames(&mut s, 2);
    assert_eq!((got[0].mux, &got[0].value), (1, &Value::Bulk(big)));
    assert_eq!((got[1].mux, &got[1].value), (2, &Value::simple("OK")));
}

/// The numbers of `CLIENT LIST` fields `names` of every client, by id, and
/// `mem_clients_normal`, read by `watcher` one after the other.
fn buffers_listed(watcher: &mut TcpStream, names: &[&str]) -> (Vec<(i64, Vec<usize>)>, usize) {
    let text = String::from_utf8_lossy(&call(watcher, &[b"CLIENT", b"LIST"])).into_owned();
    let lines = text
        .lines()
        .filter_map(|l| {
            let field = |name: &str| l.split(' ').find_map(|f| f.strip_prefix(name)?.strip_prefix('='));
            let id = field("id")?.parse().ok()?;
            Some((id, names.iter().map(|n| field(n).and_then(|v| v.parse().ok()).unwrap_or(usize::MAX)).collect()))
        })
        .collect();
    let info = String::from_utf8_lossy(&call(watcher, &[b"INFO", b"memory"])).into_owned();
    let total = info.lines().find_map(|l| l.strip_prefix("mem_clients_normal:")?.parse().ok()).unwrap_or(usize::MAX);
    (lines, total)
}

/// A RESPB connection's buffers belong to no channel in particular: they
/// are shown on one of its channels (the others show none) and counted
/// once in `mem_clients_normal`, and move to another channel when that one
/// closes.
#[test]
fn a_respb_connection_shows_its_buffers_on_one_channel() {
    let kvik = start_kvik();
    let mut s = greeted(&kvik);
    let ids: Vec<i64> = [1, 2, 3].iter().map(|&mux| client_id(&mut s, mux)).collect();
    let mut watcher = connect(kvik.port);
    let names = ["tot-mem", "qbuf-free", "rbs"];
    // The carrier of the connection's buffers, once the list adds up.
    let carrier = |watcher: &mut TcpStream, ids: &[i64]| -> i64 {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let (lines, total) = buffers_listed(watcher, &names);
            let sum: usize = lines.iter().map(|(_, f)| f[0]).sum();
            let carriers: Vec<i64> = lines
                .iter()
                .filter(|(id, f)| ids.contains(id) && f.iter().all(|&n| n > 0))
                .map(|(id, _)| *id)
                .collect();
            let bare = lines.iter().filter(|(id, f)| ids.contains(id) && f.iter().all(|&n| n == 0)).count();
            if carriers.len() == 1 && bare == ids.len() - 1 && sum == total {
                return carriers[0];
            }
            assert!(Instant::now() < deadline, "carriers {carriers:?}, sum {sum}, total {total}: {lines:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let first = carrier(&mut watcher, &ids);
    let mux = [1, 2, 3][ids.iter().position(|&id| id == first).unwrap_or(0)];
    control(&mut s, MUX_CLOSE, mux, mux);
    assert_eq!(one(&mut s).value, Value::simple("OK"));
    // Any frame makes the connection wait again, and publish.
    let left: Vec<i64> = ids.iter().copied().filter(|&id| id != first).collect();
    let other = [1, 2, 3].into_iter().find(|&m| m != mux).unwrap_or(1);
    assert_eq!(request(&mut s, &[b"PING"], other).value, Value::simple("PONG"));
    let next = carrier(&mut watcher, &left);
    assert_ne!(next, first);
}

/// The error of the one frame `stream` gets, and whether the server then
/// closed the connection.
fn error_then_closed(stream: &mut TcpStream) -> (Vec<u8>, bool) {
    let answer = read_until(stream, |got| frames_in(got) >= 1);
    let frame = decode_reply(&answer.bytes, &ReplyLimits::DEFAULT).ok().flatten().expect("a reply frame");
    let Value::Error(text) = frame.value else { panic!("an error expected: {:?}", frame.value) };
    let rest = read_until(stream, |_| false);
    (text, rest.closed && answer.bytes.len() == frame.consumed && rest.bytes.is_empty())
}

#[test]
fn an_unauthenticated_connection_may_send_only_small_frames_and_open_few_channels() {
    let kvik = start_kvik_with(&["--requirepass", "pw"]);
    // A SET that claims a 512 MiB value is refused at its length field and
    // the connection closed, where the server used to read all of it.
    let mut s = greeted(&kvik);
    let mut frame = Vec::new();
    encode_request(&[&b"SET"[..], b"k", b"v"], 1, &mut frame);
    frame.truncate(7);
    frame.extend_from_slice(&(512u32 << 20).to_be_bytes());
    frame.extend_from_slice(&[b'v'; 64 * 1024]);
    s.write_all(&frame).expect("send");
    let (error, closed) = error_then_closed(&mut s);
    assert_eq!(error, b"ERR Protocol error: unauthenticated bulk length");
    assert!(closed, "the connection is closed");
    // Many arguments under the bulk bound: the frame's length is bounded.
    let mut s = greeted(&kvik);
    let value = vec![b'v'; 16 * 1024];
    let mut args: Vec<&[u8]> = vec![b"MSET"];
    let keys: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
    for key in &keys {
        args.push(key.as_bytes());
        args.push(&value);
    }
    let mut frame = Vec::new();
    encode_request(&args, 1, &mut frame);
    let _ = s.write_all(&frame);
    assert_eq!(error_then_closed(&mut s), (b"ERR Protocol error: unauthenticated frame length".to_vec(), true));
    // A passthrough frame claiming a large RESP text.
    let mut s = greeted(&kvik);
    s.write_all(&[0xFF, 0xFF, 0, 3, 0x10, 0, 0, 0]).expect("send");
    assert_eq!(error_then_closed(&mut s), (b"ERR Protocol error: unauthenticated frame length".to_vec(), true));
    // Channels: a few may be opened before authenticating, then no more.
    let mut s = greeted(&kvik);
    for target in 0..16 {
        control(&mut s, MUX_CREATE, target, target);
        assert_eq!(one(&mut s).value, Value::simple("OK"), "channel {target}");
    }
    control(&mut s, MUX_CREATE, 16, 16);
    assert_eq!(one(&mut s).value, Value::Error(b"NOAUTH Authentication required.".to_vec()));
    assert_eq!(request(&mut s, &[b"PING"], 17).value, Value::Error(b"NOAUTH Authentication required.".to_vec()));
    // Once one channel has authenticated, the connection is trusted:
    // more channels, and frames of any size up to proto-max-bulk-len.
    assert_eq!(request(&mut s, &[b"AUTH", b"pw"], 3).value, Value::simple("OK"));
    control(&mut s, MUX_CREATE, 16, 16);
    assert_eq!(one(&mut s).value, Value::simple("OK"));
    assert!(matches!(request(&mut s, &[b"PING"], 17).value, Value::Error(e) if e.starts_with(b"NOAUTH")));
    let big = vec![b'x'; 1 << 20];
    assert_eq!(request(&mut s, &[b"SET", b"big", &big], 3).value, Value::simple("OK"));
    // An unauthenticated channel of a trusted connection is still refused
    // its commands, but not its size.
    assert!(matches!(request(&mut s, &[b"SET", b"big", &big], 5).value, Value::Error(e) if e.starts_with(b"NOAUTH")));
}

#[test]
fn channels_count_toward_maxclients() {
    let kvik = start_kvik_with(&["--maxclients", "4"]);
    let mut admin = connect(kvik.port);
    let mut s = greeted(&kvik);
    // The connection's first channel is covered by its own slot; two more
    // fill the limit with the admin connection.
    for mux in 1..=3 {
        assert_eq!(request(&mut s, &[b"PING"], mux).value, Value::simple("PONG"), "channel {mux}");
    }
    assert_eq!(request(&mut s, &[b"PING"], 4).value, Value::Error(b"ERR max number of clients reached".to_vec()));
    control(&mut s, MUX_CREATE, 1, 9);
    assert_eq!(one(&mut s).value, Value::Error(b"ERR max number of clients reached".to_vec()));
    let refused = exchange(kvik.port, b"PING\r\n", |got| got.ends_with(b"\r\n"));
    assert_eq!(refused.bytes, b"-ERR max number of clients reached\r\n");
    // Closing a channel frees its slot for a connection, and the other way round.
    control(&mut s, MUX_CLOSE, 1, 2);
    assert_eq!(one(&mut s).value, Value::simple("OK"));
    let mut other = connect(kvik.port);
    assert_eq!(call(&mut other, &[b"PING"]), b"+PONG\r\n");
    assert_eq!(request(&mut s, &[b"PING"], 4).value, Value::Error(b"ERR max number of clients reached".to_vec()));
    drop(other);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if request(&mut s, &[b"PING"], 4).value == Value::simple("PONG") {
            break;
        }
        assert!(Instant::now() < deadline, "the slot of a closed connection is given back");
        std::thread::sleep(Duration::from_millis(20));
    }
    let clients = String::from_utf8_lossy(&call(&mut admin, &[b"INFO", b"clients"])).to_string();
    assert!(clients.contains("connected_clients:4\r\n"), "{clients}");
    let stats = String::from_utf8_lossy(&call(&mut admin, &[b"INFO", b"stats"])).to_string();
    let rejected: usize = common::info_value(&stats, "rejected_connections").parse().expect("a count");
    assert!(rejected >= 4, "each refused channel and connection is counted: {rejected}");
}
