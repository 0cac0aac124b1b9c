//! Doubles as Redis reads them: glibc `strtod` and the checks around it.
//!
//! Sorted set scores, `ZRANGEBYSCORE` bounds, geo coordinates and radii are C
//! doubles parsed with `strtod`, which accepts more than Rust's `f64::from_str`
//! (hexadecimal significands, `infinity`, `nan(...)`, leading white space) and
//! reports overflow and underflow through `errno`. Redis then applies its own
//! rules on top, which differ between call sites, so this module offers the
//! parse itself ([`strtod`]) and the two rule sets commands use
//! ([`parse_score`] for values, [`parse_range_bound`] for range ends).

/// Longest text Redis reads as a double argument (`MAX_LONG_DOUBLE_CHARS`).
pub const MAX_CHARS: usize = 5 * 1024;

/// What `strtod` makes of a whole text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Parsed {
    /// The value (NaN for `nan`).
    pub value: f64,
    /// `errno` would be `ERANGE`: the value overflowed to an infinity or a
    /// non-zero text underflowed to zero or to an inexact subnormal.
    pub range_error: bool,
    /// The text started with white space (which `strtod` skips).
    pub leading_space: bool,
}

/// Parse all of `text` as glibc's `strtod` would; `None` when `strtod` would
/// stop before the end (including at a NUL byte) or find no number at all.
pub fn strtod(text: &[u8]) -> Option<Parsed> {
    let start = text.iter().position(|&b| !is_c_space(b))?;
    let leading_space = start > 0;
    let s = &text[start..];
    let (negative, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (magnitude, range_error) = if is_infinity(body) {
        (f64::INFINITY, false)
    } else if is_nan(body) {
        (f64::NAN, false)
    } else if body.len() > 2 && body[0] == b'0' && (body[1] | 0x20) == b'x' {
        parse_hex(&body[2..])?
    } else {
        parse_decimal(body)?
    };
    let value = if negative { -magnitude } else { magnitude };
    Some(Parsed { value, range_error, leading_space })
}

/// A double argument with `getDoubleFromObject`'s rules (ZADD scores,
/// ZINCRBY increments, geo coordinates): at most [`MAX_CHARS`] bytes, no
/// leading space, the whole text a number, not NaN, no overflow to infinity
/// or underflow to zero. The words `inf`, `+inf`, `-inf` are accepted.
pub fn parse_score(text: &[u8]) -> Option<f64> {
    if text.is_empty() || text.len() > MAX_CHARS {
        return None;
    }
    let p = strtod(text)?;
    let out_of_range = p.range_error && (p.value.is_infinite() || p.value == 0.0);
    (!p.leading_space && !out_of_range && !p.value.is_nan()).then_some(p.value)
}

/// A range end's number with `zslParseRange`'s rules: `strtod` over the whole
/// text and not NaN. Leading space and out-of-range values are accepted
/// there (`1e400` is `inf`), and so is an empty text, which `strtod` reads
/// as 0 without moving past its end.
pub fn parse_range_bound(text: &[u8]) -> Option<f64> {
    if text.is_empty() {
        return Some(0.0);
    }
    let p = strtod(text)?;
    (!p.value.is_nan()).then_some(p.value)
}

/// C's `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn is_infinity(body: &[u8]) -> bool {
    body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity")
}

/// `nan` or `nan(chars)` where chars are letters, digits and underscores.
fn is_nan(body: &[u8]) -> bool {
    if body.len() < 3 || !body[..3].eq_ignore_ascii_case(b"nan") {
        return false;
    }
    match &body[3..] {
        [] => true,
        [b'(', inner @ .., b')'] => inner.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_'),
        _ => false,
    }
}

/// A decimal significand with optional point and exponent, all of `body`.
///
/// The grammar is checked here; the value comes from Rust's parser, which is
/// correctly rounded like glibc's for any number of digits.
fn parse_decimal(body: &[u8]) -> Option<(f64, bool)> {
    // A plain integer below 10^15 (the common ZADD score) is exact in a
    // double, so its value needs no general parse.
    if (1..=15).contains(&body.len()) && body.iter().all(u8::is_ascii_digit) {
        let n = body.iter().fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
        return Some((n as f64, false));
    }
    let int_digits = body.iter().take_while(|b| b.is_ascii_digit()).count();
    let mut i = int_digits;
    let mut frac_digits = 0;
    if body.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = body[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    let significand_end = i;
    if i < body.len() && (body[i] | 0x20) == b'e' {
        let sign = usize::from(matches!(body.get(i + 1), Some(b'+' | b'-')));
        let exp_digits = body[i + 1 + sign..].iter().take_while(|b| b.is_ascii_digit()).count();
        // strtod stops before an `e` without digits after it, so the text
        // would not be consumed whole.
        if exp_digits == 0 {
            return None;
        }
        i += 1 + sign + exp_digits;
    }
    if i != body.len() {
        return None;
    }
    let text = std::str::from_utf8(body).ok()?;
    let value: f64 = text.parse().ok()?;
    let nonzero = body[..significand_end].iter().any(|b| (b'1'..=b'9').contains(b));
    // glibc reports underflow for an inexact subnormal result too; a decimal
    // text that lands on a subnormal is inexact unless it spells out the
    // exact binary value (hundreds of digits), which is not told apart here.
    let range_error = value.is_infinite() || (value == 0.0 && nonzero) || value.is_subnormal();
    Some((value, range_error))
}

/// A hexadecimal significand (after `0x`) with optional point and binary
/// exponent `p±d`, all of `body`, rounded to nearest, ties to even.
fn parse_hex(body: &[u8]) -> Option<(f64, bool)> {
    let mut mantissa: u64 = 0;
    // Binary exponent of `mantissa`'s last bit, before the `p` exponent.
    let mut exp2: i64 = 0;
    let mut sticky = false;
    let mut digits = 0;
    let mut seen_point = false;
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        if b == b'.' && !seen_point {
            seen_point = true;
        } else if let Some(d) = (b as char).to_digit(16) {
            digits += 1;
            if mantissa >> 60 == 0 {
                mantissa = mantissa << 4 | u64::from(d);
                if seen_point {
                    exp2 -= 4;
                }
            } else {
                sticky |= d != 0;
                if !seen_point {
                    exp2 += 4;
                }
            }
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < body.len() && (body[i] | 0x20) == b'p' {
        let rest = &body[i + 1..];
        let (neg, num) = match rest.first() {
            Some(b'-') => (true, &rest[1..]),
            Some(b'+') => (false, &rest[1..]),
            _ => (false, rest),
        };
        if num.is_empty() || !num.iter().all(u8::is_ascii_digit) {
            return None;
        }
        // Exponents beyond any double's range only need their sign kept.
        let p = num.iter().fold(0i64, |acc, &d| (acc * 10 + i64::from(d - b'0')).min(1 << 20));
        exp2 += if neg { -p } else { p };
        i = body.len();
    }
    if i != body.len() {
        return None;
    }
    Some(round_binary(mantissa, exp2, sticky))
}

/// `mantissa × 2^exp2` (plus a little when `sticky`) rounded to a double,
/// with the range flag `strtod` would set.
fn round_binary(mantissa: u64, exp2: i64, sticky: bool) -> (f64, bool) {
    if mantissa == 0 {
        return (0.0, false);
    }
    // Normalise so the top bit is bit 63: value = m × 2^(e - 63).
    let shift = mantissa.leading_zeros();
    let m = mantissa << shift;
    let e = exp2 - i64::from(shift) + 63;
    if e > 1023 {
        return (f64::INFINITY, true);
    }
    // Bits kept: 53 for normal numbers, fewer for subnormals (e < -1022).
    let keep = if e >= -1022 { 53 } else { 53 - (-1022 - e) };
    if keep <= 0 {
        // Below half the smallest subnormal rounds to zero; exactly half
        // rounds to zero too (ties to even), above half to the smallest.
        let above_half = keep == 0 && (m << 1 != 0 || sticky);
        return if above_half { (f64::from_bits(1), true) } else { (0.0, true) };
    }
    let drop = 64 - keep as u32;
    let mut kept = m >> drop;
    let rest = m << (64 - drop);
    let half = 1u64 << 63;
    if rest > half || (rest == half && (sticky || kept & 1 == 1)) {
        kept += 1;
    }
    let inexact = rest != 0 || sticky;
    // `kept` may have carried into bit `keep`; the arithmetic below absorbs it.
    let lsb_exp = e - (keep - 1);
    let value = kept as f64 * pow2(lsb_exp);
    let subnormal = e < -1022;
    (value, value.is_infinite() || (subnormal && inexact))
}

/// 2^e as a double for any `e` where the product above stays exact: applied
/// in steps so neither factor overflows or underflows on its own.
fn pow2(e: i64) -> f64 {
    let mut result = 1.0f64;
    let mut e = e;
    while e > 1000 {
        result *= f64::from_bits(((1000 + 1023) as u64) << 52);
        e -= 1000;
    }
    while e < -1000 {
        result *= f64::from_bits(((-1000i64 + 1023) as u64) << 52);
        e += 1000;
    }
    result * f64::from_bits(((e + 1023) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_integers_read_as_the_general_parse_reads_them() {
        let mut next = crate::types::test_rng::xorshift(0x0dd_ba11);
        let mut texts: Vec<String> = vec!["0".into(), "00".into(), "999999999999999".into(), "1000000000000000".into()];
        for _ in 0..3_000 {
            let digits = 1 + (next() % 17) as usize;
            texts.push((0..digits).map(|_| char::from(b'0' + (next() % 10) as u8)).collect());
        }
        for text in &texts {
            for signed in [text.clone(), format!("-{text}"), format!("+{text}")] {
                let p = strtod(signed.as_bytes()).expect("a number");
                let expected: f64 = signed.parse().expect("a number");
                assert_eq!(p.value.to_bits(), expected.to_bits(), "{signed}");
                assert!(!p.range_error, "{signed}");
                assert_eq!(parse_score(signed.as_bytes()), Some(expected));
            }
        }
    }

    fn value(text: &str) -> Option<f64> {
        strtod(text.as_bytes()).map(|p| p.value)
    }

    #[test]
    fn decimal_forms_match_c() {
        assert_eq!(value("1.5"), Some(1.5));
        assert_eq!(value("-.5"), Some(-0.5));
        assert_eq!(value("5."), Some(5.0));
        assert_eq!(value("1e3"), Some(1000.0));
        assert_eq!(value("1E+3"), Some(1000.0));
        assert_eq!(value("+2.5e-1"), Some(0.25));
        assert_eq!(value("0.1"), Some(0.1));
        assert!(value("-0").is_some_and(|v| v == 0.0 && v.is_sign_negative()));
        for bad in ["", ".", "e5", "1e", "1e+", "1.5x", "--1", "1 ", "0x", "1,5", "in", "infin"] {
            assert_eq!(value(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn words_and_space() {
        assert_eq!(value("inf"), Some(f64::INFINITY));
        assert_eq!(value("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(value("nan").is_some_and(f64::is_nan));
        assert!(value("NaN(abc_1)").is_some_and(f64::is_nan));
        assert_eq!(value("nan(a-b)"), None);
        let p = strtod(b" \t7").unwrap();
        assert!(p.leading_space && p.value == 7.0);
        assert_eq!(value("   "), None);
        assert_eq!(value("1\0"), None);
    }

    #[test]
    fn hexadecimal_significands_round_to_nearest_even() {
        assert_eq!(value("0x10"), Some(16.0));
        assert_eq!(value("0x1p3"), Some(8.0));
        assert_eq!(value("0x.8"), Some(0.5));
        assert_eq!(value("0X1.8P-1"), Some(0.75));
        assert_eq!(value("-0x1p-1074"), Some(-f64::from_bits(1)));
        // 2^53 + 1 is a tie between 2^53 and 2^53 + 2: even wins.
        assert_eq!(value("0x20000000000001"), Some(9007199254740992.0));
        assert_eq!(value("0x20000000000003"), Some(9007199254740996.0));
        // A tie far below the kept bits goes to even; a set bit beyond the
        // 64 bits kept breaks it upwards.
        assert_eq!(value("0x20000000000001000"), Some(3.6893488147419103e19));
        assert_eq!(value("0x200000000000010001"), Some(5.902958103587058e20));
        assert_eq!(value("0x200000000000010000001"), Some(2.417851639229259e24));
        assert_eq!(value("0x1.fffffffffffff8p1023"), Some(f64::INFINITY));
        assert_eq!(value("0x1.fffffffffffffp1023"), Some(f64::MAX));
        assert_eq!(value("0x1p"), None);
        assert_eq!(value("0xg"), None);
    }

    #[test]
    fn range_errors_are_reported_as_errno_would_be() {
        assert!(strtod(b"1e400").unwrap().range_error);
        assert!(strtod(b"1e-400").unwrap().range_error);
        assert!(strtod(b"1e-310").unwrap().range_error);
        assert!(!strtod(b"0e-400").unwrap().range_error);
        assert!(!strtod(b"0.000").unwrap().range_error);
        assert!(strtod(b"0x1p-1080").unwrap().range_error);
    }

    #[test]
    fn score_rules_follow_get_double_from_object() {
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"4e-320"), Some(4e-320));
        for bad in [&b" 1"[..], b"nan", b"1e400", b"1e-400", b"abc", b""] {
            assert_eq!(parse_score(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(parse_score(&vec![b'1'; MAX_CHARS + 1]), None);
    }

    #[test]
    fn range_bound_rules_follow_zsl_parse_range() {
        assert_eq!(parse_range_bound(b" 1"), Some(1.0));
        assert_eq!(parse_range_bound(b"1e400"), Some(f64::INFINITY));
        assert_eq!(parse_range_bound(b"nan"), None);
        assert_eq!(parse_range_bound(b"1x"), None);
        assert_eq!(parse_range_bound(b""), Some(0.0));
        assert_eq!(parse_range_bound(b" "), None);
    }
}
