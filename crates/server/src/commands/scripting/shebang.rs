//! The `#!lua` line a Redis 7.0 script may begin with, and the flags it
//! sets: `#!lua flags=no-writes,allow-oom`.
//!
//! A script with the line declares what it does instead of being assumed
//! to do anything: without `no-writes` it counts as a writing script
//! (refused by `EVAL_RO`, and refused as a whole when the server starts it
//! over `maxmemory`, unless `allow-oom`); with `no-writes` its writes are
//! refused as `EVAL_RO`'s are. `allow-stale`, `no-cluster` and
//! `allow-cross-slot-keys` concern replicas and cluster mode, which kvik
//! does not have; they are accepted and change nothing, as for a Redis
//! standalone primary.
//!
//! The line is compiled as a comment (its `#!` read as `--`), so the
//! script's line numbers are those of its text, as in Redis.

use std::borrow::Cow;

/// What a script's `#!` line says.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flags {
    pub no_writes: bool,
    pub allow_oom: bool,
    pub allow_stale: bool,
}

/// The flags of `body`'s `#!lua` line (`None` when it has none), or
/// Redis's error for a line it refuses.
pub fn parse(body: &[u8]) -> Result<Option<Flags>, Vec<u8>> {
    if !body.starts_with(b"#!") {
        return Ok(None);
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err(b"ERR Invalid script shebang".to_vec());
    };
    let mut parts = body[..end].split(|&b| b == b' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or_default();
    if engine != b"#!lua" {
        return Err([b"ERR Unexpected engine in script shebang: ".as_slice(), engine].concat());
    }
    let mut flags = Flags::default();
    for part in parts {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err([b"ERR Unknown lua shebang option: ".as_slice(), part].concat());
        };
        if list.is_empty() {
            continue;
        }
        for flag in list.split(|&b| b == b',') {
            match flag {
                b"no-writes" => flags.no_writes = true,
                b"allow-oom" => flags.allow_oom = true,
                b"allow-stale" => flags.allow_stale = true,
                b"no-cluster" | b"allow-cross-slot-keys" => {}
                other => return Err([b"ERR Unexpected flag in script shebang: ".as_slice(), other].concat()),
            }
        }
    }
    Ok(Some(flags))
}

/// The text Lua compiles for `body`: its `#!` line turned into a comment.
pub fn source(body: &[u8]) -> Cow<'_, [u8]> {
    match body.strip_prefix(b"#!") {
        Some(rest) => Cow::Owned([b"--".as_slice(), rest].concat()),
        None => Cow::Borrowed(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_refusals_read_as_redis_reads_them() {
        assert_eq!(parse(b"return 1"), Ok(None));
        assert_eq!(parse(b"#!lua\nreturn 1"), Ok(Some(Flags::default())));
        let both = Flags { no_writes: true, allow_oom: true, allow_stale: false };
        assert_eq!(parse(b"#!lua  flags=no-writes,allow-oom,no-cluster  \nx"), Ok(Some(both)));
        assert_eq!(parse(b"#!lua flags=\nx"), Ok(Some(Flags::default())));
        assert_eq!(parse(b"#!lua"), Err(b"ERR Invalid script shebang".to_vec()));
        assert_eq!(parse(b"#!luax\n"), Err(b"ERR Unexpected engine in script shebang: #!luax".to_vec()));
        assert_eq!(parse(b"#!lua name=x\n"), Err(b"ERR Unknown lua shebang option: name=x".to_vec()));
        assert_eq!(parse(b"#!lua flags=bogus\n"), Err(b"ERR Unexpected flag in script shebang: bogus".to_vec()));
        assert_eq!(&*source(b"#!lua\nreturn 1"), b"--lua\nreturn 1");
    }
}
