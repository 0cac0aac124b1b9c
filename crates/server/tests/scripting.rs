//! Scripts across threads: a script is one step for every other client,
//! on any thread (money moved between accounts by scripts, some of them
//! touching keys they did not declare, never shows a wrong total); the
//! script cache is the server's, not a connection's; a script that runs
//! too long without writing is stopped and the server goes on.

mod common;

use std::time::Duration;

use common::rng::Rng;
use common::{call, call_ok, connect, run_threads, start_kvik_with};

const ACCOUNTS: usize = 40;
const START: i64 = 100;

/// Move `ARGV[1]` from `KEYS[1]` to an account the script names itself
/// (`ARGV[2]`), as scripts that build key names do.
const TRANSFER: &str = "local n = tonumber(ARGV[1]) \
     local from = tonumber(redis.call('get', KEYS[1])) \
     if from < n then return 0 end \
     redis.call('decrby', KEYS[1], n) \
     redis.call('incrby', 'acct:' .. ARGV[2], n) \
     return 1";

/// The total of every account, read by one script.
const TOTAL: &str = "local sum = 0 \
     for i = 0, tonumber(ARGV[1]) - 1 do sum = sum + tonumber(redis.call('get', 'acct:' .. i)) end \
     return sum";

fn integer(reply: &[u8]) -> i64 {
    String::from_utf8_lossy(&reply[1..reply.len() - 2]).parse().unwrap_or(i64::MIN)
}

#[test]
fn transfers_by_script_keep_the_total_on_every_thread() {
    let server = start_kvik_with(&["--threads", "4"]);
    let port = server.port;
    let mut setup = connect(port);
    for i in 0..ACCOUNTS {
        call_ok(&mut setup, &[b"SET", format!("acct:{i}").as_bytes(), START.to_string().as_bytes()]);
    }
    let sha = call_ok(&mut setup, &[b"SCRIPT", b"LOAD", TRANSFER.as_bytes()]);
    let sha = String::from_utf8_lossy(&sha[sha.len() - 42..sha.len() - 2]).into_owned();
    let want = START * ACCOUNTS as i64;
    let results = run_threads(6, Duration::from_secs(60), move |worker| {
        let mut k = connect(port);
        let mut rng = Rng::new(worker as u64 + 1);
        let mut bad_totals = 0;
        let mut moved = 0;
        for _ in 0..400 {
            if worker == 0 {
                // The reader: every total it sees is the whole.
                let total = integer(&call(&mut k, &[b"EVAL", TOTAL.as_bytes(), b"0", ACCOUNTS.to_string().as_bytes()]));
                bad_totals += usize::from(total != want);
                continue;
            }
            let from = format!("acct:{}", rng.below(ACCOUNTS));
            let to = rng.below(ACCOUNTS).to_string();
            let amount = (1 + rng.below(20)).to_string();
            let reply =
                call(&mut k, &[b"EVALSHA", sha.as_bytes(), b"1", from.as_bytes(), amount.as_bytes(), to.as_bytes()]);
            assert!(reply == b":1\r\n" || reply == b":0\r\n", "{}", reply.escape_ascii());
            moved += usize::from(reply == b":1\r\n");
        }
        (bad_totals, moved)
    });
    let bad: usize = results.iter().map(|r| r.0).sum();
    let moved: usize = results.iter().map(|r| r.1).sum();
    assert_eq!(bad, 0, "totals other than {want} were seen");
    assert!(moved > 500, "only {moved} transfers were made");
    let total = integer(&call(&mut setup, &[b"EVAL", TOTAL.as_bytes(), b"0", ACCOUNTS.to_string().as_bytes()]));
    assert_eq!(total, want);
}

#[test]
fn a_loaded_script_runs_from_every_connection_until_flushed() {
    let server = start_kvik_with(&["--threads", "2"]);
    let mut a = connect(server.port);
    let sha = call_ok(&mut a, &[b"SCRIPT", b"LOAD", b"return 'shared'"]);
    let sha = sha[sha.len() - 42..sha.len() - 2].to_vec();
    // Connections land on both loops: each runs the script in its own Lua.
    let mut others: Vec<_> = (0..4).map(|_| connect(server.port)).collect();
    for c in &mut others {
        assert_eq!(call(c, &[b"EVALSHA", &sha, b"0"]), b"$6\r\nshared\r\n");
    }
    let cached = |c: &mut std::net::TcpStream| {
        let info = String::from_utf8_lossy(&call(c, &[b"INFO", b"memory"])).into_owned();
        common::info_value(&info, "number_of_cached_scripts").to_string()
    };
    assert_eq!(cached(&mut a), "1");
    assert_eq!(call(&mut a, &[b"SCRIPT", b"FLUSH"]), b"+OK\r\n");
    assert_eq!(cached(&mut a), "0");
    for c in &mut others {
        assert_eq!(call(c, &[b"EVALSHA", &sha, b"0"]), b"-NOSCRIPT No matching script. Please use EVAL.\r\n");
    }
}

#[test]
fn a_script_that_runs_too_long_without_writing_is_stopped() {
    let server = start_kvik_with(&["--threads", "2", "--busy-reply-threshold", "300"]);
    let mut k = connect(server.port);
    k.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let started = std::time::Instant::now();
    let reply = call(&mut k, &[b"EVAL", b"while true do end", b"0"]);
    assert!(
        reply.starts_with(b"-ERR Script stopped: it ran longer than busy-reply-threshold (300 ms)"),
        "{}",
        reply.escape_ascii()
    );
    assert!(started.elapsed() < Duration::from_secs(5), "stopped after {:?}", started.elapsed());
    // The setting is read at each script.
    assert_eq!(call(&mut k, &[b"CONFIG", b"SET", b"lua-time-limit", b"100"]), b"+OK\r\n");
    let reply = call(&mut k, &[b"EVAL", b"while true do end", b"0"]);
    assert!(reply.starts_with(b"-ERR Script stopped: it ran longer than busy-reply-threshold (100 ms)"));
    // The server and the keyspace go on.
    assert_eq!(call(&mut k, &[b"SET", b"after", b"1"]), b"+OK\r\n");
    assert_eq!(call(&mut k, &[b"EVAL", b"return redis.call('get', 'after')", b"0"]), b"$1\r\n1\r\n");
}

#[test]
fn a_script_inside_a_transaction_runs_in_its_turn() {
    let server = start_kvik_with(&["--threads", "2"]);
    let mut k = connect(server.port);
    assert_eq!(call(&mut k, &[b"MULTI"]), b"+OK\r\n");
    assert_eq!(call(&mut k, &[b"SET", b"a", b"1"]), b"+QUEUED\r\n");
    assert_eq!(call(&mut k, &[b"EVAL", b"return redis.call('incr', 'a')", b"0"]), b"+QUEUED\r\n");
    assert_eq!(call(&mut k, &[b"INCR", b"a"]), b"+QUEUED\r\n");
    assert_eq!(call(&mut k, &[b"EXEC"]), b"*3\r\n+OK\r\n:2\r\n:3\r\n");
    assert_eq!(call(&mut k, &[b"GET", b"a"]), b"$1\r\n3\r\n");
}
