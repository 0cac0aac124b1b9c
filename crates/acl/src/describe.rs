//! Users written back as rules (`ACL LIST`, `ACL GETUSER`, `ACL SAVE`), as
//! Redis 7.0 writes them.
//!
//! A user's commands are a bitmap; Redis 7.0 does not keep the rules that
//! made it, and describes it by a search: start from `+@all` (when the bit
//! for commands to come is set) or `-@all`, then repeatedly apply the
//! category that agrees with the most remaining commands while differing
//! in fewer than it agrees, and finish with single `+cmd`/`-cmd` rules for
//! what is still different. The search is repeated here, counting the
//! categories over Redis 7.0's own commands so the categories chosen are
//! Redis's. The single rules follow the table's order; Redis lists them
//! in its hash table's order, which changes from one start to the next.

use kvik_protocol::commands::{Source, COMMANDS};

use crate::rules::{all_commands, categories, Access, Sanitize, Selector, User, FUTURE_BIT};

/// The user as `ACL LIST` shows it after `user <name> `: flags, password
/// hashes, the root selector's rules, and each other selector in
/// parentheses.
pub fn user_rules(user: &User) -> Vec<u8> {
    let mut out = Vec::new();
    for flag in flags(user) {
        out.extend_from_slice(flag.as_bytes());
        out.push(b' ');
    }
    for hash in &user.passwords {
        out.push(b'#');
        out.extend_from_slice(hash);
        out.push(b' ');
    }
    for (i, selector) in user.selectors.iter().enumerate() {
        if i == 0 {
            out.extend_from_slice(&selector_rules(selector));
        } else {
            out.extend_from_slice(b" (");
            out.extend_from_slice(&selector_rules(selector));
            out.push(b')');
        }
    }
    out
}

/// The user's flags in Redis's order (`ACL GETUSER` `flags`).
pub fn flags(user: &User) -> Vec<&'static str> {
    let mut out = vec![if user.enabled { "on" } else { "off" }];
    if user.nopass {
        out.push("nopass");
    }
    match user.sanitize {
        Sanitize::Skip => out.push("skip-sanitize-payload"),
        Sanitize::Always => out.push("sanitize-payload"),
        Sanitize::Unset => {}
    }
    out
}

/// One selector's keys, channels and commands, as rules.
pub fn selector_rules(selector: &Selector) -> Vec<u8> {
    let mut out = Vec::new();
    if selector.all_keys {
        out.extend_from_slice(b"~* ");
    } else {
        for pattern in &selector.keys {
            out.extend_from_slice(&key_pattern(pattern.access, &pattern.pattern));
            out.push(b' ');
        }
    }
    if selector.all_channels {
        out.extend_from_slice(b"&* ");
    } else {
        out.extend_from_slice(b"resetchannels ");
        for channel in &selector.channels {
            out.push(b'&');
            out.extend_from_slice(channel);
            out.push(b' ');
        }
    }
    out.extend_from_slice(&command_rules(selector));
    out
}

/// The selector's key patterns (`ACL GETUSER` `keys`).
pub fn key_patterns(selector: &Selector) -> Vec<u8> {
    if selector.all_keys {
        return b"~*".to_vec();
    }
    let described: Vec<Vec<u8>> = selector.keys.iter().map(|k| key_pattern(k.access, &k.pattern)).collect();
    described.join(&b' ')
}

/// The selector's channel patterns (`ACL GETUSER` `channels`).
pub fn channel_patterns(selector: &Selector) -> Vec<u8> {
    if selector.all_channels {
        return b"&*".to_vec();
    }
    let described: Vec<Vec<u8>> = selector.channels.iter().map(|c| [&b"&"[..], c].concat()).collect();
    described.join(&b' ')
}

fn key_pattern(access: Access, pattern: &[u8]) -> Vec<u8> {
    let prefix: &[u8] = match access {
        Access::READ => b"%R~",
        Access::WRITE => b"%W~",
        _ => b"~",
    };
    [prefix, pattern].concat()
}

/// The rules that rebuild the selector's command bitmap.
pub fn command_rules(selector: &Selector) -> Vec<u8> {
    let additive = !selector.allowed.get(FUTURE_BIT);
    let mut out: Vec<u8> = if additive { b"-@all ".to_vec() } else { b"+@all ".to_vec() };
    let mut fake = Selector::new(Default::default());
    let applied = fake.apply(if additive { b"-@all" } else { b"+@all" });
    debug_assert!(applied.is_ok());
    // What is left to explain: the categories applied so far are undone
    // on this copy, so each round compares against what they did not cover.
    let mut rest = selector.clone();
    let mut used = [false; crate::rules::CATEGORIES];
    loop {
        let mut best = None;
        let (mut min_diff, mut max_same) = (usize::MAX, 0);
        for (j, (_, bit)) in categories().enumerate() {
            if used[j] {
                continue;
            }
            let (on, off) = count(&rest, bit);
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                best = Some((j, bit));
                min_diff = diff;
                max_same = same;
            }
        }
        let Some((j, bit)) = best else { break };
        fake.change_category(bit, additive);
        rest.change_category(bit, !additive);
        out.extend_from_slice(if additive { b"+@" } else { b"-@" });
        out.extend_from_slice(categories().nth(j).map_or("", |(name, _)| name).as_bytes());
        out.push(b' ');
        used[j] = true;
    }
    for spec in all_commands() {
        let mine = selector.allows_bit(spec);
        if mine != fake.allows_bit(spec) {
            out.push(if mine { b'+' } else { b'-' });
            out.extend_from_slice(spec.name.as_bytes());
            out.push(b' ');
            fake.change(spec, mine);
        }
        if !mine {
            for arg in selector.first_args_of(spec.id.index()).unwrap_or_default() {
                out.push(b'+');
                out.extend_from_slice(spec.name.as_bytes());
                out.push(b'|');
                out.extend_from_slice(arg);
                out.push(b' ');
            }
        }
    }
    out.pop();
    debug_assert_eq!(fake.allowed, selector.allowed, "described rules rebuild the bitmap");
    out
}

/// How many of Redis 7.0's commands in `category` the selector allows
/// and forbids.
fn count(selector: &Selector, category: kvik_protocol::commands::AclCategories) -> (usize, usize) {
    let (mut on, mut off) = (0, 0);
    for spec in COMMANDS.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter())) {
        if spec.source != Source::Redis70 || !spec.acl_categories.contains(category) {
            continue;
        }
        if selector.allows_bit(spec) {
            on += 1;
        } else {
            off += 1;
        }
    }
    (on, off)
}
