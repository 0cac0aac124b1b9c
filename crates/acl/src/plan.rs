//! A user's answers worked out in advance, one byte per command, so that
//! the check before each command of a restricted user costs a table read
//! and, for a command with one key, one pattern comparison.
//!
//! The plan is built from the root selector when a user enters [`Users`]
//! (after every change to its rules) and can only say yes: a command it
//! cannot answer for, or a key it does not see matching, goes to the full
//! check ([`crate::check`]), which finds the reason and the argument to
//! log. A plan that says yes where the full check would refuse is a bug;
//! the tests compare the two over every command.
//!
//! [`Users`]: crate::Users

use kvik_protocol::commands::keys::single_key_spec;
use kvik_protocol::commands::{CommandFlags, CommandSpec, KeySpecFlags, COMMAND_COUNT};

use crate::check::{channel_args, key_allowed};
use crate::rules::{Access, Selector, Shape, User};

/// Ask the full check.
const ASK: u8 = 0;
/// The command is allowed whatever its arguments.
const ALLOWED: u8 = u8::MAX;
/// Any other step is `position << 3 | QUICK? | access`: the command is
/// allowed if its one key, at that argument, matches a pattern granting
/// that access. With `QUICK`, the plan's short prefix grants it, so a key
/// of 8 bytes or more needs only the masked compare.
const QUICK: u8 = 4;
const MAX_POSITION: usize = (ALLOWED as usize >> 3) - 1;
/// Steps in the table: every command id, rounded up to a power of two so
/// that an id needs no bounds check, only a mask.
const STEPS: usize = COMMAND_COUNT.next_power_of_two();

/// One step per command id, and what the key tests need of the root
/// selector's patterns.
pub struct Plan {
    steps: [u8; STEPS],
    /// Most restricted users have one pattern of the form `~prefix:*`
    /// with a prefix of 1 to 8 bytes: a key of at least 8 bytes matches it
    /// when its first 8 bytes, masked to the prefix's length, equal
    /// `word`. `mask` is 0 when the user has no such pattern.
    word: u64,
    mask: u64,
    /// The root selector's key patterns (nothing else of it is read).
    root: Selector,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let allowed = self.steps.iter().filter(|&&s| s == ALLOWED).count();
        let keyed = self.steps.iter().filter(|&&s| s != ALLOWED && s != ASK).count();
        write!(f, "Plan {{ allowed: {allowed}, one key: {keyed} }}")
    }
}

impl Plan {
    /// The plan of `user`'s root selector.
    pub fn of(user: &User) -> Plan {
        let mut plan = Plan { steps: [ASK; STEPS], word: 0, mask: 0, root: Selector::new(crate::Defaults::default()) };
        let Some(root) = user.selectors.first() else { return plan };
        plan.root.keys.clone_from(&root.keys);
        let mut quick = Access(0);
        if let Some((word, mask, access)) = short_prefix(root) {
            (plan.word, plan.mask, quick) = (word, mask, access);
        }
        for spec in kvik_protocol::commands::COMMANDS.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands)) {
            if let Some(step) = plan.steps.get_mut(spec.id.index()) {
                *step = step_of(root, spec, quick);
            }
        }
        plan
    }

    /// Whether the plan allows the request; false means "ask the full
    /// check", not "refused".
    #[inline(always)]
    pub fn allows<'a>(&self, spec: &CommandSpec, argc: usize, arg: impl Fn(usize) -> &'a [u8]) -> bool {
        let step = self.steps[spec.id.index() & (STEPS - 1)];
        if step == ALLOWED {
            return true;
        }
        // Positions start at 1, so `ASK` (position 0) fails here too.
        let at = usize::from(step >> 3);
        if at.wrapping_sub(1) >= argc.wrapping_sub(1) {
            return false;
        }
        let key = arg(at);
        if step & QUICK != 0 {
            if let Some(head) = key.first_chunk::<8>() {
                return u64::from_le_bytes(*head) & self.mask == self.word;
            }
        }
        key_allowed(&self.root, key, Access(step & 3))
    }
}

/// The one pattern of `s`, when it is a prefix of 1 to 8 bytes and a `*`:
/// the prefix as a little-endian word, its mask, and the access granted.
fn short_prefix(s: &Selector) -> Option<(u64, u64, Access)> {
    let [only] = s.keys.as_slice() else { return None };
    let prefix = match only.pattern.split_last() {
        Some((b'*', prefix)) if only.shape == Shape::Prefix => prefix,
        _ => return None,
    };
    if prefix.is_empty() || prefix.len() > 8 {
        return None;
    }
    let mut bytes = [0u8; 8];
    bytes[..prefix.len()].copy_from_slice(prefix);
    Some((u64::from_le_bytes(bytes), u64::MAX >> (8 * (8 - prefix.len())), only.access))
}

/// What the plan answers for `spec` under selector `s`.
fn step_of(s: &Selector, spec: &CommandSpec, quick: Access) -> u8 {
    let command_ok = s.all_commands || spec.flags.contains(CommandFlags::NO_AUTH) || s.allows_bit(spec);
    let channels_ok = s.all_channels || !spec.flags.contains(CommandFlags::PUBSUB) || channel_args(spec, 0).is_none();
    if !command_ok || !channels_ok {
        return ASK;
    }
    if s.all_keys || spec.key_specs.is_empty() {
        return ALLOWED;
    }
    match single_key_spec(spec) {
        Some((at, flags)) if at <= MAX_POSITION => {
            // The flags that vary with the arguments are at most the
            // table's, or reading and writing both: asking for the most a
            // request could need can only say yes less often.
            let needed = if flags.contains(KeySpecFlags::VARIABLE_FLAGS) { Access::ALL } else { needed_access(flags) };
            let quick = if quick.0 != 0 && quick.covers(needed) { QUICK } else { 0 };
            (at << 3) as u8 | quick | needed.0
        }
        _ => ASK,
    }
}

/// The access a key with `flags` needs: reading for `access`, writing for
/// `insert`, `delete` and `update`.
pub(crate) fn needed_access(flags: KeySpecFlags) -> Access {
    let mut needed = 0u8;
    if flags.contains(KeySpecFlags::ACCESS) {
        needed |= Access::READ.0;
    }
    if flags.contains(KeySpecFlags::INSERT)
        || flags.contains(KeySpecFlags::DELETE)
        || flags.contains(KeySpecFlags::UPDATE)
    {
        needed |= Access::WRITE.0;
    }
    Access(needed)
}
