//! Every protocol against real servers: kvik over RESP2, RESP3 and RESPB,
//! redis-server over RESP2 and RESP3. The same commands must give the reply
//! shapes each protocol defines (RESPB replies carry RESP3 shapes).

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{socket_path, start_kvik, start_redis, ServerOptions};
use kvik_client::{Connection, Error, Options, Protocol, Value};

fn bulk(s: &str) -> Value {
    Value::bulk(s)
}

/// SET/GET/MGET/HGETALL/ZADD/ZSCORE/INCR and error replies, checked value by value.
async fn round_trip(opts: &Options) {
    let resp2 = opts.protocol == Protocol::Resp2;
    let mut c = Connection::connect(opts).await.unwrap_or_else(|e| panic!("{:?}: {e}", opts.protocol));
    assert_eq!(c.command(&["SET", "k", "v"]).await.unwrap(), Value::simple("OK"));
    assert_eq!(c.command(&["GET", "k"]).await.unwrap(), bulk("v"));
    assert_eq!(c.command(&["GET", "missing"]).await.unwrap(), Value::Null);
    c.command(&["SET", "a", "1"]).await.unwrap();
    assert_eq!(
        c.command(&["MGET", "k", "missing", "a"]).await.unwrap(),
        Value::Array(vec![bulk("v"), Value::Null, bulk("1")])
    );

    assert_eq!(c.command(&["HSET", "h", "f1", "v1", "f2", "v2"]).await.unwrap(), Value::Integer(2));
    let all = c.command(&["HGETALL", "h"]).await.unwrap();
    let expected = if resp2 {
        Value::Array(vec![bulk("f1"), bulk("v1"), bulk("f2"), bulk("v2")])
    } else {
        Value::Map(vec![(bulk("f1"), bulk("v1")), (bulk("f2"), bulk("v2"))])
    };
    assert_eq!(all, expected, "{:?}", opts.protocol);

    assert_eq!(c.command(&["ZADD", "z", "1.5", "a", "2", "b"]).await.unwrap(), Value::Integer(2));
    let score = c.command(&["ZSCORE", "z", "a"]).await.unwrap();
    assert_eq!(score, if resp2 { bulk("1.5") } else { Value::Double(1.5) }, "{:?}", opts.protocol);
    assert_eq!(c.command(&["ZSCORE", "z", "nobody"]).await.unwrap(), Value::Null);

    assert_eq!(c.command(&["INCR", "n"]).await.unwrap(), Value::Integer(1));
    assert_eq!(c.command(&["INCR", "n"]).await.unwrap(), Value::Integer(2));
    assert_eq!(c.command(&["INCR", "k"]).await.unwrap(), Value::error("ERR value is not an integer or out of range"));
    assert_eq!(
        c.command(&["HGETALL", "k"]).await.unwrap(),
        Value::error("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    let unknown = c.command(&["NOSUCHCOMMAND", "x"]).await.unwrap();
    assert!(matches!(&unknown, Value::Error(e) if e.starts_with(b"ERR unknown command")), "{unknown:?}");
    let arity = c.command(&["GET"]).await.unwrap();
    assert_eq!(arity, Value::error("ERR wrong number of arguments for 'get' command"));

    // Binary-safe, and larger than any single read.
    let mut big: Vec<u8> = (0..=255u8).cycle().take(3 * 1024 * 1024 + 7).collect();
    big.extend_from_slice(b"\r\n\0");
    assert_eq!(c.command(&[b"SET".as_slice(), b"big", &big]).await.unwrap(), Value::simple("OK"));
    assert_eq!(c.command(&["GET", "big"]).await.unwrap(), Value::Bulk(big));
    // The connection is still in step after all that.
    assert_eq!(c.command(&["PING"]).await.unwrap(), Value::simple("PONG"));
    c.close().await.unwrap();
}

#[tokio::test]
async fn kvik_round_trips_every_protocol() {
    let kvik = start_kvik(&[]);
    for protocol in [Protocol::Resp2, Protocol::Resp3, Protocol::Respb] {
        round_trip(&kvik.opts(protocol)).await;
        // A fresh database for the next protocol.
        let mut c = Connection::connect(&kvik.opts(protocol)).await.unwrap();
        assert_eq!(c.command(&["FLUSHALL"]).await.unwrap(), Value::simple("OK"));
    }
}

#[tokio::test]
async fn redis_round_trips_resp2_and_resp3() {
    let Some(redis) = start_redis(&[]) else { return };
    for protocol in [Protocol::Resp2, Protocol::Resp3] {
        round_trip(&redis.opts(protocol)).await;
        let mut c = Connection::connect(&redis.opts(protocol)).await.unwrap();
        c.command(&["FLUSHALL"]).await.unwrap();
    }
}

#[tokio::test]
async fn resp3_connections_get_resp3_types_from_hello() {
    let kvik = start_kvik(&[]);
    let mut c = Connection::connect(&kvik.opts(Protocol::Resp3)).await.unwrap();
    assert_eq!(c.command(&["SADD", "s", "x"]).await.unwrap(), Value::Integer(1));
    assert_eq!(c.command(&["SMEMBERS", "s"]).await.unwrap(), Value::Set(vec![bulk("x")]));
    let mut c2 = Connection::connect(&kvik.opts(Protocol::Resp2)).await.unwrap();
    assert_eq!(c2.command(&["SMEMBERS", "s"]).await.unwrap(), Value::Array(vec![bulk("x")]));
}

#[tokio::test]
async fn unix_sockets_work_for_every_protocol() {
    let path = socket_path("unix");
    let path_str = path.to_str().unwrap().to_string();
    let kvik = start_kvik(&["--unixsocket", &path_str]);
    for protocol in [Protocol::Resp2, Protocol::Resp3, Protocol::Respb] {
        let opts = Options::unix(&path).with_protocol(protocol);
        let mut c = Connection::connect(&opts).await.unwrap();
        assert_eq!(c.command(&["ECHO", "over unix"]).await.unwrap(), bulk("over unix"));
    }
    drop(kvik);
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn auth_and_select_on_connect() {
    let kvik = start_kvik(&["--requirepass", "s3cret"]);
    for protocol in [Protocol::Resp2, Protocol::Resp3, Protocol::Respb] {
        // Without AUTH the server refuses commands (a value, not a Rust error)…
        if protocol != Protocol::Resp3 {
            let mut c = Connection::connect(&kvik.opts(protocol)).await.unwrap();
            let refused = c.command(&["GET", "x"]).await.unwrap();
            assert!(matches!(&refused, Value::Error(e) if e.starts_with(b"NOAUTH")), "{refused:?}");
        }
        // …a wrong password fails the connect with the step named…
        let wrong = kvik.opts(protocol).with_auth(None, "nope");
        let step = if protocol == Protocol::Resp3 { "HELLO" } else { "AUTH" };
        match Connection::connect(&wrong).await {
            Err(Error::Setup { step: s, message }) => {
                assert_eq!(s, step);
                assert!(message.starts_with("WRONGPASS"), "{message}");
            }
            other => panic!("{protocol:?}: expected a setup error, got {other:?}"),
        }
        // …and the right one, with a database, works.
        let good = kvik.opts(protocol).with_auth(None, "s3cret").with_db(3);
        let mut c = Connection::connect(&good).await.unwrap();
        let key = format!("in-db3-{protocol:?}");
        assert_eq!(c.command(&["SET", &key, "yes"]).await.unwrap(), Value::simple("OK"));
        let mut db0 = Connection::connect(&kvik.opts(protocol).with_auth(None, "s3cret")).await.unwrap();
        assert_eq!(db0.command(&["EXISTS", &key]).await.unwrap(), Value::Integer(0));
        assert_eq!(db0.command(&["SELECT", "3"]).await.unwrap(), Value::simple("OK"));
        assert_eq!(db0.command(&["GET", &key]).await.unwrap(), bulk("yes"));
    }
    let bad_db = kvik.opts(Protocol::Resp2).with_auth(None, "s3cret").with_db(99);
    assert!(matches!(Connection::connect(&bad_db).await, Err(Error::Setup { step: "SELECT", .. })));
}

#[tokio::test]
async fn connect_times_out_when_the_server_never_answers() {
    // The kernel accepts the TCP connection, but nobody ever reads or writes.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    for protocol in [Protocol::Resp3, Protocol::Respb] {
        let opts = Options::tcp(&addr).with_protocol(protocol).with_connect_timeout(Duration::from_millis(200));
        let started = std::time::Instant::now();
        let err = Connection::connect(&opts).await.unwrap_err();
        assert!(matches!(err, Error::ConnectTimeout(_)), "{err}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }
}

#[tokio::test]
async fn a_refused_respb_handshake_is_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut hello = [0u8; 4];
        s.read_exact(&mut hello).unwrap();
        s.write_all(&[0xD3, 0xC1, 0, 0]).unwrap();
        hello
    });
    let err = Connection::connect(&Options::tcp(addr).with_protocol(Protocol::Respb)).await.unwrap_err();
    assert!(matches!(err, Error::Handshake([0xD3, 0xC1, 0, 0])), "{err}");
    assert_eq!(server.join().unwrap(), [0xD3, 0xC1, 1, 0]);
}

#[tokio::test]
async fn request_timeout_breaks_the_connection_and_says_so() {
    let kvik = start_kvik(&["--enable-debug-command", "yes"]);
    for protocol in [Protocol::Resp2, Protocol::Resp3, Protocol::Respb] {
        let opts = kvik.opts(protocol).with_request_timeout(Duration::from_millis(150));
        let mut c = Connection::connect(&opts).await.unwrap();
        assert_eq!(c.command(&["PING"]).await.unwrap(), Value::simple("PONG"));
        let err = c.command(&["DEBUG", "SLEEP", "0.5"]).await.unwrap_err();
        assert!(matches!(err, Error::Timeout(_)), "{err}");
        // The late reply would be misread as the next one's: the connection refuses further use.
        assert!(matches!(c.command(&["PING"]).await, Err(Error::Broken(_))));
        assert!(c.broken().is_some());
    }
}

#[tokio::test]
async fn replies_over_the_size_limit_fail_cleanly() {
    let kvik = start_kvik(&[]);
    for protocol in [Protocol::Resp2, Protocol::Resp3, Protocol::Respb] {
        let mut c = Connection::connect(&kvik.opts(protocol)).await.unwrap();
        c.command(&[b"SET".as_slice(), b"big", &vec![b'x'; 200_000]]).await.unwrap();
        let mut small = Connection::connect(&kvik.opts(protocol).with_max_reply_bytes(64 * 1024)).await.unwrap();
        assert_eq!(small.command(&["STRLEN", "big"]).await.unwrap(), Value::Integer(200_000));
        let err = small.command(&["GET", "big"]).await.unwrap_err();
        assert!(matches!(err, Error::ReplyTooLarge { .. } | Error::Protocol(_)), "{protocol:?}: {err}");
        assert!(err.is_connection_error());
    }
}

/// Over RESP3 a message that arrives while a command waits is set aside,
/// and the command still gets its own reply.
async fn pushes_are_set_aside(subscriber: &Options, publisher: &Options) {
    let mut sub = Connection::connect(subscriber).await.unwrap();
    let mut publ = Connection::connect(publisher).await.unwrap();
    let confirm = sub.command(&["SUBSCRIBE", "news"]).await.unwrap();
    assert_eq!(confirm, Value::Push(vec![bulk("subscribe"), bulk("news"), Value::Integer(1)]));
    assert_eq!(publ.command(&["PUBLISH", "news", "one"]).await.unwrap(), Value::Integer(1));
    assert_eq!(publ.command(&["PUBLISH", "news", "two"]).await.unwrap(), Value::Integer(1));
    // The messages were published before this PING: the PING still gets
    // its own reply, whichever order the server delivers them in.
    assert_eq!(sub.command(&["PING"]).await.unwrap(), Value::simple("PONG"));
    eprintln!("{:?}: {} pushes set aside", subscriber.protocol, sub.pending_pushes());
    assert!(sub.pending_pushes() <= 2);
    for text in ["one", "two"] {
        assert_eq!(sub.read_reply().await.unwrap(), Value::Push(vec![bulk("message"), bulk("news"), bulk(text)]));
    }
    assert_eq!(sub.dropped_pushes(), 0);
}

#[tokio::test]
async fn resp3_pushes_do_not_take_the_place_of_replies() {
    let kvik = start_kvik(&[]);
    pushes_are_set_aside(&kvik.opts(Protocol::Resp3), &kvik.opts(Protocol::Resp2)).await;
    if let Some(redis) = start_redis(&[]) {
        pushes_are_set_aside(&redis.opts(Protocol::Resp3), &redis.opts(Protocol::Resp2)).await;
    }
}
