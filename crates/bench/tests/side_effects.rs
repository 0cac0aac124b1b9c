//! kvik-benchmark against a real kvik-server: every test in RESP, RESPB and
//! mux mode, checked by what it leaves on the server.

mod common;

use common::{start, MODES};

fn with(mode: &[&str], args: &[&str]) -> Vec<String> {
    mode.iter().chain(args).map(|s| s.to_string()).collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(|s| s.as_str()).collect()
}

const TITLES: [&str; 20] = [
    "PING_INLINE",
    "PING_MBULK",
    "SET",
    "GET",
    "INCR",
    "LPUSH",
    "RPUSH",
    "LPOP",
    "RPOP",
    "SADD",
    "HSET",
    "SPOP",
    "ZADD",
    "ZPOPMIN",
    "LPUSH (needed to benchmark LRANGE)",
    "LRANGE_100 (first 100 elements)",
    "LRANGE_300 (first 300 elements)",
    "LRANGE_500 (first 500 elements)",
    "LRANGE_600 (first 600 elements)",
    "MSET (10 keys)",
];

#[test]
fn the_whole_suite_runs_in_every_mode() {
    let mut s = start(&[]);
    for mode in MODES {
        s.cmd(&["FLUSHALL"]);
        let args = with(mode, &["-c", "6", "-n", "300", "-P", "3", "-r", "50", "--json"]);
        let out = s.bench_ok(&refs(&args));
        let objects: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).expect(l)).collect();
        let names: Vec<&str> = objects.iter().map(|o| o["name"].as_str().unwrap()).collect();
        assert_eq!(names, TITLES, "{mode:?}");
        for o in &objects {
            assert_eq!(o["requests"], 300, "{mode:?} {o}");
            assert_eq!(o["errors"], 0, "{mode:?} {o}");
        }
        // SET/GET/MSET keys, counters, the list, set, hash and sorted set all exist.
        let dbsize = s.int(&["DBSIZE"]);
        assert!(dbsize > 4 && dbsize <= 50 + 50 + 4, "{mode:?}: {dbsize}");
    }
}

#[test]
fn set_with_a_keyspace_writes_at_most_that_many_keys() {
    let mut s = start(&[]);
    for mode in MODES {
        s.cmd(&["FLUSHALL"]);
        s.bench_ok(&refs(&with(mode, &["-t", "set", "-n", "1000", "-r", "10", "-c", "4", "-q"])));
        let n = s.int(&["DBSIZE"]);
        assert!(n > 0 && n <= 10, "{mode:?}: {n} keys");
        for key in s.strings(&["KEYS", "*"]) {
            let digits = key.strip_prefix("key:").unwrap_or_else(|| panic!("{key}"));
            assert!(digits.len() == 12 && digits.parse::<u64>().unwrap() < 10, "{key}");
        }
        let key = s_key(&mut s);
        assert_eq!(s.cmd(&["GET", &key]), kvik_client::Value::bulk("VXK"));
    }
}

fn s_key(s: &mut common::Server) -> String {
    s.strings(&["KEYS", "key:*"]).into_iter().next().expect("a key")
}

#[test]
fn without_a_keyspace_one_key_is_used() {
    let mut s = start(&[]);
    for mode in MODES {
        s.cmd(&["FLUSHALL"]);
        s.bench_ok(&refs(&with(mode, &["-t", "incr", "-n", "500", "-c", "5", "-P", "7", "-q"])));
        assert_eq!(s.get_num("counter:__rand_int__"), 500, "{mode:?}: exactly -n requests");
        assert_eq!(s.int(&["DBSIZE"]), 1);
    }
}

#[test]
fn list_tests_grow_and_shrink_mylist() {
    let mut s = start(&[]);
    for mode in MODES {
        s.cmd(&["FLUSHALL"]);
        s.bench_ok(&refs(&with(mode, &["-t", "lpush", "-n", "400", "-c", "3", "-q"])));
        assert_eq!(s.int(&["LLEN", "mylist"]), 400, "{mode:?}");
        s.bench_ok(&refs(&with(mode, &["-t", "rpush", "-n", "100", "-c", "3", "-q"])));
        assert_eq!(s.int(&["LLEN", "mylist"]), 500, "{mode:?}");
        s.bench_ok(&refs(&with(mode, &["-t", "lpop,rpop", "-n", "150", "-c", "3", "-q"])));
        assert_eq!(s.int(&["LLEN", "mylist"]), 200, "{mode:?}");
        // LRANGE tests push -n elements first, as redis-benchmark does.
        s.bench_ok(&refs(&with(mode, &["-t", "lrange_600", "-n", "50", "-c", "2", "-q"])));
        assert_eq!(s.int(&["LLEN", "mylist"]), 250, "{mode:?}");
    }
}

#[test]
fn set_hash_and_zset_tests_use_their_keys() {
    let mut s = start(&[]);
    for mode in MODES {
        s.cmd(&["FLUSHALL"]);
        s.bench_ok(&refs(&with(mode, &["-t", "sadd,hset,zadd", "-n", "300", "-r", "20", "-c", "4", "-q"])));
        let (scard, hlen, zcard) =
            (s.int(&["SCARD", "myset"]), s.int(&["HLEN", "myhash"]), s.int(&["ZCARD", "myzset"]));
        for n in [scard, hlen, zcard] {
            assert!(n > 1 && n <= 20, "{mode:?}: {scard} {hlen} {zcard}");
        }
        // ZADD's scores are the random numbers too (RESPB sends them as binary doubles).
        let top = s.strings(&["ZRANGE", "myzset", "-1", "-1", "WITHSCORES"]);
        let score: f64 = top[1].parse().unwrap();
        assert!((0.0..20.0).contains(&score) && score.fract() == 0.0, "{mode:?}: {top:?}");
        s.bench_ok(&refs(&with(mode, &["-t", "spop,zpopmin", "-n", "5", "-c", "1", "-q"])));
        assert_eq!(s.int(&["SCARD", "myset"]), scard - 5, "{mode:?}");
        assert_eq!(s.int(&["ZCARD", "myzset"]), zcard - 5, "{mode:?}");
    }
}

#[test]
fn mset_sets_ten_keys_per_request() {
    let mut s = start(&[]);
    for mode in MODES {
        s.cmd(&["FLUSHALL"]);
        s.bench_ok(&refs(&with(mode, &["-t", "mset", "-n", "100", "-r", "1000", "-q"])));
        let n = s.int(&["DBSIZE"]);
        // 1,000 random keys drawn from 1,000: far more than 10, at most 1,000.
        assert!(n > 100 && n <= 1000, "{mode:?}: {n}");
    }
}

#[test]
fn a_command_line_command_substitutes_rand_int() {
    let mut s = start(&[]);
    for mode in MODES {
        s.cmd(&["FLUSHALL"]);
        let out = s.bench_ok(&refs(&with(mode, &["-n", "200", "-r", "5", "--csv", "sadd", "s", "m:__rand_int__"])));
        assert!(out.lines().nth(1).unwrap().starts_with("\"sadd s m:__rand_int__\","), "{out}");
        let members = s.strings(&["SMEMBERS", "s"]);
        assert!(!members.is_empty() && members.len() <= 5, "{members:?}");
        assert!(members.iter().all(|m| m.len() == 14 && m.starts_with("m:0000000000")), "{members:?}");
    }
}

#[test]
fn dbnum_selects_the_database_on_every_client() {
    let mut s = start(&[]);
    for mode in MODES {
        s.cmd(&["FLUSHALL"]);
        s.bench_ok(&refs(&with(mode, &["-t", "incr", "-n", "100", "-c", "8", "--dbnum", "3", "-q"])));
        assert_eq!(s.int(&["DBSIZE"]), 0, "{mode:?}");
        s.cmd(&["SELECT", "3"]);
        assert_eq!(s.get_num("counter:__rand_int__"), 100, "{mode:?}");
        s.cmd(&["SELECT", "0"]);
    }
}

#[test]
fn reconnecting_per_request_and_threads_still_count_exactly() {
    let mut s = start(&[]);
    s.bench_ok(&["-t", "incr", "-n", "60", "-c", "3", "-k", "0", "-q"]);
    s.bench_ok(&["-t", "incr", "-n", "60", "-c", "3", "-k", "0", "--respb", "-q"]);
    assert_eq!(s.get_num("counter:__rand_int__"), 120);
    for runtime in ["per-thread", "multi"] {
        s.bench_ok(&["-t", "incr", "-n", "1000", "-c", "5", "-P", "4", "--threads", "2", "--runtime", runtime, "-q"]);
        s.bench_ok(&[
            "-t",
            "incr",
            "-n",
            "1000",
            "-c",
            "20",
            "--mux",
            "5",
            "--threads",
            "3",
            "--runtime",
            runtime,
            "-q",
        ]);
    }
    assert_eq!(s.get_num("counter:__rand_int__"), 4120);
}

#[test]
fn password_and_resp3_are_set_up_per_client() {
    let mut s = start(&["--requirepass", "sekrit"]);
    for mode in [&["-3"][..], &[], &["--respb"], &["--mux", "3"]] {
        let args = with(mode, &["-a", "sekrit", "-t", "lpush", "-n", "30", "-c", "3", "--json"]);
        let out = s.bench_ok(&refs(&args));
        let o: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!((o["requests"].as_u64(), o["errors"].as_u64()), (Some(30), Some(0)), "{mode:?}");
    }
    s.cmd(&["AUTH", "sekrit"]);
    assert_eq!(s.int(&["LLEN", "mylist"]), 120);
}

#[test]
fn error_replies_are_counted() {
    let mut s = start(&[]);
    s.cmd(&["SET", "text", "abc"]);
    for mode in MODES {
        // Every reply an error: the report still comes, and the run fails.
        let out = s.bench(&refs(&with(mode, &["-n", "40", "-c", "2", "--json", "incr", "text"])));
        assert_eq!(out.status.code(), Some(1), "{mode:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let o: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!((o["requests"].as_u64(), o["errors"].as_u64()), (Some(40), Some(40)), "{mode:?}");
        assert_eq!(o["first_error"], "ERR value is not an integer or out of range", "{mode:?}");
    }
    let out = s.bench(&["-n", "3", "-c", "1", "-e", "-q", "incr", "text"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Error from server: ERR value is not an integer"));
}

#[test]
fn deep_pipelines_with_big_replies_do_not_deadlock() {
    // 3,000 LRANGE requests (over 64 KB in every protocol, so the write goes on
    // while replies are read) in one write, with ~3 MB of replies coming back.
    let mut s = start(&[]);
    for mode in MODES {
        s.cmd(&["FLUSHALL"]);
        let out =
            s.bench_ok(&refs(&with(mode, &["-t", "lrange_100", "-n", "6000", "-c", "1", "-P", "3000", "--json"])));
        let lrange: serde_json::Value = serde_json::from_str(out.lines().nth(1).unwrap()).unwrap();
        assert_eq!((lrange["requests"].as_u64(), lrange["errors"].as_u64()), (Some(6000), Some(0)), "{mode:?}");
        assert_eq!(s.int(&["LLEN", "mylist"]), 6000);
    }
}
