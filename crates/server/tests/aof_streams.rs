//! Stream commands in the append-only file: what kvik records redoes what
//! it did, in redis-server and in kvik.
//!
//! A stream workload runs on kvik with the AOF on: generated ids,
//! approximate trims, consumer groups read, claimed, acknowledged and
//! deleted from, a blocked reader served later. Then the same data is
//! loaded three ways: redis-server from kvik's snapshot (what kvik holds),
//! redis-server from kvik's append-only files, and kvik from them. Redis's
//! `DEBUG DIGEST` must agree, and so must `XINFO STREAM … FULL` (which the
//! digest does not cover: groups, pending entries, delivery times and
//! counts, read counters), once the fields that depend on the moment of the
//! load or on the node layout are left out.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{
    call, call_line as text, call_ok as run, connect, read_until, reply_complete, start_kvik_with,
    start_redis_with_or_skip,
};

/// A fresh directory for one test's files.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kvik-aof-streams-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Copy the files of `from` (and of its folders) into a fresh `to`, so
/// that each server loads what kvik left and none sees another's changes.
fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).expect("copy dir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy file");
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// A RESP2 reply, parsed.
#[derive(Debug, Clone, PartialEq)]
enum Resp {
    Str(Vec<u8>),
    Int(i64),
    Nil,
    Arr(Vec<Resp>),
}

/// The reply at the start of `buf` and its length.
fn parse(buf: &[u8]) -> (Resp, usize) {
    let end = buf.windows(2).position(|w| w == b"\r\n").expect("a complete reply");
    let head = std::str::from_utf8(&buf[1..end]).expect("header");
    let at = end + 2;
    match buf[0] {
        b'+' | b'-' => (Resp::Str(head.as_bytes().to_vec()), at),
        b':' => (Resp::Int(head.parse().expect("integer")), at),
        b'$' => match head.parse::<i64>().expect("length") {
            n if n < 0 => (Resp::Nil, at),
            n => (Resp::Str(buf[at..at + n as usize].to_vec()), at + n as usize + 2),
        },
        b'*' => match head.parse::<i64>().expect("length") {
            n if n < 0 => (Resp::Nil, at),
            n => {
                let (mut items, mut used) = (Vec::new(), at);
                for _ in 0..n {
                    let (item, len) = parse(&buf[used..]);
                    items.push(item);
                    used += len;
                }
                (Resp::Arr(items), used)
            }
        },
        other => panic!("unexpected reply type {:?}", other as char),
    }
}

fn show(v: &Resp) -> String {
    match v {
        Resp::Str(s) => String::from_utf8_lossy(s).into_owned(),
        Resp::Int(n) => n.to_string(),
        Resp::Nil => "(nil)".to_string(),
        Resp::Arr(items) => format!("[{}]", items.iter().map(show).collect::<Vec<_>>().join(" ")),
    }
}

/// The name/value pairs of a map written as a flat array.
fn pairs(v: &Resp) -> Vec<(String, &Resp)> {
    let Resp::Arr(items) = v else { panic!("not a map: {}", show(v)) };
    items.chunks(2).map(|kv| (show(&kv[0]), &kv[1])).collect()
}

/// `XINFO STREAM key FULL COUNT 0` as lines, one a field, less what
/// legitimately differs between the servers that loaded the same data:
/// the radix tree's figures (the node layout depends on the node limits
/// of the server that built it, and kvik's is not Redis's tree) and each
/// consumer's seen (and active) time, the moment of the load for the
/// consumers that the file creates. Everything else stays: entries,
/// last-generated-id, max-deleted-entry-id, entries-added, the first id,
/// every group's last-delivered-id, entries-read, lag and pending list
/// (id, owner, delivery time, delivery count), every consumer's pending
/// list.
fn comparable(reply: &[u8]) -> Vec<String> {
    let (info, _) = parse(reply);
    let mut lines = Vec::new();
    for (field, value) in pairs(&info) {
        match field.as_str() {
            "radix-tree-keys" | "radix-tree-nodes" => {}
            "groups" => {
                let Resp::Arr(groups) = value else { panic!("groups: {}", show(value)) };
                for group in groups {
                    let group = pairs(group);
                    let name = group.iter().find(|(k, _)| k == "name").map_or(String::new(), |(_, v)| show(v));
                    for (gfield, gvalue) in &group {
                        if gfield != "consumers" {
                            lines.push(format!("group {name} {gfield}: {}", show(gvalue)));
                            continue;
                        }
                        let Resp::Arr(consumers) = gvalue else { panic!("consumers: {}", show(gvalue)) };
                        for consumer in consumers {
                            let consumer = pairs(consumer);
                            let cname =
                                consumer.iter().find(|(k, _)| k == "name").map_or(String::new(), |(_, v)| show(v));
                            for (cfield, cvalue) in consumer {
                                if cfield != "seen-time" && cfield != "active-time" {
                                    lines.push(format!("group {name} consumer {cname} {cfield}: {}", show(cvalue)));
                                }
                            }
                        }
                    }
                }
            }
            _ => lines.push(format!("{field}: {}", show(value))),
        }
    }
    lines
}

/// Fail, showing only the lines that differ, unless `a` and `b` are equal.
fn assert_same(a: &[String], b: &[String], what: &str) {
    if a == b {
        return;
    }
    let only = |x: &[String], y: &[String]| x.iter().filter(|l| !y.contains(l)).cloned().collect::<Vec<_>>();
    panic!("{what}:\nonly in the first: {:#?}\nonly in the second: {:#?}", only(a, b), only(b, a));
}

/// Every stream of the workload, as `(database, key)`.
const STREAMS: [(&str, &str); 7] = [
    ("0", "events"),
    ("0", "trimmed"),
    ("0", "by-id"),
    ("0", "emptied"),
    ("0", "seq"),
    ("0", "waited"),
    ("2", "other"),
];

/// The comparable `XINFO STREAM FULL` of every stream, one line each field.
fn stream_infos(conn: &mut TcpStream) -> Vec<String> {
    let mut all = Vec::new();
    for (db, key) in STREAMS {
        text(conn, &format!("SELECT {db}"));
        let reply = run(conn, &[b"XINFO", b"STREAM", key.as_bytes(), b"FULL", b"COUNT", b"0"]);
        all.extend(comparable(&reply).into_iter().map(|line| format!("{db}/{key} {line}")));
    }
    text(conn, "SELECT 0");
    all
}

/// The id an XADD replied with.
fn added(reply: &[u8]) -> String {
    match parse(reply).0 {
        Resp::Str(id) => String::from_utf8(id).expect("id"),
        other => panic!("XADD replied {}", show(&other)),
    }
}

/// The ids a read or claim reply names, in order (`[key, [[id, fields]…]]…`
/// or `[[id, fields]…]`).
fn ids_in(reply: &[u8]) -> Vec<String> {
    fn walk(v: &Resp, out: &mut Vec<String>) {
        if let Resp::Arr(items) = v {
            match items.as_slice() {
                [Resp::Str(id), Resp::Arr(_) | Resp::Nil] if id.contains(&b'-') => {
                    out.push(String::from_utf8_lossy(id).into_owned())
                }
                _ => items.iter().for_each(|item| walk(item, out)),
            }
        }
    }
    let mut out = Vec::new();
    walk(&parse(reply).0, &mut out);
    out
}

/// Wait until `conn`'s server has `n` blocked clients.
fn wait_blocked(conn: &mut TcpStream, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let want = format!("blocked_clients:{n}\r\n");
    while !String::from_utf8_lossy(&run(conn, &[b"INFO", b"clients"])).contains(&want) {
        assert!(Instant::now() < deadline, "no {n} blocked clients");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The workload; returns what the redis-loaded data must show for the
/// claim given an absolute time (id, time).
fn workload(k: &mut TcpStream, port: u16) -> (String, i64) {
    // Small nodes, so that approximate trims stop at node boundaries
    // that an exact trim would not.
    text(k, "CONFIG SET stream-node-max-entries 4");

    // Generated ids: `*`, and `ms-*` with a fixed millisecond part.
    let mut events = Vec::new();
    for i in 0..30 {
        let field = format!("n{}", i % 3);
        events.push(added(&run(k, &[b"XADD", b"events", b"*", field.as_bytes(), i.to_string().as_bytes()])));
    }
    for line in ["XADD seq 5-* a 1", "XADD seq 5-* a 2", "XADD seq 7-* a 3"] {
        text(k, line);
    }

    // Approximate trimming: by length in XADD and XTRIM, with and without
    // LIMIT, and by id.
    for i in 0..40 {
        let v = i.to_string();
        run(k, &[b"XADD", b"trimmed", b"MAXLEN", b"~", b"10", b"*", b"v", v.as_bytes()]);
    }
    text(k, "XADD trimmed MAXLEN ~ 3 LIMIT 4 * v last");
    text(k, "XTRIM trimmed MAXLEN ~ 5 LIMIT 8");
    text(k, "XTRIM trimmed MAXLEN ~ 2");
    let mut by_id = Vec::new();
    for i in 0..30 {
        by_id.push(added(&run(k, &[b"XADD", b"by-id", b"*", b"v", i.to_string().as_bytes()])));
    }
    run(k, &[b"XADD", b"by-id", b"MINID", b"~", by_id[6].as_bytes(), b"*", b"v", b"x"]);
    run(k, &[b"XTRIM", b"by-id", b"MINID", b"~", by_id[17].as_bytes()]);
    run(k, &[b"XTRIM", b"by-id", b"MINID", b"=", by_id[19].as_bytes()]);
    // Trims that leave nothing: the exact MINID is then the largest id.
    for i in 0..9 {
        run(k, &[b"XADD", b"emptied", b"*", b"v", i.to_string().as_bytes()]);
    }
    text(k, "XTRIM emptied MINID ~ 99999999999999-0");
    text(k, "XADD emptied MAXLEN ~ 0 * v again");

    // Groups: at `$` (before entries come) and at 0.
    text(k, "XGROUP CREATE events late $");
    for i in 0..4 {
        events.push(added(&run(k, &[b"XADD", b"events", b"*", b"late", i.to_string().as_bytes()])));
    }
    text(k, "XGROUP CREATE events work 0");
    text(k, "XGROUP CREATE events spare $ ENTRIESREAD 3");

    // Reads: new entries counted, without acknowledgement, the history.
    text(k, "XREADGROUP GROUP work alice COUNT 6 STREAMS events >");
    text(k, "XREADGROUP GROUP work bob COUNT 3 NOACK STREAMS events >");
    text(k, "XREADGROUP GROUP work carol COUNT 2 STREAMS events >");
    text(k, "XREADGROUP GROUP work alice COUNT 2 STREAMS events 0");
    text(k, "XREADGROUP GROUP work dora STREAMS events 0");
    text(k, "XREADGROUP GROUP late eve STREAMS events >");
    text(k, "XREADGROUP GROUP late eve COUNT 1 NOACK STREAMS events >");
    text(k, "XREADGROUP GROUP spare fred NOACK STREAMS events >");

    // Acknowledge one, delete two that are pending.
    run(k, &[b"XACK", b"events", b"work", events[0].as_bytes(), b"0-1"]);
    run(k, &[b"XDEL", b"events", events[1].as_bytes(), events[2].as_bytes()]);

    // Claims: by idle time, at an absolute time with a retry count, of a
    // deleted entry (which drops it), forced, LASTID alone.
    let at = now_ms() - 100_000;
    run(k, &[b"XCLAIM", b"events", b"work", b"gus", b"0", events[3].as_bytes(), b"IDLE", b"5000"]);
    let (time, id) = (at.to_string(), events[10].clone());
    run(
        k,
        &[b"XCLAIM", b"events", b"work", b"gus", b"0", id.as_bytes(), b"TIME", time.as_bytes(), b"RETRYCOUNT", b"7"],
    );
    run(k, &[b"XCLAIM", b"events", b"work", b"hal", b"0", events[1].as_bytes(), b"JUSTID"]);
    run(k, &[b"XCLAIM", b"events", b"work", b"hal", b"0", events[20].as_bytes(), b"FORCE", b"JUSTID"]);
    let last = events[25].clone();
    run(k, &[b"XCLAIM", b"events", b"work", b"hal", b"0", b"1-1", b"LASTID", last.as_bytes()]);
    // Claims that find nothing to do record nothing.
    run(k, &[b"XCLAIM", b"events", b"work", b"hal", b"100000000", events[5].as_bytes()]);

    // Automatic claims: one meets the other deleted entry.
    text(k, "XAUTOCLAIM events work ivan 0 0 COUNT 3");
    text(k, "XAUTOCLAIM events work ivan 0 0 COUNT 2 JUSTID");
    // A history read after a delete (the deleted entry comes back empty).
    run(k, &[b"XDEL", b"events", events[5].as_bytes()]);
    text(k, "XREADGROUP GROUP work ivan STREAMS events 0");

    // In a transaction, with another change.
    text(k, "MULTI");
    text(k, "XADD events * in multi");
    text(k, "XREADGROUP GROUP work carol COUNT 1 STREAMS events >");
    text(k, "EXEC");

    // Consumers and groups managed, the last id set.
    text(k, "XGROUP CREATECONSUMER events work jan");
    text(k, "XGROUP DELCONSUMER events work bob");
    text(k, "XGROUP DELCONSUMER events work carol");
    text(k, "XGROUP CREATE events doomed 0");
    text(k, "XGROUP DESTROY events doomed");
    text(k, "XGROUP SETID events late $");
    text(k, "XGROUP SETID events spare 0 ENTRIESREAD 0");
    text(k, "XSETID seq 9-9 ENTRIESADDED 10 MAXDELETEDID 8-0");

    // Readers blocked on a stream, served by an XADD from another client.
    text(k, "XGROUP CREATE waited readers $ MKSTREAM");
    text(k, "XGROUP CREATE waited quiet $");
    let mut blocked = Vec::new();
    for request in [
        "XREADGROUP GROUP readers kim BLOCK 10000 STREAMS waited >",
        "XREADGROUP GROUP quiet lou NOACK BLOCK 10000 STREAMS waited >",
    ] {
        let mut conn = connect(port);
        let words: Vec<&[u8]> = request.split(' ').map(str::as_bytes).collect();
        conn.write_all(&common::diff::multibulk(&words)).expect("send");
        blocked.push(conn);
    }
    wait_blocked(k, 2);
    let woke = added(&text(k, "XADD waited * hello world"));
    for conn in &mut blocked {
        let reply = read_until(conn, reply_complete).bytes;
        assert_eq!(ids_in(&reply), std::slice::from_ref(&woke), "{}", reply.escape_ascii());
    }

    // Another database.
    text(k, "SELECT 2");
    text(k, "XADD other * a 1");
    text(k, "XADD other MAXLEN ~ 1 * a 2");
    text(k, "XGROUP CREATE other g 0");
    text(k, "XREADGROUP GROUP g x STREAMS other >");
    text(k, "SELECT 0");
    (id, at)
}

#[test]
fn stream_commands_replay_from_the_aof_as_they_ran() {
    let dir = temp_dir("main");
    let d = dir.to_str().expect("utf-8 path");
    let kvik = start_kvik_with(&["--dir", d, "--appendonly", "yes", "--appendfsync", "always"]);
    let mut k = connect(kvik.port);
    let (timed_id, timed_at) = workload(&mut k, kvik.port);
    let before = stream_infos(&mut k);
    assert_eq!(call(&mut k, &[b"SAVE"]), b"+OK\r\n");
    drop(k);
    drop(kvik);

    // The records say what was done, not what was asked.
    let aof_dir = dir.join("appendonlydir");
    let mut records = Vec::new();
    for entry in std::fs::read_dir(&aof_dir).expect("appendonlydir") {
        let path = entry.expect("entry").path();
        if path.to_string_lossy().ends_with(".incr.aof") {
            records.extend(std::fs::read(path).expect("incr file"));
        }
    }
    let records = String::from_utf8_lossy(&records).to_ascii_lowercase();
    assert!(records.contains("xclaim"), "{records}");
    for asked in ["xreadgroup", "xautoclaim", "\r\n~\r\n", "limit", "\r\n*\r\n", "-*\r\n", "\r\n$\r\n", "\r\nidle\r\n"]
    {
        assert!(!records.contains(asked), "the records hold {asked:?}:\n{records}");
    }

    let (from_rdb, from_aof, from_kvik) = (temp_dir("rdb"), temp_dir("aof"), temp_dir("kvik"));
    for copy in [&from_rdb, &from_aof, &from_kvik] {
        copy_dir(&dir, copy);
    }
    let Some(redis) = start_redis_with_or_skip(
        "aof-streams",
        &["--dir", from_rdb.to_str().expect("path"), "--enable-debug-command", "yes"],
    ) else {
        return;
    };
    let mut r = connect(redis.port);
    let digest_rdb = run(&mut r, &[b"DEBUG", b"DIGEST"]);
    let infos_rdb = stream_infos(&mut r);
    drop(r);
    drop(redis);

    let redis = start_redis_with_or_skip(
        "aof-streams",
        &["--dir", from_aof.to_str().expect("path"), "--appendonly", "yes", "--enable-debug-command", "yes"],
    )
    .expect("redis-server ran a moment ago");
    let mut r = connect(redis.port);
    let digest_aof = run(&mut r, &[b"DEBUG", b"DIGEST"]);
    let infos_aof = stream_infos(&mut r);
    drop(r);
    drop(redis);

    assert_ne!(digest_rdb, b"$40\r\n0000000000000000000000000000000000000000\r\n", "the snapshot is empty");
    assert_eq!(digest_rdb, digest_aof, "DEBUG DIGEST of the snapshot and of the AOF differ");
    assert_same(&infos_rdb, &infos_aof, "the streams of the snapshot and of the AOF differ");
    assert_same(&before, &infos_rdb, "what kvik held and what its snapshot loads to differ");
    // The comparison looks at what matters: the absolute claim time and
    // its retry count came through.
    let timed = format!("[{timed_id} gus {timed_at} 7]");
    assert!(infos_aof.iter().any(|l| l.contains("group work pending:") && l.contains(&timed)), "{infos_aof:#?}");

    // kvik replays its own records to the same streams.
    let d = from_kvik.to_str().expect("path");
    let kvik = start_kvik_with(&["--dir", d, "--appendonly", "yes"]);
    let mut k = connect(kvik.port);
    assert_same(&stream_infos(&mut k), &infos_aof, "kvik replayed its AOF to other streams");
    drop(k);
    drop(kvik);
    for done in [&dir, &from_rdb, &from_aof, &from_kvik] {
        let _ = std::fs::remove_dir_all(done);
    }
}
