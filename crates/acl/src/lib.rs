//! kvik's access control lists, as Redis 7.0 has them.
//!
//! - [`rules`]: users and selectors, and the rules that change them
//!   (`ACL SETUSER`, `user` lines), with Redis's words and errors;
//! - [`describe`]: users written back as rules (`ACL LIST`, `GETUSER`,
//!   the ACL file);
//! - [`check`]: whether a user may run a request (command, keys with the
//!   access their key specs need, channels);
//! - [`plan`]: the check worked out in advance for each command, which
//!   answers most requests of a restricted user with a table read;
//! - [`password`]: passwords kept as SHA-256 hashes, compared in constant
//!   time;
//! - [`Users`]: the set of users, the ACL file's text in and out.
//!
//! Nothing here knows about connections or threads: the server keeps a
//! [`Users`] behind its own lock, hands each session the user it logged
//! in as, and asks [`plan::allows`], then [`check::check`], before a
//! restricted user's command.

#![forbid(unsafe_code)]

pub mod check;
pub mod describe;
pub mod password;
pub mod plan;
pub mod rules;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use check::{check, Denied};
pub use rules::{Defaults, RuleError, Selector, User};

/// Every user, by name, in byte order (the order Redis lists them).
#[derive(Clone, Debug)]
pub struct Users {
    users: BTreeMap<Vec<u8>, Arc<User>>,
}

impl Default for Users {
    fn default() -> Self {
        Users::new()
    }
}

impl Users {
    /// Only the `default` user, as a fresh server has.
    pub fn new() -> Users {
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), planned(User::default_user()));
        Users { users }
    }

    /// The user named `name`.
    pub fn get(&self, name: &[u8]) -> Option<&Arc<User>> {
        self.users.get(name)
    }

    /// The `default` user, which always exists.
    pub fn default_user(&self) -> Arc<User> {
        match self.users.get(&b"default"[..]) {
            Some(user) => Arc::clone(user),
            None => planned(User::default_user()),
        }
    }

    /// Add or replace a user.
    pub fn put(&mut self, user: User) -> Arc<User> {
        let user = planned(user);
        self.users.insert(user.name().to_vec(), Arc::clone(&user));
        user
    }

    /// Remove a user (never `default`); whether it existed.
    pub fn remove(&mut self, name: &[u8]) -> bool {
        name != b"default" && self.users.remove(name).is_some()
    }

    /// Every user, in name order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<User>> {
        self.users.values()
    }

    /// How many users there are.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Never true: `default` always exists.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// The ACL file's text: one `user <name> <rules>` line per user.
    pub fn to_file(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for user in self.users.values() {
            out.extend_from_slice(b"user ");
            out.extend_from_slice(user.name());
            out.push(b' ');
            out.extend_from_slice(&describe::user_rules(user));
            out.push(b'\n');
        }
        out
    }

    /// Users read from an ACL file's text, as `ACL LOAD` reads it: every
    /// line checked, and nothing loaded if any is wrong. `file` names the
    /// file in the errors, which are Redis's, joined as Redis joins them.
    /// A file without `default` gets a fresh one.
    pub fn from_file(text: &[u8], file: &str, defaults: Defaults) -> Result<Users, String> {
        let mut users = BTreeMap::new();
        let mut errors = String::new();
        for (i, line) in text.split(|&b| b == b'\n').enumerate() {
            let linenum = i + 1;
            let line = trim(line);
            if line.is_empty() {
                continue;
            }
            let words: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            if words.first() != Some(&&b"user"[..]) || words.len() < 2 {
                errors.push_str(&format!("{file}:{linenum} should start with user keyword followed by the username. "));
                continue;
            }
            let name = words[1];
            if rules::has_spaces(name) {
                let shown = String::from_utf8_lossy(name);
                errors.push_str(&format!("'{file}:{linenum}: username '{shown}' contains invalid characters. "));
                continue;
            }
            if users.contains_key(name) {
                let shown = String::from_utf8_lossy(name);
                errors.push_str(&format!("WARNING: Duplicate user '{shown}' found on line {linenum}. "));
                continue;
            }
            let mut user = User::new(name, defaults);
            let Ok(ops) = rules::merge_selectors(words[2..].iter().copied()) else {
                errors.push_str(&format!("{file}:{linenum}: Unmatched parenthesis in selector definition."));
                continue;
            };
            let mut syntax_error = false;
            for op in &ops {
                let op = trim(op);
                if let Err(e) = user.apply(op, defaults) {
                    if e == RuleError::Unknown {
                        let shown = String::from_utf8_lossy(op);
                        errors.push_str(&format!(
                            "{file}:{linenum}: Error in applying operation '{shown}': {}. ",
                            e.message()
                        ));
                    } else if !syntax_error {
                        errors.push_str(&format!("{file}:{linenum}: {}. ", e.message()));
                        syntax_error = true;
                    }
                }
            }
            users.insert(name.to_vec(), planned(user));
        }
        if !errors.is_empty() {
            errors.push_str("WARNING: ACL errors detected, no change to the previously active ACL rules was performed");
            return Err(errors);
        }
        users.entry(b"default".to_vec()).or_insert_with(|| planned(User::default_user()));
        Ok(Users { users })
    }
}

/// `user` with its [`plan::Plan`], as every user in [`Users`] has.
fn planned(mut user: User) -> Arc<User> {
    user.make_plan();
    Arc::new(user)
}

/// `s` without the spaces, tabs and line ends around it.
fn trim(s: &[u8]) -> &[u8] {
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let start = s.iter().position(|b| !blank(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !blank(b)).map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

#[cfg(test)]
mod tests;
