//! Passwords as Redis keeps them: the SHA-256 of the clear text, in
//! lowercase hex. The clear text is never stored, and a hash can be given
//! instead (`#<hash>`), so an ACL file holds no secret that logs in.

use sha2::{Digest, Sha256};

/// Length of a hashed password in hex digits.
pub const HASH_LEN: usize = 64;

/// A password's SHA-256 in lowercase hex.
pub type Hash = [u8; HASH_LEN];

/// The hash of the clear-text `password`.
pub fn hash(password: &[u8]) -> Hash {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(password);
    let mut out = [0u8; HASH_LEN];
    for (i, byte) in digest.iter().enumerate() {
        out[2 * i] = HEX[usize::from(byte >> 4)];
        out[2 * i + 1] = HEX[usize::from(byte & 0xf)];
    }
    out
}

/// `hash` as a hash, when it is one: exactly 64 lowercase hex digits.
pub fn parse_hash(hash: &[u8]) -> Option<Hash> {
    let valid = hash.len() == HASH_LEN && hash.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !valid {
        return None;
    }
    let mut out = [0u8; HASH_LEN];
    out.copy_from_slice(hash);
    Some(out)
}

/// Whether two hashes are equal, in time that does not depend on where
/// they differ (an attacker timing AUTH learns nothing of the hash).
pub fn same(a: &Hash, b: &Hash) -> bool {
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b.iter()) {
        diff |= x ^ y;
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_sha256_hex() {
        // `ACL GETUSER` of a user given `>pw` on redis-server 7.0.
        assert_eq!(&hash(b"pw"), b"30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4");
        assert_eq!(parse_hash(&hash(b"x")), Some(hash(b"x")));
        assert_eq!(parse_hash(b"ABC"), None);
        let upper = hash(b"pw").map(|b| b.to_ascii_uppercase());
        assert_eq!(parse_hash(&upper), None);
        assert!(same(&hash(b"a"), &hash(b"a")));
        assert!(!same(&hash(b"a"), &hash(b"b")));
    }
}
