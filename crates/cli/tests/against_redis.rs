//! kvik-cli against kvik-server, compared with redis-cli against redis-server:
//! the same commands and options must print the same bytes on stdout and
//! end with the same exit status.
//!
//! Needs the kvik-server binary (`cargo build -p kvik-server` first when
//! testing this crate alone, or `KVIK_SERVER_BIN`) and Debian's redis-server
//! and redis-cli.

mod common;

use common::{have_redis, kvik_cli, redis_cli, show, start_kvik, start_redis, Server};

/// Both servers, fresh, with the same data.
fn servers() -> Option<(Server, Server)> {
    if !have_redis() {
        return None;
    }
    let kvik = kvik_with_data();
    let redis = start_redis(&[])?;
    load(&redis);
    Some((kvik, redis))
}

fn kvik_with_data() -> Server {
    let kvik = start_kvik(&[]);
    load(&kvik);
    kvik
}

fn load(server: &Server) {
    for cmd in SETUP {
        let out = kvik_cli(server, cmd, b"");
        assert!(out.status.success(), "setup {:?} on {}: {}", cmd, server.label, show(&out.stderr));
    }
}

const SETUP: &[&[&[u8]]] = &[
    &[b"set", b"s", b"hello"],
    &[b"set", b"bin", b"a\"b\\c\n\r\t\x07\x01\xff\xe9"],
    &[b"rpush", b"l", b"e0", b"e1", b"e2", b"e3", b"e4", b"e5", b"e6", b"e7", b"e8", b"e9", b"e10"],
    &[b"hset", b"h", b"f1", b"v1", b"f2", b"v2"],
    &[b"sadd", b"st", b"3", b"1", b"2"],
    &[b"zadd", b"z", b"1.5", b"a", b"2", b"b", b"0.1", b"c"],
    &[b"xadd", b"x", b"1-1", b"f", b"v", b"g", b"w"],
    &[b"xadd", b"x", b"2-1", b"f", b"v2"],
];

/// Commands of every reply shape.
const COMMANDS: &[&[&[u8]]] = &[
    &[b"get", b"s"],
    &[b"get", b"bin"],
    &[b"get", b"missing"],
    &[b"set", b"s", b"hello"],
    &[b"strlen", b"s"],
    &[b"lrange", b"l", b"0", b"-1"],
    &[b"lrange", b"missing", b"0", b"-1"],
    &[b"hgetall", b"h"],
    &[b"hgetall", b"missing"],
    &[b"smembers", b"st"],
    &[b"smembers", b"missing"],
    &[b"zscore", b"z", b"a"],
    &[b"zscore", b"z", b"c"],
    &[b"zrange", b"z", b"0", b"-1", b"withscores"],
    &[b"xrange", b"x", b"-", b"+"],
    &[b"lpos", b"missing", b"x"],
    &[b"get", b"l"],
    &[b"nosuchcommand", b"a"],
    &[b"ping"],
    &[b"echo", b""],
    &[b"exists", b"s", b"l", b"nope"],
    &[b"ttl", b"s"],
];

fn compare(kvik: &Server, redis: &Server, args: &[&[u8]], stdin: &[u8]) {
    let ours = kvik_cli(kvik, args, stdin);
    let theirs = redis_cli(redis, args, stdin);
    let what: Vec<String> = args.iter().map(|a| show(a)).collect();
    assert_eq!(show(&ours.stderr), show(&theirs.stderr), "stderr of {what:?}");
    assert_eq!(show(&ours.stdout), show(&theirs.stdout), "stdout of {what:?}");
    assert_eq!(ours.stdout, theirs.stdout, "stdout bytes of {what:?}");
    assert_eq!(ours.status.code(), theirs.status.code(), "exit status of {what:?}: {}", show(&ours.stderr));
}

fn with_options(options: &[&[u8]], cmd: &[&[u8]]) -> Vec<Vec<u8>> {
    options.iter().chain(cmd.iter()).map(|a| a.to_vec()).collect()
}

fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(Vec::as_slice).collect()
}

#[test]
fn one_shot_commands_print_what_redis_cli_prints() {
    let Some((kvik, redis)) = servers() else { return };
    let option_sets: &[&[&[u8]]] =
        &[&[], &[b"--raw"], &[b"--no-raw"], &[b"-3"], &[b"-3", b"--no-raw"], &[b"-2", b"--no-raw"], &[b"-e"]];
    for options in option_sets {
        for cmd in COMMANDS {
            let args = with_options(options, cmd);
            compare(&kvik, &redis, &refs(&args), b"");
        }
    }
}

#[test]
fn repeat_and_interval() {
    let Some((kvik, redis)) = servers() else { return };
    compare(&kvik, &redis, &[b"-r", b"5", b"incr", b"counter"], b"");
    compare(&kvik, &redis, &[b"-r", b"3", b"-i", b"0.05", b"--no-raw", b"incr", b"counter"], b"");
    compare(&kvik, &redis, &[b"-r", b"2", b"--no-raw", b"lrange", b"l", b"0", b"2"], b"");
    compare(&kvik, &redis, &[b"-r", b"0", b"ping"], b"");
}

#[test]
fn stdin_as_last_argument_databases_and_uris() {
    let Some((kvik, redis)) = servers() else { return };
    compare(&kvik, &redis, &[b"-x", b"set", b"fromstdin"], b"line one\nline two\n");
    compare(&kvik, &redis, &[b"--no-raw", b"get", b"fromstdin"], b"");
    compare(&kvik, &redis, &[b"-n", b"3", b"set", b"k", b"in db 3"], b"");
    compare(&kvik, &redis, &[b"-n", b"3", b"--no-raw", b"get", b"k"], b"");
    compare(&kvik, &redis, &[b"--no-raw", b"get", b"k"], b"");
    for server in [&kvik, &redis] {
        let uri = format!("redis://127.0.0.1:{}/3", server.port);
        let out = common::kvik_cli_plain(&[b"-u", uri.as_bytes(), b"--no-raw", b"get", b"k"], b"");
        assert_eq!(show(&out.stdout), "\"in db 3\"\n", "{}", server.label);
    }
}

#[test]
fn scripts_on_stdin_without_a_command() {
    let Some((kvik, redis)) = servers() else { return };
    let script = b"set a 1\nincr a\n\nget \"a\"\nlrange l 0 1\nnosuch\nquit\nget a\n";
    compare(&kvik, &redis, &[], script);
    compare(&kvik, &redis, &[b"--no-raw"], script);
}

#[test]
fn errors_connecting_and_bad_options() {
    let Some((kvik, redis)) = servers() else { return };
    let closed = common::free_port().to_string();
    for args in [&[b"-p".as_slice(), closed.as_bytes(), b"ping"][..], &[b"--bogus"], &[b"-p"]] {
        let ours = common::kvik_cli_plain(args, b"");
        let theirs = common::run_redis_cli_plain(args);
        assert_eq!(show(&ours.stderr), show(&theirs.stderr), "stderr of {args:?}");
        assert_eq!(ours.status.code(), theirs.status.code(), "status of {args:?}");
        assert_eq!(ours.stdout, theirs.stdout);
    }
    compare(&kvik, &redis, &[b"-e", b"nosuchcommand"], b"");
}

/// A mass-insertion input: `n` commands of several kinds, a few of them errors.
fn pipe_input(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let cmd: Vec<String> = match i % 5 {
            0 => vec!["SET".into(), format!("key:{i}"), format!("value {i}")],
            1 => vec!["RPUSH".into(), "list".into(), i.to_string()],
            2 => vec!["HSET".into(), format!("hash:{}", i % 7), format!("f{i}"), "v".into()],
            3 if i % 1000 == 3 => vec!["INCR".into(), "list".into()],
            3 => vec!["INCRBY".into(), "counter".into(), i.to_string()],
            _ => vec!["SADD".into(), "set".into(), (i % 100).to_string()],
        };
        kvik_protocol::resp::command::write_command(&cmd, &mut out);
    }
    out
}

#[test]
fn pipe_mass_insertion_of_10000_commands() {
    let Some((kvik, redis)) = servers() else { return };
    let input = pipe_input(10_000);
    let ours = kvik_cli(&kvik, &[b"--pipe"], &input);
    let theirs = redis_cli(&redis, &[b"--pipe"], &input);
    assert_eq!(show(&ours.stdout), show(&theirs.stdout));
    assert!(show(&ours.stdout).ends_with("errors: 10, replies: 10000\n"), "{}", show(&ours.stdout));
    assert_eq!(show(&ours.stderr), show(&theirs.stderr));
    assert_eq!(ours.status.code(), theirs.status.code());
    for cmd in [&[b"dbsize".as_slice()][..], &[b"llen", b"list"], &[b"get", b"counter"], &[b"scard", b"set"]] {
        compare(&kvik, &redis, cmd, b"");
    }
    // The same input over RESPB reaches the same state and the same summary.
    let fresh = kvik_with_data();
    let over_respb = kvik_cli(&fresh, &[b"--respb", b"--pipe"], &input);
    assert_eq!(show(&over_respb.stdout), show(&theirs.stdout));
    assert!(show(&over_respb.stderr).contains("converted 10000 commands"), "{}", show(&over_respb.stderr));
    assert_eq!(over_respb.status.code(), theirs.status.code());
    for cmd in [&[b"dbsize".as_slice()][..], &[b"llen", b"list"], &[b"get", b"counter"], &[b"hlen", b"hash:3"]] {
        assert_eq!(kvik_cli(&fresh, cmd, b"").stdout, redis_cli(&redis, cmd, b"").stdout);
    }
}

#[test]
fn pipe_without_errors_exits_zero() {
    let Some((kvik, redis)) = servers() else { return };
    let input = b"SET a 1\r\n*2\r\n$4\r\nINCR\r\n$1\r\na\r\nPING\r\n";
    compare(&kvik, &redis, &[b"--pipe"], input);
    compare(&kvik, &redis, &[b"--pipe"], b"");
}

fn sorted_lines(out: &[u8]) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = out.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    lines.sort();
    lines
}

#[test]
fn scan_lists_the_same_keys() {
    let Some((kvik, redis)) = servers() else { return };
    let input = pipe_input(2_000);
    kvik_cli(&kvik, &[b"--pipe"], &input);
    redis_cli(&redis, &[b"--pipe"], &input);
    for options in [&[b"--scan".as_slice()][..], &[b"--scan", b"--pattern", b"key:1*"], &[b"--no-raw", b"--scan"]] {
        let ours = kvik_cli(&kvik, options, b"");
        let theirs = redis_cli(&redis, options, b"");
        assert!(ours.status.success());
        assert_eq!(sorted_lines(&ours.stdout), sorted_lines(&theirs.stdout), "{options:?}");
    }
    // --count only changes how many keys each SCAN call looks at.
    let counted = kvik_cli(&kvik, &[b"--scan", b"--count", b"7", b"--pattern", b"key:1*"], b"");
    let plain = redis_cli(&redis, &[b"--scan", b"--pattern", b"key:1*"], b"");
    assert_eq!(sorted_lines(&counted.stdout), sorted_lines(&plain.stdout));
}

#[test]
fn respb_replies_print_like_resp3() {
    let Some((kvik, redis)) = servers() else { return };
    for options in [&[b"--no-raw".as_slice()][..], &[b"--raw"]] {
        // kvik-server's RESPB reply to ZRANGE WITHSCORES is still the flat RESP2
        // shape (RESP3 nests each member with its score), so it is left out here.
        for cmd in COMMANDS.iter().filter(|c| c[0] != b"zrange") {
            let ours = kvik_cli(&kvik, &refs(&with_options(&[b"--respb"], &with_options_refs(options, cmd))), b"");
            let theirs = redis_cli(&redis, &refs(&with_options(&[b"-3"], &with_options_refs(options, cmd))), b"");
            let what: Vec<String> = cmd.iter().map(|a| show(a)).collect();
            assert_eq!(show(&ours.stdout), show(&theirs.stdout), "{options:?} {what:?}");
            assert_eq!(ours.status.code(), theirs.status.code());
        }
    }
    let ours = kvik_cli(&kvik, &[b"-4", b"-r", b"3", b"incr", b"n"], b"");
    assert_eq!(show(&ours.stdout), "1\n2\n3\n");
}

fn with_options_refs<'a>(options: &[&'a [u8]], cmd: &[&'a [u8]]) -> Vec<&'a [u8]> {
    options.iter().chain(cmd.iter()).copied().collect()
}

#[test]
fn stat_prints_rolling_lines() {
    let Some((kvik, _redis)) = servers() else { return };
    let out = kvik_cli(&kvik, &[b"--stat", b"-r", b"3", b"-i", b"0.05"], b"");
    assert!(out.status.success(), "{}", show(&out.stderr));
    let text = show(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].starts_with("------- data ------ --------------------- load"));
    assert!(lines[1].starts_with("keys       mem      clients blocked requests"));
    let keys = SETUP.iter().map(|c| c[1]).collect::<std::collections::HashSet<_>>().len();
    assert!(lines[2].starts_with(&format!("{keys:<11}")), "{}", lines[2]);
    assert!(lines[2].contains(" (+0)"), "{}", lines[2]);
    assert!(lines[3].contains(" (+1)"), "{}", lines[3]);
}

#[test]
fn refused_authentication_and_databases_are_warnings() {
    if !have_redis() {
        return;
    }
    let kvik = start_kvik(&["--requirepass", "sekret"]);
    let Some(redis) = start_redis(&["--requirepass", "sekret"]) else { return };
    let cases: &[&[&[u8]]] = &[
        &[b"ping"],
        &[b"-a", b"wrong", b"ping"],
        &[b"-a", b"sekret", b"ping"],
        &[b"--no-auth-warning", b"-a", b"sekret", b"-n", b"99", b"ping"],
        &[b"--no-auth-warning", b"-a", b"wrong", b"-3", b"ping"],
        &[b"--no-auth-warning", b"--user", b"default", b"--pass", b"sekret", b"-n", b"1", b"set", b"k", b"v"],
        &[b"--no-auth-warning", b"-a", b"sekret", b"-n", b"1", b"get", b"k"],
    ];
    for args in cases {
        compare(&kvik, &redis, args, b"");
    }
    let input = b"SET a 1\r\nINCR a\r\n";
    compare(&kvik, &redis, &[b"--no-auth-warning", b"-a", b"sekret", b"--pipe"], input);
    compare(&kvik, &redis, &[b"--no-auth-warning", b"-a", b"sekret", b"get", b"a"], b"");
}

#[test]
fn shutdown_prints_nothing() {
    let Some((kvik, redis)) = servers() else { return };
    compare(&kvik, &redis, &[b"shutdown", b"nosave"], b"");
}

#[test]
fn scripts_over_resp3_and_respb() {
    let Some((kvik, redis)) = servers() else { return };
    let script = b"hgetall h\nzscore z a\nget missing\nsmembers st\nxrange x - +\n";
    compare(&kvik, &redis, &[b"-3", b"--no-raw"], script);
    let ours = kvik_cli(&kvik, &[b"--respb", b"--no-raw"], script);
    let theirs = redis_cli(&redis, &[b"-3", b"--no-raw"], script);
    assert_eq!(show(&ours.stdout), show(&theirs.stdout));
}

#[test]
fn pipe_gives_up_after_the_pipe_timeout() {
    let Some((kvik, redis)) = servers() else { return };
    let input = b"CLIENT PAUSE 2000\r\nSET a 1\r\n";
    compare(&kvik, &redis, &[b"--pipe", b"--pipe-timeout", b"1"], input);
}
