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
        magnitude = magnitude.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
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
        out.extend_from_slice(if d.is_sign_negative() { b"-nan" } else { b"nan" });
        return;
    }
    if d.is_infinite() {
        out.extend_from_slice(if d < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    let negative = d.is_sign_negative();
    let magnitude = d.abs();
    // Integral values below 10^17 print as plain integers; this is the most
    // common kind of score, so skip the digit machinery for them.
    if magnitude.fract() == 0.0 && magnitude < 1e17 {
        if negative {
            out.push(b'-');
        }
        write_u64(out, magnitude as u64);
        return;
    }
    let Some((digits, exponent)) = g17_digits_exact(magnitude).or_else(|| g17_digits_fmt(magnitude)) else {
        // Unreachable: the fallback only fails if 40 bytes cannot hold 24.
        let _ = write!(VecWriter(out), "{}", d);
        return;
    };
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

/// The 17 significant digits (as ASCII) and decimal exponent of `%.17g`.
type G17Digits = ([u8; G_PRECISION as usize], i32);

/// `5^i` for every `i` whose power fits in a `u128`.
const POW5: [u128; 56] = {
    let mut table = [1u128; 56];
    let mut i = 1;
    while i < table.len() {
        table[i] = table[i - 1] * 5;
        i += 1;
    }
    table
};

/// `10^i` for every `i` whose power fits in a `u128`.
const POW10: [u128; 39] = {
    let mut table = [1u128; 39];
    let mut i = 1;
    while i < table.len() {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

const TEN_16: u128 = 10_000_000_000_000_000;
const TEN_17: u128 = 100_000_000_000_000_000;

/// `floor(m * 2^e * 10^q)` and how the discarded fraction compares with
/// one half, computed exactly in 128-bit integers; `None` when the numbers
/// do not fit (very large or very small magnitudes).
fn scale_exact(m: u64, e: i32, q: i32) -> Option<(u128, std::cmp::Ordering)> {
    use std::cmp::Ordering;
    if q >= 0 {
        // m * 2^e * 10^q = (m * 5^q) * 2^(e + q)
        let p = u128::from(m).checked_mul(*POW5.get(q as usize)?)?;
        let shift = e + q;
        if shift >= 0 {
            if p.leading_zeros() < shift as u32 {
                return None;
            }
            return Some((p << shift, Ordering::Less));
        }
        let s = shift.unsigned_abs();
        if s >= 128 {
            return None;
        }
        let fraction = p & ((1u128 << s) - 1);
        let half = 1u128 << (s - 1);
        Some((p >> s, fraction.cmp(&half)))
    } else {
        // m * 2^e / 10^-q, with m * 2^e an integer here.
        if e < 0 {
            return None;
        }
        let e = e as u32;
        if u128::from(m).leading_zeros() < e {
            return None;
        }
        let n = u128::from(m) << e;
        let divisor = *POW10.get(q.unsigned_abs() as usize)?;
        let remainder = n % divisor;
        // remainder < 10^38 < 2^127, so doubling cannot overflow.
        Some((n / divisor, (remainder * 2).cmp(&divisor)))
    }
}

/// `%.17g` digits of a positive finite `a` by exact integer arithmetic,
/// for magnitudes from about 1e-15 to 3e38 (where 128 bits suffice).
///
/// This is several times faster than `core::fmt`'s exact mode, which matters
/// for replies full of scores (`ZRANGE … WITHSCORES`).
fn g17_digits_exact(a: f64) -> Option<G17Digits> {
    use std::cmp::Ordering;
    let bits = a.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1u64 << 52) - 1);
    let (m, e) = if biased == 0 { (fraction, -1074) } else { (fraction | (1u64 << 52), biased - 1075) };
    if m == 0 {
        return None;
    }
    // An estimate of the decimal exponent, corrected below if off by one.
    let mut exponent = a.log10().floor() as i32;
    for _ in 0..3 {
        let (int, rest) = scale_exact(m, e, G_PRECISION - 1 - exponent)?;
        if int >= TEN_17 {
            exponent += 1;
            continue;
        }
        if int < TEN_16 {
            exponent -= 1;
            continue;
        }
        // Round to nearest, ties to even, as glibc does on exact values.
        let round_up = match rest {
            Ordering::Greater => true,
            Ordering::Equal => int % 2 == 1,
            Ordering::Less => false,
        };
        let mut n = int + u128::from(round_up);
        if n == TEN_17 {
            n = TEN_16;
            exponent += 1;
        }
        // n < 10^17 fits in 64 bits, where division is far cheaper.
        let mut n = n as u64;
        let mut digits = [b'0'; G_PRECISION as usize];
        for pair in digits[1..].chunks_exact_mut(2).rev() {
            let i = (n % 100) as usize * 2;
            n /= 100;
            pair.copy_from_slice(&DIGIT_PAIRS[i..i + 2]);
        }
        digits[0] = b'0' + n as u8;
        return Some((digits, exponent));
    }
    None
}

/// `%.17g` digits of a positive finite `a` through `core::fmt`'s exact mode,
/// which rounds the true binary value to 17 digits, ties to even, like glibc.
/// Works for every double; used where [`g17_digits_exact`] cannot.
fn g17_digits_fmt(a: f64) -> Option<G17Digits> {
    let mut text = StackText { buf: [0; 40], len: 0 };
    // Output form: `D.DDDDDDDDDDDDDDDDe[-]X`.
    write!(text, "{:.16e}", a).ok()?;
    let mut digits = [b'0'; G_PRECISION as usize];
    let mut ndigits = 0usize;
    let mut exponent: i32 = 0;
    let mut exponent_negative = false;
    let mut in_exponent = false;
    for &b in &text.buf[..text.len] {
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
    Some((digits, if exponent_negative { -exponent } else { exponent }))
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
        for n in [0, 1, 9, 10, 99, 100, 101, 999, 1000, -1, -10, -99, -100, i64::MAX, i64::MIN, i64::MIN + 1] {
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
            assert_eq!(parse_i64(text), Some(*n), "{:?}", String::from_utf8_lossy(text));
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
    fn g17_exact_path_covers_common_range_and_ties() {
        for a in [1.1, 0.1, 1e-15, 1.5e-7, 123.456, 2e38, 9.999999999999999e16] {
            assert!(g17_digits_exact(a).is_some(), "{a:e}");
        }
        // Exact ties at the 18th digit, both rounding directions of "even".
        for n in 20..60 {
            for k in [1.0, 3.0, 5.0, 7.0, 11.0] {
                let a = k * 2f64.powi(-n);
                assert_eq!(g17_digits_exact(a).or(g17_digits_fmt(a)), g17_digits_fmt(a), "{a:e}");
            }
        }
        assert_eq!(g17_digits_exact(1e-300), None);
        assert_eq!(g17_digits_exact(1e300), None);
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
        fn g17_exact_path_agrees_with_fmt(bits in any::<u64>(), small in -1e6f64..1e6, shift in 0i32..60) {
            for a in [f64::from_bits(bits).abs(), small.abs(), (small * 2f64.powi(-shift)).abs()] {
                if a.is_finite() && a != 0.0 {
                    if let Some(exact) = g17_digits_exact(a) {
                        prop_assert_eq!(Some(exact), g17_digits_fmt(a), "{:e}", a);
                    }
                }
            }
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
