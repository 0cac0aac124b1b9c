//! Integer and floating-point text formatting shared by the codecs.
//!
//! Every reply that carries a number goes through these functions, so they
//! append straight into the caller's output buffer without allocating, and
//! they reproduce Redis's exact text: integers are parsed with the same rules
//! as Redis's `string2ll`, and doubles are printed like C's `%.17g`, which is
//! what Redis 7.0 sends for scores and other double replies.

use std::fmt::Write as _;

/// "00", "01", … "99": lets the integer writer emit two digits per division.
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Longest decimal text of an `i64` (`-9223372036854775808`).
pub const MAX_I64_LEN: usize = 20;

/// Appends the decimal text of `n`.
///
/// Replies are full of lengths and counts, so this avoids `format!` and
/// halves the number of divisions by producing two digits at a time.
#[inline]
pub fn write_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = n as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + n as u8;
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends the decimal text of `n` (with a leading `-` when negative).
///
/// Uses the unsigned magnitude so `i64::MIN` needs no special case.
#[inline]
pub fn write_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    write_u64(out, n.unsigned_abs());
}

/// Number of bytes [`write_i64`] produces for `n`.
///
/// Lets a writer emit a length prefix (`$3\r\n-12`) before the digits
/// without formatting them twice.
pub fn i64_len(n: i64) -> usize {
    let mut magnitude = n.unsigned_abs();
    let mut len = usize::from(n < 0) + 1;
    while magnitude >= 10 {
        magnitude /= 10;
        len += 1;
    }
    len
}

/// Parses a decimal `i64` with exactly Redis's `string2ll` rules.
///
/// Commands must accept and reject the same integer arguments as Redis, so
/// this is strict: no sign other than a leading `-`, no leading zeros (only
/// `"0"` itself, and `"-0"` is rejected), no spaces, no empty input, and
/// values outside the `i64` range are rejected rather than wrapped.
pub fn parse_i64(bytes: &[u8]) -> Option<i64> {
    // Redis refuses anything that could not be an i64 before looking at it.
    if bytes.is_empty() || bytes.len() > MAX_I64_LEN {
        return None;
    }
    if bytes == b"0" {
        return Some(0);
    }
    let (negative, digits) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, bytes),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut magnitude: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(b - b'0'))?;
    }
    if negative {
        if magnitude > i64::MIN.unsigned_abs() {
            return None;
        }
        // Two's complement negation of the magnitude; exact for i64::MIN too.
        Some(0i64.wrapping_sub_unsigned(magnitude))
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// A fixed stack buffer that `core::fmt` can write into, so the exact
/// decimal expansion of a double can be produced without allocating.
struct StackText {
    buf: [u8; 40],
    len: usize,
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Significant digits of `%.17g`: enough for every double to round-trip.
const G_PRECISION: i32 = 17;

/// Appends `d` formatted exactly as C's `printf("%.17g", d)` does with glibc.
///
/// Redis 7.0 formats double replies (ZSCORE, ZINCRBY, RESP3 `,` …) this way,
/// and clients compare the text, so the output must match byte for byte:
/// 17 significant digits correctly rounded (ties to even), fixed notation when
/// the decimal exponent is in `-4..17`, otherwise `d.ddde±XX` with at least two
/// exponent digits, trailing zeros and a bare decimal point removed.
/// Infinities print as `inf`/`-inf`, NaN as `nan` (`-nan` if its sign bit is
/// set, as glibc does), and negative zero as `-0`.
pub fn write_double_g17(out: &mut Vec<u8>, d: f64) {
    if d.is_nan() {
        out.extend_from_slice(if d.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
        return;
    }
    if d.is_infinite() {
        out.extend_from_slice(if d < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    // Rust's exact-precision formatting rounds the true binary value to 17
    // significant digits, ties to even, like glibc. Its output is
    // `[-]D.DDDDDDDDDDDDDDDDe[-]X`.
    let mut text = StackText {
        buf: [0; 40],
        len: 0,
    };
    if write!(text, "{:.16e}", d).is_err() {
        // Cannot happen (the longest form is 24 bytes); stay well-formed anyway.
        let _ = write!(VecWriter(out), "{}", d);
        return;
    }
    let text = &text.buf[..text.len];
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let mut digits = [b'0'; G_PRECISION as usize];
    let mut ndigits = 0usize;
    let mut exponent: i32 = 0;
    let mut exponent_negative = false;
    let mut in_exponent = false;
    for &b in text {
        match b {
            b'e' => in_exponent = true,
            b'-' if in_exponent => exponent_negative = true,
            b'0'..=b'9' if in_exponent => exponent = exponent * 10 + i32::from(b - b'0'),
            b'0'..=b'9' => {
                if let Some(slot) = digits.get_mut(ndigits) {
                    *slot = b;
                    ndigits += 1;
                }
            }
            _ => {}
        }
    }
    if exponent_negative {
        exponent = -exponent;
    }
    // %g drops trailing zeros; keep at least one digit.
    let mut significant = digits.len();
    while significant > 1 && digits[significant - 1] == b'0' {
        significant -= 1;
    }
    let digits = &digits[..significant];

    if negative {
        out.push(b'-');
    }
    if (-4..G_PRECISION).contains(&exponent) {
        if exponent >= 0 {
            let int_len = exponent as usize + 1;
            if digits.len() <= int_len {
                out.extend_from_slice(digits);
                out.resize(out.len() + (int_len - digits.len()), b'0');
            } else {
                out.extend_from_slice(&digits[..int_len]);
                out.push(b'.');
                out.extend_from_slice(&digits[int_len..]);
            }
        } else {
            out.extend_from_slice(b"0.");
            out.resize(out.len() + (-exponent - 1) as usize, b'0');
            out.extend_from_slice(digits);
        }
    } else {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            out.push(b'0');
        }
        write_u64(out, u64::from(magnitude));
    }
}

/// Adapter so `write!` can append to a `Vec<u8>` on the (unreachable) fallback path.
struct VecWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for VecWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn i64_text(n: i64) -> Vec<u8> {
        let mut v = Vec::new();
        write_i64(&mut v, n);
        v
    }

    fn g17(d: f64) -> String {
        let mut v = Vec::new();
        write_double_g17(&mut v, d);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn integers_format_like_display() {
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            101,
            999,
            1000,
            -1,
            -10,
            -99,
            -100,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ] {
            assert_eq!(i64_text(n), n.to_string().into_bytes(), "{n}");
            assert_eq!(i64_len(n), n.to_string().len(), "{n}");
        }
        let mut v = b"x".to_vec();
        write_u64(&mut v, u64::MAX);
        assert_eq!(v, b"x18446744073709551615");
        let mut p = 1u64;
        while let Some(next) = p.checked_mul(10) {
            for q in [p - 1, p, p + 1] {
                let mut v = Vec::new();
                write_u64(&mut v, q);
                assert_eq!(v, q.to_string().into_bytes());
            }
            p = next;
        }
    }

    #[test]
    fn string2ll_edge_cases() {
        let ok: &[(&[u8], i64)] = &[
            (b"0", 0),
            (b"1", 1),
            (b"-1", -1),
            (b"12345", 12345),
            (b"9223372036854775807", i64::MAX),
            (b"-9223372036854775808", i64::MIN),
            (b"-9223372036854775807", i64::MIN + 1),
        ];
        for (text, n) in ok {
            assert_eq!(
                parse_i64(text),
                Some(*n),
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
        let bad: &[&[u8]] = &[
            b"",
            b"-",
            b"+1",
            b"+0",
            b"-0",
            b"00",
            b"01",
            b"-01",
            b" 1",
            b"1 ",
            b"1a",
            b"a1",
            b"1.0",
            b"1e3",
            b"--1",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"18446744073709551616",
            b"99999999999999999999",
            b"-99999999999999999999",
            b"100000000000000000000",
            b"000000000000000000001",
            b"\x001",
            b"\xff",
        ];
        for text in bad {
            assert_eq!(parse_i64(text), None, "{:?}", String::from_utf8_lossy(text));
        }
    }

    /// Expected strings produced by glibc `printf("%.17g")` (gcc, glibc 2.x),
    /// keyed by the double's bit pattern.
    const GLIBC_G17: &[(u64, &str)] = include!("number_g17_table.in");

    #[test]
    fn g17_matches_glibc_table() {
        assert!(GLIBC_G17.len() > 200);
        for &(bits, expected) in GLIBC_G17 {
            let d = f64::from_bits(bits);
            assert_eq!(g17(d), expected, "bits {bits:#x}");
        }
    }

    #[test]
    fn g17_known_values() {
        assert_eq!(g17(1.1), "1.1000000000000001");
        assert_eq!(g17(0.1), "0.10000000000000001");
        assert_eq!(g17(1e20), "1e+20");
        assert_eq!(g17(100000000000000000000.5), "1e+20");
        assert_eq!(g17(1e16), "10000000000000000");
        assert_eq!(g17(1e17), "1e+17");
        assert_eq!(g17(0.0001), "0.0001");
        assert_eq!(g17(0.00001), "1.0000000000000001e-05");
        assert_eq!(g17(1.5e-7), "1.4999999999999999e-07");
        assert_eq!(g17(123456789.123), "123456789.123");
        assert_eq!(g17(3.0), "3");
        assert_eq!(g17(0.0), "0");
        assert_eq!(g17(-0.0), "-0");
        assert_eq!(g17(f64::INFINITY), "inf");
        assert_eq!(g17(f64::NEG_INFINITY), "-inf");
        assert_eq!(g17(f64::NAN), "nan");
        assert_eq!(g17(-f64::NAN), "-nan");
        assert_eq!(g17(f64::MAX), "1.7976931348623157e+308");
        assert_eq!(g17(5e-324), "4.9406564584124654e-324");
        // Exact tie at the 18th digit rounds to even, as glibc does.
        assert_eq!(g17(2f64.powi(-25)), "2.9802322387695312e-08");
        assert_eq!(g17(1e100), "1e+100");
    }

    proptest! {
        #[test]
        fn integers_round_trip(n in any::<i64>()) {
            let text = i64_text(n);
            prop_assert_eq!(&text, &n.to_string().into_bytes());
            prop_assert_eq!(i64_len(n), text.len());
            prop_assert_eq!(parse_i64(&text), Some(n));
        }

        #[test]
        fn parse_agrees_with_canonical_text(s in "-?[0-9]{0,21}") {
            let expected = s
                .parse::<i64>()
                .ok()
                .filter(|n| n.to_string() == s);
            prop_assert_eq!(parse_i64(s.as_bytes()), expected);
        }

        #[test]
        fn g17_round_trips(bits in any::<u64>()) {
            let d = f64::from_bits(bits);
            let text = g17(d);
            if d.is_nan() {
                prop_assert!(text == "nan" || text == "-nan");
            } else {
                let back: f64 = text.parse().unwrap();
                prop_assert_eq!(back.to_bits(), d.to_bits());
            }
        }
    }
}
