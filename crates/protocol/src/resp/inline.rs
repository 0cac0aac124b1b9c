//! Splitting an inline command line (`SET k "a b"`) into arguments.
//!
//! Inline commands are what a person types into `telnet` or `nc`, so Redis
//! accepts a small shell-like quoting language for them. The rules here follow
//! Redis's own splitter so that a line means the same thing to kvik as to Redis:
//!
//! - arguments are separated by runs of whitespace;
//! - `"..."` quotes with the escapes `\n \r \t \b \a`, `\xHH` (exactly two hex
//!   digits) and `\c` meaning `c` for any other character;
//! - `'...'` quotes where only `\'` is an escape;
//! - a quote may start in the middle of an argument (`a"b c"` is `ab c`), but a
//!   closing quote must be followed by whitespace or the end of the line;
//! - a quote left open is an error.
//!
//! Arguments whose bytes sit contiguously in the input (the usual unquoted
//! word, or a quoted string with no escapes) are recorded as references into the
//! input; only arguments that had to be rewritten are copied to the scratch
//! buffer.

use super::request::RequestError;
use crate::args::CommandArgs;

/// Split one inline line (newline already removed) into `out`.
///
/// `base` is the offset of `line` inside the buffer the caller will later read
/// arguments back from, so references pushed into `out` are relative to that
/// buffer rather than to `line`. A line of only whitespace pushes nothing.
///
/// On error `out` is left with the arguments it had before the call.
pub fn split_inline(line: &[u8], base: usize, out: &mut CommandArgs) -> Result<(), RequestError> {
    let before = out.len();
    let result = split_into(line, base, out);
    if result.is_err() {
        out.truncate(before);
    }
    result
}

fn split_into(line: &[u8], base: usize, out: &mut CommandArgs) -> Result<(), RequestError> {
    let mut i = 0;
    loop {
        while i < line.len() && is_blank(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Ok(());
        }
        let start = i;
        // Fast path: an unquoted word is a plain slice of the input.
        let mut j = i;
        while j < line.len() && !matches!(line[j], b' ' | b'\n' | b'\r' | b'\t' | b'"' | b'\'') {
            j += 1;
        }
        if !matches!(line.get(j), Some(b'"' | b'\'')) {
            out.push_input(base + start, j - start);
            i = j;
            continue;
        }
        // First pass: find where the argument ends and whether its bytes are a
        // single contiguous run of the input.
        let mut run: Option<(usize, usize)> = None;
        let mut contiguous = true;
        let end = walk_arg(line, start, &mut |piece| match (piece, run) {
            (Piece::Input(j), None) => run = Some((j, j + 1)),
            (Piece::Input(j), Some((s, e))) if e == j => run = Some((s, j + 1)),
            _ => contiguous = false,
        })?;
        if contiguous {
            match run {
                Some((s, e)) => out.push_input(base + s, e - s),
                None => out.push_input(base + start, 0),
            }
        } else {
            // Second pass over an argument already known to be well formed:
            // write its decoded bytes into the scratch buffer.
            out.push_with(|scratch| {
                // The first pass succeeded on these same bytes, so this cannot fail.
                let _ = walk_arg(line, start, &mut |piece| match piece {
                    Piece::Input(j) => scratch.push(line[j]),
                    Piece::Byte(b) => scratch.push(b),
                });
            });
        }
        i = end;
    }
}

/// One decoded byte of an argument: either copied from the input at an index,
/// or produced by an escape sequence.
#[derive(Clone, Copy)]
enum Piece {
    Input(usize),
    Byte(u8),
}

/// Walk one argument starting at `i` (not whitespace), reporting its bytes to
/// `emit`, and return the index just past it.
fn walk_arg(line: &[u8], mut i: usize, emit: &mut impl FnMut(Piece)) -> Result<usize, RequestError> {
    loop {
        match line.get(i) {
            None | Some(b' ' | b'\n' | b'\r' | b'\t') => return Ok(i),
            Some(b'"') => return walk_double_quoted(line, i + 1, emit),
            Some(b'\'') => return walk_single_quoted(line, i + 1, emit),
            Some(_) => {
                emit(Piece::Input(i));
                i += 1;
            }
        }
    }
}

fn walk_double_quoted(line: &[u8], mut i: usize, emit: &mut impl FnMut(Piece)) -> Result<usize, RequestError> {
    loop {
        match line.get(i) {
            None => return Err(RequestError::UnbalancedQuotes),
            Some(b'"') => return after_closing_quote(line, i + 1),
            Some(b'\\') if i + 1 < line.len() => {
                let c = line[i + 1];
                if c == b'x' {
                    if let (Some(hi), Some(lo)) =
                        (line.get(i + 2).and_then(|&h| hex_value(h)), line.get(i + 3).and_then(|&l| hex_value(l)))
                    {
                        emit(Piece::Byte(hi << 4 | lo));
                        i += 4;
                        continue;
                    }
                }
                let decoded = match c {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'b' => 0x08,
                    b'a' => 0x07,
                    other => other,
                };
                emit(Piece::Byte(decoded));
                i += 2;
            }
            Some(_) => {
                emit(Piece::Input(i));
                i += 1;
            }
        }
    }
}

fn walk_single_quoted(line: &[u8], mut i: usize, emit: &mut impl FnMut(Piece)) -> Result<usize, RequestError> {
    loop {
        match line.get(i) {
            None => return Err(RequestError::UnbalancedQuotes),
            Some(b'\\') if line.get(i + 1) == Some(&b'\'') => {
                emit(Piece::Byte(b'\''));
                i += 2;
            }
            Some(b'\'') => return after_closing_quote(line, i + 1),
            Some(_) => {
                emit(Piece::Input(i));
                i += 1;
            }
        }
    }
}

/// A closing quote ends the argument; anything but whitespace right after it
/// is rejected, as Redis does, so `"a"b` is not silently read as `ab`.
fn after_closing_quote(line: &[u8], i: usize) -> Result<usize, RequestError> {
    match line.get(i) {
        Some(&b) if !is_blank(b) => Err(RequestError::UnbalancedQuotes),
        _ => Ok(i),
    }
}

/// C `isspace` in the C locale: the bytes skipped between arguments.
///
/// Note that only space, tab, CR and LF end an unquoted argument; vertical tab
/// and form feed are skipped before an argument but kept inside one, as in Redis.
#[inline]
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

#[inline]
fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &[u8]) -> Result<Vec<Vec<u8>>, RequestError> {
        let mut out = CommandArgs::new();
        split_inline(line, 0, &mut out)?;
        Ok(out.to_vec(line))
    }

    fn words(ws: &[&[u8]]) -> Vec<Vec<u8>> {
        ws.iter().map(|w| w.to_vec()).collect()
    }

    #[test]
    fn plain_words_separated_by_any_whitespace() {
        assert_eq!(split(b"SET key value").unwrap(), words(&[b"SET", b"key", b"value"]));
        assert_eq!(split(b"  a \t b\r c  ").unwrap(), words(&[b"a", b"b", b"c"]));
        assert_eq!(split(b"").unwrap(), words(&[]));
        assert_eq!(split(b"   \t ").unwrap(), words(&[]));
    }

    #[test]
    fn vertical_tab_and_form_feed_are_skipped_before_but_kept_inside() {
        assert_eq!(split(b"\x0b\x0ca\x0bb c").unwrap(), words(&[b"a\x0bb", b"c"]));
    }

    #[test]
    fn plain_words_are_zero_copy() {
        let line = b"GET  foo";
        let mut out = CommandArgs::new();
        split_inline(line, 100, &mut out).unwrap();
        let mut buf = vec![0u8; 100];
        buf.extend_from_slice(line);
        assert_eq!(out.to_vec(&buf), words(&[b"GET", b"foo"]));
        assert!(out.arg_ref(1).is_some());
    }

    #[test]
    fn double_quotes_and_their_escapes() {
        assert_eq!(split(br#"SET "a b" c"#).unwrap(), words(&[b"SET", b"a b", b"c"]));
        assert_eq!(split(br#""\n\r\t\b\a\\\"""#).unwrap(), words(&[b"\n\r\t\x08\x07\\\""]));
        assert_eq!(split(br#""\x41\x6a\xFf""#).unwrap(), words(&[b"Aj\xff"]));
        assert_eq!(split(br#""\q\'""#).unwrap(), words(&[b"q'"]));
        // \x without two hex digits is just the letter x.
        assert_eq!(split(br#""\xZ1" "\x4""#).unwrap(), words(&[b"xZ1", b"x4"]));
        assert_eq!(split(br#""" x"#).unwrap(), words(&[b"", b"x"]));
        // Quoted CR and single quotes are literal.
        assert_eq!(split(b"\"a\rb'c\"").unwrap(), words(&[b"a\rb'c"]));
    }

    #[test]
    fn single_quotes_only_escape_the_quote() {
        assert_eq!(split(br#"'a\'b' '\n\"'"#).unwrap(), words(&[b"a'b", br#"\n\""#]));
        assert_eq!(split(b"''").unwrap(), words(&[b""]));
        // `\\` is two literal backslashes, so the second escapes the closing quote.
        assert_eq!(split(br"'a\\'"), Err(RequestError::UnbalancedQuotes));
    }

    #[test]
    fn quote_may_start_mid_argument() {
        assert_eq!(split(br#"ab"c d" e"#).unwrap(), words(&[b"abc d", b"e"]));
        assert_eq!(split(b"x'y z'").unwrap(), words(&[b"xy z"]));
    }

    #[test]
    fn closing_quote_must_be_followed_by_whitespace() {
        assert_eq!(split(br#""a"b"#), Err(RequestError::UnbalancedQuotes));
        assert_eq!(split(b"'a'b"), Err(RequestError::UnbalancedQuotes));
        assert_eq!(split(br#""a""b""#), Err(RequestError::UnbalancedQuotes));
        assert_eq!(split(b"\"a\"\x0bb").unwrap(), words(&[b"a", b"b"]));
        assert_eq!(split(b"\"a\"\r").unwrap(), words(&[b"a"]));
    }

    #[test]
    fn unterminated_quotes_are_errors() {
        assert_eq!(split(br#"SET "abc"#), Err(RequestError::UnbalancedQuotes));
        assert_eq!(split(br#""abc\""#), Err(RequestError::UnbalancedQuotes));
        assert_eq!(split(br#""abc\"#), Err(RequestError::UnbalancedQuotes));
        assert_eq!(split(b"'abc"), Err(RequestError::UnbalancedQuotes));
        assert_eq!(split(br"'abc\'"), Err(RequestError::UnbalancedQuotes));
        assert_eq!(split(b"\""), Err(RequestError::UnbalancedQuotes));
    }

    #[test]
    fn error_leaves_earlier_arguments_untouched() {
        let mut out = CommandArgs::new();
        out.push_owned(b"keep");
        assert_eq!(split_inline(b"a b \"c", 0, &mut out), Err(RequestError::UnbalancedQuotes));
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn quoted_strings_without_escapes_are_zero_copy_and_others_are_decoded() {
        let line = br#""plain" "esc\tx" mi"xed""#;
        let mut out = CommandArgs::new();
        split_inline(line, 0, &mut out).unwrap();
        assert_eq!(out.to_vec(line), words(&[b"plain", b"esc\tx", b"mixed"]));
        // The zero-copy argument reads back from the input; the others do not need it.
        assert_eq!(out.get(b"", 0), None);
        assert_eq!(out.get(b"", 1), Some(&b"esc\tx"[..]));
        assert_eq!(out.get(b"", 2), Some(&b"mixed"[..]));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// Write `arg` so that the splitter must give it back unchanged, choosing
        /// among the quoting styles by `style`.
        fn quote(arg: &[u8], style: u8, line: &mut Vec<u8>) {
            let plain = !arg.is_empty() && arg.iter().all(|&b| !is_blank(b) && b != b'"' && b != b'\'' && b != 0);
            match style % 3 {
                0 if plain => line.extend_from_slice(arg),
                1 if !arg.contains(&b'\\') => {
                    line.push(b'\'');
                    for &b in arg {
                        if b == b'\'' {
                            line.push(b'\\');
                        }
                        line.push(b);
                    }
                    line.push(b'\'');
                }
                _ => {
                    line.push(b'"');
                    for &b in arg {
                        match b {
                            b'"' | b'\\' => line.extend_from_slice(&[b'\\', b]),
                            b'\n' => line.extend_from_slice(b"\\n"),
                            b if b.is_ascii_alphanumeric() || b == b' ' => line.push(b),
                            b => line.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
                        }
                    }
                    line.push(b'"');
                }
            }
        }

        proptest! {
            #[test]
            fn quoted_arguments_roundtrip(
                items in prop::collection::vec(
                    (prop::collection::vec(any::<u8>(), 0..12), any::<u8>()), 0..8),
                gaps in prop::collection::vec(
                    prop_oneof![Just(&b" "[..]), Just(&b"\t"[..]), Just(&b"  \x0b "[..]), Just(&b"\r"[..])], 9),
            ) {
                let mut line = gaps[8].to_vec();
                for (i, (arg, style)) in items.iter().enumerate() {
                    if i > 0 {
                        line.extend_from_slice(gaps[i]);
                    }
                    quote(arg, *style, &mut line);
                }
                let expected: Vec<Vec<u8>> = items.iter().map(|(a, _)| a.clone()).collect();
                prop_assert_eq!(split(&line), Ok(expected));
            }

            #[test]
            fn any_line_splits_without_panicking(
                line in prop::collection::vec(
                    prop_oneof![Just(b'"'), Just(b'\''), Just(b'\\'), Just(b'x'), Just(b' '), any::<u8>()],
                    0..40),
            ) {
                let mut out = CommandArgs::new();
                if split_inline(&line, 0, &mut out).is_ok() {
                    prop_assert!(out.iter(&line).count() == out.len());
                } else {
                    prop_assert!(out.is_empty());
                }
            }
        }
    }

    #[test]
    fn nul_bytes_are_ordinary_bytes() {
        assert_eq!(split(b"a\0b \"c\0\"").unwrap(), words(&[b"a\0b", b"c\0"]));
    }
}
