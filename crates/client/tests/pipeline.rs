//! Pipelines: 10,000 commands in one write, replies read back in order.

mod common;

use common::{start_kvik, start_redis, ServerOptions};
use kvik_client::Protocol::{Resp2, Resp3, Respb};
use kvik_client::{Connection, Options, Pipeline, Value};

const N: usize = 10_000;

/// Alternate SET key:i, INCR counter and GET key:i, so a reply out of place
/// would show as a wrong value.
async fn ten_thousand(opts: &Options) {
    let mut c = Connection::connect(opts).await.unwrap();
    let mut p = Pipeline::new(opts.protocol);
    for i in 0..N {
        let key = format!("key:{i}");
        match i % 3 {
            0 => p.add(&["SET", &key, &format!("value-{i}")]),
            1 => p.add(&["INCR", "counter"]),
            _ => p.add(&["GET", &format!("key:{}", i - 2)]),
        };
    }
    assert_eq!(p.len(), N);
    let mut replies = Vec::new();
    c.pipeline(&p, &mut replies).await.unwrap();
    assert_eq!(replies.len(), N);
    let mut incrs = 0;
    for (i, reply) in replies.iter().enumerate() {
        let expected = match i % 3 {
            0 => Value::simple("OK"),
            1 => {
                incrs += 1;
                Value::Integer(incrs)
            }
            _ => Value::bulk(format!("value-{}", i - 2)),
        };
        assert_eq!(reply, &expected, "{:?} reply {i}", opts.protocol);
    }

    // The same pipeline object, cleared, is reused; replies only count.
    p.clear();
    for i in 0..N {
        if i % 100 == 0 {
            p.add(&["INCR", "key:0"]);
        } else {
            p.add(&["EXISTS", "counter"]);
        }
    }
    assert_eq!(c.pipeline_count_errors(&p).await.unwrap(), N / 100, "{:?}", opts.protocol);
    assert_eq!(c.command(&["GET", "counter"]).await.unwrap(), Value::bulk(incrs.to_string()));
    c.command(&["FLUSHALL"]).await.unwrap();
}

#[tokio::test]
async fn kvik_pipelines_in_every_protocol() {
    let kvik = start_kvik(&[]);
    for protocol in [Resp2, Resp3, Respb] {
        ten_thousand(&kvik.opts(protocol)).await;
    }
}

#[tokio::test]
async fn redis_pipelines_in_resp2_and_resp3() {
    let Some(redis) = start_redis(&[]) else { return };
    for protocol in [Resp2, Resp3] {
        ten_thousand(&redis.opts(protocol)).await;
    }
}

#[tokio::test]
async fn a_pipeline_for_another_protocol_is_refused() {
    let kvik = start_kvik(&[]);
    let mut c = Connection::connect(&kvik.opts(Resp2)).await.unwrap();
    let mut p = Pipeline::new(Respb);
    p.add(&["PING"]);
    let mut replies = Vec::new();
    assert!(matches!(c.pipeline(&p, &mut replies).await, Err(kvik_client::Error::Usage(_))));
    // Refusing it did not disturb the connection.
    assert_eq!(c.command(&["PING"]).await.unwrap(), Value::simple("PONG"));
}
