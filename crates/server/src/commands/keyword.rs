//! A command's keyword argument (`NX`, `WITHSCORES`, `BYSCORE`, `MIN`…)
//! folded to lower case in place, for a `match` on lower-case literals.
//!
//! `arg.to_ascii_lowercase()` reads as well but allocates, and ZADD's flag
//! loop runs it on the first score of every call: a malloc and a free per
//! command on a hot path, for a word of at most a dozen letters.

/// Longest keyword any command matches through [`Keyword`] (`WITHSCORES`,
/// `FROMLONLAT` and `FROMMEMBER` have 10 letters).
const KEYWORD_MAX: usize = 16;

/// An argument in lower case, when it is short enough to be a keyword.
pub(super) struct Keyword {
    folded: [u8; KEYWORD_MAX],
    len: usize,
}

impl Keyword {
    /// `arg` folded to lower case. An argument longer than every keyword
    /// folds to the empty string, which no keyword is.
    #[inline]
    pub(super) fn of(arg: &[u8]) -> Keyword {
        let mut folded = [0u8; KEYWORD_MAX];
        let len = if arg.len() <= KEYWORD_MAX { arg.len() } else { 0 };
        for (to, from) in folded.iter_mut().zip(&arg[..len]) {
            *to = from.to_ascii_lowercase();
        }
        Keyword { folded, len }
    }

    /// The folded text.
    #[inline]
    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.folded[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_short_arguments_and_blanks_long_ones() {
        assert_eq!(Keyword::of(b"WithScores").as_bytes(), b"withscores");
        assert_eq!(Keyword::of(b"nx").as_bytes(), b"nx");
        assert_eq!(Keyword::of(b"").as_bytes(), b"");
        // Bytes that are no ASCII letters stay as they are.
        assert_eq!(Keyword::of(b"1.5\xff").as_bytes(), b"1.5\xff");
        assert_eq!(Keyword::of(b"ABCDEFGHIJKLMNOP").as_bytes(), b"abcdefghijklmnop");
        // One past the longest: no keyword, so it must match none.
        assert_eq!(Keyword::of(b"WITHSCORESWITHSCO").as_bytes(), b"");
    }
}
