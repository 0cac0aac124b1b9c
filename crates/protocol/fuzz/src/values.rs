//! Comparing reply values across a write-then-read round trip.
//!
//! `Value` derives `PartialEq`, under which a NaN double never equals itself,
//! so a NaN that survives a round trip intact would still look like a loss.
//! [`same`] compares doubles by bit pattern instead (any NaN equals any NaN).
//!
//! Writers are also allowed a few documented, lossy conversions; [`canonical`]
//! applies them to the value that was written so the value read back can be
//! compared with [`same`].

use kvik_protocol::Value;

/// Structural equality in which doubles match when their bits do or both are NaN.
pub fn same(a: &Value, b: &Value) -> bool {
    use Value::*;
    let all = |x: &[Value], y: &[Value]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q));
    let pairs = |x: &[(Value, Value)], y: &[(Value, Value)]| {
        x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(&p.0, &q.0) && same(&p.1, &q.1))
    };
    match (a, b) {
        (Double(x), Double(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        (Array(x), Array(y)) | (Set(x), Set(y)) | (Push(x), Push(y)) => all(x, y),
        (Map(x), Map(y)) => pairs(x, y),
        (Attribute { attrs: ax, value: vx }, Attribute { attrs: ay, value: vy }) => pairs(ax, ay) && same(vx, vy),
        _ => a == b,
    }
}

/// What a RESP3 text writer makes of `v`.
///
/// Text lines cannot hold CR or LF, so the writer turns them into spaces in
/// status and error replies (a `!` blob error read back becomes a line error);
/// RESP3 has a single null, so `NullArray` comes back as `Null`.
pub fn canonical_resp3(v: &Value) -> Value {
    map_value(v, &|leaf| match leaf {
        Value::Simple(s) => Some(Value::Simple(unbreak(s))),
        Value::Error(s) => Some(Value::Error(unbreak(trim_breaks(s)))),
        Value::NullArray => Some(Value::Null),
        _ => None,
    })
}

/// What the RESPB reply writer makes of `v` when the whole reply fits its
/// binary form: big numbers and verbatim strings travel as bulk strings, and
/// the one binary null stands for both RESP2 nulls.
pub fn canonical_respb_binary(v: &Value) -> Value {
    map_value(v, &|leaf| match leaf {
        Value::BigNumber(d) => Some(Value::Bulk(d.clone())),
        Value::Verbatim { text, .. } => Some(Value::Bulk(text.clone())),
        Value::NullArray => Some(Value::Null),
        _ => None,
    })
}

/// Rebuild `v`, replacing every node for which `leaf` returns a value.
fn map_value(v: &Value, leaf: &dyn Fn(&Value) -> Option<Value>) -> Value {
    if let Some(replaced) = leaf(v) {
        return replaced;
    }
    let list = |items: &[Value]| items.iter().map(|x| map_value(x, leaf)).collect::<Vec<_>>();
    let pairs = |items: &[(Value, Value)]| {
        items.iter().map(|(k, x)| (map_value(k, leaf), map_value(x, leaf))).collect::<Vec<_>>()
    };
    match v {
        Value::Array(items) => Value::Array(list(items)),
        Value::Set(items) => Value::Set(list(items)),
        Value::Push(items) => Value::Push(list(items)),
        Value::Map(items) => Value::Map(pairs(items)),
        Value::Attribute { attrs, value } => {
            Value::Attribute { attrs: pairs(attrs), value: Box::new(map_value(value, leaf)) }
        }
        other => other.clone(),
    }
}

/// `s` without the line breaks at either end, which the reply writer trims
/// off an error before turning the ones inside into spaces, as Redis does.
fn trim_breaks(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|b| !matches!(b, b'\r' | b'\n')).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !matches!(b, b'\r' | b'\n')).map_or(start, |i| i + 1);
    &s[start..end]
}

fn unbreak(s: &[u8]) -> Vec<u8> {
    s.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_matches_nan_but_signed_zeros_differ() {
        assert!(same(&Value::Double(f64::NAN), &Value::Double(-f64::NAN)));
        assert!(!same(&Value::Double(0.0), &Value::Double(-0.0)));
        assert!(same(&Value::Array(vec![Value::Double(f64::NAN)]), &Value::Array(vec![Value::Double(f64::NAN)])));
    }

    #[test]
    fn resp3_canonical_form_removes_line_breaks_and_array_nulls() {
        let v = Value::Map(vec![(Value::simple("a\r\nb"), Value::NullArray)]);
        assert_eq!(canonical_resp3(&v), Value::Map(vec![(Value::simple("a  b"), Value::Null)]));
    }
}
