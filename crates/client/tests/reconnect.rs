//! The reconnecting [`Client`] across server restarts.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{start_kvik, ServerOptions};
use kvik_client::{Backoff, Client, Connection, Error, Protocol, Value};

fn patient() -> Backoff {
    Backoff { initial: Duration::from_millis(20), max: Duration::from_millis(200), attempts: 50 }
}

#[tokio::test]
async fn reconnects_after_a_restart_and_reapplies_setup() {
    let mut kvik = start_kvik(&[]);
    for protocol in [Protocol::Resp2, Protocol::Resp3, Protocol::Respb] {
        let client = Client::connect(kvik.opts(protocol).with_db(2)).await.unwrap().with_backoff(patient());
        assert_eq!(client.command(&["SET", "before", "1"]).await.unwrap(), Value::simple("OK"));
        assert_eq!(client.reconnects(), 0);

        kvik.restart();
        // The first request finds the old connection dead: it fails, clearly.
        let err = client.command(&["GET", "before"]).await.unwrap_err();
        assert!(err.is_connection_error(), "{protocol:?}: {err}");
        // The next one goes to a new connection, in database 2 again.
        assert_eq!(client.command(&["SET", "after", "2"]).await.unwrap(), Value::simple("OK"));
        assert_eq!(client.reconnects(), 1);
        let mut check = Connection::connect(&kvik.opts(Protocol::Resp2).with_db(2)).await.unwrap();
        assert_eq!(check.command(&["GET", "after"]).await.unwrap(), Value::bulk("2"));
        // The restarted server kept nothing (no persistence).
        assert_eq!(check.command(&["EXISTS", "before"]).await.unwrap(), Value::Integer(0));
    }
}

#[tokio::test]
async fn a_pending_request_fails_and_the_queued_one_reaches_the_new_server() {
    let mut kvik = start_kvik(&["--enable-debug-command", "yes"]);
    let client = Arc::new(Client::connect(kvik.opts(Protocol::Resp2)).await.unwrap().with_backoff(patient()));
    let pending = {
        let client = client.clone();
        tokio::spawn(async move { client.command(&["DEBUG", "SLEEP", "5"]).await })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    let queued = {
        let client = client.clone();
        tokio::spawn(async move { client.command(&["INCR", "fresh"]).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    kvik.restart();
    let err = pending.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::ConnectionLost(_) | Error::Io(_)), "{err}");
    // The queued INCR ran on the restarted (empty) server.
    assert_eq!(queued.await.unwrap().unwrap(), Value::Integer(1));
    assert_eq!(client.reconnects(), 1);
}

#[tokio::test]
async fn waits_with_backoff_while_the_server_is_down() {
    let mut kvik = start_kvik(&[]);
    let client = Client::connect(kvik.opts(Protocol::Resp3)).await.unwrap().with_backoff(patient());
    kvik.stop();
    assert!(client.command(&["PING"]).await.unwrap_err().is_connection_error());
    // Bring the server back while the client is retrying.
    let restarter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        kvik.restart();
        kvik
    });
    let started = std::time::Instant::now();
    assert_eq!(client.command(&["PING"]).await.unwrap(), Value::simple("PONG"));
    assert!(started.elapsed() >= Duration::from_millis(200), "it waited for the server");
    let _kvik = restarter.join().unwrap();
}

#[tokio::test]
async fn gives_up_when_the_server_stays_down() {
    let mut kvik = start_kvik(&[]);
    let backoff = Backoff { initial: Duration::from_millis(5), max: Duration::from_millis(10), attempts: 4 };
    let client = Client::connect(kvik.opts(Protocol::Resp2)).await.unwrap().with_backoff(backoff);
    kvik.stop();
    let _ = client.command(&["PING"]).await;
    match client.command(&["PING"]).await {
        Err(Error::ReconnectFailed { attempts: 4, last }) => assert!(matches!(*last, Error::Io(_)), "{last}"),
        other => panic!("expected ReconnectFailed, got {other:?}"),
    }
}

#[tokio::test]
async fn request_timeouts_are_survived_by_reconnecting() {
    let kvik = start_kvik(&["--enable-debug-command", "yes"]);
    let opts = kvik.opts(Protocol::Respb).with_request_timeout(Duration::from_millis(150));
    let client = Client::connect(opts).await.unwrap();
    assert!(matches!(client.command(&["DEBUG", "SLEEP", "0.4"]).await, Err(Error::Timeout(_))));
    assert_eq!(client.command(&["ECHO", "next"]).await.unwrap(), Value::bulk("next"));
    assert_eq!(client.reconnects(), 1);
}
