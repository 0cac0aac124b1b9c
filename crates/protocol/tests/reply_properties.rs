//! Property tests across reply encodings: RESPB round trips for random RESP3
//! values, and RESP2 output equal to a model of Redis's down-conversions.

use kvik_protocol::number::write_double_g17;
use kvik_protocol::resp::reply_parser::{parse_reply, ReplyLimits};
use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::respb::reply::decode_reply;
use kvik_protocol::respb::RespbReplyWriter;
use kvik_protocol::Value;
use proptest::prelude::*;

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![proptest::collection::vec(any::<u8>(), 0..12), Just(b"OK".to_vec()), Just(vec![b'x'; 7_000]),]
}

/// Status and error text: no CR or LF (writers blank them, which the model would have to copy).
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>().prop_filter("no CR/LF", |b| *b != b'\r' && *b != b'\n'), 0..12),
        Just(vec![b's'; 65_536]),
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        line().prop_map(Value::Simple),
        line().prop_map(Value::Error),
        any::<i64>().prop_map(Value::Integer),
        bytes().prop_map(Value::Bulk),
        Just(Value::Null),
        Just(Value::NullArray),
        any::<f64>().prop_filter("NaN never equals itself", |d| !d.is_nan()).prop_map(Value::Double),
        any::<bool>().prop_map(Value::Boolean),
        "[1-9][0-9]{0,40}".prop_map(|s| Value::BigNumber(s.into_bytes())),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(|t| Value::Verbatim { format: *b"txt", text: t }),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(5, 64, 8, |inner| {
        let items = proptest::collection::vec(inner.clone(), 0..6);
        let pairs = proptest::collection::vec((inner.clone(), inner.clone()), 0..4);
        prop_oneof![
            items.clone().prop_map(Value::Array),
            items.clone().prop_map(Value::Set),
            items.prop_map(Value::Push),
            pairs.clone().prop_map(Value::Map),
            (pairs, inner.clone()).prop_map(|(attrs, v)| Value::Attribute { attrs, value: Box::new(v) }),
            (any::<i64>(), inner)
                .prop_map(|(n, v)| Value::Array(vec![v, Value::Array(vec![Value::Integer(n); 70_000])])),
        ]
    })
}

/// What a RESPB reader gets back: one null, big numbers and verbatim strings as
/// bulk strings; attributes (which force a passthrough frame) come back as they were.
fn respb_model(v: &Value) -> Value {
    let inner = |items: &[Value]| items.iter().map(respb_model).collect::<Vec<_>>();
    match v {
        Value::NullArray => Value::Null,
        Value::BigNumber(d) => Value::Bulk(d.clone()),
        Value::Verbatim { text, .. } => Value::Bulk(text.clone()),
        Value::Array(items) => Value::Array(inner(items)),
        Value::Set(items) => Value::Set(inner(items)),
        Value::Push(items) => Value::Push(inner(items)),
        Value::Map(p) => Value::Map(p.iter().map(|(k, v)| (respb_model(k), respb_model(v))).collect()),
        Value::Attribute { attrs, value } => Value::Attribute {
            attrs: attrs.iter().map(|(k, v)| (respb_model(k), respb_model(v))).collect(),
            value: Box::new(respb_model(value)),
        },
        other => other.clone(),
    }
}

/// RESP3 has a single null.
fn resp3_model(v: &Value) -> Value {
    let inner = |items: &[Value]| items.iter().map(resp3_model).collect::<Vec<_>>();
    match v {
        Value::NullArray => Value::Null,
        Value::Array(items) => Value::Array(inner(items)),
        Value::Set(items) => Value::Set(inner(items)),
        Value::Push(items) => Value::Push(inner(items)),
        Value::Map(p) => Value::Map(p.iter().map(|(k, v)| (resp3_model(k), resp3_model(v))).collect()),
        Value::Attribute { attrs, value } => Value::Attribute {
            attrs: attrs.iter().map(|(k, v)| (resp3_model(k), resp3_model(v))).collect(),
            value: Box::new(resp3_model(value)),
        },
        other => other.clone(),
    }
}

/// Redis's RESP2 form of a RESP3 value.
fn resp2_model(v: &Value) -> Value {
    let list = |items: &[Value]| Value::Array(items.iter().map(resp2_model).collect());
    match v {
        Value::Map(p) => Value::Array(p.iter().flat_map(|(k, v)| [resp2_model(k), resp2_model(v)]).collect()),
        Value::Array(items) | Value::Set(items) | Value::Push(items) => list(items),
        Value::Double(d) => {
            let mut t = Vec::new();
            write_double_g17(&mut t, *d);
            Value::Bulk(t)
        }
        Value::Boolean(b) => Value::Integer(i64::from(*b)),
        Value::BigNumber(d) => Value::Bulk(d.clone()),
        Value::Verbatim { text, .. } => Value::Bulk(text.clone()),
        Value::Attribute { value, .. } => resp2_model(value),
        other => other.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn respb_replies_round_trip(v in value(), mux in any::<u16>()) {
        let mut out = Vec::new();
        let mut w = RespbReplyWriter::new(&mut out, mux);
        v.write_to(&mut w);
        prop_assert!(w.is_complete());
        let f = decode_reply(&out, &ReplyLimits::default()).unwrap().unwrap();
        prop_assert_eq!(f.consumed, out.len());
        prop_assert_eq!(f.mux, mux);
        prop_assert!(f.value == respb_model(&v), "RESPB reply differs from the model");
    }

    #[test]
    fn resp2_output_is_the_down_converted_value(v in value()) {
        let mut out = Vec::new();
        v.write_to(&mut RespWriter::new(&mut out, Protocol::Resp2));
        let (parsed, used) = parse_reply(&out, &ReplyLimits::default()).unwrap().unwrap();
        prop_assert_eq!(used, out.len());
        prop_assert!(parsed == resp2_model(&v), "RESP2 reply differs from the model");
    }

    #[test]
    fn resp3_output_round_trips(v in value()) {
        let mut out = Vec::new();
        v.write_to(&mut RespWriter::new(&mut out, Protocol::Resp3));
        let (parsed, used) = parse_reply(&out, &ReplyLimits::default()).unwrap().unwrap();
        prop_assert_eq!(used, out.len());
        prop_assert!(parsed == resp3_model(&v), "RESP3 reply differs from the model");
    }
}
