//! Differential tests of functions: each case goes to kvik-server and to a
//! real redis-server 7.0, and the replies must be identical, byte for byte
//! — `FUNCTION LOAD`'s checks of a library's `#!lua` line and code and
//! their error texts, `redis.register_function` in both forms, `FCALL` and
//! `FCALL_RO` with the functions' flags, a function's world (its keys and
//! arguments as parameters, no `KEYS`, no new globals), `FUNCTION LIST`,
//! `DELETE`, `FLUSH`, `STATS`, `DUMP` and `RESTORE`. Each case starts with
//! `FLUSHALL` and `FUNCTION FLUSH`.
//!
//! Redis lists libraries and functions in its hash tables' order, kvik in
//! name and registration order: cases that list hold one library of one
//! function at a time.

mod common;

use common::diff::*;
use common::{call, connect, start_kvik};

/// Requests, each a list of arguments, after the keyspace and the
/// libraries are emptied.
fn calls(name: &'static str, commands: &[&[&str]]) -> Case {
    let mut bytes = b"FLUSHALL\r\nFUNCTION FLUSH\r\n".to_vec();
    for c in commands {
        let args: Vec<&[u8]> = c.iter().map(|a| a.as_bytes()).collect();
        bytes.extend_from_slice(&multibulk(&args));
    }
    open(name, bytes)
}

/// `FUNCTION LOAD` of each library `#!lua name=x\n<body>`, deleting `x`
/// after each.
fn loads(name: &'static str, bodies: &[&str]) -> Case {
    let mut bytes = b"FLUSHALL\r\nFUNCTION FLUSH\r\n".to_vec();
    for body in bodies {
        let code = format!("#!lua name=x\n{body}");
        bytes.extend_from_slice(&multibulk(&[b"FUNCTION", b"LOAD", code.as_bytes()]));
        bytes.extend_from_slice(&multibulk(&[b"FUNCTION", b"DELETE", b"x"]));
    }
    open(name, bytes)
}

const LIB: &str = "#!lua name=lib
local calls = 0
redis.register_function('count', function(keys, args) calls = calls + 1 return {calls, #keys, #args, keys[1], args[1]} end)
redis.register_function{function_name='put', callback=function(keys, args) return redis.call('set', keys[1], args[1]) end, description='sets a key', flags={'allow-oom'}}
redis.register_function{function_name='read', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}
redis.register_function('boom', function() return error('boom') end)
redis.register_function('keys_global', function() return KEYS end)
redis.register_function('new_global', function() x = 1 end)
redis.register_function('unknown', function() return redis.call('nosuch') end)
redis.register_function('caught', function() return redis.pcall('incr', 'text') end)
redis.register_function('raised', function() return redis.call('incr', 'text') end)
redis.register_function('register', function() return redis.register_function('y', function() end) end)
redis.register_function('resp3', function() redis.setresp(3) return redis.call('hgetall', 'h') end)
redis.register_function('strings', function(keys, args) return string.rep(args[1], 3) .. cjson.encode({1}) end)
redis.register_function('version', function() return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM} end)
redis.register_function('writes_ro', function(keys) return redis.call('set', keys[1], 'x') end)
redis.register_function{function_name='ro_writes', callback=function(keys) return redis.call('set', keys[1], 'x') end, flags={'no-writes'}}
redis.register_function('status', function() return redis.status_reply('FINE') end)
redis.register_function('sha', function(keys, args) return redis.sha1hex(args[1]) end)
";

fn metadata_cases() -> Vec<Case> {
    let one = "\nredis.register_function('f', function() return 1 end)";
    let lines = [
        "redis.register_function('f', function() return 1 end)".to_string(),
        "#!lua".to_string(),
        format!("#!lua{one}"),
        format!("#!luaX name=x{one}"),
        format!("#!js name=x{one}"),
        format!("#!LUA name=x{one}"),
        format!("#!lua name={one}"),
        format!("#!lua name=a-b{one}"),
        format!("#!lua  name=x  {one}"),
        format!("#!lua name=x name=y{one}"),
        format!("#!lua name=x bar=1{one}"),
        format!("#!lua NAME=x{one}"),
        format!("#!js name=a-b{one}"),
        format!("#!lua bar=1{one}"),
    ];
    let mut bytes = b"FLUSHALL\r\nFUNCTION FLUSH\r\n".to_vec();
    for code in &lines {
        bytes.extend_from_slice(&multibulk(&[b"FUNCTION", b"LOAD", code.as_bytes()]));
        bytes.extend_from_slice(&multibulk(&[b"FUNCTION", b"FLUSH"]));
    }
    vec![
        open("library metadata lines", bytes),
        calls(
            "load options",
            &[
                &["FUNCTION", "LOAD", "replacex", "#!lua name=a\nredis.register_function('f', function() end)"],
                &["FUNCTION", "LOAD", "a", "b", "c"],
                &["FUNCTION", "LOAD"],
                &[
                    "FUNCTION",
                    "LOAD",
                    "REPLACE",
                    "REPLACE",
                    "#!lua name=a\nredis.register_function('f', function() end)",
                ],
                &["FUNCTION", "LOAD", "#!lua name=a\nredis.register_function('g', function() end)"],
                &[
                    "FUNCTION",
                    "LOAD",
                    "replace",
                    "#!lua name=a\nredis.register_function('h', function() return 'h' end)",
                ],
                &["FCALL", "f", "0"],
                &["FCALL", "h", "0"],
                &["FUNCTION", "LOAD", "#!lua name=b\nredis.register_function('h', function() end)"],
                &["FUNCTION", "LOAD", "REPLACE", "#!lua name=b\nredis.register_function('h', function() end)"],
            ],
        ),
    ]
}

fn registration_cases() -> Vec<Case> {
    vec![loads(
        "registering functions",
        &[
            "string.len('a')",
            "redis.call('ping')",
            "foo = 1",
            "redis.foo = 1",
            "local t = redis.setresp",
            "error('boom')",
            "return 1",
            "local x = 1",
            "redis.register_function('f', function() end",
            "redis.register_function('a-b', function() return 1 end)",
            "redis.register_function('', function() return 1 end)",
            "redis.register_function()",
            "redis.register_function('a', function() end, 3)",
            "redis.register_function('ab', 5)",
            "redis.register_function(5, function() return 'five' end)",
            "redis.register_function({}, function() end)",
            "redis.register_function('solo')",
            "redis.register_function(function() end)",
            "redis.register_function{callback=function() end}",
            "redis.register_function{function_name='q'}",
            "redis.register_function{function_name='q', callback=function() end, zz=1}",
            "redis.register_function{function_name='q', callback=function() end, flags={'bad'}}",
            "redis.register_function{function_name='q', callback=function() end, flags='no-writes'}",
            "redis.register_function{function_name='q', callback=function() end, flags={1}}",
            "redis.register_function{function_name='q', callback=function() end, flags={'NO-WRITES', 'no-writes'}}",
            "redis.register_function{function_name={}, callback=function() end}",
            "redis.register_function{function_name='q', callback=5}",
            "redis.register_function{function_name='q', callback=function() end, description={}}",
            "redis.register_function{function_name='q', callback=function() end, description=7}",
            "redis.register_function{[1]='q'}",
            "redis.register_function('q', function() end) redis.register_function('q', function() end)",
            "redis.register_function('KEYS', function() return 1 end)",
            "redis.log(redis.LOG_WARNING, 'at load') redis.register_function('q', function() return 1 end)",
            "redis.log(99, 'bad level')",
            "local v = redis.REDIS_VERSION redis.register_function('q', function() return v end)",
            "while true do end",
        ],
    )]
}

fn fcall_cases() -> Vec<Case> {
    vec![
        calls(
            "calling functions",
            &[
                &["FUNCTION", "LOAD", LIB],
                &["FCALL", "count", "2", "k1", "k2", "a1"],
                &["FCALL", "count", "0"],
                &["FCALL", "put", "1", "k", "v"],
                &["FCALL", "read", "1", "k"],
                &["FCALL_RO", "read", "1", "k"],
                &["FCALL_RO", "put", "1", "k", "v"],
                &["FCALL_RO", "writes_ro", "1", "k"],
                &["FCALL", "ro_writes", "1", "k"],
                &["FCALL", "nope", "0"],
                &["FCALL", "nope", "x"],
                &["FCALL", "count", "x"],
                &["FCALL", "count", "-1"],
                &["FCALL", "count", "3", "a"],
                &["FCALL", "boom", "0"],
                &["FCALL", "keys_global", "0"],
                &["FCALL", "new_global", "0"],
                &["FCALL", "unknown", "0"],
                &["SET", "text", "abc"],
                &["FCALL", "caught", "0"],
                &["FCALL", "raised", "0"],
                &["FCALL", "register", "0"],
                &["HSET", "h", "f", "v"],
                &["FCALL", "resp3", "0"],
                &["FCALL", "strings", "0", "ab"],
                &["FCALL", "version", "0"],
                &["FCALL", "status", "0"],
                &["FCALL", "sha", "0", "abc"],
                &["FCALL", "COUNT", "0"],
                &["FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('Count', function() end)"],
                &["FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('a', function() end) redis.register_function('A', function() end)"],
                &["FUNCTION", "DELETE", "lib"],
                &["FCALL", "count", "0"],
            ],
        ),
        open("calling functions over RESP3", {
            let mut bytes = b"HELLO 3\r\nFLUSHALL\r\nFUNCTION FLUSH\r\nHSET h f v\r\n".to_vec();
            bytes.extend_from_slice(&multibulk(&[b"FUNCTION", b"LOAD", LIB.as_bytes()]));
            for f in ["resp3", "read", "version", "status", "boom"] {
                bytes.extend_from_slice(&multibulk(&[b"FCALL", f.as_bytes(), b"1", b"h"]));
            }
            bytes.extend_from_slice(b"FUNCTION STATS\r\n");
            bytes
        }),
        calls(
            "functions in a transaction",
            &[
                &["FUNCTION", "LOAD", LIB],
                &["MULTI"],
                &["FCALL", "put", "1", "k", "in-multi"],
                &["FCALL", "read", "1", "k"],
                &["FCALL", "nope", "0"],
                &["EXEC"],
                &["GET", "k"],
            ],
        ),
        calls(
            "functions and maxmemory",
            &[
                &["FUNCTION", "LOAD", LIB],
                &["SET", "pad", "some value to be over the limit"],
                &["CONFIG", "SET", "maxmemory", "1"],
                &["FCALL", "writes_ro", "1", "k"],
                &["FCALL", "put", "1", "k", "v"],
                &["FCALL", "read", "1", "k"],
                &["CONFIG", "SET", "maxmemory", "0"],
            ],
        ),
    ]
}

fn management_cases() -> Vec<Case> {
    let one = "#!lua name=mylib\nredis.register_function{function_name='only', callback=function() return 1 end, description='the one', flags={'no-writes', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys', 'allow-oom'}}";
    vec![
        calls(
            "listing libraries",
            &[
                &["FUNCTION", "LIST"],
                &["FUNCTION", "LOAD", one],
                &["FUNCTION", "LIST"],
                &["FUNCTION", "LIST", "WITHCODE"],
                &["FUNCTION", "LIST", "LIBRARYNAME", "my*"],
                &["FUNCTION", "LIST", "libraryname", "MY*", "withcode"],
                &["FUNCTION", "LIST", "LIBRARYNAME", "other*"],
                &["FUNCTION", "LIST", "LIBRARYNAME"],
                &["FUNCTION", "LIST", "bogus"],
                &["FUNCTION", "LIST", "WITHCODE", "WITHCODE"],
                &["FUNCTION", "LIST", "LIBRARYNAME", "a", "LIBRARYNAME", "b"],
                &["FUNCTION", "STATS"],
                &["FUNCTION", "LOAD", "#!lua name=plain\nredis.register_function('p', function() end)"],
                &["FUNCTION", "LIST", "LIBRARYNAME", "plain"],
            ],
        ),
        open("listing over RESP3", {
            let mut bytes = b"HELLO 3\r\nFUNCTION FLUSH\r\n".to_vec();
            bytes.extend_from_slice(&multibulk(&[b"FUNCTION", b"LOAD", one.as_bytes()]));
            bytes.extend_from_slice(b"FUNCTION LIST WITHCODE\r\nFUNCTION STATS\r\n");
            bytes
        }),
        calls(
            "deleting and flushing",
            &[
                &["FUNCTION", "DELETE", "nope"],
                &["FUNCTION", "DELETE"],
                &["FUNCTION", "LOAD", one],
                &["FUNCTION", "DELETE", "MYLIB"],
                &["FUNCTION", "DELETE", "mylib"],
                &["FCALL", "only", "0"],
                &["FUNCTION", "LOAD", one],
                &["FUNCTION", "FLUSH", "bogus"],
                &["FUNCTION", "FLUSH", "async", "sync"],
                &["FUNCTION", "FLUSH", "ASYNC"],
                &["FUNCTION", "LOAD", one],
                &["FUNCTION", "FLUSH", "sync"],
                &["FUNCTION", "LOAD", one],
                &["FLUSHALL"],
                &["FCALL", "only", "0"],
                &["FUNCTION", "FLUSH"],
                &["FUNCTION", "STATS"],
                &["FUNCTION", "KILL"],
                &["FUNCTION", "HELP"],
                &["FUNCTION", "BOGUS"],
                &["FUNCTION", "RESTORE", "bad"],
                &["FUNCTION", "RESTORE", "bad", "append", "x"],
                &["FUNCTION", "RESTORE", "bad", "bogus"],
                &["FUNCTION", "RESTORE", "bad", "FLUSH"],
                &["FCALL"],
                &["FCALL", "x"],
            ],
        ),
        calls(
            "dumping libraries",
            &[
                &["FUNCTION", "DUMP"],
                &["FUNCTION", "LOAD", "#!lua name=a\nredis.register_function('fa', function() return 1 end)"],
                &["FUNCTION", "DUMP"],
                &["FUNCTION", "LOAD", one],
                &["FUNCTION", "DELETE", "a"],
                &["FUNCTION", "DUMP"],
            ],
        ),
    ]
}

fn cases() -> Vec<Case> {
    [metadata_cases(), registration_cases(), fcall_cases(), management_cases()].into_iter().flatten().collect()
}

#[test]
fn function_replies_match_redis() {
    compare_each("function_replies_match_redis", cases());
}

/// A reply's bulk string body.
fn bulk_body(reply: &[u8]) -> Vec<u8> {
    let start = reply.windows(2).position(|w| w == b"\r\n").map_or(0, |i| i + 2);
    reply[start..reply.len().saturating_sub(2)].to_vec()
}

/// `FUNCTION DUMP` payloads cross between the servers, and `FUNCTION
/// RESTORE`'s policies treat libraries there as Redis's do.
#[test]
fn function_payloads_cross_between_kvik_and_redis() {
    let Some(redis) = common::start_redis_with_or_skip("function_payloads_cross", &[]) else { return };
    let kvik = start_kvik();
    let (mut r, mut k) = (connect(redis.port), connect(kvik.port));
    let libs = [
        "#!lua name=a\nredis.register_function('fa', function() return 'a' end)".to_string(),
        format!("#!lua name=b\n-- {}\nredis.register_function('fb', function() return 'b' end)", "long ".repeat(50)),
    ];
    for conn in [&mut r, &mut k] {
        call(conn, &[b"FUNCTION", b"FLUSH"]);
        for lib in &libs {
            assert_eq!(call(conn, &[b"FUNCTION", b"LOAD", lib.as_bytes()])[0], b'$');
        }
    }
    let from_redis = bulk_body(&call(&mut r, &[b"FUNCTION", b"DUMP"]));
    let from_kvik = bulk_body(&call(&mut k, &[b"FUNCTION", b"DUMP"]));
    let clash = b"#!lua name=c\nredis.register_function('fa', function() return 'c' end)";
    for (payload, from) in [(&from_redis, "redis"), (&from_kvik, "kvik")] {
        let mut replies = Vec::new();
        for conn in [&mut r, &mut k] {
            let mut steps = Vec::new();
            let mut step = |args: &[&[u8]]| steps.push(call(conn, args));
            // One library there at a time where a name is refused: which
            // of two Redis names depends on its hash table's order.
            step(&[b"FUNCTION", b"DELETE", b"a"]);
            step(&[b"FUNCTION", b"RESTORE", payload]);
            step(&[b"FUNCTION", b"RESTORE", payload, b"FLUSH"]);
            step(&[b"FCALL", b"fb", b"0"]);
            step(&[b"FUNCTION", b"RESTORE", payload, b"REPLACE"]);
            step(&[b"FUNCTION", b"DELETE", b"a"]);
            step(&[b"FUNCTION", b"LOAD", clash]);
            step(&[b"FUNCTION", b"RESTORE", payload, b"REPLACE"]);
            step(&[b"FUNCTION", b"RESTORE", payload, b"APPEND"]);
            step(&[b"FUNCTION", b"DELETE", b"c"]);
            step(&[b"FUNCTION", b"DELETE", b"b"]);
            step(&[b"FUNCTION", b"RESTORE", payload, b"APPEND"]);
            step(&[b"FUNCTION", b"RESTORE", payload, b"REPLACE"]);
            step(&[b"FCALL", b"fa", b"0"]);
            step(&[b"FUNCTION", b"DELETE", b"a"]);
            step(&[b"FUNCTION", b"DELETE", b"b"]);
            step(&[b"FUNCTION", b"RESTORE", payload]);
            step(&[b"FUNCTION", b"LIST", b"LIBRARYNAME", b"b", b"WITHCODE"]);
            replies.push(steps);
        }
        let show =
            |steps: &[Vec<u8>]| steps.iter().map(|s| s.escape_ascii().to_string()).collect::<Vec<_>>().join("\n");
        assert_eq!(show(&replies[1]), show(&replies[0]), "restoring {from}'s payload");
    }
    // Redis dumps its libraries in its hash table's order, kvik in name
    // order: the same libraries, each in the same bytes.
    let mut theirs = kvik_persist::payload::restore_functions(&from_redis).expect("redis's payload");
    let ours = kvik_persist::payload::restore_functions(&from_kvik).expect("kvik's payload");
    theirs.sort();
    assert_eq!(ours, theirs);
    assert_eq!(from_kvik.len(), from_redis.len(), "each library compressed as redis does");
}
