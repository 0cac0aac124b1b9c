//! Whether a user may run a request: the command (or the first argument
//! allowed for it), each key with the access its key spec needs, and each
//! channel it publishes or subscribes to. Redis 7.0's rules, in its order.
//!
//! The check runs before every command of a restricted user, so it walks
//! the request's keys in place ([`kvik_protocol::commands::keys`]) and
//! allocates nothing.

use kvik_protocol::commands::keys::{for_each_key, single_key};
use kvik_protocol::commands::{id, CommandFlags, CommandSpec};
use kvik_store::keyspace::glob;

use crate::plan::needed_access;
use crate::rules::{shaped_match, Access, Selector, User};

/// Why a request is refused, with the position of the argument at fault
/// (Redis logs it); ordered as Redis ranks them when no selector allows
/// the request: a key or channel refusal says more than a command one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    /// The command or subcommand.
    Command,
    /// The key at this argument position.
    Key(usize),
    /// The channel at this argument position.
    Channel(usize),
}

impl Denied {
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(at) => (2, at),
            Denied::Channel(at) => (4, at),
        }
    }
}

/// Check `spec`, with arguments `arg(0..argc)` (the name first), against
/// every selector of `user`.
pub fn check<'a>(
    user: &User,
    spec: &CommandSpec,
    argc: usize,
    arg: impl Fn(usize) -> &'a [u8] + Copy,
) -> Result<(), Denied> {
    // Most users have only their root selector: its answer is the answer.
    if let [only] = user.selectors.as_slice() {
        return check_selector(only, spec, argc, arg);
    }
    let mut worst = Denied::Command;
    for selector in &user.selectors {
        match check_selector(selector, spec, argc, arg) {
            Ok(()) => return Ok(()),
            Err(denied) if denied.rank() > worst.rank() => worst = denied,
            Err(_) => {}
        }
    }
    Err(worst)
}

/// Whether `user` may use `channel` (a pattern, for PSUBSCRIBE, is matched
/// literally against the user's patterns).
pub fn channel_allowed(user: &User, channel: &[u8], is_pattern: bool) -> bool {
    user.selectors.iter().any(|s| s.all_channels || channel_in(&s.channels, channel, is_pattern))
}

#[inline]
fn check_selector<'a>(
    s: &Selector,
    spec: &CommandSpec,
    argc: usize,
    arg: impl Fn(usize) -> &'a [u8] + Copy,
) -> Result<(), Denied> {
    if !s.all_commands && !spec.flags.contains(CommandFlags::NO_AUTH) && !s.allows_bit(spec) {
        let at = if spec.container.is_some() { 2 } else { 1 };
        let first_ok = argc > at
            && s.first_args_of(spec.id.index())
                .is_some_and(|args| args.iter().any(|a| a.eq_ignore_ascii_case(arg(at))));
        if !first_ok {
            return Err(Denied::Command);
        }
    }
    if !s.all_keys && !spec.key_specs.is_empty() {
        if let Some((at, flags)) = single_key(spec, argc, arg) {
            // A request too short for its key is malformed: no key, as Redis finds.
            if at < argc && !key_allowed(s, arg(at), needed_access(flags)) {
                return Err(Denied::Key(at));
            }
            return channels_allowed(s, spec, argc, arg);
        }
        let mut denied = None;
        let walked = for_each_key(spec, argc, arg, |at, flags| {
            if key_allowed(s, arg(at), needed_access(flags)) {
                return true;
            }
            denied = Some(at);
            false
        });
        // Redis finds no keys at all in a malformed request, and lets the
        // command itself say what is wrong.
        if let (Ok(()), Some(at)) = (walked, denied) {
            return Err(Denied::Key(at));
        }
    }
    channels_allowed(s, spec, argc, arg)
}

/// Whether the selector lets `spec` publish or subscribe to its channels.
#[inline]
fn channels_allowed<'a>(
    s: &Selector,
    spec: &CommandSpec,
    argc: usize,
    arg: impl Fn(usize) -> &'a [u8],
) -> Result<(), Denied> {
    if !s.all_channels && spec.flags.contains(CommandFlags::PUBSUB) {
        if let Some((from, to, is_pattern)) = channel_args(spec, argc) {
            for at in from..to {
                if !channel_in(&s.channels, arg(at), is_pattern) {
                    return Err(Denied::Channel(at));
                }
            }
        }
    }
    Ok(())
}

/// Whether the selector's patterns give `key` the `needed` access.
#[inline(always)]
pub(crate) fn key_allowed(s: &Selector, key: &[u8], needed: Access) -> bool {
    for k in &s.keys {
        if k.access.covers(needed) && shaped_match(&k.pattern, k.shape, key) {
            return true;
        }
    }
    false
}

fn channel_in(patterns: &[Vec<u8>], channel: &[u8], is_pattern: bool) -> bool {
    patterns.iter().any(|p| if is_pattern { p == channel } else { glob::matches(p, channel, false) })
}

/// The arguments of `spec` that are channels it publishes or subscribes
/// to (`from..to`), and whether they are patterns. Unsubscribing needs no
/// permission.
pub(crate) fn channel_args(spec: &CommandSpec, argc: usize) -> Option<(usize, usize, bool)> {
    match spec.id {
        id::PUBLISH | id::SPUBLISH => Some((1, 2.min(argc), false)),
        id::SUBSCRIBE | id::SSUBSCRIBE => Some((1, argc, false)),
        id::PSUBSCRIBE => Some((1, argc, true)),
        _ => None,
    }
}
