//! DUMP payloads are Redis's: a value dumped by kvik restores in a real
//! redis-server, and one dumped by redis-server restores in kvik, with the
//! same data and the same encoding.
//!
//! redis-server is the judge of "the same data": `DEBUG DIGEST-VALUE`
//! hashes a value independently of its encoding and of hash-table order
//! (streams with their groups, consumers and pending entries included).
//! For each setup, run on both servers:
//! - kvik's payload restored in redis digests as redis's own value does;
//! - redis's payload restored in kvik, dumped again by kvik and restored in
//!   redis, digests the same too (so kvik read every part of it).

mod common;

use std::net::TcpStream;

use common::{call, connect, start_kvik};

/// Setups, each creating key `k` in a fresh database.
/// One command, as its arguments.
type Command = Vec<Vec<u8>>;

fn setups() -> Vec<(&'static str, Vec<Command>)> {
    let words = |s: &str| s.split(' ').map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
    let many = |cmd: &str, n: usize, item: &dyn Fn(usize) -> String| {
        let mut args = words(cmd);
        args.extend((0..n).map(|i| item(i).into_bytes()));
        args
    };
    let long_text = "The quick brown fox jumps over the lazy dog. ".repeat(40);
    let noise: String =
        (0..300u64).map(|i| char::from(b'!' + ((i.wrapping_mul(2_654_435_761) >> 7) % 90) as u8)).collect();
    vec![
        ("small integer string", vec![words("SET k 300")]),
        ("negative integer string", vec![words("SET k -70000")]),
        ("wide integer string", vec![words("SET k 12345678901234")]),
        ("short string", vec![words("SET k hello")]),
        ("compressible string", vec![vec![b"SET".to_vec(), b"k".to_vec(), long_text.clone().into_bytes()]]),
        ("incompressible string", vec![vec![b"SET".to_vec(), b"k".to_vec(), noise.into_bytes()]]),
        ("binary string", vec![vec![b"SET".to_vec(), b"k".to_vec(), b"\x00\xff\r\n\x01".to_vec()]]),
        ("small list", vec![words("RPUSH k a 1 -5 100000 hello")]),
        ("long list", vec![many("RPUSH k", 3000, &|i| format!("element-{i}-{}", "x".repeat(i % 40)))]),
        ("list of large elements", vec![many("RPUSH k", 5, &|i| format!("{i}{}", "y".repeat(9000)))]),
        ("listpack hash", vec![words("HSET k a 1 bb 300 name kvik neg -12")]),
        ("hashtable hash", vec![many("HSET k", 1200, &|i| if i % 2 == 0 { format!("f{i}") } else { format!("{i}") })]),
        ("hash with a long value", vec![vec![b"HSET".to_vec(), b"k".to_vec(), b"f".to_vec(), long_text.into_bytes()]]),
        ("intset", vec![words("SADD k 5 -3 70000 9000000000 1")]),
        ("hashtable set", vec![words("SADD k a b 1 c")]),
        ("large intset", vec![many("SADD k", 600, &|i| format!("{}", i * 7))]),
        ("listpack zset", vec![words("ZADD k 1 a 2.5 b -0 c inf d -inf e 1e300 f 0.1 g")]),
        (
            "skiplist zset",
            vec![many("ZADD k", 400, &|i| if i % 2 == 0 { format!("{}.25", i) } else { format!("m{i}") })],
        ),
        ("stream", vec![words("XADD k 1-1 a 1 b 2"), words("XADD k 1-2 a 3 b 4"), words("XADD k 2-0 other x")]),
        (
            "stream with deletions and groups",
            vec![
                words("XADD k 5-1 f v"),
                words("XADD k 5-2 f w g z"),
                words("XADD k 6-0 f x"),
                words("XADD k 7-0 f y"),
                words("XDEL k 5-2"),
                words("XGROUP CREATE k readers 0"),
                words("XGROUP CREATE k late $"),
                words("XREADGROUP GROUP readers alice COUNT 2 STREAMS k >"),
                words("XREADGROUP GROUP readers bob COUNT 1 STREAMS k >"),
                words("XGROUP CREATECONSUMER k readers carol"),
                words("XACK k readers 5-1"),
            ],
        ),
        (
            "many stream nodes",
            (0..450).map(|i| words(&format!("XADD k {}-0 field{} value{i}", i + 1, i % 3))).collect(),
        ),
        ("empty stream after XDEL", vec![words("XADD k 9-9 a b"), words("XDEL k 9-9")]),
    ]
}

fn bulk_body(reply: &[u8]) -> Option<Vec<u8>> {
    if reply.starts_with(b"$-1") {
        return None;
    }
    let start = reply.windows(2).position(|w| w == b"\r\n")? + 2;
    Some(reply[start..reply.len() - 2].to_vec())
}

fn digest(redis: &mut TcpStream, key: &[u8]) -> Vec<u8> {
    call(redis, &[b"DEBUG", b"DIGEST-VALUE", key])
}

fn run_setup(conn: &mut TcpStream, setup: &[Command]) {
    assert_eq!(call(conn, &[b"FLUSHALL"]), b"+OK\r\n");
    for args in setup {
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let reply = call(conn, &args);
        assert!(!reply.starts_with(b"-"), "{}: {}", String::from_utf8_lossy(&args.join(&b' ')), reply.escape_ascii());
    }
}

#[test]
fn payloads_cross_between_kvik_and_redis() {
    let Some(redis) = common::start_redis_with_or_skip("payloads_cross", &["--enable-debug-command", "yes"]) else {
        return;
    };
    let kvik = start_kvik();
    let (mut r, mut k) = (connect(redis.port), connect(kvik.port));
    for (name, setup) in setups() {
        run_setup(&mut r, &setup);
        run_setup(&mut k, &setup);
        let theirs = digest(&mut r, b"k");
        // A 40-digit hex digest, not an error that would equal another error.
        assert!(
            theirs.starts_with(b"*1\r\n+") && theirs.len() == 47 && theirs[5..45] != [b'0'; 40],
            "{name}: {}",
            theirs.escape_ascii()
        );
        let kvik_payload = bulk_body(&call(&mut k, &[b"DUMP", b"k"])).expect("kvik has the key");
        let redis_payload = bulk_body(&call(&mut r, &[b"DUMP", b"k"])).expect("redis has the key");

        // kvik → redis.
        assert_eq!(call(&mut r, &[b"RESTORE", b"from-kvik", b"0", &kvik_payload]), b"+OK\r\n", "{name}");
        assert_eq!(digest(&mut r, b"from-kvik"), theirs, "{name}: kvik's payload restored in redis");
        assert_eq!(
            call(&mut r, &[b"OBJECT", b"ENCODING", b"from-kvik"]),
            call(&mut r, &[b"OBJECT", b"ENCODING", b"k"]),
            "{name}: encoding"
        );
        // redis → kvik → redis.
        assert_eq!(call(&mut k, &[b"RESTORE", b"from-redis", b"0", &redis_payload]), b"+OK\r\n", "{name}");
        assert_eq!(
            call(&mut k, &[b"OBJECT", b"ENCODING", b"from-redis"]),
            call(&mut k, &[b"OBJECT", b"ENCODING", b"k"]),
            "{name}: encoding in kvik"
        );
        let again = bulk_body(&call(&mut k, &[b"DUMP", b"from-redis"])).expect("restored");
        assert_eq!(call(&mut r, &[b"RESTORE", b"round-trip", b"0", &again]), b"+OK\r\n", "{name}");
        assert_eq!(digest(&mut r, b"round-trip"), theirs, "{name}: redis's payload through kvik");
    }
}

#[test]
fn payloads_with_a_later_version_or_a_bad_checksum_are_refused() {
    let kvik = start_kvik();
    let mut k = connect(kvik.port);
    call(&mut k, &[b"SET", b"k", b"hello"]);
    let payload = bulk_body(&call(&mut k, &[b"DUMP", b"k"])).expect("dumped");
    // Type 0, the string, RDB version 10, CRC-64.
    assert_eq!(&payload[..7], b"\x00\x05hello");
    assert_eq!(&payload[7..9], &[10, 0]);
    let refused = b"-ERR DUMP payload version or checksum are wrong\r\n";
    let mut later = payload.clone();
    later[7] = 12;
    assert_eq!(call(&mut k, &[b"RESTORE", b"a", b"0", &later]), refused);
    let mut damaged = payload.clone();
    damaged[3] ^= 1;
    assert_eq!(call(&mut k, &[b"RESTORE", b"a", b"0", &damaged]), refused);
    assert_eq!(call(&mut k, &[b"RESTORE", b"a", b"0", b"short"]), refused);
    // An intact payload whose body is not a value: a string longer than the body.
    let mut body = vec![0u8, 40, b'x'];
    body.extend_from_slice(&10u16.to_le_bytes());
    let crc = crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(call(&mut k, &[b"RESTORE", b"a", b"0", &body]), b"-ERR Bad data format\r\n");
    assert_eq!(call(&mut k, &[b"EXISTS", b"a"]), b":0\r\n");
}

/// CRC-64/Jones, as the payload footer holds it (bitwise, for the test).
fn crc64(data: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &b in data {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0x95ac_9329_ac4b_c9b5 } else { crc >> 1 };
        }
    }
    crc
}

/// MIGRATE from kvik and from redis-server, each to a redis-server target
/// of its own, gives the same replies and leaves the same keys on both
/// sides; what kvik moves digests in the target as redis's own value does.
#[test]
fn migrate_matches_redis_both_ways() {
    let name = "migrate_matches_redis_both_ways";
    let Some(redis) = common::start_redis_with_or_skip(name, &["--enable-debug-command", "yes"]) else { return };
    let targets: Vec<kvik_testkit::Server> = (0..2)
        .map(|_| {
            common::start_redis_with_or_skip(name, &["--enable-debug-command", "yes", "--requirepass", "pw"])
                .expect("redis-server is there")
        })
        .collect();
    let kvik = start_kvik();
    let sources = [(kvik.port, targets[0].port), (redis.port, targets[1].port)];
    let closed = kvik_testkit::free_port();
    let steps: Vec<String> = vec![
        "SET s hello".into(),
        "RPUSH l a b c".into(),
        "HSET h f v".into(),
        "SET t x PX 100000".into(),
        "ZADD z 1 a 2 b".into(),
        "MIGRATE 127.0.0.1 {port} missing 0 1000 AUTH pw".into(),
        "MIGRATE 127.0.0.1 {port} s 0 1000".into(),
        "MIGRATE 127.0.0.1 {port} s 0 1000 AUTH wrong".into(),
        "MIGRATE 127.0.0.1 {port} s 0 1000 AUTH pw".into(),
        "EXISTS s".into(),
        "SET s again".into(),
        "MIGRATE 127.0.0.1 {port} s 0 1000 AUTH pw".into(),
        "MIGRATE 127.0.0.1 {port} s 0 1000 AUTH pw COPY REPLACE".into(),
        "EXISTS s".into(),
        "MIGRATE 127.0.0.1 {port} l 0 1000 AUTH2 default pw KEYS l".into(),
        "MIGRATE 127.0.0.1 {port} \"\" 3 1000 AUTH2 default pw KEYS l h t nosuch z".into(),
        "EXISTS l h t z".into(),
        "MIGRATE 127.0.0.1 {port} s notanumber 1000".into(),
        "MIGRATE 127.0.0.1 {port} s 0 1000 BOGUS".into(),
        "MIGRATE 127.0.0.1 {port} s 0 1000 AUTH".into(),
        format!("MIGRATE 127.0.0.1 {closed} s 0 200"),
    ];
    let mut replies: Vec<Vec<Vec<u8>>> = Vec::new();
    for (source, target) in sources {
        let mut conn = connect(source);
        let mut got = Vec::new();
        for step in &steps {
            let line = step.replace("{port}", &target.to_string());
            let words: Vec<Vec<u8>> =
                line.split(' ').map(|w| if w == "\"\"" { Vec::new() } else { w.as_bytes().to_vec() }).collect();
            let args: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
            got.push(call(&mut conn, &args));
        }
        replies.push(got);
    }
    for (i, step) in steps.iter().enumerate() {
        assert_eq!(
            replies[0][i],
            replies[1][i],
            "{step}: kvik {} redis {}",
            replies[0][i].escape_ascii(),
            replies[1][i].escape_ascii()
        );
    }
    // The targets hold the same data, key by key.
    let (mut a, mut b) = (connect(targets[0].port), connect(targets[1].port));
    for conn in [&mut a, &mut b] {
        assert_eq!(call(conn, &[b"AUTH", b"pw"]), b"+OK\r\n");
    }
    for (db, keys) in [(&b"0"[..], &[&b"s"[..]][..]), (b"3", &[b"l", b"h", b"t", b"z"])] {
        for conn in [&mut a, &mut b] {
            assert_eq!(call(conn, &[b"SELECT", db]), b"+OK\r\n");
        }
        for key in keys {
            let (da, dbb) = (digest(&mut a, key), digest(&mut b, key));
            assert!(da.len() == 47, "{}", da.escape_ascii());
            assert_eq!(da, dbb, "db {} key {}", String::from_utf8_lossy(db), String::from_utf8_lossy(key));
        }
        assert_eq!(call(&mut a, &[b"DBSIZE"]), call(&mut b, &[b"DBSIZE"]));
    }
    // And the other way: redis-server migrates into kvik.
    let mut r = connect(redis.port);
    run_setup(&mut r, &[b"SADD ints 1 2 3".split(|&c| c == b' ').map(<[u8]>::to_vec).collect()]);
    let port = kvik.port.to_string();
    assert_eq!(call(&mut r, &[b"MIGRATE", b"127.0.0.1", port.as_bytes(), b"ints", b"0", b"1000"]), b"+OK\r\n");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"SMEMBERS", b"ints"]), b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n");
    assert_eq!(call(&mut k, &[b"OBJECT", b"ENCODING", b"ints"]), b"$6\r\nintset\r\n");
}
