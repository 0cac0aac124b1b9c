//! The commands of an append-only file: RESP multibulk requests one after
//! another, as Redis writes them (`*<argc>\r\n` then `$<len>\r\n<arg>\r\n`
//! for each argument), with annotation lines starting with `#` between
//! them (`#TS:<unix time>` with `aof-timestamp-enabled`).
//!
//! The reader tells a file that ends in the middle of a command (what a
//! crash during a write leaves, and what `aof-load-truncated` forgives)
//! from one that is damaged (a byte where a header must be): the first
//! reports how far the file was whole, the second where it broke. Counts
//! and lengths are untrusted: each is checked against the bytes left
//! before anything is sized by it.

use std::ops::Range;

/// How a file of commands ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// After a whole command (or an empty file).
    Whole,
    /// In the middle of a command: the bytes from `valid_up_to` on are
    /// the start of one that was never finished.
    Truncated { valid_up_to: usize },
}

/// A damaged file: what was wrong, at which byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    pub offset: usize,
    pub reason: &'static str,
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at offset {}", self.reason, self.offset)
    }
}

impl std::error::Error for FormatError {}

/// What stopped a read: the file, or the callback.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadError<E> {
    Format(FormatError),
    /// The callback refused a command (with its end offset).
    Command {
        end: usize,
        error: E,
    },
}

/// One command read from a file.
#[derive(Debug)]
pub struct Command<'a> {
    /// Its arguments, the name first.
    pub args: &'a [&'a [u8]],
    /// Where it starts in the file, and where the next one does.
    pub span: Range<usize>,
}

/// Arguments of one command at most: far above any command a server
/// writes, and what bounds the argument list the reader keeps.
pub const MAX_ARGS: usize = 1 << 20;

/// Read every command of `data`, handing each to `on_command` in order.
pub fn read<E>(data: &[u8], mut on_command: impl FnMut(Command<'_>) -> Result<(), E>) -> Result<Ending, ReadError<E>> {
    let mut at = 0;
    let mut args: Vec<&[u8]> = Vec::new();
    while at < data.len() {
        let start = at;
        match data[at] {
            b'#' => match line(data, at) {
                Some((_, next)) => at = next,
                None => return Ok(Ending::Truncated { valid_up_to: start }),
            },
            b'*' => {
                args.clear();
                match command(data, at, &mut args).map_err(ReadError::Format)? {
                    Some(next) => {
                        on_command(Command { args: &args, span: start..next })
                            .map_err(|error| ReadError::Command { end: next, error })?;
                        at = next;
                    }
                    None => return Ok(Ending::Truncated { valid_up_to: start }),
                }
            }
            _ => return Err(ReadError::Format(FormatError { offset: at, reason: "expected '*' or '#'" })),
        }
    }
    Ok(Ending::Whole)
}

/// The line starting at `at` without its `\r\n` (or `\n`), and where the
/// next one starts; `None` when the data ends first.
fn line(data: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let len = data[at..].iter().position(|&b| b == b'\n')?;
    let text = &data[at..at + len];
    Some((text.strip_suffix(b"\r").unwrap_or(text), at + len + 1))
}

/// A header `<mark><decimal>\r\n` at `at`: its number and the next offset.
/// `Ok(None)` when the data ends in it.
fn header(data: &[u8], at: usize, mark: u8) -> Result<Option<(usize, usize)>, FormatError> {
    let bad = |reason| FormatError { offset: at, reason };
    let Some(&first) = data.get(at) else { return Ok(None) };
    if first != mark {
        return Err(bad(if mark == b'*' { "expected '*'" } else { "expected '$'" }));
    }
    // A header longer than this is no header (Redis reads them into 128 bytes).
    let window = &data[at..data.len().min(at + 128)];
    let Some(len) = window.iter().position(|&b| b == b'\n') else {
        return if window.len() < 128 { Ok(None) } else { Err(bad("header line too long")) };
    };
    let digits = window[1..len].strip_suffix(b"\r").ok_or_else(|| bad("header line not ended by CRLF"))?;
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(bad("bad number in header"));
    }
    let n = std::str::from_utf8(digits).ok().and_then(|s| s.parse::<usize>().ok()).ok_or_else(|| bad("bad number"))?;
    Ok(Some((n, at + len + 1)))
}

/// The command at `at` into `args`; the offset after it, or `None` when the
/// data ends inside it.
fn command<'a>(data: &'a [u8], at: usize, args: &mut Vec<&'a [u8]>) -> Result<Option<usize>, FormatError> {
    let Some((argc, mut at)) = header(data, at, b'*')? else { return Ok(None) };
    // Every argument takes 6 bytes at least (`$0\r\n\r\n`): a count the
    // rest cannot hold is either a cut-off file or a forged count.
    if argc == 0 || argc > MAX_ARGS {
        return Err(FormatError { offset: at, reason: "bad argument count" });
    }
    for _ in 0..argc {
        let Some((len, next)) = header(data, at, b'$')? else { return Ok(None) };
        let Some(end) = next.checked_add(len) else { return Err(FormatError { offset: at, reason: "bad length" }) };
        let Some(after) = data.get(end..end.saturating_add(2)) else { return Ok(None) };
        if after.len() < 2 {
            return Ok(None);
        }
        if after != b"\r\n" {
            return Err(FormatError { offset: end, reason: "argument not ended by CRLF" });
        }
        args.push(&data[next..end]);
        at = end + 2;
    }
    Ok(Some(at))
}

/// Append `args` as one command, as Redis writes it.
pub fn put(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.push(b'*');
    out.extend_from_slice(args.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for arg in args {
        out.push(b'$');
        out.extend_from_slice(arg.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each command read, as owned arguments.
    type Read = Vec<Vec<Vec<u8>>>;

    fn all(data: &[u8]) -> (Read, Result<Ending, ReadError<()>>) {
        let mut got = Vec::new();
        let ending = read(data, |c| {
            got.push(c.args.iter().map(|a| a.to_vec()).collect());
            Ok::<(), ()>(())
        });
        (got, ending)
    }

    #[test]
    fn commands_and_annotations_read_back() {
        let mut file = Vec::new();
        put(&mut file, &[b"SELECT", b"0"]);
        file.extend_from_slice(b"#TS:1700000000\r\n");
        put(&mut file, &[b"SET", b"k", b"a\r\nb"]);
        put(&mut file, &[b"SET", b"", b""]);
        let (got, ending) = all(&file);
        assert_eq!(ending, Ok(Ending::Whole));
        assert_eq!(got.len(), 3);
        assert_eq!(got[1], [b"SET".to_vec(), b"k".to_vec(), b"a\r\nb".to_vec()]);
        assert_eq!(all(b"").1, Ok(Ending::Whole));
    }

    #[test]
    fn a_cut_file_reports_how_far_it_was_whole() {
        let mut file = Vec::new();
        put(&mut file, &[b"SET", b"a", b"1"]);
        let whole = file.len();
        put(&mut file, &[b"SET", b"b", b"2"]);
        for cut in whole + 1..file.len() {
            let (got, ending) = all(&file[..cut]);
            assert_eq!(got.len(), 1, "cut at {cut}");
            assert_eq!(ending, Ok(Ending::Truncated { valid_up_to: whole }), "cut at {cut}");
        }
        assert_eq!(all(b"#TS:17").1, Ok(Ending::Truncated { valid_up_to: 0 }));
    }

    #[test]
    fn damaged_files_are_refused_where_they_break() {
        for (data, offset) in [
            (&b"SET a 1\r\n"[..], 0),
            (b"*x\r\n", 0),
            (b"*0\r\n", 4),
            (b"*1\r\n:3\r\n", 4),
            (b"*1\r\n$3\r\nabcd\r\n", 11),
            (b"*1\r\n$-1\r\n", 4),
            (b"*99999999999999999999\r\n", 0),
            (b"*1\r\n$18446744073709551615\r\nabc", 4),
        ] {
            match all(data).1 {
                Err(ReadError::Format(e)) => assert_eq!(e.offset, offset, "{}", data.escape_ascii()),
                other => panic!("{}: {other:?}", data.escape_ascii()),
            }
        }
        let long = [b"*".as_slice(), &[b'1'; 200]].concat();
        assert!(matches!(all(&long).1, Err(ReadError::Format(_))));
    }

    #[test]
    fn the_callback_can_stop_the_read() {
        let mut file = Vec::new();
        put(&mut file, &[b"PING"]);
        let end = file.len();
        put(&mut file, &[b"PING"]);
        let got = read(&file, |c| if c.span.start == 0 { Ok(()) } else { Err("no") });
        assert_eq!(got, Err(ReadError::Command { end: 2 * end, error: "no" }));
    }
}
