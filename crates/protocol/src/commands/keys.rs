//! Finding a request's keys from its command's key specs.
//!
//! Three users need the same answer: `COMMAND GETKEYS`, the shards a
//! transaction reserves, and the ACL check that runs before every command
//! of a restricted user. The last one runs on the hot path, so the walk
//! hands each key to a visitor instead of collecting them: no allocation.
//!
//! The specs are walked as Redis walks them, and where Redis replaces the
//! specs by a command's own key finder (flags that depend on the arguments,
//! or a spec that cannot find every key) the same corrections are made:
//! `SET` without `GET` only overwrites, `BITFIELD` with only `GET`s only
//! reads, `SORT … STORE dst` writes `dst`, and `MIGRATE … "" … KEYS k…`
//! names no key at its fixed position.

use super::{id, BeginSearch, CommandSpec, FindKeys, KeySpecFlags};
use std::sync::OnceLock;

use crate::number::parse_i64;

/// Why a walk found no keys to visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// Call `visit(position, flags)` for each key of the request whose
/// arguments `arg` gives (`arg(0)` is the command name; `argc` of them).
/// `visit` returns false to stop the walk. Specs flagged `not_key`
/// (channels routed like keys) are skipped, as Redis's default key lookup
/// skips them. A key count that is not a non-negative integer, or keys
/// past the last argument, make the request malformed; keys visited before
/// that was found stay visited.
pub fn for_each_key<'a>(
    spec: &CommandSpec,
    argc: usize,
    arg: impl Fn(usize) -> &'a [u8],
    mut visit: impl FnMut(usize, KeySpecFlags) -> bool,
) -> Result<(), Malformed> {
    let argc = argc as i64;
    let flags_of = |ks_flags: KeySpecFlags| adjusted_flags(spec, ks_flags, argc as usize, &arg);
    let skip_first = spec.id == id::MIGRATE && migrate_uses_keys(argc as usize, &arg);
    for ks in spec.key_specs {
        if ks.flags.contains(KeySpecFlags::NOT_KEY) {
            continue;
        }
        let first = match ks.begin_search {
            BeginSearch::Index(i) => i64::from(i),
            BeginSearch::Keyword { keyword, start_from } => {
                let word = keyword.as_bytes();
                let found = if start_from >= 0 {
                    (i64::from(start_from)..argc).find(|&i| arg(i as usize).eq_ignore_ascii_case(word))
                } else {
                    let start = argc + i64::from(start_from);
                    (1..=start).rev().find(|&i| arg(i as usize).eq_ignore_ascii_case(word))
                };
                match found {
                    Some(i) => i + 1,
                    None => continue,
                }
            }
            BeginSearch::Unknown => continue,
        };
        if first <= 0 {
            continue;
        }
        let flags = flags_of(ks.flags);
        let (start, last, step) = match ks.find_keys {
            FindKeys::Range { last_key, key_step, limit } => {
                let last = if last_key >= 0 {
                    first + i64::from(last_key)
                } else if last_key == -1 && limit > 1 {
                    first + (argc - first) / i64::from(limit) - 1
                } else {
                    argc + i64::from(last_key)
                };
                (first, last, i64::from(key_step))
            }
            FindKeys::Keynum { keynum_index, first_key, key_step } => {
                let idx = first + i64::from(keynum_index);
                if idx >= argc {
                    return Err(Malformed);
                }
                let n = parse_i64(arg(idx as usize)).ok_or(Malformed)?;
                if n < 0 {
                    return Err(Malformed);
                }
                let start = first + i64::from(first_key);
                // Redis narrows the count to a C int, so a huge count wraps
                // the same way there (and usually finds no keys).
                let last = start + i64::from(n as i32) - 1;
                if n == 0 {
                    continue;
                }
                (start, last, i64::from(key_step))
            }
            FindKeys::Unknown => continue,
        };
        // Out of bounds means a malformed request, as in Redis.
        if last >= argc || last < start || start >= argc {
            return Err(Malformed);
        }
        let step = step.max(1);
        let mut i = start;
        while i <= last {
            let skip = skip_first && i == 3;
            if !skip && !visit(i as usize, flags) {
                return Ok(());
            }
            i += step;
        }
    }
    if spec.id == id::SORT {
        if let Some(at) = sort_store_position(argc as usize, &arg) {
            visit(at, KeySpecFlags::OW.union(KeySpecFlags::UPDATE));
        }
    }
    Ok(())
}

/// Where the one key of `spec` is, with its flags for these arguments,
/// when the command has exactly one key at a fixed position (GET, SET,
/// INCR, HSET, LPUSH…): most commands, for which a check before each
/// request then needs no walk. Read from a table built once from the
/// command table.
#[inline]
pub fn single_key<'a>(
    spec: &CommandSpec,
    argc: usize,
    arg: impl Fn(usize) -> &'a [u8],
) -> Option<(usize, KeySpecFlags)> {
    let (at, flags) = single_key_spec(spec)?;
    Some((at, adjusted_flags(spec, flags, argc, &arg)))
}

/// [`single_key`] before the flags that depend on the arguments are known
/// (a spec flagged `variable_flags` then carries the table's flags).
#[inline]
pub fn single_key_spec(spec: &CommandSpec) -> Option<(usize, KeySpecFlags)> {
    static SINGLE: OnceLock<Vec<Option<(usize, KeySpecFlags)>>> = OnceLock::new();
    let table = SINGLE.get_or_init(|| {
        let mut all = vec![None; super::COMMAND_COUNT];
        for spec in super::COMMANDS.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter())) {
            if let Some(slot) = all.get_mut(spec.id.index()) {
                *slot = fixed_single_key(spec);
            }
        }
        all
    });
    table.get(spec.id.index()).copied().flatten()
}

fn fixed_single_key(spec: &CommandSpec) -> Option<(usize, KeySpecFlags)> {
    let [ks] = spec.key_specs else { return None };
    if ks.flags.contains(KeySpecFlags::NOT_KEY) || spec.id == id::SORT || spec.id == id::MIGRATE {
        return None;
    }
    match (ks.begin_search, ks.find_keys) {
        (BeginSearch::Index(at), FindKeys::Range { last_key: 0, .. }) if at > 0 => Some((at as usize, ks.flags)),
        _ => None,
    }
}

/// The flags of a key of a command whose flags depend on its arguments.
#[inline(always)]
fn adjusted_flags<'a>(
    spec: &CommandSpec,
    flags: KeySpecFlags,
    argc: usize,
    arg: &impl Fn(usize) -> &'a [u8],
) -> KeySpecFlags {
    if !flags.contains(KeySpecFlags::VARIABLE_FLAGS) {
        return flags;
    }
    varied_flags(spec, flags, argc, arg)
}

/// [`adjusted_flags`] of a key spec flagged `variable_flags`.
#[inline(never)]
fn varied_flags<'a>(
    spec: &CommandSpec,
    flags: KeySpecFlags,
    argc: usize,
    arg: &impl Fn(usize) -> &'a [u8],
) -> KeySpecFlags {
    let any = |from: usize, words: &[&[u8]]| (from..argc).any(|i| words.iter().any(|w| arg(i).eq_ignore_ascii_case(w)));
    match spec.id {
        // Without GET the old value is neither read nor returned.
        id::SET if !any(3, &[b"get"]) => KeySpecFlags::OW.union(KeySpecFlags::UPDATE),
        id::SET => KeySpecFlags::RW.union(KeySpecFlags::ACCESS).union(KeySpecFlags::UPDATE),
        // Only GET operations: the bitmap is read, not written.
        id::BITFIELD if !any(2, &[b"set", b"incrby"]) => KeySpecFlags::RO.union(KeySpecFlags::ACCESS),
        id::BITFIELD => KeySpecFlags::RW.union(KeySpecFlags::ACCESS).union(KeySpecFlags::UPDATE),
        _ => flags,
    }
}

/// Whether a MIGRATE names its keys after `KEYS`, leaving the key
/// position empty.
fn migrate_uses_keys<'a>(argc: usize, arg: &impl Fn(usize) -> &'a [u8]) -> bool {
    argc > 3 && arg(3).is_empty() && (6..argc).any(|i| arg(i).eq_ignore_ascii_case(b"keys"))
}

/// Where SORT's `STORE` destination is (the command name at 0), which its
/// key specs cannot say: the last `STORE`, found as Redis finds it,
/// skipping the arguments of `LIMIT`, `GET` and `BY`.
fn sort_store_position<'a>(argc: usize, arg: &impl Fn(usize) -> &'a [u8]) -> Option<usize> {
    let mut found = None;
    let mut i = 2;
    while i < argc {
        let a = arg(i);
        if a.eq_ignore_ascii_case(b"limit") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"get") || a.eq_ignore_ascii_case(b"by") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"store") && i + 1 < argc {
            found = Some(i + 1);
        }
        i += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::lookup;

    fn keys(words: &[&str]) -> Result<Vec<(usize, Vec<&'static str>)>, Malformed> {
        let spec = lookup(words[0].as_bytes()).expect("known");
        let mut out = Vec::new();
        for_each_key(
            spec,
            words.len(),
            |i| words[i].as_bytes(),
            |i, f| {
                out.push((i, f.names().collect()));
                true
            },
        )?;
        Ok(out)
    }

    #[test]
    fn keys_come_with_redis_flags() {
        assert_eq!(keys(&["get", "k"]), Ok(vec![(1, vec!["RO", "access"])]));
        assert_eq!(keys(&["set", "k", "v"]), Ok(vec![(1, vec!["OW", "update"])]));
        assert_eq!(keys(&["set", "k", "v", "GET"]), Ok(vec![(1, vec!["RW", "access", "update"])]));
        assert_eq!(keys(&["bitfield", "k", "GET", "u8", "0"]), Ok(vec![(1, vec!["RO", "access"])]));
        assert_eq!(keys(&["bitfield", "k", "INCRBY", "u8", "0", "1"]).map(|k| k.len()), Ok(1));
        assert_eq!(
            keys(&["mset", "a", "1", "b", "2"]).map(|k| k.iter().map(|x| x.0).collect::<Vec<_>>()),
            Ok(vec![1, 3])
        );
        assert_eq!(keys(&["eval", "s", "2", "a", "b", "x"]).map(|k| k.len()), Ok(2));
        assert_eq!(keys(&["eval", "s", "0"]), Ok(vec![]));
        assert_eq!(keys(&["eval", "s", "3", "a"]), Err(Malformed));
        assert_eq!(keys(&["eval", "s", "-1"]), Err(Malformed));
        let sorted = keys(&["sort", "l", "BY", "w", "STORE", "d"]).expect("keys");
        assert_eq!(sorted.iter().map(|k| k.0).collect::<Vec<_>>(), vec![1, 5]);
        let migrate = keys(&["migrate", "h", "1", "", "0", "5", "KEYS", "a", "b"]).expect("keys");
        assert_eq!(migrate.iter().map(|k| k.0).collect::<Vec<_>>(), vec![7, 8]);
    }

    #[test]
    fn single_keys_agree_with_the_walk() {
        for spec in crate::commands::COMMANDS.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter())) {
            let words: Vec<String> =
                (0..8).map(|i| if i == 0 { spec.name.to_string() } else { format!("a{i}") }).collect();
            let Some((at, flags)) = single_key(spec, words.len(), |i| words[i].as_bytes()) else { continue };
            let mut found = Vec::new();
            let walked = for_each_key(
                spec,
                words.len(),
                |i| words[i].as_bytes(),
                |i, f| {
                    found.push((i, f));
                    true
                },
            );
            assert!(walked.is_err() || found == vec![(at, flags)], "{}: {found:?}", spec.name);
        }
        let one = |words: &[&str]| {
            let spec = crate::commands::lookup(words[0].as_bytes()).expect("known");
            single_key(spec, words.len(), |i| words[i].as_bytes()).map(|(at, f)| (at, f.names().collect::<Vec<_>>()))
        };
        assert_eq!(one(&["get", "k"]), Some((1, vec!["RO", "access"])));
        assert_eq!(one(&["set", "k", "v"]), Some((1, vec!["OW", "update"])));
        assert_eq!(one(&["set", "k", "v", "get"]), Some((1, vec!["RW", "access", "update"])));
        assert_eq!(one(&["mget", "a", "b"]), None);
    }

    #[test]
    fn a_visitor_can_stop_the_walk() {
        let spec = lookup(b"mget").expect("known");
        let words = ["mget", "a", "b", "c"];
        let mut seen = 0;
        let done = for_each_key(
            spec,
            4,
            |i| words[i].as_bytes(),
            |_, _| {
                seen += 1;
                false
            },
        );
        assert_eq!((done, seen), (Ok(()), 1));
    }
}
