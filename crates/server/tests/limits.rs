//! Memory and buffer limits: `maxmemory` with each eviction policy, and
//! clients that send more than they read.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use common::diff::{compare_each, multibulk, open};
use common::{call, connect, start_kvik_with, start_redis_with_or_skip, ServerProcess};

fn set(stream: &mut TcpStream, key: &str, value: &[u8]) -> Vec<u8> {
    call(stream, &[b"SET", key.as_bytes(), value])
}

fn config_set(stream: &mut TcpStream, name: &str, value: &str) {
    assert_eq!(call(stream, &[b"CONFIG", b"SET", name.as_bytes(), value.as_bytes()]), b"+OK\r\n", "{name}");
}

/// How many of `keys` exist.
fn count(stream: &mut TcpStream, keys: impl Iterator<Item = String>) -> usize {
    keys.filter(|k| call(stream, &[b"EXISTS", k.as_bytes()]) == b":1\r\n").count()
}

fn dbsize(stream: &mut TcpStream) -> usize {
    let reply = call(stream, &[b"DBSIZE"]);
    String::from_utf8_lossy(&reply[1..reply.len() - 2]).parse().unwrap_or(usize::MAX)
}

#[test]
fn oom_and_lfu_replies_match_redis() {
    compare_each(
        "oom_and_lfu_replies_match_redis",
        vec![
            open(
                "noeviction refuses commands that may add data",
                "FLUSHALL\r\nCONFIG SET maxmemory-policy noeviction\r\nSET a 1\r\nSET z hello\r\n\
                 CONFIG SET maxmemory 1\r\nSET b 2\r\nGET a\r\nINCR a\r\nAPPEND z x\r\nSETNX n 1\r\n\
                 EXISTS b\r\nSTRLEN z\r\nEXPIRE a 100\r\nDEL z\r\nMSET p 1 q 2\r\nSET a 2 XX\r\n\
                 CONFIG SET maxmemory 0\r\nSET b 2\r\nGET b\r\n",
            ),
            open(
                "OBJECT FREQ and IDLETIME follow the policy",
                "FLUSHALL\r\nSET c hello\r\nOBJECT FREQ c\r\nCONFIG SET maxmemory-policy allkeys-lfu\r\n\
                 SET d hello\r\nOBJECT FREQ d\r\nGET d\r\nOBJECT FREQ d\r\nOBJECT IDLETIME d\r\nOBJECT FREQ nokey\r\n\
                 SET f hello\r\nSET f world\r\nOBJECT FREQ f\r\nSET e hello\r\nCOPY e f REPLACE\r\nOBJECT FREQ f\r\n\
                 CONFIG SET maxmemory-policy volatile-lfu\r\nOBJECT FREQ d\r\n\
                 CONFIG SET maxmemory-policy allkeys-lru\r\nOBJECT FREQ d\r\n\
                 CONFIG SET maxmemory-policy noeviction\r\n",
            )
            .in_one_second(),
            open(
                "each policy refuses the reading it does not keep",
                "FLUSHALL\r\n\
                 CONFIG SET maxmemory-policy volatile-lru\r\nSET k0 v\r\nOBJECT IDLETIME k0\r\nOBJECT FREQ k0\r\n\
                 CONFIG SET maxmemory-policy volatile-lfu\r\nSET k1 v\r\nOBJECT IDLETIME k1\r\nOBJECT FREQ k1\r\n\
                 CONFIG SET maxmemory-policy volatile-random\r\nSET k2 v\r\nOBJECT IDLETIME k2\r\nOBJECT FREQ k2\r\n\
                 CONFIG SET maxmemory-policy volatile-ttl\r\nSET k3 v\r\nOBJECT IDLETIME k3\r\nOBJECT FREQ k3\r\n\
                 CONFIG SET maxmemory-policy allkeys-lru\r\nSET k4 v\r\nOBJECT IDLETIME k4\r\nOBJECT FREQ k4\r\n\
                 CONFIG SET maxmemory-policy allkeys-lfu\r\nSET k5 v\r\nOBJECT IDLETIME k5\r\nOBJECT FREQ k5\r\n\
                 CONFIG SET maxmemory-policy allkeys-random\r\nSET k6 v\r\nOBJECT IDLETIME k6\r\nOBJECT FREQ k6\r\n\
                 CONFIG SET maxmemory-policy noeviction\r\nSET k7 v\r\nOBJECT IDLETIME k7\r\nOBJECT FREQ k7\r\n\
                 CONFIG SET maxmemory-policy noeviction\r\n",
            )
            .in_one_second(),
            open(
                "client-output-buffer-limit takes Redis's syntax and errors",
                "CONFIG GET client-output-buffer-limit\r\n\
                 CONFIG SET client-output-buffer-limit \"normal 1mb 2mb 3 replica 1k 2kb 0\"\r\n\
                 CONFIG GET client-output-buffer-limit\r\n\
                 CONFIG SET client-output-buffer-limit \"normal 1mb 2mb\"\r\n\
                 CONFIG SET client-output-buffer-limit \"master 1 2 3\"\r\n\
                 CONFIG SET client-output-buffer-limit \"normal x 2 3\"\r\n\
                 CONFIG SET client-output-buffer-limit \"normal 1 2 -3\"\r\n\
                 CONFIG SET client-output-buffer-limit \"\"\r\n\
                 CONFIG SET client-output-buffer-limit \"PubSub 5 6 7\"\r\n\
                 CONFIG GET client-output-buffer-limit\r\n\
                 CONFIG SET client-output-buffer-limit \"normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60\"\r\n",
            ),
        ],
    );
}

#[test]
fn eviction_keeps_writes_working_under_the_limit() {
    let kvik = start_kvik_with(&["--maxmemory", "1mb", "--maxmemory-policy", "allkeys-random"]);
    let mut c = connect(kvik.port);
    let value = vec![b'v'; 1000];
    for i in 0..5000 {
        assert_eq!(set(&mut c, &format!("k:{i}"), &value), b"+OK\r\n", "write {i}");
    }
    let left = dbsize(&mut c);
    // About 1040 bytes per key are charged, so 1 MiB holds some 1000 keys.
    assert!((500..=1050).contains(&left), "{left} keys left");
}

/// The field `name` of an `INFO section` reply.
fn info_field(stream: &mut TcpStream, section: &str, name: &str) -> String {
    let reply = call(stream, &[b"INFO", section.as_bytes()]);
    let text = String::from_utf8_lossy(&reply).into_owned();
    let prefix = format!("{name}:");
    text.split("\r\n").find_map(|l| l.strip_prefix(&prefix)).map(str::to_string).unwrap_or_default()
}

/// The fields of one `INFO` reply, by name.
fn info_fields(stream: &mut TcpStream, sections: &[&str]) -> std::collections::HashMap<String, String> {
    let mut args: Vec<&[u8]> = vec![b"INFO"];
    args.extend(sections.iter().map(|s| s.as_bytes()));
    let reply = String::from_utf8_lossy(&call(stream, &args)).into_owned();
    reply.split("\r\n").filter_map(|l| l.split_once(':')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The number in field `name` of `fields`.
fn number(fields: &std::collections::HashMap<String, String>, name: &str) -> usize {
    fields.get(name).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no number {name}: {fields:?}"))
}

#[test]
fn info_and_memory_commands_report_the_estimate_maxmemory_is_checked_against() {
    let kvik = start_kvik_with(&["--maxmemory", "200000", "--maxmemory-policy", "allkeys-lru"]);
    let mut c = connect(kvik.port);
    let value = vec![b'v'; 1000];
    for i in 0..1000 {
        assert_eq!(set(&mut c, &format!("k:{i}"), &value), b"+OK\r\n", "write {i}");
    }
    assert_eq!(info_field(&mut c, "memory", "maxmemory"), "200000");
    assert_eq!(info_field(&mut c, "memory", "maxmemory_policy"), "allkeys-lru");
    // Read together: a client's buffers growing between two commands may
    // make the second one evict another key.
    let info = info_fields(&mut c, &["stats", "keyspace", "memory"]);
    let evicted = number(&info, "evicted_keys");
    let left: usize =
        info.get("db0").and_then(|v| v.strip_prefix("keys=")?.split(',').next()?.parse().ok()).unwrap_or(0);
    assert_eq!(evicted + left, 1000, "every key is either kept or counted as evicted");
    let dataset = number(&info, "used_memory_dataset");
    let clients = number(&info, "mem_clients_normal");
    let used = number(&info, "used_memory");
    assert!(clients >= 16 * 1024, "this client's read buffer is counted: {clients}");
    // One measure for INFO and for eviction: the data and the client
    // buffers, and it never stays above maxmemory.
    assert_eq!(used, dataset + clients);
    assert!(used <= 200_000, "used_memory {used} over maxmemory");
    // MEMORY USAGE of every key adds up to the data estimate. With the
    // limit lifted first: this client's buffers, growing with the replies it
    // gets, would otherwise make a command evict a key between the readings.
    config_set(&mut c, "maxmemory", "0");
    let dataset = number(&info_fields(&mut c, &["memory"]), "used_memory_dataset");
    let mut sum = 0;
    for i in 0..1000 {
        let reply = call(&mut c, &[b"MEMORY", b"USAGE", format!("k:{i}").as_bytes()]);
        if let Some(n) = reply.strip_prefix(b":") {
            sum += String::from_utf8_lossy(&n[..n.len() - 2]).parse::<usize>().unwrap_or(0);
        }
    }
    assert_eq!(sum, dataset);
    let stats = String::from_utf8_lossy(&call(&mut c, &[b"MEMORY", b"STATS"])).into_owned();
    let expected = format!("$13\r\ndataset.bytes\r\n:{dataset}\r\n");
    assert!(stats.contains(&expected), "MEMORY STATS: {stats}");
    // total.allocated is used_memory: the data and clients.normal.
    let field = |name: &str| -> usize {
        let at = stats.find(&format!("\r\n{name}\r\n:")).unwrap_or_else(|| panic!("no {name}: {stats}"));
        let rest = &stats[at + name.len() + 5..];
        rest[..rest.find("\r\n").unwrap_or(0)].parse().unwrap_or_else(|_| panic!("{name}: {stats}"))
    };
    assert!(field("clients.normal") >= 16 * 1024, "{stats}");
    assert_eq!(field("total.allocated"), field("dataset.bytes") + field("clients.normal"), "{stats}");
}

#[test]
fn volatile_policies_evict_only_keys_with_a_ttl_then_refuse() {
    for policy in ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"] {
        let kvik = start_kvik_with(&["--maxmemory", "1mb", "--maxmemory-policy", policy]);
        let mut c = connect(kvik.port);
        let value = vec![b'p'; 1000];
        for i in 0..300 {
            assert_eq!(set(&mut c, &format!("keep:{i}"), &value), b"+OK\r\n");
        }
        for i in 0..2000 {
            let key = format!("tmp:{i}");
            let reply = call(&mut c, &[b"SET", key.as_bytes(), &value, b"EX", b"1000"]);
            assert_eq!(reply, b"+OK\r\n", "{policy}: volatile write {i}");
        }
        assert_eq!(count(&mut c, (0..300).map(|i| format!("keep:{i}"))), 300, "{policy}: a key without TTL went");
        // Once nothing with a TTL is left, writes are refused.
        let mut refused = None;
        for i in 0..2000 {
            let reply = set(&mut c, &format!("more:{i}"), &value);
            if reply != b"+OK\r\n" {
                refused = Some(reply);
                break;
            }
        }
        assert_eq!(refused.as_deref(), Some(&b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"[..]));
        assert_eq!(count(&mut c, (0..2000).map(|i| format!("tmp:{i}"))), 0, "{policy}");
        assert_eq!(call(&mut c, &[b"GET", b"keep:0"]).len(), 1000 + 9, "{policy}: reads still work");
        assert_eq!(call(&mut c, &[b"DEL", b"keep:0"]), b":1\r\n", "{policy}: deletes still work");
    }
}

#[test]
fn volatile_ttl_evicts_the_soonest_deadlines_first() {
    let kvik = start_kvik_with(&["--maxmemory-policy", "volatile-ttl"]);
    let mut c = connect(kvik.port);
    let value = vec![b't'; 1000];
    for i in 0..1000 {
        let key = format!("t:{i}");
        let ttl = (10_000 + i).to_string();
        assert_eq!(call(&mut c, &[b"SET", key.as_bytes(), &value, b"EX", ttl.as_bytes()]), b"+OK\r\n");
    }
    // About half the keys fit.
    config_set(&mut c, "maxmemory", "600000");
    let survivors: Vec<usize> =
        (0..1000).filter(|i| call(&mut c, &[b"EXISTS", format!("t:{i}").as_bytes()]) == b":1\r\n").collect();
    assert!((300..700).contains(&survivors.len()), "{} left", survivors.len());
    let early = survivors.iter().filter(|&&i| i < 300).count();
    assert!(early <= 5, "{early} of the 300 soonest keys survived");
}

#[test]
fn allkeys_lru_prefers_keys_not_used_lately() {
    let kvik = start_kvik_with(&["--maxmemory", "1000000", "--maxmemory-policy", "allkeys-lru"]);
    let mut c = connect(kvik.port);
    let value = vec![b'o'; 1000];
    for i in 0..800 {
        assert_eq!(set(&mut c, &format!("old:{i}"), &value), b"+OK\r\n");
    }
    // Access times have a resolution of one second.
    thread::sleep(Duration::from_millis(2100));
    for i in 0..800 {
        assert_eq!(set(&mut c, &format!("new:{i}"), &value), b"+OK\r\n");
    }
    let new = count(&mut c, (0..800).map(|i| format!("new:{i}")));
    let old = count(&mut c, (0..800).map(|i| format!("old:{i}")));
    assert!(new >= 720, "only {new} recent keys kept ({old} old ones)");
    assert!(old < new / 2, "{old} old keys kept against {new} recent ones");
}

#[test]
fn allkeys_lfu_prefers_keys_used_rarely() {
    let kvik = start_kvik_with(&["--maxmemory-policy", "allkeys-lfu"]);
    let mut c = connect(kvik.port);
    let value = vec![b'f'; 1000];
    for i in 0..600 {
        assert_eq!(set(&mut c, &format!("f:{i}"), &value), b"+OK\r\n");
    }
    // Keys below 200 are read often; the rest never. Read by a client of
    // its own, whose megabytes of reply buffer leave with it before the
    // limit is set (client buffers count against maxmemory).
    let mut batch = Vec::new();
    for _ in 0..20 {
        for i in 0..200 {
            batch.extend_from_slice(&multibulk(&[b"GET", format!("f:{i}").as_bytes()]));
        }
    }
    let mut reader = connect(kvik.port);
    reader.write_all(&batch).expect("send reads");
    let expected = 20 * 200 * (1000 + 9);
    let mut got = 0;
    let mut chunk = vec![0u8; 1 << 16];
    while got < expected {
        let n = reader.read(&mut chunk).expect("read replies");
        assert!(n > 0, "closed");
        got += n;
    }
    drop(reader);
    let deadline = Instant::now() + Duration::from_secs(5);
    while info_field(&mut c, "memory", "mem_clients_normal").parse::<usize>().unwrap_or(0) > 100_000 {
        assert!(Instant::now() < deadline, "the reader's buffers stayed counted");
        thread::sleep(Duration::from_millis(20));
    }
    config_set(&mut c, "maxmemory", "400000");
    let hot = count(&mut c, (0..200).map(|i| format!("f:{i}")));
    let cold = count(&mut c, (200..600).map(|i| format!("f:{i}")));
    assert!(hot >= 190, "{hot} of 200 frequently read keys kept ({cold} cold)");
}

#[test]
fn restore_applies_freq_under_lfu_and_idletime_otherwise() {
    let kvik = start_kvik_with(&["--maxmemory-policy", "allkeys-lfu"]);
    let mut c = connect(kvik.port);
    assert_eq!(set(&mut c, "k", b"hello"), b"+OK\r\n");
    let dump = call(&mut c, &[b"DUMP", b"k"]);
    let header = dump.windows(2).position(|w| w == b"\r\n").expect("bulk header") + 2;
    let payload = &dump[header..dump.len() - 2];
    let restore =
        |c: &mut TcpStream, key: &[u8], opt: &[u8], n: &[u8]| call(c, &[b"RESTORE", key, b"0", payload, opt, n]);
    assert_eq!(restore(&mut c, b"f", b"FREQ", b"100"), b"+OK\r\n");
    assert_eq!(call(&mut c, &[b"OBJECT", b"FREQ", b"f"]), b":100\r\n");
    assert_eq!(restore(&mut c, b"i", b"IDLETIME", b"1000"), b"+OK\r\n");
    assert_eq!(call(&mut c, &[b"OBJECT", b"FREQ", b"i"]), b":5\r\n");
    config_set(&mut c, "maxmemory-policy", "allkeys-lru");
    assert_eq!(restore(&mut c, b"j", b"IDLETIME", b"1000"), b"+OK\r\n");
    assert_eq!(call(&mut c, &[b"OBJECT", b"IDLETIME", b"j"]), b":1000\r\n");
}

/// The integer of a `:n` reply.
fn integer(reply: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(reply);
    text.trim().strip_prefix(':').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("not an integer: {text}"))
}

/// The readings of one key's access clock after policy switches: FREQ of
/// bits written as the LRU time, IDLETIME of bits written as LFU data.
fn switched_readings(port: u16, payload: &[u8]) -> (i64, i64) {
    let mut c = connect(port);
    call(&mut c, &[b"FLUSHALL"]);
    config_set(&mut c, "lfu-decay-time", "0");
    config_set(&mut c, "maxmemory-policy", "allkeys-lru");
    assert_eq!(set(&mut c, "lru", b"v"), b"+OK\r\n");
    config_set(&mut c, "maxmemory-policy", "allkeys-lfu");
    let freq = integer(&call(&mut c, &[b"OBJECT", b"FREQ", b"lru"]));
    assert_eq!(call(&mut c, &[b"RESTORE", b"lfu", b"0", payload, b"FREQ", b"100"]), b"+OK\r\n");
    config_set(&mut c, "maxmemory-policy", "allkeys-lru");
    let idle = integer(&call(&mut c, &[b"OBJECT", b"IDLETIME", b"lfu"]));
    config_set(&mut c, "maxmemory-policy", "noeviction");
    (freq, idle)
}

/// After a policy switch, kvik reads the bits written under the old policy
/// the new way, as Redis does: compared with Redis within the seconds the
/// two runs may lie apart (the readings depend on the clock).
#[test]
fn policy_switches_reinterpret_the_access_clock_as_redis_does() {
    let Some(redis) = start_redis_with_or_skip("policy_switches_reinterpret_the_access_clock_as_redis_does", &[])
    else {
        return;
    };
    let kvik = start_kvik_with(&[]);
    // A DUMP payload of each server's own format for the same string.
    let payload = |port: u16| {
        let mut c = connect(port);
        set(&mut c, "src", b"hello");
        let dump = call(&mut c, &[b"DUMP", b"src"]);
        let header = dump.windows(2).position(|w| w == b"\r\n").expect("bulk header") + 2;
        dump[header..dump.len() - 2].to_vec()
    };
    let (kvik_payload, redis_payload) = (payload(kvik.port), payload(redis.port));
    let kvik_read = switched_readings(kvik.port, &kvik_payload);
    let redis_read = switched_readings(redis.port, &redis_payload);
    // FREQ is the low 8 bits of the seconds clock at the SET.
    let freq_gap = (kvik_read.0 - redis_read.0).rem_euclid(256).min((redis_read.0 - kvik_read.0).rem_euclid(256));
    assert!(freq_gap <= 3, "FREQ of LRU bits: kvik {kvik_read:?}, redis {redis_read:?}");
    // IDLETIME reads minutes and counter as seconds, which moves with the
    // clock; far from a wrap the two agree within the seconds between runs.
    let idle_gap = (kvik_read.1 - redis_read.1).abs();
    assert!(
        idle_gap <= 3 || idle_gap >= (1 << 24) - 4,
        "IDLETIME of LFU bits: kvik {kvik_read:?}, redis {redis_read:?}"
    );
}

/// Resident memory of `server` in KiB (Linux).
fn rss_kib(server: &ServerProcess) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A pipeline of `n` GETs of `key`.
fn gets(key: &[u8], n: usize) -> Vec<u8> {
    let one = multibulk(&[b"GET", key]);
    one.repeat(n)
}

#[test]
fn a_client_that_never_reads_costs_bounded_memory_and_others_keep_working() {
    let kvik = start_kvik_with(&[]);
    let mut c = connect(kvik.port);
    assert_eq!(set(&mut c, "big", &vec![b'b'; 1 << 20]), b"+OK\r\n");
    let before = rss_kib(&kvik);
    // 300 MiB of replies asked for, none read.
    let mut greedy = connect(kvik.port);
    greedy.write_all(&gets(b"big", 300)).expect("send pipeline");
    thread::sleep(Duration::from_millis(500));
    if let (Some(before), Some(after)) = (before, rss_kib(&kvik)) {
        assert!(after < before + 64 * 1024, "server grew from {before} KiB to {after} KiB");
    }
    assert_eq!(call(&mut c, &[b"PING"]), b"+PONG\r\n");
    assert_eq!(call(&mut c, &[b"STRLEN", b"big"]), b":1048576\r\n");
    drop(greedy);
}

#[test]
fn output_over_the_hard_limit_closes_the_client() {
    let kvik = start_kvik_with(&["--client-output-buffer-limit", "normal", "1mb", "0", "0"]);
    let mut c = connect(kvik.port);
    assert_eq!(set(&mut c, "v", &vec![b'x'; 100_000]), b"+OK\r\n");
    // One reply under the limit is fine.
    assert_eq!(call(&mut c, &[b"GET", b"v"]).len(), 100_000 + 11);
    let mut greedy = connect(kvik.port);
    greedy.write_all(&gets(b"v", 200)).expect("send pipeline");
    let started = Instant::now();
    let mut received = 0;
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        match greedy.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => received += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("not closed after {:?}: {e}", started.elapsed()),
        }
    }
    assert!(received < 200 * 100_000, "the whole pipeline was answered");
    assert_eq!(call(&mut c, &[b"PING"]), b"+PONG\r\n");
}

#[test]
fn a_reader_stuck_above_the_soft_limit_is_closed() {
    let kvik = start_kvik_with(&["--client-output-buffer-limit", "normal", "0", "64kb", "1"]);
    let mut c = connect(kvik.port);
    assert_eq!(set(&mut c, "v", &vec![b'x'; 1 << 20]), b"+OK\r\n");
    let mut greedy = connect(kvik.port);
    greedy.write_all(&gets(b"v", 64)).expect("send pipeline");
    thread::sleep(Duration::from_millis(2500));
    // The server gave up on it: reading what was sent ends with a close.
    let mut chunk = vec![0u8; 1 << 16];
    let mut received = 0usize;
    loop {
        match greedy.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => received += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("still open after {received} bytes: {e}"),
        }
    }
    assert!(received < 64 << 20);
    assert_eq!(call(&mut c, &[b"PING"]), b"+PONG\r\n");
}

#[test]
fn a_client_that_takes_nothing_for_timeout_seconds_is_closed() {
    let kvik = start_kvik_with(&["--timeout", "1"]);
    let mut c = connect(kvik.port);
    assert_eq!(set(&mut c, "v", &vec![b'x'; 1 << 20]), b"+OK\r\n");
    let mut greedy = connect(kvik.port);
    greedy.write_all(&gets(b"v", 64)).expect("send pipeline");
    thread::sleep(Duration::from_millis(2500));
    let mut chunk = vec![0u8; 1 << 16];
    let mut received = 0usize;
    loop {
        match greedy.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => received += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("still open after {received} bytes: {e}"),
        }
    }
    assert!(received < 64 << 20);
    // `c` was idle as long, so it is gone too; a new client is served.
    let mut fresh = connect(kvik.port);
    assert_eq!(call(&mut fresh, &[b"PING"]), b"+PONG\r\n");
}

/// Resident set size of process `pid`, in bytes, from `/proc`.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmRSS line");
    kib * 1024
}

/// Load `KEYS` small keys into `server`; the resident size before and after.
fn load_small_keys(server: &ServerProcess, stream: &mut TcpStream) -> (u64, u64) {
    let baseline = rss_bytes(server.pid());
    let value = vec![b'v'; 100];
    let mut batch = Vec::new();
    for chunk in 0..KEYS / 1000 {
        batch.clear();
        for i in chunk * 1000..(chunk + 1) * 1000 {
            batch.extend_from_slice(&multibulk(&[b"SET", format!("purge:{i}").as_bytes(), &value]));
        }
        stream.write_all(&batch).expect("send a batch");
        let answer = common::read_until(stream, |got| got.len() >= 1000 * 5);
        assert_eq!(answer.bytes.len(), 1000 * 5, "{}", answer.show());
    }
    assert_eq!(dbsize(stream), KEYS);
    let loaded = rss_bytes(server.pid());
    assert!(loaded > baseline + 20 * 1024 * 1024, "loading {KEYS} keys took {baseline} -> {loaded} bytes");
    (baseline, loaded)
}

const KEYS: usize = 200_000;

#[test]
fn flushed_memory_goes_back_by_itself_and_with_memory_purge() {
    // Small blocks freed by FLUSHALL stay in the allocator's arenas until
    // they are returned: without that most of the loaded memory would stay
    // resident. The server returns them within a few seconds by itself.
    let server = start_kvik_with(&["--threads", "2"]);
    let mut stream = connect(server.port);
    let (baseline, loaded) = load_small_keys(&server, &mut stream);
    assert_eq!(call(&mut stream, &[b"FLUSHALL"]), b"+OK\r\n");
    let deadline = Instant::now() + Duration::from_secs(4);
    let returned = |residual: u64| residual - baseline.min(residual) < (loaded - baseline) / 5;
    loop {
        let residual = rss_bytes(server.pid());
        if returned(residual) {
            break;
        }
        assert!(Instant::now() < deadline, "baseline {baseline}, loaded {loaded}, 4 s after FLUSHALL {residual}");
        thread::sleep(Duration::from_millis(100));
    }
    // MEMORY PURGE returns them at once.
    let (baseline, loaded) = load_small_keys(&server, &mut stream);
    assert_eq!(call(&mut stream, &[b"FLUSHALL"]), b"+OK\r\n");
    assert_eq!(call(&mut stream, &[b"MEMORY", b"PURGE"]), b"+OK\r\n");
    let residual = rss_bytes(server.pid());
    assert!(
        residual - baseline.min(residual) < (loaded - baseline) / 5,
        "baseline {baseline}, loaded {loaded}, after FLUSHALL + MEMORY PURGE {residual}"
    );
}

/// MEMORY DOCTOR reports what kvik measures (its data against the process's
/// resident memory) once there is data to speak of, not a verdict resting on
/// allocator statistics it does not have.
#[test]
fn memory_doctor_reports_what_kvik_measures() {
    let server = start_kvik_with(&[]);
    let mut c = connect(server.port);
    let empty = String::from_utf8_lossy(&call(&mut c, &[b"MEMORY", b"DOCTOR"])).into_owned();
    assert!(empty.contains("this instance is empty or is using very little memory"), "{empty}");
    let value = vec![b'x'; 1024 * 1024];
    for i in 0..6 {
        assert_eq!(set(&mut c, &format!("big:{i}"), &value), b"+OK\r\n");
    }
    let report = String::from_utf8_lossy(&call(&mut c, &[b"MEMORY", b"DOCTOR"])).into_owned();
    assert!(report.contains("I can only compare the data (6.00"), "{report}");
    assert!(report.contains("times as much"), "{report}");
    assert!(!report.contains("can't find any memory issue"), "{report}");
}

/// The `CLIENT LIST` fields of client `id`, as `watcher` sees them.
fn client_fields(watcher: &mut TcpStream, id: i64) -> std::collections::HashMap<String, String> {
    let reply = call(watcher, &[b"CLIENT", b"LIST", b"ID", id.to_string().as_bytes()]);
    let text = String::from_utf8_lossy(&reply).into_owned();
    let line = text.lines().find(|l| l.starts_with("id=")).unwrap_or_else(|| panic!("client {id} not listed: {text}"));
    line.split(' ').filter_map(|f| f.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Poll `what` (a reading taken through `read`) until `test` holds, for at
/// most five seconds: connections publish their buffers when they wait,
/// and Redis updates its client memory in its cron.
fn wait_for<T: std::fmt::Debug>(what: &str, mut read: impl FnMut() -> T, test: impl Fn(&T) -> bool) -> T {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let reading = read();
        if test(&reading) {
            return reading;
        }
        assert!(Instant::now() < deadline, "{what}: {reading:?}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// Send all of a `SET key` of `total` bytes but the last `total - sent`
/// (and the final CRLF), so that the server holds the part sent.
fn send_partial_set(stream: &mut TcpStream, key: &str, total: usize, sent: usize) {
    let header = format!("*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${total}\r\n", key.len());
    stream.write_all(header.as_bytes()).expect("send header");
    stream.write_all(&vec![b'p'; sent]).expect("send the first part");
}

/// The buffer fields of `CLIENT LIST` and `mem_clients_normal` on `server`:
/// a client's partly sent request shows as `qbuf` from another connection
/// and counts in `tot-mem` and in `mem_clients_normal`; `qbuf` is 0 again
/// once the request ran, and the client's bytes leave the sum with it.
fn partial_request_is_measured(server: &ServerProcess) {
    const VALUE: usize = 1 << 20;
    const SENT: usize = 300_000;
    let label = server.label;
    let mut watcher = connect(server.port);
    let mut sender = connect(server.port);
    // A client's own CLIENT INFO shows its request in the query buffer and
    // the bytes of its arguments ("CLIENT" and "INFO"), in Redis as in kvik.
    let own = String::from_utf8_lossy(&call(&mut sender, &[b"CLIENT", b"INFO"])).into_owned();
    assert!(own.contains(" qbuf=26 ") && own.contains(" argv-mem=10 "), "{label}: {own}");
    let id = integer(&call(&mut sender, &[b"CLIENT", b"ID"]));
    send_partial_set(&mut sender, "partial", VALUE, SENT);
    let number_of = |f: &std::collections::HashMap<String, String>, name: &str| -> usize {
        f.get(name).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{label}: no {name} in {f:?}"))
    };
    let fields = wait_for(
        &format!("{label}: the part sent in qbuf"),
        || client_fields(&mut watcher, id),
        |f| number_of(f, "qbuf") >= SENT,
    );
    assert!(number_of(&fields, "tot-mem") > number_of(&fields, "qbuf"), "{label}: {fields:?}");
    let holding = wait_for(
        &format!("{label}: mem_clients_normal with the part sent"),
        || number(&info_fields(&mut watcher, &["memory"]), "mem_clients_normal"),
        |&n| n >= SENT,
    );
    sender.write_all(&vec![b'p'; VALUE - SENT]).expect("send the rest");
    sender.write_all(b"\r\n").expect("send the end");
    assert_eq!(common::read_until(&mut sender, common::reply_complete).bytes, b"+OK\r\n", "{label}");
    let fields = wait_for(
        &format!("{label}: qbuf back to 0 once the request ran"),
        || client_fields(&mut watcher, id),
        |f| number_of(f, "qbuf") == 0,
    );
    assert_eq!(number_of(&fields, "argv-mem"), 0, "{label}: no command runs: {fields:?}");
    drop(sender);
    wait_for(
        &format!("{label}: mem_clients_normal without the client (was {holding})"),
        || number(&info_fields(&mut watcher, &["memory"]), "mem_clients_normal"),
        |&n| n + SENT <= holding,
    );
}

#[test]
fn client_buffers_are_measured_in_client_list_and_mem_clients_normal() {
    let kvik = start_kvik_with(&[]);
    partial_request_is_measured(&kvik);
    // kvik's used_memory is the data and the client buffers, exactly.
    let mut c = connect(kvik.port);
    assert_eq!(set(&mut c, "k", &[b'v'; 5000]), b"+OK\r\n");
    let info = info_fields(&mut c, &["memory"]);
    let (used, dataset, clients) =
        (number(&info, "used_memory"), number(&info, "used_memory_dataset"), number(&info, "mem_clients_normal"));
    assert_eq!(used, dataset + clients, "{info:?}");
    assert!(dataset >= 5000 && clients > 0, "{info:?}");
    // The same scenario holds for Redis, whose fields these are.
    let Some(redis) =
        start_redis_with_or_skip("client_buffers_are_measured_in_client_list_and_mem_clients_normal", &[])
    else {
        return;
    };
    partial_request_is_measured(&redis);
}

/// `used_memory` counts the client buffers and eviction makes room for
/// them: after any command, used_memory is within maxmemory, until the
/// buffers alone pass it; then every key goes and writes are refused, as
/// in Redis, until the client holding them leaves.
fn client_buffers_make_room_by_eviction(server: &ServerProcess) {
    const LIMIT: usize = 6 << 20;
    let label = server.label;
    let mut c = connect(server.port);
    config_set(&mut c, "maxmemory-policy", "allkeys-lru");
    config_set(&mut c, "maxmemory", &LIMIT.to_string());
    let value = vec![b'v'; 1000];
    // About 5.5 MB of data: the limit is near, or reached in Redis, whose
    // own startup memory counts too.
    for i in 0..5300 {
        assert_eq!(set(&mut c, &format!("k:{i}"), &value), b"+OK\r\n", "{label}: write {i}");
    }
    // Redis's INFO counts the allocations of the INFO reply it is writing,
    // made after eviction ran, so it reads a little over; kvik's reads what
    // eviction saw (a connection publishes its buffers only when it waits).
    let slack = if label == "redis" { 64 << 10 } else { 0 };
    let within = |c: &mut TcpStream, when: &str| {
        let info = info_fields(c, &["memory", "stats"]);
        let used = number(&info, "used_memory");
        assert!(used <= LIMIT + slack, "{label}, {when}: used_memory {used} over maxmemory {LIMIT}: {info:?}");
        info
    };
    within(&mut c, "after the writes");
    // A client holding most of a 1 MB request: keys make room for it.
    let evicted_before = number(&info_fields(&mut c, &["stats"]), "evicted_keys");
    let mut holder = connect(server.port);
    send_partial_set(&mut holder, "held", 1 << 20, 900 << 10);
    wait_for(
        &format!("{label}: the held request counted"),
        || number(&info_fields(&mut c, &["memory"]), "mem_clients_normal"),
        |&n| n >= 900 << 10,
    );
    for i in 0..20 {
        assert_eq!(set(&mut c, &format!("more:{i}"), &value), b"+OK\r\n", "{label}: write {i} beside the holder");
        within(&mut c, &format!("write {i} beside the holder"));
    }
    let info = within(&mut c, "beside the holder");
    assert!(number(&info, "evicted_keys") > evicted_before, "{label}: keys made room: {info:?}");
    // A second one, larger than the limit: the buffers alone pass it.
    let mut second = connect(server.port);
    send_partial_set(&mut second, "held2", 8 << 20, 6656 << 10);
    wait_for(
        &format!("{label}: both held requests counted"),
        || number(&info_fields(&mut c, &["memory"]), "mem_clients_normal"),
        |&n| n > LIMIT,
    );
    let oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    assert_eq!(set(&mut c, "refused", &value), oom, "{label}");
    assert_eq!(dbsize(&mut c), 0, "{label}: every key was evicted");
    assert_eq!(call(&mut c, &[b"GET", b"k:1"]), b"$-1\r\n", "{label}: reads still run");
    drop(second);
    drop(holder);
    wait_for(
        &format!("{label}: writes again once the holders left"),
        || set(&mut c, "again", &value),
        |reply| reply == b"+OK\r\n",
    );
    within(&mut c, "after the holders left");
}

#[test]
fn eviction_makes_room_for_client_buffers_as_redis_does() {
    let kvik = start_kvik_with(&[]);
    client_buffers_make_room_by_eviction(&kvik);
    let Some(redis) = start_redis_with_or_skip("eviction_makes_room_for_client_buffers_as_redis_does", &[]) else {
        return;
    };
    client_buffers_make_room_by_eviction(&redis);
}

/// `avg_ttl` is the mean time left to the deadlines of the keys that have
/// one, and the expiry cycle's time is counted once it has work.
#[test]
fn keyspace_avg_ttl_and_expiry_cycle_time_are_measured() {
    let server = start_kvik_with(&[]);
    let mut c = connect(server.port);
    for (key, secs) in [("a", "100"), ("b", "300"), ("c", "")] {
        let mut args: Vec<&[u8]> = vec![b"SET", key.as_bytes(), b"v"];
        if !secs.is_empty() {
            args.extend([&b"EX"[..], secs.as_bytes()]);
        }
        assert_eq!(call(&mut c, &args), b"+OK\r\n");
    }
    let keyspace = String::from_utf8_lossy(&call(&mut c, &[b"INFO", b"keyspace"])).into_owned();
    let avg: i64 = keyspace.split("avg_ttl=").nth(1).and_then(|v| v.trim().parse().ok()).unwrap_or(-1);
    assert!((195_000..=200_000).contains(&avg), "{keyspace}");
    // 50,000 keys that expire at once keep the cycle busy for a while.
    let mut batch = Vec::new();
    for i in 0..50_000 {
        batch.extend_from_slice(&multibulk(&[b"SET", format!("e:{i}").as_bytes(), b"v", b"PX", b"1"]));
    }
    c.write_all(&batch).expect("send");
    let answer = common::read_until(&mut c, |got| got.len() >= 50_000 * 5);
    assert_eq!(answer.bytes.len(), 50_000 * 5);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let stats = String::from_utf8_lossy(&call(&mut c, &[b"INFO", b"stats"])).into_owned();
        let field = |name: &str| -> u64 {
            stats.split(&format!("\r\n{name}:")).nth(1).and_then(|v| v.split("\r\n").next()?.parse().ok()).unwrap_or(0)
        };
        if field("expired_keys") >= 50_000 && field("expire_cycle_cpu_milliseconds") > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the cycle's time stayed 0: {stats}");
        thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_reply_of_picks_that_could_not_be_sent_is_refused_at_once() {
    let kvik = start_kvik_with(&[]);
    let mut s = connect(kvik.port);
    call(&mut s, &[b"SADD", b"s", b"a", b"b", b"c"]);
    call(&mut s, &[b"HSET", b"h", b"f", b"v", b"g", b"w"]);
    call(&mut s, &[b"ZADD", b"z", b"1", b"a", b"2", b"b"]);
    call(&mut s, &[b"SET", b"str", b"x"]);
    // Past the hard output limit: refused with the limit named, where the
    // whole reply used to be built and the client then closed.
    config_set(&mut s, "client-output-buffer-limit", "normal 1mb 1mb 0");
    let refused = call(&mut s, &[b"SRANDMEMBER", b"s", b"-1000000"]);
    assert_eq!(
        String::from_utf8_lossy(&refused),
        "-ERR reply too large: 1000000 elements need at least 4000000 bytes, more than the 1048576 bytes that \
         client-output-buffer-limit allows\r\n"
    );
    for (command, elements) in [
        (&[&b"HRANDFIELD"[..], b"h", b"-200000", b"WITHVALUES"][..], "400000"),
        (&[b"ZRANDMEMBER", b"z", b"-300000"], "300000"),
    ] {
        let reply = String::from_utf8_lossy(&call(&mut s, command)).to_string();
        assert!(reply.starts_with(&format!("-ERR reply too large: {elements} elements")), "{reply}");
    }
    let fits = call(&mut s, &[b"SRANDMEMBER", b"s", b"-1000"]);
    assert!(fits.starts_with(b"*1000\r\n"), "a reply within the limit is sent");
    // With no output limit, a count no memory could hold is refused at
    // once, where the server used to run until it was killed for memory.
    config_set(&mut s, "client-output-buffer-limit", "normal 0 0 0");
    let started = Instant::now();
    for command in [
        &[&b"SRANDMEMBER"[..], b"s", b"-9223372036854775807"][..],
        &[b"HRANDFIELD", b"h", b"-9223372036854775807"],
        &[b"ZRANDMEMBER", b"z", b"-9223372036854775807"],
    ] {
        let reply = String::from_utf8_lossy(&call(&mut s, command)).to_string();
        assert!(
            reply.starts_with(
                "-ERR reply too large: 9223372036854775807 elements need at least 36893488147419103228 bytes"
            ) && reply.ends_with("bytes that of memory are available\r\n"),
            "{reply}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(2));
    // A missing key is still an empty reply, another type still WRONGTYPE.
    assert_eq!(call(&mut s, &[b"SRANDMEMBER", b"nokey", b"-9223372036854775807"]), b"*0\r\n");
    assert!(call(&mut s, &[b"ZRANDMEMBER", b"str", b"-9223372036854775807"]).starts_with(b"-WRONGTYPE"));
    assert_eq!(call(&mut s, &[b"DBSIZE"]), b":4\r\n", "the server is still up");
}

/// `tot-mem` of client `id` as `watcher` sees it.
fn tot_mem(watcher: &mut TcpStream, id: i64) -> usize {
    client_fields(watcher, id).get("tot-mem").and_then(|v| v.parse().ok()).unwrap_or(usize::MAX)
}

#[test]
fn connections_that_go_quiet_give_their_buffers_back() {
    const VALUE: usize = 8 << 20;
    let kvik = start_kvik_with(&[]);
    let mut watcher = connect(kvik.port);
    let mut writer = connect(kvik.port);
    let mut reader = connect(kvik.port);
    let (writer_id, reader_id) =
        (integer(&call(&mut writer, &[b"CLIENT", b"ID"])), integer(&call(&mut reader, &[b"CLIENT", b"ID"])));
    let value = vec![b'v'; VALUE];
    assert_eq!(set(&mut writer, "big", &value), b"+OK\r\n");
    assert_eq!(call(&mut reader, &[b"GET", b"big"]).len(), VALUE + 12);
    // A RESPB connection holds its frame's bytes in the same way.
    let mut respb = connect(kvik.port);
    respb.write_all(&kvik_protocol::respb::handshake::client_hello(1)).expect("greet");
    let mut frame = Vec::new();
    kvik_protocol::respb::encode_request(&[&b"SET"[..], b"big2", &value], 0, &mut frame);
    respb.write_all(&frame).expect("send");
    let mut frame = Vec::new();
    kvik_protocol::respb::encode_request(&[&b"CLIENT"[..], b"ID"], 0, &mut frame);
    respb.write_all(&frame).expect("send");
    // The greeting, `OK` and the integer frame: 4 + 8 + 12 bytes.
    let answer = common::read_until(&mut respb, |got| got.len() >= 4 + 8 + 12);
    let respb_id = i64::from_be_bytes(answer.bytes[answer.bytes.len() - 8..].try_into().expect("8 bytes"));
    // Each holds its request or reply at first (shown once its connection
    // waits again, which may come after the reply was read).
    for id in [writer_id, reader_id, respb_id] {
        wait_for(&format!("client {id} holding its buffers"), || tot_mem(&mut watcher, id), |&n| n >= VALUE);
    }
    let clients = number(&info_fields(&mut watcher, &["memory"]), "mem_clients_normal");
    assert!(clients >= 3 * VALUE, "{clients}");
    // After two seconds without a request, each keeps a small read buffer.
    for id in [writer_id, reader_id, respb_id] {
        let deadline = Instant::now() + Duration::from_secs(6);
        while tot_mem(&mut watcher, id) > 1024 {
            assert!(Instant::now() < deadline, "client {id} still holds {}", tot_mem(&mut watcher, id));
            thread::sleep(Duration::from_millis(100));
        }
    }
    let clients = number(&info_fields(&mut watcher, &["memory"]), "mem_clients_normal");
    assert!(clients < 64 << 10, "mem_clients_normal {clients} once they went quiet");
    // And they work as before: a large reply, then a pipeline of requests.
    assert_eq!(call(&mut reader, &[b"GET", b"big"]).len(), VALUE + 12);
    writer.write_all(&b"PING\r\n".repeat(5000)).expect("send");
    assert_eq!(common::read_until(&mut writer, |got| got.len() >= 7 * 5000).bytes, b"+PONG\r\n".repeat(5000));
    let mut frame = Vec::new();
    kvik_protocol::respb::encode_request(&[&b"STRLEN"[..], b"big2"], 0, &mut frame);
    respb.write_all(&frame).expect("send");
    let answer = common::read_until(&mut respb, |got| got.len() >= 12);
    assert_eq!(i64::from_be_bytes(answer.bytes[4..12].try_into().expect("8 bytes")), VALUE as i64);
}
