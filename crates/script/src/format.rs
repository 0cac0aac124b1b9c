//! C's `%.<precision>g` for doubles, which Lua (`tostring`, `%.14g`) and
//! lua-cjson print numbers with: `precision` significant digits, fixed
//! notation when the exponent is from -4 to below the precision,
//! exponential (`1e+20`, two exponent digits at least) otherwise, trailing
//! zeros dropped.

/// `x` as `printf("%.<precision>g", x)` writes it (finite `x`).
pub fn format_g(x: f64, precision: usize) -> String {
    let precision = precision.max(1);
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".to_string() } else { "0".to_string() };
    }
    let scientific = format!("{:.*e}", precision - 1, x);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i32 {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim_zeros(mantissa), exponent.unsigned_abs())
    } else {
        let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
        trim_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

/// A decimal's trailing zeros after the point, and the point if nothing
/// is left after it.
fn trim_zeros(s: &str) -> &str {
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use super::format_g;

    #[test]
    fn numbers_print_as_c_prints_them() {
        assert_eq!(format_g(1.5, 14), "1.5");
        assert_eq!(format_g(0.1, 14), "0.1");
        assert_eq!(format_g(1e20, 14), "1e+20");
        assert_eq!(format_g(1.0 / 3.0, 14), "0.33333333333333");
        assert_eq!(format_g(123456789012345678.0, 14), "1.2345678901235e+17");
        assert_eq!(format_g(1e-5, 14), "1e-05");
        assert_eq!(format_g(100000000000000.0, 14), "1e+14");
        assert_eq!(format_g(10000000000000.0, 14), "10000000000000");
        assert_eq!(format_g(-0.0, 14), "-0");
        assert_eq!(format_g(0.0001, 14), "0.0001");
    }
}
