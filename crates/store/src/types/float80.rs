//! x87 80-bit extended precision numbers, in software.
//!
//! Redis computes `INCRBYFLOAT` in C `long double`, which on x86-64 is the
//! 80-bit extended format (64-bit mantissa, 15-bit exponent), parses operands
//! with `strtold` and prints the sum with `%.17Lf`. The 11 extra bits of
//! mantissa change the printed digits (`0.1 + 0.2` prints `0.3`, not
//! `0.30000000000000004`), and `%.17Lf` prints every integer digit of large
//! values exactly, so matching Redis byte for byte needs the same arithmetic:
//! correctly rounded parsing, one correctly rounded addition and exact
//! decimal printing. Rust has no such type, hence this module. Everything is
//! done on exact big integers, which is slow but only runs once per command.

use std::cmp::Ordering;

/// Exponent of the least significant mantissa bit of the smallest subnormal.
const MIN_LSB: i64 = -16445;
/// Largest exponent of the least significant mantissa bit of a finite value.
const MAX_LSB: i64 = 16320;
/// Longest text Redis accepts as a long double (`MAX_LONG_DOUBLE_CHARS`).
pub const MAX_CHARS: usize = 5 * 1024;

/// An extended precision value: `±mant × 2^exp`, or an infinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum F80 {
    /// A finite value (zero when `mant` is 0).
    Finite {
        /// Sign.
        neg: bool,
        /// Mantissa; its top bit is set unless the value is subnormal or zero.
        mant: u64,
        /// Exponent of the mantissa's least significant bit.
        exp: i32,
    },
    /// An infinity.
    Inf {
        /// Sign.
        neg: bool,
    },
}

/// A non-negative big integer, 32-bit limbs, least significant first, no
/// high zero limbs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Big(Vec<u32>);

impl Big {
    fn from_u128(mut n: u128) -> Big {
        let mut v = Vec::new();
        while n != 0 {
            v.push(n as u32);
            n >>= 32;
        }
        Big(v)
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn bits(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(&top) => (self.0.len() as u64 - 1) * 32 + u64::from(32 - top.leading_zeros()),
        }
    }

    fn bit(&self, i: u64) -> bool {
        let limb = (i / 32) as usize;
        self.0.get(limb).is_some_and(|l| (l >> (i % 32)) & 1 == 1)
    }

    /// True when any bit below bit `i` is set.
    fn any_below(&self, i: u64) -> bool {
        let full = (i / 32) as usize;
        let part = (i % 32) as u32;
        self.0.iter().take(full).any(|&l| l != 0)
            || (part > 0 && self.0.get(full).is_some_and(|l| l & ((1u32 << part) - 1) != 0))
    }

    /// The low 128 bits of `self >> s`.
    fn shr_u128(&self, s: u64) -> u128 {
        (0..128u64).filter(|i| self.bit(s + i)).fold(0u128, |acc, i| acc | (1u128 << i))
    }

    fn shl(&self, s: u64) -> Big {
        if self.is_zero() {
            return Big::default();
        }
        let limbs = (s / 32) as usize;
        let part = (s % 32) as u32;
        let mut v = vec![0u32; limbs];
        let mut carry = 0u32;
        for &l in &self.0 {
            if part == 0 {
                v.push(l);
            } else {
                v.push((l << part) | carry);
                carry = l >> (32 - part);
            }
        }
        if carry != 0 {
            v.push(carry);
        }
        Big(v)
    }

    fn mul_small(&mut self, m: u32) {
        let mut carry = 0u64;
        for l in &mut self.0 {
            let t = u64::from(*l) * u64::from(m) + carry;
            *l = t as u32;
            carry = t >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
        self.trim();
    }

    fn add_small(&mut self, a: u32) {
        let mut carry = u64::from(a);
        for l in &mut self.0 {
            if carry == 0 {
                break;
            }
            let t = u64::from(*l) + carry;
            *l = t as u32;
            carry = t >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    fn add(&self, o: &Big) -> Big {
        let n = self.0.len().max(o.0.len());
        let mut v = Vec::with_capacity(n + 1);
        let mut carry = 0u64;
        for i in 0..n {
            let t = u64::from(*self.0.get(i).unwrap_or(&0)) + u64::from(*o.0.get(i).unwrap_or(&0)) + carry;
            v.push(t as u32);
            carry = t >> 32;
        }
        if carry != 0 {
            v.push(carry as u32);
        }
        Big(v)
    }

    /// `self - o`; `self` must not be smaller.
    fn sub(&self, o: &Big) -> Big {
        let mut v = Vec::with_capacity(self.0.len());
        let mut borrow = 0i64;
        for (i, &l) in self.0.iter().enumerate() {
            let mut t = i64::from(l) - i64::from(*o.0.get(i).unwrap_or(&0)) - borrow;
            borrow = 0;
            if t < 0 {
                t += 1 << 32;
                borrow = 1;
            }
            v.push(t as u32);
        }
        let mut b = Big(v);
        b.trim();
        b
    }

    fn cmp(&self, o: &Big) -> Ordering {
        self.0.len().cmp(&o.0.len()).then_with(|| self.0.iter().rev().cmp(o.0.iter().rev()))
    }

    fn pow10(k: u64) -> Big {
        let mut b = Big(vec![1]);
        let mut left = k;
        while left >= 9 {
            b.mul_small(1_000_000_000);
            left -= 9;
        }
        b.mul_small(10u32.pow(left as u32));
        b
    }

    /// Decimal digits, most significant first (`"0"` for zero).
    fn to_decimal(&self) -> Vec<u8> {
        let mut n = self.0.clone();
        let mut chunks = Vec::new();
        while !n.is_empty() {
            let mut rem = 0u64;
            for l in n.iter_mut().rev() {
                let cur = (rem << 32) | u64::from(*l);
                *l = (cur / 1_000_000_000) as u32;
                rem = cur % 1_000_000_000;
            }
            while n.last() == Some(&0) {
                n.pop();
            }
            chunks.push(rem as u32);
        }
        let mut out = Vec::new();
        for (i, c) in chunks.iter().rev().enumerate() {
            let s = if i == 0 { c.to_string() } else { format!("{c:09}") };
            out.extend_from_slice(s.as_bytes());
        }
        if out.is_empty() {
            out.push(b'0');
        }
        out
    }

    /// `floor(self / den)` when it is known to be below 2^127, and whether
    /// the division left a remainder.
    fn div_to_u128(&self, den: &Big) -> (u128, bool) {
        let mut rem = self.clone();
        let mut q = 0u128;
        if self.bits() >= den.bits() {
            let top = (self.bits() - den.bits()).min(126);
            for i in (0..=top).rev() {
                let d = den.shl(i);
                if rem.cmp(&d) != Ordering::Less {
                    rem = rem.sub(&d);
                    q |= 1u128 << i;
                }
            }
        }
        (q, !rem.is_zero())
    }
}

impl F80 {
    /// Positive or negative zero.
    fn zero(neg: bool) -> F80 {
        F80::Finite { neg, mant: 0, exp: 0 }
    }

    /// `n` exactly (every i64 fits in 64 bits of mantissa).
    pub fn from_i64(n: i64) -> F80 {
        round(n < 0, &Big::from_u128(u128::from(n.unsigned_abs())), 0, false)
    }

    /// `d` exactly (every double fits in the wider format); NaN is not a
    /// value here and becomes zero.
    pub fn from_f64(d: f64) -> F80 {
        if d.is_infinite() {
            return F80::Inf { neg: d < 0.0 };
        }
        if d.is_nan() || d == 0.0 {
            return F80::zero(d.is_sign_negative() && !d.is_nan());
        }
        let bits = d.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i64;
        let fraction = bits & ((1u64 << 52) - 1);
        let (mant, exp) = if biased == 0 { (fraction, -1074) } else { (fraction | 1 << 52, biased - 1075) };
        round(d < 0.0, &Big::from_u128(u128::from(mant)), exp, false)
    }

    /// True for an infinity.
    pub fn is_inf(&self) -> bool {
        matches!(self, F80::Inf { .. })
    }

    /// Parse `text` as Redis's `string2ld` does with glibc's `strtold`:
    /// decimal or hexadecimal notation, `inf`/`infinity`, correctly rounded;
    /// rejected when empty, too long, starting with a space, not consumed
    /// whole, NaN, or out of range (overflow, or underflow to zero).
    pub fn parse(text: &[u8]) -> Option<F80> {
        if text.is_empty() || text.len() >= MAX_CHARS {
            return None;
        }
        // strtold stops at a NUL, and Redis then sees text left unparsed.
        if text.contains(&0) {
            return None;
        }
        let s = text;
        if s[0].is_ascii_whitespace() || s[0] == 0x0b {
            return None;
        }
        let (neg, body) = match s[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
            return Some(F80::Inf { neg });
        }
        let v = if body.len() > 2 && body[0] == b'0' && (body[1] | 0x20) == b'x' {
            parse_hex(neg, &body[2..])?
        } else {
            parse_decimal(neg, body)?
        };
        match v {
            F80::Inf { .. } => None,
            F80::Finite { mant: 0, .. } if !is_zero_text(body) => None,
            v => Some(v),
        }
    }

    /// The sum, correctly rounded to nearest, ties to even; `None` for NaN
    /// (opposite infinities).
    pub fn sum(self, other: F80) -> Option<F80> {
        match (self, other) {
            (F80::Inf { neg: a }, F80::Inf { neg: b }) if a != b => None,
            (F80::Inf { neg }, _) | (_, F80::Inf { neg }) => Some(F80::Inf { neg }),
            (F80::Finite { neg: na, mant: ma, exp: ea }, F80::Finite { neg: nb, mant: mb, exp: eb }) => {
                if ma == 0 {
                    return Some(if mb == 0 { F80::zero(na && nb) } else { other });
                }
                if mb == 0 {
                    return Some(self);
                }
                let low = ea.min(eb);
                let a = Big::from_u128(u128::from(ma)).shl((ea - low) as u64);
                let b = Big::from_u128(u128::from(mb)).shl((eb - low) as u64);
                let (neg, sum) = if na == nb {
                    (na, a.add(&b))
                } else {
                    match a.cmp(&b) {
                        Ordering::Equal => return Some(F80::zero(false)),
                        Ordering::Greater => (na, a.sub(&b)),
                        Ordering::Less => (nb, b.sub(&a)),
                    }
                };
                Some(round(neg, &sum, i64::from(low), false))
            }
        }
    }

    /// The text of `printf("%.17Lf")` with trailing fractional zeros (and a
    /// bare point) removed and `-0` shown as `0`: Redis's "human" format.
    pub fn to_human(&self) -> Vec<u8> {
        let (neg, mant, exp) = match *self {
            F80::Inf { neg } => return if neg { b"-inf".to_vec() } else { b"inf".to_vec() },
            F80::Finite { neg, mant, exp } => (neg, mant, exp),
        };
        let m = Big::from_u128(u128::from(mant));
        let mut out = Vec::new();
        if neg {
            out.push(b'-');
        }
        if exp >= 0 {
            out.extend_from_slice(&m.shl(exp as u64).to_decimal());
        } else {
            let f = u64::from(exp.unsigned_abs());
            let mut scaled = m;
            scaled.mul_small(100_000_000);
            scaled.mul_small(1_000_000_000);
            let mut q = shr_big(&scaled, f);
            let guard = scaled.bit(f - 1);
            let rest = scaled.any_below(f - 1);
            if guard && (rest || q.bit(0)) {
                q.add_small(1);
            }
            let mut digits = q.to_decimal();
            while digits.len() < 18 {
                digits.insert(0, b'0');
            }
            let point = digits.len() - 17;
            out.extend_from_slice(&digits[..point]);
            let mut frac = &digits[point..];
            while let Some((b'0', rest)) = frac.split_last() {
                frac = rest;
            }
            if !frac.is_empty() {
                out.push(b'.');
                out.extend_from_slice(frac);
            }
        }
        if out == b"-0" {
            out = b"0".to_vec();
        }
        out
    }
}

/// `n >> s` as a big integer.
fn shr_big(n: &Big, s: u64) -> Big {
    let limbs = (s / 32) as usize;
    let part = (s % 32) as u32;
    let src = n.0.get(limbs..).unwrap_or(&[]);
    let mut v = Vec::with_capacity(src.len());
    for (i, &l) in src.iter().enumerate() {
        let hi = if part == 0 { 0 } else { src.get(i + 1).map_or(0, |&h| h << (32 - part)) };
        v.push((l >> part) | hi);
    }
    let mut b = Big(v);
    b.trim();
    b
}

/// True when the mantissa text has no non-zero digit (an exact zero, which
/// `strtold` returns without reporting an underflow).
fn is_zero_text(body: &[u8]) -> bool {
    let digits = if body.len() > 2 && body[0] == b'0' && (body[1] | 0x20) == b'x' { &body[2..] } else { body };
    digits.iter().take_while(|&&b| !matches!(b | 0x20, b'e' | b'p')).all(|&b| b == b'0' || b == b'.')
}

/// Round `(n + sticky) × 2^exp` to the 64-bit mantissa, to nearest, ties to
/// even, with subnormals and overflow to infinity.
fn round(neg: bool, n: &Big, exp: i64, sticky: bool) -> F80 {
    let nb = n.bits() as i64;
    if nb == 0 {
        return F80::zero(neg);
    }
    let mut lsb = (exp + nb - 64).max(MIN_LSB);
    let shift = lsb - exp;
    let mant = if shift <= 0 {
        n.shr_u128(0) << shift.unsigned_abs()
    } else {
        let s = shift as u64;
        let mut m = n.shr_u128(s);
        let guard = n.bit(s - 1);
        let rest = sticky || n.any_below(s - 1);
        if guard && (rest || m & 1 == 1) {
            m += 1;
        }
        if m >> 64 != 0 {
            m >>= 1;
            lsb += 1;
        }
        m
    };
    if mant == 0 {
        return F80::zero(neg);
    }
    if lsb > MAX_LSB {
        return F80::Inf { neg };
    }
    F80::Finite { neg, mant: mant as u64, exp: lsb as i32 }
}

/// Parse an optional exponent (`[+-]digits`); saturates far beyond any
/// meaningful range. `None` when there are no digits.
fn parse_exponent(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = digits.iter().fold(0i64, |acc, &d| (acc * 10 + i64::from(d - b'0')).min(1 << 40));
    Some(if neg { -v } else { v })
}

/// Split `digits[.digits][<marker>exponent]`; the mantissa digits (point
/// removed), how many came after the point, and the exponent.
fn split_number(body: &[u8], marker: u8, is_digit: fn(&u8) -> bool) -> Option<(Vec<u8>, i64, i64)> {
    let mut digits = Vec::new();
    let mut frac = 0i64;
    let mut seen_point = false;
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        if is_digit(&b) {
            digits.push(b);
            if seen_point {
                frac += 1;
            }
        } else if b == b'.' && !seen_point {
            seen_point = true;
        } else {
            break;
        }
        i += 1;
    }
    if digits.is_empty() {
        return None;
    }
    let exp = if i < body.len() {
        if body[i] | 0x20 != marker {
            return None;
        }
        parse_exponent(&body[i + 1..])?
    } else {
        0
    };
    Some((digits, frac, exp))
}

fn parse_decimal(neg: bool, body: &[u8]) -> Option<F80> {
    let (digits, frac, exp) = split_number(body, b'e', u8::is_ascii_digit)?;
    let first = digits.iter().position(|&d| d != b'0');
    let Some(first) = first else { return Some(F80::zero(neg)) };
    let last = digits.iter().rposition(|&d| d != b'0').unwrap_or(first);
    let sig = &digits[first..=last];
    // value = sig × 10^k
    let k = exp - frac + (digits.len() - 1 - last) as i64;
    let magnitude = sig.len() as i64 + k;
    if magnitude > 4934 {
        return Some(F80::Inf { neg });
    }
    if magnitude < -4960 {
        return Some(F80::zero(neg));
    }
    let mut d = Big::default();
    for &c in sig {
        d.mul_small(10);
        d.add_small(u32::from(c - b'0'));
    }
    if k >= 0 {
        let mut n = d;
        let p = Big::pow10(k as u64);
        // Multiply by the power of ten limb by limb.
        let mut prod = Big::default();
        for (i, &l) in p.0.iter().enumerate() {
            let mut part = n.clone();
            part.mul_small(l);
            prod = prod.add(&part.shl(32 * i as u64));
        }
        n = prod;
        return Some(round(neg, &n, 0, false));
    }
    let p = Big::pow10(k.unsigned_abs());
    // Scale so the quotient has 67 or 68 bits: enough for rounding.
    let s = p.bits() as i64 - d.bits() as i64 + 67;
    let (num, den) = if s >= 0 { (d.shl(s as u64), p) } else { (d, p.shl(s.unsigned_abs())) };
    let (q, sticky) = num.div_to_u128(&den);
    Some(round(neg, &Big::from_u128(q), -s, sticky))
}

fn parse_hex(neg: bool, body: &[u8]) -> Option<F80> {
    let (digits, frac, exp) = split_number(body, b'p', u8::is_ascii_hexdigit)?;
    let mut n = Big::default();
    for &c in &digits {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            _ => (c | 0x20) - b'a' + 10,
        };
        n.mul_small(16);
        n.add_small(u32::from(v));
    }
    Some(round(neg, &n, exp - 4 * frac, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_redis_prints_geo_coordinates() {
        let human = |d: f64| String::from_utf8(F80::from_f64(d).to_human()).unwrap();
        assert_eq!(human(13.361389338970184), "13.36138933897018433");
        assert_eq!(human(38.1155563954963), "38.11555639549629859");
        assert_eq!(human(-0.5), "-0.5");
        assert_eq!(human(0.0), "0");
        assert_eq!(human(f64::NEG_INFINITY), "-inf");
    }

    fn incr(a: &str, b: &str) -> String {
        let x = F80::parse(a.as_bytes()).expect("a parses");
        let y = F80::parse(b.as_bytes()).expect("b parses");
        String::from_utf8(x.sum(y).expect("finite").to_human()).expect("ascii")
    }

    #[test]
    fn sums_print_like_redis() {
        // Values checked against Redis 7.0 on x86-64.
        assert_eq!(incr("10.5", "0.1"), "10.6");
        assert_eq!(incr("0.1", "0.2"), "0.3");
        assert_eq!(incr("0", "1e30"), "1000000000000000000024696061952");
        assert_eq!(incr("0", "1.23e-10"), "0.000000000123");
        assert_eq!(incr("3", "-3"), "0");
        assert_eq!(incr("-1e-20", "0"), "0");
        assert_eq!(incr("5", "-0.5"), "4.5");
        assert_eq!(incr("0x1p3", "1"), "9");
    }

    #[test]
    fn parsing_follows_strtold_and_string2ld() {
        for ok in ["1", "+1", "-1.5", ".5", "5.", "1e5", "1E+5", "inf", "-Infinity", "0x1.8p1", "0e-99999", "1e-4940"] {
            assert!(F80::parse(ok.as_bytes()).is_some(), "{ok}");
        }
        for bad in ["", " 1", "1 ", "nan", "1e", "e5", ".", "abc", "0x", "1e5000", "1e-5000", "1..2", "--1"] {
            assert!(F80::parse(bad.as_bytes()).is_none(), "{bad}");
        }
        assert_eq!(F80::parse(b"1\0"), None);
    }

    #[test]
    fn infinities_and_nan() {
        let inf = F80::parse(b"inf").expect("inf");
        let minus = F80::parse(b"-inf").expect("-inf");
        assert_eq!(inf.sum(minus), None);
        assert!(inf.sum(F80::from_i64(1)).is_some_and(|v| v.is_inf()));
        let big = F80::parse(b"1e4932").expect("big");
        assert!(big.sum(big).is_some_and(|v| v.is_inf()));
    }
}
