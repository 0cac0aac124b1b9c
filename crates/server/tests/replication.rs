//! Replication both ways. kvik as the master: redis-server 7.0 as its
//! replica (full sync under a write load, then a partial resync after the
//! link is cut) and `redis-cli --rdb`. kvik as a replica: of kvik and of
//! redis-server, under the same load and cut, and promoted with
//! `REPLICAOF NO ONE` so that its own replicas go on from where they were
//! (PSYNC2). Then the replies a replica gives: ROLE, INFO, READONLY,
//! MASTERDOWN and REPLICAOF's.
//!
//! Keyspaces are compared through redis-server itself: `DEBUG DIGEST` of
//! a redis-server (a replica, a master, or one that loaded a kvik
//! snapshot) once the replica has the whole stream.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use kvik_testkit::ScratchDir;

fn info(port: u16, section: &str) -> String {
    let mut s = connect(port);
    String::from_utf8_lossy(&call_text(&mut s, &["INFO", section])).into_owned()
}

/// Wait until `check` holds, for at most `secs` seconds.
fn wait_for(what: &str, secs: u64, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(50));
    }
}

/// What the load's script writes: replicated as its effects.
const SCRIPT: &str = "redis.call('INCR', KEYS[1]); return redis.call('HSET', KEYS[2], 'f', ARGV[1])";

/// A key of the load that lives for 20 ms.
fn px_key(writer: usize, k: usize) -> String {
    format!("px:{writer}:{k}")
}

/// Read every short-lived key of `writers` on `port`, so that each that
/// expired is deleted now (and its DEL sent to replicas), not whenever the
/// expiry cycle comes to it: a master's snapshot leaves out expired keys,
/// a replica holds them until their DEL.
fn expire_short_lived(port: u16, writers: usize) {
    let mut s = connect(port);
    for w in 0..writers {
        for k in 0..500 {
            call_text(&mut s, &["EXISTS", &px_key(w, k)]);
        }
    }
}

/// Writes of every type (strings, lists, hashes, sets, sorted sets, streams),
/// expiries, transactions and scripts, pipelined, by `writers` threads
/// until `stop`.
fn write_load(port: u16, writers: usize, stop: &Arc<AtomicBool>) -> Vec<thread::JoinHandle<usize>> {
    (0..writers)
        .map(|w| {
            let stop = Arc::clone(stop);
            thread::spawn(move || {
                let mut s = connect(port);
                let mut round = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let k = round % 500;
                    let mut batch = Vec::new();
                    let cmds: [Vec<String>; 17] = [
                        vec!["SET".into(), format!("s:{w}:{k}"), format!("v{round}")],
                        vec!["INCR".into(), format!("n:{k}")],
                        vec!["RPUSH".into(), format!("l:{}", k % 50), format!("{w}-{round}")],
                        vec!["HSET".into(), format!("h:{}", k % 50), format!("f{w}"), format!("{round}")],
                        vec!["SADD".into(), format!("set:{}", k % 50), format!("{}", round % 97)],
                        vec!["ZADD".into(), format!("z:{}", k % 50), format!("{}", round % 13), format!("m{w}")],
                        vec!["EXPIRE".into(), format!("s:{w}:{k}"), "100000".into()],
                        // Keys that expire on the master while the load runs:
                        // the replica must see their DELs.
                        vec!["SET".into(), px_key(w, k), "short".into(), "PX".into(), "20".into()],
                        vec![
                            "XADD".into(),
                            format!("x:{}", k % 50),
                            "MAXLEN".into(),
                            "100".into(),
                            "*".into(),
                            "f".into(),
                            format!("{round}"),
                        ],
                        vec!["MULTI".into()],
                        vec!["INCR".into(), format!("m:{}", k % 50)],
                        vec!["LPUSH".into(), format!("ml:{w}"), format!("{round}")],
                        vec!["EXEC".into()],
                        vec![
                            "EVAL".into(),
                            SCRIPT.into(),
                            "2".into(),
                            format!("e:{}", k % 50),
                            format!("eh:{w}"),
                            format!("{round}"),
                        ],
                        vec!["LPOP".into(), format!("l:{}", (k + 7) % 50)],
                        vec!["SELECT".into(), "3".into()],
                        vec!["RPUSH".into(), format!("l:{}", k % 50), format!("{w}-{round}")],
                    ];
                    for c in &cmds {
                        let args: Vec<&[u8]> = c.iter().map(|a| a.as_bytes()).collect();
                        kvik_persist::aof::commands::put(&mut batch, &args);
                    }
                    // Back to db 0 after the db-3 push, so both databases change.
                    batch.extend_from_slice(b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n");
                    use std::io::Write;
                    s.write_all(&batch).expect("write");
                    let _ = read_until(&mut s, |got| split_replies(got).len() > cmds.len());
                    round += 1;
                }
                round
            })
        })
        .collect()
}

/// `DEBUG DIGEST` of a redis-server that loads `dir/dump.rdb`.
fn digest_of_snapshot(dir: &std::path::Path) -> String {
    let dir = dir.display().to_string();
    let loaded = start_redis_with_or_skip(
        "digest",
        &["--dir", &dir, "--dbfilename", "dump.rdb", "--enable-debug-command", "yes"],
    )
    .expect("redis");
    let mut s = connect(loaded.port);
    String::from_utf8_lossy(&call_text(&mut s, &["DEBUG", "DIGEST"])).into_owned()
}

fn digest(port: u16) -> String {
    let mut s = connect(port);
    String::from_utf8_lossy(&call_text(&mut s, &["DEBUG", "DIGEST"])).into_owned()
}

#[test]
fn a_redis_replica_of_kvik_holds_what_kvik_holds_and_resumes_after_a_cut() {
    if start_redis_or_skip("replication").is_none() {
        return;
    }
    let kdir = ScratchDir::new("repl-master");
    let kvik = start_kvik_with(&[
        "--threads",
        "4",
        "--dir",
        &kdir.path().display().to_string(),
        BACKLOG,
        "64mb",
        NO_DELAY[0],
        NO_DELAY[1],
    ]);
    let port = kvik.port.to_string();
    let (replica, rounds) = load_cut_and_catch_up(kvik.port, || {
        let replica =
            start_redis_with_or_skip("replica", &["--replicaof", "127.0.0.1", &port, "--enable-debug-command", "yes"])
                .expect("redis");
        let port = replica.port;
        (replica, port)
    });
    assert!(!kdir.path().join("dump.rdb").exists(), "a diskless sync writes no file");
    let want = digest_of_kvik(kvik.port, kdir.path());
    assert_eq!(digest(replica.port), want, "the replica holds what kvik holds ({rounds} rounds of writes)");
    assert!(want.starts_with('+') && !want.contains("0000000000000000000000000000000000000000"), "{want}");
}

#[test]
fn redis_cli_rdb_takes_a_snapshot_alone() {
    if start_redis_or_skip("rdb").is_none() {
        return;
    }
    let kvik = start_kvik_with(&NO_DELAY);
    let mut k = connect(kvik.port);
    for i in 0..200 {
        call_text(&mut k, &["SET", &format!("k{i}"), &format!("{i}")]);
    }
    let out = ScratchDir::new("repl-rdb");
    let file = out.path().join("dump.rdb");
    let status = std::process::Command::new("redis-cli")
        .args(["-p", &kvik.port.to_string(), "--rdb", &file.display().to_string()])
        .output()
        .expect("redis-cli");
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let loaded_dir = out.path().display().to_string();
    let loaded = start_redis_with_or_skip("rdb", &["--dir", &loaded_dir, "--dbfilename", "dump.rdb"]).expect("redis");
    let mut r = connect(loaded.port);
    assert_eq!(call_text(&mut r, &["DBSIZE"]), b":200\r\n");
    assert_eq!(call_text(&mut r, &["GET", "k17"]), b"$2\r\n17\r\n");
    wait_for("the rdb-only client to leave", 10, || info(kvik.port, "replication").contains("connected_slaves:0"));
}

#[test]
fn replconf_answers_as_redis() {
    let kvik = start_kvik();
    let mut k = connect(kvik.port);
    assert_eq!(call_text(&mut k, &["REPLCONF", "listening-port", "6380", "capa", "eof", "capa", "psync2"]), b"+OK\r\n");
    assert_eq!(
        call_text(&mut k, &["REPLCONF", "listening-port"]),
        b"-ERR wrong number of arguments for 'replconf' command\r\n"
    );
    assert_eq!(call_text(&mut k, &["REPLCONF", "bogus", "1"]), b"-ERR Unrecognized REPLCONF option: bogus\r\n");
    assert_eq!(
        call_text(&mut k, &["REPLCONF", "rdb-only", "2"]),
        b"-ERR value is out of range, value must between 0 and 1\r\n"
    );
    assert_eq!(call_text(&mut k, &["PSYNC", "?", "x"]), b"-ERR value is not an integer or out of range\r\n");
    assert_eq!(call_text(&mut k, &["PING"]), b"+PONG\r\n", "no reply for ACK, and the client goes on");
}

/// The `DEBUG DIGEST` of what the kvik server at `port` holds, by a
/// redis-server loading its `SAVE` in `dir`.
fn digest_of_kvik(port: u16, dir: &std::path::Path) -> String {
    let mut k = connect(port);
    assert_eq!(call_text(&mut k, &["SAVE"]), b"+OK\r\n");
    digest_of_snapshot(dir)
}

fn offset(port: u16) -> String {
    info_value(&info(port, "replication"), "master_repl_offset").to_string()
}

fn link_up(port: u16) -> bool {
    info(port, "replication").contains("master_link_status:up")
}

fn stat(port: u16, name: &str) -> String {
    info_value(&info(port, "stats"), name).to_string()
}

/// The masters' backlog in the tests that cut a link under load: the
/// default 1 MB is a fraction of a second of the load, and a replica that
/// lags further (a debug build's does) gets a full resync, as it should.
const BACKLOG: &str = "--repl-backlog-size";

/// A kvik master's diskless sync without its default 5 s wait for more
/// replicas.
const NO_DELAY: [&str; 2] = ["--repl-diskless-sync-delay", "0"];

/// Start the write load on `master`, then the replica (`start` gives its
/// handle and port), so that it syncs under load; once it is up, cut the
/// link from the master's side: the replica must come back by a partial
/// resync. Returns the replica and the rounds written once it is level.
fn load_cut_and_catch_up<R>(master: u16, start: impl FnOnce() -> (R, u16)) -> (R, usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let writers = write_load(master, 3, &stop);
    thread::sleep(Duration::from_millis(300));
    let (handle, replica) = start();
    wait_for("the replica's link", 30, || link_up(replica));
    thread::sleep(Duration::from_millis(300));
    assert_eq!(stat(master, "sync_full"), "1");
    let m_info = info(master, "replication");
    assert!(m_info.contains("connected_slaves:1") && m_info.contains(",state=online,"), "{m_info}");
    let mut m = connect(master);
    let listed = String::from_utf8_lossy(&call_text(&mut m, &["CLIENT", "LIST", "TYPE", "replica"])).into_owned();
    assert!(listed.contains("flags=S"), "{listed}");
    assert_eq!(call_text(&mut m, &["CLIENT", "KILL", "TYPE", "replica"]), b":1\r\n");
    wait_for("a partial resync", 30, || stat(master, "sync_partial_ok") == "1");
    wait_for("the link again", 30, || link_up(replica));
    thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let rounds: usize = writers.into_iter().map(|w| w.join().expect("writer")).sum();
    assert!(rounds > 10, "the load ran: {rounds} rounds");
    thread::sleep(Duration::from_millis(50));
    expire_short_lived(master, 3);
    assert_eq!(stat(master, "sync_full"), "1", "no second full sync");
    wait_for("the replica to catch up", 30, || offset(replica) == offset(master));
    (handle, rounds)
}

#[test]
fn a_kvik_replica_of_kvik_holds_what_its_master_holds() {
    if start_redis_or_skip("kvik-kvik").is_none() {
        return;
    }
    let (mdir, rdir) = (ScratchDir::new("repl-kk-master"), ScratchDir::new("repl-kk-replica"));
    // From a file, as with repl-diskless-sync no; the other tests sync diskless.
    let mdir_s = mdir.path().display().to_string();
    let master = start_kvik_with(&["--threads", "4", "--dir", &mdir_s, BACKLOG, "64mb", "--repl-diskless-sync", "no"]);
    let port = master.port.to_string();
    let rdir_s = rdir.path().display().to_string();
    let (replica, rounds) = load_cut_and_catch_up(master.port, || {
        let replica = start_kvik_with(&["--threads", "2", "--dir", &rdir_s, "--replicaof", "127.0.0.1", &port]);
        let port = replica.port;
        (replica, port)
    });
    let want = digest_of_kvik(master.port, mdir.path());
    assert_eq!(digest_of_kvik(replica.port, rdir.path()), want, "{rounds} rounds of writes");
    assert!(!want.contains("0000000000000000000000000000000000000000"), "{want}");
}

#[test]
fn a_kvik_replica_of_redis_holds_what_redis_holds() {
    let Some(redis) = start_redis_with_or_skip(
        "redis-kvik",
        &["--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes", BACKLOG, "64mb"],
    ) else {
        return;
    };
    let rdir = ScratchDir::new("repl-rk-replica");
    let replica = start_kvik_with(&["--dir", &rdir.path().display().to_string()]);
    let port = redis.port.to_string();
    let ((), rounds) = load_cut_and_catch_up(redis.port, || {
        let mut k = connect(replica.port);
        assert_eq!(call_text(&mut k, &["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
        ((), replica.port)
    });
    let want = digest(redis.port);
    assert_eq!(digest_of_kvik(replica.port, rdir.path()), want, "{rounds} rounds of writes");
    // What the master sent is what the replica says it has.
    let (r_info, k_info) = (info(redis.port, "replication"), info(replica.port, "replication"));
    assert_eq!(info_value(&k_info, "master_replid"), info_value(&r_info, "master_replid"));
    assert_eq!(info_value(&k_info, "slave_repl_offset"), info_value(&r_info, "master_repl_offset"));
}

/// PSYNC2: a kvik replica of redis-server is promoted, and redis-server
/// then follows it. kvik keeps the old master's id as its second one, so
/// redis-server resumes from its own offset instead of a full sync.
#[test]
fn a_promoted_kvik_replica_takes_its_old_master_as_a_replica_without_a_full_sync() {
    let Some(redis) =
        start_redis_with_or_skip("promotion", &["--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes"])
    else {
        return;
    };
    let kdir = ScratchDir::new("repl-promote");
    let kvik = start_kvik_with(&["--dir", &kdir.path().display().to_string()]);
    let mut r = connect(redis.port);
    for i in 0..500 {
        call_text(&mut r, &["SET", &format!("k{i}"), &format!("{i}")]);
    }
    let mut k = connect(kvik.port);
    assert_eq!(call_text(&mut k, &["REPLICAOF", "127.0.0.1", &redis.port.to_string()]), b"+OK\r\n");
    wait_for("the link", 30, || link_up(kvik.port));
    call_text(&mut r, &["RPUSH", "after-sync", "a", "b"]);
    wait_for("the replica to catch up", 30, || offset(kvik.port) == offset(redis.port));
    let old_id = info_value(&info(redis.port, "replication"), "master_replid").to_string();

    assert_eq!(call_text(&mut k, &["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    let k_info = info(kvik.port, "replication");
    assert!(k_info.contains("role:master"), "{k_info}");
    assert_eq!(info_value(&k_info, "master_replid2"), old_id);
    assert_ne!(info_value(&k_info, "master_replid"), old_id);
    call_text(&mut k, &["SET", "written-on-kvik", "1"]);
    assert_eq!(call_text(&mut r, &["REPLICAOF", "127.0.0.1", &kvik.port.to_string()]), b"+OK\r\n");
    wait_for("redis's link", 30, || link_up(redis.port));
    wait_for("redis to catch up", 30, || offset(redis.port) == offset(kvik.port));
    let stats = info(kvik.port, "stats");
    assert_eq!(info_value(&stats, "sync_partial_ok"), "1", "{stats}");
    assert_eq!(info_value(&stats, "sync_full"), "0", "{stats}");
    assert_eq!(call_text(&mut r, &["GET", "written-on-kvik"]), b"$1\r\n1\r\n");
    assert_eq!(digest(redis.port), digest_of_kvik(kvik.port, kdir.path()));
}

#[test]
fn a_replica_answers_as_a_redis_replica_does() {
    let master = start_kvik_with(&NO_DELAY);
    let mut m = connect(master.port);
    call_text(&mut m, &["SET", "k", "v"]);
    let logs = ScratchDir::new("repl-log");
    let log = logs.path().join("kvik.log");
    let replica = start_kvik_with(&["--logfile", &log.display().to_string()]);
    let mut k = connect(replica.port);
    let port = master.port.to_string();
    assert_eq!(call_text(&mut k, &["REPLICAOF", "127.0.0.1", "70000"]), b"-ERR Invalid master port\r\n");
    assert_eq!(call_text(&mut k, &["REPLICAOF", "127.0.0.1", "x"]), b"-ERR Invalid master port\r\n");
    assert_eq!(call_text(&mut k, &["REPLICAOF", "NO", "ONE"]), b"+OK\r\n", "already a master");
    assert_eq!(call_text(&mut k, &["SLAVEOF", "127.0.0.1", &port]), b"+OK\r\n");
    assert_eq!(call_text(&mut k, &["REPLICAOF", "127.0.0.1", &port]), b"+OK Already connected to specified master\r\n");
    wait_for("the link", 30, || link_up(replica.port));
    wait_for("the key", 10, || call_text(&mut k, &["GET", "k"]) == b"$1\r\nv\r\n");

    // Reads are served, writes refused, scripts too when they write.
    assert_eq!(call_text(&mut k, &["SET", "k", "w"]), b"-READONLY You can't write against a read only replica.\r\n");
    let script_write = call_text(&mut k, &["EVAL", "return redis.call('SET', 'k', 'w')", "0"]);
    assert!(
        script_write.starts_with(b"-READONLY You can't write against a read only replica. script: "),
        "{}",
        String::from_utf8_lossy(&script_write)
    );
    assert_eq!(
        call_text(&mut k, &["EVAL", "#!lua\nreturn redis.call('SET', 'k', 'w')", "0"]),
        b"-READONLY You can't write against a read only replica.\r\n",
        "a script with flags is refused before it runs"
    );
    assert_eq!(call_text(&mut k, &["EVAL", "return redis.call('GET', 'k')", "0"]), b"$1\r\nv\r\n");
    assert_eq!(call_text(&mut k, &["MULTI"]), b"+OK\r\n");
    assert_eq!(call_text(&mut k, &["INCR", "n"]), b"-READONLY You can't write against a read only replica.\r\n");
    assert_eq!(call_text(&mut k, &["DISCARD"]), b"+OK\r\n");

    let role = call_text(&mut k, &["ROLE"]);
    let text = String::from_utf8_lossy(&role);
    let want_start = format!("*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:{port}\r\n$9\r\nconnected\r\n:");
    assert!(text.starts_with(&want_start), "{text}");
    let m_role = String::from_utf8_lossy(&call_text(&mut m, &["ROLE"])).into_owned();
    assert!(
        m_role.starts_with("*3\r\n$6\r\nmaster\r\n:") && m_role.contains("*1\r\n*3\r\n$9\r\n127.0.0.1\r\n"),
        "{m_role}"
    );

    // The link to the master is a client of its own, as in Redis.
    call_text(&mut m, &["SET", "seen", "1"]);
    wait_for("the write", 10, || call_text(&mut k, &["GET", "seen"]) == b"$1\r\n1\r\n");
    let listed = String::from_utf8_lossy(&call_text(&mut k, &["CLIENT", "LIST", "TYPE", "master"])).into_owned();
    assert_eq!(listed.matches("id=").count(), 1, "{listed}");
    assert!(listed.contains(&format!(" addr=127.0.0.1:{port} ")) && listed.contains(" flags=M "), "{listed}");
    assert!(listed.contains(" cmd=set "), "{listed}");
    let normal = String::from_utf8_lossy(&call_text(&mut k, &["CLIENT", "LIST", "TYPE", "normal"])).into_owned();
    assert!(!normal.contains("flags=M"), "{normal}");
    let partial_before: u64 = stat(master.port, "sync_partial_ok").parse().expect("count");
    assert_eq!(call_text(&mut k, &["CLIENT", "KILL", "TYPE", "master"]), b":1\r\n");
    wait_for("a partial resync after the kill", 30, || {
        stat(master.port, "sync_partial_ok").parse::<u64>().expect("count") > partial_before && link_up(replica.port)
    });

    let i = info(replica.port, "replication");
    for (field, want) in [
        ("role", "slave"),
        ("master_host", "127.0.0.1"),
        ("master_port", port.as_str()),
        ("master_link_status", "up"),
        ("master_sync_in_progress", "0"),
        ("slave_priority", "100"),
        ("slave_read_only", "1"),
        ("replica_announced", "1"),
        ("connected_slaves", "0"),
    ] {
        assert_eq!(info_value(&i, field), want, "{field} in {i}");
    }

    // With the link down and replica-serve-stale-data off, only the
    // commands Redis allows a stale replica are served.
    assert_eq!(call_text(&mut k, &["CONFIG", "SET", "replica-serve-stale-data", "no"]), b"+OK\r\n");
    drop(m);
    drop(master);
    wait_for("the link to drop", 30, || info(replica.port, "replication").contains("master_link_status:down"));
    let masterdown = b"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n";
    assert_eq!(call_text(&mut k, &["GET", "k"]), masterdown);
    // Scripts as Redis checks them: by their flags before they run, and
    // each command they call.
    assert_eq!(call_text(&mut k, &["EVAL", "return 1", "0"]), masterdown);
    assert_eq!(call_text(&mut k, &["EVAL", "#!lua flags=no-writes\nreturn 1", "0"]), masterdown);
    assert_eq!(
        call_text(&mut k, &["EVAL", "#!lua\nreturn 1", "0"]),
        b"-READONLY You can't write against a read only replica.\r\n"
    );
    assert_eq!(call_text(&mut k, &["EVAL", "#!lua flags=allow-stale,no-writes\nreturn 1", "0"]), b":1\r\n");
    let stale_call =
        call_text(&mut k, &["EVAL", "#!lua flags=allow-stale,no-writes\nreturn redis.call('GET', 'k')", "0"]);
    assert!(
        stale_call.starts_with(b"-ERR Can not execute the command on a stale replica script: "),
        "{}",
        String::from_utf8_lossy(&stale_call)
    );
    assert_eq!(call_text(&mut k, &["PING"]), masterdown, "PING is not among them");
    assert!(call_text(&mut k, &["INFO", "replication"]).starts_with(b"$"));
    let role = String::from_utf8_lossy(&call_text(&mut k, &["ROLE"])).into_owned();
    assert!(role.ends_with(":-1\r\n") && !role.contains("$9\r\nconnected"), "{role}");
    assert_eq!(call_text(&mut k, &["CONFIG", "SET", "replica-serve-stale-data", "yes"]), b"+OK\r\n");
    assert_eq!(call_text(&mut k, &["GET", "k"]), b"$1\r\nv\r\n");
    let down = info(replica.port, "replication");
    assert!(info_value(&down, "master_link_down_since_seconds").parse::<i64>().is_ok_and(|s| s >= 0), "{down}");

    // A writable replica takes writes again, and a promoted one is a
    // master with its data.
    assert_eq!(call_text(&mut k, &["CONFIG", "SET", "replica-read-only", "no"]), b"+OK\r\n");
    assert_eq!(call_text(&mut k, &["SET", "local", "1"]), b"+OK\r\n");
    assert_eq!(call_text(&mut k, &["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    assert_eq!(call_text(&mut k, &["GET", "k"]), b"$1\r\nv\r\n");
    assert!(call_text(&mut k, &["ROLE"]).starts_with(b"*3\r\n$6\r\nmaster\r\n"));
    // The log names the role, as Redis's does: S while a replica.
    let text = std::fs::read_to_string(&log).expect("the log");
    let role_of = |what: &str| {
        text.lines().find(|l| l.contains(what)).and_then(|l| l.split(' ').next()).map(|p| p.ends_with(":S"))
    };
    assert_eq!(role_of("MASTER <-> REPLICA sync started"), Some(true), "{text}");
    assert_eq!(role_of("MASTER MODE enabled"), Some(false), "{text}");
}

#[test]
fn wait_counts_the_replicas_that_have_a_clients_writes() {
    if start_redis_or_skip("wait").is_none() {
        return;
    }
    // The default delay of 5 s, cut short by the second replica: one
    // snapshot for both.
    let master = start_kvik_with(&["--repl-diskless-sync-max-replicas", "2"]);
    let mut m = connect(master.port);
    assert_eq!(call_text(&mut m, &["WAIT", "0", "0"]), b":0\r\n");
    assert_eq!(call_text(&mut m, &["WAIT", "x", "1"]), b"-ERR value is not an integer or out of range\r\n");
    assert_eq!(call_text(&mut m, &["WAIT", "1", "x"]), b"-ERR timeout is not an integer or out of range\r\n");
    assert_eq!(call_text(&mut m, &["WAIT", "1", "-1"]), b"-ERR timeout is negative\r\n");
    let started = Instant::now();
    assert_eq!(call_text(&mut m, &["WAIT", "1", "200"]), b":0\r\n", "no replica: the timeout's answer");
    assert!(started.elapsed() >= Duration::from_millis(200));

    let port = master.port.to_string();
    let started = Instant::now();
    let redis = start_redis_with_or_skip("wait-replica", &["--replicaof", "127.0.0.1", &port]).expect("redis");
    let kvik = start_kvik_with(&["--replicaof", "127.0.0.1", &port]);
    wait_for("both links", 30, || link_up(redis.port) && link_up(kvik.port));
    wait_for("both online", 30, || info(master.port, "replication").matches("state=online").count() == 2);
    let persistence = info(master.port, "persistence");
    assert_eq!(info_value(&persistence, "rdb_saves"), "1", "one diskless snapshot served both");
    assert!(started.elapsed() < Duration::from_secs(4), "not the 5 s delay: {:?}", started.elapsed());
    assert_eq!(stat(master.port, "sync_full"), "2");
    for i in 0..20 {
        let value = format!("v{i}");
        call_text(&mut m, &["SET", "k", &value]);
        // The master asks for acknowledgements at once: no waiting for
        // the replicas' own one-second ones.
        let started = Instant::now();
        assert_eq!(call_text(&mut m, &["WAIT", "2", "5000"]), b":2\r\n");
        assert!(started.elapsed() < Duration::from_millis(900), "{:?}", started.elapsed());
        let want = format!("${}\r\n{value}\r\n", value.len()).into_bytes();
        for replica in [redis.port, kvik.port] {
            assert_eq!(call_text(&mut connect(replica), &["GET", "k"]), want, "WAIT said the replica has it");
        }
    }
    let started = Instant::now();
    assert_eq!(call_text(&mut m, &["WAIT", "3", "300"]), b":2\r\n");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(call_text(&mut m, &["MULTI"]), b"+OK\r\n");
    assert_eq!(call_text(&mut m, &["WAIT", "5", "0"]), b"+QUEUED\r\n");
    assert!(call_text(&mut m, &["EXEC"]).starts_with(b"*1\r\n:"), "inside EXEC it answers at once");

    // CLIENT UNBLOCK ends a WAIT with the count so far.
    let id = String::from_utf8_lossy(&call_text(&mut m, &["CLIENT", "ID"]))
        .trim_matches(|c| c == ':' || c == '\r' || c == '\n')
        .to_string();
    use std::io::Write;
    m.write_all(&diff::multibulk(&[b"WAIT", b"5", b"0"])).expect("send");
    let mut other = connect(master.port);
    wait_for("the client to block", 10, || info_value(&info(master.port, "clients"), "blocked_clients") == "1");
    assert_eq!(call_text(&mut other, &["CLIENT", "UNBLOCK", &id]), b":1\r\n");
    assert_eq!(read_until(&mut m, reply_complete).bytes, b":2\r\n");

    let refused = b"-ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.\r\n";
    assert_eq!(call_text(&mut connect(kvik.port), &["WAIT", "0", "0"]), refused);
}

#[test]
fn min_replicas_to_write_refuses_writes_without_good_replicas() {
    if start_redis_or_skip("min-replicas").is_none() {
        return;
    }
    let master = start_kvik_with(&["--min-replicas-to-write", "1", NO_DELAY[0], NO_DELAY[1]]);
    let mut m = connect(master.port);
    let refused = b"-NOREPLICAS Not enough good replicas to write.\r\n";
    assert_eq!(call_text(&mut m, &["SET", "k", "v"]), refused);
    assert_eq!(call_text(&mut m, &["GET", "k"]), b"$-1\r\n", "reads go on");
    assert_eq!(call_text(&mut m, &["EVAL", "#!lua\nreturn 1", "0"]), refused, "a script that may write");
    assert_eq!(info_value(&info(master.port, "replication"), "min_slaves_good_slaves"), "0");

    let port = master.port.to_string();
    let replica = start_redis_with_or_skip("min-replica", &["--replicaof", "127.0.0.1", &port]).expect("redis");
    wait_for("a good replica", 30, || call_text(&mut m, &["SET", "k", "v"]) == b"+OK\r\n");
    assert_eq!(info_value(&info(master.port, "replication"), "min_slaves_good_slaves"), "1");
    drop(replica);
    wait_for("the replica's loss", 30, || call_text(&mut m, &["SET", "k", "w"]) == refused);
    assert_eq!(call_text(&mut m, &["CONFIG", "SET", "min-replicas-max-lag", "0"]), b"+OK\r\n");
    assert_eq!(call_text(&mut m, &["SET", "k", "w"]), b"+OK\r\n", "a lag of 0 turns the rule off");
    assert!(!info(master.port, "replication").contains("min_slaves_good_slaves"));
}

/// What Sentinel relies on after it moves a master: CONFIG REWRITE keeps
/// the role in the file, `replicaof` while a replica and no line once
/// promoted, as Redis's rewrite does.
#[test]
fn config_rewrite_keeps_the_role() {
    let master = start_kvik_with(&NO_DELAY);
    let dir = ScratchDir::new("repl-rewrite");
    let file = dir.path().join("kvik.conf");
    std::fs::write(&file, format!("replicaof 127.0.0.1 {}\n", master.port)).expect("config");
    // The file comes first, so not through start_kvik_with.
    let args = [file.display().to_string(), "--bind".into(), "127.0.0.1".into(), "--port".into(), "{port}".into()];
    let bin = env!("CARGO_BIN_EXE_kvik-server");
    let replica = kvik_testkit::start(
        "kvik",
        bin.into(),
        args.into_iter()
            .chain(["--save".into(), String::new(), "--dir".into(), dir.path().display().to_string()])
            .collect(),
    );
    wait_for("the link", 30, || link_up(replica.port));
    let mut k = connect(replica.port);
    let other = free_port().to_string();
    assert_eq!(call_text(&mut k, &["REPLICAOF", "127.0.0.1", &other]), b"+OK\r\n");
    assert_eq!(call_text(&mut k, &["CONFIG", "REWRITE"]), b"+OK\r\n");
    let text = std::fs::read_to_string(&file).expect("read");
    assert_eq!(text.matches("replicaof").count(), 1, "{text}");
    assert!(text.contains(&format!("replicaof 127.0.0.1 {other}\n")), "{text}");
    assert_eq!(call_text(&mut k, &["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    assert_eq!(call_text(&mut k, &["CONFIG", "REWRITE"]), b"+OK\r\n");
    let text = std::fs::read_to_string(&file).expect("read");
    assert!(!text.contains("replicaof"), "{text}");
}

/// `repl-backlog-ttl`: a master without replicas for that long frees its
/// backlog and takes a new replication id, so a replica that comes back
/// syncs in full; while one is attached the backlog stays.
#[test]
fn an_idle_backlog_goes_after_its_ttl() {
    let master = start_kvik_with(&["--repl-backlog-ttl", "1", NO_DELAY[0], NO_DELAY[1]]);
    let mut m = connect(master.port);
    call_text(&mut m, &["SET", "k", "v"]);
    let replica = start_kvik_with(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
    wait_for("the link", 30, || link_up(replica.port));
    let before = info(master.port, "replication");
    assert_eq!(info_value(&before, "repl_backlog_active"), "1");
    thread::sleep(Duration::from_millis(2500));
    assert_eq!(info_value(&info(master.port, "replication"), "repl_backlog_active"), "1", "a replica is attached");
    // To a master that is not there: the replica keeps the stream's id
    // and offset, so that coming back would continue, but for the TTL.
    let mut r = connect(replica.port);
    let nowhere = free_port().to_string();
    assert_eq!(call_text(&mut r, &["REPLICAOF", "127.0.0.1", &nowhere]), b"+OK\r\n");
    wait_for("the backlog to go", 10, || info_value(&info(master.port, "replication"), "repl_backlog_active") == "0");
    let after = info(master.port, "replication");
    assert_ne!(info_value(&after, "master_replid"), info_value(&before, "master_replid"));
    assert_eq!(info_value(&after, "repl_backlog_histlen"), "0");
    assert_eq!(info_value(&after, "master_replid2"), "0000000000000000000000000000000000000000");
    let offset = info_value(&after, "master_repl_offset");
    call_text(&mut m, &["SET", "k", "w"]);
    assert_eq!(info_value(&info(master.port, "replication"), "master_repl_offset"), offset, "no backlog, no offset");
    let full_before = stat(master.port, "sync_full");
    assert_eq!(call_text(&mut r, &["REPLICAOF", "127.0.0.1", &master.port.to_string()]), b"+OK\r\n");
    wait_for("the link again", 30, || link_up(replica.port));
    assert_eq!(call_text(&mut r, &["GET", "k"]), b"$1\r\nw\r\n");
    let full: u64 = stat(master.port, "sync_full").parse().expect("count");
    assert_eq!(full, full_before.parse::<u64>().expect("count") + 1, "a full resync: the old id is gone");
}

/// Clients that `INCR` a counter of their own on `port`, one request at a
/// time, until a reply is not a number (`-READONLY` once the server is a
/// replica). Each returns its key and the last value it was told.
fn counters(port: u16, clients: usize) -> Vec<thread::JoinHandle<(String, i64)>> {
    (0..clients)
        .map(|i| {
            thread::spawn(move || {
                let key = format!("counter:{i}");
                let mut s = connect(port);
                let mut last = 0;
                loop {
                    let reply = call_text(&mut s, &["INCR", &key]);
                    match std::str::from_utf8(&reply).ok().and_then(|r| r.strip_prefix(':')?.trim().parse().ok()) {
                        Some(n) => last = n,
                        None => {
                            assert!(reply.starts_with(b"-READONLY"), "{}", String::from_utf8_lossy(&reply));
                            return (key, last);
                        }
                    }
                }
            })
        })
        .collect()
}

fn role_of(port: u16) -> String {
    info_value(&info(port, "replication"), "role").to_string()
}

/// `FAILOVER TO` under a write load: the replica named becomes the master
/// with every write the old master acknowledged and none it refused; the
/// old master follows it from its own offset (no full sync), and so does
/// the other replica, through it.
#[test]
fn failover_hands_over_to_a_kvik_replica_without_losing_a_write() {
    let master = start_kvik_with(&["--threads", "4", NO_DELAY[0], NO_DELAY[1]]);
    let mport = master.port.to_string();
    let (r1, r2) = (
        start_kvik_with(&["--replicaof", "127.0.0.1", &mport]),
        start_kvik_with(&["--replicaof", "127.0.0.1", &mport]),
    );
    wait_for("both links", 30, || link_up(r1.port) && link_up(r2.port));
    let mut m = connect(master.port);
    let mut r = connect(r1.port);
    assert_eq!(call_text(&mut r, &["FAILOVER"]), b"-ERR FAILOVER is not valid when server is a replica.\r\n");
    let refusals: [(&[&str], &[u8]); 6] = [
        (&["FAILOVER", "ABORT"], b"-ERR No failover in progress.\r\n"),
        (&["FAILOVER", "TIMEOUT", "0"], b"-ERR FAILOVER timeout must be greater than 0\r\n"),
        (&["FAILOVER", "TIMEOUT", "x"], b"-ERR value is not an integer or out of range\r\n"),
        (
            &["FAILOVER", "FORCE"],
            b"-ERR FAILOVER with force option requires both a timeout and target HOST and IP.\r\n",
        ),
        (&["FAILOVER", "TO", "127.0.0.1", "1"], b"-ERR FAILOVER target HOST and PORT is not a replica.\r\n"),
        (&["FAILOVER", "ABORT", "TIMEOUT", "5"], b"-ERR syntax error\r\n"),
    ];
    for (args, want) in refusals {
        assert_eq!(call_text(&mut m, args), want, "{args:?}");
    }
    assert_eq!(info_value(&info(master.port, "replication"), "master_failover_state"), "no-failover");

    let clients = counters(master.port, 4);
    thread::sleep(Duration::from_millis(500));
    let r1port = r1.port.to_string();
    assert_eq!(call_text(&mut m, &["FAILOVER", "TO", "127.0.0.1", &r1port, "TIMEOUT", "20000"]), b"+OK\r\n");
    let told: Vec<(String, i64)> = clients.into_iter().map(|c| c.join().expect("client")).collect();
    wait_for("the roles to swap", 30, || role_of(r1.port) == "master" && link_up(master.port));
    let m_info = info(master.port, "replication");
    assert_eq!(info_value(&m_info, "master_failover_state"), "no-failover");
    assert_eq!(info_value(&m_info, "master_port"), r1port);
    for (key, last) in &told {
        assert!(*last > 0, "{key} was written");
        let want = format!(":{last}\r\n");
        let got = call_text(&mut r, &["INCRBY", key, "0"]);
        assert_eq!(String::from_utf8_lossy(&got), want, "the new master has every acknowledged write of {key}");
    }
    assert_eq!(stat(r1.port, "sync_full"), "0", "the old master continued from its offset");
    assert_eq!(stat(r1.port, "sync_partial_ok"), "1");
    wait_for("the old master to catch up", 30, || offset(master.port) == offset(r1.port));
    wait_for("the other replica to catch up", 30, || offset(r2.port) == offset(r1.port));
    let mut r2c = connect(r2.port);
    for (key, last) in &told {
        assert_eq!(call_text(&mut m, &["GET", key]), format!("${}\r\n{last}\r\n", last.to_string().len()).as_bytes());
        assert_eq!(call_text(&mut r2c, &["GET", key]), format!("${}\r\n{last}\r\n", last.to_string().len()).as_bytes());
    }
}

/// The ways a failover ends without handing over: `TIMEOUT` while the
/// replica lags (a redis-server replica in `DEBUG SLEEP`), and `FAILOVER
/// ABORT`; writes go on on the master. Then `FORCE` hands over at the
/// timeout anyway, and redis-server takes over as kvik asks it to.
#[test]
fn failover_gives_up_at_its_timeout_and_on_abort_and_forces_its_way_to_redis() {
    let master = start_kvik_with(&NO_DELAY);
    let mport = master.port.to_string();
    let Some(redis) =
        start_redis_with_or_skip("failover", &["--replicaof", "127.0.0.1", &mport, "--enable-debug-command", "yes"])
    else {
        return;
    };
    wait_for("the link", 30, || link_up(redis.port));
    let rport = redis.port.to_string();
    let mut m = connect(master.port);
    let sleeper = || {
        let port = redis.port;
        thread::spawn(move || call_text(&mut connect(port), &["DEBUG", "SLEEP", "3"]))
    };

    let asleep = sleeper();
    thread::sleep(Duration::from_millis(200));
    call_text(&mut m, &["SET", "k", "1"]);
    assert_eq!(call_text(&mut m, &["FAILOVER", "TO", "127.0.0.1", &rport, "TIMEOUT", "300"]), b"+OK\r\n");
    assert_eq!(info_value(&info(master.port, "replication"), "master_failover_state"), "waiting-for-sync");
    assert_eq!(call_text(&mut m, &["FAILOVER"]), b"-ERR FAILOVER already in progress.\r\n");
    assert_eq!(call_text(&mut m, &["REPLICAOF", "NO", "ONE"]), b"-ERR REPLICAOF not allowed while failing over.\r\n");
    wait_for("the timeout", 10, || info(master.port, "replication").contains("master_failover_state:no-failover"));
    assert_eq!(role_of(master.port), "master");
    assert_eq!(call_text(&mut m, &["SET", "k", "2"]), b"+OK\r\n", "writes go on");

    assert_eq!(call_text(&mut m, &["FAILOVER"]), b"+OK\r\n");
    assert_eq!(call_text(&mut m, &["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    assert_eq!(info_value(&info(master.port, "replication"), "master_failover_state"), "waiting-for-sync");
    assert_eq!(call_text(&mut m, &["FAILOVER", "ABORT"]), b"+OK\r\n");
    assert_eq!(call_text(&mut m, &["SET", "k", "3"]), b"+OK\r\n");
    asleep.join().expect("sleep");

    let asleep = sleeper();
    thread::sleep(Duration::from_millis(200));
    call_text(&mut m, &["SET", "k", "4"]);
    assert_eq!(call_text(&mut m, &["FAILOVER", "TO", "127.0.0.1", &rport, "TIMEOUT", "300", "FORCE"]), b"+OK\r\n");
    asleep.join().expect("sleep");
    wait_for("redis to take over", 30, || role_of(redis.port) == "master" && link_up(master.port));
    let mut r = connect(redis.port);
    assert_eq!(call_text(&mut r, &["GET", "k"]), b"$1\r\n4\r\n");
    assert_eq!(
        call_text(&mut m, &["SET", "k", "5"]),
        &b"-READONLY You can't write against a read only replica.\r\n"[..]
    );
    assert_eq!(stat(redis.port, "sync_partial_ok"), "1", "kvik continued from its offset");
}

/// redis-server hands over to a kvik replica: kvik takes `PSYNC ...
/// FAILOVER` as Redis does, and redis-server continues from its offset.
#[test]
fn redis_fails_over_to_a_kvik_replica() {
    let Some(redis) = start_redis_with_or_skip("failover-redis", &["--repl-diskless-sync-delay", "0"]) else {
        return;
    };
    let replica = start_kvik_with(&["--replicaof", "127.0.0.1", &redis.port.to_string()]);
    wait_for("the link", 30, || link_up(replica.port));
    let mut r = connect(redis.port);
    for i in 0..100 {
        call_text(&mut r, &["SET", &format!("k{i}"), &i.to_string()]);
    }
    let mut k = connect(replica.port);
    let mine = info_value(&info(replica.port, "replication"), "master_replid").to_string();
    assert_eq!(
        call_text(&mut k, &["PSYNC", "0123456789012345678901234567890123456789", "1", "FAILOVER"]),
        b"-ERR PSYNC FAILOVER replid must match my replid.\r\n"
    );
    assert_eq!(role_of(replica.port), "slave");
    let kport = replica.port.to_string();
    assert_eq!(call_text(&mut r, &["FAILOVER", "TO", "127.0.0.1", &kport]), b"+OK\r\n");
    wait_for("kvik to take over", 30, || role_of(replica.port) == "master" && link_up(redis.port));
    let k_info = info(replica.port, "replication");
    assert_eq!(info_value(&k_info, "master_replid2"), mine);
    assert_eq!(stat(replica.port, "sync_partial_ok"), "1", "redis continued from its offset");
    assert_eq!(call_text(&mut k, &["SET", "k100", "100"]), b"+OK\r\n");
    wait_for("redis to have it", 30, || call_text(&mut r, &["GET", "k100"]) == b"$3\r\n100\r\n");
}
