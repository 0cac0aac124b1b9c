//! `CLIENT PAUSE` on RESPB channels: a held command holds back only its own
//! channel, as a paused RESP client holds back only itself. Frames behind it
//! on that channel wait in order; the other channels of the connection go on
//! (or are held themselves). Times are measured from when the pause was
//! requested, as in `tests/pause.rs`, so a slow machine slows the tests down
//! without making them fail.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{call, connect, start_kvik, ServerProcess};
use kvik_protocol::resp::reply_parser::ReplyLimits;
use kvik_protocol::respb::handshake;
use kvik_protocol::respb::{control_frame, decode_reply, encode_request, MUX_CLOSE};
use kvik_protocol::Value;

/// How long the tests pause for.
const PAUSE: Duration = Duration::from_millis(1500);
/// Servers count the pause in whole milliseconds, so it may end this much early.
const ROUNDING: Duration = Duration::from_millis(20);
/// A pause no test waits out.
const LONG_PAUSE_MS: u64 = 60_000;

fn pause_ms() -> u64 {
    PAUSE.as_millis() as u64
}

/// Pause the server from another connection; returns when the request was sent.
fn pause(port: u16, mode: &[u8], ms: u64) -> Instant {
    let mut admin = connect(port);
    let sent = Instant::now();
    assert_eq!(call(&mut admin, &[b"CLIENT", b"PAUSE", ms.to_string().as_bytes(), mode]), b"+OK\r\n");
    sent
}

/// A RESPB connection that reads reply frames one at a time, noting when
/// each arrived.
struct Respb {
    stream: TcpStream,
    unread: Vec<u8>,
}

impl Respb {
    fn open(server: &ServerProcess) -> Self {
        let mut stream = connect(server.port);
        stream.write_all(&handshake::client_hello(1)).expect("send greeting");
        let mut answer = [0u8; handshake::LEN];
        stream.read_exact(&mut answer).expect("greeting answer");
        assert_eq!(answer, [0xD3, 0xC1, 0x01, 0x00]);
        Respb { stream, unread: Vec::new() }
    }

    fn send(&mut self, args: &[&[u8]], mux: u16) {
        let mut frame = Vec::new();
        encode_request(args, mux, &mut frame);
        self.stream.write_all(&frame).expect("send frame");
    }

    fn close_channel(&mut self, mux: u16, target: u16) {
        let mut frame = Vec::new();
        control_frame(MUX_CLOSE, mux, target, &mut frame);
        self.stream.write_all(&frame).expect("send MUX_CLOSE");
    }

    /// The next reply frame's channel and value, and when it was complete.
    fn next(&mut self) -> (u16, Value, Instant) {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match decode_reply(&self.unread, &ReplyLimits::DEFAULT) {
                Ok(Some(f)) => {
                    self.unread.drain(..f.consumed);
                    return (f.mux, f.value, Instant::now());
                }
                Ok(None) => {}
                Err(e) => panic!("bad reply frame: {e:?}"),
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => panic!("connection closed"),
                Ok(n) => self.unread.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("no reply frame ({e}); unread: {}", self.unread.escape_ascii()),
            }
        }
    }

    /// The next reply frame, which must be `value` on `mux`.
    fn expect(&mut self, mux: u16, value: Value) -> Instant {
        let (got_mux, got, at) = self.next();
        assert_eq!((got_mux, got), (mux, value));
        at
    }

    fn request(&mut self, args: &[&[u8]], mux: u16) -> Value {
        self.send(args, mux);
        let (got_mux, value, _) = self.next();
        assert_eq!(got_mux, mux);
        value
    }

    /// Nothing arrives for a moment.
    fn silent(&mut self) {
        assert!(self.unread.is_empty(), "unread bytes: {}", self.unread.escape_ascii());
        self.stream.set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
        let mut byte = [0u8; 1];
        let got = self.stream.read(&mut byte);
        assert!(got.is_err(), "unexpected bytes: {got:?} {byte:?}");
        self.stream.set_read_timeout(Some(common::REPLY_TIMEOUT)).expect("timeout");
    }
}

fn client_id(conn: &mut Respb, mux: u16) -> i64 {
    match conn.request(&[b"CLIENT", b"ID"], mux) {
        Value::Integer(id) => id,
        other => panic!("CLIENT ID: {other:?}"),
    }
}

#[test]
fn a_held_write_holds_only_its_channel_under_write_pause() {
    let kvik = start_kvik();
    let mut s = Respb::open(&kvik);
    assert_eq!(s.request(&[b"SET", b"k", b"old"], 1), Value::simple("OK"));
    let paused = pause(kvik.port, b"WRITE", pause_ms());
    s.send(&[b"SET", b"k", b"new"], 1);
    s.send(&[b"GET", b"k"], 1);
    s.send(&[b"GET", b"k"], 2);
    s.send(&[b"PING"], 3);
    // Reads on the other channels are answered during the pause.
    let read = s.expect(2, Value::bulk("old"));
    let ping = s.expect(3, Value::simple("PONG"));
    assert!(read.max(ping) - paused < PAUSE - ROUNDING, "the reads waited for the pause");
    // A write on another channel is held too; a read behind it on its channel waits with it.
    s.send(&[b"INCR", b"n"], 4);
    s.send(&[b"GET", b"n"], 4);
    assert_eq!(s.request(&[b"ECHO", b"still"], 5), Value::bulk("still"));
    assert!(paused.elapsed() < PAUSE - ROUNDING, "channel 5 waited for the pause");
    // After the pause, each held channel answers in its own order.
    let mut after: Vec<(u16, Value, Instant)> = (0..4).map(|_| s.next()).collect();
    for (_, _, at) in &after {
        assert!(*at - paused >= PAUSE - ROUNDING, "a held command ran during the pause");
    }
    after.sort_by_key(|(mux, _, _)| *mux);
    let seen: Vec<(u16, Value)> = after.into_iter().map(|(mux, value, _)| (mux, value)).collect();
    assert_eq!(
        seen,
        vec![(1, Value::simple("OK")), (1, Value::bulk("new")), (4, Value::Integer(1)), (4, Value::bulk("1")),],
        "sorting by channel is stable, so each channel's replies are in request order"
    );
    s.silent();
    let started = Instant::now();
    assert_eq!(s.request(&[b"SET", b"k", b"later"], 1), Value::simple("OK"));
    assert!(started.elapsed() < PAUSE, "the channel stayed held after the pause");
}

#[test]
fn under_all_pause_every_channel_waits() {
    let kvik = start_kvik();
    let mut s = Respb::open(&kvik);
    let paused = pause(kvik.port, b"ALL", pause_ms());
    s.send(&[b"SET", b"k", b"v"], 1);
    s.send(&[b"GET", b"k"], 2);
    s.send(&[b"PING"], 2);
    let mut got: Vec<(u16, Value, Instant)> = (0..3).map(|_| s.next()).collect();
    for (mux, _, at) in &got {
        assert!(*at - paused >= PAUSE - ROUNDING, "channel {mux} ran during the pause");
    }
    got.sort_by_key(|(mux, _, _)| *mux);
    let seen: Vec<(u16, Value)> = got.into_iter().map(|(mux, value, _)| (mux, value)).collect();
    assert_eq!(seen, vec![(1, Value::simple("OK")), (2, Value::bulk("v")), (2, Value::simple("PONG"))]);
}

#[test]
fn client_unpause_releases_a_held_channel_at_once() {
    let kvik = start_kvik();
    let mut s = Respb::open(&kvik);
    let paused = pause(kvik.port, b"WRITE", LONG_PAUSE_MS);
    s.send(&[b"INCR", b"n"], 1);
    s.send(&[b"ECHO", b"behind"], 1);
    assert_eq!(s.request(&[b"PING"], 2), Value::simple("PONG"));
    s.silent();
    // Unpaused from another channel of the same connection.
    let unpaused = Instant::now();
    s.send(&[b"CLIENT", b"UNPAUSE"], 3);
    let mut got: Vec<(u16, Value, Instant)> = (0..3).map(|_| s.next()).collect();
    assert!(paused.elapsed() < Duration::from_secs(30), "the held channel waited for the timeout");
    got.sort_by_key(|(mux, _, _)| *mux);
    assert!(got.iter().all(|(_, _, at)| *at >= unpaused));
    let seen: Vec<(u16, Value)> = got.into_iter().map(|(mux, value, _)| (mux, value)).collect();
    assert_eq!(seen, vec![(1, Value::Integer(1)), (1, Value::bulk("behind")), (3, Value::simple("OK"))]);
    // And from another connection.
    pause(kvik.port, b"WRITE", LONG_PAUSE_MS);
    s.send(&[b"INCR", b"n"], 1);
    s.silent();
    let mut admin = connect(kvik.port);
    assert_eq!(call(&mut admin, &[b"CLIENT", b"UNPAUSE"]), b"+OK\r\n");
    s.expect(1, Value::Integer(2));
}

#[test]
fn closing_or_killing_a_held_channel_discards_its_frames() {
    let kvik = start_kvik();
    let mut s = Respb::open(&kvik);
    let killed_id = client_id(&mut s, 4);
    pause(kvik.port, b"WRITE", LONG_PAUSE_MS);
    s.send(&[b"SET", b"closed", b"x"], 1);
    s.send(&[b"PING"], 1);
    s.send(&[b"SET", b"killed", b"x"], 4);
    s.send(&[b"PING"], 4);
    s.close_channel(2, 1);
    s.expect(2, Value::simple("OK"));
    let mut admin = connect(kvik.port);
    assert_eq!(call(&mut admin, &[b"CLIENT", b"KILL", b"ID", killed_id.to_string().as_bytes()]), b":1\r\n");
    // The connection goes on serving its other channels.
    assert_eq!(s.request(&[b"EXISTS", b"closed", b"killed"], 3), Value::Integer(0));
    assert_eq!(call(&mut admin, &[b"CLIENT", b"UNPAUSE"]), b"+OK\r\n");
    s.silent();
    assert_eq!(s.request(&[b"EXISTS", b"closed", b"killed"], 3), Value::Integer(0), "the held SETs never ran");
    // Both ids start again as fresh channels.
    assert_eq!(s.request(&[b"PING"], 1), Value::simple("PONG"));
    assert_ne!(client_id(&mut s, 4), killed_id);
}

#[test]
fn a_command_queued_behind_a_blocked_one_is_held_when_its_turn_comes() {
    let kvik = start_kvik();
    let mut s = Respb::open(&kvik);
    let sent = Instant::now();
    s.send(&[b"BRPOP", b"nothing", b"1"], 1);
    s.send(&[b"SET", b"k", b"v"], 1);
    s.send(&[b"GET", b"k"], 1);
    assert_eq!(s.request(&[b"PING"], 2), Value::simple("PONG"));
    pause(kvik.port, b"WRITE", LONG_PAUSE_MS);
    assert!(sent.elapsed() < Duration::from_millis(900), "too slow to pause before the BRPOP's timeout");
    // The BRPOP times out during the pause; the SET behind it is held, and the GET behind that.
    s.expect(1, Value::Null);
    s.silent();
    assert_eq!(s.request(&[b"EXISTS", b"k"], 2), Value::Integer(0));
    let mut admin = connect(kvik.port);
    assert_eq!(call(&mut admin, &[b"CLIENT", b"UNPAUSE"]), b"+OK\r\n");
    s.expect(1, Value::simple("OK"));
    s.expect(1, Value::bulk("v"));
}
