//! Replication with kvik as the master: redis-server 7.0 as its replica
//! (full sync under a write load, then a partial resync after the link is
//! cut) and `redis-cli --rdb`.
//!
//! The replica's keyspace is compared with kvik's through redis-server
//! itself: `DEBUG DIGEST` of the replica against that of a second
//! redis-server that loaded kvik's own snapshot, taken once the replica
//! has acknowledged the whole stream.

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

/// Writes of every type, pipelined, by `writers` threads until `stop`.
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
                    let cmds: [Vec<String>; 10] = [
                        vec!["SET".into(), format!("s:{w}:{k}"), format!("v{round}")],
                        vec!["INCR".into(), format!("n:{k}")],
                        vec!["RPUSH".into(), format!("l:{}", k % 50), format!("{w}-{round}")],
                        vec!["HSET".into(), format!("h:{}", k % 50), format!("f{w}"), format!("{round}")],
                        vec!["SADD".into(), format!("set:{}", k % 50), format!("{}", round % 97)],
                        vec!["ZADD".into(), format!("z:{}", k % 50), format!("{}", round % 13), format!("m{w}")],
                        vec!["EXPIRE".into(), format!("s:{w}:{k}"), "100000".into()],
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
    let kdir_s = kdir.path().display().to_string();
    let kvik = start_kvik_with(&["--threads", "4", "--dir", &kdir_s]);
    let stop = Arc::new(AtomicBool::new(false));
    let writers = write_load(kvik.port, 3, &stop);
    thread::sleep(Duration::from_millis(300));
    let port = kvik.port.to_string();
    let replica =
        start_redis_with_or_skip("replica", &["--replicaof", "127.0.0.1", &port, "--enable-debug-command", "yes"])
            .expect("redis");
    wait_for("the replica's link", 30, || info(replica.port, "replication").contains("master_link_status:up"));
    thread::sleep(Duration::from_millis(500));
    let k_info = info(kvik.port, "replication");
    assert!(k_info.contains("connected_slaves:1"), "{k_info}");
    assert!(k_info.contains(",state=online,"), "{k_info}");
    assert_eq!(info_value(&info(kvik.port, "stats"), "sync_full"), "1");
    let mut k = connect(kvik.port);
    let listed = String::from_utf8_lossy(&call_text(&mut k, &["CLIENT", "LIST", "TYPE", "replica"])).into_owned();
    assert!(listed.contains("flags=S"), "{listed}");

    // Cut the link while the writes go on: the replica comes back with
    // PSYNC and resumes from the backlog.
    let killed = call_text(&mut k, &["CLIENT", "KILL", "TYPE", "replica"]);
    assert_eq!(killed, b":1\r\n");
    wait_for("a partial resync", 30, || info_value(&info(kvik.port, "stats"), "sync_partial_ok") == "1");
    wait_for("the link again", 30, || info(replica.port, "replication").contains("master_link_status:up"));
    thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let rounds: usize = writers.into_iter().map(|w| w.join().expect("writer")).sum();
    assert!(rounds > 10, "the load ran: {rounds} rounds");
    assert_eq!(info_value(&info(kvik.port, "stats"), "sync_full"), "1", "no second full sync");

    let master_offset = || info_value(&info(kvik.port, "replication"), "master_repl_offset").to_string();
    wait_for("the replica to catch up", 30, || {
        info_value(&info(replica.port, "replication"), "master_repl_offset") == master_offset()
    });
    assert_eq!(call_text(&mut k, &["SAVE"]), b"+OK\r\n");
    let want = digest_of_snapshot(kdir.path());
    assert_eq!(digest(replica.port), want, "the replica holds what kvik holds ({rounds} rounds of writes)");
    assert!(want.starts_with('+') && !want.contains("0000000000000000000000000000000000000000"), "{want}");
}

#[test]
fn redis_cli_rdb_takes_a_snapshot_alone() {
    if start_redis_or_skip("rdb").is_none() {
        return;
    }
    let kvik = start_kvik();
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
