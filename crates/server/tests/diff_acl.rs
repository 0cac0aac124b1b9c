//! Differential tests of ACLs: each case goes to kvik-server and to a real
//! redis-server 7.0, and the replies must be identical — the rules and
//! their errors, users as `ACL LIST` and `ACL GETUSER` describe them (RESP2
//! and RESP3), logging in, the `NOPERM` refusals of commands, subcommands,
//! first arguments, keys by read and write access and channels, in
//! transactions (when queued, and at `EXEC` after the rules changed) and in
//! scripts, `ACL LOG`, `ACL DRYRUN`, `ACL DELUSER` and `CLIENT KILL USER`.
//!
//! Two things differ by nature and are masked: Redis lists the single
//! `+cmd`/`-cmd` rules of a description in its hash table's order, which
//! changes from one start to the next (they are sorted on both sides), and
//! an `ACL LOG` entry's age and client line (only its `cmd=` and `user=`
//! are compared).

mod common;

use common::diff::*;

/// The users the cases create, removed (and the log emptied) before each.
const CLEANUP: &[&str] = &["ACL", "DELUSER", "u", "v", "w", "alice", "bob"];

/// Requests after the users and the log are reset, then a return to the
/// default user.
fn calls(name: &'static str, commands: &[&[&str]]) -> Case {
    let mut bytes = Vec::new();
    // Back to `default` at the end: the end marker must be allowed.
    let back: &[&str] = &["AUTH", "default", "x"];
    for c in [CLEANUP, &["ACL", "LOG", "RESET"], &["FLUSHALL"]].iter().chain(commands).chain([&back]) {
        let args: Vec<&[u8]> = c.iter().map(|a| a.as_bytes()).collect();
        bytes.extend_from_slice(&multibulk(&args));
    }
    open(name, bytes)
}

/// A case that ends with the server closing the connection.
fn calls_closed(name: &'static str, commands: &[&[&str]]) -> Case {
    let mut case = calls(name, commands);
    case.end = End::Closed;
    case
}

/// Sort the single-command rules of every description, keep only `cmd=`
/// and `user=` of `ACL LOG` client lines, hide ages.
fn mask(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let lines: Vec<&str> = text.split("\r\n").collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let prev = out.last().cloned().unwrap_or_default();
        let prev_key = if out.len() >= 2 { out[out.len() - 2].clone() } else { String::new() };
        let _ = prev;
        if (prev_key == "$11" && out.last().is_some_and(|l| l == "age-seconds"))
            && (line.starts_with('$') || line.starts_with(','))
        {
            out.push("<age>".into());
            if line.starts_with('$') {
                i += 1;
            }
            i += 1;
            continue;
        }
        if out.last().is_some_and(|l| l == "client-info") && line.starts_with('$') {
            let info = lines.get(i + 1).copied().unwrap_or_default();
            let kept: Vec<&str> = info.split(' ').filter(|f| f.starts_with("cmd=") || f.starts_with("user=")).collect();
            out.push(format!("<client {}>", kept.join(" ")));
            i += 2;
            continue;
        }
        out.push(sort_single_rules(line));
        i += 1;
    }
    out.join("\r\n").into_bytes()
}

/// A description with its `+cmd`/`-cmd` words after each `±@all` run of
/// categories sorted (the same bytes, so bulk lengths still hold).
fn sort_single_rules(line: &str) -> String {
    if !line.contains("-@all") && !line.contains("+@all") {
        return line.to_string();
    }
    let mut words: Vec<String> = Vec::new();
    let mut singles: Vec<String> = Vec::new();
    let flush = |words: &mut Vec<String>, singles: &mut Vec<String>| {
        singles.sort();
        words.append(singles);
    };
    for w in line.split(' ') {
        let single = (w.starts_with('+') || w.starts_with('-')) && !w.starts_with("+@") && !w.starts_with("-@");
        let closes = single && w.ends_with(')');
        if single && !closes {
            singles.push(w.to_string());
        } else if closes {
            let bare = w.trim_end_matches(')');
            singles.push(bare.to_string());
            singles.sort();
            let n = singles.len();
            if let Some(last) = singles.get_mut(n - 1) {
                last.push(')');
            }
            words.append(&mut singles);
        } else {
            flush(&mut words, &mut singles);
            words.push(w.to_string());
        }
    }
    flush(&mut words, &mut singles);
    words.join(" ")
}

fn rule_cases() -> Vec<Case> {
    vec![
        calls(
            "rules described back",
            &[
                &["ACL", "SETUSER", "u", "on", ">pw", "+get", "+set", "~a*", "&ch*"],
                &["ACL", "GETUSER", "u"],
                &["ACL", "LIST"],
                &["ACL", "SETUSER", "v", "+@read", "+@write", "-@dangerous"],
                &["ACL", "GETUSER", "v"],
                &["ACL", "SETUSER", "w", "+@all", "-get", "+select|0", "-@admin", "+config|get", "+client|list"],
                &["ACL", "GETUSER", "w"],
                &["ACL", "SETUSER", "w", "reset"],
                &["ACL", "GETUSER", "w"],
                &["ACL", "SETUSER", "w", "-@all", "+select|0", "+select|1", "+select|0", "+debug|object"],
                &["ACL", "LIST"],
                &["ACL", "USERS"],
            ],
        ),
        calls(
            "key and channel patterns",
            &[
                &[
                    "ACL", "SETUSER", "u", "%R~y", "%W~y", "~z", "%W~z", "%RW~x", "%R~x", "%R~r:*", "%W~w:*", "&a",
                    "&b", "&a",
                ],
                &["ACL", "GETUSER", "u"],
                &["ACL", "SETUSER", "u", "resetkeys", "allkeys", "resetchannels"],
                &["ACL", "GETUSER", "u"],
                &["ACL", "SETUSER", "v", "%R~", "~", "&", "allchannels"],
                &["ACL", "LIST"],
            ],
        ),
        calls(
            "passwords",
            &[
                &["ACL", "SETUSER", "u", ">a", ">b", ">a", "<b"],
                &["ACL", "GETUSER", "u"],
                &["ACL", "SETUSER", "u", "nopass", ">c"],
                &["ACL", "GETUSER", "u"],
                &["ACL", "SETUSER", "u", "#2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6"],
                &["ACL", "SETUSER", "u", "!2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6"],
                &["ACL", "GETUSER", "u"],
                &["ACL", "SETUSER", "u", "resetpass", "nopass"],
                &["ACL", "LIST"],
            ],
        ),
        calls(
            "selectors",
            &[
                &["ACL", "SETUSER", "u", "on", "(~x", "+get)", "(%R~y +@read)", "(+set ~s &c)"],
                &["ACL", "GETUSER", "u"],
                &["ACL", "LIST"],
                &["ACL", "SETUSER", "u", "clearselectors"],
                &["ACL", "LIST"],
                &["ACL", "SETUSER", "u", "(+get"],
                &["ACL", "SETUSER", "u", "on", "(+get", "~x"],
                &["ACL", "SETUSER", "u", "(on)"],
                &["ACL", "SETUSER", "u", "(~x bogus)"],
            ],
        ),
        calls(
            "rules refused",
            &[
                &["ACL", "SETUSER", "u", "%~x"],
                &["ACL", "SETUSER", "u", "%RX~x"],
                &["ACL", "SETUSER", "u", "~a b"],
                &["ACL", "SETUSER", "u", "allchannels", "&x"],
                &["ACL", "SETUSER", "u", "~*", "~x"],
                &["ACL", "SETUSER", "u", "#abc"],
                &["ACL", "SETUSER", "u", "<nope"],
                &["ACL", "SETUSER", "u", "!nope"],
                &["ACL", "SETUSER", "u", "+nosuch"],
                &["ACL", "SETUSER", "u", "+@nosuch"],
                &["ACL", "SETUSER", "u", "+config|get|x"],
                &["ACL", "SETUSER", "u", "+select|"],
                &["ACL", "SETUSER", "u", "+config|nosuch"],
                &["ACL", "SETUSER", "u", "-select|0"],
                &["ACL", "SETUSER", "u", "bogus"],
                &["ACL", "SETUSER", "u", "+"],
                &["ACL", "SETUSER", "a b"],
                &["ACL", "SETUSER", "u", "on", "bogus"],
                &["ACL", "GETUSER", "u"],
                &["ACL", "SETUSER", "u", ""],
                &["ACL", "GETUSER", "u"],
                &["ACL", "SETUSER"],
                &["ACL", "GETUSER", "nobody"],
                &["ACL", "DELUSER", "default"],
                &["ACL", "DELUSER", "u", "nobody", "u"],
                &["ACL", "NOSUCH"],
                &["ACL", "HELP"],
                &["ACL", "SAVE"],
                &["ACL", "LOAD"],
                &["ACL", "CAT", "nosuch"],
                &["ACL", "CAT"],
                &["ACL", "GENPASS", "0"],
                &["ACL", "GENPASS", "4097"],
                &["ACL", "GENPASS", "x"],
                &["ACL", "LOG", "x"],
                &["ACL", "WHOAMI"],
            ],
        ),
        calls(
            "acl-pubsub-default",
            &[
                &["CONFIG", "SET", "acl-pubsub-default", "allchannels"],
                &["ACL", "SETUSER", "u", "on", "(+get)"],
                &["ACL", "SETUSER", "v", "reset"],
                &["ACL", "LIST"],
                &["CONFIG", "SET", "acl-pubsub-default", "resetchannels"],
                &["ACL", "SETUSER", "w", "on", "(+get)"],
                &["ACL", "LIST"],
                &["CONFIG", "GET", "acl-pubsub-default"],
                &["CONFIG", "SET", "acl-pubsub-default", "some"],
            ],
        ),
        calls(
            "descriptions in RESP3",
            &[
                &["HELLO", "3"],
                &["ACL", "SETUSER", "u", "on", "nopass", "+@hash", "~h:*", "(+get ~g)"],
                &["ACL", "GETUSER", "u"],
                &["ACL", "GETUSER", "default"],
                &["ACL", "GETUSER", "nobody"],
            ],
        ),
    ]
}

fn login_cases() -> Vec<Case> {
    vec![
        calls(
            "logging in",
            &[
                &["AUTH", "x"],
                &["ACL", "SETUSER", "u", "on", ">pw", "+@all", "~*"],
                &["AUTH", "u", "bad"],
                &["AUTH", "nobody", "pw"],
                &["AUTH", "u", "pw"],
                &["ACL", "WHOAMI"],
                &["AUTH", "a", "b", "c"],
                &["ACL", "SETUSER", "v", ">pw"],
                &["AUTH", "v", "pw"],
                &["ACL", "WHOAMI"],
                &["HELLO", "2", "AUTH", "nobody", "x"],
                &["HELLO", "2", "AUTH", "default", "anything"],
                &["ACL", "WHOAMI"],
                &["ACL", "LOG"],
            ],
        ),
        calls(
            "the default user with a password",
            &[
                &["ACL", "SETUSER", "default", ">secret"],
                &["AUTH", "wrong"],
                &["AUTH", "secret"],
                &["ACL", "LIST"],
                &["ACL", "SETUSER", "default", "nopass"],
                &["ACL", "LIST"],
            ],
        ),
    ]
}

fn permission_cases() -> Vec<Case> {
    vec![
        calls(
            "commands, subcommands and first arguments",
            &[
                &[
                    "ACL",
                    "SETUSER",
                    "u",
                    "on",
                    "nopass",
                    "allkeys",
                    "+get",
                    "+config|get",
                    "+select|0",
                    "+acl|whoami",
                    "+client",
                ],
                &["AUTH", "u", "x"],
                &["GET", "k"],
                &["SET", "k", "v"],
                &["CONFIG", "GET", "maxmemory"],
                &["CONFIG", "SET", "maxmemory", "0"],
                &["SELECT", "0"],
                &["SELECT", "1"],
                &["ACL", "WHOAMI"],
                &["ACL", "LIST"],
                &["CLIENT", "GETNAME"],
                &["PING"],
                &["NOSUCHCOMMAND"],
                &["GET"],
                &["AUTH", "default", "x"],
                &["ACL", "LOG"],
            ],
        ),
        calls(
            "keys by access",
            &[
                &["SET", "r1", "1"],
                &["RPUSH", "r2", "a"],
                &["ACL", "SETUSER", "u", "on", "nopass", "+@all", "%R~r*", "%W~w*", "~rw*"],
                &["AUTH", "u", "x"],
                &["GET", "r1"],
                &["GET", "w1"],
                &["SET", "w1", "v"],
                &["SET", "w1", "v", "GET"],
                &["SET", "r1", "v"],
                &["GETDEL", "r1"],
                &["COPY", "r1", "w9"],
                &["LMOVE", "r2", "w2", "LEFT", "LEFT"],
                &["LMOVE", "rw2", "w2", "LEFT", "LEFT"],
                &["EXISTS", "other"],
                &["MSET", "w1", "a", "rw1", "b"],
                &["MSET", "w1", "a", "r1", "b"],
                &["MGET", "r1", "rw1", "w1"],
                &["SORT", "r2", "ALPHA", "STORE", "w3"],
                &["SORT", "r2", "ALPHA", "STORE", "r3"],
                &["BITFIELD", "r1", "GET", "u8", "0"],
                &["BITFIELD", "r1", "SET", "u8", "0", "1"],
                &["ZUNIONSTORE", "w5", "2", "r1"],
                &["EVAL", "return 1", "1", "r1"],
                &["EVAL", "return 1", "1", "other"],
                &["EVAL", "return redis.call('get', 'other')", "0"],
                &["EVAL", "return redis.call('set', 'r1', 'x')", "0"],
                &["EVAL", "return redis.pcall('set', 'r1', 'x')", "0"],
                &["ACL", "LOG"],
            ],
        ),
        calls(
            "channels",
            &[
                &["ACL", "SETUSER", "u", "on", "nopass", "+@all", "allkeys", "&news.*", "&exact"],
                &["AUTH", "u", "x"],
                &["PUBLISH", "news.a", "m"],
                &["PUBLISH", "other", "m"],
                &["SPUBLISH", "other", "m"],
                &["EVAL", "return redis.call('publish', 'other', 'm')", "0"],
                &["PSUBSCRIBE", "news.a*"],
                &["SUBSCRIBE", "news.a", "other"],
                &["PSUBSCRIBE", "news.*"],
                &["UNSUBSCRIBE", "anything"],
                &["PUNSUBSCRIBE"],
                &["ACL", "LOG", "3"],
            ],
        ),
        calls(
            "transactions refuse when queuing",
            &[
                &["ACL", "SETUSER", "u", "on", "nopass", "+multi", "+exec", "+get", "+discard", "~a*"],
                &["AUTH", "u", "x"],
                &["MULTI"],
                &["GET", "a1"],
                &["GET", "b"],
                &["DEL", "a"],
                &["EXEC"],
                &["MULTI"],
                &["GET", "a1"],
                &["EXEC"],
                &["ACL", "LOG"],
            ],
        ),
        calls(
            "dry runs",
            &[
                &["ACL", "SETUSER", "u", "on", "+get", "+publish", "~a*", "&c*", "+select|0"],
                &["ACL", "DRYRUN", "u", "GET", "a1"],
                &["ACL", "DRYRUN", "u", "GET", "b"],
                &["ACL", "DRYRUN", "u", "SET", "a1", "v"],
                &["ACL", "DRYRUN", "u", "PUBLISH", "c1", "m"],
                &["ACL", "DRYRUN", "u", "PUBLISH", "x", "m"],
                &["ACL", "DRYRUN", "u", "SELECT", "0"],
                &["ACL", "DRYRUN", "u", "SELECT", "1"],
                &["ACL", "DRYRUN", "u", "GET"],
                &["ACL", "DRYRUN", "u", "NOSUCH"],
                &["ACL", "DRYRUN", "u", "CONFIG", "NOSUCH"],
                &["ACL", "DRYRUN", "nobody", "GET", "a"],
                &["ACL", "DRYRUN", "u"],
                &["ACL", "LOG"],
            ],
        ),
        calls(
            "the log groups alike refusals",
            &[
                &["ACL", "SETUSER", "u", "on", "nopass", "+get", "~a"],
                &["AUTH", "u", "x"],
                &["GET", "b"],
                &["GET", "b"],
                &["GET", "c"],
                &["SET", "a", "1"],
                &["AUTH", "u", "x"],
                &["AUTH", "default", "x"],
                &["ACL", "LOG", "2"],
                &["ACL", "LOG", "-1"],
                &["ACL", "LOG"],
                &["ACL", "LOG", "RESET"],
                &["ACL", "LOG"],
            ],
        ),
        calls_closed(
            "deleting the user one is logged in as closes the connection",
            &[
                &["ACL", "SETUSER", "u", "on", "nopass", "+@all"],
                &["AUTH", "u", "x"],
                &["ACL", "DELUSER", "u"],
                &["PING"],
            ],
        ),
        calls(
            "client kill by user",
            &[
                &["CLIENT", "KILL", "USER", "nobody"],
                &["ACL", "SETUSER", "u", "on"],
                &["CLIENT", "KILL", "USER", "u"],
                &["CLIENT", "KILL", "USER", "default", "SKIPME", "yes"],
            ],
        ),
    ]
}

#[test]
fn acl_replies_match_redis() {
    let mut cases = rule_cases();
    cases.extend(login_cases());
    cases.extend(permission_cases());
    compare_each_with("acl_replies_match_redis", &[], mask, cases);
}

/// Rules changed by one client between another's queuing and its `EXEC`.
#[test]
fn rules_changed_before_exec_match_redis() {
    compare_scripts(
        "rules_changed_before_exec_match_redis",
        &[],
        vec![
            script(
                "exec after the rules changed",
                vec![
                    b("ACL DELUSER carol"),
                    b("ACL SETUSER carol on >pw +@all ~* &*"),
                    a("AUTH carol pw"),
                    a("MULTI"),
                    a("GET k"),
                    a("SET k v"),
                    a("PUBLISH c m"),
                    a("PING"),
                    b("ACL LOG RESET"),
                    b("ACL SETUSER carol -get resetkeys %R~k resetchannels"),
                    a("EXEC"),
                    b("ACL DELUSER carol"),
                ],
            ),
            script(
                "a rule change reaches a connected client",
                vec![
                    b("ACL DELUSER dave"),
                    b("ACL SETUSER dave on >pw +@all ~*"),
                    a("AUTH dave pw"),
                    a("SET k 1"),
                    b("ACL SETUSER dave -set"),
                    a("SET k 2"),
                    a("GET k"),
                    b("ACL SETUSER dave off"),
                    a("GET k"),
                    b("ACL DELUSER dave"),
                ],
            ),
        ],
    );
}
