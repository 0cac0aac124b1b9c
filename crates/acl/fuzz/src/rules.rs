//! Rules as `ACL SETUSER` takes them: any bytes, split into rules on NUL
//! and newline, are refused or give a user whose description rebuilds it
//! (with `acl-pubsub-default` either way), whose ACL file line loads back
//! the same, and which the rebuilt copy matches on every request of a
//! fixed set: the permission check must not change across `ACL SAVE` and
//! `ACL LOAD`.

use kvik_acl::rules::has_spaces;
use kvik_acl::{check as acl_check, Defaults, Denied, User, Users};
use kvik_protocol::commands::{lookup, lookup_subcommand};

use crate::round_trip::{describable, rebuild};

/// Requests whose answer must not change: a command with a read key, a
/// write key, a channel, a first argument, a subcommand and a script key.
const REQUESTS: [&[&[u8]]; 8] = [
    &[b"GET", b"k"],
    &[b"SET", b"k", b"v"],
    &[b"PUBLISH", b"c", b"m"],
    &[b"SUBSCRIBE", b"c", b"news.1"],
    &[b"SELECT", b"0"],
    &[b"CONFIG", b"GET", b"x"],
    &[b"EVAL", b"s", b"1", b"k"],
    &[b"AUTH", b"x"],
];

/// The check's answer for `request` (a name the table has).
fn answer(user: &User, request: &[&[u8]]) -> Result<(), Denied> {
    let Some(spec) = lookup(request[0]) else { panic!("{:?} is in the table", request[0]) };
    let spec = match request.get(1) {
        Some(sub) if !spec.subcommands.is_empty() => lookup_subcommand(spec, sub).unwrap_or(spec),
        _ => spec,
    };
    acl_check(user, spec, request.len(), |i| request[i])
}

/// Panics when a property of the rules is broken for `data`.
pub fn check(data: &[u8]) {
    let ops: Vec<&[u8]> = data.split(|&b| b == 0 || b == b'\n').collect();
    // A first argument with a space or line end is accepted, as Redis
    // accepts it, but written back it splits or is trimmed, in Redis too.
    if ops.iter().any(|op| op.first() == Some(&b'+') && has_spaces(op)) {
        return;
    }
    for all_channels in [false, true] {
        let defaults = Defaults { all_channels };
        let Ok(user) = User::new(b"u", defaults).with_rules(ops.iter().copied(), defaults) else { continue };
        let Some(rebuilt) = rebuild(&user, defaults) else { continue };
        for request in REQUESTS {
            assert_eq!(
                answer(&rebuilt, request),
                answer(&user, request),
                "{:?} is answered the same for the user and its rebuilt copy",
                request.iter().map(|a| String::from_utf8_lossy(a)).collect::<Vec<_>>()
            );
        }
        assert!(describable(&rebuilt));
        let mut users = Users::new();
        users.put(user);
        let text = users.to_file();
        let loaded = Users::from_file(&text, "fuzz.acl", defaults)
            .unwrap_or_else(|e| panic!("{:?} saved, refused: {e}", String::from_utf8_lossy(&text)));
        assert_eq!(
            String::from_utf8_lossy(&loaded.to_file()),
            String::from_utf8_lossy(&text),
            "saved and loaded, saved the same"
        );
        let Some(back) = loaded.get(b"u") else { panic!("{:?} saved, lost the user", String::from_utf8_lossy(&text)) };
        for request in REQUESTS {
            assert_eq!(answer(back, request), answer(&rebuilt, request), "loaded from the file, answered the same");
        }
    }
}
