//! Redis's glob-style pattern matching (`*`, `?`, `[...]`, `\` escapes), used
//! by `COMMAND LIST FILTERBY PATTERN` and, later, KEYS and SCAN MATCH.

/// Whether `string` matches `pattern`, as Redis's `stringmatchlen` decides.
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    // Iterative with one backtrack point for the last `*`: linear in practice
    // and no recursion depth a client could exhaust.
    let (mut p, mut s) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    let eq = |a: u8, b: u8| if nocase { a.eq_ignore_ascii_case(&b) } else { a == b };
    while s < string.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, s));
                    continue;
                }
                b'?' => {
                    p += 1;
                    s += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class(pattern, p, string[s], nocase) {
                        if matched {
                            p = next;
                            s += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if eq(pattern[p + 1], string[s]) {
                        p += 2;
                        s += 1;
                        continue;
                    }
                }
                c => {
                    if eq(c, string[s]) {
                        p += 1;
                        s += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, ss)) => {
                p = sp;
                s = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Match `c` against the class starting at `pattern[start] == b'['`.
/// Returns whether it matched and the index after the class.
fn class(pattern: &[u8], start: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let fold = |b: u8| if nocase { b.to_ascii_lowercase() } else { b };
    let c = fold(c);
    let mut i = start + 1;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    loop {
        let &b = pattern.get(i)?;
        if b == b']' {
            break;
        }
        if b == b'\\' && i + 1 < pattern.len() {
            if fold(pattern[i + 1]) == c {
                matched = true;
            }
            i += 2;
        } else if i + 2 < pattern.len() && pattern[i + 1] == b'-' && pattern[i + 2] != b']' {
            let (mut lo, mut hi) = (fold(b), fold(pattern[i + 2]));
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            if (lo..=hi).contains(&c) {
                matched = true;
            }
            i += 3;
        } else {
            if fold(b) == c {
                matched = true;
            }
            i += 1;
        }
    }
    Some((matched != negate, i + 1))
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match(b"client*", b"client|list", false));
        assert!(glob_match(b"*|list", b"client|list", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(glob_match(b"h[a-e]llo", b"hello", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"a\\*", b"a*", false));
        assert!(!glob_match(b"a*b", b"acbd", false));
        assert!(glob_match(b"GET", b"get", true));
        assert!(glob_match(b"*", b"", false));
    }
}
