//! Differential testing against a real redis-server: cases, and the runners
//! that send each case to both servers and compare the replies byte for byte.
//!
//! Each case is sent on a fresh connection. Cases that leave the connection
//! open are followed by a marker command (`ECHO` of a fixed token); the reply
//! is complete when the marker's reply arrives, which avoids waiting on
//! timeouts. Cases that must close the connection are read to the end. Cases
//! that use data start with `FLUSHALL`, so each one stands alone.

#![allow(dead_code)]

use super::{clear_of_second_boundary, exchange, start_kvik_with, start_redis_with_or_skip, Answer};

/// Sent after a case that leaves the connection open, to mark the end of its replies.
pub const MARKER: &[u8] = b"*2\r\n$4\r\nECHO\r\n$11\r\nend-of-case\r\n";
/// The marker's reply (the same in RESP2 and RESP3).
pub const MARKER_REPLY: &[u8] = b"$11\r\nend-of-case\r\n";

/// How a case ends.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The connection stays open; the marker follows the case.
    Open,
    /// The server closes the connection (protocol error, QUIT); nothing follows.
    Closed,
}

pub struct Case {
    /// Shown when the case fails.
    pub name: &'static str,
    /// Bytes sent.
    pub bytes: Vec<u8>,
    /// How the case ends.
    pub end: End,
    /// Its replies read whole seconds of the clock (OBJECT IDLETIME): send it
    /// only well inside a second (see [`clear_of_second_boundary`]).
    pub one_second: bool,
}

impl Case {
    /// The case, sent to each server only well inside one wall-clock second.
    pub fn in_one_second(self) -> Case {
        Case { one_second: true, ..self }
    }
}

pub fn open(name: &'static str, bytes: impl Into<Vec<u8>>) -> Case {
    Case { name, bytes: bytes.into(), end: End::Open, one_second: false }
}

pub fn closed(name: &'static str, bytes: impl Into<Vec<u8>>) -> Case {
    Case { name, bytes: bytes.into(), end: End::Closed, one_second: false }
}

/// A case made of inline commands, starting from an empty keyspace.
pub fn lines(name: &'static str, commands: &[&str]) -> Case {
    let mut bytes = b"FLUSHALL\r\n".to_vec();
    for c in commands {
        bytes.extend_from_slice(c.as_bytes());
        bytes.extend_from_slice(b"\r\n");
    }
    open(name, bytes)
}

/// A case made of multibulk commands (for binary data), starting from an empty keyspace.
pub fn requests(name: &'static str, commands: &[&[&[u8]]]) -> Case {
    let mut bytes = b"FLUSHALL\r\n".to_vec();
    for c in commands {
        bytes.extend_from_slice(&multibulk(c));
    }
    open(name, bytes)
}

/// A multibulk request from its arguments.
pub fn multibulk(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Every run of digits becomes `#`: for replies whose shape must match
/// while their numbers (times, ids, lengths of numbers) cannot.
pub fn mask_digits(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_digit() {
            if out.last() != Some(&b'#') {
                out.push(b'#');
            }
        } else {
            out.push(b);
        }
    }
    out
}

/// Client ids differ between servers that have seen different numbers of
/// connections; everything else in a HELLO reply must match.
pub fn mask_client_id(bytes: &[u8]) -> Vec<u8> {
    const KEY: &[u8] = b"$2\r\nid\r\n:";
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some(at) = rest.windows(KEY.len()).position(|w| w == KEY) {
        out.extend_from_slice(&rest[..at + KEY.len()]);
        rest = &rest[at + KEY.len()..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        out.extend_from_slice(b"<id>");
        rest = &rest[digits..];
    }
    out.extend_from_slice(rest);
    out
}

pub fn run_case(port: u16, case: &Case) -> Answer {
    if case.one_second {
        clear_of_second_boundary();
    }
    let mut answer = match case.end {
        End::Open => {
            let mut request = case.bytes.clone();
            request.extend_from_slice(MARKER);
            let mut answer = exchange(port, &request, |got| got.ends_with(MARKER_REPLY));
            if !answer.closed {
                answer.bytes.truncate(answer.bytes.len() - MARKER_REPLY.len());
            }
            answer
        }
        End::Closed => exchange(port, &case.bytes, |_| false),
    };
    answer.bytes = mask_client_id(&answer.bytes);
    answer
}

/// Send every case to a real redis-server and to kvik, each on a fresh
/// connection, and fail listing every case whose replies differ.
pub fn compare_each(test: &str, cases: Vec<Case>) {
    compare_each_with(test, &[], |b| b.to_vec(), cases);
}

/// [`compare_each`] with both servers started with `options`, and every
/// reply passed through `mask` before comparing (to hide values that
/// legitimately differ, such as times and client ids).
pub fn compare_each_with(test: &str, options: &[&str], mask: impl Fn(&[u8]) -> Vec<u8>, cases: Vec<Case>) {
    let Some(redis) = start_redis_with_or_skip(test, options) else {
        return;
    };
    let kvik = start_kvik_with(options);
    let mut mismatches = Vec::new();
    for case in cases {
        let mut expected = run_case(redis.port, &case);
        let mut got = run_case(kvik.port, &case);
        expected.bytes = mask(&expected.bytes);
        got.bytes = mask(&got.bytes);
        // Guard against a case that does not exercise what its name says.
        assert_eq!(
            expected.closed,
            case.end == End::Closed,
            "case '{}': redis closed={}, which the case does not expect: {}",
            case.name,
            expected.closed,
            expected.show()
        );
        if got != expected {
            mismatches.push(format!(
                "case '{}':\n  {:<5} {}\n  {:<5} {}",
                case.name,
                redis.label,
                expected.show(),
                kvik.label,
                got.show()
            ));
        }
    }
    assert!(mismatches.is_empty(), "{} case(s) differ from redis-server:\n{}", mismatches.len(), mismatches.join("\n"));
}

/// The same comparison, with every case sent on one connection after the
/// other, pipelined in a single write: a batch must be answered exactly as
/// Redis answers it, in order.
pub fn compare_pipelined(test: &str, cases: Vec<Case>) {
    let Some(redis) = start_redis_with_or_skip(test, &[]) else {
        return;
    };
    let kvik = start_kvik_with(&[]);
    let mut batch = Vec::new();
    for case in cases.into_iter().filter(|c| c.end == End::Open) {
        batch.extend_from_slice(&case.bytes);
        // Reset the protocol between cases that switch it.
        batch.extend_from_slice(b"HELLO 2\r\n");
    }
    batch.extend_from_slice(MARKER);
    let expected = exchange(redis.port, &batch, |got| got.ends_with(MARKER_REPLY));
    let got = exchange(kvik.port, &batch, |got| got.ends_with(MARKER_REPLY));
    assert!(!expected.closed, "redis closed the pipelined connection: {}", expected.show());
    assert_eq!(
        mask_client_id(&got.bytes).escape_ascii().to_string(),
        mask_client_id(&expected.bytes).escape_ascii().to_string()
    );
}

/// One step of a [`Script`]: a command on one of the script's connections,
/// or a pause (for deadlines to pass).
pub enum Step {
    /// Send the command (words split on spaces) on connection 0 or 1 and
    /// read its one reply.
    On(usize, &'static str),
    /// Wait this many milliseconds.
    Sleep(u64),
}

/// A command on the script's first connection.
pub fn a(command: &'static str) -> Step {
    Step::On(0, command)
}

/// A command on the script's second connection.
pub fn b(command: &'static str) -> Step {
    Step::On(1, command)
}

/// A pause of `ms` milliseconds.
pub fn sleep(ms: u64) -> Step {
    Step::Sleep(ms)
}

/// A case played over two connections, one reply read per command, so
/// the order between the connections is the script's order.
pub struct Script {
    pub name: &'static str,
    pub steps: Vec<Step>,
}

/// A script starting from an empty keyspace.
pub fn script(name: &'static str, steps: Vec<Step>) -> Script {
    Script { name, steps }
}

/// Play `script` against the server on `port`: every reply, each line
/// prefixed by the connection it came on.
pub fn run_script(port: u16, script: &Script) -> Vec<u8> {
    let mut conns = [super::connect(port), super::connect(port)];
    super::call_text(&mut conns[0], &["FLUSHALL"]);
    let mut out = Vec::new();
    for step in &script.steps {
        match step {
            Step::Sleep(ms) => std::thread::sleep(std::time::Duration::from_millis(*ms)),
            Step::On(i, command) => {
                let words: Vec<&str> = command.split(' ').collect();
                let reply = super::call_text(&mut conns[*i], &words);
                out.extend_from_slice(format!("{}> {command}\n", if *i == 0 { 'a' } else { 'b' }).as_bytes());
                out.extend_from_slice(&mask_client_id(&reply));
            }
        }
    }
    out
}

/// Play every script against a real redis-server and kvik (both started
/// with `options`) and fail listing every script whose replies differ.
pub fn compare_scripts(test: &str, options: &[&str], scripts: Vec<Script>) {
    let Some(redis) = start_redis_with_or_skip(test, options) else {
        return;
    };
    let kvik = start_kvik_with(options);
    let mut mismatches = Vec::new();
    for s in &scripts {
        let expected = run_script(redis.port, s);
        let got = run_script(kvik.port, s);
        if got != expected {
            mismatches.push(format!(
                "script '{}':\n  {:<5} {}\n  {:<5} {}",
                s.name,
                redis.label,
                expected.escape_ascii(),
                kvik.label,
                got.escape_ascii()
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} script(s) differ from redis-server:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// Send `commands` pipelined on a new connection to `port`, followed by the
/// end marker; each reply (client ids masked), and the raw answer (which
/// says whether the server closed the connection). The random sequences of
/// every suite run through this.
pub fn run_sequence<'c>(port: u16, commands: impl IntoIterator<Item = &'c [Vec<u8>]>) -> (Vec<Vec<u8>>, super::Answer) {
    use std::io::Write;
    let mut batch = Vec::new();
    for args in commands {
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        batch.extend(multibulk(&args));
    }
    batch.extend_from_slice(MARKER);
    let mut stream = super::connect(port);
    stream.write_all(&batch).expect("send the sequence");
    let mut answer = super::read_until(&mut stream, |got| got.ends_with(MARKER_REPLY));
    if !answer.closed {
        answer.bytes.truncate(answer.bytes.len() - MARKER_REPLY.len());
    }
    let replies = super::split_replies(&answer.bytes).iter().map(|r| mask_client_id(r)).collect();
    (replies, answer)
}

/// A command's arguments as a failure message shows them: each quoted, with
/// control bytes escaped.
pub fn show_args(args: &[Vec<u8>]) -> String {
    let parts: Vec<String> = args.iter().map(|a| format!("\"{}\"", a.escape_ascii())).collect();
    parts.join(" ")
}
