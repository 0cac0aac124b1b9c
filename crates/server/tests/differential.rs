//! Differential tests: the same bytes go to kvik-server and to a real
//! redis-server, and the replies must be identical, byte for byte, including
//! whether the server closed the connection afterwards.
//!
//! Each case is sent on a fresh connection. Cases that leave the connection
//! open are followed by a marker command (`ECHO` of a fixed token); the reply
//! is complete when the marker's reply arrives, which avoids waiting on
//! timeouts. Cases that must close the connection are read to the end.

mod common;

use std::io::Write;

use common::diff::{closed, compare_each, compare_pipelined, multibulk, open, run_case, Case, End};
use common::{start_kvik, Answer};

fn cases() -> Vec<Case> {
    let x100 = vec![b'x'; 100];
    let y100 = vec![b'y'; 100];
    let x200 = vec![b'x'; 200];
    let name300 = vec![b'n'; 300];
    let mut long_inline = b"PING ".to_vec();
    long_inline.resize(long_inline.len() + 70 * 1024, b'a');
    let mut long_count = b"*".to_vec();
    long_count.resize(long_count.len() + 70 * 1024, b'1');
    vec![
        // PING and ECHO.
        open("ping inline", "PING\r\n"),
        open("ping multibulk", multibulk(&[b"PING"])),
        open("ping lowercase", "ping\r\n"),
        open("ping with message", "PING hello\r\n"),
        open("ping with empty message", multibulk(&[b"ping", b""])),
        open("ping too many args", "PING a b\r\n"),
        open("echo", "ECHO hello\r\n"),
        open("echo binary", multibulk(&[b"echo", b"a\r\nb\0c\xff"])),
        open("echo no args", "ECHO\r\n"),
        open("echo two args", "ECHO a b\r\n"),
        // Strings and keys; every case starts from an empty keyspace.
        open("set get", "FLUSHALL\r\nSET k v\r\nGET k\r\nGET missing\r\n"),
        open("set options", "FLUSHALL\r\nSET k v NX\r\nSET k w NX\r\nSET k w XX\r\nGET k\r\nSET n v XX\r\nGET n\r\n"),
        open("set get option", "FLUSHALL\r\nSET k v GET\r\nSET k w GET\r\nSET k x NX GET\r\nGET k\r\n"),
        open("set syntax errors", "FLUSHALL\r\nSET k v NX XX\r\nSET k v XX NX\r\nSET k v BOGUS\r\nSET k v EX\r\nSET k v EX 10 PX 10\r\nSET k v KEEPTTL EX 10\r\nSET k v EX 10 KEEPTTL\r\nGET k\r\n"),
        open("set bad expire", "FLUSHALL\r\nSET k v EX 0\r\nSET k v EX -1\r\nSET k v PX abc\r\nSET k v EX 9223372036854775807\r\nSET k v EX 1.5\r\nEXISTS k\r\n"),
        open("set repeated option", "FLUSHALL\r\nSET k v NX NX\r\nSET k v EX 100 EX 200\r\nGET k\r\n"),
        open("set lowercase options", "FLUSHALL\r\nset k v nx get\r\nset k v2 xx get\r\nget k\r\n"),
        open("integers", "FLUSHALL\r\nINCR c\r\nINCRBY c 10\r\nDECR c\r\nDECRBY c 5\r\nGET c\r\nSET s abc\r\nINCR s\r\nINCRBY c x\r\nDECRBY c -9223372036854775808\r\n"),
        open("integer overflow", "FLUSHALL\r\nSET c 9223372036854775807\r\nINCR c\r\nSET d -9223372036854775808\r\nDECR d\r\nGET c\r\n"),
        open("integer text forms", "FLUSHALL\r\nSET a 007\r\nINCR a\r\nSET b \" 1\"\r\nINCR b\r\nSET c -0\r\nINCR c\r\nSET d 12\r\nAPPEND d 3\r\nINCR d\r\n"),
        open("append strlen", "FLUSHALL\r\nAPPEND k abc\r\nAPPEND k def\r\nSTRLEN k\r\nSTRLEN missing\r\nGET k\r\nSET n 12345\r\nSTRLEN n\r\n"),
        open("mset mget", "FLUSHALL\r\nMSET a 1 b 2 c 3\r\nMGET a b c missing\r\nMSET a 1 b\r\nMGET\r\n"),
        open("setnx", "FLUSHALL\r\nSETNX k a\r\nSETNX k b\r\nGET k\r\n"),
        open("del exists type", "FLUSHALL\r\nMSET a 1 b 2\r\nEXISTS a b c a\r\nTYPE a\r\nTYPE c\r\nDEL a c a\r\nUNLINK b\r\nEXISTS a b\r\n"),
        open("select and dbsize", "FLUSHALL\r\nSET k 0\r\nSELECT 1\r\nGET k\r\nSET k 1\r\nDBSIZE\r\nSELECT 0\r\nGET k\r\nSELECT 16\r\nSELECT -1\r\nSELECT x\r\nDBSIZE\r\n"),
        open("flushdb", "FLUSHALL\r\nSET k 0\r\nSELECT 1\r\nSET k 1\r\nFLUSHDB\r\nDBSIZE\r\nSELECT 0\r\nDBSIZE\r\nFLUSHDB ASYNC\r\nFLUSHDB bogus\r\nFLUSHALL SYNC\r\nFLUSHALL a b\r\n"),
        open("binary keys and values", multibulk(&[b"SET", b"k\x00\xff", b"v\r\n\x00"])),
        // HELLO, RESP3 and what follows it on the same connection.
        open("hello 3 then ping", "HELLO 3\r\nPING\r\nPING x\r\nECHO y\r\n"),
        open("hello 2", "HELLO 2\r\n"),
        open("hello without version", "HELLO\r\n"),
        open("hello 3 then 2", "HELLO 3\r\nHELLO 2\r\nPING\r\n"),
        open("hello 4", "HELLO 4\r\n"),
        open("hello 1", "HELLO 1\r\n"),
        open("hello not a number", "HELLO x\r\n"),
        open("hello leading zero", "HELLO 03\r\n"),
        open("hello bad option", "HELLO 3 foo\r\n"),
        open("hello setname", "HELLO 3 SETNAME app\r\nPING\r\n"),
        open("hello setname with space", "HELLO 3 SETNAME 'a b'\r\n"),
        open("hello setname missing", "HELLO 3 SETNAME\r\n"),
        open("hello auth default", "HELLO 3 AUTH default secret\r\n"),
        open("hello auth unknown user", "HELLO 3 AUTH bob secret\r\n"),
        open("hello auth missing password", "HELLO 3 AUTH default\r\n"),
        // Unknown commands and the way Redis quotes their arguments.
        open("unknown no args", "foo\r\n"),
        open("unknown with args", "foo a b\r\n"),
        open("unknown keeps case", "FoO Bar\r\n"),
        open("unknown multibulk", multibulk(&[b"foo", b"a", b"b"])),
        open("unknown long arg", multibulk(&[b"foo", &x200, b"y"])),
        open("unknown budget split", multibulk(&[b"foo", &x100, &y100, b"z"])),
        open("unknown long name", multibulk(&[&name300, b"a"])),
        open("unknown empty name", multibulk(&[b"", b"a"])),
        open("unknown nul bytes", multibulk(&[b"f\0oo", b"a\0b"])),
        open("unknown newline in arg", multibulk(&[b"foo", b"a\r\nb"])),
        open("unknown quoted", "foo \"a'b\" 'c\"d'\r\n"),
        open("unknown escapes", "foo \"\\x41\\n\" 'it\\'s'\r\n"),
        open("unknown many args", "foo 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40\r\n"),
        // Arity and subcommands, from the command table.
        open("get without key", "GET\r\n"),
        open("set with key only", "SET k\r\n"),
        open("client alone", "CLIENT\r\n"),
        open("client unknown subcommand", "CLIENT foo\r\n"),
        open("client setname without name", "CLIENT SETNAME\r\n"),
        open("command unknown subcommand", "COMMAND foo bar\r\n"),
        open("command count extra arg", "COMMAND COUNT x\r\n"),
        open("command help extra arg", "command help x\r\n"),
        // Inline and multibulk framing details.
        open("inline LF only", "PING\n"),
        // Blank lines between commands are ignored. (Not as the first bytes of a
        // connection: a first byte below 0x20 announces RESPB frames.)
        open("inline blank lines", "PING\r\n\r\n\r\n\nPING\r\n"),
        // A blank line first: still RESP (the connection's first byte is CR or LF).
        open("blank line before the first command", "\r\nPING\r\n\r\n*1\r\n$4\r\nPING\r\n"),
        open("newline before the first command", "\nECHO a\r\n"),
        open("inline extra spaces", "   PING    hi   \r\n"),
        open("inline tabs", "PING\thi\r\n"),
        open("empty multibulk", "*0\r\nPING\r\n"),
        open("null multibulk", "*-1\r\nPING\r\n"),
        open("pipeline", "PING\r\n*2\r\n$4\r\nECHO\r\n$1\r\na\r\nfoo\r\nPING b\r\n"),
        // QUIT answers OK and closes, ignoring what follows.
        closed("quit", "QUIT\r\nPING\r\n"),
        closed("quit with args", "quit now please\r\nPING\r\n"),
        closed("quit multibulk", multibulk(&[b"QUIT"])),
        closed("quit after ping", "PING\r\nQUIT\r\n"),
        closed("quit inside multi", "MULTI\r\nSET k v\r\nQUIT\r\nEXEC\r\n"),
        // Protocol errors: the error text, then the connection is closed.
        closed("invalid multibulk length", "*x\r\n"),
        closed("multibulk length with plus", "*+1\r\n$4\r\nPING\r\n"),
        closed("multibulk length with space", "*1 \r\n"),
        closed("multibulk length leading zero", "*01\r\n$4\r\nPING\r\n"),
        closed("multibulk length too large", "*3000000000\r\n"),
        closed("invalid bulk length", "*1\r\n$x\r\n"),
        closed("negative bulk length", "*1\r\n$-1\r\n"),
        closed("bulk length with plus", "*1\r\n$+4\r\nPING\r\n"),
        closed("expected dollar", "*1\r\nfoo\r\n"),
        closed("expected dollar got CR", "*1\r\n\r\n"),
        closed("expected dollar got non-ascii", b"*1\r\n\xe9\r\n".to_vec()),
        closed("expected dollar in second arg", "*2\r\n$4\r\nECHO\r\n:1\r\n"),
        closed("unbalanced double quote", "PING \"a\r\n"),
        closed("unbalanced single quote", "PING 'a\r\n"),
        closed("text after closing quote", "foo 'it''s'\r\n"),
        closed("replies before the error", "PING\r\nECHO a\r\n*x\r\n"),
        closed("too big inline request", long_inline),
        closed("too big multibulk count", long_count),
    ]
}

#[test]
fn replies_match_redis_byte_for_byte() {
    compare_each("replies_match_redis_byte_for_byte", cases());
}

/// The same comparison, with every case sent on one connection after the
/// other, pipelined in a single write: a batch must be answered exactly as
/// Redis answers it, in order.
#[test]
fn pipelined_cases_match_redis() {
    compare_pipelined("pipelined_cases_match_redis", cases());
}

/// Checks that hold for kvik alone, so the behaviour is asserted even where
/// redis-server is not installed.
#[test]
fn kvik_answers_core_requests() {
    let kvik = start_kvik();
    let ask = |bytes: &[u8], end: End| {
        let case = Case { name: "", bytes: bytes.to_vec(), end, one_second: false };
        run_case(kvik.port, &case)
    };
    let open_answer = |bytes: &[u8]| Answer { bytes: bytes.to_vec(), closed: false };
    let closed_answer = |bytes: &[u8]| Answer { bytes: bytes.to_vec(), closed: true };
    assert_eq!(ask(b"PING\r\n", End::Open), open_answer(b"+PONG\r\n"));
    assert_eq!(ask(b"ECHO hi\r\n", End::Open), open_answer(b"$2\r\nhi\r\n"));
    assert_eq!(
        ask(b"foo 'a b' c\r\n", End::Open),
        open_answer(b"-ERR unknown command 'foo', with args beginning with: 'a b' 'c' \r\n")
    );
    assert_eq!(ask(b"GET\r\n", End::Open), open_answer(b"-ERR wrong number of arguments for 'get' command\r\n"));
    let hello = ask(b"HELLO 3\r\nPING\r\n", End::Open);
    assert!(hello.bytes.starts_with(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n"));
    assert!(hello.bytes.ends_with(b"$7\r\nmodules\r\n*0\r\n+PONG\r\n"));
    assert_eq!(ask(b"QUIT\r\nPING\r\n", End::Closed), closed_answer(b"+OK\r\n"));
    assert_eq!(
        ask(b"PING\r\n*1\r\n$x\r\nPING\r\n", End::Closed),
        closed_answer(b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n")
    );
    // A request split across writes is answered once its last byte arrives.
    let mut stream = common::connect(kvik.port);
    for part in [&b"*2\r\n$4\r\nEC"[..], b"HO\r\n$3\r", b"\nabc", b"\r\n"] {
        stream.write_all(part).expect("send part");
        stream.flush().expect("flush");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let answer = common::read_until(&mut stream, |got| got.len() >= 9);
    assert_eq!(answer, open_answer(b"$3\r\nabc\r\n"));
}
