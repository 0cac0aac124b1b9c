//! Password authentication of the `default` user (`requirepass`).
//!
//! kvik has one user, `default`, as Redis has before any ACL rule is written.
//! Without a password it accepts any credentials for `default`; with one, a
//! client must send it (AUTH or HELLO AUTH) before anything but the few
//! commands the table marks `no_auth`. The password is the `requirepass`
//! option of the running configuration, so `CONFIG SET requirepass` changes
//! it; whether one is set is also kept in [`crate::state::ConnectionLimits`]
//! for the per-command check.

use crate::state::ServerState;

/// Redis's reply to wrong credentials.
pub const WRONGPASS: &[u8] = b"WRONGPASS invalid username-password pair or user is disabled.";
/// Redis's reply to a command sent before authenticating.
pub const NOAUTH: &[u8] = b"NOAUTH Authentication required.";

/// Whether clients must authenticate now.
pub fn required(state: &ServerState) -> bool {
    state.limits.auth_required()
}

/// Whether `user`/`password` are valid credentials.
///
/// Only `default` exists. Without a password it accepts anything, as
/// Redis's `nopass` default user does.
pub fn check(state: &ServerState, user: &[u8], password: &[u8]) -> bool {
    if user != b"default" {
        return false;
    }
    let config = state.config();
    let required = config.get("requirepass").as_bytes();
    required.is_empty() || same_secret(required, password)
}

/// Compare secrets in time that does not depend on where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}
