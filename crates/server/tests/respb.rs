//! RESPB/1 against kvik-server: handshake, frames on mux channels,
//! passthrough, control frames, and the fatal-error path.

mod common;

use std::io::Write;
use std::net::TcpStream;

use common::{call_text, connect, info_value, read_until, start_kvik, start_kvik_with, ServerProcess};
use kvik_protocol::resp::reply_parser::ReplyLimits;
use kvik_protocol::respb::encode::write_passthrough;
use kvik_protocol::respb::handshake;
use kvik_protocol::respb::layouts::core_layout;
use kvik_protocol::respb::{control_frame, decode_reply, encode_request, Encoding, ReplyFrame, MUX_CLOSE, MUX_CREATE};
use kvik_protocol::Value;

/// Connect and complete the version-1 handshake.
fn greeted(server: &ServerProcess) -> TcpStream {
    let mut stream = connect(server.port);
    stream.write_all(&handshake::client_hello(1)).expect("send greeting");
    let answer = read_until(&mut stream, |got| got.len() >= handshake::LEN);
    assert_eq!(answer.bytes, [0xD3, 0xC1, 0x01, 0x00], "server accepts version 1");
    stream
}

/// Read exactly one reply frame.
fn reply(stream: &mut TcpStream) -> ReplyFrame {
    let complete = |got: &[u8]| matches!(decode_reply(got, &ReplyLimits::DEFAULT), Ok(Some(_)) | Err(_));
    let answer = read_until(stream, complete);
    let frame = decode_reply(&answer.bytes, &ReplyLimits::DEFAULT)
        .expect("well-formed reply frame")
        .unwrap_or_else(|| panic!("incomplete reply frame: {}", answer.show()));
    assert_eq!(frame.consumed, answer.bytes.len(), "exactly one frame was sent");
    frame
}

fn request(stream: &mut TcpStream, args: &[&[u8]], mux: u16) -> ReplyFrame {
    let mut frame = Vec::new();
    encode_request(args, mux, &mut frame);
    stream.write_all(&frame).expect("send frame");
    reply(stream)
}

#[test]
fn ping_on_a_channel_is_answered_on_that_channel() {
    let kvik = start_kvik();
    let mut stream = greeted(&kvik);
    let mut frame = Vec::new();
    assert_eq!(encode_request(&[b"PING"], 5, &mut frame), Encoding::Binary);
    assert_eq!(&frame[..4], [0x03, 0x00, 0x00, 0x05], "PING opcode 0x0300 on mux 5");
    stream.write_all(&frame).expect("send PING");
    let pong = reply(&mut stream);
    assert_eq!((pong.mux, pong.value), (5, Value::simple("PONG")));
    // Any bytes travel intact in both directions.
    let echo = request(&mut stream, &[b"ECHO", b"binary\r\n\0"], 6);
    assert_eq!((echo.mux, echo.value), (6, Value::bulk("binary\r\n\0")));
}

#[test]
fn passthrough_command_gets_a_binary_reply() {
    let kvik = start_kvik();
    let mut stream = greeted(&kvik);
    let mut frame = Vec::new();
    write_passthrough(&[&b"ECHO"[..], b"through"], 7, &mut frame);
    assert_eq!(&frame[..2], [0xFF, 0xFF]);
    stream.write_all(&frame).expect("send passthrough");
    let echo = reply(&mut stream);
    assert_eq!((echo.mux, echo.value), (7, Value::bulk("through")));
    let unknown = request(&mut stream, &[b"NOSUCH", b"a"], 7);
    assert_eq!(
        unknown.value,
        Value::Error(b"ERR unknown command 'NOSUCH', with args beginning with: 'a' ".to_vec()),
        "command errors are ordinary replies"
    );
    let after = request(&mut stream, &[b"PING"], 7);
    assert_eq!(after.value, Value::simple("PONG"), "the connection stays up after a command error");
}

#[test]
fn frames_without_handshake_and_control_frames() {
    let kvik = start_kvik();
    let mut stream = connect(kvik.port);
    let pong = request(&mut stream, &[b"PING"], 0);
    assert_eq!((pong.mux, pong.value), (0, Value::simple("PONG")));
    for opcode in [MUX_CREATE, MUX_CLOSE] {
        let mut frame = Vec::new();
        control_frame(opcode, 1, 9, &mut frame);
        stream.write_all(&frame).expect("send control frame");
        let ok = reply(&mut stream);
        assert_eq!((ok.mux, ok.value), (1, Value::simple("OK")));
    }
}

#[test]
fn each_channel_is_its_own_client() {
    let kvik = start_kvik();
    let mut stream = greeted(&kvik);
    let id_of = |frame: ReplyFrame| match frame.value {
        Value::Map(pairs) => {
            pairs.into_iter().find(|(k, _)| *k == Value::bulk("id")).map(|(_, v)| v).expect("HELLO reply has an id")
        }
        other => panic!("HELLO reply is a map, got {other:?}"),
    };
    let first = id_of(request(&mut stream, &[b"HELLO", b"3"], 1));
    let second = id_of(request(&mut stream, &[b"HELLO", b"3"], 2));
    let first_again = id_of(request(&mut stream, &[b"HELLO"], 1));
    assert_ne!(first, second);
    assert_eq!(first, first_again);
}

#[test]
fn a_blocked_channel_is_answered_on_its_channel() {
    // A blocked channel does not hold back the others: PING on mux 4 is
    // answered at once; the BLPOP reply comes later as a frame on mux 3.
    let kvik = start_kvik();
    let mut stream = greeted(&kvik);
    let mut frame = Vec::new();
    encode_request(&[&b"BLPOP"[..], b"k", b"0"], 3, &mut frame);
    encode_request(&[b"PING"], 4, &mut frame);
    stream.write_all(&frame).expect("send");
    let mut pusher = connect(kvik.port);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !String::from_utf8_lossy(&common::call(&mut pusher, &[b"INFO", b"clients"])).contains("blocked_clients:1") {
        assert!(std::time::Instant::now() < deadline, "the channel never blocked");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert_eq!(common::call(&mut pusher, &[b"RPUSH", b"k", b"a"]), b":1\r\n");
    let two = |got: &[u8]| match decode_reply(got, &ReplyLimits::DEFAULT) {
        Ok(Some(first)) => matches!(decode_reply(&got[first.consumed..], &ReplyLimits::DEFAULT), Ok(Some(_))),
        _ => false,
    };
    let bytes = read_until(&mut stream, two).bytes;
    let pong = decode_reply(&bytes, &ReplyLimits::DEFAULT).expect("frame").expect("complete");
    assert_eq!((pong.mux, pong.value), (4, Value::simple("PONG")));
    let served = decode_reply(&bytes[pong.consumed..], &ReplyLimits::DEFAULT).expect("frame").expect("complete");
    assert_eq!((served.mux, served.value), (3, Value::Array(vec![Value::bulk("k"), Value::bulk("a")])));
    let timed_out = request(&mut stream, &[b"BRPOP", b"k", b"0.01"], 5);
    // RESPB has one null, for null bulks and null arrays alike.
    assert_eq!((timed_out.mux, timed_out.value), (5, Value::Null));
}

#[test]
fn unknown_opcode_gets_an_error_frame_and_the_connection_closes() {
    let unknown = 0x7FFE;
    assert!(core_layout(unknown).is_none(), "the opcode must really be unassigned");
    let kvik = start_kvik();
    let mut stream = greeted(&kvik);
    let mut frame = Vec::new();
    frame.extend_from_slice(&u16::to_be_bytes(unknown));
    frame.extend_from_slice(&u16::to_be_bytes(9));
    frame.extend_from_slice(b"payload the server cannot delimit");
    stream.write_all(&frame).expect("send frame");
    let answer = read_until(&mut stream, |_| false);
    assert!(answer.closed, "the server closes after an undecodable frame");
    let err = decode_reply(&answer.bytes, &ReplyLimits::DEFAULT)
        .expect("well-formed error frame")
        .expect("complete error frame");
    assert_eq!(err.mux, 9, "the error goes to the frame's channel");
    assert_eq!(err.value, Value::Error(b"ERR RESPB unknown opcode 0x7FFE".to_vec()));
    assert_eq!(err.consumed, answer.bytes.len(), "nothing follows the error frame");
}

#[test]
fn unsupported_version_is_refused_and_closed() {
    let kvik = start_kvik();
    let mut stream = connect(kvik.port);
    stream.write_all(&handshake::client_hello(2)).expect("send greeting");
    let answer = read_until(&mut stream, |_| false);
    assert_eq!(answer.bytes, [0xD3, 0xC1, 0x00, 0x00]);
    assert!(answer.closed);
    // Version 1 with a flag set: no flags are defined, so it is malformed.
    let mut stream = connect(kvik.port);
    stream.write_all(&[0xD3, 0xC1, 0x01, 0x80]).expect("send greeting");
    let answer = read_until(&mut stream, |_| false);
    assert_eq!(answer.bytes, [0xD3, 0xC1, 0x00, 0x00]);
    assert!(answer.closed);
}

/// EXEC's reply is written in parts (the array, then each queued command's
/// reply) but leaves as one frame, on the channel that sent EXEC; another
/// channel of the same connection is a separate client with no MULTI.
#[test]
fn exec_reply_is_one_frame() {
    let kvik = start_kvik();
    let mut stream = greeted(&kvik);
    assert_eq!(request(&mut stream, &[b"MULTI"], 3).value, Value::simple("OK"));
    assert_eq!(request(&mut stream, &[b"SET", b"k", b"v"], 3).value, Value::simple("QUEUED"));
    assert_eq!(request(&mut stream, &[b"GET", b"k"], 4).value, Value::Null, "channel 4 runs at once");
    for args in [&[&b"INCR"[..], b"n"][..], &[b"LPUSH", b"k", b"x"], &[b"GET", b"k"], &[b"LRANGE", b"k", b"0", b"-1"]] {
        assert_eq!(request(&mut stream, args, 3).value, Value::simple("QUEUED"));
    }
    let exec = request(&mut stream, &[b"EXEC"], 3);
    assert_eq!(exec.mux, 3);
    assert_eq!(
        exec.value,
        Value::Array(vec![
            Value::simple("OK"),
            Value::Integer(1),
            Value::Error(b"WRONGTYPE Operation against a key holding the wrong kind of value".to_vec()),
            Value::bulk("v"),
            Value::Error(b"WRONGTYPE Operation against a key holding the wrong kind of value".to_vec()),
        ])
    );
    let after = request(&mut stream, &[b"PING"], 3);
    assert_eq!(after.value, Value::simple("PONG"), "frames after EXEC are intact");
}

#[test]
fn scripts_and_functions_run_over_respb_with_binary_opcodes() {
    let kvik = start_kvik();
    let mut stream = greeted(&kvik);
    let lib = b"#!lua name=lib\nredis.register_function('put', function(keys, args) return redis.call('set', keys[1], args[1]) end)";
    let mut frame = Vec::new();
    for args in
        [&[&b"FUNCTION"[..], b"LOAD", lib][..], &[b"FCALL", b"put", b"1", b"k", b"v"], &[b"EVAL", b"return 1", b"0"]]
    {
        frame.clear();
        assert_eq!(encode_request(args, 1, &mut frame), Encoding::Binary, "{:?}", args[0]);
    }
    assert_eq!(request(&mut stream, &[b"FUNCTION", b"LOAD", lib], 1).value, Value::bulk("lib"));
    assert_eq!(request(&mut stream, &[b"FCALL", b"put", b"1", b"k", b"v"], 2).value, Value::simple("OK"));
    let got = request(&mut stream, &[b"EVAL", b"return redis.call('get', KEYS[1])", b"1", b"k"], 3);
    assert_eq!((got.mux, got.value), (3, Value::bulk("v")));
    let stats = request(&mut stream, &[b"FUNCTION", b"STATS"], 4);
    assert!(
        matches!(stats.value, Value::Map(ref pairs) if pairs.len() == 2 && pairs[0].1 == Value::Null),
        "{:?}",
        stats.value
    );
}

/// `total_reads_processed` and `total_writes_processed` of `INFO stats`,
/// asked on `stream`'s channel 1.
fn reads_and_writes(stream: &mut TcpStream) -> (u64, u64) {
    let Value::Bulk(info) = request(stream, &[b"INFO", b"stats"], 1).value else {
        panic!("INFO answers a bulk string");
    };
    let info = String::from_utf8_lossy(&info).into_owned();
    let field = |name: &str| -> u64 { info_value(&info, name).parse().unwrap_or_else(|e| panic!("{name}: {e}")) };
    (field("total_reads_processed"), field("total_writes_processed"))
}

/// As over RESP, a batch of frames with many kilobytes of input, all the
/// client sent, gets its first replies before it has run whole: more
/// writes than reads answer it. Without the split every read is answered
/// by at most one write.
#[test]
fn a_long_pipeline_of_frames_is_answered_in_more_writes_than_reads() {
    let kvik = start_kvik();
    let mut stream = greeted(&kvik);
    let mut ping = Vec::new();
    encode_request(&[b"PING"], 1, &mut ping);
    stream.write_all(&ping).expect("send PING");
    let pong_len = reply(&mut stream).consumed;
    // 12 KB: more than a split needs, less than one read takes.
    const PINGS: usize = 3000;
    let mut seen = Vec::new();
    for _ in 0..20 {
        let (reads_before, writes_before) = reads_and_writes(&mut stream);
        stream.write_all(&ping.repeat(PINGS)).expect("send");
        let replies = read_until(&mut stream, |b| b.len() >= PINGS * pong_len).bytes;
        assert_eq!(replies.len(), PINGS * pong_len);
        let (reads_after, writes_after) = reads_and_writes(&mut stream);
        // Less the second report's read and the first one's reply.
        let (reads, writes) = (reads_after - reads_before - 1, writes_after - writes_before - 1);
        if writes > reads {
            return;
        }
        // The server woke before the whole pipeline was in: try again.
        seen.push((reads, writes));
    }
    panic!("no pipeline was answered in more writes than reads: (reads, writes) {seen:?}");
}

/// `rename-command` holds on every protocol: a disabled or renamed command
/// does not answer to its RESPB opcode either, and the new name works as a
/// passthrough or RESP request.
#[test]
fn renamed_commands_are_renamed_on_both_protocols() {
    let kvik = start_kvik_with(&["--rename-command", "FLUSHALL", "", "--rename-command", "DBSIZE", "keycount"]);
    let mut text = connect(kvik.port);
    assert!(call_text(&mut text, &["DBSIZE"]).starts_with(b"-ERR unknown command 'DBSIZE'"));
    assert!(call_text(&mut text, &["flushall"]).starts_with(b"-ERR unknown command 'flushall'"));
    assert_eq!(call_text(&mut text, &["KEYCOUNT"]), b":0\r\n");
    let mut stream = greeted(&kvik);
    for name in [&b"DBSIZE"[..], b"FLUSHALL"] {
        let refused = request(&mut stream, &[name], 3);
        assert!(matches!(&refused.value, Value::Error(e) if e.starts_with(b"ERR unknown command")), "{refused:?}");
    }
    assert_eq!(request(&mut stream, &[b"keycount"], 3).value, Value::Integer(0));
}
