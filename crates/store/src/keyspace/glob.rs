//! Glob-style pattern matching with Redis's rules (KEYS, SCAN MATCH, and
//! later PSUBSCRIBE and CONFIG GET).
//!
//! Tokens: `*` matches any run of bytes, `?` one byte, `[abc]`, `[^abc]` and
//! `[a-z]` one byte from (or not from) a set, `\x` the byte `x` literally.
//! Redis's quirks are kept because clients see them:
//! - a non-empty pattern never matches the empty string (not even `*`;
//!   KEYS and SCAN treat the pattern `*` specially before matching);
//! - a range is read before the closing bracket, so in `[a-]` the `]` is the
//!   range's end and the set runs on to the end of the pattern;
//! - a range's ends are compared as C's signed `char`, so bytes from 0x80 up
//!   sort below every ASCII byte, and reversed ranges (`[z-a]`) are swapped;
//! - an unclosed set ends at the end of the pattern, and `[]` is an empty set.
//!
//! Every token but `*` consumes exactly one byte, so the matcher keeps only
//! the most recent `*` as a backtracking point: linear memory, no recursion,
//! and no pattern can exhaust the stack.

/// True when `subject` matches `pattern`; `nocase` folds ASCII letters.
pub fn matches(pattern: &[u8], subject: &[u8], nocase: bool) -> bool {
    if subject.is_empty() {
        return pattern.is_empty();
    }
    let (mut pi, mut si) = (0, 0);
    // Where to resume after the last `*`: pattern index after it, and the
    // subject index it was last tried from.
    let mut star: Option<(usize, usize)> = None;
    while si < subject.len() {
        if pi < pattern.len() && pattern[pi] == b'*' {
            while pi < pattern.len() && pattern[pi] == b'*' {
                pi += 1;
            }
            if pi == pattern.len() {
                return true;
            }
            star = Some((pi, si));
            continue;
        }
        if pi < pattern.len() {
            let (ok, next) = token(pattern, pi, subject[si], nocase);
            if ok {
                pi = next;
                si += 1;
                continue;
            }
        }
        match star {
            Some((after, from)) => {
                star = Some((after, from + 1));
                pi = after;
                si = from + 1;
            }
            None => return false,
        }
    }
    while pi < pattern.len() && pattern[pi] == b'*' {
        pi += 1;
    }
    pi == pattern.len()
}

fn fold(b: u8, nocase: bool) -> u8 {
    if nocase {
        b.to_ascii_lowercase()
    } else {
        b
    }
}

/// Does the token at `pi` (not a `*`) match byte `c`? Also returns where the next token starts.
fn token(p: &[u8], pi: usize, c: u8, nocase: bool) -> (bool, usize) {
    match p[pi] {
        b'?' => (true, pi + 1),
        b'[' => class(p, pi + 1, c, nocase),
        b'\\' if pi + 1 < p.len() => (fold(p[pi + 1], nocase) == fold(c, nocase), pi + 2),
        b => (fold(b, nocase) == fold(c, nocase), pi + 1),
    }
}

/// A `[...]` set whose body starts at `i`.
fn class(p: &[u8], mut i: usize, c: u8, nocase: bool) -> (bool, usize) {
    let plen = p.len();
    let negate = i < plen && p[i] == b'^';
    if negate {
        i += 1;
    }
    let mut hit = false;
    loop {
        if i < plen && p[i] == b'\\' && plen - i >= 2 {
            // An escaped byte inside a set compares exactly, as Redis does.
            i += 1;
            hit |= p[i] == c;
        } else if i < plen && p[i] == b']' {
            break;
        } else if i >= plen {
            // Unclosed: the set ends with the pattern.
            i -= 1;
            break;
        } else if plen - i >= 3 && p[i + 1] == b'-' {
            let signed = |b: u8| i32::from(fold(b, nocase) as i8);
            let (mut lo, mut hi) = (signed(p[i]), signed(p[i + 2]));
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            let x = signed(c);
            hit |= lo <= x && x <= hi;
            i += 2;
        } else {
            hit |= fold(p[i], nocase) == fold(c, nocase);
        }
        i += 1;
    }
    (hit != negate, i + 1)
}

#[cfg(test)]
mod tests {
    use super::matches;

    fn m(p: &str, s: &str) -> bool {
        matches(p.as_bytes(), s.as_bytes(), false)
    }

    #[test]
    fn stars_and_question_marks() {
        assert!(m("*", "abc"));
        assert!(m("a*", "a"));
        assert!(m("a*c", "abbbc"));
        assert!(m("*a*b*", "xxaxxbxx"));
        assert!(!m("*a*b*", "xxbxxaxx"));
        assert!(m("a**b", "ab"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("*?", "a"));
        assert!(!m("a*?", "a"));
        assert!(m("***", "x"));
        assert!(m("*ab", "aab"));
        assert!(m("a*b*c*d", "aXbYbcZd"));
    }

    #[test]
    fn the_empty_string_matches_only_the_empty_pattern() {
        assert!(m("", ""));
        assert!(!m("*", ""));
        assert!(!m("a", ""));
        assert!(!m("", "a"));
    }

    #[test]
    fn sets_ranges_and_negation() {
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("[z-a]", "m"), "reversed ranges are swapped");
        assert!(!m("[]", "a"), "an empty set matches nothing");
        assert!(!m("[]a]", "]"));
        assert!(!m("[]a]", "a]"), "the first ] closes the set");
    }

    #[test]
    fn a_dash_before_the_closing_bracket_makes_a_range_to_it() {
        // `[a-]` is the range from ']' (93) to 'a' (97), unclosed.
        assert!(m("[a-]", "a"));
        assert!(m("[a-]", "_"));
        assert!(m("[a-]", "]"));
        assert!(!m("[a-]", "-"));
        assert!(!m("[a-]", "b"));
        // The set runs on to the end of the pattern.
        assert!(m("[a-]x", "x"));
        assert!(!m("[a-]x", "ax"));
    }

    #[test]
    fn unclosed_sets_end_with_the_pattern() {
        assert!(m("[abc", "b"));
        assert!(!m("[", "["));
        assert!(m("[^", "z"));
        assert!(m("a[^", "ab"));
    }

    #[test]
    fn escapes() {
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "a"));
        assert!(m("a\\?", "a?"));
        assert!(m("[\\]]", "]"));
        assert!(m("[\\-]", "-"));
        assert!(m("\\", "\\"), "a trailing backslash is literal");
        assert!(m("[\\", "\\"));
        assert!(m("*\\*", "abc*"));
    }

    #[test]
    fn high_bytes_compare_as_signed_chars_in_ranges() {
        // 'a' (97) to 0xff (-1) is the range -1..=97.
        assert!(matches(b"[a-\xff]", b"\xff", false));
        assert!(!matches(b"[a-\xff]", b"\x80", false));
        assert!(matches(b"[a-\xff]", b"0", false));
        assert!(!matches(b"[a-\xff]", b"b", false));
        assert!(matches(b"[\x80-\xff]", b"\x90", false));
    }

    #[test]
    fn case_folding() {
        assert!(matches(b"MAX*", b"maxmemory", true));
        assert!(matches(b"[A-C]x", b"bX", true));
        assert!(!matches(b"MAX*", b"maxmemory", false));
    }

    /// A direct recursive reading of the rules (each `*` tries every split
    /// that leaves at least one byte, the loop stops when the subject runs
    /// out, trailing stars are skipped), to check the backtracking matcher.
    fn reference(p: &[u8], s: &[u8]) -> bool {
        fn go(p: &[u8], mut pi: usize, s: &[u8], mut si: usize) -> bool {
            while pi < p.len() && si < s.len() {
                if p[pi] == b'*' {
                    while pi + 1 < p.len() && p[pi + 1] == b'*' {
                        pi += 1;
                    }
                    if pi + 1 == p.len() {
                        return true;
                    }
                    return (si..s.len()).any(|start| go(p, pi + 1, s, start));
                }
                let (ok, next) = super::token(p, pi, s[si], false);
                if !ok {
                    return false;
                }
                pi = next;
                si += 1;
                if si == s.len() {
                    while pi < p.len() && p[pi] == b'*' {
                        pi += 1;
                    }
                    break;
                }
            }
            pi == p.len() && si == s.len()
        }
        go(p, 0, s, 0)
    }

    #[test]
    fn agrees_with_a_recursive_reading_on_random_patterns() {
        let alphabet = b"ab*?[]^-\\";
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..20_000 {
            let plen = next(7);
            let slen = next(6);
            let p: Vec<u8> = (0..plen).map(|_| alphabet[next(alphabet.len())]).collect();
            let s: Vec<u8> = (0..slen).map(|_| alphabet[next(alphabet.len())]).collect();
            assert_eq!(
                matches(&p, &s, false),
                reference(&p, &s),
                "pattern {:?} subject {:?}",
                p.escape_ascii().to_string(),
                s.escape_ascii().to_string()
            );
        }
    }

    #[test]
    fn long_star_patterns_finish_quickly() {
        let pattern = "a*".repeat(5000) + "b";
        let subject = "a".repeat(10000);
        assert!(!m(&pattern, &subject));
    }
}
