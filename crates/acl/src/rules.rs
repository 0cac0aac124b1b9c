//! Users and selectors, and the rules (`on`, `>pass`, `+get`, `~key:*`,
//! `(…)`) that change them, read exactly as Redis 7.0 reads them: the same
//! words, the same order of tests, the same errors.
//!
//! A user has flags, password hashes and one or more selectors; the first,
//! the root selector, holds the rules written outside parentheses. A
//! command is allowed when any selector allows it whole (the command, and
//! each of its keys and channels).
//!
//! Commands are a bitmap indexed by the command table's dense ids, so the
//! check before a command is one bit test. One bit past the table stands
//! for the commands that do not exist yet: `+@all` sets it and nothing else
//! does, which is how a user's rules are described back as `+@all -x`
//! rather than `-@all +a +b …` ([`crate::describe`]).

use std::sync::{Arc, OnceLock};

use kvik_protocol::commands::{lookup, lookup_subcommand, AclCategories, CommandFlags, CommandSpec, COMMANDS};

use crate::password::{self, Hash};
use crate::plan::Plan;

/// Words of the command bitmap: every table id, and the bit for commands
/// to come.
const WORDS: usize = 8;
/// The bit `+@all` sets for commands the table does not have.
pub(crate) const FUTURE_BIT: usize = WORDS * 64 - 1;
const _: () = assert!(kvik_protocol::commands::COMMAND_COUNT < FUTURE_BIT);

/// Redis 7.0's categories, in its order (`ACL CAT`); the command table
/// also knows three that only modules register, which Redis does not list.
pub const CATEGORIES: usize = 21;

/// The name (without `@`) and bit of each of Redis's categories.
pub fn categories() -> impl Iterator<Item = (&'static str, AclCategories)> {
    AclCategories::ALL.iter().take(CATEGORIES).map(|(bit, name)| (&name[1..], *bit))
}

/// The category named `name` (no `@`), ignoring case.
pub fn category(name: &[u8]) -> Option<AclCategories> {
    categories().find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name)).map(|(_, bit)| bit)
}

/// A set of commands, by table id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Bits([u64; WORDS]);

impl Bits {
    pub(crate) fn get(&self, bit: usize) -> bool {
        self.0.get(bit / 64).is_some_and(|w| w & (1 << (bit % 64)) != 0)
    }

    fn set(&mut self, bit: usize, on: bool) {
        if let Some(w) = self.0.get_mut(bit / 64) {
            if on {
                *w |= 1 << (bit % 64);
            } else {
                *w &= !(1 << (bit % 64));
            }
        }
    }
}

/// Read or write access a key pattern grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access(pub(crate) u8);

impl Access {
    /// `%R~`: keys may be read.
    pub const READ: Access = Access(1);
    /// `%W~`: keys may be written.
    pub const WRITE: Access = Access(2);
    /// `~`: both.
    pub const ALL: Access = Access(3);

    pub(crate) fn covers(self, needed: Access) -> bool {
        self.0 & needed.0 == needed.0
    }
}

/// A key pattern and the access it grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    pub(crate) pattern: Vec<u8>,
    pub(crate) access: Access,
    /// How the pattern matches, found once when the rule is read.
    pub(crate) shape: Shape,
}

/// The forms of glob pattern that need no glob matcher: most ACL rules are
/// a literal name or a literal prefix and one `*` (`~app:*`), and a key is
/// checked against them before every command of the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// No special character: the key is the pattern.
    Exact,
    /// Literal bytes then one `*`: the key starts with them (and, as
    /// Redis's matcher has it, is not empty).
    Prefix,
    /// Anything else.
    Glob,
}

impl Shape {
    pub(crate) fn of(pattern: &[u8]) -> Shape {
        let special = |b: &u8| matches!(b, b'*' | b'?' | b'[' | b'\\');
        match pattern.iter().position(special) {
            None => Shape::Exact,
            Some(at) if at + 1 == pattern.len() && pattern[at] == b'*' => Shape::Prefix,
            Some(_) => Shape::Glob,
        }
    }
}

/// Whether `subject` matches `pattern`, of shape `shape` (Redis's glob
/// rules, case-sensitive).
#[inline]
pub(crate) fn shaped_match(pattern: &[u8], shape: Shape, subject: &[u8]) -> bool {
    match shape {
        Shape::Exact => pattern == subject,
        Shape::Prefix => {
            // Byte by byte: ACL prefixes are short, and a call to memcmp
            // costs more than comparing them here.
            let prefix = &pattern[..pattern.len() - 1];
            !subject.is_empty() && subject.len() >= prefix.len() && prefix.iter().zip(subject).all(|(a, b)| a == b)
        }
        Shape::Glob => kvik_store::keyspace::glob::matches(pattern, subject, false),
    }
}

/// One set of permissions: commands, key patterns, channel patterns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    pub(crate) all_keys: bool,
    pub(crate) all_channels: bool,
    pub(crate) all_commands: bool,
    pub(crate) allowed: Bits,
    /// First arguments allowed for commands whose bit is off (`+select|0`),
    /// by command id.
    pub(crate) first_args: Vec<(usize, Vec<Vec<u8>>)>,
    pub(crate) keys: Vec<KeyPattern>,
    pub(crate) channels: Vec<Vec<u8>>,
}

/// Why a rule was refused; [`RuleError::message`] is Redis's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// Not a rule, or a pattern with spaces.
    Syntax,
    /// `+x`/`-x`/`+@x` of a command or category that does not exist.
    Unknown,
    /// A key pattern after `allkeys`.
    KeysAfterAll,
    /// A channel pattern after `allchannels`.
    ChannelsAfterAll,
    /// `<pass` or `!hash` of a password the user does not have.
    NoSuchPassword,
    /// `#hash` or `!hash` that is not 64 lowercase hex digits.
    BadHash,
    /// The same user twice in the configuration.
    Duplicate,
    /// `+cmd|sub|arg`.
    SubcommandFirstArg,
}

impl RuleError {
    /// Redis's description of the error.
    pub fn message(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::KeysAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any \
                 effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            RuleError::ChannelsAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have \
                 any effect. Try 'resetchannels' to start with an empty list of channels"
            }
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
            }
            RuleError::Duplicate => "Duplicate user found. A user can only be defined once in config files",
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// Settings that shape new selectors (`acl-pubsub-default`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Defaults {
    /// New selectors may use every channel (`allchannels`), as Redis 6.2
    /// did; Redis 7.0's default is none (`resetchannels`).
    pub all_channels: bool,
}

/// Whether `s` holds a space or NUL, which Redis refuses in user names
/// and patterns so that rules can be written back unquoted.
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter().any(|&b| b == 0 || b == b' ' || (b'\t'..=b'\r').contains(&b))
}

/// Which commands of the table rules may name; all until the server says.
static KNOWN: OnceLock<fn(&CommandSpec) -> bool> = OnceLock::new();

/// Say which commands of the table exist for ACL rules: the table holds
/// commands of other servers too, and a rule, a category or a description
/// should see only those the server has (Redis 7.0's, so that rules
/// written for Redis load, and the server's own). Set once; later calls
/// are ignored.
pub fn set_known(known: fn(&CommandSpec) -> bool) {
    let _ = KNOWN.set(known);
}

/// Whether rules may name `spec`.
pub(crate) fn known(spec: &CommandSpec) -> bool {
    KNOWN.get().is_none_or(|f| f(spec))
}

/// The command or subcommand named `name` (`get`, `config|get`), ignoring
/// case.
pub(crate) fn lookup_full(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut parts = name.splitn(3, |&b| b == b'|');
    let base = lookup(parts.next()?)?;
    let found = match (parts.next(), parts.next()) {
        (None, _) => Some(base),
        (Some(sub), None) if !base.subcommands.is_empty() => lookup_subcommand(base, sub),
        _ => None,
    };
    found.filter(|s| known(s))
}

/// Every command and subcommand rules may name, each container before its
/// subcommands.
pub(crate) fn all_commands() -> impl Iterator<Item = &'static CommandSpec> {
    COMMANDS.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter())).filter(|s| known(s))
}

impl Selector {
    /// An empty selector: no command, key or channel (but every channel
    /// when `defaults` says so).
    pub fn new(defaults: Defaults) -> Selector {
        Selector {
            all_keys: false,
            all_channels: defaults.all_channels,
            all_commands: false,
            allowed: Bits::default(),
            first_args: Vec::new(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    /// Whether the command bit of `spec` is set (not counting first args).
    pub(crate) fn allows_bit(&self, spec: &CommandSpec) -> bool {
        self.allowed.get(spec.id.index())
    }

    fn set_bit(&mut self, bit: usize, on: bool) {
        self.allowed.set(bit, on);
        if !on {
            self.all_commands = false;
        }
    }

    /// Allow or forbid `spec`, and all its subcommands with a container.
    pub(crate) fn change(&mut self, spec: &CommandSpec, allow: bool) {
        self.set_bit(spec.id.index(), allow);
        self.first_args.retain(|(id, _)| *id != spec.id.index());
        for sub in spec.subcommands {
            self.set_bit(sub.id.index(), allow);
        }
    }

    /// `+@cat` / `-@cat`: every command of the category, as Redis walks
    /// its table (a container in the category carries its subcommands).
    pub(crate) fn change_category(&mut self, category: AclCategories, allow: bool) {
        for spec in COMMANDS {
            if spec.flags.contains(CommandFlags::MODULE) || !known(spec) {
                continue;
            }
            if spec.acl_categories.contains(category) {
                self.change(spec, allow);
            }
            for sub in spec.subcommands {
                if sub.acl_categories.contains(category) && known(sub) {
                    self.change(sub, allow);
                }
            }
        }
    }

    fn set_all(&mut self, allow: bool) {
        self.allowed = Bits(if allow { [u64::MAX; WORDS] } else { [0; WORDS] });
        self.all_commands = allow;
        self.first_args.clear();
    }

    /// Apply one selector rule (everything but the user-level rules).
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if is("allkeys") || is("~*") {
            self.all_keys = true;
            self.keys.clear();
        } else if is("resetkeys") {
            self.all_keys = false;
            self.keys.clear();
        } else if is("allchannels") || is("&*") {
            self.all_channels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.set_all(true);
        } else if is("nocommands") || is("-@all") {
            self.set_all(false);
        } else if op.first().is_some_and(|&b| b == b'~' || b == b'%') {
            self.add_key_pattern(op)?;
        } else if op.first() == Some(&b'&') {
            self.add_channel(&op[1..])?;
        } else if op.first() == Some(&b'+') && op.get(1) != Some(&b'@') {
            self.allow_command(&op[1..])?;
        } else if op.first() == Some(&b'-') && op.get(1) != Some(&b'@') {
            let spec = lookup_full(&op[1..]).ok_or(RuleError::Unknown)?;
            self.change(spec, false);
        } else if op.len() >= 2 && (op[0] == b'+' || op[0] == b'-') && op[1] == b'@' {
            let category = category(&op[2..]).ok_or(RuleError::Unknown)?;
            self.change_category(category, op[0] == b'+');
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// `~pattern`, `%R~pattern`, `%W~pattern`, `%RW~pattern`.
    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeysAfterAll);
        }
        let (access, offset) = if op[0] == b'%' {
            let mut access = 0u8;
            let mut offset = 1;
            while offset < op.len() {
                let c = op[offset].to_ascii_uppercase();
                if c == b'R' && access & Access::READ.0 == 0 {
                    access |= Access::READ.0;
                } else if c == b'W' && access & Access::WRITE.0 == 0 {
                    access |= Access::WRITE.0;
                } else if c == b'~' {
                    offset += 1;
                    break;
                } else {
                    return Err(RuleError::Syntax);
                }
                offset += 1;
            }
            if access == 0 {
                return Err(RuleError::Syntax);
            }
            (Access(access), offset)
        } else {
            (Access::ALL, 1)
        };
        let pattern = op.get(offset..).unwrap_or_default();
        if has_spaces(pattern) {
            return Err(RuleError::Syntax);
        }
        match self.keys.iter_mut().find(|k| k.pattern == pattern) {
            Some(known) => known.access = Access(known.access.0 | access.0),
            None => self.keys.push(KeyPattern { pattern: pattern.to_vec(), access, shape: Shape::of(pattern) }),
        }
        self.all_keys = false;
        Ok(())
    }

    /// `&pattern`.
    fn add_channel(&mut self, pattern: &[u8]) -> Result<(), RuleError> {
        if self.all_channels {
            return Err(RuleError::ChannelsAfterAll);
        }
        if has_spaces(pattern) {
            return Err(RuleError::Syntax);
        }
        if !self.channels.iter().any(|c| c == pattern) {
            self.channels.push(pattern.to_vec());
        }
        self.all_channels = false;
        Ok(())
    }

    /// `+cmd`, `+container|sub`, or `+cmd|first-arg`.
    fn allow_command(&mut self, name: &[u8]) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
            let spec = lookup_full(name).ok_or(RuleError::Unknown)?;
            self.change(spec, true);
            return Ok(());
        };
        let (base, sub) = (&name[..bar], &name[bar + 1..]);
        let spec = lookup_full(base).ok_or(RuleError::Unknown)?;
        if spec.container.is_some() {
            return Err(RuleError::SubcommandFirstArg);
        }
        if sub.is_empty() {
            return Err(RuleError::Syntax);
        }
        if !spec.subcommands.is_empty() {
            let sub = lookup_subcommand(spec, sub).ok_or(RuleError::Unknown)?;
            self.change(sub, true);
            return Ok(());
        }
        // A first argument of a command without subcommands (SELECT 0).
        let id = spec.id.index();
        match self.first_args.iter_mut().find(|(i, _)| *i == id) {
            Some((_, args)) => {
                if !args.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                    args.push(sub.to_vec());
                }
            }
            None => self.first_args.push((id, vec![sub.to_vec()])),
        }
        Ok(())
    }

    /// The first arguments allowed for the command with id `id`.
    pub(crate) fn first_args_of(&self, id: usize) -> Option<&[Vec<u8>]> {
        self.first_args.iter().find(|(i, _)| *i == id).map(|(_, a)| a.as_slice())
    }

    /// A selector built from `(rule rule …)`.
    fn from_group(group: &[u8], defaults: Defaults) -> Result<Selector, RuleError> {
        let inner = &group[1..group.len() - 1];
        let mut selector = Selector::new(defaults);
        for op in split_words(inner).ok_or(RuleError::Syntax)? {
            selector.apply(&op)?;
        }
        Ok(selector)
    }
}

/// A user-level flag pair: Redis keeps `on` and `off` (and the two payload
/// flags) as separate bits, and a fresh user has only `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sanitize {
    Unset,
    Skip,
    Always,
}

/// One user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub(crate) name: Vec<u8>,
    pub(crate) enabled: bool,
    pub(crate) nopass: bool,
    pub(crate) sanitize: Sanitize,
    pub(crate) passwords: Vec<Hash>,
    /// The root selector first, then those added with `(…)`.
    pub(crate) selectors: Vec<Selector>,
    pub(crate) plan: PlanSlot,
}

/// A user's [`Plan`], made when it enters [`crate::Users`] and dropped by
/// any change to its rules. It is worked out from the rules, so it takes
/// no part in comparing users.
#[derive(Clone, Default)]
pub(crate) struct PlanSlot(Option<Arc<Plan>>);

impl PlanSlot {
    pub(crate) fn get(&self) -> Option<&Plan> {
        self.0.as_deref()
    }
}

impl PartialEq for PlanSlot {
    fn eq(&self, _: &PlanSlot) -> bool {
        true
    }
}

impl Eq for PlanSlot {}

impl std::fmt::Debug for PlanSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.get() {
            Some(plan) => plan.fmt(f),
            None => f.write_str("no plan"),
        }
    }
}

impl User {
    /// A new user as Redis creates one: off, no password, no permission.
    pub fn new(name: &[u8], defaults: Defaults) -> User {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            sanitize: Sanitize::Unset,
            passwords: Vec::new(),
            selectors: vec![Selector::new(defaults)],
            plan: PlanSlot::default(),
        }
    }

    /// The user's [`Plan`]; only users in [`crate::Users`] have one.
    pub fn plan(&self) -> Option<&Arc<Plan>> {
        self.plan.0.as_ref()
    }

    /// Work out the user's [`Plan`] (once its rules are final).
    pub(crate) fn make_plan(&mut self) {
        self.plan = PlanSlot(Some(Arc::new(Plan::of(self))));
    }

    /// The `default` user of a fresh server: `on nopass ~* &* +@all`.
    pub fn default_user() -> User {
        let mut user = User::new(b"default", Defaults::default());
        for op in [&b"+@all"[..], b"~*", b"&*", b"on", b"nopass"] {
            let applied = user.apply(op, Defaults::default());
            debug_assert!(applied.is_ok());
        }
        user
    }

    /// The user's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// The root selector, then the others.
    pub fn selectors(&self) -> &[Selector] {
        &self.selectors
    }

    /// The SHA-256 hashes of the user's passwords, in hex.
    pub fn password_hashes(&self) -> &[Hash] {
        &self.passwords
    }

    /// Whether the user may log in.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether any password logs the user in (`nopass`).
    pub fn nopass(&self) -> bool {
        self.nopass
    }

    /// Whether the user may run every command on every key and channel,
    /// so that the check before each command can be skipped.
    pub fn unrestricted(&self) -> bool {
        self.selectors.first().is_some_and(|s| s.all_commands && s.all_keys && s.all_channels)
    }

    /// Whether `password` logs the user in (in time that does not depend
    /// on which hash, or where in it, a wrong password differs).
    pub fn password_ok(&self, password: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let given = password::hash(password);
        let mut ok = false;
        for known in &self.passwords {
            ok |= password::same(known, &given);
        }
        ok
    }

    /// Apply one rule; on error the user may be half changed, so callers
    /// apply rules to a copy ([`User::with_rules`]).
    pub fn apply(&mut self, op: &[u8], defaults: Defaults) -> Result<(), RuleError> {
        self.plan = PlanSlot::default();
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if op.is_empty() {
            return Ok(());
        }
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize = Sanitize::Skip;
        } else if is("sanitize-payload") {
            self.sanitize = Sanitize::Always;
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let hash = if op[0] == b'>' {
                password::hash(&op[1..])
            } else {
                password::parse_hash(&op[1..]).ok_or(RuleError::BadHash)?
            };
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let hash = if op[0] == b'<' {
                password::hash(&op[1..])
            } else {
                password::parse_hash(&op[1..]).ok_or(RuleError::BadHash)?
            };
            let at = self.passwords.iter().position(|h| *h == hash).ok_or(RuleError::NoSuchPassword)?;
            self.passwords.remove(at);
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            self.selectors.push(Selector::from_group(op, defaults)?);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            self.nopass = false;
            self.passwords.clear();
            let mut root = Selector::new(defaults);
            root.set_all(false);
            self.selectors = vec![root];
            self.enabled = false;
            self.sanitize = Sanitize::Always;
        } else {
            let root = self.selectors.first_mut().ok_or(RuleError::Syntax)?;
            root.apply(op)?;
        }
        Ok(())
    }

    /// A copy of the user with `ops` applied, or the first rule refused
    /// (with its error); the user itself is unchanged either way.
    pub fn with_rules<'a>(
        &self,
        ops: impl IntoIterator<Item = &'a [u8]>,
        defaults: Defaults,
    ) -> Result<User, (&'a [u8], RuleError)> {
        let mut user = self.clone();
        for op in ops {
            user.apply(op, defaults).map_err(|e| (op, e))?;
        }
        Ok(user)
    }

    /// The channel patterns of every selector, or `None` when one of them
    /// allows every channel.
    pub fn channel_patterns(&self) -> Option<Vec<&[u8]>> {
        if self.selectors.iter().any(|s| s.all_channels) {
            return None;
        }
        Some(self.selectors.iter().flat_map(|s| s.channels.iter().map(Vec::as_slice)).collect())
    }
}

/// Join rules a client split over several arguments back into selectors:
/// `(~x` `+get)` is the one rule `(~x +get)`, as Redis allows. `Err(i)`
/// names the argument that opens a selector never closed.
pub fn merge_selectors<'a>(args: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<Vec<u8>>, usize> {
    let mut merged = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, op) in args.into_iter().enumerate() {
        if let Some((_, group)) = open.as_mut() {
            group.push(b' ');
            group.extend_from_slice(op);
            if op.last() == Some(&b')') {
                if let Some((_, group)) = open.take() {
                    merged.push(group);
                }
            }
            continue;
        }
        if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some((i, op.to_vec()));
            continue;
        }
        merged.push(op.to_vec());
    }
    match open {
        Some((i, _)) => Err(i),
        None => Ok(merged),
    }
}

/// Split a selector's rules into words as Redis's `sdssplitargs` does
/// (spaces separate, `"…"` and `'…'` quote); `None` for unbalanced quotes.
pub fn split_words(s: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut words = Vec::new();
    let mut i = 0;
    loop {
        while i < s.len() && s[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= s.len() {
            return Some(words);
        }
        let mut word = Vec::new();
        let quote = s[i];
        if quote == b'"' || quote == b'\'' {
            i += 1;
            loop {
                let c = *s.get(i)?;
                i += 1;
                if c == quote {
                    break;
                }
                if c == b'\\' && quote == b'"' {
                    let e = *s.get(i)?;
                    i += 1;
                    word.push(match e {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        b'x' => {
                            let hex = std::str::from_utf8(s.get(i..i + 2)?).ok()?;
                            i += 2;
                            u8::from_str_radix(hex, 16).ok()?
                        }
                        other => other,
                    });
                } else if c == b'\\' && quote == b'\'' && s.get(i) == Some(&b'\'') {
                    word.push(b'\'');
                    i += 1;
                } else {
                    word.push(c);
                }
            }
            if s.get(i).is_some_and(|c| !c.is_ascii_whitespace()) {
                return None;
            }
        } else {
            while i < s.len() && !s[i].is_ascii_whitespace() {
                word.push(s[i]);
                i += 1;
            }
        }
        words.push(word);
    }
}
