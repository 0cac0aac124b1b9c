//! Scripts across threads: a script is one step for every other client,
//! on any thread (money moved between accounts by scripts, some of them
//! touching keys they did not declare, racing transactions and multi-key
//! commands, never shows a wrong total); a run that needs a shard another
//! transaction holds is put back without a trace and started over; the
//! script cache is the server's, not a connection's; a script that runs
//! too long without writing is stopped and the server goes on.

mod common;

use std::time::Duration;

use common::rng::Rng;
use common::{call, call_ok, connect, info_value, read_until, reply_complete, run_threads, start_kvik_with};

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

/// What a worker of the transfer test does.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// Sums every account in one script that declares no key.
    ScriptReader,
    /// Sums every account with one MGET.
    MgetReader,
    /// Moves money with [`TRANSFER`] (one declared key, one undeclared).
    ScriptMover,
    /// Moves money with `MULTI`, `DECRBY`, `INCRBY`, `EXEC`.
    ExecMover,
    /// Swaps two accounts' balances with one MSET of what a script read
    /// (sum unchanged), from a script that declares neither key.
    ScriptSwapper,
}

const ROLES: [Role; 7] = [
    Role::ScriptReader,
    Role::MgetReader,
    Role::ScriptMover,
    Role::ScriptMover,
    Role::ExecMover,
    Role::ExecMover,
    Role::ScriptSwapper,
];

/// Swap the balances of accounts `ARGV[1]` and `ARGV[2]`, keys the script
/// builds itself.
const SWAP: &str = "local a, b = 'acct:' .. ARGV[1], 'acct:' .. ARGV[2] \
     local va, vb = redis.call('get', a), redis.call('get', b) \
     redis.call('mset', a, vb, b, va) \
     return 1";

/// `MGET` of every account.
fn mget_all() -> Vec<Vec<u8>> {
    let mut mget = vec![b"MGET".to_vec()];
    mget.extend((0..ACCOUNTS).map(|i| format!("acct:{i}").into_bytes()));
    mget
}

fn sum_of_mget(reply: &[u8]) -> i64 {
    common::split_replies(reply.split_at(reply.iter().position(|&b| b == b'\n').map_or(0, |p| p + 1)).1)
        .iter()
        .map(|r| String::from_utf8_lossy(r).lines().nth(1).and_then(|v| v.parse::<i64>().ok()).unwrap_or(i64::MIN / 64))
        .sum()
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
    let results = run_threads(ROLES.len(), Duration::from_secs(90), move |worker| {
        let role = ROLES[worker];
        let mut k = connect(port);
        let mut rng = Rng::new(worker as u64 + 1);
        let mut bad_totals = 0;
        let mut moved = 0;
        let mget = mget_all();
        for _ in 0..300 {
            let from = rng.below(ACCOUNTS);
            let to = rng.below(ACCOUNTS);
            let amount = (1 + rng.below(20)).to_string();
            match role {
                Role::ScriptReader => {
                    let n = ACCOUNTS.to_string();
                    let total = integer(&call(&mut k, &[b"EVAL", TOTAL.as_bytes(), b"0", n.as_bytes()]));
                    bad_totals += usize::from(total != want);
                }
                Role::MgetReader => {
                    bad_totals += usize::from(
                        sum_of_mget(&call(&mut k, &mget.iter().map(Vec::as_slice).collect::<Vec<_>>())) != want,
                    )
                }
                Role::ScriptMover => {
                    let (from, to) = (format!("acct:{from}"), to.to_string());
                    let args: [&[u8]; 6] =
                        [b"EVALSHA", sha.as_bytes(), b"1", from.as_bytes(), amount.as_bytes(), to.as_bytes()];
                    let reply = call(&mut k, &args);
                    assert!(reply == b":1\r\n" || reply == b":0\r\n", "{}", reply.escape_ascii());
                    moved += usize::from(reply == b":1\r\n");
                }
                Role::ExecMover => {
                    let (from, to) = (format!("acct:{from}"), format!("acct:{to}"));
                    call_ok(&mut k, &[b"MULTI"]);
                    call(&mut k, &[b"DECRBY", from.as_bytes(), amount.as_bytes()]);
                    call(&mut k, &[b"INCRBY", to.as_bytes(), amount.as_bytes()]);
                    let reply = call(&mut k, &[b"EXEC"]);
                    assert!(reply.starts_with(b"*2\r\n:"), "{}", reply.escape_ascii());
                    moved += 1;
                }
                Role::ScriptSwapper => {
                    let (a, b) = (from.to_string(), to.to_string());
                    let reply = call(&mut k, &[b"EVAL", SWAP.as_bytes(), b"0", a.as_bytes(), b.as_bytes()]);
                    assert_eq!(reply, b":1\r\n", "{}", reply.escape_ascii());
                }
            }
        }
        (bad_totals, moved)
    });
    let bad: usize = results.iter().map(|r| r.0).sum();
    let moved: usize = results.iter().map(|r| r.1).sum();
    assert_eq!(bad, 0, "totals other than {want} were seen");
    assert!(moved > 500, "only {moved} transfers were made");
    let total = integer(&call(&mut setup, &[b"EVAL", TOTAL.as_bytes(), b"0", ACCOUNTS.to_string().as_bytes()]));
    assert_eq!(total, want);
    let mget = mget_all();
    assert_eq!(sum_of_mget(&call(&mut setup, &mget.iter().map(Vec::as_slice).collect::<Vec<_>>())), want);
}

/// The shard kvik keeps `key` in: its cluster slot (CRC16 of the key, or
/// of its `{tag}`) among 256 shards.
fn shard_of(key: &[u8]) -> usize {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let close = key[open + 1..].iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &key[open + 1..open + 1 + close])
    });
    let mut crc: u16 = 0;
    for &byte in tagged.unwrap_or(key) {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    usize::from(crc & 0x3fff) & 255
}

/// A key `{prefix<n>}` for the first n whose shard `ok` accepts.
fn key_where(prefix: &str, ok: impl Fn(usize) -> bool) -> String {
    (0..).map(|n| format!("{{{prefix}{n}}}")).find(|k| ok(shard_of(k.as_bytes()))).unwrap_or_default()
}

#[test]
fn a_run_that_needs_a_held_shard_is_put_back_and_started_over() {
    // The holder's loop spins and the writer's waits: a third and fourth
    // loop serve the readers.
    let server = start_kvik_with(&["--threads", "4"]);
    let port = server.port;
    // `held` is in a shard below `mine`'s, so the second start of the
    // writer, reserving both in ascending order, waits holding nothing.
    let held = key_where("held", |s| s < 128);
    let mine = key_where("mine", |s| s > shard_of(held.as_bytes()));
    let undeclared = format!("{held}:counter");
    let mut k = connect(port);
    call_ok(&mut k, &[b"SET", mine.as_bytes(), b"old"]);
    call_ok(&mut k, &[b"CONFIG", b"SET", b"notify-keyspace-events", b"KA"]);
    let mut events = connect(port);
    let channel = format!("__keyspace@0__:{mine}");
    call(&mut events, &[b"SUBSCRIBE", channel.as_bytes()]);
    // A loop long enough to hold `held`'s shard for two seconds or so.
    let spin = "for i = 1, tonumber(ARGV[1]) do end return redis.call('get', KEYS[1])";
    let mut rounds = 1_000_000u64;
    loop {
        let started = std::time::Instant::now();
        call(&mut k, &[b"EVAL", spin.as_bytes(), b"1", held.as_bytes(), rounds.to_string().as_bytes()]);
        let took = started.elapsed();
        if took > Duration::from_millis(200) {
            rounds = (rounds as f64 * 2500.0 / took.as_millis() as f64) as u64;
            break;
        }
        rounds *= 4;
    }
    // Readers spread over the event loops, connected before the writer.
    let readers: Vec<_> = (0..6).map(|_| connect(port)).collect();
    let holder = {
        let held = held.clone();
        std::thread::spawn(move || {
            let mut h = connect(port);
            call(&mut h, &[b"EVAL", spin.as_bytes(), b"1", held.as_bytes(), rounds.to_string().as_bytes()])
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    // Writes its declared key, then needs `held`'s shard: put back, and
    // started over once the holder is done.
    let writer_body = "redis.call('set', KEYS[1], 'new') redis.call('incr', ARGV[1]) \
         redis.log(redis.LOG_WARNING, 'writer ran') return redis.call('get', KEYS[1])";
    let writer = {
        let (mine, undeclared) = (mine.clone(), undeclared.clone());
        std::thread::spawn(move || {
            let mut w = connect(port);
            call(&mut w, &[b"EVAL", writer_body.as_bytes(), b"1", mine.as_bytes(), undeclared.as_bytes()])
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    // Meanwhile the writer's first run is gone without a trace. The
    // holder's and the writer's loops are busy, so readers on them wait;
    // those on the other loops answer at once.
    for reader in &readers {
        let mut reader = reader;
        std::io::Write::write_all(&mut reader, &common::diff::multibulk(&[b"GET", mine.as_bytes()])).expect("send");
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(!holder.is_finished(), "the holder ended before the readers were read");
    let mut answered = 0;
    for mut reader in readers {
        reader.set_nonblocking(true).expect("nonblocking");
        let mut buf = [0u8; 64];
        if let Ok(n) = std::io::Read::read(&mut reader, &mut buf) {
            assert_eq!(&buf[..n], b"$3\r\nold\r\n", "a reader saw the abandoned run's write");
            answered += 1;
        }
    }
    assert!(answered > 0, "no reader was on another loop");
    assert!(!writer.is_finished(), "the writer did not wait for the held shard");
    assert_eq!(holder.join().expect("holder"), b"$-1\r\n");
    assert_eq!(writer.join().expect("writer"), b"$3\r\nnew\r\n");
    assert_eq!(call(&mut k, &[b"GET", mine.as_bytes()]), b"$3\r\nnew\r\n");
    assert_eq!(call(&mut k, &[b"GET", undeclared.as_bytes()]), b"$1\r\n1\r\n");
    let info = String::from_utf8_lossy(&call(&mut k, &[b"INFO", b"stats"])).into_owned();
    assert_eq!(info_value(&info, "script_restarts"), "1");
    // One `set` event: the abandoned run announced nothing.
    events.set_read_timeout(Some(Duration::from_millis(500))).expect("timeout");
    let first = read_until(&mut events, reply_complete);
    assert!(first.bytes.ends_with(b"$3\r\nset\r\n"), "{}", first.show());
    let mut more = [0u8; 256];
    let extra = std::io::Read::read(&mut events, &mut more);
    assert!(extra.is_err(), "a second event: {:?}", extra.map(|n| more[..n].escape_ascii().to_string()));
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

/// The debugger is not run: `SCRIPT DEBUG NO` (what every run is) is
/// answered as Redis answers it when sent alone, the other modes refused.
#[test]
fn script_debug_no_is_accepted_and_the_debugger_refused() {
    let server = start_kvik_with(&["--threads", "1"]);
    let mut c = connect(server.port);
    assert_eq!(call(&mut c, &[b"SCRIPT", b"DEBUG", b"no"]), b"+OK\r\n");
    for mode in [&b"YES"[..], b"sync"] {
        let reply = call(&mut c, &[b"SCRIPT", b"DEBUG", mode]);
        assert!(reply.starts_with(b"-ERR kvik does not run the Lua debugger"), "{reply:?}");
    }
    assert_eq!(call(&mut c, &[b"SCRIPT", b"DEBUG", b"x"]), b"-ERR Use SCRIPT DEBUG YES/SYNC/NO\r\n");
    assert_eq!(call(&mut c, &[b"EVAL", b"return 1", b"0"]), b":1\r\n");
}

#[test]
fn a_busy_script_answers_busy_for_its_shards_and_stops_by_script_kill_or_shutdown_nosave() {
    let mut server = start_kvik_with(&["--threads", "2", "--busy-reply-threshold", "200"]);
    let port = server.port;
    let mine = key_where("busy", |_| true);
    let elsewhere = key_where("free", |s| s != shard_of(mine.as_bytes()));
    let run_in_background = |body: &'static str, key: String| {
        std::thread::spawn(move || {
            let mut a = connect(port);
            a.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
            call(&mut a, &[b"EVAL", body.as_bytes(), b"1", key.as_bytes()])
        })
    };
    let spin = "while true do end";
    let loaded = call(&mut connect(port), &[b"SCRIPT", b"LOAD", spin.as_bytes()]);
    let sha = String::from_utf8_lossy(&loaded[loaded.len() - 42..loaded.len() - 2]).into_owned();
    let script = run_in_background(spin, mine.clone());
    // Past the threshold the script is busy; a new connection goes to the
    // other loop and is served, except for the busy script's shards.
    std::thread::sleep(Duration::from_millis(600));
    let mut b = connect(port);
    let busy = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
    assert_eq!(call(&mut b, &[b"GET", mine.as_bytes()]), busy);
    assert_eq!(call(&mut b, &[b"EVAL", b"return 1", b"0"]), busy);
    assert_eq!(call(&mut b, &[b"GET", elsewhere.as_bytes()]), b"$-1\r\n");
    assert_eq!(call(&mut b, &[b"PING"]), b"+PONG\r\n");
    assert_eq!(call(&mut b, &[b"SCRIPT", b"KILL"]), b"+OK\r\n");
    let killed = format!("-ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:1.\r\n");
    assert_eq!(String::from_utf8_lossy(&script.join().expect("script")), killed);
    assert_eq!(call(&mut b, &[b"GET", mine.as_bytes()]), b"$-1\r\n");
    assert_eq!(call(&mut b, &[b"SCRIPT", b"KILL"]), b"-NOTBUSY No scripts in execution right now.\r\n");
    // A script that wrote cannot be killed; SHUTDOWN NOSAVE still stops the server.
    let writer = run_in_background("redis.call('set', KEYS[1], 'w') while true do end", mine.clone());
    std::thread::sleep(Duration::from_millis(600));
    let mut c = connect(port);
    let unkillable = call(&mut c, &[b"SCRIPT", b"KILL"]);
    assert!(
        unkillable.starts_with(b"-UNKILLABLE Sorry the script already executed write commands"),
        "{}",
        unkillable.escape_ascii()
    );
    assert_eq!(call(&mut c, &[b"SHUTDOWN"]), busy);
    std::io::Write::write_all(&mut c, b"SHUTDOWN NOSAVE\r\n").expect("send");
    let status = server.wait_for_exit();
    assert!(status.is_some(), "the server did not stop");
    let _ = writer.join();
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

#[test]
fn cjson_settings_hold_for_every_thread_until_script_flush() {
    let server = start_kvik_with(&["--threads", "2"]);
    let mut conns: Vec<_> = (0..4).map(|_| connect(server.port)).collect();
    let set = b"return cjson.encode_number_precision(3)";
    assert_eq!(call(&mut conns[0], &[b"EVAL", set, b"0"]), b":3\r\n");
    for c in &mut conns {
        assert_eq!(call(c, &[b"EVAL", b"return cjson.encode(1/3)", b"0"]), b"$5\r\n0.333\r\n");
    }
    assert_eq!(call(&mut conns[1], &[b"SCRIPT", b"FLUSH"]), b"+OK\r\n");
    for c in &mut conns {
        assert_eq!(call(c, &[b"EVAL", b"return cjson.encode(1/3)", b"0"]), b"$16\r\n0.33333333333333\r\n");
    }
}
