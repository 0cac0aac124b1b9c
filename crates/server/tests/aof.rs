//! The append-only file: what kvik writes replays to the keyspace it had —
//! in kvik after a restart, and in a real redis-server 7.0 that loads
//! kvik's `appendonlydir` (redis-server's `DEBUG DIGEST` is the judge, as
//! for snapshots); kvik loads redis-server's; `redis-check-aof` accepts
//! kvik's files; a file cut short loads as far as it is whole when
//! `aof-load-truncated` allows, and stops the start otherwise; nothing a
//! client was told is written is lost when the server is killed.

mod common;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::rng::Rng;
use common::{
    call, call_line as ok, call_ok, call_text, connect, info_value, run_threads, start_kvik_with,
    start_redis_with_or_skip, wait_for_rewrite,
};

/// A fresh directory for one test's files.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kvik-aof-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn kvik_aof(dir: &Path, fsync: &str) -> kvik_testkit::Server {
    let dir = dir.to_str().unwrap_or("");
    start_kvik_with(&["--dir", dir, "--appendonly", "yes", "--appendfsync", fsync, "--threads", "2"])
}

/// redis-server on `dir`, loading its `dump.rdb`, or its append-only
/// directory with `aof`.
fn redis_on(dir: &Path, aof: bool) -> Option<kvik_testkit::Server> {
    let dir = dir.to_str().unwrap_or("");
    let appendonly = if aof { "yes" } else { "no" };
    // `always`: with `everysec` redis-server postpones its writes while a
    // slow fsync runs (a loaded machine), and a kill then loses them.
    let args = ["--dir", dir, "--enable-debug-command", "yes", "--appendonly", appendonly, "--appendfsync", "always"];
    start_redis_with_or_skip("aof", &args)
}

fn digest(port: u16) -> Vec<u8> {
    let mut r = connect(port);
    call(&mut r, &[b"DEBUG", b"DIGEST"])
}

/// Commands whose outcome depends on the moment or on chance, and the
/// ordinary ones around them, over several databases.
const SCRIPT: &[&str] = &[
    "SET plain v1",
    "SET ttl-ex v EX 1000",
    "SET ttl-px v PX 1000000 NX",
    "SETEX ttl-setex 1000 v",
    "PSETEX ttl-psetex 1000000 v",
    "SET counter 10",
    "INCRBY counter 5",
    "SADD lua-set a b c d e",
    "INCRBYFLOAT float 1.25",
    "INCRBYFLOAT float 0.1",
    "EXPIRE counter 5000",
    "PEXPIRE plain 5000000 NX",
    "EXPIREAT float 4102444800",
    "SET gone x",
    "EXPIRE gone -1",
    "GETEX ttl-ex PERSIST",
    "GETEX ttl-px EX 3000",
    "RPUSH list a b c d e f g",
    "LMPOP 1 list RIGHT COUNT 2",
    "LMOVE list list2 LEFT RIGHT",
    "SADD set a b c d e f g h",
    "SPOP set",
    "SPOP set 3",
    "SADD set2 x y",
    "SPOP set2 5",
    "ZADD z 1 a 2 b 3 c 4 d",
    "ZMPOP 1 z MAX COUNT 2",
    "ZPOPMIN z",
    "HSET h f 1 g 2",
    "HINCRBYFLOAT h f 0.5",
    "HINCRBY h g 3",
    "PFADD hll a b c",
    "PFCOUNT hll",
    "SELECT 3",
    "SET in-three yes",
    "RPUSH l3 x",
    "MOVE in-three 4",
    "COPY l3 l3-copy DB 5",
    "SELECT 0",
    "RENAME plain renamed",
    "SWAPDB 3 6",
    "SELECT 7",
    "SET doomed x",
    "FLUSHDB",
    "SET survivor y",
    "SELECT 0",
];

/// Run [`SCRIPT`], a blocking pop served by another client, a dump
/// restored with a TTL, transactions, and keys that expire and are
/// written again.
fn workload(port: u16) {
    let mut k = connect(port);
    for line in SCRIPT {
        ok(&mut k, line);
    }
    // A script's writes, the random one among them, go to the file as
    // their effects, together.
    let body = "redis.call('incr', KEYS[1]) redis.call('spop', 'lua-set') return redis.call('set', 'from-lua', 'x', 'EX', 100)";
    call_ok(&mut k, &[b"EVAL", body.as_bytes(), b"1", b"scripted"]);
    call_ok(&mut k, &[b"EVAL", b"return redis.call('get', 'from-lua')", b"0"]);
    ok(&mut k, "MULTI");
    ok(&mut k, "SET tx-a 1");
    ok(&mut k, "INCR tx-a");
    ok(&mut k, "SPOP set");
    ok(&mut k, "EXEC");
    ok(&mut k, "MULTI");
    ok(&mut k, "SET tx-single 1");
    ok(&mut k, "EXEC");
    let payload = call(&mut k, &[b"DUMP", b"h"]);
    let bytes = &payload[payload.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1)..payload.len() - 2];
    call_ok(&mut k, &[b"RESTORE", b"h-restored", b"100000", bytes]);
    // A blocked pop, served by a push from another client.
    let mut waiter = connect(port);
    std::io::Write::write_all(&mut waiter, b"*3\r\n$5\r\nBLPOP\r\n$6\r\nqueue1\r\n$1\r\n0\r\n").expect("send");
    std::thread::sleep(Duration::from_millis(100));
    ok(&mut k, "RPUSH queue1 job1 job2");
    let served = common::read_until(&mut waiter, common::reply_complete);
    assert_eq!(served.bytes, b"*2\r\n$6\r\nqueue1\r\n$4\r\njob1\r\n");
    // Keys that expire: removed by the server (on lookup, or by the
    // expiry cycle), then written again; the file must say they went.
    for i in 0..20 {
        ok(&mut k, &format!("SET short:{i} old PX 30"));
    }
    std::thread::sleep(Duration::from_millis(120));
    for i in 0..20 {
        ok(&mut k, &format!("APPEND short:{i} new"));
    }
}

/// Clients writing the same few keys at once, from both of the server's
/// threads, with transactions and multi-key commands among them: the file
/// must put each key's changes in the order they were made.
fn concurrent_writes(port: u16) {
    run_threads(4, Duration::from_secs(60), move |t| {
        let mut k = connect(port);
        let mut rng = Rng::new(t as u64 + 11);
        for i in 0..400 {
            let a = format!("c{}", rng.below(6));
            let b = format!("c{}", rng.below(6));
            let v = format!("{t}-{i}");
            // Scripts write a declared key and then keys they did not
            // declare, in shards others may hold: some runs are put back
            // and started over, and the file must hold each once.
            let script = "redis.call('APPEND', KEYS[1], ARGV[1]) \
                 redis.call('RPUSH', 'l' .. ARGV[2], ARGV[1]) \
                 local m = redis.call('SPOP', 's' .. ARGV[3]) \
                 if m then redis.call('SET', 'c' .. ARGV[2], m) end return 1";
            if rng.below(11) >= 9 {
                let (n, s) = (rng.below(3).to_string(), rng.below(2).to_string());
                call(
                    &mut k,
                    &[b"EVAL", script.as_bytes(), b"1", a.as_bytes(), v.as_bytes(), n.as_bytes(), s.as_bytes()],
                );
                continue;
            }
            let line = match rng.below(9) {
                0 => format!("SET {a} {v}"),
                1 => format!("APPEND {a} {v}"),
                2 => format!("DEL {a}"),
                3 => format!("RPUSH l{} {v}", rng.below(3)),
                4 => format!("LMOVE l{} l{} LEFT RIGHT", rng.below(3), rng.below(3)),
                5 => format!("MSET {a} {v} {b} {v}"),
                6 => format!("SADD s{} {v}", rng.below(2)),
                7 => format!("SPOP s{}", rng.below(2)),
                _ => {
                    ok(&mut k, "MULTI");
                    ok(&mut k, &format!("RENAME {a} {a}"));
                    ok(&mut k, &format!("SET {b} {v}"));
                    "EXEC".to_string()
                }
            };
            let words: Vec<&str> = line.split(' ').collect();
            // Wrong types and missing keys are part of the mix.
            call_text(&mut k, &words);
        }
    });
}

#[test]
fn the_file_replays_to_the_same_data_in_kvik_and_in_redis() {
    let dir = temp_dir("replay");
    let kvik = kvik_aof(&dir, "always");
    workload(kvik.port);
    concurrent_writes(kvik.port);
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"SAVE"]), b"+OK\r\n");
    let info = String::from_utf8_lossy(&call(&mut k, &[b"INFO", b"persistence"])).into_owned();
    assert_eq!(info_value(&info, "aof_enabled"), "1");
    assert_eq!(info_value(&info, "aof_last_write_status"), "ok");
    drop(kvik);

    // The snapshot is the keyspace kvik had; redis-server loading kvik's
    // append-only directory must come to the same.
    let Some(redis) = redis_on(&dir, false) else { return };
    let want = digest(redis.port);
    drop(redis);
    let check = Command::new("redis-check-aof")
        .arg(dir.join("appendonlydir/appendonly.aof.manifest"))
        .output()
        .expect("redis-check-aof runs");
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(report.contains("All AOF files and manifest are valid"), "{report}");
    let redis = redis_on(&dir, true).expect("redis ran above");
    assert_eq!(digest(redis.port), want, "redis-server replaying kvik's append-only file");
    drop(redis);

    // kvik replays its own file to the same.
    std::fs::remove_file(dir.join("dump.rdb")).expect("remove the snapshot");
    let kvik = kvik_aof(&dir, "everysec");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"SAVE"]), b"+OK\r\n");
    drop(kvik);
    let redis = redis_on(&dir, false).expect("redis ran above");
    assert_eq!(digest(redis.port), want, "kvik replaying its own file");
    drop(redis);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn kvik_replays_the_files_redis_writes() {
    let (redis_dir, kvik_dir) = (temp_dir("from-redis"), temp_dir("from-redis-kvik"));
    let Some(redis) = redis_on(&redis_dir, true) else { return };
    let mut r = connect(redis.port);
    for line in SCRIPT {
        ok(&mut r, line);
    }
    // A base with the data so far (RDB preamble), then more commands.
    ok(&mut r, "BGREWRITEAOF");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info = String::from_utf8_lossy(&call(&mut r, &[b"INFO", b"persistence"])).into_owned();
        if info_value(&info, "aof_rewrite_in_progress") == "0" && info_value(&info, "aof_rewrite_scheduled") == "0" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "redis-server's rewrite did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    ok(&mut r, "SET after-rewrite 1");
    ok(&mut r, "SADD set late");
    let want = digest(redis.port);
    drop(redis);
    let copy = |from: &Path, to: &Path| {
        std::fs::create_dir_all(to).expect("mkdir");
        for e in std::fs::read_dir(from).expect("read dir").flatten() {
            std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
        }
    };
    copy(&redis_dir.join("appendonlydir"), &kvik_dir.join("appendonlydir"));
    let kvik = kvik_aof(&kvik_dir, "everysec");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"GET", b"after-rewrite"]), b"$1\r\n1\r\n");
    assert_eq!(call(&mut k, &[b"SAVE"]), b"+OK\r\n");
    drop(kvik);
    let redis = redis_on(&kvik_dir, false).expect("redis ran above");
    assert_eq!(digest(redis.port), want, "redis-server's file through kvik");
    drop(redis);
    for d in [redis_dir, kvik_dir] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_first_start_creates_the_files_and_the_file_wins_over_the_snapshot() {
    let dir = temp_dir("first-start");
    let d = dir.to_str().unwrap_or("");
    let kvik = start_kvik_with(&["--dir", d]);
    let mut k = connect(kvik.port);
    ok(&mut k, "SET from-snapshot 1");
    assert_eq!(call(&mut k, &[b"SAVE"]), b"+OK\r\n");
    drop(kvik);
    // As in Redis 7.0: with appendonly yes the snapshot is not read, even
    // when there is no append-only file yet; the directory is created with
    // an empty base and a first incremental file.
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"DBSIZE"]), b":0\r\n");
    let manifest = std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).expect("manifest");
    assert_eq!(manifest, "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n");
    ok(&mut k, "SET a 1");
    ok(&mut k, "SELECT 2");
    ok(&mut k, "SET b 2");
    let incr = std::fs::read(dir.join("appendonlydir/appendonly.aof.1.incr.aof")).expect("incr");
    assert_eq!(
        incr,
        b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\n2\r\n",
        "with always, the write is in the file before the reply"
    );
    drop(kvik);
    // A later start appends to the same incremental file.
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"GET", b"a"]), b"$1\r\n1\r\n");
    ok(&mut k, "SET c 3");
    let manifest_again = std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).expect("manifest");
    assert_eq!(manifest_again, manifest);
    drop(kvik);
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"MGET", b"a", b"c"]), b"*2\r\n$1\r\n1\r\n$1\r\n3\r\n");
    assert_eq!(call_text(&mut k, &["SELECT", "2"]), b"+OK\r\n");
    assert_eq!(call(&mut k, &[b"GET", b"b"]), b"$1\r\n2\r\n");
    drop(kvik);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn deadlines_hold_through_the_file_and_a_key_persisted_in_time_stays() {
    let dir = temp_dir("deadlines");
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    ok(&mut k, "SET saved v PX 300");
    ok(&mut k, "PERSIST saved");
    ok(&mut k, "SET goes v PX 300");
    ok(&mut k, "SET later v EX 1000");
    std::thread::sleep(Duration::from_millis(400));
    drop(kvik);
    // The deadlines passed while the server was down: the file still
    // replays PERSIST on a key that was live when it ran.
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"GET", b"saved"]), b"$1\r\nv\r\n");
    assert_eq!(call(&mut k, &[b"TTL", b"saved"]), b":-1\r\n");
    assert_eq!(call(&mut k, &[b"EXISTS", b"goes"]), b":0\r\n");
    let ttl = call(&mut k, &[b"TTL", b"later"]);
    assert!(ttl.starts_with(b":99") || ttl == b":1000\r\n", "the absolute deadline held: {}", ttl.escape_ascii());
    drop(kvik);
    let _ = std::fs::remove_dir_all(dir);
}

fn incr_file(dir: &Path) -> PathBuf {
    dir.join("appendonlydir/appendonly.aof.1.incr.aof")
}

fn write_some(dir: &Path) {
    let kvik = kvik_aof(dir, "always");
    let mut k = connect(kvik.port);
    ok(&mut k, "SET a 1");
    ok(&mut k, "SET b 2");
    drop(kvik);
}

#[test]
fn a_file_cut_in_a_command_loads_its_whole_part_when_allowed() {
    let dir = temp_dir("truncated");
    write_some(&dir);
    let whole = std::fs::read(incr_file(&dir)).expect("incr");
    let mut cut = whole.clone();
    cut.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$1");
    std::fs::write(incr_file(&dir), &cut).expect("write");
    // With aof-load-truncated no, the start stops with the reason.
    let out = Command::new(env!("CARGO_BIN_EXE_kvik-server"))
        .args(["--port", "0", "--dir", dir.to_str().unwrap_or(""), "--appendonly", "yes", "--save", ""])
        .args(["--aof-load-truncated", "no"])
        .output()
        .expect("kvik-server runs");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("Unexpected end of file reading the append only file appendonly.aof.1.incr.aof"), "{said}");
    assert_eq!(std::fs::read(incr_file(&dir)).expect("incr"), cut, "the file is left as it was");
    // With the default (yes), the whole commands load and the file is cut
    // back to them, so that what follows is appended after a whole one.
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"MGET", b"a", b"b", b"c"]), b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n");
    ok(&mut k, "SET d 4");
    drop(kvik);
    let now = std::fs::read(incr_file(&dir)).expect("incr");
    assert!(now.starts_with(&whole) && !now[whole.len()..].starts_with(b"*3\r\n$3\r\nSET\r\n$1\r\nc"), "cut back");
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"GET", b"d"]), b"$1\r\n4\r\n");
    drop(kvik);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_transaction_without_its_exec_is_reverted_and_damage_stops_the_start() {
    let dir = temp_dir("multi-cut");
    write_some(&dir);
    let whole = std::fs::read(incr_file(&dir)).expect("incr");
    let mut open = whole.clone();
    open.extend_from_slice(b"*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$2\r\n99\r\n");
    std::fs::write(incr_file(&dir), &open).expect("write");
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"GET", b"a"]), b"$1\r\n1\r\n", "the transaction never ran");
    drop(kvik);
    assert_eq!(std::fs::read(incr_file(&dir)).expect("incr"), whole, "cut back to before MULTI");

    let mut damaged = whole.clone();
    damaged.extend_from_slice(b"?garbage\r\n");
    std::fs::write(incr_file(&dir), &damaged).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_kvik-server"))
        .args(["--port", "0", "--dir", dir.to_str().unwrap_or(""), "--appendonly", "yes", "--save", ""])
        .output()
        .expect("kvik-server runs");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("Bad file format reading the append only file appendonly.aof.1.incr.aof"), "{said}");

    std::fs::write(incr_file(&dir), [&whole[..], b"*1\r\n$7\r\nNOTACMD\r\n"].concat()).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_kvik-server"))
        .args(["--port", "0", "--dir", dir.to_str().unwrap_or(""), "--appendonly", "yes", "--save", ""])
        .output()
        .expect("kvik-server runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("Unknown command 'NOTACMD' reading the append only file"), "{said}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn settings_change_at_runtime_as_far_as_kvik_can() {
    let dir = temp_dir("config");
    let kvik = kvik_aof(&dir, "everysec");
    let mut k = connect(kvik.port);
    ok(&mut k, "CONFIG SET appendfsync always");
    ok(&mut k, "SET a 1");
    let incr = std::fs::read(incr_file(&dir)).expect("incr");
    assert!(incr.ends_with(b"$1\r\na\r\n$1\r\n1\r\n"));
    ok(&mut k, "CONFIG SET appendonly no");
    let info = String::from_utf8_lossy(&call(&mut k, &[b"INFO", b"persistence"])).into_owned();
    assert_eq!(info_value(&info, "aof_enabled"), "0");
    ok(&mut k, "SET b 2");
    assert_eq!(std::fs::read(incr_file(&dir)).expect("incr"), incr, "no longer written");
    assert!(call_text(&mut k, &["BGREWRITEAOF"]).starts_with(b"-ERR the append-only file is off"));
    // Turned on again: a rewrite writes what the server holds as the base
    // of a new log, and the old files go.
    ok(&mut k, "CONFIG SET appendonly yes");
    wait_for_rewrite(&mut k);
    ok(&mut k, "SET c 3");
    let manifest = std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).expect("manifest");
    assert_eq!(manifest, "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n");
    assert!(!incr_file(&dir).exists(), "the old incremental file is gone");
    drop(kvik);
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"MGET", b"a", b"b", b"c"]), b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n");
    drop(kvik);
    let _ = std::fs::remove_dir_all(dir);
}

/// A rewrite while clients write: the new base and the new incremental
/// file hold every write, in kvik after a restart and in redis-server.
#[test]
fn a_rewrite_under_writes_keeps_every_write() {
    let dir = temp_dir("rewrite");
    let kvik = kvik_aof(&dir, "always");
    let port = kvik.port;
    workload(port);
    let mut k = connect(port);
    for i in 0..2000 {
        ok(&mut k, &format!("RPUSH big {i}"));
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut k = connect(port);
            let mut acked = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                assert!(call_text(&mut k, &["INCR", "during"]).starts_with(b":"));
                acked += 1;
            }
            acked
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(call_text(&mut k, &["BGREWRITEAOF"]), b"+Background append only file rewriting started\r\n");
    let busy = call_text(&mut k, &["BGSAVE"]);
    assert!(busy.starts_with(b"-ERR Another child process is active (AOF?)") || busy.starts_with(b"+"), "{busy:?}");
    assert_eq!(call_text(&mut k, &["SAVE"]), b"+OK\r\n", "SAVE runs beside a rewrite, as in Redis");
    let info = wait_for_rewrite(&mut k);
    assert_eq!(info_value(&info, "aof_last_bgrewrite_status"), "ok");
    assert_eq!(info_value(&info, "aof_rewrites"), "1");
    std::thread::sleep(Duration::from_millis(50));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acked = writer.join().expect("writer");
    let manifest = std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).expect("manifest");
    assert_eq!(manifest, "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n");
    assert!(!incr_file(&dir).exists() && !dir.join("appendonlydir/appendonly.aof.1.base.rdb").exists());
    assert_eq!(call(&mut k, &[b"SAVE"]), b"+OK\r\n");
    drop(kvik);
    let Some(redis) = redis_on(&dir, false) else { return };
    let want = digest(redis.port);
    drop(redis);
    let redis = redis_on(&dir, true).expect("redis ran above");
    assert_eq!(digest(redis.port), want, "redis-server replaying the rewritten files");
    drop(redis);
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    let got = String::from_utf8_lossy(&call_text(&mut k, &["GET", "during"])).into_owned();
    assert_eq!(got.lines().nth(1).and_then(|v| v.parse::<u64>().ok()), Some(acked), "every acknowledged INCR");
    assert_eq!(call_text(&mut k, &["LLEN", "big"]), b":2000\r\n");
    drop(kvik);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn with_auto_gc_off_a_rewrite_keeps_the_old_files_as_history() {
    let dir = temp_dir("no-gc");
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    ok(&mut k, "SET a 1");
    ok(&mut k, "CONFIG SET aof-disable-auto-gc yes");
    ok(&mut k, "BGREWRITEAOF");
    wait_for_rewrite(&mut k);
    ok(&mut k, "SET b 2");
    let manifest = std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).expect("manifest");
    assert_eq!(
        manifest,
        "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.1.base.rdb seq 1 type h\n\
         file appendonly.aof.1.incr.aof seq 1 type h\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
    );
    assert!(incr_file(&dir).exists(), "kept");
    drop(kvik);
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"MGET", b"a", b"b"]), b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n");
    drop(kvik);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_file_is_rewritten_when_it_has_grown_enough() {
    let dir = temp_dir("auto-rewrite");
    let kvik = kvik_aof(&dir, "everysec");
    let mut k = connect(kvik.port);
    ok(&mut k, "CONFIG SET auto-aof-rewrite-min-size 100000");
    ok(&mut k, "CONFIG SET auto-aof-rewrite-percentage 100");
    let value = "v".repeat(1000);
    for i in 0..200 {
        ok(&mut k, &format!("SET k{} {value}", i % 10));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info = String::from_utf8_lossy(&call(&mut k, &[b"INFO", b"persistence"])).into_owned();
        if info_value(&info, "aof_rewrites") == "1" && info_value(&info, "aof_rewrite_in_progress") == "0" {
            let (current, base) = (info_value(&info, "aof_current_size"), info_value(&info, "aof_base_size"));
            let (current, base): (u64, u64) = (current.parse().unwrap_or(0), base.parse().unwrap_or(0));
            assert!(current < 100_000 && base > 0 && current >= base, "the log is a base again: {info}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no automatic rewrite: {info}");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(kvik);
    let kvik = kvik_aof(&dir, "everysec");
    let mut k = connect(kvik.port);
    assert_eq!(call_text(&mut k, &["DBSIZE"]), b":10\r\n");
    drop(kvik);
    let _ = std::fs::remove_dir_all(dir);
}

/// Writers under `appendfsync always` count what they were told is
/// written; the server is killed while they write; everything counted is
/// there after the restart.
#[test]
fn a_kill_loses_no_acknowledged_write() {
    let dir = temp_dir("kill");
    let mut kvik = kvik_aof(&dir, "always");
    for round in 0..3 {
        let port = kvik.port;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let stop = std::sync::Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut k = connect(port);
                    let mut acked = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let key = format!("w{w}");
                        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            call_text(&mut k, &["INCR", &key])
                        })) {
                            Ok(reply) if reply.starts_with(b":") => acked += 1,
                            _ => break,
                        }
                    }
                    acked
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        kvik.stop();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let acked: Vec<u64> = writers.into_iter().map(|h| h.join().unwrap_or(0)).collect();
        kvik = kvik_aof(&dir, "always");
        let mut k = connect(kvik.port);
        for (w, n) in acked.iter().enumerate() {
            let got = call_text(&mut k, &["GET", &format!("w{w}")]);
            let text = String::from_utf8_lossy(&got);
            let value: u64 = text.lines().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
            assert!(value >= *n, "round {round}: writer {w} was told {n} increments were written, found {value}");
        }
    }
    drop(kvik);
    let _ = std::fs::remove_dir_all(dir);
}

/// `aof-format respb` changes the form of the next incremental file only:
/// a start in the other form begins a new file, and both replay; a RESPB
/// file cut inside a frame loads as far as it is whole.
#[test]
fn the_respb_form_begins_a_file_of_its_own_and_replays() {
    let dir = temp_dir("respb");
    let d = dir.to_str().unwrap_or("");
    let start = |format: &str| {
        start_kvik_with(&["--dir", d, "--appendonly", "yes", "--appendfsync", "always", "--aof-format", format])
    };
    let kvik = start("resp");
    let mut k = connect(kvik.port);
    ok(&mut k, "SET a 1");
    drop(kvik);
    let kvik = start("respb");
    let mut k = connect(kvik.port);
    ok(&mut k, "SET b 2");
    ok(&mut k, "RPUSH l x y z");
    ok(&mut k, "SELECT 3");
    ok(&mut k, "INCRBYFLOAT f 1.5");
    drop(kvik);
    let manifest = std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).expect("manifest");
    assert!(
        manifest
            .ends_with("file appendonly.aof.1.incr.aof seq 1 type i\nfile appendonly.aof.2.incr.respb seq 2 type i\n"),
        "{manifest}"
    );
    let respb_path = dir.join("appendonlydir/appendonly.aof.2.incr.respb");
    let whole = std::fs::read(&respb_path).expect("respb");
    assert!(!whole.starts_with(b"*"), "frames, not RESP text");
    // Half a frame more, as a crash in a write leaves.
    std::fs::write(&respb_path, [&whole[..], &whole[..3]].concat()).expect("write");
    let kvik = start("respb");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"MGET", b"a", b"b"]), b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n");
    assert_eq!(call(&mut k, &[b"LRANGE", b"l", b"0", b"-1"]), b"*3\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nz\r\n");
    ok(&mut k, "SELECT 3");
    assert_eq!(call(&mut k, &[b"GET", b"f"]), b"$3\r\n1.5\r\n");
    drop(kvik);
    assert_eq!(std::fs::read(&respb_path).expect("respb"), whole, "cut back to the whole frames");
    let _ = std::fs::remove_dir_all(dir);
}

/// kvik started through a shell that caps the size of any file it writes
/// at `limit_kib` (`ulimit -f`, with SIGXFSZ ignored so that a write past
/// the cap fails with EFBIG instead of killing the process): the way to
/// make the append-only file's writes fail without a full disk.
fn kvik_with_file_cap(dir: &Path, fsync: &str, limit_kib: u32) -> kvik_testkit::Server {
    let script = format!("trap '' XFSZ; ulimit -f {limit_kib}; exec \"$0\" \"$@\"");
    let mut args: Vec<String> = vec!["-c".into(), script, kvik_testkit::kvik_bin().display().to_string()];
    let dir = dir.to_str().unwrap_or("").to_string();
    for a in ["--port", "{port}", "--dir", &dir, "--appendonly", "yes", "--appendfsync", fsync, "--save", ""] {
        args.push(a.to_string());
    }
    kvik_testkit::start("kvik-capped", PathBuf::from("/bin/bash"), args)
}

/// Set 1 KiB values until a reply is not `+OK`; that reply, and how many
/// were acknowledged.
fn set_until_refused(k: &mut TcpStream, most: usize) -> (Vec<u8>, usize) {
    let value = vec![b'v'; 1024];
    for i in 0..most {
        let key = format!("k{i}");
        let reply = call(k, &[b"SET", key.as_bytes(), &value]);
        if reply != b"+OK\r\n" {
            return (reply, i);
        }
    }
    (Vec::new(), most)
}

#[test]
fn a_file_that_cannot_be_written_refuses_writes_or_stops_the_server() {
    // everysec: writes and PING are refused with Redis's MISCONF text, and
    // INFO says why, while reads go on.
    let dir = temp_dir("capped-everysec");
    let mut server = kvik_with_file_cap(&dir, "everysec", 256);
    let mut k = connect(server.port);
    let (refusal, acked) = set_until_refused(&mut k, 4000);
    assert!(
        refusal.starts_with(b"-MISCONF Errors writing to the AOF file: File too large"),
        "after {acked} writes: {}",
        String::from_utf8_lossy(&refusal)
    );
    // everysec acknowledges a write before the file has it, so how many
    // get through before the first failed write is seen depends on how
    // busy the machine is: some hundreds past the cap on a loaded one.
    assert!((100..2000).contains(&acked), "{acked} writes of 1 KiB acknowledged under a 256 KiB cap");
    let ping = call_text(&mut k, &["PING"]);
    assert!(ping.starts_with(b"-MISCONF Errors writing to the AOF file"), "{}", String::from_utf8_lossy(&ping));
    assert_eq!(call_text(&mut k, &["EXISTS", "k0"]), b":1\r\n", "reads are served");
    let info = String::from_utf8_lossy(&call_text(&mut k, &["INFO", "persistence"])).into_owned();
    assert_eq!(info_value(&info, "aof_last_write_status"), "err", "{info}");
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);

    // always: a write is acknowledged only once it is on disk, so the
    // server cannot go on: it exits, as Redis does, and the write that
    // could not be written was never acknowledged.
    let dir = temp_dir("capped-always");
    let mut server = kvik_with_file_cap(&dir, "always", 256);
    let mut k = connect(server.port);
    let value = vec![b'v'; 1024];
    let mut acked = 0;
    for i in 0..4000 {
        let key = format!("k{i}");
        let sent = std::io::Write::write_all(&mut k, &common::diff::multibulk(&[b"SET", key.as_bytes(), &value]));
        let mut reply = [0u8; 5];
        if sent.is_err() || std::io::Read::read_exact(&mut k, &mut reply).is_err() {
            break;
        }
        assert_eq!(&reply, b"+OK\r\n");
        acked += 1;
    }
    let status = server.wait_for_exit().expect("the server exits");
    assert!(!status.success(), "{status}");
    assert!((100..400).contains(&acked), "{acked} writes acknowledged");
    // What was acknowledged is in the file: a start without the cap loads it
    // (the last command is cut, which aof-load-truncated allows).
    let server = kvik_aof(&dir, "always");
    let mut k = connect(server.port);
    let dbsize = call_text(&mut k, &["DBSIZE"]);
    let loaded: usize = String::from_utf8_lossy(&dbsize[1..dbsize.len() - 2]).parse().unwrap_or(0);
    assert!(loaded >= acked, "{loaded} keys loaded, {acked} acknowledged");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn writes_a_script_made_with_the_file_turned_off_stay_out_of_it() {
    let dir = temp_dir("set-repl");
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    let body = "redis.call('set', 'kept', '1') redis.set_repl(redis.REPL_NONE) \
         redis.call('set', 'left-out', '2') redis.set_repl(redis.REPL_ALL) \
         redis.call('set', 'kept-too', '3') return redis.call('get', 'left-out')";
    assert_eq!(call(&mut k, &[b"EVAL", body.as_bytes(), b"0"]), b"$1\r\n2\r\n");
    assert_eq!(call(&mut k, &[b"EVAL", b"return redis.set_repl(9)", b"0"]).first(), Some(&b'-'));
    drop(kvik);
    let kvik = kvik_aof(&dir, "always");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"MGET", b"kept", b"left-out", b"kept-too"]), b"*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n3\r\n");
    drop(kvik);
    let _ = std::fs::remove_dir_all(dir);
}
