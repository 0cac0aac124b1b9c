//! Canonical decimal text for the float64 fields of RESPB requests.
//!
//! A RESPB decoder turns a binary float64 back into the text a RESP client
//! would have sent, and an encoder may only use a float64 field when the
//! client's text is exactly that canonical text (otherwise the command goes
//! as passthrough, so no argument ever changes). The format is the shortest
//! decimal that reads back as the same float64, laid out as ECMAScript's
//! `Number::toString` does, with these differences: infinities are `+inf` and
//! `-inf` (the spellings Redis users write), negative zero is `-0`, and NaN
//! has no text (it is never a valid argument).

use std::fmt::Write as _;

/// Longest canonical text: sign, 17 digits, point, `e-324`.
const MAX_TEXT: usize = 32;

/// A fixed-capacity byte sink for `core::fmt` output, so formatting needs no heap.
struct StackBuf {
    bytes: [u8; MAX_TEXT],
    len: usize,
}

impl std::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let dst = self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Append the canonical text of `x` to `out`. Returns false (writing nothing) for NaN.
pub fn write_canonical_f64(out: &mut Vec<u8>, x: f64) -> bool {
    if x.is_nan() {
        return false;
    }
    if x.is_infinite() {
        out.extend_from_slice(if x > 0.0 { b"+inf" } else { b"-inf" });
        return true;
    }
    if x == 0.0 {
        out.extend_from_slice(if x.is_sign_negative() { b"-0" } else { b"0" });
        return true;
    }
    // Rust's `{:e}` prints the shortest round-tripping digits: "-1.2345e-7".
    let mut sci = StackBuf { bytes: [0; MAX_TEXT], len: 0 };
    if write!(sci, "{:e}", x).is_err() {
        return false;
    }
    let text = &sci.bytes[..sci.len];
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let Some(e_at) = text.iter().position(|&b| b == b'e') else {
        return false;
    };
    let mut digits = [0u8; 20];
    let mut k = 0;
    for &b in &text[..e_at] {
        if b.is_ascii_digit() && k < digits.len() {
            digits[k] = b;
            k += 1;
        }
    }
    let Some(exp) = parse_small_int(&text[e_at + 1..]) else {
        return false;
    };
    if negative {
        out.push(b'-');
    }
    layout_digits(out, &digits[..k], exp + 1);
    true
}

/// Lay out significant `digits` with decimal exponent `n` (value = 0.d1d2… × 10^n).
fn layout_digits(out: &mut Vec<u8>, digits: &[u8], n: i32) {
    let k = digits.len() as i32;
    if k <= n && n <= 21 {
        out.extend_from_slice(digits);
        out.resize(out.len() + (n - k) as usize, b'0');
    } else if 0 < n && n <= 21 {
        out.extend_from_slice(&digits[..n as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (-n) as usize, b'0');
        out.extend_from_slice(digits);
    } else {
        out.push(digits[0]);
        if k > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        let e = n - 1;
        out.push(if e < 0 { b'-' } else { b'+' });
        let mut tmp = [0u8; 4];
        let mut v = e.unsigned_abs();
        let mut i = tmp.len();
        loop {
            i -= 1;
            tmp[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        out.extend_from_slice(&tmp[i..]);
    }
}

fn parse_small_int(s: &[u8]) -> Option<i32> {
    let (neg, digits) = match s.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 4 {
        return None;
    }
    let mut v: i32 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i32::from(b - b'0');
    }
    Some(if neg { -v } else { v })
}

/// Parse `text` as a float64 if, and only if, `text` is the canonical text of that value.
///
/// This is the encoder's test for "the float64 field carries this argument losslessly".
pub fn parse_canonical_f64(text: &[u8]) -> Option<f64> {
    if text.is_empty() || text.len() > MAX_TEXT {
        return None;
    }
    let x = match text {
        b"+inf" => f64::INFINITY,
        b"-inf" => f64::NEG_INFINITY,
        _ => {
            // Only plain decimal syntax reaches str::parse: it would also accept
            // "inf", "NaN" and "infinity", which are not canonical.
            if !text.iter().all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e')) {
                return None;
            }
            std::str::from_utf8(text).ok()?.parse::<f64>().ok()?
        }
    };
    // Cold check: formatting into a small Vec keeps this simple; encoders are client-side.
    let mut v = Vec::with_capacity(MAX_TEXT);
    (write_canonical_f64(&mut v, x) && v.as_slice() == text).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(x: f64) -> String {
        let mut v = Vec::new();
        assert!(write_canonical_f64(&mut v, x));
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn formats_like_ecmascript_number_to_string() {
        assert_eq!(text(1.5), "1.5");
        assert_eq!(text(3.0), "3");
        assert_eq!(text(-2.0), "-2");
        assert_eq!(text(0.1), "0.1");
        assert_eq!(text(1e21), "1e+21");
        assert_eq!(text(1e20), "100000000000000000000");
        assert_eq!(text(123456789012.5), "123456789012.5");
        assert_eq!(text(0.000001), "0.000001");
        assert_eq!(text(1e-7), "1e-7");
        assert_eq!(text(1.25e-7), "1.25e-7");
        assert_eq!(text(f64::MAX), "1.7976931348623157e+308");
        assert_eq!(text(5e-324), "5e-324");
        assert_eq!(text(f64::INFINITY), "+inf");
        assert_eq!(text(f64::NEG_INFINITY), "-inf");
        assert_eq!(text(-0.0), "-0");
        assert_eq!(text(0.0), "0");
        assert!(!write_canonical_f64(&mut Vec::new(), f64::NAN));
    }

    #[test]
    fn only_canonical_text_is_accepted() {
        assert_eq!(parse_canonical_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_canonical_f64(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_canonical_f64(b"-inf"), Some(f64::NEG_INFINITY));
        for bad in [
            &b"1.50"[..],
            b"01",
            b"+1",
            b"inf",
            b"1e3",
            b"0.1000000000000000055511151231257827",
            b"nan",
            b"",
            b" 1",
            b"1.",
            b".5",
            b"1E+21",
        ] {
            assert_eq!(parse_canonical_f64(bad), None, "{:?}", std::str::from_utf8(bad));
        }
        assert_eq!(parse_canonical_f64(b"1e+21"), Some(1e21));
    }

    proptest::proptest! {
        #[test]
        fn canonical_text_round_trips(bits in proptest::prelude::any::<u64>()) {
            let x = f64::from_bits(bits);
            let mut v = Vec::new();
            if write_canonical_f64(&mut v, x) {
                let back = parse_canonical_f64(&v);
                proptest::prop_assert_eq!(back.map(f64::to_bits), Some(x.to_bits()));
            } else {
                proptest::prop_assert!(x.is_nan());
            }
        }
    }
}
