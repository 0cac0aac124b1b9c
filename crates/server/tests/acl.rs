//! ACL users across a running server: rule changes reaching connected
//! clients on every thread, users from `user` lines, the ACL file and
//! `CONFIG REWRITE`, `requirepass` as the default user's password, and
//! attempts to get in — every command of the table sent by a client that
//! has not logged in and by a user without permissions, over RESP and on
//! RESPB mux channels, and guessing passwords under `ACL LOG`.

mod common;

use std::process::Command;

use common::respb::{greeted, request};
use common::{call, call_text, connect, start_kvik_with};
use kvik_protocol::commands::{CommandFlags, CommandSpec, COMMANDS};
use kvik_protocol::Value;
use kvik_testkit::ScratchDir;

fn text(reply: Vec<u8>) -> String {
    String::from_utf8_lossy(&reply).into_owned()
}

#[test]
fn rule_changes_reach_clients_on_every_thread_and_deleting_closes_them() {
    let server = start_kvik_with(&["--threads", "2"]);
    let mut admin = connect(server.port);
    assert_eq!(call_text(&mut admin, &["ACL", "SETUSER", "alice", "on", ">pw", "+@all", "~*"]), b"+OK\r\n");
    let mut clients: Vec<_> = (0..4).map(|_| connect(server.port)).collect();
    for c in &mut clients {
        assert_eq!(call_text(c, &["AUTH", "alice", "pw"]), b"+OK\r\n");
        assert_eq!(call_text(c, &["SET", "k", "v"]), b"+OK\r\n");
    }
    assert_eq!(call_text(&mut admin, &["ACL", "SETUSER", "alice", "-set", "resetkeys", "~k"]), b"+OK\r\n");
    for c in &mut clients {
        let reply = text(call_text(c, &["SET", "k", "v"]));
        assert_eq!(reply, "-NOPERM this user has no permissions to run the 'set' command\r\n");
        assert_eq!(call_text(c, &["GET", "k"]), b"$1\r\nv\r\n");
        assert!(text(call_text(c, &["GET", "other"])).starts_with("-NOPERM"));
    }
    let list = text(call_text(&mut admin, &["CLIENT", "LIST"]));
    assert_eq!(list.matches("user=alice").count(), 4, "{list}");
    assert_eq!(call_text(&mut admin, &["ACL", "DELUSER", "alice"]), b":1\r\n");
    for c in &mut clients {
        let answer = common::read_until(c, |_| false);
        assert!(answer.closed, "a client of a deleted user is disconnected");
    }
}

#[test]
fn requirepass_is_the_default_users_password() {
    let server = start_kvik_with(&["--requirepass", "s3cret"]);
    let mut c = connect(server.port);
    assert_eq!(call_text(&mut c, &["GET", "k"]), b"-NOAUTH Authentication required.\r\n");
    assert_eq!(call_text(&mut c, &["AUTH", "default", "s3cret"]), b"+OK\r\n");
    let user = text(call_text(&mut c, &["ACL", "GETUSER", "default"]));
    assert!(!user.contains("nopass") && user.matches("$64\r\n").count() == 1, "one password hash: {user}");
    assert_eq!(call_text(&mut c, &["CONFIG", "SET", "requirepass", ""]), b"+OK\r\n");
    let mut fresh = connect(server.port);
    assert_eq!(call_text(&mut fresh, &["PING"]), b"+PONG\r\n", "no password: clients start logged in");
    assert_eq!(call_text(&mut fresh, &["ACL", "LIST"]), b"*1\r\n$34\r\nuser default on nopass ~* &* +@all\r\n");
    // A password given by ACL SETUSER stays until requirepass itself is set.
    assert_eq!(call_text(&mut c, &["ACL", "SETUSER", "default", "resetpass", ">other"]), b"+OK\r\n");
    assert_eq!(call_text(&mut c, &["CONFIG", "SET", "maxmemory", "0"]), b"+OK\r\n");
    let mut third = connect(server.port);
    assert_eq!(call_text(&mut third, &["PING"]), b"-NOAUTH Authentication required.\r\n");
    assert_eq!(call_text(&mut third, &["AUTH", "other"]), b"+OK\r\n");
}

#[test]
fn users_come_from_user_lines_and_the_acl_file() {
    let server = start_kvik_with(&["--user", "alice", "on", ">pw", "~a*", "+get", "--user", "bob", "+@all"]);
    let mut c = connect(server.port);
    assert_eq!(call_text(&mut c, &["ACL", "USERS"]), b"*3\r\n$5\r\nalice\r\n$3\r\nbob\r\n$7\r\ndefault\r\n");
    assert_eq!(call_text(&mut c, &["AUTH", "alice", "pw"]), b"+OK\r\n");
    assert_eq!(call_text(&mut c, &["GET", "a1"]), b"$-1\r\n");
    drop(server);

    let dir = ScratchDir::new("aclfile");
    let file = dir.path().join("users.acl");
    std::fs::write(&file, "user carol on >pw ~c* +@read\n").expect("write acl file");
    let file_arg = file.display().to_string();
    let server = start_kvik_with(&["--aclfile", &file_arg]);
    let mut c = connect(server.port);
    assert_eq!(call_text(&mut c, &["ACL", "USERS"]), b"*2\r\n$5\r\ncarol\r\n$7\r\ndefault\r\n");
    assert_eq!(call_text(&mut c, &["ACL", "SETUSER", "dave", "on", ">x", "+ping"]), b"+OK\r\n");
    assert_eq!(call_text(&mut c, &["ACL", "SAVE"]), b"+OK\r\n");
    let saved = std::fs::read_to_string(&file).expect("read acl file");
    assert!(saved.contains("user dave on #") && saved.contains("user default on nopass ~* &* +@all"), "{saved}");
    // A bad file changes nothing; a good one replaces every user and
    // disconnects the clients of the old ones.
    let mut carol = connect(server.port);
    assert_eq!(call_text(&mut carol, &["AUTH", "carol", "pw"]), b"+OK\r\n");
    std::fs::write(&file, "user erin on nopass +@all\nuser bad +nosuch\n").expect("write acl file");
    let refused = text(call_text(&mut c, &["ACL", "LOAD"]));
    assert!(refused.starts_with(&format!("-ERR {file_arg}:2: Error in applying operation '+nosuch'")), "{refused}");
    assert_eq!(call_text(&mut c, &["ACL", "USERS"]), b"*3\r\n$5\r\ncarol\r\n$4\r\ndave\r\n$7\r\ndefault\r\n");
    std::fs::write(&file, "user erin on nopass +@all\n").expect("write acl file");
    assert_eq!(call_text(&mut c, &["ACL", "LOAD"]), b"+OK\r\n");
    assert_eq!(call_text(&mut c, &["ACL", "USERS"]), b"*2\r\n$7\r\ndefault\r\n$4\r\nerin\r\n");
    assert!(common::read_until(&mut carol, |_| false).closed, "carol no longer exists");
    drop(server);

    // Both ways at once, or a rule that does not parse, stop the start.
    let bin = env!("CARGO_BIN_EXE_kvik-server");
    let both = Command::new(bin).args(["--port", "0", "--aclfile", &file_arg, "--user", "x"]).output().expect("run");
    assert!(!both.status.success());
    assert!(String::from_utf8_lossy(&both.stderr).contains("please define either an ACL file or declare users"));
    let bad = Command::new(bin).args(["--port", "0", "--user", "x", "on", "bogus"]).output().expect("run");
    assert!(!bad.status.success());
    let why = String::from_utf8_lossy(&bad.stderr).into_owned();
    assert!(why.contains("Error loading ACL rule 'bogus' for the user named 'x': Syntax error"), "{why}");
}

#[test]
fn config_rewrite_keeps_the_users() {
    let dir = ScratchDir::new("rewrite");
    let conf = dir.path().join("kvik.conf");
    std::fs::write(&conf, "user old on nopass +@all\nmaxmemory 0\n").expect("write config");
    let conf_arg = conf.display().to_string();
    let args = [&conf_arg, "--bind", "127.0.0.1", "--port", "{port}", "--save", ""].map(String::from).to_vec();
    let mut server = kvik_testkit::start("kvik", env!("CARGO_BIN_EXE_kvik-server").into(), args);
    let mut c = connect(server.port);
    assert_eq!(call_text(&mut c, &["ACL", "SETUSER", "new", "on", ">pw", "~n*", "+get"]), b"+OK\r\n");
    assert_eq!(call_text(&mut c, &["ACL", "DELUSER", "old"]), b":1\r\n");
    assert_eq!(call_text(&mut c, &["CONFIG", "REWRITE"]), b"+OK\r\n");
    let written = std::fs::read_to_string(&conf).expect("read config");
    assert!(!written.contains("user old") && written.contains("user new on #"), "{written}");
    server.restart();
    let mut c = connect(server.port);
    assert_eq!(call_text(&mut c, &["ACL", "USERS"]), b"*2\r\n$7\r\ndefault\r\n$3\r\nnew\r\n");
    assert_eq!(call_text(&mut c, &["AUTH", "new", "pw"]), b"+OK\r\n");
}

/// The request for `spec` with filler arguments enough for its arity.
fn request_for(spec: &CommandSpec) -> Vec<Vec<u8>> {
    let mut args: Vec<Vec<u8>> = Vec::new();
    match spec.container {
        Some(container) => {
            args.push(container.as_bytes().to_vec());
            args.push(spec.name.rsplit('|').next().unwrap_or_default().as_bytes().to_vec());
        }
        None => args.push(spec.name.as_bytes().to_vec()),
    }
    let wanted = spec.arity.unsigned_abs() as usize;
    while args.len() < wanted {
        args.push(b"x".to_vec());
    }
    args
}

/// Every command and subcommand of the table that could be sent, each
/// with its arguments: containers are sent as their subcommands, and QUIT
/// (answered before anything is checked) is left out.
fn every_request() -> Vec<(&'static CommandSpec, Vec<Vec<u8>>)> {
    COMMANDS
        .iter()
        .flat_map(|c| if c.subcommands.is_empty() { vec![c] } else { c.subcommands.iter().collect() })
        .filter(|s| s.name != "quit")
        .map(|s| (s, request_for(s)))
        .collect()
}

/// Whether `reply` is a refusal `want` (`NOAUTH` or `NOPERM`), or one
/// that comes before any permission: a command kvik does not run, or
/// DEBUG while it is off.
fn refused(reply: &[u8], want: &str) -> bool {
    let reply = String::from_utf8_lossy(reply);
    reply.starts_with(&format!("-{want}"))
        || reply.starts_with(&format!("-EXECABORT Transaction discarded because of: {want}"))
        || reply.starts_with("-ERR unknown command")
        || reply.starts_with("-ERR unknown subcommand")
        || reply.starts_with("-ERR DEBUG command not allowed")
}

#[test]
fn no_command_runs_for_a_client_that_has_not_logged_in_or_lacks_the_permission() {
    let server = start_kvik_with(&["--requirepass", "pw", "--user", "none", "on", "nopass", "nocommands", "allkeys"]);
    let mut admin = connect(server.port);
    assert_eq!(call_text(&mut admin, &["AUTH", "pw"]), b"+OK\r\n");
    let mut stranger = connect(server.port);
    let mut limited = connect(server.port);
    assert_eq!(call_text(&mut limited, &["AUTH", "none", "x"]), b"+OK\r\n");
    let mut mux = greeted(&server);
    let on = |v: &Value| match v {
        Value::Error(e) => e.clone(),
        _ => b"(not an error)".to_vec(),
    };
    assert_eq!(on(&request(&mut mux, &[b"AUTH", b"none", b"x"], 2).value), b"(not an error)".to_vec());
    let mut sent = 0;
    for (spec, args) in every_request() {
        if spec.flags.contains(CommandFlags::NO_AUTH) {
            continue;
        }
        let words: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let reply = call(&mut stranger, &words);
        assert!(refused(&reply, "NOAUTH"), "{} ran without logging in: {}", spec.name, text(reply));
        let reply = call(&mut limited, &words);
        assert!(refused(&reply, "NOPERM"), "{} ran without permission: {}", spec.name, text(reply));
        for channel in [1u16, 2] {
            let want = if channel == 1 { "NOAUTH" } else { "NOPERM" };
            let frame = request(&mut mux, &words, channel);
            assert_eq!(frame.mux, channel);
            let reply = [b"-".as_slice(), &on(&frame.value), b"\r\n"].concat();
            assert!(refused(&reply, want), "{} on channel {channel}: {}", spec.name, text(reply));
        }
        sent += 1;
    }
    assert!(sent > 300, "{sent} commands tried");
    assert_eq!(call_text(&mut admin, &["DBSIZE"]), b":0\r\n", "nothing was written");
    assert_eq!(call_text(&mut admin, &["PING"]), b"+PONG\r\n");
}

#[test]
fn guessing_passwords_is_logged_and_never_succeeds() {
    let server = start_kvik_with(&["--user", "target", "on", ">correct-horse", "+@all", "~*"]);
    let mut c = connect(server.port);
    let mut batch = Vec::new();
    for i in 0..2000 {
        let guess = format!("guess{i}");
        batch.extend_from_slice(&common::diff::multibulk(&[b"AUTH", b"target", guess.as_bytes()]));
    }
    use std::io::Write;
    c.write_all(&batch).expect("send guesses");
    let wrong = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n";
    let answer = common::read_until(&mut c, |got| got.len() >= wrong.len() * 2000);
    assert_eq!(answer.bytes.len(), wrong.len() * 2000);
    assert!(answer.bytes.chunks(wrong.len()).all(|r| r == wrong));
    assert_eq!(call_text(&mut c, &["ACL", "WHOAMI"]), b"$7\r\ndefault\r\n");
    let log = text(call_text(&mut c, &["ACL", "LOG"]));
    assert!(log.starts_with("*1\r\n*14\r\n$5\r\ncount\r\n:2000\r\n$6\r\nreason\r\n$4\r\nauth\r\n"), "{log}");
    assert!(log.contains("$8\r\nusername\r\n$6\r\ntarget\r\n"));
    assert_eq!(call_text(&mut c, &["AUTH", "target", "correct-horse"]), b"+OK\r\n");
}

#[test]
fn generated_passwords_have_the_asked_bits_and_differ() {
    let server = start_kvik_with(&[]);
    let mut c = connect(server.port);
    let one = text(call_text(&mut c, &["ACL", "GENPASS"]));
    let two = text(call_text(&mut c, &["ACL", "GENPASS"]));
    assert!(one.starts_with("$64\r\n") && one != two);
    assert!(one[5..69].bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    for (bits, chars) in [("1", 1), ("5", 2), ("32", 8), ("4096", 1024)] {
        let reply = text(call_text(&mut c, &["ACL", "GENPASS", bits]));
        assert!(reply.starts_with(&format!("${chars}\r\n")), "{bits}: {reply}");
    }
}

fn spec_named(name: &str) -> Option<&'static CommandSpec> {
    COMMANDS.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter())).find(|s| s.name == name)
}

/// `ACL CAT <category>` lists, in some order, Redis's commands of the
/// category that kvik runs, and nothing else.
#[test]
fn categories_list_the_commands_redis_lists() {
    let Some(redis) = common::start_redis_or_skip("categories_list_the_commands_redis_lists") else { return };
    let kvik = start_kvik_with(&[]);
    let (mut r, mut k) = (connect(redis.port), connect(kvik.port));
    let names = |reply: Vec<u8>| -> Vec<String> {
        let mut n: Vec<String> = text(reply)
            .split("\r\n")
            .filter(|l| !l.is_empty() && !l.starts_with(['*', '$']))
            .map(String::from)
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(call_text(&mut k, &["ACL", "CAT"])), names(call_text(&mut r, &["ACL", "CAT"])));
    for category in names(call_text(&mut r, &["ACL", "CAT"])) {
        let theirs = names(call_text(&mut r, &["ACL", "CAT", &category]));
        let ours = names(call_text(&mut k, &["ACL", "CAT", &category]));
        let missing: Vec<&String> = theirs.iter().filter(|n| !ours.contains(n)).collect();
        for name in missing {
            let info = call_text(&mut k, &["COMMAND", "INFO", name]);
            assert_eq!(info, b"*1\r\n$-1\r\n", "{category}: kvik runs {name} but does not list it");
        }
        for name in ours.iter().filter(|n| !theirs.contains(n)) {
            let spec = spec_named(name).expect("listed commands are in the table");
            assert_ne!(spec.source, kvik_protocol::commands::Source::Redis70, "{category}: Redis does not list {name}");
        }
    }
}
