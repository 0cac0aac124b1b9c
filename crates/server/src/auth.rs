//! Password authentication of the `default` user (`requirepass`).
//!
//! kvik has one user, `default`, as Redis has before any ACL rule is written.
//! Without a password it accepts any credentials for `default`; with one, a
//! client must send it (AUTH or HELLO AUTH) before anything but the few
//! commands the table marks `no_auth`. The password lives here, behind a lock,
//! so that startup options and a later runtime setting can both change it.

use std::sync::RwLock;

/// Redis's reply to wrong credentials.
pub const WRONGPASS: &[u8] = b"WRONGPASS invalid username-password pair or user is disabled.";
/// Redis's reply to a command sent before authenticating.
pub const NOAUTH: &[u8] = b"NOAUTH Authentication required.";

/// The password state shared by all connections.
#[derive(Debug, Default)]
pub struct Auth {
    /// The `default` user's password; `None` means no password is required.
    pub requirepass: RwLock<Option<Vec<u8>>>,
}

impl Auth {
    /// Whether new clients must authenticate before running commands.
    pub fn required(&self) -> bool {
        self.requirepass.read().map(|p| p.is_some()).unwrap_or(true)
    }

    /// Set or clear the password.
    pub fn set(&self, password: Option<Vec<u8>>) {
        if let Ok(mut p) = self.requirepass.write() {
            *p = password;
        }
    }

    /// Whether `user`/`password` are valid credentials.
    ///
    /// Only `default` exists. Without a password it accepts anything, as
    /// Redis's `nopass` default user does.
    pub fn check(&self, user: &[u8], password: &[u8]) -> bool {
        if user != b"default" {
            return false;
        }
        match self.requirepass.read() {
            Ok(p) => p.as_deref().is_none_or(|p| p == password),
            Err(_) => false,
        }
    }
}
