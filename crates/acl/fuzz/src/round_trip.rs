//! The property both targets share: a user's description (`ACL LIST`
//! after `user <name> `), read back as the ACL file reader reads a line's
//! rules, rebuilds a user that describes the same.
//!
//! Redis 7.0 writes a description some users cannot be rebuilt from, and
//! kvik writes the same text: a key or channel pattern ending in `)` inside
//! a selector closes the selector early when the words are joined again,
//! and a first argument (`+select|…`) with a space or line end splits or
//! is trimmed. Those users are left out of the round trip (the inputs
//! still must not panic).

use kvik_acl::describe::{selector_rules, user_rules};
use kvik_acl::rules::merge_selectors;
use kvik_acl::{Defaults, User};

/// Whether `user`'s description can be read back word for word: no word of
/// a selector in parentheses but its last ends in `)`.
pub fn describable(user: &User) -> bool {
    user.selectors().iter().skip(1).all(|selector| {
        let rules = selector_rules(selector);
        let words: Vec<&[u8]> = rules.split(|&b| b == b' ').collect();
        words.iter().rev().skip(1).all(|w| w.last() != Some(&b')'))
    })
}

/// The user `user`'s description rebuilds from a fresh user named the
/// same, checked to describe the same; `None` when the description is one
/// Redis cannot read back either ([`describable`]).
pub fn rebuild(user: &User, defaults: Defaults) -> Option<User> {
    if !describable(user) {
        return None;
    }
    let described = user_rules(user);
    let shown = String::from_utf8_lossy(&described);
    let words = merge_selectors(described.split(|&b| b == b' '))
        .unwrap_or_else(|at| panic!("word {at} of {shown:?} opens a selector never closed"));
    let rebuilt = User::new(user.name(), defaults)
        .with_rules(words.iter().map(Vec::as_slice), defaults)
        .unwrap_or_else(|(op, e)| panic!("{shown:?}: {:?} refused: {}", String::from_utf8_lossy(op), e.message()));
    let again = user_rules(&rebuilt);
    assert_eq!(String::from_utf8_lossy(&again), shown, "a rebuilt user describes the same");
    Some(rebuilt)
}
