//! Pub/sub against redis-server: the replies of one client's subscription
//! commands (RESP2 subscribe-mode rules, RESP3 pushes), and what subscribers
//! on other connections receive when someone publishes, byte for byte.

mod common;

use std::io::Write;
use std::net::TcpStream;

use common::diff::*;
use common::*;

fn cases() -> Vec<Case> {
    vec![
        lines(
            "subscribe mode in RESP2",
            &[
                "SUBSCRIBE a b a",
                "PING",
                "PING hello",
                "GET k",
                "SET k v",
                "PUBLISH a x",
                "UNSUBSCRIBE a",
                "PSUBSCRIBE p* q?",
                "UNSUBSCRIBE b",
                "UNSUBSCRIBE",
                "PUNSUBSCRIBE p*",
                "PUNSUBSCRIBE q?",
                "PUNSUBSCRIBE",
                "UNSUBSCRIBE",
                "GET k",
                "PING",
            ],
        ),
        lines(
            "shard channels",
            &[
                "SSUBSCRIBE s1 s2",
                "PING",
                "SUBSCRIBE c",
                "SUNSUBSCRIBE s1",
                "SUNSUBSCRIBE",
                "SUNSUBSCRIBE",
                "UNSUBSCRIBE c",
                "GET k",
            ],
        ),
        lines(
            "RESP3 clients may run anything",
            &[
                "HELLO 3",
                "SUBSCRIBE a",
                "SET k v",
                "GET k",
                "PING",
                "PUBLISH a self",
                "PSUBSCRIBE a*",
                "PUBLISH a both",
                "SPUBLISH a shard",
                "UNSUBSCRIBE",
                "PUNSUBSCRIBE",
                "PING",
            ],
        ),
        lines(
            "introspection",
            &[
                "PUBSUB NUMPAT",
                "PUBSUB NUMSUB",
                "PUBSUB NUMSUB a b",
                "PUBSUB CHANNELS",
                "PUBSUB SHARDCHANNELS",
                "PUBSUB SHARDNUMSUB x",
                "PUBSUB HELP",
                "PUBSUB FOO",
                "PUBLISH nobody msg",
                "SPUBLISH nobody msg",
                "SUBSCRIBE",
                "PUBLISH a",
            ],
        ),
        lines("reset leaves everything", &["SUBSCRIBE a", "PSUBSCRIBE b*", "RESET", "GET k", "PUBSUB NUMPAT"]),
    ]
}

#[test]
fn subscription_replies_match_redis() {
    compare_each("subscription_replies_match_redis", cases());
}

/// Send inline `commands` on `stream` and read until `expected_replies`
/// complete replies arrived.
fn send(stream: &mut TcpStream, commands: &[&str], expected_replies: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    for c in commands {
        bytes.extend_from_slice(c.as_bytes());
        bytes.extend_from_slice(b"\r\n");
    }
    stream.write_all(&bytes).expect("send");
    read_until(stream, |got| count_replies(got) >= expected_replies).bytes
}

/// Complete replies at the start of `buf`.
fn count_replies(mut buf: &[u8]) -> usize {
    let mut n = 0;
    while let Some(len) = reply_len(buf) {
        n += 1;
        buf = &buf[len..];
    }
    n
}

/// Two subscribers (RESP2 and RESP3, by channel and by pattern) and a
/// publisher: everything each one reads, in order.
fn conversation(port: u16) -> Vec<Vec<u8>> {
    let mut plain = connect(port);
    let mut modern = connect(port);
    let mut publisher = connect(port);
    let mut seen = vec![
        send(&mut plain, &["SUBSCRIBE news sport", "PSUBSCRIBE n*"], 3),
        send(&mut modern, &["HELLO 3", "SSUBSCRIBE shard", "PSUBSCRIBE *s"], 3),
        send(&mut publisher, &["PUBLISH news hello", "PUBLISH sport goal", "SPUBLISH shard x", "PUBLISH other y"], 4),
        send(&mut publisher, &["PUBSUB NUMSUB news sport other", "PUBSUB NUMPAT", "PUBSUB SHARDNUMSUB shard"], 3),
    ];
    // news: plain twice (channel and n*), modern once (*s); sport: plain
    // once; shard: modern once; other: nobody.
    seen.push(read_until(&mut plain, |got| count_replies(got) >= 3).bytes);
    seen.push(read_until(&mut modern, |got| count_replies(got) >= 2).bytes);
    seen.push(send(&mut plain, &["UNSUBSCRIBE news", "PUNSUBSCRIBE"], 2));
    seen.push(send(&mut publisher, &["PUBLISH news again", "PUBLISH sport again"], 2));
    seen.push(read_until(&mut plain, |got| count_replies(got) >= 1).bytes);
    drop(plain);
    // A closed subscriber is forgotten once the server sees the close.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let gone = b"*2\r\n$5\r\nsport\r\n:0\r\n";
    while send(&mut publisher, &["PUBSUB NUMSUB sport"], 1) != gone && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    seen.push(send(&mut publisher, &["PUBLISH sport after-close", "PUBSUB NUMSUB sport"], 2));
    seen
}

#[test]
fn messages_reach_other_connections_as_in_redis() {
    let Some(redis) = start_redis_or_skip("messages_reach_other_connections_as_in_redis") else { return };
    let kvik = start_kvik();
    let expected = conversation(redis.port);
    let got = conversation(kvik.port);
    for (i, (e, g)) in expected.iter().zip(&got).enumerate() {
        let (g, e) = (mask_client_id(g), mask_client_id(e));
        assert_eq!(g.escape_ascii().to_string(), e.escape_ascii().to_string(), "step {i}");
    }
}

/// Many publishers on many threads: every message reaches the subscriber
/// once, and those of one publisher arrive in the order it sent them.
#[test]
fn publishers_on_many_threads_deliver_everything_in_order() {
    let kvik = start_kvik_with(&["--threads", "4"]);
    let mut sub = connect(kvik.port);
    send(&mut sub, &["SUBSCRIBE c"], 1);
    let publishers: Vec<_> = (0..4)
        .map(|p| {
            let port = kvik.port;
            std::thread::spawn(move || {
                let mut conn = connect(port);
                for i in 0..200 {
                    call(&mut conn, &[b"PUBLISH", b"c", format!("{p}:{i}").as_bytes()]);
                }
            })
        })
        .collect();
    for p in publishers {
        p.join().expect("publisher");
    }
    let got = read_until(&mut sub, |got| count_replies(got) >= 800).bytes;
    let text = String::from_utf8_lossy(&got);
    let mut next = [0usize; 4];
    for payload in text.split("\r\n").filter(|l| l.contains(':') && !l.starts_with('*') && !l.starts_with('$')) {
        let (p, i) = payload.split_once(':').expect("payload");
        let (p, i): (usize, usize) = (p.parse().expect("publisher"), i.parse().expect("index"));
        assert_eq!(i, next[p], "publisher {p} out of order");
        next[p] += 1;
    }
    assert_eq!(next, [200; 4]);
}

/// CLIENT INFO and CLIENT LIST show a subscriber's counts and the `P` flag,
/// as Redis does, and drop them once it leaves.
#[test]
fn client_list_shows_subscriptions() {
    let kvik = start_kvik();
    let mut conn = connect(kvik.port);
    let info = send(&mut conn, &["HELLO 3", "SUBSCRIBE a b", "SSUBSCRIBE s", "PSUBSCRIBE p*", "CLIENT INFO"], 6);
    let text = String::from_utf8_lossy(&info);
    assert!(text.contains("flags=P db=0 sub=2 psub=1 ssub=1 "), "{text}");
    let info = send(&mut conn, &["RESET", "CLIENT INFO"], 2);
    let text = String::from_utf8_lossy(&info);
    assert!(text.contains("flags=N db=0 sub=0 psub=0 ssub=0 "), "{text}");
}

/// Publish `payload` on `channel` until PUBLISH counts no receiver (at
/// most `most` times); how many publishes counted one.
fn publish_until_none(publisher: &mut TcpStream, channel: &str, payload: &[u8], most: usize) -> usize {
    for n in 0..most {
        let reply = call(publisher, &[b"PUBLISH", channel.as_bytes(), payload]);
        if reply == b":0\r\n" {
            return n;
        }
        assert_eq!(reply, b":1\r\n", "publish {n}");
    }
    panic!("the subscriber still counted after {most} messages");
}

/// A subscriber that stops reading, listening on `channel`: its id.
fn stalled_subscriber(port: u16, channel: &str) -> (TcpStream, i64) {
    let mut sub = connect(port);
    let id = call(&mut sub, &[b"CLIENT", b"ID"]);
    let id: i64 = String::from_utf8_lossy(&id[1..id.len() - 2]).parse().expect("an id");
    sub.write_all(&encode(&["SUBSCRIBE", channel])).expect("subscribe");
    read_until(&mut sub, |got| got.ends_with(b":1\r\n"));
    (sub, id)
}

fn encode(words: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend_from_slice(format!("${}\r\n{w}\r\n", w.len()).as_bytes());
    }
    out
}

#[test]
fn a_subscriber_that_stops_reading_is_cut_off_at_its_limits_and_no_longer_counted() {
    let kvik = start_kvik();
    let mut admin = connect(kvik.port);
    let payload = vec![b'm'; 64 * 1024];
    // The hard limit: once a megabyte waits beyond what the socket took,
    // the subscriber is closed, and PUBLISH stops counting it.
    assert_eq!(call_text(&mut admin, &["CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0"]), b"+OK\r\n");
    let (mut sub, id) = stalled_subscriber(kvik.port, "news");
    let counted = publish_until_none(&mut admin, "news", &payload, 2000);
    assert!(counted >= 16, "at least the limit's worth was taken first: {counted}");
    // Cut off at once; its connection closes as soon as its task wakes.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let listed = String::from_utf8_lossy(&call_text(&mut admin, &["CLIENT", "LIST"])).to_string();
        let numsub = call_text(&mut admin, &["PUBSUB", "NUMSUB", "news"]);
        if !listed.contains(&format!("id={id} ")) && numsub == b"*2\r\n$4\r\nnews\r\n:0\r\n" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still there: {listed} {}", numsub.escape_ascii());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(read_until(&mut sub, |_| false).closed, "the subscriber's connection is closed");
    // The soft limit: above 64 KiB for more than a second.
    let set = "pubsub 0 64kb 1";
    assert_eq!(call_text(&mut admin, &["CONFIG", "SET", "client-output-buffer-limit", set]), b"+OK\r\n");
    let (mut sub, _) = stalled_subscriber(kvik.port, "slow");
    let started = std::time::Instant::now();
    let counted = publish_until_none(&mut admin, "slow", &payload[..1024], 1_000_000);
    assert!(started.elapsed() >= std::time::Duration::from_secs(1), "cut off only after a second: {counted}");
    assert!(read_until(&mut sub, |_| false).closed);
}

/// `CLIENT LIST` and `CLIENT KILL` take a client with subscriptions as
/// type `pubsub`, not `normal`, as Redis does.
#[test]
fn a_subscribed_client_is_of_type_pubsub() {
    let kvik = start_kvik();
    let mut sub = connect(kvik.port);
    send(&mut sub, &["SUBSCRIBE news"], 1);
    let mut other = connect(kvik.port);
    let id_of = |s: &mut TcpStream| {
        String::from_utf8_lossy(&call_text(s, &["CLIENT", "ID"])).trim().trim_start_matches(':').to_string()
    };
    let me = id_of(&mut other);
    let listed = |s: &mut TcpStream, t: &str| {
        String::from_utf8_lossy(&call_text(s, &["CLIENT", "LIST", "TYPE", t])).into_owned()
    };
    let pubsub = listed(&mut other, "pubsub");
    assert_eq!(pubsub.matches("id=").count(), 1, "{pubsub}");
    assert!(pubsub.contains(" flags=P ") && !pubsub.contains(&format!("id={me} ")), "{pubsub}");
    let normal = listed(&mut other, "normal");
    assert!(normal.contains(&format!("id={me} ")) && !normal.contains("flags=P"), "{normal}");
    assert_eq!(call_text(&mut other, &["CLIENT", "KILL", "TYPE", "pubsub"]), b":1\r\n");
}
