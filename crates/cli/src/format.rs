//! How replies are printed: redis-cli's two output styles, byte for byte.
//!
//! - [`Style::Human`] is what a person sees at a terminal (or with
//!   `--no-raw`): strings quoted with escapes, `(integer) 1`, `(nil)`,
//!   numbered and indented aggregates (`1) 1) "a"`), maps as `1# "k" => "v"`,
//!   sets as `1~ "m"`.
//! - [`Style::Raw`] is what scripts see when stdout is not a terminal (or with
//!   `--raw`): bare bytes, one element per line, maps as `key value` lines.
//!
//! Scripts parse these outputs, so the exact spacing, escapes and markers
//! follow redis-cli 7.0's (checked against its output in
//! `tests/data/format_fixtures.json`).

use kvik_protocol::number::write_double_g17;
use kvik_protocol::Value;

/// An output style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Quoted strings and type markers, for people.
    Human,
    /// Bare bytes, for scripts.
    Raw,
}

/// The whole printed form of one reply, final newline included.
pub fn format_reply(value: &Value, style: Style) -> Vec<u8> {
    let mut out = Vec::new();
    match style {
        Style::Human => human(value, b"", &mut out),
        Style::Raw => {
            raw(value, &mut out);
            out.push(b'\n');
        }
    }
    out
}

/// Append `bytes` quoted the way redis-cli shows strings: `"..."` with `\"`,
/// `\\`, `\n`, `\r`, `\t`, `\a`, `\b` and `\xHH` for other unprintable bytes.
pub fn quote(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7E => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

fn double_text(d: f64, out: &mut Vec<u8>) {
    write_double_g17(out, d);
}

/// The human style. `prefix` is the indentation of the enclosing aggregates,
/// written before every element line except an aggregate's first (which
/// continues the parent's `n) ` line).
fn human(value: &Value, prefix: &[u8], out: &mut Vec<u8>) {
    match value {
        Value::Error(e) => {
            out.extend_from_slice(b"(error) ");
            out.extend_from_slice(e);
            out.push(b'\n');
        }
        Value::Simple(s) => {
            out.extend_from_slice(s);
            out.push(b'\n');
        }
        Value::Integer(n) => out.extend_from_slice(format!("(integer) {n}\n").as_bytes()),
        Value::Double(d) => {
            out.extend_from_slice(b"(double) ");
            double_text(*d, out);
            out.push(b'\n');
        }
        Value::Bulk(b) => {
            quote(b, out);
            out.push(b'\n');
        }
        Value::Verbatim { text, .. } => {
            out.extend_from_slice(text);
            out.push(b'\n');
        }
        Value::BigNumber(digits) => {
            out.extend_from_slice(b"(big number) ");
            out.extend_from_slice(digits);
            out.push(b'\n');
        }
        Value::Null | Value::NullArray => out.extend_from_slice(b"(nil)\n"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"(true)\n" } else { b"(false)\n" }),
        Value::Array(items) => human_list(items, b')', b"(empty array)\n", prefix, out),
        Value::Set(items) => human_list(items, b'~', b"(empty set)\n", prefix, out),
        Value::Push(items) => human_list(items, b')', b"(empty push)\n", prefix, out),
        Value::Map(pairs) => human_map(pairs, prefix, out),
        // redis-cli 7.0 cannot read attributes at all; show what they decorate.
        Value::Attribute { value, .. } => human(value, prefix, out),
    }
}

/// Digits of the largest index, which sets the width of every index.
fn index_width(count: usize) -> usize {
    count.max(1).to_string().len()
}

/// The indentation for elements nested one level deeper.
fn child_prefix(prefix: &[u8], width: usize) -> Vec<u8> {
    let mut p = prefix.to_vec();
    p.resize(prefix.len() + width + 2, b' ');
    p
}

fn index_marker(i: usize, width: usize, sep: u8, prefix: &[u8], out: &mut Vec<u8>) {
    if i > 0 {
        out.extend_from_slice(prefix);
    }
    out.extend_from_slice(format!("{:>width$}", i + 1).as_bytes());
    out.push(sep);
    out.push(b' ');
}

fn human_list(items: &[Value], sep: u8, empty: &[u8], prefix: &[u8], out: &mut Vec<u8>) {
    if items.is_empty() {
        out.extend_from_slice(empty);
        return;
    }
    let width = index_width(items.len());
    let inner = child_prefix(prefix, width);
    for (i, item) in items.iter().enumerate() {
        index_marker(i, width, sep, prefix, out);
        human(item, &inner, out);
    }
}

fn human_map(pairs: &[(Value, Value)], prefix: &[u8], out: &mut Vec<u8>) {
    if pairs.is_empty() {
        out.extend_from_slice(b"(empty hash)\n");
        return;
    }
    let width = index_width(pairs.len());
    let inner = child_prefix(prefix, width);
    for (i, (k, v)) in pairs.iter().enumerate() {
        index_marker(i, width, b'#', prefix, out);
        human(k, &inner, out);
        out.pop(); // the key's newline: the value follows on the same line
        out.extend_from_slice(b" => ");
        // A value of several lines starts on a line of its own, indented.
        let mut value = Vec::new();
        human(v, &inner, &mut value);
        if value.iter().filter(|&&b| b == b'\n').count() > 1 {
            out.push(b'\n');
            out.extend_from_slice(&inner);
        }
        out.extend_from_slice(&value);
    }
}

/// The raw style, without the final newline.
fn raw(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Error(e) => {
            out.extend_from_slice(e);
            out.push(b'\n');
        }
        Value::Simple(s) | Value::Bulk(s) | Value::BigNumber(s) => out.extend_from_slice(s),
        Value::Verbatim { text, .. } => out.extend_from_slice(text),
        Value::Integer(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::Double(d) => double_text(*d, out),
        Value::Null | Value::NullArray => {}
        Value::Boolean(b) => out.extend_from_slice(if *b { b"(true)" } else { b"(false)" }),
        Value::Array(items) | Value::Set(items) | Value::Push(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b'\n');
                }
                raw(item, out);
            }
        }
        Value::Map(pairs) => {
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(b'\n');
                }
                raw(k, out);
                out.push(b' ');
                raw(v, out);
            }
        }
        Value::Attribute { value, .. } => raw(value, out),
    }
}

#[cfg(test)]
mod tests;
