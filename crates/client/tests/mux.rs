//! Mux channels on one RESPB connection to kvik-server.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{start_kvik, ServerOptions};
use kvik_client::{Channel, Connection, Error, MuxConnection, Protocol, Value};

const CHANNELS: usize = 100;
const TASKS: usize = 8;
const KEYS: usize = 20;

fn bulk(s: &str) -> Value {
    Value::bulk(s)
}

/// Closes sent on drop are acknowledged asynchronously: wait (boundedly).
async fn wait_for_open_channels(mux: &MuxConnection, n: usize) {
    for _ in 0..400 {
        if mux.open_channels() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(mux.open_channels(), n);
}

/// The work one channel does in its own database, interleaved with the
/// other channels of its task (and of the other tasks) on one connection.
async fn use_channel(ch: &Channel, db: usize, round: usize) {
    let key = format!("key-{round}");
    let value = format!("db{db}-{round}");
    assert_eq!(ch.command(&["SET", &key, &value]).await.unwrap(), Value::simple("OK"));
    assert_eq!(ch.command(&["INCR", "count"]).await.unwrap(), Value::Integer(round as i64 + 1));
    assert_eq!(ch.command(&["GET", &key]).await.unwrap(), bulk(&value));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_channels_from_eight_tasks_each_in_its_own_database() {
    let kvik = start_kvik(&["--databases", "128"]);
    let mux = MuxConnection::connect(&kvik.opts(Protocol::Respb)).await.unwrap();
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let mux = mux.clone();
        tasks.push(tokio::spawn(async move {
            // Channel i uses database i + 1 (database 0 stays empty).
            let mut mine = Vec::new();
            for i in (t..CHANNELS).step_by(TASKS) {
                let ch = mux.channel().await.unwrap();
                assert_eq!(ch.command(&["SELECT", &(i + 1).to_string()]).await.unwrap(), Value::simple("OK"));
                mine.push((i + 1, ch));
            }
            for round in 0..KEYS {
                for (db, ch) in &mine {
                    use_channel(ch, *db, round).await;
                }
            }
            // Each channel sees exactly its own keys.
            for (db, ch) in &mine {
                assert_eq!(ch.command(&["DBSIZE"]).await.unwrap(), Value::Integer(KEYS as i64 + 1));
                let first = ch.command(&["GET", "key-0"]).await.unwrap();
                assert_eq!(first, bulk(&format!("db{db}-0")));
                assert_eq!(ch.command(&["GET", "count"]).await.unwrap(), bulk(&KEYS.to_string()));
            }
            mine.len()
        }));
    }
    let mut opened = 0;
    for t in tasks {
        opened += t.await.unwrap();
    }
    assert_eq!(opened, CHANNELS);
    // Every channel was dropped (and so closed) when its task ended.
    wait_for_open_channels(&mux, 0).await;

    // Seen from outside: database 0 is empty, each other one holds its channel's keys.
    let mut check = Connection::connect(&kvik.opts(Protocol::Resp2)).await.unwrap();
    assert_eq!(check.command(&["DBSIZE"]).await.unwrap(), Value::Integer(0));
    for db in [1, 50, CHANNELS] {
        check.command(&["SELECT", &db.to_string()]).await.unwrap();
        assert_eq!(check.command(&["DBSIZE"]).await.unwrap(), Value::Integer(KEYS as i64 + 1));
        assert_eq!(check.command(&["GET", "key-7"]).await.unwrap(), bulk(&format!("db{db}-7")));
    }
}

#[tokio::test]
async fn mux_close_resets_the_channel_on_the_server() {
    let kvik = start_kvik(&[]);
    let mux = MuxConnection::connect(&kvik.opts(Protocol::Respb)).await.unwrap();
    let mut outside = Connection::connect(&kvik.opts(Protocol::Resp2)).await.unwrap();
    let numsub = async |c: &mut Connection| c.command(&["PUBSUB", "NUMSUB", "news"]).await.unwrap();
    let ch = mux.channel().await.unwrap();
    assert_eq!(ch.command(&["SELECT", "5"]).await.unwrap(), Value::simple("OK"));
    assert!(matches!(ch.command(&["SUBSCRIBE", "news"]).await.unwrap(), Value::Push(_)));
    assert_eq!(numsub(&mut outside).await, Value::Array(vec![bulk("news"), Value::Integer(1)]));
    assert_eq!(mux.open_channels(), 1);
    ch.close().await.unwrap();
    assert_eq!(mux.open_channels(), 0);
    // The server dropped the channel's subscription with it.
    assert_eq!(numsub(&mut outside).await, Value::Array(vec![bulk("news"), Value::Integer(0)]));

    let fresh = mux.channel().await.unwrap();
    assert_eq!(fresh.command(&["SELECT", "5"]).await.unwrap(), Value::simple("OK"));
    // A new channel starts in database 0, outside any transaction.
    let other = mux.channel().await.unwrap();
    assert_eq!(other.command(&["SET", "y", "0"]).await.unwrap(), Value::simple("OK"));
    assert_eq!(fresh.command(&["EXISTS", "y"]).await.unwrap(), Value::Integer(0));

    // Dropping a channel closes it too.
    drop(other);
    wait_for_open_channels(&mux, 1).await;
}

#[tokio::test]
async fn a_timed_out_request_leaves_its_channel_in_step() {
    let kvik = start_kvik(&["--enable-debug-command", "yes"]);
    let opts = kvik.opts(Protocol::Respb).with_request_timeout(Duration::from_millis(200));
    let mux = MuxConnection::connect(&opts).await.unwrap();
    let slow = mux.channel().await.unwrap();
    let other = mux.channel().await.unwrap();
    let err = slow.command(&["DEBUG", "SLEEP", "0.6"]).await.unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err}");
    // The sleep's late OK is matched to the timed-out request, not to this ECHO.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(slow.command(&["ECHO", "after"]).await.unwrap(), bulk("after"));
    assert_eq!(other.command(&["ECHO", "other"]).await.unwrap(), bulk("other"));
    assert!(!mux.is_closed());
}

#[tokio::test]
async fn channels_authenticate_and_select_as_the_options_say() {
    let kvik = start_kvik(&["--requirepass", "pw"]);
    let bare = MuxConnection::connect(&kvik.opts(Protocol::Respb)).await.unwrap();
    let ch = bare.channel().await.unwrap();
    assert!(matches!(ch.command(&["GET", "a"]).await.unwrap(), Value::Error(e) if e.starts_with(b"NOAUTH")));

    let opts = kvik.opts(Protocol::Respb).with_auth(None, "pw").with_db(4);
    let mux = MuxConnection::connect(&opts).await.unwrap();
    let a = mux.channel().await.unwrap();
    let b = mux.channel().await.unwrap();
    assert_eq!(a.command(&["SET", "shared", "1"]).await.unwrap(), Value::simple("OK"));
    assert_eq!(b.command(&["GET", "shared"]).await.unwrap(), bulk("1"));
    assert_eq!(b.command(&["SELECT", "0"]).await.unwrap(), Value::simple("OK"));
    assert_eq!(b.command(&["GET", "shared"]).await.unwrap(), Value::Null);

    let wrong = kvik.opts(Protocol::Respb).with_auth(None, "nope");
    let mux = MuxConnection::connect(&wrong).await.unwrap();
    assert!(matches!(mux.channel().await, Err(Error::Setup { step: "AUTH", .. })));
}

#[tokio::test]
async fn subscription_confirmations_arrive_as_pushes() {
    let kvik = start_kvik(&[]);
    let mux = MuxConnection::connect(&kvik.opts(Protocol::Respb)).await.unwrap();
    let mut sub = mux.channel().await.unwrap();
    let confirm = |kind: &str, chan: &str, n: i64| Value::Push(vec![bulk(kind), bulk(chan), Value::Integer(n)]);
    assert_eq!(sub.command(&["SUBSCRIBE", "a", "b"]).await.unwrap(), confirm("subscribe", "a", 1));
    assert_eq!(sub.next_push().await.unwrap(), confirm("subscribe", "a", 1));
    assert_eq!(sub.next_push().await.unwrap(), confirm("subscribe", "b", 2));
    assert_eq!(sub.command(&["UNSUBSCRIBE", "a"]).await.unwrap(), confirm("unsubscribe", "a", 1));
    assert_eq!(sub.next_push().await.unwrap(), confirm("unsubscribe", "a", 1));
    // An error reply to a subscribe command is an ordinary reply.
    let err = sub.command(&["SUBSCRIBE"]).await.unwrap();
    assert!(err.is_error(), "{err:?}");
    // Another channel sees none of it.
    let mut other = mux.channel().await.unwrap();
    assert_eq!(other.command(&["PING"]).await.unwrap(), Value::simple("PONG"));
    assert!(other.try_next_push().is_none());
}

#[tokio::test]
async fn the_server_going_away_fails_pending_and_new_requests() {
    let mut kvik = start_kvik(&["--enable-debug-command", "yes"]);
    let mux = MuxConnection::connect(&kvik.opts(Protocol::Respb)).await.unwrap();
    let ch = Arc::new(mux.channel().await.unwrap());
    let pending = {
        let ch = ch.clone();
        tokio::spawn(async move { ch.command(&["DEBUG", "SLEEP", "5"]).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    kvik.stop();
    let err = pending.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::ConnectionLost(_)), "{err}");
    assert!(matches!(ch.command(&["PING"]).await, Err(Error::ConnectionLost(_))));
    assert!(mux.is_closed());
    assert!(matches!(mux.channel().await, Err(Error::ConnectionLost(_))));
}

#[tokio::test]
async fn channel_pipelines_of_ten_thousand_commands() {
    let kvik = start_kvik(&[]);
    let mux = MuxConnection::connect(&kvik.opts(Protocol::Respb)).await.unwrap();
    let a = mux.channel().await.unwrap();
    let b = mux.channel().await.unwrap();
    b.command(&["SELECT", "1"]).await.unwrap();
    let incrs: Vec<[&str; 2]> = vec![["INCR", "n"]; 10_000];
    let (ra, rb) = tokio::join!(a.pipeline(&incrs), b.pipeline(&incrs));
    for replies in [ra.unwrap(), rb.unwrap()] {
        assert_eq!(replies.len(), 10_000);
        assert!(replies.iter().enumerate().all(|(i, v)| *v == Value::Integer(i as i64 + 1)));
    }
}
