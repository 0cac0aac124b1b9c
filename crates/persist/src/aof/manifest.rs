//! The manifest of Redis 7's multi-part append-only file: which files of
//! `appenddirname` make up the log, in order.
//!
//! ```text
//! file appendonly.aof.1.base.rdb seq 1 type b
//! file appendonly.aof.1.incr.aof seq 1 type i
//! ```
//!
//! One line per file: key/value pairs in any order (`file`, `seq`, `type`
//! are needed, other keys are skipped, as newer servers add some), split
//! as Redis splits them (quotes and escapes, see
//! [`kvik_protocol::resp::inline`]). The base file (`b`, at most one) comes
//! first, then the history files (`h`, left from before a rewrite, to be
//! deleted), then the incremental files (`i`) in ascending sequence. The
//! reader follows Redis 7.0's `aofLoadManifestFromFile` rule by rule, with
//! its error texts, so a manifest means the same to both servers.

use kvik_protocol::args::CommandArgs;
use kvik_protocol::resp::inline::split_inline;

/// The longest line Redis reads from a manifest, newline included.
pub const MAX_LINE: usize = 1024;

/// What a file of the log holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// The base: the keyspace when the log was last rewritten (an RDB file
    /// or commands).
    Base,
    /// A file a rewrite made obsolete, still to be deleted.
    History,
    /// Commands since the base, in order.
    Incr,
}

impl FileKind {
    /// The letter of the `type` key.
    pub fn letter(self) -> u8 {
        match self {
            FileKind::Base => b'b',
            FileKind::History => b'h',
            FileKind::Incr => b'i',
        }
    }
}

/// One file of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// Its name inside `appenddirname` (never a path).
    pub name: String,
    /// Its sequence number.
    pub seq: i64,
    pub kind: FileKind,
}

/// The files of the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<FileInfo>,
    pub history: Vec<FileInfo>,
    /// In ascending sequence.
    pub incr: Vec<FileInfo>,
}

/// Why a manifest was refused: Redis's text, and the line it was found on
/// (1-based, with the line's text trimmed) when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    pub reason: &'static str,
    pub line: Option<(usize, String)>,
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.line {
            Some((n, text)) => write!(f, "{} (manifest line {n}: '{text}')", self.reason),
            None => f.write_str(self.reason),
        }
    }
}

impl std::error::Error for ManifestError {}

const INVALID: &str = "Invalid AOF manifest file format";

impl Manifest {
    /// Read a manifest's bytes.
    pub fn parse(data: &[u8]) -> Result<Manifest, ManifestError> {
        let fail = |reason, line: Option<(usize, &[u8])>| ManifestError {
            reason,
            line: line.map(|(n, t)| (n, String::from_utf8_lossy(t).into_owned())),
        };
        if data.is_empty() {
            return Err(fail("Found an empty AOF manifest", None));
        }
        let mut manifest = Manifest::default();
        let mut max_seq = 0i64;
        let mut rest = data;
        let mut number = 0;
        while !rest.is_empty() {
            // As `fgets` into a buffer of MAX_LINE: a line, or its first
            // MAX_LINE bytes when it is longer.
            let take = rest.iter().position(|&b| b == b'\n').map_or(rest.len(), |i| i + 1).min(MAX_LINE);
            let (chunk, tail) = rest.split_at(take);
            rest = tail;
            number += 1;
            if chunk.first() == Some(&b'#') {
                continue;
            }
            if chunk.last() != Some(&b'\n') {
                return Err(fail("The AOF manifest file contains too long line", None));
            }
            let line = trim(chunk);
            let here = Some((number, line));
            if line.is_empty() {
                return Err(fail(INVALID, here));
            }
            let info = parse_line(line).map_err(|reason| fail(reason, here))?;
            match info.kind {
                FileKind::Base if manifest.base.is_some() => {
                    return Err(fail("Found duplicate base file information", here));
                }
                FileKind::Base => manifest.base = Some(info),
                FileKind::History => manifest.history.push(info),
                FileKind::Incr if info.seq <= max_seq => {
                    return Err(fail("Found a non-monotonic sequence number", here));
                }
                FileKind::Incr => {
                    max_seq = info.seq;
                    manifest.incr.push(info);
                }
            }
        }
        Ok(manifest)
    }

    /// The manifest's text, as Redis writes it: the base, the history
    /// files, the incremental files.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for info in self.base.iter().chain(&self.history).chain(&self.incr) {
            out.extend_from_slice(b"file ");
            put_name(&mut out, info.name.as_bytes());
            out.extend_from_slice(format!(" seq {} type {}\n", info.seq, char::from(info.kind.letter())).as_bytes());
        }
        out
    }

    /// The files to read, in order: the base, then the incremental files.
    pub fn files(&self) -> impl Iterator<Item = &FileInfo> {
        self.base.iter().chain(&self.incr)
    }
}

/// The manifest's name for `appendfilename` (`appendonly.aof.manifest`).
pub fn manifest_name(appendfilename: &str) -> String {
    format!("{appendfilename}.manifest")
}

/// A base file's name: `appendonly.aof.<seq>.base.rdb` (or `.aof` for one
/// written as commands).
pub fn base_name(appendfilename: &str, seq: i64, rdb: bool) -> String {
    format!("{appendfilename}.{seq}.base.{}", if rdb { "rdb" } else { "aof" })
}

/// An incremental file's name: `appendonly.aof.<seq>.incr.aof`.
pub fn incr_name(appendfilename: &str, seq: i64) -> String {
    format!("{appendfilename}.{seq}.incr.aof")
}

/// An incremental file of RESPB frames: `appendonly.aof.<seq>.incr.respb`
/// (kvik's own form, which redis-server does not read).
pub fn incr_name_respb(appendfilename: &str, seq: i64) -> String {
    format!("{appendfilename}.{seq}.incr.respb")
}

/// Whether the file of the log named `name` holds RESPB frames rather
/// than RESP commands: the name says so, so that one file never holds
/// both.
pub fn is_respb(name: &str) -> bool {
    name.ends_with(".respb")
}

/// `line` without Redis's trimmed characters at either end.
fn trim(line: &[u8]) -> &[u8] {
    let cut = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let start = line.iter().position(|b| !cut(b)).unwrap_or(line.len());
    let end = line.iter().rposition(|b| !cut(b)).map_or(start, |i| i + 1);
    &line[start..end]
}

/// One file's line: its key/value pairs.
fn parse_line(line: &[u8]) -> Result<FileInfo, &'static str> {
    let mut args = CommandArgs::new();
    split_inline(line, 0, &mut args).map_err(|_| INVALID)?;
    let words = args.to_vec(line);
    // Six words at least, in pairs, as Redis asks (more for later keys).
    if words.len() < 6 || !words.len().is_multiple_of(2) {
        return Err(INVALID);
    }
    let (mut name, mut seq, mut kind) = (None, 0i64, 0u8);
    for pair in words.chunks_exact(2) {
        let (key, value) = (&pair[0], &pair[1]);
        if key.eq_ignore_ascii_case(b"file") {
            if value.iter().any(|&b| b == b'/' || b == b'\\') {
                return Err("File can't be a path, just a filename");
            }
            name = Some(String::from_utf8(value.clone()).map_err(|_| INVALID)?);
        } else if key.eq_ignore_ascii_case(b"seq") {
            seq = atoll(value);
        } else if key.eq_ignore_ascii_case(b"type") {
            kind = value.first().copied().unwrap_or(0);
        }
    }
    let name = name.filter(|n| !n.is_empty()).ok_or(INVALID)?;
    if seq == 0 || kind == 0 {
        return Err(INVALID);
    }
    let kind = match kind {
        b'b' => FileKind::Base,
        b'h' => FileKind::History,
        b'i' => FileKind::Incr,
        _ => return Err("Unknown AOF file type"),
    };
    Ok(FileInfo { name, seq, kind })
}

/// C's `atoll`, as Redis reads a sequence number: leading blanks, a sign,
/// the digits up to the first other byte; 0 when there are none (and the
/// ends of the range past them).
fn atoll(text: &[u8]) -> i64 {
    let mut rest = text;
    while let [b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c', tail @ ..] = rest {
        rest = tail;
    }
    let negative = rest.first() == Some(&b'-');
    if matches!(rest.first(), Some(b'-' | b'+')) {
        rest = &rest[1..];
    }
    let mut n: i64 = 0;
    for &b in rest.iter().take_while(|b| b.is_ascii_digit()) {
        let digit = i64::from(b - b'0');
        n = if negative {
            n.saturating_mul(10).saturating_sub(digit)
        } else {
            n.saturating_mul(10).saturating_add(digit)
        };
    }
    n
}

/// A file name as Redis writes it in a manifest: as it is, or quoted with
/// escapes when it holds a blank, a quote, a backslash or an unprintable byte.
fn put_name(out: &mut Vec<u8>, name: &[u8]) {
    let plain = |b: &u8| b.is_ascii_graphic() && !matches!(b, b'\\' | b'"');
    if name.iter().all(plain) {
        out.extend_from_slice(name);
        return;
    }
    out.push(b'"');
    for &b in name {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            b' ' => out.push(b' '),
            b if b.is_ascii_graphic() => out.push(b),
            b => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> &'static str {
        Manifest::parse(text.as_bytes()).expect_err(text).reason
    }

    #[test]
    fn redis_manifests_read_and_render_back() {
        let text = "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n";
        let m = Manifest::parse(text.as_bytes()).expect("valid");
        assert_eq!(m.base.as_ref().map(|b| (b.name.as_str(), b.seq)), Some(("appendonly.aof.1.base.rdb", 1)));
        assert_eq!(m.incr.len(), 1);
        assert_eq!(m.render(), text.as_bytes());
        let names: Vec<&str> = m.files().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["appendonly.aof.1.base.rdb", "appendonly.aof.1.incr.aof"]);
        assert_eq!(base_name("appendonly.aof", 1, true), "appendonly.aof.1.base.rdb");
        assert_eq!(incr_name("appendonly.aof", 3), "appendonly.aof.3.incr.aof");
        assert_eq!(manifest_name("appendonly.aof"), "appendonly.aof.manifest");
    }

    #[test]
    fn keys_come_in_any_order_and_later_keys_are_skipped() {
        let m = Manifest::parse(b"# a comment\nTYPE i SEQ 7 FILE x.aof startoffset 0 endoffset 10\n").expect("valid");
        assert_eq!(m.incr, [FileInfo { name: "x.aof".into(), seq: 7, kind: FileKind::Incr }]);
        let m = Manifest::parse(b"file \"a b.aof\" seq 2 type h\n").expect("quoted names");
        assert_eq!(m.history[0].name, "a b.aof");
        assert_eq!(m.render(), b"file \"a b.aof\" seq 2 type h\n");
    }

    #[test]
    fn bad_manifests_are_refused_with_redis_reasons() {
        assert_eq!(err(""), "Found an empty AOF manifest");
        assert_eq!(err("file a seq 1 type b"), "The AOF manifest file contains too long line");
        assert_eq!(
            err(&format!("file {} seq 1 type b\n", "a".repeat(MAX_LINE))),
            "The AOF manifest file contains too long line"
        );
        assert_eq!(err("\n"), INVALID);
        assert_eq!(err("file a seq 1\n"), INVALID);
        assert_eq!(err("file a seq 1 type\n"), INVALID);
        assert_eq!(err("file a seq x type b\n"), INVALID);
        assert_eq!(err("file \"a seq 1 type b\n"), INVALID);
        assert_eq!(err("file dir/a seq 1 type b\n"), "File can't be a path, just a filename");
        assert_eq!(err("file a seq 1 type b\nfile b seq 2 type b\n"), "Found duplicate base file information");
        assert_eq!(err("file a seq 2 type i\nfile b seq 2 type i\n"), "Found a non-monotonic sequence number");
        assert_eq!(err("file a seq 1 type x\n"), "Unknown AOF file type");
        let e = Manifest::parse(b"file a seq 1 type b\nfile a seq 1 type x\n").expect_err("bad type");
        assert_eq!(e.line, Some((2, "file a seq 1 type x".into())));
    }

    #[test]
    fn sequence_numbers_read_as_atoll() {
        assert_eq!(atoll(b" 42x"), 42);
        assert_eq!(atoll(b"-3"), -3);
        assert_eq!(atoll(b"99999999999999999999"), i64::MAX);
        assert_eq!(atoll(b""), 0);
    }
}
