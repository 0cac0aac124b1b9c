//! Mux behaviour against a scripted in-process RESPB server, for what a real
//! server cannot be made to do on demand: refuse channels, send pushes at
//! chosen moments, never answer, or send garbage.

use std::time::Duration;

use kvik_protocol::respb::{Decoded, Frame, RespbDecoder, RespbLimits, RespbReplyWriter};
use kvik_protocol::{CommandArgs, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// What the fake server was sent.
#[derive(Debug)]
enum Got {
    Command { mux: u16, args: Vec<Vec<u8>> },
    Create { mux: u16, target: u16 },
    Close,
}

/// A reply: a value on a mux, or raw bytes.
enum Answer {
    On(u16, Value),
    Raw(Vec<u8>),
}

/// Start a one-connection RESPB server answering each frame with `script`.
async fn fake<F>(script: F) -> Options
where
    F: Fn(Got) -> Vec<Answer> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let Ok((mut s, _)) = listener.accept().await else { return };
        let mut hello = [0u8; 4];
        if s.read_exact(&mut hello).await.is_err() {
            return;
        }
        let _ = s.write_all(&[0xD3, 0xC1, 1, 0]).await;
        let mut decoder = RespbDecoder::new(RespbLimits {
            max_bulk_len: 1 << 20,
            max_passthrough_len: 1 << 21,
            unauthenticated: false,
        });
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut args = CommandArgs::new();
        loop {
            let Ok(n) = s.read(&mut chunk).await else { return };
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
            let mut out = Vec::new();
            while let Ok(Decoded::Frame { frame, consumed }) = decoder.decode(&buf, &mut args) {
                let got = match frame {
                    Frame::Command { mux } => Got::Command { mux, args: args.to_vec(&buf) },
                    Frame::MuxCreate { mux, target } => Got::Create { mux, target },
                    Frame::MuxClose { .. } => Got::Close,
                };
                for answer in script(got) {
                    match answer {
                        Answer::On(mux, v) => v.write_to(&mut RespbReplyWriter::new(&mut out, mux)),
                        Answer::Raw(bytes) => out.extend_from_slice(&bytes),
                    }
                }
                buf.drain(..consumed);
            }
            if s.write_all(&out).await.is_err() {
                return;
            }
        }
    });
    Options::tcp(addr.to_string())
}

fn ok() -> Value {
    Value::simple("OK")
}

/// Control frames get OK; commands get `answer(mux, args)`.
fn usual(answer: impl Fn(u16, &[Vec<u8>]) -> Vec<Answer> + Send + 'static) -> impl Fn(Got) -> Vec<Answer> + Send {
    move |got| match got {
        Got::Create { mux, .. } => vec![Answer::On(mux, ok())],
        Got::Close => vec![Answer::On(0, ok())],
        Got::Command { mux, args } => answer(mux, &args),
    }
}

#[tokio::test]
async fn pushes_reach_only_their_channel() {
    let opts = fake(usual(|mux, args| match args[0].as_slice() {
        b"SUBSCRIBE" => vec![
            Answer::On(mux, Value::Push(vec![Value::bulk("subscribe"), Value::bulk(&args[1]), Value::Integer(1)])),
            Answer::On(mux, Value::Push(vec![Value::bulk("message"), Value::bulk(&args[1]), Value::bulk("hi")])),
        ],
        _ => vec![Answer::On(mux, Value::simple("PONG"))],
    }))
    .await;
    let conn = MuxConnection::connect(&opts).await.unwrap();
    let mut sub = conn.channel().await.unwrap();
    let mut other = conn.channel().await.unwrap();
    let first = sub.command(&["SUBSCRIBE", "news"]).await.unwrap();
    assert!(matches!(&first, Value::Push(items) if items[0] == Value::bulk("subscribe")));
    assert_eq!(sub.command(&["PING"]).await.unwrap(), Value::simple("PONG"));
    assert_eq!(sub.next_push().await.unwrap(), first);
    let msg = sub.next_push().await.unwrap();
    assert_eq!(msg, Value::Push(vec![Value::bulk("message"), Value::bulk("news"), Value::bulk("hi")]));
    assert_eq!(other.command(&["PING"]).await.unwrap(), Value::simple("PONG"));
    assert!(other.try_next_push().is_none());
    assert_eq!(sub.dropped_pushes(), 0);
}

#[tokio::test]
async fn a_channel_refused_by_the_server_is_an_error_and_frees_its_id() {
    let opts = fake(|got| match got {
        // Refused "on that channel": the target's mux.
        Got::Create { target, .. } if target > 2 => {
            vec![Answer::On(target, Value::error("ERR max number of channels reached"))]
        }
        Got::Create { mux, .. } => vec![Answer::On(mux, ok())],
        Got::Command { mux, .. } => vec![Answer::On(mux, Value::simple("PONG"))],
        Got::Close => vec![Answer::On(0, ok())],
    })
    .await;
    let conn = MuxConnection::connect(&opts).await.unwrap();
    let a = conn.channel().await.unwrap();
    let _b = conn.channel().await.unwrap();
    let err = conn.channel().await.unwrap_err();
    assert!(matches!(&err, Error::Rejected(m) if m.contains("max number of channels")), "{err}");
    assert_eq!(a.command(&["PING"]).await.unwrap(), Value::simple("PONG"));
    // The refused id is released once its close is acknowledged.
    for _ in 0..100 {
        if conn.open_channels() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(conn.open_channels(), 2);
}

#[tokio::test]
async fn the_client_side_channel_limit_holds() {
    let opts = fake(usual(|mux, _| vec![Answer::On(mux, ok())])).await.with_max_channels(2);
    let conn = MuxConnection::connect(&opts).await.unwrap();
    let a = conn.channel().await.unwrap();
    let _b = conn.channel().await.unwrap();
    assert!(matches!(conn.channel().await, Err(Error::ChannelLimit { max: 2 })));
    a.close().await.unwrap();
    assert!(conn.channel().await.is_ok());
}

#[tokio::test]
async fn a_slow_channel_times_out_without_holding_back_others() {
    let opts = fake(usual(|mux, args| match args[0].as_slice() {
        b"BLPOP" => vec![],
        _ => vec![Answer::On(mux, Value::simple("PONG"))],
    }))
    .await
    .with_request_timeout(Duration::from_millis(100));
    let conn = MuxConnection::connect(&opts).await.unwrap();
    let slow = conn.channel().await.unwrap();
    let fast = conn.channel().await.unwrap();
    let started = std::time::Instant::now();
    let (blocked, pong) = tokio::join!(slow.command(&["BLPOP", "q", "0"]), fast.command(&["PING"]));
    assert!(matches!(blocked, Err(Error::Timeout(_))));
    assert_eq!(pong.unwrap(), Value::simple("PONG"));
    assert!(started.elapsed() < Duration::from_secs(2));
    // The connection survives a request timeout.
    assert_eq!(fast.command(&["PING"]).await.unwrap(), Value::simple("PONG"));
}

#[tokio::test]
async fn garbage_from_the_server_fails_pending_and_later_requests() {
    let opts = fake(usual(|mux, args| match args[0].as_slice() {
        b"GET" => vec![Answer::Raw(vec![0x12, 0x34, 0, 0, 0xFF])],
        _ => vec![Answer::On(mux, ok())],
    }))
    .await;
    let conn = MuxConnection::connect(&opts).await.unwrap();
    let ch = conn.channel().await.unwrap();
    let err = ch.command(&["GET", "k"]).await.unwrap_err();
    assert!(matches!(&err, Error::ConnectionLost(m) if m.contains("unknown type")), "{err}");
    assert!(matches!(ch.command(&["PING"]).await, Err(Error::ConnectionLost(_))));
    assert!(conn.is_closed());
    assert!(matches!(conn.channel().await, Err(Error::ConnectionLost(_))));
}

#[tokio::test]
async fn server_going_away_ends_push_streams_and_fails_requests() {
    let opts = fake(usual(|mux, args| match args[0].as_slice() {
        // An oversized frame header the client refuses: the connection ends.
        b"QUIT" => vec![Answer::Raw(vec![0xFF, 0xFF, 0, mux as u8, 0xFF, 0xFF, 0xFF, 0xFF])],
        _ => vec![Answer::On(mux, ok())],
    }))
    .await;
    let conn = MuxConnection::connect(&opts).await.unwrap();
    let mut ch = conn.channel().await.unwrap();
    assert!(ch.command(&["QUIT"]).await.unwrap_err().is_connection_error());
    assert!(ch.next_push().await.is_none());
}

#[tokio::test]
async fn many_tasks_share_a_channel_and_each_gets_its_own_reply() {
    let opts = fake(usual(|mux, args| vec![Answer::On(mux, Value::Bulk(args[1].clone()))])).await;
    let conn = MuxConnection::connect(&opts).await.unwrap();
    let ch = Arc::new(conn.channel().await.unwrap());
    let mut tasks = Vec::new();
    for t in 0..8 {
        let ch = ch.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..200 {
                let word = format!("{t}-{i}");
                assert_eq!(ch.command(&["ECHO", &word]).await.unwrap(), Value::bulk(&word));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test]
async fn a_channel_pipeline_gets_its_replies_in_order() {
    let opts = fake(usual(|mux, args| vec![Answer::On(mux, Value::Bulk(args[1].clone()))])).await;
    let conn = MuxConnection::connect(&opts).await.unwrap();
    let a = conn.channel().await.unwrap();
    let b = conn.channel().await.unwrap();
    let commands: Vec<Vec<String>> = (0..500).map(|i| vec!["ECHO".to_string(), format!("a{i}")]).collect();
    let (ra, rb) = tokio::join!(a.pipeline(&commands), b.command(&["ECHO", "b"]));
    let ra = ra.unwrap();
    assert_eq!(ra.len(), 500);
    assert!(ra.iter().enumerate().all(|(i, v)| *v == Value::bulk(format!("a{i}"))));
    assert_eq!(rb.unwrap(), Value::bulk("b"));
    assert!(matches!(a.pipeline(&[["SUBSCRIBE", "x"]]).await, Err(Error::Usage(_))));
}
