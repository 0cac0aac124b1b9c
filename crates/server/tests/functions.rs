//! Functions as a server keeps them: a library loaded on one connection
//! runs on every event loop, and a change to it reaches them all; a busy
//! function answers as Redis's does and stops by `FUNCTION KILL`; functions
//! that move money between accounts keep the total on every thread; and
//! libraries survive restarts in the RDB file and the append-only file, in
//! both directions with redis-server.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{call, connect, info_value, run_threads, start_kvik_with, start_redis_with_or_skip, wait_for_rewrite};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kvik-functions-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

const BANK: &str = "#!lua name=bank
redis.register_function('transfer', function(keys, args)
  local n = tonumber(args[1])
  if tonumber(redis.call('get', keys[1])) < n then return 0 end
  redis.call('decrby', keys[1], n)
  redis.call('incrby', keys[2], n)
  return 1
end)
redis.register_function{function_name='balance', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}
redis.register_function('spin', function() while true do end end)
";

const ACCOUNTS: usize = 20;

#[test]
fn a_library_runs_on_every_loop_and_its_changes_reach_them_all() {
    let server = start_kvik_with(&["--threads", "2"]);
    let mut conns: Vec<_> = (0..6).map(|_| connect(server.port)).collect();
    assert_eq!(call(&mut conns[0], &[b"FUNCTION", b"LOAD", BANK.as_bytes()]), b"$4\r\nbank\r\n");
    call(&mut conns[0], &[b"SET", b"a", b"7"]);
    for c in &mut conns {
        assert_eq!(call(c, &[b"FCALL_RO", b"balance", b"1", b"a"]), b"$1\r\n7\r\n");
    }
    let changed = "#!lua name=bank\nredis.register_function('balance', function() return 'changed' end)";
    assert_eq!(call(&mut conns[3], &[b"FUNCTION", b"LOAD", b"REPLACE", changed.as_bytes()]), b"$4\r\nbank\r\n");
    for c in &mut conns {
        assert_eq!(call(c, &[b"FCALL", b"balance", b"0"]), b"$7\r\nchanged\r\n");
        assert_eq!(call(c, &[b"FCALL", b"transfer", b"0"]), b"-ERR Function not found\r\n");
    }
    assert_eq!(call(&mut conns[5], &[b"FUNCTION", b"DELETE", b"bank"]), b"+OK\r\n");
    for c in &mut conns {
        assert_eq!(call(c, &[b"FCALL", b"balance", b"0"]), b"-ERR Function not found\r\n");
    }
    let info = String::from_utf8_lossy(&call(&mut conns[0], &[b"INFO", b"memory"])).into_owned();
    assert_eq!(info_value(&info, "number_of_libraries"), "0");
}

#[test]
fn transfers_by_function_keep_the_total_on_every_thread() {
    let server = start_kvik_with(&["--threads", "2"]);
    let port = server.port;
    let mut k = connect(port);
    call(&mut k, &[b"FUNCTION", b"LOAD", BANK.as_bytes()]);
    for i in 0..ACCOUNTS {
        call(&mut k, &[b"SET", format!("acct:{i}").as_bytes(), b"100"]);
    }
    let moved = run_threads(4, Duration::from_secs(60), move |t| {
        let mut c = connect(port);
        let mut rng = common::rng::Rng::new(t as u64 + 1);
        let mut done = 0;
        for _ in 0..400 {
            let (from, to) = (rng.below(ACCOUNTS), rng.below(ACCOUNTS));
            let (from, to) = (format!("acct:{from}"), format!("acct:{to}"));
            let reply = call(&mut c, &[b"FCALL", b"transfer", b"2", from.as_bytes(), to.as_bytes(), b"3"]);
            assert!(reply == b":1\r\n" || reply == b":0\r\n", "{}", reply.escape_ascii());
            done += usize::from(reply == b":1\r\n");
        }
        done
    });
    assert!(moved.iter().sum::<usize>() > 0);
    let mut total = 0i64;
    for i in 0..ACCOUNTS {
        let reply = call(&mut k, &[b"FCALL_RO", b"balance", b"1", format!("acct:{i}").as_bytes()]);
        let text = String::from_utf8_lossy(&reply).into_owned();
        total += text.lines().nth(1).and_then(|v| v.parse::<i64>().ok()).expect("a balance");
    }
    assert_eq!(total, 100 * ACCOUNTS as i64);
}

#[test]
fn a_busy_function_is_reported_and_stopped_by_function_kill() {
    let server = start_kvik_with(&["--threads", "2", "--busy-reply-threshold", "200"]);
    let port = server.port;
    let mut k = connect(port);
    call(&mut k, &[b"FUNCTION", b"LOAD", BANK.as_bytes()]);
    let spinner = std::thread::spawn(move || {
        let mut a = connect(port);
        a.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        call(&mut a, &[b"FCALL", b"spin", b"1", b"held"])
    });
    std::thread::sleep(Duration::from_millis(600));
    let mut b = connect(port);
    let stats = call(&mut b, &[b"FUNCTION", b"STATS"]);
    let want = b"*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\nname\r\n$4\r\nspin\r\n$7\r\ncommand\r\n*4\r\n$5\r\nFCALL\r\n$4\r\nspin\r\n$1\r\n1\r\n$4\r\nheld\r\n$11\r\nduration_ms\r\n:";
    assert!(stats.starts_with(want), "{}", stats.escape_ascii());
    let busy = b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n";
    assert_eq!(call(&mut b, &[b"GET", b"held"]), busy);
    assert_eq!(call(&mut b, &[b"SCRIPT", b"KILL"]), busy);
    assert_eq!(call(&mut b, &[b"FUNCTION", b"KILL"]), b"+OK\r\n");
    let killed = spinner.join().expect("spinner");
    assert_eq!(
        String::from_utf8_lossy(&killed),
        "-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:10.\r\n"
    );
    assert_eq!(call(&mut b, &[b"FUNCTION", b"KILL"]), b"-NOTBUSY No scripts in execution right now.\r\n");
    let stats = call(&mut b, &[b"FUNCTION", b"STATS"]);
    assert!(stats.starts_with(b"*4\r\n$14\r\nrunning_script\r\n$-1\r\n"), "{}", stats.escape_ascii());
    // A busy script is SCRIPT KILL's, not FUNCTION KILL's.
    let eval = std::thread::spawn(move || {
        let mut a = connect(port);
        call(&mut a, &[b"EVAL", b"while true do end", b"1", b"held"])
    });
    std::thread::sleep(Duration::from_millis(600));
    let script_busy = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
    assert_eq!(call(&mut b, &[b"FUNCTION", b"KILL"]), script_busy);
    assert_eq!(call(&mut b, &[b"SCRIPT", b"KILL"]), b"+OK\r\n");
    assert!(eval.join().expect("eval").starts_with(b"-ERR Script killed by user with SCRIPT KILL..."));
}

fn kvik_in(dir: &Path, extra: &[&str]) -> kvik_testkit::Server {
    let mut args = vec!["--dir", dir.to_str().unwrap_or(""), "--save", "", "--threads", "2"];
    args.extend_from_slice(extra);
    start_kvik_with(&args)
}

fn redis_in(dir: &Path, aof: bool) -> Option<kvik_testkit::Server> {
    let appendonly = if aof { "yes" } else { "no" };
    start_redis_with_or_skip("functions", &["--dir", dir.to_str().unwrap_or(""), "--appendonly", appendonly])
}

/// What a server holds of the bank: its libraries' code (from `FUNCTION
/// DUMP`: `FUNCTION LIST` orders functions as each server's tables do)
/// and two balances.
fn bank_state(port: u16) -> Vec<Vec<u8>> {
    let mut c = connect(port);
    let dump = call(&mut c, &[b"FUNCTION", b"DUMP"]);
    let start = dump.windows(2).position(|w| w == b"\r\n").map_or(0, |i| i + 2);
    let codes = kvik_persist::payload::restore_functions(&dump[start..dump.len() - 2]).expect("a payload");
    vec![
        codes.concat(),
        call(&mut c, &[b"FCALL_RO", b"balance", b"1", b"a"]),
        call(&mut c, &[b"FCALL_RO", b"balance", b"1", b"b"]),
    ]
}

fn open_bank(port: u16) {
    let mut c = connect(port);
    assert_eq!(call(&mut c, &[b"FUNCTION", b"LOAD", BANK.as_bytes()]), b"$4\r\nbank\r\n");
    call(&mut c, &[b"SET", b"a", b"50"]);
    call(&mut c, &[b"SET", b"b", b"0"]);
    assert_eq!(call(&mut c, &[b"FCALL", b"transfer", b"2", b"a", b"b", b"20"]), b":1\r\n");
}

#[test]
fn libraries_survive_restarts_in_snapshots_both_ways_with_redis() {
    let (kvik_dir, redis_dir) = (temp_dir("rdb-kvik"), temp_dir("rdb-redis"));
    let mut kvik = kvik_in(&kvik_dir, &["--enable-debug-command", "yes"]);
    open_bank(kvik.port);
    let want = bank_state(kvik.port);
    assert!(want[1] == b"$2\r\n30\r\n" && want[2] == b"$2\r\n20\r\n", "{want:?}");
    assert_eq!(call(&mut connect(kvik.port), &[b"SAVE"]), b"+OK\r\n");
    kvik.restart();
    assert_eq!(bank_state(kvik.port), want, "after a restart");
    // DEBUG RELOAD puts back the file's libraries in place of those there;
    // a BGSAVE writes them too.
    let mut k = connect(kvik.port);
    let other = "#!lua name=other\nredis.register_function('other', function() return 1 end)";
    call(&mut k, &[b"FUNCTION", b"LOAD", other.as_bytes()]);
    assert_eq!(call(&mut k, &[b"DEBUG", b"RELOAD", b"NOSAVE"]), b"+OK\r\n");
    assert_eq!(bank_state(kvik.port), want, "after DEBUG RELOAD");
    assert_eq!(call(&mut k, &[b"FCALL", b"other", b"0"]), b"-ERR Function not found\r\n");
    assert_eq!(call(&mut k, &[b"DEBUG", b"RELOAD"]), b"+OK\r\n");
    assert_eq!(bank_state(kvik.port), want, "after DEBUG RELOAD");
    assert_eq!(call(&mut k, &[b"BGSAVE"]), b"+Background saving started\r\n");
    std::thread::sleep(Duration::from_millis(300));
    drop(kvik);
    std::fs::copy(kvik_dir.join("dump.rdb"), redis_dir.join("dump.rdb")).expect("copy");
    let Some(redis) = redis_in(&redis_dir, false) else { return };
    assert_eq!(bank_state(redis.port), want, "kvik's file in redis");
    let mut r = connect(redis.port);
    assert_eq!(call(&mut r, &[b"FCALL", b"transfer", b"2", b"a", b"b", b"5"]), b":1\r\n");
    assert_eq!(call(&mut r, &[b"SAVE"]), b"+OK\r\n");
    let want = bank_state(redis.port);
    drop(redis);
    std::fs::copy(redis_dir.join("dump.rdb"), kvik_dir.join("dump.rdb")).expect("copy");
    let kvik = kvik_in(&kvik_dir, &[]);
    assert_eq!(bank_state(kvik.port), want, "redis's file in kvik");
    for d in [kvik_dir, redis_dir] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn libraries_survive_a_kill_and_a_rewrite_in_the_append_only_file() {
    let dir = temp_dir("aof");
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut kvik = kvik_in(&dir, &aof);
    open_bank(kvik.port);
    let want = bank_state(kvik.port);
    kvik.restart();
    assert_eq!(bank_state(kvik.port), want, "after a kill");
    let mut k = connect(kvik.port);
    assert_eq!(call(&mut k, &[b"BGREWRITEAOF"]), b"+Background append only file rewriting started\r\n");
    wait_for_rewrite(&mut k);
    // A change after the rewrite, in the new incremental file.
    let more = "#!lua name=more\nredis.register_function('more', function() return 'more' end)";
    call(&mut k, &[b"FUNCTION", b"LOAD", more.as_bytes()]);
    call(&mut k, &[b"FUNCTION", b"DELETE", b"more"]);
    drop(k);
    kvik.restart();
    assert_eq!(bank_state(kvik.port), want, "after a rewrite and a kill");
    drop(kvik);
    let Some(redis) = redis_in(&dir, true) else { return };
    assert_eq!(bank_state(redis.port), want, "kvik's append-only file in redis");
    drop(redis);
    let _ = std::fs::remove_dir_all(dir);
}
